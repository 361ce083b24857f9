//! Playing a move: checked, decided (the game left as it was), stored,
//! then applied, with retries answered from their first result.

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use std::time::SystemTime;

use tokio::time;
use tracing::Instrument;

use super::super::{MAX_REQUEST_ID, SessionError};
use super::event::{EventKind, MoveReceipt};
use super::seats::Role;
use super::{Session, State};
use crate::games::{
    Decision, Game, MoveDetail, MoveError, MoveInput, MoveReport, Outcome, Seat, SeatSet,
};
use crate::service::storage::{self, MoveRow, Write};
use crate::service::telemetry;

/// What a retried request must repeat to be answered from its first result:
/// the same seat, answering the same ply, naming the same move (however it
/// is written: see [`crate::games::Rules::same_move`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::service::sessions) struct Fingerprint {
    pub(in crate::service::sessions) seat: Seat,
    pub(in crate::service::sessions) expected_ply: u32,
    pub(in crate::service::sessions) played: MoveDetail,
}

/// The stored answers to a game's request ids: a map made by the first
/// one (a game whose moves name no request id holds one pointer).
#[derive(Debug, Default)]
#[allow(
    clippy::box_collection,
    reason = "one pointer, not a map's 48 bytes, in every game without a request id"
)]
pub(in crate::service::sessions) struct Receipts(
    Option<Box<HashMap<String, (Fingerprint, MoveReceipt)>>>,
);

impl Receipts {
    /// No answer yet.
    pub(in crate::service::sessions) fn new() -> Receipts {
        Receipts(None)
    }

    /// Keeps the answer to request id `id`.
    pub(in crate::service::sessions) fn insert(
        &mut self,
        id: String,
        answer: (Fingerprint, MoveReceipt),
    ) {
        self.0.get_or_insert_with(Box::default).insert(id, answer);
    }

    /// The answer to request id `id`.
    pub(in crate::service::sessions) fn get(
        &self,
        id: &str,
    ) -> Option<&(Fingerprint, MoveReceipt)> {
        self.0.as_ref()?.get(id)
    }
}

/// A move decided on the game ([`Game::decide`]), waiting to be stored.
pub(super) struct PendingMove {
    /// The game after the move, if the game decided it on a copy.
    pub(super) after: Option<Box<dyn Game>>,
    /// The move, to play again if there is no copy.
    pub(super) mv: MoveInput,
    pub(super) report: MoveReport,
    pub(super) draw_after: SeatSet,
    pub(super) write: Write,
}

/// A decided move waiting for its write: what applying it needs.
struct DecidedMove {
    after: Option<Box<dyn Game>>,
    mv: MoveInput,
    report: MoveReport,
    draw_after: SeatSet,
    seat: Seat,
    expected_ply: u32,
    request_id: Option<String>,
    now: time::Instant,
}

/// A move being stored, with the game's write turn. If the call goes away
/// before the write's outcome, dropping this hands the rest to a task of
/// its own (with the turn), so that a move stored is a move applied and the
/// next change waits for it.
struct StoringMove<'a> {
    session: &'a Arc<Session>,
    turn: Option<tokio::sync::SemaphorePermit<'a>>,
    commit: storage::Commit,
    decided: Option<DecidedMove>,
}

impl Drop for StoringMove<'_> {
    fn drop(&mut self) {
        let Some(decided) = self.decided.take() else {
            return;
        };
        let commit = std::mem::replace(&mut self.commit, storage::Commit::ready(Ok(())));
        let session = self.session.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // The turn goes with the task: given back when it is done.
                if let Some(turn) = self.turn.take() {
                    turn.forget();
                }
                let finish = async move {
                    let stored = commit.await;
                    let _ = session.finish_move(stored, decided);
                    session.handoff.give_back_turn();
                };
                runtime.spawn(finish.instrument(tracing::Span::current()));
            }
            // No runtime to finish in: wait here.
            Err(_) => {
                let _ = session.finish_move(commit.wait_blocking(), decided);
            }
        }
    }
}

