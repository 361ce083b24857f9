//! The `punct-referee` binary: engine commands for people and tools.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use punct_referee::cli::{self, GameArgs};

#[derive(Debug, Parser)]
#[command(
    name = "punct-referee",
    version,
    about = "A referee for the game PÜNCT"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Count legal move sequences of each length up to --depth (perft).
    Perft {
        #[command(flatten)]
        game: GameArgs,
        /// Deepest sequence length to count.
        #[arg(long)]
        depth: u32,
    },
    /// List the legal moves after --moves, sorted, one a line.
    Legal {
        #[command(flatten)]
        game: GameArgs,
    },
    /// Draw the board after --moves and print the game record.
    Show {
        #[command(flatten)]
        game: GameArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Perft { game, depth } => cli::perft(game, *depth),
        Command::Legal { game } => cli::legal(game),
        Command::Show { game } => cli::show(game),
    };
    match result {
        Ok(text) => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
