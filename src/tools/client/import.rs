//! `client import`: creates a game from a record file (or standard input),
//! keeps its seat tokens, prints its id and board.

use std::path::Path;

use super::display::describe_game;
use super::{Connection, refused, tokens};
use crate::tools::rpc;

/// Imports the record in `file` (`-`: standard input).
pub(super) async fn run(c: &mut Connection, file: &Path) -> Result<(), String> {
    let record = read_record(file)?;
    let imported = rpc::import_game(&mut c.client, record)
        .await
        .map_err(refused)?;
    tokens::keep(&c.token_path, &c.server, &imported)?;
    println!("{}", imported.id());
    print!("{}", describe_game(&imported.game));
    Ok(())
}

/// The record's text, from `file` or from standard input for `-`.
fn read_record(file: &Path) -> Result<String, String> {
    if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))
    }
}
