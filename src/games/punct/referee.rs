//! PÜNCT behind the game-agnostic [`Game`](crate::games::Game) trait (and its
//! options behind [`Rules`]): turns the neutral inputs of
//! the session layer into engine calls and the engine's answers into neutral
//! results. The engine itself ([`super`]) stays untouched and pure.

use super::{
    Colour, EndReason, Engine, GameRecord, IllegalMove, Move, MoveKind, NotatedMove, Position,
    RuleOptions,
};
use crate::games::{
    Game, GameRules, GameState, MoveDetail, MoveError, MoveInput, MoveReport, Opaque, Outcome,
    RecordError, RefereeAction, Replayed, Rules, Seat, SeatSet, Setup, SharedState, Viewer, punct,
};

/// A PÜNCT move as a client gave it: structured, as notation, or both (then
/// they must name the same move). Both already passed the syntax check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PunctMoveInput {
    /// The structured move (place: code, PÜNCT space, rotation; shift: from,
    /// to, rotation).
    pub structured: Option<Move>,
    /// The move in notation (docs/rules/punct.md §7).
    pub notation: Option<NotatedMove>,
}

/// A PÜNCT move, played or legal, with everything a client is told of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PunctMoveInfo {
    /// The move in canonical form.
    pub mv: Move,
    /// Its canonical notation.
    pub notation: NotatedMove,
    /// Place, move, jump or bridge.
    pub kind: MoveKind,
    /// The level the piece comes to rest at.
    pub level: u8,
    /// The mover.
    pub colour: Colour,
}

/// A PÜNCT position with the options of its game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PunctState {
    /// The game's rule options.
    pub options: RuleOptions,
    /// The position.
    pub position: Position,
}

impl GameState for PunctState {
    /// The position as SVG (`punct::svg`): the last move and a winning
    /// connection highlighted.
    fn svg(&self, last: Option<&MoveDetail>, outcome: Option<&Outcome>) -> String {
        let winner = outcome
            .filter(|v| v.reason == EndReason::Connection.name())
            .and_then(Outcome::winner)
            .map(colour_of);
        let last = last.and_then(|m| m.get::<PunctMoveInfo>()).map(|m| m.mv);
        let options = super::svg::position_options(&self.position, last, winner);
        super::svg::svg(&self.position, &options)
    }
}

/// PÜNCT's two seats, in seat order (docs/rules/punct.md: white moves first).
pub const SEAT_NAMES: &[&str] = &["white", "black"];

impl Rules for RuleOptions {
    fn game_name(&self) -> &'static str {
        "punct"
    }

    fn variant_name(&self) -> &'static str {
        self.variant.name()
    }

    fn start(&self, _setup: Option<Setup>) -> Box<dyn Game> {
        Box::new(PunctGame::new(*self))
    }
}

/// The seat of a colour.
pub const fn seat_of(colour: Colour) -> Seat {
    match colour {
        Colour::White => Seat::FIRST,
        Colour::Black => Seat::SECOND,
    }
}

/// The colour of a seat (the first seat is white; any other, black).
pub const fn colour_of(seat: Seat) -> Colour {
    match seat.index() {
        0 => Colour::White,
        _ => Colour::Black,
    }
}

fn outcome_of(outcome: punct::Outcome) -> Outcome {
    Outcome {
        winners: outcome
            .winner
            .map_or(SeatSet::EMPTY, |c| SeatSet::only(seat_of(c))),
        reason: outcome.reason.name(),
        scores: Vec::new(),
        detail: Some(Opaque::new(outcome)),
    }
}

fn illegal(e: IllegalMove) -> MoveError {
    MoveError::Illegal {
        reason: e.reason(),
        message: e.to_string(),
    }
}

fn detail(info: PunctMoveInfo) -> MoveDetail {
    MoveDetail {
        notation: info.notation.to_string(),
        kind: info.kind.name(),
        payload: Opaque::new(info),
    }
}

/// One PÜNCT game.
#[derive(Debug, Clone)]
pub struct PunctGame {
    game: Engine,
}

