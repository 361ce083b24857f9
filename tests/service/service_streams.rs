//! Concurrency and streams through the real server: racing submissions,
//! request-id retries, late / resuming / never-reading watchers, shutdown with
//! a stream open, health and reflection.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use punct_referee::games::punct::{Engine, Move, RuleOptions};
use punct_referee::service::ServerOptions;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::sessions::Limits;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

type WatchStream = tonic::Streaming<pb::WatchGameResponse>;

async fn watch(client: &mut Client, id: &str, from_ply: Option<u32>) -> WatchStream {
    client
        .watch_game(pb::WatchGameRequest {
            game_id: id.to_string(),
            from_ply,
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner()
}

async fn next_item(stream: &mut WatchStream) -> pb::WatchGameResponse {
    within(10, stream.message())
        .await
        .expect("stream error")
        .expect("stream ended")
}

fn snapshot(m: &pb::WatchGameResponse) -> &pb::Game {
    match &m.item {
        Some(pb::watch_game_response::Item::Snapshot(g)) => g,
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

fn event(m: &pb::WatchGameResponse) -> &pb::GameEvent {
    match &m.item {
        Some(pb::watch_game_response::Item::Event(e)) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// The first legal moves at the game's current ply, as notation.
async fn legal_texts(client: &mut Client, id: &str) -> Vec<String> {
    client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: id.to_string(),
            seat: 0,
            token: String::new(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .moves
        .iter()
        .map(|m| punct_of(m).notation.clone())
        .collect()
}

#[tokio::test]
async fn racing_clients_for_one_ply_exactly_one_is_applied() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let t = create(&mut a, ppb::Variant::Standard).await;
    for ply in 0..10u32 {
        let texts = legal_texts(&mut a, &t.id).await;
        let (ra, rb) = tokio::join!(
            submit(&mut a, &t, ply, notation(&texts[0])),
            submit(&mut b, &t, ply, notation(&texts[texts.len() - 1])),
        );
        let (won, lost) = match (ra, rb) {
            (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
            (ra, rb) => panic!("exactly one must win: {ra:?} / {rb:?}"),
        };
        assert_eq!(won.ply, ply + 1);
        assert_eq!(lost.code(), Code::Aborted, "{lost:?}");
    }
    assert_eq!(get(&mut a, &t.id).await.ply, 10);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn request_id_retries_apply_once_and_return_the_first_answer() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let t = create(&mut a, ppb::Variant::Standard).await;
    let request = |id: &str, text: &str| pb::SubmitMoveRequest {
        game_id: t.id.clone(),
        token: t.white.clone(),
        r#move: Some(notation(text)),
        expected_ply: 0,
        request_id: id.to_string(),
    };
    // Two copies of one request at once (a client retrying on a timeout).
    let (ra, rb) = tokio::join!(
        a.submit_move(request("req-1", "SE@E5:F5,G5")),
        b.submit_move(request("req-1", "SE@E5:F5,G5")),
    );
    let (ra, rb) = (ra.unwrap().into_inner(), rb.unwrap().into_inner());
    assert_eq!(ra.ply, 1);
    assert_eq!(rb.ply, 1);
    assert_eq!(ra.r#move, rb.r#move);
    assert!(
        ra.replayed != rb.replayed,
        "exactly one is the first answer"
    );
    // A later retry still gets it.
    let again = a
        .submit_move(request("req-1", "SE@E5:F5,G5"))
        .await
        .unwrap()
        .into_inner();
    assert!(again.replayed);
    assert_eq!(again.ply, 1);
    assert_eq!(get(&mut a, &t.id).await.ply, 1);
    // Reusing the id for another move is a client error.
    let s = a
        .submit_move(request("req-1", "SE@A5:A6,A7"))
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn late_and_resuming_watchers_miss_nothing_and_see_no_duplicates() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    for (ply, text) in CONNECTION_GAME[..3].iter().enumerate() {
        submit(&mut c, &t, ply as u32, notation(text))
            .await
            .unwrap();
    }
    let mut late = watch(&mut c, &t.id, None).await;
    let first = next_item(&mut late).await;
    assert_eq!((snapshot(&first).ply, first.sequence), (3, 3));

    let mut resumed = watch(&mut c, &t.id, Some(1)).await;
    let first = next_item(&mut resumed).await;
    let at1 = snapshot(&first);
    assert_eq!((at1.ply, first.sequence, at1.to_move), (1, 1, BLACK));
    assert_eq!(
        punct_of(at1.last_move.as_ref().unwrap()).notation,
        CONNECTION_GAME[0]
    );

    for (ply, text) in CONNECTION_GAME.iter().enumerate().skip(3) {
        submit(&mut c, &t, ply as u32, notation(text))
            .await
            .unwrap();
    }
    for (stream, from) in [(&mut late, 3u64), (&mut resumed, 1)] {
        let mut seen = Vec::new();
        while let Some(m) = within(10, stream.message()).await.unwrap() {
            seen.push(event(&m).sequence);
        }
        let expected: Vec<u64> = (from + 1..=12).collect();
        assert_eq!(seen, expected);
    }
    server.stop().await.unwrap();
}

/// A game long enough to overflow every buffer between a watcher and the
/// game: moves chosen with the local engine so that none ends it.
fn long_game(plies: usize) -> Vec<String> {
    let mut game = Engine::new(RuleOptions {
        max_plies: 0,
        repetition_limit: 0,
        ..RuleOptions::default()
    });
    let mut out = Vec::new();
    while out.len() < plies {
        let legal = game.legal_moves();
        // Prefer moves of pieces on the board: placements run out.
        let mut ordered: Vec<Move> = legal
            .iter()
            .copied()
            .filter(|m| matches!(m, Move::Shift { .. }))
            .collect();
        ordered.extend(
            legal
                .iter()
                .copied()
                .filter(|m| matches!(m, Move::Place { .. })),
        );
        let pick = ordered
            .into_iter()
            .find(|&m| game.clone().play(m).is_ok_and(|p| p.outcome.is_none()))
            .expect("a move that does not end the game");
        out.push(game.position().notate(pick).unwrap().to_string());
        game.play(pick).unwrap();
    }
    out
}

#[tokio::test]
async fn a_watcher_that_never_reads_neither_stalls_the_game_nor_buffers_forever() {
    let server = TestServer::start_with(ServerOptions {
        limits: Limits {
            watch_buffer: 4,
            ..Limits::default()
        },
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let t = c
        .create_game(pb::CreateGameRequest {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
                    max_plies: Some(0),
                    repetition_limit: Some(0),
                    ..Default::default()
                })),
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let t = table_of(t.game.unwrap(), &t.seats);
    // The idle watcher has its own connection with a tiny receive window, so
    // the server can hardly send it anything until it reads.
    let lazy_channel = server
        .endpoint()
        .initial_stream_window_size(Some(1024))
        .connect()
        .await
        .unwrap();
    let mut lazy_client = pb::referee_service_client::RefereeServiceClient::new(lazy_channel);
    let mut lazy = watch(&mut lazy_client, &t.id, None).await;
    let mut eager = watch(&mut c, &t.id, None).await;
    assert_eq!(snapshot(&next_item(&mut eager).await).ply, 0);

    let moves = long_game(400);
    let started = Instant::now();
    for (ply, text) in moves.iter().enumerate() {
        let r = submit(&mut c, &t, ply as u32, notation(text))
            .await
            .unwrap();
        assert_eq!(r.ply, ply as u32 + 1);
        // The reading watcher keeps up, event by event.
        assert_eq!(event(&next_item(&mut eager).await).sequence, ply as u64 + 1);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the game was held up"
    );

    // Now the lazy watcher reads: its first snapshot, whatever fit in the
    // buffers, then a fresh snapshot instead of the events it missed, then on.
    assert_eq!(snapshot(&next_item(&mut lazy).await).ply, 0);
    let total = moves.len() as u64;
    let mut last = 0;
    let mut resyncs = 0;
    let mut received = 0;
    while last < total {
        let m = next_item(&mut lazy).await;
        received += 1;
        match &m.item {
            Some(pb::watch_game_response::Item::Snapshot(g)) => {
                assert!(m.resync);
                assert!(m.sequence > last);
                assert_eq!(u64::from(g.ply), m.sequence);
                resyncs += 1;
                last = m.sequence;
            }
            Some(pb::watch_game_response::Item::Event(e)) => {
                assert_eq!(e.sequence, last + 1, "events stay in order without gaps");
                last = e.sequence;
            }
            Some(pb::watch_game_response::Item::Presence(_)) => {
                panic!("no player streams here, so no presence flips")
            }
            Some(pb::watch_game_response::Item::RoundOver(_)) => {
                panic!("a PÜNCT game has no rounds")
            }
            None => panic!("empty item"),
        }
    }
    assert!(resyncs >= 1, "the lazy watcher was resynchronised");
    assert!(received < total, "it was not sent every event");
    // It is live again afterwards.
    let texts = legal_texts(&mut c, &t.id).await;
    submit(&mut c, &t, total as u32, notation(&texts[0]))
        .await
        .unwrap();
    assert_eq!(event(&next_item(&mut lazy).await).sequence, total + 1);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_reports_not_serving() {
    let mut server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let mut stream = watch(&mut c, &t.id, None).await;
    next_item(&mut stream).await;

    let mut health = HealthClient::new(server.channel().await);
    let serving = health
        .check(HealthCheckRequest {
            service: "referee.v1.RefereeService".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(serving.status, ServingStatus::Serving as i32);
    let mut health_watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = within(5, health_watch.message()).await.unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::Serving as i32);

    let started = Instant::now();
    server.begin_stop();
    // Health says NOT_SERVING to those still connected.
    let next = within(5, health_watch.message()).await.unwrap().unwrap();
    assert_eq!(next.status, ServingStatus::NotServing as i32);
    // The open watch stream ends promptly with UNAVAILABLE.
    let end = within(5, stream.message()).await;
    assert_eq!(end.unwrap_err().code(), Code::Unavailable);
    drop(health_watch);
    within(10, server.join()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn reflection_lists_the_services_in_v1_and_v1alpha() {
    use tonic_reflection::pb::{v1, v1alpha};
    let server = TestServer::start().await;

    let mut client =
        v1alpha::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let request = v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1alpha::server_reflection_request::MessageRequest::ListServices(String::new()),
        ),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = within(5, responses.message()).await.unwrap().unwrap();
    let names: Vec<String> = match response.message_response.unwrap() {
        v1alpha::server_reflection_response::MessageResponse::ListServicesResponse(l) => {
            l.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("unexpected {other:?}"),
    };
    assert!(
        names.contains(&"referee.v1.RefereeService".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"grpc.health.v1.Health".to_string()),
        "{names:?}"
    );

    let mut client =
        v1::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1::server_reflection_request::MessageRequest::FileContainingSymbol(
                "punct.v1.Board".into(),
            ),
        ),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = within(5, responses.message()).await.unwrap().unwrap();
    assert!(matches!(
        response.message_response,
        Some(v1::server_reflection_response::MessageResponse::FileDescriptorResponse(_))
    ));
    server.stop().await.unwrap();
}
