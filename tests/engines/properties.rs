//! Property tests of the PÜNCT engine (docs/rules/punct.md §3–§7), black-box through the
//! public API.
//!
//! Positions come from seeded random play: proptest chooses the rule options,
//! the seed, the number of plies and how strongly the walk prefers moving pieces
//! already on the board (uniform play is almost all placements, so a bias is
//! needed to reach stacks, jumps, bridges and covered pieces). Every proptest
//! uses a fixed proptest seed and no failure persistence, so the suite is
//! deterministic. The last test plays thousands of complete games in a plain
//! seeded loop.
//!
//! Besides the engine's own `check_invariants`, positions are checked against an
//! independent rebuild (`Position::from_pieces` from the pieces on the board)
//! and against the support rules every reachable position must satisfy
//! (docs/rules/punct.md §3, §4.2.4: covered pieces never move, so what a piece rests on
//! stays as it was when it landed). Candidate moves are also judged by a small
//! rules oracle written from docs/rules/punct.md §2-§4 with only the public view of a
//! position (`oracle_legal`), independent of the engine's validation.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use punct_referee::games::punct::position::Dot;
use punct_referee::games::punct::{
    Colour, EndOnSupply, EndReason, Engine, GameRecord, IllegalMove, Move, NotatedMove, PieceCode,
    Position, PositionKey, RuleOptions, Space, Variant,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

// ---------------------------------------------------------------------------
// Configuration and strategies
// ---------------------------------------------------------------------------

/// A proptest configuration with `cases` cases, a fixed seed (deterministic
/// runs) and no regression files.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x0050_5543_4E54),
        ..ProptestConfig::default()
    }
}

fn variant() -> impl Strategy<Value = Variant> {
    prop_oneof![Just(Variant::Standard), Just(Variant::Basic)]
}

fn end_on_supply() -> impl Strategy<Value = EndOnSupply> {
    prop_oneof![
        Just(EndOnSupply::FirstExhausted),
        Just(EndOnSupply::BothExhausted)
    ]
}

/// Variant and end of supply; the other options at their defaults.
fn rules() -> impl Strategy<Value = RuleOptions> {
    (variant(), end_on_supply()).prop_map(|(variant, end_on_supply)| RuleOptions {
        variant,
        end_on_supply,
        ..RuleOptions::default()
    })
}

/// How to reach a position by seeded random play.
#[derive(Debug, Clone)]
struct Walk {
    options: RuleOptions,
    seed: u64,
    plies: u32,
    /// Percent of turns that pick among the moves of pieces on the board (when
    /// there are any) instead of among all legal moves.
    shift_percent: u32,
    /// Never play a move that ends the game: try up to 8 others, then stop.
    keep_running: bool,
}

/// A walk to a position where the game is still running.
fn running_walk(max_plies: u32) -> impl Strategy<Value = Walk> {
    (rules(), any::<u64>(), 0..max_plies, 0u32..=95).prop_map(
        |(options, seed, plies, shift_percent)| Walk {
            options,
            seed,
            plies,
            shift_percent,
            keep_running: true,
        },
    )
}

fn is_shift(m: &Move) -> bool {
    matches!(m, Move::Shift { .. })
}

/// Plays the walk; `visit` sees every position before its move is chosen,
/// with its legal moves. Returns the game at the end of the walk.
fn play_walk(w: &Walk, mut visit: impl FnMut(&Engine, &[Move])) -> Engine {
    let mut rng = StdRng::seed_from_u64(w.seed);
    let mut game = Engine::new(w.options);
    for _ in 0..w.plies {
        let moves = game.legal_moves();
        visit(&game, &moves);
        if moves.is_empty() {
            break;
        }
        // The generator lists placements first, then moves of pieces.
        let first_shift = moves.iter().position(is_shift).unwrap_or(moves.len());
        let mut next = None;
        for _ in 0..8 {
            let m = if first_shift < moves.len() && rng.random_range(0..100) < w.shift_percent {
                moves[rng.random_range(first_shift..moves.len())]
            } else {
                moves[rng.random_range(0..moves.len())]
            };
            let mut g = game.clone();
            g.play(m).expect("a generated move is legal");
            if !(w.keep_running && g.is_over()) {
                next = Some(g);
                break;
            }
        }
        match next {
            Some(g) => game = g,
            None => break,
        }
    }
    game
}

fn space(i: u16) -> Space {
    Space::from_index(i as usize % 211).expect("index below 211")
}

