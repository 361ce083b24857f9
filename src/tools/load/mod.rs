//! `punct-referee load`: a load generator for the referee service, and a
//! meter of its memory per idle game.
//!
//! For each concurrency C (`--games 1,16,256,4096`) it runs two phases over
//! the same HTTP/2 channels (`--channels`) with C tasks each:
//!
//! 1. **baseline**: every task calls `grpc.health.v1.Health/Check` in a loop —
//!    a no-op RPC, the cost of the transport alone;
//! 2. **moves**: every task plays one game after another (`CreateGame`, then
//!    `SubmitMove` for each seat in turn, a new game when one ends).
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
//! `--idle-sessions N` (with `--spawn`) instead creates N games that never
//! move and reports the server's resident memory (`VmRSS` of
//! `/proc/<pid>/status`) before and after, per game.
//!
//! The figures and the commands are in docs/BENCHMARKS.md ("Service load").

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::games::punct::{Game, RuleOptions};
use crate::service::grpc::pb::punct::v1 as ppb;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;

/// How many error messages a phase keeps to print.
const ERRORS_SHOWN: usize = 5;

/// Games a spawned server may hold unless its arguments say otherwise: the
/// finished games of a long run stay until their TTL.
const SPAWNED_MAX_SESSIONS: usize = 1_000_000;

/// Flags of `punct-referee load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// The server to load (without --spawn).
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub address: String,
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
    /// Also write the results as JSON to this file (`-`: to standard
    /// output, instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Instead of the runs: create this many games that never move and
    /// report the spawned server's memory per game (needs --spawn).
    #[arg(long, value_name = "N")]
    pub idle_sessions: Option<usize>,
    /// Arguments of the spawned server (after `--`), e.g.
    /// `-- --max-concurrent-calls 8192`.
    #[arg(last = true, value_name = "SERVER_ARGS")]
    pub server_args: Vec<String>,
}

/// The figures of one concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Concurrent games (and baseline callers).
    pub games: usize,
    /// SubmitMove calls answered OK within the measurement.
    pub moves: u64,
    /// SubmitMove calls per second.
    pub moves_per_sec: f64,
    /// SubmitMove latency percentiles, in microseconds.
    pub submit_latency_us: Latency,
    /// Non-OK or wrong answers in the moves phase (warm-up included).
    pub errors: u64,
    /// The first few of them.
    pub first_errors: Vec<String>,
    /// Games created in the moves phase.
    pub games_started: u64,
    /// Games played to their end in the moves phase.
    pub games_finished: u64,
    /// Health checks answered SERVING within the measurement.
    pub baseline_calls: u64,
    /// Health checks per second.
    pub baseline_per_sec: f64,
    /// Health-check latency percentiles, in microseconds.
    pub baseline_latency_us: Latency,
    /// Errors in the baseline phase.
    pub baseline_errors: u64,
    /// The first few of them.
    pub baseline_first_errors: Vec<String>,
    /// `moves_per_sec / baseline_per_sec`.
    pub ratio: f64,
    /// CPU time of the spawned server per SubmitMove call (user + system,
    /// over the measurement; CreateGame included), in microseconds.
    pub server_cpu_us_per_move: Option<f64>,
    /// CPU time of the spawned server per health check, in microseconds.
    pub server_cpu_us_per_baseline_call: Option<f64>,
    /// CPU time of this client per SubmitMove call, in microseconds.
    pub client_cpu_us_per_move: Option<f64>,
    /// CPU time of this client per health check, in microseconds.
    pub client_cpu_us_per_baseline_call: Option<f64>,
    /// (server + client CPU per health check) / (server + client CPU per
    /// SubmitMove): the throughput ratio a machine running only these two
    /// would show. Steadier than `ratio` on a shared machine, where other
    /// work takes a different share of the CPU in each phase.
    pub cpu_ratio: Option<f64>,
}

/// Latency percentiles, in microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Slowest.
    pub max: f64,
}

