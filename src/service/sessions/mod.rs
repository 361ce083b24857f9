//! The session layer: games being refereed, whatever the game.
//!
//! A [`SessionStore`] maps game ids to [`Session`]s. A session holds one game
//! behind the game-agnostic [`Game`](crate::games::Game) trait, one token per
//! seat, the numbered event log and the broadcast channel watchers listen
//! on. It enforces whose turn it is, optimistic concurrency (`expected_ply`),
//! idempotent retries (`request_id`) and the referee actions (resign, draw,
//! abort, claim victory). Timed games carry a [`Clock`] and a timer task that
//! ends them on time; players' open watches make their seats present
//! (docs/CLOCKS.md). A seeded game's seed is drawn here from a cryptographic
//! RNG (or taken from the creator), kept private, and shown only once the
//! game is over. The store enforces the limits and drops expired games.
//!
//! No gRPC, no PÜNCT: the API layer above converts protobuf to the neutral
//! types of [`crate::games`], and maps [`SessionError`] to status codes.

mod clock;
mod presence;
mod session;
mod token;
mod watch;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use rand::TryRng as _;

use crate::games::{
    self, Catalog, Ending, GameRules, MoveError, MoveInput, MoveReport, RecordError, Replayed,
    Seat, SeatSet, Setup,
};
use crate::service::storage::{
    self, ArchiveQuery, ClockRow, GameRow, ListKey, MoveRow, Storage, StoredGame, Write,
};
use crate::service::telemetry;

pub use clock::{
    Clock, ClockMode, ClockReading, Expiry, MAX_CLOCK_TIME, MAX_INCREMENT, MoveStamp, TimeControl,
};
pub use presence::{PresenceSlot, SeatPresence};
pub use session::{Event, EventKind, GameView, MoveReceipt, Role, Session, SetupView, TimeView};
use session::{Fingerprint, Receipts, SessionInit};
pub use token::{Token, TokenHash};
pub use watch::{Watch, WatchItem};

/// A game's id: 32 lower-case hex digits. The first 16 are a stamp that
/// grows with each id a process makes (the creation time in Unix
/// milliseconds, shifted left 16 bits, plus a counter within the
/// millisecond), the last 16 are random: ids sort in creation order, so
/// listings sorted by creation time and then id keep the order games were
/// created in even within one millisecond, and ids of different processes
/// (replicas) do not collide.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameId(String);

impl GameId {
    /// A fresh id, later than every id this process made before.
    pub fn random() -> GameId {
        static LAST: AtomicU64 = AtomicU64::new(0);
        let now = u64::try_from(storage::unix_ms(std::time::SystemTime::now())).unwrap_or(0) << 16;
        let previous = LAST
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(now.max(last.wrapping_add(1)))
            })
            .unwrap_or(0);
        let stamp = now.max(previous.wrapping_add(1));
        GameId(format!("{stamp:016x}{:016x}", rand::random::<u64>()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Looked up by the id a caller sent, without copying it (hashes and
/// compares as its string, as the derived `Hash` and `Eq` do).
impl std::borrow::Borrow<str> for GameId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The limits of a store. Every one has a default (see [`Limits::default`]).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most sessions held at once (finished ones count until they expire).
    pub max_sessions: usize,
    /// Most watchers of one game at once.
    pub max_watchers_per_game: usize,
    /// How long a finished game stays readable.
    pub finished_ttl: Duration,
    /// How long a game with no move or action stays.
    pub idle_ttl: Duration,
    /// Events buffered per game for watchers; a watcher further behind is
    /// resynchronised with a fresh snapshot.
    pub watch_buffer: usize,
    /// How long a seat of a game with a clock must have been without an
    /// open stream before its opponent may claim the win (`ABANDONED`).
    pub abandon_after: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: 10_000,
            max_watchers_per_game: 64,
            finished_ttl: Duration::from_secs(3600),
            idle_ttl: Duration::from_secs(24 * 3600),
            watch_buffer: 64,
            abandon_after: Duration::from_secs(60),
        }
    }
}

/// Most labels on one game.
pub const MAX_LABELS: usize = 16;
/// Longest label key.
pub const MAX_LABEL_KEY: usize = 63;
/// Longest label value.
pub const MAX_LABEL_VALUE: usize = 256;
/// Longest request id.
pub const MAX_REQUEST_ID: usize = 128;
/// Largest page of a listing.
pub const MAX_PAGE_SIZE: usize = 500;
/// Finished games read back from storage held in memory at once, by
/// default; past it, the longest held is dropped (it stays in storage).
pub const DEFAULT_ARCHIVE_CAP: usize = 1024;
/// Page size when none is asked for.
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// Why a session call was refused. A refused call changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Some input is malformed; `field` names it.
    #[error("{field}: {description}")]
    InvalidArgument {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        description: String,
    },
    /// No game has this id (or it expired).
    #[error("no game `{}`", crate::service::echo::echo(.0))]
    NotFound(String),
    /// No seat token was given (`TOKEN_MISSING`), or it is not a token at all
    /// (`TOKEN_MALFORMED`).
    #[error("{message}")]
    Unauthenticated {
        /// `TOKEN_MISSING` or `TOKEN_MALFORMED`.
        reason: &'static str,
        /// A readable sentence.
        message: &'static str,
    },
    /// The token is no seat of this game.
    #[error("this token is no seat of game `{}`", crate::service::echo::echo(.0))]
    PermissionDenied(String),
    /// The move or action breaks a rule, or the input is not a move of this
    /// game (see [`MoveError`]).
    #[error(transparent)]
    Rejected(#[from] MoveError),
    /// The move answers a ply that is no longer current.
    #[error("the move answers ply {expected} but the game is at ply {current}")]
    StalePly {
        /// The ply the client answered.
        expected: u32,
        /// The game's ply.
        current: u32,
    },
    /// A requested point lies beyond the game.
    #[error("ply {asked} is beyond the game's ply {current}")]
    OutOfRange {
        /// The request field that asked for it (`from_ply`, `ply`).
        field: &'static str,
        /// The ply asked for.
        asked: u32,
        /// The game's ply.
        current: u32,
    },
    /// A game record could not be read or replayed.
    #[error("record: {0}")]
    Record(RecordError),
    /// Storage failed: the change was not made (neither stored nor applied).
    #[error("the change could not be stored, so it was not made: {0}")]
    Unavailable(String),
    /// Another replica owns the game now (its lease was taken over): nothing
    /// was changed here; the call is to be made again, and reaches the
    /// owner (docs/CLUSTER.md).
    #[error("game `{}` moved to another replica; call again (watchers: resume with from_ply)", crate::service::echo::echo(.0))]
    Moved(String),
    /// A server limit was reached.
    #[error("{what} limit reached ({max})")]
    LimitReached {
        /// Which limit (`sessions`, `watchers_per_game`).
        what: &'static str,
        /// Its value.
        max: usize,
    },
}

