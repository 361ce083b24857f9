//! How both ports take connections: an accept task per listener that sets
//! the socket options, bounds the connections open per client address,
//! runs the TLS handshake when TLS is on (each connection on its own task,
//! bounded by a timeout, so a slow handshake holds up no other), and hands
//! the ready connections to tonic (`serve_with_incoming`) or axum (through
//! [`HttpIncoming`], an axum `Listener`).
//!
//! Every connection is a [`Conn`]; its [`Peer`] (address, TLS or not) is
//! what tonic puts into each request's extensions, where
//! [`crate::service::edge::access`] and [`crate::service::edge::quota`] read it. The
//! TLS configuration is asked for at each handshake, so a certificate
//! reloaded on disk serves the next connection while open ones keep theirs.
//!
//! Each connection also carries a watchdog ([`Timeouts`]): its opening (the
//! TLS handshake, then the HTTP/2 preface and SETTINGS on the gRPC port, or
//! the first request's headers on the HTTP port) must be done within the
//! handshake timeout counted from the accept, and a connection with no call
//! in progress is closed once it has been idle for the port's idle timeout
//! (on the HTTP port that is also the bound on reading the headers of every
//! later request). Calls are counted by [`CallsLayer`], which both ports'
//! services run outermost. The watchdog works on the bytes and the calls
//! only, so it holds with TLS or without and whatever a client sends.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use super::tls::TlsConfig;

/// Gauge: connections open, by `port` (`grpc`, `http`).
pub const CONNECTIONS_OPEN: &str = "referee_connections_open";
/// Counter: connections closed at once because their client address already
/// had its most open (`reason="per_client"`), because the server had its
/// most open (`reason="total"`), whose TLS handshake failed or timed out
/// (`reason="handshake"`) or that came while [`MAX_HANDSHAKES`] were under
/// way (`reason="handshakes_busy"`), by `port`.
pub const CONNECTIONS_REFUSED: &str = "referee_connections_refused_total";
/// Counter: connections the server closed because their opening was not
/// done within the handshake timeout (`reason="opening"`) or because they
/// held no call for the idle timeout (`reason="idle"`), by `port`.
pub const CONNECTIONS_TIMED_OUT: &str = "referee_connections_timed_out_total";

/// The default of [`Timeouts::handshake`]: the TLS handshake and the
/// protocol's opening (HTTP/2 preface and SETTINGS, or the first request's
/// headers), counted from the accept.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default idle timeout of the gRPC port: a connection with no call in
/// progress for that long is closed (a client's channel reconnects on its
/// next call).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The default idle timeout of the HTTP port (keep-alive between requests,
/// and the time to send a later request's headers).
pub const DEFAULT_HTTP_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default bound on connections open at once per client address, over
/// both ports: room for a NAT of a few hundred bots with a channel each,
/// while one address alone cannot use up the server's descriptors (it is
/// lowered to half of the total bound when that is smaller).
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 256;
/// File descriptors kept out of the automatic total bound on connections:
/// storage files, the database pool, the listeners, logs.
pub const DESCRIPTOR_RESERVE: usize = 64;

/// Most TLS handshakes under way at once on one port; a connection beyond
/// them is closed at once (a flood of slow handshakes from many addresses
/// must not grow tasks without bound).
pub const MAX_HANDSHAKES: usize = 1024;

/// Connections accepted but not yet taken by the server.
const READY_QUEUE: usize = 64;

/// Who is at the other end of a connection: put into each request's
/// extensions by tonic (it is the [`Conn`]'s connect info).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The client's address.
    pub addr: SocketAddr,
    /// Whether the connection is TLS.
    pub tls: bool,
}

/// The peer address in a request's extensions, if tonic put one there.
pub fn peer_of(extensions: &http::Extensions) -> Option<SocketAddr> {
    conn_of(extensions).map(|c| c.peer.addr).or_else(|| {
        extensions
            .get::<tonic::transport::server::TcpConnectInfo>()
            .and_then(|i| i.remote_addr())
    })
}

/// The bounds on connections open at once, per client address and in
/// all, shared by both ports; `0` is no bound.
#[derive(Debug, Clone, Default)]
pub struct ConnectionLimit {
    max: usize,
    total: usize,
    open: Arc<Mutex<OpenConnections>>,
}

