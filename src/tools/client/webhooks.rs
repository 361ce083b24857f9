//! `client webhooks …`: a platform's commands for its webhook endpoints
//! over `WebhookService` (docs/WEBHOOKS.md): `add` registers one and prints
//! its secret (the only time it is shown), `list` the endpoints (never a
//! secret), `delete` one, `deliveries` an endpoint's deliveries, `replay`
//! failed ones.

use clap::Subcommand;

use super::{Connection, refused};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::webhook_service_client::WebhookServiceClient;
use crate::service::webhooks::events::rfc3339;

/// The `client webhooks` commands (with keys on, the key needs the scope
/// `webhooks:admin`).
#[derive(Debug, Clone, Subcommand)]
pub enum WebhookCommand {
    /// Register an endpoint: print its id, then its signing secret (shown
    /// only now: keep it where the receiver reads it).
    Add {
        /// Where deliveries are POSTed (http or https).
        url: String,
        /// The event kinds, comma-separated: game.created, game.ended,
        /// game.move, tournament.started, tournament.round_finished,
        /// tournament.ended.
        #[arg(long, value_delimiter = ',', default_value = "game.created,game.ended")]
        events: Vec<String>,
        /// Free text kept with the endpoint.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List the endpoints, one a line: id, URL, kinds, creation, description.
    List,
    /// Delete an endpoint and its deliveries.
    Delete {
        /// The endpoint's id (`whe_…`).
        endpoint: String,
    },
    /// List an endpoint's deliveries, newest first, one a line: event id,
    /// kind, subject, status, attempts, time, last error.
    Deliveries {
        /// The endpoint's id.
        endpoint: String,
        /// Only those of this status: pending, delivered or failed.
        #[arg(long)]
        status: Option<String>,
        /// At most this many (at most 1000).
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Put failed deliveries back in the queue: one event (--event), or
    /// every failed one since a time (--since-ms, default: all); print how
    /// many.
    Replay {
        /// The endpoint's id.
        endpoint: String,
        /// The event id (`msg_…`) of one failed delivery.
        #[arg(long, conflicts_with = "since_ms")]
        event: Option<String>,
        /// Every failed delivery of events since this time (Unix
        /// milliseconds).
        #[arg(long)]
        since_ms: Option<i64>,
    },
}

/// The webhook service over the client's connection.
type Service = WebhookServiceClient<crate::tools::rpc::KeyedChannel>;

/// Runs one `client webhooks` command.
pub async fn run(c: &mut Connection, command: WebhookCommand) -> Result<(), String> {
    let mut service = WebhookServiceClient::new(c.channel.clone());
    match command {
        WebhookCommand::Add {
            url,
            events,
            description,
        } => add(&mut service, url, &events, description).await,
        WebhookCommand::List => list(&mut service).await,
        WebhookCommand::Delete { endpoint } => {
            service
                .delete_webhook_endpoint(pb::DeleteWebhookEndpointRequest {
                    endpoint_id: endpoint.clone(),
                })
                .await
                .map_err(refused)?;
            println!("deleted {endpoint}");
            Ok(())
        }
        WebhookCommand::Deliveries {
            endpoint,
            status,
            limit,
        } => deliveries(&mut service, endpoint, status, limit).await,
        WebhookCommand::Replay {
            endpoint,
            event,
            since_ms,
        } => {
            let replayed = service
                .replay_webhook_deliveries(pb::ReplayWebhookDeliveriesRequest {
                    endpoint_id: endpoint,
                    event_id: event.unwrap_or_default(),
                    since_ms: since_ms.unwrap_or(0),
                })
                .await
                .map_err(refused)?
                .into_inner()
                .replayed;
            println!("{replayed} replayed");
            Ok(())
        }
    }
}

/// `add`: the id, then the secret (the only time it is shown).
async fn add(
    service: &mut Service,
    url: String,
    events: &[String],
    description: String,
) -> Result<(), String> {
    let created = service
        .create_webhook_endpoint(pb::CreateWebhookEndpointRequest {
            url,
            event_kinds: events.iter().map(|e| e.trim().to_owned()).collect(),
            secret: String::new(),
            description,
        })
        .await
        .map_err(refused)?
        .into_inner();
    let endpoint = created.endpoint.unwrap_or_default();
    println!("{}", endpoint.id);
    println!("{}", created.secret);
    eprintln!("the second line is the endpoint's signing secret: it is not shown again");
    Ok(())
}

/// `list`: one endpoint a line, never its secret.
async fn list(service: &mut Service) -> Result<(), String> {
    let listed = service
        .list_webhook_endpoints(pb::ListWebhookEndpointsRequest {})
        .await
        .map_err(refused)?
        .into_inner();
    for e in listed.endpoints {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            e.id,
            e.url,
            e.event_kinds.join(","),
            rfc3339(e.created_at_ms),
            e.description
        );
    }
    Ok(())
}

/// `deliveries`: one a line, newest first.
async fn deliveries(
    service: &mut Service,
    endpoint: String,
    status: Option<String>,
    limit: u32,
) -> Result<(), String> {
    let listed = service
        .list_webhook_deliveries(pb::ListWebhookDeliveriesRequest {
            endpoint_id: endpoint,
            status: status.unwrap_or_default(),
            limit,
        })
        .await
        .map_err(refused)?
        .into_inner();
    for d in listed.deliveries {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            d.event_id,
            d.event_kind,
            d.subject_id,
            d.status,
            d.attempts,
            rfc3339(d.created_at_ms),
            d.last_error
        );
    }
    Ok(())
}
