//! The service's one HTTP port (default `:9464`): Prometheus `/metrics`, the
//! spectator page and what it reads. One axum router (axum is the one tonic
//! already builds on, so no second hyper enters the tree):
//!
//! | route | answer |
//! |---|---|
//! | `GET /` (+ `/app.js`, `/style.css`) | the spectator page, embedded in the binary |
//! | `GET /metrics` | Prometheus text format (404 with `--no-metrics`) |
//! | `GET /games/{id}.svg?ply=N` | the board after `N` moves (now without `ply`) |
//! | `GET /api/games?label=k:v&status=…` | a page of games, as JSON |
//! | `GET /api/games/{id}` | one game: moves, supplies, clocks, outcome |
//! | `GET /api/games/{id}/events` | Server-Sent Events: the game again after each change |
//! | `GET /api/game-kinds` | the games offered: rule options, their types and defaults |
//! | `GET /api/tournaments` | every tournament with its standings, as JSON |
//! | `GET /api/tournaments/{id}` | one tournament: standings, crosstable, schedule with game ids |
//!
//! Like the gRPC handlers, these only convert: they read the session layer
//! and turn its views into JSON ([`json`]) or SVG (through the game-agnostic
//! [`crate::games::SharedState::svg`]). Failures are plain-text answers with a
//! precise status (404 unknown game, 400 bad query or ply, 429 watcher limit),
//! never a panic. docs/SPECTATOR.md explains the choices (SSE rather than
//! gRPC-Web, the JSON shapes).

pub mod json;
pub mod tournaments;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use crate::service::receipts::RefereeKey;
use crate::service::sessions::{ListQuery, Role, Session, SessionError, SessionStore, WatchItem};

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// Updates an event stream buffers for a slow page before it waits.
const EVENTS_CHANNEL: usize = 4;

/// What the HTTP handlers share.
#[derive(Debug, Clone)]
pub struct WebState {
    /// The games (the same store the gRPC service uses).
    pub store: Arc<SessionStore>,
    /// Cancelled when the server shuts down: event streams end.
    pub shutdown: CancellationToken,
    /// The installed metrics recorder; `None` serves no `/metrics`.
    pub metrics: Option<PrometheusHandle>,
    /// The tournaments (the same the gRPC service holds).
    pub tournaments: Arc<crate::service::tournaments::Tournaments>,
}

/// The router of the HTTP port.
pub fn router(state: WebState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/app.js", get(app_js))
        .route("/style.css", get(style_css))
        .route("/metrics", get(metrics))
        .route("/games/{file}", get(board_svg))
        .route("/api/games", get(list_games))
        .route("/api/games/{id}", get(get_game))
        .route("/api/games/{id}/events", get(game_events))
        .route("/api/game-kinds", get(game_kinds))
        .route("/api/tournaments", get(tournaments::list))
        .route("/api/tournaments/{id}", get(tournaments::get))
        .route("/.well-known/punct-referee.json", get(referee_keys))
        .fallback(not_found)
        .with_state(state)
}

/// A refusal: a status and a readable sentence, sent as plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for people.
    pub message: String,
}

impl HttpError {
    fn bad_request(message: impl Into<String>) -> HttpError {
        HttpError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> HttpError {
        HttpError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }
}

impl From<SessionError> for HttpError {
    /// The HTTP twin of [`crate::service::grpc::error::status`]: the same failures,
    /// HTTP codes.
    fn from(e: SessionError) -> HttpError {
        let status = match &e {
            SessionError::NotFound(_) => StatusCode::NOT_FOUND,
            SessionError::InvalidArgument { .. }
            | SessionError::OutOfRange { .. }
            | SessionError::Record(_) => StatusCode::BAD_REQUEST,
            SessionError::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            SessionError::PermissionDenied(_) => StatusCode::FORBIDDEN,
            SessionError::Rejected(_) | SessionError::StalePly { .. } => StatusCode::CONFLICT,
            SessionError::LimitReached { .. } => StatusCode::TOO_MANY_REQUESTS,
            SessionError::Unavailable(_) | SessionError::Moved(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        HttpError {
            status,
            message: e.to_string(),
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        (
            self.status,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                ),
                (
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                ),
            ],
            format!("{}\n", crate::service::echo::bounded(self.message)),
        )
            .into_response()
    }
}

/// A body with its content type; the page's files are revalidated on each
/// load, so a new binary's page is never mixed with an old script.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn style_css() -> Response {
    asset("text/css; charset=utf-8", STYLE_CSS)
}

async fn not_found() -> HttpError {
    HttpError::not_found(
        "no such page: the spectator page is at /, the API under /api/games, metrics at /metrics",
    )
}

async fn metrics(State(state): State<WebState>) -> Result<Response, HttpError> {
    let handle = state.metrics.as_ref().ok_or_else(|| {
        HttpError::not_found("metrics are turned off on this server (--no-metrics)")
    })?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        handle.render(),
    )
        .into_response())
}

