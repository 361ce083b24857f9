//! Reading the TLS files ([`super::tls`]) and the platform keys file
//! ([`super::access::Keys`]) again while the server runs: on SIGHUP, and
//! when a file's modification time or size changes (polled). A file that
//! does not load leaves the old configuration in force and says why in the
//! log, so certificates and keys rotate without a restart (docs/SECURITY.md).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::access::Keys;
use super::tls::{Stamp, TlsConfig, stamp};

/// How often the certificate and keys files are checked for changes unless
/// configured.
pub const DEFAULT_RELOAD_POLL: Duration = Duration::from_secs(5);

/// Reads the TLS files and the keys file again on SIGHUP and when they
/// change on disk, until stopped.
#[derive(Debug, Clone)]
pub struct Reloader {
    /// TLS, when on.
    pub tls: Option<Arc<TlsConfig>>,
    /// The keys, when on.
    pub keys: Keys,
    /// The keys file, to watch for changes.
    pub keys_file: Option<PathBuf>,
    /// How often the files are looked at.
    pub poll: Duration,
}

impl Reloader {
    /// Whether there is anything to reload.
    pub fn needed(&self) -> bool {
        self.tls.is_some() || self.keys_file.is_some()
    }

    /// Watches until `stop`. SIGHUP is taken from `hangups` (made by
    /// [`hangups`] before the server serves, so that a SIGHUP never meets
    /// the default action, which ends the process) whether or not there is
    /// anything to reload: with nothing, it is logged and ignored.
    pub async fn run(self, mut hangups: Hangups, stop: CancellationToken) {
        if !self.needed() {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = next_hangup(&mut hangups) => tracing::info!(
                        "SIGHUP: nothing to reload (no TLS and no keys file); still serving"
                    ),
                }
            }
        }
        let mut tick = tokio::time::interval(self.poll.max(Duration::from_millis(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut keys_seen = self.keys_file.as_deref().map(|p| stamp(&[p]));
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = next_hangup(&mut hangups) => {
                    tracing::info!("SIGHUP: reading the TLS and keys files again");
                    self.reload_tls();
                    self.reload_keys(&mut keys_seen);
                }
                _ = tick.tick() => {
                    if self.tls.as_ref().is_some_and(|t| t.changed()) {
                        self.reload_tls();
                    }
                    let keys_now = self.keys_file.as_deref().map(|p| stamp(&[p]));
                    if keys_now != keys_seen {
                        self.reload_keys(&mut keys_seen);
                    }
                }
            }
        }
    }

    fn reload_tls(&self) {
        let Some(tls) = &self.tls else { return };
        match tls.reload() {
            Ok(()) => tracing::info!("TLS certificate reloaded: new connections use it"),
            Err(e) => tracing::error!("TLS reload failed, the previous certificate stays: {e}"),
        }
    }

    fn reload_keys(&self, seen: &mut Option<Stamp>) {
        let Some(path) = &self.keys_file else { return };
        *seen = Some(stamp(&[path]));
        match self.keys.reload() {
            Ok(n) => tracing::info!(keys = n, "keys file reloaded"),
            Err(e) => tracing::error!("keys reload failed, the previous keys stay: {e}"),
        }
    }
}

/// Where SIGHUP arrives (see [`hangups`]).
#[cfg(unix)]
pub type Hangups = Option<tokio::signal::unix::Signal>;
/// Where SIGHUP arrives (none here).
#[cfg(not(unix))]
pub type Hangups = ();

/// Takes SIGHUP over from its default action (ending the process); from
/// here on each one is read by [`Reloader::run`]. Call it inside the runtime.
#[cfg(unix)]
pub fn hangups() -> Hangups {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .inspect_err(|e| tracing::warn!("cannot listen for SIGHUP: {e}"))
        .ok()
}

/// Takes SIGHUP over (nothing to do here).
#[cfg(not(unix))]
pub fn hangups() -> Hangups {}

#[cfg(unix)]
async fn next_hangup(hangups: &mut Hangups) {
    match hangups {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangups) {
    std::future::pending().await
}
