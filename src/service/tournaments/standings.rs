//! Standings from results: pure arithmetic (docs/TOURNAMENTS.md,
//! "Standings"). Points, W/D/L, the crosstable, Sonneborn–Berger, Buchholz,
//! and an Elo estimate with a 95% credible interval that stays meaningful
//! for clean sweeps.
//!
//! * A game is worth one point, shared by its winners, or by every seat
//!   when nobody won. W: the entrant's seat is among the winners; D: nobody
//!   won; L: otherwise. A bye is a win worth one point, without an opponent.
//! * The crosstable and Elo count each game as a match between every two of
//!   its seats: 1 to the seat with more points, ½ each when equal.
//! * Elo: a Bayesian estimate on the logistic scale. Each pairwise meeting
//!   is a Bernoulli-like observation of the score `p(e) = 1 / (1 + 10^(−e /
//!   400))` (a draw half a win, half a loss); the prior on `e` is normal
//!   with mean 0 and standard deviation [`ELO_PRIOR_SD`]. The posterior is
//!   evaluated on a grid of 1 Elo from −[`ELO_GRID`] to +[`ELO_GRID`]; the
//!   estimate is its median and the interval its 2.5% and 97.5% quantiles.
//!   A sweep thus gets a finite estimate and an interval that narrows with
//!   the games (20 wins of 20: +641, from +322 to +1139), never "± 0".

/// The prior's standard deviation, in Elo: wide enough that a few games
/// move the estimate, narrow enough that a sweep stays finite.
pub const ELO_PRIOR_SD: f64 = 400.0;
/// The grid's half-width, in Elo.
pub const ELO_GRID: i32 = 2000;

/// One game's result, as the standings see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Its round.
    pub round: u32,
    /// Entrants in seat order.
    pub seats: Vec<usize>,
    /// Each seat's points (summing to 1).
    pub points: Vec<f64>,
    /// Whether nobody won.
    pub drawn: bool,
}

/// An Elo estimate with its 95% credible interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Elo {
    /// The posterior median.
    pub elo: f64,
    /// The 2.5% quantile.
    pub low: f64,
    /// The 97.5% quantile.
    pub high: f64,
}

/// One entrant's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The entrant.
    pub entrant: usize,
    /// Games played, byes included.
    pub games: u32,
    /// Wins (byes included).
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// Losses.
    pub losses: u32,
    /// Points.
    pub points: f64,
    /// Sonneborn–Berger.
    pub sonneborn_berger: f64,
    /// Buchholz.
    pub buchholz: f64,
    /// Elo against the field met; `None` before any meeting.
    pub elo: Option<Elo>,
}

/// The standings and the crosstable.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Lines, best first: points, then Sonneborn–Berger, then Buchholz,
    /// then entry order.
    pub lines: Vec<Line>,
    /// `cross[a][b]`: a's points against b.
    pub cross: Vec<Vec<f64>>,
    /// `meetings[a][b]`: meetings of a and b.
    pub meetings: Vec<Vec<u32>>,
}

/// Shares one point among `seats` seats: to the winners, or to all.
pub fn seat_points(seats: usize, winners: &[usize]) -> Vec<f64> {
    (0..seats)
        .map(|s| {
            if winners.is_empty() {
                1.0 / seats as f64
            } else if winners.contains(&s) {
                1.0 / winners.len() as f64
            } else {
                0.0
            }
        })
        .collect()
}

/// The standings of `entrants` entrants from `games` and `byes` (round,
/// entrant).
pub fn table(entrants: usize, games: &[Scored], byes: &[(u32, usize)]) -> Table {
    let n = entrants;
    let mut cross = vec![vec![0.0; n]; n];
    let mut meetings = vec![vec![0u32; n]; n];
    let mut lines: Vec<Line> = (0..n)
        .map(|entrant| Line {
            entrant,
            games: 0,
            wins: 0,
            draws: 0,
            losses: 0,
            points: 0.0,
            sonneborn_berger: 0.0,
            buchholz: 0.0,
            elo: None,
        })
        .collect();
    // Opponents met, once per round: for Buchholz.
    let mut met: Vec<std::collections::BTreeSet<(u32, usize)>> = vec![Default::default(); n];
    for g in games {
        for (i, &e) in g.seats.iter().enumerate() {
            if e >= n {
                continue;
            }
            let own = g.points.get(i).copied().unwrap_or(0.0);
            let line = &mut lines[e];
            line.games += 1;
            line.points += own;
            match (g.drawn, own > 0.0) {
                (true, _) => line.draws += 1,
                (false, true) => line.wins += 1,
                (false, false) => line.losses += 1,
            }
            for (j, &o) in g.seats.iter().enumerate() {
                if i == j || o >= n {
                    continue;
                }
                let theirs = g.points.get(j).copied().unwrap_or(0.0);
                cross[e][o] += match own.total_cmp(&theirs) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                };
                meetings[e][o] += 1;
                met[e].insert((g.round, o));
            }
        }
    }
    for &(_, e) in byes {
        if let Some(line) = lines.get_mut(e) {
            line.games += 1;
            line.wins += 1;
            line.points += 1.0;
        }
    }
    let points: Vec<f64> = lines.iter().map(|l| l.points).collect();
    for (e, line) in lines.iter_mut().enumerate() {
        line.sonneborn_berger = (0..n).map(|o| cross[e][o] * points[o]).sum();
        line.buchholz = met[e].iter().map(|&(_, o)| points[o]).sum();
        let games: u32 = meetings[e].iter().sum();
        let score: f64 = cross[e].iter().sum();
        line.elo = elo(score, games);
    }
    lines.sort_by(|a, b| {
        b.points
            .total_cmp(&a.points)
            .then(b.sonneborn_berger.total_cmp(&a.sonneborn_berger))
            .then(b.buchholz.total_cmp(&a.buchholz))
            .then(a.entrant.cmp(&b.entrant))
    });
    Table {
        lines,
        cross,
        meetings,
    }
}

