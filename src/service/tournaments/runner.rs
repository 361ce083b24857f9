//! A running tournament's task: creates its games in schedule order, at
//! most the concurrency at once, sends each to its entrants' streams, and
//! records each result when the game ends (docs/TOURNAMENTS.md, "The
//! runner"). One task per running tournament; it stops at the end, at a
//! cancellation, or at the server's shutdown (the state stays `running`
//! and the next start resumes it, [`super::Tournaments::recover`]).
//!
//! A game is created through the [`SessionStore`] exactly as `CreateGame`
//! creates one (labels `tournament`, `round`, `game` and each seat's entrant
//! name), then the opening's moves are played by the referee with the seat
//! tokens it holds. The end of every game is watched as a spectator: the
//! game-over event gives the outcome. A seat that misses its first-move
//! deadline loses the game on `TIMEOUT` (and a seat's abort is its
//! resignation): the session ends a tournament's game that way itself, so
//! the result the tournament counts is the game's and in its record. A game
//! stored `ABORTED` without winners by an older version is still counted a
//! loss of the seat to move (`FORFEIT`), so an absent entrant loses and the
//! event goes on.
//!
//! In a cluster the runner runs on the tournament's owner replica, and a
//! game of it may be held by another (taken over after a replica died):
//! its end is then read from storage every half lease until it is stored
//! ([`wait_end`]). No game is started while the tournament's lease is not
//! surely renewed, and a write of the document refused by fencing stops the
//! runner: another replica runs the tournament now.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::mpsc;

use super::record::{self, Doc, GameDoc, PairingStatus, TournamentStatus};
use super::schedule::Format;
use super::{Entry, Push, Tournament, Tournaments, assignment_of, view_of};
use crate::games::{MoveDetail, Seat, Setup};
use crate::service::sessions::{EventKind, Role, Session, SessionStore, WatchItem};
use crate::service::storage::{self, Commit};

/// A game's end, as its watcher reports it.
#[derive(Debug)]
struct Ended {
    number: u32,
    state: PairingStatus,
}

/// Starts the runner of tournament `id`.
pub(crate) fn spawn(tournaments: Arc<Tournaments>, id: String, entry: Arc<Entry>) {
    let alive = tournaments.track();
    tokio::spawn(async move {
        let _alive = alive;
        run(tournaments, id, entry).await;
    });
}

/// The runner's loop (module docs).
async fn run(ts: Arc<Tournaments>, id: String, entry: Arc<Entry>) {
    let (ended_tx, mut ended_rx) = mpsc::unbounded_channel::<Ended>();
    // Games in progress (after a restart): watch their ends again.
    let playing: Vec<(u32, String, usize)> = {
        let t = entry.lock();
        t.doc
            .games
            .iter()
            .filter_map(|g| match &g.state {
                PairingStatus::Playing { game_id, .. } => {
                    Some((g.number, game_id.clone(), g.seats.len()))
                }
                _ => None,
            })
            .collect()
    };
    for (number, game_id, seats) in playing {
        watch_end(&ts, &entry, game_id, number, seats, ended_tx.clone());
    }
    loop {
        let retry = match step(&ts, &entry, &ended_tx).await {
            Step::Over => break,
            Step::Wait => false,
            Step::Retry => true,
        };
        if entry.gone.is_cancelled() {
            break;
        }
        tokio::select! {
            _ = ts.shutdown.cancelled() => return,
            _ = entry.gone.cancelled() => break,
            ended = ended_rx.recv() => {
                if let Some(ended) = ended {
                    record_end(&ts, &id, &entry, ended).await;
                }
            }
            _ = entry.wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)), if retry => {}
        }
    }
    tracing::info!(tournament = %id, "tournament runner stopped");
}

/// What the loop does next.
enum Step {
    /// The tournament is over (finished or cancelled).
    Over,
    /// Wait for a game to end.
    Wait,
    /// A game could not be created: try again in a moment.
    Retry,
}

/// Starts what may start; finishes the tournament once nothing is left.
async fn step(
    ts: &Arc<Tournaments>,
    entry: &Arc<Entry>,
    ended_tx: &mpsc::UnboundedSender<Ended>,
) -> Step {
    loop {
        match plan(ts, entry) {
            // Only under a lease surely still this replica's.
            Plan::Start(_) if !ts.leases_valid() => return Step::Retry,
            Plan::Start(i) => {
                if start_game(ts, entry, i, ended_tx).await.is_err() {
                    return Step::Retry;
                }
            }
            Plan::Stored(commit, over) => {
                entry.version.fetch_add(1, Ordering::SeqCst);
                if !stored(ts, entry, commit.await) || over {
                    return Step::Over;
                }
            }
            Plan::Wait => return Step::Wait,
            Plan::Over => return Step::Over,
        }
    }
}

