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

mod apply;
mod journal;
mod leases;
mod notices;
mod outbox;
mod reads;
mod schema;
mod store;
mod writer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::thread;
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

use self::journal::fold_everything;
pub use self::leases::{Leased, Ownership, TakenOver};
use self::leases::{Node, idle_timeout, release_all};
use self::notices::listen;
pub use self::notices::{NOTIFY_CHANNEL, Notice};
use self::reads::read_games;
use self::schema::connect;
use self::writer::writer_loop;
use super::sqlite::FoldPolicy;
use super::{ServerSecret, StorageError, StoredGame, Write};

/// The schema version this binary writes (table `referee_schema`).
pub const SCHEMA_VERSION: i64 = 12;
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

/// How to reach the database.
#[derive(Clone)]
pub struct PostgresOptions {
    /// A libpq-style URL or key/value string (`postgres://user:pw@host:5432/db`,
    /// `host=/run/postgresql dbname=referee`).
    pub url: String,
    /// Connections the pool holds at most (at least [`WRITERS`] + 1); each
    /// writer keeps one more of its own, taken from the pool once.
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

type Reply = oneshot::Sender<Result<(), StorageError>>;
/// A writer task's queue.
type WriterQueue = mpsc::UnboundedSender<(Box<LeasedWrite>, Reply)>;

/// A write and the lease epoch it was decided under (`None`: whatever
/// lease this node holds now).
#[derive(Debug)]
struct LeasedWrite {
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
        PostgresStorage::open_folding(options, secret, FoldPolicy::from_env())
    }

    /// [`PostgresStorage::open_with_secret`] with the move journal folded
    /// as `policy` says (docs/STORAGE.md, "The move journal"; `rows` 0: no
    /// journal, each move written into its game's rows).
    pub(crate) fn open_folding(
        options: &PostgresOptions,
        secret: ServerSecret,
        policy: FoldPolicy,
    ) -> Result<PostgresStorage, StorageError> {
        let config = options.config()?;
        let listen_config = config.clone();
        let target = options.target();
        let commits = Arc::new(AtomicU64::new(0));
        let node = Arc::new(Node::new(options, secret));
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let start = Start {
            config: with_idle_timeout(config, options.lease),
            pool_size: options.pool_size.max(WRITERS + 1),
            target: target.clone(),
            commits: commits.clone(),
            node: node.clone(),
            policy,
        };
        let thread = thread::Builder::new()
            .name("storage-postgres".into())
            .spawn(move || start.run(&ready_tx))
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

/// `config` with the idle-in-transaction timeout of [`idle_timeout`]: a
/// transaction of this replica left open (the process paused or stuck
/// between two statements) is ended by the server, releasing its row
/// locks, well before its lease runs out: a takeover never waits on a
/// paused owner (docs/CLUSTER.md, "Takeover").
fn with_idle_timeout(
    mut config: tokio_postgres::Config,
    lease: Duration,
) -> tokio_postgres::Config {
    let idle = format!(
        "-c idle_in_transaction_session_timeout={}",
        idle_timeout(lease).as_millis()
    );
    let joined = match config.get_options() {
        Some(given) if !given.trim().is_empty() => format!("{given} {idle}"),
        _ => idle,
    };
    config.options(joined);
    config
}

/// What the storage thread is started with.
struct Start {
    config: tokio_postgres::Config,
    pool_size: usize,
    target: String,
    commits: Arc<AtomicU64>,
    node: Arc<Node>,
    policy: FoldPolicy,
}

/// What the storage thread hands back once connected: its runtime, the
/// pool and the writers' queues.
type Started = (tokio::runtime::Handle, Pool, Vec<WriterQueue>);

impl Start {
    /// The storage thread: a runtime of its own, the pool, the writers;
    /// says on `ready` when they run (or why not), then runs until every
    /// writer has drained its queue and stopped, and gives the leases up,
    /// so other replicas take them over at once instead of after the lease.
    fn run(self, ready: &std_mpsc::Sender<Result<Started, StorageError>>) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready.send(Err(StorageError::Unavailable(format!(
                    "cannot start the storage runtime: {e}"
                ))));
                return;
            }
        };
        let Start {
            config,
            pool_size,
            target,
            commits,
            node,
            policy,
        } = self;
        let pool = match runtime.block_on(connect(config, pool_size, &target, &node.secret)) {
            Ok(pool) => pool,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        // What an earlier run left in the journal (a kill, a crash) is
        // folded before any write: each writer folds only what it journals.
        match runtime.block_on(fold_everything(&pool, &target)) {
            Ok(0) => {}
            Ok(n) => tracing::info!(moves = n, "storage journal folded at start"),
            Err(e) => tracing::warn!(error = %e, "storage journal fold at start failed"),
        }
        let (alive, mut all_stopped) = mpsc::channel::<()>(1);
        let writers: Vec<_> = (0..WRITERS)
            .map(|_| {
                let (tx, rx) = mpsc::unbounded_channel();
                let writer = writer_loop(
                    pool.clone(),
                    rx,
                    alive.clone(),
                    commits.clone(),
                    target.clone(),
                    node.clone(),
                    policy,
                );
                runtime.spawn(writer);
                tx
            })
            .collect();
        drop(alive);
        let _ = ready.send(Ok((runtime.handle().clone(), pool.clone(), writers)));
        runtime.block_on(async move {
            let _ = all_stopped.recv().await;
            let release = release_all(&pool, &target, &node);
            match tokio::time::timeout(CONNECT_TIMEOUT, release).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "giving up the leases failed"),
                Err(_) => tracing::warn!("giving up the leases timed out"),
            }
        });
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

/// The game a write is about (its writer is chosen by it).
fn write_game(write: &Write) -> &str {
    match write {
        Write::Create(game, _, _) => &game.id,
        Write::Move(mv, _) => &mv.game_id,
        Write::DrawOffer { game_id, .. } => game_id,
        Write::End(end) => &end.game_id,
        Write::Tournament(row) => &row.id,
        Write::Outboxed(inner, _) => write_game(inner),
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