impl PunctGame {
    /// A new game with `options`.
    pub fn new(options: RuleOptions) -> PunctGame {
        PunctGame {
            game: Engine::new(options),
        }
    }

    /// The engine's game.
    pub fn game(&self) -> &Engine {
        &self.game
    }

    /// The PÜNCT input of `mv`: a [`PunctMoveInput`], or a played or listed
    /// move ([`PunctMoveInfo`]) given back.
    fn input_of(mv: &MoveInput) -> Result<PunctMoveInput, MoveError> {
        if let Some(input) = mv.get::<PunctMoveInput>() {
            return Ok(*input);
        }
        if let Some(info) = mv.get::<PunctMoveInfo>() {
            return Ok(PunctMoveInput {
                structured: Some(info.mv),
                notation: Some(info.notation),
            });
        }
        Err(MoveError::Malformed {
            field: "move",
            description: "not a PÜNCT move (set move.punct)".into(),
        })
    }

    /// The engine move `input` names on the current position.
    fn resolve(&self, input: &PunctMoveInput) -> Result<Move, MoveError> {
        if self.game.is_over() {
            return Err(illegal(IllegalMove::GameOver));
        }
        match (input.structured, input.notation) {
            (Some(mv), None) => Ok(mv),
            (None, Some(n)) => self.game.resolve(n).map_err(illegal),
            (Some(mv), Some(n)) => {
                let resolved = self.game.resolve(n).map_err(illegal)?;
                // Both forms must denote one move: compare canonical notations.
                let pos = self.game.position();
                if pos.notate(mv).is_some() && pos.notate(mv) == pos.notate(resolved) {
                    Ok(resolved)
                } else {
                    Err(MoveError::Malformed {
                        field: "move",
                        description: format!(
                            "the structured move and the notation `{n}` name different moves"
                        ),
                    })
                }
            }
            (None, None) => Err(MoveError::Malformed {
                field: "move",
                description: "give the move structured (place or shift) or as notation".into(),
            }),
        }
    }

    fn report(&self, info: PunctMoveInfo, ply: u32, outcome: Option<punct::Outcome>) -> MoveReport {
        let seat = seat_of(info.colour);
        MoveReport {
            seat,
            ply,
            // PÜNCT alternates (docs/rules/punct.md §2).
            next: outcome.is_none().then(|| seat.next(SEAT_NAMES.len())),
            outcome: outcome.map(outcome_of).map(Box::new),
            detail: detail(info),
        }
    }

    fn snapshot_of(&self, position: Position) -> SharedState {
        SharedState::new(PunctState {
            options: self.game.options(),
            position,
        })
    }
}

impl Game for PunctGame {
    fn rules(&self) -> GameRules {
        GameRules::new(self.game.options())
    }

