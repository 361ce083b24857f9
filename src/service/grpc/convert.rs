//! `referee.v1` messages to and from the session layer's neutral types; each
//! per-game oneof member is handed to its game's [`WireGame`] (the registry
//! [`WIRE_GAMES`]).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, UNIX_EPOCH};

use super::games::{Part, WIRE_GAMES, WireGame, choices};
use super::pb::referee::v1 as pb;
use crate::games::{
    self, GameRules, MoveDetail, MoveInput, Outcome, Seat, SeatSet, SharedState, Viewer,
};
use crate::service::sessions::{
    ClockMode, ClockReading, Event, EventKind, History, ListQuery, SeatPresence, Session,
    SessionError, SessionView, SetupView, TimeControl,
};

fn bad(field: &'static str, description: impl Into<String>) -> SessionError {
    SessionError::InvalidArgument {
        field,
        description: description.into(),
    }
}

/// A seat on the wire: its number (1, 2, …), 0 for none.
pub fn seat_pb(seat: Option<Seat>) -> u32 {
    seat.map_or(0, Seat::number)
}

/// A set of seats on the wire: their numbers, ascending.
pub fn seats_pb(seats: SeatSet) -> Vec<u32> {
    seats.iter().map(Seat::number).collect()
}

/// A seat from the wire (`None` for 0), checked against a game of `seats`
/// seats.
pub fn seat(value: u32, seats: usize, field: &'static str) -> Result<Option<Seat>, SessionError> {
    if value == 0 {
        return Ok(None);
    }
    match Seat::from_number(value) {
        Some(s) if s.index() < seats => Ok(Some(s)),
        _ => Err(bad(
            field,
            format!("no seat {value}: the game's seats are 1 to {seats}"),
        )),
    }
}

/// The seats of a game on the wire: number and name.
pub fn seat_list_pb(names: &[&str]) -> Vec<pb::Seat> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| pb::Seat {
            number: i as u32 + 1,
            name: (*name).to_string(),
        })
        .collect()
}

/// A 32-byte seed from the wire: 64 hex digits, or empty for none.
pub fn seed(text: &str, field: &'static str) -> Result<Option<[u8; 32]>, SessionError> {
    if text.is_empty() {
        return Ok(None);
    }
    games::parse_seed(text)
        .map(Some)
        .ok_or_else(|| bad(field, "a seed is 64 hex digits (32 bytes)"))
}

/// A seeded game's setup on the wire.
pub fn setup_pb(s: &SetupView) -> pb::Setup {
    pb::Setup {
        commitment: games::hex(&s.commitment),
        seed: s.seed.map(|seed| games::hex(&seed)).unwrap_or_default(),
        supplied: s.supplied,
    }
}

/// A viewer on the wire: its seat number, 0 for a spectator.
pub fn viewer_pb(v: Viewer) -> u32 {
    match v {
        Viewer::Spectator => 0,
        Viewer::Seat(s) => s.number(),
    }
}

/// Finished or in progress, from an outcome.
pub fn status_pb(outcome: Option<&Outcome>) -> i32 {
    (if outcome.is_some() {
        pb::GameStatus::Finished
    } else {
        pb::GameStatus::InProgress
    }) as i32
}

/// A status filter from the wire: `Some(true)` = finished only.
pub fn status_filter(value: i32) -> Result<Option<bool>, SessionError> {
    match pb::GameStatus::try_from(value) {
        Ok(pb::GameStatus::Unspecified) => Ok(None),
        Ok(pb::GameStatus::InProgress) => Ok(Some(false)),
        Ok(pb::GameStatus::Finished) => Ok(Some(true)),
        Err(_) => Err(bad("status", "unknown status")),
    }
}

/// The first answer of the wire games to `convert` (the game whose value
/// it is).
fn first<T>(convert: impl Fn(&dyn WireGame) -> Option<T>) -> Option<T> {
    WIRE_GAMES.iter().find_map(|g| convert(*g))
}

