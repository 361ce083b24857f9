//! `load --webhooks KINDS` and `--compare-webhooks`: what a webhook
//! endpoint costs the spawned server's moves, measured in one command.
//!
//! The tool starts an HTTP receiver on a loopback port (it answers 204,
//! checks every delivery's Standard Webhooks signature and counts the
//! deliveries by kind, duplicates apart), lets the spawned server deliver to
//! loopback addresses (`PUNCT_REFEREE_WEBHOOK_ALLOW_PRIVATE`), and registers
//! the receiver through `WebhookService` with a secret of its own making (so
//! it knows what to check against). The spawned server runs without a keys
//! file, as for every load run: every caller may call `WebhookService`.
//!
//! With `--webhooks` alone the endpoint stays for the whole run and the
//! report says what arrived, once every delivery is made. With
//! `--compare-webhooks` each round is a pair of moves phases after one
//! baseline, one with no endpoint and one with the endpoint registered just
//! before it and deleted after its deliveries were all made (so no phase
//! pays for another's deliveries), in alternating order; the report gives
//! each pair's moves/s ratio (with / without) and server CPU per move, and
//! their medians.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use tonic::transport::Channel;

use super::LoadArgs;
use super::moves::{Encoded, Played, Pool, baseline_phase, moves_phase, run_report};
use super::report::RunReport;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::webhook_service_client::WebhookServiceClient;
use crate::service::webhooks::events;

/// The longest wait for an endpoint's deliveries to be made.
const DRAIN_LIMIT: Duration = Duration::from_secs(120);

/// The event kinds of `--webhooks` (`created`, `ended`, `move` or their
/// full names), checked; `--compare-webhooks` alone means created and
/// ended.
pub(super) fn kinds(args: &LoadArgs) -> Result<Vec<String>, String> {
    let mut kinds = Vec::new();
    let given: Vec<&str> = if args.webhooks.is_empty() && args.compare_webhooks {
        vec![events::GAME_CREATED, events::GAME_ENDED]
    } else {
        args.webhooks.iter().map(|k| k.trim()).collect()
    };
    for kind in given {
        let full = match kind {
            "created" | "ended" | "move" => format!("game.{kind}"),
            other => other.to_owned(),
        };
        if !events::KINDS.contains(&full.as_str()) {
            return Err(format!(
                "--webhooks: `{kind}` is not an event kind (created, ended, move, or one of {})",
                events::KINDS.join(", ")
            ));
        }
        if !kinds.contains(&full) {
            kinds.push(full);
        }
    }
    Ok(kinds)
}

/// What the receiver got.
#[derive(Debug, Default)]
struct Got {
    /// Deliveries by event kind (first arrivals only).
    by_kind: BTreeMap<String, u64>,
    /// Requests whose signature checked.
    verified: u64,
    /// Requests whose signature, timestamp or body did not check.
    bad: u64,
    /// Deliveries of an event id seen before.
    duplicates: u64,
    /// The event ids seen.
    ids: HashSet<String>,
}

/// What the receiver got, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookTally {
    /// The event kinds subscribed to.
    pub kinds: Vec<String>,
    /// Deliveries received (distinct event ids).
    pub received: u64,
    /// Of them, by event kind.
    pub by_kind: BTreeMap<String, u64>,
    /// Requests whose signature checked (duplicates included).
    pub verified: u64,
    /// Requests refused: a bad signature or timestamp, or no event id.
    pub bad_signatures: u64,
    /// Deliveries of an event received before (at least once delivery).
    pub duplicates: u64,
    /// Deliveries still pending when the tool stopped waiting.
    pub pending_at_end: u64,
}

