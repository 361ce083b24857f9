//! The forms of a state are made once per state and shared.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::games::{GameRules, SeatSet, Viewer};
use crate::service::sessions::{Limits, SessionStore};

/// A new game of the default rules, with its two seats' tokens.
async fn new_game(store: &SessionStore) -> (Arc<Session>, String, String) {
    let (s, tokens) = store
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    let [w, b] = [&tokens[0], &tokens[1]].map(ToString::to_string);
    (s, w, b)
}

/// Plays the first legal move for whoever is to move.
async fn play_one(s: &Arc<Session>, tokens: &[String; 2]) {
    let view = s.view(false);
    let seat = view.to_move.unwrap();
    let mv = s.legal_moves(None, Role::Spectator).2[0].detail.to_input();
    s.submit(s.role(&tokens[seat.index()]), mv, view.ply, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_states_shared_form_is_made_once_per_state() {
    let st = SessionStore::new(Limits::default());
    let (s, w, b) = new_game(&st).await;
    let tokens = [w.clone(), b.clone()];
    let made = AtomicUsize::new(0);
    let make = |snap: &SharedState| {
        made.fetch_add(1, Ordering::SeqCst);
        snap.svg(None, None)
    };
    let first = shared_state(&s, &s.view(true), make).unwrap();
    let again = shared_state(&s, &s.view_as(Viewer::Spectator), make).unwrap();
    assert!(Arc::ptr_eq(&first, &again), "shared, not made again");
    // A seat of a game that hides nothing sees the spectator's state.
    let seat = s.role(&w).viewer();
    let seats = shared_state(&s, &s.view_as(seat), make).unwrap();
    assert!(Arc::ptr_eq(&first, &seats));
    assert_eq!(made.load(Ordering::SeqCst), 1);
    // A move makes another state; so does the end at the same ply.
    play_one(&s, &tokens).await;
    let moved = shared_state(&s, &s.view(true), make).unwrap();
    assert_ne!(*moved, *first);
    s.resign(s.role(&b)).await.unwrap();
    let over = shared_state(&s, &s.view(true), make).unwrap();
    assert!(!Arc::ptr_eq(&moved, &over));
    assert_eq!(made.load(Ordering::SeqCst), 3);
    // No state in a listing view: nothing to share.
    assert!(shared_state(&s, &s.view(false), make).is_none());
}

#[tokio::test]
async fn a_views_shared_form_is_made_once_per_state_with_the_clock_read_each_time() {
    // (The clock read per call is checked through the server in
    // tests/service/service_clocks.rs: GetGame's clock runs down within a ply.)
    let st = SessionStore::new(Limits::default());
    let (s, w, b) = new_game(&st).await;
    let tokens = [w.clone(), b.clone()];
    let made = AtomicUsize::new(0);
    let make = |view: &SessionView| {
        made.fetch_add(1, Ordering::SeqCst);
        assert!(view.snapshot.is_some(), "the maker gets the state");
        (view.ply, view.draw_offers)
    };
    let (first_view, first) = shared_view(&s, Role::Spectator, make);
    assert_eq!(first_view.viewer, Viewer::Spectator);
    let seat = s.role(&w);
    let (again_view, again) = shared_view(&s, seat, make);
    assert!(
        Arc::ptr_eq(&first, &again),
        "a seat of an open game shares it"
    );
    assert_eq!(
        again_view.viewer,
        seat.viewer(),
        "the view is still the caller's"
    );
    assert_eq!(again_view.presence.len(), 2, "presence read for the caller");
    assert_eq!(made.load(Ordering::SeqCst), 1);
    // A draw offer, a move and the end each make another form.
    s.offer_draw(s.role(&w)).await.unwrap();
    let (_, offered) = shared_view(&s, Role::Spectator, make);
    assert_ne!(offered.1, first.1);
    play_one(&s, &tokens).await;
    let (_, moved) = shared_view(&s, Role::Spectator, make);
    assert_eq!(moved.0, 1);
    s.resign(s.role(&b)).await.unwrap();
    let (_, over) = shared_view(&s, Role::Spectator, make);
    assert!(!Arc::ptr_eq(&moved, &over));
    assert_eq!(made.load(Ordering::SeqCst), 4);
    // A form of an older state, made late, does not replace the newer one.
    let forms = s.attached::<SharedForms>().expect("the gRPC layer's slot");
    let older = StateKey {
        ply: 0,
        over: false,
        viewer: Viewer::Spectator,
        draw_offers: SeatSet::default(),
    };
    forms.keep(older, Arc::new((0u32, SeatSet::default())));
    let (_, still) = shared_view(&s, Role::Spectator, make);
    assert!(Arc::ptr_eq(&over, &still));
    assert_eq!(made.load(Ordering::SeqCst), 4);
}
