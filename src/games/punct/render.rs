//! A text picture of a position for tests, logs and the command line: the hex
//! board seen from above, rows numbered on the left, column letters just past
//! the low end of each column.
//!
//! Each space shows its top dot: `W`/`B` for a PÜNCT, `w`/`b` for a minor dot,
//! followed by the stack height when it is above 1; `.` is an empty space and
//! `+` an empty space of the centre hexagon. Rows run horizontally, columns
//! run up and to the left (RULES.md §1 neighbours).

use super::board::Space;
use super::piece::{Colour, PieceCode};
use super::position::Position;

const MARGIN: usize = 3;

/// Half-step screen column of (x, y): `(x, y+1)` is up-left, `(x+1, y+1)` up-right.
fn screen(x: i8, y: i8) -> usize {
    (2 * x as i32 - y as i32 + 9) as usize * 2 + MARGIN
}

/// The token of one space (1 to 3 characters).
pub fn cell(pos: &Position, s: Space) -> String {
    let Some(id) = pos.top_piece(s) else {
        return if s.is_centre() { "+" } else { "." }.to_string();
    };
    let is_punct = pos.punct_on_top(s).is_some();
    let letter = match (id.colour(), is_punct) {
        (Colour::White, true) => 'W',
        (Colour::White, false) => 'w',
        (Colour::Black, true) => 'B',
        (Colour::Black, false) => 'b',
    };
    match pos.height(s) {
        0 | 1 => letter.to_string(),
        h => format!("{letter}{h}"),
    }
}

/// The board as text, followed by a line with the player to move, the ply
/// and both supplies.
pub fn ascii(pos: &Position) -> String {
    let width = screen(16, 0) + 6;
    let mut out = String::new();
    for y in (0..=17i8).rev() {
        let mut line = vec![b' '; width];
        if y >= 1 {
            let label = format!("{y:>2}");
            line[..2].copy_from_slice(label.as_bytes());
        }
        for s in Space::all().filter(|s| s.y() == y) {
            let tok = cell(pos, s);
            let at = screen(s.x(), y);
            line[at..at + tok.len()].copy_from_slice(tok.as_bytes());
        }
        // Column letters sit where each column would continue below the board.
        for x in 0..17i8 {
            let lowest = (1..=17).find(|&yy| Space::from_coords(x, yy).is_some());
            if lowest == Some(y + 1) {
                line[screen(x, y)] = b'A' + x as u8;
            }
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        out.push_str(&text);
        out.push('\n');
    }
    out.push_str(&format!(
        "{} to move, ply {}; supply white {} | black {}\n",
        match pos.to_move() {
            Colour::White => "White",
            Colour::Black => "Black",
        },
        pos.ply(),
        supply_text(pos, Colour::White),
        supply_text(pos, Colour::Black),
    ));
    out
}

fn supply_text(pos: &Position, colour: Colour) -> String {
    PieceCode::ALL
        .iter()
        .map(|&c| format!("{c}{}", pos.supply(colour, c)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_position_picture() {
        let text = ascii(&Position::start());
        let lines: Vec<&str> = text.lines().collect();
        // 17 rows, the label row, the status line.
        assert_eq!(lines.len(), 19);
        assert!(lines[0].starts_with("17"));
        // Row 9 holds the centre row G9 H9 I9 J9 K9 (+) among dots.
        let row9 = lines[8];
        assert!(row9.starts_with(" 9"));
        assert_eq!(row9.matches('+').count(), 5);
        assert_eq!(text.matches('+').count(), 19);
        assert_eq!(text.matches('.').count(), 211 - 19);
        assert!(lines[18].starts_with("White to move, ply 0; supply white SM2 SE4"));
    }

    #[test]
    fn shows_punct_minor_and_height() {
        let sp = |s: &str| s.parse::<Space>().unwrap();
        let pos = Position::from_pieces(
            &[
                (Colour::White, PieceCode::SE, sp("E5"), 0, 0),
                (Colour::Black, PieceCode::SE, sp("E5"), 0, 1),
            ],
            Colour::White,
            2,
        )
        .unwrap();
        assert_eq!(cell(&pos, sp("E5")), "B2");
        assert_eq!(cell(&pos, sp("F5")), "b2");
        assert_eq!(cell(&pos, sp("I9")), "+");
        assert_eq!(cell(&pos, sp("A2")), ".");
        let text = ascii(&pos);
        assert!(text.contains("B2  b2  b2"), "{text}");
    }
}
