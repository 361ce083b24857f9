//! Bot tournaments over RPC, as a client of the referee's
//! `TournamentService` (docs/TOURNAMENTS.md): [`run`] creates the
//! tournament on the referee with the bots as entrants, starts it, and
//! plays each bot as an entrant ([`entrant`]): the referee creates every
//! game, the bot moves for its seat with the server's own list of legal
//! moves and submits its answer like any client (token, expected ply). It
//! knows no game's rules: it passes moves as notation text, and the server
//! judges them. A bot that answers an illegal move, fails or times out
//! resigns the game (forfeit).
//!
//! The schedule ([`Format::RoundRobin`] or [`Format::Gauntlet`], N games per
//! pairing, colours alternated) is the referee's; [`run`] reads each game
//! as it ends ([`game`]: its record) and returns a [`Report`]: every game's
//! result and the standings with Elo estimates ([`stats`]). The command
//! line is [`command`].

pub mod command;
pub mod entrant;
pub mod game;
pub mod stats;

use std::fmt::{self, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use tonic::transport::Channel;

use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
use crate::tools::bots::BotSpec;
use crate::tools::games::ToolRules;

/// A referee client.
pub type Client = crate::tools::rpc::Client;

/// Who plays whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Every bot plays every other.
    RoundRobin,
    /// The first bot plays every other; the others do not meet.
    Gauntlet,
}

/// A tournament to play.
#[derive(Debug, Clone)]
pub struct Config {
    /// The entrants, at least two.
    pub bots: Vec<BotSpec>,
    /// Round robin or gauntlet.
    pub format: Format,
    /// Games per pairing (colours alternate, the first bot of a pairing
    /// starting as White; at tables of more seats the seating rotates:
    /// [`schedule_for`]).
    pub games_per_pairing: u32,
    /// Games played at once.
    pub concurrency: usize,
    /// Seed of every built-in bot's choices (with the game's number).
    pub seed: u64,
    /// Where to write one record per game; `None` writes none.
    pub records: Option<PathBuf>,
    /// The game and its rule options (PÜNCT's wire options convert with
    /// `.into()`). A seeded game without a seed gets one per game, drawn
    /// from [`Config::seed`] and the game's number, so the built-in bots can
    /// follow its setup and a tournament replays exactly.
    pub rules: ToolRules,
    /// Longest think of an external bot per move.
    pub move_timeout: Duration,
    /// The clock of every game (docs/CLOCKS.md); `None`: no clock.
    pub time_control: Option<pb::TimeControl>,
    /// The `tournament` label of every game.
    pub name: String,
}

impl Config {
    /// The seats of a table of the tournament's game (2 to 4).
    pub fn seats(&self) -> usize {
        self.rules.seat_names().len()
    }

    /// The games to play, in order.
    pub fn schedule(&self) -> Vec<Pairing> {
        schedule_for(
            self.bots.len(),
            self.format,
            self.games_per_pairing,
            self.seats(),
        )
    }
}

/// One scheduled game: its number and who sits where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pairing {
    /// The game's number, from 1.
    pub number: u32,
    /// Index of the first seat's bot (PÜNCT's White) in [`Config::bots`].
    pub white: usize,
    /// Index of the second seat's bot (PÜNCT's Black).
    pub black: usize,
    /// The bots of the third and fourth seats, at tables of 3 or 4 seats
    /// (Punto); `None` beyond the table's size.
    pub more: [Option<usize>; 2],
}

impl Pairing {
    /// The pairing of game `number` with the bots `seats`, in seat order
    /// (2 to 4 of them).
    pub fn of(number: u32, seats: &[usize]) -> Pairing {
        Pairing {
            number,
            white: seats.first().copied().unwrap_or(0),
            black: seats.get(1).copied().unwrap_or(0),
            more: [seats.get(2).copied(), seats.get(3).copied()],
        }
    }

    /// The bots' indexes in seat order (the first seat first).
    pub fn seats(&self) -> Vec<usize> {
        let mut seats = vec![self.white, self.black];
        seats.extend(self.more.iter().flatten());
        seats
    }
}

/// The schedule of two-seat games: pairings in order, colours alternating
/// within each pairing ([`schedule_for`] with 2 seats).
pub fn schedule(bots: usize, format: Format, games_per_pairing: u32) -> Vec<Pairing> {
    schedule_for(bots, format, games_per_pairing, 2)
}

