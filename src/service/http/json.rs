//! The JSON shapes of the spectator API (`/api/games…`), built from the
//! session layer's neutral [`SessionView`] and event log. Game-specific parts
//! (the supplies, running scores) go through the API layer's per-game conversion
//! ([`crate::service::grpc::convert::state_pb`]), so nothing here knows a game's rules.
//! Tokens are never part of these shapes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;

use crate::games::{self, Seat, SeatSet, SharedState};
use crate::service::grpc::convert;
use crate::service::grpc::games::WIRE_GAMES;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::sessions::{
    ClockMode, ClockReading, Event, EventKind, SessionView, TimeControl,
};

/// One game in a listing.
#[derive(Debug, Clone, Serialize)]
pub struct GameSummary {
    /// The game's id.
    pub id: String,
    /// The game's short name (`punct`).
    pub game: &'static str,
    /// Its variant (`standard`, `basic`).
    pub variant: &'static str,
    /// Labels given at creation.
    pub labels: BTreeMap<String, String>,
    /// `in_progress` or `finished`.
    pub status: &'static str,
    /// The seats' names, in seat order (PÜNCT: `white`, `black`).
    pub seats: &'static [&'static str],
    /// Turns played.
    pub ply: u32,
    /// Whose turn it is (a seat's name; absent once over).
    pub to_move: Option<&'static str>,
    /// How it ended, once over.
    pub outcome: Option<Outcome>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// A seeded game's setup: the full commitment from the start, the seed
    /// once over, whether the creator supplied it (absent for a game
    /// without a random setup).
    pub setup: Option<SetupJson>,
}

/// What anyone may see of a seeded game's setup (each game's `docs/rules/<game>.md`):
/// enough to check the shuffle once the game is over.
#[derive(Debug, Clone, Serialize)]
pub struct SetupJson {
    /// SHA-256 of the seed, 64 lower-case hex digits, from the start.
    pub commitment: String,
    /// The seed, 64 lower-case hex digits, once the game is over (absent
    /// before: it would tell the future deal).
    pub seed: Option<String>,
    /// True when the creator supplied the seed (CreateGame with a seed, an
    /// imported record, a tournament's openings or seed base) instead of
    /// the server drawing it: whoever supplied it knows the whole setup.
    pub supplied: bool,
    /// The client entropy mixed into the shuffle (Punto), lower-case hex;
    /// empty when the game has none. Public from the start.
    pub entropy: String,
}

/// How a game ended.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The winner's seat when one seat won alone, else absent.
    pub winner: Option<&'static str>,
    /// Every winning seat (a team wins together); empty for a draw.
    pub winners: Vec<&'static str>,
    /// Whether nobody won.
    pub draw: bool,
    /// Each seat's score, in seat order, where the game keeps scores.
    pub scores: Vec<i64>,
    /// Why it ended (`CONNECTION`, `RESIGNATION`, `TIME`, …).
    pub reason: &'static str,
}

/// One move of the game's log.
#[derive(Debug, Clone, Serialize)]
pub struct PlayedMove {
    /// The ply after the move (the first move is ply 1).
    pub ply: u32,
    /// Who played it.
    pub seat: &'static str,
    /// Its canonical notation.
    pub notation: String,
    /// Its kind in the game's words (PÜNCT: place, move, jump, bridge).
    pub kind: &'static str,
    /// Its line of the latency ledger (docs/LAG.md); absent for a move
    /// never timed here (an imported game).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<MoveLatency>,
}

/// What a move was charged and credited for lag (docs/LAG.md).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MoveLatency {
    /// Its time less what was compensated: what its seat's clock was
    /// charged, milliseconds.
    pub charged_ms: u64,
    /// The lag compensation credited, milliseconds.
    pub compensated_ms: u64,
    /// Its seat's round-trip estimate then, milliseconds; absent when
    /// never measured.
    pub lag_ms: Option<u64>,
}

/// A seat's pieces not yet on the board.
#[derive(Debug, Clone, Serialize)]
pub struct Supply {
    /// Whose.
    pub seat: &'static str,
    /// Pieces left in all.
    pub total: u32,
    /// Pieces left per kind, in the game's order.
    pub pieces: Vec<SupplyCount>,
}

/// How many pieces of one kind are left.
#[derive(Debug, Clone, Serialize)]
pub struct SupplyCount {
    /// The kind (PÜNCT: a piece code such as `SM`).
    pub code: String,
    /// How many.
    pub count: u32,
}

/// A seat's deck, in games played with decks (Punto): what everybody may
/// see of it (never its order before the end).
#[derive(Debug, Clone, Serialize)]
pub struct Deck {
    /// Whose.
    pub seat: &'static str,
    /// Cards in it.
    pub size: u32,
    /// Which cards, canonical order (`R1 R1 R4 …`).
    pub cards: String,
    /// Punto with 3 players: the neutral cards the seat held when the round
    /// was dealt.
    pub neutral: String,
}

