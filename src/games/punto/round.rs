//! One round of Punto (docs/rules/punto.md §5–§8): the decks as dealt, the turn (reveal,
//! deadlock on an empty deck or a card with no legal cell, place), the end
//! by a winning row or a deadlock, the deadlock tie-breaks (§7.3), the card
//! the winner removes (§8.1), who begins the next round (§8.3), and the
//! result a finished round reports (§8.4).

use super::card::{Card, CardCounts};
use super::table::{Cell, Row, Table};
use super::{Configuration, Refusal, Side};
use crate::games::Seat;

/// Most cards a deck can hold: 36 (two colours, or one colour and all 18
/// neutral cards).
pub const MAX_DECK: usize = 36;

/// A seat's deck for one round (docs/rules/punto.md §3.2): the cards as dealt, top
/// first, and how many have been taken off it. Its `Debug` form shows the
/// size only: the order is secret (§11).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Deck {
    cards: [Card; MAX_DECK],
    len: u8,
    drawn: u8,
}

impl std::fmt::Debug for Deck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Deck({} cards)", self.size())
    }
}

impl Deck {
    /// An empty deck.
    pub const EMPTY: Deck = Deck {
        cards: [Card::FILLER; MAX_DECK],
        len: 0,
        drawn: 0,
    };

    /// The deck of `cards`, top first (at most 36 are kept).
    pub fn of(cards: &[Card]) -> Deck {
        let mut deck = Deck::EMPTY;
        let n = cards.len().min(MAX_DECK);
        deck.cards[..n].copy_from_slice(&cards[..n]);
        deck.len = n as u8;
        deck
    }

    /// The cards still in it, top first (secret until the match ends,
    /// docs/rules/punto.md §11).
    pub fn remaining(&self) -> &[Card] {
        &self.cards[usize::from(self.drawn)..usize::from(self.len)]
    }

    /// Every card it was dealt, top first.
    pub fn dealt(&self) -> &[Card] {
        &self.cards[..usize::from(self.len)]
    }

    /// How many cards are still in it.
    pub fn size(&self) -> usize {
        usize::from(self.len - self.drawn)
    }

    /// Which cards are still in it, without their order (public, §11).
    pub fn contents(&self) -> CardCounts {
        CardCounts::of_cards(self.remaining())
    }

    /// Takes the top card off (docs/rules/punto.md §5.2 step 2).
    fn draw(&mut self) -> Option<Card> {
        let card = *self.remaining().first()?;
        self.drawn += 1;
        Some(card)
    }
}

/// Why a round ended in a deadlock (docs/rules/punto.md §7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeadlockCause {
    /// The mover's deck was empty.
    DeckEmpty,
    /// The revealed card had no legal cell.
    NoPlacement,
}

impl DeadlockCause {
    /// `DECK_EMPTY` or `NO_PLACEMENT`.
    pub const fn name(self) -> &'static str {
        match self {
            DeadlockCause::DeckEmpty => "DECK_EMPTY",
            DeadlockCause::NoPlacement => "NO_PLACEMENT",
        }
    }
}

/// How a round ended, before it is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoundEnd {
    /// `placer` made a winning row with the card it put on `cell` (§6).
    Row {
        /// Who placed the winning card.
        placer: Seat,
        /// Where.
        cell: Cell,
    },
    /// `stuck` could not play (§7.1).
    Deadlock {
        /// The seat whose turn it was.
        stuck: Seat,
        /// Its revealed card, not placed (none when its deck was empty).
        revealed: Option<Card>,
        /// Why it could not play.
        cause: DeadlockCause,
    },
}

/// `ROW` or `DEADLOCK` (docs/rules/punto.md §8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoundKind {
    /// A winning row ended the round.
    Row,
    /// A deadlock ended it.
    Deadlock,
}

impl RoundKind {
    /// `ROW` or `DEADLOCK`.
    pub const fn name(self) -> &'static str {
        match self {
            RoundKind::Row => "ROW",
            RoundKind::Deadlock => "DEADLOCK",
        }
    }
}

/// The tie-break step that decided a deadlocked round (docs/rules/punto.md §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TieBreak {
    /// Step 1: most deadlock rows.
    Count,
    /// Step 2: lowest sorted totals.
    Total,
}

impl TieBreak {
    /// `COUNT` or `TOTAL`.
    pub const fn name(self) -> &'static str {
        match self {
            TieBreak::Count => "COUNT",
            TieBreak::Total => "TOTAL",
        }
    }
}

