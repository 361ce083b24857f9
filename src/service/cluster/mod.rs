//! Several replicas on one PostgreSQL (docs/CLUSTER.md): each game has one
//! owner replica at a time, holding a lease in the database that it renews
//! by heartbeat; the other replicas forward the game's calls to it, or take
//! the game over once its lease has expired.

use std::time::Duration;

/// The node id the `--node-id` flag names: itself, or when empty the host
/// name ([`crate::service::storage::postgres::default_node_id`]).
pub fn node_id(flag: &str) -> String {
    if flag.is_empty() {
        crate::service::storage::postgres::default_node_id()
    } else {
        flag.to_string()
    }
}

/// Whether the time a game spent without an owner (between a replica's
/// death and the takeover) is charged to the seat to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TakeoverClock {
    /// Not charged: the clock resumes where the last stored event left it,
    /// as after a restart of a single referee.
    #[default]
    Credit,
    /// Charged: the seat to move loses the time since its turn began by the
    /// database's clock.
    Charge,
}

/// A replica address no channel can be made to (it is no URI).
#[derive(Debug, thiserror::Error)]
#[error("bad replica address `{address}`: {source}")]
pub struct BadAddress {
    /// The address as given.
    pub address: String,
    /// Why it is none.
    pub source: tonic::transport::Error,
}

/// How a replica takes part in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOptions {
    /// This replica's node id; empty picks one at start.
    pub node_id: String,
    /// Where the other replicas reach this one; empty derives it from the
    /// listen address.
    pub advertise: String,
    /// How long a lease lasts without a heartbeat.
    pub lease: Duration,
    /// Whether the takeover gap is charged.
    pub takeover_clock: TakeoverClock,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            node_id: String::new(),
            advertise: String::new(),
            lease: Duration::from_secs(10),
            takeover_clock: TakeoverClock::Credit,
        }
    }
}

pub mod forward;
pub mod tournaments;

use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use tonic_health::ServingStatus;

use crate::service::sessions::SessionStore;
use crate::service::storage::StorageError;
use crate::service::storage::postgres::{Leased, Notice, PostgresStorage};
use crate::service::telemetry;

/// Where a call for a game is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Here: this replica owns the game, or nobody does (finished, unknown).
    Local,
    /// By the replica at this address, which owns the game.
    Remote(String),
}

/// Why a game cannot be routed now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The database cannot be asked who owns it.
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// The owner's lease runs but it left no address to reach it at.
    #[error("the replica `{0}` owns the game but has no registered address")]
    NoAddress(String),
}

/// How long the owner of a game is remembered without asking the database
/// again (a wrong guess costs one more hop, never a wrong answer: the owner
/// that answers holds the lease, and its writes are fenced).
const OWNER_CACHE: Duration = Duration::from_millis(500);

/// How often followed games are read again without a notification.
const FOLLOWER_REREAD: Duration = Duration::from_secs(1);

/// Most games one look for orphans returns; a sweep looks again until it
/// finds fewer.
const ORPHANS_PER_SWEEP: i64 = 64;

/// How often the games whose last commit's outcome is unknown are looked
/// for (a lock and an empty set, most of the time).
const UNCERTAIN_CHECK: Duration = Duration::from_millis(100);

/// One replica's part in the cluster: its leases, the routing of calls to
/// the owners of their games, and the takeover of games whose owner died.
pub struct Cluster {
    storage: Arc<PostgresStorage>,
    store: Arc<SessionStore>,
    /// The URI the others forward to (`http://host:port`).
    address: String,
    options: ClusterOptions,
    channels: DashMap<String, Channel>,
    /// Game id → (owner address, when learnt).
    owners: DashMap<String, (String, Instant)>,
    /// Until when other owners' lapsed leases are left to them (a lease
    /// after this replica reached the database again).
    grace_until: std::sync::Mutex<Option<Instant>>,
    /// Held while a game is taken over: a call routed and the orphan sweep
    /// taking the same game at once would each raise its epoch (this node
    /// may re-take its own), the second fencing the first and dropping its
    /// session while calls use it.
    taking: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("node_id", &self.storage.node_id())
            .field("address", &self.address)
            .finish()
    }
}

/// The URI others reach `address` at: `host:port` becomes
/// `http://host:port`; a URI is kept.
pub fn uri_of(address: &str) -> String {
    if address.contains("://") {
        address.trim_end_matches('/').to_string()
    } else {
        format!("http://{address}")
    }
}

/// The address a replica listening on `local` advertises when given none:
/// the listen address, or the host name with its port when it listens on
/// every interface.
pub fn default_advertise(local: std::net::SocketAddr) -> String {
    if local.ip().is_unspecified() {
        format!(
            "{}:{}",
            crate::service::storage::postgres::default_node_id(),
            local.port()
        )
    } else {
        local.to_string()
    }
}

