//! The tower layer that counts each request as a call of its connection,
//! for the connection's idle timeout.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::conn::conn_of;
use super::watchdog::CallGuard;

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
