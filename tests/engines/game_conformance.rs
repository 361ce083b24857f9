//! The game conformance suite (`games::conformance`) on trio, the tests'
//! own three-seat seeded game (`tests/common/trio.rs`), and trio's own rules:
//! turn order chosen by the moves, rounds, team results, referee endings,
//! what each viewer sees, and its importer. PÜNCT runs the same suite in its
//! unit tests (`src/games/punct/referee.rs`). Only `punct_referee::games` is
//! used, so nothing here starts a server.

#[path = "../common/trio.rs"]
mod trio;

use punct_referee::games::conformance::{Bounds, Subject, run_all};
use punct_referee::games::{
    Game, GameRules, MoveError, MoveInput, MoveReport, RefereeAction, Rules, Seat, SeatSet, Setup,
    Viewer,
};
use trio::{Deal, Refusal, RoundEnd, TrioGame, TrioMove, TrioMoveDetail, TrioRules, TrioState};

fn subject(rounds: u8) -> Subject {
    Subject {
        label: "trio",
        rules: GameRules::new(TrioRules { rounds }),
        import: trio::import,
        notation: trio::notation,
        never_legal: &["0>red", "4>green", "9>blue"],
        seeded: true,
        // Six moves a ply and at most 15 plies a round: check everything.
        bounds: Bounds {
            games: 6,
            ply_cap: 15 * u32::from(rounds) + 1,
            checked_plies: 15 * u32::from(rounds) + 1,
            moves_per_ply: 6,
        },
    }
}

#[test]
fn trio_passes_the_conformance_suite() {
    for rng_seed in [1, 2, 3] {
        run_all(&subject(3), rng_seed);
    }
    run_all(&subject(1), 4);
}

// --- Trio's own rules ------------------------------------------------------

const RED: Seat = Seat::FIRST;
const GREEN: Seat = Seat::SECOND;
const BLUE: Seat = match Seat::new(2) {
    Some(seat) => seat,
    None => unreachable!(),
};

/// A seed whose first five bytes are `start` (rule 2: target, first mover,
/// the three secrets), the rest zero.
fn setup(start: [u8; 5]) -> Setup {
    let mut seed = [0u8; 32];
    seed[..5].copy_from_slice(&start);
    Setup {
        seed,
        supplied: true,
    }
}

/// Target 10, red first, every secret 3: moves of 1 and 2 never match.
const PLAIN: [u8; 5] = [0, 0, 2, 2, 2];

fn game(start: [u8; 5], rounds: u8) -> Box<dyn Game> {
    TrioRules { rounds }.start(Some(setup(start)))
}

fn play(game: &mut dyn Game, text: &str) -> MoveReport {
    let input = trio::notation(text).expect("trio notation");
    game.play(&input)
        .unwrap_or_else(|e| panic!("`{text}` at ply {}: {e}", game.ply()))
}

fn play_all(game: &mut dyn Game, texts: &[&str]) -> Vec<MoveReport> {
    texts.iter().map(|t| play(game, t)).collect()
}

fn snapshot(game: &dyn Game, viewer: Viewer) -> TrioState {
    game.snapshot(viewer)
        .get::<TrioState>()
        .expect("a trio snapshot")
        .clone()
}

fn trio_detail(report: &MoveReport) -> TrioMoveDetail {
    *report.detail.get::<TrioMoveDetail>().expect("a trio move")
}

fn refusal_reason(game: &mut dyn Game, input: &MoveInput) -> &'static str {
    match game.play(input) {
        Err(MoveError::Illegal { reason, .. }) => reason,
        other => panic!("not refused by a rule: {other:?}"),
    }
}

#[test]
fn the_seed_decides_target_first_mover_and_secrets() {
    let start = [5, 4, 0, 4, 8];
    let deal = Deal::from_seed(&setup(start).seed);
    assert_eq!(
        deal,
        Deal {
            target: 15,
            first: GREEN,
            secrets: [1, 2, 3],
        }
    );
    let g = game(start, 3);
    assert_eq!(g.to_move(), Some(GREEN));
    let view = snapshot(g.as_ref(), Viewer::Seat(BLUE));
    assert_eq!(
        (view.target, view.round, view.rounds, view.count),
        (15, 1, 3, 0)
    );
    assert_eq!(view.to_move, Some(GREEN));
}

