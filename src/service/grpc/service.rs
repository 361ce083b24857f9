//! The `referee.v1.RefereeService` handlers. Each is thin: convert the
//! request, call the session layer, convert the answer; failures go through
//! [`super::error::status`]. Tokens are never logged. Who may call is
//! checked before (keys and scopes, [`crate::service::edge::access`]); the reads
//! of one game check here that a caller without a `read` key brings a seat
//! token ([`Caller::may_read`]), and creations and watch streams count
//! against their client ([`crate::service::edge::quota`]).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::answer::server::referee_service_server::RefereeService;
use super::answer::{CompactGame, EncodedGame, GetGameAnswer};
use super::convert::{self, event_pb, game_pb, move_pb, outcome_pb, seat_pb, status_pb};
use super::error::status;
use super::games::Part;
use super::pb::referee::v1 as pb;
use super::play::{self, PlayStream};
use super::readers;
use super::shared::shared_view;
use super::watch::WatchStream;
use crate::games::MoveError;
use crate::service::edge::access::Caller;
use crate::service::edge::quota::{ClientQuotas, CountedGame, QuotaOptions, WatchSlot};
use crate::service::sessions::{self, Session, SessionError, SessionStore, WatchItem};

/// The metadata key of the last ply a watch stream sent, on the status it
/// ends with when it ends in an error (docs/API.md, "Watching").
pub const LAST_PLY_HEADER: &str = "referee-last-ply";

/// Most watch streams open at once, over all games, unless configured.
pub const DEFAULT_MAX_WATCH_STREAMS: usize = 10_000;

/// A game counts against its client's games quota while it is unfinished.
impl CountedGame for Session {
    fn in_progress(&self) -> bool {
        !self.finished()
    }
}

/// The referee service over a session store.
#[derive(Debug, Clone)]
pub struct RefereeApi {
    store: Arc<SessionStore>,
    shutdown: CancellationToken,
    /// One permit per open watch stream, held by its state.
    watch_streams: Arc<Semaphore>,
    max_watch_streams: usize,
    /// Per-client counts of games and watch streams.
    quotas: Arc<ClientQuotas>,
}

impl RefereeApi {
    /// A service over `store`; open streams end when `shutdown` is cancelled.
    pub fn new(store: Arc<SessionStore>, shutdown: CancellationToken) -> RefereeApi {
        RefereeApi {
            store,
            shutdown,
            watch_streams: Arc::new(Semaphore::new(DEFAULT_MAX_WATCH_STREAMS)),
            max_watch_streams: DEFAULT_MAX_WATCH_STREAMS,
            quotas: Arc::new(ClientQuotas::new(QuotaOptions::default())),
        }
    }

    /// Counts games and watch streams per client in `quotas` (shared with
    /// the server's rate layer).
    pub fn with_quotas(mut self, quotas: Arc<ClientQuotas>) -> RefereeApi {
        self.quotas = quotas;
        self
    }

    /// At most `max` watch streams open at once over all games (the
    /// per-game limit is the store's): each costs its state, a message and
    /// an HTTP/2 stream even when its client never reads, so the total is
    /// what bounds their memory (docs/API.md, "Limits and overload").
    pub fn with_max_watch_streams(mut self, max: usize) -> RefereeApi {
        let max = max.min(Semaphore::MAX_PERMITS);
        self.watch_streams = Arc::new(Semaphore::new(max));
        self.max_watch_streams = max;
        self
    }
}

/// The seat tokens of a new game, in seat order, with the seats' names.
fn seat_tokens_pb(session: &Session, tokens: &[sessions::Token]) -> Vec<pb::SeatToken> {
    tokens
        .iter()
        .zip(session.seat_names())
        .enumerate()
        .map(|(i, (token, name))| pb::SeatToken {
            seat: i as u32 + 1,
            token: token.to_string(),
            name: (*name).to_string(),
        })
        .collect()
}

/// A watch stream's (or a Play stream's) places in the limits of open
/// streams: one of all the server's, one of its client's. Given back when
/// dropped, however the stream ends.
pub(super) struct StreamSlots {
    _stream_permit: OwnedSemaphorePermit,
    _client_slot: WatchSlot,
}

/// The reason a watch stream ends with when the server shuts down.
pub(super) const SHUTTING_DOWN: &str = "the server is shutting down";

