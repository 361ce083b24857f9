//! The rules of Dots (`docs/rules/dots.md`), one named test per rule and
//! per refusal reason: every worked example of §11 reproduced cell by cell
//! with its scores, the start positions and the §4.4 test vectors, the end
//! of the game, notation and records. Black-box: only
//! `punct_referee::games::…`, no server.

use punct_referee::games::dots::record::{ResultTag, StatedOutcome};
use punct_referee::games::dots::referee::{DotsMoveInfo, DotsState, import};
use punct_referee::games::dots::setup::{offset_range, quadruple_crosses, start_dots, stream};
use punct_referee::games::dots::{
    Colour, EndReason, Engine, IllegalMove, Move, Point, Record, RuleOptions, Seed, Start, TakeKind,
};
use punct_referee::games::{GameRules, RefereeAction, Seat, Setup, Viewer, new_game};

// --- Helpers -------------------------------------------------------------------

fn options(width: u8, height: u8, start: Start) -> RuleOptions {
    RuleOptions::new(width, height, start, 0).unwrap()
}

fn moves(text: &str) -> Vec<Move> {
    text.split_whitespace()
        .map(|m| m.parse().unwrap())
        .collect()
}

fn play(game: &mut Engine, text: &str) {
    for mv in moves(text) {
        game.play(mv)
            .unwrap_or_else(|e| panic!("`{mv}` at ply {}: {e}", game.ply()));
    }
}

/// A game on an empty `width` × `height` field after `text`.
fn after(width: u8, height: u8, text: &str) -> Engine {
    let mut game = Engine::new(options(width, height, Start::Empty), None).unwrap();
    play(&mut game, text);
    game
}

/// Red's and Blue's moves interleaved, Red first.
fn interleave(red: &str, blue: &str) -> String {
    let (red, blue): (Vec<&str>, Vec<&str>) = (
        red.split_whitespace().collect(),
        blue.split_whitespace().collect(),
    );
    let mut out: Vec<&str> = Vec::new();
    for i in 0..red.len().max(blue.len()) {
        out.extend(red.get(i).copied());
        out.extend(blue.get(i).copied());
    }
    out.join(" ")
}

fn picture(rows: &[&str]) -> String {
    rows.iter().map(|r| format!("{r}\n")).collect()
}

fn assert_position(game: &Engine, rows: &[&str], scores: [u32; 2]) {
    assert_eq!(
        game.field().text(),
        picture(rows),
        "\n{}",
        game.field().text()
    );
    assert_eq!(game.scores(), scores);
}

fn p(x: u16, y: u16) -> Point {
    Point::new(x, y)
}

fn illegal(game: &Engine, mv: &str) -> &'static str {
    let mut copy = game.clone();
    let error = copy.play(mv.parse().unwrap()).unwrap_err();
    assert_eq!(&copy, game, "a refused move changed the game");
    error.reason()
}

// --- §11 worked examples ---------------------------------------------------------

#[test]
fn example_11a_one_dot_capture() {
    let game = after(5, 5, "3,2 3,3 2,3 1,1 4,3 1,2 3,4");
    assert_position(
        &game,
        &["B....", "B.R..", ".RbR.", "..R..", "....."],
        [1, 0],
    );
    assert_eq!(illegal(&game, "3,3"), "OCCUPIED");
    assert!(!game.field().playable().contains(2, 2));
}

#[test]
fn example_11b_a_dot_placed_in_an_empty_base_is_captured() {
    let mut game = after(5, 5, "3,2 1,1 2,3 5,5 4,3 1,5 3,4");
    assert_position(
        &game,
        &["B....", "..R..", ".R3R.", "..R..", "B...B"],
        [0, 0],
    );
    play(&mut game, "3,3");
    assert_position(
        &game,
        &["B....", "..R..", ".RbR.", "..R..", "B...B"],
        [1, 0],
    );
}

#[test]
fn example_11b_own_base_dot_only_removes_the_marker() {
    let game = after(5, 5, "3,2 1,1 2,3 5,5 4,3 1,5 3,4 5,1 3,3");
    assert_position(
        &game,
        &["B...B", "..R..", ".RRR.", "..R..", "B...B"],
        [0, 0],
    );
}

#[test]
fn example_11c_the_mover_encloses_first_inside_an_enemy_base() {
    let mut game = after(6, 5, "3,2 4,2 2,3 5,3 4,3 4,4 3,4");
    assert_eq!(game.field().text().lines().nth(2), Some(".R3RB."));
    play(&mut game, "3,3");
    assert_position(
        &game,
        &["......", "..RB..", ".RBrB.", "..RB..", "......"],
        [0, 1],
    );
}

#[test]
fn example_11d_recapture_frees_the_captured_dot() {
    let text = "4,3 4,4 3,4 4,2 5,4 3,3 4,5 2,4 1,1 3,5 1,7 4,6 7,1 5,5 7,7 6,4 1,4 5,3";
    let all = moves(text);
    let mut game = Engine::new(options(7, 7, Start::Empty), None).unwrap();
    for (i, mv) in all.iter().enumerate() {
        game.play(*mv).unwrap();
        if i == 6 {
            assert_eq!(game.scores(), [1, 0], "Red's move 7 captures 4,4");
        }
    }
    assert_position(
        &game,
        &[
            "R.....R", "...B...", "..BrB..", "RBrBrB.", "..BrB..", "...B...", "R.....R",
        ],
        [0, 4],
    );
}

#[test]
fn example_11e_two_captures_with_one_dot() {
    let mut game = Engine::new(options(7, 5, Start::Empty), None).unwrap();
    play(&mut game, "3,2 3,3 5,2 5,3 2,3 1,1 6,3 7,1 3,4 1,5 5,4 7,5");
    let played = game.play("4,3".parse().unwrap()).unwrap();
    assert_eq!(
        (played.placement.regions, played.placement.captures),
        (2, 2)
    );
    assert_position(
        &game,
        &["B.....B", "..R.R..", ".RbRbR.", "..R.R..", "B.....B"],
        [2, 0],
    );
}

