// Helpers the suites under test/ share. It lives outside test/ because
// `node --test test/` runs every .js file there as a test file.

import assert from 'node:assert/strict';

import { RefereeError } from '../src/client.js';

/** A small seeded generator (mulberry32), so the games are repeatable. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The RefereeError a call was refused with (fails if it was not). */
export async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof RefereeError, String(e));
    return e;
  }
  assert.fail('the call was not refused');
}
