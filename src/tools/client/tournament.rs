//! `client tournament …`: the organiser's commands for a tournament of
//! remote entrants held by the referee (TournamentService): `create` prints
//! the tournament's id and each entrant's key, `add-entrant` one more key,
//! `start`, `show` the standings once, `follow` them until the end,
//! `cancel`, and `export` every game's record into a folder.
//!
//! The service has no tournament stream: `follow` reads GetTournament every
//! `--interval-ms` and prints only what changed (each game as it ends, then
//! the standings), and rides out a referee that is briefly unreachable (a
//! restart, a takeover) by retrying until it answers again.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use super::{Connection, parse_label, refused};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
use crate::tools::engine::VariantArg;
use crate::tools::games::GameChoice;
use crate::tools::rpc::{self, KeyedChannel};
use crate::tools::tournament::command::{TimeControlArg, parse_time_control};

/// A TournamentService client sending the platform key.
type Tournaments = TournamentServiceClient<KeyedChannel>;

/// The `client tournament` commands.
#[derive(Debug, Clone, Subcommand)]
pub enum TournamentCommand {
    /// Create a tournament for remote entrants: print its id, then one line
    /// per entrant, its name and its secret key (hand each entrant its own).
    Create(Box<CreateArgs>),
    /// Add an entrant (before the start, with --open-registration): print
    /// its name and key.
    AddEntrant {
        /// The tournament's id.
        tournament: String,
        /// The entrant's name (letters, digits, `_`, `-`, `.`).
        name: String,
    },
    /// Start the tournament: the referee schedules it and sends the first
    /// games to the connected entrants.
    Start {
        /// The tournament's id.
        tournament: String,
    },
    /// Print the tournament once: its status, games and standings.
    Show {
        /// The tournament's id.
        tournament: String,
    },
    /// Print each game as it ends and the standings when they change, until
    /// the tournament is over; then the final standings and crosstable.
    Follow {
        /// The tournament's id.
        tournament: String,
        /// Milliseconds between two reads of the tournament.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..))]
        interval_ms: u64,
    },
    /// Cancel the tournament: no more games are created; games in progress
    /// go on as ordinary games but no longer count.
    Cancel {
        /// The tournament's id.
        tournament: String,
    },
    /// Write the record of every game the tournament has created into a
    /// folder, one file per game (`NNNN-NAME-vs-NAME.txt`).
    Export {
        /// The tournament's id.
        tournament: String,
        /// The folder (created if needed).
        #[arg(long, short, default_value = "tournament-records")]
        output: PathBuf,
    },
}

/// Who plays whom (TournamentFormat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Every entrant meets every other once.
    RoundRobin,
    /// The round robin twice, seats turned round the second time.
    DoubleRoundRobin,
    /// The first entrant meets every other.
    Gauntlet,
    /// --swiss-rounds rounds of entrants of close scores (two seats only).
    Swiss,
}

impl FormatArg {
    fn wire(self) -> pb::TournamentFormat {
        match self {
            FormatArg::RoundRobin => pb::TournamentFormat::RoundRobin,
            FormatArg::DoubleRoundRobin => pb::TournamentFormat::DoubleRoundRobin,
            FormatArg::Gauntlet => pb::TournamentFormat::Gauntlet,
            FormatArg::Swiss => pb::TournamentFormat::Swiss,
        }
    }
}

/// Flags of `client tournament create`.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The entrants' names, in order (the first is a gauntlet's challenger).
    pub entrants: Vec<String>,
    /// The tournament's name (its games' `tournament` label).
    #[arg(long, default_value = "")]
    pub name: String,
    /// The format.
    #[arg(long, value_enum, default_value = "round-robin")]
    pub format: FormatArg,
    /// Swiss: the rounds, fewer than the entrants.
    #[arg(long, default_value_t = 0)]
    pub swiss_rounds: u32,
    /// Games each pairing plays (seats rotate from one game to the next).
    #[arg(long, short = 'n', default_value_t = 2)]
    pub games: u32,
    /// The clock of every game (docs/CLOCKS.md):
    /// `fischer:INITIAL_MS+INCREMENT_MS` or `per-move:MS`. An entrant that
    /// is not there loses on time, so every tournament game has one.
    #[arg(long, value_name = "SPEC", default_value = "fischer:60000+1000", value_parser = parse_time_control)]
    pub time_control: TimeControlArg,
    /// Most games in progress at once (0: one per table a round seats).
    #[arg(long, default_value_t = 0)]
    pub concurrency: u32,
    /// Let `add-entrant` add entrants until the start.
    #[arg(long)]
    pub open_registration: bool,
    /// A file of openings (docs/TOURNAMENTS.md): one a line, its moves in
    /// notation, optionally first `seed=HEX`.
    #[arg(long, value_name = "FILE")]
    pub openings: Option<PathBuf>,
    /// Labels of the tournament and its games, `key=value`, repeatable.
    #[arg(long = "label", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// The game (`--game dots` or `--game punto` with its options; PÜNCT by
    /// default). With --game-seed every game is dealt from that seed.
    #[command(flatten)]
    pub choice: GameChoice,
    /// PÜNCT: basic or standard game.
    #[arg(long, value_enum, default_value = "standard")]
    pub variant: VariantArg,
    /// PÜNCT: turns after which a game is drawn (MOVE_LIMIT).
    #[arg(long, default_value_t = 300)]
    pub max_plies: u32,
}

