//! Game engines, and the one game-agnostic face the session layer sees.
//!
//! Each game is a pure, synchronous module of its own with no protobuf,
//! async, locks or I/O ([`punct`], [`dots`], [`punto`]). The session layer drives any
//! game through the object-safe [`Game`] trait and the small neutral types
//! here: numbered [`Seat`]s, [`Outcome`]s naming the winning seats,
//! [`MoveError`]s, a [`Setup`] seed and the [`Viewer`] a state is computed
//! for.
//!
//! The game-specific payloads — the rules a game is created from
//! ([`GameRules`], behind the [`Rules`] trait), a move as a client gave it
//! ([`MoveInput`]), what a move did ([`MoveDetail`]), the state of a game
//! ([`SharedState`]) and details of an ending — are opaque to the session layer:
//! it stores and passes them on without looking inside, and each game's
//! protobuf conversion (in the service) reads them back with `get::<T>()`.
//! A new game is therefore a folder here, with its [`GameKind`] (its name,
//! records, seats, notation, text picture and greedy bot), listed once in
//! the service's registry of games (`service::grpc::games`); nothing in
//! this file or in the session layer names a game, except that standard
//! PÜNCT is the default rules ([`GameRules::default`]).

pub mod conformance;
mod decision;
pub mod dots;
mod kind;
pub mod lazy;
pub mod punct;
pub mod punto;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

pub use decision::Decision;
pub use kind::{BotFailure, BotTurn, GameKind, Strategy, random_game};
pub use punct::referee::{PunctMoveInfo, PunctMoveInput, PunctState};

/// Most seats any game may have.
pub const MAX_SEATS: usize = 4;

/// A seat at the table, numbered from 0 in the order the game seats them
/// (the contract numbers them from 1, with 0 meaning "none": see
/// [`Seat::number`]). The game says how many there are and what each is
/// called ([`Game::seat_names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Seat(u8);

impl Seat {
    /// The first seat (PÜNCT: white).
    pub const FIRST: Seat = Seat(0);
    /// The second seat (PÜNCT: black).
    pub const SECOND: Seat = Seat(1);

    /// The seat at `index` (0-based), if a game may have it.
    pub const fn new(index: usize) -> Option<Seat> {
        if index < MAX_SEATS {
            Some(Seat(index as u8))
        } else {
            None
        }
    }

    /// The seat numbered `number` in the contract (1-based; 0 is none).
    pub const fn from_number(number: u32) -> Option<Seat> {
        if number >= 1 && number as usize <= MAX_SEATS {
            Some(Seat((number - 1) as u8))
        } else {
            None
        }
    }

    /// 0 for the first seat, 1 for the second, …
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The seat's number in the contract: 1 for the first seat, …
    pub const fn number(self) -> u32 {
        self.0 as u32 + 1
    }

    /// The seats of a game of `n` seats, first first.
    pub fn all(n: usize) -> impl Iterator<Item = Seat> + Clone {
        (0..n.min(MAX_SEATS)).map(|i| Seat(i as u8))
    }

    /// The seat after this one around a table of `n` seats.
    pub const fn next(self, n: usize) -> Seat {
        Seat(((self.0 as usize + 1) % n) as u8)
    }
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seat {}", self.number())
    }
}

/// A set of seats (the winners of a game, the seats agreeing a draw).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeatSet(u8);

impl SeatSet {
    /// No seat.
    pub const EMPTY: SeatSet = SeatSet(0);

    /// Just `seat`.
    pub const fn only(seat: Seat) -> SeatSet {
        SeatSet(1 << seat.0)
    }

    /// Every seat of a game of `n` seats.
    pub const fn all(n: usize) -> SeatSet {
        SeatSet(((1u16 << n) - 1) as u8)
    }

    /// Every seat of `n` but `seat`.
    pub const fn all_but(seat: Seat, n: usize) -> SeatSet {
        SeatSet(SeatSet::all(n).0 & !(1 << seat.0))
    }

    /// Whether `seat` is in the set.
    pub const fn contains(self, seat: Seat) -> bool {
        self.0 & (1 << seat.0) != 0
    }

