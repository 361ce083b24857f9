"""A round robin held by the referee between a Python bot (this kit's
:class:`punct_client.bot.Bot`), a Node bot (clients/node/examples/dots_bot.js)
and the built-in greedy bot (``punct-referee entrant``), all over gRPC:
it finishes with the right number of games, standings equal to a recount of
the games' own outcomes, and every game's record replaying to its result.
scripts/test-clients.sh passes PUNCT_SERVER and REFEREE_BIN."""

import logging
import os
import pathlib
import random
import subprocess
import threading
import time

import grpc
import pytest

from punct_client import RefereeClient, RefereeError, dots_pb2, referee_pb2, tournament_pb2, tournament_pb2_grpc
from punct_client.bot import Bot, ChooseOverrun

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


# When things go wrong (docs/CLIENTS.md): one game's failure touches no other
# game, is logged with the game's id and resigns that game at once; a refused
# move reaches on_refused with the server's code and reason first; choose()
# runs under the seat's clock and run() returns when the tournament ends.


def _against_greedy(server, name, games=4, move_ms=60_000):
    """A round robin of ``games`` games between a kit bot and the built-in
    greedy entrant on 6 x 6 Dots; the greedy entrant already running. Returns
    (stub, tournament id, the kit's key, the greedy process)."""
    binary = os.environ.get("REFEREE_BIN")
    if not binary:
        pytest.fail("REFEREE_BIN (the punct-referee binary) is not set")
    stub = tournament_pb2_grpc.TournamentServiceStub(grpc.insecure_channel(server))
    spec = tournament_pb2.TournamentSpec(
        name=name,
        rules=referee_pb2.GameRules(dots=dots_pb2.RuleOptions(width=6, height=6)),
        format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
        games_per_pairing=games,
        time_control=referee_pb2.TimeControl(per_move=referee_pb2.PerMoveClock(move_ms=move_ms)),
    )
    created = stub.CreateTournament(
        tournament_pb2.CreateTournamentRequest(spec=spec, entrants=["kit", "greedy"])
    )
    tid = created.tournament.tournament_id
    keys = {k.name: k.entrant_key for k in created.keys}
    stub.StartTournament(tournament_pb2.StartTournamentRequest(tournament_id=tid))
    greedy = subprocess.Popen(
        [binary, "entrant", "greedy", "--server", server, "--key", keys["greedy"]],
        stdout=subprocess.DEVNULL,
    )
    return stub, tid, keys["kit"], greedy


def _run_bounded(bot, server, key, limit):
    """``bot.run`` in a thread; the end, and fails if it takes past ``limit`` s."""
    ended = {}
    thread = threading.Thread(target=lambda: ended.update(end=bot.run(server, key)), daemon=True)
    thread.start()
    thread.join(timeout=limit)
    assert not thread.is_alive(), f"run() returns within {limit} s"
    return ended["end"]


def _games(stub, tid):
    t = stub.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=tid)).tournament
    assert all(g.status == tournament_pb2.TOURNAMENT_GAME_STATUS_FINISHED for g in t.games)
    return t.games


def _kit_seat(g):
    """The kit's seat in a tournament game (entrant 0 is the kit)."""
    return list(g.entrants).index(0) + 1


class FailsOnce(Bot):
    """Legal moves, but ``choose`` of the first game's first turn raises
    (``mode`` "raise"), overruns the clock ("overrun") or answers a move off
    the field ("illegal")."""

    def __init__(self, mode):
        self.mode = mode
        self.lock = threading.Lock()
        self.failed = None
        self.errors = []
        self.refused = []
        self.finished_games = []
        self.rng = random.Random(3)

    def choose(self, state, legal_moves, clock):
        with self.lock:
            first = self.failed is None
            if first:
                self.failed = state.game_id
        if first and self.mode == "raise":
            raise RuntimeError("a bug in the bot")
        if first and self.mode == "overrun":
            time.sleep(120)
        if first and self.mode == "illegal":
            return "99,99"
        with self.lock:
            return self.rng.choice(legal_moves)

    def on_error(self, game_id, error):
        self.errors.append((game_id, error))

    def on_refused(self, game_id, move, error):
        self.refused.append((game_id, move, error))

    def finished(self, game):
        self.finished_games.append(game.game_id)


