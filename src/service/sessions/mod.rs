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

mod adjudicate;
mod clock;
mod create;
#[cfg(test)]
mod delay_tests;
mod expiry;
mod follow;
mod lag;
mod listing;
mod policy;
mod presence;
mod recovery;
mod session;
mod token;
mod watch;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;

use crate::games::{Catalog, MoveError, RecordError};
use crate::service::receipts::RefereeKey;
use crate::service::storage::{self, Storage};

pub use clock::{
    Clock, ClockMode, ClockReading, Expiry, MAX_CLOCK_TIME, MAX_INCREMENT, MoveStamp, TimeControl,
};
pub use lag::{Credit, LagCompensation, LedgerEntry, MAX_PER_MOVE_CAP};
pub use policy::{
    FailureAction, FailureKind, FailurePolicy, PAUSE_EXHAUSTED, POLICY_LABEL, SUBSTITUTION_CAP,
    Substitution, pick as pick_substitution, substitution_seed,
};
pub use presence::{PresenceSlot, SeatPresence};
pub use recovery::StoredGameError;
pub use session::{Current, DELAY_LABEL, FailureView, LedgerLine, SpectatorDelay, StateKey};
pub use session::{Event, EventKind, MoveReceipt, Role, Session, SessionView, SetupView, TimeView};
pub use token::{Token, TokenHash};
pub use watch::{Watch, WatchItem};

pub use adjudicate::{Adjudication, History, validate_move};
pub use create::{Seating, check_labels};

/// A game's id: 32 lower-case hex digits. The first 16 are a stamp that
/// grows with each id a process makes (the creation time in Unix
/// milliseconds, shifted left 16 bits, plus a counter within the
/// millisecond), the last 16 are random: ids sort in creation order, so
/// listings sorted by creation time and then id keep the order games were
/// created in even within one millisecond, and ids of different processes
/// (replicas) do not collide.
///
/// Shared, not copied: the store's map, the session and its hand-off to
/// storage hold one text between them (docs/BENCHMARKS.md, "Memory per
/// idle game").
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameId(Arc<str>);

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
        GameId(format!("{stamp:016x}{:016x}", rand::random::<u64>()).into())
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

/// All sessions of a server, and the storage that keeps them.
#[derive(Debug)]
pub struct SessionStore {
    sessions: DashMap<GameId, Arc<Session>>,
    /// Shared with every session (one copy, not one per game).
    limits: Arc<Limits>,
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
    /// The key that signs receipts (docs/RECEIPTS.md).
    referee_key: Arc<RefereeKey>,
}

impl SessionStore {
    /// An empty store with `limits`, keeping games in memory only.
    pub fn new(limits: Limits) -> SessionStore {
        SessionStore::with_storage(limits, Arc::new(storage::MemoryStorage))
    }

    /// An empty store with `limits` that writes through `storage`; call
    /// [`SessionStore::recover`] to load the games storage holds.
    pub fn with_storage(limits: Limits, storage: Arc<dyn Storage>) -> SessionStore {
        SessionStore {
            sessions: DashMap::new(),
            limits: Arc::new(limits),
            storage,
            count: AtomicUsize::new(0),
            serial: AtomicU64::new(0),
            catalog: crate::service::grpc::games::catalog(),
            archive: Mutex::new(VecDeque::new()),
            archive_cap: DEFAULT_ARCHIVE_CAP,
            follow_remote: std::sync::atomic::AtomicBool::new(false),
            referee_key: RefereeKey::process(),
        }
    }

    /// The store, signing receipts with `key`.
    pub fn with_referee_key(mut self, key: Arc<RefereeKey>) -> SessionStore {
        self.referee_key = key;
        self
    }

    /// The key that signs receipts.
    pub fn referee_key(&self) -> &Arc<RefereeKey> {
        &self.referee_key
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

    /// Whether game `id` is held in memory (as its owner, or read back).
    pub fn holds(&self, id: &str) -> bool {
        self.sessions.contains_key(id)
    }

    /// The ids of the games held in progress.
    pub fn in_progress(&self) -> Vec<String> {
        self.sessions
            .iter()
            .filter(|e| !e.value().archived() && !e.value().finished())
            .map(|e| e.key().to_string())
            .collect()
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
