//! The table of one round (docs/rules/punto.md §4): cells `(x, y)` around the first
//! card at `(0, 0)`, a stack of cards on each, the floating 6 × 6 area, the
//! legal cells of a revealed card (§5.3, in the order of its refusal
//! reasons), and rows (§6) and deadlock rows (§7.2) of top cards.
//!
//! Everything here is fixed-size: checking a cell, listing the legal cells
//! and looking for a row through the card just placed allocate nothing.

use std::fmt;

use super::Refusal;
use super::card::{Card, Colour};

/// Cells from the centre to the edge of the reachable square (docs/rules/punto.md §4.2:
/// every card lies within `−5 ≤ x, y ≤ 5`).
pub const REACH: i32 = 5;
/// Most columns (and rows) the cards may span (docs/rules/punto.md §4.2).
pub const SPAN: i32 = 6;
/// Cells on a side of the reachable square.
const SIDE: usize = (2 * REACH + 1) as usize;
/// Most cards a stack can hold: each covers a strictly lower one (§5.3).
pub const MAX_STACK: usize = 9;
/// Most legal cells a revealed card can have (7 columns × 7 rows: the
/// occupied box grown by one, within what keeps a 6 × 6 box).
pub const MAX_LEGAL: usize = 49;

/// A cell of the table (docs/rules/punto.md §4.1): `x` grows to the right, `y`
/// upwards, `(0, 0)` holds the round's first card. A cell named in a move
/// may lie anywhere; only `−5..=5` on both axes can ever hold a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Cell {
    /// Column, growing to the right.
    pub x: i32,
    /// Row, growing upwards.
    pub y: i32,
}

impl Cell {
    /// The centre, where every round's first card goes (docs/rules/punto.md §4.1).
    pub const CENTRE: Cell = Cell { x: 0, y: 0 };

    /// The cell `(x, y)`.
    pub const fn new(x: i32, y: i32) -> Cell {
        Cell { x, y }
    }

    /// Its place in the reachable square, if it lies there.
    const fn slot(self) -> Option<usize> {
        if self.x < -REACH || self.x > REACH || self.y < -REACH || self.y > REACH {
            None
        } else {
            Some((self.x + REACH) as usize * SIDE + (self.y + REACH) as usize)
        }
    }

    /// The cell `i` steps along `step` from this one.
    pub const fn along(self, step: Step, i: i32) -> Cell {
        let (dx, dy) = step.delta();
        Cell {
            x: self.x.saturating_add(dx.saturating_mul(i)),
            y: self.y.saturating_add(dy.saturating_mul(i)),
        }
    }
}

impl fmt::Display for Cell {
    /// The canonical move text `X,Y` (docs/rules/punto.md §4.4).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.x, self.y)
    }
}

/// The step of a line (docs/rules/punto.md §4.3), in the order rows are sorted by
/// (§8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// `(1, 0)`: left to right.
    Horizontal,
    /// `(0, 1)`: bottom to top.
    Vertical,
    /// `(1, 1)`: left to right, rising.
    Diagonal,
    /// `(1, −1)`: left to right, falling.
    AntiDiagonal,
}

impl Step {
    /// The four steps, in the order of docs/rules/punto.md §8.4.
    pub const ALL: [Step; 4] = [
        Step::Horizontal,
        Step::Vertical,
        Step::Diagonal,
        Step::AntiDiagonal,
    ];

    /// `(dx, dy)`.
    pub const fn delta(self) -> (i32, i32) {
        match self {
            Step::Horizontal => (1, 0),
            Step::Vertical => (0, 1),
            Step::Diagonal => (1, 1),
            Step::AntiDiagonal => (1, -1),
        }
    }
}

/// A line of top cards of one colour (docs/rules/punto.md §6, §7.2): from its first
/// cell along its step (§8.4), with the sum of its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Row {
    /// The colour of every top card of it.
    pub colour: Colour,
    /// Its first cell (§8.4: leftmost; lowest for a vertical row).
    pub start: Cell,
    /// Its direction.
    pub step: Step,
    /// How many cells it has.
    pub len: u8,
    /// The sum of its top cards' values.
    pub total: u32,
}

impl Row {
    /// Its cells, first cell first.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        (0..i32::from(self.len)).map(|i| self.start.along(self.step, i))
    }

    /// The order of docs/rules/punto.md §8.4: by first cell (`x`, then `y`), then step.
    pub fn sort_key(&self) -> (Cell, Step) {
        (self.start, self.step)
    }
}

