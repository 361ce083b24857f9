//! Delayed spectators beside the seats and the platform, through the real
//! server (docs/SPECTATOR.md, "Delayed spectators"): the typed
//! `spectator_delay` field and its label, the platform's key and a seat
//! reading live while a reader's key reads delayed on every gRPC surface,
//! a time delay kept across a restart from the stored move times, and a
//! delayed tournament's standings.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use pb::spectator_delay::Delay;
use punct_referee::service::edge::access::{Scope, new_key};
use punct_referee::service::grpc::pb::dots::v1 as dpb;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
use punct_referee::service::{ServerOptions, StorageConfig};
use punct_referee::tools::tournament::entrant::{EntrantBot, play_entrant};
use tonic::Code;
use tonic_types::StatusExt as _;

const IN_PROGRESS: i32 = pb::GameStatus::InProgress as i32;
const FINISHED: i32 = pb::GameStatus::Finished as i32;

fn typed(delay: Delay) -> Option<pb::SpectatorDelay> {
    Some(pb::SpectatorDelay { delay: Some(delay) })
}

async fn create_delayed(
    c: &mut Client,
    delay: Option<pb::SpectatorDelay>,
    label: Option<&str>,
) -> Result<pb::CreateGameResponse, tonic::Status> {
    c.create_game(pb::CreateGameRequest {
        rules: Some(rules(ppb::Variant::Standard)),
        labels: label
            .map(|l| ("spectator-delay".to_string(), l.to_string()))
            .into_iter()
            .collect(),
        spectator_delay: delay,
        ..Default::default()
    })
    .await
    .map(tonic::Response::into_inner)
}

async fn read_as(c: &mut Client, id: &str, token: &str) -> pb::Game {
    c.get_game(pb::GetGameRequest {
        game_id: id.to_string(),
        token: token.to_string(),
        ..Default::default()
    })
    .await
    .expect("get")
    .into_inner()
    .game
    .expect("game")
}

async fn game_count(c: &mut Client) -> usize {
    c.list_games(pb::ListGamesRequest {
        page_size: 500,
        ..Default::default()
    })
    .await
    .expect("list")
    .into_inner()
    .games
    .len()
}

fn field_of(e: &tonic::Status) -> String {
    e.get_details_bad_request()
        .expect("bad request details")
        .field_violations[0]
        .field
        .clone()
}