/// Filter and page of [`SessionStore::list`].
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only finished (`Some(true)`) or in-progress (`Some(false)`) games.
    pub finished: Option<bool>,
    /// Only games with all these labels.
    pub labels: BTreeMap<String, String>,
    /// Page size (0 = default).
    pub page_size: usize,
    /// The previous page's `next_page_token`, or empty.
    pub page_token: String,
}

/// Where a stateless adjudication starts from.
#[derive(Debug, Clone)]
pub enum History {
    /// A game record text.
    Record(String),
    /// Rules and moves (and the seed, for a seeded game).
    Moves(GameRules, Option<[u8; 32]>, Vec<MoveInput>),
}

/// The answer of [`validate_move`].
#[derive(Debug, Clone)]
pub struct Adjudication {
    /// The seat to move after the history (`None` once it is over).
    pub seat: Option<Seat>,
    /// The move as it would be played, or why it cannot be.
    pub result: Result<MoveReport, MoveError>,
}

/// Stateless adjudication: is `mv` legal after `history`, and what would it
/// do? An illegal candidate is an answer (in `result`); a bad history is an
/// error. No session is created. Records are read with the games of this
/// build ([`SessionStore::validate_move`] uses the store's catalog).
pub fn validate_move(history: History, mv: &MoveInput) -> Result<Adjudication, SessionError> {
    validate_move_in(&Catalog::default(), history, mv)
}

/// [`validate_move`] with the games of `catalog`. A record of an unfinished
/// seeded game is refused (`SEED_NOT_REVEALED`): replaying it would need its
/// secret seed.
fn validate_move_in(
    catalog: &Catalog,
    history: History,
    mv: &MoveInput,
) -> Result<Adjudication, SessionError> {
    let replayed = match history {
        History::Record(text) => catalog.import(&text, None).map_err(SessionError::Record)?,
        History::Moves(rules, seed, moves) => {
            let setup = setup_for(&rules, seed, "moves.seed")?;
            games::replay_moves(&rules, setup, &moves).map_err(|(i, e)| {
                SessionError::InvalidArgument {
                    field: "moves",
                    description: format!("move {} cannot be played: {e}", i + 1),
                }
            })?
        }
    };
    let mut game = replayed.game;
    let seat = game.to_move();
    let result = match game.play(mv) {
        Err(MoveError::Malformed { field, description }) => {
            return Err(SessionError::InvalidArgument { field, description });
        }
        other => other,
    };
    Ok(Adjudication { seat, result })
}

/// All sessions of a server, and the storage that keeps them.
#[derive(Debug)]
pub struct SessionStore {
    sessions: DashMap<GameId, Arc<Session>>,
    limits: Limits,
    storage: Arc<dyn Storage>,
    /// Sessions held or being created; reserved before insertion so that the
    /// limit holds under concurrent creation.
    count: AtomicUsize,
    serial: AtomicU64,
    /// The games it can import and recover.
    catalog: Catalog,
    /// Finished games read back from storage and held, oldest first; not
    /// counted in `count`.
    archive: Mutex<VecDeque<GameId>>,
    archive_cap: usize,
    /// In a cluster: games in progress elsewhere are followed, not refused.
    follow_remote: std::sync::atomic::AtomicBool,
}

impl SessionStore {
    /// An empty store with `limits`, keeping games in memory only.
    pub fn new(limits: Limits) -> SessionStore {
        SessionStore::with_storage(limits, Arc::new(storage::Volatile))
    }

