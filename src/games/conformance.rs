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

use super::{
    Ending, Game, GameRules, Importer, MAX_SEATS, MoveError, MoveInput, MoveReport, Replayed, Seat,
    SeatSet, Setup, Verdict, Viewer, hex, replay_moves,
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
/// game: same reports, and the same ply, turn, verdict, snapshots and legal
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

/// (g) Random games end with a valid verdict, or reach the ply cap with
/// legal moves left; once over, no move is listed, nobody is to move, and
/// moves and referee actions are refused.
pub fn check_random_games_end(subject: &Subject, rng_seed: u64) {
    for pt in &playthroughs(subject, rng_seed) {
        game_ends_properly(subject, pt);
    }
}

/// (g) Every referee [`Ending`] on a fresh game gives a valid verdict with the
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

// --- The per-game checks -------------------------------------------------

/// One random game as played: its setup, the inputs given, the reports back,
/// the referee ending applied after them, and the game at the end.
struct Playthrough {
    at: String,
    setup: Option<Setup>,
    inputs: Vec<MoveInput>,
    reports: Vec<MoveReport>,
    ending: Option<Ending>,
    game: Box<dyn Game>,
    /// The legal moves at each checked ply (those up to
    /// [`Bounds::checked_plies`] the game reached).
    legal: Vec<Vec<MoveReport>>,
    /// The legal moves of the last position played from: before the move
    /// that ended the game, or when the referee ended it.
    before_end: Vec<MoveReport>,
    /// Seeds the sampling the checks do on this game.
    sample_seed: u64,
}

impl Playthrough {
    /// Whether ply `p` is one checked one by one.
    fn checked(&self, p: usize) -> bool {
        p < self.legal.len()
    }
}

fn replays_agree(subject: &Subject, pt: &Playthrough) {
    let text = pt.game.record(&[], Viewer::Spectator);
    let imported = import_ok(subject, &pt.at, &text, pt.setup);
    assert_same_reports(&pt.at, &imported.moves, &pt.reports);
    // Step by step: the moves as given, against the record's moves.
    let mut from_moves = start(subject, pt.setup);
    let mut from_record = start(subject, pt.setup);
    assert_same_state(
        &pt.at,
        "at ply 0",
        from_record.as_ref(),
        from_moves.as_ref(),
    );
    for (i, (input, report)) in pt.inputs.iter().zip(&imported.moves).enumerate() {
        play_checked(&pt.at, from_moves.as_mut(), input);
        play_checked(&pt.at, from_record.as_mut(), &report.detail.to_input());
        if pt.checked(i + 1) {
            let what = format!("replaying the record, at ply {}", i + 1);
            assert_same_state(&pt.at, &what, from_record.as_ref(), from_moves.as_ref());
        }
    }
    let mut replayed = match replay_moves(&subject.rules, pt.setup, &pt.inputs) {
        Ok(replayed) => replayed.game,
        Err((i, e)) => fail(&pt.at, format!("replay_moves refused move {i}: {e}")),
    };
    if let Some(ending) = pt.ending {
        conclude_checked(&pt.at, replayed.as_mut(), ending);
    }
    assert_same_state(&pt.at, "replay_moves", replayed.as_ref(), pt.game.as_ref());
    assert_same_state(
        &pt.at,
        "the imported game",
        imported.game.as_ref(),
        pt.game.as_ref(),
    );
    for p in (0..pt.legal.len()).map(|p| p as u32) {
        for viewer in viewers(pt.game.as_ref()) {
            let ours = pt.game.snapshot_at(p, viewer).map(|s| s.svg(None, None));
            let theirs = imported
                .game
                .snapshot_at(p, viewer)
                .map(|s| s.svg(None, None));
            if ours != theirs {
                let what = format!("the imported game's snapshot_at({p}) for {viewer:?}");
                fail(&pt.at, what);
            }
        }
    }
}

fn same_move_recognises(subject: &Subject, pt: &Playthrough) {
    let mut rng = Rng(pt.sample_seed);
    let game = pt.game.as_ref();
    for (i, (input, report)) in pt.inputs.iter().zip(&pt.reports).enumerate() {
        let ply = i as u32;
        let played = &report.detail;
        let at = format!("{}, ply {ply}, move `{}`", pt.at, played.notation);
        let forms = [
            ("as played", input.clone()),
            (
                "as notation",
                notation_input(subject, &at, &played.notation),
            ),
            ("as its detail", played.to_input()),
        ];
        for (form, given) in &forms {
            if !game.same_move(ply, given, played) {
                fail(
                    &at,
                    format!("same_move does not recognise the move given {form}"),
                );
            }
        }
        let legal = pt.legal.get(i).map_or(&[][..], Vec::as_slice);
        let others: Vec<_> = legal
            .iter()
            .filter(|m| m.detail.notation != played.notation)
            .collect();
        for other in sample(&others, 3, &mut rng) {
            let text = &other.detail.notation;
            let given = [other.detail.to_input(), notation_input(subject, &at, text)];
            if given.iter().any(|g| game.same_move(ply, g, played)) {
                fail(
                    &at,
                    format!("same_move takes the other legal move `{text}` for it"),
                );
            }
        }
        for beyond in [game.ply() + 1, u32::MAX] {
            if game.same_move(beyond, input, played) {
                fail(
                    &at,
                    format!("same_move recognises it at ply {beyond}, past the game"),
                );
            }
        }
    }
}

fn record_round_trips(subject: &Subject, pt: &Playthrough) {
    let tags = vec![
        ("event".to_string(), "conformance".to_string()),
        ("round".to_string(), "7".to_string()),
    ];
    let text = pt.game.record(&tags, Viewer::Spectator);
    let seed = if pt.game.verdict().is_some() {
        None
    } else {
        pt.setup
    };
    let back = import_ok(subject, &pt.at, &text, seed);
    // A record format with no place for tags (Dots, Punto: canonical
    // records have only the rules' keys) leaves them all out.
    if back.tags != tags && !back.tags.is_empty() {
        fail(
            &pt.at,
            format!("tags {:?} came back as {:?}", tags, back.tags),
        );
    }
    if back.moves.len() != pt.reports.len() {
        fail(
            &pt.at,
            format!(
                "the record of {} moves imports {}",
                pt.reports.len(),
                back.moves.len()
            ),
        );
    }
    let again = back.game.record(&back.tags, Viewer::Spectator);
    if again != text {
        fail(
            &pt.at,
            format!("record → import → record differs:\n{text}\n---\n{again}"),
        );
    }
    rules_header_replays_the_moves(subject, pt);
}

fn rules_header_replays_the_moves(subject: &Subject, pt: &Playthrough) {
    let header = pt.game.rules_header();
    let moves: Vec<&str> = pt.reports.iter().map(|r| r.detail.notation()).collect();
    let text = format!("{}\n\n{}\n", header.trim_end(), moves.join("\n"));
    let back = import_ok(subject, &pt.at, &text, pt.setup);
    let replayed = match replay_moves(&subject.rules, pt.setup, &pt.inputs) {
        Ok(replayed) => replayed.game,
        Err((i, e)) => fail(&pt.at, format!("replay_moves refused move {i}: {e}")),
    };
    let what = "the rules header with the moves";
    assert_same_state(&pt.at, what, back.game.as_ref(), replayed.as_ref());
}

fn moves_play_and_refusals_change_nothing(subject: &Subject, pt: &Playthrough) {
    let mut rng = Rng(pt.sample_seed ^ 0xD);
    let mut game = start(subject, pt.setup);
    for (i, legal) in pt.legal.iter().enumerate() {
        let at = format!("{}, ply {i}", pt.at);
        let playing = sample(legal, subject.bounds.moves_per_ply, &mut rng);
        listed_moves_play(&at, game.as_ref(), &playing);
        let previous = i.checked_sub(1).map_or(&[][..], |p| pt.legal[p].as_slice());
        for (what, input) in refused_candidates(subject, &at, legal, previous, &mut rng) {
            assert_refused(&at, game.as_mut(), &what, &input);
        }
        let foreign = assert_refused(&at, game.as_mut(), "a foreign payload", &foreign_move());
        if !matches!(foreign, MoveError::Malformed { .. }) {
            fail(
                &at,
                format!("a foreign payload is not Malformed but {foreign:?}"),
            );
        }
        // Listing moves is the costly part: once per ply, after every refusal.
        if notations(&game.legal_moves()) != notations(legal) {
            fail(&at, "the moves refused here changed the legal moves");
        }
        if let Some(input) = pt.inputs.get(i) {
            play_checked(&at, game.as_mut(), input);
        }
    }
}

fn snapshots_at_agree(subject: &Subject, pt: &Playthrough) {
    let game = pt.game.as_ref();
    let mut replay = start(subject, pt.setup);
    for p in (0..pt.legal.len()).map(|p| p as u32) {
        for viewer in viewers(game) {
            let what = format!("snapshot_at({p}) for {viewer:?}");
            let Some(snapshot) = game.snapshot_at(p, viewer) else {
                fail(&pt.at, format!("{what} is None"));
            };
            let fresh = replay.snapshot(viewer).svg(None, None);
            assert_same_text(&pt.at, &what, &snapshot.svg(None, None), &fresh);
        }
        if let Some(input) = pt.inputs.get(p as usize) {
            play_checked(&pt.at, replay.as_mut(), input);
        }
    }
    for viewer in viewers(game) {
        for past in [game.ply() + 1, u32::MAX] {
            if game.snapshot_at(past, viewer).is_some() {
                fail(
                    &pt.at,
                    format!("snapshot_at({past}) for {viewer:?} past the game"),
                );
            }
        }
    }
}

fn setup_is_reproducible_and_committed(subject: &Subject, pt: &Playthrough) {
    let game = pt.game.as_ref();
    let Some(setup) = pt.setup else {
        if game.setup().is_some() {
            fail(&pt.at, "an unseeded game reports a setup");
        }
        return;
    };
    if game.setup().map(|s| s.seed) != Some(setup.seed) {
        fail(
            &pt.at,
            "the game does not report the seed it was set up from",
        );
    }
    if contains_hex(&game.rules_header(), &setup.seed) {
        fail(&pt.at, "the rules header shows the seed");
    }
    // The seed alone decides: the same seed, supplied or not, same game.
    let mut first = start(subject, Some(setup));
    let other = Setup {
        supplied: !setup.supplied,
        ..setup
    };
    let mut second = start(subject, Some(other));
    assert_same_state(
        &pt.at,
        "a restart from the seed",
        second.as_ref(),
        first.as_ref(),
    );
    for (i, input) in pt.inputs.iter().enumerate() {
        play_checked(&pt.at, first.as_mut(), input);
        play_checked(&pt.at, second.as_mut(), input);
        if pt.checked(i + 1) || i + 1 == pt.inputs.len() {
            let what = format!("a restart from the seed, at ply {}", i + 1);
            assert_same_state(&pt.at, &what, second.as_ref(), first.as_ref());
        }
    }
    if game.verdict().is_some() {
        finished_record_reveals_the_seed(subject, &pt.at, game, setup);
    } else {
        unfinished_record_hides_the_seed(subject, &pt.at, game, setup);
    }
}

/// Whatever the random games did, one unfinished and one finished seeded
/// game are checked.
fn seeded_records_reveal_the_seed_only_at_the_end(subject: &Subject, rng_seed: u64) {
    if !subject.seeded {
        return;
    }
    let mut rng = Rng(rng_seed ^ 0x5EED);
    let at = format!("{} (rng seed {rng_seed}, fresh seeded game)", subject.label);
    let setup = draw_setup(subject, &mut rng).unwrap_or_else(|| fail(&at, "no setup"));
    let mut game = start(subject, Some(setup));
    unfinished_record_hides_the_seed(subject, &at, game.as_ref(), setup);
    let loser = game.to_move().unwrap_or_else(|| fail(&at, "over at ply 0"));
    conclude_checked(&at, game.as_mut(), Ending::Resignation { loser });
    finished_record_reveals_the_seed(subject, &at, game.as_ref(), setup);
}

fn unfinished_record_hides_the_seed(subject: &Subject, at: &str, game: &dyn Game, setup: Setup) {
    let commitment = sha256(&setup.seed);
    for viewer in viewers(game) {
        let text = game.record(&[], viewer);
        if contains_hex(&text, &setup.seed) {
            fail(
                at,
                format!("the record of an unfinished game for {viewer:?} shows the seed"),
            );
        }
        if !contains_hex(&text, &commitment) {
            fail(
                at,
                format!("the record for {viewer:?} does not carry the commitment"),
            );
        }
    }
    let text = game.record(&[], Viewer::Spectator);
    assert_import_refused(subject, at, &text, None, "SEED_NOT_REVEALED");
    let wrong = Setup {
        seed: flipped(setup.seed),
        ..setup
    };
    assert_import_refused(subject, at, &text, Some(wrong), "SEED_MISMATCH");
}

fn finished_record_reveals_the_seed(subject: &Subject, at: &str, game: &dyn Game, setup: Setup) {
    let text = game.record(&[], Viewer::Spectator);
    if !contains_hex(&text, &setup.seed) {
        fail(at, "the record of a finished game does not reveal the seed");
    }
    // The commitment may be left out (Dots §9's canonical form has no key
    // for it): anyone recomputes it from the seed.
    let committed = contains_hex(&text, &sha256(&setup.seed));
    let back = import_ok(subject, at, &text, None);
    match back.game.setup() {
        Some(s) if s.seed == setup.seed && s.commitment() == sha256(&setup.seed) => {}
        other => fail(at, format!("the imported game's setup is {other:?}")),
    }
    assert_same_state(at, "the imported finished game", back.game.as_ref(), game);
    if committed {
        let tampered = text.replace(&hex(&setup.seed), &hex(&flipped(setup.seed)));
        assert_import_refused(subject, at, &tampered, None, "SEED_MISMATCH");
    }
}

fn game_ends_properly(subject: &Subject, pt: &Playthrough) {
    let game = pt.game.as_ref();
    let Some(verdict) = game.verdict() else {
        if game.ply() != subject.bounds.ply_cap || game.to_move().is_none() {
            fail(
                &pt.at,
                format!("stopped unfinished at ply {}, not at the cap", game.ply()),
            );
        }
        if game.legal_moves().is_empty() {
            fail(&pt.at, "goes on with no legal move");
        }
        return;
    };
    assert_valid_verdict(&pt.at, game.seat_names().len(), &verdict);
    let mut rng = Rng(pt.sample_seed ^ 0xE);
    let mut copy = game.clone_box();
    assert_over_and_refusing(subject, &pt.at, copy.as_mut(), &pt.before_end, &mut rng);
}

// --- Assertions ------------------------------------------------------------

fn fail(at: &str, what: impl std::fmt::Display) -> ! {
    panic!("conformance: {at}: {what}")
}

/// Plays `input`, which must be legal, and checks the report against the
/// game: the mover, the ply, who is next and the verdict.
fn play_checked(at: &str, game: &mut dyn Game, input: &MoveInput) -> MoveReport {
    let ply = game.ply();
    let Some(mover) = game.to_move() else {
        fail(at, format!("ply {ply}: nobody to move in a game going on"));
    };
    let report = game.play(input).unwrap_or_else(|e| {
        fail(
            at,
            format!("ply {ply}: a legal move was refused: {e} ({e:?})"),
        )
    });
    let at = format!("{at}, ply {ply}, move `{}`", report.detail.notation);
    if report.seat != mover || report.ply != ply + 1 || game.ply() != ply + 1 {
        fail(
            &at,
            format!(
                "reported {} at ply {} for {mover} at ply {ply}",
                report.seat, report.ply
            ),
        );
    }
    if report.next != game.to_move() || report.verdict.as_deref() != game.verdict().as_ref() {
        fail(
            &at,
            "the report's next seat or verdict disagrees with the game",
        );
    }
    if game.last_move().map(|m| m.notation) != Some(report.detail.notation.clone()) {
        fail(&at, "last_move is not the move just played");
    }
    if let Some(verdict) = &report.verdict {
        assert_valid_verdict(&at, game.seat_names().len(), verdict);
    }
    report
}

/// Concludes with `ending`, which must be accepted, and checks the verdict.
fn conclude_checked(at: &str, game: &mut dyn Game, ending: Ending) -> Verdict {
    let verdict = game
        .conclude(ending)
        .unwrap_or_else(|e| fail(at, format!("{ending:?} was refused: {e}")));
    let at = format!("{at}, concluded by {ending:?}");
    assert_valid_verdict(&at, game.seat_names().len(), &verdict);
    if verdict.reason != ending.reason() {
        fail(
            &at,
            format!("verdict reason {}, not {}", verdict.reason, ending.reason()),
        );
    }
    if let Ending::Resignation { loser } | Ending::Timeout { loser } | Ending::Abandoned { loser } =
        ending
        && verdict.winners.contains(loser)
    {
        fail(&at, format!("the loser {loser} is among the winners"));
    }
    if game.verdict().as_ref() != Some(&verdict) {
        fail(&at, "verdict() is not the verdict conclude gave");
    }
    verdict
}

/// Winners only among the seats, no score or one per seat, a stable
/// upper-case reason.
fn assert_valid_verdict(at: &str, seats: usize, verdict: &Verdict) {
    if !SeatSet::all(seats).covers(verdict.winners) {
        fail(
            at,
            format!("winners {:?} beyond the {seats} seats", verdict.winners),
        );
    }
    if !verdict.scores.is_empty() && verdict.scores.len() != seats {
        fail(
            at,
            format!("{} scores for {seats} seats", verdict.scores.len()),
        );
    }
    let stable = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    if verdict.reason.is_empty() || !verdict.reason.chars().all(stable) {
        fail(
            at,
            format!("reason `{}` is not an upper-case name", verdict.reason),
        );
    }
}

/// The game is over: nobody to move, no legal move, every move of
/// `before_end` refused (`GAME_OVER`), every referee action refused.
fn assert_over_and_refusing(
    subject: &Subject,
    at: &str,
    game: &mut dyn Game,
    before_end: &[MoveReport],
    rng: &mut Rng,
) {
    if game.to_move().is_some() || !game.legal_moves().is_empty() {
        fail(at, "over, yet someone is to move or moves are listed");
    }
    for m in sample(before_end, 4, rng) {
        let text = &m.detail.notation;
        for (form, input) in [
            ("detail", m.detail.to_input()),
            ("notation", notation_input(subject, at, text)),
        ] {
            let what = format!("`{text}` ({form}) after the end");
            let error = assert_refused(at, game, &what, &input);
            assert_game_over(at, &what, &error);
        }
    }
    if !game.legal_moves().is_empty() {
        fail(at, "a refused move after the end listed moves again");
    }
    let verdict = game.verdict();
    for ending in all_endings(game.seat_names().len()) {
        match game.conclude(ending) {
            Ok(_) => fail(at, format!("{ending:?} accepted after the end")),
            Err(error) => assert_game_over(at, &format!("{ending:?} after the end"), &error),
        }
        if game.verdict() != verdict {
            fail(at, format!("a refused {ending:?} changed the verdict"));
        }
    }
}

fn assert_game_over(at: &str, what: &str, error: &MoveError) {
    if !matches!(
        error,
        MoveError::Illegal {
            reason: "GAME_OVER",
            ..
        }
    ) {
        fail(at, format!("{what}: refused with {error:?}, not GAME_OVER"));
    }
}

/// The legal moves, checked: sorted by notation without duplicates, each
/// for the seat to move at the next ply; none once over, some while going.
fn legal_moves_checked(at: &str, game: &dyn Game) -> Vec<MoveReport> {
    let legal = game.legal_moves();
    let Some(mover) = game.to_move() else {
        if !legal.is_empty() {
            fail(at, "moves listed in a finished game");
        }
        return legal;
    };
    if legal.is_empty() {
        fail(at, "no legal move in a game going on");
    }
    for pair in legal.windows(2) {
        if pair[0].detail.notation >= pair[1].detail.notation {
            let (a, b) = (&pair[0].detail.notation, &pair[1].detail.notation);
            fail(
                at,
                format!("legal moves unsorted or repeated: `{a}` before `{b}`"),
            );
        }
    }
    for m in &legal {
        if m.seat != mover || m.ply != game.ply() + 1 {
            let n = &m.detail.notation;
            fail(at, format!("`{n}` listed for {} at ply {}", m.seat, m.ply));
        }
    }
    legal
}

/// Each of these listed moves plays on a copy, as listed; the game itself
/// is untouched.
fn listed_moves_play(at: &str, game: &dyn Game, listed: &[&MoveReport]) {
    let ply = game.ply();
    for listed in listed {
        let mut copy = game.clone_box();
        let played = play_checked(at, copy.as_mut(), &listed.detail.to_input());
        if played.detail.notation != listed.detail.notation || played.seat != listed.seat {
            let (l, p) = (&listed.detail.notation, &played.detail.notation);
            fail(at, format!("listed `{l}` played as `{p}`"));
        }
    }
    if game.ply() != ply {
        fail(at, "playing on a copy changed the game");
    }
}

/// Moves that must be refused here: listed moves of the previous position
/// that are not legal now (by detail and by notation), texts of
/// [`Subject::never_legal`] and nonsense the notation reads anyway.
fn refused_candidates(
    subject: &Subject,
    at: &str,
    legal: &[MoveReport],
    previous: &[MoveReport],
    rng: &mut Rng,
) -> Vec<(String, MoveInput)> {
    let stale: Vec<&MoveReport> = previous
        .iter()
        .filter(|m| {
            legal
                .binary_search_by(|l| l.detail.notation.cmp(&m.detail.notation))
                .is_err()
        })
        .collect();
    let mut out = Vec::new();
    for m in sample(&stale, 4, rng) {
        let text = &m.detail.notation;
        out.push((format!("stale `{text}` (detail)"), m.detail.to_input()));
        let input = notation_input(subject, at, text);
        out.push((format!("stale `{text}` (notation)"), input));
    }
    for text in subject.never_legal {
        let input = notation_input(subject, at, text);
        out.push((format!("never legal `{text}`"), input));
    }
    let long = "x".repeat(300);
    let nonsense = ["", " ", "?", "nonsense", "@@>:,", "0>0:0,0", long.as_str()];
    for text in nonsense {
        if let Some(input) = (subject.notation)(text) {
            out.push((format!("nonsense `{text}`"), input));
        }
    }
    out
}

/// What a refused move must leave as it was (the legal moves too, which
/// the callers compare once for all the refusals at a ply).
#[derive(Debug, PartialEq)]
struct Observed {
    ply: u32,
    to_move: Option<Seat>,
    verdict: Option<Verdict>,
    record: String,
    snapshot: String,
}

impl Observed {
    fn of(game: &dyn Game) -> Observed {
        Observed {
            ply: game.ply(),
            to_move: game.to_move(),
            verdict: game.verdict(),
            record: game.record(&[], Viewer::Spectator),
            snapshot: game.snapshot(Viewer::Spectator).svg(None, None),
        }
    }
}

/// Plays `input`, which must be refused and change nothing; the refusal.
fn assert_refused(at: &str, game: &mut dyn Game, what: &str, input: &MoveInput) -> MoveError {
    let before = Observed::of(game);
    let error = match game.play(input) {
        Ok(report) => fail(
            at,
            format!("{what} was accepted as `{}`", report.detail.notation),
        ),
        Err(error) => error,
    };
    let after = Observed::of(game);
    if after != before {
        fail(
            at,
            format!("refusing {what} changed the game: {before:?} → {after:?}"),
        );
    }
    error
}

/// The same ply, turn, verdict, last move, legal moves and snapshot (as SVG)
/// for every viewer.
fn assert_same_state(at: &str, what: &str, got: &dyn Game, want: &dyn Game) {
    let facts = |g: &dyn Game| (g.seat_names(), g.ply(), g.to_move(), g.verdict());
    // A record format without a word for abandonment (Dots §9) states it
    // as a loss on time: the same winners and scores, reason `TIMEOUT`.
    let restated = |g: &dyn Game| {
        g.verdict().map(|v| {
            (
                v.winners,
                v.scores,
                v.reason.replace("ABANDONED", "TIMEOUT"),
            )
        })
    };
    let abandon_restated = want.verdict().is_some_and(|v| v.reason == "ABANDONED")
        && got.verdict().is_some_and(|v| v.reason == "TIMEOUT")
        && restated(got) == restated(want);
    let same = if abandon_restated {
        (got.seat_names(), got.ply(), got.to_move())
            == (want.seat_names(), want.ply(), want.to_move())
    } else {
        facts(got) == facts(want)
    };
    if !same {
        fail(
            at,
            format!(
                "{what}: seats, ply, turn or verdict {:?}, expected {:?}",
                facts(got),
                facts(want)
            ),
        );
    }
    let last = |g: &dyn Game| g.last_move().map(|m| m.notation);
    if last(got) != last(want) {
        fail(
            at,
            format!(
                "{what}: last move {:?}, expected {:?}",
                last(got),
                last(want)
            ),
        );
    }
    let (legal_got, legal_want) = (
        notations(&got.legal_moves()),
        notations(&want.legal_moves()),
    );
    if legal_got != legal_want {
        fail(
            at,
            format!("{what}: legal moves {legal_got:?}, expected {legal_want:?}"),
        );
    }
    let (last_move, verdict) = (want.last_move(), want.verdict());
    for viewer in viewers(want) {
        let svg = |g: &dyn Game| g.snapshot(viewer).svg(last_move.as_ref(), verdict.as_ref());
        let what = format!("{what}: snapshot for {viewer:?}");
        assert_same_text(at, &what, &svg(got), &svg(want));
    }
}

/// Equal texts, or a failure showing where they part.
fn assert_same_text(at: &str, what: &str, got: &str, want: &str) {
    if got == want {
        return;
    }
    let common = got
        .char_indices()
        .zip(want.chars())
        .find(|((_, a), b)| a != b)
        .map_or(got.len().min(want.len()), |((i, _), _)| i);
    let near = |s: &str| {
        s.get(common..)
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>()
    };
    fail(
        at,
        format!(
            "{what} differs at byte {common}: `{}` vs expected `{}`",
            near(got),
            near(want)
        ),
    );
}

fn import_ok(subject: &Subject, at: &str, text: &str, seed: Option<Setup>) -> Replayed {
    (subject.import)(text, seed).unwrap_or_else(|e| {
        fail(
            at,
            format!(
                "import refused its own record ({:?}): {e}\n{text}",
                e.reason
            ),
        )
    })
}

fn assert_import_refused(
    subject: &Subject,
    at: &str,
    text: &str,
    seed: Option<Setup>,
    reason: &str,
) {
    match (subject.import)(text, seed) {
        Ok(_) => fail(
            at,
            format!("import accepted a record it must refuse ({reason}):\n{text}"),
        ),
        Err(e) if e.reason != Some(reason) => fail(
            at,
            format!("import refused with {:?}, not {reason}: {e}", e.reason),
        ),
        Err(_) => {}
    }
}

fn assert_same_reports(at: &str, got: &[MoveReport], want: &[MoveReport]) {
    if got.len() != want.len() {
        fail(
            at,
            format!("the import reports {} moves, not {}", got.len(), want.len()),
        );
    }
    for (g, w) in got.iter().zip(want) {
        let same = (g.seat, g.ply, g.next, &g.verdict, &g.detail.notation)
            == (w.seat, w.ply, w.next, &w.verdict, &w.detail.notation);
        if !same {
            fail(at, format!("imported move report {g:?}, played {w:?}"));
        }
    }
}

// --- Small parts -------------------------------------------------------------

/// SplitMix64: the suite's own small deterministic RNG.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn seed(&mut self) -> [u8; 32] {
        let mut seed = [0u8; 32];
        for chunk in seed.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        seed
    }
}

