//! The HTTP port (crate::service::http) through a real socket: the spectator page and
//! its files, board SVGs per ply (the same pictures as RenderPosition), the
//! JSON API, the Server-Sent Events stream, `/metrics`, and plain-text
//! refusals with precise codes.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use common::*;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// An HTTP answer: status, headers (lower-case names), body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    pub(crate) fn json(&self) -> Value {
        assert_eq!(self.header("content-type"), "application/json", "{self:?}");
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

/// Sends `GET path` and reads the status line and headers; the connection is
/// returned positioned at the body.
pub(crate) async fn request(
    addr: SocketAddr,
    path: &str,
) -> (u16, BTreeMap<String, String>, BufReader<TcpStream>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.unwrap();
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':').expect("a header");
        headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
    }
    (status, headers, reader)
}

pub(crate) async fn get(addr: SocketAddr, path: &str) -> Answer {
    within(10, async {
        let (status, headers, mut reader) = request(addr, path).await;
        let mut body = String::new();
        reader.read_to_string(&mut body).await.unwrap();
        if let Some(length) = headers.get("content-length") {
            assert_eq!(body.len(), length.parse::<usize>().unwrap(), "{path}");
        }
        Answer {
            status,
            headers,
            body,
        }
    })
    .await
}

/// One Server-Sent Event: its name and data.
pub(crate) async fn next_event(reader: &mut BufReader<TcpStream>) -> Option<(String, String)> {
    let mut name = String::new();
    let mut data = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.unwrap() == 0 {
            return None;
        }
        // Chunk sizes of the chunked encoding are hex-only lines: skipped,
        // like keep-alive comments.
        let l = line.trim_end_matches(['\r', '\n']);
        if let Some(v) = l.strip_prefix("event: ") {
            name = v.to_string();
        } else if let Some(v) = l.strip_prefix("data: ") {
            data.push_str(v);
        } else if l.is_empty() && !name.is_empty() {
            return Some((name, data));
        }
    }
}

async fn render(client: &mut Client, id: &str, ply: Option<u32>) -> String {
    client
        .render_position(pb::RenderPositionRequest {
            game_id: id.to_string(),
            ply,
            token: String::new(),
        })
        .await
        .expect("render")
        .into_inner()
        .svg
}

async fn labelled(client: &mut Client, labels: &[(&str, &str)]) -> Table {
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(ppb::Variant::Standard)),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    table_of(r.game.expect("game"), &r.seats)
}

async fn start() -> (TestServer, SocketAddr) {
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.expect("http port");
    (server, http)
}

