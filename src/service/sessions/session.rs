//! One refereed game: its seats, its rules engine, its numbered event log and
//! its watchers' broadcast channel.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use bytes::Bytes;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Notify, broadcast};
use tokio::time;
use tokio_util::sync::CancellationToken;

use tracing::Instrument;

use super::clock::{Clock, ClockReading, Expiry, MoveStamp, TimeControl};
use super::presence::{Presence, PresenceSlot, SeatPresence};
use super::token::{Token, TokenHash};
use super::watch::{Watch, WatchItem};
use super::{GameId, Limits, MAX_REQUEST_ID, SessionError};
use crate::games::{
    Ending, Game, GameRules, MoveDetail, MoveError, MoveInput, MoveReport, Seat, SeatSet, Setup,
    Snapshot, Verdict, Viewer,
};
use crate::service::storage::{self, EndRow, MoveRow, Storage, Write};
use crate::service::telemetry;

/// One numbered event of a game's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Position in the log, from 1: a move's event has `sequence == ply`; the
    /// game-over event comes last, at final ply + 1.
    pub sequence: u64,
    /// The ply after the event.
    pub ply: u32,
    /// What happened.
    pub kind: EventKind,
    /// The clocks right after it, when there is anything to read (a game
    /// without a clock has nothing, and most games have none: a finished
    /// game keeps its events, so they are kept small).
    clock: Option<Box<ClockReading>>,
}

// Every move's event stays in its game's log while the game is kept
// (finished games too): keep them this small (docs/BENCHMARKS.md, "What a
// finished game keeps").
const _: () = assert!(std::mem::size_of::<Event>() <= 96);

/// The reading of no clock.
static NO_CLOCK: ClockReading = ClockReading {
    remaining: None,
    running: None,
    first_move_left: None,
};

impl Event {
    /// Event `sequence` of a log, leaving the game at `ply`, with the
    /// clocks `clock` right after it.
    pub fn new(sequence: u64, ply: u32, kind: EventKind, clock: ClockReading) -> Event {
        Event {
            sequence,
            ply,
            kind,
            clock: (clock != NO_CLOCK).then(|| Box::new(clock)),
        }
    }

    /// The clocks right after the event.
    pub fn clock(&self) -> &ClockReading {
        self.clock.as_deref().unwrap_or(&NO_CLOCK)
    }
}

/// What an event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A move was played.
    MoveApplied {
        /// The move, its mover, its effect and who moves next.
        report: MoveReport,
    },
    /// The game ended.
    GameOver {
        /// How.
        verdict: Verdict,
    },
}

/// The answer to a move: what was played and where the game stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveReceipt {
    /// The move as played (with who moves next: `report.next`).
    pub report: MoveReport,
    /// True when this answers a retry from the first result.
    pub replayed: bool,
}

/// What of a view changes with time alone, and whose view it is: what a
/// shared form of a state ([`Session::shared_view`]) leaves out.
#[derive(Debug, Clone)]
pub struct TimeView {
    /// Whose view it is.
    pub viewer: Viewer,
    /// The clocks now.
    pub clock: ClockReading,
    /// Each seat's presence now.
    pub presence: Vec<SeatPresence>,
}

/// A read-only picture of a session.
#[derive(Debug, Clone)]
pub struct GameView {
    /// The game's id.
    pub id: GameId,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Creation time.
    pub created_at: SystemTime,
    /// The game and its options.
    pub rules: GameRules,
    /// What the game calls each seat, in seat order.
    pub seats: &'static [&'static str],
    /// Whose view this is.
    pub viewer: Viewer,
    /// The seed's commitment (and the seed once over), for a seeded game.
    pub setup: Option<SetupView>,
    /// Turns played (at the point the view shows).
    pub ply: u32,
    /// Whose turn it is (`None` once over).
    pub to_move: Option<Seat>,
    /// How it ended, once over.
    pub verdict: Option<Verdict>,
    /// The seats that have offered or accepted the standing draw offer.
    pub draw_offers: SeatSet,
    /// The game-specific state (`None` in listings).
    pub snapshot: Option<Snapshot>,
    /// The last move played.
    pub last_move: Option<MoveDetail>,
    /// The time control chosen at creation.
    pub time_control: TimeControl,
    /// The clocks (at the point the view shows).
    pub clock: ClockReading,
    /// Each seat's presence now, first seat first.
    pub presence: Vec<SeatPresence>,
}

/// What a view shows of a seeded game's setup: the commitment from the
/// start, the seed only once the game is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupView {
    /// SHA-256 of the seed.
    pub commitment: [u8; 32],
    /// The seed, once the game is over.
    pub seed: Option<[u8; 32]>,
    /// Whether the creator supplied the seed.
    pub supplied: bool,
}

impl SetupView {
    fn of(setup: Setup, over: bool) -> SetupView {
        SetupView {
            commitment: setup.commitment(),
            seed: over.then_some(setup.seed),
            supplied: setup.supplied,
        }
    }
}

/// What a retried request must repeat to be answered from its first result:
/// the same seat, answering the same ply, naming the same move (however it
/// is written: see [`Rules::same_move`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fingerprint {
    pub(super) seat: Seat,
    pub(super) expected_ply: u32,
    pub(super) played: MoveDetail,
}

/// A stored answer to a request id.
pub(super) type Receipts = HashMap<String, (Fingerprint, MoveReceipt)>;

/// The legal moves of one ply, shared by every caller of it, and their
/// notations as one text once someone asked for it.
#[derive(Debug, Default)]
struct LegalList {
    moves: Arc<[MoveReport]>,
    text: OnceLock<Bytes>,
}

/// Each move's notation followed by a line feed.
fn joined(moves: &[MoveReport]) -> Bytes {
    let mut text = String::with_capacity(moves.iter().map(|m| m.detail.notation.len() + 1).sum());
    for m in moves {
        text.push_str(&m.detail.notation);
        text.push('\n');
    }
    Bytes::from(text)
}

/// A move decided on a copy of the game, waiting to be stored.
struct PendingMove {
    game: Box<dyn Game>,
    report: MoveReport,
    draw_after: SeatSet,
    write: Write,
}

/// A decided move waiting for its write: what applying it needs.
struct DecidedMove {
    game: Box<dyn Game>,
    report: MoveReport,
    draw_after: SeatSet,
    seat: Seat,
    expected_ply: u32,
    request_id: Option<String>,
    now: time::Instant,
}

/// A move being stored, with the game's write turn. If the call goes away
/// before the write's outcome, dropping this hands the rest to a task of
/// its own (with the turn), so that a move stored is a move applied and the
/// next change waits for it.
struct StoringMove<'a> {
    session: &'a Arc<Session>,
    turn: Option<tokio::sync::SemaphorePermit<'a>>,
    commit: storage::Commit,
    decided: Option<DecidedMove>,
}

impl Drop for StoringMove<'_> {
    fn drop(&mut self) {
        let Some(decided) = self.decided.take() else {
            return;
        };
        let commit = std::mem::replace(&mut self.commit, storage::Commit::ready(Ok(())));
        let session = self.session.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // The turn goes with the task: given back when it is done.
                if let Some(turn) = self.turn.take() {
                    turn.forget();
                }
                let finish = async move {
                    let stored = commit.await;
                    let _ = session.finish_move(stored, decided);
                    session.writing.add_permits(1);
                };
                runtime.spawn(finish.instrument(tracing::Span::current()));
            }
            // No runtime to finish in: wait here.
            Err(_) => {
                let _ = session.finish_move(commit.wait_blocking(), decided);
            }
        }
    }
}

/// The mutable part of a session, behind one mutex.
#[derive(Debug)]
struct State {
    game: Box<dyn Game>,
    log: Vec<Arc<Event>>,
    receipts: Receipts,
    draw_offers: SeatSet,
    last_activity: Instant,
    finished_at: Option<Instant>,
    clock: Clock,
    /// A change is being stored: its clock time was taken before the
    /// deadline, so no deadline may end the game until it is applied or
    /// refused.
    pending: bool,
    /// The legal moves of the current ply, once someone asked for them:
    /// every caller of the ply shares one list.
    legal: Option<(u32, Arc<LegalList>)>,
    /// The watchers' broadcast ring: allocated by the first watcher,
    /// dropped again at the first event nobody watches (an unwatched game
    /// holds none).
    events: Option<broadcast::Sender<Arc<Event>>>,
}

