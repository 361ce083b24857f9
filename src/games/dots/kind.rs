//! Dots as a whole ([`GameKind`]): its name, records, seats, notation, text
//! picture and greedy bot.

use super::bot::DotsGreedyBot;
use super::referee::{self, DotsState};
use super::{RuleOptions, render};
use crate::games::{GameKind, GameRules, Importer, MoveInput, Setup, SharedState, Strategy};

/// Dots.
pub struct Dots;

impl GameKind for Dots {
    fn name(&self) -> &'static str {
        "dots"
    }

    fn importer(&self) -> Importer {
        referee::import
    }

    fn seat_names(&self) -> &'static [&'static str] {
        referee::SEAT_NAMES
    }

    fn notation(&self, text: &str) -> Option<MoveInput> {
        referee::notation_input(text)
    }

    fn picture(&self, state: &SharedState) -> String {
        state
            .get::<DotsState>()
            .map(|s| render::picture(&s.field, s.to_move, s.outcome.as_ref()))
            .unwrap_or_default()
    }

    fn greedy(&self, seed: u64, rules: &GameRules, setup: Option<Setup>) -> Box<dyn Strategy> {
        let options = rules.get::<RuleOptions>().copied().unwrap_or_default();
        Box::new(DotsGreedyBot::new(seed, options, setup))
    }
}
