//! What leaves memory and storage: expired games swept, old finished games
//! pruned, every watcher ended at shutdown.

use super::{GameId, SessionError, SessionStore};
use crate::service::storage::{self, Write};
use crate::service::telemetry;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long an unwatched follower is kept after its last event.
pub(super) const FOLLOWER_IDLE: Duration = Duration::from_secs(60);

impl SessionStore {
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
