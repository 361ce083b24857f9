// Types of src/receipts.js: offline verification of a record and its
// signed receipt (docs/RECEIPTS.md).

export const ALGORITHM: "Ed25519";
export const GAME_RECEIPT: "punct-referee/game-receipt/v1";

export class VerifyError extends Error {
  /** MALFORMED_RECEIPT, UNKNOWN_KEY, BAD_SIGNATURE, KEY_MISMATCH, MOVE_COUNT, CHAIN or RECORD_HASH. */
  code: string;
}

export interface GamePayload {
  type: string;
  game_id: string;
  game: string;
  rules: string;
  commitment: string;
  record_sha256: string;
  chain_head: string;
  ply: number;
  outcome: { winners: number[]; reason: string; scores: number[] };
  key_id: string;
  ended_unix_ms: number;
}

export function verify(record: string, receipt: string | object, keys: string | object): GamePayload;
export function chainRoot(gameId: string, rules: string, commitmentHex: string): Buffer;
export function chainStep(previous: Buffer, move: string, ply: number): Buffer;
export function recordMoves(record: string, game: string): string[];
