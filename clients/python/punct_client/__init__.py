"""A thin, idiomatic Python client of the punct-referee gRPC service.

The stubs are generated from the repository's proto/ (nothing generated is
committed): into the package when it is installed (``pip install
./clients/python``: setup.py runs the generator at build time), or into
``gen/`` by ``generate.py`` in a checkout; this package puts them on the
import path, wraps the calls people make most, and turns a refused
call into a :class:`RefereeError` whose google.rpc details (ErrorInfo,
BadRequest, ...) are decoded with grpcio-status.

Every game the referee serves (PÜNCT, Dots, Punto) goes through the same
calls: each game is one member of every ``oneof game`` of referee.v1, named
like its proto package (``punct``, ``dots``, ``punto``), and the helpers here
(:func:`game_rules`, :func:`game_move`, :func:`game_name`, :func:`state_of`,
:func:`notation`) pick or build that member, so nothing assumes two seats or
one game.
"""

from __future__ import annotations

import pathlib
import queue
import sys
import threading
from dataclasses import dataclass, field
from typing import Iterator, Mapping

# Installed (pip install ./clients/python): the stubs were generated into the
# package at build time (setup.py). From a checkout: generate.py's gen/.
_HERE = pathlib.Path(__file__).resolve().parent
_GEN = _HERE / "_gen" if (_HERE / "_gen").is_dir() else _HERE.parent / "gen"
if str(_GEN) not in sys.path:
    sys.path.insert(0, str(_GEN))

import grpc  # noqa: E402
from google.protobuf import any_pb2  # noqa: E402
from google.rpc import error_details_pb2  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from grpc_status import rpc_status  # noqa: E402

from dots.v1 import dots_pb2  # noqa: E402
from punct.v1 import punct_pb2  # noqa: E402
from punto.v1 import punto_pb2  # noqa: E402
from referee.v1 import referee_pb2, referee_pb2_grpc  # noqa: E402
from referee.v1 import tournament_pb2, tournament_pb2_grpc  # noqa: E402

__all__ = [
    "PlayStream",
    "RefereeClient",
    "RefereeError",
    "Table",
    "dots_pb2",
    "punct_pb2",
    "punto_pb2",
    "referee_pb2",
    "tournament_pb2",
    "tournament_pb2_grpc",
    "GAMES",
    "NO_SEAT",
    "SERVICE_NAME",
    "game_move",
    "game_name",
    "game_rules",
    "notation",
    "outcome_detail",
    "parse_target",
    "seat_name",
    "seat_number",
    "state_of",
]

SERVICE_NAME = "referee.v1.RefereeService"
#: A seat is a number (1 for the first seat, 2 for the second, ...); 0 is
#: "no seat" (nobody to move once a game is over, no winner).
NO_SEAT = 0

#: The games' generated modules by member name: the name of a game's member in
#: every ``oneof game`` of referee.v1 is its proto package's first part.
GAMES = {"punct": punct_pb2, "dots": dots_pb2, "punto": punto_pb2}


def _member(message) -> str:
    """The game a per-game message belongs to, from its proto package
    (``dots.v1.Move`` -> "dots"); ValueError for anything else."""
    name = message.DESCRIPTOR.full_name.split(".")[0]
    if name not in GAMES:
        raise ValueError(f"{message.DESCRIPTOR.full_name} is not a message of a game")
    return name


def game_rules(options=None) -> referee_pb2.GameRules:
    """The ``GameRules`` for a game's rule options: a ``GameRules`` as is, a
    per-game ``RuleOptions`` (``dots_pb2.RuleOptions(width=5, height=5)``) in
    its member, or a game's name ("dots") for its default options. ``None``
    is standard PÜNCT."""
    if options is None:
        return referee_pb2.GameRules(punct=punct_pb2.RuleOptions())
    if isinstance(options, referee_pb2.GameRules):
        return options
    if isinstance(options, str):
        if options not in GAMES:
            raise ValueError(f"no game {options!r} (games: {sorted(GAMES)})")
        return referee_pb2.GameRules(**{options: GAMES[options].RuleOptions()})
    return referee_pb2.GameRules(**{_member(options): options})


