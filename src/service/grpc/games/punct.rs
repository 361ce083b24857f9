//! PÜNCT conversions between `punct.v1` messages and the engine's types.
//! Input is checked here for syntax (space names, piece codes, rotations,
//! notation), so the session layer only ever sees well-formed moves.

use super::{Part, Sidelines, WireGame};
use crate::games::GameKind;
use crate::games::punct::board::Space;
use crate::games::punct::piece::Colour;
use crate::games::punct::{
    self, EndOnSupply, Move, MoveKind, NotatedMove, PieceCode, Position, RuleOptions, SidePair,
    Variant, render,
};
use crate::games::{
    GameRules, MoveDetail, MoveInput, Outcome, PunctMoveInfo, PunctMoveInput, PunctState,
    SharedState,
};
use crate::service::grpc::pb::punct::v1 as pb;
use crate::service::grpc::pb::referee::v1 as rpb;
use crate::service::sessions::SessionError;

/// Field paths of a move, for error details (`move` or `candidate` side).
pub struct MoveFields {
    /// `….place.code`
    pub code: &'static str,
    /// `….place.punct`
    pub punct: &'static str,
    /// `….place.rotation` / `….shift.rotation`
    pub rotation: &'static str,
    /// `….shift.from`
    pub from: &'static str,
    /// `….shift.to`
    pub to: &'static str,
    /// `….notation`
    pub notation: &'static str,
    /// The move itself.
    pub whole: &'static str,
}

/// Fields of `SubmitMoveRequest.move` / `ValidateMoveRequest.move`.
const REQUEST_MOVE: MoveFields = MoveFields {
    code: "move.punct.place.code",
    punct: "move.punct.place.punct",
    rotation: "move.punct.rotation",
    from: "move.punct.shift.from",
    to: "move.punct.shift.to",
    notation: "move.punct.notation",
    whole: "move.punct",
};

/// Fields of `ValidateMoveRequest.moves.moves[]`.
const HISTORY_MOVE: MoveFields = MoveFields {
    code: "moves.moves.punct.place.code",
    punct: "moves.moves.punct.place.punct",
    rotation: "moves.moves.punct.rotation",
    from: "moves.moves.punct.shift.from",
    to: "moves.moves.punct.shift.to",
    notation: "moves.moves.punct.notation",
    whole: "moves.moves.punct",
};

fn bad(field: &'static str, description: impl Into<String>) -> SessionError {
    SessionError::InvalidArgument {
        field,
        description: description.into(),
    }
}

fn space(text: &str, field: &'static str) -> Result<Space, SessionError> {
    text.parse().map_err(|e| bad(field, format!("{e}")))
}

fn rotation(r: u32, field: &'static str) -> Result<u8, SessionError> {
    u8::try_from(r)
        .ok()
        .filter(|r| *r < 6)
        .ok_or_else(|| bad(field, "a rotation is 0..5"))
}

/// A move as input: structured and/or notation, each checked for syntax.
pub fn move_input(m: &pb::Move, f: &MoveFields) -> Result<PunctMoveInput, SessionError> {
    let structured = match &m.action {
        Some(pb::r#move::Action::Place(p)) => Some(Move::Place {
            code: p
                .code
                .parse::<PieceCode>()
                .map_err(|e| bad(f.code, e.to_string()))?,
            punct: space(&p.punct, f.punct)?,
            rotation: rotation(p.rotation, f.rotation)?,
        }),
        Some(pb::r#move::Action::Shift(s)) => Some(Move::Shift {
            from: space(&s.from, f.from)?,
            to: space(&s.to, f.to)?,
            rotation: rotation(s.rotation, f.rotation)?,
        }),
        None => None,
    };
    // Only an absent notation is no notation: one of spaces or tabs is
    // given and malformed, refused as any other malformed text.
    let notation = if m.notation.is_empty() {
        None
    } else {
        Some(
            m.notation
                .parse::<NotatedMove>()
                .map_err(|e| bad(f.notation, e.to_string()))?,
        )
    };
    if structured.is_none() && notation.is_none() {
        return Err(bad(f.whole, "give the move as place, shift or notation"));
    }
    Ok(PunctMoveInput {
        structured,
        notation,
    })
}

/// Field paths of a game's rules, for error details.
pub struct RuleFields {
    /// The `GameRules` message itself.
    pub whole: &'static str,
    /// `….punct.variant`
    pub variant: &'static str,
    /// `….punct.end_on_supply`
    pub end_on_supply: &'static str,
}

/// Fields of `CreateGameRequest.rules`.
const REQUEST_RULES: RuleFields = RuleFields {
    whole: "rules",
    variant: "rules.punct.variant",
    end_on_supply: "rules.punct.end_on_supply",
};

