//! Failure policies: what the referee does when a seat times out, plays an
//! illegal move or disconnects (docs/POLICIES.md). This module holds the
//! pure part: the policy, its bounds, and the reproducible draw of a
//! substituted move. The session applies it (`session/policy.rs`).

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::SessionError;
use super::clock::MAX_CLOCK_TIME;
use crate::games::{MoveDetail, Seat};

/// The most substitutions a policy may allow per seat and game.
pub(super) const MAX_SUBSTITUTIONS: u32 = 1000;
/// Substitutions per seat and game when the policy does not say.
pub(super) const DEFAULT_SUBSTITUTIONS: u32 = 3;
/// Pause time per seat and game when the policy does not say.
pub(super) const DEFAULT_PAUSE: Duration = Duration::from_secs(60);
/// How long the seat to move must be gone before the disconnect policy
/// acts, when the policy does not say.
pub(super) const DEFAULT_DISCONNECT_AFTER: Duration = Duration::from_secs(5);

/// What the referee does about one kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailureAction {
    /// What happens without a policy (the default).
    #[default]
    Lose,
    /// Play a legal move drawn at random for the seat, within the cap.
    Substitute,
    /// Hold the seat's flag for a bounded time (timeouts, disconnects).
    Pause,
}

/// A kind of failure of a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Its clock ran out.
    Timeout,
    /// It submitted a move the rules refuse.
    IllegalMove,
    /// It was to move and held no stream for the disconnect time.
    Disconnect,
}

impl FailureKind {
    /// The stable name (`TIMEOUT`, `ILLEGAL_MOVE`, `DISCONNECT`).
    pub const fn name(self) -> &'static str {
        match self {
            FailureKind::Timeout => "TIMEOUT",
            FailureKind::IllegalMove => "ILLEGAL_MOVE",
            FailureKind::Disconnect => "DISCONNECT",
        }
    }
}

/// Why the failure policy ended a game (beside the outcome's reason).
pub const SUBSTITUTION_CAP: &str = "SUBSTITUTION_CAP";
/// The seat's pause time ran out.
pub const PAUSE_EXHAUSTED: &str = "PAUSE_EXHAUSTED";

/// A game's failure policy, fixed at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailurePolicy {
    /// When the seat's clock runs out.
    pub on_timeout: FailureAction,
    /// When the seat submits a move the rules refuse.
    pub on_illegal_move: FailureAction,
    /// When the seat to move holds no stream for `disconnect_after`.
    pub on_disconnect: FailureAction,
    /// Substitutions per seat and game (every kind counted together).
    pub max_substitutions: u32,
    /// Pause time per seat and game.
    pub pause: Duration,
    /// How long the seat to move must be gone for `on_disconnect` to act.
    pub disconnect_after: Duration,
}

impl Default for FailurePolicy {
    fn default() -> FailurePolicy {
        FailurePolicy {
            on_timeout: FailureAction::Lose,
            on_illegal_move: FailureAction::Lose,
            on_disconnect: FailureAction::Lose,
            max_substitutions: DEFAULT_SUBSTITUTIONS,
            pause: DEFAULT_PAUSE,
            disconnect_after: DEFAULT_DISCONNECT_AFTER,
        }
    }
}

impl FailurePolicy {
    /// The action for `kind`.
    pub fn action(&self, kind: FailureKind) -> FailureAction {
        match kind {
            FailureKind::Timeout => self.on_timeout,
            FailureKind::IllegalMove => self.on_illegal_move,
            FailureKind::Disconnect => self.on_disconnect,
        }
    }

    /// Whether every failure loses, as without a policy.
    pub fn is_lose(&self) -> bool {
        [self.on_timeout, self.on_illegal_move, self.on_disconnect]
            .iter()
            .all(|a| *a == FailureAction::Lose)
    }

