//! How well the ranking's confidence ([`skillbase_route::confidence`]) is calibrated on
//! labelled cases: the confidence of each case's first skill against whether it was right.
//!
//! - **ECE** (expected calibration error, 10 equal bins of confidence): the cases' weighted
//!   mean gap between a bin's mean confidence and its share of right first skills (0 is
//!   perfect).
//! - **AUROC**: the chance that a right first skill has a higher confidence than a wrong one
//!   (or one given to a message no skill fits); 0.5 is a coin, 1 a perfect separation.
//! - **Brier**: the mean squared gap between the confidence and the outcome (1 right, 0 not).
//! - At [`THRESHOLD`]: how many no-skill messages a harness declining below it would decline,
//!   and how many right first skills it would keep.

use serde::Serialize;
pub use skillbase_route::confidence::{Calibration, FitCase};

/// The confidence below which a harness would decline the first skill (report only).
pub const THRESHOLD: f64 = 0.5;
/// Bins of the ECE.
pub const BINS: usize = 10;

/// One case's first skill: its confidence, and whether it was the expected one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The first skill's confidence (0 when nothing was ranked).
    pub confidence: f64,
    /// Whether the first skill was the expected one.
    pub right: bool,
    /// Whether the case expects no skill.
    pub no_skill: bool,
}

/// The calibration figures of a set of cases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// Cases measured.
    pub cases: usize,
    /// Expected calibration error over [`BINS`] bins.
    pub ece: f64,
    /// Area under the ROC curve of the first skill's confidence, right against not (0.5 when
    /// every case is right or every case is not).
    pub auroc: f64,
    /// Brier score of the first skill's confidence.
    pub brier: f64,
    /// The threshold the two counts below are taken at ([`THRESHOLD`]).
    pub threshold: f64,
    /// Cases expecting no skill.
    pub no_skill: usize,
    /// Of those, the ones whose first skill's confidence is below the threshold.
    pub no_skill_declined: usize,
    /// Cases whose first skill was the expected one.
    pub right_first: usize,
    /// Of those, the ones whose confidence is at or above the threshold.
    pub right_first_kept: usize,
}

/// The figures of `cases` (a confidence that is not a finite number counts as 0).
pub fn measure(cases: &[Scored]) -> CalibrationReport {
    let conf = |c: &Scored| {
        if c.confidence.is_finite() {
            c.confidence.clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let n = cases.len();
    let mut r = CalibrationReport {
        cases: n,
        threshold: THRESHOLD,
        auroc: auroc(cases, conf),
        ..CalibrationReport::default()
    };
    if n == 0 {
        return r;
    }
    let mut bins = [(0usize, 0f64, 0usize); BINS];
    for c in cases {
        let p = conf(c);
        let y = if c.right { 1.0 } else { 0.0 };
        let b = ((p * BINS as f64) as usize).min(BINS - 1);
        bins[b].0 += 1;
        bins[b].1 += p;
        bins[b].2 += usize::from(c.right);
        r.brier += (p - y) * (p - y);
        if c.no_skill {
            r.no_skill += 1;
            r.no_skill_declined += usize::from(p < THRESHOLD);
        }
        if c.right {
            r.right_first += 1;
            r.right_first_kept += usize::from(p >= THRESHOLD);
        }
    }
    r.brier /= n as f64;
    r.ece = bins
        .iter()
        .filter(|b| b.0 > 0)
        .map(|&(k, sum, right)| (sum / k as f64 - right as f64 / k as f64).abs() * k as f64)
        .sum::<f64>()
        / n as f64;
    r
}

/// The confidence's constants fitted on labelled cases ([`skillbase_route::confidence::fit`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fitted {
    /// Whether the cases came from a fused ranking (else lexical).
    pub fused: bool,
    /// Whether the cases came from a reranked (fused) ranking.
    pub reranked: bool,
    /// Cases fitted on.
    pub cases: usize,
    /// The constants that minimise the log-loss.
    pub constants: Calibration,
    /// Their mean log-loss.
    pub log_loss: f64,
    /// The mean log-loss of the constants built in for the ranking's mode.
    pub built_in_log_loss: f64,
}

/// Fit the confidence's constants on `cases` (a fused ranking's when any case is fused).
pub fn fit(cases: &[FitCase]) -> Fitted {
    use skillbase_route::confidence as c;
    let fused = cases.iter().any(|k| k.fused);
    let reranked = cases.iter().any(|k| k.reranked);
    let constants = c::fit(cases);
    Fitted {
        fused,
        reranked,
        cases: cases.len(),
        constants,
        log_loss: c::log_loss(cases, &constants),
        built_in_log_loss: c::log_loss(cases, &Calibration::of_ranking(fused, reranked)),
    }
}

/// Mann-Whitney AUROC of the confidences, right against not, ties counted half.
fn auroc(cases: &[Scored], conf: impl Fn(&Scored) -> f64) -> f64 {
    let mut v: Vec<(f64, bool)> = cases.iter().map(|c| (conf(c), c.right)).collect();
    let pos = v.iter().filter(|x| x.1).count();
    let neg = v.len() - pos;
    if pos == 0 || neg == 0 {
        return 0.5;
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Sum of the right cases' ranks (1-based, ties given their mean rank).
    let mut rank_sum = 0f64;
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1].0 == v[i].0 {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += mean_rank * v[i..=j].iter().filter(|x| x.1).count() as f64;
        i = j + 1;
    }
    let (pos, neg) = (pos as f64, neg as f64);
    (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(confidence: f64, right: bool, no_skill: bool) -> Scored {
        Scored {
            confidence,
            right,
            no_skill,
        }
    }

    #[test]
    fn figures_by_hand() {
        // Two bins: 0.9 (2 right of 2) and 0.2 (0 right of 2: one no-skill case).
        let cases = [
            s(0.9, true, false),
            s(0.9, true, false),
            s(0.2, false, false),
            s(0.2, false, true),
        ];
        let r = measure(&cases);
        assert!((r.ece - 0.15).abs() < 1e-9, "{r:?}");
        assert_eq!(r.auroc, 1.0);
        assert!((r.brier - (0.01 + 0.01 + 0.04 + 0.04) / 4.0).abs() < 1e-9);
        assert_eq!((r.no_skill, r.no_skill_declined), (1, 1));
        assert_eq!((r.right_first, r.right_first_kept), (2, 2));
        // Reversed confidences separate perfectly the wrong way; all tied is a coin.
        let rev = [s(0.1, true, false), s(0.8, false, false)];
        assert_eq!(measure(&rev).auroc, 0.0);
        let tied = [s(0.5, true, false), s(0.5, false, false)];
        assert_eq!(measure(&tied).auroc, 0.5);
        assert_eq!(measure(&tied).right_first_kept, 1);
    }

    #[test]
    fn empty_one_sided_and_hostile_inputs() {
        let r = measure(&[]);
        assert_eq!((r.cases, r.ece, r.auroc, r.brier), (0, 0.0, 0.5, 0.0));
        assert_eq!(measure(&[s(0.7, true, false)]).auroc, 0.5);
        let r = measure(&[s(f64::NAN, false, true), s(7.0, true, false)]);
        assert!(r.ece.is_finite() && r.brier.is_finite(), "{r:?}");
        assert_eq!(r.auroc, 1.0);
        assert_eq!(r.no_skill_declined, 1);
        // A confidence of exactly 1 falls in the last bin.
        assert_eq!(measure(&[s(1.0, true, false)]).ece, 0.0);
    }
}
