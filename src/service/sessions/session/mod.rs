//! One refereed game. [`Session`] is a small coordinator: it holds the lock
//! over the game's mutable state and calls its parts, each with one job:
//!
//! * [`seats`]: the seats, their tokens, and who a caller is ([`Role`]);
//! * [`timer`]: the clock's deadlines and the timer task of a timed game
//!   (the clock itself is [`Clock`]);
//! * [`history`]: the numbered event log and the watchers' broadcast ring;
//! * [`view`], [`legal`]: pictures of the game, now or at an earlier ply,
//!   and its legal moves;
//! * [`slot`]: the keys of its states and a slot where a layer above keeps
//!   its own forms of them (the gRPC layer's encoded answers);
//! * [`watchers`]: the watcher count, limit and the start of a watch;
//! * [`handoff`]: the hand-off to storage (the write turn, writes and what
//!   their failures mean);
//! * [`moves`] and [`endings`]: the changes a caller asks for;
//! * [`lifecycle`]: the end of the game, a follower catching up, expiry
//!   and closing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use tokio::time;

use super::clock::{Clock, ClockReading, MoveStamp, TimeControl};
use super::presence::{Presence, SeatPresence};
use super::token::TokenHash;
use super::{GameId, Limits, SessionError};
use crate::games::{Game, MoveReport, Seat, SeatSet};
use crate::service::storage::{self, Storage};

mod delay;
mod endings;
mod event;
mod handoff;
mod history;
mod lag;
mod legal;
mod lifecycle;
#[cfg(test)]
mod memory_tests;
mod moves;
mod policy;
mod proof;
mod seats;
mod slot;
mod timer;
mod view;
mod watchers;

use delay::Delayed;
pub(super) use delay::Release;
pub use delay::{DELAY_LABEL, SpectatorDelay};
pub use event::{Event, EventKind, MoveReceipt};
pub use lag::LedgerLine;
pub(super) use moves::{Fingerprint, Receipts};
pub use policy::FailureView;
pub use seats::Role;
pub use slot::{Current, StateKey};
pub use view::{SessionView, SetupView, TimeView};
pub(super) use watchers::WatcherSlot;

use handoff::Handoff;
use history::EventLog;
use legal::LegalList;
use lifecycle::Lifecycle;
use seats::Seats;
use slot::Attachment;
use timer::Timer;
use watchers::Watchers;

/// The mutable part of a session, behind one mutex.
#[derive(Debug)]
struct State {
    game: Box<dyn Game>,
    log: EventLog,
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
    /// The head of the move chain after the last move (docs/RECEIPTS.md):
    /// only the head is kept, an earlier one is recomputed from the log.
    chain: [u8; 32],
    /// The failure policy and what it did (held once it differs from no
    /// policy at all).
    policy: policy::PolicySlot,
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
    /// When a finished game ended (Unix ms), as stored; `None`: now, or
    /// for an imported finished game its creation time.
    pub(super) ended_ms: Option<i64>,
    /// When each stored move was accepted (Unix ms), for a game read back
    /// from storage; empty for a new one.
    pub(super) played_ms: &'a [i64],
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
/// without the lock (one change at a time per game: the write turn of the
/// `Handoff`, held from the decision until the change is applied or
/// dropped), then applied, or dropped if storage failed. Readers in between
/// see the game as it was. A caller going away cannot leave a change stored
/// but not applied: the other changes store in a task of their own; a move
/// stores in its call, and if the call goes away mid-write, a task is
/// started then to finish it (`StoringMove`).
#[derive(Debug)]
pub struct Session {
    id: GameId,
    /// The game's short name, a label of its metrics.
    game_name: &'static str,
    serial: u64,
    created_at: SystemTime,
    /// Labels given at creation, held only when there are some (most games
    /// have none: an empty slot is one pointer).
    #[allow(
        clippy::box_collection,
        reason = "one pointer, not a map's 24 bytes, in every game without labels"
    )]
    labels: Option<Box<BTreeMap<String, String>>>,
    /// Whether a seat's abort and a missed first move are that seat's loss
    /// ([`Session::forfeits`]).
    forfeits: bool,
    seats: Seats,
    /// Whether the game hides information from some viewers (then events
    /// are redacted per watcher).
    private: bool,
    state: Mutex<State>,
    watchers: Watchers,
    life: Lifecycle,
    presence: Presence,
    timer: Timer,
    /// The store's limits, shared by its sessions.
    limits: Arc<Limits>,
    handoff: Handoff,
    /// Read back from storage after it finished (see [`SessionInit`]).
    archived: bool,
    /// Set when the game moved to another replica ([`Session::moved`]).
    moved: std::sync::atomic::AtomicBool,
    /// How far behind the live game spectators are kept (from the
    /// `spectator-delay` label; [`delay`]); boxed: most games have none.
    delay: Option<Box<Delayed>>,
    /// What a layer above keeps with the session ([`Session::attached`]).
    attachment: Attachment,
}

