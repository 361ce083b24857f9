//! Measuring a phase: its window (after the warm-up), what each task saw
//! (latencies, games), the errors (counted, the first few kept), and the
//! tallies merged into a histogram.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::LoadArgs;
use super::report::Latency;

/// How many error messages a phase keeps to print.
const ERRORS_SHOWN: usize = 5;

/// The first errors of a phase, and their count.
#[derive(Debug, Default)]
pub(super) struct Errors {
    count: AtomicU64,
    first: Mutex<Vec<String>>,
}

impl Errors {
    /// Counts an error, keeping its text if among the first few.
    pub(super) fn note(&self, what: impl FnOnce() -> String) {
        if self.count.fetch_add(1, Ordering::Relaxed) < ERRORS_SHOWN as u64
            && let Ok(mut first) = self.first.lock()
        {
            first.push(what());
        }
    }

    /// The count and the first texts.
    pub(super) fn take(&self) -> (u64, Vec<String>) {
        let first = self.first.lock().map(|f| f.clone()).unwrap_or_default();
        (self.count.load(Ordering::Relaxed), first)
    }
}

/// When a phase measures.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    /// When counting starts (after the warm-up).
    pub start: Instant,
    /// When the phase ends.
    pub end: Instant,
}

impl Window {
    /// The window after the warm-up of `args`, lasting its seconds.
    pub(super) fn after_warmup(args: &LoadArgs) -> Window {
        let start = Instant::now() + Duration::from_secs_f64(args.warmup);
        Window {
            start,
            end: start + Duration::from_secs_f64(args.seconds),
        }
    }

    /// Whether a call from `started` to `done` counts.
    pub(super) fn counts(&self, started: Instant, done: Instant) -> bool {
        started >= self.start && done <= self.end
    }

    /// Its length in seconds.
    pub(super) fn seconds(&self) -> f64 {
        (self.end - self.start).as_secs_f64()
    }
}

/// What one task saw.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Latencies of the counted calls, in nanoseconds.
    pub latencies: Vec<u64>,
    /// Games created.
    pub games_started: u64,
    /// Games played to their end.
    pub games_finished: u64,
}

/// The tallies of a phase merged.
pub(super) struct Phase {
    /// Calls counted.
    pub calls: u64,
    histogram: Histogram<u64>,
    /// Games created.
    pub games_started: u64,
    /// Games played to their end.
    pub games_finished: u64,
}

impl Phase {
    /// Merges the tasks' tallies.
    pub(super) fn merge(tallies: Vec<Tally>) -> Phase {
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

    /// The latency percentiles, in microseconds.
    pub(super) fn latency(&self) -> Latency {
        let us = |q: f64| self.histogram.value_at_quantile(q) as f64 / 1000.0;
        Latency {
            p50: us(0.5),
            p99: us(0.99),
            p999: us(0.999),
            max: self.histogram.max() as f64 / 1000.0,
        }
    }
}

/// Gathers the tasks' tallies.
pub(super) async fn join(tasks: Vec<tokio::task::JoinHandle<Tally>>) -> Vec<Tally> {
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

/// A duration in nanoseconds (saturating).
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
