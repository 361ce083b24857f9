//! The real binary on PostgreSQL (`--storage postgres --database-url …`):
//! games played, the process killed (SIGKILL: no drain, no flush) and
//! started again on the same database; the game in progress, its request
//! ids and the finished game are served as before, and play goes on. Also:
//! an unreachable database stops the start with a clear message; several
//! games played at once survive a SIGKILL at a random moment (every
//! acknowledged move stored, the move in flight wholly there or absent).
//!
//! Needs `PUNCT_REFEREE_TEST_DATABASE_URL` (scripts/with-postgres.sh starts a
//! throw-away server and sets it); without it the tests say so and pass,
//! unless `PUNCT_REFEREE_REQUIRE_POSTGRES` is set (scripts/test.sh): then
//! they fail.

use crate::common;

use std::collections::BTreeMap;

use std::process::Command;
use std::time::Duration;

use common::postgres::{fresh_database, sql, test_database_url};
use common::process::{self, Referee};
use common::{CONNECTION_GAME, Client, Table, rules, table_of};
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;

/// The binary on the database `url`, given by the environment variable (so
/// the URL is not on the command line), with `more` arguments.
fn serve(url: &str, more: &[&str]) -> Command {
    let mut command = process::serve(&["--no-http", "--storage", "postgres"]);
    command.args(more).env("PUNCT_REFEREE_DATABASE_URL", url);
    command
}

/// [`serve`] without more arguments, started and answering.
async fn start(url: &str) -> Referee {
    Referee::start(&mut serve(url, &[])).await
}

async fn create(client: &mut Client) -> Table {
    let r = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(ppb::Variant::Standard)),
            labels: BTreeMap::from([("suite".to_string(), "postgres".to_string())])
                .into_iter()
                .collect(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    table_of(r.game.unwrap(), &r.seats)
}

