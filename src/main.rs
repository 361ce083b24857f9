//! The `punct-referee` binary: the gRPC referee service (`serve`, the default
//! command) and engine commands for people and tools (`perft`, `legal`, `show`).

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use punct_referee::cli::{self, GameArgs};
use punct_referee::config::ServeArgs;

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
        /// Print an SVG picture of the board instead of text.
        #[arg(long)]
        svg: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        None => return serve(&cli.serve),
        Some(Command::Serve(args)) => return serve(args),
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
        Command::Show { game, svg } => cli::show(game, *svg),
    }
}
