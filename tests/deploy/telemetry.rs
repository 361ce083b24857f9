//! Telemetry of the real binary, started as a child process: the `metrics`
//! recorder and the tracing subscriber are process-wide, so each test gets
//! its own server process and counts nothing but its own calls.
//!
//! * `/metrics` after a scripted game with a known number of moves and
//!   refusals shows exactly those counts.
//! * Spans reach an OTLP receiver run by the test, continuing the caller's
//!   W3C trace, with the game id and never a token.
//! * Logs: one line per game created and finished, JSON with `--log-format json`.
//! * `punct-referee health` asks the gRPC health service.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::process::{BIN, free_port};
use common::{CONNECTION_GAME, Client, Table, create, notation, submit, within};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tokio::sync::mpsc;
use tonic::transport::Endpoint;

/// The server process, its gRPC address and its log lines so far.
struct Referee {
    child: Child,
    grpc: SocketAddr,
    metrics_port: u16,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Referee {
    /// Starts `punct-referee serve` on ephemeral ports with JSON logs, and
    /// waits for the line that gives its gRPC address.
    fn start(envs: &[(&str, &str)]) -> Referee {
        let metrics_port = free_port();
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--metrics-listen",
                &format!("127.0.0.1:{metrics_port}"),
                "--log-format",
                "json",
                "--drain-timeout-secs",
                "3",
                "--storage",
                "memory",
            ])
            .env("RUST_LOG", "info")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the referee");
        let stderr = child.stderr.take().expect("stderr");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
        {
            let logs = logs.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                        && v["fields"]["message"] == "punct-referee serving gRPC"
                        && let Some(a) = v["fields"]["address"].as_str()
                        && let Ok(addr) = a.parse()
                    {
                        let _ = tx.send(addr);
                    }
                    logs.lock().unwrap().push(line);
                }
            });
        }
        let grpc = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no address logged: {:?}", logs.lock().unwrap()));
        Referee {
            child,
            grpc,
            metrics_port,
            logs,
        }
    }

    async fn client(&self) -> Client {
        let channel = Endpoint::from_shared(format!("http://{}", self.grpc))
            .unwrap()
            .connect()
            .await
            .expect("connect");
        Client::new(channel)
    }

    /// The `/metrics` page.
    fn scrape(&self) -> String {
        let mut stream =
            TcpStream::connect(("127.0.0.1", self.metrics_port)).expect("connect to /metrics");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "scrape answered: {response}"
        );
        response
    }

    /// Sends SIGTERM and waits for a clean exit (the drain, then the flush).
    fn terminate(mut self) -> Vec<String> {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "exit status {status}");
        // The reader thread ends at EOF; give it a moment to store the tail.
        std::thread::sleep(Duration::from_millis(100));
        self.logs.lock().unwrap().clone()
    }
}

impl Drop for Referee {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Samples of a Prometheus text page: (name, labels) → value.
fn samples(page: &str) -> BTreeMap<(String, BTreeMap<String, String>), f64> {
    let body = page.split("\r\n\r\n").nth(1).unwrap_or(page);
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample line");
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest.strip_suffix('}').expect("closing brace");
                let labels = inner
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once("=\"").expect("label=\"value\"");
                        (k.to_string(), v.trim_end_matches('"').to_string())
                    })
                    .collect();
                (name.to_string(), labels)
            }
            None => (series.to_string(), BTreeMap::new()),
        };
        out.insert((name, labels), value.parse().expect("a number"));
    }
    out
}

