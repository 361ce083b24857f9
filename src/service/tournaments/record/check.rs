//! Checking a new tournament: its spec by subject, in the order the errors
//! are reported, and its openings (seeds that fit the game, moves legal from
//! the start); the first document it makes.

use super::*;

/// Checks a new tournament and makes its first document (no entrants
/// yet), with the openings' moves as played.
pub fn checked_doc(
    catalog: &Catalog,
    new: &NewTournament,
) -> Result<(Doc, Vec<Vec<MoveDetail>>), TournamentError> {
    check_name_and_clock(new)?;
    let table = checked_table(new)?;
    check_format(new, table)?;
    check_seeds_and_openings(new, table)?;
    // Every game carries them: refused here, not at each game's creation.
    crate::service::sessions::check_labels(&new.labels)
        .map_err(|e| TournamentError::invalid("spec.labels", e.to_string()))?;
    let header = header_of(&new.rules);
    let mut openings = Vec::new();
    let mut details = Vec::new();
    for (i, o) in new.openings.iter().enumerate() {
        let (doc, played) = checked_opening(catalog, &header, &new.rules, o, i)?;
        openings.push(doc);
        details.push(played);
    }
    let now = storage::unix_ms(std::time::SystemTime::now());
    let doc = Doc {
        id: super::super::new_id(),
        name: new.name.clone(),
        rules_header: header,
        format: new.format,
        games_per_pairing: new.games_per_pairing,
        time_control: ClockDoc::of(&new.time_control),
        openings,
        concurrency: new.concurrency,
        labels: new.labels.clone(),
        open_registration: new.open_registration,
        table,
        sprt: new.sprt,
        setup_seed_base: new.setup_seed_base,
        deal_per_game: hides_setup(&new.rules),
        failure_policy: super::super::policy::PolicyDoc::of(&new.failure_policy),
        status: TournamentStatus::Registering,
        entrants: Vec::new(),
        games: Vec::new(),
        rounds: 0,
        decision: None,
        created_ms: now,
        started_ms: 0,
        ended_ms: 0,
    };
    Ok((doc, details))
}

fn invalid(field: &str, description: impl Into<String>) -> TournamentError {
    TournamentError::invalid(field, description)
}

/// The name, the clock and the games per pairing of a new tournament.
fn check_name_and_clock(new: &NewTournament) -> Result<(), TournamentError> {
    if new.name.len() > 256 || new.name.chars().any(char::is_control) || new.name.trim() != new.name
    {
        return Err(invalid(
            "spec.name",
            "at most 256 bytes on one line, without surrounding spaces, expected (it labels every game)",
        ));
    }
    new.time_control
        .check()
        .map_err(|e| invalid("spec.time_control", e.to_string()))?;
    if !new.time_control.has_clock() {
        return Err(invalid(
            "spec.time_control",
            "a tournament needs a clock (fischer or per_move), so that an absent entrant loses on time and the event goes on",
        ));
    }
    if new.games_per_pairing == 0 || new.games_per_pairing > MAX_GAMES_PER_PAIRING {
        return Err(invalid(
            "spec.games_per_pairing",
            format!("must be 1..={MAX_GAMES_PER_PAIRING}"),
        ));
    }
    Ok(())
}

/// The seats at a table: the game's, which `table_size` may only repeat.
fn checked_table(new: &NewTournament) -> Result<usize, TournamentError> {
    let seats = new
        .rules
        .rules()
        .start(header_setup(&new.rules))
        .seat_names()
        .len();
    match new.table_size {
        0 => Ok(seats),
        n if n as usize == seats => Ok(seats),
        n => Err(invalid(
            "spec.table_size",
            format!(
                "{} ({}) is played at tables of {seats} seats, not {n}",
                new.rules.game_name(),
                new.rules.variant_name()
            ),
        )),
    }
}

/// The format and the SPRT fit the table and the entrants.
fn check_format(new: &NewTournament, table: usize) -> Result<(), TournamentError> {
    if let Format::Swiss { rounds } = new.format {
        if table != 2 {
            return Err(invalid(
                "spec.format",
                format!("a Swiss pairs two entrants, but this game seats {table} at a table"),
            ));
        }
        if rounds == 0 {
            return Err(invalid(
                "spec.swiss_rounds",
                "a Swiss needs at least one round",
            ));
        }
    }
    if let Some(sprt) = &new.sprt {
        sprt.check()
            .map_err(|e| invalid("spec.sprt", e.to_string()))?;
        if new.format != Format::Gauntlet || table != 2 || new.open_registration {
            return Err(invalid(
                "spec.sprt",
                "an SPRT needs a gauntlet of two-seat games between exactly two entrants given at creation",
            ));
        }
        if new.entrants.len() != 2 {
            return Err(invalid(
                "spec.sprt",
                format!("an SPRT compares two entrants, not {}", new.entrants.len()),
            ));
        }
    }
    Ok(())
}

