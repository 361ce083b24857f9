//! A match: placements, rounds, the deal and the end (docs/rules/punto.md §5–§10).

use super::*;
use crate::games::Seat;

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
pub enum EndReason {
    /// A side won `rounds_to_win` rounds (§9.1).
    RoundsWon,
    /// `max_rounds` rounds were played (§9.2).
    RoundLimit,
}

impl EndReason {
    /// `ROUNDS_WON` or `ROUND_LIMIT`.
    pub const fn name(self) -> &'static str {
        match self {
            EndReason::RoundsWon => "ROUNDS_WON",
            EndReason::RoundLimit => "ROUND_LIMIT",
        }
    }
}

/// The end of a match on the board (§9).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// The winning side; none for a drawn match.
    pub winner: Option<Side>,
    /// Why it ended.
    pub reason: EndReason,
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
    pub round_result: Option<RoundOutcome>,
    /// The next revealed card: the next seat's, or the first of the next
    /// round (§9.3); none when the match is over.
    pub next: Option<Revealed>,
    /// The match's end, if this placement ended it.
    pub outcome: Option<Outcome>,
}

/// A Punto match (§9): its options, the key of its shuffles, the round in
/// play and the finished ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    options: RuleOptions,
    key: Key,
    round: Round,
    results: Vec<RoundOutcome>,
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
    outcome: Option<Outcome>,
}

/// A match's state before a move, to take the move back
/// ([`Engine::mark`]). Its `Debug` form, like the round's, shows no deck's
/// order.
#[derive(Debug, Clone)]
pub struct Mark {
    round: Round,
    results: usize,
    wins: [u32; 4],
    in_match: CardCounts,
    removed: usize,
    neutral_dealt: [CardCounts; 4],
    last_table: Option<Table>,
    history: usize,
    outcome: Option<Outcome>,
}

impl Engine {
    /// A match of `options` shuffled from `seed` (§10): round 1 dealt and
    /// seat 1's first card revealed (§5.1, §13.2).
    pub fn new(options: RuleOptions, seed: &[u8; 32]) -> Engine {
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
        Engine {
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
    pub fn results(&self) -> &[RoundOutcome] {
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
    pub const fn outcome(&self) -> Option<&Outcome> {
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
    /// its order (orders 1 and 3–6; order 2 is [`Engine::check_text`]'s).
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

    /// What a move may change, kept to take it back
    /// ([`Engine::take_back`]): the round in play (its table and decks, no
    /// allocation), the last table and the match's counts; of what grows
    /// with the match, only its lengths.
    pub fn mark(&self) -> Mark {
        Mark {
            round: self.round.clone(),
            results: self.results.len(),
            wins: self.wins,
            in_match: self.in_match,
            removed: self.removed.len(),
            neutral_dealt: self.neutral_dealt,
            last_table: self.last_table.clone(),
            history: self.history.len(),
            outcome: self.outcome.clone(),
        }
    }

    /// Takes back what was played since `mark` was taken: the match is
    /// exactly as it was then.
    pub fn take_back(&mut self, mark: Mark) {
        self.round = mark.round;
        self.results.truncate(mark.results);
        self.wins = mark.wins;
        self.in_match = mark.in_match;
        self.removed.truncate(mark.removed);
        self.neutral_dealt = mark.neutral_dealt;
        self.last_table = mark.last_table;
        self.history.truncate(mark.history);
        self.outcome = mark.outcome;
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
    fn finish_round(&mut self) -> RoundOutcome {
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
        let result = RoundOutcome {
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
    fn match_outcome(&self) -> Option<Outcome> {
        let configuration = self.configuration();
        let wins = self.wins().to_vec();
        if let Some(side) = wins.iter().position(|&w| w >= self.options.rounds_to_win()) {
            return Some(Outcome {
                winner: Some(configuration.side(side)),
                reason: EndReason::RoundsWon,
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
        Some(Outcome {
            winner: match leaders[..] {
                [only] => Some(configuration.side(only)),
                _ => None,
            },
            reason: EndReason::RoundLimit,
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
