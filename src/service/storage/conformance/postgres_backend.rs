//! The PostgreSQL backend: the suite, its schema, connections, listings
//! and sealing at rest (with a real server: [`test_database_url`]).

use super::*;

/// The PostgreSQL server the tests use: `PUNCT_REFEREE_TEST_DATABASE_URL`
/// (scripts/with-postgres.sh starts one and sets it). Without it the
/// PostgreSQL tests say so and pass, unless `PUNCT_REFEREE_REQUIRE_POSTGRES`
/// is set (scripts/test.sh sets it): then they fail.
pub(crate) fn test_database_url() -> Option<String> {
    match std::env::var("PUNCT_REFEREE_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("PUNCT_REFEREE_REQUIRE_POSTGRES").is_none(),
                "PUNCT_REFEREE_REQUIRE_POSTGRES is set but PUNCT_REFEREE_TEST_DATABASE_URL is not: \
                 run the tests under scripts/with-postgres.sh"
            );
            eprintln!(
                "PUNCT_REFEREE_TEST_DATABASE_URL is not set: PostgreSQL tests not run \
                 (run them with scripts/with-postgres.sh cargo test)"
            );
            None
        }
    }
}

/// A fresh, empty database on the test server (each test its own, so they
/// run in parallel), its URL. Blocking: made on a thread of its own, so it
/// may be called from any test, async or not.
pub(crate) fn fresh_database(server: &str) -> String {
    let name = format!(
        "punct_test_{}",
        crate::service::sessions::Token::random()
            .to_string()
            .to_ascii_lowercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "")
    );
    let url = server.to_string();
    let statement = format!("CREATE DATABASE {name}");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect to the test server");
            tokio::spawn(connection);
            client
                .batch_execute(&statement)
                .await
                .expect("create the test database");
        });
    })
    .join()
    .unwrap();
    postgres::with_database(server, &name)
}

pub(super) fn pg_options(url: &str) -> postgres::PostgresOptions {
    postgres::PostgresOptions {
        url: url.into(),
        pool_size: postgres::DEFAULT_POOL_SIZE,
        ..postgres::PostgresOptions::default()
    }
}

