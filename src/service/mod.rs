//! What `punct-referee serve` runs. This file is the server itself: the referee service, `grpc.health.v1`, server reflection
//! (v1 and v1alpha), message size limits, keepalive, load shedding (a limit
//! on calls in flight, [`crate::service::edge::overload`]), a TTL sweeper, and a graceful
//! shutdown; and, next to it on its own port, the HTTP router of
//! [`crate::service::http`] (metrics, spectator page) over the same games.
//!
//! [`run`] takes its listener and its shutdown future, so tests bind
//! `127.0.0.1:0` and stop it when they like. Shutdown: health turns
//! NOT_SERVING, the server stops accepting, open watch streams are ended
//! through a `CancellationToken` (an open stream would otherwise hold the
//! drain forever), unary calls finish, and the whole drain is bounded.
//!
//! Who may connect and call is decided before any handler runs, by the
//! front door [`edge`]: its accept tasks (TLS, connections per address,
//! opening and idle timeouts), then its tower layers (platform keys and
//! scopes, calls per second per client, the shedding of calls over the
//! server's limit) (docs/SECURITY.md).
//!
//! Inside, arrows run one way: [`grpc`] and [`http`] → [`sessions`] →
//! [`storage`]; sessions drive games through [`crate::games`].

pub mod cluster;
pub mod config;
pub mod echo;
pub mod edge;
pub mod frames;
pub mod grpc;
pub mod http;
pub mod receipts;
pub mod sessions;
pub mod storage;
pub mod telemetry;
pub mod tournaments;
pub mod webhooks;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Server;
use tonic_health::ServingStatus;

use self::cluster::Cluster;
use self::cluster::forward::ForwardLayer;
use self::cluster::tournaments::TournamentCluster;
use self::edge::access::AccessLayer;
use self::edge::listen::CallsLayer;
use self::edge::overload::InFlightLimitLayer;
use self::edge::quota::{ClientQuotas, ClientRateLayer, QuotaOptions};
use self::edge::tls::TlsFiles;
use self::edge::{Edge, EdgeOptions};
use self::grpc::RefereeApi;
use self::grpc::TournamentApi;
use self::grpc::answer::server::referee_service_server::RefereeServiceServer;
use self::grpc::answer::server::tournament_service_server::TournamentServiceServer;
use self::grpc::pb;
use self::sessions::{Limits, SessionStore};
use self::storage::postgres::{PostgresOptions, PostgresStorage};
use self::storage::sqlite::{SqliteOptions, SqliteStorage};
use self::storage::{MemoryStorage, Storage, StorageError};
use self::telemetry::RpcLayer;
use self::tournaments::Tournaments;

/// The full name of the referee service (for health checks).
pub const SERVICE_NAME: &str = "referee.v1.RefereeService";
/// The full name of the tournament service (for health checks).
pub const TOURNAMENT_SERVICE_NAME: &str = "referee.v1.TournamentService";

