//! One suite, run against every backend that keeps data: what is written is
//! read back, finished games are not recovered, a bad write fails alone.

use std::collections::BTreeMap;

use super::memory::MemoryStorage;
use super::sqlite::{SqliteOptions, SqliteStorage, SyncMode};
use super::*;

fn game(id: &str) -> GameRow {
    GameRow {
        id: id.into(),
        game: "punct".into(),
        variant: "standard".into(),
        options: "game: punct\nvariant: standard\n".into(),
        seats: vec![seat("white", 1), seat("black", 2)],
        setup: None,
        clock: ClockRow {
            mode: "fischer",
            initial_ms: 60_000,
            increment_ms: 1_000,
            per_move_ms: 0,
            first_move_ms: Some(30_000),
        },
        labels: BTreeMap::from([("event".into(), "cup".into())]),
        // Not the default: the round trips show it is stored.
        forfeits: true,
        created_at_ms: 1_700_000_000_000,
    }
}

fn seat(name: &str, hash: u8) -> SeatRow {
    SeatRow {
        name: name.into(),
        token_sha256: [hash; 32],
    }
}

/// A game of three seats with a seed, kept private in the store.
fn seeded(id: &str) -> GameRow {
    GameRow {
        game: "trio".into(),
        seats: vec![seat("red", 7), seat("green", 8), seat("blue", 9)],
        setup: Some(Setup {
            seed: [0xab; 32],
            supplied: true,
        }),
        ..game(id)
    }
}

fn mv(id: &str, ply: u32) -> MoveRow {
    MoveRow {
        game_id: id.into(),
        ply,
        seat: if ply % 2 == 1 {
            Seat::FIRST
        } else {
            Seat::SECOND
        },
        notation: format!("N{ply}"),
        request_id: (ply == 2).then(|| "req-2".into()),
        clock_ms: u64::from(ply) * 100,
        played_at_ms: 1_700_000_000_000 + i64::from(ply),
        draw_offers: SeatSet::EMPTY,
    }
}

fn end(id: &str, ply: u32) -> EndRow {
    EndRow {
        game_id: id.into(),
        status: "finished",
        winners: SeatSet::only(Seat::SECOND),
        scores: vec![3, 5],
        reason: "RESIGNATION".into(),
        ply,
        at_ms: 1_700_000_001_000,
    }
}

async fn suite(storage: &dyn Storage) {
    assert!(storage.recover().unwrap().is_empty());
    storage
        .write(Write::Create(game("a"), vec![], None))
        .await
        .unwrap();
    storage
        .write(Write::Create(game("b"), vec![mv("b", 1)], None))
        .await
        .unwrap();
    storage
        .write(Write::Create(game("c"), vec![], None))
        .await
        .unwrap();
    storage
        .write(Write::Create(seeded("d"), vec![], None))
        .await
        .unwrap();
    storage
        .write(Write::Move(
            MoveRow {
                seat: Seat::new(2).unwrap(),
                draw_offers: SeatSet::only(Seat::new(2).unwrap()),
                ..mv("d", 1)
            },
            None,
        ))
        .await
        .unwrap();
    // Concurrent writes, queued together, all land.
    let commits: Vec<Commit> = (1..=3)
        .map(|p| storage.write(Write::Move(mv("a", p), None)))
        .collect();
    for c in commits {
        c.await.unwrap();
    }
    storage
        .write(Write::DrawOffer {
            game_id: "a".into(),
            seats: SeatSet::only(Seat::FIRST),
        })
        .await
        .unwrap();
    storage
        .write(Write::Move(mv("c", 1), Some(end("c", 1))))
        .await
        .unwrap();
    // A duplicate game and a gap in the plies fail, alone.
    let dup = storage.write(Write::Create(game("a"), vec![], None));
    let gap = storage.write(Write::Move(mv("b", 5), None));
    let fine = storage.write(Write::Move(mv("b", 2), None));
    assert!(dup.await.is_err());
    assert!(gap.await.is_err());
    fine.await.unwrap();
    // Finished games take no more writes.
    assert!(storage.write(Write::Move(mv("c", 2), None)).await.is_err());

    let games = storage.recover().unwrap();
    let ids: Vec<&str> = games.iter().map(|g| g.game.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "d"], "oldest first, finished game left out");
    assert_eq!(games[0].game, game("a"));
    assert_eq!(
        games[0].moves,
        (1..=3).map(|p| mv("a", p)).collect::<Vec<_>>()
    );
    assert_eq!(games[0].draw_offers, SeatSet::only(Seat::FIRST));
    assert_eq!(games[1].moves, vec![mv("b", 1), mv("b", 2)]);
    assert_eq!(games[1].draw_offers, SeatSet::EMPTY);
    // Three seats, their names and hashes, the seed and the third seat's
    // move and draw offer come back as written.
    assert_eq!(games[2].game, seeded("d"));
    assert_eq!(games[2].moves[0].seat, Seat::new(2).unwrap());
    assert_eq!(games[2].draw_offers, SeatSet::only(Seat::new(2).unwrap()));
    storage.write(Write::End(end("d", 1))).await.unwrap();

    storage.write(Write::End(end("a", 3))).await.unwrap();
    storage
        .write(Write::End(EndRow {
            status: "expired",
            reason: String::new(),
            winners: SeatSet::EMPTY,
            scores: Vec::new(),
            ..end("b", 2)
        }))
        .await
        .unwrap();
    assert!(storage.recover().unwrap().is_empty());
}

