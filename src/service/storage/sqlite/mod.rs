//! The default backend: an embedded SQLite database (WAL mode) in the data
//! directory, written by one thread that commits whatever writes are queued
//! together (group commit): while one transaction is being synced, the next
//! writes queue up and share the next transaction, so concurrent moves of
//! different games cost one sync, not one each. Schema, sync settings and
//! recovery: docs/STORAGE.md.

mod journal;
mod outbox;
mod reads;
mod schema;
mod writer;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use rusqlite::Connection;
use tokio::sync::oneshot;

#[cfg(test)]
pub(crate) use self::journal::{FOLD_IDLE, FOLD_PER_GAME, FOLD_ROWS};
pub(crate) use self::journal::{FoldPolicy, MAX_FOLD_ROWS};
use self::reads::read_games;
use self::schema::{open_connection, writer_connection};
use self::writer::{checkpoint_loop, writer_loop};
use super::{ArchiveQuery, Commit, ServerSecret, Storage, StorageError, StoredGame, Write};

#[cfg(test)]
pub(crate) use self::schema::SCHEMA_2_FOR_TESTS;

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "referee.sqlite3";
/// The lock file that keeps a second server off the same data directory.
pub const LOCK_FILE: &str = "referee.lock";
/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 11;
/// Most writes in one transaction.
const MAX_BATCH: usize = 1024;
/// The writer's page cache, in KiB (2048 pages of 4 KiB). Every commit
/// whose inserts split a page scans the writer's whole page cache: SQLite
/// renumbers the pages of a split through a page number past 1 GiB, and
/// the cache then drops "pages beyond the end" by walking every page it
/// holds. With the 32 MiB cache of the other connections, a writer whose
/// cache had filled spent 5–6 µs of every move on that walk at 256
/// concurrent games; 8 MiB still holds the pages of the games in play
/// (docs/STORAGE.md "The writer's page cache", docs/BENCHMARKS.md).
const WRITER_CACHE_KIB: u32 = 8192;
/// The page cache of the other connections, in KiB (allocated as used).
const CACHE_KIB: u32 = 32768;
/// Most games one pruning transaction deletes (the writer takes other
/// writes between two).
const PRUNE_BATCH: usize = 256;

/// How hard each commit is synced to disk (SQLite's `synchronous` in WAL
/// mode; docs/STORAGE.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SyncMode {
    /// Every commit is synced (fsync of the log): survives power loss.
    Full,
    /// The log is synced at checkpoints only: survives a crash of the
    /// process, may lose the last commits on power loss or an OS crash.
    #[default]
    Normal,
    /// Never synced by the database: survives a crash of the process only.
    Off,
}

impl SyncMode {
    fn pragma(self) -> &'static str {
        match self {
            SyncMode::Full => "FULL",
            SyncMode::Normal => "NORMAL",
            SyncMode::Off => "OFF",
        }
    }
}

/// How to open the database.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// The data directory (created if missing).
    pub dir: PathBuf,
    /// The sync setting.
    pub sync: SyncMode,
    /// A cap on the database size in bytes: past it, writes fail as on a
    /// full disk (`None`: no cap but the disk's).
    pub max_bytes: Option<u64>,
}

type Reply = oneshot::Sender<Result<(), StorageError>>;

enum Job {
    Write(Box<Write>, Reply),
    Recover(mpsc::Sender<Result<Vec<StoredGame>, StorageError>>),
    /// One batch of pruning: games that ended before the time, at most
    /// [`PRUNE_BATCH`]; answers how many were deleted.
    Prune(i64, mpsc::Sender<Result<u64, StorageError>>),
    /// Work on the writer's connection between two batches (the webhook
    /// outbox's calls, [`outbox`]); it answers by itself.
    Run(RunJob),
}

/// Work [`Job::Run`] does on the writer's connection.
type RunJob = Box<dyn FnOnce(&mut Connection, &ServerSecret) + Send>;

/// The SQLite backend (see the module docs).
#[derive(Debug)]
pub struct SqliteStorage {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Mutex<Option<thread::JoinHandle<()>>>,
    checkpointer: Mutex<Option<(mpsc::Sender<()>, thread::JoinHandle<()>)>>,
    /// A connection of its own for reads of finished games (WAL: readers
    /// see every committed write and never wait for the writer).
    reader: Mutex<Connection>,
    path: PathBuf,
    sync: SyncMode,
    /// Transactions committed so far.
    commits: Arc<AtomicU64>,
    /// What seeds are sealed with (docs/STORAGE.md, "The server secret").
    secret: ServerSecret,
    /// Held while the storage lives: the directory's owner lock.
    _lock: File,
}

