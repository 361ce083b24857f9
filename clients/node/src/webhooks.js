// Verifying the referee's webhook deliveries (docs/WEBHOOKS.md): the
// Standard Webhooks convention, headers webhook-id, webhook-timestamp and
// webhook-signature (`v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`
// with the endpoint's secret). Only node:crypto: a receiver needs no gRPC.
//
//   import { verifyDelivery } from 'punct-referee-client/webhooks';
//   const event = verifyDelivery(secret, req.headers, rawBody); // throws if not
//   if (seen.has(req.headers['webhook-id'])) return res.status(204).end();

import { createHmac, timingSafeEqual } from 'node:crypto';

/** How far a delivery's timestamp may be from the clock, seconds. */
export const DEFAULT_TOLERANCE = 300;

/** A delivery that is not the referee's, or not as sent. */
export class WebhookVerificationError extends Error {}

function secretBytes(secret) {
  if (Buffer.isBuffer(secret)) return secret;
  if (typeof secret !== 'string' || !secret.startsWith('whsec_')) {
    throw new WebhookVerificationError('the secret must start with whsec_');
  }
  return Buffer.from(secret.slice('whsec_'.length), 'base64');
}

function header(headers, name) {
  const get = typeof headers.get === 'function' ? (n) => headers.get(n) : null;
  let value = get ? get(name) : undefined;
  if (value == null && !get) {
    for (const [k, v] of Object.entries(headers)) {
      if (k.toLowerCase() === name) value = Array.isArray(v) ? v[0] : v;
    }
  }
  if (value == null) throw new WebhookVerificationError(`missing header ${name}`);
  return String(value);
}

/** The `v1,` signature of a delivery (what the referee sends). */
export function sign(secret, id, timestamp, body) {
  const mac = createHmac('sha256', secretBytes(secret));
  mac.update(`${id}.${timestamp}.`);
  mac.update(typeof body === 'string' ? Buffer.from(body) : body);
  return `v1,${mac.digest('base64')}`;
}

/**
 * Checks a delivery and returns its parsed JSON body. `body` must be the
 * raw bytes (or string) received. Throws WebhookVerificationError when a
 * header is missing, the timestamp is more than `tolerance` seconds from
 * `now` (seconds; default the clock), or no signature matches.
 */
export function verifyDelivery(secret, headers, body, { tolerance = DEFAULT_TOLERANCE, now } = {}) {
  const raw = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  const id = header(headers, 'webhook-id');
  const stamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  const timestamp = Number.parseInt(stamp, 10);
  if (!Number.isFinite(timestamp) || String(timestamp) !== stamp.trim()) {
    throw new WebhookVerificationError('webhook-timestamp is not a number');
  }
  const current = now ?? Date.now() / 1000;
  if (Math.abs(current - timestamp) > tolerance) {
    throw new WebhookVerificationError('webhook-timestamp is too far from now');
  }
  const expected = Buffer.from(sign(secret, id, timestamp, raw));
  const ok = signatures.split(' ').some((s) => {
    const got = Buffer.from(s);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
  if (!ok) throw new WebhookVerificationError('no matching signature');
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
}
