//! The webhook outbox in SQLite (docs/WEBHOOKS.md): its tables (schema
//! version 6), the deliveries a write inserts in its own transaction, and
//! the [`WebhookStore`] calls, each run by the writer thread between two
//! batches (so they never contend with it for the database).

use std::sync::mpsc;

use rusqlite::{Connection, OptionalExtension, params};

use super::super::outbox::{
    Backlog, DeliveryRow, EndpointRow, OutboxEvent, Settle, WebhookStore, seal_endpoint_secret,
    unseal_endpoint_secret,
};
use super::super::{ServerSecret, StorageError};
use super::writer::in_transaction;
use super::{Job, SqliteStorage, sql_error};

/// From version 6 to version 7, in one transaction: the endpoints and the
/// outbox (one row per event and endpoint).
pub(super) fn migrate_6_to_7(conn: &Connection) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS webhook_endpoints (
                id TEXT PRIMARY KEY,
                url TEXT NOT NULL,
                kinds TEXT NOT NULL,            -- ',game.created,game.ended,'
                secret TEXT NOT NULL,           -- sealed with the server secret (hex)
                description TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS webhook_deliveries (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                event_id TEXT NOT NULL,
                endpoint_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                subject TEXT NOT NULL,          -- the game or tournament id
                body TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                status TEXT NOT NULL,           -- pending | delivered | failed
                attempts INTEGER NOT NULL DEFAULT 0,
                next_at_ms INTEGER NOT NULL,
                lease_owner TEXT,
                lease_until_ms INTEGER,
                last_error TEXT NOT NULL DEFAULT '',
                UNIQUE (event_id, endpoint_id)
            );
            CREATE INDEX IF NOT EXISTS webhook_pending ON webhook_deliveries (endpoint_id, subject, seq)
                WHERE status = 'pending';
            CREATE INDEX IF NOT EXISTS webhook_due ON webhook_deliveries (next_at_ms)
                WHERE status = 'pending';
            PRAGMA user_version = 7;",
        )
    })
}

/// From version 8 to version 9, in one transaction: an index of the
/// delivered rows by the time of their event, which the retention prunes
/// by.
pub(super) fn migrate_8_to_9(conn: &Connection) -> rusqlite::Result<()> {
    in_transaction(conn, |tx| {
        tx.execute_batch(
            "CREATE INDEX IF NOT EXISTS webhook_delivered ON webhook_deliveries (created_at_ms)
                WHERE status = 'delivered';
            PRAGMA user_version = 9;",
        )
    })
}

/// Inserts the deliveries of `events`, one per endpoint subscribed to the
/// event's kind: pending, or failed at once when the endpoint already has
/// its queue limit pending.
pub(super) fn insert_events(tx: &Connection, events: &[OutboxEvent]) -> rusqlite::Result<()> {
    for e in events {
        tx.prepare_cached(
            "INSERT INTO webhook_deliveries
                (event_id, endpoint_id, kind, subject, body, created_at_ms, status, next_at_ms,
                 last_error)
             SELECT ?1, ep.id, ?2, ?3, ?4, ?5, CASE WHEN is_full THEN 'failed' ELSE 'pending' END,
                    ?5, CASE WHEN is_full THEN 'the endpoint''s queue was full' ELSE '' END
             FROM (SELECT id, (SELECT count(*) FROM webhook_deliveries d
                               WHERE d.endpoint_id = webhook_endpoints.id
                                 AND d.status = 'pending') >= ?7 AS is_full
                   FROM webhook_endpoints WHERE instr(kinds, ?6) > 0) AS ep",
        )?
        .execute(params![
            e.id,
            e.kind,
            e.subject,
            e.body,
            e.at_ms,
            format!(",{},", e.kind),
            e.queue_limit as i64,
        ])?;
    }
    Ok(())
}

const DELIVERY_COLUMNS: &str = "seq, event_id, endpoint_id, kind, subject, body, status, attempts, \
     last_error, created_at_ms";

