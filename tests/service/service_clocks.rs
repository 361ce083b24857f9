//! Clocks, presence and ClaimVictory through the real server, with short
//! real time controls. Margins are generous and only lower bounds are
//! asserted on time (a flag never falls early), so a loaded machine slows
//! these tests down but does not fail them. The exact timing behaviour is
//! tested on tokio's paused clock in `src/service/sessions/clock_tests.rs`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use punct_referee::service::ServerOptions;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::sessions::Limits;
use tonic::Code;
use tonic_types::StatusExt;

type WatchStream = tonic::Streaming<pb::WatchGameResponse>;

fn fischer(initial_ms: u64, increment_ms: u64, first_move_ms: Option<u64>) -> pb::TimeControl {
    pb::TimeControl {
        lag_compensation: None,
        mode: Some(pb::time_control::Mode::Fischer(pb::FischerClock {
            initial_ms,
            increment_ms,
        })),
        first_move_deadline_ms: first_move_ms,
    }
}

async fn create_timed(client: &mut Client, tc: pb::TimeControl) -> (Table, pb::Game) {
    let r = client
        .create_game(pb::CreateGameRequest {
            time_control: Some(tc),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let game = r.game.expect("game");
    (table_of(game.clone(), &r.seats), game)
}

async fn watch(client: &mut Client, id: &str, token: &str) -> WatchStream {
    client
        .watch_game(pb::WatchGameRequest {
            game_id: id.to_string(),
            token: token.to_string(),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner()
}

async fn next_item(stream: &mut WatchStream) -> pb::watch_game_response::Item {
    within(10, stream.message())
        .await
        .expect("stream error")
        .expect("stream ended")
        .item
        .expect("an item")
}

/// The next event, skipping presence flips.
async fn next_event(stream: &mut WatchStream) -> pb::GameEvent {
    loop {
        match next_item(stream).await {
            pb::watch_game_response::Item::Event(e) => return e,
            pb::watch_game_response::Item::Presence(_) => continue,
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

async fn first_legal(client: &mut Client, id: &str) -> pb::Move {
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
        .moves
        .remove(0)
}

async fn play_first_legal(client: &mut Client, t: &Table, ply: u32) -> pb::SubmitMoveResponse {
    let mv = first_legal(client, &t.id).await;
    submit(client, t, ply, mv).await.expect("move accepted")
}

fn reason(s: &tonic::Status) -> String {
    s.get_details_error_info().expect("ErrorInfo").reason
}

#[tokio::test]
async fn the_flag_falls_on_the_server_and_every_view_agrees() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // A generous first-move deadline, then 200 ms of Fischer time each.
    let (t, created) = create_timed(&mut c, fischer(200, 0, Some(30_000))).await;
    let tc = created.time_control.expect("time control echoed");
    assert_eq!(tc.first_move_deadline_ms, Some(30_000));
    let clock = created.clock.expect("clock");
    assert_eq!(
        (
            clock.remaining_ms.first().copied(),
            clock.remaining_ms.get(1).copied()
        ),
        (Some(200), Some(200))
    );
    assert!(clock.first_move_remaining_ms.is_some());

    let mut spectator = watch(&mut c, &t.id, "").await;
    assert!(matches!(
        next_item(&mut spectator).await,
        pb::watch_game_response::Item::Snapshot(_)
    ));
    let white_first = play_first_legal(&mut c, &t, 0).await.r#move.unwrap();
    let sent = Instant::now();
    play_first_legal(&mut c, &t, 1).await;
    // Both have started: white's 200 ms run and nobody moves.
    for ply in [1, 2] {
        let e = next_event(&mut spectator).await;
        assert_eq!(e.ply, ply);
        let clock = e.clock.expect("every event has the clocks");
        assert_eq!(
            (
                clock.remaining_ms.first().copied(),
                clock.remaining_ms.get(1).copied()
            ),
            (Some(200), Some(200)),
            "first moves are not charged"
        );
    }
    let over = next_event(&mut spectator).await;
    assert!(
        sent.elapsed() >= Duration::from_millis(200),
        "the flag never falls early"
    );
    let Some(pb::game_event::Kind::GameOver(g)) = over.kind else {
        panic!("expected the game over, got {over:?}");
    };
    let outcome = g.outcome.expect("outcome");
    assert_eq!(
        (
            outcome.reason.as_str(),
            outcome.winners.first().copied().unwrap_or(NO_SEAT)
        ),
        ("TIMEOUT", BLACK)
    );
    let clock = over.clock.expect("clock");
    assert_eq!(
        (
            clock.remaining_ms.first().copied(),
            clock.remaining_ms.get(1).copied(),
            clock.running
        ),
        (Some(0), Some(200), NO_SEAT)
    );
    // The stream ends with the game.
    assert!(within(10, spectator.message()).await.unwrap().is_none());

    // A late move is refused (before its legality is even looked at); the
    // snapshot says the same.
    let err = submit(&mut c, &t, 2, white_first).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert_eq!(reason(&err), "GAME_OVER");
    assert!(err.message().contains("TIMEOUT"), "{}", err.message());
    let g = get(&mut c, &t.id).await;
    assert_eq!(g.status, pb::GameStatus::Finished as i32);
    assert_eq!(g.outcome.unwrap().reason, "TIMEOUT");
    assert_eq!(g.ply, 2);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_side_that_never_starts_aborts_the_game() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let tc = pb::TimeControl {
        lag_compensation: None,
        mode: None,
        first_move_deadline_ms: Some(150),
    };
    let (t, _) = create_timed(&mut c, tc).await;
    let mut spectator = watch(&mut c, &t.id, "").await;
    next_item(&mut spectator).await;
    let over = next_event(&mut spectator).await;
    let Some(pb::game_event::Kind::GameOver(g)) = over.kind else {
        panic!("expected the game over, got {over:?}");
    };
    let outcome = g.outcome.unwrap();
    assert_eq!(outcome.reason, "ABORTED");
    assert!(outcome.draw);
    let g = get(&mut c, &t.id).await;
    assert_eq!(g.outcome.unwrap().reason, "ABORTED");
    server.stop().await.unwrap();
}

/// A label is a client's: a game a client labels `tournament_id` is no
/// tournament's game, and a missed first move still aborts it (only a
/// tournament's own games make it the absent seat's loss).
#[tokio::test]
async fn a_tournament_label_from_a_client_does_not_make_a_forfeit() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let r = c
        .create_game(pb::CreateGameRequest {
            time_control: Some(pb::TimeControl {
                lag_compensation: None,
                mode: None,
                first_move_deadline_ms: Some(150),
            }),
            labels: [("tournament_id".to_string(), "t-forged".to_string())].into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let id = r.game.unwrap().game_id;
    let mut spectator = watch(&mut c, &id, "").await;
    next_item(&mut spectator).await;
    let over = next_event(&mut spectator).await;
    let Some(pb::game_event::Kind::GameOver(g)) = over.kind else {
        panic!("expected the game over, got {over:?}");
    };
    let outcome = g.outcome.unwrap();
    assert_eq!(outcome.reason, "ABORTED");
    assert!(outcome.winners.is_empty(), "{outcome:?}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn presence_flips_when_a_players_stream_opens_and_closes() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let (t, created) = create_timed(&mut c, fischer(600_000, 0, None)).await;
    let p = created.presence.expect("presence");
    assert!(!p.seats[0].connected && !p.seats[1].connected);

    let mut spectator = watch(&mut c, &t.id, "").await;
    next_item(&mut spectator).await;

    let mut white_client = server.client().await;
    let mut white = watch(&mut white_client, &t.id, &t.white).await;
    let pb::watch_game_response::Item::Snapshot(own) = next_item(&mut white).await else {
        panic!("the player's stream starts with a snapshot");
    };
    assert!(own.presence.unwrap().seats[0].connected);
    let pb::watch_game_response::Item::Presence(p) = next_item(&mut spectator).await else {
        panic!("the spectator is told white arrived");
    };
    assert!(p.seats[0].connected && !p.seats[1].connected);
    assert!(get(&mut c, &t.id).await.presence.unwrap().seats[0].connected);

    // Events carry presence too.
    play_first_legal(&mut c, &t, 0).await;
    let e = next_event(&mut spectator).await;
    assert!(e.presence.expect("presence on events").seats[0].connected);

    // The player vanishes (its connection dropped): presence follows.
    drop(white);
    drop(white_client);
    let pb::watch_game_response::Item::Presence(p) = next_item(&mut spectator).await else {
        panic!("the spectator is told white left");
    };
    assert!(!p.seats[0].connected);
    assert!(!get(&mut c, &t.id).await.presence.unwrap().seats[0].connected);

    // A token that is no seat is refused, as in SubmitMove.
    let err = c
        .watch_game(pb::WatchGameRequest {
            game_id: t.id.clone(),
            token: "0123456789abcdef0123456789abcdef".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn victory_is_claimed_over_an_opponent_gone_long_enough() {
    let server = TestServer::start_with(ServerOptions {
        limits: Limits {
            abandon_after: Duration::from_millis(100),
            ..Limits::default()
        },
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let (t, _) = create_timed(&mut c, fischer(600_000, 0, None)).await;
    let claim = |c: &mut Client| {
        let mut c = c.clone();
        let req = pb::ClaimVictoryRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
            against: 0,
        };
        async move { c.claim_victory(req).await }
    };
    let err = claim(&mut c).await.unwrap_err();
    assert_eq!(
        (err.code(), reason(&err).as_str()),
        (Code::FailedPrecondition, "GAME_NOT_STARTED")
    );
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;

    let mut black_client = server.client().await;
    let mut black = watch(&mut black_client, &t.id, &t.black).await;
    next_item(&mut black).await;
    let err = claim(&mut c).await.unwrap_err();
    assert_eq!(reason(&err), "OPPONENT_PRESENT");

    drop(black);
    drop(black_client);
    // Wait (bounded) until the server has seen black go.
    within(10, async {
        while get(&mut c, &t.id).await.presence.unwrap().seats[1].connected {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let g = claim(&mut c)
        .await
        .expect("claim allowed")
        .into_inner()
        .game
        .unwrap();
    let outcome = g.outcome.unwrap();
    assert_eq!(
        (
            outcome.reason.as_str(),
            outcome.winners.first().copied().unwrap_or(NO_SEAT)
        ),
        ("ABANDONED", WHITE)
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn claims_without_a_clock_and_bad_time_controls_are_refused() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let g = get(&mut c, &t.id).await;
    assert_eq!(
        g.clock.unwrap().remaining_ms.first().copied(),
        None,
        "no clock"
    );
    let err = c
        .claim_victory(pb::ClaimVictoryRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
            against: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&err), "NO_CLOCK");

    let err = c
        .create_game(pb::CreateGameRequest {
            time_control: Some(fischer(0, 0, None)),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.get_details_bad_request().unwrap().field_violations[0].field,
        "time_control.fischer.initial_ms"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn get_game_reads_the_clock_at_each_call_within_one_ply() {
    // GetGame's answer is shared per ply, but its clock is read per call.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let (t, _) = create_timed(&mut c, fischer(600_000, 0, None)).await;
    play_first_legal(&mut c, &t, 0).await;
    play_first_legal(&mut c, &t, 1).await;
    let white_left = |g: &pb::Game| g.clock.as_ref().unwrap().remaining_ms[0];
    let first = get(&mut c, &t.id).await;
    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
    let second = get(&mut c, &t.id).await;
    assert_eq!((first.ply, second.ply), (2, 2));
    let spent = white_left(&first) - white_left(&second);
    assert!(
        spent >= 100,
        "white's clock ran {spent} ms between the reads"
    );
    assert_eq!(
        first.clock.as_ref().unwrap().remaining_ms[1],
        second.clock.as_ref().unwrap().remaining_ms[1],
        "black's clock stands"
    );
    server.stop().await.unwrap();
}
