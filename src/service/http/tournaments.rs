//! The spectator page's tournaments (docs/TOURNAMENTS.md, docs/SPECTATOR.md):
//! `GET /api/tournaments` (every tournament with its standings) and
//! `GET /api/tournaments/{id}` (one, with its schedule: each game's id,
//! for a link to the game view, and result). The page polls them, so the
//! standings it shows are live. Built from the tournaments module's views;
//! no key, key hash or seat token is ever part of these shapes.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::{HttpError, WebState};
use crate::service::tournaments::schedule::Format;
use crate::service::tournaments::sprt::Decision;
use crate::service::tournaments::{TournamentError, TournamentView};

/// A tournament, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct TournamentJson {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The game's short name and variant.
    pub game: &'static str,
    /// The variant.
    pub variant: &'static str,
    /// `round_robin`, `double_round_robin`, `gauntlet` or `swiss`.
    pub format: &'static str,
    /// `registering`, `running`, `finished` or `cancelled`.
    pub status: &'static str,
    /// The rounds of the schedule.
    pub rounds: u32,
    /// The entrants, index order.
    pub entrants: Vec<EntrantJson>,
    /// The standings, best first.
    pub standings: Vec<StandingJson>,
    /// The crosstable: `cross[a][b]` a's points against b.
    pub cross: Vec<Vec<f64>>,
    /// Games played / scheduled.
    pub games_done: usize,
    /// Games scheduled so far (byes included).
    pub games_total: usize,
    /// The schedule (only in `/api/tournaments/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub games: Option<Vec<GameJson>>,
    /// The SPRT, if any.
    pub sprt: Option<SprtJson>,
    /// Each opening's seed, for a seeded game (null for an opening without
    /// one): its commitment always, the seed once the tournament's seeds are
    /// public (docs/TOURNAMENTS.md, "Seeds").
    pub opening_seeds: Vec<Option<SeedJson>>,
    /// The `setup_seed_base` once the tournament's seeds are public; null
    /// before (and for a tournament without one: see `setup_seeded`).
    pub setup_seed_base: Option<u64>,
    /// Whether the games' seeds derive from a `setup_seed_base`.
    pub setup_seeded: bool,
}

/// A seed the tournament supplies: its commitment, and itself once public.
#[derive(Debug, Clone, Serialize)]
pub struct SeedJson {
    /// SHA-256 of the seed, 64 lower-case hex digits.
    pub commitment: String,
    /// The seed, 64 lower-case hex digits, once public.
    pub seed: Option<String>,
}

/// One entrant.
#[derive(Debug, Clone, Serialize)]
pub struct EntrantJson {
    /// Its name.
    pub name: String,
    /// Whether it holds a stream now.
    pub connected: bool,
}

/// One line of the standings.
#[derive(Debug, Clone, Serialize)]
pub struct StandingJson {
    /// Place, from 1.
    pub rank: usize,
    /// The entrant's index.
    pub entrant: usize,
    /// Its name.
    pub name: String,
    /// Games, wins, draws, losses.
    pub games: u32,
    /// Wins.
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// Losses.
    pub losses: u32,
    /// Points.
    pub points: f64,
    /// Sonneborn–Berger.
    pub sonneborn_berger: f64,
    /// Buchholz.
    pub buchholz: f64,
    /// Elo and its 95% interval, once it has played.
    pub elo: Option<[f64; 3]>,
    /// Moves the referee played for it under the failure policy.
    pub substituted_moves: u32,
}

/// One scheduled game.
#[derive(Debug, Clone, Serialize)]
pub struct GameJson {
    /// Its number.
    pub number: u32,
    /// Its round.
    pub round: u32,
    /// The entrants' names, seat order.
    pub seats: Vec<String>,
    /// `pending`, `in_progress`, `finished`, `bye` or `skipped`.
    pub status: &'static str,
    /// The game id, once created (the page links to it).
    pub game_id: Option<String>,
    /// Each seat's points, once over.
    pub points: Vec<f64>,
    /// Why it ended.
    pub reason: Option<String>,
    /// SHA-256 of the seed the tournament supplies to this game (an
    /// opening's or one from `setup_seed_base`): the game's own commitment.
    /// Null when the game draws its own seed or has no random setup.
    pub seed_commitment: Option<String>,
}

/// The SPRT.
#[derive(Debug, Clone, Serialize)]
pub struct SprtJson {
    /// The log-likelihood ratio.
    pub llr: f64,
    /// The bounds.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// `H0`, `H1`, or absent while undecided.
    pub decision: Option<&'static str>,
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::RoundRobin => "round_robin",
        Format::DoubleRoundRobin => "double_round_robin",
        Format::Gauntlet => "gauntlet",
        Format::Swiss { .. } => "swiss",
    }
}

