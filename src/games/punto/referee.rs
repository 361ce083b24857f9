//! Punto behind the game-agnostic [`Game`] trait (and its options behind
//! [`Rules`]): seats by the colours they play, the game choosing who moves
//! (and starting each next round by itself, docs/rules/punto.md §9.3), outcomes naming
//! the winning side's seats with each seat's round wins as its score,
//! referee endings, the §12 record with the commitment and, once over, the
//! seed, and the [`Importer`](crate::games::Importer) contract.
//!
//! What each viewer sees (§11): the same for every seat and spectator. The
//! only secret is every deck's order (the next cards), from everybody, and
//! no payload carries it until the match is over: a listed move does not
//! say what it would reveal, a played move shows the card it revealed.

use super::record::{Record, RecordError as PuntoRecordError};
use super::svg;
use super::{
    Card, CardCounts, Cell, Engine, Placed, Refusal, Revealed, RoundOutcome, RuleOptions, Table,
};
use crate::games::{
    Decision, Game, GameRules, GameState, MoveDetail, MoveError, MoveInput, MoveReport, Opaque,
    Outcome, RecordError, RefereeAction, Replayed, Rules, Seat, SeatSet, Setup, SharedState,
    Viewer, punto,
};

/// A Punto move as a client gave it: the cell, structured or as notation
/// (docs/rules/punto.md §4.4; the card is always the mover's revealed card).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PuntoMoveInput {
    /// The cell `x, y`.
    Cell(Cell),
    /// The text `X,Y`, read by the engine (refused `MALFORMED` if it is
    /// not one).
    Notation(String),
}

/// A Punto move, played or listed, with what a client is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PuntoMoveInfo {
    /// The mover.
    pub seat: Seat,
    /// The round it is (was) placed in.
    pub round: u32,
    /// The card placed: the mover's revealed card.
    pub card: Card,
    /// Where.
    pub cell: Cell,
    /// The top card it covers, if the cell is occupied.
    pub covered: Option<Card>,
    /// Whether it was played (a listed move says nothing of what it would
    /// reveal: the fields below stay empty).
    pub played: bool,
    /// The round it ended, if it ended one (§8.4).
    pub round_result: Option<RoundOutcome>,
    /// The card it revealed: the next seat's, or the next round's first
    /// (§9.3); none when the match ended.
    pub next: Option<Revealed>,
    /// The match's end, if it ended the match on the board.
    pub outcome: Option<punto::Outcome>,
    /// When it ended a round and the match goes on: the next round's decks
    /// as dealt (contents, never the order: §11), seat order. Empty
    /// otherwise.
    pub deal: Vec<DeckView>,
}

impl PuntoMoveInfo {
    /// `cover` when it covers a card, else `place`.
    pub const fn kind(&self) -> &'static str {
        if self.covered.is_some() {
            "cover"
        } else {
            "place"
        }
    }

    fn of_placed(placed: Placed, deal: Vec<DeckView>) -> PuntoMoveInfo {
        PuntoMoveInfo {
            seat: placed.placement.seat,
            round: placed.round,
            card: placed.placement.card,
            cell: placed.placement.cell,
            covered: placed.placement.covered,
            played: true,
            round_result: placed.round_result,
            next: placed.next,
            outcome: placed.outcome,
            deal,
        }
    }

    fn to_detail(&self) -> MoveDetail {
        MoveDetail {
            notation: self.cell.to_string(),
            kind: self.kind(),
            payload: Opaque::new(self.clone()),
        }
    }
}

/// One seat's deck as every viewer sees it (§11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeckView {
    /// Whose deck.
    pub seat: Seat,
    /// Cards in it (the revealed card is off it).
    pub size: usize,
    /// Which cards, without their order.
    pub contents: CardCounts,
    /// With 3 players: the neutral cards the seat held when the round was
    /// dealt (§3.3).
    pub neutral: Option<CardCounts>,
    /// The order, top first: only once the match is over (§11).
    pub order: Option<Vec<Card>>,
}

