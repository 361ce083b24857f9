//! The move journal (docs/STORAGE.md, "The move journal"): a move that
//! does not end its game is appended to the table `journal` (rowid order:
//! every commit writes at the end of one table, a page or two, whatever
//! games its moves belong to) instead of the game's rows in `moves`
//! (clustered by game: one page per game per commit) and its `games` row.
//! The writer folds the journal into `moves` and `games` in one transaction
//! of its own, every [`FOLD_ROWS`] moves or when it has had nothing to do
//! for [`FOLD_IDLE`], and folds a game's moves in the transaction of any
//! other change of that game (an ending, a draw offer), so a game that has
//! left play never has journaled moves.
//!
//! The writer keeps what the journal holds in memory ([`Journal`]): each
//! game's last stored ply (a move is refused unless it follows it, as the
//! `games` row's ply refused it before) and its journaled moves, to fold
//! them without reading the table back. A transaction that fails leaves the
//! memory ahead of the database; the writer then reads it back from the
//! table ([`Journal::reload`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use super::super::codec::{ms, offers_column, stored_lag};
use super::super::{MoveRow, seats_of_text};
use super::reads::bad_row;
use crate::games::Seat;

/// Journaled moves past which the writer folds the journal (between two
/// batches). `PUNCT_REFEREE_JOURNAL_FOLD_ROWS` overrides it (tests make it
/// small to fold all the time; `0` turns the journal off: each move is
/// written into `moves` and its game's row, as before the journal).
pub(crate) const FOLD_ROWS: usize = 4096;
/// Moves per game with journaled moves that the journal holds at least
/// before a fold (when that is more than [`FOLD_ROWS`]): a fold writes each
/// game's pages once for all its moves, which only pays when it has
/// several (with 4096 games moving, one move each per fold cost more than
/// no journal).
pub(crate) const FOLD_PER_GAME: usize = 8;
/// The most moves the journal holds between two folds under load (a read
/// of a game in progress reads it whole).
pub(crate) const MAX_FOLD_ROWS: usize = 65536;
/// A writer with nothing to do for this long folds the journal.
pub(crate) const FOLD_IDLE: Duration = Duration::from_millis(500);

/// When the writer folds the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FoldPolicy {
    /// Past this many journaled moves (`0`: no journal).
    pub rows: usize,
    /// Or past this many per game with journaled moves, if more (at most
    /// [`MAX_FOLD_ROWS`]).
    pub per_game: usize,
    /// When the writer was idle this long.
    pub idle: Duration,
}

impl FoldPolicy {
    /// [`FOLD_ROWS`], [`FOLD_PER_GAME`] and [`FOLD_IDLE`];
    /// `PUNCT_REFEREE_JOURNAL_FOLD_ROWS` sets the number of moves exactly
    /// (no more per game).
    pub(crate) fn from_env() -> FoldPolicy {
        let exact = std::env::var("PUNCT_REFEREE_JOURNAL_FOLD_ROWS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok());
        FoldPolicy {
            rows: exact.unwrap_or(FOLD_ROWS),
            per_game: if exact.is_some() { 0 } else { FOLD_PER_GAME },
            idle: FOLD_IDLE,
        }
    }
}

/// A game with moves in the journal, or whose last stored ply the writer
/// knows.
#[derive(Debug, Default)]
struct Pending {
    /// The last stored ply (journaled or folded).
    ply: u32,
    /// Its journaled moves (journal rowid, move), oldest first.
    moves: Vec<(i64, MoveRow)>,
}

/// What the journal holds, as the writer knows it (see the module docs).
#[derive(Debug)]
pub(super) struct Journal {
    games: HashMap<String, Pending>,
    /// Moves in the journal.
    rows: usize,
    /// Games with moves in the journal.
    waiting: usize,
    /// When to fold.
    policy: FoldPolicy,
}

impl Journal {
    /// An empty journal, folded as `policy` says.
    pub(super) fn new(policy: FoldPolicy) -> Journal {
        Journal {
            games: HashMap::new(),
            rows: 0,
            waiting: 0,
            policy,
        }
    }

    /// How long an idle writer waits before it folds.
    pub(super) fn idle(&self) -> Duration {
        self.policy.idle
    }

    /// Whether moves go to the journal (else straight into their game's
    /// rows).
    pub(super) fn enabled(&self) -> bool {
        self.policy.rows > 0
    }

    /// Moves in the journal.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the journal is due a fold between two batches: past its
    /// size (a writer left idle folds whatever is there, see
    /// [`Journal::idle`]). Under load it is folded by size only: the fewer
    /// folds, the more moves of each game one fold writes at once.
    pub(super) fn due(&self) -> bool {
        let per_game = self
            .policy
            .per_game
            .saturating_mul(self.waiting)
            .min(MAX_FOLD_ROWS);
        self.rows >= self.policy.rows.max(per_game)
    }

    /// Reads the journal back from the table (at start, and after a
    /// transaction that failed: the memory may hold its moves).
    pub(super) fn reload(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        self.games.clear();
        self.rows = 0;
        self.waiting = 0;
        let mut statement = conn.prepare_cached(
            "SELECT seq, game_id, ply, seat, notation, request_id, clock_ms, played_at_ms,
                draw_offers, substituted, charged_ms, compensated_ms, lag_ms
             FROM journal ORDER BY seq",
        )?;
        let mut rows = statement.query([])?;
        while let Some(r) = rows.next()? {
            let game_id: String = r.get(1)?;
            let seat = u32::try_from(r.get::<_, i64>(3)?)
                .ok()
                .and_then(Seat::from_number)
                .ok_or_else(|| bad_row(format!("journal: game `{game_id}`: bad seat")))?;
            let offers: Option<String> = r.get(8)?;
            let draw_offers = seats_of_text(offers.as_deref().unwrap_or(""))
                .map_err(|e| bad_row(format!("journal: game `{game_id}`: {e}")))?;
            let mv = MoveRow {
                game_id: game_id.clone(),
                ply: r.get(2)?,
                seat,
                notation: r.get(4)?,
                request_id: r.get(5)?,
                clock_ms: r.get::<_, i64>(6)?.max(0) as u64,
                played_at_ms: r.get(7)?,
                draw_offers,
                substituted: r.get(9)?,
                lag: stored_lag(r, 10)?,
            };
            let pending = self.games.entry(game_id).or_default();
            self.waiting += usize::from(pending.moves.is_empty());
            pending.ply = mv.ply;
            pending.moves.push((r.get(0)?, mv));
            self.rows += 1;
        }
        Ok(())
    }

