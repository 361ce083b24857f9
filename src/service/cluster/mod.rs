//! Several replicas on one PostgreSQL (docs/CLUSTER.md): each game has one
//! owner replica at a time, holding a lease in the database that it renews
//! by heartbeat; the other replicas forward the game's calls to it, or take
//! the game over once its lease has expired.

use std::time::Duration;

/// Whether the time a game spent without an owner (between a replica's
/// death and the takeover) is charged to the seat to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TakeoverClock {
    /// Not charged: the clock resumes where the last stored event left it,
    /// as after a restart of a single referee.
    #[default]
    Credit,
    /// Charged: the seat to move loses the time since its turn began by the
    /// database's clock.
    Charge,
}

/// How a replica takes part in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOptions {
    /// This replica's node id; empty picks one at start.
    pub node_id: String,
    /// Where the other replicas reach this one; empty derives it from the
    /// listen address.
    pub advertise: String,
    /// How long a lease lasts without a heartbeat.
    pub lease: Duration,
    /// Whether the takeover gap is charged.
    pub takeover_clock: TakeoverClock,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            node_id: String::new(),
            advertise: String::new(),
            lease: Duration::from_secs(10),
            takeover_clock: TakeoverClock::Credit,
        }
    }
}
