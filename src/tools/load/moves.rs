//! The move load: for each concurrency, a baseline phase (health checks,
//! the transport's cost alone) and a moves phase (games replayed from the
//! pool, `SubmitMove` timed), each with its CPU time sampled; then the
//! run's figures.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use prost::Message as _;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::LoadArgs;
use super::pool::{random_games, random_games_of};
use super::procfs::{self, CpuTicks};
use super::reads::{self, Point, Read, ReadReport};
use super::report::{self, LoadReport, Round, RunReport, take_median};
use super::tally::{Errors, Phase, Tally, Window, join, nanos};
use super::webhooks::{self, Hooks};
use crate::games::GameRules;
use crate::service::grpc::games::WireGame;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::games::game_of_wire;
use crate::tools::rpc::{self, ServerAddress};

/// The moves every task replays: one list of notations per game.
pub(super) type Pool = Arc<Vec<Arc<[String]>>>;

/// The pool's moves as the requests carry them: each game's moves, each an
/// encoded `referee.v1.Move`, made once before the runs.
pub(super) type Encoded = Arc<Vec<Arc<[Bytes]>>>;

/// Encodes every move of `pool` as `game`'s wire move.
fn encoded_moves(pool: &Pool, tool: &dyn WireGame) -> Encoded {
    Arc::new(
        pool.iter()
            .map(|game| {
                game.iter()
                    .map(|n| Bytes::from(tool.wire_move(n).encode_to_vec()))
                    .collect()
            })
            .collect(),
    )
}

/// The game every task plays: how it is created, and its row.
#[derive(Clone)]
pub(super) struct Played {
    create: pb::CreateGameRequest,
    game: &'static dyn WireGame,
}

/// The pool and the game of `--game`: the default game's pool from its own
/// engine ([`random_games`]) and `CreateGame` with no rules, as before; any
/// other game through the trait.
fn pool_and_game(args: &LoadArgs) -> Result<(Pool, Played), String> {
    if args.choice.is_default_game() {
        let played = Played {
            create: pb::CreateGameRequest::default(),
            game: game_of_wire(None),
        };
        return Ok((Arc::new(random_games(args.pool, args.seed)), played));
    }
    let rules = args
        .choice
        .rules(GameRules::default())?
        .with_seed_if_needed(|| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&args.seed.to_be_bytes());
            seed
        });
    let pool = random_games_of(&rules, args.pool, args.seed)?;
    let played = Played {
        create: rpc::create_request_for(&rules, Default::default(), None),
        game: rules.game(),
    };
    Ok((Arc::new(pool), played))
}

/// Runs every concurrency of `--games` against `address`, printing the
/// table as it goes; fails if any call failed.
pub(super) async fn load(
    args: &LoadArgs,
    channels: &[Channel],
    address: &ServerAddress,
    server_pids: &[u32],
    hooks: Option<&Hooks>,
) -> Result<(), String> {
    let (pool, played) = pool_and_game(args)?;
    let average = pool.iter().map(|g| g.len()).sum::<usize>() as f64 / pool.len() as f64;
    let mut report = LoadReport {
        target: if args.spawn {
            format!("spawned: {address}")
        } else {
            address.to_string()
        },
        server_args: args.server_args.clone(),
        channels: channels.len(),
        seconds: args.seconds,
        warmup: args.warmup,
        pool: pool.len(),
        pool_average_plies: average,
        runs: Vec::new(),
        webhooks: None,
    };
    let points = if args.reads {
        reads::points(args, &channels[0], &pool, &played.create, played.game).await?
    } else {
        Vec::new()
    };
    let encoded = encoded_moves(&pool, played.game);
    let table = report::prints_table(args);
    if table {
        report::print_header(&report);
    }
    for &games in &args.games {
        let (pair, game) = ((&pool, &encoded), &played);
        let run = match hooks.filter(|_| args.compare_webhooks) {
            Some(h) => {
                webhooks::compare_run(args, channels, pair, game, games, server_pids, h).await?
            }
            None => one_run(args, channels, pair, game, games, server_pids, &points).await,
        };
        if table {
            report::print_row(&run);
        }
        report.runs.push(run);
    }
    report.webhooks = webhooks::finish(args, hooks, table).await?;
    report::write_json(args, &report)?;
    let errors: u64 = report
        .runs
        .iter()
        .map(|r| {
            r.errors
                + r.baseline_errors
                + r.play.as_ref().map_or(0, |p| p.errors)
                + r.reads.iter().map(|x| x.errors).sum::<u64>()
        })
        .sum();
    if errors > 0 {
        return Err(format!("{errors} calls failed"));
    }
    Ok(())
}

