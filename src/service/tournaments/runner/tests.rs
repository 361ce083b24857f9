use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;

use super::super::{Connection, NewTournament, Push};
use super::*;
use crate::games::GameRules;
use crate::service::sessions::{ClockMode, Limits, TimeControl};
use crate::service::storage::postgres::{PostgresOptions, PostgresStorage};
use crate::service::storage::reference::ReferenceStorage;
use crate::service::storage::{Storage as _, conformance};

/// A store of replica `node` on the database at `url`.
async fn replica(url: &str, node: &str) -> Arc<SessionStore> {
    let options = PostgresOptions {
        url: url.into(),
        pool_size: 6,
        node_id: node.into(),
        lease: Duration::from_millis(400),
    };
    let storage = tokio::task::spawn_blocking(move || PostgresStorage::open(&options))
        .await
        .unwrap()
        .unwrap();
    Arc::new(SessionStore::with_storage(
        Limits::default(),
        Arc::new(storage),
    ))
}

/// The games of tournament `id` as its stored document has them.
fn stored_games(storage: &ReferenceStorage, id: &str) -> Vec<PairingStatus> {
    let row = storage
        .tournament(id)
        .unwrap()
        .expect("the tournament is stored");
    record::doc_of(&row, storage.secret())
        .unwrap()
        .games
        .into_iter()
        .map(|g| g.state)
        .collect()
}