/// The value of one sample, or `None` if the page does not have it.
fn sample(
    all: &BTreeMap<(String, BTreeMap<String, String>), f64>,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<f64> {
    let key = (
        name.to_string(),
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    all.get(&key).copied()
}

async fn submit_as(
    c: &mut Client,
    t: &Table,
    token: &str,
    mv: pb::Move,
    ply: u32,
) -> tonic::Status {
    c.submit_move(pb::SubmitMoveRequest {
        game_id: t.id.clone(),
        token: token.to_string(),
        r#move: Some(mv),
        expected_ply: ply,
        request_id: String::new(),
    })
    .await
    .expect_err("a refused move")
}

const SUBMIT: &str = "/referee.v1.RefereeService/SubmitMove";

#[tokio::test]
async fn metrics_count_a_scripted_game_exactly() {
    let referee = Referee::start(&[]);
    let mut c = referee.client().await;

    // Game A: two refusals, the 11-move connection game, one move too many.
    let a = create(&mut c, ppb::Variant::Standard).await;
    let s = submit_as(&mut c, &a, &a.black, notation("SE@E5:F5,G5"), 0).await;
    assert_eq!(s.code(), tonic::Code::FailedPrecondition);
    let s = submit_as(&mut c, &a, &a.white, notation("SE@I9:J9,K9"), 0).await;
    assert_eq!(s.code(), tonic::Code::FailedPrecondition);
    for (ply, text) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut c, &a, ply as u32, notation(text))
            .await
            .unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    let s = submit_as(&mut c, &a, &a.black, notation("SE@A5:A6,A7"), 11).await;
    assert_eq!(s.code(), tonic::Code::FailedPrecondition);

    // Game B: one move, two refusals, aborted.
    let b = create(&mut c, ppb::Variant::Standard).await;
    submit(&mut c, &b, 0, notation("SE@E5:F5,G5"))
        .await
        .unwrap();
    submit_as(&mut c, &b, &b.black, notation("E5>E8:F8,G8"), 1).await;
    submit_as(&mut c, &b, &b.black, notation("SE@F5:F6,F7"), 1).await;
    c.abort_game(pb::AbortGameRequest {
        game_id: b.id.clone(),
        token: b.white.clone(),
    })
    .await
    .unwrap();

    // Game C (basic): resigned at once. Game D: in progress, watched.
    let g = create(&mut c, ppb::Variant::Basic).await;
    c.resign(pb::ResignRequest {
        game_id: g.id.clone(),
        token: g.black.clone(),
    })
    .await
    .unwrap();
    let d = create(&mut c, ppb::Variant::Standard).await;
    let mut watch = c
        .watch_game(pb::WatchGameRequest {
            game_id: d.id.clone(),
            from_ply: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    within(10, watch.message())
        .await
        .unwrap()
        .expect("snapshot");
    let missing = c
        .get_game(pb::GetGameRequest {
            game_id: "0123456789abcdef0123456789abcdef".into(),
            token: String::new(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);

    // A watch of a finished game ends by itself, with OK in its trailers.
    let mut ended = c
        .watch_game(pb::WatchGameRequest {
            game_id: a.id.clone(),
            from_ply: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut items = 0;
    while within(10, ended.message()).await.unwrap().is_some() {
        items += 1;
    }
    assert_eq!(items, 2, "snapshot and game over");

    // The ended watcher gives its slot back as its task ends: wait for it.
    let mut page = referee.scrape();
    for _ in 0..50 {
        if sample(&samples(&page), "referee_watchers_active", &[]) == Some(1.0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        page = referee.scrape();
    }
    let m = samples(&page);
    let at = |name: &str, labels: &[(&str, &str)]| {
        sample(&m, name, labels).unwrap_or_else(|| panic!("no {name}{labels:?} in\n{page}"))
    };
    let moves = "referee_moves_applied_total";
    assert_eq!(at(moves, &[("game", "punct"), ("kind", "place")]), 12.0);
    let illegal = "referee_moves_illegal_total";
    for reason in [
        "NOT_YOUR_TURN",
        "CENTRE_STANDARD",
        "GAME_OVER",
        "NOT_YOUR_PIECE",
        "SPACE_NOT_EMPTY",
    ] {
        assert_eq!(at(illegal, &[("reason", reason)]), 1.0, "{reason}");
    }
    let illegal_total: f64 = m
        .iter()
        .filter(|((name, _), _)| name == illegal)
        .map(|(_, v)| v)
        .sum();
    assert_eq!(illegal_total, 5.0);
    let created = "referee_games_created_total";
    assert_eq!(
        at(created, &[("game", "punct"), ("variant", "standard")]),
        3.0
    );
    assert_eq!(at(created, &[("game", "punct"), ("variant", "basic")]), 1.0);
    let finished = "referee_games_finished_total";
    for reason in ["CONNECTION", "ABORTED", "RESIGNATION"] {
        assert_eq!(at(finished, &[("game", "punct"), ("reason", reason)]), 1.0);
    }
    assert_eq!(at("referee_sessions_active", &[]), 4.0);
    assert_eq!(at("referee_games_in_progress", &[]), 1.0);
    assert_eq!(at("referee_watchers_active", &[]), 1.0);
    let rpc = "referee_rpc_total";
    assert_eq!(at(rpc, &[("method", SUBMIT), ("code", "OK")]), 12.0);
    assert_eq!(
        at(rpc, &[("method", SUBMIT), ("code", "FAILED_PRECONDITION")]),
        5.0
    );
    let create_method = "/referee.v1.RefereeService/CreateGame";
    assert_eq!(at(rpc, &[("method", create_method), ("code", "OK")]), 4.0);
    let get_method = "/referee.v1.RefereeService/GetGame";
    assert_eq!(
        at(rpc, &[("method", get_method), ("code", "NOT_FOUND")]),
        1.0
    );
    // Streams are counted when they end: the open one not yet.
    let watch_method = "/referee.v1.RefereeService/WatchGame";
    assert_eq!(at(rpc, &[("method", watch_method), ("code", "OK")]), 1.0);
    let watch_calls: f64 = m
        .iter()
        .filter(|((name, labels), _)| name == rpc && labels["method"] == watch_method)
        .map(|(_, v)| v)
        .sum();
    assert_eq!(watch_calls, 1.0);
    let duration = "referee_rpc_duration_seconds";
    assert_eq!(
        at(&format!("{duration}_count"), &[("method", SUBMIT)]),
        17.0
    );
    assert_eq!(
        at(
            &format!("{duration}_bucket"),
            &[("method", SUBMIT), ("le", "+Inf")]
        ),
        17.0
    );

    drop(watch);
    let logs = tokio::task::spawn_blocking(move || referee.terminate())
        .await
        .unwrap();
    // Logs: one line per game created and finished; none per move at info.
    let messages: Vec<serde_json::Value> = logs
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let count = |message: &str| {
        messages
            .iter()
            .filter(|v| v["fields"]["message"] == message)
            .count()
    };
    assert_eq!(count("game created"), 4);
    assert_eq!(count("game finished"), 3);
    assert!(messages.iter().all(|v| v["level"] != "DEBUG"));
    let lines_naming_a_game = messages
        .iter()
        .filter(|v| v["fields"]["game_id"] == a.id.as_str())
        .count();
    assert_eq!(lines_naming_a_game, 2, "{logs:#?}");
}

/// An OTLP trace receiver: forwards every span it gets, with its resource's
/// service name.
struct Receiver(mpsc::UnboundedSender<(String, Span)>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        for rs in request.into_inner().resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|r| attribute(&r.attributes, "service.name"))
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for span in ss.spans {
                    let _ = self.0.send((service.clone(), span));
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// A string or integer attribute, as text.
fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|AnyValue { value }| match value {
            Some(any_value::Value::StringValue(s)) => Some(s.clone()),
            Some(any_value::Value::IntValue(i)) => Some(i.to_string()),
            _ => None,
        })
}

#[tokio::test]
async fn spans_reach_otlp_continuing_the_callers_trace() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let otlp = listener.local_addr().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Receiver(tx)))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let endpoint = format!("http://{otlp}");
    let referee = Referee::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "referee-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ]);
    let mut c = referee.client().await;

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_id = "00f067aa0ba902b7";
    fn traced<T>(message: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(message);
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        r.metadata_mut()
            .insert("traceparent", traceparent.parse().unwrap());
        r
    }
    let created = c
        .create_game(traced(pb::CreateGameRequest {
            rules: Some(common::rules(ppb::Variant::Standard)),
            labels: Default::default(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let t = common::table_of(created.game.unwrap(), &created.seats);
    for (ply, text) in CONNECTION_GAME.iter().take(2).enumerate() {
        c.submit_move(traced(pb::SubmitMoveRequest {
            game_id: t.id.clone(),
            token: t.token_at(ply as u32).to_string(),
            r#move: Some(notation(text)),
            expected_ply: ply as u32,
            request_id: String::new(),
        }))
        .await
        .unwrap();
    }
    let refused = c
        .submit_move(traced(pb::SubmitMoveRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
            r#move: Some(notation("SE@I9:J9,K9")),
            expected_ply: 2,
            request_id: String::new(),
        }))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    // A call without a traceparent starts a trace of its own.
    c.get_game(pb::GetGameRequest {
        game_id: t.id.clone(),
        token: String::new(),
        ..Default::default()
    })
    .await
    .unwrap();
    drop(c);
    // SIGTERM: the referee drains and flushes its exporter before exiting.
    // Waited for on another thread: the receiver runs on this one.
    let logs = tokio::task::spawn_blocking(move || referee.terminate())
        .await
        .unwrap();

    let mut spans = Vec::new();
    while spans.len() < 5 {
        let next = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
        match next {
            Ok(Some(s)) => spans.push(s),
            _ => panic!("only {} spans arrived: {spans:#?}\n{logs:#?}", spans.len()),
        }
    }
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    for (service, span) in &spans {
        assert_eq!(service, "referee-under-test");
        assert_eq!(span.kind, 2, "server kind: {span:?}");
        assert_eq!(
            attribute(&span.attributes, "game_id").as_deref(),
            Some(t.id.as_str())
        );
        for kv in &span.attributes {
            let value = attribute(std::slice::from_ref(kv), &kv.key).unwrap_or_default();
            assert!(
                !value.contains(&t.white) && !value.contains(&t.black),
                "a token in {kv:?}"
            );
        }
    }
    let (continued, own): (Vec<_>, Vec<_>) = spans
        .iter()
        .map(|(_, s)| s)
        .partition(|s| hex(&s.trace_id) == trace_id);
    assert_eq!(continued.len(), 4);
    assert_eq!(own.len(), 1);
    assert!(
        continued
            .iter()
            .all(|s| hex(&s.parent_span_id) == parent_id)
    );
    assert!(own[0].parent_span_id.is_empty());
    assert_eq!(own[0].name, "referee.v1.RefereeService/GetGame");

    let by_name = |name: &str| -> Vec<&Span> {
        continued
            .iter()
            .copied()
            .filter(|s| s.name == format!("referee.v1.RefereeService/{name}"))
            .collect()
    };
    assert_eq!(by_name("CreateGame").len(), 1);
    let moves = by_name("SubmitMove");
    assert_eq!(moves.len(), 3);
    let fields = |s: &Span| {
        (
            attribute(&s.attributes, "seat"),
            attribute(&s.attributes, "ply"),
            attribute(&s.attributes, "code"),
        )
    };
    let mut seen: Vec<_> = moves.iter().map(|s| fields(s)).collect();
    seen.sort();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        seen,
        vec![
            (some("black"), some("2"), some("OK")),
            (some("white"), None, some("FAILED_PRECONDITION")),
            (some("white"), some("1"), some("OK")),
        ]
    );
}

#[tokio::test]
async fn health_command_asks_the_grpc_health_service() {
    let referee = Referee::start(&[]);
    // With a scheme, and as host:port without one.
    for address in [format!("http://{}", referee.grpc), referee.grpc.to_string()] {
        let out = tokio::task::spawn_blocking(move || {
            Command::new(BIN)
                .args(["health", "--address", &address])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "SERVING\n");
    }
    tokio::task::spawn_blocking(move || referee.terminate())
        .await
        .unwrap();

    let nobody = format!("http://127.0.0.1:{}", free_port());
    let out = Command::new(BIN)
        .args(["health", "--address", &nobody, "--timeout-secs", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot connect"),
        "{out:?}"
    );
}
