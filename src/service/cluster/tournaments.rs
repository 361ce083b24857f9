//! Tournaments in a cluster (docs/TOURNAMENTS.md, "In a cluster"): each
//! tournament has one owner replica at a time, which holds it and runs it
//! under a lease on its row of the database (owner, epoch, expiry), as a
//! game is owned. This part of a replica renews its tournament leases,
//! takes over the tournaments of a replica whose lease expired (resuming
//! them as a restart does), finds the owner of a tournament call's
//! tournament for the forwarding layer ([`super::forward`]), and the
//! tournament of an entrant key no tournament held here knows.
//!
//! The tournaments module holds the lease's epoch and names it in every
//! write of the document (fencing: a write of a replica whose lease was
//! taken over is refused, and the tournament dropped there).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use tokio_util::sync::CancellationToken;

use super::{Cluster, Route, RouteError, uri_of};
use crate::service::sessions::Token;
use crate::service::storage::StorageError;
use crate::service::storage::postgres::{Leased, PostgresStorage};
use crate::service::telemetry;
use crate::service::tournaments::{Tournaments, record};

/// How long the owner of a tournament is remembered without asking the
/// database again (a wrong guess costs one more hop, never a wrong answer).
const OWNER_CACHE: Duration = Duration::from_millis(500);

/// Most tournaments one sweep takes over (the rest at the next).
const ORPHANS_PER_SWEEP: i64 = 16;

/// One replica's part in running the cluster's tournaments (module docs).
pub struct TournamentCluster {
    cluster: Arc<Cluster>,
    storage: Arc<PostgresStorage>,
    tournaments: Arc<Tournaments>,
    /// Tournament id → (owner address, when learnt).
    owners: DashMap<String, (String, Instant)>,
    /// Entrant key hash → its tournament (a key never changes tournament).
    keys: DashMap<[u8; 32], String>,
    /// Held while a tournament is being taken over, so that a call routed
    /// and the orphan sweep do not both take it (the second would raise
    /// the epoch again and fence the first).
    taking: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TournamentCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TournamentCluster")
            .field("node_id", &self.storage.node_id())
            .finish()
    }
}

impl TournamentCluster {
    /// The tournaments of the replica `cluster`, leased in `storage`; puts
    /// `tournaments` in cluster mode.
    pub fn new(
        cluster: Arc<Cluster>,
        storage: Arc<PostgresStorage>,
        tournaments: Arc<Tournaments>,
    ) -> TournamentCluster {
        tournaments.lease_in_cluster(storage.lease());
        TournamentCluster {
            cluster,
            storage,
            tournaments,
            owners: DashMap::new(),
            keys: DashMap::new(),
            taking: tokio::sync::Mutex::new(()),
        }
    }

    /// The replica's cluster part (its channels to the others).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Resumes the open tournaments this replica owned before a restart
    /// (same node id) or that have no owner, before it serves; returns how
    /// many. The others' tournaments stay theirs until their leases expire.
    pub async fn start(&self) -> Result<usize, StorageError> {
        let started = Instant::now();
        let taken = self.storage.recover_tournaments().await?;
        self.tournaments
            .leases_renewed(started, self.storage.lease());
        let mut resumed = 0;
        for (epoch, row) in &taken {
            match self.tournaments.adopt(row, *epoch) {
                Ok(()) => {
                    resumed += 1;
                    tracing::info!(tournament = %row.id, epoch, "tournament resumed");
                }
                Err(e) => {
                    tracing::warn!(tournament = %row.id, error = %e, "stored tournament cannot be resumed: skipped")
                }
            }
        }
        Ok(resumed)
    }

    /// Where a call about tournament `id` is to be answered. Takes the
    /// tournament over when its owner's lease has expired.
    pub async fn route(&self, id: &str) -> Result<Route, RouteError> {
        if self.tournaments.lease_of(id).is_some() && self.tournaments.leases_valid() {
            return Ok(Route::Local);
        }
        if self.tournaments.holds_ended(id) {
            return Ok(Route::Local);
        }
        if let Some(known) = self.owners.get(id)
            && known.1.elapsed() < OWNER_CACHE
        {
            return Ok(Route::Remote(known.0.clone()));
        }
        self.route_fresh(id).await
    }

