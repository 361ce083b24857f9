//! Move notation (docs/rules/dots.md §8.1–8.2): a point `x,y` in decimal, 1-based,
//! `x` from the left and `y` from the top, and `ground`. The parser is
//! lenient about whitespace (before, after and around the comma), leading
//! zeros and the letter case of `ground`; the canonical form has none of
//! those. A well-formed point off the field is not a syntax error but an
//! illegal move ([`super::IllegalMove::OffField`]).

use std::fmt;
use std::str::FromStr;

use super::{Move, Point};

/// Why a text is not a move in notation (§8).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotationError {
    /// Nothing but whitespace.
    #[error("an empty move: write a point `x,y` or `ground` (docs/rules/dots.md §8)")]
    Empty,
    /// `pass`, which Dots does not have.
    #[error("there is no pass in Dots: place a dot or `ground` (docs/rules/dots.md §5.1)")]
    NoPass,
    /// Anything else that is not `x,y` or `ground`.
    #[error(
        "`{text}` is not a move: write a point `x,y` (two decimal numbers) or `ground` (docs/rules/dots.md §8.1)"
    )]
    Syntax {
        /// The text, cut to 40 characters.
        text: String,
    },
}

impl NotationError {
    /// The stable name of the error.
    pub const fn reason(&self) -> &'static str {
        match self {
            NotationError::Empty => "EMPTY_MOVE",
            NotationError::NoPass => "NO_PASS",
            NotationError::Syntax { .. } => "NOT_A_MOVE",
        }
    }
}

/// A decimal number of ASCII digits (leading zeros allowed), saturating at
/// `u16::MAX` (such a point is off every field anyway).
fn number(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u16, |n, b| {
        n.saturating_mul(10).saturating_add(u16::from(b - b'0'))
    }))
}

impl FromStr for Point {
    type Err = NotationError;

    /// `x,y` with optional whitespace around each number (§8.1).
    fn from_str(s: &str) -> Result<Point, NotationError> {
        let text = s.trim();
        if text.is_empty() {
            return Err(NotationError::Empty);
        }
        let syntax = || NotationError::Syntax {
            text: text.chars().take(40).collect(),
        };
        let (x, y) = text.split_once(',').ok_or_else(syntax)?;
        match (number(x.trim()), number(y.trim())) {
            (Some(x), Some(y)) => Ok(Point::new(x, y)),
            _ => Err(syntax()),
        }
    }
}

impl fmt::Display for Point {
    /// Canonical: `x,y`, no spaces, no leading zeros.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.x, self.y)
    }
}

impl FromStr for Move {
    type Err = NotationError;

    /// A point (§8.1) or `ground` in any letter case (§8.2).
    fn from_str(s: &str) -> Result<Move, NotationError> {
        let text = s.trim();
        if text.eq_ignore_ascii_case("ground") {
            return Ok(Move::Ground);
        }
        if text.eq_ignore_ascii_case("pass") {
            return Err(NotationError::NoPass);
        }
        text.parse().map(Move::Place)
    }
}

impl fmt::Display for Move {
    /// Canonical: `x,y` or `ground`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Move::Place(p) => p.fmt(f),
            Move::Ground => f.write_str("ground"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_reading_canonical_writing() {
        let m: Move = " 07 , 3 ".parse().unwrap();
        assert_eq!(m, Move::Place(Point::new(7, 3)));
        assert_eq!(m.to_string(), "7,3");
        assert_eq!("GrOuNd\t".parse::<Move>(), Ok(Move::Ground));
        assert_eq!(
            "0,99999".parse::<Move>(),
            Ok(Move::Place(Point::new(0, u16::MAX)))
        );
    }

    #[test]
    fn everything_else_is_a_syntax_error() {
        for bad in [
            "+1,2", "1;2", "1,2,3", "1", ",2", "1,", "1 2,3", "-1,2", "x,y", "１,2",
        ] {
            let e = bad.parse::<Move>().unwrap_err();
            assert_eq!(e.reason(), "NOT_A_MOVE", "{bad}");
        }
        assert_eq!("  ".parse::<Move>().unwrap_err().reason(), "EMPTY_MOVE");
        assert_eq!("Pass".parse::<Move>().unwrap_err().reason(), "NO_PASS");
    }
}
