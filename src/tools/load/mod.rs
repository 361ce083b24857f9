//! `punct-referee load`: a load generator for the referee service, and a
//! meter of its memory per idle game.
//!
//! For each concurrency C (`--games 1,16,256,4096`) it runs two phases over
//! the same HTTP/2 channels (`--channels`) with C tasks each:
//!
//! 1. **baseline**: every task calls `grpc.health.v1.Health/Check` in a loop —
//!    a no-op RPC, the cost of the transport alone;
//! 2. **moves**: every task plays one game after another (`CreateGame`, then
//!    `SubmitMove` for each seat in turn, a new game when one ends);
//! 3. with `--play`, **play**: the same games, each seat over its own
//!    `Play` stream (one per seat, a move answered on the stream), timed
//!    from a move's sending to its answer (`play`);
//! 4. with `--reads`, **reads**: every task reads games instead (`GetGame`,
//!    `ListLegalMoves` in the notation and the full view, at ply 0 and at
//!    `--read-ply`), one phase each (`reads`).
//!
//! Each phase warms up (`--warmup`), then measures (`--seconds`): calls per
//! second, the latency of each call (HdrHistogram: p50, p99, p99.9) and the
//! errors (any non-OK answer, or an answer that disagrees with the game; the
//! first few are printed). The moves phase times `SubmitMove` alone.
//! The report's `ratio` is SubmitMove throughput / baseline throughput,
//! both from the same run: on a shared machine that ratio is steadier than
//! either figure. With `--spawn` it also reads the CPU time the server and
//! this client spent in each phase (`/proc/<pid>/stat`) and reports it per
//! call, and `cpu_ratio`: the throughput ratio with the other work on the
//! machine taken out.
//!
//! The moves are random legal moves, but chosen *before* the runs: the
//! tool plays `--pool` random games with the engine (seeded by `--seed`)
//! and replays them against the server. Choosing moves during the run (by
//! `ListLegalMoves`, thousands of moves per position, or by generating them
//! here) would spend the machine's CPU on move choice and measure that
//! rather than the referee.
//!
//! With `--spawn` the tool starts this binary's own server on a free local
//! port, with the arguments after `--` (so one command compares server
//! settings: `-- --storage memory`, `-- --sync full`, …), waits until it is
//! healthy, and stops it at the end. The spawned server logs at `warn`, may
//! hold a million games, and keeps its durable store in a fresh temporary
//! directory (removed at the end), unless those arguments say otherwise.
//!
//! `--webhooks KINDS` (with `--spawn`) registers an endpoint for those
//! event kinds that delivers to a receiver inside this tool, and reports
//! what arrived, signatures checked; `--compare-webhooks` alternates moves
//! phases without and with that endpoint in each round and reports their
//! ratio (`webhooks`).
//!
//! `--idle-sessions N` (with `--spawn`) instead creates N games of `--game`
//! (with its options) that never move and reports the server's resident
//! memory (`VmRSS` of `/proc/<pid>/status`) before and after, per game.
//!
//! The figures and the commands are in docs/BENCHMARKS.md ("Service load").
//!
//! The files, by job: this one holds the flags and the dispatch; `spawn`
//! starts and stops the server of `--spawn`; `pool` chooses the moves
//! beforehand; `moves` runs the phases (baseline and moves); `play` the
//! games of `--play` over `Play` streams; `tally`
//! measures them (windows, latencies, errors); `procfs` reads the CPU time
//! and memory of processes; `report` prints and writes the figures; `idle`
//! is the `--idle-sessions` meter; `webhooks` the receiver and endpoint of
//! `--webhooks`.

mod idle;
mod moves;
mod play;
mod pool;
mod procfs;
mod reads;
mod report;
mod spawn;
mod tally;
mod webhooks;

use std::path::PathBuf;

use clap::Args;
use tonic::transport::Channel;

pub use self::pool::{random_games, random_games_of, random_games_with};
pub use self::procfs::rss_kib;
pub use self::reads::ReadReport;
pub use self::report::{IdleReport, Latency, LoadReport, RunReport};
use self::spawn::SpawnedServer;
pub use self::webhooks::{PairRound, WebhookComparison, WebhookTally};
use crate::tools::games::GameChoice;
use crate::tools::rpc::ServerAddress;