    fn seat_names(&self) -> &'static [&'static str] {
        SEAT_NAMES
    }

    fn ply(&self) -> u32 {
        self.game.position().ply()
    }

    fn to_move(&self) -> Option<Seat> {
        (!self.game.is_over()).then(|| seat_of(self.game.position().to_move()))
    }

    fn outcome(&self) -> Option<Outcome> {
        self.game.outcome().map(outcome_of)
    }

    fn play(&mut self, mv: &MoveInput) -> Result<MoveReport, MoveError> {
        let input = PunctGame::input_of(mv)?;
        let resolved = self.resolve(&input)?;
        let colour = self.game.position().to_move();
        let played = self.game.play(resolved).map_err(illegal)?;
        let info = PunctMoveInfo {
            mv: played.mv,
            notation: played.notation,
            kind: played.kind,
            level: played.level,
            colour,
        };
        Ok(self.report(info, played.ply, played.outcome))
    }

    fn legal_moves(&self) -> Vec<MoveReport> {
        let pos = self.game.position();
        let variant = self.game.options().variant;
        let colour = pos.to_move();
        let mut out: Vec<(String, MoveReport)> = self
            .game
            .legal_moves()
            .into_iter()
            .filter_map(|mv| {
                let landing = pos.check(variant, mv).ok()?;
                let notation = pos.notate(mv)?;
                let kind = match mv {
                    Move::Place { .. } => MoveKind::Place,
                    Move::Shift { .. } if landing.bridge => MoveKind::Bridge,
                    Move::Shift { .. } if landing.level == 0 => MoveKind::Move,
                    Move::Shift { .. } => MoveKind::Jump,
                };
                let info = PunctMoveInfo {
                    mv,
                    notation,
                    kind,
                    level: landing.level,
                    colour,
                };
                Some((notation.to_string(), self.report(info, pos.ply() + 1, None)))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, r)| r).collect()
    }

    fn snapshot(&self, _viewer: Viewer) -> SharedState {
        self.snapshot_of(*self.game.position())
    }

    fn snapshot_at(&self, ply: u32, _viewer: Viewer) -> Option<SharedState> {
        let moves = self.game.moves().get(..ply as usize)?;
        let mut replay = Engine::new(self.game.options());
        for &mv in moves {
            // Replaying moves this game accepted cannot fail.
            replay.play(mv).ok()?;
        }
        Some(self.snapshot_of(*replay.position()))
    }

    fn last_move(&self) -> Option<MoveDetail> {
        let &mv = self.game.moves().last()?;
        let mut before = Engine::new(self.game.options());
        let n = self.game.moves().len();
        for &m in &self.game.moves()[..n - 1] {
            before.play(m).ok()?;
        }
        let colour = before.position().to_move();
        let played = before.play(mv).ok()?;
        Some(detail(PunctMoveInfo {
            mv: played.mv,
            notation: played.notation,
            kind: played.kind,
            level: played.level,
            colour,
        }))
    }

    fn record(&self, tags: &[(String, String)], _viewer: Viewer) -> String {
        let mut record: GameRecord = self.game.record();
        // Labels go as `x-<label>` header lines (§7 names no keys for
        // them), so none can be taken for a key of the rules.
        record.tags = tags.to_vec();
        record.to_string()
    }

    fn conclude(&mut self, ending: RefereeAction) -> Result<Outcome, MoveError> {
        // Two seats: whoever resigns, runs out of time or leaves loses and
        // the other seat wins; draws and aborts have no winner.
        let reason = match ending {
            RefereeAction::Resignation { .. } => EndReason::Resignation,
            RefereeAction::DrawAgreement => EndReason::DrawAgreement,
            RefereeAction::Aborted => EndReason::Aborted,
            RefereeAction::Timeout { .. } => EndReason::Timeout,
            RefereeAction::Abandoned { .. } => EndReason::Abandoned,
        };
        let outcome = match ending.default_outcome(SEAT_NAMES.len()).winner() {
            Some(winner) => punct::Outcome::referee(Some(colour_of(winner)), reason),
            None => punct::Outcome::draw(reason),
        };
        self.game.conclude(outcome).map_err(illegal)?;
        Ok(outcome_of(outcome))
    }

    fn clone_box(&self) -> Box<dyn Game> {
        Box::new(self.clone())
    }

    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool {
        let (Ok(input), Some(info)) = (PunctGame::input_of(input), played.get::<PunctMoveInfo>())
        else {
            return false;
        };
        let Some(moves) = self.game.moves().get(..ply as usize) else {
            return false;
        };
        let mut before = PunctGame::new(self.game.options());
        for &mv in moves {
            if before.game.play(mv).is_err() {
                return false;
            }
        }
        let Ok(resolved) = before.resolve(&input) else {
            return false;
        };
        let pos = before.game.position();
        pos.notate(resolved).is_some() && pos.notate(resolved) == pos.notate(info.mv)
    }

    fn rules_header(&self) -> String {
        PunctGame::new(self.game.options()).record(&[], Viewer::Spectator)
    }
}

