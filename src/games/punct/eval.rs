//! A static evaluation of PÜNCT positions for bots: the connection distance
//! (how many empty spaces a colour still has to cover to join a pair of
//! opposite sides), and a one-ply ranking of the legal moves by it.
//!
//! Pure like the rest of the engine. The distance is a 0-1 shortest path
//! (docs/rules/punct.md §5: a connection is a chain of top dots seen from above): a space
//! showing the colour's own top dot costs 0, an empty space costs 1 (a dot
//! would have to be put there), a space topped by the opponent is blocked.
//! The distance of a colour is the minimum over the three side pairs. It
//! ignores that pieces cover three spaces and that tops can be covered, which
//! is what makes it cheap: a search over bitsets, layer by layer, a few
//! microseconds a call.

use std::sync::LazyLock;

use super::board::{SPACE_COUNT, SidePair, Space, SpaceSet};
use super::piece::Colour;
use super::position::Position;
use super::{Move, Variant};

/// The distance reported when a colour cannot connect at all (every path is
/// blocked). Larger than any real distance (a side-to-side path crosses at
/// most 17 spaces).
pub const UNREACHABLE: u8 = 64;

/// The score of a move that wins on the spot; the negation is a move that
/// loses on the spot (it completes the opponent's chain).
pub const WIN: i32 = 10_000;

/// The neighbours of every space as a set.
static NEIGHBOURS: LazyLock<[SpaceSet; SPACE_COUNT]> = LazyLock::new(|| {
    let mut table = [SpaceSet::EMPTY; SPACE_COUNT];
    for s in Space::all() {
        for d in 0..6 {
            if let Some(n) = s.neighbour(d) {
                table[s.index()].insert(n);
            }
        }
    }
    table
});

/// Every space of the board.
static BOARD: LazyLock<SpaceSet> = LazyLock::new(|| Space::all().collect());

fn dilate(set: SpaceSet) -> SpaceSet {
    let table = &*NEIGHBOURS;
    let mut out = SpaceSet::EMPTY;
    for s in set.iter() {
        out = out.or(table[s.index()]);
    }
    out
}

/// `seed` grown through `own` spaces that are not yet `reached`.
fn flood(mut seed: SpaceSet, own: SpaceSet, reached: SpaceSet) -> SpaceSet {
    loop {
        let grown = dilate(seed).and(own).minus(reached).minus(seed);
        if grown.is_empty() {
            return seed;
        }
        seed = seed.or(grown);
    }
}

/// The fewest empty spaces `own` needs to join the two sides of `pair`,
/// never crossing `blocked`; [`UNREACHABLE`] when no path exists.
pub fn pair_distance(own: SpaceSet, blocked: SpaceSet, pair: SidePair) -> u8 {
    let (from, to) = pair.sides();
    let passable = BOARD.minus(blocked);
    let mut reached = SpaceSet::EMPTY;
    // Layer d: every space reachable with exactly d empty spaces covered.
    let mut layer = flood(from.and(own), own, reached);
    let mut d = 0u8;
    loop {
        reached = reached.or(layer);
        if layer.intersects(to) {
            return d;
        }
        let mut next = dilate(layer);
        if d == 0 {
            next = next.or(from);
        }
        let next = next.and(passable).minus(reached).minus(own);
        if next.is_empty() {
            return UNREACHABLE;
        }
        layer = flood(next, own, reached.or(next));
        d += 1;
    }
}

/// How many empty spaces `colour` still has to cover to connect (0 once it
/// is connected), the best of the three side pairs.
pub fn connection_distance(pos: &Position, colour: Colour) -> u8 {
    let own = pos.tops_of(colour);
    let blocked = pos.tops_of(colour.opponent());
    SidePair::ALL
        .iter()
        .map(|&pair| pair_distance(own, blocked, pair))
        .min()
        .unwrap_or(UNREACHABLE)
}

