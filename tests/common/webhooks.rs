//! What the webhook tests share: the wait until every expected (game, event
//! kind) delivery reached a test's receiver, with the ids each came under.

use std::collections::BTreeMap;
use std::time::Duration;

/// The distinct `webhook-id`s received for each (game id, event kind), in
/// arrival order.
pub type ByEvent = BTreeMap<(String, String), Vec<String>>;

/// Groups `arrivals` — (webhook-id, event kind, game id), in arrival order
/// — by (game, kind), keeping each distinct id once.
pub fn by_event(arrivals: &[(String, String, String)]) -> ByEvent {
    let mut by_event = ByEvent::new();
    for (id, kind, game) in arrivals {
        let ids = by_event.entry((game.clone(), kind.clone())).or_default();
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    by_event
}

/// Polls `arrivals` (what the receiver got so far, as for [`by_event`])
/// every 20 ms until each of `expected` (game id, event kind) arrived;
/// fails the test after `secs`. What arrived, grouped.
pub async fn until_delivered(
    secs: u64,
    expected: &[(String, &str)],
    mut arrivals: impl FnMut() -> Vec<(String, String, String)>,
) -> ByEvent {
    super::within(secs, async {
        loop {
            let by_event = by_event(&arrivals());
            if expected
                .iter()
                .all(|(g, k)| by_event.contains_key(&(g.clone(), (*k).to_owned())))
            {
                return by_event;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}