/// The clocks of a timed game at the moment the answer was made.
#[derive(Debug, Clone, Serialize)]
pub struct Clocks {
    /// The time control (`fischer`, `per_move`).
    pub mode: &'static str,
    /// Each seat's time left in milliseconds, by seat name (absent for a
    /// first-move deadline only).
    pub remaining_ms: BTreeMap<&'static str, u64>,
    /// The seat whose clock runs, if any.
    pub running: Option<&'static str>,
    /// Time left for the first move, while that deadline runs.
    pub first_move_ms: Option<u64>,
}

/// Whether each seat's player holds an open stream on the game, by seat
/// name.
pub type Presence = BTreeMap<&'static str, bool>;

/// A game with everything the spectator page shows.
#[derive(Debug, Clone, Serialize)]
pub struct GameDetail {
    /// What a listing shows.
    #[serde(flatten)]
    pub summary: GameSummary,
    /// Every move so far, in order.
    pub moves: Vec<PlayedMove>,
    /// Both seats' supplies, white first (empty for a game without).
    pub supplies: Vec<Supply>,
    /// Every seat's deck, seat order (empty for a game without decks).
    pub decks: Vec<Deck>,
    /// The finished rounds, one line each (empty for a game without
    /// rounds), e.g. `round 1: ROW, seat 2 wins, removes O8, seat 3 begins
    /// next`.
    pub rounds: Vec<String>,
    /// Each seat's score now, in seat order, for a game that keeps a score
    /// while it is played (Dots: the enemy dots each holds); empty otherwise.
    pub scores: Vec<i64>,
    /// The clocks, absent for an untimed game.
    pub clock: Option<Clocks>,
    /// The seats agreeing to a standing draw offer.
    pub draw_offers: Vec<&'static str>,
    /// Players connected now.
    pub presence: Presence,
    /// The head of the move chain after the last move, 64 hex digits
    /// (docs/RECEIPTS.md).
    pub chain_head: String,
    /// A finished game's signed receipt (docs/RECEIPTS.md); absent before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<serde_json::Value>,
}

/// A page of a listing.
#[derive(Debug, Clone, Serialize)]
pub struct GameList {
    /// The games, oldest first.
    pub games: Vec<GameSummary>,
    /// Pass as `page_token` for the next page; empty on the last.
    pub next_page_token: String,
}

/// What the game calls `seat`.
fn name(names: &'static [&'static str], seat: Seat) -> &'static str {
    names.get(seat.index()).copied().unwrap_or("?")
}

fn names(names: &'static [&'static str], seats: SeatSet) -> Vec<&'static str> {
    seats.iter().map(|s| name(names, s)).collect()
}

