//! The shared backend: a PostgreSQL database (`--storage postgres
//! --database-url postgres://…`), the store that several replicas of the
//! referee will share (docs/CLUSTER.md). Same rows and semantics as
//! [`super::sqlite`]: each write is atomic in a transaction, a move is
//! acknowledged only once its transaction has committed, and a move names
//! the ply it expects the game to be at, so a duplicate or out-of-order
//! write is refused by the database itself.
//!
//! The client is `tokio-postgres` with a `deadpool-postgres` pool, driven by
//! a runtime of its own on one thread (the [`Storage`] trait's reads are
//! blocking calls, made off the service's async workers). Writes go to one
//! of [`WRITERS`] writer tasks chosen by the game id, so the writes of one
//! game stay in order; each writer commits whatever is queued to it in one
//! transaction (group commit, as with SQLite). The connection is plain TCP
//! or a Unix socket without TLS (`NoTls`): run the database on the same
//! host or a private network (docs/STORAGE.md). Schema, migration and the
//! columns kept for leases: docs/STORAGE.md.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::thread;
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Transaction};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::{
    ArchiveQuery, ClockRow, Commit, EndRow, GameRow, MoveRow, SeatRow, ServerSecret, Storage,
    StorageError, StoredGame, Write, scores_of_text, scores_text, seats_of_text, seats_text,
};
use crate::games::{Seat, SeatSet, Setup};
use crate::service::telemetry;

/// The schema version this binary writes (table `referee_schema`).
pub const SCHEMA_VERSION: i64 = 6;
/// Writer tasks; a game's writes always go to the same one.
pub const WRITERS: usize = 4;
/// The connections the pool holds by default (the writers' and the reads').
pub const DEFAULT_POOL_SIZE: usize = 8;
/// Most writes in one transaction.
const MAX_BATCH: usize = 1024;
/// Most games one pruning transaction deletes.
const PRUNE_BATCH: i64 = 256;
/// How long a connection may take to open, or a call may wait for a free
/// one, before it fails (the database is then reported unreachable).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The key of the advisory lock under which the schema is created or
/// migrated, so that replicas starting together do it once.
const SCHEMA_LOCK: i64 = 0x7075_6e63_7472_6566; // "punctref"

/// The migrations, in order: `MIGRATIONS[v]` takes the schema from version
/// `v` to `v + 1` (version 0 is an empty database). Each runs in the
/// transaction that records the new version, so a failed one changes
/// nothing.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] =
    [SCHEMA_1, SCHEMA_2, SCHEMA_3, SCHEMA_4, SCHEMA_5, SCHEMA_6];

/// Version 6: the `forfeits` column, set for the games a tournament made
/// (an older version told them by their `tournament_id` label). The same
/// transaction seals the seeds of tournament documents ([`seal_documents`]).
const SCHEMA_6: &str = r#"
ALTER TABLE games ADD COLUMN forfeits BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE games SET forfeits = TRUE WHERE labels ? 'tournament_id';
"#;

/// Version 5: the server secret's key check value (docs/STORAGE.md, "The
/// server secret"). The same transaction seals every stored seed and the
/// seat tokens of tournament documents ([`secure`]).
const SCHEMA_5: &str = r#"
CREATE TABLE referee_secret (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    key_check TEXT NOT NULL
);
"#;

/// Version 4: a tournament has one owner replica at a time, like a game
/// (docs/TOURNAMENTS.md, "In a cluster"): `owner`, `epoch` and
/// `lease_expires_at` on its row, renewed by the owner's heartbeat, raised
/// by a takeover, and checked by every write of its document.
const SCHEMA_4: &str = r#"
ALTER TABLE tournaments ADD COLUMN owner TEXT;
ALTER TABLE tournaments ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tournaments ADD COLUMN lease_expires_at TIMESTAMPTZ;
CREATE INDEX tournaments_by_lease ON tournaments (lease_expires_at)
    WHERE status IN ('registering', 'running');
CREATE INDEX tournaments_by_owner ON tournaments (owner)
    WHERE status IN ('registering', 'running');
"#;

/// Version 3: the cluster (docs/CLUSTER.md). `nodes` lists the running
/// replicas and where the others forward to them; `turn_started_at` is the
/// database's time of the game's last event, from which a new owner can
/// charge the time the game spent without one.
const SCHEMA_3: &str = r#"
CREATE TABLE nodes (
    node_id      TEXT COLLATE "C" PRIMARY KEY,
    address      TEXT NOT NULL,
    boot_id      TEXT NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
ALTER TABLE games ADD COLUMN turn_started_at TIMESTAMPTZ;
CREATE INDEX games_by_lease ON games (lease_expires_at) WHERE status = 'in_progress';
"#;

/// Version 2: tournaments, each one JSON document replaced as a whole
/// (docs/TOURNAMENTS.md, "Durability"), as in SQLite's schema 3.
const SCHEMA_2: &str = r#"
CREATE TABLE tournaments (
    id            TEXT COLLATE "C" PRIMARY KEY,
    status        TEXT NOT NULL,
    document      TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
CREATE INDEX tournaments_by_creation ON tournaments (created_at_ms, id);
"#;

/// Version 1. Times are Unix milliseconds, seats are numbered from 1 (seat
/// lists are comma-separated numbers), hashes and seeds are raw bytes. Ids
/// sort bytewise (`COLLATE "C"`), as SQLite and the memory backend sort
/// them. `owner`, `epoch` and `lease_expires_at` are the lease of the game
/// in a cluster (docs/CLUSTER.md): one replica writes them today (no owner,
/// epoch 0); every write already names its game and the ply it expects.
const SCHEMA_1: &str = r#"
CREATE TABLE games (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    seq                BIGINT GENERATED ALWAYS AS IDENTITY,
    game               TEXT NOT NULL,
    variant            TEXT NOT NULL,
    options            TEXT NOT NULL,
    clock_mode         TEXT NOT NULL CHECK (clock_mode IN ('none', 'fischer', 'per_move')),
    clock_initial_ms   BIGINT,
    clock_increment_ms BIGINT,
    clock_per_move_ms  BIGINT,
    first_move_ms      BIGINT,
    labels             JSONB NOT NULL,
    seed               BYTEA,
    seed_supplied      BOOLEAN NOT NULL DEFAULT FALSE,
    status             TEXT NOT NULL CHECK (status IN ('in_progress', 'finished', 'expired')),
    winners            TEXT,
    scores             TEXT,
    reason             TEXT,
    ply                BIGINT NOT NULL CHECK (ply >= 0),
    draw_offers        TEXT,
    created_at_ms      BIGINT NOT NULL,
    updated_at_ms      BIGINT NOT NULL,
    finished_at_ms     BIGINT,
    owner              TEXT,
    epoch              BIGINT NOT NULL DEFAULT 0,
    lease_expires_at   TIMESTAMPTZ
);
CREATE INDEX games_in_progress ON games (created_at_ms, seq) WHERE status = 'in_progress';
CREATE INDEX games_by_creation ON games (status, created_at_ms, id);
CREATE INDEX games_by_end ON games (status, finished_at_ms);
CREATE INDEX games_by_owner ON games (owner) WHERE status = 'in_progress';
CREATE TABLE seats (
    game_id      TEXT COLLATE "C" NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    seat         BIGINT NOT NULL CHECK (seat >= 1),
    name         TEXT NOT NULL,
    token_sha256 BYTEA NOT NULL CHECK (length(token_sha256) = 32),
    PRIMARY KEY (game_id, seat)
);
CREATE TABLE moves (
    game_id      TEXT COLLATE "C" NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    ply          BIGINT NOT NULL CHECK (ply >= 1),
    seat         BIGINT NOT NULL CHECK (seat >= 1),
    notation     TEXT NOT NULL,
    request_id   TEXT,
    clock_ms     BIGINT NOT NULL,
    played_at_ms BIGINT NOT NULL,
    PRIMARY KEY (game_id, ply)
);
CREATE INDEX moves_by_request ON moves (game_id, request_id) WHERE request_id IS NOT NULL;
"#;

/// How to reach the database.
#[derive(Clone)]
pub struct PostgresOptions {
    /// A libpq-style URL or key/value string (`postgres://user:pw@host:5432/db`,
    /// `host=/run/postgresql dbname=referee`).
    pub url: String,
    /// Connections the pool holds at most (at least [`WRITERS`] + 1).
    pub pool_size: usize,
    /// This replica's node id: the owner written on the leases of its games
    /// (docs/CLUSTER.md).
    pub node_id: String,
    /// How long a lease lasts without a renewal.
    pub lease: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            url: String::new(),
            pool_size: DEFAULT_POOL_SIZE,
            node_id: default_node_id(),
            lease: Duration::from_secs(10),
        }
    }
}

/// The node id of a replica given none: the host name (unique per pod or
/// container, and the same across a restart of the process, which then
/// takes its own games back at once).
pub fn default_node_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "referee".into())
}

impl std::fmt::Debug for PostgresOptions {
    /// Never shows the password: only [`PostgresOptions::target`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("target", &self.target())
            .field("pool_size", &self.pool_size)
            .field("node_id", &self.node_id)
            .field("lease", &self.lease)
            .finish()
    }
}

impl PostgresOptions {
    /// The URL parsed (a readable error names what is wrong, never the
    /// password).
    pub fn config(&self) -> Result<tokio_postgres::Config, StorageError> {
        let mut config: tokio_postgres::Config = self.url.parse().map_err(|e| {
            StorageError::Config(format!(
                "the database URL is not a PostgreSQL connection string ({e}); \
                 write e.g. postgres://user:password@host:5432/database"
            ))
        })?;
        if config.get_hosts().is_empty() {
            return Err(StorageError::Config(
                "the database URL names no host (e.g. postgres://user@127.0.0.1/referee)".into(),
            ));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("punct-referee");
        Ok(config)
    }

    /// Where the database is, for logs: hosts, ports and database name, no
    /// user or password.
    pub fn target(&self) -> String {
        let Ok(config) = self.url.parse::<tokio_postgres::Config>() else {
            return "(unparsable URL)".into();
        };
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let host = match h {
                    tokio_postgres::config::Host::Tcp(name) => name.clone(),
                    tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
                };
                match config.get_ports().get(i).or(config.get_ports().first()) {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                }
            })
            .collect();
        format!(
            "{}/{}",
            hosts.join(","),
            config.get_dbname().unwrap_or("(default)")
        )
    }
}

