//! A game: turns, the start, the end and the move list (docs/rules/dots.md §4, §7).

use super::{
    Colour, Field, IllegalMove, Move, OptionsError, Placement, Point, RuleOptions, Seed, TakeLog,
    setup,
};

// --- The end of the game (docs/rules/dots.md §7) --------------------------------------------

/// Why a game ended (docs/rules/dots.md §7, §9 `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// No playable cell left (§7.1).
    Full,
    /// The player to move grounded (§7.2).
    Ground,
    /// The move limit was reached (§7.3).
    MoveLimit,
    /// A player resigned (§7.5).
    Resign,
    /// The players agreed a draw (§7.5).
    DrawAgreement,
    /// A player ran out of time (§7.5).
    Timeout,
    /// A player left the game (the session's `ABANDONED`; docs/DOTS.md).
    Abandon,
    /// The game was called off (§7.5).
    Abort,
}

impl EndReason {
    /// Every reason.
    pub const ALL: [EndReason; 8] = [
        EndReason::Full,
        EndReason::Ground,
        EndReason::MoveLimit,
        EndReason::Resign,
        EndReason::DrawAgreement,
        EndReason::Timeout,
        EndReason::Abandon,
        EndReason::Abort,
    ];

    /// The stable upper-case name (referee actions as the session layer
    /// names them: `RESIGNATION`, `ABORTED`, …).
    pub const fn name(self) -> &'static str {
        match self {
            EndReason::Full => "FULL",
            EndReason::Ground => "GROUND",
            EndReason::MoveLimit => "MOVE_LIMIT",
            EndReason::Resign => "RESIGNATION",
            EndReason::DrawAgreement => "DRAW_AGREEMENT",
            EndReason::Timeout => "TIMEOUT",
            EndReason::Abandon => "ABANDONED",
            EndReason::Abort => "ABORTED",
        }
    }

    /// The value of a record's `end:` header (§9).
    pub const fn record_name(self) -> &'static str {
        match self {
            EndReason::Full => "full",
            EndReason::Ground => "ground",
            EndReason::MoveLimit => "move-limit",
            EndReason::Resign => "resign",
            EndReason::DrawAgreement => "draw-agreement",
            EndReason::Timeout => "timeout",
            // §9 has no `abandon`: a seat that left and did not come back
            // lost on time.
            EndReason::Abandon => "timeout",
            EndReason::Abort => "abort",
        }
    }

    /// The reason of that record name (any letter case).
    /// Older records wrote `abandon`, still read; `timeout` reads as
    /// [`EndReason::Timeout`].
    pub fn from_record_name(name: &str) -> Option<EndReason> {
        if name.trim().eq_ignore_ascii_case("abandon") {
            return Some(EndReason::Abandon);
        }
        EndReason::ALL
            .into_iter()
            .find(|r| r.record_name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether the board rules end the game this way (§7.1–7.3), not the
    /// referee (§7.5).
    pub const fn is_board_rule(self) -> bool {
        matches!(
            self,
            EndReason::Full | EndReason::Ground | EndReason::MoveLimit
        )
    }
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// Why.
    pub reason: EndReason,
    /// Who won; `None` for a draw or an abort.
    pub winner: Option<Colour>,
    /// The scores at the end, Red first (§6.7).
    pub scores: [u32; 2],
}

impl Outcome {
    /// A board ending: the higher score wins, equal scores draw (§7.4).
    pub fn by_score(reason: EndReason, scores: [u32; 2]) -> Outcome {
        let winner = match scores[0].cmp(&scores[1]) {
            std::cmp::Ordering::Greater => Some(Colour::Red),
            std::cmp::Ordering::Less => Some(Colour::Blue),
            std::cmp::Ordering::Equal => None,
        };
        Outcome {
            reason,
            winner,
            scores,
        }
    }

    /// The record's `result:` value (§9): `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub const fn result_text(&self) -> &'static str {
        match (self.reason, self.winner) {
            (EndReason::Abort, _) => "*",
            (_, Some(Colour::Red)) => "1-0",
            (_, Some(Colour::Blue)) => "0-1",
            (_, None) => "1/2-1/2",
        }
    }
}

// --- A game -------------------------------------------------------------------

/// A move accepted by [`Engine::play`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Played {
    /// The move.
    pub mv: Move,
    /// Who made it.
    pub colour: Colour,
    /// Moves made after it.
    pub ply: u32,
    /// What a placement did (zero for `ground`).
    pub placement: Placement,
    /// How the game ended, if this move ended it.
    pub outcome: Option<Outcome>,
}

/// A game's state before a move, to take the move back
/// ([`Engine::mark`]).
#[derive(Debug, Clone)]
pub struct Mark {
    field: Field,
    to_move: Colour,
    outcome: Option<Outcome>,
}

/// One game of Dots: options, seed, field, turn, moves and outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    options: RuleOptions,
    seed: Option<Seed>,
    field: Field,
    to_move: Colour,
    moves: Vec<Move>,
    outcome: Option<Outcome>,
}

impl Engine {
    /// A game at its start position (docs/rules/dots.md §4). `seed` is required by
    /// `quadruple-cross` and refused otherwise (§3).
    pub fn new(options: RuleOptions, seed: Option<Seed>) -> Result<Engine, OptionsError> {
        match (options.start.needs_seed(), seed.is_some()) {
            (true, false) => return Err(OptionsError::SeedRequired),
            (false, true) => {
                return Err(OptionsError::SeedNotAllowed {
                    start: options.start,
                });
            }
            _ => {}
        }
        Ok(Engine::start(options, seed))
    }

