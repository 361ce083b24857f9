//! The PÜNCT board (docs/rules/punct.md §1): the 211 spaces, their names, neighbours, the
//! straight lines through a space, the three pairs of opposite sides and the
//! 19-space centre hexagon.
//!
//! Spaces are numbered 0..211 in canonical order (by column, then by row), so
//! comparing two [`Space`] values compares them as the notation sorts them. All
//! tables are computed at compile time.

use std::fmt;
use std::str::FromStr;

/// Number of spaces on the board.
pub const SPACE_COUNT: usize = 211;

/// Number of columns (`A`..`Q`, x = 0..16).
pub const COLUMNS: i8 = 17;
/// Number of rows (`1`..`17`).
pub const ROWS: i8 = 17;

const NO_SPACE: u8 = u8::MAX;
/// The six corners removed from the hexagon (docs/rules/punct.md §1).
const CORNERS: [(i8, i8); 6] = [(0, 1), (0, 9), (8, 1), (8, 17), (16, 9), (16, 17)];

/// The six directions, in cyclic order, each a 60° turn from the last (docs/rules/punct.md §1).
pub const DIRECTIONS: [(i8, i8); 6] = [(1, 0), (1, 1), (0, 1), (-1, 0), (-1, -1), (0, -1)];

/// Whether (x, y) is a space of the board (docs/rules/punct.md §1).
pub const fn on_board(x: i8, y: i8) -> bool {
    if x < 0 || x > 16 || y < 1 || y > 17 || y - x < -7 || y - x > 9 {
        return false;
    }
    let mut i = 0;
    while i < CORNERS.len() {
        if CORNERS[i].0 == x && CORNERS[i].1 == y {
            return false;
        }
        i += 1;
    }
    true
}

/// A space of the board: a small copyable index in canonical order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Space(u8);

struct Tables {
    coords: [(i8, i8); SPACE_COUNT],
    /// `grid[x][y]`: the index of (x, y), or `NO_SPACE`.
    grid: [[u8; 18]; 17],
    neighbours: [[u8; 6]; SPACE_COUNT],
}

const TABLES: Tables = build_tables();

/// Each space's neighbours as a set, for floods done a set at a time.
const NEIGHBOURHOODS: [SpaceSet; SPACE_COUNT] = {
    let mut sets = [SpaceSet::EMPTY; SPACE_COUNT];
    let mut i = 0;
    while i < SPACE_COUNT {
        let mut d = 0;
        while d < 6 {
            let n = TABLES.neighbours[i][d];
            if n != NO_SPACE {
                sets[i].insert(Space(n));
            }
            d += 1;
        }
        i += 1;
    }
    sets
};

const fn build_tables() -> Tables {
    let mut t = Tables {
        coords: [(0, 0); SPACE_COUNT],
        grid: [[NO_SPACE; 18]; 17],
        neighbours: [[NO_SPACE; 6]; SPACE_COUNT],
    };
    let mut n = 0usize;
    let mut x = 0i8;
    while x < COLUMNS {
        let mut y = 1i8;
        while y <= ROWS {
            if on_board(x, y) {
                t.coords[n] = (x, y);
                t.grid[x as usize][y as usize] = n as u8;
                n += 1;
            }
            y += 1;
        }
        x += 1;
    }
    assert!(n == SPACE_COUNT);
    let mut i = 0;
    while i < SPACE_COUNT {
        let (x, y) = t.coords[i];
        let mut d = 0;
        while d < 6 {
            let (nx, ny) = (x + DIRECTIONS[d].0, y + DIRECTIONS[d].1);
            if on_board(nx, ny) {
                t.neighbours[i][d] = t.grid[nx as usize][ny as usize];
            }
            d += 1;
        }
        i += 1;
    }
    t
}

impl Space {
    /// The centre space `I9`.
    pub const CENTRE: Space = match Space::from_coords(8, 9) {
        Some(s) => s,
        None => panic!("I9 is on the board"),
    };

    /// The space at column `x` (0..16) and row `y` (1..17), if it is on the board.
    pub const fn from_coords(x: i8, y: i8) -> Option<Space> {
        if on_board(x, y) {
            Some(Space(TABLES.grid[x as usize][y as usize]))
        } else {
            None
        }
    }

    /// The space with canonical index `i` (0..211).
    pub const fn from_index(i: usize) -> Option<Space> {
        if i < SPACE_COUNT {
            Some(Space(i as u8))
        } else {
            None
        }
    }

