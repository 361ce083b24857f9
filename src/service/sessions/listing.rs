//! Listing games (held and stored, in creation order, by page) and peeking
//! at one.

use super::session::Role;
use super::{
    DEFAULT_PAGE_SIZE, ListQuery, MAX_PAGE_SIZE, Session, SessionError, SessionStore, SessionView,
    StoredGameError, Token,
};
use crate::service::storage::{self, ArchiveQuery, ListKey, StoredGame};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A listing entry before it is shown: a game held, or one read from
/// storage (replayed only if it makes the page).
pub(super) enum Listed {
    Held(Box<SessionView>),
    Stored(Box<StoredGame>),
}

/// A listing's page token: `<created ms>.<id>` of the last game shown.
pub(super) fn parse_page_token(token: &str) -> Option<ListKey> {
    let (ms, id) = token.split_once('.')?;
    Some(ListKey {
        created_at_ms: ms.parse().ok()?,
        id: Token::parse(id)?.to_string(),
    })
}

impl SessionStore {
    /// A picture of game `id` (without its state), whoever holds it: the
    /// held game's view, else the stored game replayed as a listing shows
    /// it (a game another replica owns, or finished and not held); nothing
    /// is held by it.
    pub async fn peek(&self, id: &str) -> Result<SessionView, SessionError> {
        match self.get(id) {
            Err(SessionError::NotFound(_))
                if self.storage.durable() && Token::parse(id).is_some() => {}
            held => return held.map(|s| s.view(false)),
        }
        let storage = self.storage.clone();
        let key = id.to_string();
        let stored = tokio::task::spawn_blocking(move || storage.load(&key))
            .await
            .map_err(|e| SessionError::Unavailable(e.to_string()))?
            .map_err(|e| SessionError::Unavailable(e.to_string()))?;
        let Some(stored) = stored.filter(|g| g.end.as_ref().is_none_or(|e| e.status == "finished"))
        else {
            return Err(SessionError::NotFound(id.to_string()));
        };
        let session = self.rebuild_listed(stored).map_err(|e| {
            SessionError::Unavailable(format!("stored game `{id}` cannot be read back: {e}"))
        })?;
        Ok(session.view(false))
    }

    /// A page of games, oldest first (by creation time, then id), filtered:
    /// the games held, and with durable storage the finished games it keeps
    /// that are no longer held.
    pub async fn list(
        &self,
        query: &ListQuery,
    ) -> Result<(Vec<SessionView>, String), SessionError> {
        self.list_as(query, Role::Platform(None)).await
    }

