//! The command line of the `punct-referee` binary: the gRPC referee service
//! (`serve`, the default command), its container health check (`health`),
//! engine commands for people and tools (`perft`, `legal`, `show`), a
//! command-line client of the service (`client …`), bot tournaments played
//! over RPC (`tournament`) and a load generator (`load`).
//!
//! It lives in the library, and `src/main.rs` only calls [`main`]: the
//! futures each command drives are then compiled once, here, rather than
//! again in the binary's own crate.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use crate::service::config::ServeArgs;
use crate::service::telemetry;
use crate::tools::client::ClientArgs;
use crate::tools::engine::{self, GameArgs};
use crate::tools::load::LoadArgs;
use crate::tools::rpc::{ServerAddress, error_chain};
use crate::tools::tournament::command::{EntrantArgs, TournamentArgs};
use clap::{Parser, Subcommand};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

#[derive(Debug, Parser)]
#[command(
    name = "punct-referee",
    version,
    about = format!(
        "A game referee service for {}",
        crate::service::grpc::games::titles()
    )
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
    Serve(Box<ServeArgs>),
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
    /// Ask a running server's gRPC health service whether it serves (exit 0)
    /// or not (exit 1): the container health check.
    Health {
        /// The server to ask (`host:port` or `http://host:port`).
        #[arg(
            long,
            env = "PUNCT_REFEREE_HEALTH_ADDRESS",
            default_value = "http://127.0.0.1:50051"
        )]
        address: String,
        /// The service to ask about (empty: the server as a whole).
        #[arg(long, default_value = crate::service::SERVICE_NAME)]
        service: String,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 3)]
        timeout_secs: u64,
        /// Connect with TLS, trusting this PEM CA certificate.
        #[arg(long, env = "PUNCT_REFEREE_HEALTH_TLS_CA", value_name = "PEM")]
        tls_ca: Option<std::path::PathBuf>,
    },
    /// Talk to a running referee: new, show, moves, play, watch, export,
    /// import, games, organise tournaments (`client tournament …`) and
    /// manage webhook endpoints (`client webhooks …`).
    Client(ClientArgs),
    /// Play bots against each other over RPC and print a crosstable.
    Tournament(TournamentArgs),
    /// Play one bot as an entrant of a tournament held by a referee.
    Entrant(EntrantArgs),
    /// Make a platform key: print it, and the keys-file line that lets it
    /// in (appended to --file when given; docs/SECURITY.md).
    Keys {
        /// The key's name (what logs, spans and metrics show).
        #[arg(long)]
        name: String,
        /// A scope of the key: games:create, games:admin,
        /// tournaments:manage or read (repeat for several).
        #[arg(long = "scope", value_parser = parse_scope)]
        scopes: Vec<crate::service::edge::access::Scope>,
        /// Append the line to this keys file (created if missing); then
        /// only the key is printed.
        #[arg(long)]
        file: Option<std::path::PathBuf>,
    },
    /// Load a server with concurrent games and report moves per second,
    /// latency and the ratio to a no-op RPC (docs/BENCHMARKS.md).
    Load(LoadArgs),
    /// Check a game record and its signed receipt offline with the
    /// referee's public keys (docs/RECEIPTS.md): exit 0 verified, 1 not
    /// (the reason on stderr), 2 a file could not be read.
    Verify(crate::tools::verify::VerifyArgs),
    /// The referee key that signs receipts: rotate it, or show its public
    /// keys.
    #[command(subcommand)]
    RefereeKey(crate::tools::verify::KeyCommand),
}

/// Parses the command line and runs the command; what the binary returns.
pub fn main() -> ExitCode {
    let cli = Cli::parse_from(crate::tools::client::cells_last(
        std::env::args_os().collect(),
    ));
    if let Some(
        Command::Client(_)
        | Command::Health { .. }
        | Command::Keys { .. }
        | Command::Verify(_)
        | Command::RefereeKey(_)
        | Command::Perft { .. }
        | Command::Legal { .. }
        | Command::Show { .. },
    ) = &cli.command
    {
        die_quietly_on_closed_stdout();
    }
    let result = match &cli.command {
        None => return serve(&cli.serve),
        Some(Command::Serve(args)) => return serve(args),
        Some(Command::Client(args)) => {
            return run_async(crate::tools::client::run(args.clone()));
        }
        Some(Command::Tournament(args)) => {
            return run_async(crate::tools::tournament::command::run(args.clone()));
        }
        Some(Command::Entrant(args)) => {
            return run_async(crate::tools::tournament::command::run_entrant(args.clone()));
        }
        Some(Command::Load(args)) => {
            return run_async(crate::tools::load::run(args.clone()));
        }
        Some(Command::Health {
            address,
            service,
            timeout_secs,
            tls_ca,
        }) => {
            return health(
                address,
                service,
                Duration::from_secs(*timeout_secs),
                tls_ca.as_deref(),
            );
        }
        Some(Command::Keys { name, scopes, file }) => new_key(name, scopes, file.as_deref()),
        Some(Command::Verify(args)) => return crate::tools::verify::run(args),
        Some(Command::RefereeKey(command)) => crate::tools::verify::key_command(command),
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

/// Lets the printing commands end like other Unix tools when their reader
/// goes away (`client new | head -1`): Rust ignores SIGPIPE, so the next
/// `println!` fails with a broken pipe and panics (exit 101); this hook ends
/// the process quietly with success instead. SIGPIPE itself stays ignored:
/// with its default action, a write to a socket the server closed (a
/// plaintext client at a TLS port) would kill the client without a word.
/// Not for the commands that run bots over pipes (`tournament`, `entrant`,
/// `load`) or serve: they report a closed pipe as an error of their own.
fn die_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        // std's message: "failed printing to stdout: Broken pipe (os error 32)".
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// A multi-threaded tokio runtime, or `None` after saying on stderr why it
/// could not start.
fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .inspect_err(|e| eprintln!("error: cannot start the runtime: {e}"))
        .ok()
}

/// Runs the service until SIGTERM or ctrl-c, then drains, flushes the
/// telemetry exporters and exits.
fn serve(args: &ServeArgs) -> ExitCode {
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async {
        let otlp = telemetry::otlp_traces_configured();
        let telemetry = match telemetry::init(args.log_format, args.log, otlp) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let code = serve_with_telemetry(args, telemetry.exports_traces()).await;
        // The exporter blocks while flushing and needs the runtime running.
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        code
    })
}

