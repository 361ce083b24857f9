//! Pieces (docs/rules/punct.md §2): the two colours, the six piece codes with their counts,
//! and each code's shape in each rotation, precomputed for every PÜNCT space.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use super::board::{SPACE_COUNT, Space, SpaceSet};

/// A player's colour. White moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Colour {
    /// Moves first.
    White,
    /// Moves second.
    Black,
}

impl Colour {
    /// Both colours, White first.
    pub const BOTH: [Colour; 2] = [Colour::White, Colour::Black];

    /// The other colour.
    #[inline]
    pub const fn opponent(self) -> Colour {
        match self {
            Colour::White => Colour::Black,
            Colour::Black => Colour::White,
        }
    }

    /// 0 for White, 1 for Black.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name (`white`, `black`).
    pub const fn name(self) -> &'static str {
        match self {
            Colour::White => "white",
            Colour::Black => "black",
        }
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The six kinds of piece (docs/rules/punct.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PieceCode {
    /// Straight, PÜNCT in the middle.
    SM,
    /// Straight, PÜNCT at an end.
    SE,
    /// Angular (120°), PÜNCT in the middle.
    AM,
    /// Angular, PÜNCT at an end, bending one way.
    AL,
    /// Angular, PÜNCT at an end, bending the other way (mirror of `AL`).
    AR,
    /// Triangular.
    T,
}

impl PieceCode {
    /// The six codes in notation order.
    pub const ALL: [PieceCode; 6] = [
        PieceCode::SM,
        PieceCode::SE,
        PieceCode::AM,
        PieceCode::AL,
        PieceCode::AR,
        PieceCode::T,
    ];

    /// How many pieces of this code each player has (18 in all).
    pub const fn count(self) -> u8 {
        match self {
            PieceCode::SE => 4,
            PieceCode::T => 6,
            _ => 2,
        }
    }

    /// Index 0..6 in [`PieceCode::ALL`].
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The notation code (`SM`, `SE`, `AM`, `AL`, `AR`, `T`).
    pub const fn name(self) -> &'static str {
        match self {
            PieceCode::SM => "SM",
            PieceCode::SE => "SE",
            PieceCode::AM => "AM",
            PieceCode::AL => "AL",
            PieceCode::AR => "AR",
            PieceCode::T => "T",
        }
    }

    /// Number of rotations giving distinct positions: 3 for `SM`, 6 otherwise.
    #[inline]
    pub const fn distinct_rotations(self) -> u8 {
        match self {
            PieceCode::SM => 3,
            _ => 6,
        }
    }

    /// The canonical form of rotation `r`: `SM` turned 180° is the same position.
    #[inline]
    pub const fn canonical_rotation(self, r: u8) -> u8 {
        r % self.distinct_rotations()
    }

    /// Which of the three dots of [`footprint`] is the middle of the chain (the
    /// one a bridge leaves unsupported); `None` for the triangle, which has no ends.
    #[inline]
    pub const fn middle_dot(self) -> Option<usize> {
        match self {
            PieceCode::SM | PieceCode::AM => Some(0),
            PieceCode::SE | PieceCode::AL | PieceCode::AR => Some(1),
            PieceCode::T => None,
        }
    }

    /// The dot offsets of rotation `r` as direction paths from the PÜNCT:
    /// dot 0 is the PÜNCT, dots 1 and 2 are the minor dots (docs/rules/punct.md §2 table).
    const fn paths(self, r: usize) -> [[Option<usize>; 2]; 2] {
        match self {
            PieceCode::SM => [[Some(r), None], [Some(r + 3), None]],
            PieceCode::SE => [[Some(r), None], [Some(r), Some(r)]],
            PieceCode::AM => [[Some(r), None], [Some(r + 2), None]],
            PieceCode::AL => [[Some(r), None], [Some(r), Some(r + 5)]],
            PieceCode::AR => [[Some(r), None], [Some(r), Some(r + 1)]],
            PieceCode::T => [[Some(r), None], [Some(r + 1), None]],
        }
    }
}

impl fmt::Display for PieceCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown piece code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a piece code (SM, SE, AM, AL, AR or T)")]
pub struct PieceCodeParseError(pub String);

impl FromStr for PieceCode {
    type Err = PieceCodeParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        PieceCode::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| PieceCodeParseError(t.to_string()))
    }
}

