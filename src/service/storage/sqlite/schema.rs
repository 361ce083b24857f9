//! The database file: opening a connection, the schema and its migrations.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use super::super::codec::{hex, unhex};
use super::super::{ServerSecret, StorageError};
use super::reads::bad_row;
use super::writer::in_transaction;
use super::{CACHE_KIB, SCHEMA_VERSION, SqliteOptions, WRITER_CACHE_KIB, sql_error};
/// The writer's connection: as [`open_connection`], with no checkpoints of
/// its own and the smaller page cache of [`WRITER_CACHE_KIB`].
pub(super) fn writer_connection(
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

pub(super) fn open_connection(
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
    migrate(&conn, path, secret)?;
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

/// Brings the database to [`SCHEMA_VERSION`], or checks that it is there
/// and was written with `secret`.
fn migrate(conn: &Connection, path: &Path, secret: &ServerSecret) -> Result<(), StorageError> {
    let err = |e| sql_error(path, e);
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
            migrate_3_to_4(conn, secret).map_err(err)?;
            migrate_4_to_5(conn, secret).map_err(err)?;
            migrate_5_to_6(conn).map_err(err)?;
            super::outbox::migrate_6_to_7(conn).map_err(err)?;
            migrate_7_to_8(conn).map_err(err)?;
            super::outbox::migrate_8_to_9(conn).map_err(err)?;
            migrate_9_to_10(conn).map_err(err)?;
            migrate_10_to_11(conn).map_err(err)?;
        }
        4..=SCHEMA_VERSION => {
            let stored: String = conn
                .query_row("SELECT value FROM meta WHERE key = 'key_check'", [], |r| {
                    r.get(0)
                })
                .map_err(err)?;
            secret.verify(&stored, &path.display().to_string())?;
            if version == 4 {
                migrate_4_to_5(conn, secret).map_err(err)?;
            }
            if version <= 5 {
                migrate_5_to_6(conn).map_err(err)?;
            }
            if version <= 6 {
                super::outbox::migrate_6_to_7(conn).map_err(err)?;
            }
            if version <= 7 {
                migrate_7_to_8(conn).map_err(err)?;
            }
            if version <= 8 {
                super::outbox::migrate_8_to_9(conn).map_err(err)?;
            }
            if version <= 9 {
                migrate_9_to_10(conn).map_err(err)?;
            }
            if version <= 10 {
                migrate_10_to_11(conn).map_err(err)?;
            }
        }
        v => {
            return Err(StorageError::Config(format!(
                "{}: schema version {v} is not the version {SCHEMA_VERSION} this binary reads",
                path.display()
            )));
        }
    }
    Ok(())
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

/// From version 5 to version 6, in one transaction: the move journal
/// (docs/STORAGE.md, "The move journal"). No row changes: a version-5
/// database has every move in `moves`.
fn migrate_5_to_6(conn: &Connection) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS journal (
                 seq          INTEGER PRIMARY KEY,
                 game_id      TEXT NOT NULL,
                 ply          INTEGER NOT NULL,
                 seat         INTEGER NOT NULL,
                 notation     TEXT NOT NULL,
                 request_id   TEXT,
                 clock_ms     INTEGER NOT NULL,
                 played_at_ms INTEGER NOT NULL,
                 draw_offers  TEXT
             );
             PRAGMA user_version = 6;",
        )
    })
}

/// From version 7 to version 8, in one transaction: the substitution mark
/// of a move a failure policy played for its seat (docs/POLICIES.md,
/// "Restarts"), on `moves` and on the journal. Every stored move is its
/// seat's own: a version-7 server kept no marks. A table that has the
/// column already keeps it (a journal made by this binary's version-6
/// step has not).
fn migrate_7_to_8(conn: &Connection) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        for table in ["moves", "journal"] {
            let has: bool = tx.query_row(
                &format!("SELECT EXISTS (SELECT 1 FROM pragma_table_info('{table}') WHERE name = 'substituted')"),
                [],
                |r| r.get(0),
            )?;
            if !has {
                tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN substituted TEXT;"))?;
            }
        }
        tx.execute_batch("PRAGMA user_version = 8;")
    })
}

/// From version 9 to version 10, in one transaction: why a failure policy
/// ended a game (`failure_ending`, docs/POLICIES.md "Restarts"). A game
/// ended by an older server has none. A table that has the column
/// already keeps it (a database set back to an older version by hand).
fn migrate_9_to_10(conn: &Connection) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        let has: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('games') WHERE name = 'failure_ending')",
            [],
            |r| r.get(0),
        )?;
        if !has {
            tx.execute_batch("ALTER TABLE games ADD COLUMN failure_ending TEXT;")?;
        }
        tx.execute_batch("PRAGMA user_version = 10;")
    })
}

/// From version 10 to version 11, in one transaction: the lag compensation
/// of a game's time control, and each move's latency ledger (what it was
/// charged, what it was credited for lag, its seat's round-trip estimate:
/// docs/LAG.md) on `moves` and on the journal. A move stored before was
/// credited nothing: it was charged its whole time, from the move times.
fn migrate_10_to_11(conn: &Connection) -> rusqlite::Result<()> {
    // A table that has a column already keeps it.
    let add = |tx: &Connection, table: &str, column: &str, kind: &str| {
        let has: bool = tx.query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM pragma_table_info('{table}') WHERE name = '{column}')"
            ),
            [],
            |r| r.get(0),
        )?;
        if !has {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind};"))?;
        }
        Ok::<_, rusqlite::Error>(())
    };
    in_transaction(conn, |tx| {
        add(tx, "games", "lag_max_per_move_ms", "INTEGER")?;
        add(tx, "games", "lag_quota_ms", "INTEGER")?;
        for table in ["moves", "journal"] {
            add(tx, table, "charged_ms", "INTEGER")?;
            add(tx, table, "compensated_ms", "INTEGER NOT NULL DEFAULT 0")?;
            add(tx, table, "lag_ms", "INTEGER")?;
        }
        // The time before a move: the previous move's, in `moves` or the
        // journal (the game's start for the first).
        tx.execute_batch(
            "UPDATE moves SET charged_ms = clock_ms - COALESCE(
                 (SELECT p.clock_ms FROM moves p
                  WHERE p.game_id = moves.game_id AND p.ply = moves.ply - 1), 0)
             WHERE charged_ms IS NULL;
             UPDATE journal SET charged_ms = clock_ms - COALESCE(
                 (SELECT p.clock_ms FROM journal p
                  WHERE p.game_id = journal.game_id AND p.ply = journal.ply - 1),
                 (SELECT p.clock_ms FROM moves p
                  WHERE p.game_id = journal.game_id AND p.ply = journal.ply - 1), 0)
             WHERE charged_ms IS NULL;",
        )?;
        tx.execute_batch("PRAGMA user_version = 11;")
    })
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

#[cfg(test)]
mod tests {
    use std::fs;

    use super::super::{DB_FILE, SyncMode};
    use super::*;

    #[test]
    fn the_writer_keeps_a_smaller_page_cache_than_the_readers() {
        let dir = super::super::super::conformance::tempdir();
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