/// Games a spawned server may hold unless its arguments say otherwise: the
/// finished games of a long run stay until their TTL.
const SPAWNED_MAX_SESSIONS: usize = 1_000_000;

/// Flags of `punct-referee load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// The server to load (without --spawn): HOST:PORT or http://HOST:PORT.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub address: String,
    /// More replicas of the same cluster (docs/CLUSTER.md), comma-separated:
    /// the connections are spread over --address and these, round robin,
    /// and each task keeps its games on its connection's replica.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    pub also: Vec<String>,
    /// Start this binary's own server on a free local port, with the
    /// arguments given after `--`, and stop it at the end.
    #[arg(long)]
    pub spawn: bool,
    /// Concurrent games (and baseline callers) of each run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256,4096")]
    pub games: Vec<usize>,
    /// Seconds measured in each phase of each run.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Seconds of warm-up before each measurement.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// HTTP/2 connections the calls are spread over (round robin by task).
    #[arg(long, default_value_t = 4)]
    pub channels: usize,
    /// Random games generated before the runs and replayed against the
    /// server.
    #[arg(long, default_value_t = 256)]
    pub pool: usize,
    /// Seed of the random games.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The game played (`--game dots` or `--game punto` with its options;
    /// PÜNCT under the default rules by default). A seeded game without
    /// --game-seed gets one from --seed, so the pool's games replay on the
    /// server (every Punto match of the pool is dealt from that seed).
    #[command(flatten)]
    pub choice: GameChoice,
    /// After each round's moves phase, a play phase: the same games with
    /// each seat playing over its own `Play` stream, reported beside the
    /// SubmitMove and no-op figures of the same round.
    #[arg(long)]
    pub play: bool,
    /// After each concurrency's moves phase, read phases: `GetGame`, and
    /// `ListLegalMoves` in the notation and the full view, of games at ply 0
    /// and at `--read-ply`, each reported as a ratio to the baseline.
    #[arg(long)]
    pub reads: bool,
    /// The ply of the mid-game reads of `--reads` (0: only the start).
    #[arg(long, default_value_t = 40)]
    pub read_ply: u32,
    /// Only these read phases of `--reads`, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', value_enum, value_name = "READ")]
    pub read_kinds: Vec<reads::Read>,
    /// Rounds of each comparison: the baseline and the moves phase are
    /// measured this many times, one after the other, and so is each read
    /// phase, each after a baseline of its own; the round with the median
    /// ratio is reported (with every round's ratios), and errors of every
    /// round count. On a shared machine, whose other work drifts within
    /// seconds, this is what makes a ratio repeatable (1..=99).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Also write the results as JSON to this file (`-`: to standard
    /// output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Instead of the runs: create this many games of --game that never
    /// move and report the spawned server's memory per game (needs
    /// --spawn).
    #[arg(long, value_name = "N")]
    pub idle_sessions: Option<usize>,
    /// Register a webhook endpoint on the spawned server for these event
    /// kinds (`created`, `ended`, `move` or full names, comma-separated),
    /// delivering to a receiver in this tool that checks every signature,
    /// and report the deliveries (docs/BENCHMARKS.md, "Webhooks").
    #[arg(long, value_delimiter = ',', value_name = "KINDS")]
    pub webhooks: Vec<String>,
    /// Each round, a moves phase with no webhook endpoint and one with the
    /// endpoint of --webhooks (default: created,ended), in alternating
    /// order after one baseline; reports their ratios and medians.
    #[arg(long)]
    pub compare_webhooks: bool,
    /// Processes whose CPU time is counted as the server's (with that of
    /// their children: give a PostgreSQL server's postmaster to count its
    /// backends), comma-separated: without --spawn, the replicas of a
    /// cluster and their database (docs/BENCHMARKS.md, "Cluster on
    /// PostgreSQL"); with it, added to the spawned server's.
    #[arg(long, value_delimiter = ',', value_name = "PID")]
    pub cpu_of: Vec<u32>,
    /// Arguments of the spawned server (after `--`), e.g.
    /// `-- --max-concurrent-calls 8192`.
    #[arg(last = true, value_name = "SERVER_ARGS")]
    pub server_args: Vec<String>,
}

/// Runs the load generator (see the module docs). Fails on bad flags, an
/// unreachable server, or any error in a run (after printing the report).
pub async fn run(args: LoadArgs) -> Result<(), String> {
    let address = check(&args)?;
    tokio::select! {
        result = run_checked(&args, address) => result,
        _ = tokio::signal::ctrl_c() => Err("interrupted".into()),
    }
}

