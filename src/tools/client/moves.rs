//! `client moves`: lists the legal moves of the player to move, one a line,
//! of the game named or else the last one kept in the token file.

use std::fmt::Write as _;
use std::io::Write as _;

use super::tokens::TokenFile;
use super::{Connection, refused};
use crate::tools::rpc;

/// Prints the legal moves of `game` (default: the last game kept).
pub(super) async fn run(c: &mut Connection, game: Option<String>) -> Result<(), String> {
    let game = TokenFile::load(&c.token_path)?.game_or_last(game, &c.token_path)?;
    let legal = rpc::legal_moves(&mut c.client, &game)
        .await
        .map_err(refused)?;
    let mut text = String::new();
    for notation in &legal.notations {
        let _ = writeln!(text, "{notation}");
    }
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}
