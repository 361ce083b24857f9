//! Telemetry: logs, traces and metrics, set up once by the binary and flushed
//! on shutdown. Nothing here is needed by the library to work: without
//! [`init`] and [`install_metrics`], spans go nowhere and the `metrics`
//! macros are no-ops (which is what the in-process tests rely on).
//!
//! * Logs: a `tracing-subscriber` formatter on stderr, human-readable or JSON
//!   ([`LogFormat`]), filtered by `RUST_LOG` (or the `--log` level).
//! * Traces: every RPC is a span opened by [`RpcLayer`] (see [`crate::service`]);
//!   spans are exported over OTLP/gRPC only when the standard
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) variable is set.
//!   The exporter reads the other `OTEL_*` variables itself; the resource reads
//!   `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`. A W3C `traceparent`
//!   in the request metadata becomes the server span's parent.
//! * Metrics: the `metrics` facade with the Prometheus recorder
//!   ([`install_metrics`]), rendered at `/metrics` on the service's HTTP port
//!   ([`crate::service::http`]); the metric names are the constants below.
//!   OTLP metrics go through the collector, which scrapes this endpoint (see
//!   docs/OBSERVABILITY.md for why there is no second metrics stack).

use std::fmt;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Histogram: each seat's measured round trip on its Play stream, by game
/// kind (docs/LAG.md).
pub const SEAT_LAG: &str = "referee_seat_lag_seconds";
/// Counter: RPCs answered, by `method` and gRPC `code` (`OK`, `NOT_FOUND`, …).
pub const RPC_TOTAL: &str = "referee_rpc_total";
/// Histogram: seconds from request to response headers (a stream's time to
/// open, not its lifetime), by `method`.
pub const RPC_DURATION: &str = "referee_rpc_duration_seconds";
/// Gauge: sessions held (in progress or finished and not yet expired).
pub const SESSIONS_ACTIVE: &str = "referee_sessions_active";
/// Gauge: games in progress.
pub const GAMES_IN_PROGRESS: &str = "referee_games_in_progress";
/// Gauge: watch streams open.
pub const WATCHERS_ACTIVE: &str = "referee_watchers_active";
/// Counter: games created or imported, by `game` and `variant`.
pub const GAMES_CREATED: &str = "referee_games_created_total";
/// Counter: games ended, by `game` and `reason` (`CONNECTION`, `RESIGNATION`, …).
pub const GAMES_FINISHED: &str = "referee_games_finished_total";
/// Counter: finished games read back from storage after they left memory.
pub const GAMES_LOADED: &str = "referee_games_loaded_total";
/// Counter: finished or expired games deleted from storage by the retention
/// option (`--retain-finished`).
pub const GAMES_PRUNED: &str = "referee_games_pruned_total";
/// Counter: moves applied, by `game` and `kind` (PÜNCT: place, move, jump, bridge).
pub const MOVES_APPLIED: &str = "referee_moves_applied_total";
/// Counter: moves refused by a rule, by `reason` (`PIECE_IMMOBILE`, …).
pub const MOVES_ILLEGAL: &str = "referee_moves_illegal_total";

/// Transactions the storage writer committed (each carries one or more
/// writes: writes / commits is the group-commit factor).
pub const STORAGE_COMMITS: &str = "referee_storage_commits_total";
/// Writes (games, moves, endings) committed to storage.
pub const STORAGE_WRITES: &str = "referee_storage_writes_total";
/// Folds of the move journal into the per-game tables (docs/STORAGE.md,
/// "The move journal").
pub const STORAGE_JOURNAL_FOLDS: &str = "referee_storage_journal_folds_total";
/// Time to commit one transaction, sync included.
pub const STORAGE_COMMIT_DURATION: &str = "referee_storage_commit_duration_seconds";
/// Writes refused because storage failed (the call got `UNAVAILABLE`).
pub const STORAGE_FAILURES: &str = "referee_storage_failures_total";