    /// A game at its start position, the seed unchecked (a `quadruple-cross`
    /// game without one has no start dots; a seed given to another start is
    /// ignored): for callers that checked already.
    pub fn start(options: RuleOptions, seed: Option<Seed>) -> Engine {
        let seed = seed.filter(|_| options.start.needs_seed());
        let mut field = Field::new(&options);
        for (point, colour) in setup::start_dots(&options, seed.as_ref()) {
            field.put_start_dot(colour, point);
        }
        Engine {
            options,
            seed,
            field,
            to_move: Colour::Red,
            // Grown as moves come (a room for every cell would be 7.5 KB
            // on the standard field, mostly never used).
            moves: Vec::new(),
            outcome: None,
        }
    }

    /// The options.
    pub fn options(&self) -> RuleOptions {
        self.options
    }

    /// The seed of a `quadruple-cross` game.
    pub fn seed(&self) -> Option<&Seed> {
        self.seed.as_ref()
    }

    /// The field.
    pub fn field(&self) -> &Field {
        &self.field
    }

    /// Who moves next (meaningless once over).
    pub fn to_move(&self) -> Colour {
        self.to_move
    }

    /// The moves made so far (start dots are not moves, §4).
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// How many moves were made.
    pub fn ply(&self) -> u32 {
        self.moves.len() as u32
    }

    /// How the game ended, if it has.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Whether the game has ended.
    pub fn is_over(&self) -> bool {
        self.outcome.is_some()
    }

    /// The scores now, Red first (§6.7).
    pub fn scores(&self) -> [u32; 2] {
        self.field.scores()
    }

    /// Whether the player to move may make `mv` (docs/rules/dots.md §5): the one
    /// legality check [`Engine::play`] and [`Engine::legal_moves_into`] share.
    pub fn check(&self, mv: Move) -> Result<(), IllegalMove> {
        if self.is_over() {
            return Err(IllegalMove::GameOver);
        }
        match mv {
            Move::Place(p) => self.field.check(p).map(|_| ()),
            Move::Ground => Ok(()), // §7.2: on any turn of a game in progress
        }
    }

    /// Plays `mv` for the player to move; a refused move changes nothing.
    pub fn play(&mut self, mv: Move) -> Result<Played, IllegalMove> {
        self.play_inner(mv, None)
    }

    /// [`Engine::play`], writing the areas taken into `log`.
    pub fn play_logged(&mut self, mv: Move, log: &mut TakeLog) -> Result<Played, IllegalMove> {
        self.play_inner(mv, Some(log))
    }

    /// What a move may change, kept to take it back
    /// ([`Engine::take_back`]): a copy of the field (a few kilobytes, no
    /// allocation), the turn and the outcome.
    pub fn mark(&self) -> Mark {
        Mark {
            field: self.field.clone(),
            to_move: self.to_move,
            outcome: self.outcome,
        }
    }

    /// Takes back the last move, played since `mark` was taken: the game
    /// is exactly as it was then.
    pub fn take_back(&mut self, mark: Mark) {
        self.field = mark.field;
        self.to_move = mark.to_move;
        self.outcome = mark.outcome;
        self.moves.pop();
    }

    fn play_inner(&mut self, mv: Move, log: Option<&mut TakeLog>) -> Result<Played, IllegalMove> {
        if self.is_over() {
            return Err(IllegalMove::GameOver);
        }
        let colour = self.to_move;
        let mut placement = Placement::default();
        let mut ended = None;
        match mv {
            Move::Place(p) => {
                placement = match log {
                    Some(log) => self.field.place_logged(colour, p, log)?,
                    None => self.field.place(colour, p)?,
                };
                if self.field.is_full() {
                    ended = Some(EndReason::Full); // §7.1
                }
            }
            Move::Ground => {
                if let Some(log) = log {
                    log.len = 0;
                }
                self.field.ground(colour);
                ended = Some(EndReason::Ground); // §7.2
            }
        }
        self.moves.push(mv);
        let limit = self.options.max_moves;
        if ended.is_none() && limit > 0 && self.moves.len() as u64 >= u64::from(limit) {
            ended = Some(EndReason::MoveLimit); // §7.3
        }
        self.outcome = ended.map(|reason| Outcome::by_score(reason, self.field.scores()));
        self.to_move = colour.other(); // §5.1
        Ok(Played {
            mv,
            colour,
            ply: self.ply(),
            placement,
            outcome: self.outcome,
        })
    }

    /// The legal moves of the player to move into `out` (cleared first):
    /// every playable cell in reading order, then `ground`; none once over.
    pub fn legal_moves_into(&self, out: &mut Vec<Move>) {
        out.clear();
        if self.is_over() {
            return;
        }
        out.extend(
            self.field
                .playable()
                .iter()
                .map(|(x, y)| Move::Place(Point::from_index(x, y))),
        );
        out.push(Move::Ground);
    }

    /// The legal moves (see [`Engine::legal_moves_into`]).
    pub fn legal_moves(&self) -> Vec<Move> {
        let mut out = Vec::new();
        self.legal_moves_into(&mut out);
        out
    }

    /// Ends the game by a referee action (docs/rules/dots.md §7.5), with `winner`
    /// (ignored for a draw agreement or an abort); refused once over.
    pub fn conclude(
        &mut self,
        reason: EndReason,
        winner: Option<Colour>,
    ) -> Result<Outcome, IllegalMove> {
        if self.is_over() {
            return Err(IllegalMove::GameOver);
        }
        let winner = match reason {
            EndReason::DrawAgreement | EndReason::Abort => None,
            _ => winner,
        };
        let outcome = Outcome {
            reason,
            winner,
            scores: self.field.scores(),
        };
        self.outcome = Some(outcome);
        Ok(outcome)
    }
}