/// A Punto match as a viewer sees it (§11: every viewer sees the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PuntoState {
    /// The match's options (the entropy among them).
    pub options: RuleOptions,
    /// The commitment `C` (§10.1).
    pub commitment: [u8; 32],
    /// The seed `S`, once the match is over (§10.7).
    pub seed: Option<[u8; 32]>,
    /// Placements so far.
    pub ply: u32,
    /// The round in play (the last one once over).
    pub round: u32,
    /// The seat that began it.
    pub first: Seat,
    /// Its table.
    pub table: Table,
    /// Whose turn it is.
    pub mover: Option<Seat>,
    /// The mover's revealed card.
    pub revealed: Option<Card>,
    /// Every seat's deck, seat order.
    pub decks: Vec<DeckView>,
    /// The finished rounds, in order.
    pub results: Vec<RoundOutcome>,
    /// The last finished round's table as it ended.
    pub last_table: Option<Table>,
    /// Round wins per side.
    pub wins: Vec<u32>,
    /// Removed cards, in the order removed.
    pub removed: Vec<Card>,
    /// The board end of the match.
    pub outcome: Option<punto::Outcome>,
    /// The referee's end, if it ended the match (e.g. `RESIGNATION`).
    pub ending: Option<&'static str>,
}

impl GameState for PuntoState {
    /// The table as SVG (`punto::svg`), the last move and any winning rows
    /// marked.
    fn svg(&self, last_move: Option<&MoveDetail>, _outcome: Option<&Outcome>) -> String {
        let last = last_move.and_then(|m| m.get::<PuntoMoveInfo>());
        svg::svg(self, last)
    }
}

impl Rules for RuleOptions {
    fn game_name(&self) -> &'static str {
        "punto"
    }

    fn variant_name(&self) -> &'static str {
        self.configuration().name()
    }

    fn seeded(&self) -> bool {
        true
    }

    /// Without a setup (never asked of a seeded game) the seed is all zero.
    fn start(&self, setup: Option<Setup>) -> Box<dyn Game> {
        let setup = setup.unwrap_or(Setup {
            seed: [0; 32],
            supplied: true,
        });
        Box::new(PuntoGame::new(*self, setup))
    }
}

/// One Punto match behind the [`Game`] trait. Its `Debug` form leaves out
/// the seed and the decks' order (§11), so logging a game leaks nothing.
#[derive(Clone)]
pub struct PuntoGame {
    setup: Setup,
    engine: Engine,
    /// Every move played, as reported.
    played: Vec<MoveDetail>,
    /// A referee ending and its outcome, if one ended the match.
    concluded: Option<(RefereeAction, Outcome)>,
}

impl std::fmt::Debug for PuntoGame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PuntoGame")
            .field("options", self.engine.options())
            .field("commitment", &crate::games::hex(&self.setup.commitment()))
            .field("ply", &self.engine.ply())
            .field("round", &self.engine.round().number())
            .field("mover", &self.to_move())
            .field("outcome", &self.outcome().map(|v| v.reason))
            .finish()
    }
}

impl PuntoGame {
    /// A new match of `options` shuffled from `setup`'s seed.
    pub fn new(options: RuleOptions, setup: Setup) -> PuntoGame {
        PuntoGame {
            setup,
            engine: Engine::new(options, &setup.seed),
            played: Vec::new(),
            concluded: None,
        }
    }

    /// The engine's match.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether the match is over, on the board or by the referee.
    pub fn is_over(&self) -> bool {
        self.concluded.is_some() || self.engine.is_over()
    }

    /// Places the revealed card where `input` says on the engine's match:
    /// the move's report (the caller keeps it in `played`).
    fn place(&mut self, input: &MoveInput) -> Result<MoveReport, MoveError> {
        let cell = self.cell_of(input)?;
        let placed = self.engine.play(cell).map_err(refused)?;
        // A new round was dealt (§9.3): its decks' contents are public.
        let deal = if placed.round_result.is_some() && !self.engine.is_over() {
            deck_views(&self.engine, false)
        } else {
            Vec::new()
        };
        let info = PuntoMoveInfo::of_placed(placed, deal);
        Ok(MoveReport {
            seat: info.seat,
            ply: self.engine.ply(),
            next: self.to_move(),
            outcome: self.outcome().map(Box::new),
            detail: info.to_detail(),
        })
    }

    /// The cell `input` names: docs/rules/punto.md §5.3 orders 1 and 2 (a foreign
    /// payload is malformed input, not a rule question).
    fn cell_of(&self, input: &MoveInput) -> Result<Cell, MoveError> {
        enum Given<'a> {
            Cell(Cell),
            Text(&'a str),
        }
        let given = if let Some(input) = input.get::<PuntoMoveInput>() {
            match input {
                PuntoMoveInput::Cell(cell) => Given::Cell(*cell),
                PuntoMoveInput::Notation(text) => Given::Text(text),
            }
        } else if let Some(info) = input.get::<PuntoMoveInfo>() {
            Given::Cell(info.cell)
        } else {
            return Err(MoveError::Malformed {
                field: "move",
                description: "not a Punto move (set move.punto)".into(),
            });
        };
        // §5.3 order 1.
        if self.is_over() {
            return Err(refused(Refusal::MatchOver));
        }
        match given {
            Given::Cell(cell) => Ok(cell),
            // §5.3 order 2.
            Given::Text(text) => super::notation::parse_cell(text).map_err(refused),
        }
    }

