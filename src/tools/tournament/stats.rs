//! Tournament arithmetic for the local report: the Elo estimate of a bot
//! from its pairwise points, the same Bayesian estimate the referee's
//! tournament standings give ([`crate::service::tournaments::standings::elo`],
//! docs/TOURNAMENTS.md "Elo"): the posterior median and 95% credible
//! interval under a normal prior, finite and wide for a clean sweep.

use crate::service::tournaments::standings;

/// The expected score of an Elo difference (logistic, 400 points).
pub fn expected_score(elo: f64) -> f64 {
    standings::expected_score(elo)
}

/// An Elo difference against the field with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EloEstimate {
    /// The estimate (0 = as strong as the average opponent).
    pub elo: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// The Elo estimate of a player from its per-meeting points (each 0, ½ or
/// 1); `None` without any.
pub fn elo_estimate(points: &[f64]) -> Option<EloEstimate> {
    let games = u32::try_from(points.len()).ok()?;
    standings::elo(points.iter().sum(), games).map(|e| EloEstimate {
        elo: e.elo,
        low: e.low,
        high: e.high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_score_is_zero_with_a_wide_interval() {
        assert_eq!(expected_score(0.0), 0.5);
        let e = elo_estimate(&[1.0, 0.0, 1.0, 0.0]).unwrap();
        assert_eq!((e.elo, e.low, e.high), (0.0, -343.0, 343.0));
    }

    #[test]
    fn a_sweep_is_finite_with_a_real_interval_and_symmetric_to_a_whitewash() {
        let win = elo_estimate(&[1.0; 20]).unwrap();
        assert_eq!((win.elo, win.low, win.high), (641.0, 322.0, 1139.0));
        let loss = elo_estimate(&[0.0; 20]).unwrap();
        assert_eq!((loss.elo, loss.low, loss.high), (-641.0, -1139.0, -322.0));
        assert!(elo_estimate(&[]).is_none());
    }

    #[test]
    fn more_games_narrow_the_interval() {
        let few = elo_estimate(&[1.0, 0.5, 0.0, 1.0]).unwrap();
        let many = elo_estimate(&[1.0, 0.5, 0.0, 1.0].repeat(25)).unwrap();
        assert!(many.high - many.low < (few.high - few.low) / 3.0);
    }
}