/// Gauge: games this replica owns (holds the lease of) in a cluster.
pub const CLUSTER_GAMES_OWNED: &str = "referee_cluster_games_owned";
/// Counter: calls forwarded to the replica owning their game, by `outcome`
/// (`ok`: answered by the owner, `unreachable`: the owner did not answer).
pub const CLUSTER_FORWARDED: &str = "referee_cluster_forwarded_calls_total";
/// Counter: lease renewals (heartbeats), by `outcome` (`ok`, `failed`).
pub const CLUSTER_LEASE_RENEWALS: &str = "referee_cluster_lease_renewals_total";
/// Counter: games whose lease another replica took (dropped from memory).
pub const CLUSTER_LEASES_LOST: &str = "referee_cluster_leases_lost_total";
/// Counter: games taken over from a replica whose lease expired.
pub const CLUSTER_TAKEOVERS: &str = "referee_cluster_takeovers_total";
/// Histogram: how long a game had no event before its takeover (by the
/// database's clock): the takeover gap its players saw, at most.
pub const CLUSTER_TAKEOVER_GAP: &str = "referee_cluster_takeover_gap_seconds";
/// Counter: writes refused by fencing (this replica's lease had moved).
pub const CLUSTER_FENCED_WRITES: &str = "referee_cluster_fenced_writes_total";
/// Histogram: how long a game change took to reach this replica's
/// followers by LISTEN/NOTIFY (the database's clock against this one's).
pub const CLUSTER_NOTIFY_LAG: &str = "referee_cluster_notify_lag_seconds";
/// Counter: watch streams opened with `from_ply` (a client resuming).
pub const CLUSTER_WATCH_RESUMES: &str = "referee_cluster_watch_resumes_total";

/// The HTTP port (`/metrics`, the spectator page) when none is given: the
/// usual port of OpenTelemetry's Prometheus exporters.
pub const DEFAULT_METRICS_PORT: u16 = 9464;

/// Histogram buckets of [`RPC_DURATION`], in seconds: a move is tens of
/// microseconds, a listing of many games milliseconds.
/// The buckets of [`SEAT_LAG`]: LAN to intercontinental and worse.
const LAG_BUCKETS: &[f64] = &[
    0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0,
];

const RPC_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0,
];

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event (the default).
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("`{other}` is not a log format (text or json)")),
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (bad endpoint, …).
    #[error("OTLP exporter: {0}")]
    Otlp(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global subscriber was already installed.
    #[error("log subscriber: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
    /// The Prometheus recorder could not be built or installed.
    #[error("metrics exporter: {0}")]
    Metrics(#[from] metrics_exporter_prometheus::BuildError),
}

/// Whether the standard environment asks for OTLP trace export: an OTLP
/// endpoint is set and the SDK is not disabled.
pub fn otlp_traces_configured() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled =
        std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

/// The installed telemetry; [`Telemetry::shutdown`] flushes the exporters.
#[derive(Debug)]
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
}

/// Installs the global log subscriber and, if `otlp` (see
/// [`otlp_traces_configured`]), the OTLP trace pipeline. `RUST_LOG` wins over
/// `default_level`. Must run inside the Tokio runtime when `otlp` is set: the
/// exporter's gRPC channel lives on it.
pub fn init(
    format: LogFormat,
    default_level: tracing::Level,
    otlp: bool,
) -> Result<Telemetry, TelemetryError> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::from_level(default_level).into())
        .from_env_lossy();
    let fmt_layer = match format {
        // Colour only on a terminal: a container's or a file's log gets
        // plain text (`NO_COLOR` turns it off on a terminal too).
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(
                std::io::IsTerminal::is_terminal(&std::io::stderr())
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            )
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    // The propagator is set either way: a `traceparent` then still links the
    // span, and log lines carry no ids that would not exist elsewhere.
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let tracer_provider = if otlp {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()?;
        let mut resource = Resource::builder();
        if std::env::var("OTEL_SERVICE_NAME").is_err() {
            resource = resource.with_service_name(env!("CARGO_PKG_NAME"));
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        Some(provider)
    } else {
        None
    };
    // Each layer filters for itself: `RUST_LOG=warn` quiets the logs, not
    // the exported RPC spans (which are at info).
    let otel_layer = tracer_provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer(env!("CARGO_PKG_NAME")))
            .with_filter(LevelFilter::INFO)
    });
    tracing_subscriber::registry()
        .with(fmt_layer.with_filter(filter))
        .with(otel_layer)
        .try_init()?;
    Ok(Telemetry { tracer_provider })
}

impl Telemetry {
    /// Whether spans are exported over OTLP.
    pub fn exports_traces(&self) -> bool {
        self.tracer_provider.is_some()
    }

    /// Exports the spans still buffered and stops the exporter. Blocks (at
    /// most a few seconds): call it from a blocking context, with the runtime
    /// still running (the exporter's channel lives on it).
    pub fn shutdown(self) {
        if let Some(provider) = self.tracer_provider
            && let Err(e) = provider.shutdown_with_timeout(Duration::from_secs(5))
        {
            eprintln!("warning: flushing traces failed: {e}");
        }
    }
}

