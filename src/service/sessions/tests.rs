//! Session-layer tests, without a network and without naming any game's
//! internals: moves come from the session's own legal-move lists, short games
//! from record text.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::games::{GameRules, MoveInput, Seat, SeatSet, Viewer};

fn store() -> SessionStore {
    SessionStore::new(Limits::default())
}

async fn new_game(store: &SessionStore) -> (Arc<Session>, String, String) {
    let (s, [w, b]) = two(store
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap());
    (s, w.to_string(), b.to_string())
}

/// The first legal move of the player to move, as input.
fn first_move(s: &Session) -> MoveInput {
    let (_, _, moves) = s.legal_moves(None, Role::Spectator);
    moves[0].detail.to_input()
}

/// Plays the first legal move for whoever is to move.
async fn play_one(s: &Arc<Session>, tokens: &[String; 2]) -> MoveReceipt {
    let view = s.view(false);
    let seat = view.to_move.unwrap();
    s.submit(s.role(&tokens[seat.index()]), first_move(s), view.ply, None)
        .await
        .unwrap()
}

fn reason(e: &SessionError) -> &'static str {
    match e {
        SessionError::Rejected(MoveError::Illegal { reason, .. }) => reason,
        _ => "",
    }
}

#[tokio::test]
async fn created_game_has_two_distinct_seat_tokens_and_starts_with_white() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    assert_ne!(w, b);
    let v = s.view(true);
    assert_eq!((v.ply, v.to_move, v.outcome), (0, Some(Seat::FIRST), None));
    assert!(v.snapshot.is_some());
    assert_eq!(st.get(s.id().as_str()).unwrap().id(), s.id());
    assert!(matches!(st.get("nope"), Err(SessionError::NotFound(_))));
}

#[tokio::test]
async fn bad_tokens_are_refused_and_change_nothing() {
    let st = store();
    let (s, _, b) = new_game(&st).await;
    let mv = first_move(&s);
    assert!(matches!(
        s.submit(s.role(""), mv.clone(), 0, None).await,
        Err(SessionError::Unauthenticated { .. })
    ));
    assert!(matches!(
        s.role_of("not-a-token", false),
        Err(SessionError::Unauthenticated { .. })
    ));
    let stranger = Token::random().to_string();
    assert!(matches!(
        s.role_of(&stranger, false),
        Err(SessionError::PermissionDenied(_))
    ));
    let err = s.submit(s.role(&b), mv, 0, None).await.unwrap_err();
    assert_eq!(reason(&err), "NOT_YOUR_TURN");
    assert_eq!(s.view(false).ply, 0);
}

#[tokio::test]
async fn a_callers_role_comes_from_its_token_and_the_platform_key() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let black = Seat::new(1).unwrap();
    assert_eq!(s.role_of("", false), Ok(Role::Spectator));
    assert_eq!(s.role_of(&w, false), Ok(Role::Seat(Seat::FIRST)));
    assert_eq!(s.role_of(&b, false), Ok(Role::Seat(black)));
    // The platform names the game by a seat's token, and sees that seat's
    // view; it brings a token, and a right one.
    let platform = s.role_of(&b, true).unwrap();
    assert_eq!(platform, Role::Platform(Some(black)));
    assert_eq!(
        (platform.viewer(), platform.seat()),
        (Viewer::Seat(black), None)
    );
    assert!(matches!(
        s.role_of("", true),
        Err(SessionError::Unauthenticated {
            reason: "TOKEN_MISSING",
            ..
        })
    ));
    assert!(matches!(
        s.role_of(&Token::random().to_string(), true),
        Err(SessionError::PermissionDenied(_))
    ));
    // A spectator and the platform play no seat: refused, nothing changes.
    let mv = first_move(&s);
    assert!(matches!(
        s.submit(Role::Spectator, mv.clone(), 0, None).await,
        Err(SessionError::Unauthenticated {
            reason: "TOKEN_MISSING",
            ..
        })
    ));
    assert!(matches!(
        s.resign(platform).await,
        Err(SessionError::PermissionDenied(_))
    ));
    assert!(matches!(
        s.abort(Role::Spectator).await,
        Err(SessionError::Unauthenticated { .. })
    ));
    assert_eq!((s.view(false).ply, s.view(false).outcome), (0, None));
    // The server itself aborts without naming a seat: a spectator's view.
    let v = s.abort(Role::Platform(None)).await.unwrap();
    assert_eq!(v.outcome.unwrap().reason, "ABORTED");
    assert_eq!(v.viewer, Viewer::Spectator);
}

