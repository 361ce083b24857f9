//! The forwarding layer: a call about one game that another replica owns is
//! sent on to that replica as it came (headers, key, deadline, message) and
//! its answer, or stream, comes back unchanged (docs/CLUSTER.md,
//! "Forwarding").
//!
//! It sits innermost in the server's layers, after keys and limits are
//! checked here. The game is read from the request itself: every call about
//! one game has its id as field 1 of its message, so the layer decodes only
//! that field of the (small, size-limited) unary message. A call this
//! replica answers and that finds the game moved meanwhile (a fenced write)
//! is sent on to the new owner once. A forwarded call is marked, and is
//! never forwarded twice: a replica that gets one for a game it does not
//! own answers `UNAVAILABLE` (`GAME_MOVED`), and the first replica asks the
//! database again.
//!
//! The calls about one tournament are routed the same way to the
//! tournament's owner ([`super::tournaments`]): their message has the
//! tournament id as field 1, except `ConnectEntrant`, routed by its
//! `tournament_id` (field 2) when given, else by the tournament its
//! entrant key (field 1) belongs to.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::Frame;
use http_body_util::{BodyExt as _, Full, Limited};
use tonic::body::Body;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

use super::tournaments::TournamentCluster;
use super::{Cluster, Route, RouteError};
use crate::service::grpc::error::{ERROR_DOMAIN, GAME_MOVED_HEADER};
use crate::service::telemetry;

/// The one streaming call: served by every replica itself.
const WATCH_GAME: &str = "/referee.v1.RefereeService/WatchGame";

/// The header that marks a forwarded call (its value: the forwarding node).
pub const FORWARDED_HEADER: &str = "referee-forwarded-by";

/// The calls about one game, whose message has the game id as field 1.
const GAME_CALLS: [&str; 11] = [
    "/referee.v1.RefereeService/GetGame",
    "/referee.v1.RefereeService/ListLegalMoves",
    "/referee.v1.RefereeService/SubmitMove",
    "/referee.v1.RefereeService/WatchGame",
    "/referee.v1.RefereeService/Resign",
    "/referee.v1.RefereeService/OfferDraw",
    "/referee.v1.RefereeService/AcceptDraw",
    "/referee.v1.RefereeService/AbortGame",
    "/referee.v1.RefereeService/ExportGame",
    "/referee.v1.RefereeService/ClaimVictory",
    "/referee.v1.RefereeService/RenderPosition",
];

/// The calls about one tournament, whose message has the tournament id as
/// field 1.
const TOURNAMENT_CALLS: [&str; 4] = [
    "/referee.v1.TournamentService/AddEntrant",
    "/referee.v1.TournamentService/StartTournament",
    "/referee.v1.TournamentService/CancelTournament",
    "/referee.v1.TournamentService/GetTournament",
];

/// The entrants' stream: `entrant_key` is field 1, `tournament_id` field 2.
const CONNECT_ENTRANT: &str = "/referee.v1.TournamentService/ConnectEntrant";

/// Just the game id of a call's message (prost skips the other fields).
#[derive(Clone, PartialEq, prost::Message)]
struct GameIdOnly {
    #[prost(string, tag = "1")]
    game_id: String,
}

/// Just the key and tournament of a `ConnectEntrant` message.
#[derive(Clone, PartialEq, prost::Message)]
struct EntrantOnly {
    #[prost(string, tag = "1")]
    entrant_key: String,
    #[prost(string, tag = "2")]
    tournament_id: String,
}

/// What a family of calls is about, and who routes it.
#[derive(Debug, Clone)]
enum Family {
    /// A game's calls.
    Game(Arc<Cluster>),
    /// A tournament's calls.
    Tournament(Arc<TournamentCluster>),
}

impl Family {
    fn cluster(&self) -> &Cluster {
        match self {
            Family::Game(cluster) => cluster,
            Family::Tournament(t) => t.cluster(),
        }
    }

