"""Dots (Kropki) through the Python client: docs/rules/dots.md §11.A's capture on a
5 x 5 field checked against the state's dots and scores, Blue's `ground`
ending it, a seeded random game played from ListLegalMoves to a full field
with every move's effect checked against the states before and after it, and
the records replayed through ImportGame."""

import random

import grpc
import pytest

from punct_client import (
    NO_SEAT, RefereeError, dots_pb2, notation, outcome_detail, referee_pb2, state_of,
)

RED, BLUE = 1, 2

#: docs/rules/dots.md §11.A on 5 x 5: Red's seventh move (3,4) captures Blue's 3,3.
EXAMPLE_A = ["3,2", "3,3", "2,3", "1,1", "4,3", "1,2", "3,4"]


def point(p) -> str:
    return f"{p.x},{p.y}"


def captured(state, owner) -> set[str]:
    """The points of `owner`'s dots the other player holds."""
    return {point(d.point) for d in state.dots if d.owner == owner and d.captured}


def check_effect(mover, effect, before, after):
    """A move's effect is exactly the difference of the captured dots before
    and after it, and the scores are the captured dots counted from the
    state (Red scores Blue's captured dots)."""
    enemy = dots_pb2.COLOUR_BLUE if mover == dots_pb2.COLOUR_RED else dots_pb2.COLOUR_RED
    assert {point(p) for p in effect.captured} == captured(after, enemy) - captured(before, enemy)
    assert {point(p) for p in effect.lost} == captured(after, mover) - captured(before, mover)
    assert {point(p) for p in effect.freed} == captured(before, mover) - captured(after, mover)
    assert {point(p) for p in effect.regained} == captured(before, enemy) - captured(after, enemy)
    counted = [len(captured(after, dots_pb2.COLOUR_BLUE)), len(captured(after, dots_pb2.COLOUR_RED))]
    assert list(after.scores) == counted
    assert list(effect.scores) == counted


def colour_of(seat: int) -> int:
    return dots_pb2.COLOUR_RED if seat == RED else dots_pb2.COLOUR_BLUE


def play_checked(client, table, move, ply):
    """Plays `move` (notation or a dots_pb2.Move) for the seat to move at
    `ply`, checks its effect against the states; returns the reply."""
    before = client.get_game(table.game_id)
    assert before.ply == ply
    mover = before.to_move
    reply = client.play(table.game_id, table.token(mover), move, ply, game="dots")
    assert (reply.ply, reply.seat) == (ply + 1, mover)
    after = client.get_game(table.game_id)
    played = reply.move.dots
    assert played.colour == colour_of(mover)
    check_effect(colour_of(mover), played.effect, state_of(before), state_of(after))
    assert after.last_move.dots == played
    return reply


def check_record_replays(client, table):
    game = client.get_game(table.game_id)
    record = client.export_game(table.game_id)
    assert "game: dots" in record
    copy = client.import_game(record)
    assert copy.game_name == "dots"
    assert copy.game.ply == game.ply
    assert copy.game.outcome == game.outcome
    assert copy.game.state == game.state


