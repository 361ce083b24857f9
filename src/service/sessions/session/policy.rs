//! The failure policy of a session (docs/POLICIES.md): what the referee
//! does when a seat's flag falls, when it submits a move the rules refuse,
//! and when the seat to move has left. A substituted move is played by the
//! normal move path ([`Session::decide_move`], [`Session::apply_move`], or
//! the whole of `try_submit` for a refused move), so watchers, storage and
//! the clock see a normal move; this module only decides when, draws the
//! move and remembers which moves were substituted.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio::time;

use super::super::SessionError;
use super::super::policy::{
    FailureAction, FailureKind, FailurePolicy, PAUSE_EXHAUSTED, SUBSTITUTION_CAP, Substitution,
    pause_used, pick, substitution_seed,
};
use super::event::MoveReceipt;
use super::{Session, State};
use crate::games::{MoveError, RefereeAction, Seat, Viewer};
use crate::service::storage::Write;

/// What a session keeps of its failure policy.
#[derive(Debug, Default)]
pub(super) struct PolicyState {
    policy: FailurePolicy,
    /// The seed the substitutions are drawn from ([`substitution_seed`]).
    seed: [u8; 32],
    /// Every substitution, in ply order.
    substitutions: Vec<Substitution>,
    /// Pause time used, per seat.
    paused: Vec<Duration>,
    /// A flag being held: the seat, the ply of its turn, when it fell.
    held: Option<(Seat, u32, time::Instant)>,
    /// Why the policy ended the game, if it did.
    ending: Option<&'static str>,
}

/// A session's [`PolicyState`], held only once it differs from the state
/// of a game without a policy (every failure loses, nothing substituted,
/// held or used): most games never need one, and an empty slot is one
/// pointer (docs/BENCHMARKS.md, "Memory per idle game"). It reads as that
/// idle state while empty, and is made by its first change.
#[derive(Debug, Default)]
pub(super) struct PolicySlot(Option<Box<PolicyState>>);

/// What an empty [`PolicySlot`] reads as.
static IDLE: LazyLock<PolicyState> = LazyLock::new(PolicyState::default);

impl PolicySlot {
    /// A slot holding `state`, or nothing when it is the idle state.
    fn new(state: PolicyState) -> PolicySlot {
        PolicySlot((!state.is_idle()).then(|| Box::new(state)))
    }

    /// Whether the state is held.
    #[cfg(test)]
    pub(super) fn is_made(&self) -> bool {
        self.0.is_some()
    }
}

impl Deref for PolicySlot {
    type Target = PolicyState;

    fn deref(&self) -> &PolicyState {
        self.0.as_deref().unwrap_or(&IDLE)
    }
}

impl DerefMut for PolicySlot {
    fn deref_mut(&mut self) -> &mut PolicyState {
        self.0.get_or_insert_with(Box::default)
    }
}

/// What the failure policy shows of a game, as one viewer may see it.
#[derive(Debug, Clone, Default)]
pub struct FailureView {
    /// The policy.
    pub policy: FailurePolicy,
    /// The substituted moves up to the view's ply, notations redacted for
    /// the viewer.
    pub substitutions: Vec<Substitution>,
    /// Why the policy ended the game ([`SUBSTITUTION_CAP`],
    /// [`PAUSE_EXHAUSTED`]).
    pub ending: Option<&'static str>,
}

/// What a falling flag comes to under the policy.
pub(super) enum Flag {
    /// A move was substituted: the next turn runs.
    Played,
    /// The flag is held (PAUSE): nothing ends yet.
    Held,
    /// The seat loses on time.
    Falls,
}

/// The refusals that are rule failures of the seat: not a turn or a game
/// that is not there any more (`NOT_YOUR_TURN`, `GAME_OVER`); a stale
/// `expected_ply` or a malformed move are other errors altogether.
fn rule_failure(reason: &str) -> bool {
    !matches!(reason, "NOT_YOUR_TURN" | "GAME_OVER")
}

impl PolicyState {
    /// Whether this is the state of a game without a policy, which
    /// nothing reads but its defaults: the seed and the pause time are
    /// only used by a policy that substitutes or pauses. (Every field is
    /// named, so a new one must be decided on here.)
    fn is_idle(&self) -> bool {
        let PolicyState {
            policy,
            seed: _,
            substitutions,
            paused,
            held,
            ending,
        } = self;
        *policy == FailurePolicy::default()
            && substitutions.is_empty()
            && paused.iter().all(Duration::is_zero)
            && held.is_none()
            && ending.is_none()
    }

