//! Engine commands of the `punct-referee` binary: `perft`, `legal` and `show`,
//! so anyone can compare this engine with another implementation. PÜNCT
//! keeps its own fast paths (its perft, its record and picture); any other
//! game (`--game dots`) goes through the game-agnostic [`crate::games::Game`]
//! trait and its entry of the registry of games (`grpc::games::WIRE_GAMES`).

use std::collections::HashMap;
use std::fmt::Write as _;

use clap::{Args, ValueEnum};

use crate::games::GameRules;
use crate::games::punct::{EndOnSupply, Engine, GameRecord, RuleOptions, Variant};
use crate::games::{Game, Viewer};
use crate::service::grpc::convert;
use crate::service::grpc::games::Part;
use crate::service::grpc::pb::punct::v1 as ppb;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::games::{GameChoice, ToolRules, outcome_text};
use crate::tools::rpc;

/// The variant as a command-line value.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VariantArg {
    /// The learning game (`docs/rules/punct.md` §6 `BASIC`, the rulebook's part I).
    Basic,
    /// The full game.
    Standard,
}

/// The end-of-supply option as a command-line value.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EndOnSupplyArg {
    /// The game ends when the mover places their last piece.
    FirstExhausted,
    /// The game ends when both supplies are empty.
    BothExhausted,
}

/// PÜNCT's options of `variant` with `max_plies`, the others at their
/// defaults.
pub fn punct_options(variant: VariantArg, max_plies: u32) -> RuleOptions {
    RuleOptions {
        variant: match variant {
            VariantArg::Basic => Variant::Basic,
            VariantArg::Standard => Variant::Standard,
        },
        max_plies,
        ..RuleOptions::default()
    }
}

impl GameChoice {
    /// The rules chosen, the default game's (PÜNCT) from the command's
    /// `--variant` and `--max-plies`.
    pub fn rules_of_flags(&self, variant: VariantArg, max_plies: u32) -> Result<ToolRules, String> {
        self.rules(GameRules::new(punct_options(variant, max_plies)))
    }

    /// The `CreateGame` request of `client new`: PÜNCT of `variant` with
    /// its other options left to the server, any other game with every
    /// option explicit (and its seed, if one was given).
    pub fn create_request(
        &self,
        variant: VariantArg,
        labels: HashMap<String, String>,
    ) -> Result<pb::CreateGameRequest, String> {
        Ok(if self.is_default_game() {
            punct_request(punct_wire_options(variant), labels)
        } else {
            rpc::create_request_for(&self.rules(GameRules::default())?, labels, None)
        })
    }
}

/// PÜNCT's rule options for a variant, the others at their defaults.
fn punct_wire_options(variant: VariantArg) -> ppb::RuleOptions {
    ppb::RuleOptions {
        variant: match variant {
            VariantArg::Basic => ppb::Variant::Basic,
            VariantArg::Standard => ppb::Variant::Standard,
        } as i32,
        ..Default::default()
    }
}

/// A CreateGame request for PÜNCT under `options`, the others left to the
/// server.
fn punct_request(
    options: ppb::RuleOptions,
    labels: HashMap<String, String>,
) -> pb::CreateGameRequest {
    pb::CreateGameRequest {
        rules: Some(pb::GameRules {
            game: Some(pb::game_rules::Game::Punct(options)),
        }),
        labels,
        time_control: None,
        seed: String::new(),
        failure_policy: None,
        spectator_delay: None,
    }
}

impl From<ppb::RuleOptions> for ToolRules {
    /// PÜNCT under wire options (an unknown enum value reads as the
    /// default, as the server would refuse it anyway).
    fn from(options: ppb::RuleOptions) -> ToolRules {
        let wire = pb::GameRules {
            game: Some(pb::game_rules::Game::Punct(options)),
        };
        let rules = convert::game_rules(Some(&wire), &Part::Request).unwrap_or_default();
        ToolRules { rules, seed: None }
    }
}

