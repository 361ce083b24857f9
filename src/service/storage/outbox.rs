//! The webhook outbox as stored: endpoints, and one delivery row per event
//! and subscribed endpoint (docs/WEBHOOKS.md).
//!
//! An event reaches the outbox inside the write of the change it reports
//! ([`super::Write::Outboxed`]): the backend inserts, in the same
//! transaction, one delivery for each endpoint subscribed to its kind, so a
//! change is never stored without its events, nor an event without its
//! change. Deliveries are then leased by one delivering worker at a time
//! ([`WebhookStore::lease`]), in order per endpoint and subject (game or
//! tournament), and settled ([`WebhookStore::settle`]).

use super::{ServerSecret, StorageError};

/// An event to put in the outbox with the change it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEvent {
    /// Its id (`msg_` + 32 hex digits): the `webhook-id` of every attempt.
    pub id: String,
    /// `game.created`, `game.ended`, …
    pub kind: &'static str,
    /// The game or tournament it is about: deliveries of one subject to one
    /// endpoint go in the order their events were stored.
    pub subject: String,
    /// The JSON body, exactly as sent.
    pub body: String,
    /// When it happened, Unix milliseconds.
    pub at_ms: i64,
    /// Most deliveries pending per endpoint: past it, the new one is stored
    /// failed (replayable) rather than queued.
    pub queue_limit: u64,
}

/// A registered endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct EndpointRow {
    /// `whe_` + 32 hex digits.
    pub id: String,
    /// Where deliveries are POSTed.
    pub url: String,
    /// The event kinds it receives.
    pub kinds: Vec<String>,
    /// The signing secret (plain here; sealed at rest).
    pub secret: Vec<u8>,
    /// Free text.
    pub description: String,
    /// Unix milliseconds.
    pub created_at_ms: i64,
}

impl std::fmt::Debug for EndpointRow {
    /// Everything but the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointRow")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

impl EndpointRow {
    /// The kinds as stored: `,a,b,` (a kind `k` matches `,k,`).
    pub fn kinds_column(&self) -> String {
        format!(",{},", self.kinds.join(","))
    }

    /// The kinds of a stored `kinds` column.
    pub fn kinds_of(column: &str) -> Vec<String> {
        column
            .split(',')
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// One event for one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    /// Its place in the outbox (the order events were stored in).
    pub seq: i64,
    /// The event id.
    pub event_id: String,
    /// The endpoint.
    pub endpoint_id: String,
    /// The event kind.
    pub kind: String,
    /// The game or tournament.
    pub subject: String,
    /// The JSON body.
    pub body: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last failed attempt's error.
    pub last_error: String,
    /// When the event happened, Unix milliseconds.
    pub created_at_ms: i64,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// Delivered (a 2xx answer).
    Delivered,
    /// Failed; try again at this time (Unix milliseconds).
    Retry {
        /// When.
        at_ms: i64,
        /// Why it failed.
        error: String,
    },
    /// Failed for the last time.
    Failed {
        /// Why.
        error: String,
    },
}

impl Settle {
    /// The status it leaves the delivery in.
    pub fn status(&self) -> &'static str {
        match self {
            Settle::Delivered => "delivered",
            Settle::Retry { .. } => "pending",
            Settle::Failed { .. } => "failed",
        }
    }

    /// The error it records (empty when delivered).
    pub fn error(&self) -> &str {
        match self {
            Settle::Delivered => "",
            Settle::Retry { error, .. } | Settle::Failed { error } => error,
        }
    }
}

/// What is waiting in the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Deliveries pending.
    pub pending: u64,
    /// When the oldest pending event happened (Unix milliseconds).
    pub oldest_ms: Option<i64>,
}

/// The outbox of a durable backend. Every call is blocking: make it off
/// the async workers.
pub trait WebhookStore: Send + Sync {
    /// Stores a new endpoint (its secret sealed).
    fn create_endpoint(&self, endpoint: &EndpointRow) -> Result<(), StorageError>;

    /// Every endpoint, oldest first, secrets unsealed.
    fn endpoints(&self) -> Result<Vec<EndpointRow>, StorageError>;

    /// Deletes endpoint `id` and its deliveries; whether it existed.
    fn delete_endpoint(&self, id: &str) -> Result<bool, StorageError>;

