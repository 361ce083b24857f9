//! Bots that play over RPC like any external program: they see a turn as the
//! referee's words (the moves so far and the legal moves, both in notation)
//! and answer a move in notation. The tournament runner drives them through
//! [`Bot`]; it never looks inside a game.
//!
//! * [`random`]: uniform over the legal moves, seeded.
//! * `greedy`: each game's own, in its engine folder (`games/<game>/bot.rs`,
//!   a [`Strategy`] made by [`GameKind::greedy`](crate::games::GameKind::greedy)),
//!   played through [`Greedy`].
//! * [`external`]: a program speaking the line protocol of docs/BOTS.md.

pub mod external;
pub mod random;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::games::{BotFailure, BotTurn, Strategy};
use crate::service::grpc::games::WIRE_GAMES;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::games::ToolRules;

/// One turn, as the referee tells it to the bot to move.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// The game's id on the server.
    pub game_id: &'a str,
    /// Turns played so far (the ply the answer answers).
    pub ply: u32,
    /// The bot's seat, by the game's name for it (PÜNCT: `white` or
    /// `black`; Dots: `red` or `blue`).
    pub seat: &'a str,
    /// The moves played so far, canonical notation, in order.
    pub history: &'a [String],
    /// The legal moves now, canonical notation, sorted.
    pub legal: &'a [String],
    /// The mover's time left in milliseconds, in a game with a clock
    /// (docs/CLOCKS.md); `None` without one.
    pub clock_ms: Option<u64>,
    /// The game's state as the bot's own seat sees it (its `GetGame` with
    /// its seat token), for a game whose bots need more than the moves'
    /// notation ([`crate::games::GameKind::bots_read_state`]:
    /// Punto's revealed card); `None` for the others.
    pub state: Option<&'a pb::GameState>,
}

/// What a bot answers to a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Play this move (notation).
    Move(String),
    /// Give up the game.
    Resign,
}

/// Why a bot could not answer. The runner makes such a bot forfeit the game.
#[derive(Debug, thiserror::Error)]
pub enum BotError {
    /// The bot's view of the game could not follow the moves it was told.
    #[error("bot lost track of the game: {0}")]
    Desync(String),
    /// There was nothing to choose from.
    #[error("no legal move to choose from")]
    NoMoves,
    /// The external program could not be started, or stopped answering.
    #[error("bot program: {0}")]
    Io(#[from] std::io::Error),
    /// The external program took longer than the move timeout.
    #[error("bot program gave no move within {0:?}")]
    Timeout(Duration),
    /// The external program closed its output.
    #[error("bot program ended its output")]
    Closed,
}

/// A bot that lives in this process and answers synchronously.
pub trait BuiltinBot: Send {
    /// Chooses a move for `turn`.
    fn choose(&mut self, turn: &Turn<'_>) -> Result<Answer, BotError>;
}

/// A game's own built-in bot ([`Strategy`]) as a [`BuiltinBot`]: the turn in the
/// game's terms (the state its seat sees, read by the game's wire file,
/// for a game whose bots read it), the move it chooses as an answer.
pub struct Greedy(pub Box<dyn Strategy>);

impl BuiltinBot for Greedy {
    fn choose(&mut self, turn: &Turn<'_>) -> Result<Answer, BotError> {
        let state = turn.state.and_then(|s| s.game.as_ref());
        let view = match state.and_then(|s| WIRE_GAMES.iter().find_map(|g| g.bot_view(s))) {
            Some(read) => Some(read.map_err(BotError::Desync)?),
            None => None,
        };
        let turn = BotTurn {
            history: turn.history,
            legal: turn.legal,
            clock_ms: turn.clock_ms,
            view: view.as_ref(),
        };
        match self.0.choose(&turn) {
            Ok(text) => Ok(Answer::Move(text)),
            Err(BotFailure::Desync(why)) => Err(BotError::Desync(why)),
            Err(BotFailure::NoMoves) => Err(BotError::NoMoves),
        }
    }
}

/// A built-in bot or an external program, as the tournament runner sees it.
pub enum Bot {
    /// A bot of this process (CPU-bound; run on a blocking-capable thread).
    Builtin(Box<dyn BuiltinBot>),
    /// A child process speaking the line protocol.
    External(Box<external::ExternalBot>),
}

impl Bot {
    /// Asks for a move.
    pub async fn choose(&mut self, turn: &Turn<'_>) -> Result<Answer, BotError> {
        match self {
            // Scoring a few thousand moves takes milliseconds: on a
            // multi-threaded runtime, tell it this worker is busy rather than
            // starve other games (a current-thread runtime cannot hand over).
            Bot::Builtin(bot) => {
                if tokio::runtime::Handle::current().runtime_flavor()
                    == tokio::runtime::RuntimeFlavor::MultiThread
                {
                    tokio::task::block_in_place(|| bot.choose(turn))
                } else {
                    bot.choose(turn)
                }
            }
            Bot::External(bot) => bot.choose(turn).await,
        }
    }

