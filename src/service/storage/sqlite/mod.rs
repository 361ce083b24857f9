//! The default backend: an embedded SQLite database (WAL mode) in the data
//! directory, written by one thread that commits whatever writes are queued
//! together (group commit): while one transaction is being synced, the next
//! writes queue up and share the next transaction, so concurrent moves of
//! different games cost one sync, not one each. Schema, sync settings and
//! recovery: docs/STORAGE.md.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::{
    ArchiveQuery, ClockRow, Commit, EndRow, GameRow, MoveRow, SeatRow, ServerSecret, Storage,
    StorageError, StoredGame, Write, scores_of_text, scores_text, seats_of_text, seats_text,
};
use crate::games::{Seat, Setup};
use crate::service::telemetry;

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "referee.sqlite3";
/// The lock file that keeps a second server off the same data directory.
pub const LOCK_FILE: &str = "referee.lock";
/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 5;
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
}

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
        let dir = &options.dir;
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
            .spawn(move || writer_loop(conn, rx, &counter, &restart, &sealer))
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

/// The writer's connection: as [`open_connection`], with no checkpoints of
/// its own and the smaller page cache of [`WRITER_CACHE_KIB`].
fn writer_connection(
    path: &Path,
    options: &SqliteOptions,
    secret: &ServerSecret,
) -> Result<Connection, StorageError> {
    let conn = open_connection(path, options, secret)?;
    // The writer never checkpoints: a second connection copies the log
    // into the database in the background, so commits do not wait for it.
    // A log grown by a burst is cut back to 64 MiB when it restarts.
    conn.execute_batch(&format!(
        "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 67108864;
         PRAGMA cache_size = -{WRITER_CACHE_KIB};"
    ))
    .map_err(|e| sql_error(path, e))?;
    Ok(conn)
}

fn open_connection(
    path: &Path,
    options: &SqliteOptions,
    secret: &ServerSecret,
) -> Result<Connection, StorageError> {
    let err = |e| sql_error(path, e);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(err)?;
    // The first statements read the header: a file that is no database, or
    // a damaged one, fails here, at start, not at the first move.
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StorageError::Config(format!(
            "{}: cannot switch to WAL mode (got `{mode}`)",
            path.display()
        )));
    }
    // A 32 MiB page cache (allocated as used): the pages of the games in
    // play stay in memory instead of being read back from the OS. (The
    // writer's is smaller: see WRITER_CACHE_KIB.)
    conn.execute_batch(&format!(
        "PRAGMA synchronous={}; PRAGMA foreign_keys=ON; PRAGMA cache_size=-{CACHE_KIB};",
        options.sync.pragma()
    ))
    .map_err(err)?;
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(err)?;
    if check != "ok" {
        return Err(StorageError::Corrupt(format!(
            "{}: the database is damaged ({check}); restore a backup, or move it away to start empty",
            path.display()
        )));
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    match version {
        0..=3 => {
            match version {
                0 => conn.execute_batch(SCHEMA).map_err(err)?,
                1 => conn.execute_batch(MIGRATE_1_TO_2).map_err(err)?,
                _ => {}
            }
            if version < 3 {
                conn.execute_batch(MIGRATE_2_TO_3).map_err(err)?;
            }
            migrate_3_to_4(&conn, secret).map_err(err)?;
            migrate_4_to_5(&conn, secret).map_err(err)?;
        }
        4 | SCHEMA_VERSION => {
            let stored: String = conn
                .query_row("SELECT value FROM meta WHERE key = 'key_check'", [], |r| {
                    r.get(0)
                })
                .map_err(err)?;
            secret.verify(&stored, &path.display().to_string())?;
            if version == 4 {
                migrate_4_to_5(&conn, secret).map_err(err)?;
            }
        }
        v => {
            return Err(StorageError::Config(format!(
                "{}: schema version {v} is not the version {SCHEMA_VERSION} this binary reads",
                path.display()
            )));
        }
    }
    // Listing finished games and pruning them (added beside version 2: an
    // index changes no row, and a binary without it still reads the file).
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS games_by_creation ON games (status, created_at_ms, id);
         CREATE INDEX IF NOT EXISTS games_by_end ON games (status, finished_at_ms);",
    )
    .map_err(err)?;
    if let Some(max) = options.max_bytes {
        let page: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .map_err(err)?;
        let pages = (max / page.max(1) as u64).max(1);
        let _: i64 = conn
            .query_row(&format!("PRAGMA max_page_count={pages}"), [], |r| r.get(0))
            .map_err(err)?;
    }
    Ok(conn)
}

