//! Punto's rules, one named test each (`docs/rules/punto.md`): cards, the
//! refusal reasons of §5.3 in their order, legal cells, the floating area on
//! both axes, covering, rows in all four directions, overlines, double rows,
//! neutral rows, each deadlock cause and tie-break step, the removed card,
//! the next first seat, the match's ends, the §14 test vectors bit for bit,
//! the §12 record (leniency, strictness, every replay check), and the
//! `Game` face (seats, outcomes, referee endings, what viewers see). Only
//! `punct_referee::games` is used: nothing here starts a server.

use punct_referee::games::punto::deal::{self, Key, Label};
use punct_referee::games::punto::record::{Record, StatedOutcome};
use punct_referee::games::punto::referee::{
    PuntoMoveInfo, PuntoMoveInput, PuntoState, import, notation,
};
use punct_referee::games::punto::round::{self as round_rules, Scored};
use punct_referee::games::punto::{
    Card, CardCounts, Cell, Colour, Configuration, DeadlockCause, EndReason, Engine, Refusal,
    Round, RoundEnd, RoundKind, RuleOptions, Side, Step, Table, Team, TieBreak, render,
};
use punct_referee::games::{
    Game, GameRules, MoveError, MoveInput, RefereeAction, Rules, Seat, SeatSet, Setup, Viewer, hex,
    punto,
};

// --- Helpers ---------------------------------------------------------------

fn card(text: &str) -> Card {
    text.parse().expect("a card")
}

fn cards(text: &str) -> Vec<Card> {
    text.split_whitespace().map(card).collect()
}

fn seat(number: u32) -> Seat {
    Seat::from_number(number).expect("a seat")
}

/// A table of top cards at the given cells (one card each).
fn table(placed: &[(i32, i32, &str)]) -> Table {
    let mut table = Table::new();
    for &(x, y, c) in placed {
        assert!(table.put(Cell::new(x, y), card(c)));
    }
    table
}

/// A table written as docs/rules/punto.md §7.5 prints one (`..` for an empty cell).
fn grid(text: &str) -> Table {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<i32> = lines
        .next()
        .expect("a header")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().expect("a column"))
        .collect();
    let mut table = Table::new();
    for line in lines {
        let mut words = line.split_whitespace();
        let y: i32 = words.next().expect("a row").parse().expect("a row number");
        for (&x, word) in header.iter().zip(words) {
            if word != ".." {
                assert!(table.put(Cell::new(x, y), card(word)));
            }
        }
    }
    table
}

/// A round on `table` with these decks (top first), `first` (1-based) to
/// play now.
fn arranged(configuration: Configuration, table: Table, decks: &[&str], first: u32) -> Round {
    let decks: Vec<Vec<Card>> = decks.iter().map(|d| cards(d)).collect();
    Round::arranged(1, configuration, table, &decks, seat(first))
}

fn seed_0_to_31() -> [u8; 32] {
    std::array::from_fn(|i| i as u8)
}

fn setup(seed: [u8; 32]) -> Setup {
    Setup {
        seed,
        supplied: false,
    }
}

fn options(players: u32, team: bool) -> RuleOptions {
    RuleOptions::new(players, team, 2, 0, &[]).expect("valid options")
}

/// A small deterministic RNG for picking moves.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Plays random legal cells until the match is over.
fn play_out(game: &mut Engine, rng: &mut Lcg) {
    while !game.is_over() {
        let legal = game.legal_cells();
        let cell = legal.as_slice()[rng.below(legal.len())];
        game.play(cell).expect("a legal cell plays");
    }
}

fn refusal_of(game: &mut dyn Game, input: &MoveInput) -> &'static str {
    match game.play(input) {
        Err(MoveError::Illegal { reason, .. }) => reason,
        Err(MoveError::Malformed { .. }) => "MALFORMED",
        Ok(report) => panic!("`{}` was accepted", report.detail.notation),
    }
}

fn snapshot(game: &dyn Game) -> PuntoState {
    game.snapshot(Viewer::Spectator)
        .get::<PuntoState>()
        .expect("a Punto snapshot")
        .clone()
}

// --- §2 Cards ----------------------------------------------------------------

#[test]
fn there_are_72_cards_two_copies_of_each_colour_and_value() {
    let all = CardCounts::FULL;
    assert_eq!(all.len(), 72);
    for colour in Colour::ALL {
        for value in 1..=9 {
            assert_eq!(all.count(Card::new(colour, value).unwrap()), 2);
        }
    }
    assert!(Card::new(Colour::Red, 0).is_none() && Card::new(Colour::Red, 10).is_none());
}

#[test]
fn the_canonical_order_sorts_by_colour_order_then_value() {
    let listed: Vec<String> = CardCounts::FULL.iter().map(|c| c.to_string()).collect();
    assert_eq!(&listed[..4], ["R1", "R1", "R2", "R2"]);
    assert_eq!(&listed[18..20], ["O1", "O1"]);
    assert_eq!(&listed[36..38], ["B1", "B1"]);
    assert_eq!(&listed[70..], ["G9", "G9"]);
    let mut shuffled = cards("G1 B9 O5 R7 R2");
    shuffled.sort();
    assert_eq!(shuffled, cards("R2 R7 O5 B9 G1"));
}

#[test]
fn cards_are_written_as_an_upper_case_letter_and_a_value() {
    assert_eq!(card("R7").to_string(), "R7");
    assert_eq!(
        (card("G1").colour(), card("G1").value()),
        (Colour::Green, 1)
    );
    for bad in ["r7", "R0", "R10", "X1", "R", "", " R7", "R7 "] {
        assert!(bad.parse::<Card>().is_err(), "{bad:?}");
    }
}

// --- §3 Seats, sides, decks --------------------------------------------------

#[test]
fn configurations_give_sides_colours_and_row_lengths() {
    use Configuration::*;
    assert_eq!(
        (
            TwoPlayers.seats(),
            TwoPlayers.sides(),
            TwoPlayers.row_length()
        ),
        (2, 2, 5)
    );
    assert_eq!(
        (
            ThreePlayers.seats(),
            ThreePlayers.sides(),
            ThreePlayers.row_length()
        ),
        (3, 3, 4)
    );
    assert_eq!(
        (
            FourPlayers.seats(),
            FourPlayers.sides(),
            FourPlayers.row_length()
        ),
        (4, 4, 4)
    );
    assert_eq!(
        (Teams.seats(), Teams.sides(), Teams.row_length()),
        (4, 2, 5)
    );
    assert_eq!(TwoPlayers.owner(Colour::Blue), Some(0));
    assert_eq!(TwoPlayers.owner(Colour::Green), Some(1));
    assert_eq!(ThreePlayers.owner(Colour::Green), None);
    assert_eq!(ThreePlayers.neutral(), Some(Colour::Green));
    assert_eq!(FourPlayers.owner(Colour::Green), Some(3));
    assert_eq!(Teams.seats_of(0), SeatSet::only(seat(1)).with(seat(3)));
    assert_eq!(Teams.seats_of(1), SeatSet::only(seat(2)).with(seat(4)));
    assert_eq!(Teams.side(1), Side::Team(Team::Two));
}

#[test]
fn options_outside_their_ranges_are_refused() {
    assert!(RuleOptions::new(1, false, 2, 0, &[]).is_err());
    assert!(RuleOptions::new(5, false, 2, 0, &[]).is_err());
    assert_eq!(
        RuleOptions::new(3, true, 2, 0, &[]).unwrap_err().field(),
        "team"
    );
    assert!(RuleOptions::new(2, false, 0, 0, &[]).is_err());
    assert!(RuleOptions::new(2, false, 10, 0, &[]).is_err());
    assert!(RuleOptions::new(2, false, 2, 100, &[]).is_err());
    assert!(RuleOptions::new(2, false, 2, 0, &[0; 65]).is_err());
    let reasons: Vec<&str> = [
        RuleOptions::new(7, false, 2, 0, &[]),
        RuleOptions::new(2, true, 2, 0, &[]),
        RuleOptions::new(2, false, 0, 0, &[]),
        RuleOptions::new(2, false, 2, 100, &[]),
        RuleOptions::new(2, false, 2, 0, &[0; 65]),
    ]
    .iter()
    .map(|r| r.as_ref().map_err(|e| e.reason()).unwrap_err())
    .collect();
    assert_eq!(
        reasons,
        [
            "PLAYERS",
            "TEAM_NEEDS_FOUR",
            "ROUNDS_TO_WIN",
            "MAX_ROUNDS",
            "ENTROPY_TOO_LONG"
        ]
    );
    let max = RuleOptions::new(4, true, 9, 99, &[7; 64]).unwrap();
    assert_eq!(
        (max.rounds_to_win(), max.max_rounds(), max.entropy().len()),
        (9, 99, 64)
    );
}

