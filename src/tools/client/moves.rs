//! `client moves`: lists the legal moves of the player to move, one a line.

use std::fmt::Write as _;
use std::io::Write as _;

use super::{Connection, refused};
use crate::tools::rpc;

/// Prints the legal moves of `game`.
pub async fn run(c: &mut Connection, game: &str) -> Result<(), String> {
    let legal = rpc::legal_moves(&mut c.client, game)
        .await
        .map_err(refused)?;
    let mut text = String::new();
    for notation in &legal.notations {
        let _ = writeln!(text, "{notation}");
    }
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}
