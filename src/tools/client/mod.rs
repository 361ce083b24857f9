//! `punct-referee client …`: a command-line client of the referee for
//! people. `new` creates a game and keeps its seat tokens in a local file
//! (mode 0600), so that two terminals sharing that file can each play a seat;
//! `show` draws the board with the engine's ASCII picture, `moves` lists the
//! legal moves, `play` submits a move for the seat to move, `watch` prints
//! the board live as moves arrive, `export`/`import` move game records in and
//! out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use tokio_stream::StreamExt as _;
use tonic::transport::{Channel, Endpoint};
use tonic_types::StatusExt as _;

use crate::games::punct::{Game, GameRecord, render};
use crate::service::grpc::pb::punct::v1 as ppb;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;
use crate::tools::engine::VariantArg;

/// Where the referee runs when no `--server` is given.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:50051";

/// Flags shared by every `client` command.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// The referee's address.
    #[arg(long, env = "PUNCT_SERVER", default_value = DEFAULT_SERVER)]
    pub server: String,
    /// The seat-token file (default: $XDG_CONFIG_HOME/punct/tokens.json or
    /// ~/.config/punct/tokens.json).
    #[arg(long, env = "PUNCT_TOKENS")]
    pub tokens: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: ClientCommand,
}

/// A seat on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeatArg {
    /// The first player.
    White,
    /// The second player.
    Black,
}

