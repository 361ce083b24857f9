//! The closed chain of dots around an enclosed area, for clients that draw
//! enclosures (docs/rules/dots.md §6.2: the area is the inside of the tightest closed
//! chain of diagonally-or-orthogonally adjacent wall dots).
//!
//! [`outline`] traces the outer boundary of the area with Moore-neighbour
//! tracing: it starts at the area's first cell in reading order and walks
//! clockwise (on screen, rows going down), each step to one of the eight
//! neighbours. Every cell it visits has a neighbour outside the area, so
//! every point of the chain is a wall dot. A one-cell-wide spike is walked
//! out and back, so a point may appear twice; the last point connects back
//! to the first. Not on the hot path: it allocates the chain.

use super::{Bits, Point};

/// The eight neighbours in clockwise screen order, starting west.
const AROUND: [(isize, isize); 8] = [
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
];

fn direction_of(dx: isize, dy: isize) -> usize {
    AROUND.iter().position(|&d| d == (dx, dy)).unwrap_or(0)
}

/// The outer boundary of `area`, clockwise from its first cell in reading
/// order (empty for an empty area).
pub fn outline(area: &Bits) -> Vec<Point> {
    let Some(start) = area.first() else {
        return Vec::new();
    };
    let inside = |(x, y): (usize, usize), (dx, dy): (isize, isize)| {
        let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
        area.contains(nx, ny).then_some((nx, ny))
    };
    let mut chain = vec![Point::from_index(start.0, start.1)];
    let (mut current, mut back) = (start, 0usize); // west of the first cell is outside
    let mut second = None;
    let bound = 4 * area.len() as usize + 16;
    for _ in 0..bound {
        // Scan clockwise from the cell we came from; the first cell of the
        // area found is the next one, the cell before it the new backtrack.
        let found = (1..=8).find_map(|k| {
            let d = (back + k) % 8;
            inside(current, AROUND[d]).map(|next| (next, (back + k - 1) % 8))
        });
        let Some((next, before)) = found else {
            break; // a single cell
        };
        if current == start && second == Some(next) {
            break; // Jacob's criterion: the walk would repeat itself
        }
        if second.is_none() {
            second = Some(next);
        }
        // The backtrack cell, seen from `next`.
        let (bx, by) = AROUND[before];
        let (nx, ny) = (
            next.0 as isize - current.0 as isize,
            next.1 as isize - current.1 as isize,
        );
        back = direction_of(bx - nx, by - ny);
        current = next;
        chain.push(Point::from_index(next.0, next.1));
    }
    if chain.len() > 1 && chain.last() == chain.first() {
        chain.pop();
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(cells: &[(usize, usize)]) -> Bits {
        let mut bits = Bits::EMPTY;
        for &(x, y) in cells {
            bits.insert(x - 1, y - 1);
        }
        bits
    }

    #[test]
    fn a_diamond_is_its_four_wall_dots_clockwise() {
        let diamond = area(&[(3, 2), (2, 3), (3, 3), (4, 3), (3, 4)]);
        let chain = outline(&diamond);
        let expected = [(3, 2), (4, 3), (3, 4), (2, 3)].map(|(x, y)| Point::new(x, y));
        assert_eq!(chain, expected);
    }

    #[test]
    fn a_spike_is_walked_out_and_back() {
        // A diamond with a one-cell tail to the right: 5,3 hangs off 4,3.
        let shape = area(&[(3, 2), (2, 3), (3, 3), (4, 3), (3, 4), (5, 3)]);
        let chain = outline(&shape);
        let expected =
            [(3, 2), (4, 3), (5, 3), (4, 3), (3, 4), (2, 3)].map(|(x, y)| Point::new(x, y));
        assert_eq!(chain, expected);
    }

    #[test]
    fn a_block_is_its_border() {
        let mut cells = Vec::new();
        for y in 1..=3 {
            for x in 1..=3 {
                cells.push((x, y));
            }
        }
        let chain = outline(&area(&cells));
        assert_eq!(chain.len(), 8);
        assert!(!chain.contains(&Point::new(2, 2)));
    }
}
