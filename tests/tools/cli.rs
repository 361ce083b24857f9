//! The `punct-referee` binary's engine commands, run as a user would.

use std::process::Command;

use crate::common::process::BIN;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn perft_prints_one_line_per_depth() {
    let (code, out, _) = run(&["perft", "--variant", "basic", "--depth", "2"]);
    assert_eq!(code, 0);
    assert_eq!(out, "depth 1: 4986\ndepth 2: 28499958\n");
}

#[test]
fn perft_after_moves() {
    // After White's SE and Black's T, White has a piece on the board: its
    // moves add to the placements.
    let (code, out, _) = run(&[
        "perft",
        "--depth",
        "1",
        "--moves",
        "SE@E5:F5,G5; T@J3:K3,K4",
    ]);
    assert_eq!(code, 0);
    let n: u64 = out
        .trim()
        .strip_prefix("depth 1: ")
        .and_then(|n| n.parse().ok())
        .expect("a count");
    let (_, listed, _) = run(&["legal", "--moves", "SE@E5:F5,G5;T@J3:K3,K4"]);
    assert_eq!(listed.lines().count() as u64, n);
    assert!(
        listed.lines().any(|l| l == "E5>E6:F6,G6"),
        "a slide up one row"
    );
}

#[test]
fn legal_lists_sorted_canonical_moves() {
    let (code, out, _) = run(&["legal", "--variant", "standard"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4986);
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert_eq!(lines[0], "AL@A2:A3,B4");
    assert!(lines.iter().all(|l| !l.contains("I9")));
}

#[test]
fn legal_reports_the_outcome_when_the_game_is_over() {
    let (code, out, _) = run(&[
        "legal",
        "--max-plies",
        "2",
        "--moves",
        "SE@E5:F5,G5;T@J3:K3,K4",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out, "game over: draw MOVE_LIMIT\n");
}

#[test]
fn a_bad_move_is_refused_with_its_turn_and_reason() {
    let (code, out, err) = run(&["legal", "--moves", "SE@E5:F5,G5; SE@E5:F5,G5"]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert_eq!(
        err.trim(),
        "error: move 2 `SE@E5:F5,G5`: E5 is not empty: new pieces go on empty spaces at level 0"
    );
    let (code, _, err) = run(&["perft", "--depth", "1", "--moves", "banana"]);
    assert_eq!(code, 2);
    assert!(err.contains("`banana` is not a move"), "{err}");
}

#[test]
fn show_draws_the_board_and_the_record() {
    let (code, out, _) = run(&["show", "--moves", "SE@E5:F5,G5"]);
    assert_eq!(code, 0);
    assert!(out.contains(" 5 "), "{out}");
    assert!(out.contains("W   w   w"), "{out}");
    assert!(out.contains("Black to move, ply 1"), "{out}");
    assert!(
        out.ends_with("game: punct\nvariant: standard\n\nSE@E5:F5,G5\n"),
        "{out}"
    );
}

#[test]
fn show_svg_replays_a_record_file_and_highlights_the_win() {
    let record = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/pictures/sample-game.txt");
    let (code, out, err) = run(&["show", "--svg", "--record", record]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("<svg "));
    assert_eq!(out.matches(r#"<circle class="space"#).count(), 211);
    // 119 plies were played; the winner's chain and the last move are marked.
    assert!(out.contains("ply 119"));
    assert!(out.matches(r#"<circle class="chain""#).count() >= 16);
    assert_eq!(out.matches(r#"<circle class="last""#).count(), 3);
    // The committed picture is exactly what the documented command prints.
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/pictures/sample-game.svg"
    ))
    .unwrap();
    assert_eq!(out, committed);
}

#[test]
fn a_broken_record_file_is_refused_with_its_line() {
    let dir = std::env::temp_dir().join(format!("punct-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.txt");
    std::fs::write(&path, "game: punct\n\nSE@E5:F5,G5\nSE@E5:F5,G5\n").unwrap();
    let (code, _, err) = run(&["show", "--record", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("line 4 (turn 2, `SE@E5:F5,G5`): E5 is not empty"),
        "{err}"
    );
}

#[test]
fn dots_legal_perft_and_show_go_through_the_game_trait() {
    let field = [
        "--game", "dots", "--width", "4", "--height", "4", "--start", "empty",
    ];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = extra[..1].to_vec();
        args.extend_from_slice(&field);
        args.extend_from_slice(&extra[1..]);
        run(&args)
    };
    // 16 cells and ground, sorted by notation; after two dots, 14 and ground.
    let (code, out, _) = with(&["legal", "--moves", "1,1; 2,2"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 15);
    assert_eq!((lines[0], lines[14]), ("1,2", "ground"));
    // Ground ends a sequence: 16 × 16 at depth 2, 16 × 15 × 15 at depth 3.
    let (code, out, _) = with(&["perft", "--depth", "3"]);
    assert_eq!(code, 0);
    assert_eq!(out, "depth 1: 17\ndepth 2: 256\ndepth 3: 3600\n");
    // docs/rules/dots.md §11.A and Blue grounds: 1–0, and the record says so.
    let example = "3,2;3,3;2,3;1,1;4,3;1,2;3,4;ground";
    let (code, out, err) = run(&[
        "show", "--game", "dots", "--width", "5", "--height", "5", "--start", "empty", "--moves",
        example,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" 3 .RbR.\n"), "{out}");
    assert!(
        out.contains("game over: red wins by GROUND, scores 1-0\n"),
        "{out}"
    );
    assert!(
        out.contains("game: dots\n") && out.contains("end: ground\n"),
        "{out}"
    );
    let (_, svg, _) = with(&["show", "--svg", "--moves", "2,2"]);
    assert!(svg.starts_with("<svg ") && svg.contains("ply 1"), "{svg}");
    // The record read back: the game is over, so no legal moves.
    let dir = std::env::temp_dir().join(format!("punct-cli-dots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("a.txt");
    std::fs::write(&record, out.split_once("\n\n").unwrap().1).unwrap();
    let (code, legal, err) = run(&["legal", "--record", record.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(legal, "game over: red wins by GROUND, scores 1-0\n");
    let _ = std::fs::remove_dir_all(&dir);
    // Refusals: a move on a dot, a seeded start without its seed, a field
    // too small.
    let (code, _, err) = with(&["legal", "--moves", "1,1;1,1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("move 2 `1,1`") && err.contains("already has"),
        "{err}"
    );
    let (code, _, err) = run(&["legal", "--game", "dots", "--start", "quadruple-cross"]);
    assert_eq!(code, 2);
    assert!(err.contains("--game-seed"), "{err}");
    let seed = "00".repeat(32);
    let (code, out, _) = run(&[
        "perft",
        "--game",
        "dots",
        "--width",
        "8",
        "--height",
        "8",
        "--start",
        "quadruple-cross",
        "--game-seed",
        &seed,
        "--depth",
        "1",
    ]);
    assert_eq!((code, out.as_str()), (0, "depth 1: 49\n"));
    let (code, _, err) = run(&["legal", "--game", "dots", "--width", "3"]);
    assert_eq!(code, 2);
    assert!(err.contains("4..=64"), "{err}");
}

/// A Punto match of `options` from the all-zero seed, each seat always
/// taking the first legal cell, played to its end: its record (with the
/// seed, as the match is over).
fn punto_first_cell_record(options: punct_referee::games::punto::RuleOptions) -> String {
    use punct_referee::games::{Rules as _, Setup, Viewer};
    let mut game = options.start(Some(Setup {
        seed: [0; 32],
        supplied: true,
    }));
    while game.outcome().is_none() {
        let first = game.legal_moves().remove(0);
        game.play(&first.detail.to_input()).unwrap();
    }
    game.record(&[], Viewer::Spectator)
}

#[test]
fn punto_legal_perft_show_and_svg_go_through_the_game_trait() {
    let seed = "00".repeat(32);
    let three = ["--game", "punto", "--players", "3", "--game-seed", &seed];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = extra[..1].to_vec();
        args.extend_from_slice(&three);
        args.extend_from_slice(&extra[1..]);
        run(&args)
    };
    // docs/rules/punto.md §5.3: the first card goes on 0,0; then the cells around.
    assert_eq!(with(&["legal"]), (0, "0,0\n".to_string(), String::new()));
    let (code, out, _) = with(&["legal", "--moves", "0,0;1,0"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "-1,-1\n-1,0\n-1,1\n0,-1\n0,1\n1,-1\n1,1\n2,-1\n2,0\n2,1\n"
    );
    let (code, out, _) = with(&["perft", "--depth", "3"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "depth 1: 1\ndepth 2: 8\ndepth 3: 88\n")
    );
    // The table, whose turn with which card, the decks, the record without
    // the seed (the match goes on).
    let (code, out, err) = with(&["show", "--moves", "0,0;1,0;0,1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("  1   B4  ..\n  0   R5  O4\n"), "{out}");
    assert!(
        out.contains("round 1, ply 3: seat 1 (red) to place G7\n"),
        "{out}"
    );
    assert!(out.contains("seat 2 (orange): 23 cards: "), "{out}");
    assert!(
        out.contains("game: punto\nplayers: 3\nteam: no\n") && out.contains("commitment: "),
        "{out}"
    );
    assert!(!out.contains("\nseed:"), "{out}");
    let (code, svg, _) = with(&["show", "--svg", "--moves", "0,0;1,0"]);
    assert_eq!(code, 0);
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"), "{svg}");
    // A finished match read back from its record: over, with its seed.
    let dir = std::env::temp_dir().join(format!("punct-cli-punto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("match.txt");
    let options = punct_referee::games::punto::RuleOptions::new(4, true, 2, 0, &[]).unwrap();
    std::fs::write(&record, punto_first_cell_record(options)).unwrap();
    let path = record.to_str().unwrap();
    let (code, legal, err) = run(&["legal", "--record", path]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        legal,
        "game over: orange-green-1 and orange-green-2 win by ROUNDS_WON, scores 0-2-0-2\n"
    );
    let (code, out, err) = run(&["show", "--record", path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("round 1: DEADLOCK, team 2 wins, removes O5, seat 3 begins next\n"),
        "{out}"
    );
    assert!(out.contains("round 18, ply 1253: over\n"), "{out}");
    assert!(out.contains(&format!("\nseed: {seed}\n")), "{out}");
    let (code, svg, _) = run(&["show", "--svg", "--record", path]);
    assert_eq!(code, 0);
    assert!(svg.starts_with("<svg "), "{svg}");
    let _ = std::fs::remove_dir_all(&dir);
    // Refusals: no seed, bad options, a bad move with its number.
    let (code, _, err) = run(&["legal", "--game", "punto"]);
    assert_eq!(code, 2);
    assert!(err.contains("give --game-seed"), "{err}");
    let (code, _, err) = run(&["legal", "--game", "punto", "--players", "5"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--players: Punto is for 2, 3 or 4 players, not 5"),
        "{err}"
    );
    let (code, _, err) = run(&["legal", "--game", "punto", "--players", "3", "--team"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--team: the team variant is for 4 players"),
        "{err}"
    );
    let (code, _, err) = with(&["legal", "--moves", "0,0;5,5"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("move 2 `5,5`: an empty cell must touch a card"),
        "{err}"
    );
}

#[test]
fn the_text_log_has_no_colour_codes_when_not_on_a_terminal() {
    // A container's or a file's log must be plain text: colour only on a
    // terminal (here stderr is a pipe).
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .args([
            "--storage",
            "memory",
            "--log-format",
            "text",
            "--log",
            "info",
        ])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the referee");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    for line in stderr.lines().take(4) {
        let line = line.unwrap_or_default();
        log.push_str(&line);
        log.push('\n');
        if line.contains("listening") || line.contains("serving") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(log.contains("INFO"), "{log}");
    assert!(!log.contains('\u{1b}'), "escape codes in the log:\n{log}");
}

#[test]
fn help_names_the_three_games_and_the_readme_lists_every_serve_flag() {
    let (code, out, err) = run(&["--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("PÜNCT, Dots and Punto"), "{out}");

    let (code, help, err) = run(&["serve", "--help"]);
    assert_eq!(code, 0, "{err}");
    // `--help` shows the HTTP port's default as the README does.
    assert!(help.contains("0.0.0.0:9464"), "{help}");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let mut flags: Vec<&str> = help
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.len() > 2 && w.starts_with("--") && !w.starts_with("---"))
        .collect();
    flags.sort_unstable();
    flags.dedup();
    assert!(flags.contains(&"--node-id"), "{flags:?}");
    let missing: Vec<&&str> = flags
        .iter()
        .filter(|f| !matches!(**f, "--help" | "--version"))
        .filter(|f| !readme.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "serve flags not in README.md: {missing:?}"
    );
}

#[test]
fn entrant_has_the_same_default_server_as_client() {
    let (code, entrant, err) = run(&["entrant", "--help"]);
    assert_eq!(code, 0, "{err}");
    let (_, client, _) = run(&["client", "--help"]);
    let default = "[default: http://127.0.0.1:50051]";
    assert!(client.contains(default), "{client}");
    assert!(entrant.contains(default), "{entrant}");
}

#[test]
fn a_printing_command_whose_reader_went_away_ends_quietly() {
    // `legal … | head -1`: the reader closes the pipe before the output is
    // written; the command must end without a panic (exit 101) or a message.
    use std::io::Read as _;
    use std::process::Stdio;
    for args in [
        &["legal"][..],
        &["perft", "--depth", "2"],
        &["keys", "--name", "x"],
    ] {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(
            status.success() || std::os::unix::process::ExitStatusExt::signal(&status) == Some(13),
            "{args:?}: {status:?} {err}"
        );
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}
