//! Read-only pictures of a session: now, at an earlier ply, with its events,
//! and its record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::time;

use super::super::clock::{Clock, ClockReading, TimeControl};
use super::super::presence::SeatPresence;
use super::super::{GameId, SessionError};
use super::event::{Event, EventKind};
use super::policy::FailureView;
use super::seats::Role;
use super::{Session, State};
use crate::games::{GameRules, MoveDetail, Outcome, Seat, SeatSet, Setup, SharedState, Viewer};

/// The record tag (`x-substituted` in a PÜNCT record) listing the plies
/// of the substituted moves.
const SUBSTITUTED_TAG: &str = "substituted";

/// What of a view changes with time alone, and whose view it is: what a
/// form of a state kept per state leaves out ([`Session::read_current`]).
#[derive(Debug, Clone)]
pub struct TimeView {
    /// Whose view it is.
    pub viewer: Viewer,
    /// The clocks now.
    pub clock: ClockReading,
    /// Each seat's presence now.
    pub presence: Vec<SeatPresence>,
}

/// A read-only picture of a session.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// The game's id.
    pub id: GameId,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Creation time.
    pub created_at: SystemTime,
    /// The game and its options.
    pub rules: GameRules,
    /// What the game calls each seat, in seat order.
    pub seats: &'static [&'static str],
    /// Whose view this is.
    pub viewer: Viewer,
    /// The seed's commitment (and the seed once over), for a seeded game.
    pub setup: Option<SetupView>,
    /// Turns played (at the point the view shows).
    pub ply: u32,
    /// Whose turn it is (`None` once over).
    pub to_move: Option<Seat>,
    /// How it ended, once over.
    pub outcome: Option<Outcome>,
    /// The seats that have offered or accepted the standing draw offer.
    pub draw_offers: SeatSet,
    /// The game-specific state (`None` in listings).
    pub snapshot: Option<SharedState>,
    /// The last move played.
    pub last_move: Option<MoveDetail>,
    /// The time control chosen at creation.
    pub time_control: TimeControl,
    /// The clocks (at the point the view shows).
    pub clock: ClockReading,
    /// Each seat's presence now, first seat first.
    pub presence: Vec<SeatPresence>,
    /// The head of the move chain at the point the view shows
    /// (docs/RECEIPTS.md, "The chain").
    pub chain: [u8; 32],
    /// The failure policy and what it did (up to the view's ply).
    pub failure: FailureView,
}

/// What a view shows of a seeded game's setup: the commitment from the
/// start, the seed only once the game is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupView {
    /// SHA-256 of the seed.
    pub commitment: [u8; 32],
    /// The seed, once the game is over.
    pub seed: Option<[u8; 32]>,
    /// Whether the creator supplied the seed.
    pub supplied: bool,
}

impl SetupView {
    pub(super) fn of(setup: Setup, over: bool) -> SetupView {
        SetupView {
            commitment: setup.commitment(),
            seed: over.then_some(setup.seed),
            supplied: setup.supplied,
        }
    }
}

impl Session {
    /// A spectator's picture of the game now; with the board when
    /// `with_state`.
    pub fn view(&self, with_state: bool) -> SessionView {
        let st = self.lock_settled();
        self.view_locked(&st, with_state, Viewer::Spectator)
    }

    /// The game now, with its state, as `viewer` may see it.
    pub fn view_as(&self, viewer: Viewer) -> SessionView {
        let st = self.lock_settled();
        self.view_locked(&st, true, viewer)
    }

    /// A picture of the game now, with its state, and its event log up to
    /// that point (every move, then the game-over event once over), read
    /// under one lock so the two agree: what a page showing the move list
    /// needs.
    pub fn view_with_events(&self) -> (SessionView, Vec<Arc<Event>>) {
        let st = self.lock_settled();
        (
            self.view_locked(&st, true, Viewer::Spectator),
            self.events_for(&st, st.log.all(), Viewer::Spectator),
        )
    }

    pub(super) fn view_locked(&self, st: &State, with_state: bool, viewer: Viewer) -> SessionView {
        let outcome = st.game.outcome();
        let over = outcome.is_some();
        SessionView {
            id: self.id.clone(),
            labels: self.labels().clone(),
            created_at: self.created_at,
            rules: st.game.rules(),
            seats: self.seats.names(),
            viewer,
            setup: st.game.setup().map(|s| SetupView::of(s, over)),
            ply: st.game.ply(),
            to_move: st.game.to_move(),
            outcome,
            draw_offers: st.draw_offers,
            snapshot: with_state.then(|| st.game.snapshot(viewer)),
            last_move: st
                .log
                .last_move()
                .map(|report| st.game.redact(&report.detail, viewer)),
            time_control: st.clock.control(),
            clock: st.clock.reading(time::Instant::now()),
            presence: self.presence(),
            chain: st.chain,
            failure: self.failure_view(st, viewer, None),
        }
    }

    /// Events of `log` as `viewer` may see them (unchanged unless the game
    /// hides information).
    pub(super) fn events_for(
        &self,
        st: &State,
        log: &[Arc<Event>],
        viewer: Viewer,
    ) -> Vec<Arc<Event>> {
        log.iter().map(|e| self.event_for(st, e, viewer)).collect()
    }

