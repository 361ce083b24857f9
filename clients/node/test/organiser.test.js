// The organiser class end to end through the real server: it creates a round
// robin (the entrants' keys come back), three kit bots join with those keys
// and finish, the organiser follows the standings to the end and exports
// every record, and each record imports again to its result; entrants added
// to an open registration, cancelling, and refusals. scripts/test-clients.sh
// passes PUNCT_SERVER.

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import grpc from '@grpc/grpc-js';
import { RefereeClient } from '../src/client.js';
import { Bot } from '../src/bot.js';
import { Organiser, formatStandings } from '../src/organiser.js';
import { refusal, rng } from '../support/suite.js';

const server = process.env.PUNCT_SERVER;
assert.ok(server, 'PUNCT_SERVER (host:port of a running punct-referee) is not set');

class RandomDots extends Bot {
  constructor(seed) {
    super();
    this.random = rng(seed);
    this.games = 0;
  }

  choose(state, legalMoves) {
    return legalMoves[Math.floor(this.random() * legalMoves.length)];
  }

  finished() {
    this.games += 1;
  }
}

test('an organiser runs a round robin of remote kit bots and exports records that import again', async () => {
  const org = new Organiser(server);
  const client = new RefereeClient(server);
  const dir = mkdtempSync(path.join(tmpdir(), 'organiser-'));
  try {
    const event = await org.create('organised', {
      rules: { dots: { width: 6, height: 6 } },
      format: 'round_robin',
      gamesPerPairing: 1,
      timeControl: { per_move: { move_ms: 60_000 } },
      entrants: ['ann', 'bob', 'cyd'],
    });
    assert.deepEqual(Object.keys(event.keys).sort(), ['ann', 'bob', 'cyd']);
    assert.ok(Object.values(event.keys).every((k) => k && !JSON.stringify(event.tournament).includes(k)));
    assert.equal(event.tournament.status, 'TOURNAMENT_STATUS_REGISTERING');
    assert.equal((await org.start(event.tournamentId)).status, 'TOURNAMENT_STATUS_RUNNING');
    assert.equal((await refusal(org.start(event.tournamentId))).reason, 'ALREADY_STARTED');

    const bots = Object.keys(event.keys).map((name, i) => [name, new RandomDots(i + 1)]);
    const runs = bots.map(([name, bot]) => bot.run(server, event.keys[name]));
    const seen = [];
    for await (const t of org.follow(event.tournamentId, { intervalMs: 200 })) seen.push(t);
    await Promise.all(runs);
    const final = seen.at(-1);
    assert.equal(final.status, 'TOURNAMENT_STATUS_FINISHED');
    assert.ok(seen.slice(0, -1).every((t) => t.status !== 'TOURNAMENT_STATUS_FINISHED'));
    assert.ok(seen.length >= 2, 'the standings were followed while games were played');
    assert.equal(final.games.length, 3);
    assert.equal(final.standings.reduce((sum, s) => sum + s.points, 0), 3);
    assert.ok(bots.every(([, bot]) => bot.games === 2));
    const table = formatStandings(final);
    assert.match(table, /finished, 3\/3 games/);
    for (const name of Object.keys(event.keys)) assert.match(table, new RegExp(name));

    const exported = await org.export(event.tournamentId, path.join(dir, 'records'));
    assert.deepEqual(exported.map((g) => g.number), final.games.map((g) => g.number));
    assert.deepEqual(
      readdirSync(path.join(dir, 'records')).sort(),
      exported.map((g) => `${String(g.number).padStart(3, '0')}-${g.gameId}.txt`).sort(),
    );
    for (const [i, g] of exported.entries()) {
      const played = final.games[i];
      assert.equal(g.gameId, played.game_id);
      assert.equal(g.entrants.length, 2);
      const replayed = (await client.importGame(g.record)).game;
      const original = await client.getGame(g.gameId);
      assert.deepEqual(replayed.outcome.winners, original.outcome.winners);
      assert.equal(replayed.outcome.reason, played.reason);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    client.close();
    org.close();
  }
});

test('an organiser adds entrants to an open registration and cancels', async () => {
  const org = new Organiser(server);
  try {
    const event = await org.create('open', {
      rules: 'punto',
      timeControl: { fischer: { initial_ms: 60_000, increment_ms: 1_000 } },
      openRegistration: true,
    });
    assert.deepEqual(event.keys, {});
    const keys = [await org.addEntrant(event.tournamentId, 'ann'), await org.addEntrant(event.tournamentId, 'bob')];
    assert.equal(new Set(keys).size, 2);
    assert.ok(keys.every(Boolean));
    assert.equal((await refusal(org.addEntrant(event.tournamentId, 'ann'))).reason, 'DUPLICATE_ENTRANT');
    assert.deepEqual((await org.get(event.tournamentId)).entrants.map((e) => e.name), ['ann', 'bob']);
    assert.ok((await org.list()).some((t) => t.tournament_id === event.tournamentId));
    await org.start(event.tournamentId);
    assert.equal((await org.cancel(event.tournamentId)).status, 'TOURNAMENT_STATUS_CANCELLED');
    const followed = [];
    for await (const t of org.follow(event.tournamentId, { intervalMs: 100 })) followed.push(t.status);
    assert.deepEqual(followed, ['TOURNAMENT_STATUS_CANCELLED']);
    await assert.rejects(org.create('bad', { format: 'knockout', timeControl: { per_move: { move_ms: 1 } } }), /unknown format/);
    assert.equal((await refusal(org.get('0'.repeat(32)))).code, grpc.status.NOT_FOUND);
  } finally {
    org.close();
  }
});
