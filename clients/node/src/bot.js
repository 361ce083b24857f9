// The bot kit: a Bot joins a tournament held by the referee
// (docs/TOURNAMENTS.md) with its entrant key and plays every game it is sent.
// Extend it and write choose(state, legalMoves, clock); run(server, key)
// does the rest: the ConnectEntrant stream of referee.v1.TournamentService
// (the games to play, then the end) and, for each game, WatchGame with the
// seat's token from ply 0 (a game resumed after a reconnection is followed
// from its first move), ListLegalMoves and GetGame (the seat's own view) on
// each turn, and SubmitMove.
//
//   import { Bot } from 'punct-referee-client/bot';
//   class First extends Bot { choose(state, legalMoves) { return legalMoves[0]; } }
//   await new First().run('127.0.0.1:50051', process.env.ENTRANT_KEY);

import grpc from '@grpc/grpc-js';

import { RefereeClient, RefereeError, TournamentService, gameName } from './client.js';

export class Bot {
  /** The move to play, one of `legalMoves` (canonical notations, sorted).
   * `state` is the game as this bot's seat sees it (`state.viewer` is its
   * seat); `clock` the milliseconds left on its clock, or null. Return null
   * to resign. May be async. */
  // eslint-disable-next-line no-unused-vars
  choose(state, legalMoves, clock) {
    throw new Error('a Bot must implement choose(state, legalMoves, clock)');
  }

  /** Called once a game of this bot is over (override to learn). */
  // eslint-disable-next-line no-unused-vars
  finished(game) {}

  /** Plays as the entrant of `entrantKey` on the referee at `server`
   * (host:port) until the tournament ends; resolves to the end message
   * (status and final standings). */
  async run(server, entrantKey) {
    const tournaments = new TournamentService(server, grpc.credentials.createInsecure());
    const client = new RefereeClient(server, { timeoutMs: 30_000 });
    const games = new Map();
    try {
      const stream = tournaments.ConnectEntrant({ entrant_key: entrantKey, tournament_id: '' });
      const ended = await new Promise((resolve, reject) => {
        stream.on('data', (message) => {
          if (message.event === 'game' && !games.has(message.game.game_id)) {
            games.set(message.game.game_id, this.#play(client, message.game));
          } else if (message.event === 'ended') {
            resolve(message.ended);
          }
        });
        stream.on('error', (error) => reject(RefereeError.fromServiceError(error)));
        stream.on('end', () => reject(new Error('the tournament stream ended early')));
      });
      await Promise.all(games.values());
      return ended;
    } finally {
      client.close();
      tournaments.close();
    }
  }

  /** Plays seat `a.seat` of game `a.game_id` to its end. */
  async #play(client, a) {
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
          this.finished(await client.getGame(a.game_id, { token: a.seat_token }));
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
      let legal = await client.legalNotations(a.game_id, { token: a.seat_token });
      while (legal.ply < ply) {
        // Behind the watch: in a cluster the watch may come from a replica
        // that does not own the game, which shows a move once stored, a
        // moment before its owner answers from it (docs/CLUSTER.md).
        // Nothing else comes: it is our turn.
        await new Promise((resolve) => setTimeout(resolve, 10));
        legal = await client.legalNotations(a.game_id, { token: a.seat_token });
      }
      if (legal.ply !== ply || legal.to_move !== a.seat) continue; // catching up
      const state = await client.getGame(a.game_id, { token: a.seat_token });
      const left = clock?.remaining_ms?.length >= a.seat ? Number(clock.remaining_ms[a.seat - 1]) : null;
      const move = await this.choose(state, legal.notations, left);
      try {
        if (move === null || move === undefined) await client.resign(a.game_id, a.seat_token);
        else await client.play(a.game_id, a.seat_token, move, ply, { game });
      } catch (error) {
        const stale = error.code === grpc.status.ABORTED || error.errorInfo?.reason === 'GAME_OVER';
        if (!stale) {
          // An illegal move: give the game up, as the referee's own runner does.
          await client.resign(a.game_id, a.seat_token).catch(() => {});
        }
      }
    }
  }
}
