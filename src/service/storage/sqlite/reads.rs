//! Reading games back: the SQL of SQLite, the rows decoded by the shared
//! codec ([`super::super::codec`]).

use rusqlite::Connection;

use super::super::codec::{Assembly, BadRow, GameColumns, MoveColumns, unhex};
use super::super::{ServerSecret, StoredGame};

/// A row that cannot be read back, as rusqlite's conversion failure (which
/// [`super::sql_error`] reports as corrupt).
pub(super) fn bad_row(what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, what.into())
}

fn corrupt(e: BadRow) -> rusqlite::Error {
    bad_row(e.0)
}

/// The games `filter` (a `WHERE …` clause with its order and limit) picks,
/// with their seats, moves and ends, read in one snapshot: the writer folds
/// the journal into `moves` and `games.ply` meanwhile (docs/STORAGE.md,
/// "The move journal"), and statements each in their own snapshot could
/// see a game's row before a fold and its moves after it.
pub(super) fn read_games(
    conn: &Connection,
    secret: &ServerSecret,
    filter: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<StoredGame>> {
    if !conn.is_autocommit() {
        return read_in_snapshot(conn, secret, filter, params);
    }
    let tx = conn.unchecked_transaction()?;
    let games = read_in_snapshot(&tx, secret, filter, params);
    tx.finish()?;
    games
}

/// [`read_games`] inside a transaction the caller holds.
fn read_in_snapshot(
    conn: &Connection,
    secret: &ServerSecret,
    filter: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<StoredGame>> {
    let mut games = Assembly::new();
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, game, variant, options, seed, seed_supplied, clock_mode,
            clock_initial_ms, clock_increment_ms, clock_per_move_ms, first_move_ms, labels,
            draw_offers, created_at_ms, ply, status, winners, scores, reason, finished_at_ms,
            forfeits, failure_ending, lag_max_per_move_ms, lag_quota_ms
         FROM games {filter}"
    ))?;
    let rows = stmt.query_map(params, game_columns)?;
    for row in rows {
        games.push_game(row?, secret).map_err(corrupt)?;
    }
    if games.is_empty() {
        return Ok(Vec::new());
    }
    let mut seats = conn.prepare_cached(
        "SELECT seat, name, token_sha256 FROM seats WHERE game_id = ?1 ORDER BY seat",
    )?;
    let mut moves = conn.prepare_cached(
        "SELECT ply, seat, notation, request_id, clock_ms, played_at_ms, substituted,
            charged_ms, compensated_ms, lag_ms
         FROM moves WHERE game_id = ?1 ORDER BY ply",
    )?;
    for id in games.ids() {
        let rows = seats.query_map([&id], |r| {
            let hash: String = r.get(2)?;
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, unhex(&hash)))
        })?;
        for row in rows {
            let (number, name, hash) = row?;
            let hash = hash.map_or(Vec::new(), |h| h.to_vec());
            games.push_seat(&id, number, name, &hash).map_err(corrupt)?;
        }
        for row in moves.query_map([&id], |r| move_columns(r, 6))? {
            games.push_move(&id, row?).map_err(corrupt)?;
        }
    }
    if games.any_in_progress() {
        // Moves not folded yet (docs/STORAGE.md, "The move journal"): the
        // journal is short (folded every few thousand moves) and has no
        // index, so it is read whole, once per read.
        let mut journal = conn.prepare_cached(
            "SELECT ply, seat, notation, request_id, clock_ms, played_at_ms, game_id,
                draw_offers, substituted, charged_ms, compensated_ms, lag_ms
             FROM journal ORDER BY seq",
        )?;
        let mut rows = journal.query([])?;
        while let Some(r) = rows.next()? {
            let id: String = r.get(6)?;
            let offers: Option<String> = r.get(7)?;
            games
                .push_journaled(&id, move_columns(r, 8)?, offers.as_deref())
                .map_err(corrupt)?;
        }
    }
    games.finish().map_err(corrupt)
}

/// The columns of a row of `games`, as [`read_games`] selects them.
fn game_columns(r: &rusqlite::Row<'_>) -> rusqlite::Result<GameColumns> {
    // A seed SQLite keeps as hex; one that is not reads as no bytes (a bad
    // seed to the codec).
    let seed = r
        .get::<_, Option<String>>(4)?
        .map(|text| unhex(&text).map_or(Vec::new(), |b| b.to_vec()));
    Ok(GameColumns {
        id: r.get(0)?,
        game: r.get(1)?,
        variant: r.get(2)?,
        options: r.get(3)?,
        seed,
        seed_supplied: r.get(5)?,
        clock_mode: r.get(6)?,
        clock_initial_ms: r.get(7)?,
        clock_increment_ms: r.get(8)?,
        clock_per_move_ms: r.get(9)?,
        first_move_ms: r.get(10)?,
        labels: r.get(11)?,
        draw_offers: r.get(12)?,
        created_at_ms: r.get(13)?,
        ply: r.get(14)?,
        status: r.get(15)?,
        winners: r.get(16)?,
        scores: r.get(17)?,
        reason: r.get(18)?,
        finished_at_ms: r.get(19)?,
        forfeits: r.get(20)?,
        failure_ending: r.get(21)?,
        lag_max_per_move_ms: r.get(22)?,
        lag_quota_ms: r.get(23)?,
    })
}

/// The columns of a row of `moves` (or of `journal`), its substitution mark
/// in column `substituted` and its latency ledger in the three after it
/// (charged, compensated, estimate). A database migrated from version 1 may hold a
/// seat number as text.
fn move_columns(r: &rusqlite::Row<'_>, substituted: usize) -> rusqlite::Result<MoveColumns> {
    let seat = match r.get::<_, rusqlite::types::Value>(1)? {
        rusqlite::types::Value::Integer(n) => Some(n),
        rusqlite::types::Value::Text(t) => t.parse().ok(),
        _ => None,
    };
    Ok(MoveColumns {
        ply: r.get(0)?,
        seat,
        notation: r.get(2)?,
        request_id: r.get(3)?,
        clock_ms: r.get(4)?,
        played_at_ms: r.get(5)?,
        substituted: r.get(substituted)?,
        charged_ms: r.get(substituted + 1)?,
        compensated_ms: r.get(substituted + 2)?,
        lag_ms: r.get(substituted + 3)?,
    })
}