/// One side's deadlock rows (docs/rules/punto.md §7.3, §8.4): how many, and their
/// totals in ascending order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SideRows {
    /// The side.
    pub side: Side,
    /// How many deadlock rows it shows.
    pub count: u32,
    /// Their totals, ascending.
    pub totals: Vec<u32>,
}

/// What a deadlock reports (docs/rules/punto.md §8.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Deadlock {
    /// The seat that could not play.
    pub stuck: Seat,
    /// Its revealed card (none when its deck was empty).
    pub revealed: Option<Card>,
    /// `DECK_EMPTY` or `NO_PLACEMENT`.
    pub cause: DeadlockCause,
    /// Every side's deadlock rows, side order.
    pub sides: Vec<SideRows>,
    /// The step that decided it; none when drawn.
    pub decided_by: Option<TieBreak>,
}

/// A finished round, with everything docs/rules/punto.md §8.4 lists.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RoundOutcome {
    /// The round number (1, 2, …).
    pub round: u32,
    /// `ROW` or `DEADLOCK`.
    pub kind: RoundKind,
    /// The side that won it; none for a drawn round.
    pub winner: Option<Side>,
    /// The card the winner removed from the match (§8.1); none when drawn.
    pub removed: Option<Card>,
    /// The winning rows (`ROW`) or the winner's deadlock rows, sorted as
    /// §8.4 says.
    pub rows: Vec<Row>,
    /// For `ROW`: the seat that placed the winning card.
    pub placed_by: Option<Seat>,
    /// For `DEADLOCK`: who was stuck, why, and how it was decided.
    pub deadlock: Option<Deadlock>,
    /// The first seat of the next round; none when the match is over.
    pub next_first: Option<Seat>,
}

/// A placement as the round applied it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Placement {
    /// Who placed it.
    pub seat: Seat,
    /// The card (the mover's revealed card).
    pub card: Card,
    /// Where.
    pub cell: Cell,
    /// The top card it covered, if the cell was occupied.
    pub covered: Option<Card>,
}

/// A round in play or finished (docs/rules/punto.md §5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Round {
    number: u32,
    configuration: Configuration,
    table: Table,
    decks: [Deck; 4],
    first: Seat,
    mover: Seat,
    revealed: Option<Card>,
    placements: u32,
    end: Option<RoundEnd>,
}

impl Round {
    /// Round `number` with these decks (top first, one per seat) and
    /// `first` to play; its first turn begins at once (docs/rules/punto.md §5.1).
    pub fn new(
        number: u32,
        configuration: Configuration,
        decks: &[Vec<Card>],
        first: Seat,
    ) -> Round {
        Round::arranged(number, configuration, Table::new(), decks, first)
    }

    /// A round already under way on `table` (built by hand: puzzles,
    /// tests), with these decks and `first` to play now; its turn begins at
    /// once, so it may be over before any placement (§7.1).
    pub fn arranged(
        number: u32,
        configuration: Configuration,
        table: Table,
        decks: &[Vec<Card>],
        first: Seat,
    ) -> Round {
        let mut round = Round {
            number,
            configuration,
            table,
            decks: [Deck::EMPTY; 4],
            first,
            mover: first,
            revealed: None,
            placements: 0,
            end: None,
        };
        for (deck, cards) in round.decks.iter_mut().zip(decks) {
            *deck = Deck::of(cards);
        }
        round.begin_turn(first);
        round
    }

    /// The round number.
    pub const fn number(&self) -> u32 {
        self.number
    }

    /// The table.
    pub const fn table(&self) -> &Table {
        &self.table
    }

    /// Seat `seat`'s deck.
    pub fn deck(&self, seat: Seat) -> &Deck {
        &self.decks[seat.index() % 4]
    }

    /// The seat that began the round.
    pub const fn first(&self) -> Seat {
        self.first
    }

    /// Whose turn it is, while the round goes on.
    pub fn mover(&self) -> Option<Seat> {
        self.end.is_none().then_some(self.mover)
    }

    /// The mover's revealed card, while the round goes on; at a deadlock,
    /// the stuck seat's unplaced card.
    pub const fn revealed(&self) -> Option<Card> {
        self.revealed
    }

    /// How many cards were placed.
    pub const fn placements(&self) -> u32 {
        self.placements
    }

    /// How the round ended, once it has.
    pub const fn end(&self) -> Option<RoundEnd> {
        self.end
    }

