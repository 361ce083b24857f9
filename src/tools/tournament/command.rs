//! `punct-referee tournament`: the command-line face of [`super::run`]. With
//! `--server` it holds the tournament on that referee; without, it starts
//! one inside this process on a loopback port, and the bots still connect
//! as entrants and play over RPC.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Config, Format, Report};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::{self, ServerOptions};
use crate::tools::bots::BotSpec;
use crate::tools::engine::VariantArg;
use crate::tools::games::GameChoice;
use crate::tools::rpc::ServerAddress;

/// Flags of `punct-referee tournament`.
#[derive(Debug, Clone, Args)]
pub struct TournamentArgs {
    /// The bots: `random`, `greedy` or `cmd:PROGRAM ARGS` (a program speaking
    /// the protocol of docs/BOTS.md), each optionally `NAME=…`.
    #[arg(required = true, num_args = 2..)]
    pub bots: Vec<BotSpec>,
    /// Round robin, or a gauntlet of the first bot against the others.
    #[arg(long, value_enum, default_value = "round-robin")]
    pub format: Format,
    /// Games per pairing (colours alternate; at tables of 3 or 4 seats the
    /// seating rotates: give a multiple of the seats for each bot to sit
    /// in each seat equally often).
    #[arg(long, short = 'n', default_value_t = 2)]
    pub games: u32,
    /// Games played at once.
    #[arg(long, short = 'c', default_value_t = 2)]
    pub concurrency: usize,
    /// Seed of the built-in bots' choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Folder for the game records (created if needed).
    #[arg(long, default_value = "tournament-records")]
    pub records: PathBuf,
    /// A referee to play on, HOST:PORT or http://HOST:PORT (default: one
    /// started inside this process).
    #[arg(long, env = "PUNCT_SERVER")]
    pub server: Option<String>,
    /// The game (`--game dots` or `--game punto` with its options; PÜNCT
    /// by default).
    #[command(flatten)]
    pub choice: GameChoice,
    /// PÜNCT: basic or standard game.
    #[arg(long, value_enum, default_value = "standard")]
    pub variant: VariantArg,
    /// PÜNCT: turns after which a game is drawn (MOVE_LIMIT).
    #[arg(long, default_value_t = 300)]
    pub max_plies: u32,
    /// Seconds an external bot may think per move before it forfeits.
    #[arg(long, default_value_t = 10)]
    pub move_timeout_secs: u64,
    /// The `tournament` label of every game.
    #[arg(long, default_value = "cli")]
    pub name: String,
    /// A file of openings (docs/TOURNAMENTS.md): one a line, its moves in
    /// notation, optionally first `seed=HEX`; each pairing plays each
    /// opening `-n` times, seats rotated (with moves, `-n` must be a multiple
    /// of the table's seats).
    #[arg(long, value_name = "FILE")]
    pub openings: Option<PathBuf>,
    /// The clock of every game (docs/CLOCKS.md): `fischer:INITIAL_MS+INCREMENT_MS`
    /// or `per-move:MS`; none by default. Bots are told their time and think
    /// less when short (docs/BOTS.md).
    #[arg(long, value_name = "SPEC", value_parser = parse_time_control)]
    pub time_control: Option<TimeControlArg>,
}

/// A parsed `--time-control`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeControlArg(pub pb::TimeControl);

/// Reads `fischer:INITIAL_MS+INCREMENT_MS` or `per-move:MS`.
pub fn parse_time_control(text: &str) -> Result<TimeControlArg, String> {
    let bad = || {
        format!(
            "`{text}` is not a time control: write fischer:INITIAL_MS+INCREMENT_MS or per-move:MS"
        )
    };
    let ms = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
    let (kind, value) = text.split_once(':').ok_or_else(bad)?;
    let mode = match kind.trim() {
        "fischer" => {
            let (initial, increment) = value.split_once('+').ok_or_else(bad)?;
            pb::time_control::Mode::Fischer(pb::FischerClock {
                initial_ms: ms(initial)?,
                increment_ms: ms(increment)?,
            })
        }
        "per-move" => pb::time_control::Mode::PerMove(pb::PerMoveClock {
            move_ms: ms(value)?,
        }),
        _ => return Err(bad()),
    };
    Ok(TimeControlArg(pb::TimeControl {
        mode: Some(mode),
        ..Default::default()
    }))
}

/// Flags of `punct-referee entrant`: one local bot joins a tournament held
/// by a referee, as the entrant of a key (docs/TOURNAMENTS.md).
#[derive(Debug, Clone, Args)]
pub struct EntrantArgs {
    /// The bot: `random`, `greedy` or `cmd:PROGRAM ARGS`, optionally `NAME=…`.
    pub bot: BotSpec,
    /// The entrant's key (from CreateTournament or AddEntrant).
    #[arg(long, env = "PUNCT_ENTRANT_KEY", hide_env_values = true)]
    pub key: String,
    /// The referee holding the tournament, HOST:PORT or http://HOST:PORT.
    #[arg(long, env = "PUNCT_SERVER", default_value = crate::tools::client::DEFAULT_SERVER)]
    pub server: String,
    /// Seed of a built-in bot's choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seconds an external bot may think per move before it forfeits.
    #[arg(long, default_value_t = 10)]
    pub move_timeout_secs: u64,
}

