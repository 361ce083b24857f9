//! Game engines, and the one game-agnostic face the session layer sees.
//!
//! Each game is a pure, synchronous module with no protobuf, async, locks or
//! I/O ([`punct`]). The session layer drives any game through the object-safe
//! [`Rules`] trait and the small neutral types here ([`Seat`], [`Verdict`],
//! [`MoveError`], …). The game-specific payloads ([`MoveInput`], [`MoveDetail`],
//! [`Snapshot`], [`GameRules`]) are enums with one member per game: the session
//! layer stores and passes them on without looking inside; the API layer
//! converts them to and from protobuf.

pub mod punct;

use std::fmt;

pub use punct::referee::{PunctMoveInfo, PunctMoveInput, PunctSnapshot};

/// A seat at the table. Every game here has two; the first moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Seat {
    /// The first player (PÜNCT: white).
    White,
    /// The second player (PÜNCT: black).
    Black,
}

impl Seat {
    /// Both seats, first first.
    pub const BOTH: [Seat; 2] = [Seat::White, Seat::Black];

    /// The other seat.
    pub const fn opponent(self) -> Seat {
        match self {
            Seat::White => Seat::Black,
            Seat::Black => Seat::White,
        }
    }

    /// 0 for the first seat, 1 for the second.
    pub const fn index(self) -> usize {
        match self {
            Seat::White => 0,
            Seat::Black => 1,
        }
    }

    /// Lower-case name (`white`, `black`).
    pub const fn name(self) -> &'static str {
        match self {
            Seat::White => "white",
            Seat::Black => "black",
        }
    }
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which game and with which options: what a session is created from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameRules {
    /// PÜNCT with its rule options (RULES.md §6).
    Punct(punct::RuleOptions),
}

impl Default for GameRules {
    /// Standard PÜNCT with the default options.
    fn default() -> Self {
        GameRules::Punct(punct::RuleOptions::default())
    }
}

impl GameRules {
    /// The game's short name, as in a record's `game:` header.
    pub const fn game_name(&self) -> &'static str {
        match self {
            GameRules::Punct(_) => "punct",
        }
    }

    /// The variant's short name (PÜNCT: `standard`, `basic`): a neutral
    /// label for logs and metrics.
    pub const fn variant_name(&self) -> &'static str {
        match self {
            GameRules::Punct(options) => options.variant.name(),
        }
    }
}

/// A move as a client gave it, already checked for syntax by the API layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveInput {
    /// A PÜNCT move, structured and/or as notation.
    Punct(PunctMoveInput),
}

/// What a move (played, or legal) is, in the game's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveDetail {
    /// A PÜNCT move with its notation, kind and landing level.
    Punct(PunctMoveInfo),
}

impl MoveDetail {
    /// The same move as input, to play it (e.g. a move from a legal list).
    pub fn to_input(&self) -> MoveInput {
        match self {
            MoveDetail::Punct(info) => MoveInput::Punct(PunctMoveInput {
                structured: Some(info.mv),
                notation: Some(info.notation),
            }),
        }
    }

    /// The kind of move in the game's words (PÜNCT: `place`, `move`,
    /// `jump`, `bridge`): a neutral label for logs and metrics.
    pub const fn kind_name(&self) -> &'static str {
        match self {
            MoveDetail::Punct(info) => info.kind.name(),
        }
    }

    /// The move's notation text.
    pub fn notation(&self) -> String {
        match self {
            MoveDetail::Punct(info) => info.notation.to_string(),
        }
    }
}

/// The game-specific state of a game at one point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    /// A PÜNCT position with its options.
    Punct(Box<PunctSnapshot>),
}

impl Snapshot {
    /// An SVG picture of this state, highlighting `last_move` (the move that
    /// reached it) and, when `verdict` is a win on the board, how it was won.
    pub fn svg(&self, last_move: Option<&MoveDetail>, verdict: Option<&Verdict>) -> String {
        match (self, last_move) {
            (Snapshot::Punct(s), Some(MoveDetail::Punct(m))) => s.svg(Some(m), verdict),
            (Snapshot::Punct(s), None) => s.svg(None, verdict),
        }
    }
}

/// Game-specific details of how a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictDetail {
    /// PÜNCT: the engine's outcome (sides joined, centre count).
    Punct(punct::Outcome),
}

/// How a game ended, in neutral terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The winner, or `None` for a draw.
    pub winner: Option<Seat>,
    /// Stable upper-case name of why it ended (`CONNECTION`, `RESIGNATION`, …).
    pub reason: &'static str,
    /// Game-specific details.
    pub detail: VerdictDetail,
}

/// A move accepted by [`Rules::play`] (or one of [`Rules::legal_moves`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveReport {
    /// Who moved (or would move).
    pub seat: Seat,
    /// The ply after the move.
    pub ply: u32,
    /// How the game ended, if this move ended it.
    pub verdict: Option<Verdict>,
    /// The move itself, in the game's terms.
    pub detail: MoveDetail,
}