/// Runs one `client tournament` command.
pub async fn run(c: &mut Connection, command: TournamentCommand) -> Result<(), String> {
    let mut service = TournamentServiceClient::new(c.channel.clone());
    match command {
        TournamentCommand::Create(args) => create(&mut service, &c.server, &args).await,
        TournamentCommand::AddEntrant { tournament, name } => {
            let key = service
                .add_entrant(pb::AddEntrantRequest {
                    tournament_id: tournament,
                    name,
                })
                .await
                .map_err(refused)?
                .into_inner()
                .key
                .unwrap_or_default();
            println!("{}\t{}", key.name, key.entrant_key);
            Ok(())
        }
        TournamentCommand::Start { tournament } => {
            let started = service
                .start_tournament(pb::StartTournamentRequest {
                    tournament_id: tournament,
                })
                .await
                .map_err(refused)?
                .into_inner()
                .tournament
                .unwrap_or_default();
            print!("{}", describe(&started));
            Ok(())
        }
        TournamentCommand::Show { tournament } => {
            let now = get(&mut service, &tournament).await.map_err(refused)?;
            print!("{}", describe(&now));
            for game in &now.games {
                println!("{}", game_line(&now, game));
            }
            print!("{}", standings_text(&now));
            Ok(())
        }
        TournamentCommand::Follow {
            tournament,
            interval_ms,
        } => {
            follow(
                &mut service,
                &tournament,
                Duration::from_millis(interval_ms),
            )
            .await
        }
        TournamentCommand::Cancel { tournament } => {
            let cancelled = service
                .cancel_tournament(pb::CancelTournamentRequest {
                    tournament_id: tournament,
                })
                .await
                .map_err(refused)?
                .into_inner()
                .tournament
                .unwrap_or_default();
            print!("{}", describe(&cancelled));
            print!("{}", standings_text(&cancelled));
            Ok(())
        }
        TournamentCommand::Export { tournament, output } => {
            export(&mut service, c, &tournament, &output).await
        }
    }
}

/// `create`: the spec from the flags; prints the id and the keys.
async fn create(
    service: &mut Tournaments,
    server: &rpc::ServerAddress,
    args: &CreateArgs,
) -> Result<(), String> {
    let rules = args.choice.rules_of_flags(args.variant, args.max_plies)?;
    let game = rules.game();
    let openings: Vec<pb::Opening> = match &args.openings {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--openings {}: {e}", path.display()))?;
            crate::tools::tournament::parse_openings(&text)
                .map_err(|e| format!("--openings {}: {e}", path.display()))?
                .iter()
                .map(|o| pb::Opening {
                    moves: o.moves.iter().map(|m| game.wire_move(m)).collect(),
                    seed: o.seed.map(|s| crate::games::hex(&s)).unwrap_or_default(),
                    ..Default::default()
                })
                .collect()
        }
        // A seed given for the rules: one opening, every game dealt from it.
        None => rules
            .seed
            .map(|s| pb::Opening {
                seed: crate::games::hex(&s),
                ..Default::default()
            })
            .into_iter()
            .collect(),
    };
    let spec = pb::TournamentSpec {
        name: args.name.clone(),
        rules: Some(rules.wire()),
        format: args.format.wire() as i32,
        swiss_rounds: args.swiss_rounds,
        games_per_pairing: args.games,
        time_control: Some(args.time_control.0),
        openings,
        concurrency: args.concurrency,
        labels: args.labels.iter().cloned().collect(),
        open_registration: args.open_registration,
        ..Default::default()
    };
    let created = service
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(spec),
            entrants: args.entrants.clone(),
        })
        .await
        .map_err(refused)?
        .into_inner();
    let id = created
        .tournament
        .map(|t| t.tournament_id)
        .unwrap_or_default();
    println!("{id}");
    for key in &created.keys {
        println!("{}\t{}", key.name, key.entrant_key);
    }
    eprintln!(
        "each entrant joins with: PUNCT_ENTRANT_KEY=<its key> punct-referee entrant --server {server} <bot>"
    );
    eprintln!("then: punct-referee client tournament start {id}");
    Ok(())
}

