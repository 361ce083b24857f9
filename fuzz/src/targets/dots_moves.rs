//! Random Dots games from bytes (`docs/rules/dots.md` §12's invariants after
//! every move). The first five bytes choose the options (width and height
//! 4..=14, the start, a move limit or none, the seed of the four crosses);
//! then each pair of bytes makes one move: mostly one of the legal
//! placements, sometimes a point anywhere (off the field, on a dot, on a
//! held cell: a candidate that may be illegal), rarely `ground`.
//!
//! Checked after every move, through the session layer's game (what the
//! service plays) and the engine under it: a refused candidate is refused by
//! the engine's check for the same reason and changes nothing; an accepted
//! move advances the ply and the turn, puts the mover's dot there, notates
//! canonically and says what it did: the captured, lost, freed and regained
//! dots equal the difference of the cells before and after it, and the
//! scores are the enemy dots each player holds, counted cell by cell; no dot
//! is held by its own colour; markers lie only on playable cells; a cell once
//! held never becomes playable again; the legal list is every playable cell
//! then `ground`; the game ends exactly when the field is full, on `ground`
//! or at the move limit, with the winner the scores give; a finished game
//! has no legal move and refuses moves; and the record replays (engine and
//! import) to the same game.

use std::collections::BTreeSet;

use super::observable;
use punct_referee::games::dots::referee::{DotsGame, DotsMoveInfo, import};
use punct_referee::games::dots::{
    Colour, EndReason, Engine, IllegalMove, Move, Outcome, Point, Record, RuleOptions, Start,
};
use punct_referee::games::{Game, MoveError, MoveInput, Setup, Viewer};

/// Every cell's point, row by row.
fn points(engine: &Engine) -> Vec<Point> {
    let (w, h) = (engine.field().width(), engine.field().height());
    (1..=u16::from(h))
        .flat_map(|y| (1..=u16::from(w)).map(move |x| Point::new(x, y)))
        .collect()
}

/// The dots of `owner` the other player holds, cell by cell.
fn held_dots(engine: &Engine, owner: Colour) -> BTreeSet<Point> {
    points(engine)
        .into_iter()
        .filter(|&p| {
            let cell = engine.field().cell(p);
            cell.dot == Some(owner) && cell.holder.is_some()
        })
        .collect()
}

fn set(list: &[Point]) -> BTreeSet<Point> {
    let out: BTreeSet<Point> = list.iter().copied().collect();
    assert_eq!(out.len(), list.len(), "a point listed twice: {list:?}");
    out
}

/// The position's invariants; `held_ever` carries the cells held so far.
fn check_position(engine: &Engine, held_ever: &mut BTreeSet<Point>) {
    let mut scores = [0u32; 2];
    let mut playable = 0u32;
    for p in points(engine) {
        let cell = engine.field().cell(p);
        if let (Some(dot), Some(holder)) = (cell.dot, cell.holder) {
            assert_ne!(dot, holder, "{p}: a dot held by its own colour");
            scores[holder.index()] += 1;
        }
        if cell.marker.is_some() {
            assert!(
                cell.dot.is_none() && cell.holder.is_none(),
                "{p}: a marker off a playable cell"
            );
        }
        if cell.holder.is_some() {
            held_ever.insert(p);
        }
        if held_ever.contains(&p) {
            assert!(
                cell.holder.is_some() || cell.dot.is_some(),
                "{p} was held and is free again"
            );
            assert!(engine.check(Move::Place(p)).is_err(), "{p}: held, playable");
        }
        if cell.dot.is_none() && cell.holder.is_none() {
            playable += 1;
        }
    }
    assert_eq!(engine.scores(), scores, "scores are the held enemy dots");
    assert_eq!(engine.field().playable().len(), playable);
    let legal = engine.legal_moves();
    if engine.is_over() {
        assert!(legal.is_empty(), "a finished game lists moves");
    } else {
        assert_eq!(legal.len() as u32, playable + 1);
        assert_eq!(legal.last(), Some(&Move::Ground));
    }
}

/// The options from the first bytes.
fn options(head: &[u8; 5]) -> (RuleOptions, Option<Setup>) {
    let start = Start::ALL[usize::from(head[2] % 4)];
    let (min_w, min_h) = start.min_size();
    let width = (4 + head[0] % 11).max(min_w);
    let height = (4 + head[1] % 11).max(min_h);
    // A limit in one game of four, often before the field fills.
    let max_moves = if head[3].is_multiple_of(4) {
        u32::from(head[3] / 4) + 1
    } else {
        0
    };
    let options = RuleOptions::new(width, height, start, max_moves).expect("options in range");
    let setup = start.needs_seed().then(|| Setup {
        seed: [head[4]; 32],
        supplied: true,
    });
    (options, setup)
}

fn input(mv: Move) -> MoveInput {
    MoveInput::new(mv)
}

fn reason(e: &MoveError) -> &'static str {
    match e {
        MoveError::Illegal { reason, .. } => reason,
        MoveError::Malformed { field, .. } => panic!("a well-formed move is malformed ({field})"),
    }
}

