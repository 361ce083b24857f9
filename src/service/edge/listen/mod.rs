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

mod calls;
mod conn;
mod limit;
mod watchdog;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::conn::{OpenGauge, Stream};
use self::limit::ConnectionSlot;
use self::watchdog::Watchdog;
use super::tls::TlsConfig;

pub use self::calls::{CallFuture, Calls, CallsLayer, Counted};
pub use self::conn::{Conn, ConnInfo, Peer, peer_of};
pub use self::limit::{
    ConnectionLimit, DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DESCRIPTOR_RESERVE, automatic_total,
    effective_per_client, raise_descriptor_limit,
};
pub use self::watchdog::{
    Activity, CallGuard, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_HTTP_IDLE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, Timeouts,
};

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

/// Most TLS handshakes under way at once on one port; a connection beyond
/// them is closed at once (a flood of slow handshakes from many addresses
/// must not grow tasks without bound).
pub const MAX_HANDSHAKES: usize = 1024;

/// Connections accepted but not yet taken by the server.
const READY_QUEUE: usize = 64;

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