#[test]
fn example_11f_one_dot_one_capture_and_one_empty_base() {
    let mut game = Engine::new(options(7, 5, Start::Empty), None).unwrap();
    play(&mut game, "3,2 5,3 5,2 1,1 2,3 7,1 6,3 1,5 3,4 7,5 5,4 4,5");
    let played = game.play("4,3".parse().unwrap()).unwrap();
    assert_eq!((played.placement.captures, played.placement.bases), (1, 1));
    assert_position(
        &game,
        &["B.....B", "..R.R..", ".R3RbR.", "..R.R..", "B..B..B"],
        [1, 0],
    );
}

#[test]
fn example_11g_the_edge_is_not_a_wall() {
    let game = after(5, 5, "2,1 1,1 1,2 5,5 3,2 5,4 2,3 4,5");
    assert_position(
        &game,
        &["BR...", "R3R..", ".R...", "....B", "...BB"],
        [0, 0],
    );
    assert_eq!(game.field().cell(p(1, 1)).holder, None);
}

#[test]
fn example_11h_a_pocket_outside_the_tight_wall_stays_a_base() {
    let red = "2,2 3,2 1,3 1,4 1,5 2,6 3,7 4,7 5,7 6,7 7,6 7,5 6,4 3,4 4,5 5,4 5,5 4,3";
    let blue = "2,4 9,1 9,2 9,3 9,4 9,5 9,6 9,7 9,8 8,8 7,8 6,8 5,8 4,8 3,8 2,8 1,8";
    let game = after(9, 8, &interleave(red, blue));
    assert_position(
        &game,
        &[
            "........B",
            ".RR.....B",
            "R11R....B",
            "RbR3RR..B",
            "R11RR1R.B",
            ".R1111R.B",
            "..RRRR..B",
            "BBBBBBBBB",
        ],
        [1, 0],
    );
}

#[test]
fn example_11h2_an_older_empty_base_inside_a_new_capture_is_captured() {
    let text = "5,4 3,3 4,5 1,1 6,5 2,1 5,6 3,1 3,2 4,1 3,8 5,1 4,2 6,1 4,8 7,1 5,2 8,1 5,8 9,1 \
                6,2 1,9 6,8 2,9 7,2 3,9 7,8 4,9 2,3 5,9 8,3 6,9 2,4 7,9 8,4 8,9 2,5 9,9 8,5 1,2 \
                2,6 1,3 8,6 1,4 2,7 1,5 8,7";
    let all = moves(text);
    let mut game = Engine::new(options(9, 9, Start::Empty), None).unwrap();
    for (i, mv) in all.iter().enumerate() {
        game.play(*mv).unwrap();
        if i == 6 {
            assert_eq!(game.field().cell(p(5, 5)).marker, Some(Colour::Red));
        }
    }
    assert_position(
        &game,
        &[
            "BBBBBBBBB",
            "B.RRRRR..",
            "BRb1111R.",
            "BR11R11R.",
            "BR1R1R1R.",
            ".R11R11R.",
            ".R11111R.",
            "..RRRRR..",
            "BBBBBBBBB",
        ],
        [1, 0],
    );
}

// --- §10: where the referee differs from oppai-rs ---------------------------------------

/// The cells of columns `x0..x0 + w` and rows `y0..y0 + h` of the position text (§8.3).
fn window(game: &Engine, (x0, y0): (usize, usize), (w, h): (usize, usize)) -> Vec<String> {
    game.field()
        .text()
        .lines()
        .skip(y0 - 1)
        .take(h)
        .map(|row| row[x0 - 1..x0 - 1 + w].to_string())
        .collect()
}

/// §10's 10x9 game: Red's diamond 5,4 4,5 6,5 5,6 makes the empty base 5,5; the capture of
/// Blue's 7,5 by the last move runs its region around the diamond, so the four diamond dots
/// are wall dots and the base is a pocket the wall seals off (§6.2): it is captured with
/// the rest (§6.3) and can no longer be played. (oppai-rs leaves it Red's base.)
#[test]
fn policy_10_a_base_sealed_by_the_capturing_wall_is_captured() {
    let text = "5,4 7,5 4,5 1,9 6,5 2,9 5,6 3,9 3,4 4,9 3,3 5,9 4,2 6,9 5,2 7,9 6,2 8,9 7,3 9,9 \
                8,4 10,9 8,5 10,1 8,6 10,2 7,7 10,3 6,7";
    let all = moves(text);
    let (before, last) = all.split_at(all.len() - 1);
    let mut game = Engine::new(options(10, 9, Start::Empty), None).unwrap();
    for mv in before {
        game.play(*mv).unwrap();
    }
    assert_eq!(game.field().cell(p(5, 5)).marker, Some(Colour::Red));
    assert_eq!(game.scores(), [0, 0]);
    game.play(last[0]).unwrap();
    assert_position(
        &game,
        &[
            ".........B",
            "...RRR...B",
            "..R111R..B",
            "..R1R11R..",
            "...R1RbR..",
            "....R11R..",
            ".....RR...",
            "..........",
            "BBBBBBBBBB",
        ],
        [1, 0],
    );
    assert_eq!(illegal(&game, "5,5"), "HELD");
}

