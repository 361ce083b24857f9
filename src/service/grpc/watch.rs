//! A `WatchGame` stream: the game's watch read when the connection takes
//! the next message (docs/API.md, "Events and watching").
//!
//! The response body is the stream itself: hyper polls it for the next
//! message when it has sent the last one, and only then is the game's
//! watch read (its backlog, then the game's broadcast ring). There is no
//! task and no channel per watcher: a watcher whose connection stopped
//! reading is its stream's state (the watch, a few pointers and one
//! pending read of the ring) and the message hyper holds for it, whatever
//! the game does meanwhile. When it reads again it is past the ring's end
//! and gets a fresh snapshot marked `resync`. Dropping the stream (the
//! client went, or reset it) drops the watch, which gives back its slots
//! and its seat's presence.

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::Stream;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::error::status;
use super::pb::referee::v1 as pb;
use super::service::{LAST_PLY_HEADER, SHUTTING_DOWN, StreamSlots, frame_watch_item};
use crate::service::sessions::{self, Session, WatchItem};

/// The response stream of `WatchGame`.
pub(super) type WatchStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchGameResponse, Status>> + Send>>;

/// A watch stream of `session` over `watch`, ended by `shutdown`, holding
/// its places in the stream limits (`slots`) while it is open.
pub(super) fn open(
    session: Arc<Session>,
    watch: sessions::Watch,
    shutdown: CancellationToken,
    slots: StreamSlots,
) -> WatchStream {
    let feed = Feed {
        session,
        watch,
        shutdown,
        follow: None,
        done: false,
        _slots: slots,
    };
    Box::pin(futures_util::stream::unfold(feed, |mut feed| async move {
        let message = feed.next().await?;
        Some((message, feed))
    }))
}

/// One watch stream's state.
struct Feed {
    session: Arc<Session>,
    watch: sessions::Watch,
    shutdown: CancellationToken,
    /// A message that follows the last one sent (a round's end, after the
    /// move that ended it: docs/API.md, "Rounds").
    follow: Option<Box<pb::WatchGameResponse>>,
    /// Nothing more is sent after this (the stream ended in an error).
    done: bool,
    /// Given back when the stream is dropped, however it ends.
    _slots: StreamSlots,
}

impl Feed {
    /// The next message; `None` once the game-over event was sent (the
    /// stream ends with OK) or after an error.
    async fn next(&mut self) -> Option<Result<pb::WatchGameResponse, Status>> {
        if let Some(message) = self.follow.take() {
            return Some(Ok(*message));
        }
        if self.done {
            return None;
        }
        let next = tokio::select! {
            biased;
            () = self.shutdown.cancelled() => {
                return Some(Err(self.end(Status::unavailable(SHUTTING_DOWN))));
            }
            next = self.watch.next() => next,
        };
        match next {
            Ok(Some(item)) => {
                let (message, round_over) = self.frame(item);
                self.follow = round_over.map(Box::new);
                Some(Ok(message))
            }
            // The game-over event was sent: the stream ends with OK.
            Ok(None) => None,
            Err(e) => Some(Err(self.end(status(e)))),
        }
    }

    /// The stream's message(s) for one item of the watch.
    fn frame(&self, item: WatchItem) -> (pb::WatchGameResponse, Option<pb::WatchGameResponse>) {
        frame_watch_item(
            &self.session,
            &self.watch,
            item,
            |item, resync, sequence| pb::WatchGameResponse {
                item: Some(item),
                resync,
                sequence,
            },
        )
    }

