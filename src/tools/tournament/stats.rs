//! Tournament arithmetic: scores, and an Elo estimate with a 95% interval
//! from a score fraction (logistic model, the usual 400-point scale).

/// Points of one game for one side: 1 a win, ½ a draw, 0 a loss.
pub fn elo_of_fraction(p: f64) -> f64 {
    -400.0 * (1.0 / p - 1.0).log10()
}

/// An Elo difference against the field with its 95% half-width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EloEstimate {
    /// The estimate (0 = as strong as the average opponent).
    pub elo: f64,
    /// Half the 95% interval.
    pub error: f64,
}

/// The Elo estimate of a player from its per-game points (each 0, 0.5 or
/// 1). The fraction is kept within [1/(2n), 1 - 1/(2n)] so that a clean
/// sweep gives a finite (lower-bound-like) figure rather than infinity; the
/// interval is the normal approximation of the mean score mapped through the
/// Elo curve. `None` without games.
pub fn elo_estimate(points: &[f64]) -> Option<EloEstimate> {
    let n = points.len();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let mean = points.iter().sum::<f64>() / nf;
    let var = points.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / nf;
    let se = (var / nf).sqrt();
    let lo_clamp = 0.5 / nf;
    let clamp = |p: f64| p.clamp(lo_clamp.min(0.5), (1.0 - lo_clamp).max(0.5));
    let p = clamp(mean);
    let lo = clamp(mean - 1.96 * se);
    let hi = clamp(mean + 1.96 * se);
    let elo = if n == 1 && (mean - 0.5).abs() < f64::EPSILON {
        0.0
    } else {
        elo_of_fraction(p)
    };
    Some(EloEstimate {
        elo,
        error: (elo_of_fraction(hi) - elo_of_fraction(lo)) / 2.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_score_is_zero_and_three_quarters_is_about_191() {
        assert_eq!(elo_of_fraction(0.5), 0.0);
        assert!((elo_of_fraction(0.75) - 190.85).abs() < 0.01);
        let e = elo_estimate(&[1.0, 0.0, 1.0, 0.0]).unwrap();
        assert_eq!(e.elo, 0.0);
        assert!(e.error > 300.0, "{e:?}");
    }

    #[test]
    fn a_sweep_is_finite_and_symmetric_to_a_whitewash() {
        let win = elo_estimate(&[1.0; 10]).unwrap();
        let loss = elo_estimate(&[0.0; 10]).unwrap();
        // p clamped to 0.95: 400·log10(19) ≈ 511.5.
        assert!((win.elo - 511.5).abs() < 0.1, "{win:?}");
        assert!((win.elo + loss.elo).abs() < 1e-9);
        assert_eq!(win.error, 0.0);
        assert!(elo_estimate(&[]).is_none());
    }

    #[test]
    fn more_games_narrow_the_interval() {
        let few = elo_estimate(&[1.0, 0.5, 0.0, 1.0]).unwrap();
        let many: Vec<f64> = [1.0, 0.5, 0.0, 1.0].repeat(25);
        let many = elo_estimate(&many).unwrap();
        assert!((few.elo - many.elo).abs() < 1e-9);
        assert!(many.error < few.error / 3.0);
    }
}
