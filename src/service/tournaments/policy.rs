//! A tournament's failure policy (docs/POLICIES.md, "Tournaments"): kept
//! in its document, given to each of its games, and the substituted moves
//! each game's seats had, summed per entrant in the standings.

use std::time::Duration;

use super::record::{Doc, PairingStatus};
use crate::service::sessions::{FailureAction, FailurePolicy, FailureView};

/// A failure policy as stored in a tournament's document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PolicyDoc {
    /// `lose`, `substitute` or `pause`.
    pub on_timeout: String,
    /// `lose` or `substitute`.
    pub on_illegal_move: String,
    /// `lose`, `substitute` or `pause`.
    pub on_disconnect: String,
    /// Substitutions per seat and game.
    pub max_substitutions: u32,
    /// Pause time per seat and game.
    pub pause_ms: u64,
    /// How long the seat to move must be gone.
    pub disconnect_after_ms: u64,
}

fn name(a: FailureAction) -> String {
    match a {
        FailureAction::Lose => "lose",
        FailureAction::Substitute => "substitute",
        FailureAction::Pause => "pause",
    }
    .to_string()
}

fn action(name: &str) -> FailureAction {
    match name {
        "substitute" => FailureAction::Substitute,
        "pause" => FailureAction::Pause,
        _ => FailureAction::Lose,
    }
}

impl PolicyDoc {
    /// The stored form of `p`; `None` when every failure loses (as
    /// without a policy: documents stay as they were).
    pub fn of(p: &FailurePolicy) -> Option<PolicyDoc> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        (!p.is_lose()).then(|| PolicyDoc {
            on_timeout: name(p.on_timeout),
            on_illegal_move: name(p.on_illegal_move),
            on_disconnect: name(p.on_disconnect),
            max_substitutions: p.max_substitutions,
            pause_ms: ms(p.pause),
            disconnect_after_ms: ms(p.disconnect_after),
        })
    }

    /// The policy it stores.
    pub fn policy(&self) -> FailurePolicy {
        FailurePolicy {
            on_timeout: action(&self.on_timeout),
            on_illegal_move: action(&self.on_illegal_move),
            on_disconnect: action(&self.on_disconnect),
            max_substitutions: self.max_substitutions,
            pause: Duration::from_millis(self.pause_ms),
            disconnect_after: Duration::from_millis(self.disconnect_after_ms),
        }
    }
}

impl Doc {
    /// The failure policy of the tournament's games.
    pub fn failure_policy(&self) -> FailurePolicy {
        self.failure_policy
            .as_ref()
            .map_or_else(FailurePolicy::default, PolicyDoc::policy)
    }

    /// The moves the referee played for `entrant` over its finished games.
    pub fn substituted_moves(&self, entrant: usize) -> u32 {
        self.games
            .iter()
            .filter_map(|g| match &g.state {
                PairingStatus::Done { substituted, .. } => g
                    .seats
                    .iter()
                    .zip(substituted)
                    .filter(|(e, _)| **e == entrant)
                    .map(|(_, n)| *n)
                    .reduce(|a, b| a + b),
                _ => None,
            })
            .sum()
    }
}

/// Writes into a finished game's result how many moves were substituted
/// for each of its `seats` seats (left empty when none was).
pub fn count_substitutions(state: &mut PairingStatus, failure: &FailureView, seats: usize) {
    let PairingStatus::Done { substituted, .. } = state else {
        return;
    };
    if failure.substitutions.is_empty() {
        return;
    }
    let mut counts = vec![0u32; seats];
    for s in &failure.substitutions {
        if let Some(n) = counts.get_mut(s.seat.index()) {
            *n += 1;
        }
    }
    *substituted = counts;
}
