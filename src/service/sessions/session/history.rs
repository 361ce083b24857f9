//! A game's history: its numbered event log, and the broadcast ring that
//! carries each new event to the watchers.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::super::clock::ClockReading;
use super::event::{Event, EventKind};
use crate::games::{MoveReport, Outcome, SeatSet};

/// The events of one game, in order, and the ring of its watchers.
#[derive(Debug)]
pub(super) struct EventLog {
    events: Vec<Arc<Event>>,
    /// The watchers' broadcast ring: allocated by the first watcher,
    /// dropped again at the first event nobody watches (an unwatched game
    /// holds none).
    ring: Option<broadcast::Sender<Arc<Event>>>,
}

impl EventLog {
    /// The log of a game that played `history` and ended with `outcome`
    /// (at ply `ply`) if it did, with no clock readings.
    pub(super) fn rebuilt(history: &[MoveReport], outcome: Option<&Outcome>, ply: u32) -> EventLog {
        let mut events: Vec<Arc<Event>> = history
            .iter()
            .map(|r| {
                Arc::new(Event::new(
                    u64::from(r.ply),
                    r.ply,
                    EventKind::MoveApplied { report: r.clone() },
                    ClockReading::default(),
                ))
            })
            .collect();
        if let Some(outcome) = outcome {
            events.push(Arc::new(Event::new(
                events.len() as u64 + 1,
                ply,
                EventKind::GameOver {
                    outcome: outcome.clone(),
                },
                ClockReading::default(),
            )));
        }
        EventLog { events, ring: None }
    }

    /// Every event, in order.
    pub(super) fn all(&self) -> &[Arc<Event>] {
        &self.events
    }

    /// The event at `index` (from 0: sequence `index + 1`).
    pub(super) fn get(&self, index: usize) -> Option<&Arc<Event>> {
        self.events.get(index)
    }

    /// Events after `sequence` (to fill a gap); none past the end.
    pub(super) fn after(&self, sequence: u64) -> Vec<Arc<Event>> {
        self.events
            .get(sequence as usize..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// The move that left the game at ply `ply + 1`, if played.
    pub(super) fn move_at(&self, ply: u32) -> Option<&MoveReport> {
        match self.events.get(ply as usize).map(|e| &e.kind) {
            Some(EventKind::MoveApplied { report }) => Some(report),
            _ => None,
        }
    }

    /// The last move played.
    pub(super) fn last_move(&self) -> Option<&MoveReport> {
        self.events.iter().rev().find_map(|e| match &e.kind {
            EventKind::MoveApplied { report } => Some(report),
            EventKind::GameOver { .. } => None,
        })
    }

    /// The seats that have made a move (an imported game counts its
    /// imported moves).
    pub(super) fn movers(&self) -> SeatSet {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::MoveApplied { report } => Some(report.seat),
                EventKind::GameOver { .. } => None,
            })
            .collect()
    }

    /// Appends the next event, leaving the game at `ply`, with the clocks
    /// `clock` right after it, and broadcasts it to the watchers.
    pub(super) fn push(&mut self, kind: EventKind, ply: u32, clock: ClockReading) {
        let event = Arc::new(Event::new(self.events.len() as u64 + 1, ply, kind, clock));
        self.events.push(event.clone());
        // No receiver left: nobody watches, the ring goes.
        if let Some(tx) = &self.ring
            && tx.send(event).is_err()
        {
            self.ring = None;
        }
    }

    /// A receiver of the events after the last one logged (the caller
    /// holds the session's lock, so every earlier event is in the log): the
    /// ring, of `buffer` events, is made on first use.
    pub(super) fn subscribe(&mut self, buffer: usize) -> broadcast::Receiver<Arc<Event>> {
        self.ring
            .get_or_insert_with(|| broadcast::channel(buffer).0)
            .subscribe()
    }

    /// Whether the watchers' broadcast ring is allocated.
    #[cfg(test)]
    pub(super) fn has_ring(&self) -> bool {
        self.ring.is_some()
    }
}