    /// An empty store with `limits` that writes through `storage`; call
    /// [`SessionStore::recover`] to load the games storage holds.
    pub fn with_storage(limits: Limits, storage: Arc<dyn Storage>) -> SessionStore {
        SessionStore {
            sessions: DashMap::new(),
            limits,
            storage,
            count: AtomicUsize::new(0),
            serial: AtomicU64::new(0),
            catalog: Catalog::default(),
            archive: Mutex::new(VecDeque::new()),
            archive_cap: DEFAULT_ARCHIVE_CAP,
            follow_remote: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The store, holding at most `cap` finished games read back from
    /// storage at once (at least 1).
    pub fn with_archive_cap(mut self, cap: usize) -> SessionStore {
        self.archive_cap = cap.max(1);
        self
    }

    /// The store, knowing the games of `catalog` (imports and recovery):
    /// how tests serve games of their own.
    pub fn with_catalog(mut self, catalog: Catalog) -> SessionStore {
        self.catalog = catalog;
        self
    }

    /// Stateless adjudication with the games this store serves (see
    /// [`validate_move`]).
    pub fn validate_move(
        &self,
        history: History,
        mv: &MoveInput,
    ) -> Result<Adjudication, SessionError> {
        validate_move_in(&self.catalog, history, mv)
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The storage in use.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Creates an untimed game; returns it and the seat tokens, in seat
    /// order.
    pub async fn create(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        self.create_timed(rules, labels, TimeControl::default(), None)
            .await
    }

    /// Creates a game with a time control; its clock (or first-move
    /// deadline) starts now, and a timer task ends the game when it runs out
    /// (call within a tokio runtime). A seeded game is set up from `seed`
    /// when the creator gives one (and the game allows it), else from a
    /// seed drawn here.
    pub async fn create_timed(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seed: Option<[u8; 32]>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        let seating = Seating {
            tokens: &|_, _| Token::random(),
            forfeits: false,
        };
        self.create_seated(rules, labels, time_control, seed, seating)
            .await
    }

    /// [`SessionStore::create_timed`] seated as `seating` says: how a
    /// tournament derives its seats' tokens from the server secret (so that
    /// it can hand them out again without storing them) and makes a seat's
    /// abort or missed first move its loss.
    pub async fn create_seated(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seed: Option<[u8; 32]>,
        seating: Seating<'_>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        check_labels(&labels)?;
        time_control.check()?;
        let setup = new_setup(&rules, seed)?;
        let replayed = Replayed {
            game: rules.rules().start(setup),
            moves: Vec::new(),
            tags: Vec::new(),
        };
        self.insert(replayed, labels, time_control, seating).await
    }

    /// Creates a game from a record, replayed and checked move by move. The
    /// record's free tags become labels; `labels` win over them.
    pub async fn import(
        &self,
        record: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        check_labels(&labels)?;
        let replayed = self
            .catalog
            .import(record, None)
            .map_err(SessionError::Record)?;
        let mut all: BTreeMap<String, String> = replayed.tags.iter().cloned().collect();
        all.extend(labels);
        check_labels(&all)?;
        let seating = Seating {
            tokens: &|_, _| Token::random(),
            forfeits: false,
        };
        self.insert(replayed, all, TimeControl::default(), seating)
            .await
    }

    /// Stores, then holds, a new session. The game is stored before its
    /// tokens are handed out; a storage failure creates nothing.
    async fn insert(
        &self,
        replayed: Replayed,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seating: Seating<'_>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        let reservation = self.reserve()?;
        let seats = replayed.game.seat_names().len();
        let id = GameId::random();
        let tokens: Vec<Token> = (0..seats).map(|seat| (seating.tokens)(&id, seat)).collect();
        let created_at = std::time::SystemTime::now();
        let mut write =
            self.create_write(&id, &replayed, &labels, &tokens, time_control, created_at);
        if let Write::Create(row, _, _) = &mut write {
            row.forfeits = seating.forfeits;
        }
        let session = Arc::new(Session::new(
            SessionInit {
                id,
                serial: self.serial.fetch_add(1, Ordering::SeqCst) + 1,
                labels,
                forfeits: seating.forfeits,
                token_hashes: tokens.iter().map(Token::hash).collect(),
                // Moved, not copied: a copy has room for one more move
                // (for deciding moves on), which an idle game would keep.
                game: replayed.game,
                history: &replayed.moves,
                time_control,
                created_at,
                clock: None,
                receipts: Receipts::new(),
                draw_offers: SeatSet::EMPTY,
                storage: self.storage.clone(),
                // A new game's lease is the first epoch.
                lease: Some(1),
                follower: false,
                archived: false,
            },
            &self.limits,
        ));
        // The write runs to its end even if the caller goes away, so what is
        // stored is also held.
        let storage = self.storage.clone();
        let stored = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .spawn(storage.write(write))
                .await
                .unwrap_or_else(|e| Err(storage::StorageError::Unavailable(e.to_string()))),
            Err(_) => storage.write(write).await,
        };
        if let Err(e) = stored {
            tracing::warn!(error = %e, "game not created: storage failed");
            metrics::counter!(telemetry::STORAGE_FAILURES).increment(1);
            return Err(SessionError::Unavailable(e.to_string()));
        }
        reservation.keep();
        self.hold(session.clone());
        Ok((session, tokens))
    }

    /// Takes a place under the session limit (given back unless kept).
    fn reserve(&self) -> Result<Reservation<'_>, SessionError> {
        let max = self.limits.max_sessions;
        if self.count.fetch_add(1, Ordering::SeqCst) >= max {
            self.count.fetch_sub(1, Ordering::SeqCst);
            return Err(SessionError::LimitReached {
                what: "sessions",
                max,
            });
        }
        Ok(Reservation(Some(&self.count)))
    }

    /// The storage row of a new game and the moves it was imported with.
    fn create_write(
        &self,
        id: &GameId,
        replayed: &Replayed,
        labels: &BTreeMap<String, String>,
        tokens: &[Token],
        time_control: TimeControl,
        created_at: std::time::SystemTime,
    ) -> Write {
        let rules = replayed.game.rules();
        let created_at_ms = storage::unix_ms(created_at);
        let game = GameRow {
            id: id.to_string(),
            game: rules.game_name().to_string(),
            variant: rules.variant_name().to_string(),
            options: replayed.game.rules_header(),
            seats: replayed
                .game
                .seat_names()
                .iter()
                .zip(tokens)
                .map(|(name, token)| storage::SeatRow {
                    name: (*name).to_string(),
                    token_sha256: token.hash().0,
                })
                .collect(),
            setup: replayed.game.setup(),
            clock: clock_row(time_control),
            labels: labels.clone(),
            forfeits: false,
            created_at_ms,
        };
        let moves = replayed
            .moves
            .iter()
            .map(|r| MoveRow {
                game_id: id.to_string(),
                ply: r.ply,
                seat: r.seat,
                notation: r.detail.notation.clone(),
                request_id: None,
                clock_ms: 0,
                played_at_ms: created_at_ms,
                draw_offers: SeatSet::EMPTY,
            })
            .collect();
        let end = replayed.game.verdict().map(|v| storage::EndRow {
            game_id: id.to_string(),
            status: "finished",
            winners: v.winners,
            scores: v.scores.clone(),
            reason: v.reason.to_string(),
            ply: replayed.game.ply(),
            at_ms: created_at_ms,
        });
        Write::Create(game, moves, end)
    }

    /// Puts a session in the map, starts its timer, logs and counts it
    /// (its moves so far were imported or recovered).
    fn hold(&self, session: Arc<Session>) {
        // 128 random bits do not collide.
        self.sessions.insert(session.id().clone(), session.clone());
        session.start_timer();
        let view = session.view(false);
        let rules = view.rules;
        let finished = view.verdict.is_some();
        tracing::Span::current().record("game_id", session.id().as_str());
        tracing::info!(
            game_id = %session.id(),
            game = rules.game_name(),
            variant = rules.variant_name(),
            imported_moves = view.ply,
            finished,
            "game created"
        );
        metrics::counter!(
            telemetry::GAMES_CREATED,
            "game" => rules.game_name(),
            "variant" => rules.variant_name(),
        )
        .increment(1);
        metrics::gauge!(telemetry::SESSIONS_ACTIVE).increment(1.0);
        if !finished {
            metrics::gauge!(telemetry::GAMES_IN_PROGRESS).increment(1.0);
        }
    }

    /// Loads every unfinished game storage holds, replaying its moves
    /// through the engine, and serves it as before: same id, same tokens,
    /// request-id retries still answered, the clock rebuilt from the move
    /// times (the time the service was down is not charged). Call once, at
    /// start, within the runtime. A stored game that does not replay is an
    /// error naming it: nothing is dropped silently.
    pub fn recover(&self) -> Result<usize, SessionError> {
        let stored = self
            .storage
            .recover()
            .map_err(|e| SessionError::Unavailable(e.to_string()))?;
        let n = stored.len();
        for game in stored {
            let id = game.game.id.clone();
            let session = self.rebuild(game, false, Duration::ZERO).map_err(|e| {
                SessionError::Unavailable(format!("stored game `{id}` cannot be recovered: {e}"))
            })?;
            self.count.fetch_add(1, Ordering::SeqCst);
            self.hold(session);
        }
        Ok(n)
    }

    /// A session from a stored game: an unfinished one to play on, or
    /// (`archived`) a finished one to read, its ending restored.
    fn rebuild(
        &self,
        stored: StoredGame,
        archived: bool,
        charged: Duration,
    ) -> Result<Arc<Session>, String> {
        self.rebuild_as(stored, archived, false, charged)
    }

    /// The stored game replayed: the game, each ply's report, the stored
    /// moves (a finished game gets its stored ending).
    fn replay(&self, stored: &StoredGame, ended: bool) -> Result<Replayed, String> {
        let mut record = stored.game.options.trim_end().to_string();
        record.push_str("\n\n");
        for m in &stored.moves {
            record.push_str(&m.notation);
            record.push('\n');
        }
        let mut replayed = self
            .catalog
            .import(&record, stored.game.setup)
            .map_err(|e| e.to_string())?;
        if replayed.moves.len() != stored.moves.len() {
            return Err(format!(
                "{} stored moves replay to {} moves",
                stored.moves.len(),
                replayed.moves.len()
            ));
        }
        if ended && let Some(end) = &stored.end {
            restore_ending(&mut replayed, end)?;
        }
        Ok(replayed)
    }

    /// Holds a copy of a game in progress that another replica owns, for
    /// its watchers here (docs/CLUSTER.md, "Watchers on any replica"): not
    /// counted against the session limit, no timer, no writes; the cluster
    /// feeds it ([`SessionStore::catch_up`]) when the database says the game
    /// changed. A game held already is given as it is.
    pub fn follow(&self, stored: StoredGame) -> Result<Arc<Session>, SessionError> {
        if let Ok(held) = self.get(&stored.game.id) {
            return Ok(held);
        }
        let id = stored.game.id.clone();
        let session = self
            .rebuild_as(stored, false, true, Duration::ZERO)
            .map_err(|e| {
                SessionError::Unavailable(format!("stored game `{id}` cannot be followed: {e}"))
            })?;
        use dashmap::mapref::entry::Entry;
        Ok(match self.sessions.entry(session.id().clone()) {
            Entry::Occupied(held) => held.get().clone(),
            Entry::Vacant(slot) => {
                slot.insert(session.clone());
                session
            }
        })
    }

    /// Brings the follower `session` up to `stored`, the game as the
    /// database has it now.
    pub fn catch_up(&self, session: &Session, stored: &StoredGame) -> Result<(), String> {
        let ended = stored.end.as_ref().is_some_and(|e| e.status == "finished");
        let replayed = self.replay(stored, ended)?;
        // When the last move was made and when the game ended, by the
        // owner's wall clock against this one's.
        let now_ms = storage::unix_ms(std::time::SystemTime::now());
        let ago = |at_ms: i64| Duration::from_millis(now_ms.saturating_sub(at_ms).max(0) as u64);
        let last_ago = ago(stored
            .moves
            .last()
            .map_or(stored.game.created_at_ms, |m| m.played_at_ms));
        let ended_ago = stored.end.as_ref().map_or(Duration::ZERO, |e| ago(e.at_ms));
        let stamps: Vec<MoveStamp> = replayed
            .moves
            .iter()
            .zip(&stored.moves)
            .map(|(report, m)| MoveStamp {
                mover: report.seat,
                next: report.next,
                at: Duration::from_millis(m.clock_ms),
            })
            .collect();
        session.catch_up(
            replayed.game,
            &replayed.moves,
            &stamps,
            stored.draw_offers,
            (last_ago, ended_ago),
        );
        Ok(())
    }

    /// The followers held (copies of games other replicas own).
    pub fn followers(&self) -> Vec<Arc<Session>> {
        self.sessions
            .iter()
            .filter(|e| e.value().follower())
            .map(|e| e.value().clone())
            .collect()
    }

    /// Whether [`SessionStore::find`] follows a game in progress it does
    /// not hold (another replica owns it) instead of refusing it.
    pub fn follow_remote_games(&self) {
        self.follow_remote
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn rebuild_as(
        &self,
        stored: StoredGame,
        archived: bool,
        follower: bool,
        charged: Duration,
    ) -> Result<Arc<Session>, String> {
        let StoredGame {
            game: row,
            moves,
            draw_offers,
            end,
        } = stored;
        let mut record = row.options.trim_end().to_string();
        record.push_str("\n\n");
        for m in &moves {
            record.push_str(&m.notation);
            record.push('\n');
        }
        // The server kept the seed: the record replays with it.
        let mut replayed = self
            .catalog
            .import(&record, row.setup)
            .map_err(|e| e.to_string())?;
        if archived {
            let end = end.ok_or("the stored game has not ended")?;
            if replayed.moves.len() != moves.len() {
                return Err(format!(
                    "{} stored moves replay to {} moves",
                    moves.len(),
                    replayed.moves.len()
                ));
            }
            restore_ending(&mut replayed, &end)?;
        } else if replayed.moves.len() != moves.len() || replayed.game.verdict().is_some() {
            return Err(format!(
                "{} stored moves replay to {} moves{}",
                moves.len(),
                replayed.moves.len(),
                if replayed.game.verdict().is_some() {
                    ", a finished game"
                } else {
                    ""
                }
            ));
        }
        let time_control = time_control_of(&row.clock)?;
        let seats = replayed.game.seat_names().len();
        if row.seats.len() != seats {
            return Err(format!(
                "{} stored seats for a game of {seats}",
                row.seats.len()
            ));
        }
        let clock = {
            let stamps: Vec<MoveStamp> = replayed
                .moves
                .iter()
                .zip(&moves)
                .map(|(report, m)| MoveStamp {
                    mover: report.seat,
                    next: report.next,
                    at: Duration::from_millis(m.clock_ms),
                })
                .collect();
            let first = replayed
                .moves
                .first()
                .map(|r| r.seat)
                .or(replayed.game.to_move())
                .unwrap_or(Seat::FIRST);
            // The turn in progress resumes now, or `charged` earlier.
            let now = tokio::time::Instant::now();
            Clock::restore(
                time_control,
                seats,
                first,
                &stamps,
                now.checked_sub(charged).unwrap_or(now),
            )
        };
        let mut receipts = Receipts::new();
        for (m, report) in moves.iter().zip(&replayed.moves) {
            if let Some(request_id) = &m.request_id {
                receipts.insert(
                    request_id.clone(),
                    (
                        Fingerprint {
                            seat: report.seat,
                            expected_ply: report.ply - 1,
                            played: report.detail.clone(),
                        },
                        MoveReceipt {
                            report: report.clone(),
                            replayed: false,
                        },
                    ),
                );
            }
        }
        Ok(Arc::new(Session::new(
            SessionInit {
                lease: self.storage.lease_of(&row.id),
                id: GameId(row.id),
                serial: self.serial.fetch_add(1, Ordering::SeqCst) + 1,
                labels: row.labels,
                forfeits: row.forfeits,
                token_hashes: row
                    .seats
                    .iter()
                    .map(|s| TokenHash(s.token_sha256))
                    .collect(),
                game: replayed.game,
                history: &replayed.moves,
                time_control,
                created_at: storage::from_unix_ms(row.created_at_ms),
                clock: Some(clock),
                receipts,
                draw_offers,
                storage: self.storage.clone(),
                follower,
                archived,
            },
            &self.limits,
        )))
    }

    /// Holds a game in progress this replica has just taken over from
    /// another (docs/CLUSTER.md): replayed from storage like a recovered
    /// game, its clock resumed with `charged` of the turn in progress
    /// already spent (zero: the takeover gap is credited), and its timer
    /// armed, so a flag that fell meanwhile falls at once. A game already
    /// held is given as it is.
    pub fn adopt(
        &self,
        stored: StoredGame,
        charged: Duration,
    ) -> Result<Arc<Session>, SessionError> {
        if let Ok(held) = self.get(&stored.game.id) {
            return Ok(held);
        }
        let id = stored.game.id.clone();
        let session = self.rebuild(stored, false, charged).map_err(|e| {
            SessionError::Unavailable(format!("stored game `{id}` cannot be taken over: {e}"))
        })?;
        use dashmap::mapref::entry::Entry;
        match self.sessions.entry(session.id().clone()) {
            Entry::Occupied(held) => return Ok(held.get().clone()),
            Entry::Vacant(slot) => {
                slot.insert(session.clone());
            }
        }
        self.count.fetch_add(1, Ordering::SeqCst);
        session.start_timer();
        metrics::gauge!(telemetry::SESSIONS_ACTIVE).increment(1.0);
        if !session.finished() {
            metrics::gauge!(telemetry::GAMES_IN_PROGRESS).increment(1.0);
        }
        Ok(session)
    }

    /// Drops game `id` from memory without writing anything: another
    /// replica owns it now. Its watchers end with `UNAVAILABLE` (`GAME_MOVED`)
    /// and resume elsewhere with `from_ply`. Returns whether it was held.
    pub fn release(&self, id: &str) -> bool {
        let Some((_, session)) = self.sessions.remove(&GameId(id.to_string())) else {
            return false;
        };
        session.move_away();
        if session.follower() {
            return true;
        }
        if session.archived() {
            let mut archive = self.archive.lock().unwrap_or_else(|e| e.into_inner());
            archive.retain(|held| held.as_str() != id);
            return true;
        }
        metrics::gauge!(telemetry::SESSIONS_ACTIVE).decrement(1.0);
        if !session.finished() {
            metrics::gauge!(telemetry::GAMES_IN_PROGRESS).decrement(1.0);
        }
        self.count.fetch_sub(1, Ordering::SeqCst);
        true
    }

    /// Whether game `id` is held in memory (as its owner, or read back).
    pub fn holds(&self, id: &str) -> bool {
        self.sessions.contains_key(&GameId(id.to_string()))
    }

    /// The ids of the games held in progress.
    pub fn in_progress(&self) -> Vec<String> {
        self.sessions
            .iter()
            .filter(|e| !e.value().archived() && !e.value().finished())
            .map(|e| e.key().to_string())
            .collect()
    }

    /// The game with id `id`, held or, once finished and dropped from
    /// memory (after the finished TTL, or a restart), read back from
    /// durable storage and held again for a while.
    pub async fn find(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        match self.get(id) {
            Err(SessionError::NotFound(_))
                if self.storage.durable() && Token::parse(id).is_some() => {}
            held => return held,
        }
        let storage = self.storage.clone();
        let key = id.to_string();
        let stored = tokio::task::spawn_blocking(move || storage.load(&key))
            .await
            .map_err(|e| SessionError::Unavailable(e.to_string()))?
            .map_err(|e| SessionError::Unavailable(e.to_string()))?;
        // In progress but not held: in a cluster, owned by another replica
        // (followed here); else being created (its id is not out yet).
        // Expired: dropped unfinished.
        if let Some(game) = &stored
            && game.end.is_none()
            && self.follow_remote.load(std::sync::atomic::Ordering::SeqCst)
        {
            return self.follow(game.clone());
        }
        let Some(stored) =
            stored.filter(|g| g.end.as_ref().is_some_and(|e| e.status == "finished"))
        else {
            return Err(SessionError::NotFound(id.to_string()));
        };
        let session = self.rebuild(stored, true, Duration::ZERO).map_err(|e| {
            tracing::warn!(game_id = id, error = %e, "stored game cannot be read back");
            SessionError::Unavailable(format!("stored game `{id}` cannot be read back: {e}"))
        })?;
        Ok(self.hold_archived(session))
    }

    /// A picture of game `id` (without its state), whoever holds it: the
    /// held game's view, else the stored game replayed as a listing shows
    /// it (a game another replica owns, or finished and not held); nothing
    /// is held by it.
    pub async fn peek(&self, id: &str) -> Result<GameView, SessionError> {
        match self.get(id) {
            Err(SessionError::NotFound(_))
                if self.storage.durable() && Token::parse(id).is_some() => {}
            held => return held.map(|s| s.view(false)),
        }
        let storage = self.storage.clone();
        let key = id.to_string();
        let stored = tokio::task::spawn_blocking(move || storage.load(&key))
            .await
            .map_err(|e| SessionError::Unavailable(e.to_string()))?
            .map_err(|e| SessionError::Unavailable(e.to_string()))?;
        let Some(stored) = stored.filter(|g| g.end.as_ref().is_none_or(|e| e.status == "finished"))
        else {
            return Err(SessionError::NotFound(id.to_string()));
        };
        let session = self.rebuild_listed(stored).map_err(|e| {
            SessionError::Unavailable(format!("stored game `{id}` cannot be read back: {e}"))
        })?;
        Ok(session.view(false))
    }

    /// Holds a finished game read back from storage (or gives the one
    /// another call held first), dropping the longest held past the cap.
    fn hold_archived(&self, session: Arc<Session>) -> Arc<Session> {
        use dashmap::mapref::entry::Entry;
        match self.sessions.entry(session.id().clone()) {
            Entry::Occupied(held) => return held.get().clone(),
            Entry::Vacant(slot) => {
                slot.insert(session.clone());
            }
        }
        metrics::counter!(telemetry::GAMES_LOADED).increment(1);
        let mut archive = self.archive.lock().unwrap_or_else(|e| e.into_inner());
        archive.push_back(session.id().clone());
        while archive.len() > self.archive_cap {
            let Some(oldest) = archive.pop_front() else {
                break;
            };
            if let Some((_, dropped)) = self.sessions.remove_if(&oldest, |_, s| s.archived()) {
                dropped.close();
            }
        }
        session
    }

    /// The game with id `id`. The id goes on the call's span.
    pub fn get(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        // A game id is 32 characters; longer input is not worth a span field.
        if id.len() <= 64 {
            tracing::Span::current().record("game_id", id);
        }
        self.sessions
            .get(id)
            .map(|s| s.value().clone())
            .ok_or_else(|| SessionError::NotFound(id.to_string()))
    }

    /// A page of games, oldest first (by creation time, then id), filtered:
    /// the games held, and with durable storage the finished games it keeps
    /// that are no longer held.
    pub async fn list(&self, query: &ListQuery) -> Result<(Vec<GameView>, String), SessionError> {
        let after = if query.page_token.is_empty() {
            None
        } else {
            Some(parse_page_token(&query.page_token).ok_or_else(|| {
                SessionError::InvalidArgument {
                    field: "page_token",
                    description: "not a token returned by ListGames".into(),
                }
            })?)
        };
        let size = match query.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        let mut held: Vec<(ListKey, Arc<Session>)> = self
            .sessions
            .iter()
            .map(|e| (e.value().list_key(), e.value().clone()))
            .filter(|(key, _)| after.as_ref().is_none_or(|a| key > a))
            .filter(|(_, s)| {
                query
                    .labels
                    .iter()
                    .all(|(k, v)| s.labels().get(k) == Some(v))
            })
            .collect();
        held.sort_by(|a, b| a.0.cmp(&b.0));
        // One more than a page, to know whether another follows.
        let mut found: Vec<(ListKey, Listed)> = Vec::with_capacity(size + 1);
        for (key, s) in held {
            let view = s.view(false);
            if query.finished.is_some_and(|f| f != view.verdict.is_some()) {
                continue;
            }
            found.push((key, Listed::Held(Box::new(view))));
            if found.len() > size {
                break;
            }
        }
        if self.storage.shared() {
            // A cluster's database: the games in progress other replicas
            // own are there too. The first page-and-one of the stored games
            // and of the held ones hold the first page-and-one of both.
            for g in self
                .stored_games(after, &query.labels, query.finished, size + 1)
                .await?
            {
                found.push((g.key(), Listed::Stored(Box::new(g))));
            }
        } else if self.storage.durable() && query.finished != Some(false) {
            for g in self.stored_finished(after, &query.labels, size + 1).await? {
                found.push((g.key(), Listed::Stored(Box::new(g))));
            }
        }
        // A game dropped from memory while this ran is found in both: keep
        // the held copy.
        found.sort_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                matches!(a.1, Listed::Stored(_)).cmp(&matches!(b.1, Listed::Stored(_)))
            })
        });
        found.dedup_by(|later, first| later.0 == first.0);
        let more = found.len() > size;
        found.truncate(size);
        let next = match (more, found.last()) {
            (true, Some((key, _))) => format!("{}.{}", key.created_at_ms, key.id),
            _ => String::new(),
        };
        let mut page = Vec::with_capacity(found.len());
        for (key, listed) in found {
            match listed {
                Listed::Held(view) => page.push(*view),
                Listed::Stored(g) => match self.rebuild_listed(*g) {
                    Ok(session) => page.push(session.view(false)),
                    Err(e) => {
                        tracing::warn!(game_id = key.id, error = %e, "stored game cannot be read back");
                    }
                },
            }
        }
        Ok((page, next))
    }

    /// Up to `limit` games from a shared store (in progress, finished, or
    /// either), after `after`, with all of `labels`; held ones included
    /// (the listing keeps the held copy).
    async fn stored_games(
        &self,
        after: Option<ListKey>,
        labels: &BTreeMap<String, String>,
        finished: Option<bool>,
        limit: usize,
    ) -> Result<Vec<StoredGame>, SessionError> {
        let query = ArchiveQuery {
            after,
            labels: labels.clone(),
            limit,
        };
        let storage = self.storage.clone();
        tokio::task::spawn_blocking(move || storage.list_games(&query, finished))
            .await
            .map_err(|e| SessionError::Unavailable(e.to_string()))?
            .map_err(|e| SessionError::Unavailable(e.to_string()))
    }

    /// A stored game as a listing shows it, replayed: a finished one with
    /// its ending; one in progress (owned by another replica) with its
    /// clock run on from its last stored move by the wall clock, as its
    /// owner's clock runs.
    fn rebuild_listed(&self, stored: StoredGame) -> Result<Arc<Session>, String> {
        if stored.end.is_some() {
            return self.rebuild(stored, true, Duration::ZERO);
        }
        let last_ms = stored
            .moves
            .last()
            .map_or(stored.game.created_at_ms, |m| m.played_at_ms);
        let now_ms = storage::unix_ms(std::time::SystemTime::now());
        let running = Duration::from_millis(u64::try_from(now_ms - last_ms).unwrap_or(0));
        self.rebuild(stored, false, running)
    }

    /// Up to `limit` finished games from storage after `after` with all of
    /// `labels`, leaving out those held (they are listed as held).
    async fn stored_finished(
        &self,
        after: Option<ListKey>,
        labels: &BTreeMap<String, String>,
        limit: usize,
    ) -> Result<Vec<StoredGame>, SessionError> {
        let mut out = Vec::new();
        let mut cursor = after;
        loop {
            let query = ArchiveQuery {
                after: cursor.clone(),
                labels: labels.clone(),
                limit,
            };
            let storage = self.storage.clone();
            let batch = tokio::task::spawn_blocking(move || storage.list_finished(&query))
                .await
                .map_err(|e| SessionError::Unavailable(e.to_string()))?
                .map_err(|e| SessionError::Unavailable(e.to_string()))?;
            let full = batch.len() == limit;
            for g in batch {
                cursor = Some(g.key());
                if !self.sessions.contains_key(&GameId(g.game.id.clone())) {
                    out.push(g);
                }
            }
            if out.len() >= limit || !full {
                out.truncate(limit);
                return Ok(out);
            }
        }
    }

    /// Deletes from storage the finished and expired games that left play
    /// more than `retain` ago (see [`Storage::prune`]); returns how many.
    pub async fn prune(&self, retain: Duration) -> Result<u64, SessionError> {
        let cutoff = storage::unix_ms(std::time::SystemTime::now())
            .saturating_sub(i64::try_from(retain.as_millis()).unwrap_or(i64::MAX));
        let storage = self.storage.clone();
        let pruned = tokio::task::spawn_blocking(move || storage.prune(cutoff))
            .await
            .map_err(|e| SessionError::Unavailable(e.to_string()))?
            .map_err(|e| SessionError::Unavailable(e.to_string()))?;
        if pruned > 0 {
            tracing::info!(pruned, "finished games pruned from storage");
            metrics::counter!(telemetry::GAMES_PRUNED).increment(pruned);
        }
        Ok(pruned)
    }

    /// Drops the games finished longer than the finished TTL ago, or idle
    /// longer than the idle TTL; their watchers are ended. Returns how many.
    pub fn sweep(&self, now: Instant) -> usize {
        let expired: Vec<GameId> = self
            .sessions
            .iter()
            .filter(|e| {
                let s = e.value();
                if s.follower() {
                    // Kept while watched (and a finished one as long as any).
                    !s.watched()
                        && (s.expired(now, &self.limits) || s.idle_for(now) >= FOLLOWER_IDLE)
                } else {
                    s.expired(now, &self.limits)
                }
            })
            .map(|e| e.key().clone())
            .collect();
        let mut dropped = 0;
        for id in expired {
            if let Some((_, session)) = self.sessions.remove(&id) {
                session.close();
                if session.follower() {
                    continue;
                }
                if session.archived() {
                    // Read back from storage: it stays there.
                    let mut archive = self.archive.lock().unwrap_or_else(|e| e.into_inner());
                    archive.retain(|held| *held != id);
                    continue;
                }
                metrics::gauge!(telemetry::SESSIONS_ACTIVE).decrement(1.0);
                if !session.finished() {
                    metrics::gauge!(telemetry::GAMES_IN_PROGRESS).decrement(1.0);
                    // Expired unfinished: not to be recovered again.
                    let ply = session.view(false).ply;
                    session.persist_later(Write::End(session.end_row("expired", None, ply)));
                }
                self.count.fetch_sub(1, Ordering::SeqCst);
                dropped += 1;
            }
        }
        dropped
    }

    /// Ends every watcher of every game (server shutdown).
    pub fn close_all(&self) {
        for e in self.sessions.iter() {
            e.value().close();
        }
    }
}

