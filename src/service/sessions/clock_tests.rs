//! Clock, timer and presence tests of the session layer, on tokio's paused
//! clock: time moves only when a test advances it (or, when every task is
//! idle, jumps to the next timer), so instants are exact and no test sleeps.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{self, Instant};

use super::*;
use crate::games::{GameRules, MoveInput, Outcome, Seat};

const MS: Duration = Duration::from_millis(1);

fn fischer(initial_ms: u64, increment_ms: u64) -> TimeControl {
    TimeControl {
        lag: None,
        mode: ClockMode::Fischer {
            initial: Duration::from_millis(initial_ms),
            increment: Duration::from_millis(increment_ms),
        },
        first_move: None,
    }
}

fn limits() -> Limits {
    Limits {
        abandon_after: Duration::from_millis(500),
        ..Limits::default()
    }
}

async fn timed(store: &SessionStore, tc: TimeControl) -> (Arc<Session>, [String; 2]) {
    let (s, [w, b]) = two(store
        .create_timed(GameRules::default(), BTreeMap::new(), tc, None)
        .await
        .unwrap());
    (s, [w.to_string(), b.to_string()])
}

/// A move ready to submit: the first legal move of whoever is to move, with
/// its token and ply (chosen now, submitted later: reading the game settles
/// the clock, so a move must be chosen before time runs out).
struct Prepared {
    token: String,
    mv: MoveInput,
    ply: u32,
}

fn prepare(s: &Arc<Session>, tokens: &[String; 2]) -> Prepared {
    let view = s.view(false);
    let seat = view.to_move.expect("game in progress");
    let (_, _, moves) = s.legal_moves(None, Role::Spectator);
    Prepared {
        token: tokens[seat.index()].clone(),
        mv: moves[0].detail.to_input(),
        ply: view.ply,
    }
}

async fn submit(s: &Arc<Session>, p: Prepared) -> Result<MoveReceipt, SessionError> {
    s.submit(s.role(&p.token), p.mv, p.ply, None).await
}

/// Plays the first legal move for whoever is to move.
async fn play(s: &Arc<Session>, tokens: &[String; 2]) -> Result<MoveReceipt, SessionError> {
    submit(s, prepare(s, tokens)).await
}

fn remaining(v: &SessionView) -> [Duration; 2] {
    let left = v.clock.remaining.clone().expect("a clock");
    [left[0], left[1]]
}

fn illegal_reason(e: &SessionError) -> &'static str {
    match e {
        SessionError::Rejected(MoveError::Illegal { reason, .. }) => reason,
        _ => "",
    }
}

/// The next item of a watch that is not a presence flip.
async fn next_event(w: &mut Watch) -> Arc<Event> {
    loop {
        match w.next().await.unwrap().expect("an item") {
            WatchItem::Event(e) => return e,
            WatchItem::Presence(_) => continue,
            WatchItem::Snapshot { .. } => panic!("unexpected snapshot"),
        }
    }
}

async fn skip_snapshot(w: &mut Watch) -> SessionView {
    match w.next().await.unwrap().expect("a snapshot") {
        WatchItem::Snapshot { view, .. } => *view,
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

fn outcome_of(e: &Event) -> Outcome {
    match &e.kind {
        EventKind::GameOver { outcome } => outcome.clone(),
        EventKind::MoveApplied { .. } => panic!("expected the game-over event, got a move"),
    }
}

#[tokio::test(start_paused = true)]
async fn flag_falls_by_itself_at_the_deadline_with_no_request() {
    let store = SessionStore::new(limits());
    let t0 = Instant::now();
    let (s, _) = timed(&store, fischer(1000, 0)).await;
    let mut spectator = s.watch(None, Role::Spectator).unwrap();
    skip_snapshot(&mut spectator).await;
    // Nobody calls anything: the paused clock jumps to the next timer, the
    // game's own, and the watcher sees the end.
    let over = next_event(&mut spectator).await;
    assert_eq!(Instant::now() - t0, MS * 1000);
    let v = outcome_of(&over);
    assert_eq!((v.winner(), v.reason), (Some(Seat::SECOND), "TIMEOUT"));
    assert_eq!(
        over.clock().remaining,
        Some(vec![Duration::ZERO, MS * 1000])
    );
    assert_eq!(over.clock().running, None);
    assert!(spectator.next().await.unwrap().is_none());
}

#[tokio::test(start_paused = true)]
async fn increment_is_added_and_the_flag_falls_between_moves() {
    let store = SessionStore::new(limits());
    let (s, tokens) = timed(&store, fischer(1000, 500)).await;
    time::advance(MS * 300).await;
    play(&s, &tokens).await.unwrap();
    // White: 1000 - 300 + 500.
    assert_eq!(remaining(&s.view(false)), [MS * 1200, MS * 1000]);
    time::advance(MS * 100).await;
    let v = s.view(false);
    assert_eq!(remaining(&v), [MS * 1200, MS * 900]);
    assert_eq!(v.clock.running, Some(Seat::SECOND));
    play(&s, &tokens).await.unwrap();
    assert_eq!(remaining(&s.view(false)), [MS * 1200, MS * 1400]);
    // White thinks for 1199 ms: still there.
    time::advance(MS * 1199).await;
    assert!(s.view(false).outcome.is_none());
    time::advance(MS).await;
    let v = s.view(false);
    let outcome = v.outcome.clone().expect("white's flag fell");
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(Seat::SECOND), "TIMEOUT")
    );
    assert_eq!(remaining(&v), [Duration::ZERO, MS * 1400]);
    assert_eq!(v.to_move, None);
}

