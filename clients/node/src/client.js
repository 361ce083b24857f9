// A thin Node client of the punct-referee gRPC service.
//
// The service's .proto files are loaded at run time from the repository's
// proto/ with @grpc/proto-loader (referee/v1/referee.proto imports each
// game's package, punct/v1, dots/v1 and punto/v1; they resolve through the
// include path), so nothing generated is committed. Every game goes through
// the same calls: a game is one member of every `oneof game` of referee.v1,
// named like its proto package (`punct`, `dots`, `punto`), and the helpers
// here (gameRules, gameMove, gameName, stateOf, outcomeDetail, notation)
// pick or build that member, so nothing assumes two seats or one game. A refused call becomes a RefereeError whose
// google.rpc details (ErrorInfo, BadRequest, ...) are decoded from the
// `grpc-status-details-bin` trailer with protobufjs, using the google.rpc
// protos of the maintained `google-proto-files` package.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** The public contract: the package's own copy of proto/ when installed
 * from a packed tarball (`npm pack` copies it: scripts/copy-proto.js), else
 * the repository's proto/ folder. */
const PACKED_PROTO = path.resolve(here, '..', 'proto');
export const PROTO_DIR = existsSync(path.join(PACKED_PROTO, 'referee', 'v1', 'referee.proto'))
  ? PACKED_PROTO
  : path.resolve(here, '..', '..', '..', 'proto');
/** Folder holding google/rpc/*.proto. */
const GOOGLE_PROTOS = path.resolve(path.dirname(require.resolve('google-proto-files/google/rpc/status.proto')), '..', '..');
/** Folder holding health/v1/health.proto. */
const HEALTH_PROTOS = path.resolve(path.dirname(require.resolve('grpc-health-check/package.json')), 'proto');

export const SERVICE_NAME = 'referee.v1.RefereeService';
/** The tournament service's full name (docs/TOURNAMENTS.md). */
export const TOURNAMENT_SERVICE_NAME = 'referee.v1.TournamentService';

const loaderOptions = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR, HEALTH_PROTOS],
};

const definition = grpc.loadPackageDefinition(
  protoLoader.loadSync(
    ['referee/v1/referee.proto', 'referee/v1/tournament.proto', 'health/v1/health.proto'],
    loaderOptions,
  ),
);
const RefereeService = definition.referee.v1.RefereeService;
/** The generated TournamentService client constructor (grpc-js). */
export const TournamentService = definition.referee.v1.TournamentService;
const Health = definition.grpc.health.v1.Health;

// The google.rpc status and details, for decoding the details trailer.
const rpcRoot = new protobuf.Root();
rpcRoot.resolvePath = (origin, target) => {
  for (const dir of [GOOGLE_PROTOS]) {
    const candidate = path.join(dir, target);
    if (existsSync(candidate)) return candidate;
  }
  return protobuf.util.path.resolve(origin, target);
};
rpcRoot.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto'], { keepCase: true });
const Status = rpcRoot.lookupType('google.rpc.Status');

/** A call the referee refused: its code, message and decoded details. */
export class RefereeError extends Error {
  constructor(code, message, details) {
    const info = details.find((d) => d['@type'] === 'google.rpc.ErrorInfo');
    super(`${grpc.status[code]}: ${message}${info ? ` [${info.reason}]` : ''}`);
    this.code = code;
    this.details = details;
  }

  /** The ErrorInfo detail, if any. */
  get errorInfo() {
    return this.details.find((d) => d['@type'] === 'google.rpc.ErrorInfo');
  }

  /** The BadRequest detail, if any. */
  get badRequest() {
    return this.details.find((d) => d['@type'] === 'google.rpc.BadRequest');
  }

  /** ErrorInfo.reason, the machine-readable reason. */
  get reason() {
    return this.errorInfo?.reason;
  }

  /** Decodes a grpc-js error's `grpc-status-details-bin` trailer. */
  static fromServiceError(error) {
    const raw = error.metadata?.get('grpc-status-details-bin')?.[0];
    const details = raw ? decodeDetails(Status.decode(raw).details) : [];
    return new RefereeError(error.code, error.details ?? error.message, details);
  }

  /** The refusal a Play stream sends as a message (`refused.status`, a
   * google.rpc.Status): the same code, message and details as the error
   * SubmitMove rejects with for the same move. */
  static fromStatus(status) {
    return new RefereeError(status.code, status.message, decodeDetails(status.details ?? []));
  }
}

/** google.protobuf.Any details (`{type_url, value}`) as plain objects with
 * their '@type'. */
function decodeDetails(anys) {
  const details = [];
  for (const any of anys) {
    const typeName = any.type_url.slice(any.type_url.lastIndexOf('/') + 1);
    const type = rpcRoot.lookupType(typeName);
    details.push({ '@type': typeName, ...type.toObject(type.decode(any.value), { longs: String, defaults: true }) });
  }
  return details;
}