/// The three spaces a piece covers: `[PÜNCT, minor, minor]` in the order of the
/// docs/rules/punct.md §2 table.
pub type Footprint = [Space; 3];

/// One on-board placement of a shape, precomputed.
#[derive(Debug, Clone, Copy)]
pub struct ShapeAt {
    /// The PÜNCT space.
    pub punct: Space,
    /// The (canonical) rotation.
    pub rotation: u8,
    /// The covered spaces, PÜNCT first.
    pub spaces: Footprint,
    /// Whether any covered space is in the centre hexagon.
    pub touches_centre: bool,
}

struct ShapeTables {
    /// `[code][space][rotation]`: the footprint, if all three dots are on the board.
    footprints: Vec<[[Option<Footprint>; 6]; SPACE_COUNT]>,
    /// Per code, every on-board footprint with a canonical rotation.
    placements: Vec<Vec<ShapeAt>>,
}

static SHAPES: LazyLock<ShapeTables> = LazyLock::new(|| {
    let mut footprints = Vec::with_capacity(6);
    let mut placements = Vec::with_capacity(6);
    for code in PieceCode::ALL {
        let mut table = [[None; 6]; SPACE_COUNT];
        let mut list = Vec::new();
        for p in Space::all() {
            for (r, slot) in table[p.index()].iter_mut().enumerate() {
                let fp = compute_footprint(code, p, r);
                *slot = fp;
                if let Some(spaces) = fp
                    && (r as u8) < code.distinct_rotations()
                {
                    list.push(ShapeAt {
                        punct: p,
                        rotation: r as u8,
                        spaces,
                        touches_centre: spaces.iter().any(|s| s.is_centre()),
                    });
                }
            }
        }
        footprints.push(table);
        placements.push(list);
    }
    ShapeTables {
        footprints,
        placements,
    }
});

fn compute_footprint(code: PieceCode, p: Space, r: usize) -> Option<Footprint> {
    let [a, b] = code.paths(r);
    let walk = |path: [Option<usize>; 2]| -> Option<Space> {
        path.iter().flatten().try_fold(p, |at, &d| at.neighbour(d))
    };
    Some([p, walk(a)?, walk(b)?])
}

/// The spaces covered by a `code` piece with its PÜNCT on `punct` in rotation
/// `rotation` (0..6), or `None` if a dot would be off the board.
#[inline]
pub fn footprint(code: PieceCode, punct: Space, rotation: u8) -> Option<Footprint> {
    SHAPES.footprints[code.index()][punct.index()][(rotation % 6) as usize]
}

/// Every on-board placement of `code` (canonical rotations only), in canonical
/// order of PÜNCT space then rotation.
#[inline]
pub fn shapes(code: PieceCode) -> &'static [ShapeAt] {
    &SHAPES.placements[code.index()]
}

/// The rotation of `code` around `punct` whose minor dots are exactly `minors`
/// (in either order), in canonical form.
pub fn rotation_for(code: PieceCode, punct: Space, minors: [Space; 2]) -> Option<u8> {
    (0..code.distinct_rotations()).find(|&r| {
        footprint(code, punct, r).is_some_and(|[_, a, b]| {
            (a == minors[0] && b == minors[1]) || (a == minors[1] && b == minors[0])
        })
    })
}

/// The two minor spaces of a footprint in canonical (ascending) order, as the
/// notation writes them (docs/rules/punct.md §7).
#[inline]
pub fn sorted_minors(fp: Footprint) -> [Space; 2] {
    if fp[1] < fp[2] {
        [fp[1], fp[2]]
    } else {
        [fp[2], fp[1]]
    }
}