def _check_only_the_failed_game_was_resigned(stub, tid, bot):
    games = _games(stub, tid)
    assert len(games) == 4
    assert sorted(bot.finished_games) == sorted(g.game_id for g in games), "finished() for all 4"
    for g in games:
        if g.game_id == bot.failed:
            assert g.reason == "RESIGNATION", g.reason
            assert list(g.points)[_kit_seat(g) - 1] == 0.0, "the kit's seat lost"
        else:
            assert g.reason not in ("RESIGNATION", "TIMEOUT", "FORFEIT"), g.reason


def test_a_choose_that_raises_resigns_that_game_at_once_and_keeps_the_others(caplog):
    server = os.environ["PUNCT_SERVER"]
    # A 60 s move clock: a game lost on time would take past the limit.
    stub, tid, key, greedy = _against_greedy(server, "raises-once")
    try:
        bot = FailsOnce("raise")
        with caplog.at_level(logging.ERROR, logger="punct_client.bot"):
            end = _run_bounded(bot, server, key, 50)
        assert greedy.wait(timeout=60) == 0
    finally:
        if greedy.poll() is None:
            greedy.kill()
            greedy.wait()
    assert end.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert [(g, type(e)) for g, e in bot.errors] == [(bot.failed, RuntimeError)]
    assert any(bot.failed in r.getMessage() and "a bug in the bot" in r.getMessage() for r in caplog.records)
    _check_only_the_failed_game_was_resigned(stub, tid, bot)


def test_a_refused_move_reaches_on_refused_with_the_code_and_reason(caplog):
    server = os.environ["PUNCT_SERVER"]
    stub, tid, key, greedy = _against_greedy(server, "illegal-once")
    try:
        bot = FailsOnce("illegal")
        with caplog.at_level(logging.ERROR, logger="punct_client.bot"):
            end = _run_bounded(bot, server, key, 50)
        assert greedy.wait(timeout=60) == 0
    finally:
        if greedy.poll() is None:
            greedy.kill()
            greedy.wait()
    assert end.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert len(bot.refused) == 1
    game_id, move, error = bot.refused[0]
    assert (game_id, move) == (bot.failed, "99,99")
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION
    assert error.reason == "OFF_FIELD"
    assert bot.errors == [], "a refusal goes to on_refused, not on_error"
    assert any(
        bot.failed in r.getMessage() and "OFF_FIELD" in r.getMessage() for r in caplog.records
    )
    _check_only_the_failed_game_was_resigned(stub, tid, bot)


def test_a_choose_that_overruns_the_clock_resigns_and_run_still_returns():
    server = os.environ["PUNCT_SERVER"]
    # 6 s a move: the bot resigns before its flag falls, and choose() sleeps
    # for 120 s, far past run()'s limit.
    stub, tid, key, greedy = _against_greedy(server, "overruns-once", move_ms=6_000)
    try:
        bot = FailsOnce("overrun")
        # Room for the resignation on a loaded machine.
        bot.clock_margin_ms = 1_500
        end = _run_bounded(bot, server, key, 60)
        assert greedy.wait(timeout=60) == 0
    finally:
        if greedy.poll() is None:
            greedy.kill()
            greedy.wait()
    assert end.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert [(g, type(e)) for g, e in bot.errors] == [(bot.failed, ChooseOverrun)]
    _check_only_the_failed_game_was_resigned(stub, tid, bot)


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(binary, port, data):
    """A referee of its own on ``port`` storing into ``data``; once it serves."""
    for _ in range(50):
        server = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{port}", "--metrics-listen", "127.0.0.1:0",
             "--no-http", "--data-dir", str(data), "--log", "warn"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(50):
            if server.poll() is not None:
                break  # the port is not free yet: start again
            try:
                with RefereeClient(f"127.0.0.1:{port}", timeout=1) as probe:
                    if probe.serving():
                        return server
            except Exception:
                pass
            time.sleep(0.1)
        if server.poll() is None:
            server.kill()
            server.wait()
        time.sleep(0.2)
    pytest.fail("the referee of the restart test did not come up")


