"""The Python client against a referee with TLS and platform keys
(docs/SECURITY.md). scripts/test-clients.sh starts that server and passes
PUNCT_SECURE_SERVER (host:port), PUNCT_SECURE_CA (the CA's PEM file),
PUNCT_KEY_CREATE (scopes games:create, read) and PUNCT_KEY_READ (read)."""

import os
import pathlib

import grpc
import pytest

from punct_client import RefereeClient, RefereeError, tournament_pb2

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


def test_kit_bots_over_tls_join_a_tournament_and_finish_it():
    """Two kit bots, one at ``https://127.0.0.1:PORT`` (TLS by the address),
    one at ``127.0.0.1:PORT`` with the CA and the certificate's name, play a
    round robin on the TLS referee to its end."""
    import threading

    from punct_client import dots_pb2, referee_pb2, tournament_pb2, tournament_pb2_grpc
    from punct_client.bot import Bot

    class First(Bot):
        def __init__(self):
            self.games = 0

        def choose(self, state, legal_moves, clock):
            return legal_moves[0]

        def finished(self, game):
            self.games += 1

    channel = grpc.secure_channel(
        TARGET,
        grpc.ssl_channel_credentials(root_certificates=roots()),
        options=[("grpc.ssl_target_name_override", "localhost")],
    )
    organiser = (("authorization", f"Bearer {os.environ['PUNCT_KEY_MANAGE']}"),)
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    created = stub.CreateTournament(
        tournament_pb2.CreateTournamentRequest(
            spec=tournament_pb2.TournamentSpec(
                name="tls",
                rules=referee_pb2.GameRules(dots=dots_pb2.RuleOptions(width=5, height=5)),
                format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
                games_per_pairing=2,
                time_control=referee_pb2.TimeControl(
                    per_move=referee_pb2.PerMoveClock(move_ms=60_000)
                ),
            ),
            entrants=["a", "b"],
        ),
        metadata=organiser,
    )
    keys = {k.name: k.entrant_key for k in created.keys}
    stub.StartTournament(
        tournament_pb2.StartTournamentRequest(tournament_id=created.tournament.tournament_id),
        metadata=organiser,
    )
    a, b = First(), First()
    ends = {}
    threads = [
        threading.Thread(
            target=lambda: ends.update(
                a=a.run(f"https://{TARGET}", keys["a"], root_certificates=roots())
            ),
            daemon=True,
        ),
        threading.Thread(
            target=lambda: ends.update(
                b=b.run(TARGET, keys["b"], root_certificates=roots(), server_name="localhost")
            ),
            daemon=True,
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "the tournament finishes"
    channel.close()
    for end in ends.values():
        assert end.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
        assert sum(s.points for s in end.standings) == 2.0
    assert (a.games, b.games) == (2, 2)


def test_an_organiser_with_a_managing_key_runs_tournaments_over_tls():
    from punct_client.organiser import Organiser

    spec = dict(rules="dots", time_control={"per_move": {"move_ms": 60_000}}, entrants=["a", "b"])
    with Organiser(TARGET, root_certificates=roots(), server_name="localhost", key=os.environ["PUNCT_KEY_READ"]) as reader:
        with pytest.raises(RefereeError) as refused:
            reader.create("no scope", **spec)
        assert refused.value.reason == "SCOPE_MISSING"
    with Organiser(secure(os.environ["PUNCT_KEY_MANAGE"], server_name="localhost")) as org:
        event = org.create("organised-tls", **spec)
        assert sorted(event.keys) == ["a", "b"]
        org.start(event.tournament_id)
        assert org.cancel(event.tournament_id).status == tournament_pb2.TOURNAMENT_STATUS_CANCELLED
