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
        token_hashes: [[1; 32], [2; 32]],
        clock: ClockRow {
            mode: "fischer",
            initial_ms: 60_000,
            increment_ms: 1_000,
            per_move_ms: 0,
            first_move_ms: Some(30_000),
        },
        labels: BTreeMap::from([("event".into(), "cup".into())]),
        created_at_ms: 1_700_000_000_000,
    }
}

fn mv(id: &str, ply: u32) -> MoveRow {
    MoveRow {
        game_id: id.into(),
        ply,
        seat: if ply % 2 == 1 {
            Seat::White
        } else {
            Seat::Black
        },
        notation: format!("N{ply}"),
        request_id: (ply == 2).then(|| "req-2".into()),
        clock_ms: u64::from(ply) * 100,
        played_at_ms: 1_700_000_000_000 + i64::from(ply),
        draw_offer: None,
    }
}

fn end(id: &str, ply: u32) -> EndRow {
    EndRow {
        game_id: id.into(),
        status: "finished",
        winner: Some(Seat::Black),
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
            seat: Some(Seat::White),
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
    assert_eq!(ids, ["a", "b"], "oldest first, finished game left out");
    assert_eq!(games[0].game, game("a"));
    assert_eq!(
        games[0].moves,
        (1..=3).map(|p| mv("a", p)).collect::<Vec<_>>()
    );
    assert_eq!(games[0].draw_offer, Some(Seat::White));
    assert_eq!(games[1].moves, vec![mv("b", 1), mv("b", 2)]);
    assert_eq!(games[1].draw_offer, None);

    storage.write(Write::End(end("a", 3))).await.unwrap();
    storage
        .write(Write::End(EndRow {
            status: "expired",
            reason: String::new(),
            winner: None,
            ..end("b", 2)
        }))
        .await
        .unwrap();
    assert!(storage.recover().unwrap().is_empty());
}

#[tokio::test]
async fn memory_rows_backend_passes_the_suite() {
    suite(&MemoryStorage::new()).await;
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
        second.0.contains("in use by another punct-referee"),
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
    assert!(e.0.contains("not an SQLite database"), "{e}");
    assert!(e.0.contains(sqlite::DB_FILE), "{e}");

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
    assert!(e.0.contains("damaged") || e.0.contains("malformed"), "{e}");
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
    assert!(failure.0.contains("full"), "{failure}");
    assert!(stored > 10);
    assert_eq!(s.recover().unwrap().len(), stored);
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

/// A fresh directory under the system's temp dir (removed by each test).
fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-storage-{}-{}",
        std::process::id(),
        crate::service::sessions::Token::random()
    ));
    assert!(!dir.exists());
    dir
}
