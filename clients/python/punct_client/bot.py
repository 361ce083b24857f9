"""The bot kit: a :class:`Bot` joins a tournament held by the referee
(docs/TOURNAMENTS.md) with its entrant key and plays every game it is sent.

Subclass it and write :meth:`Bot.choose`; :meth:`Bot.run` does the rest:
the ``ConnectEntrant`` stream of ``referee.v1.TournamentService`` (the games
to play, then the end), and for each game, in a thread of its own, a
``Play`` stream with the seat's token from ply 0 (the game's events one way,
the bot's moves and their answers the other; a game resumed after a
reconnection is followed from its first move), with ``ListLegalMoves`` and
``GetGame`` (the seat's own view) on each turn. With
``transport = "unary"`` it plays by ``WatchGame`` and ``SubmitMove``
instead, the same game in the same way.

    from punct_client.bot import Bot

    class First(Bot):
        def choose(self, state, legal_moves, clock):
            return legal_moves[0]

    First().run("127.0.0.1:50051", "0123456789abcdef0123456789abcdef")

What happens when something goes wrong (docs/CLIENTS.md, "When things go
wrong"): a failure in one game (``choose`` raising or overrunning the
seat's clock, a call refused) is logged with the game's id on the
``punct_client.bot`` logger and ends that game by :attr:`Bot.on_failure`
(resign at once by default); nothing else is touched. A refused move goes
to :meth:`Bot.on_refused` first. A lost connection (``UNAVAILABLE``, a
stream cut) is retried with backoff and jitter until the tournament ends.
"""

from __future__ import annotations

import logging
import random
import threading
import time

import grpc

from . import (
    RefereeClient,
    RefereeError,
    game_name,
    referee_pb2,
    tournament_pb2,
    tournament_pb2_grpc,
)

__all__ = ["Bot", "ChooseOverrun"]

log = logging.getLogger("punct_client.bot")

#: The policies of :attr:`Bot.on_failure`.
RESIGN = "resign"
LEAVE = "leave"


class ChooseOverrun(Exception):
    """``choose`` did not answer within the seat's clock."""


class _Disconnected(Exception):
    """The connection to the referee broke: follow the game again."""


def _retryable(error: RefereeError) -> bool:
    """A lost connection or a call left unanswered, not a refusal: worth
    following the game again (a move whose answer was lost shows in it)."""
    return error.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _time_left(clock, seat: int) -> int | None:
    """The seat's milliseconds left on ``clock`` (a ``ClockState``; the
    first-move deadline when that is shorter), or None without a clock."""
    if clock is None or len(clock.remaining_ms) < seat:
        return None
    left = clock.remaining_ms[seat - 1]
    if clock.HasField("first_move_remaining_ms"):
        left = min(left, clock.first_move_remaining_ms)
    return left


