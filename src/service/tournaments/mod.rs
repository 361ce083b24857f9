//! Bot tournaments held by the referee (docs/TOURNAMENTS.md).
//!
//! [`Tournaments`] holds every tournament of a server: it creates them from
//! a checked [`NewTournament`], adds entrants (each with a secret key, kept
//! only as its hash), starts and cancels them, and hands out each
//! entrant's stream of [`Push`]es ([`Tournaments::connect`]). Once started, a
//! tournament's runner ([`runner`]) creates its games through the
//! [`SessionStore`] as `CreateGame` does, respecting the concurrency, sends
//! each to the entrants seated at it, and records each result when the game
//! ends. The scheduling ([`schedule`]), the standings ([`standings`]) and
//! the SPRT ([`sprt`]) are pure.
//!
//! Durable: a tournament's whole state is one document ([`record`]),
//! written through the same [`Storage`](crate::service::storage::Storage)
//! as the games at every change and read back at start
//! ([`Tournaments::recover`]), when running tournaments resume: their games
//! in progress were recovered by the session store, and entrants reconnect
//! with the same keys.
//!
//! In a cluster ([`Tournaments::lease_in_cluster`], docs/TOURNAMENTS.md "In
//! a cluster") each tournament has one owner replica at a time, which holds
//! it and runs it under a lease in the database; every write of its
//! document names the lease's epoch, and a write refused (fenced) drops it
//! here. [`crate::service::cluster::tournaments`] renews the leases, takes
//! over the tournaments of a replica that died ([`Tournaments::adopt`]) and
//! routes calls to the owner; listings read the database.
//!
//! No gRPC here: [`crate::service::grpc::tournament`] converts.

mod calls;
mod delayed;
pub mod disclose;
mod held;
pub mod policy;
pub mod record;
pub mod runner;
pub mod schedule;
pub mod sprt;
pub mod standings;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use self::record::{Doc, GameDoc, PairingStatus, TournamentStatus};
use self::schedule::{Format, Meeting};
use crate::games::{Catalog, GameRules, MoveDetail, MoveInput, Setup};
use crate::service::sessions::{GameId, SessionStore, TimeControl, Token, TokenHash};
use crate::service::storage::{self, Commit, ServerSecret, TournamentRow, Write};

/// Most tournaments a server holds open (registering or running) at once;
/// ended ones stay readable and do not count.
pub const MAX_TOURNAMENTS: usize = 1000;
/// Most entrants of one tournament.
pub const MAX_ENTRANTS: usize = 256;
/// Most games one tournament schedules.
pub const MAX_GAMES: usize = 10_000;
/// Most openings of one tournament.
pub const MAX_OPENINGS: usize = 1000;
/// Most games per pairing.
pub const MAX_GAMES_PER_PAIRING: u32 = 1000;
/// Labels a tournament may give its games: the rest of a game's sixteen
/// are the tournament's own (`tournament`, `tournament_id`, `round`,
/// `game`, and a seat name per seat).
pub const MAX_TOURNAMENT_LABELS: usize = crate::service::sessions::MAX_LABELS - 8;