/// The message(s) of a watch stream for one item of `watch` (of `session`),
/// each made by `make` from its item, `resync` flag and sequence: the item's
/// message, and for a move that ended a round (Punto) the round-over notice
/// that follows it (docs/API.md, "Rounds"). WatchGame's and Play's.
pub(super) fn frame_watch_item<M>(
    session: &Session,
    watch: &sessions::Watch,
    item: WatchItem,
    make: impl Fn(pb::watch_game_response::Item, bool, u64) -> M,
) -> (M, Option<M>) {
    use pb::watch_game_response::Item;
    match item {
        WatchItem::Snapshot {
            view,
            sequence,
            resync,
        } => (
            make(
                Item::Snapshot(convert::shared_game_pb(session, &view)),
                resync,
                sequence,
            ),
            None,
        ),
        WatchItem::Event(event) => {
            let round_over = convert::round_over_pb(&event)
                .map(|r| make(Item::RoundOver(r), false, event.sequence));
            let mut event_pb = event_pb(&event, &watch.presence());
            if let Some(pb::game_event::Kind::MoveApplied(m)) = event_pb.kind.as_mut() {
                m.chain_head = crate::games::hex(&watch.chain_head());
            }
            super::policy::mark_substituted(&mut event_pb, session);
            let event_message = make(Item::Event(event_pb), false, event.sequence);
            (event_message, round_over)
        }
        WatchItem::Presence(presence) => (
            make(
                Item::Presence(convert::presence_pb(&presence)),
                false,
                watch.last_sequence(),
            ),
            None,
        ),
    }
}

impl RefereeApi {
    /// A place for one more open stream (watch or Play) of `caller`, or the
    /// limit it would pass.
    fn stream_slots(&self, caller: &Caller) -> Result<StreamSlots, Status> {
        let stream_permit = self
            .watch_streams
            .clone()
            .try_acquire_owned()
            .map_err(|_| {
                status(SessionError::LimitReached {
                    what: "watch_streams",
                    max: self.max_watch_streams,
                })
            })?;
        let client_slot = self.quotas.watch_slot(&caller.client())?;
        Ok(StreamSlots {
            _stream_permit: stream_permit,
            _client_slot: client_slot,
        })
    }
}

#[tonic::async_trait]
impl RefereeService for RefereeApi {
    async fn create_game(
        &self,
        request: Request<pb::CreateGameRequest>,
    ) -> Result<Response<pb::CreateGameResponse>, Status> {
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let rules = convert::game_rules(req.rules.as_ref(), &Part::Request)?;
        let time_control = convert::time_control(req.time_control.as_ref());
        let seed = convert::seed(&req.seed, "seed")?;
        let policy = super::policy::failure_policy(req.failure_policy.as_ref())?;
        let mut labels = convert::labels(&req.labels);
        super::delay::merge(&mut labels, req.spectator_delay.as_ref(), "spectator_delay")?;
        let place = self.quotas.reserve_game(&caller.client())?;
        let (session, tokens) = self
            .store
            .create_with_policy(rules, labels, time_control, seed, policy)
            .await?;
        place.fill(&session);
        Ok(Response::new(pb::CreateGameResponse {
            game: Some(game_pb(&session.view(true))),
            seats: seat_tokens_pb(&session, &tokens),
        }))
    }

