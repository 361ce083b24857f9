//! A picture of a position as SVG: the 211-space hexagon with column and row
//! labels, the centre hexagon marked, every piece drawn as its three joined
//! dots with the PÜNCT distinct, stacks readable (pieces drawn bottom-up and
//! lifted a little per level, stack heights written beside tall spaces, a
//! bridge's middle dot visibly spanning its gap), the last move highlighted and
//! a winning chain outlined.
//!
//! The output is deterministic (same position and options, same bytes) and
//! self-contained (no external fonts, styles or scripts), so it can be served,
//! embedded in a page or committed as a picture.

use std::fmt::Write as _;

use super::board::{Space, SpaceSet};
use super::piece::{Colour, PieceCode};
use super::position::{BoardPiece, Position};

/// Distance between the centres of two neighbouring spaces, in SVG units.
const STEP: f64 = 28.0;
/// How far a piece is lifted on screen per level, so stacks show their layers.
const LIFT: f64 = 4.0;
const MARGIN: f64 = 34.0;

/// What to emphasise besides the position itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct SvgOptions {
    /// The spaces the last move put a piece on, and where it came from (for a
    /// move of a piece on the board).
    pub last_move: Option<LastMove>,
    /// The winning chain to outline (see [`super::Position::connection`]).
    pub winning_chain: Option<SpaceSet>,
}

/// The last move, for highlighting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastMove {
    /// The spaces the moved or placed piece now covers.
    pub to: [Space; 3],
    /// The PÜNCT's previous space, for a move of a piece on the board.
    pub from: Option<Space>,
}

/// Screen centre of a space at level 0.
fn centre_of(s: Space) -> (f64, f64) {
    centre_xy(s.x(), s.y())
}

fn centre_xy(x: i8, y: i8) -> (f64, f64) {
    // Rows are horizontal; (x, y+1) is up-left and (x+1, y+1) up-right.
    let px = MARGIN + (f64::from(x) - f64::from(y) / 2.0 + 8.5) * STEP;
    let py = MARGIN + f64::from(17 - y) * STEP * 0.866_025_403_784_438_6;
    (px, py)
}

fn size() -> (f64, f64) {
    let (w, _) = centre_xy(16, 9);
    let (_, h) = centre_xy(0, 0);
    (w + MARGIN, h + MARGIN * 0.6)
}