def game_move(move, game: str = "punct") -> referee_pb2.Move:
    """The referee ``Move`` for ``move``: a ``referee_pb2.Move`` as is, a
    per-game move message (``dots_pb2.Move(ground=dots_pb2.Ground())``) in its
    member, or a notation text for ``game`` ("SE@E5:F5,G5", "3,4", "ground",
    "-1,0")."""
    if isinstance(move, referee_pb2.Move):
        return move
    if isinstance(move, str):
        if game not in GAMES:
            raise ValueError(f"no game {game!r} (games: {sorted(GAMES)})")
        return referee_pb2.Move(**{game: GAMES[game].Move(notation=move)})
    return referee_pb2.Move(**{_member(move): move})


def game_name(game) -> str:
    """Which game a ``Game`` (or ``GameSummary`` or ``GameRules``) is:
    "punct", "dots" or "punto"."""
    rules = game if isinstance(game, referee_pb2.GameRules) else game.rules
    return rules.WhichOneof("game") or "punct"


def state_of(game: referee_pb2.Game):
    """The game's own state message (``dots_pb2.GameState``, ...)."""
    member = game.state.WhichOneof("game")
    if member is None:
        raise ValueError("the game has no state")
    return getattr(game.state, member)


def outcome_detail(outcome: referee_pb2.Outcome):
    """The game's own details of an ending (``punto_pb2.OutcomeDetail``, ...),
    or None (a referee ending of a game without details)."""
    member = outcome.WhichOneof("detail")
    return getattr(outcome, member) if member else None


@dataclass
class RefereeError(Exception):
    """A call the referee refused: its code, message and decoded details."""

    code: grpc.StatusCode
    message: str
    error_info: error_details_pb2.ErrorInfo | None = None
    bad_request: error_details_pb2.BadRequest | None = None
    details: list = field(default_factory=list)

    def __str__(self) -> str:
        reason = f" [{self.error_info.reason}]" if self.error_info else ""
        return f"{self.code.name}: {self.message}{reason}"

    @property
    def reason(self) -> str | None:
        """The machine-readable reason (ErrorInfo.reason), if any."""
        return self.error_info.reason if self.error_info else None

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> "RefereeError":
        """Decodes the grpc-status-details-bin trailer of a failed call."""
        status = rpc_status.from_call(error)
        err = cls(code=error.code(), message=error.details() or "")
        if status is None:
            return err
        err._add_details(status.details)
        return err

    @classmethod
    def from_status(cls, status: referee_pb2.PlayStatus) -> "RefereeError":
        """The refusal a Play stream sends as a message (``MoveRefused.status``,
        a ``google.rpc.Status``): the same code, message and details as the
        error SubmitMove raises for the same move."""
        code = next((c for c in grpc.StatusCode if c.value[0] == status.code), grpc.StatusCode.UNKNOWN)
        err = cls(code=code, message=status.message)
        err._add_details(any_pb2.Any(type_url=d.type_url, value=d.value) for d in status.details)
        return err

    def _add_details(self, details) -> None:
        """Decodes the ErrorInfo and BadRequest among ``details`` (Any)."""
        err = self
        for any_detail in details:
            for kind, attr in (
                (error_details_pb2.ErrorInfo, "error_info"),
                (error_details_pb2.BadRequest, "bad_request"),
            ):
                if any_detail.Is(kind.DESCRIPTOR):
                    msg = kind()
                    any_detail.Unpack(msg)
                    setattr(err, attr, msg)
                    err.details.append(msg)


def seat_name(game, seat: int) -> str:
    """The game's name for seat number ``seat`` (PÜNCT: 1 "white", 2
    "black"; Dots: "red", "blue"; Punto: the seats' colours), from ``Game.seats`` (or ``GameSummary.seats``); "" for
    :data:`NO_SEAT` or a number the game has no seat for."""
    for s in game.seats:
        if s.number == seat:
            return s.name
    return ""


def seat_number(game, name: str) -> int:
    """The number of the seat the game calls ``name``; KeyError if none."""
    for s in game.seats:
        if s.name == name:
            return s.number
    raise KeyError(f"no seat named {name!r} (seats: {[s.name for s in game.seats]})")


