//! Failure policies through the real server (docs/POLICIES.md): each
//! action (LOSE, SUBSTITUTE, PAUSE) for each failure (a timeout, an illegal
//! move, a seat that left), the substitution cap, and the draws replayed
//! from the record and the game id. Time is only bounded from below (a
//! flag is never early), as in `service_clocks.rs`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::sessions::{pick_substitution, substitution_seed};
use tonic::Code;
use tonic_types::StatusExt;

type WatchStream = tonic::Streaming<pb::WatchGameResponse>;

const LOSE: i32 = pb::FailureAction::Lose as i32;
const SUBSTITUTE: i32 = pb::FailureAction::Substitute as i32;
const PAUSE: i32 = pb::FailureAction::Pause as i32;

fn per_move(move_ms: u64) -> pb::TimeControl {
    pb::TimeControl {
        lag_compensation: None,
        mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
            move_ms,
        })),
        // First moves are not charged: the test plays them at leisure.
        first_move_deadline_ms: Some(60_000),
    }
}

async fn create_with(
    c: &mut Client,
    time_control: Option<pb::TimeControl>,
    policy: pb::FailurePolicy,
) -> (Table, pb::Game) {
    let r = c
        .create_game(pb::CreateGameRequest {
            time_control,
            failure_policy: Some(policy),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let game = r.game.expect("game");
    (table_of(game.clone(), &r.seats), game)
}

async fn watch(c: &mut Client, id: &str, token: &str) -> WatchStream {
    c.watch_game(pb::WatchGameRequest {
        game_id: id.to_string(),
        token: token.to_string(),
        ..Default::default()
    })
    .await
    .expect("watch")
    .into_inner()
}

/// The game-over event of a watch (every other item skipped).
async fn game_over(stream: &mut WatchStream) -> pb::Outcome {
    moves_until_over(stream).await.1
}

/// The move events of a watch until the game is over, and its outcome.
async fn moves_until_over(stream: &mut WatchStream) -> (Vec<(u32, pb::MoveApplied)>, pb::Outcome) {
    let mut moves = Vec::new();
    loop {
        let item = within(30, stream.message())
            .await
            .expect("stream error")
            .expect("stream ended before the game")
            .item;
        match item {
            Some(pb::watch_game_response::Item::Event(pb::GameEvent {
                kind: Some(pb::game_event::Kind::GameOver(g)),
                ..
            })) => return (moves, g.outcome.expect("outcome")),
            Some(pb::watch_game_response::Item::Event(pb::GameEvent {
                ply,
                kind: Some(pb::game_event::Kind::MoveApplied(m)),
                ..
            })) => moves.push((ply, m)),
            _ => {}
        }
    }
}

async fn first_legal(c: &mut Client, id: &str) -> pb::Move {
    c.list_legal_moves(pb::ListLegalMovesRequest {
        game_id: id.to_string(),
        ..Default::default()
    })
    .await
    .expect("legal moves")
    .into_inner()
    .moves
    .remove(0)
}

async fn play_first_legal(c: &mut Client, t: &Table, ply: u32) -> pb::SubmitMoveResponse {
    let mv = first_legal(c, &t.id).await;
    submit(c, t, ply, mv).await.expect("move accepted")
}

fn reason(s: &tonic::Status) -> String {
    s.get_details_error_info().expect("ErrorInfo").reason
}

fn notation_of(m: &pb::Move) -> String {
    punct_of(m).notation.clone()
}

/// Checks every substitution of finished game `id` against its record: the
/// record cut before the move is imported as a new game, and the move is
/// the legal move (sorted by notation) at the index drawn from the seed of
/// the game's id and the move's ply. What a verifier outside the server
/// does.
async fn replay_substitutions(c: &mut Client, id: &str, subs: &[pb::Substitution]) {
    let record = c
        .export_game(pb::ExportGameRequest {
            game_id: id.to_string(),
            token: String::new(),
        })
        .await
        .expect("export")
        .into_inner();
    assert_eq!(
        record.substitutions, subs,
        "the export lists them beside the record"
    );
    let text = record.record;
    let (header, body) = text.split_once("\n\n").expect("header and moves");
    let header: Vec<&str> = header
        .lines()
        .filter(|l| !l.starts_with("result:") && !l.starts_with("x-"))
        .collect();
    let moves: Vec<&str> = body.lines().collect();
    let seed = substitution_seed(id);
    for s in subs {
        let before = (s.ply - 1) as usize;
        let cut = format!(
            "{}\n\n{}",
            header.join("\n"),
            moves[..before]
                .iter()
                .map(|m| format!("{m}\n"))
                .collect::<String>()
        );
        let imported = c
            .import_game(pb::ImportGameRequest {
                record: cut,
                ..Default::default()
            })
            .await
            .expect("the record up to the move imports")
            .into_inner();
        let legal = c
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: imported.game.expect("game").game_id,
                ..Default::default()
            })
            .await
            .expect("legal moves")
            .into_inner()
            .moves
            .iter()
            .map(notation_of)
            .collect::<Vec<_>>();
        let drawn = &legal[pick_substitution(&seed, s.ply, legal.len())];
        assert_eq!(drawn, &s.notation, "substitution at ply {}", s.ply);
        assert_eq!(moves[before], s.notation, "the record has it at its ply");
    }
}

