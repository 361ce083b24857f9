//! The move journal on PostgreSQL (docs/STORAGE.md, "The move journal"):
//! a move that leaves its game in play is inserted into the table
//! `journal` instead of `moves`, and its game's row is not updated. The
//! moves a writer's batch journals are inserted by one statement, checked
//! (lease and ply) by one other that locks their games' rows in share mode
//! only: a takeover, which updates the row, waits for the batch's commit,
//! and a batch that comes after a takeover finds the new epoch and is
//! refused (fencing, docs/CLUSTER.md). Each writer folds the journaled
//! moves of its games into `moves` and `games` in one statement of its
//! own transaction, every [`FoldPolicy::rows`] moves or when idle; a write
//! that takes its game out of the journal's reach (an ending, a draw offer,
//! a move that ends the game) folds that game first, in its transaction.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use deadpool_postgres::{Pool, Transaction};
use tokio_postgres::types::ToSql;

use super::super::codec::{ms, offers_column};
use super::super::sqlite::FoldPolicy;
use super::super::{MoveRow, StorageError};
use super::apply::refused;
use super::leases::Node;
use super::{get, pg_error};

/// Version 10: the journal. Its key (game, ply) finds a game's journaled
/// moves and refuses a ply twice; no foreign key (its check would lock the
/// game's row for every move: a game leaves play only with its journal
/// folded, so no journal row outlives its game). `at`: the database's
/// time of the move (the takeover's turn time, as `turn_started_at`). A
/// database that has the table already keeps it.
pub(super) const SCHEMA_10: &str = r#"
CREATE TABLE IF NOT EXISTS journal (
    game_id      TEXT COLLATE "C" NOT NULL,
    ply          BIGINT NOT NULL CHECK (ply >= 1),
    seat         BIGINT NOT NULL CHECK (seat >= 1),
    notation     TEXT NOT NULL,
    request_id   TEXT,
    clock_ms     BIGINT NOT NULL,
    played_at_ms BIGINT NOT NULL,
    draw_offers  TEXT,
    substituted  TEXT,
    at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (game_id, ply)
);
"#;

/// What one writer has journaled since its last fold.
#[derive(Debug)]
pub(super) struct WriterJournal {
    /// Journaled moves per game.
    games: HashMap<String, usize>,
    /// Journaled moves in all.
    rows: usize,
    policy: FoldPolicy,
}

impl WriterJournal {
    pub(super) fn new(policy: FoldPolicy) -> WriterJournal {
        WriterJournal {
            games: HashMap::new(),
            rows: 0,
            policy,
        }
    }

    /// Whether moves go to the journal.
    pub(super) fn enabled(&self) -> bool {
        self.policy.rows > 0
    }

    /// How long an idle writer waits before it folds.
    pub(super) fn idle(&self) -> std::time::Duration {
        self.policy.idle
    }

    /// Moves journaled and not folded yet.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// Notes moves committed to the journal.
    pub(super) fn note(&mut self, appended: &[String]) {
        for id in appended {
            *self.games.entry(id.clone()).or_default() += 1;
            self.rows += 1;
        }
    }

    /// Due a fold between two batches (as SQLite's, per writer).
    pub(super) fn due(&self) -> bool {
        let per_game = self
            .policy
            .per_game
            .saturating_mul(self.games.len())
            .min(super::super::sqlite::MAX_FOLD_ROWS);
        self.rows > 0 && self.rows >= self.policy.rows.max(per_game)
    }

    /// Folds every game this writer journaled, in a transaction of its own.
    /// A failure leaves the journal as it is (it is folded again later).
    pub(super) async fn fold(&mut self, conn: &mut super::writer::Connection, target: &str) {
        if self.games.is_empty() {
            return;
        }
        let started = Instant::now();
        let ids: Vec<&str> = self.games.keys().map(String::as_str).collect();
        let done = async {
            let client = conn.client(target).await?;
            let tx = client
                .transaction()
                .await
                .map_err(|e| pg_error(target, e))?;
            let n = fold_games(&tx, &ids, target).await?;
            tx.commit().await.map_err(|e| pg_error(target, e))?;
            Ok::<_, StorageError>(n)
        }
        .await;
        match done {
            Ok(n) => {
                self.games.clear();
                self.rows = 0;
                metrics::counter!(crate::service::telemetry::STORAGE_JOURNAL_FOLDS).increment(1);
                tracing::debug!(
                    moves = n,
                    took_ms = started.elapsed().as_millis() as u64,
                    "storage journal folded"
                );
            }
            Err(e) => tracing::warn!(error = %e, "storage journal fold failed; later"),
        }
    }
}

