//! The hand-off to storage: the write turn, writes, and what their failures
//! mean to a caller.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use tokio::sync::{Semaphore, SemaphorePermit};

use super::super::{GameId, SessionError};
use crate::games::{Outcome, SeatSet};
use crate::service::storage::{self, OutcomeRow, Storage, Write};
use crate::service::telemetry;

/// Where one session's changes are stored, and its turn to change.
#[derive(Debug)]
pub(super) struct Handoff {
    id: GameId,
    storage: Arc<dyn Storage>,
    /// Who writes the game's changes.
    writer: Writer,
    /// The write turn, one permit: held while a change is decided, stored
    /// and applied (see [`Handoff::turn`]). Made by the first change: a
    /// game that never changes holds none (docs/BENCHMARKS.md, "Memory per
    /// idle game").
    writing: OnceLock<Box<Semaphore>>,
    /// When the game ended as its stored ending says, Unix ms (0: not
    /// ended): the time its receipt signs, the same after a restart.
    ended_ms: AtomicI64,
}

/// Who writes a game's changes.
#[derive(Debug, Clone, Copy)]
enum Writer {
    /// This replica, without a lease (one server).
    Sole,
    /// This replica, under the lease of this epoch (cluster storage):
    /// every write names it.
    Leased(i64),
    /// Another replica: this copy never writes.
    Follower,
}

impl Handoff {
    pub(super) fn new(
        id: GameId,
        storage: Arc<dyn Storage>,
        lease: Option<i64>,
        follower: bool,
    ) -> Handoff {
        Handoff {
            id,
            storage,
            writer: match (follower, lease) {
                (true, _) => Writer::Follower,
                (false, Some(epoch)) => Writer::Leased(epoch),
                (false, None) => Writer::Sole,
            },
            writing: OnceLock::new(),
            ended_ms: AtomicI64::new(0),
        }
    }

    /// Whether this is a copy of a game another replica owns.
    pub(super) fn follower(&self) -> bool {
        matches!(self.writer, Writer::Follower)
    }

    /// The lease every write names (`None`: no lease).
    fn lease(&self) -> Option<i64> {
        match self.writer {
            Writer::Leased(epoch) => Some(epoch),
            Writer::Sole | Writer::Follower => None,
        }
    }

    /// The write turn, made on first use.
    fn writing(&self) -> &Semaphore {
        self.writing.get_or_init(|| Box::new(Semaphore::new(1)))
    }

    /// Whether a change may be applied in place, with no copy to decide it
    /// on: the storage keeps nothing, so no write can fail
    /// ([`Storage::discards_writes`]), and this copy is the owner.
    pub(super) fn in_place(&self) -> bool {
        self.storage.discards_writes() && !self.follower()
    }

    /// Waits for this game's turn to change it: one change at a time, from
    /// its decision until it is applied (or dropped).
    pub(super) async fn turn(&self) -> Result<SemaphorePermit<'_>, SessionError> {
        self.writing()
            .acquire()
            .await
            .map_err(|_| SessionError::Unavailable("the game is closed to changes".into()))
    }

    /// Gives back a turn that was forgotten (taken by a task of its own).
    pub(super) fn give_back_turn(&self) {
        self.writing().add_permits(1);
    }

    /// Writes `write` and waits for it; a failure is `UNAVAILABLE`.
    pub(super) async fn persist(&self, write: Write) -> Result<(), SessionError> {
        let commit = self.start(write)?;
        self.outcome(commit.await)
    }

    /// Queues `write`: its commit, to wait for; a follower writes nothing.
    pub(super) fn start(&self, write: Write) -> Result<storage::Commit, SessionError> {
        if self.follower() {
            // The owner decides; the caller is sent there.
            return Err(SessionError::Moved(self.id.to_string()));
        }
        Ok(self.storage.write_leased(write, self.lease()))
    }

    /// A write's outcome as the caller sees it: a fenced write means the
    /// game moved; any other failure is `UNAVAILABLE`.
    pub(super) fn outcome(
        &self,
        result: Result<(), storage::StorageError>,
    ) -> Result<(), SessionError> {
        result.map_err(|e| {
            if e.is_fenced() {
                tracing::info!(game_id = %self.id, error = %e, "change refused: the game moved");
                return SessionError::Moved(self.id.to_string());
            }
            tracing::warn!(game_id = %self.id, error = %e, "change refused: storage failed");
            metrics::counter!(telemetry::STORAGE_FAILURES).increment(1);
            SessionError::Unavailable(e.to_string())
        })
    }

    /// Queues `write` without waiting (endings a deadline decided, expiry):
    /// writes are applied in queue order, so it lands before any later one.
    pub(super) fn persist_later(&self, write: Write) {
        if self.follower() {
            return;
        }
        let commit = self.storage.write_leased(write, self.lease());
        let id = self.id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = commit.await {
                    tracing::warn!(game_id = %id, error = %e, "background storage write failed");
                    metrics::counter!(telemetry::STORAGE_FAILURES).increment(1);
                }
            });
        }
    }

    /// The stored row of this game's ending.
    pub(super) fn end_row(
        &self,
        status: &'static str,
        outcome: Option<&Outcome>,
        ply: u32,
    ) -> OutcomeRow {
        let at_ms = storage::unix_ms(SystemTime::now());
        if status == "finished" {
            // Decided now; a write that fails leaves the game going, and
            // its real end writes this again.
            self.note_end(at_ms);
        }
        OutcomeRow {
            game_id: self.id.to_string(),
            status,
            winners: outcome.map_or(SeatSet::EMPTY, |v| v.winners),
            scores: outcome.map_or_else(Vec::new, |v| v.scores.clone()),
            reason: outcome.map_or(String::new(), |v| v.reason.to_string()),
            ply,
            at_ms,
            failure_ending: None,
        }
    }

    /// Notes when the game ended (Unix ms), as stored.
    pub(super) fn note_end(&self, at_ms: i64) {
        self.ended_ms.store(at_ms, Ordering::Relaxed);
    }

    /// When the game ended as stored, if it did.
    pub(super) fn ended_ms(&self) -> Option<i64> {
        Some(self.ended_ms.load(Ordering::Relaxed)).filter(|&ms| ms != 0)
    }
}
