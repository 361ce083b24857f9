//! Punto conversions between `punto.v1` messages and the engine's types.
//! Input is checked here for syntax (the notation `X,Y`, both forms of a
//! move agreeing, the rule options of docs/rules/punto.md §3.1, §9 and §10.2), so the
//! session layer only ever sees well-formed moves; the rules of §5.3 are the
//! engine's.
//!
//! Nothing converted here carries a deck's order before the match is over
//! (docs/rules/punto.md §11): the engine's payloads never hold it, and every viewer is
//! shown the same.

use super::{DeckText, Part, Sidelines, WireGame};
use crate::games::GameKind;
use crate::games::punto::bot::View;
use crate::games::punto::referee::{DeckView, PuntoMoveInfo, PuntoMoveInput, PuntoState};
use crate::games::punto::{
    self, Card, Cell, Colour, Configuration, DeadlockCause, EndReason, OptionsError, Revealed,
    RoundKind, RoundOutcome, Row, RuleOptions, Side, Table, Team, TieBreak, notation, render,
};
use crate::games::{GameRules, MoveDetail, MoveInput, Opaque, Outcome, Seat, SharedState, hex};
use crate::service::grpc::pb::punto::v1 as pb;
use crate::service::grpc::pb::referee::v1 as rpb;
use crate::service::sessions::SessionError;

fn bad(field: &'static str, description: impl Into<String>) -> SessionError {
    SessionError::InvalidArgument {
        field,
        description: description.into(),
    }
}

/// Field paths of a Punto move, for error details.
pub struct MoveFields {
    /// `….punto.cell`
    pub cell: &'static str,
    /// `….punto.notation`
    pub notation: &'static str,
    /// The move itself.
    pub whole: &'static str,
}

/// Fields of `SubmitMoveRequest.move` / `ValidateMoveRequest.move`.
pub const MOVE_FIELDS: MoveFields = MoveFields {
    cell: "move.punto.cell",
    notation: "move.punto.notation",
    whole: "move.punto",
};

/// Fields of `ValidateMoveRequest.moves.moves[]`.
pub const HISTORY_FIELDS: MoveFields = MoveFields {
    cell: "moves.moves.punto.cell",
    notation: "moves.moves.punto.notation",
    whole: "moves.moves.punto",
};

/// The Punto move paths of `part` (a tournament's openings name the
/// request's).
fn move_fields(part: Part) -> &'static MoveFields {
    match part {
        Part::History => &HISTORY_FIELDS,
        Part::Request | Part::Tournament => &MOVE_FIELDS,
    }
}

/// A move as input: the cell, given structured or as notation (both must
/// then agree). Malformed notation is refused here (INVALID_ARGUMENT, as
/// every game's syntax is); the rules of docs/rules/punto.md §5.3 are the engine's.
pub fn move_input(m: &pb::Move, f: &MoveFields) -> Result<PuntoMoveInput, SessionError> {
    let structured = m.cell.as_ref().map(|c| Cell::new(c.x, c.y));
    // Only an absent notation is no notation: one of spaces or tabs is
    // given and malformed, refused as any other malformed text.
    let notated = if m.notation.is_empty() {
        None
    } else {
        Some(
            notation::parse_cell(&m.notation)
                .map_err(|e| bad(f.notation, format!("{e} (MALFORMED)")))?,
        )
    };
    match (structured, notated) {
        (Some(a), Some(b)) if a != b => Err(bad(
            f.whole,
            format!("cell {a} and notation {b} name different cells: give one, or the same"),
        )),
        (Some(cell), _) | (None, Some(cell)) => Ok(PuntoMoveInput::Cell(cell)),
        (None, None) => Err(bad(f.whole, "give the move as cell {x, y} or notation X,Y")),
    }
}

/// Field paths of Punto's rule options, for error details.
pub struct RuleFields {
    /// `….punto.players`
    pub players: &'static str,
    /// `….punto.team`
    pub team: &'static str,
    /// `….punto.rounds_to_win`
    pub rounds_to_win: &'static str,
    /// `….punto.max_rounds`
    pub max_rounds: &'static str,
    /// `….punto.entropy`
    pub entropy: &'static str,
}