/// How often the Prometheus recorder's upkeep runs (draining histogram
/// buffers), as the exporter's own HTTP listener would do it.
const METRICS_UPKEEP: Duration = Duration::from_secs(5);

/// Installs the global `metrics` recorder and returns the handle that renders
/// it in Prometheus text format: the service's HTTP router serves it at
/// `/metrics` (see [`crate::service::http`]), next to the spectator page. Must run
/// inside the Tokio runtime: it spawns the recorder's periodic upkeep.
pub fn install_metrics() -> Result<PrometheusHandle, TelemetryError> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(RPC_DURATION.to_string()), RPC_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(SEAT_LAG.to_string()), LAG_BUCKETS)?
        .set_buckets_for_metric(
            Matcher::Full(STORAGE_COMMIT_DURATION.to_string()),
            RPC_BUCKETS,
        )?
        .install_recorder()?;
    // The recorder just installed is the one every thread without a local
    // recorder reaches from now on (it is never replaced).
    let _ = GLOBAL_RECORDER.set(recorder_address());
    describe_metrics();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(METRICS_UPKEEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

/// Where the recorder a metric call would reach now lives: the identity of
/// the global recorder, a thread's local one, or the no-op one.
fn recorder_address() -> usize {
    metrics::with_recorder(|r| std::ptr::from_ref(r).cast::<()>() as usize)
}

/// The address of the global recorder [`install_metrics`] installed.
static GLOBAL_RECORDER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// `referee_moves_applied_total`'s counters by game and kind, resolved in
/// the global recorder once (both labels are static strings, compared by
/// address: a name reached through two addresses is resolved twice, to the
/// same counter).
type AppliedCounters = Vec<((usize, usize), metrics::Counter)>;
static MOVES_APPLIED_COUNTERS: std::sync::RwLock<AppliedCounters> =
    std::sync::RwLock::new(Vec::new());

/// Counts one applied move of `game` of `kind`.
///
/// The recorder's own lookup builds an owned copy of the key and hashes its
/// name and labels on every call (about 0.4 µs of a move's server CPU in
/// docs/BENCHMARKS.md); the few counters of this metric are looked up once
/// and kept. Only the global recorder's are kept: a test's local recorder,
/// or a recorder installed later than a first move, is asked every time.
pub fn count_move_applied(game: &'static str, kind: &'static str) {
    let global = GLOBAL_RECORDER.get().copied();
    if global.is_none() || global != Some(recorder_address()) {
        metrics::counter!(MOVES_APPLIED, "game" => game, "kind" => kind).increment(1);
        return;
    }
    let key = (game.as_ptr() as usize, kind.as_ptr() as usize);
    {
        let cached = MOVES_APPLIED_COUNTERS
            .read()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, counter)) = cached.iter().find(|(k, _)| *k == key) {
            counter.increment(1);
            return;
        }
    }
    let counter = metrics::counter!(MOVES_APPLIED, "game" => game, "kind" => kind);
    counter.increment(1);
    let mut cached = MOVES_APPLIED_COUNTERS
        .write()
        .unwrap_or_else(|e| e.into_inner());
    if !cached.iter().any(|(k, _)| *k == key) {
        cached.push((key, counter));
    }
}