#[tokio::test]
async fn a_move_for_another_game_is_permission_denied() {
    let st = store();
    let (s1, _, _) = new_game(&st).await;
    let (_, w2, _) = new_game(&st).await;
    let err = s1.role_of(&w2, false).unwrap_err();
    assert!(matches!(err, SessionError::PermissionDenied(_)));
}

#[tokio::test]
async fn stale_ply_is_aborted_not_misapplied() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let tokens = [w.clone(), b.clone()];
    play_one(&s, &tokens).await;
    let err = s
        .submit(s.role(&b), first_move(&s), 0, None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SessionError::StalePly {
            expected: 0,
            current: 1
        }
    );
    assert_eq!(s.view(false).ply, 1);
}

#[tokio::test]
async fn illegal_move_names_the_engine_rule() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let mv = first_move(&s);
    s.submit(s.role(&w), mv.clone(), 0, None).await.unwrap();
    // Black tries to put a piece where White's now lies.
    let err = s.submit(s.role(&b), mv, 1, None).await.unwrap_err();
    assert_eq!(reason(&err), "SPACE_NOT_EMPTY");
    assert_eq!(s.view(false).ply, 1);
}

#[tokio::test]
async fn request_id_retry_returns_the_first_result_once() {
    let st = store();
    let (s, w, _) = new_game(&st).await;
    let mv = first_move(&s);
    let first = s
        .submit(s.role(&w), mv.clone(), 0, Some("r-1"))
        .await
        .unwrap();
    assert!(!first.replayed);
    let again = s
        .submit(s.role(&w), mv.clone(), 0, Some("r-1"))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.report, first.report);
    assert_eq!(s.view(false).ply, 1);
    // The same id for another move is a client bug, not a retry.
    let other = s.legal_moves(None, Role::Spectator).2[0].detail.to_input();
    let err = s
        .submit(s.role(&w), other, 1, Some("r-1"))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        SessionError::InvalidArgument {
            field: "request_id",
            ..
        }
    ));
    let long = "x".repeat(MAX_REQUEST_ID + 1);
    assert!(matches!(
        s.submit(s.role(&w), mv, 0, Some(&long)).await,
        Err(SessionError::InvalidArgument {
            field: "request_id",
            ..
        })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_submissions_for_one_ply_apply_exactly_once() {
    let st = store();
    let (s, w, _) = new_game(&st).await;
    let moves = s.legal_moves(None, Role::Spectator).2;
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (s, w, mv) = (s.clone(), w.clone(), moves[i].detail.to_input());
            tokio::spawn(async move { s.submit(s.role(&w), mv, 0, None).await })
        })
        .collect();
    let mut results = Vec::new();
    for h in handles {
        results.push(h.await.unwrap());
    }
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| matches!(
                e,
                SessionError::StalePly {
                    expected: 0,
                    current: 1
                }
            ))
    );
    assert_eq!(s.view(false).ply, 1);
}

#[tokio::test]
async fn resignation_ends_the_game_for_the_opponent() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let mv = first_move(&s);
    let v = s.resign(s.role(&b)).await.unwrap();
    let outcome = v.outcome.unwrap();
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(Seat::FIRST), "RESIGNATION")
    );
    assert_eq!(v.to_move, None);
    assert_eq!(
        reason(&s.submit(s.role(&w), mv, 0, None).await.unwrap_err()),
        "GAME_OVER"
    );
    assert_eq!(
        reason(&s.resign(s.role(&w)).await.unwrap_err()),
        "GAME_OVER"
    );
}