fn check_end(engine: &Engine, mv: Move, outcome: Option<Outcome>) {
    let full = engine.field().playable().is_empty();
    let limit = engine.options().max_moves();
    let at_limit = limit > 0 && engine.ply() >= limit;
    let expected = match mv {
        Move::Ground => Some(EndReason::Ground),
        Move::Place(_) if full => Some(EndReason::Full),
        Move::Place(_) if at_limit => Some(EndReason::MoveLimit),
        Move::Place(_) => None,
    };
    assert_eq!(outcome.map(|o| o.reason), expected, "after {mv}");
    assert_eq!(engine.outcome(), outcome);
    if let Some(o) = outcome {
        let by_score = Outcome::by_score(o.reason, engine.scores());
        assert_eq!(o, by_score, "the winner the scores give");
    }
}

/// One input, checked; panics on a finding.
pub fn run(data: &[u8]) {
    let Some((head, moves)) = data.split_first_chunk::<5>() else {
        return;
    };
    let (options, setup) = options(head);
    let mut game = DotsGame::new(options, setup);
    let mut held_ever = BTreeSet::new();
    check_position(game.game(), &mut held_ever);

    for pair in moves.chunks_exact(2) {
        let (a, b) = (pair[0], pair[1]);
        let before = game.clone();
        let engine = before.game();
        let legal = engine.legal_moves();
        let mv = if a >= 252 {
            Move::Ground
        } else if a % 8 == 0 {
            // Anywhere, the field's rim and one past it included.
            Move::Place(Point::new(u16::from(a / 8 % 16), u16::from(b % 16)))
        } else if legal.len() > 1 {
            let i = usize::from(u16::from_be_bytes([a, b])) % (legal.len() - 1);
            legal[i]
        } else {
            Move::Place(Point::new(u16::from(b % 16), u16::from(a % 16)))
        };
        let check = engine.check(mv);
        let mover = engine.to_move();
        match game.play(&input(mv)) {
            Err(e) => {
                let expected = check.expect_err("checked legal, refused");
                assert_eq!(reason(&e), expected.reason(), "{mv}");
                assert!(!legal.contains(&mv), "listed {mv} refused");
                assert_eq!(
                    game.game(),
                    before.game(),
                    "a refused move changed the game"
                );
                assert_eq!(observable(&game), observable(&before));
                let mut copy = before.game().clone();
                assert_eq!(copy.play(mv), Err(expected));
                assert_eq!(&copy, before.game());
                if engine.is_over() {
                    assert_eq!(expected, IllegalMove::GameOver);
                }
            }
            Ok(report) => {
                assert!(check.is_ok(), "{mv}: checked {check:?}, played");
                assert!(legal.contains(&mv), "{mv} played, not listed");
                let after = game.game();
                assert_eq!(
                    (report.ply, after.ply()),
                    (engine.ply() + 1, engine.ply() + 1)
                );
                assert_eq!(after.to_move(), mover.other());
                assert_eq!(report.detail.notation, mv.to_string());
                assert_eq!(report.detail.notation.parse::<Move>(), Ok(mv));
                if let Move::Place(p) = mv {
                    assert_eq!(after.field().cell(p).dot, Some(mover), "{mv}");
                }
                let info = report.detail.get::<DotsMoveInfo>().expect("a Dots move");
                assert_eq!((info.mv, info.colour), (mv, mover));
                let effect = info.effect.as_ref().expect("a played move's effect");
                let enemy = mover.other();
                let newly = |c| &held_dots(after, c) - &held_dots(engine, c);
                let released = |c| &held_dots(engine, c) - &held_dots(after, c);
                assert_eq!(set(&effect.captured), newly(enemy), "captured by {mv}");
                assert_eq!(set(&effect.lost), newly(mover), "lost by {mv}");
                assert_eq!(set(&effect.freed), released(mover), "freed by {mv}");
                assert_eq!(set(&effect.regained), released(enemy), "regained by {mv}");
                assert_eq!(effect.scores, after.scores());
                for e in &effect.enclosures {
                    assert!(!e.chain.is_empty(), "an enclosure without a wall");
                }
                check_end(after, mv, after.outcome());
                assert_eq!(report.outcome.is_some(), after.is_over());
            }
        }
        check_position(game.game(), &mut held_ever);
        if game.game().is_over() && a % 2 == 0 {
            break;
        }
    }

    // The record replays to the same game: the engine's reader, and the
    // import behind ImportGame (with the server's seed when unfinished).
    let engine = game.game();
    let text = Record::of(engine, true).to_string();
    let record = Record::parse(&text).expect("a written record reads");
    assert_eq!(
        &record.replay(None).expect("a written record replays"),
        engine
    );
    let exported = game.record(&[], Viewer::Spectator);
    let imported = import(&exported, game.setup())
        .unwrap_or_else(|e| panic!("an exported record does not import: {e}\n---\n{exported}"));
    assert_eq!(observable(imported.game.as_ref()), observable(&game));
}