/// The schema of version 2 (a new file then takes [`MIGRATE_2_TO_3`]). Times are Unix milliseconds; seats are numbered
/// from 1 (seat lists are comma-separated numbers); see docs/STORAGE.md for
/// queries that print them as dates.
const SCHEMA: &str = "
BEGIN;
CREATE TABLE games (
    id                 TEXT PRIMARY KEY,
    game               TEXT NOT NULL,
    variant            TEXT NOT NULL,
    options            TEXT NOT NULL,
    clock_mode         TEXT NOT NULL,
    clock_initial_ms   INTEGER,
    clock_increment_ms INTEGER,
    clock_per_move_ms  INTEGER,
    first_move_ms      INTEGER,
    labels             TEXT NOT NULL,
    seed               TEXT,
    seed_supplied      INTEGER NOT NULL DEFAULT 0,
    status             TEXT NOT NULL CHECK (status IN ('in_progress', 'finished', 'expired')),
    winners            TEXT,
    scores             TEXT,
    reason             TEXT,
    ply                INTEGER NOT NULL,
    draw_offers        TEXT,
    created_at_ms      INTEGER NOT NULL,
    updated_at_ms      INTEGER NOT NULL,
    finished_at_ms     INTEGER
);
CREATE INDEX games_by_status ON games (status);
CREATE TABLE seats (
    game_id      TEXT NOT NULL REFERENCES games (id),
    seat         INTEGER NOT NULL,
    name         TEXT NOT NULL,
    token_sha256 TEXT NOT NULL,
    PRIMARY KEY (game_id, seat)
) WITHOUT ROWID;
CREATE TABLE moves (
    game_id      TEXT NOT NULL REFERENCES games (id),
    ply          INTEGER NOT NULL,
    seat         INTEGER NOT NULL,
    notation     TEXT NOT NULL,
    request_id   TEXT,
    clock_ms     INTEGER NOT NULL,
    played_at_ms INTEGER NOT NULL,
    PRIMARY KEY (game_id, ply)
) WITHOUT ROWID;
PRAGMA user_version = 2;
COMMIT;
";

/// From version 1 (two seats named white and black in columns of `games`)
/// to version 2 (a `seats` table, seat numbers, seat lists, the seed), in
/// one transaction: nothing stored is lost.
const MIGRATE_1_TO_2: &str = "
BEGIN;
CREATE TABLE seats (
    game_id      TEXT NOT NULL REFERENCES games (id),
    seat         INTEGER NOT NULL,
    name         TEXT NOT NULL,
    token_sha256 TEXT NOT NULL,
    PRIMARY KEY (game_id, seat)
) WITHOUT ROWID;
INSERT INTO seats SELECT id, 1, 'white', white_token_sha256 FROM games;
INSERT INTO seats SELECT id, 2, 'black', black_token_sha256 FROM games;
ALTER TABLE games ADD COLUMN seed TEXT;
ALTER TABLE games ADD COLUMN seed_supplied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE games ADD COLUMN winners TEXT;
ALTER TABLE games ADD COLUMN scores TEXT;
ALTER TABLE games ADD COLUMN draw_offers TEXT;
UPDATE games SET
    winners = CASE winner WHEN 'white' THEN '1' WHEN 'black' THEN '2' ELSE '' END,
    draw_offers = CASE draw_offer WHEN 'white' THEN '1' WHEN 'black' THEN '2' ELSE NULL END;
ALTER TABLE games DROP COLUMN white_token_sha256;
ALTER TABLE games DROP COLUMN black_token_sha256;
ALTER TABLE games DROP COLUMN winner;
ALTER TABLE games DROP COLUMN draw_offer;
UPDATE moves SET seat = CASE seat WHEN 'white' THEN 1 WHEN 'black' THEN 2 ELSE seat END;
PRAGMA user_version = 2;
COMMIT;
";

/// The version-2 schema, for the migration test.
#[cfg(test)]
pub(crate) const SCHEMA_2_FOR_TESTS: &str = SCHEMA;

