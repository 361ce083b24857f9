//! What a layer above keeps per state of a session without the session
//! knowing what it keeps: the key of a state as a viewer sees it
//! ([`StateKey`]), a read of the current state that first asks whether the
//! caller already holds something for it ([`Session::read_current`]), and
//! one slot per session to hold it in ([`Session::attached`]). The gRPC
//! layer keeps its encoded answers so, made once per state and shared by
//! every caller (`grpc/shared.rs`).

use std::any::Any;
use std::sync::OnceLock;

use tokio::time;

use super::Session;
use super::seats::Role;
use super::view::{SessionView, TimeView};
use crate::games::{SeatSet, Viewer};

/// Which state of a game a viewer sees: the ply, whether the game was
/// over, the viewer (a spectator for a game that hides nothing: every view
/// is the same) and the seats offering a draw (the only change without a
/// move besides the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateKey {
    /// Turns played.
    pub ply: u32,
    /// Whether the game was over.
    pub over: bool,
    /// Whose view: a spectator's for a game that hides nothing.
    pub viewer: Viewer,
    /// The seats that had offered or accepted a draw.
    pub draw_offers: SeatSet,
}

impl StateKey {
    /// Whether this key is of a later state of the game than `other`
    /// (more plies, or the same ply over).
    pub fn is_later_than(&self, other: &StateKey) -> bool {
        (self.ply, self.over) > (other.ply, other.over)
    }

    /// Whether `other` is of the same state, whatever its viewer.
    pub fn same_state(&self, other: &StateKey) -> bool {
        (self.ply, self.over, self.draw_offers) == (other.ply, other.over, other.draw_offers)
    }
}

/// The current state as [`Session::read_current`] read it.
#[derive(Debug)]
pub enum Current<T> {
    /// The caller held `T` for the state: with it, what changes with time
    /// alone (the clock and presence), read now.
    Known(T, TimeView),
    /// The caller held nothing for it: the state's key and its whole view.
    Unknown(StateKey, Box<SessionView>),
}

/// The slot a layer above keeps its own per-session data in (see
/// [`Session::attached`]).
#[derive(Debug, Default)]
pub(super) struct Attachment(OnceLock<Box<dyn Any + Send + Sync>>);

impl Session {
    /// The key of the state `view` shows.
    pub fn state_key(&self, view: &SessionView) -> StateKey {
        self.key_of(
            view.ply,
            view.outcome.is_some(),
            view.viewer,
            view.draw_offers,
        )
    }

    fn key_of(&self, ply: u32, over: bool, viewer: Viewer, draw_offers: SeatSet) -> StateKey {
        StateKey {
            ply,
            over,
            viewer: if self.private {
                viewer
            } else {
                Viewer::Spectator
            },
            draw_offers,
        }
    }

    /// The current state as `role` may see it, read under one lock: `known`
    /// is asked first with the state's key, and what it holds comes back
    /// with the clock and presence read now; only when it holds nothing is
    /// the whole view (with its state) made. How a read shared per state
    /// pays for a view only once per state.
    pub fn read_current<T>(
        &self,
        role: Role,
        known: impl FnOnce(StateKey) -> Option<T>,
    ) -> Current<T> {
        let viewer = role.viewer();
        let st = self.lock_settled();
        let key = self.key_of(
            st.game.ply(),
            st.game.outcome().is_some(),
            viewer,
            st.draw_offers,
        );
        match known(key) {
            Some(value) => {
                let now = time::Instant::now();
                let fresh = TimeView {
                    viewer,
                    clock: st.clock.reading(now),
                    presence: self.presence.read(self.seats.count(), now),
                };
                Current::Known(value, fresh)
            }
            None => Current::Unknown(key, Box::new(self.view_locked(&st, true, viewer))),
        }
    }

    /// The `T` a layer above keeps with this session, made on first use:
    /// one type per session (`None` if the slot holds another type). It
    /// lives as long as the session.
    pub fn attached<T: Any + Send + Sync + Default>(&self) -> Option<&T> {
        self.attachment
            .0
            .get_or_init(|| Box::new(T::default()))
            .downcast_ref::<T>()
    }
}