impl Session {
    /// Refuses a request id longer than [`MAX_REQUEST_ID`]. A move's
    /// request id is checked before who the caller is: a caller checks it
    /// before it resolves its role ([`Session::role_of`]), so that a long
    /// id is refused as such whatever the token.
    pub fn check_request_id(request_id: Option<&str>) -> Result<(), SessionError> {
        if request_id.is_some_and(|r| r.len() > MAX_REQUEST_ID) {
            return Err(SessionError::InvalidArgument {
                field: "request_id",
                description: format!("at most {MAX_REQUEST_ID} characters"),
            });
        }
        Ok(())
    }

    /// Plays `mv` for the seat `role` plays, if that seat is to move and the
    /// game is at `expected_ply`. The move is stored before it is applied
    /// and answered. A retry with the same `request_id` (and the same move)
    /// gets the first answer without playing again, also after a restart.
    /// Counts the move applied (by kind) or refused by a rule (by reason).
    pub async fn submit(
        self: &Arc<Self>,
        role: Role,
        mv: MoveInput,
        expected_ply: u32,
        request_id: Option<&str>,
    ) -> Result<MoveReceipt, SessionError> {
        Session::check_request_id(request_id)?;
        let seat = self.seat_of(role)?;
        // Not in a task of its own: a move whose caller goes away while it
        // is being stored is finished by a task then (`StoringMove`), so
        // the common case costs no spawn and no hand-off.
        let result = self.try_submit(seat, mv, expected_ply, request_id).await;
        // A rule refusal may be the failure policy's to answer.
        let result = self.after_refusal(seat, expected_ply, result).await;
        match &result {
            Ok(receipt) => {
                tracing::Span::current().record("ply", receipt.report.ply);
                if !receipt.replayed {
                    telemetry::count_move_applied(self.game_name, receipt.report.detail.kind);
                }
            }
            Err(SessionError::Rejected(MoveError::Illegal { reason, .. })) => {
                metrics::counter!(telemetry::MOVES_ILLEGAL, "reason" => *reason).increment(1);
            }
            Err(_) => {}
        }
        result
    }

    /// Plays a move for `seat` (proved by its token): answered from the
    /// first result for a known request id; else checked, decided, stored,
    /// then applied.
    pub(super) async fn try_submit(
        self: &Arc<Self>,
        seat: Seat,
        mv: MoveInput,
        expected_ply: u32,
        request_id: Option<&str>,
    ) -> Result<MoveReceipt, SessionError> {
        let turn = self.handoff.turn().await?;
        let now = time::Instant::now();
        let decided = {
            let mut st = self.lock();
            self.settle(&mut st, now);
            if let Some(answer) = Session::retry_answer(&st, request_id, seat, expected_ply, &mv) {
                return answer;
            }
            self.check_turn(&st, seat, expected_ply)?;
            if self.handoff.in_place() {
                // Nothing to store, and no write that could fail: the move
                // is played on the game itself, with no decision before it
                // (a refused move changes nothing), and applied at once.
                return self.play_in_place(&mut st, seat, &mv, expected_ply, request_id, now);
            }
            let decided = self.decide_move(&mut st, seat, mv, request_id, now)?;
            st.pending = true;
            decided
        };
        let PendingMove {
            after,
            mv,
            report,
            draw_after,
            write,
        } = decided;
        let commit = match self.handoff.start(write) {
            Ok(commit) => commit,
            Err(e) => return Err(self.pending_failed(e)),
        };
        let mut storing = StoringMove {
            session: self,
            turn: Some(turn),
            commit,
            decided: Some(DecidedMove {
                after,
                mv,
                report,
                draw_after,
                seat,
                expected_ply,
                request_id: request_id.map(str::to_string),
                now,
            }),
        };
        let stored = (&mut storing.commit).await;
        // No await from here on: the call finishes the move itself.
        let Some(decided) = storing.decided.take() else {
            return Err(SessionError::Unavailable(
                "the move was finished twice".into(),
            ));
        };
        self.finish_move(stored, decided)
    }