#[test]
fn the_mover_names_who_moves_next_and_can_skip_a_seat() {
    let mut g = game(PLAIN, 3);
    let skip = play(g.as_mut(), "1>blue");
    assert_eq!((skip.seat, skip.next), (RED, Some(BLUE)));
    assert_eq!(g.to_move(), Some(BLUE), "green is skipped");
    play(g.as_mut(), "2>red");
    assert_eq!(g.to_move(), Some(RED));
    let legal: Vec<String> = g
        .legal_moves()
        .iter()
        .map(|m| m.detail.notation.clone())
        .collect();
    assert_eq!(
        legal,
        [
            "1>blue", "1>green", "2>blue", "2>green", "3>blue", "3>green"
        ],
        "any amount, any other seat"
    );
}

#[test]
fn refusals_name_the_rule_they_break() {
    let mut g = game(PLAIN, 3);
    let own = trio::notation("1>red").unwrap();
    assert_eq!(
        refusal_reason(g.as_mut(), &own),
        Refusal::NamesItself.reason()
    );
    let big = trio::notation("4>green").unwrap();
    assert_eq!(refusal_reason(g.as_mut(), &big), "AMOUNT_OUT_OF_RANGE");
    let fourth = MoveInput::new(TrioMove {
        amount: 1,
        next: Seat::new(3).unwrap(),
    });
    assert_eq!(refusal_reason(g.as_mut(), &fourth), "NO_SUCH_SEAT");
    assert!(trio::notation("2 to green").is_none());
    assert!(trio::notation("2>purple").is_none());
    assert_eq!(g.ply(), 0);
}

#[test]
fn a_round_ends_on_the_target_and_the_next_starts_at_zero() {
    let mut g = game(PLAIN, 3);
    let hit = play_all(
        g.as_mut(),
        &["2>green", "2>blue", "2>red", "2>green", "2>blue"],
    );
    let last = trio_detail(&hit[4]);
    assert_eq!(
        (last.mover, last.round_end, last.count),
        (GREEN, Some(RoundEnd::Hit), 0)
    );
    assert_eq!(hit[4].detail.kind, "hit");
    let view = snapshot(g.as_ref(), Viewer::Spectator);
    assert_eq!((view.round, view.count, view.points), (2, 0, [0, 2, 0]));
    assert_eq!(g.to_move(), Some(BLUE), "the seat named starts the round");
    let bust = play_all(
        g.as_mut(),
        &["2>red", "2>green", "2>blue", "2>red", "1>green", "2>blue"],
    );
    assert_eq!(trio_detail(&bust[5]).round_end, Some(RoundEnd::Bust));
    assert_eq!(bust[5].detail.kind, "bust");
    let view = snapshot(g.as_ref(), Viewer::Spectator);
    assert_eq!(
        (view.round, view.points),
        (3, [1, 2, 1]),
        "the others score"
    );
}

#[test]
fn two_seats_level_at_the_top_win_together() {
    let mut g = game(PLAIN, 1);
    let moves = play_all(
        g.as_mut(),
        &["2>green", "2>blue", "2>red", "2>green", "1>blue", "2>red"],
    );
    let outcome = g.outcome().expect("over after one round");
    assert_eq!(outcome.winners, SeatSet::only(RED).with(GREEN));
    assert_eq!(
        (outcome.reason, outcome.scores.as_slice()),
        ("SHARED_SCORE", &[1, 1, 0][..])
    );
    assert_eq!(moves[5].outcome.as_deref(), Some(&outcome));
    assert_eq!((moves[5].next, g.to_move()), (None, None));
    assert!(g.legal_moves().is_empty());
}

#[test]
fn a_single_top_score_wins_alone() {
    let mut g = game(PLAIN, 1);
    play_all(
        g.as_mut(),
        &["2>green", "2>blue", "2>red", "2>green", "2>blue"],
    );
    let outcome = g.outcome().unwrap();
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(GREEN), "HIGH_SCORE")
    );
    assert_eq!(outcome.scores, [0, 2, 0]);
}

#[test]
fn a_matched_secret_adds_a_bonus_point() {
    let mut g = game(PLAIN, 1);
    // Red adds its secret 3, then blue busts: red 1 + 1, green 1.
    play_all(
        g.as_mut(),
        &["3>green", "2>blue", "2>red", "2>blue", "2>green"],
    );
    let outcome = g.outcome().unwrap();
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(RED), "HIGH_SCORE")
    );
    assert_eq!(outcome.scores, [2, 1, 0]);
}

#[test]
fn three_level_scores_are_a_deadlock() {
    // Secrets: red 3, green 3, blue 1. Blue matches once, then busts.
    let mut g = game([0, 0, 2, 2, 0], 1);
    play_all(
        g.as_mut(),
        &["2>green", "2>blue", "1>red", "2>green", "2>blue", "2>red"],
    );
    let outcome = g.outcome().unwrap();
    assert_eq!(
        (outcome.reason, outcome.scores.as_slice()),
        ("DEADLOCK", &[1, 1, 1][..])
    );
    assert!(outcome.is_draw());
}