/// A phase measured: the merged tallies, the CPU time, the errors.
pub(super) struct Measured {
    phase: Phase,
    cpu: CpuTicks,
    errors: u64,
    first_errors: Vec<String>,
    seconds: f64,
}

/// One concurrency: the baseline phase, then the moves phase (`--rounds`
/// times), then the read phases.
async fn one_run(
    args: &LoadArgs,
    channels: &[Channel],
    (pool, encoded): (&Pool, &Encoded),
    played: &Played,
    games: usize,
    server_pids: &[u32],
    points: &[Point],
) -> RunReport {
    let mut runs = Vec::with_capacity(args.rounds);
    let mut baseline = None;
    for _ in 0..args.rounds {
        let b = baseline_phase(args, channels, games, server_pids).await;
        let moves = moves_phase(
            args,
            channels,
            (pool, encoded),
            played,
            games,
            server_pids,
            false,
        )
        .await;
        let mut report = run_report(games, &b, moves);
        if args.play {
            let streamed = moves_phase(
                args,
                channels,
                (pool, encoded),
                played,
                games,
                server_pids,
                true,
            );
            report.play = Some(play_report(&b, &report, streamed.await));
        }
        runs.push(report);
        baseline = Some(b);
    }
    let mut run = median_of_runs(runs);
    let Some(run_baseline) = baseline else {
        return run;
    };
    for point in points {
        let kinds = Read::ALL
            .into_iter()
            .filter(|r| args.read_kinds.is_empty() || args.read_kinds.contains(r));
        for read in kinds {
            let mut rounds = Vec::with_capacity(args.rounds);
            for _ in 0..args.rounds {
                // One round reads against the run's last baseline, as
                // before; more rounds each measure their own just before.
                let fresh = if args.rounds > 1 {
                    Some(baseline_phase(args, channels, games, server_pids).await)
                } else {
                    None
                };
                let size = Arc::new(std::sync::OnceLock::new());
                let measured = measure(args, server_pids, games, |i, window, errors| {
                    tokio::spawn(reads::read_games(
                        channels[i % channels.len()].clone(),
                        read,
                        point.clone(),
                        i,
                        window,
                        errors,
                        size.clone(),
                    ))
                })
                .await;
                let against = fresh.as_ref().unwrap_or(&run_baseline);
                rounds.push(read_report(read, point.ply, against, measured, &size));
            }
            run.reads.push(median_of_reads(rounds));
        }
    }
    run
}

/// The median round of a concurrency's moves, with every round's ratios
/// and errors.
fn median_of_runs(runs: Vec<RunReport>) -> RunReport {
    let errors = runs.iter().map(|r| r.errors).sum();
    let play_errors: u64 = runs
        .iter()
        .filter_map(|r| r.play.as_ref())
        .map(|p| p.errors)
        .sum();
    let play_first: Vec<String> = runs
        .iter()
        .filter_map(|r| r.play.as_ref())
        .flat_map(|p| p.first_errors.clone())
        .collect();
    let baseline_errors = runs.iter().map(|r| r.baseline_errors).sum();
    let first_errors = runs.iter().flat_map(|r| r.first_errors.clone()).collect();
    let baseline_first = runs
        .iter()
        .flat_map(|r| r.baseline_first_errors.clone())
        .collect();
    let (mut run, rounds) = take_median(runs, |r| Round {
        ratio: r.ratio,
        cpu_ratio: r.cpu_ratio,
    });
    run.errors = errors;
    run.baseline_errors = baseline_errors;
    run.first_errors = first_errors;
    run.baseline_first_errors = baseline_first;
    run.rounds = rounds;
    if let Some(play) = run.play.as_mut() {
        play.errors = play_errors;
        play.first_errors = play_first;
    }
    run
}

/// A baseline phase: health checks (as in every round).
pub(super) async fn baseline_phase(
    args: &LoadArgs,
    channels: &[Channel],
    games: usize,
    server_pids: &[u32],
) -> Measured {
    measure(args, server_pids, games, |i, window, errors| {
        let client = HealthClient::new(channels[i % channels.len()].clone());
        tokio::spawn(check_health(client, window, errors))
    })
    .await
}