/// Folds the journaled moves of games `ids` into `moves` and their rows of
/// `games` (ply, standing draw offer, last change) in one statement of the
/// open transaction `tx`; how many moves it folded. Any replica may fold
/// any game: the rows it moves are acknowledged moves either way, and the
/// game's row only goes forward. The games' rows are locked first, in id
/// order, the order in which appends lock them: a fold and another
/// replica's batch never wait for each other in a cycle.
pub(super) async fn fold_games(
    tx: &Transaction<'_>,
    ids: &[&str],
    target: &str,
) -> Result<i64, StorageError> {
    let stmt = tx
        .prepare_cached(
            "SELECT id FROM games WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE",
        )
        .await
        .map_err(|e| pg_error(target, e))?;
    tx.execute(&stmt, &[&ids])
        .await
        .map_err(|e| pg_error(target, e))?;
    let stmt = tx
        .prepare_cached(
            "WITH folded AS (
                DELETE FROM journal WHERE game_id = ANY($1::text[])
                RETURNING game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
                    draw_offers, substituted, at, charged_ms, compensated_ms, lag_ms
             ), stored AS (
                INSERT INTO moves (game_id, ply, seat, notation, request_id, clock_ms,
                    played_at_ms, substituted, charged_ms, compensated_ms, lag_ms)
                SELECT game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
                    substituted, charged_ms, compensated_ms, lag_ms
                FROM folded ORDER BY game_id, ply
             ), last AS (
                SELECT DISTINCT ON (game_id) game_id, ply, draw_offers, played_at_ms, at
                FROM folded ORDER BY game_id, ply DESC
             ), moved AS (
                UPDATE games g SET ply = last.ply, draw_offers = last.draw_offers,
                    updated_at_ms = last.played_at_ms,
                    turn_started_at = GREATEST(g.turn_started_at, last.at)
                FROM last WHERE g.id = last.game_id AND g.ply < last.ply
             )
             SELECT count(*) FROM folded",
        )
        .await
        .map_err(|e| pg_error(target, e))?;
    let row = tx
        .query_one(&stmt, &[&ids])
        .await
        .map_err(|e| pg_error(target, e))?;
    Ok(row.get(0))
}

/// Folds all of the journal (at start: what a stopped or killed run left).
pub(super) async fn fold_everything(pool: &Pool, target: &str) -> Result<i64, StorageError> {
    let mut client = get(pool, target).await?;
    let err = |e| pg_error(target, e);
    let tx = client.transaction().await.map_err(err)?;
    let ids: Vec<String> = tx
        .query("SELECT DISTINCT game_id FROM journal", &[])
        .await
        .map_err(err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let n = if ids.is_empty() {
        0
    } else {
        fold_games(&tx, &ids, target).await?
    };
    tx.commit().await.map_err(err)?;
    Ok(n)
}

/// Appends `moves` (each leaving its game in play, made under the lease of
/// its epoch, a game's moves in ply order) to the journal in the open
/// transaction `tx`: their games' rows are locked in share mode, in id
/// order, and each move is refused unless its game is in progress, this
/// node's at that epoch, and stored at the ply before (its row's ply or
/// its last journaled move's). Then one insert for all of them, and one
/// notification per game. Refused: the first move that fails, as the
/// write of that move alone would be.
pub(super) async fn append(
    tx: &Transaction<'_>,
    moves: &[(&MoveRow, i64)],
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let mut ids: Vec<&str> = moves.iter().map(|(m, _)| m.game_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    check(tx, moves, &ids, target, node).await?;
    insert(tx, moves, target).await?;
    let stmt = tx
        .prepare_cached(
            "SELECT pg_notify('referee_games',
                id || ' ' || floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint::text)
             FROM unnest($1::text[]) AS id",
        )
        .await
        .map_err(err)?;
    tx.execute(&stmt, &[&ids]).await.map_err(err)?;
    Ok(())
}

/// Locks the rows of games `ids` (in id order) in share mode and checks
/// each of `moves` against them (see [`append`]).
async fn check(
    tx: &Transaction<'_>,
    moves: &[(&MoveRow, i64)],
    ids: &[&str],
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let stmt = tx
        .prepare_cached(
            "SELECT g.id, g.owner, g.epoch, g.status = 'in_progress',
                GREATEST(g.ply, (SELECT max(j.ply) FROM journal j WHERE j.game_id = g.id))
             FROM games g WHERE g.id = ANY($1::text[]) ORDER BY g.id FOR SHARE OF g",
        )
        .await
        .map_err(err)?;
    let rows = tx.query(&stmt, &[&ids]).await.map_err(err)?;
    // Game → (owner, epoch, in progress, stored ply).
    let mut stored: HashMap<String, (Option<String>, i64, bool, i64)> = rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3), r.get(4))))
        .collect();
    for (mv, epoch) in moves {
        let ok = stored.get_mut(&mv.game_id).is_some_and(|s| {
            let fits = s.0.as_deref() == Some(node.id.as_str())
                && s.1 == *epoch
                && s.2
                && s.3 + 1 == i64::from(mv.ply);
            if fits {
                s.3 += 1;
            }
            fits
        });
        if !ok {
            let stale = StorageError::Conflict(format!(
                "postgres {target}: game `{}` is not stored in progress at ply {}",
                mv.game_id,
                mv.ply.saturating_sub(1)
            ));
            return Err(refused(tx, node, &mv.game_id, *epoch, target, stale).await);
        }
    }
    Ok(())
}

