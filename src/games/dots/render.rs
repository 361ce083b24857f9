//! ASCII pictures of a field: the position text of docs/rules/dots.md §8.3 (what
//! clients compare, one character a cell) and a labelled version for people
//! (column numbers, row numbers, scores and the player to move).

use std::fmt::Write as _;

use super::{Cell, Colour, Engine, Field, Outcome, Point};

/// The §8.3 character of a cell.
pub fn cell_char(cell: Cell) -> char {
    match (cell.dot, cell.holder, cell.marker) {
        (Some(Colour::Red), None, _) => 'R',
        (Some(Colour::Blue), None, _) => 'B',
        (Some(Colour::Red), Some(_), _) => 'r',
        (Some(Colour::Blue), Some(_), _) => 'b',
        (None, Some(Colour::Red), _) => '1',
        (None, Some(Colour::Blue), _) => '2',
        (None, None, Some(Colour::Red)) => '3',
        (None, None, Some(Colour::Blue)) => '4',
        (None, None, None) => '.',
    }
}

impl Field {
    /// The position text (§8.3): `H` lines of `W` characters, top row
    /// first, each ending with a line feed.
    pub fn text(&self) -> String {
        let (w, h) = (self.width(), self.height());
        let mut out = String::with_capacity((usize::from(w) + 1) * usize::from(h));
        for y in 1..=u16::from(h) {
            for x in 1..=u16::from(w) {
                out.push(cell_char(self.cell(Point::new(x, y))));
            }
            out.push('\n');
        }
        out
    }
}

/// The field with column numbers above (units digit; tens every tenth
/// column), row numbers on the left, and a line with the scores and who is
/// to move (or the result).
pub fn ascii(game: &Engine) -> String {
    let to_move = (!game.is_over()).then(|| game.to_move());
    picture(game.field(), to_move, game.outcome().as_ref())
}

/// [`ascii`] of a field seen from outside an [`Engine`] (a snapshot): `to_move`
/// and `outcome` make the last line (the outcome wins when both are given).
pub fn picture(field: &Field, to_move: Option<Colour>, outcome: Option<&Outcome>) -> String {
    let w = u16::from(field.width());
    let mut out = String::new();
    let tens: String = (1..=w)
        .map(|x| match x % 10 {
            0 => char::from_digit(u32::from(x / 10 % 10), 10).unwrap_or(' '),
            _ => ' ',
        })
        .collect();
    let units: String = (1..=w)
        .map(|x| char::from_digit(u32::from(x % 10), 10).unwrap_or(' '))
        .collect();
    let _ = writeln!(out, "   {}", tens.trim_end());
    let _ = writeln!(out, "   {units}");
    for (y, line) in field.text().lines().enumerate() {
        let _ = writeln!(out, "{:>2} {line}", y + 1);
    }
    let [red, blue] = field.scores();
    let state = match (outcome, to_move) {
        (Some(o), _) => format!("{} ({})", o.result_text(), o.reason.record_name()),
        (None, Some(c)) => format!("{c} to move"),
        (None, None) => "over".to_string(),
    };
    let _ = writeln!(out, "Red {red} - Blue {blue}, {state}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::dots::{RuleOptions, Start};

    #[test]
    fn the_cross_on_4x4() {
        let options = RuleOptions::new(4, 4, Start::Cross, 0).unwrap();
        let game = Engine::new(options, None).unwrap();
        assert_eq!(game.field().text(), "....\n.RB.\n.BR.\n....\n");
        let picture = ascii(&game);
        assert!(picture.contains(" 2 .RB."), "{picture}");
        assert!(
            picture.ends_with("Red 0 - Blue 0, Red to move\n"),
            "{picture}"
        );
    }
}