/// The first place where this engine and oppai-rs's field part in the 32 benchmark games
/// (docs/BENCHMARKS.md, "Against oppai-rs's field"): the full 39x32 game of seed 31.
/// Red's move 1 123 (35,12) captures 103 Blue dots and frees 19 of its own; its region
/// runs around Red's empty base 27,18, whose four dots are all wall dots, so the base is
/// sealed inside the area and held (§6.2, §6.3). Blue's later try at 27,18 is refused:
/// the cell is held (§5.3), not a base that would capture the dot (§6.5(c)), which is
/// what oppai-rs does (203-57 there, 202-57 here).
#[test]
fn policy_10_seed_31_the_base_sealed_by_a_capture_is_held() {
    let record: Record = include_str!("data/dots-seed31.txt").parse().unwrap();
    assert_eq!(record.options, RuleOptions::default());
    assert_eq!(record.moves.len(), 1133);
    let (before, after) = record.moves.split_at(1122);
    let mut game = Engine::new(record.options, None).unwrap();
    for mv in before {
        game.play(*mv).unwrap();
    }
    // Columns 22..=32, rows 15..=21: the base 27,18 (`3`) in the middle.
    let base = p(27, 18);
    assert_eq!(game.field().cell(base).marker, Some(Colour::Red));
    assert_eq!(
        window(&game, (22, 15), (11, 7)),
        [
            "rBBRRBRR11R",
            "2BRRRBBBRbR",
            "BBRBRRBBBR1",
            "RBBBR3RRRR1",
            "BRRBBRRRbR1",
            "RbRRRRbbRbR",
            "3RRRRbRbR11",
        ]
    );
    assert_eq!(game.scores(), [96, 70]);
    assert_eq!(after[0], Move::Place(p(35, 12)));
    game.play(after[0]).unwrap();
    assert_eq!(game.scores(), [199, 51]);
    assert_eq!(game.field().cell(base).holder, Some(Colour::Red));
    assert_eq!(game.field().cell(base).marker, None);
    assert_eq!(
        window(&game, (22, 15), (11, 7)),
        [
            "RbbRRbRR11R",
            "1bRRRbbbRbR",
            "bbRbRRbbbR1",
            "RbbbR1RRRR1",
            "BRRbbRRRbR1",
            "RbRRRRbbRbR",
            "3RRRRbRbR11",
        ]
    );
    for mv in &after[1..] {
        game.play(*mv).unwrap();
    }
    assert_eq!(game.to_move(), Colour::Blue);
    assert_eq!(game.scores(), [202, 57]);
    assert_eq!(illegal(&game, "27,18"), "HELD");
}

#[test]
fn example_11i_an_inner_area_is_taken_first() {
    let red = "2,2 3,2 4,2 2,3 2,4 2,5 3,6 4,6 5,6 6,6 7,6 8,6 9,5 9,4 9,3 9,2 8,1 7,1 6,1 4,3 6,3 5,4 5,2";
    let mut blue = vec!["5,3".to_string()];
    for y in [8, 7] {
        blue.extend((1..=10).map(|x| format!("{x},{y}")));
    }
    blue.push("10,1".to_string());
    let all = interleave(red, &blue.join(" "));
    let (before, last) = all.rsplit_once(' ').unwrap();
    let mut game = after(10, 8, before);
    assert_position(
        &game,
        &[
            ".....RRR.B",
            ".RRR....R.",
            ".R.RBR..R.",
            ".R..R...R.",
            ".R......R.",
            "..RRRRRR..",
            "BBBBBBBBBB",
            "BBBBBBBBBB",
        ],
        [0, 0],
    );
    let played = game.play(last.parse().unwrap()).unwrap();
    assert_eq!((played.placement.captures, played.placement.bases), (1, 1));
    assert_position(
        &game,
        &[
            ".....RRR.B",
            ".RRRR333R.",
            ".R3RbR33R.",
            ".R33R333R.",
            ".R333333R.",
            "..RRRRRR..",
            "BBBBBBBBBB",
            "BBBBBBBBBB",
        ],
        [1, 0],
    );
}

#[test]
fn example_11j_grounding_at_the_first_move_gives_the_cross_away() {
    let mut game = Engine::new(options(8, 8, Start::Cross), None).unwrap();
    let played = game.play(Move::Ground).unwrap();
    let outcome = played.outcome.unwrap();
    assert_eq!(outcome.reason, EndReason::Ground);
    assert_eq!(outcome.winner, Some(Colour::Blue));
    assert_eq!(outcome.scores, [0, 2]);
}

#[test]
fn example_11j_grounding_a_ring_frees_the_enemy_dot_inside() {
    let game = after(5, 5, "3,2 3,3 2,3 1,1 4,3 1,2 3,4 5,5 ground");
    assert_position(
        &game,
        &["B....", "B.r..", ".rBr.", "..r..", "....B"],
        [0, 4],
    );
    assert_eq!(game.outcome().unwrap().winner, Some(Colour::Blue));
}

#[test]
fn example_11j_grounding_with_only_edge_groups_changes_nothing() {
    let game = after(5, 5, "3,2 3,3 2,3 1,1 4,3 1,2 3,4 ground");
    assert_position(
        &game,
        &["B....", "B.R..", ".RbR.", "..R..", "....."],
        [1, 0],
    );
    assert_eq!(game.outcome().unwrap().winner, Some(Colour::Red));
}

#[test]
fn example_11j_a_diagonal_link_to_the_edge_does_not_ground() {
    let game = after(6, 6, "1,2 6,6 2,2 5,6 3,2 4,6 1,5 6,1 2,4 6,2 ground");
    assert_eq!(game.scores(), [0, 1]);
    assert_eq!(game.field().cell(p(2, 4)).holder, Some(Colour::Blue));
    for point in [p(1, 2), p(2, 2), p(3, 2), p(1, 5)] {
        assert_eq!(game.field().cell(point).holder, None);
    }
}

// --- §4 start positions ------------------------------------------------------------

fn dots_of(game: &Engine, colour: Colour) -> Vec<Point> {
    let mut dots: Vec<Point> = game
        .field()
        .dots(colour)
        .iter()
        .map(|(x, y)| p(x as u16 + 1, y as u16 + 1))
        .collect();
    dots.sort();
    dots
}

fn sorted(points: &[(u16, u16)]) -> Vec<Point> {
    let mut v: Vec<Point> = points.iter().map(|&(x, y)| p(x, y)).collect();
    v.sort();
    v
}

#[test]
fn start_4_1_empty_has_no_dots() {
    let game = Engine::new(options(4, 4, Start::Empty), None).unwrap();
    assert!(
        game.field().dots(Colour::Red).is_empty() && game.field().dots(Colour::Blue).is_empty()
    );
    assert_eq!(game.to_move(), Colour::Red);
}

#[test]
fn start_4_2_the_cross_lies_at_half_the_size_rounded_down() {
    let game = Engine::new(RuleOptions::default(), None).unwrap();
    assert_eq!(dots_of(&game, Colour::Red), sorted(&[(19, 16), (20, 17)]));
    assert_eq!(dots_of(&game, Colour::Blue), sorted(&[(20, 16), (19, 17)]));
    for (size, at) in [(4, 2), (5, 2), (10, 5), (20, 10)] {
        let game = Engine::new(options(size, size, Start::Cross), None).unwrap();
        assert_eq!(
            dots_of(&game, Colour::Red),
            sorted(&[(at, at), (at + 1, at + 1)])
        );
    }
    assert_eq!(game.ply(), 0, "start dots are not moves");
}

