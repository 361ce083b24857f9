//! The load generator (`punct-referee load`) against a server it spawns:
//! a short run must play moves without a single error, and the idle-session
//! meter must report a figure, so neither tool can rot.

use std::process::Command;

use crate::common::process::BIN;

/// Runs `load --spawn ARGS --json -` against an in-memory server and returns
/// its JSON report; the run must succeed.
fn memory_load_report(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["load", "--spawn"])
        .args(args)
        .args(["--json", "-", "--", "--storage", "memory"])
        .output()
        .expect("run the load generator");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn a_short_load_run_plays_moves_without_errors() {
    let dir = std::env::temp_dir().join(format!("punct-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("load.json");
    let out = Command::new(BIN)
        .args([
            "load",
            "--spawn",
            "--games",
            "4",
            "--seconds",
            "2",
            "--warmup",
            "0.2",
            "--channels",
            "2",
            "--pool",
            "8",
            "--json",
        ])
        .arg(&json)
        // Server arguments pass through (the durable store by default, in
        // a temporary directory of the tool's).
        .args(["--", "--max-concurrent-calls", "64", "--sync", "off"])
        .output()
        .expect("run the load generator");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = &report["runs"][0];
    assert_eq!(run["games"], 4);
    assert_eq!(
        (run["errors"].as_u64(), run["baseline_errors"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(run["moves"].as_u64().unwrap() > 0, "{run}");
    assert!(run["baseline_calls"].as_u64().unwrap() > 0, "{run}");
    assert!(run["ratio"].as_f64().unwrap() > 0.0, "{run}");
    assert_eq!(report["server_args"][1], "64");
    // The table says the same.
    assert!(
        stdout
            .lines()
            .any(|l| l.split_whitespace().next() == Some("4")),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_play_run_plays_over_streams_and_reports_beside_submit_move() {
    let report = memory_load_report(&[
        "--games",
        "4",
        "--seconds",
        "1",
        "--warmup",
        "0.2",
        "--pool",
        "8",
        "--play",
    ]);
    let run = &report["runs"][0];
    let play = &run["play"];
    assert_eq!(play["errors"].as_u64(), Some(0), "{run}");
    assert!(play["moves"].as_u64().unwrap() > 0, "{run}");
    // The server's CPU per move of both paths, from the same round.
    assert!(
        play["server_cpu_us_per_move"].as_f64().unwrap() > 0.0,
        "{run}"
    );
    assert!(play["server_cpu_vs_noop"].as_f64().unwrap() > 0.0, "{run}");
    assert!(
        play["unary_server_cpu_vs_noop"].as_f64().unwrap() > 0.0,
        "{run}"
    );
}

#[test]
fn the_idle_session_meter_reports_memory_per_game() {
    let report = memory_load_report(&["--idle-sessions", "2000"]);
    assert_eq!(report["sessions"], 2000);
    assert_eq!(report["game"], "punct");
    let after = report["rss_after_kib"].as_u64().unwrap();
    let before = report["rss_before_kib"].as_u64().unwrap();
    assert!(after > before, "{report}");
    assert!(
        report["bytes_per_session"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

#[test]
fn the_idle_session_meter_creates_games_of_the_game_asked_for() {
    // The report names the game the server says it made (read back).
    for game in ["dots", "punto"] {
        let report = memory_load_report(&["--idle-sessions", "300", "--game", game]);
        assert_eq!(report["game"], game, "{report}");
        assert_eq!(report["sessions"], 300);
    }
}

#[test]
fn bad_flags_are_refused_before_anything_starts() {
    for args in [
        &["load", "--idle-sessions", "10"][..],
        &["load", "--games", "0"][..],
        &["load", "--seconds", "0"][..],
        &["load", "--rounds", "0"][..],
        &["load", "--rounds", "100"][..],
        &["load", "--", "--max-sessions", "5"][..],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with("error: "),
            "{args:?}"
        );
    }
}

#[test]
fn a_short_dots_load_run_replays_its_pool_without_errors() {
    let report = memory_load_report(&[
        "--games",
        "2",
        "--seconds",
        "1",
        "--warmup",
        "0.1",
        "--channels",
        "1",
        "--pool",
        "4",
        "--game",
        "dots",
        "--width",
        "8",
        "--height",
        "8",
        "--start",
        "quadruple-cross",
    ]);
    let run = &report["runs"][0];
    assert_eq!(run["errors"].as_u64(), Some(0), "{run}");
    assert!(run["moves"].as_u64().unwrap() > 0, "{run}");
    // Random games on 8 × 8 last at most the 48 free cells and a ground.
    let plies = report["pool_average_plies"].as_f64().unwrap();
    assert!(plies > 0.0 && plies <= 49.0, "{report}");
}

#[test]
fn the_read_phases_measure_get_game_and_both_legal_move_views() {
    let report = memory_load_report(&[
        "--games",
        "2",
        "--seconds",
        "0.5",
        "--warmup",
        "0.1",
        "--channels",
        "1",
        "--pool",
        "8",
        "--reads",
        "--read-ply",
        "10",
    ]);
    let reads = report["runs"][0]["reads"].as_array().unwrap();
    let names: Vec<(String, u64)> = reads
        .iter()
        .map(|r| {
            (
                r["read"].as_str().unwrap().to_string(),
                r["ply"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [0, 10]
        .into_iter()
        .flat_map(|ply| {
            [
                "GetGame",
                "GetGame compact",
                "ListLegalMoves text",
                "ListLegalMoves notation",
                "ListLegalMoves full",
            ]
            .map(|n| (n.to_string(), ply))
        })
        .collect();
    assert_eq!(names, want);
    for r in reads {
        assert_eq!(r["errors"], 0, "{r}");
        assert!(r["answer_bytes"].as_u64().unwrap() > 0, "{r}");
        // A legal-move list of the opening (66 KB as text, 170 KB in full)
        // can outlast a short window on a loaded machine; the others cannot.
        if !(r["read"].as_str().unwrap().starts_with("ListLegalMoves") && r["ply"] == 0) {
            assert!(r["calls"].as_u64().unwrap() > 0, "{r}");
            assert!(r["ratio"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    // The text and notation views are well under half the full one, the
    // text the smallest.
    let bytes = |i: usize| reads[i]["answer_bytes"].as_u64().unwrap();
    for start in [0, 5] {
        let (text, notation, full) = (bytes(start + 2), bytes(start + 3), bytes(start + 4));
        assert!(
            text < notation && notation * 2 < full,
            "{text} {notation} {full}"
        );
        // The compact snapshot is well under half the full one.
        let (snapshot, compact) = (bytes(start), bytes(start + 1));
        assert!(compact * 2 < snapshot, "{compact} vs {snapshot}");
    }
    // An empty board's snapshot lists no spaces: smaller than mid-game's.
    assert!(bytes(0) < bytes(5), "{} vs {}", bytes(0), bytes(5));
}

/// `--read-kinds` runs only the read phases it names, in their order.
#[test]
fn read_kinds_choose_the_read_phases() {
    let report = memory_load_report(&[
        "--games",
        "1",
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--channels",
        "1",
        "--pool",
        "4",
        "--reads",
        "--read-ply",
        "0",
        "--read-kinds",
        "legal-text,get-game-compact",
    ]);
    let names: Vec<&str> = report["runs"][0]["reads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["read"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["GetGame compact", "ListLegalMoves text"]);
    let bad = Command::new(BIN)
        .args(["load", "--reads", "--read-kinds", "everything"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("get-game-compact"),
        "the error lists the kinds"
    );
}

/// `--rounds 3`: the moves and each read phase are measured three times,
/// each read round against a baseline of its own; the figures shown are the
/// median round's, and every round's ratios are in the report.
#[test]
fn rounds_report_the_median_round_and_every_rounds_ratios() {
    let report = memory_load_report(&[
        "--games",
        "2",
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--channels",
        "1",
        "--pool",
        "4",
        "--rounds",
        "3",
        "--reads",
        "--read-ply",
        "0",
        "--read-kinds",
        "get-game",
    ]);
    let median_of = |entry: &serde_json::Value| {
        let rounds = entry["rounds"].as_array().expect("rounds");
        assert_eq!(rounds.len(), 3, "{entry}");
        let mut ratios: Vec<f64> = rounds
            .iter()
            .map(|r| r["ratio"].as_f64().unwrap())
            .collect();
        assert!(ratios.iter().all(|r| *r > 0.0), "{entry}");
        assert!(rounds.iter().all(|r| r["cpu_ratio"].as_f64().is_some()));
        ratios.sort_by(f64::total_cmp);
        assert_eq!(entry["ratio"].as_f64().unwrap(), ratios[1], "{entry}");
    };
    let run = &report["runs"][0];
    median_of(run);
    assert_eq!(run["errors"], 0);
    assert!(run["moves"].as_u64().unwrap() > 0);
    let reads = run["reads"].as_array().unwrap();
    assert_eq!(reads.len(), 1);
    median_of(&reads[0]);
    assert_eq!(reads[0]["errors"], 0);
}

/// Punto with 3 players: the pool is dealt from the seed the tool gives
/// `CreateGame` (from `--seed`), so the server deals the same cards and
/// every pool match replays to its end, rounds and their changing first
/// seats included (the tool follows the mover the referee names).
#[test]
fn a_short_punto_load_run_replays_whole_three_seat_matches() {
    let report = memory_load_report(&[
        "--games",
        "2",
        "--seconds",
        "2",
        "--warmup",
        "0.1",
        "--channels",
        "1",
        "--pool",
        "4",
        "--game",
        "punto",
        "--players",
        "3",
    ]);
    let run = &report["runs"][0];
    assert_eq!(run["errors"].as_u64(), Some(0), "{run}");
    assert!(run["moves"].as_u64().unwrap() > 0, "{run}");
    assert!(run["games_finished"].as_u64().unwrap() >= 1, "{run}");
    // Four random 3-player matches to 2 round wins from seed 1: several
    // rounds of at most 72 placements each.
    assert_eq!(
        report["pool_average_plies"].as_f64(),
        Some(175.5),
        "{report}"
    );
}

/// Runs `load --spawn ARGS --json -` against a durable server (SQLite,
/// `--sync off`) and returns its JSON report and table; the run must
/// succeed.
fn durable_load_report(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["load", "--spawn", "--seconds", "1", "--warmup", "0.2"])
        .args(["--channels", "2", "--pool", "8", "--games", "4"])
        .args(args)
        .args(["--json", "-", "--", "--sync", "off"])
        .output()
        .expect("run the load generator");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn webhooks_of_a_load_run_arrive_signed_at_the_tools_receiver() {
    let report = durable_load_report(&["--webhooks", "created,ended"]);
    let hooks = &report["webhooks"];
    assert_eq!(
        hooks["kinds"],
        serde_json::json!(["game.created", "game.ended"])
    );
    let created = hooks["by_kind"]["game.created"].as_u64().unwrap_or(0);
    let ended = hooks["by_kind"]["game.ended"].as_u64().unwrap_or(0);
    // Every game created in the run (warm-up included) was reported; the
    // pool's short games end within the run, but the last ones may not.
    assert!(created > 0 && ended > 0 && ended <= created, "{hooks}");
    assert!(
        created >= report["runs"][0]["games_started"].as_u64().unwrap(),
        "{report}"
    );
    assert_eq!(hooks["received"].as_u64(), Some(created + ended), "{hooks}");
    assert_eq!(hooks["bad_signatures"], 0, "{hooks}");
    assert_eq!(hooks["pending_at_end"], 0, "{hooks}");
    assert!(
        hooks["verified"].as_u64().unwrap() >= created + ended,
        "{hooks}"
    );
    assert!(report["runs"][0].get("webhooks").is_none(), "{report}");
}

#[test]
fn compare_webhooks_alternates_phases_with_and_without_an_endpoint() {
    let report = durable_load_report(&["--compare-webhooks", "--rounds", "2"]);
    let run = &report["runs"][0];
    assert_eq!(run["errors"], 0, "{run}");
    let c = &run["webhooks"];
    assert_eq!(
        c["kinds"],
        serde_json::json!(["game.created", "game.ended"])
    );
    let rounds = c["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{c}");
    // The order alternates, so drift on the machine falls on both sides.
    assert_eq!(rounds[0]["endpoint_first"], false);
    assert_eq!(rounds[1]["endpoint_first"], true);
    for r in rounds {
        let (off, on) = (
            r["without_moves_per_sec"].as_f64().unwrap(),
            r["with_moves_per_sec"].as_f64().unwrap(),
        );
        assert!(off > 0.0 && on > 0.0, "{r}");
        assert!(
            (r["ratio"].as_f64().unwrap() - on / off).abs() < 1e-9,
            "{r}"
        );
        assert!(r["with_server_us_per_move"].as_f64().is_some(), "{r}");
    }
    let median = c["median_ratio"].as_f64().unwrap();
    let (a, b) = (
        rounds[0]["ratio"].as_f64().unwrap(),
        rounds[1]["ratio"].as_f64().unwrap(),
    );
    assert!((median - (a + b) / 2.0).abs() < 1e-9, "{c}");
    // Only the phases with the endpoint were delivered, each drained
    // before the endpoint was deleted.
    let hooks = &report["webhooks"];
    assert!(
        hooks["by_kind"]["game.created"].as_u64().unwrap() > 0,
        "{hooks}"
    );
    assert_eq!(hooks["bad_signatures"], 0, "{hooks}");
    assert_eq!(hooks["pending_at_end"], 0, "{hooks}");
}

#[test]
fn webhook_flags_are_checked_before_anything_starts() {
    for (args, says) in [
        (&["--webhooks", "created"][..], "--spawn"),
        (
            &["--spawn", "--webhooks", "created,bogus"],
            "`bogus` is not an event kind",
        ),
        (
            &["--spawn", "--compare-webhooks", "--play"],
            "--compare-webhooks",
        ),
    ] {
        let out = Command::new(BIN)
            .arg("load")
            .args(args)
            .output()
            .expect("run the load generator");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
}