    /// Tells the bot how the game ended and lets it go.
    pub async fn finish(self, result: &str) {
        if let Bot::External(bot) = self {
            bot.finish(result).await;
        }
    }
}

/// Which bot: a built-in one by name, or a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BotKind {
    /// [`random::RandomBot`].
    Random,
    /// The game's greedy bot ([`crate::games::GameKind::greedy`], played
    /// through [`Greedy`]).
    Greedy,
    /// A program run with `sh -c`, speaking the line protocol.
    External(String),
}

/// A bot entered in a tournament: a display name and what plays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotSpec {
    /// The name in tables and records.
    pub name: String,
    /// What plays.
    pub kind: BotKind,
}

impl BotSpec {
    /// A fresh player for one game of `rules`. `seed` makes built-in
    /// choices repeatable.
    pub fn player(&self, seed: u64, rules: &ToolRules, timeout: Duration) -> Bot {
        match &self.kind {
            BotKind::Random => Bot::Builtin(Box::new(random::RandomBot::new(seed))),
            BotKind::Greedy => Bot::Builtin(Box::new(Greedy(rules.game().kind().greedy(
                seed,
                &rules.rules,
                rules.setup(),
            )))),
            BotKind::External(command) => Bot::External(Box::new(external::ExternalBot::new(
                command.clone(),
                timeout,
            ))),
        }
    }
}

impl FromStr for BotSpec {
    type Err = String;

    /// `random`, `greedy`, `cmd:PROGRAM ARGS…`, each optionally prefixed by
    /// `NAME=` (e.g. `mybot=cmd:python3 bot.py`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (name, spec) = match s.split_once('=') {
            Some((n, rest)) if !n.contains(':') && !n.trim().is_empty() => (Some(n.trim()), rest),
            _ => (None, s),
        };
        let kind = match spec.trim() {
            "random" => BotKind::Random,
            "greedy" => BotKind::Greedy,
            other => match other.strip_prefix("cmd:") {
                Some(command) if !command.trim().is_empty() => {
                    BotKind::External(command.trim().to_string())
                }
                _ => {
                    return Err(format!(
                        "`{other}` is not a bot: use random, greedy or cmd:PROGRAM (optionally NAME=...)"
                    ));
                }
            },
        };
        let name = match (name, &kind) {
            (Some(n), _) => n.to_string(),
            (None, BotKind::Random) => "random".into(),
            (None, BotKind::Greedy) => "greedy".into(),
            (None, BotKind::External(command)) => command
                .split_whitespace()
                .last()
                .and_then(|w| w.rsplit('/').next())
                .unwrap_or("external")
                .to_string(),
        };
        if name.contains(['\n', '\r']) || name.len() > 64 {
            return Err(format!(
                "`{name}`: a bot name is one line of at most 64 bytes"
            ));
        }
        Ok(BotSpec { name, kind })
    }
}

impl fmt::Display for BotSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_names_and_kinds() {
        let r: BotSpec = "random".parse().unwrap();
        assert_eq!((r.name.as_str(), r.kind), ("random", BotKind::Random));
        let g: BotSpec = "g2=greedy".parse().unwrap();
        assert_eq!((g.name.as_str(), g.kind), ("g2", BotKind::Greedy));
        let e: BotSpec = "cmd:sh examples/bots/first-legal.sh".parse().unwrap();
        assert_eq!(e.name, "first-legal.sh");
        assert_eq!(
            e.kind,
            BotKind::External("sh examples/bots/first-legal.sh".into())
        );
        let n: BotSpec = "mine=cmd:python3 -u bot.py --x=1".parse().unwrap();
        assert_eq!(n.name, "mine");
        assert_eq!(n.kind, BotKind::External("python3 -u bot.py --x=1".into()));
        assert!("minimax".parse::<BotSpec>().is_err());
        assert!("cmd:".parse::<BotSpec>().is_err());
    }
}
