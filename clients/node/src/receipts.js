// Offline verification of a game record and its signed receipt
// (docs/RECEIPTS.md): the referee's Ed25519 signature over the receipt's
// payload, the number of moves and the hash chain recomputed from the
// record's move lines, and the record's SHA-256. The rules are not
// replayed: the signed hash covers every byte of the record. node:crypto
// only.
//
//   import { verify, VerifyError } from "punct-referee-client/receipts";
//   const payload = verify(recordText, receiptJson, keysJson);
//
// `keys` is the referee's key list (`/.well-known/punct-referee.json`, the
// keyring file), as text or an object.

import { createHash, createPublicKey, verify as verifySignature } from "node:crypto";

export const ALGORITHM = "Ed25519";
export const GAME_RECEIPT = "punct-referee/game-receipt/v1";
const CHAIN_DOMAIN = Buffer.from("punct-referee/chain/v1");
// The DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 key bytes follow.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Why a record and receipt do not verify: `code` is stable
 * (`BAD_SIGNATURE`, `UNKNOWN_KEY`, `MOVE_COUNT`, `CHAIN`, `RECORD_HASH`,
 * `MALFORMED_RECEIPT`, `KEY_MISMATCH`), the message is for people. */
export class VerifyError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "VerifyError";
    this.code = code;
  }
}

function part(bytes) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(bytes.length);
  return Buffer.concat([len, bytes]);
}

function sha256(...parts) {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
}

/** h_0 of a game's chain. */
export function chainRoot(gameId, rules, commitmentHex) {
  return sha256(
    part(CHAIN_DOMAIN),
    part(Buffer.from(gameId, "utf8")),
    part(Buffer.from(rules, "utf8")),
    part(Buffer.from(commitmentHex || "", "hex")),
  );
}

/** h_n from h_(n-1) and move n (its notation). */
export function chainStep(previous, move, ply) {
  const n = Buffer.alloc(4);
  n.writeUInt32BE(ply);
  return sha256(previous, part(Buffer.from(move, "utf8")), n);
}

/** The moves of a record as the chain hashes them: the body's move lines
 * (after the first blank line), comments and blank lines left out; in a
 * Punto record, the move after the card, `round N` lines left out. */
export function recordMoves(record, game) {
  const lines = record.replace(/\r\n/g, "\n").split("\n");
  const blank = lines.indexOf("");
  const body = blank >= 0 ? lines.slice(blank + 1) : lines;
  const moves = [];
  for (let line of body) {
    line = line.trim();
    if (!line || line.startsWith("#")) continue;
    if (game === "punto") {
      if (/^round\s+\d+$/.test(line)) continue;
      const words = line.split(/\s+/);
      line = words[words.length - 1];
    }
    moves.push(line);
  }
  return moves;
}

function json(value) {
  return typeof value === "string" || Buffer.isBuffer(value) ? JSON.parse(value) : value;
}

function canonicalBase64(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : null;
}

function publicKey(keys, keyId) {
  for (const entry of keys.keys || []) {
    if (entry.key_id !== keyId) continue;
    const raw = canonicalBase64(entry.public_key);
    if (raw && raw.length === 32 && sha256(raw).toString("hex").slice(0, 16) === keyId) {
      return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
    }
  }
  throw new VerifyError(
    "UNKNOWN_KEY",
    `the receipt is signed by key ${keyId}, which is not among the keys given`,
  );
}

/** Checks that `record` is the record `receipt` signs with a key of `keys`;
 * returns the signed payload, or throws a VerifyError. */
export function verify(record, receipt, keys) {
  let r;
  try {
    r = json(receipt);
  } catch (e) {
    throw new VerifyError("MALFORMED_RECEIPT", `the receipt is not a receipt: ${e.message}`);
  }
  if (
    !r || r.algorithm !== ALGORITHM ||
    typeof r.payload !== "string" || typeof r.key_id !== "string" || typeof r.signature !== "string"
  ) {
    throw new VerifyError("MALFORMED_RECEIPT", "the receipt is not a receipt");
  }
  const key = publicKey(json(keys), r.key_id);
  // Canonical base64 only: other spellings of the same bytes are changes.
  const signature = canonicalBase64(r.signature);
  if (!signature || signature.length !== 64) {
    throw new VerifyError("MALFORMED_RECEIPT", "the signature is not 64 bytes in canonical base64");
  }
  if (!verifySignature(null, Buffer.from(r.payload, "utf8"), key, signature)) {
    throw new VerifyError(
      "BAD_SIGNATURE",
      `the signature is not by key ${r.key_id} over this payload ` +
        "(the receipt was changed or signed by another key)",
    );
  }
  let payload;
  try {
    payload = JSON.parse(r.payload);
  } catch (e) {
    throw new VerifyError("MALFORMED_RECEIPT", `payload: ${e.message}`);
  }
  if (payload.key_id !== r.key_id) {
    throw new VerifyError("KEY_MISMATCH", `the payload names key ${payload.key_id}, the receipt key ${r.key_id}`);
  }
  if (payload.type !== GAME_RECEIPT) {
    throw new VerifyError("MALFORMED_RECEIPT", `payload type ${payload.type}, not ${GAME_RECEIPT}`);
  }
  const moves = recordMoves(record, payload.game);
  if (moves.length !== payload.ply) {
    throw new VerifyError("MOVE_COUNT", `the record has ${moves.length} moves, the receipt signs ${payload.ply}`);
  }
  let head = chainRoot(payload.game_id, payload.rules, payload.commitment);
  moves.forEach((move, i) => {
    head = chainStep(head, move, i + 1);
  });
  if (head.toString("hex") !== payload.chain_head) {
    throw new VerifyError(
      "CHAIN",
      "a move of the record differs from the record the receipt signs " +
        "(its moves do not chain to the receipt's head)",
    );
  }
  const actual = sha256(Buffer.from(record, "utf8")).toString("hex");
  if (actual !== payload.record_sha256) {
    throw new VerifyError(
      "RECORD_HASH",
      `the record is not the one the receipt signs (its SHA-256 is ${actual}, the receipt's ${payload.record_sha256})`,
    );
  }
  return payload;
}
