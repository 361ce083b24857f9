//! Properties of random Punto matches (2, 3 and 4 players, and teams, with
//! random options and entropy): every legal cell plays and every other cell
//! is refused without changing anything; cards are conserved (table, decks,
//! revealed card and removed cards are always the 72); every round's decks
//! are the deal of docs/rules/punto.md §10.6 recomputed independently, so every
//! revealed card is the deal's; records round-trip and replay from the seed;
//! matches end with a valid result. Only `punct_referee::games` is used.

use proptest::prelude::*;

use punct_referee::games::punto::deal::{self, Key};
use punct_referee::games::punto::referee::import;
use punct_referee::games::punto::{
    Card, CardCounts, Cell, Configuration, EndReason, Engine, RoundKind, RuleOptions, Table,
};
use punct_referee::games::{Rules, Seat, Setup, Viewer};

/// Every card of the match, wherever it is: table, decks, the revealed card
/// and the removed cards (once the match is over the last removed card is
/// still on the last table: no round follows to take it off).
fn all_cards(game: &Engine) -> CardCounts {
    let round = game.round();
    let mut counts = CardCounts::EMPTY;
    for card in round.table().all_cards() {
        counts.add(card);
    }
    for seat in Seat::all(game.configuration().seats()) {
        for &card in round.deck(seat).remaining() {
            counts.add(card);
        }
    }
    if let Some(card) = round.revealed() {
        counts.add(card);
    }
    let still_on_table =
        game.is_over() && game.results().last().is_some_and(|r| r.removed.is_some());
    let taken = game.removed().len() - usize::from(still_on_table);
    for &card in &game.removed()[..taken] {
        counts.add(card);
    }
    counts
}

/// The decks of the round in play, recomputed from the key, the cards in
/// the match and the neutral cards held (§3.2, §10.6).
fn expected_decks(game: &Engine) -> Vec<Vec<Card>> {
    let configuration = game.configuration();
    let key: &Key = game.key();
    let round = game.round().number();
    let in_match = game.in_match();
    let own = |side: usize| {
        configuration
            .colours(side)
            .iter()
            .fold(CardCounts::EMPTY, |acc, &c| acc.plus(&in_match.only(c)))
    };
    if configuration.is_team() {
        let (one_low, one_high) = deal::deal_team(key, round, 1, &own(0));
        let (two_low, two_high) = deal::deal_team(key, round, 2, &own(1));
        return vec![one_low, two_low, one_high, two_high];
    }
    (0..configuration.seats())
        .map(|seat| {
            let neutral = game.neutral_dealt().get(seat).copied().unwrap_or_default();
            deal::deal_deck(key, round, seat, &own(seat).plus(&neutral))
        })
        .collect()
}

fn configuration(pick: u8) -> (u32, bool) {
    match pick % 4 {
        0 => (2, false),
        1 => (3, false),
        2 => (4, false),
        _ => (4, true),
    }
}

/// Checks everything a position must hold, and that refused cells change
/// nothing.
fn check_position(game: &mut Engine, probe: &mut impl FnMut() -> i32) {
    assert_eq!(all_cards(game), CardCounts::FULL, "cards are conserved");
    let configuration = game.configuration();
    for seat in Seat::all(configuration.seats()) {
        let side = configuration.side_index(seat);
        for &card in game.round().deck(seat).remaining() {
            let owner = configuration.owner(card.colour());
            assert!(
                owner.is_none() || owner == Some(side),
                "{card} in {seat}'s deck"
            );
        }
    }
    let legal = game.legal_cells();
    let sorted = legal
        .as_slice()
        .windows(2)
        .all(|w| (w[0].x, w[0].y) < (w[1].x, w[1].y));
    assert!(sorted, "legal cells sorted by x, then y");
    assert_eq!(legal.is_empty(), game.is_over());
    // The listed cells are exactly those `check` accepts, over a square
    // larger than the reachable one.
    let accepted: Vec<Cell> = (-6..=6)
        .flat_map(|x| (-6..=6).map(move |y| Cell::new(x, y)))
        .filter(|&cell| game.check(cell).is_ok())
        .collect();
    assert_eq!(
        legal.as_slice(),
        accepted.as_slice(),
        "legal cells = accepted cells"
    );
    for _ in 0..6 {
        let cell = Cell::new(probe(), probe());
        if legal.as_slice().contains(&cell) {
            continue;
        }
        let before = game.clone();
        assert!(game.play(cell).is_err(), "{cell} is not legal");
        assert_eq!(*game, before, "a refused cell changes nothing");
    }
}

