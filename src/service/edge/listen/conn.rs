//! An accepted connection ([`Conn`]), TLS or not: its reads go through its
//! watchdog, and it tells tonic and axum who is at the other end
//! ([`ConnInfo`], [`Peer`]).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::limit::ConnectionSlot;
use super::watchdog::{Activity, Watchdog};
use super::{CONNECTIONS_OPEN, CONNECTIONS_TIMED_OUT, HttpIncoming};

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

/// What tonic puts into each request's extensions (the [`Conn`]'s connect
/// info), and axum too (as `ConnectInfo<ConnInfo>`).
#[derive(Debug, Clone)]
pub struct ConnInfo {
    /// Who is at the other end.
    pub peer: Peer,
    /// The connection's calls, for its idle timeout.
    pub activity: Arc<Activity>,
}

pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// An accepted connection, TLS or not, holding its place in the
/// per-client bound while it is open.
pub struct Conn {
    pub(super) stream: Stream,
    pub(super) peer: Peer,
    pub(super) watchdog: Watchdog,
    pub(super) _slot: ConnectionSlot,
    pub(super) _open: OpenGauge,
}

/// Counts a connection in [`CONNECTIONS_OPEN`] while it lives.
pub(super) struct OpenGauge(&'static str);

impl OpenGauge {
    pub(super) fn new(port: &'static str) -> OpenGauge {
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
pub(super) fn conn_of(extensions: &http::Extensions) -> Option<&ConnInfo> {
    extensions.get::<ConnInfo>().or_else(|| {
        extensions
            .get::<axum::extract::ConnectInfo<ConnInfo>>()
            .map(|c| &c.0)
    })
}
