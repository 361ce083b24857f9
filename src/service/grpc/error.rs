//! The one place where failures become `tonic::Status`: a precise code, a
//! readable message and `google.rpc` details (tonic-types) a client can decode.
//!
//! | failure | code | details |
//! |---|---|---|
//! | malformed input | `INVALID_ARGUMENT` | `BadRequest{field, description}` |
//! | bad record | `INVALID_ARGUMENT` | `BadRequest{record}` + `ErrorInfo{reason}` |
//! | unknown game | `NOT_FOUND` | `ResourceInfo{referee.v1.Game, id}` |
//! | no / malformed token | `UNAUTHENTICATED` | `ErrorInfo{TOKEN_MISSING/TOKEN_MALFORMED}` |
//! | token of no seat | `PERMISSION_DENIED` | `ErrorInfo{WRONG_TOKEN}` |
//! | illegal move, not your turn, game over, … | `FAILED_PRECONDITION` | `ErrorInfo{reason}` |
//! | stale `expected_ply` | `ABORTED` | `ErrorInfo{STALE_PLY, expected_ply, current_ply}` |
//! | `from_ply` past the game | `OUT_OF_RANGE` | `BadRequest{from_ply}` |
//! | a server limit | `RESOURCE_EXHAUSTED` | `QuotaFailure` + `ErrorInfo{LIMIT_REACHED}` |
//! | too many calls in flight | `RESOURCE_EXHAUSTED` | the same + `RetryInfo` |
//! | a client over its call rate | `RESOURCE_EXHAUSTED` | the same + `RetryInfo` (the wait) |
//! | a client over its games / watch streams | `RESOURCE_EXHAUSTED` | `QuotaFailure` + `ErrorInfo{LIMIT_REACHED}` |
//! | no / unknown / malformed platform key | `UNAUTHENTICATED` | `ErrorInfo{KEY_MISSING/KEY_UNKNOWN/KEY_MALFORMED}` |
//! | a key without the call's scope | `PERMISSION_DENIED` | `ErrorInfo{SCOPE_MISSING, scope}` |
//! | the game moved to another replica (cluster) | `UNAVAILABLE` | `ErrorInfo{GAME_MOVED, game_id}` |
//! | the tournament moved to another replica (cluster) | `UNAVAILABLE` | `ErrorInfo{TOURNAMENT_MOVED, tournament_id}` |
//!
//! The refusals of the front door are made where they happen, in
//! [`crate::service::edge`]: keys and scopes in its `access`, the limits
//! per client and the shedding of calls in flight in its `refusal` (whose
//! [`limit_details`] every limit here shares, and whose [`ERROR_DOMAIN`]
//! every error carries), so the front door needs nothing of this room.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::games::MoveError;
use crate::service::echo::{bounded, echo};
use crate::service::edge::refusal::limit_details;
use crate::service::sessions::SessionError;
use crate::service::tournaments::TournamentError;

/// The header of a `GAME_MOVED` (or `TOURNAMENT_MOVED`) refusal (see
/// [`status`]).
pub const GAME_MOVED_HEADER: &str = "referee-game-moved";

pub use crate::service::edge::refusal::ERROR_DOMAIN;

fn error_info(reason: &str, metadata: HashMap<String, String>) -> ErrorDetails {
    ErrorDetails::with_error_info(reason, ERROR_DOMAIN, metadata)
}

/// A malformed-input status naming the offending field. Every string is
/// bounded ([`crate::service::echo`]): a description that quotes input
/// cannot make the status too long for a client.
pub fn invalid_argument(field: &str, description: impl Into<String>) -> Status {
    let field = echo(field);
    let description: String = description.into();
    Status::with_error_details(
        Code::InvalidArgument,
        bounded(format!("{field}: {description}")),
        ErrorDetails::with_bad_request_violation(field, bounded(description)),
    )
}