/// Plays a whole match with random legal cells, checking every position
/// and each round's deal.
fn play_checked(options: RuleOptions, seed: [u8; 32], mut rng: u64) -> Engine {
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut game = Engine::new(options, &seed);
    let mut dealt_round = 0;
    loop {
        if game.round().number() != dealt_round && !game.is_over() {
            dealt_round = game.round().number();
            let dealt: Vec<Vec<Card>> = Seat::all(game.configuration().seats())
                .map(|s| game.round().deck(s).dealt().to_vec())
                .collect();
            assert_eq!(
                dealt,
                expected_decks(&game),
                "round {dealt_round} is dealt as §10.6 says"
            );
            assert_eq!(
                game.revealed(),
                dealt[game.mover().unwrap().index()].first().copied()
            );
        }
        let mut probe = || (next() % 15) as i32 - 7;
        check_position(&mut game, &mut probe);
        if game.is_over() {
            return game;
        }
        let legal = game.legal_cells();
        let cell = legal.as_slice()[(next() % legal.len() as u64) as usize];
        let before = game.revealed();
        let placed = game.play(cell).expect("every legal cell plays");
        assert_eq!(Some(placed.placement.card), before);
        // The round ends by a row exactly when the placed card makes one,
        // checked here by walking the top cards cell by cell.
        let by_row = placed
            .round_result
            .as_ref()
            .is_some_and(|result| result.kind == RoundKind::Row);
        let table = if placed.round_result.is_some() {
            game.last_table().expect("a finished round's table")
        } else {
            game.round().table()
        };
        assert_eq!(
            by_row,
            naive_row(table, cell, game.configuration()),
            "row at {cell}"
        );
        assert!(game.ply() < 72 * 99, "a match ends");
    }
}

/// Whether the top card of `cell` is in a line of at least the row length
/// of its own (non-neutral) colour: top cards read one cell at a time.
fn naive_row(table: &Table, cell: Cell, configuration: Configuration) -> bool {
    let Some(colour) = table
        .top(cell)
        .map(Card::colour)
        .filter(|&c| Some(c) != configuration.neutral())
    else {
        return false;
    };
    let same = |x: i32, y: i32| table.top(Cell::new(x, y)).map(Card::colour) == Some(colour);
    [(1, 0), (0, 1), (1, 1), (1, -1)].iter().any(|&(dx, dy)| {
        let mut n = 1;
        let mut k = 1;
        while same(cell.x + k * dx, cell.y + k * dy) {
            n += 1;
            k += 1;
        }
        k = 1;
        while same(cell.x - k * dx, cell.y - k * dy) {
            n += 1;
            k += 1;
        }
        n >= i32::from(configuration.row_length())
    })
}

/// The end of a finished match is valid (§9).
fn check_end(game: &Engine) {
    let outcome = game.outcome().expect("over");
    let options = game.options();
    let most = outcome.wins.iter().copied().max().unwrap_or(0);
    match outcome.reason {
        EndReason::RoundsWon => {
            let winner = outcome
                .winner
                .and_then(|w| game.configuration().index_of(w));
            assert_eq!(
                winner.map(|w| outcome.wins[w]),
                Some(options.rounds_to_win())
            );
        }
        EndReason::RoundLimit => {
            assert_eq!(game.results().len() as u32, options.max_rounds());
            let leaders = outcome.wins.iter().filter(|&&w| w == most).count();
            assert_eq!(outcome.winner.is_some(), leaders == 1);
        }
    }
    let won: u32 = outcome.wins.iter().sum();
    assert_eq!(
        game.removed().len() as u32,
        won,
        "one card removed per won round"
    );
    assert!(
        game.results()
            .iter()
            .all(|r| r.winner.is_some() == r.removed.is_some())
    );
    assert_eq!(game.results().last().and_then(|r| r.next_first), None);
}

