//! The webhook outbox on every SQL backend: events stored only with their
//! change, one delivery per subscribed endpoint, leases, order per subject,
//! settling, replay, the queue limit, sealed secrets.

use super::super::outbox::{EndpointRow, OutboxEvent, Settle, WebhookStore};
use super::postgres_backend::{fresh_database, open_pg, test_database_url};
use super::*;

fn endpoint(id: &str, kinds: &[&str]) -> EndpointRow {
    EndpointRow {
        id: id.into(),
        url: format!("https://hooks.example/{id}"),
        kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
        secret: (0..32).collect(),
        description: String::new(),
        created_at_ms: 1,
    }
}

fn event(id: &str, kind: &'static str, subject: &str, at_ms: i64) -> OutboxEvent {
    OutboxEvent {
        id: id.into(),
        kind,
        subject: subject.into(),
        body: format!("{{\"type\":\"{kind}\"}}"),
        at_ms,
        queue_limit: 100,
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one scenario read top to bottom: each step builds on the outbox the last one left"
)]
async fn outbox_suite(storage: &dyn Storage) {
    let hooks: &dyn WebhookStore = storage.webhooks().expect("an outbox");
    hooks
        .create_endpoint(&endpoint("e1", &["game.created", "game.ended"]))
        .unwrap();
    hooks
        .create_endpoint(&endpoint("e2", &["game.ended"]))
        .unwrap();
    let listed = hooks.endpoints().unwrap();
    assert_eq!(
        listed,
        [
            endpoint("e1", &["game.created", "game.ended"]),
            endpoint("e2", &["game.ended"])
        ]
    );

    storage
        .write(Write::Outboxed(
            Box::new(Write::Create(game("a"), Vec::new(), None)),
            vec![event("m1", "game.created", "a", 10)],
        ))
        .await
        .unwrap();
    // A change that fails stores none of its events.
    storage
        .write(Write::Outboxed(
            Box::new(Write::End(end("nope", 1))),
            vec![event("m0", "game.ended", "nope", 11)],
        ))
        .await
        .unwrap_err();
    storage
        .write(Write::Outboxed(
            Box::new(Write::End(end("a", 0))),
            vec![event("m2", "game.ended", "a", 12)],
        ))
        .await
        .unwrap();
    assert_eq!(
        hooks.backlog().unwrap().pending,
        3,
        "m1 for e1, m2 for both"
    );
    assert_eq!(hooks.backlog().unwrap().oldest_ms, Some(10));

    // Only the oldest pending delivery of each endpoint and game is due.
    let ids = |v: &[super::super::outbox::DeliveryRow]| {
        v.iter()
            .map(|d| (d.endpoint_id.clone(), d.event_id.clone()))
            .collect::<Vec<_>>()
    };
    let first = hooks.lease("r1", 100, 1000, 10).unwrap();
    assert_eq!(
        ids(&first),
        [("e1".into(), "m1".into()), ("e2".into(), "m2".into())]
    );
    assert!(
        hooks.lease("r2", 100, 1000, 10).unwrap().is_empty(),
        "leased by r1"
    );
    let m1 = &first[0];
    assert!(
        !hooks.settle(m1.seq, "r2", &Settle::Delivered).unwrap(),
        "not r2's lease"
    );
    assert!(hooks.settle(m1.seq, "r1", &Settle::Delivered).unwrap());
    let next = hooks.lease("r2", 100, 1000, 10).unwrap();
    assert_eq!(
        ids(&next),
        [("e1".into(), "m2".into())],
        "after m1, in order"
    );
    // A retry waits for its time; a lease expires.
    let retry = Settle::Retry {
        at_ms: 5000,
        error: "answered 503".into(),
    };
    assert!(hooks.settle(next[0].seq, "r2", &retry).unwrap());
    assert!(
        hooks
            .lease("r3", 1001, 9000, 10)
            .unwrap()
            .iter()
            .all(|d| d.endpoint_id != "e1")
    );
    let again = hooks.lease("r3", 5000, 9000, 10).unwrap();
    assert_eq!(
        ids(&again),
        [("e1".into(), "m2".into())],
        "e2's is leased to r3 until 9000"
    );
    assert_eq!(again[0].attempts, 1);
    // Failed for good, listed with its error, replayed.
    let failed = Settle::Failed {
        error: "answered 410".into(),
    };
    assert!(hooks.settle(again[0].seq, "r3", &failed).unwrap());
    let listed = hooks.deliveries("e1", Some("failed"), 10).unwrap();
    assert_eq!(
        (
            listed.len(),
            listed[0].last_error.as_str(),
            listed[0].attempts
        ),
        (1, "answered 410", 2)
    );
    assert_eq!(hooks.deliveries("e1", None, 10).unwrap().len(), 2);
    assert_eq!(hooks.replay("e1", Some("m2"), 0, 6000).unwrap(), 1);
    assert_eq!(
        hooks.replay("e1", Some("m2"), 0, 6000).unwrap(),
        0,
        "not failed any more"
    );
    let replayed = hooks.lease("r3", 6000, 9000, 10).unwrap();
    assert_eq!(ids(&replayed), [("e1".into(), "m2".into())]);
    assert_eq!(replayed[0].attempts, 0);

    // The queue limit: past it, a new delivery is stored failed.
    storage
        .write(Write::Outboxed(
            Box::new(Write::Create(game("b"), Vec::new(), None)),
            vec![OutboxEvent {
                queue_limit: 1,
                ..event("m3", "game.created", "b", 20)
            }],
        ))
        .await
        .unwrap();
    let full = hooks.deliveries("e1", None, 1).unwrap();
    assert_eq!(
        (full[0].event_id.as_str(), full[0].status.as_str()),
        ("m3", "failed")
    );
    assert!(full[0].last_error.contains("queue"));

    // Leases of a dead process are dropped at start; deleting an endpoint
    // drops its deliveries.
    assert!(hooks.release_leases().unwrap() >= 1);
    assert!(hooks.delete_endpoint("e1").unwrap());
    assert!(!hooks.delete_endpoint("e1").unwrap());
    assert!(hooks.deliveries("e1", None, 10).unwrap().is_empty());
    assert_eq!(hooks.endpoints().unwrap().len(), 1);
}