/// Reads and replays a PÜNCT record (docs/rules/punct.md §7), collecting every move.
/// PÜNCT has no seed, so `_seed` is never needed.
pub fn import(text: &str, _seed: Option<Setup>) -> Result<Replayed, RecordError> {
    let (record, lines) = GameRecord::parse_with_lines(text).map_err(record_error)?;
    let game = record.replay_with_lines(&lines).map_err(record_error)?;
    // The record replayed cleanly; replay once more to report every move.
    let mut replay = PunctGame::new(record.options);
    let mut moves = Vec::with_capacity(game.moves().len());
    for &mv in game.moves() {
        let input = MoveInput::new(PunctMoveInput {
            structured: Some(mv),
            notation: None,
        });
        let report = replay.play(&input).map_err(|e| RecordError {
            line: None,
            reason: None,
            message: format!("replay failed: {e}"),
        })?;
        moves.push(report);
    }
    Ok(Replayed {
        game: Box::new(PunctGame { game }),
        moves,
        tags: record.tags,
    })
}

fn record_error(e: super::RecordError) -> RecordError {
    let reason = match &e {
        super::RecordError::Illegal { error, .. } => Some(error.reason()),
        super::RecordError::ResultMismatch { .. } => Some("RESULT_MISMATCH"),
        _ => None,
    };
    RecordError {
        line: e.line(),
        reason,
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::conformance::{Bounds, Subject, run_all};
    use crate::games::new_game;

    fn notation(text: &str) -> MoveInput {
        MoveInput::new(PunctMoveInput {
            structured: None,
            notation: Some(text.parse().unwrap()),
        })
    }

    #[test]
    fn a_retry_is_recognised_however_the_move_was_written() {
        let mut g = new_game(&GameRules::default());
        let first = g.play(&notation("SE@E5:F5,G5")).unwrap();
        let second = g.play(&notation("SE@E13:F13,G13")).unwrap();
        // The same move, structured, and the canonical input form.
        let info = *first.detail.get::<PunctMoveInfo>().unwrap();
        let structured = MoveInput::new(PunctMoveInput {
            structured: Some(info.mv),
            notation: None,
        });
        assert!(g.same_move(0, &notation("SE@E5:F5,G5"), &first.detail));
        assert!(g.same_move(0, &structured, &first.detail));
        assert!(g.same_move(0, &first.detail.to_input(), &first.detail));
        assert!(g.same_move(1, &notation("SE@E13:F13,G13"), &second.detail));
        // Another move, or a ply beyond the game: not the same.
        assert!(!g.same_move(0, &notation("SE@E6:F6,G6"), &first.detail));
        assert!(!g.same_move(1, &notation("SE@E5:F5,G5"), &second.detail));
        assert!(!g.same_move(7, &notation("SE@E5:F5,G5"), &first.detail));
    }

    #[test]
    fn the_rules_header_replays_moves_under_the_same_options() {
        let options = RuleOptions {
            end_on_supply: crate::games::punct::EndOnSupply::BothExhausted,
            max_plies: 77,
            repetition_limit: 0,
            ..RuleOptions::of(crate::games::punct::Variant::Basic)
        };
        let g = new_game(&GameRules::new(options));
        let header = g.rules_header();
        let text = format!("{}\n\nSE@E5:F5,G5\n", header.trim_end());
        let replayed = import(&text, None).unwrap();
        assert_eq!(replayed.game.rules().get::<RuleOptions>(), Some(&options));
        assert_eq!(replayed.game.ply(), 1);
    }

    #[test]
    fn plays_notation_and_reports_seat_and_ply() {
        let mut g = new_game(&GameRules::default());
        let r = g.play(&notation("SE@E5:F5,G5")).unwrap();
        assert_eq!((r.seat, r.ply, r.outcome), (Seat::FIRST, 1, None));
        assert_eq!(r.next, Some(Seat::SECOND));
        assert_eq!(g.to_move(), Some(Seat::SECOND));
    }

    #[test]
    fn illegal_move_carries_the_engine_reason() {
        let mut g = new_game(&GameRules::default());
        let err = g.play(&notation("SE@I9:J9,K9")).unwrap_err();
        assert!(matches!(
            err,
            MoveError::Illegal {
                reason: "CENTRE_STANDARD",
                ..
            }
        ));
        assert_eq!(g.ply(), 0);
    }

    #[test]
    fn disagreeing_forms_are_malformed() {
        let mut g = new_game(&GameRules::default());
        let structured = Move::Place {
            code: "SE".parse().unwrap(),
            punct: "A5".parse().unwrap(),
            rotation: 0,
        };
        let input = MoveInput::new(PunctMoveInput {
            structured: Some(structured),
            notation: Some("SE@E5:F5,G5".parse().unwrap()),
        });
        assert!(matches!(g.play(&input), Err(MoveError::Malformed { .. })));
    }

    #[test]
    fn record_round_trips_with_tags_and_resignation() {
        let mut g = new_game(&GameRules::default());
        g.play(&notation("SE@E5:F5,G5")).unwrap();
        g.conclude(RefereeAction::Resignation {
            loser: Seat::SECOND,
        })
        .unwrap();
        let text = g.record(
            &[
                ("event".into(), "test".into()),
                ("variant".into(), "x".into()),
            ],
            Viewer::Spectator,
        );
        // Labels are `x-` lines, even one named like a key of the rules.
        assert!(text.contains("\nx-event: test\nx-variant: x\n"), "{text}");
        assert!(text.contains("\nvariant: standard\n"), "{text}");
        assert!(text.contains("result: white RESIGNATION"));
        let back = import(&text, None).unwrap();
        assert_eq!(back.moves.len(), 1);
        assert_eq!(
            back.tags,
            vec![
                ("event".to_string(), "test".to_string()),
                ("variant".to_string(), "x".to_string())
            ]
        );
        assert_eq!(back.game.outcome().unwrap().reason, "RESIGNATION");
    }

    #[test]
    fn snapshot_at_replays_the_prefix() {
        let mut g = new_game(&GameRules::default());
        g.play(&notation("SE@E5:F5,G5")).unwrap();
        g.play(&notation("SE@M5:M6,M7")).unwrap();
        let s = g.snapshot_at(1, Viewer::Spectator).unwrap();
        assert_eq!(s.get::<PunctState>().unwrap().position.ply(), 1);
        assert!(g.snapshot_at(3, Viewer::Spectator).is_none());
        let last = g.last_move().unwrap();
        assert_eq!(last.get::<PunctMoveInfo>().unwrap().colour, Colour::Black);
    }

    fn conformance_subject(variant: crate::games::punct::Variant) -> Subject {
        Subject {
            label: variant.name(),
            rules: GameRules::new(RuleOptions::of(variant)),
            import,
            notation: |text| {
                let notation = text.parse().ok()?;
                Some(MoveInput::new(PunctMoveInput {
                    structured: None,
                    notation: Some(notation),
                }))
            },
            // Codes that do not fit the geometry (docs/rules/punct.md §7).
            never_legal: &["SM@E5:F5,G5", "T@E5:F5,G6"],
            seeded: false,
            // ~5000 legal moves a ply: check the opening ply by ply, and
            // play on to the cap, past the ~55–90 plies random games last.
            bounds: Bounds {
                games: 1,
                ply_cap: 120,
                checked_plies: 10,
                moves_per_ply: 200,
            },
        }
    }

    #[test]
    fn standard_punct_passes_the_conformance_suite() {
        let subject = conformance_subject(crate::games::punct::Variant::Standard);
        for rng_seed in [1, 2] {
            run_all(&subject, rng_seed);
        }
    }

    #[test]
    fn basic_punct_passes_the_conformance_suite() {
        let subject = conformance_subject(crate::games::punct::Variant::Basic);
        for rng_seed in [3, 4] {
            run_all(&subject, rng_seed);
        }
    }

    #[test]
    fn legal_moves_are_sorted_and_all_playable() {
        let g = new_game(&GameRules::default());
        let moves = g.legal_moves();
        assert!(!moves.is_empty());
        let texts: Vec<String> = moves.iter().map(|m| m.detail.notation.clone()).collect();
        let mut sorted = texts.clone();
        sorted.sort();
        assert_eq!(texts, sorted);
        let mut copy = g.clone_box();
        copy.play(&notation(&texts[0])).unwrap();
    }
}