/// Fields of `CreateGameRequest.rules.punto`.
pub const RULE_FIELDS: RuleFields = RuleFields {
    players: "rules.punto.players",
    team: "rules.punto.team",
    rounds_to_win: "rules.punto.rounds_to_win",
    max_rounds: "rules.punto.max_rounds",
    entropy: "rules.punto.entropy",
};

/// Fields of `ValidateMoveRequest.moves.rules.punto`.
pub const HISTORY_RULE_FIELDS: RuleFields = RuleFields {
    players: "moves.rules.punto.players",
    team: "moves.rules.punto.team",
    rounds_to_win: "moves.rules.punto.rounds_to_win",
    max_rounds: "moves.rules.punto.max_rounds",
    entropy: "moves.rules.punto.entropy",
};

/// The Punto rule paths of `part` (a tournament's spec names the
/// request's).
fn rule_fields(part: Part) -> &'static RuleFields {
    match part {
        Part::History => &HISTORY_RULE_FIELDS,
        Part::Request | Part::Tournament => &RULE_FIELDS,
    }
}

impl RuleFields {
    /// The path of the option `e` refuses.
    fn of(&self, e: &OptionsError) -> &'static str {
        match e {
            OptionsError::Players(_) => self.players,
            OptionsError::TeamNeedsFour(_) => self.team,
            OptionsError::RoundsToWin(_) => self.rounds_to_win,
            OptionsError::MaxRounds(_) => self.max_rounds,
            OptionsError::Entropy(_) => self.entropy,
        }
    }
}

/// Rule options from the wire, defaults filled in (0 players: 2; no
/// `rounds_to_win`: 2); a refused option names its field and reason.
pub fn rule_options(o: &pb::RuleOptions, f: &RuleFields) -> Result<RuleOptions, SessionError> {
    let players = if o.players == 0 { 2 } else { o.players };
    RuleOptions::new(
        players,
        o.team,
        o.rounds_to_win
            .unwrap_or(RuleOptions::DEFAULT_ROUNDS_TO_WIN),
        o.max_rounds,
        &o.entropy,
    )
    .map_err(|e| bad(f.of(&e), format!("{e} ({})", e.reason())))
}

/// Rule options to the wire, every field explicit.
pub fn rule_options_pb(o: &RuleOptions) -> pb::RuleOptions {
    pb::RuleOptions {
        players: o.players() as u32,
        team: o.team(),
        rounds_to_win: Some(o.rounds_to_win()),
        max_rounds: o.max_rounds(),
        entropy: o.entropy().to_vec(),
    }
}

/// A colour on the wire.
pub fn colour_pb(c: Colour) -> i32 {
    (match c {
        Colour::Red => pb::Colour::Red,
        Colour::Orange => pb::Colour::Orange,
        Colour::Blue => pb::Colour::Blue,
        Colour::Green => pb::Colour::Green,
    }) as i32
}

/// A card on the wire.
pub fn card_pb(c: Card) -> pb::Card {
    pb::Card {
        colour: colour_pb(c.colour()),
        value: u32::from(c.value()),
        text: c.to_string(),
    }
}

fn cards_pb(cards: impl IntoIterator<Item = Card>) -> Vec<pb::Card> {
    cards.into_iter().map(card_pb).collect()
}

/// A cell on the wire.
pub fn cell_pb(c: Cell) -> pb::Cell {
    pb::Cell { x: c.x, y: c.y }
}

/// A side on the wire: a seat, or a team with its two seats (docs/rules/punto.md §3.1:
/// team 1 is seats 1 and 3, team 2 seats 2 and 4).
pub fn side_pb(side: Side) -> pb::Side {
    let (seat, team, seats) = match side {
        Side::Seat(s) => (s.number(), 0, vec![s.number()]),
        Side::Team(Team::One) => (0, 1, vec![1, 3]),
        Side::Team(Team::Two) => (0, 2, vec![2, 4]),
    };
    pb::Side {
        seat,
        team,
        seats,
        name: side.to_string(),
    }
}