    fn used(&self, seat: Seat) -> u32 {
        let n = self.substitutions.iter().filter(|s| s.seat == seat).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn can_substitute(&self, seat: Seat) -> bool {
        self.used(seat) < self.policy.max_substitutions
    }

    fn pause_left(&self, seat: Seat) -> Duration {
        let used = self.paused.get(seat.index()).copied().unwrap_or_default();
        self.policy.pause.saturating_sub(used)
    }

    /// The mark to store with the move `seat` makes at `ply` (the ply
    /// after it) when it is the substitution decided for that ply: the
    /// move the policy chose, not one the seat got in meanwhile.
    pub(super) fn mark(&self, ply: u32, seat: Seat, notation: &str) -> Option<String> {
        self.substitutions
            .iter()
            .rev()
            .find(|s| s.ply == ply && s.seat == seat && s.detail.notation == notation)
            .map(Substitution::mark)
    }
}

impl Session {
    /// Sets the game's failure policy and the substitutions its stored
    /// moves were (docs/POLICIES.md, "Restarts"): at creation, before the
    /// session is held, and when a stored game is read back (recovered,
    /// taken over, followed, listed). The pause time used is what the
    /// moves' times say ([`pause_used`]).
    /// The session's timer, started when it is held, runs for a disconnect
    /// policy also without a clock.
    pub(in crate::service::sessions) fn init_policy(
        &self,
        policy: FailurePolicy,
        substitutions: Vec<Substitution>,
    ) {
        let mut st = self.lock();
        let paused = pause_used(st.clock.control(), self.seats.count(), st.clock.stamps());
        st.policy = PolicySlot::new(PolicyState {
            policy,
            seed: substitution_seed(self.id.as_str()),
            substitutions,
            paused,
            ..PolicyState::default()
        });
        drop(st);
        self.timer.wake();
    }

    /// A follower's substitutions, as the database has them now (the
    /// policy does not act on a follower: its owner's does).
    pub(in crate::service::sessions) fn note_substitutions(
        &self,
        substitutions: Vec<Substitution>,
    ) {
        let mut st = self.lock();
        // Nothing to note keeps the slot empty.
        if !(substitutions.is_empty() && st.policy.substitutions.is_empty()) {
            st.policy.substitutions = substitutions;
        }
    }

    /// Whether the policy acts on disconnects: the timer then runs also
    /// without a clock.
    pub(super) fn watches_disconnects(&self) -> bool {
        self.lock().policy.policy.on_disconnect != FailureAction::Lose
    }

    /// The game's failure policy.
    pub fn failure_policy(&self) -> FailurePolicy {
        self.lock().policy.policy
    }

    /// What the policy shows of the game after `ply` moves (now: `None`)
    /// to `viewer`.
    pub(super) fn failure_view(&self, st: &State, viewer: Viewer, ply: Option<u32>) -> FailureView {
        let upto = ply.unwrap_or(u32::MAX);
        let substitutions = st
            .policy
            .substitutions
            .iter()
            .filter(|s| s.ply <= upto && s.ply <= st.game.ply())
            .map(|s| Substitution {
                detail: st.game.redact(&s.detail, viewer),
                ..s.clone()
            })
            .collect();
        FailureView {
            policy: st.policy.policy,
            substitutions,
            ending: if ply.is_none() {
                st.policy.ending
            } else {
                None
            },
        }
    }

    /// The substitution that made ply `ply`, if that move was one.
    pub fn substitution_at(&self, ply: u32) -> Option<Substitution> {
        let st = self.lock();
        st.policy
            .substitutions
            .iter()
            .find(|s| s.ply == ply && ply <= st.game.ply())
            .cloned()
    }

