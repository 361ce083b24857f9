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

use std::collections::BTreeMap;
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
    ArchiveQuery, ClockRow, Commit, EndRow, GameRow, MoveRow, SeatRow, Storage, StorageError,
    StoredGame, Write, scores_of_text, scores_text, seats_of_text, seats_text,
};
use crate::games::{Seat, SeatSet, Setup};
use crate::service::telemetry;

/// The schema version this binary writes (table `referee_schema`).
pub const SCHEMA_VERSION: i64 = 2;
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
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [SCHEMA_1, SCHEMA_2];

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
}

impl std::fmt::Debug for PostgresOptions {
    /// Never shows the password: only [`PostgresOptions::target`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("target", &self.target())
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

impl PostgresOptions {
    /// The URL parsed (a readable error names what is wrong, never the
    /// password).
    pub fn config(&self) -> Result<tokio_postgres::Config, StorageError> {
        let mut config: tokio_postgres::Config = self.url.parse().map_err(|e| {
            StorageError(format!(
                "the database URL is not a PostgreSQL connection string ({e}); \
                 write e.g. postgres://user:password@host:5432/database"
            ))
        })?;
        if config.get_hosts().is_empty() {
            return Err(StorageError(
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
type WriterQueue = mpsc::UnboundedSender<(Box<Write>, Reply)>;

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
}

impl PostgresStorage {
    /// Connects, creates or migrates the schema (once, under an advisory
    /// lock, whoever else starts at the same time) and starts the writers.
    /// Fails with a readable message when the URL is wrong, the database
    /// cannot be reached or its schema is newer than this binary's.
    pub fn open(options: &PostgresOptions) -> Result<PostgresStorage, StorageError> {
        let config = options.config()?;
        let target = options.target();
        let pool_size = options.pool_size.max(WRITERS + 1);
        let commits = Arc::new(AtomicU64::new(0));
        let counter = commits.clone();
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
                        let _ = ready_tx.send(Err(StorageError(format!(
                            "cannot start the storage runtime: {e}"
                        ))));
                        return;
                    }
                };
                let pool = match runtime.block_on(connect(config, pool_size, &where_)) {
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
                        ));
                        tx
                    })
                    .collect();
                drop(alive);
                let _ = ready_tx.send(Ok((runtime.handle().clone(), pool, writers)));
                // Until every writer has drained its queue and stopped.
                runtime.block_on(async move {
                    let _ = all_stopped.recv().await;
                });
            })
            .map_err(|e| StorageError(format!("cannot start the storage thread: {e}")))?;
        let (runtime, pool, writers) = match ready_rx.recv() {
            Ok(Ok(parts)) => parts,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(StorageError("the storage thread stopped".into()));
            }
        };
        Ok(PostgresStorage {
            writers: Mutex::new(Some(writers)),
            runtime,
            pool,
            thread: Mutex::new(Some(thread)),
            target,
            commits,
        })
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
            .map_err(|_| StorageError("the storage runtime has stopped".into()))?
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

    fn write(&self, write: Write) -> Commit {
        let (tx, rx) = oneshot::channel();
        let writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(writers) = writers.as_ref() else {
            return Commit::ready(Err(StorageError("the storage has closed".into())));
        };
        let mut hasher = DefaultHasher::new();
        write_game(&write).hash(&mut hasher);
        let writer = &writers[(hasher.finish() % writers.len() as u64) as usize];
        if writer.send((Box::new(write), tx)).is_err() {
            return Commit::ready(Err(StorageError("the storage writer has stopped".into())));
        }
        Commit::waiting(rx)
    }

    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            read_games(
                &client,
                "WHERE status = 'in_progress' ORDER BY created_at_ms, seq",
                &[],
                &target,
            )
            .await
        })
    }

    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let id = id.to_string();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let mut games = read_games(&client, "WHERE id = $1", &[&id], &target).await?;
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
            .map_err(|e| StorageError(format!("labels: {e}")))?;
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            read_games(
                &client,
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
        return StorageError(format!(
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
    StorageError(format!("postgres {target}: {text}"))
}

/// A connection from the pool.
async fn get(pool: &Pool, target: &str) -> Result<deadpool_postgres::Object, StorageError> {
    pool.get().await.map_err(|e| {
        let text = match e {
            deadpool_postgres::PoolError::Backend(e) => pg_error(target, e).0,
            deadpool_postgres::PoolError::Timeout(_) => {
                format!("postgres {target}: no connection within {CONNECT_TIMEOUT:?}")
            }
            other => format!("postgres {target}: {other}"),
        };
        StorageError(format!("{text} (is the database reachable?)"))
    })
}

/// The pool, once the schema is at [`SCHEMA_VERSION`].
async fn connect(
    config: tokio_postgres::Config,
    pool_size: usize,
    target: &str,
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
        .map_err(|e| StorageError(format!("postgres {target}: {e}")))?;
    let mut client = get(&pool, target).await?;
    migrate(&mut client, target).await?;
    Ok(pool)
}

/// Brings the schema to [`SCHEMA_VERSION`] in one transaction, under an
/// advisory lock: a second replica starting at the same time waits, then
/// finds the schema done.
async fn migrate(client: &mut deadpool_postgres::Object, target: &str) -> Result<(), StorageError> {
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
        return Err(StorageError(format!(
            "postgres {target}: schema version {version} is not a version this binary reads \
             (it reads up to {SCHEMA_VERSION}): a newer punct-referee wrote it"
        )));
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(step).await.map_err(|e| {
            let StorageError(text) = pg_error(target, e);
            StorageError(format!("{text} (migrating the schema from version {from})"))
        })?;
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

async fn writer_loop(
    pool: Pool,
    mut rx: mpsc::UnboundedReceiver<(Box<Write>, Reply)>,
    _alive: mpsc::Sender<()>,
    commits: Arc<AtomicU64>,
    target: String,
) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit_batch(&pool, &target, std::mem::take(&mut batch), &commits).await;
    }
}

/// Commits `writes` in one transaction and answers each once it has
/// committed. If any fails, the transaction is rolled back and each write
/// is retried alone in its own transaction, so one refused write fails
/// only itself; when the database is unreachable, all fail and none is
/// stored.
async fn commit_batch(
    pool: &Pool,
    target: &str,
    writes: Vec<(Box<Write>, Reply)>,
    commits: &AtomicU64,
) {
    if writes.is_empty() {
        return;
    }
    let started = Instant::now();
    let n = writes.len();
    let together = transact(pool, target, writes.iter().map(|(w, _)| &**w)).await;
    let mut transactions = 1;
    match together {
        Ok(()) => {
            for (_, reply) in writes {
                let _ = reply.send(Ok(()));
            }
        }
        Err(_) if n > 1 => {
            for (w, reply) in writes {
                transactions += 1;
                let _ = reply.send(transact(pool, target, std::iter::once(&*w)).await);
            }
        }
        Err(e) => {
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

/// Applies `writes` in one transaction and commits it.
async fn transact<'w>(
    pool: &Pool,
    target: &str,
    writes: impl Iterator<Item = &'w Write>,
) -> Result<(), StorageError> {
    let mut client = get(pool, target).await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| pg_error(target, e))?;
    for w in writes {
        apply(&tx, w, target).await?;
    }
    tx.commit().await.map_err(|e| pg_error(target, e))
}

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn nonzero(v: u64) -> Option<i64> {
    (v != 0).then(|| ms(v))
}

async fn apply(tx: &Transaction<'_>, write: &Write, target: &str) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    match write {
        Write::Tournament(row) => {
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
        }
        Write::Create(game, moves, end) => {
            let labels = serde_json::to_string(&game.labels)
                .map_err(|e| StorageError(format!("labels: {e}")))?;
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO games (id, game, variant, options, seed, seed_supplied,
                        clock_mode, clock_initial_ms, clock_increment_ms,
                        clock_per_move_ms, first_move_ms, labels, status, ply, created_at_ms,
                        updated_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb,
                        'in_progress', $13, $14, $14)",
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
                    &game.setup.map(|s| s.seed.to_vec()),
                    &game.setup.is_some_and(|s| s.supplied),
                    &game.clock.mode,
                    &nonzero(game.clock.initial_ms),
                    &nonzero(game.clock.increment_ms),
                    &nonzero(game.clock.per_move_ms),
                    &game.clock.first_move_ms.map(ms),
                    &labels,
                    &(moves.len() as i64),
                    &game.created_at_ms,
                ],
            )
            .await
            .map_err(err)?;
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
                apply_end(tx, end, target).await?;
            }
        }
        Write::Move(mv, end) => {
            // The game's row first: the update takes its lock, so a second
            // writer of the same ply waits here, then finds the ply moved
            // on and is refused; the (game, ply) key refuses it again.
            let stmt = tx
                .prepare_cached(
                    "UPDATE games SET ply = $2::bigint, draw_offers = $3, updated_at_ms = $4
                     WHERE id = $1 AND status = 'in_progress' AND ply = $2::bigint - 1",
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
                    ],
                )
                .await
                .map_err(err)?;
            if changed != 1 {
                return Err(StorageError(format!(
                    "postgres {target}: game `{}` is not stored in progress at ply {}",
                    mv.game_id,
                    mv.ply.saturating_sub(1)
                )));
            }
            insert_move(tx, mv, target).await?;
            if let Some(end) = end {
                apply_end(tx, end, target).await?;
            }
        }
        Write::DrawOffer { game_id, seats } => {
            let stmt = tx
                .prepare_cached(
                    "UPDATE games SET draw_offers = $2 WHERE id = $1 AND status = 'in_progress'",
                )
                .await
                .map_err(err)?;
            let changed = tx
                .execute(
                    &stmt,
                    &[game_id, &(!seats.is_empty()).then(|| seats_text(*seats))],
                )
                .await
                .map_err(err)?;
            if changed != 1 {
                return Err(no_such_game(target, game_id));
            }
        }
        Write::End(end) => apply_end(tx, end, target).await?,
    }
    Ok(())
}