/// This replica's identity in the database and the leases it holds: the
/// epoch of each game it owns, which every write of that game names
/// (fencing, docs/CLUSTER.md).
#[derive(Debug)]
pub(crate) struct Node {
    id: String,
    /// Random per process: tells this process from an earlier one (or a
    /// misconfigured twin) with the same node id.
    boot: String,
    lease: Duration,
    /// Game id → the epoch of the lease held on it.
    leases: Mutex<HashMap<String, i64>>,
    /// Until when the leases are surely still ours by this process's clock:
    /// the start of the last successful renewal plus the lease. A replica
    /// that was paused past it stops answering for its games until a renewal
    /// says which it still holds.
    valid_until: Mutex<Option<Instant>>,
    /// Games a commit of which may or may not have landed (its answer was
    /// lost): their copies are to be read again from the database before
    /// they are served ([`PostgresStorage::take_uncertain`]).
    uncertain: Mutex<std::collections::HashSet<String>>,
    /// What seeds are sealed with (docs/STORAGE.md, "The server secret").
    secret: ServerSecret,
}

impl Node {
    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    fn epoch(&self, game_id: &str) -> Option<i64> {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(game_id)
            .copied()
    }

    fn hold(&self, game_id: &str, epoch: i64) {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(game_id.to_string(), epoch);
    }

    fn forget(&self, game_id: &str) {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(game_id);
    }

    /// A commit of `game_id`'s write may or may not have landed: the lease
    /// is forgotten (so the game is not served from its copy without asking
    /// the database) and the game is listed to be read again.
    fn unsure(&self, game_id: &str) {
        self.forget(game_id);
        self.uncertain
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(game_id.to_string());
    }
}

/// Who owns a game, as the database says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The owner's node id (`None`: nobody yet, e.g. a game stored by a
    /// referee before the cluster's schema).
    pub owner: Option<String>,
    /// Where the owner's gRPC port is, if it is registered.
    pub address: Option<String>,
    /// Whether the owner's lease runs (by the database's clock).
    pub live: bool,
    /// Whether the owner replica is registered and heartbeating (its
    /// registration has not expired), whatever its lease on this game.
    pub owner_alive: bool,
    /// Whether the game is in progress (else finished or expired: no lease
    /// matters, any replica reads it from the store).
    pub in_progress: bool,
}

/// A game taken over: its stored state and how long its turn has run by the
/// database's clock (what `--takeover-clock charge` charges).
#[derive(Debug)]
pub struct TakenOver {
    /// The game, its moves and draw offers.
    pub game: StoredGame,
    /// The time since the game's last stored event.
    pub since_last_event: Duration,
    /// The epoch of the new lease.
    pub epoch: i64,
}

type Reply = oneshot::Sender<Result<(), StorageError>>;
/// A writer task's queue.
type WriterQueue = mpsc::UnboundedSender<(Box<Leased>, Reply)>;

/// A write and the lease epoch it was decided under (`None`: whatever
/// lease this node holds now).
#[derive(Debug)]
struct Leased {
    write: Write,
    epoch: Option<i64>,
}

/// The PostgreSQL backend (see the module docs).
#[derive(Debug)]
pub struct PostgresStorage {
    /// One queue per writer task (`None` once closing).
    writers: Mutex<Option<Vec<WriterQueue>>>,
    /// The storage runtime, where every database call runs.
    runtime: tokio::runtime::Handle,
    pool: Pool,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
    target: String,
    /// Transactions committed so far.
    commits: Arc<AtomicU64>,
    node: Arc<Node>,
    /// How to open the listening connection ([`PostgresStorage::notices`]).
    config: tokio_postgres::Config,
}

/// The channel on which every committed change of a game is announced
/// (payload: the game id and the database's time of the change, Unix
/// milliseconds).
pub const NOTIFY_CHANNEL: &str = "referee_games";

/// What the database says about games (see [`PostgresStorage::notices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Game `game_id` changed (a move, a draw offer, an ending committed),
    /// `lag` after the change by the database's clock.
    Changed {
        /// The game.
        game_id: String,
        /// How long the notification took to arrive (clocks permitting).
        lag: Option<Duration>,
    },
    /// The listening connection was (re)opened: notifications sent while it
    /// was down are lost, so everything followed is to be read again.
    Listening,
}

impl PostgresStorage {
    /// Connects, creates or migrates the schema (once, under an advisory
    /// lock, whoever else starts at the same time) and starts the writers.
    /// Fails with a readable message when the URL is wrong, the database
    /// cannot be reached or its schema is newer than this binary's.
    ///
    /// Seeds are sealed with the process's [`ServerSecret::ephemeral`]:
    /// for tests and tools; a server gives its secret
    /// ([`PostgresStorage::open_with_secret`]).
    pub fn open(options: &PostgresOptions) -> Result<PostgresStorage, StorageError> {
        PostgresStorage::open_with_secret(options, ServerSecret::ephemeral().clone())
    }

