//! Applying one write inside a writer's transaction: the SQL of each kind
//! of write, its values from the shared codec ([`super::super::codec`]),
//! and fencing: every write of something leased names the lease's owner
//! and epoch, and one whose lease moved is refused ([`super::leases`]).

use deadpool_postgres::Transaction;

use super::super::codec::{
    clock_columns, end_columns, labels_json, ms, nonzero, offers_column, sealed_seed,
};
use super::super::{GameRow, MoveRow, OutcomeRow, StorageError, TournamentRow, Write, unix_ms};
use super::leases::{Leased, Node};
use super::notices::notify;
use super::pg_error;

/// Applies `write`, made under the lease of epoch `epoch` (`None`: the
/// lease this node holds now; for a tournament, no lease), and the webhook
/// events it carries, in the same transaction.
pub(super) async fn apply(
    tx: &Transaction<'_>,
    write: &Write,
    epoch: Option<i64>,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    match write {
        Write::Outboxed(change, events) => {
            apply_change(tx, change, epoch, target, node).await?;
            super::outbox::insert_events(tx, events, target).await
        }
        change => apply_change(tx, change, epoch, target, node).await,
    }
}

async fn apply_change(
    tx: &Transaction<'_>,
    write: &Write,
    epoch: Option<i64>,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    match write {
        Write::Outboxed(..) => Err(StorageError::Conflict(
            "a write carries its events once".into(),
        )),
        Write::Tournament(row) => match epoch {
            // Under a lease (cluster mode): fenced.
            Some(epoch) => apply_tournament_leased(tx, row, epoch, target, node).await,
            None => apply_tournament(tx, row, target).await,
        },
        Write::Create(game, moves, end) => {
            insert_game(tx, game, moves.len(), end.is_none(), target, node).await?;
            for mv in moves {
                insert_move(tx, mv, target).await?;
            }
            match end {
                Some(end) => apply_end(tx, end, target, None).await,
                None => Ok(()),
            }
        }
        Write::Move(mv, end) => {
            let epoch = node.fence(Leased::Game, &mv.game_id, epoch)?;
            advance(tx, mv, epoch, target, node).await?;
            insert_move(tx, mv, target).await?;
            if let Some(end) = end {
                apply_end(tx, end, target, Some((node, epoch))).await?;
            }
            notify(tx, &mv.game_id, target).await
        }
        Write::DrawOffer { game_id, seats } => {
            let epoch = node.fence(Leased::Game, game_id, epoch)?;
            let changed = execute(
                tx,
                "UPDATE games SET draw_offers = $2, turn_started_at = now()
                 WHERE id = $1 AND status = 'in_progress' AND owner = $3 AND epoch = $4",
                &[game_id, &offers_column(*seats), &node.id, &epoch],
                target,
            )
            .await?;
            if changed != 1 {
                let missing = no_such_game(target, game_id);
                return Err(refused(tx, node, game_id, epoch, target, missing).await);
            }
            notify(tx, game_id, target).await
        }
        Write::End(end) => {
            let epoch = node.fence(Leased::Game, &end.game_id, epoch)?;
            apply_end(tx, end, target, Some((node, epoch))).await?;
            notify(tx, &end.game_id, target).await
        }
    }
}

/// Inserts a new game at ply `ply` with its seats; `leased`: under a new
/// lease of this node (epoch 1), else without an owner (an imported
/// finished game).
async fn insert_game(
    tx: &Transaction<'_>,
    game: &GameRow,
    ply: usize,
    leased: bool,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let labels = labels_json(&game.labels)?;
    let (initial, increment, per_move, first_move) = clock_columns(&game.clock);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO games (id, game, variant, options, seed, seed_supplied,
                clock_mode, clock_initial_ms, clock_increment_ms,
                clock_per_move_ms, first_move_ms, labels, status, ply, created_at_ms,
                updated_at_ms, owner, epoch, lease_expires_at, turn_started_at,
                forfeits, lag_max_per_move_ms, lag_quota_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb,
                'in_progress', $13, $14, $14, $15, $16,
                now() + $17::float8 * interval '1 millisecond', now(), $18, $19, $20)",
        )
        .await
        .map_err(err)?;
    tx.execute(
        &stmt,
        &[
            &game.id,
            &game.game,
            &game.variant,
            &game.options,
            &sealed_seed(game, &node.secret).map(|s| s.to_vec()),
            &game.setup.is_some_and(|s| s.supplied),
            &game.clock.mode,
            &initial,
            &increment,
            &per_move,
            &first_move,
            &labels,
            &(ply as i64),
            &game.created_at_ms,
            &leased.then_some(node.id.as_str()),
            &i64::from(leased),
            &(node.lease_ms() as f64),
            &game.forfeits,
            &nonzero(game.clock.lag_max_per_move_ms),
            &nonzero(game.clock.lag_quota_ms),
        ],
    )
    .await
    .map_err(err)?;
    if leased {
        node.hold(&game.id, 1);
    }
    let stmt = tx
        .prepare_cached(
            "INSERT INTO seats (game_id, seat, name, token_sha256) VALUES ($1, $2, $3, $4)",
        )
        .await
        .map_err(err)?;
    for (i, seat) in game.seats.iter().enumerate() {
        let number = i as i64 + 1;
        tx.execute(
            &stmt,
            &[&game.id, &number, &seat.name, &seat.token_sha256.as_slice()],
        )
        .await
        .map_err(err)?;
    }
    Ok(())
}