class Bot:
    """A tournament entrant. Override :meth:`choose`; call :meth:`run`."""

    #: What a failed game does (``choose`` raised or overran the clock, a
    #: move or call was refused): "resign" resigns it at once, so no
    #: opponent waits out a clock; "leave" stops playing it (its clock runs
    #: out).
    on_failure: str = RESIGN
    #: Milliseconds of the seat's clock kept back for the calls around
    #: ``choose``: ``choose`` is given the clock left minus this.
    clock_margin_ms: int = 250
    #: Seconds :meth:`run` still gives games to see their own end once the
    #: tournament is over (a ``choose`` still thinking is not waited for).
    finish_grace: float = 5.0
    #: Reconnection backoff: the first delay and the cap, in seconds (each
    #: delay is drawn at random up to twice the previous, within the cap).
    reconnect_initial: float = 0.2
    reconnect_max: float = 5.0
    #: How moves go: "play", one ``Play`` stream per game (the game and the
    #: answers on it); "unary", ``WatchGame`` for the game and one
    #: ``SubmitMove`` call per move.
    transport: str = "play"

    def choose(self, state: referee_pb2.Game, legal_moves: list[str], clock: int | None) -> str:
        """The move to play, as one of ``legal_moves`` (canonical notations,
        sorted). ``state`` is the game as this bot's seat sees it
        (``state.viewer`` is its seat; :func:`punct_client.state_of` gives
        the game's own state); ``clock`` the milliseconds left on its clock,
        or None without one. Return ``None`` to resign. It runs under the
        clock: past ``clock - clock_margin_ms`` the game fails
        (:attr:`on_failure`)."""
        raise NotImplementedError

    def finished(self, game: referee_pb2.Game) -> None:
        """Called once a game of this bot is over (override to learn): every
        game but one left by the policy "leave"."""

    def on_refused(self, game_id: str, move: str, error: RefereeError) -> None:
        """Called when the referee refuses ``move`` in game ``game_id``:
        ``error.code``, ``error.reason`` (the rule broken) and
        ``error.message`` say why. The game then fails (:attr:`on_failure`)."""

    def on_error(self, game_id: str, error: Exception) -> None:
        """Called when game ``game_id`` fails for another reason: ``choose``
        raised (``error`` is its exception) or overran the clock
        (:class:`ChooseOverrun`), or a call was refused (a
        :class:`RefereeError`). The game then fails (:attr:`on_failure`)."""

    def run(
        self,
        server: str,
        entrant_key: str,
        *,
        root_certificates: bytes | None = None,
        certificate_chain: bytes | None = None,
        private_key: bytes | None = None,
        server_name: str | None = None,
        tls: bool | None = None,
    ) -> tournament_pb2.TournamentEnded:
        """Plays as the entrant of ``entrant_key`` on the referee at
        ``server`` until the tournament ends; returns the end (status and
        final standings). ``server`` is ``host:port``, ``[::1]:port``,
        ``http://host:port`` or ``https://host:port`` (TLS). TLS as in
        :class:`punct_client.RefereeClient`: ``root_certificates`` (PEM
        bytes of the CA; the system's roots without it), ``certificate_chain``
        and ``private_key`` for mutual TLS, ``server_name`` when the
        certificate names another host, ``tls=True`` for TLS on a
        ``host:port``."""
        if self.on_failure not in (RESIGN, LEAVE):
            raise ValueError(f"on_failure {self.on_failure!r}: 'resign' or 'leave'")
        if self.transport not in ("play", "unary"):
            raise ValueError(f"transport {self.transport!r}: 'play' or 'unary'")
        client = RefereeClient(
            server,
            timeout=30.0,
            root_certificates=root_certificates,
            certificate_chain=certificate_chain,
            private_key=private_key,
            server_name=server_name,
            tls=tls,
        )
        stub = tournament_pb2_grpc.TournamentServiceStub(client.channel)
        over = threading.Event()
        threads: dict[str, threading.Thread] = {}
        request = tournament_pb2.ConnectEntrantRequest(entrant_key=entrant_key)
        delay = None
        connected = False
        try:
            while True:
                try:
                    for message in stub.ConnectEntrant(request):
                        connected, delay = True, None
                        kind = message.WhichOneof("event")
                        if kind == "game" and message.game.game_id not in threads:
                            thread = threading.Thread(
                                target=self._game,
                                args=(client, message.game, over),
                                name=f"game-{message.game.game_id}",
                                daemon=True,
                            )
                            threads[message.game.game_id] = thread
                            thread.start()
                        elif kind == "ended":
                            over.set()
                            deadline = time.monotonic() + self.finish_grace
                            for thread in threads.values():
                                thread.join(max(0.0, deadline - time.monotonic()))
                            return message.ended
                    cause = "the tournament stream ended early"
                except grpc.RpcError as e:
                    error = RefereeError.from_rpc_error(e)
                    # A second stream of the entrant is refused until the
                    # server sees the first one closed: after a cut, wait.
                    if not (_retryable(error) or (connected and error.reason == "ALREADY_CONNECTED")):
                        raise error from None
                    cause = str(error)
                delay = self._backoff(delay)
                log.warning("tournament stream: %s; reconnecting in %.1f s", cause, delay)
                time.sleep(delay)
        finally:
            over.set()
            client.close()

    def _backoff(self, previous: float | None) -> float:
        """The next reconnection delay: random (jitter), growing, capped."""
        if previous is None:
            return random.uniform(self.reconnect_initial / 2, self.reconnect_initial)
        return min(self.reconnect_max, random.uniform(previous, 2 * previous))

    def _game(self, client: RefereeClient, a: tournament_pb2.GameAssignment, over: threading.Event) -> None:
        """Plays one game; nothing that goes wrong in it leaves this thread."""
        delay = None
        while True:
            try:
                self._play(client, a)
                return
            except _Disconnected as e:
                cause = e
            except RefereeError as e:
                if over.is_set():
                    return  # the channel closed with the tournament
                if not _retryable(e):
                    self._fail(client, a, e)
                    return
                cause = e
            except Exception as e:  # a bug in choose, finished or the kit
                if not over.is_set():
                    self._fail(client, a, e)
                return
            if over.is_set():
                return
            delay = self._backoff(delay)
            log.warning("game %s: %s; following it again in %.1f s", a.game_id, cause, delay)
            if over.wait(delay):
                return

    def _fail(self, client: RefereeClient, a: tournament_pb2.GameAssignment, error: Exception) -> None:
        """A game that failed: logged, told to :meth:`on_error`, then ended
        by :attr:`on_failure`."""
        log.error(
            "game %s: %s: %s; %s",
            a.game_id,
            type(error).__name__,
            error,
            "resigning" if self.on_failure == RESIGN else "leaving the game",
            exc_info=not isinstance(error, (RefereeError, ChooseOverrun)),
        )
        self._hook(a.game_id, self.on_error, a.game_id, error)
        self._give_up(client, a)

    def _give_up(self, client: RefereeClient, a: tournament_pb2.GameAssignment) -> None:
        """Resigns a failed game (policy "resign"), then :meth:`finished`."""
        if self.on_failure != RESIGN:
            return
        try:
            final = client.resign(a.game_id, a.seat_token)
        except RefereeError as e:
            if e.reason != "GAME_OVER":
                log.error("game %s: resigning failed: %s", a.game_id, e)
                return
            try:
                final = client.get_game(a.game_id, token=a.seat_token)
            except RefereeError:
                return
        self._hook(a.game_id, self.finished, final)

    def _hook(self, game_id: str, hook, *args) -> None:
        """Calls a hook of the bot; what it raises is logged, not raised."""
        try:
            hook(*args)
        except Exception:
            log.exception("game %s: %s raised", game_id, hook.__name__)

    def _choose(self, a, state, legal: list[str], left: int | None, since: float) -> str | None:
        """:meth:`choose` under the seat's clock: ``left`` ms at ``since``,
        less :attr:`clock_margin_ms`. Past it, :class:`ChooseOverrun` (the
        thread thinking is left to finish on its own)."""
        if left is None:
            return self.choose(state, legal, left)
        budget = (left - self.clock_margin_ms) / 1000 - (time.monotonic() - since)
        box: dict = {}

        def think():
            try:
                box["move"] = self.choose(state, legal, left)
            except BaseException as e:  # handed to the game's thread
                box["error"] = e

        thinker = threading.Thread(target=think, name=f"choose-{a.game_id}", daemon=True)
        thinker.start()
        thinker.join(max(0.0, budget))
        if thinker.is_alive():
            raise ChooseOverrun(f"choose() took more than the {left} ms left on the clock")
        if "error" in box:
            raise box["error"]
        return box["move"]

    def _turn(self, client: RefereeClient, a, ply: int, clock):
        """The seat's move at ``ply`` (``clock`` as the game last showed it):
        ``(True, move)`` with ``move`` None to resign, or ``(False, None)``
        when it is not this seat's turn at ``ply`` after all (catching up)."""
        since = time.monotonic()
        legal = client.legal_notations(a.game_id, token=a.seat_token)
        while legal.ply < ply:
            # Behind the game: in a cluster the stream may come from a
            # replica that does not own the game, which shows a move once
            # stored, a moment before its owner answers from it
            # (docs/CLUSTER.md). Nothing else comes: it is our turn.
            time.sleep(0.01)
            legal = client.legal_notations(a.game_id, token=a.seat_token)
        if legal.ply != ply or legal.to_move != a.seat:
            return False, None  # catching up on moves already played
        asked = time.monotonic()
        state = client.get_game(a.game_id, token=a.seat_token)
        left = _time_left(clock, a.seat)
        if left is None:
            # Moves replayed from the store (a game followed again after
            # a restart) carry no clock: the snapshot's, read just now.
            left, since = _time_left(state.clock, a.seat), asked
        return True, self._choose(a, state, list(legal.notations), left, since)

    def _refused(self, client: RefereeClient, a, move: str, ply: int, e: RefereeError) -> None:
        """A move refused for good: logged, told to :meth:`on_refused`, and
        the game given up."""
        log.error(
            "game %s: move %r at ply %d refused: %s %s: %s",
            a.game_id,
            move,
            ply,
            e.code.name,
            e.reason or "",
            e.message,
        )
        self._hook(a.game_id, self.on_refused, a.game_id, move, e)
        self._give_up(client, a)

    def _play(self, client: RefereeClient, a: tournament_pb2.GameAssignment) -> None:
        """Plays seat ``a.seat`` of game ``a.game_id`` to its end by
        :attr:`transport`."""
        if self.transport == "unary":
            self._play_unary(client, a)
        else:
            self._play_stream(client, a)

    def _play_stream(self, client: RefereeClient, a: tournament_pb2.GameAssignment) -> None:
        """Plays over one ``Play`` stream, following the game from ply 0;
        :class:`_Disconnected` if the stream ends early."""
        game = game_name(a.rules)
        answered = None
        sent: dict[str, str] = {}
        to_move, ply, clock = 0, 0, None
        with client.play_stream(a.game_id, a.seat_token, from_ply=0, game=game) as stream:
            for item in stream:
                kind = item.WhichOneof("item")
                if kind == "snapshot":
                    to_move, ply, clock = item.snapshot.to_move, item.snapshot.ply, item.snapshot.clock
                elif kind == "event":
                    event = item.event
                    if event.WhichOneof("kind") == "game_over":
                        final = client.get_game(a.game_id, token=a.seat_token)
                        self._hook(a.game_id, self.finished, final)
                        return
                    to_move, ply, clock = event.move_applied.to_move, event.ply, event.clock
                elif kind == "refused":
                    e = RefereeError.from_status(item.refused.status)
                    if e.code == grpc.StatusCode.ABORTED or e.reason == "GAME_OVER":
                        continue  # stale, or the flag fell meanwhile
                    move = sent.get(item.refused.request_id, "")
                    self._refused(client, a, move, item.refused.expected_ply, e)
                    return
                else:
                    continue
                if to_move != a.seat or answered == ply:
                    continue
                answered = ply
                decided, move = self._turn(client, a, ply, clock)
                if not decided:
                    continue
                if move is None:
                    client.resign(a.game_id, a.seat_token)
                    continue
                request_id = f"{a.game_id}:{ply}"
                sent = {request_id: move}
                stream.send(move, ply, request_id=request_id)
        raise _Disconnected("the game's stream ended early")

    def _play_unary(self, client: RefereeClient, a: tournament_pb2.GameAssignment) -> None:
        """Plays by ``WatchGame`` and ``SubmitMove``, following the game
        from ply 0; :class:`_Disconnected` if the watch ends early."""
        game = game_name(a.rules)
        answered = None
        to_move, ply, clock = 0, 0, None
        for item in client.watch(a.game_id, from_ply=0, token=a.seat_token):
            kind = item.WhichOneof("item")
            if kind == "snapshot":
                to_move, ply, clock = item.snapshot.to_move, item.snapshot.ply, item.snapshot.clock
            elif kind == "event":
                event = item.event
                if event.WhichOneof("kind") == "game_over":
                    final = client.get_game(a.game_id, token=a.seat_token)
                    self._hook(a.game_id, self.finished, final)
                    return
                to_move, ply, clock = event.move_applied.to_move, event.ply, event.clock
            else:
                continue
            if to_move != a.seat or answered == ply:
                continue
            answered = ply
            decided, move = self._turn(client, a, ply, clock)
            if not decided:
                continue
            try:
                if move is None:
                    client.resign(a.game_id, a.seat_token)
                else:
                    client.play(a.game_id, a.seat_token, move, ply, game=game)
            except RefereeError as e:
                if e.code == grpc.StatusCode.ABORTED or e.reason == "GAME_OVER":
                    continue  # stale, or the flag fell meanwhile
                if _retryable(e) or move is None:
                    raise
                self._refused(client, a, move, ply, e)
                return
        raise _Disconnected("the game's watch ended early")
