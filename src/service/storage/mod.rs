//! Durable storage of sessions, whatever the game.
//!
//! The session layer keeps every game in memory and, through a [`Storage`],
//! writes what it must not forget: a game when it is created, each accepted
//! move before the player is told it was accepted, draw offers and endings.
//! On start the server reads back the unfinished games ([`Storage::recover`])
//! and replays them through the engine (docs/STORAGE.md). Finished games
//! stay in the store, read back one at a time ([`Storage::load`]) or a page
//! at a time ([`Storage::list_finished`]) when asked for, until the
//! retention option prunes them ([`Storage::prune`]).
//!
//! Rows are plain data in neutral terms (texts, seats, milliseconds): a
//! backend knows nothing of PÜNCT, and the session layer nothing of SQL.
//! Backends: [`sqlite::SqliteStorage`] (the default, an embedded database with
//! group commit), [`postgres::PostgresStorage`] (a PostgreSQL database,
//! the store replicas share), [`reference::ReferenceStorage`] (keeps rows in memory: the
//! reference backend of the tests, with fault injection) and
//! [`MemoryStorage`] (keeps nothing: `--storage memory`).

mod codec;
pub mod outbox;
pub mod postgres;
pub mod reference;
pub mod secret;
pub mod sqlite;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

pub use self::codec::{scores_of_text, scores_text, seats_of_text, seats_text};
pub use self::secret::{SealError, ServerSecret};

use crate::games::{Seat, SeatSet, Setup};

/// How a game is timed, as stored (all times in milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockRow {
    /// `none`, `fischer` or `per_move`.
    pub mode: &'static str,
    /// Fischer: each seat's time at the start.
    pub initial_ms: u64,
    /// Fischer: time added after each move.
    pub increment_ms: u64,
    /// Per move: the time of each move.
    pub per_move_ms: u64,
    /// The first-move deadline, if any.
    pub first_move_ms: Option<u64>,
    /// Lag compensation's cap per move (0: no compensation).
    pub lag_max_per_move_ms: u64,
    /// Lag compensation's quota per seat (0: no compensation).
    pub lag_quota_ms: u64,
}

/// One seat of a game as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatRow {
    /// What the game calls the seat.
    pub name: String,
    /// SHA-256 of the seat's token (never the token).
    pub token_sha256: [u8; 32],
}

/// A game as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameRow {
    /// The game id.
    pub id: String,
    /// The game's short name (`punct`).
    pub game: String,
    /// The variant's short name.
    pub variant: String,
    /// The rules and options, as the game's record header (replaying a game
    /// starts from it).
    pub options: String,
    /// Every seat, first seat first.
    pub seats: Vec<SeatRow>,
    /// The seed of a seeded game: private until the game is over (readers
    /// of the store must not show it before).
    pub setup: Option<Setup>,
    /// The time control.
    pub clock: ClockRow,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Whether a seat's abort and a missed first move are that seat's loss
    /// (a tournament's games) rather than an abort of the game.
    pub forfeits: bool,
    /// Creation time, Unix milliseconds.
    pub created_at_ms: i64,
}

/// One accepted move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveRow {
    /// The game id.
    pub game_id: String,
    /// The ply after the move (the first move is ply 1).
    pub ply: u32,
    /// Who moved.
    pub seat: Seat,
    /// The move in the game's notation.
    pub notation: String,
    /// The request id it was submitted with, if any.
    pub request_id: Option<String>,
    /// When it was accepted, in milliseconds from the start of the game's
    /// clock (the clock is rebuilt from these).
    pub clock_ms: u64,
    /// When it was accepted, Unix milliseconds.
    pub played_at_ms: i64,
    /// The seats agreeing to a standing draw offer after the move.
    pub draw_offers: SeatSet,
    /// The failure a substituted move was played for (docs/POLICIES.md,
    /// "Restarts"): `TIMEOUT`, `DISCONNECT` or `ILLEGAL_MOVE:<reason>`;
    /// `None` for a move its seat made.
    pub substituted: Option<String>,
    /// What the move was charged and credited for lag (docs/LAG.md).
    pub lag: MoveLag,
}

/// A move's line of the latency ledger, as stored (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MoveLag {
    /// The time charged: the move's time less what was compensated.
    pub charged_ms: u64,
    /// The lag compensation credited.
    pub compensated_ms: u64,
    /// Its seat's round-trip estimate then, if measured.
    pub lag_ms: Option<u64>,
}