/// Everything the server needs besides its listener.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Session limits and TTLs.
    pub limits: Limits,
    /// Largest message decoded or encoded, in bytes.
    pub max_message_bytes: usize,
    /// HTTP/2 keepalive ping interval.
    pub keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered before the connection is
    /// closed.
    pub keepalive_timeout: Duration,
    /// Longest wait for in-flight calls once shutdown starts.
    pub drain_timeout: Duration,
    /// How often expired games are dropped.
    pub sweep_interval: Duration,
    /// Most calls in flight at once; more are refused with
    /// `RESOURCE_EXHAUSTED` (see [`crate::service::edge::overload`]).
    pub max_concurrent_calls: usize,
    /// Most watch streams open at once over all games.
    pub max_watch_streams: usize,
    /// Where sessions are kept durably.
    pub storage: StorageConfig,
    /// The server secret file (docs/STORAGE.md, "The server secret"),
    /// created at the first start when missing. `None`: with SQLite, the
    /// file `referee.secret` of the data directory; with PostgreSQL, a
    /// random secret of this process (for tests: the command line always
    /// gives a file); unused with `--storage memory`.
    pub secret_file: Option<std::path::PathBuf>,
    /// The referee key file that signs receipts (docs/RECEIPTS.md),
    /// created at the first start when missing; `None`: a key of this
    /// process only (said in the log).
    pub referee_key_file: Option<std::path::PathBuf>,
    /// How long finished games stay in durable storage after they end
    /// (`None`: for ever); older ones are pruned in the background.
    pub retain_finished: Option<Duration>,
    /// How webhooks are delivered (docs/WEBHOOKS.md).
    pub webhooks: webhooks::WebhookOptions,
    /// TLS on both ports (`None`: plaintext).
    pub tls: Option<TlsFiles>,
    /// The platform keys file (`None`: no keys, every call allowed).
    pub keys_file: Option<std::path::PathBuf>,
    /// Limits per client (calls per second, games, watch streams,
    /// connections), each off at 0.
    pub quotas: QuotaOptions,
    /// How often the TLS and keys files are checked for changes.
    pub reload_poll: Duration,
    /// Most connections open at once over both ports; `0`: the process's
    /// file descriptor limit less a reserve
    /// ([`edge::listen::automatic_total`]).
    pub max_connections: usize,
    /// From a connection's accept to the end of its opening (TLS handshake,
    /// HTTP/2 preface or first request headers); later, it is closed.
    pub handshake_timeout: Duration,
    /// How long a gRPC connection with no call in progress stays open.
    pub idle_timeout: Duration,
    /// How long an HTTP connection with no request in progress stays open
    /// (also the bound on sending a later request's headers).
    pub http_idle_timeout: Duration,
    /// How this replica takes part in a cluster (`--storage postgres`).
    pub cluster: cluster::ClusterOptions,
}

/// Where sessions are kept (docs/STORAGE.md).
#[derive(Debug, Clone, Default)]
pub enum StorageConfig {
    /// In memory only: games are lost on a restart (`--storage memory`).
    #[default]
    Memory,
    /// An SQLite database in a data directory (the binary's default).
    Sqlite(SqliteOptions),
    /// A PostgreSQL database (`--storage postgres`).
    Postgres(PostgresOptions),
}

impl StorageConfig {
    /// Opens the storage this describes.
    pub fn open(&self) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(match self {
            StorageConfig::Memory => Arc::new(MemoryStorage),
            StorageConfig::Sqlite(options) => Arc::new(SqliteStorage::open(options)?),
            StorageConfig::Postgres(options) => Arc::new(PostgresStorage::open(options)?),
        })
    }
}

