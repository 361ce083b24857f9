//! What Linux's `/proc` says about a process: its resident memory and the
//! CPU time it has spent, sampled over a measurement window.

use super::tally::Window;

/// Microseconds of one clock tick of [`cpu_ticks`].
const TICK_US: f64 = 10_000.0;

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

/// The parent of process `pid`, from `/proc/<pid>/stat`.
fn parent(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU ticks of processes `pids` and of their children so far (`None`:
/// none given, or one of them is gone). A child that ended within a window
/// takes its ticks with it: the backends of a database's pool live as long
/// as the pool.
fn server_ticks(pids: &[u32]) -> Option<u64> {
    if pids.is_empty() {
        return None;
    }
    let mut total = 0;
    for &pid in pids {
        total += cpu_ticks(pid)?;
    }
    let children = std::fs::read_dir("/proc").ok()?.filter_map(|e| {
        let child: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        pids.contains(&parent(child)?).then_some(child)
    });
    Some(total + children.filter_map(cpu_ticks).sum::<u64>())
}

/// CPU ticks of the server and of this process spent within a window.
pub(super) type CpuTicks = (Option<u64>, Option<u64>);

/// CPU ticks of the server (the processes `server` and their children:
/// the spawned server, or those of `--cpu-of`) and of this process spent
/// within `window`: sampled when it starts and when it ends.
pub(super) async fn cpu_in(window: Window, server: Vec<u32>) -> CpuTicks {
    let me = std::process::id();
    tokio::time::sleep_until(window.start.into()).await;
    let start = (server_ticks(&server), cpu_ticks(me));
    tokio::time::sleep_until(window.end.into()).await;
    let end = (server_ticks(&server), cpu_ticks(me));
    let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
    (delta(start.0, end.0), delta(start.1, end.1))
}

/// CPU microseconds per call of `ticks` over `calls` calls.
pub(super) fn per_call(ticks: Option<u64>, calls: u64) -> Option<f64> {
    let ticks = ticks?;
    (calls > 0).then(|| ticks as f64 * TICK_US / calls as f64)
}

/// (server + client CPU per baseline call) / (server + client CPU per
/// move): the throughput ratio with the other work on the machine taken
/// out.
pub(super) fn cpu_ratio(
    baseline: CpuTicks,
    baseline_calls: u64,
    moves: CpuTicks,
    moves_calls: u64,
) -> Option<f64> {
    let per_baseline = per_call(Some(baseline.0? + baseline.1?), baseline_calls)?;
    let per_move = per_call(Some(moves.0? + moves.1?), moves_calls)?;
    (per_move > 0.0).then(|| per_baseline / per_move)
}