/// What a session starts from: a new game, an import, or a game recovered
/// from storage.
pub(super) struct SessionInit<'a> {
    pub(super) id: GameId,
    pub(super) serial: u64,
    pub(super) labels: BTreeMap<String, String>,
    /// Whether a seat's abort and a missed first move lose for that seat.
    pub(super) forfeits: bool,
    pub(super) token_hashes: Vec<TokenHash>,
    pub(super) game: Box<dyn Game>,
    pub(super) history: &'a [MoveReport],
    pub(super) time_control: TimeControl,
    pub(super) created_at: SystemTime,
    /// A clock rebuilt from stored move times (`None`: start one now).
    pub(super) clock: Option<Clock>,
    pub(super) receipts: Receipts,
    pub(super) draw_offers: SeatSet,
    pub(super) storage: Arc<dyn Storage>,
    /// The epoch of the lease this replica holds on the game (cluster
    /// storage; `None` elsewhere): every write names it, so a write decided
    /// under an older lease is refused (docs/CLUSTER.md, "Fencing").
    pub(super) lease: Option<i64>,
    /// A copy of a game another replica owns, kept for its watchers and
    /// fed from the database ([`Session::catch_up`]); it never writes.
    pub(super) follower: bool,
    /// A finished game read back from storage on demand (held apart from
    /// the session limit, dropped again first).
    pub(super) archived: bool,
}

/// One refereed game.
///
/// The state sits behind a `std::sync::Mutex`, not an async one: it is held
/// only to validate and apply (microseconds, no `.await` inside), and events
/// are published while it is held, so the log order and the broadcast order
/// are the same and a watcher subscribing under the lock misses nothing.
///
/// A timed game also has a timer task (`Session::start_timer`) that ends
/// the game when a deadline passes; it too takes the mutex only to settle the
/// clock, never across an `.await`. Every call that locks the state first
/// settles the clock the same way, so a move, a read and the timer all see
/// one outcome: whichever takes the lock first after the deadline ends the
/// game, and the deadline, not the timer's wake-up, decides.
///
/// Changes are stored before they are applied (docs/STORAGE.md): a change
/// is decided on a copy of the game under the lock, written to storage
/// without the lock (one change at a time per game: the `writing` turn,
/// held from the decision until the change is applied or dropped), then
/// applied, or dropped if storage failed. Readers in between see the game
/// as it was. A caller going away cannot leave a
/// change stored but not applied: the other changes store in a task of
/// their own; a move stores in its call, and if the call goes away
/// mid-write, a task is started then to finish it (`StoringMove`).
#[derive(Debug)]
pub struct Session {
    id: GameId,
    /// The game's short name, a label of its metrics.
    game_name: &'static str,
    serial: u64,
    created_at: SystemTime,
    labels: BTreeMap<String, String>,
    /// Whether a seat's abort and a missed first move are that seat's loss
    /// ([`Session::forfeits`]).
    forfeits: bool,
    /// What the game calls each seat; as many as it has seats.
    seat_names: &'static [&'static str],
    token_hashes: Vec<TokenHash>,
    /// Whether the game hides information from some viewers (then events
    /// are redacted per watcher).
    private: bool,
    state: Mutex<State>,
    /// Events the broadcast ring holds for slow watchers.
    watch_buffer: usize,
    pub(super) watchers: Arc<AtomicUsize>,
    max_watchers: usize,
    closed: CancellationToken,
    /// Set when the game moved to another replica.
    moved: std::sync::atomic::AtomicBool,
    presence: Presence,
    /// Woken when the clock's deadline may have changed.
    timer: Arc<Notify>,
    abandon_after: Duration,
    storage: Arc<dyn Storage>,
    lease: Option<i64>,
    follower: bool,
    /// The write turn, one permit: held while a change is decided, stored
    /// and applied (see [`Session::write_turn`]).
    writing: tokio::sync::Semaphore,
    /// Read back from storage after it finished (see [`SessionInit`]).
    archived: bool,
    /// The API layer's forms of the current state (see
    /// [`Session::shared_state`] and [`Session::shared_view`]), each with
    /// the state it is of; at most [`SHARED_FORMS`].
    shared: Mutex<Vec<(SharedKey, Arc<dyn Any + Send + Sync>)>>,
}

/// Which state a shared form is of: the ply, whether the game was over,
/// the viewer (a spectator for a game that hides nothing) and the seats
/// offering a draw (the only change without a move besides the end).
type SharedKey = (u32, bool, Viewer, SeatSet);

/// Most shared forms a session keeps: a few kinds for each viewer of a game
/// with private views (every seat and spectators), forms of one state only.
const SHARED_FORMS: usize = 3 * (crate::games::MAX_SEATS + 1);

impl Session {
    pub(super) fn new(init: SessionInit<'_>, limits: &Limits) -> Session {
        let SessionInit {
            id,
            serial,
            labels,
            forfeits,
            token_hashes,
            game,
            history,
            time_control,
            created_at,
            clock,
            receipts,
            draw_offers,
            storage,
            lease,
            follower,
            archived,
        } = init;
        let seat_names = game.seat_names();
        let seats = seat_names.len();
        let tick = time::Instant::now();
        let mut log: Vec<Arc<Event>> = history
            .iter()
            .map(|r| {
                Arc::new(Event::new(
                    u64::from(r.ply),
                    r.ply,
                    EventKind::MoveApplied { report: r.clone() },
                    ClockReading::default(),
                ))
            })
            .collect();
        let now = Instant::now();
        let verdict = game.verdict();
        if let Some(verdict) = &verdict {
            log.push(Arc::new(Event::new(
                log.len() as u64 + 1,
                game.ply(),
                EventKind::GameOver {
                    verdict: verdict.clone(),
                },
                ClockReading::default(),
            )));
        }
        let clock = match (clock, game.to_move()) {
            (Some(clock), Some(_)) => clock,
            (None, Some(first)) => Clock::new(time_control, seats, first, tick),
            // A finished game read back: its clocks as they stood.
            (Some(mut clock), None) => {
                clock.stop(tick);
                clock
            }
            (None, None) => Clock::stopped(time_control, seats, tick),
        };
        Session {
            id,
            game_name: game.rules().game_name(),
            serial,
            created_at,
            labels,
            forfeits,
            seat_names,
            token_hashes,
            private: game.hides_information(),
            state: Mutex::new(State {
                game,
                log,
                receipts,
                draw_offers: if verdict.is_none() {
                    draw_offers
                } else {
                    SeatSet::EMPTY
                },
                last_activity: now,
                finished_at: verdict.map(|_| now),
                clock,
                pending: false,
                legal: None,
                events: None,
            }),
            watch_buffer: limits.watch_buffer.max(1),
            watchers: Arc::new(AtomicUsize::new(0)),
            max_watchers: limits.max_watchers_per_game,
            closed: CancellationToken::new(),
            moved: std::sync::atomic::AtomicBool::new(false),
            presence: Presence::new(seats, tick),
            timer: Arc::new(Notify::new()),
            abandon_after: limits.abandon_after,
            storage,
            lease,
            follower,
            writing: tokio::sync::Semaphore::const_new(1),
            archived,
            shared: Mutex::new(Vec::new()),
        }
    }

    /// The state `view` shows in the API layer's form, made by `make` once
    /// and shared by every later caller of the same state (ply, over or not,
    /// viewer, draw offers), until another state is asked for: how GetGame
    /// and WatchGame snapshots of a ply share one conversion. `None` for a
    /// view without state.
    pub fn shared_state<T: Any + Send + Sync>(
        &self,
        view: &GameView,
        make: impl FnOnce(&Snapshot) -> T,
    ) -> Option<Arc<T>> {
        let snapshot = view.snapshot.as_ref()?;
        let key = self.shared_key(
            view.ply,
            view.verdict.is_some(),
            view.viewer,
            view.draw_offers,
        );
        if let Some(value) = self.shared_form(key) {
            return Some(value);
        }
        let value = Arc::new(make(snapshot));
        self.keep_shared(key, value.clone());
        Some(value)
    }