/// A moves phase: `games` tasks playing over `Play` streams (`over_play`,
/// `play.rs`) or unary calls, measured.
pub(super) async fn moves_phase(
    args: &LoadArgs,
    channels: &[Channel],
    (pool, encoded): (&Pool, &Encoded),
    played: &Played,
    games: usize,
    server_pids: &[u32],
    over_play: bool,
) -> Measured {
    measure(args, server_pids, games, |i, window, errors| {
        let channel = channels[i % channels.len()].clone();
        tokio::spawn(play_games(
            channel,
            (pool.clone(), encoded.clone()),
            played.clone(),
            (i, games),
            over_play,
            window,
            errors,
        ))
    })
    .await
}

/// The figures of a round's play phase, against the same round's
/// baseline and moves phase (`unary`).
fn play_report(baseline: &Measured, unary: &RunReport, streamed: Measured) -> report::PlayReport {
    let per_sec = streamed.phase.calls as f64 / streamed.seconds;
    let baseline_per_sec = baseline.phase.calls as f64 / baseline.seconds;
    let server = procfs::per_call(streamed.cpu.0, streamed.phase.calls);
    let noop = unary.server_cpu_us_per_baseline_call;
    let vs_noop = |v: Option<f64>| match (v, noop) {
        (Some(v), Some(n)) if n > 0.0 => Some(v / n),
        _ => None,
    };
    report::PlayReport {
        moves: streamed.phase.calls,
        moves_per_sec: per_sec,
        latency_us: streamed.phase.latency(),
        errors: streamed.errors,
        first_errors: streamed.first_errors,
        ratio: if baseline_per_sec > 0.0 {
            per_sec / baseline_per_sec
        } else {
            0.0
        },
        server_cpu_us_per_move: server,
        client_cpu_us_per_move: procfs::per_call(streamed.cpu.1, streamed.phase.calls),
        server_cpu_vs_noop: vs_noop(server),
        unary_server_cpu_vs_noop: vs_noop(unary.server_cpu_us_per_move),
    }
}

/// The median round of a read phase, with every round's ratios and errors.
fn median_of_reads(reads: Vec<ReadReport>) -> ReadReport {
    let errors = reads.iter().map(|r| r.errors).sum();
    let first_errors = reads.iter().flat_map(|r| r.first_errors.clone()).collect();
    let (mut read, rounds) = take_median(reads, |r| Round {
        ratio: r.ratio,
        cpu_ratio: r.cpu_ratio,
    });
    read.errors = errors;
    read.first_errors = first_errors;
    read.rounds = rounds;
    read
}

/// The figures of one read phase, against the run's baseline.
fn read_report(
    read: Read,
    ply: u32,
    baseline: &Measured,
    measured: Measured,
    size: &std::sync::OnceLock<usize>,
) -> ReadReport {
    let per_sec = measured.phase.calls as f64 / measured.seconds;
    let baseline_per_sec = baseline.phase.calls as f64 / baseline.seconds;
    ReadReport {
        read: read.name(),
        ply,
        calls: measured.phase.calls,
        per_sec,
        latency_us: measured.phase.latency(),
        answer_bytes: size.get().copied().unwrap_or(0),
        errors: measured.errors,
        first_errors: measured.first_errors,
        ratio: if baseline_per_sec > 0.0 {
            per_sec / baseline_per_sec
        } else {
            0.0
        },
        server_cpu_us_per_call: procfs::per_call(measured.cpu.0, measured.phase.calls),
        rounds: Vec::new(),
        cpu_ratio: procfs::cpu_ratio(
            baseline.cpu,
            baseline.phase.calls,
            measured.cpu,
            measured.phase.calls,
        ),
    }
}

/// Runs `tasks` tasks made by `spawn` through one window after the warm-up,
/// sampling the CPU time meanwhile.
pub(super) async fn measure(
    args: &LoadArgs,
    server_pids: &[u32],
    tasks: usize,
    mut spawn: impl FnMut(usize, Window, Arc<Errors>) -> tokio::task::JoinHandle<Tally>,
) -> Measured {
    let errors = Arc::new(Errors::default());
    let window = Window::after_warmup(args);
    let cpu = tokio::spawn(procfs::cpu_in(window, server_pids.to_vec()));
    let tasks: Vec<_> = (0..tasks)
        .map(|i| spawn(i, window, errors.clone()))
        .collect();
    let phase = Phase::merge(join(tasks).await);
    let cpu = cpu.await.unwrap_or_default();
    let (errors, first_errors) = errors.take();
    Measured {
        phase,
        cpu,
        errors,
        first_errors,
        seconds: window.seconds(),
    }
}

