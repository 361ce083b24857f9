//! A tournament's durable state: one JSON document ([`Doc`]) per
//! tournament, written whole at every change (`Write::Tournament`) and read
//! back at start (docs/TOURNAMENTS.md, "Durability"). It holds the spec
//! (the rules as the game's record header, like a stored game), the
//! entrants (their keys only as SHA-256), the schedule with each game's
//! state and result. It holds no seat token: the tokens of a tournament's
//! games are derived from the server secret, the tournament and the game
//! (`ServerSecret::seat_token`), so an entrant reconnecting after a restart,
//! or to another replica, gets its seats again while the database alone
//! gives nobody a seat. (Documents of older versions held them in the
//! clear; the migration sealed those with the server secret.)
//!
//! The checks of a new tournament live here too ([`checked_doc`]), next to
//! the fields they fill.

use std::collections::BTreeMap;

use super::schedule::{self, Format, Planned, SwissEntrant};
use super::sprt::{Decision, Sprt};
use super::standings::{self, Scored};
use super::{
    MAX_GAMES, MAX_GAMES_PER_PAIRING, MAX_OPENINGS, MAX_TOURNAMENT_LABELS, NewTournament,
    OpeningInput, TournamentError,
};
use crate::games::{Catalog, GameRules, MoveDetail, MoveReport, RecordError, Setup};
use crate::service::sessions::{ClockMode, LagCompensation, TimeControl};
use crate::service::storage::{self, SealError, ServerSecret, TournamentRow};

mod check;

pub use check::checked_doc;

/// Where a tournament is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TournamentStatus {
    /// Entrants may be added.
    Registering,
    /// Games are being played.
    Running,
    /// Over.
    Finished,
    /// Cancelled.
    Cancelled,
}

impl TournamentStatus {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            TournamentStatus::Registering => "registering",
            TournamentStatus::Running => "running",
            TournamentStatus::Finished => "finished",
            TournamentStatus::Cancelled => "cancelled",
        }
    }
}

/// The time control as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClockDoc {
    /// `fischer` or `per_move`.
    pub mode: String,
    /// Fischer: initial time.
    pub initial_ms: u64,
    /// Fischer: increment.
    pub increment_ms: u64,
    /// Per move: the time of each move.
    pub per_move_ms: u64,
    /// The first-move deadline.
    pub first_move_ms: Option<u64>,
    /// Lag compensation: the most one move is credited (docs/LAG.md);
    /// absent in a document without compensation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_max_per_move_ms: Option<u32>,
    /// Lag compensation: the most a seat is credited over a game.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_quota_ms: Option<u32>,
}

impl ClockDoc {
    /// The stored form of `tc`.
    pub fn of(tc: &TimeControl) -> ClockDoc {
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let (mode, initial_ms, increment_ms, per_move_ms) = match tc.mode {
            ClockMode::Untimed => ("none", 0, 0, 0),
            ClockMode::Fischer { initial, increment } => ("fischer", ms(initial), ms(increment), 0),
            ClockMode::PerMove { per_move } => ("per_move", 0, 0, ms(per_move)),
        };
        ClockDoc {
            mode: mode.to_string(),
            initial_ms,
            increment_ms,
            per_move_ms,
            first_move_ms: tc.first_move.map(ms),
            lag_max_per_move_ms: tc.lag.map(|l| l.max_per_move_ms),
            lag_quota_ms: tc.lag.map(|l| l.quota_ms),
        }
    }

    /// The time control it stores.
    pub fn time_control(&self) -> Result<TimeControl, DocError> {
        use std::time::Duration;
        let mode = match self.mode.as_str() {
            "none" => ClockMode::Untimed,
            "fischer" => ClockMode::Fischer {
                initial: Duration::from_millis(self.initial_ms),
                increment: Duration::from_millis(self.increment_ms),
            },
            "per_move" => ClockMode::PerMove {
                per_move: Duration::from_millis(self.per_move_ms),
            },
            other => return Err(DocError::ClockMode(other.to_string())),
        };
        Ok(TimeControl {
            mode,
            first_move: self.first_move_ms.map(Duration::from_millis),
            lag: match (self.lag_max_per_move_ms, self.lag_quota_ms) {
                (Some(max_per_move_ms), Some(quota_ms)) => Some(LagCompensation {
                    max_per_move_ms,
                    quota_ms,
                }),
                _ => None,
            },
        })
    }
}