/// The default of [`ServerOptions::max_concurrent_calls`]: about 100 ms of
/// queued work at this service's throughput on two cores, and as many calls
/// as the load generator's largest run keeps in flight (docs/API.md).
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 4096;

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            limits: Limits::default(),
            max_message_bytes: 4 * 1024 * 1024,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(10),
            sweep_interval: Duration::from_secs(30),
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            max_watch_streams: crate::service::grpc::service::DEFAULT_MAX_WATCH_STREAMS,
            storage: StorageConfig::Memory,
            secret_file: None,
            referee_key_file: None,
            retain_finished: None,
            webhooks: webhooks::WebhookOptions::default(),
            tls: None,
            keys_file: None,
            quotas: QuotaOptions {
                connections: edge::listen::DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
                ..QuotaOptions::default()
            },
            reload_poll: edge::reload::DEFAULT_RELOAD_POLL,
            max_connections: 0,
            handshake_timeout: edge::listen::DEFAULT_HANDSHAKE_TIMEOUT,
            idle_timeout: edge::listen::DEFAULT_IDLE_TIMEOUT,
            http_idle_timeout: edge::listen::DEFAULT_HTTP_IDLE_TIMEOUT,
            cluster: cluster::ClusterOptions::default(),
        }
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    /// The reflection service could not be built from the descriptors.
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// Storage could not be opened, or its games not recovered.
    #[error("{0}")]
    Storage(String),
    /// The TLS files cannot be used.
    #[error(transparent)]
    Tls(#[from] edge::tls::TlsError),
    /// The keys file cannot be used.
    #[error(transparent)]
    Keys(#[from] edge::access::KeysError),
}

impl From<edge::OpenError> for ServeError {
    fn from(err: edge::OpenError) -> ServeError {
        match err {
            edge::OpenError::Tls(e) => ServeError::Tls(e),
            edge::OpenError::Keys(e) => ServeError::Keys(e),
        }
    }
}

/// The service's HTTP port: `/metrics`, the spectator page and its API
/// ([`crate::service::http`]), over the same games as the gRPC service.
#[derive(Debug)]
pub struct HttpPort {
    /// Where to serve it.
    pub listener: TcpListener,
    /// The metrics recorder to render at `/metrics` (`None`: no metrics).
    pub metrics: Option<PrometheusHandle>,
}

/// Serves gRPC on `listener` until `shutdown` completes, then drains (see
/// the module docs). Returns once the server has stopped.
pub async fn run(
    listener: TcpListener,
    options: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    run_with_http(listener, None, options, shutdown).await
}

/// [`run`], plus the HTTP port when `http` is given: both serve the same
/// games and stop together (the HTTP side stops accepting when the drain
/// starts, its event streams end, and it gets the same drain bound).
pub async fn run_with_http(
    listener: TcpListener,
    http: Option<HttpPort>,
    options: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    // First of all, so that a SIGHUP from now on never ends the process.
    let hangups = edge::reload::hangups();
    let edge = Edge::open(&options.edge())?;
    edge.warn_if_open(&listener, http.as_ref().map(|p| &p.listener));
    let (store, postgres, hub) = open_store(&options)?;
    if let Some(hub) = &hub {
        hub.set_receipts(webhooks::receipts_of(&store));
    }
    let stop = CancellationToken::new();
    let hooks = webhooks::api::WebhookApi::new(
        store.storage().clone(),
        hub.clone(),
        options.webhooks.clone(),
    );
    let hook_worker = hub.map(|hub| {
        let owner = format!("{}-{:016x}", options.cluster.node_id, rand::random::<u64>());
        let worker = options.webhooks.clone();
        webhooks::spawn(store.storage().clone(), hub, worker, owner, stop.clone())
    });
    let cluster = join_cluster(&listener, &options, &store, postgres.clone()).await?;
    let tournaments = Tournaments::new(store.clone(), stop.clone());
    let tournament_cluster = resume_tournaments(&tournaments, &cluster, postgres).await?;
    let (health, health_service) = tonic_health::server::health_reporter();
    set_serving(&health).await;
    let background = Background {
        http: http.map(|port| {
            spawn_http(
                port,
                &store,
                &tournaments,
                &stop,
                &edge,
                options.http_idle_timeout,
            )
        }),
        // SIGHUP reloads what can be reloaded, and never stops the server.
        reloads: tokio::spawn(edge.reloader().clone().run(hangups, stop.clone())),
        cluster: cluster
            .clone()
            .map(|c| tokio::spawn(c.run(health.clone(), stop.clone()))),
        tournament_leases: tournament_cluster
            .clone()
            .map(|t| tokio::spawn(t.run(stop.clone()))),
        sweeper: tokio::spawn(sweep(
            store.clone(),
            edge.quotas().clone(),
            options.sweep_interval,
            stop.clone(),
        )),
        pruner: options
            .retain_finished
            .filter(|_| store.storage().durable())
            .map(|retain| tokio::spawn(prune(store.clone(), retain, stop.clone()))),
    };
    let drain = drain_signal(shutdown, health, stop.clone());
    let served = (store, tournaments.clone(), cluster, tournament_cluster);
    let result = serve_grpc(
        listener,
        &options,
        (served, hooks),
        &edge,
        health_service,
        &stop,
        drain,
    )
    .await;
    stop.cancel();
    stop_tournaments(tournaments, options.drain_timeout).await;
    background.finish(options.drain_timeout).await;
    // It holds the store (and, with SQLite, the data directory's lock).
    if let Some(worker) = hook_worker {
        let _ = worker.await;
    }
    tracing::info!("stopped");
    result
}

impl ServerOptions {
    /// What of these options the front door is opened with.
    fn edge(&self) -> EdgeOptions {
        EdgeOptions {
            tls: self.tls.clone(),
            keys_file: self.keys_file.clone(),
            quotas: self.quotas,
            reload_poll: self.reload_poll,
            max_connections: self.max_connections,
            handshake_timeout: self.handshake_timeout,
            idle_timeout: self.idle_timeout,
            http_idle_timeout: self.http_idle_timeout,
        }
    }
}

/// With PostgreSQL storage: joins the cluster (registered, with the
/// address the others forward to, before the first call); else `None`.
async fn join_cluster(
    listener: &TcpListener,
    options: &ServerOptions,
    store: &Arc<SessionStore>,
    postgres: Option<Arc<PostgresStorage>>,
) -> Result<Option<Arc<Cluster>>, ServeError> {
    let Some(storage) = postgres else {
        return Ok(None);
    };
    let advertise = if options.cluster.advertise.is_empty() {
        cluster::default_advertise(
            listener
                .local_addr()
                .map_err(|e| ServeError::Storage(format!("the listen address: {e}")))?,
        )
    } else {
        options.cluster.advertise.clone()
    };
    // Watchers here of games owned elsewhere get a follower.
    store.follow_remote_games();
    let cluster = Arc::new(Cluster::new(
        storage,
        store.clone(),
        &advertise,
        options.cluster.clone(),
    ));
    cluster
        .start()
        .await
        .map_err(|e| ServeError::Storage(e.to_string()))?;
    tracing::info!(
        node_id = cluster.node_id(),
        advertise = cluster.address(),
        lease_ms = options.cluster.lease.as_millis() as u64,
        "cluster member: games are leased in the database"
    );
    Ok(Some(cluster))
}

/// Resumes the stored tournaments. In a cluster, each replica resumes only
/// its own (and takes over those of replicas that died), and the lease
/// keeper it returns goes on doing so; a single referee resumes every
/// stored one.
async fn resume_tournaments(
    tournaments: &Arc<Tournaments>,
    cluster: &Option<Arc<Cluster>>,
    postgres: Option<Arc<PostgresStorage>>,
) -> Result<Option<Arc<TournamentCluster>>, ServeError> {
    if let (Some(cluster), Some(storage)) = (cluster, postgres) {
        let leased = Arc::new(TournamentCluster::new(
            cluster.clone(),
            storage,
            tournaments.clone(),
        ));
        let resumed = leased
            .start()
            .await
            .map_err(|e| ServeError::Storage(e.to_string()))?;
        if resumed > 0 {
            tracing::info!(tournaments = resumed, "own tournaments resumed");
        }
        return Ok(Some(leased));
    }
    let resumed = tournaments
        .recover()
        .map_err(|e| ServeError::Storage(e.to_string()))?;
    if resumed > 0 {
        tracing::info!(tournaments = resumed, "stored tournaments read back");
    }
    Ok(None)
}

/// Health says both services are serving.
async fn set_serving(health: &tonic_health::server::HealthReporter) {
    health
        .set_service_status(SERVICE_NAME, ServingStatus::Serving)
        .await;
    health
        .set_service_status(TOURNAMENT_SERVICE_NAME, ServingStatus::Serving)
        .await;
}

/// Waits (at most `drain_timeout`) for the tournament runners and their
/// game watchers, which end at `stop`; once they have, no task holds the
/// store (a restart in the same process may reopen it).
async fn stop_tournaments(tournaments: Arc<Tournaments>, drain_timeout: Duration) {
    if tokio::time::timeout(drain_timeout, tournaments.stopped())
        .await
        .is_err()
    {
        tracing::warn!("tournament tasks still running after the drain timeout");
    }
}

/// The tasks that run beside the gRPC server until `stop`.
struct Background {
    http: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    reloads: tokio::task::JoinHandle<()>,
    cluster: Option<tokio::task::JoinHandle<()>>,
    tournament_leases: Option<tokio::task::JoinHandle<()>>,
    sweeper: tokio::task::JoinHandle<()>,
    pruner: Option<tokio::task::JoinHandle<()>>,
}

impl Background {
    /// Waits for each task once `stop` is cancelled (the HTTP server for at
    /// most `drain_timeout`).
    async fn finish(self, drain_timeout: Duration) {
        let _ = self.sweeper.await;
        if let Some(task) = self.cluster {
            let _ = task.await;
        }
        if let Some(task) = self.tournament_leases {
            let _ = task.await;
        }
        let _ = self.reloads.await;
        if let Some(pruner) = self.pruner {
            let _ = pruner.await;
        }
        if let Some(task) = self.http {
            finish_http(task, drain_timeout).await;
        }
    }
}

/// Opens the storage and the session store on it, with every unfinished
/// game the storage holds recovered.
#[allow(
    clippy::type_complexity,
    reason = "the three things opened together, once"
)]
fn open_store(
    options: &ServerOptions,
) -> Result<
    (
        Arc<SessionStore>,
        Option<Arc<PostgresStorage>>,
        Option<Arc<webhooks::Hub>>,
    ),
    ServeError,
