//! Games read back from storage: recovered at start, taken over from
//! another replica, released to one, or finished and read back on demand.

use super::policy::{FailurePolicy, POLICY_LABEL, Substitution, of_mark};
use super::session::{Fingerprint, Receipts, SessionInit};
use super::{
    Clock, ClockMode, GameId, MoveReceipt, MoveStamp, Session, SessionError, SessionStore,
    TimeControl, Token, TokenHash,
};
use crate::games::{RecordError, RefereeAction, Replayed, Seat, SeatSet};
use crate::service::storage::{self, ClockRow, MoveRow, StoredGame};
use crate::service::telemetry;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Why a stored game cannot be served again: it does not replay to what
/// storage says it is. Where a call meets it, it is the message of an
/// `UNAVAILABLE` naming the game.
#[derive(Debug, thiserror::Error)]
pub enum StoredGameError {
    /// Its record does not read or replay.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Its moves replay to another number of moves, or (`finished`) end a
    /// game storage holds in progress.
    #[error("{stored} stored moves replay to {replayed} moves{}", finished_suffix(*.finished))]
    Moves {
        /// Moves stored.
        stored: usize,
        /// Moves the record replays to.
        replayed: usize,
        /// Whether they end the game.
        finished: bool,
    },
    /// Read back as finished, it has no stored ending.
    #[error("the stored game has not ended")]
    NotEnded,
    /// Its moves end it otherwise than storage says.
    #[error("the moves end the game by {moves}, storage says {stored}")]
    EndedOtherwise {
        /// The reason the moves give.
        moves: &'static str,
        /// The reason stored.
        stored: String,
    },
    /// Its stored ending is none that can follow from moves alone.
    #[error("stored ending `{0}` does not follow from the moves")]
    UnknownEnding(String),
    /// No ending of the stored kind gives the stored winners.
    #[error("no {reason} gives the stored winners {winners:?}")]
    Winners {
        /// The stored reason.
        reason: String,
        /// The stored winners.
        winners: SeatSet,
    },
    /// Its clock mode is none the server knows.
    #[error("unknown clock mode `{0}`")]
    ClockMode(String),
    /// Its time control is out of bounds.
    #[error("stored time control: {0}")]
    TimeControl(Box<SessionError>),
    /// It has another number of seats than its game.
    #[error("{stored} stored seats for a game of {game}")]
    Seats {
        /// Seats stored.
        stored: usize,
        /// Seats of the game.
        game: usize,
    },
    /// Its stored failure policy does not read.
    #[error("stored failure policy: {0}")]
    Policy(String),
    /// A stored move's substitution mark names no failure.
    #[error("move {ply}: stored substitution mark `{mark}` names no failure")]
    Mark {
        /// The move's ply.
        ply: u32,
        /// The mark.
        mark: String,
    },
}

/// The end of [`StoredGameError::Moves`]'s message.
fn finished_suffix(finished: bool) -> &'static str {
    if finished { ", a finished game" } else { "" }
}