impl Cluster {
    /// The cluster part of a replica serving `store` on `storage`, reached
    /// by the others at `address`.
    pub fn new(
        storage: Arc<PostgresStorage>,
        store: Arc<SessionStore>,
        address: &str,
        options: ClusterOptions,
    ) -> Cluster {
        Cluster {
            storage,
            store,
            address: uri_of(address),
            options,
            channels: DashMap::new(),
            owners: DashMap::new(),
            grace_until: std::sync::Mutex::new(None),
            taking: tokio::sync::Mutex::new(()),
        }
    }

    /// This replica's node id.
    pub fn node_id(&self) -> &str {
        self.storage.node_id()
    }

    /// Registers this replica and renews the leases of the games it
    /// recovered, before it serves.
    pub async fn start(&self) -> Result<(), StorageError> {
        let lost = self.storage.heartbeat(&self.address).await?;
        for id in lost {
            self.lost(&id);
        }
        Ok(())
    }

    /// Where the others reach this replica.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Where a call for game `id` is to be answered. Takes the game over
    /// when its owner's lease has expired (the caller then finds it held).
    pub async fn route(&self, id: &str) -> Result<Route, RouteError> {
        if let Some(held) = self.held(id) {
            if self.storage.holds(id) && self.storage.leases_valid() {
                return Ok(Route::Local);
            }
            // Finished (its lease no longer matters), or read back.
            if held.finished() || held.archived() {
                return Ok(Route::Local);
            }
        } else if let Some(known) = self.owners.get(id)
            && known.1.elapsed() < OWNER_CACHE
        {
            return Ok(Route::Remote(known.0.clone()));
        }
        self.route_fresh(id).await
    }

    /// [`Cluster::route`] asking the database, whatever is remembered.
    pub async fn route_fresh(&self, id: &str) -> Result<Route, RouteError> {
        self.owners.remove(id);
        for _ in 0..3 {
            let Some(ownership) = self.storage.ownership(Leased::Game, id).await? else {
                // Not stored: unknown (or being created here).
                return Ok(Route::Local);
            };
            if !ownership.in_progress {
                // Finished or expired: read from the store here. A copy held
                // in progress is stale (its end was written elsewhere): a
                // follower is brought up to date, an owner's copy dropped.
                if let Ok(s) = self.store.get(id)
                    && !s.finished()
                    && !s.archived()
                {
                    if s.follower() {
                        self.refresh(&s).await;
                    } else {
                        self.lost(id);
                    }
                }
                return Ok(Route::Local);
            }
            let mine = ownership.owner.as_deref() == Some(self.node_id());
            // An owner whose lease lapsed but who still heartbeats (or who
            // may, just after the database came back) renews it itself: it
            // answers, and is not robbed of its games.
            if !ownership.live
                && !mine
                && (ownership.owner_alive || self.in_grace())
                && let Some(address) = &ownership.address
            {
                return Ok(Route::Remote(uri_of(address)));
            }
            if ownership.live && mine && self.storage.holds(id) && self.held(id).is_some() {
                return Ok(Route::Local);
            }
            if ownership.live && !mine {
                if self.held(id).is_some() {
                    self.lost(id);
                }
                let owner = ownership.owner.unwrap_or_default();
                let address = ownership.address.ok_or(RouteError::NoAddress(owner))?;
                let address = uri_of(&address);
                self.owners
                    .insert(id.to_string(), (address.clone(), Instant::now()));
                return Ok(Route::Remote(address));
            }
            // Expired, ownerless, or ours in the database but not held here
            // (taken back after a restart): take it.
            if self.take_over(id).await? {
                return Ok(Route::Local);
            }
            // Another replica took it first: ask again.
        }
        Err(RouteError::Storage(StorageError::Unavailable(format!(
            "game `{id}` changed owner three times while being routed"
        ))))
    }