    /// [`PostgresStorage::open`] with the server secret `secret`: a
    /// database written with another secret is refused, with a message
    /// that says so; one written before there was a secret is sealed with
    /// it (in the migration's transaction).
    pub fn open_with_secret(
        options: &PostgresOptions,
        secret: ServerSecret,
    ) -> Result<PostgresStorage, StorageError> {
        let mut config = options.config()?;
        let listen_config = config.clone();
        // A transaction of this replica left open (the process paused or
        // stuck between two statements) is ended by the server, releasing
        // its row locks, well before its lease runs out: a takeover never
        // waits on a paused owner (docs/CLUSTER.md, "Takeover").
        let idle = format!(
            "-c idle_in_transaction_session_timeout={}",
            idle_timeout(options.lease).as_millis()
        );
        let joined = match config.get_options() {
            Some(given) if !given.trim().is_empty() => format!("{given} {idle}"),
            _ => idle,
        };
        config.options(joined);
        let target = options.target();
        let pool_size = options.pool_size.max(WRITERS + 1);
        let commits = Arc::new(AtomicU64::new(0));
        let counter = commits.clone();
        let node = Arc::new(Node {
            id: if options.node_id.is_empty() {
                default_node_id()
            } else {
                options.node_id.clone()
            },
            boot: crate::service::sessions::Token::random().to_string(),
            lease: options.lease,
            leases: Mutex::new(HashMap::new()),
            valid_until: Mutex::new(None),
            uncertain: Mutex::new(std::collections::HashSet::new()),
            secret,
        });
        let writer_node = node.clone();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let where_ = target.clone();
        let thread = thread::Builder::new()
            .name("storage-postgres".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(StorageError::Unavailable(format!(
                            "cannot start the storage runtime: {e}"
                        ))));
                        return;
                    }
                };
                let pool = match runtime.block_on(connect(
                    config,
                    pool_size,
                    &where_,
                    &writer_node.secret,
                )) {
                    Ok(pool) => pool,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let (alive, mut all_stopped) = mpsc::channel::<()>(1);
                let writers: Vec<_> = (0..WRITERS)
                    .map(|_| {
                        let (tx, rx) = mpsc::unbounded_channel();
                        runtime.spawn(writer_loop(
                            pool.clone(),
                            rx,
                            alive.clone(),
                            counter.clone(),
                            where_.clone(),
                            writer_node.clone(),
                        ));
                        tx
                    })
                    .collect();
                drop(alive);
                let _ = ready_tx.send(Ok((runtime.handle().clone(), pool.clone(), writers)));
                // Until every writer has drained its queue and stopped;
                // then the leases are given up, so other replicas take the
                // games over at once instead of after the lease.
                runtime.block_on(async move {
                    let _ = all_stopped.recv().await;
                    let release = release_all(&pool, &where_, &writer_node);
                    match tokio::time::timeout(CONNECT_TIMEOUT, release).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::warn!(error = %e, "giving up the leases failed"),
                        Err(_) => tracing::warn!("giving up the leases timed out"),
                    }
                });
            })
            .map_err(|e| {
                StorageError::Unavailable(format!("cannot start the storage thread: {e}"))
            })?;
        let (runtime, pool, writers) = match ready_rx.recv() {
            Ok(Ok(parts)) => parts,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(StorageError::Unavailable(
                    "the storage thread stopped".into(),
                ));
            }
        };
        Ok(PostgresStorage {
            writers: Mutex::new(Some(writers)),
            runtime,
            pool,
            thread: Mutex::new(Some(thread)),
            target,
            commits,
            node,
            config: listen_config,
        })
    }

    /// Notifications of games changed by any replica, on a connection of
    /// their own, reopened whenever it breaks (each reopening says
    /// [`Notice::Listening`]). A notification is only a wake-up: the reader
    /// reads the game from the tables, so a lost one costs only time.
    pub fn notices(&self) -> mpsc::UnboundedReceiver<Notice> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.runtime
            .spawn(listen(self.config.clone(), self.target.clone(), tx));
        rx
    }

    /// The game `id` as stored (see [`Storage::load`]), for async callers.
    pub async fn load_game(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let mut games =
                read_games(&client, &node.secret, "WHERE id = $1", &[&id], &target).await?;
            Ok(games.pop())
        })
        .await
    }

    /// This replica's node id.
    pub fn node_id(&self) -> &str {
        &self.node.id
    }

    /// How long a lease lasts without a renewal.
    pub fn lease(&self) -> Duration {
        self.node.lease
    }

    /// Whether this replica holds the lease of game `id` (as far as it
    /// knows: the database decides at the next write).
    pub fn holds(&self, id: &str) -> bool {
        self.node.epoch(id).is_some()
    }

    /// Whether the last renewal of the leases is recent enough that they
    /// surely still run (false before the first one, and after a pause
    /// longer than the lease).
    pub fn leases_valid(&self) -> bool {
        self.node
            .valid_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }

    /// Forgets the lease of game `id` (its writes are refused from now on).
    pub fn forget(&self, id: &str) {
        self.node.forget(id);
    }

    /// The games a commit of which may or may not have landed (the
    /// connection broke during `COMMIT`), listed once each: their copies
    /// are behind or ahead of the database and must be read again before
    /// they are served. Their leases are already forgotten.
    pub fn take_uncertain(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .node
                .uncertain
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
        .into_iter()
        .collect()
    }

    /// Lists game `id` again to be read back ([`PostgresStorage::take_uncertain`]).
    pub fn still_uncertain(&self, id: &str) {
        self.node.unsure(id);
    }

    /// Runs `job` with the pool on the storage runtime and awaits it (for
    /// async callers).
    async fn run<T, F>(
        &self,
        job: impl FnOnce(Pool, String, Arc<Node>) -> F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let future = job(self.pool.clone(), self.target.clone(), self.node.clone());
        self.runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.await
            .map_err(|_| StorageError::Unavailable("the storage runtime has stopped".into()))?
    }

    /// Registers this replica (or renews its registration) with the address
    /// the others forward to: that one row is the lease of every game this
    /// replica owns (docs/CLUSTER.md, "Leases"). Then reads, without
    /// locking anything, which games the database says it owns, and returns
    /// those it held whose lease another replica took meanwhile: they must
    /// be dropped from memory. A deadlock or serialization failure is
    /// retried; a failure (the database unreachable) changes nothing, and
    /// the leases run out if it lasts.
    pub async fn heartbeat(&self, address: &str) -> Result<Vec<String>, StorageError> {
        let address = address.to_string();
        self.run(|pool, target, node| async move {
            let mut attempt = 0;
            loop {
                attempt += 1;
                match beat(&pool, &target, &node, &address).await {
                    Err(e) if e.conflict && attempt < CONFLICT_RETRIES => {
                        tracing::debug!(error = %e.error, attempt, "heartbeat conflict; retried");
                    }
                    other => return other.map_err(|e| e.error),
                }
            }
        })
        .await
    }

    /// Who owns game `id` (`None`: no such game stored).
    pub async fn ownership(&self, id: &str) -> Result<Option<Ownership>, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    "SELECT g.owner, n.address,
                        COALESCE(g.lease_expires_at > now(), FALSE)
                            OR COALESCE(n.expires_at > now(), FALSE),
                        g.status = 'in_progress',
                        COALESCE(n.expires_at > now(), FALSE)
                     FROM games g LEFT JOIN nodes n ON n.node_id = g.owner
                     WHERE g.id = $1",
                    &[&id],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.map(|r| Ownership {
                owner: r.get(0),
                address: r.get(1),
                live: r.get(2),
                in_progress: r.get(3),
                owner_alive: r.get(4),
            }))
        })
        .await
    }

    /// Takes game `id` over if it is in progress and its lease has expired
    /// (the lease written with it, and its owner's registration), or it has
    /// no owner, or this node owned it before a restart: one replica wins,
    /// raising the epoch, which fences the previous owner. `None`: the lease
    /// runs (or the game is not in progress), or the game's row stayed
    /// locked for [`TAKEOVER_LOCK_WAIT`] (a transaction of a paused owner:
    /// the server ends it, see [`idle_timeout`]; tried again later).
    pub async fn take_over(&self, id: &str) -> Result<Option<TakenOver>, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, node| async move {
            let mut client = get(&pool, &target).await?;
            let err = |e| pg_error(&target, e);
            let tx = client.transaction().await.map_err(err)?;
            tx.batch_execute(&format!(
                "SET LOCAL lock_timeout = {}",
                TAKEOVER_LOCK_WAIT.as_millis()
            ))
            .await
            .map_err(err)?;
            // The owner's registration is read locked (FOR SHARE): a
            // heartbeat renewing it meanwhile waits for this takeover, and
            // then sees the game gone; one that committed first makes this
            // takeover find the lease running.
            let row = tx
                .query_opt(
                    "WITH owner_node AS (
                        SELECT n.expires_at FROM games g JOIN nodes n ON n.node_id = g.owner
                        WHERE g.id = $1 FOR SHARE OF n
                     )
                     UPDATE games SET owner = $2, epoch = epoch + 1,
                        lease_expires_at = now() + $3::float8 * interval '1 millisecond'
                     WHERE id = $1 AND status = 'in_progress'
                       AND (owner IS NULL OR owner = $2
                            OR ((lease_expires_at IS NULL OR lease_expires_at < now())
                                AND NOT EXISTS (SELECT 1 FROM owner_node
                                                WHERE expires_at > now())))
                     RETURNING epoch,
                        (EXTRACT(EPOCH FROM (now() - COALESCE(turn_started_at, now())))
                            * 1000)::bigint",
                    &[&id, &node.id, &(node.lease_ms() as f64)],
                )
                .await;
            let row = match row {
                Ok(row) => row,
                Err(e)
                    if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) =>
                {
                    tracing::debug!(game_id = %id, "takeover: the game's row is locked; later");
                    return Ok(None);
                }
                Err(e) => return Err(err(e)),
            };
            let Some(row) = row else {
                tx.commit().await.map_err(err)?;
                return Ok(None);
            };
            let epoch: i64 = row.get(0);
            let since: i64 = row.get(1);
            tx.commit().await.map_err(err)?;
            node.hold(&id, epoch);
            node.uncertain
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            let mut games =
                read_games(&client, &node.secret, "WHERE id = $1", &[&id], &target).await?;
            let Some(game) = games.pop() else {
                node.forget(&id);
                return Ok(None);
            };
            Ok(Some(TakenOver {
                game,
                since_last_event: Duration::from_millis(since.max(0) as u64),
                epoch,
            }))
        })
        .await
    }

    /// Renews this node's lease of epoch `epoch` on game `id` alone (its
    /// lease ran out while the database was unreachable, and nobody took
    /// it): true when it is still that lease, which then runs again.
    pub async fn renew(&self, id: &str, epoch: i64) -> Result<bool, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let n = client
                .execute(
                    "UPDATE games SET lease_expires_at = now() + $4::float8 * interval '1 millisecond'
                     WHERE id = $1 AND owner = $2 AND epoch = $3 AND status = 'in_progress'",
                    &[&id, &node.id, &epoch, &(node.lease_ms() as f64)],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(n == 1)
        })
        .await
    }

    /// Up to `limit` games in progress whose lease has expired and whose
    /// owner is no longer registered (it died or was cut off), longest
    /// expired first. A live owner's lapsed lease (the database was away)
    /// is its own to renew.
    pub async fn orphans(&self, limit: i64) -> Result<Vec<String>, StorageError> {
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    "SELECT g.id FROM games g LEFT JOIN nodes n ON n.node_id = g.owner
                     WHERE g.status = 'in_progress'
                        AND (g.owner IS NULL OR g.lease_expires_at IS NULL
                             OR g.lease_expires_at < now())
                        AND (n.expires_at IS NULL OR n.expires_at < now())
                     ORDER BY g.lease_expires_at NULLS FIRST LIMIT $1",
                    &[&limit],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    /// Games in progress by owner node id (what the cluster's metrics and
    /// tests look at).
    pub async fn owners(&self) -> Result<Vec<(String, String)>, StorageError> {
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    "SELECT id, COALESCE(owner, '') FROM games WHERE status = 'in_progress'",
                    &[],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
        .await
    }

    /// Who owns tournament `id` (`None`: no such tournament stored);
    /// `in_progress` means open (registering or running): an ended one has
    /// no owner that matters.
    pub async fn tournament_ownership(&self, id: &str) -> Result<Option<Ownership>, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    &format!(
                        "SELECT t.owner, n.address,
                            COALESCE(t.lease_expires_at > now(), FALSE),
                            t.{OPEN_TOURNAMENT},
                            COALESCE(n.expires_at > now(), FALSE)
                         FROM tournaments t LEFT JOIN nodes n ON n.node_id = t.owner
                         WHERE t.id = $1"
                    ),
                    &[&id],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.map(|r| Ownership {
                owner: r.get(0),
                address: r.get(1),
                live: r.get(2),
                in_progress: r.get(3),
                owner_alive: r.get(4),
            }))
        })
        .await
    }

    /// Renews this node's leases of `held` (the id and epoch of each open
    /// tournament this replica holds), and says which of them another
    /// replica took meanwhile: those are to be dropped. One ended by this
    /// node is not lost. A failure changes nothing.
    pub async fn tournament_heartbeat(
        &self,
        held: Vec<(String, i64)>,
    ) -> Result<Vec<String>, StorageError> {
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let err = |e| pg_error(&target, e);
            if held.is_empty() {
                return Ok(Vec::new());
            }
            // Only the leases held here, at their epochs: a tournament this
            // node owns but does not hold (unreadable) is left to expire.
            let ids: Vec<&str> = held.iter().map(|(id, _)| id.as_str()).collect();
            let epochs: Vec<i64> = held.iter().map(|(_, e)| *e).collect();
            let renewed = client
                .query(
                    &format!(
                        "UPDATE tournaments
                         SET lease_expires_at = now() + $2::float8 * interval '1 millisecond'
                         WHERE owner = $1 AND {OPEN_TOURNAMENT}
                           AND (id, epoch) IN (SELECT * FROM unnest($3::text[], $4::bigint[]))
                         RETURNING id, epoch"
                    ),
                    &[&node.id, &(node.lease_ms() as f64), &ids, &epochs],
                )
                .await
                .map_err(err)?;
            let renewed: HashMap<String, i64> =
                renewed.iter().map(|r| (r.get(0), r.get(1))).collect();
            let gone: Vec<String> = held
                .iter()
                .filter(|(id, epoch)| renewed.get(id) != Some(epoch))
                .map(|(id, _)| id.clone())
                .collect();
            if gone.is_empty() {
                return Ok(Vec::new());
            }
            // Not renewed: ended (by this node, same lease) or taken.
            let rows = client
                .query(
                    "SELECT id, COALESCE(owner, ''), epoch FROM tournaments WHERE id = ANY($1)",
                    &[&gone],
                )
                .await
                .map_err(err)?;
            let epochs: HashMap<&str, i64> = held.iter().map(|(id, e)| (id.as_str(), *e)).collect();
            Ok(rows
                .iter()
                .filter(|r| {
                    let id: &str = r.get(0);
                    r.get::<_, &str>(1) != node.id
                        || Some(r.get::<_, i64>(2)) != epochs.get(id).copied()
                })
                .map(|r| r.get::<_, String>(0))
                .collect())
        })
        .await
    }

    /// Takes tournament `id` over if it is open and its lease has expired
    /// (or it has no owner, or this node owned it before a restart): one
    /// replica wins, raising the epoch, which fences the previous owner's
    /// writes. Its new epoch and stored row; `None`: the lease runs, or it
    /// is not open.
    pub async fn take_over_tournament(
        &self,
        id: &str,
    ) -> Result<Option<(i64, super::TournamentRow)>, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    &format!(
                        "UPDATE tournaments SET owner = $2, epoch = epoch + 1,
                            lease_expires_at = now() + $3::float8 * interval '1 millisecond'
                         WHERE id = $1 AND {OPEN_TOURNAMENT}
                           AND (owner IS NULL OR owner = $2 OR lease_expires_at IS NULL
                                OR lease_expires_at < now())
                         RETURNING epoch, id, status, document, created_at_ms"
                    ),
                    &[&id, &node.id, &(node.lease_ms() as f64)],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.map(|r| (r.get::<_, i64>("epoch"), tournament_row(&r))))
        })
        .await
    }

    /// Renews this node's lease of epoch `epoch` on tournament `id` alone
    /// (it ran out while the database was unreachable, and nobody took it):
    /// true when it is still that lease, which then runs again.
    pub async fn renew_tournament(&self, id: &str, epoch: i64) -> Result<bool, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let n = client
                .execute(
                    &format!(
                        "UPDATE tournaments
                         SET lease_expires_at = now() + $4::float8 * interval '1 millisecond'
                         WHERE id = $1 AND owner = $2 AND epoch = $3 AND {OPEN_TOURNAMENT}"
                    ),
                    &[&id, &node.id, &epoch, &(node.lease_ms() as f64)],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(n == 1)
        })
        .await
    }

    /// Up to `limit` open tournaments whose lease has expired or that have
    /// no owner, longest expired first.
    pub async fn tournament_orphans(&self, limit: i64) -> Result<Vec<String>, StorageError> {
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT id FROM tournaments WHERE {OPEN_TOURNAMENT}
                            AND (owner IS NULL OR lease_expires_at IS NULL
                                 OR lease_expires_at < now())
                         ORDER BY lease_expires_at NULLS FIRST LIMIT $1"
                    ),
                    &[&limit],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    /// The open tournaments this node owned (before a restart) or that
    /// have no owner, each taken with a new epoch, oldest first: what a
    /// replica resumes at start. The others are their owners' until their
    /// leases expire.
    pub async fn recover_tournaments(
        &self,
    ) -> Result<Vec<(i64, super::TournamentRow)>, StorageError> {
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    &format!(
                        "UPDATE tournaments SET owner = $1, epoch = epoch + 1,
                            lease_expires_at = now() + $2::float8 * interval '1 millisecond'
                         WHERE {OPEN_TOURNAMENT} AND (owner IS NULL OR owner = $1)
                         RETURNING epoch, id, status, document, created_at_ms"
                    ),
                    &[&node.id, &(node.lease_ms() as f64)],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            let mut taken: Vec<(i64, super::TournamentRow)> = rows
                .iter()
                .map(|r| (r.get::<_, i64>("epoch"), tournament_row(r)))
                .collect();
            taken.sort_by(|a, b| (a.1.created_at_ms, &a.1.id).cmp(&(b.1.created_at_ms, &b.1.id)));
            Ok(taken)
        })
        .await
    }

    /// The id of a stored tournament whose document contains `fragment` (a
    /// JSON value, by `jsonb` containment: e.g. an entrant with a given key
    /// hash), if any.
    pub async fn tournament_containing(
        &self,
        fragment: &str,
    ) -> Result<Option<String>, StorageError> {
        let fragment = fragment.to_string();
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    "SELECT id FROM tournaments WHERE document::jsonb @> $1::text::jsonb
                     ORDER BY id LIMIT 1",
                    &[&fragment],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.map(|r| r.get(0)))
        })
        .await
    }

    /// Where the database is (no user or password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Transactions committed so far (fewer than writes when writes are
    /// grouped).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `job` with a connection on the storage runtime and waits for it
    /// (blocking).
    fn call<T, F>(&self, job: impl FnOnce(Pool, String) -> F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        let (tx, rx) = std_mpsc::channel();
        let future = job(self.pool.clone(), self.target.clone());
        self.runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv()
            .map_err(|_| StorageError::Unavailable("the storage runtime has stopped".into()))?
    }
}

