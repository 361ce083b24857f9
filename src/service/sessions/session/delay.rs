//! Delayed spectators: a game may delay everything a spectator can see by a
//! number of plies or of seconds (docs/SPECTATOR.md, "Delayed spectators").
//! The seats and the platform see the live game. This module is the one
//! filter every spectator surface goes through: it says how far a
//! spectator may see now ([`Release`]), and makes the views, legal moves
//! and record of that point, so no surface can show more.
//!
//! The option is the reserved label [`DELAY_LABEL`] (`spectator-delay`):
//! labels are stored, replicated and recovered with the game, a
//! tournament's labels are given to each of its games, and the option is
//! public (anyone may know that a game is delayed, and by how much).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time;

use super::super::SessionError;
use super::super::clock::{Clock, ClockReading};
use super::event::{Event, EventKind};
use super::seats::Role;
use super::view::SessionView;
use super::{Session, State};
use crate::games::{Game, MoveReport, Seat, SeatSet, Viewer};

/// The label that delays a game's spectators: `N plies` (or `N ply`) or
/// `N s` (seconds); `0 plies` or `0 s` is no delay.
pub const DELAY_LABEL: &str = "spectator-delay";

/// Longest ply delay.
pub(super) const MAX_DELAY_PLIES: u32 = 10_000;

/// Longest time delay, in seconds (a day).
pub(super) const MAX_DELAY_SECS: u64 = 24 * 3600;

/// How far behind the live game spectators are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpectatorDelay {
    /// Ply `n - N` is shown once ply `n` is played; the rest once the game
    /// is over.
    Plies(u32),
    /// Each move and the end are shown this long after they happened.
    Time(Duration),
}

impl SpectatorDelay {
    /// Reads a label's value: `N plies`, `N ply`, `N s` or `Ns`; `None`
    /// for a zero delay.
    pub fn parse(text: &str) -> Result<Option<SpectatorDelay>, String> {
        let bad = || {
            format!(
                "label `{DELAY_LABEL}`: `{text}` is not a delay (`N plies` up to {MAX_DELAY_PLIES}, or `N s` up to {MAX_DELAY_SECS})"
            )
        };
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        let (number, unit) = text.split_at(digits);
        let unit = unit.strip_prefix(' ').unwrap_or(unit);
        let n: u64 = number.parse().map_err(|_| bad())?;
        let delay = match unit {
            "ply" | "plies" if n <= u64::from(MAX_DELAY_PLIES) => {
                SpectatorDelay::Plies(u32::try_from(n).map_err(|_| bad())?)
            }
            "s" if n <= MAX_DELAY_SECS => SpectatorDelay::Time(Duration::from_secs(n)),
            _ => return Err(bad()),
        };
        Ok(match delay {
            SpectatorDelay::Plies(0) => None,
            SpectatorDelay::Time(d) if d.is_zero() => None,
            d => Some(d),
        })
    }

    /// A delay of `n` plies (`None` for zero), refused past the longest.
    pub fn of_plies(n: u32) -> Result<Option<SpectatorDelay>, String> {
        if n > MAX_DELAY_PLIES {
            return Err(format!("{n} plies is longer than {MAX_DELAY_PLIES}"));
        }
        Ok((n > 0).then_some(SpectatorDelay::Plies(n)))
    }

    /// A delay of `n` seconds (`None` for zero), refused past the longest.
    pub fn of_seconds(n: u32) -> Result<Option<SpectatorDelay>, String> {
        if u64::from(n) > MAX_DELAY_SECS {
            return Err(format!("{n} s is longer than {MAX_DELAY_SECS} s"));
        }
        Ok((n > 0).then(|| SpectatorDelay::Time(Duration::from_secs(u64::from(n)))))
    }

