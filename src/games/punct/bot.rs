//! The greedy bot: PÜNCT with intent. It keeps its own copy of the game (the
//! engine, replaying the moves the referee reports), scores each legal move
//! by the connection distance after it ([`eval::rank_moves`]: the opponent's
//! distance minus its own, a win or a loss on the spot above and below all
//! else), and plays a best one, breaking ties with a seeded generator.
//!
//! Scoring every candidate is affordable: a few thousand moves at a few
//! microseconds each (docs/BOTS.md has the profile), so no sampling.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng};

use crate::games::punct::{Engine, RuleOptions, Variant, eval};
use crate::games::{BotFailure, BotTurn, Strategy};

/// Plays the move that best shortens its own connection relative to the
/// opponent's, looking one move ahead.
pub struct GreedyBot {
    rng: StdRng,
    game: Engine,
    /// The notation of the moves `game` has played, as the referee gave them.
    seen: Vec<String>,
    variant: Variant,
}

impl GreedyBot {
    /// A bot for a game of `variant`; ties are broken by `seed`.
    pub fn new(seed: u64, variant: Variant) -> GreedyBot {
        GreedyBot {
            rng: StdRng::seed_from_u64(seed),
            game: Engine::new(RuleOptions::of(variant)),
            seen: Vec::new(),
            variant,
        }
    }

    /// Brings the private copy of the game up to `history`, rebuilding it
    /// when the history is not a continuation of what it has seen.
    fn follow(&mut self, history: &[String]) -> Result<(), BotFailure> {
        if !history.starts_with(&self.seen) {
            self.game = Engine::new(RuleOptions::of(self.variant));
            self.seen.clear();
        }
        for text in &history[self.seen.len()..] {
            if let Err(e) = self.game.play_notation(text) {
                self.game = Engine::new(RuleOptions::of(self.variant));
                self.seen.clear();
                return Err(BotFailure::Desync(format!("`{text}`: {e}")));
            }
            self.seen.push(text.clone());
        }
        Ok(())
    }
}

impl Strategy for GreedyBot {
    fn choose(&mut self, turn: &BotTurn<'_>) -> Result<String, BotFailure> {
        self.follow(turn.history)?;
        let pos = self.game.position();
        let ranked = eval::rank_moves(pos, self.variant, stride_for(turn.clock_ms));
        let Some(best) = ranked.iter().map(|(_, s)| *s).max() else {
            return Err(BotFailure::NoMoves);
        };
        let top: Vec<_> = ranked.iter().filter(|(_, s)| *s == best).collect();
        let (mv, _) = top[self.rng.random_range(0..top.len())];
        let notation = pos
            .notate(*mv)
            .ok_or_else(|| BotFailure::Desync("a generated move has no notation".into()))?;
        Ok(notation.to_string())
    }
}

/// How many moves to skip between two scored ones, so that a move costs at
/// most about a twentieth of the time left (docs/BOTS.md): scoring every
/// move takes up to ~30 ms in the opening, so all are scored with a second or
/// more left, every 8th with 200 ms to a second, and every 64th below that
/// (well under a millisecond).
pub fn stride_for(clock_ms: Option<u64>) -> usize {
    match clock_ms {
        None => 1,
        Some(ms) if ms >= 1000 => 1,
        Some(ms) if ms >= 200 => 8,
        Some(_) => 64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::punct::Colour;

    #[test]
    fn opens_with_a_best_piece_and_follows_the_game() {
        let mut bot = GreedyBot::new(1, Variant::Standard);
        let legal = vec![];
        let turn = BotTurn {
            clock_ms: None,
            history: &[],
            legal: &legal,
            view: None,
        };
        let first = bot.choose(&turn).unwrap();
        // A best opening: it shortens White's path by 3, the most one piece can.
        let mut game = Engine::new(RuleOptions::default());
        game.play_notation(&first).unwrap();
        assert_eq!(
            eval::evaluate(game.position(), Colour::White, Colour::White),
            3,
            "{first}"
        );
        let history = vec![first.clone()];
        let turn2 = BotTurn {
            clock_ms: None,
            history: &history,
            ..turn
        };
        let second = bot.choose(&turn2).unwrap();
        assert_ne!(second, first);
        // A history that is not a continuation is followed from scratch.
        let other = vec!["SE@B2:B3,B4".to_string()];
        let turn3 = BotTurn {
            clock_ms: None,
            history: &other,
            ..turn2
        };
        assert!(bot.choose(&turn3).is_ok());
        assert_eq!(bot.game.moves().len(), 1);
        let bad = vec!["SE@I9:J9,K9".to_string()];
        let turn4 = BotTurn {
            clock_ms: None,
            history: &bad,
            ..turn2
        };
        assert!(matches!(bot.choose(&turn4), Err(BotFailure::Desync(_))));
    }

    #[test]
    fn thinks_less_when_short_of_time() {
        assert_eq!(stride_for(None), 1);
        assert_eq!(stride_for(Some(60_000)), 1);
        assert_eq!(stride_for(Some(500)), 8);
        assert_eq!(stride_for(Some(50)), 64);
        // With a short clock it still answers a legal move.
        let mut bot = GreedyBot::new(3, Variant::Standard);
        let turn = BotTurn {
            history: &[],
            legal: &[],
            clock_ms: Some(10),
            view: None,
        };
        let text = bot.choose(&turn).unwrap();
        let game = crate::games::punct::Engine::new(crate::games::punct::RuleOptions::default());
        assert!(game.parse_move(&text).is_ok(), "{text}");
    }
}