/// The figures of one concurrency from its two phases.
pub(super) fn run_report(games: usize, baseline: &Measured, moves: Measured) -> RunReport {
    let moves_per_sec = moves.phase.calls as f64 / moves.seconds;
    let baseline_per_sec = baseline.phase.calls as f64 / baseline.seconds;
    let (b, m) = (&baseline.phase, &moves.phase);
    RunReport {
        games,
        moves: m.calls,
        moves_per_sec,
        submit_latency_us: m.latency(),
        errors: moves.errors,
        first_errors: moves.first_errors,
        games_started: m.games_started,
        games_finished: m.games_finished,
        baseline_calls: b.calls,
        baseline_per_sec,
        baseline_latency_us: b.latency(),
        baseline_errors: baseline.errors,
        baseline_first_errors: baseline.first_errors.clone(),
        ratio: if baseline_per_sec > 0.0 {
            moves_per_sec / baseline_per_sec
        } else {
            0.0
        },
        server_cpu_us_per_move: procfs::per_call(moves.cpu.0, m.calls),
        server_cpu_us_per_baseline_call: procfs::per_call(baseline.cpu.0, b.calls),
        client_cpu_us_per_move: procfs::per_call(moves.cpu.1, m.calls),
        client_cpu_us_per_baseline_call: procfs::per_call(baseline.cpu.1, b.calls),
        cpu_ratio: procfs::cpu_ratio(baseline.cpu, b.calls, moves.cpu, m.calls),
        play: None,
        reads: Vec::new(),
        rounds: Vec::new(),
        webhooks: None,
    }
}

/// Baseline: health checks until the window ends.
pub(super) async fn check_health(
    mut client: HealthClient<Channel>,
    window: Window,
    errors: Arc<Errors>,
) -> Tally {
    let mut tally = Tally::default();
    loop {
        let started = Instant::now();
        if started >= window.end {
            return tally;
        }
        let answer = client.check(HealthCheckRequest::default()).await;
        let done = Instant::now();
        match answer.map(|r| r.into_inner().status()) {
            Ok(ServingStatus::Serving) => {
                if window.counts(started, done) {
                    tally.latencies.push(nanos(done - started));
                }
            }
            Ok(other) => {
                errors.note(|| format!("Check: {}", other.as_str_name()));
                return tally;
            }
            Err(s) => {
                errors.note(|| format!("Check: {:?}: {}", s.code(), s.message()));
                return tally;
            }
        }
    }
}

/// What the moves phase reads of a `SubmitMoveResponse`: the fields it
/// checks (the ply and the status) and the next mover, decoded without the
/// move, which the server echoes and nobody here looks at. A load
/// generator measures the server (h2load, which decodes nothing, is the
/// model); the move's strings, decoded on the same two cores, would measure
/// the client. The server still encodes and sends the whole answer.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SubmitMoveHead {
    /// `SubmitMoveResponse.ply`.
    #[prost(uint32, tag = "3")]
    pub ply: u32,
    /// `SubmitMoveResponse.status`.
    #[prost(int32, tag = "4")]
    pub status: i32,
    /// `SubmitMoveResponse.to_move`.
    #[prost(uint32, tag = "6")]
    pub to_move: u32,
}

/// A `SubmitMoveRequest` as the moves phase sends it: the same fields with
/// the same tags, so the same bytes on the wire (a string and an embedded
/// message are both length-delimited, as bytes are), held as shared
/// buffers: the game's id and each seat's token taken once per game, each
/// move encoded once before the runs. Building and encoding the request
/// anew for every call (three strings and a nested message) was client
/// work the ratio counted against the server; h2load, which sends
/// pre-encoded frames, is again the model.
#[derive(Clone, PartialEq, prost::Message)]
struct SubmitMoveWire {
    /// `SubmitMoveRequest.game_id`.
    #[prost(bytes = "bytes", tag = "1")]
    game_id: Bytes,
    /// `SubmitMoveRequest.token`.
    #[prost(bytes = "bytes", tag = "2")]
    token: Bytes,
    /// `SubmitMoveRequest.move`, encoded.
    #[prost(bytes = "bytes", tag = "3")]
    r#move: Bytes,
    /// `SubmitMoveRequest.expected_ply`.
    #[prost(uint32, tag = "4")]
    expected_ply: u32,
}

