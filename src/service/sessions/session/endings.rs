//! Endings a seat or the platform asks for: resignation, agreed draws,
//! aborts and victory claims.

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use super::super::SessionError;
use super::seats::Role;
use super::view::SessionView;
use super::{Session, State};
use crate::games::{MoveError, Outcome, RefereeAction, Seat, SeatSet, Viewer};
use crate::service::storage::Write;

/// `GAME_OVER`, without saying how.
fn game_over() -> SessionError {
    SessionError::Rejected(MoveError::Illegal {
        reason: "GAME_OVER",
        message: "the game is over".into(),
    })
}

/// Runs `change` to its end in its own task (when there is a runtime), so
/// that a caller going away mid-write cannot leave a change stored but not
/// applied; the call's span goes with it.
async fn to_the_end<T: Send + 'static>(
    change: impl Future<Output = Result<T, SessionError>> + Send + 'static,
) -> Result<T, SessionError> {
    let change = change.instrument(tracing::Span::current());
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime.spawn(change).await.unwrap_or_else(|e| {
            Err(SessionError::Unavailable(format!(
                "the change was interrupted: {e}"
            )))
        }),
        Err(_) => change.await,
    }
}

impl Session {
    /// Ends the game with the ending `decide` picks (or refuses), stored
    /// before it is applied; answers with `viewer`'s view. The caller holds
    /// the write turn.
    pub(super) async fn conclude_stored(
        &self,
        viewer: Viewer,
        decide: impl FnOnce(&State) -> Result<RefereeAction, SessionError>,
    ) -> Result<SessionView, SessionError> {
        let (game, outcome, write) = {
            let mut st = self.lock_settled();
            let ending = decide(&st)?;
            let mut game = st.game.clone_box();
            let outcome = game.conclude(ending)?;
            let write = Write::End(self.finished_row(&st, &outcome, game.ply()));
            st.pending = true;
            (game, outcome, write)
        };
        let mut st = self.end_pending(self.handoff.persist(write).await)?;
        st.game = game;
        self.finish(&mut st, outcome);
        Ok(self.view_locked(&st, true, viewer))
    }