/// The schedule of games at tables of `seats` seats (2 to 4): every group
/// of `seats` different bots (round robin), or the first bot with every
/// group of `seats − 1` others (gauntlet), in order; each group plays
/// `games_per_pairing` games, its seating rotated by one seat from one game
/// to the next, so that over a multiple of `seats` games each bot of the
/// group sits in each seat equally often. With two seats this is the usual
/// alternation of colours. Empty with fewer bots than seats.
pub fn schedule_for(
    bots: usize,
    format: Format,
    games_per_pairing: u32,
    seats: usize,
) -> Vec<Pairing> {
    let seats = seats.clamp(2, crate::games::MAX_SEATS);
    let groups: Vec<Vec<usize>> = match format {
        Format::RoundRobin => combinations(&(0..bots).collect::<Vec<_>>(), seats),
        Format::Gauntlet => combinations(&(1..bots).collect::<Vec<_>>(), seats - 1)
            .into_iter()
            .map(|others| std::iter::once(0).chain(others).collect())
            .collect(),
    };
    let mut out = Vec::new();
    for group in groups {
        for k in 0..games_per_pairing as usize {
            let seated: Vec<usize> = (0..seats).map(|i| group[(i + k) % seats]).collect();
            out.push(Pairing::of(out.len() as u32 + 1, &seated));
        }
    }
    out
}

/// Every choice of `k` items of `items`, in lexicographic order.
fn combinations(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        for rest in combinations(&items[i + 1..], k - 1) {
            out.push(std::iter::once(first).chain(rest).collect());
        }
    }
    out
}

/// One game of the tournament, played: which pairing, and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayedGame {
    /// Which game.
    pub pairing: Pairing,
    /// The server's id of the game.
    pub game_id: String,
    /// The first seat's points (PÜNCT's White): 1, 0.5 or 0 in a
    /// two-seat game.
    pub white_points: f64,
    /// Every seat's points, seat order: the game's one point shared by its
    /// winners, or by every seat when nobody won (docs/BOTS.md).
    pub points: Vec<f64>,
    /// The end reason (e.g. CONNECTION, RESIGNATION).
    pub reason: String,
    /// Turns played.
    pub plies: u32,
    /// Why a bot forfeited, if one did.
    pub forfeit: Option<String>,
    /// The record's text (ExportGame).
    pub record: String,
    /// Where the record was written.
    pub record_path: Option<PathBuf>,
}

/// One bot's line of the standings.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// The bot's name.
    pub name: String,
    /// Games played.
    pub games: u32,
    /// Wins, draws, losses.
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// Losses.
    pub losses: u32,
    /// Points (a win 1, a draw ½; at larger tables the share of each
    /// game's point, docs/BOTS.md).
    pub score: f64,
    /// Elo against the field, with its 95% interval.
    pub elo: Option<stats::EloEstimate>,
}

/// What a tournament produced.
#[derive(Debug, Clone)]
pub struct Report {
    /// The bots' names, in entry order.
    pub bots: Vec<String>,
    /// Every game, by number.
    pub games: Vec<PlayedGame>,
    /// Standings, best score first.
    pub standings: Vec<Standing>,
    /// `cross[a][b]`: a's points against b.
    pub cross: Vec<Vec<f64>>,
    /// `meetings[a][b]`: games between a and b.
    pub meetings: Vec<Vec<u32>>,
}