/// Finished games read back one by one and by pages, and pruned by age.
async fn archive_suite(storage: &dyn Storage) {
    let at = |id: &str, created: i64, labels: &[(&str, &str)]| GameRow {
        created_at_ms: created,
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..game(id)
    };
    let ended = |id: &str, ply: u32, at_ms: i64| EndRow {
        at_ms,
        ..end(id, ply)
    };
    // Created out of order; two share a creation time (the id breaks ties).
    let rows = [
        (
            at("p", 3_000, &[("event", "cup")]),
            2,
            Some(ended("p", 2, 10_000)),
        ),
        (
            at("q", 1_000, &[("event", "league")]),
            1,
            Some(ended("q", 1, 20_000)),
        ),
        (
            at("s", 2_000, &[("event", "cup"), ("round", "2")]),
            0,
            Some(ended("s", 0, 30_000)),
        ),
        (at("r", 2_000, &[("event", "cup")]), 1, None),
        (at("o", 500, &[("event", "cup")]), 2, None),
    ];
    for (row, plies, end) in &rows {
        let moves = (1..=*plies).map(|p| mv(&row.id, p)).collect();
        storage
            .write(Write::Create(row.clone(), moves, end.clone()))
            .await
            .unwrap();
    }
    // `o` expires, long ago; `r` stays in progress.
    storage
        .write(Write::End(EndRow {
            status: "expired",
            reason: String::new(),
            winners: SeatSet::EMPTY,
            scores: Vec::new(),
            ..ended("o", 2, 5_000)
        }))
        .await
        .unwrap();

    let loaded = storage.load("p").unwrap().expect("stored");
    assert_eq!(loaded.game, rows[0].0);
    assert_eq!(loaded.moves, vec![mv("p", 1), mv("p", 2)]);
    assert_eq!(loaded.end, Some(ended("p", 2, 10_000)));
    assert_eq!(storage.load("r").unwrap().unwrap().end, None);
    assert_eq!(
        storage.load("o").unwrap().unwrap().end.unwrap().status,
        "expired"
    );
    assert_eq!(storage.load("zz").unwrap(), None);

    let ids =
        |games: Vec<StoredGame>| -> Vec<String> { games.into_iter().map(|g| g.game.id).collect() };
    let all = ArchiveQuery {
        limit: 10,
        ..Default::default()
    };
    assert_eq!(
        ids(storage.list_finished(&all).unwrap()),
        ["q", "s", "p"],
        "finished only, by creation time"
    );
    let page = storage
        .list_finished(&ArchiveQuery {
            limit: 1,
            ..all.clone()
        })
        .unwrap();
    assert_eq!(ids(page.clone()), ["q"]);
    let next = ArchiveQuery {
        after: Some(page[0].key()),
        ..all.clone()
    };
    assert_eq!(ids(storage.list_finished(&next).unwrap()), ["s", "p"]);
    let cup = ArchiveQuery {
        labels: BTreeMap::from([("event".into(), "cup".into())]),
        ..all.clone()
    };
    assert_eq!(ids(storage.list_finished(&cup).unwrap()), ["s", "p"]);
    let round = ArchiveQuery {
        labels: BTreeMap::from([("event".into(), "cup".into()), ("round".into(), "2".into())]),
        ..all.clone()
    };
    assert_eq!(ids(storage.list_finished(&round).unwrap()), ["s"]);

    // Pruning takes exactly the games that left play before the time:
    // `o` (expired at 5 000) and `p` (finished at 10 000), not `q` (at
    // 20 000, the cut itself is kept) nor the game in progress.
    assert_eq!(storage.prune(20_000).unwrap(), 2);
    assert_eq!(storage.load("o").unwrap(), None);
    assert_eq!(storage.load("p").unwrap(), None);
    assert!(storage.load("q").unwrap().is_some());
    assert!(storage.load("r").unwrap().is_some());
    assert_eq!(ids(storage.list_finished(&all).unwrap()), ["q", "s"]);
    assert_eq!(storage.prune(20_000).unwrap(), 0);
    assert_eq!(ids(storage.recover().unwrap()), ["r"]);
    // A pruned id may be stored again.
    storage
        .write(Write::Create(rows[0].0.clone(), vec![], None))
        .await
        .unwrap();
}

