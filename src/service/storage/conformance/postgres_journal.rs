//! The move journal on PostgreSQL (docs/STORAGE.md, "The move journal"):
//! the journal suite folding never, after every batch and on its own
//! schedule; journaled moves read back by a restart that did not fold
//! them; and fencing: an owner appending moves while another replica takes
//! its game over gets no move acknowledged that the new owner does not see.

use std::time::Duration;

use super::super::sqlite::FoldPolicy;
use super::journal::{fold_schedules, journal_suite, never};
use super::postgres_backend::{fresh_database, pg_options, test_database_url};
use super::*;

/// Opens the test database as replica `node` (lease `lease`), folding as
/// `policy` says.
async fn open(
    url: &str,
    node: &str,
    lease: Duration,
    policy: FoldPolicy,
) -> postgres::PostgresStorage {
    let options = postgres::PostgresOptions {
        node_id: node.into(),
        lease,
        ..pg_options(url)
    };
    tokio::task::spawn_blocking(move || {
        postgres::PostgresStorage::open_folding(&options, ServerSecret::ephemeral().clone(), policy)
    })
    .await
    .unwrap()
    .unwrap()
}

/// One number `sql` reads, on a connection of the test's own.
async fn number(url: &str, sql: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_reads_journaled_moves_folds_them_and_refuses_moves_out_of_turn() {
    let Some(server) = test_database_url() else {
        return;
    };
    for policy in fold_schedules() {
        let url = fresh_database(&server);
        let s = open(&url, "node-a", Duration::from_secs(10), policy).await;
        journal_suite(&s).await;
        drop(s);
        // A clean stop leaves the journal folded.
        assert_eq!(number(&url, "SELECT count(*) FROM journal").await, 0);
        assert_eq!(number(&url, "SELECT count(*) FROM moves").await, 9);
    }
}

/// Moves wait in the journal, not in their games' rows; a second start on
/// the database (as after a kill: the first never folded) reads them, folds
/// them and fences the first; the game goes on from there.
#[tokio::test(flavor = "multi_thread")]
async fn postgres_journaled_moves_survive_a_restart_that_did_not_fold_them() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let lease = Duration::from_secs(10);
    let first = open(&url, "node-a", lease, never()).await;
    for id in ["a", "b"] {
        first
            .write(Write::Create(game(id), vec![mv(id, 1)], None))
            .await
            .unwrap();
    }
    for ply in 2..=5 {
        for id in ["a", "b"] {
            first.write(Write::Move(mv(id, ply), None)).await.unwrap();
        }
    }
    assert_eq!(number(&url, "SELECT count(*) FROM journal").await, 8);
    assert_eq!(number(&url, "SELECT count(*) FROM moves").await, 2);
    assert_eq!(number(&url, "SELECT max(ply) FROM games").await, 1);
    let before = first.load("a").unwrap().unwrap();
    assert_eq!(
        before.moves,
        (1..=5).map(|p| mv("a", p)).collect::<Vec<_>>()
    );

    let second = open(&url, "node-a", lease, never()).await;
    assert_eq!(number(&url, "SELECT count(*) FROM journal").await, 0);
    assert_eq!(number(&url, "SELECT count(*) FROM moves").await, 10);
    let games = second.recover().unwrap();
    assert_eq!(games.len(), 2);
    assert_eq!(games[0], before);
    // The first start's lease is gone: its move is fenced, nothing stored.
    let e = first
        .write(Write::Move(mv("a", 6), None))
        .await
        .unwrap_err();
    assert!(e.is_fenced(), "{e}");
    second.write(Write::Move(mv("a", 6), None)).await.unwrap();
    assert_eq!(number(&url, "SELECT count(*) FROM journal").await, 1);
    second
        .write(Write::Move(mv("b", 6), Some(end("b", 6))))
        .await
        .unwrap();
    let b = second.load("b").unwrap().unwrap();
    assert_eq!(b.moves, (1..=6).map(|p| mv("b", p)).collect::<Vec<_>>());
    assert_eq!(b.end, Some(end("b", 6)));
    assert_eq!(
        second.load("a").unwrap().unwrap().moves,
        (1..=6).map(|p| mv("a", p)).collect::<Vec<_>>()
    );
    drop(second);
    assert_eq!(number(&url, "SELECT count(*) FROM journal").await, 0);
    assert_eq!(number(&url, "SELECT count(*) FROM moves").await, 12);
    drop(first);
}

/// An owner appends moves as fast as it can while another replica takes
/// its game over: every move the owner got acknowledged is in the game the
/// new owner read, and none after.
#[tokio::test(flavor = "multi_thread")]
async fn postgres_a_takeover_sees_every_journaled_move_acknowledged_to_the_old_owner() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server);
    let lease = Duration::from_millis(400);
    let policy = FoldPolicy {
        rows: 7,
        per_game: 0,
        idle: Duration::from_millis(50),
    };
    let a = std::sync::Arc::new(open(&url, "node-a", lease, policy).await);
    let b = open(&url, "node-b", lease, policy).await;
    a.write(Write::Create(game("g"), vec![], None))
        .await
        .unwrap();
    let mover = {
        let a = a.clone();
        tokio::spawn(async move {
            let mut acked = 0;
            loop {
                match a.write(Write::Move(mv("g", acked + 1), None)).await {
                    Ok(()) => acked += 1,
                    Err(e) => return (acked, e),
                }
            }
        })
    };
    // a never renews its registration: its lease runs out while it moves.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut taken = None;
    for _ in 0..200 {
        taken = b.take_over("g").await.unwrap();
        if taken.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let taken = taken.expect("the expired lease is taken");
    let (acked, e) = mover.await.unwrap();
    assert!(e.is_fenced(), "{e}");
    assert!(acked > 0, "moves were acknowledged before the takeover");
    assert_eq!(
        taken.game.moves,
        (1..=acked).map(|p| mv("g", p)).collect::<Vec<_>>()
    );
    b.write(Write::Move(mv("g", acked + 1), None))
        .await
        .unwrap();
    assert_eq!(b.load("g").unwrap().unwrap().moves.len() as u32, acked + 1);
}