    /// The delay as the label's value says it (`3 plies`, `1 ply`, `30 s`),
    /// which [`SpectatorDelay::parse`] reads back.
    pub fn label_value(self) -> String {
        match self {
            SpectatorDelay::Plies(1) => "1 ply".to_string(),
            SpectatorDelay::Plies(n) => format!("{n} plies"),
            SpectatorDelay::Time(d) => format!("{} s", d.as_secs()),
        }
    }

    /// The delay `labels` ask for, if any (a value that is not a delay,
    /// which [`SpectatorDelay::check`] refuses at creation, is none).
    pub fn of_labels(labels: &BTreeMap<String, String>) -> Option<SpectatorDelay> {
        labels
            .get(DELAY_LABEL)
            .and_then(|v| SpectatorDelay::parse(v).ok().flatten())
    }

    /// Refuses a `spectator-delay` label that is not a delay.
    pub fn check(labels: &BTreeMap<String, String>) -> Result<(), SessionError> {
        match labels.get(DELAY_LABEL).map(|v| SpectatorDelay::parse(v)) {
            Some(Err(description)) => Err(SessionError::InvalidArgument {
                field: "labels",
                description,
            }),
            _ => Ok(()),
        }
    }
}

/// A delayed game's delay, and when its stored moves were played.
#[derive(Debug)]
pub(super) struct Delayed {
    delay: SpectatorDelay,
    /// A time delay of a game read back from storage: when each stored
    /// move was accepted, from the time stored with it. The restored clock
    /// counts the moves from the restart (the downtime is not charged),
    /// which would show a spectator again, later, what it saw before.
    stored: Box<[time::Instant]>,
}

impl Delayed {
    /// The delay of a game whose stored moves were accepted at `played_ms`
    /// (Unix ms; empty for a new game), seen at `tick`.
    pub(super) fn new(delay: SpectatorDelay, played_ms: &[i64], tick: time::Instant) -> Delayed {
        let stored = match delay {
            SpectatorDelay::Time(_) if !played_ms.is_empty() => {
                let wall = crate::service::storage::unix_ms(std::time::SystemTime::now());
                played_ms
                    .iter()
                    .map(|&ms| {
                        let age = u64::try_from(wall.saturating_sub(ms)).unwrap_or(0);
                        // A move older than this instant can represent is
                        // shown as if played now: later, never earlier.
                        tick.checked_sub(Duration::from_millis(age)).unwrap_or(tick)
                    })
                    .collect()
            }
            _ => Box::default(),
        };
        Delayed { delay, stored }
    }
}

/// How far a spectator may see a delayed game now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::service::sessions) struct Release {
    /// Moves shown.
    pub(in crate::service::sessions) ply: u32,
    /// Whether the end is shown.
    pub(in crate::service::sessions) over: bool,
    /// When more will be shown without another move (a time delay);
    /// `None` when only a move or the end can show more.
    pub(in crate::service::sessions) next: Option<time::Instant>,
}

impl Release {
    /// Whether `event` may be shown.
    pub(in crate::service::sessions) fn covers(&self, event: &Event) -> bool {
        match event.kind {
            EventKind::MoveApplied { .. } => event.ply <= self.ply,
            EventKind::GameOver { .. } => self.over,
        }
    }
}

impl Session {
    /// The delay of this game's spectators, if any.
    pub fn spectator_delay(&self) -> Option<SpectatorDelay> {
        self.delay.as_ref().map(|d| d.delay)
    }

    /// Who a reader of the game is: the platform (with `platform`, a key
    /// with `games:admin`) without a token is [`Role::Platform`]`(None)`,
    /// shown the live game as a spectator sees it; with a token, the seat
    /// it proves, as for [`Session::role_of`]; anyone else a spectator.
    pub fn reader_role(&self, token: &str, platform: bool) -> Result<Role, SessionError> {
        if platform && token.is_empty() {
            return Ok(Role::Platform(None));
        }
        self.role_of(token, false)
    }