/// Fields of `ValidateMoveRequest.moves.rules`.
const HISTORY_RULES: RuleFields = RuleFields {
    whole: "moves.rules",
    variant: "moves.rules.punct.variant",
    end_on_supply: "moves.rules.punct.end_on_supply",
};

/// Fields of `CreateTournamentRequest.spec.rules`.
const TOURNAMENT_RULES: RuleFields = RuleFields {
    whole: "spec.rules",
    variant: "spec.rules.punct.variant",
    end_on_supply: "spec.rules.punct.end_on_supply",
};

/// Fields of a tournament opening's moves.
const TOURNAMENT_MOVE: MoveFields = MoveFields {
    code: "spec.openings.moves.punct.place.code",
    punct: "spec.openings.moves.punct.place.punct",
    rotation: "spec.openings.moves.punct.rotation",
    from: "spec.openings.moves.punct.shift.from",
    to: "spec.openings.moves.punct.shift.to",
    notation: "spec.openings.moves.punct.notation",
    whole: "spec.openings.moves.punct",
};

/// The rule fields of `part`.
fn rule_fields(part: Part) -> &'static RuleFields {
    match part {
        Part::Request => &REQUEST_RULES,
        Part::History => &HISTORY_RULES,
        Part::Tournament => &TOURNAMENT_RULES,
    }
}

/// The move fields of `part`.
fn move_fields(part: Part) -> &'static MoveFields {
    match part {
        Part::Request => &REQUEST_MOVE,
        Part::History => &HISTORY_MOVE,
        Part::Tournament => &TOURNAMENT_MOVE,
    }
}

/// Rule options from the wire, defaults filled in; errors name `f`'s fields.
pub fn rule_options(o: &pb::RuleOptions, f: &RuleFields) -> Result<RuleOptions, SessionError> {
    let defaults = RuleOptions::default();
    let variant = match pb::Variant::try_from(o.variant) {
        Ok(pb::Variant::Unspecified | pb::Variant::Standard) => Variant::Standard,
        Ok(pb::Variant::Basic) => Variant::Basic,
        Err(_) => return Err(bad(f.variant, "unknown variant")),
    };
    let end_on_supply = match pb::EndOnSupply::try_from(o.end_on_supply) {
        Ok(pb::EndOnSupply::Unspecified | pb::EndOnSupply::FirstExhausted) => {
            EndOnSupply::FirstExhausted
        }
        Ok(pb::EndOnSupply::BothExhausted) => EndOnSupply::BothExhausted,
        Err(_) => return Err(bad(f.end_on_supply, "unknown end_on_supply")),
    };
    Ok(RuleOptions {
        variant,
        end_on_supply,
        max_plies: o.max_plies.unwrap_or(defaults.max_plies),
        repetition_limit: o.repetition_limit.unwrap_or(defaults.repetition_limit),
    })
}

/// Rule options to the wire, every field explicit.
pub fn rule_options_pb(o: &RuleOptions) -> pb::RuleOptions {
    pb::RuleOptions {
        variant: match o.variant {
            Variant::Standard => pb::Variant::Standard,
            Variant::Basic => pb::Variant::Basic,
        } as i32,
        end_on_supply: match o.end_on_supply {
            EndOnSupply::FirstExhausted => pb::EndOnSupply::FirstExhausted,
            EndOnSupply::BothExhausted => pb::EndOnSupply::BothExhausted,
        } as i32,
        max_plies: Some(o.max_plies),
        repetition_limit: Some(o.repetition_limit),
    }
}

/// A colour on the wire.
pub fn colour_pb(c: Colour) -> i32 {
    match c {
        Colour::White => pb::Colour::White as i32,
        Colour::Black => pb::Colour::Black as i32,
    }
}

fn kind_pb(k: MoveKind) -> i32 {
    (match k {
        MoveKind::Place => pb::MoveKind::Place,
        MoveKind::Move => pb::MoveKind::Move,
        MoveKind::Jump => pb::MoveKind::Jump,
        MoveKind::Bridge => pb::MoveKind::Bridge,
    }) as i32
}

/// A played or legal move: structured, notation, kind, level, mover.
pub fn move_pb(info: &PunctMoveInfo) -> pb::Move {
    move_pb_notated(info, info.notation.to_string())
}

