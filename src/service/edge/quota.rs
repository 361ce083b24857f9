//! Limits per client, next to the server-wide ones of
//! [`crate::service::edge::overload`]: calls per second (a GCRA rate limiter from
//! `governor`, keyed by client), games in progress, and watch streams open.
//! A client is its platform key, or without one its IP address
//! ([`ClientId`]); connections per address are bounded where they are
//! accepted ([`crate::service::edge::listen::ConnectionLimit`]).
//!
//! A call over the rate is refused at once with `RESOURCE_EXHAUSTED`,
//! `QuotaFailure{calls_per_second}`, `ErrorInfo{LIMIT_REACHED}` and a
//! `RetryInfo` saying when the next call will pass; over the games or
//! watchers bound, the same without `RetryInfo` (those pass only when the
//! client's games end or its streams close). Health checks are never
//! limited. Each limit is off at `0`, the default (docs/SECURITY.md).

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use dashmap::DashMap;
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tonic::Status;

use super::access::{Caller, ClientId};
use super::overload::LimitedCall;
use super::refusal::client_limit;

/// Counter: calls or resources refused by a per-client limit, by `limit`
/// (`calls_per_second`, `games_per_client`, `watch_streams_per_client`) and
/// `client` (the key's name, or `anonymous`).
pub const CLIENT_LIMITED: &str = "referee_client_limited_total";

/// Path prefix of the calls never limited (health checks).
const EXEMPT_PREFIX: &str = "/grpc.health.v1.Health/";

/// The limits, each `0` for none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaOptions {
    /// Calls per second per client, on average.
    pub calls_per_second: u32,
    /// Calls a client may make at once above its rate (at least 1; `0`:
    /// one second's worth).
    pub burst: u32,
    /// Games in progress per client (created or imported by it).
    pub games: usize,
    /// Watch streams open per client.
    pub watch_streams: usize,
    /// Connections open per client address.
    pub connections: usize,
}

/// A game as the games count sees it. The count holds it weakly: a game
/// counts until it ends or leaves memory. The front door knows no sessions;
/// the room that creates games implements this for them.
pub trait CountedGame: Send + Sync {
    /// Whether the game is still in progress.
    fn in_progress(&self) -> bool;
}

/// The games one client started and has not seen end.
#[derive(Debug, Default)]
struct GameSlots {
    live: Vec<Weak<dyn CountedGame>>,
    /// Creations admitted and not yet done.
    pending: usize,
}

impl GameSlots {
    fn in_progress(&mut self) -> usize {
        self.live
            .retain(|g| g.upgrade().is_some_and(|game| game.in_progress()));
        self.live.len() + self.pending
    }
}

/// The per-client counts (shared by the layer and the handlers).
#[derive(Debug)]
pub struct ClientQuotas {
    options: QuotaOptions,
    rate: Option<DefaultKeyedRateLimiter<ClientId>>,
    games: DashMap<ClientId, Arc<Mutex<GameSlots>>>,
    watch_streams: Arc<DashMap<ClientId, usize>>,
}