    /// The error the stream ends with, naming the last ply it sent (its
    /// resume point: WatchGame.from_ply) in `referee-last-ply`.
    fn end(&mut self, mut status: Status) -> Status {
        self.done = true;
        self.follow = None;
        status
            .metadata_mut()
            .insert(LAST_PLY_HEADER, self.watch.last_ply().into());
        status
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tokio_stream::StreamExt as _;
    use tonic::{Code, Request};

    use super::*;
    use crate::games::GameRules;
    use crate::service::grpc::RefereeApi;
    use crate::service::grpc::answer::server::referee_service_server::RefereeService as _;
    use crate::service::sessions::{Limits, Role, SessionStore, Token};

    /// A service over a store with a ring of `ring` events and at most
    /// `watchers` watchers per game, and one new game of it.
    async fn service(
        ring: usize,
        watchers: usize,
    ) -> (RefereeApi, CancellationToken, Arc<Session>, Vec<Token>) {
        let store = Arc::new(SessionStore::new(Limits {
            watch_buffer: ring,
            max_watchers_per_game: watchers,
            ..Limits::default()
        }));
        let (session, tokens) = store
            .create(GameRules::default(), BTreeMap::new())
            .await
            .expect("create");
        let shutdown = CancellationToken::new();
        (
            RefereeApi::new(store, shutdown.clone()),
            shutdown,
            session,
            tokens,
        )
    }

    async fn open_watch(
        api: &RefereeApi,
        session: &Session,
        token: &str,
    ) -> Result<WatchStream, Status> {
        api.watch_game(Request::new(pb::WatchGameRequest {
            game_id: session.id().to_string(),
            token: token.to_string(),
            ..Default::default()
        }))
        .await
        .map(tonic::Response::into_inner)
    }

    /// Plays the first legal move of whoever is to move.
    async fn play_one(session: &Arc<Session>, tokens: &[Token]) {
        let view = session.view(false);
        let seat = view.to_move.expect("a seat to move");
        let (_, _, moves) = session.legal_moves(None, Role::Spectator);
        let role = session
            .role_of(&tokens[seat.index()].to_string(), false)
            .expect("role");
        session
            .submit(role, moves[0].detail.to_input(), view.ply, None)
            .await
            .expect("move");
    }

    fn snapshot_ply(message: &pb::WatchGameResponse) -> Option<u32> {
        match message.item.as_ref()? {
            pb::watch_game_response::Item::Snapshot(game) => Some(game.ply),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_stream_not_polled_while_the_game_laps_its_ring_resyncs() {
        let (api, _shutdown, session, tokens) = service(4, 8).await;
        let mut stream = open_watch(&api, &session, "").await.expect("watch");
        let first = stream.next().await.expect("first").expect("ok");
        assert_eq!(snapshot_ply(&first), Some(0));
        assert!(!first.resync);
        // Nothing reads the stream while the game goes past its ring.
        for _ in 0..10 {
            play_one(&session, &tokens).await;
        }
        let next = stream.next().await.expect("next").expect("ok");
        assert!(next.resync, "{next:?}");
        assert_eq!(snapshot_ply(&next), Some(10));
        assert_eq!(next.sequence, 10);
        // Then the game goes on, event by event.
        play_one(&session, &tokens).await;
        let event = stream.next().await.expect("event").expect("ok");
        assert_eq!(snapshot_ply(&event), None);
        assert!(!event.resync);
        assert_eq!(event.sequence, 11);
    }

    #[tokio::test]
    async fn a_dropped_stream_gives_back_its_slot_and_its_seats_presence() {
        let (api, _shutdown, session, tokens) = service(4, 1).await;
        let white = tokens[0].to_string();
        let mut stream = open_watch(&api, &session, &white).await.expect("watch");
        stream.next().await.expect("first").expect("ok");
        assert!(session.presence()[0].connected);
        // The game's one watcher place is taken.
        let refused = open_watch(&api, &session, "").await.err().expect("refused");
        assert_eq!(refused.code(), Code::ResourceExhausted);
        drop(stream);
        assert!(!session.presence()[0].connected);
        let mut again = open_watch(&api, &session, "").await.expect("watch again");
        assert!(again.next().await.expect("first").is_ok());
    }

    #[tokio::test]
    async fn a_waiting_stream_ends_unavailable_at_shutdown_with_its_last_ply() {
        let (api, shutdown, session, tokens) = service(16, 8).await;
        let mut stream = open_watch(&api, &session, "").await.expect("watch");
        stream.next().await.expect("first").expect("ok");
        play_one(&session, &tokens).await;
        stream.next().await.expect("event").expect("ok");
        let waiting = tokio::spawn(async move {
            let end = stream.next().await;
            (end, stream.next().await.is_none())
        });
        tokio::task::yield_now().await;
        shutdown.cancel();
        let (end, over) = waiting.await.expect("stream");
        let status = end.expect("an end").expect_err("an error");
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.metadata().get(LAST_PLY_HEADER).expect("ply"), "1");
        assert!(over);
    }
}