    async fn get_game(
        &self,
        request: Request<pb::GetGameRequest>,
    ) -> Result<Response<GetGameAnswer>, Status> {
        let req = request.get_ref();
        let caller = Caller::of(&request);
        caller.may_read(&req.token)?;
        // A view no game has is malformed whatever the game.
        let compact = match pb::SnapshotView::try_from(req.view) {
            Ok(pb::SnapshotView::Compact) => true,
            Ok(_) => false,
            Err(_) => {
                return Err(SessionError::InvalidArgument {
                    field: "view",
                    description: format!("{} is not a SnapshotView", req.view),
                }
                .into());
            }
        };
        let session = self.store.find(&req.game_id).await?;
        let role = readers::reader(&caller, &session, &req.token)?;
        if let Some(answer) = readers::delayed_get_game(&session, role, compact) {
            return Ok(Response::new(answer));
        }
        // Encoded once per state (and view) and shared; the clock and
        // presence are read now (docs/API.md "Compact reads").
        // A finished game's answer carries its receipt (signed once per
        // state, with the answer).
        let key = self.store.referee_key();
        let full = |view: &sessions::SessionView| {
            let mut game = convert::shared_game_pb(&session, view);
            if view.outcome.is_some() {
                game.receipt = session
                    .signed_receipt(key)
                    .map(|r| r.to_json())
                    .unwrap_or_default();
            }
            game
        };
        let (view, game) = if compact {
            let (view, game) = shared_view(&session, role, |view| {
                CompactGame(EncodedGame::of(convert::compact_game_pb(full(view))))
            });
            (view, game.0.clone())
        } else {
            let (view, game) = shared_view(&session, role, |view| EncodedGame::of(full(view)));
            (view, EncodedGame::clone(&game))
        };
        Ok(Response::new(GetGameAnswer {
            game,
            clock: convert::clock_pb(&view.clock),
            presence: convert::presence_pb(&view.presence),
            viewer: convert::viewer_pb(view.viewer),
        }))
    }

    async fn get_referee_keys(
        &self,
        _request: Request<pb::GetRefereeKeysRequest>,
    ) -> Result<Response<pb::GetRefereeKeysResponse>, Status> {
        Ok(Response::new(convert::referee_keys_pb(
            self.store.referee_key().key_list(),
        )))
    }

    async fn list_game_kinds(
        &self,
        _request: Request<pb::ListGameKindsRequest>,
    ) -> Result<Response<pb::ListGameKindsResponse>, Status> {
        Ok(Response::new(pb::ListGameKindsResponse {
            kinds: super::kinds::game_kinds().to_vec(),
        }))
    }

    async fn list_games(
        &self,
        request: Request<pb::ListGamesRequest>,
    ) -> Result<Response<pb::ListGamesResponse>, Status> {
        let role = match readers::is_platform(&Caller::of(&request)) {
            true => sessions::Role::Platform(None),
            false => sessions::Role::Spectator,
        };
        let query = convert::list_query(request.into_inner())?;
        let (views, next) = self.store.list_as(&query, role).await?;
        Ok(Response::new(pb::ListGamesResponse {
            games: views.iter().map(convert::summary_pb).collect(),
            next_page_token: next,
        }))
    }

    async fn list_legal_moves(
        &self,
        request: Request<pb::ListLegalMovesRequest>,
    ) -> Result<Response<pb::ListLegalMovesResponse>, Status> {
        let caller = Caller::of(&request);
        caller.may_read(&request.get_ref().token)?;
        let req = request.into_inner();
        // Checked against the game's own seats, so a refusal names its
        // real range.
        let session = self.store.find(&req.game_id).await?;
        let seat = convert::seat(req.seat, session.seat_names().len(), "seat")?;
        let role = readers::reader(&caller, &session, &req.token)?;
        let view =
            pb::MovesView::try_from(req.view).map_err(|_| SessionError::InvalidArgument {
                field: "view",
                description: format!("{} is not a MovesView", req.view),
            })?;
        if let Some(answer) = readers::delayed_legal_moves(&session, seat, role, view) {
            return Ok(Response::new(answer));
        }
        if view == pb::MovesView::Text {
            let (ply, to_move, notation_text) = session.legal_text(seat, role);
            return Ok(Response::new(pb::ListLegalMovesResponse {
                ply,
                to_move: seat_pb(to_move),
                notation_text,
                ..Default::default()
            }));
        }
        let (ply, to_move, moves) = session.legal_moves(seat, role);
        let (moves, notations) = match view {
            pb::MovesView::Notation => (
                Vec::new(),
                moves.iter().map(|m| m.detail.notation.clone()).collect(),
            ),
            _ => (
                moves.iter().map(|m| move_pb(&m.detail)).collect(),
                Vec::new(),
            ),
        };
        Ok(Response::new(pb::ListLegalMovesResponse {
            ply,
            to_move: seat_pb(to_move),
            moves,
            notations,
            notation_text: Default::default(),
        }))
    }

