//! A picture of a Dots position as SVG: the paper grid with column and row
//! numbers, the enclosures standing (captures filled in the taker's colour,
//! empty bases outlined with a dashed line), held empty cells and base
//! markers tinted, every dot in its owner's colour (a captured dot pale and
//! ringed in its holder's colour), the last move ringed, and a line with the
//! scores and who is to move or how the game ended.
//!
//! The output is deterministic (integer coordinates, fixed order) and
//! self-contained, so the conformance suite compares pictures and the
//! service can serve them as they are.

use std::fmt::Write as _;

use super::referee::DotsState;
use super::{Colour, Move, Point, TakeKind};

/// Distance between two neighbouring cells, in SVG units.
const STEP: i64 = 20;
/// Room around the grid (and for the numbers).
const MARGIN: i64 = 26;
/// Room below the grid for the status line.
const STATUS: i64 = 24;
/// The narrowest picture, so the status line fits under a small field.
const MIN_WIDTH: i64 = 340;

fn colour_value(c: Colour) -> &'static str {
    match c {
        Colour::Red => "#d7263d",
        Colour::Blue => "#1b5fbf",
    }
}

/// Where the grid starts on screen: the left margin, more when the picture is
/// widened to [`MIN_WIDTH`] (the grid is then centred).
fn left(width: u8) -> i64 {
    let grid = 2 * MARGIN + (i64::from(width) - 1) * STEP;
    MARGIN + (MIN_WIDTH - grid).max(0) / 2
}

fn centre(p: Point, left: i64) -> (i64, i64) {
    (
        left + (i64::from(p.x) - 1) * STEP,
        MARGIN + (i64::from(p.y) - 1) * STEP,
    )
}

/// Renders `snapshot` as a complete SVG document, ringing `last`.
pub fn svg(snapshot: &DotsState, last: Option<Move>) -> String {
    let field = &snapshot.field;
    let (w, h) = (i64::from(field.width()), i64::from(field.height()));
    let ox = left(field.width());
    let width = (2 * MARGIN + (w - 1) * STEP).max(MIN_WIDTH);
    let height = 2 * MARGIN + (h - 1) * STEP + STATUS;
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="Dots field {w}x{h}, ply {}" font-family="sans-serif">"##,
        snapshot.ply
    );
    out.push_str(concat!(
        "<style>",
        ".grid{stroke:#c9d6ea;stroke-width:1}",
        ".label{font-size:9px;fill:#7a8699;text-anchor:middle;dominant-baseline:middle}",
        ".status{font-size:13px;fill:#333;text-anchor:middle}",
        ".capture{fill-opacity:0.22;stroke-width:2;stroke-linejoin:round}",
        ".base{fill-opacity:0.06;stroke-width:1.5;stroke-dasharray:4 3;stroke-linejoin:round}",
        ".held{opacity:0.18}",
        ".marker{opacity:0.45}",
        ".captured{fill-opacity:0.35;stroke-width:2}",
        ".last{fill:none;stroke:#111;stroke-width:2}",
        "</style>"
    ));
    let _ = write!(
        out,
        r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#fbfbf4"/>"##
    );
    grid(&mut out, w, h, ox);
    cells(&mut out, snapshot, ox);
    enclosures(&mut out, snapshot, ox);
    dots(&mut out, snapshot, ox);
    if let Some(Move::Place(p)) = last
        && field.contains(p)
    {
        let (cx, cy) = centre(p, ox);
        let _ = write!(out, r#"<circle class="last" cx="{cx}" cy="{cy}" r="8"/>"#);
    }
    status(&mut out, snapshot, last, width, height);
    out.push_str("</svg>");
    out
}