/** The gRPC target of an address in any form the CLI takes, and whether it
 * means TLS: `host:port` and `[::1]:port` as they are, `http://host:port`
 * plaintext, `https://host:port` TLS (a trailing `/` is dropped). Throws for
 * an empty address or another scheme. */
export function parseTarget(address) {
  let text = String(address).trim();
  let tls = false;
  const at = text.indexOf('://');
  if (at >= 0) {
    const scheme = text.slice(0, at).toLowerCase();
    if (scheme !== 'http' && scheme !== 'https') {
      throw new Error(`address ${JSON.stringify(address)}: only http:// and https:// are understood`);
    }
    tls = scheme === 'https';
    text = text.slice(at + 3);
  }
  text = text.replace(/\/+$/, '');
  if (!text) throw new Error(`address ${JSON.stringify(address)} names no host`);
  return { target: text, tls };
}

/** The games, by their member name in every `oneof game` of referee.v1. */
export const GAMES = ['punct', 'dots', 'punto'];

function checkGame(game) {
  if (!GAMES.includes(game)) throw new Error(`no game ${game} (games: ${GAMES.join(', ')})`);
  return game;
}

/** The member of a oneof `game` a message has set: the loader's virtual
 * `game` field, or (for a plain object) the first game present. */
function memberOf(message) {
  if (!message) return undefined;
  if (typeof message.game === 'string' && GAMES.includes(message.game)) return message.game;
  return GAMES.find((g) => message[g] !== undefined && message[g] !== null);
}

/** The GameRules for `options`: undefined is standard PÜNCT, a game's name
 * ('dots') its default options, an object with one game's member
 * (`{ dots: { width: 5, height: 5 } }`) is a GameRules as is. */
export function gameRules(options) {
  if (options === undefined || options === null) return { punct: {} };
  if (typeof options === 'string') return { [checkGame(options)]: {} };
  if (!memberOf(options)) throw new Error(`rules name no game (games: ${GAMES.join(', ')})`);
  return options;
}

/** The referee Move for `move`: a notation text of `game` ('SE@E5:F5,G5',
 * '3,4', 'ground', '-1,0'), or a Move object with one game's member
 * (`{ dots: { ground: {} } }`) as is. */
export function gameMove(move, game = 'punct') {
  if (typeof move === 'string') return { [checkGame(game)]: { notation: move } };
  if (!memberOf(move)) throw new Error(`the move names no game (games: ${GAMES.join(', ')})`);
  return move;
}

/** Which game a Game (or GameSummary) is: 'punct', 'dots' or 'punto'. */
export const gameName = (game) => memberOf(game.rules) ?? 'punct';

/** The game's own state (a `dots.v1.GameState`, …). */
export function stateOf(game) {
  const member = memberOf(game.state);
  if (!member) throw new Error('the game has no state');
  return game.state[member];
}

/** The game's own details of an ending (a `punto.v1.OutcomeDetail`, …), or
 * undefined. */
export const outcomeDetail = (outcome) => (outcome?.detail ? outcome[outcome.detail] : undefined);

/** The notation text of a move of any game. */
export const notation = (move) => move?.[memberOf(move)]?.notation;

/** A seat is a number (1 for the first seat, 2 for the second, …); 0 is "no
 * seat" (nobody to move once the game is over, no winner). */
export const NO_SEAT = 0;

/** The game's name for seat number `seat` (PÜNCT: 1 "white", 2 "black";
 * Dots: "red", "blue"; Punto: the seats' colours),
 * from `Game.seats` (or `GameSummary.seats`); '' for NO_SEAT or a number the
 * game has no seat for. */
export function seatName(game, seat) {
  return game.seats.find((s) => s.number === seat)?.name ?? '';
}

/** The number of the seat the game calls `name`; throws if there is none. */
export function seatNumber(game, name) {
  const found = game.seats.find((s) => s.name === name);
  if (!found) throw new Error(`no seat named ${name} (seats: ${game.seats.map((s) => s.name).join(', ')})`);
  return found.number;
}

/** A game just created or imported, with one secret token per seat. */
export class Table {
  constructor(reply) {
    this.game = reply.game;
    this.gameId = reply.game.game_id;
    /** The SeatTokens as returned, in seat order ({ seat, token, name }). */
    this.seats = reply.seats;
    /** The tokens in seat order: `tokens[0]` is seat 1's. */
    this.tokens = reply.seats.map((s) => s.token);
    /** Which game it is: 'punct', 'dots' or 'punto'. */
    this.gameName = gameName(reply.game);
  }