/// The journal's columns of `moves` as the arrays `unnest` reads: the
/// parameters $1 to $12 of both statements that append to it.
struct Columns<'m> {
    game_ids: Vec<&'m str>,
    plies: Vec<i64>,
    seats: Vec<i64>,
    notations: Vec<&'m str>,
    request_ids: Vec<Option<&'m str>>,
    clocks: Vec<i64>,
    played_at: Vec<i64>,
    offers: Vec<Option<String>>,
    substituted: Vec<Option<&'m str>>,
    charged: Vec<i64>,
    compensated: Vec<i64>,
    lags: Vec<Option<i64>>,
}

impl<'m> Columns<'m> {
    fn of(moves: &[(&'m MoveRow, i64)]) -> Self {
        let column = |f: fn(&MoveRow) -> i64| moves.iter().map(|(m, _)| f(m)).collect();
        Columns {
            game_ids: moves.iter().map(|(m, _)| m.game_id.as_str()).collect(),
            plies: column(|m| i64::from(m.ply)),
            seats: column(|m| i64::from(m.seat.number())),
            notations: moves.iter().map(|(m, _)| m.notation.as_str()).collect(),
            request_ids: moves.iter().map(|(m, _)| m.request_id.as_deref()).collect(),
            clocks: column(|m| ms(m.clock_ms)),
            played_at: column(|m| m.played_at_ms),
            offers: moves
                .iter()
                .map(|(m, _)| offers_column(m.draw_offers))
                .collect(),
            substituted: moves
                .iter()
                .map(|(m, _)| m.substituted.as_deref())
                .collect(),
            charged: column(|m| ms(m.lag.charged_ms)),
            compensated: column(|m| ms(m.lag.compensated_ms)),
            lags: moves.iter().map(|(m, _)| m.lag.lag_ms.map(ms)).collect(),
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 12] {
        [
            &self.game_ids,
            &self.plies,
            &self.seats,
            &self.notations,
            &self.request_ids,
            &self.clocks,
            &self.played_at,
            &self.offers,
            &self.substituted,
            &self.charged,
            &self.compensated,
            &self.lags,
        ]
    }
}

/// Inserts `moves` into the journal, in one statement.
async fn insert(
    tx: &Transaction<'_>,
    moves: &[(&MoveRow, i64)],
    target: &str,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let columns = Columns::of(moves);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO journal (game_id, ply, seat, notation, request_id, clock_ms,
                played_at_ms, draw_offers, substituted, charged_ms, compensated_ms, lag_ms)
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[],
                $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[],
                $10::bigint[], $11::bigint[], $12::bigint[])",
        )
        .await
        .map_err(err)?;
    tx.execute(&stmt, &columns.params()).await.map_err(err)?;
    Ok(())
}

/// Which writes of a batch a journal takes (their indexes, in order), given
/// each write's game and its move if it is one that leaves its game in
/// play: each game's first writes, as long as they are such moves. A
/// game's later writes are applied one by one after a fold of the game.
pub(super) fn journal_prefix<'w>(
    writes: impl Iterator<Item = (&'w str, Option<&'w MoveRow>)>,
) -> Vec<usize> {
    let mut journaled = Vec::new();
    let mut left: HashSet<&str> = HashSet::new();
    for (i, (game, mv)) in writes.enumerate() {
        if mv.is_some() && !left.contains(game) {
            journaled.push(i);
        } else {
            left.insert(game);
        }
    }
    journaled
}