/// Plays the bot as the key's entrant until the tournament ends, then
/// prints the final standings (name and points, best first).
pub async fn run_entrant(args: EntrantArgs) -> Result<(), String> {
    let address = ServerAddress::parse("--server (or PUNCT_SERVER)", &args.server)
        .map_err(|e| e.to_string())?;
    let channel = address.channel().await?;
    let bot = super::entrant::EntrantBot::new(
        args.bot.clone(),
        args.seed,
        Duration::from_secs(args.move_timeout_secs),
    );
    let (ended, reports) = super::entrant::play_entrant(channel, args.key.clone(), bot)
        .await
        .map_err(|s| crate::tools::rpc::describe_status(&s))?;
    for r in reports
        .iter()
        .filter_map(|r| r.forfeit.as_ref().map(|f| (r.number, f)))
    {
        println!("game {} forfeited by {}", r.0, r.1);
    }
    for s in &ended.standings {
        println!("{:>4}  {:<20}  {:>6.1}", s.rank, s.name, s.points);
    }
    Ok(())
}

/// Runs the tournament, prints the standings and crosstable on stdout.
pub async fn run(args: TournamentArgs) -> Result<(), String> {
    let named = match &args.server {
        Some(text) => Some(
            ServerAddress::parse("--server (or PUNCT_SERVER)", text).map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let config = config_of(&args)?;
    let openings = match &args.openings {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--openings {}: {e}", path.display()))?;
            super::parse_openings(&text)
                .map_err(|e| format!("--openings {}: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let total = config.schedule().len() * openings.len().max(1);
    // The embedded referee, if no server was named; stopped when we are done.
    let (address, embedded) = match named {
        Some(address) => (address, None),
        None => {
            let (address, embedded) = Embedded::start().await?;
            (address, Some(embedded))
        }
    };
    let report = match address.channel().await {
        Ok(channel) => play_with_progress(channel, config, openings, total).await,
        Err(e) => Err(e),
    };
    if let Some(embedded) = embedded {
        embedded.stop().await;
    }
    print_report(&report?, &args.records);
    Ok(())
}

/// The tournament the flags describe.
fn config_of(args: &TournamentArgs) -> Result<Config, String> {
    Ok(Config {
        bots: args.bots.clone(),
        format: args.format,
        games_per_pairing: args.games,
        concurrency: args.concurrency,
        seed: args.seed,
        records: Some(args.records.clone()),
        rules: args.choice.rules_of_flags(args.variant, args.max_plies)?,
        move_timeout: Duration::from_secs(args.move_timeout_secs),
        name: args.name.clone(),
        time_control: args.time_control.clone().map(|t| t.0),
    })
}

/// A referee run inside this process on a loopback port.
struct Embedded {
    stop: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<Result<(), service::ServeError>>,
}

impl Embedded {
    /// Starts it; its address to connect to.
    async fn start() -> Result<(ServerAddress, Embedded), String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot start the embedded referee: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("embedded referee: {e}"))?;
        let address = ServerAddress::of_listener(addr).map_err(|e| e.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(service::run(
            listener,
            ServerOptions::default(),
            async move {
                let _ = stopped.await;
            },
        ));
        Ok((address, Embedded { stop, handle }))
    }

    /// Stops it and waits until it has.
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.handle.await;
    }
}

/// Plays the tournament with a progress bar of `total` games on stderr.
async fn play_with_progress(
    channel: tonic::transport::Channel,
    config: Config,
    openings: Vec<super::Opening>,
    total: usize,
) -> Result<Report, String> {
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let progress = bar.clone();
    let report = super::run_with_openings(channel, config, openings, move |game, names| {
        let message = match game.pairing.seats()[..] {
            [white, black] => format!(
                "#{} {} {} {}",
                game.pairing.number,
                names[white],
                match game.white_points {
                    1.0 => "1-0",
                    0.0 => "0-1",
                    _ => "½-½",
                },
                names[black]
            ),
            ref seats => {
                let each: Vec<String> = seats
                    .iter()
                    .zip(&game.points)
                    .map(|(&bot, points)| format!("{} {points:.2}", names[bot]))
                    .collect();
                format!("#{} {}", game.pairing.number, each.join(", "))
            }
        };
        progress.set_message(message);
        progress.inc(1);
    })
    .await;
    bar.finish_and_clear();
    report.map_err(|e| e.to_string())
}

/// The standings, the crosstable, the forfeits and where the records are.
fn print_report(report: &Report, records: &std::path::Path) {
    print!("{report}");
    for g in &report.games {
        if let Some(why) = &g.forfeit {
            println!("game {} forfeited by {why}", g.pairing.number);
        }
    }
    println!(
        "{} games; records in {}",
        report.games.len(),
        records.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_time_controls() {
        assert_eq!(
            parse_time_control("fischer:60000+500").unwrap().0.mode,
            Some(pb::time_control::Mode::Fischer(pb::FischerClock {
                initial_ms: 60_000,
                increment_ms: 500
            }))
        );
        assert_eq!(
            parse_time_control("per-move:250").unwrap().0.mode,
            Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                move_ms: 250
            }))
        );
        for bad in ["", "fischer:60000", "per-move:x", "blitz:5", "fischer:1+-2"] {
            assert!(parse_time_control(bad).is_err(), "{bad}");
        }
    }
}