/// Why a tournament could not be played.
#[derive(Debug, thiserror::Error)]
pub enum TournamentError {
    /// Fewer than two bots, or no games.
    #[error("{0}")]
    Config(String),
    /// The referee refused or failed a call the runner needs.
    #[error("referee: {0}")]
    Rpc(#[from] tonic::Status),
    /// A record could not be written.
    #[error("writing records: {0}")]
    Io(#[from] std::io::Error),
    /// A game task failed.
    #[error("game task: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// Plays the tournament as a client of the referee's `TournamentService`
/// on `channel`: creates it (the bots as entrants, the schedule of
/// [`Config::schedule`]), starts it, plays every bot as an entrant
/// ([`entrant::play_entrant`]), and reads each game as it ends, calling
/// `on_game` after each (for a progress bar).
pub async fn run(
    channel: Channel,
    config: Config,
    on_game: impl Fn(&PlayedGame, &[String]) + Send + Sync + 'static,
) -> Result<Report, TournamentError> {
    run_with_openings(channel, config, Vec::new(), on_game).await
}

/// One opening of the local runner: moves in notation and, for seeded
/// rules, a seed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Opening {
    /// The moves the referee plays first, notation.
    pub moves: Vec<String>,
    /// The setup's seed.
    pub seed: Option<[u8; 32]>,
}

/// Reads an openings file (docs/TOURNAMENTS.md): one opening a line, its
/// moves in notation separated by spaces, optionally first `seed=HEX` (64
/// hex digits) for seeded rules; blank lines and `#` comments are skipped.
pub fn parse_openings(text: &str) -> Result<Vec<Opening>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut opening = Opening::default();
        for word in line.split_whitespace() {
            match word.strip_prefix("seed=") {
                Some(hex) if opening.seed.is_none() && opening.moves.is_empty() => {
                    opening.seed = Some(crate::games::parse_seed(hex).ok_or_else(|| {
                        format!("line {}: `{hex}` is not a seed of 64 hex digits", n + 1)
                    })?);
                }
                Some(_) => {
                    return Err(format!(
                        "line {}: `seed=` comes once, before the moves",
                        n + 1
                    ));
                }
                None => opening.moves.push(word.to_string()),
            }
        }
        out.push(opening);
    }
    Ok(out)
}

/// [`run`] with openings: each pairing plays each opening
/// `games_per_pairing` times, seats rotated (docs/TOURNAMENTS.md).
pub async fn run_with_openings(
    channel: Channel,
    config: Config,
    openings: Vec<Opening>,
    on_game: impl Fn(&PlayedGame, &[String]) + Send + Sync + 'static,
) -> Result<Report, TournamentError> {
    check_config(&config)?;
    if let Some(dir) = &config.records {
        std::fs::create_dir_all(dir)?;
    }
    let names: Vec<String> = config.bots.iter().map(|b| b.name.clone()).collect();
    let mut service = TournamentServiceClient::new(channel.clone());
    let created = service
        .create_tournament(pb::CreateTournamentRequest {
            spec: Some(spec_of(&config, &openings)),
            entrants: entrant_names(&names),
        })
        .await?
        .into_inner();
    let id = created
        .tournament
        .map(|t| t.tournament_id)
        .unwrap_or_default();
    service
        .start_tournament(pb::StartTournamentRequest {
            tournament_id: id.clone(),
        })
        .await?;
    let entrants = spawn_entrants(&channel, &config, &openings, &created.keys);
    let mut client = Client::new(channel);
    let mut results = Vec::new();
    follow_games(&mut service, &mut client, &config, &id, |result| {
        on_game(&result, &names);
        results.push(result);
    })
    .await?;
    add_forfeits(entrants, &mut results).await?;
    Ok(report(&names, results))
}

/// Refuses a tournament that cannot be played: fewer than two bots, fewer
/// bots than a table's seats, or no games.
fn check_config(config: &Config) -> Result<(), TournamentError> {
    if config.bots.len() < 2 {
        return Err(TournamentError::Config(
            "a tournament needs two bots".into(),
        ));
    }
    let seats = config.seats();
    if config.bots.len() < seats {
        return Err(TournamentError::Config(format!(
            "a table of {} ({}) has {seats} seats: enter at least {seats} bots (the same bot twice under two names, e.g. `random r2=random`)",
            config.rules.rules.game_name(),
            config.rules.rules.variant_name()
        )));
    }
    if config.schedule().is_empty() {
        return Err(TournamentError::Config("no games to play".into()));
    }
    Ok(())
}

/// What each entrant's task returns: the end message and its games.
type EntrantTasks =
    tokio::task::JoinSet<Result<(pb::TournamentEnded, Vec<entrant::SeatReport>), tonic::Status>>;

