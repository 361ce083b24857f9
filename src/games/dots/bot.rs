//! The greedy bot of Dots: it keeps its own copy of the game (the engine,
//! replaying the moves the referee reports) and, for each playable cell,
//! tries a dot there on a copy of the field, for itself and for the
//! opponent. In order of preference it plays
//!
//! 1. the largest immediate capture: the cell where its own dot gains it the
//!    most (its score change minus the opponent's, docs/rules/dots.md §6.7);
//! 2. else the cell where the opponent's dot would gain the opponent the
//!    most (taking that cell first blocks it);
//! 3. else a cell next to one of its own live dots (the eight neighbours)
//!    that loses nothing, else any cell that loses nothing, else any cell.
//!
//! Ties are broken by a seeded generator, so a game is reproducible. It
//! never grounds (the stop move is left to people and other bots). A try is
//! a copy of the field (a few kilobytes, no allocation) and one placement:
//! a whole 39 × 32 turn costs a few milliseconds.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng};

use crate::games::dots::{Colour, Engine, Field, Move, Point, RuleOptions, Seed};
use crate::games::{BotFailure, BotTurn, Setup, Strategy};

/// Plays the biggest capture, else blocks the opponent's, else grows next
/// to its own dots.
pub struct DotsGreedyBot {
    rng: StdRng,
    options: RuleOptions,
    seed: Option<Seed>,
    game: Engine,
    /// The moves `game` has played, as the referee gave them.
    seen: Vec<String>,
}

impl DotsGreedyBot {
    /// A bot for games of `options` set up from `setup` (for a seeded
    /// start); ties are broken by `seed`.
    pub fn new(seed: u64, options: RuleOptions, setup: Option<Setup>) -> DotsGreedyBot {
        let start_seed = setup.and_then(|s| Seed::new(&s.seed).ok());
        DotsGreedyBot {
            rng: StdRng::seed_from_u64(seed),
            options,
            seed: start_seed,
            game: Engine::start(options, start_seed),
            seen: Vec::new(),
        }
    }

    fn restart(&mut self) {
        self.game = Engine::start(self.options, self.seed);
        self.seen.clear();
    }

    /// Brings the private copy up to `history`, rebuilding it when the
    /// history is not a continuation of what it has seen.
    fn follow(&mut self, history: &[String]) -> Result<(), BotFailure> {
        if !history.starts_with(&self.seen) {
            self.restart();
        }
        for text in &history[self.seen.len()..] {
            let played = text
                .parse::<Move>()
                .map_err(|e| e.to_string())
                .and_then(|mv| self.game.play(mv).map_err(|e| e.to_string()));
            if let Err(e) = played {
                self.restart();
                return Err(BotFailure::Desync(format!("`{text}`: {e}")));
            }
            self.seen.push(text.clone());
        }
        Ok(())
    }

    /// Picks one of `cells` with the greatest `score`, if any scores above
    /// `floor`.
    fn best(&mut self, cells: &[(Point, i64)], floor: i64) -> Option<Point> {
        let top = cells.iter().map(|&(_, s)| s).max()?;
        if top <= floor {
            return None;
        }
        let best: Vec<Point> = cells
            .iter()
            .filter(|&&(_, s)| s == top)
            .map(|&(p, _)| p)
            .collect();
        Some(best[self.rng.random_range(0..best.len())])
    }
}

/// What a dot of `player` on `p` gains `player`: its score change minus the
/// opponent's (a dot played into an enemy base loses).
fn gain(field: &Field, player: Colour, p: Point) -> i64 {
    let mut tried = field.clone();
    if tried.place(player, p).is_err() {
        return i64::MIN;
    }
    let delta = |c: Colour| i64::from(tried.score(c)) - i64::from(field.score(c));
    delta(player) - delta(player.other())
}

/// Whether `p` touches a live dot of `player` (the eight neighbours).
fn next_to_own(field: &Field, player: Colour, p: Point) -> bool {
    let live = field.live(player);
    (-1i32..=1).any(|dy| {
        (-1i32..=1).any(|dx| {
            let (x, y) = (i32::from(p.x) + dx, i32::from(p.y) + dy);
            (dx, dy) != (0, 0)
                && x >= 1
                && y >= 1
                && field
                    .index_of(Point::new(x as u16, y as u16))
                    .is_some_and(|(ix, iy)| live.contains(ix, iy))
        })
    })
}