/// The rules of a new game; absent means the default game
/// ([`GameRules::default`]). Errors name the fields of `part` (where the
/// request has its rules).
pub fn game_rules(rules: Option<&pb::GameRules>, part: &Part) -> Result<GameRules, SessionError> {
    match rules.map(|r| &r.game) {
        None => Ok(GameRules::default()),
        Some(Some(game)) => first(|g| g.rules(game, *part))
            .unwrap_or_else(|| Err(bad(part.rules(), "this server does not offer that game"))),
        Some(None) => Err(bad(
            part.rules(),
            format!("name the game: set {}", choices("rules")),
        )),
    }
}

/// Rules to the wire: each game's conversion reads its own options back.
pub fn game_rules_pb(rules: &GameRules) -> pb::GameRules {
    pb::GameRules {
        game: first(|g| g.rules_pb(rules)),
    }
}

/// A move from the wire, checked for syntax (errors name the fields of
/// `part`).
pub fn move_input(m: Option<&pb::Move>, part: &Part) -> Result<MoveInput, SessionError> {
    match m.and_then(|m| m.game.as_ref()) {
        Some(game) => first(|g| g.move_input(game, *part))
            .unwrap_or_else(|| Err(bad("move", "this server does not offer that game"))),
        None => Err(bad(
            "move",
            format!("a move is required (set {})", choices("move")),
        )),
    }
}

/// A listing request from the wire: the status filter checked, the rest
/// (page token, labels) left to the session layer.
pub fn list_query(req: pb::ListGamesRequest) -> Result<ListQuery, SessionError> {
    Ok(ListQuery {
        finished: status_filter(req.status)?,
        labels: labels(&req.labels),
        page_size: req.page_size as usize,
        page_token: req.page_token,
    })
}

/// A stateless adjudication request from the wire: the history (a record,
/// or rules and moves checked for syntax) and the candidate move.
pub fn validate_move_request(
    req: pb::ValidateMoveRequest,
) -> Result<(History, MoveInput), SessionError> {
    let history = match req.history {
        Some(pb::validate_move_request::History::Record(text)) => History::Record(text),
        Some(pb::validate_move_request::History::Moves(h)) => {
            let rules = game_rules(h.rules.as_ref(), &Part::History)?;
            let seed = seed(&h.seed, "moves.seed")?;
            let moves = h
                .moves
                .iter()
                .map(|m| move_input(Some(m), &Part::History))
                .collect::<Result<Vec<_>, _>>()?;
            History::Moves(rules, seed, moves)
        }
        None => {
            return Err(bad("history", "give the game so far as record or moves"));
        }
    };
    let mv = move_input(req.r#move.as_ref(), &Part::Request)?;
    Ok((history, mv))
}

/// A move to the wire: structured and canonical notation (each game's
/// conversion reads its own move back).
pub fn move_pb(detail: &MoveDetail) -> pb::Move {
    pb::Move {
        game: first(|g| g.move_pb(detail)),
    }
}

/// An outcome to the wire.
pub fn outcome_pb(v: &Outcome) -> pb::Outcome {
    pb::Outcome {
        winners: seats_pb(v.winners),
        draw: v.is_draw(),
        scores: v.scores.clone(),
        reason: v.reason.to_string(),
        detail: first(|g| g.outcome_detail_pb(v)),
    }
}

/// A time control from the wire (absent: untimed); bounds are checked by
/// the session layer.
pub fn time_control(tc: Option<&pb::TimeControl>) -> TimeControl {
    let Some(tc) = tc else {
        return TimeControl::default();
    };
    let mode = match &tc.mode {
        None => ClockMode::Untimed,
        Some(pb::time_control::Mode::Fischer(f)) => ClockMode::Fischer {
            initial: Duration::from_millis(f.initial_ms),
            increment: Duration::from_millis(f.increment_ms),
        },
        Some(pb::time_control::Mode::PerMove(p)) => ClockMode::PerMove {
            per_move: Duration::from_millis(p.move_ms),
        },
    };
    let ms32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    TimeControl {
        mode,
        first_move: tc.first_move_deadline_ms.map(Duration::from_millis),
        lag: tc
            .lag_compensation
            .as_ref()
            .map(|l| crate::service::sessions::LagCompensation {
                max_per_move_ms: ms32(l.max_per_move_ms),
                quota_ms: ms32(l.quota_ms),
            }),
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A time control to the wire.
pub fn time_control_pb(tc: &TimeControl) -> pb::TimeControl {
    let mode = match tc.mode {
        ClockMode::Untimed => None,
        ClockMode::Fischer { initial, increment } => {
            Some(pb::time_control::Mode::Fischer(pb::FischerClock {
                initial_ms: ms(initial),
                increment_ms: ms(increment),
            }))
        }
        ClockMode::PerMove { per_move } => {
            Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                move_ms: ms(per_move),
            }))
        }
    };
    pb::TimeControl {
        mode,
        first_move_deadline_ms: tc.first_move.map(ms),
        lag_compensation: tc.lag.map(|l| pb::LagCompensation {
            max_per_move_ms: u64::from(l.max_per_move_ms),
            quota_ms: u64::from(l.quota_ms),
        }),
    }
}