    /// When the policy needs the timer next, given the clock's deadline
    /// `clock` (the timer's wake-up): a held flag moves it to the end of
    /// the pause; a seat to move that has left adds the instant its
    /// absence reaches the disconnect time.
    pub(super) fn policy_deadline(
        &self,
        st: &State,
        clock: Option<(time::Instant, Option<Seat>)>,
    ) -> Option<time::Instant> {
        let clock = clock.map(|(at, seat)| match (st.policy.held, seat) {
            (Some((held, ply, fell)), Some(s)) if held == s && ply == st.game.ply() => {
                fell + st.policy.pause_left(s)
            }
            _ => at,
        });
        let away = self.disconnect_deadline(st);
        match (clock, away) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the seat to move will have been gone for the disconnect time,
    /// if the policy substitutes for it then.
    fn disconnect_deadline(&self, st: &State) -> Option<time::Instant> {
        if st.policy.policy.on_disconnect != FailureAction::Substitute {
            return None;
        }
        let seat = st.game.to_move()?;
        if !st.log.movers().contains(seat) {
            return None;
        }
        let now = time::Instant::now();
        let p = self
            .presence
            .read(self.seats.count(), now)
            .get(seat.index())
            .copied()?;
        if p.connected {
            return None;
        }
        let after = st.policy.policy.disconnect_after;
        Some(now + after.saturating_sub(p.away_for))
    }

    /// Charges the pause a held flag used once its seat has moved (or the
    /// game ended), counted to the move's time.
    pub(super) fn charge_pause(&self, st: &mut State) {
        let Some((seat, ply, fell)) = st.policy.held else {
            return;
        };
        if st.game.ply() == ply && st.game.outcome().is_none() {
            return;
        }
        st.policy.held = None;
        let fell_at = st.clock.since_start(fell);
        let moved_at = st
            .clock
            .stamps()
            .last()
            .filter(|s| s.mover == seat)
            .map(|s| s.at);
        if let Some(at) = moved_at
            && let Some(used) = st.policy.paused.get_mut(seat.index())
        {
            *used += at.saturating_sub(fell_at);
        }
    }

    /// What `seat`'s flag falling at `fell` (seen at `now`) comes to: a
    /// seat that has left for the disconnect time gets the disconnect
    /// policy, any other the timeout policy. Sets the policy's ending when
    /// the seat loses for having used up what the policy allowed.
    pub(super) fn on_flag(
        &self,
        st: &mut State,
        seat: Seat,
        fell: time::Instant,
        now: time::Instant,
    ) -> Flag {
        let policy = st.policy.policy;
        let away = self
            .presence
            .read(self.seats.count(), now)
            .get(seat.index())
            .is_some_and(|p| !p.connected && p.away_for >= policy.disconnect_after);
        let (kind, action) = match policy.on_disconnect {
            FailureAction::Lose => (FailureKind::Timeout, policy.on_timeout),
            a if away => (FailureKind::Disconnect, a),
            _ => (FailureKind::Timeout, policy.on_timeout),
        };
        match action {
            FailureAction::Lose => Flag::Falls,
            FailureAction::Substitute => {
                if !st.policy.can_substitute(seat) {
                    st.policy.ending = Some(SUBSTITUTION_CAP);
                    return Flag::Falls;
                }
                if self.substitute(st, seat, kind, None, fell) {
                    Flag::Played
                } else {
                    Flag::Falls
                }
            }
            FailureAction::Pause => {
                let left = st.policy.pause_left(seat);
                if now < fell + left {
                    st.policy.held = Some((seat, st.game.ply(), fell));
                    return Flag::Held;
                }
                if let Some(used) = st.policy.paused.get_mut(seat.index()) {
                    *used = policy.pause;
                }
                st.policy.held = None;
                st.policy.ending = Some(PAUSE_EXHAUSTED);
                Flag::Falls
            }
        }
    }

    /// Plays for the seat to move while it has been gone for the
    /// disconnect time (SUBSTITUTE), turn after turn; past its cap the game
    /// ends `ABANDONED` against it. Only seats that have moved: a seat that
    /// never started is aborted or beaten by its first-move deadline.
    pub(super) fn settle_disconnect(&self, st: &mut State, now: time::Instant) {
        let policy = st.policy.policy;
        if policy.on_disconnect != FailureAction::Substitute {
            return;
        }
        while st.game.outcome().is_none() {
            let Some(seat) = st.game.to_move() else {
                return;
            };
            if !st.log.movers().contains(seat) {
                return;
            }
            let Some(p) = self
                .presence
                .read(self.seats.count(), now)
                .get(seat.index())
                .copied()
            else {
                return;
            };
            if p.connected || p.away_for < policy.disconnect_after {
                return;
            }
            if !st.policy.can_substitute(seat) {
                st.policy.ending = Some(SUBSTITUTION_CAP);
                self.conclude_later(st, RefereeAction::Abandoned { loser: seat }, now);
                return;
            }
            if !self.substitute(st, seat, FailureKind::Disconnect, None, now) {
                return;
            }
        }
    }

    /// The stored row of the game's end at `ply` with `outcome`, with the
    /// policy's ending when the policy ended it (docs/POLICIES.md,
    /// "Restarts").
    pub(super) fn finished_row(
        &self,
        st: &State,
        outcome: &crate::games::Outcome,
        ply: u32,
    ) -> crate::service::storage::OutcomeRow {
        let mut row = self.handoff.end_row("finished", Some(outcome), ply);
        row.failure_ending = st.policy.ending.map(str::to_string);
        row
    }

    /// The policy's ending of a game read back from storage, as stored
    /// (an ending this version does not name is none).
    pub(in crate::service::sessions) fn note_failure_ending(&self, stored: Option<&str>) {
        let ending = [SUBSTITUTION_CAP, PAUSE_EXHAUSTED]
            .into_iter()
            .find(|e| Some(*e) == stored);
        if ending.is_some() {
            self.lock().policy.ending = ending;
        }
    }

    /// Ends the game by `ending` at `now` under the lock, stored in the
    /// background (a deadline decided it, as a flag's fall).
    pub(super) fn conclude_later(&self, st: &mut State, ending: RefereeAction, now: time::Instant) {
        st.clock.stop(now);
        if let Ok(outcome) = st.game.conclude(ending) {
            let end = self.finished_row(st, &outcome, st.game.ply());
            self.finish(st, outcome);
            self.handoff.persist_later(Write::End(end));
        }
    }

    /// Plays a legal move drawn from the game's seed for `seat` (to move)
    /// at `at`, under the lock, stored in the background as a flag's fall
    /// is: the deadline decided it. `false` when there is no move to play.
    fn substitute(
        &self,
        st: &mut State,
        seat: Seat,
        kind: FailureKind,
        refused: Option<&'static str>,
        at: time::Instant,
    ) -> bool {
        let legal = st.game.legal_moves();
        if legal.is_empty() || st.game.to_move() != Some(seat) {
            return false;
        }
        let ply = st.game.ply() + 1;
        let chosen = legal[pick(&st.policy.seed, ply, legal.len())]
            .detail
            .clone();
        // Marked before it is decided: the move's write carries the mark.
        st.policy.substitutions.push(Substitution {
            ply,
            seat,
            kind,
            refused,
            detail: chosen.clone(),
        });
        let Ok(decided) = self.decide_move(st, seat, chosen.to_input(), None, at) else {
            st.policy.substitutions.pop();
            return false;
        };
        self.handoff.persist_later(decided.write);
        let report = self.adopt_move(st, decided.after, &decided.mv, decided.report);
        st.draw_offers = decided.draw_after;
        if let Some(last) = st.policy.substitutions.last_mut() {
            last.detail = report.detail.clone();
        }
        self.count_substitution(kind);
        self.apply_move(st, &report, at);
        true
    }

    fn count_substitution(&self, kind: FailureKind) {
        metrics::counter!(
            "punct_referee_substitutions_total",
            "game" => self.game_name,
            "kind" => kind.name(),
        )
        .increment(1);
    }

    /// What a move `seat` submitted at `expected_ply` comes to when the
    /// game refused it (`result`): under `on_illegal_move` SUBSTITUTE a
    /// rule refusal has the referee play a legal move drawn from the seed
    /// instead (stored before it is answered, through the normal move
    /// path), and past the cap the seat loses (`RESIGNATION`, the policy's
    /// ending `SUBSTITUTION_CAP`) and the refusal stands. Anything else is
    /// answered as it is.
    pub(super) async fn after_refusal(
        self: &Arc<Self>,
        seat: Seat,
        expected_ply: u32,
        result: Result<MoveReceipt, SessionError>,
    ) -> Result<MoveReceipt, SessionError> {
        let reason = match &result {
            Err(SessionError::Rejected(MoveError::Illegal { reason, .. })) => *reason,
            _ => return result,
        };
        if !rule_failure(reason) {
            return result;
        }
        let chosen = {
            let mut st = self.lock_settled();
            if st.policy.policy.on_illegal_move != FailureAction::Substitute
                || st.game.outcome().is_some()
                || st.game.ply() != expected_ply
                || st.game.to_move() != Some(seat)
            {
                return result;
            }
            if !st.policy.can_substitute(seat) {
                st.policy.ending = Some(SUBSTITUTION_CAP);
                None
            } else {
                let legal = st.game.legal_moves();
                if legal.is_empty() {
                    return result;
                }
                let ply = expected_ply + 1;
                let chosen = legal[pick(&st.policy.seed, ply, legal.len())]
                    .detail
                    .clone();
                // Marked before it is played, so that no watcher sees the
                // move unmarked; shown only once the game reaches it.
                st.policy.substitutions.push(Substitution {
                    ply,
                    seat,
                    kind: FailureKind::IllegalMove,
                    refused: Some(reason),
                    detail: chosen.clone(),
                });
                Some(chosen)
            }
        };
        let Some(chosen) = chosen else {
            let this = self.clone();
            let ended = async move {
                let _writing = this.handoff.turn().await?;
                this.conclude_stored(Viewer::Seat(seat), |st| {
                    if st.game.outcome().is_some() || st.game.ply() != expected_ply {
                        return Err(SessionError::StalePly {
                            expected: expected_ply,
                            current: st.game.ply(),
                        });
                    }
                    Ok(RefereeAction::Resignation { loser: seat })
                })
                .await
            }
            .await;
            if ended.is_err() {
                self.lock().policy.ending = None;
            }
            return result;
        };
        let played = self
            .try_submit(seat, chosen.to_input(), expected_ply, None)
            .await;
        match played {
            Ok(receipt) => {
                self.count_substitution(FailureKind::IllegalMove);
                Ok(receipt)
            }
            Err(_) => {
                // Not played (the game moved on meanwhile): no mark.
                let ply = expected_ply + 1;
                self.lock()
                    .policy
                    .substitutions
                    .retain(|s| !(s.ply == ply && s.kind == FailureKind::IllegalMove));
                result
            }
        }
    }
}