#[test]
fn start_4_3_the_double_cross() {
    let game = Engine::new(options(39, 32, Start::DoubleCross), None).unwrap();
    assert_eq!(
        dots_of(&game, Colour::Red),
        sorted(&[(18, 16), (21, 16), (19, 17), (20, 17)])
    );
    assert_eq!(
        dots_of(&game, Colour::Blue),
        sorted(&[(19, 16), (20, 16), (18, 17), (21, 17)])
    );
}

fn hex_seed(text: &str) -> Seed {
    Seed::from_hex(text).unwrap()
}

fn counting_seed() -> Seed {
    Seed::new(&(0u8..32).collect::<Vec<_>>()).unwrap()
}

/// A §4.4 test vector: seed, width, height, the four crosses.
type Vector = (Seed, u8, u8, [(u16, u16); 4]);

#[test]
fn start_4_4_test_vectors() {
    let cases: [Vector; 5] = [
        (
            hex_seed("646f7473"),
            39,
            32,
            [(12, 11), (27, 12), (27, 20), (14, 20)],
        ),
        (
            counting_seed(),
            39,
            32,
            [(14, 11), (24, 11), (27, 22), (14, 22)],
        ),
        (
            counting_seed(),
            20,
            20,
            [(7, 8), (12, 7), (13, 12), (7, 13)],
        ),
        (hex_seed("00"), 8, 8, [(2, 2), (6, 2), (6, 6), (2, 6)]),
        (
            hex_seed("ffffffffffffffff"),
            64,
            64,
            [(24, 20), (41, 20), (43, 42), (21, 42)],
        ),
    ];
    for (seed, w, h, crosses) in cases {
        let got = quadruple_crosses(w, h, seed.as_bytes());
        assert_eq!(got, crosses.map(|(x, y)| p(x, y)), "{seed:?} {w}x{h}");
    }
    assert_eq!((offset_range(39), offset_range(32)), ((4, 7), (4, 6)));
    assert_eq!(
        (offset_range(20), offset_range(8), offset_range(64)),
        ((2, 3), (2, 2), (8, 12))
    );
}

#[test]
fn start_4_4_stream_numbers() {
    let dots: Vec<u64> = stream(hex_seed("646f7473").as_bytes()).take(8).collect();
    assert_eq!(
        dots,
        [
            5299760892607605103,
            17222895385474616857,
            13141366229330053503,
            14851516770533799744,
            1449282609692160059,
            7706759832288108531,
            13651995629757204437,
            14926704696173496702
        ]
    );
    let counting: Vec<u64> = stream(counting_seed().as_bytes()).take(8).collect();
    assert_eq!(
        counting,
        [
            7603653764919719733,
            2847256985257359334,
            16598328932019699308,
            14497008903671681563,
            6062973418872738379,
            4115690723835347132,
            7835983172384684817,
            4177576862561808179
        ]
    );
    assert_eq!(stream(&[0]).next(), Some(10870448370740332391));
    assert_eq!(stream(&[0xff; 8]).next(), Some(316685306638837820));
}

#[test]
fn start_4_4_the_dots_seed_gives_these_dots_and_commitment() {
    let seed = hex_seed("646f7473");
    assert_eq!(
        punct_referee::games::hex(&seed.commitment()),
        "0517cf1abcfd20eb941789b07f44fbfbe7ae3415fce3d0c834213235b2f228cc"
    );
    let game = Engine::new(options(39, 32, Start::QuadrupleCross), Some(seed)).unwrap();
    let red = [
        (12, 11),
        (13, 12),
        (27, 12),
        (28, 13),
        (27, 20),
        (28, 21),
        (14, 20),
        (15, 21),
    ];
    let blue = [
        (13, 11),
        (12, 12),
        (28, 12),
        (27, 13),
        (28, 20),
        (27, 21),
        (15, 20),
        (14, 21),
    ];
    assert_eq!(dots_of(&game, Colour::Red), sorted(&red));
    assert_eq!(dots_of(&game, Colour::Blue), sorted(&blue));
}

#[test]
fn start_4_4_no_start_dot_on_the_edge_and_crosses_apart_on_every_size() {
    let seeds = [
        hex_seed("00"),
        hex_seed("646f7473"),
        counting_seed(),
        hex_seed("ff"),
    ];
    for w in 8..=64u8 {
        for h in 8..=64u8 {
            let o = options(w, h, Start::QuadrupleCross);
            for seed in &seeds {
                let dots = start_dots(&o, Some(seed));
                for (point, _) in &dots {
                    assert!(
                        point.x > 1
                            && point.y > 1
                            && point.x < u16::from(w)
                            && point.y < u16::from(h),
                        "{w}x{h} {seed:?}: {point:?} on the edge"
                    );
                }
                // Crosses apart: no two dots of different crosses touch,
                // even diagonally.
                for (i, (a, _)) in dots.iter().enumerate() {
                    for (b, _) in &dots[(i / 4 + 1) * 4..] {
                        let near = a.x.abs_diff(b.x) <= 1 && a.y.abs_diff(b.y) <= 1;
                        assert!(!near, "{w}x{h} {seed:?}: {a:?} and {b:?} touch");
                    }
                }
            }
        }
    }
}

// --- §3 options ------------------------------------------------------------------------

#[test]
fn options_refuse_sizes_out_of_range() {
    let reason = |w, h, s| RuleOptions::new(w, h, s, 0).unwrap_err().reason();
    assert_eq!(reason(3, 10, Start::Empty), "WIDTH_OUT_OF_RANGE");
    assert_eq!(reason(65, 10, Start::Empty), "WIDTH_OUT_OF_RANGE");
    assert_eq!(reason(10, 3, Start::Cross), "HEIGHT_OUT_OF_RANGE");
    assert_eq!(reason(10, 65, Start::Cross), "HEIGHT_OUT_OF_RANGE");
    assert!(RuleOptions::new(64, 64, Start::QuadrupleCross, 0).is_ok());
}