/// An opening as stored: canonical notations and the seed (hex).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpeningDoc {
    /// The moves' canonical notation.
    pub moves: Vec<String>,
    /// The seed, 64 hex digits (sealed at rest: [`row_of`]).
    #[serde(default)]
    pub seed: Option<String>,
}

/// One entrant as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntrantDoc {
    /// Its name.
    pub name: String,
    /// SHA-256 of its key, hex (never the key).
    pub key_sha256: String,
}

/// Where one scheduled game is.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum PairingStatus {
    /// Not created yet.
    Pending,
    /// Created: its id.
    Playing {
        /// The game id.
        game_id: String,
        /// Seat tokens an older version stored in the clear, sealed with
        /// the server secret by the migration (hex, seat order; cleared in
        /// views). Empty for the games started since: their tokens are
        /// derived from the server secret.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sealed_tokens: Vec<String>,
    },
    /// Over.
    Done {
        /// The game id.
        game_id: String,
        /// Winning seats, 0-based.
        winners: Vec<usize>,
        /// Each seat's points.
        points: Vec<f64>,
        /// Why it ended.
        reason: String,
        /// Turns played.
        ply: u32,
        /// Moves the referee played for each seat under the failure
        /// policy (empty: none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        substituted: Vec<u32>,
    },
    /// A Swiss bye.
    Bye,
    /// Not played (cancelled, or the SPRT decided first).
    Skipped {
        /// The game id, if it had been created.
        game_id: Option<String>,
    },
}

impl PairingStatus {
    /// The game id, once created.
    pub fn game_id(&self) -> Option<&str> {
        match self {
            PairingStatus::Playing { game_id, .. } | PairingStatus::Done { game_id, .. } => {
                Some(game_id)
            }
            PairingStatus::Skipped { game_id } => game_id.as_deref(),
            PairingStatus::Pending | PairingStatus::Bye => None,
        }
    }
}

/// One game of the schedule.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GameDoc {
    /// Its number, from 1.
    pub number: u32,
    /// Its round, from 1.
    pub round: u32,
    /// Entrants, seat order.
    pub seats: Vec<usize>,
    /// The opening's index.
    pub opening: Option<usize>,
    /// Where it is.
    pub state: PairingStatus,
}

/// A tournament's whole state (module docs).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Doc {
    /// The id.
    pub id: String,
    /// The name.
    pub name: String,
    /// The rules as the game's record header.
    pub rules_header: String,
    /// The format.
    pub format: Format,
    /// Games per pairing (per opening).
    pub games_per_pairing: u32,
    /// The clock.
    pub time_control: ClockDoc,
    /// Openings.
    pub openings: Vec<OpeningDoc>,
    /// Most games at once (0: a round's).
    pub concurrency: u32,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Whether AddEntrant is allowed until the start.
    pub open_registration: bool,
    /// Seats at a table.
    pub table: usize,
    /// The stop rule.
    pub sprt: Option<Sprt>,
    /// The base of each game's seed (seeded games).
    #[serde(default)]
    pub setup_seed_base: Option<u64>,
    /// Whether each game of a seeded opening is dealt its own seed derived
    /// from the opening's ([`super::opening_game_seed`]) rather than the
    /// opening's seed itself: games that hide their setup (Punto's decks),
    /// where one game dealt like another would tell its seats their cards.
    #[serde(default)]
    pub deal_per_game: bool,
    /// What the referee does when a seat of a game fails (`None`: the
    /// seat loses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<super::policy::PolicyDoc>,
    /// Where it is.
    pub status: TournamentStatus,
    /// The entrants, index order.
    pub entrants: Vec<EntrantDoc>,
    /// The games scheduled so far, by number.
    pub games: Vec<GameDoc>,
    /// The rounds of the schedule.
    pub rounds: u32,
    /// The SPRT's decision, once taken.
    pub decision: Option<Decision>,
    /// Creation, start and end, Unix ms (0: not yet).
    pub created_ms: i64,
    /// Start.
    pub started_ms: i64,
    /// End.
    pub ended_ms: i64,
}

impl Doc {
    /// The seed the tournament supplies to game `g`: its opening's seed (or
    /// the game's own derived from it, [`Doc::deal_per_game`]), else the one
    /// derived from `setup_seed_base` ([`super::game_seed`]); `None` when
    /// the game draws its own (or has no random setup).
    pub fn supplied_seed(&self, g: &GameDoc) -> Option<[u8; 32]> {
        g.opening
            .and_then(|o| self.openings.get(o))
            .and_then(|o| o.seed.as_deref())
            .and_then(crate::games::parse_seed)
            .map(|seed| {
                if self.deal_per_game {
                    super::opening_game_seed(&seed, g.number)
                } else {
                    seed
                }
            })
            .or_else(|| {
                self.setup_seed_base
                    .map(|base| super::game_seed(base, g.number))
            })
    }