/// What the moves phase reads of a `CreateGameResponse`: the game's id and
/// the seats' tokens, without the new game's snapshot (1.4 KB for PÜNCT)
/// that nobody here looks at.
#[derive(Clone, PartialEq, prost::Message)]
struct CreateGameHead {
    /// `CreateGameResponse.game`, its id alone.
    #[prost(message, optional, tag = "1")]
    game: Option<GameIdHead>,
    /// `CreateGameResponse.seats`.
    #[prost(message, repeated, tag = "2")]
    seats: Vec<pb::SeatToken>,
}

/// `Game.game_id` alone.
#[derive(Clone, PartialEq, prost::Message)]
struct GameIdHead {
    /// `Game.game_id`.
    #[prost(string, tag = "1")]
    game_id: String,
}

/// Moves: games from the pool, one after another, until the window ends,
/// each over unary calls or (`over_play`) over one Play stream per seat.
/// Task `task` of `tasks` plays pool games `task`, `task + tasks`, ….
async fn play_games(
    channel: Channel,
    (pool, encoded): (Pool, Encoded),
    played: Played,
    (task, tasks): (usize, usize),
    over_play: bool,
    window: Window,
    errors: Arc<Errors>,
) -> Tally {
    let mut load = MovesTask {
        grpc: tonic::client::Grpc::new(channel),
        window,
        errors,
        tally: Tally::default(),
    };
    let mut next = task;
    while Instant::now() < window.end {
        let moves = pool[next % pool.len()].clone();
        let wire_moves = encoded[next % encoded.len()].clone();
        next = next.wrapping_add(tasks);
        let Some(game) = load.create_game(&played).await else {
            return load.tally;
        };
        load.tally.games_started += 1;
        let end = if over_play {
            load.play_over_streams(&game, &moves, &wire_moves).await
        } else {
            load.play_game(&game, &moves, &wire_moves).await
        };
        match end {
            GameEnd::Finished => load.tally.games_finished += 1,
            GameEnd::Failed => {}
            GameEnd::WindowOver => break,
        }
    }
    load.tally
}

/// One task of the moves phase: its connection, its window, where it notes
/// errors, and what it counted.
pub(super) struct MovesTask {
    pub grpc: tonic::client::Grpc<Channel>,
    pub window: Window,
    pub errors: Arc<Errors>,
    pub tally: Tally,
}

/// A game the moves phase created: its id (for the errors, and as the
/// requests' shared buffer) and each seat's token.
pub(super) struct NewGame {
    pub id: String,
    pub game_id: Bytes,
    pub tokens: Vec<Bytes>,
}

/// How one game of the moves phase ended.
pub(super) enum GameEnd {
    /// Every move was played.
    Finished,
    /// A move was refused or answered wrongly (noted): on to the next game.
    Failed,
    /// The window ended before the game did.
    WindowOver,
}

impl MovesTask {
    /// A new game, or `None` (noted) when the server refuses games (a
    /// limit, or it is gone): the task then stops rather than hammer it.
    pub(super) async fn create_game(&mut self, played: &Played) -> Option<NewGame> {
        let created: CreateGameHead = match reads::unary_as(
            &mut self.grpc,
            played.create.clone(),
            "/referee.v1.RefereeService/CreateGame",
        )
        .await
        {
            Ok(created) => created,
            Err(s) => {
                self.errors
                    .note(|| format!("CreateGame: {:?}: {}", s.code(), s.message()));
                return None;
            }
        };
        let id = created.game.map(|g| g.game_id).unwrap_or_default();
        let Some(tokens) = rpc::SeatTokens::from_wire(&created.seats)
            .every_seat()
            .filter(|_| !id.is_empty())
        else {
            self.errors
                .note(|| "CreateGame: no game id or seat tokens in the answer".into());
            return None;
        };
        Some(NewGame {
            tokens: tokens.into_iter().map(Bytes::from).collect(),
            game_id: Bytes::from(id.clone()),
            id,
        })
    }

