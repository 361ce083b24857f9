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

  /** Creates a PÜNCT game; returns `{ game, tokens: { SEAT_WHITE, SEAT_BLACK } }`. */
  async createGame({ variant = 'VARIANT_STANDARD', labels = {} } = {}) {
    const reply = await this.#call(this.stub, 'CreateGame', { rules: { punct: { variant } }, labels });
    return table(reply);
  }

  async getGame(gameId) {
    return (await this.#call(this.stub, 'GetGame', { game_id: gameId })).game;
  }

  /** The legal moves of the player to move, with the ply they answer. */
  legalMoves(gameId) {
    return this.#call(this.stub, 'ListLegalMoves', { game_id: gameId });
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

  /** A readable stream of WatchGameResponse messages; errors are RefereeErrors. */
  watch(gameId) {
    const call = this.stub.WatchGame({ game_id: gameId });
    return call;
  }

  async exportGame(gameId) {
    return (await this.#call(this.stub, 'ExportGame', { game_id: gameId })).record;
  }

  async importGame(record) {
    return table(await this.#call(this.stub, 'ImportGame', { record }));
  }
}

function table(reply) {
  const tokens = {};
  for (const seat of reply.seats) tokens[seat.seat] = seat.token;
  return { game: reply.game, gameId: reply.game.game_id, tokens };
}