    /// The API layer's form of `viewer`'s view of the state now, all of
    /// it but what changes with time (the clock and presence, read now and
    /// given beside it), made by `make` once per state (as
    /// [`Session::shared_state`]) and shared by every later caller:
    /// GetGame's answer, encoded once per ply. Only the first caller of a
    /// state pays for a whole view (with its snapshot); the others read
    /// the clock and presence alone.
    pub fn shared_view<T: Any + Send + Sync>(
        &self,
        viewer: Viewer,
        make: impl FnOnce(&GameView) -> T,
    ) -> (TimeView, Arc<T>) {
        let (key, made) = {
            let st = self.lock_settled();
            let key = self.shared_key(
                st.game.ply(),
                st.game.verdict().is_some(),
                viewer,
                st.draw_offers,
            );
            match self.shared_form::<T>(key) {
                Some(value) => {
                    let now = time::Instant::now();
                    let fresh = TimeView {
                        viewer,
                        clock: st.clock.reading(now),
                        presence: self.presence.read(now),
                    };
                    return (fresh, value);
                }
                None => (key, self.view_locked(&st, true, viewer)),
            }
        };
        let value = Arc::new(make(&made));
        self.keep_shared(key, value.clone());
        let fresh = TimeView {
            viewer,
            clock: made.clock,
            presence: made.presence,
        };
        (fresh, value)
    }

    /// The state a shared form is of. Its viewer is `viewer` in a game that
    /// hides information, else a spectator (every view is the same).
    fn shared_key(&self, ply: u32, over: bool, viewer: Viewer, offers: SeatSet) -> SharedKey {
        let viewer = if self.private {
            viewer
        } else {
            Viewer::Spectator
        };
        (ply, over, viewer, offers)
    }

    /// The shared form of type `T` of state `key`, if one was made.
    fn shared_form<T: Any + Send + Sync>(&self, key: SharedKey) -> Option<Arc<T>> {
        let shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared
            .iter()
            .filter(|(at, _)| *at == key)
            .find_map(|(_, value)| value.clone().downcast::<T>().ok())
    }

    /// Keeps `value` as a shared form of state `key`, dropping the forms of
    /// other states (a game moves on: they will not be asked for again)
    /// and the oldest form when there are too many.
    pub(super) fn keep_shared(&self, key: SharedKey, value: Arc<dyn Any + Send + Sync>) {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let (ply, over, _, offers) = key;
        // A caller that read an older state than the forms kept (a move
        // came in between) keeps nothing.
        if shared
            .iter()
            .any(|((p, o, _, _), _)| (*p, *o) > (ply, over))
        {
            return;
        }
        shared.retain(|((p, o, _, d), _)| (*p, *o, *d) == (ply, over, offers));
        if shared.len() >= SHARED_FORMS {
            shared.remove(0);
        }
        shared.push((key, value));
    }

    /// Whether this is a finished game read back from storage on demand.
    pub fn archived(&self) -> bool {
        self.archived
    }

    /// The game's place in listings (creation time, then id).
    pub fn list_key(&self) -> storage::ListKey {
        storage::ListKey {
            created_at_ms: storage::unix_ms(self.created_at),
            id: self.id.as_str().to_string(),
        }
    }

    /// Starts the task that ends the game when a clock deadline passes
    /// (untimed games need none). One task per timed game: it sleeps until
    /// the turn's deadline, is woken early when a move or an ending moves
    /// the deadline, and ends with the game, or when the session is closed
    /// or dropped (it holds only a weak reference). Without a tokio runtime
    /// there is no timer; deadlines then take effect at the next call.
    pub(super) fn start_timer(self: &Arc<Self>) {
        if self.lock().clock.control().is_untimed() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let session = Arc::downgrade(self);
        let wake = self.timer.clone();
        let closed = self.closed.clone();
        runtime.spawn(run_timer(session, wake, closed));
    }

    /// The next deadline, after settling the clock; `Err` once the game is
    /// over (the timer's work is done).
    fn next_deadline(&self) -> Result<Option<time::Instant>, ()> {
        let st = self.lock_settled();
        if st.game.verdict().is_some() {
            return Err(());
        }
        Ok(st.clock.deadline().map(|(at, _)| at))
    }

    /// The game's id.
    pub fn id(&self) -> &GameId {
        &self.id
    }

    /// Creation order in the store.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// Labels given at creation.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// Whether a seat's abort and a missed first-move deadline end the
    /// game with that seat the loser, as a tournament counts them (a
    /// tournament creates its games so); otherwise they abort it.
    pub fn forfeits(&self) -> bool {
        self.forfeits
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the game half-applied
        // (the engine refuses before it changes anything), so keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, with a passed clock deadline applied first.
    fn lock_settled(&self) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        self.settle(&mut st, time::Instant::now());
        st
    }

    /// Ends the game if its deadline has passed at `now`: `TIMEOUT` for the
    /// seat out of time; for a seat that never started, `ABORTED`, or in a
    /// tournament's game `TIMEOUT` of that seat, so the forfeit the
    /// tournament counts is the game's own end and in its record
    /// (docs/TOURNAMENTS.md, "Results in the records"). The clock
    /// stops at the deadline itself, so the loser's reading is exactly zero
    /// however late this runs.
    fn settle(&self, st: &mut State, now: time::Instant) {
        // A follower's deadlines are its owner's to call, and a copy that
        // moved away decides nothing any more.
        if st.pending || st.game.verdict().is_some() || self.follower || self.moved() {
            return;
        }
        let Some((at, expiry)) = st.clock.expired(now) else {
            return;
        };
        st.clock.stop(at);
        let ending = match expiry {
            Expiry::Timeout { loser } => Ending::Timeout { loser },
            Expiry::NotStarted { seat } if self.forfeits() => Ending::Timeout { loser: seat },
            Expiry::NotStarted { .. } => Ending::Aborted,
        };
        // Cannot fail: the game is not over (checked above).
        if let Ok(verdict) = st.game.conclude(ending) {
            // Stored in the background: the deadline, not this write,
            // decided it (docs/STORAGE.md).
            let end = self.end_row("finished", Some(&verdict), st.game.ply());
            self.finish(st, verdict);
            self.persist_later(Write::End(end));
        }
    }