/// The JSON of `v` (with its schedule when `with_games`).
pub fn tournament_json(v: &TournamentView, with_games: bool) -> TournamentJson {
    let d = &v.doc;
    let seeds = d.shown_seeds();
    let name_of = |e: usize| {
        d.entrants
            .get(e)
            .map(|x| x.name.clone())
            .unwrap_or_default()
    };
    let games = with_games.then(|| {
        d.games
            .iter()
            .map(|g| {
                let shown = d.shown_game(g);
                GameJson {
                    number: g.number,
                    round: g.round,
                    seats: g.seats.iter().map(|&e| name_of(e)).collect(),
                    status: shown.status.name(),
                    game_id: shown.game_id,
                    points: shown.points,
                    reason: shown.reason,
                    seed_commitment: shown.seed_commitment,
                }
            })
            .collect()
    });
    TournamentJson {
        id: d.id.clone(),
        name: d.name.clone(),
        game: v.rules.game_name(),
        variant: v.rules.variant_name(),
        format: format_name(d.format),
        status: d.status.name(),
        rounds: d.rounds,
        entrants: d
            .entrants
            .iter()
            .zip(&v.connected)
            .map(|(e, &connected)| EntrantJson {
                name: e.name.clone(),
                connected,
            })
            .collect(),
        standings: standings_json(v, &name_of),
        cross: v.table.cross.clone(),
        games_done: d.games_done(),
        games_total: d.games.len(),
        games,
        sprt: v.sprt.map(|s| SprtJson {
            llr: s.llr,
            lower: s.lower,
            upper: s.upper,
            decision: d.decision.map(|d| match d {
                Decision::H0 => "H0",
                Decision::H1 => "H1",
            }),
        }),
        opening_seeds: seeds
            .openings
            .into_iter()
            .map(|o| {
                o.map(|s| SeedJson {
                    commitment: s.commitment,
                    seed: s.seed,
                })
            })
            .collect(),
        setup_seed_base: seeds.setup_seed_base,
        setup_seeded: seeds.setup_seeded,
    }
}

/// The standings of `v`, best first.
fn standings_json(v: &TournamentView, name_of: &dyn Fn(usize) -> String) -> Vec<StandingJson> {
    v.table
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| StandingJson {
            rank: i + 1,
            entrant: l.entrant,
            name: name_of(l.entrant),
            games: l.games,
            wins: l.wins,
            draws: l.draws,
            losses: l.losses,
            points: l.points,
            sonneborn_berger: l.sonneborn_berger,
            buchholz: l.buchholz,
            elo: l.elo.map(|e| [e.elo, e.low, e.high]),
            substituted_moves: v.doc.substituted_moves(l.entrant),
        })
        .collect()
}

/// The listing's shape.
#[derive(Debug, Clone, Serialize)]
pub struct TournamentList {
    /// Every tournament, oldest first, without schedules.
    pub tournaments: Vec<TournamentJson>,
}

/// `GET /api/tournaments`.
pub async fn list(State(state): State<WebState>) -> Result<Response, HttpError> {
    // In a cluster, every tournament of the database.
    let (views, _) = state
        .tournaments
        .list_all("", crate::service::tournaments::MAX_TOURNAMENTS, None)
        .await
        .map_err(unavailable)?;
    // Every HTTP reader is a spectator: a delayed game's result counts
    // once its end is shown (docs/SPECTATOR.md, "Delayed spectators").
    Ok(axum::Json(TournamentList {
        tournaments: views
            .into_iter()
            .map(|v| tournament_json(&state.tournaments.as_spectators_see(v), false))
            .collect(),
    })
    .into_response())
}

/// The database could not be read.
fn unavailable(e: TournamentError) -> HttpError {
    HttpError {
        status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
        message: e.to_string(),
    }
}

/// `GET /api/tournaments/{id}`.
pub async fn get(
    State(state): State<WebState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    // In a cluster, one owned by another replica as last stored.
    let view = state.tournaments.view_any(&id).await.map_err(|e| match e {
        TournamentError::NotFound(_) => HttpError::not_found(e.to_string()),
        e @ (TournamentError::Unavailable(_) | TournamentError::Moved(_)) => unavailable(e),
        other => HttpError::bad_request(other.to_string()),
    })?;
    let view = state.tournaments.as_spectators_see(view);
    Ok(axum::Json(tournament_json(&view, true)).into_response())
}