    /// Canonical index (0..211): by column, then by row.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Column (x = 0..16 for `A`..`Q`).
    #[inline]
    pub const fn x(self) -> i8 {
        TABLES.coords[self.0 as usize].0
    }

    /// Row (y = 1..17).
    #[inline]
    pub const fn y(self) -> i8 {
        TABLES.coords[self.0 as usize].1
    }

    /// The neighbour in direction `d` (taken mod 6), if on the board.
    #[inline]
    pub const fn neighbour(self, d: usize) -> Option<Space> {
        let n = TABLES.neighbours[self.0 as usize][d % 6];
        if n == NO_SPACE { None } else { Some(Space(n)) }
    }

    /// The neighbours of this space as a set (2 to 6 spaces).
    #[inline]
    pub const fn neighbourhood(self) -> SpaceSet {
        NEIGHBOURHOODS[self.0 as usize]
    }

    /// All spaces in canonical order.
    pub fn all() -> impl Iterator<Item = Space> + Clone {
        (0..SPACE_COUNT as u8).map(Space)
    }

    /// The spaces reached by walking from this space in direction `d`, nearest
    /// first, up to the edge of the board: one of the 6 half-lines through it.
    pub fn ray(self, d: usize) -> impl Iterator<Item = Space> {
        let mut at = self;
        std::iter::from_fn(move || {
            at = at.neighbour(d)?;
            Some(at)
        })
    }

    /// Hex distance between two spaces (docs/rules/punct.md §1).
    pub fn distance(self, other: Space) -> u8 {
        let dx = self.x() - other.x();
        let dy = self.y() - other.y();
        dx.abs().max(dy.abs()).max((dy - dx).abs()) as u8
    }

    /// Whether `other` lies on one of the straight lines through this space
    /// (same column, same row or same diagonal); a space is on its own lines.
    pub fn in_line_with(self, other: Space) -> bool {
        let dx = other.x() - self.x();
        let dy = other.y() - self.y();
        dx == 0 || dy == 0 || dx == dy
    }

    /// Whether this space is in the 19-space centre hexagon (docs/rules/punct.md §1).
    #[inline]
    pub fn is_centre(self) -> bool {
        CENTRE.contains(self)
    }

    /// The column letter, `A`..`Q`.
    pub fn column_letter(self) -> char {
        (b'A' + self.x() as u8) as char
    }
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.column_letter(), self.y())
    }
}

impl fmt::Debug for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a space name could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpaceParseError {
    /// Not a letter followed by a number.
    #[error("`{0}` is not a space name (a column letter A-Q followed by a row number 1-17)")]
    Malformed(String),
    /// Well formed, but not one of the 211 spaces.
    #[error("`{0}` is not a space of the board")]
    OffBoard(String),
}

impl FromStr for Space {
    type Err = SpaceParseError;

    /// Reads `I9`, `i9` or ` I9 ` (docs/rules/punct.md §7: parsing accepts lower case and
    /// surrounding whitespace).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let mut chars = t.chars();
        let letter = chars.next().filter(|c| c.is_ascii_alphabetic());
        let digits = chars.as_str();
        let (Some(letter), true) = (
            letter,
            !digits.is_empty() && digits.len() <= 3 && digits.bytes().all(|b| b.is_ascii_digit()),
        ) else {
            return Err(SpaceParseError::Malformed(t.to_string()));
        };
        let x = letter.to_ascii_uppercase() as i32 - 'A' as i32;
        let y: i32 = digits
            .parse()
            .map_err(|_| SpaceParseError::Malformed(t.to_string()))?;
        if !(0..i32::from(COLUMNS)).contains(&x) || !(1..=i32::from(ROWS)).contains(&y) {
            return Err(SpaceParseError::OffBoard(t.to_string()));
        }
        Space::from_coords(x as i8, y as i8).ok_or_else(|| SpaceParseError::OffBoard(t.to_string()))
    }
}

/// A set of spaces: a 256-bit bitset indexed by [`Space::index`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SpaceSet([u64; 4]);

impl SpaceSet {
    /// The empty set.
    pub const EMPTY: SpaceSet = SpaceSet([0; 4]);

    /// Whether `s` is in the set.
    #[inline]
    pub const fn contains(&self, s: Space) -> bool {
        self.0[s.0 as usize >> 6] & (1u64 << (s.0 & 63)) != 0
    }

    /// Adds `s`.
    #[inline]
    pub const fn insert(&mut self, s: Space) {
        self.0[s.0 as usize >> 6] |= 1u64 << (s.0 & 63);
    }