/// A well-formed candidate move built from raw numbers: placements of any code
/// on any space in any rotation, and shifts whose origin is usually a space of
/// one of the mover's pieces (PÜNCT or minor dot, covered or not) and whose
/// destination is usually on a line through the origin.
fn candidate(pos: &Position, raw: [u16; 5]) -> Move {
    let [kind, a, b, c, d] = raw;
    let rotation = (c % 6) as u8;
    if kind % 10 < 3 {
        return Move::Place {
            code: PieceCode::ALL[a as usize % 6],
            punct: space(b),
            rotation,
        };
    }
    let me = pos.to_move();
    let mut own = Vec::new();
    for p in pos.pieces_on_board().filter(|p| p.id.colour() == me) {
        own.extend([p.spaces[0], p.spaces[0], p.spaces[1], p.spaces[2]]);
    }
    let from = if kind % 10 < 8 && !own.is_empty() {
        own[a as usize % own.len()]
    } else {
        space(a)
    };
    let to = if d % 3 == 0 {
        space(b)
    } else {
        let dir = (d / 3) as usize % 7;
        let ray: Vec<Space> = if dir == 6 {
            Vec::new()
        } else {
            from.ray(dir).collect()
        };
        if ray.is_empty() {
            from
        } else {
            ray[b as usize % ray.len()]
        }
    };
    Move::Shift { from, to, rotation }
}

// ---------------------------------------------------------------------------
// Independent checks of a position
// ---------------------------------------------------------------------------

/// Engine invariants, an independent rebuild of the position from its pieces,
/// the dot/piece/supply counts and the support rules of every piece.
fn check_position(pos: &Position) -> Result<(), String> {
    pos.check_invariants()?;

    // Counts: 3 dots per piece, supply + board = 18 per player.
    let pieces: Vec<_> = pos.pieces_on_board().collect();
    let dots: usize = Space::all().map(|s| pos.stack(s).len()).sum();
    if dots != 3 * pieces.len() {
        return Err(format!(
            "{dots} dots on the board for {} pieces",
            pieces.len()
        ));
    }
    for colour in Colour::BOTH {
        let on_board = pieces.iter().filter(|p| p.id.colour() == colour).count();
        if on_board + pos.supply_total(colour) as usize != 18 {
            return Err(format!("{colour}: supply + board != 18"));
        }
        for code in PieceCode::ALL {
            let n = pieces
                .iter()
                .filter(|p| p.id.colour() == colour && p.id.code() == code)
                .count();
            if n + pos.supply(colour, code) as usize != code.count() as usize {
                return Err(format!(
                    "{colour} {code}: supply + board != {}",
                    code.count()
                ));
            }
        }
    }

    // Rebuild from scratch, lowest pieces first, and compare everything seen
    // from outside: key (with the hash), heights, stacks, tops, supplies.
    let mut list: Vec<(u8, Colour, PieceCode, Space, u8)> = pieces
        .iter()
        .map(|p| {
            (
                p.placement.level,
                p.id.colour(),
                p.id.code(),
                p.placement.punct,
                p.placement.rotation,
            )
        })
        .collect();
    list.sort_by_key(|e| e.0);
    let list: Vec<_> = list
        .into_iter()
        .map(|(level, colour, code, punct, rotation)| (colour, code, punct, rotation, level))
        .collect();
    let rebuilt = Position::from_pieces(&list, pos.to_move(), pos.ply())?;
    if rebuilt.key() != pos.key() || rebuilt.hash64() != pos.hash64() {
        return Err("the position differs from its rebuild (key or hash)".into());
    }
    let summary = |p: &Position, s: Space| {
        p.stack(s)
            .iter()
            .map(|d| (d.piece.colour(), d.piece.code(), d.level, d.is_punct))
            .collect::<Vec<_>>()
    };
    for s in Space::all() {
        if pos.height(s) != rebuilt.height(s)
            || pos.top_colour(s) != rebuilt.top_colour(s)
            || summary(pos, s) != summary(&rebuilt, s)
        {
            return Err(format!("{s}: stack differs from the rebuild"));
        }
        let h = pos.stack(s).first().map_or(0, |d| d.level + 1);
        if h != pos.height(s) {
            return Err(format!(
                "{s}: height {} but top dot level + 1 = {h}",
                pos.height(s)
            ));
        }
    }
    for colour in Colour::BOTH {
        if pos.tops_of(colour) != rebuilt.tops_of(colour) {
            return Err(format!("{colour}: top set differs from the rebuild"));
        }
    }

    // Support (docs/rules/punct.md §3, §4.2.4), with the middle of a chain found from
    // geometry: the dot adjacent to both others (none for a triangle).
    for p in &pieces {
        let level = p.placement.level;
        let fp = p.spaces;
        let below = |s: Space| {
            let stack = pos.stack(s);
            let i = stack
                .iter()
                .position(|d| d.piece == p.id)
                .expect("a piece's dot is in its space's stack");
            stack.get(i + 1).copied()
        };
        let under: Vec<_> = fp.iter().map(|&s| below(s)).collect();
        let mobile = fp.iter().all(|&s| pos.top_piece(s) == Some(p.id));
        if mobile != p.mobile || mobile != pos.is_mobile(p.id) {
            return Err(format!("{:?}: mobility disagrees with the stacks", p.id));
        }
        if level == 0 {
            if under.iter().any(Option::is_some) {
                return Err(format!("{:?} at level 0 lies on a dot", p.id));
            }
            continue;
        }
        let at = |d: &Option<Dot>| d.map(|d| d.level);
        let full = under.iter().all(|d| at(d) == Some(level - 1));
        if !full {
            let adjacent = |i: usize, j: usize| fp[i].distance(fp[j]) == 1;
            let middle = (0..3).find(|&m| (0..3).filter(|&o| o != m).all(|o| adjacent(m, o)));
            let triangle = adjacent(1, 2) && adjacent(0, 1) && adjacent(0, 2);
            let Some(m) = middle.filter(|_| !triangle) else {
                return Err(format!("{:?} at level {level} is unsupported", p.id));
            };
            let ends_ok = (0..3)
                .filter(|&e| e != m)
                .all(|e| at(&under[e]) == Some(level - 1));
            let middle_ok = at(&under[m]).is_none_or(|l| l + 1 < level);
            if !(ends_ok && middle_ok) {
                return Err(format!("{:?} at level {level} is not a valid bridge", p.id));
            }
        }
        // The PÜNCT came down on (or bridges over) the owner's dot.
        match under[0] {
            Some(d) if d.piece.colour() == p.id.colour() => {}
            _ => {
                return Err(format!(
                    "{:?} at level {level}: the dot under its PÜNCT is not its owner's",
                    p.id
                ));
            }
        }
    }
    Ok(())
}

