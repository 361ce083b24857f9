//! `client play`: submits a move in notation for the seat to move (or the
//! one asked for), with that seat's kept token, in the game named or else
//! the last one kept in the token file.

use super::display::{seat_title_in, status_line};
use super::tokens::TokenFile;
use super::{Connection, refused};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::games::game_of_wire;
use crate::tools::rpc;

/// Plays `notation` in `game` (default: the last game kept) as the seat
/// called `seat` (default: the seat to move).
pub(super) async fn run(
    c: &mut Connection,
    game: Option<String>,
    notation: &str,
    seat: Option<String>,
) -> Result<(), String> {
    let file = TokenFile::load(&c.token_path)?;
    let game = file.game_or_last(game, &c.token_path)?;
    let current = rpc::get_game(&mut c.client, &game).await.map_err(refused)?;
    let names = rpc::seat_names_of(&current);
    let asked = match seat {
        None => None,
        Some(name) => Some(
            names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(&name))
                .ok_or_else(|| {
                    format!(
                        "game {game} has no seat `{name}` (its seats: {})",
                        names.join(", ")
                    )
                })?,
        ),
    };
    let seat = match asked.or(rpc::seat_index(current.to_move)) {
        Some(seat) => seat,
        None => return Err(format!("game {game} is over")),
    };
    let token = file
        .games
        .get(&game)
        .and_then(|kept| kept.token_of(&names[seat]))
        .ok_or_else(|| {
            format!(
                "no {} token for game {game} in {}",
                seat_title_in(&names, Some(seat)),
                c.token_path.display()
            )
        })?;
    let mv = game_of_wire(current.rules.as_ref()).wire_move(notation);
    let reply = rpc::submit_move(&mut c.client, &game, token, mv, current.ply, None)
        .await
        .map_err(refused)?;
    print_reply(&names, &reply);
    Ok(())
}

/// `White played SE@E5:F5,G5 (ply 1)` (Punto: `Red played R7 on 1,0`, and
/// the round's summary when the move ended one), then the status line.
fn print_reply(names: &[String], reply: &pb::SubmitMoveResponse) {
    let played = reply
        .r#move
        .as_ref()
        .map(rpc::played_text)
        .unwrap_or_default();
    println!(
        "{} played {played} (ply {})",
        seat_title_in(names, rpc::seat_index(reply.seat)),
        reply.ply
    );
    if let Some(summary) = reply.r#move.as_ref().and_then(rpc::round_ended_by) {
        println!("{summary}");
    }
    println!(
        "{}",
        status_line(names, reply.status, reply.outcome.as_deref(), reply.to_move)
    );
}