async fn serve_with_telemetry(args: &ServeArgs, exports_traces: bool) -> ExitCode {
    let metrics = if args.no_metrics {
        None
    } else {
        match telemetry::install_metrics() {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::error!("cannot record metrics: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let http = if args.no_http {
        None
    } else {
        let address = args.http_address();
        match tokio::net::TcpListener::bind(address).await {
            Ok(listener) => {
                let bound = listener.local_addr().unwrap_or(address);
                tracing::info!(
                    address = %bound,
                    metrics = metrics.is_some(),
                    "serving HTTP: spectator page at /, Prometheus metrics at /metrics"
                );
                Some(crate::service::HttpPort { listener, metrics })
            }
            Err(e) => {
                tracing::error!("cannot listen for HTTP on {address}: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    let address = listener.local_addr().unwrap_or(args.listen);
    tracing::info!(%address, otlp_traces = exports_traces, "punct-referee serving gRPC");
    match crate::service::run_with_http(listener, http, args.options(), shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Asks `address` for the health of `service` (`grpc.health.v1.Check`);
/// success only if it is SERVING. For container health checks.
fn health(
    address: &str,
    service: &str,
    timeout: Duration,
    tls_ca: Option<&std::path::Path>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let check = async {
        let tls = tls_ca
            .map(|ca| crate::tools::rpc::TlsClient::read(ca, None))
            .transpose()?;
        let channel =
            ServerAddress::parse_secure("--address", address, tls.as_ref(), Default::default())?
                .endpoint()
                .connect_timeout(timeout)
                .timeout(timeout)
                .connect()
                .await
                .map_err(|e| format!("cannot connect to {address}: {}", error_chain(&e)))?;
        let mut client = HealthClient::new(channel);
        let answer = client
            .check(HealthCheckRequest {
                service: service.to_string(),
            })
            .await
            .map_err(|e| format!("health check failed: {}", status_chain(&e)))?;
        let status = answer.into_inner().status();
        Ok::<_, String>(status)
    };
    match runtime.block_on(check) {
        Ok(ServingStatus::Serving) => {
            println!("SERVING");
            ExitCode::SUCCESS
        }
        Ok(other) => {
            println!("{}", other.as_str_name());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A tonic status's message and its causes (a TLS or connection failure
/// carries its reason only in the source chain).
fn status_chain(status: &tonic::Status) -> String {
    use std::error::Error as _;
    let mut text = status.message().to_string();
    if let Some(source) = status.source() {
        let causes = error_chain(source);
        if !text.ends_with(&causes) {
            text = if text.is_empty() {
                causes
            } else {
                format!("{text}: {causes}")
            };
        }
    }
    text
}

/// Runs a client-side command on a fresh runtime; its error goes to stderr
/// with exit code 1.
fn run_async(work: impl std::future::Future<Output = Result<(), String>>) -> ExitCode {
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
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

/// A scope named on the command line.
fn parse_scope(text: &str) -> Result<crate::service::edge::access::Scope, String> {
    use crate::service::edge::access::Scope;
    Scope::parse(text).ok_or_else(|| {
        format!(
            "`{text}` is not a scope: use {}",
            Scope::ALL.map(Scope::as_str).join(", ")
        )
    })
}

/// `keys`: a new key and its line (see [`Command::Keys`]).
fn new_key(
    name: &str,
    scopes: &[crate::service::edge::access::Scope],
    file: Option<&std::path::Path>,
) -> Result<String, String> {
    let (key, line) = crate::service::edge::access::new_key(name, scopes);
    let Some(path) = file else {
        return Ok(format!("{key}\n{line}\n"));
    };
    // The new line must parse with the others before the file changes.
    let mut text = std::fs::read_to_string(path).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&line);
    text.push('\n');
    crate::service::edge::access::Keyring::parse(&text).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("{key}\n"))
}

/// The engine commands: text to print, or an error.
fn run_engine_command(command: &Command) -> Result<String, String> {
    match command {
        Command::Serve(_)
        | Command::Health { .. }
        | Command::Client(_)
        | Command::Tournament(_)
        | Command::Entrant(_)
        | Command::Keys { .. }
        | Command::Verify(_)
        | Command::RefereeKey(_)
        | Command::Load(_) => Ok(String::new()),
        Command::Perft { game, depth } => engine::perft(game, *depth),
        Command::Legal { game } => engine::legal(game),
        Command::Show { game, svg } => engine::show(game, *svg),
    }
}
