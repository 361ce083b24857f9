//! A lazily made game answers as the engine's game does, before and after
//! it is made, and is made only by a change.

use super::*;
use crate::games::{dots, punto, random_game};

/// The rules of each game, with a setup for the seeded ones.
fn every_game() -> Vec<(GameRules, Option<Setup>)> {
    let seeded = Some(Setup {
        seed: [7; 32],
        supplied: true,
    });
    vec![
        (GameRules::default(), None),
        (GameRules::new(dots::RuleOptions::default()), None),
        (
            GameRules::new(
                dots::RuleOptions::new(8, 8, dots::Start::QuadrupleCross, 0).expect("options"),
            ),
            seeded,
        ),
        (GameRules::new(punto::RuleOptions::default()), seeded),
    ]
}

/// Every read of the trait, as text, for `viewer`.
fn reads(game: &dyn Game, viewer: Viewer) -> String {
    let legal: Vec<String> = game
        .legal_moves()
        .iter()
        .map(|m| m.detail.notation.clone())
        .collect();
    format!(
        "{:?} {:?} {} {:?} {:?} {:?} {} {} {:?}\n{:?}\n{:?}\n{}\n{}\n{}",
        game.rules(),
        game.seat_names(),
        game.ply(),
        game.to_move(),
        game.outcome(),
        game.setup().map(|s| (s.seed, s.supplied)),
        game.hides_information(),
        game.dealt(),
        game.last_move().map(|m| m.notation),
        game.snapshot(viewer),
        game.snapshot_at(game.ply(), viewer),
        legal.join(" "),
        game.record(&[], viewer),
        game.rules_header(),
    )
}

#[test]
fn an_unmade_game_reads_as_the_start_and_a_read_makes_nothing() {
    for (rules, setup) in every_game() {
        let lazy = LazyGame::new(rules.clone(), setup);
        let engine = rules.rules().start(setup);
        for viewer in [Viewer::Spectator, Viewer::Seat(Seat::FIRST)] {
            assert_eq!(reads(&lazy, viewer), reads(&*engine, viewer), "{rules:?}");
        }
        assert!(!lazy.is_made(), "{rules:?}: a read made the game");
        assert!(!lazy.clone().is_made());
    }
}

#[test]
fn a_refused_change_leaves_it_unmade_and_a_move_makes_it() {
    for (rules, setup) in every_game() {
        let mut lazy = LazyGame::new(rules.clone(), setup);
        // A move of another game is refused and changes nothing.
        let foreign = MoveInput::new(0u64);
        assert!(lazy.play(&foreign).is_err());
        assert!(!lazy.is_made(), "{rules:?}");
        let first = lazy.legal_moves()[0].detail.to_input();
        let report = lazy.play(&first).expect("a legal move");
        assert!(lazy.is_made(), "{rules:?}");
        assert_eq!(report.ply, 1);
        // A copy made before the move is still at the start.
        let mut engine = rules.rules().start(setup);
        engine.play(&first).expect("the same move");
        assert_eq!(
            reads(&lazy, Viewer::Spectator),
            reads(&*engine, Viewer::Spectator)
        );
    }
}

#[test]
fn whole_games_played_on_it_are_the_engines_games() {
    for (rules, setup) in every_game() {
        for seed in 0..3 {
            let mut lazy = LazyGame::new(rules.clone(), setup);
            let mut engine = rules.rules().start(setup);
            let on_lazy = random_game(&mut lazy, seed);
            let on_engine = random_game(&mut *engine, seed);
            assert_eq!(on_lazy, on_engine, "{rules:?}");
            assert_eq!(
                reads(&lazy, Viewer::Spectator),
                reads(&*engine, Viewer::Spectator)
            );
        }
    }
}

#[test]
fn a_referee_ending_makes_it_and_a_second_is_refused() {
    for (rules, setup) in every_game() {
        let mut lazy = LazyGame::new(rules.clone(), setup);
        let mut engine = rules.rules().start(setup);
        let outcome = lazy.conclude(RefereeAction::Aborted).expect("abort");
        assert_eq!(Some(outcome), engine.conclude(RefereeAction::Aborted).ok());
        assert!(lazy.is_made());
        assert!(lazy.conclude(RefereeAction::Aborted).is_err());
        assert_eq!(
            reads(&lazy, Viewer::Spectator),
            reads(&*engine, Viewer::Spectator)
        );
    }
}

#[test]
fn an_unmade_game_is_small() {
    // The point of the type: an idle game holds tens of bytes, not the
    // kilobytes of a start position (docs/BENCHMARKS.md, "Memory per idle
    // game").
    assert!(std::mem::size_of::<LazyGame>() <= 128);
}