/// The whole report of a load run.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// Where the calls went (`spawned: …` with --spawn).
    pub target: String,
    /// Arguments of the spawned server.
    pub server_args: Vec<String>,
    /// HTTP/2 connections used.
    pub channels: usize,
    /// Seconds measured per phase.
    pub seconds: f64,
    /// Seconds of warm-up per phase.
    pub warmup: f64,
    /// Random games replayed, and their average length in plies.
    pub pool: usize,
    /// Average plies of the pool's games.
    pub pool_average_plies: f64,
    /// One entry per concurrency.
    pub runs: Vec<RunReport>,
}

/// The report of `--idle-sessions`.
#[derive(Debug, Clone, Serialize)]
pub struct IdleReport {
    /// Games created and left idle.
    pub sessions: usize,
    /// Server VmRSS before, in KiB.
    pub rss_before_kib: u64,
    /// Server VmRSS after, in KiB.
    pub rss_after_kib: u64,
    /// (after − before) / sessions, in bytes.
    pub bytes_per_session: f64,
    /// Arguments of the spawned server.
    pub server_args: Vec<String>,
}

/// Runs the load generator (see the module docs). Fails on bad flags, an
/// unreachable server, or any error in a run (after printing the report).
pub async fn run(args: LoadArgs) -> Result<(), String> {
    check(&args)?;
    tokio::select! {
        result = run_checked(&args) => result,
        _ = tokio::signal::ctrl_c() => Err("interrupted".into()),
    }
}

fn check(args: &LoadArgs) -> Result<(), String> {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err("--seconds must be positive".into());
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
    Ok(())
}

async fn run_checked(args: &LoadArgs) -> Result<(), String> {
    let max_sessions = args
        .idle_sessions
        .map_or(SPAWNED_MAX_SESSIONS, |n| n.saturating_add(10_000))
        .max(SPAWNED_MAX_SESSIONS);
    let spawned = if args.spawn {
        Some(SpawnedServer::start(&args.server_args, max_sessions).await?)
    } else {
        None
    };
    let address = spawned
        .as_ref()
        .map_or(args.address.clone(), |s| s.address.clone());
    let channels = connect(&address, args.channels).await?;
    let result = match (args.idle_sessions, &spawned) {
        (Some(n), Some(server)) => idle_sessions(args, &channels, server, n).await,
        _ => load(args, &channels, &address, spawned.as_ref().map(|s| s.pid)).await,
    };
    if let Some(server) = spawned {
        server.stop().await;
    }
    result
}

async fn connect(address: &str, n: usize) -> Result<Vec<Channel>, String> {
    let endpoint = Endpoint::from_shared(address.to_string())
        .map_err(|e| format!("bad address `{address}`: {e}"))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    let mut channels = Vec::with_capacity(n);
    for _ in 0..n {
        channels.push(
            endpoint
                .connect()
                .await
                .map_err(|e| format!("cannot connect to {address}: {e}"))?,
        );
    }
    Ok(channels)
}

/// A server child process started by `--spawn`.
struct SpawnedServer {
    child: tokio::process::Child,
    pid: u32,
    address: String,
    /// A fresh data directory for its durable store, removed at the end.
    data_dir: PathBuf,
}

