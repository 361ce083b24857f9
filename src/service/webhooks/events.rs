//! The webhook events and their JSON bodies: one function per event kind.
//! A body is `{"type", "timestamp", "data"}` (Standard Webhooks); `data`
//! names the game (or tournament), its kind, status, outcome and ply. The
//! body is made once, when the change is written, and stored with it: every
//! attempt sends the same bytes.

use serde_json::{Value, json};

use crate::service::storage::outbox::OutboxEvent;
use crate::service::storage::{GameRow, MoveRow, OutcomeRow, TournamentRow};

/// Every event kind an endpoint may subscribe to.
pub const KINDS: [&str; 6] = [
    GAME_CREATED,
    GAME_ENDED,
    GAME_MOVE,
    TOURNAMENT_STARTED,
    TOURNAMENT_ROUND_FINISHED,
    TOURNAMENT_ENDED,
];
/// A game was created (or imported).
pub const GAME_CREATED: &str = "game.created";
/// A game ended (finished or expired).
pub const GAME_ENDED: &str = "game.ended";
/// A move was accepted (sent only when some endpoint asks for it).
pub const GAME_MOVE: &str = "game.move";
/// A tournament started.
pub const TOURNAMENT_STARTED: &str = "tournament.started";
/// Every game of a tournament's round is over.
pub const TOURNAMENT_ROUND_FINISHED: &str = "tournament.round_finished";
/// A tournament finished or was cancelled.
pub const TOURNAMENT_ENDED: &str = "tournament.ended";

/// The bit of `kind` in a subscription mask.
pub fn bit(kind: &str) -> u32 {
    KINDS.iter().position(|k| *k == kind).map_or(0, |i| 1 << i)
}

/// A new event id: `msg_` and 32 random hex digits.
pub fn event_id() -> String {
    format!("msg_{:032x}", rand::random::<u128>())
}

/// RFC 3339 UTC of Unix milliseconds `ms` (with milliseconds).
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn event(kind: &'static str, subject: &str, at_ms: i64, data: Value) -> OutboxEvent {
    let body = json!({ "type": kind, "timestamp": rfc3339(at_ms), "data": data });
    OutboxEvent {
        id: event_id(),
        kind,
        subject: subject.to_owned(),
        body: body.to_string(),
        at_ms,
        queue_limit: 0,
    }
}

/// The game kind as events name it: `game` or `game/variant`.
pub fn game_kind(game: &GameRow) -> String {
    if game.variant.is_empty() {
        game.game.clone()
    } else {
        format!("{}/{}", game.game, game.variant)
    }
}

fn outcome(end: &OutcomeRow) -> Value {
    json!({
        "winners": end.winners.iter().map(|s| s.number()).collect::<Vec<_>>(),
        "scores": end.scores,
        "reason": end.reason,
    })
}

/// `game.created`.
pub fn game_created(game: &GameRow, ply: usize, end: Option<&OutcomeRow>) -> OutboxEvent {
    let data = json!({
        "game_id": game.id,
        "kind": game_kind(game),
        "status": end.map_or("in_progress", |e| e.status),
        "outcome": end.map(outcome),
        "ply": end.map_or(ply as u64, |e| u64::from(e.ply)),
        "labels": game.labels,
    });
    event(GAME_CREATED, &game.id, game.created_at_ms, data)
}

/// `game.ended`; the game's signed receipt is added as `data.receipt`
/// when the delivery is sent (`deliver::with_receipt`).
pub fn game_ended(kind: &str, end: &OutcomeRow) -> OutboxEvent {
    let data = json!({
        "game_id": end.game_id,
        "kind": kind,
        "status": end.status,
        "outcome": outcome(end),
        "ply": end.ply,
    });
    event(GAME_ENDED, &end.game_id, end.at_ms, data)
}

/// `game.move`.
pub fn game_move(kind: &str, mv: &MoveRow) -> OutboxEvent {
    let data = json!({
        "game_id": mv.game_id,
        "kind": kind,
        "status": "in_progress",
        "outcome": Value::Null,
        "ply": mv.ply,
        "seat": mv.seat.number(),
        "move": mv.notation,
    });
    event(GAME_MOVE, &mv.game_id, mv.played_at_ms, data)
}

