//! Crash tests of the durable store: the real binary as a child process,
//! several games played at once, SIGKILL at a random moment, a restart on
//! the same data directory. Every acknowledged move must be there, a move
//! in flight is either wholly there or wholly absent, retries of either are
//! answered, the old tokens still play, and the games can be finished.
//! Repeated with different seeds and sync settings. Also: a damaged
//! database is a clear startup error, and a full one refuses moves with
//! UNAVAILABLE while the game stays as it was.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::process::{self, Referee};
use common::{Client, Table, punct_of, rules, table_of};
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tonic::Code;

/// The binary on the data directory `dir`, with `extra` arguments.
fn serve(dir: &Path, extra: &[&str]) -> Command {
    let mut command = process::serve(&["--metrics-listen", "127.0.0.1:0", "--data-dir"]);
    command.arg(dir).args(extra);
    command
}

/// [`serve`], started and answering.
async fn start(dir: &Path, extra: &[&str]) -> Referee {
    Referee::start(&mut serve(dir, extra)).await
}

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-crash-{tag}-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What one game's player saw: acknowledged moves, and the move in flight
/// when the server died (if any).
#[derive(Debug, Default, Clone)]
struct Seen {
    acked: Vec<(String, String)>,
    in_flight: Option<(u32, pb::Move, String, String)>,
    /// The game ended before the kill (so it is not recovered).
    finished: bool,
}

fn note_of(m: &pb::Move) -> String {
    punct_of(m).notation.clone()
}

async fn create(client: &mut Client) -> Table {
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(ppb::Variant::Standard)),
            labels: BTreeMap::from([("suite".to_string(), "crash".to_string())])
                .into_iter()
                .collect(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    table_of(r.game.unwrap(), &r.seats)
}

/// Plays random legal moves until the server stops answering.
async fn play_until_killed(mut client: Client, table: Table, seed: u64, seen: Arc<Mutex<Seen>>) {
    let mut rng = StdRng::seed_from_u64(seed);
    loop {
        let Ok(legal) = client
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: table.id.clone(),
                ..Default::default()
            })
            .await
        else {
            return;
        };
        let legal = legal.into_inner();
        if legal.moves.is_empty() {
            return;
        }
        let ply = legal.ply;
        let mv = legal.moves[rng.random_range(0..legal.moves.len())].clone();
        let request_id = format!("{}-{ply}", table.id);
        let note = note_of(&mv);
        seen.lock().unwrap().in_flight = Some((ply, mv.clone(), note.clone(), request_id.clone()));
        let reply = client
            .submit_move(pb::SubmitMoveRequest {
                game_id: table.id.clone(),
                token: table.token_at(ply).to_string(),
                r#move: Some(mv),
                expected_ply: ply,
                request_id: request_id.clone(),
            })
            .await;
        match reply {
            Ok(r) => {
                let r = r.into_inner();
                assert_eq!(r.ply, ply + 1);
                let mut s = seen.lock().unwrap();
                s.acked.push((note, request_id));
                s.in_flight = None;
                if r.outcome.is_some() {
                    s.finished = true;
                    return;
                }
            }
            // The server died mid-call: the move stays "in flight".
            Err(_) => return,
        }
    }
}