#[test]
fn round_one_decks_hold_each_seats_cards() {
    let seed = seed_0_to_31();
    let two = Engine::new(options(2, false), &seed);
    let seat1 = two.round().deck(seat(1)).dealt();
    assert_eq!(seat1.len(), 36);
    assert!(
        seat1
            .iter()
            .all(|c| matches!(c.colour(), Colour::Red | Colour::Blue))
    );
    let four = Engine::new(options(4, false), &seed);
    for s in 1..=4 {
        assert_eq!(four.round().deck(seat(s)).dealt().len(), 18);
    }
    let three = Engine::new(options(3, false), &seed);
    for s in 1..=3 {
        let dealt = CardCounts::of_cards(three.round().deck(seat(s)).dealt());
        assert_eq!(dealt.only(Colour::Green).len(), 6, "six neutral cards each");
        assert_eq!(dealt.len(), 24);
    }
}

// --- §5.3 Refusals, in their order ------------------------------------------

#[test]
fn the_first_card_of_a_round_goes_on_the_centre() {
    let mut game = Engine::new(options(2, false), &seed_0_to_31());
    assert_eq!(game.legal_cells().as_slice(), [Cell::CENTRE]);
    for cell in [Cell::new(1, 0), Cell::new(0, -1), Cell::new(40, 0)] {
        assert_eq!(game.check(cell), Err(Refusal::FirstCardNotCenter));
    }
    assert_eq!(
        game.play_text("99999999999999999999,0")
            .map_err(|e| e.reason()),
        Err("FIRST_CARD_NOT_CENTER")
    );
    game.play_text("-0,000").expect("0,0 however written");
}

#[test]
fn a_malformed_move_is_refused_before_any_rule() {
    let mut game = Engine::new(options(2, false), &seed_0_to_31());
    for text in ["", "0", "0,0,0", "+1,0", "1, 0", "a,b", "0;0"] {
        assert_eq!(
            game.play_text(text).map_err(|e| e.reason()),
            Err("MALFORMED"),
            "{text:?}"
        );
    }
    assert_eq!(game.ply(), 0);
}

