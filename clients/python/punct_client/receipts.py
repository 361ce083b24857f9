"""Offline verification of a game record and its signed receipt
(docs/RECEIPTS.md): the referee's Ed25519 signature over the receipt's
payload, the number of moves and the hash chain recomputed from the record's
move lines, and the record's SHA-256. The rules are not replayed: the signed
hash covers every byte of the record.

    from punct_client.receipts import verify, VerifyError
    payload = verify(record_text, receipt_json, keys_json)

`keys` is the referee's key list (`/.well-known/punct-referee.json`, the
keyring file, or GetRefereeKeys turned into that form), as text or a dict.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from typing import Any, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

ALGORITHM = "Ed25519"
GAME_RECEIPT = "punct-referee/game-receipt/v1"
CHAIN_DOMAIN = b"punct-referee/chain/v1"

Json = Union[str, bytes, dict]


class VerifyError(Exception):
    """Why a record and receipt do not verify: `code` is stable
    (`BAD_SIGNATURE`, `UNKNOWN_KEY`, `MOVE_COUNT`, `CHAIN`, `RECORD_HASH`,
    `MALFORMED_RECEIPT`, `KEY_MISMATCH`), the message is for people."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _part(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def chain_root(game_id: str, rules: str, commitment_hex: str) -> bytes:
    """h_0 of a game's chain."""
    commitment = bytes.fromhex(commitment_hex) if commitment_hex else b""
    return hashlib.sha256(
        _part(CHAIN_DOMAIN)
        + _part(game_id.encode())
        + _part(rules.encode())
        + _part(commitment)
    ).digest()


def chain_step(previous: bytes, move: str, ply: int) -> bytes:
    """h_n from h_(n-1) and move n (its notation)."""
    return hashlib.sha256(previous + _part(move.encode()) + struct.pack(">I", ply)).digest()


_ROUND = re.compile(r"^round\s+\d+$")


def record_moves(record: str, game: str) -> list[str]:
    """The moves of a record, as the chain hashes them: the body's move
    lines (after the first blank line), comments and blank lines left out;
    in a Punto record, the move after the card, `round N` lines left out."""
    lines = record.replace("\r\n", "\n").split("\n")
    try:
        body = lines[lines.index("") + 1 :]
    except ValueError:
        body = lines
    moves = []
    for line in body:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if game == "punto":
            if _ROUND.match(line):
                continue
            line = line.split()[-1]
        moves.append(line)
    return moves


def _json(value: Json) -> Any:
    if isinstance(value, (str, bytes)):
        return json.loads(value)
    return value


def _public_key(keys: dict, key_id: str) -> bytes:
    for entry in keys.get("keys", []):
        if entry.get("key_id") != key_id:
            continue
        try:
            raw = base64.b64decode(entry["public_key"], validate=True)
        except (KeyError, ValueError) as e:
            raise VerifyError("UNKNOWN_KEY", f"key {key_id} is listed without a public key") from e
        if len(raw) == 32 and hashlib.sha256(raw).hexdigest()[:16] == key_id:
            return raw
    raise VerifyError(
        "UNKNOWN_KEY",
        f"the receipt is signed by key {key_id}, which is not among the keys given",
    )


def verify(record: str, receipt: Json, keys: Json) -> dict:
    """Checks that `record` is the record `receipt` signs with a key of
    `keys`; returns the signed payload, or raises `VerifyError`."""
    try:
        r = _json(receipt)
        payload_text = r["payload"]
        key_id = r["key_id"]
        signature_text = r["signature"]
        algorithm = r["algorithm"]
    except (ValueError, KeyError, TypeError) as e:
        raise VerifyError("MALFORMED_RECEIPT", f"the receipt is not a receipt: {e}") from e
    if algorithm != ALGORITHM or not all(
        isinstance(v, str) for v in (payload_text, key_id, signature_text)
    ):
        raise VerifyError("MALFORMED_RECEIPT", "the receipt is not a receipt")
    public = _public_key(_json(keys), key_id)
    try:
        signature = base64.b64decode(signature_text, validate=True)
    except ValueError as e:
        raise VerifyError("MALFORMED_RECEIPT", "the signature is not base64") from e
    # Canonical base64 only: other spellings of the same bytes are changes.
    if len(signature) != 64 or base64.b64encode(signature).decode() != signature_text:
        raise VerifyError("MALFORMED_RECEIPT", "the signature is not 64 bytes in canonical base64")
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, payload_text.encode())
    except InvalidSignature as e:
        raise VerifyError(
            "BAD_SIGNATURE",
            f"the signature is not by key {key_id} over this payload "
            "(the receipt was changed or signed by another key)",
        ) from e
    try:
        payload = json.loads(payload_text)
        kind, game, ply = payload["type"], payload["game"], payload["ply"]
    except (ValueError, KeyError, TypeError) as e:
        raise VerifyError("MALFORMED_RECEIPT", f"payload: {e}") from e
    if payload.get("key_id") != key_id:
        raise VerifyError(
            "KEY_MISMATCH", f"the payload names key {payload.get('key_id')}, the receipt key {key_id}"
        )
    if kind != GAME_RECEIPT:
        raise VerifyError("MALFORMED_RECEIPT", f"payload type {kind!r}, not {GAME_RECEIPT}")
    moves = record_moves(record, game)
    if len(moves) != ply:
        raise VerifyError("MOVE_COUNT", f"the record has {len(moves)} moves, the receipt signs {ply}")
    head = chain_root(payload["game_id"], payload["rules"], payload["commitment"])
    for n, move in enumerate(moves, start=1):
        head = chain_step(head, move, n)
    if head.hex() != payload["chain_head"]:
        raise VerifyError(
            "CHAIN",
            "a move of the record differs from the record the receipt signs "
            "(its moves do not chain to the receipt's head)",
        )
    actual = hashlib.sha256(record.encode()).hexdigest()
    if actual != payload["record_sha256"]:
        raise VerifyError(
            "RECORD_HASH",
            f"the record is not the one the receipt signs (its SHA-256 is {actual}, "
            f"the receipt's {payload['record_sha256']})",
        )
    return payload
