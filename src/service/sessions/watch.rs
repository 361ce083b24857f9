//! A watcher of one game: a snapshot, the backlog from the log, then live
//! events from the broadcast channel, each exactly once and in order.
//!
//! Memory per watcher is bounded: live events sit in the game's shared
//! broadcast ring (`Limits::watch_buffer` events). A watcher that falls
//! further behind than the ring (it stopped reading, or reads slowly) is not
//! waited for: the game goes on, and when the watcher reads again it gets a
//! fresh snapshot marked `resync` instead of the events it missed.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast::{
    self,
    error::{RecvError, TryRecvError},
};
use tokio::sync::watch;

use super::SessionError;
use super::presence::{PresenceBoard, PresenceSlot, SeatPresence};
use super::session::{Event, EventKind, Release, Role, Session, SessionView, WatcherSlot};
use crate::games::Viewer;

/// One item of a watch.
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// The game at a point; `sequence` is the last log event it includes.
    Snapshot {
        /// The picture (boxed: snapshots are rare, events many).
        view: Box<SessionView>,
        /// Last event included.
        sequence: u64,
        /// Whether it replaces events the watcher was too slow to take.
        resync: bool,
    },
    /// The next event.
    Event(Arc<Event>),
    /// A seat's presence flipped (not an event of the log: unnumbered).
    Presence(Vec<SeatPresence>),
}

/// A live watch of one game. Dropping it gives its watcher slot back and,
/// for a player's watch, its seat's presence.
#[derive(Debug)]
pub struct Watch {
    session: Arc<Session>,
    _slot: (WatcherSlot, Option<PresenceSlot>),
    /// Woken when a seat's presence flips; `None` once its sender is gone.
    presence: Option<watch::Receiver<PresenceBoard>>,
    pending: VecDeque<WatchItem>,
    last_sequence: u64,
    /// The ply of the last item handed out.
    last_ply: u32,
    rx: broadcast::Receiver<Arc<Event>>,
    finished: bool,
    /// Who watches: events are sent as this viewer may see them.
    viewer: Viewer,
    /// The move chain's head after the last item handed out: extended by
    /// each move event, set by each snapshot (docs/RECEIPTS.md).
    chain: [u8; 32],
    /// A spectator of a delayed game: each event is held until it is
    /// shown ([`Session::release_for`]), and presence is not sent.
    delayed: bool,
}

impl Watch {
    /// Whether the next item is an event a delayed spectator may not be
    /// shown yet, and if so how far it may see.
    fn held(&self) -> Option<Release> {
        if !self.delayed {
            return None;
        }
        let WatchItem::Event(event) = self.pending.front()? else {
            return None;
        };
        let release = self.session.release_for(Role::Spectator)?;
        (!release.covers(event)).then_some(release)
    }

    /// A watch by `viewer`, holding its watcher slot and (for a player)
    /// its presence slot.
    pub(super) fn new(
        session: Arc<Session>,
        (watcher, presence_slot, viewer, delayed): (
            WatcherSlot,
            Option<PresenceSlot>,
            Viewer,
            bool,
        ),
        first: WatchItem,
        backlog: Vec<Arc<Event>>,
        last_sequence: u64,
        rx: broadcast::Receiver<Arc<Event>>,
        presence: watch::Receiver<PresenceBoard>,
    ) -> Watch {
        let mut pending = VecDeque::with_capacity(backlog.len() + 1);
        pending.push_back(first);
        pending.extend(backlog.into_iter().map(WatchItem::Event));
        Watch {
            session,
            _slot: (watcher, presence_slot),
            presence: (!delayed).then_some(presence),
            pending,
            last_sequence,
            last_ply: 0,
            rx,
            finished: false,
            viewer,
            chain: [0; 32],
            delayed,
        }
    }

    /// The sequence of the last event (or snapshot) handed out.
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// The ply of the last thing this watch delivered: its snapshot's, or
    /// the last move's (where a client resumes with `from_ply`).
    pub fn last_ply(&self) -> u32 {
        self.last_ply
    }

    /// The move chain's head after the last snapshot or event handed out
    /// (what a move event's `chain_head` says).
    pub fn chain_head(&self) -> [u8; 32] {
        self.chain
    }

    /// Each seat's presence now (to stamp on what this watch sends); none
    /// for a delayed spectator (a seat leaving would tell the end early).
    pub fn presence(&self) -> Vec<SeatPresence> {
        if self.delayed {
            return Vec::new();
        }
        self.session.presence()
    }

