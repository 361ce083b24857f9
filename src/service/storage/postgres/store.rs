//! The [`Storage`] trait's side of the backend: writes queued to the
//! writer of their game, blocking reads run on the storage runtime.

use std::hash::{DefaultHasher, Hash, Hasher};

use tokio::sync::oneshot;

use super::super::{
    ArchiveQuery, Commit, ServerSecret, Storage, StorageError, StoredGame, TournamentRow, Write,
};
use super::leases::{Leased, claim_all};
use super::reads::{read_games, tournament_row};
use super::{LeasedWrite, PRUNE_BATCH, PostgresStorage, get, pg_error, write_game};

impl Storage for PostgresStorage {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn durable(&self) -> bool {
        true
    }

    fn secret(&self) -> &ServerSecret {
        &self.node.secret
    }

    fn write(&self, write: Write) -> Commit {
        self.write_leased(write, None)
    }

    fn lease_of(&self, id: &str) -> Option<i64> {
        self.node.epoch(id)
    }

    fn write_leased(&self, write: Write, epoch: Option<i64>) -> Commit {
        let (tx, rx) = oneshot::channel();
        let writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(writers) = writers.as_ref() else {
            return Commit::ready(Err(StorageError::Unavailable(
                "the storage has closed".into(),
            )));
        };
        let mut hasher = DefaultHasher::new();
        write_game(&write).hash(&mut hasher);
        let writer = &writers[(hasher.finish() % writers.len() as u64) as usize];
        if writer
            .send((Box::new(LeasedWrite { write, epoch }), tx))
            .is_err()
        {
            return Commit::ready(Err(StorageError::Unavailable(
                "the storage writer has stopped".into(),
            )));
        }
        Commit::waiting(rx)
    }

    /// The games in progress this node owned (before a restart) or that
    /// have no owner, each taken with a new epoch; the games of other
    /// replicas are theirs until their lease expires (docs/CLUSTER.md).
    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        let node = self.node.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let taken = claim_all(&client, &target, &node, Leased::Game).await?;
            let ids: Vec<String> = taken.iter().map(|r| r.get(1)).collect();
            for r in &taken {
                node.hold(r.get(1), r.get(0));
            }
            read_games(
                &client,
                &node.secret,
                "WHERE id = ANY($1) ORDER BY created_at_ms, seq",
                &[&ids],
                &target,
            )
            .await
        })
    }

    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let id = id.to_string();
        let secret = self.node.secret.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let mut games = read_games(&client, &secret, "WHERE id = $1", &[&id], &target).await?;
            Ok(games.pop())
        })
    }

    fn list_finished(&self, query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError> {
        let (after_ms, after_id) = query.after.as_ref().map_or((i64::MIN, String::new()), |k| {
            (k.created_at_ms, k.id.clone())
        });
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        // `@>`: the game's labels hold every asked-for pair.
        let labels = serde_json::to_string(&query.labels)
            .map_err(|e| StorageError::Unavailable(format!("labels: {e}")))?;
        let secret = self.node.secret.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            read_games(
                &client,
                &secret,
                "WHERE status = 'finished' AND (created_at_ms, id) > ($1, $2)
                    AND labels @> $4::text::jsonb
                 ORDER BY created_at_ms, id LIMIT $3",
                &[&after_ms, &after_id, &limit, &labels],
                &target,
            )
            .await
        })
    }

    fn tournaments(&self) -> Result<Vec<TournamentRow>, StorageError> {
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    "SELECT id, status, document, created_at_ms FROM tournaments
                     ORDER BY created_at_ms, id",
                    &[],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows
                .iter()
                .map(|r| TournamentRow {
                    id: r.get(0),
                    status: r.get(1),
                    document: r.get(2),
                    created_at_ms: r.get(3),
                })
                .collect())
        })
    }

    fn shared(&self) -> bool {
        true
    }

    fn webhooks(&self) -> Option<&dyn super::super::outbox::WebhookStore> {
        Some(self)
    }

    fn list_games(
        &self,
        query: &ArchiveQuery,
        finished: Option<bool>,
    ) -> Result<Vec<StoredGame>, StorageError> {
        let (after_ms, after_id) = query.after.as_ref().map_or((i64::MIN, String::new()), |k| {
            (k.created_at_ms, k.id.clone())
        });
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let labels = serde_json::to_string(&query.labels)
            .map_err(|e| StorageError::Unavailable(format!("labels: {e}")))?;
        let statuses: Vec<&'static str> = match finished {
            Some(true) => vec!["finished"],
            Some(false) => vec!["in_progress"],
            None => vec!["in_progress", "finished"],
        };
        let secret = self.node.secret.clone();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            read_games(
                &client,
                &secret,
                "WHERE status = ANY($5) AND (created_at_ms, id) > ($1, $2)
                    AND labels @> $4::text::jsonb
                 ORDER BY created_at_ms, id LIMIT $3",
                &[&after_ms, &after_id, &limit, &labels, &statuses],
                &target,
            )
            .await
        })
    }

    fn tournament(&self, id: &str) -> Result<Option<TournamentRow>, StorageError> {
        let id = id.to_string();
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    "SELECT id, status, document, created_at_ms FROM tournaments WHERE id = $1",
                    &[&id],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.as_ref().map(tournament_row))
        })
    }

    fn tournament_page(
        &self,
        after: &str,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TournamentRow>, StorageError> {
        let after = after.to_string();
        let status = status.map(str::to_string);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(|pool, target| async move {
            let client = get(&pool, &target).await?;
            let rows = client
                .query(
                    "SELECT id, status, document, created_at_ms FROM tournaments
                     WHERE id > $1 AND ($2::text IS NULL OR status = $2)
                     ORDER BY id LIMIT $3",
                    &[&after, &status, &limit],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(rows.iter().map(tournament_row).collect())
        })
    }

    fn prune(&self, ended_before_ms: i64) -> Result<u64, StorageError> {
        self.call(|pool, target| async move {
            let mut total = 0;
            loop {
                let mut client = get(&pool, &target).await?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(|e| pg_error(&target, e))?;
                // Seats and moves go with their game (ON DELETE CASCADE).
                let n = tx
                    .execute(
                        "DELETE FROM games WHERE id IN (
                            SELECT id FROM games
                            WHERE status IN ('finished', 'expired') AND finished_at_ms < $1
                            LIMIT $2 FOR UPDATE SKIP LOCKED)",
                        &[&ended_before_ms, &PRUNE_BATCH],
                    )
                    .await
                    .map_err(|e| pg_error(&target, e))?;
                tx.commit().await.map_err(|e| pg_error(&target, e))?;
                total += n;
                if n < PRUNE_BATCH as u64 {
                    return Ok(total);
                }
            }
        })
    }
}
