//! PÜNCT as a whole ([`GameKind`]): its name, records, seats, notation,
//! text picture and greedy bot.

use super::bot::GreedyBot;
use super::referee::{self, PunctMoveInput, PunctSnapshot};
use super::{NotatedMove, RuleOptions, render};
use crate::games::{GameKind, GameRules, Importer, MoveInput, Setup, Snapshot, Strategy};

/// PÜNCT.
pub struct Punct;

impl GameKind for Punct {
    fn name(&self) -> &'static str {
        "punct"
    }

    fn importer(&self) -> Importer {
        referee::import
    }

    fn seat_names(&self) -> &'static [&'static str] {
        referee::SEAT_NAMES
    }

    fn notation(&self, text: &str) -> Option<MoveInput> {
        let notated = text.parse::<NotatedMove>().ok()?;
        Some(MoveInput::new(PunctMoveInput {
            structured: None,
            notation: Some(notated),
        }))
    }

    fn picture(&self, state: &Snapshot) -> String {
        state
            .get::<PunctSnapshot>()
            .map(|s| render::ascii(&s.position))
            .unwrap_or_default()
    }

    fn greedy(&self, seed: u64, rules: &GameRules, _: Option<Setup>) -> Box<dyn Strategy> {
        let variant = rules
            .get::<RuleOptions>()
            .map_or_else(Default::default, |o| o.variant);
        Box::new(GreedyBot::new(seed, variant))
    }
}
