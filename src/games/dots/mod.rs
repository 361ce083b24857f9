//! Dots (Kropki), refereed exactly as `docs/rules/dots.md`: the pure engine.
//!
//! A [`Field`] of `W` × `H` cells (4..=64 each way) holds, per player, row
//! bitsets ([`Bits`]) of dots, of held cells and of empty-base markers.
//! [`Field::place`] puts a dot and applies docs/rules/dots.md §6: the regions the dot
//! closes (§6.1, found by flood fills that stop at the edge), their enclosed
//! areas (§6.2), captures and empty bases (§6.3) smallest area first (§6.4)
//! and the empty-base rules (§6.5). A local test on the eight cells around
//! the dot skips the flood fills when the dot cannot have closed anything,
//! so a placement usually costs a few word operations; nothing on that path
//! allocates. [`Field::ground`] is §7.2. A [`Game`] adds turns, the start
//! position (§4, [`setup`]), the end of the game (§7) and the move list.
//!
//! Around it: [`notation`] (points and `ground`, §8.1–8.2), [`record`] (game
//! records, §9), [`render`] (the position text of §8.3), [`chain`] (the
//! closed chain of dots around an area, for pictures), [`svg`] and
//! [`referee`] (the game behind the session layer's [`Game`](crate::games::Game)
//! trait). docs/DOTS.md lists the readings of docs/rules/dots.md made here.

pub mod bits;
pub mod chain;
pub mod notation;
pub mod record;
pub mod referee;
pub mod render;
pub mod setup;
pub mod svg;

use std::fmt;

pub use bits::{Bits, MAX_SIDE};
pub use notation::NotationError;
pub use record::{Record, RecordError};
pub use setup::Seed;

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
/// game's secret setup ([`Seed`], given to [`Game::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleOptions {
    width: u8,
    height: u8,
    start: Start,
    max_moves: u32,
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

// --- The field -------------------------------------------------------------------

/// The state of one cell (docs/rules/dots.md §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cell {
    /// The dot placed there, if any.
    pub dot: Option<Colour>,
    /// Who holds the cell captured, if anyone.
    pub holder: Option<Colour>,
    /// The empty-base marker, if any.
    pub marker: Option<Colour>,
}

/// What taking one area did (docs/rules/dots.md §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TakeKind {
    /// The area held a live enemy dot: everything in it is captured.
    Capture,
    /// It held none: an empty base.
    Base,
}

/// One area taken by a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    /// Who took it (the mover, or its enemy under §6.5(c)).
    pub taker: Colour,
    /// Capture or empty base.
    pub kind: TakeKind,
    /// Every cell of the enclosed area (§6.2), wall included.
    pub area: Bits,
}

/// The areas a move took, in the order taken (at most four: one per
/// orthogonal neighbour of the dot). Reused from move to move.
#[derive(Debug, Clone)]
pub struct TakeLog {
    takes: [Take; 4],
    len: usize,
}

impl Default for TakeLog {
    fn default() -> Self {
        let none = Take {
            taker: Colour::Red,
            kind: TakeKind::Base,
            area: Bits::EMPTY,
        };
        TakeLog {
            takes: [none; 4],
            len: 0,
        }
    }
}

impl TakeLog {
    /// The areas taken by the last move logged.
    pub fn takes(&self) -> &[Take] {
        &self.takes[..self.len]
    }

    fn push(&mut self, take: Take) {
        if let Some(slot) = self.takes.get_mut(self.len) {
            *slot = take;
            self.len += 1;
        }
    }
}

/// What a placement did, in counts (docs/rules/dots.md §6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement {
    /// Regions closed by the move (§6.1).
    pub regions: u8,
    /// Areas captured by the mover.
    pub captures: u8,
    /// New empty bases of the mover.
    pub bases: u8,
    /// The dot fell into an enemy empty base and was captured (§6.5(c)).
    pub fell_into_base: bool,
}

