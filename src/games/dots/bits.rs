//! Row bitsets over the Dots field and the flood fills of the engine.
//!
//! A field has at most 64 × 64 cells (docs/rules/dots.md §3, §10), so a [`Bits`] is one
//! `u64` per row, bit `x` for the 0-based column `x`: 512 bytes on the stack,
//! copied, never allocated. `flood` grows a set of cells through a mask of
//! passable cells a whole row at a time (runs are filled with a Kogge–Stone
//! fill, rows with alternating downward and upward sweeps); it is what finds
//! regions (§6.1), enclosed areas (§6.2), dissolved markers (§6.5) and
//! grounded groups (§7.2).

use std::fmt;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign};

/// The most columns or rows a field may have (docs/rules/dots.md §3).
pub const MAX_SIDE: usize = 64;

/// A set of cells: bit `x` of word `y` is the 0-based cell `(x, y)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bits(pub(crate) [u64; MAX_SIDE]);

impl Default for Bits {
    fn default() -> Self {
        Bits::EMPTY
    }
}

impl fmt::Debug for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(|(x, y)| (x + 1, y + 1)))
            .finish()
    }
}

/// The bits of a row of `width` cells.
pub(crate) const fn row_mask(width: usize) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl Bits {
    /// No cell.
    pub const EMPTY: Bits = Bits([0; MAX_SIDE]);

    /// Every cell of a `width` × `height` field.
    pub fn field(width: usize, height: usize) -> Bits {
        let mut bits = Bits::EMPTY;
        for row in bits.0.iter_mut().take(height.min(MAX_SIDE)) {
            *row = row_mask(width);
        }
        bits
    }

    /// The edge cells of a `width` × `height` field (docs/rules/dots.md §2.2).
    pub fn edge(width: usize, height: usize) -> Bits {
        let mut bits = Bits::EMPTY;
        let full = row_mask(width);
        let sides = 1 | (1u64 << (width.clamp(1, 64) - 1));
        for (y, row) in bits.0.iter_mut().take(height.min(MAX_SIDE)).enumerate() {
            *row = if y == 0 || y + 1 == height {
                full
            } else {
                sides
            };
        }
        bits
    }

    /// Whether the 0-based cell `(x, y)` is in the set (false off the words).
    #[inline]
    pub fn contains(&self, x: usize, y: usize) -> bool {
        x < 64 && y < MAX_SIDE && self.0[y] >> x & 1 == 1
    }

    /// Adds the 0-based cell `(x, y)` (ignored off the words).
    #[inline]
    pub fn insert(&mut self, x: usize, y: usize) {
        if x < 64 && y < MAX_SIDE {
            self.0[y] |= 1 << x;
        }
    }

    /// Removes the 0-based cell `(x, y)`.
    #[inline]
    pub fn remove(&mut self, x: usize, y: usize) {
        if x < 64 && y < MAX_SIDE {
            self.0[y] &= !(1 << x);
        }
    }

    /// The bits of row `y` (0-based).
    #[inline]
    pub fn row(&self, y: usize) -> u64 {
        self.0.get(y).copied().unwrap_or(0)
    }

    /// How many cells the set holds.
    pub fn len(&self) -> u32 {
        self.0.iter().map(|r| r.count_ones()).sum()
    }

    /// Whether the set holds no cell.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&r| r == 0)
    }

    /// The cells of `self` that are not in `other`.
    #[inline]
    pub fn and_not(&self, other: &Bits) -> Bits {
        let mut out = *self;
        for (o, r) in out.0.iter_mut().zip(other.0.iter()) {
            *o &= !r;
        }
        out
    }

    /// Whether the two sets share a cell.
    pub fn intersects(&self, other: &Bits) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    /// The cells, 0-based `(x, y)`, row by row from the top, left to right.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.0.iter().enumerate().flat_map(|(y, &row)| {
            let mut rest = row;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let x = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some((x, y))
            })
        })
    }

    /// The first cell in reading order (top row first), if any.
    pub fn first(&self) -> Option<(usize, usize)> {
        self.0
            .iter()
            .enumerate()
            .find(|(_, r)| **r != 0)
            .map(|(y, r)| (r.trailing_zeros() as usize, y))
    }

    /// The cells orthogonally next to a cell of the set, and the set itself,
    /// within `field`.
    pub fn grown(&self, field: &Bits) -> Bits {
        let mut out = Bits::EMPTY;
        for y in 0..MAX_SIDE {
            let r = self.0[y];
            let above = if y > 0 { self.0[y - 1] } else { 0 };
            let below = if y + 1 < MAX_SIDE { self.0[y + 1] } else { 0 };
            out.0[y] = (r | r << 1 | r >> 1 | above | below) & field.0[y];
        }
        out
    }
}

