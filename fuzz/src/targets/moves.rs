//! Random move sequences against the engine's invariants. The first byte
//! picks the rule options (variant, end of supply, small move and repetition
//! limits so that every ending is reachable); then each pair of bytes picks
//! one of the legal moves, and a third a well-formed candidate that may be
//! illegal. After every move: the engine's `check_invariants`, the position
//! equals its rebuild from the pieces (`Position::from_pieces`), ply, turn and
//! supply accounting, the move's notation resolves back to it; a refused
//! candidate changes nothing; generation and validation agree on the
//! candidate; a finished game has no legal move and refuses every move; the
//! game's record replays to the same game.

use punct_referee::games::punct::{
    EndOnSupply, Engine, IllegalMove, Move, PieceCode, Position, RuleOptions, Space, Variant,
};

/// One input, checked; panics on a finding.
pub fn run(data: &[u8]) {
    let Some((&head, mut rest)) = data.split_first() else {
        return;
    };
    let options = RuleOptions {
        variant: if head & 1 == 0 {
            Variant::Standard
        } else {
            Variant::Basic
        },
        end_on_supply: if head & 2 == 0 {
            EndOnSupply::FirstExhausted
        } else {
            EndOnSupply::BothExhausted
        },
        // 0 (off), or a short limit so that the ending is reached.
        max_plies: [0, 1000, 12, 40][usize::from(head >> 2 & 3)],
        repetition_limit: [3, 0, 2, 3][usize::from(head >> 4 & 3)],
    };
    let mut game = Engine::new(options);
    while let [a, b, c, tail @ ..] = rest {
        rest = tail;
        let legal = game.legal_moves();
        if game.is_over() {
            break;
        }
        assert!(
            !legal.is_empty(),
            "no legal move, but the game goes on\n{}",
            game.record()
        );
        check_candidate(&game, &legal, candidate(game.position(), *a, *b, *c));
        let mv = legal[usize::from(u16::from_le_bytes([*a, *b])) % legal.len()];
        play_checked(&mut game, mv);
    }
    if game.is_over() {
        assert!(game.legal_moves().is_empty());
        let before = game.clone();
        let mv = Move::Place {
            code: PieceCode::T,
            punct: "E5".parse().unwrap(),
            rotation: 0,
        };
        assert_eq!(game.play(mv), Err(IllegalMove::GameOver));
        assert_eq!(game.position(), before.position());
    }
    // The record replays to the same game.
    let text = game.record().to_string();
    let replayed = Engine::from_record_text(&text)
        .unwrap_or_else(|e| panic!("the game's own record does not replay: {e}\n{text}"));
    assert_eq!(replayed.position(), game.position());
    assert_eq!(replayed.moves(), game.moves());
    assert_eq!(replayed.outcome(), game.outcome());
}

/// A well-formed move built from three bytes: a placement anywhere, or a shift
/// from a space of the mover's pieces (or anywhere) to any space.
fn candidate(pos: &Position, a: u8, b: u8, c: u8) -> Move {
    let space = |i: u8, j: u8| {
        Space::from_index(usize::from(u16::from_le_bytes([i, j])) % 211).expect("below 211")
    };
    let rotation = c % 6;
    if c & 0x80 == 0 {
        return Move::Place {
            code: PieceCode::ALL[usize::from(a) % 6],
            punct: space(b, c >> 3),
            rotation,
        };
    }
    let me = pos.to_move();
    let own: Vec<Space> = pos
        .pieces_on_board()
        .filter(|p| p.id.colour() == me)
        .flat_map(|p| p.spaces)
        .collect();
    let from = if c & 0x40 == 0 && !own.is_empty() {
        own[usize::from(a) % own.len()]
    } else {
        space(a, c)
    };
    Move::Shift {
        from,
        to: space(b, a),
        rotation,
    }
}