    /// Takes game `id` over if its lease allows; true when this replica
    /// owns it now (and holds it).
    async fn take_over(&self, id: &str) -> Result<bool, StorageError> {
        // One at a time: a game taken meanwhile is found held, and renewed.
        let _taking = self.taking.lock().await;
        let started = Instant::now();
        // Ours and held, its lease lapsed (the database was unreachable):
        // renewed as it is, so the copy held and its watchers stay.
        if self.held(id).is_some()
            && let Some(epoch) = crate::service::storage::Storage::lease_of(&*self.storage, id)
            && self.storage.renew(Leased::Game, id, epoch).await?
        {
            return Ok(true);
        }
        let Some(taken) = self.storage.take_over(id).await? else {
            return Ok(false);
        };
        let charged = match self.options.takeover_clock {
            TakeoverClock::Credit => Duration::ZERO,
            TakeoverClock::Charge => taken.since_last_event,
        };
        let since = taken.since_last_event;
        let epoch = taken.epoch;
        // A stale copy (this replica was cut off, then won it back) goes.
        self.store.release(id);
        match self.store.adopt(taken.game, charged) {
            Ok(_) => {
                metrics::counter!(telemetry::CLUSTER_TAKEOVERS).increment(1);
                metrics::histogram!(telemetry::CLUSTER_TAKEOVER_GAP).record(since.as_secs_f64());
                tracing::info!(
                    game_id = id,
                    epoch,
                    idle_ms = since.as_millis() as u64,
                    took_ms = started.elapsed().as_millis() as u64,
                    "game taken over"
                );
                Ok(true)
            }
            Err(e) => {
                self.storage.forget(id);
                Err(StorageError::Unavailable(e.to_string()))
            }
        }
    }

    /// The copy of game `id` this replica holds as its owner (or read
    /// back), not a follower's.
    fn held(&self, id: &str) -> Option<Arc<crate::service::sessions::Session>> {
        self.store.get(id).ok().filter(|s| !s.follower())
    }

    /// Drops game `id` from memory: another replica owns it.
    pub fn lost(&self, id: &str) {
        self.storage.forget(id);
        if self.store.release(id) {
            metrics::counter!(telemetry::CLUSTER_LEASES_LOST).increment(1);
            tracing::info!(game_id = id, "game dropped: another replica owns it now");
        }
    }

    /// Forgets the remembered owner of game `id` (it did not answer, or
    /// said it no longer owns the game).
    pub fn forget_owner(&self, id: &str) {
        self.owners.remove(id);
    }

