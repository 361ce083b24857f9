//! The Play phase of `--play`: the same games from the same pool as the
//! moves phase, but each seat plays over its own `Play` stream, as a bot
//! does: `CreateGame`, one stream per seat, then each move sent on the
//! mover's stream and timed until its answer; every seat's stream is read
//! up to each move's event (a bot reads the game it plays), so no stream
//! falls behind. Its server CPU per move, against the same round's
//! `SubmitMove` and no-op calls, is what docs/BENCHMARKS.md reports.
//!
//! As in the moves phase, the requests are encoded beforehand (the moves
//! once, the start once per stream) and the answers decoded only as far as
//! the checks need ([`PlayHead`]): the figures are the server's.

use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::moves::{GameEnd, MovesTask, NewGame, SubmitMoveHead};
use super::tally::nanos;

/// `referee.v1.PlayRequest` as the phase sends it: `start` or `move`
/// (a oneof of two messages encodes as whichever is set).
#[derive(Clone, PartialEq, prost::Message)]
struct PlayRequestWire {
    /// `PlayRequest.start`.
    #[prost(message, optional, tag = "1")]
    start: Option<PlayStartWire>,
    /// `PlayRequest.move`.
    #[prost(message, optional, tag = "2")]
    r#move: Option<PlayMoveWire>,
}

/// `referee.v1.PlayStart`, its strings as shared buffers.
#[derive(Clone, PartialEq, prost::Message)]
struct PlayStartWire {
    /// `PlayStart.game_id`.
    #[prost(bytes = "bytes", tag = "1")]
    game_id: Bytes,
    /// `PlayStart.token`.
    #[prost(bytes = "bytes", tag = "2")]
    token: Bytes,
}

/// `referee.v1.PlayMove`, its move encoded once before the runs.
#[derive(Clone, PartialEq, prost::Message)]
struct PlayMoveWire {
    /// `PlayMove.move`, encoded.
    #[prost(bytes = "bytes", tag = "1")]
    r#move: Bytes,
    /// `PlayMove.expected_ply`.
    #[prost(uint32, tag = "2")]
    expected_ply: u32,
}

/// What the phase reads of a `referee.v1.PlayResponse`: whether it is an
/// event and its sequence, and a move's answer; the snapshot and the
/// events' contents are skipped (sent, never decoded).
#[derive(Clone, PartialEq, prost::Message)]
struct PlayHead {
    /// `PlayResponse.event`, undecoded.
    #[prost(bytes = "bytes", optional, tag = "2")]
    event: Option<Bytes>,
    /// `PlayResponse.sequence`.
    #[prost(uint64, tag = "4")]
    sequence: u64,
    /// `PlayResponse.accepted`.
    #[prost(message, optional, tag = "7")]
    accepted: Option<AcceptedHead>,
    /// `PlayResponse.refused`.
    #[prost(message, optional, tag = "8")]
    refused: Option<RefusedHead>,
}

/// `MoveAccepted.result`'s head.
#[derive(Clone, PartialEq, prost::Message)]
struct AcceptedHead {
    /// `MoveAccepted.result`.
    #[prost(message, optional, tag = "2")]
    result: Option<SubmitMoveHead>,
}

/// `MoveRefused.status`'s code and message.
#[derive(Clone, PartialEq, prost::Message)]
struct RefusedHead {
    /// `MoveRefused.status`.
    #[prost(message, optional, tag = "3")]
    status: Option<StatusHead>,
}

/// `PlayStatus`'s code and message.
#[derive(Clone, PartialEq, prost::Message)]
struct StatusHead {
    /// `PlayStatus.code`.
    #[prost(int32, tag = "1")]
    code: i32,
    /// `PlayStatus.message`.
    #[prost(string, tag = "2")]
    message: String,
}

/// One seat's open stream.
struct Stream {
    tx: mpsc::Sender<PlayRequestWire>,
    rx: tonic::Streaming<PlayHead>,
    /// The sequence of the last event read from it.
    seen: u64,
}

/// The path of `Play`.
const PLAY: &str = "/referee.v1.RefereeService/Play";

impl MovesTask {
    /// Opens `token`'s stream of `game` and reads its snapshot.
    async fn open_stream(&mut self, game: &NewGame, token: &Bytes) -> Result<Stream, String> {
        let (tx, rx) = mpsc::channel(2);
        let start = PlayRequestWire {
            start: Some(PlayStartWire {
                game_id: game.game_id.clone(),
                token: token.clone(),
            }),
            r#move: None,
        };
        tx.send(start).await.map_err(|e| e.to_string())?;
        self.grpc.ready().await.map_err(|e| e.to_string())?;
        let codec = tonic_prost::ProstCodec::<PlayRequestWire, PlayHead>::default();
        let path = http::uri::PathAndQuery::from_static(PLAY);
        let mut rx = self
            .grpc
            .streaming(tonic::Request::new(ReceiverStream::new(rx)), path, codec)
            .await
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .into_inner();
        // The snapshot.
        rx.message()
            .await
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .ok_or("the stream ended before its snapshot")?;
        Ok(Stream { tx, rx, seen: 0 })
    }

