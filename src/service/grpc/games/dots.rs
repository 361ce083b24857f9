//! Dots conversions between `dots.v1` messages and the engine's types
//! (`games::dots`, payloads of `games::dots::referee`). Input is checked
//! here for syntax (notation, the start, option ranges), so the session
//! layer only ever sees well-formed moves and valid options; whether a point
//! is on the field, free and not held is the engine's rule question
//! (`OFF_FIELD`, `OCCUPIED`, `HELD`).

use super::{Part, Sidelines, WireGame};
use crate::games::GameKind;
use crate::games::dots::referee::{
    DotsMoveInfo, DotsMoveInput, DotsState, Enclosure, MoveEffect, SnapshotDot,
};
use crate::games::dots::{
    self, Colour, Move, OptionsError, Point, RuleOptions, Start, TakeKind, render,
};
use crate::games::{GameRules, MoveDetail, MoveInput, Outcome, SharedState};
use crate::service::grpc::pb::dots::v1 as pb;
use crate::service::grpc::pb::referee::v1 as rpb;
use crate::service::sessions::SessionError;

/// Field paths of a Dots move, for error details.
#[derive(Debug)]
pub struct MoveFields {
    /// `….dots.notation`
    pub notation: &'static str,
    /// `….dots`: the move itself.
    pub whole: &'static str,
}

/// Fields of `SubmitMoveRequest.move` / `ValidateMoveRequest.move`.
pub const MOVE_FIELDS: MoveFields = MoveFields {
    notation: "move.dots.notation",
    whole: "move.dots",
};

/// Fields of `ValidateMoveRequest.moves.moves[]`.
pub const HISTORY_FIELDS: MoveFields = MoveFields {
    notation: "moves.moves.dots.notation",
    whole: "moves.moves.dots",
};

/// The Dots move paths of `part` (a tournament's openings name the
/// request's).
fn move_fields(part: Part) -> &'static MoveFields {
    match part {
        Part::History => &HISTORY_FIELDS,
        Part::Request | Part::Tournament => &MOVE_FIELDS,
    }
}

/// Field paths of a game's Dots rules, for error details.
#[derive(Debug)]
pub struct RuleFields {
    /// `….dots.width`
    pub width: &'static str,
    /// `….dots.height`
    pub height: &'static str,
    /// `….dots.start`
    pub start: &'static str,
}

/// Fields of `CreateGameRequest.rules`.
pub const RULE_FIELDS: RuleFields = RuleFields {
    width: "rules.dots.width",
    height: "rules.dots.height",
    start: "rules.dots.start",
};

/// Fields of `ValidateMoveRequest.moves.rules`.
pub const HISTORY_RULE_FIELDS: RuleFields = RuleFields {
    width: "moves.rules.dots.width",
    height: "moves.rules.dots.height",
    start: "moves.rules.dots.start",
};

/// The Dots rule paths of `part` (a tournament's spec names the
/// request's).
fn rule_fields(part: Part) -> &'static RuleFields {
    match part {
        Part::History => &HISTORY_RULE_FIELDS,
        Part::Request | Part::Tournament => &RULE_FIELDS,
    }
}

fn bad(field: &'static str, description: impl Into<String>) -> SessionError {
    SessionError::InvalidArgument {
        field,
        description: description.into(),
    }
}

/// A point from the wire. Numbers past `u16::MAX` saturate, as in notation:
/// such a point is off every field, which the engine refuses (`OFF_FIELD`).
fn point(p: &pb::Point) -> Point {
    let coordinate = |v: u32| u16::try_from(v).unwrap_or(u16::MAX);
    Point::new(coordinate(p.x), coordinate(p.y))
}

