//! The Punto engine: a pure, synchronous implementation of
//! `docs/rules/punto.md`. It knows nothing of protobuf, async, locks or
//! telemetry; the session layer drives it through [`referee`].
//!
//! * [`card`]: colours, cards, the canonical order, multisets (§2)
//! * [`table`]: cells, stacks, the floating 6 × 6 area, legal cells, rows
//!   (§4, §5.3, §6, §7.2)
//! * [`round`]: decks, turns, deadlocks and their tie-breaks, the removed
//!   card, the next first seat, round results (§5, §7, §8)
//! * [`deal`]: the fair shuffle and the deal of a round (§10)
//! * this file: configurations, sides, rule options, the refusal reasons
//!   (§5.3) and the [`Match`] (§3, §9)
//! * [`notation`]: move text (§4.4); [`record`]: game records (§12)
//! * [`render`]: the table as text; [`svg`]: the table as SVG
//! * [`referee`]: the [`Game`](crate::games::Game) implementation

pub mod card;
pub mod deal;
pub mod notation;
pub mod record;
pub mod referee;
pub mod render;
pub mod round;
pub mod svg;
pub mod table;

use std::fmt;

use crate::games::{Seat, SeatSet};

pub use card::{Card, CardCounts, Colour};
pub use deal::Key;
pub use round::{
    Deadlock, DeadlockCause, Deck, Placement, Round, RoundEnd, RoundKind, RoundResult, SideRows,
    TieBreak,
};
pub use table::{Bounds, Cell, CellList, Row, Stack, Step, Table};

/// Who plays, and so who owns which colours (docs/rules/punto.md §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Configuration {
    /// 2 players: seat 1 `R`+`B`, seat 2 `O`+`G`; rows of 5.
    #[default]
    TwoPlayers,
    /// 3 players: `R`, `O`, `B`; `G` is neutral; rows of 4.
    ThreePlayers,
    /// 4 players: `R`, `O`, `B`, `G`; rows of 4.
    FourPlayers,
    /// 4 players in two teams: seats 1+3 `R`+`B`, seats 2+4 `O`+`G`; rows
    /// of 5.
    Teams,
}

/// Seat names of each configuration (docs/rules/punto.md §3.1: by the colours owned).
const TWO_NAMES: &[&str] = &["red-blue", "orange-green"];
const THREE_NAMES: &[&str] = &["red", "orange", "blue"];
const FOUR_NAMES: &[&str] = &["red", "orange", "blue", "green"];
const TEAM_NAMES: &[&str] = &[
    "red-blue-1",
    "orange-green-1",
    "red-blue-2",
    "orange-green-2",
];

impl Configuration {
    /// The configuration of `players` (2..=4) and the team variant (4 only).
    pub fn of(players: u32, team: bool) -> Result<Configuration, OptionsError> {
        match (players, team) {
            (2, false) => Ok(Configuration::TwoPlayers),
            (3, false) => Ok(Configuration::ThreePlayers),
            (4, false) => Ok(Configuration::FourPlayers),
            (4, true) => Ok(Configuration::Teams),
            (2 | 3, true) => Err(OptionsError::TeamNeedsFour(players)),
            _ => Err(OptionsError::Players(players)),
        }
    }

    /// How many seats: 2, 3 or 4.
    pub const fn seats(self) -> usize {
        match self {
            Configuration::TwoPlayers => 2,
            Configuration::ThreePlayers => 3,
            Configuration::FourPlayers | Configuration::Teams => 4,
        }
    }

    /// Whether it is the team variant.
    pub const fn is_team(self) -> bool {
        matches!(self, Configuration::Teams)
    }

    /// How many sides win rounds: each seat, or the two teams (§3.1).
    pub const fn sides(self) -> usize {
        match self {
            Configuration::Teams => 2,
            other => other.seats(),
        }
    }

    /// The length `L` of a winning row (§3.1, §6).
    pub const fn row_length(self) -> u8 {
        match self {
            Configuration::TwoPlayers | Configuration::Teams => 5,
            Configuration::ThreePlayers | Configuration::FourPlayers => 4,
        }
    }

    /// The neutral colour (3 players: green, §3.1).
    pub const fn neutral(self) -> Option<Colour> {
        match self {
            Configuration::ThreePlayers => Some(Colour::Green),
            _ => None,
        }
    }