/// What to do now, decided under the lock.
enum Plan {
    /// Start game `i` of the schedule.
    Start(usize),
    /// A change (a Swiss round paired; the end when `true`) is being stored.
    Stored(Commit, bool),
    /// Nothing to start: wait for an end.
    Wait,
    /// Not running any more.
    Over,
}

fn plan(ts: &Tournaments, entry: &Entry) -> Plan {
    let mut t = entry.lock();
    if t.doc.status != TournamentStatus::Running {
        return Plan::Over;
    }
    let playing = t.doc.playing();
    let pending = t
        .doc
        .games
        .iter()
        .position(|g| g.state == PairingStatus::Pending);
    match pending {
        Some(i) if playing < t.doc.effective_concurrency() => Plan::Start(i),
        Some(_) => Plan::Wait,
        None if playing > 0 => Plan::Wait,
        None => {
            // A Swiss pairs its next round once the last is over.
            let openings = t.openings.len();
            if matches!(t.doc.format, Format::Swiss { .. })
                && t.doc.decision.is_none()
                && record::next_swiss_round(&mut t.doc, openings)
            {
                return Plan::Stored(save(ts, &t), false);
            }
            finish(&mut t);
            Plan::Stored(save(ts, &t), true)
        }
    }
}

/// Marks the tournament finished and tells every connected entrant.
fn finish(t: &mut Tournament) {
    t.doc.status = TournamentStatus::Finished;
    t.doc.ended_ms = storage::unix_ms(std::time::SystemTime::now());
    let view = Box::new(view_of(t));
    for (_, stream) in t.streams.iter().flatten() {
        let _ = stream.send(Push::Ended(view.clone()));
    }
    tracing::info!(tournament = %t.doc.id, games = t.doc.games.len(), "tournament finished");
}

/// The labels of scheduled game `g` of `t`: the tournament's, then its own
/// (`tournament`, `tournament_id`, `round`, `game`, each seat's entrant).
fn game_labels(t: &Tournament, g: &GameDoc) -> BTreeMap<String, String> {
    let mut labels = t.doc.labels.clone();
    let name = if t.doc.name.is_empty() {
        &t.doc.id
    } else {
        &t.doc.name
    };
    labels.insert("tournament".into(), name.clone());
    labels.insert("tournament_id".into(), t.doc.id.clone());
    labels.insert("round".into(), g.round.to_string());
    labels.insert("game".into(), g.number.to_string());
    let seat_names = t.rules.rules().start(None).seat_names();
    for (s, &e) in g.seats.iter().enumerate() {
        if let (Some(name), Some(entrant)) = (seat_names.get(s), t.doc.entrants.get(e)) {
            labels.insert((*name).to_string(), entrant.name.clone());
        }
    }
    labels
}

/// Plays an opening's moves in a new game, each by the seat to move (the
/// server made the game: it plays as that seat); stops at the first refusal
/// (logged).
async fn play_opening<'a>(session: &Arc<Session>, moves: impl Iterator<Item = &'a MoveDetail>) {
    for detail in moves {
        let view = session.view(false);
        let Some(seat) = view.to_move else { break };
        if let Err(e) = session
            .submit(Role::Seat(seat), detail.to_input(), view.ply, None)
            .await
        {
            tracing::warn!(game_id = %session.id(), error = %e, "opening move refused");
            break;
        }
    }
}

