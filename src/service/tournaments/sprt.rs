//! The sequential probability ratio test of a two-entrant gauntlet, as
//! engine testers run it (docs/TOURNAMENTS.md, "SPRT"). Pure arithmetic.
//!
//! H0: the first entrant's Elo over the second is `elo0`; H1: it is
//! `elo1`. After each result the log-likelihood ratio is compared with
//! the bounds `ln(β / (1 − α))` (accept H0) and `ln((1 − β) / α)` (accept
//! H1). The ratio is the generalised SPRT's normal approximation: with the
//! samples' mean `m` and variance `v` over `n` samples, and `s0`, `s1` the
//! expected scores of `elo0` and `elo1` (logistic),
//!
//! ```text
//! LLR = n · (s1 − s0) · (2m − s0 − s1) / (2v)
//! ```
//!
//! A sample is one game's score (trinomial: 0, ½, 1) or, when the games
//! come in pairs with the seats swapped (the same opening from both
//! sides), one pair's mean (pentanomial: 0, ¼, ½, ¾, 1), which removes the
//! first seat's advantage from the variance. One prior draw (a sample of
//! ½) is added before any result, so that a clean sweep has a positive
//! variance and a finite ratio that still grows with every win.

use super::standings::expected_score;

/// The test's parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sprt {
    /// Elo of H0.
    pub elo0: f64,
    /// Elo of H1 (greater than `elo0`).
    pub elo1: f64,
    /// False-positive rate.
    pub alpha: f64,
    /// False-negative rate.
    pub beta: f64,
}

/// What the test decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Decision {
    /// H0 accepted.
    H0,
    /// H1 accepted.
    H1,
}

/// The test now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct State {
    /// The log-likelihood ratio.
    pub llr: f64,
    /// The bound accepting H0.
    pub lower: f64,
    /// The bound accepting H1.
    pub upper: f64,
    /// The decision, once a bound is crossed.
    pub decision: Option<Decision>,
    /// Samples counted (games, or pairs).
    pub samples: usize,
}

/// Why an SPRT's parameters are no test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SprtError {
    /// `elo1` is not above `elo0`, or one is not finite.
    #[error("elo1 must be greater than elo0 (both finite)")]
    EloOrder,
    /// An Elo bound lies beyond ±1000.
    #[error("elo0 and elo1 must lie within ±1000")]
    EloRange,
    /// `alpha` or `beta` is not strictly between 0 and 0.5.
    #[error("alpha and beta must lie strictly between 0 and 0.5")]
    Rates,
}

impl Sprt {
    /// Why these parameters are no test, if they are not.
    pub fn check(&self) -> Result<(), SprtError> {
        let rate = |x: f64| x > 0.0 && x < 0.5;
        if !(self.elo0.is_finite() && self.elo1.is_finite() && self.elo1 > self.elo0) {
            return Err(SprtError::EloOrder);
        }
        if self.elo0.abs() > 1000.0 || self.elo1.abs() > 1000.0 {
            return Err(SprtError::EloRange);
        }
        if !(rate(self.alpha) && rate(self.beta)) {
            return Err(SprtError::Rates);
        }
        Ok(())
    }

    /// The bounds (accept H0, accept H1).
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    /// The test after `samples` (each in 0..=1, the first entrant's score).
    pub fn state(&self, samples: &[f64]) -> State {
        let (lower, upper) = self.bounds();
        let llr = self.llr(samples);
        let decision = if llr >= upper {
            Some(Decision::H1)
        } else if llr <= lower {
            Some(Decision::H0)
        } else {
            None
        };
        State {
            llr,
            lower,
            upper,
            decision,
            samples: samples.len(),
        }
    }

    /// The log-likelihood ratio (module docs), with the prior draw.
    pub fn llr(&self, samples: &[f64]) -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        let all: Vec<f64> = std::iter::once(0.5)
            .chain(samples.iter().copied())
            .collect();
        let n = all.len() as f64;
        let mean = all.iter().sum::<f64>() / n;
        let var = all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        if var <= 0.0 {
            return 0.0;
        }
        let (s0, s1) = (expected_score(self.elo0), expected_score(self.elo1));
        n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Sprt = Sprt {
        elo0: 0.0,
        elo1: 100.0,
        alpha: 0.05,
        beta: 0.05,
    };

    #[test]
    fn bounds_are_the_wald_bounds() {
        let (lo, hi) = TEST.bounds();
        assert!((lo + 2.944).abs() < 1e-3 && (hi - 2.944).abs() < 1e-3);
    }

    #[test]
    fn a_sweep_accepts_h1_after_a_few_games() {
        let decided = (1..=20)
            .find(|&n| TEST.state(&vec![1.0; n]).decision == Some(Decision::H1))
            .unwrap();
        assert_eq!(decided, 3);
        let whitewash = (1..=20)
            .find(|&n| TEST.state(&vec![0.0; n]).decision == Some(Decision::H0))
            .unwrap();
        assert!(whitewash <= 3);
    }

    #[test]
    fn even_play_does_not_accept_h1() {
        let even: Vec<f64> = [1.0, 0.0, 0.5, 0.5].repeat(100);
        let s = TEST.state(&even);
        assert_eq!(s.decision, Some(Decision::H0), "{s:?}");
        assert!(s.llr < 0.0);
        let few = TEST.state(&[1.0, 0.0]);
        assert_eq!(few.decision, None);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(TEST.check().is_ok());
        assert!(Sprt { elo1: 0.0, ..TEST }.check().is_err());
        assert!(Sprt { alpha: 0.5, ..TEST }.check().is_err());
        assert!(Sprt { beta: 0.0, ..TEST }.check().is_err());
    }
}