#[tokio::test]
async fn timeouts_are_substituted_up_to_the_cap_then_lose_and_the_draws_replay() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_timeout: SUBSTITUTE,
        max_substitutions: 2,
        ..Default::default()
    };
    let (t, created) = create_with(&mut c, Some(per_move(150)), policy).await;
    let echoed = created.failure_policy.expect("the policy is echoed");
    assert_eq!(
        (echoed.on_timeout, echoed.on_illegal_move),
        (SUBSTITUTE, LOSE)
    );
    assert_eq!(echoed.max_substitutions, 2);
    assert_eq!(echoed.pause_ms, 60_000, "zero means the default");
    let mut spectator = watch(&mut c, &t.id, "").await;
    play_first_legal(&mut c, &t, 0).await;
    // Taken before black's move is sent: its acceptance starts white's turn.
    let started = Instant::now();
    play_first_legal(&mut c, &t, 1).await;
    // Nobody moves again: the referee plays for white and black twice
    // each (plies 3..=6), then white's third flag loses.
    let outcome = game_over(&mut spectator).await;
    assert!(
        started.elapsed() >= Duration::from_millis(5 * 150),
        "never early"
    );
    assert_eq!(outcome.reason, "TIMEOUT");
    assert_eq!(outcome.winners, vec![BLACK]);
    let g = get(&mut c, &t.id).await;
    assert_eq!(g.ply, 6);
    assert_eq!(g.failure_ending, "SUBSTITUTION_CAP");
    let plies: Vec<(u32, u32, i32)> = g
        .substitutions
        .iter()
        .map(|s| (s.ply, s.seat, s.kind))
        .collect();
    let timeout = pb::FailureKind::Timeout as i32;
    assert_eq!(
        plies,
        vec![
            (3, WHITE, timeout),
            (4, BLACK, timeout),
            (5, WHITE, timeout),
            (6, BLACK, timeout)
        ]
    );
    // The record says which moves they were (a PÜNCT header tag), and a
    // verifier draws the same moves.
    let record = export_checked(&mut c, &t.id, "").await;
    assert!(record.contains("x-substituted: 3,4,5,6\n"), "{record}");
    replay_substitutions(&mut c, &t.id, &g.substitutions).await;
    server.stop().await.unwrap();
}

