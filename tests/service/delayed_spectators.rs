//! Delayed spectators through the real server (docs/SPECTATOR.md, "Delayed
//! spectators"): a game created with the `spectator-delay` label shows a
//! spectator, on every surface (gRPC reads, listings, legal moves, pictures,
//! export, refusals, watch streams, the HTTP JSON, SVG and SSE), the game as
//! it was the delay ago, and ends for it only after the delay; the seats
//! see the live game.

use crate::common;
#[path = "delayed_spectators/server.rs"]
mod server;
use crate::service_http::{get as http_get, next_event, request};

use std::time::{Duration, Instant};

use common::*;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tonic::Code;

type WatchStream = tonic::Streaming<pb::WatchGameResponse>;

const IN_PROGRESS: i32 = pb::GameStatus::InProgress as i32;
const FINISHED: i32 = pb::GameStatus::Finished as i32;

async fn delayed_game(client: &mut Client, delay: &str) -> Table {
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(ppb::Variant::Standard)),
            labels: [("spectator-delay".to_string(), delay.to_string())].into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    table_of(r.game.expect("game"), &r.seats)
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

/// The next snapshot or event of `stream`: its ply, and whether it is the
/// game-over event. Presence flips are skipped.
async fn next_ply(stream: &mut WatchStream) -> (u32, bool) {
    loop {
        let item = within(20, stream.message())
            .await
            .expect("stream error")
            .expect("stream ended");
        match item.item {
            Some(pb::watch_game_response::Item::Snapshot(g)) => return (g.ply, false),
            Some(pb::watch_game_response::Item::Event(e)) => {
                let over = matches!(e.kind, Some(pb::game_event::Kind::GameOver(_)));
                return (e.ply, over);
            }
            _ => {}
        }
    }
}