fn options_strategy() -> impl Strategy<Value = RuleOptions> {
    (
        any::<u8>(),
        1u32..=3,
        0u32..=3,
        proptest::collection::vec(any::<u8>(), 0..=8),
    )
        .prop_map(|(pick, rounds_to_win, max_rounds, entropy)| {
            let (players, team) = configuration(pick);
            RuleOptions::new(players, team, rounds_to_win, max_rounds, &entropy).expect("valid")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_matches_play_conserve_cards_follow_the_deal_and_end_validly(
        options in options_strategy(),
        seed in any::<[u8; 32]>(),
        rng in 1u64..,
    ) {
        let game = play_checked(options, seed, rng);
        check_end(&game);
    }

    #[test]
    fn records_round_trip_and_replay_from_the_seed(
        options in options_strategy(),
        seed in any::<[u8; 32]>(),
        rng in 1u64..,
        stop in 0u32..200,
    ) {
        let setup = Setup { seed, supplied: false };
        let mut game = options.start(Some(setup));
        let mut state = rng;
        while game.to_move().is_some() && game.ply() < stop {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let legal = game.legal_moves();
            let pick = &legal[((state >> 33) % legal.len() as u64) as usize];
            game.play(&pick.detail.to_input()).expect("a listed move plays");
        }
        let tags = vec![("event".to_string(), "proptest".to_string())];
        let text = game.record(&tags, Viewer::Spectator);
        let over = game.outcome().is_some();
        prop_assert_eq!(text.contains("seed:"), over);
        if !over {
            prop_assert_eq!(import(&text, None).unwrap_err().reason, Some("SEED_NOT_REVEALED"));
        }
        let back = import(&text, (!over).then_some(setup)).expect("its own record replays");
        prop_assert_eq!(back.game.record(&back.tags, Viewer::Spectator), text);
        prop_assert_eq!(back.game.outcome(), game.outcome());
        prop_assert_eq!(back.moves.len() as u32, game.ply());
    }
}

/// A finished record of a random 3-player match, for mutating.
fn sample_record() -> String {
    let options = RuleOptions::new(3, false, 1, 0, &[0xab]).expect("valid");
    let setup = Setup {
        seed: [44; 32],
        supplied: false,
    };
    let mut game = options.start(Some(setup));
    let mut state = 9u64;
    while game.to_move().is_some() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
        let legal = game.legal_moves();
        let pick = &legal[((state >> 33) % legal.len() as u64) as usize];
        game.play(&pick.detail.to_input())
            .expect("a listed move plays");
    }
    game.record(&[], Viewer::Spectator)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_text_as_a_move_is_played_or_refused_never_a_panic(text in "\\PC{0,24}|-?[0-9]{1,30},-?[0-9]{1,30}") {
        let mut game = Engine::new(RuleOptions::default(), &[45; 32]);
        game.play_text("0,0").expect("the centre");
        let before = game.clone();
        if game.play_text(&text).is_err() {
            prop_assert_eq!(game, before);
        }
    }

    #[test]
    fn a_mutated_record_imports_or_is_refused_never_a_panic(
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..6, "\\PC{0,4}"), 1..4),
    ) {
        let mut text = sample_record();
        for (at, len, insert) in cuts {
            let mut start = at.index(text.len() + 1);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (start + len).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(start..end, &insert);
        }
        if let Err(error) = import(&text, None) {
            prop_assert!(error.reason.is_some(), "every refusal has a reason: {}", error.message);
        }
    }
}

#[test]
fn a_thousand_random_matches_of_each_configuration_end_validly() {
    for pick in 0..4u8 {
        let (players, team) = configuration(pick);
        let options = RuleOptions::new(players, team, 2, 0, &[]).expect("valid");
        for i in 0..1000u64 {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i * 4 + u64::from(pick)).to_le_bytes());
            let mut game = Engine::new(options, &seed);
            let mut state = i + 1;
            while !game.is_over() {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let legal = game.legal_cells();
                let cell = legal.as_slice()[((state >> 33) % legal.len() as u64) as usize];
                game.play(cell).expect("every legal cell plays");
            }
            check_end(&game);
            assert_eq!(all_cards(&game), CardCounts::FULL);
        }
    }
}

#[test]
fn every_configuration_is_one_of_the_rules() {
    for pick in 0..4 {
        let (players, team) = configuration(pick);
        let c = Configuration::of(players, team).expect("valid");
        assert_eq!((c.seats() as u32, c.is_team()), (players, team));
    }
}