/// The position seen by `colour`: the opponent's distance minus its own
/// (higher is better), or ±[`WIN`] when a chain is already complete. Both
/// chains complete counts for the mover of the last turn, as the rules judge
/// (docs/rules/punct.md §5.2), so the caller says who just moved.
pub fn evaluate(pos: &Position, colour: Colour, just_moved: Colour) -> i32 {
    let mine = connection_distance(pos, colour);
    let theirs = connection_distance(pos, colour.opponent());
    match (mine, theirs) {
        (0, 0) if just_moved == colour => WIN,
        (0, 0) => -WIN,
        (0, _) => WIN,
        (_, 0) => -WIN,
        _ => i32::from(theirs) - i32::from(mine),
    }
}

/// Every legal move of the player to move with its one-ply score (the
/// [`evaluate`] of the position after it, for the mover), in generation
/// order. Every `stride`-th move is scored (1 = all); a tie-break and the
/// choice among equals are the caller's.
pub fn rank_moves(pos: &Position, variant: Variant, stride: usize) -> Vec<(Move, i32)> {
    let me = pos.to_move();
    let mut moves = Vec::new();
    pos.legal_moves_into(variant, &mut moves);
    let stride = stride.max(1);
    moves
        .into_iter()
        .step_by(stride)
        .filter_map(|mv| {
            let landing = pos.check(variant, mv).ok()?;
            let mut child = *pos;
            child.apply_landing(mv, landing);
            Some((mv, evaluate(&child, me, me)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::punct::{Engine, PieceCode, RuleOptions};

    fn sp(s: &str) -> Space {
        s.parse().unwrap()
    }

    #[test]
    fn empty_board_needs_a_full_side_to_side_line() {
        let pos = Position::start();
        // A step changes x, y and y - x by at most 1 each, and every pair of
        // opposite sides is 16 apart in one of them: 17 spaces to cover.
        assert_eq!(connection_distance(&pos, Colour::White), 17);
        assert_eq!(connection_distance(&pos, Colour::Black), 17);
    }

    #[test]
    fn own_dots_shorten_and_opponent_dots_block() {
        let own: SpaceSet = ["B1", "B2", "B3"].iter().map(|s| sp(s)).collect();
        let none = SpaceSet::EMPTY;
        let base = pair_distance(none, none, SidePair::Rows);
        assert_eq!(pair_distance(own, none, SidePair::Rows), base - 3);
        // A wall of opponent dots across the board cuts every row path.
        let wall: SpaceSet = Space::all().filter(|s| s.y() == 9).collect();
        assert_eq!(pair_distance(none, wall, SidePair::Rows), UNREACHABLE);
        // A5 up the diagonal to L16, then along row 16 to Q16: a connection.
        let chain: SpaceSet = (0..=11)
            .map(|i| (i, 5 + i))
            .chain((12..=16).map(|x| (x, 16)))
            .map(|(x, y)| Space::from_coords(x, y).unwrap())
            .collect();
        assert_eq!(pair_distance(chain, none, SidePair::Columns), 0);
        // Rows: B1..B5 below B6, and one of row 17 above row 16.
        assert_eq!(pair_distance(chain, none, SidePair::Rows), 6);
    }

    #[test]
    fn one_placement_lowers_the_movers_distance_by_three() {
        let mut game = Engine::new(RuleOptions::default());
        game.play(Move::Place {
            code: PieceCode::SE,
            punct: sp("E5"),
            rotation: 0,
        })
        .unwrap();
        assert_eq!(connection_distance(game.position(), Colour::White), 14);
        assert_eq!(connection_distance(game.position(), Colour::Black), 17);
        assert_eq!(evaluate(game.position(), Colour::White, Colour::White), 3);
    }

    #[test]
    fn ranking_scores_every_legal_move_or_a_sample() {
        let pos = Position::start();
        let all = rank_moves(&pos, Variant::Standard, 1);
        assert_eq!(all.len(), pos.legal_moves(Variant::Standard).len());
        // One piece covers three spaces: it gains 3 at best.
        assert_eq!(all.iter().map(|(_, s)| *s).max(), Some(3));
        let sample = rank_moves(&pos, Variant::Standard, 4);
        assert_eq!(sample.len(), all.len().div_ceil(4));
    }
}
