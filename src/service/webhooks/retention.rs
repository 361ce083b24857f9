//! The retention of delivered webhook deliveries (`--webhook-retention`,
//! docs/WEBHOOKS.md "Retention"): every replica's worker deletes, now and
//! then and in small batches, the delivered rows of events older than the
//! retention. Pending rows are never pruned, nor failed ones: a failed
//! delivery is an event its endpoint never acknowledged, kept until it is
//! replayed (and delivered, then pruned in its turn) or its endpoint is
//! deleted.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::storage::{Storage, unix_ms};

/// How often the pruning runs.
const EVERY: Duration = Duration::from_secs(60);
/// Rows deleted per statement (and so per transaction, or per writer job
/// on SQLite, between two batches of game writes).
pub const BATCH: usize = 500;
/// The pause between two batches of one run, so pruning a large backlog
/// never holds the store for long.
const PAUSE: Duration = Duration::from_millis(20);

/// A retention as the flag gives it: `None` keeps every delivered row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention(pub Option<Duration>);

/// [`parse`] for the flag.
pub fn flag(text: &str) -> Result<Retention, String> {
    parse(text).map(Retention)
}

/// Parses a retention: a number with a unit `s`, `m`, `h` or `d` (`7d`,
/// `36h`); `0` or `off` keeps every delivered row (`None`).
pub fn parse(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    if text == "0" || text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let bad = || format!("`{text}` is not a retention: a number and s, m, h or d (`7d`), or off");
    let split = text.len().checked_sub(1).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    match n.checked_mul(seconds) {
        Some(0) => Ok(None),
        Some(s) => Ok(Some(Duration::from_secs(s))),
        None => Err(bad()),
    }
}

/// Deletes every delivered row older than `retention`, [`BATCH`] at a
/// time; how many. Stops early at `stop`.
pub async fn prune_once(
    storage: &Arc<dyn Storage>,
    retention: Duration,
    stop: &CancellationToken,
) -> u64 {
    let before = unix_ms(std::time::SystemTime::now())
        .saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
    let mut total = 0;
    loop {
        let s = storage.clone();
        let pruned = tokio::task::spawn_blocking(move || {
            s.webhooks().map(|w| w.prune_delivered(before, BATCH))
        })
        .await;
        let n = match pruned {
            Ok(Some(Ok(n))) => n,
            Ok(Some(Err(e))) => {
                tracing::warn!(error = %e, "delivered webhook deliveries not pruned");
                return total;
            }
            _ => return total,
        };
        total += n;
        if n < BATCH as u64 || stop.is_cancelled() {
            return total;
        }
        tokio::time::sleep(PAUSE).await;
    }
}

/// Prunes every [`EVERY`] until `stop` (nothing with no retention).
pub async fn run(storage: Arc<dyn Storage>, retention: Option<Duration>, stop: CancellationToken) {
    let Some(retention) = retention else {
        return;
    };
    loop {
        let pruned = prune_once(&storage, retention, &stop).await;
        if pruned > 0 {
            tracing::debug!(pruned, "delivered webhook deliveries pruned");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_is_a_number_and_a_unit_or_off() {
        let d = |s| Some(Duration::from_secs(s));
        assert_eq!(parse("7d"), Ok(d(7 * 86_400)));
        assert_eq!(parse("36h"), Ok(d(36 * 3600)));
        assert_eq!(parse("90m"), Ok(d(5400)));
        assert_eq!(parse("45s"), Ok(d(45)));
        assert_eq!(parse("0"), Ok(None));
        assert_eq!(parse("0d"), Ok(None));
        assert_eq!(parse("off"), Ok(None));
        for bad in ["", "d", "7", "7w", "-1d", "1.5d", "99999999999999999999d"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
