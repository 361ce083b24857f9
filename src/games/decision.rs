//! A move decided before it is applied ([`Game::decide`]).

use super::{Game, MoveInput, MoveReport};

/// A move decided by [`Game::decide`], not yet applied.
#[derive(Debug)]
pub struct Decision {
    /// What [`Game::play`] of the move reports.
    pub report: MoveReport,
    /// The game after the move, when it was decided on a copy; `None`: the
    /// game is as it was, and [`Game::play`] of the same move makes it so
    /// (with the same report).
    pub after: Option<Box<dyn Game>>,
}

impl Decision {
    /// Applies the decided move `mv` to `game`, the game it was decided on
    /// (unchanged since): the copy it was decided on takes its place, or
    /// the move is played on it again. The move's report; `Err` with the
    /// decided report if the game did not make it again (an engine
    /// breaking [`Game::decide`]'s contract: the game is then as that play
    /// left it).
    pub fn apply(self, game: &mut Box<dyn Game>, mv: &MoveInput) -> Result<MoveReport, MoveReport> {
        match self.after {
            Some(after) => {
                *game = after;
                Ok(self.report)
            }
            None => match game.play(mv) {
                Ok(again) if again == self.report => Ok(self.report),
                _ => Err(self.report),
            },
        }
    }
}