/// A listing entry before it is shown: a game held, or one read from
/// storage (replayed only if it makes the page).
enum Listed {
    Held(Box<GameView>),
    Stored(Box<StoredGame>),
}

/// How long an unwatched follower is kept after its last event.
const FOLLOWER_IDLE: Duration = Duration::from_secs(60);

/// A listing's page token: `<created ms>.<id>` of the last game shown.
fn parse_page_token(token: &str) -> Option<ListKey> {
    let (ms, id) = token.split_once('.')?;
    Some(ListKey {
        created_at_ms: ms.parse().ok()?,
        id: Token::parse(id)?.to_string(),
    })
}

/// Gives a replayed finished game the ending storage recorded when its
/// moves do not end it (a resignation, a timeout, …): the one of the
/// game's endings whose verdict names the stored winners.
fn restore_ending(replayed: &mut Replayed, end: &storage::EndRow) -> Result<(), String> {
    if let Some(verdict) = replayed.game.verdict() {
        return if verdict.winners == end.winners && verdict.reason == end.reason {
            Ok(())
        } else {
            Err(format!(
                "the moves end the game by {}, storage says {}",
                verdict.reason, end.reason
            ))
        };
    }
    let seats = replayed.game.seat_names().len();
    let losers = || (0..seats).filter_map(Seat::new);
    let candidates: Vec<Ending> = match end.reason.as_str() {
        "RESIGNATION" => losers()
            .map(|loser| Ending::Resignation { loser })
            .collect(),
        "TIMEOUT" => losers().map(|loser| Ending::Timeout { loser }).collect(),
        "ABANDONED" => losers().map(|loser| Ending::Abandoned { loser }).collect(),
        "DRAW_AGREEMENT" => vec![Ending::DrawAgreement],
        "ABORTED" => vec![Ending::Aborted],
        other => {
            return Err(format!(
                "stored ending `{other}` does not follow from the moves"
            ));
        }
    };
    for ending in candidates {
        let mut game = replayed.game.clone_box();
        if game
            .conclude(ending)
            .is_ok_and(|v| v.winners == end.winners)
        {
            replayed.game = game;
            return Ok(());
        }
    }
    Err(format!(
        "no {} gives the stored winners {:?}",
        end.reason, end.winners
    ))
}