fn seat_pb(seat: Option<Seat>) -> u32 {
    seat.map_or(0, Seat::number)
}

fn row_pb(row: &Row) -> pb::Row {
    pb::Row {
        colour: colour_pb(row.colour),
        cells: row.cells().map(cell_pb).collect(),
        total: row.total,
    }
}

/// A finished round on the wire (docs/rules/punto.md §8.4).
pub fn round_result_pb(r: &RoundOutcome) -> pb::RoundResult {
    pb::RoundResult {
        round: r.round,
        kind: (match r.kind {
            RoundKind::Row => pb::RoundKind::Row,
            RoundKind::Deadlock => pb::RoundKind::Deadlock,
        }) as i32,
        winner: r.winner.map(side_pb),
        removed: r.removed.map(card_pb),
        rows: r.rows.iter().map(row_pb).collect(),
        placed_by: seat_pb(r.placed_by),
        deadlock: r.deadlock.as_ref().map(|d| pb::Deadlock {
            stuck: d.stuck.number(),
            revealed: d.revealed.map(card_pb),
            cause: (match d.cause {
                DeadlockCause::DeckEmpty => pb::DeadlockCause::DeckEmpty,
                DeadlockCause::NoPlacement => pb::DeadlockCause::NoPlacement,
            }) as i32,
            sides: d
                .sides
                .iter()
                .map(|s| pb::SideRows {
                    side: Some(side_pb(s.side)),
                    count: s.count,
                    totals: s.totals.clone(),
                })
                .collect(),
            decided_by: (match d.decided_by {
                None => pb::TieBreak::Unspecified,
                Some(TieBreak::Count) => pb::TieBreak::Count,
                Some(TieBreak::Total) => pb::TieBreak::Total,
            }) as i32,
        }),
        next_first: seat_pb(r.next_first),
        summary: render::summary(r),
    }
}

fn revealed_pb(r: &Revealed) -> pb::Revealed {
    pb::Revealed {
        round: r.round,
        seat: r.seat.number(),
        card: Some(card_pb(r.card)),
    }
}

/// A deck on the wire: size and contents; the order only once over.
pub fn deck_pb(d: &DeckView) -> pb::Deck {
    pb::Deck {
        seat: d.seat.number(),
        size: d.size as u32,
        contents: cards_pb(d.contents.iter()),
        neutral: d
            .neutral
            .as_ref()
            .map(|n| cards_pb(n.iter()))
            .unwrap_or_default(),
        order: d
            .order
            .as_deref()
            .map(|o| cards_pb(o.iter().copied()))
            .unwrap_or_default(),
    }
}

/// A table on the wire: every stack, bottom card first.
pub fn table_pb(t: &Table) -> pb::Table {
    pb::Table {
        stacks: t
            .occupied()
            .map(|(cell, stack)| pb::Stack {
                cell: Some(cell_pb(cell)),
                cards: cards_pb(stack.cards().iter().copied()),
            })
            .collect(),
        bounds: t.bounds().map(|b| pb::Box {
            min_x: b.min_x,
            max_x: b.max_x,
            min_y: b.min_y,
            max_y: b.max_y,
        }),
    }
}

/// A played or listed move on the wire.
pub fn move_pb(info: &PuntoMoveInfo) -> pb::Move {
    pb::Move {
        cell: Some(cell_pb(info.cell)),
        notation: info.cell.to_string(),
        seat: info.seat.number(),
        round: info.round,
        card: Some(card_pb(info.card)),
        covered: info.covered.map(card_pb),
        kind: (if info.covered.is_some() {
            pb::MoveKind::Cover
        } else {
            pb::MoveKind::Place
        }) as i32,
        played: info.played,
        round_result: info.round_result.as_ref().map(round_result_pb),
        next: info.next.as_ref().map(revealed_pb),
        deal: info.deal.iter().map(deck_pb).collect(),
    }
}

