//! Leases on PostgreSQL: fencing, heartbeats, takeovers of games and
//! tournaments, commits whose answer is lost.

use super::postgres_backend::{fresh_database, pg_options, test_database_url};
use super::*;

/// Opens the test database as replica `node` with a short lease.
async fn open_node(url: &str, node: &str) -> postgres::PostgresStorage {
    let options = postgres::PostgresOptions {
        node_id: node.into(),
        lease: std::time::Duration::from_millis(400),
        ..pg_options(url)
    };
    tokio::task::spawn_blocking(move || postgres::PostgresStorage::open(&options))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_fences_the_writes_of_an_owner_whose_lease_was_taken_over() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let a = open_node(&url, "node-a").await;
    let b = open_node(&url, "node-b").await;
    a.heartbeat("http://127.0.0.1:1").await.unwrap();
    b.heartbeat("http://127.0.0.1:2").await.unwrap();
    a.write(Write::Create(game("g"), vec![], None))
        .await
        .unwrap();
    a.write(Write::Move(mv("g", 1), None)).await.unwrap();
    assert!(a.holds("g") && !b.holds("g"));

    // While a's lease runs, b cannot take the game; the database names a
    // as the owner, at a's address.
    assert!(b.take_over("g").await.unwrap().is_none());
    let owner = b.ownership(Leased::Game, "g").await.unwrap().unwrap();
    assert_eq!(owner.owner.as_deref(), Some("node-a"));
    assert_eq!(owner.address.as_deref(), Some("http://127.0.0.1:1"));
    assert!(owner.live && owner.in_progress);
    // b holds no lease: its writes of the game are refused before the
    // database, as fenced.
    let e = b.write(Write::Move(mv("g", 2), None)).await.unwrap_err();
    assert!(e.is_fenced(), "{e}");

    // a stops renewing (paused); once its lease expires b takes over, with
    // the next epoch and the stored moves.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        b.orphans(Leased::Game, 10).await.unwrap(),
        vec!["g".to_string()]
    );
    let taken = b
        .take_over("g")
        .await
        .unwrap()
        .expect("an expired lease is taken");
    assert_eq!(taken.epoch, 2);
    assert_eq!(taken.game.moves, vec![mv("g", 1)]);
    assert!(
        a.take_over("g").await.unwrap().is_none(),
        "b's lease runs now"
    );

    // a's write of the next ply is refused (fenced, not a storage failure),
    // a forgets its lease, and nothing of it is stored; b's write is.
    let e = a.write(Write::Move(mv("g", 2), None)).await.unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert!(!a.holds("g"));
    let e = a.write(Write::End(end("g", 1))).await.unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert_eq!(a.load("g").unwrap().unwrap().moves, vec![mv("g", 1)]);
    b.write(Write::Move(mv("g", 2), None)).await.unwrap();
    assert_eq!(
        a.load("g").unwrap().unwrap().moves,
        vec![mv("g", 1), mv("g", 2)]
    );
    // a's heartbeat reports the game lost; b's renews it.
    assert!(a.heartbeat("http://127.0.0.1:1").await.unwrap().is_empty());
    assert!(b.heartbeat("http://127.0.0.1:2").await.unwrap().is_empty());
    assert!(b.leases_valid());
    assert_eq!(
        b.ownership(Leased::Game, "g")
            .await
            .unwrap()
            .unwrap()
            .owner
            .as_deref(),
        Some("node-b")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_heartbeat_reports_the_games_another_replica_took() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let a = open_node(&url, "node-a").await;
    let b = open_node(&url, "node-b").await;
    a.heartbeat("a:1").await.unwrap();
    a.write(Write::Create(game("g"), vec![], None))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!a.leases_valid(), "a paused past its lease knows it");
    b.take_over("g").await.unwrap().unwrap();
    assert_eq!(a.heartbeat("a:1").await.unwrap(), vec!["g".to_string()]);
    assert!(!a.holds("g"));
    assert!(a.leases_valid());
}