  /** The token of a seat, by number (1, 2, …) or by name ('white'). */
  token(seat) {
    const found = this.seats.find((s) => s.seat === seat || s.name === seat);
    if (!found) throw new Error(`no seat ${seat} in this game`);
    return found.token;
  }
}

/** The referee service at `target` (host:port). Plaintext unless
 * `rootCerts` (a Buffer of the PEM CA that signed the referee's certificate)
 * is given: then TLS, and for mutual TLS `certChain` and `privateKey` (PEM
 * Buffers) are this client's; `serverName` is the name the certificate must
 * carry when it is not the target's host (e.g. 'localhost' for 127.0.0.1).
 * `key` is a platform key sent as `authorization: Bearer <key>` with every
 * call (docs/SECURITY.md). */
export class RefereeClient {
  #metadata;

  constructor(address, { timeoutMs = 10_000, rootCerts, certChain, privateKey, serverName, key, tls } = {}) {
    const { target, tls: https } = parseTarget(address);
    const secure = tls ?? (https || Boolean(rootCerts));
    if (!secure && (certChain || privateKey)) {
      throw new Error('a client certificate needs rootCerts (TLS)');
    }
    if (!secure && rootCerts) throw new Error('rootCerts given with tls: false');
    const credentials = secure
      ? grpc.credentials.createSsl(rootCerts ?? null, privateKey ?? null, certChain ?? null)
      : grpc.credentials.createInsecure();
    const options = serverName ? { 'grpc.ssl_target_name_override': serverName } : {};
    /** The gRPC target, the credentials and the channel options (for the
     * clients of other services, e.g. TournamentService). */
    this.target = target;
    this.credentials = credentials;
    this.channelOptions = options;
    this.stub = new RefereeService(target, credentials, options);
    this.health = new Health(target, credentials, options);
    this.timeoutMs = timeoutMs;
    this.#metadata = new grpc.Metadata();
    if (key) this.#metadata.set('authorization', `Bearer ${key}`);
  }

  close() {
    this.stub.close();
    this.health.close();
  }

  /** A copy of the metadata sent with every call (the platform key's
   * `authorization`), for the clients of other services (e.g. the
   * Organiser's TournamentService calls). */
  get metadata() {
    return this.#metadata.clone();
  }