    /// Checks the bounds and that PAUSE is not asked of illegal moves (a
    /// refused move already leaves the seat its clock to try again).
    pub fn check(&self) -> Result<(), SessionError> {
        let bad = |field: &'static str, description: String| {
            Err(SessionError::InvalidArgument { field, description })
        };
        if self.on_illegal_move == FailureAction::Pause {
            return bad(
                "failure_policy.on_illegal_move",
                "PAUSE applies to timeouts and disconnects: an illegal move is LOSE or SUBSTITUTE"
                    .into(),
            );
        }
        if !(1..=MAX_SUBSTITUTIONS).contains(&self.max_substitutions) {
            return bad(
                "failure_policy.max_substitutions",
                format!("must be 1..={MAX_SUBSTITUTIONS} (0: {DEFAULT_SUBSTITUTIONS})"),
            );
        }
        let times = [
            ("failure_policy.pause_ms", self.pause),
            ("failure_policy.disconnect_after_ms", self.disconnect_after),
        ];
        for (field, d) in times {
            if d.is_zero() || d > MAX_CLOCK_TIME {
                return bad(
                    field,
                    format!("must be 1..={} milliseconds", MAX_CLOCK_TIME.as_millis()),
                );
            }
        }
        Ok(())
    }
}

/// A move the referee played for a seat that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitution {
    /// The ply after the move.
    pub ply: u32,
    /// The seat it was played for.
    pub seat: Seat,
    /// The failure.
    pub kind: FailureKind,
    /// The rule the seat's own move broke (illegal moves).
    pub refused: Option<&'static str>,
    /// The move played (as a viewer may see it, in views).
    pub detail: MoveDetail,
}

/// The seed a game's substitutions are drawn from: a hash of its id, so
/// that anyone holding the record and the id replays the same draws, and no
/// seat can choose it.
pub fn substitution_seed(game_id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"punct-referee substitution v1\0");
    h.update(game_id.as_bytes());
    h.finalize().into()
}

/// The index of the legal move substituted at the move making `ply` (the
/// ply after it), among `n` legal moves sorted by notation: uniform, drawn
/// from `SHA-256(seed || ply || counter)` as a big-endian u64 by rejection
/// (docs/POLICIES.md, "Reproducing the draws"). `n` must not be 0.
pub fn pick(seed: &[u8; 32], ply: u32, n: usize) -> usize {
    let n = n.max(1) as u64;
    // The largest multiple of n that fits: draws at or above it are
    // rejected, so every index is equally likely.
    let zone = u64::MAX - u64::MAX % n;
    for counter in 0u32.. {
        let mut h = Sha256::new();
        h.update(seed);
        h.update(ply.to_be_bytes());
        h.update(counter.to_be_bytes());
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let x = u64::from_be_bytes(first);
        if x < zone {
            return usize::try_from(x % n).unwrap_or(0);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_depends_only_on_the_seed_and_the_ply_and_covers_every_move() {
        let seed = substitution_seed("0123456789abcdef0123456789abcdef");
        assert_eq!(pick(&seed, 7, 10), pick(&seed, 7, 10));
        let mut seen = [0u32; 5];
        for ply in 1..=500 {
            seen[pick(&seed, ply, 5)] += 1;
        }
        // 500 draws over 5 moves: each far from 0 and from 500.
        assert!(seen.iter().all(|c| (50..=150).contains(c)), "{seen:?}");
        assert_ne!(seed, substitution_seed("0123456789abcdef0123456789abcdee"));
    }

    #[test]
    fn bounds_are_checked() {
        assert!(FailurePolicy::default().check().is_ok());
        let pause_illegal = FailurePolicy {
            on_illegal_move: FailureAction::Pause,
            ..FailurePolicy::default()
        };
        assert!(pause_illegal.check().is_err());
        let no_cap = FailurePolicy {
            max_substitutions: 0,
            ..FailurePolicy::default()
        };
        assert!(no_cap.check().is_err());
        let no_pause = FailurePolicy {
            pause: Duration::ZERO,
            ..FailurePolicy::default()
        };
        assert!(no_pause.check().is_err());
    }
}
