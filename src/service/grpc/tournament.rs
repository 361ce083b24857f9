//! The `referee.v1.TournamentService` handlers (docs/TOURNAMENTS.md): thin
//! conversions between protobuf and [`crate::service::tournaments`];
//! failures go through [`super::error::tournament_status`]. Keys and seat
//! tokens are never logged.

use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::answer::server::tournament_service_server::TournamentService;
use super::convert;
use super::error::{invalid_argument, tournament_status};
use super::games::Part;
use super::pb::referee::v1 as pb;
use crate::service::edge::access::Caller;
use crate::service::tournaments::record::{PairingStatus, TournamentStatus};
use crate::service::tournaments::schedule::Format;
use crate::service::tournaments::sprt::{Decision, Sprt};
use crate::service::tournaments::{
    Assignment, EntrantKey, NewTournament, OpeningInput, Push, TournamentView, Tournaments,
};

/// The tournament service over the server's tournaments.
#[derive(Debug, Clone)]
pub struct TournamentApi {
    tournaments: Arc<Tournaments>,
    shutdown: CancellationToken,
}

impl TournamentApi {
    /// The service; open entrant streams end at `shutdown`.
    pub fn new(tournaments: Arc<Tournaments>, shutdown: CancellationToken) -> TournamentApi {
        TournamentApi {
            tournaments,
            shutdown,
        }
    }
}

type ConnectStream = Pin<Box<dyn Stream<Item = Result<pb::ConnectEntrantResponse, Status>> + Send>>;

/// The spec of a new tournament from the wire.
fn new_tournament(req: pb::CreateTournamentRequest) -> Result<NewTournament, Status> {
    let spec = req.spec.unwrap_or_default();
    let rules = convert::game_rules(spec.rules.as_ref(), &Part::Tournament)?;
    let format = match pb::TournamentFormat::try_from(spec.format) {
        Ok(pb::TournamentFormat::RoundRobin) => Format::RoundRobin,
        Ok(pb::TournamentFormat::DoubleRoundRobin) => Format::DoubleRoundRobin,
        Ok(pb::TournamentFormat::Gauntlet) => Format::Gauntlet,
        Ok(pb::TournamentFormat::Swiss) => Format::Swiss {
            rounds: spec.swiss_rounds,
        },
        Ok(pb::TournamentFormat::Unspecified) | Err(_) => {
            return Err(invalid_argument(
                "spec.format",
                "name the format: ROUND_ROBIN, DOUBLE_ROUND_ROBIN, GAUNTLET or SWISS",
            ));
        }
    };
    if spec.swiss_rounds != 0 && !matches!(format, Format::Swiss { .. }) {
        return Err(invalid_argument(
            "spec.swiss_rounds",
            "only a Swiss has rounds to set",
        ));
    }
    let mut openings = Vec::new();
    for (i, o) in spec.openings.iter().enumerate() {
        let moves = o
            .moves
            .iter()
            .map(|m| convert::move_input(Some(m), &Part::Tournament))
            .collect::<Result<Vec<_>, _>>()?;
        let seed = if o.seed.is_empty() {
            None
        } else {
            Some(crate::games::parse_seed(&o.seed).ok_or_else(|| {
                invalid_argument(
                    &format!("spec.openings[{i}].seed"),
                    "64 hex digits expected",
                )
            })?)
        };
        openings.push(OpeningInput { moves, seed });
    }
    let mut labels = convert::labels(&spec.labels);
    super::delay::merge(
        &mut labels,
        spec.spectator_delay.as_ref(),
        "spec.spectator_delay",
    )?;
    let sprt = spec.sprt.map(|s| Sprt {
        elo0: s.elo0,
        elo1: s.elo1,
        alpha: s.alpha,
        beta: s.beta,
    });
    Ok(NewTournament {
        name: spec.name,
        rules,
        format,
        games_per_pairing: spec.games_per_pairing,
        time_control: convert::time_control(spec.time_control.as_ref()),
        openings,
        concurrency: spec.concurrency,
        labels,
        open_registration: spec.open_registration,
        table_size: spec.table_size,
        sprt,
        setup_seed_base: spec.setup_seed_base,
        entrants: req.entrants,
        failure_policy: super::policy::failure_policy(spec.failure_policy.as_ref()).map_err(
            |e| match e {
                crate::service::sessions::SessionError::InvalidArgument { field, description } => {
                    invalid_argument(&format!("spec.{field}"), description)
                }
                other => Status::internal(other.to_string()),
            },
        )?,
    })
}