/// The cards of one cell, the bottom one first (docs/rules/punto.md §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stack {
    cards: [Card; MAX_STACK],
    len: u8,
}

impl Stack {
    const EMPTY: Stack = Stack {
        cards: [Card::FILLER; MAX_STACK],
        len: 0,
    };

    /// The cards, bottom first; the last one is the top card.
    pub fn cards(&self) -> &[Card] {
        &self.cards[..usize::from(self.len)]
    }

    /// The top card (the one placed last), if any.
    pub fn top(&self) -> Option<Card> {
        self.cards().last().copied()
    }

    /// How many cards it holds.
    pub fn height(&self) -> usize {
        usize::from(self.len)
    }
}

/// The smallest box around the occupied cells (docs/rules/punto.md §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// Leftmost occupied column.
    pub min_x: i32,
    /// Rightmost occupied column.
    pub max_x: i32,
    /// Lowest occupied row.
    pub min_y: i32,
    /// Highest occupied row.
    pub max_y: i32,
}

impl Bounds {
    /// The box of the one cell `cell`.
    const fn of(cell: Cell) -> Bounds {
        Bounds {
            min_x: cell.x,
            max_x: cell.x,
            min_y: cell.y,
            max_y: cell.y,
        }
    }

    /// The box grown to hold `cell`.
    const fn with(self, cell: Cell) -> Bounds {
        Bounds {
            min_x: if cell.x < self.min_x {
                cell.x
            } else {
                self.min_x
            },
            max_x: if cell.x > self.max_x {
                cell.x
            } else {
                self.max_x
            },
            min_y: if cell.y < self.min_y {
                cell.y
            } else {
                self.min_y
            },
            max_y: if cell.y > self.max_y {
                cell.y
            } else {
                self.max_y
            },
        }
    }

    /// Whether it fits 6 × 6 (docs/rules/punto.md §4.2).
    pub const fn fits(self) -> bool {
        self.max_x - self.min_x < SPAN && self.max_y - self.min_y < SPAN
    }

    /// Columns it spans.
    pub const fn width(self) -> i32 {
        self.max_x - self.min_x + 1
    }

    /// Rows it spans.
    pub const fn height(self) -> i32 {
        self.max_y - self.min_y + 1
    }

    /// The columns a card may still go to: those keeping the box 6 wide.
    pub const fn columns(self) -> (i32, i32) {
        (self.max_x - (SPAN - 1), self.min_x + (SPAN - 1))
    }

    /// The rows a card may still go to: those keeping the box 6 high.
    pub const fn rows(self) -> (i32, i32) {
        (self.max_y - (SPAN - 1), self.min_y + (SPAN - 1))
    }
}

/// The legal cells of a revealed card, sorted by `x`, then `y` (docs/rules/punto.md
/// §5.3), in fixed storage.
#[derive(Debug, Clone, Copy)]
pub struct CellList {
    cells: [Cell; MAX_LEGAL],
    len: u8,
}

impl CellList {
    /// No cell.
    pub const fn empty() -> CellList {
        CellList {
            cells: [Cell::CENTRE; MAX_LEGAL],
            len: 0,
        }
    }

