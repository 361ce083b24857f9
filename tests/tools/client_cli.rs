//! The `client` and `tournament` commands of the binary, run as a person
//! would, against a real server started by the test.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::TestServer;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::tools::tournament::{self, Config, Format};

struct Run {
    code: i32,
    out: String,
    err: String,
}

async fn run(server: &TestServer, tokens: &Path, args: &[&str]) -> Run {
    run_at(&format!("http://{}", server.addr), tokens, args).await
}

/// `client --server SERVER --tokens TOKENS ARGS…`, the server written as given.
async fn run_at(server: &str, tokens: &Path, args: &[&str]) -> Run {
    let mut command = tokio::process::Command::new(common::process::BIN);
    command
        .arg("client")
        .args(["--server", server, "--tokens"])
        .arg(tokens)
        .args(args);
    output_of(command).await
}

async fn output_of(mut command: tokio::process::Command) -> Run {
    let out = command.output().await.expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("punct-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_creates_shows_lists_plays_and_is_refused() {
    let server = TestServer::start().await;
    let dir = temp_dir("play");
    let tokens = dir.join("tokens.json");

    let new = run(&server, &tokens, &["new", "--label", "event=club"]).await;
    assert_eq!(new.code, 0, "{}", new.err);
    let id = new.out.lines().next().unwrap().to_string();
    assert!(new.out.contains("White to move"), "{}", new.out);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    assert_eq!(kept["games"][&id]["white"].as_str().unwrap().len(), 32);
    assert_eq!(kept["games"][&id]["black"].as_str().unwrap().len(), 32);

    let show = run(&server, &tokens, &["show", &id]).await;
    assert_eq!(show.code, 0, "{}", show.err);
    let lines: Vec<&str> = show.out.lines().collect();
    assert!(lines[0].starts_with("17"), "{}", show.out);
    assert!(show.out.contains(&format!("game {id} at ply 0")));
    assert_eq!(show.out.matches('+').count(), 19, "{}", show.out);

    let moves = run(&server, &tokens, &["moves", &id]).await;
    assert_eq!(moves.code, 0);
    let listed: Vec<&str> = moves.out.lines().collect();
    let mut client = server.client().await;
    let legal = client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: id.clone(),
            seat: 0,
            token: String::new(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.len(), legal.moves.len());
    assert!(listed.contains(&"SE@E5:F5,G5"));

    let play = run(&server, &tokens, &["play", &id, "se@e5:f5,g5"]).await;
    assert_eq!(play.code, 0, "{}", play.err);
    assert_eq!(
        play.out,
        "White played SE@E5:F5,G5 (ply 1)\nBlack to move\n"
    );

    // Black's turn, on spaces White now covers: refused, with the rule named.
    let refused = run(&server, &tokens, &["play", &id, "SE@E5:F5,G5"]).await;
    assert_eq!(refused.code, 1);
    assert!(
        refused.err.starts_with("error: FailedPrecondition: "),
        "{}",
        refused.err
    );
    assert!(refused.err.contains('['), "reason shown: {}", refused.err);
    // Playing White out of turn is refused by the server, not the client.
    let out_of_turn = run(
        &server,
        &tokens,
        &["play", &id, "SE@B2:B3,B4", "--seat", "white"],
    )
    .await;
    assert_eq!(out_of_turn.code, 1);
    assert!(
        out_of_turn.err.contains("[NOT_YOUR_TURN]"),
        "{}",
        out_of_turn.err
    );

    let missing = run(
        &server,
        &dir.join("other.json"),
        &["play", &id, "SE@B2:B3,B4"],
    )
    .await;
    assert_eq!(missing.code, 1);
    assert!(
        missing.err.contains("no Black token for game"),
        "{}",
        missing.err
    );

    let unknown = run(&server, &tokens, &["show", "nosuchgame"]).await;
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.err.starts_with("error: NotFound"),
        "{}",
        unknown.err
    );

    // Export, then import the record as a new game.
    let file = dir.join("game.txt");
    let export = run(
        &server,
        &tokens,
        &["export", &id, "-o", file.to_str().unwrap()],
    )
    .await;
    assert_eq!(export.code, 0, "{}", export.err);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("event: club") && text.ends_with("SE@E5:F5,G5\n"),
        "{text}"
    );
    let import = run(&server, &tokens, &["import", file.to_str().unwrap()]).await;
    assert_eq!(import.code, 0, "{}", import.err);
    let copy = import.out.lines().next().unwrap().to_string();
    assert_ne!(copy, id);
    assert!(import.out.contains(&format!("game {copy} at ply 1")));
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    assert!(kept["games"][&copy]["black"].is_string());
    assert!(
        kept["games"][&id]["black"].is_string(),
        "earlier games kept"
    );

    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_and_moves_without_a_game_id_use_the_last_game_kept() {
    let server = TestServer::start().await;
    let dir = temp_dir("last");
    let tokens = dir.join("tokens.json");

    // Nothing kept yet: a clear refusal, before any call.
    let none = run(&server, &tokens, &["play", "SE@E5:F5,G5"]).await;
    assert_eq!(none.code, 1);
    assert!(none.err.contains("no game given"), "{}", none.err);

    let first = run(&server, &tokens, &["new"]).await;
    assert_eq!(first.code, 0, "{}", first.err);
    let first = first.out.lines().next().unwrap().to_string();
    let last = run(&server, &tokens, &["new", "--label", "n=2"]).await;
    assert_eq!(last.code, 0, "{}", last.err);
    let last = last.out.lines().next().unwrap().to_string();

    let play = run(&server, &tokens, &["play", "se@e5:f5,g5"]).await;
    assert_eq!(play.code, 0, "{}", play.err);
    assert_eq!(
        play.out,
        "White played SE@E5:F5,G5 (ply 1)\nBlack to move\n"
    );
    let mut client = server.client().await;
    assert_eq!(common::get(&mut client, &last).await.ply, 1);
    assert_eq!(common::get(&mut client, &first).await.ply, 0);

    // `moves` picks the same game: Black's moves now.
    let moves = run(&server, &tokens, &["moves"]).await;
    assert_eq!(moves.code, 0, "{}", moves.err);
    let named = run(&server, &tokens, &["moves", &last]).await;
    assert_eq!(moves.out, named.out);
    assert!(
        !moves.out.is_empty() && !moves.out.contains("SE@E5:F5,G5"),
        "{}",
        moves.out
    );

    // `--seat` still works without a game id (and the server judges it).
    let out_of_turn = run(
        &server,
        &tokens,
        &["play", "SE@B2:B3,B4", "--seat", "white"],
    )
    .await;
    assert_eq!(out_of_turn.code, 1);
    assert!(
        out_of_turn.err.contains("[NOT_YOUR_TURN]"),
        "{}",
        out_of_turn.err
    );
    // A game id given still wins over the last game.
    let named = run(&server, &tokens, &["play", &first, "SE@E5:F5,G5"]).await;
    assert_eq!(named.code, 0, "{}", named.err);
    assert_eq!(common::get(&mut client, &first).await.ply, 1);

    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_address_flag_takes_host_and_port_without_a_scheme() {
    let server = TestServer::start().await;
    let dir = temp_dir("hostport");
    let tokens = dir.join("tokens.json");
    let bare = server.addr.to_string();
    assert!(!bare.contains("://"));

    let new = run_at(&bare, &tokens, &["new"]).await;
    assert_eq!(new.code, 0, "{}", new.err);
    let id = new.out.lines().next().unwrap().to_string();
    let show = run_at(&bare, &tokens, &["show", &id]).await;
    assert_eq!(show.code, 0, "{}", show.err);
    assert!(show.out.contains(&format!("game {id} at ply 0")));
    // The same through PUNCT_SERVER.
    let mut by_env = tokio::process::Command::new(common::process::BIN);
    by_env
        .env("PUNCT_SERVER", &bare)
        .args(["client", "--tokens"])
        .arg(&tokens)
        .args(["moves", &id]);
    let moves = output_of(by_env).await;
    assert_eq!(moves.code, 0, "{}", moves.err);
    assert!(
        moves.out.lines().any(|l| l == "SE@E5:F5,G5"),
        "{}",
        moves.out
    );

    // Garbage is refused before any call, naming the flag; https too.
    for bad in ["not an address", "localhost", "https://127.0.0.1:1"] {
        let refused = run_at(bad, &tokens, &["show", &id]).await;
        assert_eq!(refused.code, 1, "{bad}");
        assert!(
            refused.err.starts_with("error: --server"),
            "{}",
            refused.err
        );
        // The example suggested is one the default listener (IPv4) answers.
        if bad != "https://127.0.0.1:1" {
            assert!(refused.err.contains("127.0.0.1:50051"), "{}", refused.err);
        }
        assert!(!refused.err.contains("[::1]"), "{}", refused.err);
    }

    // The tournament's --server and the load generator's --address.
    let mut tournament = tokio::process::Command::new(common::process::BIN);
    tournament
        .args(["tournament", "random", "random", "-n", "1", "-c", "1"])
        .args(["--max-plies", "6", "--server", &bare, "--records"])
        .arg(dir.join("records"));
    let played = output_of(tournament).await;
    assert_eq!(played.code, 0, "{}", played.err);
    assert!(played.out.contains("1 games; records in"), "{}", played.out);
    let mut load = tokio::process::Command::new(common::process::BIN);
    load.args([
        "load",
        "--address",
        &bare,
        "--games",
        "1",
        "--seconds",
        "0.3",
    ])
    .args([
        "--warmup",
        "0",
        "--channels",
        "1",
        "--pool",
        "1",
        "--json",
        "-",
    ]);
    let loaded = output_of(load).await;
    assert_eq!(loaded.code, 0, "{}", loaded.err);
    let report: serde_json::Value = serde_json::from_str(&loaded.out).unwrap();
    assert_eq!(report["target"], format!("http://{bare}"));
    let mut bad_load = tokio::process::Command::new(common::process::BIN);
    bad_load.args(["load", "--address", "nowhere"]);
    let refused = output_of(bad_load).await;
    assert_eq!(refused.code, 1);
    assert!(
        refused.err.starts_with("error: --address"),
        "{}",
        refused.err
    );

    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_the_board_as_moves_arrive_until_the_game_ends() {
    let server = TestServer::start().await;
    let dir = temp_dir("watch");
    let tokens = dir.join("tokens.json");
    // A real finished game, from the built-in bots.
    let report = tournament::run(
        server.channel().await,
        Config {
            bots: vec!["greedy".parse().unwrap(), "random".parse().unwrap()],
            format: Format::RoundRobin,
            games_per_pairing: 1,
            concurrency: 1,
            seed: 3,
            records: None,
            rules: ppb::RuleOptions::default().into(),
            move_timeout: Duration::from_secs(10),
            name: "watch".into(),
            time_control: None,
        },
        |_, _| {},
    )
    .await
    .unwrap();
    let record = &report.games[0].record;
    assert!(record.contains("result: white CONNECTION"), "{record}");
    // The same game one move short of its end.
    let mut lines: Vec<&str> = record
        .lines()
        .filter(|l| !l.starts_with("result:"))
        .collect();
    let last = lines.pop().unwrap().to_string();
    let unfinished = dir.join("unfinished.txt");
    std::fs::write(&unfinished, lines.join("\n") + "\n").unwrap();
    let import = run(&server, &tokens, &["import", unfinished.to_str().unwrap()]).await;
    assert_eq!(import.code, 0, "{}", import.err);
    let id = import.out.lines().next().unwrap().to_string();

    let url = format!("http://{}", server.addr);
    let watcher = tokio::process::Command::new(common::process::BIN)
        .args(["client", "--server", &url, "watch", &id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let play = run(&server, &tokens, &["play", &id, &last]).await;
    assert_eq!(play.code, 0, "{}", play.err);
    assert!(
        play.out.contains("game over: White wins by CONNECTION"),
        "{}",
        play.out
    );
    let watched = tokio::time::timeout(Duration::from_secs(20), watcher.wait_with_output())
        .await
        .expect("watch ends with the game")
        .unwrap();
    assert!(watched.status.success());
    let out = String::from_utf8_lossy(&watched.stdout);
    assert!(out.contains(&format!("White played {last}")), "{out}");
    assert!(
        out.trim_end()
            .ends_with("game over: White wins by CONNECTION"),
        "{out}"
    );
    // The board after the winning move is drawn, rows labelled.
    assert!(out.lines().any(|l| l.starts_with("17")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tournament_command_runs_an_external_bot_and_writes_records() {
    let server = TestServer::start().await;
    let dir = temp_dir("tournament");
    let records = dir.join("records");
    let bot = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bots/first-legal.sh");
    let out = tokio::process::Command::new(common::process::BIN)
        .args(["tournament", "greedy"])
        .arg(format!("first=cmd:sh {bot}"))
        .args(["-n", "2", "-c", "2", "--server"])
        .arg(format!("http://{}", server.addr))
        .arg("--records")
        .arg(&records)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = stdout.lines().nth(1).unwrap();
    assert!(first.contains("greedy"), "{stdout}");
    assert!(stdout.contains("2/2"), "{stdout}");
    assert!(stdout.contains("2 games; records in"), "{stdout}");
    assert!(!stdout.contains("forfeited"), "{stdout}");
    let mut files: Vec<String> = std::fs::read_dir(&records)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["0001-greedy-vs-first.txt", "0002-first-vs-greedy.txt"]
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

/// docs/rules/dots.md §11.A on 5 × 5: Red's seventh move captures Blue's 3,3.
const DOTS_EXAMPLE_A: [&str; 7] = ["3,2", "3,3", "2,3", "1,1", "4,3", "1,2", "3,4"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_dots_and_a_watcher_follows_it_to_the_end() {
    let server = TestServer::start().await;
    let dir = temp_dir("dots");
    let tokens = dir.join("tokens.json");
    let new = run(
        &server,
        &tokens,
        &[
            "new", "--game", "dots", "--width", "5", "--height", "5", "--start", "empty",
        ],
    )
    .await;
    assert_eq!(new.code, 0, "{}", new.err);
    let id = new.out.lines().next().unwrap().to_string();
    assert!(new.out.contains(" 1 .....\n"), "{}", new.out);
    assert!(new.out.contains("Red to move"), "{}", new.out);
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    assert_eq!(kept["games"][&id]["red"].as_str().unwrap().len(), 32);
    assert_eq!(kept["games"][&id]["blue"].as_str().unwrap().len(), 32);

    let moves = run(&server, &tokens, &["moves"]).await;
    assert_eq!(moves.code, 0, "{}", moves.err);
    assert_eq!(moves.out.lines().count(), 26);
    assert_eq!(moves.out.lines().last(), Some("ground"));

    let url = format!("http://{}", server.addr);
    let watcher = tokio::process::Command::new(common::process::BIN)
        .args(["client", "--server", &url, "watch", &id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (ply, mv) in DOTS_EXAMPLE_A.iter().enumerate() {
        let play = run(&server, &tokens, &["play", mv]).await;
        assert_eq!(play.code, 0, "{}", play.err);
        let seat = if ply % 2 == 0 { "Red" } else { "Blue" };
        assert!(
            play.out
                .starts_with(&format!("{seat} played {mv} (ply {})\n", ply + 1)),
            "{}",
            play.out
        );
    }
    // Seats are the game's: `white` is no seat of Dots; Red is not to move.
    let white = run(&server, &tokens, &["play", "5,5", "--seat", "white"]).await;
    assert_eq!(white.code, 1);
    assert!(white.err.contains("no seat `white`"), "{}", white.err);
    let red = run(&server, &tokens, &["play", "5,5", "--seat", "red"]).await;
    assert!(red.err.contains("[NOT_YOUR_TURN]"), "{}", red.err);
    let held = run(&server, &tokens, &["play", "3,3"]).await;
    assert!(held.err.contains("[OCCUPIED]"), "{}", held.err);
    let show = run(&server, &tokens, &["show", &id]).await;
    assert!(show.out.contains(" 3 .RbR.\n"), "{}", show.out);
    let ground = run(&server, &tokens, &["play", "ground"]).await;
    assert_eq!(ground.code, 0, "{}", ground.err);
    assert!(
        ground.out.ends_with("game over: Red wins by GROUND, 1-0\n"),
        "{}",
        ground.out
    );
    let watched = tokio::time::timeout(Duration::from_secs(20), watcher.wait_with_output())
        .await
        .expect("watch ends with the game")
        .unwrap();
    assert!(watched.status.success());
    let out = String::from_utf8_lossy(&watched.stdout);
    assert!(out.contains("ply 7: Red played 3,4\n"), "{out}");
    assert!(out.contains(" 3 .RbR.\n"), "{out}");
    assert!(
        out.trim_end()
            .ends_with("game over: Red wins by GROUND, 1-0"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

/// The first legal cell of the game the token file kept last (`client
/// moves`), or `None` once the game is over.
async fn first_cell(server: &TestServer, tokens: &Path) -> Option<String> {
    let moves = run(server, tokens, &["moves"]).await;
    assert_eq!(moves.code, 0, "{}", moves.err);
    moves.out.lines().next().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_people_play_punto_to_its_end_and_a_watcher_sees_the_round_over() {
    let server = TestServer::start().await;
    let dir = temp_dir("punto3");
    let tokens = dir.join("tokens.json");
    let seed = "00".repeat(32);
    let new = run(
        &server,
        &tokens,
        &[
            "new",
            "--game",
            "punto",
            "--players",
            "3",
            "--rounds-to-win",
            "1",
            "--max-rounds",
            "1",
            "--game-seed",
            &seed,
        ],
    )
    .await;
    assert_eq!(new.code, 0, "{}", new.err);
    let id = new.out.lines().next().unwrap().to_string();
    assert!(new.out.contains("(empty table)\n"), "{}", new.out);
    assert!(
        new.out
            .contains("round 1, ply 0: seat 1 (red) to place R5\n"),
        "{}",
        new.out
    );
    assert!(new.out.ends_with("Red to move\n"), "{}", new.out);
    // One token per seat, by the seats' names.
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    for seat in ["red", "orange", "blue"] {
        assert_eq!(
            kept["games"][&id][seat].as_str().unwrap().len(),
            32,
            "{seat}"
        );
    }
    assert_eq!(first_cell(&server, &tokens).await.as_deref(), Some("0,0"));

    let url = format!("http://{}", server.addr);
    let watcher = tokio::process::Command::new(common::process::BIN)
        .args(["client", "--server", &url, "watch", &id])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = run(&server, &tokens, &["play", "0,0"]).await;
    assert_eq!(first.code, 0, "{}", first.err);
    assert_eq!(first.out, "Red played R5 on 0,0 (ply 1)\nOrange to move\n");
    // A seat out of turn, a seat of another game, a cell no card can reach.
    let blue = run(&server, &tokens, &["play", "--seat", "blue", "1,0"]).await;
    assert!(blue.err.contains("[NOT_YOUR_TURN]"), "{}", blue.err);
    let white = run(&server, &tokens, &["play", "1,0", "--seat", "white"]).await;
    assert!(white.err.contains("no seat `white`"), "{}", white.err);
    let far = run(&server, &tokens, &["play", "-3,0"]).await;
    assert!(far.err.contains("[NOT_ADJACENT]"), "{}", far.err);
    // Negative cells are read as cells, not flags; every seat in turn.
    let second = run(&server, &tokens, &["play", "-1,-1"]).await;
    assert_eq!(second.code, 0, "{}", second.err);
    assert_eq!(
        second.out,
        "Orange played O4 on -1,-1 (ply 2)\nBlue to move\n"
    );
    let mut last = second.out;
    while let Some(cell) = first_cell(&server, &tokens).await {
        let play = run(&server, &tokens, &["play", &cell]).await;
        assert_eq!(play.code, 0, "{}", play.err);
        last = play.out;
    }
    // Every seat's first cell, from the all-zero seed: a deadlock when the
    // decks run out, drawn, and the round limit ends the match.
    assert!(
        last.starts_with("Blue played B3 on -3,-4 (ply 72)\n"),
        "{last}"
    );
    assert!(
        last.ends_with(
            "round 1: DEADLOCK, drawn, removes nothing, seat - begins next\n\
             game over: draw by ROUND_LIMIT, 0-0-0\n"
        ),
        "{last}"
    );
    let watched = tokio::time::timeout(Duration::from_secs(20), watcher.wait_with_output())
        .await
        .expect("watch ends with the match")
        .unwrap();
    assert!(watched.status.success());
    let out = String::from_utf8_lossy(&watched.stdout);
    assert!(out.contains("ply 1: Red played R5 on 0,0\n"), "{out}");
    assert!(out.contains("ply 72: Blue played B3 on -3,-4\n"), "{out}");
    assert_eq!(out.matches(" played ").count(), 72, "{out}");
    assert!(
        out.trim_end().ends_with(
            "round 1: DEADLOCK, drawn, removes nothing, seat - begins next\n\
             game over: draw by ROUND_LIMIT, 0-0-0"
        ),
        "{out}"
    );
    // The record is the match's, with its seed now that it is over.
    let export = run(&server, &tokens, &["export", &id]).await;
    assert!(
        export.out.contains(&format!("\nseed: {seed}\n")),
        "{}",
        export.out
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_seats_of_a_punto_team_match_each_play_with_their_own_token() {
    let server = TestServer::start().await;
    let dir = temp_dir("punto4");
    let tokens = dir.join("tokens.json");
    let new = run(
        &server,
        &tokens,
        &["new", "--game", "punto", "--players", "4", "--team"],
    )
    .await;
    assert_eq!(new.code, 0, "{}", new.err);
    let id = new.out.lines().next().unwrap().to_string();
    assert!(new.out.ends_with("Red-blue-1 to move\n"), "{}", new.out);
    let seats = [
        "red-blue-1",
        "orange-green-1",
        "red-blue-2",
        "orange-green-2",
    ];
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    for seat in seats {
        assert_eq!(
            file["games"][&id][seat].as_str().unwrap().len(),
            32,
            "{seat}"
        );
    }
    // Each seat plays with its own token: without orange-green-1's token
    // its turn cannot be played.
    let titles = [
        "Red-blue-1",
        "Orange-green-1",
        "Red-blue-2",
        "Orange-green-2",
    ];
    for (ply, cell) in ["0,0", "1,0", "-1,0", "0,1"].iter().enumerate() {
        let play = run(&server, &tokens, &["play", cell]).await;
        assert_eq!(play.code, 0, "{}", play.err);
        assert!(
            play.out.starts_with(titles[ply])
                && play
                    .out
                    .contains(&format!(" on {cell} (ply {})\n", ply + 1))
                && play
                    .out
                    .ends_with(&format!("{} to move\n", titles[(ply + 1) % 4])),
            "{}",
            play.out
        );
    }
    file["games"][&id]
        .as_object_mut()
        .unwrap()
        .remove("red-blue-1");
    std::fs::write(&tokens, serde_json::to_string(&file).unwrap()).unwrap();
    let refused = run(&server, &tokens, &["play", "1,1"]).await;
    assert_eq!(refused.code, 1);
    assert!(
        refused.err.contains("no Red-blue-1 token for game"),
        "{}",
        refused.err
    );
    let show = run(&server, &tokens, &["show", &id]).await;
    assert!(
        show.out
            .contains("round 1, ply 4: seat 1 (red-blue-1) to place "),
        "{}",
        show.out
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

/// `tournament … --game punto FLAGS` on `server`, records into `records`.
async fn punto_tournament(
    server: &TestServer,
    records: &Path,
    bots: &[&str],
    flags: &[&str],
) -> (bool, String, String) {
    let out = tokio::process::Command::new(common::process::BIN)
        .arg("tournament")
        .args(bots)
        .args(["--game", "punto"])
        .args(flags)
        .args(["-c", "2", "--server"])
        .arg(format!("http://{}", server.addr))
        .arg("--records")
        .arg(records)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tournament_command_seats_punto_tables_of_three_and_four() {
    let server = TestServer::start().await;
    let dir = temp_dir("punto-tournament");
    // Three seats: one table of the three bots, the seating rotated.
    let three = dir.join("three");
    let bots = ["greedy", "r1=random", "r2=random"];
    let (ok, out, err) =
        punto_tournament(&server, &three, &bots, &["--players", "3", "-n", "3"]).await;
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[1], "   1  greedy      3     3     0     0     3.0   100.0  +480 (+106 to +1032)",
        "{out}"
    );
    assert!(
        out.contains("greedy          -        3/3        3/3\n"),
        "{out}"
    );
    assert!(
        out.ends_with(&format!("3 games; records in {}\n", three.display())),
        "{out}"
    );
    assert!(!out.contains("forfeited"), "{out}");
    assert_eq!(
        files_in(&three),
        [
            "0001-greedy-vs-r1-vs-r2.txt",
            "0002-r1-vs-r2-vs-greedy.txt",
            "0003-r2-vs-greedy-vs-r1.txt"
        ]
    );
    let record = std::fs::read_to_string(three.join("0002-r1-vs-r2-vs-greedy.txt")).unwrap();
    // Canonical (docs/rules/punto.md §12): the seats' names are in the file's name,
    // not in the record.
    common::checked(&record);
    assert!(!record.contains("\nred: r1\n"), "{record}");
    // Four seats in two teams: greedy's team is greedy and r2.
    let four = dir.join("four");
    let bots = ["greedy", "r1=random", "r2=random", "r3=random"];
    let (ok, out, err) = punto_tournament(
        &server,
        &four,
        &bots,
        &["--players", "4", "--team", "-n", "4", "--seed", "2"],
    )
    .await;
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    // Both of the winning team score half of each game's point.
    assert!(
        lines[1].contains("  4     4     0     0     2.0    50.0  "),
        "{out}"
    );
    assert!(
        lines[2].contains("  4     4     0     0     2.0    50.0  "),
        "{out}"
    );
    assert!(
        lines[3].contains("  4     0     0     4     0.0     0.0  "),
        "{out}"
    );
    assert!(
        out.ends_with(&format!("4 games; records in {}\n", four.display())),
        "{out}"
    );
    assert_eq!(files_in(&four).len(), 4);
    assert!(files_in(&four)[1].starts_with("0002-r1-vs-r2-vs-r3-vs-greedy"));
    // Fewer bots than seats: refused before anything is played.
    let (ok, _, err) = punto_tournament(
        &server,
        &dir.join("none"),
        &["greedy", "random"],
        &["--players", "4"],
    )
    .await;
    assert!(!ok);
    assert!(err.contains("has 4 seats: enter at least 4 bots"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_output_into_a_closed_pipe_ends_quietly() {
    // `client new | head -1`, with the reader gone before the first line.
    let server = TestServer::start().await;
    let dir = temp_dir("pipe");
    let tokens = dir.join("tokens.json");
    for _ in 0..5 {
        let mut child = tokio::process::Command::new(common::process::BIN)
            .arg("client")
            .args(["--server", &format!("http://{}", server.addr), "--tokens"])
            .arg(&tokens)
            .arg("new")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary runs");
        drop(child.stdout.take());
        let out = child.wait_with_output().await.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success()
                || std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(13),
            "{:?} {err}",
            out.status
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_says_why_a_tls_connection_failed() {
    // TLS to a plaintext server: the handshake fails, and the message says
    // how, not only "transport error".
    let server = TestServer::start().await;
    let dir = temp_dir("health-tls");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    let ca = params.self_signed(&key).unwrap();
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let mut health = tokio::process::Command::new(common::process::BIN);
    health
        .args(["health", "--address", &server.addr.to_string(), "--tls-ca"])
        .arg(&ca_path);
    let answer = output_of(health).await;
    assert_eq!(answer.code, 1, "{}", answer.err);
    let line = answer.err.trim_end();
    assert!(line.starts_with("error: cannot connect to"), "{line}");
    assert!(
        !line.ends_with("transport error"),
        "the cause is missing: {line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_lists_every_game_with_its_options_and_defaults() {
    let server = TestServer::start().await;
    let dir = temp_dir("kinds");
    let tokens = dir.join("tokens.json");
    let listed = run(&server, &tokens, &["games"]).await;
    assert_eq!(listed.code, 0, "{}", listed.err);
    let games: Vec<&str> = listed
        .out
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty())
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(games, ["punct", "dots", "punto"], "{}", listed.out);
    for line in [
        "  seats: white, black",
        "  variant: punct.v1.Variant = VARIANT_STANDARD (one of VARIANT_UNSPECIFIED, VARIANT_STANDARD, VARIANT_BASIC)",
        "  max_plies: uint32 = 1000",
        "  width: uint32 = 39",
        "  players: uint32 = 2",
        "  entropy: bytes = (empty)",
    ] {
        assert!(
            listed.out.lines().any(|l| l == line),
            "no `{line}` in:\n{}",
            listed.out
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

/// Runs `client --server … --tokens … tournament ARGS…` and insists on
/// success.
async fn organise(server: &TestServer, tokens: &Path, args: &[&str]) -> String {
    let mut all = vec!["tournament"];
    all.extend_from_slice(args);
    let done = run(server, tokens, &all).await;
    assert_eq!(done.code, 0, "tournament {args:?}: {}", done.err);
    done.out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organiser_runs_a_round_robin_of_remote_entrants_and_exports_records_that_replay() {
    let server = TestServer::start().await;
    let dir = temp_dir("organise");
    let tokens = dir.join("tokens.json");

    // Two entrants at creation, a third added before the start.
    let created = organise(
        &server,
        &tokens,
        &[
            "create",
            "alice",
            "bob",
            "--name",
            "club",
            "-n",
            "1",
            "--max-plies",
            "40",
            "--time-control",
            "fischer:120000+1000",
            "--open-registration",
        ],
    )
    .await;
    let mut lines = created.lines();
    let id = lines.next().unwrap().to_string();
    assert_eq!(id.len(), 32, "{created}");
    let mut keys: Vec<(String, String)> = lines
        .map(|l| {
            let (name, key) = l.split_once('\t').expect("NAME<TAB>KEY");
            (name.to_string(), key.to_string())
        })
        .collect();
    assert_eq!(
        keys.iter().map(|k| k.0.as_str()).collect::<Vec<_>>(),
        ["alice", "bob"]
    );
    let added = organise(&server, &tokens, &["add-entrant", &id, "carol"]).await;
    let (name, key) = added.trim_end().split_once('\t').expect("NAME<TAB>KEY");
    assert_eq!(name, "carol");
    keys.push((name.to_string(), key.to_string()));
    for (_, key) in &keys {
        assert_eq!(key.len(), 32);
        assert!(key.chars().all(|c| c.is_ascii_hexdigit()));
    }
    // A name entered twice is refused with the server's reason.
    let twice = run(&server, &tokens, &["tournament", "add-entrant", &id, "bob"]).await;
    assert_ne!(twice.code, 0);
    assert!(twice.err.contains("DUPLICATE_ENTRANT"), "{}", twice.err);

    // Each entrant connects with the key it was handed.
    let mut entrants = Vec::new();
    for ((_, key), bot) in keys.iter().zip(["random", "greedy", "random"]) {
        let mut command = tokio::process::Command::new(common::process::BIN);
        command
            .args(["entrant", bot, "--server"])
            .arg(format!("http://{}", server.addr))
            .env("PUNCT_ENTRANT_KEY", key)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        entrants.push(command.spawn().expect("the entrant runs"));
    }
    let started = organise(&server, &tokens, &["start", &id]).await;
    assert!(started.contains("running"), "{started}");

    let followed = tokio::time::timeout(
        Duration::from_secs(600),
        organise(&server, &tokens, &["follow", &id, "--interval-ms", "200"]),
    )
    .await
    .expect("the tournament ends");
    assert!(followed.contains("final standings:"), "{followed}");
    assert!(followed.contains("crosstable"), "{followed}");
    for n in 1..=3 {
        assert_eq!(
            followed.matches(&format!("game {n} (round")).count(),
            1,
            "game {n} printed once: {followed}"
        );
    }
    for entrant in entrants {
        let out = tokio::time::timeout(Duration::from_secs(120), entrant.wait_with_output())
            .await
            .expect("the entrant ends with the tournament")
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("forfeited"));
    }

    let mut service = punct_referee::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient::new(server.channel().await);
    let tournament = service
        .get_tournament(pb::GetTournamentRequest {
            tournament_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .tournament
        .unwrap();
    assert_eq!(tournament.status(), pb::TournamentStatus::Finished);
    assert_eq!(tournament.games.len(), 3);
    for s in &tournament.standings {
        let line = format!("{:>4}  {:<5}  {:>5}", s.rank, s.name, s.games);
        assert!(followed.contains(&line), "{line:?} in {followed}");
    }

    let records = dir.join("records");
    let exported = organise(
        &server,
        &tokens,
        &["export", &id, "-o", records.to_str().unwrap()],
    )
    .await;
    assert_eq!(exported.lines().count(), 3, "{exported}");
    assert_eq!(files_in(&records).len(), 3);
    let mut client = server.client().await;
    let mut points: std::collections::HashMap<String, f64> = Default::default();
    for game in &tournament.games {
        let names: Vec<&str> = game
            .entrants
            .iter()
            .map(|&e| tournament.entrants[e as usize].name.as_str())
            .collect();
        let file = records.join(format!("{:04}-{}.txt", game.number, names.join("-vs-")));
        assert!(file.exists(), "{} in {exported}", file.display());
        let imported = run(&server, &tokens, &["import", file.to_str().unwrap()]).await;
        assert_eq!(imported.code, 0, "{}", imported.err);
        let again = client
            .get_game(pb::GetGameRequest {
                game_id: imported.out.lines().next().unwrap().to_string(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap();
        let outcome = again.outcome.expect("the imported game is over");
        assert_eq!(outcome.winners, game.winners, "game {}", game.number);
        assert_eq!(outcome.reason, game.reason, "game {}", game.number);
        // Recount the standings from the imported results.
        for (seat, name) in names.iter().enumerate() {
            let seat_number = seat as u32 + 1;
            let share = if outcome.winners.is_empty() {
                1.0 / names.len() as f64
            } else if outcome.winners.contains(&seat_number) {
                1.0 / outcome.winners.len() as f64
            } else {
                0.0
            };
            *points.entry(name.to_string()).or_default() += share;
        }
    }
    for s in &tournament.standings {
        assert_eq!(points[&s.name], s.points, "{}", s.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organiser_cancels_a_tournament_and_follow_ends_at_once() {
    let server = TestServer::start().await;
    let dir = temp_dir("organise-cancel");
    let tokens = dir.join("tokens.json");
    let created = organise(
        &server,
        &tokens,
        &["create", "ann", "ben", "--game", "dots"],
    )
    .await;
    let id = created.lines().next().unwrap().to_string();
    // Starting twice is refused with the server's reason, and changes nothing.
    organise(&server, &tokens, &["start", &id]).await;
    let again = run(&server, &tokens, &["tournament", "start", &id]).await;
    assert_ne!(again.code, 0);
    assert!(again.err.contains("ALREADY_STARTED"), "{}", again.err);
    let cancelled = organise(&server, &tokens, &["cancel", &id]).await;
    assert!(cancelled.contains(": cancelled,"), "{cancelled}");
    let followed = tokio::time::timeout(
        Duration::from_secs(120),
        organise(&server, &tokens, &["follow", &id]),
    )
    .await
    .expect("follow ends with the tournament");
    assert!(followed.contains(": cancelled,"), "{followed}");
    assert!(followed.contains("final standings:"), "{followed}");
    let unknown = run(&server, &tokens, &["tournament", "show", &"0".repeat(32)]).await;
    assert_ne!(unknown.code, 0);
    assert!(unknown.err.contains("NotFound"), "{}", unknown.err);
    let _ = std::fs::remove_dir_all(&dir);
    server.stop().await.unwrap();
}
