//! Webhooks (docs/WEBHOOKS.md): endpoints registered over gRPC ([`api`]),
//! events written to an outbox in the same transaction as the change they
//! report ([`Hooked`], a [`Storage`] in front of the backend), and a worker
//! that delivers them, signed, at least once ([`deliver`]).

pub mod api;
pub mod client;
pub mod deliver;
pub mod events;
pub mod retention;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;

use crate::service::storage::outbox::OutboxEvent;
use crate::service::storage::{
    ArchiveQuery, Commit, ServerSecret, Storage, StorageError, StoredGame, TournamentRow, Write,
    unix_ms,
};

use self::events::TournamentState;

/// How webhooks are delivered (the `--webhook-*` flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// Hosts endpoints may name (empty: any host).
    pub allowed_hosts: Vec<String>,
    /// Whether loopback, private and link-local addresses may be delivered
    /// to.
    pub allow_private: bool,
    /// Bound on a connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// Bound on a whole attempt.
    pub timeout: Duration,
    /// Attempts before a delivery is marked failed.
    pub max_attempts: u32,
    /// The first retry's delay; each next one doubles, up to `max_backoff`.
    pub backoff: Duration,
    /// The longest delay between attempts.
    pub max_backoff: Duration,
    /// Most deliveries pending per endpoint.
    pub queue_limit: u64,
    /// The CA certificates (PEM) https endpoints are checked against.
    pub ca_file: std::path::PathBuf,
    /// How often the worker looks for due deliveries.
    pub poll: Duration,
    /// How long delivered rows are kept (from their event); `None`: for
    /// ever ([`retention`]).
    pub retention: Option<Duration>,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        WebhookOptions {
            allowed_hosts: Vec::new(),
            allow_private: false,
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(15),
            max_attempts: 12,
            backoff: Duration::from_secs(5),
            max_backoff: Duration::from_secs(3600),
            queue_limit: 10_000,
            ca_file: "/etc/ssl/certs/ca-certificates.crt".into(),
            poll: Duration::from_millis(250),
            retention: Some(Duration::from_secs(7 * 86_400)),
        }
    }
}

/// What writes need to know to add events: which kinds some endpoint
/// wants, and the kind of each game held.
#[derive(Debug, Default)]
pub struct Hub {
    /// A bit per subscribed kind ([`events::bit`]).
    mask: AtomicU32,
    /// The game kind of each game created, recovered or loaded.
    kinds: DashMap<String, String>,
    /// What the last document of each tournament said.
    tournaments: Mutex<HashMap<String, TournamentState>>,
    queue_limit: AtomicU32,
    /// Whether the database is shared by replicas ([`Hub::wants`]).
    shared: bool,
    /// Where a `game.ended` delivery's receipt comes from (set once the
    /// session store exists).
    receipts: ReceiptSlot,
}

/// The hub's [`ReceiptSource`], once set.
#[derive(Default)]
struct ReceiptSlot(std::sync::OnceLock<ReceiptSource>);

impl std::fmt::Debug for ReceiptSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "set"
        } else {
            "unset"
        })
    }
}

/// A finished game's signed receipt as JSON (docs/RECEIPTS.md), by game id;
/// `None` while the game is unknown or not over. The session store's,
/// given to the worker through [`Hub::set_receipts`].
pub type ReceiptSource = Arc<
    dyn Fn(String) -> futures_util::future::BoxFuture<'static, Option<serde_json::Value>>
        + Send
        + Sync,
>;

/// The receipts of the games of `store` (it holds the hub, through its
/// storage: the source holds it weakly).
pub fn receipts_of(store: &Arc<crate::service::sessions::SessionStore>) -> ReceiptSource {
    let store = Arc::downgrade(store);
    Arc::new(move |id: String| {
        let store = store.clone();
        Box::pin(async move {
            let store = store.upgrade()?;
            let session = store.find(&id).await.ok()?;
            session
                .signed_receipt(store.referee_key())
                .map(|r| r.to_value())
        })
    })
}

impl Hub {
    /// Gives the worker the receipts `game.ended` deliveries carry (the
    /// first source given stays).
    pub fn set_receipts(&self, source: ReceiptSource) {
        let _ = self.receipts.0.set(source);
    }