    /// Whether the tournament's own seeds (its openings' seeds and its
    /// `setup_seed_base`) may be shown: once it is over and none of its
    /// games can still be in progress. Before, an opening's seed is the
    /// secret setup of every game dealt from it, and the base that of every
    /// game (docs/TOURNAMENTS.md, "Seeds"). A game called off with the
    /// tournament may still be played out, so its seed stays secret here
    /// (the game itself reveals it at its end).
    pub fn seeds_public(&self) -> bool {
        matches!(
            self.status,
            TournamentStatus::Finished | TournamentStatus::Cancelled
        ) && self.games.iter().all(|g| match &g.state {
            PairingStatus::Playing { .. } => false,
            PairingStatus::Skipped { game_id } => game_id.is_none(),
            PairingStatus::Pending | PairingStatus::Done { .. } | PairingStatus::Bye => true,
        })
    }

    /// The results so far, for the standings; and the byes.
    pub fn scored(&self) -> (Vec<Scored>, Vec<(u32, usize)>) {
        let scored = self
            .games
            .iter()
            .filter_map(|g| match &g.state {
                PairingStatus::Done {
                    winners, points, ..
                } => Some(Scored {
                    round: g.round,
                    seats: g.seats.clone(),
                    points: points.clone(),
                    drawn: winners.is_empty(),
                }),
                _ => None,
            })
            .collect();
        (scored, self.byes())
    }

    /// The Swiss byes so far: (round, entrant).
    pub fn byes(&self) -> Vec<(u32, usize)> {
        self.games
            .iter()
            .filter(|g| g.state == PairingStatus::Bye)
            .filter_map(|g| Some((g.round, *g.seats.first()?)))
            .collect()
    }

    /// Whether SPRT samples are pairs of games (two seats, an even number of
    /// games per pairing: each pair the same opening from both sides).
    pub fn pentanomial(&self) -> bool {
        self.table == 2 && self.games_per_pairing.is_multiple_of(2)
    }

    /// The first entrant's SPRT samples, in schedule order: each game's
    /// points, or each complete pair's mean.
    pub fn sprt_samples(&self, pentanomial: bool) -> Vec<f64> {
        let first_points = |g: &GameDoc| match &g.state {
            PairingStatus::Done { points, .. } => g
                .seats
                .iter()
                .position(|&e| e == 0)
                .and_then(|s| points.get(s).copied()),
            _ => None,
        };
        if !pentanomial {
            return self.games.iter().filter_map(first_points).collect();
        }
        self.games
            .chunks(2)
            .filter_map(|pair| match pair {
                [a, b] => Some((first_points(a)? + first_points(b)?) / 2.0),
                _ => None,
            })
            .collect()
    }

    /// The Swiss field after the rounds played.
    pub fn swiss_field(&self) -> Vec<SwissEntrant> {
        let mut field = vec![SwissEntrant::default(); self.entrants.len()];
        for (_, e) in self.byes() {
            if let Some(f) = field.get_mut(e) {
                f.had_bye = true;
                f.points += 1.0;
            }
        }
        for g in &self.games {
            if let [a, b] = g.seats[..] {
                field[a].met.insert(b);
                field[b].met.insert(a);
                field[a].first_seat_balance += 1;
                field[b].first_seat_balance -= 1;
            }
            if let PairingStatus::Done { points, .. } = &g.state {
                for (s, &e) in g.seats.iter().enumerate() {
                    field[e].points += points.get(s).copied().unwrap_or(0.0);
                }
            }
        }
        field
    }

    /// Appends planned games, numbered on.
    pub fn push_planned(&mut self, planned: Vec<Planned>) {
        for p in planned {
            let number = self.games.len() as u32 + 1;
            self.games.push(GameDoc {
                number,
                round: p.round,
                seats: p.seats,
                opening: p.opening,
                state: PairingStatus::Pending,
            });
        }
    }

    /// Games in progress.
    pub fn playing(&self) -> usize {
        self.games
            .iter()
            .filter(|g| matches!(g.state, PairingStatus::Playing { .. }))
            .count()
    }