    fn outcome_of(&self, outcome: &punto::Outcome) -> Outcome {
        let configuration = self.engine.configuration();
        let winners = outcome
            .winner
            .and_then(|side| configuration.index_of(side))
            .map_or(SeatSet::EMPTY, |side| configuration.seats_of(side));
        Outcome {
            winners,
            reason: outcome.reason.name(),
            scores: self.scores(),
            detail: Some(Opaque::new(outcome.clone())),
        }
    }

    /// Each seat's score: its side's round wins.
    fn scores(&self) -> Vec<i64> {
        let configuration = self.engine.configuration();
        let wins = self.engine.wins();
        Seat::all(configuration.seats())
            .map(|s| i64::from(wins.get(configuration.side_index(s)).copied().unwrap_or(0)))
            .collect()
    }

    /// The winners of a referee ending: a seat that resigns, runs out of
    /// time or leaves loses with its side, and every other side wins
    /// together (docs/PUNTO.md); draws and aborts have no winner.
    fn referee_outcome(&self, ending: RefereeAction) -> Outcome {
        let configuration = self.engine.configuration();
        let winners = match ending {
            RefereeAction::Resignation { loser }
            | RefereeAction::Timeout { loser }
            | RefereeAction::Abandoned { loser } => {
                let losing = configuration.seats_of(configuration.side_index(loser));
                Seat::all(configuration.seats())
                    .filter(|&s| !losing.contains(s))
                    .collect()
            }
            RefereeAction::DrawAgreement | RefereeAction::Aborted => SeatSet::EMPTY,
        };
        Outcome {
            winners,
            reason: ending.reason(),
            scores: self.scores(),
            detail: None,
        }
    }

    /// The state of `engine` as everybody sees it; the seed and deck orders
    /// only when `revealed` (the match is over).
    fn snapshot_of(
        &self,
        engine: &Engine,
        revealed: bool,
        ending: Option<&'static str>,
    ) -> PuntoState {
        let round = engine.round();
        let decks = deck_views(engine, revealed);
        PuntoState {
            options: *engine.options(),
            commitment: self.setup.commitment(),
            seed: revealed.then_some(self.setup.seed),
            ply: engine.ply(),
            round: round.number(),
            first: round.first(),
            table: round.table().clone(),
            mover: if ending.is_some() {
                None
            } else {
                engine.mover()
            },
            revealed: if ending.is_some() {
                None
            } else {
                engine.revealed()
            },
            decks,
            results: engine.results().to_vec(),
            last_table: engine.last_table().cloned(),
            wins: engine.wins().to_vec(),
            removed: engine.removed().to_vec(),
            outcome: engine.outcome().cloned(),
            ending,
        }
    }

    /// The engine after the first `ply` placements.
    fn engine_at(&self, ply: u32) -> Option<Engine> {
        let history = self.engine.history().get(..ply as usize)?;
        let mut engine = Engine::new(*self.engine.options(), &self.setup.seed);
        for played in history {
            // Replaying placements this match accepted cannot fail.
            engine.play(played.cell).ok()?;
        }
        Some(engine)
    }
}

/// Every seat's deck in the round in play as everybody sees it (§11); the
/// order only when `revealed` (the match is over).
fn deck_views(engine: &Engine, revealed: bool) -> Vec<DeckView> {
    let configuration = engine.configuration();
    let round = engine.round();
    let neutral = engine.neutral_dealt();
    Seat::all(configuration.seats())
        .map(|seat| {
            let deck = round.deck(seat);
            DeckView {
                seat,
                size: deck.size(),
                contents: deck.contents(),
                neutral: configuration
                    .neutral()
                    .map(|_| neutral.get(seat.index()).copied().unwrap_or_default()),
                order: revealed.then(|| deck.remaining().to_vec()),
            }
        })
        .collect()
}

/// A refusal as the [`Game`] contract gives it: malformed text is
/// malformed input; a move after the end is `GAME_OVER`, the contract's
/// name for `MATCH_OVER` (docs/PUNTO.md); every other reason is §5.3's.
fn refused(refusal: Refusal) -> MoveError {
    match refusal {
        Refusal::Malformed(_) => MoveError::Malformed {
            field: "move.notation",
            description: format!("{refusal} (MALFORMED)"),
        },
        Refusal::MatchOver => MoveError::Illegal {
            reason: "GAME_OVER",
            message: format!("{refusal} (MATCH_OVER)"),
        },
        other => MoveError::Illegal {
            reason: other.reason(),
            message: other.to_string(),
        },
    }
}