    /// A channel to the replica at `address` (connected on first use, and
    /// again after a failure).
    pub fn channel(&self, address: &str) -> Result<Channel, BadAddress> {
        if let Some(channel) = self.channels.get(address) {
            return Ok(channel.clone());
        }
        let endpoint = Endpoint::from_shared(address.to_string())
            .map_err(|source| BadAddress {
                address: address.to_string(),
                source,
            })?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(5));
        let channel = endpoint.connect_lazy();
        self.channels.insert(address.to_string(), channel.clone());
        Ok(channel)
    }

    /// The lease's heartbeat, the takeover of orphaned games and the
    /// followers' updates, until `stop`; the referee service is reported
    /// NOT_SERVING to readiness probes while the database is unreachable.
    /// Each runs in a task of its own: a long sweep (a dead replica owned
    /// many games) or many followed games never delay this replica's own
    /// heartbeat.
    pub async fn run(
        self: Arc<Self>,
        health: tonic_health::server::HealthReporter,
        stop: CancellationToken,
    ) {
        let sweeper = tokio::spawn(self.clone().sweep(stop.clone()));
        let follower = tokio::spawn(self.clone().follow(stop.clone()));
        let beat = (self.options.lease / 3).max(Duration::from_millis(50));
        let mut heartbeat = tokio::time::interval(beat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut serving = true;
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = heartbeat.tick() => {
                    let ok = self.beat().await;
                    if ok != serving {
                        serving = ok;
                        if ok {
                            *self.grace_until.lock().unwrap_or_else(|e| e.into_inner()) =
                                Some(Instant::now() + self.options.lease);
                        }
                        let status = if ok { ServingStatus::Serving } else { ServingStatus::NotServing };
                        health.set_service_status(crate::service::SERVICE_NAME, status).await;
                        if ok {
                            tracing::info!("database reachable again: ready");
                        } else {
                            tracing::warn!("database unreachable: not ready");
                        }
                    }
                }
            }
        }
        let _ = sweeper.await;
        let _ = follower.await;
    }

    /// Takes over the games whose owner died (every lease/4), and reads
    /// back the games whose last commit's outcome is unknown (at once),
    /// until `stop`.
    async fn sweep(self: Arc<Self>, stop: CancellationToken) {
        // Orphans are looked for a little more often than leases are
        // renewed, so a dead replica's games are taken within about
        // 1.25 leases of its last renewal.
        let mut sweep =
            tokio::time::interval((self.options.lease / 4).max(Duration::from_millis(50)));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut unsure = tokio::time::interval(UNCERTAIN_CHECK);
        unsure.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = unsure.tick() => self.read_back_uncertain().await,
                _ = sweep.tick() => self.take_orphans().await,
            }
        }
    }

    /// Keeps the followed games up to date from the notifications and a
    /// periodic re-read, until `stop`.
    async fn follow(self: Arc<Self>, stop: CancellationToken) {
        let mut notices = self.storage.notices();
        // Followers are read again now and then whatever the notifications
        // say: a notification is only a wake-up.
        let mut reread = tokio::time::interval(FOLLOWER_REREAD);
        reread.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                notice = notices.recv() => match notice {
                    Some(Notice::Changed { game_id, lag }) => {
                        if let Some(lag) = lag {
                            metrics::histogram!(telemetry::CLUSTER_NOTIFY_LAG).record(lag.as_secs_f64());
                        }
                        if let Ok(session) = self.store.get(&game_id)
                            && session.follower()
                        {
                            self.refresh(&session).await;
                        }
                    }
                    Some(Notice::Listening) => self.refresh_all().await,
                    None => notices = self.storage.notices(),
                },
                _ = reread.tick() => self.refresh_all().await,
            }
        }
    }

    /// Reads back each game held here whose last commit's outcome is
    /// unknown: the copy (and its watchers, who resume) is replaced by the
    /// stored game taken over again, or dropped when the game is no longer
    /// this replica's or no longer in progress. Until that is done the game
    /// is not served from the copy (its lease is forgotten, so every call
    /// asks the database). A read that fails is tried again.
    async fn read_back_uncertain(&self) {
        for id in self.storage.take_uncertain() {
            let Some(held) = self.held(&id) else {
                continue;
            };
            if held.archived() {
                continue;
            }
            drop(held);
            match self.take_over(&id).await {
                Ok(true) => {
                    tracing::info!(game_id = %id, "game read back after a commit of unknown outcome");
                }
                Ok(false) => self.lost(&id),
                Err(e) => {
                    tracing::debug!(game_id = %id, error = %e, "reading back a game failed; again");
                    self.storage.still_uncertain(&id);
                }
            }
        }
    }

    /// Reads game `session` follows again and brings it up to date.
    async fn refresh(&self, session: &crate::service::sessions::Session) {
        let id = session.id().to_string();
        match self.storage.load_game(&id).await {
            Ok(Some(stored)) => {
                if let Err(e) = self.store.catch_up(session, &stored) {
                    tracing::warn!(game_id = %id, error = %e, "followed game cannot be read");
                }
            }
            Ok(None) => {
                // Deleted (pruned): its watchers end.
                self.store.release(&id);
            }
            Err(e) => tracing::debug!(game_id = %id, error = %e, "reading a followed game failed"),
        }
    }

    /// Reads every followed game in progress again.
    async fn refresh_all(&self) {
        for session in self.store.followers() {
            if !session.finished() {
                self.refresh(&session).await;
            }
        }
    }

    /// One heartbeat: renews the leases, drops the games another replica
    /// took. False when the database could not be reached.
    async fn beat(&self) -> bool {
        match self.storage.heartbeat(&self.address).await {
            Ok(lost) => {
                metrics::counter!(telemetry::CLUSTER_LEASE_RENEWALS, "outcome" => "ok")
                    .increment(1);
                for id in lost {
                    self.lost(&id);
                }
                metrics::gauge!(telemetry::CLUSTER_GAMES_OWNED)
                    .set(self.store.in_progress().len() as f64);
                true
            }
            Err(e) => {
                metrics::counter!(telemetry::CLUSTER_LEASE_RENEWALS, "outcome" => "failed")
                    .increment(1);
                tracing::warn!(error = %e, "lease renewal failed");
                false
            }
        }
    }

    /// Whether this replica came back to the database less than a lease
    /// ago: the others may not have renewed their leases yet.
    fn in_grace(&self) -> bool {
        self.grace_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }

    /// Takes over every game whose owner's lease expired, a batch at a
    /// time. A game whose row stays locked (a paused owner's transaction,
    /// until the server ends it) is left to the next sweep, and does not
    /// hold up the others.
    async fn take_orphans(&self) {
        let mut skipped = std::collections::HashSet::new();
        loop {
            if self.in_grace() {
                return;
            }
            let orphans = match self
                .storage
                .orphans(Leased::Game, ORPHANS_PER_SWEEP + skipped.len() as i64)
                .await
            {
                Ok(ids) => ids,
                Err(e) => {
                    tracing::debug!(error = %e, "looking for orphaned games failed");
                    return;
                }
            };
            let fresh: Vec<String> = orphans
                .into_iter()
                .filter(|id| !skipped.contains(id))
                .collect();
            if fresh.is_empty() {
                return;
            }
            let full = fresh.len() as i64 >= ORPHANS_PER_SWEEP;
            for id in fresh {
                match self.take_over(&id).await {
                    Ok(true) => {}
                    Ok(false) => {
                        skipped.insert(id);
                    }
                    Err(e) => {
                        tracing::warn!(game_id = %id, error = %e, "takeover failed");
                        skipped.insert(id);
                    }
                }
            }
            if !full {
                return;
            }
        }
    }
}
