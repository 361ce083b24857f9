// A thin Node client of the punct-referee gRPC service.
//
// The service's .proto files are loaded at run time from the repository's
// proto/ with @grpc/proto-loader (referee/v1/referee.proto imports
// punct/v1/punct.proto; both resolve through the include path), so nothing
// generated is committed. A refused call becomes a RefereeError whose
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

/** The repository's proto/ folder (the public contract). */
export const PROTO_DIR = path.resolve(here, '..', '..', '..', 'proto');
/** Folder holding google/rpc/*.proto. */
const GOOGLE_PROTOS = path.resolve(path.dirname(require.resolve('google-proto-files/google/rpc/status.proto')), '..', '..');
/** Folder holding health/v1/health.proto. */
const HEALTH_PROTOS = path.resolve(path.dirname(require.resolve('grpc-health-check/package.json')), 'proto');

export const SERVICE_NAME = 'referee.v1.RefereeService';

const loaderOptions = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR, HEALTH_PROTOS],
};

const definition = grpc.loadPackageDefinition(
  protoLoader.loadSync(['referee/v1/referee.proto', 'health/v1/health.proto'], loaderOptions),
);
const RefereeService = definition.referee.v1.RefereeService;
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
    const details = [];
    const raw = error.metadata?.get('grpc-status-details-bin')?.[0];
    if (raw) {
      const status = Status.decode(raw);
      for (const any of status.details) {
        const typeName = any.type_url.slice(any.type_url.lastIndexOf('/') + 1);
        const type = rpcRoot.lookupType(typeName);
        details.push({ '@type': typeName, ...type.toObject(type.decode(any.value), { longs: String, defaults: true }) });
      }
    }
    return new RefereeError(error.code, error.details ?? error.message, details);
  }
}

/** The notation text of a move message. */
export const notation = (move) => move?.punct?.notation;

/** A seat is a number (1 for the first seat, 2 for the second, …); 0 is "no
 * seat" (nobody to move once the game is over, no winner). */
export const NO_SEAT = 0;

/** The game's name for seat number `seat` (PÜNCT: 1 "white", 2 "black"),
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
  }

  /** The token of a seat, by number (1, 2, …) or by name ('white'). */
  token(seat) {
    const found = this.seats.find((s) => s.seat === seat || s.name === seat);
    if (!found) throw new Error(`no seat ${seat} in this game`);
    return found.token;
  }
}

/** The referee service at `target` (host:port). */
export class RefereeClient {
  constructor(target, { timeoutMs = 10_000 } = {}) {
    const credentials = grpc.credentials.createInsecure();
    this.stub = new RefereeService(target, credentials);
    this.health = new Health(target, credentials);
    this.timeoutMs = timeoutMs;
  }

  close() {
    this.stub.close();
    this.health.close();
  }

  #call(stub, method, request) {
    return new Promise((resolve, reject) => {
      stub[method](request, { deadline: Date.now() + this.timeoutMs }, (error, reply) => {
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

  /** Creates a PÜNCT game; returns a Table with every seat's token. */
  async createGame({ variant = 'VARIANT_STANDARD', labels = {} } = {}) {
    const reply = await this.#call(this.stub, 'CreateGame', { rules: { punct: { variant } }, labels });
    return new Table(reply);
  }

  /** A snapshot: a spectator's view, or with a seat's `token` that seat's
   * (`Game.viewer` says whose). */
  async getGame(gameId, { token = '' } = {}) {
    return (await this.#call(this.stub, 'GetGame', { game_id: gameId, token })).game;
  }

  /** The legal moves of the player to move (or of seat number `seat`: empty
   * unless it is to move), with the ply they answer. */
  legalMoves(gameId, { seat = NO_SEAT, token = '' } = {}) {
    return this.#call(this.stub, 'ListLegalMoves', { game_id: gameId, seat, token });
  }

  /** Submits a move in notation for the seat of `token`. */
  play(gameId, token, moveNotation, expectedPly) {
    return this.#call(this.stub, 'SubmitMove', {
      game_id: gameId,
      token,
      move: { punct: { notation: moveNotation } },
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

  /** A readable stream of WatchGameResponse messages (pass the 'error' event
   * through RefereeError.fromServiceError). With a seat's `token` the watcher
   * is that seat's player, present while it watches. */
  watch(gameId, { fromPly, token = '' } = {}) {
    const request = { game_id: gameId, token };
    if (fromPly !== undefined) request.from_ply = fromPly;
    return this.stub.WatchGame(request);
  }

  async exportGame(gameId, { token = '' } = {}) {
    return (await this.#call(this.stub, 'ExportGame', { game_id: gameId, token })).record;
  }

  async importGame(record) {
    return new Table(await this.#call(this.stub, 'ImportGame', { record }));
  }
}
