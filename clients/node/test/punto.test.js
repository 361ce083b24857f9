// Punto through the Node client: a 3-player match played to its end by seats
// choosing from ListLegalMoves (each with its own token, in the notation
// view), the commitment in every snapshot, the seed and the decks' order
// only after the end (and SHA-256 of the seed is the commitment), the rounds
// as a watcher sees them, and the finished record replayed through
// ImportGame. The server's address comes in PUNCT_SERVER.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';

import grpc from '@grpc/grpc-js';

import { NO_SEAT, RefereeClient, RefereeError, notation, outcomeDetail, stateOf } from '../src/client.js';
import { refusal, rng } from '../support/suite.js';

const SEATS = [1, 2, 3];

let client;

before(() => {
  const target = process.env.PUNCT_SERVER;
  assert.ok(target, 'PUNCT_SERVER (host:port of a running punct-referee) is not set');
  client = new RefereeClient(target);
});

after(() => client.close());

const cards = (list) => list.map((c) => c.text).sort();

/** Before the end: the commitment, no seed, no deck's order. */
function assertSecretKept(game, commitment) {
  const st = stateOf(game);
  assert.deepEqual([st.commitment, game.setup.commitment], [commitment, commitment]);
  assert.deepEqual([st.seed, game.setup.seed], ['', '']);
  for (const deck of st.decks) {
    assert.deepEqual(deck.order, []);
    assert.equal(deck.contents.length, deck.size);
  }
}