/// The query pairs, or 400 with the parser's reason; any name not in
/// `known` is refused, so a typo is not silently ignored.
fn query_pairs(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    known: &[&str],
) -> Result<Vec<(String, String)>, HttpError> {
    let Query(pairs) = query.map_err(|e| HttpError::bad_request(e.body_text()))?;
    if let Some((name, _)) = pairs.iter().find(|(n, _)| !known.contains(&n.as_str())) {
        return Err(HttpError::bad_request(format!(
            "unknown query parameter `{name}` (known: {})",
            known.join(", ")
        )));
    }
    Ok(pairs)
}

/// The one value of parameter `name`, if given; refused when repeated.
fn single<'a>(pairs: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, HttpError> {
    let mut values = pairs.iter().filter(|(n, _)| n == name).map(|(_, v)| v);
    let first = values.next();
    if values.next().is_some() {
        return Err(HttpError::bad_request(format!(
            "`{name}` is given more than once"
        )));
    }
    Ok(first.map(String::as_str))
}

/// `/games/{id}.svg?ply=N`: the board after `N` moves, the current one
/// without `ply`.
async fn board_svg(
    State(state): State<WebState>,
    Path(file): Path<String>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, HttpError> {
    let Some(id) = file.strip_suffix(".svg") else {
        return Err(HttpError::not_found(
            "a board picture is at /games/{id}.svg; game data is under /api/games/{id}",
        ));
    };
    let pairs = query_pairs(query, &["ply"])?;
    let ply = single(&pairs, "ply")?
        .map(|p| {
            p.parse::<u32>().map_err(|_| {
                HttpError::bad_request(format!("ply: `{p}` is not a ply (a whole number from 0)"))
            })
        })
        .transpose()?;
    let session = state.store.find(id).await?;
    let view = session.view_at(ply, Role::Spectator)?;
    let svg = view
        .snapshot
        .as_ref()
        .map(|s| s.svg(view.last_move.as_ref(), view.outcome.as_ref()))
        .ok_or_else(|| HttpError::not_found("this game has no board to draw"))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("image/svg+xml; charset=utf-8"),
            ),
            // A past ply never changes; the current one does.
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static(
                    if ply.is_some_and(|p| p < session.view_for(Role::Spectator, false).ply) {
                        "public, max-age=3600, immutable"
                    } else {
                        "no-cache"
                    },
                ),
            ),
        ],
        svg,
    )
        .into_response())
}