    /// The index of `seat`'s side (§3.1: team 1 = seats 1 and 3).
    pub const fn side_index(self, seat: Seat) -> usize {
        match self {
            Configuration::Teams => seat.index() % 2,
            _ => seat.index(),
        }
    }

    /// The side of index `side`.
    pub fn side(self, side: usize) -> Side {
        match self {
            Configuration::Teams if side == 0 => Side::Team(Team::One),
            Configuration::Teams => Side::Team(Team::Two),
            _ => Side::Seat(Seat::new(side).unwrap_or(Seat::FIRST)),
        }
    }

    /// The index of `side`, if it is one of this configuration.
    pub fn index_of(self, side: Side) -> Option<usize> {
        let index = match (self, side) {
            (Configuration::Teams, Side::Team(team)) => team.index(),
            (Configuration::Teams, Side::Seat(_)) | (_, Side::Team(_)) => return None,
            (_, Side::Seat(seat)) => seat.index(),
        };
        (index < self.sides()).then_some(index)
    }

    /// The side owning `colour` (§3.1); none for the neutral colour.
    pub const fn owner(self, colour: Colour) -> Option<usize> {
        match (self, colour) {
            (Configuration::TwoPlayers | Configuration::Teams, Colour::Red | Colour::Blue) => {
                Some(0)
            }
            (Configuration::TwoPlayers | Configuration::Teams, _) => Some(1),
            (Configuration::ThreePlayers, Colour::Green) => None,
            (_, colour) => Some(colour.index()),
        }
    }

    /// The colours side `side` owns (§3.1).
    pub fn colours(self, side: usize) -> &'static [Colour] {
        const RED_BLUE: &[Colour] = &[Colour::Red, Colour::Blue];
        const ORANGE_GREEN: &[Colour] = &[Colour::Orange, Colour::Green];
        match self {
            Configuration::TwoPlayers | Configuration::Teams if side == 0 => RED_BLUE,
            Configuration::TwoPlayers | Configuration::Teams => ORANGE_GREEN,
            _ => match side {
                0 => &[Colour::Red],
                1 => &[Colour::Orange],
                2 => &[Colour::Blue],
                _ => &[Colour::Green],
            },
        }
    }

    /// The seats of side `side`.
    pub fn seats_of(self, side: usize) -> SeatSet {
        Seat::all(self.seats())
            .filter(|&s| self.side_index(s) == side)
            .collect()
    }

    /// The side's lower-numbered seat (§8.3: the team's seat 1 or 2).
    pub fn lower_seat(self, side: usize) -> Seat {
        Seat::new(side).unwrap_or(Seat::FIRST)
    }

    /// What each seat is called, seat order (by the colours it plays, §3.1).
    pub const fn seat_names(self) -> &'static [&'static str] {
        match self {
            Configuration::TwoPlayers => TWO_NAMES,
            Configuration::ThreePlayers => THREE_NAMES,
            Configuration::FourPlayers => FOUR_NAMES,
            Configuration::Teams => TEAM_NAMES,
        }
    }

    /// A short label for logs and metrics.
    pub const fn name(self) -> &'static str {
        match self {
            Configuration::TwoPlayers => "2-players",
            Configuration::ThreePlayers => "3-players",
            Configuration::FourPlayers => "4-players",
            Configuration::Teams => "teams",
        }
    }
}

/// A team of the team variant (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Team {
    /// Seats 1 and 3, `R`+`B`.
    One,
    /// Seats 2 and 4, `O`+`G`.
    Two,
}

impl Team {
    /// 0 for team 1, 1 for team 2.
    pub const fn index(self) -> usize {
        match self {
            Team::One => 0,
            Team::Two => 1,
        }
    }

    /// 1 or 2.
    pub const fn number(self) -> u32 {
        self.index() as u32 + 1
    }
}

/// What wins rounds and the match (§3.1): a seat, or a team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// A seat playing on its own.
    Seat(Seat),
    /// A team of the team variant.
    Team(Team),
}

impl fmt::Display for Side {
    /// `seat N` or `team N`, as in a record's `result` (§12).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Side::Seat(seat) => write!(f, "seat {}", seat.number()),
            Side::Team(team) => write!(f, "team {}", team.number()),
        }
    }
}