#[tokio::test]
async fn draw_needs_an_offer_from_the_opponent() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    assert_eq!(
        reason(&s.accept_draw(s.role(&b)).await.unwrap_err()),
        "NO_DRAW_OFFER"
    );
    let (agreed, v) = s.offer_draw(s.role(&w)).await.unwrap();
    assert!(!agreed);
    assert_eq!(v.draw_offers, SeatSet::only(Seat::FIRST));
    // The offerer cannot accept their own offer.
    assert_eq!(
        reason(&s.accept_draw(s.role(&w)).await.unwrap_err()),
        "NO_DRAW_OFFER"
    );
    let (agreed, v) = s.accept_draw(s.role(&b)).await.unwrap();
    assert!(agreed);
    let outcome = v.outcome.unwrap();
    assert_eq!((outcome.winner(), outcome.reason), (None, "DRAW_AGREEMENT"));
}

#[tokio::test]
async fn crossing_offers_agree_and_a_move_declines() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let tokens = [w.clone(), b.clone()];
    s.offer_draw(s.role(&w)).await.unwrap();
    play_one(&s, &tokens).await; // White moves: offer stands.
    assert_eq!(s.view(false).draw_offers, SeatSet::only(Seat::FIRST));
    play_one(&s, &tokens).await; // Black moves: declined.
    assert_eq!(s.view(false).draw_offers, SeatSet::EMPTY);
    s.offer_draw(s.role(&b)).await.unwrap();
    let (agreed, v) = s.offer_draw(s.role(&w)).await.unwrap();
    assert!(agreed);
    assert_eq!(v.outcome.unwrap().reason, "DRAW_AGREEMENT");
}

#[tokio::test]
async fn abort_only_before_both_seats_moved() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let tokens = [w.clone(), b.clone()];
    play_one(&s, &tokens).await;
    let v = s.abort(s.role(&b)).await.unwrap();
    assert_eq!(v.outcome.unwrap().reason, "ABORTED");
    let (s, w, b) = new_game(&st).await;
    let tokens = [w.clone(), b.clone()];
    play_one(&s, &tokens).await;
    play_one(&s, &tokens).await;
    assert_eq!(
        reason(&s.abort(s.role(&w)).await.unwrap_err()),
        "ABORT_TOO_LATE"
    );
    assert!(s.view(false).outcome.is_none());
}

#[tokio::test]
async fn board_ending_is_reported_with_the_move() {
    let st = store();
    let (s, [w, b]) = two(st
        .import("game: punct\nmax_plies: 2\n\n", BTreeMap::new())
        .await
        .unwrap());
    let tokens = [w.to_string(), b.to_string()];
    assert!(play_one(&s, &tokens).await.report.outcome.is_none());
    let last = play_one(&s, &tokens).await;
    assert_eq!(last.report.outcome.unwrap().reason, "MOVE_LIMIT");
    assert_eq!(last.report.next, None);
}

#[tokio::test]
async fn session_limit_refuses_creation_until_a_game_expires() {
    let st = SessionStore::new(Limits {
        max_sessions: 1,
        finished_ttl: Duration::ZERO,
        ..Limits::default()
    });
    let (s, w, _) = new_game(&st).await;
    let err = st
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SessionError::LimitReached {
            what: "sessions",
            max: 1
        }
    );
    s.resign(s.role(&w)).await.unwrap();
    assert_eq!(st.sweep(Instant::now()), 1);
    assert!(st.is_empty());
    new_game(&st).await;
}

#[tokio::test]
async fn idle_games_expire_and_active_ones_stay() {
    let st = SessionStore::new(Limits {
        idle_ttl: Duration::from_secs(60),
        ..Limits::default()
    });
    new_game(&st).await;
    assert_eq!(st.sweep(Instant::now()), 0);
    assert_eq!(st.sweep(Instant::now() + Duration::from_secs(61)), 1);
}

