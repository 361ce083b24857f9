//! Who reads a game, and what a spectator of a delayed game is answered
//! (docs/SPECTATOR.md, "Delayed spectators"). The session layer decides
//! what may be shown ([`Session::delayed_view`] and its siblings); this
//! layer only says who the reader is and converts the shown view, which is
//! never shared with live readers' encoded forms.

use super::answer::{EncodedGame, GetGameAnswer};
use super::convert;
use super::pb::referee::v1 as pb;
use crate::games::Seat;
use crate::service::edge::access::{Caller, Scope};
use crate::service::sessions::{Role, Session, SessionError};

/// Whether the caller is the platform (a key with `games:admin`): it reads
/// the live game without a seat token.
pub(super) fn is_platform(caller: &Caller) -> bool {
    caller
        .key
        .as_ref()
        .is_some_and(|k| k.has(Scope::GamesAdmin))
}

/// Who reads game `session` bringing `token`, as [`Session::reader_role`].
pub(super) fn reader(
    caller: &Caller,
    session: &Session,
    token: &str,
) -> Result<Role, SessionError> {
    session.reader_role(token, is_platform(caller))
}

/// GetGame's answer to a spectator of a delayed game (`None` for any other
/// reader): the shown view, converted for this call only (never through
/// the shared forms of the live states).
pub(super) fn delayed_get_game(
    session: &Session,
    role: Role,
    compact: bool,
) -> Option<GetGameAnswer> {
    let view = session.delayed_view(role)?;
    let game = convert::game_pb(&view);
    let game = if compact {
        EncodedGame::of(convert::compact_game_pb(game))
    } else {
        EncodedGame::of(game)
    };
    Some(GetGameAnswer {
        game,
        clock: convert::clock_pb(&view.clock),
        presence: convert::presence_pb(&view.presence),
        viewer: convert::viewer_pb(view.viewer),
    })
}

/// ListLegalMoves' answer to a spectator of a delayed game (`None` for any
/// other reader): the moves of the position shown, at its ply.
pub(super) fn delayed_legal_moves(
    session: &Session,
    seat: Option<Seat>,
    role: Role,
    view: pb::MovesView,
) -> Option<pb::ListLegalMovesResponse> {
    let (ply, to_move, moves) = session.released_legal_moves(seat, role)?;
    let mut answer = pb::ListLegalMovesResponse {
        ply,
        to_move: convert::seat_pb(to_move),
        ..Default::default()
    };
    match view {
        pb::MovesView::Text => {
            let mut text = String::new();
            for m in &moves {
                text.push_str(&m.detail.notation);
                text.push('\n');
            }
            answer.notation_text = text.into();
        }
        pb::MovesView::Notation => {
            answer.notations = moves.iter().map(|m| m.detail.notation.clone()).collect();
        }
        _ => answer.moves = moves.iter().map(|m| convert::move_pb(&m.detail)).collect(),
    }
    Some(answer)
}