/// The spaces of a `code` piece with its PÜNCT on `p` in rotation `r`, from
/// the table of docs/rules/punct.md §2 (independent of the engine's shape tables).
fn shape(code: PieceCode, p: Space, r: u8) -> Option<[Space; 3]> {
    let r = usize::from(r);
    let step = |s: Space, d: usize| s.neighbour(d % 6);
    let (a, b) = match code {
        PieceCode::SM => (step(p, r)?, step(p, r + 3)?),
        PieceCode::SE => (step(p, r)?, step(step(p, r)?, r)?),
        PieceCode::AM => (step(p, r)?, step(p, r + 2)?),
        PieceCode::AL => (step(p, r)?, step(step(p, r)?, r + 5)?),
        PieceCode::AR => (step(p, r)?, step(step(p, r)?, r + 1)?),
        PieceCode::T => (step(p, r)?, step(p, r + 1)?),
    };
    Some([p, a, b])
}

/// Whether `mv` is legal, decided from docs/rules/punct.md §3-§4 with only the public
/// view of the position (stacks, heights, tops): an oracle independent of the
/// engine's validation.
fn oracle_legal(pos: &Position, variant: Variant, mv: Move) -> bool {
    let me = pos.to_move();
    match mv {
        Move::Place {
            code,
            punct,
            rotation,
        } => {
            let Some(fp) = shape(code, punct, rotation) else {
                return false;
            };
            let centre_banned = variant == Variant::Standard || pos.ply() == 0;
            pos.supply(me, code) > 0
                && fp.iter().all(|&s| pos.height(s) == 0)
                && !(centre_banned && fp.iter().any(|s| s.is_centre()))
        }
        Move::Shift { from, to, rotation } => {
            // The mover's mobile piece whose PÜNCT is the top dot of `from`.
            let Some(id) = pos.top_piece(from) else {
                return false;
            };
            let Some(cur) = pos.placement(id) else {
                return false;
            };
            let cur_fp = shape(id.code(), cur.punct, cur.rotation).expect("on the board");
            if id.colour() != me
                || cur.punct != from
                || cur_fp.iter().any(|&s| pos.top_piece(s) != Some(id))
            {
                return false;
            }
            let (dx, dy) = (to.x() - from.x(), to.y() - from.y());
            if !(dx == 0 || dy == 0 || dx == dy) {
                return false;
            }
            let Some(fp) = shape(id.code(), to, rotation) else {
                return false;
            };
            // The highest dot of a space once the piece is lifted.
            let top_after_lift = |s: Space| {
                pos.stack(s)
                    .into_iter()
                    .find(|d| d.piece != id)
                    .map(|d| (d.level, d.piece.colour()))
            };
            let h: Vec<u8> = fp
                .iter()
                .map(|&s| top_after_lift(s).map_or(0, |(l, _)| l + 1))
                .collect();
            let level = if h[0] == h[1] && h[1] == h[2] {
                h[0]
            } else {
                // A bridge: the middle of a chain (adjacent to both others;
                // a triangle has none) lower than the two ends, which are level.
                let adjacent = |i: usize, j: usize| fp[i].distance(fp[j]) == 1;
                if adjacent(0, 1) && adjacent(1, 2) && adjacent(0, 2) {
                    return false;
                }
                let Some(m) = (0..3).find(|&m| (0..3).filter(|&o| o != m).all(|o| adjacent(m, o)))
                else {
                    return false;
                };
                let ends: Vec<u8> = (0..3).filter(|&e| e != m).map(|e| h[e]).collect();
                if !(ends[0] == ends[1] && ends[0] >= 1 && h[m] < ends[0]) {
                    return false;
                }
                ends[0]
            };
            let mut old = cur_fp;
            let mut new = fp;
            old.sort();
            new.sort();
            if cur.punct == to && old == new {
                return false;
            }
            level == 0 || top_after_lift(to).is_some_and(|(_, c)| c == me)
        }
    }
}

