//! The games the tools play: the service's registry of games
//! ([`WIRE_GAMES`]), each entry's [`WireGame`] for what the tools read and
//! write on the wire and its engine's [`GameKind`](crate::games::GameKind)
//! for what they do locally (seats, a move in notation as an engine input,
//! the text picture of a state, the greedy bot). Everything else the tools
//! do (perft, legal moves, records, SVG, the random bot, tournaments, the
//! load pool) goes through the [`Game`] trait or the referee, so a new game
//! needs nothing here but the flags of its options ([`GameChoice`]);
//! docs/BOTS.md ("Adding a game to the tools") lists the steps.
//!
//! [`ToolRules`] is a game and its options as the tools carry them: the
//! engine's [`GameRules`] (for the local engine and the bots), the seed of
//! a seeded game the tool supplies (so a bot can follow the setup), and the
//! wire form for `CreateGame`, made by the service's own conversion.

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, ValueEnum};

use crate::games::dots::{self, Start};
use crate::games::{self, Game, GameRules, Outcome, Setup, punto};
use crate::service::grpc::convert;
use crate::service::grpc::games::{WIRE_GAMES, WireGame, default_game, wire_game_of};
use crate::service::grpc::pb::referee::v1 as pb;

/// The game called `name` (any case), from the registry.
pub fn tool_game(name: &str) -> Option<&'static dyn WireGame> {
    WIRE_GAMES
        .iter()
        .copied()
        .find(|g| g.name().eq_ignore_ascii_case(name))
}

/// The game of wire `rules` (the default game, the registry's first, when
/// none is named, as the server reads it).
pub fn game_of_wire(rules: Option<&pb::GameRules>) -> &'static dyn WireGame {
    rules
        .and_then(|r| r.game.as_ref())
        .and_then(wire_game_of)
        .unwrap_or_else(default_game)
}

/// The `--game` values: the registry's games, by name, each with its title.
fn game_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(
        WIRE_GAMES
            .iter()
            .map(|g| PossibleValue::new(g.name()).help(g.title())),
    )
}

/// Dots' start position as a command-line value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartArg {
    /// No start dots.
    Empty,
    /// One cross in the middle.
    Cross,
    /// A cross and a swapped cross.
    DoubleCross,
    /// Four crosses drawn from the seed (`--game-seed`).
    QuadrupleCross,
}

impl StartArg {
    fn start(self) -> Start {
        match self {
            StartArg::Empty => Start::Empty,
            StartArg::Cross => Start::Cross,
            StartArg::DoubleCross => Start::DoubleCross,
            StartArg::QuadrupleCross => Start::QuadrupleCross,
        }
    }
}

/// `--game` and the options of the games other than the default game
/// (whose flags each command keeps as before), shared by every tool.
#[derive(Debug, Clone, Args)]
pub struct GameChoice {
    /// Which game.
    #[arg(long, default_value = default_game().name(), value_parser = game_parser())]
    pub game: String,
    /// Dots: the number of columns (4..=64).
    #[arg(long, default_value_t = 39)]
    pub width: u8,
    /// Dots: the number of rows (4..=64).
    #[arg(long, default_value_t = 32)]
    pub height: u8,
    /// Dots: the start position.
    #[arg(long, value_enum, default_value = "cross")]
    pub start: StartArg,
    /// Dots: moves after which the game ends; 0 = no limit.
    #[arg(long, default_value_t = 0)]
    pub max_moves: u32,
    /// Punto: 2, 3 or 4 players.
    #[arg(long, default_value_t = 2)]
    pub players: u32,
    /// Punto: the team variant (4 players, seats 1+3 against 2+4).
    #[arg(long)]
    pub team: bool,
    /// Punto: round wins that win the match (1..=9).
    #[arg(long, default_value_t = 2)]
    pub rounds_to_win: u32,
    /// Punto: rounds after which the match ends; 0 = no limit.
    #[arg(long, default_value_t = 0)]
    pub max_rounds: u32,
    /// The seed of a seeded game (Dots' quadruple-cross, every Punto
    /// match), 64 hex digits; without one a tool that creates games lets
    /// the server draw it (or draws one itself where it must follow the
    /// setup).
    #[arg(long, value_name = "HEX")]
    pub game_seed: Option<String>,
}

impl GameChoice {
    /// Whether `--game` is the default game (whose options are each
    /// command's own flags).
    pub fn is_default_game(&self) -> bool {
        self.game == default_game().name()
    }

