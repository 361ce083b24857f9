//! The per-game checks the public `check_*` functions run.

use super::*;

// --- The per-game checks -------------------------------------------------

/// One random game as played: its setup, the inputs given, the reports back,
/// the referee ending applied after them, and the game at the end.
pub(super) struct Playthrough {
    pub(super) at: String,
    pub(super) setup: Option<Setup>,
    pub(super) inputs: Vec<MoveInput>,
    pub(super) reports: Vec<MoveReport>,
    pub(super) ending: Option<RefereeAction>,
    pub(super) game: Box<dyn Game>,
    /// The legal moves at each checked ply (those up to
    /// [`Bounds::checked_plies`] the game reached).
    pub(super) legal: Vec<Vec<MoveReport>>,
    /// The legal moves of the last position played from: before the move
    /// that ended the game, or when the referee ended it.
    pub(super) before_end: Vec<MoveReport>,
    /// Seeds the sampling the checks do on this game.
    pub(super) sample_seed: u64,
}

impl Playthrough {
    /// Whether ply `p` is one checked one by one.
    fn checked(&self, p: usize) -> bool {
        p < self.legal.len()
    }
}

pub(super) fn replays_agree(subject: &Subject, pt: &Playthrough) {
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

pub(super) fn same_move_recognises(subject: &Subject, pt: &Playthrough) {
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

pub(super) fn record_round_trips(subject: &Subject, pt: &Playthrough) {
    let tags = vec![
        ("event".to_string(), "conformance".to_string()),
        ("round".to_string(), "7".to_string()),
    ];
    let text = pt.game.record(&tags, Viewer::Spectator);
    let seed = if pt.game.outcome().is_some() {
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

pub(super) fn rules_header_replays_the_moves(subject: &Subject, pt: &Playthrough) {
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

pub(super) fn moves_play_and_refusals_change_nothing(subject: &Subject, pt: &Playthrough) {
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

pub(super) fn snapshots_at_agree(subject: &Subject, pt: &Playthrough) {
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

pub(super) fn setup_is_reproducible_and_committed(subject: &Subject, pt: &Playthrough) {
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
    if game.outcome().is_some() {
        finished_record_reveals_the_seed(subject, &pt.at, game, setup);
    } else {
        unfinished_record_hides_the_seed(subject, &pt.at, game, setup);
    }
}

/// Whatever the random games did, one unfinished and one finished seeded
/// game are checked.
pub(super) fn seeded_records_reveal_the_seed_only_at_the_end(subject: &Subject, rng_seed: u64) {
    if !subject.seeded {
        return;
    }
    let mut rng = Rng(rng_seed ^ 0x5EED);
    let at = format!("{} (rng seed {rng_seed}, fresh seeded game)", subject.label);
    let setup = draw_setup(subject, &mut rng).unwrap_or_else(|| fail(&at, "no setup"));
    let mut game = start(subject, Some(setup));
    unfinished_record_hides_the_seed(subject, &at, game.as_ref(), setup);
    let loser = game.to_move().unwrap_or_else(|| fail(&at, "over at ply 0"));
    conclude_checked(&at, game.as_mut(), RefereeAction::Resignation { loser });
    finished_record_reveals_the_seed(subject, &at, game.as_ref(), setup);
}

pub(super) fn unfinished_record_hides_the_seed(
    subject: &Subject,
    at: &str,
    game: &dyn Game,
    setup: Setup,
) {
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

pub(super) fn finished_record_reveals_the_seed(
    subject: &Subject,
    at: &str,
    game: &dyn Game,
    setup: Setup,
) {
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

pub(super) fn game_ends_properly(subject: &Subject, pt: &Playthrough) {
    let game = pt.game.as_ref();
    let Some(outcome) = game.outcome() else {
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
    assert_valid_outcome(&pt.at, game.seat_names().len(), &outcome);
    let mut rng = Rng(pt.sample_seed ^ 0xE);
    let mut copy = game.clone_box();
    assert_over_and_refusing(subject, &pt.at, copy.as_mut(), &pt.before_end, &mut rng);
}

/// Every move decided before it is played ([`Game::decide`]): a listed move
/// is decided as playing it reports and a refused one refused as playing
/// it refuses, each leaving the game as it was, and applying a decision
/// makes the game playing makes. The game decided and applied move by move
/// is the game played.
pub(super) fn decisions_change_nothing(subject: &Subject, pt: &Playthrough) {
    let mut rng = Rng(pt.sample_seed ^ 0xDEC);
    let mut game = start(subject, pt.setup);
    for (i, input) in pt.inputs.iter().enumerate() {
        let at = format!("{}, ply {i}", pt.at);
        if let Some(legal) = pt.legal.get(i) {
            for listed in sample(legal, 2, &mut rng) {
                decided_as_played(&at, game.as_ref(), &listed.detail.to_input());
            }
            let previous = i.checked_sub(1).map_or(&[][..], |p| pt.legal[p].as_slice());
            for (what, input) in refused_candidates(subject, &at, legal, previous, &mut rng) {
                refused_when_decided(&at, game.as_ref(), &what, &input);
            }
            refused_when_decided(&at, game.as_ref(), "a foreign payload", &foreign_move());
        }
        let decision = game
            .decide(input)
            .unwrap_or_else(|e| fail(&at, format!("a played move was refused when decided: {e}")));
        match decision.apply(&mut game, input) {
            Ok(report) if Some(&report) == pt.reports.get(i) => {}
            _ => fail(
                &at,
                "a move decided and applied reports otherwise than played",
            ),
        }
    }
    if let Some(ending) = pt.ending {
        conclude_checked(&pt.at, game.as_mut(), ending);
    }
    let what = "the game decided and applied move by move";
    assert_same_state(&pt.at, what, game.as_ref(), pt.game.as_ref());
    assert_same_record(&pt.at, what, game.as_ref(), pt.game.as_ref());
}

/// `input`, a legal move, decided on a copy of `game`: reported as playing
/// it reports, the copy left as `game`, and the decision applied to it the
/// game playing makes.
fn decided_as_played(at: &str, game: &dyn Game, input: &MoveInput) {
    let mut played = game.clone_box();
    let want = played
        .play(input)
        .unwrap_or_else(|e| fail(at, format!("a listed move was refused: {e}")));
    let at = format!("{at}, move `{}`", want.detail.notation);
    let mut decided = game.clone_box();
    let decision = decided
        .decide(input)
        .unwrap_or_else(|e| fail(&at, format!("deciding a listed move refused it: {e}")));
    if decision.report != want {
        fail(&at, "the decision's report is not the one playing gives");
    }
    assert_same_observed(&at, "a game a move was decided on", decided.as_ref(), game);
    if decision.apply(&mut decided, input).as_ref() != Ok(&want) {
        fail(&at, "applying the decision reports otherwise than playing");
    }
    let what = "a decided move applied";
    assert_same_observed(&at, what, decided.as_ref(), played.as_ref());
}

/// The same ply, turn, outcome, last move, record and snapshot.
fn assert_same_observed(at: &str, what: &str, got: &dyn Game, want: &dyn Game) {
    let (got_seen, want_seen) = (Observed::of(got), Observed::of(want));
    if got_seen != want_seen || got.last_move() != want.last_move() {
        fail(at, format!("{what}: {got_seen:?}, expected {want_seen:?}"));
    }
}

/// `input`, a refused move, decided on a copy of `game`: the refusal
/// playing it gives, and the copy left as `game`.
fn refused_when_decided(at: &str, game: &dyn Game, what: &str, input: &MoveInput) {
    let Err(want) = game.clone_box().play(input) else {
        fail(at, format!("{what} was accepted"));
    };
    let mut decided = game.clone_box();
    match decided.decide(input) {
        Err(e) if e == want => {}
        other => fail(
            at,
            format!(
                "deciding {what} gave {:?}, playing it {want:?}",
                other.map(|d| d.report)
            ),
        ),
    }
    assert_same_observed(at, what, decided.as_ref(), game);
}

/// The same record, as every viewer may read it.
fn assert_same_record(at: &str, what: &str, got: &dyn Game, want: &dyn Game) {
    for viewer in viewers(want) {
        let what = format!("{what}: record for {viewer:?}");
        assert_same_text(
            at,
            &what,
            &got.record(&[], viewer),
            &want.record(&[], viewer),
        );
    }
}
