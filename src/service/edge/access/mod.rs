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

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

use super::overload::LimitedCall;
use super::refusal::ERROR_DOMAIN;

/// Counter: calls refused by [`AccessLayer`], by `reason` (`KEY_MISSING`,
/// `KEY_UNKNOWN`, `KEY_MALFORMED`, `SCOPE_MISSING`). Never labelled with a key.
pub const ACCESS_REFUSED: &str = "referee_access_refused_total";

/// What a key may do. A key carries any set of them; none implies another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Create and import games (CreateGame, ImportGame).
    GamesCreate,
    /// Abort games (AbortGame, still with the aborting seat's token).
    GamesAdmin,
    /// Create, run and abort tournaments (the tournament service's calls).
    TournamentsManage,
    /// Read any game without a seat token, list games, validate moves.
    Read,
}

impl Scope {
    /// Every scope, in the order the docs list them.
    pub const ALL: [Scope; 4] = [
        Scope::GamesCreate,
        Scope::GamesAdmin,
        Scope::TournamentsManage,
        Scope::Read,
    ];

    /// The scope's name in the keys file.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::GamesCreate => "games:create",
            Scope::GamesAdmin => "games:admin",
            Scope::TournamentsManage => "tournaments:manage",
            Scope::Read => "read",
        }
    }

    /// The scope a keys file names `text`.
    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an RPC needs when keys are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Nothing: a seat token authorises it (moves), or it is public (health,
    /// reflection).
    Open,
    /// A key with this scope.
    Scope(Scope),
    /// A key with `read`, or a seat token in the request (the handler checks
    /// which through [`Caller::may_read`]).
    ReadOrSeat,
}

/// What the RPC at `path` (`/package.Service/Method`) needs when keys are on
/// (the table of docs/SECURITY.md).
pub fn requirement(path: &str) -> Requirement {
    let Some(method) = path.strip_prefix("/referee.v1.RefereeService/") else {
        return match path.strip_prefix("/referee.v1.TournamentService/") {
            // The entrant key authorises the entrant's stream, as a seat
            // token does a move (docs/TOURNAMENTS.md).
            Some("ConnectEntrant") => Requirement::Open,
            Some("GetTournament" | "ListTournaments") => Requirement::Scope(Scope::Read),
            Some(_) => Requirement::Scope(Scope::TournamentsManage),
            None => Requirement::Open,
        };
    };
    match method {
        "CreateGame" | "ImportGame" => Requirement::Scope(Scope::GamesCreate),
        "AbortGame" => Requirement::Scope(Scope::GamesAdmin),
        "ListGames" | "ValidateMove" => Requirement::Scope(Scope::Read),
        "GetGame" | "ListLegalMoves" | "WatchGame" | "ExportGame" | "RenderPosition" => {
            Requirement::ReadOrSeat
        }
        // What the contract itself says: public, like reflection.
        "ListGameKinds" => Requirement::Open,
        // SubmitMove, Resign, OfferDraw, AcceptDraw, ClaimVictory: seat tokens.
        _ => Requirement::Open,
    }
}

/// One key of the keys file: its name, the hash of its secret, its scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The key's name: what logs, spans and metrics show.
    pub name: String,
    /// SHA-256 of the key's text.
    sha256: [u8; 32],
    /// What it may do.
    pub scopes: BTreeSet<Scope>,
}

impl Key {
    /// Whether the key carries `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// The keys of a keys file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keyring {
    keys: Vec<Arc<Key>>,
}

/// Why a keys file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file cannot be read.
    #[error("keys file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a key.
    #[error("keys file line {line}: {problem}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// A line of the keys file as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyLine {
    name: String,
    sha256: String,
    scopes: Vec<String>,
}

