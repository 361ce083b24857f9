"""The referee through the Python client: whole games between two bots that
choose from ListLegalMoves, refused moves with decoded details, a watched
game, health and records; the numbered seats with their names, per-seat
presence, a resignation's winners and an agreed draw."""

import random
import threading
import time

import grpc
import pytest

from punct_client import (
    NO_SEAT, RefereeError, notation, punct_pb2, referee_pb2, seat_name, seat_number,
)


def play_out(client, table, seed, max_plies=400):
    """Plays random legal moves for both seats until the game ends; returns
    the moves played."""
    rng = random.Random(seed)
    played = []
    for _ in range(max_plies):
        legal = client.legal_moves(table.game_id)
        if legal.to_move == NO_SEAT:
            return played
        choice = notation(rng.choice(legal.moves))
        reply = client.play(table.game_id, table.token(legal.to_move), choice, legal.ply)
        assert reply.ply == legal.ply + 1
        assert reply.seat == legal.to_move
        played.append(notation(reply.move))
    raise AssertionError("the game did not end")


def test_two_seats_play_a_whole_game_over_their_play_streams(client):
    table = client.create_game()
    rng = random.Random(40)
    streams = [client.play_stream(table.game_id, table.token(seat)) for seat in (1, 2)]
    readers = [iter(s) for s in streams]

    def next_item(seat):
        for item in readers[seat - 1]:
            if item.WhichOneof("item") != "presence":
                return item
        raise AssertionError("the stream ended before the game")

    try:
        for seat in (1, 2):
            assert next_item(seat).WhichOneof("item") == "snapshot"
        # A refusal is a message with SubmitMove's status; the stream goes on.
        streams[1].send("SE@E5:F5,G5", 0, request_id="early")
        refused = next_item(2)
        assert refused.WhichOneof("item") == "refused"
        assert refused.refused.request_id == "early"
        error = RefereeError.from_status(refused.refused.status)
        assert error.code == grpc.StatusCode.FAILED_PRECONDITION
        assert error.reason == "NOT_YOUR_TURN"
        ply, to_move = 0, 1
        while to_move != NO_SEAT:
            legal = client.legal_moves(table.game_id)
            choice = notation(rng.choice(legal.moves))
            streams[to_move - 1].send(choice, ply, request_id=f"m{ply}")
            # Both seats see the move's event; the mover then its answer.
            for seat in (1, 2):
                event = next_item(seat)
                assert event.WhichOneof("item") == "event"
                assert event.event.sequence == ply + 1
            answer = next_item(to_move)
            assert answer.WhichOneof("item") == "accepted"
            assert answer.accepted.request_id == f"m{ply}"
            assert answer.accepted.result.ply == ply + 1
            ply, to_move = ply + 1, answer.accepted.result.to_move
        for seat in (1, 2):
            assert next_item(seat).event.WhichOneof("kind") == "game_over"
            assert next(readers[seat - 1], None) is None, "the stream ends with the game"
    finally:
        for s in streams:
            s.close()
    assert client.get_game(table.game_id).ply == ply


def test_health_reports_the_referee_serving(client):
    assert client.serving()
    assert client.serving("")


def test_two_bots_play_complete_games(client):
    for seed in (1, 2):
        table = client.create_game(
            variant=punct_pb2.VARIANT_BASIC, labels={"suite": "python"}
        )
        assert [(s.seat, s.name) for s in table.seats] == [(1, "white"), (2, "black")]
        moves = play_out(client, table, seed)
        game = client.get_game(table.game_id)
        assert game.status == referee_pb2.GAME_STATUS_FINISHED
        assert game.ply == len(moves)
        assert game.outcome.reason in {
            "CONNECTION", "LAST_PIECE", "NO_LEGAL_MOVE", "REPETITION", "MOVE_LIMIT",
        }
        assert game.labels["suite"] == "python"
        # The compact view: the same play, without what never changes or
        # is derived (the stacks follow from the pieces).
        compact = client.get_game(table.game_id, view=referee_pb2.SNAPSHOT_VIEW_COMPACT)
        assert (compact.ply, compact.status, compact.outcome) == (
            game.ply, game.status, game.outcome,
        )
        assert not compact.HasField("rules") and not compact.labels
        assert not compact.state.punct.board.spaces and not compact.state.punct.picture
        assert game.state.punct.board.spaces and game.state.punct.picture
        assert compact.state.punct.board.pieces == game.state.punct.board.pieces
        # The record replays into an identical game.
        record = client.export_game(table.game_id)
        assert record.splitlines()[-len(moves):] == moves
        copy = client.import_game(record).game
        assert copy.ply == game.ply
        assert copy.outcome == game.outcome
        assert copy.state == game.state


def test_a_refused_move_carries_its_rule_in_the_details(client):
    table = client.create_game()
    client.play(table.game_id, table.token("white"), "SE@E5:F5,G5", 0)
    # Black on White's dots: the rule broken comes back as ErrorInfo.
    with pytest.raises(RefereeError) as refused:
        client.play(table.game_id, table.token("black"), "SE@E5:F5,G5", 1)
    err = refused.value
    assert err.code == grpc.StatusCode.FAILED_PRECONDITION
    assert err.error_info is not None
    assert err.error_info.domain == "referee.v1"
    assert err.reason and err.reason.isupper()
    # Garbled notation: INVALID_ARGUMENT with a BadRequest field violation.
    with pytest.raises(RefereeError) as garbled:
        client.play(table.game_id, table.token("black"), "not a move", 1)
    assert garbled.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert garbled.value.bad_request is not None
    assert garbled.value.bad_request.field_violations
    # White out of turn.
    with pytest.raises(RefereeError) as early:
        client.play(table.game_id, table.token("white"), "SE@B2:B3,B4", 1)
    assert early.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert early.value.reason == "NOT_YOUR_TURN"
    # A stale ply: ABORTED with both plies in the metadata.
    with pytest.raises(RefereeError) as stale:
        client.play(table.game_id, table.token("black"), "SE@B2:B3,B4", 0)
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


