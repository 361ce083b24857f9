//! Players, points, moves, starts and rule options (docs/rules/dots.md §2–§4).

use std::fmt;

use super::MAX_SIDE;

// --- Players, points, moves ----------------------------------------------------

/// A player (docs/rules/dots.md §2.3): Red moves first and is the first seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Colour {
    /// The first player.
    Red,
    /// The second player.
    Blue,
}

impl Colour {
    /// Both players, Red first.
    pub const ALL: [Colour; 2] = [Colour::Red, Colour::Blue];

    /// The other player.
    pub const fn other(self) -> Colour {
        match self {
            Colour::Red => Colour::Blue,
            Colour::Blue => Colour::Red,
        }
    }

    /// 0 for Red, 1 for Blue.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `red` or `blue`.
    pub const fn name(self) -> &'static str {
        match self {
            Colour::Red => "red",
            Colour::Blue => "blue",
        }
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Colour::Red => "Red",
            Colour::Blue => "Blue",
        })
    }
}

/// A cell as written in notation (docs/rules/dots.md §2.1, §8.1): `x` the column from
/// the left and `y` the row from the top, both 1-based. A point may lie off
/// the field; moving there is refused ([`IllegalMove::OffField`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    /// The column, 1 = leftmost.
    pub x: u16,
    /// The row, 1 = top.
    pub y: u16,
}

impl Point {
    /// The point `x,y` (1-based).
    pub const fn new(x: u16, y: u16) -> Point {
        Point { x, y }
    }

    /// The point of the 0-based cell `(x, y)`.
    pub(crate) const fn from_index(x: usize, y: usize) -> Point {
        Point {
            x: x as u16 + 1,
            y: y as u16 + 1,
        }
    }

    /// The 0-based cell, if both coordinates are at least 1.
    pub(crate) fn index(self) -> Option<(usize, usize)> {
        Some((
            usize::from(self.x).checked_sub(1)?,
            usize::from(self.y).checked_sub(1)?,
        ))
    }
}

/// A move (docs/rules/dots.md §5.2): a dot on a cell, or `ground` (§7.2). There is
/// no pass (§5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Move {
    /// A dot of the mover's colour on this cell.
    Place(Point),
    /// Ground: the game ends and the mover's ungrounded groups go to the
    /// opponent.
    Ground,
}

impl Move {
    /// `place` or `ground`: the kind of move, for logs and metrics.
    pub const fn kind(self) -> &'static str {
        match self {
            Move::Place(_) => "place",
            Move::Ground => "ground",
        }
    }
}

// --- Rule options (docs/rules/dots.md §3) ----------------------------------------------

/// The start positions (docs/rules/dots.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Start {
    /// No start dots (§4.1).
    Empty,
    /// One cross in the middle (§4.2).
    #[default]
    Cross,
    /// A cross and a swapped cross side by side (§4.3).
    DoubleCross,
    /// Four crosses placed from the seed (§4.4).
    QuadrupleCross,
}

impl Start {
    /// Every start position.
    pub const ALL: [Start; 4] = [
        Start::Empty,
        Start::Cross,
        Start::DoubleCross,
        Start::QuadrupleCross,
    ];

    /// The name in records and options (`cross`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Start::Empty => "empty",
            Start::Cross => "cross",
            Start::DoubleCross => "double-cross",
            Start::QuadrupleCross => "quadruple-cross",
        }
    }

    /// The start of that name (any letter case).
    pub fn from_name(name: &str) -> Option<Start> {
        Start::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The smallest width and height the start fits on (docs/rules/dots.md §3).
    pub const fn min_size(self) -> (u8, u8) {
        match self {
            Start::Empty | Start::Cross => (4, 4),
            Start::DoubleCross => (6, 4),
            Start::QuadrupleCross => (8, 8),
        }
    }

    /// Whether the start is drawn from a seed (§3: required exactly then).
    pub const fn needs_seed(self) -> bool {
        matches!(self, Start::QuadrupleCross)
    }
}

impl fmt::Display for Start {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The smallest field side (docs/rules/dots.md §3).
pub const MIN_SIDE: u8 = 4;

/// A game's rule options (docs/rules/dots.md §3), valid by construction: build them
/// with [`RuleOptions::new`]. The seed is not an option here: it is the
/// game's secret setup ([`Seed`], given to [`Engine::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleOptions {
    pub(super) width: u8,
    pub(super) height: u8,
    pub(super) start: Start,
    pub(super) max_moves: u32,
}

impl Default for RuleOptions {
    /// 39 × 32, one cross, no move limit.
    fn default() -> Self {
        RuleOptions {
            width: 39,
            height: 32,
            start: Start::Cross,
            max_moves: 0,
        }
    }
}

