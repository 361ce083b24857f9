//! Answers sent encoded once and shared (docs/API.md "Compact reads").
//!
//! The server stubs (`server`, generated apart from the messages in
//! `build.rs`) send [`GetGameAnswer`] where the contract says
//! `referee.v1.GetGameResponse`. On the wire it is exactly that message:
//! field 1 (`game`) holding the `Game` of the ply encoded once per state
//! ([`crate::service::sessions::Session::shared_view`]) and, after it, the
//! fields that change with time alone, `clock` (13) and `presence` (14),
//! and the caller's `viewer` (18, the one difference between the views of
//! a game that hides nothing), encoded per call. A protobuf decoder reads fields in any order, so
//! every client decodes it as the `GetGameResponse` it always was.

use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{DecodeContext, WireType, encode_key, encode_varint, encoded_len_varint};
use prost::{DecodeError, Message};

use super::pb::referee::v1 as pb;

/// `Game.clock`'s field number.
const CLOCK_FIELD: u32 = 13;
/// `Game.presence`'s field number.
const PRESENCE_FIELD: u32 = 14;
/// `Game.viewer`'s field number.
const VIEWER_FIELD: u32 = 18;
/// `GetGameResponse.game`'s field number.
const GAME_FIELD: u32 = 1;

/// The generated server stubs, with [`GetGameAnswer`] as GetGame's answer.
pub mod server {
    #![allow(missing_docs, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/server/referee.v1.rs"));
}

/// A `Game` encoded without its clock, presence and viewer: the part of
/// GetGame's answer that only a move, a draw offer or the end changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncodedGame(pub Bytes);

impl EncodedGame {
    /// `game` encoded, its clock, presence and viewer left out (they are
    /// sent with each answer).
    pub fn of(mut game: pb::Game) -> EncodedGame {
        game.clock = None;
        game.presence = None;
        game.viewer = 0;
        EncodedGame(Bytes::from(game.encode_to_vec()))
    }
}

/// An [`EncodedGame`] in `SNAPSHOT_VIEW_COMPACT`
/// ([`super::convert::compact_game_pb`]): a type of its own, so that a
/// session keeps both views of a state side by side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactGame(pub EncodedGame);

/// GetGame's answer: `referee.v1.GetGameResponse` on the wire (see the
/// module's documentation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GetGameAnswer {
    /// The game without clock and presence, encoded once per state.
    pub game: EncodedGame,
    /// The clocks now.
    pub clock: pb::ClockState,
    /// The seats' presence now.
    pub presence: pb::Presence,
    /// Whose view it is (a seat number; 0: a spectator's).
    pub viewer: u32,
}

/// The length of a length-delimited field `tag` holding `len` bytes.
fn field_len(tag: u32, len: usize) -> usize {
    prost::encoding::key_len(tag) + encoded_len_varint(len as u64) + len
}

impl GetGameAnswer {
    /// The encoded length of the `Game` it sends.
    fn game_len(&self) -> usize {
        let viewer = if self.viewer == 0 {
            0
        } else {
            prost::encoding::uint32::encoded_len(VIEWER_FIELD, &self.viewer)
        };
        self.game.0.len()
            + field_len(CLOCK_FIELD, self.clock.encoded_len())
            + field_len(PRESENCE_FIELD, self.presence.encoded_len())
            + viewer
    }
}

impl Message for GetGameAnswer {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_key(GAME_FIELD, WireType::LengthDelimited, buf);
        encode_varint(self.game_len() as u64, buf);
        buf.put_slice(&self.game.0);
        prost::encoding::message::encode(CLOCK_FIELD, &self.clock, buf);
        prost::encoding::message::encode(PRESENCE_FIELD, &self.presence, buf);
        if self.viewer != 0 {
            prost::encoding::uint32::encode(VIEWER_FIELD, &self.viewer, buf);
        }
    }

    /// The server never reads an answer: whatever comes is skipped.
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        field_len(GAME_FIELD, self.game_len())
    }

    fn clear(&mut self) {
        *self = GetGameAnswer::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game() -> pb::Game {
        pb::Game {
            game_id: "g".repeat(40),
            ply: 300,
            labels: [("event".to_string(), "x".repeat(200))].into(),
            clock: Some(pb::ClockState {
                running: 2,
                ..Default::default()
            }),
            presence: Some(pb::Presence::default()),
            ..Default::default()
        }
    }

    #[test]
    fn the_answer_decodes_as_the_response_with_its_fresh_clock_and_presence() {
        let full = game();
        let clock = pb::ClockState {
            running: 1,
            remaining_ms: vec![1234, 987_654_321],
            ..Default::default()
        };
        let presence = pb::Presence {
            seats: (1..=3)
                .map(|seat| pb::SeatPresence {
                    seat,
                    connected: seat == 2,
                    away_ms: 77 * u64::from(seat),
                })
                .collect(),
        };
        for viewer in [0, 1, 3] {
            let answer = GetGameAnswer {
                game: EncodedGame::of(pb::Game {
                    viewer: 2,
                    ..full.clone()
                }),
                clock: clock.clone(),
                presence: presence.clone(),
                viewer,
            };
            let bytes = answer.encode_to_vec();
            assert_eq!(bytes.len(), answer.encoded_len());
            let decoded = pb::GetGameResponse::decode(bytes.as_slice()).expect("decodes");
            let expected = pb::Game {
                clock: Some(clock.clone()),
                presence: Some(presence.clone()),
                viewer,
                ..full.clone()
            };
            assert_eq!(decoded.game, Some(expected), "viewer {viewer}");
        }
    }
}
