//! The delivery worker: leases due deliveries from the outbox, POSTs each,
//! signed (Standard Webhooks), and settles it: delivered, retried later
//! with exponential backoff and jitter, or failed after the last attempt.
//! Also the checks every URL goes through (scheme, allowed hosts, the
//! resolved address's range) and the metrics.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tokio_util::sync::CancellationToken;

use super::client::Sender;
use super::{Hub, WebhookOptions};
use crate::service::storage::outbox::{DeliveryRow, EndpointRow, Settle};
use crate::service::storage::{Storage, unix_ms};

/// Free attempt slots (of 32) the worker waits for before it leases
/// again, when the last lease filled every free slot.
const LEASE_BATCH: u32 = 16;
/// How long the settling of an outcome waits for others to share its
/// commit.
const SETTLE_GATHER: Duration = Duration::from_millis(20);

/// Deliveries made (2xx answers).
pub const DELIVERIES: &str = "referee_webhook_deliveries_total";
/// Attempts that failed (label `final`: whether it was the last).
pub const FAILURES: &str = "referee_webhook_failures_total";
/// Age of the oldest pending delivery, seconds.
pub const LAG: &str = "referee_webhook_lag_seconds";
/// Deliveries pending.
pub const PENDING: &str = "referee_webhook_pending";

/// The Standard Webhooks signature of `body`: `v1,` + base64 of
/// HMAC-SHA256(secret, `id.timestamp.body`).
pub fn signature(secret: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let mut ctx = ring::hmac::Context::with_key(&key);
    ctx.update(id.as_bytes());
    ctx.update(b".");
    ctx.update(timestamp.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body.as_bytes());
    format!("v1,{}", STANDARD.encode(ctx.sign().as_ref()))
}

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a URL this client sends to.
    Malformed(String),
    /// A host or address the flags do not allow.
    Host(String),
}

/// A URL checked for its form: scheme, host, port, path.
#[derive(Debug, Clone)]
pub struct Target {
    /// Whether it is https.
    pub tls: bool,
    /// The host as named.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Path and query.
    pub path: String,
}

/// Checks `url`'s form and its host against the allowed hosts.
pub fn target(url: &str, options: &WebhookOptions) -> Result<Target, Refused> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| Refused::Malformed("not a URL".into()))?;
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => {
            return Err(Refused::Malformed(
                "the scheme must be http or https".into(),
            ));
        }
    };
    let authority = uri
        .authority()
        .ok_or_else(|| Refused::Malformed("no host".into()))?;
    if authority.as_str().contains('@') {
        return Err(Refused::Malformed("user information is not allowed".into()));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(Refused::Malformed("no host".into()));
    }
    let host = host.to_ascii_lowercase();
    if !options.allowed_hosts.is_empty()
        && !options
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&host))
    {
        return Err(Refused::Host(format!(
            "host `{host}` is not an allowed host"
        )));
    }
    if let Ok(ip) = host.parse::<IpAddr>()
        && !options.allow_private
        && !public(ip)
    {
        return Err(Refused::Host(format!(
            "address {ip} is loopback, private or link-local"
        )));
    }
    Ok(Target {
        tls,
        port: authority.port_u16().unwrap_or(if tls { 443 } else { 80 }),
        host,
        path: uri
            .path_and_query()
            .map_or("/".into(), |p| p.as_str().to_owned()),
    })
}

/// Whether `ip` is a public address (not loopback, private, link-local,
/// unspecified, multicast, shared or documentation space).
pub fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1])))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// The delay before attempt `attempts + 1`: the backoff doubled per
/// attempt made, capped, times a random factor in [0.5, 1).
pub fn backoff(options: &WebhookOptions, attempts: u32) -> Duration {
    let base = options
        .backoff
        .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
        .min(options.max_backoff);
    base.mul_f64(0.5 + rand::random::<f64>() / 2.0)
}

/// Delivers until `stop`: leases due deliveries as `owner`, attempts each
/// (at most 32 at once), settles it. Returns once it let the store go: the
/// outcomes of the attempts under way at `stop` are recorded if they come
/// within 2 s (the others are sent again, by lease expiry).
pub async fn run(
    storage: Arc<dyn Storage>,
    hub: Arc<Hub>,
    options: WebhookOptions,
    owner: String,
    stop: CancellationToken,
) {
    let (outcomes, settling) = tokio::sync::mpsc::unbounded_channel();
    let mut settler = tokio::spawn(settle_loop(storage.clone(), owner.clone(), settling));
    deliver_loop(storage, hub, options, owner, stop, outcomes).await;
    if tokio::time::timeout(Duration::from_secs(2), &mut settler)
        .await
        .is_err()
    {
        settler.abort();
        let _ = settler.await;
    }
}