#[tokio::test]
async fn without_a_policy_and_with_lose_a_timeout_loses_as_before() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_timeout: LOSE,
        on_illegal_move: LOSE,
        on_disconnect: LOSE,
        ..Default::default()
    };
    let (t, created) = create_with(&mut c, Some(per_move(150)), policy).await;
    assert_eq!(created.failure_policy, None, "LOSE everywhere is no policy");
    let mut spectator = watch(&mut c, &t.id, "").await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    let outcome = game_over(&mut spectator).await;
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners.clone()),
        ("TIMEOUT", vec![BLACK])
    );
    let g = get(&mut c, &t.id).await;
    assert!(g.substitutions.is_empty());
    assert_eq!((g.ply, g.failure_ending.as_str()), (2, ""));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_paused_flag_lets_the_seat_move_late_once_then_the_pause_runs_out() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_timeout: PAUSE,
        pause_ms: 1_500,
        ..Default::default()
    };
    let (t, _) = create_with(&mut c, Some(per_move(150)), policy).await;
    let mut spectator = watch(&mut c, &t.id, "").await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    // White's flag falls at 150 ms; it is held, and its move 350 ms later
    // is taken.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let g = get(&mut c, &t.id).await;
    assert_eq!(
        g.status,
        pb::GameStatus::InProgress as i32,
        "the flag is held"
    );
    // Taken before white's move is sent: its acceptance starts black's turn.
    let black_turn = Instant::now();
    let late = play_first_legal(&mut c, &t, 2).await;
    assert_eq!(late.ply, 3);
    // Black never moves: its flag is held for its whole pause, then falls.
    let outcome = game_over(&mut spectator).await;
    assert!(
        black_turn.elapsed() >= Duration::from_millis(150 + 1_500),
        "never early"
    );
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners.clone()),
        ("TIMEOUT", vec![WHITE])
    );
    let g = get(&mut c, &t.id).await;
    assert_eq!((g.ply, g.failure_ending.as_str()), (3, "PAUSE_EXHAUSTED"));
    assert!(g.substitutions.is_empty());
    server.stop().await.unwrap();
}

