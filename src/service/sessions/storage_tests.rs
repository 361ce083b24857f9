//! The session layer over storage: every change stored before it is applied,
//! nothing applied when storage fails, and games recovered after a restart
//! as if nothing happened. Each test runs against every backend that keeps
//! data (the in-memory rows, SQLite and, when a test server is given,
//! PostgreSQL); a restart is a new store over the same storage (in-memory),
//! the same directory (SQLite) or the same database (PostgreSQL).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::games::{GameRules, MoveInput, Seat, SeatSet, dots, punto};
use crate::service::storage::conformance;
use crate::service::storage::postgres::{PostgresOptions, PostgresStorage};
use crate::service::storage::reference::ReferenceStorage;
use crate::service::storage::sqlite::{SqliteOptions, SqliteStorage, SyncMode};

/// A backend and a way to reopen it, as a restart would.
enum Backend {
    Memory(Arc<ReferenceStorage>),
    Sqlite(PathBuf),
    /// A fresh database's URL (see `conformance::test_database_url`).
    Postgres(String),
}

impl Backend {
    fn all() -> Vec<Backend> {
        let dir = std::env::temp_dir().join(format!(
            "punct-sessions-{}-{}",
            std::process::id(),
            Token::random()
        ));
        let mut all = vec![
            Backend::Memory(Arc::new(ReferenceStorage::new())),
            Backend::Sqlite(dir),
        ];
        if let Some(server) = conformance::test_database_url() {
            all.push(Backend::Postgres(conformance::fresh_database(&server)));
        }
        all
    }

    fn open(&self) -> Arc<dyn Storage> {
        match self {
            Backend::Memory(m) => m.clone(),
            Backend::Sqlite(dir) => Arc::new(
                SqliteStorage::open(&SqliteOptions {
                    dir: dir.clone(),
                    sync: SyncMode::Normal,
                    max_bytes: None,
                })
                .unwrap(),
            ),
            Backend::Postgres(url) => Arc::new(
                PostgresStorage::open(&PostgresOptions {
                    url: url.clone(),
                    pool_size: 6,
                    ..PostgresOptions::default()
                })
                .unwrap(),
            ),
        }
    }