/// Creates game `i` of the schedule, plays its opening, stores it as in
/// progress, sends it to its entrants and watches its end.
async fn start_game(
    ts: &Arc<Tournaments>,
    entry: &Arc<Entry>,
    i: usize,
    ended_tx: &mpsc::UnboundedSender<Ended>,
) -> Result<(), ()> {
    let (rules, tc, labels, opening, seed) = {
        let t = entry.lock();
        let g = &t.doc.games[i];
        let opening = g.opening.and_then(|o| t.openings.get(o).cloned());
        let seed = t.doc.supplied_seed(g);
        (
            t.rules.clone(),
            t.time_control,
            game_labels(&t, g),
            opening,
            seed,
        )
    };
    let tournament_id = entry.lock().doc.id.clone();
    // The seats' tokens are derived from the server secret: the document
    // stores none, and an entrant reconnecting later (after a restart, on
    // another replica) gets them again.
    let secret = ts.sessions.storage().secret();
    let seat_token = |id: &crate::service::sessions::GameId, seat: usize| {
        crate::service::sessions::Token::from_bytes(secret.seat_token(
            &tournament_id,
            &id.to_string(),
            seat,
        ))
    };
    let policy = entry.lock().doc.failure_policy();
    let created = ts
        .sessions
        .create_seated(
            rules,
            labels,
            tc,
            seed,
            crate::service::sessions::Seating {
                tokens: &seat_token,
                forfeits: true,
                policy,
            },
        )
        .await;
    let session = match created {
        Ok((session, _)) => session,
        Err(e) => {
            tracing::warn!(error = %e, "tournament game not created; retrying");
            return Err(());
        }
    };
    play_opening(&session, opening.iter().flatten()).await;
    let game_id = session.id().to_string();
    let (number, seats, commit) = {
        let mut t = entry.lock();
        if t.doc.status != TournamentStatus::Running {
            return Ok(());
        }
        let g = &mut t.doc.games[i];
        g.state = PairingStatus::Playing {
            game_id: game_id.clone(),
            sealed_tokens: Vec::new(),
        };
        let (number, seats) = (g.number, g.seats.clone());
        // Its entrants are told once the document naming it is stored:
        // a restart before that reads it as still to start.
        t.storing.insert(number);
        (number, seats, save(ts, &t))
    };
    entry.version.fetch_add(1, Ordering::SeqCst);
    if !store_started(ts, entry, commit).await {
        // Another replica runs the tournament now, without this game, or
        // this runner stops before the game is stored (a restart starts
        // another in its place): it is called off (nobody may play it for
        // a result).
        if let Err(e) = session.abort(Role::Platform(None)).await {
            tracing::warn!(game_id = %game_id, error = %e, "tournament game not played here not called off");
        }
        return Ok(());
    }
    tell_stored(entry, secret, i, &game_id);
    tracing::info!(tournament = %entry.lock().doc.id, game = number, game_id = %game_id, "tournament game started");
    watch_end(ts, entry, game_id, number, seats.len(), ended_tx.clone());
    Ok(())
}

/// Sends game `i` of the schedule, `game_id`, whose document is stored
/// now, to its entrants' streams (unless it was called off meanwhile).
fn tell_stored(entry: &Entry, secret: &storage::ServerSecret, i: usize, game_id: &str) {
    let mut t = entry.lock();
    let g = t.doc.games[i].clone();
    t.storing.remove(&g.number);
    if !matches!(&g.state, PairingStatus::Playing { game_id: id, .. } if id == game_id) {
        return;
    }
    for &e in &g.seats {
        if let (Some(a), Some(Some((_, stream)))) =
            (assignment_of(secret, &t.doc, &g, e), t.streams.get(e))
        {
            let _ = stream.send(Push::Game(a));
        }
    }
}

