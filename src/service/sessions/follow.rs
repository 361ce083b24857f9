//! Followers: copies of games another replica owns, held for their
//! watchers here and fed from the database.

use super::{MoveStamp, Session, SessionError, SessionStore, StoredGameError};
use crate::service::storage::{self, StoredGame};
use std::sync::Arc;
use std::time::Duration;

impl SessionStore {
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
    pub fn catch_up(&self, session: &Session, stored: &StoredGame) -> Result<(), StoredGameError> {
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
                compensated_ms: u32::try_from(m.lag.compensated_ms).unwrap_or(u32::MAX),
            })
            .collect();
        if let Some(end) = stored.end.as_ref().filter(|_| ended) {
            session.note_end(end.at_ms);
            session.note_failure_ending(end.failure_ending.as_deref());
        }
        // Marked before the moves are applied: no watcher sees a
        // substituted move unmarked.
        session.note_substitutions(super::recovery::substitutions_of(&replayed, &stored.moves)?);
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
}