/// A TCP relay to `target` whose connections can all be cut at once (the
/// network failing under a replica).
async fn cuttable_relay(
    target: std::net::SocketAddr,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let handles = open.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let relay = tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
            handles.lock().unwrap().push(relay.abort_handle());
        }
    });
    (addr, open)
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_a_commit_whose_answer_is_lost_lists_its_game_to_be_read_back() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    // The same database through a relay that can be cut.
    let config: tokio_postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        _ => {
            eprintln!("the test server is not on TCP: test not run");
            return;
        }
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let target = tokio::net::lookup_host((host.as_str(), port))
        .await
        .unwrap()
        .next()
        .unwrap();
    let (relay, open) = cuttable_relay(target).await;
    let dbname = config.get_dbname().unwrap().to_string();
    let user = config.get_user().unwrap_or("postgres").to_string();
    let relayed_url = format!("postgres://{user}@127.0.0.1:{}/{dbname}", relay.port());
    let a = open_node(&relayed_url, "node-a").await;
    a.heartbeat("a:1").await.unwrap();
    a.write(Write::Create(game("g"), vec![], None))
        .await
        .unwrap();
    // Commits of moves take a second from now on (a deferred trigger on
    // the move journal, where a move that leaves its game in play goes, and
    // on `moves`), so the connection can be cut while one is under way.
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
             CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON moves
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();
             CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON journal
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();",
        )
        .await
        .unwrap();
    let commit = a.write(Write::Move(mv("g", 1), None));
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    for relay in open.lock().unwrap().drain(..) {
        relay.abort();
    }
    let e = commit.await.unwrap_err();
    // Not a failure to report (the move may be stored): the game is to be
    // read again, and is not held until then.
    assert!(e.is_fenced(), "{e}");
    assert!(
        !a.holds("g"),
        "the lease of a game of unknown state is dropped"
    );
    assert_eq!(a.take_uncertain(), vec!["g".to_string()]);
    assert!(a.take_uncertain().is_empty(), "listed once");
    // The server finished the commit: the move is stored. Read back (taken
    // over again by its owner), the game has it.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    admin
        .batch_execute("DROP TRIGGER slow_commit ON moves; DROP TRIGGER slow_commit ON journal")
        .await
        .unwrap();
    let taken = a.take_over("g").await.unwrap().expect("its own game");
    assert_eq!(taken.game.moves, vec![mv("g", 1)]);
    assert!(a.holds("g"));
}

