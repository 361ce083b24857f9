//! How a game ends (RULES.md §5 and §6): connections seen from above, the
//! centre count, and the outcome with its reason.

use std::fmt;
use std::str::FromStr;

use super::board::{CENTRE, SIDES, SPACE_COUNT, SidePair, Space, SpaceSet};
use super::piece::Colour;
use super::position::Position;

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// A chain of top dots joins two opposite sides (RULES.md §5.1-2).
    Connection,
    /// The supply phase ended in the basic game: a draw (RULES.md §5.3).
    LastPiece,
    /// The supply phase ended in the standard game: the centre count decides (RULES.md §5.3).
    CenterCount,
    /// The player to move had no legal turn: a draw (RULES.md §6).
    NoLegalMove,
    /// The same position occurred `repetition_limit` times: a draw (RULES.md §6).
    Repetition,
    /// `max_plies` turns were played: a draw (RULES.md §6).
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

impl Position {
    /// `colour`'s connection, if its top dots join a pair of opposite sides
    /// (RULES.md §5; levels do not matter, PÜNCT and minor dots alike).
    pub fn connection(&self, colour: Colour) -> Option<Connection> {
        let mask = self.tops_of(colour);
        // Quick reject: a connection needs a top dot on both sides of some pair.
        let possible = SidePair::ALL.iter().any(|p| {
            let (a, b) = p.sides();
            mask.intersects(a) && mask.intersects(b)
        });
        if !possible {
            return None;
        }
        let mut seen = SpaceSet::EMPTY;
        let mut stack = [Space::CENTRE; SPACE_COUNT];
        for start in mask.iter() {
            if seen.contains(start) {
                continue;
            }
            // Flood one group, noting which of the six sides it touches.
            let mut group = SpaceSet::EMPTY;
            let mut touches = 0u8;
            let mut len = 1;
            stack[0] = start;
            seen.insert(start);
            while len > 0 {
                len -= 1;
                let s = stack[len];
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
                        stack[len] = n;
                        len += 1;
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

    /// Centre spaces whose top dot is White's and Black's (RULES.md §5.3).
    pub fn centre_count(&self) -> [u8; 2] {
        [
            self.tops_of(Colour::White).and(CENTRE).len() as u8,
            self.tops_of(Colour::Black).and(CENTRE).len() as u8,
        ]
    }
}