/// [`run`]'s leasing and attempts; outcomes go to `outcomes`.
async fn deliver_loop(
    storage: Arc<dyn Storage>,
    hub: Arc<Hub>,
    options: WebhookOptions,
    owner: String,
    stop: CancellationToken,
    outcomes: tokio::sync::mpsc::UnboundedSender<(i64, Settle)>,
) {
    let options = Arc::new(options);
    let sender = Sender::new(options.clone());
    let lease = options.timeout * 2 + options.connect_timeout + Duration::from_secs(5);
    let slots = Arc::new(tokio::sync::Semaphore::new(32));
    let mut endpoints: Arc<Vec<EndpointRow>> = Arc::new(Vec::new());
    let mut tick = 0u64;
    // Whether the last lease took as many as there were free slots: more
    // may be due, so lease again as soon as a slot is free.
    let mut busy = false;
    loop {
        let pause = if busy { Duration::ZERO } else { options.poll };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        if busy {
            // Lease again once a batch's worth of slots is free, not at
            // each one: a lease is a transaction (a commit on SQLite).
            tokio::select! {
                () = stop.cancelled() => return,
                free = slots.acquire_many(LEASE_BATCH) => drop(free),
            }
        }
        busy = false;
        let period = (Duration::from_secs(2).as_millis() / options.poll.as_millis().max(1)).max(1);
        if tick.is_multiple_of(period as u64)
            && let Some(found) = refresh(&storage, &hub).await
        {
            endpoints = Arc::new(found);
        }
        tick += 1;
        if endpoints.is_empty() {
            continue;
        }
        let free = slots.available_permits();
        if free == 0 {
            continue;
        }
        let now = unix_ms(std::time::SystemTime::now());
        let until = now + lease.as_millis() as i64;
        let s = storage.clone();
        let who = owner.clone();
        let leased = tokio::task::spawn_blocking(move || {
            s.webhooks().map(|w| w.lease(&who, now, until, free))
        })
        .await;
        let leased = match leased {
            Ok(Some(Ok(leased))) => leased,
            Ok(Some(Err(e))) => {
                tracing::warn!(error = %e, "webhook outbox not read");
                continue;
            }
            _ => continue,
        };
        busy = leased.len() == free;
        // An endpoint registered since the last read (here or on another
        // replica): read them again rather than fail its deliveries.
        if leased
            .iter()
            .any(|d| !endpoints.iter().any(|e| e.id == d.endpoint_id))
            && let Some(found) = refresh(&storage, &hub).await
        {
            endpoints = Arc::new(found);
        }
        for delivery in leased {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            let endpoint = endpoints
                .iter()
                .find(|e| e.id == delivery.endpoint_id)
                .cloned();
            spawn_attempt(&sender, &hub, &outcomes, endpoint, delivery, permit);
        }
    }
}

/// Attempts `delivery` in a task of its own, holding `permit` (a slot)
/// until its outcome is sent to `outcomes`.
fn spawn_attempt(
    sender: &Sender,
    hub: &Arc<Hub>,
    outcomes: &tokio::sync::mpsc::UnboundedSender<(i64, Settle)>,
    endpoint: Option<EndpointRow>,
    delivery: DeliveryRow,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let (sender, outcomes, hub) = (sender.clone(), outcomes.clone(), hub.clone());
    tokio::spawn(async move {
        let delivery = with_receipt(&hub, delivery).await;
        let outcome = attempt(&sender, endpoint.as_ref(), &delivery).await;
        let _ = outcomes.send((delivery.seq, outcome));
        drop(permit);
    });
}