/// What a tournament's events say of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TournamentState {
    /// Its status.
    pub status: String,
    /// The rounds whose games are all over.
    pub rounds_done: u32,
}

impl TournamentState {
    /// The state a stored document shows.
    pub fn of(row: &TournamentRow) -> TournamentState {
        let doc: Value = serde_json::from_str(&row.document).unwrap_or(Value::Null);
        let mut rounds: std::collections::BTreeMap<u64, bool> = Default::default();
        for g in doc["games"].as_array().into_iter().flatten() {
            let round = g["round"].as_u64().unwrap_or(0);
            let open = matches!(g["state"]["state"].as_str(), Some("pending" | "playing"))
                || matches!(g["state"].as_str(), Some("pending" | "playing"));
            let done = rounds.entry(round).or_insert(true);
            *done &= !open;
        }
        let rounds_done = rounds.iter().take_while(|(_, done)| **done).count() as u32;
        TournamentState {
            status: row.status.clone(),
            rounds_done,
        }
    }
}

fn tournament_data(row: &TournamentRow, state: &TournamentState) -> Value {
    let doc: Value = serde_json::from_str(&row.document).unwrap_or(Value::Null);
    json!({
        "tournament_id": row.id,
        "kind": doc["rules_header"].as_str().unwrap_or_default(),
        "status": state.status,
        "outcome": doc.get("decision").cloned().unwrap_or(Value::Null),
        "rounds_finished": state.rounds_done,
    })
}

/// The events a tournament's new document reports, given what the last
/// one said (`None`: this is the first seen).
pub fn tournament_events(
    row: &TournamentRow,
    before: Option<&TournamentState>,
    now_ms: i64,
) -> (TournamentState, Vec<OutboxEvent>) {
    let state = TournamentState::of(row);
    let mut events = Vec::new();
    let was = before.map_or("registering", |b| b.status.as_str());
    let data = |round: Option<u32>| {
        let mut d = tournament_data(row, &state);
        if let Some(r) = round {
            d["round"] = json!(r);
        }
        d
    };
    if was == "registering" && state.status != "registering" && state.status != "cancelled" {
        events.push(event(TOURNAMENT_STARTED, &row.id, now_ms, data(None)));
    }
    let done_before = before.map_or(0, |b| b.rounds_done);
    for round in done_before + 1..=state.rounds_done {
        events.push(event(
            TOURNAMENT_ROUND_FINISHED,
            &row.id,
            now_ms,
            data(Some(round)),
        ));
    }
    let ended = |s: &str| s == "finished" || s == "cancelled";
    if ended(&state.status) && !ended(was) {
        events.push(event(TOURNAMENT_ENDED, &row.id, now_ms, data(None)));
    }
    (state, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_461_445_123), "2026-12-05T09:04:05.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_tournament_reports_its_start_rounds_and_end_once_each() {
        let row = |status: &str, states: &[(u32, &str)]| TournamentRow {
            id: "t1".into(),
            status: status.into(),
            document: json!({
                "games": states.iter().map(|(r, s)| json!({"round": r, "state": {"state": s}}))
                    .collect::<Vec<_>>()
            })
            .to_string(),
            created_at_ms: 0,
        };
        let kinds = |events: &[OutboxEvent]| events.iter().map(|e| e.kind).collect::<Vec<_>>();
        let (s0, e0) = tournament_events(&row("registering", &[]), None, 1);
        assert!(e0.is_empty());
        let (s1, e1) = tournament_events(
            &row("running", &[(1, "playing"), (2, "pending")]),
            Some(&s0),
            2,
        );
        assert_eq!(kinds(&e1), [TOURNAMENT_STARTED]);
        let (s2, e2) = tournament_events(
            &row("running", &[(1, "done"), (2, "playing")]),
            Some(&s1),
            3,
        );
        assert_eq!(kinds(&e2), [TOURNAMENT_ROUND_FINISHED]);
        assert!(e2[0].body.contains("\"round\":1"));
        let (_, e3) =
            tournament_events(&row("finished", &[(1, "done"), (2, "done")]), Some(&s2), 4);
        assert_eq!(kinds(&e3), [TOURNAMENT_ROUND_FINISHED, TOURNAMENT_ENDED]);
    }
}