/// The game to start from: the game, its rule options and moves played.
#[derive(Debug, Clone, Args)]
pub struct GameArgs {
    /// The game and the options of games other than PÜNCT.
    #[command(flatten)]
    pub choice: GameChoice,
    /// PÜNCT: basic or standard game.
    #[arg(long, value_enum, default_value = "standard")]
    pub variant: VariantArg,
    /// PÜNCT: when the supply phase ends the game (docs/rules/punct.md §6).
    #[arg(long, value_enum, default_value = "first-exhausted")]
    pub end_on_supply: EndOnSupplyArg,
    /// PÜNCT: turns after which the game is drawn; 0 = no limit.
    #[arg(long, default_value_t = 1000)]
    pub max_plies: u32,
    /// PÜNCT: occurrences of a position that draw the game; 0 = off.
    #[arg(long, default_value_t = 3)]
    pub repetition_limit: u32,
    /// Moves to play first, in notation, separated by `;` (or new lines);
    /// the value may start with `-` (a Punto cell: `--moves -1,0`).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub moves: String,
    /// Start from a game record file (the game's `docs/rules/<game>.md`) instead: its
    /// header sets the game and its options; --moves are played after its
    /// moves.
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
}

impl GameArgs {
    /// The rule options chosen.
    pub fn options(&self) -> RuleOptions {
        RuleOptions {
            variant: match self.variant {
                VariantArg::Basic => Variant::Basic,
                VariantArg::Standard => Variant::Standard,
            },
            end_on_supply: match self.end_on_supply {
                EndOnSupplyArg::FirstExhausted => EndOnSupply::FirstExhausted,
                EndOnSupplyArg::BothExhausted => EndOnSupply::BothExhausted,
            },
            max_plies: self.max_plies,
            repetition_limit: self.repetition_limit,
        }
    }

    /// Plays the moves from the start, refusing at the first bad one with its
    /// turn number and reason.
    pub fn game(&self) -> Result<Engine, String> {
        let mut game = match &self.record {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Engine::from_record_text(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            None => Engine::new(self.options()),
        };
        for (i, text) in self
            .moves
            .split([';', '\n'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .enumerate()
        {
            game.play_notation(text)
                .map_err(|e| format!("move {} `{text}`: {e}", i + 1))?;
        }
        Ok(game)
    }

    /// Whether the game is PÜNCT (its own engine paths).
    fn is_punct(&self) -> bool {
        self.choice.game == "punct" && self.record_game().is_none_or(|g| g == "punct")
    }

    /// The `game:` of the record file, if one is given and names a game.
    fn record_game(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.record.as_ref()?).ok()?;
        let value = text
            .lines()
            .map(str::trim)
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "game"))?
            .1;
        Some(value.trim().to_ascii_lowercase())
    }

    /// Any game, through the game-agnostic trait: from the record, or from
    /// the start of the chosen rules, then --moves.
    pub fn any_game(&self) -> Result<Box<dyn Game>, String> {
        let rules: ToolRules = self.choice.rules(GameRules::new(self.options()))?;
        let mut game = match &self.record {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                crate::service::grpc::games::catalog()
                    .import(&text, rules.setup())
                    .map_err(|e| format!("{}: {e}", path.display()))?
                    .game
            }
            None => rules.start()?,
        };
        let tool = crate::tools::games::tool_game(game.rules().game_name())
            .ok_or_else(|| format!("the tools do not play {}", game.rules().game_name()))?;
        for (i, text) in split_moves(&self.moves).enumerate() {
            let input = tool
                .kind()
                .notation(text)
                .ok_or_else(|| format!("move {} `{text}`: not a {} move", i + 1, tool.name()))?;
            game.play(&input)
                .map_err(|e| format!("move {} `{text}`: {e}", i + 1))?;
        }
        Ok(game)
    }
}

