//! Webhooks through a real server and a real HTTP receiver started here:
//! every game event delivered, signed (checked as a platform would), in
//! order per game, through a receiver that refuses a while and a server
//! restarted mid-queue; registration's refusals.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use punct_referee::service::grpc::pb::referee::v1::webhook_service_client::WebhookServiceClient;
use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
use punct_referee::service::webhooks::WebhookOptions;
use punct_referee::service::{ServerOptions, StorageConfig};
use tonic::Code;

use crate::common::*;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;

/// What the receiver got: (webhook-id, timestamp, signature, body).
type Got = Arc<Mutex<Vec<(String, String, String, String)>>>;

/// An HTTP receiver on a loopback port: records every request and answers
/// 503 while `down` is above zero (counting down), else 204.
async fn receiver(down: Arc<Mutex<u32>>) -> (String, Got) {
    let got: Got = Arc::default();
    let (g, d) = (got.clone(), down);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: http::HeaderMap, body: String| {
            let (g, d) = (g.clone(), d.clone());
            async move {
                let h = |n: &str| {
                    headers
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                g.lock().unwrap().push((
                    h("webhook-id"),
                    h("webhook-timestamp"),
                    h("webhook-signature"),
                    body,
                ));
                let mut d = d.lock().unwrap();
                if *d > 0 {
                    *d -= 1;
                    http::StatusCode::SERVICE_UNAVAILABLE
                } else {
                    http::StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// Verifies a delivery as a platform does: HMAC-SHA256 of
/// `id.timestamp.body` with the secret, and a timestamp within 5 minutes.
fn verify(secret: &str, id: &str, timestamp: &str, signature: &str, body: &str) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let ts: i64 = timestamp.parse().unwrap_or(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let expected = base64::engine::general_purpose::STANDARD.encode(ring::hmac::sign(
        &key,
        format!("{id}.{timestamp}.{body}").as_bytes(),
    ));
    (now - ts).abs() <= 300
        && signature
            .split(' ')
            .any(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
}

/// Whether each client kit's own verifier (clients/python, clients/node)
/// accepts the delivery; kits whose interpreter is not installed are left
/// out. Returns (kit, accepted).
fn kits_verify(
    secret: &str,
    id: &str,
    ts: &str,
    sig: &str,
    body: &str,
) -> Vec<(&'static str, bool)> {
    let root = env!("CARGO_MANIFEST_DIR");
    let python = format!(
        "import importlib.util, os, sys\n\
         spec = importlib.util.spec_from_file_location('w', '{root}/clients/python/punct_client/webhooks.py')\n\
         w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)\n\
         e = os.environ\n\
         h = {{'webhook-id': e['H_ID'], 'webhook-timestamp': e['H_TS'], 'webhook-signature': e['H_SIG']}}\n\
         try:\n    w.verify_delivery(e['H_SECRET'], h, e['H_BODY'].encode())\nexcept w.WebhookVerificationError:\n    sys.exit(3)\n"
    );
    let node = format!(
        "const w = await import('{root}/clients/node/src/webhooks.js'); const e = process.env;\n\
         try {{ w.verifyDelivery(e.H_SECRET, {{'webhook-id': e.H_ID, 'webhook-timestamp': e.H_TS, \
         'webhook-signature': e.H_SIG}}, e.H_BODY); }} catch (err) {{ process.exit(3); }}"
    );
    let mut results = Vec::new();
    for (kit, program, args) in [
        ("python", "python3", vec!["-c", python.as_str()]),
        (
            "node",
            "node",
            vec!["--input-type=module", "-e", node.as_str()],
        ),
    ] {
        let run = std::process::Command::new(program)
            .args(&args)
            .env("H_SECRET", secret)
            .env("H_ID", id)
            .env("H_TS", ts)
            .env("H_SIG", sig)
            .env("H_BODY", body)
            .output();
        let Ok(out) = run else { continue };
        match out.status.code() {
            Some(0) => results.push((kit, true)),
            Some(3) => results.push((kit, false)),
            _ => panic!("{kit} kit: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }
    results
}

fn options(dir: &std::path::Path) -> ServerOptions {
    ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.to_path_buf(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        webhooks: WebhookOptions {
            allow_private: true,
            backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            max_attempts: 1000,
            poll: Duration::from_millis(20),
            ..WebhookOptions::default()
        },
        ..test_options()
    }
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "punct-webhooks-{what}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

async fn hooks(server: &TestServer) -> WebhookServiceClient<tonic::transport::Channel> {
    WebhookServiceClient::new(server.channel().await)
}

/// The bodies delivered (2xx answers count only once: the last request
/// for an id is the one answered 204), by id, in arrival order.
async fn wait_for(got: &Got, n: usize) -> Vec<(String, String, String, String)> {
    within(30, async {
        loop {
            let all = got.lock().unwrap().clone();
            let mut seen: Vec<String> = Vec::new();
            for (id, ..) in &all {
                if !seen.contains(id) {
                    seen.push(id.clone());
                }
            }
            if seen.len() >= n {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn every_game_event_is_delivered_signed_in_order_through_refusals_and_a_restart() {
    let dir = temp_dir("deliver");
    let down = Arc::new(Mutex::new(3));
    let (url, got) = receiver(down.clone()).await;
    let server = TestServer::start_with(options(&dir)).await;
    let created = hooks(&server)
        .await
        .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
            url: url.clone(),
            event_kinds: vec![
                "game.created".into(),
                "game.move".into(),
                "game.ended".into(),
            ],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let secret = created.secret.clone();
    assert!(secret.starts_with("whsec_"));
    let endpoint = created.endpoint.unwrap();
    let mut client = server.client().await;
    let t = create(&mut client, ppb::Variant::Standard).await;
    submit(&mut client, &t, 0, notation(CONNECTION_GAME[0]))
        .await
        .unwrap();
    client
        .resign(pb::ResignRequest {
            game_id: t.id.clone(),
            token: t.black.clone(),
        })
        .await
        .unwrap();
    // created, move 1, ended: the first three attempts were refused.
    let all = wait_for(&got, 3).await;
    assert!(
        all.len() >= 4,
        "the refused attempts were retried: {}",
        all.len()
    );
    let mut delivered: Vec<(String, serde_json::Value)> = Vec::new();
    for (id, ts, sig, body) in &all {
        assert!(verify(&secret, id, ts, sig, body), "signature of {id}");
        assert!(!verify(
            "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            id,
            ts,
            sig,
            body
        ));
        if !delivered.iter().any(|(d, _)| d == id) {
            delivered.push((id.clone(), serde_json::from_str(body).unwrap()));
        }
    }
    // The kits' own verifiers agree, and refuse a changed body.
    let (id, ts, sig, body) = all.last().unwrap();
    let kits = kits_verify(&secret, id, ts, sig, body);
    assert!(!kits.is_empty(), "no kit could run (python3 or node)");
    assert!(kits.iter().all(|(_, ok)| *ok), "{kits:?}");
    let tampered = body.replacen("game", "gamE", 1);
    assert!(
        kits_verify(&secret, id, ts, sig, &tampered)
            .iter()
            .all(|(_, ok)| !*ok)
    );
    let kinds: Vec<&str> = delivered
        .iter()
        .map(|(_, b)| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["game.created", "game.move", "game.ended"],
        "in order per game"
    );
    for (_, b) in &delivered {
        assert_eq!(b["data"]["game_id"], t.id.as_str());
        assert_eq!(b["data"]["kind"], "punct/standard");
    }
    assert_eq!(delivered[2].1["data"]["status"], "finished");
    assert_eq!(delivered[2].1["data"]["outcome"]["reason"], "RESIGNATION");
    assert_eq!(delivered[2].1["data"]["ply"], 1);
    // The end carries the game's signed receipt: the one ExportGame gives.
    let exported = client
        .export_game(pb::ExportGameRequest {
            game_id: t.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let receipt: serde_json::Value = serde_json::from_str(&exported.receipt).unwrap();
    assert_eq!(delivered[2].1["data"]["receipt"], receipt);
    assert!(delivered[0].1["data"].get("receipt").is_none());
    // Retries kept their id: every request's id is one of the three.
    assert!(
        all.iter()
            .all(|(id, ..)| delivered.iter().any(|(d, _)| d == id))
    );

    // The receiver goes down for good; a game is created and the server
    // stopped with its event undelivered, then started again.
    *down.lock().unwrap() = u32::MAX;
    let before = got.lock().unwrap().len();
    let t2 = create(&mut client, ppb::Variant::Standard).await;
    within(10, async {
        while got.lock().unwrap().len() == before {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    server.stop().await.unwrap();
    let server = TestServer::start_with(options(&dir)).await;
    let list = hooks(&server)
        .await
        .list_webhook_deliveries(pb::ListWebhookDeliveriesRequest {
            endpoint_id: endpoint.id.clone(),
            status: "pending".into(),
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner()
        .deliveries;
    assert_eq!(list.len(), 1, "the undelivered event is still queued");
    assert_eq!(list[0].subject_id, t2.id);
    assert!(list[0].attempts >= 1 && !list[0].last_error.is_empty());
    *down.lock().unwrap() = 0;
    let all = wait_for(&got, 4).await;
    let last = all.last().unwrap();
    assert_eq!(last.0, list[0].event_id, "the same id after the restart");
    assert!(verify(&secret, &last.0, &last.1, &last.2, &last.3));
    let body: serde_json::Value = serde_json::from_str(&last.3).unwrap();
    assert_eq!(
        (body["type"].as_str(), body["data"]["game_id"].as_str()),
        (Some("game.created"), Some(t2.id.as_str()))
    );
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn registration_refuses_bad_input_and_private_hosts_precisely() {
    let dir = temp_dir("refuse");
    let mut strict = options(&dir);
    strict.webhooks.allow_private = false;
    let server = TestServer::start_with(strict).await;
    let mut hooks = hooks(&server).await;
    let create = |url: &str, kinds: &[&str], secret: &str| pb::CreateWebhookEndpointRequest {
        url: url.into(),
        event_kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
        secret: secret.into(),
        ..Default::default()
    };
    for (request, code) in [
        (
            create("http://127.0.0.1:9/hook", &["game.ended"], ""),
            Code::PermissionDenied,
        ),
        (
            create("http://[::1]/hook", &["game.ended"], ""),
            Code::PermissionDenied,
        ),
        (
            create("http://169.254.169.254/", &["game.ended"], ""),
            Code::PermissionDenied,
        ),
        (
            create("http://10.0.0.1/", &["game.ended"], ""),
            Code::PermissionDenied,
        ),
        (
            create("ftp://hooks.example.com/", &["game.ended"], ""),
            Code::InvalidArgument,
        ),
        (
            create("https://u:p@hooks.example.com/", &["game.ended"], ""),
            Code::InvalidArgument,
        ),
        (
            create("https://hooks.example.com/", &[], ""),
            Code::InvalidArgument,
        ),
        (
            create("https://hooks.example.com/", &["game.won"], ""),
            Code::InvalidArgument,
        ),
        (
            create("https://hooks.example.com/", &["game.ended"], "whsec_short"),
            Code::InvalidArgument,
        ),
        (
            create("https://hooks.example.com/", &["game.ended"], "secret"),
            Code::InvalidArgument,
        ),
    ] {
        let url = request.url.clone();
        let err = hooks.create_webhook_endpoint(request).await.unwrap_err();
        assert_eq!(err.code(), code, "{url}: {}", err.message());
    }
    let given = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode([7u8; 32])
    );
    let made = hooks
        .create_webhook_endpoint(create(
            "https://hooks.example.com/in",
            &["game.ended"],
            &given,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(made.secret, given);
    let listed = hooks
        .list_webhook_endpoints(pb::ListWebhookEndpointsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.endpoints.len(), 1);
    assert!(
        !format!("{listed:?}").contains(&given[6..]),
        "no secret listed"
    );
    let missing = format!("whe_{}", "0".repeat(32));
    let err = hooks
        .delete_webhook_endpoint(pb::DeleteWebhookEndpointRequest {
            endpoint_id: missing,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = hooks
        .delete_webhook_endpoint(pb::DeleteWebhookEndpointRequest {
            endpoint_id: "x".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    hooks
        .delete_webhook_endpoint(pb::DeleteWebhookEndpointRequest {
            endpoint_id: made.endpoint.unwrap().id,
        })
        .await
        .unwrap();
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let memory = TestServer::start().await;
    let err = WebhookServiceClient::new(memory.channel().await)
        .create_webhook_endpoint(create("https://hooks.example.com/", &["game.ended"], ""))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    memory.stop().await.unwrap();
}

#[tokio::test]
async fn a_tournament_reports_its_start_each_round_and_its_end() {
    use punct_referee::service::grpc::pb::dots::v1 as dpb;
    use punct_referee::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
    use punct_referee::tools::tournament::entrant::{EntrantBot, play_entrant};

    let dir = temp_dir("tournament");
    let (url, got) = receiver(Arc::new(Mutex::new(0))).await;
    let server = TestServer::start_with(options(&dir)).await;
    let secret = hooks(&server)
        .await
        .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
            url,
            event_kinds: vec![
                "tournament.started".into(),
                "tournament.round_finished".into(),
                "tournament.ended".into(),
                "game.ended".into(),
            ],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .secret;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let created = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(pb::TournamentSpec {
                name: "hooks".into(),
                rules: Some(pb::GameRules {
                    game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                        width: 6,
                        height: 6,
                        ..Default::default()
                    })),
                }),
                format: pb::TournamentFormat::RoundRobin as i32,
                games_per_pairing: 1,
                time_control: Some(pb::TimeControl {
                    lag_compensation: None,
                    mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                        move_ms: 10_000,
                    })),
                    first_move_deadline_ms: None,
                }),
                ..Default::default()
            }),
            entrants: vec!["a".into(), "b".into(), "c".into()],
        })
        .await
        .unwrap()
        .into_inner();
    let id = created.tournament.unwrap().tournament_id;
    t.start_tournament(pb::StartTournamentRequest {
        tournament_id: id.clone(),
    })
    .await
    .unwrap();
    let mut players = Vec::new();
    for (i, key) in created.keys.iter().enumerate() {
        let bot = EntrantBot::new(
            format!("b{i}=random").parse().unwrap(),
            i as u64,
            Duration::from_secs(10),
        );
        players.push(tokio::spawn(play_entrant(
            server.channel().await,
            key.entrant_key.clone(),
            bot,
        )));
    }
    for p in players {
        within(120, p).await.unwrap().unwrap();
    }
    // Three entrants in a round robin: three rounds of one game (and a bye).
    let all = within(30, async {
        loop {
            let all = got.lock().unwrap().clone();
            if all.iter().any(|(.., b)| b.contains("\"tournament.ended\"")) {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let mut tournament_events = Vec::new();
    let mut games_ended = 0;
    for (hid, ts, sig, body) in &all {
        assert!(verify(&secret, hid, ts, sig, body));
        let b: serde_json::Value = serde_json::from_str(body).unwrap();
        match b["type"].as_str().unwrap() {
            "game.ended" => games_ended += 1,
            kind => {
                assert_eq!(b["data"]["tournament_id"], id.as_str());
                tournament_events.push((kind.to_owned(), b["data"]["round"].as_u64()));
            }
        }
    }
    assert_eq!(games_ended, 3, "every game of the tournament");
    assert_eq!(
        tournament_events,
        [
            ("tournament.started".to_owned(), None),
            ("tournament.round_finished".to_owned(), Some(1)),
            ("tournament.round_finished".to_owned(), Some(2)),
            ("tournament.round_finished".to_owned(), Some(3)),
            ("tournament.ended".to_owned(), None),
        ],
        "in order, once each"
    );
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// What [`counting_receiver`] saw: connections accepted and the
/// `webhook-id` of each request, in order.
#[derive(Default)]
struct Seen {
    connections: usize,
    ids: Vec<String>,
}

/// An HTTP/1.1 receiver written at the socket level, to count the TCP
/// connections deliveries come over: answers 200 with a short body, and
/// keeps each connection open for the next request unless `close` is set,
/// in which case it closes it right after its answer (without announcing
/// it, as a receiver that restarts or drops idle connections does).
async fn counting_receiver(
    close: Arc<std::sync::atomic::AtomicBool>,
) -> (String, Arc<Mutex<Seen>>) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            s.lock().unwrap().connections += 1;
            let (s, close) = (s.clone(), close.clone());
            tokio::spawn(async move {
                let mut buf: Vec<u8> = Vec::new();
                loop {
                    // One request: its head, then Content-Length bytes.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let header = |name: &str| {
                        head.lines()
                            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
                    };
                    let length: usize = header("content-length:")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    let id = header("webhook-id:").unwrap_or_default();
                    while buf.len() < head_end + length {
                        let mut chunk = [0u8; 4096];
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..head_end + length);
                    s.lock().unwrap().ids.push(id);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if socket.write_all(answer).await.is_err() {
                        return;
                    }
                    if close.load(Ordering::SeqCst) {
                        let _ = socket.shutdown().await;
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn deliveries_reuse_one_connection_and_reconnect_when_the_receiver_closes_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = temp_dir("keepalive");
    let close = Arc::new(AtomicBool::new(false));
    let (url, seen) = counting_receiver(close.clone()).await;
    let server = TestServer::start_with(options(&dir)).await;
    let endpoint = hooks(&server)
        .await
        .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
            url,
            event_kinds: vec!["game.created".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .endpoint
        .unwrap();
    let mut client = server.client().await;
    // Games created one after another, each delivery awaited: one
    // connection carries them all.
    let delivered = |n: usize| {
        let seen = seen.clone();
        async move {
            within(30, async {
                loop {
                    let mut ids = seen.lock().unwrap().ids.clone();
                    ids.sort();
                    ids.dedup();
                    if ids.len() >= n {
                        return ids;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
        }
    };
    let mut games = Vec::new();
    for n in 1..=6 {
        games.push(create(&mut client, ppb::Variant::Standard).await.id);
        delivered(n).await;
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.ids.len(), 6, "each delivery sent once: {:?}", seen.ids);
        assert_eq!(seen.connections, 1, "six deliveries over one connection");
    }
    // The receiver now closes each connection after its answer: every
    // delivery still arrives, each over a new connection.
    close.store(true, Ordering::SeqCst);
    for n in 7..=12 {
        games.push(create(&mut client, ppb::Variant::Standard).await.id);
        delivered(n).await;
    }
    let connections = seen.lock().unwrap().connections;
    assert!(connections >= 6, "reconnected: {connections} connections");
    // And a burst at once, over whatever connections the pool opens.
    for _ in 0..8 {
        games.push(create(&mut client, ppb::Variant::Standard).await.id);
    }
    let ids = delivered(20).await;
    assert_eq!(ids.len(), 20, "no delivery lost, none unknown: {ids:?}");
    // The server recorded each as delivered, for the games created.
    let recorded = within(10, async {
        loop {
            let list = hooks(&server)
                .await
                .list_webhook_deliveries(pb::ListWebhookDeliveriesRequest {
                    endpoint_id: endpoint.id.clone(),
                    status: "delivered".into(),
                    limit: 0,
                })
                .await
                .unwrap()
                .into_inner()
                .deliveries;
            if list.len() >= games.len() {
                return list;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let mut subjects: Vec<String> = recorded.iter().map(|d| d.subject_id.clone()).collect();
    let mut ids: Vec<String> = recorded.iter().map(|d| d.event_id.clone()).collect();
    subjects.sort();
    games.sort();
    ids.sort();
    assert_eq!(subjects, games);
    assert_eq!(ids, delivered(20).await);
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