/// From version 2 to version 3: the `tournaments` table (one row per
/// tournament, its state as a JSON document: docs/TOURNAMENTS.md). Adds a
/// table, changes no row.
const MIGRATE_2_TO_3: &str = "
BEGIN;
CREATE TABLE tournaments (
    id            TEXT PRIMARY KEY,
    status        TEXT NOT NULL,
    document      TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
PRAGMA user_version = 3;
COMMIT;
";

/// From version 3 to version 4, in one transaction: the `meta` table with
/// the server secret's key check value, every stored seed sealed with the
/// secret and the seat tokens of tournament documents sealed too (tokens
/// of games were always stored as SHA-256). A failure changes nothing; a
/// database at version 4 is never sealed twice.
fn migrate_3_to_4(conn: &Connection, secret: &ServerSecret) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        tx.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;",
        )?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('key_check', ?1)",
            [secret.check_value()],
        )?;
        let seeds: Vec<(String, String)> = tx
            .prepare("SELECT id, seed FROM games WHERE seed IS NOT NULL")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (id, seed) in seeds {
            let plain = unhex(&seed).ok_or_else(|| bad_row(format!("game `{id}`: bad seed")))?;
            tx.execute(
                "UPDATE games SET seed = ?2 WHERE id = ?1",
                params![id, hex(&secret.seal_seed(&id, &plain))],
            )?;
        }
        seal_documents(tx, secret)?;
        tx.execute_batch("PRAGMA user_version = 4;")
    })
}

/// From version 4 to version 5, in one transaction: the `forfeits` column
/// (set for the games a tournament made, which an older version told by
/// their `tournament_id` label), and the seeds of tournament documents
/// sealed ([`ServerSecret::seal_document`]).
fn migrate_4_to_5(conn: &Connection, secret: &ServerSecret) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        tx.execute_batch(
            "ALTER TABLE games ADD COLUMN forfeits INTEGER NOT NULL DEFAULT 0;
             UPDATE games SET forfeits = 1
                 WHERE json_extract(labels, '$.tournament_id') IS NOT NULL;",
        )?;
        seal_documents(tx, secret)?;
        tx.execute_batch("PRAGMA user_version = 5;")
    })?;
    // The plain values are gone from the tables; their old pages may still
    // be in the log and the free pages: write them over (VACUUM writes the
    // new file into the log: the second checkpoint copies it over the old).
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
}

/// Seals what tournament documents hold in the clear (see
/// [`ServerSecret::seal_document`]).
fn seal_documents(tx: &Connection, secret: &ServerSecret) -> rusqlite::Result<()> {
    let documents: Vec<(String, String)> = tx
        .prepare("SELECT id, document FROM tournaments")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, document) in documents {
        let sealed = secret
            .seal_document(&document)
            .map_err(|e| bad_row(format!("tournament `{id}`: {e}")))?;
        if let Some(sealed) = sealed {
            tx.execute(
                "UPDATE tournaments SET document = ?2 WHERE id = ?1",
                params![id, sealed],
            )?;
        }
    }
    Ok(())
}

/// Log frames (pages) past which the log is made to start over (see
/// [`checkpoint_loop`]): 16 MiB with 4 KiB pages.
const RESTART_LOG_FRAMES: i64 = 4096;

/// Copies the log into the database every 200 ms (PASSIVE: never blocks the
/// writer, skips what readers still need), and once more at the end.
///
/// A passive checkpoint never makes the log start over while commits keep
/// coming (the writer appends during each one, so the log is never wholly
/// copied when the next transaction begins): under steady load it grew
/// without bound (over 100 MiB in half a minute of `load`), every commit
/// appending to a longer file (new blocks for the filesystem to allocate
/// and zero). So when the log holds more than [`RESTART_LOG_FRAMES`] after a
/// passive checkpoint, this asks the writer (`restart`) to run a RESTART
/// checkpoint between two batches, when no transaction is open: it copies
/// what is left (little, just after a passive one) and the next commit
/// writes the log from its start again, over blocks already there
/// (docs/STORAGE.md, "Checkpoints"). Run from this thread instead, it
/// could not reliably find the writer between transactions.
fn checkpoint_loop(conn: &Connection, stop: &mpsc::Receiver<()>, restart: &AtomicBool) {
    loop {
        let stopping = !matches!(
            stop.recv_timeout(std::time::Duration::from_millis(200)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        // (busy, frames in the log, frames copied)
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1)) {
            Ok(log) if log > RESTART_LOG_FRAMES => restart.store(true, Ordering::Relaxed),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "storage checkpoint failed"),
        }
        if stopping {
            return;
        }
    }
}

