//! `load --idle-sessions N`: the spawned server's resident memory before
//! and after creating N games of `--game` that never move, per game.

use std::time::Duration;

use tonic::transport::Channel;

use super::LoadArgs;
use super::report::{self, IdleReport};
use super::spawn::SpawnedServer;
use crate::games::GameRules;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::games::game_of_wire;
use crate::tools::rpc;

/// Measures and reports the memory per idle game of `server`.
pub(super) async fn idle_sessions(
    args: &LoadArgs,
    channels: &[Channel],
    server: &SpawnedServer,
    n: usize,
) -> Result<(), String> {
    let request = create_request(args)?;
    // Warm the server up first (allocator, runtime, connections), so the
    // difference is the games.
    create_games(channels, &request, 1000.min(n)).await?;
    settle().await;
    let before = server.rss_kib()?;
    let last = create_games(channels, &request, n).await?;
    settle().await;
    let after = server.rss_kib()?;
    let game = game_of_server(channels, last.as_deref()).await?;
    let report = IdleReport {
        game,
        sessions: n,
        rss_before_kib: before,
        rss_after_kib: after,
        bytes_per_session: after.saturating_sub(before) as f64 * 1024.0 / n.max(1) as f64,
        server_args: args.server_args.clone(),
    };
    if report::prints_table(args) {
        println!(
            "idle sessions: {n} {} games created; server VmRSS {} KiB -> {} KiB: {:.0} bytes per game",
            report.game, report.rss_before_kib, report.rss_after_kib, report.bytes_per_session
        );
    }
    report::write_json(args, &report)
}

/// Gives the server's allocator a moment to settle before a reading.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// `CreateGame` of `--game` with its options: no rules for the default
/// game under its default rules, as the moves phase sends; a seeded game
/// without `--game-seed` lets the server draw each game's seed.
fn create_request(args: &LoadArgs) -> Result<pb::CreateGameRequest, String> {
    if args.choice.is_default_game() {
        return Ok(pb::CreateGameRequest::default());
    }
    let rules = args.choice.rules(GameRules::default())?;
    Ok(rpc::create_request_for(&rules, Default::default(), None))
}

/// The game the server says it made (`last`, read back), so the report
/// names what was measured rather than what was asked.
async fn game_of_server(channels: &[Channel], last: Option<&str>) -> Result<String, String> {
    let Some(id) = last else {
        return Ok(String::new());
    };
    let mut client = rpc::Client::new(channels[0].clone());
    let game = rpc::get_game(&mut client, id)
        .await
        .map_err(|s| format!("GetGame: {:?}: {}", s.code(), s.message()))?;
    Ok(game_of_wire(game.rules.as_ref()).name().to_string())
}

/// Creates `n` games of `request` over the channels, 64 calls at a time;
/// the id of one of them (`None` when `n` is 0).
async fn create_games(
    channels: &[Channel],
    request: &pb::CreateGameRequest,
    n: usize,
) -> Result<Option<String>, String> {
    const WORKERS: usize = 64;
    let tasks: Vec<_> = (0..WORKERS)
        .map(|w| {
            let mut client = rpc::Client::new(channels[w % channels.len()].clone());
            let count = n / WORKERS + usize::from(w < n % WORKERS);
            let request = request.clone();
            tokio::spawn(async move {
                let mut last = None;
                for _ in 0..count {
                    let made = rpc::create_game(&mut client, request.clone())
                        .await
                        .map_err(|s| format!("CreateGame: {:?}: {}", s.code(), s.message()))?;
                    last = Some(made.game.game_id);
                }
                Ok::<_, String>(last)
            })
        })
        .collect();
    let mut last = None;
    for t in tasks {
        last = t.await.map_err(|e| e.to_string())??.or(last);
    }
    Ok(last)
}