/// Creator entropy `E` (§10.2): 0 to 64 bytes, public.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entropy {
    bytes: [u8; deal::MAX_ENTROPY],
    len: u8,
}

impl Entropy {
    /// No entropy (the default).
    pub const NONE: Entropy = Entropy {
        bytes: [0; deal::MAX_ENTROPY],
        len: 0,
    };

    /// The entropy `bytes`, if at most 64.
    pub fn new(bytes: &[u8]) -> Result<Entropy, OptionsError> {
        if bytes.len() > deal::MAX_ENTROPY {
            return Err(OptionsError::Entropy(bytes.len()));
        }
        let mut entropy = Entropy::NONE;
        entropy.bytes[..bytes.len()].copy_from_slice(bytes);
        entropy.len = bytes.len() as u8;
        Ok(entropy)
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for Entropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Entropy({})", crate::games::hex(self.bytes()))
    }
}

/// Why rule options are refused (§3.1, §9, §10.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// Punto is for 2, 3 or 4 players.
    #[error("Punto is for 2, 3 or 4 players, not {0}")]
    Players(u32),
    /// The team variant needs 4 players.
    #[error("the team variant is for 4 players, not {0}")]
    TeamNeedsFour(u32),
    /// `rounds_to_win` is 1 to 9 (§9.1).
    #[error("rounds_to_win is 1 to 9, not {0}")]
    RoundsToWin(u32),
    /// `max_rounds` is 0 to 99 (§9.2).
    #[error("max_rounds is 0 (no limit) to 99, not {0}")]
    MaxRounds(u32),
    /// Entropy is 0 to 64 bytes (§10.2).
    #[error("the entropy is 0 to 64 bytes, not {0}")]
    Entropy(usize),
}

impl OptionsError {
    /// The stable reason (`PLAYERS`, `TEAM_NEEDS_FOUR`, `ROUNDS_TO_WIN`,
    /// `MAX_ROUNDS`, `ENTROPY_TOO_LONG`).
    pub const fn reason(&self) -> &'static str {
        match self {
            OptionsError::Players(_) => "PLAYERS",
            OptionsError::TeamNeedsFour(_) => "TEAM_NEEDS_FOUR",
            OptionsError::RoundsToWin(_) => "ROUNDS_TO_WIN",
            OptionsError::MaxRounds(_) => "MAX_ROUNDS",
            OptionsError::Entropy(_) => "ENTROPY_TOO_LONG",
        }
    }

    /// The option at fault (`players`, `team`, `rounds_to_win`,
    /// `max_rounds`, `entropy`).
    pub const fn field(&self) -> &'static str {
        match self {
            OptionsError::Players(_) => "players",
            OptionsError::TeamNeedsFour(_) => "team",
            OptionsError::RoundsToWin(_) => "rounds_to_win",
            OptionsError::MaxRounds(_) => "max_rounds",
            OptionsError::Entropy(_) => "entropy",
        }
    }
}

/// The options a match is created with (§3.1, §9, §10.2); valid by
/// construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleOptions {
    configuration: Configuration,
    rounds_to_win: u8,
    max_rounds: u8,
    entropy: Entropy,
}

impl Default for RuleOptions {
    /// 2 players, 2 rounds to win, no round limit, no entropy.
    fn default() -> Self {
        RuleOptions::of(Configuration::TwoPlayers)
    }
}

impl RuleOptions {
    /// Default `rounds_to_win` (§9.1).
    pub const DEFAULT_ROUNDS_TO_WIN: u32 = 2;

    /// `configuration` with the default options.
    pub const fn of(configuration: Configuration) -> RuleOptions {
        RuleOptions {
            configuration,
            rounds_to_win: Self::DEFAULT_ROUNDS_TO_WIN as u8,
            max_rounds: 0,
            entropy: Entropy::NONE,
        }
    }

    /// Every option, checked.
    pub fn new(
        players: u32,
        team: bool,
        rounds_to_win: u32,
        max_rounds: u32,
        entropy: &[u8],
    ) -> Result<RuleOptions, OptionsError> {
        RuleOptions::of(Configuration::of(players, team)?)
            .with_rounds_to_win(rounds_to_win)?
            .with_max_rounds(max_rounds)?
            .with_entropy(entropy)
    }