def _presence(game):
    return [(p.seat, p.connected) for p in game.presence.seats]


def test_seats_are_numbered_and_named_and_a_resignation_has_winners(client):
    table = client.create_game()
    game = table.game
    # The game names its seats; the tokens come in seat order with the same names.
    assert [(s.number, s.name) for s in game.seats] == [(1, "white"), (2, "black")]
    assert [(s.seat, s.name) for s in table.seats] == [(1, "white"), (2, "black")]
    assert table.tokens == [table.token(1), table.token(2)]
    assert table.token(seat_number(game, "black")) == table.token("black")
    assert game.to_move == 1 and seat_name(game, game.to_move) == "white"
    assert seat_name(game, NO_SEAT) == ""
    # No clock: no per-seat times, no running clock.
    assert list(game.clock.remaining_ms) == [] and game.clock.running == NO_SEAT
    # A spectator's view without a token; a seat's view with its token.
    assert client.get_game(table.game_id).viewer == NO_SEAT
    assert client.get_game(table.game_id, token=table.token("black")).viewer == 2
    # Presence: one entry per seat, in seat order, nobody watching yet.
    assert _presence(client.get_game(table.game_id)) == [(1, False), (2, False)]

    # White watches with its token and counts as present; black does not.
    stream = client.watch(table.game_id, token=table.token("white"))
    assert next(stream).WhichOneof("item") == "snapshot"
    deadline = time.monotonic() + 5
    while _presence(client.get_game(table.game_id)) != [(1, True), (2, False)]:
        assert time.monotonic() < deadline, _presence(client.get_game(table.game_id))
        time.sleep(0.05)
    away = client.get_game(table.game_id).presence.seats
    assert away[0].away_ms == 0

    # Only the seat to move has legal moves.
    assert client.legal_moves(table.game_id, seat=1).moves
    assert not client.legal_moves(table.game_id, seat=2).moves

    reply = client.play(table.game_id, table.token("white"), "SE@E5:F5,G5", 0)
    assert (reply.seat, reply.to_move) == (1, 2)
    # Black resigns: white, the other seat, is the only winner.
    over = client.resign(table.game_id, table.token("black"))
    assert over.status == referee_pb2.GAME_STATUS_FINISHED
    assert over.outcome.reason == "RESIGNATION"
    assert list(over.outcome.winners) == [1] and not over.outcome.draw
    assert [seat_name(over, w) for w in over.outcome.winners] == ["white"]
    assert over.to_move == NO_SEAT
    # The watcher saw the move, then the same ending.
    rest = [item.event for item in stream if item.WhichOneof("item") == "event"]
    assert rest[0].move_applied.seat == 1 and rest[0].move_applied.to_move == 2
    assert list(rest[-1].game_over.outcome.winners) == [1]
    assert rest[-1].game_over.outcome == client.get_game(table.game_id).outcome


def test_a_draw_is_agreed_by_every_seat(client):
    table = client.create_game()
    client.play(table.game_id, table.token("white"), "SE@E5:F5,G5", 0)
    offered = client.offer_draw(table.game_id, table.token("black"))
    assert not offered.agreed
    assert list(offered.game.draw_offers) == [2]
    assert list(client.get_game(table.game_id).draw_offers) == [2]
    accepted = client.accept_draw(table.game_id, table.token("white"))
    assert accepted.agreed
    outcome = accepted.game.outcome
    assert outcome.draw and list(outcome.winners) == []
    assert outcome.reason == "DRAW_AGREEMENT"
    assert list(accepted.game.draw_offers) == []


def test_every_address_form_of_the_cli_names_the_referee(client):
    import os

    from punct_client import RefereeClient, parse_target

    assert parse_target("127.0.0.1:50051") == ("127.0.0.1:50051", False)
    assert parse_target("[::1]:50051") == ("[::1]:50051", False)
    assert parse_target("http://referee.example:50051") == ("referee.example:50051", False)
    assert parse_target("HTTPS://referee.example:443/") == ("referee.example:443", True)
    for bad in ("", "http://", "ftp://referee.example:21"):
        with pytest.raises(ValueError):
            parse_target(bad)
    with RefereeClient(f"http://{os.environ['PUNCT_SERVER']}") as by_url:
        assert by_url.serving()


def test_a_spectator_delay_set_at_creation_is_shown_and_keeps_spectators_behind(client):
    table = client.create_game(spectator_delay={"plies": 2})
    assert table.game.spectator_delay.plies == 2
    assert table.game.labels["spectator-delay"] == "2 plies"
    for ply, move in enumerate(["SE@E1:E2,E3", "SE@M5:M6,M7", "SE@E4:E5,E6"]):
        client.play(table.game_id, table.token(ply % 2 + 1), move, ply)
    # A spectator sees the game two plies behind; a seat sees it live.
    assert client.get_game(table.game_id).ply == 1
    assert client.get_game(table.game_id, table.token(1)).ply == 3