    /// The delay `role` is kept behind by: a spectator's of a delayed game
    /// (not of one read back from storage long after it ended).
    pub(super) fn delay_for(&self, role: Role) -> Option<SpectatorDelay> {
        self.spectator_delay()
            .filter(|_| role == Role::Spectator && !self.archived)
    }

    /// How far a spectator sees now; `None` when `role` sees the live game.
    pub(in crate::service::sessions) fn release_for(&self, role: Role) -> Option<Release> {
        let delay = self.delay_for(role)?;
        let st = self.lock_settled();
        Some(self.release_locked(&st, delay, time::Instant::now()))
    }

    /// How far a spectator kept `delay` behind sees at `now`.
    ///
    /// A ply delay shows ply `n - N` at ply `n`, and everything once the
    /// game is over: the delay keeps a watcher from relaying moves to a
    /// player, which cannot matter once nobody plays. A time delay shows
    /// each move `d` after it was accepted and the end `d` after the game
    /// ended (a move that ends the game shows its end with it). Moves
    /// without a time (imported) count as played when the game started;
    /// the moves of a game read back from storage count from the times
    /// stored with them ([`Delayed`]).
    pub(super) fn release_locked(
        &self,
        st: &State,
        delay: SpectatorDelay,
        now: time::Instant,
    ) -> Release {
        let current = st.game.ply();
        let finished = st.finished_at.is_some();
        match delay {
            SpectatorDelay::Plies(n) => Release {
                ply: if finished {
                    current
                } else {
                    current.saturating_sub(n)
                },
                over: finished,
                next: None,
            },
            SpectatorDelay::Time(d) => {
                let started = now.checked_sub(st.clock.since_start(now)).unwrap_or(now);
                let stamps = st.clock.stamps();
                let unstamped = (current as usize).saturating_sub(stamps.len());
                let stored: &[time::Instant] = self.delay.as_ref().map_or(&[], |s| &s.stored);
                // When move `p` (from 1) was accepted.
                let at = |p: u32| -> time::Instant {
                    let i = p as usize - 1;
                    if let Some(t) = stored.get(i) {
                        return *t;
                    }
                    match i.checked_sub(unstamped) {
                        Some(j) => stamps.get(j).map_or(started, |s| started + s.at),
                        None => started,
                    }
                };
                let mut ply = 0;
                while ply < current && at(ply + 1) + d <= now {
                    ply += 1;
                }
                let ended_by_move = st.log.last_move().is_some_and(|r| r.outcome.is_some());
                let end = st.finished_at.map(time::Instant::from_std);
                let over = ply == current
                    && (end.is_some_and(|e| e + d <= now) || (finished && ended_by_move));
                let next = if ply < current {
                    Some(at(ply + 1) + d)
                } else if !over {
                    end.map(|e| e + d)
                } else {
                    None
                };
                Release { ply, over, next }
            }
        }
    }

    /// The view of a delayed game a spectator may have at `release`, with
    /// its state when `with_state`. Beyond what [`Session::view_at`] shows
    /// of an earlier ply: no draw offer and no presence (a seat leaving
    /// would tell the end early), and the clocks as the last shown move
    /// left them.
    pub(super) fn released_view_locked(
        &self,
        st: &State,
        release: Release,
        viewer: Viewer,
        with_state: bool,
    ) -> SessionView {
        let current = st.game.ply();
        if release.over {
            return self.view_locked(st, with_state, viewer);
        }
        let mut view = if release.ply < current {
            match self.view_at_locked(st, release.ply, "ply", viewer) {
                Ok(view) => view,
                Err(_) => self.view_locked(st, with_state, viewer),
            }
        } else {
            let mut view = self.view_locked(st, with_state, viewer);
            if view.outcome.is_some() {
                // Over, but the end is not shown yet: the game as it stood
                // after its last move.
                view.outcome = None;
                // The policy's word on the end is part of the end.
                view.failure.ending = None;
                view.setup = view.setup.map(|mut s| {
                    s.seed = None;
                    s
                });
                view.to_move = self.released_game(st, release).and_then(|g| g.to_move());
                view.snapshot = if with_state {
                    st.game.snapshot_at(current, viewer)
                } else {
                    None
                };
            }
            view
        };
        view.clock = self.released_clock(st, release.ply);
        if !with_state {
            view.snapshot = None;
        }
        view.draw_offers = SeatSet::EMPTY;
        view.presence = Vec::new();
        view
    }