    /// The same with `rounds_to_win` (1..=9, §9.1).
    pub fn with_rounds_to_win(self, rounds_to_win: u32) -> Result<RuleOptions, OptionsError> {
        match u8::try_from(rounds_to_win) {
            Ok(n @ 1..=9) => Ok(RuleOptions {
                rounds_to_win: n,
                ..self
            }),
            _ => Err(OptionsError::RoundsToWin(rounds_to_win)),
        }
    }

    /// The same with `max_rounds` (0..=99, 0 = no limit, §9.2).
    pub fn with_max_rounds(self, max_rounds: u32) -> Result<RuleOptions, OptionsError> {
        match u8::try_from(max_rounds) {
            Ok(n @ 0..=99) => Ok(RuleOptions {
                max_rounds: n,
                ..self
            }),
            _ => Err(OptionsError::MaxRounds(max_rounds)),
        }
    }

    /// The same with creator entropy (0..=64 bytes, §10.2).
    pub fn with_entropy(self, entropy: &[u8]) -> Result<RuleOptions, OptionsError> {
        Ok(RuleOptions {
            entropy: Entropy::new(entropy)?,
            ..self
        })
    }

    /// Who plays.
    pub const fn configuration(&self) -> Configuration {
        self.configuration
    }

    /// 2, 3 or 4.
    pub const fn players(&self) -> usize {
        self.configuration.seats()
    }

    /// Whether it is the team variant.
    pub const fn team(&self) -> bool {
        self.configuration.is_team()
    }

    /// Round wins that win the match (§9.1).
    pub const fn rounds_to_win(&self) -> u32 {
        self.rounds_to_win as u32
    }

    /// Rounds after which the match ends; 0 = no limit (§9.2).
    pub const fn max_rounds(&self) -> u32 {
        self.max_rounds as u32
    }

    /// The creator's entropy `E` (§10.2).
    pub fn entropy(&self) -> &[u8] {
        self.entropy.bytes()
    }
}

/// Why a placement is refused: the reasons of docs/rules/punto.md §5.3, checked in
/// this order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Order 1: the match has ended.
    #[error("the match is over")]
    MatchOver,
    /// Order 2: the text breaks the move grammar of §4.4.
    #[error("`{0}` is not a move: write the cell as X,Y, for example 0,0 or -1,2")]
    Malformed(String),
    /// Order 3: the table is empty and the cell is not `(0, 0)`.
    #[error("the first card of a round goes on 0,0")]
    FirstCardNotCenter,
    /// Order 4: the cards would not fit a 6 × 6 box (§4.2).
    #[error("the cards would no longer fit a 6 × 6 area")]
    OutsideArea,
    /// Order 5: the cell is empty and none of its 8 neighbours is occupied.
    #[error("an empty cell must touch a card, side by side or corner to corner")]
    NotAdjacent,
    /// Order 6: the cell's top card is not lower than the revealed card.
    #[error("{revealed} can only cover a lower card, not {top}")]
    NotHigher {
        /// The card on the cell.
        top: Card,
        /// The mover's card.
        revealed: Card,
    },
}

impl Refusal {
    /// The stable reason of docs/rules/punto.md §5.3.
    pub const fn reason(&self) -> &'static str {
        match self {
            Refusal::MatchOver => "MATCH_OVER",
            Refusal::Malformed(_) => "MALFORMED",
            Refusal::FirstCardNotCenter => "FIRST_CARD_NOT_CENTER",
            Refusal::OutsideArea => "OUTSIDE_AREA",
            Refusal::NotAdjacent => "NOT_ADJACENT",
            Refusal::NotHigher { .. } => "NOT_HIGHER",
        }
    }
}

/// How a match ended on the board (§9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchEnd {
    /// A side won `rounds_to_win` rounds (§9.1).
    RoundsWon,
    /// `max_rounds` rounds were played (§9.2).
    RoundLimit,
}

impl MatchEnd {
    /// `ROUNDS_WON` or `ROUND_LIMIT`.
    pub const fn name(self) -> &'static str {
        match self {
            MatchEnd::RoundsWon => "ROUNDS_WON",
            MatchEnd::RoundLimit => "ROUND_LIMIT",
        }
    }
}