> {
    let (storage, postgres): (Arc<dyn Storage>, _) = match &options.storage {
        StorageConfig::Postgres(o) => {
            let secret = match &options.secret_file {
                Some(file) => storage::ServerSecret::load_or_create(file)
                    .map_err(|e| ServeError::Storage(e.to_string()))?,
                None => storage::ServerSecret::ephemeral().clone(),
            };
            let pg = Arc::new(
                PostgresStorage::open_with_secret(o, secret)
                    .map_err(|e| ServeError::Storage(e.to_string()))?,
            );
            (pg.clone(), Some(pg))
        }
        StorageConfig::Sqlite(o) => (
            Arc::new(
                SqliteStorage::open_with_secret(o, options.secret_file.as_deref())
                    .map_err(|e| ServeError::Storage(e.to_string()))?,
            ),
            None,
        ),
        other => (
            other
                .open()
                .map_err(|e| ServeError::Storage(e.to_string()))?,
            None,
        ),
    };
    let referee_key = match &options.referee_key_file {
        Some(file) => Arc::new(
            receipts::RefereeKey::load_or_create(file)
                .map_err(|e| ServeError::Storage(e.to_string()))?,
        ),
        None => receipts::RefereeKey::process(),
    };
    if referee_key.is_ephemeral() {
        tracing::info!(
            key_id = referee_key.id(),
            "receipts are signed with a key of this process only: give --referee-key to keep it"
        );
    } else {
        tracing::info!(key_id = referee_key.id(), "referee key loaded");
    }
    // Writes carry the webhook events they report (docs/WEBHOOKS.md).
    let (storage, hub) = webhooks::Hooked::wrap(storage, &options.webhooks);
    let store = Arc::new(
        SessionStore::with_storage(options.limits.clone(), storage.clone())
            .with_referee_key(referee_key),
    );
    let recovered = store
        .recover()
        .map_err(|e| ServeError::Storage(e.to_string()))?;
    match &options.storage {
        StorageConfig::Memory => {
            tracing::info!(storage = storage.name(), "games are kept in memory only")
        }
        StorageConfig::Sqlite(o) => tracing::info!(
            storage = storage.name(),
            dir = %o.dir.display(),
            sync = ?o.sync,
            recovered,
            "storage open; unfinished games recovered"
        ),
        StorageConfig::Postgres(o) => tracing::info!(
            storage = storage.name(),
            database = %o.target(),
            recovered,
            "storage open; unfinished games recovered"
        ),
    }
    Ok((store, postgres, hub))
}