fn grid(out: &mut String, w: i64, h: i64, ox: i64) {
    let (right, bottom) = (ox + (w - 1) * STEP, MARGIN + (h - 1) * STEP);
    for x in 1..=w {
        let px = ox + (x - 1) * STEP;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{px}" y1="{MARGIN}" x2="{px}" y2="{bottom}"/>"#
        );
        if x == 1 || x % 5 == 0 {
            let _ = write!(
                out,
                r#"<text class="label" x="{px}" y="{}">{x}</text>"#,
                MARGIN - 14
            );
        }
    }
    for y in 1..=h {
        let py = MARGIN + (y - 1) * STEP;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{ox}" y1="{py}" x2="{right}" y2="{py}"/>"#
        );
        if y == 1 || y % 5 == 0 {
            let _ = write!(
                out,
                r#"<text class="label" x="{}" y="{py}">{y}</text>"#,
                ox - 15
            );
        }
    }
}

/// Held empty cells and empty-base markers.
fn cells(out: &mut String, snapshot: &DotsState, ox: i64) {
    let field = &snapshot.field;
    for colour in Colour::ALL {
        let fill = colour_value(colour);
        let empty_held = field
            .held(colour)
            .and_not(&(*field.dots(Colour::Red) | *field.dots(Colour::Blue)));
        for (x, y) in empty_held.iter() {
            let (cx, cy) = centre(Point::from_index(x, y), ox);
            let _ = write!(
                out,
                r#"<rect class="held" x="{}" y="{}" width="10" height="10" fill="{fill}"/>"#,
                cx - 5,
                cy - 5
            );
        }
        for (x, y) in field.markers(colour).iter() {
            let (cx, cy) = centre(Point::from_index(x, y), ox);
            let _ = write!(
                out,
                r#"<circle class="marker" cx="{cx}" cy="{cy}" r="2" fill="{fill}"/>"#
            );
        }
    }
}

fn enclosures(out: &mut String, snapshot: &DotsState, ox: i64) {
    for enclosure in &snapshot.enclosures {
        let colour = colour_value(enclosure.owner);
        let class = match enclosure.kind {
            TakeKind::Capture => "capture",
            TakeKind::Base => "base",
        };
        let mut points = String::new();
        for (i, p) in enclosure.chain.iter().enumerate() {
            let (x, y) = centre(*p, ox);
            let _ = write!(points, "{}{x},{y}", if i == 0 { "" } else { " " });
        }
        let _ = write!(
            out,
            r#"<polygon class="{class}" points="{points}" fill="{colour}" stroke="{colour}"/>"#
        );
    }
}

fn dots(out: &mut String, snapshot: &DotsState, ox: i64) {
    for dot in &snapshot.dots {
        let (cx, cy) = centre(dot.point, ox);
        let fill = colour_value(dot.owner);
        if dot.captured {
            let ring = colour_value(dot.owner.other());
            let _ = write!(
                out,
                r#"<circle class="captured" cx="{cx}" cy="{cy}" r="5" fill="{fill}" stroke="{ring}"/>"#
            );
        } else {
            let _ = write!(out, r#"<circle cx="{cx}" cy="{cy}" r="5" fill="{fill}"/>"#);
        }
    }
}

fn status(out: &mut String, snapshot: &DotsState, last: Option<Move>, width: i64, height: i64) {
    let [red, blue] = snapshot.scores;
    let state = match (snapshot.outcome, snapshot.to_move) {
        (Some(o), _) => {
            let who = match o.winner {
                Some(c) => format!("{c} wins"),
                None if o.reason == super::EndReason::Abort => "aborted".to_string(),
                None => "draw".to_string(),
            };
            format!("{who} ({})", o.reason.record_name())
        }
        (None, Some(c)) => format!("{c} to move"),
        (None, None) => String::new(),
    };
    let last = match last {
        Some(mv) => format!(", last {mv}"),
        None => String::new(),
    };
    let _ = write!(
        out,
        r#"<text class="status" x="{}" y="{}">Red {red} – Blue {blue} · {state}{last}</text>"#,
        width / 2,
        height - 10
    );
}
