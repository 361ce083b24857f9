//! The moves the load plays, chosen before the runs: random legal games
//! played with the engine, so that the run spends no CPU on move choice.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

use crate::games::punct::{Engine, RuleOptions};
use crate::tools::games::ToolRules;

/// Plays `n` random games with the engine under the default rules (what
/// `CreateGame` gives when no rules are asked for): each a list of moves in
/// notation, to the game's end.
pub fn random_games(n: usize, seed: u64) -> Vec<Arc<[String]>> {
    random_games_with(RuleOptions::default(), n, seed)
}

/// [`random_games`] under `options`.
pub fn random_games_with(options: RuleOptions, n: usize, seed: u64) -> Vec<Arc<[String]>> {
    (0..n as u64)
        .map(|i| {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(i));
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
            Arc::from(moves)
        })
        .collect()
}

/// [`random_games`] of any game, through the game-agnostic trait: `n`
/// uniform-random games under `rules` (set up from its seed, if seeded),
/// each to its end.
pub fn random_games_of(
    rules: &ToolRules,
    n: usize,
    seed: u64,
) -> Result<Vec<Arc<[String]>>, String> {
    (0..n as u64)
        .map(|i| {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(i));
            let mut game = rules.start()?;
            let mut moves = Vec::new();
            while game.verdict().is_none() {
                let legal = game.legal_moves();
                if legal.is_empty() {
                    break;
                }
                let detail = &legal[rng.random_range(0..legal.len())].detail;
                match game.play(&detail.to_input()) {
                    Ok(played) => moves.push(played.detail.notation),
                    Err(_) => break,
                }
            }
            Ok(Arc::from(moves))
        })
        .collect()
}