    /// Removes `s`.
    #[inline]
    pub const fn remove(&mut self, s: Space) {
        self.0[s.0 as usize >> 6] &= !(1u64 << (s.0 & 63));
    }

    /// The set with `s` added.
    pub const fn with(mut self, s: Space) -> SpaceSet {
        self.insert(s);
        self
    }

    /// Intersection.
    #[inline]
    pub const fn and(self, o: SpaceSet) -> SpaceSet {
        SpaceSet([
            self.0[0] & o.0[0],
            self.0[1] & o.0[1],
            self.0[2] & o.0[2],
            self.0[3] & o.0[3],
        ])
    }

    /// Union.
    #[inline]
    pub const fn or(self, o: SpaceSet) -> SpaceSet {
        SpaceSet([
            self.0[0] | o.0[0],
            self.0[1] | o.0[1],
            self.0[2] | o.0[2],
            self.0[3] | o.0[3],
        ])
    }

    /// The spaces of `self` that are not in `o`.
    #[inline]
    pub const fn minus(self, o: SpaceSet) -> SpaceSet {
        SpaceSet([
            self.0[0] & !o.0[0],
            self.0[1] & !o.0[1],
            self.0[2] & !o.0[2],
            self.0[3] & !o.0[3],
        ])
    }

    /// Whether the set is empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        (self.0[0] | self.0[1] | self.0[2] | self.0[3]) == 0
    }

    /// Whether the two sets share a space.
    #[inline]
    pub const fn intersects(&self, o: SpaceSet) -> bool {
        !self.and(o).is_empty()
    }

    /// Number of spaces in the set.
    pub const fn len(&self) -> u32 {
        self.0[0].count_ones()
            + self.0[1].count_ones()
            + self.0[2].count_ones()
            + self.0[3].count_ones()
    }

    /// The first space of the set in canonical order, if any.
    #[inline]
    pub const fn first(&self) -> Option<Space> {
        let mut w = 0;
        while w < 4 {
            if self.0[w] != 0 {
                return Some(Space((w as u32 * 64 + self.0[w].trailing_zeros()) as u8));
            }
            w += 1;
        }
        None
    }

    /// The spaces of the set in canonical order.
    pub fn iter(&self) -> impl Iterator<Item = Space> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                if b == 0 {
                    return None;
                }
                let i = b.trailing_zeros();
                b &= b - 1;
                Some(Space((w as u32 * 64 + i) as u8))
            })
        })
    }
}

impl FromIterator<Space> for SpaceSet {
    fn from_iter<I: IntoIterator<Item = Space>>(iter: I) -> Self {
        let mut s = SpaceSet::EMPTY;
        for sp in iter {
            s.insert(sp);
        }
        s
    }
}

impl fmt::Debug for SpaceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// The spaces whose coordinates satisfy one of the board's defining conditions.
#[derive(Clone, Copy)]
enum Region {
    CentreHexagon,
    Column(i8),
    Row(i8),
    Diagonal(i8),
}

const fn region(r: Region) -> SpaceSet {
    let mut set = SpaceSet::EMPTY;
    let mut i = 0;
    while i < SPACE_COUNT {
        let (x, y) = TABLES.coords[i];
        let inside = match r {
            Region::CentreHexagon => {
                let (dx, dy) = (x - 8, y - 9);
                dx.abs() <= 2 && dy.abs() <= 2 && (dy - dx).abs() <= 2
            }
            Region::Column(c) => x == c,
            Region::Row(r) => y == r,
            Region::Diagonal(d) => y - x == d,
        };
        if inside {
            set.insert(Space(i as u8));
        }
        i += 1;
    }
    set
}

/// The 19 spaces within distance 2 of `I9` (docs/rules/punct.md §1).
pub const CENTRE: SpaceSet = region(Region::CentreHexagon);

/// One of the three pairs of opposite sides (docs/rules/punct.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SidePair {
    /// Column `A` (x = 0) and column `Q` (x = 16).
    Columns,
    /// Row 1 and row 17.
    Rows,
    /// The diagonal sides `J2`…`P8` (y - x = -7) and `B10`…`H16` (y - x = 9).
    Diagonals,
}

impl SidePair {
    /// The three pairs.
    pub const ALL: [SidePair; 3] = [SidePair::Columns, SidePair::Rows, SidePair::Diagonals];

    /// The two opposite sides of the pair, 7 spaces each.
    pub const fn sides(self) -> (SpaceSet, SpaceSet) {
        match self {
            SidePair::Columns => (SIDES[0], SIDES[1]),
            SidePair::Rows => (SIDES[2], SIDES[3]),
            SidePair::Diagonals => (SIDES[4], SIDES[5]),
        }
    }