    /// Plays `moves` (encoded: `wire_moves`) in `game` over one stream per
    /// seat, timing each move from its sending to its answer.
    pub(super) async fn play_over_streams(
        &mut self,
        game: &NewGame,
        moves: &[String],
        wire_moves: &[Bytes],
    ) -> GameEnd {
        let mut streams = Vec::with_capacity(game.tokens.len());
        for token in &game.tokens {
            match self.open_stream(game, token).await {
                Ok(stream) => streams.push(stream),
                Err(e) => {
                    self.errors
                        .note(|| format!("Play of game {}: opening: {e}", game.id));
                    return GameEnd::Failed;
                }
            }
        }
        let mut mover = 0;
        for (ply, notation) in moves.iter().enumerate() {
            let started = Instant::now();
            if started >= self.window.end {
                return GameEnd::WindowOver;
            }
            let request = PlayRequestWire {
                start: None,
                r#move: Some(PlayMoveWire {
                    r#move: wire_moves[ply].clone(),
                    expected_ply: ply as u32,
                }),
            };
            let stream = &mut streams[mover % game.tokens.len()];
            if stream.tx.send(request).await.is_err() {
                self.errors
                    .note(|| format!("Play `{notation}` at ply {ply}: the stream is closed"));
                return GameEnd::Failed;
            }
            let answer = answer_of(stream).await;
            let done = Instant::now();
            let last = ply + 1 == moves.len();
            let Some(next) = self.checked(answer, &game.id, ply, notation, last) else {
                return GameEnd::Failed;
            };
            if self.window.counts(started, done) {
                self.tally.latencies.push(nanos(done - started));
            }
            // Every seat reads the move's event (the mover has, before its
            // answer).
            for stream in &mut streams {
                if let Err(e) = until_event(stream, ply as u64 + 1).await {
                    self.errors
                        .note(|| format!("Play of game {} at ply {ply}: {e}", game.id));
                    return GameEnd::Failed;
                }
            }
            mover = next;
        }
        GameEnd::Finished
    }
}

/// Reads `stream` up to the answer to its move, as SubmitMove's would be.
async fn answer_of(stream: &mut Stream) -> Result<SubmitMoveHead, tonic::Status> {
    loop {
        let head = stream
            .rx
            .message()
            .await?
            .ok_or_else(|| tonic::Status::unknown("the stream ended before the answer"))?;
        if head.event.is_some() {
            stream.seen = head.sequence;
        }
        if let Some(accepted) = head.accepted {
            return Ok(accepted.result.unwrap_or_default());
        }
        if let Some(refused) = head.refused {
            let status = refused.status.unwrap_or_default();
            return Err(tonic::Status::new(status.code.into(), status.message));
        }
    }
}

/// Reads `stream` until it has been sent the event of `sequence`.
async fn until_event(stream: &mut Stream, sequence: u64) -> Result<(), String> {
    while stream.seen < sequence {
        let head = stream
            .rx
            .message()
            .await
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .ok_or("the stream ended early")?;
        if head.event.is_some() {
            stream.seen = head.sequence;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::service::grpc::pb::referee::v1 as pb;

    /// The phase's requests are byte for byte the `PlayRequest`s they
    /// stand for, and its head reads a real answer.
    #[test]
    fn the_wire_forms_are_the_real_messages() {
        let tool = crate::tools::games::tool_game("punct").unwrap();
        let real_move = pb::PlayRequest {
            kind: Some(pb::play_request::Kind::Move(pb::PlayMove {
                r#move: Some(tool.wire_move("W:c3")),
                expected_ply: 7,
                request_id: String::new(),
            })),
        };
        let ours = PlayRequestWire {
            start: None,
            r#move: Some(PlayMoveWire {
                r#move: Bytes::from(tool.wire_move("W:c3").encode_to_vec()),
                expected_ply: 7,
            }),
        };
        assert_eq!(ours.encode_to_vec(), real_move.encode_to_vec());
        let real_start = pb::PlayRequest {
            kind: Some(pb::play_request::Kind::Start(pb::PlayStart {
                game_id: "g-1".into(),
                token: "t".into(),
                from_ply: None,
                answer_pings: false,
            })),
        };
        let ours = PlayRequestWire {
            start: Some(PlayStartWire {
                game_id: Bytes::from_static(b"g-1"),
                token: Bytes::from_static(b"t"),
            }),
            r#move: None,
        };
        assert_eq!(ours.encode_to_vec(), real_start.encode_to_vec());
        let answer = pb::PlayResponse {
            item: Some(pb::play_response::Item::Accepted(pb::MoveAccepted {
                request_id: String::new(),
                result: Some(pb::SubmitMoveResponse {
                    ply: 8,
                    to_move: 2,
                    ..Default::default()
                }),
            })),
            resync: false,
            sequence: 8,
        };
        let head = PlayHead::decode(answer.encode_to_vec().as_slice()).unwrap();
        let result = head.accepted.unwrap().result.unwrap();
        assert_eq!((result.ply, result.to_move, head.event), (8, 2, None));
    }
}