impl Drop for PostgresStorage {
    /// Lets the writers commit what is queued, then stops the runtime.
    fn drop(&mut self) {
        self.writers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = handle.join();
        }
    }
}

impl Storage for PostgresStorage {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn durable(&self) -> bool {
        true
    }

    fn secret(&self) -> &ServerSecret {
        &self.node.secret
    }

    fn write(&self, write: Write) -> Commit {
        self.write_leased(write, None)
    }

    fn lease_of(&self, id: &str) -> Option<i64> {
        self.node.epoch(id)
    }

    fn write_leased(&self, write: Write, epoch: Option<i64>) -> Commit {
        let (tx, rx) = oneshot::channel();
        let writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(writers) = writers.as_ref() else {
            return Commit::ready(Err(StorageError::Unavailable(
                "the storage has closed".into(),
            )));
        };
        let mut hasher = DefaultHasher::new();
        write_game(&write).hash(&mut hasher);
        let writer = &writers[(hasher.finish() % writers.len() as u64) as usize];
        if writer
            .send((Box::new(Leased { write, epoch }), tx))
            .is_err()
        {
            return Commit::ready(Err(StorageError::Unavailable(
                "the storage writer has stopped".into(),
            )));
        }
        Commit::waiting(rx)
    }

    /// The games in progress this node owned (before a restart) or that
    /// have no owner, each taken with a new epoch; the games of other
    /// replicas are theirs until their lease expires (docs/CLUSTER.md).
    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        let node = self.node.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let taken = client
                .query(
                    "UPDATE games SET owner = $1, epoch = epoch + 1,
                        lease_expires_at = now() + $2::float8 * interval '1 millisecond'
                     WHERE status = 'in_progress' AND (owner IS NULL OR owner = $1)
                     RETURNING id, epoch",
                    &[&node.id, &(node.lease_ms() as f64)],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            let ids: Vec<String> = taken.iter().map(|r| r.get(0)).collect();
            for r in &taken {
                node.hold(r.get(0), r.get(1));
            }
            read_games(
                &client,
                &node.secret,
                "WHERE id = ANY($1) ORDER BY created_at_ms, seq",
                &[&ids],
                &target,
            )
            .await
        })
    }

    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let id = id.to_string();
        let secret = self.node.secret.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let mut games = read_games(&client, &secret, "WHERE id = $1", &[&id], &target).await?;
            Ok(games.pop())
        })
    }

    fn list_finished(&self, query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError> {
        let (after_ms, after_id) = query.after.as_ref().map_or((i64::MIN, String::new()), |k| {
            (k.created_at_ms, k.id.clone())
        });
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        // `@>`: the game's labels hold every asked-for pair.
        let labels = serde_json::to_string(&query.labels)
            .map_err(|e| StorageError::Unavailable(format!("labels: {e}")))?;
        let secret = self.node.secret.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            read_games(
                &client,
                &secret,
                "WHERE status = 'finished' AND (created_at_ms, id) > ($1, $2)
                    AND labels @> $4::text::jsonb
                 ORDER BY created_at_ms, id LIMIT $3",
                &[&after_ms, &after_id, &limit, &labels],
                &target,
            )
            .await
        })
    }

    fn tournaments(&self) -> Result<Vec<super::TournamentRow>, StorageError> {
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    "SELECT id, status, document, created_at_ms FROM tournaments
                     ORDER BY created_at_ms, id",
                    &[],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows
                .iter()
                .map(|r| super::TournamentRow {
                    id: r.get(0),
                    status: r.get(1),
                    document: r.get(2),
                    created_at_ms: r.get(3),
                })
                .collect())
        })
    }

    fn shared(&self) -> bool {
        true
    }

    fn list_games(
        &self,
        query: &ArchiveQuery,
        finished: Option<bool>,
    ) -> Result<Vec<StoredGame>, StorageError> {
        let (after_ms, after_id) = query.after.as_ref().map_or((i64::MIN, String::new()), |k| {
            (k.created_at_ms, k.id.clone())
        });
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let labels = serde_json::to_string(&query.labels)
            .map_err(|e| StorageError::Unavailable(format!("labels: {e}")))?;
        let statuses: Vec<&'static str> = match finished {
            Some(true) => vec!["finished"],
            Some(false) => vec!["in_progress"],
            None => vec!["in_progress", "finished"],
        };
        let secret = self.node.secret.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            read_games(
                &client,
                &secret,
                "WHERE status = ANY($5) AND (created_at_ms, id) > ($1, $2)
                    AND labels @> $4::text::jsonb
                 ORDER BY created_at_ms, id LIMIT $3",
                &[&after_ms, &after_id, &limit, &labels, &statuses],
                &target,
            )
            .await
        })
    }

    fn tournament(&self, id: &str) -> Result<Option<super::TournamentRow>, StorageError> {
        let id = id.to_string();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    "SELECT id, status, document, created_at_ms FROM tournaments WHERE id = $1",
                    &[&id],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.as_ref().map(tournament_row))
        })
    }

    fn tournament_page(
        &self,
        after: &str,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<super::TournamentRow>, StorageError> {
        let after = after.to_string();
        let status = status.map(str::to_string);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    "SELECT id, status, document, created_at_ms FROM tournaments
                     WHERE id > $1 AND ($2::text IS NULL OR status = $2)
                     ORDER BY id LIMIT $3",
                    &[&after, &status, &limit],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows.iter().map(tournament_row).collect())
        })
    }

    fn prune(&self, ended_before_ms: i64) -> Result<u64, StorageError> {
        self.call(|pool, target| async move {
            let mut total = 0;
            loop {
                let mut client = get(&pool, &target).await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(|e| pg_error(&target, e))?;
                // Seats and moves go with their game (ON DELETE CASCADE).
                let n = tx
                    .execute(
                        "DELETE FROM games WHERE id IN (
                            SELECT id FROM games
                            WHERE status IN ('finished', 'expired') AND finished_at_ms < $1
                            LIMIT $2 FOR UPDATE SKIP LOCKED)",
                        &[&ended_before_ms, &PRUNE_BATCH],
                    )
                    .await
                    .map_err(|e| pg_error(&target, e))?;
                tx.commit().await.map_err(|e| pg_error(&target, e))?;
                total += n;
                if n < PRUNE_BATCH as u64 {
                    return Ok(total);
                }
            }
        })
    }
}

/// The game a write is about (its writer is chosen by it).
fn write_game(write: &Write) -> &str {
    match write {
        Write::Create(game, _, _) => &game.id,
        Write::Move(mv, _) => &mv.game_id,
        Write::DrawOffer { game_id, .. } => game_id,
        Write::End(end) => &end.game_id,
        Write::Tournament(row) => &row.id,
    }
}