@dataclass
class Table:
    """A game just created or imported, with one secret token per seat."""

    game: referee_pb2.Game
    #: The SeatTokens as returned, in seat order (number, token, name).
    seats: list[referee_pb2.SeatToken]

    @property
    def game_id(self) -> str:
        return self.game.game_id

    @property
    def tokens(self) -> list[str]:
        """The tokens in seat order: ``tokens[0]`` is seat 1's."""
        return [s.token for s in self.seats]

    @property
    def game_name(self) -> str:
        """Which game it is: "punct", "dots" or "punto"."""
        return game_name(self.game)

    def token(self, seat: int | str) -> str:
        """The token of a seat, by number (1, 2, ...) or by name ("white")."""
        for s in self.seats:
            if s.seat == seat or s.name == seat:
                return s.token
        raise KeyError(f"no seat {seat!r} in this game")


def parse_target(address: str) -> tuple[str, bool]:
    """The gRPC target of an address in any form the CLI takes, and whether
    it means TLS: ``host:port`` and ``[::1]:port`` as they are,
    ``http://host:port`` plaintext, ``https://host:port`` TLS (a trailing
    ``/`` is dropped). ValueError for an empty address or another scheme."""
    text = address.strip()
    tls = False
    if "://" in text:
        scheme, text = text.split("://", 1)
        if scheme.lower() not in ("http", "https"):
            raise ValueError(f"address {address!r}: only http:// and https:// are understood")
        tls = scheme.lower() == "https"
    text = text.rstrip("/")
    if not text:
        raise ValueError(f"address {address!r} names no host")
    return text, tls


def notation(move: referee_pb2.Move) -> str:
    """The notation text of a move of any game ("" for an empty move)."""
    member = move.WhichOneof("game")
    return getattr(move, member).notation if member else ""


