//! Watchers: their count and limit, the start of a watch and its resyncs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::broadcast;
use tokio::time;

use super::super::presence::PresenceSlot;
use super::super::watch::{Watch, WatchItem};
use super::super::{Limits, SessionError};
use super::Session;
use super::event::Event;
use super::seats::Role;
use crate::games::Viewer;
use crate::service::telemetry;

/// How many watch one game (how many may, and how many events the
/// broadcast ring holds for slow ones, are the store's [`Limits`], which
/// every session shares).
#[derive(Debug)]
pub(super) struct Watchers {
    count: Arc<AtomicUsize>,
}

impl Watchers {
    pub(super) fn new() -> Watchers {
        Watchers {
            count: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A place for one more watcher; refused past `limits`.
    fn slot(&self, limits: &Limits) -> Result<WatcherSlot, SessionError> {
        let max = limits.max_watchers_per_game;
        if self.count.fetch_add(1, Ordering::SeqCst) >= max {
            self.count.fetch_sub(1, Ordering::SeqCst);
            return Err(SessionError::LimitReached {
                what: "watchers_per_game",
                max,
            });
        }
        metrics::gauge!(telemetry::WATCHERS_ACTIVE).increment(1.0);
        Ok(WatcherSlot(self.count.clone()))
    }

    /// Whether some watch stream is open.
    fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }
}

/// A watcher's place in the per-game count, given back on drop (so the count
/// stays right however a stream ends).
#[derive(Debug)]
pub(crate) struct WatcherSlot(Arc<AtomicUsize>);

impl Drop for WatcherSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        metrics::gauge!(telemetry::WATCHERS_ACTIVE).decrement(1.0);
    }
}

impl Session {
    /// Starts watching as `role`: a snapshot (now, or after `from_ply`),
    /// then every event after it, as `role` may see them. A seat's watch
    /// keeps it present while it lives. Refused past the watcher limit.
    pub fn watch(
        self: &Arc<Self>,
        from_ply: Option<u32>,
        role: Role,
    ) -> Result<Watch, SessionError> {
        let viewer = role.viewer();
        let guard = self.watchers.slot(&self.limits)?;
        let mut st = self.lock_settled();
        // A spectator of a delayed game starts at most at what is shown,
        // and its watch holds each later event until it is shown.
        let delay = self.delay_for(role);
        let (ply, mut view) = match delay {
            None => {
                let ply = from_ply.unwrap_or(st.game.ply());
                (ply, self.view_at_locked(&st, ply, "from_ply", viewer)?)
            }
            Some(delay) => {
                let release = self.release_locked(&st, delay, time::Instant::now());
                let ply = from_ply.unwrap_or(release.ply);
                let view =
                    self.released_view_at_locked(&st, release, Some(ply), "from_ply", viewer)?;
                (ply, view)
            }
        };
        // Subscribe while holding the lock: every later event reaches `rx`,
        // every earlier one is in the log.
        let rx = st.log.subscribe(self.watch_buffer());
        let backlog = st.log.after(u64::from(ply));
        drop(st);
        // Join only once the watch is sure to start (a refused one flips
        // nothing), then read presence after subscribing to its changes: the
        // first snapshot shows this player, and no later flip is missed.
        let presence_slot: Option<PresenceSlot> = role
            .seat()
            .map(|s| self.presence.join(self.seats.count(), s));
        let mut presence_rx = self.presence.subscribe(self.seats.count());
        presence_rx.borrow_and_update();
        if delay.is_none() {
            view.presence = self.presence();
        }
        let first = WatchItem::Snapshot {
            view: Box::new(view),
            sequence: u64::from(ply),
            resync: false,
        };
        Ok(Watch::new(
            self.clone(),
            (guard, presence_slot, viewer, delay.is_some()),
            first,
            backlog,
            u64::from(ply),
            rx,
            presence_rx,
        ))
    }

    /// A fresh snapshot for a watcher that fell behind, with a new
    /// subscription and the game-over event if the game has ended.
    /// A delayed spectator's snapshot is of what is shown, and every later
    /// event follows it (its watch holds them until they are shown).
    pub(in crate::service::sessions) fn resync(
        &self,
        viewer: Viewer,
        delayed: bool,
    ) -> (
        WatchItem,
        Vec<Arc<Event>>,
        u64,
        broadcast::Receiver<Arc<Event>>,
    ) {
        let mut st = self.lock_settled();
        let rx = st.log.subscribe(self.watch_buffer());
        if let Some(delay) = self.delay_for(Role::Spectator).filter(|_| delayed) {
            let release = self.release_locked(&st, delay, time::Instant::now());
            let view = self.released_view_locked(&st, release, viewer, true);
            let sequence = u64::from(release.ply);
            return (
                WatchItem::Snapshot {
                    view: Box::new(view),
                    sequence,
                    resync: true,
                },
                st.log.after(sequence),
                sequence,
                rx,
            );
        }
        let view = self.view_locked(&st, true, viewer);
        let sequence = u64::from(st.game.ply());
        let tail: Vec<Arc<Event>> = st.log.get(sequence as usize).cloned().into_iter().collect();
        (
            WatchItem::Snapshot {
                view: Box::new(view),
                sequence,
                resync: true,
            },
            tail,
            sequence,
            rx,
        )
    }

    /// Log events after `sequence` (to fill a gap).
    pub(in crate::service::sessions) fn events_after(&self, sequence: u64) -> Vec<Arc<Event>> {
        self.lock().log.after(sequence)
    }

    /// Whether the watchers' broadcast ring is allocated.
    #[cfg(test)]
    pub(in crate::service::sessions) fn has_ring(&self) -> bool {
        self.lock().log.has_ring()
    }

    /// Whether some watch stream is open on the game.
    pub(in crate::service::sessions) fn watched(&self) -> bool {
        self.watchers.any()
    }
}
