//! The `punct-referee` binary: the gRPC referee service (`serve`, the default
//! command), engine commands for people and tools (`perft`, `legal`, `show`),
//! a command-line client of the service (`client …`) and bot tournaments
//! played over RPC (`tournament`).

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use punct_referee::cli::{self, GameArgs};
use punct_referee::client::ClientArgs;
use punct_referee::config::ServeArgs;
use punct_referee::tournament::command::TournamentArgs;

#[derive(Debug, Parser)]
#[command(
    name = "punct-referee",
    version,
    about = "A referee for the game PÜNCT"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no command: serve, with these flags.
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the gRPC referee service (the default command).
    Serve(ServeArgs),
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
    /// Talk to a running referee: new, show, moves, play, watch, export, import.
    Client(ClientArgs),
    /// Play bots against each other over RPC and print a crosstable.
    Tournament(TournamentArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        None => return serve(&cli.serve),
        Some(Command::Serve(args)) => return serve(args),
        Some(Command::Client(args)) => return run_async(punct_referee::client::run(args.clone())),
        Some(Command::Tournament(args)) => {
            return run_async(punct_referee::tournament::command::run(args.clone()));
        }
        Some(command) => run_engine_command(command),
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

/// Runs the service until SIGTERM or ctrl-c, then drains and exits.
fn serve(args: &ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_max_level(args.log)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {}: {e}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        tracing::info!(address = %args.listen, "punct-referee serving gRPC");
        match punct_referee::server::run(listener, args.options(), shutdown_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// Runs a client-side command on a fresh runtime; its error goes to stderr
/// with exit code 1.
fn run_async(work: impl std::future::Future<Output = Result<(), String>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Completes on ctrl-c or (on Unix) SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// The engine commands: text to print, or an error.
fn run_engine_command(command: &Command) -> Result<String, String> {
    match command {
        Command::Serve(_) => Ok(String::new()),
        Command::Perft { game, depth } => cli::perft(game, *depth),
        Command::Legal { game } => cli::legal(game),
        Command::Show { game } => cli::show(game),
        Command::Client(_) | Command::Tournament(_) => Ok(String::new()),
    }
}