    /// The set with `seat` added.
    pub const fn with(self, seat: Seat) -> SeatSet {
        SeatSet(self.0 | (1 << seat.0))
    }

    /// Whether the set holds no seat.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many seats it holds.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether every seat of `other` is in this set.
    pub const fn covers(self, other: SeatSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// The seats, first first.
    pub fn iter(self) -> impl Iterator<Item = Seat> {
        Seat::all(MAX_SEATS).filter(move |&s| self.contains(s))
    }

    /// The one seat of a set of one, else `None`.
    pub fn single(self) -> Option<Seat> {
        (self.len() == 1).then(|| self.iter().next()).flatten()
    }
}

impl FromIterator<Seat> for SeatSet {
    fn from_iter<I: IntoIterator<Item = Seat>>(iter: I) -> Self {
        iter.into_iter().fold(SeatSet::EMPTY, SeatSet::with)
    }
}

/// Who a state is computed for: a seat's player, or a spectator. A game
/// with private information (hands, decks) shows each viewer only what it
/// may see; a game without any ignores the viewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Viewer {
    /// Anyone without a seat token.
    #[default]
    Spectator,
    /// The player of this seat (proved by its token).
    Seat(Seat),
}

/// The seed a game's random setup is derived from (`docs/rules/<game>.md` of each seeded
/// game gives the exact algorithm), and whether its creator supplied it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// 32 bytes: drawn by the server from a cryptographic RNG, or supplied.
    pub seed: [u8; 32],
    /// True when the creator supplied the seed instead of the server.
    pub supplied: bool,
}

impl Setup {
    /// The SHA-256 commitment to the seed, published from the start.
    pub fn commitment(&self) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(self.seed).into()
    }
}

/// Lower-case hex of `bytes` (seeds and commitments in records and logs,
/// and every move event's chain head: a table lookup per digit, with no
/// formatting machinery).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

/// 32 bytes from 64 hex digits (either case), if that is what `text` is.
pub fn parse_seed(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    // Hex digits only: `from_str_radix` alone would also take a `+` sign.
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A value of a game's own type that the session layer carries without
/// looking inside (see the module comment).
pub trait Payload: Any + Send + Sync + fmt::Debug {}
impl<T: Any + Send + Sync + fmt::Debug> Payload for T {}

/// A shared, type-erased game payload; `get::<T>()` reads it back.
#[derive(Clone)]
pub struct Opaque(Arc<dyn Payload>);

impl Opaque {
    /// Wraps a game's value.
    pub fn new<T: Payload>(value: T) -> Opaque {
        Opaque(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        (&*self.0 as &dyn Any).downcast_ref()
    }
}

impl fmt::Debug for Opaque {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The rules a game is created from: which game, with which options. Each
/// game implements it for its options type.
pub trait Rules: Payload {
    /// The game's short name, as in a record's `game:` header (`punct`).
    fn game_name(&self) -> &'static str;
    /// The variant's short name: a neutral label for logs and metrics.
    fn variant_name(&self) -> &'static str;
    /// Whether the game's setup is drawn from a seed.
    fn seeded(&self) -> bool {
        false
    }
    /// Whether the creator may supply the seed (tournaments, tests).
    fn seed_may_be_supplied(&self) -> bool {
        self.seeded()
    }
    /// A new game at its start, set up from `setup` (given exactly when
    /// [`Rules::seeded`]).
    fn start(&self, setup: Option<Setup>) -> Box<dyn Game>;
}

/// Which game and with which options: what a session is created from.
#[derive(Clone)]
pub struct GameRules(Arc<dyn Rules>);

impl GameRules {
    /// The rules of a game's options type.
    pub fn new<R: Rules>(rules: R) -> GameRules {
        GameRules(Arc::new(rules))
    }

    /// The game's options, if they are an `R`.
    pub fn get<R: Rules>(&self) -> Option<&R> {
        (&*self.0 as &dyn Any).downcast_ref()
    }

    /// The rules behind the trait.
    pub fn rules(&self) -> &dyn Rules {
        &*self.0
    }

    /// The game's short name (`punct`).
    pub fn game_name(&self) -> &'static str {
        self.0.game_name()
    }

    /// The variant's short name.
    pub fn variant_name(&self) -> &'static str {
        self.0.variant_name()
    }
}

impl fmt::Debug for GameRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Default for GameRules {
    /// Standard PÜNCT with the default options: the service's default game.
    fn default() -> Self {
        GameRules::new(punct::RuleOptions::default())
    }
}

/// A move as a client gave it, already checked for syntax by the service
/// (each game reads its own type back; a game also accepts its own
/// [`MoveDetail`] payload, so a listed or played move can be replayed).
#[derive(Debug, Clone)]
pub struct MoveInput(pub Opaque);

impl MoveInput {
    /// Wraps a game's move input.
    pub fn new<T: Payload>(input: T) -> MoveInput {
        MoveInput(Opaque::new(input))
    }

    /// The input, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.get()
    }
}