/// Why a tournament call was refused. A refused call changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TournamentError {
    /// Malformed input; `field` names it.
    #[error("{field}: {description}")]
    InvalidArgument {
        /// The offending field (`spec.openings[1].moves[0]`).
        field: String,
        /// What is wrong with it.
        description: String,
    },
    /// No tournament has this id.
    #[error("no tournament `{}`", crate::service::echo::echo(.0))]
    NotFound(String),
    /// No entrant key (`ENTRANT_KEY_MISSING`), or not a key at all
    /// (`ENTRANT_KEY_MALFORMED`).
    #[error("{message}")]
    Unauthenticated {
        /// The reason.
        reason: &'static str,
        /// A sentence.
        message: &'static str,
    },
    /// A key of no entrant (`UNKNOWN_ENTRANT_KEY`), or of another
    /// tournament's (`WRONG_ENTRANT_KEY`).
    #[error("{message}")]
    PermissionDenied {
        /// The reason.
        reason: &'static str,
        /// A sentence.
        message: String,
    },
    /// The call does not fit the tournament's state (`ALREADY_STARTED`, …).
    #[error("{message}")]
    FailedPrecondition {
        /// The reason.
        reason: &'static str,
        /// A sentence.
        message: String,
    },
    /// A server limit.
    #[error("{what} limit reached ({max})")]
    LimitReached {
        /// Which limit.
        what: &'static str,
        /// Its value.
        max: usize,
    },
    /// Storage failed: nothing was changed.
    #[error("the change could not be stored, so it was not made: {0}")]
    Unavailable(String),
    /// Another replica owns the tournament (cluster mode): nothing was
    /// changed here; the call is to be made again, and reaches the owner.
    #[error("tournament `{}` is owned by another replica; call again (entrants: reconnect)", crate::service::echo::echo(.0))]
    Moved(String),
}

impl TournamentError {
    fn invalid(field: impl Into<String>, description: impl Into<String>) -> TournamentError {
        TournamentError::InvalidArgument {
            field: field.into(),
            description: description.into(),
        }
    }

    fn precondition(reason: &'static str, message: impl Into<String>) -> TournamentError {
        TournamentError::FailedPrecondition {
            reason,
            message: message.into(),
        }
    }
}

/// An opening as given: moves (already in engine form) and a seed.
#[derive(Debug, Clone)]
pub struct OpeningInput {
    /// The moves, in order.
    pub moves: Vec<MoveInput>,
    /// The setup's seed, for a seeded game.
    pub seed: Option<[u8; 32]>,
}

/// A tournament to create, as the API layer read it (checked here).
#[derive(Debug, Clone)]
pub struct NewTournament {
    /// Its name.
    pub name: String,
    /// The game.
    pub rules: GameRules,
    /// The format.
    pub format: Format,
    /// Games per pairing (per opening).
    pub games_per_pairing: u32,
    /// The clock of every game.
    pub time_control: TimeControl,
    /// Openings.
    pub openings: Vec<OpeningInput>,
    /// Most games at once (0: a round's).
    pub concurrency: u32,
    /// Labels for the tournament and its games.
    pub labels: BTreeMap<String, String>,
    /// Whether AddEntrant is allowed until the start.
    pub open_registration: bool,
    /// Seats at a table (0: the game's).
    pub table_size: u32,
    /// The stop rule.
    pub sprt: Option<sprt::Sprt>,
    /// The base of each game's seed, for seeded games ([`game_seed`]).
    pub setup_seed_base: Option<u64>,
    /// Entrants entered at creation.
    pub entrants: Vec<String>,
    /// What the referee does when a seat of a game fails.
    pub failure_policy: crate::service::sessions::FailurePolicy,
}

/// A new entrant's secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrantKey {
    /// Its index.
    pub entrant: usize,
    /// Its name.
    pub name: String,
    /// The key (32 hex digits).
    pub key: String,
}

/// A game an entrant must play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The tournament.
    pub tournament_id: String,
    /// The game's number.
    pub number: u32,
    /// Its round.
    pub round: u32,
    /// The game id.
    pub game_id: String,
    /// The entrant's seat, 0-based.
    pub seat: usize,
    /// That seat's token.
    pub token: String,
    /// The entrants' names, seat order.
    pub seat_entrants: Vec<String>,
}

/// What an entrant's stream carries.
#[derive(Debug, Clone)]
pub enum Push {
    /// A game to play.
    Game(Assignment),
    /// The tournament ended (finished or cancelled): the last push.
    Ended(Box<TournamentView>),
    /// Another replica owns the tournament now (cluster mode): the stream
    /// ends, and the entrant reconnects (reaching the new owner).
    Moved,
}

