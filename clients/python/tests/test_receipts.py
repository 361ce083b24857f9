"""The kit's receipt verifier on receipts a real server signed
(tests/data/receipts.json, checked by the server's own verifier too:
tests/service/receipts.rs): they verify, every changed byte of a record or a
receipt, a removed move and another key fail with their reasons. Offline:
no server needed."""

import base64
import json
import pathlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from punct_client.receipts import VerifyError, chain_root, chain_step, record_moves, verify

VECTORS = json.loads((pathlib.Path(__file__).parent / "data" / "receipts.json").read_text())
KEYS = VECTORS["keys"]
GAMES = VECTORS["games"]


def code_of(record, receipt, keys=KEYS):
    with pytest.raises(VerifyError) as e:
        verify(record, receipt, keys)
    return e.value.code


@pytest.mark.parametrize("game", GAMES, ids=lambda g: json.loads(json.loads(g["receipt"])["payload"])["game"])
def test_a_server_receipt_verifies_and_its_chain_is_the_events(game):
    payload = verify(game["record"], game["receipt"], KEYS)
    assert payload["key_id"] == KEYS["current_key_id"]
    head = chain_root(payload["game_id"], payload["rules"], payload["commitment"])
    heads = []
    for n, move in enumerate(record_moves(game["record"], payload["game"]), start=1):
        head = chain_step(head, move, n)
        heads.append(head.hex())
    assert heads == game["chain_heads"]


@pytest.mark.parametrize("game", GAMES)
def test_every_changed_byte_fails(game):
    record, receipt = game["record"], game["receipt"]
    for i, ch in enumerate(record):
        changed = record[:i] + ("2" if ch == "1" else "1") + record[i + 1 :]
        with pytest.raises(VerifyError):
            verify(changed, receipt, KEYS)
    for i, ch in enumerate(receipt):
        changed = receipt[:i] + ("B" if ch == "A" else "A") + receipt[i + 1 :]
        with pytest.raises(VerifyError):
            verify(record, changed, KEYS)


def test_reasons_name_what_is_wrong():
    game = GAMES[0]
    record, receipt = game["record"], game["receipt"]
    head, body = record.split("\n\n", 1)
    lines = body.splitlines()
    # A removed move.
    assert code_of(head + "\n\n" + "\n".join(lines[:-1]) + "\n", receipt) == "MOVE_COUNT"
    # Two moves swapped: same count, another chain.
    swapped = lines[:]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    assert code_of(head + "\n\n" + "\n".join(swapped) + "\n", receipt) == "CHAIN"
    # A changed header tag.
    assert code_of(record.replace("x-event: cup", "x-event: cap"), receipt) == "RECORD_HASH"
    # A changed payload.
    r = json.loads(receipt)
    r["payload"] = r["payload"].replace('"ply":', '"ply": ')
    assert code_of(record, json.dumps(r)) == "BAD_SIGNATURE"


def test_another_keys_receipt_fails():
    game = GAMES[0]
    r = json.loads(game["receipt"])
    other = Ed25519PrivateKey.generate()
    raw = other.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    import hashlib

    other_id = hashlib.sha256(raw).hexdigest()[:16]
    payload = json.loads(r["payload"])
    payload["key_id"] = other_id
    text = json.dumps(payload)
    forged = {
        "payload": text,
        "key_id": other_id,
        "algorithm": "Ed25519",
        "signature": base64.b64encode(other.sign(text.encode())).decode(),
    }
    assert code_of(game["record"], forged) == "UNKNOWN_KEY"
    # Claiming the referee's key with another key's signature.
    claimed = dict(r, signature=base64.b64encode(other.sign(r["payload"].encode())).decode())
    with pytest.raises(VerifyError) as e:
        verify(game["record"], claimed, KEYS)
    assert e.value.code == "BAD_SIGNATURE"
    assert KEYS["current_key_id"] in str(e.value)
