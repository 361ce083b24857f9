//! How a game ends (docs/rules/punct.md §5 and §6): connections seen from above, the
//! centre count, and the outcome with its reason.

use std::fmt;
use std::str::FromStr;

use super::board::{CENTRE, SidePair, SpaceSet};
use super::piece::Colour;
use super::position::Position;

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// A chain of top dots joins two opposite sides (docs/rules/punct.md §5.1-2).
    Connection,
    /// The supply phase ended in the basic game: a draw (docs/rules/punct.md §5.3).
    LastPiece,
    /// The supply phase ended in the standard game: the centre count decides (docs/rules/punct.md §5.3).
    CenterCount,
    /// The player to move had no legal turn: a draw (docs/rules/punct.md §6).
    NoLegalMove,
    /// The same position occurred `repetition_limit` times: a draw (docs/rules/punct.md §6).
    Repetition,
    /// `max_plies` turns were played: a draw (docs/rules/punct.md §6).
    MoveLimit,
    /// A player resigned (referee action).
    Resignation,
    /// The players agreed a draw (referee action).
    DrawAgreement,
    /// A player ran out of time (referee action).
    Timeout,
    /// A player left the game (referee action).
    Abandoned,
    /// The game was called off before it really started (referee action).
    Aborted,
}

impl EndReason {
    /// Every reason, board rules first.
    pub const ALL: [EndReason; 11] = [
        EndReason::Connection,
        EndReason::LastPiece,
        EndReason::CenterCount,
        EndReason::NoLegalMove,
        EndReason::Repetition,
        EndReason::MoveLimit,
        EndReason::Resignation,
        EndReason::DrawAgreement,
        EndReason::Timeout,
        EndReason::Abandoned,
        EndReason::Aborted,
    ];

    /// Stable upper-case name used in records, on the wire and in metrics.
    pub const fn name(self) -> &'static str {
        match self {
            EndReason::Connection => "CONNECTION",
            EndReason::LastPiece => "LAST_PIECE",
            EndReason::CenterCount => "CENTER_COUNT",
            EndReason::NoLegalMove => "NO_LEGAL_MOVE",
            EndReason::Repetition => "REPETITION",
            EndReason::MoveLimit => "MOVE_LIMIT",
            EndReason::Resignation => "RESIGNATION",
            EndReason::DrawAgreement => "DRAW_AGREEMENT",
            EndReason::Timeout => "TIMEOUT",
            EndReason::Abandoned => "ABANDONED",
            EndReason::Aborted => "ABORTED",
        }
    }

    /// Whether the board rules decide this ending (as opposed to a referee action).
    pub const fn is_board_rule(self) -> bool {
        matches!(
            self,
            EndReason::Connection
                | EndReason::LastPiece
                | EndReason::CenterCount
                | EndReason::NoLegalMove
                | EndReason::Repetition
                | EndReason::MoveLimit
        )
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EndReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        EndReason::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("`{t}` is not an end reason"))
    }
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The winner, or `None` for a draw.
    pub winner: Option<Colour>,
    /// Why the game ended.
    pub reason: EndReason,
    /// For [`EndReason::Connection`]: which pair of sides the chain joins.
    pub sides: Option<SidePair>,
    /// For [`EndReason::CenterCount`]: centre spaces topped by White and Black.
    pub centre_count: Option<[u8; 2]>,
}

impl Outcome {
    /// An ending decided outside the board rules (resignation, timeout, …).
    pub fn referee(winner: Option<Colour>, reason: EndReason) -> Outcome {
        Outcome {
            winner,
            reason,
            sides: None,
            centre_count: None,
        }
    }

    /// A draw for `reason`.
    pub fn draw(reason: EndReason) -> Outcome {
        Outcome::referee(None, reason)
    }
}

impl fmt::Display for Outcome {
    /// `white CONNECTION`, `draw LAST_PIECE`, as in a game record's `result:` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.winner {
            Some(c) => write!(f, "{c} {}", self.reason),
            None => write!(f, "draw {}", self.reason),
        }
    }
}

/// A winning chain: the spaces of the connected group and the sides it joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    /// The pair of sides joined.
    pub sides: SidePair,
    /// Every space of the connected group of top dots (a superset of one path).
    pub chain: SpaceSet,
}