fn describe_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(RPC_TOTAL, "RPCs answered, by method and gRPC code");
    describe_histogram!(
        SEAT_LAG,
        Unit::Seconds,
        "Round trips measured on seats' Play streams, by game kind"
    );
    describe_histogram!(
        RPC_DURATION,
        Unit::Seconds,
        "Time from request to response headers, by method"
    );
    describe_gauge!(
        SESSIONS_ACTIVE,
        "Sessions held, finished ones until they expire"
    );
    describe_gauge!(GAMES_IN_PROGRESS, "Games in progress");
    describe_gauge!(WATCHERS_ACTIVE, "Watch streams open");
    describe_counter!(
        GAMES_CREATED,
        "Games created or imported, by game and variant"
    );
    describe_counter!(GAMES_FINISHED, "Games ended, by game and reason");
    describe_counter!(
        GAMES_LOADED,
        "Finished games read back from storage after they left memory"
    );
    describe_counter!(
        GAMES_PRUNED,
        "Finished or expired games deleted from storage by the retention option"
    );
    describe_counter!(MOVES_APPLIED, "Moves applied, by game and kind");
    describe_counter!(MOVES_ILLEGAL, "Moves refused by a rule, by reason");
    describe_counter!(STORAGE_COMMITS, "Storage transactions committed");
    describe_counter!(STORAGE_WRITES, "Writes committed to storage");
    describe_counter!(
        STORAGE_JOURNAL_FOLDS,
        "Folds of the move journal into the per-game tables"
    );
    describe_histogram!(
        STORAGE_COMMIT_DURATION,
        Unit::Seconds,
        "Time to commit one storage transaction"
    );
    describe_counter!(STORAGE_FAILURES, "Calls refused because storage failed");
    describe_gauge!(CLUSTER_GAMES_OWNED, "Games this replica owns in a cluster");
    describe_counter!(
        CLUSTER_FORWARDED,
        "Calls forwarded to the replica owning their game, by outcome"
    );
    describe_counter!(CLUSTER_LEASE_RENEWALS, "Lease renewals, by outcome");
    describe_counter!(
        CLUSTER_LEASES_LOST,
        "Games whose lease another replica took over"
    );
    describe_counter!(
        CLUSTER_TAKEOVERS,
        "Games taken over after their owner's lease expired"
    );
    describe_histogram!(
        CLUSTER_TAKEOVER_GAP,
        Unit::Seconds,
        "Time a game taken over had gone without an event"
    );
    describe_counter!(CLUSTER_FENCED_WRITES, "Writes refused by fencing");
    describe_histogram!(
        CLUSTER_NOTIFY_LAG,
        Unit::Seconds,
        "Time for a game change to reach this replica by LISTEN/NOTIFY"
    );
    describe_counter!(CLUSTER_WATCH_RESUMES, "Watch streams opened with from_ply");
}

/// The tower layer that makes every RPC a span and counts it (rate, errors,
/// duration: the RED method). It wraps all services of the server, so no
/// handler has to: handlers and the session layer only add fields to the
/// current span (`game_id`, `seat`, `ply`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RpcLayer;

impl<S> tower::Layer<S> for RpcLayer {
    type Service = RpcService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RpcService { inner }
    }
}

/// The service [`RpcLayer`] wraps around each gRPC service.
#[derive(Debug, Clone)]
pub struct RpcService<S> {
    inner: S,
}

/// Reads W3C trace context from HTTP/2 headers (= gRPC metadata).
struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

impl<S, B, R> tower::Service<http::Request<B>> for RpcService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>> + Send,
    S::Future: Send + 'static,
    S::Error: fmt::Display,
{
    type Response = http::Response<RecordedBody<R>>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let path = request.uri().path().to_string();
        let (service, method) = split_path(&path);
        let span = tracing::info_span!(
            "rpc",
            otel.name = %path.trim_start_matches('/'),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            rpc.system = "grpc",
            rpc.service = %service,
            rpc.method = %method,
            rpc.grpc.status_code = tracing::field::Empty,
            code = tracing::field::Empty,
            game_id = tracing::field::Empty,
            seat = tracing::field::Empty,
            ply = tracing::field::Empty,
            client = tracing::field::Empty,
        );
        let parent = opentelemetry::global::get_text_map_propagator(|p| {
            p.extract(&HeaderExtractor(request.headers()))
        });
        // An absent or malformed traceparent leaves the span a root: fine.
        let _ = span.set_parent(parent);
        let started = Instant::now();
        let future = {
            let _entered = span.enter();
            self.inner.call(request)
        };
        let call_span = span.clone();
        Box::pin(
            async move {
                let response = future.await.inspect_err(|_| {
                    Call::new(call_span.clone(), path.clone()).finish(tonic::Code::Unknown);
                })?;
                let method = metric_method(&path, response.headers());
                metrics::histogram!(RPC_DURATION, "method" => method)
                    .record(started.elapsed().as_secs_f64());
                let call = Call::new(call_span, path);
                // A handler's error is a trailers-only response: its status
                // is in the headers. Otherwise it comes in the trailers.
                let pending = match header_code(response.headers()) {
                    Some(code) => {
                        call.finish(code);
                        None
                    }
                    None => Some(call),
                };
                Ok(response.map(|inner| RecordedBody { inner, pending }))
            }
            .instrument(span),
        )
    }
}

/// A call whose status is not known yet: recorded once, when it is.
struct Call {
    span: tracing::Span,
    path: String,
}

impl Call {
    fn new(span: tracing::Span, path: String) -> Call {
        Call { span, path }
    }

    /// Records the final status on the span and in [`RPC_TOTAL`]; the span
    /// ends when the last handle (this one) goes.
    fn finish(self, code: tonic::Code) {
        record(&self.span, &self.path, code);
    }
}