/// Renders `pos` as a complete SVG document.
#[allow(
    clippy::too_many_lines,
    reason = "the picture drawn layer by layer in painting order, each layer a commented block"
)]
pub fn svg(pos: &Position, options: &SvgOptions) -> String {
    let (w, h) = size();
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" role="img" aria-label="PÜNCT board, {} to move, ply {}" font-family="sans-serif">"##,
        pos.to_move(),
        pos.ply()
    );
    out.push_str(concat!(
        "<style>",
        ".space{fill:#d9cfb8;stroke:#a89a7a;stroke-width:1}",
        ".centre{fill:#c4b48e}",
        ".label{font-size:11px;fill:#5a5040;text-anchor:middle;dominant-baseline:middle}",
        ".white .dot{fill:#fbfaf5;stroke:#333;stroke-width:1.5}",
        ".black .dot{fill:#262626;stroke:#000;stroke-width:1.5}",
        ".white .joint{stroke:#333;stroke-width:11;stroke-linecap:round}",
        ".white .joint-fill{stroke:#fbfaf5;stroke-width:8;stroke-linecap:round}",
        ".black .joint{stroke:#000;stroke-width:11;stroke-linecap:round}",
        ".black .joint-fill{stroke:#262626;stroke-width:8;stroke-linecap:round}",
        ".white .punct{fill:#c0392b}",
        ".black .punct{fill:#f1c40f}",
        ".gap{fill:none;stroke:#7a6a4a;stroke-width:1;stroke-dasharray:2 2}",
        ".height{font-size:9px;font-weight:bold;fill:#fff;text-anchor:middle;dominant-baseline:central}",
        ".badge{fill:#1f5fa8}",
        ".last{fill:none;stroke:#e67e22;stroke-width:3}",
        ".from{fill:none;stroke:#e67e22;stroke-width:2;stroke-dasharray:4 3}",
        ".chain{fill:none;stroke:#27ae60;stroke-width:3}",
        "</style>"
    ));
    let _ = write!(
        out,
        r##"<rect width="{w:.0}" height="{h:.0}" fill="#f4efe3"/>"##
    );

    // The board: every space, the centre hexagon darker.
    out.push_str(r#"<g class="board">"#);
    for s in Space::all() {
        let (x, y) = centre_of(s);
        let class = if s.is_centre() {
            "space centre"
        } else {
            "space"
        };
        let _ = write!(
            out,
            r#"<circle class="{class}" data-space="{s}" cx="{x:.1}" cy="{y:.1}" r="{:.1}"/>"#,
            STEP * 0.42
        );
    }
    out.push_str("</g>");
    labels(&mut out);

    // Last move and winning chain, under the pieces so the pieces stay readable.
    if let Some(chain) = options.winning_chain {
        out.push_str(r#"<g class="highlight-chain">"#);
        for s in chain.iter() {
            let (x, y) = lifted(pos, s);
            let _ = write!(
                out,
                r#"<circle class="chain" data-space="{s}" cx="{x:.1}" cy="{y:.1}" r="{:.1}"/>"#,
                STEP * 0.5
            );
        }
        out.push_str("</g>");
    }

    // Pieces bottom-up, so the top of each stack is drawn last.
    let mut pieces: Vec<BoardPiece> = pos.pieces_on_board().collect();
    pieces.sort_by_key(|p| (p.placement.level, p.id));
    out.push_str(r#"<g class="pieces">"#);
    for p in &pieces {
        piece(&mut out, pos, p);
    }
    out.push_str("</g>");

    // Heights of stacks taller than one dot, and the last move, on top.
    out.push_str(r#"<g class="heights">"#);
    for s in Space::all() {
        let height = pos.height(s);
        if height >= 2 {
            let (x, y) = lifted(pos, s);
            let (bx, by) = (x + STEP * 0.33, y - STEP * 0.33);
            let _ = write!(
                out,
                r#"<g data-space="{s}" data-height="{height}"><circle class="badge" cx="{bx:.1}" cy="{by:.1}" r="6.5"/><text class="height" x="{bx:.1}" y="{by:.1}">{height}</text></g>"#
            );
        }
    }
    out.push_str("</g>");
    if let Some(last) = options.last_move {
        out.push_str(r#"<g class="highlight-last">"#);
        for s in last.to {
            let (x, y) = lifted(pos, s);
            let _ = write!(
                out,
                r#"<circle class="last" data-space="{s}" cx="{x:.1}" cy="{y:.1}" r="{:.1}"/>"#,
                STEP * 0.47
            );
        }
        if let Some(from) = last.from {
            let (x, y) = lifted(pos, from);
            let _ = write!(
                out,
                r#"<circle class="from" data-space="{from}" cx="{x:.1}" cy="{y:.1}" r="{:.1}"/>"#,
                STEP * 0.47
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
    out
}

/// Where the top of a space is drawn (lifted by its height).
fn lifted(pos: &Position, s: Space) -> (f64, f64) {
    let (x, y) = centre_of(s);
    let h = pos.height(s).saturating_sub(1);
    (x, y - LIFT * f64::from(h))
}

fn labels(out: &mut String) {
    out.push_str(r#"<g class="labels">"#);
    // Row numbers left of each row's first space.
    for y in 1..=17i8 {
        if let Some(first) = (0..17).find_map(|x| Space::from_coords(x, y)) {
            let (px, py) = centre_of(first);
            let _ = write!(
                out,
                r#"<text class="label" x="{:.1}" y="{py:.1}">{y}</text>"#,
                px - STEP * 0.9
            );
        }
    }
    // Column letters where each column continues below the board: along the
    // bottom edge (row 0) for A..I, along the lower-right edge for J..Q.
    for x in 0..17i8 {
        if let Some(lowest) = (1..=17).find_map(|y| Space::from_coords(x, y)) {
            let y = if x <= 8 { 0 } else { lowest.y() - 1 };
            let (px, py) = centre_xy(x, y);
            let _ = write!(
                out,
                r#"<text class="label" x="{px:.1}" y="{py:.1}">{}</text>"#,
                (b'A' + x as u8) as char
            );
        }
    }
    out.push_str("</g>");
}

fn piece(out: &mut String, pos: &Position, p: &BoardPiece) {
    let colour = match p.id.colour() {
        Colour::White => "white",
        Colour::Black => "black",
    };
    let code = p.id.code();
    let level = p.placement.level;
    let lift = LIFT * f64::from(level);
    let at = |s: Space| {
        let (x, y) = centre_of(s);
        (x, y - lift)
    };
    let [punct, a, b] = p.spaces;
    let bridge_middle = code.middle_dot().map(|m| p.spaces[m]).filter(|&s| {
        // The middle rests on nothing at level - 1: a bridge.
        level >= 1 && !pos.stack(s).iter().any(|d| d.level + 1 == level)
    });
    let _ = write!(
        out,
        r#"<g class="piece {colour}" data-code="{code}" data-punct="{punct}" data-level="{level}"{}>"#,
        if bridge_middle.is_some() {
            r#" data-bridge="true""#
        } else {
            ""
        }
    );
    // The joints between the dots: a chain for straight and angular pieces,
    // all three sides for a triangle.
    let joints: Vec<(Space, Space)> = match code {
        PieceCode::SM | PieceCode::AM => vec![(punct, a), (punct, b)],
        PieceCode::SE | PieceCode::AL | PieceCode::AR => vec![(punct, a), (a, b)],
        PieceCode::T => vec![(punct, a), (a, b), (b, punct)],
    };
    for class in ["joint", "joint-fill"] {
        for &(s, t) in &joints {
            let ((x1, y1), (x2, y2)) = (at(s), at(t));
            let _ = write!(
                out,
                r#"<line class="{class}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"/>"#
            );
        }
    }
    // A bridge's middle dot spans a gap: a dashed line drops to the space below.
    if let Some(m) = bridge_middle {
        let (x, y) = at(m);
        // Down to the highest dot under the gap, or to the board.
        let below = pos
            .stack(m)
            .iter()
            .find(|d| d.level < level)
            .map_or(0.0, |d| LIFT * f64::from(d.level));
        let below = centre_of(m).1 - below;
        let _ = write!(
            out,
            r#"<line class="gap" x1="{x:.1}" y1="{y:.1}" x2="{x:.1}" y2="{below:.1}"/>"#
        );
    }
    for (i, s) in p.spaces.iter().enumerate() {
        let (x, y) = at(*s);
        let _ = write!(
            out,
            r#"<circle class="dot" data-space="{s}" cx="{x:.1}" cy="{y:.1}" r="{:.1}"/>"#,
            STEP * 0.36
        );
        if i == 0 {
            let _ = write!(
                out,
                r#"<circle class="punct" data-space="{s}" cx="{x:.1}" cy="{y:.1}" r="{:.1}"/>"#,
                STEP * 0.17
            );
        }
    }
    out.push_str("</g>");
}

/// The highlights of a position: the last move played to reach it and, if
/// `winner` won by a connection, that connection.
pub fn position_options(
    pos: &Position,
    last: Option<super::Move>,
    connection_winner: Option<Colour>,
) -> SvgOptions {
    let last_move = last.and_then(|mv| {
        let (to, from) = match mv {
            super::Move::Place { punct, .. } => (punct, None),
            super::Move::Shift { from, to, .. } => (to, Some(from)),
        };
        // The moved piece's PÜNCT is on `to`; it may since have been covered
        // only if this is not the position right after the move.
        let id = pos.punct_on_top(to).or_else(|| {
            pos.pieces_on_board()
                .find(|p| p.placement.punct == to)
                .map(|p| p.id)
        })?;
        Some(LastMove {
            to: pos.piece_spaces(id)?,
            from,
        })
    });
    SvgOptions {
        last_move,
        winning_chain: connection_winner
            .and_then(|c| pos.connection(c))
            .map(|c| c.chain),
    }
}

/// The highlights of a game: its last move and, if it was won by a
/// connection, the winning chain.
pub fn game_options(game: &super::Engine) -> SvgOptions {
    let winner = game
        .outcome()
        .filter(|o| o.reason == super::EndReason::Connection)
        .and_then(|o| o.winner);
    position_options(game.position(), game.moves().last().copied(), winner)
}

/// Renders a game's current position with its highlights.
pub fn game_svg(game: &super::Engine) -> String {
    svg(game.position(), &game_options(game))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(s: &str) -> Space {
        s.parse().unwrap()
    }

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.matches(needle).count()
    }

    #[test]
    fn empty_board_has_211_spaces_19_centre_and_all_labels() {
        let text = svg(&Position::start(), &SvgOptions::default());
        assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(text.ends_with("</svg>\n"));
        assert_eq!(count(&text, r#"<circle class="space"#), 211);
        assert_eq!(count(&text, r#"class="space centre""#), 19);
        assert_eq!(count(&text, r#"<text class="label""#), 17 + 17);
        assert_eq!(count(&text, "<g class=\"piece "), 0);
        assert!(text.contains(">Q</text>") && text.contains(">17</text>"));
    }

    #[test]
    fn pieces_stacks_and_bridges_are_drawn_bottom_up() {
        // A white SE on E5 F5 G5 with a black SE on top of it, and a white SE
        // bridging two white triangles over the empty L12.
        let pos = Position::from_pieces(
            &[
                (Colour::White, PieceCode::SE, sp("E5"), 0, 0),
                (Colour::Black, PieceCode::SE, sp("E5"), 0, 1),
                (Colour::White, PieceCode::T, sp("K12"), 2, 0),
                (Colour::White, PieceCode::T, sp("M12"), 0, 0),
                (Colour::White, PieceCode::SE, sp("K12"), 0, 1),
            ],
            Colour::White,
            5,
        )
        .unwrap();
        let text = svg(&pos, &SvgOptions::default());
        assert_eq!(count(&text, "<g class=\"piece "), 5);
        assert_eq!(count(&text, r#"<circle class="punct""#), 5);
        assert_eq!(count(&text, r#"<circle class="dot""#), 15);
        // E5, F5, G5 are two dots high.
        for s in ["E5", "F5", "G5"] {
            assert!(
                text.contains(&format!(r#"data-space="{s}" data-height="2""#)),
                "{s}"
            );
        }
        // The black SE (level 1) is drawn after the white one (level 0).
        let white = text.find(r#"data-punct="E5" data-level="0""#).unwrap();
        let black = text.find(r#"data-punct="E5" data-level="1""#).unwrap();
        assert!(white < black);
        // T(K12, r2) covers K12 K13 J12; T(M12, r0) covers M12 N12 N13. The
        // white SE at level 1 on K12 L12 M12 has its middle L12 over nothing.
        assert_eq!(count(&text, r#"data-bridge="true""#), 1);
        assert_eq!(count(&text, r#"<line class="gap""#), 1);
    }

    #[test]
    fn last_move_and_winning_chain_are_highlighted() {
        let pos = Position::from_pieces(
            &[(Colour::White, PieceCode::T, sp("B2"), 0, 0)],
            Colour::Black,
            1,
        )
        .unwrap();
        let chain: SpaceSet = [sp("B2"), sp("C2"), sp("C3")].into_iter().collect();
        let opts = SvgOptions {
            last_move: Some(LastMove {
                to: [sp("B2"), sp("C2"), sp("C3")],
                from: Some(sp("B5")),
            }),
            winning_chain: Some(chain),
        };
        let text = svg(&pos, &opts);
        assert_eq!(count(&text, r#"<circle class="last""#), 3);
        assert_eq!(count(&text, r#"<circle class="from" data-space="B5""#), 1);
        assert_eq!(count(&text, r#"<circle class="chain""#), 3);
        assert_eq!(svg(&pos, &opts), text, "deterministic");
    }
}