#[derive(Debug, Default)]
struct OpenConnections {
    by_ip: HashMap<IpAddr, usize>,
    total: usize,
}

/// Why a connection was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    PerClient,
    Total,
}

impl Refusal {
    fn reason(self) -> &'static str {
        match self {
            Refusal::PerClient => "per_client",
            Refusal::Total => "total",
        }
    }
}

impl ConnectionLimit {
    /// At most `max` connections per client address (`0`: any number).
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit::with_total(max, 0)
    }

    /// At most `max` connections per client address and `total` in all
    /// (each `0`: any number).
    pub fn with_total(max: usize, total: usize) -> ConnectionLimit {
        ConnectionLimit {
            max,
            total,
            open: Arc::default(),
        }
    }

    /// The bound per client address (`0`: none).
    pub fn per_client(&self) -> usize {
        self.max
    }

    /// The bound over all addresses (`0`: none).
    pub fn total(&self) -> usize {
        self.total
    }

    /// A slot for one more connection from `ip`, or why not.
    fn take(&self, ip: IpAddr) -> Result<ConnectionSlot, Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if self.total > 0 && open.total >= self.total {
            return Err(Refusal::Total);
        }
        let count = open.by_ip.entry(ip).or_insert(0);
        if self.max > 0 && *count >= self.max {
            return Err(Refusal::PerClient);
        }
        *count += 1;
        open.total += 1;
        Ok(ConnectionSlot {
            ip,
            open: self.open.clone(),
        })
    }
}

/// One open connection's place in its [`ConnectionLimit`]; given back on drop.
#[derive(Debug)]
struct ConnectionSlot {
    ip: IpAddr,
    open: Arc<Mutex<OpenConnections>>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_ip.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

/// The total bound on connections when none is configured: the process's
/// file descriptor limit less [`DESCRIPTOR_RESERVE`] (at least 16), or
/// none when the limit is not known.
pub fn automatic_total(descriptors: Option<u64>) -> usize {
    match descriptors {
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_sub(DESCRIPTOR_RESERVE)
            .max(16),
        None => 0,
    }
}

/// The per-address bound in force: `per_client`, lowered to half of
/// `total` when that is smaller, so that one address never holds every
/// connection the server can open.
pub fn effective_per_client(per_client: usize, total: usize) -> usize {
    if total == 0 {
        return per_client;
    }
    let half = (total / 2).max(1);
    if per_client == 0 || per_client > half {
        half
    } else {
        per_client
    }
}

/// Raises the soft limit on open files to the hard limit (as most servers
/// do at start: the soft default is often 1024 or less) and returns the
/// limit now in force; `None` where it cannot be read.
pub fn raise_descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given, which lives
        // for the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit only reads the struct it is given.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
        if limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        // rlim_t is u64 here but not on every Unix.
        #[allow(clippy::unnecessary_cast)]
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// How long a connection may take to open and may stay without a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From the accept to the end of the opening: the TLS handshake, then
    /// the HTTP/2 preface and SETTINGS (gRPC port) or the first request's
    /// headers (HTTP port).
    pub handshake: Duration,
    /// How long a connection with no call in progress stays open.
    pub idle: Duration,
}

/// What a connection has done, shared by its watchdog and [`CallsLayer`].
#[derive(Debug)]
pub struct Activity {
    opened: AtomicBool,
    calls: AtomicUsize,
    idle_since: Mutex<Instant>,
}

impl Activity {
    fn new(since: Instant) -> Activity {
        Activity {
            opened: AtomicBool::new(false),
            calls: AtomicUsize::new(0),
            idle_since: Mutex::new(since),
        }
    }

    /// One call begins; it ends when the guard is dropped.
    pub fn begin(self: &Arc<Activity>) -> CallGuard {
        self.opened.store(true, Ordering::Release);
        self.calls.fetch_add(1, Ordering::AcqRel);
        CallGuard(self.clone())
    }
}

/// A call in progress on a connection (see [`Activity::begin`]).
#[derive(Debug)]
pub struct CallGuard(Arc<Activity>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        }
    }
}

