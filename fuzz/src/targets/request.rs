//! Protobuf request decoding into domain types: the first byte picks a
//! request message, the rest is decoded with prost as tonic's codec would and
//! converted as its handler does (`punct_referee::fuzzing`). Never a panic; a
//! refusal is `INVALID_ARGUMENT` with a message and a `BadRequest` naming a
//! field; what converts round-trips (a move to the wire and back is the same
//! move; an imported record exports and re-imports to the same game).

use super::{POSITIONS, as_rules, check_export_round_trip};
use punct_referee::fuzzing::{Converted, convert_request};
use punct_referee::games::{MoveError, MoveInput, PunctMoveInfo, PunctMoveInput};
use punct_referee::service::grpc::convert;
use punct_referee::service::grpc::games::punct::MOVE_FIELDS;
use tonic::Code;
use tonic_types::StatusExt;

/// One input, checked; panics on a finding.
pub fn run(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let Some(converted) = convert_request(selector, bytes) else {
        return;
    };
    match converted {
        Err(status) => {
            assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
            assert!(!status.message().is_empty());
            let bad = status
                .get_details_bad_request()
                .expect("INVALID_ARGUMENT carries BadRequest");
            assert!(!bad.field_violations.is_empty());
            for v in &bad.field_violations {
                assert!(!v.field.is_empty() && !v.description.is_empty());
            }
        }
        Ok(Converted::SubmitMove(mv, _token)) => {
            for game in POSITIONS.iter() {
                play_checked(game, &mv);
            }
        }
        Ok(Converted::ValidateMove(adjudication)) => match adjudication.result {
            Ok(report) => {
                // The answer's move, sent to the wire and read back, is the
                // same move.
                let wire = convert::move_pb(&report.detail);
                let back = convert::move_input(Some(&wire), &MOVE_FIELDS)
                    .expect("a move the server sent reads back");
                let info = report.detail.get::<PunctMoveInfo>().expect("a PÜNCT move");
                assert_eq!(
                    back.get::<PunctMoveInput>(),
                    Some(&PunctMoveInput {
                        structured: Some(info.mv),
                        notation: Some(info.notation),
                    })
                );
                assert_eq!(Some(report.seat), adjudication.seat);
            }
            Err(MoveError::Illegal { reason, message }) => {
                assert!(!reason.is_empty() && !message.is_empty());
            }
            Err(e @ MoveError::Malformed { .. }) => {
                panic!("a malformed candidate must be an error, not an answer: {e:?}")
            }
        },
        Ok(Converted::ImportGame(replayed)) => check_export_round_trip(&replayed),
        Ok(Converted::CreateGame(..) | Converted::ListGames(_) | Converted::Lookup(_)) => {}
    }
}

/// Plays a converted move on a copy of `game` behind the session layer's
/// trait: accepted, or refused without a change.
fn play_checked(game: &punct_referee::games::punct::Engine, mv: &MoveInput) {
    let mut rules = as_rules(game);
    let before = super::observable(rules.as_ref());
    match rules.play(mv) {
        Ok(report) => assert_eq!(report.ply, game.position().ply() + 1),
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert_eq!(super::observable(rules.as_ref()), before);
        }
    }
}