/// `delivery` with, for a `game.ended` event, the game's signed receipt in
/// `data.receipt` (docs/WEBHOOKS.md, "Bodies"). The outbox stores the body
/// without it (the end is stored before the game is concluded in memory);
/// it is signed when the delivery is sent, and as Ed25519 signatures are
/// deterministic every attempt carries the same bytes (unless the referee
/// key was rotated in between). The game is given a moment to be
/// concluded in memory; a game no longer known goes without a receipt.
async fn with_receipt(hub: &Hub, mut delivery: DeliveryRow) -> DeliveryRow {
    if delivery.kind != super::events::GAME_ENDED {
        return delivery;
    }
    let Some(source) = hub.receipts.0.get() else {
        return delivery;
    };
    let Ok(mut body) = serde_json::from_str::<serde_json::Value>(&delivery.body) else {
        return delivery;
    };
    let mut receipt = None;
    for _ in 0..20 {
        receipt = source(delivery.subject.clone()).await;
        if receipt.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    if let (Some(receipt), Some(data)) = (
        receipt,
        body.get_mut("data").and_then(|d| d.as_object_mut()),
    ) {
        data.insert("receipt".to_owned(), receipt);
        delivery.body = body.to_string();
    }
    delivery
}

/// Reads the endpoints (and tells `hub` what they subscribe to) and sets
/// the backlog's gauges; `None` when they could not be read.
async fn refresh(storage: &Arc<dyn Storage>, hub: &Hub) -> Option<Vec<EndpointRow>> {
    let s = storage.clone();
    let (found, backlog) = tokio::task::spawn_blocking(move || {
        let store = s.webhooks()?;
        Some((store.endpoints(), store.backlog()))
    })
    .await
    .ok()??;
    if let Ok(b) = backlog {
        metrics::gauge!(PENDING).set(b.pending as f64);
        let now = unix_ms(std::time::SystemTime::now());
        let lag = b
            .oldest_ms
            .map_or(0.0, |t| (now - t).max(0) as f64 / 1000.0);
        metrics::gauge!(LAG).set(lag);
    }
    match found {
        Ok(found) => {
            hub.set_subscriptions(
                found
                    .iter()
                    .flat_map(|e| e.kinds.iter().map(String::as_str)),
            );
            Some(found)
        }
        Err(e) => {
            tracing::warn!(error = %e, "webhook endpoints not read");
            None
        }
    }
}

/// Records the outcomes of attempts as they come, those that came within
/// [`SETTLE_GATHER`] of each other in one call ([`WebhookStore::settle_all`]:
/// one commit on SQLite), until the worker stops.
///
/// [`WebhookStore::settle_all`]: crate::service::storage::outbox::WebhookStore::settle_all
async fn settle_loop(
    storage: Arc<dyn Storage>,
    owner: String,
    mut settling: tokio::sync::mpsc::UnboundedReceiver<(i64, Settle)>,
) {
    while let Some(first) = settling.recv().await {
        let mut batch = vec![first];
        // The outcomes that come within a moment of the first go in the
        // same commit (a delivered row is recorded up to that much later;
        // a crash in between sends it again, as at any time before).
        let gather = tokio::time::sleep(SETTLE_GATHER);
        tokio::pin!(gather);
        while batch.len() < 256 {
            tokio::select! {
                next = settling.recv() => match next {
                    Some(next) => batch.push(next),
                    None => break,
                },
                () = &mut gather => break,
            }
        }
        let (s, who) = (storage.clone(), owner.clone());
        let settled =
            tokio::task::spawn_blocking(move || s.webhooks().map(|w| w.settle_all(&who, &batch)))
                .await;
        if let Ok(Some(Err(e))) = settled {
            tracing::warn!(error = %e, "webhook deliveries not settled (they will be sent again)");
        }
    }
}

/// One attempt at `delivery`, and how it ends.
async fn attempt(
    sender: &Sender,
    endpoint: Option<&EndpointRow>,
    delivery: &DeliveryRow,
) -> Settle {
    let options = sender.options();
    let result = match endpoint {
        Some(endpoint) => tokio::time::timeout(options.timeout, sender.post(endpoint, delivery))
            .await
            .unwrap_or_else(|_| Err("timed out".into())),
        None => Err("the endpoint is not known yet".into()),
    };
    let attempts = delivery.attempts + 1;
    match result {
        Ok(()) => {
            metrics::counter!(DELIVERIES).increment(1);
            Settle::Delivered
        }
        Err(error) if attempts >= options.max_attempts => {
            metrics::counter!(FAILURES, "final" => "true").increment(1);
            tracing::warn!(endpoint = %delivery.endpoint_id, event = %delivery.event_id, %error, "webhook delivery failed for good");
            Settle::Failed { error }
        }
        Err(error) => {
            metrics::counter!(FAILURES, "final" => "false").increment(1);
            let at_ms = unix_ms(std::time::SystemTime::now())
                + backoff(options, attempts).as_millis() as i64;
            Settle::Retry { at_ms, error }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_standard_webhooks_one() {
        // The Standard Webhooks specification's example.
        let secret = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn urls_are_checked_for_form_host_and_range() {
        let open = WebhookOptions::default();
        assert!(matches!(
            target("ftp://a.example/x", &open),
            Err(Refused::Malformed(_))
        ));
        assert!(matches!(
            target("http://u:p@a.example/", &open),
            Err(Refused::Malformed(_))
        ));
        assert!(matches!(
            target("http://127.0.0.1:8/", &open),
            Err(Refused::Host(_))
        ));
        assert!(matches!(
            target("http://[::1]/", &open),
            Err(Refused::Host(_))
        ));
        assert!(matches!(
            target("http://169.254.169.254/", &open),
            Err(Refused::Host(_))
        ));
        assert!(matches!(
            target("http://10.1.2.3/", &open),
            Err(Refused::Host(_))
        ));
        let t = target("https://hooks.example.com/in?x=1", &open).unwrap();
        assert_eq!((t.tls, t.port, t.path.as_str()), (true, 443, "/in?x=1"));
        let listed = WebhookOptions {
            allowed_hosts: vec!["hooks.example.com".into()],
            ..WebhookOptions::default()
        };
        assert!(target("https://hooks.example.com/", &listed).is_ok());
        assert!(matches!(
            target("https://other.example.com/", &listed),
            Err(Refused::Host(_))
        ));
        let private = WebhookOptions {
            allow_private: true,
            ..WebhookOptions::default()
        };
        assert!(target("http://127.0.0.1:8/", &private).is_ok());
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let o = WebhookOptions {
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            ..WebhookOptions::default()
        };
        for (attempts, full) in [(1, 1), (2, 2), (3, 4), (4, 8), (9, 10)] {
            let d = backoff(&o, attempts);
            let full = Duration::from_secs(full);
            assert!(d >= full / 2 && d < full, "{attempts}: {d:?}");
        }
    }
}