impl BitAnd for Bits {
    type Output = Bits;
    #[inline]
    fn bitand(mut self, rhs: Bits) -> Bits {
        self &= rhs;
        self
    }
}

impl BitAndAssign for Bits {
    #[inline]
    fn bitand_assign(&mut self, rhs: Bits) {
        for (a, b) in self.0.iter_mut().zip(rhs.0.iter()) {
            *a &= b;
        }
    }
}

impl BitOr for Bits {
    type Output = Bits;
    #[inline]
    fn bitor(mut self, rhs: Bits) -> Bits {
        self |= rhs;
        self
    }
}

impl BitOrAssign for Bits {
    #[inline]
    fn bitor_assign(&mut self, rhs: Bits) {
        for (a, b) in self.0.iter_mut().zip(rhs.0.iter()) {
            *a |= b;
        }
    }
}

/// The runs of `pass` that hold a bit of `seed` (`seed` ⊆ `pass`): every
/// cell reachable from the seed by horizontal steps through `pass`.
#[inline]
fn fill_runs(seed: u64, pass: u64) -> u64 {
    // Towards higher bits, one addition: the lowest seed bit of a run
    // carries through the rest of the run and out of it, onto a cell that
    // is not in `pass` (or past bit 63), where the carry stops. The bits the
    // sum changed, with the seeds themselves, are each seeded run from its
    // lowest seed up.
    let up = ((pass.wrapping_add(seed) ^ pass) | seed) & pass;
    // Towards lower bits a carry cannot run: a Kogge–Stone occluded fill,
    // which stops once no run of `pass` is long enough for the next step
    // (runs are short on a busy field).
    let (mut down, mut pd) = (seed, pass);
    for shift in [1, 2, 4, 8, 16, 32] {
        down |= pd & (down >> shift);
        pd &= pd >> shift;
        if pd == 0 {
            break;
        }
    }
    up | down
}

/// Grows `region` through `pass` by orthogonal steps, rows `0..height`, to
/// every cell it reaches. With `stop`, gives up as soon as the region meets
/// a cell of `stop` and returns `true` (the region is then partial);
/// otherwise returns `false` with the region complete. The region's seed
/// cells must lie in `pass`.
pub(crate) fn flood(region: &mut Bits, pass: &Bits, height: usize, stop: Option<&Bits>) -> bool {
    let h = height.min(MAX_SIDE);
    let Some(lo) = (0..h).find(|&y| region.0[y] != 0) else {
        return false;
    };
    let hi = (0..h).rev().find(|&y| region.0[y] != 0).unwrap_or(lo);
    if let Some(stop) = stop
        && region.intersects(stop)
    {
        return true;
    }
    flood_rows(region, |y| pass.0[y], lo, hi, h, stop)
}

