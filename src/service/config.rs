//! Configuration of the `serve` command: command-line flags, each also read
//! from an environment variable (`PUNCT_REFEREE_…`), all with defaults, so
//! the bare binary serves on port 50051.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use crate::service::cluster::{ClusterOptions, TakeoverClock};
use crate::service::edge::quota::QuotaOptions;
use crate::service::edge::tls::TlsFiles;
use crate::service::sessions::Limits;
use crate::service::storage::postgres::{DEFAULT_POOL_SIZE, PostgresOptions};
use crate::service::storage::sqlite::{SqliteOptions, SyncMode};
use crate::service::telemetry::LogFormat;
use crate::service::{ServerOptions, StorageConfig};

/// The port the service listens on when none is given.
pub const DEFAULT_PORT: u16 = 50051;

/// Flags of `punct-referee serve` (the default command).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Webhook delivery (docs/WEBHOOKS.md).
    #[command(flatten)]
    pub webhooks: crate::service::webhooks::WebhookFlags,
    /// Address to listen on.
    #[arg(long, env = "PUNCT_REFEREE_LISTEN", default_value = "0.0.0.0:50051")]
    pub listen: SocketAddr,
    /// Most games held at once (finished ones count until they expire).
    #[arg(long, env = "PUNCT_REFEREE_MAX_SESSIONS", default_value_t = 10_000)]
    pub max_sessions: usize,
    /// Most watchers of one game at once.
    #[arg(
        long,
        env = "PUNCT_REFEREE_MAX_WATCHERS_PER_GAME",
        default_value_t = 64
    )]
    pub max_watchers_per_game: usize,
    /// Most watch streams open at once over all games (each costs memory
    /// even when its client never reads).
    #[arg(long, env = "PUNCT_REFEREE_MAX_WATCH_STREAMS", default_value_t = crate::service::grpc::service::DEFAULT_MAX_WATCH_STREAMS)]
    pub max_watch_streams: usize,
    /// Most calls in flight at once; more are refused at once with
    /// RESOURCE_EXHAUSTED instead of queued (health checks are exempt).
    #[arg(long, env = "PUNCT_REFEREE_MAX_CONCURRENT_CALLS", default_value_t = crate::service::DEFAULT_MAX_CONCURRENT_CALLS)]
    pub max_concurrent_calls: usize,
    /// Events buffered per game for watchers; a slower watcher is resynchronised.
    #[arg(long, env = "PUNCT_REFEREE_WATCH_BUFFER", default_value_t = 64)]
    pub watch_buffer: usize,
    /// Seconds a finished game stays in memory; with durable storage it is
    /// read back from the store when asked for after that.
    #[arg(long, env = "PUNCT_REFEREE_FINISHED_TTL_SECS", default_value_t = 3600)]
    pub finished_ttl_secs: u64,
    /// How long finished games stay in durable storage after they end, as a
    /// number with a unit (`30d`, `12h`, `90m`, `45s`, `2w`); `0` keeps them
    /// for ever. Older games (and games expired unfinished) are pruned in
    /// the background.
    #[arg(long, env = "PUNCT_REFEREE_RETAIN_FINISHED", default_value = "0", value_parser = parse_retention)]
    pub retain_finished: Duration,
    /// Seconds a game with no move stays.
    #[arg(long, env = "PUNCT_REFEREE_IDLE_TTL_SECS", default_value_t = 86_400)]
    pub idle_ttl_secs: u64,
    /// Largest request or response message, in bytes.
    #[arg(long, env = "PUNCT_REFEREE_MAX_MESSAGE_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_message_bytes: usize,
    /// Seconds between HTTP/2 keepalive pings.
    #[arg(
        long,
        env = "PUNCT_REFEREE_KEEPALIVE_INTERVAL_SECS",
        default_value_t = 30
    )]
    pub keepalive_interval_secs: u64,
    /// Seconds a keepalive ping may go unanswered.
    #[arg(
        long,
        env = "PUNCT_REFEREE_KEEPALIVE_TIMEOUT_SECS",
        default_value_t = 10
    )]
    pub keepalive_timeout_secs: u64,
    /// Seconds to let in-flight calls finish on shutdown.
    #[arg(long, env = "PUNCT_REFEREE_DRAIN_TIMEOUT_SECS", default_value_t = 10)]
    pub drain_timeout_secs: u64,
    /// How long a seat of a game with a clock must have held no stream before
    /// its opponent may claim the win (ClaimVictory), in milliseconds.
    #[arg(long, env = "PUNCT_REFEREE_ABANDON_AFTER_MS", default_value_t = 60_000)]
    pub abandon_after_ms: u64,
    /// Log filter level: error, warn, info, debug or trace (`RUST_LOG`, if
    /// set, wins: it can also filter by module).
    #[arg(long, env = "PUNCT_REFEREE_LOG", default_value = "info")]
    pub log: tracing::Level,
    /// Log line format: `text` (readable) or `json` (one object a line).
    #[arg(long, env = "PUNCT_REFEREE_LOG_FORMAT", default_value = "text")]
    pub log_format: LogFormat,
    /// Address of the HTTP port: Prometheus `/metrics` and the spectator
    /// page at `/` (docs/SPECTATOR.md). `--metrics-listen` is its old name.
    /// [default: 0.0.0.0:9464, or PUNCT_REFEREE_METRICS_LISTEN, its old
    /// variable, when set]
    #[arg(
        long,
        visible_alias = "metrics-listen",
        env = "PUNCT_REFEREE_HTTP_LISTEN",
        value_name = "ADDRESS"
    )]
    pub http_listen: Option<SocketAddr>,
    /// The HTTP port's address under its old variable name, read when
    /// neither `--http-listen` nor `PUNCT_REFEREE_HTTP_LISTEN` is given.
    #[arg(long, hide = true, env = "PUNCT_REFEREE_METRICS_LISTEN")]
    pub legacy_metrics_listen: Option<SocketAddr>,
    /// Record no metrics and serve no `/metrics` (the spectator page stays).
    #[arg(long, env = "PUNCT_REFEREE_NO_METRICS")]
    pub no_metrics: bool,
    /// Open no HTTP port at all: no `/metrics`, no spectator page (gRPC only).
    #[arg(long, env = "PUNCT_REFEREE_NO_HTTP")]
    pub no_http: bool,
    /// Where games are kept: `sqlite` (durable, in the data directory),
    /// `postgres` (durable, in the database of `--database-url`) or `memory`
    /// (lost on restart).
    #[arg(long, env = "PUNCT_REFEREE_STORAGE", value_enum, default_value_t = StorageKind::Sqlite)]
    pub storage: StorageKind,
    /// The PostgreSQL database of `--storage postgres`, as a URL
    /// (`postgres://user:password@host:5432/database`) or libpq key/value
    /// string. No TLS: the database must be on a trusted network
    /// (docs/STORAGE.md). The schema is created or migrated at start.
    #[arg(
        long,
        env = "PUNCT_REFEREE_DATABASE_URL",
        value_name = "URL",
        hide_env_values = true,
        required_if_eq("storage", "postgres")
    )]
    pub database_url: Option<String>,
    /// Most connections of the PostgreSQL pool at once (reads, leases; at
    /// least 5); each of the four writers keeps one more of its own.
    #[arg(long, env = "PUNCT_REFEREE_DATABASE_POOL_SIZE", default_value_t = DEFAULT_POOL_SIZE)]
    pub database_pool_size: usize,
    /// This replica's name in a cluster (`--storage postgres`): the owner
    /// written on the leases of its games. Unique per running replica; empty
    /// (the default) picks the host name and a random suffix at each start
    /// (docs/CLUSTER.md).
    #[arg(long, env = "PUNCT_REFEREE_NODE_ID", default_value = "")]
    pub node_id: String,
    /// Where the other replicas reach this one's gRPC port to forward the
    /// calls of games it owns (`host:port`, `http://host:port` or
    /// `https://…`). Empty (the default): the listen address, or the host
    /// name when listening on every interface.
    #[arg(long, env = "PUNCT_REFEREE_ADVERTISE", default_value = "")]
    pub advertise: String,
    /// How long a replica's lease on its games lasts without a heartbeat, in
    /// milliseconds; another replica takes a game over once it has expired.
    /// Renewed every third of it.
    #[arg(long, env = "PUNCT_REFEREE_LEASE_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(300..))]
    pub lease_ms: u64,
    /// Whether the time between a replica's death and the takeover of its
    /// games is charged to the seat to move (`charge`) or not (`credit`, as
    /// after a restart).
    #[arg(long, env = "PUNCT_REFEREE_TAKEOVER_CLOCK", value_enum, default_value_t = TakeoverClock::Credit)]
    pub takeover_clock: TakeoverClock,
    /// Directory of the SQLite database (created if missing).
    #[arg(long, env = "PUNCT_REFEREE_DATA_DIR", default_value = "data")]
    pub data_dir: std::path::PathBuf,
    /// The server secret file (64 hex digits) that seals the decks of games
    /// in progress at rest; created, owner-only, when missing. Back it up
    /// with the database; every replica of a cluster needs the same file.
    /// Default: `referee.secret` in the data directory.
    #[arg(long, env = "PUNCT_REFEREE_SECRET_FILE", value_name = "FILE")]
    pub secret_file: Option<std::path::PathBuf>,
    /// The referee key file (an Ed25519 private key, PKCS#8 PEM) that signs
    /// receipts; created, owner-only, when missing, its keyring
    /// (`<name>.keyring.json`) beside it. Every replica of a cluster needs
    /// the same file. Default: with
    /// `--storage memory`, a key of this process only; else `referee.key`
    /// beside the server secret file (in the data directory by default).
    #[arg(long, env = "PUNCT_REFEREE_REFEREE_KEY", value_name = "FILE")]
    pub referee_key: Option<std::path::PathBuf>,
    /// How hard each commit is synced: `full` (survives power loss),
    /// `normal` (survives a crash of the service) or `off`.
    #[arg(long, env = "PUNCT_REFEREE_SYNC", value_enum, default_value_t = SyncMode::Normal)]
    pub sync: SyncMode,
    /// Cap on the database size in MiB; past it, changes are refused with
    /// UNAVAILABLE as on a full disk (0 = no cap).
    #[arg(long, env = "PUNCT_REFEREE_MAX_DB_MIB", default_value_t = 0)]
    pub max_db_mib: u64,
    /// PEM certificate chain (leaf first): serve TLS on both ports, with
    /// `--tls-key`. Read again on SIGHUP or when the file changes.
    #[arg(
        long,
        env = "PUNCT_REFEREE_TLS_CERT",
        requires = "tls_key",
        value_name = "PEM"
    )]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of the certificate.
    #[arg(
        long,
        env = "PUNCT_REFEREE_TLS_KEY",
        requires = "tls_cert",
        value_name = "PEM"
    )]
    pub tls_key: Option<std::path::PathBuf>,
    /// PEM CA certificates: clients must show a certificate signed by one
    /// (mutual TLS). Needs `--tls-cert`.
    #[arg(
        long,
        env = "PUNCT_REFEREE_TLS_CLIENT_CA",
        requires = "tls_cert",
        value_name = "PEM"
    )]
    pub tls_client_ca: Option<std::path::PathBuf>,
    /// Platform keys file (JSON lines: name, sha256, scopes; docs/SECURITY.md):
    /// creating, importing and aborting games then needs a key. Without
    /// it every caller may do everything (trusted networks only).
    #[arg(long, env = "PUNCT_REFEREE_KEYS", value_name = "FILE")]
    pub keys: Option<std::path::PathBuf>,
    /// Calls per second per client (its key, else its address); over it,
    /// RESOURCE_EXHAUSTED with RetryInfo (0 = no limit).
    #[arg(
        long,
        env = "PUNCT_REFEREE_CLIENT_CALLS_PER_SECOND",
        default_value_t = 0
    )]
    pub client_calls_per_second: u32,
    /// Calls a client may make at once above its rate (0 = one second's worth).
    #[arg(long, env = "PUNCT_REFEREE_CLIENT_BURST", default_value_t = 0)]
    pub client_burst: u32,
    /// Games in progress per client (0 = no limit but --max-sessions).
    #[arg(long, env = "PUNCT_REFEREE_MAX_GAMES_PER_CLIENT", default_value_t = 0)]
    pub max_games_per_client: usize,
    /// Watch streams open per client (0 = no limit but --max-watch-streams).
    #[arg(
        long,
        env = "PUNCT_REFEREE_MAX_WATCH_STREAMS_PER_CLIENT",
        default_value_t = 0
    )]
    pub max_watch_streams_per_client: usize,
    /// Connections open per client address, over both ports; never more
    /// than half of --max-connections (0 = that half).
    #[arg(
        long,
        env = "PUNCT_REFEREE_MAX_CONNECTIONS_PER_CLIENT",
        default_value_t = crate::service::edge::listen::DEFAULT_MAX_CONNECTIONS_PER_CLIENT
    )]
    pub max_connections_per_client: usize,
    /// Connections open at once over both ports (0 = the file descriptor
    /// limit, raised to its hard value at start, less 64).
    #[arg(long, env = "PUNCT_REFEREE_MAX_CONNECTIONS", default_value_t = 0)]
    pub max_connections: usize,
    /// Seconds from a connection's accept until its TLS handshake and its
    /// opening (HTTP/2 preface on the gRPC port, the first request's
    /// headers on the HTTP port) are done; later, it is closed.
    #[arg(long, env = "PUNCT_REFEREE_HANDSHAKE_TIMEOUT_SECS", default_value_t = crate::service::edge::listen::DEFAULT_HANDSHAKE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub handshake_timeout_secs: u64,
    /// Seconds a gRPC connection with no call in progress stays open.
    #[arg(long, env = "PUNCT_REFEREE_IDLE_TIMEOUT_SECS", default_value_t = crate::service::edge::listen::DEFAULT_IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_secs: u64,
    /// Seconds an HTTP connection with no request in progress stays open
    /// (keep-alive, and the time to send a later request's headers).
    #[arg(long, env = "PUNCT_REFEREE_HTTP_IDLE_TIMEOUT_SECS", default_value_t = crate::service::edge::listen::DEFAULT_HTTP_IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub http_idle_timeout_secs: u64,
    /// Seconds between checks of the TLS and keys files for changes.
    #[arg(long, env = "PUNCT_REFEREE_RELOAD_POLL_SECS", default_value_t = 5)]
    pub reload_poll_secs: u64,
}