/// A tournament as a reader sees it.
#[derive(Debug, Clone)]
pub struct TournamentView {
    /// Its document (keys only as hashes; seat tokens must not be shown).
    pub doc: Doc,
    /// The game's rules.
    pub rules: GameRules,
    /// The time control.
    pub time_control: TimeControl,
    /// The openings' moves, as played.
    pub openings: Vec<Vec<MoveDetail>>,
    /// Whether each entrant holds a stream now.
    pub connected: Vec<bool>,
    /// The standings.
    pub table: standings::Table,
    /// The SPRT, when the spec has one.
    pub sprt: Option<sprt::State>,
    /// Whether SPRT samples are pairs.
    pub pentanomial: bool,
}

/// One tournament in memory: its document and what is derived from it.
#[derive(Debug)]
struct Tournament {
    doc: Doc,
    rules: GameRules,
    time_control: TimeControl,
    openings: Vec<Vec<MoveDetail>>,
    /// Each entrant's open stream: its number and sender.
    streams: Vec<Option<(u64, mpsc::UnboundedSender<Push>)>>,
    /// The standings of the results so far, keyed by what they depend on
    /// (entrants, games scheduled, games counted): the Elo posterior is a
    /// few thousand exponentials per line, and pages read every 2 s.
    standings: std::cell::RefCell<Option<(StandingsKey, standings::Table)>>,
    /// Under what right this replica writes it.
    lease: Lease,
    /// The numbers of the games started whose document naming them is
    /// being stored: their entrants are told of them once it is (a restart
    /// before that would start other games in their place).
    storing: BTreeSet<u32>,
}

/// Under what right a held tournament is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lease {
    /// A single referee: it owns every tournament it holds.
    Sole,
    /// Cluster mode: owned here under the lease of this epoch.
    Held(i64),
    /// Cluster mode: an ended tournament read from the database, held to
    /// be read (never written).
    Copy,
}

/// How the tournaments of a cluster's replica are leased.
#[derive(Debug)]
struct Leasing {
    /// How often the stored end of a game no replica holds here is read.
    poll: Duration,
    /// Until when the leases surely still run by this process's clock (the
    /// start of the last successful renewal plus the lease): no game is
    /// started after it, until a renewal says which tournaments are still
    /// this replica's.
    valid_until: Mutex<Option<Instant>>,
}

/// What a tournament's standings depend on: entrants, games scheduled,
/// games counted.
type StandingsKey = (usize, usize, usize);

/// A held tournament.
#[derive(Debug)]
pub(crate) struct Entry {
    state: Mutex<Tournament>,
    /// Woken when the runner should look again (start, cancel).
    wake: Notify,
    /// Bumped at every change (for live pages).
    version: AtomicU64,
    /// Cancelled when another replica owns the tournament now: its runner
    /// and game watchers stop.
    gone: CancellationToken,
}

impl Entry {
    fn lock(&self) -> MutexGuard<'_, Tournament> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every tournament of a server (module docs).
#[derive(Debug)]
pub struct Tournaments {
    sessions: Arc<SessionStore>,
    catalog: Catalog,
    held: Mutex<BTreeMap<String, Arc<Entry>>>,
    /// Entrant key hash → (tournament id, entrant).
    keys: Mutex<HashMap<[u8; 32], (String, usize)>>,
    shutdown: CancellationToken,
    next_stream: AtomicU64,
    /// Tasks alive (runners, game watchers, entrant streams): the server
    /// waits for them at shutdown, so that nothing holds the store after.
    live: Arc<(std::sync::atomic::AtomicUsize, Notify)>,
    /// Set in cluster mode.
    leasing: OnceLock<Leasing>,
}

/// Counts a task as alive until dropped ([`Tournaments::stopped`]).
#[derive(Debug)]
pub struct TaskGuard(Arc<(std::sync::atomic::AtomicUsize, Notify)>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.0.0.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.1.notify_waiters();
        }
    }
}