impl ClientQuotas {
    /// Counts with `options`.
    pub fn new(options: QuotaOptions) -> ClientQuotas {
        let rate = NonZeroU32::new(options.calls_per_second).map(|per_second| {
            let burst = NonZeroU32::new(options.burst).unwrap_or(per_second);
            RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst))
        });
        ClientQuotas {
            options,
            rate,
            games: DashMap::new(),
            watch_streams: Arc::new(DashMap::new()),
        }
    }

    /// The limits.
    pub fn options(&self) -> QuotaOptions {
        self.options
    }

    /// Lets one call of `client` through, or says how long to wait.
    fn check_rate(&self, client: &ClientId) -> Result<(), Duration> {
        let Some(rate) = &self.rate else {
            return Ok(());
        };
        rate.check_key(client)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// A place for one more game of `client`, filled once it exists
    /// ([`GameReservation::fill`]); refused when it has its most in progress.
    pub fn reserve_game(&self, client: &ClientId) -> Result<GameReservation, Status> {
        let max = self.options.games;
        let slots = self.games.entry(client.clone()).or_default().clone();
        if max > 0 {
            let mut held = slots.lock().unwrap_or_else(|e| e.into_inner());
            if held.in_progress() >= max {
                drop(held);
                refused("games_per_client", client);
                return Err(client_limit("games_per_client", max, None));
            }
            held.pending += 1;
        }
        Ok(GameReservation {
            slots: (max > 0).then_some(slots),
        })
    }

    /// A place for one more watch stream of `client`, held by the stream.
    pub fn watch_slot(&self, client: &ClientId) -> Result<WatchSlot, Status> {
        let max = self.options.watch_streams;
        if max == 0 {
            return Ok(WatchSlot { held: None });
        }
        let mut open = self.watch_streams.entry(client.clone()).or_insert(0);
        if *open >= max {
            drop(open);
            refused("watch_streams_per_client", client);
            return Err(client_limit("watch_streams_per_client", max, None));
        }
        *open += 1;
        Ok(WatchSlot {
            held: Some((self.watch_streams.clone(), client.clone())),
        })
    }

    /// Forgets clients with nothing left to count (run by the sweeper), so
    /// the maps do not grow with every address ever seen.
    pub fn sweep(&self) {
        if let Some(rate) = &self.rate {
            rate.retain_recent();
            rate.shrink_to_fit();
        }
        self.games.retain(|_, slots| {
            let mut held = slots.lock().unwrap_or_else(|e| e.into_inner());
            held.in_progress() > 0
        });
    }
}

fn refused(limit: &'static str, client: &ClientId) {
    tracing::debug!(limit, %client, "per-client limit reached");
    metrics::counter!(CLIENT_LIMITED, "limit" => limit, "client" => client.label()).increment(1);
}

/// A game's place in its client's count, reserved before it is created.
#[derive(Debug)]
pub struct GameReservation {
    slots: Option<Arc<Mutex<GameSlots>>>,
}

impl GameReservation {
    /// The game exists: it counts until it ends or leaves memory.
    pub fn fill<G: CountedGame + 'static>(mut self, game: &Arc<G>) {
        if let Some(slots) = self.slots.take() {
            let game: Weak<dyn CountedGame> = Arc::<G>::downgrade(game);
            let mut held = slots.lock().unwrap_or_else(|e| e.into_inner());
            held.pending = held.pending.saturating_sub(1);
            held.live.push(game);
        }
    }
}

impl Drop for GameReservation {
    /// The creation failed: the place is free again.
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            let mut held = slots.lock().unwrap_or_else(|e| e.into_inner());
            held.pending = held.pending.saturating_sub(1);
        }
    }
}

/// A watch stream's place in its client's count; given back on drop.
#[derive(Debug)]
pub struct WatchSlot {
    held: Option<(Arc<DashMap<ClientId, usize>>, ClientId)>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        if let Some((open, client)) = self.held.take() {
            open.remove_if_mut(&client, |_, n| {
                *n = n.saturating_sub(1);
                *n == 0
            });
        }
    }
}

/// The tower layer that applies the per-client call rate; it runs after
/// [`crate::service::edge::access::AccessLayer`], whose [`Caller`] says who the
/// client is.
#[derive(Debug, Clone)]
pub struct ClientRateLayer {
    quotas: Arc<ClientQuotas>,
}

impl ClientRateLayer {
    /// Applies the rate of `quotas`.
    pub fn new(quotas: Arc<ClientQuotas>) -> ClientRateLayer {
        ClientRateLayer { quotas }
    }
}

impl<S> tower::Layer<S> for ClientRateLayer {
    type Service = ClientRate<S>;
    fn layer(&self, inner: S) -> Self::Service {
        ClientRate {
            inner,
            quotas: self.quotas.clone(),
        }
    }
}

