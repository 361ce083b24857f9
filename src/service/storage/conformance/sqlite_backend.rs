//! The SQLite backend: its files, sync modes, checkpoints, migrations
//! and sealing at rest.

use super::*;

#[tokio::test]
async fn sqlite_keeps_finished_games_readable_and_prunes_them() {
    let dir = tempdir();
    let s = SqliteStorage::open(&SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    })
    .unwrap();
    archive_suite(&s).await;
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn pruning_many_games_goes_in_batches_and_takes_them_all() {
    let dir = tempdir();
    let s = SqliteStorage::open(&SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Off,
        max_bytes: None,
    })
    .unwrap();
    let commits: Vec<Commit> = (0..600)
        .map(|i| {
            let id = format!("g{i:03}");
            s.write(Write::Create(
                game(&id),
                vec![mv(&id, 1)],
                Some(OutcomeRow {
                    at_ms: i64::from(i),
                    ..end(&id, 1)
                }),
            ))
        })
        .collect();
    for c in commits {
        c.await.unwrap();
    }
    assert_eq!(s.prune(550).unwrap(), 550);
    let left = s
        .list_finished(&ArchiveQuery {
            limit: 1000,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(left.len(), 50);
    assert_eq!(left[0].game.id, "g550");
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

/// Commits one after another, as a busy server makes them, keep the log
/// bounded: the checkpointer has it start over (docs/STORAGE.md,
/// "Checkpoints"). Without that the log took every frame ever written
/// (here about 4 frames a commit: well over 200 MiB).
#[tokio::test]
async fn sqlite_checkpoints_keep_the_log_bounded_under_steady_writes() {
    let dir = tempdir();
    let s = SqliteStorage::open(&SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    })
    .unwrap();
    let wal = dir.join(format!("{}-wal", sqlite::DB_FILE));
    let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    let games = 64;
    for g in 0..games {
        s.write(Write::Create(game(&format!("g{g:02}")), vec![], None))
            .await
            .unwrap();
    }
    let (mut largest, mut written) = (0, 0u64);
    // Paced (about 2 s in all) so that the checkpointer, every 200 ms,
    // sees the log grow many times over.
    for ply in 1..=250u32 {
        for g in 0..games {
            s.write(Write::Move(mv(&format!("g{g:02}"), ply), None))
                .await
                .unwrap();
            written += 1;
        }
        largest = largest.max(wal_len());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(written, 16_000);
    let bound = 40 << 20;
    assert!(
        largest < bound,
        "the log reached {largest} bytes (bound {bound}) over {written} commits"
    );
    // Everything is there.
    assert_eq!(s.load("g63").unwrap().unwrap().moves.len(), 250);
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn sqlite_backend_passes_the_suite_in_every_sync_mode() {
    for sync in [SyncMode::Full, SyncMode::Normal, SyncMode::Off] {
        let dir = tempdir();
        let options = SqliteOptions {
            dir: dir.clone(),
            sync,
            max_bytes: None,
        };
        suite(&SqliteStorage::open(&options).unwrap()).await;
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn concurrent_writes_share_commits_even_with_full_sync() {
    let dir = tempdir();
    let s = SqliteStorage::open(&SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Full,
        max_bytes: None,
    })
    .unwrap();
    // 400 games' writes queued at once, as 400 concurrent calls would.
    let commits: Vec<Commit> = (0..400)
        .map(|i| {
            s.write(Write::Create(
                game(&format!("g{i:03}")),
                vec![mv(&format!("g{i:03}"), 1)],
                None,
            ))
        })
        .collect();
    for c in commits {
        c.await.unwrap();
    }
    assert_eq!(s.recover().unwrap().len(), 400);
    let transactions = s.commits();
    assert!(
        transactions < 100,
        "400 queued writes took {transactions} transactions: no group commit"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn sqlite_keeps_games_across_a_reopen_and_locks_its_directory() {
    let dir = tempdir();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    let first = SqliteStorage::open(&options).unwrap();
    first
        .write(Write::Create(game("a"), vec![mv("a", 1)], None))
        .await
        .unwrap();
    let second = SqliteStorage::open(&options).unwrap_err();
    assert!(
        second.message().contains("in use by another punct-referee"),
        "{second}"
    );
    drop(first);
    let again = SqliteStorage::open(&options).unwrap();
    let games = again.recover().unwrap();
    assert_eq!(games.len(), 1);
    assert_eq!(games[0].moves, vec![mv("a", 1)]);
    drop(again);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_garbage_or_truncated_file_is_a_clear_startup_error() {
    let dir = tempdir();
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join(sqlite::DB_FILE);
    std::fs::write(
        &db,
        b"this is not a database, just some words in a file....",
    )
    .unwrap();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    let e = SqliteStorage::open(&options).unwrap_err();
    assert!(e.message().contains("not an SQLite database"), "{e}");
    assert!(matches!(e, StorageError::Corrupt(_)), "{e:?}");
    assert!(e.message().contains(sqlite::DB_FILE), "{e}");

    // A real database cut in half.
    std::fs::remove_file(&db).unwrap();
    {
        let s = SqliteStorage::open(&options).unwrap();
        for i in 0..200 {
            s.write(Write::Create(
                game(&format!("g{i:03}")),
                (1..=5).map(|p| mv(&format!("g{i:03}"), p)).collect(),
                None,
            ))
            .await
            .unwrap();
        }
    }
    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 8192, "the database has several pages ({len} bytes)");
    let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    let e = SqliteStorage::open(&options).unwrap_err();
    assert!(
        e.message().contains("damaged") || e.message().contains("malformed"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_full_database_fails_writes_and_keeps_what_was_stored() {
    let dir = tempdir();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: Some(64 * 1024),
    };
    let s = SqliteStorage::open(&options).unwrap();
    let mut stored = 0;
    let mut failure = None;
    for i in 0..10_000 {
        match s
            .write(Write::Create(game(&format!("g{i:05}")), vec![], None))
            .await
        {
            Ok(()) => stored += 1,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let failure = failure.expect("the cap is reached");
    assert!(failure.message().contains("full"), "{failure}");
    assert!(stored > 10);
    assert_eq!(s.recover().unwrap().len(), stored);
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

/// The version-1 schema (two seats in columns of `games`), as an older
/// binary wrote it.
const SCHEMA_V1: &str = include_str!("../testdata/schema_v1.sql");

#[tokio::test]
async fn a_version_1_database_is_migrated_without_losing_anything() {
    let dir = tempdir();
    std::fs::create_dir_all(&dir).unwrap();
    {
        let conn = rusqlite::Connection::open(dir.join(sqlite::DB_FILE)).unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        let h = |b: u8| format!("{b:02x}").repeat(32);
        conn.execute_batch(&format!(
            "INSERT INTO games (id, game, variant, options, white_token_sha256,
                black_token_sha256, clock_mode, labels, status, ply, draw_offer,
                created_at_ms, updated_at_ms)
             VALUES ('a', 'punct', 'standard', 'game: punct', '{}', '{}', 'none', '{{}}',
                'in_progress', 2, 'black', 1, 1);
             INSERT INTO games (id, game, variant, options, white_token_sha256,
                black_token_sha256, clock_mode, labels, status, winner, reason, ply,
                created_at_ms, updated_at_ms)
             VALUES ('b', 'punct', 'standard', 'game: punct', '{}', '{}', 'none', '{{}}',
                'finished', 'white', 'RESIGNATION', 0, 1, 1);
             INSERT INTO moves VALUES ('a', 1, 'white', 'N1', NULL, 100, 1);
             INSERT INTO moves VALUES ('a', 2, 'black', 'N2', 'req-2', 200, 2);",
            h(1),
            h(2),
            h(3),
            h(4)
        ))
        .unwrap();
    }
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    let s = SqliteStorage::open(&options).unwrap();
    let games = s.recover().unwrap();
    assert_eq!(games.len(), 1);
    let a = &games[0];
    assert_eq!(a.game.seats, vec![seat("white", 1), seat("black", 2)]);
    assert_eq!(a.game.setup, None);
    assert_eq!(a.draw_offers, SeatSet::only(Seat::SECOND));
    let seats: Vec<Seat> = a.moves.iter().map(|m| m.seat).collect();
    assert_eq!(seats, [Seat::FIRST, Seat::SECOND]);
    assert_eq!(a.moves[1].request_id.as_deref(), Some("req-2"));
    // The migrated file takes new writes and reopens at the current version.
    s.write(Write::Move(mv("a", 3), None)).await.unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(dir.join(sqlite::DB_FILE)).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, sqlite::SCHEMA_VERSION);
    let winners: String = conn
        .query_row("SELECT winners FROM games WHERE id = 'b'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(winners, "1");
    drop(conn);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_version_2_database_gains_the_tournaments_table() {
    let dir = tempdir();
    std::fs::create_dir_all(&dir).unwrap();
    {
        let conn = rusqlite::Connection::open(dir.join(sqlite::DB_FILE)).unwrap();
        // A version-2 file as the previous binary made it, with one game.
        conn.execute_batch(sqlite::SCHEMA_2_FOR_TESTS).unwrap();
        conn.execute_batch(
            "INSERT INTO games (id, game, variant, options, clock_mode, labels, status, ply,
                created_at_ms, updated_at_ms)
             VALUES ('g', 'punct', 'standard', 'game: punct', 'none', '{}', 'in_progress', 0, 1, 1);",
        )
        .unwrap();
        let hash = "ab".repeat(32);
        conn.execute(
            "INSERT INTO seats VALUES ('g', 1, 'white', ?1), ('g', 2, 'black', ?1)",
            [&hash],
        )
        .unwrap();
    }
    let s = SqliteStorage::open(&SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    })
    .unwrap();
    assert_eq!(s.recover().unwrap().len(), 1, "the game is still there");
    tournament_suite(&s).await;
    drop(s);
    let conn = rusqlite::Connection::open(dir.join(sqlite::DB_FILE)).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, sqlite::SCHEMA_VERSION);
    drop(conn);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn sqlite_seals_seeds_and_refuses_another_secret() {
    let dir = tempdir();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    let s = SqliteStorage::open(&options).unwrap();
    let seeds = sealing_suite(&s, || files_of(&dir)).await;
    drop(s);
    assert!(!contains(
        &files_of(&dir),
        &crate::games::hex(&seeds[0]).into_bytes()
    ));
    // Another secret file: refused, with the reason.
    let other = dir.join("other.secret");
    let e = SqliteStorage::open_with_secret(&options, Some(&other)).unwrap_err();
    assert!(e.message().contains("does not match the database"), "{e}");
    assert!(e.message().contains("--secret-file"), "{e}");
    // The right one (the data directory's): the seeds come back.
    let again = SqliteStorage::open(&options).unwrap();
    let games = again.recover().unwrap();
    assert_eq!(games[0].game.setup.map(|s| s.seed), Some(seeds[0]));
    drop(again);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_version_3_database_gets_its_seeds_and_tournament_tokens_sealed_once() {
    let dir = tempdir();
    std::fs::create_dir_all(&dir).unwrap();
    let seed = random_seed();
    let token = crate::service::sessions::Token::random().to_string();
    let opening_seed = crate::games::hex(&random_seed());
    let base = 12_345_678_901_234_567_u64;
    let document = format!(
        r#"{{"id":"t1","openings":[{{"moves":[],"seed":"{opening_seed}"}}],"setup_seed_base":{base},"games":[{{"number":1,"state":{{"state":"playing","game_id":"g","tokens":["{token}"]}}}}]}}"#
    );
    {
        let conn = rusqlite::Connection::open(dir.join(sqlite::DB_FILE)).unwrap();
        conn.execute_batch(sqlite::SCHEMA_2_FOR_TESTS).unwrap();
        conn.execute_batch(
            "CREATE TABLE tournaments (id TEXT PRIMARY KEY, status TEXT NOT NULL,
                document TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL);
             PRAGMA user_version = 3;",
        )
        .unwrap();
        conn.execute(
            r#"INSERT INTO games (id, game, variant, options, clock_mode, labels, status, ply,
                created_at_ms, updated_at_ms, seed)
             VALUES ('g', 'punct', 'standard', 'game: punct', 'none', '{"tournament_id":"t1"}',
                'in_progress', 0, 1, 1, ?1)"#,
            [crate::games::hex(&seed)],
        )
        .unwrap();
        let hash = "ab".repeat(32);
        conn.execute(
            "INSERT INTO seats VALUES ('g', 1, 'white', ?1), ('g', 2, 'black', ?1)",
            [&hash],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO tournaments VALUES ('t1', 'running', ?1, 1, 1)",
            [&document],
        )
        .unwrap();
    }
    assert!(contains(&files_of(&dir), token.as_bytes()));
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    for _ in 0..2 {
        // Twice: the second start finds it sealed and seals nothing again.
        let s = SqliteStorage::open(&options).unwrap();
        let games = s.recover().unwrap();
        assert_eq!(games[0].game.setup.map(|s| s.seed), Some(seed));
        assert!(games[0].game.forfeits, "a tournament's game, by its label");
        let stored = s.tournaments().unwrap().remove(0).document;
        let mut opened: serde_json::Value = serde_json::from_str(&stored).unwrap();
        s.secret().unseal_document_seeds(&mut opened).unwrap();
        assert_eq!(opened["openings"][0]["seed"], opening_seed.as_str());
        assert_eq!(opened["setup_seed_base"], base);
        let v: serde_json::Value = serde_json::from_str(&stored).unwrap();
        let sealed = v["games"][0]["state"]["sealed_tokens"][0].as_str().unwrap();
        let back = s
            .secret()
            .seal_token("t1", "g", 0, &secret::parse_token(sealed).unwrap());
        assert_eq!(crate::games::hex(&back), token);
        drop(s);
        let bytes = files_of(&dir);
        assert!(!contains(&bytes, token.as_bytes()), "a plain token is left");
        assert!(
            !contains(&bytes, opening_seed.as_bytes()),
            "a plain seed is left"
        );
        assert!(!contains(&bytes, base.to_string().as_bytes()));
        assert!(!contains(&bytes, crate::games::hex(&seed).as_bytes()));
        assert!(!contains(&bytes, &seed));
    }
    let _ = std::fs::remove_dir_all(dir);
}