    /// Appends `mv` (which does not end its game) to the journal, in the
    /// writer's open transaction: refused unless its game is stored in
    /// progress at the ply before.
    pub(super) fn append(&mut self, tx: &Connection, mv: &MoveRow) -> rusqlite::Result<()> {
        let stored = match self.games.get(&mv.game_id) {
            Some(pending) => Some(pending.ply),
            None => tx
                .prepare_cached("SELECT ply FROM games WHERE id = ?1 AND status = 'in_progress'")?
                .query_row([&mv.game_id], |r| r.get::<_, u32>(0))
                .optional()?,
        };
        if stored != Some(mv.ply.wrapping_sub(1)) {
            return Err(rusqlite::Error::ToSqlConversionFailure(
                format!(
                    "game `{}` is not stored in progress at ply {}",
                    mv.game_id,
                    mv.ply.saturating_sub(1)
                )
                .into(),
            ));
        }
        tx.prepare_cached(
            "INSERT INTO journal (game_id, ply, seat, notation, request_id, clock_ms,
                played_at_ms, draw_offers, substituted, charged_ms, compensated_ms, lag_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            mv.game_id,
            mv.ply,
            mv.seat.number(),
            mv.notation,
            mv.request_id,
            mv.clock_ms as i64,
            mv.played_at_ms,
            offers_column(mv.draw_offers),
            mv.substituted,
            ms(mv.lag.charged_ms),
            ms(mv.lag.compensated_ms),
            mv.lag.lag_ms.map(ms),
        ])?;
        let seq = tx.last_insert_rowid();
        let pending = self.games.entry(mv.game_id.clone()).or_default();
        self.waiting += usize::from(pending.moves.is_empty());
        pending.ply = mv.ply;
        pending.moves.push((seq, mv.clone()));
        self.rows += 1;
        Ok(())
    }

    /// Folds game `id`'s journaled moves into `moves` and its `games` row,
    /// in the writer's open transaction, before another change of that game
    /// (which then reads and writes the row as without a journal). The
    /// writer forgets the game: its next move reads the row.
    pub(super) fn fold_game(&mut self, tx: &Connection, id: &str) -> rusqlite::Result<()> {
        let Some(pending) = self.games.remove(id) else {
            return Ok(());
        };
        if pending.moves.is_empty() {
            return Ok(());
        }
        move_rows(tx, id, &pending.moves)?;
        for (seq, _) in &pending.moves {
            tx.prepare_cached("DELETE FROM journal WHERE seq = ?1")?
                .execute([seq])?;
        }
        self.rows -= pending.moves.len();
        self.waiting -= 1;
        Ok(())
    }

    /// Folds the whole journal, in a transaction of its own (atomic: a
    /// crash leaves the moves either in the journal or in `moves`, never
    /// both or neither). The writer keeps each game's ply.
    pub(super) fn fold_all(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let started = Instant::now();
        let folded = self.rows;
        let done = super::writer::in_transaction(conn, |tx| {
            for (id, pending) in &self.games {
                move_rows(tx, id, &pending.moves)?;
            }
            tx.prepare_cached("DELETE FROM journal")?.execute([])?;
            Ok(())
        });
        match done {
            Ok(()) => {
                for pending in self.games.values_mut() {
                    pending.moves.clear();
                }
                self.rows = 0;
                self.waiting = 0;
                metrics::counter!(crate::service::telemetry::STORAGE_JOURNAL_FOLDS).increment(1);
                tracing::debug!(
                    moves = folded,
                    took_ms = started.elapsed().as_millis() as u64,
                    "storage journal folded"
                );
                Ok(())
            }
            Err(e) => {
                // Nothing was folded; the journal stays as it is (and is
                // folded again later).
                if let Err(again) = self.reload(conn) {
                    tracing::warn!(error = %again, "storage journal reload failed");
                }
                Err(e)
            }
        }
    }
}

/// Writes the journaled `moves` of game `id` into `moves`, and its last
/// ply and draw offer into its `games` row (which must be at the ply
/// before the first of them).
fn move_rows(tx: &Connection, id: &str, moves: &[(i64, MoveRow)]) -> rusqlite::Result<()> {
    let (Some((_, first)), Some((_, last))) = (moves.first(), moves.last()) else {
        return Ok(());
    };
    for (_, mv) in moves {
        super::writer::insert_move(tx, mv)?;
    }
    let changed = tx
        .prepare_cached(
            "UPDATE games SET ply = ?2, draw_offers = ?3, updated_at_ms = ?4
             WHERE id = ?1 AND status = 'in_progress' AND ply = ?5",
        )?
        .execute(params![
            id,
            last.ply,
            offers_column(last.draw_offers),
            last.played_at_ms,
            first.ply.saturating_sub(1),
        ])?;
    if changed != 1 {
        return Err(bad_row(format!(
            "journal: game `{id}` is not stored in progress at ply {}",
            first.ply.saturating_sub(1)
        )));
    }
    Ok(())
}