impl RuleOptions {
    /// Checked options (docs/rules/dots.md §3): each side 4..=64 and large enough for
    /// the start; `max_moves` 0 means no limit.
    pub fn new(width: u8, height: u8, start: Start, max_moves: u32) -> Result<Self, OptionsError> {
        let range = MIN_SIDE..=MAX_SIDE as u8;
        if !range.contains(&width) {
            return Err(OptionsError::WidthOutOfRange { width });
        }
        if !range.contains(&height) {
            return Err(OptionsError::HeightOutOfRange { height });
        }
        let (min_w, min_h) = start.min_size();
        if width < min_w || height < min_h {
            return Err(OptionsError::FieldTooSmall {
                start,
                width,
                height,
            });
        }
        Ok(RuleOptions {
            width,
            height,
            start,
            max_moves,
        })
    }

    /// W, the number of columns.
    pub const fn width(&self) -> u8 {
        self.width
    }

    /// H, the number of rows.
    pub const fn height(&self) -> u8 {
        self.height
    }

    /// The start position.
    pub const fn start(&self) -> Start {
        self.start
    }

    /// The move limit (0: none).
    pub const fn max_moves(&self) -> u32 {
        self.max_moves
    }
}

/// Why a game cannot be created with these options (docs/rules/dots.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// The width is not in 4..=64.
    #[error("the width {width} is not in 4..=64 (docs/rules/dots.md §3)")]
    WidthOutOfRange {
        /// The width asked for.
        width: u8,
    },
    /// The height is not in 4..=64.
    #[error("the height {height} is not in 4..=64 (docs/rules/dots.md §3)")]
    HeightOutOfRange {
        /// The height asked for.
        height: u8,
    },
    /// The start does not fit on the field.
    #[error(
        "the start `{start}` needs a field of at least {}x{}, not {width}x{height} (docs/rules/dots.md §3)",
        start.min_size().0, start.min_size().1
    )]
    FieldTooSmall {
        /// The start asked for.
        start: Start,
        /// The width asked for.
        width: u8,
        /// The height asked for.
        height: u8,
    },
    /// `quadruple-cross` without a seed.
    #[error(
        "the start `quadruple-cross` is drawn from a seed: give one (docs/rules/dots.md §3, §4.4)"
    )]
    SeedRequired,
    /// A seed for a start that needs none.
    #[error("the start `{start}` takes no seed (docs/rules/dots.md §3)")]
    SeedNotAllowed {
        /// The start asked for.
        start: Start,
    },
    /// A seed of no bytes or more than 64.
    #[error("a seed has 1 to 64 bytes, not {len} (docs/rules/dots.md §3)")]
    SeedLength {
        /// The number of bytes given.
        len: usize,
    },
}

impl OptionsError {
    /// The stable name of the refusal.
    pub const fn reason(&self) -> &'static str {
        match self {
            OptionsError::WidthOutOfRange { .. } => "WIDTH_OUT_OF_RANGE",
            OptionsError::HeightOutOfRange { .. } => "HEIGHT_OUT_OF_RANGE",
            OptionsError::FieldTooSmall { .. } => "FIELD_TOO_SMALL",
            OptionsError::SeedRequired => "SEED_REQUIRED",
            OptionsError::SeedNotAllowed { .. } => "SEED_NOT_ALLOWED",
            OptionsError::SeedLength { .. } => "SEED_LENGTH",
        }
    }
}

// --- Refused moves -------------------------------------------------------------

/// Why a move is refused (docs/rules/dots.md §5.3). A refused move changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    /// The game has ended.
    #[error("the game is over: no more moves (docs/rules/dots.md §5.3)")]
    GameOver,
    /// The point is not a cell of the field.
    #[error("{},{} is off the {width}x{height} field (docs/rules/dots.md §5.3, §8.1)", point.x, point.y)]
    OffField {
        /// The point given.
        point: Point,
        /// The field's width.
        width: u8,
        /// The field's height.
        height: u8,
    },
    /// The cell already has a dot.
    #[error("{},{} already has a {owner} dot (docs/rules/dots.md §5.2)", point.x, point.y)]
    Occupied {
        /// The point given.
        point: Point,
        /// Whose dot is there.
        owner: Colour,
    },
    /// The cell lies inside a captured area.
    #[error("{},{} lies inside an area captured by {holder}: nobody may play there (docs/rules/dots.md §5.3, §6.3)", point.x, point.y)]
    Held {
        /// The point given.
        point: Point,
        /// Who holds the cell.
        holder: Colour,
    },
}

impl IllegalMove {
    /// The stable name of the rule broken.
    pub const fn reason(&self) -> &'static str {
        match self {
            IllegalMove::GameOver => "GAME_OVER",
            IllegalMove::OffField { .. } => "OFF_FIELD",
            IllegalMove::Occupied { .. } => "OCCUPIED",
            IllegalMove::Held { .. } => "HELD",
        }
    }
}
