//! `punct-referee client …`: a command-line client of the referee for
//! people. `new` creates a game and keeps its seat tokens in a local file
//! (mode 0600), so that two terminals sharing that file can each play a seat;
//! `show` draws the board with the engine's ASCII picture, `moves` lists the
//! legal moves, `play` submits a move for the seat to move, `watch` prints
//! the board live as moves arrive, `export`/`import` move game records in and
//! out, `games` lists the games the referee offers with their rule options,
//! `tournament …` are the organiser's commands for a tournament of
//! remote entrants ([`tournament`]), and `webhooks …` a platform's for its
//! webhook endpoints ([`webhooks`]).
//!
//! One file per subcommand (mini-redis' `cmd/` style), each making its calls
//! through [`crate::tools::rpc`] and printing; this file holds the flags and
//! the dispatch, [`tokens`] the token file, `display` what is printed about
//! a game.

mod display;
mod export;
mod games;
mod import;
mod moves;
mod new;
mod play;
mod show;
pub mod tokens;
pub mod tournament;
mod watch;
pub mod webhooks;

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Subcommand};

pub use self::tokens::{GameTokens, TokenFile, default_token_path};
use crate::service::grpc::games::WIRE_GAMES;
use crate::tools::engine::VariantArg;
use crate::tools::games::GameChoice;
use crate::tools::rpc::{self, ServerAddress};

/// Where the referee runs when no `--server` is given.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:50051";

/// Flags shared by every `client` command.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// The referee's address: HOST:PORT or http://HOST:PORT.
    #[arg(long, env = "PUNCT_SERVER", default_value = DEFAULT_SERVER)]
    pub server: String,
    /// The seat-token file (default: $XDG_CONFIG_HOME/punct/tokens.json or
    /// ~/.config/punct/tokens.json).
    #[arg(long, env = "PUNCT_TOKENS")]
    pub tokens: Option<PathBuf>,
    /// Connect with TLS, trusting this PEM CA certificate (the one that
    /// signed the referee's certificate).
    #[arg(long, env = "PUNCT_TLS_CA", value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// This client's PEM certificate, for a referee that asks for one
    /// (mutual TLS); with --tls-key.
    #[arg(
        long,
        env = "PUNCT_TLS_CERT",
        requires = "tls_key",
        requires = "tls_ca",
        value_name = "PEM"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, env = "PUNCT_TLS_KEY", requires = "tls_cert", value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// The platform key sent as `authorization: Bearer` (creating and
    /// importing games need one when the referee has a keys file). Prefer
    /// the variable: a flag shows in the process list.
    #[arg(long, env = "PUNCT_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: ClientCommand,
}