#[test]
fn options_refuse_a_field_too_small_for_the_start() {
    let reason = |w, h, s| RuleOptions::new(w, h, s, 0).unwrap_err().reason();
    assert_eq!(reason(5, 4, Start::DoubleCross), "FIELD_TOO_SMALL");
    assert_eq!(reason(7, 8, Start::QuadrupleCross), "FIELD_TOO_SMALL");
    assert_eq!(reason(8, 7, Start::QuadrupleCross), "FIELD_TOO_SMALL");
    assert!(RuleOptions::new(6, 4, Start::DoubleCross, 0).is_ok());
    assert!(RuleOptions::new(4, 4, Start::Cross, 0).is_ok());
}

#[test]
fn a_seed_is_required_by_the_four_crosses_and_refused_otherwise() {
    let four = options(8, 8, Start::QuadrupleCross);
    assert_eq!(
        Engine::new(four, None).unwrap_err().reason(),
        "SEED_REQUIRED"
    );
    let seed = hex_seed("00");
    let cross = options(8, 8, Start::Cross);
    assert_eq!(
        Engine::new(cross, Some(seed)).unwrap_err().reason(),
        "SEED_NOT_ALLOWED"
    );
    assert_eq!(Seed::new(&[]).unwrap_err().reason(), "SEED_LENGTH");
    assert_eq!(Seed::new(&[1; 65]).unwrap_err().reason(), "SEED_LENGTH");
    assert!(GameRules::new(four).rules().seeded());
    assert!(!GameRules::new(cross).rules().seeded());
}

// --- §5 turns and refusals -----------------------------------------------------------

#[test]
fn red_moves_first_and_the_players_alternate() {
    let mut game = Engine::new(options(6, 6, Start::Cross), None).unwrap();
    for expected in [Colour::Red, Colour::Blue, Colour::Red] {
        assert_eq!(game.to_move(), expected);
        let mv = game.legal_moves()[0];
        assert_eq!(game.play(mv).unwrap().colour, expected);
    }
}

#[test]
fn refused_off_field() {
    let game = after(5, 5, "");
    for mv in ["0,1", "1,0", "6,1", "1,6", "99999,3"] {
        assert_eq!(illegal(&game, mv), "OFF_FIELD", "{mv}");
    }
}

#[test]
fn refused_occupied() {
    let game = after(5, 5, "2,2");
    assert_eq!(illegal(&game, "2,2"), "OCCUPIED");
    let cross = Engine::new(options(5, 5, Start::Cross), None).unwrap();
    assert_eq!(
        illegal(&cross, "2,2"),
        "OCCUPIED",
        "start dots occupy cells"
    );
}

#[test]
fn refused_held() {
    // 11.H: the cells inside Red's capture are held though empty.
    let red = "2,2 3,2 1,3 1,4 1,5 2,6 3,7 4,7 5,7 6,7 7,6 7,5 6,4 3,4 4,5 5,4 5,5 4,3";
    let blue = "2,4 9,1 9,2 9,3 9,4 9,5 9,6 9,7 9,8 8,8 7,8 6,8 5,8 4,8 3,8 2,8 1,8";
    let game = after(9, 8, &interleave(red, blue));
    assert_eq!(illegal(&game, "2,3"), "HELD");
    assert_eq!(illegal(&game, "3,6"), "HELD");
    assert!(
        game.check("4,4".parse().unwrap()).is_ok(),
        "a base cell is playable"
    );
}

#[test]
fn refused_after_the_end() {
    let game = after(5, 5, "ground");
    assert_eq!(illegal(&game, "3,3"), "GAME_OVER");
    assert_eq!(illegal(&game, "ground"), "GAME_OVER");
    assert!(game.legal_moves().is_empty());
    let mut over = game.clone();
    assert_eq!(
        over.conclude(EndReason::Resign, Some(Colour::Red)),
        Err(IllegalMove::GameOver)
    );
}

#[test]
fn every_refusal_has_a_sentence_citing_the_rules() {
    let errors = [
        IllegalMove::GameOver,
        IllegalMove::OffField {
            point: p(9, 9),
            width: 5,
            height: 5,
        },
        IllegalMove::Occupied {
            point: p(1, 1),
            owner: Colour::Red,
        },
        IllegalMove::Held {
            point: p(1, 1),
            holder: Colour::Blue,
        },
    ];
    for e in errors {
        let text = e.to_string();
        assert!(text.contains("docs/rules/dots.md §"), "{text}");
        assert!(
            e.reason()
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_')
        );
    }
}

#[test]
fn legal_moves_are_every_playable_cell_and_ground() {
    let game = after(4, 4, "1,1 2,2");
    let legal = game.legal_moves();
    assert_eq!(legal.len(), 14 + 1);
    assert_eq!(legal.last(), Some(&Move::Ground));
    assert!(!legal.contains(&"1,1".parse().unwrap()));
}

// --- §6 placement ------------------------------------------------------------------------

#[test]
fn rule_6_5_a_marker_cell_of_either_player_is_playable() {
    // 11.B after move 7: Red's base at 3,3; Blue may play it, and Red too.
    let game = after(5, 5, "3,2 1,1 2,3 5,5 4,3 1,5 3,4");
    assert!(game.check("3,3".parse().unwrap()).is_ok());
    let mut red_turn = game.clone();
    play(&mut red_turn, "5,1");
    assert!(red_turn.check("3,3".parse().unwrap()).is_ok());
}

#[test]
fn rule_6_5_b_the_enemy_base_is_dissolved_around_the_dot() {
    let game = after(6, 5, "3,2 4,2 2,3 5,3 4,3 4,4 3,4 3,3");
    for colour in Colour::ALL {
        assert!(game.field().markers(colour).is_empty());
    }
}

#[test]
fn rule_6_5_c_the_dot_falling_into_a_base_is_lost() {
    let mut game = after(5, 5, "3,2 1,1 2,3 5,5 4,3 1,5 3,4");
    let played = game.play("3,3".parse().unwrap()).unwrap();
    assert!(played.placement.fell_into_base);
    assert_eq!(played.colour, Colour::Blue);
    assert_eq!(game.field().cell(p(3, 3)).holder, Some(Colour::Red));
}

