//! The numbered events of a game's log, and the answer to a move.

use super::ClockReading;
use crate::games::{MoveReport, Outcome};

/// One numbered event of a game's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Position in the log, from 1: a move's event has `sequence == ply`; the
    /// game-over event comes last, at final ply + 1.
    pub sequence: u64,
    /// The ply after the event.
    pub ply: u32,
    /// What happened.
    pub kind: EventKind,
    /// The clocks right after it, when there is anything to read (a game
    /// without a clock has nothing, and most games have none: a finished
    /// game keeps its events, so they are kept small).
    pub(super) clock: Option<Box<ClockReading>>,
}

// Every move's event stays in its game's log while the game is kept
// (finished games too): keep them this small (docs/BENCHMARKS.md, "What a
// finished game keeps").
const _: () = assert!(std::mem::size_of::<Event>() <= 96);

/// The reading of no clock.
static NO_CLOCK: ClockReading = ClockReading {
    remaining: None,
    running: None,
    first_move_left: None,
};

impl Event {
    /// Event `sequence` of a log, leaving the game at `ply`, with the
    /// clocks `clock` right after it.
    pub fn new(sequence: u64, ply: u32, kind: EventKind, clock: ClockReading) -> Event {
        Event {
            sequence,
            ply,
            kind,
            clock: (clock != NO_CLOCK).then(|| Box::new(clock)),
        }
    }

    /// The clocks right after the event.
    pub fn clock(&self) -> &ClockReading {
        self.clock.as_deref().unwrap_or(&NO_CLOCK)
    }
}

/// What an event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A move was played.
    MoveApplied {
        /// The move, its mover, its effect and who moves next.
        report: MoveReport,
    },
    /// The game ended.
    GameOver {
        /// How.
        outcome: Outcome,
    },
}

/// The answer to a move: what was played and where the game stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveReceipt {
    /// The move as played (with who moves next: `report.next`).
    pub report: MoveReport,
    /// True when this answers a retry from the first result.
    pub replayed: bool,
}