/// The end of a match on the board (§9).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MatchOutcome {
    /// The winning side; none for a drawn match.
    pub winner: Option<Side>,
    /// Why it ended.
    pub reason: MatchEnd,
    /// Round wins per side, side order.
    pub wins: Vec<u32>,
}

/// A card revealed for the next turn (§5.2 step 2, §9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Revealed {
    /// The round it belongs to.
    pub round: u32,
    /// The seat to play it.
    pub seat: Seat,
    /// The card.
    pub card: Card,
}

/// A placement as a record keeps it (§12): its round, card and cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Played {
    /// The round it was placed in.
    pub round: u32,
    /// The revealed card placed.
    pub card: Card,
    /// Where.
    pub cell: Cell,
}

/// What an accepted placement did.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Placed {
    /// The ply after it (placements since the match began).
    pub ply: u32,
    /// The round it was placed in.
    pub round: u32,
    /// The placement itself.
    pub placement: Placement,
    /// The round it ended (by its row, or by the deadlock of the next
    /// turn), if it ended one.
    pub round_result: Option<RoundResult>,
    /// The next revealed card: the next seat's, or the first of the next
    /// round (§9.3); none when the match is over.
    pub next: Option<Revealed>,
    /// The match's end, if this placement ended it.
    pub outcome: Option<MatchOutcome>,
}

/// A Punto match (§9): its options, the key of its shuffles, the round in
/// play and the finished ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    options: RuleOptions,
    key: Key,
    round: Round,
    results: Vec<RoundResult>,
    /// Round wins per side.
    wins: [u32; 4],
    /// Cards not removed (§8.1).
    in_match: CardCounts,
    /// Removed cards, in the order removed.
    removed: Vec<Card>,
    /// The neutral cards each seat held when the round in play was dealt
    /// (§3.3).
    neutral_dealt: [CardCounts; 4],
    /// The table of the last finished round, as it ended.
    last_table: Option<Table>,
    /// Every placement, in order.
    history: Vec<Played>,
    outcome: Option<MatchOutcome>,
}

impl Match {
    /// A match of `options` shuffled from `seed` (§10): round 1 dealt and
    /// seat 1's first card revealed (§5.1, §13.2).
    pub fn new(options: RuleOptions, seed: &[u8; 32]) -> Match {
        let key = Key::new(seed, options.entropy());
        let configuration = options.configuration();
        let pool = if configuration.neutral().is_some() {
            CardCounts::of_colour(Colour::Green)
        } else {
            CardCounts::EMPTY
        };
        let (round, neutral_dealt) = deal_round(
            &key,
            configuration,
            1,
            &CardCounts::FULL,
            [CardCounts::EMPTY; 4],
            &pool,
            Seat::FIRST,
            Seat::FIRST,
        );
        Match {
            options,
            key,
            round,
            results: Vec::new(),
            wins: [0; 4],
            in_match: CardCounts::FULL,
            removed: Vec::new(),
            neutral_dealt,
            last_table: None,
            history: Vec::new(),
            outcome: None,
        }
    }

    /// The options.
    pub const fn options(&self) -> &RuleOptions {
        &self.options
    }

    /// Who plays.
    pub const fn configuration(&self) -> Configuration {
        self.options.configuration()
    }

    /// The round in play, or the last one once the match is over.
    pub const fn round(&self) -> &Round {
        &self.round
    }

    /// The finished rounds' results, in order.
    pub fn results(&self) -> &[RoundResult] {
        &self.results
    }

    /// Round wins per side, side order.
    pub fn wins(&self) -> &[u32] {
        &self.wins[..self.configuration().sides()]
    }

    /// Cards removed from the match, in the order removed (§8.1).
    pub fn removed(&self) -> &[Card] {
        &self.removed
    }

    /// The cards not removed (§8.1).
    pub const fn in_match(&self) -> &CardCounts {
        &self.in_match
    }

    /// The neutral cards each seat held when the round in play was dealt
    /// (3 players, §3.3), seat order.
    pub fn neutral_dealt(&self) -> &[CardCounts] {
        &self.neutral_dealt[..self.configuration().seats()]
    }

    /// The last finished round's table as it ended.
    pub const fn last_table(&self) -> Option<&Table> {
        self.last_table.as_ref()
    }

    /// Every placement, in order.
    pub fn history(&self) -> &[Played] {
        &self.history
    }