/// Gives a replayed finished game the ending storage recorded when its
/// moves do not end it (a resignation, a timeout, …): the one of the
/// game's endings whose outcome names the stored winners.
pub(super) fn restore_ending(
    replayed: &mut Replayed,
    end: &storage::OutcomeRow,
) -> Result<(), StoredGameError> {
    if let Some(outcome) = replayed.game.outcome() {
        return if outcome.winners == end.winners && outcome.reason == end.reason {
            Ok(())
        } else {
            Err(StoredGameError::EndedOtherwise {
                moves: outcome.reason,
                stored: end.reason.clone(),
            })
        };
    }
    let seats = replayed.game.seat_names().len();
    let losers = || (0..seats).filter_map(Seat::new);
    let candidates: Vec<RefereeAction> = match end.reason.as_str() {
        "RESIGNATION" => losers()
            .map(|loser| RefereeAction::Resignation { loser })
            .collect(),
        "TIMEOUT" => losers()
            .map(|loser| RefereeAction::Timeout { loser })
            .collect(),
        "ABANDONED" => losers()
            .map(|loser| RefereeAction::Abandoned { loser })
            .collect(),
        "DRAW_AGREEMENT" => vec![RefereeAction::DrawAgreement],
        "ABORTED" => vec![RefereeAction::Aborted],
        other => {
            return Err(StoredGameError::UnknownEnding(other.to_string()));
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
    Err(StoredGameError::Winners {
        reason: end.reason.clone(),
        winners: end.winners,
    })
}

/// The time control a stored row describes.
pub(super) fn time_control_of(row: &ClockRow) -> Result<TimeControl, StoredGameError> {
    let mode = match row.mode {
        "none" => ClockMode::Untimed,
        "fischer" => ClockMode::Fischer {
            initial: Duration::from_millis(row.initial_ms),
            increment: Duration::from_millis(row.increment_ms),
        },
        "per_move" => ClockMode::PerMove {
            per_move: Duration::from_millis(row.per_move_ms),
        },
        other => return Err(StoredGameError::ClockMode(other.to_string())),
    };
    let tc = TimeControl {
        mode,
        first_move: row.first_move_ms.map(Duration::from_millis),
        lag: (row.lag_max_per_move_ms != 0 || row.lag_quota_ms != 0).then(|| {
            let ms32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
            super::LagCompensation {
                max_per_move_ms: ms32(row.lag_max_per_move_ms),
                quota_ms: ms32(row.lag_quota_ms),
            }
        }),
    };
    tc.check()
        .map_err(|e| StoredGameError::TimeControl(Box::new(e)))?;
    Ok(tc)
}

impl SessionStore {
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
    pub(super) fn rebuild(
        &self,
        stored: StoredGame,
        archived: bool,
        charged: Duration,
    ) -> Result<Arc<Session>, StoredGameError> {
        self.rebuild_as(stored, archived, false, charged)
    }

    /// The stored game replayed: the game, each ply's report, the stored
    /// moves (a finished game gets its stored ending).
    pub(super) fn replay(
        &self,
        stored: &StoredGame,
        ended: bool,
    ) -> Result<Replayed, StoredGameError> {
        let mut replayed = self.import_stored(stored)?;
        if replayed.moves.len() != stored.moves.len() {
            return Err(moves_differ(stored, &replayed, false));
        }
        if ended && let Some(end) = &stored.end {
            restore_ending(&mut replayed, end)?;
        }
        Ok(replayed)
    }

    /// The seat to move after the stored game's moves, its ending left
    /// out: who was to move when a game was called off. `None` when no
    /// seat was, or the game does not replay.
    pub fn to_move_in_stored(&self, stored: &StoredGame) -> Option<Seat> {
        let replayed = self.import_stored(stored).ok()?;
        (replayed.moves.len() == stored.moves.len())
            .then(|| replayed.game.to_move())
            .flatten()
    }

    /// The stored game's record, its options and then its moves, imported
    /// with the seed the server kept.
    fn import_stored(&self, stored: &StoredGame) -> Result<Replayed, StoredGameError> {
        let mut record = stored.game.options.trim_end().to_string();
        record.push_str("\n\n");
        for m in &stored.moves {
            record.push_str(&m.notation);
            record.push('\n');
        }
        Ok(self.catalog.import(&record, stored.game.setup)?)
    }

    /// A session from a stored game (see [`SessionStore::rebuild`]), held
    /// as a follower when `follower`.
    pub(super) fn rebuild_as(
        &self,
        stored: StoredGame,
        archived: bool,
        follower: bool,
        charged: Duration,
    ) -> Result<Arc<Session>, StoredGameError> {
        let replayed = self.replay_stored(&stored, archived)?;
        let StoredGame {
            game: row,
            moves,
            draw_offers,
            end,
        } = stored;
        let time_control = time_control_of(&row.clock)?;
        let seats = replayed.game.seat_names().len();
        if row.seats.len() != seats {
            return Err(StoredGameError::Seats {
                stored: row.seats.len(),
                game: seats,
            });
        }
        let clock = restored_clock(&replayed, &moves, time_control, charged);
        let receipts = receipts_of(&replayed, &moves);
        let mut labels = row.labels;
        let policy = policy_of(labels.remove(POLICY_LABEL).as_deref())?;
        let substitutions = substitutions_of(&replayed, &moves)?;
        let played_ms: Vec<i64> = moves.iter().map(|m| m.played_at_ms).collect();
        let failure_ending = end.as_ref().and_then(|e| e.failure_ending.clone());
        let session = Arc::new(Session::new(
            SessionInit {
                lease: self.storage.lease_of(&row.id),
                id: GameId(row.id.into()),
                serial: self.serial.fetch_add(1, Ordering::SeqCst) + 1,
                labels,
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
                ended_ms: end.map(|e| e.at_ms),
                played_ms: &played_ms,
            },
            &self.limits,
        ));
        if !policy.is_lose() || !substitutions.is_empty() {
            session.init_policy(policy, substitutions);
        }
        session.note_failure_ending(failure_ending.as_deref());
        Ok(session)
    }

    /// A stored game replayed from its moves: a finished one (`archived`)
    /// with its stored ending, else one the moves do not end.
    fn replay_stored(
        &self,
        stored: &StoredGame,
        archived: bool,
    ) -> Result<Replayed, StoredGameError> {
        let mut replayed = self.import_stored(stored)?;
        if archived {
            let end = stored.end.as_ref().ok_or(StoredGameError::NotEnded)?;
            if replayed.moves.len() != stored.moves.len() {
                return Err(moves_differ(stored, &replayed, false));
            }
            restore_ending(&mut replayed, end)?;
        } else if replayed.moves.len() != stored.moves.len() || replayed.game.outcome().is_some() {
            let finished = replayed.game.outcome().is_some();
            return Err(moves_differ(stored, &replayed, finished));
        }
        Ok(replayed)
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
        let Some((_, session)) = self.sessions.remove(id) else {
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

    /// Holds a finished game read back from storage (or gives the one
    /// another call held first), dropping the longest held past the cap.
    pub(super) fn hold_archived(&self, session: Arc<Session>) -> Arc<Session> {
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
}

/// A stored game whose moves do not replay as stored.
fn moves_differ(stored: &StoredGame, replayed: &Replayed, finished: bool) -> StoredGameError {
    StoredGameError::Moves {
        stored: stored.moves.len(),
        replayed: replayed.moves.len(),
        finished,
    }
}

/// The clock of a replayed game, rebuilt from its stored move times: the
/// turn in progress resumes now, or `charged` earlier.
fn restored_clock(
    replayed: &Replayed,
    moves: &[MoveRow],
    time_control: TimeControl,
    charged: Duration,
) -> Clock {
    let stamps: Vec<MoveStamp> = replayed
        .moves
        .iter()
        .zip(moves)
        .map(|(report, m)| MoveStamp {
            mover: report.seat,
            next: report.next,
            at: Duration::from_millis(m.clock_ms),
            compensated_ms: u32::try_from(m.lag.compensated_ms).unwrap_or(u32::MAX),
        })
        .collect();
    let first = replayed
        .moves
        .first()
        .map(|r| r.seat)
        .or(replayed.game.to_move())
        .unwrap_or(Seat::FIRST);
    let now = tokio::time::Instant::now();
    let mut clock = Clock::restore(
        time_control,
        replayed.game.seat_names().len(),
        first,
        &stamps,
        now.checked_sub(charged).unwrap_or(now),
    );
    // The estimates the moves were credited against (docs/LAG.md).
    let used = moves
        .iter()
        .take(stamps.len())
        .enumerate()
        .filter_map(|(i, m)| {
            let ms = u32::try_from(m.lag.lag_ms?).unwrap_or(u32::MAX);
            Some((u32::try_from(i).ok()?, ms))
        })
        .collect();
    clock.restore_lag_used(used);
    clock
}

/// The failure policy stored with a game ([`POLICY_LABEL`]; none: every
/// failure loses).
fn policy_of(stored: Option<&str>) -> Result<FailurePolicy, StoredGameError> {
    stored.map_or(Ok(FailurePolicy::default()), |text| {
        FailurePolicy::of_stored(text).map_err(StoredGameError::Policy)
    })
}

/// The substitutions the stored moves were, from their marks
/// (docs/POLICIES.md, "Restarts"), each with its move as replayed.
pub(super) fn substitutions_of(
    replayed: &Replayed,
    moves: &[MoveRow],
) -> Result<Vec<Substitution>, StoredGameError> {
    let mut substitutions = Vec::new();
    for (m, report) in moves.iter().zip(&replayed.moves) {
        let Some(mark) = &m.substituted else {
            continue;
        };
        let (kind, refused) = of_mark(mark).ok_or_else(|| StoredGameError::Mark {
            ply: m.ply,
            mark: mark.clone(),
        })?;
        substitutions.push(Substitution {
            ply: report.ply,
            seat: report.seat,
            kind,
            refused,
            detail: report.detail.clone(),
        });
    }
    Ok(substitutions)
}

/// The answers to the stored moves' request ids, so that a retry after a
/// restart is answered from its first result.
fn receipts_of(replayed: &Replayed, moves: &[MoveRow]) -> Receipts {
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
    receipts
}