/// The status of a refused session call (its message bounded, and each
/// quote of input in it and in its details: [`crate::service::echo`]).
#[allow(
    clippy::too_many_lines,
    reason = "one match over every session refusal: the table of statuses in docs/API.md, kept in one place on purpose"
)]
pub fn status(err: SessionError) -> Status {
    let message = bounded(err.to_string());
    match err {
        SessionError::InvalidArgument { field, description } => {
            invalid_argument(field, description)
        }
        SessionError::Rejected(MoveError::Malformed { field, description }) => {
            invalid_argument(field, description)
        }
        SessionError::NotFound(id) => Status::with_error_details(
            Code::NotFound,
            message,
            ErrorDetails::with_resource_info("referee.v1.Game", echo(&id), "", "no such game"),
        ),
        SessionError::Unauthenticated { reason, .. } => Status::with_error_details(
            Code::Unauthenticated,
            message,
            error_info(reason, HashMap::new()),
        ),
        SessionError::PermissionDenied(_) => Status::with_error_details(
            Code::PermissionDenied,
            message,
            error_info("WRONG_TOKEN", HashMap::new()),
        ),
        SessionError::Rejected(MoveError::Illegal { reason, .. }) => Status::with_error_details(
            Code::FailedPrecondition,
            message,
            error_info(reason, HashMap::new()),
        ),
        SessionError::StalePly { expected, current } => Status::with_error_details(
            Code::Aborted,
            message,
            error_info(
                "STALE_PLY",
                HashMap::from([
                    ("expected_ply".to_string(), expected.to_string()),
                    ("current_ply".to_string(), current.to_string()),
                ]),
            ),
        ),
        SessionError::OutOfRange { field, .. } => Status::with_error_details(
            Code::OutOfRange,
            message.clone(),
            ErrorDetails::with_bad_request_violation(field.to_string(), message),
        ),
        SessionError::Record(e) => {
            let mut details =
                ErrorDetails::with_bad_request_violation("record", bounded(e.to_string()));
            let mut metadata = HashMap::new();
            if let Some(line) = e.line {
                metadata.insert("line".to_string(), line.to_string());
            }
            details.set_error_info(
                e.reason.unwrap_or("RECORD_MALFORMED"),
                ERROR_DOMAIN,
                metadata,
            );
            Status::with_error_details(Code::InvalidArgument, message, details)
        }
        SessionError::LimitReached { what, max } => {
            Status::with_error_details(Code::ResourceExhausted, message, limit_details(what, max))
        }
        SessionError::Unavailable(_) => Status::with_error_details(
            Code::Unavailable,
            message,
            ErrorDetails::with_error_info("STORAGE_UNAVAILABLE", ERROR_DOMAIN, HashMap::new()),
        ),
        SessionError::Moved(id) => {
            let mut status = Status::with_error_details(
                Code::Unavailable,
                message,
                ErrorDetails::with_error_info(
                    "GAME_MOVED",
                    ERROR_DOMAIN,
                    HashMap::from([("game_id".to_string(), echo(&id).into_owned())]),
                ),
            );
            // Read by the cluster's forwarding layer, which then calls the
            // new owner itself (docs/CLUSTER.md).
            status.metadata_mut().insert(
                GAME_MOVED_HEADER,
                tonic::metadata::MetadataValue::from_static("1"),
            );
            status
        }
    }
}

/// The status of a refused tournament call (docs/TOURNAMENTS.md, "Errors").
pub fn tournament_status(err: TournamentError) -> Status {
    let message = bounded(err.to_string());
    match err {
        TournamentError::InvalidArgument { field, description } => {
            invalid_argument(&field, description)
        }
        TournamentError::NotFound(id) => Status::with_error_details(
            Code::NotFound,
            message,
            ErrorDetails::with_resource_info(
                "referee.v1.Tournament",
                echo(&id),
                "",
                "no such tournament",
            ),
        ),
        TournamentError::Unauthenticated { reason, .. } => Status::with_error_details(
            Code::Unauthenticated,
            message,
            error_info(reason, HashMap::new()),
        ),
        TournamentError::PermissionDenied { reason, .. } => Status::with_error_details(
            Code::PermissionDenied,
            message,
            error_info(reason, HashMap::new()),
        ),
        TournamentError::FailedPrecondition { reason, .. } => Status::with_error_details(
            Code::FailedPrecondition,
            message,
            error_info(reason, HashMap::new()),
        ),
        TournamentError::LimitReached { what, max } => {
            Status::with_error_details(Code::ResourceExhausted, message, limit_details(what, max))
        }
        TournamentError::Unavailable(_) => Status::with_error_details(
            Code::Unavailable,
            message,
            ErrorDetails::with_error_info("STORAGE_UNAVAILABLE", ERROR_DOMAIN, HashMap::new()),
        ),
        TournamentError::Moved(id) => {
            let mut status = Status::with_error_details(
                Code::Unavailable,
                message,
                ErrorDetails::with_error_info(
                    "TOURNAMENT_MOVED",
                    ERROR_DOMAIN,
                    HashMap::from([("tournament_id".to_string(), echo(&id).into_owned())]),
                ),
            );
            // As for a game: the forwarding layer then calls the new owner.
            status.metadata_mut().insert(
                GAME_MOVED_HEADER,
                tonic::metadata::MetadataValue::from_static("1"),
            );
            status
        }
    }
}