/// The eight cells around a cell in clockwise order from the top: N, NE, E,
/// SE, S, SW, W, NW, as (dx, dy). Consecutive ones are orthogonal
/// neighbours of each other, so the ring is a closed orthogonal path.
const RING: [(isize, isize); 8] = [
    (0, -1),
    (1, -1),
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
];

/// The arcs of a ring mask (bit i set: ring cell i is not a live dot of the
/// mover) that contain an orthogonal ring cell, as masks.
#[derive(Clone, Copy)]
struct Arcs {
    len: u8,
    masks: [u8; 4],
}

const fn arcs_of(mask: u8) -> Arcs {
    let mut arcs = Arcs {
        len: 0,
        masks: [0; 4],
    };
    if mask == 0xFF {
        arcs.len = 1;
        arcs.masks[0] = 0xFF;
        return arcs;
    }
    if mask == 0 {
        return arcs;
    }
    // Start just after a blocked ring cell and walk once around.
    let mut start = 0;
    while mask >> start & 1 == 1 {
        start += 1;
    }
    let mut current: u8 = 0;
    let mut step = 1;
    while step <= 8 {
        let i = (start + step) % 8;
        if mask >> i & 1 == 1 {
            current |= 1 << i;
        } else if current != 0 {
            if current & 0b0101_0101 != 0 {
                arcs.masks[arcs.len as usize] = current;
                arcs.len += 1;
            }
            current = 0;
        }
        step += 1;
    }
    arcs
}

const ARCS: [Arcs; 256] = {
    let mut table = [Arcs {
        len: 0,
        masks: [0; 4],
    }; 256];
    let mut m = 0;
    while m < 256 {
        table[m] = arcs_of(m as u8);
        m += 1;
    }
    table
};

/// The cells of one game (docs/rules/dots.md §2.4) and the placement rules (§6, §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    width: u8,
    height: u8,
    cells: Bits,
    edge: Bits,
    dots: [Bits; 2],
    /// `held[c]`: the cells whose holder is `c`.
    held: [Bits; 2],
    markers: [Bits; 2],
    /// Cells whose marker a §6.5(b) dissolution removed: they may still lie
    /// in a closed region of the base's owner, so a dot there is always
    /// checked with the full flood fills.
    dissolved: Bits,
}

impl Field {
    /// An empty field of a size that [`RuleOptions::new`] accepted.
    pub fn new(options: &RuleOptions) -> Field {
        let (w, h) = (usize::from(options.width), usize::from(options.height));
        Field {
            width: options.width,
            height: options.height,
            cells: Bits::field(w, h),
            edge: Bits::edge(w, h),
            dots: [Bits::EMPTY; 2],
            held: [Bits::EMPTY; 2],
            markers: [Bits::EMPTY; 2],
            dissolved: Bits::EMPTY,
        }
    }

    /// W.
    pub const fn width(&self) -> u8 {
        self.width
    }

    /// H.
    pub const fn height(&self) -> u8 {
        self.height
    }

    /// The 0-based cell of `p`, if it is on the field.
    pub fn index_of(&self, p: Point) -> Option<(usize, usize)> {
        let (x, y) = p.index()?;
        (x < usize::from(self.width) && y < usize::from(self.height)).then_some((x, y))
    }

    /// Whether `p` is a cell of the field.
    pub fn contains(&self, p: Point) -> bool {
        self.index_of(p).is_some()
    }

    /// The state of the cell at `p` (all `None` off the field).
    pub fn cell(&self, p: Point) -> Cell {
        let Some((x, y)) = self.index_of(p) else {
            return Cell {
                dot: None,
                holder: None,
                marker: None,
            };
        };
        let of = |sets: &[Bits; 2]| {
            Colour::ALL
                .into_iter()
                .find(|c| sets[c.index()].contains(x, y))
        };
        Cell {
            dot: of(&self.dots),
            holder: of(&self.held),
            marker: of(&self.markers),
        }
    }

    /// Every cell with a dot of `colour`, live or held.
    pub fn dots(&self, colour: Colour) -> &Bits {
        &self.dots[colour.index()]
    }

