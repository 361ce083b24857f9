//! PÜNCT as a whole ([`GameKind`]): its name, records, seats, notation,
//! text picture and greedy bot.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

use super::bot::GreedyBot;
use super::referee::{self, PunctMoveInput, PunctState};
use super::{Engine, NotatedMove, RuleOptions, render};
use crate::games::{GameKind, GameRules, Importer, MoveInput, Setup, SharedState, Strategy};

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

    fn picture(&self, state: &SharedState) -> String {
        state
            .get::<PunctState>()
            .map(|s| render::ascii(&s.position))
            .unwrap_or_default()
    }

    fn greedy(&self, seed: u64, rules: &GameRules, _: Option<Setup>) -> Box<dyn Strategy> {
        let variant = rules
            .get::<RuleOptions>()
            .map_or_else(Default::default, |o| o.variant);
        Box::new(GreedyBot::new(seed, variant))
    }

    /// With the engine itself, in its own order of the legal moves (no
    /// notation but the played moves'): a pool of long games in moments.
    fn random_game(&self, rules: &GameRules, _: Option<Setup>, seed: u64) -> Vec<String> {
        let options = rules.get::<RuleOptions>().copied().unwrap_or_default();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut game = Engine::new(options);
        let mut moves = Vec::new();
        while !game.is_over() {
            let legal = game.legal_moves();
            if legal.is_empty() {
                break;
            }
            let mv = legal[rng.random_range(0..legal.len())];
            match game.play(mv) {
                Ok(played) => moves.push(played.notation.to_string()),
                Err(_) => break,
            }
        }
        moves
    }
}