    /// [`TournamentCluster::route`] asking the database, whatever is
    /// remembered.
    pub async fn route_fresh(&self, id: &str) -> Result<Route, RouteError> {
        self.owners.remove(id);
        for _ in 0..3 {
            let Some(ownership) = self.storage.ownership(Leased::Tournament, id).await? else {
                // Not stored: unknown (the handler says so).
                return Ok(Route::Local);
            };
            let held = self.tournaments.lease_of(id).is_some();
            if !ownership.in_progress {
                // Ended: any replica answers, from a final copy held here
                // (so that an entrant's key is known). An open copy held
                // here is stale: another replica ended it.
                if held {
                    self.lost(id);
                }
                if let Err(e) = self.tournaments.view_any(id).await {
                    tracing::debug!(tournament = id, error = %e, "ended tournament not read");
                }
                return Ok(Route::Local);
            }
            let mine = ownership.owner.as_deref() == Some(self.storage.node_id());
            if ownership.live && mine && held {
                return Ok(Route::Local);
            }
            if ownership.live && !mine {
                if held {
                    self.lost(id);
                }
                let owner = ownership.owner.unwrap_or_default();
                let address = ownership.address.ok_or(RouteError::NoAddress(owner))?;
                let address = uri_of(&address);
                self.owners
                    .insert(id.to_string(), (address.clone(), Instant::now()));
                return Ok(Route::Remote(address));
            }
            // Expired, ownerless, or ours in the database but not held here:
            // take it.
            if self.take_over(id).await? {
                return Ok(Route::Local);
            }
        }
        Err(RouteError::Storage(StorageError::Unavailable(format!(
            "tournament `{id}` changed owner three times while being routed"
        ))))
    }

    /// The tournament the entrant key `key` belongs to (`None`: not a key,
    /// or nobody's: the handler says which).
    pub async fn tournament_of_key(&self, key: &str) -> Result<Option<String>, RouteError> {
        let Some(token) = Token::parse(key) else {
            return Ok(None);
        };
        let hash = token.hash().0;
        if let Some(id) = self.keys.get(&hash) {
            return Ok(Some(id.clone()));
        }
        let found = match self.tournaments.key_tournament(&hash) {
            Some(id) => Some(id),
            None => {
                let fragment = record::key_fragment(&crate::games::hex(&hash));
                self.storage.tournament_containing(&fragment).await?
            }
        };
        if let Some(id) = &found {
            self.keys.insert(hash, id.clone());
        }
        Ok(found)
    }

    /// Takes tournament `id` over if its lease allows; true when this
    /// replica owns it now (and holds it, resumed).
    async fn take_over(&self, id: &str) -> Result<bool, StorageError> {
        let _taking = self.taking.lock().await;
        let started = Instant::now();
        // Held here, its lease lapsed (the database was unreachable):
        // renewed as it is, so its runner and entrants' streams stay.
        if let Some(epoch) = self.tournaments.lease_of(id)
            && self.storage.renew(Leased::Tournament, id, epoch).await?
        {
            return Ok(true);
        }
        let Some((epoch, row)) = self.storage.take_over_tournament(id).await? else {
            return Ok(false);
        };
        match self.tournaments.adopt(&row, epoch) {
            Ok(()) => {
                metrics::counter!(telemetry::CLUSTER_TAKEOVERS).increment(1);
                tracing::info!(
                    tournament = id,
                    epoch,
                    took_ms = started.elapsed().as_millis() as u64,
                    "tournament taken over"
                );
                Ok(true)
            }
            Err(e) => Err(StorageError::Unavailable(e.to_string())),
        }
    }

    /// Drops tournament `id` here: another replica owns it.
    pub fn lost(&self, id: &str) {
        if self.tournaments.release(id) {
            metrics::counter!(telemetry::CLUSTER_LEASES_LOST).increment(1);
        }
    }

    /// Forgets the remembered owner of tournament `id`.
    pub fn forget_owner(&self, id: &str) {
        self.owners.remove(id);
    }

    /// Renews the tournament leases and takes over orphaned tournaments,
    /// until `stop` (beside the games' heartbeat, [`Cluster::run`]).
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let lease = self.storage.lease();
        let mut heartbeat = tokio::time::interval((lease / 3).max(Duration::from_millis(50)));
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sweep = tokio::time::interval((lease / 4).max(Duration::from_millis(50)));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = heartbeat.tick() => self.beat().await,
                _ = sweep.tick() => self.take_orphans().await,
            }
        }
    }

    /// One renewal of the leases of the tournaments held here; drops the
    /// ones another replica took meanwhile.
    async fn beat(&self) {
        let started = Instant::now();
        let held = self.tournaments.leases();
        match self
            .storage
            .renew_held(Leased::Tournament, held.clone())
            .await
        {
            Ok(lost) => {
                self.tournaments
                    .leases_renewed(started, self.storage.lease());
                for id in lost {
                    // Unless taken again since the renewal began.
                    let before = held.iter().find(|(h, _)| *h == id).map(|(_, e)| *e);
                    if self.tournaments.lease_of(&id) == before {
                        self.lost(&id);
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "tournament lease renewal failed"),
        }
    }

    /// Takes over the open tournaments whose owner's lease expired.
    async fn take_orphans(&self) {
        let orphans = match self
            .storage
            .orphans(Leased::Tournament, ORPHANS_PER_SWEEP)
            .await
        {
            Ok(ids) => ids,
            Err(e) => {
                tracing::debug!(error = %e, "looking for orphaned tournaments failed");
                return;
            }
        };
        for id in orphans {
            if let Err(e) = self.take_over(&id).await {
                tracing::warn!(tournament = %id, error = %e, "tournament takeover failed");
            }
        }
    }
}