/// What tonic puts into each request's extensions (the [`Conn`]'s connect
/// info), and axum too (as `ConnectInfo<ConnInfo>`).
#[derive(Debug, Clone)]
pub struct ConnInfo {
    /// Who is at the other end.
    pub peer: Peer,
    /// The connection's calls, for its idle timeout.
    pub activity: Arc<Activity>,
}

/// Counts the client's HTTP/2 connection preface (24 bytes) and the
/// SETTINGS frame that must follow it, as they are read.
#[derive(Debug)]
struct PrefaceCount {
    seen: usize,
    head: [u8; PREFACE_HEAD],
}

/// The preface and a frame header.
const PREFACE_HEAD: usize = 24 + 9;

impl PrefaceCount {
    /// Takes `bytes`, the next read; true once the whole opening is in.
    fn take(&mut self, bytes: &[u8]) -> bool {
        let mut bytes = bytes;
        if self.seen < PREFACE_HEAD {
            let n = bytes.len().min(PREFACE_HEAD - self.seen);
            self.head[self.seen..self.seen + n].copy_from_slice(&bytes[..n]);
            self.seen += n;
            bytes = &bytes[n..];
            if self.seen < PREFACE_HEAD {
                return false;
            }
        }
        let length = u32::from_be_bytes([0, self.head[24], self.head[25], self.head[26]]) as usize;
        self.seen += bytes.len();
        self.seen >= PREFACE_HEAD + length
    }
}

/// Closes a connection whose opening is late or which has been idle too
/// long, from inside its reads (the server always has a read pending).
struct Watchdog {
    port: &'static str,
    activity: Arc<Activity>,
    timeouts: Timeouts,
    opening_deadline: Instant,
    timer: Pin<Box<Sleep>>,
    /// On the gRPC port until the preface is in.
    preface: Option<PrefaceCount>,
}

impl Watchdog {
    fn new(port: &'static str, accepted: Instant, timeouts: Timeouts, http2: bool) -> Watchdog {
        let opening_deadline = accepted + timeouts.handshake;
        Watchdog {
            port,
            activity: Arc::new(Activity::new(accepted)),
            timeouts,
            opening_deadline,
            timer: Box::pin(tokio::time::sleep_until(opening_deadline)),
            preface: http2.then_some(PrefaceCount {
                seen: 0,
                head: [0; PREFACE_HEAD],
            }),
        }
    }

    /// Why the connection must close now, if it must; otherwise the timer
    /// is set to the next moment to look again and will wake this task.
    fn expired(&mut self, cx: &mut Context<'_>) -> Option<&'static str> {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return None;
            }
            let now = Instant::now();
            let next = if !self.activity.opened.load(Ordering::Acquire) {
                if now >= self.opening_deadline {
                    return Some("opening");
                }
                self.opening_deadline
            } else if self.activity.calls.load(Ordering::Acquire) > 0 {
                now + self.timeouts.idle
            } else {
                let since = *self
                    .activity
                    .idle_since
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let at = since + self.timeouts.idle;
                if at <= now {
                    return Some("idle");
                }
                at
            };
            self.timer.as_mut().reset(next);
        }
    }

    fn read(&mut self, bytes: &[u8]) {
        if let Some(preface) = &mut self.preface
            && !bytes.is_empty()
            && preface.take(bytes)
        {
            self.preface = None;
            self.activity.opened.store(true, Ordering::Release);
        }
    }
}

