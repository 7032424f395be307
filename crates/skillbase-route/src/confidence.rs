//! A calibrated confidence per ranked skill: how likely it is that this skill is the one the
//! message asks for, so that a harness can tell "clearly this one" from "nothing fits".
//!
//! The ranking's scores become logits `z` (the lexical stage's BM25 scores as z-scores over the
//! candidates ranked; the fused scores, already `exp` of a mix of z-scores, as their log). Over
//! the first [`TOP`] candidates, a softmax with one more outcome, "none of these":
//!
//! `p_i = exp(z_i / T) / (exp(b + c · ln N) + Σ_j exp(z_j / T))`
//!
//! with `N` the number of candidates ranked: a larger library needs a sharper winner for the
//! same confidence. `T`, `b` and `c` are fitted per ranking mode ([`Calibration::LEXICAL`],
//! [`Calibration::FUSED`]) by minimising the log-loss of the labelled cases ([`fit`];
//! `skillbase eval --fit-confidence`), no-skill cases labelled "none".

/// Candidates whose logits enter the softmax's denominator (a candidate below them gets a
/// confidence from the same denominator, at most the one of the last of them).
pub const TOP: usize = 20;

/// The constants of the softmax.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Calibration {
    /// `T`: divides every logit (above 1 flattens, below 1 sharpens).
    pub temperature: f64,
    /// `b`: the "none of these" logit for one candidate.
    pub none_bias: f64,
    /// `c`: what the "none" logit gains per unit of `ln N`.
    pub none_per_ln_n: f64,
}

impl Calibration {
    /// The lexical ranking's constants, fitted on the repository's set (`eval/`) at 0, 300 and
    /// 999 SkillRouter distractors (BENCHMARKS.md, "Confidence").
    pub const LEXICAL: Calibration = Calibration {
        temperature: 1.103,
        none_bias: -1.938,
        none_per_ln_n: 1.266,
    };
    /// The fused (lexical + semantic) ranking's constants (BENCHMARKS.md, "Confidence").
    pub const FUSED: Calibration = Calibration {
        temperature: 0.484,
        none_bias: -0.234,
        none_per_ln_n: 1.203,
    };

    /// The reranked ranking's constants (lexical + semantic + the reranker's logits over the
    /// first candidates; BENCHMARKS.md, "The reranker").
    pub const RERANKED: Calibration = Calibration {
        temperature: 0.653,
        none_bias: -0.250,
        none_per_ln_n: 1.020,
    };

    /// The constants of a ranking mode, lexical or fused.
    pub fn of(fused: bool) -> Calibration {
        if fused {
            Calibration::FUSED
        } else {
            Calibration::LEXICAL
        }
    }

    /// The constants of a ranking: lexical, fused, or fused and reranked.
    pub fn of_ranking(fused: bool, reranked: bool) -> Calibration {
        if fused && reranked {
            Calibration::RERANKED
        } else {
            Calibration::of(fused)
        }
    }

    /// The "none of these" logit for `n` candidates (0 if the constants make it no number).
    fn safe_none_logit(&self, n: usize) -> f64 {
        let none = self.none_bias + self.none_per_ln_n * (n.max(1) as f64).ln();
        if none.is_finite() { none } else { 0.0 }
    }

    /// The temperature, 1 when it is not a positive number.
    fn safe_temperature(&self) -> f64 {
        if self.temperature.is_finite() && self.temperature > 0.0 {
            self.temperature
        } else {
            1.0
        }
    }
}

/// The logits of candidates' scores, in their order: z-scores over all of them (lexical), or
/// the log of each (fused: the score is `exp` of a z-score mix). A score that is not a finite,
/// related one (NaN, infinite, or 0 when fused) gets `-inf`: a confidence of 0.
pub fn logits(scores: &[f32], fused: bool) -> Vec<f32> {
    logits_head(scores.iter().copied(), scores.len(), fused)
}

