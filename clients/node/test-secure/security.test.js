// The Node client against a referee with TLS and platform keys
// (docs/SECURITY.md). scripts/test-clients.sh starts that server and passes
// PUNCT_SECURE_SERVER (host:port), PUNCT_SECURE_CA (the CA's PEM file),
// PUNCT_KEY_CREATE (scopes games:create, read), PUNCT_KEY_READ (read) and
// PUNCT_KEY_MANAGE (tournaments:manage, read).
// Its own folder: `node --test test/` runs against the plaintext server.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import grpc from '@grpc/grpc-js';
import { RefereeClient, TournamentService } from '../src/client.js';
import { Bot } from '../src/bot.js';
import { refusal } from '../support/suite.js';

const target = process.env.PUNCT_SECURE_SERVER;
assert.ok(target, 'PUNCT_SECURE_SERVER (a TLS + keys referee) is not set');
const rootCerts = readFileSync(process.env.PUNCT_SECURE_CA);

function secure(key) {
  return new RefereeClient(target, { rootCerts, serverName: 'localhost', key });
}

test('TLS and a creating key make and play a game', async () => {
  const client = secure(process.env.PUNCT_KEY_CREATE);
  try {
    assert.equal(await client.serving(), true);
    const table = await client.createGame();
    const reply = await client.play(table.gameId, table.token('white'), 'SE@E5:F5,G5', 0);
    assert.deepEqual([reply.seat, reply.ply], [1, 1]);
    assert.equal((await client.getGame(table.gameId)).ply, 1);
    const player = secure();
    try {
      assert.equal((await player.getGame(table.gameId, { token: table.token('black') })).ply, 1);
    } finally {
      player.close();
    }
  } finally {
    client.close();
  }
});

test('calls without the right key are refused with a reason', async () => {
  const anonymous = secure();
  const reader = secure(process.env.PUNCT_KEY_READ);
  const stranger = secure('not-a-key');
  try {
    assert.equal(await anonymous.serving(), true, 'health needs no key');
    let refused = await refusal(anonymous.createGame());
    assert.equal(refused.code, grpc.status.UNAUTHENTICATED);
    assert.equal(refused.reason, 'KEY_MISSING');
    refused = await refusal(reader.createGame());
    assert.equal(refused.code, grpc.status.PERMISSION_DENIED);
    assert.equal(refused.reason, 'SCOPE_MISSING');
    assert.match(refused.message, /games:create/);
    refused = await refusal(stranger.createGame());
    assert.equal(refused.code, grpc.status.UNAUTHENTICATED);
    assert.equal(refused.reason, 'KEY_UNKNOWN');
    assert.doesNotMatch(refused.message, /not-a-key/);
  } finally {
    anonymous.close();
    reader.close();
    stranger.close();
  }
});

test('a plaintext client gets no answer from a TLS referee', async () => {
  const plain = new RefereeClient(target, { timeoutMs: 3000, key: process.env.PUNCT_KEY_CREATE });
  try {
    const refused = await refusal(plain.createGame());
    assert.equal(refused.code, grpc.status.UNAVAILABLE);
  } finally {
    plain.close();
  }
});

test('kit bots over TLS join a tournament and finish it', async () => {
  // One bot at https://127.0.0.1:PORT (TLS by the address), one at
  // 127.0.0.1:PORT with the CA and the certificate's name.
  class First extends Bot {
    games = 0;
    choose(state, legalMoves) {
      return legalMoves[0];
    }
    finished() {
      this.games += 1;
    }
  }
  const stub = new TournamentService(target, grpc.credentials.createSsl(rootCerts), {
    'grpc.ssl_target_name_override': 'localhost',
  });
  const organiser = new grpc.Metadata();
  organiser.set('authorization', `Bearer ${process.env.PUNCT_KEY_MANAGE}`);
  const call = (method, request) =>
    new Promise((resolve, reject) => {
      stub[method](request, organiser, (error, reply) => (error ? reject(error) : resolve(reply)));
    });
  try {
    const created = await call('CreateTournament', {
      spec: {
        name: 'node-tls',
        rules: { dots: { width: 5, height: 5 } },
        format: 'TOURNAMENT_FORMAT_ROUND_ROBIN',
        games_per_pairing: 2,
        time_control: { per_move: { move_ms: 60_000 } },
      },
      entrants: ['a', 'b'],
    });
    const keys = Object.fromEntries(created.keys.map((k) => [k.name, k.entrant_key]));
    await call('StartTournament', { tournament_id: created.tournament.tournament_id });
    const a = new First();
    const b = new First();
    const ends = await Promise.all([
      a.run(`https://${target}`, keys.a, { rootCerts }),
      b.run(target, keys.b, { rootCerts, serverName: 'localhost' }),
    ]);
    for (const end of ends) {
      assert.equal(end.status, 'TOURNAMENT_STATUS_FINISHED');
      assert.equal(end.standings.reduce((sum, s) => sum + s.points, 0), 2);
    }
    assert.deepEqual([a.games, b.games], [2, 2]);
  } finally {
    stub.close();
  }
});

test('an organiser with a managing key runs tournaments over TLS', async () => {
  const { Organiser } = await import('../src/organiser.js');
  const spec = { rules: 'dots', timeControl: { per_move: { move_ms: 60_000 } }, entrants: ['a', 'b'] };
  const reader = new Organiser(target, { rootCerts, serverName: 'localhost', key: process.env.PUNCT_KEY_READ });
  const org = new Organiser(secure(process.env.PUNCT_KEY_MANAGE));
  try {
    assert.equal((await refusal(reader.create('no scope', spec))).reason, 'SCOPE_MISSING');
    const event = await org.create('organised-tls', spec);
    assert.deepEqual(Object.keys(event.keys).sort(), ['a', 'b']);
    await org.start(event.tournamentId);
    assert.equal((await org.cancel(event.tournamentId)).status, 'TOURNAMENT_STATUS_CANCELLED');
  } finally {
    reader.close();
    org.close();
  }
});