/// A readable error: the server's message and SQLSTATE when it sent one,
/// else what went wrong with the connection.
fn pg_error(target: &str, e: tokio_postgres::Error) -> StorageError {
    if let Some(db) = e.as_db_error() {
        let detail = db.detail().map(|d| format!(" ({d})")).unwrap_or_default();
        return StorageError::Unavailable(format!(
            "postgres {target}: {}{detail} [SQLSTATE {}]",
            db.message(),
            db.code().code()
        ));
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    StorageError::Unavailable(format!("postgres {target}: {text}"))
}

/// Whether `e` (made by [`pg_error`]) is a deadlock (40P01) or
/// serialization failure (40001): see [`is_conflict`].
fn is_conflict_text(e: &StorageError) -> bool {
    let m = e.message();
    m.ends_with("[SQLSTATE 40P01]") || m.ends_with("[SQLSTATE 40001]")
}

/// A connection from the pool.
async fn get(pool: &Pool, target: &str) -> Result<deadpool_postgres::Object, StorageError> {
    pool.get().await.map_err(|e| {
        let text = match e {
            deadpool_postgres::PoolError::Backend(e) => pg_error(target, e).message().to_string(),
            deadpool_postgres::PoolError::Timeout(_) => {
                format!("postgres {target}: no connection within {CONNECT_TIMEOUT:?}")
            }
            other => format!("postgres {target}: {other}"),
        };
        StorageError::Unavailable(format!("{text} (is the database reachable?)"))
    })
}

/// The pool, once the schema is at [`SCHEMA_VERSION`].
async fn connect(
    config: tokio_postgres::Config,
    pool_size: usize,
    target: &str,
    secret: &ServerSecret,
) -> Result<Pool, StorageError> {
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            // An empty query on each connection taken from the pool: one
            // round trip that finds a connection the server closed (a
            // restart, a terminated backend) and replaces it, so a write
            // after the database came back does not fail on a dead socket.
            recycling_method: RecyclingMethod::Verified,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(pool_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(CONNECT_TIMEOUT))
        .create_timeout(Some(CONNECT_TIMEOUT))
        .build()
        .map_err(|e| StorageError::Unavailable(format!("postgres {target}: {e}")))?;
    let mut client = get(&pool, target).await?;
    migrate(&mut client, target, secret).await?;
    Ok(pool)
}

/// Brings the schema to [`SCHEMA_VERSION`] in one transaction, under an
/// advisory lock: a second replica starting at the same time waits, then
/// finds the schema done.
async fn migrate(
    client: &mut deadpool_postgres::Object,
    target: &str,
    secret: &ServerSecret,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let tx = client.transaction().await.map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await
        .map_err(err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS referee_schema (
            singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
            version   BIGINT NOT NULL
        )",
    )
    .await
    .map_err(err)?;
    let version: i64 = tx
        .query_opt("SELECT version FROM referee_schema", &[])
        .await
        .map_err(err)?
        .map_or(0, |row| row.get(0));
    if !(0..=SCHEMA_VERSION).contains(&version) {
        return Err(StorageError::Config(format!(
            "postgres {target}: schema version {version} is not a version this binary reads \
             (it reads up to {SCHEMA_VERSION}): a newer punct-referee wrote it"
        )));
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(step).await.map_err(|e| {
            pg_error(target, e)
                .with_context(&format!(" (migrating the schema from version {from})"))
        })?;
    }
    if version < 5 {
        secure(&tx, target, secret).await?;
    } else {
        let stored: String = tx
            .query_one("SELECT key_check FROM referee_secret", &[])
            .await
            .map_err(err)?
            .get(0);
        secret.verify(&stored, &format!("postgres {target}"))?;
    }
    if version < 6 {
        seal_documents(&tx, target, secret).await?;
    }
    tx.execute(
        "INSERT INTO referee_schema (version) VALUES ($1)
         ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version",
        &[&SCHEMA_VERSION],
    )
    .await
    .map_err(err)?;
    tx.commit().await.map_err(err)?;
    if version < SCHEMA_VERSION {
        tracing::info!(
            from = version,
            to = SCHEMA_VERSION,
            database = target,
            "postgres schema created or migrated"
        );
    }
    Ok(())
}

/// The step to version 5, in the migration's transaction: stores the key
/// check value of `secret` and seals every stored seed with it
/// (docs/STORAGE.md).
async fn secure(
    tx: &Transaction<'_>,
    target: &str,
    secret: &ServerSecret,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    tx.execute(
        "INSERT INTO referee_secret (key_check) VALUES ($1)",
        &[&secret.check_value()],
    )
    .await
    .map_err(err)?;
    let seeds = tx
        .query("SELECT id, seed FROM games WHERE seed IS NOT NULL", &[])
        .await
        .map_err(err)?;
    for row in &seeds {
        let id: String = row.get(0);
        let seed: Vec<u8> = row.get(1);
        let seed: [u8; 32] = seed
            .try_into()
            .map_err(|_| bad_row(target, format!("game `{id}`: seed")))?;
        tx.execute(
            "UPDATE games SET seed = $2 WHERE id = $1",
            &[&id, &secret.seal_seed(&id, &seed).to_vec()],
        )
        .await
        .map_err(err)?;
    }
    Ok(())
}

/// The step to version 6, in the migration's transaction: seals what
/// tournament documents hold in the clear (their seeds; the seat tokens of
/// a version before 5) with `secret` ([`ServerSecret::seal_document`]).
async fn seal_documents(
    tx: &Transaction<'_>,
    target: &str,
    secret: &ServerSecret,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let documents = tx
        .query("SELECT id, document FROM tournaments", &[])
        .await
        .map_err(err)?;
    for row in &documents {
        let id: String = row.get(0);
        let document: String = row.get(1);
        let sealed = secret
            .seal_document(&document)
            .map_err(|e| bad_row(target, format!("tournament `{id}`: {e}")))?;
        if let Some(sealed) = sealed {
            tx.execute(
                "UPDATE tournaments SET document = $2 WHERE id = $1",
                &[&id, &sealed],
            )
            .await
            .map_err(err)?;
        }
    }
    Ok(())
}

async fn writer_loop(
    pool: Pool,
    mut rx: mpsc::UnboundedReceiver<(Box<Leased>, Reply)>,
    _alive: mpsc::Sender<()>,
    commits: Arc<AtomicU64>,
    target: String,
    node: Arc<Node>,
) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit_batch(&pool, &target, &node, std::mem::take(&mut batch), &commits).await;
    }
}

/// Listens on [`NOTIFY_CHANNEL`] until `tx` is dropped (see
/// [`PostgresStorage::notices`]).
async fn listen(config: tokio_postgres::Config, target: String, tx: mpsc::UnboundedSender<Notice>) {
    use tokio_postgres::AsyncMessage;
    let mut failures = 0u32;
    while !tx.is_closed() {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (note_tx, mut note_rx) = mpsc::unbounded_channel();
                // The connection is driven here; its notifications go on.
                let driver = tokio::spawn(async move {
                    loop {
                        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                if note_tx.send(n.payload().to_string()).is_err() {
                                    return;
                                }
                            }
                            Some(Ok(_)) => {}
                            Some(Err(_)) | None => return,
                        }
                    }
                });
                if client
                    .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
                    .await
                    .is_ok()
                {
                    failures = 0;
                    if tx.send(Notice::Listening).is_err() {
                        driver.abort();
                        return;
                    }
                    while let Some(payload) = note_rx.recv().await {
                        let mut words = payload.split(' ');
                        let game_id = words.next().unwrap_or_default().to_string();
                        let lag = words
                            .next()
                            .and_then(|ms| ms.parse::<i64>().ok())
                            .map(|at| {
                                let now = super::unix_ms(std::time::SystemTime::now());
                                Duration::from_millis(now.saturating_sub(at).max(0) as u64)
                            });
                        if tx.send(Notice::Changed { game_id, lag }).is_err() {
                            driver.abort();
                            return;
                        }
                    }
                }
                driver.abort();
                tracing::debug!(database = %target, "notification connection lost; reopening");
            }
            Err(e) => {
                failures += 1;
                if failures == 1 {
                    tracing::warn!(error = %pg_error(&target, e), "cannot listen for game changes");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Announces a committed change of `game_id` on [`NOTIFY_CHANNEL`]
/// (delivered when the transaction commits, not before).
async fn notify(tx: &Transaction<'_>, game_id: &str, target: &str) -> Result<(), StorageError> {
    let stmt = tx
        .prepare_cached(
            "SELECT pg_notify('referee_games',
                $1 || ' ' || floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint::text)",
        )
        .await
        .map_err(|e| pg_error(target, e))?;
    tx.execute(&stmt, &[&game_id])
        .await
        .map_err(|e| pg_error(target, e))?;
    Ok(())
}

/// How long a takeover waits for a game's row lock before leaving the game
/// to the next sweep: a live owner's transactions hold it for a commit.
const TAKEOVER_LOCK_WAIT: Duration = Duration::from_millis(200);

/// How long a transaction of this replica may stay idle (between two of its
/// statements) before the server ends it: half a lease, so the row locks of
/// a paused replica are released before its lease expires and the games
/// can be taken over. Never below 200 ms: a busy replica's tasks may stall
/// that long, and an ended transaction only fails its writes (or leaves
/// their outcome unknown, which the owner reads back).
fn idle_timeout(lease: Duration) -> Duration {
    (lease / 2).clamp(Duration::from_millis(200), Duration::from_secs(30))
}

/// A statement's failure, and whether it was a deadlock or serialization
/// failure (to retry: nothing of it was stored).
struct Failed {
    error: StorageError,
    conflict: bool,
}

impl Failed {
    fn of(target: &str) -> impl Fn(tokio_postgres::Error) -> Failed + '_ {
        move |e| Failed {
            conflict: is_conflict(&e),
            error: pg_error(target, e),
        }
    }
}

impl From<StorageError> for Failed {
    fn from(error: StorageError) -> Failed {
        Failed {
            error,
            conflict: false,
        }
    }
}

/// How often a transaction refused by a deadlock or a serialization failure
/// is tried in all.
const CONFLICT_RETRIES: u32 = 5;

