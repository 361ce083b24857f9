//! Punto as a whole ([`GameKind`]): its name, records, seats, notation, text
//! picture and greedy bot.

use super::bot::PuntoGreedyBot;
use super::referee::{self, PuntoState};
use super::{notation, render};
use crate::games::{GameKind, GameRules, Importer, MoveInput, Setup, SharedState, Strategy};

/// Punto.
pub struct Punto;

/// Every seat name of Punto's tables (2, 3, 4 players, teams).
const SEAT_NAMES: &[&str] = &[
    "red-blue",
    "orange-green",
    "red",
    "orange",
    "blue",
    "green",
    "red-blue-1",
    "orange-green-1",
    "red-blue-2",
    "orange-green-2",
];

impl GameKind for Punto {
    fn name(&self) -> &'static str {
        "punto"
    }

    fn importer(&self) -> Importer {
        referee::import
    }

    fn seat_names(&self) -> &'static [&'static str] {
        SEAT_NAMES
    }

    fn notation(&self, text: &str) -> Option<MoveInput> {
        referee::notation(text)
    }

    fn picture(&self, state: &SharedState) -> String {
        state
            .get::<PuntoState>()
            .map(render::ascii)
            .unwrap_or_default()
    }

    /// Its greedy bot never sees the seed, even when the tool supplied it:
    /// it plays from its seat's view of the table (the decks' order is
    /// secret to every seat, docs/rules/punto.md §11).
    fn greedy(&self, seed: u64, _: &GameRules, _: Option<Setup>) -> Box<dyn Strategy> {
        Box::new(PuntoGreedyBot::new(seed))
    }

    fn bots_read_state(&self) -> bool {
        true
    }

    fn minus_move(&self, text: &str) -> bool {
        notation::parse_cell(text).is_ok()
    }
}