#[test]
fn outside_area_refuses_a_seventh_column() {
    let t = table(&[
        (0, 0, "R1"),
        (1, 0, "R2"),
        (2, 0, "O3"),
        (3, 0, "O4"),
        (4, 0, "B5"),
        (5, 0, "B6"),
    ]);
    assert_eq!(
        t.check(Cell::new(-1, 0), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(
        t.check(Cell::new(6, 0), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(
        t.check(Cell::new(-1, 1), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(t.check(Cell::new(5, 1), card("R9")), Ok(None));
    assert_eq!(t.check(Cell::new(0, -1), card("R9")), Ok(None));
}

#[test]
fn outside_area_refuses_a_seventh_row() {
    let t = table(&[
        (0, 0, "R1"),
        (0, -1, "R2"),
        (0, -2, "O3"),
        (0, -3, "O4"),
        (0, -4, "B5"),
        (0, -5, "B6"),
    ]);
    assert_eq!(
        t.check(Cell::new(0, 1), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(
        t.check(Cell::new(0, -6), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(
        t.check(Cell::new(1, 1), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(t.check(Cell::new(1, -5), card("R9")), Ok(None));
}

#[test]
fn outside_area_comes_before_not_adjacent() {
    let t = table(&[(0, 0, "R1")]);
    assert_eq!(
        t.check(Cell::new(7, 7), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(
        t.check(Cell::new(i32::MIN, 0), card("R9")),
        Err(Refusal::OutsideArea)
    );
    assert_eq!(
        t.check(Cell::new(2, 2), card("R9")),
        Err(Refusal::NotAdjacent)
    );
}

#[test]
fn an_empty_cell_must_touch_a_card_side_by_side_or_corner_to_corner() {
    let t = table(&[(0, 0, "R1")]);
    for (x, y) in [
        (1, 0),
        (0, 1),
        (-1, 0),
        (0, -1),
        (1, 1),
        (-1, -1),
        (1, -1),
        (-1, 1),
    ] {
        assert_eq!(t.check(Cell::new(x, y), card("O1")), Ok(None), "({x},{y})");
    }
    assert_eq!(
        t.check(Cell::new(2, 0), card("O1")),
        Err(Refusal::NotAdjacent)
    );
    assert_eq!(
        t.check(Cell::new(0, -2), card("O1")),
        Err(Refusal::NotAdjacent)
    );
}

#[test]
fn a_card_covers_only_a_strictly_lower_value_of_any_colour() {
    let t = table(&[(0, 0, "R5"), (1, 0, "O1")]);
    assert_eq!(t.check(Cell::new(0, 0), card("B6")), Ok(Some(card("R5"))));
    assert_eq!(
        t.check(Cell::new(0, 0), card("R6")),
        Ok(Some(card("R5"))),
        "own colour too"
    );
    assert_eq!(
        t.check(Cell::new(0, 0), card("O5")),
        Err(Refusal::NotHigher {
            top: card("R5"),
            revealed: card("O5")
        }),
        "equal values never cover"
    );
    assert_eq!(
        t.check(Cell::new(0, 0), card("O4")).map_err(|e| e.reason()),
        Err("NOT_HIGHER")
    );
    assert_eq!(
        t.check(Cell::new(1, 0), card("G1")).map_err(|e| e.reason()),
        Err("NOT_HIGHER")
    );
    assert_eq!(t.check(Cell::new(1, 0), card("G2")), Ok(Some(card("O1"))));
}

#[test]
fn a_one_never_covers_anything() {
    let t = grid(
        " y\\x  0   1
           0    O1  R2",
    );
    assert_eq!(
        t.check(Cell::new(0, 0), card("B1")).map_err(|e| e.reason()),
        Err("NOT_HIGHER")
    );
    assert_eq!(
        t.check(Cell::new(1, 0), card("B1")).map_err(|e| e.reason()),
        Err("NOT_HIGHER")
    );
}

#[test]
fn the_match_over_refusal_comes_first() {
    let mut game = Engine::new(RuleOptions::new(2, false, 1, 0, &[]).unwrap(), &[3; 32]);
    play_out(&mut game, &mut Lcg(1));
    assert_eq!(game.play(Cell::CENTRE), Err(Refusal::MatchOver));
    assert_eq!(game.play_text("not a move"), Err(Refusal::MatchOver));
    assert!(game.legal_cells().is_empty() && game.mover().is_none());
}

#[test]
fn legal_cells_are_sorted_by_x_then_y() {
    let t = table(&[(0, 0, "R3")]);
    let legal: Vec<String> = t
        .legal_cells(card("B5"))
        .as_slice()
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        legal,
        [
            "-1,-1", "-1,0", "-1,1", "0,-1", "0,0", "0,1", "1,-1", "1,0", "1,1"
        ]
    );
    let lower: Vec<Cell> = t.legal_cells(card("B2")).as_slice().to_vec();
    assert!(!lower.contains(&Cell::CENTRE) && lower.len() == 8);
}

#[test]
fn every_legal_cell_is_accepted_and_every_other_cell_refused() {
    let mut game = Engine::new(options(3, false), &[9; 32]);
    let mut rng = Lcg(5);
    for _ in 0..30 {
        let legal = game.legal_cells();
        for x in -7..=7 {
            for y in -7..=7 {
                let cell = Cell::new(x, y);
                assert_eq!(
                    game.check(cell).is_ok(),
                    legal.as_slice().contains(&cell),
                    "{cell}"
                );
            }
        }
        let cell = legal.as_slice()[rng.below(legal.len())];
        game.play(cell).unwrap();
        if game.is_over() {
            break;
        }
    }
}

// --- §6 Rows -------------------------------------------------------------------

fn round_ended_by(
    configuration: Configuration,
    t: Table,
    card_text: &str,
    cell: (i32, i32),
) -> Round {
    let mut decks = vec!["R1"; configuration.seats()];
    decks[0] = card_text;
    let mut round = arranged(configuration, t, &decks, 1);
    round.place(Cell::new(cell.0, cell.1)).expect("legal");
    round
}

#[test]
fn a_horizontal_row_of_four_wins_with_four_players() {
    let t = table(&[(0, 0, "R1"), (1, 0, "R2"), (2, 0, "R3")]);
    let round = round_ended_by(Configuration::FourPlayers, t, "R4", (3, 0));
    assert_eq!(
        round.end(),
        Some(RoundEnd::Row {
            placer: seat(1),
            cell: Cell::new(3, 0)
        })
    );
    let scored = round.score().unwrap();
    assert_eq!(scored.winner, Some(0));
    assert_eq!(scored.rows.len(), 1);
    assert_eq!(
        (
            scored.rows[0].start,
            scored.rows[0].step,
            scored.rows[0].len,
            scored.rows[0].total
        ),
        (Cell::new(0, 0), Step::Horizontal, 4, 10)
    );
}

#[test]
fn a_vertical_row_wins() {
    let t = table(&[(0, 0, "B1"), (0, 1, "B2"), (0, 2, "B3")]);
    let round = round_ended_by(Configuration::FourPlayers, t, "B4", (0, -1));
    let rows = round.score().unwrap().rows;
    assert_eq!(
        (rows[0].start, rows[0].step),
        (Cell::new(0, -1), Step::Vertical)
    );
}

#[test]
fn a_rising_diagonal_row_wins() {
    let t = table(&[(0, 0, "O1"), (1, 1, "O2"), (2, 2, "O3")]);
    let round = round_ended_by(Configuration::FourPlayers, t, "O9", (3, 3));
    let rows = round.score().unwrap().rows;
    assert_eq!(
        (rows[0].start, rows[0].step, rows[0].total),
        (Cell::new(0, 0), Step::Diagonal, 15)
    );
}

#[test]
fn a_falling_diagonal_row_wins_and_lists_its_cells_left_to_right() {
    let t = table(&[(0, 0, "G1"), (1, -1, "G2"), (3, -3, "G3")]);
    let round = round_ended_by(Configuration::FourPlayers, t, "G4", (2, -2));
    let rows = round.score().unwrap().rows;
    assert_eq!(
        (rows[0].start, rows[0].step),
        (Cell::new(0, 0), Step::AntiDiagonal)
    );
    let cells: Vec<Cell> = rows[0].cells().collect();
    assert_eq!(
        cells,
        [
            Cell::new(0, 0),
            Cell::new(1, -1),
            Cell::new(2, -2),
            Cell::new(3, -3)
        ]
    );
}

#[test]
fn two_players_need_five_in_a_row() {
    let four = table(&[(0, 0, "R1"), (1, 0, "R2"), (2, 0, "R3")]);
    let round = round_ended_by(Configuration::TwoPlayers, four, "R4", (3, 0));
    assert_eq!(round.end(), None, "four is not enough with 2 players");
    let five = table(&[(0, 0, "R1"), (1, 0, "R2"), (2, 0, "R3"), (3, 0, "R4")]);
    let round = round_ended_by(Configuration::TwoPlayers, five, "R5", (4, 0));
    assert!(matches!(round.end(), Some(RoundEnd::Row { .. })));
}

#[test]
fn teams_need_five_in_a_row() {
    let t = table(&[(0, 0, "B1"), (1, 0, "B2"), (2, 0, "B3")]);
    assert_eq!(
        round_ended_by(Configuration::Teams, t, "B4", (3, 0)).end(),
        None
    );
}

#[test]
fn two_colours_of_one_side_never_form_a_row() {
    let t = table(&[(0, 0, "R1"), (1, 0, "R2"), (2, 0, "B3"), (3, 0, "B4")]);
    assert_eq!(
        round_ended_by(Configuration::TwoPlayers, t, "R5", (4, 0)).end(),
        None
    );
}

#[test]
fn covered_cards_never_count_for_rows() {
    let mut t = table(&[(0, 0, "R1"), (1, 0, "R2"), (2, 0, "R3")]);
    assert!(t.put(Cell::new(1, 0), card("O5")));
    assert_eq!(
        round_ended_by(Configuration::FourPlayers, t.clone(), "R6", (3, 0)).end(),
        None
    );
    // Covering the orange card back with red completes the row.
    let round = round_ended_by(Configuration::FourPlayers, t, "R6", (1, 0));
    assert_eq!(round.end(), None, "only three reds: (3,0) is empty");
    let mut t = table(&[(0, 0, "R1"), (2, 0, "R3"), (3, 0, "R4")]);
    assert!(t.put(Cell::new(1, 0), card("O5")));
    let round = round_ended_by(Configuration::FourPlayers, t, "R6", (1, 0));
    assert_eq!(round.score().unwrap().rows[0].total, 1 + 6 + 3 + 4);
}

#[test]
fn an_overline_is_one_winning_row_with_all_its_cells() {
    let t = table(&[(0, 0, "R9"), (1, 0, "R2"), (3, 0, "R3"), (4, 0, "R4")]);
    let round = round_ended_by(Configuration::FourPlayers, t, "R5", (2, 0));
    let scored = round.score().unwrap();
    assert_eq!(scored.rows.len(), 1);
    assert_eq!((scored.rows[0].len, scored.rows[0].total), (5, 23));
    assert_eq!(
        round_rules::removed_card(round.table(), &scored.rows),
        Some(card("R9"))
    );
}

#[test]
fn a_placement_can_make_two_winning_rows_at_once() {
    let t = table(&[
        (0, 0, "R1"),
        (1, 0, "R2"),
        (2, 0, "R3"),
        (3, 1, "R7"),
        (3, 2, "R2"),
        (3, 3, "R1"),
    ]);
    let round = round_ended_by(Configuration::FourPlayers, t, "R4", (3, 0));
    let rows = round.score().unwrap().rows;
    let keys: Vec<(Cell, Step)> = rows.iter().map(|r| (r.start, r.step)).collect();
    assert_eq!(
        keys,
        [
            (Cell::new(0, 0), Step::Horizontal),
            (Cell::new(3, 0), Step::Vertical)
        ]
    );
    let scored_rows = round.score().unwrap().rows;
    assert_eq!(
        round_rules::removed_card(round.table(), &scored_rows),
        Some(card("R7")),
        "over every winning row"
    );
}

#[test]
fn neutral_cards_never_make_a_row() {
    let t = table(&[(0, 0, "G1"), (1, 0, "G2"), (2, 0, "G3")]);
    let mut round = arranged(Configuration::ThreePlayers, t, &["G4", "O1", "B1"], 1);
    round.place(Cell::new(3, 0)).unwrap();
    assert_eq!((round.end(), round.mover()), (None, Some(seat(2))));
    let deadlock = round.table().deadlock_rows(3, Some(Colour::Green));
    assert!(deadlock.is_empty(), "nor deadlock rows");
}

// --- §7 Deadlocks ----------------------------------------------------------------

#[test]
fn an_empty_deck_ends_the_round_at_once() {
    let mut round = arranged(Configuration::TwoPlayers, Table::new(), &["R1", "O2 O3"], 1);
    round.place(Cell::CENTRE).unwrap();
    round.place(Cell::new(1, 0)).unwrap();
    assert_eq!(
        round.end(),
        Some(RoundEnd::Deadlock {
            stuck: seat(1),
            revealed: None,
            cause: DeadlockCause::DeckEmpty
        })
    );
    assert_eq!(round.mover(), None);
    assert_eq!(round.check(Cell::new(2, 0)), Err(Refusal::MatchOver));
    assert_eq!(DeadlockCause::DeckEmpty.name(), "DECK_EMPTY");
}

const EXAMPLE_7_5: &str = "
 y\\x  -3  -2  -1   0   1   2
  3   B4  G5  R3  B7  R6  G6
  2   O6  O7  B8  R4  G5  R9
  1   G3  G3  O1  G9  O5  G4
  0   R7  G7  B9  R3  R8  R1
 -1   B7  O3  O2  O8  G6  R2
 -2   B5  O7  G2  R6  R9  O9
";

#[test]
fn a_card_with_no_legal_cell_ends_the_round() {
    let round = arranged(
        Configuration::ThreePlayers,
        grid(EXAMPLE_7_5),
        &["R5", "O5", "B1 B2"],
        3,
    );
    assert_eq!(
        round.end(),
        Some(RoundEnd::Deadlock {
            stuck: seat(3),
            revealed: Some(card("B1")),
            cause: DeadlockCause::NoPlacement
        })
    );
    assert!(round.table().is_full());
    assert_eq!(
        round.deck(seat(3)).remaining(),
        cards("B2"),
        "the stuck card is off the deck, unplaced"
    );
}

#[test]
fn the_example_of_section_7_5_is_won_by_seat_1_on_total() {
    let round = arranged(
        Configuration::ThreePlayers,
        grid(EXAMPLE_7_5),
        &["R5", "O5", "B1"],
        3,
    );
    let Scored {
        winner,
        rows,
        deadlock,
    } = round.score().unwrap();
    assert_eq!(winner, Some(0));
    let deadlock = deadlock.unwrap();
    assert_eq!(deadlock.decided_by, Some(TieBreak::Total));
    let counts: Vec<(Side, u32, Vec<u32>)> = deadlock
        .sides
        .iter()
        .map(|s| (s.side, s.count, s.totals.clone()))
        .collect();
    assert_eq!(
        counts,
        [
            (Side::Seat(seat(1)), 1, vec![12]),
            (Side::Seat(seat(2)), 1, vec![13]),
            (Side::Seat(seat(3)), 0, vec![]),
        ]
    );
    assert_eq!(rows.len(), 1, "the winner's rows only");
    assert_eq!(
        rows[0].cells().collect::<Vec<_>>(),
        [Cell::new(0, 0), Cell::new(1, 0), Cell::new(2, 0)]
    );
    assert_eq!(
        round_rules::removed_card(round.table(), &rows),
        Some(card("R8"))
    );
}

#[test]
fn the_table_prints_as_section_7_5_does() {
    assert_eq!(
        render::top_cards(&grid(EXAMPLE_7_5)),
        EXAMPLE_7_5.trim_start_matches('\n')
    );
}

#[test]
fn most_deadlock_rows_win_on_count() {
    let t = table(&[
        (0, 0, "R1"),
        (1, 0, "R2"),
        (2, 0, "R3"),
        (0, 2, "R9"),
        (1, 2, "R9"),
        (2, 2, "R9"),
        (0, 4, "O1"),
        (1, 4, "O1"),
        (2, 4, "O1"),
    ]);
    let round = arranged(Configuration::FourPlayers, t, &["", "O5", "B5", "G5"], 1);
    let scored = round.score().unwrap();
    assert_eq!(
        (scored.winner, scored.deadlock.unwrap().decided_by),
        (Some(0), Some(TieBreak::Count))
    );
    assert_eq!(scored.rows.len(), 2);
}

#[test]
fn deadlock_rows_in_every_direction_count_separately() {
    // Three reds in an L share (0,0): a horizontal, a vertical and no more.
    let t = table(&[
        (0, 0, "R1"),
        (1, 0, "R1"),
        (2, 0, "R1"),
        (0, 1, "R1"),
        (0, 2, "R1"),
    ]);
    let rows = t.deadlock_rows(3, None);
    assert_eq!(
        rows.iter().map(|r| (r.start, r.step)).collect::<Vec<_>>(),
        [
            (Cell::new(0, 0), Step::Horizontal),
            (Cell::new(0, 0), Step::Vertical)
        ]
    );
}

#[test]
fn identical_sorted_totals_draw_the_round() {
    let t = table(&[
        (0, 0, "R1"),
        (1, 0, "R2"),
        (2, 0, "R3"),
        (0, 2, "O3"),
        (1, 2, "O2"),
        (2, 2, "O1"),
    ]);
    let round = arranged(Configuration::FourPlayers, t, &["", "O5", "B5", "G5"], 1);
    let scored = round.score().unwrap();
    assert_eq!(
        (scored.winner, scored.deadlock.unwrap().decided_by),
        (None, None)
    );
    assert!(scored.rows.is_empty());
}

#[test]
fn no_deadlock_row_at_all_draws_the_round() {
    let round = arranged(
        Configuration::TwoPlayers,
        table(&[(0, 0, "R1")]),
        &["", "O5"],
        1,
    );
    let scored = round.score().unwrap();
    assert_eq!(scored.winner, None);
    let sides = scored.deadlock.unwrap().sides;
    assert!(sides.iter().all(|s| s.count == 0));
}

#[test]
fn a_two_colour_side_removes_the_colour_first_in_colour_order_on_a_tie() {
    let t = table(&[
        (0, 0, "B9"),
        (1, 0, "B1"),
        (2, 0, "B1"),
        (3, 0, "B1"),
        (0, 2, "R1"),
        (1, 2, "R1"),
        (2, 2, "R1"),
        (3, 2, "R9"),
    ]);
    let round = arranged(Configuration::TwoPlayers, t, &["", "O5"], 1);
    let scored = round.score().unwrap();
    assert_eq!(scored.winner, Some(0));
    assert_eq!(
        round_rules::removed_card(round.table(), &scored.rows),
        Some(card("R9"))
    );
}

// --- §8.3 Who begins the next round ------------------------------------------------

#[test]
fn after_a_winning_row_the_seat_after_the_placer_begins() {
    let end = RoundEnd::Row {
        placer: seat(3),
        cell: Cell::CENTRE,
    };
    assert_eq!(
        round_rules::next_first_seat(Configuration::ThreePlayers, seat(2), end, Some(2)),
        seat(1)
    );
    assert_eq!(
        round_rules::next_first_seat(Configuration::Teams, seat(1), end, Some(0)),
        seat(4)
    );
    assert_eq!(
        round_rules::neutral_dealer(Configuration::ThreePlayers, end, Some(2), seat(1)),
        seat(3)
    );
}

#[test]
fn after_a_deadlock_win_the_seat_after_the_winner_begins() {
    let end = RoundEnd::Deadlock {
        stuck: seat(1),
        revealed: None,
        cause: DeadlockCause::DeckEmpty,
    };
    assert_eq!(
        round_rules::next_first_seat(Configuration::FourPlayers, seat(1), end, Some(3)),
        seat(1)
    );
    assert_eq!(
        round_rules::next_first_seat(Configuration::ThreePlayers, seat(1), end, Some(1)),
        seat(3)
    );
    assert_eq!(
        round_rules::neutral_dealer(Configuration::ThreePlayers, end, Some(1), seat(3)),
        seat(2)
    );
}

#[test]
fn after_a_team_deadlock_win_the_seat_after_the_teams_lower_seat_begins() {
    let end = RoundEnd::Deadlock {
        stuck: seat(4),
        revealed: None,
        cause: DeadlockCause::NoPlacement,
    };
    assert_eq!(
        round_rules::next_first_seat(Configuration::Teams, seat(3), end, Some(0)),
        seat(2)
    );
    assert_eq!(
        round_rules::next_first_seat(Configuration::Teams, seat(3), end, Some(1)),
        seat(3)
    );
}

#[test]
fn after_a_drawn_round_the_seat_after_its_first_seat_begins() {
    let end = RoundEnd::Deadlock {
        stuck: seat(2),
        revealed: None,
        cause: DeadlockCause::DeckEmpty,
    };
    assert_eq!(
        round_rules::next_first_seat(Configuration::ThreePlayers, seat(3), end, None),
        seat(1)
    );
    assert_eq!(
        round_rules::next_first_seat(Configuration::Teams, seat(4), end, None),
        seat(1)
    );
    assert_eq!(
        round_rules::neutral_dealer(Configuration::ThreePlayers, end, None, seat(1)),
        seat(1)
    );
}

// --- §8, §9 Rounds and the match ---------------------------------------------------

#[test]
fn a_won_round_removes_a_card_and_the_next_round_begins_at_once() {
    for (players, team) in [(2, false), (3, false), (4, false), (4, true)] {
        let mut game = Engine::new(options(players, team), &[11; 32]);
        let mut rng = Lcg(u64::from(players));
        let result = loop {
            let legal = game.legal_cells();
            let placed = game.play(legal.as_slice()[rng.below(legal.len())]).unwrap();
            if let Some(result) = placed.round_result {
                assert_eq!(
                    placed.next.map(|n| (n.round, n.seat)),
                    result.next_first.map(|s| (2, s))
                );
                assert_eq!(placed.next.map(|n| n.card), game.revealed());
                break result;
            }
        };
        if let Some(winner) = result.winner {
            let removed = result.removed.expect("a won round removes a card");
            let side = game.configuration().index_of(winner).unwrap();
            assert!(
                game.configuration()
                    .colours(side)
                    .contains(&removed.colour())
            );
            assert_eq!(game.in_match().len(), 71);
        } else {
            assert_eq!(result.removed, None);
        }
        assert_eq!(game.round().number(), 2);
        assert!(game.round().table().is_empty());
        assert_eq!(game.mover(), result.next_first);
    }
}

#[test]
fn the_first_side_to_win_enough_rounds_wins_the_match() {
    let mut game = Engine::new(options(4, false), &[12; 32]);
    play_out(&mut game, &mut Lcg(3));
    let outcome = game.outcome().unwrap();
    assert_eq!(outcome.reason, EndReason::RoundsWon);
    let winner = game
        .configuration()
        .index_of(outcome.winner.unwrap())
        .unwrap();
    assert_eq!(outcome.wins[winner], 2);
    assert_eq!(
        game.removed().len() as u32,
        outcome.wins.iter().sum::<u32>()
    );
    assert_eq!(game.results().last().unwrap().next_first, None);
}

#[test]
fn the_round_limit_ends_the_match_with_the_most_round_wins() {
    for (players, team) in [(2, false), (3, false), (4, true)] {
        let limited = RuleOptions::new(players, team, 2, 1, &[]).unwrap();
        let mut game = Engine::new(limited, &[13; 32]);
        play_out(&mut game, &mut Lcg(9));
        assert_eq!(game.results().len(), 1);
        let outcome = game.outcome().unwrap();
        assert_eq!(
            (outcome.reason, outcome.winner),
            (EndReason::RoundLimit, game.results()[0].winner)
        );
    }
}

#[test]
fn three_players_pass_neutral_cards_on_as_section_3_3_says() {
    let mut game = Engine::new(options(3, false), &[14; 32]);
    let mut rng = Lcg(4);
    while game.results().is_empty() {
        let legal = game.legal_cells();
        game.play(legal.as_slice()[rng.below(legal.len())]).unwrap();
    }
    let greens = CardCounts::of_colour(Colour::Green);
    let held: CardCounts = game
        .neutral_dealt()
        .iter()
        .fold(CardCounts::EMPTY, |a, b| a.plus(b));
    assert_eq!(held, greens, "all 18 neutral cards stay in play");
    for s in 1..=3 {
        let dealt = CardCounts::of_cards(game.round().deck(seat(s)).dealt());
        assert_eq!(
            dealt.only(Colour::Green),
            game.neutral_dealt()[s as usize - 1]
        );
    }
}

// --- §10, §14 Test vectors -----------------------------------------------------------

#[test]
fn the_commitment_and_keys_of_section_14() {
    let seed = seed_0_to_31();
    assert_eq!(
        hex(&setup(seed).commitment()),
        "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
    );
    assert_eq!(
        hex(&Key::new(&seed, &[]).bytes()),
        "8338a0e43e22b14982eb50bf76aefc1d646783b589718dc1475b4e7b05b3cf04"
    );
    assert_eq!(
        hex(&Key::new(&seed, &[0xca, 0xfe]).bytes()),
        "2ccefea290c6097d5327807e216a2f84633054d64774c5d59ab98746625896f7"
    );
}

/// A stream of §14: label, round, index, block 0, block 1, first words.
type StreamVector = (Label, u32, u32, &'static str, &'static str, [u64; 5]);

#[test]
fn the_streams_of_section_14() {
    let key = Key::new(&seed_0_to_31(), &[]);
    let vectors: [StreamVector; 4] = [
        (
            Label::Deck,
            1,
            1,
            "4ce0399f323565c77b7f98456f8702a1cba1f7eff8aa5d0c57a9c9fa709e2c47",
            "95d88a57bc6de4689239911c9905489d1f79c323e059d1b222e1a62e5db4eb68",
            [
                5539490897570653639,
                8898998812698673825,
                14673281670990945548,
                6316802029832252487,
                10797532216048870504,
            ],
        ),
        (
            Label::Deck,
            2,
            3,
            "cf068e03f1b2fda2d8b517bd376f38edb9643532c206418fdfa8ece633919b5a",
            "40f3d45e929a9ac2b2304501aa266ff70a2d9c1e72228bdc183437af58e883e3",
            [
                14917766963302432162,
                15615413384423356653,
                13358860886807560591,
                16116391739997133658,
                4680317940419697346,
            ],
        ),
        (
            Label::Team,
            1,
            2,
            "a644aa920f39aa55a3cac5719933260db9da9c39ee74d12a213d93cf58918b80",
            "e28f07c8aa8b6f461b316625a43d29ec428725387af9a8c000f951150dab00e9",
            [
                11980888453009746517,
                11802462865170048525,
                13392188214567293226,
                2395233095584418688,
                16325275732677455686,
            ],
        ),
        (
            Label::Neutral,
            1,
            0,
            "8ccce427be167c7764e9b2a4616f734b51b722afed0ccd8b4ed90b490ed64b2d",
            "2d6526625dca4a86ba1994bffbbd533ffc67c0f8b3b42d615e3e24b80f43fb6e",
            [
                10145734919902887031,
                7271539492445451083,
                5888213176801873291,
                5681584813314034477,
                3271062908276722310,
            ],
        ),
    ];
    for (label, r, i, block0, block1, words) in vectors {
        let mut stream = key.stream(label, r, i);
        assert_eq!(hex(&stream.block(0)), block0, "{} {r} {i}", label.text());
        assert_eq!(hex(&stream.block(1)), block1);
        let drawn: Vec<u64> = (0..5).map(|_| stream.next_word()).collect();
        assert_eq!(drawn, words);
    }
}

#[test]
fn shuffling_r1_to_r4_with_the_first_deck_stream_puts_r3_on_top() {
    let key = Key::new(&seed_0_to_31(), &[]);
    let mut stream = key.stream(Label::Deck, 1, 1);
    let mut list = cards("R1 R2 R3 R4");
    deal::shuffle(&mut list, &mut stream);
    assert_eq!(list, cards("R3 R1 R2 R4"));
    let mut again = key.stream(Label::Deck, 1, 1);
    assert_eq!(
        [again.below(4), again.below(3), again.below(2)],
        [3, 1, 0],
        "the steps of §14"
    );
}

#[test]
fn a_list_of_one_card_draws_no_word() {
    let key = Key::new(&seed_0_to_31(), &[]);
    let mut stream = key.stream(Label::Deck, 1, 1);
    let mut one = cards("G9");
    deal::shuffle(&mut one, &mut stream);
    assert_eq!(stream.next_word(), 5539490897570653639);
}

fn round_one_decks(players: u32, team: bool, entropy: &[u8]) -> Vec<String> {
    let game = Engine::new(
        RuleOptions::new(players, team, 2, 0, entropy).unwrap(),
        &seed_0_to_31(),
    );
    (1..=players)
        .map(|s| {
            let dealt: Vec<String> = game
                .round()
                .deck(seat(s))
                .dealt()
                .iter()
                .map(Card::to_string)
                .collect();
            dealt.join(" ")
        })
        .collect()
}

#[test]
fn the_round_one_decks_of_section_14() {
    assert_eq!(
        round_one_decks(2, false, &[]),
        [
            "B1 B8 B4 B2 R1 R4 B9 R8 B4 R1 B6 R5 B5 R3 R3 B3 B5 R9 B1 R6 R8 B3 B9 B6 B8 R9 R2 R4 R7 R2 R6 R5 R7 B7 B2 B7",
            "O8 O2 O1 G8 O2 O7 G4 O4 G3 O4 O8 G2 G3 O5 O7 G5 G8 O9 O9 O6 G9 G5 G7 G6 O3 G1 G4 G2 O6 G7 G1 G6 O5 G9 O1 O3",
        ]
    );
    assert_eq!(
        round_one_decks(3, false, &[]),
        [
            "R7 G7 R5 R1 G3 G3 R9 R9 G7 R3 R8 R1 R6 R2 R4 R6 R7 R2 R8 R3 G6 G2 R5 R4",
            "O8 O9 G5 O1 G2 G4 O3 O2 G9 O5 O1 O9 G6 O4 O2 O7 O7 O6 G8 O5 O4 O8 O6 O3",
            "G8 B8 B1 B3 B5 B6 B4 B4 B7 G1 B8 G5 B2 B7 B3 B5 B9 G4 B2 G9 G1 B6 B9 B1",
        ]
    );
    assert_eq!(
        round_one_decks(4, false, &[]),
        [
            "R5 R5 R6 R3 R1 R4 R4 R6 R2 R3 R1 R8 R9 R2 R8 R7 R9 R7",
            "O2 O8 O9 O1 O1 O7 O5 O2 O5 O9 O4 O7 O6 O3 O4 O6 O8 O3",
            "B6 B1 B2 B5 B5 B9 B9 B3 B7 B1 B8 B8 B6 B7 B2 B4 B3 B4",
            "G9 G4 G7 G3 G3 G2 G4 G5 G6 G1 G1 G8 G8 G2 G9 G5 G7 G6",
        ]
    );
    assert_eq!(
        round_one_decks(4, true, &[]),
        [
            "R1 B2 R5 B7 B1 B9 R4 R3 R5 R4 R8 B1 B4 B8 B5 B7 B3 B6",
            "O9 G9 O1 O6 O5 O6 O3 G3 O9 G8 G3 O2 G6 O7 G6 G7 O2 G1",
            "R8 R3 B2 R9 B3 R2 R7 B9 R6 R2 B5 B6 R7 B4 R1 R9 R6 B8",
            "G2 G7 O5 G4 G4 O3 G8 G5 O8 G1 O1 G9 O4 O4 G5 O8 G2 O7",
        ]
    );
    assert_eq!(
        round_one_decks(2, false, &[0xca, 0xfe]),
        [
            "R3 B3 R2 R7 B7 B8 B1 R3 R9 B3 R7 R1 B9 B5 B2 R8 R5 R1 R5 R6 B7 B1 B6 B2 B8 B9 B5 B4 B4 R4 R9 B6 R2 R8 R6 R4",
            "O3 O5 G9 G7 G9 O1 O9 G1 O4 G7 G2 G3 O7 G8 G5 G8 O2 G5 G6 G2 O1 O5 G3 G4 O3 O6 G6 O4 G1 O8 O2 O6 O9 G4 O7 O8",
        ]
    );
}

#[test]
fn the_round_one_neutral_deal_of_section_14() {
    let key = Key::new(&seed_0_to_31(), &[]);
    let (shares, pile) = deal::deal_neutral(&key, 1, &CardCounts::of_colour(Colour::Green), 0);
    assert_eq!(
        pile,
        cards("G7 G8 G1 G7 G4 G8 G3 G5 G9 G2 G9 G5 G3 G6 G4 G6 G2 G1")
    );
    assert_eq!(shares[0], cards("G7 G7 G3 G2 G3 G6"));
    assert_eq!(shares[1], cards("G8 G4 G5 G9 G6 G2"));
    assert_eq!(shares[2], cards("G1 G8 G9 G5 G4 G1"));
}

/// The complete record of docs/rules/punto.md §14, as printed there.
const RECORD_14: &str = "game: punto
players: 3
team: no
rounds_to_win: 2
max_rounds: 0
commitment: 01b59b62b3a223d6b844699d16e44c1391295b4f374af71d2ffd22339eb3c9f7
seed: 4b8f1348e777985783074cb0648320963c8644987c5b64ceb8c31a6c0b245af4
result: seat 2

round 1
R7 0,0
O6 -1,-1
G9 1,0
R8 -2,-1
O8 -2,-2
G2 -1,-2
G6 -3,0
O3 -4,-1
B9 -2,1
R3 0,-1
O7 -3,-3
G1 0,-2
G9 -3,-2
O7 -4,-4
round 2
B4 0,0
R7 -1,1
O7 -1,0
B9 0,-1
R2 1,-2
G5 -1,-1
B9 2,-1
R5 0,0
O4 -2,1
G4 -2,-1
R9 1,-1
G8 0,2
B8 1,-3
R6 2,-2
round 3
O7 0,0
B4 -1,1
R5 1,0
O4 0,-1
B3 -2,0
R4 0,-2
O7 -3,-1
B6 -1,-1
G3 1,-2
O5 -1,1
G9 -2,2
G1 -3,2
O3 0,1
G7 1,-2
R2 1,1
O1 -3,1
B5 -3,-2
R9 -1,0
G6 -4,-1
B9 -3,1
G8 1,-2
O5 -4,2
G8 1,1
R6 1,-1
O3 0,2
";

fn record_14() -> String {
    RECORD_14.to_string()
}

#[test]
fn the_complete_record_of_section_14_replays_with_its_rounds() {
    let text = record_14();
    let record = Record::parse(&text).unwrap();
    let (game, placed) = record.replay(&record.setup(None).unwrap().seed).unwrap();
    assert_eq!(placed.len(), 53);
    let summaries: Vec<String> = game.results().iter().map(render::summary).collect();
    assert_eq!(
        summaries,
        [
            "round 1: ROW, seat 2 wins, removes O8, seat 3 begins next",
            "round 2: ROW, seat 1 wins, removes R9, seat 2 begins next",
            "round 3: ROW, seat 2 wins, removes O7, seat - begins next",
        ]
    );
    assert_eq!(
        record.result.map(|r| r.0),
        Some(StatedOutcome::Side(Side::Seat(seat(2))))
    );
    let replayed = import(&text, None).unwrap();
    assert_eq!(
        replayed.game.record(&[], Viewer::Spectator),
        text,
        "canonical already"
    );
    let outcome = replayed.game.outcome().unwrap();
    assert_eq!(
        (outcome.winners, outcome.reason, outcome.scores),
        (SeatSet::only(seat(2)), "ROUNDS_WON", vec![1, 2, 0])
    );
}

#[test]
fn round_two_of_the_section_14_record_is_dealt_as_it_says() {
    let text = record_14();
    let record = Record::parse(&text).unwrap();
    let seed = record.setup(None).unwrap().seed;
    let mut game = Engine::new(record.options, &seed);
    let round_one: Vec<Cell> = record
        .body
        .iter()
        .filter_map(|l| match *l {
            punct_referee::games::punto::record::BodyLine::Placement { cell, .. } => Some(cell),
            _ => None,
        })
        .take(14)
        .collect();
    for cell in round_one {
        game.play(cell).unwrap();
    }
    assert_eq!(game.round().number(), 2);
    let greens: Vec<Card> = game
        .last_table()
        .unwrap()
        .all_cards()
        .filter(|c| c.colour() == Colour::Green)
        .collect();
    let pool = CardCounts::of_cards(&greens);
    assert_eq!(pool.to_string(), "G1 G2 G6 G9 G9");
    let dealt = |s: u32| {
        game.round()
            .deck(seat(s))
            .dealt()
            .iter()
            .map(Card::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        dealt(1),
        "R7 R2 R5 R9 R6 R1 R3 G7 R8 R9 G8 R1 R6 R3 G3 R4 R7 R4 G1 R5 R2 G1 R8"
    );
    assert_eq!(
        dealt(2),
        "O7 G5 O4 G8 O1 G4 O2 O1 O3 O9 O4 O5 G6 O8 G2 G6 O3 O2 O6 O9 G2 O7 O6 G3 O5"
    );
    assert_eq!(
        dealt(3),
        "B4 B9 B9 G4 B8 B7 B6 B1 G7 B5 B1 B3 B6 B2 G9 G9 B8 G5 B5 B3 B2 B7 B4"
    );
    assert_eq!(game.mover(), Some(seat(3)));
    // Dealt from seat 2, the winner: its share comes first.
    let (shares, _) = deal::deal_neutral(game.key(), 2, &pool, 1);
    assert_eq!(shares.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2, 2]);
}

// --- §12 Records ---------------------------------------------------------------------

fn finished_record(players: u32, team: bool, seed: u8) -> (String, Box<dyn Game>) {
    let mut game = options(players, team).start(Some(setup([seed; 32])));
    let mut rng = Lcg(u64::from(seed));
    while game.to_move().is_some() {
        let legal = game.legal_moves();
        game.play(&legal[rng.below(legal.len())].detail.to_input())
            .unwrap();
    }
    (game.record(&[], Viewer::Spectator), game)
}

fn import_reason(text: &str, seed: Option<Setup>) -> (Option<usize>, Option<&'static str>) {
    let error = import(text, seed).expect_err("refused");
    (error.line, error.reason)
}

#[test]
fn records_read_leniently_where_section_12_allows() {
    let (text, _) = finished_record(3, false, 21);
    let mut lenient = String::from("# a comment in the header\n");
    for line in text.lines() {
        let line = match line.split_once(' ') {
            Some((c, m)) if c.len() == 2 => format!("  {c} \t {m}\t"),
            _ if line.starts_with("round ") => line.replace(' ', "\t  "),
            _ if line.contains(':') => line.replacen(": ", ":\t", 1),
            _ => line.to_string(),
        };
        lenient.push_str(&line);
        lenient.push_str("\r\n");
        if line.starts_with("round\t") {
            lenient.push_str("# a comment in the body\r\n\r\n");
        }
    }
    let back = import(&lenient, None).unwrap();
    assert_eq!(back.game.record(&[], Viewer::Spectator), text);
}

#[test]
fn a_missing_trailing_round_line_is_accepted() {
    let mut game = options(2, false).start(Some(setup([22; 32])));
    let mut rng = Lcg(2);
    while snapshot(game.as_ref()).results.is_empty() {
        let legal = game.legal_moves();
        game.play(&legal[rng.below(legal.len())].detail.to_input())
            .unwrap();
    }
    let text = game.record(&[], Viewer::Spectator);
    assert!(text.ends_with("round 2\n"), "{text}");
    let trimmed = text.trim_end_matches("round 2\n");
    let back = import(trimmed, Some(setup([22; 32]))).unwrap();
    assert_eq!(back.game.record(&[], Viewer::Spectator), text);
}

#[test]
fn defaults_fill_missing_optional_keys_and_unknown_keys_are_tags() {
    let commitment = hex(&setup([1; 32]).commitment());
    let text =
        format!("game: punto\nplayers: 4\ncommitment: {commitment}\nvenue: club\n\nround 1\n");
    let record = Record::parse(&text).unwrap();
    assert_eq!(record.options, options(4, false));
    assert_eq!(record.tags, [("venue".to_string(), "club".to_string())]);
    assert_eq!(
        import_reason(&text, None),
        (None, Some("SEED_NOT_REVEALED"))
    );
    let back = import(&text, Some(setup([1; 32]))).unwrap();
    assert_eq!(back.game.ply(), 0);
}

#[test]
fn records_are_strict_everywhere_else() {
    let c = hex(&setup([1; 32]).commitment());
    let cases = [
        (
            format!("game: punto\nplayers: 2\nplayers: 2\ncommitment: {c}\n"),
            Some(3),
            "DUPLICATE_KEY",
        ),
        (
            format!("game: punto\ncommitment: {c}\n"),
            None,
            "MISSING_KEY",
        ),
        ("game: punto\nplayers: 2\n".to_string(), None, "MISSING_KEY"),
        (
            format!("game: punct\nplayers: 2\ncommitment: {c}\n"),
            Some(1),
            "NOT_PUNTO",
        ),
        (
            format!(
                "game: punto\nplayers: 2\ncommitment: {}\n",
                c.to_uppercase()
            ),
            Some(3),
            "BAD_HEADER_VALUE",
        ),
        (
            format!("game: punto\nplayers: 2\nteam: maybe\ncommitment: {c}\n"),
            Some(3),
            "BAD_HEADER_VALUE",
        ),
        (
            format!("game: punto\nplayers: 2\nteam: yes\ncommitment: {c}\n"),
            None,
            "INVALID_OPTIONS",
        ),
        (
            format!("game: punto\nplayers: 2\nentropy: abc\ncommitment: {c}\n"),
            Some(3),
            "BAD_HEADER_VALUE",
        ),
        (
            format!("game: punto\nplayers: 2\ncommitment: {c}\nnot a header\n"),
            Some(4),
            "MALFORMED_RECORD",
        ),
        (
            format!("game: punto\nplayers: 2\ncommitment: {c}\n\nround one\n"),
            Some(5),
            "MALFORMED_RECORD",
        ),
        (
            format!("game: punto\nplayers: 2\ncommitment: {c}\n\nround 1\nr1 0,0\n"),
            Some(6),
            "MALFORMED",
        ),
        (
            format!("game: punto\nplayers: 2\ncommitment: {c}\n\nround 1\nR1 0, 0\n"),
            Some(6),
            "MALFORMED_RECORD",
        ),
        (
            format!("game: punto\nplayers: 2\ncommitment: {c}\n\nround 1\nR1 +0,0\n"),
            Some(6),
            "MALFORMED",
        ),
    ];
    for (text, line, reason) in cases {
        assert_eq!(
            import_reason(&text, Some(setup([1; 32]))),
            (line, Some(reason)),
            "{text}"
        );
    }
}

#[test]
fn an_unfinished_record_needs_the_servers_seed() {
    let mut game = options(4, true).start(Some(setup([23; 32])));
    let first = game.legal_moves();
    game.play(&first[0].detail.to_input()).unwrap();
    let text = game.record(&[], Viewer::Spectator);
    assert!(!text.contains("seed:"));
    assert_eq!(
        import_reason(&text, None),
        (None, Some("SEED_NOT_REVEALED"))
    );
    assert_eq!(
        import_reason(&text, Some(setup([24; 32]))),
        (None, Some("SEED_MISMATCH"))
    );
    assert_eq!(import(&text, Some(setup([23; 32]))).unwrap().game.ply(), 1);
}

#[test]
fn a_seed_that_is_not_the_committed_one_is_refused() {
    let (text, _) = finished_record(2, false, 25);
    let seed = hex(&[25; 32]);
    let other = text.replace(&seed, &hex(&[26; 32]));
    assert_eq!(import_reason(&other, None), (None, Some("SEED_MISMATCH")));
    assert_eq!(
        import_reason(&text, Some(setup([26; 32]))),
        (None, Some("SEED_MISMATCH"))
    );
}

#[test]
fn a_card_the_deal_does_not_reveal_is_refused_with_its_line() {
    let (text, _) = finished_record(3, false, 27);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines.iter().position(|l| l == "round 1").unwrap() + 3;
    let (card_text, cell) = lines[at]
        .split_once(' ')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap();
    let wrong = if card_text == "R9" { "R8" } else { "R9" };
    lines[at] = format!("{wrong} {cell}");
    let error = import(&(lines.join("\n") + "\n"), None).unwrap_err();
    assert_eq!(
        (error.line, error.reason),
        (Some(at + 1), Some("CARD_MISMATCH"))
    );
    assert!(
        error
            .message
            .contains(&format!("the deal gives seat 3 {card_text} in round 1")),
        "{}",
        error.message
    );
}

#[test]
fn an_illegal_move_in_a_record_is_refused_with_its_reason_and_line() {
    let (text, _) = finished_record(2, false, 28);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines.iter().position(|l| l == "round 1").unwrap() + 1;
    let card_text = lines[at].split_once(' ').unwrap().0.to_string();
    lines[at] = format!("{card_text} 1,0");
    let error = import(&(lines.join("\n") + "\n"), None).unwrap_err();
    assert_eq!(
        (error.line, error.reason),
        (Some(at + 1), Some("FIRST_CARD_NOT_CENTER"))
    );
}

#[test]
fn round_lines_must_come_in_order_and_only_after_their_round_began() {
    let (text, _) = finished_record(2, false, 29);
    let lines: Vec<&str> = text.lines().collect();
    let round_two = lines
        .iter()
        .position(|l| *l == "round 2")
        .expect("two rounds at least");
    // `round 2` one placement early: round 1 has not ended.
    let mut early: Vec<&str> = lines.clone();
    early.swap(round_two, round_two - 1);
    let (line, reason) = import_reason(&(early.join("\n") + "\n"), None);
    assert_eq!(
        (line, reason),
        (Some(round_two), Some("ROUND_OUT_OF_ORDER"))
    );
    // No `round 2` line at all: the placement follows the end of round 1.
    let mut missing = lines.clone();
    missing.remove(round_two);
    assert_eq!(
        import_reason(&(missing.join("\n") + "\n"), None),
        (Some(round_two + 1), Some("MOVE_AFTER_ROUND_END"))
    );
    // `round 1` twice.
    let mut twice = lines.clone();
    let round_one = lines.iter().position(|l| *l == "round 1").unwrap();
    twice.insert(round_one + 1, "round 1");
    assert_eq!(
        import_reason(&(twice.join("\n") + "\n"), None).1,
        Some("ROUND_OUT_OF_ORDER")
    );
}

#[test]
fn nothing_may_follow_the_end_of_the_match() {
    let (text, _) = finished_record(2, false, 30);
    let extra = format!("{text}R1 0,0\n");
    let lines = text.lines().count();
    assert_eq!(
        import_reason(&extra, None),
        (Some(lines + 1), Some("MOVE_AFTER_MATCH_END"))
    );
    let round = format!("{text}round 9\n");
    assert_eq!(import_reason(&round, None).1, Some("ROUND_OUT_OF_ORDER"));
}

#[test]
fn a_stated_result_must_be_the_replays() {
    let (text, game) = finished_record(4, true, 31);
    let outcome = game.outcome().unwrap();
    let stated = if outcome.winners.contains(seat(1)) {
        "team 1"
    } else {
        "team 2"
    };
    assert!(text.contains(&format!("result: {stated}\n")), "{text}");
    let other = if stated == "team 1" {
        "team 2"
    } else {
        "team 1"
    };
    let wrong = text.replace(&format!("result: {stated}"), &format!("result: {other}"));
    assert_eq!(import_reason(&wrong, None).1, Some("RESULT_MISMATCH"));
}

#[test]
fn the_canonical_record_writes_every_round_begun() {
    let game = options(2, false).start(Some(setup([32; 32])));
    // Labels are not written: §12's canonical contents have no place for
    // them (docs/PUNTO.md, "Header keys").
    let text = game.record(&[("event".into(), "club night".into())], Viewer::Spectator);
    let c = hex(&setup([32; 32]).commitment());
    assert_eq!(
        text,
        format!(
            "game: punto\nplayers: 2\nteam: no\nrounds_to_win: 2\nmax_rounds: 0\ncommitment: {c}\n\nround 1\n"
        )
    );
    let with_entropy = RuleOptions::new(3, false, 3, 7, &[0xca, 0xfe])
        .unwrap()
        .start(Some(setup([32; 32])));
    let header = with_entropy.rules_header();
    assert!(
        header.starts_with(
            "game: punto\nplayers: 3\nteam: no\nrounds_to_win: 3\nmax_rounds: 7\ncommitment: "
        ),
        "{header}"
    );
    assert!(header.ends_with("\nentropy: cafe\n"), "{header}");
    assert!(!header.contains("seed"));
}

#[test]
fn a_bare_move_list_replays_as_the_game_contract_stores_moves() {
    let (text, game) = finished_record(3, false, 33);
    let moves: Vec<String> = snapshot_moves(game.as_ref());
    let bare = format!("{}\n{}\n", game.rules_header(), moves.join("\n"));
    let back = import(&bare, Some(setup([33; 32]))).unwrap();
    assert_eq!(back.game.record(&[], Viewer::Spectator), text);
}

fn snapshot_moves(game: &dyn Game) -> Vec<String> {
    let text = game.record(&[], Viewer::Spectator);
    text.lines()
        .filter_map(|l| {
            l.split_once(' ')
                .filter(|(c, _)| c.len() == 2)
                .map(|(_, m)| m.to_string())
        })
        .collect()
}

// --- The Game face ----------------------------------------------------------------------

#[test]
fn seats_are_named_by_the_colours_they_play() {
    let names = |p, t| options(p, t).start(Some(setup([0; 32]))).seat_names();
    assert_eq!(names(2, false), ["red-blue", "orange-green"]);
    assert_eq!(names(3, false), ["red", "orange", "blue"]);
    assert_eq!(names(4, false), ["red", "orange", "blue", "green"]);
    assert_eq!(
        names(4, true),
        [
            "red-blue-1",
            "orange-green-1",
            "red-blue-2",
            "orange-green-2"
        ]
    );
}

#[test]
fn moves_are_given_as_a_cell_or_as_notation() {
    let mut game = options(2, false).start(Some(setup([34; 32])));
    assert_eq!(
        refusal_of(
            game.as_mut(),
            &MoveInput::new(PuntoMoveInput::Cell(Cell::new(1, 0)))
        ),
        "FIRST_CARD_NOT_CENTER"
    );
    assert_eq!(
        refusal_of(game.as_mut(), &notation("0 ,0").unwrap()),
        "MALFORMED"
    );
    let report = game.play(&notation(" 0,0\n").unwrap()).unwrap();
    assert_eq!(
        (
            report.detail.notation.as_str(),
            report.detail.kind,
            report.seat
        ),
        ("0,0", "place", seat(1))
    );
    assert_eq!(report.next, Some(seat(2)));
    assert_eq!(
        refusal_of(
            game.as_mut(),
            &MoveInput::new(PuntoMoveInput::Cell(Cell::new(2, 0)))
        ),
        "NOT_ADJACENT"
    );
    assert_eq!(
        refusal_of(
            game.as_mut(),
            &MoveInput::new(PuntoMoveInput::Cell(Cell::new(9, 0)))
        ),
        "OUTSIDE_AREA"
    );
    assert_eq!(game.ply(), 1);
}

#[test]
fn a_move_reports_the_card_it_revealed_and_a_listed_move_reveals_nothing() {
    let mut game = options(3, false).start(Some(setup([35; 32])));
    let listed = game.legal_moves();
    let info = listed[0].detail.get::<PuntoMoveInfo>().unwrap();
    assert!(!info.played && info.next.is_none() && listed[0].next.is_none());
    let report = game.play(&listed[0].detail.to_input()).unwrap();
    let played = report.detail.get::<PuntoMoveInfo>().unwrap();
    let view = snapshot(game.as_ref());
    assert_eq!(
        played.next.map(|n| (n.seat, n.card)),
        view.mover.zip(view.revealed)
    );
}

#[test]
fn a_round_ending_move_reports_the_result_and_the_next_rounds_first_card() {
    let mut game = options(4, false).start(Some(setup([36; 32])));
    let mut rng = Lcg(36);
    loop {
        let legal = game.legal_moves();
        let report = game
            .play(&legal[rng.below(legal.len())].detail.to_input())
            .unwrap();
        let info = report.detail.get::<PuntoMoveInfo>().unwrap().clone();
        if let Some(result) = info.round_result {
            assert_eq!(result.round, 1);
            assert_eq!(report.next, result.next_first);
            let next = info.next.unwrap();
            assert_eq!((next.round, Some(next.seat)), (2, result.next_first));
            let view = snapshot(game.as_ref());
            assert_eq!(
                (view.round, view.revealed, view.ply),
                (2, Some(next.card), report.ply)
            );
            assert!(view.table.is_empty() && view.last_table.is_some());
            if result.kind == RoundKind::Row {
                assert_eq!(result.placed_by, Some(report.seat));
            }
            break;
        }
    }
}

#[test]
fn outcomes_name_the_winning_sides_seats_with_round_wins_as_scores() {
    let (_, game) = finished_record(4, true, 37);
    let outcome = game.outcome().unwrap();
    assert_eq!(outcome.reason, "ROUNDS_WON");
    assert_eq!(outcome.winners.len(), 2);
    let team_one = outcome.winners.contains(seat(1));
    assert_eq!(
        outcome.winners.contains(seat(3)),
        team_one,
        "partners win together"
    );
    assert_eq!(outcome.scores[0], outcome.scores[2]);
    assert_eq!(outcome.scores[1], outcome.scores[3]);
    assert_eq!(outcome.scores[if team_one { 0 } else { 1 }], 2);
}

#[test]
fn a_resigning_seat_among_three_lets_both_others_win() {
    let mut game = options(3, false).start(Some(setup([38; 32])));
    let outcome = game
        .conclude(RefereeAction::Resignation { loser: seat(2) })
        .unwrap();
    assert_eq!(outcome.winners, SeatSet::only(seat(1)).with(seat(3)));
    assert_eq!(outcome.scores, [0, 0, 0]);
    let text = game.record(&[], Viewer::Spectator);
    assert!(
        text.contains("ending: RESIGNATION seat 2\n") && text.contains("seed: "),
        "{text}"
    );
    assert!(!text.contains("result:"));
    let back = punto::referee::import(&text, None).unwrap();
    assert_eq!(back.game.outcome(), Some(outcome));
}

#[test]
fn a_resigning_partner_loses_with_its_team() {
    let mut game = options(4, true).start(Some(setup([39; 32])));
    let outcome = game
        .conclude(RefereeAction::Timeout { loser: seat(3) })
        .unwrap();
    assert_eq!(
        (outcome.winners, outcome.reason),
        (SeatSet::only(seat(2)).with(seat(4)), "TIMEOUT")
    );
    assert_eq!(
        refusal_of(game.as_mut(), &notation("0,0").unwrap()),
        "GAME_OVER"
    );
    assert!(game.conclude(RefereeAction::DrawAgreement).is_err());
}

#[test]
fn every_viewer_sees_the_same_and_nobody_sees_a_deck_order_before_the_end() {
    let mut game = options(3, false).start(Some(setup([40; 32])));
    game.play(&notation("0,0").unwrap()).unwrap();
    let spectator = snapshot(game.as_ref());
    assert!(spectator.seed.is_none() && spectator.decks.iter().all(|d| d.order.is_none()));
    for s in 1..=3 {
        let seen = game
            .snapshot(Viewer::Seat(seat(s)))
            .get::<PuntoState>()
            .unwrap()
            .clone();
        assert_eq!(seen, spectator);
    }
    assert!(game.hides_information());
    let deck = &spectator.decks[1];
    assert_eq!((deck.size, deck.contents.len()), (23, 23));
    assert_eq!(deck.neutral.map(|n| n.len()), Some(6));
    let text = game.record(&[], Viewer::Seat(seat(1)));
    assert!(!text.contains(&hex(&[40; 32])) && text.contains(&hex(&setup([40; 32]).commitment())));
    game.conclude(RefereeAction::Aborted).unwrap();
    let after = snapshot(game.as_ref());
    assert_eq!(after.seed, Some([40; 32]));
    assert!(
        after
            .decks
            .iter()
            .all(|d| d.order.as_ref().map(Vec::len) == Some(d.size))
    );
}

#[test]
fn the_svg_marks_the_winning_row_and_draws_the_table() {
    let (_, game) = finished_record(2, false, 41);
    let svg = game
        .snapshot(Viewer::Spectator)
        .svg(game.last_move().as_ref(), game.outcome().as_ref());
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    assert!(svg.contains("stroke-linecap=\"round\""), "a row is marked");
    assert!(svg.contains("seed "), "the seed once over");
    let fresh = options(2, false).start(Some(setup([41; 32])));
    let svg = fresh.snapshot(Viewer::Spectator).svg(None, None);
    assert!(svg.contains("seat 1 (red-blue) places"));
}

#[test]
fn the_rules_travel_with_the_game() {
    let game = RuleOptions::new(4, true, 3, 9, &[1, 2])
        .unwrap()
        .start(Some(setup([42; 32])));
    let rules: GameRules = game.rules();
    assert_eq!(
        (rules.game_name(), rules.variant_name()),
        ("punto", "teams")
    );
    assert!(rules.rules().seeded());
    assert_eq!(
        rules.get::<RuleOptions>().map(|o| o.rounds_to_win()),
        Some(3)
    );
}

#[test]
fn a_games_debug_form_shows_neither_the_seed_nor_a_deck_order() {
    let mut game = options(2, false).start(Some(setup([43; 32])));
    game.play(&notation("0,0").unwrap()).unwrap();
    let text = format!("{game:?}");
    assert!(
        !text.contains(&hex(&[43; 32])) && !text.contains("43, 43"),
        "{text}"
    );
    let deck = format!(
        "{:?}",
        Engine::new(options(2, false), &[43; 32])
            .round()
            .deck(seat(1))
    );
    assert_eq!(deck, "Deck(35 cards)");
}