/// A place under the session limit, given back on drop unless kept.
struct Reservation<'a>(Option<&'a AtomicUsize>);

impl Reservation<'_> {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(count) = self.0 {
            count.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The setup of a new game of `rules`: `None` for a game without a random
/// setup (a seed given for one is refused), else the creator's seed, where
/// the game allows one, or 32 bytes from the operating system's
/// cryptographic RNG.
fn new_setup(rules: &GameRules, seed: Option<[u8; 32]>) -> Result<Option<Setup>, SessionError> {
    let r = rules.rules();
    match seed {
        Some(_) if !r.seeded() => Err(SessionError::InvalidArgument {
            field: "seed",
            description: format!("{} has no random setup: give no seed", rules.game_name()),
        }),
        Some(_) if !r.seed_may_be_supplied() => Err(SessionError::InvalidArgument {
            field: "seed",
            description: format!("{} draws its own seed: give none", rules.game_name()),
        }),
        Some(seed) => Ok(Some(Setup {
            seed,
            supplied: true,
        })),
        None if r.seeded() => {
            let mut seed = [0u8; 32];
            rand::rngs::SysRng
                .try_fill_bytes(&mut seed)
                .map_err(|e| SessionError::Unavailable(format!("no random seed: {e}")))?;
            Ok(Some(Setup {
                seed,
                supplied: false,
            }))
        }
        None => Ok(None),
    }
}