    /// The cells, sorted.
    pub fn as_slice(&self) -> &[Cell] {
        &self.cells[..usize::from(self.len)]
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// For each slot of the reachable square, the bits of its 8 neighbours
/// (docs/rules/punto.md §4.3) that lie in the square.
const NEIGHBOURS: [u128; SIDE * SIDE] = neighbour_masks();

const fn neighbour_masks() -> [u128; SIDE * SIDE] {
    let mut masks = [0u128; SIDE * SIDE];
    let mut x = -REACH;
    while x <= REACH {
        let mut y = -REACH;
        while y <= REACH {
            let mut mask = 0u128;
            let mut dx = -1;
            while dx <= 1 {
                let mut dy = -1;
                while dy <= 1 {
                    if (dx != 0 || dy != 0)
                        && let Some(slot) = Cell::new(x + dx, y + dy).slot()
                    {
                        mask |= 1 << slot;
                    }
                    dy += 1;
                }
                dx += 1;
            }
            if let Some(slot) = Cell::new(x, y).slot() {
                masks[slot] = mask;
            }
            y += 1;
        }
        x += 1;
    }
    masks
}

/// Every slot of the reachable square.
const ALL_SLOTS: u128 = (1 << (SIDE * SIDE)) - 1;
/// The slots of the top row (`y = 5`) of every column.
const TOP_ROW: u128 = replicate(1 << (SIDE - 1));
/// The slots of the bottom row (`y = −5`) of every column.
const BOTTOM_ROW: u128 = replicate(1);

/// `column` (the bits of one column's slots, `y` from −5) repeated in every
/// column of the reachable square.
const fn replicate(column: u128) -> u128 {
    let mut mask = 0;
    let mut x = 0;
    while x < SIDE {
        mask |= column << (x * SIDE);
        x += 1;
    }
    mask
}

/// The slots of columns `low..=high` and rows `low_y..=high_y` (all within
/// the reachable square), or none when a range is empty.
const fn rectangle(low_x: i32, high_x: i32, low_y: i32, high_y: i32) -> u128 {
    if low_x > high_x || low_y > high_y {
        return 0;
    }
    let columns = ((1u128 << ((high_x - low_x + 1) as usize * SIDE)) - 1)
        << ((low_x + REACH) as usize * SIDE);
    let rows = ((1u128 << (high_y - low_y + 1)) - 1) << (low_y + REACH);
    columns & replicate(rows)
}

/// The slots next to (docs/rules/punto.md §4.3) at least one slot of `mask`, `mask`
/// itself included.
const fn grown(mask: u128) -> u128 {
    // Along a column first (y ± 1, never wrapping into the next column),
    // then to both neighbouring columns (x ± 1, which are ± SIDE slots).
    let column = mask | ((mask & !TOP_ROW) << 1) | ((mask & !BOTTOM_ROW) >> 1);
    (column | (column << SIDE) | (column >> SIDE)) & ALL_SLOTS
}

/// How many cells after `cell` (excluded), stepping `(dx, dy)`, are in
/// `mask`, staying within the reachable square.
fn slot_run(mask: u128, cell: Cell, dx: i32, dy: i32) -> u32 {
    let (mut x, mut y) = (cell.x + REACH + dx, cell.y + REACH + dy);
    let mut n = 0;
    while (0..SIDE as i32).contains(&x)
        && (0..SIDE as i32).contains(&y)
        && mask & (1 << (x as usize * SIDE + y as usize)) != 0
    {
        n += 1;
        x += dx;
        y += dy;
    }
    n
}

/// The cell of slot `slot` (0..121).
const fn cell_of(slot: u32) -> Cell {
    Cell {
        x: (slot / SIDE as u32) as i32 - REACH,
        y: (slot % SIDE as u32) as i32 - REACH,
    }
}

/// The cards on the table during a round (docs/rules/punto.md §4).
///
/// Besides the stacks it keeps bit masks over the slots of the reachable
/// square (slot = `(x + 5) · 11 + (y + 5)`, so ascending slots are the
/// order of docs/rules/punto.md §5.3): which cells are occupied, which show each
/// colour on top, and which a card of each value may cover. The legal
/// cells of a card and the row check after a placement are a few masks
/// and a walk over set bits, with no search over candidate cells.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Table {
    stacks: [Stack; SIDE * SIDE],
    bounds: Option<Bounds>,
    cards: u16,
    /// One bit per occupied cell of the reachable square (by slot).
    occupied: u128,
    /// By colour index: the cells whose top card has that colour.
    colours: [u128; 4],
    /// By value `v` (0..=9): the cells whose top card is lower than `v`,
    /// the cells a card of value `v` may cover (§5.3 order 6).
    coverable: [u128; 10],
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl Table {
    /// An empty table.
    pub const fn new() -> Table {
        Table {
            stacks: [Stack::EMPTY; SIDE * SIDE],
            bounds: None,
            cards: 0,
            occupied: 0,
            colours: [0; 4],
            coverable: [0; 10],
        }
    }

    /// Whether no card is on the table.
    pub const fn is_empty(&self) -> bool {
        self.cards == 0
    }

    /// How many cards are on the table, covered ones included.
    pub const fn card_count(&self) -> usize {
        self.cards as usize
    }

    /// The box around the occupied cells, if any is.
    pub const fn bounds(&self) -> Option<Bounds> {
        self.bounds
    }

    /// The stack of `cell` (empty outside the reachable square).
    pub fn stack(&self, cell: Cell) -> &Stack {
        match cell.slot() {
            Some(slot) => &self.stacks[slot],
            None => &Stack::EMPTY,
        }
    }

    /// The top card of `cell`, if any.
    pub fn top(&self, cell: Cell) -> Option<Card> {
        self.stack(cell).top()
    }

    /// Every occupied cell, sorted by `x`, then `y`, with its stack.
    pub fn occupied(&self) -> impl Iterator<Item = (Cell, &Stack)> + '_ {
        (-REACH..=REACH)
            .flat_map(|x| (-REACH..=REACH).map(move |y| Cell::new(x, y)))
            .map(|cell| (cell, self.stack(cell)))
            .filter(|(_, stack)| stack.height() > 0)
    }

    /// Every card on the table, covered ones included.
    pub fn all_cards(&self) -> impl Iterator<Item = Card> + '_ {
        self.occupied()
            .flat_map(|(_, stack)| stack.cards().iter().copied())
    }