    /// The rules chosen; `default` are the default game's, from the
    /// command's own flags.
    pub fn rules(&self, default: GameRules) -> Result<ToolRules, String> {
        let rules = match self.game.as_str() {
            _ if self.is_default_game() => default,
            "dots" => GameRules::new(
                dots::RuleOptions::new(self.width, self.height, self.start.start(), self.max_moves)
                    .map_err(|e| e.to_string())?,
            ),
            "punto" => GameRules::new(
                punto::RuleOptions::new(
                    self.players,
                    self.team,
                    self.rounds_to_win,
                    self.max_rounds,
                    &[],
                )
                .map_err(|e| format!("--{}: {e}", e.field().replace('_', "-")))?,
            ),
            other => return Err(format!("--game: the tools have no options for {other}")),
        };
        let seed =
            match &self.game_seed {
                None => None,
                Some(text) => Some(games::parse_seed(text).ok_or_else(|| {
                    format!("--game-seed: `{text}` is not 64 hex digits (32 bytes)")
                })?),
            };
        if seed.is_some() && !rules.rules().seeded() {
            return Err(format!(
                "--game-seed: {} with these options has no random setup",
                rules.game_name()
            ));
        }
        Ok(ToolRules { rules, seed })
    }
}

/// A game and its options as the tools carry them (see the module comment).
#[derive(Debug, Clone)]
pub struct ToolRules {
    /// The engine's rules.
    pub rules: GameRules,
    /// The seed the tool supplies, for seeded rules.
    pub seed: Option<[u8; 32]>,
}

impl ToolRules {
    /// The game, from the registry.
    pub fn game(&self) -> &'static dyn WireGame {
        tool_game(self.rules.game_name()).unwrap_or_else(default_game)
    }

    /// The rules on the wire (the service's own conversion).
    pub fn wire(&self) -> pb::GameRules {
        convert::game_rules_pb(&self.rules)
    }

    /// The seed as `CreateGameRequest.seed` (empty: none).
    pub fn seed_hex(&self) -> String {
        self.seed.map(|s| games::hex(&s)).unwrap_or_default()
    }

    /// The setup a local engine starts from: the supplied seed, for seeded
    /// rules.
    pub fn setup(&self) -> Option<Setup> {
        self.seed.map(|seed| Setup {
            seed,
            supplied: true,
        })
    }

    /// The seats' names of a table of these rules, in seat order.
    pub fn seat_names(&self) -> &'static [&'static str] {
        let setup = self.setup().unwrap_or(Setup {
            seed: [0; 32],
            supplied: true,
        });
        let setup = self.seeded().then_some(setup);
        self.rules.rules().start(setup).seat_names()
    }

    /// Whether the rules are drawn from a seed.
    pub fn seeded(&self) -> bool {
        self.rules.rules().seeded()
    }

    /// The same rules with `seed` when they are seeded and none is
    /// supplied yet (a tool that must follow the setup draws its own).
    pub fn with_seed_if_needed(&self, seed: impl FnOnce() -> [u8; 32]) -> ToolRules {
        let mut rules = self.clone();
        if rules.seeded() && rules.seed.is_none() {
            rules.seed = Some(seed());
        }
        rules
    }

    /// A new local game of these rules.
    pub fn start(&self) -> Result<Box<dyn Game>, String> {
        if self.seeded() && self.seed.is_none() {
            return Err(format!(
                "{} ({}) is set up from a seed: give --game-seed HEX (64 hex digits)",
                self.rules.game_name(),
                self.rules.variant_name()
            ));
        }
        Ok(self.rules.rules().start(self.setup()))
    }
}

