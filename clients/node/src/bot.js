// The bot kit: a Bot joins a tournament held by the referee
// (docs/TOURNAMENTS.md) with its entrant key and plays every game it is sent.
// Extend it and write choose(state, legalMoves, clock); run(server, key)
// does the rest: the ConnectEntrant stream of referee.v1.TournamentService
// (the games to play, then the end) and, for each game, a Play stream with
// the seat's token from ply 0 (the game's events one way, the bot's moves
// and their answers the other; a game resumed after a reconnection is
// followed from its first move), with ListLegalMoves and GetGame (the seat's
// own view) on each turn. With `transport = 'unary'` it plays by WatchGame
// and SubmitMove instead, the same game in the same way.
//
//   import { Bot } from 'punct-referee-client/bot';
//   class First extends Bot { choose(state, legalMoves) { return legalMoves[0]; } }
//   await new First().run('127.0.0.1:50051', process.env.ENTRANT_KEY);
//
// When things go wrong (docs/CLIENTS.md): a failure in one game (choose
// throwing or overrunning the seat's clock, a call refused) is logged with
// the game's id (`logger`, console by default) and ends that game by
// `onFailure` (resign at once by default); nothing else is touched, and no
// promise is left to reject unhandled. A refused move goes to
// onRefused(gameId, move, error) first. A lost connection (UNAVAILABLE, a
// stream cut) is retried with backoff and jitter until the tournament ends.

import grpc from '@grpc/grpc-js';

import { RefereeClient, RefereeError, TournamentService, gameName } from './client.js';

/** choose() did not answer within the seat's clock. */
export class ChooseOverrun extends Error {}

/** The connection broke (a stream ended early): follow again. */
class Disconnected extends Error {}

/** A lost connection or a call left unanswered, not a refusal: worth
 * following the game again (a move whose answer was lost shows in it). */
const retryable = (error) =>
  error?.code === grpc.status.UNAVAILABLE || error?.code === grpc.status.DEADLINE_EXCEEDED;

/** A grpc-js error as a RefereeError; anything else as it is. */
const refereeError = (error) =>
  error instanceof RefereeError || error?.metadata === undefined || error?.code === undefined
    ? error
    : RefereeError.fromServiceError(error);

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The seat's milliseconds left on a ClockState (the first-move deadline
 * when that is shorter), or null without a clock. */
function timeLeft(clock, seat) {
  if (!(clock?.remaining_ms?.length >= seat)) return null;
  let left = Number(clock.remaining_ms[seat - 1]);
  if (clock.first_move_remaining_ms !== undefined && clock.first_move_remaining_ms !== null) {
    left = Math.min(left, Number(clock.first_move_remaining_ms));
  }
  return left;
}

export class Bot {
  /** What a failed game does (choose threw or overran the clock, a move or
   * call was refused): 'resign' resigns it at once, so no opponent waits out
   * a clock; 'leave' stops playing it (its clock runs out). */
  onFailure = 'resign';
  /** Milliseconds of the seat's clock kept back for the calls around
   * choose: choose is given the clock left minus this. */
  clockMarginMs = 250;
  /** How long run() still gives games to see their own end once the
   * tournament is over (a choose still thinking is not waited for). */
  finishGraceMs = 5_000;
  /** Reconnection backoff: the first delay and the cap (each delay is drawn
   * at random up to twice the previous, within the cap). */
  reconnectInitialMs = 200;
  reconnectMaxMs = 5_000;
  /** How moves go: 'play', one Play stream per game (the game and the
   * answers on it); 'unary', WatchGame for the game and one SubmitMove call
   * per move. */
  transport = 'play';
  /** Where failures are logged (warn, error). */
  logger = console;

  /** The move to play, one of `legalMoves` (canonical notations, sorted).
   * `state` is the game as this bot's seat sees it (`state.viewer` is its
   * seat); `clock` the milliseconds left on its clock, or null. Return null
   * to resign. May be async. It runs under the clock: past `clock -
   * clockMarginMs` the game fails (onFailure). */
  // eslint-disable-next-line no-unused-vars
  choose(state, legalMoves, clock) {
    throw new Error('a Bot must implement choose(state, legalMoves, clock)');
  }

