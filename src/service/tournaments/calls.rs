//! The calls on tournaments: create, add an entrant, start, cancel, read,
//! list, and connect an entrant's stream.

use super::*;

impl Tournaments {
    /// Creates a tournament; returns it and the keys of the entrants given.
    pub async fn create(
        &self,
        new: NewTournament,
    ) -> Result<(TournamentView, Vec<EntrantKey>), TournamentError> {
        if self.open_count() >= MAX_TOURNAMENTS {
            return Err(TournamentError::LimitReached {
                what: "tournaments",
                max: MAX_TOURNAMENTS,
            });
        }
        let (mut doc, openings) = record::checked_doc(&self.catalog, &new)?;
        let mut keys = Vec::new();
        for (i, name) in new.entrants.iter().enumerate() {
            let (entrant, key) = record::new_entrant(&doc, name, &format!("entrants[{i}]"))?;
            doc.entrants.push(entrant);
            keys.push(EntrantKey {
                entrant: i,
                name: name.clone(),
                key,
            });
        }
        if let Format::Swiss { rounds } = doc.format
            && !doc.entrants.is_empty()
            && rounds as usize >= doc.entrants.len()
            && !doc.open_registration
        {
            return Err(TournamentError::invalid(
                "spec.swiss_rounds",
                format!(
                    "a Swiss of {rounds} rounds needs more than {rounds} entrants (it has {})",
                    doc.entrants.len()
                ),
            ));
        }
        let t = Tournament {
            standings: Default::default(),
            streams: vec![None; doc.entrants.len()],
            time_control: new.time_control,
            rules: new.rules.clone(),
            openings,
            // In a cluster, created under the first lease.
            lease: if self.in_cluster() {
                Lease::Held(1)
            } else {
                Lease::Sole
            },
            doc,
            storing: BTreeSet::new(),
        };
        self.persist(&t.doc, t.lease).await?;
        let entry = self.hold(t);
        let view = view_of(&entry.lock());
        tracing::info!(tournament = %view.doc.id, entrants = keys.len(), "tournament created");
        Ok((view, keys))
    }

    /// Adds an entrant named `name` (before the start, with open
    /// registration).
    pub async fn add_entrant(&self, id: &str, name: &str) -> Result<EntrantKey, TournamentError> {
        let entry = self.entry_any(id).await?;
        let (doc, key, index, lease) = {
            let t = entry.lock();
            if !t.doc.open_registration {
                return Err(TournamentError::precondition(
                    "REGISTRATION_CLOSED",
                    "this tournament has no open registration: its entrants were given at creation",
                ));
            }
            if t.doc.status != TournamentStatus::Registering {
                return Err(TournamentError::precondition(
                    "REGISTRATION_CLOSED",
                    "registration closed when the tournament started",
                ));
            }
            if t.doc.entrants.len() >= MAX_ENTRANTS {
                return Err(TournamentError::LimitReached {
                    what: "entrants",
                    max: MAX_ENTRANTS,
                });
            }
            let mut doc = t.doc.clone();
            let (entrant, key) = record::new_entrant(&doc, name, "name")?;
            doc.entrants.push(entrant);
            (doc, key, t.doc.entrants.len(), t.lease)
        };
        self.persist(&doc, lease).await?;
        {
            let mut t = entry.lock();
            // Another call may have changed it meanwhile: apply to the
            // current state what this call checked.
            if t.doc.status != TournamentStatus::Registering || t.doc.entrants.len() != index {
                return Err(TournamentError::precondition(
                    "REGISTRATION_CLOSED",
                    "the tournament changed while the entrant was being added; try again",
                ));
            }
            t.doc = doc;
            t.streams.push(None);
        }
        if let Some(hash) = crate::games::parse_seed(&entry.lock().doc.entrants[index].key_sha256) {
            self.keys
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(hash, (id.to_string(), index));
        }
        entry.version.fetch_add(1, Ordering::SeqCst);
        Ok(EntrantKey {
            entrant: index,
            name: name.to_string(),
            key,
        })
    }

    /// Schedules and starts the tournament.
    pub async fn start(self: &Arc<Self>, id: &str) -> Result<TournamentView, TournamentError> {
        let entry = self.entry_any(id).await?;
        let (doc, lease) = {
            let t = entry.lock();
            match t.doc.status {
                TournamentStatus::Registering => {}
                TournamentStatus::Running => {
                    return Err(TournamentError::precondition(
                        "ALREADY_STARTED",
                        "the tournament has already started",
                    ));
                }
                TournamentStatus::Finished | TournamentStatus::Cancelled => {
                    return Err(TournamentError::precondition(
                        "ALREADY_ENDED",
                        "the tournament is over",
                    ));
                }
            }
            let mut doc = t.doc.clone();
            record::schedule_start(&mut doc, t.openings.len())?;
            (doc, t.lease)
        };
        self.persist(&doc, lease).await?;
        {
            let mut t = entry.lock();
            if t.doc.status != TournamentStatus::Registering {
                return Err(TournamentError::precondition(
                    "ALREADY_STARTED",
                    "the tournament has already started",
                ));
            }
            t.doc = doc;
        }
        tracing::info!(tournament = %id, "tournament started");
        runner::spawn(self.clone(), id.to_string(), entry.clone());
        entry.version.fetch_add(1, Ordering::SeqCst);
        Ok(view_of(&entry.lock()))
    }

