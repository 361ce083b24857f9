//! Dots (issue 13) through the real server: whole games over gRPC seen by a
//! watcher, the `ground` stop move, what each move captured against the
//! difference of the states before and after it, option refusals, notation
//! and structured moves, records (ImportGame, ExportGame, ValidateMove),
//! RenderPosition and the spectator's JSON and pictures.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use punct_referee::service::grpc::pb::dots::v1 as dpb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tonic::Code;
use tonic_types::StatusExt;

/// docs/rules/dots.md §11.A on 5 × 5: Red's seventh move captures Blue's 3,3.
const EXAMPLE_A: [&str; 7] = ["3,2", "3,3", "2,3", "1,1", "4,3", "1,2", "3,4"];

/// On 5 × 5, Red's eleventh move walls in 3,3 (Blue) and the empty 3,4:
/// 3,4 is then held, playable by nobody.
const HOLDS_3_4: [&str; 11] = [
    "3,2", "3,3", "2,3", "1,1", "4,3", "5,1", "2,4", "1,5", "4,4", "5,5", "3,5",
];

/// Seats of Dots: 1 is Red (moves first), 2 is Blue.
const RED: u32 = 1;
const BLUE: u32 = 2;

fn dots_rules(width: u32, height: u32, start: dpb::Start, max_moves: u32) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width,
            height,
            start: start as i32,
            max_moves,
        })),
    }
}

fn dots_move(m: dpb::Move) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Dots(Box::new(m))),
    }
}

/// A move in notation.
fn text(notation: &str) -> pb::Move {
    dots_move(dpb::Move {
        notation: notation.to_string(),
        ..Default::default()
    })
}

/// A structured placement at `x,y`.
fn at(x: u32, y: u32) -> pb::Move {
    dots_move(dpb::Move {
        action: Some(dpb::r#move::Action::Place(dpb::Point { x, y })),
        ..Default::default()
    })
}

/// The structured stop move.
fn ground() -> pb::Move {
    dots_move(dpb::Move {
        action: Some(dpb::r#move::Action::Ground(dpb::Ground {})),
        ..Default::default()
    })
}

/// The structured form of a notation `x,y`.
fn structured(notation: &str) -> pb::Move {
    let (x, y) = notation.split_once(',').expect("x,y");
    at(x.parse().unwrap(), y.parse().unwrap())
}

fn dots_of(m: &pb::Move) -> &dpb::Move {
    match m.game.as_ref().expect("a game member") {
        pb::r#move::Game::Dots(d) => d,
        other => panic!("not a Dots move: {other:?}"),
    }
}

fn dots_state(g: &pb::Game) -> &dpb::GameState {
    match g.state.as_ref().and_then(|s| s.game.as_ref()) {
        Some(pb::game_state::Game::Dots(s)) => s,
        other => panic!("not a Dots state: {other:?}"),
    }
}

fn dots_outcome(o: &pb::Outcome) -> &dpb::OutcomeDetail {
    match o.detail.as_ref() {
        Some(pb::outcome::Detail::Dots(d)) => d,
        other => panic!("not a Dots outcome: {other:?}"),
    }
}

fn notation_of(p: &dpb::Point) -> String {
    format!("{},{}", p.x, p.y)
}

fn points(list: &[dpb::Point]) -> BTreeSet<String> {
    list.iter().map(notation_of).collect()
}

/// The dots of `owner` that are captured in `state`.
fn captured(state: &dpb::GameState, owner: dpb::Colour) -> BTreeSet<String> {
    state
        .dots
        .iter()
        .filter(|d| d.owner == owner as i32 && d.captured)
        .map(|d| notation_of(d.point.as_ref().unwrap()))
        .collect()
}

async fn create_dots(client: &mut Client, rules: pb::GameRules, seed: &str) -> Table {
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules),
            seed: seed.to_string(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let game = r.game.clone().expect("game");
    let names: Vec<_> = r.seats.iter().map(|s| (s.seat, s.name.as_str())).collect();
    assert_eq!(names, [(RED, "red"), (BLUE, "blue")]);
    table_of(game, &r.seats)
}

async fn legal(client: &mut Client, id: &str) -> pb::ListLegalMovesResponse {
    client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: id.to_string(),
            seat: 0,
            token: String::new(),
            ..Default::default()
        })
        .await
        .expect("legal moves")
        .into_inner()
}

