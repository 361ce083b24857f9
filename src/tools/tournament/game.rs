//! One finished tournament game as the local runner reports it: its
//! result (from the tournament's own record of it), its record text
//! (`ExportGame`) and, with a records folder, its record file.

use std::path::PathBuf;

use super::{Client, Config, Pairing, PlayedGame, TournamentError};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::rpc;

/// The result of tournament game `g` (finished), its record exported and
/// written.
pub async fn result_of(
    client: &mut Client,
    config: &Config,
    g: &pb::TournamentGame,
) -> Result<PlayedGame, TournamentError> {
    let seats: Vec<usize> = g.entrants.iter().map(|&e| e as usize).collect();
    let pairing = Pairing::of(g.number, &seats);
    let record = rpc::export_record(client, &g.game_id).await?;
    let record_path = write_record(config, pairing, &record)?;
    Ok(PlayedGame {
        pairing,
        game_id: g.game_id.clone(),
        white_points: g.points.first().copied().unwrap_or(0.0),
        points: g.points.clone(),
        reason: g.reason.clone(),
        plies: g.ply,
        forfeit: None,
        record,
        record_path,
    })
}

/// Writes the record to the records folder, if there is one:
/// `0001-WHITE-vs-BLACK.txt` (one name per seat).
fn write_record(
    config: &Config,
    pairing: Pairing,
    record: &str,
) -> Result<Option<PathBuf>, TournamentError> {
    let Some(dir) = &config.records else {
        return Ok(None);
    };
    let names: Vec<String> = pairing
        .seats()
        .iter()
        .map(|&bot| file_safe(&config.bots[bot].name))
        .collect();
    let path = dir.join(format!("{:04}-{}.txt", pairing.number, names.join("-vs-")));
    std::fs::write(&path, record)?;
    Ok(Some(path))
}

/// A bot's name as a file name: anything but letters, digits, `-_.` as `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