    /// The next item; `Ok(None)` after the game-over event (the watch is
    /// complete); `Err(NotFound)` when the game was dropped or the server is
    /// shutting down. Presence flips come as [`WatchItem::Presence`] between
    /// events.
    pub async fn next(&mut self) -> Result<Option<WatchItem>, SessionError> {
        loop {
            // A delayed spectator's next event waits until it is shown: until
            // `wake` (a time delay) or another event (a ply delay).
            let mut wake = None;
            if let Some(release) = self.held() {
                wake = Some(release.next);
            }
            if let Some(item) = wake.is_none().then(|| self.pending.pop_front()).flatten() {
                if let WatchItem::Snapshot { view, .. } = &item {
                    self.last_ply = view.ply;
                    self.chain = view.chain;
                }
                if let WatchItem::Event(e) = &item {
                    self.last_sequence = e.sequence;
                    self.last_ply = e.ply;
                    // The move as played, before any redaction.
                    if let EventKind::MoveApplied { report } = &e.kind {
                        self.chain = self.session.chain_after(
                            &self.chain,
                            report.detail.notation(),
                            report.ply,
                        );
                    }
                    if matches!(e.kind, EventKind::GameOver { .. }) {
                        self.finished = true;
                        self.pending.clear();
                    }
                    return Ok(Some(WatchItem::Event(self.session.redact(e, self.viewer))));
                }
                return Ok(Some(item));
            }
            if self.finished && wake.is_none() {
                return Ok(None);
            }
            // An event already in the ring is taken at once (what the
            // select below would give first, the game being open): no
            // waiter joins and leaves the channels' lists for it.
            if wake.is_none() && !self.session.closed().is_cancelled() {
                match self.rx.try_recv() {
                    Ok(event) => {
                        self.queue(Ok(event))?;
                        continue;
                    }
                    Err(TryRecvError::Lagged(missed)) => {
                        self.queue(Err(RecvError::Lagged(missed)))?;
                        continue;
                    }
                    Err(TryRecvError::Empty | TryRecvError::Closed) => {}
                }
            }
            let until = wake.flatten();
            // Boxed: only a delayed spectator's watch sleeps, and every
            // watch keeps this future while it waits.
            let shown = async {
                match until {
                    Some(at) => Box::pin(tokio::time::sleep_until(at)).await,
                    None => std::future::pending().await,
                }
            };
            let presence_changed = async {
                match self.presence.as_mut() {
                    Some(rx) => rx.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            let received = tokio::select! {
                biased;
                _ = self.session.closed().cancelled() => {
                    if self.session.moved() {
                        return Err(SessionError::Moved(self.session.id().to_string()));
                    }
                    return Err(SessionError::NotFound(self.session.id().to_string()));
                }
                _ = shown => continue,
                r = self.rx.recv() => r,
                alive = presence_changed => {
                    if alive {
                        return Ok(Some(WatchItem::Presence(self.session.presence())));
                    }
                    self.presence = None;
                    continue;
                }
            };
            self.queue(received)?;
        }
    }

    /// Queues what the broadcast channel gave: the next event, the log's
    /// events over a gap, or a fresh snapshot after lagging behind.
    fn queue(&mut self, received: Result<Arc<Event>, RecvError>) -> Result<(), SessionError> {
        // The last event queued (a delayed spectator's watch holds some).
        let queued = match self.pending.back() {
            Some(WatchItem::Event(e)) => e.sequence,
            _ => self.last_sequence,
        };
        match received {
            Ok(event) if event.sequence <= queued => {}
            Ok(event) if event.sequence == queued + 1 => {
                self.pending.push_back(WatchItem::Event(event));
            }
            Ok(_) => {
                // A gap cannot happen (subscription and log agree), but if
                // it did, the log fills it.
                let missing = self.session.events_after(queued);
                self.pending
                    .extend(missing.into_iter().map(WatchItem::Event));
            }
            Err(RecvError::Lagged(_)) => {
                let (snapshot, tail, sequence, rx) = self.session.resync(self.viewer, self.delayed);
                self.rx = rx;
                self.last_sequence = sequence;
                self.pending.clear();
                self.pending.push_back(snapshot);
                self.pending.extend(tail.into_iter().map(WatchItem::Event));
            }
            Err(RecvError::Closed) => {
                return Err(SessionError::NotFound(self.session.id().to_string()));
            }
        }
        Ok(())
    }
}