    /// What the subject is called in messages.
    fn noun(&self) -> &'static str {
        match self {
            Family::Game(_) => "game",
            Family::Tournament(_) => "tournament",
        }
    }

    /// The `ErrorInfo` metadata key naming the subject.
    fn id_key(&self) -> &'static str {
        match self {
            Family::Game(_) => "game_id",
            Family::Tournament(_) => "tournament_id",
        }
    }

    /// The reason of a refusal because the subject changed owner.
    fn moved(&self) -> &'static str {
        match self {
            Family::Game(_) => "GAME_MOVED",
            Family::Tournament(_) => "TOURNAMENT_MOVED",
        }
    }

    /// The subject of the call's unary message (`None`: compressed, not a
    /// message, or no subject named: the handler answers).
    async fn subject(&self, path: &str, bytes: &Bytes) -> Result<Option<String>, RouteError> {
        match self {
            Family::Tournament(t) if path == CONNECT_ENTRANT => {
                let Some(message) = message_of(bytes) else {
                    return Ok(None);
                };
                let Ok(m) = <EntrantOnly as prost::Message>::decode(message) else {
                    return Ok(None);
                };
                if !m.tournament_id.is_empty() {
                    return Ok(Some(m.tournament_id));
                }
                t.tournament_of_key(&m.entrant_key).await
            }
            _ => Ok(game_id_of(bytes)),
        }
    }

    async fn route(&self, id: &str, fresh: bool) -> Result<Route, RouteError> {
        match (self, fresh) {
            (Family::Game(c), false) => c.route(id).await,
            (Family::Game(c), true) => c.route_fresh(id).await,
            (Family::Tournament(t), false) => t.route(id).await,
            (Family::Tournament(t), true) => t.route_fresh(id).await,
        }
    }

    fn lost(&self, id: &str) {
        match self {
            Family::Game(c) => c.lost(id),
            Family::Tournament(t) => t.lost(id),
        }
    }

    fn forget_owner(&self, id: &str) {
        match self {
            Family::Game(c) => c.forget_owner(id),
            Family::Tournament(t) => t.forget_owner(id),
        }
    }
}

/// The layer (see the module docs); `None` passes every call through.
#[derive(Debug, Clone)]
pub struct ForwardLayer {
    cluster: Option<Arc<Cluster>>,
    tournaments: Option<Arc<TournamentCluster>>,
    max_message_bytes: usize,
}

impl ForwardLayer {
    /// Forwards the calls of games `cluster` says others own.
    pub fn new(cluster: Option<Arc<Cluster>>, max_message_bytes: usize) -> ForwardLayer {
        ForwardLayer {
            cluster,
            tournaments: None,
            max_message_bytes,
        }
    }

    /// Forwards the calls of tournaments `tournaments` says others own too.
    pub fn with_tournaments(mut self, tournaments: Option<Arc<TournamentCluster>>) -> ForwardLayer {
        self.tournaments = tournaments;
        self
    }
}

impl<S> tower::Layer<S> for ForwardLayer {
    type Service = Forward<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Forward {
            inner,
            cluster: self.cluster.clone(),
            tournaments: self.tournaments.clone(),
            max_message_bytes: self.max_message_bytes,
        }
    }
}

/// The service of [`ForwardLayer`].
#[derive(Debug, Clone)]
pub struct Forward<S> {
    inner: S,
    cluster: Option<Arc<Cluster>>,
    tournaments: Option<Arc<TournamentCluster>>,
    max_message_bytes: usize,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> tower::Service<http::Request<Body>> for Forward<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path();
        let family = if GAME_CALLS.contains(&path) {
            self.cluster.clone().map(Family::Game)
        } else if TOURNAMENT_CALLS.contains(&path) || path == CONNECT_ENTRANT {
            self.tournaments.clone().map(Family::Tournament)
        } else {
            None
        };
        let Some(family) = family else {
            return Box::pin(self.inner.call(request));
        };
        // The service that was made ready answers this call; a fresh clone
        // takes its place (tower's rule for services used across awaits).
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let limit = self.max_message_bytes.saturating_add(5);
        Box::pin(route(family, inner, request, limit))
    }
}