/// How a game left play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeRow {
    /// The game id.
    pub game_id: String,
    /// `finished` (it ended) or `expired` (dropped unfinished after the idle
    /// time).
    pub status: &'static str,
    /// The winning seats (none: a draw, or no winner).
    pub winners: SeatSet,
    /// Each seat's score, where the game keeps scores.
    pub scores: Vec<i64>,
    /// Why it ended (`CONNECTION`, `RESIGNATION`, …); empty when expired.
    pub reason: String,
    /// The ply it ended at.
    pub ply: u32,
    /// When, Unix milliseconds.
    pub at_ms: i64,
    /// When the game's failure policy ended it, why (`SUBSTITUTION_CAP`,
    /// `PAUSE_EXHAUSTED`: docs/POLICIES.md, "Restarts"); `None` otherwise.
    pub failure_ending: Option<String>,
}

/// One write; a backend applies each atomically, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// A new game, with the moves it was imported with and, for an
    /// imported finished game, its ending (stored together).
    Create(GameRow, Vec<MoveRow>, Option<OutcomeRow>),
    /// A move, and the ending when the move ended the game.
    Move(MoveRow, Option<OutcomeRow>),
    /// A draw offer made or joined (or withdrawn).
    DrawOffer {
        /// The game id.
        game_id: String,
        /// The seats agreeing to the standing offer.
        seats: SeatSet,
    },
    /// A game ended or expired.
    End(OutcomeRow),
    /// A tournament's whole state, inserted or replacing the stored one
    /// (docs/TOURNAMENTS.md, "Durability").
    Tournament(TournamentRow),
    /// A write and the webhook events that report it, stored in the same
    /// transaction: one delivery per event and subscribed endpoint
    /// (docs/WEBHOOKS.md).
    Outboxed(Box<Write>, Vec<outbox::OutboxEvent>),
}

impl Write {
    /// The write itself, without the events it carries.
    pub fn change(&self) -> &Write {
        match self {
            Write::Outboxed(inner, _) => inner.change(),
            other => other,
        }
    }
}

/// A tournament as stored: its id and its state as one JSON document
/// (the tournaments module owns the document's shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TournamentRow {
    /// The tournament id.
    pub id: String,
    /// Its state: `registering`, `running`, `finished` or `cancelled`.
    pub status: String,
    /// The document.
    pub document: String,
    /// Creation time, Unix milliseconds.
    pub created_at_ms: i64,
}

/// A game read back from storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredGame {
    /// The game as created.
    pub game: GameRow,
    /// Its moves in order, ply 1 first.
    pub moves: Vec<MoveRow>,
    /// The seats agreeing to a standing draw offer.
    pub draw_offers: SeatSet,
    /// How it left play; `None` while in progress.
    pub end: Option<OutcomeRow>,
}

/// Where a listing of finished games is: games sort by creation time, then
/// id (a key every replica and every restart agrees on).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListKey {
    /// Creation time, Unix milliseconds.
    pub created_at_ms: i64,
    /// The game id.
    pub id: String,
}

/// A page of finished games to read from storage.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArchiveQuery {
    /// Only games after this key (`None`: from the first).
    pub after: Option<ListKey>,
    /// Only games with every one of these labels.
    pub labels: BTreeMap<String, String>,
    /// At most this many games.
    pub limit: usize,
}

/// Why storage failed. The write was not made (a failed batch is rolled
/// back). Each kind carries a readable message; `Display` is
/// `storage: <message>` (a fenced write's message starts `fenced: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// Refused because this replica no longer owns what it wrote: its lease
    /// was taken over (docs/CLUSTER.md, "Fencing").
    #[error("storage: fenced: {0}")]
    Fenced(String),
    /// The database, or the store's own thread, failed or cannot be
    /// reached: a later attempt may succeed.
    #[error("storage: {0}")]
    Unavailable(String),
    /// The write contradicts what is stored (the game is over, the ply is
    /// taken, the id is in use, no such game in progress).
    #[error("storage: {0}")]
    Conflict(String),
    /// Something stored cannot be read back (a damaged row or document).
    #[error("storage: {0}")]
    Corrupt(String),
    /// The store cannot be opened as configured: a bad path or URL, another
    /// server secret, a schema of a newer version, a damaged file.
    #[error("storage: {0}")]
    Config(String),
}

impl StorageError {
    /// A write refused because this replica no longer owns the game: its
    /// lease was taken over (docs/CLUSTER.md, "Fencing").
    pub fn fenced(game_id: &str, why: &str) -> StorageError {
        StorageError::Fenced(format!(
            "game `{game_id}` is owned by another replica now ({why})"
        ))
    }

    /// A write of tournament `id` refused because this replica no longer
    /// owns it (docs/TOURNAMENTS.md, "In a cluster").
    pub fn fenced_tournament(id: &str, why: &str) -> StorageError {
        StorageError::Fenced(format!(
            "tournament `{id}` is owned by another replica now ({why})"
        ))
    }

