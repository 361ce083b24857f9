//! Game clocks: the time control chosen at creation, the time each seat has
//! left, and the deadline of the turn in progress.
//!
//! A [`Clock`] is plain data driven by the session under its mutex: it never
//! sleeps and never reads the time itself; every call gets `now`. The session
//! passes `tokio::time::Instant::now()`, so tests run it on tokio's paused
//! clock. Time is charged to the seat to move from the moment the previous
//! move was accepted (or the game was created, for the first move) to the
//! moment its own move is accepted: network latency is the client's risk.
//!
//! A flag falls when the time used reaches the time left (`elapsed >=
//! remaining`, the deadline instant included). A seat's first move may have
//! its own deadline instead ([`TimeControl::first_move`]): while it runs the
//! seat's clock does not, and missing it aborts the game (nobody loses).
//!
//! The clock is reconstructible from its time control and the moves'
//! acceptance times ([`Clock::stamps`], [`Clock::restore`]); see
//! docs/CLOCKS.md for what a restart does with the time in between.

use std::time::Duration;

use tokio::time::Instant;

use super::SessionError;
use super::lag::{Credit, Lag, LagCompensation, LedgerEntry};
use crate::games::Seat;

/// The longest time a time control may name (initial time, time per move,
/// first-move deadline): one day.
pub const MAX_CLOCK_TIME: Duration = Duration::from_secs(24 * 3600);
/// The largest Fischer increment: one hour.
pub const MAX_INCREMENT: Duration = Duration::from_secs(3600);

/// How the seats' time is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockMode {
    /// No clock (the default): seats take as long as they like.
    #[default]
    Untimed,
    /// Fischer: `initial` time per seat, `increment` added after each of its
    /// moves.
    Fischer {
        /// Each seat's time at the start.
        initial: Duration,
        /// Time added to a seat's clock after each move it makes.
        increment: Duration,
    },
    /// A fixed time for every move; unused time is not carried over.
    PerMove {
        /// The time for each move.
        per_move: Duration,
    },
}

/// A game's time control, chosen at creation and never changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeControl {
    /// The clock.
    pub mode: ClockMode,
    /// The deadline of each seat's first move, if any: while it runs, the
    /// seat's clock does not; a seat missing it aborts the game.
    pub first_move: Option<Duration>,
    /// Lag compensation, if on (docs/LAG.md); needs a clock.
    pub lag: Option<LagCompensation>,
}

impl TimeControl {
    /// Whether the game has a running clock (Fischer or per move).
    pub fn has_clock(&self) -> bool {
        self.mode != ClockMode::Untimed
    }

    /// Whether nothing here is timed at all (no clock, no first-move
    /// deadline): such a game needs no timer.
    pub fn is_untimed(&self) -> bool {
        !self.has_clock() && self.first_move.is_none()
    }

    /// Checks the bounds: every time 1 ms..=[`MAX_CLOCK_TIME`], increments at
    /// most [`MAX_INCREMENT`].
    pub fn check(&self) -> Result<(), SessionError> {
        let within = |field: &'static str, d: Duration| {
            if d.is_zero() || d > MAX_CLOCK_TIME {
                Err(SessionError::InvalidArgument {
                    field,
                    description: format!("must be 1..={} milliseconds", MAX_CLOCK_TIME.as_millis()),
                })
            } else {
                Ok(())
            }
        };
        match self.mode {
            ClockMode::Untimed => {}
            ClockMode::Fischer { initial, increment } => {
                within("time_control.fischer.initial_ms", initial)?;
                if increment > MAX_INCREMENT {
                    return Err(SessionError::InvalidArgument {
                        field: "time_control.fischer.increment_ms",
                        description: format!(
                            "must be at most {} milliseconds",
                            MAX_INCREMENT.as_millis()
                        ),
                    });
                }
            }
            ClockMode::PerMove { per_move } => within("time_control.per_move.move_ms", per_move)?,
        }
        if let Some(d) = self.first_move {
            within("time_control.first_move_deadline_ms", d)?;
        }
        if let Some(lag) = self.lag {
            lag.check(self.has_clock())?;
        }
        Ok(())
    }

    fn start_time(&self) -> Duration {
        match self.mode {
            ClockMode::Untimed => Duration::ZERO,
            ClockMode::Fischer { initial, .. } => initial,
            ClockMode::PerMove { per_move } => per_move,
        }
    }
}