/// [`flood`] for a region whose cells lie in rows `lo..=hi` (`hi < height`
/// ≤ [`MAX_SIDE`]) and miss `stop`, with the passable cells of row `y` given
/// by `pass(y)`: a caller that knows where its seed is skips the scans for
/// it, and one whose mask is a combination of sets computes only the rows
/// the flood visits.
#[inline]
pub(crate) fn flood_rows(
    region: &mut Bits,
    pass: impl Fn(usize) -> u64,
    mut lo: usize,
    mut hi: usize,
    height: usize,
    stop: Option<&Bits>,
) -> bool {
    let h = height.min(MAX_SIDE);
    loop {
        let mut changed = false;
        // Downward sweep: each row takes from the row above as just updated.
        let mut above = if lo > 0 { region.0[lo - 1] } else { 0 };
        for y in lo..h {
            let below = if y + 1 < h { region.0[y + 1] } else { 0 };
            let cur = region.0[y];
            let p = pass(y);
            let grown = fill_runs((cur | above | below) & p, p);
            if grown != cur {
                region.0[y] = grown;
                changed = true;
                if stop.is_some_and(|s| grown & s.0[y] != 0) {
                    return true;
                }
                hi = hi.max(y);
            }
            above = grown;
            if grown == 0 && y >= hi {
                break;
            }
        }
        // Upward sweep.
        let mut below = if hi + 1 < h { region.0[hi + 1] } else { 0 };
        for y in (0..=hi).rev() {
            let above = if y > 0 { region.0[y - 1] } else { 0 };
            let cur = region.0[y];
            let p = pass(y);
            let grown = fill_runs((cur | above | below) & p, p);
            if grown != cur {
                region.0[y] = grown;
                changed = true;
                if stop.is_some_and(|s| grown & s.0[y] != 0) {
                    return true;
                }
            }
            if grown != 0 {
                lo = lo.min(y);
            }
            below = grown;
            if grown == 0 && y <= lo {
                break;
            }
        }
        if !changed {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_fill_both_ways_and_stop_at_gaps() {
        assert_eq!(fill_runs(0b0000_0100, 0b0011_1110), 0b0011_1110);
        assert_eq!(fill_runs(0b0000_0100, 0b0110_1110), 0b0000_1110);
        assert_eq!(fill_runs(1 << 63, u64::MAX), u64::MAX);
        assert_eq!(fill_runs(0, u64::MAX), 0);
        // Two seeds in one run, runs without seeds, a run at the top bit.
        let pass = 0b1111_0111_1011_1110 | 0b111 << 61;
        let seed = 0b0101_0000_0000_0100 | 1 << 62;
        assert_eq!(fill_runs(seed, pass), 0b1111_0000_0011_1110 | 0b111 << 61);
        for (seed, pass) in [(1u64 << 5, u64::MAX), (0b1001 << 20, 0b1111 << 20)] {
            assert_eq!(fill_runs(seed, pass), pass);
        }
    }

    #[test]
    fn a_flood_follows_a_serpentine_and_stops_at_the_edge() {
        // A 9x9 maze: passable cells form a serpentine from (1,1) to (7,7).
        let mut pass = Bits::EMPTY;
        for y in (1..8).step_by(2) {
            for x in 1..8 {
                pass.insert(x, y);
            }
        }
        for (i, y) in (2..8).step_by(2).enumerate() {
            pass.insert(if i % 2 == 0 { 7 } else { 1 }, y);
        }
        let mut region = Bits::EMPTY;
        region.insert(1, 1);
        assert!(!flood(&mut region, &pass, 9, None));
        assert_eq!(region, pass);
        let edge = Bits::edge(9, 9);
        pass.insert(8, 7);
        let mut region = Bits::EMPTY;
        region.insert(1, 1);
        assert!(flood(&mut region, &pass, 9, Some(&edge)));
    }

    #[test]
    fn edge_and_field_masks() {
        let edge = Bits::edge(4, 4);
        assert_eq!(edge.len(), 12);
        assert!(!edge.contains(1, 1) && edge.contains(3, 2));
        assert_eq!(Bits::field(64, 64).len(), 4096);
        assert_eq!(Bits::edge(64, 64).len(), 252);
    }
}