impl Strategy for DotsGreedyBot {
    fn choose(&mut self, turn: &BotTurn<'_>) -> Result<String, BotFailure> {
        self.follow(turn.history)?;
        if self.game.is_over() {
            return Err(BotFailure::NoMoves);
        }
        let me = self.game.to_move();
        let field = self.game.field().clone();
        let cells: Vec<Point> = field
            .playable()
            .iter()
            .map(|(x, y)| Point::new(x as u16 + 1, y as u16 + 1))
            .collect();
        if cells.is_empty() {
            return Err(BotFailure::NoMoves);
        }
        let mine: Vec<(Point, i64)> = cells.iter().map(|&p| (p, gain(&field, me, p))).collect();
        let chosen = self
            .best(&mine, 0)
            .or_else(|| {
                let theirs: Vec<(Point, i64)> = cells
                    .iter()
                    .map(|&p| (p, gain(&field, me.other(), p)))
                    .collect();
                self.best(&theirs, 0)
            })
            .or_else(|| {
                let safe_near: Vec<(Point, i64)> = mine
                    .iter()
                    .filter(|&&(p, g)| g >= 0 && next_to_own(&field, me, p))
                    .map(|&(p, _)| (p, 0))
                    .collect();
                self.best(&safe_near, -1)
            })
            .or_else(|| {
                let safe: Vec<(Point, i64)> =
                    mine.iter().filter(|&&(_, g)| g >= 0).copied().collect();
                self.best(&safe, -1)
            })
            .or_else(|| self.best(&mine, i64::MIN))
            .unwrap_or(cells[0]);
        Ok(Move::Place(chosen).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::dots::Start;

    fn turn<'a>(history: &'a [String]) -> BotTurn<'a> {
        BotTurn {
            history,
            legal: &[],
            clock_ms: None,
            view: None,
        }
    }

    fn answer(bot: &mut DotsGreedyBot, history: &[&str]) -> String {
        let history: Vec<String> = history.iter().map(|s| s.to_string()).collect();
        bot.choose(&turn(&history)).unwrap()
    }

    fn five() -> RuleOptions {
        RuleOptions::new(5, 5, Start::Empty, 0).unwrap()
    }

    #[test]
    fn takes_the_capture_then_blocks_then_grows() {
        // docs/rules/dots.md §11.A one move short: Red's 3,4 captures 3,3.
        let mut bot = DotsGreedyBot::new(1, five(), None);
        let before = ["3,2", "3,3", "2,3", "1,1", "4,3", "1,2"];
        assert_eq!(answer(&mut bot, &before), "3,4");
        // Blue to move in the same position: it must block 3,4.
        let blue = ["3,2", "3,3", "2,3", "1,1", "4,3", "1,2", "5,5"];
        assert_eq!(answer(&mut bot, &blue), "3,4");
        // Nothing to take or block: a cell next to its own dot.
        let mut bot = DotsGreedyBot::new(2, five(), None);
        let grown = answer(&mut bot, &["3,3", "1,1"]);
        let p: Point = grown.parse().unwrap();
        assert!(p.x.abs_diff(3) <= 1 && p.y.abs_diff(3) <= 1, "{grown}");
    }

    #[test]
    fn same_seed_same_game_and_a_bad_history_is_a_desync() {
        let play = |seed| {
            let mut bot = DotsGreedyBot::new(seed, five(), None);
            let mut history: Vec<String> = Vec::new();
            for _ in 0..10 {
                history.push(answer(
                    &mut bot,
                    &history.iter().map(String::as_str).collect::<Vec<_>>(),
                ));
            }
            history
        };
        assert_eq!(play(4), play(4));
        let mut bot = DotsGreedyBot::new(1, five(), None);
        let bad = vec!["9,9".to_string()];
        assert!(matches!(
            bot.choose(&turn(&bad)),
            Err(BotFailure::Desync(_))
        ));
    }
}
