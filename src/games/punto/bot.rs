//! The greedy bot of Punto. It sees only what its own seat sees: the state
//! its seat's `GetGame` returns (the runner reads it with the seat's token,
//! Punto's wire file reads it as a [`View`], passed in [`BotTurn::view`]),
//! that is the table, the revealed card,
//! who plays which colours and each deck's contents; never the seed or a
//! deck's order (docs/rules/punto.md §11). For each legal cell it tries the revealed
//! card there, on a copy of the table, and plays, in order of preference:
//!
//! 1. a cell that makes a row of its own colour (`L` or more in a line,
//!    docs/rules/punto.md §6): the round is won;
//! 2. else, when the next seat could make a row with its next card, a cell
//!    that leaves it the fewest such cards: its *threat* is how many cards
//!    of its deck (whose contents are public; its next card is one of them)
//!    would make a row somewhere;
//! 3. else a cell that extends its own longest line the most (the line of
//!    the card's colour through the cell), then leaves the next seat the
//!    longest line it could reach the shortest.
//!
//! Ties are broken by a seeded generator, so a game is reproducible. A
//! turn tries at most 49 cells, and for each at most 18 kinds of card of
//! the next seat on at most 49 cells: a few milliseconds at worst.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng};

use crate::games::punto::{Card, Cell, Colour, Configuration, Step, Table};
use crate::games::{BotFailure, BotTurn, Seat, Strategy};

/// Makes a row, else blocks the next seat's, else grows its own.
pub struct PuntoGreedyBot {
    rng: StdRng,
}