/// Moves game `mv.game_id` on to the move's ply. The game's row first: the
/// update takes its lock, so a second writer of the same ply waits here,
/// then finds the ply moved on and is refused; the (game, ply) key refuses
/// it again. It names the lease's owner and epoch (fencing): a replica
/// whose lease was taken over changes nothing.
async fn advance(
    tx: &Transaction<'_>,
    mv: &MoveRow,
    epoch: i64,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let stmt = tx
        .prepare_cached(
            "UPDATE games SET ply = $2::bigint, draw_offers = $3, updated_at_ms = $4,
                turn_started_at = now()
             WHERE id = $1 AND status = 'in_progress' AND ply = $2::bigint - 1
               AND owner = $5 AND epoch = $6",
        )
        .await
        .map_err(err)?;
    let changed = tx
        .execute(
            &stmt,
            &[
                &mv.game_id,
                &i64::from(mv.ply),
                &offers_column(mv.draw_offers),
                &mv.played_at_ms,
                &node.id,
                &epoch,
            ],
        )
        .await
        .map_err(err)?;
    if changed != 1 {
        let stale = StorageError::Conflict(format!(
            "postgres {target}: game `{}` is not stored in progress at ply {}",
            mv.game_id,
            mv.ply.saturating_sub(1)
        ));
        return Err(refused(tx, node, &mv.game_id, epoch, target, stale).await);
    }
    Ok(())
}

/// Why a fenced update of `game_id`'s row changed nothing: the fenced error
/// when the lease moved (the lease is forgotten), else `otherwise`.
pub(super) async fn refused(
    tx: &Transaction<'_>,
    node: &Node,
    game_id: &str,
    epoch: i64,
    target: &str,
    otherwise: StorageError,
) -> StorageError {
    match Leased::Game.holder(tx, game_id).await {
        Ok(Some((owner, now))) if owner.as_deref() != Some(node.id.as_str()) || now != epoch => {
            if node.epoch(game_id) == Some(epoch) {
                node.forget(game_id);
            }
            Leased::Game.fenced_by(game_id, owner.as_deref(), now, epoch)
        }
        // Ours, but not at the ply this replica's copy is at (a commit
        // whose answer was lost stored a move it does not know): the copy
        // is reloaded from the database.
        Ok(Some(_)) => StorageError::fenced(
            game_id,
            &format!("{} (reload it from the database)", otherwise.message()),
        ),
        Ok(None) => otherwise,
        Err(e) => pg_error(target, e),
    }
}

/// Inserts or replaces a tournament's document, whoever owns it (a store
/// without leases on it: tests, a referee before schema 4).
async fn apply_tournament(
    tx: &Transaction<'_>,
    row: &TournamentRow,
    target: &str,
) -> Result<(), StorageError> {
    let now = unix_ms(std::time::SystemTime::now());
    execute(
        tx,
        "INSERT INTO tournaments (id, status, document, created_at_ms, updated_at_ms)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (id) DO UPDATE
         SET status = EXCLUDED.status, document = EXCLUDED.document,
             updated_at_ms = EXCLUDED.updated_at_ms",
        &[
            &row.id,
            &row.status,
            &row.document,
            &row.created_at_ms,
            &now,
        ],
        target,
    )
    .await?;
    Ok(())
}