    /// Steps 1–3 of a turn (docs/rules/punto.md §5.2): deadlock on an empty deck,
    /// reveal the top card, deadlock when it has no legal cell.
    fn begin_turn(&mut self, seat: Seat) {
        self.mover = seat;
        let Some(card) = self.decks[seat.index() % 4].draw() else {
            self.revealed = None;
            self.end = Some(RoundEnd::Deadlock {
                stuck: seat,
                revealed: None,
                cause: DeadlockCause::DeckEmpty,
            });
            return;
        };
        self.revealed = Some(card);
        if !self.table.has_legal_cell(card) {
            self.end = Some(RoundEnd::Deadlock {
                stuck: seat,
                revealed: Some(card),
                cause: DeadlockCause::NoPlacement,
            });
        }
    }

    /// Whether the revealed card may go on `cell` (docs/rules/punto.md §5.3 orders 3–6);
    /// the card it would cover. A finished round refuses everything with
    /// `MATCH_OVER`: a match never waits on a finished round (§9.3).
    pub fn check(&self, cell: Cell) -> Result<Option<Card>, Refusal> {
        match (self.end, self.revealed) {
            (None, Some(card)) => self.table.check(cell, card),
            _ => Err(Refusal::MatchOver),
        }
    }

    /// The legal cells of the revealed card, sorted (docs/rules/punto.md §5.3); none
    /// once the round is over.
    pub fn legal_cells(&self) -> super::table::CellList {
        match (self.end, self.revealed) {
            (None, Some(card)) => self.table.legal_cells(card),
            _ => super::table::CellList::empty(),
        }
    }

    /// Steps 4–6 of a turn (docs/rules/punto.md §5.2): puts the revealed card on
    /// `cell`, ends the round on a winning row (§6), else begins the next
    /// seat's turn (which may deadlock, §7.1).
    pub fn place(&mut self, cell: Cell) -> Result<Placement, Refusal> {
        let covered = self.check(cell)?;
        let (seat, card) = match self.revealed {
            Some(card) => (self.mover, card),
            None => return Err(Refusal::MatchOver),
        };
        if !self.table.put(cell, card) {
            // `check` accepted the cell, so it lies on the table.
            return Err(Refusal::OutsideArea);
        }
        self.placements += 1;
        self.revealed = None;
        let configuration = self.configuration;
        if self
            .table
            .makes_row(cell, configuration.row_length(), configuration.neutral())
        {
            self.end = Some(RoundEnd::Row { placer: seat, cell });
        } else {
            self.begin_turn(seat.next(configuration.seats()));
        }
        Ok(Placement {
            seat,
            card,
            cell,
            covered,
        })
    }

    /// The green cards each seat keeps at the end of the round (docs/rules/punto.md
    /// §3.3): those left in its deck, and an unplaced revealed one.
    pub fn neutral_kept(&self) -> [CardCounts; 4] {
        let mut kept = [CardCounts::EMPTY; 4];
        let Some(neutral) = self.configuration.neutral() else {
            return kept;
        };
        for (seat, deck) in self.decks.iter().enumerate() {
            kept[seat] = deck.contents().only(neutral);
        }
        if let (Some(card), Some(seat)) = (self.revealed, self.revealed_holder())
            && card.colour() == neutral
        {
            kept[seat.index() % 4].add(card);
        }
        kept
    }

    /// Who holds the revealed card: the mover while the round goes on, the
    /// stuck seat at a deadlock.
    fn revealed_holder(&self) -> Option<Seat> {
        match self.end {
            None => Some(self.mover),
            Some(RoundEnd::Deadlock { stuck, .. }) => Some(stuck),
            Some(RoundEnd::Row { .. }) => None,
        }
    }

    /// The rows that decide the round and the winner's side index: the
    /// winning rows (§6), or the deadlock rows and the tie-break (§7.3).
    pub fn score(&self) -> Option<Scored> {
        let configuration = self.configuration;
        let neutral = configuration.neutral();
        match self.end? {
            RoundEnd::Row { placer, cell } => {
                let rows = self
                    .table
                    .winning_rows(cell, configuration.row_length(), neutral);
                // §6: the side owning the row's colour (the placed card's).
                let owner = self
                    .table
                    .top(cell)
                    .and_then(|card| configuration.owner(card.colour()));
                Some(Scored {
                    winner: owner.or(Some(configuration.side_index(placer))),
                    rows,
                    deadlock: None,
                })
            }
            RoundEnd::Deadlock {
                stuck,
                revealed,
                cause,
            } => {
                let all = self
                    .table
                    .deadlock_rows(configuration.row_length() - 1, neutral);
                let (winner, sides, decided_by) = decide_deadlock(configuration, &all);
                let rows = all
                    .into_iter()
                    .filter(|row| winner.is_some() && configuration.owner(row.colour) == winner)
                    .collect();
                Some(Scored {
                    winner,
                    rows,
                    deadlock: Some(Deadlock {
                        stuck,
                        revealed,
                        cause,
                        sides,
                        decided_by,
                    }),
                })
            }
        }
    }
}