fn status_pb(s: TournamentStatus) -> pb::TournamentStatus {
    match s {
        TournamentStatus::Registering => pb::TournamentStatus::Registering,
        TournamentStatus::Running => pb::TournamentStatus::Running,
        TournamentStatus::Finished => pb::TournamentStatus::Finished,
        TournamentStatus::Cancelled => pb::TournamentStatus::Cancelled,
    }
}

fn key_pb(k: EntrantKey) -> pb::EntrantKey {
    pb::EntrantKey {
        entrant: k.entrant as u32,
        name: k.name,
        entrant_key: k.key,
    }
}

/// The standings to the wire.
fn standings_pb(v: &TournamentView) -> Vec<pb::Standing> {
    v.table
        .lines
        .iter()
        .enumerate()
        .map(|(rank, l)| pb::Standing {
            rank: rank as u32 + 1,
            entrant: l.entrant as u32,
            name: v
                .doc
                .entrants
                .get(l.entrant)
                .map(|e| e.name.clone())
                .unwrap_or_default(),
            games: l.games,
            wins: l.wins,
            draws: l.draws,
            losses: l.losses,
            points: l.points,
            sonneborn_berger: l.sonneborn_berger,
            buchholz: l.buchholz,
            elo: l.elo.map(|e| e.elo),
            elo_low: l.elo.map(|e| e.low),
            elo_high: l.elo.map(|e| e.high),
            substituted_moves: v.doc.substituted_moves(l.entrant),
        })
        .collect()
}

/// A tournament's spec to the wire, its seeds as any reader may see them.
fn spec_pb(v: &TournamentView) -> pb::TournamentSpec {
    let d = &v.doc;
    let seeds = d.shown_seeds();
    pb::TournamentSpec {
        name: d.name.clone(),
        rules: Some(convert::game_rules_pb(&v.rules)),
        format: match d.format {
            Format::RoundRobin => pb::TournamentFormat::RoundRobin,
            Format::DoubleRoundRobin => pb::TournamentFormat::DoubleRoundRobin,
            Format::Gauntlet => pb::TournamentFormat::Gauntlet,
            Format::Swiss { .. } => pb::TournamentFormat::Swiss,
        } as i32,
        swiss_rounds: match d.format {
            Format::Swiss { rounds } => rounds,
            _ => 0,
        },
        games_per_pairing: d.games_per_pairing,
        time_control: Some(convert::time_control_pb(&v.time_control)),
        // The tournament's own seeds are secrets of its games until it is
        // over; commitments stand in for them (tournaments::disclose).
        openings: seeds
            .openings
            .iter()
            .zip(&v.openings)
            .map(|(seed, moves)| pb::Opening {
                moves: moves.iter().map(convert::move_pb).collect(),
                seed: seed
                    .as_ref()
                    .and_then(|s| s.seed.clone())
                    .unwrap_or_default(),
                seed_commitment: seed
                    .as_ref()
                    .map(|s| s.commitment.clone())
                    .unwrap_or_default(),
            })
            .collect(),
        concurrency: d.concurrency,
        labels: d.labels.clone().into_iter().collect(),
        open_registration: d.open_registration,
        table_size: d.table as u32,
        sprt: d.sprt.map(|s| pb::Sprt {
            elo0: s.elo0,
            elo1: s.elo1,
            alpha: s.alpha,
            beta: s.beta,
        }),
        setup_seed_base: seeds.setup_seed_base,
        setup_seeded: seeds.setup_seeded,
        failure_policy: v
            .doc
            .failure_policy
            .as_ref()
            .map(|p| super::policy::failure_policy_pb(&p.policy())),
        spectator_delay: super::delay::spectator_delay_pb(&d.labels),
    }
}

