// TypeScript declarations of the organiser (src/organiser.js): see index.d.ts.
import type { GameName, Message, RefereeClient, TlsOptions } from './index.js';

/** The statuses after which a tournament changes no more. */
export declare const ENDED: string[];

/** One game of a tournament and its record (the game's `docs/rules/<game>.md` format). */
export interface ExportedGame {
  number: number;
  round: number;
  gameId: string;
  entrants: string[];
  record: string;
}

/** A tournament just created, with each entrant's secret key by name. */
export interface Created {
  tournamentId: string;
  tournament: Message;
  keys: Record<string, string>;
}

/** Runs tournaments (docs/CLIENTS.md, "Organising a tournament"). */
export declare class Organiser {
  constructor(address: string | RefereeClient, options?: { timeoutMs?: number; key?: string } & TlsOptions);
  readonly referee: RefereeClient;
  close(): void;
  create(name?: string, options?: {
    rules?: GameName | Message;
    format?: 'round_robin' | 'double_round_robin' | 'gauntlet' | 'swiss' | string;
    gamesPerPairing?: number;
    timeControl?: Message;
    entrants?: string[];
    openRegistration?: boolean;
    concurrency?: number;
    labels?: Record<string, string>;
    swissRounds?: number;
    tableSize?: number;
    spec?: Message;
  }): Promise<Created>;
  addEntrant(tournamentId: string, name: string): Promise<string>;
  start(tournamentId: string): Promise<Message>;
  cancel(tournamentId: string): Promise<Message>;
  get(tournamentId: string): Promise<Message>;
  list(status?: string): Promise<Message[]>;
  follow(tournamentId: string, options?: { intervalMs?: number; maxBackoffMs?: number }): AsyncGenerator<Message, void, void>;
  export(tournamentId: string, directory?: string): Promise<ExportedGame[]>;
}

/** The standings as a small text table. */
export declare function formatStandings(tournament: Message): string;