    /// The clocks a spectator is shown at ply `ply`: as the move of that
    /// ply left them (as [`Session::view_at`] shows an earlier ply), full
    /// before the first move. Never read now: a clock running would tell
    /// whether a move not yet shown was played.
    fn released_clock(&self, st: &State, ply: u32) -> ClockReading {
        match ply.checked_sub(1).and_then(|p| st.log.get(p as usize)) {
            Some(event) => event.clock().clone(),
            None => {
                let first = st
                    .log
                    .move_at(0)
                    .map(|r| r.seat)
                    .or_else(|| st.game.rules().rules().start(st.game.setup()).to_move())
                    .unwrap_or(Seat::FIRST);
                let now = time::Instant::now();
                Clock::new(st.clock.control(), self.seats.count(), first, now).reading(now)
            }
        }
    }

    /// The view `role` may have now: the live one, or for a spectator of a
    /// delayed game the view at what is shown of it.
    pub fn view_for(&self, role: Role, with_state: bool) -> SessionView {
        let st = self.lock_settled();
        match self.delay_for(role) {
            None => self.view_locked(&st, with_state, role.viewer()),
            Some(delay) => {
                let release = self.release_locked(&st, delay, time::Instant::now());
                self.released_view_locked(&st, release, role.viewer(), with_state)
            }
        }
    }

    /// The delayed view of a spectator of a delayed game; `None` for any
    /// other reader (who reads the live game).
    pub fn delayed_view(&self, role: Role) -> Option<SessionView> {
        self.delay_for(role)?;
        Some(self.view_for(role, true))
    }

    /// [`Session::view_with_events`] as a spectator may see it: the shown
    /// view and the events up to it.
    pub fn spectator_view_with_events(&self) -> (SessionView, Vec<Arc<Event>>) {
        let Some(delay) = self.delay_for(Role::Spectator) else {
            return self.view_with_events();
        };
        let st = self.lock_settled();
        let release = self.release_locked(&st, delay, time::Instant::now());
        let view = self.released_view_locked(&st, release, Viewer::Spectator, true);
        let shown: Vec<Arc<Event>> = st
            .log
            .all()
            .iter()
            .filter(|e| release.covers(e))
            .cloned()
            .collect();
        let events = self.events_for(&st, &shown, Viewer::Spectator);
        (view, events)
    }

    /// The view after `ply` moves (the shown one when `None`) of a
    /// spectator at `release`: refused beyond what is shown, naming the
    /// shown ply as the game's (the live one is not the spectator's to
    /// know).
    pub(super) fn released_view_at_locked(
        &self,
        st: &State,
        release: Release,
        ply: Option<u32>,
        field: &'static str,
        viewer: Viewer,
    ) -> Result<SessionView, SessionError> {
        match ply {
            Some(asked) if asked > release.ply => Err(SessionError::OutOfRange {
                field,
                asked,
                current: release.ply,
            }),
            Some(asked) if asked < release.ply => {
                let mut view = self.view_at_locked(st, asked, field, viewer)?;
                view.draw_offers = SeatSet::EMPTY;
                view.presence = Vec::new();
                Ok(view)
            }
            _ => Ok(self.released_view_locked(st, release, viewer, true)),
        }
    }