/// The retention: delivered rows of events before the cut are deleted,
/// in batches of at most the limit; pending and failed rows, and newer
/// delivered ones, stay.
async fn retention_suite(storage: &dyn Storage) {
    let hooks: &dyn WebhookStore = storage.webhooks().expect("an outbox");
    hooks
        .create_endpoint(&endpoint("e", &["game.created"]))
        .unwrap();
    for (i, at) in [10, 20, 30, 40, 50, 60].into_iter().enumerate() {
        let id = format!("p{i}");
        storage
            .write(Write::Outboxed(
                Box::new(Write::Create(game(&id), Vec::new(), None)),
                vec![OutboxEvent {
                    id: format!("m{i}"),
                    ..event("", "game.created", &id, at)
                }],
            ))
            .await
            .unwrap();
    }
    let leased = hooks.lease("r", 100, 1000, 10).unwrap();
    assert_eq!(leased.len(), 6);
    let failed = Settle::Failed {
        error: "answered 410".into(),
    };
    // m0, m1, m3 and m5 delivered, m2 failed, m4 still pending.
    let outcomes: Vec<(i64, Settle)> = leased
        .iter()
        .filter(|d| d.event_id != "m4")
        .map(|d| {
            let outcome = if d.event_id == "m2" {
                failed.clone()
            } else {
                Settle::Delivered
            };
            (d.seq, outcome)
        })
        .collect();
    assert_eq!(hooks.settle_all("r", &outcomes).unwrap(), 5);
    assert_eq!(hooks.prune_delivered(55, 2).unwrap(), 2, "a batch at most");
    assert_eq!(hooks.prune_delivered(55, 2).unwrap(), 1);
    assert_eq!(hooks.prune_delivered(55, 2).unwrap(), 0);
    let mut left: Vec<(String, String)> = hooks
        .deliveries("e", None, 10)
        .unwrap()
        .into_iter()
        .map(|d| (d.event_id, d.status))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ("m2".to_owned(), "failed".to_owned()),
            ("m4".to_owned(), "pending".to_owned()),
            ("m5".to_owned(), "delivered".to_owned()),
        ]
    );
    // A failed delivery replayed and delivered is pruned in its turn.
    assert_eq!(hooks.replay("e", Some("m2"), 0, 100).unwrap(), 1);
    let replayed = hooks.lease("r", 100, 1000, 10).unwrap();
    assert_eq!(replayed.len(), 1, "m4 is still leased");
    assert!(
        hooks
            .settle(replayed[0].seq, "r", &Settle::Delivered)
            .unwrap()
    );
    assert_eq!(hooks.prune_delivered(55, 500).unwrap(), 1);
    assert_eq!(hooks.deliveries("e", None, 10).unwrap().len(), 2);
}

#[tokio::test]
async fn sqlite_prunes_delivered_webhook_deliveries() {
    let dir = tempdir();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    retention_suite(&SqliteStorage::open(&options).unwrap()).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_prunes_delivered_webhook_deliveries() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    retention_suite(&s).await;
}

#[tokio::test]
async fn sqlite_keeps_the_webhook_outbox() {
    let dir = tempdir();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    outbox_suite(&SqliteStorage::open(&options).unwrap()).await;
    // The secret is sealed at rest, and comes back after a reopen.
    let s = SqliteStorage::open(&options).unwrap();
    assert_eq!(
        s.webhooks().unwrap().endpoints().unwrap()[0].secret,
        (0..32).collect::<Vec<u8>>()
    );
    drop(s);
    let conn = rusqlite::Connection::open(dir.join(super::super::sqlite::DB_FILE)).unwrap();
    let stored: String = conn
        .query_row("SELECT secret FROM webhook_endpoints", [], |r| r.get(0))
        .unwrap();
    assert!(!stored.contains("000102030405060708"), "sealed: {stored}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_keeps_the_webhook_outbox() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    outbox_suite(&s).await;
}

#[test]
fn the_reference_rows_keep_events_only_with_their_change() {
    let s = ReferenceStorage::new();
    let write = |w: Write| Commit::wait_blocking(s.write(w));
    write(Write::Outboxed(
        Box::new(Write::Create(game("a"), Vec::new(), None)),
        vec![event("m1", "game.created", "a", 1)],
    ))
    .unwrap();
    write(Write::Outboxed(
        Box::new(Write::End(end("nope", 1))),
        vec![event("m0", "game.ended", "nope", 2)],
    ))
    .unwrap_err();
    let kept: Vec<String> = s.outbox().into_iter().map(|e| e.id).collect();
    assert_eq!(kept, ["m1"]);
}