impl From<SessionError> for Status {
    fn from(err: SessionError) -> Status {
        status(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn illegal_move_is_failed_precondition_with_its_reason() {
        let s = status(SessionError::Rejected(MoveError::Illegal {
            reason: "PIECE_IMMOBILE",
            message: "the piece on E5 is covered and cannot move".into(),
        }));
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert!(s.message().contains("covered"));
        let info = s.get_details_error_info().unwrap();
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("PIECE_IMMOBILE", ERROR_DOMAIN)
        );
    }

    #[test]
    fn stale_ply_is_aborted_with_both_plies() {
        let s = status(SessionError::StalePly {
            expected: 3,
            current: 4,
        });
        assert_eq!(s.code(), Code::Aborted);
        let info = s.get_details_error_info().unwrap();
        assert_eq!(info.reason, "STALE_PLY");
        assert_eq!(info.metadata["current_ply"], "4");
    }

    #[test]
    fn malformed_input_is_invalid_argument_with_bad_request() {
        let s = invalid_argument("move.punct.notation", "garbled");
        assert_eq!(s.code(), Code::InvalidArgument);
        let br = s.get_details_bad_request().unwrap();
        assert_eq!(br.field_violations[0].field, "move.punct.notation");
    }

    #[test]
    fn limits_are_resource_exhausted_with_quota_failure() {
        let s = status(SessionError::LimitReached {
            what: "sessions",
            max: 1,
        });
        assert_eq!(s.code(), Code::ResourceExhausted);
        assert_eq!(
            s.get_details_quota_failure().unwrap().violations[0].subject,
            "sessions"
        );
    }

    #[test]
    fn a_huge_input_is_quoted_in_part_in_the_message_and_the_details() {
        let id = "g".repeat(100_000);
        let statuses = [
            status(SessionError::NotFound(id.clone())),
            status(SessionError::PermissionDenied(id.clone())),
            status(SessionError::Moved(id.clone())),
            status(SessionError::InvalidArgument {
                field: "labels",
                description: format!("`{id}` is not a label"),
            }),
            invalid_argument("move.punct.notation", format!("`{id}` is not a move")),
            tournament_status(TournamentError::NotFound(id.clone())),
            tournament_status(TournamentError::Moved(id.clone())),
        ];
        for s in statuses {
            assert!(s.message().len() < 1024, "{} bytes", s.message().len());
            assert!(s.message().contains(" bytes)"), "{}", s.message());
            assert!(
                s.details().len() < 2048,
                "{} bytes of details",
                s.details().len()
            );
            // What goes on the wire: both headers, well under the 16 KiB of
            // metadata a standard client takes.
            let mut headers = http::HeaderMap::new();
            s.add_header(&mut headers).unwrap();
            let size: usize = headers
                .iter()
                .map(|(k, v)| k.as_str().len() + v.len())
                .sum();
            assert!(size < 4096, "{size} bytes of headers");
        }
        let s = status(SessionError::NotFound(id));
        assert_eq!(s.code(), Code::NotFound);
        let info = s.get_details_resource_info().unwrap();
        assert!(info.resource_name.ends_with("… (100000 bytes)"));
    }
}