    /// Placements since the match began.
    pub fn ply(&self) -> u32 {
        self.history.len() as u32
    }

    /// How the match ended on the board, once it has.
    pub const fn outcome(&self) -> Option<&MatchOutcome> {
        self.outcome.as_ref()
    }

    /// Whether the match has ended on the board.
    pub const fn is_over(&self) -> bool {
        self.outcome.is_some()
    }

    /// The key of its shuffles (secret until the match ends, §11).
    pub const fn key(&self) -> &Key {
        &self.key
    }

    /// Whose turn it is, while the match goes on.
    pub fn mover(&self) -> Option<Seat> {
        if self.is_over() {
            None
        } else {
            self.round.mover()
        }
    }

    /// The mover's revealed card, while the match goes on.
    pub fn revealed(&self) -> Option<Card> {
        self.mover().and(self.round.revealed())
    }

    /// Whether the revealed card may go on `cell`: the refusal of §5.3 in
    /// its order (orders 1 and 3–6; order 2 is [`Match::check_text`]'s).
    pub fn check(&self, cell: Cell) -> Result<Option<Card>, Refusal> {
        // §5.3 order 1.
        if self.is_over() {
            return Err(Refusal::MatchOver);
        }
        self.round.check(cell)
    }

    /// The cell `text` names, if the match goes on and it is well formed
    /// (§5.3 orders 1 and 2).
    pub fn check_text(&self, text: &str) -> Result<Cell, Refusal> {
        if self.is_over() {
            return Err(Refusal::MatchOver);
        }
        notation::parse_cell(text)
    }

    /// The legal cells of the revealed card, sorted by `x`, then `y`
    /// (§5.3); none once the match is over.
    pub fn legal_cells(&self) -> CellList {
        if self.is_over() {
            CellList::empty()
        } else {
            self.round.legal_cells()
        }
    }

    /// Plays the move written `text` (§4.4), refused as §5.3 says.
    pub fn play_text(&mut self, text: &str) -> Result<Placed, Refusal> {
        let cell = self.check_text(text)?;
        self.play(cell)
    }

    /// Puts the revealed card on `cell` (§5.2), ending the round and
    /// dealing the next (§8, §9.3) or ending the match (§9) as it follows.
    pub fn play(&mut self, cell: Cell) -> Result<Placed, Refusal> {
        // §5.3 order 1; the round checks orders 3–6 as it places.
        if self.is_over() {
            return Err(Refusal::MatchOver);
        }
        let number = self.round.number();
        let placement = self.round.place(cell)?;
        self.history.push(Played {
            round: number,
            card: placement.card,
            cell,
        });
        let round_result = if self.round.end().is_some() {
            Some(self.finish_round())
        } else {
            None
        };
        let next = match (self.mover(), self.round.revealed()) {
            (Some(seat), Some(card)) => Some(Revealed {
                round: self.round.number(),
                seat,
                card,
            }),
            _ => None,
        };
        Ok(Placed {
            ply: self.ply(),
            round: number,
            placement,
            outcome: round_result.as_ref().and(self.outcome.clone()),
            round_result,
            next,
        })
    }

    /// Scores the finished round (§7, §8), ends the match if it is won or
    /// at its limit (§9), else deals the next round (§9.3).
    fn finish_round(&mut self) -> RoundResult {
        let configuration = self.configuration();
        let round = &self.round;
        let end = round.end().unwrap_or(RoundEnd::Deadlock {
            stuck: round.first(),
            revealed: None,
            cause: DeadlockCause::DeckEmpty,
        });
        let scored = round.score().unwrap_or(round::Scored {
            winner: None,
            rows: Vec::new(),
            deadlock: None,
        });
        // §8.1: the winner removes its highest card of the deciding rows.
        let removed = scored
            .winner
            .and_then(|_| round::removed_card(round.table(), &scored.rows));
        if let Some(card) = removed {
            self.in_match.take(card);
            self.removed.push(card);
        }
        if let Some(side) = scored.winner {
            self.wins[side] += 1;
        }
        self.outcome = self.match_outcome();
        let next_first = round::next_first_seat(configuration, round.first(), end, scored.winner);
        let result = RoundResult {
            round: round.number(),
            kind: match end {
                RoundEnd::Row { .. } => RoundKind::Row,
                RoundEnd::Deadlock { .. } => RoundKind::Deadlock,
            },
            winner: scored.winner.map(|side| configuration.side(side)),
            removed,
            rows: scored.rows,
            placed_by: match end {
                RoundEnd::Row { placer, .. } => Some(placer),
                RoundEnd::Deadlock { .. } => None,
            },
            deadlock: scored.deadlock,
            next_first: self.outcome.is_none().then_some(next_first),
        };
        self.results.push(result.clone());
        self.last_table = Some(self.round.table().clone());
        if self.outcome.is_none() {
            let dealer = round::neutral_dealer(configuration, end, scored.winner, next_first);
            self.deal_next(next_first, dealer);
        }
        result
    }

