//! A platform key never reaches the logs, the spans or the metrics, while
//! its name does (docs/SECURITY.md). Its own test binary: it installs the
//! global log subscriber and metrics recorder.

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{TestServer, rules, test_options};
use punct_referee::service::ServerOptions;
use punct_referee::service::edge::access::{Scope, new_key};
use punct_referee::service::grpc::pb::punct::v1::Variant;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tonic::Request;

/// Log output kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn keyed<T>(message: T, key: &str) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    request
}

#[tokio::test]
async fn a_key_never_appears_in_logs_spans_or_metrics_but_its_name_does() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_env_filter("trace")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let metrics = punct_referee::service::telemetry::install_metrics().unwrap();

    let (key, line) = new_key("lobby-backend", &[Scope::GamesCreate]);
    let dir = std::env::temp_dir().join(format!("punct-referee-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keys"), line).unwrap();
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(dir.join("keys")),
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let r = c
        .create_game(keyed(
            pb::CreateGameRequest {
                rules: Some(rules(Variant::Standard)),
                ..Default::default()
            },
            &key,
        ))
        .await
        .unwrap()
        .into_inner();
    let table = common::table_of(r.game.unwrap(), &r.seats);
    // A refused call with the key (a bad move, logged at debug in its span),
    // a call with a wrong key, and one the key's scope does not cover.
    let _ = c
        .submit_move(keyed(
            pb::SubmitMoveRequest {
                game_id: table.id.clone(),
                token: table.white.clone(),
                r#move: Some(common::notation("not a move")),
                expected_ply: 0,
                request_id: String::new(),
            },
            &key,
        ))
        .await
        .unwrap_err();
    let wrong = format!("{key}-wrong");
    let _ = c
        .create_game(keyed(pb::CreateGameRequest::default(), &wrong))
        .await
        .unwrap_err();
    let _ = c
        .list_games(keyed(pb::ListGamesRequest::default(), &key))
        .await
        .unwrap_err();
    server.stop().await.unwrap();

    let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    let rendered = metrics.render();
    assert!(
        logs.contains("client=\"lobby-backend\"") || logs.contains("client=lobby-backend"),
        "the span records the key's name"
    );
    assert!(
        rendered.contains("referee_access_refused_total"),
        "refusals are counted"
    );
    // The key, and any long part of it, is nowhere.
    for secret in [key.as_str(), &key[4..36], &key[36..], wrong.as_str()] {
        assert!(!logs.contains(secret), "a key in the logs");
        assert!(!rendered.contains(secret), "a key in the metrics");
    }
    assert!(!logs.contains(&table.white), "a seat token in the logs");
}