    /// The game as a spectator at `release` may know it, replayed from its
    /// start (`None` once the end is shown: the game itself).
    fn released_game(&self, st: &State, release: Release) -> Option<Box<dyn Game>> {
        if release.over {
            return None;
        }
        let moves: Vec<_> = (0..release.ply)
            .filter_map(|p| st.log.move_at(p).map(|r| r.detail.to_input()))
            .collect();
        match crate::games::replay_moves(&st.game.rules(), st.game.setup(), &moves) {
            Ok(replayed) => Some(replayed.game),
            // A log that does not replay cannot be: show the start.
            Err(_) => Some(st.game.rules().rules().start(st.game.setup())),
        }
    }

    /// The record a spectator of a delayed game may read now (`None` for
    /// a reader of the live game): the moves shown, and the end once shown.
    pub(super) fn released_record(&self, role: Role, tags: &[(String, String)]) -> Option<String> {
        let delay = self.delay_for(role)?;
        let st = self.lock_settled();
        let release = self.release_locked(&st, delay, time::Instant::now());
        Some(match self.released_game(&st, release) {
            Some(game) => game.record(tags, role.viewer()),
            None => st.game.record(tags, role.viewer()),
        })
    }

    /// The legal moves a spectator of a delayed game is shown (`None` for a
    /// reader of the live game): those of the position shown, as
    /// [`Session::legal_moves`] answers (the ply, who moves, `seat`'s moves
    /// or every move without `seat`).
    pub fn released_legal_moves(
        &self,
        seat: Option<Seat>,
        role: Role,
    ) -> Option<(u32, Option<Seat>, Vec<MoveReport>)> {
        let delay = self.delay_for(role)?;
        let st = self.lock_settled();
        let release = self.release_locked(&st, delay, time::Instant::now());
        let Some(game) = self.released_game(&st, release) else {
            drop(st);
            let (ply, to_move, moves) = self.legal_moves(seat, role);
            return Some((ply, to_move, moves.to_vec()));
        };
        drop(st);
        let to_move = game.to_move();
        let moves = match (to_move, seat) {
            (Some(m), Some(s)) if m != s => Vec::new(),
            _ => game
                .legal_moves()
                .into_iter()
                .map(|m| MoveReport {
                    detail: game.redact(&m.detail, role.viewer()),
                    ..m
                })
                .collect(),
        };
        Some((game.ply(), to_move, moves))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_read_from_their_label() {
        assert_eq!(
            SpectatorDelay::parse("3 plies"),
            Ok(Some(SpectatorDelay::Plies(3)))
        );
        assert_eq!(
            SpectatorDelay::parse("1 ply"),
            Ok(Some(SpectatorDelay::Plies(1)))
        );
        assert_eq!(
            SpectatorDelay::parse("30 s"),
            Ok(Some(SpectatorDelay::Time(Duration::from_secs(30))))
        );
        assert_eq!(
            SpectatorDelay::parse("2s"),
            Ok(Some(SpectatorDelay::Time(Duration::from_secs(2))))
        );
        assert_eq!(SpectatorDelay::parse("0 plies"), Ok(None));
        assert_eq!(SpectatorDelay::parse("0 s"), Ok(None));
        for bad in [
            "",
            "s",
            "3",
            "3 minutes",
            "-1 s",
            " 3 s",
            "3  s",
            "99999999999 s",
            "10001 plies",
            "86401 s",
        ] {
            assert!(SpectatorDelay::parse(bad).is_err(), "{bad:?}");
        }
        let labels = |v: &str| BTreeMap::from([(DELAY_LABEL.to_string(), v.to_string())]);
        assert!(SpectatorDelay::check(&labels("3 weeks")).is_err());
        assert!(SpectatorDelay::check(&labels("3 plies")).is_ok());
        assert!(SpectatorDelay::check(&BTreeMap::new()).is_ok());
        assert_eq!(
            SpectatorDelay::of_labels(&labels("4 plies")),
            Some(SpectatorDelay::Plies(4))
        );
    }
}
