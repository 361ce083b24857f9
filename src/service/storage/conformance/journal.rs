//! The move journal (docs/STORAGE.md, "The move journal"): moves that leave
//! their game in play are kept in an append-only journal and folded later;
//! every read sees them either way, a move out of turn is refused as
//! before, and an ending or a draw offer folds its game first. One suite
//! for every backend (the reference rows keep no journal and must agree),
//! SQLite folding never, after every batch and on its own schedule; and a
//! database copied while the writer runs (as a crash leaves it) recovers
//! the journaled moves.

use std::time::Duration;

use super::super::sqlite::FoldPolicy;
use super::*;

/// `moves` as every backend reads them back (a move's own draw offer is
/// not kept with it: the game's standing offer is).
fn plain(moves: &[MoveRow]) -> Vec<MoveRow> {
    moves
        .iter()
        .map(|m| MoveRow {
            draw_offers: SeatSet::EMPTY,
            ..m.clone()
        })
        .collect()
}

/// The first `plies` moves of game `j`, as read back.
fn expect(plies: u32) -> Vec<MoveRow> {
    (1..=plies)
        .map(|p| MoveRow {
            draw_offers: SeatSet::EMPTY,
            ..mv("j", p)
        })
        .collect()
}

/// Whether `e` refuses a move out of turn: a conflict, or on a store with
/// leases (PostgreSQL) the fenced error that has the replica read its copy
/// again, for the same reason.
fn out_of_turn(e: &StorageError) -> bool {
    matches!(e, StorageError::Conflict(_))
        || (e.is_fenced() && e.message().contains("is not stored in progress at ply"))
}

/// Writes game `j` and plays it with draw offers in between, checking
/// what each read sees.
pub(super) async fn journal_suite(storage: &dyn Storage) {
    journaled_moves_are_read_back(storage).await;
    changes_after_journaled_moves(storage).await;
}

/// Game `j`'s first five moves, a draw offer with two of them: every read
/// sees them; moves out of turn are refused.
async fn journaled_moves_are_read_back(storage: &dyn Storage) {
    storage
        .write(Write::Create(game("j"), Vec::new(), None))
        .await
        .unwrap();
    let offered = |id: &str, ply: u32, seats: SeatSet| MoveRow {
        draw_offers: seats,
        ..mv(id, ply)
    };
    for ply in 1..=4 {
        let seats = if ply == 3 {
            SeatSet::only(Seat::FIRST)
        } else {
            SeatSet::EMPTY
        };
        storage
            .write(Write::Move(offered("j", ply, seats), None))
            .await
            .unwrap();
    }
    storage
        .write(Write::Move(
            offered("j", 5, SeatSet::only(Seat::SECOND)),
            None,
        ))
        .await
        .unwrap();
    let recovered = storage.recover().unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(plain(&recovered[0].moves), expect(5));
    assert_eq!(recovered[0].draw_offers, SeatSet::only(Seat::SECOND));
    let loaded = storage.load("j").unwrap().unwrap();
    assert_eq!(loaded, recovered[0]);

    // Out of turn: a ply taken, a ply skipped. Nothing changes.
    for ply in [5, 7] {
        let e = storage
            .write(Write::Move(mv("j", ply), None))
            .await
            .unwrap_err();
        assert!(out_of_turn(&e), "ply {ply}: {e:?}");
    }
    assert_eq!(plain(&storage.recover().unwrap()[0].moves), expect(5));
}

