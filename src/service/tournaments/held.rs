//! Which tournaments this replica holds, and how (docs/TOURNAMENTS.md, "In a
//! cluster"): the lease state, adopting and releasing a tournament, and the
//! read-only copies and listings of tournaments held elsewhere.

use super::*;

impl Tournaments {
    /// Cluster mode (docs/TOURNAMENTS.md, "In a cluster"): tournaments are
    /// created under a lease of `lease`, written fenced by its epoch, and
    /// listed from the database; the ends of games other replicas hold are
    /// read from storage every half lease. Call once, before serving.
    pub fn lease_in_cluster(&self, lease: Duration) {
        let _ = self.leasing.set(Leasing {
            poll: (lease / 2).max(Duration::from_millis(50)),
            valid_until: Mutex::new(None),
        });
    }

    /// Whether tournaments are leased (cluster mode).
    pub fn in_cluster(&self) -> bool {
        self.leasing.get().is_some()
    }

    /// Notes a renewal of this replica's tournament leases, begun at
    /// `started`, lasting `lease`.
    pub fn leases_renewed(&self, started: Instant, lease: Duration) {
        if let Some(leasing) = self.leasing.get() {
            *leasing
                .valid_until
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(started + lease);
        }
    }

    /// Whether a runner may start games: always for a single referee; in a
    /// cluster while the leases surely run.
    pub fn leases_valid(&self) -> bool {
        self.leasing.get().is_none_or(|l| {
            l.valid_until
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some_and(|until| Instant::now() < until)
        })
    }

    /// How often a runner reads the stored end of a game held elsewhere
    /// (`None`: not a cluster; every game is held here).
    pub(super) fn poll(&self) -> Option<Duration> {
        self.leasing.get().map(|l| l.poll)
    }