    /// Sets the kinds some endpoint subscribes to.
    pub fn set_subscriptions<'a>(&self, kinds: impl IntoIterator<Item = &'a str>) {
        let mask = kinds.into_iter().fold(0, |m, k| m | events::bit(k));
        self.mask.store(mask, Ordering::Relaxed);
    }

    /// Whether writes carry events of `kind`. Those some endpoint known
    /// here subscribes to, and, on a database replicas share, every game and
    /// tournament event: an endpoint registered on another replica reaches
    /// this one's list only at its next read, and the outbox's insert keeps
    /// the events some endpoint subscribes to in the same transaction, so
    /// none is missed in between. They are two a game; moves are many, and
    /// are written only once an endpoint known here wants them.
    fn wants(&self, kind: &str) -> bool {
        self.mask.load(Ordering::Relaxed) & events::bit(kind) != 0
            || (self.shared && kind != events::GAME_MOVE)
    }

    /// Game `id`'s kind: remembered, or (a game this replica took over
    /// from another, rare) read from `inner`.
    fn kind_of(&self, id: &str, inner: &dyn Storage) -> String {
        if let Some(kind) = self.kinds.get(id) {
            return kind.clone();
        }
        match inner.load(id) {
            Ok(Some(stored)) => events::game_kind(&stored.game),
            _ => String::new(),
        }
    }

    fn remember(&self, games: &[StoredGame]) {
        for g in games {
            if g.end.is_none() {
                self.kinds
                    .insert(g.game.id.clone(), events::game_kind(&g.game));
            }
        }
    }

    fn remember_tournaments(&self, rows: &[TournamentRow]) {
        let mut known = self.tournaments.lock().unwrap_or_else(|e| e.into_inner());
        for row in rows {
            known
                .entry(row.id.clone())
                .or_insert_with(|| TournamentState::of(row));
        }
    }

    /// `write` with the events it reports for the kinds subscribed to.
    /// A move with no subscription to moves costs one atomic load.
    fn outboxed(&self, write: Write, inner: &dyn Storage) -> Write {
        let mut out: Vec<OutboxEvent> = Vec::new();
        match &write {
            Write::Move(mv, None) => {
                if !self.wants(events::GAME_MOVE) {
                    return write;
                }
                out.push(events::game_move(&self.kind_of(&mv.game_id, inner), mv));
            }
            Write::Move(mv, Some(end)) => {
                let (moves, ends) = (
                    self.wants(events::GAME_MOVE),
                    self.wants(events::GAME_ENDED),
                );
                if moves || ends {
                    let kind = self.kind_of(&mv.game_id, inner);
                    if moves {
                        out.push(events::game_move(&kind, mv));
                    }
                    if ends {
                        out.push(events::game_ended(&kind, end));
                    }
                }
                self.kinds.remove(&mv.game_id);
            }
            Write::Create(game, moves, end) => {
                let kind = events::game_kind(game);
                if self.wants(events::GAME_CREATED) {
                    out.push(events::game_created(game, moves.len(), end.as_ref()));
                }
                match end {
                    Some(end) if self.wants(events::GAME_ENDED) => {
                        out.push(events::game_ended(&kind, end));
                    }
                    Some(_) => {}
                    None => {
                        self.kinds.insert(game.id.clone(), kind);
                    }
                }
            }
            Write::End(end) => {
                if self.wants(events::GAME_ENDED) {
                    out.push(events::game_ended(&self.kind_of(&end.game_id, inner), end));
                }
                self.kinds.remove(&end.game_id);
            }
            Write::Tournament(row) => {
                let mut known = self.tournaments.lock().unwrap_or_else(|e| e.into_inner());
                let now = unix_ms(std::time::SystemTime::now());
                let (state, found) = events::tournament_events(row, known.get(&row.id), now);
                known.insert(row.id.clone(), state);
                out.extend(found.into_iter().filter(|e| self.wants(e.kind)));
            }
            Write::DrawOffer { .. } | Write::Outboxed(..) => return write,
        }
        if out.is_empty() {
            return write;
        }
        let limit = u64::from(self.queue_limit.load(Ordering::Relaxed));
        for e in &mut out {
            e.queue_limit = limit;
        }
        Write::Outboxed(Box::new(write), out)
    }
}