    fn store(&self) -> SessionStore {
        let store = SessionStore::with_storage(Limits::default(), self.open());
        store.recover().unwrap();
        store
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Backend::Sqlite(dir) = self {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn first_move(s: &Session) -> MoveInput {
    s.legal_moves(None, Role::Spectator).2[0].detail.to_input()
}

async fn play(s: &Arc<Session>, tokens: &[String; 2], request_id: Option<&str>) -> MoveReceipt {
    let v = s.view(false);
    let seat = v.to_move.unwrap();
    s.submit(
        s.role(&tokens[seat.index()]),
        first_move(s),
        v.ply,
        request_id,
    )
    .await
    .unwrap()
}

fn texts(tokens: Vec<Token>) -> [String; 2] {
    let [w, b]: [Token; 2] = tokens.try_into().expect("two seats");
    [w.to_string(), b.to_string()]
}

/// A new game on `storage`: its store, its session and its seats' tokens.
async fn new_game(storage: &Arc<ReferenceStorage>) -> (SessionStore, Arc<Session>, [String; 2]) {
    let store = SessionStore::with_storage(Limits::default(), storage.clone());
    let (s, t) = store
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    (store, s, texts(t))
}

/// A watcher of `s` that has had its first snapshot (events come next).
async fn watch_past_snapshot(s: &Arc<Session>) -> Watch {
    let mut w = s.watch(None, Role::Spectator).unwrap();
    assert!(matches!(
        w.next().await,
        Ok(Some(WatchItem::Snapshot { .. }))
    ));
    w
}

/// The game's state as a picture (snapshots compare by what they show).
fn picture(v: &SessionView) -> Option<String> {
    v.snapshot.as_ref().map(|s| s.svg(None, None))
}

#[tokio::test]
async fn games_come_back_after_a_restart_with_tokens_retries_and_offers() {
    for backend in Backend::all() {
        let (id, tokens, receipt, before, other_id) = {
            let store = backend.store();
            let labels = BTreeMap::from([("event".to_string(), "cup".to_string())]);
            let (s, t) = store.create(GameRules::default(), labels).await.unwrap();
            let tokens = texts(t);
            play(&s, &tokens, Some("m1")).await;
            let receipt = play(&s, &tokens, Some("m2")).await;
            play(&s, &tokens, None).await;
            // Black, not to move, offers a draw; it stands after the restart.
            s.offer_draw(s.role(&tokens[1])).await.unwrap();
            let (other, ot) = store
                .create(GameRules::default(), BTreeMap::new())
                .await
                .unwrap();
            other.resign(other.role(&ot[0].to_string())).await.unwrap();
            (
                s.id().clone(),
                tokens,
                receipt,
                s.view(true),
                other.id().clone(),
            )
        };
        let store = backend.store();
        assert_eq!(store.len(), 1, "the finished game is not recovered");
        assert!(store.get(other_id.as_str()).is_err());
        let s = store.get(id.as_str()).unwrap();
        let after = s.view(true);
        assert_eq!(after.ply, before.ply);
        assert_eq!(after.to_move, before.to_move);
        assert_eq!(after.labels, before.labels);
        assert_eq!(picture(&after), picture(&before));
        assert_eq!(after.last_move, before.last_move);
        assert_eq!(after.draw_offers, SeatSet::only(Seat::SECOND));
        // The retry of an acknowledged move is answered from the record,
        // whether the move is repeated as notation or structured.
        let retry = s
            .submit(
                s.role(&tokens[1]),
                receipt.report.detail.to_input(),
                1,
                Some("m2"),
            )
            .await
            .unwrap();
        assert!(retry.replayed);
        assert_eq!(retry.report, receipt.report);
        let wrong = s
            .submit(s.role(&tokens[1]), first_move(&s), 1, Some("m2"))
            .await
            .unwrap_err();
        assert!(matches!(
            wrong,
            SessionError::InvalidArgument {
                field: "request_id",
                ..
            }
        ));
        // The old tokens still hold their seats; a watcher resumes at ply 1.
        let mut w = s.watch(Some(1), Role::Spectator).unwrap();
        assert!(matches!(
            w.next().await,
            Ok(Some(WatchItem::Snapshot { .. }))
        ));
        assert!(matches!(w.next().await, Ok(Some(WatchItem::Event(e))) if e.ply == 2));
        let next = play(&s, &tokens, None).await;
        assert_eq!(next.report.ply, 4);
        // Black's own move leaves its offer standing (only White's move
        // would decline it), and that is stored with the move.
        assert_eq!(s.view(false).draw_offers, SeatSet::only(Seat::SECOND));
        // A restart: everything holding the storage goes.
        drop((w, s, store));
        let store = backend.store();
        let v = store.get(id.as_str()).unwrap().view(false);
        assert_eq!((v.ply, v.draw_offers), (4, SeatSet::only(Seat::SECOND)));
    }
}

#[tokio::test]
async fn a_failing_store_refuses_changes_and_applies_none() {
    let storage = Arc::new(ReferenceStorage::new());
    let (store, s, tokens) = new_game(&storage).await;
    play(&s, &tokens, None).await;
    let mut w = watch_past_snapshot(&s).await;
    let before = s.view(true);

    storage.set_failing(true);
    let e = s
        .submit(s.role(&tokens[1]), first_move(&s), 1, Some("r"))
        .await
        .unwrap_err();
    assert!(matches!(e, SessionError::Unavailable(_)), "{e:?}");
    assert!(e.to_string().contains("disk is full"), "{e}");
    for e in [
        s.resign(s.role(&tokens[0])).await.unwrap_err(),
        s.offer_draw(s.role(&tokens[0])).await.unwrap_err(),
        store
            .create(GameRules::default(), BTreeMap::new())
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(e, SessionError::Unavailable(_)), "{e:?}");
    }
    let after = s.view(true);
    assert_eq!(after.ply, before.ply);
    assert_eq!(picture(&after), picture(&before));
    assert_eq!(after.outcome, None);
    assert_eq!(after.draw_offers, SeatSet::EMPTY);
    assert_eq!(store.len(), 1, "no game was created");
    assert_eq!(storage.moves(s.id().as_str()).len(), 1);
    // No event reached the watcher.
    let quiet = tokio::time::timeout(Duration::from_millis(50), w.next()).await;
    assert!(quiet.is_err(), "no event for a change that was not made");

    // Storage back: the same request id is a fresh move, not a retry.
    storage.set_failing(false);
    let r = s
        .submit(s.role(&tokens[1]), first_move(&s), 1, Some("r"))
        .await
        .unwrap();
    assert!(!r.replayed);
    assert_eq!(storage.moves(s.id().as_str()).len(), 2);
    assert!(matches!(w.next().await, Ok(Some(WatchItem::Event(e))) if e.ply == 2));
}

#[tokio::test]
async fn a_move_whose_caller_goes_away_mid_write_is_applied_and_answers_its_retry() {
    let storage = Arc::new(ReferenceStorage::new());
    let (_store, s, tokens) = new_game(&storage).await;
    let id = s.id().to_string();
    let mut w = watch_past_snapshot(&s).await;

    // The write is under way (held by the disk) when the caller goes away.
    storage.set_holding(true);
    let call = {
        let (s, token, mv) = (s.clone(), tokens[0].clone(), first_move(&s));
        tokio::spawn(async move { s.submit(s.role(&token), mv, 0, Some("gone")).await })
    };
    tokio::time::timeout(Duration::from_secs(5), async {
        while storage.held() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the move's write is queued");
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(s.view(true).ply, 0, "nothing applied before it is stored");

    // The client retries: the retry waits for the first write's turn, not
    // deciding the move again beside it.
    let retry = {
        let (s, token, mv) = (s.clone(), tokens[0].clone(), first_move(&s));
        tokio::spawn(async move { s.submit(s.role(&token), mv, 0, Some("gone")).await })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(
        !retry.is_finished(),
        "the retry waits for the write under way"
    );
    assert_eq!(storage.held(), 1, "one write, not two");

    // Stored: applied by the task the drop started, then the retry gets
    // the first answer.
    storage.set_holding(false);
    let r = retry.await.unwrap().unwrap();
    assert!(r.replayed, "the retry is answered from the first move");
    assert_eq!(r.report.ply, 1);
    assert_eq!(s.view(true).ply, 1);
    assert_eq!(storage.moves(&id).len(), 1);
    assert!(matches!(w.next().await, Ok(Some(WatchItem::Event(e))) if e.ply == 1));

    // The game goes on: the turn was given back.
    let next = play(&s, &tokens, None).await;
    assert_eq!(next.report.ply, 2);
    assert_eq!(storage.moves(&id).len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_clock_survives_a_restart_without_charging_the_downtime() {
    let storage = Arc::new(ReferenceStorage::new());
    let tc = TimeControl {
        lag: None,
        mode: ClockMode::Fischer {
            initial: Duration::from_millis(1000),
            increment: Duration::ZERO,
        },
        first_move: None,
    };
    let (id, tokens) = {
        let store = SessionStore::with_storage(Limits::default(), storage.clone());
        let (s, t) = store
            .create_timed(GameRules::default(), BTreeMap::new(), tc, None)
            .await
            .unwrap();
        let tokens = texts(t);
        tokio::time::advance(Duration::from_millis(300)).await;
        play(&s, &tokens, None).await;
        tokio::time::advance(Duration::from_millis(200)).await;
        play(&s, &tokens, None).await;
        // White thinks 100 ms, then the service goes down for 10 s.
        tokio::time::advance(Duration::from_millis(100)).await;
        s.close();
        (s.id().clone(), tokens)
    };
    tokio::time::advance(Duration::from_secs(10)).await;
    let store = SessionStore::with_storage(Limits::default(), storage.clone());
    assert_eq!(store.recover().unwrap(), 1);
    let s = store.get(id.as_str()).unwrap();
    let v = s.view(false);
    assert_eq!(v.outcome, None, "the downtime did not flag anyone");
    assert_eq!(v.time_control, tc);
    // White used 300 ms, Black 200 ms; the interrupted turn starts afresh.
    assert_eq!(
        v.clock.remaining,
        Some(vec![Duration::from_millis(700), Duration::from_millis(800)])
    );
    assert_eq!(v.clock.running, Some(Seat::FIRST));
    // The clock runs again and flags White 700 ms later, by itself; the
    // ending is stored, so a second restart does not bring the game back.
    tokio::time::advance(Duration::from_millis(701)).await;
    tokio::task::yield_now().await;
    let v = s.view(false);
    assert_eq!(v.outcome.map(|v| v.reason), Some("TIMEOUT"));
    tokio::task::yield_now().await;
    assert_eq!(storage.status(id.as_str()), Some("finished"));
    let _ = tokens;
}

#[tokio::test]
async fn imported_and_expired_games_are_stored_as_such() {
    let storage = Arc::new(ReferenceStorage::new());
    let limits = Limits {
        idle_ttl: Duration::from_millis(1),
        ..Limits::default()
    };
    let store = SessionStore::with_storage(limits, storage.clone());
    let record = "game: punct\nresult: black RESIGNATION\n\nSE@E5:F5,G5\n";
    let (done, _) = store.import(record, BTreeMap::new()).await.unwrap();
    assert_eq!(storage.status(done.id().as_str()), Some("finished"));
    assert_eq!(storage.moves(done.id().as_str()).len(), 1);
    let (idle, _) = store
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    store.sweep(std::time::Instant::now());
    tokio::task::yield_now().await;
    assert_eq!(storage.status(idle.id().as_str()), Some("expired"));
    assert!(storage.recover().unwrap().is_empty());
}

/// Everything a reader sees of a finished game.
fn finished_picture(s: &Session) -> (u32, Option<crate::games::Outcome>, Option<String>, String) {
    let v = s.view(true);
    (
        v.ply,
        v.outcome.clone(),
        picture(&v),
        s.export(Role::Spectator),
    )
}

#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom"
)]
async fn finished_games_are_read_back_after_a_restart_listed_and_pruned() {
    for backend in Backend::all() {
        let cup = BTreeMap::from([("event".to_string(), "cup".to_string())]);
        let (finished, playing) = {
            let store = backend.store();
            let mut finished = Vec::new();
            // Resigned after three moves.
            let (s, t) = store
                .create(GameRules::default(), cup.clone())
                .await
                .unwrap();
            let tokens = texts(t);
            for _ in 0..3 {
                play(&s, &tokens, None).await;
            }
            s.resign(s.role(&tokens[0])).await.unwrap();
            finished.push(s);
            // Drawn by agreement.
            let (s, t) = store
                .create(GameRules::default(), cup.clone())
                .await
                .unwrap();
            let tokens = texts(t);
            play(&s, &tokens, None).await;
            play(&s, &tokens, None).await;
            s.offer_draw(s.role(&tokens[0])).await.unwrap();
            s.accept_draw(s.role(&tokens[1])).await.unwrap();
            finished.push(s);
            // Aborted before Black moved.
            let (s, t) = store
                .create(GameRules::default(), BTreeMap::new())
                .await
                .unwrap();
            let tokens = texts(t);
            play(&s, &tokens, None).await;
            s.abort(s.role(&tokens[1])).await.unwrap();
            finished.push(s);
            // Imported finished.
            let record = "game: punct\nresult: black RESIGNATION\n\nSE@E5:F5,G5\n";
            let (s, _) = store.import(record, cup.clone()).await.unwrap();
            finished.push(s);
            let (playing, _) = store
                .create(GameRules::default(), cup.clone())
                .await
                .unwrap();
            let finished: Vec<_> = finished
                .iter()
                .map(|s| (s.id().clone(), finished_picture(s)))
                .collect();
            (finished, playing.id().clone())
        };
        // Writes queued without waiting (the ends) land before the restart.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reasons: Vec<&str> = finished
            .iter()
            .map(|(_, p)| p.1.as_ref().unwrap().reason)
            .collect();
        assert_eq!(
            reasons,
            ["RESIGNATION", "DRAW_AGREEMENT", "ABORTED", "RESIGNATION"]
        );

        let store = backend.store().with_archive_cap(3);
        assert_eq!(store.len(), 1, "only the game in progress is recovered");
        for (id, before) in &finished {
            let s = store.find(id.as_str()).await.unwrap();
            assert!(s.archived());
            assert_eq!(&finished_picture(&s), before, "{id}");
        }
        // The cap: the first one read back was dropped again, and comes back.
        assert!(store.get(finished[0].0.as_str()).is_err());
        assert!(store.get(finished[3].0.as_str()).is_ok());
        let again = store.find(finished[0].0.as_str()).await.unwrap();
        assert_eq!(finished_picture(&again), finished[0].1);
        // A finished game read back takes no move and no action.
        let err = again
            .role_of(&Token::random().to_string(), false)
            .unwrap_err();
        assert!(matches!(err, SessionError::PermissionDenied(_)), "{err:?}");
        assert!(matches!(
            store.find(&Token::random().to_string()).await,
            Err(SessionError::NotFound(_))
        ));
        assert!(matches!(
            store.find("not an id").await,
            Err(SessionError::NotFound(_))
        ));

        // Listings: every game once, in creation order, held or stored.
        let all_ids: Vec<GameId> = finished
            .iter()
            .map(|(id, _)| id.clone())
            .chain([playing.clone()])
            .collect();
        let mut seen = Vec::new();
        let mut token = String::new();
        loop {
            let (page, next) = store
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
        let mut keys = Vec::new();
        for id in &seen {
            keys.push(store.find(id.as_str()).await.unwrap().list_key());
        }
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "oldest first: {keys:?}"
        );
        let mut sorted_seen = seen.clone();
        sorted_seen.sort();
        let mut sorted_all = all_ids.clone();
        sorted_all.sort();
        assert_eq!(sorted_seen, sorted_all, "every game exactly once");
        let finished_cup = store
            .list(&ListQuery {
                finished: Some(true),
                labels: cup.clone(),
                ..ListQuery::default()
            })
            .await
            .unwrap()
            .0;
        let mut ids: Vec<GameId> = finished_cup.iter().map(|v| v.id.clone()).collect();
        ids.sort();
        let mut want = vec![
            finished[0].0.clone(),
            finished[1].0.clone(),
            finished[3].0.clone(),
        ];
        want.sort();
        assert_eq!(ids, want);
        assert!(finished_cup.iter().all(|v| v.outcome.is_some()));
        let playing_only = store
            .list(&ListQuery {
                finished: Some(false),
                ..ListQuery::default()
            })
            .await
            .unwrap()
            .0;
        let playing_ids: Vec<&GameId> = playing_only.iter().map(|v| &v.id).collect();
        assert_eq!(playing_ids, [&playing]);

        // Retention: nothing is a day old; everything finished is older
        // than now. The game in progress stays.
        assert_eq!(store.prune(Duration::from_secs(86_400)).await.unwrap(), 0);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(store.prune(Duration::ZERO).await.unwrap(), 4);
        drop((again, store));
        let store = backend.store();
        for (id, _) in &finished {
            assert!(matches!(
                store.find(id.as_str()).await,
                Err(SessionError::NotFound(_))
            ));
        }
        assert!(store.find(playing.as_str()).await.is_ok());
    }
}

/// Everything a reader can see of `s`: as a spectator and as each seat
/// (the view, its picture, the last move, the record, the legal moves).
fn seen(s: &Session, tokens: &[String]) -> Vec<String> {
    let mut roles = vec![Role::Spectator];
    roles.extend(tokens.iter().map(|t| s.role(t)));
    roles
        .into_iter()
        .map(|role| {
            let v = s.view_as(role.viewer());
            let legal: Vec<String> = s
                .legal_moves(None, role)
                .2
                .iter()
                .map(|m| m.detail.notation.clone())
                .collect();
            format!(
                "{} {:?} {:?} {:?} {:?} {:?}\n{}\n{legal:?}",
                v.ply,
                v.to_move,
                v.outcome,
                v.draw_offers,
                v.last_move.as_ref().map(|m| &m.notation),
                picture(&v),
                s.export(role),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_move_refused_by_the_store_or_waiting_for_it_changes_no_game_of_any_kind() {
    // Every engine: PÜNCT decides on a copy, Dots and Punto play and take
    // back; short Dots games end on the move limit, so an ending move is
    // refused too.
    let kinds = [
        (GameRules::default(), 24),
        (
            GameRules::new(dots::RuleOptions::new(6, 6, dots::Start::Cross, 9).unwrap()),
            9,
        ),
        (
            GameRules::new(dots::RuleOptions::new(12, 12, dots::Start::QuadrupleCross, 0).unwrap()),
            24,
        ),
        (GameRules::new(punto::RuleOptions::default()), 40),
        (
            GameRules::new(punto::RuleOptions::of(punto::Configuration::ThreePlayers)),
            40,
        ),
    ];
    for (rules, plies) in kinds {
        let name = format!("{} {}", rules.game_name(), rules.variant_name());
        let storage = Arc::new(ReferenceStorage::new());
        let store = SessionStore::with_storage(Limits::default(), storage.clone());
        let (s, tokens) = store.create(rules, BTreeMap::new()).await.unwrap();
        let tokens: Vec<String> = tokens.iter().map(ToString::to_string).collect();
        let id = s.id().to_string();
        let mut w = watch_past_snapshot(&s).await;
        for ply in 0..plies {
            let Some(seat) = s.view(false).to_move else {
                break;
            };
            let token = tokens[seat.index()].clone();
            let legal = s.legal_moves(None, s.role(&token)).2;
            let mv = legal[(ply as usize * 7) % legal.len()].detail.to_input();
            let before = seen(&s, &tokens);

            storage.set_failing(true);
            let e = s.submit(s.role(&token), mv.clone(), ply, None).await;
            assert!(
                matches!(e, Err(SessionError::Unavailable(_))),
                "{name}: {e:?}"
            );
            assert_eq!(
                seen(&s, &tokens),
                before,
                "{name}, ply {ply}: a refused write"
            );
            storage.set_failing(false);

            // While the write waits for the disk, readers see the game as
            // it was: nothing is shown before it is stored.
            storage.set_holding(true);
            let call = {
                let (s, token, mv) = (s.clone(), token.clone(), mv.clone());
                tokio::spawn(async move { s.submit(s.role(&token), mv, ply, None).await })
            };
            while storage.held() == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            assert_eq!(
                seen(&s, &tokens),
                before,
                "{name}, ply {ply}: a waiting write"
            );
            storage.set_holding(false);
            let receipt = call.await.unwrap().unwrap();
            assert_eq!(receipt.report.ply, ply + 1, "{name}");
            assert_eq!(storage.moves(&id).len(), ply as usize + 1, "{name}");
            let event = w.next().await;
            assert!(
                matches!(&event, Ok(Some(WatchItem::Event(e))) if e.ply == ply + 1),
                "{name}: {event:?}"
            );
        }
        if name.starts_with("dots") && s.view(false).ply == 9 {
            assert!(s.finished(), "{name}: the move limit ends the game");
        }
        // What was stored is what was applied: the game recovered from
        // the store reads as the live one.
        let live = seen(&s, &tokens);
        drop((w, s, store));
        let again = SessionStore::with_storage(Limits::default(), storage.clone());
        again.recover().unwrap();
        let back = again.find(&id).await.unwrap();
        assert_eq!(seen(&back, &tokens), live, "{name}: recovered");
    }
}