fn no_such_game(target: &str, id: &str) -> StorageError {
    StorageError(format!(
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

async fn apply_end(tx: &Transaction<'_>, end: &EndRow, target: &str) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let stmt = tx
        .prepare_cached(
            "UPDATE games SET status = $2, winners = $3, reason = $4, ply = $5,
                finished_at_ms = $6, updated_at_ms = $6, draw_offers = NULL, scores = $7
             WHERE id = $1 AND status = 'in_progress'",
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
            ],
        )
        .await
        .map_err(err)?;
    if changed != 1 {
        return Err(no_such_game(target, &end.game_id));
    }
    Ok(())
}

fn bad_row(target: &str, what: String) -> StorageError {
    StorageError(format!("postgres {target}: stored {what}"))
}

/// The games `filter` (a `WHERE …` clause with its order and limit) picks,
/// with their seats, moves and ends (seats and moves of all of them read in
/// one query each).
async fn read_games(
    client: &tokio_postgres::Client,
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
                    reason, finished_at_ms
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
                seed: bytes.try_into().map_err(|_| bad("seed"))?,
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
            }
            .config()
            .unwrap_err();
            assert!(e.0.contains("not a PostgreSQL connection string"), "{e}");
            assert!(!e.0.contains("hunter2"), "{e}");
        }
        let o = PostgresOptions {
            url: "postgres://u:hunter2@db1:5433,db2/games".into(),
            pool_size: 1,
        };
        assert_eq!(o.target(), "db1:5433,db2:5432/games");
    }
}