/// The SHA-256 of `key`, as the keys file writes it (lowercase hex).
pub fn hash_hex(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh key: `prk_` and 256 random bits in hex (from the thread-local
/// CSPRNG), and the keys-file line that lets it in as `name` with `scopes`.
pub fn new_key(name: &str, scopes: &[Scope]) -> (String, String) {
    let bytes: [u8; 32] = rand::random();
    let key: String = std::iter::once("prk_".to_string())
        .chain(bytes.iter().map(|b| format!("{b:02x}")))
        .collect();
    let line = serde_json::json!({
        "name": name,
        "sha256": hash_hex(&key),
        "scopes": scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    })
    .to_string();
    (key, line)
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl Keyring {
    /// Reads a keys file (see the module docs).
    pub fn load(path: &Path) -> Result<Keyring, KeysError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Keyring::parse(&text)
    }

    /// Reads the text of a keys file.
    pub fn parse(text: &str) -> Result<Keyring, KeysError> {
        let mut keys: Vec<Arc<Key>> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let fail = |problem: String| KeysError::Line { line, problem };
            let parsed: KeyLine = serde_json::from_str(trimmed).map_err(|e| {
                fail(format!(
                    "not a key ({e}): write {{\"name\": …, \"sha256\": …, \"scopes\": […]}}"
                ))
            })?;
            if parsed.name.is_empty() || parsed.name.len() > 64 {
                return Err(fail("a key's name has 1 to 64 characters".into()));
            }
            if keys.iter().any(|k| k.name == parsed.name) {
                return Err(fail(format!("the name `{}` is used twice", parsed.name)));
            }
            let sha256 = parse_hash(&parsed.sha256.to_ascii_lowercase()).ok_or_else(|| {
                fail("sha256 is the key's SHA-256 in 64 hexadecimal digits".into())
            })?;
            if keys.iter().any(|k| k.sha256 == sha256) {
                return Err(fail("the same key is listed twice".into()));
            }
            let mut scopes = BTreeSet::new();
            for scope in &parsed.scopes {
                scopes.insert(Scope::parse(scope).ok_or_else(|| {
                    fail(format!(
                        "`{scope}` is not a scope: use {}",
                        Scope::ALL.map(Scope::as_str).join(", ")
                    ))
                })?);
            }
            keys.push(Arc::new(Key {
                name: parsed.name,
                sha256,
                scopes,
            }));
        }
        Ok(Keyring { keys })
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key whose text is `presented`, compared in constant time with
    /// every key (the loop never stops early).
    pub fn find(&self, presented: &str) -> Option<Arc<Key>> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for key in &self.keys {
            if bool::from(key.sha256.ct_eq(&digest)) {
                found = Some(key.clone());
            }
        }
        found
    }
}

/// The keys in force, swapped whole on reload; `None`: keys are off.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    current: Option<Arc<RwLock<Arc<Keyring>>>>,
    path: Option<PathBuf>,
}

impl Keys {
    /// No keys: everything is allowed (trusted networks).
    pub fn off() -> Keys {
        Keys::default()
    }

    /// These keys, not read from a file.
    pub fn fixed(keyring: Keyring) -> Keys {
        Keys {
            current: Some(Arc::new(RwLock::new(Arc::new(keyring)))),
            path: None,
        }
    }

    /// The keys of the file at `path`, read again on [`Keys::reload`].
    pub fn from_file(path: &Path) -> Result<Keys, KeysError> {
        let keyring = Keyring::load(path)?;
        Ok(Keys {
            current: Some(Arc::new(RwLock::new(Arc::new(keyring)))),
            path: Some(path.to_path_buf()),
        })
    }

    /// Whether keys are on.
    pub fn enabled(&self) -> bool {
        self.current.is_some()
    }

    /// The keys in force now.
    pub fn keyring(&self) -> Option<Arc<Keyring>> {
        self.current
            .as_ref()
            .map(|c| c.read().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Reads the keys file again; on failure the keys in force stay.
    /// Returns how many keys are now in force.
    pub fn reload(&self) -> Result<usize, KeysError> {
        let (Some(current), Some(path)) = (&self.current, &self.path) else {
            return Ok(self.keyring().map_or(0, |k| k.len()));
        };
        let keyring = Keyring::load(path)?;
        let n = keyring.len();
        *current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keyring);
        Ok(n)
    }
}

/// Who is calling, as far as the server can tell: put in every request's
/// extensions by [`AccessLayer`].
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

