//! Tournaments held by the referee, through the real server
//! (docs/TOURNAMENTS.md): entrants connect with their keys and play over
//! gRPC; the schedule, standings, absent entrants, reconnections, restarts,
//! the SPRT and every refusal.

use crate::common;
#[path = "tournament_service/seeds.rs"]
mod seeds;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use common::TestServer;
use http_body::Frame;
use http_body_util::{BodyExt as _, Full, StreamBody};
use punct_referee::service::grpc::pb::dots::v1 as dpb;
use punct_referee::service::grpc::pb::punto::v1 as tpb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
use punct_referee::service::{ServerOptions, StorageConfig};
use punct_referee::tools::tournament::entrant::{EntrantBot, SeatReport, play_entrant};
use tokio_stream::StreamExt as _;
use tonic::Code;
use tonic::body::Body;
use tonic::transport::Channel;
use tonic_types::StatusExt as _;

type Tournaments = TournamentServiceClient<Channel>;

#[path = "tournament_service/at_rest.rs"]
mod at_rest;
#[path = "tournament_service/kit_failures.rs"]
mod kit_failures;

/// Dots on a small board: quick games for the built-in bots.
fn dots_rules() -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width: 8,
            height: 8,
            ..Default::default()
        })),
    }
}

fn clock(move_ms: u64) -> pb::TimeControl {
    pb::TimeControl {
        lag_compensation: None,
        mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
            move_ms,
        })),
        first_move_deadline_ms: None,
    }
}

fn spec(rules: pb::GameRules, format: pb::TournamentFormat, games: u32) -> pb::TournamentSpec {
    pb::TournamentSpec {
        name: "test".into(),
        rules: Some(rules),
        format: format as i32,
        games_per_pairing: games,
        time_control: Some(clock(10_000)),
        ..Default::default()
    }
}

fn bot(name: &str, seed: u64) -> EntrantBot {
    let spec = match name {
        "greedy" => "greedy".to_string(),
        other => format!("{other}=random"),
    };
    EntrantBot::new(spec.parse().unwrap(), seed, Duration::from_secs(10))
}

async fn create(
    t: &mut Tournaments,
    spec: pb::TournamentSpec,
    entrants: &[&str],
) -> (pb::Tournament, Vec<pb::EntrantKey>) {
    let created = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(spec),
            entrants: entrants.iter().map(|e| e.to_string()).collect(),
        })
        .await
        .unwrap()
        .into_inner();
    (created.tournament.unwrap(), created.keys)
}