/// Whether PostgreSQL refused the statement as a deadlock victim (40P01) or
/// a serialization failure (40001): the transaction was rolled back and may
/// simply be run again.
fn is_conflict(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// One heartbeat ([`PostgresStorage::heartbeat`]): the registration's upsert
/// (the only row it writes, which no other replica's statement writes, so it
/// waits on no move), then a plain read of the games this node owns.
async fn beat(
    pool: &Pool,
    target: &str,
    node: &Node,
    address: &str,
) -> Result<Vec<String>, Failed> {
    let started = Instant::now();
    let before: HashMap<String, i64> = node
        .leases
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let client = get(pool, target).await?;
    let err = Failed::of(target);
    client
        .execute(
            "INSERT INTO nodes (node_id, address, boot_id, expires_at)
             VALUES ($1, $2, $3, now() + $4::float8 * interval '1 millisecond')
             ON CONFLICT (node_id) DO UPDATE
             SET address = EXCLUDED.address, boot_id = EXCLUDED.boot_id,
                 heartbeat_at = now(), expires_at = EXCLUDED.expires_at",
            &[&node.id, &address, &node.boot, &(node.lease_ms() as f64)],
        )
        .await
        .map_err(&err)?;
    // After the registration: a takeover that read it expired holds the
    // registration's row until it commits (see `take_over`), so its change
    // of owner is seen here.
    let owned = client
        .query(
            "SELECT id, epoch FROM games WHERE owner = $1 AND status = 'in_progress'",
            &[&node.id],
        )
        .await
        .map_err(&err)?;
    let owned: HashMap<String, i64> = owned.iter().map(|r| (r.get(0), r.get(1))).collect();
    let gone: Vec<String> = before
        .iter()
        .filter(|(id, epoch)| owned.get(*id) != Some(epoch))
        .map(|(id, _)| id.clone())
        .collect();
    // Of those, the ones in progress were taken over; the others ended (by
    // this replica's own writes) or were deleted. One not stored at all is
    // being created (its lease is held before its insert commits): kept.
    let mut lost = Vec::new();
    if !gone.is_empty() {
        let rows = client
            .query(
                "SELECT id, status = 'in_progress', owner = $2, epoch FROM games WHERE id = ANY($1)",
                &[&gone, &node.id],
            )
            .await
            .map_err(&err)?;
        let mut leases = node.leases.lock().unwrap_or_else(|e| e.into_inner());
        for r in &rows {
            let id: String = r.get(0);
            let in_progress: bool = r.get(1);
            let ours = r.get::<_, Option<bool>>(2) == Some(true);
            let epoch: i64 = r.get(3);
            if in_progress && ours && leases.get(&id) == Some(&epoch) {
                // Taken (back) by this node since the heartbeat began.
                continue;
            }
            if in_progress {
                lost.push(id.clone());
            }
            // Unless taken again since the heartbeat began.
            if leases.get(&id) == before.get(&id) {
                leases.remove(&id);
            }
        }
    }
    *node.valid_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(started + node.lease);
    Ok(lost)
}

/// Gives up this node's leases (their games can be taken over at once) and
/// its registration: a replica stopping cleanly.
async fn release_all(pool: &Pool, target: &str, node: &Node) -> Result<(), StorageError> {
    let client = get(pool, target).await?;
    let err = |e| pg_error(target, e);
    client
        .execute(
            "UPDATE games SET lease_expires_at = now() - interval '1 millisecond'
             WHERE owner = $1 AND status = 'in_progress'",
            &[&node.id],
        )
        .await
        .map_err(err)?;
    client
        .execute(
            &format!(
                "UPDATE tournaments SET lease_expires_at = now() - interval '1 millisecond'
                 WHERE owner = $1 AND {OPEN_TOURNAMENT}"
            ),
            &[&node.id],
        )
        .await
        .map_err(err)?;
    client
        .execute(
            "DELETE FROM nodes WHERE node_id = $1 AND boot_id = $2",
            &[&node.id, &node.boot],
        )
        .await
        .map_err(err)?;
    node.leases
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    Ok(())
}

/// Commits `writes` in one transaction and answers each once it has
/// committed. The writes are applied in the order of their games' ids (a
/// game's own writes keep their order), so two transactions that lock the
/// same games lock them in the same order. A transaction that PostgreSQL
/// rolled back as a deadlock victim or a serialization failure is run
/// again. If any write fails otherwise, the transaction is rolled back and
/// each write is retried alone in its own transaction, so one refused
/// write fails only itself; when the database is unreachable, all fail and
/// none is stored. When a commit's answer is lost, its games are marked
/// for reading back ([`Node::unsure`]).
async fn commit_batch(
    pool: &Pool,
    target: &str,
    node: &Node,
    mut writes: Vec<(Box<Leased>, Reply)>,
    commits: &AtomicU64,
) {
    if writes.is_empty() {
        return;
    }
    let started = Instant::now();
    let n = writes.len();
    // Stable: the writes of one game stay in their order.
    writes.sort_by(|a, b| write_game(&a.0.write).cmp(write_game(&b.0.write)));
    let mut transactions = 0;
    let together = transact_retrying(pool, target, node, &writes, &mut transactions).await;
    match together {
        Ok(()) => {
            for (_, reply) in writes {
                let _ = reply.send(Ok(()));
            }
        }
        Err(Failure::Uncertain(e)) => {
            // The commit may have happened: retrying could store a write
            // twice or refuse one that is stored. Each game is reloaded
            // from the database instead (a fenced error moves it).
            tracing::warn!(error = %e, "storage commit outcome unknown");
            for (w, reply) in writes {
                let _ = reply.send(Err(match game_of(&w.write) {
                    Some(id) => {
                        node.unsure(id);
                        StorageError::fenced(
                            id,
                            &format!("the outcome of its commit is unknown ({e}): reload it"),
                        )
                    }
                    None => e.clone(),
                }));
            }
        }
        Err(_) if n > 1 => {
            for (w, reply) in writes {
                let one = [(w, ())];
                let alone = transact_retrying(pool, target, node, &one, &mut transactions).await;
                let [(w, ())] = one;
                let _ = reply.send(alone.map_err(|f| match (f, game_of(&w.write)) {
                    (Failure::Uncertain(e), Some(id)) => {
                        tracing::warn!(error = %e, "storage commit outcome unknown");
                        node.unsure(id);
                        StorageError::fenced(
                            id,
                            &format!("the outcome of its commit is unknown ({e}): reload it"),
                        )
                    }
                    (Failure::Uncertain(e) | Failure::Refused(e) | Failure::Conflict(e), _) => e,
                }));
            }
        }
        Err(Failure::Refused(e) | Failure::Conflict(e)) => {
            tracing::warn!(error = %e, "storage write failed");
            for (_, reply) in writes {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
    commits.fetch_add(transactions, Ordering::Relaxed);
    metrics::counter!(telemetry::STORAGE_COMMITS).increment(transactions);
    metrics::counter!(telemetry::STORAGE_WRITES).increment(n as u64);
    metrics::histogram!(telemetry::STORAGE_COMMIT_DURATION).record(started.elapsed().as_secs_f64());
}

/// How a transaction failed.
enum Failure {
    /// Rolled back, or never begun: nothing of it is stored.
    Refused(StorageError),
    /// Rolled back by PostgreSQL as a deadlock victim or a serialization
    /// failure: nothing of it is stored, and it may be run again.
    Conflict(StorageError),
    /// The commit was sent but its answer did not come back: it may or may
    /// not be stored.
    Uncertain(StorageError),
}

/// The game a write is about, for the writes a lease covers.
fn game_of(write: &Write) -> Option<&str> {
    match write {
        Write::Tournament(_) => None,
        other => Some(write_game(other)),
    }
}

/// [`transact`], run again (up to [`CONFLICT_RETRIES`] times in all) while
/// PostgreSQL rolls it back as a deadlock victim or a serialization
/// failure; counts the transactions in `transactions`.
async fn transact_retrying<R>(
    pool: &Pool,
    target: &str,
    node: &Node,
    writes: &[(Box<Leased>, R)],
    transactions: &mut u64,
) -> Result<(), Failure> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        *transactions += 1;
        match transact(pool, target, node, writes.iter().map(|(w, _)| &**w)).await {
            Err(Failure::Conflict(e)) if attempt < CONFLICT_RETRIES => {
                tracing::info!(error = %e, attempt, "storage transaction conflict; run again");
                // A little apart, so the two sides do not meet again.
                tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 2)).await;
            }
            Err(Failure::Conflict(e)) => {
                tracing::warn!(error = %e, "storage transaction conflict, {CONFLICT_RETRIES} times");
                return Err(Failure::Refused(e));
            }
            other => return other,
        }
    }
}

/// Applies `writes` in one transaction and commits it.
async fn transact<'w>(
    pool: &Pool,
    target: &str,
    node: &Node,
    writes: impl Iterator<Item = &'w Leased> + Clone,
) -> Result<(), Failure> {
    let result = transact_once(pool, target, node, writes.clone()).await;
    if let Err(Failure::Refused(_) | Failure::Conflict(_)) = &result {
        // Rolled back: the leases its creations took are not held (a
        // retry takes them again).
        for w in writes {
            if let Write::Create(game, _, None) = &w.write
                && node.epoch(&game.id) == Some(1)
            {
                node.forget(&game.id);
            }
        }
    }
    result
}

async fn transact_once<'w>(
    pool: &Pool,
    target: &str,
    node: &Node,
    writes: impl Iterator<Item = &'w Leased>,
) -> Result<(), Failure> {
    let refused = |e: tokio_postgres::Error| {
        if is_conflict(&e) {
            Failure::Conflict(pg_error(target, e))
        } else {
            Failure::Refused(pg_error(target, e))
        }
    };
    let mut client = get(pool, target).await.map_err(Failure::Refused)?;
    let tx = client.transaction().await.map_err(refused)?;
    for w in writes {
        apply(&tx, &w.write, w.epoch, target, node)
            .await
            .map_err(|e| {
                if is_conflict_text(&e) {
                    Failure::Conflict(e)
                } else {
                    Failure::Refused(e)
                }
            })?;
    }
    tx.commit().await.map_err(|e| {
        // A refusal by the server (a deferred constraint, a serialization
        // failure) is a rollback; a broken connection leaves it unknown.
        if e.as_db_error().is_some() {
            refused(e)
        } else {
            Failure::Uncertain(pg_error(target, e))
        }
    })
}

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn nonzero(v: u64) -> Option<i64> {
    (v != 0).then(|| ms(v))
}

/// The epoch of this node's lease on `game_id`, or the fenced error: a
/// write of a game whose lease this node does not hold is refused before it
/// reaches the database.
fn fence(node: &Node, game_id: &str, epoch: Option<i64>) -> Result<i64, StorageError> {
    epoch
        .or_else(|| node.epoch(game_id))
        .ok_or_else(|| StorageError::fenced(game_id, "this replica holds no lease on it"))
}