/// The `client` commands.
#[derive(Debug, Clone, Subcommand)]
pub enum ClientCommand {
    /// Create a game; print its id and board, and keep its seat tokens.
    New {
        /// Basic or standard game.
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
        /// The game's id.
        game: String,
    },
    /// Play a move (notation, e.g. `SE@E5:F5,G5`) for the seat to move.
    Play {
        /// The game's id.
        game: String,
        /// The move in notation.
        notation: String,
        /// Play as this seat (default: the seat to move, whose token must be
        /// in the token file).
        #[arg(long, value_enum)]
        seat: Option<SeatArg>,
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
}

fn parse_label(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{s}` is not key=value"))
}

/// The seat tokens of the games this person created or imported.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TokenFile {
    /// Game id → its seats.
    pub games: BTreeMap<String, GameTokens>,
}

/// One game's tokens.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct GameTokens {
    /// The server the game lives on.
    pub server: String,
    /// White's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub white: Option<String>,
    /// Black's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub black: Option<String>,
}

/// The token file's default place.
pub fn default_token_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("punct").join("tokens.json"))
}

impl TokenFile {
    /// Reads the file; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<TokenFile, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{}: not a token file: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Writes the file readable by its owner only (0600), through a temporary
    /// file renamed over it, so a crash never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let tmp = path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp).map_err(fail)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(fail)?;
        }
        file.write_all(text.as_bytes()).map_err(fail)?;
        file.sync_all().map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(fail)
    }
}

/// A refused call as a person reads it: code, message, and the machine
/// reason from the ErrorInfo details when there is one.
pub fn describe_status(status: &tonic::Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(info) = status.get_details_error_info() {
        let _ = write!(text, " [{}]", info.reason);
    }
    text
}

async fn connect(server: &str) -> Result<RefereeServiceClient<Channel>, String> {
    let endpoint =
        Endpoint::from_shared(server.to_string()).map_err(|e| format!("`{server}`: {e}"))?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("cannot reach the referee at {server}: {e}"))?;
    Ok(RefereeServiceClient::new(channel))
}

/// A PÜNCT seat's name for people (seat 1 is white, 2 black).
fn seat_name(seat: u32) -> &'static str {
    match seat {
        1 => "White",
        2 => "Black",
        _ => "nobody",
    }
}

fn outcome_text(outcome: &pb::Outcome) -> String {
    match outcome.winners.as_slice() {
        [winner] if !outcome.draw => {
            format!("{} wins by {}", seat_name(*winner), outcome.reason)
        }
        _ => format!("draw by {}", outcome.reason),
    }
}

/// The board picture and a status line of a snapshot.
fn describe_game(game: &pb::Game) -> String {
    let mut out = String::new();
    if let Some(pb::game_state::Game::Punct(state)) =
        game.state.as_ref().and_then(|s| s.game.as_ref())
    {
        out.push_str(&state.picture);
    }
    let _ = writeln!(out, "game {} at ply {}", game.game_id, game.ply);
    match &game.outcome {
        Some(o) if game.status == pb::GameStatus::Finished as i32 => {
            let _ = writeln!(out, "game over: {}", outcome_text(o));
        }
        _ => {
            let _ = writeln!(out, "{} to move", seat_name(game.to_move));
        }
    }
    out
}

fn notation_of(m: &pb::Move) -> String {
    match &m.game {
        Some(pb::r#move::Game::Punct(p)) => p.notation.clone(),
        None => String::new(),
    }
}

/// Runs one `client` command, printing as it goes.
pub async fn run(args: ClientArgs) -> Result<(), String> {
    let token_path = args
        .tokens
        .clone()
        .or_else(default_token_path)
        .ok_or("no token file: give --tokens (HOME is not set)")?;
    let mut client = connect(&args.server).await?;
    let rpc = |s: tonic::Status| describe_status(&s);
    let mut stdout = std::io::stdout();
    match args.command {
        ClientCommand::New { variant, labels } => {
            let rules = ppb::RuleOptions {
                variant: match variant {
                    VariantArg::Basic => ppb::Variant::Basic,
                    VariantArg::Standard => ppb::Variant::Standard,
                } as i32,
                ..Default::default()
            };
            let created = client
                .create_game(pb::CreateGameRequest {
                    rules: Some(pb::GameRules {
                        game: Some(pb::game_rules::Game::Punct(rules)),
                    }),
                    labels: labels.into_iter().collect(),
                    time_control: None,
                    seed: String::new(),
                })
                .await
                .map_err(rpc)?
                .into_inner();
            let game = created.game.unwrap_or_default();
            keep_tokens(&token_path, &args.server, &game.game_id, &created.seats)?;
            println!("{}", game.game_id);
            eprintln!("seat tokens kept in {}", token_path.display());
            print!("{}", describe_game(&game));
        }
        ClientCommand::Show { game } => {
            let game = client
                .get_game(pb::GetGameRequest {
                    game_id: game,
                    token: String::new(),
                })
                .await
                .map_err(rpc)?
                .into_inner()
                .game
                .unwrap_or_default();
            print!("{}", describe_game(&game));
        }
        ClientCommand::Moves { game } => {
            let moves = client
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: game,
                    seat: 0,
                    token: String::new(),
                })
                .await
                .map_err(rpc)?
                .into_inner();
            let mut text = String::new();
            for m in &moves.moves {
                let _ = writeln!(text, "{}", notation_of(m));
            }
            let _ = stdout.write_all(text.as_bytes());
        }
        ClientCommand::Play {
            game,
            notation,
            seat,
        } => {
            let tokens = TokenFile::load(&token_path)?;
            let kept = tokens.games.get(&game).cloned().unwrap_or_default();
            let current = client
                .get_game(pb::GetGameRequest {
                    game_id: game.clone(),
                    token: String::new(),
                })
                .await
                .map_err(rpc)?
                .into_inner()
                .game
                .unwrap_or_default();
            let seat = match seat {
                Some(s) => s,
                None => match current.to_move {
                    1 => SeatArg::White,
                    2 => SeatArg::Black,
                    _ => return Err(format!("game {game} is over")),
                },
            };
            let token = match seat {
                SeatArg::White => kept.white,
                SeatArg::Black => kept.black,
            }
            .ok_or_else(|| {
                format!(
                    "no {} token for game {game} in {}",
                    if seat == SeatArg::White {
                        "White"
                    } else {
                        "Black"
                    },
                    token_path.display()
                )
            })?;
            let reply = client
                .submit_move(pb::SubmitMoveRequest {
                    game_id: game.clone(),
                    token,
                    r#move: Some(pb::Move {
                        game: Some(pb::r#move::Game::Punct(ppb::Move {
                            notation,
                            ..Default::default()
                        })),
                    }),
                    expected_ply: current.ply,
                    request_id: String::new(),
                })
                .await
                .map_err(rpc)?
                .into_inner();
            let played = reply.r#move.as_ref().map(notation_of).unwrap_or_default();
            println!(
                "{} played {played} (ply {})",
                seat_name(reply.seat),
                reply.ply
            );
            match &reply.outcome {
                Some(o) if reply.status == pb::GameStatus::Finished as i32 => {
                    println!("game over: {}", outcome_text(o));
                }
                _ => println!("{} to move", seat_name(reply.to_move)),
            }
        }
        ClientCommand::Watch { game } => watch(&mut client, game).await?,
        ClientCommand::Export { game, output } => {
            let record = client
                .export_game(pb::ExportGameRequest {
                    game_id: game,
                    token: String::new(),
                })
                .await
                .map_err(rpc)?
                .into_inner()
                .record;
            match output {
                Some(path) => {
                    std::fs::write(&path, record).map_err(|e| format!("{}: {e}", path.display()))?
                }
                None => {
                    let _ = stdout.write_all(record.as_bytes());
                }
            }
        }
        ClientCommand::Import { file } => {
            let record = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))?
            } else {
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?
            };
            let imported = client
                .import_game(pb::ImportGameRequest {
                    record,
                    labels: Default::default(),
                })
                .await
                .map_err(rpc)?
                .into_inner();
            let game = imported.game.unwrap_or_default();
            keep_tokens(&token_path, &args.server, &game.game_id, &imported.seats)?;
            println!("{}", game.game_id);
            print!("{}", describe_game(&game));
        }
    }
    Ok(())
}

fn keep_tokens(
    path: &Path,
    server: &str,
    game_id: &str,
    seats: &[pb::SeatToken],
) -> Result<(), String> {
    let mut file = TokenFile::load(path)?;
    let token = |seat: u32| {
        seats
            .iter()
            .find(|t| t.seat == seat)
            .map(|t| t.token.clone())
    };
    file.games.insert(
        game_id.to_string(),
        GameTokens {
            server: server.to_string(),
            white: token(1),
            black: token(2),
        },
    );
    file.save(path)
}

/// Follows a game from its first move, keeping a local engine copy so each
/// board drawn is exactly the position after that move; moves before the
/// current ply are replayed silently. A resync snapshot (this watcher fell
/// behind) is caught up from the exported record.
/// The game's record as the server exports it, read back.
async fn server_record(
    client: &mut RefereeServiceClient<Channel>,
    game_id: &str,
) -> Result<GameRecord, String> {
    let record = client
        .export_game(pb::ExportGameRequest {
            game_id: game_id.to_string(),
            token: String::new(),
        })
        .await
        .map_err(|s| describe_status(&s))?
        .into_inner()
        .record;
    GameRecord::parse_with_lines(&record)
        .map(|(r, _)| r)
        .map_err(|e| format!("the server's record: {e}"))
}

async fn watch(client: &mut RefereeServiceClient<Channel>, game_id: String) -> Result<(), String> {
    let rpc = |s: tonic::Status| describe_status(&s);
    let now = client
        .get_game(pb::GetGameRequest {
            game_id: game_id.clone(),
            token: String::new(),
        })
        .await
        .map_err(rpc)?
        .into_inner()
        .game
        .unwrap_or_default();
    let options = server_record(client, &game_id).await?.options;
    let mut local = Game::new(options);
    let mut stream = client
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.clone(),
            from_ply: Some(0),
            // A spectator's stream: watching does not mark a seat present.
            token: String::new(),
        })
        .await
        .map_err(rpc)?
        .into_inner();
    let mut out = std::io::stdout();
    let mut shown_start = false;
    while let Some(item) = stream.next().await {
        let item = item.map_err(rpc)?;
        match item.item {
            Some(pb::watch_game_response::Item::Snapshot(snap)) => {
                if item.resync {
                    // Catch up from the record, to the snapshot's ply.
                    let parsed = server_record(client, &game_id).await?;
                    local = Game::new(options);
                    for m in parsed.moves.iter().take(snap.ply as usize) {
                        local
                            .play_notation(&m.to_string())
                            .map_err(|e| format!("replaying `{m}`: {e}"))?;
                    }
                    let _ = writeln!(out, "(resynchronised at ply {})", snap.ply);
                } else if now.ply == 0 && !shown_start {
                    let _ = out.write_all(render::ascii(local.position()).as_bytes());
                    let _ = out.flush();
                }
                shown_start = true;
            }
            Some(pb::watch_game_response::Item::Presence(p)) => {
                let here = |c: bool| if c { "connected" } else { "away" };
                let _ = writeln!(
                    out,
                    "(players: white {}, black {})",
                    here(p.seats.first().is_some_and(|s| s.connected)),
                    here(p.seats.get(1).is_some_and(|s| s.connected))
                );
                let _ = out.flush();
            }
            Some(pb::watch_game_response::Item::Event(event)) => match event.kind {
                Some(pb::game_event::Kind::MoveApplied(applied)) => {
                    let text = applied.r#move.as_ref().map(notation_of).unwrap_or_default();
                    local
                        .play_notation(&text)
                        .map_err(|e| format!("following `{text}`: {e}"))?;
                    if event.ply >= now.ply {
                        let _ = writeln!(
                            out,
                            "\nply {}: {} played {text}",
                            event.ply,
                            seat_name(applied.seat)
                        );
                        let _ = out.write_all(render::ascii(local.position()).as_bytes());
                        let _ = out.flush();
                    }
                }
                Some(pb::game_event::Kind::GameOver(over)) => {
                    let outcome = over.outcome.unwrap_or_default();
                    if event.ply < now.ply {
                        let _ = out.write_all(render::ascii(local.position()).as_bytes());
                    }
                    let _ = writeln!(out, "game over: {}", outcome_text(&outcome));
                    let _ = out.flush();
                    return Ok(());
                }
                None => {}
            },
            None => {}
        }
    }
    Err("the server ended the stream before the game ended".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_round_trips_with_owner_only_permissions() {
        let dir = std::env::temp_dir().join(format!("punct-tokens-{}", std::process::id()));
        let path = dir.join("sub").join("tokens.json");
        let mut file = TokenFile::default();
        file.games.insert(
            "g1".into(),
            GameTokens {
                server: "http://x".into(),
                white: Some("a".repeat(32)),
                black: None,
            },
        );
        file.save(&path).unwrap();
        let back = TokenFile::load(&path).unwrap();
        assert_eq!(back.games["g1"].white.as_deref(), Some(&*"a".repeat(32)));
        assert_eq!(back.games["g1"].black, None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(
            TokenFile::load(&dir.join("missing.json"))
                .unwrap()
                .games
                .is_empty()
        );
        std::fs::write(&path, "not json").unwrap();
        assert!(
            TokenFile::load(&path)
                .unwrap_err()
                .contains("not a token file")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