/// Serves the HTTP router on `port` until `stop`.
fn spawn_http(
    port: HttpPort,
    store: &Arc<SessionStore>,
    tournaments: &Arc<Tournaments>,
    stop: &CancellationToken,
    edge: &Edge,
    http_idle_timeout: Duration,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let router = http::router(http::WebState {
        store: store.clone(),
        tournaments: tournaments.clone(),
        shutdown: stop.clone(),
        metrics: port.metrics,
    });
    // As on the gRPC side: TLS when on, the bound per address, and no
    // delayed ACK (an event written right after an answer must not wait).
    let listener = edge.http_incoming(port.listener, http_idle_timeout, stop.clone());
    // Each request counts as a call of its connection (its idle timeout).
    let router = router
        .layer(CallsLayer)
        .into_make_service_with_connect_info::<edge::listen::ConnInfo>();
    let stop = stop.clone();
    tokio::spawn(
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .into_future(),
    )
}

/// The future that starts the drain once `shutdown` resolves (health turns
/// NOT_SERVING, `stop` is cancelled so open streams end), and a receiver
/// told when it has started.
fn drain_signal(
    shutdown: impl Future<Output = ()> + Send + 'static,
    health: tonic_health::server::HealthReporter,
    stop: CancellationToken,
) -> (
    impl Future<Output = ()> + Send + 'static,
    tokio::sync::oneshot::Receiver<()>,
) {
    let (drain_started_tx, drain_started) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: draining");
        health
            .set_service_status("", ServingStatus::NotServing)
            .await;
        health
            .set_service_status(SERVICE_NAME, ServingStatus::NotServing)
            .await;
        health
            .set_service_status(TOURNAMENT_SERVICE_NAME, ServingStatus::NotServing)
            .await;
        stop.cancel();
        let _ = drain_started_tx.send(());
    };
    (signal, drain_started)
}