    /// Applies a stored move (`stored`: its write's outcome) and remembers
    /// its answer under its request id; a failed write applies nothing.
    fn finish_move(
        &self,
        stored: Result<(), storage::StorageError>,
        decided: DecidedMove,
    ) -> Result<MoveReceipt, SessionError> {
        let DecidedMove {
            after,
            mv,
            report,
            draw_after,
            seat,
            expected_ply,
            request_id,
            now,
        } = decided;
        let mut st = self.end_pending(self.handoff.outcome(stored))?;
        let report = self.adopt_move(&mut st, after, &mv, report);
        st.draw_offers = draw_after;
        self.apply_move(&mut st, &report, now);
        Ok(Session::receipt(
            &mut st,
            report,
            seat,
            expected_ply,
            request_id,
        ))
    }

    /// Plays and applies `mv` on the game itself, for a storage that
    /// discards writes ([`storage::Storage::discards_writes`]): what
    /// [`Session::decide_move`], the write and [`Session::finish_move`] do,
    /// in one play and no write.
    fn play_in_place(
        &self,
        st: &mut State,
        seat: Seat,
        mv: &MoveInput,
        expected_ply: u32,
        request_id: Option<&str>,
        now: time::Instant,
    ) -> Result<MoveReceipt, SessionError> {
        let report = st.game.play(mv)?;
        st.draw_offers = Session::draw_after(st, seat, &report);
        self.apply_move(st, &report, now);
        let request_id = request_id.map(str::to_string);
        Ok(Session::receipt(st, report, seat, expected_ply, request_id))
    }

    /// The answer to an applied move, remembered under its request id.
    fn receipt(
        st: &mut State,
        report: MoveReport,
        seat: Seat,
        expected_ply: u32,
        request_id: Option<String>,
    ) -> MoveReceipt {
        let receipt = MoveReceipt {
            report,
            replayed: false,
        };
        if let Some(id) = request_id {
            let fingerprint = Fingerprint {
                seat,
                expected_ply,
                played: receipt.report.detail.clone(),
            };
            st.receipts.insert(id, (fingerprint, receipt.clone()));
        }
        receipt
    }

    /// The draw offer standing after `seat`'s move: a move by a seat that
    /// has not agreed to it declines it, and a game's last move ends it.
    fn draw_after(st: &State, seat: Seat, report: &MoveReport) -> SeatSet {
        if report.outcome.is_some() || !st.draw_offers.contains(seat) {
            SeatSet::EMPTY
        } else {
            st.draw_offers
        }
    }

    /// The first answer to `request_id`, if it was used before: the same
    /// seat, ply and move get it again; anything else is refused.
    fn retry_answer(
        st: &State,
        request_id: Option<&str>,
        seat: Seat,
        expected_ply: u32,
        mv: &MoveInput,
    ) -> Option<Result<MoveReceipt, SessionError>> {
        let id = request_id?;
        let (first, receipt) = st.receipts.get(id)?;
        if first.seat != seat
            || first.expected_ply != expected_ply
            || !st.game.same_move(expected_ply, mv, &first.played)
        {
            return Some(Err(SessionError::InvalidArgument {
                field: "request_id",
                description: format!(
                    "request id `{}` was used for a different move",
                    crate::service::echo::echo(id)
                ),
            }));
        }
        Some(Ok(MoveReceipt {
            replayed: true,
            ..receipt.clone()
        }))
    }

    /// Refuses a move when the game is over, `expected_ply` is not the
    /// game's ply, or it is not `seat`'s turn.
    fn check_turn(&self, st: &State, seat: Seat, expected_ply: u32) -> Result<(), SessionError> {
        if let Some(outcome) = st.game.outcome() {
            return Err(self.game_over_by(&outcome));
        }
        let current = st.game.ply();
        if expected_ply != current {
            return Err(SessionError::StalePly {
                expected: expected_ply,
                current,
            });
        }
        let to_move = st.game.to_move();
        if to_move != Some(seat) {
            let whose = to_move.map_or("nobody", |s| self.seat_name(s));
            return Err(SessionError::Rejected(MoveError::Illegal {
                reason: "NOT_YOUR_TURN",
                message: format!("it is {whose}'s turn"),
            }));
        }
        Ok(())
    }