/// The `client` commands.
#[derive(Debug, Clone, Subcommand)]
pub enum ClientCommand {
    /// Create a game; print its id and board, and keep its seat tokens.
    New {
        /// The game (`--game dots` or `--game punto` with its options;
        /// PÜNCT by default).
        #[command(flatten)]
        choice: GameChoice,
        /// PÜNCT: basic or standard game.
        #[arg(long, value_enum, default_value = "standard")]
        variant: VariantArg,
        /// Labels, `key=value`, repeatable.
        #[arg(long = "label", value_parser = parse_label)]
        labels: Vec<(String, String)>,
    },
    /// Draw the board of a game, with its status.
    Show {
        /// The game's id.
        game: String,
    },
    /// List the legal moves of the player to move, one a line.
    Moves {
        /// The game's id (default: the last game created or imported with
        /// this token file).
        game: Option<String>,
    },
    /// Play a move (notation, e.g. `SE@E5:F5,G5`; Dots: `19,16` or
    /// `ground`; Punto: the cell `-1,0`) for the seat to move.
    #[command(allow_missing_positional = true)]
    Play {
        /// The game's id (default: the last game created or imported with
        /// this token file).
        game: Option<String>,
        /// The move in notation (a Punto cell may start with `-`: `-1,0`;
        /// see [`cells_last`]).
        notation: String,
        /// Play as this seat, by its name in the game (default: the seat to
        /// move, whose token must be in the token file).
        #[arg(long, value_parser = seat_parser())]
        seat: Option<String>,
    },
    /// Print the board after each move as it is played, until the game ends.
    Watch {
        /// The game's id.
        game: String,
    },
    /// Print (or write) the game record.
    Export {
        /// The game's id.
        game: String,
        /// Write to this file instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Create a game from a record file (`-` for standard input) and keep
    /// its seat tokens.
    Import {
        /// The record file.
        file: PathBuf,
    },
    /// List the games the referee offers, each with its seats and rule
    /// options: type, default, allowed values and meaning.
    Games,
    /// Organise a tournament of remote entrants: create (prints the
    /// entrants' keys), add-entrant, start, show, follow, cancel, export.
    #[command(subcommand)]
    Tournament(tournament::TournamentCommand),
    /// A platform's webhook endpoints: add (prints the secret once), list,
    /// delete, deliveries, replay.
    #[command(subcommand)]
    Webhooks(webhooks::WebhookCommand),
}

pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{s}` is not key=value"))
}

/// `--seat`: a seat's name in any game the tools play (`white`, `black`,
/// `red`, `blue`), checked against the game's own seats when it is played.
fn seat_parser() -> impl clap::builder::TypedValueParser<Value = String> {
    let names: Vec<&'static str> = WIRE_GAMES
        .iter()
        .flat_map(|g| g.kind().seat_names())
        .copied()
        .collect();
    PossibleValuesParser::new(names).map(|name| name.to_ascii_lowercase())
}

/// The command line with each move that starts with `-` (a Punto cell:
/// `-1,0`, `-2,-3`; [`crate::games::GameKind::minus_move`]) given to `client play` moved after a `--` at its end, so that
/// it is read as the move and not as a flag, wherever it was written
/// (`play -1,0 --seat red` is `play --seat red -- -1,0`). A command line
/// that already has a `--`, or is not `client … play`, is left as it is.
pub fn cells_last(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let is = |a: &std::ffi::OsString, word: &str| a.to_str() == Some(word);
    let Some(client) = args.iter().position(|a| is(a, "client")) else {
        return args;
    };
    let Some(play) = args[client..].iter().position(|a| is(a, "play")) else {
        return args;
    };
    let play = client + play;
    if args.iter().any(|a| is(a, "--")) {
        return args;
    }
    let negative_cell = |a: &std::ffi::OsString| {
        a.to_str()
            .and_then(|t| t.strip_prefix('-'))
            .is_some_and(|t| WIRE_GAMES.iter().any(|g| g.kind().minus_move(t)))
    };
    let (cells, mut out): (Vec<_>, Vec<_>) = args
        .into_iter()
        .enumerate()
        .partition(|(i, a)| *i > play && negative_cell(a));
    if cells.is_empty() {
        return out.into_iter().map(|(_, a)| a).collect();
    }
    out.push((usize::MAX, "--".into()));
    out.extend(cells);
    out.into_iter().map(|(_, a)| a).collect()
}

/// What every subcommand works with: a connected client, the address it
/// reached, and the token file.
pub struct Connection {
    /// The referee client.
    pub client: rpc::KeyedClient,
    /// Its connection, for clients of the other services (sends the key).
    pub channel: rpc::KeyedChannel,
    /// The referee's address (kept with new games' tokens).
    pub server: ServerAddress,
    /// The seat-token file.
    pub token_path: PathBuf,
}

impl Connection {
    /// Reads the address and the token file's place, then connects.
    async fn open(args: &ClientArgs) -> Result<Connection, String> {
        let tls = match &args.tls_ca {
            Some(ca) => Some(rpc::TlsClient::read(
                ca,
                args.tls_cert.as_deref().zip(args.tls_key.as_deref()),
            )?),
            None => None,
        };
        let credentials = match &args.key {
            Some(key) => rpc::Credentials::key(key)?,
            None => rpc::Credentials::default(),
        };
        let server = ServerAddress::parse_secure(
            "--server (or PUNCT_SERVER)",
            &args.server,
            tls.as_ref(),
            credentials,
        )?;
        let token_path = args
            .tokens
            .clone()
            .or_else(default_token_path)
            .ok_or("no token file: give --tokens (HOME is not set)")?;
        let channel = server.keyed_channel().await?;
        Ok(Connection {
            client: rpc::KeyedClient::new(channel.clone()),
            channel,
            server,
            token_path,
        })
    }
}

/// A refused call, as the client reports it.
fn refused(status: tonic::Status) -> String {
    rpc::describe_status(&status)
}

/// Runs one `client` command, printing as it goes.
pub async fn run(args: ClientArgs) -> Result<(), String> {
    let mut connection = Connection::open(&args).await?;
    let c = &mut connection;
    match args.command {
        ClientCommand::New {
            choice,
            variant,
            labels,
        } => new::run(c, &choice, variant, labels).await,
        ClientCommand::Show { game } => show::run(c, &game).await,
        ClientCommand::Moves { game } => moves::run(c, game).await,
        ClientCommand::Play {
            game,
            notation,
            seat,
        } => play::run(c, game, &notation, seat).await,
        ClientCommand::Watch { game } => watch::run(c, &game).await,
        ClientCommand::Export { game, output } => export::run(c, &game, output).await,
        ClientCommand::Import { file } => import::run(c, &file).await,
        ClientCommand::Games => games::run(c).await,
        ClientCommand::Tournament(command) => tournament::run(c, command).await,
        ClientCommand::Webhooks(command) => webhooks::run(c, command).await,
    }
}

#[cfg(test)]
mod tests {
    use super::cells_last;

    fn line(words: &[&str]) -> Vec<std::ffi::OsString> {
        words.iter().map(|w| w.into()).collect()
    }

    #[test]
    fn negative_cells_of_play_are_moved_after_a_double_dash() {
        let moved = |words: &[&str]| cells_last(line(words));
        assert_eq!(
            moved(&["p", "client", "play", "-1,0", "--seat", "red"]),
            line(&["p", "client", "play", "--seat", "red", "--", "-1,0"])
        );
        assert_eq!(
            moved(&["p", "client", "--tokens", "t", "play", "g", "-2,-3"]),
            line(&["p", "client", "--tokens", "t", "play", "g", "--", "-2,-3"])
        );
        for kept in [
            &["p", "client", "play", "1,0", "--seat", "red"][..],
            &["p", "client", "play", "--", "-1,0"],
            &["p", "client", "moves", "-1,0"],
            &["p", "legal", "--moves", "-1,0"],
            &["p", "client", "play", "-x,0"],
        ] {
            assert_eq!(moved(kept), line(kept));
        }
    }
}