/// An entrant's open stream: while it lives, the entrant counts as
/// connected; dropping it frees the slot for a reconnection.
#[derive(Debug)]
pub struct Connection {
    entry: Arc<Entry>,
    entrant: usize,
    stream: u64,
    /// The pushes, in order.
    pub pushes: mpsc::UnboundedReceiver<Push>,
}

impl Connection {
    /// The tournament of the stream.
    pub fn tournament_id(&self) -> String {
        self.entry.lock().doc.id.clone()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut t = self.entry.lock();
        if let Some(slot) = t.streams.get_mut(self.entrant)
            && slot.as_ref().is_some_and(|(s, _)| *s == self.stream)
        {
            *slot = None;
        }
        drop(t);
        self.entry.version.fetch_add(1, Ordering::SeqCst);
    }
}

impl Tournaments {
    /// No tournaments, over `sessions` (whose storage keeps them); runners
    /// stop at `shutdown`.
    pub fn new(sessions: Arc<SessionStore>, shutdown: CancellationToken) -> Arc<Tournaments> {
        Arc::new(Tournaments {
            sessions,
            catalog: crate::service::grpc::games::catalog(),
            held: Mutex::new(BTreeMap::new()),
            keys: Mutex::new(HashMap::new()),
            shutdown,
            next_stream: AtomicU64::new(1),
            live: Arc::new((std::sync::atomic::AtomicUsize::new(0), Notify::new())),
            leasing: OnceLock::new(),
        })
    }

    /// Counts the calling task as alive until the guard drops.
    pub fn track(&self) -> TaskGuard {
        self.live.0.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.live.clone())
    }

    /// Waits until every tracked task has ended (they end at shutdown).
    pub async fn stopped(&self) {
        loop {
            let idle = self.live.1.notified();
            if self.live.0.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Cancelled when the server shuts down.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// The session store the games are made in.
    pub fn sessions(&self) -> &Arc<SessionStore> {
        &self.sessions
    }

    /// Reads back every stored tournament and resumes the running ones;
    /// returns how many were read. Call within a tokio runtime, after the
    /// session store recovered its games.
    pub fn recover(self: &Arc<Self>) -> Result<usize, TournamentError> {
        let rows = self
            .sessions
            .storage()
            .tournaments()
            .map_err(|e| TournamentError::Unavailable(e.to_string()))?;
        let count = rows.len();
        for row in rows {
            let doc = match record::doc_of(&row, self.sessions.storage().secret()) {
                Ok(doc) => doc,
                Err(e) => {
                    tracing::warn!(tournament = %row.id, error = %e, "stored tournament unreadable: skipped");
                    continue;
                }
            };
            let tournament = match self.rebuild(doc) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(tournament = %row.id, error = %e, "stored tournament cannot be rebuilt: skipped");
                    continue;
                }
            };
            let running = tournament.doc.status == TournamentStatus::Running;
            let id = tournament.doc.id.clone();
            let entry = self.hold(tournament);
            if running {
                tracing::info!(tournament = %id, "tournament resumed");
                runner::spawn(self.clone(), id, entry);
            }
        }
        Ok(count)
    }

    /// Rules, clock and openings from a stored document.
    fn rebuild(&self, doc: Doc) -> Result<Tournament, record::DocError> {
        let rules = record::rules_of(&self.catalog, &doc.rules_header)?;
        let time_control = doc.time_control.time_control()?;
        let openings = doc
            .openings
            .iter()
            .map(|o| {
                record::replay_opening(&self.catalog, &doc.rules_header, &rules, o)
                    .map(|moves| moves.into_iter().map(|m| m.detail).collect())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let streams = vec![None; doc.entrants.len()];
        Ok(Tournament {
            doc,
            rules,
            time_control,
            openings,
            streams,
            standings: Default::default(),
            lease: Lease::Sole,
            storing: BTreeSet::new(),
        })
    }

    /// Holds `t`, indexing its entrants' keys.
    fn hold(&self, t: Tournament) -> Arc<Entry> {
        let id = t.doc.id.clone();
        {
            let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
            for (i, e) in t.doc.entrants.iter().enumerate() {
                if let Some(hash) = crate::games::parse_seed(&e.key_sha256) {
                    keys.insert(hash, (id.clone(), i));
                }
            }
        }
        let entry = Arc::new(Entry {
            state: Mutex::new(t),
            wake: Notify::new(),
            version: AtomicU64::new(0),
            gone: CancellationToken::new(),
        });
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, entry.clone());
        entry
    }

    /// Tournaments not over yet (registering or running): what the limit
    /// counts; ended ones stay readable.
    fn open_count(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|e| {
                matches!(
                    e.lock().doc.status,
                    TournamentStatus::Registering | TournamentStatus::Running
                )
            })
            .count()
    }

    fn entry(&self, id: &str) -> Result<Arc<Entry>, TournamentError> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| TournamentError::NotFound(id.to_string()))
    }

    /// Writes `doc` under `lease` and waits for it to be stored. A write
    /// refused by fencing drops the tournament here: another replica owns
    /// it now.
    async fn persist(&self, doc: &Doc, lease: Lease) -> Result<(), TournamentError> {
        let row = record::row_of(doc, self.sessions.storage().secret())
            .map_err(|e| TournamentError::Unavailable(e.to_string()))?;
        match self.write(row, lease).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_fenced() => {
                self.release_lease(&doc.id, lease);
                Err(TournamentError::Moved(doc.id.clone()))
            }
            Err(e) => Err(TournamentError::Unavailable(e.to_string())),
        }
    }

    /// Queues the write of `row` under `lease` (in order: call it under
    /// the tournament's lock when the order matters).
    fn write(&self, row: TournamentRow, lease: Lease) -> Commit {
        let storage = self.sessions.storage();
        match lease {
            Lease::Sole => storage.write(Write::Tournament(row)),
            Lease::Held(epoch) => storage.write_leased(Write::Tournament(row), Some(epoch)),
            Lease::Copy => Commit::ready(Err(storage::StorageError::fenced_tournament(
                &row.id,
                "this replica holds a read-only copy",
            ))),
        }
    }
}

