//! A picture of a Punto match as SVG: the reachable 11 × 11 square with the
//! cells the area still allows, every top card drawn in its colour with its
//! value, covered cards hinted as offset edges with the stack height, the
//! last placement outlined, winning rows (or the winner's deadlock rows)
//! marked by a band of their colour and gold-edged cells, the 6 × 6 box drawn once the cards span 6 cells in a direction,
//! and a panel with the round, the mover's revealed card, each deck's size,
//! round wins, removed cards, the commitment and, once over, the seed.
//!
//! Between rounds (a new round dealt, no card down yet) the picture shows
//! the table the last round ended with and its rows, so the winning row of
//! every round gets seen. The output is deterministic and self-contained.

use std::fmt::Write as _;

use super::card::{Card, Colour};
use super::referee::{PuntoMoveInfo, PuntoState};
use super::table::{Cell, REACH, Row, SPAN, Table};
use crate::games::hex;

/// Side of a cell, in SVG units.
const CELL: i32 = 44;
const MARGIN: i32 = 28;
const PANEL: i32 = 400;
const GRID: i32 = CELL * (2 * REACH + 1);

/// The fill of a colour's cards.
const fn fill(colour: Colour) -> &'static str {
    match colour {
        Colour::Red => "#d62828",
        Colour::Orange => "#f08c00",
        Colour::Blue => "#1d4ed8",
        Colour::Green => "#2b9348",
    }
}

/// The top-left corner of `cell` on screen (y grows upwards on the table).
const fn corner(cell: Cell) -> (i32, i32) {
    (
        MARGIN + (cell.x + REACH) * CELL,
        MARGIN + (REACH - cell.y) * CELL,
    )
}

/// The table to draw and the rows to mark: the current one, or between
/// rounds and at the end the last round's, with its deciding rows.
fn shown(snapshot: &PuntoState) -> (&Table, &[Row], Option<String>) {
    let last = snapshot.results.last();
    let rows = last.map_or(&[][..], |r| r.rows.as_slice());
    match (&snapshot.last_table, last) {
        (Some(table), Some(result)) if snapshot.table.is_empty() || snapshot.outcome.is_some() => {
            (table, rows, Some(super::render::summary(result)))
        }
        _ => (&snapshot.table, &[][..], None),
    }
}

/// The whole picture of `snapshot`, `last` (the move that reached it)
/// outlined.
pub fn svg(snapshot: &PuntoState, last: Option<&PuntoMoveInfo>) -> String {
    let (table, rows, caption) = shown(snapshot);
    let width = MARGIN * 2 + GRID + PANEL;
    let height = MARGIN * 2 + GRID + 24;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\">\
         <rect width=\"{width}\" height=\"{height}\" fill=\"#f6f1e7\"/>"
    );
    grid(&mut out, table);
    fixed_box(&mut out, table);
    for row in rows {
        row_band(&mut out, row);
    }
    for (cell, stack) in table.occupied() {
        if let Some(card) = stack.top() {
            card_at(&mut out, cell, card, stack.height());
        }
    }
    for row in rows {
        row_cells(&mut out, row);
    }
    if let Some(last) = last.filter(|l| l.played) {
        let (x, y) = corner(last.cell);
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#111\" stroke-width=\"3\"/>",
            x + 1,
            y + 1,
            CELL - 2,
            CELL - 2
        );
    }
    if let Some(caption) = caption {
        let _ = write!(
            out,
            "<text x=\"{MARGIN}\" y=\"{}\" font-size=\"14\">{caption}</text>",
            MARGIN + GRID + 18
        );
    }
    panel(&mut out, snapshot);
    out.push_str("</svg>");
    out
}

/// The 11 × 11 cells, those the area no longer allows shaded (§4.2).
fn grid(out: &mut String, table: &Table) {
    let window = table.bounds().map(|b| (b.columns(), b.rows()));
    for x in -REACH..=REACH {
        for y in -REACH..=REACH {
            let allowed = window.is_none_or(|((x0, x1), (y0, y1))| {
                (x0..=x1).contains(&x) && (y0..=y1).contains(&y)
            });
            let (px, py) = corner(Cell::new(x, y));
            let shade = if allowed { "#fffdf8" } else { "#ddd6c8" };
            let _ = write!(
                out,
                "<rect x=\"{px}\" y=\"{py}\" width=\"{CELL}\" height=\"{CELL}\" fill=\"{shade}\" stroke=\"#cbbfa8\"/>"
            );
        }
    }
    let (cx, cy) = corner(Cell::CENTRE);
    let _ = write!(
        out,
        "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"#cbbfa8\"/>",
        cx + CELL / 2,
        cy + CELL / 2
    );
}

/// The 6 × 6 box, once the cards span 6 cells in a direction: fixed there,
/// still floating (the allowed window) in the other.
fn fixed_box(out: &mut String, table: &Table) {
    let Some(b) = table.bounds() else {
        return;
    };
    if b.width() < SPAN && b.height() < SPAN {
        return;
    }
    let ((wx0, wx1), (wy0, wy1)) = (b.columns(), b.rows());
    let (x0, x1) = if b.width() == SPAN {
        (b.min_x, b.max_x)
    } else {
        (wx0.max(-REACH), wx1.min(REACH))
    };
    let (y0, y1) = if b.height() == SPAN {
        (b.min_y, b.max_y)
    } else {
        (wy0.max(-REACH), wy1.min(REACH))
    };
    let (left, top) = corner(Cell::new(x0, y1));
    let _ = write!(
        out,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>",
        (x1 - x0 + 1) * CELL,
        (y1 - y0 + 1) * CELL
    );
}