    /// Every cell held by `colour` (docs/rules/dots.md §2.4).
    pub fn held(&self, colour: Colour) -> &Bits {
        &self.held[colour.index()]
    }

    /// Every cell with an empty-base marker of `colour`.
    pub fn markers(&self, colour: Colour) -> &Bits {
        &self.markers[colour.index()]
    }

    /// The live dots of `colour` (not held).
    pub fn live(&self, colour: Colour) -> Bits {
        self.dots[colour.index()].and_not(&self.held[colour.other().index()])
    }

    /// The playable cells: no dot, no holder (docs/rules/dots.md §2.4).
    pub fn playable(&self) -> Bits {
        let taken = self.dots[0] | self.dots[1] | self.held[0] | self.held[1];
        self.cells.and_not(&taken)
    }

    /// Whether no playable cell is left (docs/rules/dots.md §7.1).
    pub fn is_full(&self) -> bool {
        (0..usize::from(self.height)).all(|y| {
            let taken =
                self.dots[0].0[y] | self.dots[1].0[y] | self.held[0].0[y] | self.held[1].0[y];
            self.cells.0[y] & !taken == 0
        })
    }

    /// The score of `colour`: the enemy dots it holds now (docs/rules/dots.md §6.7).
    pub fn score(&self, colour: Colour) -> u32 {
        (self.held[colour.index()] & self.dots[colour.other().index()]).len()
    }

    /// Both scores, Red first.
    pub fn scores(&self) -> [u32; 2] {
        [self.score(Colour::Red), self.score(Colour::Blue)]
    }

    /// Whether a dot may go on `p`: on the field (§8.1), no dot there (§5.2),
    /// not held (§5.3).
    pub fn check(&self, p: Point) -> Result<(usize, usize), IllegalMove> {
        let Some((x, y)) = self.index_of(p) else {
            return Err(IllegalMove::OffField {
                point: p,
                width: self.width,
                height: self.height,
            });
        };
        for owner in Colour::ALL {
            if self.dots[owner.index()].contains(x, y) {
                return Err(IllegalMove::Occupied { point: p, owner });
            }
        }
        for holder in Colour::ALL {
            if self.held[holder.index()].contains(x, y) {
                return Err(IllegalMove::Held { point: p, holder });
            }
        }
        Ok((x, y))
    }

    /// Puts a start dot (docs/rules/dots.md §4: no capture processing).
    pub(crate) fn put_start_dot(&mut self, colour: Colour, p: Point) {
        if let Some((x, y)) = self.index_of(p) {
            self.dots[colour.index()].insert(x, y);
        }
    }

    /// Places a dot of `mover` on `p` and applies docs/rules/dots.md §6.
    pub fn place(&mut self, mover: Colour, p: Point) -> Result<Placement, IllegalMove> {
        self.place_inner(mover, p, None)
    }

    /// [`Field::place`], writing the areas taken into `log`.
    pub fn place_logged(
        &mut self,
        mover: Colour,
        p: Point,
        log: &mut TakeLog,
    ) -> Result<Placement, IllegalMove> {
        self.place_inner(mover, p, Some(log))
    }

    fn place_inner(
        &mut self,
        m: Colour,
        p: Point,
        mut log: Option<&mut TakeLog>,
    ) -> Result<Placement, IllegalMove> {
        let (x, y) = self.check(p)?;
        if let Some(log) = log.as_deref_mut() {
            log.len = 0;
        }
        let e = m.other();
        // §6: note the marker, put the dot, remove the marker.
        let marker = if self.markers[m.index()].contains(x, y) {
            Some(m)
        } else if self.markers[e.index()].contains(x, y) {
            Some(e)
        } else {
            None
        };
        self.dots[m.index()].insert(x, y);
        self.markers[0].remove(x, y);
        self.markers[1].remove(x, y);
        let mut placement = Placement::default();
        if marker == Some(m) {
            // §6.5(a): own base, nothing else happens.
            return Ok(placement);
        }
        let (non_mover, off_field) = self.ring(m, x, y);
        let arcs = ARCS[usize::from(non_mover)];
        if marker.is_none() && arcs.len <= 1 && !self.dissolved.contains(x, y) {
            // All of the dot's non-mover neighbours stay in one region with
            // the rest of the region the cell was in, which was open (a
            // closed one would have left a marker or a dissolved marker on
            // the cell): nothing closes (§6.1). See docs/DOTS.md.
            return Ok(placement);
        }
        self.enclose(m, x, y, arcs, off_field, &mut placement, &mut log);
        if marker == Some(e) {
            if placement.regions > 0 {
                self.dissolve_markers(x, y); // §6.5(b)
            } else {
                self.fall_into_base(e, x, y, &mut placement, &mut log); // §6.5(c)
            }
        }
        Ok(placement)
    }