    /// The caller of `request` (anonymous when no [`AccessLayer`] ran).
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

fn refusal(code: Code, reason: &str, message: String, scope: Option<Scope>) -> Status {
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
fn key_missing(what: &str) -> Status {
    refusal(
        Code::Unauthenticated,
        "KEY_MISSING",
        format!("{what}: send `authorization: Bearer <key>`"),
        None,
    )
}

/// `PERMISSION_DENIED` + `ErrorInfo{SCOPE_MISSING, scope}`.
fn scope_missing(name: &str, scope: Scope, what: &str) -> Status {
    refusal(
        Code::PermissionDenied,
        "SCOPE_MISSING",
        format!("the key `{name}` may not {what}: it needs the scope `{scope}`"),
        Some(scope),
    )
}

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
    use super::*;

    fn line(name: &str, key: &str, scopes: &[&str]) -> String {
        serde_json::json!({"name": name, "sha256": hash_hex(key), "scopes": scopes}).to_string()
    }

    #[test]
    fn a_keys_file_reads_names_hashes_and_scopes() {
        let text = format!(
            "# platform keys\n\n{}\n{}\n",
            line("lobby", "k1", &["games:create", "read"]),
            line("ops", "k2", &["games:admin"])
        );
        let ring = Keyring::parse(&text).unwrap();
        assert_eq!(ring.len(), 2);
        let lobby = ring.find("k1").unwrap();
        assert_eq!(lobby.name, "lobby");
        assert_eq!(
            lobby.scopes,
            BTreeSet::from([Scope::GamesCreate, Scope::Read])
        );
        assert_eq!(ring.find("k2").unwrap().name, "ops");
        assert!(ring.find("k3").is_none());
        assert!(ring.find("").is_none());
    }

    #[test]
    fn a_new_key_is_let_in_by_its_line() {
        let (key, line) = new_key("lobby", &[Scope::GamesCreate, Scope::Read]);
        assert!(key.starts_with("prk_") && key.len() == 68, "{key}");
        assert!(!line.contains(&key));
        let ring = Keyring::parse(&line).unwrap();
        let found = ring.find(&key).unwrap();
        assert_eq!(found.name, "lobby");
        assert!(found.has(Scope::Read) && !found.has(Scope::GamesAdmin));
        assert_ne!(new_key("lobby", &[]).0, key, "keys are random");
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        for (text, expected) in [
            ("{\"name\": \"a\"}".to_string(), "line 1"),
            (
                format!("\n{}", line("a", "k", &["games:play"])),
                "`games:play` is not a scope",
            ),
            (
                format!("{}\n{}", line("a", "k", &[]), line("a", "j", &[])),
                "used twice",
            ),
            (
                format!("{}\n{}", line("a", "k", &[]), line("b", "k", &[])),
                "listed twice",
            ),
            (
                "{\"name\": \"a\", \"sha256\": \"abc\", \"scopes\": []}".to_string(),
                "64 hexadecimal digits",
            ),
        ] {
            let err = Keyring::parse(&text).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} should say {expected}");
        }
    }

    #[test]
    fn every_rpc_has_its_documented_requirement() {
        let r = |m: &str| requirement(&format!("/referee.v1.RefereeService/{m}"));
        assert_eq!(r("CreateGame"), Requirement::Scope(Scope::GamesCreate));
        assert_eq!(r("ImportGame"), Requirement::Scope(Scope::GamesCreate));
        assert_eq!(r("AbortGame"), Requirement::Scope(Scope::GamesAdmin));
        assert_eq!(r("ListGames"), Requirement::Scope(Scope::Read));
        assert_eq!(r("ValidateMove"), Requirement::Scope(Scope::Read));
        for m in [
            "GetGame",
            "ListLegalMoves",
            "WatchGame",
            "ExportGame",
            "RenderPosition",
        ] {
            assert_eq!(r(m), Requirement::ReadOrSeat, "{m}");
        }
        for m in [
            "SubmitMove",
            "Resign",
            "OfferDraw",
            "AcceptDraw",
            "ClaimVictory",
            "ListGameKinds",
        ] {
            assert_eq!(r(m), Requirement::Open, "{m}");
        }
        for m in [
            "CreateTournament",
            "AddEntrant",
            "StartTournament",
            "CancelTournament",
        ] {
            assert_eq!(
                requirement(&format!("/referee.v1.TournamentService/{m}")),
                Requirement::Scope(Scope::TournamentsManage),
                "{m}"
            );
        }
        for m in ["GetTournament", "ListTournaments"] {
            assert_eq!(
                requirement(&format!("/referee.v1.TournamentService/{m}")),
                Requirement::Scope(Scope::Read),
                "{m}"
            );
        }
        assert_eq!(
            requirement("/referee.v1.TournamentService/ConnectEntrant"),
            Requirement::Open,
            "the entrant key is the credential"
        );
        assert_eq!(
            requirement("/grpc.health.v1.Health/Check"),
            Requirement::Open
        );
    }

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
