//! `referee.v1` messages to and from the session layer's neutral types; each
//! per-game oneof member is handed to its game's module ([`super::games::punct`]).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, UNIX_EPOCH};

use super::games::punct::{
    self, HISTORY_FIELDS, HISTORY_RULE_FIELDS, MOVE_FIELDS, MoveFields, RuleFields,
};
use super::pb::referee::v1 as pb;
use crate::games::{GameRules, MoveDetail, MoveInput, Seat, Snapshot, Verdict, VerdictDetail};
use crate::service::sessions::{
    ClockMode, ClockReading, Event, EventKind, GameView, History, ListQuery, SeatPresence,
    SessionError, TimeControl,
};

fn bad(field: &'static str, description: impl Into<String>) -> SessionError {
    SessionError::InvalidArgument {
        field,
        description: description.into(),
    }
}

/// A seat on the wire.
pub fn seat_pb(seat: Option<Seat>) -> i32 {
    (match seat {
        None => pb::Seat::Unspecified,
        Some(Seat::White) => pb::Seat::White,
        Some(Seat::Black) => pb::Seat::Black,
    }) as i32
}

/// A seat from the wire (`None` for unspecified).
pub fn seat(value: i32, field: &'static str) -> Result<Option<Seat>, SessionError> {
    match pb::Seat::try_from(value) {
        Ok(pb::Seat::Unspecified) => Ok(None),
        Ok(pb::Seat::White) => Ok(Some(Seat::White)),
        Ok(pb::Seat::Black) => Ok(Some(Seat::Black)),
        Err(_) => Err(bad(field, "unknown seat")),
    }
}

