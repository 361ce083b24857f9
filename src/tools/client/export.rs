//! `client export`: prints a game's record, or writes it to a file.

use std::io::Write as _;
use std::path::PathBuf;

use super::{Connection, refused};
use crate::tools::rpc;

/// Exports `game` to `output`, or to standard output.
pub(super) async fn run(
    c: &mut Connection,
    game: &str,
    output: Option<PathBuf>,
) -> Result<(), String> {
    let record = rpc::export_record(&mut c.client, game)
        .await
        .map_err(refused)?;
    match output {
        Some(path) => std::fs::write(&path, record).map_err(|e| format!("{}: {e}", path.display())),
        None => {
            let _ = std::io::stdout().write_all(record.as_bytes());
            Ok(())
        }
    }
}
