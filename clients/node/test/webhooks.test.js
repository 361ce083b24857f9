// The webhook verifier against the Standard Webhooks example and tampering
// (no server needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { sign, verifyDelivery, WebhookVerificationError } from '../src/webhooks.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIG = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const headers = (sig = SIG) => ({
  'webhook-id': ID,
  'webhook-timestamp': String(TS),
  'webhook-signature': sig,
});

test('the Standard Webhooks example verifies', () => {
  assert.equal(sign(SECRET, ID, TS, BODY), SIG);
  assert.deepEqual(verifyDelivery(SECRET, headers(), BODY, { now: TS + 10 }), { test: 2432232314 });
  assert.ok(verifyDelivery(SECRET, new Headers(headers(`v1,bogus ${SIG}`)), BODY, { now: TS }));
});

test('tampering, another secret, a stale timestamp or a missing header fail', () => {
  const cases = [
    [SECRET, headers(), '{"test": 2432232315}', TS],
    [`whsec_${'A'.repeat(32)}`, headers(), BODY, TS],
    [SECRET, headers(), BODY, TS + 301],
    [SECRET, { 'webhook-id': ID }, BODY, TS],
  ];
  for (const [secret, h, body, now] of cases) {
    assert.throws(() => verifyDelivery(secret, h, body, { now }), WebhookVerificationError);
  }
});
