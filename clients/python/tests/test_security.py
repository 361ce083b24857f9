"""The Python client against a referee with TLS and platform keys
(docs/SECURITY.md). scripts/test-clients.sh starts that server and passes
PUNCT_SECURE_SERVER (host:port), PUNCT_SECURE_CA (the CA's PEM file),
PUNCT_KEY_CREATE (scopes games:create, read) and PUNCT_KEY_READ (read)."""

import os
import pathlib

import grpc
import pytest

from punct_client import RefereeClient, RefereeError

TARGET = os.environ.get("PUNCT_SECURE_SERVER")
pytestmark = pytest.mark.skipif(
    not TARGET, reason="PUNCT_SECURE_SERVER (a TLS + keys referee) is not set"
)


def roots() -> bytes:
    return pathlib.Path(os.environ["PUNCT_SECURE_CA"]).read_bytes()


def secure(key: str | None = None, server_name: str | None = None) -> RefereeClient:
    return RefereeClient(TARGET, root_certificates=roots(), server_name=server_name, key=key)


def test_tls_and_a_creating_key_make_and_play_a_game():
    with secure(os.environ["PUNCT_KEY_CREATE"]) as client:
        assert client.serving()
        table = client.create_game()
        reply = client.play(table.game_id, table.token("white"), "SE@E5:F5,G5", 0)
        assert (reply.seat, reply.ply) == (1, 1)
        assert client.get_game(table.game_id).ply == 1
        # A seat token reads its game without a read key too.
        with secure() as player:
            assert player.get_game(table.game_id, token=table.token("black")).ply == 1


def test_calls_without_the_right_key_are_refused_with_a_reason():
    with secure() as anonymous:
        assert anonymous.serving(), "health needs no key"
        with pytest.raises(RefereeError) as refused:
            anonymous.create_game()
        assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert refused.value.reason == "KEY_MISSING"
    with secure(os.environ["PUNCT_KEY_READ"]) as reader:
        with pytest.raises(RefereeError) as refused:
            reader.create_game()
        assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert refused.value.reason == "SCOPE_MISSING"
        assert "games:create" in refused.value.message
    with secure("not-a-key") as stranger:
        with pytest.raises(RefereeError) as refused:
            stranger.create_game()
        assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert refused.value.reason == "KEY_UNKNOWN"
        assert "not-a-key" not in refused.value.message


def test_a_plaintext_client_gets_no_answer_from_a_tls_referee():
    with RefereeClient(TARGET, timeout=3, key=os.environ["PUNCT_KEY_CREATE"]) as plain:
        with pytest.raises(RefereeError) as refused:
            plain.create_game()
        assert refused.value.code == grpc.StatusCode.UNAVAILABLE


def test_a_certificate_name_other_than_the_host_is_checked():
    with secure(os.environ["PUNCT_KEY_CREATE"], server_name="localhost") as named:
        assert named.serving()
    with secure(os.environ["PUNCT_KEY_CREATE"], server_name="not-the-referee") as wrong:
        with pytest.raises(RefereeError) as refused:
            wrong.serving()
        assert refused.value.code == grpc.StatusCode.UNAVAILABLE


def test_the_key_is_not_shown_by_the_client():
    key = os.environ["PUNCT_KEY_CREATE"]
    with secure(key) as client:
        assert key not in repr(client)