    /// Plays `moves` (encoded: `wire_moves`) in `game`, one call each,
    /// timing the calls inside the window.
    async fn play_game(
        &mut self,
        game: &NewGame,
        moves: &[String],
        wire_moves: &[Bytes],
    ) -> GameEnd {
        // The first seat moves first; then whoever the referee names (a
        // game played in rounds picks each round's first seat itself).
        let mut mover = 0;
        for (ply, notation) in moves.iter().enumerate() {
            let started = Instant::now();
            if started >= self.window.end {
                return GameEnd::WindowOver;
            }
            let request = SubmitMoveWire {
                game_id: game.game_id.clone(),
                token: game.tokens[mover % game.tokens.len()].clone(),
                r#move: wire_moves[ply].clone(),
                expected_ply: ply as u32,
            };
            let answer: Result<SubmitMoveHead, _> = reads::unary_as(
                &mut self.grpc,
                request,
                "/referee.v1.RefereeService/SubmitMove",
            )
            .await;
            let done = Instant::now();
            let last = ply + 1 == moves.len();
            let Some(next) = self.checked(answer, &game.id, ply, notation, last) else {
                return GameEnd::Failed;
            };
            if self.window.counts(started, done) {
                self.tally.latencies.push(nanos(done - started));
            }
            mover = next;
        }
        GameEnd::Finished
    }

    /// The seat to move next after the answer to move `ply` (`notation`,
    /// the game's `last` or not) of game `id`, or `None` (noted) when it was
    /// refused or does not say what it should: the next ply, and finished
    /// exactly after the last move.
    #[inline]
    pub(super) fn checked(
        &self,
        answer: Result<SubmitMoveHead, tonic::Status>,
        id: &str,
        ply: usize,
        notation: &str,
        last: bool,
    ) -> Option<usize> {
        match answer {
            Ok(r) => {
                let finished = r.status == pb::GameStatus::Finished as i32;
                if r.ply != ply as u32 + 1 || finished != last {
                    self.errors.note(|| {
                        format!(
                            "SubmitMove `{notation}` at ply {ply} of game {id}: answer at ply {} says finished={finished}, expected {last}",
                            r.ply
                        )
                    });
                    return None;
                }
                Some(rpc::seat_index(r.to_move).unwrap_or(0))
            }
            Err(s) => {
                self.errors.note(|| {
                    format!(
                        "SubmitMove `{notation}` at ply {ply}: {:?}: {}",
                        s.code(),
                        s.message()
                    )
                });
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load's request is byte for byte the `SubmitMoveRequest` it
    /// stands for, so the server does exactly the work a client's costs it.
    #[test]
    fn the_wire_request_encodes_as_the_real_one() {
        for (game, notation) in [("punct", "W:c3"), ("dots", "3,4"), ("punto", "c4")] {
            let tool = crate::tools::games::tool_game(game).unwrap();
            let wire_move = |n: &str| tool.wire_move(n);
            let real = pb::SubmitMoveRequest {
                game_id: "g-0123456789abcdef".into(),
                token: "0123456789abcdef0123456789abcdef".into(),
                r#move: Some(wire_move(notation)),
                expected_ply: 41,
                request_id: String::new(),
            };
            let ours = SubmitMoveWire {
                game_id: Bytes::from_static(b"g-0123456789abcdef"),
                token: Bytes::from_static(b"0123456789abcdef0123456789abcdef"),
                r#move: Bytes::from(wire_move(notation).encode_to_vec()),
                expected_ply: 41,
            };
            assert_eq!(ours.encode_to_vec(), real.encode_to_vec(), "{notation}");
            assert_eq!(
                pb::SubmitMoveRequest::decode(ours.encode_to_vec().as_slice()).unwrap(),
                real
            );
        }
    }

    /// The head of a `CreateGameResponse` reads its id and tokens.
    #[test]
    fn the_create_head_reads_the_id_and_the_tokens() {
        let real = pb::CreateGameResponse {
            game: Some(pb::Game {
                game_id: "g-1".into(),
                ply: 3,
                ..Default::default()
            }),
            seats: vec![
                pb::SeatToken {
                    seat: 2,
                    token: "b".into(),
                    name: "black".into(),
                },
                pb::SeatToken {
                    seat: 1,
                    token: "w".into(),
                    name: "white".into(),
                },
            ],
        };
        let head = CreateGameHead::decode(real.encode_to_vec().as_slice()).unwrap();
        assert_eq!(head.game.unwrap().game_id, "g-1");
        assert_eq!(
            rpc::SeatTokens::from_wire(&head.seats).every_seat(),
            Some(vec!["w".to_string(), "b".to_string()])
        );
    }
}
