//! Lag measured and compensated, through the real server (docs/LAG.md):
//! White plays over a `Play` stream through a proxy the test starts that
//! holds every byte 100 ms each way, Black plays next to the server. With
//! compensation on, White keeps its (tight) time and wins; with it off, the
//! same game is lost on time. The latency ledger of `ExportGame` shows both,
//! and a restart keeps it. Times are bounded from below only (the proxy
//! guarantees each of White's moves at least 200 ms of network): never a
//! timing assertion from above.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use pb::play_response::Item;

/// The delay the proxy adds each way.
const ONE_WAY: Duration = Duration::from_millis(100);
/// Each seat's time: White's network alone (at least 200 ms a move) runs it
/// out by White's fifth timed move without compensation (it has five), and
/// leaves Black, next to the server, ample time on a loaded machine.
const INITIAL_MS: u64 = 800;
const CAP_MS: u64 = 300;
const QUOTA_MS: u64 = 10_000;

/// A TCP proxy to `target` that holds what it relays `delay` each way
/// (order and throughput kept: each chunk leaves `delay` after it came).
async fn delaying_proxy(target: SocketAddr, delay: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(target).await else {
                continue;
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            tokio::spawn(relay(client_read, server_write, delay));
            tokio::spawn(relay(server_read, client_write, delay));
        }
    });
    addr
}

