//! Failure policies with real bots (docs/POLICIES.md): bots written with
//! the Node kit (`clients/node/src/bot.js`, run by `node`) play tournaments
//! held by the real server — one that crashes, one that plays illegal
//! moves, one that is late — against a bot that plays well, under each
//! policy, and the game, its record and the standings say what the policy
//! promises. The kit needs its packages (`npm ci` in clients/node, as
//! scripts/test-clients.sh does); without them these tests say so and
//! pass, unless PUNCT_REFEREE_REQUIRE_KITS=1 makes that a failure.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use super::{TestServer, TournamentServiceClient, Tournaments, create, get, start};
use crate::common;
use punct_referee::service::grpc::pb::referee::v1 as pb;

const LOSE: i32 = pb::FailureAction::Lose as i32;
const SUBSTITUTE: i32 = pb::FailureAction::Substitute as i32;
const PAUSE: i32 = pb::FailureAction::Pause as i32;

/// One bot, by mode: `good` plays the first legal move; `crash` exits at
/// its second turn; `illegal` plays its first move again from its second
/// turn on (the cell is taken: a rule refusal); `late` thinks `late_ms`
/// from its second turn on, past its clock (the kit's own overrun guard is
/// turned off, as a slow bot's would not help it).
const BOT: &str = r"
import { Bot } from 'KIT';
const [server, key, mode, lateMs] = process.argv.slice(2);
class TestBot extends Bot {
  onFailure = 'leave';
  clockMarginMs = mode === 'late' ? -600000 : 100;
  turns = 0;
  first = null;
  async choose(state, legalMoves) {
    this.turns += 1;
    this.first ??= legalMoves[0];
    if (this.turns > 1) {
      if (mode === 'crash') process.exit(3);
      if (mode === 'illegal') return this.first;
      if (mode === 'late') await new Promise((r) => setTimeout(r, Number(lateMs)));
    }
    return legalMoves[0];
  }
}
await new TestBot().run(server, key);
";

/// The kit's folder, if its packages are installed.
fn kit() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/node");
    let ready = root.join("node_modules/@grpc/grpc-js").is_dir()
        && std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if ready {
        return Some(root);
    }
    assert!(
        std::env::var_os("PUNCT_REFEREE_REQUIRE_KITS").is_none(),
        "the Node kit is not installed (npm ci in clients/node) and PUNCT_REFEREE_REQUIRE_KITS is set"
    );
    eprintln!("skipped: the Node kit's packages are not installed (npm ci in clients/node)");
    None
}

/// The bot script, written once per test into a scratch folder.
fn script(kit: &std::path::Path, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-referee-kit-failures-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join("bot.mjs");
    let url = format!("file://{}", kit.join("src/bot.js").display());
    std::fs::write(&path, BOT.replace("KIT", &url)).expect("bot script");
    path
}

fn dots_8x8() -> pb::GameRules {
    use punct_referee::service::grpc::pb::dots::v1 as dpb;
    pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width: 8,
            height: 8,
            ..Default::default()
        })),
    }
}

/// What one tournament of `good` against a bot in `mode` ended with.
struct Played {
    /// The game's result in the tournament.
    game: pb::TournamentGame,
    /// The game itself.
    snapshot: pb::Game,
    /// The bad bot's seat (1-based).
    bad_seat: u32,
    /// The standings line of each: good, bad.
    standings: (pb::Standing, pb::Standing),
}

