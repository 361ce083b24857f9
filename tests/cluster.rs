//! Three replicas of the real binary on one PostgreSQL, with short leases,
//! under failures (issue 15, docs/CLUSTER.md): games are created and
//! played through every replica with request ids, each watched from a
//! replica of its own, while the owner of some games is killed (SIGKILL),
//! another replica is paused (SIGSTOP) until its games are taken over and
//! resumed, and
//! PostgreSQL is restarted. Then:
//!
//! * every acknowledged move is in the stored record, at its ply, and no
//!   ply was acknowledged with two different moves (so no write of a fenced
//!   owner was accepted: it would have put a second move at a ply);
//! * each record replays (the referee imports it) to the same ending;
//! * every watcher's sequence of moves, across its resumptions on other
//!   replicas, is the record, each ply once (a resync snapshot, which a
//!   watcher too slow for the broadcast ring gets, stands for the plies it
//!   skipped and is checked against the record);
//! * every game ended exactly once (one game-over event per watcher, one
//!   stored ending);
//! * each timed game's clock is what its stored move times imply, within
//!   the stated tolerance;
//! * every game of the killed replica was taken over by a live one under a
//!   new epoch (how soon is printed, not asserted: a loaded machine
//!   stretches it; docs/BENCHMARKS.md measures it).
//!
//! Needs `PUNCT_REFEREE_TEST_DATABASE_URL` and, to restart the server,
//! `PUNCT_REFEREE_TEST_PG_CTL`/`_PG_DATA`/`_PG_USER` (scripts/with-postgres.sh
//! sets them all).
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the other modules of this test binary, which is all that can reach them"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; its steps are named in its comments"
)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;
use punct_referee::service::storage::postgres::with_database;
use tonic::transport::Channel;

use common::postgres::{fresh_database, sql, test_database_url};
use common::process::{self, signal};

/// The tests of this file one at a time: one restarts the database server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// The lease of every replica.
const LEASE_MS: u64 = 1500;
const GAMES: usize = 32;
/// Plies each game is played to before the seat to move resigns.
const PLIES: u32 = 40;
/// How far a timed game's clock may be from what its record implies: the
/// record stores each move's time in whole milliseconds, as its owner's
/// clock counted it; a seat whose clock was not running at the end shows
/// exactly that, within the rounding of its moves. The seat that resigned
/// also spent the time up to its resignation (the player measures it), and
/// a replica that followed the game stops the clock when it learns of the
/// end, at most a re-read later.
const CLOCK_TOLERANCE: Duration = Duration::from_millis(50);
/// How late a follower may learn of an ending (its periodic re-read, plus
/// the time to read).
const FOLLOWER_LAG: Duration = Duration::from_millis(1500);
const INITIAL_MS: u64 = 600_000;

/// A replica: its process (none while killed) and address.
struct Replica {
    node: String,
    child: Option<Child>,
    addr: SocketAddr,
}

/// A replica on `port` with the test's lease, its address once it serves.
fn spawn(url: &str, node: &str, port: u16) -> (Child, SocketAddr) {
    let listen = format!("127.0.0.1:{port}");
    let lease = LEASE_MS.to_string();
    let mut command = process::serve(&[
        "--listen",
        &listen,
        "--no-http",
        "--storage",
        "postgres",
        "--node-id",
        node,
        "--lease-ms",
        &lease,
        "--database-pool-size",
        "8",
    ]);
    command.env("PUNCT_REFEREE_DATABASE_URL", url);
    process::start(&mut command, &format!("replica {node}"))
}

/// The replicas as the players see them: which answer (a paused one does
/// not, a killed one is gone).
#[derive(Clone)]
struct Pool {
    addrs: Vec<SocketAddr>,
    up: Arc<Mutex<Vec<bool>>>,
}

impl Pool {
    async fn client(&self, pick: usize) -> Option<(usize, RefereeServiceClient<Channel>)> {
        let up = self.up.lock().unwrap().clone();
        let live: Vec<usize> = (0..self.addrs.len()).filter(|&i| up[i]).collect();
        let i = *live.get(pick % live.len().max(1))?;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", self.addrs[i]))
            .unwrap()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(3))
            .connect()
            .await
            .ok()?;
        Some((i, RefereeServiceClient::new(channel)))
    }
}

/// What a player was told.
#[derive(Debug, Default, Clone)]
struct Played {
    /// Ply → notation of every acknowledged move.
    acked: BTreeMap<u32, String>,
    ended: bool,
    /// The seat that resigned (1-based), and how long after the last move
    /// was first submitted its resignation was answered: the most its
    /// clock can have run past the record (its turn began when that move
    /// was played, after it was sent, however slow the answer).
    resigned: Option<(usize, Duration)>,
}

