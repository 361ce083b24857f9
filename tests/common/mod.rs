//! Shared helpers of the black-box service tests: start the real server on an
//! ephemeral port, connect generated clients, build moves.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;
use punct_referee::service::{self, ServeError, ServerOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};

pub mod postgres;
pub mod process;
pub mod raw_grpc;
pub mod strict_records;
pub mod webhooks;

pub type Client = RefereeServiceClient<Channel>;

/// A server running in this test's runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    /// The HTTP port, when started with [`TestServer::start_with_http`].
    pub http: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), ServeError>>,
}

/// Options for tests: short drain so a stuck stream fails fast.
pub fn test_options() -> ServerOptions {
    ServerOptions {
        drain_timeout: Duration::from_secs(3),
        ..ServerOptions::default()
    }
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::start_with(test_options()).await
    }

    pub async fn start_with(options: ServerOptions) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(service::run(listener, options, async move {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            http: None,
            stop: Some(tx),
            handle,
        }
    }

    /// A server with its HTTP port too (spectator page, JSON API, SVGs);
    /// `/metrics` renders `metrics` when given.
    pub async fn start_with_http(
        options: ServerOptions,
        metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let http_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind http");
        let http = http_listener.local_addr().expect("http addr");
        let (tx, rx) = oneshot::channel::<()>();
        let port = service::HttpPort {
            listener: http_listener,
            metrics,
        };
        let handle = tokio::spawn(service::run_with_http(
            listener,
            Some(port),
            options,
            async move {
                let _ = rx.await;
            },
        ));
        TestServer {
            addr,
            http: Some(http),
            stop: Some(tx),
            handle,
        }
    }

    pub fn endpoint(&self) -> Endpoint {
        Endpoint::from_shared(format!("http://{}", self.addr)).expect("endpoint")
    }

    pub async fn channel(&self) -> Channel {
        self.endpoint().connect().await.expect("connect")
    }

    /// A client on its own connection.
    pub async fn client(&self) -> Client {
        RefereeServiceClient::new(self.channel().await)
    }

    /// Starts the shutdown and waits for the server to stop.
    pub async fn stop(mut self) -> Result<(), ServeError> {
        self.begin_stop();
        self.handle.await.expect("server task")
    }

    pub fn begin_stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    pub async fn join(self) -> Result<(), ServeError> {
        self.handle.await.expect("server task")
    }
}

/// A move in notation.
pub fn notation(text: &str) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Punct(ppb::Move {
            notation: text.to_string(),
            ..Default::default()
        })),
    }
}

/// A structured placement.
pub fn place(code: &str, punct: &str, rotation: u32) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Punct(ppb::Move {
            action: Some(ppb::r#move::Action::Place(ppb::Place {
                code: code.to_string(),
                punct: punct.to_string(),
                rotation,
            })),
            ..Default::default()
        })),
    }
}

/// A structured move of a piece on the board.
pub fn shift(from: &str, to: &str, rotation: u32) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Punct(ppb::Move {
            action: Some(ppb::r#move::Action::Shift(ppb::Shift {
                from: from.to_string(),
                to: to.to_string(),
                rotation,
            })),
            ..Default::default()
        })),
    }
}

/// The PÜNCT part of a move.
pub fn punct_of(m: &pb::Move) -> &ppb::Move {
    match m.game.as_ref().expect("a game member") {
        pb::r#move::Game::Punct(p) => p,
        other => panic!("not a PÜNCT move: {other:?}"),
    }
}

/// Rules of a PÜNCT game of `variant`.
pub fn rules(variant: ppb::Variant) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
            variant: variant as i32,
            ..Default::default()
        })),
    }
}

/// A created game: id and the two tokens.
pub struct Table {
    pub id: String,
    pub white: String,
    pub black: String,
}

impl Table {
    /// The token of whoever moves at `ply` (white at even plies).
    pub fn token_at(&self, ply: u32) -> &str {
        if ply.is_multiple_of(2) {
            &self.white
        } else {
            &self.black
        }
    }
}

pub async fn create(client: &mut Client, variant: ppb::Variant) -> Table {
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(variant)),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    table_of(r.game.expect("game"), &r.seats)
}

/// PÜNCT's seats in the contract: 1 is white, 2 black, 0 none.
pub const WHITE: u32 = 1;
/// See [`WHITE`].
pub const BLACK: u32 = 2;
/// No seat (nobody to move, no winner).
pub const NO_SEAT: u32 = 0;

pub fn table_of(game: pb::Game, seats: &[pb::SeatToken]) -> Table {
    let token = |seat: u32| {
        seats
            .iter()
            .find(|s| s.seat == seat)
            .expect("seat token")
            .token
            .clone()
    };
    Table {
        id: game.game_id,
        white: token(WHITE),
        black: token(BLACK),
    }
}

/// Submits `mv` for whoever is to move at `ply`.
pub async fn submit(
    client: &mut Client,
    table: &Table,
    ply: u32,
    mv: pb::Move,
) -> Result<pb::SubmitMoveResponse, tonic::Status> {
    client
        .submit_move(pb::SubmitMoveRequest {
            game_id: table.id.clone(),
            token: table.token_at(ply).to_string(),
            r#move: Some(mv),
            expected_ply: ply,
            request_id: String::new(),
        })
        .await
        .map(tonic::Response::into_inner)
}

pub async fn get(client: &mut Client, id: &str) -> pb::Game {
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

/// The record of game `id` as `token`'s viewer gets it from `ExportGame`,
/// read by the strict reader of its game's rules
/// ([`strict_records::check`]): a record that is not canonical fails the
/// test.
pub async fn export_checked(client: &mut Client, id: &str, token: &str) -> String {
    let record = client
        .export_game(pb::ExportGameRequest {
            game_id: id.to_string(),
            token: token.to_string(),
        })
        .await
        .expect("export")
        .into_inner()
        .record;
    checked(&record);
    record
}

/// `record`, after the strict reader of its game accepted it.
pub fn checked(record: &str) -> strict_records::Checked {
    strict_records::check(record)
        .unwrap_or_else(|e| panic!("not a canonical record: {e}\n{record}"))
}

/// The scripted standard game White wins by connection at ply 11
/// (columns E1..E12, F13..H15, I16..J17 join the rows sides y = 1 and y = 17).
pub const CONNECTION_GAME: [&str; 11] = [
    "SE@E1:E2,E3",
    "SE@M5:M6,M7",
    "SE@E4:E5,E6",
    "SE@M8:M9,M10",
    "SE@E7:E8,E9",
    "SE@M11:M12,M13",
    "SE@E10:E11,E12",
    "SE@O9:O10,O11",
    "SM@G14:F13,H15",
    "T@O13:P13,P14",
    "T@I16:J16,J17",
];

/// Awaits with a bound, so a hung stream fails the test instead of the CI.
pub async fn within<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("timed out")
}