/// The set of spaces of a footprint.
#[inline]
pub fn footprint_set(fp: Footprint) -> SpaceSet {
    SpaceSet::EMPTY.with(fp[0]).with(fp[1]).with(fp[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(s: &str) -> Space {
        s.parse().unwrap()
    }

    fn names(fp: Footprint) -> String {
        fp.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn eighteen_pieces_per_player() {
        assert_eq!(
            PieceCode::ALL.iter().map(|c| c.count() as u32).sum::<u32>(),
            18
        );
    }

    #[test]
    fn shapes_follow_the_rules_table_at_rotation_zero() {
        let p = sp("I9");
        // D0 = (+1,0) -> J9, D1 = (+1,+1) -> J10, D3 -> H9, D2 -> I10, D5 -> I8.
        assert_eq!(names(footprint(PieceCode::SM, p, 0).unwrap()), "I9 J9 H9");
        assert_eq!(names(footprint(PieceCode::SE, p, 0).unwrap()), "I9 J9 K9");
        assert_eq!(names(footprint(PieceCode::AM, p, 0).unwrap()), "I9 J9 I10");
        // AL: P, P+D0, P+D0+D5 = J8; AR: P+D0+D1 = K10.
        assert_eq!(names(footprint(PieceCode::AL, p, 0).unwrap()), "I9 J9 J8");
        assert_eq!(names(footprint(PieceCode::AR, p, 0).unwrap()), "I9 J9 K10");
        assert_eq!(names(footprint(PieceCode::T, p, 0).unwrap()), "I9 J9 J10");
    }

    #[test]
    fn sm_has_three_distinct_rotations_others_six() {
        let p = sp("I9");
        for code in PieceCode::ALL {
            let mut sets: Vec<SpaceSet> = (0..6)
                .map(|r| footprint_set(footprint(code, p, r).unwrap()))
                .collect();
            sets.sort_by_key(|s| format!("{s:?}"));
            sets.dedup();
            assert_eq!(sets.len(), code.distinct_rotations() as usize, "{code}");
        }
        let a = footprint(PieceCode::SM, p, 1).unwrap();
        let b = footprint(PieceCode::SM, p, 4).unwrap();
        assert_eq!(footprint_set(a), footprint_set(b));
    }

    #[test]
    fn al_and_ar_are_mirror_images_not_rotations() {
        let p = sp("I9");
        let al: Vec<SpaceSet> = (0..6)
            .map(|r| footprint_set(footprint(PieceCode::AL, p, r).unwrap()))
            .collect();
        for r in 0..6 {
            let ar = footprint_set(footprint(PieceCode::AR, p, r).unwrap());
            assert!(!al.contains(&ar), "AR rotation {r} equals an AL rotation");
        }
        // The same three spaces read from the other end are the other chirality:
        // AL at I9 r0 covers I9 J9 J8; AR with PÜNCT J8 going to J9 (D2) then I9 (D3).
        let fp = footprint(PieceCode::AR, sp("J8"), 2).unwrap();
        assert_eq!(names(fp), "J8 J9 I9");
    }

    #[test]
    fn rotations_off_the_edge_are_absent() {
        assert!(footprint(PieceCode::SE, sp("A2"), 3).is_none());
        assert!(footprint(PieceCode::SE, sp("A2"), 0).is_some());
        assert_eq!(
            rotation_for(PieceCode::SM, sp("I9"), [sp("J9"), sp("H9")]),
            Some(0)
        );
        assert_eq!(
            rotation_for(PieceCode::SM, sp("I9"), [sp("H9"), sp("J9")]),
            Some(0)
        );
        assert_eq!(
            rotation_for(PieceCode::SE, sp("I9"), [sp("J9"), sp("H9")]),
            None
        );
    }
}
