//! The statuses of the front door's limits: a call shed because the server
//! is busy ([`overloaded`]) and a client over one of its own limits
//! ([`client_limit`]), both `RESOURCE_EXHAUSTED` with `QuotaFailure` and
//! `ErrorInfo{LIMIT_REACHED}` ([`limit_details`], which the handlers' limits
//! of `crate::service::grpc::error` share). [`ERROR_DOMAIN`] is the
//! `ErrorInfo.domain` of every error the server sends; it lives here, at
//! the bottom of the service, so the edge needs nothing from the rooms
//! above it (docs/API.md, "Errors").

use std::collections::HashMap;
use std::time::Duration;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// How long a call shed by [`super::overload`] is told to wait before
/// trying again.
pub const RETRY_AFTER: Duration = Duration::from_millis(50);

/// The `ErrorInfo.domain` of every error this server sends.
pub const ERROR_DOMAIN: &str = "referee.v1";

/// `QuotaFailure{what}` + `ErrorInfo{LIMIT_REACHED, limit: what}`.
pub fn limit_details(what: &str, max: usize) -> ErrorDetails {
    let mut details = ErrorDetails::with_quota_failure_violation(
        what,
        format!("at most {max} {}", what.replace('_', " ")),
    );
    details.set_error_info(
        "LIMIT_REACHED",
        ERROR_DOMAIN,
        HashMap::from([("limit".to_string(), what.to_string())]),
    );
    details
}

/// The answer to a call shed because the server is at its limit `max` of
/// `what` (`concurrent_calls`): like any limit, plus a `RetryInfo`, since
/// this one passes by itself.
pub fn overloaded(what: &str, max: usize) -> Status {
    let mut details = limit_details(what, max);
    details.set_retry_info(Some(RETRY_AFTER));
    Status::with_error_details(
        Code::ResourceExhausted,
        format!(
            "the server is busy: {what} limit reached ({max}); retry in {} ms",
            RETRY_AFTER.as_millis()
        ),
        details,
    )
}

/// The answer to a call over a per-client limit `max` of `what`
/// ([`super::quota`]): like any limit, plus a `RetryInfo` of `retry` when
/// the limit passes by itself (the call rate).
pub fn client_limit(what: &str, max: usize, retry: Option<Duration>) -> Status {
    let mut details = limit_details(what, max);
    let message = match retry {
        Some(wait) => {
            // Rounded up: a client that waits this long gets through.
            let millis = wait.as_micros().div_ceil(1000) as u64;
            let wait = Duration::from_millis(millis.max(1));
            details.set_retry_info(Some(wait));
            format!(
                "this client is over its limit of {max} {}; retry in {} ms",
                what.replace('_', " "),
                wait.as_millis()
            )
        }
        None => format!(
            "this client has its most {} ({max})",
            what.replace('_', " ").replace(" per client", "")
        ),
    };
    Status::with_error_details(Code::ResourceExhausted, message, details)
}
