// The bot kit when things go wrong (docs/CLIENTS.md), through the real server:
// one game's failure touches no other game, is logged with the game's id and
// resigns that game at once; a refused move reaches onRefused with the
// server's code and reason first; choose() runs under the seat's clock and
// run() resolves when the tournament ends. The opponent is the built-in
// greedy entrant. scripts/test-clients.sh passes PUNCT_SERVER and REFEREE_BIN.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';

import grpc from '@grpc/grpc-js';
import { TournamentService } from '../src/client.js';
import { Bot, ChooseOverrun } from '../src/bot.js';
import { rng } from '../support/suite.js';

const server = process.env.PUNCT_SERVER;
assert.ok(server, 'PUNCT_SERVER (host:port of a running punct-referee) is not set');
const binary = process.env.REFEREE_BIN;
assert.ok(binary, 'REFEREE_BIN (the punct-referee binary) is not set');

function call(stub, method, request) {
  return new Promise((resolve, reject) => {
    stub[method](request, (error, reply) => (error ? reject(error) : resolve(reply)));
  });
}

/** A round robin of 4 games of 6 x 6 Dots between a kit bot ('kit', entrant
 * 0) and the built-in greedy entrant, started, the greedy entrant running. */
async function againstGreedy(name, moveMs = 60_000) {
  const stub = new TournamentService(server, grpc.credentials.createInsecure());
  const created = await call(stub, 'CreateTournament', {
    spec: {
      name,
      rules: { dots: { width: 6, height: 6 } },
      format: 'TOURNAMENT_FORMAT_ROUND_ROBIN',
      games_per_pairing: 4,
      time_control: { per_move: { move_ms: moveMs } },
    },
    entrants: ['kit', 'greedy'],
  });
  const tid = created.tournament.tournament_id;
  const keys = Object.fromEntries(created.keys.map((k) => [k.name, k.entrant_key]));
  await call(stub, 'StartTournament', { tournament_id: tid });
  const greedy = spawn(binary, ['entrant', 'greedy', '--server', server, '--key', keys.greedy], {
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => greedy.on('exit', (code) => resolve(code)));
  return { stub, tid, key: keys.kit, greedy, exited };
}

/** Legal moves, but choose of the first turn it is asked fails: throws
 * ('throw'), overruns the clock ('overrun') or answers a move off the field
 * ('illegal'). Records its hooks and log. */
class FailsOnce extends Bot {
  constructor(mode) {
    super();
    this.mode = mode;
    this.failed = null;
    this.errors = [];
    this.refused = [];
    this.finishedGames = [];
    this.logged = [];
    this.random = rng(5);
    this.logger = { warn: (text) => this.logged.push(text), error: (text) => this.logged.push(text) };
  }

  async choose(state, legalMoves) {
    if (this.failed === null) {
      this.failed = state.game_id;
      if (this.mode === 'throw') throw new Error('a bug in the bot');
      if (this.mode === 'overrun') {
        return new Promise(() => {}); // never answers
      }
      if (this.mode === 'illegal') return '99,99';
    }
    return legalMoves[Math.floor(this.random() * legalMoves.length)];
  }

  onError(gameId, error) {
    this.errors.push([gameId, error]);
  }

  onRefused(gameId, move, error) {
    this.refused.push([gameId, move, error]);
  }

  finished(game) {
    this.finishedGames.push(game.game_id);
  }
}

/** run() within `limitMs`, else the test fails. */
async function runBounded(bot, key, limitMs) {
  let timer;
  try {
    return await Promise.race([
      bot.run(server, key),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`run() did not resolve within ${limitMs} ms`)), limitMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkOnlyTheFailedGameWasResigned(t, bot) {
  const { tournament } = await call(t.stub, 'GetTournament', { tournament_id: t.tid });
  assert.equal(tournament.games.length, 4);
  assert.deepEqual(
    [...bot.finishedGames].sort(),
    tournament.games.map((g) => g.game_id).sort(),
    'finished() for all 4 games',
  );
  for (const g of tournament.games) {
    assert.equal(g.status, 'TOURNAMENT_GAME_STATUS_FINISHED');
    if (g.game_id === bot.failed) {
      assert.equal(g.reason, 'RESIGNATION');
      assert.equal(g.points[g.entrants.indexOf(0)], 0, "the kit's seat lost");
    } else {
      assert.ok(!['RESIGNATION', 'TIMEOUT', 'FORFEIT'].includes(g.reason), g.reason);
    }
  }
}

async function play(name, mode, moveMs, limitMs) {
  const t = await againstGreedy(name, moveMs);
  const bot = new FailsOnce(mode);
  bot.clockMarginMs = 1_500; // room for the resignation on a loaded machine
  try {
    const end = await runBounded(bot, t.key, limitMs);
    assert.equal(await t.exited, 0);
    assert.equal(end.status, 'TOURNAMENT_STATUS_FINISHED');
    return { t, bot };
  } finally {
    t.greedy.kill();
  }
}

test('a choose that throws resigns that game at once and keeps the others', async () => {
  // A 60 s move clock: a game lost on time would take past the limit.
  const { t, bot } = await play('node-throws-once', 'throw', 60_000, 50_000);
  assert.deepEqual(
    bot.errors.map(([id, e]) => [id, e.message]),
    [[bot.failed, 'a bug in the bot']],
  );
  assert.ok(bot.logged.some((line) => line.includes(bot.failed) && line.includes('a bug in the bot')));
  await checkOnlyTheFailedGameWasResigned(t, bot);
  t.stub.close();
});

test('a refused move reaches onRefused with the code and reason', async () => {
  const { t, bot } = await play('node-illegal-once', 'illegal', 60_000, 50_000);
  assert.equal(bot.refused.length, 1);
  const [gameId, move, error] = bot.refused[0];
  assert.deepEqual([gameId, move], [bot.failed, '99,99']);
  assert.equal(error.code, grpc.status.FAILED_PRECONDITION);
  assert.equal(error.reason, 'OFF_FIELD');
  assert.deepEqual(bot.errors, [], 'a refusal goes to onRefused, not onError');
  assert.ok(bot.logged.some((line) => line.includes(bot.failed) && line.includes('OFF_FIELD')));
  await checkOnlyTheFailedGameWasResigned(t, bot);
  t.stub.close();
});

test('a choose that overruns the clock resigns, and run() still resolves', async () => {
  // 6 s a move: the bot resigns before its flag falls; choose never answers.
  const { t, bot } = await play('node-overruns-once', 'overrun', 6_000, 60_000);
  assert.equal(bot.errors.length, 1);
  assert.equal(bot.errors[0][0], bot.failed);
  assert.ok(bot.errors[0][1] instanceof ChooseOverrun);
  await checkOnlyTheFailedGameWasResigned(t, bot);
  t.stub.close();
});
