//! The PÜNCT engine: a pure, synchronous implementation of `docs/rules/punct.md`. It knows
//! nothing of protobuf, async, locks or telemetry; the session layer drives it
//! through [`Engine`].
//!
//! * [`board`]: spaces, lines, sides, centre (§1)
//! * [`piece`]: colours, piece codes, shapes and rotations (§2)
//! * [`position`]: stacks, supplies, turn (§3)
//! * [`movegen`]: validation and legal-move generation (§4)
//! * [`outcome`]: connections, centre count, end reasons (§5, §6)
//! * [`notation`]: move notation and game records (§7)
//! * [`render`]: a text picture of a position
//! * [`eval`]: connection distance and one-ply move ranking, for bots

pub mod board;
pub mod bot;
pub mod eval;
pub mod kind;
pub mod movegen;
pub mod notation;
pub mod outcome;
pub mod piece;
pub mod position;
pub mod referee;
pub mod render;
pub mod svg;

use std::fmt;
use std::str::FromStr;

pub use board::{SidePair, Space, SpaceSet};
pub use movegen::IllegalMove;
pub use notation::{GameRecord, MoveError, NotatedMove, NotationError, RecordError};
pub use outcome::{Connection, EndReason, Outcome};
pub use piece::{Colour, PieceCode};
pub use position::{Landing, PieceId, Position, PositionKey};

/// A turn (docs/rules/punct.md §4): place a piece from the supply, or move one on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Move {
    /// Put a `code` piece from the supply at level 0 (docs/rules/punct.md §4.1).
    Place {
        /// Which kind of piece.
        code: PieceCode,
        /// Where its PÜNCT goes.
        punct: Space,
        /// Rotation 0..6 (docs/rules/punct.md §2).
        rotation: u8,
    },
    /// Move the mobile piece whose PÜNCT is on `from` (slide, jump, bridge or
    /// rotate in place; docs/rules/punct.md §4.2).
    Shift {
        /// The piece's current PÜNCT space.
        from: Space,
        /// The PÜNCT's destination (may equal `from` for a rotation).
        to: Space,
        /// Rotation 0..6 at the destination.
        rotation: u8,
    },
}

impl Move {
    /// The same move with `SM`'s rotation folded to 0..3 (needs the code, so
    /// only for placements; a shift is canonicalised by the game).
    fn canonical_with(self, code: PieceCode) -> Move {
        match self {
            Move::Place {
                code: c,
                punct,
                rotation,
            } => Move::Place {
                code: c,
                punct,
                rotation: c.canonical_rotation(rotation % 6),
            },
            Move::Shift { from, to, rotation } => Move::Shift {
                from,
                to,
                rotation: code.canonical_rotation(rotation % 6),
            },
        }
    }
}

/// The two games of the rulebook (docs/rules/punct.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Variant {
    /// The full game (rulebook part II): no placement on the centre, ever;
    /// the supply phase ends with a centre count.
    #[default]
    Standard,
    /// The learning game (part I): only the first placement avoids the centre;
    /// the supply phase ends in a draw.
    Basic,
}

impl Variant {
    /// Lower-case name (`standard`, `basic`).
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Standard => "standard",
            Variant::Basic => "basic",
        }
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "standard" => Ok(Variant::Standard),
            "basic" => Ok(Variant::Basic),
            other => Err(format!("`{other}` is not a variant (basic or standard)")),
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When the supply phase ends the game (docs/rules/punct.md §5.3, §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EndOnSupply {
    /// As soon as the mover places their last piece (publisher, Boardspace).
    #[default]
    FirstExhausted,
    /// Only when both supplies are empty (Czech summary).
    BothExhausted,
}

impl EndOnSupply {
    /// Lower-case name (`first_exhausted`, `both_exhausted`).
    pub const fn name(self) -> &'static str {
        match self {
            EndOnSupply::FirstExhausted => "first_exhausted",
            EndOnSupply::BothExhausted => "both_exhausted",
        }
    }
}

