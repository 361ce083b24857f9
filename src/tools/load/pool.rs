//! The moves the load plays, chosen before the runs: random legal games
//! played with the engine ([`crate::games::GameKind::random_game`]), so
//! that the run spends no CPU on move choice.

use std::sync::Arc;

use crate::games::{GameRules, Rules, Setup, random_game};
use crate::service::grpc::games::wire_game;
use crate::tools::games::ToolRules;

/// Plays `n` random games with the engine under the default rules (what
/// `CreateGame` gives when no rules are asked for): each a list of moves in
/// notation, to the game's end.
pub fn random_games(n: usize, seed: u64) -> Vec<Arc<[String]>> {
    random_games_from(&GameRules::default(), None, n, seed)
}

/// [`random_games`] under `options` (of a game set up without a seed).
pub fn random_games_with<R: Rules>(options: R, n: usize, seed: u64) -> Vec<Arc<[String]>> {
    random_games_from(&GameRules::new(options), None, n, seed)
}

/// [`random_games`] of any game: `n` random games under `rules` (set up
/// from its seed, if seeded), each to its end.
pub fn random_games_of(
    rules: &ToolRules,
    n: usize,
    seed: u64,
) -> Result<Vec<Arc<[String]>>, String> {
    rules.start()?;
    Ok(random_games_from(&rules.rules, rules.setup(), n, seed))
}

/// `n` random games of `rules`, the `i`th drawn from `seed` and `i`, so a
/// pool is the same for the same seed.
fn random_games_from(
    rules: &GameRules,
    setup: Option<Setup>,
    n: usize,
    seed: u64,
) -> Vec<Arc<[String]>> {
    let kind = wire_game(rules.game_name()).map(|g| g.kind());
    (0..n as u64)
        .map(|i| {
            let seed = seed.wrapping_mul(1_000_003).wrapping_add(i);
            Arc::from(match kind {
                Some(kind) => kind.random_game(rules, setup, seed),
                // A game of no registry (the tests' own): through the trait.
                None => random_game(rules.rules().start(setup).as_mut(), seed),
            })
        })
        .collect()
}