impl SpawnedServer {
    async fn start(extra: &[String], max_sessions: usize) -> Result<SpawnedServer, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        // A free port: bound and released at once (another process could
        // take it in between; then the server fails and says so).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        // A durable store starts empty (no games of an earlier run to
        // recover) and leaves nothing behind.
        let data_dir =
            std::env::temp_dir().join(format!("punct-load-{}-{port}", std::process::id()));
        let mut child = tokio::process::Command::new(&exe)
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .args(extra)
            // Defaults the arguments can override (flags win over these).
            .env("PUNCT_REFEREE_MAX_SESSIONS", max_sessions.to_string())
            .env("PUNCT_REFEREE_METRICS_LISTEN", "127.0.0.1:0")
            .env("PUNCT_REFEREE_LOG", "warn")
            .env("PUNCT_REFEREE_DATA_DIR", &data_dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let address = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the server exited: {status}"));
            }
            if serving(&address).await {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("the server at {address} did not become healthy"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(SpawnedServer {
            child,
            pid,
            address,
            data_dir,
        })
    }

    /// Resident memory of the server now, in KiB.
    fn rss_kib(&self) -> Result<u64, String> {
        rss_kib(self.pid)
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// `VmRSS` of process `pid`, in KiB (Linux).
pub fn rss_kib(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("{path}: no VmRSS line"))
}

/// CPU time (user + system) of process `pid` so far, in clock ticks of
/// 1/100 s (Linux's `USER_HZ`), from `/proc/<pid>/stat`.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces), from field 3.
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Microseconds of one clock tick of [`cpu_ticks`].
const TICK_US: f64 = 10_000.0;

/// CPU ticks of the server (if spawned) and of this process spent within
/// `window`: sampled when it starts and when it ends.
async fn cpu_in(window: Window, server: Option<u32>) -> (Option<u64>, Option<u64>) {
    let me = std::process::id();
    tokio::time::sleep_until(window.start.into()).await;
    let start = (server.and_then(cpu_ticks), cpu_ticks(me));
    tokio::time::sleep_until(window.end.into()).await;
    let end = (server.and_then(cpu_ticks), cpu_ticks(me));
    let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
    (delta(start.0, end.0), delta(start.1, end.1))
}

fn per_call(ticks: Option<u64>, calls: u64) -> Option<f64> {
    let ticks = ticks?;
    (calls > 0).then(|| ticks as f64 * TICK_US / calls as f64)
}

async fn serving(address: &str) -> bool {
    let Ok(endpoint) = Endpoint::from_shared(address.to_string()) else {
        return false;
    };
    let Ok(channel) = endpoint
        .connect_timeout(Duration::from_secs(1))
        .connect()
        .await
    else {
        return false;
    };
    HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await
        .is_ok_and(|r| r.into_inner().status() == ServingStatus::Serving)
}

/// Plays `n` random games with the engine under the default rules (what
/// `CreateGame` gives when no rules are asked for): each a list of moves in
/// notation, to the game's end.
pub fn random_games(n: usize, seed: u64) -> Vec<Arc<[String]>> {
    random_games_with(RuleOptions::default(), n, seed)
}

/// [`random_games`] under `options`.
pub fn random_games_with(options: RuleOptions, n: usize, seed: u64) -> Vec<Arc<[String]>> {
    (0..n as u64)
        .map(|i| {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(i));
            let mut game = Game::new(options);
            let mut moves = Vec::new();
            while !game.is_over() {
                let legal = game.legal_moves();
                if legal.is_empty() {
                    break;
                }
                let mv = legal[rng.random_range(0..legal.len())];
                match game.play(mv) {
                    Ok(played) => moves.push(played.notation.to_string()),
                    Err(_) => break,
                }
            }
            Arc::from(moves)
        })
        .collect()
}

/// The first errors of a phase, and their count.
#[derive(Debug, Default)]
struct Errors {
    count: AtomicU64,
    first: Mutex<Vec<String>>,
}

impl Errors {
    fn note(&self, what: impl FnOnce() -> String) {
        if self.count.fetch_add(1, Ordering::Relaxed) < ERRORS_SHOWN as u64
            && let Ok(mut first) = self.first.lock()
        {
            first.push(what());
        }
    }

    fn take(&self) -> (u64, Vec<String>) {
        let first = self.first.lock().map(|f| f.clone()).unwrap_or_default();
        (self.count.load(Ordering::Relaxed), first)
    }
}

/// When a phase measures.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn after_warmup(args: &LoadArgs) -> Window {
        let start = Instant::now() + Duration::from_secs_f64(args.warmup);
        Window {
            start,
            end: start + Duration::from_secs_f64(args.seconds),
        }
    }

    /// Whether a call from `started` to `done` counts.
    fn counts(&self, started: Instant, done: Instant) -> bool {
        started >= self.start && done <= self.end
    }

    fn seconds(&self) -> f64 {
        (self.end - self.start).as_secs_f64()
    }
}

/// What one task saw.
#[derive(Debug, Default)]
struct Tally {
    /// Latencies of the counted calls, in nanoseconds.
    latencies: Vec<u64>,
    games_started: u64,
    games_finished: u64,
}