/// A draw offer, more moves and the end of game `j`; game `k` expires.
async fn changes_after_journaled_moves(storage: &dyn Storage) {
    // A draw offer after journaled moves, then more moves.
    storage
        .write(Write::DrawOffer {
            game_id: "j".into(),
            seats: SeatSet::only(Seat::FIRST),
        })
        .await
        .unwrap();
    let now = storage.load("j").unwrap().unwrap();
    assert_eq!(plain(&now.moves), expect(5));
    assert_eq!(now.draw_offers, SeatSet::only(Seat::FIRST));
    for ply in 6..=7 {
        storage
            .write(Write::Move(mv("j", ply), None))
            .await
            .unwrap();
    }
    let now = storage.load("j").unwrap().unwrap();
    assert_eq!(plain(&now.moves), expect(7));
    assert_eq!(now.draw_offers, SeatSet::EMPTY);

    // The move that ends the game: every move stored, the game finished
    // and no longer recovered; a move after it refused.
    storage
        .write(Write::Move(mv("j", 8), Some(end("j", 8))))
        .await
        .unwrap();
    assert!(storage.recover().unwrap().is_empty());
    let done = storage.load("j").unwrap().unwrap();
    assert_eq!(plain(&done.moves), expect(8));
    assert_eq!(done.end, Some(end("j", 8)));
    let e = storage
        .write(Write::Move(mv("j", 9), None))
        .await
        .unwrap_err();
    assert!(out_of_turn(&e), "{e:?}");
    let listed = storage
        .list_finished(&ArchiveQuery {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed, vec![done]);

    // A game that expires with journaled moves keeps them.
    storage
        .write(Write::Create(game("k"), Vec::new(), None))
        .await
        .unwrap();
    storage.write(Write::Move(mv("k", 1), None)).await.unwrap();
    storage
        .write(Write::End(OutcomeRow {
            status: "expired",
            reason: String::new(),
            winners: SeatSet::EMPTY,
            scores: Vec::new(),
            ..end("k", 1)
        }))
        .await
        .unwrap();
    assert_eq!(storage.load("k").unwrap().unwrap().moves, vec![mv("k", 1)]);
}

fn options(dir: &std::path::Path) -> SqliteOptions {
    SqliteOptions {
        dir: dir.to_path_buf(),
        sync: SyncMode::Normal,
        max_bytes: None,
    }
}

/// A journal that folds only when told to (or at game end and stop).
pub(super) fn never() -> FoldPolicy {
    FoldPolicy {
        rows: usize::MAX,
        per_game: 0,
        idle: Duration::from_secs(3600),
    }
}

/// The fold schedules every backend's journal suite runs under: never,
/// after every move, and after three moves or an idle millisecond.
pub(super) fn fold_schedules() -> [FoldPolicy; 3] {
    [
        never(),
        FoldPolicy {
            rows: 1,
            per_game: 0,
            idle: Duration::from_secs(3600),
        },
        FoldPolicy {
            rows: 3,
            per_game: 0,
            idle: Duration::from_millis(1),
        },
    ]
}

/// Rows of a table, read on a connection of the test's own.
fn count(dir: &std::path::Path, table: &str) -> i64 {
    let db = rusqlite::Connection::open(dir.join(super::super::sqlite::DB_FILE)).unwrap();
    db.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn every_backend_reads_journaled_moves_and_refuses_moves_out_of_turn() {
    journal_suite(&ReferenceStorage::new()).await;
    for policy in fold_schedules() {
        let dir = tempdir();
        let s = SqliteStorage::open_folding(&options(&dir), None, policy).unwrap();
        journal_suite(&s).await;
        drop(s);
        // A clean stop leaves the journal folded.
        assert_eq!(count(&dir, "journal"), 0, "{policy:?}");
        assert_eq!(count(&dir, "moves"), 9, "{policy:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn sqlite_moves_wait_in_the_journal_and_are_folded_past_its_size() {
    let dir = tempdir();
    let s = SqliteStorage::open_folding(
        &options(&dir),
        None,
        FoldPolicy {
            rows: 4,
            per_game: 0,
            idle: Duration::from_secs(3600),
        },
    )
    .unwrap();
    s.write(Write::Create(game("a"), Vec::new(), None))
        .await
        .unwrap();
    for ply in 1..=3 {
        s.write(Write::Move(mv("a", ply), None)).await.unwrap();
    }
    // Appended, not folded: the game's rows are as created.
    assert_eq!((count(&dir, "journal"), count(&dir, "moves")), (3, 0));
    let db = rusqlite::Connection::open(dir.join(super::super::sqlite::DB_FILE)).unwrap();
    let ply: i64 = db
        .query_row("SELECT ply FROM games WHERE id = 'a'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ply, 0, "the game's row is not written per move");
    s.write(Write::Move(mv("a", 4), None)).await.unwrap();
    // The fourth move makes a fold, right after its batch.
    let folded = || count(&dir, "journal") == 0 && count(&dir, "moves") == 4;
    for _ in 0..200 {
        if folded() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(folded());
    let ply: i64 = db
        .query_row("SELECT ply FROM games WHERE id = 'a'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ply, 4);
    assert_eq!(
        s.load("a").unwrap().unwrap().moves,
        (1..=4).map(|p| mv("a", p)).collect::<Vec<_>>()
    );
    drop((db, s));
    let _ = std::fs::remove_dir_all(dir);
}

/// The files copied while the writer holds moves in the journal are what a
/// SIGKILL would leave: a start on them recovers every move, and goes on
/// from there (its writer reads the journal back and checks plies with it).
#[tokio::test]
async fn sqlite_recovers_journaled_moves_from_files_left_as_a_crash_leaves_them() {
    let dir = tempdir();
    let s = SqliteStorage::open_folding(&options(&dir), None, never()).unwrap();
    for id in ["a", "b"] {
        s.write(Write::Create(game(id), vec![mv(id, 1)], None))
            .await
            .unwrap();
    }
    for ply in 2..=5 {
        for id in ["a", "b"] {
            s.write(Write::Move(mv(id, ply), None)).await.unwrap();
        }
    }
    let copy = tempdir();
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        // The lock is the running server's; the shared-memory index is
        // rebuilt from the log by the next start, as after a crash.
        let name_text = name.to_string_lossy();
        if name_text != super::super::sqlite::LOCK_FILE && !name_text.ends_with("-shm") {
            std::fs::copy(entry.path(), copy.join(name)).unwrap();
        }
    }
    assert_eq!(count(&copy, "journal"), 8);
    let again = SqliteStorage::open_folding(&options(&copy), None, never()).unwrap();
    let games = again.recover().unwrap();
    assert_eq!(games.len(), 2);
    for g in &games {
        let id = g.game.id.as_str();
        assert_eq!(g.moves, (1..=5).map(|p| mv(id, p)).collect::<Vec<_>>());
    }
    // The journal read back still refuses a ply taken, and takes the next.
    let e = again
        .write(Write::Move(mv("a", 5), None))
        .await
        .unwrap_err();
    assert!(matches!(e, StorageError::Conflict(_)), "{e:?}");
    again.write(Write::Move(mv("a", 6), None)).await.unwrap();
    again
        .write(Write::Move(mv("b", 6), Some(end("b", 6))))
        .await
        .unwrap();
    let b = again.load("b").unwrap().unwrap();
    assert_eq!(b.moves.len(), 6);
    assert_eq!(b.end, Some(end("b", 6)));
    drop(again);
    assert_eq!((count(&copy, "journal"), count(&copy, "moves")), (0, 12));
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(copy);
}

/// A version-5 database (no journal) gains the journal table at start;
/// nothing else changes.
#[tokio::test]
async fn a_version_5_database_gains_the_journal() {
    let dir = tempdir();
    let s = SqliteStorage::open_folding(&options(&dir), None, never()).unwrap();
    s.write(Write::Create(game("a"), vec![mv("a", 1)], None))
        .await
        .unwrap();
    drop(s);
    {
        let db = rusqlite::Connection::open(dir.join(super::super::sqlite::DB_FILE)).unwrap();
        db.execute_batch("DROP TABLE journal; PRAGMA user_version = 5;")
            .unwrap();
    }
    let s = SqliteStorage::open_folding(&options(&dir), None, never()).unwrap();
    let version: i64 = rusqlite::Connection::open(dir.join(super::super::sqlite::DB_FILE))
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, super::super::sqlite::SCHEMA_VERSION);
    assert_eq!(s.recover().unwrap()[0].moves, vec![mv("a", 1)]);
    s.write(Write::Move(mv("a", 2), None)).await.unwrap();
    assert_eq!(s.recover().unwrap()[0].moves.len(), 2);
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

/// CPU time (user + system) of this process's threads named `name`, from
/// `/proc/self/task/*/stat`.
fn thread_cpu(name: &str) -> Duration {
    let tick = 100.0; // USER_HZ on Linux
    let mut total = 0.0;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        total += (ticks(11) + ticks(12)) / tick;
    }
    Duration::from_secs_f64(total)
}

/// What the storage threads spend per move, with and without the journal,
/// when many games move at once (the writer groups their moves into
/// commits as under `load`): a measurement, not a test. Run by hand
/// (docs/BENCHMARKS.md, "The move journal"):
/// `cargo test --profile ci --lib storage_cpu_per_move -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, run by hand"]
fn storage_cpu_per_move() {
    use std::sync::Arc;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for games in [16usize, 256, 4096] {
        for (name, rows, per_game) in [
            ("moves and games rows", 0, 0),
            ("journal", super::super::sqlite::FOLD_ROWS, 0),
            (
                "journal, per game",
                super::super::sqlite::FOLD_ROWS,
                super::super::sqlite::FOLD_PER_GAME,
            ),
        ] {
            let dir = tempdir();
            let policy = FoldPolicy {
                rows,
                per_game,
                idle: super::super::sqlite::FOLD_IDLE,
            };
            let s = Arc::new(SqliteStorage::open_folding(&options(&dir), None, policy).unwrap());
            let plies = (60_000 / games).clamp(8, 400) as u32;
            rt.block_on(async {
                for g in 0..games {
                    s.write(Write::Create(game(&format!("g{g}")), Vec::new(), None))
                        .await
                        .unwrap();
                }
            });
            let cpu = || thread_cpu("storage-writer") + thread_cpu("storage-checkpo");
            let (before, commits, started) = (cpu(), s.commits(), std::time::Instant::now());
            rt.block_on(async {
                let tasks: Vec<_> = (0..games)
                    .map(|g| {
                        let s = s.clone();
                        tokio::spawn(async move {
                            let id = format!("g{g}");
                            for ply in 1..=plies {
                                s.write(Write::Move(mv(&id, ply), None)).await.unwrap();
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.unwrap();
                }
            });
            let took = started.elapsed();
            // The last fold: the writer idles, then folds.
            std::thread::sleep(super::super::sqlite::FOLD_IDLE + Duration::from_millis(300));
            let moves = games as f64 * f64::from(plies);
            let spent = cpu() - before;
            println!(
                "{games:>5} games, {name:>20}: {:6.2} µs of storage CPU per move, \
                 {:6.1} moves per commit, {:8.0} moves/s",
                spent.as_secs_f64() * 1e6 / moves,
                moves / (s.commits() - commits) as f64,
                moves / took.as_secs_f64()
            );
            drop(s);
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Reads while the writer folds on its own schedule: every read sees a
/// game whole, its row and its moves from one snapshot (a read whose
/// statements straddled a fold saw the row before it and the moves after,
/// and refused the game as corrupt).
#[tokio::test]
async fn sqlite_reads_see_a_game_whole_while_the_writer_folds() {
    let dir = tempdir();
    let policy = FoldPolicy {
        rows: 2,
        per_game: 0,
        idle: Duration::from_millis(1),
    };
    let s = std::sync::Arc::new(SqliteStorage::open_folding(&options(&dir), None, policy).unwrap());
    s.write(Write::Create(game("j"), Vec::new(), None))
        .await
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (s, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let game = s.load("j").unwrap().unwrap();
                assert!(game.moves.len() <= 60);
                reads += 1;
            }
            reads
        })
    };
    for ply in 1..=60 {
        s.write(Write::Move(mv("j", ply), None)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("every read saw the game whole");
    assert!(reads > 0);
    assert_eq!(s.load("j").unwrap().unwrap().moves.len(), 60);
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}