    async fn submit_move(
        &self,
        request: Request<pb::SubmitMoveRequest>,
    ) -> Result<Response<pb::SubmitMoveResponse>, Status> {
        let req = request.into_inner();
        let mv = convert::move_input(req.r#move.as_ref(), &Part::Request)?;
        let session = self.store.find(&req.game_id).await?;
        let request_id = Some(req.request_id.as_str()).filter(|r| !r.is_empty());
        Session::check_request_id(request_id)?;
        let role = session.role_of(&req.token, false)?;
        let receipt = session
            .submit(role, mv, req.expected_ply, request_id)
            .await
            .inspect_err(|e| tracing::debug!(game_id = %req.game_id, error = %e, "move refused"))?;
        Ok(Response::new(play::submit_answer(&session, receipt)))
    }

    type PlayStream = PlayStream;

    async fn play(
        &self,
        request: Request<tonic::Streaming<pb::PlayRequest>>,
    ) -> Result<Response<Self::PlayStream>, Status> {
        let caller = Caller::of(&request);
        let mut inbound = request.into_inner();
        let start = play::read_start(&mut inbound).await?;
        let session = self.store.find(&start.game_id).await?;
        if start.from_ply.is_some() {
            metrics::counter!(crate::service::telemetry::CLUSTER_WATCH_RESUMES).increment(1);
        }
        let role = session.role_of(&start.token, false)?;
        let role = play::seat_role(&session, role)?;
        let slots = self.stream_slots(&caller)?;
        let start = play::Start {
            session,
            role,
            from_ply: start.from_ply,
            answer_pings: start.answer_pings,
        };
        let stream = play::open(start, inbound, self.shutdown.clone(), slots)?;
        Ok(Response::new(stream))
    }

    type WatchGameStream = WatchStream;

    async fn watch_game(
        &self,
        request: Request<pb::WatchGameRequest>,
    ) -> Result<Response<Self::WatchGameStream>, Status> {
        let caller = Caller::of(&request);
        let req = request.into_inner();
        caller.may_read(&req.token)?;
        let session = self.store.find(&req.game_id).await?;
        if req.from_ply.is_some() {
            metrics::counter!(crate::service::telemetry::CLUSTER_WATCH_RESUMES).increment(1);
        }
        let slots = self.stream_slots(&caller)?;
        let role = readers::reader(&caller, &session, &req.token)?;
        let watch = session.watch(req.from_ply, role)?;
        let stream = super::watch::open(session, watch, self.shutdown.clone(), slots);
        Ok(Response::new(stream))
    }

    async fn resign(
        &self,
        request: Request<pb::ResignRequest>,
    ) -> Result<Response<pb::ResignResponse>, Status> {
        let req = request.into_inner();
        let session = self.store.find(&req.game_id).await?;
        let view = session.resign(session.role_of(&req.token, false)?).await?;
        Ok(Response::new(pb::ResignResponse {
            game: Some(game_pb(&view)),
        }))
    }

    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Result<Response<pb::OfferDrawResponse>, Status> {
        let req = request.into_inner();
        let session = self.store.find(&req.game_id).await?;
        let (agreed, view) = session
            .offer_draw(session.role_of(&req.token, false)?)
            .await?;
        Ok(Response::new(pb::OfferDrawResponse {
            agreed,
            game: Some(game_pb(&view)),
        }))
    }

    async fn accept_draw(
        &self,
        request: Request<pb::AcceptDrawRequest>,
    ) -> Result<Response<pb::AcceptDrawResponse>, Status> {
        let req = request.into_inner();
        let session = self.store.find(&req.game_id).await?;
        let (agreed, view) = session
            .accept_draw(session.role_of(&req.token, false)?)
            .await?;
        Ok(Response::new(pb::AcceptDrawResponse {
            game: Some(game_pb(&view)),
            agreed,
        }))
    }

    async fn abort_game(
        &self,
        request: Request<pb::AbortGameRequest>,
    ) -> Result<Response<pb::AbortGameResponse>, Status> {
        // With keys on, AbortGame needs a `games:admin` key: the platform,
        // which may abort a game that has dealt. Without keys there is no
        // platform to tell apart, and every caller is a seat.
        let platform = Caller::of(&request)
            .key
            .is_some_and(|k| k.has(crate::service::edge::access::Scope::GamesAdmin));
        let req = request.into_inner();
        let session = self.store.find(&req.game_id).await?;
        let view = session
            .abort(session.role_of(&req.token, platform)?)
            .await?;
        Ok(Response::new(pb::AbortGameResponse {
            game: Some(game_pb(&view)),
        }))
    }

    async fn validate_move(
        &self,
        request: Request<pb::ValidateMoveRequest>,
    ) -> Result<Response<pb::ValidateMoveResponse>, Status> {
        let (history, mv) = convert::validate_move_request(request.into_inner())?;
        let answer = self.store.validate_move(history, &mv)?;
        let seat = seat_pb(answer.seat);
        let response = match answer.result {
            Ok(report) => pb::ValidateMoveResponse {
                legal: true,
                r#move: Some(move_pb(&report.detail)),
                seat,
                ply: report.ply,
                status: status_pb(report.outcome.as_deref()),
                outcome: report.outcome.as_deref().map(outcome_pb),
                ..Default::default()
            },
            Err(MoveError::Illegal { reason, message }) => pb::ValidateMoveResponse {
                legal: false,
                reason: reason.to_string(),
                message,
                seat,
                ..Default::default()
            },
            Err(e @ MoveError::Malformed { .. }) => return Err(status(SessionError::Rejected(e))),
        };
        Ok(Response::new(response))
    }

    async fn export_game(
        &self,
        request: Request<pb::ExportGameRequest>,
    ) -> Result<Response<pb::ExportGameResponse>, Status> {
        let req = request.get_ref();
        let caller = Caller::of(&request);
        caller.may_read(&req.token)?;
        let session = self.store.find(&req.game_id).await?;
        let role = readers::reader(&caller, &session, &req.token)?;
        // What this reader is shown (a delayed spectator: the shown ply).
        let shown = session.view_for(role, false);
        Ok(Response::new(pb::ExportGameResponse {
            record: session.export(role),
            chain_head: crate::games::hex(&shown.chain),
            // Only to a reader shown the end (a spectator of a delayed game
            // learns of it when the delay has run out).
            receipt: if shown.outcome.is_some() {
                session
                    .signed_receipt(self.store.referee_key())
                    .map(|r| r.to_json())
                    .unwrap_or_default()
            } else {
                String::new()
            },
            substitutions: shown
                .failure
                .substitutions
                .iter()
                .map(super::policy::substitution_pb)
                .collect(),
            latency: super::ping::latency_pb(&session, shown.ply),
        }))
    }

    async fn claim_victory(
        &self,
        request: Request<pb::ClaimVictoryRequest>,
    ) -> Result<Response<pb::ClaimVictoryResponse>, Status> {
        let req = request.into_inner();
        // Checked against the game's own seats, so a refusal names its
        // real range.
        let session = self.store.find(&req.game_id).await?;
        let against = convert::seat(req.against, session.seat_names().len(), "against")?;
        let role = session.role_of(&req.token, false)?;
        let view = session.claim_victory(role, against).await?;
        tracing::info!(game_id = %req.game_id, "victory claimed: a seat abandoned the game");
        Ok(Response::new(pb::ClaimVictoryResponse {
            game: Some(game_pb(&view)),
        }))
    }

    async fn import_game(
        &self,
        request: Request<pb::ImportGameRequest>,
    ) -> Result<Response<pb::ImportGameResponse>, Status> {
        let caller = Caller::of(&request);
        let req = request.into_inner();
        let place = self.quotas.reserve_game(&caller.client())?;
        let (session, tokens) = self
            .store
            .import(&req.record, convert::labels(&req.labels))
            .await?;
        place.fill(&session);
        Ok(Response::new(pb::ImportGameResponse {
            game: Some(game_pb(&session.view(true))),
            seats: seat_tokens_pb(&session, &tokens),
        }))
    }

    async fn render_position(
        &self,
        request: Request<pb::RenderPositionRequest>,
    ) -> Result<Response<pb::RenderPositionResponse>, Status> {
        let caller = Caller::of(&request);
        caller.may_read(&request.get_ref().token)?;
        let req = request.into_inner();
        let session = self.store.find(&req.game_id).await?;
        let role = readers::reader(&caller, &session, &req.token)?;
        let view = session.view_at(req.ply, role)?;
        let svg = view
            .snapshot
            .as_ref()
            .map(|s| s.svg(view.last_move.as_ref(), view.outcome.as_ref()))
            .unwrap_or_default();
        Ok(Response::new(pb::RenderPositionResponse {
            svg,
            ply: view.ply,
        }))
    }
}