class SlowRandom(RandomDots):
    """Random legal moves, a tenth of a second each: the event lasts."""

    def choose(self, state, legal_moves, clock):
        time.sleep(0.1)
        return super().choose(state, legal_moves, clock)


@pytest.mark.parametrize("stop", ["terminate", "kill"])
def test_kit_bots_of_both_kits_reconnect_after_a_server_restart(tmp_path, stop):
    """A Python and a Node kit bot play a round robin on a referee of their
    own; it is stopped mid-event (SIGTERM, or SIGKILL as a crash) and started
    again on the same port and database: both bots reconnect by themselves,
    and the event finishes with every game ended by the game's own rules (no
    time loss, no forfeit)."""
    binary = os.environ.get("REFEREE_BIN")
    if not binary:
        pytest.fail("REFEREE_BIN (the punct-referee binary) is not set")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    referee = _serve(binary, port, tmp_path / "data")
    node = None
    try:
        channel = grpc.insecure_channel(address)
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        created = stub.CreateTournament(
            tournament_pb2.CreateTournamentRequest(
                spec=tournament_pb2.TournamentSpec(
                    name="restart",
                    rules=referee_pb2.GameRules(dots=dots_pb2.RuleOptions(width=8, height=8)),
                    format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
                    games_per_pairing=4,
                    time_control=referee_pb2.TimeControl(
                        per_move=referee_pb2.PerMoveClock(move_ms=60_000)
                    ),
                ),
                entrants=["python", "node"],
            )
        )
        tid = created.tournament.tournament_id
        keys = {k.name: k.entrant_key for k in created.keys}
        stub.StartTournament(tournament_pb2.StartTournamentRequest(tournament_id=tid))
        # An organiser follows the standings across the restart.
        from punct_client.organiser import Organiser

        followed = []
        organiser = Organiser(address, timeout=5)
        follower = threading.Thread(
            target=lambda: followed.extend(organiser.follow(tid, interval=0.2, max_backoff=1.0)),
            daemon=True,
        )
        follower.start()
        node = subprocess.Popen(
            ["node", str(ROOT / "clients/node/examples/dots_bot.js"), f"http://{address}", keys["node"]],
            stdout=subprocess.DEVNULL,
        )
        bot = SlowRandom(11)
        bot.reconnect_max = 1.0
        ended = {}
        thread = threading.Thread(
            target=lambda: ended.update(end=bot.run(address, keys["python"])), daemon=True
        )
        thread.start()
        # Mid-event: a game 6 plies in.
        deadline = time.monotonic() + 60
        with RefereeClient(address, timeout=5) as reader:
            while time.monotonic() < deadline:
                t = stub.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=tid)).tournament
                if any(reader.get_game(g.game_id).ply >= 6 for g in t.games if g.game_id):
                    break
                time.sleep(0.1)
        assert thread.is_alive(), "the event is not over before the restart"
        channel.close()
        getattr(referee, stop)()
        try:
            referee.wait(timeout=20)
        except subprocess.TimeoutExpired:
            referee.kill()
            referee.wait()
        time.sleep(1.0)
        referee = _serve(binary, port, tmp_path / "data")
        thread.join(timeout=180)
        assert not thread.is_alive(), "the Python bot's run() returns after the restart"
        assert node.wait(timeout=60) == 0, "the Node bot's run() resolves after the restart"
        assert ended["end"].status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
        assert bot.games == 4
        channel = grpc.insecure_channel(address)
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        t = stub.GetTournament(tournament_pb2.GetTournamentRequest(tournament_id=tid)).tournament
        assert len(t.games) == 4
        assert all(g.status == tournament_pb2.TOURNAMENT_GAME_STATUS_FINISHED for g in t.games)
        assert all(g.reason not in ("RESIGNATION", "TIMEOUT", "FORFEIT", "ABORTED") for g in t.games), [
            g.reason for g in t.games
        ]
        assert sum(s.points for s in t.standings) == 4.0
        channel.close()
        follower.join(timeout=30)
        assert not follower.is_alive(), "following ends with the tournament, across the restart"
        assert followed[-1].status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
        assert list(followed[-1].standings) == list(t.standings)
        organiser.close()
    finally:
        for process in (node, referee):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()