/// The receiver and the endpoint registered for it.
pub(super) struct Hooks {
    kinds: Vec<String>,
    url: String,
    /// `whsec_` + base64, given at registration.
    secret: String,
    got: Arc<Mutex<Got>>,
    client: WebhookServiceClient<Channel>,
    /// The endpoint while registered.
    endpoint: Mutex<Option<String>>,
    pending_at_end: Mutex<u64>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Hooks {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Hooks {
    /// Starts the receiver for `kinds` (no endpoint yet).
    pub(super) async fn start(channel: Channel, kinds: Vec<String>) -> Result<Hooks, String> {
        let key: [u8; 32] = rand::random();
        let got = Arc::new(Mutex::new(Got::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("webhook receiver: {e}"))?;
        let url = format!(
            "http://{}/hook",
            listener
                .local_addr()
                .map_err(|e| format!("webhook receiver: {e}"))?
        );
        let app = {
            let got = got.clone();
            axum::Router::new().route(
                "/hook",
                axum::routing::post(move |headers: http::HeaderMap, body: String| {
                    let got = got.clone();
                    async move {
                        receive(&key, &headers, &body, &got);
                        http::StatusCode::NO_CONTENT
                    }
                }),
            )
        };
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Hooks {
            kinds,
            url,
            secret: format!("whsec_{}", STANDARD.encode(key)),
            got,
            client: WebhookServiceClient::new(channel),
            endpoint: Mutex::new(None),
            pending_at_end: Mutex::new(0),
            server,
        })
    }

    /// Registers the receiver as an endpoint.
    pub(super) async fn register(&self) -> Result<(), String> {
        let created = self
            .client
            .clone()
            .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
                url: self.url.clone(),
                event_kinds: self.kinds.clone(),
                secret: self.secret.clone(),
                description: "punct-referee load".into(),
            })
            .await
            .map_err(|s| {
                format!(
                    "CreateWebhookEndpoint: {}",
                    crate::tools::rpc::describe_status(&s)
                )
            })?
            .into_inner();
        let id = created.endpoint.map(|e| e.id).unwrap_or_default();
        *self.endpoint.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
        Ok(())
    }

    /// Waits until the endpoint has no pending delivery (at most
    /// [`DRAIN_LIMIT`]); how many were still pending.
    pub(super) async fn drain(&self) -> Result<u64, String> {
        let Some(id) = self.endpoint_id() else {
            return Ok(0);
        };
        let until = Instant::now() + DRAIN_LIMIT;
        loop {
            let pending = self
                .client
                .clone()
                .list_webhook_deliveries(pb::ListWebhookDeliveriesRequest {
                    endpoint_id: id.clone(),
                    status: "pending".into(),
                    limit: 1000,
                })
                .await
                .map_err(|s| {
                    format!(
                        "ListWebhookDeliveries: {}",
                        crate::tools::rpc::describe_status(&s)
                    )
                })?
                .into_inner()
                .deliveries
                .len() as u64;
            if pending == 0 || Instant::now() > until {
                *self
                    .pending_at_end
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) += pending;
                return Ok(pending);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits for the deliveries, then deletes the endpoint (and its rows).
    pub(super) async fn unregister(&self) -> Result<(), String> {
        self.drain().await?;
        let Some(id) = self
            .endpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return Ok(());
        };
        self.client
            .clone()
            .delete_webhook_endpoint(pb::DeleteWebhookEndpointRequest { endpoint_id: id })
            .await
            .map_err(|s| {
                format!(
                    "DeleteWebhookEndpoint: {}",
                    crate::tools::rpc::describe_status(&s)
                )
            })?;
        Ok(())
    }

    fn endpoint_id(&self) -> Option<String> {
        self.endpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What arrived so far.
    pub(super) fn tally(&self) -> WebhookTally {
        let got = self.got.lock().unwrap_or_else(|e| e.into_inner());
        WebhookTally {
            kinds: self.kinds.clone(),
            received: got.ids.len() as u64,
            by_kind: got.by_kind.clone(),
            verified: got.verified,
            bad_signatures: got.bad,
            duplicates: got.duplicates,
            pending_at_end: *self
                .pending_at_end
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// Checks and counts one request.
fn receive(key: &[u8], headers: &http::HeaderMap, body: &str, got: &Mutex<Got>) {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
    let good = !id.is_empty() && verify(key, id, timestamp, header("webhook-signature"), body);
    let kind = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned));
    let mut got = got.lock().unwrap_or_else(|e| e.into_inner());
    let (true, Some(kind)) = (good, kind) else {
        got.bad += 1;
        return;
    };
    got.verified += 1;
    if got.ids.insert(id.to_owned()) {
        *got.by_kind.entry(kind).or_default() += 1;
    } else {
        got.duplicates += 1;
    }
}

/// A Standard Webhooks signature check: one `v1,` signature of the header
/// is HMAC-SHA256 of `id.timestamp.body`, and the timestamp is within 5
/// minutes of now.
fn verify(key: &[u8], id: &str, timestamp: &str, signatures: &str, body: &str) -> bool {
    let Ok(ts) = timestamp.parse::<i64>() else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if (now - ts).abs() > 300 {
        return false;
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let signed = format!("{id}.{timestamp}.{body}");
    signatures.split(' ').any(|s| {
        s.strip_prefix("v1,")
            .and_then(|b| STANDARD.decode(b).ok())
            .is_some_and(|tag| ring::hmac::verify(&key, signed.as_bytes(), &tag).is_ok())
    })
}

/// One pair of `--compare-webhooks`: the moves phases without and with the
/// endpoint, after the same baseline.
#[derive(Debug, Clone, Serialize)]
pub struct PairRound {
    /// Whether the phase with the endpoint ran first.
    pub endpoint_first: bool,
    /// Moves/s without an endpoint.
    pub without_moves_per_sec: f64,
    /// Moves/s with it.
    pub with_moves_per_sec: f64,
    /// with / without.
    pub ratio: f64,
    /// Server CPU per move without an endpoint, µs.
    pub without_server_us_per_move: Option<f64>,
    /// Server CPU per move with it (its deliveries in the window included), µs.
    pub with_server_us_per_move: Option<f64>,
    /// without / with server CPU per move: the throughput ratio on a
    /// machine running only the server.
    pub server_cpu_ratio: Option<f64>,
}

/// The result of `--compare-webhooks` for one concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookComparison {
    /// The event kinds of the endpoint.
    pub kinds: Vec<String>,
    /// Every pair, in the order they ran.
    pub rounds: Vec<PairRound>,
    /// The median of the pairs' moves/s ratios (with / without).
    pub median_ratio: f64,
    /// The median of the pairs' server CPU ratios.
    pub median_server_cpu_ratio: Option<f64>,
    /// The medians of server CPU per move without and with, µs.
    pub median_server_us_per_move: (Option<f64>, Option<f64>),
}

/// The median of `values` (the mean of the two middle ones of an even
/// count); `None` when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        f64::midpoint(values[n / 2 - 1], values[n / 2])
    })
}

