//! The games on the wire: one [`WireGame`] per game, listed once in
//! [`WIRE_GAMES`]. Every place that converts a game's own messages (the
//! `oneof game` members of `referee.v1`) goes through this list: the gRPC
//! conversion ([`super::convert`]), the game kinds ([`super::kinds`]), the
//! HTTP JSON API and the tools. A game's conversions live in its one file
//! here (`punct.rs`, `dots.rs`, `punto.rs`); nothing else matches on a
//! game's member.
//!
//! Adding a game: its engine folder (`src/games/<game>/`, with its line in
//! [`crate::games::GAMES`]), its proto folder (`proto/<game>/`, with a member
//! in each `oneof game` of `referee.v1`), its file here implementing
//! [`WireGame`], and its line in [`WIRE_GAMES`].

use super::pb::referee::v1 as pb;
use crate::games::{GameRules, MoveDetail, MoveInput, Snapshot, Verdict};
use crate::service::sessions::SessionError;

pub mod dots;
pub mod punct;
pub mod punto;

/// Every game on the wire, in the order of [`crate::games::GAMES`].
pub static WIRE_GAMES: &[&dyn WireGame] = &[&punct::PunctWire, &dots::DotsWire, &punto::PuntoWire];

/// The wire game named `name` (its member of `GameRules`, its record's
/// `game:` header).
pub fn wire_game(name: &str) -> Option<&'static dyn WireGame> {
    WIRE_GAMES.iter().copied().find(|g| g.name() == name)
}

/// The wire game whose rules `rules` are.
pub fn wire_game_of(rules: &pb::game_rules::Game) -> Option<&'static dyn WireGame> {
    WIRE_GAMES
        .iter()
        .copied()
        .find(|g| g.rules(rules, Part::Request).is_some())
}

/// Where in a request a game's rules or moves are, so that a refusal names
/// the field the caller set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `CreateGameRequest.rules`, `SubmitMoveRequest.move`,
    /// `ValidateMoveRequest.move`.
    Request,
    /// `ValidateMoveRequest.moves`: its rules and its moves.
    History,
    /// `CreateTournamentRequest.spec`: its rules and its openings' moves.
    Tournament,
}

impl Part {
    /// The path of the `GameRules` message itself.
    pub fn rules(self) -> &'static str {
        match self {
            Part::Request => "rules",
            Part::History => "moves.rules",
            Part::Tournament => "spec.rules",
        }
    }
}

/// The rules of `CreateGameRequest` (and of the tools' `CreateGame`).
pub const RULE_FIELDS: Part = Part::Request;
/// The rules of `ValidateMoveRequest.moves`.
pub const HISTORY_RULE_FIELDS: Part = Part::History;
/// The move of `SubmitMoveRequest` and `ValidateMoveRequest`.
pub const MOVE_FIELDS: Part = Part::Request;
/// The moves of `ValidateMoveRequest.moves`.
pub const HISTORY_FIELDS: Part = Part::History;

/// What a game's state shows beside its board, game-neutral, for the HTTP
/// JSON API: supplies, decks and rounds, running scores (each empty in a
/// game without them).
#[derive(Debug, Default)]
pub struct Sidelines {
    /// Per seat, in seat order: the pieces left to place (total and per
    /// piece code).
    pub supplies: Vec<(u32, Vec<(String, u32)>)>,
    /// The seats' decks as everybody may see them.
    pub decks: Vec<DeckText>,
    /// One line per finished round.
    pub rounds: Vec<String>,
    /// The running scores, by seat.
    pub scores: Vec<i64>,
}

/// A seat's deck in text: what everybody may see of it.
#[derive(Debug)]
pub struct DeckText {
    /// Its seat's number (from 1).
    pub seat: u32,
    /// How many cards it holds.
    pub size: u32,
    /// Its cards, space-separated.
    pub cards: String,
    /// The neutral cards it held, space-separated (empty in most tables).
    pub neutral: String,
}