/// What a move (played, or legal) is, in the game's own terms, with the
/// neutral parts the service shows and stores.
#[derive(Debug, Clone)]
pub struct MoveDetail {
    /// The move's canonical notation.
    pub notation: String,
    /// The kind of move in the game's words (PÜNCT: `place`, `move`,
    /// `jump`, `bridge`): a neutral label for logs and metrics.
    pub kind: &'static str,
    /// The game's own description of the move.
    pub payload: Opaque,
}

impl MoveDetail {
    /// The same move as input, to play it (e.g. a move from a legal list).
    pub fn to_input(&self) -> MoveInput {
        MoveInput(self.payload.clone())
    }

    /// The game's own description, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.payload.get()
    }

    /// The move's notation text.
    pub fn notation(&self) -> &str {
        &self.notation
    }
}

impl PartialEq for MoveDetail {
    /// Two details are the same move when their canonical notations are.
    fn eq(&self, other: &Self) -> bool {
        self.notation == other.notation && self.kind == other.kind
    }
}

impl Eq for MoveDetail {}

/// The state of a game at one point, for one viewer.
pub trait GameState: Payload {
    /// An SVG picture of this state, highlighting `last_move` (the move that
    /// reached it) and, when `outcome` is a win on the board, how it was
    /// won.
    fn svg(&self, last_move: Option<&MoveDetail>, outcome: Option<&Outcome>) -> String;
}

/// A game's state (see [`GameState`]), shared.
#[derive(Clone)]
pub struct SharedState(Arc<dyn GameState>);

impl SharedState {
    /// Wraps a game's state.
    pub fn new<S: GameState>(state: S) -> SharedState {
        SharedState(Arc::new(state))
    }

    /// The state, if it is an `S`.
    pub fn get<S: GameState>(&self) -> Option<&S> {
        (&*self.0 as &dyn Any).downcast_ref()
    }

    /// An SVG picture (see [`GameState::svg`]).
    pub fn svg(&self, last_move: Option<&MoveDetail>, outcome: Option<&Outcome>) -> String {
        self.0.svg(last_move, outcome)
    }
}

impl fmt::Debug for SharedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How a game ended, in neutral terms.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The winning seats (a team wins together); empty for a draw or a game
    /// nobody won (aborted).
    pub winners: SeatSet,
    /// Stable upper-case name of why it ended (`CONNECTION`, `RESIGNATION`, …).
    pub reason: &'static str,
    /// Each seat's score, first seat first, where the game keeps scores
    /// (captures, rounds won); empty otherwise.
    pub scores: Vec<i64>,
    /// Game-specific details, if the game has any.
    pub detail: Option<Opaque>,
}

impl Outcome {
    /// An outcome with `winners` and no scores or details.
    pub fn new(winners: SeatSet, reason: &'static str) -> Outcome {
        Outcome {
            winners,
            reason,
            scores: Vec::new(),
            detail: None,
        }
    }

    /// The single winner, if one seat won alone.
    pub fn winner(&self) -> Option<Seat> {
        self.winners.single()
    }

    /// Whether nobody won.
    pub fn is_draw(&self) -> bool {
        self.winners.is_empty()
    }