/// One task per bot, playing as the entrant of its key.
fn spawn_entrants(
    channel: &Channel,
    config: &Config,
    openings: &[Opening],
    keys: &[pb::EntrantKey],
) -> EntrantTasks {
    let mut entrants = tokio::task::JoinSet::new();
    for (key, spec) in keys.iter().zip(&config.bots) {
        let bot = entrant::EntrantBot {
            spec: spec.clone(),
            seed: config.seed,
            move_timeout: config.move_timeout,
            tell_clock: config.time_control.is_some(),
            setup_seed_base: setup_seed_base(config)
                .filter(|_| openings.iter().all(|o| o.seed.is_none())),
            resume_for: Duration::ZERO,
        };
        entrants.spawn(entrant::play_entrant(
            channel.clone(),
            key.entrant_key.clone(),
            bot,
        ));
    }
    entrants
}

/// Polls tournament `id` until it is no longer running, handing each game
/// to `finished` once, as it finishes.
async fn follow_games(
    service: &mut TournamentServiceClient<Channel>,
    client: &mut Client,
    config: &Config,
    id: &str,
    mut finished: impl FnMut(PlayedGame),
) -> Result<(), TournamentError> {
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let t = service
            .get_tournament(pb::GetTournamentRequest {
                tournament_id: id.to_string(),
            })
            .await?
            .into_inner()
            .tournament
            .unwrap_or_default();
        for g in &t.games {
            if g.status == pb::TournamentGameStatus::Finished as i32 && seen.insert(g.number) {
                finished(game::result_of(client, config, g).await?);
            }
        }
        if t.status != pb::TournamentStatus::Running as i32 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits for the entrants and marks each game a bot gave up with why.
async fn add_forfeits(
    mut entrants: EntrantTasks,
    results: &mut [PlayedGame],
) -> Result<(), TournamentError> {
    while let Some(done) = entrants.join_next().await {
        let (_, reports) = done??;
        for report in reports {
            if let (Some(why), Some(r)) = (
                report.forfeit,
                results
                    .iter_mut()
                    .find(|r| r.pairing.number == report.number),
            ) {
                r.forfeit = Some(why);
            }
        }
    }
    Ok(())
}

/// The tournament spec of `config`: its game, format, games per pairing,
/// concurrency and clock. The service needs a clock (an absent entrant must
/// lose on time); without one asked for, every move gets the external
/// bots' move timeout and a minute more, and the bots are not told of it.
fn spec_of(config: &Config, openings: &[Opening]) -> pb::TournamentSpec {
    let time_control = config.time_control.unwrap_or_else(|| pb::TimeControl {
        lag_compensation: None,
        mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
            move_ms: u64::try_from(config.move_timeout.as_millis())
                .unwrap_or(u64::MAX)
                .saturating_add(60_000)
                .min(86_400_000),
        })),
        first_move_deadline_ms: None,
    });
    let game = config.rules.game();
    let openings: Vec<pb::Opening> = if openings.is_empty() {
        // A seed given for the rules: one opening, every game dealt from it.
        config
            .rules
            .seed
            .map(|s| pb::Opening {
                moves: Vec::new(),
                seed: crate::games::hex(&s),
                ..Default::default()
            })
            .into_iter()
            .collect()
    } else {
        openings
            .iter()
            .map(|o| pb::Opening {
                moves: o.moves.iter().map(|m| game.wire_move(m)).collect(),
                seed: o.seed.map(|s| crate::games::hex(&s)).unwrap_or_default(),
                ..Default::default()
            })
            .collect()
    };
    pb::TournamentSpec {
        name: config.name.clone(),
        rules: Some(config.rules.wire()),
        format: match config.format {
            Format::RoundRobin => pb::TournamentFormat::RoundRobin,
            Format::Gauntlet => pb::TournamentFormat::Gauntlet,
        } as i32,
        games_per_pairing: config.games_per_pairing,
        time_control: Some(time_control),
        setup_seed_base: setup_seed_base(config)
            .filter(|_| openings.iter().all(|o| o.seed.is_empty())),
        openings,
        concurrency: u32::try_from(config.concurrency.max(1)).unwrap_or(u32::MAX),
        ..Default::default()
    }
}

/// For seeded rules without a seed of their own: each game's seed comes
/// from the tournament's seed and the game's number, as before.
fn setup_seed_base(config: &Config) -> Option<u64> {
    (config.rules.seeded() && config.rules.seed.is_none()).then_some(config.seed)
}