/// The RESTART checkpoint [`checkpoint_loop`] asks for, run by the writer
/// between batches.
fn restart_log(conn: &Connection) {
    match conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0)) {
        Ok(0) => {}
        Ok(_) => tracing::debug!("storage log restart deferred: readers still on the log"),
        Err(e) => tracing::warn!(error = %e, "storage checkpoint (restart) failed"),
    }
}

fn writer_loop(
    mut conn: Connection,
    rx: mpsc::Receiver<Job>,
    commits: &AtomicU64,
    restart: &AtomicBool,
    secret: &ServerSecret,
) {
    let path = conn.path().map(PathBuf::from).unwrap_or_default();
    while let Ok(first) = rx.recv() {
        if restart.swap(false, Ordering::Relaxed) {
            restart_log(&conn);
        }
        let mut writes = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Write(w, reply) => writes.push((w, reply)),
                Job::Recover(reply) => {
                    // Reads see every write queued before them.
                    commit_batch(
                        &mut conn,
                        &path,
                        std::mem::take(&mut writes),
                        commits,
                        secret,
                    );
                    let _ = reply.send(
                        read_games(
                            &conn,
                            secret,
                            "WHERE status = 'in_progress' ORDER BY rowid",
                            &[],
                        )
                        .map_err(|e| sql_error(&path, e)),
                    );
                }
                Job::Prune(before, reply) => {
                    commit_batch(
                        &mut conn,
                        &path,
                        std::mem::take(&mut writes),
                        commits,
                        secret,
                    );
                    let _ =
                        reply.send(prune_batch(&mut conn, before).map_err(|e| sql_error(&path, e)));
                }
            }
            if writes.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        commit_batch(&mut conn, &path, writes, commits, secret);
    }
}

