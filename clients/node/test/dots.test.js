// Dots (Kropki) through the Node client: docs/rules/dots.md §11.A's capture on a 5 × 5
// field checked against the state's dots and scores, Blue's `ground` ending
// it, a seeded random game played from ListLegalMoves to a full field with
// every move's effect checked against the states before and after it, and
// the records replayed through ImportGame. The server's address comes in
// PUNCT_SERVER (scripts/test-clients.sh starts one).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import grpc from '@grpc/grpc-js';

import { NO_SEAT, RefereeClient, RefereeError, notation, outcomeDetail, stateOf } from '../src/client.js';
import { refusal, rng } from '../support/suite.js';

const RED = 1;
const BLUE = 2;
/** docs/rules/dots.md §11.A on 5 × 5: Red's seventh move (3,4) captures Blue's 3,3. */
const EXAMPLE_A = ['3,2', '3,3', '2,3', '1,1', '4,3', '1,2', '3,4'];

let client;

before(() => {
  const target = process.env.PUNCT_SERVER;
  assert.ok(target, 'PUNCT_SERVER (host:port of a running punct-referee) is not set');
  client = new RefereeClient(target);
});

after(() => client.close());

const point = (p) => `${p.x},${p.y}`;
const colourOf = (seat) => (seat === RED ? 'COLOUR_RED' : 'COLOUR_BLUE');
const sorted = (list) => [...list].sort();

/** The points of `owner`'s dots the other player holds. */
const captured = (state, owner) =>
  new Set(state.dots.filter((d) => d.owner === owner && d.captured).map((d) => point(d.point)));

const minus = (a, b) => sorted([...a].filter((p) => !b.has(p)));

/** A move's effect is exactly the difference of the captured dots before and
 * after it, and the scores are the captured dots counted from the state (Red
 * scores Blue's captured dots). */
function checkEffect(mover, effect, beforeState, afterState) {
  const enemy = mover === 'COLOUR_RED' ? 'COLOUR_BLUE' : 'COLOUR_RED';
  const diff = (owner, from, to) => minus(captured(to, owner), captured(from, owner));
  assert.deepEqual(sorted(effect.captured.map(point)), diff(enemy, beforeState, afterState), 'captured');
  assert.deepEqual(sorted(effect.lost.map(point)), diff(mover, beforeState, afterState), 'lost');
  assert.deepEqual(sorted(effect.freed.map(point)), diff(mover, afterState, beforeState), 'freed');
  assert.deepEqual(sorted(effect.regained.map(point)), diff(enemy, afterState, beforeState), 'regained');
  const counted = [captured(afterState, 'COLOUR_BLUE').size, captured(afterState, 'COLOUR_RED').size];
  assert.deepEqual(afterState.scores, counted, 'scores counted from the dots');
  assert.deepEqual(effect.scores, counted);
}

/** Plays `move` (notation or a Move object) for the seat to move at `ply`
 * and checks its effect against the states; resolves to the reply. */
async function playChecked(table, move, ply) {
  const beforeGame = await client.getGame(table.gameId);
  assert.equal(beforeGame.ply, ply);
  const mover = beforeGame.to_move;
  const reply = await client.play(table.gameId, table.token(mover), move, ply, { game: 'dots' });
  assert.deepEqual([reply.ply, reply.seat], [ply + 1, mover]);
  const afterGame = await client.getGame(table.gameId);
  const played = reply.move.dots;
  assert.equal(played.colour, colourOf(mover));
  checkEffect(colourOf(mover), played.effect, stateOf(beforeGame), stateOf(afterGame));
  assert.deepEqual(afterGame.last_move.dots, played);
  return reply;
}

async function checkRecordReplays(table) {
  const game = await client.getGame(table.gameId);
  const record = await client.exportGame(table.gameId);
  assert.match(record, /^game: dots$/m);
  const copy = await client.importGame(record);
  assert.equal(copy.gameName, 'dots');
  assert.equal(copy.game.ply, game.ply);
  assert.deepEqual(copy.game.outcome, game.outcome);
  assert.deepEqual(copy.game.state, game.state);
  return record;
}