/// [`move_pb`] with the notation already written (a [`MoveDetail`]'s).
fn move_pb_notated(info: &PunctMoveInfo, notation: String) -> pb::Move {
    let action = match info.mv {
        Move::Place {
            code,
            punct,
            rotation,
        } => pb::r#move::Action::Place(pb::Place {
            code: code.name().to_string(),
            punct: punct.to_string(),
            rotation: u32::from(rotation),
        }),
        Move::Shift { from, to, rotation } => pb::r#move::Action::Shift(pb::Shift {
            from: from.to_string(),
            to: to.to_string(),
            rotation: u32::from(rotation),
        }),
    };
    pb::Move {
        action: Some(action),
        notation,
        kind: kind_pb(info.kind),
        level: u32::from(info.level),
        colour: colour_pb(info.colour),
    }
}

/// PÜNCT details of an outcome.
pub fn outcome_detail_pb(o: &punct::Outcome) -> pb::OutcomeDetail {
    let sides = match o.sides {
        None => pb::SidePair::Unspecified,
        Some(SidePair::Columns) => pb::SidePair::Columns,
        Some(SidePair::Rows) => pb::SidePair::Rows,
        Some(SidePair::Diagonals) => pb::SidePair::Diagonals,
    };
    let [white, black] = o.centre_count.unwrap_or([0, 0]);
    pb::OutcomeDetail {
        sides: sides as i32,
        centre_white: u32::from(white),
        centre_black: u32::from(black),
        centre_counted: o.centre_count.is_some(),
    }
}

/// One space with its stack, bottom first.
pub fn space_pb(pos: &Position, s: Space) -> pb::SpaceStack {
    let mut dots: Vec<pb::Dot> = pos
        .stack(s)
        .into_iter()
        .map(|d| pb::Dot {
            colour: colour_pb(d.piece.colour()),
            piece_id: d.piece.index() as u32,
            code: d.piece.code().name().to_string(),
            level: u32::from(d.level),
            punct: d.is_punct,
        })
        .collect();
    dots.reverse(); // stack() is top-down; the wire is bottom first.
    pb::SpaceStack {
        space: s.to_string(),
        centre: s.is_centre(),
        height: u32::from(pos.height(s)),
        dots,
        top: pos
            .top_colour(s)
            .map_or(pb::Colour::Unspecified as i32, colour_pb),
    }
}

/// The board: the occupied spaces with their stacks (an empty space is
/// left out: the 211 spaces are the rules'), the pieces, both supplies.
pub fn board_pb(pos: &Position) -> pb::Board {
    let spaces = Space::all()
        .filter(|&s| pos.height(s) > 0)
        .map(|s| space_pb(pos, s))
        .collect();
    let pieces = pos
        .pieces_on_board()
        .map(|p| pb::Piece {
            id: p.id.index() as u32,
            colour: colour_pb(p.id.colour()),
            code: p.id.code().name().to_string(),
            punct: p.placement.punct.to_string(),
            rotation: u32::from(p.placement.rotation),
            level: u32::from(p.placement.level),
            mobile: p.mobile,
            spaces: p.spaces.iter().map(Space::to_string).collect(),
        })
        .collect();
    let supplies = Colour::BOTH
        .iter()
        .map(|&c| pb::Supply {
            colour: colour_pb(c),
            pieces: PieceCode::ALL
                .iter()
                .map(|&code| pb::SupplyCount {
                    code: code.name().to_string(),
                    count: u32::from(pos.supply(c, code)),
                })
                .collect(),
            total: u32::from(pos.supply_total(c)),
        })
        .collect();
    pb::Board {
        spaces,
        pieces,
        supplies,
    }
}

/// A state as `SNAPSHOT_VIEW_COMPACT` sends it: without its rules (the
/// game's, sent in full) and the forms derived from the rest.
pub fn compact_state(state: &mut pb::GameState) {
    state.rules = None;
    state.picture.clear();
    if let Some(board) = state.board.as_mut() {
        board.spaces.clear();
    }
}

/// The PÜNCT state of a game.
pub fn state_pb(s: &PunctState) -> pb::GameState {
    pb::GameState {
        rules: Some(rule_options_pb(&s.options)),
        board: Some(board_pb(&s.position)),
        to_move: colour_pb(s.position.to_move()),
        ply: s.position.ply(),
        picture: render::ascii(&s.position),
    }
}

/// PÜNCT's options of `rules`, if the rules are PÜNCT's.
pub fn rules_pb(rules: &GameRules) -> Option<pb::RuleOptions> {
    rules.get::<RuleOptions>().map(rule_options_pb)
}

/// A PÜNCT move on the wire, if `detail` is one.
pub fn detail_pb(detail: &MoveDetail) -> Option<pb::Move> {
    detail
        .get::<PunctMoveInfo>()
        .map(|info| move_pb_notated(info, detail.notation.clone()))
}

