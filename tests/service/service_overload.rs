//! Overload through the real server: the session limit, the limit on calls
//! in flight, the limit on watch streams, and many watchers that never read
//! (their memory stays bounded and the server keeps answering).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::raw_grpc::{Pausable, grpc_frame, grpc_request};
use common::*;
use punct_referee::games::punct::{EndOnSupply, RuleOptions};
use punct_referee::service::ServerOptions;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::sessions::Limits;
use tokio::net::TcpStream;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_types::StatusExt as _;

fn assert_limit(s: &tonic::Status, subject: &str) {
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert_eq!(
        s.get_details_quota_failure()
            .expect("QuotaFailure")
            .violations[0]
            .subject,
        subject
    );
    let info = s.get_details_error_info().expect("ErrorInfo");
    assert_eq!(
        (info.reason.as_str(), info.metadata["limit"].as_str()),
        ("LIMIT_REACHED", subject)
    );
}

#[tokio::test]
async fn games_beyond_max_sessions_are_refused_with_quota_failure() {
    let server = TestServer::start_with(ServerOptions {
        limits: Limits {
            max_sessions: 2,
            ..Limits::default()
        },
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    create(&mut c, ppb::Variant::Standard).await;
    create(&mut c, ppb::Variant::Basic).await;
    let s = within(10, c.create_game(pb::CreateGameRequest::default()))
        .await
        .unwrap_err();
    assert_limit(&s, "sessions");
    assert_eq!(s.message(), "sessions limit reached (2)");
    server.stop().await.unwrap();
}

/// A raw HTTP/2 connection, to hold unary calls open: their headers are
/// sent, their request message only when the test says.
async fn h2_connection(addr: std::net::SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (send, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    send
}

/// The grpc-status of an answer that ends with trailers.
async fn grpc_status(response: h2::client::ResponseFuture) -> String {
    let response = response.await.expect("response");
    assert_eq!(response.status(), 200);
    if let Some(code) = response.headers().get("grpc-status") {
        return code.to_str().unwrap().to_string();
    }
    let mut body = response.into_body();
    while let Some(data) = body.data().await {
        let data = data.expect("data");
        let _ = body.flow_control().release_capacity(data.len());
    }
    let trailers = body.trailers().await.expect("trailers").expect("some");
    trailers["grpc-status"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn calls_beyond_the_concurrency_limit_are_refused_at_once_not_queued() {
    let server = TestServer::start_with(ServerOptions {
        max_concurrent_calls: 2,
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;

    // Two GetGame calls whose request message has not arrived: each holds
    // its place in flight until it does.
    let mut raw = h2_connection(server.addr).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        raw = raw.ready().await.expect("ready");
        let (response, stream) = raw
            .send_request(grpc_request(server.addr, "GetGame"), false)
            .expect("send headers");
        held.push((response, stream));
    }

    // Once the server has taken both, any other call is refused at once.
    // (The loop only waits for the held calls' headers to arrive; it ends
    // at the first refusal.)
    let refused = within(10, async {
        loop {
            match c
                .get_game(pb::GetGameRequest {
                    game_id: t.id.clone(),
                    token: String::new(),
                    ..Default::default()
                })
                .await
            {
                Ok(_) => tokio::time::sleep(Duration::from_millis(2)).await,
                Err(s) => break s,
            }
        }
    })
    .await;
    assert_limit(&refused, "concurrent_calls");
    assert!(
        refused
            .message()
            .contains("concurrent_calls limit reached (2)"),
        "{}",
        refused.message()
    );
    assert!(refused.get_details_retry_info().is_some());
    // Still refused while they are held: nothing was queued.
    let again = c
        .submit_move(pb::SubmitMoveRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
            r#move: Some(notation(CONNECTION_GAME[0])),
            expected_ply: 0,
            request_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_limit(&again, "concurrent_calls");
    // Health checks are never shed.
    let health = HealthClient::new(server.channel().await)
        .check(HealthCheckRequest::default())
        .await
        .expect("health")
        .into_inner();
    assert_eq!(health.status(), ServingStatus::Serving);

    // The held calls complete normally once their messages arrive...
    for (response, mut stream) in held {
        stream
            .send_data(
                grpc_frame(&pb::GetGameRequest {
                    game_id: t.id.clone(),
                    token: String::new(),
                    ..Default::default()
                }),
                true,
            )
            .expect("send message");
        assert_eq!(within(10, grpc_status(response)).await, "0");
    }
    // ...and their places are free again.
    let game = get(&mut c, &t.id).await;
    assert_eq!(game.game_id, t.id);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn watch_streams_beyond_the_global_limit_are_refused() {
    let server = TestServer::start_with(ServerOptions {
        max_watch_streams: 2,
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let a = create(&mut c, ppb::Variant::Standard).await;
    let b = create(&mut c, ppb::Variant::Standard).await;
    let watch = |id: &str| pb::WatchGameRequest {
        game_id: id.to_string(),
        ..Default::default()
    };
    let first = c
        .watch_game(watch(&a.id))
        .await
        .expect("first")
        .into_inner();
    let _second = c.watch_game(watch(&b.id)).await.expect("second");
    let s = c.watch_game(watch(&a.id)).await.unwrap_err();
    assert_limit(&s, "watch_streams");
    assert_eq!(s.message(), "watch_streams limit reached (2)");

    // A stream that ends gives its place back (once the server sees it go).
    drop(first);
    within(10, async {
        loop {
            match c.watch_game(watch(&b.id)).await {
                Ok(_) => break,
                Err(s) => {
                    assert_limit(&s, "watch_streams");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    })
    .await;
    server.stop().await.unwrap();
}

/// `punct-referee serve` as a child process (for its memory), killed on drop.
struct Child {
    child: std::process::Child,
    addr: std::net::SocketAddr,
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Child {
    async fn start(args: &[&str]) -> Child {
        let addr = common::process::free_address();
        let child = std::process::Command::new(common::process::BIN)
            .args(["serve", "--listen", &addr.to_string(), "--no-metrics"])
            .args(["--storage", "memory"])
            .args(args)
            .env("PUNCT_REFEREE_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("start the referee");
        let child = Child { child, addr };
        within(30, async {
            loop {
                if let Ok(channel) = child.endpoint().connect().await
                    && HealthClient::new(channel)
                        .check(HealthCheckRequest::default())
                        .await
                        .is_ok()
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        child
    }

    fn endpoint(&self) -> tonic::transport::Endpoint {
        tonic::transport::Endpoint::from_shared(format!("http://{}", self.addr)).unwrap()
    }

    fn rss_kib(&self) -> u64 {
        punct_referee::tools::load::rss_kib(self.child.id()).expect("VmRSS")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_watchers_that_never_read_keep_memory_bounded() {
    const GAMES: usize = 50;
    const WATCHERS_PER_GAME: usize = 60;
    const MAX_PLIES: u32 = 600;
    const CONNECTIONS: usize = 10;
    let server = Child::start(&[]).await;
    let mut c = Client::new(server.endpoint().connect().await.expect("connect"));
    // Longer games (the supply phase ends only when both supplies are
    // empty, and no repetition ends them): more is sent to each watcher.
    let long = ppb::RuleOptions {
        variant: ppb::Variant::Standard as i32,
        end_on_supply: ppb::EndOnSupply::BothExhausted as i32,
        max_plies: Some(MAX_PLIES),
        repetition_limit: Some(0),
    };
    let mut tables = Vec::new();
    for _ in 0..GAMES {
        let r = c
            .create_game(pb::CreateGameRequest {
                rules: Some(pb::GameRules {
                    game: Some(pb::game_rules::Game::Punct(long)),
                }),
                ..Default::default()
            })
            .await
            .expect("create")
            .into_inner();
        tables.push(table_of(r.game.expect("game"), &r.seats));
    }
    let before = server.rss_kib();

    // The watchers: their streams open, then their connections stop reading.
    let mut pauses = Vec::new();
    let mut streams = Vec::new();
    let mut bodies = Vec::new();
    for k in 0..CONNECTIONS {
        let paused = Arc::new(AtomicBool::new(false));
        let tcp = TcpStream::connect(server.addr).await.expect("connect");
        let io = Pausable {
            inner: tcp,
            paused: paused.clone(),
        };
        let (mut send, connection) = h2::client::handshake(io).await.expect("handshake");
        tokio::spawn(connection);
        let mut responses = Vec::new();
        for (g, table) in tables.iter().enumerate() {
            for w in 0..WATCHERS_PER_GAME {
                if (g * WATCHERS_PER_GAME + w) % CONNECTIONS != k {
                    continue;
                }
                send = send.ready().await.expect("ready");
                let (response, mut stream) = send
                    .send_request(grpc_request(server.addr, "WatchGame"), false)
                    .expect("send");
                stream
                    .send_data(
                        grpc_frame(&pb::WatchGameRequest {
                            game_id: table.id.clone(),
                            ..Default::default()
                        }),
                        true,
                    )
                    .expect("send message");
                responses.push(response);
                streams.push(stream);
            }
        }
        // Every stream is open (its headers came back), then no more reads.
        for response in responses {
            let response = within(30, response).await.expect("response");
            assert_eq!(response.status(), 200);
            assert!(response.headers().get("grpc-status").is_none());
            bodies.push(response);
        }
        paused.store(true, Ordering::SeqCst);
        pauses.push(paused);
    }

    let opened = server.rss_kib();

    // One watcher per game that does read (on its own connection, which
    // buffers for it), to know what each of the others is sent.
    let mut readers = Client::new(server.endpoint().connect().await.expect("connect"));
    let mut readings = Vec::new();
    for table in &tables {
        let stream = readers
            .watch_game(pb::WatchGameRequest {
                game_id: table.id.clone(),
                ..Default::default()
            })
            .await
            .expect("watch")
            .into_inner();
        readings.push(stream);
    }

    // Every game is played to its end: each watcher is sent every move.
    let pool = punct_referee::tools::load::random_games_with(
        RuleOptions {
            end_on_supply: EndOnSupply::BothExhausted,
            max_plies: MAX_PLIES,
            repetition_limit: 0,
            ..RuleOptions::default()
        },
        GAMES,
        7,
    );
    for (table, moves) in tables.iter().zip(&pool) {
        for (ply, m) in moves.iter().enumerate() {
            let r = submit(&mut c, table, ply as u32, notation(m))
                .await
                .expect("move");
            assert_eq!(r.ply, ply as u32 + 1);
        }
    }
    let played = server.rss_kib();
    let plies: usize = pool.iter().map(|g| g.len()).sum();
    // What the silent watchers were sent in all: each got what its game's
    // reader got.
    let mut sent_per_game = 0u64;
    for mut reading in readings {
        while let Some(m) = within(10, reading.message()).await.expect("watch") {
            sent_per_game += prost::Message::encoded_len(&m) as u64 + 5;
        }
    }
    let sent_kib = sent_per_game * WATCHERS_PER_GAME as u64 / 1024;

    // The server still answers everything else.
    let game = get(&mut c, &tables[0].id).await;
    assert_eq!(game.status, pb::GameStatus::Finished as i32);
    let fresh = create(&mut c, ppb::Variant::Standard).await;
    let mut watch = c
        .watch_game(pb::WatchGameRequest {
            game_id: fresh.id.clone(),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    let first = within(10, watch.message()).await.expect("snapshot");
    assert!(first.is_some());

    // An idle watcher costs a bounded amount...
    let watchers = (GAMES * WATCHERS_PER_GAME) as u64;
    let per_watcher = opened.saturating_sub(before) * 1024 / watchers;
    eprintln!(
        "{watchers} watchers that never read: server VmRSS {before} KiB, {opened} KiB once \
         they are open ({per_watcher} bytes each), {played} KiB after {sent_kib} KiB were \
         addressed to them in {plies} moves"
    );
    assert!(
        per_watcher < 32 * 1024,
        "{per_watcher} bytes per idle watcher"
    );
    // ...and what is addressed to it while it does not read is not kept: a
    // server that queued it would grow by well over twice all of it (a
    // message in memory, its strings and vectors on the heap, is several
    // times its size on the wire). Here the growth is the few messages each
    // watcher's stream holds, and the games' own logs. (Since boards list
    // only occupied spaces the snapshots addressed are much smaller, while
    // the few messages held are mostly events: the growth is now about the
    // size of what was addressed, no longer under it.)
    let grown = played.saturating_sub(opened);
    assert!(
        grown < 2 * sent_kib,
        "server memory grew by {grown} KiB while {sent_kib} KiB went to watchers that never read"
    );
    drop((streams, bodies, pauses));
}

// ------------------------------------------------ slow and half-open connections

/// A connection to `to` from the loopback address `from` (another client
/// address than the tests' usual 127.0.0.1).
async fn connect_from(from: [u8; 4], to: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(std::net::SocketAddr::from((from, 0)))?;
    socket.connect(to).await
}

/// Whether the server closed `tcp` (end of stream or reset) within `secs`,
/// whatever it wrote before.
async fn closed_within(tcp: &mut TcpStream, secs: u64) -> bool {
    use tokio::io::AsyncReadExt as _;
    let mut sink = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(secs), async {
        loop {
            match tcp.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// What an honest client does while the stranger holds its connections: a
/// game made and read over gRPC, the game list over HTTP.
async fn honest_client_is_served(grpc: std::net::SocketAddr, http: std::net::SocketAddr) {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{grpc}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5));
    let mut c = Client::new(within(10, endpoint.connect()).await.expect("connect"));
    let table = within(10, create(&mut c, ppb::Variant::Standard)).await;
    assert_eq!(within(10, get(&mut c, &table.id)).await.game_id, table.id);
    let mut tcp = within(10, TcpStream::connect(http))
        .await
        .expect("connect http");
    let answer = within(10, http_get(&mut tcp, "/api/games")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// One plain HTTP/1.1 request, the whole answer (the server closes).
async fn http_get(tcp: &mut TcpStream, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_from_one_address_neither_lock_others_out_nor_stay() {
    use tokio::io::AsyncWriteExt as _;
    // The default limits; only the handshake timeout is short, to be quick.
    let http = common::process::free_address();
    let server = Child::start(&[
        "--http-listen",
        &http.to_string(),
        "--handshake-timeout-secs",
        "2",
    ])
    .await;
    // A stranger on 127.0.0.2 opens more connections than the default bound
    // per address (256), half of an HTTP/2 preface on the gRPC port and
    // unfinished request headers on the HTTP port, and says nothing more.
    let mut held = Vec::new();
    for i in 0..300 {
        let (port, opening): (_, &[u8]) = if i % 3 == 2 {
            (http, b"GET /api/games HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        } else {
            (server.addr, b"PRI * HTTP/2.0\r\n")
        };
        let mut tcp = connect_from([127, 0, 0, 2], port).await.expect("connect");
        // A connection over the bound may already be closed: the write may fail.
        let _ = tcp.write_all(opening).await;
        held.push(tcp);
    }
    // Another client is served at once, on both ports.
    honest_client_is_served(server.addr, http).await;
    // Every half-open connection is closed after the handshake timeout (the
    // ones over the bound at once).
    for (i, tcp) in held.iter_mut().enumerate() {
        assert!(
            closed_within(tcp, 10).await,
            "half-open connection {i} still open"
        );
    }
    honest_client_is_served(server.addr, http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_and_connections_with_a_stream_are_not() {
    let http = common::process::free_address();
    let server = Child::start(&[
        "--http-listen",
        &http.to_string(),
        "--idle-timeout-secs",
        "2",
        "--http-idle-timeout-secs",
        "2",
    ])
    .await;
    let mut c = Client::new(server.endpoint().connect().await.expect("connect"));
    let table = create(&mut c, ppb::Variant::Standard).await;
    // An HTTP/2 connection that opened (preface, SETTINGS) but calls nothing.
    let idle_tcp = TcpStream::connect(server.addr).await.expect("connect");
    let (_idle_send, idle_connection) = h2::client::handshake(idle_tcp).await.expect("handshake");
    let idle = tokio::spawn(idle_connection);
    // One with a watch stream open and quiet for longer than the timeout.
    let mut watching = Client::new(server.endpoint().connect().await.expect("connect"));
    let mut watch = watching
        .watch_game(pb::WatchGameRequest {
            game_id: table.id.clone(),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    assert!(
        within(10, watch.message())
            .await
            .expect("snapshot")
            .is_some()
    );
    // An HTTP keep-alive connection after one request, and an event stream.
    let mut keep_alive = TcpStream::connect(http).await.expect("connect http");
    {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        keep_alive
            .write_all(b"GET /api/games HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut head = [0u8; 12];
        keep_alive.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
    }
    let mut events = TcpStream::connect(http).await.expect("connect http");
    {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        events
            .write_all(
                format!(
                    "GET /api/games/{}/events HTTP/1.1\r\nHost: x\r\n\r\n",
                    table.id
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let mut head = [0u8; 12];
        events.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        // The first event (the game as it is) comes at once; take it all.
        let mut chunk = [0u8; 4096];
        while let Ok(read) =
            tokio::time::timeout(Duration::from_millis(300), events.read(&mut chunk)).await
        {
            assert!(read.expect("read") > 0, "the event stream ended");
        }
    }

    // The idle ones close after the timeout.
    let _ = within(10, idle).await;
    assert!(closed_within(&mut keep_alive, 10).await, "keep-alive");
    // The streams outlived it and still carry events.
    let first = &punct_referee::tools::load::random_games_with(RuleOptions::default(), 1, 7)[0][0];
    submit(&mut c, &table, 0, notation(first))
        .await
        .expect("move");
    let event = within(10, watch.message()).await.expect("event");
    assert!(event.is_some(), "the watch stream still delivers");
    {
        use tokio::io::AsyncReadExt as _;
        let mut chunk = [0u8; 4096];
        let n = within(10, events.read(&mut chunk))
            .await
            .expect("event stream");
        assert!(n > 0, "the event stream still delivers");
    }
}
