//! The random bot: a uniform choice among the legal moves, from a seeded
//! generator so a tournament can be replayed. Knows no game.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng};

use super::{Answer, BotError, BuiltinBot, Turn};

/// Plays any legal move, each equally likely.
pub struct RandomBot {
    rng: StdRng,
}

impl RandomBot {
    /// A bot whose choices are fixed by `seed`.
    pub fn new(seed: u64) -> RandomBot {
        RandomBot {
            rng: StdRng::seed_from_u64(seed),
        }
    }
}

impl BuiltinBot for RandomBot {
    fn choose(&mut self, turn: &Turn<'_>) -> Result<Answer, BotError> {
        if turn.legal.is_empty() {
            return Err(BotError::NoMoves);
        }
        let i = self.rng.random_range(0..turn.legal.len());
        Ok(Answer::Move(turn.legal[i].clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_choices_and_always_legal() {
        let legal: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
        let turn = Turn {
            clock_ms: None,
            game_id: "g",
            ply: 0,
            seat: "white",
            history: &[],
            legal: &legal,
            state: None,
        };
        let picks = |seed| {
            let mut bot = RandomBot::new(seed);
            (0..20)
                .map(|_| match bot.choose(&turn).unwrap() {
                    Answer::Move(m) => m,
                    Answer::Resign => unreachable!("random never resigns"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(7), picks(7));
        assert_ne!(picks(7), picks(8));
        assert!(picks(7).iter().all(|m| legal.contains(m)));
        let empty = Turn { legal: &[], ..turn };
        assert!(matches!(
            RandomBot::new(1).choose(&empty),
            Err(BotError::NoMoves)
        ));
    }
}