    /// The seat `role` plays resigns; the game's rules say who wins (with
    /// two seats: the other).
    pub async fn resign(self: &Arc<Self>, role: Role) -> Result<SessionView, SessionError> {
        let seat = self.seat_of(role)?;
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.handoff.turn().await?;
            this.conclude_stored(Viewer::Seat(seat), |_| {
                Ok(RefereeAction::Resignation { loser: seat })
            })
            .await
        })
        .await
    }

    /// The seat `role` plays offers a draw, or joins the standing offer.
    /// The draw is agreed (`true`) once every seat has offered or accepted.
    pub async fn offer_draw(
        self: &Arc<Self>,
        role: Role,
    ) -> Result<(bool, SessionView), SessionError> {
        let seat = self.seat_of(role)?;
        self.agree_draw(seat, false).await
    }

    /// The seat `role` plays accepts another seat's standing draw offer;
    /// agreed (`true`) once every seat has.
    pub async fn accept_draw(
        self: &Arc<Self>,
        role: Role,
    ) -> Result<(bool, SessionView), SessionError> {
        let seat = self.seat_of(role)?;
        self.agree_draw(seat, true).await
    }

    /// `seat` offers (or, when `accepting`, accepts: an offer of another
    /// seat must stand) a draw: stored as the set of agreeing seats, or
    /// concluded as `DRAW_AGREEMENT` once that set is every seat.
    async fn agree_draw(
        self: &Arc<Self>,
        seat: Seat,
        accepting: bool,
    ) -> Result<(bool, SessionView), SessionError> {
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.handoff.turn().await?;
            let agreeing = {
                let st = this.lock_settled();
                if st.game.outcome().is_some() {
                    return Err(game_over());
                }
                let others = SeatSet::all_but(seat, this.seats.count());
                if accepting && st.draw_offers.iter().all(|s| s == seat) {
                    return Err(SessionError::Rejected(MoveError::Illegal {
                        reason: "NO_DRAW_OFFER",
                        message: "no other seat has a draw offer standing".into(),
                    }));
                }
                if st.draw_offers.covers(others) {
                    None
                } else {
                    Some(st.draw_offers.with(seat))
                }
            };
            let viewer = Viewer::Seat(seat);
            let Some(agreeing) = agreeing else {
                let view = this
                    .conclude_stored(viewer, |_| Ok(RefereeAction::DrawAgreement))
                    .await?;
                return Ok((true, view));
            };
            this.handoff
                .persist(Write::DrawOffer {
                    game_id: this.id.to_string(),
                    seats: agreeing,
                })
                .await?;
            let mut st = this.lock_settled();
            st.draw_offers = agreeing;
            st.last_activity = Instant::now();
            Ok((false, this.view_locked(&st, true, viewer)))
        })
        .await
    }

    /// Whether every seat of the game has moved.
    fn all_moved(&self, st: &State) -> bool {
        st.log.movers().covers(SeatSet::all(self.seats.count()))
    }

    /// `role` calls the game off: a seat, only before every seat has moved,
    /// and not once the game has dealt (see [`crate::games::Game::dealt`]):
    /// a seat that has seen a card could otherwise abort for a new deal as
    /// often as it likes. Such a game only the platform aborts (a key with
    /// `games:admin`, or the server itself): only before every seat has
    /// moved, dealt or not. In a tournament's game a seat's abort is its
    /// resignation: the tournament counts a result for every game, and the
    /// game's record says which. Answered with `role`'s view.
    pub async fn abort(self: &Arc<Self>, role: Role) -> Result<SessionView, SessionError> {
        // The seat calling it off; none for the platform.
        let seat = match role {
            Role::Platform(_) => None,
            _ => Some(self.seat_of(role)?),
        };
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.handoff.turn().await?;
            this.conclude_stored(role.viewer(), |st| {
                if st.game.outcome().is_some() {
                    return Err(game_over());
                }
                if seat.is_some() && st.game.dealt() {
                    return Err(SessionError::Rejected(MoveError::Illegal {
                        reason: "ABORT_AFTER_DEAL",
                        message: "the game has dealt, so a seat cannot call it off for a new \
                                  deal: resign instead (only the platform may abort it)"
                            .into(),
                    }));
                }
                if this.all_moved(st) {
                    return Err(SessionError::Rejected(MoveError::Illegal {
                        reason: "ABORT_TOO_LATE",
                        message: "every seat has moved: resign or offer a draw instead".into(),
                    }));
                }
                match seat {
                    Some(loser) if this.forfeits() => Ok(RefereeAction::Resignation { loser }),
                    _ => Ok(RefereeAction::Aborted),
                }
            })
            .await
        })
        .await
    }

    /// The seat a victory claim of `claimant` is against: `against` if
    /// given, else the opponent (two seats) or the seat to move (more).
    fn claim_target(
        &self,
        st: &State,
        claimant: Seat,
        against: Option<Seat>,
    ) -> Result<Seat, SessionError> {
        let n = self.seats.count();
        let target = match against {
            Some(s) if s.index() >= n => {
                return Err(SessionError::InvalidArgument {
                    field: "against",
                    description: format!("the game has {n} seats"),
                });
            }
            Some(s) => s,
            None if n == 2 => claimant.next(2),
            None => st.game.to_move().unwrap_or(claimant),
        };
        if target == claimant {
            return Err(SessionError::Rejected(MoveError::Illegal {
                reason: "CLAIM_AGAINST_SELF",
                message: "a seat cannot claim victory over itself: it is its own turn".into(),
            }));
        }
        Ok(target)
    }

    /// The seat `role` plays claims the win because another seat (see
    /// [`Session::claim_target`]) has been gone (no open stream) for at
    /// least the abandon time. Only with a clock, only once every seat has
    /// moved (before that, a seat that never starts is aborted, not beaten),
    /// and never while that seat holds a stream.
    pub async fn claim_victory(
        self: &Arc<Self>,
        role: Role,
        against: Option<Seat>,
    ) -> Result<SessionView, SessionError> {
        let seat = self.seat_of(role)?;
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.handoff.turn().await?;
            let abandon_after = this.limits.abandon_after;
            let presence = this.presence();
            this.conclude_stored(Viewer::Seat(seat), |st| {
                if let Some(outcome) = st.game.outcome() {
                    return Err(this.game_over_by(&outcome));
                }
                let refuse = |reason: &'static str, message: String| {
                    Err(SessionError::Rejected(MoveError::Illegal {
                        reason,
                        message,
                    }))
                };
                if !st.clock.control().has_clock() {
                    return refuse(
                        "NO_CLOCK",
                        "victory can be claimed only in games with a clock".into(),
                    );
                }
                if !this.all_moved(st) {
                    return refuse(
                        "GAME_NOT_STARTED",
                        "every seat must have moved first: abort the game instead".into(),
                    );
                }
                let target = this.claim_target(st, seat, against)?;
                let name = this.seat_name(target);
                let away = presence[target.index()];
                if away.connected {
                    return refuse(
                        "OPPONENT_PRESENT",
                        format!("{name} holds an open stream on the game"),
                    );
                }
                if away.away_for < abandon_after {
                    let left = abandon_after - away.away_for;
                    return refuse(
                        "OPPONENT_NOT_GONE_LONG_ENOUGH",
                        format!(
                            "{name} has been gone {} ms; a claim needs {} ms ({} ms to go)",
                            away.away_for.as_millis(),
                            abandon_after.as_millis(),
                            left.as_millis()
                        ),
                    );
                }
                Ok(RefereeAction::Abandoned { loser: target })
            })
            .await
        })
        .await
    }

    /// `GAME_OVER`, saying how the game ended (e.g. `TIMEOUT`: a move that
    /// arrives after the flag fell learns why).
    pub(super) fn game_over_by(&self, outcome: &Outcome) -> SessionError {
        let how = if outcome.winners.is_empty() {
            format!("drawn or ended without a winner: {}", outcome.reason)
        } else {
            format!(
                "{} won by {}",
                self.seats.names_of(outcome.winners),
                outcome.reason
            )
        };
        SessionError::Rejected(MoveError::Illegal {
            reason: "GAME_OVER",
            message: format!("the game is over ({how})"),
        })
    }
}
