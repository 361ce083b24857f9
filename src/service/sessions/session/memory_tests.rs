//! What an idle session holds: no watch channel, timer wake-up or close
//! token until something needs one (docs/BENCHMARKS.md, "Memory per idle
//! game"), and the same behaviour once they are made.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::{ClockMode, Limits, SessionStore, TimeControl};
use super::*;
use crate::games::{GameRules, Viewer};

fn store() -> SessionStore {
    SessionStore::new(Limits::default())
}

#[tokio::test]
async fn an_idle_game_makes_its_channels_only_when_they_are_used() {
    let st = store();
    let (s, _) = st
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    // Reads make nothing.
    let view = s.view(true);
    assert_eq!(view.ply, 0);
    let presence = s.presence();
    assert_eq!(presence.len(), 2);
    assert!(presence.iter().all(|p| !p.connected));
    assert!(!s.presence.is_made() && !s.timer.is_made() && !s.life.is_made());

    // A player's watch makes the presence channel (its close token comes
    // with its first poll), and counts the player present.
    let watch = s.watch(None, Role::Seat(Seat::FIRST)).unwrap();
    assert!(s.presence.is_made());
    assert!(s.presence()[0].connected && !s.presence()[1].connected);
    drop(watch);
    assert!(!s.presence()[0].connected);
    // An untimed game never needs its timer.
    assert!(!s.timer.is_made());
}

#[tokio::test]
async fn closing_an_idle_game_makes_its_close_token_cancelled() {
    let st = store();
    let (s, _) = st
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    s.close();
    assert!(s.closed().is_cancelled());
    assert!(s.life.is_made());
}

#[tokio::test]
async fn a_timed_game_makes_its_timer_wake_up_at_creation() {
    let st = store();
    let control = TimeControl {
        lag: None,
        mode: ClockMode::Fischer {
            initial: Duration::from_secs(60),
            increment: Duration::ZERO,
        },
        first_move: None,
    };
    let (s, _) = st
        .create_timed(GameRules::default(), BTreeMap::new(), control, None)
        .await
        .unwrap();
    // The timer also listens for seats leaving (a failure policy may act
    // on a disconnect: docs/POLICIES.md), so a timed game has its
    // presence channel from the start; an untimed one does not
    // (`nothing_is_made_until_used`).
    assert!(s.timer.is_made() && s.life.is_made());
    assert!(s.presence.is_made());
    assert_eq!(s.view(false).viewer, Viewer::Spectator);
}

#[test]
fn a_session_stays_small() {
    // A regression guard for what every game holds inline (an idle game's
    // whole heap is about twice this; docs/BENCHMARKS.md).
    let size = std::mem::size_of::<Session>();
    assert!(size <= 616, "{size} bytes");
}

#[tokio::test]
async fn a_game_without_a_failure_policy_holds_no_policy_state() {
    use super::super::{FailureAction, FailurePolicy};
    let st = store();
    let (s, _) = st
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    assert!(!s.lock().policy.is_made());
    assert_eq!(s.failure_policy(), FailurePolicy::default());
    // Every failure losing is no policy at all.
    s.init_policy(FailurePolicy::default(), Vec::new());
    assert!(!s.lock().policy.is_made());
    let pausing = FailurePolicy {
        on_timeout: FailureAction::Pause,
        ..FailurePolicy::default()
    };
    s.init_policy(pausing, Vec::new());
    assert!(s.lock().policy.is_made());
    assert_eq!(s.failure_policy(), pausing);
    assert_eq!(s.view(false).failure.policy, pausing);
}

#[tokio::test]
async fn labels_and_request_ids_are_held_only_when_given() {
    let st = store();
    let (bare, _) = st
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    assert!(bare.labels.is_none() && bare.labels().is_empty());
    let labels = BTreeMap::from([("event".to_string(), "club night".to_string())]);
    let (labelled, tokens) = st
        .create(GameRules::default(), labels.clone())
        .await
        .unwrap();
    assert_eq!(labelled.labels(), &labels);
    assert_eq!(labelled.view(false).labels, labels);

    // A retried request id gets its first answer back.
    let seat = labelled.view(false).to_move.unwrap();
    let token = tokens[seat.index()].to_string();
    let (_, _, moves) = labelled.legal_moves(None, Role::Spectator);
    let mv = moves[0].detail.to_input();
    assert!(labelled.lock().receipts.get("r1").is_none());
    let first = labelled
        .submit(labelled.role(&token), mv.clone(), 0, Some("r1"))
        .await
        .unwrap();
    let again = labelled
        .submit(labelled.role(&token), mv, 0, Some("r1"))
        .await
        .unwrap();
    assert!(!first.replayed && again.replayed);
    assert_eq!(first.report, again.report);
}