#[tokio::test]
async fn labels_are_checked_and_filter_listings() {
    let st = store();
    let mut labels = BTreeMap::new();
    labels.insert("round".to_string(), "1".to_string());
    st.create(GameRules::default(), labels.clone())
        .await
        .unwrap();
    let (s2, w2, _) = new_game(&st).await;
    s2.resign(s2.role(&w2)).await.unwrap();
    new_game(&st).await;
    let bad: BTreeMap<_, _> = [("no spaces".to_string(), "x".to_string())].into();
    assert!(matches!(
        st.create(GameRules::default(), bad).await,
        Err(SessionError::InvalidArgument {
            field: "labels",
            ..
        })
    ));
    let q = |finished, labels: BTreeMap<String, String>| ListQuery {
        finished,
        labels,
        page_size: 0,
        page_token: String::new(),
    };
    assert_eq!(st.list(&q(None, BTreeMap::new())).await.unwrap().0.len(), 3);
    assert_eq!(
        st.list(&q(Some(true), BTreeMap::new()))
            .await
            .unwrap()
            .0
            .len(),
        1
    );
    assert_eq!(
        st.list(&q(Some(false), BTreeMap::new()))
            .await
            .unwrap()
            .0
            .len(),
        2
    );
    assert_eq!(st.list(&q(None, labels)).await.unwrap().0.len(), 1);
}

#[test]
fn game_ids_sort_in_the_order_they_were_made() {
    let ids: Vec<GameId> = (0..10_000).map(|_| GameId::random()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|id| Token::parse(id.as_str()).is_some()));
    let unix_ms = |id: &GameId| u64::from_str_radix(&id.as_str()[..12], 16).unwrap();
    let now = crate::service::storage::unix_ms(std::time::SystemTime::now()) as u64;
    assert!(
        now.abs_diff(unix_ms(&ids[0])) < 60_000,
        "the stamp is the time"
    );
}

#[tokio::test]
async fn listing_pages_cover_every_game_once() {
    let st = store();
    for _ in 0..5 {
        new_game(&st).await;
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let (page, next) = st
            .list(&ListQuery {
                page_size: 2,
                page_token: token.clone(),
                ..ListQuery::default()
            })
            .await
            .unwrap();
        seen.extend(page.into_iter().map(|v| v.id));
        if next.is_empty() {
            break;
        }
        token = next;
    }
    assert_eq!(seen.len(), 5);
    seen.dedup();
    assert_eq!(seen.len(), 5);
    assert!(
        st.list(&ListQuery {
            page_token: "x".into(),
            ..ListQuery::default()
        })
        .await
        .is_err()
    );
}

#[tokio::test]
async fn validate_move_answers_without_a_session() {
    let st = store();
    let (s, w, _) = new_game(&st).await;
    let mv = first_move(&s);
    s.submit(s.role(&w), mv.clone(), 0, None).await.unwrap();
    let record = s.export(Role::Spectator);
    let a = validate_move(History::Record(record.clone()), &mv).unwrap();
    assert_eq!(a.seat, Some(Seat::SECOND));
    assert!(matches!(
        a.result,
        Err(MoveError::Illegal {
            reason: "SPACE_NOT_EMPTY",
            ..
        })
    ));
    let a = validate_move(History::Moves(GameRules::default(), None, vec![]), &mv).unwrap();
    assert_eq!(a.result.unwrap().ply, 1);
    assert!(matches!(
        validate_move(History::Record("variant: chess\n".into()), &mv),
        Err(SessionError::Record(_))
    ));
    assert_eq!(st.len(), 1);
}

#[tokio::test]
async fn export_and_import_round_trip() {
    let st = store();
    let (s, w, b) = new_game(&st).await;
    let tokens = [w, b];
    for _ in 0..3 {
        play_one(&s, &tokens).await;
    }
    let record = s.export(Role::Spectator);
    let (copy, _) = st.import(&record, BTreeMap::new()).await.unwrap();
    assert_eq!(copy.view(false).ply, 3);
    assert_eq!(copy.export(Role::Spectator), record);
    let err = st
        .import("SE@Z99:A1,A2\n", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        SessionError::Record(RecordError { line: Some(1), .. })
    ));
}