/// A clock's time control but its lag compensation (see [`Clock`]).
#[derive(Debug, Clone, Copy)]
struct Control {
    mode: ClockMode,
    first_move: Option<Duration>,
}

impl Control {
    fn has_clock(&self) -> bool {
        self.mode != ClockMode::Untimed
    }
}

/// Seat `i`'s bit of [`Clock`]'s `moved` (none past 63).
fn bit(i: usize) -> u64 {
    u32::try_from(i)
        .ok()
        .and_then(|i| 1u64.checked_shl(i))
        .unwrap_or(0)
}

/// What happens when the turn's deadline passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// `loser`'s flag fell: the other seat wins (`TIMEOUT`).
    Timeout {
        /// The seat out of time.
        loser: Seat,
    },
    /// `seat` did not make its first move in time: the game is aborted.
    NotStarted {
        /// The seat that never started.
        seat: Seat,
    },
}

/// The clocks as read at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClockReading {
    /// Each seat's time left (first seat first); `None` without a clock.
    pub remaining: Option<Vec<Duration>>,
    /// The seat whose clock runs (`None` when over, untimed, or while a
    /// first-move deadline runs instead).
    pub running: Option<Seat>,
    /// Time left for the seat to move to make its first move, while its
    /// first-move deadline runs.
    pub first_move_left: Option<Duration>,
}

/// One accepted move as the clock saw it: enough to rebuild the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveStamp {
    /// Who moved.
    pub mover: Seat,
    /// Who is to move after it (`None` when it ended the game).
    pub next: Option<Seat>,
    /// When it was accepted, counted from the start of the game.
    pub at: Duration,
    /// The lag compensation it was credited, milliseconds (docs/LAG.md).
    pub compensated_ms: u32,
}

/// The clocks of one game.
#[derive(Debug, Clone)]
pub struct Clock {
    /// The time control but its lag compensation, which is kept in `lag`
    /// (every clock holds this inline; few compensate lag).
    control: Control,
    /// Each seat's time left at the start of the current turn.
    remaining: Vec<Duration>,
    /// Whether each seat has made its first move.
    /// A bit per seat (seat `i`: bit `i`; a game has far fewer than 64).
    moved: u64,
    /// The seat whose turn runs (`None` once stopped).
    turn: Option<Seat>,
    /// When that turn started.
    turn_started: Instant,
    /// When the game started.
    started: Instant,
    stamps: Vec<MoveStamp>,
    /// Lag estimates and compensation: made only when the time control
    /// compensates lag or a seat's round trip is measured.
    lag: Option<Box<Lag>>,
}

impl Clock {
    /// A clock for `seats` seats started at `now` with `first` to move.
    pub fn new(control: TimeControl, seats: usize, first: Seat, now: Instant) -> Clock {
        let t = control.start_time();
        Clock {
            control: Control {
                mode: control.mode,
                first_move: control.first_move,
            },
            remaining: vec![t; seats],
            moved: 0,
            turn: Some(first),
            turn_started: now,
            started: now,
            stamps: Vec::new(),
            lag: control.lag.map(|c| Box::new(Lag::new(Some(c), seats))),
        }
    }

    /// A clock that never runs (imported and finished games).
    pub fn stopped(control: TimeControl, seats: usize, now: Instant) -> Clock {
        Clock {
            turn: None,
            ..Clock::new(control, seats, Seat::FIRST, now)
        }
    }

