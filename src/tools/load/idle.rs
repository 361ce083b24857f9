//! `load --idle-sessions N`: the spawned server's resident memory before
//! and after creating N games that never move, per game.

use std::time::Duration;

use tonic::transport::Channel;

use super::LoadArgs;
use super::report::{self, IdleReport};
use super::spawn::SpawnedServer;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::rpc;

/// Measures and reports the memory per idle game of `server`.
pub(super) async fn idle_sessions(
    args: &LoadArgs,
    channels: &[Channel],
    server: &SpawnedServer,
    n: usize,
) -> Result<(), String> {
    // Warm the server up first (allocator, runtime, connections), so the
    // difference is the games.
    create_games(channels, 1000.min(n)).await?;
    settle().await;
    let before = server.rss_kib()?;
    create_games(channels, n).await?;
    settle().await;
    let after = server.rss_kib()?;
    let report = IdleReport {
        sessions: n,
        rss_before_kib: before,
        rss_after_kib: after,
        bytes_per_session: after.saturating_sub(before) as f64 * 1024.0 / n.max(1) as f64,
        server_args: args.server_args.clone(),
    };
    if report::prints_table(args) {
        println!(
            "idle sessions: {n} games created; server VmRSS {} KiB -> {} KiB: {:.0} bytes per game",
            report.rss_before_kib, report.rss_after_kib, report.bytes_per_session
        );
    }
    report::write_json(args, &report)
}

/// Gives the server's allocator a moment to settle before a reading.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// Creates `n` games over the channels, 64 calls at a time.
async fn create_games(channels: &[Channel], n: usize) -> Result<(), String> {
    const WORKERS: usize = 64;
    let tasks: Vec<_> = (0..WORKERS)
        .map(|w| {
            let mut client = rpc::Client::new(channels[w % channels.len()].clone());
            let count = n / WORKERS + usize::from(w < n % WORKERS);
            tokio::spawn(async move {
                for _ in 0..count {
                    rpc::create_game(&mut client, pb::CreateGameRequest::default())
                        .await
                        .map_err(|s| format!("CreateGame: {:?}: {}", s.code(), s.message()))?;
                }
                Ok::<_, String>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}