impl FromStr for EndOnSupply {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "first_exhausted" => Ok(EndOnSupply::FirstExhausted),
            "both_exhausted" => Ok(EndOnSupply::BothExhausted),
            other => Err(format!(
                "`{other}` is not an end_on_supply option (first_exhausted or both_exhausted)"
            )),
        }
    }
}

/// The rule options of a game, chosen at creation (docs/rules/punct.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleOptions {
    /// Basic or standard game.
    pub variant: Variant,
    /// When the supply phase ends the game.
    pub end_on_supply: EndOnSupply,
    /// Turns after which the game is drawn (`MOVE_LIMIT`); 0 = no limit.
    pub max_plies: u32,
    /// Occurrences of one position that draw the game (`REPETITION`); 0 = off.
    pub repetition_limit: u32,
}

impl Default for RuleOptions {
    fn default() -> Self {
        RuleOptions {
            variant: Variant::Standard,
            end_on_supply: EndOnSupply::FirstExhausted,
            max_plies: 1000,
            repetition_limit: 3,
        }
    }
}

impl RuleOptions {
    /// The default options of `variant`.
    pub fn of(variant: Variant) -> RuleOptions {
        RuleOptions {
            variant,
            ..RuleOptions::default()
        }
    }
}

/// What kind of turn a move was, once applied (for logs and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoveKind {
    /// A piece from the supply.
    Place,
    /// A move (or rotation) ending at level 0.
    Move,
    /// A move ending at level 1 or more, fully supported.
    Jump,
    /// A move ending as a bridge.
    Bridge,
}

impl MoveKind {
    /// Lower-case name (`place`, `move`, `jump`, `bridge`).
    pub const fn name(self) -> &'static str {
        match self {
            MoveKind::Place => "place",
            MoveKind::Move => "move",
            MoveKind::Jump => "jump",
            MoveKind::Bridge => "bridge",
        }
    }
}

/// The result of a move accepted by [`Engine::play`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Played {
    /// The move in canonical form.
    pub mv: Move,
    /// Its canonical notation.
    pub notation: NotatedMove,
    /// What kind of turn it was.
    pub kind: MoveKind,
    /// The level the piece came to rest at.
    pub level: u8,
    /// The ply after the move (number of turns played).
    pub ply: u32,
    /// How the game ended, if this move ended it.
    pub outcome: Option<Outcome>,
}

/// A game: options, the current position, the moves so far and the outcome.
/// This is what the referee keeps per session.
#[derive(Debug)]
pub struct Engine {
    options: RuleOptions,
    position: Position,
    moves: Vec<Move>,
    /// Keys of the positions since the last placement, current last. A placement
    /// can never be undone, so no earlier position can occur again. Emptied
    /// once the game is over: no position follows.
    history: Vec<PositionKey>,
    outcome: Option<Outcome>,
}

/// A copy with room for one more move: the referee decides each move on a
/// copy ([`crate::games::Game::clone_box`]), and a copy of exactly the
/// original's length would be copied again by the move it is made for.
impl Clone for Engine {
    fn clone(&self) -> Engine {
        fn with_room<T: Clone>(v: &[T]) -> Vec<T> {
            let mut copy = Vec::with_capacity(v.len() + 1);
            copy.extend_from_slice(v);
            copy
        }
        Engine {
            options: self.options,
            position: self.position,
            moves: with_room(&self.moves),
            history: with_room(&self.history),
            outcome: self.outcome,
        }
    }
}

impl Engine {
    /// A new game at the start position.
    pub fn new(options: RuleOptions) -> Engine {
        let position = Position::start();
        Engine {
            options,
            history: vec![position.key()],
            position,
            moves: Vec::new(),
            outcome: None,
        }
    }

    /// A game continuing from an arbitrary position (for tests and analysis);
    /// its outcome is not judged until a move is played.
    pub fn from_position(options: RuleOptions, position: Position) -> Engine {
        Engine {
            options,
            history: vec![position.key()],
            position,
            moves: Vec::new(),
            outcome: None,
        }
    }