/// GetTournament.
async fn get(service: &mut Tournaments, id: &str) -> Result<pb::Tournament, tonic::Status> {
    Ok(service
        .get_tournament(pb::GetTournamentRequest {
            tournament_id: id.to_string(),
        })
        .await?
        .into_inner()
        .tournament
        .unwrap_or_default())
}

/// Whether a refusal may pass by itself: the referee restarting, a
/// takeover, a connection lost; anything else is an answer.
fn transient(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
    )
}

/// Longest a referee may stay unreachable before `follow` gives up.
const UNREACHABLE_LIMIT: Duration = Duration::from_secs(120);

/// `follow`: polls until the tournament is finished or cancelled.
async fn follow(service: &mut Tournaments, id: &str, interval: Duration) -> Result<(), String> {
    let mut printed_games: Vec<(u32, i32)> = Vec::new();
    let mut last_standings = String::new();
    let mut last_status = None;
    let mut unreachable_since: Option<tokio::time::Instant> = None;
    loop {
        let now = match get(service, id).await {
            Ok(t) => {
                unreachable_since = None;
                t
            }
            Err(status) if transient(&status) => {
                let since = *unreachable_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() > UNREACHABLE_LIMIT {
                    return Err(refused(status));
                }
                eprintln!("referee unreachable, retrying: {}", refused(status));
                tokio::time::sleep(interval.max(Duration::from_millis(500))).await;
                continue;
            }
            Err(status) => return Err(refused(status)),
        };
        if last_status != Some(now.status) {
            print!("{}", describe(&now));
            last_status = Some(now.status);
        }
        for game in &now.games {
            let shown = (game.number, game.status);
            let over = matches!(
                game.status(),
                pb::TournamentGameStatus::Finished
                    | pb::TournamentGameStatus::Bye
                    | pb::TournamentGameStatus::Skipped
            );
            if over && !printed_games.contains(&shown) {
                println!("{}", game_line(&now, game));
                printed_games.push(shown);
            }
        }
        let standings = standings_text(&now);
        let ended = matches!(
            now.status(),
            pb::TournamentStatus::Finished | pb::TournamentStatus::Cancelled
        );
        if standings != last_standings && !ended {
            print!("{standings}");
            last_standings = standings;
        }
        if ended {
            println!("final standings:");
            print!("{}", standings_text(&now));
            print!("{}", crosstable_text(&now));
            return Ok(());
        }
        tokio::time::sleep(interval).await;
    }
}

/// `export`: one record file per game the tournament created.
async fn export(
    service: &mut Tournaments,
    c: &mut Connection,
    id: &str,
    output: &Path,
) -> Result<(), String> {
    let tournament = get(service, id).await.map_err(refused)?;
    std::fs::create_dir_all(output).map_err(|e| format!("{}: {e}", output.display()))?;
    let mut written = 0;
    for game in tournament.games.iter().filter(|g| !g.game_id.is_empty()) {
        let record = rpc::export_record(&mut c.client, &game.game_id)
            .await
            .map_err(|s| format!("game {} ({}): {}", game.number, game.game_id, refused(s)))?;
        let names: Vec<&str> = game
            .entrants
            .iter()
            .map(|&e| entrant_name(&tournament, e))
            .collect();
        let path = output.join(format!("{:04}-{}.txt", game.number, names.join("-vs-")));
        std::fs::write(&path, record).map_err(|e| format!("{}: {e}", path.display()))?;
        let note = if game.status() == pb::TournamentGameStatus::InProgress {
            " (in progress)"
        } else {
            ""
        };
        println!("{}{note}", path.display());
        written += 1;
    }
    eprintln!("{written} records in {}", output.display());
    Ok(())
}

fn entrant_name(t: &pb::Tournament, index: u32) -> &str {
    t.entrants
        .get(index as usize)
        .map_or("?", |e| e.name.as_str())
}

