//! The read phases of `--reads`: after the moves phase of a concurrency,
//! the same number of tasks read games instead of playing them — `GetGame`
//! (full and compact views) and `ListLegalMoves` (text, notation and full views), each at the start
//! of a game and in the middle of one (`--read-ply`, 40 by default) — and
//! each phase is reported as a ratio to the same run's baseline. The games
//! read are set up beforehand from the pool (a few per point, shared by
//! the tasks round robin, as spectators and bots of the same games share
//! them), so only the reads are timed.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tonic::transport::Channel;

use super::LoadArgs;
use super::report::Latency;
use super::tally::{Errors, Tally, Window, nanos};
use crate::service::grpc::games::WireGame;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::rpc;

/// Games set up for each point read.
const GAMES_PER_POINT: usize = 4;

/// GetGame's answer as the read phase decodes it after a task's first
/// answer: only the game's ply, every other field skipped unread. A load
/// generator measures the server (as h2load, which decodes nothing, does);
/// decoding a whole mid-game state per call on the same two cores would
/// measure the client instead. The first answer of each task is decoded
/// in full (and its size reported).
#[derive(Clone, PartialEq, prost::Message)]
struct GetGameHead {
    /// `GetGameResponse.game`.
    #[prost(message, optional, tag = "1")]
    game: Option<GameHead>,
}

/// See [`GetGameHead`].
#[derive(Clone, PartialEq, prost::Message)]
struct GameHead {
    /// `Game.ply`.
    #[prost(uint32, tag = "4")]
    ply: u32,
}

/// GetGame of game `id`, as a spectator, in `view`.
fn get_request(id: String, view: pb::SnapshotView) -> pb::GetGameRequest {
    pb::GetGameRequest {
        game_id: id,
        token: String::new(),
        view: view as i32,
    }
}

/// A unary call to `path` with the answer decoded as `R`: a message that
/// names only the fields of the real answer the tool checks (the rest are
/// skipped as unknown fields).
pub(super) async fn unary_as<Q, R>(
    grpc: &mut tonic::client::Grpc<Channel>,
    request: Q,
    path: &'static str,
) -> Result<R, tonic::Status>
where
    Q: prost::Message + Send + Sync + 'static,
    R: prost::Message + Default + Send + Sync + 'static,
{
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let codec = tonic_prost::ProstCodec::<Q, R>::default();
    let path = http::uri::PathAndQuery::from_static(path);
    grpc.unary(tonic::Request::new(request), path, codec)
        .await
        .map(tonic::Response::into_inner)
}

/// GetGame with the answer decoded as a [`GetGameHead`].
async fn get_game_head(
    grpc: &mut tonic::client::Grpc<Channel>,
    request: pb::GetGameRequest,
) -> Result<GetGameHead, tonic::Status> {
    unary_as(grpc, request, "/referee.v1.RefereeService/GetGame").await
}

/// What a read phase asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Read {
    /// `GetGame`: the whole snapshot.
    GetGame,
    /// `GetGame` with `SNAPSHOT_VIEW_COMPACT`.
    GetGameCompact,
    /// `ListLegalMoves` with `MOVES_VIEW_NOTATION`.
    LegalNotation,
    /// `ListLegalMoves` with `MOVES_VIEW_TEXT`.
    LegalText,
    /// `ListLegalMoves` with `MOVES_VIEW_FULL`.
    LegalFull,
}

impl Read {
    /// Every read, in the order they run.
    pub const ALL: [Read; 5] = [
        Read::GetGame,
        Read::GetGameCompact,
        Read::LegalText,
        Read::LegalNotation,
        Read::LegalFull,
    ];

    /// The phase's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Read::GetGame => "GetGame",
            Read::GetGameCompact => "GetGame compact",
            Read::LegalText => "ListLegalMoves text",
            Read::LegalNotation => "ListLegalMoves notation",
            Read::LegalFull => "ListLegalMoves full",
        }
    }
}

/// The figures of one read phase.
#[derive(Debug, Clone, Serialize)]
pub struct ReadReport {
    /// What was read (`GetGame`, `ListLegalMoves notation`, …).
    pub read: &'static str,
    /// The ply of the games read.
    pub ply: u32,
    /// Calls answered OK within the measurement.
    pub calls: u64,
    /// Calls per second.
    pub per_sec: f64,
    /// Latency percentiles, in microseconds.
    pub latency_us: Latency,
    /// Bytes of one answer (protobuf encoding), from the first answer.
    pub answer_bytes: usize,
    /// Non-OK answers, or answers at the wrong ply.
    pub errors: u64,
    /// The first few of them.
    pub first_errors: Vec<String>,
    /// `per_sec` / the baseline's calls per second (the run's, or with
    /// `--rounds` above 1 the round's own, measured just before).
    pub ratio: f64,
    /// CPU time of the spawned server per call, in microseconds.
    pub server_cpu_us_per_call: Option<f64>,
    /// As `RunReport::cpu_ratio`: the ratio with the machine's other work
    /// taken out (only with --spawn).
    pub cpu_ratio: Option<f64>,
    /// Every round's ratios (`--rounds`), each against a baseline measured
    /// just before it; the figures above are the median round's.
    pub rounds: Vec<super::report::Round>,
}