/// Punto's details of a board end.
pub fn outcome_detail_pb(o: &punto::Outcome) -> pb::OutcomeDetail {
    pb::OutcomeDetail {
        winner: o.winner.map(side_pb),
        reason: (match o.reason {
            EndReason::RoundsWon => pb::MatchEnd::RoundsWon,
            EndReason::RoundLimit => pb::MatchEnd::RoundLimit,
        }) as i32,
        round_wins: o.wins.clone(),
    }
}

fn sides_pb(configuration: Configuration, wins: &[u32]) -> Vec<pb::SideState> {
    (0..configuration.sides())
        .map(|side| pb::SideState {
            side: Some(side_pb(configuration.side(side))),
            colours: configuration
                .colours(side)
                .iter()
                .map(|&c| colour_pb(c))
                .collect(),
            round_wins: wins.get(side).copied().unwrap_or(0),
        })
        .collect()
}

/// A state as `SNAPSHOT_VIEW_COMPACT` sends it: without its rules (the
/// game's, sent in full) and the forms derived from the rest.
pub fn compact_state(state: &mut pb::GameState) {
    state.rules = None;
    state.picture.clear();
}

/// The Punto state of a match.
pub fn state_pb(s: &PuntoState) -> pb::GameState {
    let configuration = s.options.configuration();
    pb::GameState {
        rules: Some(rule_options_pb(&s.options)),
        commitment: hex(&s.commitment),
        seed: s.seed.map(|seed| hex(&seed)).unwrap_or_default(),
        ply: s.ply,
        round: s.round,
        first_seat: s.first.number(),
        table: Some(table_pb(&s.table)),
        mover: seat_pb(s.mover),
        revealed: s.revealed.map(card_pb),
        decks: s.decks.iter().map(deck_pb).collect(),
        results: s.results.iter().map(round_result_pb).collect(),
        last_table: s.last_table.as_ref().map(table_pb),
        sides: sides_pb(configuration, &s.wins),
        removed: cards_pb(s.removed.iter().copied()),
        row_length: u32::from(configuration.row_length()),
        neutral: configuration
            .neutral()
            .map_or(pb::Colour::Unspecified as i32, colour_pb),
        board_outcome: s.outcome.as_ref().map(outcome_detail_pb),
        ending: s.ending.unwrap_or_default().to_string(),
        picture: render::ascii(s),
    }
}

/// Punto's options of `rules`, if the rules are Punto's.
pub fn rules_pb(rules: &GameRules) -> Option<pb::RuleOptions> {
    rules.get::<RuleOptions>().map(rule_options_pb)
}

/// A Punto move on the wire, if `detail` is one.
pub fn detail_pb(detail: &MoveDetail) -> Option<pb::Move> {
    detail.get::<PuntoMoveInfo>().map(move_pb)
}

/// Punto's details of an outcome, if it has them (a board end).
pub fn game_outcome_detail_pb(outcome: &Outcome) -> Option<pb::OutcomeDetail> {
    outcome.get::<punto::Outcome>().map(outcome_detail_pb)
}

/// The Punto state on the wire, if `snapshot` is one.
pub fn snapshot_pb(snapshot: &SharedState) -> Option<pb::GameState> {
    snapshot.get::<PuntoState>().map(state_pb)
}

/// The round a played move ended, with the next round's deal, if `detail`
/// is a Punto move that ended one.
pub fn round_over_pb(detail: &MoveDetail) -> Option<pb::RoundOver> {
    let info = detail.get::<PuntoMoveInfo>()?;
    let result = info.round_result.as_ref()?;
    // The next round's first card, if a round was dealt.
    let next = info
        .next
        .as_ref()
        .filter(|n| n.round > result.round)
        .map(revealed_pb);
    Some(pb::RoundOver {
        result: Some(round_result_pb(result)),
        next_round: next.as_ref().map_or(0, |n| n.round),
        next,
        deal: info.deal.iter().map(deck_pb).collect(),
    })
}

