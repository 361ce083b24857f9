//! Failure policies on the wire (docs/POLICIES.md).

use std::time::Duration;

use super::convert::seat_pb;
use super::pb::referee::v1 as pb;
use crate::service::sessions::{
    FailureAction, FailureKind, FailurePolicy, FailureView, Session, SessionError, Substitution,
};

/// An action from the wire: unspecified is LOSE; an unknown number is
/// refused with the field's path.
fn action(value: i32, field: &'static str) -> Result<FailureAction, SessionError> {
    match pb::FailureAction::try_from(value) {
        Ok(pb::FailureAction::Unspecified | pb::FailureAction::Lose) => Ok(FailureAction::Lose),
        Ok(pb::FailureAction::Substitute) => Ok(FailureAction::Substitute),
        Ok(pb::FailureAction::Pause) => Ok(FailureAction::Pause),
        Err(_) => Err(SessionError::InvalidArgument {
            field,
            description: format!("unknown failure action {value}"),
        }),
    }
}

/// A failure policy from the wire (absent: LOSE for everything), its
/// zero values replaced by the defaults and its bounds checked.
pub fn failure_policy(p: Option<&pb::FailurePolicy>) -> Result<FailurePolicy, SessionError> {
    let Some(p) = p else {
        return Ok(FailurePolicy::default());
    };
    let defaults = FailurePolicy::default();
    let or = |ms: u64, default: Duration| {
        if ms == 0 {
            default
        } else {
            Duration::from_millis(ms)
        }
    };
    let policy = FailurePolicy {
        on_timeout: action(p.on_timeout, "failure_policy.on_timeout")?,
        on_illegal_move: action(p.on_illegal_move, "failure_policy.on_illegal_move")?,
        on_disconnect: action(p.on_disconnect, "failure_policy.on_disconnect")?,
        max_substitutions: if p.max_substitutions == 0 {
            defaults.max_substitutions
        } else {
            p.max_substitutions
        },
        pause: or(p.pause_ms, defaults.pause),
        disconnect_after: or(p.disconnect_after_ms, defaults.disconnect_after),
    };
    policy.check()?;
    Ok(policy)
}

fn action_pb(a: FailureAction) -> i32 {
    match a {
        FailureAction::Lose => pb::FailureAction::Lose,
        FailureAction::Substitute => pb::FailureAction::Substitute,
        FailureAction::Pause => pb::FailureAction::Pause,
    }
    .into()
}

/// A failure policy to the wire, every field explicit.
pub fn failure_policy_pb(p: &FailurePolicy) -> pb::FailurePolicy {
    pb::FailurePolicy {
        on_timeout: action_pb(p.on_timeout),
        on_illegal_move: action_pb(p.on_illegal_move),
        on_disconnect: action_pb(p.on_disconnect),
        max_substitutions: p.max_substitutions,
        pause_ms: u64::try_from(p.pause.as_millis()).unwrap_or(u64::MAX),
        disconnect_after_ms: u64::try_from(p.disconnect_after.as_millis()).unwrap_or(u64::MAX),
    }
}

fn kind_pb(k: FailureKind) -> i32 {
    match k {
        FailureKind::Timeout => pb::FailureKind::Timeout,
        FailureKind::IllegalMove => pb::FailureKind::IllegalMove,
        FailureKind::Disconnect => pb::FailureKind::Disconnect,
    }
    .into()
}

/// A substitution to the wire.
pub fn substitution_pb(s: &Substitution) -> pb::Substitution {
    pb::Substitution {
        ply: s.ply,
        seat: seat_pb(Some(s.seat)),
        kind: kind_pb(s.kind),
        notation: s.detail.notation().to_string(),
    }
}

/// The failure fields of a `Game`: the policy (absent when every failure
/// loses, as without one), the substitutions and the policy's ending.
pub fn failure_fields(
    f: &FailureView,
) -> (Option<pb::FailurePolicy>, Vec<pb::Substitution>, String) {
    (
        (!f.policy.is_lose()).then(|| failure_policy_pb(&f.policy)),
        f.substitutions.iter().map(substitution_pb).collect(),
        f.ending.unwrap_or_default().to_string(),
    )
}

/// Marks a move event the referee played for a seat (`MoveApplied.substituted`).
pub fn mark_substituted(event: &mut pb::GameEvent, session: &Session) {
    if let Some(pb::game_event::Kind::MoveApplied(m)) = &mut event.kind
        && let Some(s) = session.substitution_at(event.ply)
    {
        m.substituted = kind_pb(s.kind);
    }
}
