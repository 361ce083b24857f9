//! The webhook outbox in PostgreSQL (docs/WEBHOOKS.md): the deliveries a
//! write inserts in its own transaction, and the [`WebhookStore`] calls.
//! Replicas lease deliveries with `FOR UPDATE SKIP LOCKED` and a lease
//! expiry: a replica killed mid-delivery leaves leases that expire, and
//! another replica delivers.

use deadpool_postgres::Transaction;

use super::super::StorageError;
use super::super::outbox::{
    Backlog, DeliveryRow, EndpointRow, OutboxEvent, Settle, WebhookStore, seal_endpoint_secret,
    unseal_endpoint_secret,
};
use super::{PostgresStorage, get, pg_error};

/// Version 7: the endpoints and the outbox (one row per event and
/// endpoint).
pub(super) const SCHEMA_7: &str = r#"
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id            TEXT COLLATE "C" PRIMARY KEY,
    url           TEXT NOT NULL,
    kinds         TEXT NOT NULL,
    secret        TEXT NOT NULL,
    description   TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id       TEXT NOT NULL,
    endpoint_id    TEXT COLLATE "C" NOT NULL,
    kind           TEXT NOT NULL,
    subject        TEXT NOT NULL,
    body           TEXT NOT NULL,
    created_at_ms  BIGINT NOT NULL,
    status         TEXT NOT NULL,
    attempts       BIGINT NOT NULL DEFAULT 0,
    next_at_ms     BIGINT NOT NULL,
    lease_owner    TEXT,
    lease_until_ms BIGINT,
    last_error     TEXT NOT NULL DEFAULT '',
    UNIQUE (event_id, endpoint_id)
);
CREATE INDEX IF NOT EXISTS webhook_pending ON webhook_deliveries (endpoint_id, subject, seq)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_due ON webhook_deliveries (next_at_ms) WHERE status = 'pending';
"#;

/// Version 9: an index of the delivered rows by the time of their event,
/// which the retention prunes by.
pub(super) const SCHEMA_9: &str = r#"
CREATE INDEX IF NOT EXISTS webhook_delivered ON webhook_deliveries (created_at_ms)
    WHERE status = 'delivered';
"#;

/// Inserts the deliveries of `events` (see the SQLite backend's twin).
pub(super) async fn insert_events(
    tx: &Transaction<'_>,
    events: &[OutboxEvent],
    target: &str,
) -> Result<(), StorageError> {
    for e in events {
        let stmt = tx
            .prepare_cached(
                "INSERT INTO webhook_deliveries
                    (event_id, endpoint_id, kind, subject, body, created_at_ms, status,
                     next_at_ms, last_error)
                 SELECT $1, ep.id, $2, $3, $4, $5,
                        CASE WHEN ep.is_full THEN 'failed' ELSE 'pending' END, $5,
                        CASE WHEN ep.is_full THEN 'the endpoint''s queue was full' ELSE '' END
                 FROM (SELECT id, (SELECT count(*) FROM webhook_deliveries d
                                   WHERE d.endpoint_id = webhook_endpoints.id
                                     AND d.status = 'pending') >= $7 AS is_full
                       FROM webhook_endpoints WHERE strpos(kinds, $6) > 0) AS ep",
            )
            .await
            .map_err(|er| pg_error(target, er))?;
        let kind = format!(",{},", e.kind);
        let limit = e.queue_limit as i64;
        tx.execute(
            &stmt,
            &[&e.id, &e.kind, &e.subject, &e.body, &e.at_ms, &kind, &limit],
        )
        .await
        .map_err(|er| pg_error(target, er))?;
    }
    Ok(())
}

const DELIVERY_COLUMNS: &str = "seq, event_id, endpoint_id, kind, subject, body, status, attempts, \
     last_error, created_at_ms";