impl Game for PuntoGame {
    fn rules(&self) -> GameRules {
        GameRules::new(*self.engine.options())
    }

    fn seat_names(&self) -> &'static [&'static str] {
        self.engine.configuration().seat_names()
    }

    fn ply(&self) -> u32 {
        self.engine.ply()
    }

    fn to_move(&self) -> Option<Seat> {
        if self.concluded.is_some() {
            None
        } else {
            self.engine.mover()
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        match &self.concluded {
            Some((_, outcome)) => Some(outcome.clone()),
            None => self.engine.outcome().map(|o| self.outcome_of(o)),
        }
    }

    fn setup(&self) -> Option<Setup> {
        Some(self.setup)
    }

    fn play(&mut self, input: &MoveInput) -> Result<MoveReport, MoveError> {
        let report = self.place(input)?;
        self.played.push(report.detail.clone());
        Ok(report)
    }

    /// Played and taken back on this match: a copy would copy every move's
    /// report and every placement, a move costs far less.
    fn decide(&mut self, input: &MoveInput) -> Result<Decision, MoveError> {
        let mark = self.engine.mark();
        let report = self.place(input)?;
        self.engine.take_back(mark);
        Ok(Decision {
            report,
            after: None,
        })
    }

    /// The legal cells, sorted by notation as the contract wants (docs/rules/punto.md
    /// §5.3 sorts by `x`, then `y`: [`Engine::legal_cells`]). A listed move
    /// leaves `next` and `outcome` empty: they depend on the next card.
    fn legal_moves(&self) -> Vec<MoveReport> {
        let (Some(seat), Some(card)) = (self.to_move(), self.engine.revealed()) else {
            return Vec::new();
        };
        let table = self.engine.round().table();
        let mut moves: Vec<MoveReport> = self
            .engine
            .legal_cells()
            .as_slice()
            .iter()
            .map(|&cell| {
                let info = PuntoMoveInfo {
                    seat,
                    round: self.engine.round().number(),
                    card,
                    cell,
                    covered: table.top(cell),
                    played: false,
                    round_result: None,
                    next: None,
                    outcome: None,
                    deal: Vec::new(),
                };
                MoveReport {
                    seat,
                    ply: self.engine.ply() + 1,
                    next: None,
                    outcome: None,
                    detail: info.to_detail(),
                }
            })
            .collect();
        moves.sort_by(|a, b| a.detail.notation.cmp(&b.detail.notation));
        moves
    }

    fn snapshot(&self, _viewer: Viewer) -> SharedState {
        let ending = self.concluded.as_ref().map(|(e, _)| e.reason());
        SharedState::new(self.snapshot_of(&self.engine, self.is_over(), ending))
    }

    /// Every viewer sees the same (§11); referee endings are not part of a
    /// past state.
    fn snapshot_at(&self, ply: u32, _viewer: Viewer) -> Option<SharedState> {
        let engine = self.engine_at(ply)?;
        let over = engine.is_over();
        Some(SharedState::new(self.snapshot_of(&engine, over, None)))
    }

    /// The decks' order is secret (§11), so the service treats the game as
    /// private; every viewer is shown the same, and nothing shown carries
    /// a deck order before the end.
    fn hides_information(&self) -> bool {
        true
    }

    /// Nothing of a move is any viewer's alone (§11).
    fn redact(&self, detail: &MoveDetail, _viewer: Viewer) -> MoveDetail {
        detail.clone()
    }

    fn last_move(&self) -> Option<MoveDetail> {
        self.played.last().cloned()
    }

    /// The §12 record (the same for every viewer): the seed once the match
    /// is over, `result` for a board end, `ending` for a referee one.
    fn record(&self, _tags: &[(String, String)], _viewer: Viewer) -> String {
        let seed = self.is_over().then_some(&self.setup.seed);
        let ending = self.concluded.as_ref().map(|(e, _)| *e);
        Record::canonical(
            &self.engine,
            &self.setup.commitment(),
            seed,
            self.setup.supplied,
            ending,
        )
    }

    fn conclude(&mut self, ending: RefereeAction) -> Result<Outcome, MoveError> {
        if self.is_over() {
            return Err(refused(Refusal::MatchOver));
        }
        let outcome = self.referee_outcome(ending);
        self.concluded = Some((ending, outcome.clone()));
        Ok(outcome)
    }

    fn clone_box(&self) -> Box<dyn Game> {
        Box::new(self.clone())
    }

    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool {
        let Some(info) = played.get::<PuntoMoveInfo>() else {
            return false;
        };
        let given = if let Some(input) = input.get::<PuntoMoveInput>() {
            match input {
                PuntoMoveInput::Cell(cell) => Some(*cell),
                PuntoMoveInput::Notation(text) => super::notation::parse_cell(text).ok(),
            }
        } else {
            input.get::<PuntoMoveInfo>().map(|i| i.cell)
        };
        let at = self.engine.history().get(ply as usize);
        given == Some(info.cell) && at.is_some_and(|p| p.cell == info.cell)
    }

    fn rules_header(&self) -> String {
        Record::rules_header(self.engine.options(), &self.setup.commitment())
    }
}