mod watching {
    use super::*;

    fn snapshot_of(item: WatchItem) -> (SessionView, u64, bool) {
        match item {
            WatchItem::Snapshot {
                view,
                sequence,
                resync,
            } => (*view, sequence, resync),
            other => panic!("expected a snapshot, got {other:?}"),
        }
    }

    fn event_of(item: WatchItem) -> Arc<Event> {
        match item {
            WatchItem::Event(e) => e,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_broadcast_ring_exists_only_while_someone_watches() {
        let st = store();
        let (s, w, b) = new_game(&st).await;
        let tokens = [w.clone(), b];
        assert!(!s.has_ring(), "a new game allocates no ring");
        play_one(&s, &tokens).await;
        assert!(!s.has_ring());
        let mut watch = s.watch(None, Role::Spectator).unwrap();
        assert!(s.has_ring());
        snapshot_of(watch.next().await.unwrap().unwrap());
        play_one(&s, &tokens).await;
        assert_eq!(event_of(watch.next().await.unwrap().unwrap()).ply, 2);
        assert!(s.has_ring());
        drop(watch);
        // The first event nobody receives drops it; a new watcher makes it
        // again and misses nothing.
        play_one(&s, &tokens).await;
        assert!(!s.has_ring());
        let mut watch = s.watch(Some(2), Role::Spectator).unwrap();
        snapshot_of(watch.next().await.unwrap().unwrap());
        assert_eq!(event_of(watch.next().await.unwrap().unwrap()).ply, 3);
        play_one(&s, &tokens).await;
        assert_eq!(event_of(watch.next().await.unwrap().unwrap()).ply, 4);
    }

    #[tokio::test]
    async fn watcher_gets_snapshot_then_each_move_then_game_over() {
        let st = store();
        let (s, w, b) = new_game(&st).await;
        let tokens = [w.clone(), b];
        let mut watch = s.watch(None, Role::Spectator).unwrap();
        let (view, seq, resync) = snapshot_of(watch.next().await.unwrap().unwrap());
        assert_eq!((view.ply, seq, resync), (0, 0, false));
        play_one(&s, &tokens).await;
        play_one(&s, &tokens).await;
        s.resign(s.role(&w)).await.unwrap();
        for expected in 1..=2 {
            let e = event_of(watch.next().await.unwrap().unwrap());
            assert_eq!((e.sequence, e.ply), (expected, expected as u32));
            assert!(matches!(e.kind, EventKind::MoveApplied { .. }));
        }
        let e = event_of(watch.next().await.unwrap().unwrap());
        assert_eq!(e.sequence, 3);
        assert!(matches!(e.kind, EventKind::GameOver { .. }));
        assert!(watch.next().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn late_watcher_resumes_from_a_ply_without_gaps_or_duplicates() {
        let st = store();
        let (s, w, b) = new_game(&st).await;
        let tokens = [w, b];
        for _ in 0..4 {
            play_one(&s, &tokens).await;
        }
        let mut watch = s.watch(Some(1), Role::Spectator).unwrap();
        let (view, seq, _) = snapshot_of(watch.next().await.unwrap().unwrap());
        assert_eq!((view.ply, seq, view.to_move), (1, 1, Some(Seat::SECOND)));
        assert!(view.last_move.is_some());
        play_one(&s, &tokens).await;
        let plies: Vec<u32> = {
            let mut v = Vec::new();
            for _ in 0..4 {
                v.push(event_of(watch.next().await.unwrap().unwrap()).ply);
            }
            v
        };
        assert_eq!(plies, vec![2, 3, 4, 5]);
        assert!(matches!(
            s.watch(Some(99), Role::Spectator),
            Err(SessionError::OutOfRange {
                field: "from_ply",
                asked: 99,
                current: 5
            })
        ));
    }

    /// A watcher's chain head after each move is the game's, whether it
    /// reads the move while the game is still at it (the game's own head)
    /// or after later moves (its own step from the head before).
    #[tokio::test]
    async fn a_watchers_chain_head_is_the_games_read_live_or_behind() {
        let st = store();
        let (s, w, b) = new_game(&st).await;
        let tokens = [w, b];
        let mut live = s.watch(None, Role::Spectator).unwrap();
        let mut behind = s.watch(None, Role::Spectator).unwrap();
        snapshot_of(live.next().await.unwrap().unwrap());
        snapshot_of(behind.next().await.unwrap().unwrap());
        let mut heads = Vec::new();
        for ply in 1..=5u32 {
            play_one(&s, &tokens).await;
            assert_eq!(event_of(live.next().await.unwrap().unwrap()).ply, ply);
            assert_eq!(live.chain_head(), s.chain_head());
            heads.push(s.chain_head());
        }
        assert_eq!(
            heads.iter().collect::<std::collections::HashSet<_>>().len(),
            5
        );
        for (ply, head) in (1..=5u32).zip(&heads) {
            assert_eq!(event_of(behind.next().await.unwrap().unwrap()).ply, ply);
            assert_eq!(behind.chain_head(), *head, "ply {ply}");
        }
    }

    #[tokio::test]
    async fn watcher_of_a_finished_game_gets_snapshot_and_game_over() {
        let st = store();
        let (s, w, _) = new_game(&st).await;
        s.resign(s.role(&w)).await.unwrap();
        let mut watch = s.watch(None, Role::Spectator).unwrap();
        let (view, _, _) = snapshot_of(watch.next().await.unwrap().unwrap());
        assert!(view.outcome.is_some());
        let e = event_of(watch.next().await.unwrap().unwrap());
        assert!(matches!(e.kind, EventKind::GameOver { .. }));
        assert!(watch.next().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn slow_watcher_is_resynchronised_not_buffered() {
        let st = SessionStore::new(Limits {
            watch_buffer: 2,
            ..Limits::default()
        });
        let (s, w, b) = new_game(&st).await;
        let tokens = [w, b];
        let mut slow = s.watch(None, Role::Spectator).unwrap();
        let mut fast = s.watch(None, Role::Spectator).unwrap();
        snapshot_of(fast.next().await.unwrap().unwrap());
        for ply in 1..=6u32 {
            play_one(&s, &tokens).await;
            assert_eq!(event_of(fast.next().await.unwrap().unwrap()).ply, ply);
        }
        snapshot_of(slow.next().await.unwrap().unwrap());
        let (view, seq, resync) = snapshot_of(slow.next().await.unwrap().unwrap());
        assert!(resync);
        assert_eq!((view.ply, seq), (6, 6));
        play_one(&s, &tokens).await;
        assert_eq!(event_of(slow.next().await.unwrap().unwrap()).sequence, 7);
    }

    #[tokio::test]
    async fn watcher_limit_counts_live_watches_only() {
        let st = SessionStore::new(Limits {
            max_watchers_per_game: 1,
            ..Limits::default()
        });
        let (s, _, _) = new_game(&st).await;
        let first = s.watch(None, Role::Spectator).unwrap();
        assert_eq!(
            s.watch(None, Role::Spectator).unwrap_err(),
            SessionError::LimitReached {
                what: "watchers_per_game",
                max: 1
            }
        );
        drop(first);
        s.watch(None, Role::Spectator).unwrap();
    }

    #[tokio::test]
    async fn dropping_a_game_ends_its_watchers() {
        let st = SessionStore::new(Limits {
            idle_ttl: Duration::ZERO,
            ..Limits::default()
        });
        let (s, _, _) = new_game(&st).await;
        let mut watch = s.watch(None, Role::Spectator).unwrap();
        watch.next().await.unwrap();
        st.sweep(Instant::now());
        assert!(matches!(watch.next().await, Err(SessionError::NotFound(_))));
    }
}