/// A tournament's row as the tournaments module writes it: a JSON document
/// naming an entrant's key hash.
fn leased_tournament(id: &str, status: &str, key_sha256: &str) -> TournamentRow {
    TournamentRow {
        id: id.into(),
        status: status.into(),
        document: format!(
            "{{\"id\":\"{id}\",\"status\":\"{status}\",\"entrants\":[{{\"name\":\"e\",\"key_sha256\":\"{key_sha256}\"}}]}}"
        ),
        created_at_ms: 10,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_leases_tournaments_fences_their_writes_and_hands_them_over() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let a = open_node(&url, "node-a").await;
    let b = open_node(&url, "node-b").await;
    a.heartbeat("http://127.0.0.1:1").await.unwrap();
    b.heartbeat("http://127.0.0.1:2").await.unwrap();
    // Created under a's first lease.
    let row = leased_tournament("t1", "registering", "aa");
    a.write_leased(Write::Tournament(row.clone()), Some(1))
        .await
        .unwrap();
    let owner = b
        .ownership(Leased::Tournament, "t1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(owner.owner.as_deref(), Some("node-a"));
    assert_eq!(owner.address.as_deref(), Some("http://127.0.0.1:1"));
    assert!(owner.live && owner.in_progress);
    assert!(
        b.ownership(Leased::Tournament, "nope")
            .await
            .unwrap()
            .is_none()
    );
    // While a's lease runs nobody else takes it, or writes it.
    assert!(b.take_over_tournament("t1").await.unwrap().is_none());
    let e = b
        .write_leased(
            Write::Tournament(leased_tournament("t1", "running", "aa")),
            Some(1),
        )
        .await
        .unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert_eq!(
        a.renew_held(Leased::Tournament, vec![("t1".into(), 1)])
            .await
            .unwrap(),
        Vec::<String>::new()
    );

    let finished = hand_a_tournament_over(&a, &b, &row).await;
    resume_an_unowned_tournament_and_page(&a, &b, finished).await;
}

/// Once `a`'s lease of tournament `t1` (stored as `row`) expires, `b`
/// takes it over, `a`'s writes are fenced, and `b` ends it; returns it
/// as ended.
async fn hand_a_tournament_over(
    a: &postgres::PostgresStorage,
    b: &postgres::PostgresStorage,
    row: &TournamentRow,
) -> TournamentRow {
    // a stops renewing: once its lease expires b takes it, epoch 2, with
    // the stored document.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        b.orphans(Leased::Tournament, 10).await.unwrap(),
        vec!["t1".to_string()]
    );
    let (epoch, taken) = b.take_over_tournament("t1").await.unwrap().unwrap();
    assert_eq!((epoch, &taken), (2, row));
    assert!(
        a.take_over_tournament("t1").await.unwrap().is_none(),
        "b's lease runs"
    );
    // a's write is refused (fenced) and changes nothing; b's goes through.
    let e = a
        .write_leased(
            Write::Tournament(leased_tournament("t1", "running", "aa")),
            Some(1),
        )
        .await
        .unwrap_err();
    assert!(e.is_fenced(), "{e}");
    assert!(e.message().contains("tournament `t1`"), "{e}");
    assert_eq!(&b.tournament("t1").unwrap().unwrap(), row);
    let running = leased_tournament("t1", "running", "aa");
    b.write_leased(Write::Tournament(running.clone()), Some(2))
        .await
        .unwrap();
    // a's heartbeat finds it lost; b's renews it.
    assert_eq!(
        a.renew_held(Leased::Tournament, vec![("t1".into(), 1)])
            .await
            .unwrap(),
        vec!["t1".to_string()]
    );
    assert!(
        b.renew_held(Leased::Tournament, vec![("t1".into(), 2)])
            .await
            .unwrap()
            .is_empty()
    );
    // Ended by its owner: not lost, not an orphan, and any replica reads it.
    let finished = leased_tournament("t1", "finished", "aa");
    b.write_leased(Write::Tournament(finished.clone()), Some(2))
        .await
        .unwrap();
    assert!(
        b.renew_held(Leased::Tournament, vec![("t1".into(), 2)])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !b.ownership(Leased::Tournament, "t1")
            .await
            .unwrap()
            .unwrap()
            .in_progress
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(b.orphans(Leased::Tournament, 10).await.unwrap().is_empty());
    assert_eq!(a.tournament("t1").unwrap().unwrap(), finished);

    finished
}

/// A tournament without an owner (stored before schema 4) is resumed by
/// the first replica that starts; a key finds its tournament; pages.
async fn resume_an_unowned_tournament_and_page(
    a: &postgres::PostgresStorage,
    b: &postgres::PostgresStorage,
    finished: TournamentRow,
) {
    // A tournament without an owner (stored before schema 4) is resumed
    // by the first replica that starts; a key finds its tournament.
    a.write(Write::Tournament(leased_tournament("t2", "running", "bb")))
        .await
        .unwrap();
    let resumed = b.recover_tournaments().await.unwrap();
    assert_eq!(resumed.len(), 1);
    assert_eq!((resumed[0].0, resumed[0].1.id.as_str()), (1, "t2"));
    let found =
        |hash: &str| serde_json::json!({ "entrants": [{ "key_sha256": hash }] }).to_string();
    assert_eq!(
        a.tournament_containing(&found("bb"))
            .await
            .unwrap()
            .as_deref(),
        Some("t2")
    );
    assert!(
        a.tournament_containing(&found("cc"))
            .await
            .unwrap()
            .is_none()
    );
    // Pages by id, by status.
    let page = a.tournament_page("", None, 10).unwrap();
    assert_eq!(
        page.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["t1", "t2"]
    );
    let page = a.tournament_page("t1", None, 10).unwrap();
    assert_eq!(
        page.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["t2"]
    );
    let page = a.tournament_page("", Some("finished"), 10).unwrap();
    assert_eq!(page, vec![finished]);
}