#[test]
fn rule_6_7_the_score_is_a_function_of_the_position() {
    // 11.D: Red held 4,4 after move 7; Blue's recapture frees it, and Red's
    // score falls back to 0.
    let game = after(
        7,
        7,
        "4,3 4,4 3,4 4,2 5,4 3,3 4,5 2,4 1,1 3,5 1,7 4,6 7,1 5,5 7,7 6,4 1,4 5,3",
    );
    let field = game.field();
    let held_blue_by_red = (*field.held(Colour::Red) & *field.dots(Colour::Blue)).len();
    assert_eq!(game.scores()[0], held_blue_by_red);
    assert_eq!(field.cell(p(4, 4)).holder, None);
}

// --- §7 the end ----------------------------------------------------------------------

#[test]
fn rule_7_1_the_game_ends_when_no_playable_cell_is_left() {
    let mut game = Engine::new(options(4, 4, Start::Empty), None).unwrap();
    let mut last = None;
    while !game.is_over() {
        let mv = game.legal_moves()[0];
        assert_ne!(mv, Move::Ground, "a cell is left while the game goes on");
        last = Some(game.play(mv).unwrap());
    }
    let outcome = last.unwrap().outcome.unwrap();
    assert_eq!(outcome.reason, EndReason::Full);
    assert!(game.field().playable().is_empty());
}

#[test]
fn rule_7_3_the_move_limit_ends_the_game_by_score() {
    let limited = RuleOptions::new(5, 5, Start::Empty, 7).unwrap();
    let mut game = Engine::new(limited, None).unwrap();
    play(&mut game, "3,2 3,3 2,3 1,1 4,3 1,2");
    assert!(!game.is_over());
    play(&mut game, "3,4");
    let outcome = game.outcome().unwrap();
    assert_eq!(
        (outcome.reason, outcome.winner, outcome.scores),
        (EndReason::MoveLimit, Some(Colour::Red), [1, 0])
    );
    // Grounding on the last allowed move ends by grounding.
    let limited = RuleOptions::new(5, 5, Start::Empty, 2).unwrap();
    let mut game = Engine::new(limited, None).unwrap();
    play(&mut game, "1,1 ground");
    assert_eq!(game.outcome().unwrap().reason, EndReason::Ground);
}

#[test]
fn rule_7_4_equal_scores_draw() {
    let game = after(5, 5, "1,1 ground");
    let outcome = game.outcome().unwrap();
    assert_eq!((outcome.winner, outcome.scores), (None, [0, 0]));
    assert_eq!(outcome.result_text(), "1/2-1/2");
}

#[test]
fn rule_7_5_referee_endings_keep_the_board_score() {
    let mut game = new_game(&GameRules::new(options(5, 5, Start::Empty)));
    for mv in moves("3,2 3,3 2,3 1,1 4,3 1,2 3,4") {
        game.play(&punct_referee::games::MoveInput::new(mv))
            .unwrap();
    }
    let outcome = game
        .conclude(RefereeAction::Resignation { loser: Seat::FIRST })
        .unwrap();
    assert_eq!(outcome.reason, "RESIGNATION");
    assert_eq!(
        outcome.winner(),
        Some(Seat::SECOND),
        "the board lead does not decide"
    );
    assert_eq!(outcome.scores, vec![1, 0]);
}

// --- §8 notation ---------------------------------------------------------------------

#[test]
fn notation_8_1_points_are_lenient_in_and_canonical_out() {
    let mv: Move = " 07 , 3 ".parse().unwrap();
    assert_eq!(mv, Move::Place(p(7, 3)));
    assert_eq!(mv.to_string(), "7,3");
    assert_eq!(Move::Place(p(39, 32)).to_string(), "39,32");
}

#[test]
fn notation_8_1_syntax_errors() {
    for bad in [
        "", "  ", "pass", "+1,2", "1;2", "1,2,3", "a,b", "1 2,3", "3",
    ] {
        let reason = bad.parse::<Move>().unwrap_err().reason();
        let expected = match bad.trim() {
            "" => "EMPTY_MOVE",
            "pass" => "NO_PASS",
            _ => "NOT_A_MOVE",
        };
        assert_eq!(reason, expected, "`{bad}`");
    }
}

#[test]
fn notation_8_2_ground_in_any_case() {
    for text in ["ground", "GROUND", " Ground\t"] {
        assert_eq!(text.parse::<Move>(), Ok(Move::Ground));
    }
    assert_eq!(Move::Ground.to_string(), "ground");
}

#[test]
fn position_text_8_3_shows_blue_bases_and_blue_held_cells() {
    // The other characters appear in the §11 pictures above.
    let game = after(5, 5, "1,1 3,2 1,2 2,3 1,3 4,3 1,4 3,4");
    assert_position(
        &game,
        &["R....", "R.B..", "RB4B.", "R.B..", "....."],
        [0, 0],
    );
    let game = after(6, 5, "3,3 3,2 1,1 4,2 1,2 2,3 1,3 5,3 1,4 3,4 1,5 4,4");
    assert_position(
        &game,
        &["R.....", "R.BB..", "RBr2B.", "R.BB..", "R....."],
        [0, 1],
    );
}

// --- §9 records --------------------------------------------------------------------------

const EXAMPLE_9: &str = "game: dots
width: 5
height: 5
start: empty
result: 0-1
score: 0-4
end: ground

3,2
3,3
2,3
1,1
4,3
1,2
3,4
5,5
ground
";

#[test]
fn record_9_the_example_replays_and_is_canonical() {
    let record = Record::parse(EXAMPLE_9).unwrap();
    let game = record.replay(None).unwrap();
    let outcome = game.outcome().unwrap();
    assert_eq!(
        (outcome.reason, outcome.scores),
        (EndReason::Ground, [0, 4])
    );
    assert_eq!(Record::of(&game, true).to_string(), EXAMPLE_9);
}

#[test]
fn record_9_reading_is_lenient() {
    let text = "# a comment\r\n GAME : Dots \r\nWidth:5\r\nheight: 5\r\nSTART: empty\r\nx-event: club\r\n\r\n3,2\r\n\r\n# moves\r\n 3 , 3 \r\n";
    let record = Record::parse(text).unwrap();
    assert_eq!(record.moves, moves("3,2 3,3"));
    assert_eq!(record.tags, vec![("event".to_string(), "club".to_string())]);
    let defaults = Record::parse("game: dots\n\n").unwrap();
    assert_eq!(defaults.options, RuleOptions::default());
}

