// TypeScript declarations of the bot kit (src/bot.js): see index.d.ts.
import type { Message, RefereeError, TlsOptions } from './index.js';

/** choose() did not answer within the seat's clock. */
export declare class ChooseOverrun extends Error {}

/** A tournament entrant (docs/TOURNAMENTS.md): extend it, write `choose`,
 * call `run(server, entrantKey)`. What happens when things go wrong:
 * docs/CLIENTS.md, "When things go wrong". */
export declare class Bot {
  /** A failed game: 'resign' (default) resigns it at once; 'leave' stops
   * playing it. */
  onFailure: 'resign' | 'leave';
  /** Milliseconds of the seat's clock kept back from choose. */
  clockMarginMs: number;
  /** How long run() gives games to end once the tournament has. */
  finishGraceMs: number;
  /** Reconnection backoff: first delay and cap, in ms. */
  reconnectInitialMs: number;
  reconnectMaxMs: number;
  /** How moves go: 'play' (default), one Play stream per game; 'unary',
   * WatchGame and one SubmitMove call per move. */
  transport: 'play' | 'unary';
  /** Where failures are logged (console by default). */
  logger: { warn(text: string): void; error(text: string): void };
  /** The move to play (one of `legalMoves`, canonical notations), or null
   * to resign. `state` is the game as this bot's seat sees it; `clock` the
   * milliseconds left, or null without a clock. Runs under the clock. */
  choose(state: Message, legalMoves: string[], clock: number | null): string | null | Promise<string | null>;
  /** Called once a game of this bot is over. */
  finished(game: Message): void | Promise<void>;
  /** Called when the referee refuses a move (`error.code`, `error.reason`),
   * before the game follows onFailure. */
  onRefused(gameId: string, move: string, error: RefereeError): void | Promise<void>;
  /** Called when a game fails otherwise (choose threw or overran, a call
   * was refused), before the game follows onFailure. */
  onError(gameId: string, error: unknown): void | Promise<void>;
  /** Plays until the tournament ends; resolves to its end (status and
   * final standings). `server`: `host:port`, `[::1]:port`,
   * `http://host:port` or `https://host:port` (TLS). */
  run(server: string, entrantKey: string, options?: TlsOptions): Promise<Message>;
}
