//! A tournament's seeds (its openings' and its `setup_seed_base`) are the
//! secret deals of its games: only commitments are shown until it is over
//! and none of its games runs (docs/TOURNAMENTS.md, "Seeds").

use super::*;
use punct_referee::games::hex;
use punct_referee::service::tournaments::{game_seed, opening_game_seed};
use sha2::Digest as _;

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

fn punto_rules() -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players: 2,
            rounds_to_win: Some(1),
            ..Default::default()
        })),
    }
}

/// The tournament once some game of it has been created.
async fn with_a_game(t: &mut Tournaments, id: &str) -> pb::Tournament {
    for _ in 0..100 {
        let now = get(t, id).await;
        if now.games.iter().any(|g| !g.game_id.is_empty()) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no game of the tournament was created");
}

async fn game_setup(server: &TestServer, id: &str) -> pb::Setup {
    let mut c = server.client().await;
    c.get_game(pb::GetGameRequest {
        game_id: id.to_string(),
        ..Default::default()
    })
    .await
    .unwrap()
    .into_inner()
    .game
    .unwrap()
    .setup
    .expect("a seeded game's setup")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_base_is_shown_only_as_commitments_until_the_tournament_is_over() {
    let server = TestServer::start_with_http(common::test_options(), None).await;
    let http = server.http.unwrap();
    let mut t = TournamentServiceClient::new(server.channel().await);
    let base = 4242;
    let mut s = spec(punto_rules(), pb::TournamentFormat::RoundRobin, 2);
    s.setup_seed_base = Some(base);
    let (created, keys) = create(&mut t, s, &["greedy", "r1"]).await;
    let spec_back = created.spec.clone().unwrap();
    assert_eq!(spec_back.setup_seed_base, None, "not even to its creator");
    assert!(spec_back.setup_seeded);
    let id = created.tournament_id.clone();
    start(&mut t, &id).await;

    // While games run: the games' commitments, no seed and no base, over
    // gRPC and HTTP.
    let running = with_a_game(&mut t, &id).await;
    assert_eq!(running.status, pb::TournamentStatus::Running as i32);
    let seeds: Vec<String> = running
        .games
        .iter()
        .map(|g| hex(&game_seed(base, g.number)))
        .collect();
    let shown = format!("{running:?}");
    let (status, body) = http_get(http, &format!("/api/tournaments/{id}")).await;
    assert_eq!(status, 200);
    let (_, list) = http_get(http, "/api/tournaments").await;
    for seed in &seeds {
        assert!(!shown.contains(seed.as_str()), "a game's seed over gRPC");
        assert!(!body.contains(seed.as_str()), "a game's seed over HTTP");
        assert!(!list.contains(seed.as_str()), "a game's seed in the list");
    }
    assert_eq!(running.spec.as_ref().unwrap().setup_seed_base, None);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(json["setup_seed_base"].is_null(), "{json}");
    assert_eq!(json["setup_seeded"], true);
    for (g, shown) in running.games.iter().zip(json["games"].as_array().unwrap()) {
        let seed = game_seed(base, g.number);
        assert_eq!(g.seed_commitment, sha256_hex(&seed));
        assert_eq!(shown["seed_commitment"], g.seed_commitment.as_str());
        if !g.game_id.is_empty() {
            let setup = game_setup(&server, &g.game_id).await;
            assert_eq!(setup.commitment, g.seed_commitment, "the game's own");
            assert!(setup.supplied, "the tournament supplied its seed");
            assert_eq!(setup.seed, "");
        }
    }

    // Over: the base, and every game's seed matching its commitment.
    play_all(&server, &keys, &[bot("greedy", 1), bot("r1", 2)]).await;
    let done = get(&mut t, &id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert_eq!(done.spec.as_ref().unwrap().setup_seed_base, Some(base));
    for g in &done.games {
        let setup = game_setup(&server, &g.game_id).await;
        assert_eq!(setup.seed, hex(&game_seed(base, g.number)));
        assert_eq!(
            sha256_hex(&game_seed(base, g.number)),
            g.seed_commitment,
            "the seed matches the commitment shown before"
        );
    }
    let (_, body) = http_get(http, &format!("/api/tournaments/{id}")).await;
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["setup_seed_base"], base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opening_seed_stays_a_commitment_while_a_game_dealt_from_it_may_run() {
    let server = TestServer::start_with_http(common::test_options(), None).await;
    let http = server.http.unwrap();
    let mut t = TournamentServiceClient::new(server.channel().await);
    let seed = [0x5e; 32];
    let mut s = spec(punto_rules(), pb::TournamentFormat::RoundRobin, 2);
    s.openings = vec![pb::Opening {
        seed: hex(&seed),
        ..Default::default()
    }];
    let (created, _keys) = create(&mut t, s, &["greedy", "r1"]).await;
    let opening = &created.spec.as_ref().unwrap().openings[0];
    assert_eq!(opening.seed, "");
    assert_eq!(opening.seed_commitment, sha256_hex(&seed));
    let id = created.tournament_id.clone();
    start(&mut t, &id).await;
    let running = with_a_game(&mut t, &id).await;
    // Each game is dealt its own seed from the opening's: the games'
    // commitments differ, and none is the opening's.
    let mut commitments = std::collections::BTreeSet::new();
    for g in &running.games {
        let own = opening_game_seed(&seed, g.number);
        assert_eq!(g.seed_commitment, sha256_hex(&own), "game {}", g.number);
        assert_ne!(g.seed_commitment, sha256_hex(&seed));
        commitments.insert(g.seed_commitment.clone());
    }
    assert_eq!(commitments.len(), running.games.len(), "one deal per game");
    let (_, body) = http_get(http, &format!("/api/tournaments/{id}")).await;
    assert!(!body.contains(&hex(&seed)), "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["opening_seeds"][0]["commitment"], sha256_hex(&seed));
    assert!(json["opening_seeds"][0]["seed"].is_null());
    // Cancelled with a game created (nobody connected): that game may still
    // be played out, so the seed stays secret.
    let cancelled = t
        .cancel_tournament(pb::CancelTournamentRequest {
            tournament_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .tournament
        .unwrap();
    assert_eq!(cancelled.status, pb::TournamentStatus::Cancelled as i32);
    let after = get(&mut t, &id).await;
    for shown in [format!("{cancelled:?}"), format!("{after:?}")] {
        assert!(!shown.contains(&hex(&seed)), "{shown}");
    }
    assert_eq!(
        after.spec.unwrap().openings[0].seed_commitment,
        sha256_hex(&seed)
    );
    let (_, body) = http_get(http, &format!("/api/tournaments/{id}")).await;
    assert!(!body.contains(&hex(&seed)), "{body}");
}

/// A game of a Punto opening that ends reveals its own deal only: the
/// opening's seed, from which every game of it is dealt, stays a
/// commitment until the tournament is over, and no finished game's seed or
/// record is another game's deal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_game_of_an_opening_reveals_nothing_of_the_other_games() {
    let server = TestServer::start_with_http(common::test_options(), None).await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let seed: [u8; 32] = rand::random();
    let mut s = spec(punto_rules(), pb::TournamentFormat::RoundRobin, 2);
    s.concurrency = 1;
    s.openings = vec![pb::Opening {
        seed: hex(&seed),
        ..Default::default()
    }];
    let (created, keys) = create(&mut t, s, &["greedy", "r1"]).await;
    let id = created.tournament_id.clone();
    start(&mut t, &id).await;
    play_all(&server, &keys, &[bot("greedy", 1), bot("r1", 2)]).await;
    let done = get(&mut t, &id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert_eq!(done.games.len(), 2);
    let mut c = server.client().await;
    let mut dealt = Vec::new();
    for g in &done.games {
        let setup = game_setup(&server, &g.game_id).await;
        let own = opening_game_seed(&seed, g.number);
        assert_eq!(setup.seed, hex(&own), "game {}: its own deal", g.number);
        assert_eq!(sha256_hex(&own), g.seed_commitment);
        let record = common::export_checked(&mut c, &g.game_id, "").await;
        assert!(
            !record.contains(&hex(&seed)),
            "the opening's seed: {record}"
        );
        dealt.push(own);
    }
    assert_ne!(dealt[0], dealt[1], "no game is dealt like another");
    for g in &done.games {
        let record = common::export_checked(&mut c, &g.game_id, "").await;
        for other in dealt
            .iter()
            .filter(|d| **d != opening_game_seed(&seed, g.number))
        {
            assert!(!record.contains(&hex(other)), "another game's deal");
        }
    }
    // Over: the opening's seed itself.
    assert_eq!(done.spec.unwrap().openings[0].seed, hex(&seed));
}

/// Moves after a Punto opening's deal would fit one deal only; every game
/// of the opening is dealt its own, so such an opening is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_punto_opening_with_moves_is_refused() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(punto_rules(), pb::TournamentFormat::RoundRobin, 2);
    s.openings = vec![pb::Opening {
        seed: hex(&[7; 32]),
        moves: vec![pb::Move {
            game: Some(pb::r#move::Game::Punto(Box::new(tpb::Move {
                notation: "0,0".into(),
                ..Default::default()
            }))),
        }],
        ..Default::default()
    }];
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(s),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("spec.openings[0].moves"), "{e:?}");
    assert!(e.message().contains("dealt its own"), "{e:?}");
    assert_eq!(
        t.list_tournaments(pb::ListTournamentsRequest::default())
            .await
            .unwrap()
            .into_inner()
            .tournaments
            .len(),
        0,
        "nothing created"
    );
}
