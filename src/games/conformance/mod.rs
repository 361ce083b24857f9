//! The conformance suite every game passes, as every store passes the
//! storage one: checks of the [`Game`] contract that a game's own tests run
//! on random games drawn from an RNG seed. Each `check_*` function checks one
//! part of the contract and panics with a message naming the game, the RNG
//! seed, the game and ply and what disagreed; [`run_all`] runs them all on
//! one set of random games. Pure like the rest of `games/` (its RNG is a
//! SplitMix64 of its own), so a game's unit tests can run it.
//!
//! Conventions the suite holds every game to beyond the trait's own docs: a
//! seed and its commitment appear in records as [`hex`]; a refused import of
//! a record whose seed does not match its commitment says `SEED_MISMATCH`;
//! a move or a referee action after the end is refused with `GAME_OVER`; a
//! foreign move payload is [`MoveError::Malformed`]; a rules header followed
//! by a blank line and one move notation a line is a record.

use sha2::Digest as _;

mod asserts;
mod checks;
mod parts;

use asserts::*;
use checks::*;
use parts::*;

use super::{
    Game, GameRules, Importer, MAX_SEATS, MoveError, MoveInput, MoveReport, Outcome, RefereeAction,
    Replayed, Seat, SeatSet, Setup, Viewer, hex, replay_moves,
};

/// A game as the suite drives it, and how far to drive it.
#[derive(Debug, Clone)]
pub struct Subject {
    /// What failure messages call it (`punct standard`).
    pub label: &'static str,
    /// The rules every game of the suite starts from.
    pub rules: GameRules,
    /// The game's record importer.
    pub import: Importer,
    /// A move given as notation text, as the service's syntax check turns it
    /// into input (`None` when the text is not the game's notation).
    pub notation: fn(&str) -> Option<MoveInput>,
    /// Notation texts the game reads but never accepts as a move.
    pub never_legal: &'static [&'static str],
    /// Whether the game is set up from a seed (must agree with
    /// [`Rules::seeded`](super::Rules::seeded)).
    pub seeded: bool,
    /// How much of it the suite plays.
    pub bounds: Bounds,
}

/// How much the suite plays. Its ply-by-ply checks cost a few listings of
/// the legal moves per ply, so a game with thousands of legal moves a ply
/// checks fewer plies than a small one.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Random games per run.
    pub games: usize,
    /// Where a random game still going is stopped: long enough for most
    /// random games of the game to end on the board.
    pub ply_cap: u32,
    /// How many plies of each game, from the start, are checked one by one
    /// (replays compared, listed moves played, refusals tried, snapshots
    /// replayed); the game as a whole is checked to its end.
    pub checked_plies: u32,
    /// How many listed moves are played on a copy at each checked ply (all
    /// of them when there are no more).
    pub moves_per_ply: usize,
}

/// Runs every check of the suite on one set of random games drawn from
/// `rng_seed`.
pub fn run_all(subject: &Subject, rng_seed: u64) {
    check_seats_and_rules(subject);
    let games = playthroughs(subject, rng_seed);
    for pt in &games {
        replays_agree(subject, pt);
        same_move_recognises(subject, pt);
        record_round_trips(subject, pt);
        moves_play_and_refusals_change_nothing(subject, pt);
        snapshots_at_agree(subject, pt);
        setup_is_reproducible_and_committed(subject, pt);
        game_ends_properly(subject, pt);
        decisions_change_nothing(subject, pt);
    }
    seeded_records_reveal_the_seed_only_at_the_end(subject, rng_seed);
    check_referee_endings(subject, rng_seed);
}