/// The legal moves' notations, asserting they are all distinct.
fn notation_set(pos: &Position, moves: &[Move]) -> HashSet<NotatedMove> {
    let set: HashSet<NotatedMove> = moves
        .iter()
        .map(|&m| pos.notate(m).expect("a legal move has a notation"))
        .collect();
    assert_eq!(set.len(), moves.len(), "two legal moves share a notation");
    set
}

/// Everything observable about a game, to show that a refusal changed nothing.
fn snapshot(g: &Engine) -> (PositionKey, u64, u32, Colour, Vec<Move>, String, String) {
    (
        g.position().key(),
        g.position().hash64(),
        g.position().ply(),
        g.position().to_move(),
        g.moves().to_vec(),
        format!("{:?}", g.outcome()),
        format!("{:?}", g.position()),
    )
}

// ---------------------------------------------------------------------------
// Legality: generation and validation agree
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(160))]

    /// Every generated move validates, at every position of the walk; every
    /// move applied keeps the invariants (all moves of pieces and a sample of
    /// placements at the final position, the chosen move at every ply).
    #[test]
    fn legal_moves_validate_and_keep_invariants(w in running_walk(140), sample in any::<u64>()) {
        let game = play_walk(&w, |g, moves| {
            check_position(g.position()).unwrap();
            for &m in moves {
                assert!(g.validate(m).is_ok(), "generated {m:?} does not validate: {:?}", g.validate(m));
            }
        });
        let pos = *game.position();
        check_position(&pos).unwrap();
        let moves = game.legal_moves();
        prop_assert!(game.is_over() || !moves.is_empty());
        let mut rng = StdRng::seed_from_u64(sample);
        for &m in &moves {
            prop_assert!(game.validate(m).is_ok());
            if !is_shift(&m) && rng.random_range(0..moves.len()) >= 100 {
                continue;
            }
            let mut g = game.clone();
            let played = g.play(m).unwrap();
            let after = g.position();
            check_position(after).unwrap();
            prop_assert_eq!(after.ply(), pos.ply() + 1);
            prop_assert_eq!(after.to_move(), pos.to_move().opponent());
            prop_assert_eq!(g.moves().len(), game.moves().len() + 1);
            prop_assert_eq!(g.moves().last(), Some(&m));
            prop_assert_eq!(Some(played.notation), pos.notate(m));
            let me = pos.to_move();
            let (punct, minors, supply_change) = match played.notation {
                NotatedMove::Place { code, punct, minors } => {
                    prop_assert_eq!(after.supply(me, code) + 1, pos.supply(me, code));
                    (punct, minors, 1)
                }
                NotatedMove::Shift { to, minors, .. } => (to, minors, 0),
            };
            prop_assert_eq!(after.supply_total(me) + supply_change, pos.supply_total(me));
            // The notation names the spaces the piece now covers, PÜNCT on top.
            let id = after.punct_on_top(punct).expect("the PÜNCT is on top after a move");
            prop_assert_eq!(id.colour(), me);
            for s in minors {
                prop_assert_eq!(after.top_piece(s), Some(id));
            }
            prop_assert_eq!(after.placement(id).map(|p| p.level), Some(played.level));
        }
    }
}