    /// The ring around `(x, y)`: which ring cells are not live dots of `m`
    /// (off-field ones count as such: they stand for the open outside), and
    /// which are off the field.
    fn ring(&self, m: Colour, x: usize, y: usize) -> (u8, u8) {
        let (w, h) = (usize::from(self.width), usize::from(self.height));
        let own = &self.dots[m.index()];
        let held = &self.held[m.other().index()];
        let (mut non_mover, mut off) = (0u8, 0u8);
        for (i, (dx, dy)) in RING.iter().enumerate() {
            let (nx, ny) = (x.wrapping_add_signed(*dx), y.wrapping_add_signed(*dy));
            if nx >= w || ny >= h {
                off |= 1 << i;
                non_mover |= 1 << i;
            } else if !own.contains(nx, ny) || held.contains(nx, ny) {
                non_mover |= 1 << i;
            }
        }
        (non_mover, off)
    }

    /// §6.1–6.4: finds the regions closed by `m`'s dot at `(x, y)`, computes
    /// their enclosed areas and takes them, smallest first.
    #[allow(clippy::too_many_arguments)]
    fn enclose(
        &mut self,
        m: Colour,
        x: usize,
        y: usize,
        arcs: Arcs,
        off_field: u8,
        placement: &mut Placement,
        log: &mut Option<&mut TakeLog>,
    ) {
        let h = usize::from(self.height);
        let pass = self.cells.and_not(&self.live(m));
        let mut regions = [Bits::EMPTY; 4];
        let mut n = 0;
        for &arc in &arcs.masks[..usize::from(arcs.len)] {
            if arc & off_field != 0 {
                continue; // the arc touches the outside: open (§6.1)
            }
            // Ring cells of one arc are connected: one flood per arc, from
            // its first orthogonal cell.
            let Some(i) = (0..8).step_by(2).find(|&i| arc >> i & 1 == 1) else {
                continue;
            };
            let (dx, dy) = RING[i];
            let (qx, qy) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if regions[..n].iter().any(|r| r.contains(qx, qy)) {
                continue; // the same region, reached around the other side
            }
            let mut region = Bits::EMPTY;
            region.insert(qx, qy);
            if !bits::flood(&mut region, &pass, h, Some(&self.edge)) {
                regions[n] = region;
                n += 1;
            }
        }
        placement.regions = n as u8;
        if n == 0 {
            return;
        }
        // §6.4: every area first, then take them in increasing size.
        let mut areas = [(0u32, Bits::EMPTY); 4];
        for (slot, region) in areas.iter_mut().zip(&regions[..n]) {
            let area = self.enclosed_area(region, m);
            *slot = (area.len(), area);
        }
        areas[..n].sort_by_key(|(size, _)| *size);
        for (_, area) in &areas[..n] {
            let kind = self.take(m, area);
            match kind {
                TakeKind::Capture => placement.captures += 1,
                TakeKind::Base => placement.bases += 1,
            }
            if let Some(log) = log.as_deref_mut() {
                log.push(Take {
                    taker: m,
                    kind,
                    area: *area,
                });
            }
        }
    }