    /// Whether the write was refused by fencing (the game moved), not by a
    /// failure of the database.
    pub fn is_fenced(&self) -> bool {
        matches!(self, StorageError::Fenced(_))
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            StorageError::Fenced(m)
            | StorageError::Unavailable(m)
            | StorageError::Conflict(m)
            | StorageError::Corrupt(m)
            | StorageError::Config(m) => m,
        }
    }

    /// The same kind, its message extended by `more`.
    pub fn with_context(self, more: &str) -> StorageError {
        let add = |m: String| format!("{m}{more}");
        match self {
            StorageError::Fenced(m) => StorageError::Fenced(add(m)),
            StorageError::Unavailable(m) => StorageError::Unavailable(add(m)),
            StorageError::Conflict(m) => StorageError::Conflict(add(m)),
            StorageError::Corrupt(m) => StorageError::Corrupt(add(m)),
            StorageError::Config(m) => StorageError::Config(add(m)),
        }
    }
}

/// The answer to a write: resolves once the write is durable (as durable as
/// the backend's sync setting makes it) or failed.
pub struct Commit(CommitInner);

enum CommitInner {
    Ready(Option<Result<(), StorageError>>),
    Waiting(oneshot::Receiver<Result<(), StorageError>>),
}

impl Commit {
    /// A commit that is already decided.
    pub fn ready(result: Result<(), StorageError>) -> Commit {
        Commit(CommitInner::Ready(Some(result)))
    }

    /// A commit decided when `rx` receives (a dropped sender is a failure).
    pub fn waiting(rx: oneshot::Receiver<Result<(), StorageError>>) -> Commit {
        Commit(CommitInner::Waiting(rx))
    }

    /// Waits for the outcome on this thread. Outside an async runtime only
    /// (inside one, await the commit).
    pub fn wait_blocking(self) -> Result<(), StorageError> {
        match self.0 {
            CommitInner::Ready(result) => Commit::taken(result),
            CommitInner::Waiting(rx) => Commit::received(rx.blocking_recv()),
        }
    }

    /// A ready outcome, which only the first look gets.
    fn taken(result: Option<Result<(), StorageError>>) -> Result<(), StorageError> {
        result.unwrap_or_else(|| Err(StorageError::Unavailable("commit polled twice".into())))
    }

    /// A waited-for outcome; a writer that dropped its answer failed it.
    fn received(
        answer: Result<Result<(), StorageError>, oneshot::error::RecvError>,
    ) -> Result<(), StorageError> {
        answer.unwrap_or_else(|_| {
            Err(StorageError::Unavailable(
                "the storage writer stopped".into(),
            ))
        })
    }
}

impl fmt::Debug for Commit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Commit")
    }
}

impl Future for Commit {
    type Output = Result<(), StorageError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            CommitInner::Ready(result) => Poll::Ready(Commit::taken(result.take())),
            CommitInner::Waiting(rx) => Pin::new(rx).poll(cx).map(Commit::received),
        }
    }
}

/// Where sessions are kept durably. Implementations are cheap to call from
/// async code: [`Storage::write`] only queues the write.
pub trait Storage: Send + Sync + fmt::Debug {
    /// A short name for logs (`sqlite`, `memory`, …).
    fn name(&self) -> &'static str;

    /// Whether writes survive a restart (false for [`MemoryStorage`]).
    fn durable(&self) -> bool;

    /// The server secret: what seeds are sealed with at rest and
    /// tournament seat tokens are derived from (see [`secret`]). A store
    /// that keeps nothing at rest uses the process's
    /// [`ServerSecret::ephemeral`].
    fn secret(&self) -> &ServerSecret {
        ServerSecret::ephemeral()
    }

    /// Whether every write succeeds at once and is forgotten (true for
    /// [`MemoryStorage`] alone): a session then applies a change without
    /// writing it, and plays a move on the game itself rather than on a
    /// copy kept in case the write fails (docs/STORAGE.md "With `--storage
    /// memory`").
    fn discards_writes(&self) -> bool {
        false
    }

    /// Queues `write`; the returned future resolves when it is committed.
    /// Writes are applied in the order they are queued.
    fn write(&self, write: Write) -> Commit;

    /// [`Storage::write`] made under the lease of epoch `epoch` on the
    /// write's game: a backend with leases refuses it, fenced, unless that
    /// lease is still this replica's (docs/CLUSTER.md). Others ignore it.
    fn write_leased(&self, write: Write, epoch: Option<i64>) -> Commit {
        let _ = epoch;
        self.write(write)
    }