async fn get_as(client: &mut Client, id: &str, token: &str) -> pb::Game {
    client
        .get_game(pb::GetGameRequest {
            game_id: id.to_string(),
            token: token.to_string(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner()
        .game
        .expect("game")
}

async fn legal_as(client: &mut Client, id: &str, token: &str) -> (u32, Vec<String>) {
    let r = client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: id.to_string(),
            token: token.to_string(),
            view: pb::MovesView::Notation as i32,
            ..Default::default()
        })
        .await
        .expect("legal moves")
        .into_inner();
    (r.ply, r.notations)
}

async fn render_as(
    client: &mut Client,
    id: &str,
    token: &str,
    ply: Option<u32>,
) -> Result<pb::RenderPositionResponse, tonic::Status> {
    client
        .render_position(pb::RenderPositionRequest {
            game_id: id.to_string(),
            ply,
            token: token.to_string(),
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn export_as(client: &mut Client, id: &str, token: &str) -> String {
    client
        .export_game(pb::ExportGameRequest {
            game_id: id.to_string(),
            token: token.to_string(),
        })
        .await
        .expect("export")
        .into_inner()
        .record
}

/// The summary ListGames gives of game `id`.
async fn listed(client: &mut Client, id: &str) -> pb::GameSummary {
    client
        .list_games(pb::ListGamesRequest::default())
        .await
        .expect("list")
        .into_inner()
        .games
        .into_iter()
        .find(|g| g.game_id == id)
        .expect("listed")
}

/// What a seat could read of the game at one ply: what a delayed spectator
/// must be shown, byte for byte, once that ply is shown.
struct Seen {
    game: pb::Game,
    legal: (u32, Vec<String>),
    svg: String,
    record: String,
}

async fn seen_live(client: &mut Client, t: &Table) -> Seen {
    let mut game = get_as(client, &t.id, &t.white).await;
    // A seat's answer names its viewer and carries presence and the
    // standing draw offers; a spectator's does not.
    game.viewer = 0;
    game.presence = None;
    Seen {
        game,
        legal: legal_as(client, &t.id, &t.white).await,
        svg: render_as(client, &t.id, &t.white, None).await.unwrap().svg,
        record: export_as(client, &t.id, &t.white).await,
    }
}

#[tokio::test]
async fn a_ply_delayed_spectator_sees_every_surface_three_plies_behind_and_the_end_at_the_end() {
    const DELAY: u32 = 3;
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.expect("http port");
    let mut c = server.client().await;
    let t = delayed_game(&mut c, "3 plies").await;
    let mut spectator = watch(&mut c, &t.id, "").await;
    let mut seat = watch(&mut c, &t.id, &t.white).await;
    assert_eq!(next_ply(&mut spectator).await, (0, false));
    assert_eq!(next_ply(&mut seat).await, (0, false));
    let (_, _, mut sse) = request(http, &format!("/api/games/{}/events", t.id)).await;
    let sse_ply = |data: &str| -> u64 {
        serde_json::from_str::<serde_json::Value>(data).unwrap()["ply"]
            .as_u64()
            .unwrap()
    };
    let (name, data) = within(10, next_event(&mut sse)).await.unwrap();
    assert_eq!((name.as_str(), sse_ply(&data)), ("game", 0));

    // What the seats saw at each ply, before the spectator may see it.
    let mut seen: Vec<Seen> = Vec::new();
    let mut json_at: Vec<serde_json::Value> = Vec::new();
    for (i, mv) in CONNECTION_GAME.iter().enumerate() {
        seen.push(seen_live(&mut c, &t).await);
        let ply = i as u32;
        submit(&mut c, &t, ply, notation(mv)).await.expect("move");
        let live = ply + 1;
        // The seat's stream and reads are live.
        assert_eq!(next_ply(&mut seat).await, (live, false));
        assert_eq!(get_as(&mut c, &t.id, &t.black).await.ply, live);
        if live == 11 {
            break;
        }
        let shown = live.saturating_sub(DELAY);
        let expected = &seen[shown as usize];
        // gRPC reads.
        let mut game = get(&mut c, &t.id).await;
        assert_eq!((game.ply, game.status), (shown, IN_PROGRESS), "ply {live}");
        assert!(game.presence.as_ref().is_none_or(|p| p.seats.is_empty()));
        game.presence = None;
        assert_eq!(game, expected.game, "GetGame at live ply {live}");
        assert_eq!(legal_as(&mut c, &t.id, "").await, expected.legal);
        let picture = render_as(&mut c, &t.id, "", None).await.unwrap();
        assert_eq!((picture.ply, &picture.svg), (shown, &expected.svg));
        assert_eq!(export_as(&mut c, &t.id, "").await, expected.record);
        let summary = listed(&mut c, &t.id).await;
        assert_eq!((summary.ply, summary.status), (shown, IN_PROGRESS));
        // A later ply is refused naming the shown ply, never the live one.
        let refused = render_as(&mut c, &t.id, "", Some(shown + 1))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::OutOfRange);
        assert_eq!(
            refused.message(),
            format!("ply {} is beyond the game's ply {shown}", shown + 1)
        );
        // The HTTP surfaces.
        let json = http_get(http, &format!("/api/games/{}", t.id)).await.json();
        assert_eq!(json["ply"], shown);
        assert_eq!(json["moves"].as_array().unwrap().len(), shown as usize);
        assert_eq!(json["presence"], serde_json::json!({}));
        json_at.push(json);
        let svg = http_get(http, &format!("/games/{}.svg", t.id)).await;
        assert_eq!((svg.status, &svg.body), (200, &expected.svg));
        let beyond = http_get(http, &format!("/games/{}.svg?ply={}", t.id, shown + 1)).await;
        assert_eq!(beyond.status, 400);
        assert_eq!(
            beyond.body.trim_end(),
            format!("ply {} is beyond the game's ply {shown}", shown + 1)
        );
        let list = http_get(http, "/api/games").await.json();
        let mine = list["games"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == t.id.as_str())
            .unwrap()
            .clone();
        assert_eq!(
            (mine["ply"].clone(), mine["status"].clone()),
            (shown.into(), "in_progress".into())
        );
        // The streams: ply `live - 3` comes when `live` is played, exactly.
        if live > DELAY {
            assert_eq!(next_ply(&mut spectator).await, (shown, false));
            let (name, data) = within(10, next_event(&mut sse)).await.unwrap();
            assert_eq!((name.as_str(), sse_ply(&data)), ("game", u64::from(shown)));
        }
    }
    // Over: the last three plies and the end come at once, then the stream
    // ends; every surface shows the finished game.
    for ply in 8..=11 {
        assert_eq!(next_ply(&mut spectator).await, (ply, false));
    }
    assert_eq!(next_ply(&mut spectator).await, (11, true));
    assert!(within(10, spectator.message()).await.unwrap().is_none());
    let game = get(&mut c, &t.id).await;
    assert_eq!((game.ply, game.status), (11, FINISHED));
    assert_eq!(game.outcome.expect("outcome").winners, vec![WHITE]);
    assert_eq!(listed(&mut c, &t.id).await.status, FINISHED);
    assert_eq!(
        export_as(&mut c, &t.id, "").await,
        export_as(&mut c, &t.id, &t.white).await
    );
    let mut last = None;
    while let Some((name, data)) = within(10, next_event(&mut sse)).await {
        assert_eq!(name, "game");
        last = Some(sse_ply(&data));
    }
    assert_eq!(last, Some(11));
    // The JSON a spectator read at each shown ply never named a later one.
    for (i, json) in json_at.iter().enumerate() {
        assert_eq!(json["ply"], (i as u32 + 1).saturating_sub(DELAY));
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_time_delayed_spectator_stream_lags_by_the_delay_and_ends_after_it() {
    const DELAY: Duration = Duration::from_secs(1);
    // A move's time is taken before it is acknowledged: an event is never
    // shown earlier than the delay after the acknowledgement, less the
    // acknowledgement's own way back (a bound, not a speed).
    const SLACK: Duration = Duration::from_millis(200);
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.expect("http port");
    let mut c = server.client().await;
    let t = delayed_game(&mut c, "1 s").await;
    let mut spectator = watch(&mut c, &t.id, "").await;
    assert_eq!(next_ply(&mut spectator).await, (0, false));
    let mut acknowledged = Vec::new();
    for (ply, mv) in CONNECTION_GAME[..3].iter().enumerate() {
        submit(&mut c, &t, ply as u32, notation(mv))
            .await
            .expect("move");
        acknowledged.push(Instant::now());
        // Just played: no spectator surface shows it yet.
        assert!(get(&mut c, &t.id).await.ply <= ply as u32);
        assert_eq!(get_as(&mut c, &t.id, &t.white).await.ply, ply as u32 + 1);
    }
    for (i, at) in acknowledged.iter().enumerate() {
        assert_eq!(next_ply(&mut spectator).await, (i as u32 + 1, false));
        let lag = at.elapsed();
        assert!(lag + SLACK >= DELAY, "ply {} shown after {lag:?}", i + 1);
    }
    // A resignation ends the game for the seats at once, for spectators a
    // second later.
    c.resign(pb::ResignRequest {
        game_id: t.id.clone(),
        token: t.black.clone(),
    })
    .await
    .expect("resign");
    let resigned = Instant::now();
    assert_eq!(get_as(&mut c, &t.id, &t.white).await.status, FINISHED);
    let game = get(&mut c, &t.id).await;
    if resigned.elapsed() + SLACK < DELAY {
        assert_eq!(
            (game.ply, game.status, game.outcome),
            (3, IN_PROGRESS, None)
        );
        let json = http_get(http, &format!("/api/games/{}", t.id)).await.json();
        assert_eq!(
            (json["status"].clone(), json["outcome"].clone()),
            ("in_progress".into(), serde_json::Value::Null)
        );
    }
    assert_eq!(next_ply(&mut spectator).await, (3, true));
    let lag = resigned.elapsed();
    assert!(lag + SLACK >= DELAY, "the end shown after {lag:?}");
    assert!(within(10, spectator.message()).await.unwrap().is_none());
    assert_eq!(get(&mut c, &t.id).await.status, FINISHED);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_spectator_delay_that_is_not_a_delay_is_refused() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for bad in ["3 weeks", "-1 s", "plies", "10001 plies"] {
        let e = c
            .create_game(pb::CreateGameRequest {
                rules: Some(rules(ppb::Variant::Standard)),
                labels: [("spectator-delay".to_string(), bad.to_string())].into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{bad}");
        assert!(e.message().contains("spectator-delay"), "{}", e.message());
    }
    server.stop().await.unwrap();
}