/// What the gRPC services serve: the games, the tournaments, and in a
/// cluster the routing of games' and tournaments' calls to their owners.
type Served = (
    Arc<SessionStore>,
    Arc<Tournaments>,
    Option<Arc<Cluster>>,
    Option<Arc<TournamentCluster>>,
);

/// Serves gRPC (the referee, health, reflection) on `listener` until the
/// `drain` signal, then drains for at most the drain timeout once its
/// receiver says the drain started.
async fn serve_grpc(
    listener: TcpListener,
    options: &ServerOptions,
    ((store, tournaments, cluster, tournament_cluster), hooks): (Served, webhooks::api::WebhookApi),
    edge: &Edge,
    health_service: tonic_health::pb::health_server::HealthServer<
        impl tonic_health::pb::health_server::Health,
    >,
    stop: &CancellationToken,
    drain: (
        impl Future<Output = ()> + Send + 'static,
        tokio::sync::oneshot::Receiver<()>,
    ),
) -> Result<(), ServeError> {
    let (signal, drain_started) = drain;
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    let referee = RefereeApi::new(store, stop.clone())
        .with_max_watch_streams(options.max_watch_streams)
        .with_quotas(edge.quotas().clone());
    let referee = RefereeServiceServer::new(referee)
        .max_decoding_message_size(options.max_message_bytes)
        .max_encoding_message_size(options.max_message_bytes);
    let tournament = TournamentServiceServer::new(TournamentApi::new(tournaments, stop.clone()))
        .max_decoding_message_size(options.max_message_bytes)
        .max_encoding_message_size(options.max_message_bytes);

    // Socket options are set by the accept task (the builder's
    // tcp_nodelay/tcp_keepalive only apply when tonic binds). Without nodelay,
    // a watch event written just after a unary reply waits for a delayed ACK.
    let incoming = edge.grpc_incoming(
        listener,
        options.keepalive_interval,
        options.idle_timeout,
        stop.clone(),
    );
    let serve = Server::builder()
        .http2_keepalive_interval(Some(options.keepalive_interval))
        .http2_keepalive_timeout(Some(options.keepalive_timeout))
        // Outermost: each call counts on its connection until its answer
        // is done (the connection's idle timeout, crate::service::edge::listen).
        .layer(CallsLayer)
        // Then: answers of up to 2 KiB leave in frames h2 batches
        // (crate::service::frames).
        .layer(tower::util::MapResponseLayer::new(frames::small_frames))
        // One span and the RED metrics per call (crate::service::telemetry); the
        // session layer adds the game id, seat and ply to the span.
        .layer(RpcLayer)
        // Inside the RPC layer, so shed calls are counted and traced too.
        .layer(InFlightLimitLayer::new(options.max_concurrent_calls))
        // Then who calls: the key and its scope, then the client's rate.
        .layer(AccessLayer::new(edge.keys().clone()))
        .layer(ClientRateLayer::new(edge.quotas().clone()))
        // Innermost: a call about a game another replica owns goes there
        // (its key and limits were checked here, and are again there).
        .layer(
            ForwardLayer::new(cluster, options.max_message_bytes)
                .with_tournaments(tournament_cluster),
        )
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(referee)
        .add_service(tournament)
        .add_service(
            grpc::answer::server::webhook_service_server::WebhookServiceServer::new(hooks)
                .max_decoding_message_size(options.max_message_bytes),
        )
        .serve_with_incoming_shutdown(incoming, signal);
    tokio::pin!(serve);

    let drain_timeout = options.drain_timeout;
    tokio::select! {
        result = &mut serve => result.map_err(ServeError::from),
        _ = drain_deadline(drain_started, drain_timeout) => {
            tracing::warn!(?drain_timeout, "drain timed out: closing remaining connections");
            Ok(())
        }
    }
}

