// The kit's receipt verifier on receipts a real server signed
// (test/data/receipts.json, checked by the server's own verifier too:
// tests/service/receipts.rs): they verify, every changed byte of a record or
// a receipt, a removed move and another key fail with their reasons.
// Offline: no server needed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createHash, generateKeyPairSync, sign } from "node:crypto";

import { VerifyError, chainRoot, chainStep, recordMoves, verify } from "../src/receipts.js";

const VECTORS = JSON.parse(readFileSync(new URL("./data/receipts.json", import.meta.url), "utf8"));
const KEYS = VECTORS.keys;
const GAMES = VECTORS.games;

function codeOf(record, receipt, keys = KEYS) {
  try {
    verify(record, receipt, keys);
  } catch (e) {
    assert.ok(e instanceof VerifyError, String(e));
    return e.code;
  }
  assert.fail("verified");
}

test("a server's receipts verify and their chains are the events'", () => {
  for (const game of GAMES) {
    const payload = verify(game.record, game.receipt, KEYS);
    assert.equal(payload.key_id, KEYS.current_key_id);
    let head = chainRoot(payload.game_id, payload.rules, payload.commitment);
    const heads = recordMoves(game.record, payload.game).map((m, i) => {
      head = chainStep(head, m, i + 1);
      return head.toString("hex");
    });
    assert.deepEqual(heads, game.chain_heads);
  }
  assert.deepEqual(GAMES.map((g) => JSON.parse(JSON.parse(g.receipt).payload).game), ["punct", "dots", "punto"]);
});

test("every changed byte of a record or a receipt fails", () => {
  for (const { record, receipt } of GAMES) {
    for (let i = 0; i < record.length; i++) {
      const changed = record.slice(0, i) + (record[i] === "1" ? "2" : "1") + record.slice(i + 1);
      assert.throws(() => verify(changed, receipt, KEYS), VerifyError, `record byte ${i}`);
    }
    for (let i = 0; i < receipt.length; i++) {
      const changed = receipt.slice(0, i) + (receipt[i] === "A" ? "B" : "A") + receipt.slice(i + 1);
      assert.throws(() => verify(record, changed, KEYS), VerifyError, `receipt byte ${i}`);
    }
  }
});

test("the reasons name what is wrong", () => {
  const { record, receipt } = GAMES[0];
  const [head, body] = [record.slice(0, record.indexOf("\n\n")), record.slice(record.indexOf("\n\n") + 2)];
  const lines = body.trimEnd().split("\n");
  assert.equal(codeOf(`${head}\n\n${lines.slice(0, -1).join("\n")}\n`, receipt), "MOVE_COUNT");
  const swapped = [lines[1], lines[0], ...lines.slice(2)];
  assert.equal(codeOf(`${head}\n\n${swapped.join("\n")}\n`, receipt), "CHAIN");
  assert.equal(codeOf(record.replace("x-event: cup", "x-event: cap"), receipt), "RECORD_HASH");
  const r = JSON.parse(receipt);
  assert.equal(codeOf(record, { ...r, payload: r.payload.replace('"ply":', '"ply": ') }), "BAD_SIGNATURE");
});

test("another key's receipt fails", () => {
  const { record, receipt } = GAMES[0];
  const r = JSON.parse(receipt);
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  const otherId = createHash("sha256").update(raw).digest("hex").slice(0, 16);
  const payload = JSON.stringify({ ...JSON.parse(r.payload), key_id: otherId });
  const forged = {
    payload,
    key_id: otherId,
    algorithm: "Ed25519",
    signature: sign(null, Buffer.from(payload), privateKey).toString("base64"),
  };
  assert.equal(codeOf(record, forged), "UNKNOWN_KEY");
  const claimed = { ...r, signature: sign(null, Buffer.from(r.payload), privateKey).toString("base64") };
  assert.throws(() => verify(record, claimed, KEYS), (e) => e.code === "BAD_SIGNATURE" && e.message.includes(KEYS.current_key_id));
});
