//! Move notation (docs/rules/punct.md §7): any text parses or is refused with a message,
//! never a panic; a parsed move prints canonically and the canonical text
//! parses back to the same move; resolved on a real position, the move's
//! notation is the one parsed, and a legal one plays with that notation.

use super::{POSITIONS, as_rules};
use punct_referee::games::punct::{EndOnSupply, NotatedMove, PieceCode, Space, Variant};
use punct_referee::games::{MoveError, MoveInput, PunctMoveInput};

/// One input, checked; panics on a finding.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The pieces of a move, and the option names, on their own.
    if let Ok(space) = text.parse::<Space>() {
        assert_eq!(space.to_string().parse::<Space>().ok(), Some(space));
    }
    if let Ok(code) = text.parse::<PieceCode>() {
        assert_eq!(code.to_string().parse::<PieceCode>().ok(), Some(code));
    }
    let _ = text.parse::<Variant>();
    let _ = text.parse::<EndOnSupply>();

    let notated = match text.parse::<NotatedMove>() {
        Ok(n) => n,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an error without a message");
            return;
        }
    };
    let canonical = notated.to_string();
    let again: NotatedMove = canonical
        .parse()
        .unwrap_or_else(|e| panic!("canonical `{canonical}` of `{text}` does not parse: {e}"));
    assert_eq!(
        again, notated,
        "`{text}` -> `{canonical}` reads back differently"
    );
    assert_eq!(again.to_string(), canonical, "printing is not canonical");

    for game in POSITIONS.iter() {
        let pos = game.position();
        match game.resolve(notated) {
            Ok(mv) => {
                assert_eq!(
                    pos.notate(mv),
                    Some(notated),
                    "`{canonical}` resolves to {mv:?}, which notates differently"
                );
                let mut g = game.clone();
                match (game.validate(mv), g.play(mv)) {
                    (Ok(_), Ok(played)) => assert_eq!(played.notation, notated),
                    (Err(a), Err(b)) => {
                        assert_eq!(a, b, "validate and play disagree");
                        assert_eq!(g.position(), pos, "a refused move changed the position");
                    }
                    (v, p) => panic!("validate {v:?} but play {p:?} for `{canonical}`"),
                }
            }
            Err(e) => assert!(!e.reason().is_empty() && !e.to_string().is_empty()),
        }
        // The same text through the session layer's trait: a rule refusal
        // (never "malformed": the syntax was fine), or the same move.
        let mut rules = as_rules(game);
        let input = MoveInput::new(PunctMoveInput {
            structured: None,
            notation: Some(notated),
        });
        match rules.play(&input) {
            Ok(report) => assert_eq!(report.detail.notation, canonical),
            Err(MoveError::Illegal { reason, message }) => {
                assert!(!reason.is_empty() && !message.is_empty());
                assert_eq!(rules.ply(), game.position().ply());
            }
            Err(e @ MoveError::Malformed { .. }) => panic!("well-formed `{canonical}`: {e:?}"),
        }
    }
}
