//! Leases (docs/CLUSTER.md "Leases", docs/TOURNAMENTS.md "In a cluster"):
//! the right of one replica to write one game or one tournament. Whatever
//! is leased ([`Leased`]), its row names its owner's node id, the lease's
//! epoch and when the lease expires; one mechanism takes a lease over
//! (raising the epoch, which fences the previous owner's writes), renews
//! it, claims the ones a replica held before a restart, finds the orphans
//! of a replica that is gone, and gives them all up when the replica stops.
//!
//! What differs between the kinds is data, not code: the table, which
//! statuses are still open, and whether the owner's registration in
//! `nodes` keeps the lease running. A game's lease runs while its owner is
//! registered (one upsert per heartbeat renews the leases of every game a
//! replica owns: [`PostgresStorage::heartbeat`]); a tournament's is
//! renewed on its own row ([`PostgresStorage::renew_held`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool_postgres::{Pool, Transaction};

use super::super::{ServerSecret, StorageError, StoredGame, TournamentRow};
use super::reads::{read_games, tournament_row};
use super::{CONFLICT_RETRIES, Failed, PostgresStorage, get, pg_error};
use crate::service::telemetry;

/// What a lease is held on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Leased {
    /// A game in progress (table `games`).
    Game,
    /// An open tournament: registering or running (table `tournaments`).
    Tournament,
}

impl Leased {
    /// Both kinds.
    pub const ALL: [Leased; 2] = [Leased::Game, Leased::Tournament];

    /// The table of its rows.
    fn table(self) -> &'static str {
        match self {
            Leased::Game => "games",
            Leased::Tournament => "tournaments",
        }
    }

    /// The condition (on its row's `status`) under which it has an owner
    /// that matters: it may still change.
    fn open(self) -> &'static str {
        match self {
            Leased::Game => "status = 'in_progress'",
            Leased::Tournament => "status IN ('registering', 'running')",
        }
    }

    /// Whether its lease runs while its owner is registered in `nodes`
    /// (whatever the expiry on its row), so that a takeover also waits for
    /// the owner's registration to expire.
    fn registration_is_lease(self) -> bool {
        matches!(self, Leased::Game)
    }

    /// How long a takeover waits for its row's lock before leaving it to
    /// the next sweep (`None`: as long as the lock is held). A game's row
    /// is locked by each of its owner's commits ([`TAKEOVER_LOCK_WAIT`]).
    fn lock_wait(self) -> Option<Duration> {
        match self {
            Leased::Game => Some(TAKEOVER_LOCK_WAIT),
            Leased::Tournament => None,
        }
    }

    /// What a takeover returns beside the epoch and id: for a game, how
    /// long its turn has run (milliseconds, by the database's clock); for
    /// a tournament, its stored row.
    fn taken_columns(self) -> &'static str {
        match self {
            Leased::Game => {
                // The last event: the row's, or the game's last journaled
                // move's (docs/STORAGE.md, "The move journal").
                "(EXTRACT(EPOCH FROM (now() - COALESCE(GREATEST(turn_started_at,
                    (SELECT max(j.at) FROM journal j WHERE j.game_id = games.id)), now())))
                    * 1000)::bigint"
            }
            Leased::Tournament => "status, document, created_at_ms",
        }
    }

    /// The error of a write refused because this replica no longer owns
    /// `id`.
    pub(super) fn fenced(self, id: &str, why: &str) -> StorageError {
        match self {
            Leased::Game => StorageError::fenced(id, why),
            Leased::Tournament => StorageError::fenced_tournament(id, why),
        }
    }

    /// The owner and epoch stored on `id` (`None`: not stored).
    pub(super) async fn holder(
        self,
        tx: &Transaction<'_>,
        id: &str,
    ) -> Result<Option<(Option<String>, i64)>, tokio_postgres::Error> {
        let sql = format!("SELECT owner, epoch FROM {} WHERE id = $1", self.table());
        let row = tx.query_opt(&sql, &[&id]).await?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    /// The fenced error of a write of `id` made under `epoch` while the
    /// row names `owner` at epoch `now` (`now` below zero: not stored);
    /// counted in the fenced writes' metric.
    pub(super) fn fenced_by(
        self,
        id: &str,
        owner: Option<&str>,
        now: i64,
        epoch: i64,
    ) -> StorageError {
        metrics::counter!(telemetry::CLUSTER_FENCED_WRITES).increment(1);
        let why = if now < 0 {
            format!("not stored, this replica held epoch {epoch}")
        } else {
            format!(
                "epoch {now} of {}, this replica held {epoch}",
                owner.unwrap_or("no owner")
            )
        };
        self.fenced(id, &why)
    }
}