/// The comparison of `pairs` (without, with).
fn compare(kinds: &[String], pairs: &[(RunReport, RunReport, bool)]) -> WebhookComparison {
    let rounds: Vec<PairRound> = pairs
        .iter()
        .map(|(off, on, endpoint_first)| PairRound {
            endpoint_first: *endpoint_first,
            without_moves_per_sec: off.moves_per_sec,
            with_moves_per_sec: on.moves_per_sec,
            ratio: if off.moves_per_sec > 0.0 {
                on.moves_per_sec / off.moves_per_sec
            } else {
                0.0
            },
            without_server_us_per_move: off.server_cpu_us_per_move,
            with_server_us_per_move: on.server_cpu_us_per_move,
            server_cpu_ratio: match (off.server_cpu_us_per_move, on.server_cpu_us_per_move) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            },
        })
        .collect();
    WebhookComparison {
        kinds: kinds.to_vec(),
        median_ratio: median(rounds.iter().map(|r| r.ratio).collect()).unwrap_or(0.0),
        median_server_cpu_ratio: median(rounds.iter().filter_map(|r| r.server_cpu_ratio).collect()),
        median_server_us_per_move: (
            median(
                rounds
                    .iter()
                    .filter_map(|r| r.without_server_us_per_move)
                    .collect(),
            ),
            median(
                rounds
                    .iter()
                    .filter_map(|r| r.with_server_us_per_move)
                    .collect(),
            ),
        ),
        rounds,
    }
}