    /// Puts `card` on top of `cell`'s stack without any rule check (for
    /// building tables by hand); false, and nothing changed, when the cell
    /// is outside the reachable square or its stack is full.
    pub fn put(&mut self, cell: Cell, card: Card) -> bool {
        let Some(slot) = cell.slot() else {
            return false;
        };
        let stack = &mut self.stacks[slot];
        let covered = stack.top();
        let Some(place) = stack.cards.get_mut(usize::from(stack.len)) else {
            return false;
        };
        *place = card;
        stack.len += 1;
        self.cards += 1;
        let bit = 1u128 << slot;
        self.occupied |= bit;
        if let Some(covered) = covered {
            self.colours[covered.colour().index()] &= !bit;
        }
        self.colours[card.colour().index()] |= bit;
        for (value, cells) in self.coverable.iter_mut().enumerate() {
            if usize::from(card.value()) < value {
                *cells |= bit;
            } else {
                *cells &= !bit;
            }
        }
        self.bounds = Some(match self.bounds {
            Some(bounds) => bounds.with(cell),
            None => Bounds::of(cell),
        });
        true
    }

    /// Whether any of the 8 neighbours of `cell` holds a card (docs/rules/punto.md
    /// §4.3).
    fn has_neighbour(&self, cell: Cell) -> bool {
        cell.slot()
            .is_some_and(|slot| self.occupied & NEIGHBOURS[slot] != 0)
    }

    /// Checks steps 3 to 6 of docs/rules/punto.md §5.3 for `card` on `cell`, in that
    /// order; the card it would cover, if any.
    pub fn check(&self, cell: Cell, card: Card) -> Result<Option<Card>, Refusal> {
        // §5.3 order 3: the first card of a round goes to (0, 0).
        let Some(bounds) = self.bounds else {
            return if cell == Cell::CENTRE {
                Ok(None)
            } else {
                Err(Refusal::FirstCardNotCenter)
            };
        };
        // §5.3 order 4, §4.2: the cards must still fit a 6 × 6 box.
        if cell.slot().is_none() || !bounds.with(cell).fits() {
            return Err(Refusal::OutsideArea);
        }
        match self.top(cell) {
            // §5.3 order 5: an empty cell needs an occupied neighbour.
            None if self.has_neighbour(cell) => Ok(None),
            None => Err(Refusal::NotAdjacent),
            // §5.3 order 6: only a strictly lower value can be covered.
            Some(top) if top.value() < card.value() => Ok(Some(top)),
            Some(top) => Err(Refusal::NotHigher {
                top,
                revealed: card,
            }),
        }
    }

    /// The legal cells of `card` as slot bits (docs/rules/punto.md §5.3 orders 3–6):
    /// the centre on an empty table; else the empty cells next to a card
    /// and the cells it may cover, within the columns and rows that keep a
    /// 6 × 6 box (§4.2).
    fn legal_mask(&self, card: Card) -> u128 {
        let Some(bounds) = self.bounds else {
            return Cell::CENTRE.slot().map_or(0, |slot| 1 << slot);
        };
        let (low_x, high_x) = bounds.columns();
        let (low_y, high_y) = bounds.rows();
        let area = rectangle(
            low_x.max(-REACH),
            high_x.min(REACH),
            low_y.max(-REACH),
            high_y.min(REACH),
        );
        let empty_next = grown(self.occupied) & !self.occupied;
        let coverable = self.coverable[usize::from(card.value()).min(9)];
        (empty_next | coverable) & area
    }

    /// Every legal cell of `card`, sorted by `x`, then `y` (docs/rules/punto.md §5.3).
    pub fn legal_cells(&self, card: Card) -> CellList {
        let mask = self.legal_mask(card);
        let mut cells = [Cell::CENTRE; MAX_LEGAL];
        let mut len = 0;
        // The low and the high 64 slots, each lowest bit first.
        for (base, mut half) in [(0, mask as u64), (64, (mask >> 64) as u64)] {
            while half != 0 && len < MAX_LEGAL {
                cells[len] = cell_of(base + half.trailing_zeros());
                len += 1;
                half &= half - 1;
            }
        }
        CellList {
            cells,
            len: len as u8,
        }
    }