/// The bots' names as entrant names (letters, digits, `_-.`; others as
/// `_`), made unique by their place when two are alike.
fn entrant_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        if safe.is_empty() || out.contains(&safe) {
            safe = format!("{safe}-{}", i + 1);
        }
        out.push(safe);
    }
    out
}

/// Standings and the crosstable from the results. A bot's score is the sum
/// of its seats' points; it won a game where it was among the winners, drew
/// one nobody won (every seat's points equal), lost the others. The
/// crosstable and Elo count each game as a match between every two of its
/// seats: 1 to the one with more points, ½ each when equal. With two seats
/// that is the game itself.
pub fn report(names: &[String], mut games: Vec<PlayedGame>) -> Report {
    games.sort_by_key(|g| g.pairing.number);
    let n = names.len();
    let mut cross = vec![vec![0.0; n]; n];
    let mut meetings = vec![vec![0u32; n]; n];
    let mut points: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut pairwise: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut outcomes = vec![(0u32, 0u32, 0u32); n];
    for g in &games {
        let seats = g.pairing.seats();
        let drawn = g.points.windows(2).all(|w| w[0] == w[1]);
        for (i, &bot) in seats.iter().enumerate() {
            let own = g.points.get(i).copied().unwrap_or(0.0);
            points[bot].push(own);
            let tally = &mut outcomes[bot];
            match (drawn, own > 0.0) {
                (true, _) => tally.1 += 1,
                (false, true) => tally.0 += 1,
                (false, false) => tally.2 += 1,
            }
            for (j, &other) in seats.iter().enumerate() {
                if i == j {
                    continue;
                }
                let theirs = g.points.get(j).copied().unwrap_or(0.0);
                let p = match own.total_cmp(&theirs) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                };
                cross[bot][other] += p;
                meetings[bot][other] += 1;
                pairwise[bot].push(p);
            }
        }
    }
    let mut standings: Vec<Standing> = names
        .iter()
        .enumerate()
        .map(|(bot, name)| Standing {
            name: name.clone(),
            games: points[bot].len() as u32,
            wins: outcomes[bot].0,
            draws: outcomes[bot].1,
            losses: outcomes[bot].2,
            score: points[bot].iter().sum(),
            elo: stats::elo_estimate(&pairwise[bot]),
        })
        .collect();
    standings.sort_by(|a, b| b.score.total_cmp(&a.score));
    Report {
        bots: names.to_vec(),
        games,
        standings,
        cross,
        meetings,
    }
}

impl fmt::Display for Report {
    /// The standings, then the crosstable (row's points against column).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.bots.iter().map(String::len).max().unwrap_or(3).max(3);
        writeln!(
            f,
            "{:>4}  {:<width$}  {:>5}  {:>4}  {:>4}  {:>4}  {:>6}  {:>6}  Elo (95%)",
            "rank", "bot", "games", "W", "D", "L", "score", "%"
        )?;
        for (i, s) in self.standings.iter().enumerate() {
            let pct = if s.games > 0 {
                100.0 * s.score / f64::from(s.games)
            } else {
                0.0
            };
            let elo = match s.elo {
                Some(e) => format!("{:+.0} ({:+.0} to {:+.0})", e.elo, e.low, e.high),
                None => "-".into(),
            };
            writeln!(
                f,
                "{:>4}  {:<width$}  {:>5}  {:>4}  {:>4}  {:>4}  {:>6.1}  {:>6.1}  {elo}",
                i + 1,
                s.name,
                s.games,
                s.wins,
                s.draws,
                s.losses,
                s.score,
                pct
            )?;
        }
        writeln!(f)?;
        let col = self.bots.iter().map(String::len).max().unwrap_or(0).max(9);
        let mut head = format!("{:<width$}", "");
        for name in &self.bots {
            let _ = write!(head, "  {name:>col$}");
        }
        writeln!(f, "{}", head.trim_end())?;
        for (a, name) in self.bots.iter().enumerate() {
            let mut line = format!("{name:<width$}");
            for b in 0..self.bots.len() {
                let cell = if a == b || self.meetings[a][b] == 0 {
                    "-".to_string()
                } else {
                    format!("{}/{}", self.cross[a][b], self.meetings[a][b])
                };
                let _ = write!(line, "  {cell:>col$}");
            }
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
