// The Node client against a referee with TLS and platform keys
// (docs/SECURITY.md). scripts/test-clients.sh starts that server and passes
// PUNCT_SECURE_SERVER (host:port), PUNCT_SECURE_CA (the CA's PEM file),
// PUNCT_KEY_CREATE (scopes games:create, read) and PUNCT_KEY_READ (read).
// Its own folder: `node --test test/` runs against the plaintext server.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import grpc from '@grpc/grpc-js';
import { RefereeClient } from '../src/client.js';
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