    /// The board end of the match after a round, if it has come (§9.1,
    /// §9.2).
    fn match_outcome(&self) -> Option<MatchOutcome> {
        let configuration = self.configuration();
        let wins = self.wins().to_vec();
        if let Some(side) = wins.iter().position(|&w| w >= self.options.rounds_to_win()) {
            return Some(MatchOutcome {
                winner: Some(configuration.side(side)),
                reason: MatchEnd::RoundsWon,
                wins,
            });
        }
        let limit = self.options.max_rounds() as usize;
        if limit == 0 || self.results.len() + 1 < limit {
            return None;
        }
        // §9.2: the most round wins wins; a shared lead draws.
        let most = wins.iter().copied().max().unwrap_or(0);
        let leaders: Vec<usize> = (0..wins.len()).filter(|&i| wins[i] == most).collect();
        Some(MatchOutcome {
            winner: match leaders[..] {
                [only] => Some(configuration.side(only)),
                _ => None,
            },
            reason: MatchEnd::RoundLimit,
            wins,
        })
    }

    /// Deals the next round (§8.2, §3.3, §10.6) with `first` to begin and
    /// the neutral deal starting with `dealer`.
    fn deal_next(&mut self, first: Seat, dealer: Seat) {
        let configuration = self.configuration();
        let mut pool = CardCounts::EMPTY;
        if let Some(neutral) = configuration.neutral() {
            for card in self.round.table().all_cards() {
                if card.colour() == neutral {
                    pool.add(card);
                }
            }
        }
        let kept = self.round.neutral_kept();
        let (round, neutral_dealt) = deal_round(
            &self.key,
            configuration,
            self.round.number() + 1,
            &self.in_match,
            kept,
            &pool,
            first,
            dealer,
        );
        self.round = round;
        self.neutral_dealt = neutral_dealt;
    }
}

/// Deals round `number` (§3.2, §3.3, §10.6) from the cards in the match,
/// the neutral cards each seat kept and the neutral `pool` (dealt from
/// `dealer`); the round with `first` to begin, and each seat's neutral
/// cards.
#[allow(clippy::too_many_arguments)]
fn deal_round(
    key: &Key,
    configuration: Configuration,
    number: u32,
    in_match: &CardCounts,
    kept: [CardCounts; 4],
    pool: &CardCounts,
    first: Seat,
    dealer: Seat,
) -> (Round, [CardCounts; 4]) {
    let mut neutral = kept;
    if configuration.neutral().is_some() {
        // §10.6 step 1.
        let (shares, _) = deal::deal_neutral(key, number, pool, dealer.index());
        for (held, share) in neutral.iter_mut().zip(&shares) {
            *held = held.plus(&CardCounts::of_cards(share));
        }
    }
    let seats = configuration.seats();
    let mut decks: Vec<Vec<Card>> = vec![Vec::new(); seats];
    if configuration.is_team() {
        // §10.6 step 2, team variant: one pile per team, split.
        for side in 0..2 {
            let pile = deal::colours_of(configuration.colours(side), in_match);
            let (lower, upper) = deal::deal_team(key, number, side as u32 + 1, &pile);
            decks[side] = lower;
            decks[side + 2] = upper;
        }
    } else {
        for (seat, deck) in decks.iter_mut().enumerate() {
            let own = deal::colours_of(configuration.colours(seat), in_match);
            *deck = deal::deal_deck(key, number, seat, &own.plus(&neutral[seat]));
        }
    }
    (Round::new(number, configuration, &decks, first), neutral)
}