/// [`append_alone`]'s statement. `locked`: as [`check`]'s statement.
/// `batch`: the moves, each with its rank among its game's (k): the k-th
/// must be at the stored ply + k. `bad`: how many fail. `stored`: all of
/// them, if none fails.
const APPEND_ALONE: &str = "WITH locked AS MATERIALIZED (
        SELECT g.id, g.owner, g.epoch, g.status = 'in_progress' AS playing,
            GREATEST(g.ply, (SELECT max(j.ply) FROM journal j WHERE j.game_id = g.id))
                AS ply
        FROM games g WHERE g.id = ANY($13::text[]) ORDER BY g.id FOR SHARE OF g
     ), batch AS MATERIALIZED (
        SELECT t.*, row_number() OVER (PARTITION BY t.game_id ORDER BY t.n) AS k
        FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[],
            $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[],
            $10::bigint[], $11::bigint[], $12::bigint[], $14::bigint[])
            WITH ORDINALITY AS t(game_id, ply, seat, notation, request_id, clock_ms,
                played_at_ms, draw_offers, substituted, charged_ms, compensated_ms,
                lag_ms, epoch, n)
     ), bad AS MATERIALIZED (
        SELECT count(*) AS n FROM batch b LEFT JOIN locked l ON l.id = b.game_id
        WHERE l.id IS NULL OR l.owner IS DISTINCT FROM $15::text
            OR l.epoch <> b.epoch OR NOT l.playing OR l.ply + b.k <> b.ply
     ), stored AS (
        INSERT INTO journal (game_id, ply, seat, notation, request_id, clock_ms,
            played_at_ms, draw_offers, substituted, charged_ms, compensated_ms, lag_ms)
        SELECT game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
            draw_offers, substituted, charged_ms, compensated_ms, lag_ms
        FROM batch WHERE (SELECT n FROM bad) = 0 ORDER BY n
        RETURNING game_id
     )
     SELECT (SELECT n FROM bad),
        (SELECT count(*) FROM (
            SELECT pg_notify('referee_games', s.id || ' '
                || floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint::text)
            FROM (SELECT DISTINCT game_id AS id FROM stored) s) notified)";

/// How [`append_alone`] ended.
pub(super) enum Alone {
    /// Every move is in the journal (committed).
    Appended,
    /// A move did not pass the check: nothing was stored (the batch is run
    /// again in a transaction, which names the refusal precisely).
    Refused,
}

/// [`append`] in one statement and one round trip, outside any explicit
/// transaction (its own implicit one commits when it ends): the games' rows
/// are locked in share mode in id order, every move is checked against
/// them, all of them are inserted only if all pass, and each game is
/// notified. The same fencing as [`append`]: a takeover, which updates the
/// game's row, waits for this statement's commit, and a statement that
/// comes after a takeover finds the new epoch and stores nothing.
pub(super) async fn append_alone(
    client: &deadpool_postgres::ClientWrapper,
    moves: &[(&MoveRow, i64)],
    node: &Node,
) -> Result<Alone, tokio_postgres::Error> {
    let mut ids: Vec<&str> = moves.iter().map(|(m, _)| m.game_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let columns = Columns::of(moves);
    let epochs: Vec<i64> = moves.iter().map(|(_, e)| *e).collect();
    let stmt = client.prepare_cached(APPEND_ALONE).await?;
    let row = client
        .query_one(
            &stmt,
            &[&columns.params()[..], &[&ids, &epochs, &node.id]].concat(),
        )
        .await?;
    let bad: i64 = row.get(0);
    Ok(if bad == 0 {
        Alone::Appended
    } else {
        Alone::Refused
    })
}