  /** Called once a game of this bot is over (override to learn): every
   * game but one left by onFailure 'leave'. */
  // eslint-disable-next-line no-unused-vars
  finished(game) {}

  /** Called when the referee refuses `move` in game `gameId`: `error.code`,
   * `error.reason` (the rule broken) and `error.details` say why. The game
   * then fails (onFailure). */
  // eslint-disable-next-line no-unused-vars
  onRefused(gameId, move, error) {}

  /** Called when game `gameId` fails for another reason: choose threw
   * (`error` is what it threw) or overran the clock (ChooseOverrun), or a
   * call was refused (a RefereeError). The game then fails (onFailure). */
  // eslint-disable-next-line no-unused-vars
  onError(gameId, error) {}

  /** Plays as the entrant of `entrantKey` on the referee at `server` until
   * the tournament ends; resolves to the end message (status and final
   * standings). `server` is `host:port`, `[::1]:port`, `http://host:port` or
   * `https://host:port` (TLS). TLS as in RefereeClient: `rootCerts` (PEM
   * Buffer of the CA; the system's roots without it), `certChain` and
   * `privateKey` for mutual TLS, `serverName` when the certificate names
   * another host, `tls: true` for TLS on a `host:port`. */
  async run(server, entrantKey, { rootCerts, certChain, privateKey, serverName, tls } = {}) {
    if (this.onFailure !== 'resign' && this.onFailure !== 'leave') {
      throw new Error(`onFailure ${JSON.stringify(this.onFailure)}: 'resign' or 'leave'`);
    }
    if (this.transport !== 'play' && this.transport !== 'unary') {
      throw new Error(`transport ${JSON.stringify(this.transport)}: 'play' or 'unary'`);
    }
    const client = new RefereeClient(server, {
      timeoutMs: 30_000,
      rootCerts,
      certChain,
      privateKey,
      serverName,
      tls,
    });
    const tournaments = new TournamentService(client.target, client.credentials, client.channelOptions);
    const over = new AbortController();
    const games = new Map();
    let delay = null;
    let connected = false;
    try {
      for (;;) {
        let cause;
        try {
          const ended = await this.#connect(tournaments, entrantKey, (message) => {
            connected = true;
            delay = null;
            if (message.event === 'game' && !games.has(message.game.game_id)) {
              games.set(message.game.game_id, this.#game(client, message.game, over.signal));
            }
          });
          over.abort();
          let timer;
          await Promise.race([
            Promise.allSettled(games.values()),
            new Promise((resolve) => {
              timer = setTimeout(resolve, this.finishGraceMs);
            }),
          ]);
          clearTimeout(timer);
          return ended;
        } catch (error) {
          // A second stream of the entrant is refused until the server sees
          // the first one closed: after a cut, wait.
          const again =
            error instanceof Disconnected ||
            retryable(error) ||
            (connected && error?.reason === 'ALREADY_CONNECTED');
          if (!again) throw error;
          cause = error.message;
        }
        delay = this.#backoff(delay);
        this.logger.warn(`tournament stream: ${cause}; reconnecting in ${delay} ms`);
        await sleep(delay);
      }
    } finally {
      over.abort();
      client.close();
      tournaments.close();
    }
  }

  /** One ConnectEntrant stream: `onMessage` for each message; resolves to
   * the end, rejects when the stream fails or ends early. */
  #connect(tournaments, entrantKey, onMessage) {
    return new Promise((resolve, reject) => {
      const stream = tournaments.ConnectEntrant({ entrant_key: entrantKey, tournament_id: '' });
      stream.on('data', (message) => {
        onMessage(message);
        if (message.event === 'ended') resolve(message.ended);
      });
      stream.on('error', (error) => reject(RefereeError.fromServiceError(error)));
      stream.on('end', () => reject(new Disconnected('the tournament stream ended early')));
    });
  }

  /** The next reconnection delay in ms: random (jitter), growing, capped. */
  #backoff(previous) {
    const uniform = (low, high) => Math.round(low + Math.random() * (high - low));
    if (previous === null) return uniform(this.reconnectInitialMs / 2, this.reconnectInitialMs);
    return Math.min(this.reconnectMaxMs, uniform(previous, 2 * previous));
  }

  /** Plays one game; never rejects: whatever goes wrong stays in it. */
  async #game(client, a, signal) {
    let delay = null;
    for (;;) {
      let cause;
      try {
        await this.#play(client, a);
        return;
      } catch (thrown) {
        const error = refereeError(thrown);
        if (signal.aborted) return; // the channel closed with the tournament
        if (!(error instanceof Disconnected) && !retryable(error)) {
          await this.#fail(client, a, error);
          return;
        }
        cause = error.message;
      }
      delay = this.#backoff(delay);
      this.logger.warn(`game ${a.game_id}: ${cause}; following it again in ${delay} ms`);
      await sleep(delay, signal);
      if (signal.aborted) return;
    }
  }

  /** A failed game: logged, told to onError, then ended by onFailure. */
  async #fail(client, a, error) {
    const what = this.onFailure === 'resign' ? 'resigning' : 'leaving the game';
    const text = error instanceof RefereeError || error instanceof ChooseOverrun ? String(error) : error?.stack ?? String(error);
    this.logger.error(`game ${a.game_id}: ${text}; ${what}`);
    await this.#hook(a.game_id, 'onError', a.game_id, error);
    await this.#giveUp(client, a);
  }

  /** Resigns a failed game (onFailure 'resign'), then finished(). */
  async #giveUp(client, a) {
    if (this.onFailure !== 'resign') return;
    let final;
    try {
      final = await client.resign(a.game_id, a.seat_token);
    } catch (error) {
      if (error?.reason !== 'GAME_OVER') {
        this.logger.error(`game ${a.game_id}: resigning failed: ${error}`);
        return;
      }
      try {
        final = await client.getGame(a.game_id, { token: a.seat_token });
      } catch {
        return;
      }
    }
    await this.#hook(a.game_id, 'finished', final);
  }

  /** Calls a hook of the bot; what it throws is logged, not raised. */
  async #hook(gameId, name, ...args) {
    try {
      await this[name](...args);
    } catch (error) {
      this.logger.error(`game ${gameId}: ${name} threw: ${error?.stack ?? error}`);
    }
  }

  /** choose() under the seat's clock: `left` ms at `since` (Date.now()),
   * less clockMarginMs; past it, ChooseOverrun. A choose that blocks the
   * event loop cannot be cut short, but its late answer is not played. */
  async #choose(state, legal, left, since) {
    const call = Promise.resolve().then(() => this.choose(state, legal, left));
    if (left === null) return call;
    const budget = left - this.clockMarginMs - (Date.now() - since);
    const overrun = () => new ChooseOverrun(`choose() took more than the ${left} ms left on the clock`);
    let timer;
    try {
      const move = await Promise.race([
        call,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(overrun()), Math.max(0, budget));
        }),
      ]);
      if (Date.now() - since > left - this.clockMarginMs) throw overrun();
      return move;
    } finally {
      clearTimeout(timer);
      call.catch(() => {}); // an overrun's late failure is nobody's
    }
  }

  /** The seat's move at `ply` (`clock` as the game last showed it):
   * `{ decided: true, move }` with a null move to resign, or
   * `{ decided: false }` when it is not this seat's turn at `ply` after all
   * (catching up). */
  async #turn(client, a, ply, clock) {
    const since = Date.now();
    let legal = await client.legalNotations(a.game_id, { token: a.seat_token });
    while (legal.ply < ply) {
      // Behind the game: in a cluster the stream may come from a replica
      // that does not own the game, which shows a move once stored, a
      // moment before its owner answers from it (docs/CLUSTER.md).
      // Nothing else comes: it is our turn.
      await new Promise((resolve) => setTimeout(resolve, 10));
      legal = await client.legalNotations(a.game_id, { token: a.seat_token });
    }
    if (legal.ply !== ply || legal.to_move !== a.seat) return { decided: false }; // catching up
    const asked = Date.now();
    const state = await client.getGame(a.game_id, { token: a.seat_token });
    let left = timeLeft(clock, a.seat);
    let from = since;
    if (left === null) {
      // Moves replayed from the store (a game followed again after a
      // restart) carry no clock: the snapshot's, read just now.
      left = timeLeft(state.clock, a.seat);
      from = asked;
    }
    const move = await this.#choose(state, legal.notations, left, from);
    return { decided: true, move: move ?? null };
  }

  /** A move refused for good: logged, told to onRefused, the game given up. */
  async #refused(client, a, move, ply, error) {
    this.logger.error(`game ${a.game_id}: move ${JSON.stringify(move)} at ply ${ply} refused: ${error.message}`);
    await this.#hook(a.game_id, 'onRefused', a.game_id, move, error);
    await this.#giveUp(client, a);
  }

  /** Plays seat `a.seat` of game `a.game_id` to its end by `transport`. */
  async #play(client, a) {
    return this.transport === 'unary' ? this.#playUnary(client, a) : this.#playStream(client, a);
  }

  /** Plays over one Play stream, following the game from ply 0; throws
   * Disconnected if the stream ends early. */
  async #playStream(client, a) {
    const game = gameName(a);
    let answered = null;
    let sent = {};
    let toMove = 0;
    let ply = 0;
    let clock = null;
    const stream = client.playStream(a.game_id, a.seat_token, { fromPly: 0, game });
    try {
      for await (const item of stream) {
        if (item.item === 'snapshot') {
          ({ to_move: toMove, ply, clock } = item.snapshot);
        } else if (item.item === 'event') {
          if (item.event.kind === 'game_over') {
            await this.#hook(a.game_id, 'finished', await client.getGame(a.game_id, { token: a.seat_token }));
            return;
          }
          toMove = item.event.move_applied.to_move;
          ply = item.event.ply;
          clock = item.event.clock;
        } else if (item.item === 'refused') {
          const error = RefereeError.fromStatus(item.refused.status);
          if (error.code === grpc.status.ABORTED || error.reason === 'GAME_OVER') continue; // stale
          await this.#refused(client, a, sent[item.refused.request_id] ?? '', item.refused.expected_ply, error);
          return;
        } else {
          continue;
        }
        if (toMove !== a.seat || answered === ply) continue;
        answered = ply;
        const { decided, move } = await this.#turn(client, a, ply, clock);
        if (!decided) continue;
        if (move === null) {
          await client.resign(a.game_id, a.seat_token);
          continue;
        }
        const requestId = `${a.game_id}:${ply}`;
        sent = { [requestId]: move };
        stream.send(move, ply, { requestId });
      }
    } finally {
      stream.close();
    }
    throw new Disconnected("the game's stream ended early");
  }

  /** Plays by WatchGame and SubmitMove, following the game from ply 0;
   * throws Disconnected if the watch ends early. */
  async #playUnary(client, a) {
    const game = gameName(a);
    let answered = null;
    let toMove = 0;
    let ply = 0;
    let clock = null;
    for await (const item of client.watch(a.game_id, { fromPly: 0, token: a.seat_token })) {
      if (item.item === 'snapshot') {
        ({ to_move: toMove, ply, clock } = item.snapshot);
      } else if (item.item === 'event') {
        if (item.event.kind === 'game_over') {
          await this.#hook(a.game_id, 'finished', await client.getGame(a.game_id, { token: a.seat_token }));
          return;
        }
        toMove = item.event.move_applied.to_move;
        ply = item.event.ply;
        clock = item.event.clock;
      } else {
        continue;
      }
      if (toMove !== a.seat || answered === ply) continue;
      answered = ply;
      const { decided, move } = await this.#turn(client, a, ply, clock);
      if (!decided) continue;
      try {
        if (move === null) await client.resign(a.game_id, a.seat_token);
        else await client.play(a.game_id, a.seat_token, move, ply, { game });
      } catch (error) {
        if (error.code === grpc.status.ABORTED || error.reason === 'GAME_OVER') continue; // stale
        if (retryable(error) || move === null) throw error;
        await this.#refused(client, a, move, ply, error);
        return;
      }
    }
    throw new Disconnected("the game's watch ended early");
  }
}