/// A finished game's outcome in words, with the seats' names: `red wins by
/// GROUND, scores 3-1`, `draw by MOVE_LIMIT`.
pub fn outcome_text(names: &[&str], outcome: &Outcome) -> String {
    let who = match outcome.winner() {
        Some(seat) => format!(
            "{} wins",
            names.get(seat.index()).copied().unwrap_or("a seat")
        ),
        None if outcome.winners.is_empty() => "draw".to_string(),
        None => {
            let team: Vec<&str> = outcome
                .winners
                .iter()
                .map(|seat| names.get(seat.index()).copied().unwrap_or("a seat"))
                .collect();
            format!("{} win", team.join(" and "))
        }
    };
    let mut text = format!("{who} by {}", outcome.reason);
    if !outcome.scores.is_empty() {
        let scores: Vec<String> = outcome.scores.iter().map(i64::to_string).collect();
        text.push_str(&format!(", scores {}", scores.join("-")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_game_reads_its_own_notation_and_names_its_seats() {
        let dots = tool_game("DOTS").unwrap();
        assert_eq!(dots.kind().seat_names(), ["red", "blue"]);
        assert!(dots.kind().notation("3,4").is_some());
        assert!(dots.kind().notation("SE@E1:E2,E3").is_none());
        let punct = tool_game("punct").unwrap();
        assert!(punct.kind().notation("SE@E1:E2,E3").is_some());
        assert!(matches!(
            dots.wire_move("ground").game,
            Some(pb::r#move::Game::Dots(_))
        ));
        assert!(tool_game("chess").is_none());
        let punto = tool_game("punto").unwrap();
        assert!(punto.kind().notation("-1,2").is_some());
        assert!(punto.kind().bots_read_state() && !dots.kind().bots_read_state());
        assert!(punto.kind().minus_move("1,2") && !dots.kind().minus_move("1,2"));
        assert!(matches!(
            punto.wire_move("0,0").game,
            Some(pb::r#move::Game::Punto(_))
        ));
    }

    #[test]
    fn punto_options_seats_and_seeds_are_checked() {
        let choice = |players, team, seed: Option<&str>| GameChoice {
            game: "punto".into(),
            width: 39,
            height: 32,
            start: StartArg::Cross,
            max_moves: 0,
            players,
            team,
            rounds_to_win: 3,
            max_rounds: 5,
            game_seed: seed.map(String::from),
        };
        let three = choice(3, false, None).rules(Default::default()).unwrap();
        assert_eq!(three.game().name(), "punto");
        assert_eq!(three.seat_names(), ["red", "orange", "blue"]);
        assert!(three.start().unwrap_err().contains("--game-seed"));
        let options = three.rules.get::<punto::RuleOptions>().unwrap();
        assert_eq!((options.rounds_to_win(), options.max_rounds()), (3, 5));
        let seed = "0f".repeat(32);
        let teams = choice(4, true, Some(&seed))
            .rules(Default::default())
            .unwrap();
        assert_eq!(teams.seat_names().len(), 4);
        assert_eq!(teams.start().unwrap().to_move().map(|s| s.index()), Some(0));
        assert_eq!(
            teams.wire().game,
            Some(pb::game_rules::Game::Punto(
                crate::service::grpc::pb::punto::v1::RuleOptions {
                    players: 4,
                    team: true,
                    rounds_to_win: Some(3),
                    max_rounds: 5,
                    entropy: Vec::new(),
                }
            ))
        );
        let refused = choice(3, true, None).rules(Default::default()).unwrap_err();
        assert!(refused.starts_with("--team: "), "{refused}");
        let refused = choice(5, false, None)
            .rules(Default::default())
            .unwrap_err();
        assert!(refused.starts_with("--players: "), "{refused}");
        let long = GameChoice {
            rounds_to_win: 10,
            ..choice(2, false, None)
        };
        assert!(
            long.rules(Default::default())
                .unwrap_err()
                .starts_with("--rounds-to-win: ")
        );
    }

    #[test]
    fn dots_options_and_seeds_are_checked() {
        let choice = |start, seed: Option<&str>| GameChoice {
            game: "dots".into(),
            width: 8,
            height: 8,
            start,
            max_moves: 0,
            players: 2,
            team: false,
            rounds_to_win: 2,
            max_rounds: 0,
            game_seed: seed.map(String::from),
        };
        let rules = choice(StartArg::Empty, None)
            .rules(Default::default())
            .unwrap();
        assert_eq!(rules.game().name(), "dots");
        assert!(rules.start().is_ok());
        let seed = "ab".repeat(32);
        assert!(
            choice(StartArg::Empty, Some(&seed))
                .rules(Default::default())
                .unwrap_err()
                .contains("no random setup")
        );
        let four = choice(StartArg::QuadrupleCross, None)
            .rules(Default::default())
            .unwrap();
        assert!(four.start().unwrap_err().contains("--game-seed"));
        let seeded = four.with_seed_if_needed(|| [7; 32]);
        assert_eq!(seeded.seed_hex(), "07".repeat(32));
        assert_eq!(seeded.start().unwrap().ply(), 0);
        let small = GameChoice {
            width: 3,
            ..choice(StartArg::Empty, None)
        };
        assert!(
            small
                .rules(Default::default())
                .unwrap_err()
                .contains("4..=64")
        );
    }
}