async fn submit(
    client: &mut Client,
    table: &Table,
    ply: u32,
    note: &str,
    request_id: &str,
) -> Result<pb::SubmitMoveResponse, tonic::Status> {
    client
        .submit_move(pb::SubmitMoveRequest {
            game_id: table.id.clone(),
            token: table.token_at(ply).to_string(),
            r#move: Some(common::notation(note)),
            expected_ply: ply,
            request_id: request_id.to_string(),
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn export(client: &mut Client, id: &str) -> String {
    common::export_checked(client, id, "").await
}

#[tokio::test]
async fn games_survive_a_restart_of_the_referee_on_postgres() {
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server, "punct_it").await;
    let referee = start(&url).await;
    let mut client = referee.client().await;

    // One game played to its end, one left in progress after four moves.
    let won = create(&mut client).await;
    for (ply, note) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut client, &won, ply as u32, note, "")
            .await
            .unwrap();
    }
    let playing = create(&mut client).await;
    for (ply, note) in CONNECTION_GAME[..4].iter().enumerate() {
        let r = submit(&mut client, &playing, ply as u32, note, &format!("p-{ply}"))
            .await
            .unwrap();
        assert_eq!(r.ply, ply as u32 + 1);
    }
    let won_before = common::get(&mut client, &won.id).await;
    assert_eq!(won_before.status, pb::GameStatus::Finished as i32);
    assert_eq!(won_before.outcome.as_ref().unwrap().reason, "CONNECTION");
    let won_record = export(&mut client, &won.id).await;
    let playing_record = export(&mut client, &playing.id).await;
    drop(client);
    referee.kill();

    let referee = start(&url).await;
    let mut client = referee.client().await;
    // The finished game, as it ended.
    let won_after = common::get(&mut client, &won.id).await;
    assert_eq!(won_after.status, pb::GameStatus::Finished as i32);
    assert_eq!(won_after.ply, 11);
    assert_eq!(won_after.outcome, won_before.outcome);
    assert_eq!(export(&mut client, &won.id).await, won_record);
    let finished = client
        .list_games(pb::ListGamesRequest {
            status: pb::GameStatus::Finished as i32,
            labels: [("suite".to_string(), "postgres".to_string())].into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<&str> = finished.games.iter().map(|g| g.game_id.as_str()).collect();
    assert_eq!(ids, [won.id.as_str()]);

    // The game in progress, at its ply, with its record.
    let game = common::get(&mut client, &playing.id).await;
    assert_eq!(game.status, pb::GameStatus::InProgress as i32);
    assert_eq!(game.ply, 4);
    assert_eq!(export(&mut client, &playing.id).await, playing_record);
    // A retry of the last acknowledged move is answered from the record.
    let retry = submit(&mut client, &playing, 3, CONNECTION_GAME[3], "p-3")
        .await
        .unwrap();
    assert!(retry.replayed);
    assert_eq!(retry.ply, 4);
    // A stale copy of a move already made is refused, and changes nothing.
    let stale = submit(&mut client, &playing, 3, CONNECTION_GAME[3], "")
        .await
        .unwrap_err();
    assert_eq!(stale.code(), tonic::Code::Aborted, "{stale:?}");
    assert!(stale.message().contains("game is at ply 4"), "{stale:?}");
    assert_eq!(common::get(&mut client, &playing.id).await.ply, 4);
    // The old tokens play on, to the end.
    for (ply, note) in CONNECTION_GAME.iter().enumerate().skip(4) {
        submit(&mut client, &playing, ply as u32, note, "")
            .await
            .unwrap();
    }
    let ended = common::get(&mut client, &playing.id).await;
    assert_eq!(ended.status, pb::GameStatus::Finished as i32);
    assert_eq!(ended.outcome.unwrap().reason, "CONNECTION");
    drop(client);
    referee.kill();

    // Once more: both games are finished in the store; nothing is recovered
    // to play, and both are served.
    let referee = start(&url).await;
    let mut client = referee.client().await;
    for id in [&won.id, &playing.id] {
        let g = common::get(&mut client, id).await;
        assert_eq!(g.status, pb::GameStatus::Finished as i32, "{id}");
        assert_eq!(g.ply, 11, "{id}");
    }
    // The rows themselves: both games finished, every move stored once.
    let db = sql(&url).await;
    for id in [&won.id, &playing.id] {
        let row = db
            .query_one(
                "SELECT g.status, g.ply, g.reason, count(m.ply), min(m.ply), max(m.ply)
                 FROM games g JOIN moves m ON m.game_id = g.id
                 WHERE g.id = $1 GROUP BY g.id",
                &[id],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, &str>(0), "finished", "{id}");
        assert_eq!(row.get::<_, i64>(1), 11, "{id}");
        assert_eq!(row.get::<_, &str>(2), "CONNECTION", "{id}");
        assert_eq!(
            (
                row.get::<_, i64>(3),
                row.get::<_, i64>(4),
                row.get::<_, i64>(5)
            ),
            (11, 1, 11),
            "{id}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_database_stops_the_start_with_a_clear_message() {
    // Runs without a test server: nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://referee:hunter2@127.0.0.1:{port}/referee");
    let out = Command::new(process::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-http",
            "--storage",
            "postgres",
            "--database-url",
            &url,
        ])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("127.0.0.1:{port}/referee")),
        "{stderr}"
    );
    assert!(stderr.contains("is the database reachable?"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");

    // --storage postgres without a URL is a usage error.
    let out = Command::new(process::BIN)
        .args(["serve", "--storage", "postgres"])
        .env_remove("PUNCT_REFEREE_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--database-url"), "{stderr}");
}

/// What one player saw before the kill: acknowledged moves (notation,
/// request id), and the move in flight, if any.
#[derive(Debug, Default, Clone)]
struct Seen {
    acked: Vec<(String, String)>,
    in_flight: Option<(u32, String, String)>,
}

/// Plays random legal moves until the server stops answering or the game
/// ends.
async fn play_until_killed(
    mut client: Client,
    table: Table,
    seed: u64,
    seen: std::sync::Arc<std::sync::Mutex<Seen>>,
) {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
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
        let note = common::punct_of(&mv).notation.clone();
        let request_id = format!("{}-{ply}", table.id);
        seen.lock().unwrap().in_flight = Some((ply, note.clone(), request_id.clone()));
        match submit(&mut client, &table, ply, &note, &request_id).await {
            Ok(r) => {
                let mut s = seen.lock().unwrap();
                s.acked.push((note, request_id));
                s.in_flight = None;
                if r.outcome.is_some() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// Moves of a game's record, in order.
async fn record_moves(client: &mut Client, id: &str) -> Vec<String> {
    let record = export(client, id).await;
    let body = record.split_once("\n\n").map_or("", |(_, b)| b);
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// [`start`], its move journal folded past `fold_rows` moves when given
/// (`PUNCT_REFEREE_JOURNAL_FOLD_ROWS`, docs/STORAGE.md "The move journal").
async fn start_folding(url: &str, fold_rows: Option<&str>) -> Referee {
    let mut command = serve(url, &[]);
    if let Some(rows) = fold_rows {
        command.env("PUNCT_REFEREE_JOURNAL_FOLD_ROWS", rows);
    }
    Referee::start(&mut command).await
}

/// Several games played at once, the referee SIGKILLed in the middle: after
/// the restart every acknowledged move is stored, in order; the move in
/// flight is wholly there or wholly absent, and its retry says which. With
/// the move journal's default folds (the kill lands among appends), a fold
/// every two moves and every move (the kill lands in folds too), and no
/// journal; the restart reads the journal back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_moves_survive_sigkill_on_postgres() {
    let Some(server) = test_database_url() else {
        return;
    };
    for (seed, fold_rows) in [
        (11_u64, None),
        (12, Some("2")),
        (13, Some("1")),
        (14, Some("0")),
    ] {
        let url = fresh_database(&server, "punct_it").await;
        let referee = start_folding(&url, fold_rows).await;
        let mut client = referee.client().await;
        let mut games = Vec::new();
        for i in 0..6 {
            let table = create(&mut client).await;
            let seen = std::sync::Arc::new(std::sync::Mutex::new(Seen::default()));
            let player = tokio::spawn(play_until_killed(
                referee.client().await,
                Table {
                    id: table.id.clone(),
                    white: table.white.clone(),
                    black: table.black.clone(),
                },
                seed * 100 + i,
                seen.clone(),
            ));
            games.push((table, seen, player));
        }
        // The kill lands a while after the first acknowledged move, however
        // long a loaded machine takes to make one: some moves are played
        // before it.
        crate::crash::until_first_ack(seed, || {
            games
                .iter()
                .any(|(_, seen, _)| !seen.lock().unwrap().acked.is_empty())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(150 + 100 * (seed % 3))).await;
        referee.kill();
        for (_, _, player) in &mut games {
            common::within(30, player).await.unwrap();
        }

        let referee = start_folding(&url, fold_rows).await;
        let mut client = referee.client().await;
        let mut total_acked = 0;
        for (table, seen, _) in &games {
            let seen = seen.lock().unwrap().clone();
            total_acked += seen.acked.len();
            let stored = record_moves(&mut client, &table.id).await;
            let acked: Vec<String> = seen.acked.iter().map(|(n, _)| n.clone()).collect();
            assert!(
                stored.len() >= acked.len() && stored[..acked.len()] == acked[..],
                "seed {seed} (folds {fold_rows:?}): acknowledged {acked:?}, stored {stored:?}"
            );
            let extra = &stored[acked.len()..];
            match (&seen.in_flight, extra) {
                (_, []) => {}
                (Some((_, note, _)), [one]) => assert_eq!(one, note, "seed {seed}"),
                (other, extra) => panic!("seed {seed}: stored {extra:?} besides ({other:?})"),
            }
            let game = common::get(&mut client, &table.id).await;
            assert_eq!(game.ply as usize, stored.len(), "seed {seed}");
            if let Some((ply, note, request_id)) = &seen.in_flight
                && game.status != pb::GameStatus::Finished as i32
            {
                let r = submit(&mut client, table, *ply, note, request_id)
                    .await
                    .unwrap();
                assert_eq!(r.replayed, extra.len() == 1, "seed {seed}");
                assert_eq!(r.ply, ply + 1);
            }
        }
        assert!(
            total_acked > 0,
            "seed {seed}: moves were played before the kill"
        );
    }
}

/// Every row of the tables that hold games and tournaments, as text
/// (`bytea` in hex, as `pg_dump` writes it).
async fn dump(url: &str) -> String {
    let client = sql(url).await;
    let mut out = String::new();
    for table in [
        "games",
        "seats",
        "moves",
        "journal",
        "tournaments",
        "referee_secret",
    ] {
        for row in client
            .query(&format!("SELECT t::text FROM {table} t"), &[])
            .await
            .unwrap()
        {
            out.push_str(&row.get::<_, String>(0));
            out.push('\n');
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_holds_no_seed_and_no_token_and_another_secret_is_refused() {
    use punct_referee::service::grpc::pb::dots::v1 as dpb;
    use punct_referee::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
    use sha2::Digest as _;
    use tokio_stream::StreamExt as _;
    let Some(server) = test_database_url() else {
        return;
    };
    let url = fresh_database(&server, "punct_it").await;
    let dir = std::env::temp_dir().join(format!("pg-at-rest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let secret_file = dir.join("referee.secret");
    let secret_arg = secret_file.to_str().unwrap().to_string();
    let start =
        || async { Referee::start(&mut serve(&url, &["--secret-file", &secret_arg])).await };
    let referee = start().await;
    let mut c = referee.client().await;
    // A Dots game dealt from the client's seed (its four crosses).
    let seed = hex(&rand::random::<[u8; 32]>());
    let dots = c
        .create_game(pb::CreateGameRequest {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                    width: 39,
                    height: 32,
                    start: dpb::Start::QuadrupleCross as i32,
                    max_moves: 0,
                })),
            }),
            seed: seed.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let dots_id = dots.game.as_ref().unwrap().game_id.clone();
    let mut secrets: Vec<String> = dots.seats.iter().map(|s| s.token.clone()).collect();
    // A tournament whose first entrant is given its seat.
    let mut t = TournamentServiceClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{}", referee.addr))
            .unwrap()
            .connect()
            .await
            .unwrap(),
    );
    let created = t
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(pb::TournamentSpec {
                name: "at rest".into(),
                rules: Some(pb::GameRules {
                    game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                        width: 8,
                        height: 8,
                        ..Default::default()
                    })),
                }),
                format: pb::TournamentFormat::RoundRobin as i32,
                games_per_pairing: 1,
                time_control: Some(pb::TimeControl {
                    lag_compensation: None,
                    mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                        move_ms: 600_000,
                    })),
                    first_move_deadline_ms: None,
                }),
                ..Default::default()
            }),
            entrants: vec!["a".into(), "b".into()],
        })
        .await
        .unwrap()
        .into_inner();
    let tournament_id = created.tournament.unwrap().tournament_id;
    t.start_tournament(pb::StartTournamentRequest {
        tournament_id: tournament_id.clone(),
    })
    .await
    .unwrap();
    let key = created.keys[0].entrant_key.clone();
    secrets.extend(created.keys.iter().map(|k| k.entrant_key.clone()));
    let mut stream = t
        .connect_entrant(pb::ConnectEntrantRequest {
            entrant_key: key.clone(),
            tournament_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let Some(pb::connect_entrant_response::Event::Game(assigned)) = first.event else {
        panic!("a game first");
    };
    drop(stream);
    secrets.push(assigned.seat_token.clone());
    let tables = dump(&url).await;
    assert!(tables.contains(&dots_id), "the game is stored");
    assert!(tables.contains(&tournament_id), "the tournament is stored");
    assert!(!tables.contains(&seed), "the seed is stored in the clear");
    for s in &secrets {
        assert!(
            !tables.contains(s.as_str()),
            "a token or key is stored: {s}"
        );
    }
    // A restart on the same secret: the same deck, the same seat.
    referee.kill();
    let referee = start().await;
    let mut c = referee.client().await;
    let game = c
        .get_game(pb::GetGameRequest {
            game_id: dots_id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    let seed_bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&seed[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert_eq!(
        game.setup.unwrap().commitment,
        hex(&sha2::Sha256::digest(&seed_bytes))
    );
    c.resign(pb::ResignRequest {
        game_id: dots_id.clone(),
        token: dots.seats[0].token.clone(),
    })
    .await
    .unwrap();
    let over = c
        .get_game(pb::GetGameRequest {
            game_id: dots_id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(over.setup.unwrap().seed, seed, "revealed at the end");
    let mut t = TournamentServiceClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{}", referee.addr))
            .unwrap()
            .connect()
            .await
            .unwrap(),
    );
    let mut stream = t
        .connect_entrant(pb::ConnectEntrantRequest {
            entrant_key: key,
            tournament_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let again = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let Some(pb::connect_entrant_response::Event::Game(again)) = again.event else {
        panic!("the game in progress first");
    };
    assert_eq!(
        (again.game_id, again.seat_token),
        (assigned.game_id, assigned.seat_token)
    );
    drop(stream);
    referee.kill();
    // Another secret file: the start stops, saying why.
    let other = dir.join("other.secret");
    let log = process::try_start(&mut serve(
        &url,
        &["--secret-file", other.to_str().unwrap()],
    ))
    .map(|_| ())
    .expect_err("started with another secret");
    assert!(log.contains("does not match the database"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