/// A move as input: structured and/or notation, the notation checked for
/// syntax (both given: the engine checks they agree).
pub fn move_input(m: &pb::Move, f: &MoveFields) -> Result<DotsMoveInput, SessionError> {
    let structured = match &m.action {
        Some(pb::r#move::Action::Place(p)) => Some(Move::Place(point(p))),
        Some(pb::r#move::Action::Ground(_)) => Some(Move::Ground),
        None => None,
    };
    // Only an absent notation is no notation: one of spaces or tabs is
    // given and malformed, refused as any other malformed text.
    let notation = if m.notation.is_empty() {
        None
    } else {
        Some(
            m.notation
                .parse::<Move>()
                .map_err(|e| bad(f.notation, e.to_string()))?,
        )
    };
    if structured.is_none() && notation.is_none() {
        return Err(bad(
            f.whole,
            "give the move as place (a point), ground or notation (`x,y` or `ground`)",
        ));
    }
    Ok(DotsMoveInput {
        structured,
        notation,
    })
}

/// One side of the field from the wire: 0 is the default, anything past a
/// byte is out of range as any other side outside 4..=64.
fn side(value: u32, default: u8, field: &'static str, what: &str) -> Result<u8, SessionError> {
    if value == 0 {
        return Ok(default);
    }
    u8::try_from(value).map_err(|_| {
        bad(
            field,
            format!("the {what} {value} is not in 4..=64 (docs/rules/dots.md §3)"),
        )
    })
}

fn start(value: i32, field: &'static str) -> Result<Start, SessionError> {
    match pb::Start::try_from(value) {
        Ok(pb::Start::Unspecified | pb::Start::Cross) => Ok(Start::Cross),
        Ok(pb::Start::Empty) => Ok(Start::Empty),
        Ok(pb::Start::DoubleCross) => Ok(Start::DoubleCross),
        Ok(pb::Start::QuadrupleCross) => Ok(Start::QuadrupleCross),
        Err(_) => Err(bad(field, format!("unknown start {value}"))),
    }
}

/// Rule options from the wire, defaults filled in and checked as docs/rules/dots.md
/// §3 says; a refusal names the field at fault (a start too large for the
/// field: the side that is too small, the width first).
pub fn rule_options(o: &pb::RuleOptions, f: &RuleFields) -> Result<RuleOptions, SessionError> {
    let defaults = RuleOptions::default();
    let width = side(o.width, defaults.width(), f.width, "width")?;
    let height = side(o.height, defaults.height(), f.height, "height")?;
    let start = start(o.start, f.start)?;
    RuleOptions::new(width, height, start, o.max_moves).map_err(|e| {
        let field = match e {
            OptionsError::HeightOutOfRange { .. } => f.height,
            OptionsError::FieldTooSmall { start, width, .. } if width >= start.min_size().0 => {
                f.height
            }
            _ => f.width,
        };
        bad(field, e.to_string())
    })
}

fn start_pb(s: Start) -> pb::Start {
    match s {
        Start::Empty => pb::Start::Empty,
        Start::Cross => pb::Start::Cross,
        Start::DoubleCross => pb::Start::DoubleCross,
        Start::QuadrupleCross => pb::Start::QuadrupleCross,
    }
}

/// Rule options to the wire, every field explicit.
pub fn rule_options_pb(o: &RuleOptions) -> pb::RuleOptions {
    pb::RuleOptions {
        width: u32::from(o.width()),
        height: u32::from(o.height()),
        start: start_pb(o.start()) as i32,
        max_moves: o.max_moves(),
    }
}

/// A colour on the wire.
pub fn colour_pb(c: Colour) -> i32 {
    (match c {
        Colour::Red => pb::Colour::Red,
        Colour::Blue => pb::Colour::Blue,
    }) as i32
}

/// A point on the wire.
pub fn point_pb(p: Point) -> pb::Point {
    pb::Point {
        x: u32::from(p.x),
        y: u32::from(p.y),
    }
}

fn points_pb(points: &[Point]) -> Vec<pb::Point> {
    points.iter().copied().map(point_pb).collect()
}

/// An enclosure on the wire: owner, kind, the closed chain.
pub fn enclosure_pb(e: &Enclosure) -> pb::Enclosure {
    pb::Enclosure {
        owner: colour_pb(e.owner),
        kind: (match e.kind {
            TakeKind::Capture => pb::EnclosureKind::Capture,
            TakeKind::Base => pb::EnclosureKind::Base,
        }) as i32,
        chain: points_pb(&e.chain),
    }
}

fn effect_pb(e: &MoveEffect) -> pb::MoveEffect {
    pb::MoveEffect {
        captured: points_pb(&e.captured),
        freed: points_pb(&e.freed),
        lost: points_pb(&e.lost),
        regained: points_pb(&e.regained),
        enclosures: e.enclosures.iter().map(enclosure_pb).collect(),
        regions: u32::from(e.regions),
        scores: e.scores.to_vec(),
    }
}

/// A played or legal move: structured, notation, kind, mover and (played
/// moves) what it did.
pub fn move_pb(info: &DotsMoveInfo) -> pb::Move {
    let (action, kind) = match info.mv {
        Move::Place(p) => (pb::r#move::Action::Place(point_pb(p)), pb::MoveKind::Place),
        Move::Ground => (
            pb::r#move::Action::Ground(pb::Ground {}),
            pb::MoveKind::Ground,
        ),
    };
    pb::Move {
        action: Some(action),
        notation: info.mv.to_string(),
        kind: kind as i32,
        colour: colour_pb(info.colour),
        effect: info.effect.as_ref().map(effect_pb),
    }
}

fn dot_pb(d: &SnapshotDot) -> pb::Dot {
    pb::Dot {
        point: Some(point_pb(d.point)),
        owner: colour_pb(d.owner),
        captured: d.captured,
    }
}

/// A state as `SNAPSHOT_VIEW_COMPACT` sends it: without its rules (the
/// game's, sent in full) and the picture. The position text stays: its
/// held cells and base markers follow from the enclosures only through
/// geometry a client should not have to redo.
pub fn compact_state(state: &mut pb::GameState) {
    state.rules = None;
    state.picture.clear();
}

/// The Dots state of a game: options, every dot, the enclosures standing,
/// the scores, the position text and the picture.
pub fn state_pb(s: &DotsState) -> pb::GameState {
    pb::GameState {
        rules: Some(rule_options_pb(&s.options)),
        ply: s.ply,
        to_move: s.to_move.map_or(pb::Colour::Unspecified as i32, colour_pb),
        scores: s.scores.to_vec(),
        dots: s.dots.iter().map(dot_pb).collect(),
        enclosures: s.enclosures.iter().map(enclosure_pb).collect(),
        position: s.field.text(),
        picture: render::picture(&s.field, s.to_move, s.outcome.as_ref()),
    }
}

/// Dots details of an outcome.
pub fn outcome_detail_pb(o: &dots::Outcome) -> pb::OutcomeDetail {
    pb::OutcomeDetail {
        end: o.reason.record_name().to_string(),
        result: o.result_text().to_string(),
        scores: o.scores.to_vec(),
    }
}

/// Dots' options of `rules`, if the rules are Dots'.
pub fn rules_pb(rules: &GameRules) -> Option<pb::RuleOptions> {
    rules.get::<RuleOptions>().map(rule_options_pb)
}

/// A Dots move on the wire, if `detail` is one.
pub fn detail_pb(detail: &MoveDetail) -> Option<pb::Move> {
    detail.get::<DotsMoveInfo>().map(move_pb)
}

/// Dots' details of an outcome, if it has them.
pub fn game_outcome_detail_pb(outcome: &Outcome) -> Option<pb::OutcomeDetail> {
    outcome.get::<dots::Outcome>().map(outcome_detail_pb)
}

/// The Dots state on the wire, if `snapshot` is one.
pub fn snapshot_pb(snapshot: &SharedState) -> Option<pb::GameState> {
    snapshot.get::<DotsState>().map(state_pb)
}

/// Dots on the wire.
pub struct DotsWire;

impl WireGame for DotsWire {
    fn kind(&self) -> &'static dyn GameKind {
        &crate::games::dots::kind::Dots
    }

    fn title(&self) -> &'static str {
        "Dots"
    }

    fn rules(
        &self,
        rules: &rpb::game_rules::Game,
        part: Part,
    ) -> Option<Result<GameRules, SessionError>> {
        let rpb::game_rules::Game::Dots(o) = rules else {
            return None;
        };
        Some(rule_options(o, rule_fields(part)).map(GameRules::new))
    }

    fn rules_pb(&self, rules: &GameRules) -> Option<rpb::game_rules::Game> {
        rules_pb(rules).map(rpb::game_rules::Game::Dots)
    }

    fn move_input(
        &self,
        m: &rpb::r#move::Game,
        part: Part,
    ) -> Option<Result<MoveInput, SessionError>> {
        let rpb::r#move::Game::Dots(d) = m else {
            return None;
        };
        Some(move_input(d, move_fields(part)).map(MoveInput::new))
    }

    fn move_pb(&self, detail: &MoveDetail) -> Option<rpb::r#move::Game> {
        detail_pb(detail).map(|m| rpb::r#move::Game::Dots(Box::new(m)))
    }

    fn notation_pb(&self, notation: &str) -> rpb::r#move::Game {
        rpb::r#move::Game::Dots(Box::new(pb::Move {
            notation: notation.to_string(),
            ..Default::default()
        }))
    }

    fn outcome_detail_pb(&self, outcome: &Outcome) -> Option<rpb::outcome::Detail> {
        game_outcome_detail_pb(outcome).map(rpb::outcome::Detail::Dots)
    }

    fn state_pb(&self, snapshot: &SharedState) -> Option<rpb::game_state::Game> {
        snapshot_pb(snapshot).map(rpb::game_state::Game::Dots)
    }

    fn compact_state(&self, state: &mut rpb::game_state::Game) {
        if let rpb::game_state::Game::Dots(s) = state {
            compact_state(s);
        }
    }

    /// Dots has no supplies (every dot comes from an endless pot) but a
    /// running score.
    fn notation_of<'a>(&self, m: &'a rpb::r#move::Game) -> Option<&'a str> {
        match m {
            rpb::r#move::Game::Dots(m) => Some(&m.notation),
            _ => None,
        }
    }

    fn picture_of<'a>(&self, state: &'a rpb::game_state::Game) -> Option<&'a str> {
        match state {
            rpb::game_state::Game::Dots(s) => Some(&s.picture),
            _ => None,
        }
    }

    fn sidelines(&self, state: &rpb::game_state::Game) -> Option<Sidelines> {
        let rpb::game_state::Game::Dots(d) = state else {
            return None;
        };
        Some(Sidelines {
            scores: d.scores.iter().copied().map(i64::from).collect(),
            ..Sidelines::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(width: u32, height: u32, start: pb::Start) -> pb::RuleOptions {
        pb::RuleOptions {
            width,
            height,
            start: start as i32,
            max_moves: 0,
        }
    }

    fn refused_field(o: pb::RuleOptions) -> &'static str {
        match rule_options(&o, &RULE_FIELDS) {
            Err(SessionError::InvalidArgument { field, .. }) => field,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_empty_message_is_the_standard_game() {
        let o = rule_options(&pb::RuleOptions::default(), &RULE_FIELDS).unwrap();
        assert_eq!(o, RuleOptions::default());
        let back = rule_options_pb(&o);
        assert_eq!(
            (back.width, back.height, back.start, back.max_moves),
            (39, 32, pb::Start::Cross as i32, 0)
        );
    }

    #[test]
    fn bad_options_name_their_field() {
        assert_eq!(
            refused_field(options(3, 10, pb::Start::Empty)),
            "rules.dots.width"
        );
        assert_eq!(
            refused_field(options(300, 10, pb::Start::Empty)),
            "rules.dots.width"
        );
        assert_eq!(
            refused_field(options(10, 65, pb::Start::Empty)),
            "rules.dots.height"
        );
        assert_eq!(
            refused_field(options(5, 4, pb::Start::DoubleCross)),
            "rules.dots.width"
        );
        assert_eq!(
            refused_field(options(10, 7, pb::Start::QuadrupleCross)),
            "rules.dots.height"
        );
        assert_eq!(
            refused_field(pb::RuleOptions {
                start: 9,
                ..Default::default()
            }),
            "rules.dots.start"
        );
        assert_eq!(rule_fields(Part::History).width, "moves.rules.dots.width");
    }

    #[test]
    fn moves_read_from_either_form() {
        let m = pb::Move {
            action: Some(pb::r#move::Action::Place(pb::Point { x: 3, y: 70000 })),
            notation: " 3 , 65535 ".into(),
            ..Default::default()
        };
        let input = move_input(&m, &MOVE_FIELDS).unwrap();
        assert_eq!(input.structured, Some(Move::Place(Point::new(3, u16::MAX))));
        assert_eq!(input.notation, input.structured);
        let garbled = pb::Move {
            notation: "pass".into(),
            ..Default::default()
        };
        match move_input(&garbled, move_fields(Part::History)) {
            Err(SessionError::InvalidArgument { field, description }) => {
                assert_eq!(field, "moves.moves.dots.notation");
                assert!(description.contains("no pass"), "{description}");
            }
            other => panic!("{other:?}"),
        }
        assert!(move_input(&pb::Move::default(), &MOVE_FIELDS).is_err());
    }
}