/// PÜNCT's details of an outcome, if it has them.
pub fn game_outcome_detail_pb(outcome: &Outcome) -> Option<pb::OutcomeDetail> {
    outcome.get::<punct::Outcome>().map(outcome_detail_pb)
}

/// The PÜNCT state on the wire, if `snapshot` is one.
pub fn snapshot_pb(snapshot: &SharedState) -> Option<pb::GameState> {
    snapshot.get::<PunctState>().map(state_pb)
}

/// The request parts under the names callers have used for them.
pub use super::{MOVE_FIELDS, RULE_FIELDS};

/// PÜNCT on the wire.
pub struct PunctWire;

impl WireGame for PunctWire {
    fn kind(&self) -> &'static dyn GameKind {
        &crate::games::punct::kind::Punct
    }

    fn title(&self) -> &'static str {
        "PÜNCT"
    }

    fn rules(
        &self,
        rules: &rpb::game_rules::Game,
        part: Part,
    ) -> Option<Result<GameRules, SessionError>> {
        let rpb::game_rules::Game::Punct(o) = rules else {
            return None;
        };
        Some(rule_options(o, rule_fields(part)).map(GameRules::new))
    }

    fn rules_pb(&self, rules: &GameRules) -> Option<rpb::game_rules::Game> {
        rules_pb(rules).map(rpb::game_rules::Game::Punct)
    }

    fn move_input(
        &self,
        m: &rpb::r#move::Game,
        part: Part,
    ) -> Option<Result<MoveInput, SessionError>> {
        let rpb::r#move::Game::Punct(p) = m else {
            return None;
        };
        Some(move_input(p, move_fields(part)).map(MoveInput::new))
    }

    fn move_pb(&self, detail: &MoveDetail) -> Option<rpb::r#move::Game> {
        detail_pb(detail).map(rpb::r#move::Game::Punct)
    }

    fn notation_pb(&self, notation: &str) -> rpb::r#move::Game {
        rpb::r#move::Game::Punct(pb::Move {
            notation: notation.to_string(),
            ..Default::default()
        })
    }

    fn outcome_detail_pb(&self, outcome: &Outcome) -> Option<rpb::outcome::Detail> {
        game_outcome_detail_pb(outcome).map(rpb::outcome::Detail::Punct)
    }

    fn state_pb(&self, snapshot: &SharedState) -> Option<rpb::game_state::Game> {
        snapshot_pb(snapshot).map(rpb::game_state::Game::Punct)
    }

    fn compact_state(&self, state: &mut rpb::game_state::Game) {
        if let rpb::game_state::Game::Punct(s) = state {
            compact_state(s);
        }
    }

    fn notation_of<'a>(&self, m: &'a rpb::r#move::Game) -> Option<&'a str> {
        match m {
            rpb::r#move::Game::Punct(m) => Some(&m.notation),
            _ => None,
        }
    }

    fn picture_of<'a>(&self, state: &'a rpb::game_state::Game) -> Option<&'a str> {
        match state {
            rpb::game_state::Game::Punct(s) => Some(&s.picture),
            _ => None,
        }
    }

    fn sidelines(&self, state: &rpb::game_state::Game) -> Option<Sidelines> {
        let rpb::game_state::Game::Punct(p) = state else {
            return None;
        };
        let supplies = p
            .board
            .as_ref()
            .map(|b| b.supplies.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|s| {
                let pieces = s.pieces.iter().map(|c| (c.code.clone(), c.count));
                (s.total, pieces.collect())
            })
            .collect();
        Some(Sidelines {
            supplies,
            ..Sidelines::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::punct::{Engine, RuleOptions};

    /// The board lists exactly the occupied spaces, each as the full
    /// listing of every space showed it; the ones left out are empty.
    #[test]
    fn the_board_lists_the_occupied_spaces_and_nothing_else() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20 {
            let mut game = Engine::new(RuleOptions::default());
            for _ in 0..60 {
                let pos = *game.position();
                let board = board_pb(&pos);
                let mut listed = board.spaces.iter();
                for s in Space::all() {
                    let full = space_pb(&pos, s);
                    if pos.height(s) == 0 {
                        assert!(full.dots.is_empty() && full.height == 0);
                    } else {
                        assert_eq!(listed.next(), Some(&full), "{s}");
                    }
                }
                assert_eq!(listed.next(), None);
                let moves = game.legal_moves();
                if moves.is_empty() {
                    break;
                }
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mv = moves[(seed % moves.len() as u64) as usize];
                if game.play(mv).is_err() || game.outcome().is_some() {
                    break;
                }
            }
        }
    }
}
