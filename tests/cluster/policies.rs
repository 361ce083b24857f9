//! A failure policy through a takeover (docs/POLICIES.md, "Restarts"): the
//! replica that takes a game over reads its policy and its substitution
//! marks from the database, shows them, and goes on acting under it; the
//! policy's ending is stored with the end and read back by any replica.

use super::*;

#[tokio::test]
async fn a_game_taken_over_keeps_its_policy_and_its_substitutions() {
    let Some(server) = test_database_url() else {
        return;
    };
    let _serial = SERIAL.lock().await;
    let url = fresh_database(&server, "punct_cluster_policy").await;
    let (mut owner, owner_addr) = spawn_leased(&url, "a", LEASE_MS);
    let (mut other, other_addr) = spawn_leased(&url, "b", LEASE_MS);
    let mut a = RefereeServiceClient::new(channel_to(owner_addr).await);
    let created = a
        .create_game(pb::CreateGameRequest {
            rules: Some(common::rules(ppb::Variant::Standard)),
            failure_policy: Some(pb::FailurePolicy {
                on_illegal_move: pb::FailureAction::Substitute as i32,
                max_substitutions: 2,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let policy = created.game.as_ref().unwrap().failure_policy;
    assert!(policy.is_some());
    let table = common::table_of(created.game.unwrap(), &created.seats);
    let occupied = || common::notation(common::CONNECTION_GAME[0]);
    common::submit(&mut a, &table, 0, occupied()).await.unwrap();
    // Black places on white's space: the owner plays for it (ply 2).
    let answer = common::submit(&mut a, &table, 1, occupied()).await.unwrap();
    assert!(answer.substituted);
    let before = common::get(&mut a, &table.id).await;
    assert_eq!(before.substitutions.len(), 1);

    // The owner dies; the other replica takes the game over.
    signal(&owner, "-KILL");
    let _ = owner.wait();
    let db = sql(&url).await;
    let killed = Instant::now();
    loop {
        let holder: String = db
            .query_one(
                "SELECT COALESCE(owner, '') FROM games WHERE id = $1",
                &[&table.id],
            )
            .await
            .unwrap()
            .get(0);
        if holder == "b" {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(60),
            "not taken over (owner `{holder}`)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut b = RefereeServiceClient::new(channel_to(other_addr).await);
    let after = common::get(&mut b, &table.id).await;
    assert_eq!(after.failure_policy, policy);
    assert_eq!(after.substitutions, before.substitutions);
    assert_eq!(after.labels, before.labels, "the stored policy is no label");
    // The new owner acts under it, counting the first substitution: one
    // more (ply 4), then black's third illegal move loses.
    let mv = b
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: table.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .moves
        .remove(0);
    common::submit(&mut b, &table, 2, mv).await.unwrap();
    let again = common::submit(&mut b, &table, 3, occupied()).await.unwrap();
    assert!(again.substituted);
    let g = common::get(&mut b, &table.id).await;
    let plies: Vec<u32> = g.substitutions.iter().map(|s| s.ply).collect();
    assert_eq!(plies, vec![2, 4]);
    let stored: Vec<(i64, Option<String>)> = db
        .query(
            // Folded or still in the move journal (docs/STORAGE.md).
            "SELECT ply, substituted FROM moves WHERE game_id = $1
             UNION ALL SELECT ply, substituted FROM journal WHERE game_id = $1 ORDER BY ply",
            &[&table.id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let marked: Vec<i64> = stored
        .iter()
        .filter(|(_, m)| m.as_deref().is_some_and(|m| m.starts_with("ILLEGAL_MOVE:")))
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(marked, vec![2, 4], "{stored:?}");
    // White moves; black's third illegal move is past its cap: the refusal
    // stands and black loses, the policy's ending stored with the end.
    let mv = b
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: table.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .moves
        .remove(0);
    common::submit(&mut b, &table, 4, mv).await.unwrap();
    common::submit(&mut b, &table, 5, occupied())
        .await
        .unwrap_err();
    let ended = common::get(&mut b, &table.id).await;
    assert_eq!(ended.outcome.unwrap().reason, "RESIGNATION");
    assert_eq!(ended.failure_ending, "SUBSTITUTION_CAP");
    let column: Option<String> = db
        .query_one(
            "SELECT failure_ending FROM games WHERE id = $1",
            &[&table.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(column.as_deref(), Some("SUBSTITUTION_CAP"));
    // Another replica reads the finished game back with it.
    let (mut third, third_addr) = spawn_leased(&url, "c", LEASE_MS);
    let mut c = RefereeServiceClient::new(channel_to(third_addr).await);
    let read_back = common::get(&mut c, &table.id).await;
    assert_eq!(read_back.failure_ending, "SUBSTITUTION_CAP");
    signal(&third, "-TERM");
    let _ = third.wait();
    signal(&other, "-TERM");
    let _ = other.wait();
}
