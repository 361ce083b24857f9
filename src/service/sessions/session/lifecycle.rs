//! A session's life: the clock's timer and deadlines, the end of the game,
//! a follower's catching up, expiry and closing.

use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::time;
use tokio_util::sync::CancellationToken;

use super::super::Limits;
use super::super::clock::{Clock, MoveStamp};
use super::event::EventKind;
use super::{Session, State};
use crate::games::{Game, MoveReport, Outcome, Seat, SeatSet};
use crate::service::receipts::chain;
use crate::service::telemetry;

/// Whether a session still serves here: closed when it is dropped from the
/// store or the server shuts down, or because the game moved to another
/// replica (then also [`Session::moved`]).
#[derive(Debug, Default)]
pub(super) struct Lifecycle {
    /// Made by its first reader (a watcher, the timer, a close): a token
    /// is a tree node with a lock and a list, which an idle game does
    /// without.
    closed: OnceLock<CancellationToken>,
}

impl Lifecycle {
    /// Cancelled when the session closes.
    pub(super) fn closed(&self) -> &CancellationToken {
        self.closed.get_or_init(CancellationToken::new)
    }

    fn close(&self) {
        self.closed().cancel();
    }

    /// Whether the token is made.
    #[cfg(test)]
    pub(super) fn is_made(&self) -> bool {
        self.closed.get().is_some()
    }
}

impl Session {
    /// Cancelled when the session is dropped from the store or the server
    /// shuts down: watchers end.
    pub(in crate::service::sessions) fn closed(&self) -> &CancellationToken {
        self.life.closed()
    }

    pub(in crate::service::sessions) fn close(&self) {
        self.life.close();
    }

    /// Ends the session here because another replica owns the game now:
    /// watchers end with [`SessionError::Moved`], the timer stops.
    pub(in crate::service::sessions) fn move_away(&self) {
        self.moved.store(true, Ordering::SeqCst);
        self.life.close();
    }

    /// Whether the game moved to another replica.
    pub(in crate::service::sessions) fn moved(&self) -> bool {
        self.moved.load(Ordering::SeqCst)
    }

    /// Whether the store should drop this session at `now`.
    pub(in crate::service::sessions) fn expired(&self, now: Instant, limits: &Limits) -> bool {
        let st = self.lock_settled();
        match st.finished_at {
            Some(t) => now.saturating_duration_since(t) >= limits.finished_ttl,
            None => now.saturating_duration_since(st.last_activity) >= limits.idle_ttl,
        }
    }

    /// How long since the game's last event (or since it was held).
    pub(in crate::service::sessions) fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.lock().last_activity)
    }

    /// Brings a follower up to the stored game: `game` is it replayed,
    /// `moves` the report of each ply and `stamps` their stored clock times.
    /// The moves it lacks are published as their owner published them (same
    /// sequence numbers), then the ending. Its clock is rebuilt from the
    /// stamps, the last one put `last_ago` in the past (when the owner made
    /// it, by the wall clock): the stored times leave out what a takeover
    /// credited, so only the newest stamp can be anchored in real time. An
    /// ending is put `ended_ago` in the past. A replay that is not ahead
    /// changes only the draw offers.
    pub(in crate::service::sessions) fn catch_up(
        &self,
        game: Box<dyn Game>,
        moves: &[MoveReport],
        stamps: &[MoveStamp],
        draw_offers: SeatSet,
        (last_ago, ended_ago): (Duration, Duration),
    ) {
        let mut st = self.lock();
        let have = st.game.ply() as usize;
        let ended = game.outcome().is_some() && st.finished_at.is_none();
        if moves.len() < have || (moves.len() == have && !ended) {
            st.draw_offers = if st.finished_at.is_none() {
                draw_offers
            } else {
                SeatSet::EMPTY
            };
            return;
        }
        let now = time::Instant::now();
        let anchor = now.checked_sub(last_ago).unwrap_or(now);
        let first = moves.first().map_or(Seat::FIRST, |r| r.seat);
        let seats = st.game.seat_names().len();
        st.clock = Clock::restore(st.clock.control(), seats, first, stamps, anchor);
        let start = anchor
            .checked_sub(stamps.last().map_or(Duration::ZERO, |s| s.at))
            .unwrap_or(anchor);
        st.game = game;
        for report in &moves[have..] {
            let at = stamps
                .get(report.ply as usize - 1)
                .map_or(anchor, |s| start + s.at);
            self.publish(
                &mut st,
                EventKind::MoveApplied {
                    report: report.clone(),
                },
                report.ply,
                at,
            );
        }
        st.draw_offers = draw_offers;
        if let Some(outcome) = st.game.outcome()
            && st.finished_at.is_none()
        {
            // Not before the last move.
            let at = now.checked_sub(ended_ago).unwrap_or(now).max(anchor);
            self.finish_at(&mut st, outcome, at);
        }
    }

    /// Stops the clock, logs, counts and publishes the game-over event.
    pub(super) fn finish(&self, st: &mut State, outcome: Outcome) {
        self.finish_at(st, outcome, time::Instant::now());
    }

    /// [`Session::finish`] with the clock stopped at `at` (a follower
    /// learns of an ending after it happened).
    pub(super) fn finish_at(&self, st: &mut State, outcome: Outcome, at: time::Instant) {
        st.clock.stop(at);
        self.timer.wake();
        st.draw_offers = SeatSet::EMPTY;
        st.finished_at = Some(Instant::now());
        let ply = st.game.ply();
        tracing::info!(
            game_id = %self.id,
            game = self.game_name,
            reason = outcome.reason,
            winners = %self.seats.names_of(outcome.winners),
            ply,
            "game finished"
        );
        // A follower's game is counted by its owner.
        if !self.follower() {
            metrics::counter!(
                telemetry::GAMES_FINISHED,
                "game" => self.game_name,
                "reason" => outcome.reason,
            )
            .increment(1);
            metrics::gauge!(telemetry::GAMES_IN_PROGRESS).decrement(1.0);
        }
        // The clock is stopped: any instant reads the same.
        self.publish(
            st,
            EventKind::GameOver { outcome },
            ply,
            time::Instant::now(),
        );
    }

    /// Logs and broadcasts an event, with the clocks read at `at` (for a
    /// move: the instant it was accepted).
    pub(super) fn publish(&self, st: &mut State, kind: EventKind, ply: u32, at: time::Instant) {
        if let EventKind::MoveApplied { report } = &kind {
            st.chain = chain::step(&st.chain, report.detail.notation(), report.ply);
        }
        let clock = st.clock.reading(at);
        st.log.push(kind, ply, clock);
        st.last_activity = Instant::now();
    }
}