/// The setup of a replay of `rules` from a given seed (stateless
/// adjudication): a seeded game needs its seed, an unseeded one takes none.
fn setup_for(
    rules: &GameRules,
    seed: Option<[u8; 32]>,
    field: &'static str,
) -> Result<Option<Setup>, SessionError> {
    match (rules.rules().seeded(), seed) {
        (true, Some(seed)) => Ok(Some(Setup {
            seed,
            supplied: true,
        })),
        (true, None) => Err(SessionError::InvalidArgument {
            field,
            description: format!(
                "{} is set up from a seed: give it (64 hex digits)",
                rules.game_name()
            ),
        }),
        (false, Some(_)) => Err(SessionError::InvalidArgument {
            field,
            description: format!("{} has no random setup: give no seed", rules.game_name()),
        }),
        (false, None) => Ok(None),
    }
}

/// The stored form of a time control.
fn clock_row(tc: TimeControl) -> ClockRow {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let first_move_ms = tc.first_move.map(ms);
    match tc.mode {
        ClockMode::Untimed => ClockRow {
            mode: "none",
            first_move_ms,
            ..ClockRow::default()
        },
        ClockMode::Fischer { initial, increment } => ClockRow {
            mode: "fischer",
            initial_ms: ms(initial),
            increment_ms: ms(increment),
            first_move_ms,
            ..ClockRow::default()
        },
        ClockMode::PerMove { per_move } => ClockRow {
            mode: "per_move",
            per_move_ms: ms(per_move),
            first_move_ms,
            ..ClockRow::default()
        },
    }
}

