//! Who is calling ([`Caller`], [`ClientId`]) and the statuses a caller is
//! refused with.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

use super::{ACCESS_REFUSED, Key, Scope};
use crate::service::edge::refusal::ERROR_DOMAIN;

/// Who is calling, as far as the server can tell: put in every request's
/// extensions by [`super::AccessLayer`].
#[derive(Debug, Clone)]
pub struct Caller {
    /// Whether keys are on.
    pub keys_on: bool,
    /// The key the call proved, if any.
    pub key: Option<Arc<Key>>,
    /// The connection's peer, when known.
    pub peer: Option<SocketAddr>,
}

/// Whom per-client limits count against: the key, or without one the peer's
/// address (docs/SECURITY.md, "Limits per client").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientId {
    /// A platform key, by name.
    Key(String),
    /// A caller without a key, by its IP address.
    Peer(IpAddr),
    /// A caller whose address is unknown (in-process transports).
    Unknown,
}

impl ClientId {
    /// The metric label of this client: the key's name, else `anonymous`
    /// (addresses are not labels: there would be no bound on them).
    pub fn label(&self) -> String {
        match self {
            ClientId::Key(name) => name.clone(),
            ClientId::Peer(_) | ClientId::Unknown => "anonymous".to_string(),
        }
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientId::Key(name) => write!(f, "key {name}"),
            ClientId::Peer(ip) => write!(f, "address {ip}"),
            ClientId::Unknown => f.write_str("an unknown peer"),
        }
    }
}

impl Caller {
    /// A caller of a server without keys, from `peer`.
    pub fn anonymous(peer: Option<SocketAddr>) -> Caller {
        Caller {
            keys_on: false,
            key: None,
            peer,
        }
    }

    /// The caller of `request` (anonymous when no [`super::AccessLayer`] ran).
    pub fn of<T>(request: &tonic::Request<T>) -> Caller {
        request
            .extensions()
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| Caller::anonymous(None))
    }

    /// Whom limits count this caller against.
    pub fn client(&self) -> ClientId {
        match (&self.key, self.peer) {
            (Some(key), _) => ClientId::Key(key.name.clone()),
            (None, Some(peer)) => ClientId::Peer(peer.ip()),
            (None, None) => ClientId::Unknown,
        }
    }

    /// Whether this caller may make a read of one game that carries `token`
    /// (empty: none): always without keys; with keys, with a `read` key or a
    /// seat token (which the handler then checks like any token).
    pub fn may_read(&self, token: &str) -> Result<(), Status> {
        if !self.keys_on || !token.is_empty() {
            return Ok(());
        }
        match &self.key {
            Some(key) if key.has(Scope::Read) => Ok(()),
            Some(key) => Err(scope_missing(&key.name, Scope::Read, "read a game")),
            None => Err(key_missing(
                "reading a game needs a key with `read` or a seat token",
            )),
        }
    }
}

pub(super) fn refusal(code: Code, reason: &str, message: String, scope: Option<Scope>) -> Status {
    let mut metadata = HashMap::new();
    if let Some(scope) = scope {
        metadata.insert("scope".to_string(), scope.to_string());
    }
    metrics::counter!(ACCESS_REFUSED, "reason" => reason.to_string()).increment(1);
    Status::with_error_details(
        code,
        crate::service::echo::bounded(message),
        ErrorDetails::with_error_info(reason, ERROR_DOMAIN, metadata),
    )
}

/// `UNAUTHENTICATED` + `ErrorInfo{KEY_MISSING}`: the call needs a key.
pub(super) fn key_missing(what: &str) -> Status {
    refusal(
        Code::Unauthenticated,
        "KEY_MISSING",
        format!("{what}: send `authorization: Bearer <key>`"),
        None,
    )
}

/// `PERMISSION_DENIED` + `ErrorInfo{SCOPE_MISSING, scope}`.
pub(super) fn scope_missing(name: &str, scope: Scope, what: &str) -> Status {
    refusal(
        Code::PermissionDenied,
        "SCOPE_MISSING",
        format!("the key `{name}` may not {what}: it needs the scope `{scope}`"),
        Some(scope),
    )
}

#[cfg(test)]
mod tests {
    use super::super::Keyring;
    use super::super::keys::test_line as line;
    use super::*;

    #[test]
    fn reads_need_a_read_key_or_a_seat_token() {
        let ring = Keyring::parse(&format!(
            "{}\n{}",
            line("lobby", "a", &["games:create"]),
            line("viewer", "b", &["read"])
        ))
        .unwrap();
        let caller = |key: Option<&str>| Caller {
            keys_on: true,
            key: key.and_then(|k| ring.find(k)),
            peer: None,
        };
        assert!(caller(None).may_read("seat-token").is_ok());
        assert_eq!(
            caller(None).may_read("").unwrap_err().code(),
            Code::Unauthenticated
        );
        assert_eq!(
            caller(Some("a")).may_read("").unwrap_err().code(),
            Code::PermissionDenied
        );
        assert!(caller(Some("b")).may_read("").is_ok());
        assert!(Caller::anonymous(None).may_read("").is_ok());
    }
}