/// The assignments of `entrant` in the games of `t` in progress, but for
/// those whose document is still being stored (the runner sends them once
/// it is, [`Tournament::storing`]).
fn assignments<'a>(
    secret: &'a ServerSecret,
    t: &'a Tournament,
    entrant: usize,
) -> impl Iterator<Item = Assignment> + 'a {
    t.doc
        .games
        .iter()
        .filter(|g| !t.storing.contains(&g.number))
        .filter_map(move |g| assignment_of(secret, &t.doc, g, entrant))
}

/// The assignment of `entrant` in game `g`, if it plays it and it is in
/// progress.
fn assignment_of(
    secret: &ServerSecret,
    doc: &Doc,
    g: &GameDoc,
    entrant: usize,
) -> Option<Assignment> {
    let PairingStatus::Playing {
        game_id,
        sealed_tokens,
    } = &g.state
    else {
        return None;
    };
    let seat = g.seats.iter().position(|&e| e == entrant)?;
    let token = seat_token(secret, &doc.id, game_id, sealed_tokens, seat)?;
    Some(Assignment {
        tournament_id: doc.id.clone(),
        number: g.number,
        round: g.round,
        game_id: game_id.clone(),
        seat,
        token: token.to_string(),
        seat_entrants: g
            .seats
            .iter()
            .map(|&e| {
                doc.entrants
                    .get(e)
                    .map(|x| x.name.clone())
                    .unwrap_or_default()
            })
            .collect(),
    })
}