    /// What the game calls `seat`.
    pub fn seat_name(&self, seat: Seat) -> &'static str {
        self.seat_names.get(seat.index()).copied().unwrap_or("?")
    }

    /// What the game calls each seat, in seat order.
    pub fn seat_names(&self) -> &'static [&'static str] {
        self.seat_names
    }

    /// The viewer `token` proves: its seat, or a spectator without a token.
    /// A token that is given must be right.
    pub fn viewer_for(&self, token: &str) -> Result<Viewer, SessionError> {
        if token.is_empty() {
            return Ok(Viewer::Spectator);
        }
        self.seat_for(token).map(Viewer::Seat)
    }

    /// The seat `token` proves. Checks every seat, always, in constant time.
    fn seat_for(&self, token: &str) -> Result<Seat, SessionError> {
        if token.is_empty() {
            return Err(SessionError::Unauthenticated {
                reason: "TOKEN_MISSING",
                message: "a seat token is required",
            });
        }
        let Some(given) = Token::parse(token) else {
            return Err(SessionError::Unauthenticated {
                reason: "TOKEN_MALFORMED",
                message: "the seat token is not 32 hex digits",
            });
        };
        // The given token is hashed once; every seat is compared, whichever
        // matches: no early exit.
        let given = given.hash();
        let mut found = None;
        for (i, hash) in self.token_hashes.iter().enumerate() {
            if bool::from(hash.is(&given)) {
                found = Seat::new(i);
            }
        }
        let Some(seat) = found else {
            return Err(SessionError::PermissionDenied(self.id.to_string()));
        };
        // The seat, never the token, goes on the call's span.
        tracing::Span::current().record("seat", self.seat_name(seat));
        Ok(seat)
    }

    /// A spectator's picture of the game now; with the board when
    /// `with_state`.
    pub fn view(&self, with_state: bool) -> GameView {
        let st = self.lock_settled();
        self.view_locked(&st, with_state, Viewer::Spectator)
    }

    /// The game now, with its state, as `viewer` may see it.
    pub fn view_as(&self, viewer: Viewer) -> GameView {
        let st = self.lock_settled();
        self.view_locked(&st, true, viewer)
    }

    /// The time control and every accepted move's time: what a durable
    /// store keeps to rebuild the clock with [`Clock::restore`].
    pub fn clock_stamps(&self) -> (TimeControl, Vec<MoveStamp>) {
        let st = self.lock();
        (st.clock.control(), st.clock.stamps().to_vec())
    }

    /// A picture of the game now, with its state, and its event log up to
    /// that point (every move, then the game-over event once over), read
    /// under one lock so the two agree: what a page showing the move list
    /// needs.
    pub fn view_with_events(&self) -> (GameView, Vec<Arc<Event>>) {
        let st = self.lock_settled();
        (
            self.view_locked(&st, true, Viewer::Spectator),
            self.events_for(&st, &st.log, Viewer::Spectator),
        )
    }

    /// Each seat's presence now, first seat first.
    pub fn presence(&self) -> Vec<SeatPresence> {
        self.presence.read(time::Instant::now())
    }

    fn view_locked(&self, st: &State, with_state: bool, viewer: Viewer) -> GameView {
        let verdict = st.game.verdict();
        let over = verdict.is_some();
        GameView {
            id: self.id.clone(),
            labels: self.labels.clone(),
            created_at: self.created_at,
            rules: st.game.rules(),
            seats: self.seat_names,
            viewer,
            setup: st.game.setup().map(|s| SetupView::of(s, over)),
            ply: st.game.ply(),
            to_move: st.game.to_move(),
            verdict,
            draw_offers: st.draw_offers,
            snapshot: with_state.then(|| st.game.snapshot(viewer)),
            last_move: st.log.iter().rev().find_map(|e| match &e.kind {
                EventKind::MoveApplied { report } => Some(st.game.redact(&report.detail, viewer)),
                EventKind::GameOver { .. } => None,
            }),
            time_control: st.clock.control(),
            clock: st.clock.reading(time::Instant::now()),
            presence: self.presence(),
        }
    }

    /// Events of `log` as `viewer` may see them (unchanged unless the game
    /// hides information).
    fn events_for(&self, st: &State, log: &[Arc<Event>], viewer: Viewer) -> Vec<Arc<Event>> {
        log.iter().map(|e| self.event_for(st, e, viewer)).collect()
    }

    fn event_for(&self, st: &State, event: &Arc<Event>, viewer: Viewer) -> Arc<Event> {
        match &event.kind {
            EventKind::MoveApplied { report } if self.private => {
                let mut report = report.clone();
                report.detail = st.game.redact(&report.detail, viewer);
                Arc::new(Event {
                    kind: EventKind::MoveApplied { report },
                    ..(**event).clone()
                })
            }
            _ => event.clone(),
        }
    }

    /// An event as `viewer` may see it (what a watcher is sent).
    pub(super) fn redact(&self, event: &Arc<Event>, viewer: Viewer) -> Arc<Event> {
        if !self.private {
            return event.clone();
        }
        let st = self.lock();
        self.event_for(&st, event, viewer)
    }

    /// The game as it was after `ply` moves (now when `None`), with its
    /// game-specific state as `viewer` may see it; refused beyond the
    /// current ply.
    pub fn view_at(&self, ply: Option<u32>, viewer: Viewer) -> Result<GameView, SessionError> {
        let st = self.lock_settled();
        match ply {
            None => Ok(self.view_locked(&st, true, viewer)),
            Some(ply) => self.view_at_locked(&st, ply, "ply", viewer),
        }
    }

    /// A picture of the game after `ply` moves (the resume point of a
    /// watcher), and the log sequence it includes.
    fn view_at_locked(
        &self,
        st: &State,
        ply: u32,
        field: &'static str,
        viewer: Viewer,
    ) -> Result<GameView, SessionError> {
        let current = st.game.ply();
        if ply > current {
            return Err(SessionError::OutOfRange {
                field,
                asked: ply,
                current,
            });
        }
        if ply == current {
            return Ok(self.view_locked(st, true, viewer));
        }
        let move_event = |p: u32| match st.log.get(p as usize).map(|e| &e.kind) {
            Some(EventKind::MoveApplied { report }) => Some(report),
            _ => None,
        };
        Ok(GameView {
            id: self.id.clone(),
            labels: self.labels.clone(),
            created_at: self.created_at,
            rules: st.game.rules(),
            seats: self.seat_names,
            viewer,
            // The game is not over at an earlier ply: the seed stays hidden.
            setup: st.game.setup().map(|s| SetupView::of(s, false)),
            ply,
            // The mover of the next move in the log is who was to move then.
            to_move: move_event(ply).map(|r| r.seat),
            verdict: None,
            draw_offers: SeatSet::EMPTY,
            snapshot: st.game.snapshot_at(ply, viewer),
            last_move: ply
                .checked_sub(1)
                .and_then(move_event)
                .map(|r| st.game.redact(&r.detail, viewer)),
            time_control: st.clock.control(),
            // The clocks as the event of that ply recorded them.
            clock: ply
                .checked_sub(1)
                .and_then(|p| st.log.get(p as usize))
                .map_or_else(
                    || {
                        let first = move_event(0).map_or(Seat::FIRST, |r| r.seat);
                        let now = time::Instant::now();
                        Clock::new(st.clock.control(), self.seat_names.len(), first, now)
                            .reading(now)
                    },
                    |e| e.clock().clone(),
                ),
            presence: self.presence(),
        })
    }

    /// The legal moves of `seat` (the player to move when `None`): empty when
    /// it is not that seat's turn or the game is over. Also returns the ply
    /// and whose turn it is.
    /// Moves are shown as `viewer` may see them.
    pub fn legal_moves(
        &self,
        seat: Option<Seat>,
        viewer: Viewer,
    ) -> (u32, Option<Seat>, Arc<[MoveReport]>) {
        let (ply, to_move, all) = self.all_legal_moves();
        let moves = match (to_move, seat) {
            (Some(m), Some(s)) if m != s => Arc::from(Vec::new()),
            _ if self.private => self.redacted(&all.moves, viewer).into(),
            _ => all.moves.clone(),
        };
        (ply, to_move, moves)
    }

    /// [`Session::legal_moves`] as one text: each move's notation followed
    /// by a line feed. Made once per ply and shared (a game with private
    /// information makes it per call, from the viewer's moves).
    pub fn legal_text(&self, seat: Option<Seat>, viewer: Viewer) -> (u32, Option<Seat>, Bytes) {
        let (ply, to_move, all) = self.all_legal_moves();
        let text = match (to_move, seat) {
            (Some(m), Some(s)) if m != s => Bytes::new(),
            _ if self.private => joined(&self.redacted(&all.moves, viewer)),
            _ => all.text.get_or_init(|| joined(&all.moves)).clone(),
        };
        (ply, to_move, text)
    }

    /// `moves` as `viewer` may see them.
    fn redacted(&self, moves: &[MoveReport], viewer: Viewer) -> Vec<MoveReport> {
        let st = self.lock();
        moves
            .iter()
            .map(|m| MoveReport {
                detail: st.game.redact(&m.detail, viewer),
                ..m.clone()
            })
            .collect()
    }

    /// Every legal move of the current ply, computed once per ply.
    fn all_legal_moves(&self) -> (u32, Option<Seat>, Arc<LegalList>) {
        let game = {
            let st = self.lock_settled();
            let ply = st.game.ply();
            let to_move = st.game.to_move();
            match &st.legal {
                _ if to_move.is_none() => return (ply, None, Arc::new(LegalList::default())),
                Some((at, list)) if *at == ply => return (ply, to_move, list.clone()),
                _ => st.game.clone_box(),
            }
        };
        // Generation runs outside the lock: it is the slow part. Two callers
        // racing on a new ply both compute it; the list is the same.
        let list = Arc::new(LegalList {
            moves: game.legal_moves().into(),
            text: OnceLock::new(),
        });
        let ply = game.ply();
        let mut st = self.lock();
        if st.game.ply() == ply && st.game.verdict().is_none() {
            st.legal = Some((ply, list.clone()));
        }
        (ply, game.to_move(), list)
    }

    /// Plays `mv` for the seat `token` proves, if that seat is to move and the
    /// game is at `expected_ply`. The move is stored before it is applied
    /// and answered. A retry with the same `request_id` (and the same move)
    /// gets the first answer without playing again, also after a restart.
    /// Counts the move applied (by kind) or refused by a rule (by reason).
    pub async fn submit(
        self: &Arc<Self>,
        token: &str,
        mv: MoveInput,
        expected_ply: u32,
        request_id: Option<&str>,
    ) -> Result<MoveReceipt, SessionError> {
        if request_id.is_some_and(|r| r.len() > MAX_REQUEST_ID) {
            return Err(SessionError::InvalidArgument {
                field: "request_id",
                description: format!("at most {MAX_REQUEST_ID} characters"),
            });
        }
        let seat = self.seat_for(token)?;
        // Not in a task of its own: a move whose caller goes away while it
        // is being stored is finished by a task then (`StoringMove`), so
        // the common case costs no spawn and no hand-off.
        let result = self.try_submit(seat, mv, expected_ply, request_id).await;
        match &result {
            Ok(receipt) => {
                tracing::Span::current().record("ply", receipt.report.ply);
                if !receipt.replayed {
                    telemetry::count_move_applied(self.game_name, receipt.report.detail.kind);
                }
            }
            Err(SessionError::Rejected(MoveError::Illegal { reason, .. })) => {
                metrics::counter!(telemetry::MOVES_ILLEGAL, "reason" => *reason).increment(1);
            }
            Err(_) => {}
        }
        result
    }

    /// Plays a move for `seat` (proved by its token): answered from the
    /// first result for a known request id; else checked, decided on a copy,
    /// stored, then applied.
    async fn try_submit(
        self: &Arc<Self>,
        seat: Seat,
        mv: MoveInput,
        expected_ply: u32,
        request_id: Option<&str>,
    ) -> Result<MoveReceipt, SessionError> {
        let turn = self.write_turn().await?;
        let now = time::Instant::now();
        let decided = {
            let mut st = self.lock();
            self.settle(&mut st, now);
            if let Some(answer) = Session::retry_answer(&st, request_id, seat, expected_ply, &mv) {
                return answer;
            }
            self.check_turn(&st, seat, expected_ply)?;
            if self.storage.discards_writes() && !self.follower {
                // Nothing to store, and no write that could fail: the move
                // is played on the game itself, with no copy to decide it
                // on (a refused move changes nothing), and applied at once.
                return self.play_in_place(&mut st, seat, &mv, expected_ply, request_id, now);
            }
            let decided = self.decide_move(&st, seat, &mv, request_id, now)?;
            st.pending = true;
            decided
        };
        let PendingMove {
            game,
            report,
            draw_after,
            write,
        } = decided;
        let commit = match self.start_write(write) {
            Ok(commit) => commit,
            Err(e) => return Err(self.pending_failed(e)),
        };
        let mut storing = StoringMove {
            session: self,
            turn: Some(turn),
            commit,
            decided: Some(DecidedMove {
                game,
                report,
                draw_after,
                seat,
                expected_ply,
                request_id: request_id.map(str::to_string),
                now,
            }),
        };
        let stored = (&mut storing.commit).await;
        // No await from here on: the call finishes the move itself.
        let Some(decided) = storing.decided.take() else {
            return Err(SessionError::Unavailable(
                "the move was finished twice".into(),
            ));
        };
        self.finish_move(stored, decided)
    }

    /// Applies a stored move (`stored`: its write's outcome) and remembers
    /// its answer under its request id; a failed write applies nothing.
    fn finish_move(
        &self,
        stored: Result<(), storage::StorageError>,
        decided: DecidedMove,
    ) -> Result<MoveReceipt, SessionError> {
        let DecidedMove {
            game,
            report,
            draw_after,
            seat,
            expected_ply,
            request_id,
            now,
        } = decided;
        let mut st = self.end_pending(self.stored(stored))?;
        st.game = game;
        st.draw_offers = draw_after;
        self.apply_move(&mut st, &report, now);
        Ok(Session::receipt(
            &mut st,
            report,
            seat,
            expected_ply,
            request_id,
        ))
    }

    /// Plays and applies `mv` on the game itself, for a storage that
    /// discards writes ([`storage::Storage::discards_writes`]): what
    /// [`Session::decide_move`], the write and [`Session::finish_move`] do,
    /// less the copy and the write.
    fn play_in_place(
        &self,
        st: &mut State,
        seat: Seat,
        mv: &MoveInput,
        expected_ply: u32,
        request_id: Option<&str>,
        now: time::Instant,
    ) -> Result<MoveReceipt, SessionError> {
        let report = st.game.play(mv)?;
        st.draw_offers = Session::draw_after(st, seat, &report);
        self.apply_move(st, &report, now);
        let request_id = request_id.map(str::to_string);
        Ok(Session::receipt(st, report, seat, expected_ply, request_id))
    }

    /// The answer to an applied move, remembered under its request id.
    fn receipt(
        st: &mut State,
        report: MoveReport,
        seat: Seat,
        expected_ply: u32,
        request_id: Option<String>,
    ) -> MoveReceipt {
        let receipt = MoveReceipt {
            report,
            replayed: false,
        };
        if let Some(id) = request_id {
            let fingerprint = Fingerprint {
                seat,
                expected_ply,
                played: receipt.report.detail.clone(),
            };
            st.receipts.insert(id, (fingerprint, receipt.clone()));
        }
        receipt
    }

    /// The draw offer standing after `seat`'s move: a move by a seat that
    /// has not agreed to it declines it, and a game's last move ends it.
    fn draw_after(st: &State, seat: Seat, report: &MoveReport) -> SeatSet {
        if report.verdict.is_some() || !st.draw_offers.contains(seat) {
            SeatSet::EMPTY
        } else {
            st.draw_offers
        }
    }

    /// Waits for this game's turn to change it: one change at a time, from
    /// its decision until it is applied (or dropped).
    async fn write_turn(&self) -> Result<tokio::sync::SemaphorePermit<'_>, SessionError> {
        self.writing
            .acquire()
            .await
            .map_err(|_| SessionError::Unavailable("the game is closed to changes".into()))
    }

    /// The first answer to `request_id`, if it was used before: the same
    /// seat, ply and move get it again; anything else is refused.
    fn retry_answer(
        st: &State,
        request_id: Option<&str>,
        seat: Seat,
        expected_ply: u32,
        mv: &MoveInput,
    ) -> Option<Result<MoveReceipt, SessionError>> {
        let id = request_id?;
        let (first, receipt) = st.receipts.get(id)?;
        if first.seat != seat
            || first.expected_ply != expected_ply
            || !st.game.same_move(expected_ply, mv, &first.played)
        {
            return Some(Err(SessionError::InvalidArgument {
                field: "request_id",
                description: format!(
                    "request id `{}` was used for a different move",
                    crate::service::echo::echo(id)
                ),
            }));
        }
        Some(Ok(MoveReceipt {
            replayed: true,
            ..receipt.clone()
        }))
    }

    /// Refuses a move when the game is over, `expected_ply` is not the
    /// game's ply, or it is not `seat`'s turn.
    fn check_turn(&self, st: &State, seat: Seat, expected_ply: u32) -> Result<(), SessionError> {
        if let Some(verdict) = st.game.verdict() {
            return Err(self.game_over_by(&verdict));
        }
        let current = st.game.ply();
        if expected_ply != current {
            return Err(SessionError::StalePly {
                expected: expected_ply,
                current,
            });
        }
        let to_move = st.game.to_move();
        if to_move != Some(seat) {
            let whose = to_move.map_or("nobody", |s| self.seat_name(s));
            return Err(SessionError::Rejected(MoveError::Illegal {
                reason: "NOT_YOUR_TURN",
                message: format!("it is {whose}'s turn"),
            }));
        }
        Ok(())
    }

    /// Plays `mv` on a copy of the game: the game after it, what it did,
    /// the draw offer after it and the write that stores it.
    fn decide_move(
        &self,
        st: &State,
        seat: Seat,
        mv: &MoveInput,
        request_id: Option<&str>,
        now: time::Instant,
    ) -> Result<PendingMove, SessionError> {
        let mut game = st.game.clone_box();
        let report = game.play(mv)?;
        let draw_after = Session::draw_after(st, seat, &report);
        let row = MoveRow {
            game_id: self.id.as_str().to_owned(),
            ply: report.ply,
            seat,
            notation: report.detail.notation.clone(),
            request_id: request_id.map(str::to_string),
            clock_ms: u64::try_from(st.clock.since_start(now).as_millis()).unwrap_or(u64::MAX),
            played_at_ms: storage::unix_ms(SystemTime::now()),
            draw_offers: draw_after,
        };
        let end = report
            .verdict
            .as_ref()
            .map(|v| self.end_row("finished", Some(v), report.ply));
        Ok(PendingMove {
            game,
            report,
            draw_after,
            write: Write::Move(row, end),
        })
    }

    /// Applies a stored move: the clock, the event, the ending.
    fn apply_move(&self, st: &mut State, report: &MoveReport, now: time::Instant) {
        st.clock.on_move(report.seat, report.next, now);
        self.timer.notify_one();
        self.publish(
            st,
            EventKind::MoveApplied {
                report: report.clone(),
            },
            report.ply,
            now,
        );
        if let Some(verdict) = &report.verdict {
            self.finish(st, Verdict::clone(verdict));
        }
    }

    /// Ends the pending change once its write is `stored`: the state to
    /// apply it to, or the storage error, with nothing applied and a
    /// deadline that passed meanwhile counted now.
    fn end_pending(
        &self,
        stored: Result<(), SessionError>,
    ) -> Result<MutexGuard<'_, State>, SessionError> {
        if let Err(e) = stored {
            return Err(self.pending_failed(e));
        }
        let mut st = self.lock();
        st.pending = false;
        Ok(st)
    }

    /// Ends the pending change that could not be stored (`e`), with
    /// nothing applied and a deadline that passed meanwhile counted now.
    fn pending_failed(&self, e: SessionError) -> SessionError {
        let mut st = self.lock();
        st.pending = false;
        self.settle(&mut st, time::Instant::now());
        self.timer.notify_one();
        e
    }

    /// Writes `write` and waits for it; a failure is `UNAVAILABLE`.
    async fn persist(&self, write: Write) -> Result<(), SessionError> {
        let commit = self.start_write(write)?;
        self.stored(commit.await)
    }

    /// Queues `write`: its commit, to wait for; a follower writes nothing.
    fn start_write(&self, write: Write) -> Result<storage::Commit, SessionError> {
        if self.follower {
            // The owner decides; the caller is sent there.
            return Err(SessionError::Moved(self.id.to_string()));
        }
        Ok(self.storage.write_leased(write, self.lease))
    }

    /// A write's outcome as the caller sees it: a fenced write means the
    /// game moved; any other failure is `UNAVAILABLE`.
    fn stored(&self, result: Result<(), storage::StorageError>) -> Result<(), SessionError> {
        result.map_err(|e| {
            if e.is_fenced() {
                tracing::info!(game_id = %self.id, error = %e, "change refused: the game moved");
                return SessionError::Moved(self.id.to_string());
            }
            tracing::warn!(game_id = %self.id, error = %e, "change refused: storage failed");
            metrics::counter!(telemetry::STORAGE_FAILURES).increment(1);
            SessionError::Unavailable(e.to_string())
        })
    }

    /// Queues `write` without waiting (endings a deadline decided, expiry):
    /// writes are applied in queue order, so it lands before any later one.
    pub(super) fn persist_later(&self, write: Write) {
        if self.follower {
            return;
        }
        let commit = self.storage.write_leased(write, self.lease);
        let id = self.id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = commit.await {
                    tracing::warn!(game_id = %id, error = %e, "background storage write failed");
                    metrics::counter!(telemetry::STORAGE_FAILURES).increment(1);
                }
            });
        }
    }

    /// The stored row of this game's ending.
    pub(super) fn end_row(
        &self,
        status: &'static str,
        verdict: Option<&Verdict>,
        ply: u32,
    ) -> EndRow {
        EndRow {
            game_id: self.id.to_string(),
            status,
            winners: verdict.map_or(SeatSet::EMPTY, |v| v.winners),
            scores: verdict.map_or_else(Vec::new, |v| v.scores.clone()),
            reason: verdict.map_or(String::new(), |v| v.reason.to_string()),
            ply,
            at_ms: storage::unix_ms(SystemTime::now()),
        }
    }

    /// Ends the game with the ending `decide` picks (or refuses), stored
    /// before it is applied; answers with `viewer`'s view. The caller holds
    /// `writing`.
    async fn conclude_stored(
        &self,
        viewer: Viewer,
        decide: impl FnOnce(&State) -> Result<Ending, SessionError>,
    ) -> Result<GameView, SessionError> {
        let (game, verdict, write) = {
            let mut st = self.lock_settled();
            let ending = decide(&st)?;
            let mut game = st.game.clone_box();
            let verdict = game.conclude(ending)?;
            let write = Write::End(self.end_row("finished", Some(&verdict), game.ply()));
            st.pending = true;
            (game, verdict, write)
        };
        let mut st = self.end_pending(self.persist(write).await)?;
        st.game = game;
        self.finish(&mut st, verdict);
        Ok(self.view_locked(&st, true, viewer))
    }

    /// The seat `token` proves resigns; the game's rules say who wins (with
    /// two seats: the other).
    pub async fn resign(self: &Arc<Self>, token: &str) -> Result<GameView, SessionError> {
        let seat = self.seat_for(token)?;
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.write_turn().await?;
            this.conclude_stored(Viewer::Seat(seat), |_| {
                Ok(Ending::Resignation { loser: seat })
            })
            .await
        })
        .await
    }

    /// The seat `token` proves offers a draw, or joins the standing offer.
    /// The draw is agreed (`true`) once every seat has offered or accepted.
    pub async fn offer_draw(
        self: &Arc<Self>,
        token: &str,
    ) -> Result<(bool, GameView), SessionError> {
        let seat = self.seat_for(token)?;
        self.agree_draw(seat, false).await
    }

    /// The seat `token` proves accepts another seat's standing draw offer;
    /// agreed (`true`) once every seat has.
    pub async fn accept_draw(
        self: &Arc<Self>,
        token: &str,
    ) -> Result<(bool, GameView), SessionError> {
        let seat = self.seat_for(token)?;
        self.agree_draw(seat, true).await
    }

    /// `seat` offers (or, when `accepting`, accepts: an offer of another
    /// seat must stand) a draw: stored as the set of agreeing seats, or
    /// concluded as `DRAW_AGREEMENT` once that set is every seat.
    async fn agree_draw(
        self: &Arc<Self>,
        seat: Seat,
        accepting: bool,
    ) -> Result<(bool, GameView), SessionError> {
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.write_turn().await?;
            let agreeing = {
                let st = this.lock_settled();
                if st.game.verdict().is_some() {
                    return Err(game_over());
                }
                let others = SeatSet::all_but(seat, this.seat_names.len());
                if accepting && st.draw_offers.iter().all(|s| s == seat) {
                    return Err(SessionError::Rejected(MoveError::Illegal {
                        reason: "NO_DRAW_OFFER",
                        message: "no other seat has a draw offer standing".into(),
                    }));
                }
                if st.draw_offers.covers(others) {
                    None
                } else {
                    Some(st.draw_offers.with(seat))
                }
            };
            let viewer = Viewer::Seat(seat);
            let Some(agreeing) = agreeing else {
                let view = this
                    .conclude_stored(viewer, |_| Ok(Ending::DrawAgreement))
                    .await?;
                return Ok((true, view));
            };
            this.persist(Write::DrawOffer {
                game_id: this.id.to_string(),
                seats: agreeing,
            })
            .await?;
            let mut st = this.lock_settled();
            st.draw_offers = agreeing;
            st.last_activity = Instant::now();
            Ok((false, this.view_locked(&st, true, viewer)))
        })
        .await
    }

    /// The seats that have made a move in this game (from its log, so an
    /// imported game counts its imported moves).
    fn movers(st: &State) -> SeatSet {
        st.log
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::MoveApplied { report } => Some(report.seat),
                EventKind::GameOver { .. } => None,
            })
            .collect()
    }

    /// Whether every seat of the game has moved.
    fn all_moved(&self, st: &State) -> bool {
        Session::movers(st).covers(SeatSet::all(self.seat_names.len()))
    }

    /// A seat calls the game off; only before every seat has moved, and
    /// not once the game has dealt (see [`crate::games::Game::dealt`]): a
    /// seat that has seen a card could otherwise abort for a new deal as
    /// often as it likes. Such a game only the platform aborts
    /// ([`Session::platform_abort`]). In a tournament's game a seat's abort
    /// is its resignation: the tournament counts a result for every game,
    /// and the game's record says which.
    pub async fn abort(self: &Arc<Self>, token: &str) -> Result<GameView, SessionError> {
        self.abort_as(token, false).await
    }

    /// The platform calls the game off (a key with `games:admin`, or the
    /// server itself), naming the game by any seat's token: only before
    /// every seat has moved, dealt or not.
    pub async fn platform_abort(self: &Arc<Self>, token: &str) -> Result<GameView, SessionError> {
        self.abort_as(token, true).await
    }

    async fn abort_as(
        self: &Arc<Self>,
        token: &str,
        platform: bool,
    ) -> Result<GameView, SessionError> {
        let seat = self.seat_for(token)?;
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.write_turn().await?;
            this.conclude_stored(Viewer::Seat(seat), |st| {
                if st.game.verdict().is_some() {
                    return Err(game_over());
                }
                if !platform && st.game.dealt() {
                    return Err(SessionError::Rejected(MoveError::Illegal {
                        reason: "ABORT_AFTER_DEAL",
                        message: "the game has dealt, so a seat cannot call it off for a new \
                                  deal: resign instead (only the platform may abort it)"
                            .into(),
                    }));
                }
                if this.all_moved(st) {
                    return Err(SessionError::Rejected(MoveError::Illegal {
                        reason: "ABORT_TOO_LATE",
                        message: "every seat has moved: resign or offer a draw instead".into(),
                    }));
                }
                if !platform && this.forfeits() {
                    return Ok(Ending::Resignation { loser: seat });
                }
                Ok(Ending::Aborted)
            })
            .await
        })
        .await
    }

    /// The game record text as `viewer` may see it, labels as header tags.
    pub fn export(&self, viewer: Viewer) -> String {
        let tags: Vec<(String, String)> = self
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.lock_settled().game.record(&tags, viewer)
    }

    /// The seat a victory claim of `claimant` is against: `against` if
    /// given, else the opponent (two seats) or the seat to move (more).
    fn claim_target(
        &self,
        st: &State,
        claimant: Seat,
        against: Option<Seat>,
    ) -> Result<Seat, SessionError> {
        let n = self.seat_names.len();
        let target = match against {
            Some(s) if s.index() >= n => {
                return Err(SessionError::InvalidArgument {
                    field: "against",
                    description: format!("the game has {n} seats"),
                });
            }
            Some(s) => s,
            None if n == 2 => claimant.next(2),
            None => st.game.to_move().unwrap_or(claimant),
        };
        if target == claimant {
            return Err(SessionError::Rejected(MoveError::Illegal {
                reason: "CLAIM_AGAINST_SELF",
                message: "a seat cannot claim victory over itself: it is its own turn".into(),
            }));
        }
        Ok(target)
    }

    /// The seat `token` proves claims the win because another seat (see
    /// [`Session::claim_target`]) has been gone (no open stream) for at
    /// least the abandon time. Only with a clock, only once every seat has
    /// moved (before that, a seat that never starts is aborted, not beaten),
    /// and never while that seat holds a stream.
    pub async fn claim_victory(
        self: &Arc<Self>,
        token: &str,
        against: Option<Seat>,
    ) -> Result<GameView, SessionError> {
        let seat = self.seat_for(token)?;
        let this = self.clone();
        to_the_end(async move {
            let _writing = this.write_turn().await?;
            let abandon_after = this.abandon_after;
            let presence = this.presence();
            this.conclude_stored(Viewer::Seat(seat), |st| {
                if let Some(verdict) = st.game.verdict() {
                    return Err(this.game_over_by(&verdict));
                }
                let refuse = |reason: &'static str, message: String| {
                    Err(SessionError::Rejected(MoveError::Illegal {
                        reason,
                        message,
                    }))
                };
                if !st.clock.control().has_clock() {
                    return refuse(
                        "NO_CLOCK",
                        "victory can be claimed only in games with a clock".into(),
                    );
                }
                if !this.all_moved(st) {
                    return refuse(
                        "GAME_NOT_STARTED",
                        "every seat must have moved first: abort the game instead".into(),
                    );
                }
                let target = this.claim_target(st, seat, against)?;
                let name = this.seat_name(target);
                let away = presence[target.index()];
                if away.connected {
                    return refuse(
                        "OPPONENT_PRESENT",
                        format!("{name} holds an open stream on the game"),
                    );
                }
                if away.away_for < abandon_after {
                    let left = abandon_after - away.away_for;
                    return refuse(
                        "OPPONENT_NOT_GONE_LONG_ENOUGH",
                        format!(
                            "{name} has been gone {} ms; a claim needs {} ms ({} ms to go)",
                            away.away_for.as_millis(),
                            abandon_after.as_millis(),
                            left.as_millis()
                        ),
                    );
                }
                Ok(Ending::Abandoned { loser: target })
            })
            .await
        })
        .await
    }

    /// Starts watching: a snapshot (now, or after `from_ply`), then every
    /// event after it. Refused past the watcher limit.
    pub fn watch(self: &Arc<Self>, from_ply: Option<u32>) -> Result<Watch, SessionError> {
        self.watch_as(from_ply, None)
    }

    /// [`Session::watch`] by a player, when `token` is given: its seat
    /// counts as present while the watch lives. Without a token the watcher
    /// is a spectator.
    pub fn watch_as(
        self: &Arc<Self>,
        from_ply: Option<u32>,
        token: Option<&str>,
    ) -> Result<Watch, SessionError> {
        let seat = token.map(|t| self.seat_for(t)).transpose()?;
        let viewer = seat.map_or(Viewer::Spectator, Viewer::Seat);
        let guard = WatcherSlot::take(&self.watchers, self.max_watchers)?;
        let mut st = self.lock_settled();
        let ply = from_ply.unwrap_or(st.game.ply());
        let mut view = self.view_at_locked(&st, ply, "from_ply", viewer)?;
        // Subscribe while holding the lock: every later event reaches `rx`,
        // every earlier one is in the log.
        let rx = self.subscribe(&mut st);
        let backlog: Vec<Arc<Event>> = st.log[ply as usize..].to_vec();
        drop(st);
        // Join only once the watch is sure to start (a refused one flips
        // nothing), then read presence after subscribing to its changes: the
        // first snapshot shows this player, and no later flip is missed.
        let presence_slot: Option<PresenceSlot> = seat.map(|s| self.presence.join(s));
        let mut presence_rx = self.presence.subscribe();
        presence_rx.borrow_and_update();
        view.presence = self.presence();
        let first = WatchItem::Snapshot {
            view: Box::new(view),
            sequence: u64::from(ply),
            resync: false,
        };
        Ok(Watch::new(
            self.clone(),
            (guard, presence_slot, viewer),
            first,
            backlog,
            u64::from(ply),
            rx,
            presence_rx,
        ))
    }

    /// A fresh snapshot for a watcher that fell behind, with a new
    /// subscription and the game-over event if the game has ended.
    pub(super) fn resync(
        &self,
        viewer: Viewer,
    ) -> (
        WatchItem,
        Option<Arc<Event>>,
        u64,
        broadcast::Receiver<Arc<Event>>,
    ) {
        let mut st = self.lock_settled();
        let view = self.view_locked(&st, true, viewer);
        let rx = self.subscribe(&mut st);
        let sequence = u64::from(st.game.ply());
        let tail = st.log.get(sequence as usize).cloned();
        (
            WatchItem::Snapshot {
                view: Box::new(view),
                sequence,
                resync: true,
            },
            tail,
            sequence,
            rx,
        )
    }

    /// Log events after `sequence` (to fill a gap).
    pub(super) fn events_after(&self, sequence: u64) -> Vec<Arc<Event>> {
        let st = self.lock();
        st.log
            .get(sequence as usize..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// Cancelled when the session is dropped from the store or the server
    /// shuts down: watchers end.
    pub(super) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    pub(super) fn close(&self) {
        self.closed.cancel();
    }

    /// Ends the session here because another replica owns the game now:
    /// watchers end with [`SessionError::Moved`], the timer stops.
    pub(super) fn move_away(&self) {
        self.moved.store(true, std::sync::atomic::Ordering::SeqCst);
        self.closed.cancel();
    }

    /// Whether the game moved to another replica.
    pub(super) fn moved(&self) -> bool {
        self.moved.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether the store should drop this session at `now`.
    pub(super) fn expired(&self, now: Instant, limits: &Limits) -> bool {
        let st = self.lock_settled();
        match st.finished_at {
            Some(t) => now.saturating_duration_since(t) >= limits.finished_ttl,
            None => now.saturating_duration_since(st.last_activity) >= limits.idle_ttl,
        }
    }

    /// Whether this is a copy of a game another replica owns.
    pub fn follower(&self) -> bool {
        self.follower
    }

    /// How long since the game's last event (or since it was held).
    pub(super) fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.lock().last_activity)
    }

    /// Whether some watch stream is open on the game.
    pub(super) fn watched(&self) -> bool {
        self.watchers.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    /// The ply this copy has.
    pub fn ply(&self) -> u32 {
        self.lock().game.ply()
    }

    /// Brings a follower up to the stored game: `game` is it replayed,
    /// `moves` the report of each ply and `stamps` their stored clock times.
    /// The moves it lacks are published as their owner published them (same
    /// sequence numbers), then the ending. Its clock is rebuilt from the
    /// stamps, the last one put `last_ago` in the past (when the owner made
    /// it, by the wall clock): the stored times leave out what a takeover
    /// credited, so only the newest stamp can be anchored in real time. An
    /// ending is put `ended_ago` in the past. A replay that is not ahead
    /// changes only the draw offers.
    pub(super) fn catch_up(
        &self,
        game: Box<dyn Game>,
        moves: &[MoveReport],
        stamps: &[MoveStamp],
        draw_offers: SeatSet,
        (last_ago, ended_ago): (Duration, Duration),
    ) {
        let mut st = self.lock();
        let have = st.game.ply() as usize;
        let ended = game.verdict().is_some() && st.finished_at.is_none();
        if moves.len() < have || (moves.len() == have && !ended) {
            st.draw_offers = if st.finished_at.is_none() {
                draw_offers
            } else {
                SeatSet::EMPTY
            };
            return;
        }
        let now = time::Instant::now();
        let anchor = now.checked_sub(last_ago).unwrap_or(now);
        let first = moves.first().map_or(Seat::FIRST, |r| r.seat);
        let seats = st.game.seat_names().len();
        st.clock = Clock::restore(st.clock.control(), seats, first, stamps, anchor);
        let start = anchor
            .checked_sub(stamps.last().map_or(Duration::ZERO, |s| s.at))
            .unwrap_or(anchor);
        st.game = game;
        for report in &moves[have..] {
            let at = stamps
                .get(report.ply as usize - 1)
                .map_or(anchor, |s| start + s.at);
            self.publish(
                &mut st,
                EventKind::MoveApplied {
                    report: report.clone(),
                },
                report.ply,
                at,
            );
        }
        st.draw_offers = draw_offers;
        if let Some(verdict) = st.game.verdict()
            && st.finished_at.is_none()
        {
            // Not before the last move.
            let at = now.checked_sub(ended_ago).unwrap_or(now).max(anchor);
            self.finish_at(&mut st, verdict, at);
        }
    }

    /// Whether the game has ended.
    pub fn finished(&self) -> bool {
        self.lock().finished_at.is_some()
    }

    /// Stops the clock, logs, counts and publishes the game-over event.
    fn finish(&self, st: &mut State, verdict: Verdict) {
        self.finish_at(st, verdict, time::Instant::now());
    }

    /// [`Session::finish`] with the clock stopped at `at` (a follower
    /// learns of an ending after it happened).
    fn finish_at(&self, st: &mut State, verdict: Verdict, at: time::Instant) {
        st.clock.stop(at);
        self.timer.notify_one();
        st.draw_offers = SeatSet::EMPTY;
        st.finished_at = Some(Instant::now());
        let ply = st.game.ply();
        tracing::info!(
            game_id = %self.id,
            game = self.game_name,
            reason = verdict.reason,
            winners = %self.names_of(verdict.winners),
            ply,
            "game finished"
        );
        // A follower's game is counted by its owner.
        if !self.follower {
            metrics::counter!(
                telemetry::GAMES_FINISHED,
                "game" => self.game_name,
                "reason" => verdict.reason,
            )
            .increment(1);
            metrics::gauge!(telemetry::GAMES_IN_PROGRESS).decrement(1.0);
        }
        // The clock is stopped: any instant reads the same.
        self.publish(
            st,
            EventKind::GameOver { verdict },
            ply,
            time::Instant::now(),
        );
    }

    /// Logs and broadcasts an event, with the clocks read at `at` (for a
    /// move: the instant it was accepted).
    fn publish(&self, st: &mut State, kind: EventKind, ply: u32, at: time::Instant) {
        let event = Arc::new(Event::new(
            st.log.len() as u64 + 1,
            ply,
            kind,
            st.clock.reading(at),
        ));
        st.log.push(event.clone());
        st.last_activity = Instant::now();
        // No receiver left: nobody watches, the ring goes.
        if let Some(tx) = &st.events
            && tx.send(event).is_err()
        {
            st.events = None;
        }
    }

    /// Whether the watchers' broadcast ring is allocated.
    #[cfg(test)]
    pub(super) fn has_ring(&self) -> bool {
        self.lock().events.is_some()
    }

    /// A receiver of the events after now (the caller holds the lock, so
    /// every earlier event is in the log): the ring is made on first use.
    fn subscribe(&self, st: &mut State) -> broadcast::Receiver<Arc<Event>> {
        st.events
            .get_or_insert_with(|| broadcast::channel(self.watch_buffer).0)
            .subscribe()
    }
}

impl Session {
    /// The names of `seats`, joined with `+` (`none` for no seat).
    fn names_of(&self, seats: SeatSet) -> String {
        if seats.is_empty() {
            return "none".into();
        }
        seats
            .iter()
            .map(|s| self.seat_name(s))
            .collect::<Vec<_>>()
            .join("+")
    }

    /// `GAME_OVER`, saying how the game ended (e.g. `TIMEOUT`: a move that
    /// arrives after the flag fell learns why).
    fn game_over_by(&self, verdict: &Verdict) -> SessionError {
        let how = if verdict.winners.is_empty() {
            format!("drawn or ended without a winner: {}", verdict.reason)
        } else {
            format!(
                "{} won by {}",
                self.names_of(verdict.winners),
                verdict.reason
            )
        };
        SessionError::Rejected(MoveError::Illegal {
            reason: "GAME_OVER",
            message: format!("the game is over ({how})"),
        })
    }
}

fn game_over() -> SessionError {
    SessionError::Rejected(MoveError::Illegal {
        reason: "GAME_OVER",
        message: "the game is over".into(),
    })
}

/// Runs `change` to its end in its own task (when there is a runtime), so
/// that a caller going away mid-write cannot leave a change stored but not
/// applied; the call's span goes with it.
async fn to_the_end<T: Send + 'static>(
    change: impl Future<Output = Result<T, SessionError>> + Send + 'static,
) -> Result<T, SessionError> {
    let change = change.instrument(tracing::Span::current());
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime.spawn(change).await.unwrap_or_else(|e| {
            Err(SessionError::Unavailable(format!(
                "the change was interrupted: {e}"
            )))
        }),
        Err(_) => change.await,
    }
}

