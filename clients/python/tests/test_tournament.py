"""A round robin held by the referee between a Python bot (this kit's
:class:`punct_client.bot.Bot`), a Node bot (clients/node/examples/dots_bot.js)
and the built-in greedy bot (``punct-referee entrant``), all over gRPC:
it finishes with the right number of games, standings equal to a recount of
the games' own outcomes, and every game's record replaying to its result.
scripts/test-clients.sh passes PUNCT_SERVER and REFEREE_BIN."""

import os
import pathlib
import random
import subprocess
import threading

import grpc
import pytest

from punct_client import dots_pb2, referee_pb2, tournament_pb2, tournament_pb2_grpc
from punct_client.bot import Bot

ROOT = pathlib.Path(__file__).resolve().parents[3]


class RandomDots(Bot):
    """Random legal moves, seeded."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.games = 0

    def choose(self, state, legal_moves, clock):
        assert state.viewer in (1, 2), "the seat's own view"
        assert clock is not None and clock > 0
        return self.rng.choice(legal_moves)

    def finished(self, game):
        self.games += 1


def test_a_python_a_node_and_the_greedy_bot_play_a_round_robin(client):
    server = os.environ["PUNCT_SERVER"]
    binary = os.environ.get("REFEREE_BIN")
    if not binary:
        pytest.fail("REFEREE_BIN (the punct-referee binary) is not set")
    stub = tournament_pb2_grpc.TournamentServiceStub(grpc.insecure_channel(server))
    spec = tournament_pb2.TournamentSpec(
        name="polyglot",
        rules=referee_pb2.GameRules(dots=dots_pb2.RuleOptions(width=8, height=8)),
        format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        games_per_pairing=2,
        time_control=referee_pb2.TimeControl(per_move=referee_pb2.PerMoveClock(move_ms=10_000)),
    )
    created = stub.CreateTournament(
        tournament_pb2.CreateTournamentRequest(spec=spec, entrants=["python", "node", "greedy"])
    )
    tid = created.tournament.tournament_id
    keys = {k.name: k.entrant_key for k in created.keys}
    stub.StartTournament(tournament_pb2.StartTournamentRequest(tournament_id=tid))

    node = subprocess.Popen(
        ["node", str(ROOT / "clients/node/examples/dots_bot.js"), server, keys["node"]],
        stdout=subprocess.PIPE,
        text=True,
    )
    greedy = subprocess.Popen(
        [binary, "entrant", "greedy", "--server", server, "--key", keys["greedy"]],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        bot = RandomDots(7)
        ended = {}
        thread = threading.Thread(
            target=lambda: ended.update(end=bot.run(server, keys["python"])), daemon=True
        )
        thread.start()
        thread.join(timeout=240)
        assert not thread.is_alive(), "the tournament finishes"
        assert node.wait(timeout=60) == 0
        assert greedy.wait(timeout=60) == 0
    finally:
        for process in (node, greedy):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert ended["end"].status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert bot.games == 4, "the Python bot played its 4 games"

    t = stub.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=tid)).tournament
    assert len(t.games) == 6
    assert all(g.status == tournament_pb2.TOURNAMENT_GAME_STATUS_FINISHED for g in t.games)
    recount = {i: 0.0 for i in range(3)}
    for g in t.games:
        game = client.get_game(g.game_id)
        winners = list(game.outcome.winners)
        for seat, entrant in enumerate(g.entrants, start=1):
            recount[entrant] += (
                0.5 if not winners else (1.0 / len(winners) if seat in winners else 0.0)
            )
        replayed = client.import_game(client.export_game(g.game_id)).game
        assert list(replayed.outcome.winners) == winners
        assert replayed.outcome.reason == game.outcome.reason == g.reason
    for s in t.standings:
        assert s.points == recount[s.entrant], s.name
        assert s.games == 4
    assert sum(s.points for s in t.standings) == 6.0


def _example_bot(game):
    """The Python example bot of ``game`` (clients/python/examples)."""
    import importlib.util

    path = ROOT / "clients/python/examples" / f"{game}_bot.py"
    spec = importlib.util.spec_from_file_location(f"{game}_bot", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    classes = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Bot) and v is not Bot]
    return classes[0]()


RULES = {
    "punct": referee_pb2.GameRules(punct=__import__("punct_client").punct_pb2.RuleOptions(max_plies=80)),
    "dots": referee_pb2.GameRules(dots=dots_pb2.RuleOptions(width=8, height=8)),
    "punto": referee_pb2.GameRules(punto=__import__("punct_client").punto_pb2.RuleOptions(players=2)),
}


@pytest.mark.parametrize("game", ["punct", "dots", "punto"])
def test_the_example_bots_of_every_game_play_a_match(client, game):
    server = os.environ["PUNCT_SERVER"]
    stub = tournament_pb2_grpc.TournamentServiceStub(grpc.insecure_channel(server))
    spec = tournament_pb2.TournamentSpec(
        name=f"examples-{game}",
        rules=RULES[game],
        format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        games_per_pairing=2,
        # Generous: a loaded two-core machine must not make a bot lose on time.
        time_control=referee_pb2.TimeControl(per_move=referee_pb2.PerMoveClock(move_ms=60_000)),
    )
    created = stub.CreateTournament(
        tournament_pb2.CreateTournamentRequest(spec=spec, entrants=["python", "node"])
    )
    keys = {k.name: k.entrant_key for k in created.keys}
    stub.StartTournament(tournament_pb2.StartTournamentRequest(tournament_id=created.tournament.tournament_id))
    node = subprocess.Popen(
        ["node", str(ROOT / f"clients/node/examples/{game}_bot.js"), server, keys["node"]],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        end = _example_bot(game).run(server, keys["python"])
        assert node.wait(timeout=60) == 0
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
    assert end.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert sum(s.games for s in end.standings) == 4
    assert sum(s.points for s in end.standings) == 2.0
    t = stub.GetTournament(
        tournament_pb2.GetTournamentRequest(tournament_id=created.tournament.tournament_id)
    ).tournament
    # Nobody forfeited: every game ended by the game's own rules.
    assert all(g.reason not in ("RESIGNATION", "TIMEOUT", "FORFEIT") for g in t.games), [
        g.reason for g in t.games
    ]