/// The view of `t`: standings and SPRT computed from its results.
fn view_of(t: &Tournament) -> TournamentView {
    let counted = t
        .doc
        .games
        .iter()
        .filter(|g| matches!(g.state, PairingStatus::Done { .. } | PairingStatus::Bye))
        .count();
    let key = (t.doc.entrants.len(), t.doc.games.len(), counted);
    let cached = t
        .standings
        .borrow()
        .as_ref()
        .filter(|(k, _)| *k == key)
        .map(|(_, table)| table.clone());
    let table = cached.unwrap_or_else(|| {
        let (scored, byes) = t.doc.scored();
        let table = standings::table(t.doc.entrants.len(), &scored, &byes);
        *t.standings.borrow_mut() = Some((key, table.clone()));
        table
    });
    let pentanomial = t.doc.pentanomial();
    let sprt = t
        .doc
        .sprt
        .map(|s| s.state(&t.doc.sprt_samples(pentanomial)));
    let mut doc = t.doc.clone();
    // Seat tokens are secrets of the seats: never in a view, not even
    // sealed.
    for g in &mut doc.games {
        if let PairingStatus::Playing { sealed_tokens, .. } = &mut g.state {
            sealed_tokens.clear();
        }
    }
    TournamentView {
        doc,
        rules: t.rules.clone(),
        time_control: t.time_control,
        openings: t.openings.clone(),
        connected: t.streams.iter().map(Option::is_some).collect(),
        table,
        sprt,
        pentanomial,
    }
}

/// The token of seat `seat` (0-based) of tournament `tournament_id`'s game
/// `game_id`: unsealed from `sealed` when an older version stored it (see
/// [`PairingStatus::Playing`]), else derived from the server secret.
pub(crate) fn seat_token(
    secret: &ServerSecret,
    tournament_id: &str,
    game_id: &str,
    sealed: &[String],
    seat: usize,
) -> Option<Token> {
    if sealed.is_empty() {
        return Some(Token::from_bytes(secret.seat_token(
            tournament_id,
            game_id,
            seat,
        )));
    }
    let bytes = storage::secret::parse_token(sealed.get(seat)?)?;
    Some(Token::from_bytes(secret.seal_token(
        tournament_id,
        game_id,
        seat,
        &bytes,
    )))
}

/// A tournament id: like a game id, ordered by creation.
fn new_id() -> String {
    GameId::random().to_string()
}

/// A new entrant key and its hash (hex).
fn new_key() -> (String, String) {
    let token = Token::random();
    (token.to_string(), crate::games::hex(&token.hash().0))
}

/// The meeting shape of a document.
fn meeting_of(doc: &Doc, openings: usize) -> Meeting {
    Meeting {
        table: doc.table,
        games: doc.games_per_pairing,
        openings,
    }
}

/// The seed of game `number` from a tournament's `setup_seed_base`:
/// SHA-256 of `tournament/setup/v1`, the base (8 bytes, big-endian) and
/// the number (4 bytes, big-endian) — the local runner's derivation, so a
/// tournament deals the same on either.
pub fn game_seed(base: u64, number: u32) -> [u8; 32] {
    derived_seed(b"tournament/setup/v1", &base.to_be_bytes(), number)
}

/// The seed of game `number` of an opening whose seed is `seed`, in a
/// tournament that deals each game its own ([`Doc::deal_per_game`]):
/// SHA-256 of `tournament/opening/v1`, the opening's seed and the number
/// (4 bytes, big-endian). One game's seed, revealed at its end, tells
/// nothing of the others' or of the opening's.
pub fn opening_game_seed(seed: &[u8; 32], number: u32) -> [u8; 32] {
    derived_seed(b"tournament/opening/v1", seed, number)
}

/// SHA-256 of `domain`, `from` and game `number` (4 bytes, big-endian).
fn derived_seed(domain: &[u8], from: &[u8], number: u32) -> [u8; 32] {
    use sha2::Digest as _;
    let mut hash = sha2::Sha256::new();
    hash.update(domain);
    hash.update(from);
    hash.update(number.to_be_bytes());
    hash.finalize().into()
}

/// A dummy setup, to rebuild seeded rules from their header.
fn rebuild_setup() -> Setup {
    Setup {
        seed: [0; 32],
        supplied: true,
    }
}