/// Why a fenced update of `game_id`'s row changed nothing: the fenced error
/// when the lease moved (the lease is forgotten), else `otherwise`.
async fn refused(
    tx: &Transaction<'_>,
    node: &Node,
    game_id: &str,
    epoch: i64,
    target: &str,
    otherwise: StorageError,
) -> StorageError {
    let row = tx
        .query_opt("SELECT owner, epoch FROM games WHERE id = $1", &[&game_id])
        .await;
    match row {
        Ok(Some(r)) => {
            let owner: Option<String> = r.get(0);
            let now: i64 = r.get(1);
            if owner.as_deref() != Some(node.id.as_str()) || now != epoch {
                if node.epoch(game_id) == Some(epoch) {
                    node.forget(game_id);
                }
                metrics::counter!(telemetry::CLUSTER_FENCED_WRITES).increment(1);
                return StorageError::fenced(
                    game_id,
                    &format!(
                        "epoch {now} of {}, this replica held {epoch}",
                        owner.as_deref().unwrap_or("no owner")
                    ),
                );
            }
            // Ours, but not at the ply this replica's copy is at (a commit
            // whose answer was lost stored a move it does not know): the
            // copy is reloaded from the database.
            StorageError::fenced(
                game_id,
                &format!("{} (reload it from the database)", otherwise.message()),
            )
        }
        Ok(None) => otherwise,
        Err(e) => pg_error(target, e),
    }
}

async fn apply(
    tx: &Transaction<'_>,
    write: &Write,
    epoch: Option<i64>,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    match write {
        Write::Tournament(row) => match epoch {
            // Under a lease (cluster mode): fenced.
            Some(epoch) => apply_tournament_leased(tx, row, epoch, target, node).await?,
            None => apply_tournament(tx, row, target).await?,
        },
        Write::Create(game, moves, end) => {
            let labels = serde_json::to_string(&game.labels)
                .map_err(|e| StorageError::Unavailable(format!("labels: {e}")))?;
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO games (id, game, variant, options, seed, seed_supplied,
                        clock_mode, clock_initial_ms, clock_increment_ms,
                        clock_per_move_ms, first_move_ms, labels, status, ply, created_at_ms,
                        updated_at_ms, owner, epoch, lease_expires_at, turn_started_at,
                        forfeits)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb,
                        'in_progress', $13, $14, $14, $15, $16,
                        now() + $17::float8 * interval '1 millisecond', now(), $18)",
                )
                .await
                .map_err(err)?;
            tx.execute(
                &stmt,
                &[
                    &game.id,
                    &game.game,
                    &game.variant,
                    &game.options,
                    // Sealed: the database alone reveals no deck.
                    &game
                        .setup
                        .map(|s| node.secret.seal_seed(&game.id, &s.seed).to_vec()),
                    &game.setup.is_some_and(|s| s.supplied),
                    &game.clock.mode,
                    &nonzero(game.clock.initial_ms),
                    &nonzero(game.clock.increment_ms),
                    &nonzero(game.clock.per_move_ms),
                    &game.clock.first_move_ms.map(ms),
                    &labels,
                    &(moves.len() as i64),
                    &game.created_at_ms,
                    // An imported finished game has no owner.
                    &end.is_none().then_some(node.id.as_str()),
                    &i64::from(end.is_none()),
                    &(node.lease_ms() as f64),
                    &game.forfeits,
                ],
            )
            .await
            .map_err(err)?;
            if end.is_none() {
                node.hold(&game.id, 1);
            }
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO seats (game_id, seat, name, token_sha256) VALUES ($1, $2, $3, $4)",
                )
                .await
                .map_err(err)?;
            for (i, seat) in game.seats.iter().enumerate() {
                tx.execute(
                    &stmt,
                    &[
                        &game.id,
                        &(i as i64 + 1),
                        &seat.name,
                        &seat.token_sha256.as_slice(),
                    ],
                )
                .await
                .map_err(err)?;
            }
            for mv in moves {
                insert_move(tx, mv, target).await?;
            }
            if let Some(end) = end {
                apply_end(tx, end, target, None).await?;
            }
        }
        Write::Move(mv, end) => {
            // The game's row first: the update takes its lock, so a second
            // writer of the same ply waits here, then finds the ply moved
            // on and is refused; the (game, ply) key refuses it again. It
            // names the lease's owner and epoch (fencing): a replica whose
            // lease was taken over changes nothing.
            let epoch = fence(node, &mv.game_id, epoch)?;
            let stmt = tx
                .prepare_cached(
                    "UPDATE games SET ply = $2::bigint, draw_offers = $3, updated_at_ms = $4,
                        turn_started_at = now()
                     WHERE id = $1 AND status = 'in_progress' AND ply = $2::bigint - 1
                       AND owner = $5 AND epoch = $6",
                )
                .await
                .map_err(err)?;
            let changed = tx
                .execute(
                    &stmt,
                    &[
                        &mv.game_id,
                        &i64::from(mv.ply),
                        &(!mv.draw_offers.is_empty()).then(|| seats_text(mv.draw_offers)),
                        &mv.played_at_ms,
                        &node.id,
                        &epoch,
                    ],
                )
                .await
                .map_err(err)?;
            if changed != 1 {
                let stale = StorageError::Conflict(format!(
                    "postgres {target}: game `{}` is not stored in progress at ply {}",
                    mv.game_id,
                    mv.ply.saturating_sub(1)
                ));
                return Err(refused(tx, node, &mv.game_id, epoch, target, stale).await);
            }
            insert_move(tx, mv, target).await?;
            if let Some(end) = end {
                apply_end(tx, end, target, Some((node, epoch))).await?;
            }
            notify(tx, &mv.game_id, target).await?;
        }
        Write::DrawOffer { game_id, seats } => {
            let epoch = fence(node, game_id, epoch)?;
            let stmt = tx
                .prepare_cached(
                    "UPDATE games SET draw_offers = $2, turn_started_at = now()
                     WHERE id = $1 AND status = 'in_progress' AND owner = $3 AND epoch = $4",
                )
                .await
                .map_err(err)?;
            let changed = tx
                .execute(
                    &stmt,
                    &[
                        game_id,
                        &(!seats.is_empty()).then(|| seats_text(*seats)),
                        &node.id,
                        &epoch,
                    ],
                )
                .await
                .map_err(err)?;
            if changed != 1 {
                let missing = no_such_game(target, game_id);
                return Err(refused(tx, node, game_id, epoch, target, missing).await);
            }
            notify(tx, game_id, target).await?;
        }
        Write::End(end) => {
            let epoch = fence(node, &end.game_id, epoch)?;
            apply_end(tx, end, target, Some((node, epoch))).await?;
            notify(tx, &end.game_id, target).await?;
        }
    }
    Ok(())
}

/// Inserts or replaces a tournament's document, whoever owns it (a store
/// without leases on it: tests, a referee before schema 4).
async fn apply_tournament(
    tx: &Transaction<'_>,
    row: &super::TournamentRow,
    target: &str,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let now = super::unix_ms(std::time::SystemTime::now());
    let stmt = tx
        .prepare_cached(
            "INSERT INTO tournaments (id, status, document, created_at_ms, updated_at_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO UPDATE
             SET status = EXCLUDED.status, document = EXCLUDED.document,
                 updated_at_ms = EXCLUDED.updated_at_ms",
        )
        .await
        .map_err(err)?;
    tx.execute(
        &stmt,
        &[
            &row.id,
            &row.status,
            &row.document,
            &row.created_at_ms,
            &now,
        ],
    )
    .await
    .map_err(err)?;
    Ok(())
}

/// Writes a tournament's document under this node's lease of epoch
/// `epoch` (fencing, docs/TOURNAMENTS.md "In a cluster"): a new tournament
/// is inserted with that lease; a stored one is replaced only while its row
/// still names this node and that epoch, else the write is refused, fenced.
async fn apply_tournament_leased(
    tx: &Transaction<'_>,
    row: &super::TournamentRow,
    epoch: i64,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let now = super::unix_ms(std::time::SystemTime::now());
    let stmt = tx
        .prepare_cached(
            "INSERT INTO tournaments (id, status, document, created_at_ms, updated_at_ms,
                owner, epoch, lease_expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8::float8 * interval '1 millisecond')
             ON CONFLICT (id) DO UPDATE
             SET status = EXCLUDED.status, document = EXCLUDED.document,
                 updated_at_ms = EXCLUDED.updated_at_ms
             WHERE tournaments.owner = EXCLUDED.owner AND tournaments.epoch = EXCLUDED.epoch",
        )
        .await
        .map_err(err)?;
    let changed = tx
        .execute(
            &stmt,
            &[
                &row.id,
                &row.status,
                &row.document,
                &row.created_at_ms,
                &now,
                &node.id,
                &epoch,
                &(node.lease_ms() as f64),
            ],
        )
        .await
        .map_err(err)?;
    if changed == 1 {
        return Ok(());
    }
    let holder = tx
        .query_opt(
            "SELECT COALESCE(owner, 'no owner'), epoch FROM tournaments WHERE id = $1",
            &[&row.id],
        )
        .await
        .map_err(err)?;
    metrics::counter!(telemetry::CLUSTER_FENCED_WRITES).increment(1);
    let why = match holder {
        Some(r) => format!(
            "epoch {} of {}, this replica held {epoch}",
            r.get::<_, i64>(1),
            r.get::<_, String>(0)
        ),
        None => format!("not stored, this replica held epoch {epoch}"),
    };
    Err(StorageError::fenced_tournament(&row.id, &why))
}

/// The statuses of a tournament that has an owner: it may still change.
const OPEN_TOURNAMENT: &str = "status IN ('registering', 'running')";

fn tournament_row(r: &tokio_postgres::Row) -> super::TournamentRow {
    super::TournamentRow {
        id: r.get("id"),
        status: r.get("status"),
        document: r.get("document"),
        created_at_ms: r.get("created_at_ms"),
    }
}

fn no_such_game(target: &str, id: &str) -> StorageError {
    StorageError::Conflict(format!(
        "postgres {target}: no stored game `{id}` in progress"
    ))
}