/// A finished round scored: the winner's side index, the rows that count
/// for the removal, and the deadlock report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    /// The winning side's index; none when drawn.
    pub winner: Option<usize>,
    /// The winning rows, or the winner's deadlock rows.
    pub rows: Vec<Row>,
    /// For a deadlock: what §8.4 reports of it.
    pub deadlock: Option<Deadlock>,
}

/// Who wins a deadlocked round (docs/rules/punto.md §7.3): the winner's side index
/// (none when drawn), each side's rows, and the deciding step.
pub fn decide_deadlock(
    configuration: Configuration,
    rows: &[Row],
) -> (Option<usize>, Vec<SideRows>, Option<TieBreak>) {
    let sides: Vec<SideRows> = (0..configuration.sides())
        .map(|side| {
            let mut totals: Vec<u32> = rows
                .iter()
                .filter(|row| configuration.owner(row.colour) == Some(side))
                .map(|row| row.total)
                .collect();
            totals.sort_unstable();
            SideRows {
                side: configuration.side(side),
                count: totals.len() as u32,
                totals,
            }
        })
        .collect();
    // Step 1: most rows; no row at all draws (step 3).
    let most = sides.iter().map(|s| s.count).max().unwrap_or(0);
    if most == 0 {
        return (None, sides, None);
    }
    let leaders: Vec<usize> = (0..sides.len())
        .filter(|&i| sides[i].count == most)
        .collect();
    if let [only] = leaders[..] {
        return (Some(only), sides, Some(TieBreak::Count));
    }
    // Step 2: the lowest sorted totals, element by element.
    let best = leaders.iter().map(|&i| &sides[i].totals).min();
    let lowest: Vec<usize> = leaders
        .iter()
        .copied()
        .filter(|&i| Some(&sides[i].totals) == best)
        .collect();
    match lowest[..] {
        [only] => (Some(only), sides, Some(TieBreak::Total)),
        // Step 3: identical lists draw.
        _ => (None, sides, None),
    }
}

/// The card the winner removes (docs/rules/punto.md §8.1): the highest value among
/// the top cards of `rows`; between two colours, the first in colour order.
pub fn removed_card(table: &Table, rows: &[Row]) -> Option<Card> {
    rows.iter()
        .flat_map(|row| row.cells())
        .filter_map(|cell| table.top(cell))
        .max_by(|a, b| {
            a.value()
                .cmp(&b.value())
                .then_with(|| b.colour().cmp(&a.colour()))
        })
}

/// The first seat of the next round (docs/rules/punto.md §8.3).
pub fn next_first_seat(
    configuration: Configuration,
    round_first: Seat,
    end: RoundEnd,
    winner: Option<usize>,
) -> Seat {
    let seats = configuration.seats();
    match (end, winner) {
        // After a winning row: the seat after the placer.
        (RoundEnd::Row { placer, .. }, _) => placer.next(seats),
        // After a deadlock win: the seat after the winning side's (lower)
        // seat.
        (RoundEnd::Deadlock { .. }, Some(side)) => configuration.lower_seat(side).next(seats),
        // After a drawn round: the seat after the drawn round's first seat.
        (RoundEnd::Deadlock { .. }, None) => round_first.next(seats),
    }
}

/// The seat the next neutral deal starts with (docs/rules/punto.md §3.3, §8.3): the
/// placer of the winning card, the deadlock's winning seat, or after a
/// drawn round the next round's first seat.
pub fn neutral_dealer(
    configuration: Configuration,
    end: RoundEnd,
    winner: Option<usize>,
    next_first: Seat,
) -> Seat {
    match (end, winner) {
        (RoundEnd::Row { placer, .. }, _) => placer,
        (RoundEnd::Deadlock { .. }, Some(side)) => configuration.lower_seat(side),
        (RoundEnd::Deadlock { .. }, None) => next_first,
    }
}
