// The referee through the Node client: whole games between two bots that
// choose from ListLegalMoves, refused moves with decoded details, a watched
// game, health and records; the numbered seats with their names, per-seat
// presence, a resignation's winners and an agreed draw. The server's address
// comes in PUNCT_SERVER (scripts/test-clients.sh starts one).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { NO_SEAT, RefereeClient, RefereeError, notation, parseTarget, seatName, seatNumber } from '../src/client.js';
import grpc from '@grpc/grpc-js';
import { refusal, rng } from '../support/suite.js';

let client;

before(() => {
  const target = process.env.PUNCT_SERVER;
  assert.ok(target, 'PUNCT_SERVER (host:port of a running punct-referee) is not set');
  client = new RefereeClient(target);
});

after(() => client.close());

async function playOut(table, seed, maxPlies = 400) {
  const random = rng(seed);
  const played = [];
  for (let i = 0; i < maxPlies; i++) {
    const legal = await client.legalMoves(table.gameId);
    if (legal.to_move === NO_SEAT) return played;
    const choice = notation(legal.moves[Math.floor(random() * legal.moves.length)]);
    const reply = await client.play(table.gameId, table.token(legal.to_move), choice, legal.ply);
    assert.equal(reply.ply, legal.ply + 1);
    assert.equal(reply.seat, legal.to_move);
    played.push(notation(reply.move));
  }
  throw new Error('the game did not end');
}

test('health reports the referee serving', async () => {
  assert.equal(await client.serving(), true);
  assert.equal(await client.serving(''), true);
});

test('two bots play complete games that replay through import', async () => {
  for (const seed of [1, 2]) {
    const table = await client.createGame({ variant: 'VARIANT_BASIC', labels: { suite: 'node' } });
    assert.deepEqual(table.seats.map((s) => [s.seat, s.name]), [[1, 'white'], [2, 'black']]);
    const moves = await playOut(table, seed);
    const game = await client.getGame(table.gameId);
    assert.equal(game.status, 'GAME_STATUS_FINISHED');
    assert.equal(game.ply, moves.length);
    assert.ok(
      ['CONNECTION', 'LAST_PIECE', 'NO_LEGAL_MOVE', 'REPETITION', 'MOVE_LIMIT'].includes(game.outcome.reason),
      game.outcome.reason,
    );
    assert.equal(game.labels.suite, 'node');
    // The compact view: the same play, without what never changes or is
    // derived (the stacks follow from the pieces).
    const compact = await client.getGame(table.gameId, { view: 'SNAPSHOT_VIEW_COMPACT' });
    assert.deepEqual([compact.ply, compact.status, compact.outcome], [game.ply, game.status, game.outcome]);
    assert.equal(compact.rules, null);
    assert.deepEqual(compact.labels, {});
    assert.deepEqual(compact.state.punct.board.spaces, []);
    assert.equal(compact.state.punct.picture, '');
    assert.ok(game.state.punct.board.spaces.length > 0 && game.state.punct.picture !== '');
    assert.deepEqual(compact.state.punct.board.pieces, game.state.punct.board.pieces);
    const record = await client.exportGame(table.gameId);
    assert.deepEqual(record.trimEnd().split('\n').slice(-moves.length), moves);
    const copy = (await client.importGame(record)).game;
    assert.equal(copy.ply, game.ply);
    assert.deepEqual(copy.outcome, game.outcome);
    assert.deepEqual(copy.state, game.state);
  }
});

test('two seats play a whole game over their Play streams', async () => {
  const table = await client.createGame();
  const random = rng(40);
  const streams = [1, 2].map((seat) => client.playStream(table.gameId, table.token(seat)));
  const readers = streams.map((s) => s[Symbol.asyncIterator]());
  const next = async (seat) => {
    for (;;) {
      const { value, done } = await readers[seat - 1].next();
      assert.equal(done, false, 'the stream goes on until the game is over');
      if (value.item !== 'presence') return value;
    }
  };
  for (const seat of [1, 2]) assert.equal((await next(seat)).item, 'snapshot');
  // A refusal is a message with SubmitMove's status; the stream goes on.
  streams[1].send('SE@E5:F5,G5', 0, { requestId: 'early' });
  const refused = await next(2);
  assert.equal(refused.item, 'refused');
  assert.equal(refused.refused.request_id, 'early');
  const error = RefereeError.fromStatus(refused.refused.status);
  assert.equal(error.code, grpc.status.FAILED_PRECONDITION);
  assert.equal(error.reason, 'NOT_YOUR_TURN');
  let ply = 0;
  let toMove = 1;
  let over = false;
  while (!over) {
    const legal = await client.legalMoves(table.gameId);
    const choice = notation(legal.moves[Math.floor(random() * legal.moves.length)]);
    streams[toMove - 1].send(choice, ply, { requestId: `m${ply}` });
    // Both seats see the move's event; the mover then gets its answer.
    for (const seat of [1, 2]) {
      const event = await next(seat);
      assert.equal(event.item, 'event');
      assert.equal(event.event.sequence, String(ply + 1));
    }
    const answer = await next(toMove);
    assert.equal(answer.item, 'accepted');
    assert.equal(answer.accepted.request_id, `m${ply}`);
    assert.equal(answer.accepted.result.ply, ply + 1);
    ply += 1;
    toMove = answer.accepted.result.to_move;
    over = toMove === NO_SEAT;
  }
  for (const seat of [1, 2]) {
    const end = await next(seat);
    assert.equal(end.event.kind, 'game_over');
    assert.equal((await readers[seat - 1].next()).done, true, 'the stream ends with the game');
    streams[seat - 1].close();
  }
  assert.equal((await client.getGame(table.gameId)).ply, ply);
});

