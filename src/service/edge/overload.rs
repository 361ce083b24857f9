//! Load shedding: a server-wide limit on RPCs in flight. A call over the
//! limit is answered at once with `RESOURCE_EXHAUSTED` (QuotaFailure
//! `concurrent_calls`, ErrorInfo `LIMIT_REACHED`, RetryInfo), never queued:
//! a queue in front of a saturated server only turns overload into latency
//! and memory, while a quick refusal lets the client back off or go
//! elsewhere.
//!
//! What counts: a call holds its permit from the moment its request headers
//! reach the service until its response (headers, and for a unary call its
//! message) is ready — the handler's work. A server stream (`WatchGame`)
//! counts only while it opens; an open stream is idle most of its life and
//! is bounded by its own limits instead (watchers per game, and watch
//! streams in all, set by the gRPC room's
//! `RefereeApi::with_max_watch_streams`).
//! The health service (`grpc.health.v1`) is never refused: a probe must tell
//! "busy" from "dead", and a health check costs next to nothing.
//!
//! Docs: docs/API.md ("Limits and overload").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Path prefix of the calls never refused (health checks).
const EXEMPT_PREFIX: &str = "/grpc.health.v1.Health/";

/// A tower layer that refuses calls beyond `max` in flight (see the module
/// docs). One layer, cloned into every connection, shares one count.
#[derive(Debug, Clone)]
pub struct InFlightLimitLayer {
    permits: Arc<Semaphore>,
    max: usize,
}

impl InFlightLimitLayer {
    /// At most `max` calls in flight at once (at least 1).
    pub fn new(max: usize) -> InFlightLimitLayer {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        InFlightLimitLayer {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl<S> tower::Layer<S> for InFlightLimitLayer {
    type Service = InFlightLimit<S>;
    fn layer(&self, inner: S) -> Self::Service {
        InFlightLimit {
            inner,
            permits: self.permits.clone(),
            max: self.max,
        }
    }
}

/// The service [`InFlightLimitLayer`] wraps around the gRPC routes.
#[derive(Debug, Clone)]
pub struct InFlightLimit<S> {
    inner: S,
    permits: Arc<Semaphore>,
    max: usize,
}

impl<S, B, R> tower::Service<http::Request<B>> for InFlightLimit<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    R: Default,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = LimitedCall<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let permit = if request.uri().path().starts_with(EXEMPT_PREFIX) {
            None
        } else {
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    tracing::debug!(path = request.uri().path(), max = self.max, "call shed");
                    return LimitedCall::Refused {
                        response: Some(
                            super::refusal::overloaded("concurrent_calls", self.max).into_http(),
                        ),
                    };
                }
            }
        };
        LimitedCall::Admitted {
            inner: self.inner.call(request),
            permit,
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of a call through [`InFlightLimit`]: the inner call holding
    /// its permit until its response is ready, or the refusal.
    #[project = LimitedCallProj]
    pub enum LimitedCall<F, R> {
        /// Admitted: runs the call, then gives the permit back.
        Admitted {
            #[pin]
            inner: F,
            permit: Option<OwnedSemaphorePermit>,
        },
        /// Refused: the `RESOURCE_EXHAUSTED` answer.
        Refused {
            response: Option<http::Response<R>>,
        },
    }
}

impl<F, R> LimitedCall<F, R> {
    /// A call let through, holding no permit (the other admission layers:
    /// [`crate::service::edge::access`], [`crate::service::edge::quota`]).
    pub fn admitted(inner: F) -> LimitedCall<F, R> {
        LimitedCall::Admitted {
            inner,
            permit: None,
        }
    }

    /// A call answered with `response` without running it.
    pub fn refused(response: http::Response<R>) -> LimitedCall<F, R> {
        LimitedCall::Refused {
            response: Some(response),
        }
    }
}

impl<F, R, E> Future for LimitedCall<F, R>
where
    F: Future<Output = Result<http::Response<R>, E>>,
    R: Default,
{
    type Output = Result<http::Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            LimitedCallProj::Admitted { inner, permit } => {
                let output = ready!(inner.poll(cx));
                drop(permit.take());
                Poll::Ready(output)
            }
            LimitedCallProj::Refused { response } => {
                Poll::Ready(Ok(response.take().unwrap_or_default()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tonic::Code;
    use tonic_types::StatusExt as _;
    use tower::{Layer as _, Service as _, ServiceExt as _};

    use super::*;

    fn request(path: &str) -> http::Request<()> {
        http::Request::builder().uri(path).body(()).unwrap()
    }

    #[tokio::test]
    async fn calls_over_the_limit_are_refused_at_once_and_admitted_again_after() {
        // A service whose calls finish only once the gate is opened.
        let (gate, open) = tokio::sync::watch::channel(false);
        let inner = tower::service_fn(move |_req: http::Request<()>| {
            let mut open = open.clone();
            async move {
                let _ = open.wait_for(|open| *open).await;
                Ok::<_, Infallible>(http::Response::new("done".to_string()))
            }
        });
        let mut limited = InFlightLimitLayer::new(1).layer(inner);
        let path = "/referee.v1.RefereeService/GetGame";
        // The permit is taken when the call is made, not when it is polled.
        let held = limited.ready().await.unwrap().call(request(path));
        let refused = limited
            .ready()
            .await
            .unwrap()
            .call(request(path))
            .await
            .unwrap();
        let status = tonic::Status::from_header_map(refused.headers()).unwrap();
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(
            status.get_details_quota_failure().unwrap().violations[0].subject,
            "concurrent_calls"
        );
        assert_eq!(
            status.get_details_error_info().unwrap().reason,
            "LIMIT_REACHED"
        );
        assert!(status.get_details_retry_info().is_some());

        // Health checks pass even now.
        let health = limited
            .ready()
            .await
            .unwrap()
            .call(request("/grpc.health.v1.Health/Check"));
        gate.send_replace(true);
        assert_eq!(health.await.unwrap().into_body(), "done");
        assert_eq!(held.await.unwrap().into_body(), "done");

        // The permit came back with the answer.
        let again = limited.ready().await.unwrap().call(request(path));
        assert_eq!(again.await.unwrap().into_body(), "done");
    }
}