/// Opens the storage off the async workers (it blocks while it connects).
pub(super) async fn open_pg(url: &str) -> Result<postgres::PostgresStorage, StorageError> {
    let options = pg_options(url);
    tokio::task::spawn_blocking(move || postgres::PostgresStorage::open(&options))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_backend_passes_the_suite() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    suite(&s).await;
    drop(s);
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    archive_suite(&s).await;
    drop(s);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_keeps_games_across_a_reopen_and_groups_concurrent_writes() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    let commits: Vec<Commit> = (0..400)
        .map(|i| {
            let id = format!("g{i:03}");
            s.write(Write::Create(game(&id), vec![mv(&id, 1)], None))
        })
        .collect();
    for c in commits {
        c.await.unwrap();
    }
    let transactions = s.commits();
    assert!(
        transactions < 200,
        "400 queued writes took {transactions} transactions: no group commit"
    );
    s.write(Write::Move(mv("g007", 2), None)).await.unwrap();
    drop(s);
    // Reopened (the schema is already there): everything is back. (The
    // games share a creation time; writers of different games commit in
    // any order, so ties come back in commit order.)
    let again = open_pg(&url).await.unwrap();
    let games = again.recover().unwrap();
    let by_id: BTreeMap<&str, &StoredGame> =
        games.iter().map(|g| (g.game.id.as_str(), g)).collect();
    assert_eq!(games.len(), 400);
    assert_eq!(by_id.len(), 400);
    assert_eq!(by_id["g007"].moves, vec![mv("g007", 1), mv("g007", 2)]);
    assert_eq!(by_id["g008"].moves, vec![mv("g008", 1)]);
    assert_eq!(by_id["g399"].game, game("g399"));
    // A move written twice (a stale writer's copy) is refused, and the
    // stored game is unchanged.
    let twice = again.write(Write::Move(mv("g007", 2), None)).await;
    let e = twice.unwrap_err();
    assert!(
        e.message().contains("not stored in progress at ply 1"),
        "{e}"
    );
    // (A backend with leases answers that the copy must be reloaded.)
    assert!(
        matches!(e, StorageError::Conflict(_) | StorageError::Fenced(_)),
        "{e:?}"
    );
    assert_eq!(again.load("g007").unwrap().unwrap().moves.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_schema_is_made_once_by_replicas_starting_together_and_a_newer_one_is_refused() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let opens: Vec<_> = (0..3).map(|_| open_pg(&url)).collect();
    let mut stores = Vec::new();
    for open in opens {
        stores.push(open.await.unwrap());
    }
    // Each replica sees what another wrote.
    stores[0]
        .write(Write::Create(game("a"), vec![mv("a", 1)], None))
        .await
        .unwrap();
    assert_eq!(
        stores[2].load("a").unwrap().unwrap().moves,
        vec![mv("a", 1)]
    );
    drop(stores);

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let version: i64 = client
        .query_one("SELECT version FROM referee_schema", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, postgres::SCHEMA_VERSION);
    // The game's lease: its creator's node, the first epoch, given up
    // (expired) when the storage closed.
    let row = client
        .query_one(
            "SELECT owner, epoch, lease_expires_at <= now() FROM games WHERE id = 'a'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, Option<String>>(0),
        Some(postgres::default_node_id())
    );
    assert_eq!(row.get::<_, i64>(1), 1);
    assert!(row.get::<_, bool>(2));
    client
        .batch_execute("UPDATE referee_schema SET version = 99")
        .await
        .unwrap();
    let e = open_pg(&url).await.unwrap_err();
    assert!(e.message().contains("schema version 99"), "{e}");
    assert!(matches!(e, StorageError::Config(_)), "{e:?}");
    assert!(e.message().contains("newer punct-referee"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_database_is_a_clear_startup_error() {
    // A loopback port nobody listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = open_pg(&format!(
        "postgres://referee:hunter2@127.0.0.1:{port}/referee"
    ))
    .await
    .unwrap_err();
    assert!(
        e.message().contains(&format!("127.0.0.1:{port}/referee")),
        "{e}"
    );
    assert!(e.message().contains("is the database reachable?"), "{e}");
    assert!(!e.message().contains("hunter2"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_url_asking_for_tls_is_refused_at_start() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let sep = if url.contains('?') { '&' } else { '?' };
    let e = open_pg(&format!("{url}{sep}sslmode=require"))
        .await
        .unwrap_err();
    assert!(e.message().contains("TLS"), "{e}");
    // The same database without it opens.
    drop(open_pg(&url).await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_replaces_connections_the_server_closed() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    // Fill the pool: concurrent writes of several games, and reads.
    let commits: Vec<Commit> = (0..40)
        .map(|i| {
            let id = format!("g{i:02}");
            s.write(Write::Create(game(&id), vec![], None))
        })
        .collect();
    for c in commits {
        c.await.unwrap();
    }
    assert_eq!(s.recover().unwrap().len(), 40);
    // Every connection of the referee is cut by the server, as a restart of
    // PostgreSQL or a failover would.
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let cut: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(cut >= 1, "{cut} connections cut");
    // The next writes and reads, at once, go through on new connections.
    let commits: Vec<Commit> = (0..40)
        .map(|i| s.write(Write::Move(mv(&format!("g{i:02}"), 1), None)))
        .collect();
    for c in commits {
        c.await.unwrap();
    }
    assert_eq!(s.load("g07").unwrap().unwrap().moves, vec![mv("g07", 1)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_keeps_and_replaces_tournaments() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    tournament_suite(&s).await;
    drop(s);
    let again = open_pg(&url).await.unwrap();
    let rows = tokio::task::spawn_blocking(move || again.tournaments())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows.len(), 2, "kept across a reopen");
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_lists_games_in_progress_and_finished_in_one_order() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    assert!(s.shared());
    for (id, at) in [("g1", 3), ("g2", 1), ("g3", 2), ("g4", 2)] {
        let row = GameRow {
            created_at_ms: at,
            ..game(id)
        };
        s.write(Write::Create(row, vec![mv(id, 1)], None))
            .await
            .unwrap();
    }
    s.write(Write::End(end("g3", 1))).await.unwrap();
    s.write(Write::End(OutcomeRow {
        status: "expired",
        ..end("g4", 1)
    }))
    .await
    .unwrap();
    let ids = |games: Vec<StoredGame>| games.into_iter().map(|g| g.game.id).collect::<Vec<_>>();
    let query = ArchiveQuery {
        limit: 10,
        ..ArchiveQuery::default()
    };
    // Expired games are not listed; creation time, then id.
    assert_eq!(ids(s.list_games(&query, None).unwrap()), ["g2", "g3", "g1"]);
    assert_eq!(ids(s.list_games(&query, Some(true)).unwrap()), ["g3"]);
    assert_eq!(
        ids(s.list_games(&query, Some(false)).unwrap()),
        ["g2", "g1"]
    );
    let after = ArchiveQuery {
        after: Some(ListKey {
            created_at_ms: 2,
            id: "g3".into(),
        }),
        limit: 10,
        ..ArchiveQuery::default()
    };
    assert_eq!(ids(s.list_games(&after, None).unwrap()), ["g1"]);
    let other_label = ArchiveQuery {
        labels: BTreeMap::from([("event".into(), "league".into())]),
        limit: 10,
        ..ArchiveQuery::default()
    };
    assert!(s.list_games(&other_label, None).unwrap().is_empty());
    let first = s.list_games(&query, Some(false)).unwrap();
    assert_eq!(first[0].moves, vec![mv("g2", 1)]);
    // A store only this process writes lists none in progress.
    let memory = ReferenceStorage::new();
    assert!(!memory.shared());
    assert!(memory.list_games(&query, Some(false)).unwrap().is_empty());
}

/// Every row of the PostgreSQL tables that hold games and tournaments, as
/// text (bytes in hex, as `pg_dump` writes them).
async fn pg_dump(url: &str) -> Vec<u8> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut out = Vec::new();
    for table in ["games", "seats", "moves", "tournaments", "referee_secret"] {
        // (A table an older version had not made yet is skipped.)
        let rows = client
            .query(&format!("SELECT t::text FROM {table} t"), &[])
            .await
            .unwrap_or_default();
        for row in rows {
            out.extend(row.get::<_, String>(0).into_bytes());
            out.push(b'\n');
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_seals_seeds_migrates_plain_ones_and_refuses_another_secret() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let s = open_pg(&url).await.unwrap();
    let dumped = {
        let url = url.clone();
        move || {
            let url = url.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(pg_dump(&url))
            })
            .join()
            .unwrap()
        }
    };
    let seeds = sealing_suite(&s, &dumped).await;
    drop(s);
    // Another secret: refused, with the reason.
    let options = pg_options(&url);
    let e = tokio::task::spawn_blocking(move || {
        postgres::PostgresStorage::open_with_secret(&options, ServerSecret::random())
    })
    .await
    .unwrap()
    .unwrap_err();
    assert!(e.message().contains("does not match the database"), "{e}");
    // The database as a version 4 wrote it: plain seeds, plain tokens and
    // seeds in a tournament document, no key check, no `forfeits`.
    let token = crate::service::sessions::Token::random().to_string();
    let opening_seed = crate::games::hex(&random_seed());
    back_to_version_4(&url, &seeds[0], &token, &opening_seed).await;
    assert!(contains(&pg_dump(&url).await, token.as_bytes()));
    let secret = ServerSecret::random();
    let options = pg_options(&url);
    let with = secret.clone();
    let s = tokio::task::spawn_blocking(move || {
        postgres::PostgresStorage::open_with_secret(&options, with)
    })
    .await
    .unwrap()
    .unwrap();
    let s = std::sync::Arc::new(s);
    let reader = s.clone();
    let game = tokio::task::spawn_blocking(move || reader.load("sealed0"))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(game.game.setup.map(|s| s.seed), Some(seeds[0]));
    drop(s);
    let bytes = pg_dump(&url).await;
    assert!(!contains(&bytes, token.as_bytes()), "a plain token is left");
    assert!(
        !contains(&bytes, opening_seed.as_bytes()),
        "a plain seed is left"
    );
    assert!(!contains(&bytes, crate::games::hex(&seeds[0]).as_bytes()));
    assert!(contains(&bytes, secret.check_value().as_bytes()));
}

/// The database at `url` as a version 4 wrote it: game `sealed0` with its
/// plain `seed`, a tournament document with a plain `token` and opening
/// seed, no key check, no `forfeits`.
async fn back_to_version_4(url: &str, seed: &[u8; 32], token: &str, opening_seed: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "DROP TABLE referee_secret; DROP TABLE journal; ALTER TABLE games DROP COLUMN forfeits;
             UPDATE referee_schema SET version = 4;",
        )
        .await
        .unwrap();
    client
        .execute(
            "UPDATE games SET seed = $1 WHERE id = 'sealed0'",
            &[&seed.to_vec()],
        )
        .await
        .unwrap();
    let document = format!(
        r#"{{"id":"t1","openings":[{{"moves":[],"seed":"{opening_seed}"}}],"games":[{{"number":1,"state":{{"state":"playing","game_id":"g","tokens":["{token}"]}}}}]}}"#
    );
    client
        .execute(
            "INSERT INTO tournaments (id, status, document, created_at_ms, updated_at_ms)
             VALUES ('t1', 'running', $1, 1, 1)",
            &[&document],
        )
        .await
        .unwrap();
}