    /// The game's details, if they are a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.detail.as_ref().and_then(Opaque::get)
    }
}

impl PartialEq for Outcome {
    /// Same winners, reason and scores (details follow from the game).
    fn eq(&self, other: &Self) -> bool {
        self.winners == other.winners && self.reason == other.reason && self.scores == other.scores
    }
}

impl Eq for Outcome {}

/// A move accepted by [`Game::play`] (or one of [`Game::legal_moves`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveReport {
    /// Who moved (or would move).
    pub seat: Seat,
    /// The ply after the move.
    pub ply: u32,
    /// Who moves next, as the game decides (`None` when the move ended the
    /// game).
    pub next: Option<Seat>,
    /// How the game ended, if this move ended it (boxed: only a game's
    /// last move has one, and every move's report is kept in its log and
    /// every legal move's in its list).
    pub outcome: Option<Box<Outcome>>,
    /// The move itself, in the game's terms.
    pub detail: MoveDetail,
}

/// A referee action that ends a game outside the board rules. The game
/// decides who wins ([`Game::conclude`]); [`RefereeAction::default_outcome`] is the
/// usual answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefereeAction {
    /// `loser` gave up.
    Resignation {
        /// The seat that resigned.
        loser: Seat,
    },
    /// Every seat agreed a draw.
    DrawAgreement,
    /// The game was called off before every seat had moved: nobody wins.
    Aborted,
    /// `loser` ran out of time on the clock.
    Timeout {
        /// The seat whose flag fell.
        loser: Seat,
    },
    /// `loser` left the game (claimed by another seat).
    Abandoned {
        /// The seat that left.
        loser: Seat,
    },
}

impl RefereeAction {
    /// The stable name of the ending (`RESIGNATION`, `DRAW_AGREEMENT`,
    /// `ABORTED`, `TIMEOUT`, `ABANDONED`).
    pub const fn reason(self) -> &'static str {
        match self {
            RefereeAction::Resignation { .. } => "RESIGNATION",
            RefereeAction::DrawAgreement => "DRAW_AGREEMENT",
            RefereeAction::Aborted => "ABORTED",
            RefereeAction::Timeout { .. } => "TIMEOUT",
            RefereeAction::Abandoned { .. } => "ABANDONED",
        }
    }

    /// The usual outcome in a game of `seats` seats: a seat that resigns,
    /// runs out of time or leaves loses and every other seat wins together
    /// (with two seats: the opponent wins); a draw or an abort has no
    /// winner. Games with other rules (e.g. play goes on without the seat)
    /// decide otherwise in [`Game::conclude`].
    pub fn default_outcome(self, seats: usize) -> Outcome {
        let winners = match self {
            RefereeAction::Resignation { loser }
            | RefereeAction::Timeout { loser }
            | RefereeAction::Abandoned { loser } => SeatSet::all_but(loser, seats),
            RefereeAction::DrawAgreement | RefereeAction::Aborted => SeatSet::EMPTY,
        };
        Outcome::new(winners, self.reason())
    }
}

/// Why a move (or a referee action) was refused. A refused move changes
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    /// The input cannot be a move of this game at all (not a rule question):
    /// `field` names the offending part of the input.
    #[error("{description}")]
    Malformed {
        /// Which part of the move is wrong (`move`, `move.notation`, …).
        field: &'static str,
        /// What is wrong with it.
        description: String,
    },
    /// The move breaks a rule: `reason` is the engine's stable rule name
    /// (`PIECE_IMMOBILE`, `GAME_OVER`, …).
    #[error("{message}")]
    Illegal {
        /// The rule's machine name.
        reason: &'static str,
        /// A readable sentence.
        message: String,
    },
}

/// Why a game record could not be read or replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RecordError {
    /// The 1-based line of the record at fault, if any.
    pub line: Option<usize>,
    /// The rule broken (an illegal move in the record), or why the record
    /// is refused as a whole (`UNKNOWN_GAME`, `SEED_NOT_REVEALED`, …).
    pub reason: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