#[test]
fn each_seat_sees_only_its_own_secret() {
    let mut g = game([5, 0, 0, 4, 8], 3);
    let red = snapshot(g.as_ref(), Viewer::Seat(RED));
    assert_eq!(red.viewer, Viewer::Seat(RED));
    assert_eq!(red.secrets, [Some(1), None, None]);
    assert_eq!(
        snapshot(g.as_ref(), Viewer::Seat(BLUE)).secrets,
        [None, None, Some(3)]
    );
    assert_eq!(snapshot(g.as_ref(), Viewer::Spectator).secrets, [None; 3]);
    // Red adds its secret: only red learns it matched.
    let report = play(g.as_mut(), "1>green");
    assert_eq!(trio_detail(&report).matched, Some(true));
    let seen_by = |viewer| {
        *g.redact(&report.detail, viewer)
            .get::<TrioMoveDetail>()
            .unwrap()
    };
    assert_eq!(seen_by(Viewer::Seat(RED)).matched, Some(true));
    for viewer in [Viewer::Seat(GREEN), Viewer::Seat(BLUE), Viewer::Spectator] {
        let seen = seen_by(viewer);
        assert_eq!(
            (seen.matched, seen.mv, seen.count),
            (None, report_move(&report), 1)
        );
        assert_eq!(g.redact(&report.detail, viewer).notation, "1>green");
    }
    assert_eq!(
        snapshot(g.as_ref(), Viewer::Seat(RED)).bonus,
        [Some(1), None, None]
    );
    assert_eq!(
        snapshot(g.as_ref(), Viewer::Seat(GREEN)).bonus,
        [None, Some(0), None]
    );
    let green_svg = g.snapshot(Viewer::Seat(GREEN)).svg(None, None);
    assert!(
        green_svg.contains("red: 0 points, secret ?, bonus ?"),
        "{green_svg}"
    );
    assert!(
        green_svg.contains("green: 0 points, secret 2, bonus 0"),
        "{green_svg}"
    );
}

fn report_move(report: &MoveReport) -> TrioMove {
    report.detail.notation.parse().unwrap()
}

#[test]
fn resignation_lets_the_two_others_win_together() {
    let mut g = game(PLAIN, 3);
    play(g.as_mut(), "2>green");
    let outcome = g
        .conclude(RefereeAction::Resignation { loser: GREEN })
        .unwrap();
    assert_eq!(
        (outcome.winners, outcome.reason),
        (SeatSet::all_but(GREEN, 3), "RESIGNATION")
    );
    let record = g.record(&[], Viewer::Spectator);
    assert!(
        record.contains("result: red+blue RESIGNATION green"),
        "{record}"
    );
    let back = trio::import(&record, None).unwrap();
    assert_eq!(back.game.outcome(), Some(outcome));
    assert!(g.conclude(RefereeAction::DrawAgreement).is_err());
}

#[test]
fn a_timeout_loses_to_the_better_of_the_others() {
    let mut g = game(PLAIN, 3);
    play_all(
        g.as_mut(),
        &["2>green", "2>blue", "2>red", "2>green", "2>blue"],
    );
    let mut timeout = g.clone_box();
    let outcome = timeout
        .conclude(RefereeAction::Timeout { loser: RED })
        .unwrap();
    assert_eq!(
        (outcome.winner(), outcome.scores.as_slice()),
        (Some(GREEN), &[0, 2, 0][..])
    );
    // Red and blue are level: both beat the seat that left.
    let outcome = g
        .conclude(RefereeAction::Abandoned { loser: GREEN })
        .unwrap();
    assert_eq!(outcome.winners, SeatSet::only(RED).with(BLUE));
}

#[test]
fn the_importer_checks_the_seed_and_the_result() {
    let start = [3, 1, 0, 1, 2];
    let mut g = game(start, 3);
    play_all(g.as_mut(), &["1>blue", "3>green"]);
    let unfinished = g.record(&[("event".into(), "club".into())], Viewer::Spectator);
    let refused = trio::import(&unfinished, None).unwrap_err();
    assert_eq!(refused.reason, Some("SEED_NOT_REVEALED"));
    let back = trio::import(&unfinished, Some(setup(start))).unwrap();
    assert_eq!((back.game.ply(), back.moves.len()), (2, 2));
    assert_eq!(back.tags, [("event".to_string(), "club".to_string())]);
    let other = trio::import(&unfinished, Some(setup([3, 1, 0, 1, 1]))).unwrap_err();
    assert_eq!(other.reason, Some("SEED_MISMATCH"));

    g.conclude(RefereeAction::DrawAgreement).unwrap();
    let finished = g.record(&[], Viewer::Spectator);
    assert!(
        finished.contains("result: nobody DRAW_AGREEMENT"),
        "{finished}"
    );
    let claimed = finished.replace("nobody DRAW_AGREEMENT", "red HIGH_SCORE");
    assert_eq!(
        trio::import(&claimed, None).unwrap_err().reason,
        Some("RESULT_MISMATCH")
    );

    let illegal = format!(
        "{}\n1>green\n",
        TrioGame::new(TrioRules::default(), setup(start)).rules_header()
    );
    let error = trio::import(&illegal, Some(setup(start))).unwrap_err();
    assert_eq!((error.line, error.reason), (Some(4), Some("NAMES_ITSELF")));
}