class RefereeClient:
    """The referee service at ``target`` (``host:port``, ``[::1]:port``,
    ``http://host:port``, or ``https://host:port`` for TLS: see
    :func:`parse_target`).

    Plaintext unless ``root_certificates`` (the PEM bytes of the CA that
    signed the referee's certificate) is given, ``tls`` is true or the
    address is ``https://``: then TLS (the system's roots without
    ``root_certificates``), and for mutual TLS
    ``certificate_chain`` and ``private_key`` (PEM bytes) are this client's;
    ``server_name`` is the name the certificate must carry when it is not the
    target's host. ``key`` is a platform key, sent as ``authorization: Bearer <key>`` with
    every call (docs/SECURITY.md); it is kept nowhere else."""

    def __init__(
        self,
        target: str,
        timeout: float = 10.0,
        *,
        root_certificates: bytes | None = None,
        certificate_chain: bytes | None = None,
        private_key: bytes | None = None,
        server_name: str | None = None,
        key: str | None = None,
        tls: bool | None = None,
    ):
        target, https = parse_target(target)
        if tls is None:
            tls = https or root_certificates is not None
        if not tls:
            if certificate_chain is not None or private_key is not None:
                raise ValueError("a client certificate needs root_certificates (TLS)")
            if root_certificates is not None:
                raise ValueError("root_certificates given with tls=False")
            self._channel = grpc.insecure_channel(target)
        else:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=root_certificates,
                private_key=private_key,
                certificate_chain=certificate_chain,
            )
            options = (
                [("grpc.ssl_target_name_override", server_name)] if server_name else []
            )
            self._channel = grpc.secure_channel(target, credentials, options=options)
        self._metadata = (("authorization", f"Bearer {key}"),) if key else ()
        self._stub = referee_pb2_grpc.RefereeServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"RefereeClient(key={'<hidden>' if self._metadata else None})"

    @property
    def channel(self) -> grpc.Channel:
        """The channel (for the stubs of other services, e.g. TournamentService)."""
        return self._channel

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "RefereeClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise RefereeError.from_rpc_error(e) from None

    def serving(self, service: str = SERVICE_NAME) -> bool:
        """Whether the health service reports ``service`` SERVING."""
        reply = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service))
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def create_game(
        self,
        variant: int = punct_pb2.VARIANT_STANDARD,
        labels: Mapping[str, str] | None = None,
        *,
        rules=None,
        seed: str = "",
        spectator_delay: "referee_pb2.SpectatorDelay | Mapping[str, int] | None" = None,
    ) -> Table:
        """Creates a game; returns it with every seat's token. Without
        ``rules`` a PÜNCT game of ``variant``; with ``rules`` (anything
        :func:`game_rules` takes: ``dots_pb2.RuleOptions(width=5, height=5)``,
        ``punto_pb2.RuleOptions(players=3)``, "dots", a ``GameRules``) that
        game. ``seed`` (64 hex digits) is the setup's seed for a game with a
        random setup (Punto's shuffle, Dots' four crosses).
        ``spectator_delay`` (a ``SpectatorDelay``, or ``{"plies": 3}`` /
        ``{"seconds": 30}``) keeps what spectators see that far behind the
        live game (docs/SPECTATOR.md); the game shows it as
        ``spectator_delay``."""
        if rules is None:
            rules = punct_pb2.RuleOptions(variant=variant)
        request = referee_pb2.CreateGameRequest(
            rules=game_rules(rules), labels=dict(labels or {}), seed=seed
        )
        if spectator_delay is not None:
            if not isinstance(spectator_delay, referee_pb2.SpectatorDelay):
                spectator_delay = referee_pb2.SpectatorDelay(**dict(spectator_delay))
            request.spectator_delay.CopyFrom(spectator_delay)
        reply = self._call(self._stub.CreateGame, request)
        return Table(reply.game, list(reply.seats))

    def get_game(
        self,
        game_id: str,
        token: str = "",
        view: int = referee_pb2.SNAPSHOT_VIEW_UNSPECIFIED,
    ) -> referee_pb2.Game:
        """A snapshot: a spectator's view, or with a seat's ``token`` that
        seat's (``Game.viewer`` says whose). ``view`` ``SNAPSHOT_VIEW_COMPACT``
        leaves out what never changes and the derived forms (docs/API.md)."""
        return self._call(
            self._stub.GetGame,
            referee_pb2.GetGameRequest(game_id=game_id, token=token, view=view),
        ).game

    def legal_moves(
        self,
        game_id: str,
        seat: int = NO_SEAT,
        token: str = "",
        view: int = referee_pb2.MOVES_VIEW_UNSPECIFIED,
    ) -> referee_pb2.ListLegalMovesResponse:
        """The legal moves of the player to move (or of seat number ``seat``:
        empty unless it is to move), with the ply they answer. ``view``
        ``referee_pb2.MOVES_VIEW_NOTATION`` sends only each move's notation
        (in ``notations``) instead of the full moves (in ``moves``)."""
        return self._call(
            self._stub.ListLegalMoves,
            referee_pb2.ListLegalMovesRequest(
                game_id=game_id, seat=seat, token=token, view=view
            ),
        )

    def legal_notations(
        self, game_id: str, seat: int = NO_SEAT, token: str = ""
    ) -> referee_pb2.ListLegalMovesResponse:
        """:meth:`legal_moves` with ``MOVES_VIEW_NOTATION``: the reply's
        ``notations`` are the legal moves' canonical notations, sorted."""
        return self.legal_moves(
            game_id, seat=seat, token=token, view=referee_pb2.MOVES_VIEW_NOTATION
        )

    def play(
        self, game_id: str, token: str, move, expected_ply: int, game: str = "punct"
    ) -> referee_pb2.SubmitMoveResponse:
        """Submits a move for the seat of ``token``: a notation text of
        ``game`` ("punct", "dots", "punto"), or a move message (a
        ``referee_pb2.Move`` or a game's own, e.g. ``dots_pb2.Move``; see
        :func:`game_move`)."""
        return self._call(
            self._stub.SubmitMove,
            referee_pb2.SubmitMoveRequest(
                game_id=game_id,
                token=token,
                move=game_move(move, game),
                expected_ply=expected_ply,
            ),
        )

    def resign(self, game_id: str, token: str) -> referee_pb2.Game:
        """The seat of ``token`` gives up; returns the finished game."""
        return self._call(
            self._stub.Resign, referee_pb2.ResignRequest(game_id=game_id, token=token)
        ).game

    def offer_draw(self, game_id: str, token: str) -> referee_pb2.OfferDrawResponse:
        """Offers a draw (or joins the standing offer) for the seat of ``token``."""
        return self._call(
            self._stub.OfferDraw, referee_pb2.OfferDrawRequest(game_id=game_id, token=token)
        )

    def accept_draw(self, game_id: str, token: str) -> referee_pb2.AcceptDrawResponse:
        """Accepts the standing draw offer for the seat of ``token``."""
        return self._call(
            self._stub.AcceptDraw, referee_pb2.AcceptDrawRequest(game_id=game_id, token=token)
        )

    def watch(
        self, game_id: str, from_ply: int | None = None, token: str = ""
    ) -> Iterator[referee_pb2.WatchGameResponse]:
        """The game's snapshot, then its events as they happen. With a seat's
        ``token`` the watcher is that seat's player (present while it
        watches)."""
        request = referee_pb2.WatchGameRequest(game_id=game_id, token=token)
        if from_ply is not None:
            request.from_ply = from_ply
        try:
            yield from self._stub.WatchGame(request, metadata=self._metadata)
        except grpc.RpcError as e:
            raise RefereeError.from_rpc_error(e) from None

    def play_stream(
        self, game_id: str, token: str, from_ply: int | None = None, game: str = "punct"
    ) -> "PlayStream":
        """Opens a Play stream for the seat of ``token`` (docs/API.md,
        "Playing over a stream"): iterate it for the game (snapshot, events,
        ...) and the answers to the moves sent with :meth:`PlayStream.send`.
        ``from_ply`` resumes after that ply (as :meth:`watch`)."""
        return PlayStream(self._stub, self._metadata, game_id, token, from_ply, game)

    def export_game(self, game_id: str, token: str = "") -> str:
        return self._call(
            self._stub.ExportGame, referee_pb2.ExportGameRequest(game_id=game_id, token=token)
        ).record

    def import_game(self, record: str) -> Table:
        reply = self._call(self._stub.ImportGame, referee_pb2.ImportGameRequest(record=record))
        return Table(reply.game, list(reply.seats))