/// Checks that `effect` is exactly the difference of the captured dots of
/// `before` and `after` for a move of `mover`, and that the scores are the
/// captured dots counted from the state.
fn check_effect(
    mover: dpb::Colour,
    effect: &dpb::MoveEffect,
    before: &dpb::GameState,
    after: &dpb::GameState,
) {
    let enemy = match mover {
        dpb::Colour::Red => dpb::Colour::Blue,
        _ => dpb::Colour::Red,
    };
    let newly = |c| &captured(after, c) - &captured(before, c);
    let released = |c| &captured(before, c) - &captured(after, c);
    assert_eq!(points(&effect.captured), newly(enemy), "captured");
    assert_eq!(points(&effect.lost), newly(mover), "lost");
    assert_eq!(points(&effect.freed), released(mover), "freed");
    assert_eq!(points(&effect.regained), released(enemy), "regained");
    let counted = vec![
        captured(after, dpb::Colour::Blue).len() as u32,
        captured(after, dpb::Colour::Red).len() as u32,
    ];
    assert_eq!(after.scores, counted, "scores counted from the dots");
    assert_eq!(effect.scores, after.scores, "the move's scores");
}

#[tokio::test]
async fn a_game_played_to_a_full_field_matches_its_watcher_and_its_states() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create_dots(&mut client, dots_rules(5, 5, dpb::Start::Empty, 0), "").await;
    let mut watch = client
        .watch_game(pb::WatchGameRequest {
            game_id: table.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();

    // §11.A first (notation and structured in turn), then the first legal
    // point in notation order until the field is full.
    let mut applied = Vec::new();
    let mut ply = 0u32;
    let mut before = get(&mut client, &table.id).await;
    let mut capture_seen = false;
    let outcome = loop {
        let mv = match EXAMPLE_A.get(ply as usize) {
            Some(t) if ply.is_multiple_of(2) => text(t),
            Some(t) => structured(t),
            None => {
                let l = legal(&mut client, &table.id).await;
                assert_eq!(l.ply, ply);
                let last = dots_of(l.moves.last().unwrap());
                assert_eq!(last.notation, "ground", "ground sorts last");
                assert_eq!(last.kind, dpb::MoveKind::Ground as i32);
                assert!(last.effect.is_none(), "a listed move has no effect");
                text(&dots_of(&l.moves[0]).notation)
            }
        };
        let r = submit(&mut client, &table, ply, mv).await.expect("legal");
        ply += 1;
        assert_eq!(r.ply, ply);
        let m = dots_of(r.r#move.as_ref().unwrap()).clone();
        let mover = if r.seat == RED {
            dpb::Colour::Red
        } else {
            dpb::Colour::Blue
        };
        assert_eq!(m.colour, mover as i32);
        assert_eq!(m.kind, dpb::MoveKind::Place as i32);
        let after = get(&mut client, &table.id).await;
        check_effect(
            mover,
            m.effect.as_ref().expect("an effect"),
            dots_state(&before),
            dots_state(&after),
        );
        if ply == 7 {
            // §11.A: Red's seventh move captures 3,3 (score 1–0).
            let effect = m.effect.as_ref().unwrap();
            assert_eq!(points(&effect.captured), BTreeSet::from(["3,3".into()]));
            assert_eq!(effect.regions, 1);
            assert_eq!(effect.enclosures.len(), 1);
            let chain = points(&effect.enclosures[0].chain);
            let wall: BTreeSet<String> = ["3,2", "2,3", "4,3", "3,4"].map(String::from).into();
            assert_eq!(chain, wall);
            assert_eq!(
                dots_state(&after).position,
                "B....\nB.R..\n.RbR.\n..R..\n.....\n"
            );
            assert_eq!(dots_state(&after).enclosures.len(), 1);
        }
        capture_seen |= !m.effect.as_ref().unwrap().captured.is_empty();
        applied.push(m);
        before = after;
        if let Some(outcome) = r.outcome {
            assert_eq!(r.status, pb::GameStatus::Finished as i32);
            assert_eq!(r.to_move, NO_SEAT);
            break outcome;
        }
        assert_eq!(r.to_move, if r.seat == RED { BLUE } else { RED });
    };
    assert!(capture_seen);
    assert_eq!(outcome.reason, "FULL");
    let detail = dots_outcome(&outcome);
    assert_eq!(detail.end, "full");
    let state = dots_state(&before);
    assert_eq!(
        outcome.scores,
        state
            .scores
            .iter()
            .map(|&s| i64::from(s))
            .collect::<Vec<_>>()
    );
    assert_eq!(detail.scores, state.scores);
    let expected_winners = match state.scores[0].cmp(&state.scores[1]) {
        std::cmp::Ordering::Greater => vec![RED],
        std::cmp::Ordering::Less => vec![BLUE],
        std::cmp::Ordering::Equal => vec![],
    };
    assert_eq!(outcome.winners, expected_winners);
    assert_eq!(state.to_move, dpb::Colour::Unspecified as i32);
    assert!(!state.position.contains('.'), "the field is full");
    assert!(state.picture.contains("Red "), "{}", state.picture);

    // The watcher: the snapshot, every move with the same effect, game over.
    let first = within(5, watch.message()).await.unwrap().unwrap();
    match first.item {
        Some(pb::watch_game_response::Item::Snapshot(g)) => {
            assert_eq!(g.ply, 0);
            assert_eq!(dots_state(&g).position, ".....\n".repeat(5));
        }
        other => panic!("expected a snapshot, got {other:?}"),
    }
    for (i, m) in applied.iter().enumerate() {
        let item = within(5, watch.message()).await.unwrap().unwrap();
        match item.item {
            Some(pb::watch_game_response::Item::Event(e)) => {
                assert_eq!(e.sequence, i as u64 + 1);
                match e.kind {
                    Some(pb::game_event::Kind::MoveApplied(a)) => {
                        assert_eq!(dots_of(a.r#move.as_ref().unwrap()), m);
                    }
                    other => panic!("expected a move, got {other:?}"),
                }
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }
    let over = within(5, watch.message()).await.unwrap().unwrap();
    match over.item {
        Some(pb::watch_game_response::Item::Event(e)) => match e.kind {
            Some(pb::game_event::Kind::GameOver(o)) => {
                assert_eq!(o.outcome.unwrap().reason, "FULL");
            }
            other => panic!("expected game over, got {other:?}"),
        },
        other => panic!("expected an event, got {other:?}"),
    }
    assert!(within(5, watch.message()).await.unwrap().is_none());

    // Over: no more moves, and no legal ones.
    let s = submit(&mut client, &table, ply, ground())
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert!(legal(&mut client, &table.id).await.moves.is_empty());
    server.stop().await.unwrap();
}

#[tokio::test]
async fn ground_ends_the_game_and_gives_away_the_groups_off_the_edge() {
    let server = TestServer::start().await;
    let mut client = server.client().await;

    // §11.A, then Blue grounds: its dots 1,1 and 1,2 touch the edge, so
    // nothing changes hands; Red wins 1–0.
    let table = create_dots(&mut client, dots_rules(5, 5, dpb::Start::Empty, 0), "").await;
    for (ply, t) in EXAMPLE_A.iter().enumerate() {
        submit(&mut client, &table, ply as u32, text(t))
            .await
            .unwrap();
    }
    let mut watch = client
        .watch_game(pb::WatchGameRequest {
            game_id: table.id.clone(),
            from_ply: Some(7),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let r = submit(&mut client, &table, 7, ground()).await.unwrap();
    let m = dots_of(r.r#move.as_ref().unwrap());
    assert_eq!(
        (m.notation.as_str(), m.kind, m.colour),
        (
            "ground",
            dpb::MoveKind::Ground as i32,
            dpb::Colour::Blue as i32
        )
    );
    assert!(matches!(m.action, Some(dpb::r#move::Action::Ground(_))));
    let effect = m.effect.as_ref().unwrap();
    assert!(effect.lost.is_empty() && effect.captured.is_empty());
    let outcome = r.outcome.unwrap();
    assert_eq!(
        (
            outcome.reason.as_str(),
            outcome.winners.clone(),
            outcome.scores.clone()
        ),
        ("GROUND", vec![RED], vec![1, 0])
    );
    let detail = dots_outcome(&outcome);
    assert_eq!(
        (detail.end.as_str(), detail.result.as_str()),
        ("ground", "1-0")
    );
    // The watcher resumed at ply 7: the snapshot, the ground move, game over.
    let snap = within(5, watch.message()).await.unwrap().unwrap();
    assert!(matches!(
        snap.item,
        Some(pb::watch_game_response::Item::Snapshot(ref g)) if g.ply == 7
    ));
    let moved = within(5, watch.message()).await.unwrap().unwrap();
    assert!(matches!(
        moved.item,
        Some(pb::watch_game_response::Item::Event(pb::GameEvent {
            kind: Some(pb::game_event::Kind::MoveApplied(_)),
            ..
        }))
    ));
    let over = within(5, watch.message()).await.unwrap().unwrap();
    assert!(matches!(
        over.item,
        Some(pb::watch_game_response::Item::Event(pb::GameEvent {
            kind: Some(pb::game_event::Kind::GameOver(_)),
            ..
        }))
    ));
    assert!(within(5, watch.message()).await.unwrap().is_none());
    let s = submit(&mut client, &table, 8, text("5,5"))
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert_eq!(s.get_details_error_info().unwrap().reason, "GAME_OVER");

    // Red grounds with a dot away from the edge: Blue gets it (§7.2).
    let table = create_dots(&mut client, dots_rules(6, 6, dpb::Start::Empty, 0), "").await;
    let before = get(&mut client, &table.id).await;
    submit(&mut client, &table, 0, text("3,3")).await.unwrap();
    submit(&mut client, &table, 1, text("1,1")).await.unwrap();
    let r = submit(&mut client, &table, 2, text(" GROUND "))
        .await
        .unwrap();
    let m = dots_of(r.r#move.as_ref().unwrap());
    let effect = m.effect.as_ref().unwrap();
    assert_eq!(points(&effect.lost), BTreeSet::from(["3,3".into()]));
    assert_eq!(effect.scores, vec![0, 1]);
    let after = get(&mut client, &table.id).await;
    assert_eq!(dots_state(&before).dots.len(), 0);
    assert_eq!(captured(dots_state(&after), dpb::Colour::Red).len(), 1);
    let outcome = r.outcome.unwrap();
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("GROUND", vec![BLUE])
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_move_limit_ends_the_game_on_the_last_allowed_move() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create_dots(
        &mut client,
        dots_rules(0, 0, dpb::Start::Unspecified, 3),
        "",
    )
    .await;
    let game = get(&mut client, &table.id).await;
    let state = dots_state(&game);
    let rules = state.rules.as_ref().unwrap();
    assert_eq!(
        (rules.width, rules.height, rules.start, rules.max_moves),
        (39, 32, dpb::Start::Cross as i32, 3)
    );
    // The cross of §4.2 at 19,16: Red 19,16 and 20,17, Blue 20,16 and 19,17.
    let start: Vec<(String, i32)> = state
        .dots
        .iter()
        .map(|d| (notation_of(d.point.as_ref().unwrap()), d.owner))
        .collect();
    let (r, b) = (dpb::Colour::Red as i32, dpb::Colour::Blue as i32);
    assert_eq!(
        start,
        [
            ("19,16".into(), r),
            ("20,16".into(), b),
            ("19,17".into(), b),
            ("20,17".into(), r)
        ]
    );
    assert_eq!(game.setup, None, "the cross needs no seed");
    assert_eq!(
        legal(&mut client, &table.id).await.moves.len(),
        39 * 32 - 4 + 1
    );
    for (ply, t) in ["1,1", "2,1"].iter().enumerate() {
        let r = submit(&mut client, &table, ply as u32, text(t))
            .await
            .unwrap();
        assert!(r.outcome.is_none());
    }
    let r = submit(&mut client, &table, 2, text("3,1")).await.unwrap();
    let outcome = r.outcome.unwrap();
    assert_eq!(outcome.reason, "MOVE_LIMIT");
    assert!(outcome.draw, "0–0 is a draw");
    assert_eq!(dots_outcome(&outcome).result, "1/2-1/2");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_four_crosses_come_from_the_seed_committed_then_revealed() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    // docs/rules/dots.md §4.4's vector: seed 00 01 … 1f on 39 × 32 puts the crosses at
    // 14,11  24,11  27,22  14,22.
    let seed: String = (0u8..32).map(|b| format!("{b:02x}")).collect();
    let rules = || dots_rules(39, 32, dpb::Start::QuadrupleCross, 0);
    let table = create_dots(&mut client, rules(), &seed).await;
    let game = get(&mut client, &table.id).await;
    let setup = game.setup.clone().expect("a seeded game shows its setup");
    assert!(setup.supplied);
    assert_eq!(setup.seed, "", "kept secret while the game goes on");
    assert_eq!(setup.commitment.len(), 64);
    let red: BTreeSet<String> = dots_state(&game)
        .dots
        .iter()
        .filter(|d| d.owner == dpb::Colour::Red as i32)
        .map(|d| notation_of(d.point.as_ref().unwrap()))
        .collect();
    let expected: BTreeSet<String> = [
        "14,11", "15,12", "24,11", "25,12", "27,22", "28,23", "14,22", "15,23",
    ]
    .map(String::from)
    .into();
    assert_eq!(red, expected);
    assert_eq!(dots_state(&game).dots.len(), 16);

    // The record of the unfinished game carries the commitment, not the
    // seed, so it cannot be imported elsewhere.
    let record = export(&mut client, &table.id).await;
    assert!(
        record.contains(&format!("commitment: {}\n", setup.commitment)),
        "{record}"
    );
    assert!(!record.contains("\nseed:"), "{record}");
    // The seed came from the creator: the record says so.
    assert!(record.contains("\nx-seed: supplied\n"), "{record}");
    let s = import(&mut client, &record).await.unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(
        s.get_details_error_info().unwrap().reason,
        "SEED_NOT_REVEALED"
    );

    // Once over, the seed is revealed and the record imports.
    submit(&mut client, &table, 0, ground()).await.unwrap();
    let over = get(&mut client, &table.id).await;
    assert_eq!(over.setup.as_ref().unwrap().seed, seed);
    let record = export(&mut client, &table.id).await;
    assert!(record.contains(&format!("seed: {seed}\n")), "{record}");
    let imported = import(&mut client, &record).await.unwrap();
    let game = imported.game.unwrap();
    assert_eq!(game.status, pb::GameStatus::Finished as i32);
    assert_eq!(dots_state(&game).position, dots_state(&over).position);

    // A server-drawn seed is committed to, not supplied.
    let drawn = create_dots(&mut client, rules(), "").await;
    let setup = get(&mut client, &drawn.id).await.setup.unwrap();
    assert!(!setup.supplied);
    assert_eq!(setup.commitment.len(), 64);
    server.stop().await.unwrap();
}

fn violation(s: &tonic::Status) -> String {
    s.get_details_bad_request()
        .unwrap_or_else(|| panic!("no BadRequest in {s:?}"))
        .field_violations[0]
        .field
        .clone()
}

#[tokio::test]
async fn bad_options_are_refused_naming_the_field() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let cases = [
        (
            dots_rules(3, 10, dpb::Start::Empty, 0),
            "",
            "rules.dots.width",
            "4..=64",
        ),
        (
            dots_rules(65, 10, dpb::Start::Empty, 0),
            "",
            "rules.dots.width",
            "65",
        ),
        (
            dots_rules(1000, 10, dpb::Start::Empty, 0),
            "",
            "rules.dots.width",
            "1000",
        ),
        (
            dots_rules(10, 99, dpb::Start::Empty, 0),
            "",
            "rules.dots.height",
            "99",
        ),
        (
            dots_rules(5, 8, dpb::Start::DoubleCross, 0),
            "",
            "rules.dots.width",
            "6x4",
        ),
        (
            dots_rules(20, 7, dpb::Start::QuadrupleCross, 0),
            "",
            "rules.dots.height",
            "8x8",
        ),
        (
            pb::GameRules {
                game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                    start: 17,
                    ..Default::default()
                })),
            },
            "",
            "rules.dots.start",
            "unknown start",
        ),
        (
            dots_rules(0, 0, dpb::Start::Cross, 0),
            "00000000000000000000000000000000000000000000000000000000000000aa",
            "seed",
            "no random setup",
        ),
        (pb::GameRules { game: None }, "", "rules", "rules.dots"),
    ];
    for (rules, seed, field, words) in cases {
        let case = format!("{rules:?}");
        let s = client
            .create_game(pb::CreateGameRequest {
                rules: Some(rules),
                seed: seed.to_string(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument, "{case}");
        assert_eq!(violation(&s), field, "{case}");
        assert!(s.message().contains(words), "{}", s.message());
    }
    // Nothing was created.
    let list = client
        .list_games(pb::ListGamesRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(list.games.is_empty());
    server.stop().await.unwrap();
}

#[tokio::test]
async fn moves_in_notation_and_structured_are_checked_and_refused_precisely() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create_dots(&mut client, dots_rules(5, 5, dpb::Start::Empty, 0), "").await;
    for (ply, t) in EXAMPLE_A.iter().enumerate() {
        submit(&mut client, &table, ply as u32, text(t))
            .await
            .unwrap();
    }
    // Syntax: INVALID_ARGUMENT with the field.
    let refusals = [
        (text("pass"), "move.dots.notation", "no pass"),
        (text("3;3"), "move.dots.notation", "not a move"),
        (dots_move(dpb::Move::default()), "move.dots", "notation"),
        (
            dots_move(dpb::Move {
                action: Some(dpb::r#move::Action::Place(dpb::Point { x: 5, y: 5 })),
                notation: "ground".into(),
                ..Default::default()
            }),
            "move",
            "different moves",
        ),
        (notation("SE@E1:E2,E3"), "move", "not a Dots move"),
    ];
    for (mv, field, words) in refusals {
        let s = submit(&mut client, &table, 7, mv).await.unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument, "{s:?}");
        assert_eq!(violation(&s), field);
        assert!(s.message().contains(words), "{}", s.message());
    }
    // Rules: FAILED_PRECONDITION with the rule's name.
    let illegal = [
        (text("6,1"), "OFF_FIELD"),
        (at(0, 3), "OFF_FIELD"),
        (at(70000, 1), "OFF_FIELD"),
        (text("99999,1"), "OFF_FIELD"),
        (text("1,1"), "OCCUPIED"),
        (at(3, 3), "OCCUPIED"),
    ];
    for (mv, reason) in illegal {
        let s = submit(&mut client, &table, 7, mv).await.unwrap_err();
        assert_eq!(s.code(), Code::FailedPrecondition, "{s:?}");
        assert_eq!(s.get_details_error_info().unwrap().reason, reason);
    }
    let held = create_dots(&mut client, dots_rules(5, 5, dpb::Start::Empty, 0), "").await;
    for (ply, t) in HOLDS_3_4.iter().enumerate() {
        submit(&mut client, &held, ply as u32, text(t))
            .await
            .unwrap();
    }
    let s = submit(&mut client, &held, 11, at(3, 4)).await.unwrap_err();
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert_eq!(s.get_details_error_info().unwrap().reason, "HELD");
    assert!(s.message().contains("captured by Red"), "{}", s.message());
    // Out of turn: Red's token at Blue's turn.
    let s = client
        .submit_move(pb::SubmitMoveRequest {
            game_id: table.id.clone(),
            token: table.white.clone(),
            r#move: Some(text("5,5")),
            expected_ply: 7,
            request_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(s.get_details_error_info().unwrap().reason, "NOT_YOUR_TURN");
    // Nothing changed; both forms together, agreeing, are accepted and
    // answered canonically.
    assert_eq!(get(&mut client, &table.id).await.ply, 7);
    let both = dots_move(dpb::Move {
        action: Some(dpb::r#move::Action::Place(dpb::Point { x: 5, y: 5 })),
        notation: " 05 , 5 ".into(),
        ..Default::default()
    });
    let r = submit(&mut client, &table, 7, both).await.unwrap();
    let m = dots_of(r.r#move.as_ref().unwrap());
    assert_eq!(m.notation, "5,5");
    assert_eq!(
        m.action,
        Some(dpb::r#move::Action::Place(dpb::Point { x: 5, y: 5 }))
    );
    // A Dots move in a PÜNCT game is malformed there.
    let punct = create(
        &mut client,
        punct_referee::service::grpc::pb::punct::v1::Variant::Standard,
    )
    .await;
    let s = submit(&mut client, &punct, 0, text("1,1"))
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    server.stop().await.unwrap();
}

async fn export(client: &mut Client, id: &str) -> String {
    export_checked(client, id, "").await
}

async fn import(
    client: &mut Client,
    record: &str,
) -> Result<pb::ImportGameResponse, tonic::Status> {
    client
        .import_game(pb::ImportGameRequest {
            record: record.to_string(),
            labels: Default::default(),
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn validate(
    client: &mut Client,
    history: pb::validate_move_request::History,
    mv: pb::Move,
) -> Result<pb::ValidateMoveResponse, tonic::Status> {
    client
        .validate_move(pb::ValidateMoveRequest {
            history: Some(history),
            r#move: Some(mv),
        })
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn records_export_import_and_validate() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create_dots(&mut client, dots_rules(5, 5, dpb::Start::Empty, 0), "").await;
    for (ply, t) in EXAMPLE_A.iter().enumerate() {
        submit(&mut client, &table, ply as u32, text(t))
            .await
            .unwrap();
    }
    let record = export(&mut client, &table.id).await;
    assert!(record.starts_with("game: dots\n"), "{record}");
    assert!(
        record.contains("width: 5\n") && record.contains("start: empty\n"),
        "{record}"
    );
    assert!(
        record.ends_with("3,2\n3,3\n2,3\n1,1\n4,3\n1,2\n3,4\n"),
        "{record}"
    );

    // Imported: a new game at the same position, Blue to move.
    let imported = import(&mut client, &record).await.unwrap();
    let game = imported.game.unwrap();
    assert_eq!((game.ply, game.to_move), (7, BLUE));
    let original = get(&mut client, &table.id).await;
    assert_eq!(dots_state(&game).position, dots_state(&original).position);
    assert_eq!(dots_state(&game).scores, vec![1, 0]);
    assert_eq!(
        imported
            .seats
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["red", "blue"]
    );
    assert_eq!(
        dots_of(game.last_move.as_ref().unwrap()).notation,
        "3,4",
        "the last move is shown"
    );

    // ValidateMove on the record: an illegal move is an answer, not an
    // error.
    let history = pb::validate_move_request::History::Record(record.clone());
    let v = validate(&mut client, history.clone(), at(3, 3))
        .await
        .unwrap();
    assert!(!v.legal);
    assert_eq!((v.reason.as_str(), v.seat), ("OCCUPIED", BLUE));
    assert!(v.message.contains("3,3"), "{}", v.message);
    let held = pb::GameHistory {
        rules: Some(dots_rules(5, 5, dpb::Start::Empty, 0)),
        moves: HOLDS_3_4.iter().map(|t| text(t)).collect(),
        seed: String::new(),
    };
    let v = validate(
        &mut client,
        pb::validate_move_request::History::Moves(held),
        text("3,4"),
    )
    .await
    .unwrap();
    assert_eq!((v.legal, v.reason.as_str()), (false, "HELD"));
    let v = validate(&mut client, history, ground()).await.unwrap();
    assert!(v.legal);
    assert_eq!((v.ply, v.status), (8, pb::GameStatus::Finished as i32));
    assert_eq!(v.outcome.unwrap().reason, "GROUND");

    // ValidateMove on rules and moves, structured and notation mixed.
    let moves = pb::GameHistory {
        rules: Some(dots_rules(5, 5, dpb::Start::Empty, 0)),
        moves: EXAMPLE_A[..6]
            .iter()
            .enumerate()
            .map(|(i, t)| if i % 2 == 0 { text(t) } else { structured(t) })
            .collect(),
        seed: String::new(),
    };
    let v = validate(
        &mut client,
        pb::validate_move_request::History::Moves(moves.clone()),
        at(3, 4),
    )
    .await
    .unwrap();
    assert!(v.legal);
    let effect = dots_of(v.r#move.as_ref().unwrap()).effect.clone().unwrap();
    assert_eq!(points(&effect.captured), BTreeSet::from(["3,3".into()]));
    // A garbled history move names its field; bad history options too.
    let mut garbled = moves.clone();
    garbled.moves[2] = text("x");
    let s = validate(
        &mut client,
        pb::validate_move_request::History::Moves(garbled),
        at(3, 4),
    )
    .await
    .unwrap_err();
    assert_eq!(violation(&s), "moves.moves.dots.notation");
    let mut small = moves;
    small.rules = Some(dots_rules(2, 5, dpb::Start::Empty, 0));
    let s = validate(
        &mut client,
        pb::validate_move_request::History::Moves(small),
        at(3, 4),
    )
    .await
    .unwrap_err();
    assert_eq!(violation(&s), "moves.rules.dots.width");

    // A record with an illegal move is refused with the rule and the line.
    let broken = record.replace("3,4\n", "3,3\n");
    let s = import(&mut client, &broken).await.unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    let info = s.get_details_error_info().unwrap();
    assert_eq!(info.reason, "OCCUPIED");
    assert!(info.metadata.contains_key("line"), "{info:?}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn render_position_draws_the_field_now_and_earlier() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create_dots(&mut client, dots_rules(5, 5, dpb::Start::Empty, 0), "").await;
    for (ply, t) in EXAMPLE_A.iter().enumerate() {
        submit(&mut client, &table, ply as u32, text(t))
            .await
            .unwrap();
    }
    let render = |ply: Option<u32>| {
        let mut client = client.clone();
        let id = table.id.clone();
        async move {
            client
                .render_position(pb::RenderPositionRequest {
                    game_id: id,
                    ply,
                    token: String::new(),
                })
                .await
                .map(tonic::Response::into_inner)
        }
    };
    let now = render(None).await.unwrap();
    assert_eq!(now.ply, 7);
    assert!(now.svg.starts_with("<svg "), "{}", now.svg);
    assert!(now.svg.contains(r#"aria-label="Dots field 5x5, ply 7""#));
    assert_eq!(now.svg.matches(r#"<circle class="captured""#).count(), 1);
    assert_eq!(now.svg.matches(r#"<polygon class="capture""#).count(), 1);
    assert_eq!(now.svg.matches(r#"<circle class="last""#).count(), 1);
    assert!(now.svg.contains("Red 1 – Blue 0"), "{}", now.svg);
    let early = render(Some(2)).await.unwrap();
    assert_eq!(early.ply, 2);
    assert_eq!(early.svg.matches(r#"<circle cx="#).count(), 2);
    assert_eq!(early.svg.matches("<polygon").count(), 0);
    let s = render(Some(8)).await.unwrap_err();
    assert_eq!(s.code(), Code::OutOfRange);
    server.stop().await.unwrap();
}