    /// The concurrency in force: the spec's, or by default one game per
    /// table a round seats (entrants / seats, at least 1), so that in a
    /// round robin each entrant plays about one game at a time and an SPRT
    /// stops without a flood of games already started.
    pub fn effective_concurrency(&self) -> usize {
        if self.concurrency > 0 {
            return self.concurrency as usize;
        }
        (self.entrants.len() / self.table.max(2)).max(1)
    }
}

/// Why a tournament document cannot be stored, read back or rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum DocError {
    /// It is not (or cannot be written as) the JSON of a tournament.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Its seeds cannot be sealed or unsealed.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// Its rules header or an opening does not read as a record.
    #[error("{}", .0.message)]
    Record(RecordError),
    /// Its clock mode is none the server knows.
    #[error("unknown clock mode `{0}`")]
    ClockMode(String),
    /// An opening's seed is not 64 hex digits.
    #[error("the seed is not 64 hex digits")]
    Seed,
}

/// The stored row of `doc`.
pub fn row_of(doc: &Doc, secret: &ServerSecret) -> Result<TournamentRow, DocError> {
    let mut value = serde_json::to_value(doc)?;
    secret.seal_document_seeds(&mut value)?;
    Ok(TournamentRow {
        id: doc.id.clone(),
        status: doc.status.name().to_string(),
        document: serde_json::to_string(&value)?,
        created_at_ms: doc.created_ms,
    })
}

/// The document of stored `row`, its seeds unsealed with `secret`.
pub fn doc_of(row: &TournamentRow, secret: &ServerSecret) -> Result<Doc, DocError> {
    let mut value: serde_json::Value = serde_json::from_str(&row.document)?;
    secret.unseal_document_seeds(&mut value)?;
    Ok(serde_json::from_value(value)?)
}

/// The rules a stored header describes.
pub fn rules_of(catalog: &Catalog, header: &str) -> Result<GameRules, DocError> {
    let record = format!("{}\n\n", header.trim_end());
    let replayed = catalog
        .import(&record, Some(super::rebuild_setup()))
        .or_else(|_| catalog.import(&record, None))
        .map_err(DocError::Record)?;
    Ok(replayed.game.rules())
}

/// The record header of `rules`.
fn header_of(rules: &GameRules) -> String {
    let setup = rules.rules().seeded().then(super::rebuild_setup);
    rules.rules().start(setup).rules_header()
}

/// Replays a stored opening from the start (its seed's setup), checking it.
pub fn replay_opening(
    catalog: &Catalog,
    header: &str,
    rules: &GameRules,
    opening: &OpeningDoc,
) -> Result<Vec<MoveReport>, DocError> {
    let setup = opening_setup(rules, opening.seed.as_deref())?;
    let mut record = format!("{}\n\n", header.trim_end());
    for m in &opening.moves {
        record.push_str(m);
        record.push('\n');
    }
    if opening.moves.is_empty() {
        return Ok(Vec::new());
    }
    let replayed = catalog.import(&record, setup).map_err(DocError::Record)?;
    Ok(replayed.moves)
}

/// The setup an opening's seed gives (`None` for unseeded rules).
fn opening_setup(rules: &GameRules, seed: Option<&str>) -> Result<Option<Setup>, DocError> {
    match seed {
        Some(hex) => {
            let seed = crate::games::parse_seed(hex).ok_or(DocError::Seed)?;
            Ok(Some(Setup {
                seed,
                supplied: true,
            }))
        }
        None if rules.rules().seeded() => Ok(None),
        None => Ok(None),
    }
}

/// A new entrant of `doc` named `name` (checked), and its key.
pub fn new_entrant(
    doc: &Doc,
    name: &str,
    field: &str,
) -> Result<(EntrantDoc, String), TournamentError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        return Err(TournamentError::invalid(
            field,
            "1 to 64 letters, digits, `_`, `-` or `.` expected",
        ));
    }
    if doc.entrants.iter().any(|e| e.name == name) {
        return Err(TournamentError::precondition(
            "DUPLICATE_ENTRANT",
            format!("an entrant is already named `{name}`"),
        ));
    }
    if doc.entrants.len() >= super::MAX_ENTRANTS {
        return Err(TournamentError::LimitReached {
            what: "entrants",
            max: super::MAX_ENTRANTS,
        });
    }
    let (key, hash) = super::new_key();
    Ok((
        EntrantDoc {
            name: name.to_string(),
            key_sha256: hash,
        },
        key,
    ))
}