class PlayStream:
    """One seat's ``Play`` stream: its moves go one way, the game and the
    answers the other. Iterate it for ``referee_pb2.PlayResponse`` messages
    (a snapshot first, then every event, presence flips, round overs, and
    ``accepted`` / ``refused`` for each move sent); a refused move does not
    end it (:meth:`RefereeError.from_status` reads its status). The stream
    ends after the game-over event. Close it when done.

    The server's ``ping`` messages (docs/LAG.md) are answered here, at once,
    by a reader thread, however long the caller takes between two reads:
    the iterator never yields them."""

    _END = object()

    def __init__(self, stub, metadata, game_id: str, token: str, from_ply: int | None, game: str):
        self.game = game
        self._requests: queue.Queue = queue.Queue()
        start = referee_pb2.PlayStart(game_id=game_id, token=token, answer_pings=True)
        if from_ply is not None:
            start.from_ply = from_ply
        self._requests.put(referee_pb2.PlayRequest(start=start))
        self._call = stub.Play(self._outgoing(), metadata=metadata)
        self._incoming: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        # Answers pings as they arrive and hands everything else (and the
        # end, or the error) to the iterator.
        try:
            for response in self._call:
                if response.WhichOneof("item") == "ping":
                    self._requests.put(
                        referee_pb2.PlayRequest(pong=referee_pb2.Pong(id=response.ping.id))
                    )
                else:
                    self._incoming.put(response)
        except grpc.RpcError as e:
            self._incoming.put(e)
        self._incoming.put(self._END)

    def _outgoing(self):
        while True:
            request = self._requests.get()
            if request is self._END:
                return
            yield request

    def send(self, move, expected_ply: int, request_id: str = "") -> None:
        """Sends a move (a notation of the stream's game, or a move message,
        as :meth:`RefereeClient.play`) answering ``expected_ply``; its answer
        comes on the stream, with ``request_id``."""
        self._requests.put(
            referee_pb2.PlayRequest(
                move=referee_pb2.PlayMove(
                    move=game_move(move, self.game),
                    expected_ply=expected_ply,
                    request_id=request_id,
                )
            )
        )

    def __iter__(self) -> Iterator[referee_pb2.PlayResponse]:
        while True:
            item = self._incoming.get()
            if item is self._END:
                # Seen again by another iteration.
                self._incoming.put(item)
                return
            if isinstance(item, grpc.RpcError):
                self._incoming.put(self._END)
                raise RefereeError.from_rpc_error(item) from None
            yield item

    def close(self) -> None:
        """Stops sending and cancels the stream."""
        self._requests.put(self._END)
        self._call.cancel()

    def __enter__(self) -> "PlayStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