/// The game names its seats (2..=[`MAX_SEATS`], distinct, non-empty) and
/// reports the rules it was started from; [`Subject::seeded`] agrees with
/// the rules.
pub fn check_seats_and_rules(subject: &Subject) {
    let at = subject.label;
    let game = start(subject, fixed_setup(subject));
    let names = game.seat_names();
    if !(2..=MAX_SEATS).contains(&names.len()) {
        fail(at, format!("{} seats, not 2..={MAX_SEATS}", names.len()));
    }
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() || names[..i].contains(name) {
            fail(at, format!("seat names {names:?}: empty or repeated"));
        }
    }
    let rules = game.rules();
    if (rules.game_name(), rules.variant_name())
        != (subject.rules.game_name(), subject.rules.variant_name())
    {
        fail(at, "the game reports other rules than it was started from");
    }
    if subject.seeded != subject.rules.rules().seeded() {
        fail(at, "Subject::seeded disagrees with Rules::seeded");
    }
}

/// (a) Replaying the moves and importing the game's record give the same
/// game: same reports, and the same ply, turn, outcome, snapshots and legal
/// moves at every ply.
pub fn check_replays_agree(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        replays_agree(subject, pt);
    }
}

/// (b) `same_move` recognises each played move however it is given, and
/// rejects another move and a ply beyond the game.
pub fn check_same_move(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        same_move_recognises(subject, pt);
    }
}

/// (c) A record imports back to the same record with its tags, and the
/// rules header followed by the moves replays the game.
pub fn check_records_round_trip(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        record_round_trips(subject, pt);
    }
}

/// (d) At every ply: the legal moves are sorted by notation without
/// duplicates, reported for the seat to move and the next ply, and each
/// plays; each refused move gives a [`MoveError`] and changes nothing.
pub fn check_moves_and_refusals(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        moves_play_and_refusals_change_nothing(subject, pt);
    }
}

/// (e) `snapshot_at(p)` is a fresh replay of the first `p` moves, for every
/// viewer, and `None` past the ply.
pub fn check_snapshots_at(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        snapshots_at_agree(subject, pt);
    }
}

/// (f) A seeded game is reproducible from its seed alone, never shows the
/// seed in its rules header or before its end, and commits to it: an
/// unfinished record is refused without the seed (`SEED_NOT_REVEALED`), a
/// finished one reveals it and imports alone. An unseeded game has no setup.
pub fn check_seeding(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        setup_is_reproducible_and_committed(subject, pt);
    }
    seeded_records_reveal_the_seed_only_at_the_end(subject, rng_seed);
}

/// (g) Random games end with a valid outcome, or reach the ply cap with
/// legal moves left; once over, no move is listed, nobody is to move, and
/// moves and referee actions are refused.
pub fn check_random_games_end(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        game_ends_properly(subject, pt);
    }
}

/// (h) A move decided before it is played ([`Game::decide`]) is reported
/// or refused as playing it would, leaves the game as it was, and applied
/// makes the game playing makes.
pub fn check_decisions(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        decisions_change_nothing(subject, pt);
    }
}

/// (g) Every referee [`RefereeAction`] on a fresh game gives a valid outcome with the
/// ending's reason, never counts a loser among the winners, ends the game and
/// round-trips through the record.
pub fn check_referee_endings(subject: &Subject, rng_seed: u64) {
    let mut rng = Rng(rng_seed ^ 0xE7D1_5EED);
    let seats = start(subject, fixed_setup(subject)).seat_names().len();
    for ending in all_endings(seats) {
        let at = format!(
            "{} (rng seed {rng_seed}, fresh game, {ending:?})",
            subject.label
        );
        let setup = draw_setup(subject, &mut rng);
        let mut game = start(subject, setup);
        let first = game.legal_moves();
        conclude_checked(&at, game.as_mut(), ending);
        assert_over_and_refusing(subject, &at, game.as_mut(), &first, &mut rng);
        let text = game.record(&[], Viewer::Spectator);
        let back = import_ok(subject, &at, &text, None);
        assert_same_state(
            &at,
            "the imported concluded game",
            back.game.as_ref(),
            game.as_ref(),
        );
    }
}
