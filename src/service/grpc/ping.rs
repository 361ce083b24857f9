//! The round-trip measurement of a `Play` stream (docs/LAG.md): the server
//! sends a `Ping` with an id, the client answers with a `Pong` of that id
//! at once, and the time between the ping leaving the stream and its pong
//! read back is one sample of the seat's round trip.
//!
//! A ping goes right after the stream's first snapshot and after the
//! events that follow, at most one outstanding at a time and at most one
//! every [`MIN_INTERVAL`]: the rate is bounded whatever the game's pace.
//! HTTP/2's own PING frames would measure the connection without the
//! client's help, but neither tonic nor hyper exposes their round trip to
//! the application (hyper keeps it for its flow-control window), so the
//! stream carries its own.

use std::time::Duration;

use tokio::time::Instant;

use super::pb::referee::v1 as pb;

/// The least time between two pings of one stream.
pub(super) const MIN_INTERVAL: Duration = Duration::from_millis(250);
/// How long a ping may go unanswered before another replaces it (its late
/// pong then counts for nothing).
pub(super) const GIVE_UP: Duration = Duration::from_secs(30);

/// One stream's pings.
#[derive(Debug, Default)]
pub(super) struct Pinger {
    /// The last id sent.
    last_id: u64,
    /// The ping waiting for its pong: its id and when it left.
    outstanding: Option<(u64, Instant)>,
    /// When the last ping left.
    last_sent: Option<Instant>,
}

impl Pinger {
    /// A new ping to queue at `now`, if one is due.
    pub(super) fn due(&mut self, now: Instant) -> Option<pb::PlayResponse> {
        if self
            .outstanding
            .is_some_and(|(_, at)| now.saturating_duration_since(at) < GIVE_UP)
        {
            return None;
        }
        if self
            .last_sent
            .is_some_and(|at| now.saturating_duration_since(at) < MIN_INTERVAL)
        {
            return None;
        }
        self.last_id += 1;
        // Counted from when it leaves the stream ([`Pinger::sent`]); until
        // then, from now.
        self.outstanding = Some((self.last_id, now));
        self.last_sent = Some(now);
        Some(pb::PlayResponse {
            item: Some(pb::play_response::Item::Ping(pb::Ping { id: self.last_id })),
            resync: false,
            sequence: 0,
        })
    }

    /// Notes that `message` leaves the stream at `now` (a ping's clock
    /// starts then).
    pub(super) fn sent(&mut self, message: &pb::PlayResponse, now: Instant) {
        if let Some(pb::play_response::Item::Ping(ping)) = &message.item
            && let Some((id, at)) = self.outstanding.as_mut()
            && *id == ping.id
        {
            *at = now;
            self.last_sent = Some(now);
        }
    }

    /// The round trip of a pong of `id` read at `now`; `None` for a pong of
    /// no ping waiting (late, repeated or made up: ignored).
    pub(super) fn pong(&mut self, id: u64, now: Instant) -> Option<Duration> {
        let (waiting, at) = self.outstanding?;
        if waiting != id {
            return None;
        }
        self.outstanding = None;
        Some(now.saturating_duration_since(at))
    }
}

/// A game's latency ledger up to ply `upto` (what the reader is shown).
pub(super) fn latency_pb(
    session: &crate::service::sessions::Session,
    upto: u32,
) -> Vec<pb::MoveLatency> {
    session
        .latency_ledger(upto)
        .into_iter()
        .map(|line| pb::MoveLatency {
            ply: line.ply,
            seat: line.seat.number(),
            charged_ms: line.entry.charged_ms,
            compensated_ms: line.entry.compensated_ms,
            lag_ms: line.entry.lag_ms,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(m: &pb::PlayResponse) -> u64 {
        match &m.item {
            Some(pb::play_response::Item::Ping(p)) => p.id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_ping_at_a_time_at_a_bounded_rate() {
        let t0 = Instant::now();
        let mut p = Pinger::default();
        let first = p.due(t0).unwrap();
        p.sent(&first, t0 + Duration::from_millis(5));
        // Outstanding: no second ping.
        assert!(p.due(t0 + Duration::from_secs(1)).is_none());
        // A pong of another id counts for nothing.
        assert_eq!(
            p.pong(id_of(&first) + 1, t0 + Duration::from_millis(50)),
            None
        );
        assert_eq!(
            p.pong(id_of(&first), t0 + Duration::from_millis(205)),
            Some(Duration::from_millis(200))
        );
        // Answered twice: the second counts for nothing.
        assert_eq!(p.pong(id_of(&first), t0 + Duration::from_millis(206)), None);
        // Answered, but too soon after the last.
        assert!(p.due(t0 + Duration::from_millis(100)).is_none());
        let second = p.due(t0 + MIN_INTERVAL + Duration::from_millis(5)).unwrap();
        assert_eq!(id_of(&second), id_of(&first) + 1);
        // Never answered: replaced after GIVE_UP.
        let later = t0 + MIN_INTERVAL + GIVE_UP + Duration::from_millis(10);
        let third = p.due(later).unwrap();
        assert_eq!(p.pong(id_of(&second), later), None);
        assert!(p.pong(id_of(&third), later).is_some());
    }
}
