//! `client show`: draws a game's board, with its status.

use super::display::describe_game;
use super::{Connection, refused};
use crate::tools::rpc;

/// Prints the board and status of game `game`.
pub(super) async fn run(c: &mut Connection, game: &str) -> Result<(), String> {
    let game = rpc::get_game(&mut c.client, game).await.map_err(refused)?;
    print!("{}", describe_game(&game));
    Ok(())
}