/// A finished tournament's signed receipt (JSON; empty before it ends):
/// its final standings and the SHA-256 of each of its games' receipts
/// (empty for a game that has none: skipped, or no longer stored), made on
/// demand as a game's is (docs/RECEIPTS.md).
async fn tournament_receipt(tournaments: &Tournaments, v: &TournamentView) -> String {
    use crate::service::receipts::{
        Receipt, TOURNAMENT_RECEIPT, TournamentGame, TournamentPayload, TournamentStanding,
        sha256_hex,
    };
    let d = &v.doc;
    if d.status != TournamentStatus::Finished {
        return String::new();
    }
    let store = tournaments.sessions();
    let key = store.referee_key();
    let mut games = Vec::new();
    for g in &d.games {
        let Some(id) = g.state.game_id() else {
            continue;
        };
        let receipt_sha256 = match store.find(id).await {
            Ok(session) => session
                .signed_receipt(key)
                .map(|r| sha256_hex(r.to_json().as_bytes()))
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        games.push(TournamentGame {
            game_id: id.to_string(),
            receipt_sha256,
        });
    }
    let standings = v
        .table
        .lines
        .iter()
        .map(|l| TournamentStanding {
            entrant: d
                .entrants
                .get(l.entrant)
                .map(|e| e.name.clone())
                .unwrap_or_default(),
            points: l.points,
            games: l.games,
        })
        .collect();
    let payload = TournamentPayload {
        kind: TOURNAMENT_RECEIPT.to_string(),
        tournament_id: d.id.clone(),
        standings,
        games,
        key_id: key.id().to_string(),
        ended_unix_ms: d.ended_ms,
    };
    Receipt::sign(&payload, key).to_json()
}

/// A tournament to the wire (`with_games`: its schedule too).
pub fn tournament_pb(v: &TournamentView, with_games: bool) -> pb::Tournament {
    let d = &v.doc;
    let spec = spec_pb(v);
    let games = if with_games {
        d.games.iter().map(|g| game_pb(d, g)).collect()
    } else {
        Vec::new()
    };
    pb::Tournament {
        receipt: String::new(),
        tournament_id: d.id.clone(),
        spec: Some(spec),
        status: status_pb(d.status) as i32,
        entrants: d
            .entrants
            .iter()
            .enumerate()
            .map(|(i, e)| pb::Entrant {
                index: i as u32,
                name: e.name.clone(),
                connected: v.connected.get(i).copied().unwrap_or(false),
            })
            .collect(),
        games,
        standings: standings_pb(v),
        crosstable: (0..d.entrants.len())
            .map(|a| pb::CrosstableRow {
                entrant: a as u32,
                points: v.table.cross[a].clone(),
                games: v.table.meetings[a].clone(),
            })
            .collect(),
        sprt: v.sprt.map(|s| pb::SprtState {
            llr: s.llr,
            lower_bound: s.lower,
            upper_bound: s.upper,
            decision: match d.decision {
                Some(Decision::H0) => pb::SprtDecision::H0,
                Some(Decision::H1) => pb::SprtDecision::H1,
                None => pb::SprtDecision::Unspecified,
            } as i32,
            games: d
                .games
                .iter()
                .filter(|g| matches!(g.state, PairingStatus::Done { .. }))
                .count() as u32,
            pentanomial: v.pentanomial,
        }),
        created_unix_ms: d.created_ms,
        started_unix_ms: d.started_ms,
        ended_unix_ms: d.ended_ms,
        rounds: d.rounds,
    }
}

/// One scheduled game of `d` to the wire.
fn game_pb(
    d: &crate::service::tournaments::record::Doc,
    g: &crate::service::tournaments::record::GameDoc,
) -> pb::TournamentGame {
    use crate::service::tournaments::disclose::GameStatus;
    let shown = d.shown_game(g);
    pb::TournamentGame {
        number: g.number,
        round: g.round,
        entrants: g.seats.iter().map(|&e| e as u32).collect(),
        game_id: shown.game_id.unwrap_or_default(),
        opening: g.opening.map(|o| o as u32),
        seed_commitment: shown.seed_commitment.unwrap_or_default(),
        status: match shown.status {
            GameStatus::Pending => pb::TournamentGameStatus::Pending,
            GameStatus::InProgress => pb::TournamentGameStatus::InProgress,
            GameStatus::Finished => pb::TournamentGameStatus::Finished,
            GameStatus::Bye => pb::TournamentGameStatus::Bye,
            GameStatus::Skipped => pb::TournamentGameStatus::Skipped,
        } as i32,
        points: shown.points,
        winners: shown.winners.iter().map(|&w| w as u32 + 1).collect(),
        reason: shown.reason.unwrap_or_default(),
        ply: shown.ply,
    }
}

/// A game assignment to the wire, with the game's clock and ply now.
async fn assignment_pb(
    tournaments: &Tournaments,
    a: Assignment,
) -> Option<pb::ConnectEntrantResponse> {
    // Held here, or (a cluster) by another replica: as stored.
    let view = tournaments.sessions().peek(&a.game_id).await.ok()?;
    Some(pb::ConnectEntrantResponse {
        event: Some(pb::connect_entrant_response::Event::Game(
            pb::GameAssignment {
                tournament_id: a.tournament_id,
                number: a.number,
                round: a.round,
                game_id: a.game_id,
                seat: a.seat as u32 + 1,
                seat_token: a.token,
                rules: Some(convert::game_rules_pb(&view.rules)),
                time_control: Some(convert::time_control_pb(&view.time_control)),
                clock: Some(convert::clock_pb(&view.clock)),
                seat_entrants: a.seat_entrants,
                seats: convert::seat_list_pb(view.seats),
                ply: view.ply,
            },
        )),
    })
}

#[tonic::async_trait]
impl TournamentService for TournamentApi {
    async fn create_tournament(
        &self,
        request: Request<pb::CreateTournamentRequest>,
    ) -> Result<Response<pb::CreateTournamentResponse>, Status> {
        let new = new_tournament(request.into_inner())?;
        let (view, keys) = self
            .tournaments
            .create(new)
            .await
            .map_err(tournament_status)?;
        Ok(Response::new(pb::CreateTournamentResponse {
            tournament: Some(tournament_pb(&view, true)),
            keys: keys.into_iter().map(key_pb).collect(),
        }))
    }

    async fn add_entrant(
        &self,
        request: Request<pb::AddEntrantRequest>,
    ) -> Result<Response<pb::AddEntrantResponse>, Status> {
        let req = request.into_inner();
        let key = self
            .tournaments
            .add_entrant(&req.tournament_id, &req.name)
            .await
            .map_err(tournament_status)?;
        Ok(Response::new(pb::AddEntrantResponse {
            key: Some(key_pb(key)),
        }))
    }

    async fn start_tournament(
        &self,
        request: Request<pb::StartTournamentRequest>,
    ) -> Result<Response<pb::StartTournamentResponse>, Status> {
        let view = self
            .tournaments
            .start(&request.get_ref().tournament_id)
            .await
            .map_err(tournament_status)?;
        Ok(Response::new(pb::StartTournamentResponse {
            tournament: Some(tournament_pb(&view, true)),
        }))
    }

    async fn cancel_tournament(
        &self,
        request: Request<pb::CancelTournamentRequest>,
    ) -> Result<Response<pb::CancelTournamentResponse>, Status> {
        let view = self
            .tournaments
            .cancel(&request.get_ref().tournament_id)
            .await
            .map_err(tournament_status)?;
        Ok(Response::new(pb::CancelTournamentResponse {
            tournament: Some(tournament_pb(&view, true)),
        }))
    }

    async fn get_tournament(
        &self,
        request: Request<pb::GetTournamentRequest>,
    ) -> Result<Response<pb::GetTournamentResponse>, Status> {
        let platform = super::readers::is_platform(&Caller::of(&request));
        let mut view = self
            .tournaments
            .view_any(&request.get_ref().tournament_id)
            .await
            .map_err(tournament_status)?;
        if !platform {
            view = self.tournaments.as_spectators_see(view);
        }
        // A spectator's receipt is over what the spectator is shown (none
        // while a delayed game's end is not shown yet).
        let mut tournament = tournament_pb(&view, true);
        tournament.receipt = tournament_receipt(&self.tournaments, &view).await;
        Ok(Response::new(pb::GetTournamentResponse {
            tournament: Some(tournament),
        }))
    }

    async fn list_tournaments(
        &self,
        request: Request<pb::ListTournamentsRequest>,
    ) -> Result<Response<pb::ListTournamentsResponse>, Status> {
        let platform = super::readers::is_platform(&Caller::of(&request));
        let req = request.into_inner();
        let status = match pb::TournamentStatus::try_from(req.status) {
            Ok(pb::TournamentStatus::Unspecified) => None,
            Ok(pb::TournamentStatus::Registering) => Some(TournamentStatus::Registering),
            Ok(pb::TournamentStatus::Running) => Some(TournamentStatus::Running),
            Ok(pb::TournamentStatus::Finished) => Some(TournamentStatus::Finished),
            Ok(pb::TournamentStatus::Cancelled) => Some(TournamentStatus::Cancelled),
            Err(_) => {
                return Err(invalid_argument(
                    "status",
                    format!("{} is not a TournamentStatus", req.status),
                ));
            }
        };
        let size = match req.page_size {
            0 => crate::service::sessions::DEFAULT_PAGE_SIZE,
            n => (n as usize).min(crate::service::sessions::MAX_PAGE_SIZE),
        };
        // A spectator's filter applies to the status it is shown: a delayed
        // tournament that ended is still running for it (docs/SPECTATOR.md),
        // so the page is read unfiltered and filtered once shown (a page may
        // then hold fewer than its size: the token says whether more follow).
        let stored = if platform { status } else { None };
        let (views, more) = self
            .tournaments
            .list_all(&req.page_token, size, stored)
            .await
            .map_err(tournament_status)?;
        let next_page_token = if more {
            views.last().map(|v| v.doc.id.clone()).unwrap_or_default()
        } else {
            String::new()
        };
        Ok(Response::new(pb::ListTournamentsResponse {
            tournaments: views
                .into_iter()
                .map(|v| match platform {
                    true => v,
                    false => self.tournaments.as_spectators_see(v),
                })
                .filter(|v| status.is_none_or(|s| v.doc.status == s))
                .map(|v| tournament_pb(&v, false))
                .collect(),
            next_page_token,
        }))
    }

    type ConnectEntrantStream = ConnectStream;

    async fn connect_entrant(
        &self,
        request: Request<pb::ConnectEntrantRequest>,
    ) -> Result<Response<Self::ConnectEntrantStream>, Status> {
        let req = request.into_inner();
        let mut connection = self
            .tournaments
            .connect(&req.entrant_key, &req.tournament_id)
            .map_err(tournament_status)?;
        let (tx, rx) = mpsc::channel::<Result<pb::ConnectEntrantResponse, Status>>(4);
        let tournaments = self.tournaments.clone();
        let shutdown = self.shutdown.clone();
        let alive = tournaments.track();
        tokio::spawn(async move {
            let _alive = alive;
            loop {
                let push = tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => {
                        let _ = tx.try_send(Err(Status::unavailable("the server is shutting down")));
                        break;
                    }
                    _ = tx.closed() => break,
                    push = connection.pushes.recv() => push,
                };
                let (message, last) = match push {
                    Some(Push::Game(a)) => match assignment_pb(&tournaments, a).await {
                        Some(m) => (m, false),
                        None => continue,
                    },
                    Some(Push::Ended(view)) => (
                        pb::ConnectEntrantResponse {
                            event: Some(pb::connect_entrant_response::Event::Ended(
                                pb::TournamentEnded {
                                    status: status_pb(view.doc.status) as i32,
                                    standings: standings_pb(&view),
                                },
                            )),
                        },
                        true,
                    ),
                    Some(Push::Moved) => {
                        let id = connection.tournament_id();
                        let _ = tx
                            .send(Err(tournament_status(
                                crate::service::tournaments::TournamentError::Moved(id),
                            )))
                            .await;
                        break;
                    }
                    None => break,
                };
                if tx.send(Ok(message)).await.is_err() || last {
                    break;
                }
            }
            // The connection (dropped here) frees the entrant's slot.
            drop(connection);
        });
        Ok(Response::new(
            Box::pin(ReceiverStream::new(rx)) as ConnectStream
        ))
    }
}