/// The connection among the spaces of `mask` (one colour's top dots), if a
/// group of them touches both sides of a pair: the first such group in
/// canonical order of its lowest space, and its first pair in
/// [`SidePair::ALL`] order.
fn connection_in(mask: SpaceSet) -> Option<Connection> {
    // Quick reject: a connection needs a top dot on both sides of some pair.
    let possible = SidePair::ALL.iter().any(|p| {
        let (a, b) = p.sides();
        mask.intersects(a) && mask.intersects(b)
    });
    if !possible {
        return None;
    }
    // Flood one group at a time, a set at a time (the lowest remaining
    // top dot first): the first group that touches both sides of a pair,
    // in `SidePair::ALL` order, is the connection.
    let mut rest = mask;
    while let Some(start) = rest.first() {
        let mut group = SpaceSet::EMPTY.with(start);
        let mut frontier = group;
        loop {
            let mut reached = SpaceSet::EMPTY;
            for s in frontier.iter() {
                reached = reached.or(s.neighbourhood());
            }
            let new = reached.and(mask).minus(group);
            if new.is_empty() {
                break;
            }
            group = group.or(new);
            frontier = new;
        }
        rest = rest.minus(group);
        for pair in SidePair::ALL {
            let (a, b) = pair.sides();
            if group.intersects(a) && group.intersects(b) {
                return Some(Connection {
                    sides: pair,
                    chain: group,
                });
            }
        }
    }
    None
}

impl Position {
    /// `colour`'s connection, if its top dots join a pair of opposite sides
    /// (docs/rules/punct.md §5; levels do not matter, PÜNCT and minor dots alike).
    pub fn connection(&self, colour: Colour) -> Option<Connection> {
        connection_in(self.tops_of(colour))
    }

    /// Centre spaces whose top dot is White's and Black's (docs/rules/punct.md §5.3).
    pub fn centre_count(&self) -> [u8; 2] {
        [
            self.tops_of(Colour::White).and(CENTRE).len() as u8,
            self.tops_of(Colour::Black).and(CENTRE).len() as u8,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::punct::board::{SIDES, SPACE_COUNT, Space};
    use rand::rngs::StdRng;
    use rand::{RngExt as _, SeedableRng};

    /// The connection found one space at a time: a depth-first flood from
    /// each unseen space in canonical order, noting the sides each group
    /// touches.
    fn connection_by_spaces(mask: SpaceSet) -> Option<Connection> {
        let mut seen = SpaceSet::EMPTY;
        for start in mask.iter() {
            if seen.contains(start) {
                continue;
            }
            let mut group = SpaceSet::EMPTY;
            let mut touches = 0u8;
            let mut stack = vec![start];
            seen.insert(start);
            while let Some(s) = stack.pop() {
                group.insert(s);
                for (i, side) in SIDES.iter().enumerate() {
                    if side.contains(s) {
                        touches |= 1 << i;
                    }
                }
                for d in 0..6 {
                    if let Some(n) = s.neighbour(d)
                        && mask.contains(n)
                        && !seen.contains(n)
                    {
                        seen.insert(n);
                        stack.push(n);
                    }
                }
            }
            for (k, pair) in SidePair::ALL.iter().enumerate() {
                if touches >> (2 * k) & 0b11 == 0b11 {
                    return Some(Connection {
                        sides: *pair,
                        chain: group,
                    });
                }
            }
        }
        None
    }

    #[test]
    fn neighbourhoods_are_the_neighbours() {
        for s in Space::all() {
            let by_direction: SpaceSet = (0..6).filter_map(|d| s.neighbour(d)).collect();
            assert_eq!(s.neighbourhood(), by_direction, "{s}");
        }
    }

    #[test]
    fn the_set_flood_finds_what_the_space_flood_finds() {
        // Random sets of every density, from sparse to nearly full: the
        // dense ones connect, often by several pairs and groups at once.
        let mut rng = StdRng::seed_from_u64(7);
        let mut connected = 0;
        for round in 0..4000 {
            let density = (round % 20) as f64 / 20.0;
            let mask: SpaceSet = Space::all().filter(|_| rng.random_bool(density)).collect();
            let expected = connection_by_spaces(mask);
            connected += usize::from(expected.is_some());
            assert_eq!(connection_in(mask), expected, "mask {mask:?}");
        }
        assert!(connected > 500 && connected < 3500, "{connected} connected");
        assert_eq!(connection_in(SpaceSet::EMPTY), None);
        let all: SpaceSet = Space::all().collect();
        assert_eq!(all.len() as usize, SPACE_COUNT);
        assert_eq!(connection_in(all).map(|c| c.sides), Some(SidePair::Columns));
    }
}