/// The timer of one timed game (see [`Session::start_timer`]).
async fn run_timer(session: Weak<Session>, wake: Arc<Notify>, closed: CancellationToken) {
    loop {
        // The strong reference lives only for this statement: a dropped
        // session ends the timer.
        let Some(Ok(deadline)) = session.upgrade().map(|s| s.next_deadline()) else {
            return;
        };
        let sleep = async {
            match deadline {
                Some(at) => time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = wake.notified() => {}
            _ = sleep => {}
        }
    }
}

/// A watcher's place in the per-game count, given back on drop (so the count
/// stays right however a stream ends).
#[derive(Debug)]
pub struct WatcherSlot(Arc<AtomicUsize>);

impl WatcherSlot {
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Result<WatcherSlot, SessionError> {
        use std::sync::atomic::Ordering;
        if count.fetch_add(1, Ordering::SeqCst) >= max {
            count.fetch_sub(1, Ordering::SeqCst);
            return Err(SessionError::LimitReached {
                what: "watchers_per_game",
                max,
            });
        }
        metrics::gauge!(telemetry::WATCHERS_ACTIVE).increment(1.0);
        Ok(WatcherSlot(count.clone()))
    }
}

impl Drop for WatcherSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        metrics::gauge!(telemetry::WATCHERS_ACTIVE).decrement(1.0);
    }
}