/// Waits until `commit`, the write of the document naming a game just
/// started, is stored; a write that failed otherwise than by fencing is
/// written again every second (its entrants cannot be told of the game
/// before). False when the game is not to be played here: the write was
/// fenced (another replica runs the tournament), or the runner stops (the
/// server's shutdown, the tournament dropped) before it was stored.
async fn store_started(ts: &Tournaments, entry: &Entry, mut commit: Commit) -> bool {
    loop {
        let result = commit.await;
        match result {
            Err(e) if !e.is_fenced() => {
                tracing::warn!(
                    tournament = %entry.lock().doc.id,
                    error = %e,
                    "tournament game not stored; written again before its entrants are told"
                );
            }
            result => return stored(ts, entry, result),
        }
        tokio::select! {
            _ = ts.shutdown.cancelled() => return false,
            _ = entry.gone.cancelled() => return false,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        commit = save(ts, &entry.lock());
    }
}

/// Records a game's end; checks the SPRT.
async fn record_end(ts: &Tournaments, id: &str, entry: &Entry, ended: Ended) {
    let commit = {
        let mut t = entry.lock();
        let Some(g) = t.doc.games.iter_mut().find(|g| g.number == ended.number) else {
            return;
        };
        if !matches!(g.state, PairingStatus::Playing { .. }) {
            return;
        }
        g.state = ended.state;
        check_sprt(id, &mut t.doc);
        save(ts, &t)
    };
    entry.version.fetch_add(1, Ordering::SeqCst);
    stored(ts, entry, commit.await);
}

/// Once the SPRT decides: the decision, logged; games not started yet are
/// skipped (games in progress still count).
fn check_sprt(id: &str, doc: &mut Doc) {
    let Some(sprt) = doc.sprt else { return };
    if doc.decision.is_some() {
        return;
    }
    let state = sprt.state(&doc.sprt_samples(doc.pentanomial()));
    let Some(decision) = state.decision else {
        return;
    };
    doc.decision = Some(decision);
    for g in &mut doc.games {
        if g.state == PairingStatus::Pending {
            g.state = PairingStatus::Skipped { game_id: None };
        }
    }
    tracing::info!(
        tournament = %id,
        decision = ?decision,
        llr = state.llr,
        lower = state.lower,
        upper = state.upper,
        samples = state.samples,
        "SPRT decided: the tournament stops"
    );
}

/// Queues `t`'s document for storage under its lease (in order: called
/// under its lock).
fn save(ts: &Tournaments, t: &Tournament) -> Commit {
    match record::row_of(&t.doc, ts.sessions().storage().secret()) {
        Ok(row) => ts.write(row, t.lease),
        Err(e) => Commit::ready(Err(storage::StorageError::Unavailable(e.to_string()))),
    }
}

/// What became of a write of the document: false when fencing refused it
/// (another replica owns the tournament now: it is dropped here, and the
/// runner stops); another failure is logged, and the next change stores
/// the document.
fn stored(ts: &Tournaments, entry: &Entry, result: Result<(), storage::StorageError>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) if e.is_fenced() => {
            let (id, lease) = {
                let t = entry.lock();
                (t.doc.id.clone(), t.lease)
            };
            tracing::warn!(tournament = %id, error = %e, "tournament write fenced");
            ts.release_lease(&id, lease);
            // Stopped, even if a newer lease is held here now: that one
            // has a runner of its own.
            entry.gone.cancel();
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "tournament state not stored; the next change stores it");
            true
        }
    }
}

/// Watches game `game_id` (number `number`, `seats` seats) to its end and
/// reports it (until the server stops, or the tournament moves away).
fn watch_end(
    ts: &Tournaments,
    entry: &Entry,
    game_id: String,
    number: u32,
    seats: usize,
    ended: mpsc::UnboundedSender<Ended>,
) {
    let (sessions, shutdown, alive) = (ts.sessions.clone(), ts.shutdown.clone(), ts.track());
    let (gone, poll) = (entry.gone.clone(), ts.poll());
    tokio::spawn(async move {
        let _alive = alive;
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = gone.cancelled() => {}
            state = wait_end(&sessions, game_id, seats, poll) => {
                let _ = ended.send(Ended { number, state });
            }
        }
    });
}

/// The end of game `game_id`: its outcome, with a missed first-move
/// deadline as a forfeit of the seat that missed it; a game that vanished
/// unfinished (expired) is a draw. In a cluster (`poll`), a game held
/// nowhere here is followed through storage: its stored end is read every
/// `poll` until there is one, and a game held here that moves away is
/// looked for again.
async fn wait_end(
    sessions: &SessionStore,
    game_id: String,
    seats: usize,
    poll: Option<std::time::Duration>,
) -> PairingStatus {
    loop {
        let session = match (sessions.find(&game_id).await, poll) {
            (Ok(session), _) => session,
            (Err(_), None) => {
                return record::done(game_id, seats, Vec::new(), "EXPIRED".into(), 0);
            }
            (Err(_), Some(poll)) => match stored_end(sessions, &game_id, seats).await {
                Some(state) => return state,
                None => {
                    tokio::time::sleep(poll).await;
                    continue;
                }
            },
        };
        if let Some(state) = follow(sessions, &session, &game_id, seats, poll.is_none()).await {
            return state;
        }
        // Moved away unfinished (another replica holds it now).
        if let Some(poll) = poll {
            tokio::time::sleep(poll).await;
        }
    }
}

