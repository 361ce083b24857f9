//! The writer thread: group commit of the queued writes, checkpoints,
//! pruning.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use rusqlite::{Connection, TransactionBehavior, params};

use super::super::codec::{
    clock_columns, end_columns, hex, labels_json, ms, nonzero, offers_column, sealed_seed,
};
use super::super::{GameRow, MoveRow, OutcomeRow, ServerSecret, TournamentRow, Write, unix_ms};
use super::journal::{FoldPolicy, Journal};
use super::{Job, MAX_BATCH, PRUNE_BATCH, Reply, read_games, sql_error};
use crate::service::telemetry;
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
pub(super) fn checkpoint_loop(conn: &Connection, stop: &mpsc::Receiver<()>, restart: &AtomicBool) {
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

pub(super) fn writer_loop(
    conn: Connection,
    rx: mpsc::Receiver<Job>,
    commits: &AtomicU64,
    restart: &AtomicBool,
    secret: &ServerSecret,
    policy: FoldPolicy,
) {
    let path = conn.path().map(PathBuf::from).unwrap_or_default();
    let mut w = Writer {
        conn,
        path,
        commits,
        secret,
        journal: Journal::new(policy),
    };
    if let Err(e) = w.journal.reload(&w.conn) {
        tracing::warn!(error = %e, "storage journal unreadable");
    }
    if !w.journal.enabled() {
        // Moves go straight into their games' rows: those of an earlier
        // run's journal first.
        fold(&w.conn, &mut w.journal);
    }
    loop {
        // With moves in the journal, a writer left idle folds them.
        let first = if w.journal.rows() == 0 {
            rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(w.journal.idle())
        };
        let first = match first {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                fold(&w.conn, &mut w.journal);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if restart.swap(false, Ordering::Relaxed) {
            restart_log(&w.conn);
        }
        let mut writes = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Write(write, reply) => writes.push((write, reply)),
                Job::Recover(reply) => {
                    // Reads see every write queued before them.
                    w.commit(&mut writes);
                    let _ = reply.send(
                        read_games(
                            &w.conn,
                            secret,
                            "WHERE status = 'in_progress' ORDER BY rowid",
                            &[],
                        )
                        .map_err(|e| sql_error(&w.path, e)),
                    );
                }
                Job::Run(job) => {
                    w.commit(&mut writes);
                    job(&mut w.conn, secret);
                }
                Job::Prune(before, reply) => {
                    w.commit(&mut writes);
                    let pruned = prune_batch(&mut w.conn, before);
                    let _ = reply.send(pruned.map_err(|e| sql_error(&w.path, e)));
                }
            }
            if writes.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        w.commit(&mut writes);
        if w.journal.due() {
            fold(&w.conn, &mut w.journal);
        }
    }
    // A clean stop leaves the journal folded.
    fold(&w.conn, &mut w.journal);
}

/// The writer thread's connection and what each commit needs.
struct Writer<'a> {
    conn: Connection,
    path: PathBuf,
    commits: &'a AtomicU64,
    secret: &'a ServerSecret,
    journal: Journal,
}

impl Writer<'_> {
    /// Commits the writes gathered so far (see [`commit_batch`]).
    fn commit(&mut self, writes: &mut Vec<(Box<Write>, Reply)>) {
        commit_batch(
            &mut self.conn,
            &self.path,
            std::mem::take(writes),
            self.commits,
            self.secret,
            &mut self.journal,
        );
    }
}