fn record_refusal(text: &str) -> &'static str {
    match Record::parse(text) {
        Err(e) => e.reason(),
        Ok(r) => r
            .replay(None)
            .map(|_| "ACCEPTED")
            .unwrap_or_else(|e| e.reason()),
    }
}

#[test]
fn record_refusals_of_the_header() {
    assert_eq!(record_refusal("game: dots\nwidth 5\n\n"), "HEADER_SYNTAX");
    assert_eq!(record_refusal("game: dots\nplayer: x\n\n"), "UNKNOWN_KEY");
    assert_eq!(
        record_refusal("game: dots\nWidth: 5\nwidth: 5\n\n"),
        "DUPLICATE_KEY"
    );
    assert_eq!(record_refusal("game: dots\nwidth: five\n\n"), "BAD_VALUE");
    assert_eq!(record_refusal("game: dots\nstart: triple\n\n"), "BAD_VALUE");
    assert_eq!(record_refusal("game: punct\n\n"), "NOT_DOTS");
    assert_eq!(record_refusal("width: 5\n\n"), "MISSING_GAME");
    assert_eq!(
        record_refusal("game: dots\nwidth: 3\n\n"),
        "WIDTH_OUT_OF_RANGE"
    );
    assert_eq!(
        record_refusal("game: dots\nheight: 99\n\n"),
        "HEIGHT_OUT_OF_RANGE"
    );
    assert_eq!(
        record_refusal("game: dots\nwidth: 5\nstart: double-cross\n\n"),
        "FIELD_TOO_SMALL"
    );
    assert_eq!(
        record_refusal("game: dots\nseed: 00\n\n"),
        "SEED_NOT_ALLOWED"
    );
    assert_eq!(
        record_refusal("game: dots\nresult: 1-0\n\n"),
        "ENDING_INCOMPLETE"
    );
}

#[test]
fn record_refusals_of_the_moves() {
    let header = "game: dots\nwidth: 5\nheight: 5\nstart: empty\n\n";
    let error = Record::parse(&format!("{header}3,2\n3;3\n")).unwrap_err();
    assert_eq!((error.reason(), error.line()), ("NOT_A_MOVE", Some(7)));
    let error = Record::parse(&format!("{header}3,2\n3,2\n"))
        .unwrap()
        .replay(None)
        .unwrap_err();
    assert_eq!((error.reason(), error.line()), ("OCCUPIED", Some(7)));
    let over = format!("{header}ground\n1,1\n");
    assert_eq!(record_refusal(&over), "GAME_OVER");
}

#[test]
fn record_refusals_of_the_ending() {
    let wrong_result = EXAMPLE_9.replace("result: 0-1", "result: 1-0");
    assert_eq!(record_refusal(&wrong_result), "RESULT_MISMATCH");
    let wrong_end = EXAMPLE_9.replace("end: ground", "end: full");
    assert_eq!(record_refusal(&wrong_end), "RESULT_MISMATCH");
    let wrong_score = EXAMPLE_9.replace("score: 0-4", "score: 0-3");
    assert_eq!(record_refusal(&wrong_score), "SCORE_MISMATCH");
    // A referee ending needs a game in progress and a result that fits it.
    let base = "game: dots\nwidth: 5\nheight: 5\nstart: empty\n";
    let resigned = format!("{base}result: 0-1\nscore: 0-0\nend: resign\n\n1,1\n");
    assert_eq!(record_refusal(&resigned), "ACCEPTED");
    let drawn_resign = format!("{base}result: 1/2-1/2\nscore: 0-0\nend: resign\n\n1,1\n");
    assert_eq!(record_refusal(&drawn_resign), "RESULT_MISMATCH");
    let aborted = format!("{base}result: *\nscore: 0-0\nend: abort\n\n");
    assert_eq!(record_refusal(&aborted), "ACCEPTED");
    let early_full = format!("{base}result: 1/2-1/2\nscore: 0-0\nend: full\n\n1,1\n");
    assert_eq!(record_refusal(&early_full), "RESULT_MISMATCH");
    let bad_score = format!("{base}result: 1-0\nscore: 1-0\nend: timeout\n\n1,1\n");
    assert_eq!(record_refusal(&bad_score), "SCORE_MISMATCH");
}

#[test]
fn record_seeds_are_checked_against_the_commitment() {
    let seed = hex_seed("646f7473");
    let o = options(39, 32, Start::QuadrupleCross);
    let mut game = Engine::new(o, Some(seed)).unwrap();
    play(&mut game, "1,1 2,2");
    // In progress, the seed is withheld (§4.4) and the commitment is the
    // record's one `x-` line.
    let hidden = Record::of(&game, false).to_string();
    assert!(
        hidden.contains("\nx-commitment: 0517cf1a") && !hidden.contains("seed:"),
        "{hidden}"
    );
    let record = Record::parse(&hidden).unwrap();
    assert_eq!(
        record.replay(None).unwrap_err().reason(),
        "SEED_NOT_REVEALED"
    );
    assert_eq!(
        record.replay(Some(hex_seed("00"))).unwrap_err().reason(),
        "SEED_MISMATCH"
    );
    assert_eq!(record.replay(Some(seed)).unwrap(), game);
    let revealed = Record::of(&game, true).to_string();
    assert!(revealed.contains("seed: 646f7473"));
    assert_eq!(
        Record::parse(&revealed).unwrap().replay(None).unwrap(),
        game
    );
    // A seed that is not the one committed to is refused.
    let tampered = hidden.replace("\nx-commitment", "\nseed: 646f7474\nx-commitment");
    assert_eq!(record_refusal(&tampered), "SEED_MISMATCH");
    // With the seed, the record is §9's canonical form: no commitment.
    assert!(!revealed.contains("commitment"), "{revealed}");
    // A seed and a commitment that disagree (an older record's
    // `commitment:` line) are refused.
    let old = revealed.replace(
        "seed: 646f7473",
        &format!("commitment: {}\nseed: 646f7473", "0".repeat(64)),
    );
    assert_eq!(record_refusal(&old), "SEED_MISMATCH");
}

