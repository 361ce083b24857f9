//! The lag side of a session (docs/LAG.md): round trips measured on a
//! seat's `Play` stream, and the game's latency ledger.

use std::time::Duration;

use super::Session;
use crate::games::Seat;
use crate::service::sessions::LedgerEntry;
use crate::service::telemetry;

/// One move of a game's latency ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerLine {
    /// The ply after the move.
    pub ply: u32,
    /// Who moved.
    pub seat: Seat,
    /// What it was charged and credited.
    pub entry: LedgerEntry,
}

impl Session {
    /// Records a measured round trip of `seat` (a ping answered on its
    /// `Play` stream). While a change is being stored the sample is
    /// dropped: a pending move was credited against the estimate it was
    /// decided with, and applying it must give the same credit.
    pub fn sample_lag(&self, seat: Seat, rtt: Duration) {
        metrics::histogram!(telemetry::SEAT_LAG, "kind" => self.game_name)
            .record(rtt.as_secs_f64());
        let mut st = self.lock();
        if st.pending || st.game.outcome().is_some() || self.follower() {
            return;
        }
        if st.clock.sample_lag(seat, rtt) {
            // The turn's deadline includes what the move may be credited.
            self.timer.wake();
        }
    }

    /// The seat's round-trip estimate, if measured.
    pub fn lag_estimate(&self, seat: Seat) -> Option<Duration> {
        self.lock().clock.lag_estimate(seat)
    }

    /// The latency ledger up to ply `upto` (what a reader is shown): each
    /// move with what it was charged and credited. Empty for an imported
    /// game (its moves were never timed here).
    pub fn latency_ledger(&self, upto: u32) -> Vec<LedgerLine> {
        let st = self.lock();
        let stamps = st.clock.stamps();
        if stamps.len() != st.game.ply() as usize {
            return Vec::new();
        }
        st.clock
            .ledger()
            .into_iter()
            .zip(stamps)
            .zip(1u32..)
            .take_while(|(_, ply)| *ply <= upto)
            .map(|((entry, stamp), ply)| LedgerLine {
                ply,
                seat: stamp.mover,
                entry,
            })
            .collect()
    }
}