def test_a_capture_then_ground_ends_a_dots_game(client):
    table = client.create_game(
        rules=dots_pb2.RuleOptions(width=5, height=5, start=dots_pb2.START_EMPTY),
        labels={"suite": "python"},
    )
    assert table.game_name == "dots"
    assert [(s.seat, s.name) for s in table.seats] == [(RED, "red"), (BLUE, "blue")]
    start = state_of(table.game)
    assert (start.rules.width, start.rules.height, start.rules.start, start.rules.max_moves) == (
        5, 5, dots_pb2.START_EMPTY, 0,
    )
    assert start.position == ".....\n" * 5
    assert list(start.dots) == [] and list(start.scores) == [0, 0]
    assert start.to_move == dots_pb2.COLOUR_RED

    # The notation view lists every free point and `ground`, sorted as text.
    legal = client.legal_notations(table.game_id, token=table.token("red"))
    assert (legal.ply, legal.to_move) == (0, RED)
    assert list(legal.moves) == []
    expected = sorted(f"{x},{y}" for x in range(1, 6) for y in range(1, 6)) + ["ground"]
    assert list(legal.notations) == expected
    assert list(client.legal_notations(table.game_id, seat=BLUE).notations) == []

    for ply, move in enumerate(EXAMPLE_A):
        reply = play_checked(client, table, move, ply)
        assert reply.to_move == (BLUE if ply % 2 == 0 else RED)
    # §11.A: Red's seventh move walls in Blue's 3,3 with 3,2 2,3 4,3 3,4.
    effect = reply.move.dots.effect
    assert [point(p) for p in effect.captured] == ["3,3"]
    assert effect.regions == 1
    assert len(effect.enclosures) == 1
    enclosure = effect.enclosures[0]
    assert enclosure.owner == dots_pb2.COLOUR_RED
    assert enclosure.kind == dots_pb2.ENCLOSURE_KIND_CAPTURE
    assert {point(p) for p in enclosure.chain} == {"3,2", "2,3", "4,3", "3,4"}
    state = state_of(client.get_game(table.game_id))
    assert list(state.scores) == [1, 0]
    assert state.position == "B....\nB.R..\n.RbR.\n..R..\n.....\n"
    assert captured(state, dots_pb2.COLOUR_BLUE) == {"3,3"}
    assert len(state.enclosures) == 1
    # The captured dot's point is not playable again, nor is an occupied one.
    with pytest.raises(RefereeError) as occupied:
        client.play(table.game_id, table.token("blue"), "3,3", 7, game="dots")
    assert occupied.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert occupied.value.reason == "OCCUPIED"
    with pytest.raises(RefereeError) as off:
        client.play(table.game_id, table.token("blue"), "6,1", 7, game="dots")
    assert off.value.reason == "OFF_FIELD"
    with pytest.raises(RefereeError) as garbled:
        client.play(table.game_id, table.token("blue"), "pass", 7, game="dots")
    assert garbled.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in garbled.value.bad_request.field_violations] == ["move.dots.notation"]
    assert "3,3" not in client.legal_notations(table.game_id).notations

    # Blue grounds (the structured stop move): its dots 1,1 and 1,2 touch the
    # edge, so nothing changes hands and Red wins 1-0.
    reply = play_checked(client, table, dots_pb2.Move(ground=dots_pb2.Ground()), 7)
    played = reply.move.dots
    assert (played.notation, played.kind, played.colour) == (
        "ground", dots_pb2.MOVE_KIND_GROUND, dots_pb2.COLOUR_BLUE,
    )
    assert list(played.effect.lost) == [] and list(played.effect.captured) == []
    assert reply.status == referee_pb2.GAME_STATUS_FINISHED
    assert reply.to_move == NO_SEAT
    outcome = reply.outcome
    assert (outcome.reason, list(outcome.winners), list(outcome.scores), outcome.draw) == (
        "GROUND", [RED], [1, 0], False,
    )
    detail = outcome_detail(outcome)
    assert (detail.end, detail.result, list(detail.scores)) == ("ground", "1-0", [1, 0])
    game = client.get_game(table.game_id)
    assert game.status == referee_pb2.GAME_STATUS_FINISHED and game.outcome == outcome
    assert state_of(game).to_move == dots_pb2.COLOUR_UNSPECIFIED
    assert list(client.legal_notations(table.game_id).notations) == []
    with pytest.raises(RefereeError) as over:
        client.play(table.game_id, table.token("red"), "5,5", 8, game="dots")
    assert over.value.reason == "GAME_OVER"
    check_record_replays(client, table)


def test_a_random_dots_game_is_played_to_a_full_field(client):
    table = client.create_game(
        rules=dots_pb2.RuleOptions(width=6, height=6, start=dots_pb2.START_CROSS)
    )
    start = state_of(table.game)
    # The cross of docs/rules/dots.md §4.2 in the middle of 6 x 6.
    assert start.position == "......\n......\n..RB..\n..BR..\n......\n......\n"
    rng = random.Random(13)
    moves = []
    while True:
        legal = client.legal_notations(table.game_id, token=table.token(client.get_game(table.game_id).to_move))
        assert legal.notations[-1] == "ground", "ground sorts last"
        places = list(legal.notations[:-1])
        reply = play_checked(client, table, rng.choice(places), legal.ply)
        moves.append(notation(reply.move))
        if reply.HasField("outcome"):
            break
        assert len(moves) < 32
    # 36 cells less the 4 start dots: every move placed a dot or was held.
    game = client.get_game(table.game_id)
    state = state_of(game)
    assert "." not in state.position
    assert game.ply == len(moves) <= 32
    outcome = game.outcome
    assert outcome.reason == "FULL"
    assert list(outcome.scores) == list(state.scores)
    red, blue = state.scores
    assert list(outcome.winners) == ([RED] if red > blue else [BLUE] if blue > red else [])
    assert outcome.draw == (red == blue)
    detail = outcome_detail(outcome)
    assert detail.end == "full"
    assert detail.result == ("1-0" if red > blue else "0-1" if blue > red else "1/2-1/2")
    record = client.export_game(table.game_id)
    assert record.splitlines()[-len(moves):] == moves
    check_record_replays(client, table)
