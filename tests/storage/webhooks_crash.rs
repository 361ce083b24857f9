//! Webhooks of the real binary SIGKILLed while it delivers, then restarted
//! on its data: every event of every acknowledged change is delivered at
//! least once, each under one stable `webhook-id`, in order per game.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::process::{self, Referee};
use common::{rules, table_of};
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::webhook_service_client::WebhookServiceClient;

/// (webhook-id, body) of every request, in arrival order.
type Got = Arc<Mutex<Vec<(String, String)>>>;

/// A receiver that takes 100 ms to answer 204: deliveries are under way
/// when the server is killed.
async fn slow_receiver() -> (String, Got) {
    let got: Got = Arc::default();
    let g = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: http::HeaderMap, body: String| {
            let g = g.clone();
            async move {
                let id = headers
                    .get("webhook-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                g.lock().unwrap().push((id, body));
                tokio::time::sleep(Duration::from_millis(100)).await;
                http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

fn serve(dir: &std::path::Path) -> std::process::Command {
    let mut command = process::serve(&[
        "--metrics-listen",
        "127.0.0.1:0",
        "--webhook-allow-private",
        "--webhook-backoff-ms",
        "50",
        "--webhook-max-backoff-ms",
        "200",
        "--webhook-max-attempts",
        "1000",
        "--data-dir",
    ]);
    command.arg(dir);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_delivers_every_event_after_its_restart_under_stable_ids() {
    let dir = std::env::temp_dir().join(format!(
        "punct-hook-crash-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (url, got) = slow_receiver().await;
    let referee = Referee::start(&mut serve(&dir)).await;
    WebhookServiceClient::connect(format!("http://{}", referee.addr))
        .await
        .unwrap()
        .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
            url,
            event_kinds: vec!["game.created".into(), "game.ended".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut client = referee.client().await;
    // Every acknowledged change: 40 games, every other one resigned.
    let mut expected: Vec<(String, &str)> = Vec::new();
    for i in 0..40 {
        let r = client
            .create_game(pb::CreateGameRequest {
                rules: Some(rules(ppb::Variant::Standard)),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let t = table_of(r.game.unwrap(), &r.seats);
        expected.push((t.id.clone(), "game.created"));
        if i % 2 == 0 {
            client
                .resign(pb::ResignRequest {
                    game_id: t.id.clone(),
                    token: t.white.clone(),
                })
                .await
                .unwrap();
            expected.push((t.id.clone(), "game.ended"));
        }
    }
    common::within(30, async {
        while got.lock().unwrap().len() < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    referee.kill();
    let delivered_before = got.lock().unwrap().len();
    assert!(delivered_before < expected.len(), "killed mid-deliveries");

    let referee = Referee::start(&mut serve(&dir)).await;
    let by_event = common::webhooks::until_delivered(60, &expected, || {
        got.lock()
            .unwrap()
            .iter()
            .map(|(id, body)| {
                let b: serde_json::Value = serde_json::from_str(body).unwrap();
                (
                    id.clone(),
                    b["type"].as_str().unwrap().to_owned(),
                    b["data"]["game_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    })
    .await;
    assert_eq!(by_event.len(), expected.len(), "nothing else was sent");
    for (event, ids) in &by_event {
        assert_eq!(
            ids.len(),
            1,
            "{event:?}: one id across retries and the restart"
        );
    }
    // Per game, the creation arrived first.
    let arrivals = got.lock().unwrap().clone();
    for (game, kind) in &expected {
        if *kind == "game.ended" {
            let first = |k: &str| {
                let id = &by_event[&(game.clone(), k.to_owned())][0];
                arrivals.iter().position(|(i, _)| i == id).unwrap()
            };
            assert!(first("game.created") < first("game.ended"), "{game}");
        }
    }
    drop(referee);
    let _ = std::fs::remove_dir_all(dir);
}