fn outcome(seats: &'static [&'static str], v: &games::Outcome) -> Outcome {
    Outcome {
        winner: v.winner().map(|s| name(seats, s)),
        winners: names(seats, v.winners),
        draw: v.is_draw(),
        scores: v.scores.clone(),
        reason: v.reason,
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The listing entry of a view.
pub fn summary(v: &SessionView) -> GameSummary {
    GameSummary {
        id: v.id.to_string(),
        game: v.rules.game_name(),
        variant: v.rules.variant_name(),
        labels: v.labels.clone(),
        status: if v.outcome.is_some() {
            "finished"
        } else {
            "in_progress"
        },
        seats: v.seats,
        ply: v.ply,
        to_move: v.to_move.map(|s| name(v.seats, s)),
        outcome: v.outcome.as_ref().map(|o| outcome(v.seats, o)),
        created_unix_ms: v.created_at.duration_since(UNIX_EPOCH).map_or(0, ms),
        setup: v.setup.as_ref().map(|s| SetupJson {
            commitment: crate::games::hex(&s.commitment),
            seed: s.seed.as_ref().map(|seed| crate::games::hex(seed)),
            supplied: s.supplied,
            entropy: entropy(v),
        }),
    }
}

/// The public client entropy of a game's rules, as hex (read from the API
/// layer's conversion of the rules, so nothing here knows a game).
fn entropy(v: &SessionView) -> String {
    let Some(rules) = convert::game_rules_pb(&v.rules).game else {
        return String::new();
    };
    WIRE_GAMES
        .iter()
        .find_map(|g| g.entropy(&rules))
        .map(crate::games::hex)
        .unwrap_or_default()
}

/// What a game state shows beside the board (supplies, decks and rounds,
/// running scores), read from the API layer's conversion of the game's own
/// state message (converted once per page).
#[derive(Default)]
struct Extras {
    supplies: Vec<Supply>,
    decks: Vec<Deck>,
    rounds: Vec<String>,
    scores: Vec<i64>,
}

fn extras(seats: &'static [&'static str], snapshot: Option<&SharedState>) -> Extras {
    let Some(state) = snapshot.and_then(|s| convert::state_pb(s).game) else {
        return Extras::default();
    };
    let Some(sidelines) = WIRE_GAMES.iter().find_map(|g| g.sidelines(&state)) else {
        return Extras::default();
    };
    Extras {
        supplies: sidelines
            .supplies
            .into_iter()
            .zip(seats)
            .map(|((total, pieces), seat)| Supply {
                seat,
                total,
                pieces: pieces
                    .into_iter()
                    .map(|(code, count)| SupplyCount { code, count })
                    .collect(),
            })
            .collect(),
        decks: sidelines
            .decks
            .into_iter()
            .map(|d| Deck {
                seat: seats
                    .get((d.seat as usize).wrapping_sub(1))
                    .copied()
                    .unwrap_or("?"),
                size: d.size,
                cards: d.cards,
                neutral: d.neutral,
            })
            .collect(),
        rounds: sidelines.rounds,
        scores: sidelines.scores,
    }
}

fn clocks(
    seats: &'static [&'static str],
    control: &TimeControl,
    reading: &ClockReading,
) -> Option<Clocks> {
    let mode = match control.mode {
        ClockMode::Untimed if control.first_move.is_none() => return None,
        ClockMode::Untimed => "first_move_only",
        ClockMode::Fischer { .. } => "fischer",
        ClockMode::PerMove { .. } => "per_move",
    };
    Some(Clocks {
        mode,
        remaining_ms: seats
            .iter()
            .copied()
            .zip(reading.remaining.as_deref().unwrap_or_default())
            .map(|(seat, left)| (seat, ms(*left)))
            .collect(),
        running: reading.running.map(|s| name(seats, s)),
        first_move_ms: reading.first_move_left.map(ms),
    })
}

/// The full picture of a game from its view and its log.
pub fn detail(v: &SessionView, log: &[Arc<Event>]) -> GameDetail {
    let moves = log
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MoveApplied { report } => Some(PlayedMove {
                ply: report.ply,
                seat: name(v.seats, report.seat),
                notation: report.detail.notation.clone(),
                kind: report.detail.kind,
                latency: None,
            }),
            EventKind::GameOver { .. } => None,
        })
        .collect();
    let Extras {
        supplies,
        decks,
        rounds,
        scores,
    } = extras(v.seats, v.snapshot.as_ref());
    GameDetail {
        summary: summary(v),
        moves,
        supplies,
        decks,
        rounds,
        scores,
        clock: clocks(v.seats, &v.time_control, &v.clock),
        draw_offers: names(v.seats, v.draw_offers),
        presence: v
            .seats
            .iter()
            .copied()
            .zip(&v.presence)
            .map(|(seat, p)| (seat, p.connected))
            .collect(),
        chain_head: crate::games::hex(&v.chain),
        receipt: None,
    }
}

/// The games the server offers (`/api/game-kinds`): ListGameKinds' answer.
#[derive(Debug, Clone, Serialize)]
pub struct GameKinds {
    /// Every game, in the server's order.
    pub kinds: Vec<GameKind>,
}

/// One game the server offers.
#[derive(Debug, Clone, Serialize)]
pub struct GameKind {
    /// The game's name (`punct`), as in `GameRules` and records.
    pub name: String,
    /// What the game is.
    pub description: String,
    /// The seats of a game under the default rules, in seat order.
    pub default_seats: Vec<String>,
    /// Its rule options, in field order.
    pub options: Vec<RuleOption>,
}

/// One rule option: a field of the game's `RuleOptions` message.
#[derive(Debug, Clone, Serialize)]
pub struct RuleOption {
    /// The field's name (`max_plies`).
    pub name: String,
    /// Its type (`uint32`, `punct.v1.Variant`).
    #[serde(rename = "type")]
    pub value_type: String,
    /// For an enum: its values' names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// The default, as text.
    pub default: String,
    /// What the option means, from the contract.
    pub description: String,
}

/// The JSON of ListGameKinds' kinds.
pub fn game_kinds(kinds: &[pb::GameKind]) -> GameKinds {
    GameKinds {
        kinds: kinds
            .iter()
            .map(|k| GameKind {
                name: k.name.clone(),
                description: k.description.clone(),
                default_seats: k.default_seats.clone(),
                options: k
                    .options
                    .iter()
                    .map(|o| RuleOption {
                        name: o.name.clone(),
                        value_type: o.value_type.clone(),
                        values: o.values.clone(),
                        default: o.default_value.clone(),
                        description: o.description.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}