/// `/api/games?label=k:v&status=in_progress|finished&page_size=&page_token=`.
async fn list_games(
    State(state): State<WebState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, HttpError> {
    let pairs = query_pairs(query, &["label", "status", "page_size", "page_token"])?;
    let mut labels = BTreeMap::new();
    for (_, value) in pairs.iter().filter(|(n, _)| n == "label") {
        let Some((k, v)) = value.split_once(':') else {
            return Err(HttpError::bad_request(format!(
                "label: `{value}` is not key:value"
            )));
        };
        labels.insert(k.to_string(), v.to_string());
    }
    let finished = match single(&pairs, "status")? {
        None | Some("" | "all") => None,
        Some("in_progress") => Some(false),
        Some("finished") => Some(true),
        Some(other) => {
            return Err(HttpError::bad_request(format!(
                "status: `{other}` is not a status (in_progress, finished or all)"
            )));
        }
    };
    let page_size = match single(&pairs, "page_size")? {
        None => 0,
        Some(n) => n.parse::<usize>().map_err(|_| {
            HttpError::bad_request(format!("page_size: `{n}` is not a whole number"))
        })?,
    };
    let query = ListQuery {
        finished,
        labels,
        page_size,
        page_token: single(&pairs, "page_token")?.unwrap_or("").to_string(),
    };
    let (views, next_page_token) = state.store.list_as(&query, Role::Spectator).await?;
    Ok(axum::Json(json::GameList {
        games: views.iter().map(json::summary).collect(),
        next_page_token,
    })
    .into_response())
}

/// `/api/game-kinds`: what ListGameKinds answers, as JSON.
async fn game_kinds() -> Response {
    axum::Json(json::game_kinds(crate::service::grpc::kinds::game_kinds())).into_response()
}

/// `/api/games/{id}`: everything the game view shows.
async fn get_game(
    State(state): State<WebState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let session = state.store.find(&id).await?;
    Ok(axum::Json(game_detail(&session, state.store.referee_key())).into_response())
}

fn game_detail(session: &Session, key: &RefereeKey) -> json::GameDetail {
    let (view, log) = session.spectator_view_with_events();
    let mut detail = json::detail(&view, &log);
    // The latency ledger of a timed game, as far as this spectator is
    // shown it.
    let timed = view.time_control.has_clock();
    for line in session.latency_ledger(view.ply) {
        if !timed && line.entry.lag_ms.is_none() {
            continue;
        }
        if let Some(m) = detail.moves.iter_mut().find(|m| m.ply == line.ply) {
            m.latency = Some(json::MoveLatency {
                charged_ms: line.entry.charged_ms,
                compensated_ms: line.entry.compensated_ms,
                lag_ms: line.entry.lag_ms,
            });
        }
    }
    if view.outcome.is_some() {
        detail.receipt = session.signed_receipt(key).map(|r| r.to_value());
    }
    detail
}

/// `/.well-known/punct-referee.json`: the referee's public keys, which
/// verify receipts (docs/RECEIPTS.md), as `GetRefereeKeys` gives them.
async fn referee_keys(State(state): State<WebState>) -> Response {
    (
        [(header::CACHE_CONTROL, "max-age=300")],
        axum::Json(state.store.referee_key().key_list().clone()),
    )
        .into_response()
}

/// `/api/games/{id}/events`: Server-Sent Events. A `game` event with the
/// whole game (as `/api/games/{id}`) now and after every change (a move,
/// the end, a player connecting or leaving); the stream ends after the
/// game-over event. `gone` when the game is dropped, and the stream ends at
/// server shutdown. The watch counts against the per-game watcher limit.
async fn game_events(
    State(state): State<WebState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let session = state.store.find(&id).await?;
    let mut watch = session.watch(None, Role::Spectator)?;
    let (tx, rx) = mpsc::channel::<Result<SseEvent, Infallible>>(EVENTS_CHANNEL);
    let shutdown = state.shutdown.clone();
    let key = state.store.referee_key().clone();
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = tx.closed() => break,
                next = watch.next() => next,
            };
            let (event, gone) = match next {
                Ok(Some(WatchItem::Snapshot { .. } | WatchItem::Event(_))) => {
                    (game_event(&session, &key), false)
                }
                // Presence flips come without a log event: the detail
                // carries who is connected.
                Ok(Some(WatchItem::Presence(_))) => (game_event(&session, &key), false),
                Ok(None) => break,
                Err(e) => (SseEvent::default().event("gone").data(e.to_string()), true),
            };
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                sent = tx.send(Ok(event)) => if sent.is_err() { break },
            }
            if gone {
                break;
            }
        }
    });
    Ok(Sse::new(ReceiverStream::new(rx))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// A `game` event with the game's detail now.
fn game_event(session: &Session, key: &RefereeKey) -> SseEvent {
    let detail = game_detail(session, key);
    match serde_json::to_string(&detail) {
        Ok(text) => SseEvent::default()
            .event("game")
            .id(detail.summary.ply.to_string())
            .data(text),
        Err(e) => SseEvent::default()
            .event("gone")
            .data(format!("cannot encode the game: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_errors_map_to_http_codes() {
        let e: HttpError = SessionError::NotFound("abc".into()).into();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        assert_eq!(e.message, "no game `abc`");
        let e: HttpError = SessionError::OutOfRange {
            field: "ply",
            asked: 9,
            current: 2,
        }
        .into();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.message, "ply 9 is beyond the game's ply 2");
        let e: HttpError = SessionError::LimitReached {
            what: "watchers_per_game",
            max: 1,
        }
        .into();
        assert_eq!(e.status, StatusCode::TOO_MANY_REQUESTS);
    }

    #[test]
    fn repeated_or_unknown_parameters_are_refused() {
        let pairs = vec![("ply".to_string(), "1".to_string()); 2];
        assert_eq!(
            single(&pairs, "ply").unwrap_err().message,
            "`ply` is given more than once"
        );
        let e = query_pairs(Ok(Query(vec![("pli".into(), "1".into())])), &["ply"]).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.message, "unknown query parameter `pli` (known: ply)");
    }
}