/// The service [`ClientRateLayer`] wraps around the gRPC routes.
#[derive(Debug, Clone)]
pub struct ClientRate<S> {
    inner: S,
    quotas: Arc<ClientQuotas>,
}

impl<S, B, R> tower::Service<http::Request<B>> for ClientRate<S>
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
        if self.quotas.rate.is_some() && !request.uri().path().starts_with(EXEMPT_PREFIX) {
            let client = request
                .extensions()
                .get::<Caller>()
                .map_or(ClientId::Unknown, Caller::client);
            if let Err(wait) = self.quotas.check_rate(&client) {
                refused("calls_per_second", &client);
                let status = client_limit(
                    "calls_per_second",
                    self.quotas.options.calls_per_second as usize,
                    Some(wait),
                );
                return LimitedCall::refused(status.into_http());
            }
        }
        LimitedCall::admitted(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tonic_types::StatusExt as _;

    use super::*;

    #[test]
    fn the_rate_is_counted_per_client_and_says_when_to_come_back() {
        let quotas = ClientQuotas::new(QuotaOptions {
            calls_per_second: 10,
            burst: 2,
            ..QuotaOptions::default()
        });
        let greedy = ClientId::Key("greedy".into());
        let polite = ClientId::Key("polite".into());
        assert!(quotas.check_rate(&greedy).is_ok());
        assert!(quotas.check_rate(&greedy).is_ok());
        let wait = quotas.check_rate(&greedy).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        assert!(
            quotas.check_rate(&polite).is_ok(),
            "another client is not held up"
        );
        std::thread::sleep(wait);
        assert!(
            quotas.check_rate(&greedy).is_ok(),
            "after the wait, a call passes"
        );
    }

    #[test]
    fn watch_slots_are_bounded_and_given_back() {
        let quotas = ClientQuotas::new(QuotaOptions {
            watch_streams: 1,
            ..QuotaOptions::default()
        });
        let a = ClientId::Peer("10.0.0.1".parse().unwrap());
        let held = quotas.watch_slot(&a).unwrap();
        let refused = quotas.watch_slot(&a).unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        assert_eq!(
            refused.get_details_quota_failure().unwrap().violations[0].subject,
            "watch_streams_per_client"
        );
        assert!(refused.get_details_retry_info().is_none());
        drop(held);
        assert!(quotas.watch_slot(&a).is_ok());
        assert!(quotas.watch_streams.is_empty(), "no entry left behind");
    }

    /// A game that ends when told to.
    struct Table(std::sync::atomic::AtomicBool);

    impl CountedGame for Table {
        fn in_progress(&self) -> bool {
            !self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[test]
    fn a_game_counts_until_it_ends_or_leaves_memory() {
        let quotas = ClientQuotas::new(QuotaOptions {
            games: 1,
            ..QuotaOptions::default()
        });
        let a = ClientId::Key("a".into());
        let first = Arc::new(Table(false.into()));
        quotas.reserve_game(&a).unwrap().fill(&first);
        assert!(quotas.reserve_game(&a).is_err(), "the game is in progress");
        first.0.store(true, std::sync::atomic::Ordering::SeqCst);
        let second = Arc::new(Table(false.into()));
        quotas.reserve_game(&a).unwrap().fill(&second);
        assert!(
            quotas.reserve_game(&a).is_err(),
            "the second is in progress"
        );
        drop(second);
        assert!(
            quotas.reserve_game(&a).is_ok(),
            "a dropped game no longer counts"
        );
    }

    #[test]
    fn a_failed_creation_gives_its_game_slot_back() {
        let quotas = ClientQuotas::new(QuotaOptions {
            games: 1,
            ..QuotaOptions::default()
        });
        let a = ClientId::Unknown;
        let first = quotas.reserve_game(&a).unwrap();
        assert_eq!(
            quotas.reserve_game(&a).unwrap_err().code(),
            Code::ResourceExhausted
        );
        drop(first);
        assert!(quotas.reserve_game(&a).is_ok());
    }
}