test('a three-seat Punto match is played to its end', async () => {
  const table = await client.createGame({ rules: { punto: { players: 3 } }, labels: { suite: 'node' } });
  assert.equal(table.gameName, 'punto');
  assert.deepEqual(table.seats.map((s) => [s.seat, s.name]), [[1, 'red'], [2, 'orange'], [3, 'blue']]);
  let st = stateOf(table.game);
  assert.deepEqual([st.rules.players, st.rules.rounds_to_win, st.row_length, st.neutral], [3, 2, 4, 'COLOUR_GREEN']);
  // 18 cards of each seat's colour and 6 greens each; seat 1's first card is
  // revealed, off its deck.
  assert.deepEqual(st.decks.map((d) => d.size), [23, 24, 24]);
  assert.ok(st.decks.every((d) => d.neutral.length === 6));
  assert.deepEqual([table.game.to_move, st.mover, st.round, st.first_seat], [1, 1, 1, 1]);
  const { commitment } = st;
  assert.match(commitment, /^[0-9a-f]{64}$/);
  assert.equal(table.game.setup.commitment, commitment);
  assert.equal(table.game.setup.supplied, false);

  // A watcher follows the whole match.
  const stream = client.watch(table.gameId);
  const items = [];
  const ended = new Promise((resolve, reject) => {
    stream.on('data', (item) => {
      items.push(item);
      if (item.event?.kind === 'game_over') resolve();
    });
    stream.on('error', (e) => reject(RefereeError.fromServiceError(e)));
  });
  await new Promise((resolve) => stream.once('data', resolve));

  const random = rng(3);
  const played = [];
  let game;
  for (;;) {
    game = await client.getGame(table.gameId);
    st = stateOf(game);
    assert.deepEqual([st.commitment, game.setup.commitment], [commitment, commitment], 'the commitment in every snapshot');
    if (game.status === 'GAME_STATUS_FINISHED') break;
    assertSecretKept(game, commitment);
    assert.deepEqual([game.ply, st.ply], [played.length, played.length]);
    const mover = game.to_move;
    assert.equal(st.mover, mover);
    const token = table.token(mover);
    // Every seat and spectator sees the same state (docs/rules/punto.md §11).
    if (game.ply % 10 === 0) {
      for (const seat of SEATS) {
        const mine = await client.getGame(table.gameId, { token: table.token(seat) });
        assert.equal(mine.viewer, seat);
        assert.deepEqual(stateOf(mine), st);
      }
    }
    const legal = await client.legalNotations(table.gameId, { token });
    assert.deepEqual([legal.ply, legal.to_move, legal.moves], [game.ply, mover, []]);
    assert.ok(legal.notations.length > 0);
    // The other seats have no moves now, and cannot play.
    const other = SEATS[mover % 3];
    assert.deepEqual((await client.legalNotations(table.gameId, { seat: other })).notations, []);
    const choice = legal.notations[Math.floor(random() * legal.notations.length)];
    if (game.ply === 0) {
      assert.deepEqual(legal.notations, ['0,0'], 'the first card goes in the middle');
      const early = await refusal(client.play(table.gameId, table.token(other), choice, 0, { game: 'punto' }));
      assert.deepEqual([early.code, early.reason], [grpc.status.FAILED_PRECONDITION, 'NOT_YOUR_TURN']);
    }
    if (game.ply === 5) {
      const record = await client.exportGame(table.gameId, { token });
      assert.ok(record.includes(`commitment: ${commitment}`), record);
      assert.ok(!record.includes('seed:'), record);
    }
    const reply = await client.play(table.gameId, token, choice, game.ply, { game: 'punto' });
    const move = reply.move.punto;
    assert.deepEqual([reply.ply, reply.seat, move.seat, move.played], [game.ply + 1, mover, mover, true]);
    assert.equal(move.notation, choice);
    assert.equal(notation(reply.move), choice);
    assert.deepEqual(move.card, st.revealed);
    assert.equal(move.round, st.round);
    if (move.next) assert.equal(move.next.seat, reply.to_move);
    if (move.round_result) {
      assert.equal(move.round_result.round, st.round);
      if (!reply.outcome) {
        assert.equal(move.deal.length, 3);
        assert.equal(move.round_result.next_first, reply.to_move);
      }
    } else {
      assert.deepEqual(move.deal, []);
    }
    played.push([move.notation, move.card.text]);
    assert.ok(played.length < 2000, 'the match did not end');
  }

  // The end: one seat won two rounds; the seed is revealed, and it is the one
  // committed to at the start.
  const { outcome } = game;
  assert.equal(outcome.reason, 'ROUNDS_WON');
  assert.equal(outcome.winners.length, 1);
  assert.equal(outcome.draw, false);
  const [winner] = outcome.winners;
  const wins = SEATS.map((s) => st.results.filter((r) => r.winner?.seat === s).length);
  assert.deepEqual(outcome.scores, wins.map(String));
  assert.equal(wins[winner - 1], 2);
  assert.ok(wins.every((w, i) => i === winner - 1 || w < 2));
  const detail = outcomeDetail(outcome);
  assert.equal(detail.reason, 'MATCH_END_ROUNDS_WON');
  assert.deepEqual([detail.winner.seat, detail.winner.name], [winner, `seat ${winner}`]);
  assert.deepEqual(detail.round_wins, wins);
  assert.equal(st.results.at(-1).next_first, NO_SEAT);
  assert.deepEqual([game.to_move, st.mover, st.revealed], [NO_SEAT, NO_SEAT, null]);
  assert.equal(st.ending, '');
  assert.match(st.seed, /^[0-9a-f]{64}$/);
  assert.equal(game.setup.seed, st.seed);
  assert.equal(createHash('sha256').update(Buffer.from(st.seed, 'hex')).digest('hex'), commitment);
  // Every deck's remaining order is shown now: the same cards as its contents.
  for (const deck of st.decks) {
    assert.deepEqual([deck.order.length, deck.contents.length], [deck.size, deck.size]);
    assert.deepEqual(cards(deck.order), cards(deck.contents));
  }
  assert.equal(game.ply, played.length);

  // The watcher: the snapshot, every move, a round-over item after each move
  // that ended a round (the same result as the state's), game over.
  await ended;
  stream.cancel();
  assert.equal(items[0].item, 'snapshot');
  assert.equal(stateOf(items[0].snapshot).commitment, commitment);
  const moves = items
    .filter((i) => i.item === 'event' && i.event.kind === 'move_applied')
    .map((i) => i.event.move_applied.move.punto);
  assert.deepEqual(moves.map((m) => [m.notation, m.card.text]), played);
  const rounds = items.filter((i) => i.item === 'round_over').map((i) => i.round_over.punto);
  assert.deepEqual(rounds.map((r) => r.result), st.results);
  assert.deepEqual(rounds.map((r) => r.next_round), [...rounds.keys()].map((i) => i + 2).slice(0, -1).concat(0));
  assert.deepEqual(items.at(-1).event.game_over.outcome, outcome);

  // The finished record carries the seed and replays into the same match.
  const record = await client.exportGame(table.gameId);
  assert.ok(record.includes(`seed: ${st.seed}`), record);
  assert.ok(record.includes(`commitment: ${commitment}`), record);
  const copy = await client.importGame(record);
  assert.equal(copy.gameName, 'punto');
  assert.deepEqual(copy.game.outcome, outcome);
  assert.deepEqual(stateOf(copy.game).results, st.results);
  assert.equal(stateOf(copy.game).seed, st.seed);
});
