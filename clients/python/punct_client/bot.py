"""The bot kit: a :class:`Bot` joins a tournament held by the referee
(docs/TOURNAMENTS.md) with its entrant key and plays every game it is sent.

Subclass it and write :meth:`Bot.choose`; :meth:`Bot.run` does the rest:
the ``ConnectEntrant`` stream of ``referee.v1.TournamentService`` (the games
to play, then the end), and for each game, in a thread of its own,
``WatchGame`` with the seat's token from ply 0 (so a game resumed after a
reconnection is followed from its first move), ``ListLegalMoves`` and
``GetGame`` (the seat's own view) on each turn, and ``SubmitMove``.

    from punct_client.bot import Bot

    class First(Bot):
        def choose(self, state, legal_moves, clock):
            return legal_moves[0]

    First().run("127.0.0.1:50051", "0123456789abcdef0123456789abcdef")
"""

from __future__ import annotations

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

__all__ = ["Bot"]


class Bot:
    """A tournament entrant. Override :meth:`choose`; call :meth:`run`."""

    def choose(self, state: referee_pb2.Game, legal_moves: list[str], clock: int | None) -> str:
        """The move to play, as one of ``legal_moves`` (canonical notations,
        sorted). ``state`` is the game as this bot's seat sees it
        (``state.viewer`` is its seat; :func:`punct_client.state_of` gives
        the game's own state); ``clock`` the milliseconds left on its clock,
        or None without one. Return ``None`` to resign."""
        raise NotImplementedError

    def finished(self, game: referee_pb2.Game) -> None:
        """Called once a game of this bot is over (override to learn)."""

    def run(self, server: str, entrant_key: str) -> tournament_pb2.TournamentEnded:
        """Plays as the entrant of ``entrant_key`` on the referee at
        ``server`` (``host:port``) until the tournament ends; returns the end
        (status and final standings)."""
        channel = grpc.insecure_channel(server)
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        client = RefereeClient(server, timeout=30.0)
        threads: dict[str, threading.Thread] = {}
        try:
            request = tournament_pb2.ConnectEntrantRequest(entrant_key=entrant_key)
            try:
                for message in stub.ConnectEntrant(request):
                    kind = message.WhichOneof("event")
                    if kind == "game" and message.game.game_id not in threads:
                        thread = threading.Thread(
                            target=self._play, args=(client, message.game), daemon=True
                        )
                        threads[message.game.game_id] = thread
                        thread.start()
                    elif kind == "ended":
                        for thread in threads.values():
                            thread.join()
                        return message.ended
            except grpc.RpcError as e:
                raise RefereeError.from_rpc_error(e) from None
            raise RefereeError(code=grpc.StatusCode.UNAVAILABLE, message="the tournament stream ended early")
        finally:
            client.close()
            channel.close()

    def _play(self, client: RefereeClient, a: tournament_pb2.GameAssignment) -> None:
        """Plays seat ``a.seat`` of game ``a.game_id`` to its end."""
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
                    self.finished(client.get_game(a.game_id, token=a.seat_token))
                    return
                to_move, ply, clock = event.move_applied.to_move, event.ply, event.clock
            else:
                continue
            if to_move != a.seat or answered == ply:
                continue
            answered = ply
            legal = client.legal_notations(a.game_id, token=a.seat_token)
            while legal.ply < ply:
                # Behind the watch: in a cluster the watch may come from a
                # replica that does not own the game, which shows a move
                # once stored, a moment before its owner answers from it
                # (docs/CLUSTER.md). Nothing else comes: it is our turn.
                time.sleep(0.01)
                legal = client.legal_notations(a.game_id, token=a.seat_token)
            if legal.ply != ply or legal.to_move != a.seat:
                continue  # catching up on moves already played
            state = client.get_game(a.game_id, token=a.seat_token)
            left = clock.remaining_ms[a.seat - 1] if len(clock.remaining_ms) >= a.seat else None
            move = self.choose(state, list(legal.notations), left)
            try:
                if move is None:
                    client.resign(a.game_id, a.seat_token)
                else:
                    client.play(a.game_id, a.seat_token, move, ply, game=game)
            except RefereeError as e:
                if e.code == grpc.StatusCode.ABORTED or e.reason == "GAME_OVER":
                    continue  # stale, or the flag fell meanwhile
                # An illegal move: give the game up, as the referee's own
                # runner does.
                try:
                    client.resign(a.game_id, a.seat_token)
                except RefereeError:
                    pass