/// A [`Storage`] that adds to each write the webhook events it reports
/// (module docs); everything else goes to the backend as it is.
#[derive(Debug)]
pub struct Hooked {
    inner: Arc<dyn Storage>,
    hub: Arc<Hub>,
}

impl Hooked {
    /// `inner` with webhooks, when it can keep an outbox (else `inner`).
    pub fn wrap(
        inner: Arc<dyn Storage>,
        options: &WebhookOptions,
    ) -> (Arc<dyn Storage>, Option<Arc<Hub>>) {
        let Some(store) = inner.webhooks() else {
            return (inner, None);
        };
        let hub = Arc::new(Hub {
            shared: inner.shared(),
            ..Hub::default()
        });
        hub.queue_limit.store(
            u32::try_from(options.queue_limit).unwrap_or(u32::MAX),
            Ordering::Relaxed,
        );
        match store.endpoints() {
            Ok(endpoints) => hub.set_subscriptions(
                endpoints
                    .iter()
                    .flat_map(|e| e.kinds.iter().map(String::as_str)),
            ),
            Err(e) => tracing::warn!(error = %e, "webhook endpoints not read"),
        }
        let hooked: Arc<dyn Storage> = Arc::new(Hooked {
            inner,
            hub: hub.clone(),
        });
        (hooked, Some(hub))
    }
}

impl Storage for Hooked {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn durable(&self) -> bool {
        self.inner.durable()
    }
    fn secret(&self) -> &ServerSecret {
        self.inner.secret()
    }
    fn discards_writes(&self) -> bool {
        self.inner.discards_writes()
    }
    fn webhooks(&self) -> Option<&dyn crate::service::storage::outbox::WebhookStore> {
        self.inner.webhooks()
    }
    fn write(&self, write: Write) -> Commit {
        self.inner.write(self.hub.outboxed(write, &*self.inner))
    }
    fn write_leased(&self, write: Write, epoch: Option<i64>) -> Commit {
        self.inner
            .write_leased(self.hub.outboxed(write, &*self.inner), epoch)
    }
    fn lease_of(&self, id: &str) -> Option<i64> {
        self.inner.lease_of(id)
    }
    fn recover(&self) -> Result<Vec<StoredGame>, StorageError> {
        let games = self.inner.recover()?;
        self.hub.remember(&games);
        Ok(games)
    }
    fn load(&self, id: &str) -> Result<Option<StoredGame>, StorageError> {
        let game = self.inner.load(id)?;
        self.hub.remember(game.as_slice());
        Ok(game)
    }
    fn list_finished(&self, query: &ArchiveQuery) -> Result<Vec<StoredGame>, StorageError> {
        self.inner.list_finished(query)
    }
    fn prune(&self, ended_before_ms: i64) -> Result<u64, StorageError> {
        self.inner.prune(ended_before_ms)
    }
    fn tournaments(&self) -> Result<Vec<TournamentRow>, StorageError> {
        let rows = self.inner.tournaments()?;
        self.hub.remember_tournaments(&rows);
        Ok(rows)
    }
    fn shared(&self) -> bool {
        self.inner.shared()
    }
    fn list_games(
        &self,
        query: &ArchiveQuery,
        finished: Option<bool>,
    ) -> Result<Vec<StoredGame>, StorageError> {
        self.inner.list_games(query, finished)
    }
    fn tournament(&self, id: &str) -> Result<Option<TournamentRow>, StorageError> {
        let row = self.inner.tournament(id)?;
        self.hub.remember_tournaments(row.as_slice());
        Ok(row)
    }
    fn tournament_page(
        &self,
        after: &str,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TournamentRow>, StorageError> {
        self.inner.tournament_page(after, status, limit)
    }
}

/// The `--webhook-*` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookFlags {
    /// Hosts webhook endpoints may name, comma-separated (empty: any).
    #[arg(long, env = "PUNCT_REFEREE_WEBHOOK_ALLOW_HOSTS", value_delimiter = ',')]
    pub webhook_allow_hosts: Vec<String>,
    /// Allow webhook endpoints on loopback, private and link-local addresses.
    #[arg(long, env = "PUNCT_REFEREE_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// Bound on a webhook connection (TCP and TLS), milliseconds.
    #[arg(
        long,
        env = "PUNCT_REFEREE_WEBHOOK_CONNECT_TIMEOUT_MS",
        default_value_t = 5000
    )]
    pub webhook_connect_timeout_ms: u64,
    /// Bound on a whole webhook attempt, milliseconds.
    #[arg(
        long,
        env = "PUNCT_REFEREE_WEBHOOK_TIMEOUT_MS",
        default_value_t = 15_000
    )]
    pub webhook_timeout_ms: u64,
    /// Attempts before a webhook delivery is marked failed.
    #[arg(long, env = "PUNCT_REFEREE_WEBHOOK_MAX_ATTEMPTS", default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_attempts: u32,
    /// The first retry's delay, milliseconds (doubled per attempt, with jitter).
    #[arg(long, env = "PUNCT_REFEREE_WEBHOOK_BACKOFF_MS", default_value_t = 5000)]
    pub webhook_backoff_ms: u64,
    /// The longest delay between attempts, milliseconds.
    #[arg(
        long,
        env = "PUNCT_REFEREE_WEBHOOK_MAX_BACKOFF_MS",
        default_value_t = 3_600_000
    )]
    pub webhook_max_backoff_ms: u64,
    /// Most webhook deliveries pending per endpoint; more are stored failed.
    #[arg(
        long,
        env = "PUNCT_REFEREE_WEBHOOK_QUEUE_LIMIT",
        default_value_t = 10_000
    )]
    pub webhook_queue_limit: u64,
    /// CA certificates (PEM) https endpoints are checked against.
    #[arg(
        long,
        env = "PUNCT_REFEREE_WEBHOOK_CA_FILE",
        default_value = "/etc/ssl/certs/ca-certificates.crt"
    )]
    pub webhook_ca_file: std::path::PathBuf,
    /// How long delivered webhook deliveries are kept, from their event:
    /// a number and s, m, h or d; `off` keeps them (failed ones are kept
    /// until replayed).
    #[arg(
        long,
        env = "PUNCT_REFEREE_WEBHOOK_RETENTION",
        default_value = "7d",
        value_parser = retention::flag
    )]
    pub webhook_retention: retention::Retention,
}

