//! A game that is made only when it first changes.
//!
//! A new game's whole state follows from its rules and its setup (the seed
//! of a seeded game): [`Rules::start`] makes the same game from them every
//! time. Engines keep their position in fixed-size tables (a Dots field of
//! 64 × 64 bitsets is 4.6 KB, a Punto table 2.5 KB, a PÜNCT position 1 KB),
//! so a server holding many games that nobody has played yet would hold
//! kilobytes per game of start positions. [`LazyGame`] holds the rules and
//! the setup instead, with the few facts about the start that are asked for
//! on every call (whose turn, the seats), and makes the engine's game at the
//! first change (a move or a referee ending). A read before then answers
//! from a start position made for that read and dropped after it: the
//! answers are the same as the engine's game gives, since the start is.
//! Once made, every call goes to the engine's game.

use super::{
    Decision, Game, GameRules, MoveDetail, MoveError, MoveInput, MoveReport, Outcome,
    RefereeAction, Seat, Setup, SharedState, Viewer,
};

/// A game made on its first change (see the module docs).
#[derive(Debug)]
pub struct LazyGame {
    rules: GameRules,
    /// What the game is set up from (given exactly for seeded rules).
    setup: Option<Setup>,
    /// What [`Game::setup`] of the start answers.
    shown_setup: Option<Setup>,
    seat_names: &'static [&'static str],
    /// Whose turn it is at the start.
    first: Option<Seat>,
    hides_information: bool,
    dealt: bool,
    /// The engine's game, once the game changed.
    game: Option<Box<dyn Game>>,
}

impl LazyGame {
    /// A new game of `rules` set up from `setup` (given exactly when the
    /// rules are seeded, as for [`Rules::start`](super::Rules::start)),
    /// made on its first change.
    pub fn new(rules: GameRules, setup: Option<Setup>) -> LazyGame {
        let start = rules.rules().start(setup);
        LazyGame {
            shown_setup: start.setup(),
            seat_names: start.seat_names(),
            first: start.to_move(),
            hides_information: start.hides_information(),
            dealt: start.dealt(),
            rules,
            setup,
            game: None,
        }
    }

    /// Whether the engine's game is made (the game changed).
    pub fn is_made(&self) -> bool {
        self.game.is_some()
    }

    /// The game now: the engine's, or a start made for this call.
    fn with<R>(&self, read: impl FnOnce(&dyn Game) -> R) -> R {
        match &self.game {
            Some(game) => read(&**game),
            None => read(&*self.rules.rules().start(self.setup)),
        }
    }

    /// The engine's game, made first if need be: for a change.
    fn made(&mut self) -> &mut dyn Game {
        let (rules, setup) = (&self.rules, self.setup);
        &mut **self.game.get_or_insert_with(|| rules.rules().start(setup))
    }
}

impl Clone for LazyGame {
    fn clone(&self) -> LazyGame {
        LazyGame {
            rules: self.rules.clone(),
            setup: self.setup,
            shown_setup: self.shown_setup,
            seat_names: self.seat_names,
            first: self.first,
            hides_information: self.hides_information,
            dealt: self.dealt,
            game: self.game.as_ref().map(|g| g.clone_box()),
        }
    }
}

impl Game for LazyGame {
    fn rules(&self) -> GameRules {
        self.rules.clone()
    }

    fn seat_names(&self) -> &'static [&'static str] {
        self.seat_names
    }

    fn ply(&self) -> u32 {
        self.game.as_ref().map_or(0, |g| g.ply())
    }

    fn to_move(&self) -> Option<Seat> {
        self.game.as_ref().map_or(self.first, |g| g.to_move())
    }

    fn outcome(&self) -> Option<Outcome> {
        self.game.as_ref().and_then(|g| g.outcome())
    }

    fn setup(&self) -> Option<Setup> {
        self.game.as_ref().map_or(self.shown_setup, |g| g.setup())
    }

    fn play(&mut self, mv: &MoveInput) -> Result<MoveReport, MoveError> {
        let was_made = self.is_made();
        let played = self.made().play(mv);
        // A refused move changed nothing: the game stays unmade.
        if played.is_err() && !was_made {
            self.game = None;
        }
        played
    }

    fn legal_moves(&self) -> Vec<MoveReport> {
        self.with(|g| g.legal_moves())
    }

    fn snapshot(&self, viewer: Viewer) -> SharedState {
        self.with(|g| g.snapshot(viewer))
    }

    fn snapshot_at(&self, ply: u32, viewer: Viewer) -> Option<SharedState> {
        self.with(|g| g.snapshot_at(ply, viewer))
    }

    fn hides_information(&self) -> bool {
        self.game
            .as_ref()
            .map_or(self.hides_information, |g| g.hides_information())
    }

    fn dealt(&self) -> bool {
        self.game.as_ref().map_or(self.dealt, |g| g.dealt())
    }

    fn redact(&self, detail: &MoveDetail, viewer: Viewer) -> MoveDetail {
        self.with(|g| g.redact(detail, viewer))
    }

    fn last_move(&self) -> Option<MoveDetail> {
        self.game.as_ref().and_then(|g| g.last_move())
    }

    fn record(&self, tags: &[(String, String)], viewer: Viewer) -> String {
        self.with(|g| g.record(tags, viewer))
    }

    fn conclude(&mut self, ending: RefereeAction) -> Result<Outcome, MoveError> {
        let was_made = self.is_made();
        let concluded = self.made().conclude(ending);
        if concluded.is_err() && !was_made {
            self.game = None;
        }
        concluded
    }

    fn decide(&mut self, mv: &MoveInput) -> Result<Decision, MoveError> {
        let Some(game) = &mut self.game else {
            // Not made: the copy is the rules and the setup.
            let mut copy = self.clone();
            let report = copy.play(mv)?;
            return Ok(Decision {
                report,
                after: Some(Box::new(copy)),
            });
        };
        let Decision { report, after } = game.decide(mv)?;
        // A copy of the engine's game goes back into a copy of this one.
        let after = after.map(|made| -> Box<dyn Game> {
            Box::new(LazyGame {
                rules: self.rules.clone(),
                game: Some(made),
                ..*self
            })
        });
        Ok(Decision { report, after })
    }

    fn clone_box(&self) -> Box<dyn Game> {
        Box::new(self.clone())
    }

    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool {
        self.with(|g| g.same_move(ply, input, played))
    }

    fn rules_header(&self) -> String {
        self.with(|g| g.rules_header())
    }
}

#[cfg(test)]
mod tests;
