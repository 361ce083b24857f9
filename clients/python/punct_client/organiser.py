"""The organiser's side of ``referee.v1.TournamentService``: create a
tournament for remote entrants (their secret keys come back once), add
entrants, start, follow the standings live, cancel, and export every game's
record. The Node kit's ``Organiser`` (clients/node/src/organiser.js) has the
same methods; docs/CLIENTS.md "Organising a tournament".

    from punct_client.organiser import Organiser

    org = Organiser("127.0.0.1:50051")          # key="prk_..." on a keyed server
    event = org.create("club night", rules="dots", entrants=["ann", "bob"],
                       time_control={"per_move": {"move_ms": 10_000}})
    print(event.keys)                            # {"ann": "pek_...", ...}: hand them out
    org.start(event.tournament_id)
    for t in org.follow(event.tournament_id):
        print(format_standings(t))
    org.export(event.tournament_id, "records/")

The service has no stream of a tournament's changes, so ``follow`` polls
``GetTournament`` and yields each time something changed.
"""

from __future__ import annotations

import pathlib
import random
import time
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import grpc
from google.protobuf import json_format

from . import RefereeClient, RefereeError, game_rules, referee_pb2, tournament_pb2, tournament_pb2_grpc

__all__ = ["Organiser", "Created", "ExportedGame", "format_standings", "ENDED"]

#: The statuses after which a tournament changes no more.
ENDED = (tournament_pb2.TOURNAMENT_STATUS_FINISHED, tournament_pb2.TOURNAMENT_STATUS_CANCELLED)

_FORMATS = {
    "round_robin": tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
    "double_round_robin": tournament_pb2.TOURNAMENT_FORMAT_DOUBLE_ROUND_ROBIN,
    "gauntlet": tournament_pb2.TOURNAMENT_FORMAT_GAUNTLET,
    "swiss": tournament_pb2.TOURNAMENT_FORMAT_SWISS,
}

# Codes after which following goes on (a referee restarting, a takeover).
_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


@dataclass
class Created:
    """A tournament just created, with each entrant's secret key by name
    (shown once: the server keeps only their hashes)."""

    tournament: tournament_pb2.Tournament
    keys: dict[str, str]

    @property
    def tournament_id(self) -> str:
        return self.tournament.tournament_id


@dataclass
class ExportedGame:
    """One game of a tournament and its record (the game's `docs/rules/<game>.md` format)."""

    number: int
    round: int
    game_id: str
    entrants: list[str]
    record: str


def _format(value) -> int:
    if isinstance(value, str):
        try:
            return _FORMATS[value.lower().replace("-", "_")]
        except KeyError:
            raise ValueError(f"unknown format {value!r} (one of {', '.join(_FORMATS)})") from None
    return int(value)


def _time_control(value) -> referee_pb2.TimeControl:
    if isinstance(value, referee_pb2.TimeControl):
        return value
    return json_format.ParseDict(dict(value), referee_pb2.TimeControl())