impl Session {
    pub(super) fn new(init: SessionInit<'_>, limits: &Arc<Limits>) -> Session {
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
            ended_ms,
            played_ms,
        } = init;
        let seat_names = game.seat_names();
        let tick = time::Instant::now();
        let now = Instant::now();
        let outcome = game.outcome();
        let log = EventLog::rebuilt(history, outcome.as_ref(), game.ply());
        let clock = Session::first_clock(clock, &*game, time_control, tick);
        let private = game.hides_information();
        let chain = proof::chain_of(&id, &*game, history);
        let handoff = Handoff::new(id.clone(), storage, lease, follower);
        if outcome.is_some() {
            handoff.note_end(ended_ms.unwrap_or_else(|| storage::unix_ms(created_at)));
        }
        let delay =
            SpectatorDelay::of_labels(&labels).map(|d| Box::new(Delayed::new(d, played_ms, tick)));
        Session {
            game_name: game.rules().game_name(),
            serial,
            created_at,
            labels: (!labels.is_empty()).then(|| Box::new(labels)),
            forfeits,
            seats: Seats::new(seat_names, token_hashes),
            private,
            state: Mutex::new(State {
                game,
                log,
                receipts,
                draw_offers: if outcome.is_none() {
                    draw_offers
                } else {
                    SeatSet::EMPTY
                },
                last_activity: now,
                finished_at: outcome.map(|_| now),
                clock,
                pending: false,
                legal: None,
                chain,
                policy: policy::PolicySlot::default(),
            }),
            watchers: Watchers::new(),
            life: Lifecycle::default(),
            presence: Presence::new(tick),
            timer: Timer::default(),
            limits: limits.clone(),
            handoff,
            archived,
            moved: std::sync::atomic::AtomicBool::new(false),
            delay,
            attachment: Attachment::default(),
            id,
        }
    }

    /// The clock a session starts with: `restored` (stopped for a finished
    /// game), or a new one with `game`'s first mover to move.
    fn first_clock(
        restored: Option<Clock>,
        game: &dyn Game,
        control: TimeControl,
        tick: time::Instant,
    ) -> Clock {
        let seats = game.seat_names().len();
        match (restored, game.to_move()) {
            (Some(clock), Some(_)) => clock,
            (None, Some(first)) => Clock::new(control, seats, first, tick),
            // A finished game read back: its clocks as they stood.
            (Some(mut clock), None) => {
                clock.stop(tick);
                clock
            }
            (None, None) => Clock::stopped(control, seats, tick),
        }
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
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.labels.as_deref().unwrap_or(&NONE)
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

    /// Events the watchers' broadcast ring holds for slow ones.
    fn watch_buffer(&self) -> usize {
        self.limits.watch_buffer.max(1)
    }

    /// What the game calls `seat`.
    pub fn seat_name(&self, seat: Seat) -> &'static str {
        self.seats.name(seat)
    }

    /// What the game calls each seat, in seat order.
    pub fn seat_names(&self) -> &'static [&'static str] {
        self.seats.names()
    }

    /// Who the caller bringing `token` is ([`Role`]), resolved once per
    /// call and given to the session's calls: with `platform` (the caller
    /// holds the platform's key) the platform, which names the game by a
    /// seat's token; else the seat `token` proves, or a spectator without
    /// a token. A token that is given must be right. Checks every seat,
    /// always, in constant time.
    pub fn role_of(&self, token: &str, platform: bool) -> Result<Role, SessionError> {
        self.seats.role_of(&self.id, token, platform)
    }

    /// The role of the right `token` (or a spectator's, without one).
    #[cfg(test)]
    pub(crate) fn role(&self, token: &str) -> Role {
        self.role_of(token, false).expect("a seat's token")
    }

    /// The seat `role` plays: refused for a spectator and the platform.
    pub fn seat_of(&self, role: Role) -> Result<Seat, SessionError> {
        Seats::seat_of(&self.id, role)
    }

    /// The time control and every accepted move's time: what a durable
    /// store keeps to rebuild the clock with [`Clock::restore`].
    pub fn clock_stamps(&self) -> (TimeControl, Vec<MoveStamp>) {
        let st = self.lock();
        (st.clock.control(), st.clock.stamps().to_vec())
    }

    /// Each seat's presence now, first seat first.
    pub fn presence(&self) -> Vec<SeatPresence> {
        self.presence.read(self.seats.count(), time::Instant::now())
    }

    /// Whether this is a copy of a game another replica owns.
    pub fn follower(&self) -> bool {
        self.handoff.follower()
    }

    /// The ply this copy has.
    pub fn ply(&self) -> u32 {
        self.lock().game.ply()
    }

    /// Whether the game has ended.
    pub fn finished(&self) -> bool {
        self.lock().finished_at.is_some()
    }

    /// Queues `write` without waiting (see [`Handoff::persist_later`]).
    pub(super) fn persist_later(&self, write: storage::Write) {
        self.handoff.persist_later(write);
    }

    /// The stored row of this game's ending.
    pub(super) fn end_row(
        &self,
        status: &'static str,
        outcome: Option<&crate::games::Outcome>,
        ply: u32,
    ) -> storage::OutcomeRow {
        self.handoff.end_row(status, outcome, ply)
    }
}