async fn record_moves(client: &mut Client, id: &str) -> Vec<String> {
    let record = common::export_checked(client, id, "").await;
    let body = record.split_once("\n\n").map_or("", |(_, b)| b);
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// [`start`], its move journal folded past `fold_rows` moves when given
/// (docs/STORAGE.md, "The move journal").
async fn start_folding(dir: &Path, extra: &[&str], fold_rows: Option<&str>) -> Referee {
    let mut command = serve(dir, extra);
    if let Some(rows) = fold_rows {
        command.env("PUNCT_REFEREE_JOURNAL_FOLD_ROWS", rows);
    }
    Referee::start(&mut command).await
}

async fn one_crash(seed: u64, sync: &str, fold_rows: Option<&str>) {
    let dir = tempdir(sync);
    let referee = start_folding(&dir, &["--sync", sync], fold_rows).await;
    let mut client = referee.client().await;
    let mut games = Vec::new();
    for i in 0..6 {
        let table = create(&mut client).await;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let task = tokio::spawn(play_until_killed(
            referee.client().await,
            Table {
                id: table.id.clone(),
                white: table.white.clone(),
                black: table.black.clone(),
            },
            seed * 100 + i,
            seen.clone(),
        ));
        games.push((table, seen, task));
    }
    // The kill lands a random time after the first acknowledged move,
    // however long a loaded machine takes to make one: some moves are
    // played before it.
    until_first_ack(seed, || {
        games
            .iter()
            .any(|(_, seen, _)| !seen.lock().unwrap().acked.is_empty())
    })
    .await;
    let mut rng = StdRng::seed_from_u64(seed);
    tokio::time::sleep(Duration::from_millis(rng.random_range(150..600))).await;
    referee.kill();
    for (_, _, task) in &mut games {
        common::within(30, task).await.unwrap();
    }

    let referee = start_folding(&dir, &["--sync", sync], fold_rows).await;
    let mut client = referee.client().await;
    let mut total_acked = 0;
    for (table, seen, _) in &games {
        let seen = seen.lock().unwrap().clone();
        total_acked += seen.acked.len();
        if seen.finished {
            // Finished before the kill: stored as finished, not played
            // again, read back from the store as it ended.
            let game = common::get(&mut client, &table.id).await;
            assert_eq!(game.status, pb::GameStatus::Finished as i32, "seed {seed}");
            assert_eq!(game.ply as usize, seen.acked.len(), "seed {seed}");
            let db = rusqlite::Connection::open(dir.join("referee.sqlite3")).unwrap();
            let (status, ply): (String, u32) = db
                .query_row(
                    "SELECT status, ply FROM games WHERE id = ?1",
                    [&table.id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(
                (status.as_str(), ply as usize),
                ("finished", seen.acked.len())
            );
            continue;
        }
        let stored = record_moves(&mut client, &table.id).await;
        let acked: Vec<String> = seen.acked.iter().map(|(n, _)| n.clone()).collect();
        // Every acknowledged move is there, in order.
        assert_eq!(
            stored[..acked.len().min(stored.len())],
            acked[..],
            "seed {seed}"
        );
        assert!(
            stored.len() >= acked.len(),
            "seed {seed}: an acknowledged move was lost"
        );
        // At most the move in flight is there besides, and wholly.
        let extra = &stored[acked.len()..];
        match (&seen.in_flight, extra) {
            (_, []) => {}
            (Some((_, _, note, _)), [one]) => assert_eq!(one, note, "seed {seed}"),
            (other, extra) => panic!("seed {seed}: unexpected stored moves {extra:?} ({other:?})"),
        }
        let game = common::get(&mut client, &table.id).await;
        assert_eq!(
            game.ply as usize,
            stored.len(),
            "the state matches the record"
        );

        // Retries of the last acknowledged move are answered from the record.
        if let Some((note, request_id)) = seen.acked.last() {
            let ply = acked.len() as u32 - 1;
            let r = client
                .submit_move(pb::SubmitMoveRequest {
                    game_id: table.id.clone(),
                    token: table.token_at(ply).to_string(),
                    r#move: Some(common::notation(note)),
                    expected_ply: ply,
                    request_id: request_id.clone(),
                })
                .await
                .unwrap()
                .into_inner();
            assert!(r.replayed, "seed {seed}: retry after restart");
            assert_eq!(r.ply, ply + 1);
        }
        // The move in flight, retried: replayed if it was stored, played if not.
        if let Some((ply, mv, _, request_id)) = &seen.in_flight
            && game.status != pb::GameStatus::Finished as i32
        {
            let r = client
                .submit_move(pb::SubmitMoveRequest {
                    game_id: table.id.clone(),
                    token: table.token_at(*ply).to_string(),
                    r#move: Some(mv.clone()),
                    expected_ply: *ply,
                    request_id: request_id.clone(),
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(r.replayed, extra.len() == 1, "seed {seed}");
        }
        // The old tokens finish the game.
        let game = common::get(&mut client, &table.id).await;
        if game.status != pb::GameStatus::Finished as i32 {
            let loser = table.token_at(game.ply).to_string();
            client
                .resign(pb::ResignRequest {
                    game_id: table.id.clone(),
                    token: loser,
                })
                .await
                .unwrap();
            let over = common::get(&mut client, &table.id).await;
            assert_eq!(over.status, pb::GameStatus::Finished as i32);
        }
    }
    assert!(
        total_acked > 0,
        "seed {seed}: some moves were played before the kill"
    );
    referee.kill();
    // Finished games are not played again, but stay readable from the
    // store: every game is listed, finished.
    let referee = start_folding(&dir, &["--sync", sync], fold_rows).await;
    let mut client = referee.client().await;
    let live = client
        .list_games(pb::ListGamesRequest {
            status: pb::GameStatus::InProgress as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(live.games.is_empty(), "seed {seed}: {:?}", live.games.len());
    let all = client
        .list_games(pb::ListGamesRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.games.len(), games.len(), "seed {seed}");
    assert!(
        all.games
            .iter()
            .all(|g| g.status == pb::GameStatus::Finished as i32 && g.outcome.is_some()),
        "seed {seed}"
    );
    drop(referee);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_moves_survive_sigkill_at_random_points() {
    for (seed, sync) in [(1, "normal"), (2, "full"), (3, "off"), (4, "normal")] {
        one_crash(seed, sync, None).await;
    }
}

/// The same with the journal folded every two moves: the writer folds
/// after almost every batch, so the kill lands during folds as well as
/// appends (a fold is one transaction: its moves are in the journal or in
/// the games' tables, never both or neither).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_moves_survive_sigkill_during_journal_folds() {
    for (seed, sync) in [(5, "normal"), (6, "full"), (7, "off"), (8, "normal")] {
        one_crash(seed, sync, Some("2")).await;
    }
}

#[tokio::test]
async fn a_damaged_database_stops_the_start_with_a_clear_message() {
    let dir = tempdir("garbage");
    std::fs::write(dir.join("referee.sqlite3"), vec![0x5a; 10_000]).unwrap();
    let log = process::try_start(&mut serve(&dir, &[]))
        .map(|_| ())
        .unwrap_err();
    assert!(log.contains("not an SQLite database"), "{log}");
    assert!(log.contains("referee.sqlite3"), "{log}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_full_database_refuses_moves_with_unavailable_and_changes_nothing() {
    let dir = tempdir("full");
    let referee = start(&dir, &["--max-db-mib", "1"]).await;
    let mut client = referee.client().await;
    let mut tables = Vec::new();
    for _ in 0..8 {
        tables.push(create(&mut client).await);
    }
    // Fill the database with games until it refuses one.
    let mut refused = None;
    for _ in 0..20_000 {
        let r = client
            .create_game(pb::CreateGameRequest {
                labels: [("filler".to_string(), "x".repeat(200))]
                    .into_iter()
                    .collect(),
                ..Default::default()
            })
            .await;
        if let Err(status) = r {
            refused = Some(status);
            break;
        }
    }
    let refused = refused.expect("the 1 MiB cap is reached");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert!(refused.message().contains("full"), "{}", refused.message());
    // Moves are small: play, game after game, until one no longer fits.
    let mut refused_move = None;
    for attempt in 0..2000 {
        let table = &tables[attempt % tables.len()];
        let before = common::get(&mut client, &table.id).await;
        let legal = client
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: table.id.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let Some(mv) = legal
            .moves
            .get(attempt % 7)
            .or(legal.moves.first())
            .cloned()
        else {
            continue;
        };
        match common::submit(&mut client, table, before.ply, mv).await {
            Ok(_) => continue,
            Err(e) => {
                let mut after = common::get(&mut client, &table.id).await;
                // Presence times tick; everything else must be the same.
                let mut before = before;
                (before.presence, after.presence) = (None, None);
                assert!(after == before, "a refused move changed the game");
                refused_move = Some(e);
                break;
            }
        }
    }
    let e = refused_move.expect("a move is refused once the database is full");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(e.message().contains("not made"), "{}", e.message());
    let details = tonic_types::StatusExt::get_details_error_info(&e).expect("ErrorInfo");
    assert_eq!(details.reason, "STORAGE_UNAVAILABLE");
    drop(referee);
    let _ = std::fs::remove_dir_all(dir);
}

/// Waits until `acked` holds (some move of the run is acknowledged),
/// however long a loaded machine takes; 60 s at most.
pub(crate) async fn until_first_ack(seed: u64, acked: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !acked() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "seed {seed}: no move acknowledged in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
