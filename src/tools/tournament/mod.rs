//! Bot tournaments over RPC. The runner creates each game on a referee
//! server, asks the bot to move for its seat with the server's own list of
//! legal moves, submits the answer like any client (token, expected ply),
//! and exports the finished game's record. It knows no game's rules: it
//! passes moves as notation text, and the server judges them. A bot that
//! answers an illegal move, fails or times out resigns the game (forfeit).
//!
//! [`run`] plays a schedule ([`Format::RoundRobin`] or [`Format::Gauntlet`],
//! N games per pairing, colours alternated), C games at once, and returns a
//! [`Report`]: every game's result and the standings with Elo estimates.
//! One game, step by step, is [`game`]; the command line, [`command`]; Elo,
//! [`stats`]. Every call goes through [`crate::tools::rpc`].

pub mod command;
pub mod game;
pub mod stats;

use std::fmt::{self, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

pub use self::game::play_game;
use crate::service::grpc::pb::referee::v1 as pb;
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
    /// starting as White).
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

/// One scheduled game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pairing {
    /// The game's number, from 1.
    pub number: u32,
    /// Index of the White bot in [`Config::bots`].
    pub white: usize,
    /// Index of the Black bot.
    pub black: usize,
}

impl Pairing {
    /// The bots' indexes in seat order (White first).
    pub fn seats(&self) -> [usize; 2] {
        [self.white, self.black]
    }
}

/// The schedule of `config`: pairings in order, colours alternating within
/// each pairing.
pub fn schedule(bots: usize, format: Format, games_per_pairing: u32) -> Vec<Pairing> {
    let pairs: Vec<(usize, usize)> = match format {
        Format::RoundRobin => (0..bots)
            .flat_map(|a| (a + 1..bots).map(move |b| (a, b)))
            .collect(),
        Format::Gauntlet => (1..bots).map(|b| (0, b)).collect(),
    };
    let mut out = Vec::new();
    for (a, b) in pairs {
        for k in 0..games_per_pairing {
            let (white, black) = if k % 2 == 0 { (a, b) } else { (b, a) };
            out.push(Pairing {
                number: out.len() as u32 + 1,
                white,
                black,
            });
        }
    }
    out
}

/// How one game ended.
#[derive(Debug, Clone, PartialEq)]
pub struct GameResult {
    /// Which game.
    pub pairing: Pairing,
    /// The server's id of the game.
    pub game_id: String,
    /// White's points: 1, 0.5 or 0.
    pub white_points: f64,
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
    /// Points (a win 1, a draw ½).
    pub score: f64,
    /// Elo against the field, with its 95% half-width.
    pub elo: Option<stats::EloEstimate>,
}

/// What a tournament produced.
#[derive(Debug, Clone)]
pub struct Report {
    /// The bots' names, in entry order.
    pub bots: Vec<String>,
    /// Every game, by number.
    pub games: Vec<GameResult>,
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

/// Plays the tournament on the server behind `client`, calling `on_game`
/// after each game (for a progress bar).
pub async fn run(
    client: Client,
    config: Config,
    on_game: impl Fn(&GameResult, &[String]) + Send + Sync + 'static,
) -> Result<Report, TournamentError> {
    if config.bots.len() < 2 {
        return Err(TournamentError::Config(
            "a tournament needs two bots".into(),
        ));
    }
    let games = schedule(config.bots.len(), config.format, config.games_per_pairing);
    if games.is_empty() {
        return Err(TournamentError::Config("no games to play".into()));
    }
    if let Some(dir) = &config.records {
        std::fs::create_dir_all(dir)?;
    }
    let names: Arc<Vec<String>> = Arc::new(config.bots.iter().map(|b| b.name.clone()).collect());
    let config = Arc::new(config);
    let on_game = Arc::new(on_game);
    let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let mut tasks = Vec::new();
    for pairing in games {
        let (client, config, slots, on_game, names) = (
            client.clone(),
            config.clone(),
            slots.clone(),
            on_game.clone(),
            names.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let _slot = slots
                .acquire_owned()
                .await
                .map_err(|_| TournamentError::Config("the runner closed".into()))?;
            let result = play_game(client, &config, pairing).await?;
            on_game(&result, &names);
            Ok::<_, TournamentError>(result)
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await??);
    }
    Ok(report(&names, results))
}

/// Standings and the crosstable from the results.
pub fn report(names: &[String], mut games: Vec<GameResult>) -> Report {
    games.sort_by_key(|g| g.pairing.number);
    let n = names.len();
    let mut cross = vec![vec![0.0; n]; n];
    let mut meetings = vec![vec![0u32; n]; n];
    let mut points: Vec<Vec<f64>> = vec![Vec::new(); n];
    for g in &games {
        let (w, b) = (g.pairing.white, g.pairing.black);
        cross[w][b] += g.white_points;
        cross[b][w] += 1.0 - g.white_points;
        meetings[w][b] += 1;
        meetings[b][w] += 1;
        points[w].push(g.white_points);
        points[b].push(1.0 - g.white_points);
    }
    let mut standings: Vec<Standing> = names
        .iter()
        .zip(&points)
        .map(|(name, pts)| Standing {
            name: name.clone(),
            games: pts.len() as u32,
            wins: pts.iter().filter(|&&p| p == 1.0).count() as u32,
            draws: pts.iter().filter(|&&p| p == 0.5).count() as u32,
            losses: pts.iter().filter(|&&p| p == 0.0).count() as u32,
            score: pts.iter().sum(),
            elo: stats::elo_estimate(pts),
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
                Some(e) => format!("{:+.0} ± {:.0}", e.elo, e.error),
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
mod tests {
    use super::*;

    #[test]
    fn round_robin_alternates_colours_and_gauntlet_centres_on_the_first() {
        let rr = schedule(3, Format::RoundRobin, 2);
        let pairs: Vec<(usize, usize)> = rr.iter().map(|p| (p.white, p.black)).collect();
        assert_eq!(pairs, [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]);
        assert_eq!(
            rr.iter().map(|p| p.number).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5, 6]
        );
        let g = schedule(3, Format::Gauntlet, 1);
        let pairs: Vec<(usize, usize)> = g.iter().map(|p| (p.white, p.black)).collect();
        assert_eq!(pairs, [(0, 1), (0, 2)]);
    }

    fn result(number: u32, white: usize, black: usize, white_points: f64) -> GameResult {
        GameResult {
            pairing: Pairing {
                number,
                white,
                black,
            },
            game_id: format!("g{number}"),
            white_points,
            reason: "CONNECTION".into(),
            plies: 10,
            forfeit: None,
            record: String::new(),
            record_path: None,
        }
    }

    #[test]
    fn report_counts_points_from_both_colours() {
        let names = vec!["a".to_string(), "b".to_string()];
        let r = report(
            &names,
            vec![
                result(2, 1, 0, 0.0),
                result(1, 0, 1, 1.0),
                result(3, 0, 1, 0.5),
            ],
        );
        assert_eq!(r.games[0].pairing.number, 1);
        let a = &r.standings[0];
        assert_eq!(
            (a.name.as_str(), a.wins, a.draws, a.losses, a.score),
            ("a", 2, 1, 0, 2.5)
        );
        let b = &r.standings[1];
        assert_eq!((b.wins, b.draws, b.losses, b.score), (0, 1, 2, 0.5));
        assert_eq!(r.cross[0][1], 2.5);
        assert_eq!(r.meetings[1][0], 3);
        let text = r.to_string();
        assert!(text.contains("2.5/3"), "{text}");
        assert!(text.lines().nth(1).unwrap().contains("a"), "{text}");
    }
}
