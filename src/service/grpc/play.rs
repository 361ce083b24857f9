//! `RefereeService.Play`: one seat's game over one bidirectional stream
//! (docs/API.md, "Playing over a stream").
//!
//! It is `SubmitMove` and `WatchGame` on one stream, and nothing else: the
//! moves go through [`Session::submit`] (the same checks, request ids and
//! answers), the game comes from the seat's [`sessions::Watch`] framed by
//! the same function as a watch stream's ([`super::service::frame_watch_item`]),
//! and a refused move's status is made by [`super::error::status`], sent as
//! a message instead of ending the stream.
//!
//! What a move costs: the stream is one future polled by the response
//! body, with no task and no channel of its own; the start (the game's
//! lookup, the token, the watch) is paid once, so a move is its decode,
//! the session's move, and the answer and the event encoded once each,
//! usually in one HTTP/2 frame.
//!
//! Order: the stream's messages follow the game's log. The answer to a
//! move comes right after the event of that move (the event first, as a
//! watcher sees it), and the next move is read only then; a refusal comes
//! at once. A stream that falls behind the game's ring gets a resync
//! snapshot, as a watch does, and any answer held follows it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use tokio_stream::Stream;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::{Status, Streaming};

use super::convert::{self, move_pb, outcome_pb, seat_pb, status_pb};
use super::error::{invalid_argument, status};
use super::games::Part;
use super::pb::referee::v1 as pb;
use super::service::{LAST_PLY_HEADER, SHUTTING_DOWN, StreamSlots, frame_watch_item};
use crate::service::sessions::{self, Role, Session, SessionError};

/// The response stream of `Play`.
pub type PlayStream = Pin<Box<dyn Stream<Item = Result<pb::PlayResponse, Status>> + Send>>;

/// The start of a stream, checked: the game, the seat, and where to begin.
pub(super) struct Start {
    /// The game.
    pub session: Arc<Session>,
    /// The seat playing (a seat, never a spectator).
    pub role: Role,
    /// The first message's `from_ply`.
    pub from_ply: Option<u32>,
    /// Whether the client answers pings (docs/LAG.md).
    pub answer_pings: bool,
}

/// How long a stream may take to send its start. Until it has, the call
/// holds its place among the calls in flight (the overload limit counts a
/// stream until its response starts): a client that opens streams and
/// sends nothing must not keep them.
pub const START_WAIT: Duration = Duration::from_secs(10);

/// Reads and checks the first message of a stream: a `start`, within
/// [`START_WAIT`].
pub(super) async fn read_start(
    inbound: &mut Streaming<pb::PlayRequest>,
) -> Result<pb::PlayStart, Status> {
    let first = tokio::time::timeout(START_WAIT, inbound.message())
        .await
        .map_err(|_| {
            invalid_argument(
                "start",
                format!(
                    "no start within {} s of opening the stream",
                    START_WAIT.as_secs()
                ),
            )
        })?;
    match first? {
        Some(pb::PlayRequest {
            kind: Some(pb::play_request::Kind::Start(start)),
        }) => Ok(start),
        Some(_) => Err(invalid_argument(
            "start",
            "the first message of a Play stream must be its start",
        )),
        None => Err(invalid_argument(
            "start",
            "the stream ended before its start",
        )),
    }
}

/// The seat `role` plays: a Play stream is a seat's, never a spectator's
/// (refused as SubmitMove refuses a move without a token).
pub(super) fn seat_role(session: &Session, role: Role) -> Result<Role, Status> {
    session.seat_of(role).map(|_| role).map_err(status)
}

/// Opens the stream of a checked start: the seat's watch, then the loop.
pub(super) fn open(
    start: Start,
    inbound: Streaming<pb::PlayRequest>,
    shutdown: CancellationToken,
    slots: StreamSlots,
) -> Result<PlayStream, Status> {
    let watch = start.session.watch(start.from_ply, start.role)?;
    let play = Play {
        session: start.session,
        role: start.role,
        watch,
        inbound: Some(inbound),
        shutdown: Box::pin(shutdown.cancelled_owned()),
        out: VecDeque::with_capacity(2),
        held: None,
        done: false,
        pinger: super::ping::Pinger::default(),
        pings: start.answer_pings,
        _slots: slots,
    };
    let stream = unfold(play);
    Ok(Box::pin(stream))
}

/// The stream as a `Stream`: each item is the next step of [`Play`].
fn unfold(play: Play) -> impl Stream<Item = Result<pb::PlayResponse, Status>> + Send {
    futures_util::stream::unfold(play, |mut play| async move {
        let item = play.next().await?;
        Some((item, play))
    })
}