async fn insert_move(tx: &Transaction<'_>, mv: &MoveRow, target: &str) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO moves (game_id, ply, seat, notation, request_id, clock_ms, played_at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .await
        .map_err(err)?;
    tx.execute(
        &stmt,
        &[
            &mv.game_id,
            &i64::from(mv.ply),
            &i64::from(mv.seat.number()),
            &mv.notation,
            &mv.request_id,
            &ms(mv.clock_ms),
            &mv.played_at_ms,
        ],
    )
    .await
    .map_err(err)?;
    Ok(())
}

/// Ends a game; `fenced` names the lease the write must hold (none while
/// creating an imported finished game).
async fn apply_end(
    tx: &Transaction<'_>,
    end: &EndRow,
    target: &str,
    fenced: Option<(&Node, i64)>,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let stmt = tx
        .prepare_cached(
            "UPDATE games SET status = $2, winners = $3, reason = $4, ply = $5,
                finished_at_ms = $6, updated_at_ms = $6, draw_offers = NULL, scores = $7
             WHERE id = $1 AND status = 'in_progress'
               AND ($8::text IS NULL OR (owner = $8 AND epoch = $9))",
        )
        .await
        .map_err(err)?;
    let changed = tx
        .execute(
            &stmt,
            &[
                &end.game_id,
                &end.status,
                &(end.status == "finished").then(|| seats_text(end.winners)),
                &(!end.reason.is_empty()).then_some(end.reason.as_str()),
                &i64::from(end.ply),
                &end.at_ms,
                &(!end.scores.is_empty()).then(|| scores_text(&end.scores)),
                &fenced.map(|(node, _)| node.id.as_str()),
                &fenced.map_or(0, |(_, epoch)| epoch),
            ],
        )
        .await
        .map_err(err)?;
    if changed != 1 {
        let missing = no_such_game(target, &end.game_id);
        return Err(match fenced {
            Some((node, epoch)) => refused(tx, node, &end.game_id, epoch, target, missing).await,
            None => missing,
        });
    }
    Ok(())
}

fn bad_row(target: &str, what: String) -> StorageError {
    StorageError::Corrupt(format!("postgres {target}: stored {what}"))
}

/// The games `filter` (a `WHERE …` clause with its order and limit) picks,
/// with their seats, moves and ends (seats and moves of all of them read in
/// one query each).
async fn read_games(
    client: &tokio_postgres::Client,
    secret: &ServerSecret,
    filter: &str,
    params: &[&(dyn ToSql + Sync)],
    target: &str,
) -> Result<Vec<StoredGame>, StorageError> {
    let err = |e| pg_error(target, e);
    let rows = client
        .query(
            &format!(
                "SELECT id, game, variant, options, seed, seed_supplied, clock_mode,
                    clock_initial_ms, clock_increment_ms, clock_per_move_ms, first_move_ms,
                    labels::text, draw_offers, created_at_ms, ply, status, winners, scores,
                    reason, finished_at_ms, forfeits
                 FROM games {filter}"
            ),
            params,
        )
        .await
        .map_err(err)?;
    let mut games = Vec::with_capacity(rows.len());
    let mut plies = Vec::with_capacity(rows.len());
    for r in &rows {
        let id: String = r.get(0);
        let bad = |what: &str| bad_row(target, format!("game `{id}`: {what}"));
        let setup = match r.get::<_, Option<Vec<u8>>>(4) {
            None => None,
            Some(bytes) => Some(Setup {
                seed: secret.unseal_seed(&id, &bytes.try_into().map_err(|_| bad("seed"))?),
                supplied: r.get(5),
            }),
        };
        let labels: String = r.get(11);
        let labels: BTreeMap<String, String> =
            serde_json::from_str(&labels).map_err(|e| bad(&format!("labels: {e}")))?;
        let mode = match r.get::<_, &str>(6) {
            "none" => "none",
            "fischer" => "fischer",
            "per_move" => "per_move",
            other => return Err(bad(&format!("clock mode `{other}`"))),
        };
        let non_negative = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.max(0) as u64);
        let draw_offers = seats_of_text(r.get::<_, Option<&str>>(12).unwrap_or(""))
            .map_err(|e| bad(&format!("draw offers: {e}")))?;
        let ply: i64 = r.get(14);
        let status: &str = r.get(15);
        let end = match status {
            "in_progress" => None,
            "finished" | "expired" => Some(EndRow {
                game_id: id.clone(),
                status: if status == "finished" {
                    "finished"
                } else {
                    "expired"
                },
                winners: seats_of_text(r.get::<_, Option<&str>>(16).unwrap_or(""))
                    .map_err(|e| bad(&format!("winners: {e}")))?,
                scores: scores_of_text(r.get::<_, Option<&str>>(17).unwrap_or(""))
                    .map_err(|e| bad(&format!("scores: {e}")))?,
                reason: r.get::<_, Option<String>>(18).unwrap_or_default(),
                ply: u32::try_from(ply).map_err(|_| bad(&format!("ply {ply}")))?,
                at_ms: r.get::<_, Option<i64>>(19).unwrap_or(0),
            }),
            other => return Err(bad(&format!("status `{other}`"))),
        };
        let game = GameRow {
            id: id.clone(),
            game: r.get(1),
            variant: r.get(2),
            options: r.get(3),
            seats: Vec::new(),
            setup,
            clock: ClockRow {
                mode,
                initial_ms: non_negative(7).unwrap_or(0),
                increment_ms: non_negative(8).unwrap_or(0),
                per_move_ms: non_negative(9).unwrap_or(0),
                first_move_ms: non_negative(10),
            },
            labels,
            forfeits: r.get(20),
            created_at_ms: r.get(13),
        };
        games.push(StoredGame {
            game,
            moves: Vec::new(),
            draw_offers,
            end,
        });
        plies.push(ply);
    }
    if games.is_empty() {
        return Ok(games);
    }
    let ids: Vec<&str> = games.iter().map(|g| g.game.id.as_str()).collect();
    let index: BTreeMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let seats = client
        .query(
            "SELECT game_id, seat, name, token_sha256 FROM seats
             WHERE game_id = ANY($1) ORDER BY game_id, seat",
            &[&ids],
        )
        .await
        .map_err(err)?;
    let mut seat_lists: Vec<Vec<SeatRow>> = vec![Vec::new(); games.len()];
    for r in &seats {
        let id: &str = r.get(0);
        let Some(&i) = index.get(id) else { continue };
        let number: i64 = r.get(1);
        if number != seat_lists[i].len() as i64 + 1 {
            return Err(bad_row(
                target,
                format!("game `{id}`: seats are not 1, 2, …"),
            ));
        }
        let hash: Vec<u8> = r.get(3);
        seat_lists[i].push(SeatRow {
            name: r.get(2),
            token_sha256: hash
                .try_into()
                .map_err(|_| bad_row(target, format!("game `{id}`: bad token hash")))?,
        });
    }
    let moves = client
        .query(
            "SELECT game_id, ply, seat, notation, request_id, clock_ms, played_at_ms
             FROM moves WHERE game_id = ANY($1) ORDER BY game_id, ply",
            &[&ids],
        )
        .await
        .map_err(err)?;
    let mut move_lists: Vec<Vec<MoveRow>> = vec![Vec::new(); games.len()];
    for r in &moves {
        let id: &str = r.get(0);
        let Some(&i) = index.get(id) else { continue };
        let bad = |what: &str| bad_row(target, format!("game `{id}`: {what}"));
        let ply: i64 = r.get(1);
        let seat: i64 = r.get(2);
        move_lists[i].push(MoveRow {
            game_id: id.to_string(),
            ply: u32::try_from(ply).map_err(|_| bad(&format!("move ply {ply}")))?,
            seat: u32::try_from(seat)
                .ok()
                .and_then(Seat::from_number)
                .ok_or_else(|| bad(&format!("seat {seat}")))?,
            notation: r.get(3),
            request_id: r.get(4),
            clock_ms: r.get::<_, i64>(5).max(0) as u64,
            played_at_ms: r.get(6),
            draw_offers: SeatSet::EMPTY,
        });
    }
    for (((game, seats), moves), ply) in games.iter_mut().zip(seat_lists).zip(move_lists).zip(plies)
    {
        game.game.seats = seats;
        // Moves and the game's ply are written in one transaction: a
        // mismatch means the rows were changed behind the server's back.
        if ply != moves.len() as i64
            || moves
                .iter()
                .enumerate()
                .any(|(i, m)| m.ply as usize != i + 1)
        {
            return Err(bad_row(
                target,
                format!(
                    "game `{}`: {} stored moves do not make its ply {ply}",
                    game.game.id,
                    moves.len()
                ),
            ));
        }
        game.moves = moves;
    }
    Ok(games)
}

/// `url` with its database name replaced by `dbname` (a URL gains a
/// `dbname` parameter, which wins over its path; a key/value string gains a
/// `dbname=` pair, which wins over an earlier one).
pub fn with_database(url: &str, dbname: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}dbname={dbname}")
    } else {
        format!("{url} dbname={dbname}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_name_is_replaced_in_either_form() {
        let name = |url: &str| {
            PostgresOptions {
                url: url.into(),
                pool_size: 1,
                ..PostgresOptions::default()
            }
            .config()
            .unwrap()
            .get_dbname()
            .map(str::to_string)
        };
        let url = with_database("postgres://u@127.0.0.1:5433/postgres", "t1");
        assert_eq!(name(&url).as_deref(), Some("t1"));
        let url = with_database(
            "postgres://u@127.0.0.1:5433/postgres?connect_timeout=2",
            "t2",
        );
        assert_eq!(name(&url).as_deref(), Some("t2"));
        let url = with_database("host=127.0.0.1 port=5433 dbname=postgres", "t3");
        assert_eq!(name(&url).as_deref(), Some("t3"));
    }

    #[test]
    fn a_bad_url_is_a_readable_error_without_the_password() {
        for url in ["mysql://u:hunter2@h/d", "postgres://u:hunter2@h:notaport/d"] {
            let e = PostgresOptions {
                url: url.into(),
                pool_size: 1,
                ..PostgresOptions::default()
            }
            .config()
            .unwrap_err();
            assert!(
                e.message().contains("not a PostgreSQL connection string"),
                "{e}"
            );
            assert!(!e.message().contains("hunter2"), "{e}");
        }
        let o = PostgresOptions {
            url: "postgres://u:hunter2@db1:5433,db2/games".into(),
            pool_size: 1,
            ..PostgresOptions::default()
        };
        assert_eq!(o.target(), "db1:5433,db2:5432/games");
    }
}