#[tokio::test]
async fn the_typed_spectator_delay_is_the_label_checked_and_shown() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let r = create_delayed(&mut c, typed(Delay::Plies(2)), None)
        .await
        .expect("create");
    let game = r.game.clone().expect("game");
    assert_eq!(game.spectator_delay, typed(Delay::Plies(2)));
    assert_eq!(game.labels["spectator-delay"], "2 plies");
    let t = table_of(game, &r.seats);
    for (ply, mv) in CONNECTION_GAME[..3].iter().enumerate() {
        submit(&mut c, &t, ply as u32, notation(mv))
            .await
            .expect("move");
    }
    // It delays as the label does; everyone is told the delay.
    let seen = get(&mut c, &t.id).await;
    assert_eq!(
        (seen.ply, seen.spectator_delay),
        (1, typed(Delay::Plies(2)))
    );
    let live = read_as(&mut c, &t.id, &t.white).await;
    assert_eq!(
        (live.ply, live.spectator_delay),
        (3, typed(Delay::Plies(2)))
    );

    // The label alone shows as the field; both saying the same delay are
    // taken, the label kept as written; zero is no delay.
    let g = create_delayed(&mut c, None, Some("1 s")).await.unwrap();
    assert_eq!(g.game.unwrap().spectator_delay, typed(Delay::Seconds(1)));
    let g = create_delayed(&mut c, typed(Delay::Seconds(60)), Some("60s"))
        .await
        .unwrap()
        .game
        .unwrap();
    assert_eq!(
        (g.spectator_delay, g.labels["spectator-delay"].as_str()),
        (typed(Delay::Seconds(60)), "60s")
    );
    let g = create_delayed(&mut c, typed(Delay::Plies(0)), None)
        .await
        .unwrap()
        .game
        .unwrap();
    assert_eq!((g.spectator_delay, g.labels.len()), (None, 0));

    // Refusals name the field, say why, and create nothing.
    let before = game_count(&mut c).await;
    let cases = [
        (
            typed(Delay::Plies(3)),
            Some("3 s"),
            "spectator_delay",
            "3 plies differs from the label `spectator-delay: 3 s` (3 s)",
        ),
        (
            typed(Delay::Plies(10_001)),
            None,
            "spectator_delay.plies",
            "10001 plies is longer than 10000",
        ),
        (
            typed(Delay::Seconds(86_401)),
            None,
            "spectator_delay.seconds",
            "86401 s is longer than 86400 s",
        ),
        (
            Some(pb::SpectatorDelay { delay: None }),
            None,
            "spectator_delay",
            "set `plies` or `seconds`",
        ),
    ];
    for (delay, label, field, words) in cases {
        let e = create_delayed(&mut c, delay, label).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}");
        assert_eq!(field_of(&e), field);
        assert!(e.message().contains(words), "{}", e.message());
    }
    assert_eq!(game_count(&mut c).await, before);

    // A tournament: the field sets the label its games get, and is echoed.
    let mut tours = TournamentServiceClient::new(server.channel().await);
    let spec = |delay, labels: &[(&str, &str)]| pb::TournamentSpec {
        name: "delayed".into(),
        rules: Some(dots_rules()),
        format: pb::TournamentFormat::RoundRobin as i32,
        games_per_pairing: 1,
        time_control: Some(per_move_clock()),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        spectator_delay: delay,
        ..Default::default()
    };
    let created = tours
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(spec(typed(Delay::Seconds(5)), &[])),
            entrants: vec!["a".into(), "b".into()],
        })
        .await
        .expect("tournament")
        .into_inner();
    let echoed = created.tournament.unwrap().spec.unwrap();
    assert_eq!(echoed.spectator_delay, typed(Delay::Seconds(5)));
    assert_eq!(echoed.labels["spectator-delay"], "5 s");
    let e = tours
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(spec(
                typed(Delay::Seconds(5)),
                &[("spectator-delay", "5 plies")],
            )),
            entrants: vec!["a".into(), "b".into()],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(field_of(&e), "spec.spectator_delay");
    server.stop().await.unwrap();
}