  #call(stub, method, request) {
    return new Promise((resolve, reject) => {
      stub[method](request, this.#metadata, { deadline: Date.now() + this.timeoutMs }, (error, reply) => {
        if (error) reject(RefereeError.fromServiceError(error));
        else resolve(reply);
      });
    });
  }

  /** Whether the health service reports `service` SERVING. */
  async serving(service = SERVICE_NAME) {
    const reply = await this.#call(this.health, 'Check', { service });
    return reply.status === 'SERVING';
  }

  /** Creates a game; returns a Table with every seat's token. Without
   * `rules` a PÜNCT game of `variant`; with `rules` (anything gameRules
   * takes: `{ dots: { width: 5, height: 5 } }`, `{ punto: { players: 3 } }`,
   * 'dots') that game. `seed` (64 hex digits) is the setup's seed for a game
   * with a random setup (Punto's shuffle, Dots' four crosses).
   * `spectatorDelay` (`{ plies: 3 }` or `{ seconds: 30 }`) keeps what
   * spectators see that far behind the live game (docs/SPECTATOR.md); the
   * game shows it as `spectator_delay`. */
  async createGame({ variant = 'VARIANT_STANDARD', labels = {}, rules, seed = '', spectatorDelay } = {}) {
    const request = { rules: rules === undefined ? { punct: { variant } } : gameRules(rules), labels, seed };
    if (spectatorDelay !== undefined) request.spectator_delay = spectatorDelay;
    return new Table(await this.#call(this.stub, 'CreateGame', request));
  }

  /** A snapshot: a spectator's view, or with a seat's `token` that seat's
   * (`Game.viewer` says whose). */
  async getGame(gameId, { token = '', view = 'SNAPSHOT_VIEW_UNSPECIFIED' } = {}) {
    return (await this.#call(this.stub, 'GetGame', { game_id: gameId, token, view })).game;
  }

  /** The legal moves of the player to move (or of seat number `seat`: empty
   * unless it is to move), with the ply they answer. `view:
   * 'MOVES_VIEW_NOTATION'` sends only each move's notation (in `notations`)
   * instead of the full moves (in `moves`). */
  legalMoves(gameId, { seat = NO_SEAT, token = '', view = 'MOVES_VIEW_UNSPECIFIED' } = {}) {
    return this.#call(this.stub, 'ListLegalMoves', { game_id: gameId, seat, token, view });
  }

  /** legalMoves in the notation view: the reply's `notations` are the legal
   * moves' canonical notations, sorted. */
  legalNotations(gameId, { seat = NO_SEAT, token = '' } = {}) {
    return this.legalMoves(gameId, { seat, token, view: 'MOVES_VIEW_NOTATION' });
  }

  /** Submits a move for the seat of `token`: a notation text of `game`
   * ('punct', 'dots', 'punto'), or a Move object (see gameMove). */
  play(gameId, token, move, expectedPly, { game = 'punct' } = {}) {
    return this.#call(this.stub, 'SubmitMove', {
      game_id: gameId,
      token,
      move: gameMove(move, game),
      expected_ply: expectedPly,
    });
  }

  /** The seat of `token` gives up; resolves to the finished game. */
  async resign(gameId, token) {
    return (await this.#call(this.stub, 'Resign', { game_id: gameId, token })).game;
  }

  /** Offers a draw (or joins the standing offer): `{ agreed, game }`. */
  offerDraw(gameId, token) {
    return this.#call(this.stub, 'OfferDraw', { game_id: gameId, token });
  }

  /** Accepts the standing draw offer: `{ game, agreed }`. */
  acceptDraw(gameId, token) {
    return this.#call(this.stub, 'AcceptDraw', { game_id: gameId, token });
  }

  /** Opens a Play stream for the seat of `token` (docs/API.md, "Playing
   * over a stream"): iterate it (`for await`) for the game (snapshot,
   * events, ...) and the answers to the moves sent with `send`. `fromPly`
   * resumes after that ply (as watch). */
  playStream(gameId, token, { fromPly, game = 'punct' } = {}) {
    const call = this.stub.Play(this.#metadata);
    const start = { game_id: gameId, token, answer_pings: true };
    if (fromPly !== undefined && fromPly !== null) start.from_ply = fromPly;
    call.write({ start });
    return new PlayStream(call, game);
  }

  /** A readable stream of WatchGameResponse messages (pass the 'error' event
   * through RefereeError.fromServiceError). With a seat's `token` the watcher
   * is that seat's player, present while it watches. */
  watch(gameId, { fromPly, token = '' } = {}) {
    const request = { game_id: gameId, token };
    if (fromPly !== undefined) request.from_ply = fromPly;
    return this.stub.WatchGame(request, this.#metadata);
  }

  async exportGame(gameId, { token = '' } = {}) {
    return (await this.#call(this.stub, 'ExportGame', { game_id: gameId, token })).record;
  }

  async importGame(record) {
    return new Table(await this.#call(this.stub, 'ImportGame', { record }));
  }
}

/** One seat's Play stream: its moves go one way, the game and the answers
 * the other. Iterate it for PlayResponse messages (`item` names the member:
 * 'snapshot' first, then every 'event', 'presence', 'round_over', and
 * 'accepted' / 'refused' for each move sent); a refused move does not end
 * it (RefereeError.fromStatus reads its status). The stream ends after the
 * game-over event; a stream that fails throws a RefereeError. Close it when
 * done. */
export class PlayStream {
  #call;
  /** Messages read and not yet taken by the iterator, and its waiter. */
  #queue = [];
  #wake = null;
  #ended = false;
  #error = null;
  #closed = false;

  /** The server's pings (docs/LAG.md) are answered here as they arrive,
   * however long the caller takes between two reads; the iterator never
   * yields them. */
  constructor(call, game) {
    this.#call = call;
    this.game = game;
    const notify = () => {
      const wake = this.#wake;
      this.#wake = null;
      if (wake) wake();
    };
    call.on('data', (item) => {
      if (item.item === 'ping') {
        call.write({ pong: { id: item.ping.id } });
        return;
      }
      this.#queue.push(item);
      notify();
    });
    call.on('end', () => {
      this.#ended = true;
      notify();
    });
    call.on('error', (error) => {
      // A stream this side closed ends without an error.
      if (!this.#closed) this.#error = error;
      this.#ended = true;
      notify();
    });
  }

  /** Sends a move (a notation of the stream's game, or a Move object)
   * answering `expectedPly`; its answer comes on the stream with
   * `requestId`. */
  send(move, expectedPly, { requestId = '' } = {}) {
    this.#call.write({
      move: { move: gameMove(move, this.game), expected_ply: expectedPly, request_id: requestId },
    });
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      if (this.#queue.length > 0) {
        yield this.#queue.shift();
        continue;
      }
      if (this.#ended) break;
      await new Promise((resolve) => {
        this.#wake = resolve;
      });
    }
    const error = this.#error;
    if (error) {
      throw error?.metadata !== undefined && error?.code !== undefined ? RefereeError.fromServiceError(error) : error;
    }
  }

  /** Stops sending and cancels the stream (its CANCELLED status is
   * nobody's error). */
  close() {
    this.#closed = true;
    this.#call.on('error', () => {});
    this.#call.end();
    this.#call.cancel();
  }
}
