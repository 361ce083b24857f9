//! `referee.v1.WebhookService`: endpoints registered, listed, deleted;
//! deliveries listed and replayed (docs/WEBHOOKS.md). Needs the key scope
//! `webhooks:admin` when keys are on.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

use super::deliver::{Refused, target};
use super::{Hub, WebhookOptions, events};
use crate::service::grpc::answer::server::webhook_service_server::WebhookService;
use crate::service::grpc::error::{ERROR_DOMAIN, invalid_argument};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::storage::outbox::{DeliveryRow, EndpointRow, WebhookStore};
use crate::service::storage::{Storage, StorageError, unix_ms};

/// The service (module docs).
#[derive(Debug, Clone)]
pub struct WebhookApi {
    storage: Arc<dyn Storage>,
    hub: Option<Arc<Hub>>,
    options: Arc<WebhookOptions>,
}

impl WebhookApi {
    /// Over `storage` (its outbox), with `hub` (`None`: storage that keeps
    /// nothing, where every call is refused).
    pub fn new(storage: Arc<dyn Storage>, hub: Option<Arc<Hub>>, options: WebhookOptions) -> Self {
        WebhookApi {
            storage,
            hub,
            options: Arc::new(options),
        }
    }

    /// Runs `job` on the outbox off the async workers.
    async fn outbox<T: Send + 'static>(
        &self,
        job: impl FnOnce(&dyn WebhookStore) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, Status> {
        if self.hub.is_none() {
            return Err(Status::with_error_details(
                Code::FailedPrecondition,
                "webhooks need durable storage (not --storage memory)",
                ErrorDetails::with_error_info(
                    "WEBHOOKS_NEED_STORAGE",
                    ERROR_DOMAIN,
                    HashMap::new(),
                ),
            ));
        }
        let storage = self.storage.clone();
        tokio::task::spawn_blocking(move || match storage.webhooks() {
            Some(store) => job(store),
            None => Err(StorageError::Unavailable("no outbox".into())),
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(|e| {
            Status::with_error_details(
                Code::Unavailable,
                e.to_string(),
                ErrorDetails::with_error_info("STORAGE_UNAVAILABLE", ERROR_DOMAIN, HashMap::new()),
            )
        })
    }

    async fn refresh(&self) {
        if let (Some(hub), Ok(all)) = (&self.hub, self.outbox(|s| s.endpoints()).await) {
            hub.set_subscriptions(all.iter().flat_map(|e| e.kinds.iter().map(String::as_str)));
        }
    }
}

fn endpoint_id(field: &str, id: &str) -> Result<String, Status> {
    let hex = id.strip_prefix("whe_").unwrap_or("");
    if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(id.to_owned())
    } else {
        Err(invalid_argument(
            field,
            "an endpoint id is `whe_` and 32 hex digits",
        ))
    }
}

fn not_found(id: &str) -> Status {
    Status::with_error_details(
        Code::NotFound,
        format!("no webhook endpoint `{id}`"),
        ErrorDetails::with_resource_info("referee.v1.WebhookEndpoint", id, "", "no such endpoint"),
    )
}

fn endpoint_pb(e: &EndpointRow) -> pb::WebhookEndpoint {
    pb::WebhookEndpoint {
        id: e.id.clone(),
        url: e.url.clone(),
        event_kinds: e.kinds.clone(),
        description: e.description.clone(),
        created_at_ms: e.created_at_ms,
    }
}

fn delivery_pb(d: DeliveryRow) -> pb::WebhookDelivery {
    pb::WebhookDelivery {
        event_id: d.event_id,
        event_kind: d.kind,
        status: d.status,
        attempts: d.attempts,
        last_error: d.last_error,
        created_at_ms: d.created_at_ms,
        subject_id: d.subject,
    }
}

/// The secret a request gives (`whsec_` + base64 of 24 to 64 bytes), or a
/// new one of 32 random bytes.
fn secret_of(given: &str) -> Result<Vec<u8>, Status> {
    if given.is_empty() {
        return Ok(rand::random::<[u8; 32]>().to_vec());
    }
    let bad = || {
        invalid_argument(
            "secret",
            "a secret is `whsec_` and base64 of 24 to 64 bytes",
        )
    };
    let bytes = STANDARD
        .decode(given.strip_prefix("whsec_").ok_or_else(bad)?)
        .map_err(|_| bad())?;
    if (24..=64).contains(&bytes.len()) {
        Ok(bytes)
    } else {
        Err(bad())
    }
}

#[tonic::async_trait]
impl WebhookService for WebhookApi {
    async fn create_webhook_endpoint(
        &self,
        request: Request<pb::CreateWebhookEndpointRequest>,
    ) -> Result<Response<pb::CreateWebhookEndpointResponse>, Status> {
        let r = request.into_inner();
        if r.url.len() > 2048 {
            return Err(invalid_argument("url", "longer than 2048 bytes"));
        }
        if let Err(refused) = target(&r.url, &self.options) {
            return Err(match refused {
                Refused::Malformed(why) => invalid_argument("url", why),
                Refused::Host(why) => Status::with_error_details(
                    Code::PermissionDenied,
                    format!("url: {why}"),
                    ErrorDetails::with_error_info(
                        "WEBHOOK_HOST_REFUSED",
                        ERROR_DOMAIN,
                        HashMap::from([("field".to_owned(), "url".to_owned())]),
                    ),
                ),
            });
        }
        if r.event_kinds.is_empty() {
            return Err(invalid_argument(
                "event_kinds",
                "name at least one event kind",
            ));
        }
        let mut kinds: Vec<String> = Vec::new();
        for k in &r.event_kinds {
            if !events::KINDS.contains(&k.as_str()) {
                return Err(invalid_argument(
                    "event_kinds",
                    format!("unknown event kind (known: {})", events::KINDS.join(", ")),
                ));
            }
            if !kinds.contains(k) {
                kinds.push(k.clone());
            }
        }
        if r.description.len() > 1024 {
            return Err(invalid_argument("description", "longer than 1024 bytes"));
        }
        let secret = secret_of(&r.secret)?;
        let row = EndpointRow {
            id: format!("whe_{:032x}", rand::random::<u128>()),
            url: r.url,
            kinds,
            secret,
            description: r.description,
            created_at_ms: unix_ms(std::time::SystemTime::now()),
        };
        let stored = row.clone();
        self.outbox(move |s| s.create_endpoint(&stored)).await?;
        self.refresh().await;
        tracing::info!(endpoint = %row.id, url = %row.url, "webhook endpoint registered");
        Ok(Response::new(pb::CreateWebhookEndpointResponse {
            endpoint: Some(endpoint_pb(&row)),
            secret: format!("whsec_{}", STANDARD.encode(&row.secret)),
        }))
    }

