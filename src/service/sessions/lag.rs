//! Lag: each seat's measured network round trip, and the compensation a
//! time control may credit against it (docs/LAG.md).
//!
//! The clock charges a seat the time from the start of its turn on the
//! server to its move's arrival there, so it charges the network too: the
//! event's way out and the move's way back, one round trip. A `Play`
//! stream measures that round trip (a ping the client answers at once) and
//! gives each sample to the game ([`SeatLag::sample`]); the estimate is the
//! median of the last [`SAMPLES`] samples, so one slow answer moves it
//! little and memory stays bounded.
//!
//! With [`LagCompensation`] in the time control, each move is credited
//! `min(estimate, max_per_move, quota left)` of its time (never more than
//! the time it took), and the turn's deadline is later by what it may be
//! credited. All of it lives behind one box a session allocates only when
//! compensation is on or a sample arrives ([`Lag`]).

use std::time::Duration;

use super::SessionError;

/// How many recent samples an estimate is the median of.
pub(super) const SAMPLES: usize = 8;
/// The largest per-move cap a time control may name: 10 s.
pub const MAX_PER_MOVE_CAP: Duration = Duration::from_secs(10);
/// The largest sample kept (a longer round trip counts as this).
pub(super) const MAX_SAMPLE: Duration = Duration::from_secs(60);

/// Lag compensation, an option of a time control: each move is credited
/// up to `max_per_move_ms` of its time, and a seat at most `quota_ms` in
/// all over the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagCompensation {
    /// The most one move is credited, milliseconds.
    pub max_per_move_ms: u32,
    /// The most a seat is credited over the game, milliseconds.
    pub quota_ms: u32,
}

impl LagCompensation {
    /// Checks the bounds: a cap of 1..=10 000 ms, a quota of
    /// 1..=86 400 000 ms; `has_clock`: compensation needs a clock.
    pub fn check(&self, has_clock: bool) -> Result<(), SessionError> {
        let invalid = |field: &'static str, description: String| SessionError::InvalidArgument {
            field,
            description,
        };
        if !has_clock {
            return Err(invalid(
                "time_control.lag_compensation",
                "needs a clock (fischer or per_move): an untimed game charges no time".into(),
            ));
        }
        let cap = u128::from(self.max_per_move_ms);
        if cap == 0 || cap > MAX_PER_MOVE_CAP.as_millis() {
            return Err(invalid(
                "time_control.lag_compensation.max_per_move_ms",
                format!("must be 1..={} milliseconds", MAX_PER_MOVE_CAP.as_millis()),
            ));
        }
        let quota = u128::from(self.quota_ms);
        if quota == 0 || quota > super::MAX_CLOCK_TIME.as_millis() {
            return Err(invalid(
                "time_control.lag_compensation.quota_ms",
                format!(
                    "must be 1..={} milliseconds",
                    super::MAX_CLOCK_TIME.as_millis()
                ),
            ));
        }
        Ok(())
    }

    /// The per-move cap.
    pub fn cap(&self) -> Duration {
        Duration::from_millis(u64::from(self.max_per_move_ms))
    }

    /// The quota per seat.
    pub fn quota(&self) -> Duration {
        Duration::from_millis(u64::from(self.quota_ms))
    }
}

/// One seat's recent round trips, in microseconds: a ring of the last
/// [`SAMPLES`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SeatLag {
    samples: [u32; SAMPLES],
    len: u8,
    next: u8,
    /// What the seat has been credited so far.
    credited: Duration,
}

impl SeatLag {
    /// Adds a measured round trip (at most [`MAX_SAMPLE`]).
    pub(super) fn sample(&mut self, rtt: Duration) {
        let us = u32::try_from(rtt.min(MAX_SAMPLE).as_micros()).unwrap_or(u32::MAX);
        self.samples[usize::from(self.next)] = us;
        self.next = (self.next + 1) % SAMPLES as u8;
        self.len = (self.len + 1).min(SAMPLES as u8);
    }

