// The referee through the Node client: whole games between two bots that
// choose from ListLegalMoves, refused moves with decoded details, a watched
// game, health and records. The server's address comes in PUNCT_SERVER
// (scripts/test-clients.sh starts one).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { RefereeClient, RefereeError, notation } from '../src/client.js';
import grpc from '@grpc/grpc-js';

let client;

before(() => {
  const target = process.env.PUNCT_SERVER;
  assert.ok(target, 'PUNCT_SERVER (host:port of a running punct-referee) is not set');
  client = new RefereeClient(target);
});

after(() => client.close());

/** A small seeded generator (mulberry32), so the games are repeatable. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function playOut(table, seed, maxPlies = 400) {
  const random = rng(seed);
  const played = [];
  for (let i = 0; i < maxPlies; i++) {
    const legal = await client.legalMoves(table.gameId);
    if (legal.to_move === 'SEAT_UNSPECIFIED') return played;
    const choice = notation(legal.moves[Math.floor(random() * legal.moves.length)]);
    const reply = await client.play(table.gameId, table.tokens[legal.to_move], choice, legal.ply);
    assert.equal(reply.ply, legal.ply + 1);
    assert.equal(reply.seat, legal.to_move);
    played.push(notation(reply.move));
  }
  throw new Error('the game did not end');
}

async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof RefereeError, String(e));
    return e;
  }
  assert.fail('the call was not refused');
}

test('health reports the referee serving', async () => {
  assert.equal(await client.serving(), true);
  assert.equal(await client.serving(''), true);
});

test('two bots play complete games that replay through import', async () => {
  for (const seed of [1, 2]) {
    const table = await client.createGame({ variant: 'VARIANT_BASIC', labels: { suite: 'node' } });
    assert.deepEqual(Object.keys(table.tokens).sort(), ['SEAT_BLACK', 'SEAT_WHITE']);
    const moves = await playOut(table, seed);
    const game = await client.getGame(table.gameId);
    assert.equal(game.status, 'GAME_STATUS_FINISHED');
    assert.equal(game.ply, moves.length);
    assert.ok(
      ['CONNECTION', 'LAST_PIECE', 'NO_LEGAL_MOVE', 'REPETITION', 'MOVE_LIMIT'].includes(game.outcome.reason),
      game.outcome.reason,
    );
    assert.equal(game.labels.suite, 'node');
    const record = await client.exportGame(table.gameId);
    assert.deepEqual(record.trimEnd().split('\n').slice(-moves.length), moves);
    const copy = (await client.importGame(record)).game;
    assert.equal(copy.ply, game.ply);
    assert.deepEqual(copy.outcome, game.outcome);
    assert.deepEqual(copy.state, game.state);
  }
});

test('a refused move carries its rule in the decoded details', async () => {
  const table = await client.createGame();
  const white = table.tokens.SEAT_WHITE;
  const black = table.tokens.SEAT_BLACK;
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