/// The reflection services' builder: the referee's and health's protos,
/// and google.rpc's error details, so reflection clients can decode them.
fn reflection() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
}

/// Resolves `drain_timeout` after the drain started (never, if it never
/// does).
async fn drain_deadline(
    drain_started: tokio::sync::oneshot::Receiver<()>,
    drain_timeout: Duration,
) {
    if drain_started.await.is_ok() {
        tokio::time::sleep(drain_timeout).await;
    } else {
        std::future::pending::<()>().await;
    }
}

/// Waits for the HTTP server to stop: idle keep-alive connections close at
/// once and event streams end on `stop`; a request still running gets the
/// drain bound.
async fn finish_http(task: tokio::task::JoinHandle<std::io::Result<()>>, drain_timeout: Duration) {
    match tokio::time::timeout(drain_timeout, task).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!("HTTP server: {e}"),
        Ok(Err(e)) => tracing::warn!("HTTP server task: {e}"),
        Err(_) => tracing::warn!(?drain_timeout, "HTTP drain timed out"),
    }
}

/// How often the retention of `retain` is applied: an eighth of it, between
/// a second and an hour.
pub fn prune_interval(retain: Duration) -> Duration {
    (retain / 8).clamp(Duration::from_secs(1), Duration::from_secs(3600))
}

/// Deletes from storage the games that ended more than `retain` ago, at
/// start and then every [`prune_interval`], until `stop`. A failure is
/// logged and retried at the next tick.
async fn prune(store: Arc<SessionStore>, retain: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(prune_interval(retain));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {
                if let Err(e) = store.prune(retain).await {
                    tracing::warn!(error = %e, "pruning finished games failed");
                }
            }
        }
    }
}

/// Drops expired games every `every` until `stop`, and forgets clients
/// with nothing left to count.
async fn sweep(
    store: Arc<SessionStore>,
    quotas: Arc<ClientQuotas>,
    every: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {
                quotas.sweep();
                let dropped = store.sweep(std::time::Instant::now());
                if dropped > 0 {
                    tracing::info!(dropped, remaining = store.len(), "expired games dropped");
                }
            }
        }
    }
}