    /// §6.2: the enclosed area of the closed region `region` of `p`: every
    /// cell from which no orthogonal path reaches the edge without stepping
    /// on the region or its wall (the live `p` dots next to it).
    fn enclosed_area(&self, region: &Bits, p: Colour) -> Bits {
        let h = usize::from(self.height);
        let wall = region.grown(&self.cells) & self.live(p);
        let blocked = *region | wall;
        // Only the bounding box of region and wall can be enclosed: any cell
        // outside it walks straight away from the box to the edge. Flood the
        // box and a one-cell frame around it, from the frame and the edge.
        let (mut y0, mut y1, mut columns) = (usize::MAX, 0, 0u64);
        for y in 0..h {
            if blocked.0[y] != 0 {
                y0 = y0.min(y);
                y1 = y;
                columns |= blocked.0[y];
            }
        }
        if columns == 0 {
            return Bits::EMPTY;
        }
        let x0 = columns.trailing_zeros() as usize;
        let x1 = 63 - columns.leading_zeros() as usize;
        let inner_cols = bits::row_mask(x1 + 1) & !bits::row_mask(x0);
        let frame_cols = bits::row_mask((x1 + 2).min(64)) & !bits::row_mask(x0.saturating_sub(1));
        let (fy0, fy1) = (y0.saturating_sub(1), (y1 + 1).min(h - 1));
        let mut inner = Bits::EMPTY;
        let mut pass = Bits::EMPTY;
        for y in fy0..=fy1 {
            if (y0..=y1).contains(&y) {
                inner.0[y] = inner_cols;
            }
            pass.0[y] = frame_cols & self.cells.0[y] & !blocked.0[y];
        }
        let mut reached = pass.and_not(&inner) | (pass & self.edge);
        bits::flood(&mut reached, &pass, h, None);
        (inner & self.cells).and_not(&reached)
    }

    /// §6.3: `p` takes the area `area`.
    fn take(&mut self, p: Colour, area: &Bits) -> TakeKind {
        let q = p.other();
        let live_q = self.live(q);
        if area.intersects(&live_q) {
            // Capture: empty cells and Q's dots get holder P (Q's held empty
            // cells included), P's dots held by Q are freed, markers go.
            let gained = area.and_not(&self.dots[p.index()]);
            self.held[p.index()] |= gained;
            self.held[q.index()] = self.held[q.index()].and_not(area);
            self.markers[0] = self.markers[0].and_not(area);
            self.markers[1] = self.markers[1].and_not(area);
            TakeKind::Capture
        } else {
            // Empty base: P's marker on every playable cell of the area.
            let playable = *area & self.playable();
            self.markers[p.index()] |= playable;
            self.markers[q.index()] = self.markers[q.index()].and_not(&playable);
            TakeKind::Base
        }
    }

    /// §6.5(b): the markers reachable from `(x, y)` through marked cells go.
    fn dissolve_markers(&mut self, x: usize, y: usize) {
        let marked = self.markers[0] | self.markers[1];
        let mut reached = Bits::EMPTY;
        for (dx, dy) in [(0, -1), (1, 0), (0, 1), (-1, 0)] {
            let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if marked.contains(nx, ny) {
                reached.insert(nx, ny);
            }
        }
        bits::flood(&mut reached, &marked, usize::from(self.height), None);
        self.markers[0] = self.markers[0].and_not(&reached);
        self.markers[1] = self.markers[1].and_not(&reached);
        self.dissolved |= reached;
    }

    /// §6.5(c): the mover's dot at `(x, y)` closed nothing inside `e`'s
    /// base, so `e` takes the area of its region around the dot.
    fn fall_into_base(
        &mut self,
        e: Colour,
        x: usize,
        y: usize,
        placement: &mut Placement,
        log: &mut Option<&mut TakeLog>,
    ) {
        let pass = self.cells.and_not(&self.live(e));
        let mut region = Bits::EMPTY;
        region.insert(x, y);
        if bits::flood(
            &mut region,
            &pass,
            usize::from(self.height),
            Some(&self.edge),
        ) {
            // The base's wall was captured since: its region is open and
            // nothing is taken (docs/DOTS.md).
            return;
        }
        let area = self.enclosed_area(&region, e);
        let kind = self.take(e, &area);
        placement.fell_into_base = kind == TakeKind::Capture;
        if let Some(log) = log.as_deref_mut() {
            log.push(Take {
                taker: e,
                kind,
                area,
            });
        }
    }

