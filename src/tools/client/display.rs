//! What the client prints about a game: the board picture with a status
//! line, an outcome in words, a seat's name as a person reads it.

use std::fmt::Write as _;

use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::rpc;

/// A seat's name for people (`White`, `Black`); `nobody` for no seat.
pub fn seat_title(seat: Option<usize>) -> String {
    let Some(seat) = seat else {
        return "nobody".into();
    };
    let name = rpc::seat_name(seat);
    let mut letters = name.chars();
    match letters.next() {
        Some(first) => first.to_uppercase().chain(letters).collect(),
        None => String::new(),
    }
}

/// `White wins by CONNECTION`, `draw by MOVE_LIMIT`.
pub fn outcome_text(outcome: &pb::Outcome) -> String {
    match rpc::winner(outcome) {
        None => format!("draw by {}", outcome.reason),
        winner => format!("{} wins by {}", seat_title(winner), outcome.reason),
    }
}

/// The status line after a move or of a snapshot: the outcome once the game
/// is finished, else who moves.
pub fn status_line(status: i32, outcome: Option<&pb::Outcome>, to_move: rpc::WireSeat) -> String {
    match outcome {
        Some(o) if status == pb::GameStatus::Finished as i32 => {
            format!("game over: {}", outcome_text(o))
        }
        _ => format!("{} to move", seat_title(rpc::seat_index(to_move))),
    }
}

/// The board picture and a status line of a snapshot.
pub fn describe_game(game: &pb::Game) -> String {
    let mut out = String::new();
    if let Some(pb::game_state::Game::Punct(state)) =
        game.state.as_ref().and_then(|s| s.game.as_ref())
    {
        out.push_str(&state.picture);
    }
    let _ = writeln!(out, "game {} at ply {}", game.game_id, game.ply);
    let _ = writeln!(
        out,
        "{}",
        status_line(game.status, game.outcome.as_ref(), game.to_move)
    );
    out
}