/// The tallies of a phase merged.
struct Phase {
    calls: u64,
    histogram: Histogram<u64>,
    games_started: u64,
    games_finished: u64,
}

impl Phase {
    fn merge(tallies: Vec<Tally>) -> Phase {
        // 1 ns to an hour, 3 significant digits.
        let mut histogram =
            Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        let mut phase_started = 0;
        let mut phase_finished = 0;
        for t in tallies {
            for ns in t.latencies {
                histogram.saturating_record(ns.max(1));
            }
            phase_started += t.games_started;
            phase_finished += t.games_finished;
        }
        Phase {
            calls: histogram.len(),
            histogram,
            games_started: phase_started,
            games_finished: phase_finished,
        }
    }

    fn latency(&self) -> Latency {
        let us = |q: f64| self.histogram.value_at_quantile(q) as f64 / 1000.0;
        Latency {
            p50: us(0.5),
            p99: us(0.99),
            p999: us(0.999),
            max: self.histogram.max() as f64 / 1000.0,
        }
    }
}

async fn load(
    args: &LoadArgs,
    channels: &[Channel],
    address: &str,
    server_pid: Option<u32>,
) -> Result<(), String> {
    let pool: Arc<Vec<Arc<[String]>>> = Arc::new(random_games(args.pool, args.seed));
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
    };
    let table = args.json.as_deref() != Some(std::path::Path::new("-"));
    if table {
        println!(
            "load: {} ({} channels, {} s + {} s warm-up per phase, {} random games of {:.1} plies on average)\n\
             CPU per call: SubmitMove / health check (server: only with --spawn)",
            report.target,
            report.channels,
            args.seconds,
            args.warmup,
            pool.len(),
            average
        );
        println!(
            "{:>6} {:>10} {:>9} {:>9} {:>10} {:>6} {:>11} {:>9} {:>9} {:>6} {:>17} {:>17} {:>9}",
            "games",
            "moves/s",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "errors",
            "baseline/s",
            "b.p50 µs",
            "b.p99 µs",
            "ratio",
            "server µs/call",
            "client µs/call",
            "cpu ratio"
        );
    }
    for &games in &args.games {
        let run = one_run(args, channels, &pool, games, server_pid).await;
        if table {
            let pair = |m: Option<f64>, b: Option<f64>| match (m, b) {
                (Some(m), Some(b)) => format!("{m:.1} / {b:.1}"),
                _ => "-".to_string(),
            };
            println!(
                "{:>6} {:>10.0} {:>9.1} {:>9.1} {:>10.1} {:>6} {:>11.0} {:>9.1} {:>9.1} {:>6.3} {:>17} {:>17} {:>9}",
                run.games,
                run.moves_per_sec,
                run.submit_latency_us.p50,
                run.submit_latency_us.p99,
                run.submit_latency_us.p999,
                run.errors + run.baseline_errors,
                run.baseline_per_sec,
                run.baseline_latency_us.p50,
                run.baseline_latency_us.p99,
                run.ratio,
                pair(
                    run.server_cpu_us_per_move,
                    run.server_cpu_us_per_baseline_call
                ),
                pair(
                    run.client_cpu_us_per_move,
                    run.client_cpu_us_per_baseline_call
                ),
                run.cpu_ratio.map_or("-".to_string(), |r| format!("{r:.3}")),
            );
            for e in run.baseline_first_errors.iter().chain(&run.first_errors) {
                println!("       error: {e}");
            }
        }
        report.runs.push(run);
    }
    write_json(args, &report)?;
    let errors: u64 = report
        .runs
        .iter()
        .map(|r| r.errors + r.baseline_errors)
        .sum();
    if errors > 0 {
        return Err(format!("{errors} calls failed"));
    }
    Ok(())
}