/// Up to `n` distinct items of `items`, in order.
fn sample<'a, T>(items: &'a [T], n: usize, rng: &mut Rng) -> Vec<&'a T> {
    if items.len() <= n {
        return items.iter().collect();
    }
    let mut picked: Vec<usize> = Vec::with_capacity(n);
    while picked.len() < n {
        let i = rng.below(items.len());
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    picked.into_iter().map(|i| &items[i]).collect()
}

/// The random games every check of one run looks at: [`Bounds::games`]
/// played to the cap, and one more the referee ends early.
fn playthroughs(subject: &Subject, rng_seed: u64) -> Vec<Playthrough> {
    let mut rng = Rng(rng_seed);
    (0..=subject.bounds.games)
        .map(|k| {
            let at = format!("{} (rng seed {rng_seed}, game {k})", subject.label);
            play_random(subject, &mut rng, at, k == subject.bounds.games)
        })
        .collect()
}

/// A random game: random legal moves (given as detail or as notation) up
/// to the cap, or, when `concluded`, to a random checked ply where a random
/// referee ending ends it.
fn play_random(subject: &Subject, rng: &mut Rng, at: String, concluded: bool) -> Playthrough {
    let bounds = subject.bounds;
    let setup = draw_setup(subject, rng);
    let mut game = start(subject, setup);
    let stop = if concluded {
        rng.below(bounds.checked_plies.min(bounds.ply_cap) as usize + 1) as u32
    } else {
        bounds.ply_cap
    };
    let checked = bounds.checked_plies as usize;
    let (mut inputs, mut reports, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    let mut legal = legal_moves_checked(&at, game.as_ref());
    let mut previous = Vec::new();
    while game.to_move().is_some() && game.ply() < stop {
        let pick = &legal[rng.below(legal.len())].detail;
        let input = if rng.one_in(2) {
            notation_input(subject, &at, &pick.notation)
        } else {
            pick.to_input()
        };
        reports.push(play_checked(&at, game.as_mut(), &input));
        inputs.push(input);
        let next = legal_moves_checked(&at, game.as_ref());
        previous = std::mem::replace(&mut legal, next);
        if kept.len() <= checked {
            kept.push(previous.clone());
        }
    }
    let ending = (concluded && game.to_move().is_some())
        .then(|| random_ending(rng, game.seat_names().len(), game.ply()));
    // Before the end: the position concluded, or the last one moved from.
    let before_end = match ending {
        Some(_) => legal.clone(),
        None => previous,
    };
    if kept.len() <= checked {
        kept.push(legal);
    }
    if let Some(ending) = ending {
        conclude_checked(&at, game.as_mut(), ending);
    }
    Playthrough {
        at,
        setup,
        inputs,
        reports,
        ending,
        game,
        legal: kept,
        before_end,
        sample_seed: rng.next(),
    }
}

fn random_ending(rng: &mut Rng, seats: usize, ply: u32) -> Ending {
    let endings: Vec<Ending> = all_endings(seats)
        .into_iter()
        .filter(|e| *e != Ending::Aborted || (ply as usize) < seats)
        .collect();
    endings[rng.below(endings.len())]
}

/// Every referee ending of a game of `seats` seats.
fn all_endings(seats: usize) -> Vec<Ending> {
    let mut endings = vec![Ending::DrawAgreement, Ending::Aborted];
    for loser in Seat::all(seats) {
        endings.push(Ending::Resignation { loser });
        endings.push(Ending::Timeout { loser });
        endings.push(Ending::Abandoned { loser });
    }
    endings
}

fn start(subject: &Subject, setup: Option<Setup>) -> Box<dyn Game> {
    subject.rules.rules().start(setup)
}

fn draw_setup(subject: &Subject, rng: &mut Rng) -> Option<Setup> {
    subject.seeded.then(|| Setup {
        seed: rng.seed(),
        supplied: rng.one_in(2),
    })
}

fn fixed_setup(subject: &Subject) -> Option<Setup> {
    subject.seeded.then_some(Setup {
        seed: [7; 32],
        supplied: true,
    })
}

fn viewers(game: &dyn Game) -> Vec<Viewer> {
    let seats = Seat::all(game.seat_names().len()).map(Viewer::Seat);
    std::iter::once(Viewer::Spectator).chain(seats).collect()
}

fn notations(moves: &[MoveReport]) -> Vec<String> {
    moves.iter().map(|m| m.detail.notation.clone()).collect()
}

fn notation_input(subject: &Subject, at: &str, text: &str) -> MoveInput {
    (subject.notation)(text).unwrap_or_else(|| {
        fail(
            at,
            format!("the game's own notation `{text}` does not read"),
        )
    })
}

/// A move payload of no game.
#[derive(Debug)]
struct ForeignMove;

fn foreign_move() -> MoveInput {
    MoveInput::new(ForeignMove)
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

fn contains_hex(text: &str, bytes: &[u8]) -> bool {
    text.to_ascii_lowercase().contains(&hex(bytes))
}

/// Another seed: every bit of `seed` flipped.
fn flipped(seed: [u8; 32]) -> [u8; 32] {
    seed.map(|b| !b)
}
