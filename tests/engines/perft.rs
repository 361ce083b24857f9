//! perft from the start position, checked against counts derived by hand.

use punct_referee::games::punct::{
    Colour, Engine, Move, PieceCode, Position, RuleOptions, Variant,
};

/// Start position, both variants: only placements exist, none may touch the
/// centre hexagon (standard: never; basic: White's first turn).
///
/// Counting shapes on the 211-space board minus the 19 centre spaces (region R):
///
/// * S = straight triples (3 consecutive spaces on a line) inside R.
///   Per direction there are 17 parallel lines of lengths 9,10,…,16,17,16,…,9
///   (217 spaces); removing the 6 corners shortens the two edge lines to 7 and
///   the middle line to 15. Triples per direction: (7-2)·2 + 2·(8+9+…+14) +
///   (15-2) = 10 + 154 + 13 = 177. The 5 lines within distance 2 of I9 cross
///   the centre: the centre line keeps two segments of 5 (3+3 triples instead
///   of 13: −7), the lines at offset ±1 keep 6+6 of 16 (8 instead of 14: −6
///   each), at ±2 keep 6+6 of 15 (8 instead of 13: −5 each): −29.
///   S = 3·(177 − 29) = 444.
/// * T = unit triangles inside R. A hexagon of side 9 spaces has 6·8² = 384;
///   each removed corner takes 2 (its 120° angle): 372. A triangle touching the
///   centre lies in the radius-3 hexagon (6·3² = 54 triangles), and every one of
///   those touches the centre (no unit triangle has 3 vertices at distance 3):
///   T = 372 − 54 = 318.
/// * V = 120° bent triples a–m–b inside R, counted per middle space m as the
///   number of direction pairs (d, d+2) with both neighbours in R: interior
///   spaces give 6, a side space 2 (the two at the ends of a side 1), the 6
///   spaces that lost a corner neighbour 4. Board: 163·6 + 6·(5·2 + 2·1) + 6·4
///   = 978 + 72 + 24 = 1074. Removing the centre: its 19 spaces lose all 6
///   (−114); of the ring at distance 3, the 6 corners lose one neighbour (−2
///   each) and the 12 others two adjacent ones (−4 each): −60. V = 900.
///
/// Placements per code: SM one per straight triple (PÜNCT in the middle; r and
/// r+3 are one position) = 444; SE two per straight triple (either end) = 888;
/// AM one per bent triple = 900; each bent triple read from one end turns one
/// way and from the other end the other way, so AL = AR = 900; T three per
/// triangle (PÜNCT on any corner) = 954.
/// Total: 444 + 888 + 3·900 + 954 = 4986.
const START_PER_CODE: [(PieceCode, u64); 6] = [
    (PieceCode::SM, 444),
    (PieceCode::SE, 888),
    (PieceCode::AM, 900),
    (PieceCode::AL, 900),
    (PieceCode::AR, 900),
    (PieceCode::T, 954),
];

fn per_code(game: &Engine) -> Vec<(PieceCode, u64)> {
    PieceCode::ALL
        .iter()
        .map(|&code| {
            let n = game
                .legal_moves()
                .iter()
                .filter(|m| matches!(m, Move::Place { code: c, .. } if *c == code))
                .count() as u64;
            (code, n)
        })
        .collect()
}

#[test]
fn perft_1_from_start_matches_hand_count_in_both_variants() {
    for variant in [Variant::Standard, Variant::Basic] {
        let game = Engine::new(RuleOptions::of(variant));
        assert_eq!(game.perft(1), vec![4986], "{variant}");
        assert_eq!(per_code(&game), START_PER_CODE.to_vec(), "{variant}");
    }
}

/// After one placement the basic game opens the centre to Black: the whole
/// board offers 3·(531 + 1074 + 372) = 5931 placements (S = 3·177 straight
/// triples, V and T as above without the centre removed), minus those that
/// overlap White's piece. Standard keeps the centre closed, so basic must
/// exceed standard at depth 2. The exact depth-2 values are pinned as a
/// regression check (computed by this engine; `punct-referee perft --depth 2`).
#[test]
fn perft_2_from_start_regression() {
    let standard = Engine::new(RuleOptions::of(Variant::Standard)).perft(2);
    let basic = Engine::new(RuleOptions::of(Variant::Basic)).perft(2);
    assert_eq!(standard, vec![4986, 23_841_810]);
    assert_eq!(basic, vec![4986, 28_499_958]);
}

/// With the centre open (basic game after the first turn) every shape on the
/// whole board counts: S = 3·177 = 531, V = 1074, T = 372 (derivations above),
/// so 3·(531 + 1074 + 372) = 5931 placements, split SM 531, SE 1062, AM/AL/AR
/// 1074 each, T 1116.
#[test]
fn basic_placements_on_an_open_board_match_hand_count() {
    let empty = Position::from_pieces(&[], Colour::Black, 1).unwrap();
    let game = Engine::from_position(RuleOptions::of(Variant::Basic), empty);
    assert_eq!(game.perft(1), vec![5931]);
    assert_eq!(
        per_code(&game),
        vec![
            (PieceCode::SM, 531),
            (PieceCode::SE, 1062),
            (PieceCode::AM, 1074),
            (PieceCode::AL, 1074),
            (PieceCode::AR, 1074),
            (PieceCode::T, 1116),
        ]
    );
    // The standard game keeps the centre closed on any turn.
    let empty = Position::from_pieces(&[], Colour::Black, 1).unwrap();
    let game = Engine::from_position(RuleOptions::of(Variant::Standard), empty);
    assert_eq!(game.perft(1), vec![4986]);
}