impl PuntoGreedyBot {
    /// A bot whose ties are broken by `seed`.
    pub fn new(seed: u64) -> PuntoGreedyBot {
        PuntoGreedyBot {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// One of the `cells` with the greatest score (the first field, then
    /// the second), at random among equals.
    fn best(&mut self, cells: &[(Cell, (i32, i32))]) -> Option<Cell> {
        let top = cells.iter().map(|&(_, s)| s).max()?;
        let best: Vec<Cell> = cells
            .iter()
            .filter(|&&(_, s)| s == top)
            .map(|&(c, _)| c)
            .collect();
        Some(best[self.rng.random_range(0..best.len())])
    }
}

/// What the bot reads of its seat's view of the match.
#[derive(Debug, Clone)]
pub struct View {
    /// Who plays (and so who owns which colours).
    pub configuration: Configuration,
    /// The seat to move: the bot's.
    pub mover: Seat,
    /// Its revealed card.
    pub card: Card,
    /// The table of the round in play.
    pub table: Table,
    /// The next seat's deck, its contents (one entry per copy).
    pub next_deck: Vec<Card>,
}

/// The line of `colour` along `step` through `cell`, counting `cell` as if
/// it showed `colour` (the cells around it as they are).
fn line(table: &Table, cell: Cell, step: Step, colour: Colour) -> i32 {
    let run = |dir: i32| {
        (1..6)
            .take_while(|&i| table.top(cell.along(step, dir * i)).map(Card::colour) == Some(colour))
            .count() as i32
    };
    1 + run(-1) + run(1)
}

/// The longest line of `colour` through `cell` (as if it showed it).
fn longest_through(table: &Table, cell: Cell, colour: Colour) -> i32 {
    Step::ALL
        .iter()
        .map(|&step| line(table, cell, step, colour))
        .max()
        .unwrap_or(0)
}

/// The longest line `card` could make on `table`, on any cell it may go to
/// (0 for a neutral card, which makes no line).
fn best_line(table: &Table, card: Card, neutral: Option<Colour>) -> i32 {
    if Some(card.colour()) == neutral {
        return 0;
    }
    table
        .legal_cells(card)
        .as_slice()
        .iter()
        .map(|&cell| longest_through(table, cell, card.colour()))
        .max()
        .unwrap_or(0)
}

/// What the next seat could do after a move leaving `table`: how many cards
/// of its `deck` would make a row (its threat), and the longest line its
/// best card could reach.
fn answers(table: &Table, deck: &[Card], length: u8, neutral: Option<Colour>) -> (i32, i32) {
    let mut threat = 0;
    let mut longest = 0;
    let mut kinds: Vec<(Card, i32)> = Vec::new();
    for &card in deck {
        match kinds.iter_mut().find(|(c, _)| *c == card) {
            Some((_, n)) => *n += 1,
            None => kinds.push((card, 1)),
        }
    }
    for (card, copies) in kinds {
        let line = best_line(table, card, neutral);
        longest = longest.max(line);
        if line >= i32::from(length) {
            threat += copies;
        }
    }
    (threat, longest)
}

/// The cell a legal move in notation names.
fn cell_of(text: &str) -> Option<Cell> {
    crate::games::punto::notation::parse_cell(text).ok()
}

impl Strategy for PuntoGreedyBot {
    fn choose(&mut self, turn: &BotTurn<'_>) -> Result<String, BotFailure> {
        let view = turn
            .view
            .and_then(|v| v.get::<View>())
            .ok_or_else(|| BotFailure::Desync("no state of the bot's own seat".into()))?;
        let cells: Vec<Cell> = turn.legal.iter().filter_map(|t| cell_of(t)).collect();
        if cells.is_empty() {
            return Err(BotFailure::NoMoves);
        }
        let configuration = view.configuration;
        let neutral = configuration.neutral();
        let length = configuration.row_length();
        let colour = view.card.colour();
        let tried: Vec<(Cell, Table)> = cells
            .iter()
            .map(|&cell| {
                let mut table = view.table.clone();
                table.put(cell, view.card);
                (cell, table)
            })
            .collect();
        // 1. A row of its own: the card is the mover's (or neutral, which
        // makes none).
        let rows: Vec<(Cell, (i32, i32))> = tried
            .iter()
            .filter(|(cell, table)| table.makes_row(*cell, length, neutral))
            .map(|(cell, _)| (*cell, (0, 0)))
            .collect();
        if let Some(cell) = self.best(&rows) {
            return Ok(cell.to_string());
        }
        let deck = &view.next_deck;
        let (threat, _) = answers(&view.table, deck, length, neutral);
        let scored: Vec<(Cell, (i32, i32), i32)> = tried
            .iter()
            .map(|(cell, table)| {
                let own = if Some(colour) == neutral {
                    0
                } else {
                    longest_through(table, *cell, colour)
                };
                (*cell, answers(table, deck, length, neutral), own)
            })
            .collect();
        let least = scored.iter().map(|&(_, (t, _), _)| t).min().unwrap_or(0);
        let choices: Vec<(Cell, (i32, i32))> = if threat > 0 && least < threat {
            // 2. Block: the fewest winning cards left to the next seat.
            scored
                .iter()
                .map(|&(cell, (t, _), own)| (cell, (-t, own)))
                .collect()
        } else {
            // 3. Grow: its own longest line, then the next seat's shortest.
            scored
                .iter()
                .map(|&(cell, (t, longest), own)| (cell, (own - 8 * t, -longest)))
                .collect()
        };
        Ok(self.best(&choices).unwrap_or(cells[0]).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::Opaque;
    use crate::games::punto::Colour::{Blue, Green, Orange, Red};

    fn card(colour: Colour, value: u8) -> Card {
        Card::new(colour, value).unwrap()
    }

    /// A 3-player view: seat `mover` to place `held` on `cards`, the next
    /// seat holding `next_deck`.
    fn view(mover: usize, held: Card, cards: &[(i32, i32, Card)], next_deck: &[Card]) -> View {
        let mut table = Table::new();
        for &(x, y, c) in cards {
            assert!(table.put(Cell::new(x, y), c));
        }
        View {
            configuration: Configuration::ThreePlayers,
            mover: Seat::new(mover).unwrap(),
            card: held,
            table,
            next_deck: next_deck.to_vec(),
        }
    }

    fn answer(bot: &mut PuntoGreedyBot, view: &View) -> String {
        let legal: Vec<String> = view
            .table
            .legal_cells(view.card)
            .as_slice()
            .iter()
            .map(Cell::to_string)
            .collect();
        let state = Opaque::new(view.clone());
        let turn = BotTurn {
            history: &[],
            legal: &legal,
            clock_ms: None,
            view: Some(&state),
        };
        bot.choose(&turn).unwrap()
    }

    #[test]
    fn makes_its_row_when_it_can() {
        // Red holds R2: 0,0 1,0 2,0 are red, 3,0 or -1,0 make a row of 4.
        let v = view(
            0,
            card(Red, 2),
            &[
                (0, 0, card(Red, 5)),
                (1, 0, card(Red, 6)),
                (2, 0, card(Red, 7)),
                (0, 1, card(Orange, 3)),
            ],
            &[card(Orange, 9)],
        );
        for seed in 1..=4 {
            let row = answer(&mut PuntoGreedyBot::new(seed), &v);
            assert!(["-1,0", "3,0"].contains(&row.as_str()), "{row}");
        }
    }

    #[test]
    fn blocks_the_next_seats_row_then_grows_its_own() {
        // Orange (seat 2, next after red) has three 9s in a column at
        // x = 0, its lower end closed by blue: red's neutral G9 must take
        // the upper end, the one cell where orange would make its row.
        let column = [
            (0, 0, card(Orange, 9)),
            (0, 1, card(Orange, 9)),
            (0, 2, card(Orange, 9)),
            (0, -1, card(Blue, 9)),
        ];
        let v = view(
            0,
            card(Green, 9),
            &column,
            &[card(Orange, 1), card(Green, 4)],
        );
        assert_eq!(answer(&mut PuntoGreedyBot::new(1), &v), "0,3");
        // Orange's line of 3s, with O2 and O4 left: both would make its
        // row at 0,3. Red's R5 on the line or on 0,3 leaves neither card a
        // row (neither can cover a 5).
        let low = [
            (0, 0, card(Orange, 3)),
            (0, 1, card(Orange, 3)),
            (0, 2, card(Orange, 3)),
            (0, -1, card(Blue, 9)),
        ];
        let deck = [card(Orange, 2), card(Orange, 4)];
        let v = view(0, card(Red, 5), &low, &deck);
        let blocked = answer(&mut PuntoGreedyBot::new(3), &v);
        let mut table = v.table.clone();
        table.put(cell_of(&blocked).unwrap(), v.card);
        assert_eq!(answers(&v.table, &deck, 4, Some(Green)).0, 2);
        assert_eq!(answers(&table, &deck, 4, Some(Green)).0, 0, "{blocked}");
        // Nothing to block: it grows its own line of two to three.
        let v = view(
            0,
            card(Red, 4),
            &[(0, 0, card(Red, 3)), (1, 0, card(Red, 5))],
            &[card(Orange, 1)],
        );
        let grown = answer(&mut PuntoGreedyBot::new(4), &v);
        assert!(["-1,0", "2,0"].contains(&grown.as_str()), "{grown}");
    }

    #[test]
    fn same_seed_same_choices_and_a_missing_state_is_refused() {
        let v = view(
            1,
            card(Orange, 5),
            &[(0, 0, card(Red, 3))],
            &[card(Blue, 2)],
        );
        let picks = |seed| {
            let mut bot = PuntoGreedyBot::new(seed);
            (0..8).map(|_| answer(&mut bot, &v)).collect::<Vec<_>>()
        };
        assert_eq!(picks(5), picks(5));
        let legal = vec!["1,0".to_string()];
        let turn = BotTurn {
            history: &[],
            legal: &legal,
            clock_ms: None,
            view: None,
        };
        assert!(matches!(
            PuntoGreedyBot::new(1).choose(&turn),
            Err(BotFailure::Desync(_))
        ));
    }
}