impl WebhookFlags {
    /// The options these flags give.
    pub fn options(&self) -> WebhookOptions {
        WebhookOptions {
            allowed_hosts: self
                .webhook_allow_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            allow_private: self.webhook_allow_private,
            connect_timeout: Duration::from_millis(self.webhook_connect_timeout_ms.max(1)),
            timeout: Duration::from_millis(self.webhook_timeout_ms.max(1)),
            max_attempts: self.webhook_max_attempts,
            backoff: Duration::from_millis(self.webhook_backoff_ms),
            max_backoff: Duration::from_millis(self.webhook_max_backoff_ms),
            queue_limit: self.webhook_queue_limit,
            ca_file: self.webhook_ca_file.clone(),
            retention: self.webhook_retention.0,
            ..WebhookOptions::default()
        }
    }
}

/// Starts the delivery worker over `storage` (the [`Hooked`] one), as
/// `owner`; it stops with `stop`.
pub fn spawn(
    storage: Arc<dyn Storage>,
    hub: Arc<Hub>,
    options: WebhookOptions,
    owner: String,
    stop: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if !storage.shared() {
            let s = storage.clone();
            let released =
                tokio::task::spawn_blocking(move || s.webhooks().map(|w| w.release_leases())).await;
            if let Ok(Some(Err(e))) = released {
                tracing::warn!(error = %e, "webhook leases not released");
            }
        }
        let pruning = tokio::spawn(retention::run(
            storage.clone(),
            options.retention,
            stop.clone(),
        ));
        deliver::run(storage, hub, options, owner, stop).await;
        let _ = pruning.await;
    })
}