/// A referee action that ends a game outside the board rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `loser` gave up; the other seat wins.
    Resignation {
        /// The seat that resigned.
        loser: Seat,
    },
    /// Both seats agreed a draw.
    DrawAgreement,
    /// The game was called off before it really started: nobody wins.
    Aborted,
    /// `loser` ran out of time on the clock; the other seat wins.
    Timeout {
        /// The seat whose flag fell.
        loser: Seat,
    },
    /// `loser` left the game (claimed by the opponent); the other seat wins.
    Abandoned {
        /// The seat that left.
        loser: Seat,
    },
}

/// Why a move (or a referee action) was refused. A refused move changes
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    /// The input cannot be a move of this game at all (not a rule question):
    /// `field` names the offending part of the input.
    #[error("{description}")]
    Malformed {
        /// Which part of the move is wrong (`move`, `move.notation`, …).
        field: &'static str,
        /// What is wrong with it.
        description: String,
    },
    /// The move breaks a rule: `reason` is the engine's stable rule name
    /// (`PIECE_IMMOBILE`, `GAME_OVER`, …).
    #[error("{message}")]
    Illegal {
        /// The rule's machine name.
        reason: &'static str,
        /// A readable sentence.
        message: String,
    },
}

/// Why a game record could not be read or replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RecordError {
    /// The 1-based line of the record at fault, if any.
    pub line: Option<usize>,
    /// For an illegal move in the record: the rule broken.
    pub reason: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

/// A game rebuilt from a record or from a list of moves.
#[derive(Debug)]
pub struct Replayed {
    /// The game after the last move (concluded if the record says so).
    pub game: Box<dyn Rules>,
    /// Every move, in order, as played.
    pub moves: Vec<MoveReport>,
    /// The record's free header tags (`event: …`), in order.
    pub tags: Vec<(String, String)>,
}

/// One game in progress or finished: what the session layer holds per
/// session. Object safe, so a session keeps a `Box<dyn Rules>` whatever the
/// game. Implementations are pure and synchronous.
pub trait Rules: Send + Sync + fmt::Debug {
    /// The game and its options.
    fn rules(&self) -> GameRules;
    /// Turns played.
    fn ply(&self) -> u32;
    /// Whose turn it is (whose it would be, once the game is over).
    fn to_move(&self) -> Seat;
    /// How the game ended, or `None` while it goes on.
    fn verdict(&self) -> Option<Verdict>;
    /// Checks and plays `mv` for the player to move. Refused moves change
    /// nothing.
    fn play(&mut self, mv: &MoveInput) -> Result<MoveReport, MoveError>;
    /// The legal moves of the player to move, sorted by notation (none once
    /// the game is over).
    fn legal_moves(&self) -> Vec<MoveReport>;
    /// The state now.
    fn snapshot(&self) -> Snapshot;
    /// The state after the first `ply` moves, or `None` past the current ply.
    /// Referee endings are not part of it; board endings are.
    fn snapshot_at(&self, ply: u32) -> Option<Snapshot>;
    /// The last move played, if any.
    fn last_move(&self) -> Option<MoveDetail>;
    /// The game record text (RULES.md §7), with `tags` as header lines.
    fn record(&self, tags: &[(String, String)]) -> String;
    /// Ends the game by a referee action. Refused (`GAME_OVER`) once over.
    fn conclude(&mut self, ending: Ending) -> Result<Verdict, MoveError>;
    /// A copy, for trying a move without playing it.
    fn clone_box(&self) -> Box<dyn Rules>;
    /// Whether `input`, given in the position after `ply` moves of this
    /// game, names the move `played` (how a retried request is recognised,
    /// however the client wrote the move the first time).
    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool;
    /// The rules as a record header: [`import_record`] of this header
    /// followed by move lines replays a game under the same rules (what
    /// storage keeps to rebuild a game).
    fn rules_header(&self) -> String;
}

/// A new game at its start position.
pub fn new_game(rules: GameRules) -> Box<dyn Rules> {
    match rules {
        GameRules::Punct(options) => Box::new(punct::referee::PunctGame::new(options)),
    }
}

/// Rebuilds a game from `moves`, checking each; the error gives the index of
/// the first refused move.
pub fn replay_moves(rules: GameRules, moves: &[MoveInput]) -> Result<Replayed, (usize, MoveError)> {
    let mut game = new_game(rules);
    let mut played = Vec::with_capacity(moves.len());
    for (i, mv) in moves.iter().enumerate() {
        played.push(game.play(mv).map_err(|e| (i, e))?);
    }
    Ok(Replayed {
        game,
        moves: played,
        tags: Vec::new(),
    })
}

/// Reads and replays a game record (RULES.md §7). The `game:` header picks
/// the game (PÜNCT when absent).
pub fn import_record(text: &str) -> Result<Replayed, RecordError> {
    punct::referee::import(text)
}