test('a refused move carries its rule in the decoded details', async () => {
  const table = await client.createGame();
  const white = table.token('white');
  const black = table.token('black');
  await client.play(table.gameId, white, 'SE@E5:F5,G5', 0);

  const illegal = await refusal(client.play(table.gameId, black, 'SE@E5:F5,G5', 1));
  assert.equal(illegal.code, grpc.status.FAILED_PRECONDITION);
  assert.equal(illegal.errorInfo.domain, 'referee.v1');
  assert.match(illegal.reason, /^[A-Z_]+$/);

  const garbled = await refusal(client.play(table.gameId, black, 'not a move', 1));
  assert.equal(garbled.code, grpc.status.INVALID_ARGUMENT);
  assert.ok(garbled.badRequest.field_violations.length > 0);

  const early = await refusal(client.play(table.gameId, white, 'SE@B2:B3,B4', 1));
  assert.equal(early.reason, 'NOT_YOUR_TURN');

  const stale = await refusal(client.play(table.gameId, black, 'SE@B2:B3,B4', 0));
  assert.equal(stale.code, grpc.status.ABORTED);
  assert.equal(stale.reason, 'STALE_PLY');
  assert.equal(stale.errorInfo.metadata.current_ply, '1');

  assert.equal((await client.getGame(table.gameId)).ply, 1);
});

test('an unknown game is not found', async () => {
  const missing = await refusal(client.getGame('0'.repeat(32)));
  assert.equal(missing.code, grpc.status.NOT_FOUND);
});

test('a watcher sees every move, then the end', async () => {
  const table = await client.createGame({ variant: 'VARIANT_BASIC' });
  const stream = client.watch(table.gameId);
  const items = [];
  const ended = new Promise((resolve, reject) => {
    stream.on('data', (item) => {
      items.push(item);
      if (item.event?.kind === 'game_over') resolve();
    });
    stream.on('error', (e) => reject(RefereeError.fromServiceError(e)));
  });
  // Wait for the snapshot before playing, so the watcher is subscribed.
  await new Promise((resolve) => stream.once('data', resolve));
  const moves = await playOut(table, 5);
  await ended;
  stream.cancel();
  assert.equal(items[0].item, 'snapshot');
  assert.equal(items[0].snapshot.ply, 0);
  const events = items.slice(1).map((i) => i.event);
  assert.deepEqual(events.map((e) => Number(e.sequence)), moves.map((_, i) => i + 1).concat(moves.length + 1));
  assert.deepEqual(events.slice(0, -1).map((e) => notation(e.move_applied.move)), moves);
  assert.deepEqual(events.at(-1).game_over.outcome, (await client.getGame(table.gameId)).outcome);
});

const presence = (game) => game.presence.seats.map((p) => [p.seat, p.connected]);

