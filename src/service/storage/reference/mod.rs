//! A backend that keeps rows in memory: the reference implementation the
//! storage tests run against beside SQLite, and a fault injector
//! ([`ReferenceStorage::set_failing`]) and a slow disk
//! ([`ReferenceStorage::set_holding`], or for tournament documents only
//! [`ReferenceStorage::set_holding_tournaments`]) for the service's tests. A
//! restart is simulated by handing the same `ReferenceStorage` to a new store.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{ArchiveQuery, Commit, Storage, StorageError, StoredGame, Write};
use crate::games::SeatSet;

#[derive(Debug, Default)]
struct Rows {
    /// Games in creation order, with their status and draw offer.
    games: Vec<(StoredGame, &'static str)>,
    index: HashMap<String, usize>,
    /// Tournaments, in the order first written.
    tournaments: Vec<super::TournamentRow>,
    /// The webhook events stored with the writes they report, in order.
    outbox: Vec<super::outbox::OutboxEvent>,
}

/// Rows in memory (see the module docs).
#[derive(Debug, Default)]
pub struct ReferenceStorage {
    rows: Mutex<Rows>,
    failing: AtomicBool,
    /// While set, writes wait here, unanswered, until released.
    held: Mutex<Option<Vec<Held>>>,
    /// While set, tournament documents' writes wait here, unanswered.
    held_tournaments: Mutex<Option<Vec<Held>>>,
}

/// A write held back, and where its outcome goes.
type Held = (
    Write,
    tokio::sync::oneshot::Sender<Result<(), StorageError>>,
);

impl ReferenceStorage {
    /// An empty backend.
    pub fn new() -> ReferenceStorage {
        ReferenceStorage::default()
    }

    /// While `failing`, every write fails (as a full or read-only disk
    /// would) and changes nothing.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// While `holding`, writes are queued unanswered (a commit under way
    /// on a slow disk); turning it off stores and answers them, in order.
    pub fn set_holding(&self, holding: bool) {
        self.hold_in(&self.held, holding);
    }

    /// While `holding`, the writes of tournament documents are queued
    /// unanswered (a commit under way on a slow disk) and the other writes
    /// are stored and answered at once; turning it off stores and answers
    /// the held ones, in order.
    pub fn set_holding_tournaments(&self, holding: bool) {
        self.hold_in(&self.held_tournaments, holding);
    }

    /// Starts queueing writes in `queue`, or stops and answers what it
    /// holds, in order.
    fn hold_in(&self, queue: &Mutex<Option<Vec<Held>>>, holding: bool) {
        let released = {
            let mut held = queue.lock().unwrap_or_else(|e| e.into_inner());
            if holding {
                held.get_or_insert_with(Vec::new);
                Vec::new()
            } else {
                held.take().unwrap_or_default()
            }
        };
        for (write, reply) in released {
            let _ = reply.send(self.apply(write));
        }
    }

    /// How many writes are held (see [`ReferenceStorage::set_holding`] and
    /// [`ReferenceStorage::set_holding_tournaments`]).
    pub fn held(&self) -> usize {
        let count = |held: &Mutex<Option<Vec<Held>>>| {
            let held = held.lock().unwrap_or_else(|e| e.into_inner());
            held.as_ref().map_or(0, Vec::len)
        };
        count(&self.held) + count(&self.held_tournaments)
    }

    /// The stored status of game `id` (`in_progress`, `finished`, `expired`).
    pub fn status(&self, id: &str) -> Option<&'static str> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        rows.index.get(id).map(|&i| rows.games[i].1)
    }

