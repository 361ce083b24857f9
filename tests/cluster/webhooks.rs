//! Webhooks of three replicas on one PostgreSQL, one killed (SIGKILL)
//! while deliveries are under way: every event arrives, under one id, and
//! no event is ever being delivered by two replicas at once (the receiver
//! counts the requests of each id in progress).

use std::collections::HashMap;

use punct_referee::service::grpc::pb::referee::v1::webhook_service_client::WebhookServiceClient;

use super::*;

#[derive(Default)]
struct Receiver {
    /// (webhook-id, type, game id), in arrival order.
    got: Vec<(String, String, String)>,
    in_progress: HashMap<String, u32>,
    /// Ids seen twice at the same time.
    overlaps: Vec<String>,
}

/// Counts a request of `id` as in progress until dropped (a replica killed
/// mid-request drops it too).
struct InProgress(Arc<Mutex<Receiver>>, String);

impl Drop for InProgress {
    fn drop(&mut self) {
        let mut r = self.0.lock().unwrap();
        if let Some(n) = r.in_progress.get_mut(&self.1) {
            *n -= 1;
        }
    }
}

async fn receiver() -> (String, Arc<Mutex<Receiver>>) {
    let state: Arc<Mutex<Receiver>> = Arc::default();
    let s = state.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: http::HeaderMap, body: String| {
            let s = s.clone();
            async move {
                let id = headers
                    .get("webhook-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let b: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                {
                    let mut r = s.lock().unwrap();
                    let n = r.in_progress.entry(id.clone()).or_default();
                    *n += 1;
                    if *n > 1 {
                        r.overlaps.push(id.clone());
                    }
                    r.got.push((
                        id.clone(),
                        b["type"].as_str().unwrap_or_default().to_owned(),
                        b["data"]["game_id"].as_str().unwrap_or_default().to_owned(),
                    ));
                }
                let _guard = InProgress(s.clone(), id);
                tokio::time::sleep(Duration::from_millis(150)).await;
                http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

fn spawn_hooked(url: &str, node: &str) -> (Child, SocketAddr) {
    let mut command = process::serve(&[
        "--no-http",
        "--storage",
        "postgres",
        "--node-id",
        node,
        "--lease-ms",
        "2000",
        "--webhook-allow-private",
        "--webhook-backoff-ms",
        "50",
        "--webhook-max-backoff-ms",
        "200",
        "--webhook-max-attempts",
        "1000",
        "--webhook-timeout-ms",
        "2000",
        "--webhook-connect-timeout-ms",
        "1000",
    ]);
    command.env("PUNCT_REFEREE_DATABASE_URL", url);
    process::start(&mut command, &format!("replica {node}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_deliver_every_event_once_at_a_time_through_a_kill() {
    let Some(server) = test_database_url() else {
        return;
    };
    let _serial = SERIAL.lock().await;
    let url = fresh_database(&server, "punct_cluster").await;
    let (hook_url, state) = receiver().await;
    let mut children = Vec::new();
    let mut clients = Vec::new();
    let mut first = None;
    for node in ["hook-a", "hook-b", "hook-c"] {
        let (child, addr) = spawn_hooked(&url, node);
        children.push(child);
        let channel = channel_to(addr).await;
        first.get_or_insert_with(|| channel.clone());
        clients.push(RefereeServiceClient::new(channel));
    }
    WebhookServiceClient::new(first.unwrap())
        .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
            url: hook_url,
            event_kinds: vec!["game.created".into(), "game.ended".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    // 30 games over the three replicas, every other one resigned.
    let mut expected: Vec<(String, &str)> = Vec::new();
    for i in 0..30usize {
        let client = &mut clients[i % 3];
        let r = client
            .create_game(pb::CreateGameRequest {
                rules: Some(common::rules(ppb::Variant::Standard)),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let id = r.game.unwrap().game_id;
        expected.push((id.clone(), "game.created"));
        if i % 2 == 0 {
            let white = r.seats.iter().find(|s| s.seat == 1).unwrap().token.clone();
            client
                .resign(pb::ResignRequest {
                    game_id: id.clone(),
                    token: white,
                })
                .await
                .unwrap();
            expected.push((id, "game.ended"));
        }
    }
    common::within(30, async {
        while state.lock().unwrap().got.len() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    children[2].kill().unwrap();
    children[2].wait().unwrap();

    let by_event =
        common::webhooks::until_delivered(90, &expected, || state.lock().unwrap().got.clone())
            .await;
    assert_eq!(by_event.len(), expected.len(), "nothing else was sent");
    for (event, ids) in &by_event {
        assert_eq!(ids.len(), 1, "{event:?}: one id");
    }
    let overlaps = state.lock().unwrap().overlaps.clone();
    assert!(overlaps.is_empty(), "delivered twice at once: {overlaps:?}");
    for child in &mut children[..2] {
        let _ = child.kill();
        let _ = child.wait();
    }
}
