//! How both ports take connections: an accept task per listener that sets
//! the socket options, bounds the connections open per client address,
//! runs the TLS handshake when TLS is on (each connection on its own task,
//! bounded by a timeout, so a slow handshake holds up no other), and hands
//! the ready connections to tonic (`serve_with_incoming`) or axum (through
//! [`HttpIncoming`], an axum `Listener`).
//!
//! Every connection is a [`Conn`]; its [`Peer`] (address, TLS or not) is
//! what tonic puts into each request's extensions, where
//! [`crate::service::access`] and [`crate::service::quota`] read it. The
//! TLS configuration is asked for at each handshake, so a certificate
//! reloaded on disk serves the next connection while open ones keep theirs.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use crate::service::tls::TlsConfig;

/// Gauge: connections open, by `port` (`grpc`, `http`).
pub const CONNECTIONS_OPEN: &str = "referee_connections_open";
/// Counter: connections closed at once because their client address already
/// had its most open (`reason="per_client"`), whose TLS handshake failed
/// (`reason="handshake"`) or that came while [`MAX_HANDSHAKES`] were under
/// way (`reason="handshakes_busy"`), by `port`.
pub const CONNECTIONS_REFUSED: &str = "referee_connections_refused_total";

/// Longest a TLS handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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
    extensions.get::<Peer>().map(|p| p.addr).or_else(|| {
        extensions
            .get::<tonic::transport::server::TcpConnectInfo>()
            .and_then(|i| i.remote_addr())
    })
}

/// The bound on connections open at once per client address, shared by
/// both ports; `0` is no bound.
#[derive(Debug, Clone, Default)]
pub struct ConnectionLimit {
    max: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl ConnectionLimit {
    /// At most `max` connections per client address (`0`: any number).
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit {
            max,
            open: Arc::default(),
        }
    }

    /// A slot for one more connection from `ip`, or `None` when it has its
    /// most already.
    fn take(&self, ip: IpAddr) -> Option<ConnectionSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(ip).or_insert(0);
        if self.max > 0 && *count >= self.max {
            return None;
        }
        *count += 1;
        Some(ConnectionSlot {
            ip,
            open: self.open.clone(),
        })
    }
}

/// One open connection's place in its [`ConnectionLimit`]; given back on drop.
#[derive(Debug)]
struct ConnectionSlot {
    ip: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.ip);
            }
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
    /// Connections per client address.
    pub limit: ConnectionLimit,
    /// TCP keepalive on each socket.
    pub keepalive: Option<Duration>,
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
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().stream {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
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
    type ConnectInfo = Peer;
    fn connect_info(&self) -> Peer {
        self.peer
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
            let Some(slot) = how.limit.take(addr.ip()) else {
                tracing::debug!(port = how.port, peer = %addr, "connection refused: too many from this address");
                metrics::counter!(CONNECTIONS_REFUSED, "port" => how.port, "reason" => "per_client")
                    .increment(1);
                continue;
            };
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
                    let (port, ready) = (how.port, tx.clone());
                    tokio::spawn(async move {
                        handshake(tcp, peer, slot, config, port, ready).await;
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
    slot: ConnectionSlot,
    config: Arc<tokio_rustls::rustls::ServerConfig>,
    port: &'static str,
    ready: mpsc::Sender<Conn>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => {
            let conn = Conn {
                stream: Stream::Tls(Box::new(stream)),
                peer,
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
mod tests {
    use super::*;

    #[test]
    fn connections_per_address_are_bounded_and_given_back() {
        let limit = ConnectionLimit::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = limit.take(a).unwrap();
        let _second = limit.take(a).unwrap();
        assert!(limit.take(a).is_none(), "a third from the same address");
        let _other = limit.take(b).unwrap();
        drop(first);
        assert!(limit.take(a).is_some(), "a slot came back");
        let unbounded = ConnectionLimit::new(0);
        let held: Vec<_> = (0..100).map(|_| unbounded.take(a).unwrap()).collect();
        drop(held);
        assert!(unbounded.open.lock().unwrap().is_empty());
    }
}
