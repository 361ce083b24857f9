"""The referee through the Python client: whole games between two bots that
choose from ListLegalMoves, refused moves with decoded details, a watched
game, health and records."""

import random
import threading

import grpc
import pytest

from punct_client import BLACK, WHITE, RefereeError, notation, punct_pb2, referee_pb2


def play_out(client, table, seed, max_plies=400):
    """Plays random legal moves for both seats until the game ends; returns
    the moves played."""
    rng = random.Random(seed)
    played = []
    for _ in range(max_plies):
        legal = client.legal_moves(table.game_id)
        if legal.to_move == referee_pb2.SEAT_UNSPECIFIED:
            return played
        choice = notation(rng.choice(legal.moves))
        reply = client.play(table.game_id, table.tokens[legal.to_move], choice, legal.ply)
        assert reply.ply == legal.ply + 1
        assert reply.seat == legal.to_move
        played.append(notation(reply.move))
    raise AssertionError("the game did not end")


def test_health_reports_the_referee_serving(client):
    assert client.serving()
    assert client.serving("")


def test_two_bots_play_complete_games(client):
    for seed in (1, 2):
        table = client.create_game(
            variant=punct_pb2.VARIANT_BASIC, labels={"suite": "python"}
        )
        assert set(table.tokens) == {WHITE, BLACK}
        moves = play_out(client, table, seed)
        game = client.get_game(table.game_id)
        assert game.status == referee_pb2.GAME_STATUS_FINISHED
        assert game.ply == len(moves)
        assert game.outcome.reason in {
            "CONNECTION", "LAST_PIECE", "NO_LEGAL_MOVE", "REPETITION", "MOVE_LIMIT",
        }
        assert game.labels["suite"] == "python"
        # The record replays into an identical game.
        record = client.export_game(table.game_id)
        assert record.splitlines()[-len(moves):] == moves
        copy = client.import_game(record).game
        assert copy.ply == game.ply
        assert copy.outcome == game.outcome
        assert copy.state == game.state


def test_a_refused_move_carries_its_rule_in_the_details(client):
    table = client.create_game()
    client.play(table.game_id, table.tokens[WHITE], "SE@E5:F5,G5", 0)
    # Black on White's dots: the rule broken comes back as ErrorInfo.
    with pytest.raises(RefereeError) as refused:
        client.play(table.game_id, table.tokens[BLACK], "SE@E5:F5,G5", 1)
    err = refused.value
    assert err.code == grpc.StatusCode.FAILED_PRECONDITION
    assert err.error_info is not None
    assert err.error_info.domain == "referee.v1"
    assert err.reason and err.reason.isupper()
    # Garbled notation: INVALID_ARGUMENT with a BadRequest field violation.
    with pytest.raises(RefereeError) as garbled:
        client.play(table.game_id, table.tokens[BLACK], "not a move", 1)
    assert garbled.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert garbled.value.bad_request is not None
    assert garbled.value.bad_request.field_violations
    # White out of turn.
    with pytest.raises(RefereeError) as early:
        client.play(table.game_id, table.tokens[WHITE], "SE@B2:B3,B4", 1)
    assert early.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert early.value.reason == "NOT_YOUR_TURN"
    # A stale ply: ABORTED with both plies in the metadata.
    with pytest.raises(RefereeError) as stale:
        client.play(table.game_id, table.tokens[BLACK], "SE@B2:B3,B4", 0)
    assert stale.value.code == grpc.StatusCode.ABORTED
    assert stale.value.reason == "STALE_PLY"
    assert stale.value.error_info.metadata["current_ply"] == "1"
    # Nothing was applied.
    assert client.get_game(table.game_id).ply == 1


def test_an_unknown_game_is_not_found(client):
    with pytest.raises(RefereeError) as missing:
        client.get_game("0" * 32)
    assert missing.value.code == grpc.StatusCode.NOT_FOUND


def test_a_watcher_sees_every_move_then_the_end(client):
    table = client.create_game(variant=punct_pb2.VARIANT_BASIC)
    stream = client.watch(table.game_id)
    first = next(stream)
    assert first.WhichOneof("item") == "snapshot"
    assert first.snapshot.ply == 0
    seen = []

    def follow():
        for item in stream:
            seen.append(item)
            if item.event.WhichOneof("kind") == "game_over":
                return

    watcher = threading.Thread(target=follow)
    watcher.start()
    moves = play_out(client, table, seed=5)
    watcher.join(timeout=30)
    assert not watcher.is_alive()
    events = [i.event for i in seen]
    assert [e.sequence for e in events] == list(range(1, len(moves) + 2))
    assert [notation(e.move_applied.move) for e in events[:-1]] == moves
    assert events[-1].game_over.outcome == client.get_game(table.game_id).outcome
