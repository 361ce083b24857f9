//! Move notation (docs/rules/punto.md §4.4): a move names the cell the revealed card
//! goes to as `X,Y`. Reading trims spaces, tabs, CR and LF and then accepts
//! exactly `-?[0-9]+,-?[0-9]+`; numbers of any length read (saturating, so a
//! very long one is a cell far outside the area, never a failure); the
//! canonical text is [`Cell`]'s `Display` (no leading zeros, no `-0`).

use super::Refusal;
use super::table::Cell;

/// Longest text a refusal repeats back.
const ECHO: usize = 40;

/// The cell `text` names (docs/rules/punto.md §4.4), or `MALFORMED`.
pub fn parse_cell(text: &str) -> Result<Cell, Refusal> {
    let trimmed = text.trim_matches([' ', '\t', '\r', '\n']);
    let malformed = || Refusal::Malformed(trimmed.chars().take(ECHO).collect());
    let (x, y) = trimmed.split_once(',').ok_or_else(malformed)?;
    match (parse_number(x), parse_number(y)) {
        (Some(x), Some(y)) => Ok(Cell::new(x, y)),
        _ => Err(malformed()),
    }
}

/// `-?[0-9]+` as a number, saturated to the range of `i32` (so `-0` is 0
/// and `007` is 7); `None` for anything else.
fn parse_number(text: &str) -> Option<i32> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.bytes().fold(0i64, |n, b| {
        n.saturating_mul(10)
            .saturating_add(i64::from(b - b'0'))
            .min(i64::from(i32::MAX))
    });
    let value = if negative { -magnitude } else { magnitude };
    i32::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_grammar_of_section_4_4() {
        assert_eq!(parse_cell("0,0"), Ok(Cell::new(0, 0)));
        assert_eq!(parse_cell(" \t1,-1\r\n"), Ok(Cell::new(1, -1)));
        assert_eq!(parse_cell("007,-0"), Ok(Cell::new(7, 0)));
        assert_eq!(
            parse_cell(&format!("{},1", "9".repeat(400))),
            Ok(Cell::new(i32::MAX, 1))
        );
        for bad in [
            "", "0", "+1,0", "1, 0", "1 ,0", "a,b", "1,2,3", "--1,0", "-,0", "١,0",
        ] {
            assert_eq!(
                parse_cell(bad).map_err(|e| e.reason()),
                Err("MALFORMED"),
                "{bad}"
            );
        }
    }

    #[test]
    fn writes_the_canonical_text() {
        assert_eq!(Cell::new(-1, 0).to_string(), "-1,0");
        assert_eq!(
            parse_cell("-0,007").map(|c| c.to_string()),
            Ok("0,7".into())
        );
    }
}