    /// Whether `card` has a legal cell (docs/rules/punto.md §7.1: else the round ends
    /// in a deadlock).
    pub fn has_legal_cell(&self, card: Card) -> bool {
        self.legal_mask(card) != 0
    }

    /// The colour `cell` shows when it counts for rows: its top card's
    /// colour unless that is `neutral` (docs/rules/punto.md §6).
    fn row_colour(&self, cell: Cell, neutral: Option<Colour>) -> Option<Colour> {
        self.top(cell)
            .map(Card::colour)
            .filter(|&c| Some(c) != neutral)
    }

    /// How many cells from `cell` (excluded) along `dir` (+1 or −1) times
    /// `step` show `colour`.
    fn run(&self, cell: Cell, step: Step, dir: i32, colour: Colour) -> i32 {
        let (dx, dy) = step.delta();
        slot_run(self.colours[colour.index()], cell, dir * dx, dir * dy) as i32
    }

    /// The maximal row along `step` through `cell`, of `cell`'s top
    /// colour, if that colour counts (docs/rules/punto.md §6).
    pub fn row_through(&self, cell: Cell, step: Step, neutral: Option<Colour>) -> Option<Row> {
        let colour = self.row_colour(cell, neutral)?;
        let back = self.run(cell, step, -1, colour);
        let ahead = self.run(cell, step, 1, colour);
        let start = cell.along(step, -back);
        let len = (back + ahead + 1) as u8;
        Some(self.row(colour, start, step, len))
    }

    fn row(&self, colour: Colour, start: Cell, step: Step, len: u8) -> Row {
        let total = (0..i32::from(len))
            .filter_map(|i| self.top(start.along(step, i)))
            .map(|card| u32::from(card.value()))
            .sum();
        Row {
            colour,
            start,
            step,
            len,
            total,
        }
    }

    /// Whether `cell`'s top card is part of a row of at least `len` cells
    /// (docs/rules/punto.md §6): the check after each placement, allocation-free. It
    /// walks the top-colour mask of the placed card's colour in slot steps.
    pub fn makes_row(&self, cell: Cell, len: u8, neutral: Option<Colour>) -> bool {
        let Some(colour) = self.row_colour(cell, neutral) else {
            return false;
        };
        let mask = self.colours[colour.index()];
        let len = u32::from(len);
        if mask.count_ones() < len {
            return false;
        }
        Step::ALL.iter().any(|&step| {
            let (dx, dy) = step.delta();
            slot_run(mask, cell, dx, dy) + slot_run(mask, cell, -dx, -dy) + 1 >= len
        })
    }

    /// The winning rows through `cell` (maximal rows of at least `len`
    /// cells, docs/rules/punto.md §6), sorted as §8.4 says.
    pub fn winning_rows(&self, cell: Cell, len: u8, neutral: Option<Colour>) -> Vec<Row> {
        let mut rows: Vec<Row> = Step::ALL
            .iter()
            .filter_map(|&step| self.row_through(cell, step, neutral))
            .filter(|row| row.len >= len)
            .collect();
        rows.sort_by_key(Row::sort_key);
        rows
    }

    /// Every line of exactly `len` cells whose top cards share one colour
    /// that is not `neutral` (docs/rules/punto.md §7.2), sorted as §8.4 says.
    pub fn deadlock_rows(&self, len: u8, neutral: Option<Colour>) -> Vec<Row> {
        let mut rows = Vec::new();
        for (start, _) in self.occupied() {
            let Some(colour) = self.row_colour(start, neutral) else {
                continue;
            };
            for step in Step::ALL {
                let same = (1..i32::from(len))
                    .all(|i| self.top(start.along(step, i)).map(Card::colour) == Some(colour));
                if same {
                    rows.push(self.row(colour, start, step, len));
                }
            }
        }
        // `occupied` runs by x then y, and steps in §8.4 order: sorted.
        rows
    }

    /// Whether all 36 cells of a 6 × 6 box are occupied.
    pub fn is_full(&self) -> bool {
        self.bounds.is_some_and(|b| {
            b.width() == SPAN && b.height() == SPAN && self.occupied().count() == 36
        })
    }
}