/// The time control a stored row describes.
fn time_control_of(row: &ClockRow) -> Result<TimeControl, String> {
    let mode = match row.mode {
        "none" => ClockMode::Untimed,
        "fischer" => ClockMode::Fischer {
            initial: Duration::from_millis(row.initial_ms),
            increment: Duration::from_millis(row.increment_ms),
        },
        "per_move" => ClockMode::PerMove {
            per_move: Duration::from_millis(row.per_move_ms),
        },
        other => return Err(format!("unknown clock mode `{other}`")),
    };
    let tc = TimeControl {
        mode,
        first_move: row.first_move_ms.map(Duration::from_millis),
    };
    tc.check()
        .map_err(|e| format!("stored time control: {e}"))?;
    Ok(tc)
}

/// How a new game is seated: its seats' tokens, and what a seat's failure
/// to start or its abort means.
pub struct Seating<'a> {
    /// Makes seat `seat`'s token (0-based) from the new game's id.
    pub tokens: &'a (dyn Fn(&GameId, usize) -> Token + Sync),
    /// Whether a seat's abort and a missed first move are that seat's loss
    /// ([`Session::forfeits`]): a tournament's games.
    pub forfeits: bool,
}

/// Checks labels as `CreateGame` does (count, keys, values).
pub fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), SessionError> {
    let bad = |description: String| SessionError::InvalidArgument {
        field: "labels",
        description,
    };
    if labels.len() > MAX_LABELS {
        return Err(bad(format!("at most {MAX_LABELS} labels")));
    }
    for (k, v) in labels {
        let mut chars = k.chars();
        let key_ok = k.len() <= MAX_LABEL_KEY
            && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key_ok {
            return Err(bad(format!(
                "label key `{k}` must be 1-{MAX_LABEL_KEY} letters, digits, `_` or `-`, starting with a letter"
            )));
        }
        if v.len() > MAX_LABEL_VALUE || v.chars().any(char::is_control) || v.trim() != v {
            return Err(bad(format!(
                "label `{k}`: values are at most {MAX_LABEL_VALUE} bytes on one line, without surrounding spaces"
            )));
        }
    }
    Ok(())
}

/// The two tokens of a two-seat game (the session tests' games are PÜNCT).
#[cfg(test)]
fn two((session, tokens): (Arc<Session>, Vec<Token>)) -> (Arc<Session>, [Token; 2]) {
    let [w, b]: [Token; 2] = tokens.try_into().expect("two seats");
    (session, [w, b])
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod clock_tests;

#[cfg(test)]
mod storage_tests;