#[test]
fn random_games_end_within_fifteen_plies_a_round() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for rounds in [1, 3, 9] {
        let bound = 15 * u32::from(rounds);
        for _ in 0..40 {
            let mut seed = [0u8; 32];
            rng.fill(&mut seed);
            let mut g = TrioRules { rounds }.start(Some(Setup {
                seed,
                supplied: false,
            }));
            while g.to_move().is_some() {
                assert!(
                    g.ply() < bound,
                    "{rounds} rounds still going at ply {}",
                    g.ply()
                );
                let legal = g.legal_moves();
                let pick = &legal[rng.random_range(0..legal.len())];
                g.play(&pick.detail.to_input()).unwrap();
            }
            assert!(g.outcome().is_some());
        }
    }
}

#[test]
fn a_catalog_with_trio_reads_each_record_with_its_own_importer() {
    let catalog = punct_referee::service::grpc::games::catalog().with("trio", trio::import);
    let mut g = game(PLAIN, 1);
    play_all(
        g.as_mut(),
        &["2>green", "2>blue", "2>red", "2>green", "2>blue"],
    );
    let back = catalog
        .import(&g.record(&[], Viewer::Spectator), None)
        .unwrap();
    assert_eq!(back.game.rules().game_name(), "trio");
    assert_eq!(back.game.outcome(), g.outcome());
    let punct = catalog
        .import("game: punct\n\nSE@E5:F5,G5\n", None)
        .unwrap();
    assert_eq!(punct.game.rules().game_name(), "punct");
    let unknown =
        punct_referee::service::grpc::games::catalog().import("game: trio\n\n1>red\n", None);
    assert_eq!(unknown.unwrap_err().reason, Some("UNKNOWN_GAME"));
}

#[path = "../../fuzz/src/lib.rs"]
#[allow(
    dead_code,
    reason = "the fuzz crate's helpers serve its binaries too; the replay calls every target"
)]
mod fuzz;

/// The fuzz targets' checks (`fuzz/src/targets/`), replayed on their
/// committed corpora (`fuzz/corpus/<target>/`) in the ordinary build, so a
/// regression on any seed input fails the test suite without the
/// instrumented fuzz build (docs/FUZZING.md; `scripts/fuzz.sh` explores
/// further, for as long as one asks).
mod fuzz_corpus {
    use super::fuzz;

    use std::path::{Path, PathBuf};

    /// The corpus files of one target, sorted by name (at least one).
    fn corpus(target: &str) -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus")
            .join(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| path.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus in {}", dir.display());
        files
    }

    /// Runs every corpus input of `target` through `run`, naming the input
    /// that fails.
    fn replay(target: &str, run: fn(&[u8])) {
        for path in corpus(target) {
            let data = std::fs::read(&path).expect("a corpus file reads");
            let outcome = std::panic::catch_unwind(|| run(&data));
            if let Err(panic) = outcome {
                eprintln!("fuzz target {target} fails on {}", path.display());
                std::panic::resume_unwind(panic);
            }
        }
    }

    #[test]
    fn the_notation_corpus_passes_the_notation_target() {
        replay("notation", fuzz::targets::notation::run);
    }

    #[test]
    fn the_record_corpus_passes_the_record_target() {
        replay("record", fuzz::targets::record::run);
    }

    #[test]
    fn the_request_corpus_passes_the_request_target() {
        replay("request", fuzz::targets::request::run);
    }

    #[test]
    fn the_moves_corpus_passes_the_moves_target() {
        replay("moves", fuzz::targets::moves::run);
    }

    #[test]
    fn the_punto_corpus_passes_the_punto_target() {
        replay("punto", fuzz::targets::punto::run);
    }

    #[test]
    fn the_dots_corpus_passes_the_dots_target() {
        replay("dots", fuzz::targets::dots::run);
    }

    #[test]
    fn the_dots_moves_corpus_passes_the_dots_moves_target() {
        replay("dots_moves", fuzz::targets::dots_moves::run);
    }
}