#[tokio::test]
async fn the_page_and_its_files_are_served() {
    let (server, http) = start().await;
    let page = get(http, "/").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    assert!(page.body.starts_with("<!doctype html>"));
    assert!(
        page.body
            .contains(r#"<input id="ply" type="range" min="0" max="0" step="1" value="0">"#)
    );
    assert!(
        page.body
            .contains(r#"<script src="/app.js" defer></script>"#)
    );
    let script = get(http, "/app.js").await;
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("content-type"),
        "text/javascript; charset=utf-8"
    );
    assert!(script.body.contains("new EventSource("));
    let style = get(http, "/style.css").await;
    assert_eq!(style.status, 200);
    assert_eq!(style.header("content-type"), "text/css; charset=utf-8");

    let missing = get(http, "/nothing/here").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), "text/plain; charset=utf-8");
    assert_eq!(
        missing.body,
        "no such page: the spectator page is at /, the API under /api/games, metrics at /metrics\n"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn board_pictures_are_the_rendered_positions_of_each_ply() {
    let (server, http) = start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    for (ply, mv) in CONNECTION_GAME[..3].iter().enumerate() {
        submit(&mut client, &table, ply as u32, notation(mv))
            .await
            .unwrap();
    }
    for ply in 0..=3 {
        let answer = get(http, &format!("/games/{}.svg?ply={ply}", table.id)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(
            answer.header("content-type"),
            "image/svg+xml; charset=utf-8"
        );
        assert_eq!(answer.body, render(&mut client, &table.id, Some(ply)).await);
        assert_eq!(
            answer.body.matches(r#"<g class="piece "#).count(),
            ply as usize
        );
        // Past plies never change; the current one does.
        let cache = if ply < 3 {
            "public, max-age=3600, immutable"
        } else {
            "no-cache"
        };
        assert_eq!(answer.header("cache-control"), cache, "ply {ply}");
    }
    let now = get(http, &format!("/games/{}.svg", table.id)).await;
    assert_eq!(now.status, 200);
    assert_eq!(now.body, render(&mut client, &table.id, None).await);
    assert!(
        now.body
            .contains(r#"aria-label="PÜNCT board, black to move, ply 3""#)
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn bad_board_requests_get_readable_refusals() {
    let (server, http) = start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    submit(&mut client, &table, 0, notation(CONNECTION_GAME[0]))
        .await
        .unwrap();
    let cases = [
        (
            "/games/0123456789abcdef0123456789abcdef.svg".to_string(),
            404,
            "no game `0123456789abcdef0123456789abcdef`",
        ),
        (
            format!("/games/{}.svg?ply=2", table.id),
            400,
            "ply 2 is beyond the game's ply 1",
        ),
        (
            format!("/games/{}.svg?ply=-1", table.id),
            400,
            "ply: `-1` is not a ply (a whole number from 0)",
        ),
        (
            format!("/games/{}.svg?ply=4294967296", table.id),
            400,
            "ply: `4294967296` is not a ply (a whole number from 0)",
        ),
        (
            format!("/games/{}.svg?ply=1&ply=0", table.id),
            400,
            "`ply` is given more than once",
        ),
        (
            format!("/games/{}.svg?move=1", table.id),
            400,
            "unknown query parameter `move` (known: ply)",
        ),
        (
            format!("/games/{}.png", table.id),
            404,
            "a board picture is at /games/{id}.svg; game data is under /api/games/{id}",
        ),
        ("/api/games/nope".to_string(), 404, "no game `nope`"),
        (
            "/api/games?label=novalue".to_string(),
            400,
            "label: `novalue` is not key:value",
        ),
        (
            "/api/games?status=over".to_string(),
            400,
            "status: `over` is not a status (in_progress, finished or all)",
        ),
        (
            "/api/games?page_token=x".to_string(),
            400,
            "page_token: not a token returned by ListGames",
        ),
        ("/api/games/nope/events".to_string(), 404, "no game `nope`"),
    ];
    for (path, status, message) in cases {
        let answer = get(http, &path).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
        assert_eq!(
            answer.header("content-type"),
            "text/plain; charset=utf-8",
            "{path}"
        );
        assert_eq!(answer.body, format!("{message}\n"), "{path}");
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_game_list_filters_by_label_and_status() {
    let (server, http) = start().await;
    let mut client = server.client().await;
    let club = labelled(&mut client, &[("event", "club"), ("round", "1")]).await;
    let other = labelled(&mut client, &[("event", "other")]).await;
    for (ply, mv) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut client, &other, ply as u32, notation(mv))
            .await
            .unwrap();
    }
    let ids = |list: &Value| -> Vec<String> {
        list["games"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = get(http, "/api/games").await.json();
    assert_eq!(ids(&all), [club.id.as_str(), other.id.as_str()]);
    assert_eq!(all["next_page_token"], "");
    let first = &all["games"][0];
    assert_eq!(first["game"], "punct");
    assert_eq!(first["variant"], "standard");
    assert_eq!(first["status"], "in_progress");
    assert_eq!(first["to_move"], "white");
    assert_eq!(first["labels"]["round"], "1");

    let by_label = get(http, "/api/games?label=event:club&label=round:1")
        .await
        .json();
    assert_eq!(ids(&by_label), [club.id.as_str()]);
    let none = get(http, "/api/games?label=event:club&label=round:2")
        .await
        .json();
    assert_eq!(ids(&none), Vec::<&str>::new());
    let finished = get(http, "/api/games?status=finished").await.json();
    assert_eq!(ids(&finished), [other.id.as_str()]);
    assert_eq!(finished["games"][0]["outcome"]["winner"], "white");
    assert_eq!(finished["games"][0]["outcome"]["reason"], "CONNECTION");
    let live = get(http, "/api/games?status=in_progress").await.json();
    assert_eq!(ids(&live), [club.id.as_str()]);
    let paged = get(http, "/api/games?page_size=1").await.json();
    assert_eq!(ids(&paged), [club.id.as_str()]);
    let token = paged["next_page_token"].as_str().unwrap();
    let rest = get(http, &format!("/api/games?page_size=1&page_token={token}"))
        .await
        .json();
    assert_eq!(ids(&rest), [other.id.as_str()]);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_game_shows_moves_supplies_clocks_and_no_tokens() {
    let (server, http) = start().await;
    let mut client = server.client().await;
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(ppb::Variant::Standard)),
            time_control: Some(pb::TimeControl {
                lag_compensation: None,
                mode: Some(pb::time_control::Mode::Fischer(pb::FischerClock {
                    initial_ms: 300_000,
                    increment_ms: 2_000,
                })),
                first_move_deadline_ms: None,
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let table = table_of(r.game.unwrap(), &r.seats);
    for (ply, mv) in CONNECTION_GAME[..2].iter().enumerate() {
        submit(&mut client, &table, ply as u32, notation(mv))
            .await
            .unwrap();
    }
    let answer = get(http, &format!("/api/games/{}", table.id)).await;
    assert_eq!(answer.status, 200);
    assert!(!answer.body.contains(&table.white) && !answer.body.contains(&table.black));
    let game = answer.json();
    assert_eq!(game["id"], table.id.as_str());
    assert_eq!(game["ply"], 2);
    assert_eq!(game["to_move"], "white");
    assert_eq!(game["outcome"], Value::Null);
    // Each move of a timed game has its line of the latency ledger
    // (docs/LAG.md): no round trip measured over unary calls, nothing
    // credited.
    let mut moves = game["moves"].clone();
    for m in moves.as_array_mut().unwrap() {
        let latency = m.as_object_mut().unwrap().remove("latency").unwrap();
        assert!(latency["charged_ms"].is_u64(), "{latency}");
        assert_eq!(latency["compensated_ms"], 0);
        assert_eq!(latency["lag_ms"], Value::Null);
    }
    assert_eq!(
        moves,
        serde_json::json!([
            {"ply": 1, "seat": "white", "notation": "SE@E1:E2,E3", "kind": "place"},
            {"ply": 2, "seat": "black", "notation": "SE@M5:M6,M7", "kind": "place"},
        ])
    );
    // 18 pieces each (docs/rules/punct.md), one SE placed by each.
    for (i, seat) in ["white", "black"].into_iter().enumerate() {
        let supply = &game["supplies"][i];
        assert_eq!(supply["seat"], seat);
        assert_eq!(supply["total"], 17);
        let se = supply["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["code"] == "SE")
            .unwrap();
        assert_eq!(se["count"], 3);
    }
    let clock = &game["clock"];
    assert_eq!(clock["mode"], "fischer");
    assert_eq!(clock["running"], "white");
    let white = clock["remaining_ms"]["white"].as_u64().unwrap();
    let black = clock["remaining_ms"]["black"].as_u64().unwrap();
    assert!(white <= 302_000 && white > 290_000, "{white}");
    assert!(black <= 302_000 && black > 290_000, "{black}");
    assert_eq!(
        game["presence"],
        serde_json::json!({"white": false, "black": false})
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_event_stream_sends_each_move_and_ends_with_the_game() {
    let (server, http) = start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    let (status, headers, mut events) =
        request(http, &format!("/api/games/{}/events", table.id)).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    let (name, data) = within(5, next_event(&mut events))
        .await
        .expect("first event");
    assert_eq!(name, "game");
    let game: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(game["ply"], 0);
    assert_eq!(game["moves"], serde_json::json!([]));

    for (ply, mv) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut client, &table, ply as u32, notation(mv))
            .await
            .unwrap();
        let (name, data) = within(5, next_event(&mut events)).await.expect("a move");
        assert_eq!(name, "game");
        let game: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(game["ply"], ply + 1);
        assert_eq!(game["moves"][ply]["notation"], *mv);
    }
    // The game-over event, then the end of the stream.
    let (_, data) = within(5, next_event(&mut events)).await.expect("game over");
    let game: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(game["status"], "finished");
    assert_eq!(game["outcome"]["winner"], "white");
    assert_eq!(within(5, next_event(&mut events)).await, None);

    // The winning picture shows the chain.
    let svg = get(http, &format!("/games/{}.svg?ply=11", table.id)).await;
    assert!(svg.body.matches(r#"<circle class="chain""#).count() >= 17);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn event_streams_end_at_shutdown_and_count_as_watchers() {
    let options = punct_referee::service::ServerOptions {
        limits: punct_referee::service::sessions::Limits {
            max_watchers_per_game: 1,
            ..Default::default()
        },
        ..test_options()
    };
    let mut server = TestServer::start_with_http(options, None).await;
    let http = server.http.unwrap();
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    let path = format!("/api/games/{}/events", table.id);
    let (_, _, mut events) = request(http, &path).await;
    within(5, next_event(&mut events))
        .await
        .expect("first event");
    let second = get(http, &path).await;
    assert_eq!(second.status, 429);
    assert_eq!(second.body, "watchers_per_game limit reached (1)\n");

    server.begin_stop();
    assert_eq!(within(5, next_event(&mut events)).await, None);
    within(10, server.join()).await.unwrap();
}

#[tokio::test]
async fn metrics_are_rendered_or_refused_when_off() {
    let (server, http) = start().await;
    let off = get(http, "/metrics").await;
    assert_eq!(off.status, 404);
    assert_eq!(
        off.body,
        "metrics are turned off on this server (--no-metrics)\n"
    );
    server.stop().await.unwrap();

    // A recorder that is not the global one: the route renders whatever
    // it holds (tests/telemetry.rs checks the real counts end to end).
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        metrics::counter!("web_test_total").increment(3);
    });
    let server = TestServer::start_with_http(test_options(), Some(handle)).await;
    let on = get(server.http.unwrap(), "/metrics").await;
    assert_eq!(on.status, 200);
    assert_eq!(
        on.header("content-type"),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert!(on.body.contains("web_test_total 3\n"), "{}", on.body);
    server.stop().await.unwrap();
}

/// What GetGame shows of a finished game that does not depend on when it is
/// asked (presence and clocks are read at the time of asking).
fn settled(mut g: pb::Game) -> pb::Game {
    g.presence = None;
    g.clock = None;
    g
}

async fn game_of(client: &mut Client, id: &str) -> pb::Game {
    client
        .get_game(pb::GetGameRequest {
            game_id: id.to_string(),
            token: String::new(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner()
        .game
        .expect("game")
}

async fn export_of(client: &mut Client, id: &str) -> String {
    export_checked(client, id, "").await
}

/// Finished games are read back from the store once they leave memory
/// (after a restart, or after the finished TTL): GetGame, ExportGame,
/// RenderPosition, ListGames and the web page answer as before.
#[tokio::test]
async fn finished_games_are_served_after_a_restart_and_after_leaving_memory() {
    use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
    use punct_referee::service::{ServerOptions, StorageConfig};
    let dir = std::env::temp_dir().join(format!(
        "punct-finished-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let options = |finished_ttl: std::time::Duration| ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.clone(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        limits: punct_referee::service::sessions::Limits {
            finished_ttl,
            ..Default::default()
        },
        sweep_interval: std::time::Duration::from_millis(20),
        ..test_options()
    };
    let hour = std::time::Duration::from_secs(3600);
    let server = TestServer::start_with_http(options(hour), None).await;
    let http = server.http.unwrap();
    let mut client = server.client().await;
    let won = labelled(&mut client, &[("event", "cup")]).await;
    for (ply, mv) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut client, &won, ply as u32, notation(mv))
            .await
            .unwrap();
    }
    let resigned = labelled(&mut client, &[("event", "cup")]).await;
    submit(&mut client, &resigned, 0, notation(CONNECTION_GAME[0]))
        .await
        .unwrap();
    client
        .resign(pb::ResignRequest {
            game_id: resigned.id.clone(),
            token: resigned.black.clone(),
        })
        .await
        .unwrap();
    let playing = labelled(&mut client, &[("event", "cup")]).await;
    let mut before = Vec::new();
    for id in [&won.id, &resigned.id] {
        before.push((
            settled(game_of(&mut client, id).await),
            export_of(&mut client, id).await,
            render(&mut client, id, Some(1)).await,
            render(&mut client, id, None).await,
            get(http, &format!("/api/games/{id}")).await.json()["moves"].clone(),
        ));
    }
    assert_eq!(before[0].0.outcome.as_ref().unwrap().reason, "CONNECTION");
    assert_eq!(before[1].0.outcome.as_ref().unwrap().reason, "RESIGNATION");
    drop(client);
    server.stop().await.unwrap();

    // A restart whose finished games leave memory at once.
    let server = TestServer::start_with_http(options(std::time::Duration::ZERO), None).await;
    let http = server.http.unwrap();
    let mut client = server.client().await;
    for _ in 0..2 {
        for (id, want) in [&won.id, &resigned.id].into_iter().zip(&before) {
            assert_eq!(&settled(game_of(&mut client, id).await), &want.0, "{id}");
            assert_eq!(&export_of(&mut client, id).await, &want.1);
            assert_eq!(&render(&mut client, id, Some(1)).await, &want.2);
            assert_eq!(&render(&mut client, id, None).await, &want.3);
            let page = get(http, &format!("/api/games/{id}")).await;
            assert_eq!(page.status, 200);
            assert_eq!(page.json()["moves"], want.4);
            assert_eq!(page.json()["status"], "finished");
            let svg = get(http, &format!("/games/{id}.svg")).await;
            assert_eq!(svg.body, want.3);
        }
        let finished = client
            .list_games(pb::ListGamesRequest {
                status: pb::GameStatus::Finished as i32,
                labels: [("event".to_string(), "cup".to_string())].into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let ids: Vec<&str> = finished.games.iter().map(|g| g.game_id.as_str()).collect();
        assert_eq!(ids.len(), 2, "{ids:?}");
        assert!(ids.contains(&won.id.as_str()) && ids.contains(&resigned.id.as_str()));
        let all = client
            .list_games(pb::ListGamesRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(all.games.len(), 3);
        assert!(all.games.iter().any(|g| g.game_id == playing.id));
        let web = get(http, "/api/games?status=finished").await.json();
        assert_eq!(web["games"].as_array().unwrap().len(), 2);
        // Let the sweep drop what was read back; the next round reads it
        // from the store again.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Moves and actions on a finished game read back are refused as on any
    // finished game.
    let late = submit(&mut client, &won, 11, notation("SE@M5:M6,M7"))
        .await
        .unwrap_err();
    assert_eq!(late.code(), tonic::Code::FailedPrecondition, "{late:?}");
    drop(client);
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_dots_game_shows_its_seats_moves_scores_and_field() {
    use punct_referee::service::grpc::pb::dots::v1 as dpb;
    let (server, http) = start().await;
    let mut client = server.client().await;
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                    width: 5,
                    height: 5,
                    start: dpb::Start::Empty as i32,
                    max_moves: 0,
                })),
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let table = table_of(r.game.unwrap(), &r.seats);
    // docs/rules/dots.md §11.A: Red's seventh move captures Blue's 3,3.
    for (ply, mv) in ["3,2", "3,3", "2,3", "1,1", "4,3", "1,2", "3,4"]
        .iter()
        .enumerate()
    {
        let dots = pb::Move {
            game: Some(pb::r#move::Game::Dots(Box::new(dpb::Move {
                notation: mv.to_string(),
                ..Default::default()
            }))),
        };
        submit(&mut client, &table, ply as u32, dots).await.unwrap();
    }
    let game = get(http, &format!("/api/games/{}", table.id)).await.json();
    assert_eq!(game["game"], "dots");
    assert_eq!(game["variant"], "empty");
    assert_eq!(game["seats"], serde_json::json!(["red", "blue"]));
    assert_eq!(game["to_move"], "blue");
    assert_eq!(game["scores"], serde_json::json!([1, 0]));
    assert_eq!(game["supplies"], serde_json::json!([]));
    assert_eq!(
        game["moves"][6],
        serde_json::json!({"ply": 7, "seat": "red", "notation": "3,4", "kind": "place"})
    );
    let list = get(http, "/api/games").await.json();
    assert_eq!(list["games"][0]["game"], "dots");
    for ply in [0u32, 7] {
        let answer = get(http, &format!("/games/{}.svg?ply={ply}", table.id)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.body, render(&mut client, &table.id, Some(ply)).await);
        assert!(
            answer
                .body
                .contains(&format!(r#"aria-label="Dots field 5x5, ply {ply}""#)),
            "{}",
            answer.body
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_games_offered_are_listed_over_grpc_and_as_json_without_a_key() {
    // Keys on: ListGameKinds needs none (ListGames does).
    let dir = std::env::temp_dir().join(format!("punct-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys");
    let (_, line) = punct_referee::service::edge::access::new_key("reader", &[]);
    std::fs::write(&keys, format!("{line}\n")).unwrap();
    let options = punct_referee::service::ServerOptions {
        keys_file: Some(keys),
        ..test_options()
    };
    let server = TestServer::start_with_http(options, None).await;
    let http = server.http.unwrap();
    let mut client = server.client().await;
    let refused = client
        .list_games(pb::ListGamesRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    let kinds = client
        .list_game_kinds(pb::ListGameKindsRequest {})
        .await
        .unwrap()
        .into_inner()
        .kinds;
    let names: Vec<&str> = kinds.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["punct", "dots", "punto"]);
    // Each game's defaults, explicit, create that game.
    let punto = &kinds[2];
    assert_eq!(punto.default_seats, ["red-blue", "orange-green"]);
    match punto.default_rules.as_ref().and_then(|r| r.game.as_ref()) {
        Some(pb::game_rules::Game::Punto(o)) => {
            assert_eq!((o.players, o.rounds_to_win), (2, Some(2)));
        }
        other => panic!("{other:?}"),
    }
    let punct = &kinds[0];
    let variant = punct.options.iter().find(|o| o.name == "variant").unwrap();
    assert_eq!(variant.value_type, "punct.v1.Variant");
    assert_eq!(variant.default_value, "VARIANT_STANDARD");
    assert!(
        variant.description.contains("Basic or standard"),
        "{variant:?}"
    );

    // The same as JSON on the HTTP port.
    let answer = get(http, "/api/game-kinds").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let json = answer.json();
    let listed = json["kinds"].as_array().unwrap();
    assert_eq!(listed.len(), kinds.len());
    for (kind, json) in kinds.iter().zip(listed) {
        assert_eq!(json["name"], kind.name.as_str());
        assert_eq!(json["description"], kind.description.as_str());
        assert_eq!(json["default_seats"], serde_json::json!(kind.default_seats));
        let options = json["options"].as_array().unwrap();
        assert_eq!(options.len(), kind.options.len(), "{}", kind.name);
        for (option, json) in kind.options.iter().zip(options) {
            assert_eq!(json["name"], option.name.as_str());
            assert_eq!(json["type"], option.value_type.as_str());
            assert_eq!(json["default"], option.default_value.as_str());
        }
    }
    let dots_width = &listed[1]["options"][0];
    assert_eq!(dots_width["name"], "width");
    assert_eq!(dots_width["default"], "39");
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
