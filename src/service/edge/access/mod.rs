//! Who may do what: platform keys and the scopes they carry (docs/SECURITY.md).
//!
//! Without a keys file (`--keys`) every caller may do everything, as on a
//! trusted network, and an `authorization` header is ignored. With one:
//!
//! * a call may carry `authorization: Bearer <key>`; the key is hashed
//!   (SHA-256) and compared in constant time with every key of the file, so
//!   neither the key nor the hashes leak through timing, and the key itself
//!   is never kept, logged or counted (the span records the key's *name*);
//! * a present but unknown or malformed key is refused with
//!   `UNAUTHENTICATED` on every call (health checks aside), so a
//!   misconfigured platform notices at once;
//! * each RPC needs what [`requirement`] says: a scope, or for the reads of
//!   one game a scope *or* a seat token in the request (checked by the
//!   handler through [`Caller::may_read`]); moves are authorised by seat
//!   tokens alone, as without keys.
//!
//! The keys file is JSON lines (`#` comments and blank lines skipped), one
//! key a line: `{"name": "lobby", "sha256": "<64 hex>", "scopes": ["games:create", "read"]}`.
//! `punct-referee keys new` makes a key and its line. The file is read again
//! on SIGHUP (see [`super::reload::Reloader`]): keys rotate without a
//! restart.

mod caller;
mod keys;
mod scope;

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::{Code, Status};

use self::caller::{key_missing, refusal, scope_missing};
use super::overload::LimitedCall;

pub use self::caller::{Caller, ClientId};
pub use self::keys::{Key, Keyring, Keys, KeysError, hash_hex, new_key};
pub use self::scope::{Requirement, Scope, requirement};

/// Counter: calls refused by [`AccessLayer`], by `reason` (`KEY_MISSING`,
/// `KEY_UNKNOWN`, `KEY_MALFORMED`, `SCOPE_MISSING`). Never labelled with a key.
pub const ACCESS_REFUSED: &str = "referee_access_refused_total";

/// What the call at `path` may not do without `scope`, in words.
fn action(path: &str) -> String {
    let method = path.rsplit('/').next().unwrap_or(path);
    format!("call {method}")
}

/// Reads the key of `headers` against `keys`: `Ok(None)` without one.
fn authenticate(keys: &Keyring, headers: &http::HeaderMap) -> Result<Option<Arc<Key>>, Status> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let presented = value
        .to_str()
        .ok()
        .and_then(|v| {
            let (scheme, key) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
        })
        .filter(|key| !key.is_empty())
        .ok_or_else(|| {
            refusal(
                Code::Unauthenticated,
                "KEY_MALFORMED",
                "the authorization metadata is not `Bearer <key>`".to_string(),
                None,
            )
        })?;
    keys.find(presented).map(Some).ok_or_else(|| {
        refusal(
            Code::Unauthenticated,
            "KEY_UNKNOWN",
            "the key is not one of this server's keys".to_string(),
            None,
        )
    })
}

/// Path prefix of the calls never checked (health probes).
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

/// Decides whether the request may go on, and who made it.
fn admit(
    keys: &Keys,
    path: &str,
    headers: &http::HeaderMap,
    peer: Option<SocketAddr>,
) -> Result<Caller, Status> {
    let Some(keyring) = keys.keyring() else {
        return Ok(Caller::anonymous(peer));
    };
    if path.starts_with(HEALTH_PREFIX) {
        return Ok(Caller {
            keys_on: true,
            key: None,
            peer,
        });
    }
    let key = authenticate(&keyring, headers)?;
    if let Some(key) = &key {
        tracing::Span::current().record("client", key.name.as_str());
    }
    if let Requirement::Scope(scope) = requirement(path) {
        match &key {
            None => {
                return Err(key_missing(&format!(
                    "{} needs a key with `{scope}`",
                    action(path)
                )));
            }
            Some(k) if !k.has(scope) => return Err(scope_missing(&k.name, scope, &action(path))),
            Some(_) => {}
        }
    }
    Ok(Caller {
        keys_on: true,
        key,
        peer,
    })
}

/// The tower layer that authenticates every gRPC call and checks its scope
/// (see the module docs); the [`Caller`] it finds goes into the request's
/// extensions for the handlers and the per-client limits.
#[derive(Debug, Clone, Default)]
pub struct AccessLayer {
    keys: Keys,
}

impl AccessLayer {
    /// Checks calls against `keys`.
    pub fn new(keys: Keys) -> AccessLayer {
        AccessLayer { keys }
    }
}

impl<S> tower::Layer<S> for AccessLayer {
    type Service = Access<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Access {
            inner,
            keys: self.keys.clone(),
        }
    }
}

/// The service [`AccessLayer`] wraps around the gRPC routes.
#[derive(Debug, Clone)]
pub struct Access<S> {
    inner: S,
    keys: Keys,
}

impl<S, B, R> tower::Service<http::Request<B>> for Access<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    R: Default,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = LimitedCall<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let peer = super::listen::peer_of(request.extensions());
        match admit(&self.keys, request.uri().path(), request.headers(), peer) {
            Ok(caller) => {
                request.extensions_mut().insert(caller);
                LimitedCall::admitted(self.inner.call(request))
            }
            Err(status) => {
                tracing::debug!(
                    path = request.uri().path(),
                    reason = status.message(),
                    "call refused"
                );
                LimitedCall::refused(status.into_http())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic_types::StatusExt as _;

    use super::keys::test_line as line;
    use super::*;

    fn headers(value: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn admission_checks_the_key_then_the_scope() {
        let keys =
            Keys::fixed(Keyring::parse(&line("lobby", "secret", &["games:create"])).unwrap());
        let create = "/referee.v1.RefereeService/CreateGame";
        let abort = "/referee.v1.RefereeService/AbortGame";
        let none = http::HeaderMap::new();
        let reason = |s: Status| {
            (
                s.code(),
                s.get_details_error_info().unwrap().reason,
                s.message().to_string(),
            )
        };
        let (code, why, _) = reason(admit(&keys, create, &none, None).unwrap_err());
        assert_eq!((code, why.as_str()), (Code::Unauthenticated, "KEY_MISSING"));
        let (code, why, message) =
            reason(admit(&keys, create, &headers("Bearer wrong"), None).unwrap_err());
        assert_eq!((code, why.as_str()), (Code::Unauthenticated, "KEY_UNKNOWN"));
        assert!(!message.contains("wrong"), "{message}");
        let (code, why, _) = reason(admit(&keys, create, &headers("Basic x"), None).unwrap_err());
        assert_eq!(
            (code, why.as_str()),
            (Code::Unauthenticated, "KEY_MALFORMED")
        );
        let caller = admit(&keys, create, &headers("Bearer secret"), None).unwrap();
        assert_eq!(caller.client(), ClientId::Key("lobby".into()));
        let (code, why, message) =
            reason(admit(&keys, abort, &headers("bearer secret"), None).unwrap_err());
        assert_eq!(
            (code, why.as_str()),
            (Code::PermissionDenied, "SCOPE_MISSING")
        );
        assert!(message.contains("games:admin"), "{message}");
        // Health probes pass even with a bad key.
        assert!(
            admit(
                &keys,
                "/grpc.health.v1.Health/Check",
                &headers("Bearer x"),
                None
            )
            .is_ok()
        );
        // Without keys nothing is checked.
        assert!(admit(&Keys::off(), abort, &headers("Bearer x"), None).is_ok());
    }
}