/// A game rebuilt from a record or from a list of moves.
#[derive(Debug)]
pub struct Replayed {
    /// The game after the last move (concluded if the record says so).
    pub game: Box<dyn Game>,
    /// Every move, in order, as played.
    pub moves: Vec<MoveReport>,
    /// The record's free header tags (`event: …`), in order.
    pub tags: Vec<(String, String)>,
}

/// One game in progress or finished: what the session layer holds per
/// session. Object safe, so a session keeps a `Box<dyn Game>` whatever the
/// game. Implementations are pure and synchronous.
pub trait Game: Send + Sync + fmt::Debug {
    /// The game and its options.
    fn rules(&self) -> GameRules;
    /// What each seat is called (`white`, `black`, …), in seat order: as
    /// many as the game has seats (2..=[`MAX_SEATS`]).
    fn seat_names(&self) -> &'static [&'static str];
    /// Turns played.
    fn ply(&self) -> u32;
    /// Whose turn it is; `None` once the game is over.
    fn to_move(&self) -> Option<Seat>;
    /// How the game ended, or `None` while it goes on.
    fn outcome(&self) -> Option<Outcome>;
    /// The seed the game was set up from, for a seeded game.
    fn setup(&self) -> Option<Setup> {
        None
    }
    /// Checks and plays `mv` for the player to move. Refused moves change
    /// nothing.
    fn play(&mut self, mv: &MoveInput) -> Result<MoveReport, MoveError>;
    /// The legal moves of the player to move, sorted by notation (none once
    /// the game is over).
    fn legal_moves(&self) -> Vec<MoveReport>;
    /// The state now, as `viewer` may see it.
    fn snapshot(&self, viewer: Viewer) -> SharedState;
    /// The state after the first `ply` moves as `viewer` may see it, or
    /// `None` past the current ply. Referee endings are not part of it;
    /// board endings are.
    fn snapshot_at(&self, ply: u32, viewer: Viewer) -> Option<SharedState>;
    /// Whether some viewer may not see everything (hands, decks): then the
    /// service computes snapshots, moves and events per viewer. Games
    /// without private information keep the default, `false`.
    fn hides_information(&self) -> bool {
        false
    }
    /// Whether chance has already shown a seat something a new setup would
    /// change (a card turned up, a hand dealt). From then on a seat that
    /// could call the game off could peek and ask for a new deal, so only
    /// the platform may abort it (docs/API.md, "Aborting"). The default: a
    /// game that hides information has dealt from its start.
    fn dealt(&self) -> bool {
        self.hides_information()
    }
    /// A move as `viewer` may see it (a game with private information hides
    /// what the viewer may not know; the default shows everything).
    fn redact(&self, detail: &MoveDetail, _viewer: Viewer) -> MoveDetail {
        detail.clone()
    }
    /// The last move played, if any.
    fn last_move(&self) -> Option<MoveDetail>;
    /// The game record text in the canonical form of the game's `docs/rules/<game>.md`,
    /// as `viewer` may see it, with `tags` as header lines where that form
    /// has room for them (else without them: they are the session's
    /// labels). A seeded game's record carries the seed once the game is
    /// over, and before that what the rules let it show (its commitment).
    fn record(&self, tags: &[(String, String)], viewer: Viewer) -> String;
    /// Ends the game by a referee action, with the winners the game's rules
    /// give. Refused (`GAME_OVER`) once over.
    fn conclude(&mut self, ending: RefereeAction) -> Result<Outcome, MoveError>;
    /// Decides `mv` as [`Game::play`] would and leaves this game exactly as
    /// it was: the same report, or the same refusal. What a durable store
    /// writes before the move is applied (docs/STORAGE.md, "Deciding a
    /// move"). The default plays the move on a copy and hands the copy
    /// over ([`Decision::after`]); a game whose copy costs more than its
    /// move plays the move on itself and takes it back, and the move is
    /// played again once stored.
    fn decide(&mut self, mv: &MoveInput) -> Result<Decision, MoveError> {
        let mut copy = self.clone_box();
        let report = copy.play(mv)?;
        Ok(Decision {
            report,
            after: Some(copy),
        })
    }
    /// A copy, for trying a move without playing it.
    fn clone_box(&self) -> Box<dyn Game>;
    /// Whether `input`, given in the position after `ply` moves of this
    /// game, names the move `played` (how a retried request is recognised,
    /// however the client wrote the move the first time).
    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool;
    /// The rules as a record header: [`Importer`] of this header followed
    /// by move lines replays a game under the same rules (what storage keeps
    /// to rebuild a game). Never contains the seed.
    fn rules_header(&self) -> String;
}

