// The organiser's side of referee.v1.TournamentService: create a tournament
// for remote entrants (their secret keys come back once), add entrants,
// start, follow the standings live, cancel, and export every game's record.
// The Python kit's Organiser (punct_client/organiser.py) has the same
// methods; docs/CLIENTS.md "Organising a tournament".
//
//   import { Organiser, formatStandings } from 'punct-referee-client/organiser';
//   const org = new Organiser('127.0.0.1:50051');   // { key: 'prk_…' } on a keyed server
//   const event = await org.create('club night', { rules: 'dots', entrants: ['ann', 'bob'],
//     timeControl: { per_move: { move_ms: 10_000 } } });
//   console.log(event.keys);                        // { ann: 'pek_…', … }: hand them out
//   await org.start(event.tournamentId);
//   for await (const t of org.follow(event.tournamentId)) console.log(formatStandings(t));
//   await org.export(event.tournamentId, 'records/');
//
// The service has no stream of a tournament's changes, so follow() polls
// GetTournament and yields each time something changed.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';

import grpc from '@grpc/grpc-js';

import { RefereeClient, RefereeError, TournamentService, gameRules } from './client.js';

/** The statuses after which a tournament changes no more. */
export const ENDED = ['TOURNAMENT_STATUS_FINISHED', 'TOURNAMENT_STATUS_CANCELLED'];

const FORMATS = {
  round_robin: 'TOURNAMENT_FORMAT_ROUND_ROBIN',
  double_round_robin: 'TOURNAMENT_FORMAT_DOUBLE_ROUND_ROBIN',
  gauntlet: 'TOURNAMENT_FORMAT_GAUNTLET',
  swiss: 'TOURNAMENT_FORMAT_SWISS',
};

// Codes after which following goes on (a referee restarting, a takeover).
const TRANSIENT = [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED];

function formatOf(value) {
  if (typeof value !== 'string') return value;
  if (value.startsWith('TOURNAMENT_FORMAT_')) return value;
  const found = FORMATS[value.toLowerCase().replaceAll('-', '_')];
  if (!found) throw new Error(`unknown format ${value} (one of ${Object.keys(FORMATS).join(', ')})`);
  return found;
}

/** Runs tournaments on the referee at `address` (any form RefereeClient
 * takes, with the same options: `key` for a platform key with the
 * `tournaments:manage` scope, `rootCerts`, `tls`, …) or on a RefereeClient
 * to share. */
export class Organiser {
  #metadata;

  constructor(address, options = {}) {
    this.referee = address instanceof RefereeClient ? address : new RefereeClient(address, options);
    this.stub = new TournamentService(this.referee.target, this.referee.credentials, this.referee.channelOptions);
    this.#metadata = this.referee.metadata;
  }

  close() {
    this.stub.close();
    this.referee.close();
  }