    /// Leases, for `owner` until `until_ms`, at most `limit` pending
    /// deliveries due at `now_ms` whose lease (if any) has expired, each
    /// the oldest pending one of its endpoint and subject.
    fn lease(
        &self,
        owner: &str,
        now_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<DeliveryRow>, StorageError>;

    /// Records how an attempt at delivery `seq` ended, if `owner` still
    /// holds its lease; whether it did.
    fn settle(&self, seq: i64, owner: &str, outcome: &Settle) -> Result<bool, StorageError>;

    /// [`WebhookStore::settle`] for each of `outcomes` (delivery seq, how
    /// its attempt ended); how many were still `owner`'s. A backend may
    /// record them all in one transaction.
    fn settle_all(&self, owner: &str, outcomes: &[(i64, Settle)]) -> Result<u64, StorageError> {
        let mut settled = 0;
        for (seq, outcome) in outcomes {
            settled += u64::from(self.settle(*seq, owner, outcome)?);
        }
        Ok(settled)
    }

    /// Endpoint `endpoint_id`'s deliveries, newest first, of `status` if
    /// given, at most `limit`.
    fn deliveries(
        &self,
        endpoint_id: &str,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DeliveryRow>, StorageError>;

    /// Puts failed deliveries of endpoint `endpoint_id` back in the queue,
    /// due at `now_ms`: the one of event `event_id`, or (`None`) all of
    /// events since `since_ms`. How many.
    fn replay(
        &self,
        endpoint_id: &str,
        event_id: Option<&str>,
        since_ms: i64,
        now_ms: i64,
    ) -> Result<u64, StorageError>;

    /// Drops every lease: for the one process of a store no other process
    /// shares, at its start (the leases of a killed predecessor).
    fn release_leases(&self) -> Result<u64, StorageError>;

    /// The pending deliveries.
    fn backlog(&self) -> Result<Backlog, StorageError>;

    /// Deletes at most `limit` delivered deliveries of events that
    /// happened before `before_ms` (the retention, docs/WEBHOOKS.md);
    /// pending and failed ones stay. How many.
    fn prune_delivered(&self, before_ms: i64, limit: usize) -> Result<u64, StorageError>;
}

/// Seals an endpoint secret (1 to 64 bytes) for storage: its length, then
/// the secret padded to 64 bytes and XORed with two keystreams of the
/// server secret bound to the endpoint id, as hex.
pub fn seal_endpoint_secret(server: &ServerSecret, endpoint_id: &str, plain: &[u8]) -> String {
    let mut padded = [0u8; 64];
    let n = plain.len().min(64);
    padded[..n].copy_from_slice(&plain[..n]);
    let mut out = vec![n as u8];
    for (i, half) in padded.chunks(32).enumerate() {
        let mut block = [0u8; 32];
        block.copy_from_slice(half);
        out.extend_from_slice(&server.seal_seed(&format!("webhook:{endpoint_id}:{i}"), &block));
    }
    out.iter().map(|b| format!("{b:02x}")).collect()
}

/// The secret [`seal_endpoint_secret`] sealed.
pub fn unseal_endpoint_secret(
    server: &ServerSecret,
    endpoint_id: &str,
    sealed: &str,
) -> Result<Vec<u8>, StorageError> {
    let corrupt =
        || StorageError::Corrupt(format!("the secret of endpoint `{endpoint_id}` is damaged"));
    if sealed.len() != 130 || !sealed.is_ascii() {
        return Err(corrupt());
    }
    let bytes: Vec<u8> = (0..65)
        .map(|i| u8::from_str_radix(&sealed[2 * i..2 * i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| corrupt())?;
    let n = usize::from(bytes[0]);
    if n == 0 || n > 64 {
        return Err(corrupt());
    }
    let mut plain = Vec::with_capacity(64);
    for (i, half) in bytes[1..].chunks(32).enumerate() {
        let mut block = [0u8; 32];
        block.copy_from_slice(half);
        plain.extend_from_slice(&server.seal_seed(&format!("webhook:{endpoint_id}:{i}"), &block));
    }
    plain.truncate(n);
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_unseals_only_with_its_server_secret_and_endpoint() {
        let server = ServerSecret::from_bytes(&[7; 32]);
        let plain: Vec<u8> = (1..=40).collect();
        let sealed = seal_endpoint_secret(&server, "whe_a", &plain);
        assert!(!sealed.contains("0102030405"), "not in the clear");
        assert_eq!(
            unseal_endpoint_secret(&server, "whe_a", &sealed).unwrap(),
            plain
        );
        assert_ne!(
            unseal_endpoint_secret(&server, "whe_b", &sealed).unwrap(),
            plain
        );
        let other = ServerSecret::from_bytes(&[8; 32]);
        assert_ne!(
            unseal_endpoint_secret(&other, "whe_a", &sealed).unwrap(),
            plain
        );
        assert!(unseal_endpoint_secret(&server, "whe_a", "00").is_err());
    }
}
