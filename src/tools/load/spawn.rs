//! `load --spawn`: this binary's own server as a child process on a free
//! loopback port, with the arguments after `--`, a fresh data directory,
//! and a wait until its health check says SERVING.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::procfs;
use crate::tools::rpc::ServerAddress;

/// A server child process started by `--spawn`.
pub(super) struct SpawnedServer {
    child: tokio::process::Child,
    /// Its process id (for its CPU time and memory).
    pub pid: u32,
    /// Where it listens.
    pub address: ServerAddress,
    /// A fresh data directory for its durable store, removed at the end.
    data_dir: PathBuf,
}

impl SpawnedServer {
    /// Starts the server with `extra` arguments, holding up to
    /// `max_sessions` games unless they say otherwise (and, with
    /// `webhooks`, delivering webhooks to loopback addresses), and waits
    /// until it serves.
    pub(super) async fn start(
        extra: &[String],
        max_sessions: usize,
        webhooks: bool,
    ) -> Result<SpawnedServer, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        // A free port: bound and released at once (another process could
        // take it in between; then the server fails and says so).
        let listen = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?;
        let port = listen.port();
        let address = ServerAddress::of_listener(listen).map_err(|e| e.to_string())?;
        // A durable store starts empty (no games of an earlier run to
        // recover) and leaves nothing behind.
        let data_dir =
            std::env::temp_dir().join(format!("referee-load-{}-{port}", std::process::id()));
        let mut child = tokio::process::Command::new(&exe)
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .args(extra)
            // Defaults the arguments can override (flags win over these).
            .env("PUNCT_REFEREE_MAX_SESSIONS", max_sessions.to_string())
            .env("PUNCT_REFEREE_METRICS_LISTEN", "127.0.0.1:0")
            .env("PUNCT_REFEREE_LOG", "warn")
            .env("PUNCT_REFEREE_DATA_DIR", &data_dir)
            .envs(webhooks.then_some(("PUNCT_REFEREE_WEBHOOK_ALLOW_PRIVATE", "true")))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let pid = child.id().ok_or("the server exited at once")?;
        wait_until_serving(&mut child, &address).await?;
        Ok(SpawnedServer {
            child,
            pid,
            address,
            data_dir,
        })
    }

    /// Resident memory of the server now, in KiB.
    pub(super) fn rss_kib(&self) -> Result<u64, String> {
        procfs::rss_kib(self.pid)
    }

    /// Kills the server and removes its data directory.
    pub(super) async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// Polls the health check for up to 30 s; fails at once if the child exits.
async fn wait_until_serving(
    child: &mut tokio::process::Child,
    address: &ServerAddress,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the server exited: {status}"));
        }
        if serving(address).await {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the server at {address} did not become healthy"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether the server at `address` answers its health check with SERVING.
async fn serving(address: &ServerAddress) -> bool {
    let endpoint = address.endpoint().connect_timeout(Duration::from_secs(1));
    let Ok(channel) = endpoint.connect().await else {
        return false;
    };
    HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await
        .is_ok_and(|r| r.into_inner().status() == ServingStatus::Serving)
}