/// Routes one call about a game or a tournament: here, or to the owner.
async fn route<S>(
    family: Family,
    mut inner: S,
    request: http::Request<Body>,
    limit: usize,
) -> Result<http::Response<Body>, S::Error>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>,
{
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, limit).await {
        Ok(bytes) => bytes,
        Err(status) => return Ok(status.into_http()),
    };
    let subject = match family.subject(parts.uri.path(), &bytes).await {
        Ok(subject) => subject,
        Err(e) => {
            return Ok(unavailable(
                &format!("cannot route the call: {e}"),
                "CLUSTER_UNAVAILABLE",
                (family.id_key(), ""),
            )
            .into_http());
        }
    };
    let Some(id) = subject else {
        // Compressed, or not a message: the handler says what is wrong.
        return inner.call(rebuilt(&parts, bytes)).await;
    };
    if parts.uri.path() == WATCH_GAME {
        // Watched here whoever owns it: from this replica's copy, fed by
        // the database (a follower), unless the game is ours or orphaned
        // (routing takes it over). A follower is made by the handler.
        if let Err(e) = family.route(&id, false).await {
            return Ok(unavailable(
                &format!("cannot route game `{id}`: {e}"),
                "CLUSTER_UNAVAILABLE",
                ("game_id", &id),
            )
            .into_http());
        }
        return inner.call(rebuilt(&parts, bytes)).await;
    }
    to_owner(&family, inner, &parts, bytes, &id).await
}

/// The body of a call, at most `limit` bytes (else the status to answer).
async fn read_body(body: Body, limit: usize) -> Result<Bytes, Status> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(Status::resource_exhausted(format!(
                "the request is larger than the server's limit of {} bytes",
                limit - 5
            )))
        }
        Err(e) => Err(Status::cancelled(format!(
            "the request could not be read: {e}"
        ))),
    }
}

/// Answers a call about `id` here when this replica owns it, else sends it
/// to the owner; a call whose subject moved meanwhile is made again once.
async fn to_owner<S>(
    family: &Family,
    mut inner: S,
    parts: &http::request::Parts,
    bytes: Bytes,
    id: &str,
) -> Result<http::Response<Body>, S::Error>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>,
{
    let (noun, key) = (family.noun(), family.id_key());
    let forwarded = parts.headers.contains_key(FORWARDED_HEADER);
    let mut tried: Option<String> = None;
    for attempt in 0..2 {
        let route = match family.route(id, attempt > 0).await {
            Ok(route) => route,
            Err(e) => {
                return Ok(unavailable(
                    &format!("cannot route {noun} `{id}`: {e}"),
                    "CLUSTER_UNAVAILABLE",
                    (key, id),
                )
                .into_http());
            }
        };
        match route {
            Route::Local => {
                let response = inner.call(rebuilt(parts, bytes.clone())).await?;
                if response.headers().contains_key(GAME_MOVED_HEADER) {
                    // A write was fenced (the subject has a new owner) or
                    // found this copy behind the database: the copy goes,
                    // and the call is made again once, unless it came
                    // forwarded (the forwarding replica makes it again).
                    family.lost(id);
                    if attempt == 0 && !forwarded {
                        continue;
                    }
                }
                return Ok(response);
            }
            Route::Remote(_) if forwarded => {
                return Ok(unavailable(
                    &format!("{noun} `{id}` is owned by another replica than the one that forwarded this call; call again"),
                    family.moved(),
                    (key, id),
                )
                .into_http());
            }
            Route::Remote(address) => {
                if tried.as_deref() == Some(address.as_str()) {
                    break;
                }
                match send(family.cluster(), &address, parts, bytes.clone()).await {
                    Ok(response)
                        if response.headers().contains_key(GAME_MOVED_HEADER) && attempt == 0 =>
                    {
                        family.forget_owner(id);
                        tried = Some(address);
                        continue;
                    }
                    Ok(response) => {
                        metrics::counter!(telemetry::CLUSTER_FORWARDED, "outcome" => "ok")
                            .increment(1);
                        return Ok(response);
                    }
                    Err(e) => return Ok(owner_unreachable(family, id, &address, &e)),
                }
            }
        }
    }
    Ok(unavailable(
        &format!("{noun} `{id}` is changing owner; call again"),
        family.moved(),
        (key, id),
    )
    .into_http())
}

/// The answer to a call forwarded to the owner of `id` at `address`, which
/// did not answer (`e`): forgotten as the owner, the call to be made again.
fn owner_unreachable(
    family: &Family,
    id: &str,
    address: &str,
    e: &dyn std::fmt::Display,
) -> http::Response<Body> {
    let noun = family.noun();
    metrics::counter!(telemetry::CLUSTER_FORWARDED, "outcome" => "unreachable").increment(1);
    family.forget_owner(id);
    unavailable(
        &format!(
            "the replica owning {noun} `{id}` ({address}) does not answer ({e}); \
             its {noun}s are taken over once its lease expires: call again"
        ),
        "OWNER_UNREACHABLE",
        (family.id_key(), id),
    )
    .into_http()
}