/// Follows a held game to its end; `None` when `expire` is false (a
/// cluster) and this session stops being the one held here (the game moved
/// away, or was taken back as a new session: a copy let go of is never
/// trusted, its end is read again); with `expire`, an unfinished game that
/// is dropped counts as expired.
async fn follow(
    sessions: &SessionStore,
    session: &Arc<Session>,
    game_id: &str,
    seats: usize,
    expire: bool,
) -> Option<PairingStatus> {
    let mut to_move: Option<Seat> = None;
    // The server itself follows the live game (a spectator of a delayed
    // game would see its end late).
    if let Ok(mut watch) = session.watch(None, Role::Platform(None)) {
        loop {
            match watch.next().await {
                Ok(Some(WatchItem::Snapshot { view, .. })) => {
                    if view.outcome.is_some() {
                        break;
                    }
                    to_move = view.to_move;
                }
                Ok(Some(WatchItem::Event(event))) => match &event.kind {
                    EventKind::MoveApplied { report } => to_move = report.next,
                    EventKind::GameOver { .. } => break,
                },
                Ok(Some(WatchItem::Presence(_))) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
    loop {
        let held = sessions
            .get(game_id)
            .is_ok_and(|h| Arc::ptr_eq(&h, session));
        if !held && !expire {
            return None;
        }
        let view = session.view(false);
        if let Some(outcome) = view.outcome {
            let winners: Vec<usize> = outcome.winners.iter().map(Seat::index).collect();
            // A game read back finished was not seen being played: who was
            // to move comes from its record.
            let (winners, reason) = forfeit_if_called_off(
                winners,
                outcome.reason.to_string(),
                || to_move.or_else(|| to_move_at_end(session)),
                seats,
            );
            let mut state = record::done(game_id.to_string(), seats, winners, reason, view.ply);
            super::policy::count_substitutions(&mut state, &view.failure, seats);
            return Some(state);
        }
        if !held {
            return Some(record::done(
                game_id.to_string(),
                seats,
                Vec::new(),
                "EXPIRED".into(),
                view.ply,
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A game called off with no winner (`ABORTED`) counts in a tournament as
/// a forfeit by the seat that was to move, when it is known, whichever
/// replica reads the end: the game's session or its stored row.
fn forfeit_if_called_off(
    winners: Vec<usize>,
    reason: String,
    missed: impl FnOnce() -> Option<Seat>,
    seats: usize,
) -> (Vec<usize>, String) {
    if reason == "ABORTED"
        && winners.is_empty()
        && let Some(missed) = missed()
    {
        let winners = (0..seats).filter(|&s| s != missed.index()).collect();
        return (winners, "FORFEIT".into());
    }
    (winners, reason)
}

/// The seat that was to move when a finished game ended: the next of its
/// last move, or its first mover when it ended before any move.
fn to_move_at_end(session: &Session) -> Option<Seat> {
    let (view, events) = session.view_with_events();
    let last = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::MoveApplied { report } => Some(report.next),
        EventKind::GameOver { .. } => None,
    });
    match last {
        Some(next) => next,
        None => {
            let setup = view.setup.as_ref().and_then(|s| {
                s.seed.map(|seed| Setup {
                    seed,
                    supplied: s.supplied,
                })
            });
            view.rules.rules().start(setup).to_move()
        }
    }
}

/// The end of game `game_id` as storage has it, for a game held nowhere
/// here: `None` while it is in progress (its owner plays it) or storage
/// cannot be read; a finished game that could not be read back is counted
/// from its stored ending; one stored as expired, or not at all, expired.
async fn stored_end(sessions: &SessionStore, game_id: &str, seats: usize) -> Option<PairingStatus> {
    let storage = sessions.storage().clone();
    let id = game_id.to_string();
    let stored = tokio::task::spawn_blocking(move || storage.load(&id))
        .await
        .ok()?
        .ok()?;
    let Some(stored) = stored else {
        return Some(record::done(
            game_id.to_string(),
            seats,
            Vec::new(),
            "EXPIRED".into(),
            0,
        ));
    };
    let end = stored.end.as_ref()?;
    let (winners, reason) = if end.status == "finished" {
        forfeit_if_called_off(
            end.winners.iter().map(Seat::index).collect(),
            end.reason.clone(),
            || sessions.to_move_in_stored(&stored),
            seats,
        )
    } else {
        (Vec::new(), "EXPIRED".to_string())
    };
    Some(record::done(
        game_id.to_string(),
        seats,
        winners,
        reason,
        end.ply,
    ))
}

#[cfg(test)]
mod tests;