proptest! {
    #![proptest_config(config(1024))]

    /// Random well-formed candidates: a candidate validates exactly when its
    /// notation is one of the generated moves' (and when the rules oracle says
    /// it is legal), and playing it gives the same position as the generated
    /// move.
    #[test]
    fn random_candidates_agree_with_generation(
        w in running_walk(140),
        raws in proptest::collection::vec(any::<[u16; 5]>(), 200),
    ) {
        let game = play_walk(&w, |_, _| {});
        let pos = *game.position();
        let moves = game.legal_moves();
        let set = notation_set(&pos, &moves);
        let mut by_notation = HashMap::new();
        for &m in &moves {
            by_notation.insert(pos.notate(m).unwrap(), m);
        }
        for raw in raws {
            let m = candidate(&pos, raw);
            let ok = game.validate(m).is_ok();
            let notated = pos.notate(m);
            let in_set = notated.is_some_and(|n| set.contains(&n));
            prop_assert_eq!(
                ok,
                oracle_legal(&pos, w.options.variant, m),
                "{:?} ({:?}): validate {:?} disagrees with the rules oracle",
                m,
                notated,
                game.validate(m)
            );
            prop_assert_eq!(ok, in_set, "{:?} ({:?}): validate {:?}", m, notated, game.validate(m));
            if ok {
                let generated = by_notation[&notated.unwrap()];
                let (mut a, mut b) = (game.clone(), game.clone());
                a.play(m).unwrap();
                b.play(generated).unwrap();
                prop_assert_eq!(a.position().key(), b.position().key());
                prop_assert_eq!(a.moves(), b.moves(), "play canonicalises the move");
            }
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Every well-formed candidate at a position (every code × space × rotation
    /// placement; every shift from a space holding one of the mover's dots to
    /// any space in any rotation): it validates exactly when the rules oracle
    /// says it is legal and exactly when its notation is generated, and the
    /// generated set is exactly the set of distinct valid notations.
    #[test]
    fn exhaustive_candidates_agree_with_generation(w in running_walk(160)) {
        let game = play_walk(&w, |_, _| {});
        let pos = *game.position();
        let moves = game.legal_moves();
        let set = notation_set(&pos, &moves);
        let me = pos.to_move();
        let mut valid = HashSet::new();
        let mut check = |m: Move| {
            let ok = game.validate(m).is_ok();
            let notated = pos.notate(m);
            assert_eq!(
                ok,
                oracle_legal(&pos, w.options.variant, m),
                "{m:?} ({notated:?}): validate {:?} disagrees with the rules oracle",
                game.validate(m)
            );
            assert_eq!(
                ok,
                notated.is_some_and(|n| set.contains(&n)),
                "{m:?} ({notated:?}): validate {:?}",
                game.validate(m)
            );
            if ok {
                valid.insert(notated.unwrap());
            }
        };
        for code in PieceCode::ALL {
            for punct in Space::all() {
                for rotation in 0..6 {
                    check(Move::Place { code, punct, rotation });
                }
            }
        }
        let froms: HashSet<Space> = Space::all()
            .filter(|&s| pos.stack(s).iter().any(|d| d.piece.colour() == me))
            .collect();
        for &from in &froms {
            for to in Space::all() {
                for rotation in 0..6 {
                    check(Move::Shift { from, to, rotation });
                }
            }
        }
        prop_assert_eq!(valid, set);
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Generation is deduplicated: no two legal moves give the same position.
    #[test]
    fn legal_moves_give_distinct_positions(w in running_walk(160)) {
        let game = play_walk(&w, |_, _| {});
        let pos = *game.position();
        let moves = game.legal_moves();
        notation_set(&pos, &moves);
        let mut keys = HashMap::new();
        for &m in &moves {
            let mut g = game.clone();
            g.play(m).unwrap();
            if let Some(other) = keys.insert(g.position().key(), m) {
                prop_assert!(
                    false,
                    "{} and {} give the same position",
                    pos.notate(other).unwrap(),
                    pos.notate(m).unwrap()
                );
            }
        }
        let mut into = vec![Move::Place { code: PieceCode::T, punct: Space::CENTRE, rotation: 0 }];
        pos.legal_moves_into(w.options.variant, &mut into);
        prop_assert_eq!(&into[1..], &moves[..], "legal_moves_into appends the same moves");
        prop_assert_eq!(pos.count_legal_moves(w.options.variant), moves.len() as u64);
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// A refused move changes nothing, and play refuses exactly what validate
    /// refuses, with the same reason; once the game is over everything is
    /// refused with GameOver.
    #[test]
    fn refused_moves_change_nothing(
        w in (rules(), any::<u64>(), 0u32..160, 0u32..=95, any::<bool>()).prop_map(
            |(options, seed, plies, shift_percent, keep_running)| Walk {
                options, seed, plies, shift_percent, keep_running,
            }),
        raws in proptest::collection::vec(any::<[u16; 5]>(), 60),
    ) {
        let game = play_walk(&w, |_, _| {});
        let before = snapshot(&game);
        let legal_before = game.legal_moves();
        for raw in raws {
            let m = candidate(game.position(), raw);
            let mut g = game.clone();
            let validated = game.validate(m);
            match g.play(m) {
                Ok(_) => prop_assert!(validated.is_ok()),
                Err(e) => {
                    prop_assert_eq!(Err(e), validated.map(|_| ()));
                    if game.is_over() {
                        prop_assert_eq!(e, IllegalMove::GameOver);
                    }
                    prop_assert_eq!(snapshot(&g), before.clone());
                }
            }
            // The same through notation, and for the wrong player.
            if let Some(n) = game.position().notate(m) {
                let mut g = game.clone();
                if g.play_notation(&n.to_string()).is_err() {
                    prop_assert_eq!(snapshot(&g), before.clone());
                }
            }
            let other = game.position().to_move().opponent();
            prop_assert!(game.validate_for(other, m).is_err());
        }
        let mut g = game.clone();
        prop_assert!(g.play_notation("not a move").is_err());
        prop_assert_eq!(snapshot(&g), before.clone());
        prop_assert_eq!(g.legal_moves(), legal_before);
    }
}

// ---------------------------------------------------------------------------
// Notation
// ---------------------------------------------------------------------------

/// `n` written leniently: optional lower case, blanks around the separators
/// and around the whole, minor spaces possibly swapped.
fn lenient(n: &NotatedMove, rng: &mut StdRng) -> String {
    let (a, sep, b, minors) = match *n {
        NotatedMove::Place {
            code,
            punct,
            minors,
        } => (code.to_string(), '@', punct.to_string(), minors),
        NotatedMove::Shift { from, to, minors } => (from.to_string(), '>', to.to_string(), minors),
    };
    let [m1, m2] = if rng.random_bool(0.5) {
        [minors[1], minors[0]]
    } else {
        minors
    };
    const PADS: [&str; 4] = ["", " ", "  ", "\t"];
    let words = [
        a,
        sep.to_string(),
        b,
        ":".into(),
        m1.to_string(),
        ",".into(),
        m2.to_string(),
    ];
    let mut out = String::from(PADS[rng.random_range(0..4)]);
    for w in words {
        out.push_str(&if rng.random_bool(0.5) {
            w.to_lowercase()
        } else {
            w
        });
        out.push_str(PADS[rng.random_range(0..4)]);
    }
    out
}

/// Canonical order of spaces: by column, then by row (docs/rules/punct.md §7).
fn before_in_canonical_order(a: Space, b: Space) -> bool {
    (a.x(), a.y()) < (b.x(), b.y())
}

proptest! {
    #![proptest_config(config(384))]

    /// For legal moves of random positions: parse(format(n)) == n, format is a
    /// fixed point, the notation resolves back to the move, and lenient
    /// spellings parse to the same move.
    #[test]
    fn notation_round_trips(w in running_walk(140), seed in any::<u64>()) {
        let game = play_walk(&w, |_, _| {});
        let pos = *game.position();
        let moves = game.legal_moves();
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..moves.len().min(150) {
            let m = moves[rng.random_range(0..moves.len())];
            let n = pos.notate(m).unwrap();
            let text = n.to_string();
            prop_assert_eq!(text.parse::<NotatedMove>(), Ok(n));
            prop_assert_eq!(text.parse::<NotatedMove>().unwrap().to_string(), text.clone());
            prop_assert_eq!(pos.resolve(n), Ok(m));
            prop_assert_eq!(game.parse_move(&text), Ok(m));
            let minors = match n {
                NotatedMove::Place { code, minors, .. } => {
                    let prefix = format!("{code}@");
                    prop_assert!(text.starts_with(&prefix), "{}", text);
                    minors
                }
                NotatedMove::Shift { from, minors, .. } => {
                    let prefix = format!("{from}>");
                    prop_assert!(text.starts_with(&prefix), "{}", text);
                    minors
                }
            };
            prop_assert!(before_in_canonical_order(minors[0], minors[1]), "{}", text);
            let suffix = format!(":{},{}", minors[0], minors[1]);
            prop_assert!(text.ends_with(&suffix), "{}", text);
            prop_assert_eq!(text.to_uppercase(), text.clone());
            for _ in 0..3 {
                let loose = lenient(&n, &mut rng);
                prop_assert_eq!(loose.parse::<NotatedMove>(), Ok(n), "{:?}", loose);
                prop_assert_eq!(game.parse_move(&loose), Ok(m), "{:?}", loose);
            }
        }
    }
}

proptest! {
    #![proptest_config(config(2048))]

    /// Position-free text: any code or two spaces and two minor spaces, in any
    /// spelling, parse to the move written canonically (or are refused because
    /// the minor spaces repeat).
    #[test]
    fn notation_text_is_canonicalised(
        place in any::<bool>(),
        code in 0usize..6,
        spaces in any::<[u16; 4]>(),
        seed in any::<u64>(),
    ) {
        let [a, b, m1, m2] = spaces.map(space);
        let mut rng = StdRng::seed_from_u64(seed);
        let n = if place {
            NotatedMove::Place { code: PieceCode::ALL[code], punct: b, minors: [m1, m2] }
        } else {
            NotatedMove::Shift { from: a, to: b, minors: [m1, m2] }
        };
        let loose = lenient(&n, &mut rng);
        let (lo, hi) = if before_in_canonical_order(m2, m1) { (m2, m1) } else { (m1, m2) };
        let head = if place {
            format!("{}@{b}", PieceCode::ALL[code])
        } else {
            format!("{a}>{b}")
        };
        let parsed = loose.parse::<NotatedMove>();
        if m1 == m2 {
            prop_assert!(parsed.is_err());
        } else {
            prop_assert_eq!(parsed.unwrap().to_string(), format!("{head}:{lo},{hi}"), "{:?}", loose);
        }
    }
}

proptest! {
    #![proptest_config(config(4096))]

    /// Garbage never panics the move or record parsers; a parsed move's text
    /// parses to the same move.
    #[test]
    fn garbage_never_panics(
        text in prop_oneof![
            any::<String>(),
            proptest::collection::vec(any::<u8>(), 0..120)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            "[A-Qa-r0-9@>:, \t#TSEMALRÜ\u{0301}\n-]{0,40}",
            "(game: punct\n)?([a-z_]{1,12}: [ -~]{0,12}\n){0,4}\n?([A-Qa-q0-9@>:,T ]{0,16}\n){0,4}",
        ],
    ) {
        if let Ok(n) = text.parse::<NotatedMove>() {
            prop_assert_eq!(n.to_string().parse::<NotatedMove>(), Ok(n));
        }
        let start = Engine::new(RuleOptions::default());
        let mut g = start.clone();
        let _ = g.parse_move(&text);
        if g.play_notation(&text).is_err() {
            prop_assert_eq!(snapshot(&g), snapshot(&start));
        }
        if let Ok(record) = text.parse::<GameRecord>() {
            let _ = record.to_string();
            let _ = record.replay();
        }
        let _ = Engine::from_record_text(&text);
    }
}

// ---------------------------------------------------------------------------
// Game records
// ---------------------------------------------------------------------------

const RECORD_KEYS: [&str; 6] = [
    "game",
    "variant",
    "end_on_supply",
    "max_plies",
    "repetition_limit",
    "result",
];

fn tag() -> impl Strategy<Value = (String, String)> {
    (
        "[a-z][a-z0-9_-]{0,10}"
            .prop_filter("not a record key", |k| !RECORD_KEYS.contains(&k.as_str())),
        // Single line, trimmed, non-empty, printable (any script).
        "[^\\s\\p{C}]([^\\r\\n\\p{C}]{0,30}[^\\s\\p{C}])?",
    )
}

proptest! {
    #![proptest_config(config(512))]

    /// parse(format(record)) == record for random games with random options
    /// and tags, and replaying the record reproduces the game.
    #[test]
    fn records_round_trip_and_replay(
        variant in variant(),
        end_on_supply in end_on_supply(),
        max_plies in prop_oneof![Just(1000u32), Just(0), 1u32..150],
        repetition_limit in prop_oneof![Just(3u32), 0u32..5],
        seed in any::<u64>(),
        plies in 0u32..260,
        shift_percent in 0u32..=95,
        tags in proptest::collection::vec(tag(), 0..5),
    ) {
        let options = RuleOptions { variant, end_on_supply, max_plies, repetition_limit };
        let w = Walk { options, seed, plies, shift_percent, keep_running: false };
        let game = play_walk(&w, |_, _| {});
        let mut record = game.record();
        prop_assert_eq!(record.options, options);
        prop_assert_eq!(record.moves.len(), game.moves().len());
        prop_assert_eq!(record.result.is_some(), game.is_over());
        record.tags = tags;
        let text = record.to_string();
        let parsed: GameRecord = text.parse().unwrap();
        prop_assert_eq!(&parsed, &record, "{}", text);
        prop_assert_eq!(parsed.to_string(), text.clone());
        for replayed in [parsed.replay().unwrap(), Engine::from_record_text(&text).unwrap()] {
            prop_assert_eq!(replayed.position().key(), game.position().key());
            prop_assert_eq!(replayed.position().ply(), game.position().ply());
            prop_assert_eq!(replayed.moves(), game.moves());
            prop_assert_eq!(replayed.outcome(), game.outcome());
            prop_assert_eq!(replayed.options(), options);
        }
    }
}

// ---------------------------------------------------------------------------
// Complete random games
// ---------------------------------------------------------------------------

/// Random games per combination of variant and end_on_supply: 4 × 500 = 2000
/// complete games with the default max_plies (1000) and repetition limit (3).
/// They take about 6 s in release on the 2-CPU development machine (the whole
/// file 11–20 s there), so the full 2000 fit the ~60 s budget.
const GAMES_PER_OPTIONS: u64 = 500;

/// Checks the outcome (or its absence) after `mover` played `last`.
/// `seen` is how often the current position has occurred since the last
/// placement.
fn check_outcome(game: &Engine, mover: Colour, last: Move, seen: u32) -> Result<(), String> {
    let pos = game.position();
    let options = game.options();
    let connected = |c: Colour| pos.connection(c);
    let supply_over = matches!(last, Move::Place { .. })
        && match options.end_on_supply {
            EndOnSupply::FirstExhausted => pos.supply_total(mover) == 0,
            EndOnSupply::BothExhausted => Colour::BOTH.iter().all(|&c| pos.supply_total(c) == 0),
        };
    let repeated = options.repetition_limit > 0 && seen >= options.repetition_limit;
    let limit = options.max_plies > 0 && pos.ply() >= options.max_plies;
    let Some(o) = game.outcome() else {
        if connected(Colour::White).is_some() || connected(Colour::Black).is_some() {
            return Err("a connection on the board but the game goes on".into());
        }
        if supply_over || repeated || limit {
            return Err("the supply, repetition or move limit should have ended the game".into());
        }
        return Ok(());
    };
    let no_connection = connected(Colour::White).is_none() && connected(Colour::Black).is_none();
    let ok = match o.reason {
        EndReason::Connection => match o.winner {
            Some(w) => {
                let mover_wins = connected(mover).is_some();
                connected(w).is_some_and(|c| o.sides == Some(c.sides))
                    && (w == mover || !mover_wins)
            }
            None => false,
        },
        EndReason::LastPiece => {
            options.variant == Variant::Basic && o.winner.is_none() && supply_over && no_connection
        }
        EndReason::CenterCount => {
            let count = pos.centre_count();
            let winner = match count[0].cmp(&count[1]) {
                std::cmp::Ordering::Greater => Some(Colour::White),
                std::cmp::Ordering::Less => Some(Colour::Black),
                std::cmp::Ordering::Equal => None,
            };
            options.variant == Variant::Standard
                && supply_over
                && no_connection
                && o.winner == winner
                && o.centre_count == Some(count)
        }
        EndReason::Repetition => o.winner.is_none() && no_connection && !supply_over && repeated,
        EndReason::MoveLimit => {
            o.winner.is_none() && no_connection && !supply_over && !repeated && limit
        }
        EndReason::NoLegalMove => {
            o.winner.is_none()
                && no_connection
                && !supply_over
                && !repeated
                && !limit
                && pos.count_legal_moves(options.variant) == 0
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("outcome {o:?} is not consistent with the position"))
    }
}

/// Thousands of complete random games (uniform over the legal moves) end with
/// a consistent outcome, never panic, and accept no move after the end.
#[test]
fn random_games_end_with_a_valid_outcome() {
    let started = std::time::Instant::now();
    let mut reasons: HashMap<String, u32> = HashMap::new();
    let mut plies = 0u64;
    for variant in [Variant::Standard, Variant::Basic] {
        for end_on_supply in [EndOnSupply::FirstExhausted, EndOnSupply::BothExhausted] {
            let options = RuleOptions {
                variant,
                end_on_supply,
                ..RuleOptions::default()
            };
            for i in 0..GAMES_PER_OPTIONS {
                let seed = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i + 1)
                    ^ ((variant as u64) << 8)
                    ^ (end_on_supply as u64);
                let mut rng = StdRng::seed_from_u64(seed);
                let mut game = Engine::new(options);
                let mut seen: HashMap<PositionKey, u32> = HashMap::new();
                seen.insert(game.position().key(), 1);
                let mut last_moves = Vec::new();
                while !game.is_over() {
                    let moves = game.legal_moves();
                    assert!(
                        !moves.is_empty(),
                        "seed {seed}: no legal move but no outcome"
                    );
                    let m = moves[rng.random_range(0..moves.len())];
                    let mover = game.position().to_move();
                    let notation = game.position().notate(m);
                    let played = game
                        .play(m)
                        .unwrap_or_else(|e| panic!("seed {seed}: generated {m:?} refused: {e}"));
                    assert_eq!(Some(played.notation), notation);
                    assert_eq!(played.outcome, game.outcome());
                    if let Err(e) = game.position().check_invariants() {
                        panic!("seed {seed}: {e}\n{}", game.record());
                    }
                    if !is_shift(&m) {
                        seen.clear();
                    }
                    let count = seen.entry(game.position().key()).or_insert(0);
                    *count += 1;
                    if let Err(e) = check_outcome(&game, mover, m, *count) {
                        let record = game.record();
                        panic!("seed {seed}: {e}\n{record}");
                    }
                    last_moves = moves;
                }
                // No move is accepted after the end.
                let outcome = game.outcome().unwrap();
                assert!(game.legal_moves().is_empty());
                let before = snapshot(&game);
                for &m in last_moves.iter().take(20) {
                    assert_eq!(game.validate(m), Err(IllegalMove::GameOver));
                    assert_eq!(game.play(m), Err(IllegalMove::GameOver));
                }
                assert!(game.play_notation("SE@E5:F5,G5").is_err());
                assert_eq!(snapshot(&game), before);
                plies += u64::from(game.position().ply());
                *reasons
                    .entry(format!("{variant}/{end_on_supply}: {}", outcome.reason))
                    .or_default() += 1;
            }
        }
    }
    let mut summary: Vec<_> = reasons.into_iter().collect();
    summary.sort();
    eprintln!(
        "{} games, {plies} plies in {:.1?}: {summary:?}",
        4 * GAMES_PER_OPTIONS,
        started.elapsed()
    );
}