fn write_json(args: &LoadArgs, report: &impl Serialize) -> Result<(), String> {
    let Some(path) = &args.json else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    if path.as_os_str() == "-" {
        println!("{text}");
        Ok(())
    } else {
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// One concurrency: the baseline phase, then the moves phase.
async fn one_run(
    args: &LoadArgs,
    channels: &[Channel],
    pool: &Arc<Vec<Arc<[String]>>>,
    games: usize,
    server_pid: Option<u32>,
) -> RunReport {
    let baseline_errors = Arc::new(Errors::default());
    let window = Window::after_warmup(args);
    let baseline_cpu = tokio::spawn(cpu_in(window, server_pid));
    let tasks: Vec<_> = (0..games)
        .map(|i| {
            let client = HealthClient::new(channels[i % channels.len()].clone());
            tokio::spawn(check_health(client, window, baseline_errors.clone()))
        })
        .collect();
    let baseline = Phase::merge(join(tasks).await);
    let baseline_cpu = baseline_cpu.await.unwrap_or_default();

    let errors = Arc::new(Errors::default());
    let window = Window::after_warmup(args);
    let moves_cpu = tokio::spawn(cpu_in(window, server_pid));
    let tasks: Vec<_> = (0..games)
        .map(|i| {
            let client = RefereeServiceClient::new(channels[i % channels.len()].clone());
            tokio::spawn(play_games(
                client,
                pool.clone(),
                i,
                games,
                window,
                errors.clone(),
            ))
        })
        .collect();
    let moves = Phase::merge(join(tasks).await);
    let moves_cpu = moves_cpu.await.unwrap_or_default();

    let seconds = window.seconds();
    let (error_count, first_errors) = errors.take();
    let (baseline_error_count, baseline_first_errors) = baseline_errors.take();
    let moves_per_sec = moves.calls as f64 / seconds;
    let baseline_per_sec = baseline.calls as f64 / seconds;
    RunReport {
        games,
        moves: moves.calls,
        moves_per_sec,
        submit_latency_us: moves.latency(),
        errors: error_count,
        first_errors,
        games_started: moves.games_started,
        games_finished: moves.games_finished,
        baseline_calls: baseline.calls,
        baseline_per_sec,
        baseline_latency_us: baseline.latency(),
        baseline_errors: baseline_error_count,
        baseline_first_errors,
        ratio: if baseline_per_sec > 0.0 {
            moves_per_sec / baseline_per_sec
        } else {
            0.0
        },
        server_cpu_us_per_move: per_call(moves_cpu.0, moves.calls),
        server_cpu_us_per_baseline_call: per_call(baseline_cpu.0, baseline.calls),
        client_cpu_us_per_move: per_call(moves_cpu.1, moves.calls),
        client_cpu_us_per_baseline_call: per_call(baseline_cpu.1, baseline.calls),
        cpu_ratio: cpu_ratio(baseline_cpu, baseline.calls, moves_cpu, moves.calls),
    }
}

fn cpu_ratio(
    baseline: (Option<u64>, Option<u64>),
    baseline_calls: u64,
    moves: (Option<u64>, Option<u64>),
    moves_calls: u64,
) -> Option<f64> {
    let per_baseline = per_call(Some(baseline.0? + baseline.1?), baseline_calls)?;
    let per_move = per_call(Some(moves.0? + moves.1?), moves_calls)?;
    (per_move > 0.0).then(|| per_baseline / per_move)
}

async fn join(tasks: Vec<tokio::task::JoinHandle<Tally>>) -> Vec<Tally> {
    let mut tallies = Vec::with_capacity(tasks.len());
    for t in tasks {
        // A task cannot panic on the server's answers; if it did, its tally
        // is lost and the run shows fewer calls.
        if let Ok(tally) = t.await {
            tallies.push(tally);
        }
    }
    tallies
}

/// Baseline: health checks until the window ends.
async fn check_health(
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

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Moves: games from the pool, one after another, until the window ends.
/// Task `task` of `tasks` plays pool games `task`, `task + tasks`, ….
async fn play_games(
    mut client: RefereeServiceClient<Channel>,
    pool: Arc<Vec<Arc<[String]>>>,
    task: usize,
    tasks: usize,
    window: Window,
    errors: Arc<Errors>,
) -> Tally {
    let mut tally = Tally::default();
    let mut next = task;
    'games: while Instant::now() < window.end {
        let moves = pool[next % pool.len()].clone();
        next = next.wrapping_add(tasks);
        let created = match client.create_game(pb::CreateGameRequest::default()).await {
            Ok(r) => r.into_inner(),
            Err(s) => {
                // The server refuses games (a limit, or it is gone): stop
                // this task rather than hammer it.
                errors.note(|| format!("CreateGame: {:?}: {}", s.code(), s.message()));
                return tally;
            }
        };
        let Some((id, tokens)) = seats(&created) else {
            errors.note(|| "CreateGame: no game id or seat tokens in the answer".into());
            return tally;
        };
        tally.games_started += 1;
        for (ply, notation) in moves.iter().enumerate() {
            let started = Instant::now();
            if started >= window.end {
                break 'games;
            }
            let request = pb::SubmitMoveRequest {
                game_id: id.clone(),
                token: tokens[ply % 2].clone(),
                r#move: Some(pb::Move {
                    game: Some(pb::r#move::Game::Punct(ppb::Move {
                        notation: notation.clone(),
                        ..Default::default()
                    })),
                }),
                expected_ply: ply as u32,
                request_id: String::new(),
            };
            let answer = client.submit_move(request).await;
            let done = Instant::now();
            match answer {
                Ok(r) => {
                    let r = r.into_inner();
                    let last = ply + 1 == moves.len();
                    let finished = r.status == pb::GameStatus::Finished as i32;
                    if r.ply != ply as u32 + 1 || finished != last {
                        errors.note(|| {
                            format!(
                                "SubmitMove `{notation}` at ply {ply} of game {id}: answer at ply {} says finished={finished}, expected {last}",
                                r.ply
                            )
                        });
                        continue 'games;
                    }
                    if window.counts(started, done) {
                        tally.latencies.push(nanos(done - started));
                    }
                }
                Err(s) => {
                    errors.note(|| {
                        format!(
                            "SubmitMove `{notation}` at ply {ply}: {:?}: {}",
                            s.code(),
                            s.message()
                        )
                    });
                    continue 'games;
                }
            }
        }
        tally.games_finished += 1;
    }
    tally
}

