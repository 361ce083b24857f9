//! One suite, run against every backend that keeps data: what is written is
//! read back, finished games are not recovered, a bad write fails alone.

mod journal;
mod leases;
mod outbox;
mod postgres_backend;
mod postgres_journal;
mod sqlite_backend;

use std::collections::BTreeMap;

use super::postgres::Leased;
use super::reference::ReferenceStorage;
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
            // Lag compensation on: the round trips show it is stored.
            lag_max_per_move_ms: 250,
            lag_quota_ms: 5_000,
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
        // A latency ledger line of its own: the round trips show it is
        // stored (an estimate on odd plies only).
        lag: crate::service::storage::MoveLag {
            charged_ms: 100 - u64::from(ply % 7),
            compensated_ms: u64::from(ply % 7),
            lag_ms: (ply % 2 == 1).then(|| u64::from(ply) * 10),
        },
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
        // Moves 3 and 4 were played by a failure policy: every read back
        // must keep their marks.
        substituted: match ply {
            3 => Some("TIMEOUT".into()),
            4 => Some("ILLEGAL_MOVE:OCCUPIED".into()),
            _ => None,
        },
    }
}

fn end(id: &str, ply: u32) -> OutcomeRow {
    OutcomeRow {
        game_id: id.into(),
        status: "finished",
        winners: SeatSet::only(Seat::SECOND),
        scores: vec![3, 5],
        reason: "RESIGNATION".into(),
        ply,
        at_ms: 1_700_000_001_000,
        failure_ending: None,
    }
}

async fn suite(storage: &dyn Storage) {
    assert!(storage.recover().unwrap().is_empty());
    write_the_suite_games(storage).await;

    let games = storage.recover().unwrap();
    let ids: Vec<&str> = games.iter().map(|g| g.game.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "d"], "oldest first, finished game left out");
    assert_eq!(games[0].game, game("a"));
    assert_eq!(
        games[0].moves,
        (1..=3).map(|p| mv("a", p)).collect::<Vec<_>>()
    );
    assert_eq!(
        games[0].moves[2].substituted.as_deref(),
        Some("TIMEOUT"),
        "a move's substitution mark is kept with it"
    );
    assert_eq!(games[0].draw_offers, SeatSet::only(Seat::FIRST));
    assert_eq!(games[1].moves, vec![mv("b", 1), mv("b", 2)]);
    assert_eq!(games[1].draw_offers, SeatSet::EMPTY);
    // Three seats, their names and hashes, the seed and the third seat's
    // move and draw offer come back as written.
    assert_eq!(games[2].game, seeded("d"));
    assert_eq!(games[2].moves[0].seat, Seat::new(2).unwrap());
    assert_eq!(games[2].draw_offers, SeatSet::only(Seat::new(2).unwrap()));
    // Why a failure policy ended a game is stored with the end.
    storage
        .write(Write::End(OutcomeRow {
            failure_ending: Some("PAUSE_EXHAUSTED".into()),
            ..end("d", 1)
        }))
        .await
        .unwrap();
    let ended = storage.load("d").unwrap().expect("d").end.expect("ended");
    assert_eq!(ended.failure_ending.as_deref(), Some("PAUSE_EXHAUSTED"));

    storage.write(Write::End(end("a", 3))).await.unwrap();
    storage
        .write(Write::End(OutcomeRow {
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

/// The writes [`suite`] checks: games created, moved, offered a draw,
/// ended; a duplicate, a gap and a write after the end refused alone.
async fn write_the_suite_games(storage: &dyn Storage) {
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
}

/// Finished games read back one by one and by pages, and pruned by age.
async fn archive_suite(storage: &dyn Storage) {
    let first = write_the_archive(storage).await;
    let loaded = storage.load("p").unwrap().expect("stored");
    assert_eq!(loaded.game, first);
    assert_eq!(loaded.moves, vec![mv("p", 1), mv("p", 2)]);
    assert_eq!(loaded.end, Some(archive_end("p", 2, 10_000)));
    assert_eq!(storage.load("r").unwrap().unwrap().end, None);
    assert_eq!(
        storage.load("o").unwrap().unwrap().end.unwrap().status,
        "expired"
    );
    assert_eq!(storage.load("zz").unwrap(), None);

    list_the_archive(storage);

    let ids =
        |games: Vec<StoredGame>| -> Vec<String> { games.into_iter().map(|g| g.game.id).collect() };
    let all = ArchiveQuery {
        limit: 10,
        ..Default::default()
    };
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
        .write(Write::Create(first, vec![], None))
        .await
        .unwrap();
}

/// The games of [`archive_suite`], created out of order: `p`, `q`, `s`
/// finished, `r` in progress, `o` expired; returns `p` as created.
async fn write_the_archive(storage: &dyn Storage) -> GameRow {
    let at = |id: &str, created: i64, labels: &[(&str, &str)]| GameRow {
        created_at_ms: created,
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..game(id)
    };
    let ended = archive_end;
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
        .write(Write::End(OutcomeRow {
            status: "expired",
            reason: String::new(),
            winners: SeatSet::EMPTY,
            scores: Vec::new(),
            ..ended("o", 2, 5_000)
        }))
        .await
        .unwrap();

    rows[0].0.clone()
}

/// The ending of game `id` at `ply`, at `at_ms`.
fn archive_end(id: &str, ply: u32, at_ms: i64) -> OutcomeRow {
    OutcomeRow {
        at_ms,
        ..end(id, ply)
    }
}

/// The listings of [`archive_suite`]: by pages, by labels.
fn list_the_archive(storage: &dyn Storage) {
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
}

#[tokio::test]
async fn memory_rows_backend_passes_the_suite() {
    suite(&ReferenceStorage::new()).await;
    archive_suite(&ReferenceStorage::new()).await;
}

/// A fresh directory under the system's temp dir (removed by each test).
pub(crate) fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-storage-{}-{}",
        std::process::id(),
        crate::service::sessions::Token::random()
    ));
    assert!(!dir.exists());
    dir
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
    tournament_suite(&ReferenceStorage::new()).await;
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

pub(crate) use self::postgres_backend::{fresh_database, test_database_url};
