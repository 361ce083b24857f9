"""Punto through the Python client: a 3-player match played to its end by
seats choosing from ListLegalMoves (each with its own token, in the notation
view), the commitment in every snapshot, the seed and the decks' order only
after the end (and SHA-256 of the seed is the commitment), the rounds as a
watcher sees them, and the finished record replayed through ImportGame."""

import collections
import hashlib
import random
import threading

import grpc
import pytest

from punct_client import (
    NO_SEAT, RefereeError, notation, outcome_detail, punto_pb2, referee_pb2, state_of,
)

SEATS = [1, 2, 3]


def cards(deck) -> list[str]:
    return sorted(c.text for c in deck)


def assert_secret_kept(game, commitment):
    """Before the end: the commitment, no seed, no deck's order."""
    st = state_of(game)
    assert st.commitment == commitment == game.setup.commitment
    assert st.seed == "" and game.setup.seed == ""
    for deck in st.decks:
        assert list(deck.order) == []
        assert len(deck.contents) == deck.size


def watch_to_the_end(client, game_id, items, subscribed):
    for item in client.watch(game_id):
        items.append(item)
        subscribed.set()
        if item.WhichOneof("item") == "event" and item.event.WhichOneof("kind") == "game_over":
            return


def test_a_three_seat_punto_match_is_played_to_its_end(client):
    table = client.create_game(rules=punto_pb2.RuleOptions(players=3), labels={"suite": "python"})
    game = table.game
    assert table.game_name == "punto"
    assert [(s.seat, s.name) for s in table.seats] == [(1, "red"), (2, "orange"), (3, "blue")]
    st = state_of(game)
    assert st.rules.players == 3 and st.rules.rounds_to_win == 2
    assert st.row_length == 4
    assert st.neutral == punto_pb2.COLOUR_GREEN
    # 18 cards of each seat's colour and 6 greens each; seat 1's first card
    # is revealed, off its deck.
    assert [d.size for d in st.decks] == [23, 24, 24]
    assert all(len(d.neutral) == 6 for d in st.decks)
    assert (game.to_move, st.mover, st.round, st.first_seat) == (1, 1, 1, 1)
    commitment = st.commitment
    assert len(commitment) == 64 and int(commitment, 16) >= 0
    assert game.setup.commitment == commitment and not game.setup.supplied

    items, subscribed = [], threading.Event()
    watcher = threading.Thread(target=watch_to_the_end, args=(client, table.game_id, items, subscribed))
    watcher.start()
    assert subscribed.wait(10)

    rng = random.Random(3)
    played = []
    while True:
        game = client.get_game(table.game_id)
        st = state_of(game)
        assert st.commitment == commitment == game.setup.commitment, "the commitment in every snapshot"
        if game.status == referee_pb2.GAME_STATUS_FINISHED:
            break
        assert_secret_kept(game, commitment)
        assert game.ply == st.ply == len(played)
        mover = game.to_move
        assert mover == st.mover in SEATS
        token = table.token(mover)
        # Every seat and spectator sees the same state (docs/rules/punto.md §11).
        if game.ply % 10 == 0:
            for seat in SEATS:
                mine = client.get_game(table.game_id, token=table.token(seat))
                assert mine.viewer == seat
                assert state_of(mine) == st
        legal = client.legal_notations(table.game_id, token=token)
        assert (legal.ply, legal.to_move) == (game.ply, mover)
        assert list(legal.moves) == [] and len(legal.notations) > 0
        # The other seats have no moves now, and cannot play.
        other = SEATS[mover % 3]
        assert list(client.legal_notations(table.game_id, seat=other).notations) == []
        choice = rng.choice(list(legal.notations))
        if game.ply == 0:
            assert list(legal.notations) == ["0,0"], "the first card goes in the middle"
            with pytest.raises(RefereeError) as early:
                client.play(table.game_id, table.token(other), choice, 0, game="punto")
            assert early.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert early.value.reason == "NOT_YOUR_TURN"
        if game.ply == 5:
            record = client.export_game(table.game_id, token=token)
            assert f"commitment: {commitment}" in record
            assert "seed:" not in record
        reply = client.play(table.game_id, token, choice, game.ply, game="punto")
        move = reply.move.punto
        assert (reply.ply, reply.seat) == (game.ply + 1, mover)
        assert move.played and move.seat == mover
        assert move.notation == choice == notation(reply.move)
        assert move.card == st.revealed
        assert move.round == st.round
        if move.HasField("next"):
            assert move.next.seat == reply.to_move
        if move.HasField("round_result"):
            assert move.round_result.round == st.round
            if not reply.HasField("outcome"):
                assert len(move.deal) == 3
                assert move.round_result.next_first == reply.to_move
        else:
            assert list(move.deal) == []
        played.append((move.notation, move.card.text))
        assert len(played) < 2000, "the match did not end"

    # The end: one seat won two rounds; the seed is revealed, and it is the
    # one committed to at the start.
    outcome = game.outcome
    assert outcome.reason == "ROUNDS_WON"
    assert len(outcome.winners) == 1 and not outcome.draw
    winner = outcome.winners[0]
    st = state_of(game)
    wins = collections.Counter(r.winner.seat for r in st.results if r.HasField("winner"))
    assert list(outcome.scores) == [wins[s] for s in SEATS]
    assert wins[winner] == 2 and max(wins[s] for s in SEATS if s != winner) < 2
    detail = outcome_detail(outcome)
    assert detail.reason == punto_pb2.MATCH_END_ROUNDS_WON
    assert detail.winner.seat == winner and detail.winner.name == f"seat {winner}"
    assert list(detail.round_wins) == [wins[s] for s in SEATS]
    assert st.results[-1].next_first == NO_SEAT
    assert (game.to_move, st.mover, st.HasField("revealed")) == (NO_SEAT, NO_SEAT, False)
    assert st.ending == ""
    assert len(st.seed) == 64 and game.setup.seed == st.seed
    assert hashlib.sha256(bytes.fromhex(st.seed)).hexdigest() == commitment
    # Every deck's remaining order is shown now: the same cards as its contents.
    for deck in st.decks:
        assert len(deck.order) == deck.size == len(deck.contents)
        assert cards(deck.order) == cards(deck.contents)
    assert game.ply == len(played)

    # The watcher: the snapshot, every move, a round-over item after each
    # move that ended a round (the same result as the state's), game over.
    watcher.join(timeout=60)
    assert not watcher.is_alive()
    assert items[0].WhichOneof("item") == "snapshot"
    assert state_of(items[0].snapshot).commitment == commitment
    moves = [i.event.move_applied.move.punto for i in items if i.WhichOneof("item") == "event"
             and i.event.WhichOneof("kind") == "move_applied"]
    assert [(m.notation, m.card.text) for m in moves] == played
    rounds = [i.round_over for i in items if i.WhichOneof("item") == "round_over"]
    assert [r.punto.result for r in rounds] == list(st.results)
    assert [r.punto.next_round for r in rounds] == list(range(2, len(rounds) + 1)) + [0]
    assert items[-1].event.game_over.outcome == outcome

    # The finished record carries the seed and replays into the same match.
    record = client.export_game(table.game_id)
    assert f"seed: {st.seed}" in record
    assert f"commitment: {commitment}" in record
    copy = client.import_game(record)
    assert copy.game_name == "punto"
    assert copy.game.outcome == outcome
    assert state_of(copy.game).results == st.results
    assert state_of(copy.game).seed == st.seed