/// This replica's identity in the database and the leases it holds: the
/// epoch of each game it owns, which every write of that game names
/// (fencing, docs/CLUSTER.md).
#[derive(Debug)]
pub(crate) struct Node {
    pub(super) id: String,
    /// Random per process: tells this process from an earlier one (or a
    /// misconfigured twin) with the same node id.
    pub(super) boot: String,
    pub(super) lease: Duration,
    /// Game id → the epoch of the lease held on it.
    pub(super) leases: Mutex<HashMap<String, i64>>,
    /// Until when the leases are surely still ours by this process's clock:
    /// the start of the last successful renewal plus the lease. A replica
    /// that was paused past it stops answering for its games until a renewal
    /// says which it still holds.
    pub(super) valid_until: Mutex<Option<Instant>>,
    /// Games a commit of which may or may not have landed (its answer was
    /// lost): their copies are to be read again from the database before
    /// they are served ([`PostgresStorage::take_uncertain`]).
    pub(super) uncertain: Mutex<std::collections::HashSet<String>>,
    /// What seeds are sealed with (docs/STORAGE.md, "The server secret").
    pub(super) secret: ServerSecret,
}

impl Node {
    /// This replica as `options` name it, holding no lease yet.
    pub(super) fn new(options: &super::PostgresOptions, secret: ServerSecret) -> Node {
        Node {
            id: if options.node_id.is_empty() {
                super::default_node_id()
            } else {
                options.node_id.clone()
            },
            boot: crate::service::sessions::Token::random().to_string(),
            lease: options.lease,
            leases: Mutex::new(HashMap::new()),
            valid_until: Mutex::new(None),
            uncertain: Mutex::new(std::collections::HashSet::new()),
            secret,
        }
    }

    pub(super) fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    pub(super) fn epoch(&self, game_id: &str) -> Option<i64> {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(game_id)
            .copied()
    }

    pub(super) fn hold(&self, game_id: &str, epoch: i64) {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(game_id.to_string(), epoch);
    }

    pub(super) fn forget(&self, game_id: &str) {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(game_id);
    }

    /// A commit of `game_id`'s write may or may not have landed: the lease
    /// is forgotten (so the game is not served from its copy without asking
    /// the database) and the game is listed to be read again.
    pub(super) fn unsure(&self, game_id: &str) {
        self.forget(game_id);
        self.uncertain
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(game_id.to_string());
    }