fn delivery(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeliveryRow> {
    Ok(DeliveryRow {
        seq: r.get(0)?,
        event_id: r.get(1)?,
        endpoint_id: r.get(2)?,
        kind: r.get(3)?,
        subject: r.get(4)?,
        body: r.get(5)?,
        status: r.get(6)?,
        attempts: r.get(7)?,
        last_error: r.get(8)?,
        created_at_ms: r.get(9)?,
    })
}

impl SqliteStorage {
    /// Runs `job` on the writer's connection, after the writes queued
    /// before it, and waits for its answer.
    fn on_writer<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection, &ServerSecret) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StorageError> {
        let (tx, rx) = mpsc::channel();
        let path = self.path.clone();
        let run = move |conn: &mut Connection, secret: &ServerSecret| {
            let _ = tx.send(job(conn, secret).map_err(|e| sql_error(&path, e)));
        };
        let stopped = || StorageError::Unavailable("the storage writer has stopped".into());
        if !self.send(Job::Run(Box::new(run))) {
            return Err(stopped());
        }
        rx.recv().map_err(|_| stopped())?
    }
}

impl WebhookStore for SqliteStorage {
    fn create_endpoint(&self, endpoint: &EndpointRow) -> Result<(), StorageError> {
        let e = endpoint.clone();
        self.on_writer(move |conn, secret| {
            conn.prepare_cached(
                "INSERT INTO webhook_endpoints (id, url, kinds, secret, description, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                e.id,
                e.url,
                e.kinds_column(),
                seal_endpoint_secret(secret, &e.id, &e.secret),
                e.description,
                e.created_at_ms
            ])
            .map(drop)
        })
    }

    fn endpoints(&self) -> Result<Vec<EndpointRow>, StorageError> {
        let rows: Vec<(String, String, String, String, String, i64)> =
            self.on_writer(|conn, _| {
                conn.prepare_cached(
                    "SELECT id, url, kinds, secret, description, created_at_ms
                     FROM webhook_endpoints ORDER BY created_at_ms, id",
                )?
                .query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect()
            })?;
        rows.into_iter()
            .map(|(id, url, kinds, sealed, description, created_at_ms)| {
                Ok(EndpointRow {
                    secret: unseal_endpoint_secret(&self.secret, &id, &sealed)?,
                    id,
                    url,
                    kinds: EndpointRow::kinds_of(&kinds),
                    description,
                    created_at_ms,
                })
            })
            .collect()
    }

    fn delete_endpoint(&self, id: &str) -> Result<bool, StorageError> {
        let id = id.to_owned();
        self.on_writer(move |conn, _| {
            let mut found = false;
            in_transaction(conn, |tx| {
                tx.execute(
                    "DELETE FROM webhook_deliveries WHERE endpoint_id = ?1",
                    [&id],
                )?;
                found = tx.execute("DELETE FROM webhook_endpoints WHERE id = ?1", [&id])? == 1;
                Ok(())
            })?;
            Ok(found)
        })
    }

    fn lease(
        &self,
        owner: &str,
        now_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<DeliveryRow>, StorageError> {
        let owner = owner.to_owned();
        self.on_writer(move |conn, _| {
            let mut leased = Vec::new();
            in_transaction(conn, |tx| {
                leased = tx
                    .prepare_cached(&format!(
                        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d
                         WHERE status = 'pending' AND next_at_ms <= ?1
                           AND (lease_until_ms IS NULL OR lease_until_ms <= ?1)
                           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                               WHERE p.status = 'pending' AND p.endpoint_id = d.endpoint_id
                                 AND p.subject = d.subject AND p.seq < d.seq)
                         ORDER BY seq LIMIT ?2"
                    ))?
                    .query_map(params![now_ms, limit as i64], delivery)?
                    .collect::<rusqlite::Result<_>>()?;
                for d in &leased {
                    tx.prepare_cached(
                        "UPDATE webhook_deliveries SET lease_owner = ?2, lease_until_ms = ?3
                         WHERE seq = ?1",
                    )?
                    .execute(params![d.seq, owner, until_ms])?;
                }
                Ok(())
            })?;
            Ok(leased)
        })
    }

    fn settle(&self, seq: i64, owner: &str, outcome: &Settle) -> Result<bool, StorageError> {
        Ok(self.settle_all(owner, &[(seq, outcome.clone())])? == 1)
    }

    /// One transaction (one commit) for all of them.
    fn settle_all(&self, owner: &str, outcomes: &[(i64, Settle)]) -> Result<u64, StorageError> {
        let owner = owner.to_owned();
        let outcomes = outcomes.to_vec();
        self.on_writer(move |conn, _| {
            let mut settled = 0;
            in_transaction(conn, |tx| {
                for (seq, outcome) in &outcomes {
                    let next = match outcome {
                        Settle::Retry { at_ms, .. } => Some(*at_ms),
                        _ => None,
                    };
                    settled += tx
                        .prepare_cached(
                            "UPDATE webhook_deliveries SET status = ?3, attempts = attempts + 1,
                                last_error = ?4, next_at_ms = coalesce(?5, next_at_ms),
                                lease_owner = NULL, lease_until_ms = NULL
                             WHERE seq = ?1 AND lease_owner = ?2 AND status = 'pending'",
                        )?
                        .execute(params![seq, owner, outcome.status(), outcome.error(), next])?
                        as u64;
                }
                Ok(())
            })?;
            Ok(settled)
        })
    }

    fn deliveries(
        &self,
        endpoint_id: &str,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DeliveryRow>, StorageError> {
        let endpoint_id = endpoint_id.to_owned();
        let status = status.map(str::to_owned);
        self.on_writer(move |conn, _| {
            conn.prepare_cached(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries
                 WHERE endpoint_id = ?1 AND (?2 IS NULL OR status = ?2)
                 ORDER BY seq DESC LIMIT ?3"
            ))?
            .query_map(params![endpoint_id, status, limit as i64], delivery)?
            .collect()
        })
    }

    fn replay(
        &self,
        endpoint_id: &str,
        event_id: Option<&str>,
        since_ms: i64,
        now_ms: i64,
    ) -> Result<u64, StorageError> {
        let endpoint_id = endpoint_id.to_owned();
        let event_id = event_id.map(str::to_owned);
        self.on_writer(move |conn, _| {
            let n = conn
                .prepare_cached(
                    "UPDATE webhook_deliveries SET status = 'pending', attempts = 0,
                        next_at_ms = ?4, lease_owner = NULL, lease_until_ms = NULL
                     WHERE endpoint_id = ?1 AND status = 'failed'
                       AND (CASE WHEN ?2 IS NULL THEN created_at_ms >= ?3 ELSE event_id = ?2 END)",
                )?
                .execute(params![endpoint_id, event_id, since_ms, now_ms])?;
            Ok(n as u64)
        })
    }

    fn release_leases(&self) -> Result<u64, StorageError> {
        self.on_writer(|conn, _| {
            let n = conn.execute(
                "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until_ms = NULL
                 WHERE lease_owner IS NOT NULL",
                [],
            )?;
            Ok(n as u64)
        })
    }

    fn prune_delivered(&self, before_ms: i64, limit: usize) -> Result<u64, StorageError> {
        self.on_writer(move |conn, _| {
            let n = conn
                .prepare_cached(
                    "DELETE FROM webhook_deliveries WHERE seq IN (
                        SELECT seq FROM webhook_deliveries
                        WHERE status = 'delivered' AND created_at_ms < ?1 LIMIT ?2)",
                )?
                .execute(params![before_ms, limit as i64])?;
            Ok(n as u64)
        })
    }

    fn backlog(&self) -> Result<Backlog, StorageError> {
        self.on_writer(|conn, _| {
            let (pending, oldest): (i64, Option<i64>) = conn
                .prepare_cached(
                    "SELECT count(*), min(created_at_ms) FROM webhook_deliveries
                     WHERE status = 'pending'",
                )?
                .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?
                .unwrap_or((0, None));
            Ok(Backlog {
                pending: pending.max(0) as u64,
                oldest_ms: oldest,
            })
        })
    }
}