/// Commits `writes` in one transaction and answers each. If any fails, the
/// transaction is rolled back and each write is retried alone, so one bad
/// write fails only itself; a failed commit (disk full, read-only) fails
/// all of them, and none is stored.
fn commit_batch(
    conn: &mut Connection,
    path: &Path,
    writes: Vec<(Box<Write>, Reply)>,
    commits: &AtomicU64,
    secret: &ServerSecret,
) {
    if writes.is_empty() {
        return;
    }
    commits.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let n = writes.len();
    let together = in_transaction(conn, |tx| {
        for (w, _) in &writes {
            apply(tx, w, secret)?;
        }
        Ok(())
    });
    match together {
        Ok(()) => {
            for (_, reply) in writes {
                let _ = reply.send(Ok(()));
            }
        }
        Err(_) if n > 1 => {
            for (w, reply) in writes {
                let alone = in_transaction(conn, |tx| apply(tx, &w, secret));
                let _ = reply.send(alone.map_err(|e| sql_error(path, e)));
            }
        }
        Err(e) => {
            let e = sql_error(path, e);
            tracing::warn!(error = %e, "storage write failed");
            for (_, reply) in writes {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
    metrics::counter!(telemetry::STORAGE_COMMITS).increment(1);
    metrics::counter!(telemetry::STORAGE_WRITES).increment(n as u64);
    metrics::histogram!(telemetry::STORAGE_COMMIT_DURATION).record(started.elapsed().as_secs_f64());
}

/// Runs `body` in an immediate transaction and commits it, or rolls it
/// back if anything fails. Like rusqlite's `Transaction`, but `BEGIN` and
/// `COMMIT` are prepared once and kept: parsing them anew took a few
/// microseconds of every commit of the writer.
fn in_transaction(
    conn: &Connection,
    body: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let done = body(conn).and_then(|()| conn.prepare_cached("COMMIT")?.execute([]).map(drop));
    if done.is_err()
        && !conn.is_autocommit()
        && let Err(e) = conn.execute_batch("ROLLBACK")
    {
        tracing::warn!(error = %e, "storage rollback failed");
    }
    done
}

/// A statement that changed no row: the game it names is not stored or no
/// longer in progress.
fn no_such_game(id: &str) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(format!("no stored game `{id}` in progress").into())
}

fn apply(tx: &Connection, write: &Write, secret: &ServerSecret) -> rusqlite::Result<()> {
    match write {
        Write::Tournament(row) => {
            let now = super::unix_ms(std::time::SystemTime::now());
            tx.prepare_cached(
                "INSERT INTO tournaments (id, status, document, created_at_ms, updated_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET status = ?2, document = ?3, updated_at_ms = ?5",
            )?
            .execute(params![
                row.id,
                row.status,
                row.document,
                row.created_at_ms,
                now
            ])?;
        }
        Write::Create(game, moves, end) => {
            let labels = serde_json::to_string(&game.labels)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
            tx.prepare_cached(
                "INSERT INTO games (id, game, variant, options, seed, seed_supplied,
                    clock_mode, clock_initial_ms, clock_increment_ms,
                    clock_per_move_ms, first_move_ms, labels, status, ply, created_at_ms,
                    updated_at_ms, forfeits)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'in_progress', ?13,
                    ?14, ?14, ?15)",
            )?
            .execute(params![
                game.id,
                game.game,
                game.variant,
                game.options,
                // Sealed: the database alone reveals no deck.
                game.setup
                    .map(|s| hex(&secret.seal_seed(&game.id, &s.seed))),
                game.setup.is_some_and(|s| s.supplied),
                game.clock.mode,
                nonzero(game.clock.initial_ms),
                nonzero(game.clock.increment_ms),
                nonzero(game.clock.per_move_ms),
                game.clock.first_move_ms.map(|v| v as i64),
                labels,
                moves.len() as i64,
                game.created_at_ms,
                game.forfeits,
            ])?;
            for (i, seat) in game.seats.iter().enumerate() {
                tx.prepare_cached(
                    "INSERT INTO seats (game_id, seat, name, token_sha256)
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    game.id,
                    i as i64 + 1,
                    seat.name,
                    hex(&seat.token_sha256)
                ])?;
            }
            for mv in moves {
                insert_move(tx, mv)?;
            }
            if let Some(end) = end {
                apply_end(tx, end)?;
            }
        }
        Write::Move(mv, end) => {
            insert_move(tx, mv)?;
            let changed = tx
                .prepare_cached(
                    "UPDATE games SET ply = ?2, draw_offers = ?3, updated_at_ms = ?4
                     WHERE id = ?1 AND status = 'in_progress' AND ply = ?2 - 1",
                )?
                .execute(params![
                    mv.game_id,
                    mv.ply,
                    (!mv.draw_offers.is_empty()).then(|| seats_text(mv.draw_offers)),
                    mv.played_at_ms
                ])?;
            if changed != 1 {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    format!(
                        "game `{}` is not stored in progress at ply {}",
                        mv.game_id,
                        mv.ply.saturating_sub(1)
                    )
                    .into(),
                ));
            }
            if let Some(end) = end {
                apply_end(tx, end)?;
            }
        }
        Write::DrawOffer { game_id, seats } => {
            let changed = tx
                .prepare_cached(
                    "UPDATE games SET draw_offers = ?2 WHERE id = ?1 AND status = 'in_progress'",
                )?
                .execute(params![
                    game_id,
                    (!seats.is_empty()).then(|| seats_text(*seats))
                ])?;
            if changed != 1 {
                return Err(no_such_game(game_id));
            }
        }
        Write::End(end) => apply_end(tx, end)?,
    }
    Ok(())
}

fn insert_move(tx: &Connection, mv: &MoveRow) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO moves (game_id, ply, seat, notation, request_id, clock_ms, played_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        mv.game_id,
        mv.ply,
        mv.seat.number(),
        mv.notation,
        mv.request_id,
        mv.clock_ms as i64,
        mv.played_at_ms,
    ])?;
    Ok(())
}

fn apply_end(tx: &Connection, end: &EndRow) -> rusqlite::Result<()> {
    let changed = tx
        .prepare_cached(
            "UPDATE games SET status = ?2, winners = ?3, reason = ?4, ply = ?5,
                finished_at_ms = ?6, updated_at_ms = ?6, draw_offers = NULL, scores = ?7
             WHERE id = ?1 AND status = 'in_progress'",
        )?
        .execute(params![
            end.game_id,
            end.status,
            (end.status == "finished").then(|| seats_text(end.winners)),
            (!end.reason.is_empty()).then_some(end.reason.as_str()),
            end.ply,
            end.at_ms,
            (!end.scores.is_empty()).then(|| scores_text(&end.scores)),
        ])?;
    if changed != 1 {
        return Err(no_such_game(&end.game_id));
    }
    Ok(())
}