/// Calls `f` on some replica until it answers other than `UNAVAILABLE` or a
/// timeout (a replica dying, paused or cut off): the client side of
/// failover, the same request (and request id) each time.
async fn retrying<T, F, Fut>(pool: &Pool, seed: usize, mut f: F) -> Result<T, tonic::Status>
where
    F: FnMut(RefereeServiceClient<Channel>) -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut attempt = seed;
    loop {
        attempt += 1;
        if let Some((_, client)) = pool.client(attempt).await {
            match f(client).await {
                Err(s)
                    if matches!(
                        s.code(),
                        tonic::Code::Unavailable
                            | tonic::Code::DeadlineExceeded
                            | tonic::Code::Cancelled
                            | tonic::Code::Unknown
                            | tonic::Code::Internal
                    ) =>
                {
                    assert!(
                        Instant::now() < deadline,
                        "no replica answered for 60 s: {s:?}"
                    );
                }
                other => return other,
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Plays one game: random legal moves, each submitted with a request id
/// through whichever replica answers, then a resignation.
async fn play(pool: Pool, game: usize, id: String, tokens: Vec<String>, out: Arc<Mutex<Played>>) {
    let mut rng = game as u64 * 7919 + 17;
    let mut last_sent = Instant::now();
    for ply in 0..PLIES {
        let legal = retrying(&pool, game + ply as usize, |mut c| {
            let id = id.clone();
            async move {
                c.list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: id,
                    view: pb::MovesView::Text as i32,
                    ..Default::default()
                })
                .await
                .map(tonic::Response::into_inner)
            }
        })
        .await
        .expect("legal moves");
        if legal.ply != ply {
            // A move acknowledged to nobody (its answer lost) cannot be:
            // every submission is retried until answered.
            panic!(
                "game {game}: at ply {} when the player is at {ply}",
                legal.ply
            );
        }
        let text = String::from_utf8(legal.notation_text.to_vec()).unwrap();
        let moves: Vec<&str> = text.lines().collect();
        if moves.is_empty() {
            break;
        }
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let pick = moves[(rng >> 33) as usize % moves.len()].to_string();
        let token = tokens[legal.to_move as usize - 1].clone();
        let request_id = format!("g{game}-p{ply}");
        last_sent = Instant::now();
        let answer = retrying(&pool, game * 3 + ply as usize, |mut c| {
            let (id, token, pick, request_id) =
                (id.clone(), token.clone(), pick.clone(), request_id.clone());
            async move {
                c.submit_move(pb::SubmitMoveRequest {
                    game_id: id,
                    token,
                    r#move: Some(common::notation(&pick)),
                    expected_ply: ply,
                    request_id,
                })
                .await
                .map(tonic::Response::into_inner)
            }
        })
        .await
        .unwrap_or_else(|s| panic!("game {game} ply {ply} `{pick}`: {s:?}"));
        assert_eq!(answer.ply, ply + 1, "game {game}");
        let notation = common::punct_of(answer.r#move.as_ref().unwrap())
            .notation
            .clone();
        out.lock().unwrap().acked.insert(answer.ply, notation);
        if answer.status == pb::GameStatus::Finished as i32 {
            out.lock().unwrap().ended = true;
            return;
        }
        tokio::time::sleep(Duration::from_millis(150 + (rng >> 40) % 200)).await;
    }
    // The seat to move resigns; a retry after a lost answer finds the game
    // over by that resignation.
    let view = retrying(&pool, game, |mut c| {
        let id = id.clone();
        async move {
            c.get_game(pb::GetGameRequest {
                game_id: id,
                token: String::new(),
                ..Default::default()
            })
            .await
            .map(tonic::Response::into_inner)
        }
    })
    .await
    .unwrap()
    .game
    .unwrap();
    let token = tokens[view.to_move as usize - 1].clone();
    let resigned = retrying(&pool, game + 1, |mut c| {
        let (id, token) = (id.clone(), token.clone());
        async move {
            c.resign(pb::ResignRequest { game_id: id, token })
                .await
                .map(tonic::Response::into_inner)
        }
    })
    .await;
    match resigned {
        Ok(_) => {}
        Err(s) if s.code() == tonic::Code::FailedPrecondition => {}
        Err(s) => panic!("game {game}: resign: {s:?}"),
    }
    let mut out = out.lock().unwrap();
    out.ended = true;
    out.resigned = Some((view.to_move as usize, last_sent.elapsed()));
}

/// What a watcher saw: each move's ply and notation, the resync snapshots
/// that stood in for moves it was too slow to take, and the game-overs.
#[derive(Debug, Default, Clone)]
struct Seen {
    moves: Vec<(u32, String)>,
    resyncs: Vec<Resync>,
    game_overs: usize,
    resumes: usize,
    /// Streams the server ended with an error naming their last ply.
    named_ends: usize,
}

/// A resync snapshot (docs/API.md, "Events and watching": a watcher that
/// falls further behind than the game's broadcast ring gets the game now
/// instead of the events it missed): the game at `ply`, received after the
/// first `after_moves` moves of [`Seen::moves`].
#[derive(Debug, Clone)]
struct Resync {
    after_moves: usize,
    ply: u32,
    /// The notation of the move that reached `ply`.
    last_move: Option<String>,
    /// The position at `ply`.
    state: Option<pb::GameState>,
}

/// Asserts that the watcher of game `id` knows the record `stored`, each
/// ply once and in order: every move it saw as an event is the stored move
/// of its ply, and the plies a resync snapshot stood for are in that
/// snapshot (its ply, last move and position are the record's: the position
/// is compared with the game at that ply as a fresh `WatchGame` replays it).
/// Without a resync, what it saw is exactly the record.
async fn assert_watched(
    label: &str,
    client: &mut RefereeServiceClient<Channel>,
    id: &str,
    seen: &Seen,
    stored: &[(u32, String)],
) {
    if seen.resyncs.is_empty() {
        assert_eq!(
            seen.moves, stored,
            "{label}: the watcher saw the record, each ply once"
        );
        return;
    }
    let mut at = 0u32;
    let mut resyncs = seen.resyncs.iter().peekable();
    for i in 0..=seen.moves.len() {
        while let Some(r) = resyncs.next_if(|r| r.after_moves == i) {
            assert!(
                r.ply >= at && r.ply as usize <= stored.len(),
                "{label}: a resync at ply {} after ply {at} (record of {} plies)",
                r.ply,
                stored.len()
            );
            let last = r.ply.checked_sub(1).map(|p| stored[p as usize].1.clone());
            assert_eq!(
                r.last_move, last,
                "{label}: the last move of the resync snapshot at ply {}",
                r.ply
            );
            let replayed = snapshot_at(client, id, r.ply).await;
            assert_eq!(
                r.state, replayed.state,
                "{label}: the position of the resync snapshot at ply {}",
                r.ply
            );
            at = r.ply;
        }
        let Some((ply, notation)) = seen.moves.get(i) else {
            break;
        };
        assert_eq!(*ply, at + 1, "{label}: the move after ply {at}");
        assert_eq!(
            stored.get(at as usize),
            Some(&(*ply, notation.clone())),
            "{label}: the watcher's move of ply {ply} is the stored one"
        );
        at = *ply;
    }
    assert_eq!(
        at as usize,
        stored.len(),
        "{label}: the watcher knows every stored move"
    );
}

/// The first snapshot of a `WatchGame` of `id` from `ply`: the game at
/// that ply.
async fn snapshot_at(client: &mut RefereeServiceClient<Channel>, id: &str, ply: u32) -> pb::Game {
    let mut stream = client
        .watch_game(pb::WatchGameRequest {
            game_id: id.to_string(),
            from_ply: Some(ply),
            token: String::new(),
        })
        .await
        .expect("watch from a ply")
        .into_inner();
    let first = common::within(60, stream.message())
        .await
        .expect("a snapshot")
        .expect("a first message");
    match first.item {
        Some(pb::watch_game_response::Item::Snapshot(g)) => {
            assert_eq!(g.ply, ply, "the snapshot of the ply asked for");
            g
        }
        other => panic!("a snapshot first, not {other:?}"),
    }
}

/// Watches one game until it ends, resuming with `from_ply` on another
/// replica whenever its stream breaks or says nothing for 4 s (a paused
/// replica's).
async fn watch(pool: Pool, game: usize, id: String, out: Arc<Mutex<Seen>>) {
    watch_patiently(pool, game, id, out, Duration::from_secs(4)).await
}

/// [`watch`], giving a stream up after `patience` without a message.
async fn watch_patiently(
    pool: Pool,
    game: usize,
    id: String,
    out: Arc<Mutex<Seen>>,
    patience: Duration,
) {
    // From the start: the first snapshot is the empty board, every move
    // follows as an event.
    let mut from: u32 = 0;
    let mut resumed = false;
    let mut attempt = game;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        assert!(
            Instant::now() < deadline,
            "watcher of game {game} never saw the end"
        );
        attempt += 1;
        let Some((_, mut client)) = pool.client(attempt).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let stream = client
            .watch_game(pb::WatchGameRequest {
                game_id: id.clone(),
                from_ply: Some(from),
                token: String::new(),
            })
            .await;
        let mut stream = match stream {
            Ok(s) => s.into_inner(),
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if resumed {
            out.lock().unwrap().resumes += 1;
        }
        resumed = true;
        loop {
            // A paused replica's stream says nothing: it is given up after
            // a while and resumed elsewhere.
            let item = tokio::time::timeout(patience, stream.message()).await;
            let message = match item {
                Ok(Ok(Some(message))) => message,
                Ok(Err(status)) if status.metadata().contains_key("referee-last-ply") => {
                    // A stream the server ended names the last ply it sent.
                    let last = status.metadata().get("referee-last-ply").unwrap();
                    assert_eq!(
                        last.to_str().unwrap(),
                        from.to_string(),
                        "game {game}: the stream's end names the last ply it sent"
                    );
                    out.lock().unwrap().named_ends += 1;
                    break;
                }
                other => {
                    if std::env::var_os("CLUSTER_DEBUG").is_some() {
                        eprintln!(
                            "watch break game {game}: {:?}",
                            other.map(|r| r.map_err(|s| s.message().to_string()))
                        );
                    }
                    break;
                }
            };
            let resync = message.resync;
            match message.item {
                Some(pb::watch_game_response::Item::Snapshot(g)) if resync => {
                    // Too slow for the game's broadcast ring (a loaded
                    // machine, a small ring): the game now instead of the
                    // events missed; the moves it stands for are checked
                    // against the record at the end.
                    assert!(
                        g.ply >= from,
                        "game {game}: a resync snapshot at ply {} after ply {from}",
                        g.ply
                    );
                    let last_move = g
                        .last_move
                        .as_ref()
                        .map(|m| common::punct_of(m).notation.clone());
                    let mut seen = out.lock().unwrap();
                    let after_moves = seen.moves.len();
                    seen.resyncs.push(Resync {
                        after_moves,
                        ply: g.ply,
                        last_move,
                        state: g.state,
                    });
                    from = g.ply;
                }
                Some(pb::watch_game_response::Item::Snapshot(g)) => {
                    // A stream's first snapshot is the game at the ply
                    // resumed from.
                    assert_eq!(g.ply, from, "game {game}: snapshot of the ply asked for");
                }
                Some(pb::watch_game_response::Item::Event(e)) => match e.kind {
                    Some(pb::game_event::Kind::MoveApplied(m)) => {
                        let mut seen = out.lock().unwrap();
                        seen.moves
                            .push((e.ply, common::punct_of(&m.r#move.unwrap()).notation.clone()));
                        from = e.ply;
                    }
                    Some(pb::game_event::Kind::GameOver(_)) => {
                        out.lock().unwrap().game_overs += 1;
                        return;
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
}

async fn owners(db: &tokio_postgres::Client) -> HashMap<String, String> {
    db.query(
        "SELECT id, COALESCE(owner, '') FROM games WHERE status = 'in_progress'",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// Every game's owner (empty if none), epoch and status.
async fn leases(db: &tokio_postgres::Client) -> HashMap<String, (String, i64, String)> {
    db.query(
        "SELECT id, COALESCE(owner, ''), epoch, status FROM games",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3))))
    .collect()
}

/// Stops (`"stop"`) or starts (`"start"`) the test's PostgreSQL server with
/// the options scripts/with-postgres.sh started it with.
fn pg_ctl(action: &str) {
    pg_ctl_mode(action, "fast")
}

/// [`pg_ctl`] with the shutdown mode of a stop (`fast`, `immediate`).
fn pg_ctl_mode(action: &str, mode: &str) {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let (ctl, data, user) = (
        var("PUNCT_REFEREE_TEST_PG_CTL"),
        var("PUNCT_REFEREE_TEST_PG_DATA"),
        var("PUNCT_REFEREE_TEST_PG_USER"),
    );
    let (opts, log) = (
        var("PUNCT_REFEREE_TEST_PG_OPTS"),
        var("PUNCT_REFEREE_TEST_PG_LOG"),
    );
    let mut args = vec![ctl.as_str(), "-D", &data, "-m", mode, "-w", "-t", "30"];
    if action == "start" {
        args.extend(["-o", opts.as_str(), "-l", log.as_str()]);
    }
    args.push(action);
    let mut command = if unsafe_is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", &user, "--"]).args(&args);
        c
    } else {
        let mut c = Command::new(args[0]);
        c.args(&args[1..]);
        c
    };
    let out = command.stdout(Stdio::null()).output().expect("pg_ctl");
    assert!(
        out.status.success(),
        "pg_ctl {action}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits until the replica at `addr` reports the referee service ready
/// (`true`) or not; its overall health stays SERVING. The 60 s deadline
/// only guards against a hang.
async fn wait_for_readiness(addr: SocketAddr, ready: bool) {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let deadline = Instant::now() + Duration::from_secs(60);
    let request = |service: &str| HealthCheckRequest {
        service: service.to_string(),
    };
    loop {
        let referee = health
            .check(request("referee.v1.RefereeService"))
            .await
            .unwrap()
            .into_inner()
            .status;
        let overall = health.check(request("")).await.unwrap().into_inner().status;
        assert_eq!(
            overall,
            ServingStatus::Serving as i32,
            "liveness stays SERVING"
        );
        if (referee == ServingStatus::Serving as i32) == ready {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "readiness did not turn {}",
            if ready { "SERVING" } else { "NOT_SERVING" }
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn unsafe_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_lose_nothing_through_kills_pauses_and_a_database_restart() {
    let Some(server) = test_database_url() else {
        return;
    };
    let _serial = SERIAL.lock().await;
    let admin = sql(&server).await;
    let name = format!("punct_cluster_{:016x}", rand::random::<u64>());
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let url = with_database(&server, &name);

    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| {
            let node = format!("r{i}");
            let (child, addr) = spawn(&url, &node, 0);
            Replica {
                node,
                child: Some(child),
                addr,
            }
        })
        .collect();
    let pool = Pool {
        addrs: replicas.iter().map(|r| r.addr).collect(),
        up: Arc::new(Mutex::new(vec![true; 3])),
    };
    let db = sql(&url).await;

    // Games created through every replica; every other one timed.
    let mut games = Vec::new();
    for g in 0..GAMES {
        let (_, mut client) = pool.client(g).await.expect("a replica");
        let timed = g % 2 == 0;
        let created = client
            .create_game(pb::CreateGameRequest {
                rules: Some(common::rules(ppb::Variant::Standard)),
                time_control: timed.then_some(pb::TimeControl {
                    lag_compensation: None,
                    mode: Some(pb::time_control::Mode::Fischer(pb::FischerClock {
                        initial_ms: INITIAL_MS,
                        increment_ms: 0,
                    })),
                    first_move_deadline_ms: None,
                }),
                ..Default::default()
            })
            .await
            .expect("create")
            .into_inner();
        let game = created.game.unwrap();
        let mut seats = created.seats.clone();
        seats.sort_by_key(|s| s.seat);
        games.push((
            game.game_id,
            seats.into_iter().map(|s| s.token).collect::<Vec<_>>(),
            timed,
        ));
    }

    let played: Vec<Arc<Mutex<Played>>> = (0..GAMES).map(|_| Arc::default()).collect();
    let seen: Vec<Arc<Mutex<Seen>>> = (0..GAMES).map(|_| Arc::default()).collect();
    let mut tasks = Vec::new();
    for (g, (id, tokens, _)) in games.iter().enumerate() {
        tasks.push(tokio::spawn(watch(
            pool.clone(),
            g + 1,
            id.clone(),
            seen[g].clone(),
        )));
        tasks.push(tokio::spawn(play(
            pool.clone(),
            g,
            id.clone(),
            tokens.clone(),
            played[g].clone(),
        )));
    }

    // Failures while the games are played.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let lease = Duration::from_millis(LEASE_MS);
    // 1. SIGKILL the owner of the most games.
    let before = owners(&db).await;
    let epochs_before = leases(&db).await;
    let victim = (0..3)
        .max_by_key(|&i| before.values().filter(|o| **o == replicas[i].node).count())
        .unwrap();
    let victim_games: Vec<String> = before
        .iter()
        .filter(|(_, o)| **o == replicas[victim].node)
        .map(|(id, _)| id.clone())
        .collect();
    assert!(!victim_games.is_empty(), "the victim owns games");
    pool.up.lock().unwrap()[victim] = false;
    let mut child = replicas[victim].child.take().unwrap();
    signal(&child, "-KILL");
    let killed_at = Instant::now();
    let _ = child.wait();
    // Each of its games is taken over by another replica (or had ended just
    // before the kill), under a new epoch, so that a write the killed
    // owner had decided would be fenced. How soon is measured and printed,
    // not asserted (docs/BENCHMARKS.md, "Takeover after a kill"): a loaded
    // machine stretches it. The deadline only guards against a hang.
    let victim_node = replicas[victim].node.clone();
    let mut taken: HashMap<String, Duration> = HashMap::new();
    let mut ended_before = 0;
    let hang_guard = Duration::from_secs(60);
    loop {
        let now = leases(&db).await;
        let at = killed_at.elapsed();
        for id in &victim_games {
            if taken.contains_key(id) {
                continue;
            }
            let (owner, epoch, status) = &now[id];
            if status != "in_progress" {
                // Ended by its owner before it died: nothing to take.
                taken.insert(id.clone(), Duration::ZERO);
                ended_before += 1;
            } else if *owner != victim_node {
                assert!(
                    replicas
                        .iter()
                        .any(|r| r.node == *owner && r.child.is_some()),
                    "game {id} taken over by a live replica, not `{owner}`"
                );
                assert!(
                    *epoch > epochs_before[id].1,
                    "game {id} taken over under a new epoch ({epoch}, was {})",
                    epochs_before[id].1
                );
                taken.insert(id.clone(), at);
            }
        }
        if taken.len() == victim_games.len() {
            break;
        }
        assert!(
            at < hang_guard,
            "{} of the {} games of the killed replica not taken over after {at:?}",
            victim_games.len() - taken.len(),
            victim_games.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut takeovers: Vec<Duration> = taken.values().copied().filter(|t| !t.is_zero()).collect();
    takeovers.sort();
    assert!(
        !takeovers.is_empty(),
        "some game of the killed replica was taken over"
    );
    let p50 = takeovers[takeovers.len() / 2];
    let p99 = takeovers[(takeovers.len() * 99 / 100).min(takeovers.len() - 1)];
    println!(
        "takeover after SIGKILL, lease {LEASE_MS} ms: {} games ({ended_before} ended before the \
         kill), p50 {} ms, p99 {} ms, max {} ms (twice the lease: {} ms)",
        takeovers.len(),
        p50.as_millis(),
        p99.as_millis(),
        takeovers.last().unwrap().as_millis(),
        (2 * lease).as_millis()
    );

    // 2. SIGSTOP another replica past its lease, then let it go on: it must
    // find its games gone, not write for them.
    let paused = (0..3).find(|&i| i != victim).unwrap();
    let paused_games = owners(&db)
        .await
        .values()
        .filter(|o| **o == replicas[paused].node)
        .count();
    assert!(
        paused_games > 0,
        "the paused replica owns games in progress"
    );
    pool.up.lock().unwrap()[paused] = false;
    signal(replicas[paused].child.as_ref().unwrap(), "-STOP");
    let paused_at = Instant::now();
    // Paused until every game it owned is another's (however long a loaded
    // machine takes), so that it wakes to find them gone.
    loop {
        let left = owners(&db)
            .await
            .values()
            .filter(|o| **o == replicas[paused].node)
            .count();
        if left == 0 {
            break;
        }
        assert!(
            paused_at.elapsed() < Duration::from_secs(60),
            "{left} games of the paused replica not taken over after {:?}",
            paused_at.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "the paused replica's {paused_games} games taken over {} ms into its pause",
        paused_at.elapsed().as_millis()
    );
    signal(replicas[paused].child.as_ref().unwrap(), "-CONT");
    pool.up.lock().unwrap()[paused] = true;

    // 3. Stop PostgreSQL under the running replicas: readiness turns
    // NOT_SERVING (liveness stays SERVING), and back once it is started.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let playing = owners(&db).await.len();
    assert!(
        playing >= GAMES / 2,
        "{playing} games still in progress at the restart"
    );
    pg_ctl("stop");
    // The replica neither killed nor paused.
    let probe = replicas[(0..3).find(|&i| i != victim && i != paused).unwrap()].addr;
    wait_for_readiness(probe, false).await;
    pg_ctl("start");
    wait_for_readiness(probe, true).await;

    // 4. The killed replica comes back (same node id, new process).
    let (child, addr) = spawn(&url, &replicas[victim].node, replicas[victim].addr.port());
    assert_eq!(addr, replicas[victim].addr);
    replicas[victim].child = Some(child);
    pool.up.lock().unwrap()[victim] = true;

    for t in tasks {
        common::within(240, t)
            .await
            .expect("a player or watcher panicked");
    }

    // The records (the test's own connection did not survive the restart).
    let db = sql(&url).await;
    let (_, mut client) = pool.client(0).await.unwrap();
    let mut resumes = 0;
    let mut named_ends = 0;
    let mut resyncs = 0;
    for (g, (id, _, timed)) in games.iter().enumerate() {
        let rows = db
            .query(
                "SELECT ply, notation, clock_ms, seat FROM moves WHERE game_id = $1 ORDER BY ply",
                &[id],
            )
            .await
            .unwrap();
        let stored: Vec<(u32, String)> = rows
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u32, r.get::<_, String>(1)))
            .collect();
        let played = played[g].lock().unwrap().clone();
        assert!(played.ended, "game {g} was played to its end");
        for (ply, notation) in &played.acked {
            assert_eq!(
                stored.get(*ply as usize - 1),
                Some(&(*ply, notation.clone())),
                "game {g}: the acknowledged move of ply {ply} is the stored one"
            );
        }
        let status: String = db
            .query_one("SELECT status FROM games WHERE id = $1", &[id])
            .await
            .unwrap()
            .get(0);
        assert_eq!(status, "finished", "game {g}");
        let seen = seen[g].lock().unwrap().clone();
        resumes += seen.resumes;
        named_ends += seen.named_ends;
        resyncs += seen.resyncs.len();
        assert_watched(&format!("game {g}"), &mut client, id, &seen, &stored).await;
        assert_eq!(seen.game_overs, 1, "game {g}: one game-over");

        // The record replays to the same ending.
        let record = common::export_checked(&mut client, id, "").await;
        let final_view = common::get(&mut client, id).await;
        assert_eq!(final_view.ply as usize, stored.len(), "game {g}");
        let imported = client
            .import_game(pb::ImportGameRequest {
                record,
                labels: Default::default(),
            })
            .await
            .unwrap_or_else(|s| panic!("game {g}: the record replays: {s:?}"))
            .into_inner()
            .game
            .unwrap();
        assert_eq!(imported.ply, final_view.ply, "game {g}");
        assert_eq!(imported.outcome, final_view.outcome, "game {g}");

        // The clock against the stored move times.
        if *timed {
            let mut used = [0u64; 2];
            let mut last = 0u64;
            for r in &rows {
                let at = r.get::<_, i64>(2) as u64;
                let seat = r.get::<_, i64>(3) as usize;
                used[seat - 1] += at.saturating_sub(last);
                last = at;
            }
            let clock = final_view.clock.expect("a timed game shows its clock");
            let (resigner, resign_wait) = played.resigned.unwrap_or((0, Duration::ZERO));
            for (seat, remaining) in clock.remaining_ms.iter().enumerate() {
                let implied = INITIAL_MS - used[seat];
                let allowed = if seat + 1 == resigner {
                    assert!(*remaining <= implied + CLOCK_TOLERANCE.as_millis() as u64);
                    CLOCK_TOLERANCE + resign_wait + FOLLOWER_LAG
                } else {
                    CLOCK_TOLERANCE
                };
                let off = implied.abs_diff(*remaining);
                if off > allowed.as_millis() as u64 && std::env::var_os("CLUSTER_DEBUG").is_some() {
                    for i in 0..3 {
                        if let Some((_, mut c)) = pool.client(i).await {
                            let v = common::get(&mut c, id).await;
                            eprintln!("replica pick {i}: clock {:?}", v.clock);
                        }
                    }
                    eprintln!(
                        "rows: {:?}",
                        rows.iter()
                            .map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(2)))
                            .collect::<Vec<_>>()
                    );
                    eprintln!("resign wait {resign_wait:?}");
                }
                assert!(
                    off <= allowed.as_millis() as u64,
                    "game {g} seat {}: clock {remaining} ms, the record implies {implied} ms \
                     (allowed {allowed:?})",
                    seat + 1
                );
            }
        }
    }
    println!(
        "watchers resumed {resumes} times in all, {named_ends} after an end naming its ply; \
         {resyncs} resync snapshots"
    );
    if std::env::var_os("CLUSTER_DEBUG").is_some() {
        for r in db
            .query(
                "SELECT epoch, count(*) FROM games GROUP BY epoch ORDER BY epoch",
                &[],
            )
            .await
            .unwrap()
        {
            eprintln!("epoch {}: {} games", r.get::<_, i64>(0), r.get::<_, i64>(1));
        }
    }
    assert!(
        resumes > 0,
        "some watcher had to resume (its replica died or paused)"
    );

    // Every replica still answers; none was left owning a game.
    for r in &mut replicas {
        if let Some(mut child) = r.child.take() {
            signal(&child, "-TERM");
            let _ = child.wait();
        }
    }
}

/// `--takeover-clock charge`: the time a game had no owner is charged to the
/// seat to move, by the database's clock; `credit` (the default) charges
/// nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_charges_the_ownerless_time_only_when_asked() {
    let Some(server) = test_database_url() else {
        return;
    };
    let _serial = SERIAL.lock().await;
    let admin = sql(&server).await;
    for (mode, charged) in [("charge", true), ("credit", false)] {
        let name = format!("punct_cluster_{mode}_{:016x}", rand::random::<u64>());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let url = with_database(&server, &name);
        let start = |node: &str| {
            let lease = LEASE_MS.to_string();
            let mut command = process::serve(&[
                "--no-http",
                "--storage",
                "postgres",
                "--node-id",
                node,
                "--lease-ms",
                &lease,
                "--takeover-clock",
                mode,
            ]);
            command.env("PUNCT_REFEREE_DATABASE_URL", &url);
            process::start(&mut command, &format!("replica {node}"))
        };
        let (mut owner, owner_addr) = start("a");
        let (mut other, other_addr) = start("b");
        let connect = |addr: SocketAddr| async move {
            RefereeServiceClient::connect(format!("http://{addr}"))
                .await
                .unwrap()
        };
        let mut a = connect(owner_addr).await;
        let created = a
            .create_game(pb::CreateGameRequest {
                rules: Some(common::rules(ppb::Variant::Standard)),
                time_control: Some(pb::TimeControl {
                    lag_compensation: None,
                    mode: Some(pb::time_control::Mode::Fischer(pb::FischerClock {
                        initial_ms: INITIAL_MS,
                        increment_ms: 0,
                    })),
                    first_move_deadline_ms: None,
                }),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let table = common::table_of(created.game.unwrap(), &created.seats);
        common::submit(
            &mut a,
            &table,
            0,
            common::notation(common::CONNECTION_GAME[0]),
        )
        .await
        .unwrap();
        // Black's clock runs; its owner dies; the other replica takes it.
        let db = sql(&url).await;
        signal(&owner, "-KILL");
        let killed = Instant::now();
        let _ = owner.wait();
        // No takeover before the dead owner's registration expires: by the
        // database's clock, black's turn had run this long by then.
        let turn_at_expiry: i64 = db
            .query_one(
                // The turn's start: the row's, or the game's last move in
                // the move journal (docs/CLUSTER.md, "Clocks across failover").
                "SELECT (EXTRACT(EPOCH FROM (n.expires_at - GREATEST(g.turn_started_at,
                    (SELECT max(j.at) FROM journal j WHERE j.game_id = g.id)))) * 1000)::bigint
                 FROM games g JOIN nodes n ON n.node_id = g.owner WHERE g.id = $1",
                &[&table.id],
            )
            .await
            .unwrap()
            .get(0);
        // The last time the database was asked and still named the dead
        // owner: the takeover committed after it.
        let mut still_a: Option<Duration> = None;
        loop {
            let asked = killed.elapsed();
            let holder: String = db
                .query_one(
                    "SELECT COALESCE(owner, '') FROM games WHERE id = $1",
                    &[&table.id],
                )
                .await
                .unwrap()
                .get(0);
            if holder != "a" {
                assert_eq!(holder, "b", "{mode}: taken over by the live replica");
                break;
            }
            still_a = Some(asked);
            assert!(
                asked < Duration::from_secs(60),
                "{mode}: not taken over after {asked:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let still_a = still_a.expect("the dead owner's lease outlived it for a moment");
        let mut b = connect(other_addr).await;
        let view = b
            .get_game(pb::GetGameRequest {
                game_id: table.id.clone(),
                token: String::new(),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|s| panic!("{mode}: GetGame from the new owner: {s:?}"))
            .into_inner()
            .game
            .unwrap();
        let answered = killed.elapsed();
        let black = view.clock.unwrap().remaining_ms[1];
        let spent = INITIAL_MS - black;
        println!(
            "{mode}: black spent {spent} ms; the takeover came {}..{} ms after the kill",
            still_a.as_millis(),
            answered.as_millis()
        );
        // With `charge` black has spent at least its turn up to the dead
        // owner's expiry (the takeover came after it); with `credit` at
        // most the time from the takeover to the answer (the takeover
        // restarted its turn), so none of the ownerless gap, which lasted
        // at least until the database last named the dead owner. A few ms
        // of rounding (whole milliseconds stored and read).
        if charged {
            assert!(
                spent as i64 + 2 >= turn_at_expiry,
                "{mode}: black spent {spent} ms, its turn had run {turn_at_expiry} ms when \
                 the dead owner's registration expired"
            );
            assert!(
                turn_at_expiry > 0,
                "the registration outlived the start of black's turn"
            );
        } else {
            assert!(
                spent <= (answered - still_a).as_millis() as u64 + 2,
                "{mode}: black spent {spent} ms, more than the {:?} from the takeover to \
                 the answer: the ownerless gap was charged",
                answered - still_a
            );
        }
        signal(&other, "-TERM");
        let _ = other.wait();
    }
}

// ---------------------------------------------------------------------
// Listing and tournaments from any replica (docs/CLUSTER.md, "Listing and
// tournaments"; docs/TOURNAMENTS.md, "In a cluster").

/// A replica with a lease of `lease_ms`, on a free loopback port.
fn spawn_leased(url: &str, node: &str, lease_ms: u64) -> (Child, SocketAddr) {
    let lease = lease_ms.to_string();
    let mut command = process::serve(&[
        "--no-http",
        "--storage",
        "postgres",
        "--node-id",
        node,
        "--lease-ms",
        &lease,
    ]);
    command.env("PUNCT_REFEREE_DATABASE_URL", url);
    process::start(&mut command, &format!("replica {node}"))
}

async fn channel_to(addr: SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect("connect to a replica")
}

/// Every page of a listing through `client`, in order.
async fn list_all(
    client: &mut RefereeServiceClient<Channel>,
    status: pb::GameStatus,
    labels: &[(&str, &str)],
) -> Vec<pb::GameSummary> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let page = client
            .list_games(pb::ListGamesRequest {
                page_size: 5,
                page_token: token.clone(),
                status: status as i32,
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .await
            .expect("list")
            .into_inner();
        assert!(page.games.len() <= 5);
        out.extend(page.games);
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_from_any_replica_pages_through_every_game_of_the_cluster_once() {
    let Some(server) = test_database_url() else {
        return;
    };
    let _serial = SERIAL.lock().await;
    let url = fresh_database(&server, "punct_cluster").await;
    let nodes = ["list-a", "list-b"];
    let mut children = Vec::new();
    let mut clients = Vec::new();
    for node in nodes {
        let (child, addr) = spawn_leased(&url, node, 2000);
        children.push(child);
        clients.push(RefereeServiceClient::new(channel_to(addr).await));
    }
    // 12 games, created alternately on each replica (which then owns and
    // holds it), played a few plies through the other one (forwarded);
    // every third resigned.
    let mut games: Vec<(String, usize, bool)> = Vec::new();
    for i in 0..12usize {
        let home = i % 2;
        let side = if home == 0 { "a" } else { "b" };
        let created = clients[home]
            .create_game(pb::CreateGameRequest {
                rules: Some(common::rules(ppb::Variant::Standard)),
                labels: [
                    ("side".to_string(), side.to_string()),
                    ("n".to_string(), i.to_string()),
                ]
                .into(),
                ..Default::default()
            })
            .await
            .expect("create")
            .into_inner();
        let table = common::table_of(created.game.unwrap(), &created.seats);
        let other = &mut clients[1 - home];
        for ply in 0..(i % 4) as u32 {
            let legal = other
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: table.id.clone(),
                    view: pb::MovesView::Text as i32,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            let text = String::from_utf8(legal.notation_text.to_vec()).unwrap();
            let first = text.lines().next().expect("a legal move");
            common::submit(other, &table, ply, common::notation(first))
                .await
                .unwrap();
        }
        let resigned = i % 3 == 0;
        if resigned {
            clients[home]
                .resign(pb::ResignRequest {
                    game_id: table.id.clone(),
                    token: table.token_at((i % 4) as u32).to_string(),
                })
                .await
                .unwrap();
        }
        games.push((table.id, home, resigned));
    }
    // The expected order: creation time, then id.
    let mut expected: Vec<(i64, String)> = Vec::new();
    for (id, _, _) in &games {
        let g = common::get(&mut clients[0], id).await;
        expected.push((g.created_unix_ms, id.clone()));
    }
    expected.sort();
    let ids = |list: &[pb::GameSummary]| list.iter().map(|g| g.game_id.clone()).collect::<Vec<_>>();
    let expect = |keep: &dyn Fn(&(String, usize, bool)) -> bool| -> Vec<String> {
        expected
            .iter()
            .filter(|(_, id)| keep(games.iter().find(|g| g.0 == *id).unwrap()))
            .map(|(_, id)| id.clone())
            .collect()
    };
    for (r, client) in clients.iter().enumerate() {
        let mut client = client.clone();
        let all = list_all(&mut client, pb::GameStatus::Unspecified, &[]).await;
        assert_eq!(
            ids(&all),
            expect(&|_| true),
            "replica {r}: every game of the cluster, once, in order"
        );
        // Each summary is what the owner says (GetGame is forwarded to it).
        for s in &all {
            let g = common::get(&mut client, &s.game_id).await;
            assert_eq!(
                (s.ply, s.status, s.to_move, s.created_unix_ms, &s.labels),
                (g.ply, g.status, g.to_move, g.created_unix_ms, &g.labels),
                "replica {r}: summary of game {}",
                s.game_id
            );
            assert_eq!(s.outcome, g.outcome, "replica {r}: game {}", s.game_id);
        }
        // Owned by the other replica, in progress: listed all the same.
        let elsewhere = games
            .iter()
            .filter(|(_, home, resigned)| *home != r && !resigned)
            .count();
        assert!(elsewhere >= 3, "{elsewhere} games in progress elsewhere");
        let finished = list_all(&mut client, pb::GameStatus::Finished, &[]).await;
        assert_eq!(ids(&finished), expect(&|g| g.2), "replica {r}: finished");
        let playing = list_all(&mut client, pb::GameStatus::InProgress, &[]).await;
        assert_eq!(ids(&playing), expect(&|g| !g.2), "replica {r}: in progress");
        let side_b = list_all(&mut client, pb::GameStatus::Unspecified, &[("side", "b")]).await;
        assert_eq!(ids(&side_b), expect(&|g| g.1 == 1), "replica {r}: side b");
        let a_playing = list_all(&mut client, pb::GameStatus::InProgress, &[("side", "a")]).await;
        assert_eq!(
            ids(&a_playing),
            expect(&|g| g.1 == 0 && !g.2),
            "replica {r}: side a in progress"
        );
        let one = list_all(&mut client, pb::GameStatus::Unspecified, &[("n", "7")]).await;
        assert_eq!(
            ids(&one),
            vec![games[7].0.clone()],
            "replica {r}: one label value"
        );
    }
    for mut child in children {
        signal(&child, "-TERM");
        let _ = child.wait();
    }
}

type TournamentClient =
    punct_referee::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient<
        Channel,
    >;

async fn tournament_of(t: &mut TournamentClient, id: &str) -> pb::Tournament {
    t.get_tournament(pb::GetTournamentRequest {
        tournament_id: id.to_string(),
    })
    .await
    .expect("get tournament")
    .into_inner()
    .tournament
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tournament_whose_owner_is_killed_is_taken_over_and_finishes_with_true_standings() {
    use punct_referee::service::grpc::pb::dots::v1 as dpb;
    use punct_referee::tools::tournament::entrant::{EntrantBot, play_entrant};
    let Some(server) = test_database_url() else {
        return;
    };
    let _serial = SERIAL.lock().await;
    const LEASE: u64 = 1000;
    let url = fresh_database(&server, "punct_cluster").await;
    let (mut owner, owner_addr) = spawn_leased(&url, "tour-a", LEASE);
    let (mut other, other_addr) = spawn_leased(&url, "tour-b", LEASE);
    // A third replica: the tournament and the game in play go to B or C,
    // whichever takes each first (so the tournament's runner may follow a
    // game another replica holds, through storage).
    let (mut third, _) = spawn_leased(&url, "tour-c", LEASE);
    let db = sql(&url).await;

    // Created and started on A: A owns it and runs it.
    let mut on_a = TournamentClient::new(channel_to(owner_addr).await);
    let created = on_a
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(pb::TournamentSpec {
                name: "failover".into(),
                rules: Some(pb::GameRules {
                    game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                        width: 8,
                        height: 8,
                        ..Default::default()
                    })),
                }),
                format: pb::TournamentFormat::RoundRobin as i32,
                games_per_pairing: 2,
                time_control: Some(pb::TimeControl {
                    lag_compensation: None,
                    mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                        move_ms: 10_000,
                    })),
                    first_move_deadline_ms: None,
                }),
                concurrency: 1,
                ..Default::default()
            }),
            entrants: vec!["greedy".into(), "r1".into(), "r2".into()],
        })
        .await
        .expect("create")
        .into_inner();
    let id = created.tournament.unwrap().tournament_id;
    on_a.start_tournament(pb::StartTournamentRequest {
        tournament_id: id.clone(),
    })
    .await
    .expect("start");
    let row = db
        .query_one("SELECT owner, epoch FROM tournaments WHERE id = $1", &[&id])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<String>>(0).as_deref(), Some("tour-a"));
    assert_eq!(row.get::<_, i64>(1), 1);

    // The bots connect to B only: their streams and games are forwarded to
    // A while it lives.
    let mut bots = Vec::new();
    for (i, key) in created.keys.iter().enumerate() {
        let spec = if i == 0 {
            "greedy".to_string()
        } else {
            format!("r{i}=random")
        };
        let bot = EntrantBot::new(spec.parse().unwrap(), i as u64 + 1, Duration::from_secs(10))
            .resuming(Duration::from_secs(30));
        bots.push(tokio::spawn(play_entrant(
            channel_to(other_addr).await,
            key.entrant_key.clone(),
            bot,
        )));
    }
    let mut on_b = TournamentClient::new(channel_to(other_addr).await);
    let mut games_b = RefereeServiceClient::new(channel_to(other_addr).await);

    // A dies mid-tournament: two games over, the third a few plies in.
    // Deadlines in this test only guard against a hang (a loaded machine
    // plays slowly).
    let deadline = Instant::now() + Duration::from_secs(120);
    let in_play = loop {
        assert!(Instant::now() < deadline, "the tournament never got going");
        let now = tournament_of(&mut on_b, &id).await;
        let done = now
            .games
            .iter()
            .filter(|g| g.status == pb::TournamentGameStatus::Finished as i32)
            .count();
        let playing = now
            .games
            .iter()
            .find(|g| g.status == pb::TournamentGameStatus::InProgress as i32);
        if let (true, Some(g)) = (done >= 2, playing)
            && common::get(&mut games_b, &g.game_id).await.ply >= 4
        {
            break g.game_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    };
    signal(&owner, "-KILL");
    let killed_at = Instant::now();
    let _ = owner.wait();
    // Between seeing the game in play and the kill landing, A may have
    // played it to its end (the bots play fast, and a loaded machine
    // stretches that window): then there was no game in play to take over.
    let ended_before_kill = db
        .query_one("SELECT status FROM games WHERE id = $1", &[&in_play])
        .await
        .unwrap()
        .get::<_, String>(0)
        != "in_progress";

    // B or C takes the tournament over (and the game in play), and the
    // bots, reconnecting to B, play it to its end.
    let mut ends = Vec::new();
    for bot in bots {
        ends.push(
            common::within(180, bot)
                .await
                .unwrap()
                .expect("the bot plays to the end"),
        );
    }
    eprintln!(
        "tournament finished {} ms after its owner was killed",
        killed_at.elapsed().as_millis()
    );
    for (end, reports) in &ends {
        assert_eq!(end.status, pb::TournamentStatus::Finished as i32);
        assert_eq!(reports.len(), 4, "each entrant plays its 4 games");
    }
    // The end is told to the entrants as it is written: read once stored.
    let row = loop {
        let row = db
            .query_one(
                "SELECT owner, epoch, status FROM tournaments WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap();
        if row.get::<_, String>(2) == "finished" || killed_at.elapsed() > Duration::from_secs(200) {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let new_owner = row.get::<_, Option<String>>(0).unwrap_or_default();
    assert!(
        ["tour-b", "tour-c"].contains(&new_owner.as_str()),
        "taken over by a live replica, not {new_owner}"
    );
    assert!(row.get::<_, i64>(1) >= 2, "taken over: a new epoch");
    assert_eq!(row.get::<_, String>(2), "finished");
    let game_row = db
        .query_one("SELECT owner, status FROM games WHERE id = $1", &[&in_play])
        .await
        .unwrap();
    let game_owner = game_row.get::<_, Option<String>>(0).unwrap_or_default();
    if ended_before_kill {
        eprintln!("the game in play ended before the kill landed: no game takeover to check");
    } else {
        assert!(
            ["tour-b", "tour-c"].contains(&game_owner.as_str()),
            "the game in play was taken over, not left to {game_owner}"
        );
    }
    assert_eq!(game_row.get::<_, String>(1), "finished");
    eprintln!("tournament taken over by {new_owner}, the game in play by {game_owner}");

    let done = tournament_of(&mut on_b, &id).await;
    assert_eq!(done.status, pb::TournamentStatus::Finished as i32);
    assert_eq!(done.games.len(), 6);
    let ids: std::collections::BTreeSet<&str> =
        done.games.iter().map(|g| g.game_id.as_str()).collect();
    assert_eq!(ids.len(), 6, "six distinct games");
    // Every result recorded once, as the game itself ended; the standings
    // are a recount of the games' outcomes.
    let mut points: BTreeMap<u32, f64> = BTreeMap::new();
    for g in &done.games {
        assert_eq!(g.status, pb::TournamentGameStatus::Finished as i32);
        eprintln!(
            "game {}: {} at ply {}, winners {:?}",
            g.number, g.reason, g.ply, g.winners
        );
        // Played out by the bots across the failover: nobody lost on time.
        assert!(
            !["TIMEOUT", "FORFEIT", "EXPIRED", "ABORTED"].contains(&g.reason.as_str()),
            "game {} ended {}",
            g.number,
            g.reason
        );
        let game = common::get(&mut games_b, &g.game_id).await;
        assert_eq!(game.status, pb::GameStatus::Finished as i32);
        let outcome = game.outcome.unwrap();
        assert_eq!(
            (g.reason.as_str(), g.ply),
            (outcome.reason.as_str(), game.ply)
        );
        let mut winners = g.winners.clone();
        winners.sort();
        let mut theirs = outcome.winners.clone();
        theirs.sort();
        assert_eq!(winners, theirs, "game {}", g.number);
        for (seat, &e) in g.entrants.iter().enumerate() {
            let share = if outcome.winners.is_empty() {
                0.5
            } else if outcome.winners.contains(&(seat as u32 + 1)) {
                1.0 / outcome.winners.len() as f64
            } else {
                0.0
            };
            *points.entry(e).or_default() += share;
        }
    }
    for s in &done.standings {
        assert_eq!(s.points, points[&s.entrant], "entrant {}", s.name);
        assert_eq!(s.games, 4);
    }
    assert_eq!(done.standings.iter().map(|s| s.points).sum::<f64>(), 6.0);
    // No other game carries the tournament's label: none was created twice.
    let labelled = list_all(
        &mut games_b,
        pb::GameStatus::Unspecified,
        &[("tournament_id", id.as_str())],
    )
    .await;
    let listed: std::collections::BTreeSet<&str> =
        labelled.iter().map(|g| g.game_id.as_str()).collect();
    assert_eq!(listed, ids, "the tournament's games, and only them");
    // And ListTournaments on B lists it (from the database).
    let list = on_b
        .list_tournaments(pb::ListTournamentsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.tournaments.len(), 1);
    assert_eq!(list.tournaments[0].tournament_id, id);
    for child in [&mut other, &mut third] {
        signal(child, "-TERM");
        let _ = child.wait();
    }
}

// Deadlocks, commits of unknown outcome and takeover of a paused owner
// (docs/CLUSTER.md, "Leases", "Fencing", "Takeover bound").
#[path = "cluster/faults.rs"]
mod faults;
#[path = "cluster/policies.rs"]
mod policies;
#[path = "cluster/webhooks.rs"]
mod webhooks;
