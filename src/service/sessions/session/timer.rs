//! The clock's side of a session: the timer task of a timed game, and the
//! deadlines every call settles first.

use std::sync::{Arc, OnceLock, Weak};

use tokio::sync::{Notify, watch};
use tokio::time;
use tokio_util::sync::CancellationToken;

use super::super::clock::Expiry;
use super::super::presence::PresenceBoard;
use super::policy::Flag;
use super::{Session, State};
use crate::games::RefereeAction;
use crate::service::storage::Write;

/// What wakes a timed game's timer task when the deadline may have moved:
/// made when the task starts, so an untimed game holds none.
#[derive(Debug, Default)]
pub(super) struct Timer {
    wake: OnceLock<Arc<Notify>>,
}

impl Timer {
    /// Tells the timer task the deadline may have changed (nothing to tell
    /// without a task).
    pub(super) fn wake(&self) {
        if let Some(wake) = self.wake.get() {
            wake.notify_one();
        }
    }

    /// Whether a timer task was given a wake-up.
    #[cfg(test)]
    pub(super) fn is_made(&self) -> bool {
        self.wake.get().is_some()
    }
}

/// The timer of one timed game (see [`Session::start_timer`]).
async fn run_timer(
    session: Weak<Session>,
    wake: Arc<Notify>,
    closed: CancellationToken,
    mut presence: watch::Receiver<PresenceBoard>,
) {
    loop {
        // The strong reference lives only for this statement: a dropped
        // session ends the timer.
        let Some(Ok(deadline)) = session.upgrade().map(|s| s.next_deadline()) else {
            return;
        };
        let sleep = async {
            match deadline {
                Some(at) => time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = wake.notified() => {}
            _ = sleep => {}
            // A seat leaving may start a failure policy's wait.
            changed = presence.changed() => if changed.is_err() { return },
        }
    }
}

impl Session {
    /// Starts the task that ends the game when a clock deadline passes
    /// (untimed games need none). One task per timed game: it sleeps until
    /// the turn's deadline, is woken early when a move or an ending moves
    /// the deadline, and ends with the game, or when the session is closed
    /// or dropped (it holds only a weak reference). Without a tokio runtime
    /// there is no timer; deadlines then take effect at the next call.
    pub(in crate::service::sessions) fn start_timer(self: &Arc<Self>) {
        // A disconnect policy needs a timer also without a clock.
        let untimed = self.lock().clock.control().is_untimed();
        if untimed && !self.watches_disconnects() {
            return;
        }
        self.spawn_timer();
    }

    /// Starts the timer task (see [`Session::start_timer`]); a failure
    /// policy acting on disconnects needs one also in an untimed game.
    pub(super) fn spawn_timer(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let session = Arc::downgrade(self);
        let wake = self.timer.wake.get_or_init(Arc::default).clone();
        let closed = self.life.closed().clone();
        let presence = self.presence.subscribe(self.seats.count());
        runtime.spawn(run_timer(session, wake, closed, presence));
    }

    /// The next deadline, after settling the clock; `Err` once the game is
    /// over (the timer's work is done).
    fn next_deadline(&self) -> Result<Option<time::Instant>, ()> {
        let st = self.lock_settled();
        if st.game.outcome().is_some() {
            return Err(());
        }
        let clock = st.clock.deadline().map(|(at, expiry)| match expiry {
            Expiry::Timeout { loser } => (at, Some(loser)),
            Expiry::NotStarted { .. } => (at, None),
        });
        Ok(self.policy_deadline(&st, clock))
    }

    /// Ends the game if its deadline has passed at `now`: `TIMEOUT` for the
    /// seat out of time; for a seat that never started, `ABORTED`, or in a
    /// tournament's game `TIMEOUT` of that seat, so the forfeit the
    /// tournament counts is the game's own end and in its record
    /// (docs/TOURNAMENTS.md, "Results in the records"). The clock
    /// stops at the deadline itself, so the loser's reading is exactly zero
    /// however late this runs.
    pub(super) fn settle(&self, st: &mut State, now: time::Instant) {
        // A follower's deadlines are its owner's to call, and a copy that
        // moved away decides nothing any more.
        if st.pending || st.game.outcome().is_some() || self.follower() || self.moved() {
            return;
        }
        self.charge_pause(st);
        // The failure policy may play for a seat out of time (then the
        // next seat's deadline may have passed too) or hold its flag.
        let (at, expiry) = loop {
            let Some((at, expiry)) = st.clock.expired(now) else {
                self.settle_disconnect(st, now);
                return;
            };
            match expiry {
                Expiry::Timeout { loser } => match self.on_flag(st, loser, at, now) {
                    Flag::Played => {}
                    Flag::Held => return,
                    Flag::Falls => break (at, expiry),
                },
                Expiry::NotStarted { .. } => break (at, expiry),
            }
            if st.game.outcome().is_some() {
                return;
            }
        };
        st.clock.stop(at);
        let ending = match expiry {
            Expiry::Timeout { loser } => RefereeAction::Timeout { loser },
            Expiry::NotStarted { seat } if self.forfeits() => {
                RefereeAction::Timeout { loser: seat }
            }
            Expiry::NotStarted { .. } => RefereeAction::Aborted,
        };
        // Cannot fail: the game is not over (checked above).
        if let Ok(outcome) = st.game.conclude(ending) {
            // Stored in the background: the deadline, not this write,
            // decided it (docs/STORAGE.md).
            let end = self.finished_row(st, &outcome, st.game.ply());
            self.finish(st, outcome);
            self.handoff.persist_later(Write::End(end));
        }
    }
}
