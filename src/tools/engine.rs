//! Engine commands of the `punct-referee` binary: `perft`, `legal` and `show`,
//! so anyone can compare this engine with another implementation.

use std::fmt::Write as _;

use clap::{Args, ValueEnum};

use crate::games::punct::{EndOnSupply, Game, GameRecord, RuleOptions, Variant};

/// The variant as a command-line value.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VariantArg {
    /// The learning game (RULES.md part I).
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

/// The game to start from: variant, rule options and moves played.
#[derive(Debug, Clone, Args)]
pub struct GameArgs {
    /// Basic or standard game.
    #[arg(long, value_enum, default_value = "standard")]
    pub variant: VariantArg,
    /// When the supply phase ends the game (RULES.md §6).
    #[arg(long, value_enum, default_value = "first-exhausted")]
    pub end_on_supply: EndOnSupplyArg,
    /// Turns after which the game is drawn; 0 = no limit.
    #[arg(long, default_value_t = 1000)]
    pub max_plies: u32,
    /// Occurrences of a position that draw the game; 0 = off.
    #[arg(long, default_value_t = 3)]
    pub repetition_limit: u32,
    /// Moves to play first, in notation, separated by `;` (or new lines).
    #[arg(long, default_value = "")]
    pub moves: String,
    /// Start from a game record file (RULES.md §7) instead: its header sets
    /// the variant and options; --moves are played after its moves.
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
    pub fn game(&self) -> Result<Game, String> {
        let mut game = match &self.record {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Game::from_record_text(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            None => Game::new(self.options()),
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
}

/// `perft`: one line per depth, `depth D: COUNT`.
pub fn perft(args: &GameArgs, depth: u32) -> Result<String, String> {
    let game = args.game()?;
    let mut out = String::new();
    for (d, n) in game.perft(depth).iter().enumerate() {
        let _ = writeln!(out, "depth {}: {n}", d + 1);
    }
    Ok(out)
}

/// `legal`: the legal moves in canonical notation, sorted, one a line; or the
/// outcome when the game is over.
pub fn legal(args: &GameArgs) -> Result<String, String> {
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