    /// The estimate: the median of the samples kept (the lower middle of
    /// an even count, so a single slow answer among two never counts);
    /// `None` before the first.
    pub(super) fn estimate(&self) -> Option<Duration> {
        if self.len == 0 {
            return None;
        }
        let mut kept = self.samples;
        let kept = &mut kept[..usize::from(self.len)];
        kept.sort_unstable();
        let middle = kept[(kept.len() - 1) / 2];
        Some(Duration::from_micros(u64::from(middle)))
    }

    /// What the seat has been credited so far.
    #[cfg(test)]
    pub(super) fn credited(&self) -> Duration {
        self.credited
    }
}

/// What one move was credited: decided when it arrives, kept with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Credit {
    /// Time taken off the move's time (milliseconds).
    pub compensated_ms: u32,
    /// The round-trip estimate of its seat then (milliseconds), if any.
    pub lag_ms: Option<u32>,
}

/// One move's line of a game's latency ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LedgerEntry {
    /// The time the move took, from its turn's start to its arrival, less
    /// what was compensated: what its seat's clock was charged (in a
    /// seat's first move under a first-move deadline, the deadline's time
    /// used), milliseconds.
    pub charged_ms: u64,
    /// The compensation credited, milliseconds.
    pub compensated_ms: u64,
    /// The seat's round-trip estimate when the move arrived, milliseconds.
    pub lag_ms: Option<u64>,
}

/// A game's lag state, boxed in its clock: the compensation, each seat's
/// estimate and credit, and the estimate each move was credited against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Lag {
    /// The time control's compensation, if on.
    pub(super) compensation: Option<LagCompensation>,
    /// Each seat's lag, in seat order.
    pub(super) seats: Vec<SeatLag>,
    /// The estimate used by each move that had one: (move index, ms).
    pub(super) used: Vec<(u32, u32)>,
}

impl Lag {
    /// The lag state of a game with `seats` seats.
    pub(super) fn new(compensation: Option<LagCompensation>, seats: usize) -> Lag {
        Lag {
            compensation,
            seats: vec![SeatLag::default(); seats],
            used: Vec::new(),
        }
    }

    /// What `seat` may be credited for its move now: `min(estimate, cap,
    /// quota left)`, zero without compensation or an estimate.
    pub(super) fn available(&self, seat: usize) -> Duration {
        let (Some(comp), Some(lag)) = (self.compensation, self.seats.get(seat)) else {
            return Duration::ZERO;
        };
        let Some(estimate) = lag.estimate() else {
            return Duration::ZERO;
        };
        estimate
            .min(comp.cap())
            .min(comp.quota().saturating_sub(lag.credited))
    }

    /// The credit of a move of `seat` that took `elapsed_ms` (whole
    /// milliseconds, as stored): at most the time it took.
    pub(super) fn credit(&self, seat: usize, elapsed_ms: u64) -> Credit {
        let available = ms_u32(self.available(seat));
        Credit {
            compensated_ms: u32::try_from(elapsed_ms).unwrap_or(u32::MAX).min(available),
            lag_ms: self.seats.get(seat).and_then(SeatLag::estimate).map(ms_u32),
        }
    }

    /// Records the credit of the move at `index` by `seat`.
    pub(super) fn record(&mut self, index: usize, seat: usize, credit: Credit) {
        if let Some(lag) = self.seats.get_mut(seat) {
            lag.credited += Duration::from_millis(u64::from(credit.compensated_ms));
        }
        if let Some(ms) = credit.lag_ms {
            self.used
                .push((u32::try_from(index).unwrap_or(u32::MAX), ms));
        }
    }

    /// The estimate the move at `index` was credited against.
    pub(super) fn used_at(&self, index: usize) -> Option<u32> {
        let index = u32::try_from(index).ok()?;
        self.used
            .binary_search_by_key(&index, |(i, _)| *i)
            .ok()
            .map(|at| self.used[at].1)
    }
}