    /// The epoch of this node's lease on `id` (a game: `kind` says), or
    /// the fenced error: a write of something whose lease this node does
    /// not hold is refused before it reaches the database.
    pub(super) fn fence(
        &self,
        kind: Leased,
        id: &str,
        epoch: Option<i64>,
    ) -> Result<i64, StorageError> {
        epoch
            .or_else(|| self.epoch(id))
            .ok_or_else(|| kind.fenced(id, "this replica holds no lease on it"))
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

impl PostgresStorage {
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

    /// Who owns `id` of `kind` (`None`: not stored); `in_progress` means
    /// open: an ended one has no owner that matters.
    pub async fn ownership(
        &self,
        kind: Leased,
        id: &str,
    ) -> Result<Option<Ownership>, StorageError> {
        let id = id.to_string();
        let live = if kind.registration_is_lease() {
            "COALESCE(t.lease_expires_at > now(), FALSE) OR COALESCE(n.expires_at > now(), FALSE)"
        } else {
            "COALESCE(t.lease_expires_at > now(), FALSE)"
        };
        let sql = format!(
            "SELECT t.owner, n.address, {live}, t.{open}, COALESCE(n.expires_at > now(), FALSE)
             FROM {table} t LEFT JOIN nodes n ON n.node_id = t.owner
             WHERE t.id = $1",
            open = kind.open(),
            table = kind.table(),
        );
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(&sql, &[&id])
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
            let Some(row) = take_lease(&mut client, &target, &node, Leased::Game, &id).await?
            else {
                return Ok(None);
            };
            let epoch: i64 = row.get(0);
            let since: i64 = row.get(2);
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

    /// Takes tournament `id` over if it is open and its lease has expired
    /// (or it has no owner, or this node owned it before a restart): one
    /// replica wins, raising the epoch, which fences the previous owner's
    /// writes. Its new epoch and stored row; `None`: the lease runs, or it
    /// is not open.
    pub async fn take_over_tournament(
        &self,
        id: &str,
    ) -> Result<Option<(i64, TournamentRow)>, StorageError> {
        let id = id.to_string();
        self.run(|pool, target, node| async move {
            let mut client = get(&pool, &target).await?;
            let row = take_lease(&mut client, &target, &node, Leased::Tournament, &id).await?;
            Ok(row.map(|r| (r.get::<_, i64>("epoch"), tournament_row(&r))))
        })
        .await
    }

    /// Renews this node's lease of epoch `epoch` on `id` of `kind` alone
    /// (it ran out while the database was unreachable, and nobody took
    /// it): true when it is still that lease, which then runs again.
    pub async fn renew(&self, kind: Leased, id: &str, epoch: i64) -> Result<bool, StorageError> {
        let id = id.to_string();
        let sql = format!(
            "UPDATE {} SET lease_expires_at = now() + $4::float8 * interval '1 millisecond'
             WHERE id = $1 AND owner = $2 AND epoch = $3 AND {}",
            kind.table(),
            kind.open()
        );
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let n = client
                .execute(&sql, &[&id, &node.id, &epoch, &(node.lease_ms() as f64)])
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(n == 1)
        })
        .await
    }

    /// Renews this node's leases of `held` (the id and epoch of each one
    /// of `kind` this replica holds, a kind whose lease is renewed on its
    /// row), and says which of them another replica took meanwhile: those
    /// are to be dropped. One ended by this node is not lost. A failure
    /// changes nothing.
    pub async fn renew_held(
        &self,
        kind: Leased,
        held: Vec<(String, i64)>,
    ) -> Result<Vec<String>, StorageError> {
        self.run(|pool, target, node| async move {
            if held.is_empty() {
                return Ok(Vec::new());
            }
            let client = get(&pool, &target).await?;
            renew_rows(&client, &target, &node, kind, &held).await
        })
        .await
    }

    /// Up to `limit` open ones of `kind` whose lease has expired (or that
    /// have no owner), longest expired first. For a kind whose lease is
    /// the registration, only those whose owner is no longer registered
    /// (it died or was cut off): a live owner's lapsed lease (the database
    /// was away) is its own to renew.
    pub async fn orphans(&self, kind: Leased, limit: i64) -> Result<Vec<String>, StorageError> {
        let owner_gone = if kind.registration_is_lease() {
            "AND (n.expires_at IS NULL OR n.expires_at < now())"
        } else {
            ""
        };
        let sql = format!(
            "SELECT t.id FROM {table} t LEFT JOIN nodes n ON n.node_id = t.owner
             WHERE t.{open}
                AND (t.owner IS NULL OR t.lease_expires_at IS NULL
                     OR t.lease_expires_at < now())
                {owner_gone}
             ORDER BY t.lease_expires_at NULLS FIRST LIMIT $1",
            table = kind.table(),
            open = kind.open(),
        );
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(&sql, &[&limit])
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

    /// The open tournaments this node owned (before a restart) or that
    /// have no owner, each taken with a new epoch, oldest first: what a
    /// replica resumes at start. The others are their owners' until their
    /// leases expire.
    pub async fn recover_tournaments(&self) -> Result<Vec<(i64, TournamentRow)>, StorageError> {
        self.run(|pool, target, node| async move {
            let client = get(&pool, &target).await?;
            let rows = claim_all(&client, &target, &node, Leased::Tournament).await?;
            let mut taken: Vec<(i64, TournamentRow)> = rows
                .iter()
                .map(|r| (r.get::<_, i64>("epoch"), tournament_row(r)))
                .collect();
            taken.sort_by(|a, b| (a.1.created_at_ms, &a.1.id).cmp(&(b.1.created_at_ms, &b.1.id)));
            Ok(taken)
        })
        .await
    }
}

/// Takes the lease of `id` of `kind` if it is open and its lease has
/// expired (for a kind whose lease is the registration, the owner's
/// registration too), or it has no owner, or this node owned it before a
/// restart, raising the epoch. The row returned holds the new epoch, the
/// id and the kind's [`Leased::taken_columns`]; `None`: the lease runs,
/// it is not open, or its row stayed locked past [`Leased::lock_wait`].
async fn take_lease(
    client: &mut deadpool_postgres::Object,
    target: &str,
    node: &Node,
    kind: Leased,
    id: &str,
) -> Result<Option<tokio_postgres::Row>, StorageError> {
    let err = |e| pg_error(target, e);
    let tx = client.transaction().await.map_err(err)?;
    if let Some(wait) = kind.lock_wait() {
        tx.batch_execute(&format!("SET LOCAL lock_timeout = {}", wait.as_millis()))
            .await
            .map_err(err)?;
    }
    let row = tx
        .query_opt(
            &take_lease_sql(kind),
            &[&id, &node.id, &(node.lease_ms() as f64)],
        )
        .await;
    let row = match row {
        Ok(row) => row,
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {
            tracing::debug!(id, ?kind, "takeover: the row is locked; later");
            return Ok(None);
        }
        Err(e) => return Err(err(e)),
    };
    tx.commit().await.map_err(err)?;
    Ok(row)
}

/// The statement of [`take_lease`]. For a kind whose lease is the
/// registration, the owner's registration is read locked (FOR SHARE): a
/// heartbeat renewing it meanwhile waits for this takeover, and then sees
/// the lease gone; one that committed first makes this takeover find the
/// lease running.
fn take_lease_sql(kind: Leased) -> String {
    let (with, owner_gone) = if kind.registration_is_lease() {
        (
            format!(
                "WITH owner_node AS (
                    SELECT n.expires_at FROM {} t JOIN nodes n ON n.node_id = t.owner
                    WHERE t.id = $1 FOR SHARE OF n
                 )",
                kind.table()
            ),
            "AND NOT EXISTS (SELECT 1 FROM owner_node WHERE expires_at > now())",
        )
    } else {
        (String::new(), "")
    };
    format!(
        "{with}
         UPDATE {table} SET owner = $2, epoch = epoch + 1,
            lease_expires_at = now() + $3::float8 * interval '1 millisecond'
         WHERE id = $1 AND {open}
           AND (owner IS NULL OR owner = $2
                OR ((lease_expires_at IS NULL OR lease_expires_at < now()) {owner_gone}))
         RETURNING epoch, id, {taken}",
        table = kind.table(),
        open = kind.open(),
        taken = kind.taken_columns(),
    )
}

/// Takes, with a new epoch, every open one of `kind` this node owned
/// (before a restart) or that has no owner: what a replica resumes at
/// start. Rows as [`take_lease`]'s.
pub(super) async fn claim_all(
    client: &deadpool_postgres::Object,
    target: &str,
    node: &Node,
    kind: Leased,
) -> Result<Vec<tokio_postgres::Row>, StorageError> {
    let sql = format!(
        "UPDATE {table} SET owner = $1, epoch = epoch + 1,
            lease_expires_at = now() + $2::float8 * interval '1 millisecond'
         WHERE {open} AND (owner IS NULL OR owner = $1)
         RETURNING epoch, id, {taken}",
        table = kind.table(),
        open = kind.open(),
        taken = kind.taken_columns(),
    );
    client
        .query(&sql, &[&node.id, &(node.lease_ms() as f64)])
        .await
        .map_err(|e| pg_error(target, e))
}

/// One renewal of [`PostgresStorage::renew_held`]: renews the rows still
/// this node's at the epochs held, then tells, of the others, those taken
/// by another replica (or at another epoch) from those ended by this one.
async fn renew_rows(
    client: &deadpool_postgres::Object,
    target: &str,
    node: &Node,
    kind: Leased,
    held: &[(String, i64)],
) -> Result<Vec<String>, StorageError> {
    let err = |e| pg_error(target, e);
    // Only the leases held here, at their epochs: one this node owns but
    // does not hold (unreadable) is left to expire.
    let ids: Vec<&str> = held.iter().map(|(id, _)| id.as_str()).collect();
    let epochs: Vec<i64> = held.iter().map(|(_, e)| *e).collect();
    let sql = format!(
        "UPDATE {table} SET lease_expires_at = now() + $2::float8 * interval '1 millisecond'
         WHERE owner = $1 AND {open}
           AND (id, epoch) IN (SELECT * FROM unnest($3::text[], $4::bigint[]))
         RETURNING id, epoch",
        table = kind.table(),
        open = kind.open(),
    );
    let renewed = client
        .query(&sql, &[&node.id, &(node.lease_ms() as f64), &ids, &epochs])
        .await
        .map_err(err)?;
    let renewed: HashMap<String, i64> = renewed.iter().map(|r| (r.get(0), r.get(1))).collect();
    let gone: Vec<String> = held
        .iter()
        .filter(|(id, epoch)| renewed.get(id) != Some(epoch))
        .map(|(id, _)| id.clone())
        .collect();
    if gone.is_empty() {
        return Ok(Vec::new());
    }
    // Not renewed: ended (by this node, same lease) or taken.
    let sql = format!(
        "SELECT id, COALESCE(owner, ''), epoch FROM {} WHERE id = ANY($1)",
        kind.table()
    );
    let rows = client.query(&sql, &[&gone]).await.map_err(err)?;
    let epochs: HashMap<&str, i64> = held.iter().map(|(id, e)| (id.as_str(), *e)).collect();
    Ok(rows
        .iter()
        .filter(|r| {
            let id: &str = r.get(0);
            r.get::<_, &str>(1) != node.id || Some(r.get::<_, i64>(2)) != epochs.get(id).copied()
        })
        .map(|r| r.get::<_, String>(0))
        .collect())
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
pub(super) fn idle_timeout(lease: Duration) -> Duration {
    (lease / 2).clamp(Duration::from_millis(200), Duration::from_secs(30))
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

/// Gives up this node's leases of every kind (they can be taken over at
/// once) and its registration: a replica stopping cleanly.
pub(super) async fn release_all(
    pool: &Pool,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let client = get(pool, target).await?;
    let err = |e| pg_error(target, e);
    for kind in Leased::ALL {
        let sql = format!(
            "UPDATE {} SET lease_expires_at = now() - interval '1 millisecond'
             WHERE owner = $1 AND {}",
            kind.table(),
            kind.open()
        );
        client.execute(&sql, &[&node.id]).await.map_err(err)?;
    }
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