/// The moves of `--moves`: separated by `;` or new lines.
fn split_moves(text: &str) -> impl Iterator<Item = &str> {
    text.split([';', '\n'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Counts the legal move sequences of each length up to `depth` from
/// `game`, through the game-agnostic trait (a copy per move tried).
fn any_perft(game: &dyn Game, depth: u32) -> Vec<u64> {
    fn walk(game: &dyn Game, level: usize, counts: &mut [u64]) {
        for report in game.legal_moves() {
            counts[level] += 1;
            if level + 1 < counts.len() {
                let mut next = game.clone_box();
                if next.play(&report.detail.to_input()).is_ok() {
                    walk(&*next, level + 1, counts);
                }
            }
        }
    }
    let mut counts = vec![0u64; depth as usize];
    if depth > 0 {
        walk(game, 0, &mut counts);
    }
    counts
}

/// `perft`: one line per depth, `depth D: COUNT`.
pub fn perft(args: &GameArgs, depth: u32) -> Result<String, String> {
    let counts = if args.is_punct() {
        args.game()?.perft(depth)
    } else {
        any_perft(&*args.any_game()?, depth)
    };
    let mut out = String::new();
    for (d, n) in counts.iter().enumerate() {
        let _ = writeln!(out, "depth {}: {n}", d + 1);
    }
    Ok(out)
}

/// `legal`: the legal moves in canonical notation, sorted, one a line; or the
/// outcome when the game is over.
pub fn legal(args: &GameArgs) -> Result<String, String> {
    if !args.is_punct() {
        let game = args.any_game()?;
        if let Some(outcome) = game.outcome() {
            return Ok(format!(
                "game over: {}\n",
                outcome_text(game.seat_names(), &outcome)
            ));
        }
        let mut out = String::new();
        for report in game.legal_moves() {
            let _ = writeln!(out, "{}", report.detail.notation);
        }
        return Ok(out);
    }
    let game = args.game()?;
    if let Some(outcome) = game.outcome() {
        return Ok(format!("game over: {outcome}\n"));
    }
    let pos = game.position();
    let mut lines: Vec<String> = game
        .legal_moves()
        .into_iter()
        .filter_map(|m| pos.notate(m))
        .map(|n| n.to_string())
        .collect();
    lines.sort();
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

/// `show`: the board after the moves, and the game record; or, with `svg`,
/// only an SVG picture of the board (last move and winning chain highlighted).
pub fn show(args: &GameArgs, svg: bool) -> Result<String, String> {
    if !args.is_punct() {
        return show_any(&*args.any_game()?, svg);
    }
    let game = args.game()?;
    if svg {
        return Ok(crate::games::punct::svg::game_svg(&game));
    }
    let mut out = crate::games::punct::render::ascii(game.position());
    if let Some(outcome) = game.outcome() {
        let _ = writeln!(out, "game over: {outcome}");
    }
    let record: GameRecord = game.record();
    let _ = write!(out, "\n{record}");
    Ok(out)
}

/// `show` of any game: its picture, its outcome, its record (with the seed
/// once over); or its SVG.
fn show_any(game: &dyn Game, svg: bool) -> Result<String, String> {
    let snapshot = game.snapshot(Viewer::Spectator);
    if svg {
        let outcome = game.outcome();
        return Ok(snapshot.svg(game.last_move().as_ref(), outcome.as_ref()));
    }
    let tool = crate::tools::games::tool_game(game.rules().game_name())
        .ok_or_else(|| format!("the tools do not play {}", game.rules().game_name()))?;
    let mut out = tool.kind().picture(&snapshot);
    if let Some(outcome) = game.outcome() {
        let _ = writeln!(
            out,
            "game over: {}",
            outcome_text(game.seat_names(), &outcome)
        );
    }
    let _ = write!(out, "\n{}", game.record(&[], Viewer::Spectator));
    Ok(out)
}
