//! The wire forms of a session's states, made once per state and shared by
//! every caller of it: a state's `GameState` message (GetGame and WatchGame
//! snapshots) and GetGame's encoded answers ([`super::answer`]). The session
//! layer knows none of them: it keys its states ([`StateKey`]), reads the
//! current one asking first whether a form is held ([`Session::read_current`])
//! and keeps the [`SharedForms`] of this layer in its slot
//! ([`Session::attached`]), dropped with it.

use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::games::{MAX_SEATS, SharedState};
use crate::service::sessions::{Current, Role, Session, SessionView, StateKey, TimeView};

/// Most forms a session keeps: a few kinds for each viewer of a game with
/// private views (every seat and spectators), forms of one state only.
const SHARED_FORMS: usize = 3 * (MAX_SEATS + 1);

/// A form kept, with the state it is of.
type Form = (StateKey, Arc<dyn Any + Send + Sync>);

/// The shared forms of one session's current state: at most
/// [`SHARED_FORMS`], all of one state.
#[derive(Debug, Default)]
struct SharedForms {
    forms: Mutex<Vec<Form>>,
}

impl SharedForms {
    /// The form of type `T` of state `key`, if one was made.
    fn get<T: Any + Send + Sync>(&self, key: StateKey) -> Option<Arc<T>> {
        let forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        forms
            .iter()
            .filter(|(at, _)| *at == key)
            .find_map(|(_, value)| value.clone().downcast::<T>().ok())
    }

    /// Keeps `value` as a form of state `key`, dropping the forms of other
    /// states (a game moves on: they will not be asked for again) and the
    /// oldest form when there are too many.
    fn keep(&self, key: StateKey, value: Arc<dyn Any + Send + Sync>) {
        let mut forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        // A caller that read an older state than the forms kept (a move
        // came in between) keeps nothing.
        if forms.iter().any(|(at, _)| at.is_later_than(&key)) {
            return;
        }
        forms.retain(|(at, _)| at.same_state(&key));
        if forms.len() >= SHARED_FORMS {
            forms.remove(0);
        }
        forms.push((key, value));
    }
}

/// The state `view` shows in this layer's form, made by `make` once and
/// shared by every later caller of the same state (ply, over or not,
/// viewer, draw offers), until another state is asked for: how GetGame and
/// WatchGame snapshots of a ply share one conversion. `None` for a view
/// without state.
pub(super) fn shared_state<T: Any + Send + Sync>(
    session: &Session,
    view: &SessionView,
    make: impl FnOnce(&SharedState) -> T,
) -> Option<Arc<T>> {
    let snapshot = view.snapshot.as_ref()?;
    let key = session.state_key(view);
    let forms = session.attached::<SharedForms>();
    if let Some(value) = forms.and_then(|f| f.get(key)) {
        return Some(value);
    }
    let value = Arc::new(make(snapshot));
    if let Some(forms) = forms {
        forms.keep(key, value.clone());
    }
    Some(value)
}

/// This layer's form of `role`'s view of the state now, all of it but what
/// changes with time (the clock and presence, read now and given beside
/// it), made by `make` once per state (as [`shared_state`]) and shared by
/// every later caller: GetGame's answer, encoded once per ply. Only the
/// first caller of a state pays for a whole view (with its snapshot); the
/// others read the clock and presence alone.
pub(super) fn shared_view<T: Any + Send + Sync>(
    session: &Session,
    role: Role,
    make: impl FnOnce(&SessionView) -> T,
) -> (TimeView, Arc<T>) {
    let forms = session.attached::<SharedForms>();
    match session.read_current(role, |key| forms.and_then(|f| f.get::<T>(key))) {
        Current::Known(value, fresh) => (fresh, value),
        Current::Unknown(key, view) => {
            let value = Arc::new(make(&view));
            if let Some(forms) = forms {
                forms.keep(key, value.clone());
            }
            let fresh = TimeView {
                viewer: view.viewer,
                clock: view.clock,
                presence: view.presence,
            };
            (fresh, value)
        }
    }
}

#[cfg(test)]
mod tests;