    /// The stored moves of game `id`.
    pub fn moves(&self, id: &str) -> Vec<super::MoveRow> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        rows.index
            .get(id)
            .map(|&i| rows.games[i].0.moves.clone())
            .unwrap_or_default()
    }

    /// The webhook events stored so far, in the order their writes were
    /// applied.
    pub fn outbox(&self) -> Vec<super::outbox::OutboxEvent> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        rows.outbox.clone()
    }

    fn apply(&self, write: Write) -> Result<(), StorageError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StorageError::Unavailable(
                "injected failure: the disk is full".into(),
            ));
        }
        let (write, events) = match write {
            Write::Outboxed(change, events) => (*change, events),
            other => (other, Vec::new()),
        };
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let rows = &mut *rows;
        let find = |index: &HashMap<String, usize>, id: &str| {
            index
                .get(id)
                .copied()
                .ok_or_else(|| StorageError::Conflict(format!("no stored game `{id}`")))
        };
        match write {
            Write::Create(game, moves, end) => {
                if rows.index.contains_key(&game.id) {
                    return Err(StorageError::Conflict(format!("game `{}` exists", game.id)));
                }
                rows.index.insert(game.id.clone(), rows.games.len());
                let status = end.as_ref().map_or("in_progress", |e| e.status);
                rows.games.push((
                    StoredGame {
                        game,
                        moves,
                        draw_offers: SeatSet::EMPTY,
                        end,
                    },
                    status,
                ));
            }
            Write::Move(mv, end) => {
                let i = find(&rows.index, &mv.game_id)?;
                let (stored, status) = &mut rows.games[i];
                play(stored, status, mv, end)?;
            }
            Write::DrawOffer { game_id, seats } => {
                let i = find(&rows.index, &game_id)?;
                if rows.games[i].1 != "in_progress" {
                    return Err(StorageError::Conflict(format!("game `{game_id}` is over")));
                }
                rows.games[i].0.draw_offers = seats;
            }
            Write::End(end) => {
                let i = find(&rows.index, &end.game_id)?;
                if rows.games[i].1 != "in_progress" {
                    return Err(StorageError::Conflict(format!(
                        "game `{}` is over",
                        end.game_id
                    )));
                }
                rows.games[i].1 = end.status;
                rows.games[i].0.draw_offers = SeatSet::EMPTY;
                rows.games[i].0.end = Some(end);
            }
            Write::Tournament(row) => match rows.tournaments.iter_mut().find(|t| t.id == row.id) {
                Some(stored) => *stored = row,
                None => rows.tournaments.push(row),
            },
            Write::Outboxed(..) => {
                return Err(StorageError::Conflict(
                    "a write carries its events once".into(),
                ));
            }
        }
        // Only once the change is made: the two are one transaction.
        rows.outbox.extend(events);
        Ok(())
    }
}

/// Stores move `mv` of `stored` (whose status is `status`), and its end.
fn play(
    stored: &mut StoredGame,
    status: &mut &'static str,
    mv: super::MoveRow,
    end: Option<super::OutcomeRow>,
) -> Result<(), StorageError> {
    if *status != "in_progress" {
        return Err(StorageError::Conflict(format!(
            "game `{}` is over",
            mv.game_id
        )));
    }
    if mv.ply as usize != stored.moves.len() + 1 {
        return Err(StorageError::Conflict(format!(
            "move at ply {} after {} stored moves",
            mv.ply,
            stored.moves.len()
        )));
    }
    stored.draw_offers = mv.draw_offers;
    stored.moves.push(mv);
    if let Some(end) = end {
        *status = end.status;
        stored.draw_offers = SeatSet::EMPTY;
        stored.end = Some(end);
    }
    Ok(())
}

impl Storage for ReferenceStorage {
    fn name(&self) -> &'static str {
        "memory-rows"
    }

    fn durable(&self) -> bool {
        true
    }

    fn write(&self, write: Write) -> Commit {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = held.as_mut() {
            let (tx, rx) = tokio::sync::oneshot::channel();
            queue.push((write, tx));
            return Commit::waiting(rx);
        }
        drop(held);
        if matches!(write.change(), Write::Tournament(_)) {
            let mut held = self
                .held_tournaments
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(queue) = held.as_mut() {
                let (tx, rx) = tokio::sync::oneshot::channel();
                queue.push((write, tx));
                return Commit::waiting(rx);
            }
        }
        Commit::ready(self.apply(write))
    }

    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        Ok(rows
            .games
            .iter()
            .filter(|(_, status)| *status == "in_progress")
            .map(|(g, _)| g.clone())
            .collect())
    }

    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        Ok(rows.index.get(id).map(|&i| rows.games[i].0.clone()))
    }

    fn list_finished(&self, query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let mut found: Vec<&StoredGame> = rows
            .games
            .iter()
            .filter(|(g, status)| {
                *status == "finished"
                    && query.after.as_ref().is_none_or(|after| g.key() > *after)
                    && query
                        .labels
                        .iter()
                        .all(|(k, v)| g.game.labels.get(k) == Some(v))
            })
            .map(|(g, _)| g)
            .collect();
        found.sort_by_key(|g| g.key());
        Ok(found.into_iter().take(query.limit).cloned().collect())
    }

    fn tournaments(&self) -> Result<Vec<super::TournamentRow>, StorageError> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let mut all = rows.tournaments.clone();
        all.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(all)
    }

    fn prune(&self, ended_before_ms: i64) -> Result<u64, StorageError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StorageError::Unavailable(
                "injected failure: the disk is full".into(),
            ));
        }
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let before = rows.games.len();
        rows.games.retain(|(g, status)| {
            *status == "in_progress" || g.end.as_ref().is_none_or(|e| e.at_ms >= ended_before_ms)
        });
        let pruned = (before - rows.games.len()) as u64;
        let index = rows
            .games
            .iter()
            .enumerate()
            .map(|(i, (g, _))| (g.game.id.clone(), i))
            .collect();
        rows.index = index;
        Ok(pruned)
    }
}
