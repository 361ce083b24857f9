//! The greedy bot of Punto. It sees only what its own seat sees: the state
//! its seat's `GetGame` returns (the runner reads it with the seat's token
//! and passes it in [`Turn::state`]), that is the table, the revealed card,
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

use super::{Answer, BotError, BuiltinBot, Turn};
use crate::games::Seat;
use crate::games::punto::{Card, Cell, Colour, Configuration, Step, Table};
use crate::service::grpc::pb::punto::v1 as tpb;
use crate::service::grpc::pb::referee::v1 as pb;

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

impl View {
    /// The view in a Punto state from the wire, if it is one with a mover.
    pub fn of_wire(state: &pb::GameState) -> Result<View, String> {
        let Some(pb::game_state::Game::Punto(state)) = &state.game else {
            return Err("not a Punto state".into());
        };
        let rules = state.rules.clone().unwrap_or_default();
        let configuration =
            Configuration::of(rules.players, rules.team).map_err(|e| e.to_string())?;
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
}

/// A card from the wire, by its text (`R7`).
fn card_of(card: Option<&tpb::Card>) -> Option<Card> {
    card?.text.parse().ok()
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

impl BuiltinBot for PuntoGreedyBot {
    fn choose(&mut self, turn: &Turn<'_>) -> Result<Answer, BotError> {
        let state = turn
            .state
            .ok_or_else(|| BotError::Desync("no state of the bot's own seat".into()))?;
        let view = View::of_wire(state).map_err(BotError::Desync)?;
        let cells: Vec<Cell> = turn.legal.iter().filter_map(|t| cell_of(t)).collect();
        if cells.is_empty() {
            return Err(BotError::NoMoves);
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
            return Ok(Answer::Move(cell.to_string()));
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
        Ok(Answer::Move(
            self.best(&choices).unwrap_or(cells[0]).to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn wire_card(c: &Card) -> tpb::Card {
        tpb::Card {
            text: c.to_string(),
            ..Default::default()
        }
    }

    /// The wire state of `view`, as a seat's GetGame gives it.
    fn wire(view: &View) -> pb::GameState {
        let stacks = view
            .table
            .occupied()
            .map(|(cell, stack)| tpb::Stack {
                cell: Some(tpb::Cell {
                    x: cell.x,
                    y: cell.y,
                }),
                cards: stack.cards().iter().map(wire_card).collect(),
            })
            .collect();
        let seats = view.configuration.seats();
        pb::GameState {
            game: Some(pb::game_state::Game::Punto(tpb::GameState {
                rules: Some(tpb::RuleOptions {
                    players: seats as u32,
                    team: view.configuration.is_team(),
                    ..Default::default()
                }),
                mover: view.mover.number(),
                revealed: Some(wire_card(&view.card)),
                table: Some(tpb::Table {
                    stacks,
                    bounds: None,
                }),
                decks: vec![tpb::Deck {
                    seat: view.mover.next(seats).number(),
                    size: view.next_deck.len() as u32,
                    contents: view.next_deck.iter().map(wire_card).collect(),
                    ..Default::default()
                }],
                ..Default::default()
            })),
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
        let state = wire(view);
        let turn = Turn {
            game_id: "g",
            ply: 0,
            seat: "red",
            history: &[],
            legal: &legal,
            clock_ms: None,
            state: Some(&state),
        };
        match bot.choose(&turn).unwrap() {
            Answer::Move(m) => m,
            Answer::Resign => panic!("resigned"),
        }
    }

    #[test]
    fn the_wire_state_reads_back_as_the_view() {
        let v = view(
            0,
            card(Red, 2),
            &[(0, 0, card(Red, 5)), (0, 0, card(Blue, 7))],
            &[card(Orange, 3), card(Orange, 3), card(Green, 1)],
        );
        let read = View::of_wire(&wire(&v)).unwrap();
        assert_eq!(read.table, v.table);
        assert_eq!((read.mover, read.card), (v.mover, v.card));
        assert_eq!(read.next_deck, v.next_deck);
        assert!(View::of_wire(&pb::GameState::default()).is_err());
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
        let turn = Turn {
            game_id: "g",
            ply: 1,
            seat: "orange",
            history: &[],
            legal: &legal,
            clock_ms: None,
            state: None,
        };
        assert!(matches!(
            PuntoGreedyBot::new(1).choose(&turn),
            Err(BotError::Desync(_))
        ));
    }
}