/// The game id and the seat tokens (white first) of a created game.
fn seats(created: &pb::CreateGameResponse) -> Option<(String, [String; 2])> {
    let id = created.game.as_ref()?.game_id.clone();
    let token = |seat: u32| {
        created
            .seats
            .iter()
            .find(|s| s.seat == seat)
            .map(|s| s.token.clone())
    };
    Some((id, [token(1)?, token(2)?]))
}

/// `--idle-sessions`: memory per game that never moves.
async fn idle_sessions(
    args: &LoadArgs,
    channels: &[Channel],
    server: &SpawnedServer,
    n: usize,
) -> Result<(), String> {
    // Warm the server up first (allocator, runtime, connections), so the
    // difference is the games.
    create_games(channels, 1000.min(n)).await?;
    settle().await;
    let before = server.rss_kib()?;
    create_games(channels, n).await?;
    settle().await;
    let after = server.rss_kib()?;
    let report = IdleReport {
        sessions: n,
        rss_before_kib: before,
        rss_after_kib: after,
        bytes_per_session: after.saturating_sub(before) as f64 * 1024.0 / n.max(1) as f64,
        server_args: args.server_args.clone(),
    };
    if args.json.as_deref() != Some(std::path::Path::new("-")) {
        println!(
            "idle sessions: {n} games created; server VmRSS {} KiB -> {} KiB: {:.0} bytes per game",
            report.rss_before_kib, report.rss_after_kib, report.bytes_per_session
        );
    }
    write_json(args, &report)
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// Creates `n` games over the channels, 64 calls at a time.
async fn create_games(channels: &[Channel], n: usize) -> Result<(), String> {
    const WORKERS: usize = 64;
    let tasks: Vec<_> = (0..WORKERS)
        .map(|w| {
            let mut client = RefereeServiceClient::new(channels[w % channels.len()].clone());
            let count = n / WORKERS + usize::from(w < n % WORKERS);
            tokio::spawn(async move {
                for _ in 0..count {
                    client
                        .create_game(pb::CreateGameRequest::default())
                        .await
                        .map_err(|s| format!("CreateGame: {:?}: {}", s.code(), s.message()))?;
                }
                Ok::<_, String>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}