class Organiser:
    """Runs tournaments on the referee at ``target``: an address (any form
    :class:`punct_client.RefereeClient` takes, with the same keyword options:
    ``key`` for a platform key with the ``tournaments:manage`` scope,
    ``root_certificates``, ``tls``, ...) or a ``RefereeClient`` to share."""

    def __init__(self, target: str | RefereeClient, timeout: float = 10.0, **options):
        if isinstance(target, RefereeClient):
            self.referee = target
        else:
            self.referee = RefereeClient(target, timeout, **options)
        self._stub = tournament_pb2_grpc.TournamentServiceStub(self.referee.channel)

    def close(self) -> None:
        self.referee.close()

    def __enter__(self) -> "Organiser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method, request):
        try:
            return method(request, timeout=self.referee.timeout, metadata=self.referee._metadata)
        except grpc.RpcError as e:
            raise RefereeError.from_rpc_error(e) from None

    def create(
        self,
        name: str = "",
        *,
        rules=None,
        format="round_robin",
        games_per_pairing: int = 1,
        time_control=None,
        entrants: Sequence[str] = (),
        open_registration: bool = False,
        concurrency: int = 0,
        labels: Mapping[str, str] | None = None,
        swiss_rounds: int = 0,
        table_size: int = 0,
        spec: tournament_pb2.TournamentSpec | None = None,
    ) -> Created:
        """Creates a tournament for remote entrants and returns it with
        their keys. ``rules`` is anything :func:`punct_client.game_rules`
        takes ("dots", a ``GameRules``, ...), ``format`` a name
        ("round_robin", "double_round_robin", "gauntlet", "swiss") or a
        ``TournamentFormat``, ``time_control`` a ``TimeControl`` or its JSON
        form (``{"per_move": {"move_ms": 10000}}``). A whole ``spec`` (a
        ``TournamentSpec``) replaces every other argument but ``entrants``.
        ``open_registration`` lets :meth:`add_entrant` add more before the
        start."""
        if spec is None:
            if time_control is None:
                raise ValueError("a tournament needs a time_control")
            spec = tournament_pb2.TournamentSpec(
                name=name,
                rules=game_rules(rules),
                format=_format(format),
                games_per_pairing=games_per_pairing,
                time_control=_time_control(time_control),
                open_registration=open_registration,
                concurrency=concurrency,
                labels=dict(labels or {}),
                swiss_rounds=swiss_rounds,
                table_size=table_size,
            )
        reply = self._call(
            self._stub.CreateTournament,
            tournament_pb2.CreateTournamentRequest(spec=spec, entrants=list(entrants)),
        )
        return Created(reply.tournament, {k.name: k.entrant_key for k in reply.keys})

    def add_entrant(self, tournament_id: str, name: str) -> str:
        """Adds an entrant (open registration, before the start); its key."""
        reply = self._call(
            self._stub.AddEntrant,
            tournament_pb2.AddEntrantRequest(tournament_id=tournament_id, name=name),
        )
        return reply.key.entrant_key

    def start(self, tournament_id: str) -> tournament_pb2.Tournament:
        return self._call(
            self._stub.StartTournament,
            tournament_pb2.StartTournamentRequest(tournament_id=tournament_id),
        ).tournament

    def cancel(self, tournament_id: str) -> tournament_pb2.Tournament:
        """Stops the tournament: no more games; games in progress no longer count."""
        return self._call(
            self._stub.CancelTournament,
            tournament_pb2.CancelTournamentRequest(tournament_id=tournament_id),
        ).tournament

    def get(self, tournament_id: str) -> tournament_pb2.Tournament:
        return self._call(
            self._stub.GetTournament,
            tournament_pb2.GetTournamentRequest(tournament_id=tournament_id),
        ).tournament

    def list(self, status: int = tournament_pb2.TOURNAMENT_STATUS_UNSPECIFIED) -> list[tournament_pb2.Tournament]:
        """Every tournament on the server (of ``status`` if given), oldest first."""
        found, token = [], ""
        while True:
            reply = self._call(
                self._stub.ListTournaments,
                tournament_pb2.ListTournamentsRequest(page_token=token, status=status),
            )
            found.extend(reply.tournaments)
            token = reply.next_page_token
            if not token:
                return found

    def follow(
        self, tournament_id: str, interval: float = 1.0, max_backoff: float = 10.0
    ) -> Iterator[tournament_pb2.Tournament]:
        """The tournament now, then again each time it changes (a game
        started or ended, the standings, an entrant connecting), polled every
        ``interval`` seconds; ends after yielding it finished or cancelled.
        An unreachable referee (UNAVAILABLE, a deadline) is waited out with
        backoff and jitter up to ``max_backoff`` seconds; any other refusal
        raises :class:`punct_client.RefereeError`."""
        last = None
        delay = interval
        while True:
            try:
                t = self.get(tournament_id)
            except RefereeError as e:
                if e.code not in _TRANSIENT:
                    raise
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, max_backoff)
                continue
            delay = interval
            if t != last:
                last = t
                yield t
            if t.status in ENDED:
                return
            time.sleep(interval)

    def export(
        self, tournament_id: str, directory: str | pathlib.Path | None = None
    ) -> list[ExportedGame]:
        """The record of every game the tournament created (byes and games
        never played have none), in game order; with ``directory``, also
        written there as ``<number>-<game id>.txt`` (the folder is made)."""
        t = self.get(tournament_id)
        names = {e.index: e.name for e in t.entrants}
        games = []
        for g in t.games:
            if not g.game_id:
                continue
            record = self.referee.export_game(g.game_id)
            games.append(
                ExportedGame(g.number, g.round, g.game_id, [names[i] for i in g.entrants], record)
            )
        if directory is not None:
            folder = pathlib.Path(directory)
            folder.mkdir(parents=True, exist_ok=True)
            for g in games:
                (folder / f"{g.number:03d}-{g.game_id}.txt").write_text(g.record, encoding="utf-8")
        return games


def format_standings(t: tournament_pb2.Tournament) -> str:
    """The standings as a small text table, under a line of the tournament's
    status and its games played."""
    done = sum(
        g.status
        in (tournament_pb2.TOURNAMENT_GAME_STATUS_FINISHED, tournament_pb2.TOURNAMENT_GAME_STATUS_BYE)
        for g in t.games
    )
    status = tournament_pb2.TournamentStatus.Name(t.status).removeprefix("TOURNAMENT_STATUS_").lower()
    lines = [f"{t.spec.name or t.tournament_id}: {status}, {done}/{len(t.games)} games"]
    lines.append(f"{'#':>3} {'entrant':<20} {'pts':>6} {'W':>3} {'D':>3} {'L':>3}")
    for s in t.standings:
        lines.append(
            f"{s.rank:>3} {s.name:<20} {s.points:>6g} {s.wins:>3} {s.draws:>3} {s.losses:>3}"
        )
    return "\n".join(lines)