/// `UNAVAILABLE` with `ErrorInfo{reason, <key>: <id>}` (`game_id` or
/// `tournament_id`) and a short retry hint.
fn unavailable(message: &str, reason: &str, (key, id): (&str, &str)) -> Status {
    let mut details = ErrorDetails::with_error_info(
        reason,
        ERROR_DOMAIN,
        std::collections::HashMap::from([(
            key.to_string(),
            crate::service::echo::echo(id).into_owned(),
        )]),
    );
    details.set_retry_info(Some(std::time::Duration::from_millis(100)));
    Status::with_error_details(
        Code::Unavailable,
        crate::service::echo::bounded(message),
        details,
    )
}

/// The request again, from its parts and its read message.
fn rebuilt(parts: &http::request::Parts, bytes: Bytes) -> http::Request<Body> {
    let mut request = http::Request::new(Body::new(Full::new(bytes)));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    // Extensions (the connection's address, TLS) stay with the original:
    // the handler reads the caller from them.
    request.extensions_mut().extend(parts.extensions.clone());
    request
}

/// Sends the call to the replica at `address`; its answer, with a stream
/// that ends in `UNAVAILABLE` if the connection breaks.
async fn send(
    cluster: &Cluster,
    address: &str,
    parts: &http::request::Parts,
    bytes: Bytes,
) -> Result<http::Response<Body>, SendError> {
    let mut channel = cluster.channel(address)?;
    let mut request = rebuilt(parts, bytes);
    *request.extensions_mut() = http::Extensions::new();
    if let Ok(node) = http::HeaderValue::from_str(cluster.node_id()) {
        request.headers_mut().insert(FORWARDED_HEADER, node);
    }
    // The path alone: the channel sets the owner's scheme and authority.
    if let Some(path) = parts.uri.path_and_query() {
        *request.uri_mut() = http::Uri::from(path.clone());
    }
    use tower::{Service as _, ServiceExt as _};
    let response = channel
        .ready()
        .await
        .map_err(SendError::NotReady)?
        .call(request)
        .await
        .map_err(SendError::Call)?;
    let (head, body) = response.into_parts();
    Ok(http::Response::from_parts(
        head,
        Body::new(Guarded {
            inner: body,
            done: false,
        }),
    ))
}

/// Why a call sent to its owner got no answer.
#[derive(Debug, thiserror::Error)]
enum SendError {
    /// The owner's address is no URI.
    #[error(transparent)]
    Address(#[from] super::BadAddress),
    /// The channel to the owner is not ready.
    #[error("{0}")]
    NotReady(tonic::transport::Error),
    /// The call failed on the way (said with its causes).
    #[error("{}", error_chain(.0))]
    Call(tonic::transport::Error),
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The message of a unary gRPC request (5-byte prefix, uncompressed).
fn message_of(bytes: &Bytes) -> Option<&[u8]> {
    if bytes.len() < 5 || bytes[0] != 0 {
        return None;
    }
    let mut header = &bytes[1..5];
    let len = header.get_u32() as usize;
    bytes.get(5..5 + len)
}

/// The id in field 1 of a unary gRPC message: the game id of a game's
/// call, the tournament id of a tournament's.
fn game_id_of(bytes: &Bytes) -> Option<String> {
    let decoded = <GameIdOnly as prost::Message>::decode(message_of(bytes)?).ok()?;
    (!decoded.game_id.is_empty()).then_some(decoded.game_id)
}

/// A forwarded answer's body: when the owner's connection breaks mid-way
/// (the owner died), the stream ends with `UNAVAILABLE` trailers instead of
/// a reset, so the client knows to resume elsewhere.
struct Guarded {
    inner: Body,
    done: bool,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Err(e))) => {
                self.done = true;
                let status = Status::unavailable(format!(
                    "the replica owning the game or tournament stopped answering ({e}); \
                     resume on any replica (WatchGame: from_ply; ConnectEntrant: reconnect)"
                ));
                let mut trailers = http::HeaderMap::new();
                match status.add_header(&mut trailers) {
                    Ok(()) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
                    Err(_) => Poll::Ready(Some(Err(status))),
                }
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