async fn get(t: &mut Tournaments, id: &str) -> pb::Tournament {
    t.get_tournament(pb::GetTournamentRequest {
        tournament_id: id.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .tournament
    .unwrap()
}

async fn start(t: &mut Tournaments, id: &str) -> pb::Tournament {
    t.start_tournament(pb::StartTournamentRequest {
        tournament_id: id.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .tournament
    .unwrap()
}

/// Plays every key with its bot until the tournament ends.
async fn play_all(
    server: &TestServer,
    keys: &[pb::EntrantKey],
    bots: &[EntrantBot],
) -> Vec<(pb::TournamentEnded, Vec<SeatReport>)> {
    let mut tasks = Vec::new();
    for (key, bot) in keys.iter().zip(bots) {
        let channel = server.channel().await;
        tasks.push(tokio::spawn(play_entrant(
            channel,
            key.entrant_key.clone(),
            bot.clone(),
        )));
    }
    let mut out = Vec::new();
    for task in tasks {
        out.push(
            tokio::time::timeout(Duration::from_secs(240), task)
                .await
                .expect("the tournament finishes")
                .unwrap()
                .unwrap(),
        );
    }
    out
}

/// Every entrant's points, recounted from the games' exported records
/// alone, each read by the strict reader of its game's rules (the seats'
/// entrants are the tournament's pairing).
async fn recount_from_records(server: &TestServer, t: &pb::Tournament) -> BTreeMap<u32, f64> {
    let mut client = server.client().await;
    let mut points: BTreeMap<u32, f64> = BTreeMap::new();
    for g in &t.games {
        if g.status == pb::TournamentGameStatus::Bye as i32 {
            *points.entry(g.entrants[0]).or_default() += 1.0;
            continue;
        }
        let record = common::export_checked(&mut client, &g.game_id, "").await;
        let read = common::checked(&record);
        assert!(read.ended, "game {} is over: {record}", g.number);
        assert_eq!(read.seats as usize, g.entrants.len());
        assert_eq!(read.winners, g.winners, "game {}: {record}", g.number);
        for (i, &e) in g.entrants.iter().enumerate() {
            let seat = i as u32 + 1;
            let share = if read.winners.is_empty() {
                1.0 / g.entrants.len() as f64
            } else if read.winners.contains(&seat) {
                1.0 / read.winners.len() as f64
            } else {
                0.0
            };
            *points.entry(e).or_default() += share;
        }
    }
    points
}

/// The standings' points equal a recount from the records.
async fn assert_records_recount(server: &TestServer, t: &pb::Tournament) {
    let recounted = recount_from_records(server, t).await;
    for s in &t.standings {
        assert!(
            (s.points - recounted.get(&s.entrant).copied().unwrap_or(0.0)).abs() < 1e-9,
            "{}: standings {} but the records give {:?}",
            s.name,
            s.points,
            recounted.get(&s.entrant)
        );
    }
}

/// Every entrant's points, recounted from the games' own outcomes.
async fn recount(server: &TestServer, t: &pb::Tournament) -> BTreeMap<u32, f64> {
    let mut client = server.client().await;
    let mut points: BTreeMap<u32, f64> = BTreeMap::new();
    for g in &t.games {
        if g.status == pb::TournamentGameStatus::Bye as i32 {
            *points.entry(g.entrants[0]).or_default() += 1.0;
            continue;
        }
        let game = client
            .get_game(pb::GetGameRequest {
                game_id: g.game_id.clone(),
                token: String::new(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap();
        let outcome = game.outcome.unwrap();
        let seats = g.entrants.len();
        for (i, &e) in g.entrants.iter().enumerate() {
            let share = if outcome.winners.is_empty() {
                1.0 / seats as f64
            } else if outcome.winners.contains(&(i as u32 + 1)) {
                1.0 / outcome.winners.len() as f64
            } else {
                0.0
            };
            *points.entry(e).or_default() += share;
        }
    }
    points
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_robin_over_grpc_finishes_with_standings_equal_to_a_recount() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let (created, keys) = create(
        &mut t,
        spec(dots_rules(), pb::TournamentFormat::RoundRobin, 2),
        &["greedy", "r1", "r2"],
    )
    .await;
    assert_eq!(created.status, pb::TournamentStatus::Registering as i32);
    assert_eq!(keys.len(), 3);
    let started = start(&mut t, &created.tournament_id).await;
    assert_eq!(started.games.len(), 6, "3 pairings, 2 games each");
    assert_eq!(started.rounds, 3);
    let ends = play_all(
        &server,
        &keys,
        &[bot("greedy", 1), bot("r1", 2), bot("r2", 3)],
    )
    .await;
    for (end, reports) in &ends {
        assert_eq!(end.status, pb::TournamentStatus::Finished as i32);
        assert_eq!(reports.len(), 4, "each entrant plays 4 games");
    }
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert!(
        done.games
            .iter()
            .all(|g| g.status == pb::TournamentGameStatus::Finished as i32)
    );
    // Each pairing played both seatings.
    let seatings: BTreeSet<Vec<u32>> = done.games.iter().map(|g| g.entrants.clone()).collect();
    assert_eq!(seatings.len(), 6);
    let recounted = recount(&server, &done).await;
    for s in &done.standings {
        assert_eq!(s.points, recounted[&s.entrant], "{}", s.name);
        assert_eq!(s.games, 4);
        assert_eq!(s.wins + s.draws + s.losses, 4);
        let (low, high) = (s.elo_low.unwrap(), s.elo_high.unwrap());
        assert!(low < s.elo.unwrap() && s.elo.unwrap() < high, "{s:?}");
    }
    let total: f64 = done.standings.iter().map(|s| s.points).sum();
    assert_eq!(total, 6.0);
    // The signed receipt over the standings and each game's receipt.
    {
        use punct_referee::service::receipts::{self, Receipt, TournamentPayload};
        let mut client = server.client().await;
        let k = client
            .get_referee_keys(pb::GetRefereeKeysRequest {})
            .await
            .unwrap()
            .into_inner();
        let public = &k.keys[0].public_key;
        let keys = receipts::KeyList::parse(
            &serde_json::json!({"algorithm": "Ed25519", "current_key_id": k.current_key_id,
                "keys": [{"key_id": k.keys[0].key_id, "public_key": base64_of(public)}]})
            .to_string(),
            "test",
        )
        .unwrap();
        let receipt = Receipt::parse(&done.receipt).expect("a finished tournament's receipt");
        let payload: TournamentPayload = receipt.verified(&keys).expect("it verifies");
        assert_eq!(payload.tournament_id, done.tournament_id);
        let names: Vec<&str> = done.standings.iter().map(|s| s.name.as_str()).collect();
        let signed: Vec<&str> = payload
            .standings
            .iter()
            .map(|s| s.entrant.as_str())
            .collect();
        assert_eq!(signed, names);
        assert_eq!(payload.games.len(), done.games.len());
        for (g, signed) in done.games.iter().zip(&payload.games) {
            assert_eq!(signed.game_id, g.game_id);
            let game_receipt = client
                .export_game(pb::ExportGameRequest {
                    game_id: g.game_id.clone(),
                    token: String::new(),
                })
                .await
                .unwrap()
                .into_inner()
                .receipt;
            assert_eq!(
                signed.receipt_sha256,
                receipts::sha256_hex(game_receipt.as_bytes())
            );
        }
        let mut changed = receipt.clone();
        changed.payload = changed.payload.replacen("\"points\":", "\"points\": ", 1);
        assert_eq!(
            changed
                .verified::<TournamentPayload>(&keys)
                .unwrap_err()
                .code(),
            "BAD_SIGNATURE"
        );
    }
    // The crosstable adds up to the games between each two.
    for row in &done.crosstable {
        let games: u32 = row.games.iter().sum();
        assert_eq!(games, 4);
    }
    // Every game's record replays to its result.
    let mut client = server.client().await;
    for g in &done.games {
        let record = common::export_checked(&mut client, &g.game_id, "").await;
        // A Dots record has no place for labels (docs/rules/dots.md §9): the game
        // carries them.
        assert!(!record.contains("tournament_id"), "{record}");
        let labels = common::get(&mut client, &g.game_id).await.labels;
        assert_eq!(labels["tournament_id"], done.tournament_id);
        let imported = client
            .import_game(pb::ImportGameRequest {
                record,
                labels: HashMap::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap();
        let outcome = imported.outcome.unwrap();
        let winners: Vec<u32> = outcome.winners.iter().map(|w| w - 1).collect();
        let expected: Vec<u32> = g.winners.iter().map(|w| w - 1).collect();
        assert_eq!(winners, expected, "game {}", g.number);
        assert_eq!(outcome.reason, g.reason);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swiss_of_nine_pairs_no_two_twice() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let names: Vec<String> = (1..=9).map(|i| format!("r{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut s = spec(dots_rules(), pb::TournamentFormat::Swiss, 1);
    s.swiss_rounds = 4;
    let (created, keys) = create(&mut t, s, &refs).await;
    let started = start(&mut t, &created.tournament_id).await;
    assert_eq!(started.rounds, 4);
    assert_eq!(started.games.len(), 5, "round 1: 4 games and a bye");
    let bots: Vec<EntrantBot> = names
        .iter()
        .enumerate()
        .map(|(i, n)| bot(n, i as u64))
        .collect();
    play_all(&server, &keys, &bots).await;
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    let byes: Vec<&pb::TournamentGame> = done
        .games
        .iter()
        .filter(|g| g.status == pb::TournamentGameStatus::Bye as i32)
        .collect();
    assert_eq!(byes.len(), 4, "one bye a round");
    let bye_takers: BTreeSet<u32> = byes.iter().map(|g| g.entrants[0]).collect();
    assert_eq!(bye_takers.len(), 4, "nobody gets two byes");
    let mut met = BTreeSet::new();
    for g in done.games.iter().filter(|g| g.entrants.len() == 2) {
        let pair = (
            g.entrants[0].min(g.entrants[1]),
            g.entrants[0].max(g.entrants[1]),
        );
        assert!(met.insert(pair), "{pair:?} met twice");
    }
    assert_eq!(met.len(), 16, "4 rounds of 4 games");
    for round in 1..=4 {
        let mut busy: Vec<u32> = done
            .games
            .iter()
            .filter(|g| g.round == round)
            .flat_map(|g| g.entrants.clone())
            .collect();
        busy.sort();
        assert_eq!(busy, (0..9).collect::<Vec<_>>(), "round {round}");
    }
    let recounted = recount(&server, &done).await;
    for s in &done.standings {
        assert_eq!(s.points, recounted[&s.entrant]);
    }
    // Buchholz: the sum of the opponents' points.
    let points: HashMap<u32, f64> = done
        .standings
        .iter()
        .map(|s| (s.entrant, s.points))
        .collect();
    for s in &done.standings {
        let opponents: f64 = done
            .games
            .iter()
            .filter(|g| g.entrants.len() == 2 && g.entrants.contains(&s.entrant))
            .map(|g| {
                points[&g
                    .entrants
                    .iter()
                    .copied()
                    .find(|&e| e != s.entrant)
                    .unwrap()]
            })
            .sum();
        assert!((s.buchholz - opponents).abs() < 1e-9, "{s:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_punto_table_tournament_rotates_seats_evenly() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let rules = pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players: 3,
            ..Default::default()
        })),
    };
    let (created, keys) = create(
        &mut t,
        spec(rules, pb::TournamentFormat::RoundRobin, 3),
        &["greedy", "r1", "r2", "r3"],
    )
    .await;
    let started = start(&mut t, &created.tournament_id).await;
    assert_eq!(started.games.len(), 12, "4 tables of 3, 3 games each");
    play_all(
        &server,
        &keys,
        &[bot("greedy", 1), bot("r1", 2), bot("r2", 3), bot("r3", 4)],
    )
    .await;
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    let mut seat_counts = [[0u32; 3]; 4];
    for g in &done.games {
        assert_eq!(g.entrants.len(), 3);
        for (seat, &e) in g.entrants.iter().enumerate() {
            seat_counts[e as usize][seat] += 1;
        }
    }
    assert_eq!(
        seat_counts, [[3; 3]; 4],
        "each entrant 3 times in each seat"
    );
    let recounted = recount(&server, &done).await;
    for s in &done.standings {
        assert!((s.points - recounted[&s.entrant]).abs() < 1e-9);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entrant_that_never_connects_loses_on_time_and_the_event_finishes() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 2);
    s.time_control = Some(clock(300));
    let (created, keys) = create(&mut t, s, &["here", "absent"]).await;
    start(&mut t, &created.tournament_id).await;
    play_all(&server, &keys[..1], &[bot("here", 1)]).await;
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert_eq!(done.games.len(), 2);
    for g in &done.games {
        let absent_seat = g.entrants.iter().position(|&e| e == 1).unwrap() as u32 + 1;
        let here_seat = 3 - absent_seat;
        assert_eq!(g.winners, vec![here_seat], "game {}", g.number);
        assert_eq!(g.reason, "TIMEOUT", "game {}", g.number);
    }
    let first = &done.standings[0];
    assert_eq!(
        (first.name.as_str(), first.wins, first.points),
        ("here", 2, 2.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missed_first_move_deadline_is_a_forfeit_of_the_absent_seat() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 2);
    s.time_control = Some(pb::TimeControl {
        first_move_deadline_ms: Some(300),
        ..clock(60_000)
    });
    let (created, keys) = create(&mut t, s, &["here", "absent"]).await;
    start(&mut t, &created.tournament_id).await;
    play_all(&server, &keys[..1], &[bot("here", 1)]).await;
    let done = get(&mut t, &created.tournament_id).await;
    let mut client = server.client().await;
    for g in &done.games {
        let here_seat = g.entrants.iter().position(|&e| e == 0).unwrap() as u32 + 1;
        // The game itself ends with the absent seat's loss on time, so its
        // record says so (docs/rules/dots.md §9: `end: timeout`).
        assert_eq!(
            (g.winners.clone(), g.reason.as_str()),
            (vec![here_seat], "TIMEOUT")
        );
        let game = common::get(&mut client, &g.game_id).await;
        let outcome = game.outcome.unwrap();
        assert_eq!(
            (outcome.winners, outcome.reason.as_str()),
            (vec![here_seat], "TIMEOUT")
        );
        let record = common::export_checked(&mut client, &g.game_id, "").await;
        let result = if here_seat == 1 { "1-0" } else { "0-1" };
        assert!(
            record.contains(&format!("\nresult: {result}\nscore: 0-0\nend: timeout\n")),
            "{record}"
        );
    }
    assert_eq!(done.standings[0].points, 2.0);
    assert_records_recount(&server, &done).await;
}

/// A Punto table of three where one entrant never comes: each game it sits
/// in ends, at its first-move deadline, with its loss on time and the two
/// others winning together; the records say so (the service's `ending:`
/// header, docs/rules/punto.md §9.4) and recount to the standings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_punto_forfeit_is_in_the_record_and_the_standings_recount_from_the_records() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let rules = pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players: 3,
            ..Default::default()
        })),
    };
    let mut s = spec(rules, pb::TournamentFormat::RoundRobin, 1);
    s.time_control = Some(pb::TimeControl {
        first_move_deadline_ms: Some(400),
        ..clock(60_000)
    });
    let (created, keys) = create(&mut t, s, &["greedy", "r1", "absent"]).await;
    start(&mut t, &created.tournament_id).await;
    play_all(&server, &keys[..2], &[bot("greedy", 1), bot("r1", 2)]).await;
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    let mut client = server.client().await;
    for g in &done.games {
        let absent = g.entrants.iter().position(|&e| e == 2).unwrap() as u32 + 1;
        let others: Vec<u32> = (1..=3).filter(|&s| s != absent).collect();
        assert_eq!((g.winners.clone(), g.reason.as_str()), (others, "TIMEOUT"));
        let record = common::export_checked(&mut client, &g.game_id, "").await;
        assert!(
            record.contains(&format!("\nending: TIMEOUT seat {absent}\n")),
            "{record}"
        );
    }
    assert_records_recount(&server, &done).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entrant_that_reconnects_mid_game_gets_its_game_again_and_finishes_it() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let (created, keys) = create(
        &mut t,
        spec(dots_rules(), pb::TournamentFormat::RoundRobin, 1),
        &["greedy", "late"],
    )
    .await;
    start(&mut t, &created.tournament_id).await;
    // The second entrant connects, takes its game, and goes away.
    let mut first = t
        .connect_entrant(pb::ConnectEntrantRequest {
            entrant_key: keys[1].entrant_key.clone(),
            tournament_id: created.tournament_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let Some(pb::connect_entrant_response::Event::Game(assigned)) =
        first.next().await.unwrap().unwrap().event
    else {
        panic!("a game first");
    };
    assert_eq!(assigned.seat_entrants, ["greedy", "late"]);
    assert_eq!(assigned.seat, 2);
    // The greedy entrant plays; the late one answers its first move itself
    // (on RefereeService, with the seat token it was sent), then goes away.
    let greedy = {
        let channel = server.channel().await;
        let key = keys[0].entrant_key.clone();
        tokio::spawn(play_entrant(channel, key, bot("greedy", 1)))
    };
    let mut referee = server.client().await;
    loop {
        let legal = referee
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: assigned.game_id.clone(),
                seat: 0,
                token: assigned.seat_token.clone(),
                view: pb::MovesView::Notation as i32,
            })
            .await
            .unwrap()
            .into_inner();
        if legal.to_move == 2 {
            referee
                .submit_move(pb::SubmitMoveRequest {
                    game_id: assigned.game_id.clone(),
                    token: assigned.seat_token.clone(),
                    r#move: Some(dots_move(&legal.notations[0])),
                    expected_ply: legal.ply,
                    request_id: String::new(),
                })
                .await
                .unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(first);
    // A new stream: the same game again, the same seat and token, mid-game.
    let again = loop {
        match t
            .connect_entrant(pb::ConnectEntrantRequest {
                entrant_key: keys[1].entrant_key.clone(),
                tournament_id: String::new(),
            })
            .await
        {
            Ok(stream) => break stream.into_inner(),
            // The server may not have seen the first stream close yet.
            Err(s) if s.code() == Code::FailedPrecondition => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("{s:?}"),
        }
    };
    let mut again = again;
    let Some(pb::connect_entrant_response::Event::Game(resent)) =
        again.next().await.unwrap().unwrap().event
    else {
        panic!("the game in progress first");
    };
    assert_eq!(
        (
            resent.game_id.as_str(),
            resent.seat,
            resent.seat_token.as_str()
        ),
        (assigned.game_id.as_str(), 2, assigned.seat_token.as_str())
    );
    assert!(resent.ply >= 2, "mid-game: ply {}", resent.ply);
    drop(again);
    // Back with its bot: the game is followed from its start and finished.
    let late = loop {
        let channel = server.channel().await;
        match play_entrant(channel, keys[1].entrant_key.clone(), bot("late", 2)).await {
            Ok(done) => break done,
            // The server may not have seen the first stream close yet.
            Err(s) if s.code() == Code::FailedPrecondition => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(s) => panic!("{s:?}"),
        }
    };
    assert_eq!(late.1.len(), 1);
    assert_eq!(late.1[0].game_id, assigned.game_id);
    greedy.await.unwrap().unwrap();
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert_eq!(
        done.games[0].status,
        pb::TournamentGameStatus::Finished as i32
    );
    assert_ne!(done.games[0].reason, "TIMEOUT");
}

/// A referee in front of the real one whose `ListLegalMoves` answers lag
/// behind its watches, as those of a replica of a cluster that does not
/// own the game can (docs/CLUSTER.md, "Watchers on any replica": its watch
/// is fed from the database, where a move is stored a moment before its
/// owner has applied it and answers from it): every second call of a seat
/// gets the answer of the call before — on the seat's next turn, that of
/// its turn before. Every other call passes through unchanged.
#[derive(Clone)]
struct Lagging {
    upstream: Channel,
    /// The request (game, seat token, view) → the last answer passed on,
    /// if the next call is to get it again.
    last: Arc<Mutex<HashMap<Bytes, Answer>>>,
    /// How many answers were given again.
    lagged: Arc<AtomicUsize>,
}

/// A unary answer as it came: head, message and trailers.
#[derive(Clone)]
struct Answer {
    status: http::StatusCode,
    headers: http::HeaderMap,
    data: Bytes,
    trailers: Option<http::HeaderMap>,
}

impl Answer {
    fn response(self) -> http::Response<Body> {
        let mut frames = vec![Ok::<_, tonic::Status>(Frame::data(self.data))];
        frames.extend(self.trailers.map(|t| Ok(Frame::trailers(t))));
        let mut response =
            http::Response::new(Body::new(StreamBody::new(tokio_stream::iter(frames))));
        *response.status_mut() = self.status;
        *response.headers_mut() = self.headers;
        response
    }
}

impl Lagging {
    /// Serves in front of the server `upstream` reaches; its address.
    async fn start(upstream: Channel) -> (Lagging, std::net::SocketAddr) {
        let lagging = Lagging {
            upstream,
            last: Arc::default(),
            lagged: Arc::default(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(Named::<RefereeName>(lagging.clone(), PhantomData))
                .add_service(Named::<TournamentName>(lagging.clone(), PhantomData))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (lagging, addr)
    }

    async fn send(&self, request: http::Request<Body>) -> http::Response<Body> {
        use tower::ServiceExt as _;
        match self.upstream.clone().oneshot(request).await {
            Ok(response) => response,
            Err(e) => tonic::Status::unavailable(e.to_string()).into_http(),
        }
    }

    async fn pass(self, request: http::Request<Body>) -> http::Response<Body> {
        let (mut parts, body) = request.into_parts();
        // The path alone (the channel sets the rest), no server-side
        // extensions.
        parts.uri = http::Uri::from(parts.uri.path_and_query().unwrap().clone());
        parts.extensions = http::Extensions::new();
        if parts.uri.path() != "/referee.v1.RefereeService/ListLegalMoves" {
            return self.send(http::Request::from_parts(parts, body)).await;
        }
        let message = body.collect().await.unwrap().to_bytes();
        let again = self.last.lock().unwrap().remove(&message);
        if let Some(answer) = again {
            self.lagged.fetch_add(1, Ordering::SeqCst);
            return answer.response();
        }
        let request = http::Request::from_parts(parts, Body::new(Full::new(message.clone())));
        let (head, body) = self.send(request).await.into_parts();
        let Ok(collected) = body.collect().await else {
            return tonic::Status::unavailable("the answer broke off").into_http();
        };
        let answer = Answer {
            status: head.status,
            headers: head.headers,
            trailers: collected.trailers().cloned(),
            data: collected.to_bytes(),
        };
        self.last.lock().unwrap().insert(message, answer.clone());
        answer.response()
    }
}

/// [`Lagging`] as the service `N` names.
#[derive(Clone)]
struct Named<N>(Lagging, PhantomData<N>);

trait ServiceName {
    const NAME: &'static str;
}

#[derive(Clone)]
struct RefereeName;

impl ServiceName for RefereeName {
    const NAME: &'static str = "referee.v1.RefereeService";
}

#[derive(Clone)]
struct TournamentName;

impl ServiceName for TournamentName {
    const NAME: &'static str = "referee.v1.TournamentService";
}

impl<N: ServiceName> tonic::server::NamedService for Named<N> {
    const NAME: &'static str = N::NAME;
}

impl<N> tower::Service<http::Request<Body>> for Named<N> {
    type Response = http::Response<Body>;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let lagging = self.0.clone();
        Box::pin(async move { Ok(lagging.pass(request).await) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entrants_whose_answers_lag_behind_their_watch_ask_again_and_play_every_game() {
    let server = TestServer::start().await;
    let (lagging, addr) = Lagging::start(server.channel().await).await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 2);
    // A turn given up for an answer behind the watch would end on time.
    s.time_control = Some(clock(2_000));
    let (created, keys) = create(&mut t, s, &["r1", "r2"]).await;
    start(&mut t, &created.tournament_id).await;
    let mut tasks = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let bot = bot(&format!("r{}", i + 1), i as u64 + 1);
        tasks.push(tokio::spawn(play_entrant(
            channel,
            key.entrant_key.clone(),
            bot,
        )));
    }
    for task in tasks {
        let (end, reports) = tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("the tournament finishes")
            .unwrap()
            .unwrap();
        assert_eq!(end.status, pb::TournamentStatus::Finished as i32);
        assert_eq!(reports.len(), 2);
        assert!(reports.iter().all(|r| r.forfeit.is_none()));
    }
    assert!(
        lagging.lagged.load(Ordering::SeqCst) > 0,
        "answers were given behind the watch"
    );
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.games.len(), 2);
    for g in &done.games {
        assert_eq!(g.status, pb::TournamentGameStatus::Finished as i32);
        // Played out: nobody lost a turn, and on time.
        assert!(
            !["TIMEOUT", "FORFEIT", "ABORTED"].contains(&g.reason.as_str()),
            "game {} ended {}",
            g.number,
            g.reason
        );
    }
}

/// A server on the data directory `dir` once the stopped one has let go of
/// it: its last watch streams end a moment after the drain, and until then
/// the directory's lock refuses a second opener (the new server stops at
/// once, and is started again).
async fn start_when_free(dir: &std::path::Path) -> TestServer {
    for _ in 0..100 {
        let server = TestServer::start_with(sqlite_options(dir)).await;
        let Ok(channel) = server.endpoint().connect().await else {
            let _ = server.stop().await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let check = health.check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        });
        if tokio::time::timeout(Duration::from_secs(2), check)
            .await
            .is_ok_and(|r| r.is_ok())
        {
            return server;
        }
        let _ = server.stop().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the data directory was never let go of");
}

fn sqlite_options(dir: &std::path::Path) -> ServerOptions {
    ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.to_path_buf(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        ..common::test_options()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_tournament_resumes_it() {
    let dir = std::env::temp_dir().join(format!("tour-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let server = TestServer::start_with(sqlite_options(&dir)).await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 4);
    s.concurrency = 1;
    let (created, keys) = create(&mut t, s, &["greedy", "r1"]).await;
    let id = created.tournament_id.clone();
    start(&mut t, &id).await;
    let bots = [bot("greedy", 1), bot("r1", 2)];
    let mut tasks = Vec::new();
    for (key, b) in keys.iter().zip(&bots) {
        let channel = server.channel().await;
        tasks.push(tokio::spawn(play_entrant(
            channel,
            key.entrant_key.clone(),
            b.clone(),
        )));
    }
    // Once a game is over, stop the server in the middle of the event.
    loop {
        let now = get(&mut t, &id).await;
        let finished = now
            .games
            .iter()
            .filter(|g| g.status == pb::TournamentGameStatus::Finished as i32)
            .count();
        if finished >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop().await.unwrap();
    for task in tasks {
        assert!(
            task.await.unwrap().is_err(),
            "the stream ended with the server"
        );
    }
    let server = start_when_free(&dir).await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let resumed = get(&mut t, &id).await;
    assert_eq!(resumed.status, pb::TournamentStatus::Running as i32);
    assert_eq!(resumed.entrants.len(), 2);
    play_all(&server, &keys, &bots).await;
    let done = get(&mut t, &id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert_eq!(done.games.len(), 4);
    assert!(
        done.games
            .iter()
            .all(|g| g.status == pb::TournamentGameStatus::Finished as i32)
    );
    let total: f64 = done.standings.iter().map(|s| s.points).sum();
    assert_eq!(total, 4.0);
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sprt_stops_a_gauntlet_of_greedy_against_random() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(dots_rules(), pb::TournamentFormat::Gauntlet, 200);
    s.concurrency = 1;
    s.sprt = Some(pb::Sprt {
        elo0: 0.0,
        elo1: 100.0,
        alpha: 0.05,
        beta: 0.05,
    });
    let (created, keys) = create(&mut t, s, &["greedy", "random"]).await;
    start(&mut t, &created.tournament_id).await;
    play_all(&server, &keys, &[bot("greedy", 1), bot("random", 2)]).await;
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    let sprt = done.sprt.unwrap();
    assert_eq!(sprt.decision, pb::SprtDecision::H1 as i32, "{sprt:?}");
    assert!(sprt.llr >= sprt.upper_bound);
    assert!(sprt.pentanomial);
    let played = done
        .games
        .iter()
        .filter(|g| g.status == pb::TournamentGameStatus::Finished as i32)
        .count();
    assert!((2..200).contains(&played), "stopped after {played} games");
    assert_eq!(sprt.games as usize, played);
    let skipped = done
        .games
        .iter()
        .filter(|g| g.status == pb::TournamentGameStatus::Skipped as i32)
        .count();
    assert_eq!(played + skipped, 200);
}

fn reason(s: &tonic::Status) -> String {
    s.get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

#[tokio::test]
async fn bad_tournament_calls_are_refused_precisely_and_change_nothing() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    // Unschedulable specs.
    let mut swiss = spec(dots_rules(), pb::TournamentFormat::Swiss, 1);
    swiss.swiss_rounds = 3;
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(swiss),
            entrants: vec!["a".into(), "b".into(), "c".into()],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        "spec.swiss_rounds"
    );
    let mut table = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 1);
    table.table_size = 3;
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(table),
            entrants: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("tables of 2 seats, not 3"), "{e:?}");
    let mut untimed = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 1);
    untimed.time_control = None;
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(untimed),
            entrants: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        "spec.time_control"
    );
    let listed = t
        .list_tournaments(pb::ListTournamentsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(
        listed.tournaments.is_empty(),
        "refused creations made nothing"
    );

    // A Swiss of open registration: its rounds are checked at the start.
    let mut open = spec(dots_rules(), pb::TournamentFormat::Swiss, 1);
    open.swiss_rounds = 2;
    open.open_registration = true;
    let (swiss, keys) = create(&mut t, open, &["a", "b"]).await;
    let e = t
        .start_tournament(pb::StartTournamentRequest {
            tournament_id: swiss.tournament_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::FailedPrecondition, "UNSCHEDULABLE")
    );
    let e = t
        .add_entrant(pb::AddEntrantRequest {
            tournament_id: swiss.tournament_id.clone(),
            name: "a".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "DUPLICATE_ENTRANT");
    let e = t
        .add_entrant(pb::AddEntrantRequest {
            tournament_id: swiss.tournament_id.clone(),
            name: "no spaces".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let before = get(&mut t, &swiss.tournament_id).await;
    assert_eq!(before.status, pb::TournamentStatus::Registering as i32);
    assert_eq!(before.entrants.len(), 2);

    // Keys: missing, malformed, unknown, another tournament's.
    let connect = |key: &str, id: &str| pb::ConnectEntrantRequest {
        entrant_key: key.into(),
        tournament_id: id.into(),
    };
    let e = t.connect_entrant(connect("", "")).await.unwrap_err();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::Unauthenticated, "ENTRANT_KEY_MISSING")
    );
    let e = t.connect_entrant(connect("nope", "")).await.unwrap_err();
    assert_eq!(reason(&e), "ENTRANT_KEY_MALFORMED");
    let e = t
        .connect_entrant(connect(&"0".repeat(32), ""))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::PermissionDenied, "UNKNOWN_ENTRANT_KEY")
    );
    let (other, other_keys) = create(
        &mut t,
        spec(dots_rules(), pb::TournamentFormat::RoundRobin, 1),
        &["x", "y"],
    )
    .await;
    let e = t
        .connect_entrant(connect(&other_keys[0].entrant_key, &swiss.tournament_id))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::PermissionDenied, "WRONG_ENTRANT_KEY")
    );
    let e = t
        .connect_entrant(connect(&keys[0].entrant_key, &"f".repeat(32)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(
        e.get_details_resource_info().unwrap().resource_type,
        "referee.v1.Tournament"
    );

    // Connecting twice.
    let held = t
        .connect_entrant(connect(&other_keys[0].entrant_key, ""))
        .await
        .unwrap();
    let e = t
        .connect_entrant(connect(&other_keys[0].entrant_key, ""))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::FailedPrecondition, "ALREADY_CONNECTED")
    );
    let now = get(&mut t, &other.tournament_id).await;
    assert_eq!(
        now.entrants.iter().map(|e| e.connected).collect::<Vec<_>>(),
        [true, false]
    );
    drop(held);

    // Starting twice; registration closed; cancelling; unknown ids.
    start(&mut t, &other.tournament_id).await;
    let e = t
        .start_tournament(pb::StartTournamentRequest {
            tournament_id: other.tournament_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::FailedPrecondition, "ALREADY_STARTED")
    );
    let e = t
        .add_entrant(pb::AddEntrantRequest {
            tournament_id: other.tournament_id.clone(),
            name: "z".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "REGISTRATION_CLOSED");
    let cancelled = t
        .cancel_tournament(pb::CancelTournamentRequest {
            tournament_id: other.tournament_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .tournament
        .unwrap();
    assert_eq!(cancelled.status, pb::TournamentStatus::Cancelled as i32);
    assert!(
        cancelled
            .games
            .iter()
            .all(|g| g.status == pb::TournamentGameStatus::Skipped as i32)
    );
    let e = t
        .cancel_tournament(pb::CancelTournamentRequest {
            tournament_id: other.tournament_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "ALREADY_ENDED");
    let e = t
        .get_tournament(pb::GetTournamentRequest {
            tournament_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // A cancelled tournament's entrant is told at once.
    let mut ended = t
        .connect_entrant(connect(&other_keys[1].entrant_key, ""))
        .await
        .unwrap()
        .into_inner();
    let mut last = None;
    while let Some(m) = ended.next().await {
        last = m.unwrap().event;
    }
    let Some(pb::connect_entrant_response::Event::Ended(end)) = last else {
        panic!("the end last");
    };
    assert_eq!(end.status, pb::TournamentStatus::Cancelled as i32);
    let after = get(&mut t, &swiss.tournament_id).await;
    assert_eq!(after.entrants.len(), 2, "refused calls added nobody");

    // A schedule past the limit is refused at the start, and not started.
    let names: Vec<String> = (0..20).map(|i| format!("e{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (big, _) = create(
        &mut t,
        spec(dots_rules(), pb::TournamentFormat::RoundRobin, 100),
        &refs,
    )
    .await;
    let e = t
        .start_tournament(pb::StartTournamentRequest {
            tournament_id: big.tournament_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted);
    assert_eq!(
        e.get_details_quota_failure().unwrap().violations[0].subject,
        "tournament_games"
    );
    let still = get(&mut t, &big.tournament_id).await;
    assert_eq!(
        (still.status, still.games.len()),
        (pb::TournamentStatus::Registering as i32, 0)
    );
}

/// A plain HTTP GET: the status and the body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_page_shows_tournaments_with_standings_and_links_to_their_games() {
    let server = TestServer::start_with_http(common::test_options(), None).await;
    let http = server.http.unwrap();
    let mut t = TournamentServiceClient::new(server.channel().await);
    let (created, keys) = create(
        &mut t,
        spec(dots_rules(), pb::TournamentFormat::RoundRobin, 2),
        &["greedy", "r1"],
    )
    .await;
    let (status, body) = http_get(http, "/api/tournaments").await;
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["tournaments"][0]["status"], "registering");
    assert!(
        list["tournaments"][0].get("games").is_none(),
        "no schedule in the list"
    );
    start(&mut t, &created.tournament_id).await;
    play_all(&server, &keys, &[bot("greedy", 1), bot("r1", 2)]).await;
    let (status, body) =
        http_get(http, &format!("/api/tournaments/{}", created.tournament_id)).await;
    assert_eq!(status, 200);
    assert!(!body.contains("key"), "no key nor key hash: {body}");
    assert!(!body.contains("token"), "no seat token: {body}");
    let one: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(one["status"], "finished");
    assert_eq!(
        (one["games_done"].as_u64(), one["games_total"].as_u64()),
        (Some(2), Some(2))
    );
    let done = get(&mut t, &created.tournament_id).await;
    for (g, shown) in done.games.iter().zip(one["games"].as_array().unwrap()) {
        assert_eq!(shown["game_id"], g.game_id.as_str());
        assert_eq!(shown["status"], "finished");
    }
    for (s, shown) in done
        .standings
        .iter()
        .zip(one["standings"].as_array().unwrap())
    {
        assert_eq!(shown["name"], s.name.as_str());
        assert_eq!(shown["points"].as_f64(), Some(s.points));
        assert_eq!(shown["elo"][0].as_f64(), s.elo);
    }
    let (status, _) = http_get(http, "/api/tournaments/nope").await;
    assert_eq!(status, 404);
    let (_, page) = http_get(http, "/").await;
    assert!(page.contains("id=\"tournament-rows\"") && page.contains("id=\"standing-rows\""));
    let (_, script) = http_get(http, "/app.js").await;
    assert!(
        script.contains("#tournament=")
            && script.contains("#game=${encodeURIComponent(g.game_id)}")
    );
}

fn dots_move(notation: &str) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Dots(Box::new(dpb::Move {
            notation: notation.into(),
            ..Default::default()
        }))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_round_robin_plays_every_opening_from_both_sides_twice() {
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let openings = [vec!["1,1", "8,8"], vec!["2,7"]];
    let mut s = spec(dots_rules(), pb::TournamentFormat::DoubleRoundRobin, 2);
    s.openings = openings
        .iter()
        .map(|moves| pb::Opening {
            moves: moves.iter().map(|m| dots_move(m)).collect(),
            ..Default::default()
        })
        .collect();
    s.labels = HashMap::from([("event".to_string(), "openings".to_string())]);
    let (created, keys) = create(&mut t, s.clone(), &["greedy", "r1"]).await;
    let echoed = created.spec.unwrap();
    assert_eq!(echoed.openings.len(), 2);
    let started = start(&mut t, &created.tournament_id).await;
    assert_eq!(started.games.len(), 8, "2 openings x 2 seatings x 2 cycles");
    play_all(&server, &keys, &[bot("greedy", 1), bot("r1", 2)]).await;
    let done = get(&mut t, &created.tournament_id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    let mut client = server.client().await;
    let mut seen: BTreeMap<(u32, Vec<u32>), u32> = BTreeMap::new();
    for g in &done.games {
        let opening = g.opening.unwrap();
        *seen.entry((opening, g.entrants.clone())).or_default() += 1;
        let record = common::export_checked(&mut client, &g.game_id, "").await;
        // The tournament's labels are the game's (a canonical Dots record
        // has no place for them).
        let game = client
            .get_game(pb::GetGameRequest {
                game_id: g.game_id.clone(),
                ..Default::default()
            })
            .await
            .expect("the game")
            .into_inner()
            .game
            .expect("a snapshot");
        assert_eq!(
            game.labels.get("event").map(String::as_str),
            Some("openings"),
            "{:?}",
            game.labels
        );
        let moves: Vec<&str> = record
            .split_once("\n\n")
            .unwrap()
            .1
            .lines()
            .take(openings[opening as usize].len())
            .collect();
        assert_eq!(moves, openings[opening as usize], "game {}", g.number);
    }
    let expected: BTreeMap<(u32, Vec<u32>), u32> = [0, 1]
        .into_iter()
        .flat_map(|o| [((o, vec![0, 1]), 2), ((o, vec![1, 0]), 2)])
        .collect();
    assert_eq!(seen, expected);
    // A bad opening and bad labels are refused at creation.
    let mut bad = s.clone();
    bad.openings = vec![pb::Opening {
        moves: vec![dots_move("1,1"), dots_move("1,1")],
        ..Default::default()
    }];
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(bad),
            entrants: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        "spec.openings[0].moves[1]"
    );
    let mut odd = s.clone();
    odd.games_per_pairing = 3;
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(odd),
            entrants: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        "spec.games_per_pairing"
    );
    let mut labels = s;
    labels.labels = HashMap::from([("9bad".to_string(), "x".to_string())]);
    let e = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(labels),
            entrants: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        "spec.labels"
    );
}

#[tokio::test]
async fn reflection_and_health_know_the_tournament_service() {
    use tonic_reflection::pb::v1;
    let server = TestServer::start().await;
    let mut client =
        v1::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        response.message_response
    else {
        panic!("a service list");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"referee.v1.TournamentService".to_string()),
        "{names:?}"
    );
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "referee.v1.TournamentService".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_runner_plays_an_openings_file_from_both_sides() {
    use punct_referee::tools::tournament::{self as local, Config, Format};
    let server = TestServer::start().await;
    let openings = local::parse_openings("1,1 8,8\n2,7\n").unwrap();
    let config = Config {
        bots: vec!["greedy".parse().unwrap(), "random".parse().unwrap()],
        format: Format::RoundRobin,
        games_per_pairing: 2,
        concurrency: 2,
        seed: 1,
        records: None,
        rules: punct_referee::tools::games::ToolRules {
            rules: punct_referee::service::grpc::convert::game_rules(
                Some(&dots_rules()),
                &punct_referee::service::grpc::games::punct::RULE_FIELDS,
            )
            .unwrap(),
            seed: None,
        },
        move_timeout: Duration::from_secs(10),
        name: "openings".into(),
        time_control: None,
    };
    let report = local::run_with_openings(server.channel().await, config, openings, |_, _| {})
        .await
        .unwrap();
    assert_eq!(report.games.len(), 4, "2 openings x 2 seatings");
    let mut firsts: Vec<(String, usize)> = report
        .games
        .iter()
        .map(|g| {
            let moves = g.record.split_once("\n\n").unwrap().1;
            (moves.lines().next().unwrap().to_string(), g.pairing.white)
        })
        .collect();
    firsts.sort();
    assert_eq!(
        firsts,
        [
            ("1,1".to_string(), 0),
            ("1,1".to_string(), 1),
            ("2,7".to_string(), 0),
            ("2,7".to_string(), 1)
        ]
    );
}

/// `request` with `Authorization: Bearer key`.
fn keyed<T>(message: T, key: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_keys_on_organisers_manage_readers_read_and_entrant_keys_connect() {
    use punct_referee::service::edge::access::{Scope, new_key};
    let dir = std::env::temp_dir().join(format!("tour-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (organiser, line_o) = new_key("organiser", &[Scope::TournamentsManage]);
    let (reader, line_r) = new_key("reader", &[Scope::Read]);
    let file = dir.join("keys.jsonl");
    std::fs::write(&file, format!("{line_o}\n{line_r}\n")).unwrap();
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(file),
        ..common::test_options()
    })
    .await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let request = || pb::CreateTournamentRequest {
        spec: Some(spec(dots_rules(), pb::TournamentFormat::RoundRobin, 1)),
        entrants: vec!["greedy".into(), "r1".into()],
    };
    // Without a key, or with a reader's, no tournament is created.
    let e = t.create_tournament(request()).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let e = t
        .create_tournament(keyed(request(), &reader))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let created = t
        .create_tournament(keyed(request(), &organiser))
        .await
        .unwrap()
        .into_inner();
    let id = created.tournament.unwrap().tournament_id;
    let e = t
        .get_tournament(pb::GetTournamentRequest {
            tournament_id: id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    t.start_tournament(keyed(
        pb::StartTournamentRequest {
            tournament_id: id.clone(),
        },
        &organiser,
    ))
    .await
    .unwrap();
    // The entrants need no platform key: their entrant keys and seat
    // tokens are their credentials.
    play_all(&server, &created.keys, &[bot("greedy", 1), bot("r1", 2)]).await;
    let done = t
        .get_tournament(keyed(
            pb::GetTournamentRequest { tournament_id: id },
            &reader,
        ))
        .await
        .unwrap()
        .into_inner()
        .tournament
        .unwrap();
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tournaments of every game and seat count leave records that the strict
/// reader of their game's rules accepts (`docs/rules/<game>.md`: Dots §9, Punto §12,
/// PÜNCT §7), whose results are the tournament's: Punto with 2, 3 and 4
/// seats and in teams (with client entropy), Dots, and PÜNCT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tournament_records_of_every_game_and_seat_count_are_canonical_and_recount() {
    use punct_referee::service::grpc::pb::punct::v1 as ppb;
    let server = TestServer::start().await;
    let mut t = TournamentServiceClient::new(server.channel().await);
    let punto = |players: u32, team: bool| pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players,
            team,
            rounds_to_win: Some(1),
            entropy: if team { vec![7, 7] } else { Vec::new() },
            ..Default::default()
        })),
    };
    let punct = pb::GameRules {
        game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
            variant: ppb::Variant::Basic as i32,
            max_plies: Some(30),
            ..Default::default()
        })),
    };
    let cases: Vec<(&str, pb::GameRules, Vec<&str>)> = vec![
        ("punto 2", punto(2, false), vec!["greedy", "r1"]),
        ("punto 3", punto(3, false), vec!["greedy", "r1", "r2"]),
        ("punto 4", punto(4, false), vec!["greedy", "r1", "r2", "r3"]),
        (
            "punto teams",
            punto(4, true),
            vec!["greedy", "r1", "r2", "r3"],
        ),
        ("dots", dots_rules(), vec!["greedy", "r1"]),
        ("punct", punct, vec!["greedy", "r1"]),
    ];
    for (what, rules, entrants) in cases {
        let (created, keys) = create(
            &mut t,
            spec(rules, pb::TournamentFormat::RoundRobin, 1),
            &entrants,
        )
        .await;
        start(&mut t, &created.tournament_id).await;
        let bots: Vec<EntrantBot> = entrants
            .iter()
            .enumerate()
            .map(|(i, name)| bot(name, i as u64 + 1))
            .collect();
        play_all(&server, &keys, &bots).await;
        let done = get(&mut t, &created.tournament_id).await;
        assert_eq!(done.status, pb::TournamentStatus::Finished as i32, "{what}");
        assert!(!done.games.is_empty(), "{what}");
        assert_records_recount(&server, &done).await;
    }
}

/// Standard base64 (the tests' own).
fn base64_of(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