/// Refuses bad flags before anything starts; the address of `--address`.
fn check(args: &LoadArgs) -> Result<ServerAddress, String> {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err("--seconds must be positive".into());
    }
    if !(1..=99).contains(&args.rounds) {
        return Err("--rounds must be 1 to 99".into());
    }
    if !(args.warmup >= 0.0 && args.warmup.is_finite()) {
        return Err("--warmup must be zero or more".into());
    }
    if args.channels == 0 || args.pool == 0 {
        return Err("--channels and --pool must be at least 1".into());
    }
    if args.games.is_empty() || args.games.contains(&0) {
        return Err("--games must list positive numbers".into());
    }
    if args.idle_sessions.is_some() && !args.spawn {
        return Err("--idle-sessions reads the server's memory: use it with --spawn".into());
    }
    if !args.server_args.is_empty() && !args.spawn {
        return Err("server arguments (after `--`) need --spawn".into());
    }
    if (!args.webhooks.is_empty() || args.compare_webhooks) && !args.spawn {
        return Err("--webhooks and --compare-webhooks deliver to this tool: use --spawn".into());
    }
    if args.compare_webhooks && (args.play || args.reads || args.idle_sessions.is_some()) {
        return Err(
            "--compare-webhooks compares moves phases: not with --play, --reads or --idle-sessions"
                .into(),
        );
    }
    webhooks::kinds(args)?;
    if args.spawn && !args.also.is_empty() {
        return Err("--also names running replicas: it does not go with --spawn".into());
    }
    for also in &args.also {
        ServerAddress::parse("--also", also).map_err(|e| e.to_string())?;
    }
    ServerAddress::parse("--address", &args.address).map_err(|e| e.to_string())
}

/// Spawns the server if asked, connects, and runs the load or the idle meter.
async fn run_checked(args: &LoadArgs, address: ServerAddress) -> Result<(), String> {
    let max_sessions = args
        .idle_sessions
        .map_or(SPAWNED_MAX_SESSIONS, |n| n.saturating_add(10_000))
        .max(SPAWNED_MAX_SESSIONS);
    let kinds = webhooks::kinds(args)?;
    let spawned = if args.spawn {
        Some(SpawnedServer::start(&args.server_args, max_sessions, !kinds.is_empty()).await?)
    } else {
        None
    };
    let address = spawned.as_ref().map_or(address, |s| s.address.clone());
    let mut replicas = vec![address.clone()];
    for also in &args.also {
        replicas.push(ServerAddress::parse("--also", also).map_err(|e| e.to_string())?);
    }
    let result = match connect(&replicas, args.channels).await {
        Ok(channels) => match (args.idle_sessions, &spawned) {
            (Some(n), Some(server)) => idle::idle_sessions(args, &channels, server, n).await,
            _ => {
                let pids: Vec<u32> = spawned
                    .iter()
                    .map(|s| s.pid)
                    .chain(args.cpu_of.iter().copied())
                    .collect();
                with_hooks(args, &channels, &address, &pids, kinds).await
            }
        },
        Err(e) => Err(e),
    };
    if let Some(server) = spawned {
        server.stop().await;
    }
    result
}

/// The move load, with the receiver and endpoint of `--webhooks` when
/// `kinds` is not empty (registered for the whole run unless
/// `--compare-webhooks` registers it for half of each round).
async fn with_hooks(
    args: &LoadArgs,
    channels: &[Channel],
    address: &ServerAddress,
    pids: &[u32],
    kinds: Vec<String>,
) -> Result<(), String> {
    if kinds.is_empty() {
        return moves::load(args, channels, address, pids, None).await;
    }
    let hooks = webhooks::Hooks::start(channels[0].clone(), kinds).await?;
    if !args.compare_webhooks {
        hooks.register().await?;
    }
    moves::load(args, channels, address, pids, Some(&hooks)).await
}

/// `n` HTTP/2 connections, spread over `replicas` round robin.
async fn connect(replicas: &[ServerAddress], n: usize) -> Result<Vec<Channel>, String> {
    let mut channels = Vec::with_capacity(n);
    for i in 0..n.max(replicas.len()) {
        channels.push(replicas[i % replicas.len()].channel().await?);
    }
    Ok(channels)
}