/// What the greedy bot reads of a seat's state ([`View`]), if it is one
/// with a mover.
fn bot_view(state: &pb::GameState) -> Result<View, String> {
    let card_of = |card: Option<&pb::Card>| card?.text.parse::<Card>().ok();
    let rules = state.rules.clone().unwrap_or_default();
    let configuration = Configuration::of(rules.players, rules.team).map_err(|e| e.to_string())?;
    let mover = Seat::from_number(state.mover)
        .filter(|s| s.index() < configuration.seats())
        .ok_or("no seat to move")?;
    let card = card_of(state.revealed.as_ref()).ok_or("no revealed card")?;
    let mut table = Table::new();
    for stack in state.table.iter().flat_map(|t| &t.stacks) {
        let at = stack.cell.unwrap_or_default();
        let cell = Cell::new(at.x, at.y);
        for wire in &stack.cards {
            let card = card_of(Some(wire)).ok_or("a card on the table is unreadable")?;
            if !table.put(cell, card) {
                return Err(format!("a card off the table at {cell}"));
            }
        }
    }
    let next = mover.next(configuration.seats()).number();
    let next_deck = state
        .decks
        .iter()
        .filter(|d| d.seat == next)
        .flat_map(|d| &d.contents)
        .filter_map(|c| card_of(Some(c)))
        .collect();
    Ok(View {
        configuration,
        mover,
        card,
        table,
        next_deck,
    })
}

/// Punto on the wire.
pub struct PuntoWire;