/// A point games are read at: the games' ids there, and the ply.
#[derive(Debug, Clone)]
pub(super) struct Point {
    /// The ply every game of the point is at.
    pub ply: u32,
    /// The games.
    pub ids: Arc<[String]>,
}

/// Sets up the games read: [`GAMES_PER_POINT`] new games at ply 0, and as
/// many played from the pool to `--read-ply` (the pool's games long
/// enough for it; none if no game of the pool is).
pub(super) async fn points(
    args: &LoadArgs,
    channel: &Channel,
    pool: &[Arc<[String]>],
    create: &pb::CreateGameRequest,
    tool: &dyn WireGame,
) -> Result<Vec<Point>, String> {
    let mut client = rpc::Client::new(channel.clone());
    let mut start = Vec::new();
    for _ in 0..GAMES_PER_POINT {
        let game = rpc::create_game(&mut client, create.clone())
            .await
            .map_err(|s| format!("CreateGame for the reads: {}", s.message()))?;
        start.push(game.id().to_string());
    }
    let mut points = vec![Point {
        ply: 0,
        ids: start.into(),
    }];
    let ply = args.read_ply as usize;
    if ply == 0 {
        return Ok(points);
    }
    let mut mid = Vec::new();
    for moves in pool.iter().filter(|m| m.len() > ply).take(GAMES_PER_POINT) {
        let game = rpc::create_game(&mut client, create.clone())
            .await
            .map_err(|s| format!("CreateGame for the reads: {}", s.message()))?;
        let tokens = game
            .tokens
            .every_seat()
            .ok_or("CreateGame for the reads: no seat tokens")?;
        // The seat the referee names moves next (a game played in rounds
        // picks each round's first seat itself).
        let mut mover = 0;
        for (i, notation) in moves[..ply].iter().enumerate() {
            let answer = rpc::submit_move(
                &mut client,
                game.id(),
                &tokens[mover % tokens.len()],
                tool.wire_move(notation),
                i as u32,
                None,
            )
            .await
            .map_err(|s| format!("SubmitMove for the reads: {}", s.message()))?;
            mover = rpc::seat_index(answer.to_move).unwrap_or(0);
        }
        mid.push(game.id().to_string());
    }
    if !mid.is_empty() {
        points.push(Point {
            ply: args.read_ply,
            ids: mid.into(),
        });
    }
    Ok(points)
}

/// One read task: `read` of the point's games, round robin from game
/// `task`, until the window ends. The size reported is that of the point's
/// first game (the first answer of a task that starts with it), so the
/// sizes of the read kinds of a point compare the same position.
pub(super) async fn read_games(
    channel: Channel,
    read: Read,
    point: Point,
    task: usize,
    window: Window,
    errors: Arc<Errors>,
    size: Arc<std::sync::OnceLock<usize>>,
) -> Tally {
    use prost::Message as _;
    let mut client = rpc::Client::new(channel.clone());
    let mut grpc = tonic::client::Grpc::new(channel);
    let mut tally = Tally::default();
    let mut next = task;
    let mut first = true;
    loop {
        let started = Instant::now();
        if started >= window.end {
            return tally;
        }
        let id = point.ids[next % point.ids.len()].clone();
        next = next.wrapping_add(1);
        let view = match read {
            Read::GetGameCompact => pb::SnapshotView::Compact,
            _ => pb::SnapshotView::Full,
        };
        let answer = match read {
            Read::GetGame | Read::GetGameCompact if first => {
                client.get_game(get_request(id, view)).await.map(|r| {
                    let r = r.into_inner();
                    let ply = r.game.as_ref().map_or(u32::MAX, |g| g.ply);
                    (ply, r.encoded_len())
                })
            }
            Read::GetGame | Read::GetGameCompact => get_game_head(&mut grpc, get_request(id, view))
                .await
                .map(|r| {
                    let ply = r.game.as_ref().map_or(u32::MAX, |g| g.ply);
                    (ply, 0)
                }),
            Read::LegalText | Read::LegalNotation | Read::LegalFull => client
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: id,
                    view: match read {
                        Read::LegalText => pb::MovesView::Text,
                        Read::LegalNotation => pb::MovesView::Notation,
                        _ => pb::MovesView::Full,
                    } as i32,
                    ..Default::default()
                })
                .await
                .map(|r| {
                    let r = r.into_inner();
                    (r.ply, r.encoded_len())
                }),
        };
        let done = Instant::now();
        match answer {
            Ok((ply, bytes)) if ply == point.ply => {
                if first {
                    if task.is_multiple_of(point.ids.len()) {
                        size.get_or_init(|| bytes);
                    }
                    first = false;
                }
                if window.counts(started, done) {
                    tally.latencies.push(nanos(done - started));
                }
            }
            Ok((ply, _)) => {
                errors
                    .note(|| format!("{}: answered at ply {ply}, not {}", read.name(), point.ply));
                return tally;
            }
            Err(s) => {
                errors.note(|| format!("{}: {:?}: {}", read.name(), s.code(), s.message()));
                return tally;
            }
        }
    }
}
