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
    assert!(size <= 920, "{size} bytes");
}