async fn play(
    server: &TestServer,
    bot: &std::path::Path,
    mode: &str,
    late_ms: u64,
    move_ms: u64,
    policy: pb::FailurePolicy,
) -> Played {
    let mut t: Tournaments = TournamentServiceClient::new(server.channel().await);
    let spec = pb::TournamentSpec {
        name: format!("kit {mode}"),
        rules: Some(dots_8x8()),
        format: pb::TournamentFormat::RoundRobin as i32,
        games_per_pairing: 1,
        time_control: Some(pb::TimeControl {
            lag_compensation: None,
            mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                move_ms,
            })),
            first_move_deadline_ms: Some(20_000),
        }),
        failure_policy: Some(policy),
        ..Default::default()
    };
    let (created, keys) = create(&mut t, spec, &["good", "bad"]).await;
    let id = created.tournament_id.clone();
    let server_addr = server.addr.to_string();
    let mut bots = Vec::new();
    for (key, m) in keys.iter().zip(["good", mode]) {
        bots.push(
            tokio::process::Command::new("node")
                .arg(bot)
                .args([&server_addr, &key.entrant_key, m, &late_ms.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .expect("node runs"),
        );
    }
    // Both connected before the start, so neither starts late.
    let mut waited = 0;
    while get(&mut t, &id)
        .await
        .entrants
        .iter()
        .filter(|e| e.connected)
        .count()
        < 2
    {
        waited += 1;
        assert!(waited < 600, "the bots did not connect");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    start(&mut t, &id).await;
    let done = common::within(180, async {
        loop {
            let now = get(&mut t, &id).await;
            if now.status == pb::TournamentStatus::Finished as i32 {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    drop(bots);
    let game = done.games[0].clone();
    let bad_seat = game.entrants.iter().position(|&e| e == 1).expect("seated") as u32 + 1;
    let mut c = server.client().await;
    let snapshot = common::get(&mut c, &game.game_id).await;
    let line = |e: u32| {
        done.standings
            .iter()
            .find(|s| s.entrant == e)
            .cloned()
            .expect("a standings line")
    };
    Played {
        game,
        snapshot,
        bad_seat,
        standings: (line(0), line(1)),
    }
}

fn kinds(p: &Played) -> Vec<(u32, i32)> {
    p.snapshot
        .substitutions
        .iter()
        .map(|s| (s.seat, s.kind))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kit_bot_playing_illegal_moves_is_refused_or_substituted_up_to_the_cap() {
    let Some(kit) = kit() else { return };
    let bot = script(&kit, "illegal");
    let server = TestServer::start().await;
    // LOSE: the move is refused; the kit gives the game up (this bot
    // leaves it) and the seat loses on its clock.
    let lose = play(
        &server,
        &bot,
        "illegal",
        0,
        1_000,
        pb::FailurePolicy {
            on_illegal_move: LOSE,
            on_timeout: LOSE,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(lose.game.winners, vec![3 - lose.bad_seat]);
    assert!(lose.snapshot.substitutions.is_empty());
    assert_eq!(lose.standings.1.substituted_moves, 0);
    // SUBSTITUTE, cap 2: two of its moves are replaced, the third illegal
    // move loses by resignation, and the standings count the two.
    let sub = play(
        &server,
        &bot,
        "illegal",
        0,
        1_000,
        pb::FailurePolicy {
            on_illegal_move: SUBSTITUTE,
            max_substitutions: 2,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(sub.game.reason, "RESIGNATION");
    assert_eq!(sub.game.winners, vec![3 - sub.bad_seat]);
    let illegal = pb::FailureKind::IllegalMove as i32;
    assert_eq!(kinds(&sub), vec![(sub.bad_seat, illegal); 2]);
    assert_eq!(sub.snapshot.failure_ending, "SUBSTITUTION_CAP");
    assert_eq!(
        (
            sub.standings.0.substituted_moves,
            sub.standings.1.substituted_moves
        ),
        (0, 2)
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kit_bot_that_crashes_loses_on_time_or_is_played_for_then_abandons() {
    let Some(kit) = kit() else { return };
    let bot = script(&kit, "crash");
    let server = TestServer::start().await;
    // LOSE: its clock runs out.
    let lose = play(
        &server,
        &bot,
        "crash",
        0,
        1_000,
        pb::FailurePolicy::default(),
    )
    .await;
    assert_eq!(lose.game.reason, "TIMEOUT");
    assert_eq!(lose.game.winners, vec![3 - lose.bad_seat]);
    assert!(lose.snapshot.substitutions.is_empty());
    // SUBSTITUTE on disconnect, cap 2: two moves played for it once it is
    // gone, then ABANDONED.
    let sub = play(
        &server,
        &bot,
        "crash",
        0,
        5_000,
        pb::FailurePolicy {
            on_disconnect: SUBSTITUTE,
            max_substitutions: 2,
            disconnect_after_ms: 300,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(sub.game.reason, "ABANDONED");
    assert_eq!(sub.game.winners, vec![3 - sub.bad_seat]);
    let gone = pb::FailureKind::Disconnect as i32;
    assert_eq!(kinds(&sub), vec![(sub.bad_seat, gone); 2]);
    assert_eq!(sub.snapshot.failure_ending, "SUBSTITUTION_CAP");
    assert_eq!(sub.standings.1.substituted_moves, 2);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_kit_bot_loses_is_played_for_or_is_held_under_each_policy() {
    let Some(kit) = kit() else { return };
    let bot = script(&kit, "late");
    let server = TestServer::start().await;
    // LOSE: its first late move is after its flag.
    let lose = play(
        &server,
        &bot,
        "late",
        1_200,
        500,
        pb::FailurePolicy::default(),
    )
    .await;
    assert_eq!(lose.game.reason, "TIMEOUT");
    assert_eq!(lose.game.winners, vec![3 - lose.bad_seat]);
    assert_eq!(lose.snapshot.failure_ending, "");
    // SUBSTITUTE, cap 2: the referee plays at each flag; its late answers
    // find the game moved on (the kit takes them as stale) until the cap.
    let sub = play(
        &server,
        &bot,
        "late",
        1_200,
        500,
        pb::FailurePolicy {
            on_timeout: SUBSTITUTE,
            max_substitutions: 2,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(sub.game.reason, "TIMEOUT");
    assert_eq!(sub.game.winners, vec![3 - sub.bad_seat]);
    let timeout = pb::FailureKind::Timeout as i32;
    assert_eq!(kinds(&sub), vec![(sub.bad_seat, timeout); 2]);
    assert_eq!(sub.snapshot.failure_ending, "SUBSTITUTION_CAP");
    assert_eq!(sub.standings.1.substituted_moves, 2);
    // PAUSE, 2.5 s: its late moves are taken (about 700 ms of pause each)
    // until the pause is used up.
    let paused = play(
        &server,
        &bot,
        "late",
        1_200,
        500,
        pb::FailurePolicy {
            on_timeout: PAUSE,
            pause_ms: 2_500,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(paused.game.reason, "TIMEOUT");
    assert_eq!(paused.game.winners, vec![3 - paused.bad_seat]);
    assert_eq!(paused.snapshot.failure_ending, "PAUSE_EXHAUSTED");
    assert!(paused.snapshot.substitutions.is_empty());
    assert!(
        paused.game.ply >= lose.game.ply + 4,
        "late moves were taken: {} plies against {} without the pause",
        paused.game.ply,
        lose.game.ply
    );
    server.stop().await.unwrap();
}