/// One Play stream's state.
struct Play {
    session: Arc<Session>,
    role: Role,
    watch: sessions::Watch,
    /// The client's messages; `None` once it half-closed (the game is
    /// still sent until it ends).
    inbound: Option<Streaming<pb::PlayRequest>>,
    /// The server's shutdown, waited for by the same future from one
    /// message to the next (made anew, it would join and leave the
    /// token's waiters at every message).
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Messages ready to send, in order.
    out: VecDeque<pb::PlayResponse>,
    /// The answer to a move whose event has not been sent yet, with the
    /// move's ply: sent once the watch has passed that ply.
    held: Option<(u32, pb::PlayResponse)>,
    /// Nothing more is sent after this.
    done: bool,
    /// The seat's round-trip measurement (docs/LAG.md).
    pinger: super::ping::Pinger,
    /// Whether the client answers pings.
    pings: bool,
    /// The stream's places in the watch-stream limits, given back with it.
    _slots: StreamSlots,
}

/// What woke the loop.
enum Woken {
    Shutdown,
    Watch(Result<Option<sessions::WatchItem>, SessionError>),
    Inbound(Result<Option<pb::PlayRequest>, Status>),
}

impl Play {
    /// The next message of the stream, `None` at its end.
    async fn next(&mut self) -> Option<Result<pb::PlayResponse, Status>> {
        loop {
            if let Some(message) = self.out.pop_front() {
                self.pinger.sent(&message, tokio::time::Instant::now());
                return Some(Ok(message));
            }
            if self
                .held
                .as_ref()
                .is_some_and(|(ply, _)| self.watch.last_sequence() >= u64::from(*ply))
            {
                let (_, answer) = self.held.take()?;
                return Some(Ok(answer));
            }
            if self.done {
                return None;
            }
            // The next move is read once the last one is answered.
            let read_moves = self.held.is_none();
            let woken = {
                let inbound = async {
                    match self.inbound.as_mut() {
                        Some(inbound) if read_moves => inbound.message().await,
                        _ => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    _ = self.shutdown.as_mut() => Woken::Shutdown,
                    item = self.watch.next() => Woken::Watch(item),
                    message = inbound => Woken::Inbound(message),
                }
            };
            match woken {
                Woken::Shutdown => return Some(Err(self.end(Status::unavailable(SHUTTING_DOWN)))),
                Woken::Watch(Ok(Some(item))) => {
                    let (message, round_over) =
                        frame_watch_item(&self.session, &self.watch, item, play_message);
                    self.out.push_back(message);
                    self.out.extend(round_over);
                    // A ping after the game's news, while the client
                    // still answers.
                    if self.pings && self.inbound.is_some() {
                        self.out
                            .extend(self.pinger.due(tokio::time::Instant::now()));
                    }
                }
                Woken::Watch(Ok(None)) => {
                    // The game is over and its last event sent: an answer
                    // still held goes, then the stream ends with OK.
                    self.done = true;
                    self.out.extend(self.held.take().map(|(_, answer)| answer));
                }
                Woken::Watch(Err(e)) => return Some(Err(self.end(status(e)))),
                Woken::Inbound(Ok(Some(request))) => {
                    if let Err(refused) = self.on_request(request).await {
                        return Some(Err(self.end(refused)));
                    }
                }
                // The client sends no more: the game still comes.
                Woken::Inbound(Ok(None)) => self.inbound = None,
                // The client's side broke: nobody reads the answers either.
                Woken::Inbound(Err(_)) => {
                    self.done = true;
                    self.inbound = None;
                }
            }
        }
    }

    /// Plays a move of the client and queues (or holds) its answer; `Err`
    /// ends the stream (a message that is no move).
    async fn on_request(&mut self, request: pb::PlayRequest) -> Result<(), Status> {
        let play = match request.kind {
            Some(pb::play_request::Kind::Move(play)) => play,
            Some(pb::play_request::Kind::Pong(pong)) => {
                let now = tokio::time::Instant::now();
                if let Some(rtt) = self.pinger.pong(pong.id, now)
                    && let Ok(seat) = self.session.seat_of(self.role)
                {
                    self.session.sample_lag(seat, rtt);
                }
                return Ok(());
            }
            Some(pb::play_request::Kind::Start(_)) => {
                return Err(invalid_argument(
                    "start",
                    "a Play stream has one start, its first message",
                ));
            }
            None => {
                return Err(invalid_argument(
                    "kind",
                    "a PlayRequest is a start or a move",
                ));
            }
        };
        let request_id = play.request_id;
        match self
            .submit(play.r#move.as_ref(), play.expected_ply, &request_id)
            .await
        {
            Ok(receipt) => {
                let ply = receipt.report.ply;
                let answer = message(pb::play_response::Item::Accepted(pb::MoveAccepted {
                    request_id,
                    result: Some(submit_answer(&self.session, receipt)),
                }));
                if self.watch.last_sequence() >= u64::from(ply) {
                    self.out.push_back(answer);
                } else {
                    self.held = Some((ply, answer));
                }
            }
            Err(refused) => {
                tracing::debug!(game_id = %self.session.id(), code = ?refused.code(), "move refused");
                self.out
                    .push_back(message(pb::play_response::Item::Refused(pb::MoveRefused {
                        request_id,
                        expected_ply: play.expected_ply,
                        status: Some(play_status(&refused)),
                    })));
            }
        }
        Ok(())
    }

    /// SubmitMove's steps for a move of this stream, but the lookup of
    /// the game and the token (done once, at the start).
    async fn submit(
        &self,
        mv: Option<&pb::Move>,
        expected_ply: u32,
        request_id: &str,
    ) -> Result<sessions::MoveReceipt, Status> {
        let mv = convert::move_input(mv, &Part::Request)?;
        let request_id = Some(request_id).filter(|r| !r.is_empty());
        Session::check_request_id(request_id)?;
        Ok(self
            .session
            .submit(self.role, mv, expected_ply, request_id)
            .await?)
    }

    /// Ends the stream with `status`, naming the last ply it sent (the
    /// resume point: `PlayStart.from_ply`) in `referee-last-ply`.
    fn end(&mut self, mut status: Status) -> Status {
        self.done = true;
        self.out.clear();
        self.held = None;
        status
            .metadata_mut()
            .insert(LAST_PLY_HEADER, self.watch.last_ply().into());
        status
    }
}

/// A Play message holding `item`.
fn message(item: pb::play_response::Item) -> pb::PlayResponse {
    pb::PlayResponse {
        item: Some(item),
        resync: false,
        sequence: 0,
    }
}

/// A watch item as a Play message: the same fields, the same numbers.
fn play_message(
    item: pb::watch_game_response::Item,
    resync: bool,
    sequence: u64,
) -> pb::PlayResponse {
    use pb::play_response::Item as P;
    use pb::watch_game_response::Item as W;
    let item = match item {
        W::Snapshot(game) => P::Snapshot(game),
        W::Event(event) => P::Event(event),
        W::Presence(presence) => P::Presence(presence),
        W::RoundOver(round_over) => P::RoundOver(round_over),
    };
    pb::PlayResponse {
        item: Some(item),
        resync,
        sequence,
    }
}

/// SubmitMove's answer to a move played (by the seat, or by the referee
/// for it under the game's failure policy: docs/POLICIES.md).
pub(super) fn submit_answer(
    session: &sessions::Session,
    receipt: sessions::MoveReceipt,
) -> pb::SubmitMoveResponse {
    let report = receipt.report;
    let substituted = session
        .substitution_at(report.ply)
        .filter(|s| s.seat == report.seat && s.refused.is_some());
    pb::SubmitMoveResponse {
        r#move: Some(move_pb(&report.detail)),
        seat: seat_pb(Some(report.seat)),
        ply: report.ply,
        status: status_pb(report.outcome.as_deref()),
        outcome: report.outcome.as_deref().map(|v| Box::new(outcome_pb(v))),
        to_move: seat_pb(report.next),
        replayed: receipt.replayed,
        substituted: substituted.is_some(),
        refused_reason: substituted
            .and_then(|s| s.refused)
            .unwrap_or_default()
            .to_string(),
    }
}

/// `status` as a message: the `google.rpc.Status` tonic sends as its
/// details (code, message and details), or the code and message alone.
pub fn play_status(status: &Status) -> pb::PlayStatus {
    let mut out = pb::PlayStatus::decode(status.details()).unwrap_or_default();
    out.code = status.code() as i32;
    out.message = status.message().to_string();
    out
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tonic_types::StatusExt as _;

    use super::*;

    /// A refusal's message decodes back to the same code, message and
    /// details as the status SubmitMove would fail with.
    #[test]
    fn a_refusal_carries_the_status_and_its_details() {
        let refused = status(SessionError::StalePly {
            expected: 3,
            current: 5,
        });
        let message = play_status(&refused);
        assert_eq!(message.code, Code::Aborted as i32);
        assert_eq!(message.message, refused.message());
        // Re-made as a status from its bytes, the details read the same.
        let again = Status::with_details(
            Code::Aborted,
            message.message.clone(),
            message.encode_to_vec().into(),
        );
        let info = again.get_error_details().error_info().cloned().unwrap();
        assert_eq!(info.reason, "STALE_PLY");
        assert_eq!(info.metadata["expected_ply"], "3");
        assert_eq!(info.metadata["current_ply"], "5");
        // A status without details keeps its code and message.
        let bare = play_status(&Status::unavailable("gone"));
        assert_eq!(
            (bare.code, bare.message.as_str()),
            (Code::Unavailable as i32, "gone")
        );
        assert!(bare.details.is_empty());
    }
}