/// One concurrency of `--compare-webhooks`: `--rounds` pairs (module
/// docs); the report of the median pair's phase without the endpoint, with
/// the comparison and every phase's errors.
pub(super) async fn compare_run(
    args: &LoadArgs,
    channels: &[Channel],
    (pool, encoded): (&Pool, &Encoded),
    played: &Played,
    games: usize,
    server_pids: &[u32],
    hooks: &Hooks,
) -> Result<RunReport, String> {
    let mut pairs = Vec::with_capacity(args.rounds);
    for round in 0..args.rounds {
        let baseline = baseline_phase(args, channels, games, server_pids).await;
        let endpoint_first = round % 2 == 1;
        let mut off = None;
        let mut on = None;
        for with_endpoint in [endpoint_first, !endpoint_first] {
            if with_endpoint {
                hooks.register().await?;
            }
            let moves = moves_phase(
                args,
                channels,
                (pool, encoded),
                played,
                games,
                server_pids,
                false,
            )
            .await;
            if with_endpoint {
                hooks.unregister().await?;
            }
            let report = run_report(games, &baseline, moves);
            if with_endpoint {
                on = Some(report);
            } else {
                off = Some(report);
            }
        }
        if let (Some(off), Some(on)) = (off, on) {
            pairs.push((off, on, endpoint_first));
        }
    }
    let comparison = compare(&hooks.kinds, &pairs);
    let errors: u64 = pairs.iter().map(|(a, b, _)| a.errors + b.errors).sum();
    let baseline_errors: u64 = pairs.iter().map(|(a, _, _)| a.baseline_errors).sum();
    let first_errors: Vec<String> = pairs
        .iter()
        .flat_map(|(a, b, _)| a.first_errors.iter().chain(&b.first_errors).cloned())
        .take(5)
        .collect();
    // The row shown: the phase without the endpoint of the median pair.
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| {
        comparison.rounds[a]
            .ratio
            .total_cmp(&comparison.rounds[b].ratio)
    });
    let median_pair = order[order.len().saturating_sub(1) / 2];
    let mut run = pairs
        .into_iter()
        .nth(median_pair)
        .map(|(off, _, _)| off)
        .ok_or("no round ran")?;
    run.errors = errors;
    run.baseline_errors = baseline_errors;
    run.first_errors = first_errors;
    run.webhooks = Some(comparison);
    Ok(run)
}

/// At the end of a run with `--webhooks`: waits for the deliveries (of an
/// endpoint registered for the whole run), prints what arrived (with the
/// table) and gives it for the JSON report.
pub(super) async fn finish(
    args: &LoadArgs,
    hooks: Option<&Hooks>,
    table: bool,
) -> Result<Option<WebhookTally>, String> {
    let Some(hooks) = hooks else {
        return Ok(None);
    };
    if !args.compare_webhooks {
        hooks.drain().await?;
    }
    let tally = hooks.tally();
    if table {
        print_tally(&tally);
    }
    Ok(Some(tally))
}

/// The lines `--compare-webhooks` adds under a run's row.
pub(super) fn print_comparison(c: &WebhookComparison) {
    let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let ratios: Vec<String> = c.rounds.iter().map(|r| format!("{:.3}", r.ratio)).collect();
    let cpu: Vec<String> = c
        .rounds
        .iter()
        .map(|r| r.server_cpu_ratio.map_or("-".into(), |v| format!("{v:.3}")))
        .collect();
    println!(
        "{:>6}   webhooks ({}): with / without endpoint: moves/s ratio {:.3} (median of {}: {}), server cpu ratio {} ({}), server µs/move {} without, {} with",
        "",
        c.kinds.join(","),
        c.median_ratio,
        c.rounds.len(),
        ratios.join(" "),
        c.median_server_cpu_ratio
            .map_or("-".into(), |v| format!("{v:.3}")),
        cpu.join(" "),
        us(c.median_server_us_per_move.0),
        us(c.median_server_us_per_move.1),
    );
}

/// The line `--webhooks` prints at the end.
pub(super) fn print_tally(t: &WebhookTally) {
    let kinds: Vec<String> = t.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "webhooks ({}): {} deliveries received ({}), {} signatures verified, {} bad, {} duplicates, {} pending at the end",
        t.kinds.join(","),
        t.received,
        kinds.join(", "),
        t.verified,
        t.bad_signatures,
        t.duplicates,
        t.pending_at_end
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_verifies_only_with_its_key_body_and_a_recent_time() {
        let key = [7u8; 32];
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let body = r#"{"type":"game.created"}"#;
        let sig = crate::service::webhooks::deliver::signature(&key, "msg_1", now, body);
        let ts = now.to_string();
        assert!(verify(&key, "msg_1", &ts, &sig, body));
        assert!(verify(&key, "msg_1", &ts, &format!("v1,AAAA {sig}"), body));
        assert!(!verify(&[8u8; 32], "msg_1", &ts, &sig, body));
        assert!(!verify(&key, "msg_2", &ts, &sig, body));
        assert!(!verify(&key, "msg_1", &ts, &sig, "{}"));
        let old = (now - 600).to_string();
        let old_sig = crate::service::webhooks::deliver::signature(&key, "msg_1", now - 600, body);
        assert!(!verify(&key, "msg_1", &old, &old_sig, body));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