/// A retention period: `0`, or a whole number followed by `s`, `m`, `h`, `d`
/// or `w` (seconds, minutes, hours, days, weeks).
pub fn parse_retention(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` has no unit: write e.g. 30d, 12h, 90m or 45s"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a whole number"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "`{unit}` is not a unit: use s, m, h, d or w (e.g. 30d)"
            ));
        }
    };
    n.checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("`{text}` is too long"))
}

/// The storage backends `--storage` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageKind {
    /// An SQLite database in `--data-dir`.
    Sqlite,
    /// A PostgreSQL database at `--database-url`.
    Postgres,
    /// Memory only.
    Memory,
}

impl ServeArgs {
    /// Where the HTTP port listens: `--http-listen` (alias
    /// `--metrics-listen`), else the old `PUNCT_REFEREE_METRICS_LISTEN`, else
    /// `0.0.0.0:9464`.
    pub fn http_address(&self) -> SocketAddr {
        self.http_listen
            .or(self.legacy_metrics_listen)
            .unwrap_or(SocketAddr::from((
                [0, 0, 0, 0],
                crate::service::telemetry::DEFAULT_METRICS_PORT,
            )))
    }

    /// The server options these flags describe.
    pub fn options(&self) -> ServerOptions {
        ServerOptions {
            limits: Limits {
                max_sessions: self.max_sessions,
                max_watchers_per_game: self.max_watchers_per_game,
                finished_ttl: Duration::from_secs(self.finished_ttl_secs),
                idle_ttl: Duration::from_secs(self.idle_ttl_secs),
                watch_buffer: self.watch_buffer,
                abandon_after: Duration::from_millis(self.abandon_after_ms),
            },
            max_message_bytes: self.max_message_bytes,
            keepalive_interval: Duration::from_secs(self.keepalive_interval_secs),
            keepalive_timeout: Duration::from_secs(self.keepalive_timeout_secs),
            drain_timeout: Duration::from_secs(self.drain_timeout_secs),
            sweep_interval: Duration::from_secs(
                (self.finished_ttl_secs.min(self.idle_ttl_secs) / 4).clamp(1, 30),
            ),
            max_concurrent_calls: self.max_concurrent_calls,
            max_watch_streams: self.max_watch_streams,
            retain_finished: (!self.retain_finished.is_zero()).then_some(self.retain_finished),
            webhooks: self.webhooks.options(),
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => Some(TlsFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                    client_ca: self.tls_client_ca.clone(),
                }),
                _ => None,
            },
            keys_file: self.keys.clone(),
            secret_file: match self.storage {
                StorageKind::Memory => None,
                _ => Some(self.secret_file.clone().unwrap_or_else(|| {
                    self.data_dir
                        .join(crate::service::storage::secret::SECRET_FILE)
                })),
            },
            // Beside the server secret unless given: where an operator
            // already keeps (and shares between replicas) a secret file.
            referee_key_file: match self.storage {
                StorageKind::Memory => self.referee_key.clone(),
                _ => Some(self.referee_key.clone().unwrap_or_else(|| {
                    self.secret_file
                        .as_deref()
                        .and_then(std::path::Path::parent)
                        .unwrap_or(&self.data_dir)
                        .join(crate::service::receipts::key::KEY_FILE)
                })),
            },
            quotas: QuotaOptions {
                calls_per_second: self.client_calls_per_second,
                burst: self.client_burst,
                games: self.max_games_per_client,
                watch_streams: self.max_watch_streams_per_client,
                connections: self.max_connections_per_client,
            },
            reload_poll: Duration::from_secs(self.reload_poll_secs.max(1)),
            max_connections: self.max_connections,
            handshake_timeout: Duration::from_secs(self.handshake_timeout_secs),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            http_idle_timeout: Duration::from_secs(self.http_idle_timeout_secs),
            cluster: ClusterOptions {
                node_id: self.node_id.clone(),
                advertise: self.advertise.clone(),
                lease: Duration::from_millis(self.lease_ms),
                takeover_clock: self.takeover_clock,
            },
            storage: match self.storage {
                StorageKind::Memory => StorageConfig::Memory,
                StorageKind::Postgres => StorageConfig::Postgres(PostgresOptions {
                    url: self.database_url.clone().unwrap_or_default(),
                    pool_size: self.database_pool_size,
                    node_id: crate::service::cluster::node_id(&self.node_id),
                    lease: Duration::from_millis(self.lease_ms),
                }),
                StorageKind::Sqlite => StorageConfig::Sqlite(SqliteOptions {
                    dir: self.data_dir.clone(),
                    sync: self.sync,
                    max_bytes: (self.max_db_mib > 0)
                        .then(|| self.max_db_mib.saturating_mul(1 << 20)),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn defaults_serve_on_the_documented_port() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.serve.listen.port(), DEFAULT_PORT);
        assert_eq!(
            cli.serve.http_address(),
            SocketAddr::from((
                [0, 0, 0, 0],
                crate::service::telemetry::DEFAULT_METRICS_PORT
            ))
        );
        assert_eq!(cli.serve.log_format, LogFormat::Text);
        let o = cli.serve.options();
        assert_eq!(o.limits.max_sessions, 10_000);
        match o.storage {
            StorageConfig::Sqlite(s) => {
                assert_eq!(s.dir, std::path::PathBuf::from("data"));
                assert_eq!(s.sync, SyncMode::Normal);
                assert_eq!(s.max_bytes, None);
            }
            other => panic!("SQLite is the default, not {other:?}"),
        }
        assert_eq!(o.max_message_bytes, 4 * 1024 * 1024);
        assert_eq!(o.tls, None, "plaintext by default");
        assert_eq!(o.keys_file, None, "no keys by default");
        assert_eq!(
            o.quotas,
            QuotaOptions {
                connections: 256,
                ..QuotaOptions::default()
            },
            "no per-client limit by default but the connections per address"
        );
        // The connection defaults docs/SECURITY.md and the README give.
        assert_eq!(o.max_connections, 0, "automatic: descriptors less 64");
        assert_eq!(o.handshake_timeout, Duration::from_secs(10));
        assert_eq!(o.idle_timeout, Duration::from_secs(300));
        assert_eq!(o.http_idle_timeout, Duration::from_secs(30));
        let library = ServerOptions::default();
        assert_eq!(library.quotas, o.quotas);
        assert_eq!(library.handshake_timeout, o.handshake_timeout);
        assert_eq!(library.idle_timeout, o.idle_timeout);
        assert_eq!(library.http_idle_timeout, o.http_idle_timeout);
    }

    #[test]
    fn tls_needs_both_a_certificate_and_a_key() {
        assert!(Cli::try_parse_from(["x", "--tls-cert", "c.pem"]).is_err());
        assert!(Cli::try_parse_from(["x", "--tls-client-ca", "ca.pem"]).is_err());
        let cli = Cli::try_parse_from([
            "x",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
            "--tls-client-ca",
            "ca.pem",
        ])
        .unwrap();
        let tls = cli.serve.options().tls.unwrap();
        assert_eq!(tls.cert, std::path::PathBuf::from("c.pem"));
        assert_eq!(tls.key, std::path::PathBuf::from("k.pem"));
        assert_eq!(tls.client_ca, Some(std::path::PathBuf::from("ca.pem")));
    }

    #[test]
    fn retention_reads_a_number_and_a_unit() {
        assert_eq!(parse_retention("0"), Ok(Duration::ZERO));
        assert_eq!(parse_retention("45s"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_retention("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_retention("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_retention("30d"), Ok(Duration::from_secs(2_592_000)));
        assert_eq!(parse_retention("2w"), Ok(Duration::from_secs(1_209_600)));
        for bad in ["", "30", "d", "3x", "-1d", "1.5d", "99999999999999999999w"] {
            assert!(parse_retention(bad).is_err(), "{bad}");
        }
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.serve.options().retain_finished, None, "kept for ever");
        let cli = Cli::try_parse_from(["x", "--retain-finished", "30d"]).unwrap();
        assert_eq!(
            cli.serve.options().retain_finished,
            Some(Duration::from_secs(2_592_000))
        );
        assert!(Cli::try_parse_from(["x", "--retain-finished", "30"]).is_err());
    }

    #[test]
    fn the_secret_file_defaults_to_the_data_directory_for_either_database() {
        let secret = |args: &[&str]| {
            let mut all = vec!["x"];
            all.extend(args);
            Cli::try_parse_from(all)
                .unwrap()
                .serve
                .options()
                .secret_file
        };
        let in_data = std::path::Path::new("d").join("referee.secret");
        assert_eq!(secret(&["--data-dir", "d"]), Some(in_data.clone()));
        let pg = ["--storage", "postgres", "--database-url", "postgres://h/d"];
        let mut args = pg.to_vec();
        args.extend(["--data-dir", "d"]);
        assert_eq!(secret(&args), Some(in_data));
        args.extend(["--secret-file", "/run/s/key"]);
        assert_eq!(secret(&args), Some("/run/s/key".into()));
        assert_eq!(secret(&["--storage", "memory"]), None);
    }

    #[test]
    fn postgres_storage_needs_a_database_url() {
        let e = Cli::try_parse_from(["x", "--storage", "postgres"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        assert!(e.to_string().contains("--database-url"), "{e}");
        let cli = Cli::try_parse_from([
            "x",
            "--storage",
            "postgres",
            "--database-url",
            "postgres://referee:secret@db.internal:6432/games",
            "--database-pool-size",
            "12",
        ])
        .unwrap();
        match cli.serve.options().storage {
            StorageConfig::Postgres(o) => {
                assert_eq!(o.url, "postgres://referee:secret@db.internal:6432/games");
                assert_eq!(o.pool_size, 12);
                assert_eq!(o.target(), "db.internal:6432/games");
                let shown = format!("{o:?}");
                assert!(!shown.contains("secret"), "{shown}");
            }
            other => panic!("{other:?}"),
        }
        // A URL alone keeps SQLite: the storage is chosen by --storage only.
        let cli = Cli::try_parse_from(["x", "--database-url", "postgres://h/d"]).unwrap();
        assert!(matches!(
            cli.serve.options().storage,
            StorageConfig::Sqlite(_)
        ));
    }

    #[test]
    fn flags_override_defaults() {
        let cli = Cli::try_parse_from(["x", "--listen", "127.0.0.1:7000", "--max-sessions", "3"])
            .unwrap();
        assert_eq!(cli.serve.listen.port(), 7000);
        assert_eq!(cli.serve.options().limits.max_sessions, 3);
    }

    #[test]
    fn the_http_port_keeps_its_old_flag_name() {
        for flag in ["--http-listen", "--metrics-listen"] {
            let cli = Cli::try_parse_from(["x", flag, "127.0.0.1:7001"]).unwrap();
            assert_eq!(cli.serve.http_address().port(), 7001, "{flag}");
        }
        let cli = Cli::try_parse_from([
            "x",
            "--legacy-metrics-listen",
            "127.0.0.1:7002",
            "--http-listen",
            "127.0.0.1:7003",
        ])
        .unwrap();
        assert_eq!(cli.serve.http_address().port(), 7003);
    }
}