    async fn list_webhook_endpoints(
        &self,
        _request: Request<pb::ListWebhookEndpointsRequest>,
    ) -> Result<Response<pb::ListWebhookEndpointsResponse>, Status> {
        let all = self.outbox(|s| s.endpoints()).await?;
        Ok(Response::new(pb::ListWebhookEndpointsResponse {
            endpoints: all.iter().map(endpoint_pb).collect(),
        }))
    }

    async fn delete_webhook_endpoint(
        &self,
        request: Request<pb::DeleteWebhookEndpointRequest>,
    ) -> Result<Response<pb::DeleteWebhookEndpointResponse>, Status> {
        let id = endpoint_id("endpoint_id", &request.into_inner().endpoint_id)?;
        let key = id.clone();
        if !self.outbox(move |s| s.delete_endpoint(&key)).await? {
            return Err(not_found(&id));
        }
        self.refresh().await;
        Ok(Response::new(pb::DeleteWebhookEndpointResponse {}))
    }

    async fn list_webhook_deliveries(
        &self,
        request: Request<pb::ListWebhookDeliveriesRequest>,
    ) -> Result<Response<pb::ListWebhookDeliveriesResponse>, Status> {
        let r = request.into_inner();
        let id = endpoint_id("endpoint_id", &r.endpoint_id)?;
        let status = match r.status.as_str() {
            "" => None,
            s @ ("pending" | "delivered" | "failed") => Some(s.to_owned()),
            _ => {
                return Err(invalid_argument(
                    "status",
                    "pending, delivered, failed or empty",
                ));
            }
        };
        let limit = match r.limit {
            0 => 100,
            n => n.min(1000) as usize,
        };
        let key = id.clone();
        let (exists, found) = self
            .outbox(move |s| {
                let exists = s.endpoints()?.iter().any(|e| e.id == key);
                Ok((exists, s.deliveries(&key, status.as_deref(), limit)?))
            })
            .await?;
        if !exists {
            return Err(not_found(&id));
        }
        Ok(Response::new(pb::ListWebhookDeliveriesResponse {
            deliveries: found.into_iter().map(delivery_pb).collect(),
        }))
    }

    async fn replay_webhook_deliveries(
        &self,
        request: Request<pb::ReplayWebhookDeliveriesRequest>,
    ) -> Result<Response<pb::ReplayWebhookDeliveriesResponse>, Status> {
        let r = request.into_inner();
        let id = endpoint_id("endpoint_id", &r.endpoint_id)?;
        let event = match r.event_id.as_str() {
            "" if r.since_ms <= 0 => {
                return Err(invalid_argument(
                    "event_id",
                    "name an event, or a time since which to replay (since_ms)",
                ));
            }
            "" => None,
            e if e.len() == 36
                && e.strip_prefix("msg_")
                    .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())) =>
            {
                Some(e.to_owned())
            }
            _ => {
                return Err(invalid_argument(
                    "event_id",
                    "an event id is `msg_` and 32 hex digits",
                ));
            }
        };
        let key = id.clone();
        let since = r.since_ms;
        let (exists, replayed) = self
            .outbox(move |s| {
                let exists = s.endpoints()?.iter().any(|e| e.id == key);
                let now = unix_ms(std::time::SystemTime::now());
                Ok((exists, s.replay(&key, event.as_deref(), since, now)?))
            })
            .await?;
        if !exists {
            return Err(not_found(&id));
        }
        Ok(Response::new(pb::ReplayWebhookDeliveriesResponse {
            replayed,
        }))
    }
}