/// The seed base, the openings' count and shape, and the labels' count.
fn check_seeds_and_openings(new: &NewTournament, table: usize) -> Result<(), TournamentError> {
    if new.setup_seed_base.is_some() {
        if !new.rules.rules().seeded() || !new.rules.rules().seed_may_be_supplied() {
            return Err(invalid(
                "spec.setup_seed_base",
                format!("{} has no random setup to seed", new.rules.game_name()),
            ));
        }
        if new.openings.iter().any(|o| o.seed.is_some()) {
            return Err(invalid(
                "spec.setup_seed_base",
                "the openings already seed the games: give one or the other",
            ));
        }
    }
    let with_moves = new.openings.iter().any(|o| !o.moves.is_empty());
    if with_moves && !(new.games_per_pairing as usize).is_multiple_of(table) {
        return Err(invalid(
            "spec.games_per_pairing",
            format!(
                "with openings, a multiple of the table's {table} seats, so that each opening is played from every seat"
            ),
        ));
    }
    if new.openings.len() > MAX_OPENINGS {
        return Err(invalid(
            "spec.openings",
            format!("at most {MAX_OPENINGS} openings"),
        ));
    }
    if new.labels.len() > MAX_TOURNAMENT_LABELS {
        return Err(invalid(
            "spec.labels",
            format!(
                "at most {MAX_TOURNAMENT_LABELS} labels (a game's others are the tournament's own)"
            ),
        ));
    }
    Ok(())
}

/// Whether games of `rules` hide their setup from their seats (a deal).
fn hides_setup(rules: &GameRules) -> bool {
    rules.rules().seeded() && rules.rules().start(header_setup(rules)).hides_information()
}

/// A setup for building seeded rules' first position.
fn header_setup(rules: &GameRules) -> Option<Setup> {
    rules.rules().seeded().then(super::super::rebuild_setup)
}

/// Checks one opening: its seed fits the game, its moves are legal from
/// the start; returns it as stored and its moves as played.
fn checked_opening(
    catalog: &Catalog,
    header: &str,
    rules: &GameRules,
    opening: &OpeningInput,
    i: usize,
) -> Result<(OpeningDoc, Vec<MoveDetail>), TournamentError> {
    let field = |f: &str| format!("spec.openings[{i}]{f}");
    let seeded = rules.rules().seeded();
    if opening.seed.is_some() && !opening.moves.is_empty() && hides_setup(rules) {
        return Err(TournamentError::invalid(
            field(".moves"),
            format!(
                "{} hides its setup, so each game of an opening is dealt its own from the \
                 opening's seed (docs/TOURNAMENTS.md, \"Seeds\"): no moves fit every deal",
                rules.game_name()
            ),
        ));
    }
    if opening.seed.is_some() && !seeded {
        return Err(TournamentError::invalid(
            field(".seed"),
            format!("{} has no random setup to seed", rules.game_name()),
        ));
    }
    if opening.seed.is_some() && !rules.rules().seed_may_be_supplied() {
        return Err(TournamentError::invalid(
            field(".seed"),
            format!("{} does not take a supplied seed", rules.game_name()),
        ));
    }
    if seeded && opening.seed.is_none() && !opening.moves.is_empty() {
        return Err(TournamentError::invalid(
            field(".moves"),
            "moves of a seeded game need the opening's seed (its setup decides what is legal)",
        ));
    }
    let setup = opening.seed.map(|seed| Setup {
        seed,
        supplied: true,
    });
    let mut game = rules.rules().start(setup.or_else(|| header_setup(rules)));
    let mut played = Vec::new();
    for (j, mv) in opening.moves.iter().enumerate() {
        let report = game
            .play(mv)
            .map_err(|e| TournamentError::invalid(field(&format!(".moves[{j}]")), e.to_string()))?;
        if report.outcome.is_some() {
            return Err(TournamentError::invalid(
                field(&format!(".moves[{j}]")),
                "the opening ends the game",
            ));
        }
        played.push(report.detail);
    }
    let doc = OpeningDoc {
        moves: played.iter().map(|d| d.notation.clone()).collect(),
        seed: opening.seed.map(|s| crate::games::hex(&s)),
    };
    // What is stored must replay: the notation read back gives the moves.
    let replayed = replay_opening(catalog, header, rules, &doc)
        .map_err(|e| TournamentError::invalid(field(".moves"), e.to_string()))?;
    if replayed.len() != played.len() {
        return Err(TournamentError::invalid(
            field(".moves"),
            "the opening's notation does not read back",
        ));
    }
    Ok((doc, played))
}