/// Writes a tournament's document under this node's lease of epoch
/// `epoch` (fencing, docs/TOURNAMENTS.md "In a cluster"): a new tournament
/// is inserted with that lease; a stored one is replaced only while its row
/// still names this node and that epoch, else the write is refused, fenced.
async fn apply_tournament_leased(
    tx: &Transaction<'_>,
    row: &TournamentRow,
    epoch: i64,
    target: &str,
    node: &Node,
) -> Result<(), StorageError> {
    let now = unix_ms(std::time::SystemTime::now());
    let changed = execute(
        tx,
        "INSERT INTO tournaments (id, status, document, created_at_ms, updated_at_ms,
                owner, epoch, lease_expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8::float8 * interval '1 millisecond')
             ON CONFLICT (id) DO UPDATE
             SET status = EXCLUDED.status, document = EXCLUDED.document,
                 updated_at_ms = EXCLUDED.updated_at_ms
             WHERE tournaments.owner = EXCLUDED.owner AND tournaments.epoch = EXCLUDED.epoch",
        &[
            &row.id,
            &row.status,
            &row.document,
            &row.created_at_ms,
            &now,
            &node.id,
            &epoch,
            &(node.lease_ms() as f64),
        ],
        target,
    )
    .await?;
    if changed == 1 {
        return Ok(());
    }
    // Not replaced: the row names another owner or epoch.
    match Leased::Tournament.holder(tx, &row.id).await {
        Ok(Some((owner, now))) => {
            Err(Leased::Tournament.fenced_by(&row.id, owner.as_deref(), now, epoch))
        }
        Ok(None) => Err(Leased::Tournament.fenced_by(&row.id, None, -1, epoch)),
        Err(e) => Err(pg_error(target, e)),
    }
}

/// Runs `sql` (prepared once per connection and kept) with `params`;
/// returns how many rows it changed.
async fn execute(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    target: &str,
) -> Result<u64, StorageError> {
    let stmt = tx
        .prepare_cached(sql)
        .await
        .map_err(|e| pg_error(target, e))?;
    tx.execute(&stmt, params)
        .await
        .map_err(|e| pg_error(target, e))
}

fn no_such_game(target: &str, id: &str) -> StorageError {
    StorageError::Conflict(format!(
        "postgres {target}: no stored game `{id}` in progress"
    ))
}

async fn insert_move(tx: &Transaction<'_>, mv: &MoveRow, target: &str) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO moves (game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
                substituted, charged_ms, compensated_ms, lag_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .await
        .map_err(err)?;
    tx.execute(
        &stmt,
        &[
            &mv.game_id,
            &i64::from(mv.ply),
            &i64::from(mv.seat.number()),
            &mv.notation,
            &mv.request_id,
            &ms(mv.clock_ms),
            &mv.played_at_ms,
            &mv.substituted,
            &ms(mv.lag.charged_ms),
            &ms(mv.lag.compensated_ms),
            &mv.lag.lag_ms.map(ms),
        ],
    )
    .await
    .map_err(err)?;
    Ok(())
}

/// Ends a game; `fenced` names the lease the write must hold (none while
/// creating an imported finished game).
async fn apply_end(
    tx: &Transaction<'_>,
    end: &OutcomeRow,
    target: &str,
    fenced: Option<(&Node, i64)>,
) -> Result<(), StorageError> {
    let err = |e| pg_error(target, e);
    let columns = end_columns(end);
    let stmt = tx
        .prepare_cached(
            "UPDATE games SET status = $2, winners = $3, reason = $4, ply = $5,
                finished_at_ms = $6, updated_at_ms = $6, draw_offers = NULL, scores = $7,
                failure_ending = $10
             WHERE id = $1 AND status = 'in_progress'
               AND ($8::text IS NULL OR (owner = $8 AND epoch = $9))",
        )
        .await
        .map_err(err)?;
    let changed = tx
        .execute(
            &stmt,
            &[
                &end.game_id,
                &end.status,
                &columns.winners,
                &columns.reason,
                &i64::from(end.ply),
                &end.at_ms,
                &columns.scores,
                &fenced.map(|(node, _)| node.id.as_str()),
                &fenced.map_or(0, |(_, epoch)| epoch),
                &columns.failure_ending,
            ],
        )
        .await
        .map_err(err)?;
    if changed != 1 {
        let missing = no_such_game(target, &end.game_id);
        return Err(match fenced {
            Some((node, epoch)) => refused(tx, node, &end.game_id, epoch, target, missing).await,
            None => missing,
        });
    }
    Ok(())
}