/// Schedules `doc` for its start: the fixed schedule (or the first Swiss
/// round), the rounds, the start time.
pub fn schedule_start(doc: &mut Doc, openings: usize) -> Result<(), TournamentError> {
    let entrants = doc.entrants.len();
    if entrants < 2 {
        return Err(TournamentError::precondition(
            "NOT_ENOUGH_ENTRANTS",
            format!("a tournament needs at least two entrants (it has {entrants})"),
        ));
    }
    schedule::check(doc.format, entrants, doc.table)
        .map_err(|e| TournamentError::precondition("UNSCHEDULABLE", e.to_string()))?;
    let meeting = super::meeting_of(doc, openings);
    // Counted before it is built: a schedule past the limit is refused
    // without allocating it.
    if schedule::game_count(doc.format, entrants, meeting) > MAX_GAMES as u128 {
        return Err(TournamentError::LimitReached {
            what: "tournament_games",
            max: MAX_GAMES,
        });
    }
    let planned = schedule::fixed(doc.format, entrants, meeting)
        .map_err(|e| TournamentError::precondition("UNSCHEDULABLE", e.to_string()))?;
    doc.rounds = schedule::round_count(doc.format, &planned);
    doc.push_planned(planned);
    if matches!(doc.format, Format::Swiss { .. }) {
        next_swiss_round(doc, openings);
    }
    doc.status = TournamentStatus::Running;
    doc.started_ms = storage::unix_ms(std::time::SystemTime::now());
    Ok(())
}

/// Pairs the next Swiss round onto `doc`, if rounds are left; whether one
/// was paired.
pub fn next_swiss_round(doc: &mut Doc, openings: usize) -> bool {
    let played = doc.games.iter().map(|g| g.round).max().unwrap_or(0);
    if played >= doc.rounds {
        return false;
    }
    let round = played + 1;
    let (pairs, bye) = schedule::swiss_round(&doc.swiss_field());
    let meeting = super::meeting_of(doc, openings);
    let planned: Vec<Planned> = pairs
        .iter()
        .flat_map(|pair| schedule::meeting_games(round, pair, meeting))
        .collect();
    doc.push_planned(planned);
    if let Some(e) = bye {
        let number = doc.games.len() as u32 + 1;
        doc.games.push(GameDoc {
            number,
            round,
            seats: vec![e],
            opening: None,
            state: PairingStatus::Bye,
        });
    }
    true
}

/// A JSON value that a stored document contains (`jsonb` containment)
/// exactly when one of its entrants' keys hashes to `key_sha256` (hex): how
/// a replica finds the tournament of a key it has not seen.
pub fn key_fragment(key_sha256: &str) -> String {
    serde_json::json!({ "entrants": [{ "key_sha256": key_sha256 }] }).to_string()
}

/// A finished game's result for the standings: the game's point shared by
/// its winners.
pub fn done(
    game_id: String,
    seats: usize,
    winners: Vec<usize>,
    reason: String,
    ply: u32,
) -> PairingStatus {
    PairingStatus::Done {
        game_id,
        points: standings::seat_points(seats, &winners),
        winners,
        reason,
        ply,
        substituted: Vec::new(),
    }
}

#[cfg(test)]
mod clock_doc_tests {
    use std::time::Duration;

    use super::*;

    /// A tournament's games keep the lag compensation of its clock after
    /// a restart: the stored document carries it, and a document without
    /// it (as written before) reads as no compensation.
    #[test]
    fn a_tournament_clock_keeps_its_lag_compensation_in_its_document() {
        let tc = TimeControl {
            mode: ClockMode::PerMove {
                per_move: Duration::from_millis(500),
            },
            first_move: Some(Duration::from_secs(30)),
            lag: Some(LagCompensation {
                max_per_move_ms: 200,
                quota_ms: 5_000,
            }),
        };
        let json = serde_json::to_string(&ClockDoc::of(&tc)).unwrap();
        let back: ClockDoc = serde_json::from_str(&json).unwrap();
        assert_eq!(back.time_control().unwrap(), tc);
        let plain = TimeControl { lag: None, ..tc };
        let json = serde_json::to_string(&ClockDoc::of(&plain)).unwrap();
        assert!(!json.contains("lag"), "{json}");
        let back: ClockDoc = serde_json::from_str(&json).unwrap();
        assert_eq!(back.time_control().unwrap(), plain);
    }
}