/// How a port takes connections.
#[derive(Debug, Clone)]
pub struct Accepting {
    /// The port's name in logs and metrics (`grpc`, `http`).
    pub port: &'static str,
    /// TLS, when on: the configuration is read at each handshake.
    pub tls: Option<Arc<TlsConfig>>,
    /// Connections per client address and in all.
    pub limit: ConnectionLimit,
    /// TCP keepalive on each socket.
    pub keepalive: Option<Duration>,
    /// The opening and idle timeouts.
    pub timeouts: Timeouts,
    /// Whether the port speaks HTTP/2 only (its opening is the preface).
    pub http2: bool,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// An accepted connection, TLS or not, holding its place in the
/// per-client bound while it is open.
pub struct Conn {
    stream: Stream,
    peer: Peer,
    watchdog: Watchdog,
    _slot: ConnectionSlot,
    _open: OpenGauge,
}

/// Counts a connection in [`CONNECTIONS_OPEN`] while it lives.
struct OpenGauge(&'static str);

impl OpenGauge {
    fn new(port: &'static str) -> OpenGauge {
        metrics::gauge!(CONNECTIONS_OPEN, "port" => port).increment(1.0);
        OpenGauge(port)
    }
}

impl Drop for OpenGauge {
    fn drop(&mut self) {
        metrics::gauge!(CONNECTIONS_OPEN, "port" => self.0).decrement(1.0);
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("peer", &self.peer).finish()
    }
}

impl Conn {
    /// The client at the other end.
    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// Its address and its calls.
    pub fn info(&self) -> ConnInfo {
        ConnInfo {
            peer: self.peer,
            activity: self.watchdog.activity.clone(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Some(reason) = this.watchdog.expired(cx) {
            tracing::debug!(port = this.watchdog.port, peer = %this.peer.addr, reason, "connection timed out: closing it");
            metrics::counter!(CONNECTIONS_TIMED_OUT, "port" => this.watchdog.port, "reason" => reason)
                .increment(1);
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("connection {reason} timeout"),
            )));
        }
        let before = buf.filled().len();
        let read = match &mut this.stream {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(Ok(())) = read {
            this.watchdog.read(&buf.filled()[before..]);
        }
        read
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().stream {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().stream {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().stream {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().stream {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.stream {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = ConnInfo;
    fn connect_info(&self) -> ConnInfo {
        self.info()
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, HttpIncoming>>
    for ConnInfo
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, HttpIncoming>) -> ConnInfo {
        stream.io().info()
    }
}

/// The connection a request came on, from its extensions (tonic's or
/// axum's connect info).
fn conn_of(extensions: &http::Extensions) -> Option<&ConnInfo> {
    extensions.get::<ConnInfo>().or_else(|| {
        extensions
            .get::<axum::extract::ConnectInfo<ConnInfo>>()
            .map(|c| &c.0)
    })
}

/// Counts each request as a call of its connection from its start until
/// its response body is done with, so that the watchdog of a connection
/// with a call in progress (a watch stream, an event stream) leaves it open.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallsLayer;

impl<S> tower::Layer<S> for CallsLayer {
    type Service = Calls<S>;
    fn layer(&self, inner: S) -> Calls<S> {
        Calls { inner }
    }
}

/// The service of [`CallsLayer`].
#[derive(Debug, Clone)]
pub struct Calls<S> {
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for Calls<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
{
    type Response = http::Response<Counted<R>>;
    type Error = S::Error;
    type Future = CallFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let guard = conn_of(request.extensions()).map(|c| c.activity.begin());
        CallFuture {
            inner: self.inner.call(request),
            guard,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response of a counted call.
    pub struct CallFuture<F> {
        #[pin]
        inner: F,
        guard: Option<CallGuard>,
    }
}

impl<F, R, E> Future for CallFuture<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = Result<http::Response<Counted<R>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = std::task::ready!(this.inner.poll(cx));
        let guard = this.guard.take();
        Poll::Ready(response.map(|r| {
            r.map(|body| Counted {
                body,
                _guard: guard,
            })
        }))
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its call counted while it lives.
    pub struct Counted<B> {
        #[pin]
        body: B,
        _guard: Option<CallGuard>,
    }
}

impl<B: http_body::Body> http_body::Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Accepts connections on `listener` until `stop`, and sends each once it
/// is ready (handshake done) on the returned channel.
pub fn accept(
    listener: TcpListener,
    how: Accepting,
    stop: CancellationToken,
) -> mpsc::Receiver<Conn> {
    let (tx, rx) = mpsc::channel(READY_QUEUE);
    let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => return,
                _ = tx.closed() => return,
                accepted = listener.accept() => accepted,
            };
            let (tcp, addr) = match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of descriptors and the like: wait, then go on.
                    tracing::warn!(port = how.port, "accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let accepted_at = Instant::now();
            let slot = match how.limit.take(addr.ip()) {
                Ok(slot) => slot,
                Err(refusal) => {
                    tracing::debug!(port = how.port, peer = %addr, reason = refusal.reason(), "connection refused: too many open");
                    metrics::counter!(CONNECTIONS_REFUSED, "port" => how.port, "reason" => refusal.reason())
                        .increment(1);
                    continue;
                }
            };
            let watchdog = Watchdog::new(how.port, accepted_at, how.timeouts, how.http2);
            set_socket_options(&tcp, how.keepalive);
            let peer = Peer {
                addr,
                tls: how.tls.is_some(),
            };
            match &how.tls {
                None => {
                    let conn = Conn {
                        stream: Stream::Plain(tcp),
                        peer,
                        watchdog,
                        _slot: slot,
                        _open: OpenGauge::new(how.port),
                    };
                    if tx.send(conn).await.is_err() {
                        return;
                    }
                }
                Some(tls) => {
                    let Ok(permit) = handshakes.clone().try_acquire_owned() else {
                        tracing::debug!(port = how.port, peer = %addr, "connection refused: too many TLS handshakes under way");
                        metrics::counter!(CONNECTIONS_REFUSED, "port" => how.port, "reason" => "handshakes_busy")
                            .increment(1);
                        continue;
                    };
                    let config = if how.port == "http" {
                        tls.http()
                    } else {
                        tls.grpc()
                    };
                    let ready = tx.clone();
                    tokio::spawn(async move {
                        handshake(tcp, peer, (slot, watchdog), config, ready).await;
                        drop(permit);
                    });
                }
            }
        }
    });
    rx
}

/// Runs the TLS handshake of one connection and hands it on when done.
async fn handshake(
    tcp: TcpStream,
    peer: Peer,
    (slot, watchdog): (ConnectionSlot, Watchdog),
    config: Arc<tokio_rustls::rustls::ServerConfig>,
    ready: mpsc::Sender<Conn>,
) {
    let port = watchdog.port;
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    match tokio::time::timeout_at(watchdog.opening_deadline, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => {
            let conn = Conn {
                stream: Stream::Tls(Box::new(stream)),
                peer,
                watchdog,
                _slot: slot,
                _open: OpenGauge::new(port),
            };
            let _ = ready.send(conn).await;
        }
        Ok(Err(e)) => {
            tracing::debug!(port, peer = %peer.addr, "TLS handshake failed: {e}");
            metrics::counter!(CONNECTIONS_REFUSED, "port" => port, "reason" => "handshake")
                .increment(1);
        }
        Err(_) => {
            tracing::debug!(port, peer = %peer.addr, "TLS handshake timed out");
            metrics::counter!(CONNECTIONS_REFUSED, "port" => port, "reason" => "handshake")
                .increment(1);
        }
    }
}

/// No delayed ACK (an event written right after a reply must not wait for
/// one), and TCP keepalive when asked.
fn set_socket_options(tcp: &TcpStream, keepalive: Option<Duration>) {
    let _ = tcp.set_nodelay(true);
    if let Some(time) = keepalive {
        let keepalive = socket2::TcpKeepalive::new().with_time(time);
        let _ = socket2::SockRef::from(tcp).set_tcp_keepalive(&keepalive);
    }
}

/// The ready connections of a port as the stream tonic serves.
pub fn grpc_incoming(
    ready: mpsc::Receiver<Conn>,
) -> impl tokio_stream::Stream<Item = Result<Conn, std::io::Error>> {
    use tokio_stream::StreamExt as _;
    tokio_stream::wrappers::ReceiverStream::new(ready).map(Ok)
}

/// The ready connections of a port as an axum `Listener`.
#[derive(Debug)]
pub struct HttpIncoming {
    ready: mpsc::Receiver<Conn>,
    local: SocketAddr,
}

impl HttpIncoming {
    /// Serves the connections of `ready`, accepted at `local`.
    pub fn new(ready: mpsc::Receiver<Conn>, local: SocketAddr) -> HttpIncoming {
        HttpIncoming { ready, local }
    }
}

impl axum::serve::Listener for HttpIncoming {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        match self.ready.recv().await {
            Some(conn) => {
                let addr = conn.peer.addr;
                (conn, addr)
            }
            // The accept task stopped (shutdown): no more connections; the
            // server's graceful shutdown ends it.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests;