/// A round robin of `a` and `b` (one game) on `storage`, started with
/// `a` connected, its runner's first write of the document held back
/// (see [`ReferenceStorage::set_holding_tournaments`]): the game is
/// created, the document naming it not stored yet. Returns the
/// tournaments, the tournament's id, `b`'s key and `a`'s stream.
async fn first_game_being_stored(
    storage: &Arc<ReferenceStorage>,
) -> (Arc<Tournaments>, String, String, Connection) {
    let sessions = Arc::new(SessionStore::with_storage(
        Limits::default(),
        storage.clone(),
    ));
    let ts = Tournaments::new(sessions, CancellationToken::new());
    let (view, keys) = ts
        .create(NewTournament {
            name: "durable seats".into(),
            rules: GameRules::default(),
            format: Format::RoundRobin,
            games_per_pairing: 1,
            time_control: TimeControl {
                lag: None,
                mode: ClockMode::PerMove {
                    per_move: Duration::from_secs(600),
                },
                first_move: None,
            },
            openings: Vec::new(),
            concurrency: 0,
            labels: BTreeMap::new(),
            open_registration: false,
            table_size: 0,
            sprt: None,
            setup_seed_base: None,
            entrants: vec!["a".into(), "b".into()],
            failure_policy: Default::default(),
        })
        .await
        .unwrap();
    let id = view.doc.id;
    let a = ts.connect(&keys[0].key, "").unwrap();
    ts.start(&id).await.unwrap();
    // One thread: the runner has not run yet. From now on its writes
    // of the document wait, as on a slow disk, until released.
    storage.set_holding_tournaments(true);
    for _ in 0..500 {
        if storage.held() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(storage.held(), 1, "the runner stores its first game");
    assert_eq!(stored_games(storage, &id), vec![PairingStatus::Pending]);
    (ts, id, keys[1].key.clone(), a)
}

/// The game each of `streams` is told of first (within 5 s).
async fn told(streams: [&mut Connection; 2]) -> Vec<String> {
    let mut told = Vec::new();
    for stream in streams {
        let pushed = tokio::time::timeout(Duration::from_secs(5), stream.pushes.recv())
            .await
            .expect("told once stored")
            .unwrap();
        let Push::Game(assigned) = pushed else {
            panic!("a game first");
        };
        told.push(assigned.game_id);
    }
    told
}

/// The id of the one game of tournament `id`, stored in progress.
fn stored_playing(storage: &ReferenceStorage, id: &str) -> String {
    let [PairingStatus::Playing { game_id, .. }] = &stored_games(storage, id)[..] else {
        panic!("the game is stored in progress");
    };
    game_id.clone()
}

/// An entrant is told its game only once the tournament's document
/// naming the game is stored: a restart before that would read the
/// game as still to start and start another in its place, and the seat
/// the entrant was given would be forgotten.
#[tokio::test]
async fn an_entrant_is_told_its_game_once_the_document_naming_it_is_stored() {
    let storage = Arc::new(ReferenceStorage::new());
    let (ts, id, b_key, mut a) = first_game_being_stored(&storage).await;
    // Nobody is told of the game yet: neither a connected entrant nor
    // one that connects now.
    assert!(
        a.pushes.try_recv().is_err(),
        "a seat given before the document naming its game is stored"
    );
    let mut b = ts.connect(&b_key, "").unwrap();
    assert!(
        b.pushes.try_recv().is_err(),
        "a connecting entrant given a game not stored yet"
    );
    // Stored: both are told, of the game the document names.
    storage.set_holding_tournaments(false);
    let game_id = told([&mut a, &mut b]).await;
    assert_eq!(game_id, vec![stored_playing(&storage, &id); 2]);
}

/// A write of the document naming a new game that fails is written
/// again; the entrants are told once it is stored.
#[tokio::test]
async fn a_new_game_whose_document_was_not_stored_is_stored_again_before_it_is_told() {
    let storage = Arc::new(ReferenceStorage::new());
    let (ts, id, b_key, mut a) = first_game_being_stored(&storage).await;
    storage.set_failing(true);
    storage.set_holding_tournaments(false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(stored_games(&storage, &id), vec![PairingStatus::Pending]);
    let mut b = ts.connect(&b_key, "").unwrap();
    assert!(a.pushes.try_recv().is_err(), "told of a game not stored");
    assert!(b.pushes.try_recv().is_err(), "told of a game not stored");
    storage.set_failing(false);
    let game_id = told([&mut a, &mut b]).await;
    assert_eq!(game_id, vec![stored_playing(&storage, &id); 2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_end_of_a_game_another_replica_holds_is_read_from_storage() {
    let Some(server) = conformance::test_database_url() else {
        return;
    };
    let url = conformance::fresh_database(&server);
    let owner = replica(&url, "owner").await;
    let runner = replica(&url, "runner").await;
    let poll = Some(Duration::from_millis(50));

    // Resigned on the replica holding it: the runner's replica, which
    // does not hold it, learns the resignation from storage.
    let (game, tokens) = owner
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    let id = game.id().to_string();
    let waiting = {
        let (runner, id) = (runner.clone(), id.clone());
        tokio::spawn(async move { wait_end(&runner, id, 2, poll).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "in progress elsewhere: waited for");
    assert!(!runner.holds(&id));
    let seat = game.role_of(&tokens[0].to_string(), false).unwrap();
    game.resign(seat).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the end is read within a few polls")
        .unwrap();
    assert_eq!(ended, record::done(id, 2, vec![1], "RESIGNATION".into(), 0));

    // Called off before any move: the seat that was to move (the
    // first) forfeits, as when the runner watches the game itself.
    let (game, tokens) = owner
        .create(GameRules::default(), BTreeMap::new())
        .await
        .unwrap();
    let id = game.id().to_string();
    let waiting = {
        let (runner, id) = (runner.clone(), id.clone());
        tokio::spawn(async move { wait_end(&runner, id, 2, poll).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seat = game.role_of(&tokens[1].to_string(), false).unwrap();
    game.abort(seat).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the end is read within a few polls")
        .unwrap();
    let forfeit = record::done(id.clone(), 2, vec![1], "FORFEIT".into(), 0);
    assert_eq!(ended, forfeit);
    // Whichever way the runner's replica reads it: from the stored
    // row too (the watch above may have read a copy of the session).
    assert_eq!(stored_end(&runner, &id, 2).await, Some(forfeit));
}
