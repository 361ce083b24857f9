//! Presence: whether each seat's player holds an open stream on its game.
//!
//! A player is present while at least one `WatchGame` stream opened with its
//! seat token is open. The count lives in a `tokio::sync::watch` channel per
//! session: watchers are woken when a seat's presence flips, and a stream's
//! [`PresenceSlot`] gives its count back in `Drop`, so presence stays right
//! however the stream ends (client gone, server shutdown, game over).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::games::Seat;

/// The open streams of every seat.
#[derive(Debug, Clone)]
pub(super) struct PresenceBoard {
    streams: Vec<usize>,
    /// Since when each seat has had no stream (creation, if it never had).
    away_since: Vec<Instant>,
}

/// One seat's presence as read at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeatPresence {
    /// Whether the seat's player holds an open stream on the game.
    pub connected: bool,
    /// How long the seat has been without a stream (zero while connected;
    /// counted from the game's creation if it never had one).
    pub away_for: Duration,
}

/// The presence channel of one session, made by its first stream: until
/// then every seat has been away since the game was made, and an idle game
/// holds no channel (a `watch` channel is several hundred bytes).
#[derive(Debug)]
pub(super) struct Presence {
    board: OnceLock<Arc<watch::Sender<PresenceBoard>>>,
    /// When the game was made: the start of every seat's absence.
    since: Instant,
}

impl Presence {
    pub(super) fn new(now: Instant) -> Presence {
        Presence {
            board: OnceLock::new(),
            since: now,
        }
    }

    /// The channel of a game of `seats` seats, made on first use.
    fn channel(&self, seats: usize) -> &Arc<watch::Sender<PresenceBoard>> {
        self.board.get_or_init(|| {
            let (tx, _) = watch::channel(PresenceBoard {
                streams: vec![0; seats],
                away_since: vec![self.since; seats],
            });
            Arc::new(tx)
        })
    }

    /// Every seat (of `seats`) at `now`, first seat first.
    pub(super) fn read(&self, seats: usize, now: Instant) -> Vec<SeatPresence> {
        let Some(channel) = self.board.get() else {
            let away = SeatPresence {
                connected: false,
                away_for: now.saturating_duration_since(self.since),
            };
            return vec![away; seats];
        };
        let board = channel.borrow();
        board
            .streams
            .iter()
            .zip(&board.away_since)
            .map(|(&streams, &since)| {
                let connected = streams > 0;
                SeatPresence {
                    connected,
                    away_for: if connected {
                        Duration::ZERO
                    } else {
                        now.saturating_duration_since(since)
                    },
                }
            })
            .collect()
    }

    /// A receiver woken when a seat's presence flips.
    pub(super) fn subscribe(&self, seats: usize) -> watch::Receiver<PresenceBoard> {
        self.channel(seats).subscribe()
    }

    /// Counts one more open stream of `seat` (of `seats`) until the slot
    /// is dropped.
    pub(super) fn join(&self, seats: usize, seat: Seat) -> PresenceSlot {
        let i = seat.index();
        let channel = self.channel(seats);
        channel.send_if_modified(|b| {
            b.streams[i] += 1;
            b.streams[i] == 1
        });
        PresenceSlot {
            board: channel.clone(),
            seat,
        }
    }

    /// Whether the channel is made (a stream was opened).
    #[cfg(test)]
    pub(super) fn is_made(&self) -> bool {
        self.board.get().is_some()
    }
}

/// A player's open stream, counted in its seat's presence until dropped.
#[derive(Debug)]
pub struct PresenceSlot {
    board: Arc<watch::Sender<PresenceBoard>>,
    seat: Seat,
}

impl Drop for PresenceSlot {
    fn drop(&mut self) {
        let i = self.seat.index();
        let now = Instant::now();
        self.board.send_if_modified(|b| {
            b.streams[i] = b.streams[i].saturating_sub(1);
            if b.streams[i] == 0 {
                b.away_since[i] = now;
                true
            } else {
                false
            }
        });
    }
}