impl SqliteStorage {
    /// Opens (or creates) the database in `options.dir`, checks it and
    /// starts the writer thread. Fails with a readable message when the
    /// directory cannot be written, another server holds it, or the file is
    /// not a sound database of this schema.
    ///
    /// The server secret is the file [`SECRET_FILE`](super::secret::SECRET_FILE)
    /// of the directory, created at the first start.
    pub fn open(options: &SqliteOptions) -> Result<SqliteStorage, StorageError> {
        SqliteStorage::open_with_secret(options, None)
    }

    /// [`SqliteStorage::open`] with the server secret read from (or created
    /// at) `secret_file` when given, else from the data directory. A
    /// database written with another secret is refused.
    pub fn open_with_secret(
        options: &SqliteOptions,
        secret_file: Option<&Path>,
    ) -> Result<SqliteStorage, StorageError> {
        SqliteStorage::open_folding(options, secret_file, FoldPolicy::from_env())
    }

    /// [`SqliteStorage::open_with_secret`], its move journal folded as
    /// `policy` says (docs/STORAGE.md, "The move journal").
    pub(crate) fn open_folding(
        options: &SqliteOptions,
        secret_file: Option<&Path>,
        policy: FoldPolicy,
    ) -> Result<SqliteStorage, StorageError> {
        let dir = &options.dir;
        let lock = lock_directory(dir)?;
        let secret = match secret_file {
            Some(file) => ServerSecret::load_or_create(file)?,
            None => ServerSecret::load_or_create(&dir.join(super::secret::SECRET_FILE))?,
        };
        let path = dir.join(DB_FILE);
        let conn = writer_connection(&path, options, &secret)?;
        let checkpoints = open_connection(&path, options, &secret)?;
        let reader = open_connection(&path, options, &secret)?;
        let (stop_checkpoints, stopped) = mpsc::channel::<()>();
        let restart = Arc::new(AtomicBool::new(false));
        let restart_asked = restart.clone();
        let checkpointer = thread::Builder::new()
            .name("storage-checkpoint".into())
            .spawn(move || checkpoint_loop(&checkpoints, &stopped, &restart_asked))
            .map_err(|e| {
                StorageError::Unavailable(format!("cannot start the checkpointer: {e}"))
            })?;
        let (tx, rx) = mpsc::channel::<Job>();
        let commits = Arc::new(AtomicU64::new(0));
        let counter = commits.clone();
        let sealer = secret.clone();
        let writer = thread::Builder::new()
            .name("storage-writer".into())
            .spawn(move || writer_loop(conn, rx, &counter, &restart, &sealer, policy))
            .map_err(|e| {
                StorageError::Unavailable(format!("cannot start the storage writer: {e}"))
            })?;
        Ok(SqliteStorage {
            jobs: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            checkpointer: Mutex::new(Some((stop_checkpoints, checkpointer))),
            reader: Mutex::new(reader),
            path,
            sync: options.sync,
            commits,
            secret,
            _lock: lock,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sync setting in force.
    pub fn sync(&self) -> SyncMode {
        self.sync
    }

    /// Transactions committed so far (fewer than writes when writes are
    /// grouped).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    fn send(&self, job: Job) -> bool {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }
}

impl Drop for SqliteStorage {
    /// Lets the writer finish the queued writes, then joins it and the
    /// checkpointer (which checkpoints once more on its way out).
    fn drop(&mut self) {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = handle.join();
        }
        let checkpointer = self
            .checkpointer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((stop, handle)) = checkpointer {
            drop(stop);
            let _ = handle.join();
        }
    }
}

impl Storage for SqliteStorage {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn durable(&self) -> bool {
        true
    }

    fn secret(&self) -> &ServerSecret {
        &self.secret
    }

    fn webhooks(&self) -> Option<&dyn super::outbox::WebhookStore> {
        Some(self)
    }

    fn write(&self, write: Write) -> Commit {
        let (tx, rx) = oneshot::channel();
        if !self.send(Job::Write(Box::new(write), tx)) {
            return Commit::ready(Err(StorageError::Unavailable(
                "the storage writer has stopped".into(),
            )));
        }
        Commit::waiting(rx)
    }

    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        let (tx, rx) = mpsc::channel();
        if !self.send(Job::Recover(tx)) {
            return Err(StorageError::Unavailable(
                "the storage writer has stopped".into(),
            ));
        }
        rx.recv()
            .map_err(|_| StorageError::Unavailable("the storage writer has stopped".into()))?
    }

    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let conn = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        let mut games = read_games(
            &conn,
            &self.secret,
            "WHERE id = ?1",
            &[&id as &dyn rusqlite::ToSql],
        )
        .map_err(|e| sql_error(&self.path, e))?;
        Ok(games.pop())
    }