    /// The rule options.
    pub fn options(&self) -> RuleOptions {
        self.options
    }

    /// The current position.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The moves played, in order, in canonical form.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// How the game ended, or `None` while it goes on.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Whether the game has ended.
    pub fn is_over(&self) -> bool {
        self.outcome.is_some()
    }

    /// Whether `mv` is legal now, and why not.
    pub fn validate(&self, mv: Move) -> Result<Landing, IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        self.position.check(self.options.variant, mv)
    }

    /// Whether `mv` is legal for `colour` now (turn enforcement included).
    pub fn validate_for(&self, colour: Colour, mv: Move) -> Result<Landing, IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        if colour != self.position.to_move() {
            return Err(IllegalMove::NotYourTurn {
                to_move: self.position.to_move(),
            });
        }
        self.validate(mv)
    }

    /// Validates and plays `mv`, then judges the outcome (docs/rules/punct.md §5). A
    /// refused move changes nothing.
    pub fn play(&mut self, mv: Move) -> Result<Played, IllegalMove> {
        let landing = self.validate(mv)?;
        let mover = self.position.to_move();
        let code = match mv {
            Move::Place { code, .. } => code,
            Move::Shift { from, .. } => self
                .position
                .punct_on_top(from)
                .map_or(PieceCode::T, PieceId::code),
        };
        let mv = mv.canonical_with(code);
        let notation = self.position.notate(mv).ok_or(IllegalMove::ShapeMismatch {
            code,
            punct: match mv {
                Move::Place { punct, .. } => punct,
                Move::Shift { to, .. } => to,
            },
        })?;
        let kind = match (mv, landing) {
            (Move::Place { .. }, _) => MoveKind::Place,
            (_, Landing { bridge: true, .. }) => MoveKind::Bridge,
            (_, Landing { level: 0, .. }) => MoveKind::Move,
            _ => MoveKind::Jump,
        };
        self.position.apply_landing(mv, landing);
        if kind == MoveKind::Place {
            self.history.clear();
        }
        self.history.push(self.position.key());
        self.moves.push(mv);
        self.outcome = judge(
            &self.options,
            &self.position,
            mover,
            kind == MoveKind::Place,
            &self.history,
        );
        if self.outcome.is_some() {
            // No move follows the last: nothing is left to repeat, and a
            // finished game is kept for a while.
            self.history = Vec::new();
        }
        Ok(Played {
            mv,
            notation,
            kind,
            level: landing.level,
            ply: self.position.ply(),
            outcome: self.outcome,
        })
    }

    /// Reads a move in notation and resolves it against the current position.
    pub fn parse_move(&self, text: &str) -> Result<Move, MoveError> {
        let notated: NotatedMove = text.parse()?;
        self.resolve(notated).map_err(MoveError::Illegal)
    }

    /// Turns a notated move into a [`Move`] on the current position.
    pub fn resolve(&self, notated: NotatedMove) -> Result<Move, IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        self.position.resolve(notated)
    }

    /// Parses, validates and plays a move given in notation.
    pub fn play_notation(&mut self, text: &str) -> Result<Played, MoveError> {
        let mv = self.parse_move(text)?;
        self.play(mv).map_err(MoveError::Illegal)
    }

    /// Ends the game by a referee action (resignation, draw agreement, timeout,
    /// abandonment, abort). Refused once the game is over.
    pub fn conclude(&mut self, outcome: Outcome) -> Result<(), IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        self.outcome = Some(outcome);
        self.history = Vec::new();
        Ok(())
    }

    /// The legal moves of the player to move (none once the game is over),
    /// one per distinct resulting position.
    pub fn legal_moves(&self) -> Vec<Move> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        self.position.legal_moves(self.options.variant)
    }

    /// perft: for each depth 1..=`depth`, the number of legal move sequences of
    /// exactly that many turns from here. A sequence that ends the game
    /// contributes nothing at greater depths.
    pub fn perft(&self, depth: u32) -> Vec<u64> {
        let mut counts = vec![0u64; depth as usize];
        if depth == 0 || self.outcome.is_some() {
            return counts;
        }
        let mut history = self.history.clone();
        let mut buffers = vec![Vec::new(); depth as usize];
        perft_node(
            &self.options,
            &self.position,
            &mut history,
            0,
            0,
            &mut counts,
            &mut buffers,
        );
        counts
    }

    /// The game record of this game (docs/rules/punct.md §7).
    pub fn record(&self) -> GameRecord {
        let mut replay = Engine::new(self.options);
        let mut moves = Vec::with_capacity(self.moves.len());
        for &mv in &self.moves {
            if let Ok(p) = replay.play(mv) {
                moves.push(p.notation);
            }
        }
        GameRecord {
            options: self.options,
            tags: Vec::new(),
            result: self.outcome.map(|o| notation::StatedOutcome {
                winner: o.winner,
                reason: o.reason,
            }),
            moves,
        }
    }
}