    /// Upper-case name used in notation and on the wire (`COLUMNS`, `ROWS`, `DIAGONALS`).
    pub const fn name(self) -> &'static str {
        match self {
            SidePair::Columns => "COLUMNS",
            SidePair::Rows => "ROWS",
            SidePair::Diagonals => "DIAGONALS",
        }
    }
}

/// The six sides, paired as `[A, Q, row 1, row 17, J2-P8, B10-H16]`.
pub const SIDES: [SpaceSet; 6] = [
    region(Region::Column(0)),
    region(Region::Column(16)),
    region(Region::Row(1)),
    region(Region::Row(17)),
    region(Region::Diagonal(-7)),
    region(Region::Diagonal(9)),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(s: &str) -> Space {
        s.parse().unwrap()
    }

    #[test]
    fn board_has_211_spaces_in_canonical_order() {
        assert_eq!(Space::all().count(), 211);
        let names: Vec<String> = Space::all().map(|s| s.to_string()).collect();
        assert_eq!(names.first().map(String::as_str), Some("A2"));
        assert_eq!(names.last().map(String::as_str), Some("Q16"));
        let mut sorted = Space::all().collect::<Vec<_>>();
        sorted.sort_by_key(|s| (s.x(), s.y()));
        assert_eq!(sorted, Space::all().collect::<Vec<_>>());
    }

    #[test]
    fn corners_are_not_spaces() {
        for c in ["A1", "A9", "I1", "I17", "Q9", "Q17"] {
            assert_eq!(c.parse::<Space>(), Err(SpaceParseError::OffBoard(c.into())));
        }
        for bad in ["", "9", "AA", "R5", "A0", "I18", "A10", "Q8", "I9x", "A-1"] {
            assert!(bad.parse::<Space>().is_err(), "{bad}");
        }
        assert_eq!(sp(" i9 "), Space::CENTRE);
    }

    #[test]
    fn names_round_trip() {
        for s in Space::all() {
            assert_eq!(sp(&s.to_string()), s);
            assert_eq!(sp(&s.to_string().to_lowercase()), s);
        }
    }

    #[test]
    fn neighbours_are_symmetric_and_six_inside() {
        for s in Space::all() {
            for d in 0..6 {
                if let Some(n) = s.neighbour(d) {
                    assert_eq!(n.neighbour(d + 3), Some(s));
                    assert_eq!(s.distance(n), 1);
                }
            }
        }
        let i9 = Space::CENTRE;
        let ns: Vec<String> = (0..6)
            .map(|d| i9.neighbour(d).unwrap().to_string())
            .collect();
        assert_eq!(ns, ["J9", "J10", "I10", "H9", "H8", "I8"]);
        // A corner neighbour: B2 lost A1.
        assert_eq!(
            (0..6).filter(|&d| sp("B2").neighbour(d).is_some()).count(),
            5
        );
    }

    #[test]
    fn sides_have_seven_spaces_each() {
        let expect = [
            "A2 A3 A4 A5 A6 A7 A8",
            "Q10 Q11 Q12 Q13 Q14 Q15 Q16",
            "B1 C1 D1 E1 F1 G1 H1",
            "J17 K17 L17 M17 N17 O17 P17",
            "J2 K3 L4 M5 N6 O7 P8",
            "B10 C11 D12 E13 F14 G15 H16",
        ];
        for (side, names) in SIDES.iter().zip(expect) {
            let got: Vec<String> = side.iter().map(|s| s.to_string()).collect();
            assert_eq!(got.join(" "), names);
        }
    }

    #[test]
    fn centre_is_the_19_listed_spaces() {
        let got: Vec<String> = CENTRE.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            got.join(" "),
            "G7 G8 G9 H7 H8 H9 H10 I7 I8 I9 I10 I11 J8 J9 J10 J11 K9 K10 K11"
        );
    }

    #[test]
    fn six_rays_through_the_centre_reach_the_edges() {
        let lens: Vec<usize> = (0..6).map(|d| Space::CENTRE.ray(d).count()).collect();
        // Each of the 3 lines through I9 has 15 spaces (17 minus two corners).
        assert_eq!(lens, [7, 7, 7, 7, 7, 7]);
        let row: Vec<String> = sp("B1").ray(0).map(|s| s.to_string()).collect();
        assert_eq!(row.join(" "), "C1 D1 E1 F1 G1 H1");
        assert!(sp("E5").in_line_with(sp("H8")));
        assert!(!sp("E5").in_line_with(sp("H7")));
    }
}