/// Reads and replays a Punto record (docs/rules/punto.md §12) under the
/// [`Importer`](crate::games::Importer) contract: the record's seed or the
/// server's `seed`, checked against the commitment; without either the
/// record is refused (`SEED_NOT_REVEALED`).
pub fn import(text: &str, seed: Option<Setup>) -> Result<Replayed, RecordError> {
    let record = Record::parse(text).map_err(record_error)?;
    let setup = record.setup(seed).map_err(record_error)?;
    let (_, placed) = record.replay(&setup.seed).map_err(record_error)?;
    let mut game = PuntoGame::new(record.options, setup);
    let mut moves = Vec::with_capacity(placed.len());
    for placed in &placed {
        let input = MoveInput::new(PuntoMoveInput::Cell(placed.placement.cell));
        let report = game.play(&input).map_err(|e| RecordError {
            line: None,
            reason: None,
            message: format!("replay failed: {e}"),
        })?;
        moves.push(report);
    }
    if let Some((ending, line)) = record.ending {
        game.conclude(ending).map_err(|e| RecordError {
            line: Some(line),
            reason: Some("RESULT_MISMATCH"),
            message: e.to_string(),
        })?;
    }
    // Without the server's own copy the seed is the record's. A finished
    // record is an archive: it keeps the mark it carries. A match that goes
    // on is dealt from a seed its importer knows: supplied, whatever the
    // record says.
    if seed.is_none() && game.is_over() {
        game.setup.supplied = record.supplied;
    }
    Ok(Replayed {
        game: Box::new(game),
        moves,
        tags: record.tags,
    })
}

fn record_error(e: PuntoRecordError) -> RecordError {
    RecordError {
        line: e.line(),
        reason: Some(e.reason()),
        message: e.to_string(),
    }
}

/// A Punto move as notation text, as the service's syntax check would pass
/// it on (the engine reads it, so any text is an input).
pub fn notation(text: &str) -> Option<MoveInput> {
    Some(MoveInput::new(PuntoMoveInput::Notation(text.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::conformance::{Bounds, Subject, run_all};

    fn subject(label: &'static str, options: RuleOptions) -> Subject {
        Subject {
            label,
            rules: GameRules::new(options),
            import,
            notation,
            // Cells no card can reach (docs/rules/punto.md §4.2), however written.
            never_legal: &["6,0", "0,-6", "-6,5", "99999999999999999999,0"],
            seeded: true,
            // Up to 49 legal cells a ply and a few dozen plies a round:
            // check the first rounds ply by ply, then play the match out.
            bounds: Bounds {
                games: 4,
                ply_cap: 600,
                checked_plies: 60,
                moves_per_ply: 8,
            },
        }
    }

    fn options(players: u32, team: bool) -> RuleOptions {
        RuleOptions::new(players, team, 2, 0, &[]).expect("valid options")
    }

    #[test]
    fn two_players_pass_the_conformance_suite() {
        run_all(&subject("punto 2 players", options(2, false)), 1);
    }

    #[test]
    fn three_players_pass_the_conformance_suite() {
        run_all(&subject("punto 3 players", options(3, false)), 2);
    }

    #[test]
    fn four_players_pass_the_conformance_suite() {
        run_all(&subject("punto 4 players", options(4, false)), 3);
    }

    #[test]
    fn teams_pass_the_conformance_suite() {
        run_all(&subject("punto teams", options(4, true)), 4);
    }

    #[test]
    fn one_round_matches_with_entropy_and_a_round_limit_pass_it_too() {
        let options = RuleOptions::new(3, false, 1, 1, &[0xca, 0xfe]).expect("valid options");
        run_all(&subject("punto 3 players, 1 round, entropy", options), 5);
    }
}