/// A clock reading to the wire.
pub fn clock_pb(c: &ClockReading) -> pb::ClockState {
    pb::ClockState {
        remaining_ms: c
            .remaining
            .as_deref()
            .unwrap_or_default()
            .iter()
            .copied()
            .map(ms)
            .collect(),
        running: seat_pb(c.running),
        first_move_remaining_ms: c.first_move_left.map(ms),
    }
}

/// Every seat's presence to the wire.
pub fn presence_pb(p: &[SeatPresence]) -> pb::Presence {
    pb::Presence {
        seats: p
            .iter()
            .enumerate()
            .map(|(i, s)| pb::SeatPresence {
                seat: i as u32 + 1,
                connected: s.connected,
                away_ms: ms(s.away_for),
            })
            .collect(),
    }
}

/// A game's state to the wire (each game's conversion reads its own state
/// back).
pub fn state_pb(s: &SharedState) -> pb::GameState {
    pb::GameState {
        game: first(|g| g.state_pb(s)),
    }
}

fn unix_ms(v: &SessionView) -> i64 {
    v.created_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn labels_pb(labels: &BTreeMap<String, String>) -> HashMap<String, String> {
    labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Labels from the wire.
pub fn labels(labels: &HashMap<String, String>) -> BTreeMap<String, String> {
    labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// A full snapshot to the wire.
pub fn game_pb(v: &SessionView) -> pb::Game {
    game_pb_with(v, v.snapshot.as_ref().map(state_pb))
}

/// [`game_pb`] with the state converted once per state of `session` and
/// shared by every caller (`grpc/shared.rs`).
pub fn shared_game_pb(session: &Session, v: &SessionView) -> pb::Game {
    let state = super::shared::shared_state(session, v, state_pb).map(|s| pb::GameState::clone(&s));
    game_pb_with(v, state)
}

/// `game` as `SNAPSHOT_VIEW_COMPACT` sends it: without what never changes
/// after creation, nor the state's rules and derived forms (each game's
/// `compact_state`).
pub fn compact_game_pb(mut game: pb::Game) -> pb::Game {
    game.labels.clear();
    game.spectator_delay = None;
    game.rules = None;
    game.time_control = None;
    game.created_unix_ms = 0;
    game.seats.clear();
    game.setup = None;
    if let Some(state) = game.state.as_mut().and_then(|s| s.game.as_mut()) {
        for g in WIRE_GAMES {
            g.compact_state(state);
        }
    }
    game
}

fn game_pb_with(v: &SessionView, state: Option<pb::GameState>) -> pb::Game {
    let (failure_policy, substitutions, failure_ending) = super::policy::failure_fields(&v.failure);
    pb::Game {
        game_id: v.id.to_string(),
        labels: labels_pb(&v.labels),
        status: status_pb(v.outcome.as_ref()),
        ply: v.ply,
        to_move: seat_pb(v.to_move),
        outcome: v.outcome.as_ref().map(outcome_pb),
        draw_offers: seats_pb(v.draw_offers),
        rules: Some(game_rules_pb(&v.rules)),
        state,
        last_move: v.last_move.as_ref().map(move_pb),
        created_unix_ms: unix_ms(v),
        time_control: Some(time_control_pb(&v.time_control)),
        clock: Some(clock_pb(&v.clock)),
        presence: Some(presence_pb(&v.presence)),
        seats: seat_list_pb(v.seats),
        setup: v.setup.as_ref().map(setup_pb),
        viewer: viewer_pb(v.viewer),
        chain_head: crate::games::hex(&v.chain),
        // Added where a finished game's answer carries it (GetGame).
        receipt: String::new(),
        failure_policy,
        substitutions,
        failure_ending,
        spectator_delay: super::delay::spectator_delay_pb(&v.labels),
    }
}

/// A listing entry to the wire.
pub fn summary_pb(v: &SessionView) -> pb::GameSummary {
    pb::GameSummary {
        game_id: v.id.to_string(),
        labels: labels_pb(&v.labels),
        status: status_pb(v.outcome.as_ref()),
        ply: v.ply,
        to_move: seat_pb(v.to_move),
        outcome: v.outcome.as_ref().map(outcome_pb),
        rules: Some(game_rules_pb(&v.rules)),
        created_unix_ms: unix_ms(v),
        time_control: Some(time_control_pb(&v.time_control)),
        clock: Some(clock_pb(&v.clock)),
        seats: seat_list_pb(v.seats),
        setup: v.setup.as_ref().map(setup_pb),
    }
}

/// The round-over notice that follows a move event, if the move ended a
/// round of a game played in rounds: its result and the next deal.
pub fn round_over_pb(e: &Event) -> Option<pb::RoundOver> {
    let EventKind::MoveApplied { report } = &e.kind else {
        return None;
    };
    let game = first(|g| g.round_over_pb(&report.detail))?;
    Some(pb::RoundOver {
        sequence: e.sequence,
        ply: e.ply,
        game: Some(game),
    })
}

/// An event to the wire, with the presence at the time it is sent.
pub fn event_pb(e: &Event, presence: &[SeatPresence]) -> pb::GameEvent {
    let kind = match &e.kind {
        EventKind::MoveApplied { report } => pb::game_event::Kind::MoveApplied(pb::MoveApplied {
            seat: seat_pb(Some(report.seat)),
            r#move: Some(move_pb(&report.detail)),
            to_move: seat_pb(report.next),
            // Set by the watch that sends it (it follows the chain).
            chain_head: String::new(),
            substituted: 0,
        }),
        EventKind::GameOver { outcome } => pb::game_event::Kind::GameOver(pb::GameOver {
            outcome: Some(outcome_pb(outcome)),
        }),
    };
    pb::GameEvent {
        sequence: e.sequence,
        ply: e.ply,
        kind: Some(kind),
        clock: Some(clock_pb(e.clock())),
        presence: Some(presence_pb(presence)),
    }
}

/// The referee's public keys to the wire.
pub fn referee_keys_pb(list: &crate::service::receipts::KeyList) -> pb::GetRefereeKeysResponse {
    pb::GetRefereeKeysResponse {
        algorithm: list.algorithm.clone(),
        current_key_id: list.current_key_id.clone(),
        keys: list
            .keys
            .iter()
            .filter_map(|k| {
                Some(pb::RefereePublicKey {
                    key_id: k.key_id.clone(),
                    public_key: k.bytes()?,
                    since_unix_ms: k.since_unix_ms,
                    retired_unix_ms: k.retired_unix_ms.unwrap_or(0),
                })
            })
            .collect(),
    }
}