/// The expected score of an Elo difference `e` (logistic, 400 points).
pub fn expected_score(e: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-e / 400.0))
}

/// The Bayesian Elo estimate from `score` points in `games` meetings (see
/// the module docs); `None` without games.
pub fn elo(score: f64, games: u32) -> Option<Elo> {
    if games == 0 {
        return None;
    }
    let losses = f64::from(games) - score;
    let grid: Vec<f64> = (-ELO_GRID..=ELO_GRID).map(f64::from).collect();
    let log_post: Vec<f64> = grid
        .iter()
        .map(|&e| {
            let p = expected_score(e);
            score * p.ln() + losses * (1.0 - p).ln() - e * e / (2.0 * ELO_PRIOR_SD * ELO_PRIOR_SD)
        })
        .collect();
    let top = log_post.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = log_post.iter().map(|l| (l - top).exp()).collect();
    let total: f64 = weights.iter().sum();
    let quantile = |q: f64| {
        let mut acc = 0.0;
        for (e, w) in grid.iter().zip(&weights) {
            acc += w / total;
            if acc >= q {
                return *e;
            }
        }
        f64::from(ELO_GRID)
    };
    Some(Elo {
        elo: quantile(0.5),
        low: quantile(0.025),
        high: quantile(0.975),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two(round: u32, a: usize, b: usize, first: f64) -> Scored {
        Scored {
            round,
            seats: vec![a, b],
            points: vec![first, 1.0 - first],
            drawn: first == 0.5,
        }
    }

    #[test]
    fn points_crosstable_and_tie_breaks_of_a_round_robin_of_three() {
        // a beats b, b beats c, a draws c; then b beats a.
        let games = [
            two(1, 0, 1, 1.0),
            two(2, 1, 2, 1.0),
            two(3, 2, 0, 0.5),
            two(4, 1, 0, 1.0),
        ];
        let t = table(3, &games, &[]);
        let line = |e: usize| t.lines.iter().find(|l| l.entrant == e).unwrap().clone();
        let (a, b, c) = (line(0), line(1), line(2));
        assert_eq!((a.wins, a.draws, a.losses, a.points), (1, 1, 1, 1.5));
        assert_eq!((b.wins, b.draws, b.losses, b.points), (2, 0, 1, 2.0));
        assert_eq!((c.wins, c.draws, c.losses, c.points), (0, 1, 1, 0.5));
        assert_eq!(t.lines[0].entrant, 1);
        assert_eq!((t.cross[0][1], t.meetings[0][1]), (1.0, 2));
        // SB of a: 1 point vs b (2.0) + ½ vs c (0.5) = 2.25.
        assert_eq!(a.sonneborn_berger, 2.25);
        // Buchholz of a: b in rounds 1 and 4, c in round 3: 2 + 2 + 0.5.
        assert_eq!(a.buchholz, 4.5);
        let total: f64 = t.lines.iter().map(|l| l.points).sum();
        assert_eq!(total, 4.0);
    }

    #[test]
    fn a_bye_is_a_win_without_an_opponent() {
        let t = table(3, &[two(1, 0, 1, 0.5)], &[(1, 2)]);
        let c = t.lines.iter().find(|l| l.entrant == 2).unwrap();
        assert_eq!((c.games, c.wins, c.points, c.buchholz), (1, 1, 1.0, 0.0));
        assert!(c.elo.is_none());
        assert_eq!(t.lines[0].entrant, 2);
    }

    #[test]
    fn a_sweep_has_a_finite_elo_with_a_real_interval() {
        let sweep = elo(20.0, 20).unwrap();
        assert!(sweep.elo > 450.0 && sweep.elo < 800.0, "{sweep:?}");
        assert!(sweep.low > 250.0, "{sweep:?}");
        assert!(sweep.high - sweep.low > 200.0, "{sweep:?}");
        let whitewash = elo(0.0, 20).unwrap();
        assert_eq!(whitewash.elo, -sweep.elo);
        assert_eq!(whitewash.low, -sweep.high);
        // More games narrow it and raise the floor.
        let more = elo(100.0, 100).unwrap();
        assert!(more.low > sweep.low && more.high - more.low < sweep.high - sweep.low);
    }

    #[test]
    fn an_even_score_is_zero_and_its_interval_narrows_with_games() {
        let few = elo(2.0, 4).unwrap();
        let many = elo(200.0, 400).unwrap();
        assert_eq!((few.elo, many.elo), (0.0, 0.0));
        assert!(many.high < 40.0 && few.high > 200.0, "{few:?} {many:?}");
        assert!(elo(0.0, 0).is_none());
    }

    #[test]
    fn larger_tables_share_the_point_and_compare_every_pair() {
        assert_eq!(seat_points(3, &[]), vec![1.0 / 3.0; 3]);
        assert_eq!(seat_points(4, &[0, 2]), vec![0.5, 0.0, 0.5, 0.0]);
        let g = Scored {
            round: 1,
            seats: vec![2, 0, 1],
            points: seat_points(3, &[0]),
            drawn: false,
        };
        let t = table(3, &[g], &[]);
        assert_eq!(
            (t.cross[2][0], t.cross[2][1], t.cross[0][1]),
            (1.0, 1.0, 0.5)
        );
        assert_eq!(t.lines[0].entrant, 2);
    }
}