/// Reads and replays a game record of one game. `seed` is given only by the
/// server itself (rebuilding a stored game whose seed it kept): without it,
/// a record of an unfinished seeded game is refused (`SEED_NOT_REVEALED`),
/// since replaying it would need, and leak, the secret seed.
pub type Importer = fn(text: &str, seed: Option<Setup>) -> Result<Replayed, RecordError>;

/// The games a server knows: the registry's, in its order (the service's
/// `grpc::games::catalog`), plus any a caller adds (the tests' own games).
#[derive(Debug, Clone)]
pub struct Catalog {
    games: Vec<(&'static str, Importer)>,
}

impl Catalog {
    /// The catalog of `kinds`, in their order (the first is the game of a
    /// record without a `game:` header).
    pub fn of<'a>(kinds: impl IntoIterator<Item = &'a dyn GameKind>) -> Catalog {
        Catalog {
            games: kinds
                .into_iter()
                .map(|k| (k.name(), k.importer()))
                .collect(),
        }
    }

    /// The catalog with one more game.
    pub fn with(mut self, name: &'static str, importer: Importer) -> Catalog {
        self.games.push((name, importer));
        self
    }

    /// Reads and replays a game record (each game's `docs/rules/<game>.md`). The record's
    /// `game:` header picks the game (the catalog's first when absent); an
    /// unknown game is refused (`UNKNOWN_GAME`). See [`Importer`] for `seed`.
    pub fn import(&self, text: &str, seed: Option<Setup>) -> Result<Replayed, RecordError> {
        let first = self.games.first().map_or("", |(n, _)| *n);
        let name = record_game(text).unwrap_or(first);
        let Some((_, import)) = self
            .games
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        else {
            return Err(RecordError {
                line: None,
                reason: Some("UNKNOWN_GAME"),
                message: format!(
                    "unknown game `{name}` (known: {})",
                    self.games
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        };
        import(text, seed)
    }
}

/// The value of a record's `game:` header line, if it has one before the
/// first blank line.
fn record_game(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case("game")
                .then(|| value.trim())
        })
}

/// A new game of `rules` at its start position (an unseeded game; see
/// [`Rules::start`] for seeded ones).
pub fn new_game(rules: &GameRules) -> Box<dyn Game> {
    rules.rules().start(None)
}

/// Rebuilds a game from `moves` from its start (set up from `setup` for a
/// seeded game), checking each; the error gives the index of the first
/// refused move.
pub fn replay_moves(
    rules: &GameRules,
    setup: Option<Setup>,
    moves: &[MoveInput],
) -> Result<Replayed, (usize, MoveError)> {
    let mut game = rules.rules().start(setup);
    let mut played = Vec::with_capacity(moves.len());
    for (i, mv) in moves.iter().enumerate() {
        played.push(game.play(mv).map_err(|e| (i, e))?);
    }
    Ok(Replayed {
        game,
        moves: played,
        tags: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_read_back_from_hex_and_nothing_else() {
        let seed: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_seed(&hex(&seed)), Some(seed));
        assert_eq!(parse_seed(&hex(&seed).to_uppercase()), Some(seed));
        assert_eq!(parse_seed(&"+f".repeat(32)), None, "a sign is no digit");
        assert_eq!(parse_seed(&"0".repeat(63)), None);
        assert_eq!(parse_seed(&"g".repeat(64)), None);
    }

    #[test]
    fn hex_is_two_lower_case_digits_per_byte_high_first() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xf0, 0xff]), "000fa5f0ff");
        assert_eq!(hex(&[]), "");
        let all: Vec<u8> = (0..=255).collect();
        let by_format: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), by_format);
    }
}
