//! What the service and the tools know of a game beyond one game in
//! progress (its [`Game`](super::Game)): its name, how its records are read,
//! its seats, how a move in notation becomes an input, how a state is drawn
//! in text, and its built-in greedy bot ([`Strategy`]). Each game implements
//! [`GameKind`] once, in its own folder (`<game>/kind.rs`, the bot in
//! `<game>/bot.rs`); the service's registry of games lists each game's
//! [`GameKind`] once, through its wire (`service::grpc::games`), so the
//! service and the tools read every game from one list.

use std::fmt;

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

use super::{Game, GameRules, Importer, MoveInput, Opaque, Setup, SharedState};

/// One game, as a whole (see the module comment). Pure, like the engines.
pub trait GameKind: Sync {
    /// The game's short name: its record's `game:` header, its member of
    /// the wire's `oneof game`, its `--game` value in the tools (`punct`).
    fn name(&self) -> &'static str;

    /// Reads and replays a record of this game.
    fn importer(&self) -> Importer;

    /// Every seat name any table of the game uses, in seat order (a game
    /// whose seats depend on its options lists every table's; a table's own
    /// are its [`Game::seat_names`](super::Game::seat_names)).
    fn seat_names(&self) -> &'static [&'static str];

    /// A move in notation as the engine's input (`None`: not notation of
    /// this game).
    fn notation(&self, text: &str) -> Option<MoveInput>;

    /// The text picture of a state of this game (empty for another game's).
    fn picture(&self, state: &SharedState) -> String;

    /// The built-in greedy bot for games of `rules` (`seed` breaks its
    /// ties; `setup` is the game's seed when the rules are seeded and the
    /// bot may know it).
    fn greedy(&self, seed: u64, rules: &GameRules, setup: Option<Setup>) -> Box<dyn Strategy>;

    /// Whether its bots need the state as their own seat sees it
    /// ([`BotTurn::view`]): the moves' notation does not tell everything
    /// (a card in hand).
    fn bots_read_state(&self) -> bool {
        false
    }

    /// A random game under `rules` (set up from `setup`, for seeded rules)
    /// from its start to its end, in notation: at each turn a uniform
    /// choice among the legal moves, drawn from `seed` (the same game for
    /// the same seed). By default through the game-agnostic trait; a game
    /// may play it faster with its own engine.
    fn random_game(&self, rules: &GameRules, setup: Option<Setup>, seed: u64) -> Vec<String> {
        random_game(rules.rules().start(setup).as_mut(), seed)
    }

    /// Whether `text`, the rest of a move in notation after a leading `-`,
    /// completes a move (a negative coordinate), which a command line must
    /// not take for a flag.
    fn minus_move(&self, _text: &str) -> bool {
        false
    }
}

/// [`GameKind::random_game`] through the trait: `game` played to its end.
pub fn random_game(game: &mut dyn Game, seed: u64) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut moves = Vec::new();
    while game.outcome().is_none() {
        let legal = game.legal_moves();
        if legal.is_empty() {
            break;
        }
        let detail = &legal[rng.random_range(0..legal.len())].detail;
        match game.play(&detail.to_input()) {
            Ok(played) => moves.push(played.detail.notation),
            Err(_) => break,
        }
    }
    moves
}

impl fmt::Debug for dyn GameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One turn as a built-in bot sees it: the referee's words, in notation.
#[derive(Debug, Clone, Copy)]
pub struct BotTurn<'a> {
    /// The moves played so far, canonical notation, in order.
    pub history: &'a [String],
    /// The legal moves now, canonical notation, sorted.
    pub legal: &'a [String],
    /// The mover's time left in milliseconds, in a game with a clock.
    pub clock_ms: Option<u64>,
    /// The state as the bot's own seat sees it, in the game's own terms
    /// (read from the wire by the game's wire file), for a game whose bots
    /// read it ([`GameKind::bots_read_state`]); `None` otherwise.
    pub view: Option<&'a Opaque>,
}

/// Why a built-in bot gives no move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BotFailure {
    /// Its view of the game could not follow what it was told.
    Desync(String),
    /// There was nothing to choose from.
    NoMoves,
}

/// A built-in bot of one game: chooses a move in notation for a turn. Pure
/// and synchronous (its randomness is seeded).
pub trait Strategy: Send {
    /// Chooses a move for `turn`.
    fn choose(&mut self, turn: &BotTurn<'_>) -> Result<String, BotFailure>;
}