    fn list_finished(&self, query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError> {
        let (after_ms, after_id) = query
            .after
            .as_ref()
            .map_or((i64::MIN, ""), |k| (k.created_at_ms, k.id.as_str()));
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let mut filter =
            String::from("WHERE status = 'finished' AND (created_at_ms, id) > (?1, ?2)");
        let mut params: Vec<&dyn rusqlite::ToSql> = vec![&after_ms, &after_id, &limit];
        for (i, (k, v)) in query.labels.iter().enumerate() {
            filter.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM json_each(games.labels) WHERE key = ?{} AND value = ?{})",
                4 + 2 * i,
                5 + 2 * i
            ));
            params.push(k);
            params.push(v);
        }
        filter.push_str(" ORDER BY created_at_ms, id LIMIT ?3");
        let conn = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        read_games(&conn, &self.secret, &filter, &params).map_err(|e| sql_error(&self.path, e))
    }

    fn tournaments(&self) -> Result<Vec<super::TournamentRow>, StorageError> {
        let conn = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        let read = || -> rusqlite::Result<Vec<super::TournamentRow>> {
            let mut statement = conn.prepare_cached(
                "SELECT id, status, document, created_at_ms FROM tournaments
                 ORDER BY created_at_ms, id",
            )?;
            let rows = statement.query_map([], |r| {
                Ok(super::TournamentRow {
                    id: r.get(0)?,
                    status: r.get(1)?,
                    document: r.get(2)?,
                    created_at_ms: r.get(3)?,
                })
            })?;
            rows.collect()
        };
        read().map_err(|e| sql_error(&self.path, e))
    }

    fn prune(&self, ended_before_ms: i64) -> Result<u64, StorageError> {
        let mut total = 0;
        loop {
            let (tx, rx) = mpsc::channel();
            if !self.send(Job::Prune(ended_before_ms, tx)) {
                return Err(StorageError::Unavailable(
                    "the storage writer has stopped".into(),
                ));
            }
            let n = rx.recv().map_err(|_| {
                StorageError::Unavailable("the storage writer has stopped".into())
            })??;
            total += n;
            if n < PRUNE_BATCH as u64 {
                return Ok(total);
            }
        }
    }
}

/// Creates the data directory `dir` if missing and takes its owner lock
/// (held while the returned file is open).
fn lock_directory(dir: &Path) -> Result<File, StorageError> {
    fs::create_dir_all(dir).map_err(|e| {
        StorageError::Config(format!(
            "cannot create the data directory {}: {e}",
            dir.display()
        ))
    })?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| {
            StorageError::Config(format!(
                "cannot write in the data directory {} ({e}): is it read-only?",
                dir.display()
            ))
        })?;
    lock.try_lock().map_err(|_| {
        StorageError::Config(format!(
            "the data directory {} is in use by another punct-referee (lock file {})",
            dir.display(),
            lock_path.display()
        ))
    })?;
    Ok(lock)
}

fn sql_error(path: &Path, e: rusqlite::Error) -> StorageError {
    use rusqlite::ErrorCode;
    let hint = match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => {
            " (the file is not an SQLite database: move it away to start empty, or restore a backup)"
        }
        Some(ErrorCode::DatabaseCorrupt) => {
            " (the database is damaged: restore a backup, or move it away to start empty)"
        }
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) => {
            " (is the data directory read-only?)"
        }
        Some(ErrorCode::DiskFull) => " (the disk, or the configured size cap, is full)",
        Some(ErrorCode::DatabaseBusy) => " (another process holds the database)",
        _ => "",
    };
    let message = format!("{}: {e}{hint}", path.display());
    match (&e, e.sqlite_error_code()) {
        (_, Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt))
        | (rusqlite::Error::FromSqlConversionFailure(..), _) => StorageError::Corrupt(message),
        // What the writes refuse ([`no_such_game`], a ply already taken).
        (rusqlite::Error::ToSqlConversionFailure(..), _) => StorageError::Conflict(message),
        _ => StorageError::Unavailable(message),
    }
}