#[tokio::test(start_paused = true)]
async fn per_move_time_resets_and_is_not_carried_over() {
    let store = SessionStore::new(limits());
    let tc = TimeControl {
        lag: None,
        mode: ClockMode::PerMove { per_move: MS * 400 },
        first_move: None,
    };
    let (s, tokens) = timed(&store, tc).await;
    time::advance(MS * 100).await;
    play(&s, &tokens).await.unwrap();
    assert_eq!(remaining(&s.view(false)), [MS * 400, MS * 400]);
    time::advance(MS * 399).await;
    play(&s, &tokens).await.unwrap();
    let late = prepare(&s, &tokens);
    time::advance(MS * 400).await;
    let err = submit(&s, late).await.unwrap_err();
    assert_eq!(illegal_reason(&err), "GAME_OVER");
    let outcome = s.view(false).outcome.unwrap();
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(Seat::SECOND), "TIMEOUT")
    );
}

#[tokio::test(start_paused = true)]
async fn a_side_that_never_starts_aborts_the_game_and_loses_nothing() {
    let store = SessionStore::new(limits());
    let tc = TimeControl {
        first_move: Some(MS * 200),
        ..fischer(1000, 0)
    };
    let t0 = Instant::now();
    let (s, tokens) = timed(&store, tc).await;
    let v = s.view(false);
    assert_eq!(v.clock.first_move_left, Some(MS * 200));
    assert_eq!(v.clock.running, None);
    time::advance(MS * 150).await;
    play(&s, &tokens).await.unwrap();
    // White's first move is not charged; black's own deadline starts.
    let v = s.view(false);
    assert_eq!(remaining(&v), [MS * 1000, MS * 1000]);
    assert_eq!(v.clock.first_move_left, Some(MS * 200));
    let mut w = s.watch(None, Role::Spectator).unwrap();
    skip_snapshot(&mut w).await;
    let over = next_event(&mut w).await;
    assert_eq!(Instant::now() - t0, MS * 350);
    let v = outcome_of(&over);
    assert_eq!((v.winner(), v.reason), (None, "ABORTED"));
}

#[tokio::test(start_paused = true)]
async fn a_first_move_deadline_also_works_without_a_clock() {
    let store = SessionStore::new(limits());
    let tc = TimeControl {
        lag: None,
        mode: ClockMode::Untimed,
        first_move: Some(MS * 50),
    };
    let (s, _) = timed(&store, tc).await;
    assert_eq!(s.view(false).clock.remaining, None);
    time::advance(MS * 50).await;
    assert_eq!(s.view(false).outcome.unwrap().reason, "ABORTED");
}

/// Plays both first moves, then lets white think until `deadline_offset`
/// from its turn's start, then submits: returns the reply, the snapshot and
/// everything the watcher saw after the two moves.
async fn race(
    offset: Duration,
) -> (
    Result<MoveReceipt, SessionError>,
    SessionView,
    Vec<Arc<Event>>,
) {
    let store = SessionStore::new(limits());
    let (s, tokens) = timed(&store, fischer(1000, 0)).await;
    play(&s, &tokens).await.unwrap();
    play(&s, &tokens).await.unwrap();
    let mut w = s.watch(None, Role::Spectator).unwrap();
    skip_snapshot(&mut w).await;
    // White's clock: 1000 ms, its turn started now.
    let mv = prepare(&s, &tokens);
    time::advance(offset).await;
    let reply = submit(&s, mv).await;
    let view = s.view(false);
    let mut seen = Vec::new();
    loop {
        let e = next_event(&mut w).await;
        let done = matches!(e.kind, EventKind::GameOver { .. });
        seen.push(e);
        if done {
            break;
        }
    }
    (reply, view, seen)
}

