//! What the client prints about a game: the board picture with a status
//! line, an outcome in words, a seat's name as a person reads it.

use std::fmt::Write as _;

use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::rpc;

/// A PÜNCT seat's name for people (`White`, `Black`); `nobody` for no seat.
pub(super) fn seat_title(seat: Option<usize>) -> String {
    let names: Vec<String> = rpc::seat_names().iter().map(|s| s.to_string()).collect();
    seat_title_in(&names, seat)
}

/// The name of `seat` among a game's `names`, for people (`Red`); `nobody`
/// for no seat.
pub(super) fn seat_title_in(names: &[String], seat: Option<usize>) -> String {
    let Some(seat) = seat else {
        return "nobody".into();
    };
    let name = names.get(seat).map_or("another seat", String::as_str);
    let mut letters = name.chars();
    match letters.next() {
        Some(first) => first.to_uppercase().chain(letters).collect(),
        None => String::new(),
    }
}

/// `White wins by CONNECTION`, `draw by MOVE_LIMIT` (PÜNCT's seats).
pub(super) fn outcome_text(outcome: &pb::Outcome) -> String {
    let names: Vec<String> = rpc::seat_names().iter().map(|s| s.to_string()).collect();
    outcome_text_in(&names, outcome)
}

/// [`outcome_text`] with a game's seat `names`; the scores, where the game
/// keeps them (`Red wins by GROUND, 3-1`); several winners together (a
/// team, the seats left after a resignation) by name: `Red-blue-1 and
/// Red-blue-2 win by ROUNDS_WON, 2-0-2-0`.
pub(super) fn outcome_text_in(names: &[String], outcome: &pb::Outcome) -> String {
    let winners: Vec<String> = outcome
        .winners
        .iter()
        .map(|&w| seat_title_in(names, rpc::seat_index(w)))
        .collect();
    let mut text = match winners.as_slice() {
        _ if outcome.draw => format!("draw by {}", outcome.reason),
        [] => format!("draw by {}", outcome.reason),
        [one] => format!("{one} wins by {}", outcome.reason),
        several => format!("{} win by {}", several.join(" and "), outcome.reason),
    };
    if !outcome.scores.is_empty() {
        let scores: Vec<String> = outcome.scores.iter().map(i64::to_string).collect();
        let _ = write!(text, ", {}", scores.join("-"));
    }
    text
}

/// The status line after a move or of a snapshot: the outcome once the game
/// is finished, else who moves; `names` are the game's seats.
pub(super) fn status_line(
    names: &[String],
    status: i32,
    outcome: Option<&pb::Outcome>,
    to_move: rpc::WireSeat,
) -> String {
    match outcome {
        Some(o) if status == pb::GameStatus::Finished as i32 => {
            format!("game over: {}", outcome_text_in(names, o))
        }
        _ => format!("{} to move", seat_title_in(names, rpc::seat_index(to_move))),
    }
}

/// The board picture and a status line of a snapshot.
pub(super) fn describe_game(game: &pb::Game) -> String {
    let mut out = String::new();
    if let Some(state) = &game.state {
        out.push_str(rpc::picture_of(state));
    }
    let _ = writeln!(out, "game {} at ply {}", game.game_id, game.ply);
    let names = rpc::seat_names_of(game);
    let _ = writeln!(
        out,
        "{}",
        status_line(&names, game.status, game.outcome.as_ref(), game.to_move)
    );
    out
}