/// The end-of-turn checks of docs/rules/punct.md §5, in order, after `mover` played.
fn judge(
    options: &RuleOptions,
    position: &Position,
    mover: Colour,
    was_placement: bool,
    history: &[PositionKey],
) -> Option<Outcome> {
    for colour in [mover, mover.opponent()] {
        if let Some(c) = position.connection(colour) {
            return Some(Outcome {
                winner: Some(colour),
                reason: EndReason::Connection,
                sides: Some(c.sides),
                centre_count: None,
            });
        }
    }
    if was_placement {
        let supply_over = match options.end_on_supply {
            EndOnSupply::FirstExhausted => position.supply_total(mover) == 0,
            EndOnSupply::BothExhausted => {
                Colour::BOTH.iter().all(|&c| position.supply_total(c) == 0)
            }
        };
        if supply_over {
            return Some(match options.variant {
                Variant::Basic => Outcome::draw(EndReason::LastPiece),
                Variant::Standard => {
                    let count = position.centre_count();
                    Outcome {
                        winner: match count[0].cmp(&count[1]) {
                            std::cmp::Ordering::Greater => Some(Colour::White),
                            std::cmp::Ordering::Less => Some(Colour::Black),
                            std::cmp::Ordering::Equal => None,
                        },
                        reason: EndReason::CenterCount,
                        sides: None,
                        centre_count: Some(count),
                    }
                }
            });
        }
    }
    if options.repetition_limit > 0
        && let Some(current) = history.last()
    {
        let seen = history.iter().filter(|k| *k == current).count();
        if seen >= options.repetition_limit as usize {
            return Some(Outcome::draw(EndReason::Repetition));
        }
    }
    if options.max_plies > 0 && position.ply() >= options.max_plies {
        return Some(Outcome::draw(EndReason::MoveLimit));
    }
    if !position.has_legal_move(options.variant) {
        return Some(Outcome::draw(EndReason::NoLegalMove));
    }
    None
}

fn perft_node(
    options: &RuleOptions,
    position: &Position,
    history: &mut Vec<PositionKey>,
    window: usize,
    done: usize,
    counts: &mut [u64],
    buffers: &mut [Vec<Move>],
) {
    if done + 1 == counts.len() {
        counts[done] += position.count_legal_moves(options.variant);
        return;
    }
    let Some((moves, deeper)) = buffers.split_first_mut() else {
        return;
    };
    moves.clear();
    position.legal_moves_into(options.variant, moves);
    counts[done] += moves.len() as u64;
    let mover = position.to_move();
    for &mv in moves.iter() {
        let Ok(landing) = position.check(options.variant, mv) else {
            continue;
        };
        let mut child = *position;
        child.apply_landing(mv, landing);
        let placement = matches!(mv, Move::Place { .. });
        let before = history.len();
        let child_window = if placement { before } else { window };
        history.push(child.key());
        if judge(options, &child, mover, placement, &history[child_window..]).is_none() {
            perft_node(
                options,
                &child,
                history,
                child_window,
                done + 1,
                counts,
                deeper,
            );
        }
        history.truncate(before);
    }
}