/// One game's conversions between its members of the `referee.v1` oneofs
/// and the neutral types of [`crate::games`]. Each method answers `None`
/// for another game's value.
pub trait WireGame: Sync {
    /// The game's name: its member of every `oneof game`, its
    /// [`crate::games::GAMES`] entry, its record's `game:` header.
    fn name(&self) -> &'static str;

    /// The game's name as people write it (`PÜNCT`).
    fn title(&self) -> &'static str;

    /// Its rules from the wire, defaults filled in, checked (errors name the
    /// fields of `part`); `None` if `rules` is another game's.
    fn rules(
        &self,
        rules: &pb::game_rules::Game,
        part: Part,
    ) -> Option<Result<GameRules, SessionError>>;

    /// Its rules to the wire, every option explicit.
    fn rules_pb(&self, rules: &GameRules) -> Option<pb::game_rules::Game>;

    /// A move from the wire, checked for syntax (errors name the fields of
    /// `part`).
    fn move_input(
        &self,
        m: &pb::r#move::Game,
        part: Part,
    ) -> Option<Result<MoveInput, SessionError>>;

    /// A played move to the wire.
    fn move_pb(&self, detail: &MoveDetail) -> Option<pb::r#move::Game>;

    /// A move given only in notation, as the wire carries it (the tools
    /// send it so; the referee reads and judges it).
    fn notation_pb(&self, notation: &str) -> pb::r#move::Game;

    /// The game's details of an outcome.
    fn outcome_detail_pb(&self, verdict: &Verdict) -> Option<pb::outcome::Detail>;

    /// A state to the wire.
    fn state_pb(&self, snapshot: &Snapshot) -> Option<pb::game_state::Game>;

    /// Strips `state` (if this game's) to what `SNAPSHOT_VIEW_COMPACT`
    /// sends: without its rules and the forms derived from the rest.
    fn compact_state(&self, state: &mut pb::game_state::Game);

    /// The end of a round a played move brought, with the next deal, in a
    /// game played in rounds.
    fn round_over_pb(&self, _detail: &MoveDetail) -> Option<pb::round_over::Game> {
        None
    }

    /// The public client entropy of its rules, in a game whose rules carry
    /// one.
    fn entropy<'a>(&self, _rules: &'a pb::game_rules::Game) -> Option<&'a [u8]> {
        None
    }

    /// What its state shows beside the board; `None` for another game's.
    fn sidelines(&self, state: &pb::game_state::Game) -> Option<Sidelines>;

    /// The notation of a move the server sent (canonical).
    fn notation_of<'a>(&self, m: &'a pb::r#move::Game) -> Option<&'a str>;

    /// A played move as a person reads it (by default its notation).
    fn played_text(&self, m: &pb::r#move::Game) -> Option<String> {
        self.notation_of(m).map(str::to_string)
    }

    /// The summary line of the round a played move ended, in a game played
    /// in rounds.
    fn round_ended_by<'a>(&self, _m: &'a pb::r#move::Game) -> Option<&'a str> {
        None
    }

    /// The summary line of a round-over notice, in a game played in
    /// rounds.
    fn round_over_summary<'a>(&self, _round: &'a pb::round_over::Game) -> Option<&'a str> {
        None
    }

    /// The text picture of a state the server sent.
    fn picture_of<'a>(&self, state: &'a pb::game_state::Game) -> Option<&'a str>;

    /// The card (or piece) the mover is given to place, in a game that
    /// deals one.
    fn revealed<'a>(&self, _state: &'a pb::game_state::Game) -> Option<&'a str> {
        None
    }
}

/// The games' titles as a sentence lists them (`PÜNCT, Dots and Punto`).
pub fn titles() -> String {
    let titles: Vec<&str> = WIRE_GAMES.iter().map(|g| g.title()).collect();
    match titles.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The names of the games, as a request's choices under `prefix`
/// (`rules.punct, rules.dots or rules.punto`).
pub fn choices(prefix: &str) -> String {
    let names: Vec<String> = WIRE_GAMES
        .iter()
        .map(|g| format!("{prefix}.{}", g.name()))
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}