    /// §7.2: `grounder` grounds; its groups of owned cells without an edge
    /// cell go to the other player. Returns how many of its dots were lost.
    pub fn ground(&mut self, grounder: Colour) -> u32 {
        let (g, o) = (grounder.index(), grounder.other().index());
        let owned = self.live(grounder) | self.held[g];
        let mut grounded = owned & self.edge;
        bits::flood(&mut grounded, &owned, usize::from(self.height), None);
        let lost = owned.and_not(&grounded);
        let lost_dots = (lost & self.dots[g]).len();
        self.held[o] |= lost.and_not(&self.dots[o]);
        self.held[g] = self.held[g].and_not(&lost);
        lost_dots
    }
}

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

/// A move accepted by [`Game::play`].
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

/// One game of Dots: options, seed, field, turn, moves and outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    options: RuleOptions,
    seed: Option<Seed>,
    field: Field,
    to_move: Colour,
    moves: Vec<Move>,
    outcome: Option<Outcome>,
}

impl Game {
    /// A game at its start position (docs/rules/dots.md §4). `seed` is required by
    /// `quadruple-cross` and refused otherwise (§3).
    pub fn new(options: RuleOptions, seed: Option<Seed>) -> Result<Game, OptionsError> {
        match (options.start.needs_seed(), seed.is_some()) {
            (true, false) => return Err(OptionsError::SeedRequired),
            (false, true) => {
                return Err(OptionsError::SeedNotAllowed {
                    start: options.start,
                });
            }
            _ => {}
        }
        Ok(Game::start(options, seed))
    }

    /// A game at its start position, the seed unchecked (a `quadruple-cross`
    /// game without one has no start dots; a seed given to another start is
    /// ignored): for callers that checked already.
    pub fn start(options: RuleOptions, seed: Option<Seed>) -> Game {
        let seed = seed.filter(|_| options.start.needs_seed());
        let mut field = Field::new(&options);
        for (point, colour) in setup::start_dots(&options, seed.as_ref()) {
            field.put_start_dot(colour, point);
        }
        Game {
            options,
            seed,
            field,
            to_move: Colour::Red,
            moves: Vec::with_capacity(usize::from(options.width) * usize::from(options.height) + 1),
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
    /// legality check [`Game::play`] and [`Game::legal_moves_into`] share.
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

    /// [`Game::play`], writing the areas taken into `log`.
    pub fn play_logged(&mut self, mv: Move, log: &mut TakeLog) -> Result<Played, IllegalMove> {
        self.play_inner(mv, Some(log))
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

    /// The legal moves (see [`Game::legal_moves_into`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arcs_count_the_separated_neighbours() {
        // Nothing around: one arc. N and S blocked: two arcs (E side, W side).
        assert_eq!(ARCS[0xFF].len, 1);
        assert_eq!(ARCS[0b1110_1110].len, 2);
        // Only diagonals free: they touch no orthogonal cell.
        assert_eq!(ARCS[0b1010_1010].len, 0);
        // Only orthogonals free: four arcs.
        assert_eq!(ARCS[0b0101_0101].len, 4);
    }

    #[test]
    fn options_are_checked() {
        assert!(RuleOptions::new(4, 4, Start::Cross, 0).is_ok());
        assert_eq!(
            RuleOptions::new(3, 4, Start::Empty, 0)
                .unwrap_err()
                .reason(),
            "WIDTH_OUT_OF_RANGE"
        );
        assert_eq!(
            RuleOptions::new(8, 65, Start::Empty, 0)
                .unwrap_err()
                .reason(),
            "HEIGHT_OUT_OF_RANGE"
        );
        assert_eq!(
            RuleOptions::new(5, 4, Start::DoubleCross, 0)
                .unwrap_err()
                .reason(),
            "FIELD_TOO_SMALL"
        );
    }
}
