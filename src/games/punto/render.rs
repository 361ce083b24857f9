//! The table as text, for tests, logs and the command line: the top card of
//! every cell over the occupied box, `x` left to right and `y` from top to
//! bottom, as docs/rules/punto.md §7.5 prints it (`..` for an empty cell), then the
//! stacks holding covered cards, then a match's state line by line.

use std::fmt::Write as _;

use super::referee::PuntoState;
use super::table::{Cell, Table};
use crate::games::Seat;

/// The top cards over the occupied box, as §7.5 prints them; `(empty
/// table)` when no card is down.
pub fn top_cards(table: &Table) -> String {
    let Some(bounds) = table.bounds() else {
        return "(empty table)\n".to_string();
    };
    let mut out = String::from(" y\\x");
    for x in bounds.min_x..=bounds.max_x {
        let _ = write!(out, "{x:>4}");
    }
    out.push('\n');
    for y in (bounds.min_y..=bounds.max_y).rev() {
        let _ = write!(out, "{y:>3} ");
        for x in bounds.min_x..=bounds.max_x {
            match table.top(Cell::new(x, y)) {
                Some(card) => {
                    let _ = write!(out, "  {card}");
                }
                None => out.push_str("  .."),
            }
        }
        out.push('\n');
    }
    out
}

/// The stacks of more than one card, bottom card first: `(0,0): R3 R7`.
pub fn covered(table: &Table) -> String {
    let mut out = String::new();
    for (cell, stack) in table.occupied().filter(|(_, s)| s.height() > 1) {
        let _ = write!(out, "({cell}):");
        for card in stack.cards() {
            let _ = write!(out, " {card}");
        }
        out.push('\n');
    }
    out
}

/// The table, its covered stacks, and a snapshot's state: round, mover and
/// revealed card, decks, round wins, removed cards and finished rounds.
pub fn ascii(snapshot: &PuntoState) -> String {
    let mut out = top_cards(&snapshot.table);
    out.push_str(&covered(&snapshot.table));
    let names = snapshot.options.configuration().seat_names();
    let name = |seat: Seat| names.get(seat.index()).copied().unwrap_or("?");
    let _ = write!(out, "round {}, ply {}", snapshot.round, snapshot.ply);
    match (snapshot.mover, snapshot.revealed) {
        (Some(seat), Some(card)) => {
            let _ = writeln!(out, ": {} ({}) to place {card}", seat, name(seat));
        }
        _ => out.push_str(": over\n"),
    }
    for deck in &snapshot.decks {
        let _ = writeln!(
            out,
            "{} ({}): {} cards: {}",
            deck.seat,
            name(deck.seat),
            deck.size,
            deck.contents
        );
    }
    let wins: Vec<String> = snapshot.wins.iter().map(u32::to_string).collect();
    let _ = writeln!(out, "round wins: {}", wins.join(" "));
    if !snapshot.removed.is_empty() {
        let removed: Vec<String> = snapshot.removed.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(out, "removed: {}", removed.join(" "));
    }
    for result in &snapshot.results {
        let _ = writeln!(out, "{}", summary(result));
    }
    out
}

/// One line for a finished round: `round 1: ROW, seat 2 wins, removes O8,
/// seat 3 begins next` (as docs/rules/punto.md §14 lists them).
pub fn summary(result: &super::RoundOutcome) -> String {
    let winner = result
        .winner
        .map_or("drawn".to_string(), |side| format!("{side} wins"));
    let removed = result
        .removed
        .map_or("removes nothing".to_string(), |c| format!("removes {c}"));
    let next = result
        .next_first
        .map_or("seat -".to_string(), |s| s.to_string());
    format!(
        "round {}: {}, {winner}, {removed}, {next} begins next",
        result.round,
        result.kind.name()
    )
}