/// A top card, with one offset edge per covered card (up to 3) and the
/// stack height when above 1.
fn card_at(out: &mut String, cell: Cell, card: Card, height: usize) {
    let (x, y) = corner(cell);
    let under = height.saturating_sub(1).min(3) as i32;
    for i in (1..=under).rev() {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"5\" fill=\"#8a8172\" stroke=\"#fff\"/>",
            x + 4 + 2 * i,
            y + 4 - 2 * i,
            CELL - 10,
            CELL - 10
        );
    }
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"5\" fill=\"{}\" stroke=\"#fff\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"20\" font-weight=\"bold\" fill=\"#fff\" text-anchor=\"middle\">{}</text>",
        x + 4,
        y + 4,
        CELL - 10,
        CELL - 10,
        fill(card.colour()),
        x + 4 + (CELL - 10) / 2,
        y + 4 + (CELL - 10) / 2 + 7,
        card.value()
    );
    if height > 1 {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#111\" text-anchor=\"end\">×{height}</text>",
            x + CELL - 2,
            y + CELL - 2
        );
    }
}

/// A row's band behind its cards: a wide line of its colour through the
/// centres of its cells.
fn row_band(out: &mut String, row: &Row) {
    let (Some(first), Some(last)) = (row.cells().next(), row.cells().last()) else {
        return;
    };
    let centre = |c: Cell| {
        let (x, y) = corner(c);
        (x + CELL / 2 - 1, y + CELL / 2 - 1)
    };
    let ((x1, y1), (x2, y2)) = (centre(first), centre(last));
    let _ = write!(
        out,
        "<line x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" stroke=\"{}\" stroke-width=\"{}\" stroke-linecap=\"round\" opacity=\"0.35\"/>",
        fill(row.colour),
        CELL - 8
    );
}

/// A row's cells outlined in gold over their cards.
fn row_cells(out: &mut String, row: &Row) {
    for cell in row.cells() {
        let (x, y) = corner(cell);
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"none\" stroke=\"#f2b705\" stroke-width=\"3\"/>",
            x + 2,
            y + 2,
            CELL - 6,
            CELL - 6
        );
    }
}

/// The panel beside the table.
#[allow(
    clippy::too_many_lines,
    reason = "the side panel drawn line by line, top to bottom, each line a commented block"
)]
fn panel(out: &mut String, snapshot: &PuntoState) {
    let names = snapshot.options.configuration().seat_names();
    let x = MARGIN * 2 + GRID;
    let mut lines: Vec<String> = Vec::new();
    let options = &snapshot.options;
    lines.push(format!(
        "Punto, {}{}: first to {} rounds",
        options.configuration().name(),
        if options.max_rounds() > 0 {
            format!(" (at most {} rounds)", options.max_rounds())
        } else {
            String::new()
        },
        options.rounds_to_win()
    ));
    lines.push(format!("round {}, ply {}", snapshot.round, snapshot.ply));
    match (
        snapshot.mover,
        snapshot.revealed,
        snapshot.ending,
        &snapshot.outcome,
    ) {
        (Some(seat), Some(card), _, _) => lines.push(format!(
            "{} ({}) places {card}",
            seat,
            names.get(seat.index()).copied().unwrap_or("?")
        )),
        (_, _, Some(ending), _) => lines.push(format!("over: {ending}")),
        (_, _, _, Some(outcome)) => lines.push(format!(
            "over: {} ({})",
            outcome
                .winner
                .map_or("draw".to_string(), |w| format!("{w} wins")),
            outcome.reason.name()
        )),
        _ => lines.push("over".to_string()),
    }
    for deck in &snapshot.decks {
        lines.push(format!(
            "{} {}: deck {}",
            deck.seat,
            names.get(deck.seat.index()).copied().unwrap_or("?"),
            deck.size
        ));
    }
    let wins: Vec<String> = snapshot.wins.iter().map(u32::to_string).collect();
    lines.push(format!("round wins: {}", wins.join(" – ")));
    if !snapshot.removed.is_empty() {
        let removed: Vec<String> = snapshot.removed.iter().map(Card::to_string).collect();
        lines.push(format!("removed: {}", removed.join(" ")));
    }
    for result in &snapshot.results {
        lines.push(super::render::summary(result));
    }
    // In full (two lines of 32 hex digits each), so the picture alone lets
    // a spectator check the shuffle once the seed is out.
    let commitment = hex(&snapshot.commitment);
    lines.push(format!("commitment {}", &commitment[..32]));
    lines.push(commitment[32..].to_string());
    if let Some(seed) = &snapshot.seed {
        let seed = hex(seed);
        lines.push(format!("seed {}", &seed[..32]));
        lines.push(seed[32..].to_string());
    }
    for (i, line) in lines.iter().enumerate() {
        let _ = write!(
            out,
            "<text x=\"{x}\" y=\"{}\" font-size=\"12\">{line}</text>",
            MARGIN + 12 + 18 * i as i32
        );
    }
    if let (Some(_), Some(card)) = (snapshot.mover, snapshot.revealed) {
        let top = MARGIN + 12 + 18 * lines.len() as i32;
        let _ = write!(
            out,
            "<text x=\"{x}\" y=\"{}\" font-size=\"12\">revealed:</text>\
             <rect x=\"{}\" y=\"{top}\" width=\"{}\" height=\"{}\" rx=\"5\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"20\" font-weight=\"bold\" fill=\"#fff\" text-anchor=\"middle\">{}</text>",
            top + 20,
            x + 70,
            CELL - 10,
            CELL - 10,
            fill(card.colour()),
            x + 70 + (CELL - 10) / 2,
            top + (CELL - 10) / 2 + 7,
            card.value()
        );
    }
}