/// Finished or in progress, from a verdict.
pub fn status_pb(verdict: &Option<Verdict>) -> i32 {
    (if verdict.is_some() {
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

/// The rules of a new game; absent means standard PÜNCT. Errors name the
/// fields of `fields` (the request's path to its rules).
pub fn game_rules(
    rules: Option<&pb::GameRules>,
    fields: &RuleFields,
) -> Result<GameRules, SessionError> {
    match rules.map(|r| &r.game) {
        None => Ok(GameRules::default()),
        Some(Some(pb::game_rules::Game::Punct(o))) => {
            Ok(GameRules::Punct(punct::rule_options(o, fields)?))
        }
        Some(None) => Err(bad(fields.whole, "name the game: set rules.punct")),
    }
}

/// Rules to the wire.
pub fn game_rules_pb(rules: &GameRules) -> pb::GameRules {
    match rules {
        GameRules::Punct(o) => pb::GameRules {
            game: Some(pb::game_rules::Game::Punct(punct::rule_options_pb(o))),
        },
    }
}

/// A move from the wire, checked for syntax.
pub fn move_input(m: Option<&pb::Move>, fields: &MoveFields) -> Result<MoveInput, SessionError> {
    match m.and_then(|m| m.game.as_ref()) {
        Some(pb::r#move::Game::Punct(p)) => Ok(MoveInput::Punct(punct::move_input(p, fields)?)),
        None => Err(bad("move", "a move is required (set move.punct)")),
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
            let rules = game_rules(h.rules.as_ref(), &HISTORY_RULE_FIELDS)?;
            let moves = h
                .moves
                .iter()
                .map(|m| move_input(Some(m), &HISTORY_FIELDS))
                .collect::<Result<Vec<_>, _>>()?;
            History::Moves(rules, moves)
        }
        None => {
            return Err(bad("history", "give the game so far as record or moves"));
        }
    };
    let mv = move_input(req.r#move.as_ref(), &MOVE_FIELDS)?;
    Ok((history, mv))
}

/// A move to the wire: structured and canonical notation.
pub fn move_pb(detail: &MoveDetail) -> pb::Move {
    match detail {
        MoveDetail::Punct(info) => pb::Move {
            game: Some(pb::r#move::Game::Punct(punct::move_pb(info))),
        },
    }
}

/// An outcome to the wire.
pub fn outcome_pb(v: &Verdict) -> pb::Outcome {
    pb::Outcome {
        winner: seat_pb(v.winner),
        draw: v.winner.is_none(),
        reason: v.reason.to_string(),
        detail: Some(match &v.detail {
            VerdictDetail::Punct(o) => pb::outcome::Detail::Punct(punct::outcome_detail_pb(o)),
        }),
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
    TimeControl {
        mode,
        first_move: tc.first_move_deadline_ms.map(Duration::from_millis),
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
    }
}

/// A clock reading to the wire.
pub fn clock_pb(c: &ClockReading) -> pb::ClockState {
    pb::ClockState {
        white_remaining_ms: c.remaining.map(|r| ms(r[0])),
        black_remaining_ms: c.remaining.map(|r| ms(r[1])),
        running: seat_pb(c.running),
        first_move_remaining_ms: c.first_move_left.map(ms),
    }
}

/// Both seats' presence to the wire.
pub fn presence_pb(p: &[SeatPresence; 2]) -> pb::Presence {
    pb::Presence {
        white_connected: p[0].connected,
        black_connected: p[1].connected,
        white_away_ms: ms(p[0].away_for),
        black_away_ms: ms(p[1].away_for),
    }
}

/// A game's state to the wire.
pub fn state_pb(s: &Snapshot) -> pb::GameState {
    match s {
        Snapshot::Punct(p) => pb::GameState {
            game: Some(pb::game_state::Game::Punct(punct::state_pb(p))),
        },
    }
}

fn unix_ms(v: &GameView) -> i64 {
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
pub fn game_pb(v: &GameView) -> pb::Game {
    pb::Game {
        game_id: v.id.to_string(),
        labels: labels_pb(&v.labels),
        status: status_pb(&v.verdict),
        ply: v.ply,
        to_move: seat_pb(v.to_move),
        outcome: v.verdict.as_ref().map(outcome_pb),
        draw_offered_by: seat_pb(v.draw_offered_by),
        rules: Some(game_rules_pb(&v.rules)),
        state: v.snapshot.as_ref().map(state_pb),
        last_move: v.last_move.as_ref().map(move_pb),
        created_unix_ms: unix_ms(v),
        time_control: Some(time_control_pb(&v.time_control)),
        clock: Some(clock_pb(&v.clock)),
        presence: Some(presence_pb(&v.presence)),
    }
}

/// A listing entry to the wire.
pub fn summary_pb(v: &GameView) -> pb::GameSummary {
    pb::GameSummary {
        game_id: v.id.to_string(),
        labels: labels_pb(&v.labels),
        status: status_pb(&v.verdict),
        ply: v.ply,
        to_move: seat_pb(v.to_move),
        outcome: v.verdict.as_ref().map(outcome_pb),
        rules: Some(game_rules_pb(&v.rules)),
        created_unix_ms: unix_ms(v),
        time_control: Some(time_control_pb(&v.time_control)),
        clock: Some(clock_pb(&v.clock)),
    }
}

/// An event to the wire, with the presence at the time it is sent.
pub fn event_pb(e: &Event, presence: &[SeatPresence; 2]) -> pb::GameEvent {
    let kind = match &e.kind {
        EventKind::MoveApplied { report, to_move } => {
            pb::game_event::Kind::MoveApplied(pb::MoveApplied {
                seat: seat_pb(Some(report.seat)),
                r#move: Some(move_pb(&report.detail)),
                to_move: seat_pb(*to_move),
            })
        }
        EventKind::GameOver { verdict } => pb::game_event::Kind::GameOver(pb::GameOver {
            outcome: Some(outcome_pb(verdict)),
        }),
    };
    pb::GameEvent {
        sequence: e.sequence,
        ply: e.ply,
        kind: Some(kind),
        clock: Some(clock_pb(&e.clock)),
        presence: Some(presence_pb(presence)),
    }
}