#[tokio::test(start_paused = true)]
async fn a_move_just_before_the_flag_is_played_everywhere() {
    let (reply, view, seen) = race(MS * 999).await;
    let receipt = reply.expect("in time");
    assert_eq!(receipt.report.ply, 3);
    assert_eq!(view.ply, 3);
    assert!(view.outcome.is_none());
    assert_eq!(remaining(&view)[0], MS);
    // The stream has the move, then (black not moving) black's flag.
    assert!(matches!(&seen[0].kind, EventKind::MoveApplied { report } if report.ply == 3));
    assert_eq!(seen[0].clock().remaining.as_ref().unwrap()[0], MS);
    let v = outcome_of(&seen[1]);
    assert_eq!((v.winner(), v.reason), (Some(Seat::FIRST), "TIMEOUT"));
}

#[tokio::test(start_paused = true)]
async fn a_move_at_the_flag_is_refused_everywhere() {
    let (reply, view, seen) = race(MS * 1000).await;
    let err = reply.expect_err("the flag fell first");
    assert_eq!(illegal_reason(&err), "GAME_OVER");
    assert!(err.to_string().contains("TIMEOUT"), "{err}");
    assert_eq!(view.ply, 2);
    let outcome = view.outcome.unwrap();
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(Seat::SECOND), "TIMEOUT")
    );
    assert_eq!(seen.len(), 1, "no move event, only the game over");
    assert_eq!(outcome_of(&seen[0]), outcome);
}

#[tokio::test(start_paused = true)]
async fn a_move_and_the_timer_racing_on_threads_have_one_outcome() {
    // Real threads, paused clock: the timer task and the move contend for
    // the lock at the deadline instant; whichever wins, reply, snapshot and
    // stream agree.
    let store = SessionStore::new(limits());
    let (s, tokens) = timed(&store, fischer(100, 0)).await;
    let mut w = s.watch(None, Role::Spectator).unwrap();
    skip_snapshot(&mut w).await;
    let mv = prepare(&s, &tokens);
    time::advance(MS * 100).await;
    let mover = {
        let s = s.clone();
        tokio::spawn(async move { submit(&s, mv).await })
    };
    let reply = mover.await.unwrap();
    let first = next_event(&mut w).await;
    let view = s.view(false);
    assert!(reply.is_err(), "at the deadline the flag has fallen");
    assert_eq!(outcome_of(&first).reason, "TIMEOUT");
    assert_eq!(view.outcome.unwrap().reason, "TIMEOUT");
    assert_eq!(view.ply, 0);
}

#[tokio::test(start_paused = true)]
async fn resign_and_abort_work_with_the_clock_running_and_stop_it() {
    let store = SessionStore::new(limits());
    let (s, tokens) = timed(&store, fischer(1000, 0)).await;
    time::advance(MS * 100).await;
    let v = s.abort(s.role(&tokens[1])).await.unwrap();
    assert_eq!(v.outcome.as_ref().unwrap().reason, "ABORTED");
    assert_eq!(remaining(&v), [MS * 900, MS * 1000]);

    let (s, tokens) = timed(&store, fischer(1000, 0)).await;
    play(&s, &tokens).await.unwrap();
    play(&s, &tokens).await.unwrap();
    time::advance(MS * 250).await;
    let v = s.resign(s.role(&tokens[0])).await.unwrap();
    assert_eq!(v.outcome.as_ref().unwrap().reason, "RESIGNATION");
    // Long after the old deadline nothing changes: the clock stopped.
    time::advance(MS * 5000).await;
    let v = s.view(false);
    assert_eq!(v.outcome.as_ref().unwrap().reason, "RESIGNATION");
    assert_eq!(remaining(&v), [MS * 750, MS * 1000]);
}

#[tokio::test(start_paused = true)]
async fn presence_follows_a_players_streams_and_spectators_see_it_flip() {
    let store = SessionStore::new(limits());
    let (s, tokens) = timed(&store, fischer(60_000, 0)).await;
    let mut spectator = s.watch(None, Role::Spectator).unwrap();
    let snap = skip_snapshot(&mut spectator).await;
    assert!(!snap.presence[0].connected && !snap.presence[1].connected);

    let mut white = s.watch(None, s.role(&tokens[0])).unwrap();
    // The player's own first snapshot already shows it present.
    assert!(skip_snapshot(&mut white).await.presence[0].connected);
    match spectator.next().await.unwrap().unwrap() {
        WatchItem::Presence(p) => assert!(p[0].connected && !p[1].connected),
        other => panic!("expected a presence flip, got {other:?}"),
    }
    // A second stream of the same seat flips nothing; dropping one of two
    // keeps the seat present.
    let second = s.watch(None, s.role(&tokens[0])).unwrap();
    drop(second);
    assert!(s.presence()[0].connected);

    drop(white);
    match spectator.next().await.unwrap().unwrap() {
        WatchItem::Presence(p) => assert!(!p[0].connected),
        other => panic!("expected a presence flip, got {other:?}"),
    }
    time::advance(MS * 70).await;
    assert_eq!(s.presence()[0].away_for, MS * 70);
    // A spectator token is no seat: refused, nothing counted.
    assert!(matches!(
        s.role_of("0123456789abcdef0123456789abcdef", false)
            .and_then(|role| s.watch(None, role)),
        Err(SessionError::PermissionDenied(_))
    ));
    assert!(!s.presence()[0].connected && !s.presence()[1].connected);
}

