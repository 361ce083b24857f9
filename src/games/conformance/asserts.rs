//! Assertions that name the game, the RNG seed, the ply and what disagreed.

use super::*;

// --- Assertions ------------------------------------------------------------

pub(super) fn fail(at: &str, what: impl std::fmt::Display) -> ! {
    panic!("conformance: {at}: {what}")
}

/// Plays `input`, which must be legal, and checks the report against the
/// game: the mover, the ply, who is next and the outcome.
pub(super) fn play_checked(at: &str, game: &mut dyn Game, input: &MoveInput) -> MoveReport {
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
    if report.next != game.to_move() || report.outcome.as_deref() != game.outcome().as_ref() {
        fail(
            &at,
            "the report's next seat or outcome disagrees with the game",
        );
    }
    if game.last_move().map(|m| m.notation) != Some(report.detail.notation.clone()) {
        fail(&at, "last_move is not the move just played");
    }
    if let Some(outcome) = &report.outcome {
        assert_valid_outcome(&at, game.seat_names().len(), outcome);
    }
    report
}

/// Concludes with `ending`, which must be accepted, and checks the outcome.
pub(super) fn conclude_checked(at: &str, game: &mut dyn Game, ending: RefereeAction) -> Outcome {
    let outcome = game
        .conclude(ending)
        .unwrap_or_else(|e| fail(at, format!("{ending:?} was refused: {e}")));
    let at = format!("{at}, concluded by {ending:?}");
    assert_valid_outcome(&at, game.seat_names().len(), &outcome);
    if outcome.reason != ending.reason() {
        fail(
            &at,
            format!("outcome reason {}, not {}", outcome.reason, ending.reason()),
        );
    }
    if let RefereeAction::Resignation { loser }
    | RefereeAction::Timeout { loser }
    | RefereeAction::Abandoned { loser } = ending
        && outcome.winners.contains(loser)
    {
        fail(&at, format!("the loser {loser} is among the winners"));
    }
    if game.outcome().as_ref() != Some(&outcome) {
        fail(&at, "outcome() is not the outcome conclude gave");
    }
    outcome
}

/// Winners only among the seats, no score or one per seat, a stable
/// upper-case reason.
pub(super) fn assert_valid_outcome(at: &str, seats: usize, outcome: &Outcome) {
    if !SeatSet::all(seats).covers(outcome.winners) {
        fail(
            at,
            format!("winners {:?} beyond the {seats} seats", outcome.winners),
        );
    }
    if !outcome.scores.is_empty() && outcome.scores.len() != seats {
        fail(
            at,
            format!("{} scores for {seats} seats", outcome.scores.len()),
        );
    }
    let stable = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    if outcome.reason.is_empty() || !outcome.reason.chars().all(stable) {
        fail(
            at,
            format!("reason `{}` is not an upper-case name", outcome.reason),
        );
    }
}

/// The game is over: nobody to move, no legal move, every move of
/// `before_end` refused (`GAME_OVER`), every referee action refused.
pub(super) fn assert_over_and_refusing(
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
    let outcome = game.outcome();
    for ending in all_endings(game.seat_names().len()) {
        match game.conclude(ending) {
            Ok(_) => fail(at, format!("{ending:?} accepted after the end")),
            Err(error) => assert_game_over(at, &format!("{ending:?} after the end"), &error),
        }
        if game.outcome() != outcome {
            fail(at, format!("a refused {ending:?} changed the outcome"));
        }
    }
}

pub(super) fn assert_game_over(at: &str, what: &str, error: &MoveError) {
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
pub(super) fn legal_moves_checked(at: &str, game: &dyn Game) -> Vec<MoveReport> {
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
pub(super) fn listed_moves_play(at: &str, game: &dyn Game, listed: &[&MoveReport]) {
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
pub(super) fn refused_candidates(
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
pub(super) struct Observed {
    pub(super) ply: u32,
    pub(super) to_move: Option<Seat>,
    pub(super) outcome: Option<Outcome>,
    pub(super) record: String,
    pub(super) snapshot: String,
}

impl Observed {
    pub(super) fn of(game: &dyn Game) -> Observed {
        Observed {
            ply: game.ply(),
            to_move: game.to_move(),
            outcome: game.outcome(),
            record: game.record(&[], Viewer::Spectator),
            snapshot: game.snapshot(Viewer::Spectator).svg(None, None),
        }
    }
}

/// Plays `input`, which must be refused and change nothing; the refusal.
pub(super) fn assert_refused(
    at: &str,
    game: &mut dyn Game,
    what: &str,
    input: &MoveInput,
) -> MoveError {
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

/// The same ply, turn, outcome, last move, legal moves and snapshot (as SVG)
/// for every viewer.
pub(super) fn assert_same_state(at: &str, what: &str, got: &dyn Game, want: &dyn Game) {
    let facts = |g: &dyn Game| (g.seat_names(), g.ply(), g.to_move(), g.outcome());
    // A record format without a word for abandonment (Dots §9) states it
    // as a loss on time: the same winners and scores, reason `TIMEOUT`.
    let restated = |g: &dyn Game| {
        g.outcome().map(|v| {
            (
                v.winners,
                v.scores,
                v.reason.replace("ABANDONED", "TIMEOUT"),
            )
        })
    };
    let abandon_restated = want.outcome().is_some_and(|v| v.reason == "ABANDONED")
        && got.outcome().is_some_and(|v| v.reason == "TIMEOUT")
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
                "{what}: seats, ply, turn or outcome {:?}, expected {:?}",
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
    let (last_move, outcome) = (want.last_move(), want.outcome());
    for viewer in viewers(want) {
        let svg = |g: &dyn Game| g.snapshot(viewer).svg(last_move.as_ref(), outcome.as_ref());
        let what = format!("{what}: snapshot for {viewer:?}");
        assert_same_text(at, &what, &svg(got), &svg(want));
    }
}

/// Equal texts, or a failure showing where they part.
pub(super) fn assert_same_text(at: &str, what: &str, got: &str, want: &str) {
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

pub(super) fn import_ok(subject: &Subject, at: &str, text: &str, seed: Option<Setup>) -> Replayed {
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

pub(super) fn assert_import_refused(
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

pub(super) fn assert_same_reports(at: &str, got: &[MoveReport], want: &[MoveReport]) {
    if got.len() != want.len() {
        fail(
            at,
            format!("the import reports {} moves, not {}", got.len(), want.len()),
        );
    }
    for (g, w) in got.iter().zip(want) {
        let same = (g.seat, g.ply, g.next, &g.outcome, &g.detail.notation)
            == (w.seat, w.ply, w.next, &w.outcome, &w.detail.notation);
        if !same {
            fail(at, format!("imported move report {g:?}, played {w:?}"));
        }
    }
}