  #call(method, request) {
    return new Promise((resolve, reject) => {
      this.stub[method](request, this.#metadata, { deadline: Date.now() + this.referee.timeoutMs }, (error, reply) => {
        if (error) reject(RefereeError.fromServiceError(error));
        else resolve(reply);
      });
    });
  }

  /** Creates a tournament for remote entrants; resolves to `{ tournamentId,
   * tournament, keys }` with each entrant's key by name. `rules` is anything
   * gameRules takes ('dots', `{ dots: { width: 6, height: 6 } }`), `format`
   * a name ('round_robin', 'double_round_robin', 'gauntlet', 'swiss') or a
   * TournamentFormat, `timeControl` a TimeControl object (`{ per_move: {
   * move_ms: 10000 } }`). A whole `spec` (a TournamentSpec object) replaces
   * every other option but `entrants`. `openRegistration` lets addEntrant
   * add more before the start. */
  async create(name = '', {
    rules, format = 'round_robin', gamesPerPairing = 1, timeControl, entrants = [],
    openRegistration = false, concurrency = 0, labels = {}, swissRounds = 0, tableSize = 0, spec,
  } = {}) {
    if (spec === undefined) {
      if (!timeControl) throw new Error('a tournament needs a timeControl');
      spec = {
        name,
        rules: gameRules(rules),
        format: formatOf(format),
        games_per_pairing: gamesPerPairing,
        time_control: timeControl,
        open_registration: openRegistration,
        concurrency,
        labels,
        swiss_rounds: swissRounds,
        table_size: tableSize,
      };
    }
    const reply = await this.#call('CreateTournament', { spec, entrants });
    return {
      tournamentId: reply.tournament.tournament_id,
      tournament: reply.tournament,
      keys: Object.fromEntries(reply.keys.map((k) => [k.name, k.entrant_key])),
    };
  }

  /** Adds an entrant (open registration, before the start); its key. */
  async addEntrant(tournamentId, name) {
    return (await this.#call('AddEntrant', { tournament_id: tournamentId, name })).key.entrant_key;
  }

  async start(tournamentId) {
    return (await this.#call('StartTournament', { tournament_id: tournamentId })).tournament;
  }

  /** Stops the tournament: no more games; games in progress no longer count. */
  async cancel(tournamentId) {
    return (await this.#call('CancelTournament', { tournament_id: tournamentId })).tournament;
  }

  async get(tournamentId) {
    return (await this.#call('GetTournament', { tournament_id: tournamentId })).tournament;
  }

  /** Every tournament on the server (of `status` if given), oldest first. */
  async list(status = 'TOURNAMENT_STATUS_UNSPECIFIED') {
    const found = [];
    let token = '';
    do {
      const reply = await this.#call('ListTournaments', { page_token: token, status });
      found.push(...reply.tournaments);
      token = reply.next_page_token;
    } while (token);
    return found;
  }

  /** The tournament now, then again each time it changes (a game started or
   * ended, the standings, an entrant connecting), polled every `intervalMs`;
   * ends after yielding it finished or cancelled. An unreachable referee
   * (UNAVAILABLE, a deadline) is waited out with backoff and jitter up to
   * `maxBackoffMs`; any other refusal throws the RefereeError. */
  async *follow(tournamentId, { intervalMs = 1000, maxBackoffMs = 10_000 } = {}) {
    let last;
    let delay = intervalMs;
    for (;;) {
      let t;
      try {
        t = await this.get(tournamentId);
      } catch (error) {
        if (!TRANSIENT.includes(error.code)) throw error;
        await sleep(delay * (0.5 + Math.random() / 2));
        delay = Math.min(delay * 2, maxBackoffMs);
        continue;
      }
      delay = intervalMs;
      if (!isDeepStrictEqual(t, last)) {
        last = t;
        yield t;
      }
      if (ENDED.includes(t.status)) return;
      await sleep(intervalMs);
    }
  }

  /** The record of every game the tournament created (byes and games never
   * played have none), in game order, as `{ number, round, gameId,
   * entrants, record }`; with `directory`, also written there as
   * `<number>-<game id>.txt` (the folder is made). */
  async export(tournamentId, directory) {
    const t = await this.get(tournamentId);
    const names = new Map(t.entrants.map((e) => [e.index, e.name]));
    const games = [];
    for (const g of t.games) {
      if (!g.game_id) continue;
      games.push({
        number: g.number,
        round: g.round,
        gameId: g.game_id,
        entrants: g.entrants.map((i) => names.get(i)),
        record: await this.referee.exportGame(g.game_id),
      });
    }
    if (directory !== undefined) {
      mkdirSync(directory, { recursive: true });
      for (const g of games) {
        writeFileSync(path.join(directory, `${String(g.number).padStart(3, '0')}-${g.gameId}.txt`), g.record);
      }
    }
    return games;
  }
}

/** The standings as a small text table, under a line of the tournament's
 * status and its games played. */
export function formatStandings(t) {
  const done = t.games.filter((g) => ['TOURNAMENT_GAME_STATUS_FINISHED', 'TOURNAMENT_GAME_STATUS_BYE'].includes(g.status)).length;
  const status = t.status.replace('TOURNAMENT_STATUS_', '').toLowerCase();
  const lines = [`${t.spec.name || t.tournament_id}: ${status}, ${done}/${t.games.length} games`];
  lines.push(`${'#'.padStart(3)} ${'entrant'.padEnd(20)} ${'pts'.padStart(6)} ${'W'.padStart(3)} ${'D'.padStart(3)} ${'L'.padStart(3)}`);
  for (const s of t.standings) {
    lines.push(`${String(s.rank).padStart(3)} ${s.name.padEnd(20)} ${String(s.points).padStart(6)} ${String(s.wins).padStart(3)} ${String(s.draws).padStart(3)} ${String(s.losses).padStart(3)}`);
  }
  return lines.join('\n');
}
