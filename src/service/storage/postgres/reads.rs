//! Reading games and tournaments back: the SQL of PostgreSQL, the rows
//! decoded by the shared codec ([`super::super::codec`]).

use tokio_postgres::types::ToSql;

use super::super::codec::{Assembly, BadRow, GameColumns, MoveColumns};
use super::super::{ServerSecret, StorageError, StoredGame, TournamentRow};
use super::{PostgresStorage, get, pg_error};

/// A row that cannot be read back.
pub(super) fn bad_row(target: &str, what: String) -> StorageError {
    StorageError::Corrupt(format!("postgres {target}: stored {what}"))
}

/// The games `filter` (a `WHERE …` clause with its order and limit) picks,
/// with their seats, moves and ends (seats and moves of all of them read in
/// one query each), all read in one snapshot (a read-only repeatable-read
/// transaction): a fold of the journal committed meanwhile is seen wholly
/// or not at all.
pub(super) async fn read_games(
    client: &tokio_postgres::Client,
    secret: &ServerSecret,
    filter: &str,
    params: &[&(dyn ToSql + Sync)],
    target: &str,
) -> Result<Vec<StoredGame>, StorageError> {
    client
        .batch_execute("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .await
        .map_err(|e| pg_error(target, e))?;
    let games = read_in_snapshot(client, secret, filter, params, target).await;
    let end = if games.is_ok() { "COMMIT" } else { "ROLLBACK" };
    // The connection goes back to the pool: never inside a transaction.
    client
        .batch_execute(end)
        .await
        .map_err(|e| pg_error(target, e))?;
    games
}

async fn read_in_snapshot(
    client: &tokio_postgres::Client,
    secret: &ServerSecret,
    filter: &str,
    params: &[&(dyn ToSql + Sync)],
    target: &str,
) -> Result<Vec<StoredGame>, StorageError> {
    let err = |e| pg_error(target, e);
    let corrupt = |e: BadRow| bad_row(target, e.0);
    let rows = client
        .query(
            &format!(
                "SELECT id, game, variant, options, seed, seed_supplied, clock_mode,
                    clock_initial_ms, clock_increment_ms, clock_per_move_ms, first_move_ms,
                    labels::text, draw_offers, created_at_ms, ply, status, winners, scores,
                    reason, finished_at_ms, forfeits, failure_ending, lag_max_per_move_ms, lag_quota_ms
                 FROM games {filter}"
            ),
            params,
        )
        .await
        .map_err(err)?;
    let mut games = Assembly::new();
    for r in &rows {
        games.push_game(game_columns(r), secret).map_err(corrupt)?;
    }
    if games.is_empty() {
        return Ok(Vec::new());
    }
    let ids = games.ids();
    let seats = client
        .query(
            "SELECT game_id, seat, name, token_sha256 FROM seats
             WHERE game_id = ANY($1) ORDER BY game_id, seat",
            &[&ids],
        )
        .await
        .map_err(err)?;
    for r in &seats {
        let hash: Vec<u8> = r.get(3);
        games
            .push_seat(r.get(0), r.get(1), r.get(2), &hash)
            .map_err(corrupt)?;
    }
    let moves = client
        .query(
            "SELECT game_id, ply, seat, notation, request_id, clock_ms, played_at_ms, substituted,
                charged_ms, compensated_ms, lag_ms
             FROM moves WHERE game_id = ANY($1) ORDER BY game_id, ply",
            &[&ids],
        )
        .await
        .map_err(err)?;
    for r in &moves {
        games
            .push_move(r.get(0), move_columns(r))
            .map_err(corrupt)?;
    }
    if games.any_in_progress() {
        read_journaled(client, &mut games, &ids, target).await?;
    }
    games.finish().map_err(corrupt)
}

/// Moves not folded yet of games `ids` (docs/STORAGE.md, "The move
/// journal on PostgreSQL"), after the folded ones; the last one gives the
/// ply and the standing draw offer.
async fn read_journaled(
    client: &tokio_postgres::Client,
    games: &mut Assembly,
    ids: &[String],
    target: &str,
) -> Result<(), StorageError> {
    let corrupt = |e: BadRow| bad_row(target, e.0);
    let journaled = client
        .query(
            "SELECT game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
                    substituted, charged_ms, compensated_ms, lag_ms, draw_offers
                 FROM journal WHERE game_id = ANY($1) ORDER BY game_id, ply",
            &[&ids],
        )
        .await
        .map_err(|e| pg_error(target, e))?;
    for r in &journaled {
        games
            .push_journaled(r.get(0), move_columns(r), r.get::<_, Option<&str>>(11))
            .map_err(corrupt)?;
    }
    Ok(())
}

/// A move of `moves` or `journal`, selected as `game_id, ply, seat,
/// notation, request_id, clock_ms, played_at_ms, substituted, charged_ms,
/// compensated_ms, lag_ms` (its game id left to the caller).
fn move_columns(r: &tokio_postgres::Row) -> MoveColumns {
    MoveColumns {
        ply: r.get(1),
        seat: Some(r.get(2)),
        notation: r.get(3),
        request_id: r.get(4),
        clock_ms: r.get(5),
        played_at_ms: r.get(6),
        substituted: r.get(7),
        charged_ms: r.get(8),
        compensated_ms: r.get(9),
        lag_ms: r.get(10),
    }
}

/// The columns of a row of `games`, as [`read_games`] selects them.
fn game_columns(r: &tokio_postgres::Row) -> GameColumns {
    GameColumns {
        id: r.get(0),
        game: r.get(1),
        variant: r.get(2),
        options: r.get(3),
        seed: r.get(4),
        seed_supplied: r.get(5),
        clock_mode: r.get(6),
        clock_initial_ms: r.get(7),
        clock_increment_ms: r.get(8),
        clock_per_move_ms: r.get(9),
        first_move_ms: r.get(10),
        labels: r.get(11),
        draw_offers: r.get(12),
        created_at_ms: r.get(13),
        ply: r.get(14),
        status: r.get(15),
        winners: r.get(16),
        scores: r.get(17),
        reason: r.get(18),
        finished_at_ms: r.get(19),
        forfeits: r.get(20),
        failure_ending: r.get(21),
        lag_max_per_move_ms: r.get(22),
        lag_quota_ms: r.get(23),
    }
}

/// A tournament's row, read by name.
pub(super) fn tournament_row(r: &tokio_postgres::Row) -> TournamentRow {
    TournamentRow {
        id: r.get("id"),
        status: r.get("status"),
        document: r.get("document"),
        created_at_ms: r.get("created_at_ms"),
    }
}

impl PostgresStorage {
    /// The id of a stored tournament whose document contains `fragment` (a
    /// JSON value, by `jsonb` containment: e.g. an entrant with a given key
    /// hash), if any.
    pub async fn tournament_containing(
        &self,
        fragment: &str,
    ) -> Result<Option<String>, StorageError> {
        let fragment = fragment.to_string();
        self.run(|pool, target, _| async move {
            let client = get(&pool, &target).await?;
            let row = client
                .query_opt(
                    "SELECT id FROM tournaments WHERE document::jsonb @> $1::text::jsonb
                     ORDER BY id LIMIT 1",
                    &[&fragment],
                )
                .await
                .map_err(|e| pg_error(&target, e))?;
            Ok(row.map(|r| r.get(0)))
        })
        .await
    }
}