    /// Decides `mv` ([`Game::decide`]: the game is left as it was, a
    /// refusal is the one playing it gives): what it does, the draw offer
    /// after it and the write that stores it.
    pub(super) fn decide_move(
        &self,
        st: &mut State,
        seat: Seat,
        mv: MoveInput,
        request_id: Option<&str>,
        now: time::Instant,
    ) -> Result<PendingMove, SessionError> {
        let Decision { report, after } = st.game.decide(&mv)?;
        let draw_after = Session::draw_after(st, seat, &report);
        // The same credit the clock gives the move when it is applied: no
        // sample changes an estimate while the move is pending
        // (`Session::sample_lag`).
        let credit = st.clock.credit(seat, now);
        let clock_ms = u64::try_from(st.clock.since_start(now).as_millis()).unwrap_or(u64::MAX);
        let row = MoveRow {
            game_id: self.id.as_str().to_owned(),
            ply: report.ply,
            seat,
            notation: report.detail.notation.clone(),
            request_id: request_id.map(str::to_string),
            clock_ms,
            played_at_ms: storage::unix_ms(SystemTime::now()),
            draw_offers: draw_after,
            substituted: st.policy.mark(report.ply, seat, &report.detail.notation),
            lag: st.clock.move_lag(clock_ms, credit),
        };
        let end = report
            .outcome
            .as_ref()
            .map(|v| self.handoff.end_row("finished", Some(v), report.ply));
        Ok(PendingMove {
            after,
            mv,
            report,
            draw_after,
            write: Write::Move(row, end),
        })
    }

    /// Makes the game the one after a decided move (`after`, the copy it
    /// was decided on, or `mv` played again): the move's report. A game
    /// that does not make its decided report again breaks the engine's
    /// contract; the decided report, the one stored, stands.
    pub(super) fn adopt_move(
        &self,
        st: &mut State,
        after: Option<Box<dyn Game>>,
        mv: &MoveInput,
        report: MoveReport,
    ) -> MoveReport {
        let decision = Decision { report, after };
        decision.apply(&mut st.game, mv).unwrap_or_else(|decided| {
            tracing::error!(
                game_id = %self.id,
                ply = decided.ply,
                "a decided move played differently when applied"
            );
            decided
        })
    }

    /// Applies a stored move: the clock, the event, the ending.
    pub(super) fn apply_move(&self, st: &mut State, report: &MoveReport, now: time::Instant) {
        st.clock.on_move(report.seat, report.next, now);
        self.timer.wake();
        self.publish(
            st,
            EventKind::MoveApplied {
                report: report.clone(),
            },
            report.ply,
            now,
        );
        if let Some(outcome) = &report.outcome {
            self.finish(st, Outcome::clone(outcome));
        }
    }

    /// Ends the pending change once its write is `stored`: the state to
    /// apply it to, or the storage error, with nothing applied and a
    /// deadline that passed meanwhile counted now.
    pub(super) fn end_pending(
        &self,
        stored: Result<(), SessionError>,
    ) -> Result<MutexGuard<'_, State>, SessionError> {
        if let Err(e) = stored {
            return Err(self.pending_failed(e));
        }
        let mut st = self.lock();
        st.pending = false;
        Ok(st)
    }

    /// Ends the pending change that could not be stored (`e`), with
    /// nothing applied and a deadline that passed meanwhile counted now.
    fn pending_failed(&self, e: SessionError) -> SessionError {
        let mut st = self.lock();
        st.pending = false;
        self.settle(&mut st, time::Instant::now());
        self.timer.wake();
        e
    }
}