test('seats are numbered and named, presence is per seat, a resignation has winners', async () => {
  const table = await client.createGame();
  const { game } = table;
  // The game names its seats; the tokens come in seat order with the same names.
  assert.deepEqual(game.seats.map((s) => [s.number, s.name]), [[1, 'white'], [2, 'black']]);
  assert.deepEqual(table.seats.map((s) => [s.seat, s.name]), [[1, 'white'], [2, 'black']]);
  assert.deepEqual(table.tokens, [table.token(1), table.token(2)]);
  assert.equal(table.token(seatNumber(game, 'black')), table.token('black'));
  assert.equal(game.to_move, 1);
  assert.equal(seatName(game, game.to_move), 'white');
  assert.equal(seatName(game, NO_SEAT), '');
  // No clock: no per-seat times, no running clock.
  assert.deepEqual(game.clock.remaining_ms, []);
  assert.equal(game.clock.running, NO_SEAT);
  // A spectator's view without a token; a seat's view with its token.
  assert.equal((await client.getGame(table.gameId)).viewer, NO_SEAT);
  assert.equal((await client.getGame(table.gameId, { token: table.token('black') })).viewer, 2);
  // Presence: one entry per seat, in seat order, nobody watching yet.
  assert.deepEqual(presence(await client.getGame(table.gameId)), [[1, false], [2, false]]);

  // White watches with its token and counts as present; black does not.
  const stream = client.watch(table.gameId, { token: table.token('white') });
  const items = [];
  const ended = new Promise((resolve, reject) => {
    stream.on('data', (item) => {
      items.push(item);
      if (item.event?.kind === 'game_over') resolve();
    });
    stream.on('error', (e) => reject(RefereeError.fromServiceError(e)));
  });
  await new Promise((resolve) => stream.once('data', resolve));
  assert.equal(items[0].item, 'snapshot');
  const deadline = Date.now() + 5000;
  for (;;) {
    const now = presence(await client.getGame(table.gameId));
    if (JSON.stringify(now) === JSON.stringify([[1, true], [2, false]])) break;
    assert.ok(Date.now() < deadline, JSON.stringify(now));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal((await client.getGame(table.gameId)).presence.seats[0].away_ms, '0');

  // Only the seat to move has legal moves.
  assert.ok((await client.legalMoves(table.gameId, { seat: 1 })).moves.length > 0);
  assert.equal((await client.legalMoves(table.gameId, { seat: 2 })).moves.length, 0);

  const reply = await client.play(table.gameId, table.token('white'), 'SE@E5:F5,G5', 0);
  assert.deepEqual([reply.seat, reply.to_move], [1, 2]);
  // Black resigns: white, the other seat, is the only winner.
  const over = await client.resign(table.gameId, table.token('black'));
  assert.equal(over.status, 'GAME_STATUS_FINISHED');
  assert.equal(over.outcome.reason, 'RESIGNATION');
  assert.deepEqual(over.outcome.winners, [1]);
  assert.equal(over.outcome.draw, false);
  assert.deepEqual(over.outcome.winners.map((w) => seatName(over, w)), ['white']);
  assert.equal(over.to_move, NO_SEAT);
  // The watcher saw the move, then the same ending.
  await ended;
  stream.cancel();
  const events = items.filter((i) => i.item === 'event').map((i) => i.event);
  assert.deepEqual([events[0].move_applied.seat, events[0].move_applied.to_move], [1, 2]);
  assert.deepEqual(events.at(-1).game_over.outcome.winners, [1]);
  assert.deepEqual(events.at(-1).game_over.outcome, (await client.getGame(table.gameId)).outcome);
});

test('a draw is agreed by every seat', async () => {
  const table = await client.createGame();
  await client.play(table.gameId, table.token('white'), 'SE@E5:F5,G5', 0);
  const offered = await client.offerDraw(table.gameId, table.token('black'));
  assert.equal(offered.agreed, false);
  assert.deepEqual(offered.game.draw_offers, [2]);
  assert.deepEqual((await client.getGame(table.gameId)).draw_offers, [2]);
  const accepted = await client.acceptDraw(table.gameId, table.token('white'));
  assert.equal(accepted.agreed, true);
  assert.equal(accepted.game.outcome.draw, true);
  assert.deepEqual(accepted.game.outcome.winners, []);
  assert.equal(accepted.game.outcome.reason, 'DRAW_AGREEMENT');
  assert.deepEqual(accepted.game.draw_offers, []);
});

test('every address form of the CLI names the referee', async () => {
  assert.deepEqual(parseTarget('127.0.0.1:50051'), { target: '127.0.0.1:50051', tls: false });
  assert.deepEqual(parseTarget('[::1]:50051'), { target: '[::1]:50051', tls: false });
  assert.deepEqual(parseTarget('http://referee.example:50051'), { target: 'referee.example:50051', tls: false });
  assert.deepEqual(parseTarget('HTTPS://referee.example:443/'), { target: 'referee.example:443', tls: true });
  for (const bad of ['', 'http://', 'ftp://referee.example:21']) {
    assert.throws(() => parseTarget(bad));
  }
  const byUrl = new RefereeClient(`http://${process.env.PUNCT_SERVER}`);
  try {
    assert.equal(await byUrl.serving(), true);
  } finally {
    byUrl.close();
  }
});

test('a spectator delay set at creation is shown on the game and keeps spectators behind', async () => {
  const table = await client.createGame({ spectatorDelay: { plies: 2 } });
  assert.equal(table.game.spectator_delay.plies, 2);
  assert.equal(table.game.labels['spectator-delay'], '2 plies');
  for (const [ply, move] of ['SE@E1:E2,E3', 'SE@M5:M6,M7', 'SE@E4:E5,E6'].entries()) {
    await client.play(table.gameId, table.token(ply % 2 + 1), move, ply);
  }
  // A spectator sees the game two plies behind; a seat sees it live.
  assert.equal((await client.getGame(table.gameId)).ply, 1);
  assert.equal((await client.getGame(table.gameId, { token: table.token(1) })).ply, 3);
});