fn delivery(r: &tokio_postgres::Row) -> DeliveryRow {
    DeliveryRow {
        seq: r.get(0),
        event_id: r.get(1),
        endpoint_id: r.get(2),
        kind: r.get(3),
        subject: r.get(4),
        body: r.get(5),
        status: r.get(6),
        attempts: u32::try_from(r.get::<_, i64>(7)).unwrap_or(u32::MAX),
        last_error: r.get(8),
        created_at_ms: r.get(9),
    }
}

impl WebhookStore for PostgresStorage {
    fn create_endpoint(&self, endpoint: &EndpointRow) -> Result<(), StorageError> {
        let e = endpoint.clone();
        let sealed = seal_endpoint_secret(&self.node.secret, &e.id, &e.secret);
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            client
                .execute(
                    "INSERT INTO webhook_endpoints
                        (id, url, kinds, secret, description, created_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[
                        &e.id,
                        &e.url,
                        &e.kinds_column(),
                        &sealed,
                        &e.description,
                        &e.created_at_ms,
                    ],
                )
                .await
                .map_err(|er| pg_error(&target, er))?;
            Ok(())
        })
    }

    fn endpoints(&self) -> Result<Vec<EndpointRow>, StorageError> {
        let rows = self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            client
                .query(
                    "SELECT id, url, kinds, secret, description, created_at_ms
                     FROM webhook_endpoints ORDER BY created_at_ms, id",
                    &[],
                )
                .await
                .map_err(|er| pg_error(&target, er))
        })?;
        rows.iter()
            .map(|r| {
                let id: String = r.get(0);
                let sealed: String = r.get(3);
                Ok(EndpointRow {
                    secret: unseal_endpoint_secret(&self.node.secret, &id, &sealed)?,
                    id,
                    url: r.get(1),
                    kinds: EndpointRow::kinds_of(r.get(2)),
                    description: r.get(4),
                    created_at_ms: r.get(5),
                })
            })
            .collect()
    }

    fn delete_endpoint(&self, id: &str) -> Result<bool, StorageError> {
        let id = id.to_owned();
        self.call(|pool, target| async move {
            let mut client = get(&pool, &target).await?;
            let tx = client
                .transaction()
                .await
                .map_err(|e| pg_error(&target, e))?;
            tx.execute(
                "DELETE FROM webhook_deliveries WHERE endpoint_id = $1",
                &[&id],
            )
            .await
            .map_err(|e| pg_error(&target, e))?;
            let n = tx
                .execute("DELETE FROM webhook_endpoints WHERE id = $1", &[&id])
                .await
                .map_err(|e| pg_error(&target, e))?;
            tx.commit().await.map_err(|e| pg_error(&target, e))?;
            Ok(n == 1)
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
        let limit = limit as i64;
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            // Locked rows (another replica leasing them now) are skipped;
            // a row leased meanwhile is checked again on its new version.
            let rows = client
                .query(
                    &format!(
                        "WITH due AS (
                            SELECT seq FROM webhook_deliveries d
                            WHERE status = 'pending' AND next_at_ms <= $1
                              AND (lease_until_ms IS NULL OR lease_until_ms <= $1)
                              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                                  WHERE p.status = 'pending' AND p.endpoint_id = d.endpoint_id
                                    AND p.subject = d.subject AND p.seq < d.seq)
                            ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
                         UPDATE webhook_deliveries w SET lease_owner = $3, lease_until_ms = $4
                         FROM due WHERE w.seq = due.seq
                         RETURNING {}",
                        DELIVERY_COLUMNS
                            .split(", ")
                            .map(|c| format!("w.{}", c.trim()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    &[&now_ms, &limit, &owner, &until_ms],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            let mut leased: Vec<DeliveryRow> = rows.iter().map(delivery).collect();
            leased.sort_by_key(|d| d.seq);
            Ok(leased)
        })
    }

    fn settle(&self, seq: i64, owner: &str, outcome: &Settle) -> Result<bool, StorageError> {
        let owner = owner.to_owned();
        let status = outcome.status();
        let error = outcome.error().to_owned();
        let next = match outcome {
            Settle::Retry { at_ms, .. } => Some(*at_ms),
            _ => None,
        };
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let n = client
                .execute(
                    "UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1,
                        last_error = $4, next_at_ms = coalesce($5, next_at_ms),
                        lease_owner = NULL, lease_until_ms = NULL
                     WHERE seq = $1 AND lease_owner = $2 AND status = 'pending'",
                    &[&seq, &owner, &status, &error, &next],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(n == 1)
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
        let limit = limit as i64;
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries
                         WHERE endpoint_id = $1 AND ($2::TEXT IS NULL OR status = $2)
                         ORDER BY seq DESC LIMIT $3"
                    ),
                    &[&endpoint_id, &status, &limit],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows.iter().map(delivery).collect())
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
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            client
                .execute(
                    "UPDATE webhook_deliveries SET status = 'pending', attempts = 0,
                        next_at_ms = $4, lease_owner = NULL, lease_until_ms = NULL
                     WHERE endpoint_id = $1 AND status = 'failed'
                       AND (CASE WHEN $2::TEXT IS NULL THEN created_at_ms >= $3
                                 ELSE event_id = $2 END)",
                    &[&endpoint_id, &event_id, &since_ms, &now_ms],
                )
                .await
                .map_err(|e| pg_error(&target, e))
        })
    }

    fn release_leases(&self) -> Result<u64, StorageError> {
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            client
                .execute(
                    "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until_ms = NULL
                     WHERE lease_owner IS NOT NULL",
                    &[],
                )
                .await
                .map_err(|e| pg_error(&target, e))
        })
    }

    /// One statement, so one transaction, for all of them.
    fn settle_all(&self, owner: &str, outcomes: &[(i64, Settle)]) -> Result<u64, StorageError> {
        let owner = owner.to_owned();
        let mut seqs = Vec::with_capacity(outcomes.len());
        let mut statuses = Vec::with_capacity(outcomes.len());
        let mut errors = Vec::with_capacity(outcomes.len());
        let mut nexts: Vec<Option<i64>> = Vec::with_capacity(outcomes.len());
        for (seq, outcome) in outcomes {
            seqs.push(*seq);
            statuses.push(outcome.status().to_owned());
            errors.push(outcome.error().to_owned());
            nexts.push(match outcome {
                Settle::Retry { at_ms, .. } => Some(*at_ms),
                _ => None,
            });
        }
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            client
                .execute(
                    "UPDATE webhook_deliveries w SET status = o.status, attempts = w.attempts + 1,
                        last_error = o.error, next_at_ms = coalesce(o.next, w.next_at_ms),
                        lease_owner = NULL, lease_until_ms = NULL
                     FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::BIGINT[])
                          AS o(seq, status, error, next)
                     WHERE w.seq = o.seq AND w.lease_owner = $5 AND w.status = 'pending'",
                    &[&seqs, &statuses, &errors, &nexts, &owner],
                )
                .await
                .map_err(|e| pg_error(&target, e))
        })
    }

    fn prune_delivered(&self, before_ms: i64, limit: usize) -> Result<u64, StorageError> {
        let limit = limit as i64;
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            client
                .execute(
                    "DELETE FROM webhook_deliveries WHERE seq IN (
                        SELECT seq FROM webhook_deliveries
                        WHERE status = 'delivered' AND created_at_ms < $1 LIMIT $2)",
                    &[&before_ms, &limit],
                )
                .await
                .map_err(|e| pg_error(&target, e))
        })
    }

    fn backlog(&self) -> Result<Backlog, StorageError> {
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_one(
                    "SELECT count(*), min(created_at_ms) FROM webhook_deliveries
                     WHERE status = 'pending'",
                    &[],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(Backlog {
                pending: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
                oldest_ms: row.get(1),
            })
        })
    }
}