#[tokio::test]
async fn an_illegal_move_is_replaced_by_a_drawn_legal_one_then_the_cap_loses() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_illegal_move: SUBSTITUTE,
        max_substitutions: 1,
        ..Default::default()
    };
    let (t, _) = create_with(&mut c, None, policy).await;
    submit(&mut c, &t, 0, notation(CONNECTION_GAME[0]))
        .await
        .expect("legal");
    submit(&mut c, &t, 1, notation(CONNECTION_GAME[1]))
        .await
        .expect("legal");
    // Not rule failures: a stale ply, the wrong seat, a malformed move.
    let stale = submit(&mut c, &t, 1, notation(CONNECTION_GAME[2]))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Code::Aborted);
    let not_yours = submit(&mut c, &t, 3, notation(CONNECTION_GAME[2]))
        .await
        .map(|_| ());
    assert!(not_yours.is_err());
    let malformed = submit(&mut c, &t, 2, notation("nonsense"))
        .await
        .unwrap_err();
    assert_eq!(malformed.code(), Code::InvalidArgument);
    assert_eq!(
        get(&mut c, &t.id).await.ply,
        2,
        "none of them was substituted"
    );
    // White places on an occupied space: the referee plays for it.
    let answer = submit(&mut c, &t, 2, notation(CONNECTION_GAME[0]))
        .await
        .expect("substituted");
    assert!(answer.substituted);
    assert!(!answer.refused_reason.is_empty());
    assert_eq!((answer.seat, answer.ply, answer.to_move), (WHITE, 3, BLACK));
    let g = get(&mut c, &t.id).await;
    assert_eq!(g.substitutions.len(), 1);
    let s = &g.substitutions[0];
    assert_eq!(
        (s.ply, s.seat, s.kind),
        (3, WHITE, pb::FailureKind::IllegalMove as i32)
    );
    assert_eq!(s.notation, notation_of(answer.r#move.as_ref().unwrap()));
    replay_substitutions(&mut c, &t.id, &g.substitutions).await;
    play_first_legal(&mut c, &t, 3).await;
    // Again, past the cap: refused with the rule broken, and white loses.
    let refused = submit(&mut c, &t, 4, notation(CONNECTION_GAME[1]))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(reason(&refused), answer.refused_reason);
    let g = get(&mut c, &t.id).await;
    let outcome = g.outcome.expect("over");
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("RESIGNATION", vec![BLACK])
    );
    assert_eq!(g.failure_ending, "SUBSTITUTION_CAP");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn without_a_policy_an_illegal_move_is_only_refused() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(
        &mut c,
        punct_referee::service::grpc::pb::punct::v1::Variant::Standard,
    )
    .await;
    submit(&mut c, &t, 0, notation(CONNECTION_GAME[0]))
        .await
        .expect("legal");
    submit(&mut c, &t, 1, notation(CONNECTION_GAME[1]))
        .await
        .expect("legal");
    let refused = submit(&mut c, &t, 2, notation(CONNECTION_GAME[0]))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    let g = get(&mut c, &t.id).await;
    assert_eq!((g.ply, g.outcome), (2, None));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_seat_that_left_is_played_for_then_abandons_at_the_cap() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_disconnect: SUBSTITUTE,
        max_substitutions: 1,
        disconnect_after_ms: 300,
        ..Default::default()
    };
    // No clock: only the absence acts.
    let (t, _) = create_with(&mut c, None, policy).await;
    // Black holds a stream all along; white holds one for its first move.
    let mut black = watch(&mut c, &t.id, &t.black).await;
    let white = watch(&mut c, &t.id, &t.white).await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        get(&mut c, &t.id).await.ply,
        2,
        "a present seat is not played for"
    );
    let left = Instant::now();
    drop(white);
    // White's move is played for it once it has been gone 300 ms.
    let mut waited = 0;
    while get(&mut c, &t.id).await.ply < 3 {
        waited += 1;
        assert!(waited < 200, "no substitution");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(left.elapsed() >= Duration::from_millis(300), "never early");
    let g = get(&mut c, &t.id).await;
    let s = &g.substitutions[0];
    assert_eq!(
        (s.ply, s.seat, s.kind),
        (3, WHITE, pb::FailureKind::Disconnect as i32)
    );
    // Black moves; white is still gone, with no substitution left.
    play_first_legal(&mut c, &t, 3).await;
    let outcome = game_over(&mut black).await;
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("ABANDONED", vec![BLACK])
    );
    let g = get(&mut c, &t.id).await;
    assert_eq!((g.ply, g.failure_ending.as_str()), (4, "SUBSTITUTION_CAP"));
    replay_substitutions(&mut c, &t.id, &g.substitutions).await;
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_flag_falling_on_a_seat_that_left_is_held_under_the_disconnect_pause() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_timeout: LOSE,
        on_disconnect: PAUSE,
        pause_ms: 1_500,
        disconnect_after_ms: 100,
        ..Default::default()
    };
    let (t, _) = create_with(&mut c, Some(per_move(150)), policy).await;
    // Black is present; white never holds a stream.
    let mut black = watch(&mut c, &t.id, &t.black).await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // White was gone when its flag fell: held, and its late move taken.
    play_first_legal(&mut c, &t, 2).await;
    // Black is present: its flag falls as without a policy.
    let outcome = game_over(&mut black).await;
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("TIMEOUT", vec![WHITE])
    );
    let g = get(&mut c, &t.id).await;
    assert_eq!((g.ply, g.failure_ending.as_str()), (3, ""));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn bad_policies_are_refused_with_the_field() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let bad = [
        (
            pb::FailurePolicy {
                on_illegal_move: PAUSE,
                ..Default::default()
            },
            "failure_policy.on_illegal_move",
        ),
        (
            pb::FailurePolicy {
                on_timeout: 9,
                ..Default::default()
            },
            "failure_policy.on_timeout",
        ),
        (
            pb::FailurePolicy {
                on_timeout: SUBSTITUTE,
                max_substitutions: 1_001,
                ..Default::default()
            },
            "failure_policy.max_substitutions",
        ),
        (
            pb::FailurePolicy {
                on_timeout: PAUSE,
                pause_ms: 86_400_001,
                ..Default::default()
            },
            "failure_policy.pause_ms",
        ),
    ];
    for (policy, field) in bad {
        let err = c
            .create_game(pb::CreateGameRequest {
                failure_policy: Some(policy),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{field}");
        let fields: Vec<String> = err
            .get_details_bad_request()
            .expect("BadRequest")
            .field_violations
            .into_iter()
            .map(|v| v.field)
            .collect();
        assert_eq!(fields, vec![field.to_string()]);
    }
    // The label the policy is stored under is not a game's to set.
    let reserved = c
        .create_game(pb::CreateGameRequest {
            labels: [(
                "failure-policy".to_string(),
                "timeout=SUBSTITUTE".to_string(),
            )]
            .into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(reserved.code(), Code::InvalidArgument);
    assert!(
        reserved.message().contains("reserved"),
        "{}",
        reserved.message()
    );
    let listed = c
        .list_games(pb::ListGamesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(
        listed.games.is_empty(),
        "a refused creation creates nothing"
    );
    server.stop().await.unwrap();
}

fn punto_notation(m: &pb::Move) -> String {
    use punct_referee::service::grpc::pb::punto::v1 as tpb;
    match &m.game {
        Some(pb::r#move::Game::Punto(p)) => tpb::Move::clone(p).notation,
        other => panic!("not a Punto move: {other:?}"),
    }
}

#[tokio::test]
async fn hidden_information_a_punto_seat_is_played_for_from_its_own_legal_moves() {
    use punct_referee::service::grpc::pb::punto::v1 as tpb;
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let r = c
        .create_game(pb::CreateGameRequest {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
                    players: 2,
                    ..Default::default()
                })),
            }),
            time_control: Some(per_move(1_000)),
            failure_policy: Some(pb::FailurePolicy {
                on_timeout: SUBSTITUTE,
                max_substitutions: 1,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let id = r.game.expect("game").game_id;
    let tokens: Vec<String> = r.seats.iter().map(|s| s.token.clone()).collect();
    let mut spectator = watch(&mut c, &id, "").await;
    let legal = |c: &mut Client, token: String| {
        let mut c = c.clone();
        let id = id.clone();
        async move {
            c.list_legal_moves(pb::ListLegalMovesRequest {
                game_id: id,
                token,
                ..Default::default()
            })
            .await
            .expect("legal moves")
            .into_inner()
        }
    };
    for (ply, token) in tokens.iter().enumerate().take(2) {
        let moves = legal(&mut c, token.clone()).await;
        c.submit_move(pb::SubmitMoveRequest {
            game_id: id.clone(),
            token: token.clone(),
            r#move: Some(moves.moves[0].clone()),
            expected_ply: u32::try_from(ply).expect("a ply"),
            request_id: String::new(),
        })
        .await
        .expect("move");
    }
    // Seat 1's own legal moves, which only it may know (its card).
    let own = legal(&mut c, tokens[0].clone()).await;
    assert_eq!(own.ply, 2, "listed before its flag falls");
    let own: Vec<String> = own.moves.iter().map(punto_notation).collect();
    let (moves, outcome) = moves_until_over(&mut spectator).await;
    // Watchers see the substituted moves as moves, marked.
    let timeout = pb::FailureKind::Timeout as i32;
    let marks: Vec<(u32, u32, i32)> = moves
        .iter()
        .map(|(p, m)| (*p, m.seat, m.substituted))
        .collect();
    assert_eq!(
        marks,
        vec![(1, 1, 0), (2, 2, 0), (3, 1, timeout), (4, 2, timeout)]
    );
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("TIMEOUT", vec![2])
    );
    let seen = get(&mut c, &id).await;
    assert_eq!(seen.ply, 4, "one move played for each seat");
    let mine = c
        .get_game(pb::GetGameRequest {
            game_id: id.clone(),
            token: tokens[0].clone(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner()
        .game
        .expect("game");
    let s = &mine.substitutions[0];
    assert_eq!((s.ply, s.seat), (3, 1));
    let drawn = &own[pick_substitution(&substitution_seed(&id), 3, own.len())];
    assert_eq!(&s.notation, drawn, "drawn from the seat's own legal moves");
    // The spectator sees the same marks as the seat (a placed card is public).
    assert_eq!(seen.substitutions, mine.substitutions);
    server.stop().await.unwrap();
}

/// A server on the SQLite store in `dir`, signing receipts with a key kept
/// there: stopped and started again on the same directory, it is a restart.
async fn start_on(dir: &std::path::Path) -> TestServer {
    use punct_referee::service::StorageConfig;
    use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
    TestServer::start_with(punct_referee::service::ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.to_path_buf(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        referee_key_file: Some(dir.join("referee.key")),
        ..test_options()
    })
    .await
}

fn data_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "punct-policy-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

/// Game `id` and its export as a server restarted on `dir` reads them back.
async fn read_back(dir: &std::path::Path, id: &str) -> (pb::Game, pb::ExportGameResponse) {
    let server = start_on(dir).await;
    let mut c = server.client().await;
    let game = get(&mut c, id).await;
    let exported = export(&mut c, id).await;
    server.stop().await.unwrap();
    (game, exported)
}

async fn export(c: &mut Client, id: &str) -> pb::ExportGameResponse {
    c.export_game(pb::ExportGameRequest {
        game_id: id.to_string(),
        token: String::new(),
    })
    .await
    .expect("export")
    .into_inner()
}

#[tokio::test]
async fn a_restarted_game_keeps_its_policy_and_its_substitutions() {
    let dir = data_dir("restart");
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_illegal_move: SUBSTITUTE,
        max_substitutions: 2,
        ..Default::default()
    };
    let (t, created) = create_with(&mut c, None, policy).await;
    let echoed = created.failure_policy.expect("the policy is echoed");
    submit(&mut c, &t, 0, notation(CONNECTION_GAME[0]))
        .await
        .expect("legal");
    // Black places on white's space: substituted (ply 2).
    let answer = submit(&mut c, &t, 1, notation(CONNECTION_GAME[0]))
        .await
        .expect("substituted");
    assert!(answer.substituted);
    let before = get(&mut c, &t.id).await;
    assert_eq!(before.substitutions.len(), 1);
    let record = export(&mut c, &t.id).await;
    assert!(
        record.record.contains("x-substituted: 2\n"),
        "{}",
        record.record
    );
    server.stop().await.unwrap();

    // Recovered: the same policy, the same marks, the same record, and no
    // label of its own beside the game's.
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    let after = get(&mut c, &t.id).await;
    assert_eq!(after.failure_policy.as_ref(), Some(&echoed));
    assert_eq!(after.substitutions, before.substitutions);
    assert_eq!(after.labels, before.labels);
    let again = export(&mut c, &t.id).await;
    assert_eq!(again.record, record.record);
    assert_eq!(again.substitutions, record.substitutions);
    // The policy still acts, and counts the substitution made before the
    // restart: one more (ply 4), then black's third illegal move loses.
    play_first_legal(&mut c, &t, 2).await;
    let answer = submit(&mut c, &t, 3, notation(CONNECTION_GAME[0]))
        .await
        .expect("substituted after the restart");
    assert!(answer.substituted);
    play_first_legal(&mut c, &t, 4).await;
    let refused = submit(&mut c, &t, 5, notation(CONNECTION_GAME[0]))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    let finished = get(&mut c, &t.id).await;
    let outcome = finished.outcome.expect("over");
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("RESIGNATION", vec![WHITE])
    );
    assert_eq!(finished.failure_ending, "SUBSTITUTION_CAP");
    let plies: Vec<u32> = finished.substitutions.iter().map(|s| s.ply).collect();
    assert_eq!(plies, vec![2, 4]);
    let ended = export(&mut c, &t.id).await;
    assert!(!ended.receipt.is_empty(), "a finished game has a receipt");
    replay_substitutions(&mut c, &t.id, &finished.substitutions).await;
    server.stop().await.unwrap();

    // Read back finished after another restart: the same marks, record and
    // receipt.
    let (archived, read_back) = read_back(&dir, &t.id).await;
    assert_eq!(archived.substitutions, finished.substitutions);
    assert_eq!(archived.failure_policy, finished.failure_policy);
    assert_eq!(read_back.record, ended.record);
    assert_eq!(read_back.receipt, ended.receipt);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn timeout_substitutions_are_read_back_with_the_finished_game() {
    let dir = data_dir("timeouts");
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_timeout: SUBSTITUTE,
        max_substitutions: 1,
        ..Default::default()
    };
    let (t, _) = create_with(&mut c, Some(per_move(150)), policy).await;
    let mut spectator = watch(&mut c, &t.id, "").await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    // Played for white (3) and black (4), then white's flag loses.
    let outcome = game_over(&mut spectator).await;
    assert_eq!(outcome.reason, "TIMEOUT");
    let finished = get(&mut c, &t.id).await;
    let kinds: Vec<(u32, i32)> = finished
        .substitutions
        .iter()
        .map(|s| (s.ply, s.kind))
        .collect();
    let timeout = pb::FailureKind::Timeout as i32;
    assert_eq!(kinds, vec![(3, timeout), (4, timeout)]);
    assert_eq!(finished.failure_ending, "SUBSTITUTION_CAP");
    let ended = export(&mut c, &t.id).await;
    assert!(ended.record.contains("x-substituted: 3,4\n"));
    server.stop().await.unwrap();

    let (archived, read_back) = read_back(&dir, &t.id).await;
    assert_eq!(archived.substitutions, finished.substitutions);
    assert_eq!(
        archived.failure_ending, "SUBSTITUTION_CAP",
        "stored with the end"
    );
    assert_eq!(read_back.record, ended.record);
    assert_eq!(read_back.receipt, ended.receipt);
    assert_eq!(read_back.substitutions, ended.substitutions);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_pause_used_and_the_policys_ending_survive_restarts() {
    let dir = data_dir("pause");
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    let policy = pb::FailurePolicy {
        on_timeout: PAUSE,
        pause_ms: 1_500,
        ..Default::default()
    };
    let (t, _) = create_with(&mut c, Some(per_move(150)), policy).await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    // White moves 850 ms into a 150 ms turn: at least 700 ms of its pause
    // used, at most 800 ms left.
    tokio::time::sleep(Duration::from_millis(850)).await;
    assert_eq!(play_first_legal(&mut c, &t, 2).await.ply, 3);
    play_first_legal(&mut c, &t, 3).await;
    drop(c);
    server.stop().await.unwrap();

    // After the restart white's turn starts afresh: its flag falls 150 ms
    // in, and what is left of its pause (not a new 1 500 ms) runs out
    // by 950 ms. Read 1 300 ms in (a read settles the clock).
    let server = start_on(&dir).await;
    let restarted = Instant::now();
    let mut c = server.client().await;
    assert_eq!(get(&mut c, &t.id).await.ply, 4);
    tokio::time::sleep(Duration::from_millis(1_300).saturating_sub(restarted.elapsed())).await;
    let g = get(&mut c, &t.id).await;
    assert_eq!(
        g.status,
        pb::GameStatus::Finished as i32,
        "the pause used before the restart still counts"
    );
    let outcome = g.outcome.expect("outcome");
    assert_eq!(
        (outcome.reason.as_str(), outcome.winners),
        ("TIMEOUT", vec![BLACK])
    );
    assert_eq!(g.failure_ending, "PAUSE_EXHAUSTED");
    drop(c);
    server.stop().await.unwrap();

    // Read back finished after another restart: the policy's ending is kept.
    let (archived, _) = read_back(&dir, &t.id).await;
    assert_eq!(
        (archived.status, archived.failure_ending.as_str()),
        (pb::GameStatus::Finished as i32, "PAUSE_EXHAUSTED")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