async fn relay(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((at, bytes)) = rx.recv().await {
            tokio::time::sleep_until(at + delay).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

fn fischer(compensated: bool) -> pb::TimeControl {
    pb::TimeControl {
        mode: Some(pb::time_control::Mode::Fischer(pb::FischerClock {
            initial_ms: INITIAL_MS,
            increment_ms: 0,
        })),
        // First moves are free: White's stream measures its round trip
        // meanwhile.
        first_move_deadline_ms: Some(60_000),
        lag_compensation: compensated.then_some(pb::LagCompensation {
            max_per_move_ms: CAP_MS,
            quota_ms: QUOTA_MS,
        }),
    }
}

/// Plays `token`'s moves of [`CONNECTION_GAME`] (the seat moving at plies
/// of `parity`) over a Play stream on `channel`, answering pings at once
/// when `pings`, until the stream ends; the first move after `first_wait`.
async fn seat(
    channel: tonic::transport::Channel,
    id: String,
    token: String,
    parity: u32,
    pings: bool,
    first_wait: Duration,
) {
    let mut client = Client::new(channel);
    let (tx, rx) = mpsc::channel(64);
    tx.send(pb::PlayRequest {
        kind: Some(pb::play_request::Kind::Start(pb::PlayStart {
            game_id: id,
            token,
            from_ply: None,
            answer_pings: pings,
        })),
    })
    .await
    .expect("queued");
    let mut stream = client
        .play(ReceiverStream::new(rx))
        .await
        .expect("play")
        .into_inner();
    let mut played = None;
    while let Ok(Some(message)) = stream.message().await {
        let ply = match message.item {
            Some(Item::Ping(ping)) => {
                assert!(pings, "a stream that does not answer pings gets none");
                let pong = pb::play_request::Kind::Pong(pb::Pong { id: ping.id });
                let _ = tx.send(pb::PlayRequest { kind: Some(pong) }).await;
                continue;
            }
            Some(Item::Snapshot(game)) => game.ply,
            Some(Item::Event(event)) => match event.kind {
                Some(pb::game_event::Kind::MoveApplied(_)) => event.ply,
                _ => continue,
            },
            _ => continue,
        };
        let ours = ply % 2 == parity && (ply as usize) < CONNECTION_GAME.len();
        if !ours || played.is_some_and(|p| p >= ply) {
            continue;
        }
        if ply < 2 {
            tokio::time::sleep(first_wait).await;
        }
        played = Some(ply);
        let mv = pb::play_request::Kind::Move(pb::PlayMove {
            r#move: Some(notation(CONNECTION_GAME[ply as usize])),
            expected_ply: ply,
            request_id: String::new(),
        });
        let _ = tx.send(pb::PlayRequest { kind: Some(mv) }).await;
    }
}

/// Creates a game with White behind the proxy at `proxy`, plays it out,
/// and returns its id once it is over.
async fn play_delayed(server: &TestServer, proxy: SocketAddr, compensated: bool) -> String {
    let mut c = server.client().await;
    let r = c
        .create_game(pb::CreateGameRequest {
            time_control: Some(fischer(compensated)),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let echoed = r.game.as_ref().and_then(|g| g.time_control);
    assert_eq!(
        echoed,
        Some(fischer(compensated)),
        "the time control echoed"
    );
    let t = table_of(r.game.expect("game"), &r.seats);
    let far = tonic::transport::Endpoint::from_shared(format!("http://{proxy}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("through the proxy");
    let white = tokio::spawn(seat(
        far,
        t.id.clone(),
        t.white.clone(),
        0,
        true,
        Duration::from_millis(600),
    ));
    let black = tokio::spawn(seat(
        server.channel().await,
        t.id.clone(),
        t.black.clone(),
        1,
        false,
        Duration::ZERO,
    ));
    within(60, async {
        white.await.expect("white");
        black.await.expect("black");
    })
    .await;
    t.id
}

async fn export(c: &mut Client, id: &str) -> pb::ExportGameResponse {
    c.export_game(pb::ExportGameRequest {
        game_id: id.to_string(),
        token: String::new(),
    })
    .await
    .expect("export")
    .into_inner()
}

fn outcome(game: &pb::Game) -> (&str, Vec<u32>) {
    let o = game.outcome.as_ref().expect("over");
    (o.reason.as_str(), o.winners.clone())
}

/// White's moves after its first (which a first-move deadline timed).
fn white_timed(ledger: &[pb::MoveLatency]) -> Vec<pb::MoveLatency> {
    ledger
        .iter()
        .filter(|m| m.seat == WHITE && m.ply > 1)
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_delayed_seat_keeps_its_time_with_compensation_and_loses_it_without() {
    let dir = std::env::temp_dir().join(format!(
        "punct-lag-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let server = start_on(&dir).await;
    let proxy = delaying_proxy(server.addr, ONE_WAY).await;
    let mut c = server.client().await;

    // Compensation on: White's network is credited; it wins by connection.
    let on = play_delayed(&server, proxy, true).await;
    let game = get(&mut c, &on).await;
    assert_eq!(
        outcome(&game),
        ("CONNECTION", vec![WHITE]),
        "White kept its time: {game:?}"
    );
    let ledger = export(&mut c, &on).await.latency;
    assert_eq!(ledger.len(), CONNECTION_GAME.len(), "{ledger:?}");
    let timed = white_timed(&ledger);
    assert_eq!(timed.len(), 5, "{ledger:?}");
    for m in &timed {
        let lag = m.lag_ms.expect("White's round trip was measured");
        assert!(lag >= 200, "two proxy legs at least: {m:?}");
        assert!(
            m.compensated_ms > 0 && m.compensated_ms <= CAP_MS && m.compensated_ms <= lag,
            "credited within the cap and the estimate: {m:?}"
        );
        assert!(
            m.charged_ms + m.compensated_ms >= 200,
            "the move's time holds the network: {m:?}"
        );
    }
    // Black, next to the server, answered no pings: never measured.
    assert!(
        ledger
            .iter()
            .filter(|m| m.seat == BLACK)
            .all(|m| m.lag_ms.is_none() && m.compensated_ms == 0),
        "{ledger:?}"
    );

    // Compensation off: the same network runs White's clock out.
    let off = play_delayed(&server, proxy, false).await;
    let game = get(&mut c, &off).await;
    assert_eq!(
        outcome(&game),
        ("TIMEOUT", vec![BLACK]),
        "White lost on time: {game:?}"
    );
    let ledger_off = export(&mut c, &off).await.latency;
    let timed_off = white_timed(&ledger_off);
    assert!(!timed_off.is_empty(), "{ledger_off:?}");
    for m in &timed_off {
        assert_eq!(m.compensated_ms, 0, "nothing credited: {m:?}");
        assert!(m.charged_ms >= 200, "charged the network: {m:?}");
        assert!(m.lag_ms.is_some_and(|l| l >= 200), "still measured: {m:?}");
    }

    // A restart reads both ledgers back as they were.
    server.stop().await.expect("stopped");
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    assert_eq!(export(&mut c, &on).await.latency, ledger);
    assert_eq!(export(&mut c, &off).await.latency, ledger_off);
    server.stop().await.expect("stopped");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn compensation_is_checked_and_needs_a_clock() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let refused = |tc: pb::TimeControl| {
        let mut c = c.clone();
        async move {
            c.create_game(pb::CreateGameRequest {
                time_control: Some(tc),
                ..Default::default()
            })
            .await
            .expect_err("refused")
        }
    };
    let with = |cap: u64, quota: u64| pb::TimeControl {
        lag_compensation: Some(pb::LagCompensation {
            max_per_move_ms: cap,
            quota_ms: quota,
        }),
        ..fischer(false)
    };
    for (tc, field) in [
        (
            with(0, 100),
            "time_control.lag_compensation.max_per_move_ms",
        ),
        (
            with(10_001, 100),
            "time_control.lag_compensation.max_per_move_ms",
        ),
        (with(100, 0), "time_control.lag_compensation.quota_ms"),
        (
            with(100, 86_400_001),
            "time_control.lag_compensation.quota_ms",
        ),
        (
            pb::TimeControl {
                mode: None,
                ..with(100, 100)
            },
            "time_control.lag_compensation",
        ),
    ] {
        let status = refused(tc).await;
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(field), "{field}: {status:?}");
    }
    // Nothing was created.
    let listed = c
        .list_games(pb::ListGamesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(listed.games.is_empty());
    server.stop().await.expect("stopped");
}

/// A server on the SQLite store in `dir`: stopped and started again on the
/// same directory, it is a restart.
async fn start_on(dir: &std::path::Path) -> TestServer {
    use punct_referee::service::StorageConfig;
    use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
    TestServer::start_with(punct_referee::service::ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.to_path_buf(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        ..test_options()
    })
    .await
}
