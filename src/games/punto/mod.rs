//! The Punto engine: a pure, synchronous implementation of
//! `docs/rules/punto.md`. It knows nothing of protobuf, async, locks or
//! telemetry; the session layer drives it through [`referee`].
//!
//! * [`card`]: colours, cards, the canonical order, multisets (§2)
//! * [`table`]: cells, stacks, the floating 6 × 6 area, legal cells, rows
//!   (§4, §5.3, §6, §7.2)
//! * [`round`]: decks, turns, deadlocks and their tie-breaks, the removed
//!   card, the next first seat, round results (§5, §7, §8)
//! * [`deal`]: the fair shuffle and the deal of a round (§10)
//! * this file: configurations, sides, rule options, the refusal reasons
//!   (§5.3) and the [`Engine`] (§3, §9)
//! * [`notation`]: move text (§4.4); [`record`]: game records (§12)
//! * [`render`]: the table as text; [`svg`]: the table as SVG
//! * [`referee`]: the [`Game`](crate::games::Game) implementation

pub mod bot;
pub mod card;
pub mod deal;
pub mod kind;
pub mod notation;
mod options;
mod play;
pub mod record;
pub mod referee;
pub mod render;
pub mod round;
pub mod svg;
pub mod table;

pub use card::{Card, CardCounts, Colour};
pub use deal::Key;
pub use options::*;
pub use play::*;
pub use round::{
    Deadlock, DeadlockCause, Deck, Placement, Round, RoundEnd, RoundKind, RoundOutcome, SideRows,
    TieBreak,
};
pub use table::{Bounds, Cell, CellList, Row, Stack, Step, Table};