#[test]
fn record_endings_round_trip_through_the_referee() {
    for ending in [
        RefereeAction::Resignation { loser: Seat::FIRST },
        RefereeAction::Timeout {
            loser: Seat::SECOND,
        },
        RefereeAction::Abandoned { loser: Seat::FIRST },
        RefereeAction::DrawAgreement,
        RefereeAction::Aborted,
    ] {
        let mut game = new_game(&GameRules::new(options(6, 6, Start::Cross)));
        let outcome = game.conclude(ending).unwrap();
        let text = game.record(&[], Viewer::Spectator);
        let back = import(&text, None).unwrap();
        let back = back.game.outcome().unwrap();
        assert_eq!(back.winners, outcome.winners, "{text}");
        // §9 has no `abandon`: a seat that left lost on time.
        let reason = match outcome.reason {
            "ABANDONED" => "TIMEOUT",
            other => other,
        };
        assert_eq!(back.reason, reason, "{text}");
    }
    // Older records wrote `end: abandon`, a `commitment:` line and `x-`
    // tags; they still read.
    let old = "game: dots\nwidth: 8\nheight: 8\nstart: quadruple-cross\ncommitment: \
        0517cf1abcfd20eb941789b07f44fbfbe7ae3415fce3d0c834213235b2f228cc\nseed: 646f7473\n\
        result: 1-0\nscore: 0-0\nend: abandon\nx-event: club\n\n";
    let record = Record::parse(old).unwrap();
    assert_eq!(record.tags, vec![("event".to_string(), "club".to_string())]);
    let game = record.replay(None).unwrap();
    assert_eq!(game.outcome().unwrap().reason, EndReason::Abandon);
    // Written again, it is canonical: no commitment, no tags, `timeout`.
    assert_eq!(
        Record::of(&game, true).to_string(),
        "game: dots\nwidth: 8\nheight: 8\nstart: quadruple-cross\nseed: 646f7473\n\
         result: 1-0\nscore: 0-0\nend: timeout\n\n"
    );
    let ending = StatedOutcome {
        result: ResultTag::Aborted,
        score: [0, 0],
        end: EndReason::Abort,
    };
    assert_eq!(ending.result.text(), "*");
}

#[test]
fn the_importer_refuses_an_unrevealed_seed_and_a_wrong_one() {
    let rules = GameRules::new(options(8, 8, Start::QuadrupleCross));
    let setup = Setup {
        seed: [9; 32],
        supplied: true,
    };
    let game = rules.rules().start(Some(setup));
    let text = game.record(&[], Viewer::Spectator);
    assert_eq!(
        import(&text, None).unwrap_err().reason,
        Some("SEED_NOT_REVEALED")
    );
    let wrong = Setup {
        seed: [8; 32],
        supplied: true,
    };
    assert_eq!(
        import(&text, Some(wrong)).unwrap_err().reason,
        Some("SEED_MISMATCH")
    );
    assert!(import(&text, Some(setup)).is_ok());
}

// --- The referee's payloads ---------------------------------------------------------------

#[test]
fn a_played_move_reports_its_captures_and_enclosures() {
    let mut game = new_game(&GameRules::new(options(5, 5, Start::Empty)));
    let mut last = None;
    for mv in moves("3,2 3,3 2,3 1,1 4,3 1,2 3,4") {
        last = Some(
            game.play(&punct_referee::games::MoveInput::new(mv))
                .unwrap(),
        );
    }
    let report = last.unwrap();
    let info = report.detail.get::<DotsMoveInfo>().unwrap();
    let effect = info.effect.as_ref().unwrap();
    assert_eq!(effect.captured, vec![p(3, 3)]);
    assert_eq!(effect.scores, [1, 0]);
    assert_eq!(effect.enclosures.len(), 1);
    let enclosure = &effect.enclosures[0];
    assert_eq!(
        (enclosure.owner, enclosure.kind),
        (Colour::Red, TakeKind::Capture)
    );
    assert_eq!(enclosure.chain, vec![p(3, 2), p(4, 3), p(3, 4), p(2, 3)]);
    let snapshot = game.snapshot(Viewer::Spectator);
    let snapshot = snapshot.get::<DotsState>().unwrap();
    assert_eq!(snapshot.enclosures, effect.enclosures);
    assert_eq!(snapshot.scores, [1, 0]);
    assert!(
        snapshot
            .dots
            .iter()
            .any(|d| d.point == p(3, 3) && d.captured && d.owner == Colour::Blue)
    );
    let svg = game
        .snapshot(Viewer::Spectator)
        .svg(Some(&report.detail), None);
    assert!(svg.contains("<polygon class=\"capture\"") && svg.contains("class=\"last\""));
}

#[test]
fn a_recaptured_enclosure_no_longer_stands() {
    let mut game = new_game(&GameRules::new(options(7, 7, Start::Empty)));
    let text = "4,3 4,4 3,4 4,2 5,4 3,3 4,5 2,4 1,1 3,5 1,7 4,6 7,1 5,5 7,7 6,4 1,4 5,3";
    let mut last = None;
    for mv in moves(text) {
        last = Some(
            game.play(&punct_referee::games::MoveInput::new(mv))
                .unwrap(),
        );
    }
    let report = last.unwrap();
    let effect = report
        .detail
        .get::<DotsMoveInfo>()
        .unwrap()
        .effect
        .clone()
        .unwrap();
    assert_eq!(effect.captured.len(), 4);
    assert_eq!(effect.freed, vec![p(4, 4)]);
    let snapshot = game.snapshot(Viewer::Spectator);
    let snapshot = snapshot.get::<DotsState>().unwrap();
    assert_eq!(
        snapshot.enclosures.len(),
        1,
        "Red's small diamond fell with its wall"
    );
    assert_eq!(snapshot.enclosures[0].owner, Colour::Blue);
}

#[test]
fn seats_are_red_and_blue() {
    let game = new_game(&GameRules::new(RuleOptions::default()));
    assert_eq!(game.seat_names(), &["red", "blue"]);
    assert_eq!(game.rules().game_name(), "dots");
    assert_eq!(game.to_move(), Some(Seat::FIRST));
}