/// [`logits`] of the first `k` scores only, the lexical z-scores still over all of them: what a
/// ranking of thousands of candidates needs for its first [`TOP`] (one pass over the rest, no
/// copy of it).
pub fn logits_head(scores: impl Iterator<Item = f32> + Clone, k: usize, fused: bool) -> Vec<f32> {
    if fused {
        return scores
            .take(k)
            .map(|s| {
                if s.is_finite() && s > 0.0 {
                    s.ln()
                } else {
                    f32::NEG_INFINITY
                }
            })
            .collect();
    }
    let (mut n, mut sum, mut sq) = (0f64, 0f64, 0f64);
    for x in scores.clone().filter(|s| s.is_finite()).map(f64::from) {
        n += 1.0;
        sum += x;
        sq += x * x;
    }
    let mean = if n > 0.0 { sum / n } else { 0.0 };
    let sd = if n > 0.0 {
        (sq / n - mean * mean).max(0.0).sqrt()
    } else {
        0.0
    };
    let sd = sd.max(f64::from(f32::EPSILON));
    scores
        .take(k)
        .map(|s| {
            if s.is_finite() {
                ((f64::from(s) - mean) / sd) as f32
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect()
}

/// The confidence of each candidate, its logit in `z` (best first), out of `n` candidates
/// ranked: the softmax with "none" over the first [`TOP`]. The first [`TOP`] sum to less than 1
/// (the rest is "none"); every value is in 0..=1 whatever the input (NaN is a confidence of 0).
pub fn confidences(z: &[f32], n: usize, cal: &Calibration) -> Vec<f32> {
    let t = cal.safe_temperature();
    let none = cal.safe_none_logit(n);
    let top = &z[..z.len().min(TOP)];
    let (m, denom) = denominator(top, t, none);
    z.iter()
        .map(|&x| ((scaled(x, t) - m).exp() / denom).clamp(0.0, 1.0) as f32)
        .collect()
}

/// A logit divided by the temperature; NaN and -inf weigh nothing, +inf is the largest finite.
fn scaled(x: f32, t: f64) -> f64 {
    let x = f64::from(x) / t;
    if x.is_nan() {
        f64::NEG_INFINITY
    } else {
        x.min(f64::MAX.ln())
    }
}

/// The softmax's shift (the largest logit, so that no `exp` overflows) and its denominator.
fn denominator(top: &[f32], t: f64, none: f64) -> (f64, f64) {
    let m = top.iter().map(|&x| scaled(x, t)).fold(none, f64::max);
    let denom = (none - m).exp() + top.iter().map(|&x| (scaled(x, t) - m).exp()).sum::<f64>();
    (m, denom)
}

/// One labelled message as the fit reads it: the logits of its first candidates (best first,
/// at most [`TOP`]), how many candidates were ranked, and which of them was right (`None`: no
/// skill fits, or the right one is not among them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FitCase {
    /// Logits of the first candidates, best first.
    pub logits: Vec<f32>,
    /// Candidates ranked.
    pub n: usize,
    /// The index in `logits` of the expected skill.
    pub label: Option<usize>,
    /// Whether the ranking was fused (lexical + semantic) rather than lexical alone.
    pub fused: bool,
    /// Whether the fused ranking was reranked.
    pub reranked: bool,
}

impl FitCase {
    /// A case from its logits in rank order (only the first [`TOP`] are kept) in a lexical
    /// ranking; [`FitCase::fused`] for a fused one.
    pub fn new(logits: &[f32], n: usize, label: Option<usize>) -> FitCase {
        let logits = logits[..logits.len().min(TOP)].to_vec();
        let label = label.filter(|&l| l < logits.len());
        FitCase {
            logits,
            n,
            label,
            fused: false,
            reranked: false,
        }
    }
}

/// Mean negative log-likelihood of `cases` under `cal` (each probability floored at 1e-9).
pub fn log_loss(cases: &[FitCase], cal: &Calibration) -> f64 {
    if cases.is_empty() {
        return 0.0;
    }
    let t = cal.safe_temperature();
    let total: f64 = cases
        .iter()
        .map(|c| {
            let none = cal.safe_none_logit(c.n);
            let top = &c.logits[..c.logits.len().min(TOP)];
            let (m, denom) = denominator(top, t, none);
            let logit = match c.label.and_then(|l| top.get(l)) {
                Some(&x) => scaled(x, t),
                None => none,
            };
            -((logit - m).exp() / denom).max(1e-9).ln()
        })
        .sum();
    total / cases.len() as f64
}

/// The constants minimising [`log_loss`] over `cases`: a grid over `T` in 0.2..4, `b` in
/// -10..6 and `c` in 0..3, then three rounds of a finer grid around the best point.
pub fn fit(cases: &[FitCase]) -> Calibration {
    let mut best = (f64::INFINITY, Calibration::LEXICAL);
    let search = |ts: Vec<f64>, bs: Vec<f64>, cs: Vec<f64>, best: &mut (f64, Calibration)| {
        for &temperature in &ts {
            for &none_bias in &bs {
                for &none_per_ln_n in &cs {
                    let cal = Calibration {
                        temperature,
                        none_bias,
                        none_per_ln_n,
                    };
                    let loss = log_loss(cases, &cal);
                    if loss < best.0 {
                        *best = (loss, cal);
                    }
                }
            }
        }
    };
    let steps = |lo: f64, hi: f64, k: usize| -> Vec<f64> {
        (0..=k)
            .map(|i| lo + (hi - lo) * i as f64 / k as f64)
            .collect()
    };
    search(
        steps(0.2, 4.0, 19),
        steps(-10.0, 6.0, 16),
        steps(0.0, 3.0, 12),
        &mut best,
    );
    let (mut dt, mut db, mut dc) = (0.2, 1.0, 0.25);
    for _ in 0..3 {
        let c = best.1;
        search(
            steps((c.temperature - dt).max(0.05), c.temperature + dt, 8),
            steps(c.none_bias - db, c.none_bias + db, 8),
            steps((c.none_per_ln_n - dc).max(0.0), c.none_per_ln_n + dc, 8),
            &mut best,
        );
        (dt, db, dc) = (dt / 4.0, db / 4.0, dc / 4.0);
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round constants, for figures by hand.
    const CAL: Calibration = Calibration {
        temperature: 1.0,
        none_bias: -1.5,
        none_per_ln_n: 1.2,
    };

    #[test]
    fn confidence_follows_the_logits_and_leaves_room_for_none() {
        let z = [3.0, 1.0, 0.5, -0.2];
        let p = confidences(&z, 4, &CAL);
        assert!(p.windows(2).all(|w| w[0] > w[1]), "{p:?}");
        assert!(p.iter().sum::<f32>() < 1.0);
        assert!(p.iter().all(|x| (0.0..=1.0).contains(x)));
        // A sharper winner is more confident; by hand with T = 1, b = -1.5, c = 1.2, N = 4.
        let none = (-1.5f64 + 1.2 * 4f64.ln()).exp();
        let want = 3f64.exp() / (none + [3.0f64, 1.0, 0.5, -0.2].map(f64::exp).iter().sum::<f64>());
        assert!((f64::from(p[0]) - want).abs() < 1e-5, "{p:?} {want}");
        let sharper = confidences(&[5.0, 1.0, 0.5, -0.2], 4, &CAL);
        assert!(sharper[0] > p[0]);
    }

    #[test]
    fn a_larger_library_needs_a_sharper_winner() {
        let z = [3.0, 1.0, 0.5];
        let small = confidences(&z, 10, &CAL)[0];
        let large = confidences(&z, 10_000, &CAL)[0];
        assert!(large < small, "{small} {large}");
        // Past TOP: the denominator stays the first TOP's; the sum of those stays below 1.
        let many: Vec<f32> = (0..50).map(|i| 2.0 - i as f32 * 0.01).collect();
        let p = confidences(&many, 50, &CAL);
        assert_eq!(p.len(), 50);
        assert!(p[..TOP].iter().sum::<f32>() < 1.0);
        assert!(p[TOP..].iter().all(|&x| x <= p[TOP - 1]));
    }

    #[test]
    fn hostile_inputs_stay_in_range() {
        assert!(confidences(&[], 0, &CAL).is_empty());
        let p = confidences(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30], 0, &CAL);
        assert!(
            p.iter().all(|x| x.is_finite() && (0.0..=1.0).contains(x)),
            "{p:?}"
        );
        assert_eq!(p[0], 0.0);
        assert_eq!(p[2], 0.0);
        let odd = Calibration {
            temperature: f64::NAN,
            none_bias: f64::INFINITY,
            none_per_ln_n: -1.0,
        };
        let p = confidences(&[1.0, 0.0], 3, &odd);
        assert!(
            p.iter().all(|x| x.is_finite() && (0.0..=1.0).contains(x)),
            "{p:?}"
        );
        // Logits: a flat ranking is all zeros; NaN and infinities are -inf; fused zeros too.
        assert_eq!(logits(&[2.0, 2.0], false), [0.0, 0.0]);
        let l = logits(&[f32::NAN, 1.0, 3.0, f32::INFINITY], false);
        assert_eq!(l[0], f32::NEG_INFINITY);
        assert_eq!(l[3], f32::NEG_INFINITY);
        assert!(
            (l[1] + 1.0).abs() < 1e-6 && (l[2] - 1.0).abs() < 1e-6,
            "{l:?}"
        );
        assert_eq!(
            logits(&[1.0, 0.0, -1.0], true),
            [0.0, f32::NEG_INFINITY, f32::NEG_INFINITY]
        );
        assert!(logits(&[], false).is_empty());
        // The head's logits are the whole list's first ones, the moments over all of it.
        let all = [3.0, 1.0, f32::NAN, 0.5, 0.0, 2.0];
        for fused in [false, true] {
            let whole = logits(&all, fused);
            let head = logits_head(all.iter().copied(), 2, fused);
            assert_eq!(head.len(), 2);
            assert_eq!(head[..], whole[..2], "fused {fused}");
        }
        assert!(logits_head([1.0f32].into_iter(), 5, false).len() == 1);
    }

    #[test]
    fn the_fit_recovers_constants_that_generated_the_labels() {
        // Cases drawn from a known calibration: the fit lands near it and beats the default.
        let truth = Calibration {
            temperature: 1.5,
            none_bias: -0.5,
            none_per_ln_n: 0.8,
        };
        let mut cases = Vec::new();
        let mut seed = 7u64;
        let mut rand = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for k in 0..1500 {
            let n = [5, 100, 2000][k % 3];
            let gap = rand() * 6.0;
            let logits: Vec<f32> = (0..6)
                .map(|i| (gap - i as f64 * 0.3 - rand()) as f32)
                .collect();
            let mut sorted = logits.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let p = confidences(&sorted, n, &truth);
            let (mut u, mut label) = (rand(), None);
            for (i, &pi) in p.iter().enumerate() {
                if u < f64::from(pi) {
                    label = Some(i);
                    break;
                }
                u -= f64::from(pi);
            }
            cases.push(FitCase::new(&sorted, n, label));
        }
        let got = fit(&cases);
        assert!((got.temperature - truth.temperature).abs() < 0.3, "{got:?}");
        assert!(
            (got.none_per_ln_n - truth.none_per_ln_n).abs() < 0.3,
            "{got:?}"
        );
        assert!(log_loss(&cases, &got) <= log_loss(&cases, &truth) + 1e-9);
        assert!(log_loss(&cases, &got) < log_loss(&cases, &CAL));
        // A label past the kept logits reads as "none".
        assert_eq!(FitCase::new(&[1.0; 30], 30, Some(25)).label, None);
        assert_eq!(log_loss(&[], &CAL), 0.0);
    }
}