    /// The tournaments owned here and their leases' epochs.
    pub fn leases(&self) -> Vec<(String, i64)> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(|(id, e)| match e.lock().lease {
                Lease::Held(epoch) => Some((id.clone(), epoch)),
                Lease::Sole | Lease::Copy => None,
            })
            .collect()
    }

    /// The epoch of the lease held here on tournament `id`, if owned here.
    pub fn lease_of(&self, id: &str) -> Option<i64> {
        let entry = self.entry(id).ok()?;
        match entry.lock().lease {
            Lease::Held(epoch) => Some(epoch),
            Lease::Sole | Lease::Copy => None,
        }
    }

    /// The tournament of the entrant whose key hashes to `hash`, if held
    /// here (or held here before it moved).
    pub fn key_tournament(&self, hash: &[u8; 32]) -> Option<String> {
        self.keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(hash)
            .map(|(id, _)| id.clone())
    }

    /// Whether tournament `id` is held here ended (its copy is final).
    pub fn holds_ended(&self, id: &str) -> bool {
        self.entry(id).is_ok_and(|e| {
            matches!(
                e.lock().doc.status,
                TournamentStatus::Finished | TournamentStatus::Cancelled
            )
        })
    }

    /// Holds tournament `row`, taken over (or resumed) by this replica
    /// under the lease of `epoch`, and resumes it if it is running: its
    /// games in progress are watched to their ends wherever they are held,
    /// its entrants reconnect (docs/TOURNAMENTS.md, "In a cluster"). A copy
    /// held before is replaced.
    pub fn adopt(self: &Arc<Self>, row: &TournamentRow, epoch: i64) -> Result<(), TournamentError> {
        let doc = record::doc_of(row, self.sessions.storage().secret()).map_err(|e| {
            TournamentError::Unavailable(format!("stored tournament `{}` unreadable: {e}", row.id))
        })?;
        let mut tournament = self.rebuild(doc).map_err(|e| {
            TournamentError::Unavailable(format!(
                "stored tournament `{}` cannot be rebuilt: {e}",
                row.id
            ))
        })?;
        tournament.lease = Lease::Held(epoch);
        self.release(&row.id);
        let running = tournament.doc.status == TournamentStatus::Running;
        let entry = self.hold(tournament);
        if running {
            runner::spawn(self.clone(), row.id.clone(), entry);
        }
        Ok(())
    }

    /// Drops tournament `id`: another replica owns it now. Its runner and
    /// game watchers stop, its entrants' streams end (they reconnect and
    /// reach the owner). Returns whether it was held.
    pub fn release(&self, id: &str) -> bool {
        self.release_if(id, |_| true)
    }

    /// [`Tournaments::release`] if it is held under `lease` (a write under
    /// that lease was fenced; a lease taken since stays).
    pub(super) fn release_lease(&self, id: &str, lease: Lease) -> bool {
        self.release_if(id, |t| t.lease == lease)
    }

    pub(super) fn release_if(&self, id: &str, held_so: impl Fn(&Tournament) -> bool) -> bool {
        let entry = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            match held.get(id) {
                Some(e) if held_so(&e.lock()) => held.remove(id),
                _ => None,
            }
        };
        let Some(entry) = entry else {
            return false;
        };
        entry.gone.cancel();
        let mut t = entry.lock();
        for slot in &mut t.streams {
            if let Some((_, stream)) = slot.take() {
                let _ = stream.send(Push::Moved);
            }
        }
        drop(t);
        entry.version.fetch_add(1, Ordering::SeqCst);
        entry.wake.notify_one();
        tracing::info!(tournament = %id, "tournament dropped: another replica owns it now");
        true
    }

    /// The held tournament `id`; in a cluster, one held nowhere here read
    /// from the database: an ended one is held (as a final copy), an open
    /// one is another replica's ([`TournamentError::Moved`]).
    pub(crate) async fn entry_any(&self, id: &str) -> Result<Arc<Entry>, TournamentError> {
        match self.entry(id) {
            Err(TournamentError::NotFound(_)) if self.in_cluster() => {}
            held => return held,
        }
        let Some(tournament) = self.stored(id).await? else {
            return Err(TournamentError::NotFound(id.to_string()));
        };
        if !matches!(
            tournament.doc.status,
            TournamentStatus::Finished | TournamentStatus::Cancelled
        ) {
            return Err(TournamentError::Moved(id.to_string()));
        }
        // Another call may have held it meanwhile.
        if let Ok(held) = self.entry(id) {
            return Ok(held);
        }
        Ok(self.hold(tournament))
    }

    /// Tournament `id` as stored (`None`: not stored), rebuilt as a copy.
    pub(super) async fn stored(&self, id: &str) -> Result<Option<Tournament>, TournamentError> {
        let storage = self.sessions.storage().clone();
        let key = id.to_string();
        let row = tokio::task::spawn_blocking(move || storage.tournament(&key))
            .await
            .map_err(|e| TournamentError::Unavailable(e.to_string()))?
            .map_err(|e| TournamentError::Unavailable(e.to_string()))?;
        row.map(|row| self.copy_of(&row)).transpose()
    }

    /// A stored row rebuilt as a read-only copy.
    pub(super) fn copy_of(&self, row: &TournamentRow) -> Result<Tournament, TournamentError> {
        let doc = record::doc_of(row, self.sessions.storage().secret()).map_err(|e| {
            TournamentError::Unavailable(format!("stored tournament `{}` unreadable: {e}", row.id))
        })?;
        let mut t = self.rebuild(doc).map_err(|e| {
            TournamentError::Unavailable(format!(
                "stored tournament `{}` cannot be rebuilt: {e}",
                row.id
            ))
        })?;
        t.lease = Lease::Copy;
        Ok(t)
    }

    /// The tournament now: held here, or in a cluster as the database has
    /// it (a tournament another replica owns is shown as last stored, its
    /// entrants as not connected: the owner knows their streams).
    pub async fn view_any(&self, id: &str) -> Result<TournamentView, TournamentError> {
        match self.entry(id) {
            Err(TournamentError::NotFound(_)) if self.in_cluster() => {}
            held => return Ok(view_of(&held?.lock())),
        }
        let Some(tournament) = self.stored(id).await? else {
            return Err(TournamentError::NotFound(id.to_string()));
        };
        let view = view_of(&tournament);
        if matches!(
            tournament.doc.status,
            TournamentStatus::Finished | TournamentStatus::Cancelled
        ) && self.entry(id).is_err()
        {
            // Final: held, so that the next reads need no database.
            self.hold(tournament);
        }
        Ok(view)
    }

    /// [`Tournaments::list`] over the whole cluster in cluster mode: the
    /// stored tournaments, each held one as held here (fresher than its
    /// row while a write is on its way).
    pub async fn list_all(
        &self,
        after: &str,
        limit: usize,
        status: Option<TournamentStatus>,
    ) -> Result<(Vec<TournamentView>, bool), TournamentError> {
        if !self.in_cluster() {
            return Ok(self.list(after, limit, status));
        }
        // One more than a page, to know whether another follows: the first
        // of the held ones and of the stored ones not held hold the first
        // of both.
        let (mut found, _) = self.list(after, limit + 1, status);
        let mut cursor = after.to_string();
        let mut stored = 0;
        loop {
            let storage = self.sessions.storage().clone();
            let from = cursor.clone();
            let page = tokio::task::spawn_blocking(move || {
                storage.tournament_page(&from, status.map(TournamentStatus::name), limit + 1)
            })
            .await
            .map_err(|e| TournamentError::Unavailable(e.to_string()))?
            .map_err(|e| TournamentError::Unavailable(e.to_string()))?;
            let full = page.len() == limit + 1;
            for row in page {
                cursor = row.id.clone();
                if self.entry(&row.id).is_ok() {
                    continue;
                }
                match self.copy_of(&row) {
                    Ok(t) => {
                        found.push(view_of(&t));
                        stored += 1;
                    }
                    Err(e) => {
                        tracing::warn!(tournament = %row.id, error = %e, "stored tournament not listed")
                    }
                }
            }
            if stored > limit || !full {
                break;
            }
        }
        found.sort_by(|a, b| a.doc.id.cmp(&b.doc.id));
        found.dedup_by(|later, first| later.doc.id == first.doc.id);
        let more = found.len() > limit;
        found.truncate(limit);
        Ok((found, more))
    }
}