    /// The epoch of the lease this replica holds on game `id` (`None`: no
    /// lease, or a backend without leases).
    fn lease_of(&self, id: &str) -> Option<i64> {
        let _ = id;
        None
    }

    /// The webhook outbox (`None`: a store that keeps nothing, which
    /// cannot hold one).
    fn webhooks(&self) -> Option<&dyn outbox::WebhookStore> {
        None
    }

    /// Every game that is neither finished nor expired, oldest first, with
    /// its moves.
    fn recover(&self) -> Result<Vec<StoredGame>, StorageError>;

    /// The game `id` with its moves and its end, whatever its status
    /// (`None`: not stored). Sees every write whose commit has resolved.
    /// Blocking: call it off the async workers.
    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError>;

    /// Finished games (not expired ones), in [`ListKey`] order, after
    /// `query.after`, with all of `query.labels`, at most `query.limit`.
    /// Blocking.
    fn list_finished(&self, query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError>;

    /// Deletes every finished or expired game that left play before
    /// `ended_before_ms` (Unix milliseconds), with its seats and moves;
    /// games in progress are never pruned. Returns how many were deleted.
    /// Blocking.
    fn prune(&self, ended_before_ms: i64) -> Result<u64, StorageError>;
    /// Every stored tournament, oldest first. Blocking.
    fn tournaments(&self) -> Result<Vec<TournamentRow>, StorageError>;

    /// Whether other processes write to this store too (the database a
    /// cluster's replicas share, docs/CLUSTER.md): the games in progress it
    /// keeps are then not all held by this process, and listings read them
    /// from it ([`Storage::list_games`]).
    fn shared(&self) -> bool {
        false
    }

    /// What a listing reads from a [`Storage::shared`] store: the games in
    /// progress and the finished ones (not expired ones), in [`ListKey`]
    /// order, after `query.after`, with all of `query.labels`, at most
    /// `query.limit`; only finished ones (`finished: Some(true)`) or only
    /// those in progress (`Some(false)`). Read in one statement, so a game
    /// ending meanwhile is found once. By default the finished ones: a store
    /// that is not shared holds no game in progress that this process does
    /// not hold. Blocking.
    fn list_games(
        &self,
        query: &ArchiveQuery,
        finished: Option<bool>,
    ) -> Result<Vec<StoredGame>, StorageError> {
        match finished {
            Some(false) => Ok(Vec::new()),
            _ => self.list_finished(query),
        }
    }

    /// The stored tournament `id` (`None`: not stored). Blocking.
    fn tournament(&self, id: &str) -> Result<Option<TournamentRow>, StorageError> {
        Ok(self.tournaments()?.into_iter().find(|t| t.id == id))
    }

    /// Stored tournaments with an id after `after` (empty: from the
    /// first), in id order (ids grow with creation), of `status` if given,
    /// at most `limit`. Blocking.
    fn tournament_page(
        &self,
        after: &str,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TournamentRow>, StorageError> {
        let mut rows: Vec<TournamentRow> = self
            .tournaments()?
            .into_iter()
            .filter(|t| t.id.as_str() > after && status.is_none_or(|s| t.status == s))
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows.truncate(limit);
        Ok(rows)
    }
}

/// Keeps nothing: sessions live only in memory (`--storage memory`).
#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryStorage;

impl Storage for MemoryStorage {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn durable(&self) -> bool {
        false
    }

    fn discards_writes(&self) -> bool {
        true
    }

    fn write(&self, _write: Write) -> Commit {
        Commit::ready(Ok(()))
    }

    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        Ok(Vec::new())
    }

    fn load(&self, _id: &str) -> Result<Option<StoredGame>, StorageError> {
        Ok(None)
    }

    fn list_finished(&self, _query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError> {
        Ok(Vec::new())
    }

    fn prune(&self, _ended_before_ms: i64) -> Result<u64, StorageError> {
        Ok(0)
    }

    fn tournaments(&self) -> Result<Vec<TournamentRow>, StorageError> {
        Ok(Vec::new())
    }
}

impl StoredGame {
    /// Its place in listings.
    pub fn key(&self) -> ListKey {
        ListKey {
            created_at_ms: self.game.created_at_ms,
            id: self.game.id.clone(),
        }
    }
}

/// Unix milliseconds of `t`.
pub fn unix_ms(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// The time `ms` Unix milliseconds name.
pub fn from_unix_ms(ms: i64) -> std::time::SystemTime {
    let d = std::time::Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        std::time::UNIX_EPOCH + d
    } else {
        std::time::UNIX_EPOCH - d
    }
}

#[cfg(test)]
pub(crate) mod conformance;