fn nonzero(v: u64) -> Option<i64> {
    (v != 0).then_some(v as i64)
}

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

fn bad_row(what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, what.into())
}

/// Deletes up to [`PRUNE_BATCH`] games that left play before `before`, with
/// their seats and moves, in one transaction.
fn prune_batch(conn: &mut Connection, before: i64) -> rusqlite::Result<u64> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let ids: Vec<String> = tx
        .prepare_cached(
            "SELECT id FROM games
             WHERE status IN ('finished', 'expired') AND finished_at_ms < ?1 LIMIT ?2",
        )?
        .query_map(params![before, PRUNE_BATCH as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in &ids {
        tx.prepare_cached("DELETE FROM moves WHERE game_id = ?1")?
            .execute([id])?;
        tx.prepare_cached("DELETE FROM seats WHERE game_id = ?1")?
            .execute([id])?;
        tx.prepare_cached("DELETE FROM games WHERE id = ?1")?
            .execute([id])?;
    }
    tx.commit()?;
    Ok(ids.len() as u64)
}

/// The games `filter` (a `WHERE …` clause with its order and limit) picks,
/// with their seats, moves and ends.
fn read_games(
    conn: &Connection,
    secret: &ServerSecret,
    filter: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<StoredGame>> {
    let mut games = Vec::new();
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, game, variant, options, seed, seed_supplied, clock_mode,
            clock_initial_ms, clock_increment_ms, clock_per_move_ms, first_move_ms, labels,
            draw_offers, created_at_ms, ply, status, winners, scores, reason, finished_at_ms,
            forfeits
         FROM games {filter}"
    ))?;
    let rows = stmt.query_map(params, |r| {
        let id: String = r.get(0)?;
        let setup = match r.get::<_, Option<String>>(4)? {
            None => None,
            Some(text) => Some(Setup {
                seed: secret.unseal_seed(
                    &id,
                    &unhex(&text).ok_or_else(|| bad_row(format!("game `{id}`: bad seed")))?,
                ),
                supplied: r.get(5)?,
            }),
        };
        let labels: String = r.get(11)?;
        let labels: BTreeMap<String, String> = serde_json::from_str(&labels)
            .map_err(|e| bad_row(format!("game `{id}`: labels: {e}")))?;
        let mode: String = r.get(6)?;
        let mode = match mode.as_str() {
            "none" => "none",
            "fischer" => "fischer",
            "per_move" => "per_move",
            other => return Err(bad_row(format!("game `{id}`: clock mode `{other}`"))),
        };
        let ms = |i: usize| -> rusqlite::Result<u64> {
            Ok(r.get::<_, Option<i64>>(i)?.unwrap_or(0).max(0) as u64)
        };
        let draw_offers: Option<String> = r.get(12)?;
        let draw_offers = seats_of_text(draw_offers.as_deref().unwrap_or(""))
            .map_err(|e| bad_row(format!("game `{id}`: draw offers: {e}")))?;
        let game = GameRow {
            id: id.clone(),
            game: r.get(1)?,
            variant: r.get(2)?,
            options: r.get(3)?,
            seats: Vec::new(),
            setup,
            clock: ClockRow {
                mode,
                initial_ms: ms(7)?,
                increment_ms: ms(8)?,
                per_move_ms: ms(9)?,
                first_move_ms: r.get::<_, Option<i64>>(10)?.map(|v| v.max(0) as u64),
            },
            labels,
            forfeits: r.get(20)?,
            created_at_ms: r.get(13)?,
        };
        let ply: i64 = r.get(14)?;
        let status: String = r.get(15)?;
        let end = match status.as_str() {
            "in_progress" => None,
            "finished" | "expired" => {
                let winners: Option<String> = r.get(16)?;
                let scores: Option<String> = r.get(17)?;
                Some(EndRow {
                    game_id: id.clone(),
                    status: if status == "finished" {
                        "finished"
                    } else {
                        "expired"
                    },
                    winners: seats_of_text(winners.as_deref().unwrap_or(""))
                        .map_err(|e| bad_row(format!("game `{id}`: winners: {e}")))?,
                    scores: scores_of_text(scores.as_deref().unwrap_or(""))
                        .map_err(|e| bad_row(format!("game `{id}`: scores: {e}")))?,
                    reason: r.get::<_, Option<String>>(18)?.unwrap_or_default(),
                    ply: u32::try_from(ply)
                        .map_err(|_| bad_row(format!("game `{id}`: ply {ply}")))?,
                    at_ms: r.get::<_, Option<i64>>(19)?.unwrap_or(0),
                })
            }
            other => return Err(bad_row(format!("game `{id}`: status `{other}`"))),
        };
        Ok((game, draw_offers, ply, end))
    })?;
    for row in rows {
        games.push(row?);
    }
    let mut out = Vec::with_capacity(games.len());
    let mut seats_stmt = conn.prepare_cached(
        "SELECT seat, name, token_sha256 FROM seats WHERE game_id = ?1 ORDER BY seat",
    )?;
    let mut moves_stmt = conn.prepare_cached(
        "SELECT ply, seat, notation, request_id, clock_ms, played_at_ms
         FROM moves WHERE game_id = ?1 ORDER BY ply",
    )?;
    for (mut game, draw_offers, ply, end) in games {
        let id = game.id.clone();
        game.seats = seats_stmt
            .query_map([&id], |r| {
                let text: String = r.get(2)?;
                Ok((
                    r.get::<_, i64>(0)?,
                    SeatRow {
                        name: r.get(1)?,
                        token_sha256: unhex(&text)
                            .ok_or_else(|| bad_row(format!("game `{id}`: bad token hash")))?,
                    },
                ))
            })?
            .enumerate()
            .map(|(i, row)| {
                let (number, seat) = row?;
                if number != i as i64 + 1 {
                    return Err(bad_row(format!("game `{id}`: seats are not 1, 2, …")));
                }
                Ok(seat)
            })
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let moves = moves_stmt
            .query_map([&id], |r| {
                Ok(MoveRow {
                    game_id: id.clone(),
                    ply: r.get(0)?,
                    seat: stored_seat(r.get(1)?)
                        .ok_or_else(|| bad_row(format!("game `{id}`: bad seat")))?,
                    notation: r.get(2)?,
                    request_id: r.get(3)?,
                    clock_ms: r.get::<_, i64>(4)?.max(0) as u64,
                    played_at_ms: r.get(5)?,
                    draw_offers: crate::games::SeatSet::EMPTY,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // Moves and the game's ply are written in one transaction: a
        // mismatch means the file was changed behind the server's back.
        if moves.len() as i64 != ply
            || moves
                .iter()
                .enumerate()
                .any(|(i, m)| m.ply as usize != i + 1)
        {
            return Err(bad_row(format!(
                "game `{id}`: {} stored moves do not make its ply {ply}",
                moves.len()
            )));
        }
        out.push(StoredGame {
            game,
            moves,
            draw_offers,
            end,
        });
    }
    Ok(out)
}

/// A stored seat number (an integer; a database migrated from version 1
/// may hold it as text).
fn stored_seat(value: rusqlite::types::Value) -> Option<Seat> {
    let number = match value {
        rusqlite::types::Value::Integer(n) => u32::try_from(n).ok()?,
        rusqlite::types::Value::Text(t) => t.parse().ok()?,
        _ => return None,
    };
    Seat::from_number(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_keeps_a_smaller_page_cache_than_the_readers() {
        let dir = super::super::conformance::tempdir();
        let options = SqliteOptions {
            dir: dir.clone(),
            sync: SyncMode::Normal,
            max_bytes: None,
        };
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(DB_FILE);
        let cache = |conn: &Connection| -> i64 {
            conn.query_row("PRAGMA cache_size", [], |r| r.get(0))
                .unwrap()
        };
        let secret = ServerSecret::random();
        let reader = open_connection(&path, &options, &secret).unwrap();
        let writer = writer_connection(&path, &options, &secret).unwrap();
        assert_eq!(cache(&reader), -i64::from(CACHE_KIB));
        assert_eq!(cache(&writer), -i64::from(WRITER_CACHE_KIB));
        let autocheckpoint: i64 = writer
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            autocheckpoint, 0,
            "the writer leaves checkpoints to the checkpointer"
        );
        drop((reader, writer));
        let _ = fs::remove_dir_all(dir);
    }
}
