//! The schema: its versions, the migrations between them under an
//! advisory lock, and the pool once the schema is current.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Transaction};
use tokio_postgres::NoTls;

use super::super::{ServerSecret, StorageError};
use super::reads::bad_row;
use super::{CONNECT_TIMEOUT, SCHEMA_VERSION, get, pg_error};

/// The key of the advisory lock under which the schema is created or
/// migrated, so that replicas starting together do it once.
const SCHEMA_LOCK: i64 = 0x7075_6e63_7472_6566; // "punctref"

/// The migrations, in order: `MIGRATIONS[v]` takes the schema from version
/// `v` to `v + 1` (version 0 is an empty database). Each runs in the
/// transaction that records the new version, so a failed one changes
/// nothing.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    SCHEMA_1,
    SCHEMA_2,
    SCHEMA_3,
    SCHEMA_4,
    SCHEMA_5,
    SCHEMA_6,
    super::outbox::SCHEMA_7,
    SCHEMA_8,
    super::outbox::SCHEMA_9,
    super::journal::SCHEMA_10,
    SCHEMA_11,
    SCHEMA_12,
];

/// Version 11: why a failure policy ended a game (`failure_ending`,
/// docs/POLICIES.md "Restarts"). A game ended by an older server has
/// none.
const SCHEMA_11: &str = r#"
ALTER TABLE games ADD COLUMN IF NOT EXISTS failure_ending TEXT;
"#;

/// Version 12: the lag compensation of a game's time control, and each
/// move's latency ledger (what it was charged, what it was credited for
/// lag, its seat's round-trip estimate: docs/LAG.md), on `moves` and on
/// the journal. A move stored before
/// was credited nothing: it was charged its whole time, from the move
/// times.
const SCHEMA_12: &str = r#"
ALTER TABLE games ADD COLUMN IF NOT EXISTS lag_max_per_move_ms BIGINT;
ALTER TABLE games ADD COLUMN IF NOT EXISTS lag_quota_ms BIGINT;
ALTER TABLE moves ADD COLUMN IF NOT EXISTS charged_ms BIGINT;
ALTER TABLE moves ADD COLUMN IF NOT EXISTS compensated_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE moves ADD COLUMN IF NOT EXISTS lag_ms BIGINT;
UPDATE moves m SET charged_ms = m.clock_ms - COALESCE(
    (SELECT p.clock_ms FROM moves p WHERE p.game_id = m.game_id AND p.ply = m.ply - 1), 0)
WHERE m.charged_ms IS NULL;
ALTER TABLE journal ADD COLUMN IF NOT EXISTS charged_ms BIGINT;
ALTER TABLE journal ADD COLUMN IF NOT EXISTS compensated_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE journal ADD COLUMN IF NOT EXISTS lag_ms BIGINT;
UPDATE journal j SET charged_ms = j.clock_ms - COALESCE(
    (SELECT p.clock_ms FROM journal p WHERE p.game_id = j.game_id AND p.ply = j.ply - 1),
    (SELECT p.clock_ms FROM moves p WHERE p.game_id = j.game_id AND p.ply = j.ply - 1), 0)
WHERE j.charged_ms IS NULL;
"#;

/// Version 8: the substitution mark of a move a failure policy played for
/// its seat (docs/POLICIES.md, "Restarts"). Every stored move is its
/// seat's own: a version-7 server kept no marks. A table that has the
/// column already keeps it.
const SCHEMA_8: &str = r#"
ALTER TABLE moves ADD COLUMN IF NOT EXISTS substituted TEXT;
"#;

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

/// The pool, once the schema is at [`SCHEMA_VERSION`].
pub(super) async fn connect(
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