/// `tournament ID: STATUS, N entrants, G/T games over`, and the entrants
/// with whether each is connected.
fn describe(t: &pb::Tournament) -> String {
    let status = match t.status() {
        pb::TournamentStatus::Unspecified => "unknown",
        pb::TournamentStatus::Registering => "registering",
        pb::TournamentStatus::Running => "running",
        pb::TournamentStatus::Finished => "finished",
        pb::TournamentStatus::Cancelled => "cancelled",
    };
    let over = t
        .games
        .iter()
        .filter(|g| {
            !matches!(
                g.status(),
                pb::TournamentGameStatus::Pending | pb::TournamentGameStatus::InProgress
            )
        })
        .count();
    let mut text = format!(
        "tournament {}: {status}, {} entrants, {over}/{} games over\n",
        t.tournament_id,
        t.entrants.len(),
        t.games.len()
    );
    let entrants: Vec<String> = t
        .entrants
        .iter()
        .map(|e| {
            if e.connected {
                format!("{} (connected)", e.name)
            } else {
                e.name.clone()
            }
        })
        .collect();
    if !entrants.is_empty() {
        let _ = writeln!(text, "entrants: {}", entrants.join(", "));
    }
    text
}

/// One game: `game N (round R) A 1-0 B: REASON, P plies [GAME_ID]`; at
/// tables of more seats each entrant with its points.
fn game_line(t: &pb::Tournament, g: &pb::TournamentGame) -> String {
    let names: Vec<&str> = g.entrants.iter().map(|&e| entrant_name(t, e)).collect();
    let head = format!("game {} (round {})", g.number, g.round);
    match g.status() {
        pb::TournamentGameStatus::Pending => format!("{head} {}: pending", names.join(" - ")),
        pb::TournamentGameStatus::InProgress => {
            format!("{head} {}: in progress [{}]", names.join(" - "), g.game_id)
        }
        pb::TournamentGameStatus::Bye => format!("{head} {}: bye", names.join(" - ")),
        pb::TournamentGameStatus::Skipped => format!("{head} {}: skipped", names.join(" - ")),
        pb::TournamentGameStatus::Finished | pb::TournamentGameStatus::Unspecified => {
            let result = match (&names[..], &g.points[..]) {
                ([a, b], [pa, pb_]) => format!("{a} {} {b}", score(*pa, *pb_)),
                _ => names
                    .iter()
                    .zip(&g.points)
                    .map(|(n, p)| format!("{n} {p}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            format!(
                "{head} {result}: {}, {} plies [{}]",
                g.reason, g.ply, g.game_id
            )
        }
    }
}

/// A two-seat result as chess writes it.
fn score(a: f64, b: f64) -> &'static str {
    if a > b {
        "1-0"
    } else if b > a {
        "0-1"
    } else {
        "½-½"
    }
}

/// The standings table: rank, name, games, W/D/L, points, Elo.
pub fn standings_text(t: &pb::Tournament) -> String {
    let width = t
        .standings
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut text = format!(
        "{:>4}  {:<width$}  {:>5}  {:>4}  {:>4}  {:>4}  {:>6}  elo\n",
        "rank", "name", "games", "won", "drew", "lost", "points"
    );
    for s in &t.standings {
        let elo = match (s.elo, s.elo_low, s.elo_high) {
            (Some(e), Some(lo), Some(hi)) => format!("{e:.0} [{lo:.0}, {hi:.0}]"),
            (Some(e), _, _) => format!("{e:.0}"),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            text,
            "{:>4}  {:<width$}  {:>5}  {:>4}  {:>4}  {:>4}  {:>6}  {elo}",
            s.rank, s.name, s.games, s.wins, s.draws, s.losses, s.points
        );
    }
    text
}

/// The crosstable: each entrant's points against each other, the
/// meetings in brackets.
fn crosstable_text(t: &pb::Tournament) -> String {
    let mut text = String::from("crosstable, points (meetings) against each entrant in order:\n");
    for row in &t.crosstable {
        let cells: Vec<String> = row
            .points
            .iter()
            .zip(&row.games)
            .enumerate()
            .map(|(i, (p, g))| {
                if i as u32 == row.entrant {
                    "-".to_string()
                } else {
                    format!("{p} ({g})")
                }
            })
            .collect();
        let _ = writeln!(
            text,
            "{}: {}",
            entrant_name(t, row.entrant),
            cells.join("  ")
        );
    }
    text
}
