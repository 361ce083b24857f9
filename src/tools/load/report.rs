//! The figures of a load run and how they are shown: the report types
//! (also written as JSON with `--json`), and the table printed run by run.

use std::path::Path;

use serde::Serialize;

use super::LoadArgs;

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
    /// The play phase of `--play`, of the same round as the figures above.
    pub play: Option<PlayReport>,
    /// The read phases of `--reads`, in the order they ran.
    pub reads: Vec<super::reads::ReadReport>,
    /// Every round's ratios (`--rounds`), in the order they ran; the figures
    /// above are those of the median round, the errors those of all.
    pub rounds: Vec<Round>,
    /// `--compare-webhooks`: the moves phases with and without an endpoint
    /// (the figures above are of the median pair's phase without).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhooks: Option<super::webhooks::WebhookComparison>,
}

/// The play phase of one round (`--play`): moves over `Play` streams.
#[derive(Debug, Clone, Serialize)]
pub struct PlayReport {
    /// Moves answered on their stream within the measurement.
    pub moves: u64,
    /// Moves per second.
    pub moves_per_sec: f64,
    /// Latency from a move's sending to its answer, in microseconds.
    pub latency_us: Latency,
    /// Refused or wrong answers, and streams that failed (warm-up included).
    pub errors: u64,
    /// The first few of them.
    pub first_errors: Vec<String>,
    /// `moves_per_sec / baseline_per_sec` of the same round.
    pub ratio: f64,
    /// CPU time of the spawned server per move (CreateGame and the
    /// streams' starts included), in microseconds.
    pub server_cpu_us_per_move: Option<f64>,
    /// CPU time of this client per move, in microseconds.
    pub client_cpu_us_per_move: Option<f64>,
    /// The server's CPU per move over Play / per no-op call (health
    /// check), of the same round.
    pub server_cpu_vs_noop: Option<f64>,
    /// The server's CPU per SubmitMove / per no-op call, of the same round.
    pub unary_server_cpu_vs_noop: Option<f64>,
}

/// The ratios of one round of a comparison (`--rounds`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Round {
    /// Calls per second against the round's own baseline.
    pub ratio: f64,
    /// The CPU ratio of the round (only with --spawn).
    pub cpu_ratio: Option<f64>,
}

/// Of one report per round, the round with the median ratio (the lower
/// middle of an even count), and every round's ratios in order.
pub(super) fn take_median<T>(reports: Vec<T>, round: impl Fn(&T) -> Round) -> (T, Vec<Round>) {
    let rounds: Vec<Round> = reports.iter().map(round).collect();
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| rounds[a].ratio.total_cmp(&rounds[b].ratio));
    let median = order[rounds.len().saturating_sub(1) / 2];
    let chosen = reports.into_iter().nth(median).expect("one round at least");
    (chosen, rounds)
}

/// `rounds` as `0.712 0.744 …` (ratios) and the same of the CPU ratios.
fn rounds_text(rounds: &[Round]) -> String {
    let ratios: Vec<String> = rounds.iter().map(|r| format!("{:.3}", r.ratio)).collect();
    let cpu: Vec<String> = rounds
        .iter()
        .map(|r| r.cpu_ratio.map_or("-".to_string(), |c| format!("{c:.3}")))
        .collect();
    format!(
        "{} rounds, median shown: ratios {}; cpu ratios {}",
        rounds.len(),
        ratios.join(" "),
        cpu.join(" ")
    )
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
    /// `--webhooks`: what the tool's receiver got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhooks: Option<super::webhooks::WebhookTally>,
}

/// The report of `--idle-sessions`.
#[derive(Debug, Clone, Serialize)]
pub struct IdleReport {
    /// The game created (`--game`), as the server names it.
    pub game: String,
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

/// Whether the table is printed: not when the JSON goes to standard output.
pub(super) fn prints_table(args: &LoadArgs) -> bool {
    args.json.as_deref() != Some(Path::new("-"))
}

/// The lines above the table: the target, the settings, the columns.
pub(super) fn print_header(report: &LoadReport) {
    println!(
        "load: {} ({} channels, {} s + {} s warm-up per phase, {} random games of {:.1} plies on average)\n\
         CPU per call: SubmitMove / health check (server: only with --spawn)",
        report.target,
        report.channels,
        report.seconds,
        report.warmup,
        report.pool,
        report.pool_average_plies
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

/// One run's line of the table, then its first errors.
pub(super) fn print_row(run: &RunReport) {
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
    if run.rounds.len() > 1 {
        println!("{:>6}   {}", "", rounds_text(&run.rounds));
    }
    if let Some(c) = &run.webhooks {
        super::webhooks::print_comparison(c);
    }
    for e in run.baseline_first_errors.iter().chain(&run.first_errors) {
        println!("       error: {e}");
    }
    if let Some(p) = &run.play {
        let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let x = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        println!(
            "{:>6}   play (Play streams): {:>9.0} moves/s  p50 {:>8.1} µs  p99 {:>8.1} µs  ratio {:>6.3}  server µs/move {} (SubmitMove {}, no-op {})  server cpu vs no-op: Play {} SubmitMove {}  client µs/move {}  errors {}",
            "",
            p.moves_per_sec,
            p.latency_us.p50,
            p.latency_us.p99,
            p.ratio,
            us(p.server_cpu_us_per_move),
            us(run.server_cpu_us_per_move),
            us(run.server_cpu_us_per_baseline_call),
            x(p.server_cpu_vs_noop),
            x(p.unary_server_cpu_vs_noop),
            us(p.client_cpu_us_per_move),
            p.errors,
        );
        for e in &p.first_errors {
            println!("       error: {e}");
        }
    }
    for r in &run.reads {
        println!(
            "{:>6}   read {:<27} ply {:>3}: {:>9.0}/s  p50 {:>8.1} µs  p99 {:>8.1} µs  {:>7} B  ratio {:>6.3}  cpu ratio {:>6}  errors {}",
            "",
            r.read,
            r.ply,
            r.per_sec,
            r.latency_us.p50,
            r.latency_us.p99,
            r.answer_bytes,
            r.ratio,
            r.cpu_ratio.map_or("-".to_string(), |c| format!("{c:.3}")),
            r.errors,
        );
        if r.rounds.len() > 1 {
            println!("{:>6}        {}", "", rounds_text(&r.rounds));
        }
        for e in &r.first_errors {
            println!("       error: {e}");
        }
    }
}

/// Writes `report` as JSON where `--json` says, if it does.
pub(super) fn write_json(args: &LoadArgs, report: &impl Serialize) -> Result<(), String> {
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