/// Whole milliseconds of `d` as a `u32` (saturating).
pub(super) fn ms_u32(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn comp(cap: u32, quota: u32) -> Option<LagCompensation> {
        Some(LagCompensation {
            max_per_move_ms: cap,
            quota_ms: quota,
        })
    }

    #[test]
    fn the_estimate_is_the_median_of_the_last_samples() {
        let mut lag = SeatLag::default();
        assert_eq!(lag.estimate(), None);
        lag.sample(MS * 200);
        assert_eq!(lag.estimate(), Some(MS * 200));
        // One slow answer among two does not count (the lower middle).
        lag.sample(MS * 5000);
        assert_eq!(lag.estimate(), Some(MS * 200));
        lag.sample(MS * 210);
        assert_eq!(lag.estimate(), Some(MS * 210));
        // Only the last SAMPLES count: eight fast answers push the others
        // out.
        for _ in 0..SAMPLES {
            lag.sample(MS * 20);
        }
        assert_eq!(lag.estimate(), Some(MS * 20));
        // A sample is capped.
        for _ in 0..SAMPLES {
            lag.sample(Duration::from_secs(3600));
        }
        assert_eq!(lag.estimate(), Some(MAX_SAMPLE));
    }

    #[test]
    fn a_move_is_credited_the_least_of_estimate_cap_quota_and_its_time() {
        let mut lag = Lag::new(comp(150, 400), 2);
        // No estimate yet: nothing.
        assert_eq!(lag.credit(0, 1000).compensated_ms, 0);
        lag.seats[0].sample(MS * 200);
        // The cap.
        let c = lag.credit(0, 1000);
        assert_eq!((c.compensated_ms, c.lag_ms), (150, Some(200)));
        lag.record(0, 0, c);
        lag.record(2, 0, lag.credit(0, 1000));
        assert_eq!(lag.seats[0].credited(), MS * 300);
        // The quota left (100 ms), then nothing.
        let c = lag.credit(0, 1000);
        assert_eq!(c.compensated_ms, 100);
        lag.record(4, 0, c);
        assert_eq!(lag.credit(0, 1000).compensated_ms, 0);
        assert_eq!(lag.available(0), Duration::ZERO);
        // Never more than the move took.
        lag.seats[1].sample(MS * 100);
        assert_eq!(lag.credit(1, 30).compensated_ms, 30);
        // The estimate under the cap.
        assert_eq!(lag.credit(1, 1000).compensated_ms, 100);
        assert_eq!(lag.used_at(2), Some(200));
        assert_eq!(lag.used_at(1), None);
    }

    #[test]
    fn without_compensation_nothing_is_credited_but_the_estimate_is_kept() {
        let mut lag = Lag::new(None, 2);
        lag.seats[1].sample(MS * 80);
        let c = lag.credit(1, 1000);
        assert_eq!((c.compensated_ms, c.lag_ms), (0, Some(80)));
    }

    #[test]
    fn bounds_are_checked_with_the_field_named() {
        let field = |c: LagCompensation, clock: bool| match c.check(clock) {
            Err(SessionError::InvalidArgument { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let ok = LagCompensation {
            max_per_move_ms: 100,
            quota_ms: 2000,
        };
        assert!(ok.check(true).is_ok());
        assert_eq!(field(ok, false), "time_control.lag_compensation");
        let c = |max_per_move_ms, quota_ms| LagCompensation {
            max_per_move_ms,
            quota_ms,
        };
        assert_eq!(
            field(c(0, 10), true),
            "time_control.lag_compensation.max_per_move_ms"
        );
        assert_eq!(
            field(c(10_001, 10), true),
            "time_control.lag_compensation.max_per_move_ms"
        );
        assert_eq!(
            field(c(10, 0), true),
            "time_control.lag_compensation.quota_ms"
        );
        assert_eq!(
            field(c(10, 86_400_001), true),
            "time_control.lag_compensation.quota_ms"
        );
    }
}