    /// The seats that have made their first move.
    pub fn moved(&self) -> impl Iterator<Item = Seat> + '_ {
        (0..self.remaining.len())
            .filter(|i| self.moved & bit(*i) != 0)
            .filter_map(Seat::new)
    }

    /// Whether every seat has made its first move.
    pub fn all_moved(&self) -> bool {
        (0..self.remaining.len()).all(|i| self.moved & bit(i) != 0)
    }

    /// Rebuilds a clock from its time control and the accepted moves, with
    /// the turn in progress starting afresh at `now`: the time between the
    /// last accepted move and `now` (a restart's downtime, and the part of
    /// the turn played before it) is not charged. `first` is the seat that
    /// moved first, of `seats`.
    pub fn restore(
        control: TimeControl,
        seats: usize,
        first: Seat,
        stamps: &[MoveStamp],
        now: Instant,
    ) -> Clock {
        let last = stamps.last().map_or(Duration::ZERO, |s| s.at);
        let start = now.checked_sub(last).unwrap_or(now);
        let mut clock = Clock::new(control, seats, first, start);
        for s in stamps {
            let credit = Credit {
                compensated_ms: s.compensated_ms,
                lag_ms: None,
            };
            clock.on_move_credited(s.mover, s.next, start + s.at, credit);
        }
        clock
    }

    /// Time since the game's clock started, at `now` (what a move's stored
    /// time is counted from).
    pub fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    /// The time control.
    pub fn control(&self) -> TimeControl {
        TimeControl {
            mode: self.control.mode,
            first_move: self.control.first_move,
            lag: self.compensation(),
        }
    }

    /// The time control's lag compensation, if on.
    fn compensation(&self) -> Option<LagCompensation> {
        self.lag.as_deref().and_then(|l| l.compensation)
    }

    /// Every accepted move with its time, from the start of the game.
    pub fn stamps(&self) -> &[MoveStamp] {
        &self.stamps
    }

    /// What `seat`'s move may be credited for lag now (zero in a first
    /// move under a first-move deadline, and without compensation).
    fn available(&self, seat: Seat) -> Duration {
        match self.lag.as_deref() {
            Some(lag) if !self.in_first_move(seat) => lag.available(seat.index()),
            _ => Duration::ZERO,
        }
    }

    /// What a move of `mover` arriving at `now` is credited (docs/LAG.md):
    /// counted in whole milliseconds of the stored move times, so the
    /// stored ledger and the clock agree.
    pub fn credit(&self, mover: Seat, now: Instant) -> Credit {
        let Some(lag) = self.lag.as_deref() else {
            return Credit::default();
        };
        let mut credit = lag.credit(mover.index(), self.elapsed_ms(now));
        if self.in_first_move(mover) {
            credit.compensated_ms = 0;
        }
        credit
    }

    /// The turn's time at `now`, in whole milliseconds of the stored move
    /// times.
    fn elapsed_ms(&self, now: Instant) -> u64 {
        let last = self.stamps.last().map_or(Duration::ZERO, |s| s.at);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        ms(self.since_start(now)).saturating_sub(ms(last))
    }

    /// The stored ledger line of a move accepted at `clock_ms` (from the
    /// start of the game) with `credit`.
    pub fn move_lag(&self, clock_ms: u64, credit: Credit) -> crate::service::storage::MoveLag {
        let last = self
            .stamps
            .last()
            .map_or(0, |s| u64::try_from(s.at.as_millis()).unwrap_or(u64::MAX));
        let compensated_ms = u64::from(credit.compensated_ms);
        crate::service::storage::MoveLag {
            charged_ms: clock_ms.saturating_sub(last).saturating_sub(compensated_ms),
            compensated_ms,
            lag_ms: credit.lag_ms.map(u64::from),
        }
    }

    /// Adds a measured round trip of `seat` (docs/LAG.md); `true` when the
    /// turn's deadline may have moved (the seat is to move with
    /// compensation on).
    pub fn sample_lag(&mut self, seat: Seat, rtt: Duration) -> bool {
        let seats = self.remaining.len();
        let lag = self
            .lag
            .get_or_insert_with(|| Box::new(Lag::new(None, seats)));
        let Some(entry) = lag.seats.get_mut(seat.index()) else {
            return false;
        };
        entry.sample(rtt);
        self.turn == Some(seat) && self.compensation().is_some()
    }

    /// The seat's round-trip estimate, if it was measured.
    pub fn lag_estimate(&self, seat: Seat) -> Option<Duration> {
        self.lag
            .as_deref()
            .and_then(|l| l.seats.get(seat.index()))
            .and_then(super::lag::SeatLag::estimate)
    }

    /// Notes the estimate each restored move was credited against: (move
    /// index, milliseconds), in move order.
    pub fn restore_lag_used(&mut self, used: Vec<(u32, u32)>) {
        if used.is_empty() {
            return;
        }
        let seats = self.remaining.len();
        let lag = self
            .lag
            .get_or_insert_with(|| Box::new(Lag::new(None, seats)));
        lag.used = used;
    }

    /// The latency ledger: each move's charged and compensated time and
    /// the estimate it was credited against, in move order.
    pub fn ledger(&self) -> Vec<LedgerEntry> {
        let mut before = 0u64;
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.stamps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let at = ms(s.at);
                let took = at.saturating_sub(before);
                before = at;
                let compensated_ms = u64::from(s.compensated_ms);
                LedgerEntry {
                    charged_ms: took.saturating_sub(compensated_ms),
                    compensated_ms,
                    lag_ms: self
                        .lag
                        .as_deref()
                        .and_then(|l| l.used_at(i))
                        .map(u64::from),
                }
            })
            .collect()
    }

    fn in_first_move(&self, seat: Seat) -> bool {
        self.control.first_move.is_some() && self.moved & bit(seat.index()) == 0
    }

    /// When the turn in progress runs out, and what happens then; `None`
    /// when nothing runs.
    pub fn deadline(&self) -> Option<(Instant, Expiry)> {
        let seat = self.turn?;
        if self.in_first_move(seat) {
            let limit = self.control.first_move?;
            return Some((self.turn_started + limit, Expiry::NotStarted { seat }));
        }
        let limit = match self.control.mode {
            ClockMode::Untimed => return None,
            // What the move may be credited for lag extends its turn.
            ClockMode::Fischer { .. } | ClockMode::PerMove { .. } => {
                self.remaining[seat.index()] + self.available(seat)
            }
        };
        Some((self.turn_started + limit, Expiry::Timeout { loser: seat }))
    }

    /// The deadline if it has passed at `now` (the deadline instant counts
    /// as passed).
    pub fn expired(&self, now: Instant) -> Option<(Instant, Expiry)> {
        self.deadline().filter(|(at, _)| now >= *at)
    }

    /// Charges the turn to `mover` at `now` less what it is credited for
    /// lag ([`Clock::credit`]), adds its increment, and starts `next`'s
    /// turn (`None`: the game ended with this move).
    pub fn on_move(&mut self, mover: Seat, next: Option<Seat>, now: Instant) {
        let credit = self.credit(mover, now);
        self.on_move_credited(mover, next, now, credit);
    }

    /// [`Clock::on_move`] with the move's credit decided already.
    fn on_move_credited(&mut self, mover: Seat, next: Option<Seat>, now: Instant, credit: Credit) {
        let compensated = Duration::from_millis(u64::from(credit.compensated_ms));
        let elapsed = now
            .saturating_duration_since(self.turn_started)
            .saturating_sub(compensated);
        let i = mover.index();
        if !self.in_first_move(mover) {
            match self.control.mode {
                ClockMode::Untimed => {}
                ClockMode::Fischer { increment, .. } => {
                    self.remaining[i] = self.remaining[i].saturating_sub(elapsed) + increment;
                }
                ClockMode::PerMove { per_move } => self.remaining[i] = per_move,
            }
        }
        self.moved |= bit(i);
        if let Some(lag) = self.lag.as_deref_mut() {
            lag.record(self.stamps.len(), i, credit);
        }
        self.stamps.push(MoveStamp {
            mover,
            next,
            at: now.saturating_duration_since(self.started),
            compensated_ms: credit.compensated_ms,
        });
        self.turn = next;
        self.turn_started = now;
    }

    /// Stops the clock at `now` (the game ended), charging the turn in
    /// progress.
    pub fn stop(&mut self, now: Instant) {
        if let Some(seat) = self.turn
            && !self.in_first_move(seat)
            && self.control.has_clock()
        {
            let i = seat.index();
            let elapsed = now.saturating_duration_since(self.turn_started);
            self.remaining[i] = self.remaining[i].saturating_sub(elapsed);
        }
        self.turn = None;
    }

    /// The clocks as they stand at `now`.
    pub fn reading(&self, now: Instant) -> ClockReading {
        let elapsed = now.saturating_duration_since(self.turn_started);
        // Without a clock there are no times to copy (an untimed game's
        // reading is made on every move and every read).
        let mut remaining = self.control.has_clock().then(|| self.remaining.clone());
        let mut running = None;
        let mut first_move_left = None;
        if let Some(seat) = self.turn {
            if self.in_first_move(seat) {
                first_move_left = self.control.first_move.map(|d| d.saturating_sub(elapsed));
            } else if let Some(remaining) = &mut remaining {
                running = Some(seat);
                remaining[seat.index()] = remaining[seat.index()].saturating_sub(elapsed);
            }
        }
        ClockReading {
            remaining,
            running,
            first_move_left,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Seat = Seat::FIRST;
    const B: Seat = Seat::SECOND;

    const MS: Duration = Duration::from_millis(1);

    fn fischer(initial: u64, increment: u64) -> TimeControl {
        TimeControl {
            lag: None,
            mode: ClockMode::Fischer {
                initial: MS * initial as u32,
                increment: MS * increment as u32,
            },
            first_move: None,
        }
    }

    #[test]
    fn fischer_charges_the_mover_and_adds_the_increment() {
        let t0 = Instant::now();
        let mut c = Clock::new(fischer(1000, 100), 2, W, t0);
        c.on_move(W, Some(B), t0 + MS * 300);
        let r = c.reading(t0 + MS * 300);
        assert_eq!(r.remaining, Some(vec![MS * 800, MS * 1000]));
        assert_eq!(r.running, Some(B));
        let r = c.reading(t0 + MS * 500);
        assert_eq!(r.remaining, Some(vec![MS * 800, MS * 800]));
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 1300, Expiry::Timeout { loser: B }))
        );
    }

    #[test]
    fn the_flag_falls_at_the_deadline_instant_not_before() {
        let t0 = Instant::now();
        let c = Clock::new(fischer(1000, 0), 2, W, t0);
        assert_eq!(c.expired(t0 + MS * 999), None);
        assert!(c.expired(t0 + MS * 1000).is_some());
    }

    #[test]
    fn per_move_time_is_reset_after_every_move() {
        let t0 = Instant::now();
        let control = TimeControl {
            lag: None,
            mode: ClockMode::PerMove { per_move: MS * 500 },
            first_move: None,
        };
        let mut c = Clock::new(control, 2, W, t0);
        c.on_move(W, Some(B), t0 + MS * 450);
        assert_eq!(c.reading(t0 + MS * 450).remaining, Some(vec![MS * 500; 2]));
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 950, Expiry::Timeout { loser: B }))
        );
    }

    #[test]
    fn first_move_deadline_runs_instead_of_the_clock() {
        let t0 = Instant::now();
        let control = TimeControl {
            first_move: Some(MS * 200),
            ..fischer(1000, 0)
        };
        let mut c = Clock::new(control, 2, W, t0);
        let r = c.reading(t0 + MS * 150);
        assert_eq!(r.first_move_left, Some(MS * 50));
        assert_eq!(r.running, None);
        assert_eq!(r.remaining, Some(vec![MS * 1000; 2]));
        c.on_move(W, Some(B), t0 + MS * 150);
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 350, Expiry::NotStarted { seat: B }))
        );
        c.on_move(B, Some(W), t0 + MS * 300);
        // Both have started: white's own clock runs, uncharged so far.
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 1300, Expiry::Timeout { loser: W }))
        );
    }

    #[test]
    fn stop_charges_the_running_turn_and_freezes_the_reading() {
        let t0 = Instant::now();
        let mut c = Clock::new(fischer(1000, 0), 2, W, t0);
        c.stop(t0 + MS * 400);
        assert_eq!(c.deadline(), None);
        let r = c.reading(t0 + MS * 5000);
        assert_eq!(r.remaining, Some(vec![MS * 600, MS * 1000]));
        assert_eq!(r.running, None);
    }

    #[test]
    fn a_restored_clock_has_the_same_time_left_and_refunds_the_turn_in_progress() {
        let t0 = Instant::now();
        let mut live = Clock::new(fischer(1000, 50), 2, W, t0);
        live.on_move(W, Some(B), t0 + MS * 100);
        live.on_move(B, Some(W), t0 + MS * 400);
        live.on_move(W, Some(B), t0 + MS * 450);
        let later = t0 + MS * 10_000;
        let restored = Clock::restore(live.control(), 2, W, live.stamps(), later);
        assert_eq!(
            restored.reading(later).remaining,
            live.reading(t0 + MS * 450).remaining
        );
        assert_eq!(restored.reading(later).running, Some(B));
        assert_eq!(restored.stamps(), live.stamps());
    }

    fn compensated(cap: u32, quota: u32) -> TimeControl {
        TimeControl {
            lag: Some(LagCompensation {
                max_per_move_ms: cap,
                quota_ms: quota,
            }),
            ..fischer(1000, 0)
        }
    }

    #[test]
    fn compensation_moves_the_deadline_and_credits_the_move() {
        let t0 = Instant::now();
        let mut c = Clock::new(compensated(150, 250), 2, W, t0);
        // No estimate yet: today's deadline.
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 1000, Expiry::Timeout { loser: W }))
        );
        // White's round trip is 200 ms: it may be credited the cap.
        assert!(c.sample_lag(W, MS * 200), "White is to move");
        assert!(!c.sample_lag(B, MS * 40), "Black is not");
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 1150, Expiry::Timeout { loser: W }))
        );
        // A move taking 400 ms is charged 250.
        let credit = c.credit(W, t0 + MS * 400);
        assert_eq!(
            credit,
            Credit {
                compensated_ms: 150,
                lag_ms: Some(200)
            }
        );
        c.on_move(W, Some(B), t0 + MS * 400);
        assert_eq!(
            c.reading(t0 + MS * 400).remaining,
            Some(vec![MS * 750, MS * 1000])
        );
        // Black's move is credited its estimate (under the cap).
        c.on_move(B, Some(W), t0 + MS * 500);
        // White has 100 ms of quota left: its deadline grows by that only.
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * (500 + 750 + 100), Expiry::Timeout { loser: W }))
        );
        c.on_move(W, Some(B), t0 + MS * 900);
        // Quota spent: nothing more, but the estimate is still noted.
        assert_eq!(c.credit(W, t0 + MS * 1000).compensated_ms, 0);
        let ledger = c.ledger();
        let line = |charged_ms, compensated_ms, lag_ms| LedgerEntry {
            charged_ms,
            compensated_ms,
            lag_ms,
        };
        assert_eq!(
            ledger,
            vec![
                line(250, 150, Some(200)),
                line(60, 40, Some(40)),
                line(300, 100, Some(200)),
            ]
        );
        // A restored clock has the same time left and quota spent.
        let later = t0 + MS * 10_000;
        let mut restored = Clock::restore(c.control(), 2, W, c.stamps(), later);
        restored.restore_lag_used(vec![(0, 200), (1, 40), (2, 200)]);
        assert_eq!(
            restored.reading(later).remaining,
            c.reading(t0 + MS * 900).remaining
        );
        assert_eq!(restored.ledger(), ledger);
        restored.sample_lag(B, MS * 500);
        // Black's quota: 250 - 40 left, capped at 150.
        assert_eq!(restored.credit(B, later + MS * 400).compensated_ms, 150);
    }

    #[test]
    fn without_compensation_a_sample_changes_nothing_but_the_ledger() {
        let t0 = Instant::now();
        let mut c = Clock::new(fischer(1000, 0), 2, W, t0);
        assert!(!c.sample_lag(W, MS * 200));
        assert_eq!(
            c.deadline(),
            Some((t0 + MS * 1000, Expiry::Timeout { loser: W }))
        );
        c.on_move(W, Some(B), t0 + MS * 300);
        assert_eq!(
            c.reading(t0 + MS * 300).remaining,
            Some(vec![MS * 700, MS * 1000])
        );
        assert_eq!(
            c.ledger(),
            vec![LedgerEntry {
                charged_ms: 300,
                compensated_ms: 0,
                lag_ms: Some(200)
            }]
        );
    }

    #[test]
    fn compensation_needs_a_clock() {
        let tc = TimeControl {
            mode: ClockMode::Untimed,
            ..compensated(100, 100)
        };
        assert!(tc.check().is_err());
        assert!(compensated(100, 100).check().is_ok());
    }

    #[test]
    fn untimed_games_have_no_deadline_and_no_reading() {
        let t0 = Instant::now();
        let c = Clock::new(TimeControl::default(), 2, W, t0);
        assert_eq!(c.deadline(), None);
        assert_eq!(c.reading(t0 + MS * 10).remaining, None);
    }

    #[test]
    fn bounds_are_checked() {
        assert!(fischer(0, 0).check().is_err());
        assert!(fischer(1, 3_600_001).check().is_err());
        assert!(fischer(1000, 0).check().is_ok());
        let late = TimeControl {
            first_move: Some(Duration::ZERO),
            ..TimeControl::default()
        };
        assert!(late.check().is_err());
    }
}