/// Keys: one with `games:create`, `games:admin` and `read` (the platform),
/// one with `read` only (a spectator); the file they are in.
fn keys(name: &str) -> (String, String, std::path::PathBuf) {
    let dir = scratch(name);
    let (platform, line_p) = new_key(
        "platform",
        &[Scope::GamesCreate, Scope::GamesAdmin, Scope::Read],
    );
    let (reader, line_r) = new_key("reader", &[Scope::Read]);
    let file = dir.join("keys.jsonl");
    std::fs::write(&file, format!("{line_p}\n{line_r}\n")).unwrap();
    (platform, reader, file)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-delay-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn keyed<T>(message: T, key: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    request
}

/// Everything one reader (a key, and a seat's token or none) reads of game
/// `id` over gRPC: each surface's ply, and the watch stream's snapshot ply.
async fn plies_read(c: &mut Client, id: &str, key: &str, token: &str) -> [u32; 6] {
    let game = c
        .get_game(keyed(
            pb::GetGameRequest {
                game_id: id.into(),
                token: token.into(),
                ..Default::default()
            },
            key,
        ))
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    let legal = c
        .list_legal_moves(keyed(
            pb::ListLegalMovesRequest {
                game_id: id.into(),
                token: token.into(),
                ..Default::default()
            },
            key,
        ))
        .await
        .unwrap()
        .into_inner();
    let picture = c
        .render_position(keyed(
            pb::RenderPositionRequest {
                game_id: id.into(),
                ply: None,
                token: token.into(),
            },
            key,
        ))
        .await
        .unwrap()
        .into_inner();
    let record = c
        .export_game(keyed(
            pb::ExportGameRequest {
                game_id: id.into(),
                token: token.into(),
            },
            key,
        ))
        .await
        .unwrap()
        .into_inner()
        .record;
    // Header lines, a blank line, then one move per line.
    let moves_in_record = record.split_once("\n\n").map_or(0, |(_, moves)| {
        moves.lines().filter(|l| !l.is_empty()).count()
    });
    let listed = c
        .list_games(keyed(pb::ListGamesRequest::default(), key))
        .await
        .unwrap()
        .into_inner()
        .games
        .into_iter()
        .find(|g| g.game_id == id)
        .unwrap();
    let mut watch = c
        .watch_game(keyed(
            pb::WatchGameRequest {
                game_id: id.into(),
                token: token.into(),
                ..Default::default()
            },
            key,
        ))
        .await
        .unwrap()
        .into_inner();
    let snapshot = loop {
        match within(10, watch.message()).await.unwrap().unwrap().item {
            Some(pb::watch_game_response::Item::Snapshot(g)) => break g.ply,
            _ => continue,
        }
    };
    [
        game.ply,
        legal.ply,
        picture.ply,
        u32::try_from(moves_in_record).unwrap(),
        listed.ply,
        snapshot,
    ]
}

#[tokio::test]
async fn the_platform_and_a_seat_read_live_while_a_readers_key_reads_delayed() {
    const DELAY: u32 = 3;
    let (platform, reader, file) = keys("platform");
    let server = TestServer::start_with_http(
        ServerOptions {
            keys_file: Some(file),
            ..test_options()
        },
        None,
    )
    .await;
    let http = server.http.expect("http port");
    let mut c = server.client().await;
    let r = c
        .create_game(keyed(
            pb::CreateGameRequest {
                rules: Some(rules(ppb::Variant::Standard)),
                spectator_delay: typed(Delay::Plies(DELAY)),
                ..Default::default()
            },
            &platform,
        ))
        .await
        .expect("create")
        .into_inner();
    let t = table_of(r.game.unwrap(), &r.seats);
    for (i, mv) in CONNECTION_GAME[..6].iter().enumerate() {
        submit(&mut c, &t, i as u32, notation(mv))
            .await
            .expect("move");
        let live = i as u32 + 1;
        let shown = live.saturating_sub(DELAY);
        assert_eq!(
            plies_read(&mut c, &t.id, &platform, "").await,
            [live; 6],
            "the platform at ply {live}"
        );
        // ListGames takes no token: a seat lists games as a spectator.
        assert_eq!(
            plies_read(&mut c, &t.id, &reader, &t.white).await,
            [live, live, live, live, shown, live],
            "a seat at ply {live}"
        );
        assert_eq!(
            plies_read(&mut c, &t.id, &reader, "").await,
            [shown; 6],
            "a reader's key at ply {live}"
        );
        // Every HTTP route is a spectator's.
        let json = crate::service_http::get(http, &format!("/api/games/{}", t.id))
            .await
            .json();
        assert_eq!(json["ply"], shown);
    }
    server.stop().await.unwrap();
}

/// A server on the SQLite store in `dir`: started again on it, a restart.
async fn start_on(dir: &std::path::Path) -> TestServer {
    use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
    TestServer::start_with(ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.to_path_buf(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        ..test_options()
    })
    .await
}

#[tokio::test]
async fn a_time_delay_counts_the_stored_move_times_after_a_restart() {
    const DELAY: Duration = Duration::from_secs(2);
    // A move's time is taken before it is acknowledged (a bound on the
    // way back, not a speed).
    const SLACK: Duration = Duration::from_millis(200);
    let dir = scratch("restart");
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    let r = create_delayed(&mut c, typed(Delay::Seconds(2)), None)
        .await
        .expect("create");
    let t = table_of(r.game.unwrap(), &r.seats);
    for (ply, mv) in CONNECTION_GAME[..3].iter().enumerate() {
        submit(&mut c, &t, ply as u32, notation(mv))
            .await
            .expect("move");
    }
    // Wait until the spectator sees the three moves.
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(&mut c, &t.id).await.ply < 3 {
        assert!(Instant::now() < deadline, "ply 3 never shown");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = get(&mut c, &t.id).await;
    // One more move, and a restart before it is shown.
    submit(&mut c, &t, 3, notation(CONNECTION_GAME[3]))
        .await
        .expect("move 4");
    let played = Instant::now();
    drop(c);
    server.stop().await.unwrap();
    let server = start_on(&dir).await;
    let mut c = server.client().await;
    // The seats read on; a spectator sees at once what it saw before
    // (the moves count from when they were played, not from the restart),
    // and the fourth move no earlier than the delay after it.
    assert_eq!(read_as(&mut c, &t.id, &t.white).await.ply, 4);
    let after = get(&mut c, &t.id).await;
    assert!(
        after.ply >= 3,
        "shown before the restart: 3, after: {}",
        after.ply
    );
    if played.elapsed() + SLACK < DELAY {
        assert_eq!(after.ply, 3);
        let mut shown = before;
        let mut now = after;
        // The clocks are read now (frozen for the spectator in both).
        shown.clock = None;
        now.clock = None;
        assert_eq!(now, shown, "the same view before and after the restart");
    }
    let mut watch = c
        .watch_game(pb::WatchGameRequest {
            game_id: t.id.clone(),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    let mut last = 0;
    while last < 4 {
        match within(20, watch.message()).await.unwrap().unwrap().item {
            Some(pb::watch_game_response::Item::Snapshot(g)) => last = g.ply,
            Some(pb::watch_game_response::Item::Event(e)) => last = e.ply,
            _ => {}
        }
    }
    let lag = played.elapsed();
    assert!(
        lag + SLACK >= DELAY,
        "ply 4 shown {lag:?} after it was played"
    );
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn per_move_clock() -> pb::TimeControl {
    pb::TimeControl {
        mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
            move_ms: 10_000,
        })),
        first_move_deadline_ms: None,
        lag_compensation: None,
    }
}

fn dots_rules() -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width: 8,
            height: 8,
            ..Default::default()
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_tournament_shows_a_reader_the_standings_of_the_shown_games_and_the_platform_live()
 {
    let (platform, reader, file) = keys("tournament");
    let (organiser, line_o) = new_key("organiser", &[Scope::TournamentsManage]);
    let mut lines = std::fs::read_to_string(&file).unwrap();
    lines.push_str(&line_o);
    std::fs::write(&file, lines).unwrap();
    let server = TestServer::start_with_http(
        ServerOptions {
            keys_file: Some(file),
            ..test_options()
        },
        None,
    )
    .await;
    let http = server.http.expect("http port");
    let mut tours = TournamentServiceClient::new(server.channel().await);
    let created = tours
        .create_tournament(keyed(
            pb::CreateTournamentRequest {
                spec: Some(pb::TournamentSpec {
                    name: "delayed".into(),
                    rules: Some(dots_rules()),
                    format: pb::TournamentFormat::RoundRobin as i32,
                    games_per_pairing: 1,
                    time_control: Some(per_move_clock()),
                    // Long enough that no end is shown while the test runs.
                    spectator_delay: typed(Delay::Seconds(600)),
                    ..Default::default()
                }),
                entrants: vec!["greedy".into(), "r1".into()],
            },
            &organiser,
        ))
        .await
        .expect("create")
        .into_inner();
    let id = created.tournament.unwrap().tournament_id;
    tours
        .start_tournament(keyed(
            pb::StartTournamentRequest {
                tournament_id: id.clone(),
            },
            &organiser,
        ))
        .await
        .expect("start");
    let bots = [
        EntrantBot::new("greedy".parse().unwrap(), 1, Duration::from_secs(10)),
        EntrantBot::new("r1=random".parse().unwrap(), 2, Duration::from_secs(10)),
    ];
    let mut tasks = Vec::new();
    for (key, bot) in created.keys.iter().zip(bots) {
        tasks.push(tokio::spawn(play_entrant(
            server.channel().await,
            key.entrant_key.clone(),
            bot,
        )));
    }
    for task in tasks {
        within(240, task).await.unwrap().unwrap();
    }
    let read = |key: String| {
        let mut tours = tours.clone();
        let id = id.clone();
        async move {
            tours
                .get_tournament(keyed(pb::GetTournamentRequest { tournament_id: id }, &key))
                .await
                .unwrap()
                .into_inner()
                .tournament
                .unwrap()
        }
    };
    // The platform: finished, one game won.
    let live = read(platform.clone()).await;
    assert_eq!(live.status, pb::TournamentStatus::Finished as i32);
    let points: f64 = live.standings.iter().map(|s| s.points).sum();
    assert_eq!(points, 1.0);
    let game_id = live.games[0].game_id.clone();
    assert!(!game_id.is_empty());
    // A reader: its game still playing, no result counted, not over.
    let delayed = read(reader.clone()).await;
    assert_eq!(delayed.status, pb::TournamentStatus::Running as i32);
    assert!(
        delayed
            .standings
            .iter()
            .all(|s| s.games == 0 && s.points == 0.0),
        "{:?}",
        delayed.standings
    );
    let listed = tours
        .list_tournaments(keyed(pb::ListTournamentsRequest::default(), &reader))
        .await
        .unwrap()
        .into_inner()
        .tournaments
        .into_iter()
        .find(|t| t.tournament_id == id)
        .unwrap();
    assert_eq!(listed.status, pb::TournamentStatus::Running as i32);
    // Its status filter sees what it is shown: not among the finished
    // ones, among the running ones; the platform sees it finished.
    let ids_of = |status: pb::TournamentStatus, key: &str| {
        let mut tours = tours.clone();
        let key = key.to_string();
        async move {
            let request = pb::ListTournamentsRequest {
                status: status as i32,
                ..Default::default()
            };
            tours
                .list_tournaments(keyed(request, &key))
                .await
                .unwrap()
                .into_inner()
                .tournaments
                .into_iter()
                .map(|t| t.tournament_id)
                .collect::<Vec<_>>()
        }
    };
    assert!(
        !ids_of(pb::TournamentStatus::Finished, &reader)
            .await
            .contains(&id)
    );
    assert!(
        ids_of(pb::TournamentStatus::Running, &reader)
            .await
            .contains(&id)
    );
    assert!(
        ids_of(pb::TournamentStatus::Finished, &platform)
            .await
            .contains(&id)
    );
    assert!(
        !ids_of(pb::TournamentStatus::Running, &platform)
            .await
            .contains(&id)
    );
    // Its game: over for the platform, in progress for a reader.
    let mut c = server.client().await;
    let game = |key: String| {
        let mut c = c.clone();
        let game_id = game_id.clone();
        async move {
            c.get_game(keyed(
                pb::GetGameRequest {
                    game_id,
                    ..Default::default()
                },
                &key,
            ))
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap()
        }
    };
    assert_eq!(game(platform).await.status, FINISHED);
    let shown = game(reader).await;
    assert_eq!((shown.status, shown.ply), (IN_PROGRESS, 0));
    // The HTTP JSON is a spectator's.
    let json = crate::service_http::get(http, &format!("/api/tournaments/{id}"))
        .await
        .json();
    assert_eq!(json["status"], "running", "{json}");
    assert_eq!(json["games_done"], 0, "{json}");
    assert!(
        json["standings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["games"] == 0 && s["points"] == 0.0),
        "{json}"
    );
    let list = crate::service_http::get(http, "/api/tournaments")
        .await
        .json();
    let mine = list["tournaments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(mine["status"], "running", "{mine}");
    let _ = &mut c;
    server.stop().await.unwrap();
}