def test_an_organiser_runs_a_round_robin_of_remote_kit_bots(client, tmp_path):
    """The organiser class end to end: create (keys back), three kit bots
    join with those keys, the organiser follows the standings to the end and
    exports every record, and each record imports again to its result."""
    from punct_client.organiser import Organiser, format_standings

    server = os.environ["PUNCT_SERVER"]
    org = Organiser(server)
    event = org.create(
        "organised",
        rules=referee_pb2.GameRules(dots=dots_pb2.RuleOptions(width=6, height=6)),
        format="round_robin",
        games_per_pairing=1,
        time_control={"per_move": {"move_ms": 60_000}},
        entrants=["ann", "bob", "cyd"],
    )
    assert sorted(event.keys) == ["ann", "bob", "cyd"]
    assert all(k and k not in str(event.tournament) for k in event.keys.values())
    assert event.tournament.status == tournament_pb2.TOURNAMENT_STATUS_REGISTERING
    started = org.start(event.tournament_id)
    assert started.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING
    with pytest.raises(RefereeError) as refused:
        org.start(event.tournament_id)
    assert refused.value.reason == "ALREADY_STARTED"

    bots = {name: RandomDots(seed) for seed, name in enumerate(event.keys)}
    threads = [
        threading.Thread(target=bots[name].run, args=(server, key), daemon=True)
        for name, key in event.keys.items()
    ]
    for thread in threads:
        thread.start()
    seen = list(org.follow(event.tournament_id, interval=0.2))
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    final = seen[-1]
    assert final.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert all(t.status != tournament_pb2.TOURNAMENT_STATUS_FINISHED for t in seen[:-1])
    assert len(seen) >= 2, "the standings were followed while games were played"
    assert len(final.games) == 3 and sum(s.points for s in final.standings) == 3.0
    assert all(b.games == 2 for b in bots.values())
    table = format_standings(final)
    assert "finished, 3/3 games" in table and all(name in table for name in event.keys)

    exported = org.export(event.tournament_id, tmp_path / "records")
    assert [g.number for g in exported] == [g.number for g in final.games]
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == sorted(
        f"{g.number:03d}-{g.game_id}.txt" for g in exported
    )
    for g, played in zip(exported, final.games):
        assert g.game_id == played.game_id and len(g.entrants) == 2
        replayed = client.import_game(g.record).game
        assert list(replayed.outcome.winners) == list(client.get_game(g.game_id).outcome.winners)
        assert replayed.outcome.reason == played.reason
    org.close()


def test_an_organiser_adds_entrants_and_cancels(tmp_path):
    from punct_client.organiser import Organiser

    with Organiser(os.environ["PUNCT_SERVER"]) as org:
        event = org.create(
            "open",
            rules="punto",
            time_control={"fischer": {"initial_ms": 60_000, "increment_ms": 1_000}},
            open_registration=True,
        )
        assert event.keys == {}
        keys = [org.add_entrant(event.tournament_id, name) for name in ("ann", "bob")]
        assert len(set(keys)) == 2 and all(keys)
        with pytest.raises(RefereeError) as refused:
            org.add_entrant(event.tournament_id, "ann")
        assert refused.value.reason == "DUPLICATE_ENTRANT"
        assert [e.name for e in org.get(event.tournament_id).entrants] == ["ann", "bob"]
        assert event.tournament_id in [t.tournament_id for t in org.list()]
        org.start(event.tournament_id)
        cancelled = org.cancel(event.tournament_id)
        assert cancelled.status == tournament_pb2.TOURNAMENT_STATUS_CANCELLED
        followed = list(org.follow(event.tournament_id, interval=0.1))
        assert [t.status for t in followed] == [tournament_pb2.TOURNAMENT_STATUS_CANCELLED]
        with pytest.raises(ValueError):
            org.create("bad", format="knockout", time_control={"per_move": {"move_ms": 1}})
        with pytest.raises(RefereeError) as unknown:
            org.get("0" * 32)
        assert unknown.value.code == grpc.StatusCode.NOT_FOUND
