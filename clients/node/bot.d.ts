// TypeScript declarations of the bot kit (src/bot.js): see index.d.ts.
import type { Message } from './index.js';

/** A tournament entrant (docs/TOURNAMENTS.md): extend it, write `choose`,
 * call `run(server, entrantKey)`. */
export declare class Bot {
  /** The move to play (one of `legalMoves`, canonical notations), or null
   * to resign. `state` is the game as this bot's seat sees it; `clock` the
   * milliseconds left, or null without a clock. */
  choose(state: Message, legalMoves: string[], clock: number | null): string | null | Promise<string | null>;
  /** Called once a game of this bot is over. */
  finished(game: Message): void;
  /** Plays until the tournament ends; resolves to its end (status and
   * final standings). */
  run(server: string, entrantKey: string): Promise<Message>;
}
