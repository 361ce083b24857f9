//! The API layer's forms of a session's current state, made once per state
//! and shared by every caller of it.

use std::any::Any;
use std::sync::{Arc, Mutex};

use super::Session;
use super::view::{SessionView, TimeView};
use crate::games::{SeatSet, SharedState, Viewer};

/// Which state a shared form is of: the ply, whether the game was over,
/// the viewer (a spectator for a game that hides nothing) and the seats
/// offering a draw (the only change without a move besides the end).
pub(in crate::service::sessions) type SharedKey = (u32, bool, Viewer, SeatSet);

/// Most shared forms a session keeps: a few kinds for each viewer of a game
/// with private views (every seat and spectators), forms of one state only.
const SHARED_FORMS: usize = 3 * (crate::games::MAX_SEATS + 1);

/// A form kept, with the state it is of.
type Form = (SharedKey, Arc<dyn Any + Send + Sync>);

/// The shared forms of one session's current state: at most
/// [`SHARED_FORMS`], all of one state.
#[derive(Debug)]
pub(super) struct SharedForms {
    /// Whether the game hides information (then each viewer has its own
    /// forms; otherwise every viewer shares a spectator's).
    private: bool,
    forms: Mutex<Vec<Form>>,
}

impl SharedForms {
    pub(super) fn new(private: bool) -> SharedForms {
        SharedForms {
            private,
            forms: Mutex::new(Vec::new()),
        }
    }

    /// The state a shared form is of. Its viewer is `viewer` in a game that
    /// hides information, else a spectator (every view is the same).
    pub(super) fn key(&self, ply: u32, over: bool, viewer: Viewer, offers: SeatSet) -> SharedKey {
        let viewer = if self.private {
            viewer
        } else {
            Viewer::Spectator
        };
        (ply, over, viewer, offers)
    }

    /// The shared form of type `T` of state `key`, if one was made.
    pub(super) fn get<T: Any + Send + Sync>(&self, key: SharedKey) -> Option<Arc<T>> {
        let forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        forms
            .iter()
            .filter(|(at, _)| *at == key)
            .find_map(|(_, value)| value.clone().downcast::<T>().ok())
    }

    /// Keeps `value` as a shared form of state `key`, dropping the forms of
    /// other states (a game moves on: they will not be asked for again)
    /// and the oldest form when there are too many.
    pub(super) fn keep(&self, key: SharedKey, value: Arc<dyn Any + Send + Sync>) {
        let mut forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        let (ply, over, _, offers) = key;
        // A caller that read an older state than the forms kept (a move
        // came in between) keeps nothing.
        if forms.iter().any(|((p, o, _, _), _)| (*p, *o) > (ply, over)) {
            return;
        }
        forms.retain(|((p, o, _, d), _)| (*p, *o, *d) == (ply, over, offers));
        if forms.len() >= SHARED_FORMS {
            forms.remove(0);
        }
        forms.push((key, value));
    }
}

impl Session {
    /// The state `view` shows in the API layer's form, made by `make` once
    /// and shared by every later caller of the same state (ply, over or not,
    /// viewer, draw offers), until another state is asked for: how GetGame
    /// and WatchGame snapshots of a ply share one conversion. `None` for a
    /// view without state.
    pub fn shared_state<T: Any + Send + Sync>(
        &self,
        view: &SessionView,
        make: impl FnOnce(&SharedState) -> T,
    ) -> Option<Arc<T>> {
        let snapshot = view.snapshot.as_ref()?;
        let key = self.shared.key(
            view.ply,
            view.verdict.is_some(),
            view.viewer,
            view.draw_offers,
        );
        if let Some(value) = self.shared.get(key) {
            return Some(value);
        }
        let value = Arc::new(make(snapshot));
        self.shared.keep(key, value.clone());
        Some(value)
    }

    /// The API layer's form of `viewer`'s view of the state now, all of
    /// it but what changes with time (the clock and presence, read now and
    /// given beside it), made by `make` once per state (as
    /// [`Session::shared_state`]) and shared by every later caller:
    /// GetGame's answer, encoded once per ply. Only the first caller of a
    /// state pays for a whole view (with its snapshot); the others read
    /// the clock and presence alone.
    pub fn shared_view<T: Any + Send + Sync>(
        &self,
        viewer: Viewer,
        make: impl FnOnce(&SessionView) -> T,
    ) -> (TimeView, Arc<T>) {
        let (key, made) = {
            let st = self.lock_settled();
            let key = self.shared.key(
                st.game.ply(),
                st.game.verdict().is_some(),
                viewer,
                st.draw_offers,
            );
            match self.shared.get::<T>(key) {
                Some(value) => {
                    let now = tokio::time::Instant::now();
                    let fresh = TimeView {
                        viewer,
                        clock: st.clock.reading(now),
                        presence: self.presence.read(now),
                    };
                    return (fresh, value);
                }
                None => (key, self.view_locked(&st, true, viewer)),
            }
        };
        let value = Arc::new(make(&made));
        self.shared.keep(key, value.clone());
        let fresh = TimeView {
            viewer,
            clock: made.clock,
            presence: made.presence,
        };
        (fresh, value)
    }

    /// Keeps `value` as a shared form of state `key` (see
    /// [`SharedForms::keep`]).
    #[cfg(test)]
    pub(in crate::service::sessions) fn keep_shared(
        &self,
        key: SharedKey,
        value: Arc<dyn Any + Send + Sync>,
    ) {
        self.shared.keep(key, value);
    }
}