impl WireGame for PuntoWire {
    fn kind(&self) -> &'static dyn GameKind {
        &crate::games::punto::kind::Punto
    }

    fn title(&self) -> &'static str {
        "Punto"
    }

    fn rules(
        &self,
        rules: &rpb::game_rules::Game,
        part: Part,
    ) -> Option<Result<GameRules, SessionError>> {
        let rpb::game_rules::Game::Punto(o) = rules else {
            return None;
        };
        Some(rule_options(o, rule_fields(part)).map(GameRules::new))
    }

    fn rules_pb(&self, rules: &GameRules) -> Option<rpb::game_rules::Game> {
        rules_pb(rules).map(rpb::game_rules::Game::Punto)
    }

    fn move_input(
        &self,
        m: &rpb::r#move::Game,
        part: Part,
    ) -> Option<Result<MoveInput, SessionError>> {
        let rpb::r#move::Game::Punto(p) = m else {
            return None;
        };
        Some(move_input(p, move_fields(part)).map(MoveInput::new))
    }

    fn move_pb(&self, detail: &MoveDetail) -> Option<rpb::r#move::Game> {
        detail_pb(detail).map(|m| rpb::r#move::Game::Punto(Box::new(m)))
    }

    fn notation_pb(&self, notation: &str) -> rpb::r#move::Game {
        rpb::r#move::Game::Punto(Box::new(pb::Move {
            notation: notation.to_string(),
            ..Default::default()
        }))
    }

    fn outcome_detail_pb(&self, outcome: &Outcome) -> Option<rpb::outcome::Detail> {
        game_outcome_detail_pb(outcome).map(rpb::outcome::Detail::Punto)
    }

    fn state_pb(&self, snapshot: &SharedState) -> Option<rpb::game_state::Game> {
        snapshot_pb(snapshot).map(rpb::game_state::Game::Punto)
    }

    fn compact_state(&self, state: &mut rpb::game_state::Game) {
        if let rpb::game_state::Game::Punto(s) = state {
            compact_state(s);
        }
    }

    fn round_over_pb(&self, detail: &MoveDetail) -> Option<rpb::round_over::Game> {
        round_over_pb(detail).map(rpb::round_over::Game::Punto)
    }

    fn entropy<'a>(&self, rules: &'a rpb::game_rules::Game) -> Option<&'a [u8]> {
        match rules {
            rpb::game_rules::Game::Punto(p) => Some(&p.entropy),
            _ => None,
        }
    }

    /// The decks as everybody may see them, and one line per finished
    /// round.
    fn notation_of<'a>(&self, m: &'a rpb::r#move::Game) -> Option<&'a str> {
        match m {
            rpb::r#move::Game::Punto(m) => Some(&m.notation),
            _ => None,
        }
    }

    fn picture_of<'a>(&self, state: &'a rpb::game_state::Game) -> Option<&'a str> {
        match state {
            rpb::game_state::Game::Punto(s) => Some(&s.picture),
            _ => None,
        }
    }

    /// Its notation and the card placed (`R7 on 1,0`).
    fn played_text(&self, m: &rpb::r#move::Game) -> Option<String> {
        let rpb::r#move::Game::Punto(p) = m else {
            return None;
        };
        Some(match &p.card {
            Some(card) => format!("{} on {}", card.text, p.notation),
            None => p.notation.clone(),
        })
    }

    /// `round 1: ROW, seat 2 wins, removes O8, seat 3 begins next`.
    fn round_ended_by<'a>(&self, m: &'a rpb::r#move::Game) -> Option<&'a str> {
        match m {
            rpb::r#move::Game::Punto(p) => p.round_result.as_ref().map(|r| r.summary.as_str()),
            _ => None,
        }
    }

    fn round_over_summary<'a>(&self, round: &'a rpb::round_over::Game) -> Option<&'a str> {
        let rpb::round_over::Game::Punto(p) = round;
        p.result.as_ref().map(|r| r.summary.as_str())
    }

    /// The card the mover is to place (`R7`).
    fn revealed<'a>(&self, state: &'a rpb::game_state::Game) -> Option<&'a str> {
        match state {
            rpb::game_state::Game::Punto(p) => p.revealed.as_ref().map(|c| c.text.as_str()),
            _ => None,
        }
    }

    fn bot_view(&self, state: &rpb::game_state::Game) -> Option<Result<Opaque, String>> {
        match state {
            rpb::game_state::Game::Punto(p) => Some(bot_view(p).map(Opaque::new)),
            _ => None,
        }
    }

    fn sidelines(&self, state: &rpb::game_state::Game) -> Option<Sidelines> {
        let rpb::game_state::Game::Punto(p) = state else {
            return None;
        };
        let text = |cards: &[pb::Card]| {
            cards
                .iter()
                .map(|c| c.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        Some(Sidelines {
            decks: p
                .decks
                .iter()
                .map(|d| DeckText {
                    seat: d.seat,
                    size: d.size,
                    cards: text(&d.contents),
                    neutral: text(&d.neutral),
                })
                .collect(),
            rounds: p.results.iter().map(|r| r.summary.clone()).collect(),
            ..Sidelines::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::punto::Colour::{Blue, Green, Orange, Red};

    fn card(colour: Colour, value: u8) -> Card {
        Card::new(colour, value).unwrap()
    }

    /// A seat's state as its `GetGame` gives it reads back as the greedy
    /// bot's view; another game's state is not Punto's to read.
    #[test]
    fn a_seats_state_reads_back_as_the_bots_view() {
        let mut table = Table::new();
        assert!(table.put(Cell::new(0, 0), card(Red, 5)));
        assert!(table.put(Cell::new(0, 0), card(Blue, 7)));
        let view = View {
            configuration: Configuration::ThreePlayers,
            mover: Seat::FIRST,
            card: card(Red, 2),
            table,
            next_deck: vec![card(Orange, 3), card(Orange, 3), card(Green, 1)],
        };
        let state = pb::GameState {
            rules: Some(pb::RuleOptions {
                players: 3,
                ..Default::default()
            }),
            mover: 1,
            revealed: Some(card_pb(view.card)),
            table: Some(table_pb(&view.table)),
            decks: vec![pb::Deck {
                seat: 2,
                size: 3,
                contents: view.next_deck.iter().copied().map(card_pb).collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let wire = rpb::game_state::Game::Punto(state);
        let read = PuntoWire.bot_view(&wire).unwrap().unwrap();
        let read = read.get::<View>().unwrap();
        assert_eq!(read.table, view.table);
        assert_eq!((read.mover, read.card), (view.mover, view.card));
        assert_eq!(read.next_deck, view.next_deck);
        let empty = rpb::game_state::Game::Punto(pb::GameState::default());
        assert!(PuntoWire.bot_view(&empty).unwrap().is_err());
        let dots = rpb::game_state::Game::Dots(Default::default());
        assert!(PuntoWire.bot_view(&dots).is_none());
    }
}
