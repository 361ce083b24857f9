//! The writer tasks: each commits whatever is queued to it in one
//! transaction (group commit) on a connection it keeps, runs again a
//! transaction PostgreSQL rolled back as a deadlock victim or serialization
//! failure, retries each write alone when one of a batch is refused, and
//! marks for reading back the games of a commit whose answer was lost. A
//! batch of moves that only the journal takes is one statement, one round
//! trip ([`journal::append_alone`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Object, Pool};
use tokio::sync::mpsc;

use super::super::sqlite::FoldPolicy;
use super::super::{MoveRow, StorageError, Write};
use super::apply::apply;
use super::journal::{self, Alone, WriterJournal, journal_prefix};
use super::leases::{Leased, Node};
use super::{
    CONFLICT_RETRIES, LeasedWrite, MAX_BATCH, Reply, get, is_conflict, is_conflict_text, pg_error,
    write_game,
};
use crate::service::telemetry;

pub(super) async fn writer_loop(
    pool: Pool,
    mut rx: mpsc::UnboundedReceiver<(Box<LeasedWrite>, Reply)>,
    _alive: mpsc::Sender<()>,
    commits: Arc<AtomicU64>,
    target: String,
    node: Arc<Node>,
    policy: FoldPolicy,
) {
    let mut journal = WriterJournal::new(policy);
    let mut conn = Connection::new(pool);
    let mut batch = Vec::new();
    loop {
        let got = if journal.rows() > 0 {
            // `recv_many` is cancel safe: nothing queued is lost.
            match tokio::time::timeout(journal.idle(), rx.recv_many(&mut batch, MAX_BATCH)).await {
                Ok(n) => n,
                Err(_) => {
                    journal.fold(&mut conn, &target).await;
                    continue;
                }
            }
        } else {
            rx.recv_many(&mut batch, MAX_BATCH).await
        };
        if got == 0 {
            break;
        }
        let writes = std::mem::take(&mut batch);
        commit_batch(&mut conn, &target, &node, writes, &commits, &mut journal).await;
        if journal.due() {
            journal.fold(&mut conn, &target).await;
        }
    }
    // A clean stop leaves the journal folded.
    journal.fold(&mut conn, &target).await;
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
    conn: &mut Connection,
    target: &str,
    node: &Node,
    mut writes: Vec<(Box<LeasedWrite>, Reply)>,
    commits: &AtomicU64,
    journal: &mut WriterJournal,
) {
    if writes.is_empty() {
        return;
    }
    let started = Instant::now();
    let n = writes.len();
    // Stable: the writes of one game stay in their order.
    writes.sort_by(|a, b| write_game(&a.0.write).cmp(write_game(&b.0.write)));
    let mut transactions = 0;
    let on = journal.enabled();
    let together = transact_retrying(conn, target, node, &writes, on, &mut transactions).await;
    match together {
        Ok(appended) => {
            journal.note(&appended);
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
                let alone =
                    transact_retrying(conn, target, node, &one, on, &mut transactions).await;
                let [(w, ())] = one;
                if let Ok(appended) = &alone {
                    journal.note(appended);
                }
                let _ = reply.send(alone.map(drop).map_err(|f| match (f, game_of(&w.write)) {
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
    match write.change() {
        Write::Tournament(_) => None,
        other => Some(write_game(other)),
    }
}

/// The ids of the games of the moves a transaction journaled (one per
/// move).
type Appended = Vec<String>;

/// [`transact`], run again (up to [`CONFLICT_RETRIES`] times in all) while
/// PostgreSQL rolls it back as a deadlock victim or a serialization
/// failure; counts the transactions in `transactions`.
async fn transact_retrying<R>(
    conn: &mut Connection,
    target: &str,
    node: &Node,
    writes: &[(Box<LeasedWrite>, R)],
    journal: bool,
    transactions: &mut u64,
) -> Result<Appended, Failure> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        *transactions += 1;
        match transact(
            conn,
            target,
            node,
            writes.iter().map(|(w, _)| &**w),
            journal,
        )
        .await
        {
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
    conn: &mut Connection,
    target: &str,
    node: &Node,
    writes: impl Iterator<Item = &'w LeasedWrite> + Clone,
    journal: bool,
) -> Result<Appended, Failure> {
    let result = transact_once(conn, target, node, writes.clone(), journal).await;
    if let Err(Failure::Refused(_) | Failure::Conflict(_)) = &result {
        // Rolled back: the leases its creations took are not held (a
        // retry takes them again).
        for w in writes {
            if let Write::Create(game, _, None) = w.write.change()
                && node.epoch(&game.id) == Some(1)
            {
                node.forget(&game.id);
            }
        }
    }
    result
}

/// Applies `writes` and commits them. A batch of moves that leave their
/// games in play, with `journal`, is appended in one statement
/// ([`journal::append_alone`]); any other batch, or one of those the
/// statement refused, is applied in a transaction ([`in_transaction`],
/// which names the refusal). When the connection breaks under the
/// statement, it may or may not have committed: the batch is run again in
/// a transaction on a new connection, whose check refuses a move already
/// stored, so each move is stored once and acknowledged only by the run
/// that stored it; if that run fails too, the outcome is unknown.
async fn transact_once<'w>(
    conn: &mut Connection,
    target: &str,
    node: &Node,
    writes: impl Iterator<Item = &'w LeasedWrite>,
    journal: bool,
) -> Result<Appended, Failure> {
    let writes: Vec<&LeasedWrite> = writes.collect();
    if !journal
        || !writes
            .iter()
            .all(|w| matches!(w.write, Write::Move(_, None)))
    {
        return in_transaction(conn, target, node, &writes, journal).await;
    }
    let mut moves = Vec::with_capacity(writes.len());
    let mut appended = Vec::with_capacity(writes.len());
    for w in &writes {
        if let Write::Move(mv, None) = &w.write {
            let epoch = node
                .fence(Leased::Game, &mv.game_id, w.epoch)
                .map_err(Failure::Refused)?;
            moves.push((mv, epoch));
            appended.push(mv.game_id.clone());
        }
    }
    let client = conn.client(target).await.map_err(Failure::Refused)?;
    match journal::append_alone(client, &moves, node).await {
        Ok(Alone::Appended) => Ok(appended),
        Ok(Alone::Refused) => in_transaction(conn, target, node, &writes, journal).await,
        // Rolled back, on a connection that still works.
        Err(e) if !broken(&e) && !conn.closed() => Err(if is_conflict(&e) {
            Failure::Conflict(pg_error(target, e))
        } else {
            Failure::Refused(pg_error(target, e))
        }),
        Err(e) => {
            conn.reset();
            let unknown = pg_error(target, e);
            tracing::info!(error = %unknown, "storage connection broke under an append; run again");
            in_transaction(conn, target, node, &writes, journal)
                .await
                .map_err(|_| Failure::Uncertain(unknown))
        }
    }
}

/// Applies `writes` in one transaction and commits it: with `journal`, the
/// moves a journal takes (each game's first writes of the batch, while they
/// are moves that leave it in play) are appended together first, and each
/// game's other writes are applied after a fold of the game.
async fn in_transaction(
    conn: &mut Connection,
    target: &str,
    node: &Node,
    writes: &[&LeasedWrite],
    journal: bool,
) -> Result<Appended, Failure> {
    let refused = |e: tokio_postgres::Error| {
        if is_conflict(&e) {
            Failure::Conflict(pg_error(target, e))
        } else {
            Failure::Refused(pg_error(target, e))
        }
    };
    let failed = |e: StorageError| {
        if is_conflict_text(&e) {
            Failure::Conflict(e)
        } else {
            Failure::Refused(e)
        }
    };
    let journaled = if journal {
        journal_prefix(
            writes
                .iter()
                .map(|w| (write_game(&w.write), journal_move(&w.write))),
        )
    } else {
        Vec::new()
    };
    let client = conn.client(target).await.map_err(Failure::Refused)?;
    let tx = client.transaction().await.map_err(refused)?;
    let mut appended = Vec::with_capacity(journaled.len());
    if !journaled.is_empty() {
        let mut moves = Vec::with_capacity(journaled.len());
        for &i in &journaled {
            let w = writes[i];
            let Some(mv) = journal_move(&w.write) else {
                continue;
            };
            let epoch = node
                .fence(Leased::Game, &mv.game_id, w.epoch)
                .map_err(Failure::Refused)?;
            moves.push((mv, epoch));
            appended.push(mv.game_id.clone());
        }
        journal::append(&tx, &moves, target, node)
            .await
            .map_err(failed)?;
        for &i in &journaled {
            if let Write::Outboxed(_, events) = &writes[i].write {
                super::outbox::insert_events(&tx, events, target)
                    .await
                    .map_err(failed)?;
            }
        }
    }
    let mut folded = std::collections::HashSet::new();
    let mut next = journaled.iter().peekable();
    for (i, w) in writes.iter().enumerate() {
        if next.peek() == Some(&&i) {
            next.next();
            continue;
        }
        if journal
            && !matches!(w.write.change(), Write::Create(..) | Write::Tournament(_))
            && folded.insert(write_game(&w.write))
        {
            journal::fold_games(&tx, &[write_game(&w.write)], target)
                .await
                .map_err(failed)?;
        }
        apply(&tx, &w.write, w.epoch, target, node)
            .await
            .map_err(failed)?;
    }
    tx.commit().await.map_err(|e| {
        // A refusal by the server (a deferred constraint, a serialization
        // failure) is a rollback; a broken connection leaves it unknown.
        if e.as_db_error().is_some() {
            refused(e)
        } else {
            Failure::Uncertain(pg_error(target, e))
        }
    })?;
    Ok(appended)
}

/// The move of `write` if a journal takes it: a move that leaves its game
/// in play (with or without webhook events).
fn journal_move(write: &Write) -> Option<&MoveRow> {
    match write {
        Write::Move(mv, None) => Some(mv),
        Write::Outboxed(inner, _) => journal_move(inner),
        _ => None,
    }
}

/// Whether `e` leaves the connection unusable: no answer from the server,
/// or an error that ends the session (a terminated backend, a shutdown).
fn broken(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::Severity;
    e.as_db_error().is_none_or(|db| {
        matches!(
            db.parsed_severity(),
            Some(Severity::Fatal | Severity::Panic)
        )
    })
}

/// A writer's connection, taken out of the pool once and kept: no check
/// per commit (a pooled connection is verified by a round trip each time it
/// is taken). One the server closed is dropped and replaced from the pool
/// before the next use; a write that was under way on it fails (or, when
/// it may have committed, is resolved as [`transact_once`] says).
pub(super) struct Connection {
    pool: Pool,
    client: Option<ClientWrapper>,
}

impl Connection {
    fn new(pool: Pool) -> Connection {
        Connection { pool, client: None }
    }

    /// The connection, opened (taken from the pool) if there is none or the
    /// server closed it.
    pub(super) async fn client(
        &mut self,
        target: &str,
    ) -> Result<&mut ClientWrapper, StorageError> {
        if self.closed() {
            self.client = None;
        }
        let client = match self.client.take() {
            Some(client) => client,
            None => Object::take(get(&self.pool, target).await?),
        };
        Ok(self.client.insert(client))
    }

    /// Whether there is no connection or the server closed it.
    fn closed(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.is_closed())
    }

    /// Drops the connection: the next use opens another.
    pub(super) fn reset(&mut self) {
        self.client = None;
    }
}