    /// [`SessionStore::list`] as `role` may see the games: a spectator sees
    /// a delayed game as it is shown (its ply, status and outcome), and the
    /// status filter goes by that.
    pub async fn list_as(
        &self,
        query: &ListQuery,
        role: Role,
    ) -> Result<(Vec<SessionView>, String), SessionError> {
        let after = if query.page_token.is_empty() {
            None
        } else {
            Some(parse_page_token(&query.page_token).ok_or_else(|| {
                SessionError::InvalidArgument {
                    field: "page_token",
                    description: "not a token returned by ListGames".into(),
                }
            })?)
        };
        let size = match query.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        let mut found = self.held_listed(after.as_ref(), query, size, role);
        if self.storage.shared() {
            // A cluster's database: the games in progress other replicas
            // own are there too. The first page-and-one of the stored games
            // and of the held ones hold the first page-and-one of both.
            for g in self
                .stored_games(after, &query.labels, query.finished, size + 1)
                .await?
            {
                found.push((g.key(), Listed::Stored(Box::new(g))));
            }
        } else if self.storage.durable() && query.finished != Some(false) {
            for g in self.stored_finished(after, &query.labels, size + 1).await? {
                found.push((g.key(), Listed::Stored(Box::new(g))));
            }
        }
        // A game dropped from memory while this ran is found in both: keep
        // the held copy.
        found.sort_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                matches!(a.1, Listed::Stored(_)).cmp(&matches!(b.1, Listed::Stored(_)))
            })
        });
        found.dedup_by(|later, first| later.0 == first.0);
        let more = found.len() > size;
        found.truncate(size);
        let next = match (more, found.last()) {
            (true, Some((key, _))) => format!("{}.{}", key.created_at_ms, key.id),
            _ => String::new(),
        };
        Ok((self.shown(found, role), next))
    }

    /// Up to a page and one of the games held after `after` that `query`
    /// selects, in listing order.
    fn held_listed(
        &self,
        after: Option<&ListKey>,
        query: &ListQuery,
        size: usize,
        role: Role,
    ) -> Vec<(ListKey, Listed)> {
        let mut held: Vec<(ListKey, Arc<Session>)> = self
            .sessions
            .iter()
            .map(|e| (e.value().list_key(), e.value().clone()))
            .filter(|(key, _)| after.is_none_or(|a| key > a))
            .filter(|(_, s)| {
                query
                    .labels
                    .iter()
                    .all(|(k, v)| s.labels().get(k) == Some(v))
            })
            .collect();
        held.sort_by(|a, b| a.0.cmp(&b.0));
        // One more than a page, to know whether another follows.
        let mut found: Vec<(ListKey, Listed)> = Vec::with_capacity(size + 1);
        for (key, s) in held {
            let view = s.view_for(role, false);
            if query.finished.is_some_and(|f| f != view.outcome.is_some()) {
                continue;
            }
            found.push((key, Listed::Held(Box::new(view))));
            if found.len() > size {
                break;
            }
        }
        found
    }

    /// The listed games as a page shows them (a stored game that cannot be
    /// read back is left out, and logged).
    fn shown(&self, found: Vec<(ListKey, Listed)>, role: Role) -> Vec<SessionView> {
        let mut page = Vec::with_capacity(found.len());
        for (key, listed) in found {
            match listed {
                Listed::Held(view) => page.push(*view),
                Listed::Stored(g) => match self.rebuild_listed(*g) {
                    Ok(session) => page.push(session.view_for(role, false)),
                    Err(e) => {
                        tracing::warn!(game_id = key.id, error = %e, "stored game cannot be read back");
                    }
                },
            }
        }
        page
    }

    /// Up to `limit` games from a shared store (in progress, finished, or
    /// either), after `after`, with all of `labels`; held ones included
    /// (the listing keeps the held copy).
    pub(super) async fn stored_games(
        &self,
        after: Option<ListKey>,
        labels: &BTreeMap<String, String>,
        finished: Option<bool>,
        limit: usize,
    ) -> Result<Vec<StoredGame>, SessionError> {
        let query = ArchiveQuery {
            after,
            labels: labels.clone(),
            limit,
        };
        let storage = self.storage.clone();
        tokio::task::spawn_blocking(move || storage.list_games(&query, finished))
            .await
            .map_err(|e| SessionError::Unavailable(e.to_string()))?
            .map_err(|e| SessionError::Unavailable(e.to_string()))
    }

    /// A stored game as a listing shows it, replayed: a finished one with
    /// its ending; one in progress (owned by another replica) with its
    /// clock run on from its last stored move by the wall clock, as its
    /// owner's clock runs.
    pub(super) fn rebuild_listed(
        &self,
        stored: StoredGame,
    ) -> Result<Arc<Session>, StoredGameError> {
        if stored.end.is_some() {
            return self.rebuild(stored, true, Duration::ZERO);
        }
        let last_ms = stored
            .moves
            .last()
            .map_or(stored.game.created_at_ms, |m| m.played_at_ms);
        let now_ms = storage::unix_ms(std::time::SystemTime::now());
        let running = Duration::from_millis(u64::try_from(now_ms - last_ms).unwrap_or(0));
        self.rebuild(stored, false, running)
    }

    /// Up to `limit` finished games from storage after `after` with all of
    /// `labels`, leaving out those held (they are listed as held).
    pub(super) async fn stored_finished(
        &self,
        after: Option<ListKey>,
        labels: &BTreeMap<String, String>,
        limit: usize,
    ) -> Result<Vec<StoredGame>, SessionError> {
        let mut out = Vec::new();
        let mut cursor = after;
        loop {
            let query = ArchiveQuery {
                after: cursor.clone(),
                labels: labels.clone(),
                limit,
            };
            let storage = self.storage.clone();
            let batch = tokio::task::spawn_blocking(move || storage.list_finished(&query))
                .await
                .map_err(|e| SessionError::Unavailable(e.to_string()))?
                .map_err(|e| SessionError::Unavailable(e.to_string()))?;
            let full = batch.len() == limit;
            for g in batch {
                cursor = Some(g.key());
                if !self.sessions.contains_key(g.game.id.as_str()) {
                    out.push(g);
                }
            }
            if out.len() >= limit || !full {
                out.truncate(limit);
                return Ok(out);
            }
        }
    }
}
