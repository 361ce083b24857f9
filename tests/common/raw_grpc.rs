//! gRPC spoken over a raw HTTP/2 connection, for clients no library
//! would be: calls held open, and a socket whose reads stop for good (a
//! watcher that stops reading, so the server's writes to it back up).
//! Shared by the overload tests and `examples/watcher_heap.rs` (which
//! includes this file by path).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A socket whose reads can be stopped: a client that stops reading
/// altogether, so the server's writes back up (unlike a client library,
/// which keeps reading into its own buffers).
pub(crate) struct Pausable {
    pub(crate) inner: TcpStream,
    pub(crate) paused: Arc<AtomicBool>,
}

impl AsyncRead for Pausable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.paused.load(Ordering::SeqCst) {
            // Never woken: this reader is gone for good.
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Pausable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request of `method` of the RefereeService at `addr`, headers only.
pub(crate) fn grpc_request(addr: impl std::fmt::Display, method: &str) -> http::Request<()> {
    http::Request::post(format!("http://{addr}/referee.v1.RefereeService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap()
}

/// A gRPC message frame: uncompressed, length-prefixed.
pub(crate) fn grpc_frame(message: &impl prost::Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut frame = Vec::with_capacity(body.len() + 5);
    frame.push(0);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    Bytes::from(frame)
}