#[tokio::test]
async fn memory_rows_backend_passes_the_suite() {
    suite(&MemoryStorage::new()).await;
    archive_suite(&MemoryStorage::new()).await;
}

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
                Some(EndRow {
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

/// A fresh directory under the system's temp dir (removed by each test).
pub(super) fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-storage-{}-{}",
        std::process::id(),
        crate::service::sessions::Token::random()
    ));
    assert!(!dir.exists());
    dir
}

/// The version-1 schema (two seats in columns of `games`), as an older
/// binary wrote it.
const SCHEMA_V1: &str = include_str!("testdata/schema_v1.sql");

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

fn pg_options(url: &str) -> postgres::PostgresOptions {
    postgres::PostgresOptions {
        url: url.into(),
        pool_size: postgres::DEFAULT_POOL_SIZE,
        ..postgres::PostgresOptions::default()
    }
}

/// Opens the storage off the async workers (it blocks while it connects).
async fn open_pg(url: &str) -> Result<postgres::PostgresStorage, StorageError> {
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

fn tournament(id: &str, status: &str, created_at_ms: i64) -> TournamentRow {
    TournamentRow {
        id: id.into(),
        status: status.into(),
        document: format!("{{\"id\":\"{id}\",\"status\":\"{status}\"}}"),
        created_at_ms,
    }
}

/// Tournament rows: inserted, replaced by id, listed oldest first.
async fn tournament_suite(storage: &dyn Storage) {
    assert!(storage.tournaments().unwrap().is_empty());
    for row in [
        tournament("t2", "registering", 20),
        tournament("t1", "registering", 10),
        tournament("t2", "running", 20),
    ] {
        storage.write(Write::Tournament(row)).await.unwrap();
    }
    assert_eq!(
        storage.tournaments().unwrap(),
        vec![
            tournament("t1", "registering", 10),
            tournament("t2", "running", 20)
        ]
    );
}

#[tokio::test]
async fn tournaments_are_kept_and_replaced_by_every_backend() {
    tournament_suite(&MemoryStorage::new()).await;
    let dir = tempdir();
    let options = SqliteOptions {
        dir: dir.clone(),
        sync: SyncMode::Normal,
        max_bytes: None,
    };
    let s = SqliteStorage::open(&options).unwrap();
    tournament_suite(&s).await;
    drop(s);
    let again = SqliteStorage::open(&options).unwrap();
    assert_eq!(
        again.tournaments().unwrap().len(),
        2,
        "kept across a reopen"
    );
    drop(again);
    let _ = std::fs::remove_dir_all(dir);
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
    let owner = b.ownership("g").await.unwrap().unwrap();
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
    assert_eq!(b.orphans(10).await.unwrap(), vec!["g".to_string()]);
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
        b.ownership("g").await.unwrap().unwrap().owner.as_deref(),
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
    // Commits of moves take a second from now on (a deferred trigger), so
    // the connection can be cut while one is under way.
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
             CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON moves
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
        .batch_execute("DROP TRIGGER slow_commit ON moves")
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
    let owner = b.tournament_ownership("t1").await.unwrap().unwrap();
    assert_eq!(owner.owner.as_deref(), Some("node-a"));
    assert_eq!(owner.address.as_deref(), Some("http://127.0.0.1:1"));
    assert!(owner.live && owner.in_progress);
    assert!(b.tournament_ownership("nope").await.unwrap().is_none());
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
        a.tournament_heartbeat(vec![("t1".into(), 1)])
            .await
            .unwrap(),
        Vec::<String>::new()
    );

    // a stops renewing: once its lease expires b takes it, epoch 2, with
    // the stored document.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        b.tournament_orphans(10).await.unwrap(),
        vec!["t1".to_string()]
    );
    let (epoch, taken) = b.take_over_tournament("t1").await.unwrap().unwrap();
    assert_eq!((epoch, &taken), (2, &row));
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
    assert_eq!(b.tournament("t1").unwrap().unwrap(), row);
    let running = leased_tournament("t1", "running", "aa");
    b.write_leased(Write::Tournament(running.clone()), Some(2))
        .await
        .unwrap();
    // a's heartbeat finds it lost; b's renews it.
    assert_eq!(
        a.tournament_heartbeat(vec![("t1".into(), 1)])
            .await
            .unwrap(),
        vec!["t1".to_string()]
    );
    assert!(
        b.tournament_heartbeat(vec![("t1".into(), 2)])
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
        b.tournament_heartbeat(vec![("t1".into(), 2)])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !b.tournament_ownership("t1")
            .await
            .unwrap()
            .unwrap()
            .in_progress
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(b.tournament_orphans(10).await.unwrap().is_empty());
    assert_eq!(a.tournament("t1").unwrap().unwrap(), finished);

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
    s.write(Write::End(EndRow {
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
    let memory = MemoryStorage::new();
    assert!(!memory.shared());
    assert!(memory.list_games(&query, Some(false)).unwrap().is_empty());
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A seed no test writes twice.
fn random_seed() -> [u8; 32] {
    rand::random()
}

/// Sealing, whatever the backend: a seeded game reads back with its seed,
/// while `dump` (every byte the backend keeps at rest) holds the seed
/// neither raw nor in hex, in progress or finished.
async fn sealing_suite(storage: &dyn Storage, dump: impl Fn() -> Vec<u8>) -> Vec<[u8; 32]> {
    let seeds = [random_seed(), random_seed()];
    for (i, seed) in seeds.iter().enumerate() {
        let id = format!("sealed{i}");
        let row = GameRow {
            setup: Some(Setup {
                seed: *seed,
                supplied: false,
            }),
            ..seeded(&id)
        };
        let ending = (i == 1).then(|| end(&id, 0));
        storage
            .write(Write::Create(row, vec![], ending))
            .await
            .unwrap();
    }
    let recovered = storage.recover().unwrap();
    let live = recovered.iter().find(|g| g.game.id == "sealed0").unwrap();
    assert_eq!(live.game.setup.map(|s| s.seed), Some(seeds[0]));
    let done = storage.load("sealed1").unwrap().unwrap();
    assert_eq!(done.game.setup.map(|s| s.seed), Some(seeds[1]));
    let bytes = dump();
    assert!(!bytes.is_empty());
    for seed in &seeds {
        assert!(!contains(&bytes, seed), "a raw seed is stored");
        let hex = crate::games::hex(seed);
        assert!(!contains(&bytes, hex.as_bytes()), "a hex seed is stored");
        assert!(
            !contains(&bytes, hex.to_ascii_uppercase().as_bytes()),
            "a hex seed is stored"
        );
    }
    seeds.to_vec()
}

/// Every file of `dir` but the secret file, concatenated.
fn files_of(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == secret::SECRET_FILE) || !path.is_file() {
            continue;
        }
        out.extend(std::fs::read(&path).unwrap());
    }
    out
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
    {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(
                "DROP TABLE referee_secret; ALTER TABLE games DROP COLUMN forfeits;
                 UPDATE referee_schema SET version = 4;",
            )
            .await
            .unwrap();
        client
            .execute(
                "UPDATE games SET seed = $1 WHERE id = 'sealed0'",
                &[&seeds[0].to_vec()],
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