/// Validation and generation agree on `mv` (up to the canonical rotation of
/// symmetric pieces, compared by notation); a refused move changes nothing
/// and `play` refuses it for the same reason.
fn check_candidate(game: &Engine, legal: &[Move], mv: Move) {
    let pos = game.position();
    match game.validate(mv) {
        Ok(_) => {
            // Generation lists one rotation of symmetric pieces: compare the
            // notation of the generated moves with the same origin and PÜNCT.
            let n = pos.notate(mv).expect("a valid move has a notation");
            let same_place = |m: &Move| match (m, mv) {
                (
                    Move::Place { code, punct, .. },
                    Move::Place {
                        code: c, punct: p, ..
                    },
                ) => *code == c && *punct == p,
                (Move::Shift { from, to, .. }, Move::Shift { from: f, to: t, .. }) => {
                    *from == f && *to == t
                }
                _ => false,
            };
            assert!(
                legal
                    .iter()
                    .filter(|m| same_place(m))
                    .any(|&m| pos.notate(m) == Some(n)),
                "{mv:?} validates but is not generated"
            );
        }
        Err(e) => {
            assert!(!legal.contains(&mv), "{mv:?} is generated but refused: {e}");
            let mut g = game.clone();
            assert_eq!(g.play(mv).map(|_| ()), Err(e));
            assert_eq!(g.position(), pos, "a refused move changed the position");
            assert_eq!(g.moves(), game.moves());
            assert_eq!(g.outcome(), game.outcome());
        }
    }
}

/// Plays a generated move and checks everything that must hold after it.
fn play_checked(game: &mut Engine, mv: Move) {
    let before = *game.position();
    let me = before.to_move();
    assert!(
        game.validate(mv).is_ok(),
        "generated {mv:?} does not validate"
    );
    let notated = before.notate(mv).expect("a legal move has a notation");
    assert_eq!(
        before.resolve(notated).ok().and_then(|m| before.notate(m)),
        Some(notated)
    );
    let played = game
        .play(mv)
        .unwrap_or_else(|e| panic!("generated {mv:?} refused: {e}\n{}", game.record()));
    assert_eq!(played.notation, notated);
    assert_eq!(played.outcome, game.outcome());
    let after = game.position();
    after
        .check_invariants()
        .unwrap_or_else(|e| panic!("{e}\n{}", game.record()));
    assert_eq!(after.ply(), before.ply() + 1);
    assert_eq!(after.to_move(), me.opponent());
    let placed = u8::from(matches!(mv, Move::Place { .. }));
    assert_eq!(after.supply_total(me) + placed, before.supply_total(me));
    assert_eq!(
        after.supply_total(me.opponent()),
        before.supply_total(me.opponent())
    );
    // The same position rebuilt from its pieces, lowest first.
    let mut pieces: Vec<_> = after.pieces_on_board().collect();
    pieces.sort_by_key(|p| p.placement.level);
    let list: Vec<_> = pieces
        .iter()
        .map(|p| {
            (
                p.id.colour(),
                p.id.code(),
                p.placement.punct,
                p.placement.rotation,
                p.placement.level,
            )
        })
        .collect();
    let rebuilt = Position::from_pieces(&list, after.to_move(), after.ply())
        .unwrap_or_else(|e| panic!("the position cannot be rebuilt: {e}"));
    assert_eq!(
        rebuilt.key(),
        after.key(),
        "the position differs from its rebuild"
    );
    assert_eq!(rebuilt.hash64(), after.hash64());
    // The mover's PÜNCT is on top where the notation says.
    let (punct, minors) = match notated {
        punct_referee::games::punct::NotatedMove::Place { punct, minors, .. } => (punct, minors),
        punct_referee::games::punct::NotatedMove::Shift { to, minors, .. } => (to, minors),
    };
    let id = after
        .punct_on_top(punct)
        .expect("the PÜNCT is on top after a move");
    assert_eq!(id.colour(), me);
    for s in minors {
        assert_eq!(after.top_piece(s), Some(id));
    }
}