#[tokio::test(start_paused = true)]
async fn victory_can_be_claimed_only_over_an_opponent_gone_long_enough() {
    let store = SessionStore::new(limits());
    let (untimed, ut) = timed(&store, TimeControl::default()).await;
    play(&untimed, &ut).await.unwrap();
    play(&untimed, &ut).await.unwrap();
    let e = untimed
        .claim_victory(untimed.role(&ut[0]), None)
        .await
        .unwrap_err();
    assert_eq!(illegal_reason(&e), "NO_CLOCK");

    let (s, tokens) = timed(&store, fischer(60_000, 0)).await;
    let e = s.claim_victory(s.role(&tokens[0]), None).await.unwrap_err();
    assert_eq!(illegal_reason(&e), "GAME_NOT_STARTED");
    play(&s, &tokens).await.unwrap();
    play(&s, &tokens).await.unwrap();

    let black = s.watch(None, s.role(&tokens[1])).unwrap();
    time::advance(MS * 1000).await;
    let e = s.claim_victory(s.role(&tokens[0]), None).await.unwrap_err();
    assert_eq!(illegal_reason(&e), "OPPONENT_PRESENT");

    drop(black);
    time::advance(MS * 499).await;
    let e = s.claim_victory(s.role(&tokens[0]), None).await.unwrap_err();
    assert_eq!(illegal_reason(&e), "OPPONENT_NOT_GONE_LONG_ENOUGH");
    assert!(s.view(false).outcome.is_none());

    time::advance(MS).await;
    let v = s.claim_victory(s.role(&tokens[0]), None).await.unwrap();
    let outcome = v.outcome.unwrap();
    assert_eq!(
        (outcome.winner(), outcome.reason),
        (Some(Seat::FIRST), "ABANDONED")
    );
    assert_eq!(v.clock.running, None);
    let e = s.claim_victory(s.role(&tokens[0]), None).await.unwrap_err();
    assert_eq!(illegal_reason(&e), "GAME_OVER");
}

#[tokio::test(start_paused = true)]
async fn the_clock_is_rebuilt_from_its_move_times() {
    let store = SessionStore::new(limits());
    let (s, tokens) = timed(&store, fischer(1000, 100)).await;
    for wait in [120, 340, 50] {
        time::advance(MS * wait).await;
        play(&s, &tokens).await.unwrap();
    }
    let before = s.view(false).clock;
    let (control, stamps) = s.clock_stamps();
    assert_eq!(stamps.len(), 3);
    assert_eq!(stamps[1].at, MS * 460);
    // A restart 10 s later does not charge the downtime.
    let restored = Clock::restore(
        control,
        2,
        Seat::FIRST,
        &stamps,
        Instant::now() + MS * 10_000,
    );
    assert_eq!(
        restored.reading(Instant::now() + MS * 10_000),
        ClockReading {
            running: Some(Seat::SECOND),
            ..before
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_session_ends_its_timer() {
    let store = SessionStore::new(Limits {
        finished_ttl: Duration::ZERO,
        idle_ttl: Duration::ZERO,
        ..limits()
    });
    let (s, _) = timed(&store, fischer(1000, 0)).await;
    let weak = Arc::downgrade(&s);
    drop(s);
    assert_eq!(store.sweep(std::time::Instant::now()), 1);
    time::advance(MS * 2000).await;
    assert!(weak.upgrade().is_none(), "nothing keeps the session alive");
}

#[tokio::test]
async fn out_of_bounds_time_controls_are_refused() {
    let store = SessionStore::new(limits());
    let e = store
        .create_timed(GameRules::default(), BTreeMap::new(), fischer(0, 0), None)
        .await
        .unwrap_err();
    assert!(matches!(
        e,
        SessionError::InvalidArgument {
            field: "time_control.fischer.initial_ms",
            ..
        }
    ));
    assert!(store.is_empty());
}