    /// Cancels the tournament: no more games; the entrants are told.
    pub async fn cancel(&self, id: &str) -> Result<TournamentView, TournamentError> {
        let entry = self.entry_any(id).await?;
        let (doc, lease) = {
            let t = entry.lock();
            if matches!(
                t.doc.status,
                TournamentStatus::Finished | TournamentStatus::Cancelled
            ) {
                return Err(TournamentError::precondition(
                    "ALREADY_ENDED",
                    "the tournament is over",
                ));
            }
            let mut doc = t.doc.clone();
            doc.status = TournamentStatus::Cancelled;
            doc.ended_ms = storage::unix_ms(std::time::SystemTime::now());
            for g in &mut doc.games {
                if !matches!(g.state, PairingStatus::Done { .. } | PairingStatus::Bye) {
                    g.state = PairingStatus::Skipped {
                        game_id: g.state.game_id().map(str::to_string),
                    };
                }
            }
            (doc, t.lease)
        };
        self.persist(&doc, lease).await?;
        {
            let mut t = entry.lock();
            t.doc = doc;
            let view = Box::new(view_of(&t));
            for (_, stream) in t.streams.iter().flatten() {
                let _ = stream.send(Push::Ended(view.clone()));
            }
        }
        entry.wake.notify_one();
        entry.version.fetch_add(1, Ordering::SeqCst);
        tracing::info!(tournament = %id, "tournament cancelled");
        Ok(view_of(&entry.lock()))
    }

    /// The tournament now.
    pub fn get(&self, id: &str) -> Result<TournamentView, TournamentError> {
        Ok(view_of(&self.entry(id)?.lock()))
    }

    /// A number that changes whenever the tournament does.
    pub fn version(&self, id: &str) -> Result<u64, TournamentError> {
        Ok(self.entry(id)?.version.load(Ordering::SeqCst))
    }

    /// Tournaments after `after` (an id), oldest first, at most `limit`,
    /// of `status` if given; and whether more follow.
    pub fn list(
        &self,
        after: &str,
        limit: usize,
        status: Option<TournamentStatus>,
    ) -> (Vec<TournamentView>, bool) {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        let mut more = false;
        for (id, entry) in
            held.range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
        {
            let _ = id;
            let t = entry.lock();
            if status.is_some_and(|s| s != t.doc.status) {
                continue;
            }
            if out.len() == limit {
                more = true;
                break;
            }
            out.push(view_of(&t));
        }
        (out, more)
    }

    /// Opens entrant `key`'s stream (checked against `tournament_id` when
    /// given): its games in progress first, then each new one as it
    /// starts, then the end.
    pub fn connect(&self, key: &str, tournament_id: &str) -> Result<Connection, TournamentError> {
        if key.is_empty() {
            return Err(TournamentError::Unauthenticated {
                reason: "ENTRANT_KEY_MISSING",
                message: "no entrant key: pass the key CreateTournament or AddEntrant returned",
            });
        }
        let Some(token) = Token::parse(key) else {
            return Err(TournamentError::Unauthenticated {
                reason: "ENTRANT_KEY_MALFORMED",
                message: "the entrant key is not a key: 32 lower-case hex digits expected",
            });
        };
        let TokenHash(hash) = token.hash();
        let found = self
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&hash)
            .cloned();
        let Some((id, entrant)) = found else {
            if !tournament_id.is_empty() {
                self.entry(tournament_id)?;
            }
            return Err(TournamentError::PermissionDenied {
                reason: "UNKNOWN_ENTRANT_KEY",
                message: "this key is no entrant's".into(),
            });
        };
        if !tournament_id.is_empty() && tournament_id != id {
            self.entry(tournament_id)?;
            return Err(TournamentError::PermissionDenied {
                reason: "WRONG_ENTRANT_KEY",
                message: format!(
                    "this key is no entrant of tournament `{}`",
                    crate::service::echo::echo(tournament_id)
                ),
            });
        }
        let entry = match self.entry(&id) {
            // Its key is known: it was held here, and another replica
            // owns it now.
            Err(TournamentError::NotFound(_)) if self.in_cluster() => {
                return Err(TournamentError::Moved(id));
            }
            other => other?,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stream = self.next_stream.fetch_add(1, Ordering::SeqCst);
        {
            let mut t = entry.lock();
            if t.streams.get(entrant).is_some_and(Option::is_some) {
                return Err(TournamentError::precondition(
                    "ALREADY_CONNECTED",
                    format!(
                        "entrant `{}` already holds a ConnectEntrant stream: close it first",
                        t.doc.entrants[entrant].name
                    ),
                ));
            }
            for a in assignments(self.sessions.storage().secret(), &t, entrant) {
                let _ = tx.send(Push::Game(a));
            }
            if matches!(
                t.doc.status,
                TournamentStatus::Finished | TournamentStatus::Cancelled
            ) {
                let _ = tx.send(Push::Ended(Box::new(view_of(&t))));
            }
            if let Some(slot) = t.streams.get_mut(entrant) {
                *slot = Some((stream, tx));
            }
        }
        entry.version.fetch_add(1, Ordering::SeqCst);
        Ok(Connection {
            entry,
            entrant,
            stream,
            pushes: rx,
        })
    }
}
