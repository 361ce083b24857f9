//! A text picture of a position for tests, logs and the command line: the hex
//! board seen from above, rows numbered on the left, column letters just past
//! the low end of each column.
//!
//! Each space shows its top dot: `W`/`B` for a PÜNCT, `w`/`b` for a minor dot,
//! followed by the stack height when it is above 1; `.` is an empty space and
//! `+` an empty space of the centre hexagon. Rows run horizontally, columns
//! run up and to the left (docs/rules/punct.md §1 neighbours).

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

/// The empty board's picture, row by row from the top (row 17) down to the
/// letter row below row 1, and where each space's token starts in it.
struct Layout {
    rows: Vec<Vec<u8>>,
    /// Per space (in [`Space::all`] order): its row in `rows` and column.
    at: Vec<(Space, usize, usize)>,
}

fn layout() -> &'static Layout {
    static LAYOUT: std::sync::OnceLock<Layout> = std::sync::OnceLock::new();
    LAYOUT.get_or_init(|| {
        let width = screen(16, 0) + 6;
        let mut rows = Vec::new();
        let mut at = Vec::new();
        for y in (0..=17i8).rev() {
            let row = rows.len();
            let mut line = vec![b' '; width];
            if y >= 1 {
                line[..2].copy_from_slice(format!("{y:>2}").as_bytes());
            }
            for s in Space::all().filter(|s| s.y() == y) {
                let column = screen(s.x(), y);
                line[column] = if s.is_centre() { b'+' } else { b'.' };
                at.push((s, row, column));
            }
            // Column letters sit where each column would continue below the
            // board.
            for x in 0..17i8 {
                let lowest = (1..=17).find(|&yy| Space::from_coords(x, yy).is_some());
                if lowest == Some(y + 1) {
                    line[screen(x, y)] = b'A' + x as u8;
                }
            }
            rows.push(line);
        }
        Layout { rows, at }
    })
}

/// The board as text, followed by a line with the player to move, the ply
/// and both supplies.
///
/// The empty board is laid out once ([`layout`]); a picture writes the
/// occupied spaces' tokens into a copy of it (a finished game's and every
/// new game's snapshot carries one).
pub fn ascii(pos: &Position) -> String {
    let layout = layout();
    let mut rows = layout.rows.clone();
    for &(s, row, column) in &layout.at {
        if pos.top_piece(s).is_some() {
            let token = cell(pos, s);
            rows[row][column..column + token.len()].copy_from_slice(token.as_bytes());
        }
    }
    let mut out = String::with_capacity(rows.iter().map(|r| r.len() + 1).sum::<usize>() + 96);
    for row in &rows {
        let used = row.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        // Every byte of a row is ASCII: a space, a digit, a letter, `.` or `+`.
        out.push_str(std::str::from_utf8(&row[..used]).unwrap_or_default());
        out.push('\n');
    }
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "{} to move, ply {}; supply white {} | black {}",
        match pos.to_move() {
            Colour::White => "White",
            Colour::Black => "Black",
        },
        pos.ply(),
        supply_text(pos, Colour::White),
        supply_text(pos, Colour::Black),
    );
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
    use crate::games::punct::{Engine, RuleOptions};
    use rand::rngs::StdRng;
    use rand::{RngExt as _, SeedableRng};

    /// The picture as first written (a row at a time from the spaces): what
    /// [`ascii`] must keep drawing.
    fn ascii_reference(pos: &Position) -> String {
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

    #[test]
    fn the_laid_out_picture_is_the_picture_row_by_row() {
        // Random games to their end, both variants: every position drawn the
        // same way by both.
        let mut rng = StdRng::seed_from_u64(11);
        let mut positions = 0;
        for round in 0..40 {
            let options = if round % 2 == 0 {
                RuleOptions::default()
            } else {
                RuleOptions::of(crate::games::punct::Variant::Basic)
            };
            let mut game = Engine::new(options);
            loop {
                assert_eq!(ascii(game.position()), ascii_reference(game.position()));
                positions += 1;
                let moves = game.legal_moves();
                if game.is_over() || moves.is_empty() || game.position().ply() > 200 {
                    break;
                }
                game.play(moves[rng.random_range(0..moves.len())]).unwrap();
            }
        }
        assert!(positions > 1000, "{positions} positions");
    }

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