test('a capture, then ground, ends a Dots game', async () => {
  const table = await client.createGame({
    rules: { dots: { width: 5, height: 5, start: 'START_EMPTY' } },
    labels: { suite: 'node' },
  });
  assert.equal(table.gameName, 'dots');
  assert.deepEqual(table.seats.map((s) => [s.seat, s.name]), [[RED, 'red'], [BLUE, 'blue']]);
  const start = stateOf(table.game);
  assert.deepEqual(start.rules, { width: 5, height: 5, start: 'START_EMPTY', max_moves: 0 });
  assert.equal(start.position, '.....\n'.repeat(5));
  assert.deepEqual([start.dots, start.scores, start.to_move], [[], [0, 0], 'COLOUR_RED']);

  // The notation view lists every free point and `ground`, sorted as text.
  const legal = await client.legalNotations(table.gameId, { token: table.token('red') });
  assert.deepEqual([legal.ply, legal.to_move, legal.moves], [0, RED, []]);
  const every = [];
  for (let x = 1; x <= 5; x++) for (let y = 1; y <= 5; y++) every.push(`${x},${y}`);
  assert.deepEqual(legal.notations, [...every.sort(), 'ground']);
  assert.deepEqual((await client.legalNotations(table.gameId, { seat: BLUE })).notations, []);

  let reply;
  for (const [ply, move] of EXAMPLE_A.entries()) {
    reply = await playChecked(table, move, ply);
    assert.equal(reply.to_move, ply % 2 === 0 ? BLUE : RED);
  }
  // §11.A: Red's seventh move walls in Blue's 3,3 with 3,2 2,3 4,3 3,4.
  const { effect } = reply.move.dots;
  assert.deepEqual(effect.captured.map(point), ['3,3']);
  assert.equal(effect.regions, 1);
  assert.equal(effect.enclosures.length, 1);
  const [enclosure] = effect.enclosures;
  assert.deepEqual([enclosure.owner, enclosure.kind], ['COLOUR_RED', 'ENCLOSURE_KIND_CAPTURE']);
  assert.deepEqual(sorted(new Set(enclosure.chain.map(point))), ['2,3', '3,2', '3,4', '4,3']);
  const state = stateOf(await client.getGame(table.gameId));
  assert.deepEqual(state.scores, [1, 0]);
  assert.equal(state.position, 'B....\nB.R..\n.RbR.\n..R..\n.....\n');
  assert.deepEqual([...captured(state, 'COLOUR_BLUE')], ['3,3']);
  assert.equal(state.enclosures.length, 1);

  // A captured dot's point is not playable again; nor is a point off the
  // field; `pass` is no Dots move.
  const blue = table.token('blue');
  const occupied = await refusal(client.play(table.gameId, blue, '3,3', 7, { game: 'dots' }));
  assert.deepEqual([occupied.code, occupied.reason], [grpc.status.FAILED_PRECONDITION, 'OCCUPIED']);
  const off = await refusal(client.play(table.gameId, blue, '6,1', 7, { game: 'dots' }));
  assert.equal(off.reason, 'OFF_FIELD');
  const garbled = await refusal(client.play(table.gameId, blue, 'pass', 7, { game: 'dots' }));
  assert.equal(garbled.code, grpc.status.INVALID_ARGUMENT);
  assert.deepEqual(garbled.badRequest.field_violations.map((v) => v.field), ['move.dots.notation']);
  assert.ok(!(await client.legalNotations(table.gameId)).notations.includes('3,3'));

  // Blue grounds (the structured stop move): its dots 1,1 and 1,2 touch the
  // edge, so nothing changes hands and Red wins 1–0.
  reply = await playChecked(table, { dots: { ground: {} } }, 7);
  const played = reply.move.dots;
  assert.deepEqual([played.notation, played.kind, played.colour], ['ground', 'MOVE_KIND_GROUND', 'COLOUR_BLUE']);
  assert.deepEqual([played.effect.lost, played.effect.captured], [[], []]);
  assert.equal(reply.status, 'GAME_STATUS_FINISHED');
  assert.equal(reply.to_move, NO_SEAT);
  const { outcome } = reply;
  assert.deepEqual([outcome.reason, outcome.winners, outcome.scores, outcome.draw], ['GROUND', [RED], ['1', '0'], false]);
  const detail = outcomeDetail(outcome);
  assert.deepEqual([detail.end, detail.result, detail.scores], ['ground', '1-0', [1, 0]]);
  const game = await client.getGame(table.gameId);
  assert.equal(game.status, 'GAME_STATUS_FINISHED');
  assert.deepEqual(game.outcome, outcome);
  assert.equal(stateOf(game).to_move, 'COLOUR_UNSPECIFIED');
  assert.deepEqual((await client.legalNotations(table.gameId)).notations, []);
  const over = await refusal(client.play(table.gameId, table.token('red'), '5,5', 8, { game: 'dots' }));
  assert.equal(over.reason, 'GAME_OVER');
  assert.ok(over instanceof RefereeError);
  await checkRecordReplays(table);
});

test('a random Dots game is played to a full field', async () => {
  const table = await client.createGame({ rules: { dots: { width: 6, height: 6, start: 'START_CROSS' } } });
  // The cross of docs/rules/dots.md §4.2 in the middle of 6 × 6.
  assert.equal(stateOf(table.game).position, '......\n......\n..RB..\n..BR..\n......\n......\n');
  const random = rng(13);
  const moves = [];
  for (;;) {
    const { to_move: mover } = await client.getGame(table.gameId);
    const legal = await client.legalNotations(table.gameId, { token: table.token(mover) });
    assert.equal(legal.notations.at(-1), 'ground', 'ground sorts last');
    const places = legal.notations.slice(0, -1);
    const reply = await playChecked(table, places[Math.floor(random() * places.length)], legal.ply);
    moves.push(notation(reply.move));
    if (reply.outcome) break;
    assert.ok(moves.length < 32);
  }
  // 36 cells less the 4 start dots: every move placed a dot or was held.
  const game = await client.getGame(table.gameId);
  const state = stateOf(game);
  assert.ok(!state.position.includes('.'), state.position);
  assert.equal(game.ply, moves.length);
  const { outcome } = game;
  assert.equal(outcome.reason, 'FULL');
  assert.deepEqual(outcome.scores, state.scores.map(String));
  const [red, blue] = state.scores;
  assert.deepEqual(outcome.winners, red > blue ? [RED] : blue > red ? [BLUE] : []);
  assert.equal(outcome.draw, red === blue);
  const detail = outcomeDetail(outcome);
  assert.equal(detail.end, 'full');
  assert.equal(detail.result, red > blue ? '1-0' : blue > red ? '0-1' : '1/2-1/2');
  const record = await checkRecordReplays(table);
  assert.deepEqual(record.trimEnd().split('\n').slice(-moves.length), moves);
});
