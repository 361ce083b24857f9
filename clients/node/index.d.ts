// TypeScript declarations of the Node client and bot kit (src/client.js,
// src/bot.js). Messages are the proto-loader objects of referee.v1
// (keepCase: field names as in the .proto; 64-bit integers as strings;
// enums as their names; oneofs named by a string field, e.g. `item`).

/** A message of referee.v1 as @grpc/proto-loader decodes it. */
export type Message = { [field: string]: any };

export declare const PROTO_DIR: string;
export declare const SERVICE_NAME: string;
export declare const TOURNAMENT_SERVICE_NAME: string;
export declare const GAMES: readonly ['punct', 'dots', 'punto'];
export type GameName = (typeof GAMES)[number];
export declare const NO_SEAT: 0;

/** The grpc-js client constructor of referee.v1.TournamentService. */
export declare const TournamentService: new (address: string, credentials: unknown) => any;

export declare function gameRules(options?: GameName | Message): Message;
export declare function gameMove(move: string | Message, game?: GameName): Message;
export declare function gameName(game: Message): GameName;
export declare function stateOf(game: Message): Message;
export declare function outcomeDetail(outcome: Message): Message | undefined;
export declare function notation(move: Message): string | undefined;
export declare function seatName(game: Message, seat: number): string;
export declare function seatNumber(game: Message, name: string): number;

/** A call the referee refused: its gRPC code, message and decoded details. */
export declare class RefereeError extends Error {
  code: number;
  details: Message[];
  readonly errorInfo: Message | undefined;
  readonly badRequest: Message | undefined;
  static fromServiceError(error: unknown): RefereeError;
  /** A Play stream's refusal (`refused.status`) as the error SubmitMove
   * would reject with. */
  static fromStatus(status: Message): RefereeError;
}

/** One seat's Play stream: iterate it for PlayResponse messages; send moves. */
export declare class PlayStream implements AsyncIterable<Message> {
  readonly game: GameName;
  send(move: string | Message, expectedPly: number, options?: { requestId?: string }): void;
  [Symbol.asyncIterator](): AsyncIterator<Message>;
  close(): void;
}

/** A new game and its seats' tokens. */
export declare class Table {
  constructor(reply: Message);
  game: Message;
  gameId: string;
  seats: Message[];
  tokens: string[];
  token(seat: number | string): string;
}

/** TLS options of a client or a bot (PEM Buffers; TLS when `rootCerts` is
 * given, `tls` is true or the address is https://). */
export interface TlsOptions {
  rootCerts?: Buffer;
  certChain?: Buffer;
  privateKey?: Buffer;
  serverName?: string;
  tls?: boolean;
}

/** The gRPC target of `host:port`, `[::1]:port`, `http://host:port` or
 * `https://host:port`, and whether the address means TLS. */
export declare function parseTarget(address: string): { target: string; tls: boolean };

export declare class RefereeClient {
  constructor(target: string, options?: { timeoutMs?: number; key?: string } & TlsOptions);
  /** The gRPC target, credentials and channel options (for the clients of
   * other services, e.g. TournamentService). */
  readonly target: string;
  readonly credentials: unknown;
  readonly channelOptions: Record<string, string>;
  /** A copy of the metadata sent with every call (the platform key). */
  readonly metadata: unknown;
  close(): void;
  serving(service?: string): Promise<boolean>;
  createGame(options?: {
    variant?: string;
    labels?: Record<string, string>;
    rules?: GameName | Message;
    seed?: string;
    /** Keeps spectators this far behind the live game (docs/SPECTATOR.md). */
    spectatorDelay?: { plies: number } | { seconds: number };
  }): Promise<Table>;
  getGame(gameId: string, options?: { token?: string; view?: string }): Promise<Message>;
  legalMoves(gameId: string, options?: { seat?: number; token?: string; view?: string }): Promise<Message>;
  legalNotations(gameId: string, options?: { seat?: number; token?: string }): Promise<Message>;
  play(gameId: string, token: string, move: string | Message, expectedPly: number, options?: { game?: GameName }): Promise<Message>;
  resign(gameId: string, token: string): Promise<Message>;
  offerDraw(gameId: string, token: string): Promise<Message>;
  acceptDraw(gameId: string, token: string): Promise<Message>;
  watch(gameId: string, options?: { fromPly?: number; token?: string }): AsyncIterable<Message> & NodeJS.EventEmitter;
  playStream(gameId: string, token: string, options?: { fromPly?: number; game?: GameName }): PlayStream;
  exportGame(gameId: string, options?: { token?: string }): Promise<string>;
  importGame(record: string): Promise<Table>;
}