    pub(super) fn event_for(&self, st: &State, event: &Arc<Event>, viewer: Viewer) -> Arc<Event> {
        match &event.kind {
            EventKind::MoveApplied { report } if self.private => {
                let mut report = report.clone();
                report.detail = st.game.redact(&report.detail, viewer);
                Arc::new(Event {
                    kind: EventKind::MoveApplied { report },
                    ..(**event).clone()
                })
            }
            _ => event.clone(),
        }
    }

    /// An event as `viewer` may see it (what a watcher is sent).
    pub(in crate::service::sessions) fn redact(
        &self,
        event: &Arc<Event>,
        viewer: Viewer,
    ) -> Arc<Event> {
        if !self.private {
            return event.clone();
        }
        let st = self.lock();
        self.event_for(&st, event, viewer)
    }

    /// The game as it was after `ply` moves (now when `None`), with its
    /// game-specific state as `role` may see it; refused beyond the
    /// current ply.
    /// A spectator of a delayed game is refused beyond the ply shown, and
    /// shown at most that.
    pub fn view_at(&self, ply: Option<u32>, role: Role) -> Result<SessionView, SessionError> {
        let viewer = role.viewer();
        let st = self.lock_settled();
        if let Some(delay) = self.delay_for(role) {
            let release = self.release_locked(&st, delay, time::Instant::now());
            return self.released_view_at_locked(&st, release, ply, "ply", viewer);
        }
        match ply {
            None => Ok(self.view_locked(&st, true, viewer)),
            Some(ply) => self.view_at_locked(&st, ply, "ply", viewer),
        }
    }

    /// A picture of the game after `ply` moves (the resume point of a
    /// watcher), and the log sequence it includes.
    pub(super) fn view_at_locked(
        &self,
        st: &State,
        ply: u32,
        field: &'static str,
        viewer: Viewer,
    ) -> Result<SessionView, SessionError> {
        let current = st.game.ply();
        if ply > current {
            return Err(SessionError::OutOfRange {
                field,
                asked: ply,
                current,
            });
        }
        if ply == current {
            return Ok(self.view_locked(st, true, viewer));
        }
        let move_event = |p: u32| st.log.move_at(p);
        Ok(SessionView {
            id: self.id.clone(),
            labels: self.labels().clone(),
            created_at: self.created_at,
            rules: st.game.rules(),
            seats: self.seats.names(),
            viewer,
            // The game is not over at an earlier ply: the seed stays hidden.
            setup: st.game.setup().map(|s| SetupView::of(s, false)),
            ply,
            // The mover of the next move in the log is who was to move then.
            to_move: move_event(ply).map(|r| r.seat),
            outcome: None,
            draw_offers: SeatSet::EMPTY,
            snapshot: st.game.snapshot_at(ply, viewer),
            last_move: ply
                .checked_sub(1)
                .and_then(move_event)
                .map(|r| st.game.redact(&r.detail, viewer)),
            time_control: st.clock.control(),
            // The clocks as the event of that ply recorded them.
            clock: ply
                .checked_sub(1)
                .and_then(|p| st.log.get(p as usize))
                .map_or_else(
                    || {
                        let first = move_event(0).map_or(Seat::FIRST, |r| r.seat);
                        let now = time::Instant::now();
                        Clock::new(st.clock.control(), self.seats.count(), first, now).reading(now)
                    },
                    |e| e.clock().clone(),
                ),
            presence: self.presence(),
            chain: self.chain_at(st, ply),
            failure: self.failure_view(st, viewer, Some(ply)),
        })
    }

    /// The game record text as `role` may see it, labels as header tags (a
    /// spectator of a delayed game: the moves shown, the end once shown).
    pub fn export(&self, role: Role) -> String {
        // A delayed spectator's record names only the substitutions shown.
        let shown = self.release_for(role).map(|r| r.ply);
        let tags = self.record_tags(&self.lock_settled(), role.viewer(), shown);
        if let Some(record) = self.released_record(role, &tags) {
            return record;
        }
        self.lock_settled().game.record(&tags, role.viewer())
    }

    /// The header tags of the game's record as `viewer` exports it up to
    /// ply `upto` (all of it when `None`): the labels, and the plies of the
    /// substituted moves where the format has room for a tag
    /// (docs/POLICIES.md, "In the record"). A receipt hashes the record
    /// made with these tags (docs/RECEIPTS.md).
    pub(super) fn record_tags(
        &self,
        st: &State,
        viewer: Viewer,
        upto: Option<u32>,
    ) -> Vec<(String, String)> {
        let mut tags: Vec<(String, String)> = self
            .labels()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let plies: Vec<String> = self
            .failure_view(st, viewer, upto)
            .substitutions
            .iter()
            .map(|s| s.ply.to_string())
            .collect();
        if !plies.is_empty() && !self.labels().contains_key(SUBSTITUTED_TAG) {
            tags.push((SUBSTITUTED_TAG.to_string(), plies.join(",")));
        }
        tags
    }
}