pin_project_lite::pin_project! {
    /// A response body that records the call's status when its trailers go
    /// out (or `CANCELLED` if the client leaves first), so a stream is
    /// counted by how it ended and its span lasts as long as it does.
    pub struct RecordedBody<B> {
        #[pin]
        inner: B,
        pending: Option<Call>,
    }

    impl<B> PinnedDrop for RecordedBody<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(call) = this.project().pending.take() {
                call.finish(tonic::Code::Cancelled);
            }
        }
    }
}

impl<B> http_body::Body for RecordedBody<B>
where
    B: http_body::Body,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        let code = match &polled {
            Poll::Ready(Some(Ok(frame))) => frame.trailers_ref().map(header_code),
            Poll::Ready(Some(Err(_))) => Some(Some(tonic::Code::Internal)),
            // Ended without trailers: not a gRPC ending.
            Poll::Ready(None) => Some(Some(tonic::Code::Unknown)),
            Poll::Pending => None,
        };
        if let Some(code) = code
            && let Some(call) = this.pending.take()
        {
            call.finish(code.unwrap_or(tonic::Code::Unknown));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// `/pkg.Service/Method` → (`pkg.Service`, `Method`).
fn split_path(path: &str) -> (&str, &str) {
    let trimmed = path.trim_start_matches('/');
    trimmed.split_once('/').unwrap_or((trimmed, ""))
}

/// The `grpc-status` in `headers` (response headers of a trailers-only
/// answer, or trailers), if any.
fn header_code(headers: &http::HeaderMap) -> Option<tonic::Code> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map(tonic::Code::from_i32)
}

/// The `method` label: the path, except that unknown paths (all answered
/// UNIMPLEMENTED) share one label, so a client cannot grow the label set.
fn metric_method(path: &str, headers: &http::HeaderMap) -> String {
    if header_code(headers) == Some(tonic::Code::Unimplemented) {
        "unknown".to_string()
    } else {
        path.to_string()
    }
}

/// The upper-snake name of a code, as Prometheus label and span field.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

fn record(span: &tracing::Span, path: &str, code: tonic::Code) {
    let name = code_name(code);
    span.record("code", name);
    span.record("rpc.grpc.status_code", code as i32);
    // Server errors make the span an error; client mistakes do not (the
    // OpenTelemetry gRPC conventions).
    let server_fault = matches!(
        code,
        tonic::Code::Unknown
            | tonic::Code::DeadlineExceeded
            | tonic::Code::Unimplemented
            | tonic::Code::Internal
            | tonic::Code::Unavailable
            | tonic::Code::DataLoss
    );
    if server_fault {
        span.record("otel.status_code", "ERROR");
    }
    let method = if code == tonic::Code::Unimplemented {
        "unknown".to_string()
    } else {
        path.to_string()
    };
    metrics::counter!(RPC_TOTAL, "method" => method, "code" => name).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applied_moves_reach_a_recorder_that_is_not_the_global_one() {
        // Two recorders in turn on this thread: each counts its own moves,
        // none is served a counter kept for the other.
        for n in [3, 2] {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            metrics::with_local_recorder(&recorder, || {
                for _ in 0..n {
                    count_move_applied("punct", "place");
                }
                count_move_applied("punct", "jump");
            });
            let page = handle.render();
            assert!(
                page.contains(&format!(
                    "referee_moves_applied_total{{game=\"punct\",kind=\"place\"}} {n}\n"
                )),
                "{page}"
            );
            assert!(
                page.contains("referee_moves_applied_total{game=\"punct\",kind=\"jump\"} 1\n"),
                "{page}"
            );
        }
    }

    #[test]
    fn paths_split_into_service_and_method() {
        assert_eq!(
            split_path("/referee.v1.RefereeService/SubmitMove"),
            ("referee.v1.RefereeService", "SubmitMove")
        );
        assert_eq!(split_path("/odd"), ("odd", ""));
    }

    #[test]
    fn status_is_read_from_headers_or_trailers() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(header_code(&headers), None);
        headers.insert("grpc-status", http::HeaderValue::from_static("5"));
        assert_eq!(header_code(&headers), Some(tonic::Code::NotFound));
        assert_eq!(code_name(tonic::Code::NotFound), "NOT_FOUND");
        assert_eq!(metric_method("/x.Y/Z", &headers), "/x.Y/Z");
        headers.insert("grpc-status", http::HeaderValue::from_static("12"));
        assert_eq!(metric_method("/x.Y/Z", &headers), "unknown");
    }

    #[test]
    fn log_formats_parse_and_print() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!(LogFormat::Text.to_string(), "text");
        assert!("xml".parse::<LogFormat>().is_err());
    }
}