/// Folds the journal; a failure (a full disk) leaves it as it is, to be
/// folded later.
fn fold(conn: &Connection, journal: &mut Journal) {
    if let Err(e) = journal.fold_all(conn) {
        tracing::warn!(error = %e, "storage journal fold failed");
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
    journal: &mut Journal,
) {
    if writes.is_empty() {
        return;
    }
    commits.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let n = writes.len();
    let together = in_transaction(conn, |tx| {
        for (w, _) in &writes {
            apply(tx, w, secret, journal)?;
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
            reload(conn, journal);
            for (w, reply) in writes {
                let alone = in_transaction(conn, |tx| apply(tx, &w, secret, journal));
                if alone.is_err() {
                    reload(conn, journal);
                }
                let _ = reply.send(alone.map_err(|e| sql_error(path, e)));
            }
        }
        Err(e) => {
            reload(conn, journal);
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

/// Reads the journal back after a transaction that failed (its moves and
/// folds are not stored, but the writer's memory of the journal has them).
fn reload(conn: &Connection, journal: &mut Journal) {
    if let Err(e) = journal.reload(conn) {
        tracing::warn!(error = %e, "storage journal reload failed");
    }
}

/// Runs `body` in an immediate transaction and commits it, or rolls it
/// back if anything fails. Like rusqlite's `Transaction`, but `BEGIN` and
/// `COMMIT` are prepared once and kept: parsing them anew took a few
/// microseconds of every commit of the writer.
pub(super) fn in_transaction(
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

fn apply(
    tx: &Connection,
    write: &Write,
    secret: &ServerSecret,
    journal: &mut Journal,
) -> rusqlite::Result<()> {
    match write {
        Write::Tournament(row) => apply_tournament(tx, row),
        Write::Create(game, moves, end) => {
            insert_game(tx, game, moves.len(), secret)?;
            for mv in moves {
                insert_move(tx, mv)?;
            }
            match end {
                Some(end) => apply_end(tx, end),
                None => Ok(()),
            }
        }
        // A move that leaves its game in play goes to the journal.
        Write::Move(mv, None) if journal.enabled() => journal.append(tx, mv),
        Write::Move(mv, end) => {
            journal.fold_game(tx, &mv.game_id)?;
            insert_move(tx, mv)?;
            let changed = tx
                .prepare_cached(
                    "UPDATE games SET ply = ?2, draw_offers = ?3, updated_at_ms = ?4
                     WHERE id = ?1 AND status = 'in_progress' AND ply = ?2 - 1",
                )?
                .execute(params![
                    mv.game_id,
                    mv.ply,
                    offers_column(mv.draw_offers),
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
            match end {
                Some(end) => apply_end(tx, end),
                None => Ok(()),
            }
        }
        Write::DrawOffer { game_id, seats } => {
            journal.fold_game(tx, game_id)?;
            let changed = tx
                .prepare_cached(
                    "UPDATE games SET draw_offers = ?2 WHERE id = ?1 AND status = 'in_progress'",
                )?
                .execute(params![game_id, offers_column(*seats)])?;
            if changed != 1 {
                return Err(no_such_game(game_id));
            }
            Ok(())
        }
        Write::End(end) => {
            journal.fold_game(tx, &end.game_id)?;
            apply_end(tx, end)
        }
        Write::Outboxed(change, events) => {
            apply(tx, change, secret, journal)?;
            super::outbox::insert_events(tx, events)
        }
    }
}

/// Inserts or replaces a tournament's document.
fn apply_tournament(tx: &Connection, row: &TournamentRow) -> rusqlite::Result<()> {
    let now = unix_ms(std::time::SystemTime::now());
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
    Ok(())
}

/// Inserts a new game at ply `ply` with its seats (its moves and end
/// follow).
fn insert_game(
    tx: &Connection,
    game: &GameRow,
    ply: usize,
    secret: &ServerSecret,
) -> rusqlite::Result<()> {
    let labels =
        labels_json(&game.labels).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
    let (initial, increment, per_move, first_move) = clock_columns(&game.clock);
    tx.prepare_cached(
        "INSERT INTO games (id, game, variant, options, seed, seed_supplied,
            clock_mode, clock_initial_ms, clock_increment_ms,
            clock_per_move_ms, first_move_ms, labels, status, ply, created_at_ms,
            updated_at_ms, forfeits, lag_max_per_move_ms, lag_quota_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'in_progress', ?13,
            ?14, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        game.id,
        game.game,
        game.variant,
        game.options,
        sealed_seed(game, secret).map(|s| hex(&s)),
        game.setup.is_some_and(|s| s.supplied),
        game.clock.mode,
        initial,
        increment,
        per_move,
        first_move,
        labels,
        ply as i64,
        game.created_at_ms,
        game.forfeits,
        nonzero(game.clock.lag_max_per_move_ms),
        nonzero(game.clock.lag_quota_ms),
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
    Ok(())
}

pub(super) fn insert_move(tx: &Connection, mv: &MoveRow) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO moves (game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
            substituted, charged_ms, compensated_ms, lag_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        mv.game_id,
        mv.ply,
        mv.seat.number(),
        mv.notation,
        mv.request_id,
        mv.clock_ms as i64,
        mv.played_at_ms,
        mv.substituted,
        ms(mv.lag.charged_ms),
        ms(mv.lag.compensated_ms),
        mv.lag.lag_ms.map(ms),
    ])?;
    Ok(())
}

fn apply_end(tx: &Connection, end: &OutcomeRow) -> rusqlite::Result<()> {
    let columns = end_columns(end);
    let changed = tx
        .prepare_cached(
            "UPDATE games SET status = ?2, winners = ?3, reason = ?4, ply = ?5,
                finished_at_ms = ?6, updated_at_ms = ?6, draw_offers = NULL, scores = ?7,
                failure_ending = ?8
             WHERE id = ?1 AND status = 'in_progress'",
        )?
        .execute(params![
            end.game_id,
            end.status,
            columns.winners,
            columns.reason,
            end.ply,
            end.at_ms,
            columns.scores,
            columns.failure_ending,
        ])?;
    if changed != 1 {
        return Err(no_such_game(&end.game_id));
    }
    Ok(())
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
