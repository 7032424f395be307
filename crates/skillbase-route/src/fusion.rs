//! The semantic stage's arithmetic: a view's skill vectors as one matrix, centring, and fusion
//! of the lexical and semantic scores into one relevance per skill. Pure: the vectors come
//! from whoever embeds (skillbase-runtime's `semantic`), the lexical scores from [`crate::rank`].
//!
//! Fusion ([`fuse`]) mixes the two stages on their score distributions: each score becomes a
//! z-score over the view (how far above the view's mean, in standard deviations), and the two
//! are mixed by the configured weight. A sharp peak (one skill far above the rest) then counts
//! for more than a flat one; dividing by the best score, as fusion did before, could not tell
//! them apart, so a flat similarity could demote a clear lexical hit. A skill whose vector could
//! not be computed keeps its lexical part alone.

use std::sync::{Arc, Mutex};

/// The weight of the semantic score when the configuration gives none (chosen on the
/// repository's own set: BENCHMARKS.md, "Fusion on score distributions").
pub const DEFAULT_WEIGHT: f32 = 0.75;
/// Words past which a message is long: the encoders read only its start (64 and 24 word
/// pieces, some 50 and 20 words) while the lexical stage reads all of it.
pub const LONG_MESSAGE_WORDS: usize = 100;
/// The semantic weight's share kept for a long message, chosen on the repository's own set
/// (BENCHMARKS.md, "Routing quality, fourth part": long messages r@1 0.575 -> 0.875, the other
/// kinds unchanged).
pub const LONG_MESSAGE_FACTOR: f32 = 0.6;

/// The semantic weight for a folded message: `weight`, or [`LONG_MESSAGE_FACTOR`] of it for a
/// message of more than [`LONG_MESSAGE_WORDS`] words.
pub fn weight_for(folded: &str, weight: f32) -> f32 {
    if is_long(folded) {
        weight * LONG_MESSAGE_FACTOR
    } else {
        weight
    }
}

/// Whether a folded message is long: more than [`LONG_MESSAGE_WORDS`] words.
pub fn is_long(folded: &str) -> bool {
    crate::rank::words(folded)
        .take(LONG_MESSAGE_WORDS + 1)
        .count()
        > LONG_MESSAGE_WORDS
}

/// Scale `v` to length 1 (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// One view's skill vectors, row `i` for `view.skills[i]`, and further vectors of some skills
/// (one per section of a skill's body, [`crate::passage::sections`]): a skill's similarity to a
/// query is its best vector's.
#[derive(Debug, Default)]
pub struct SemanticMatrix {
    /// Values per vector.
    pub dim: usize,
    /// Row-major, `dim` values per skill (zeros where `present` is false).
    pub data: Vec<f32>,
    /// Whether skill `i` has a vector.
    pub present: Vec<bool>,
    /// Further vectors, `dim` values each ([`SemanticMatrix::with_sections`]); shared with
    /// whoever keeps them (not copied: a library's sections outnumber its skills).
    pub sections: Vec<Arc<[f32]>>,
    /// The skill each further vector belongs to (one of `present`).
    pub owners: Vec<u32>,
    /// Further vectors not ready yet (not read or computed): the matrix ranks without them.
    pub sections_missing: usize,
    /// Per span of dimensions a query uses ([`query_span`]), the figures that centre the
    /// skills' vectors on their mean (computed once per view and span).
    centred: Mutex<Vec<Arc<Centred>>>,
}

/// Fewest skills with vectors whose mean is subtracted ([`SemanticMatrix::similarities`]).
pub const MIN_CENTRED: usize = 16;

/// A view's vectors centred on their mean, over the span `lo..hi` of dimensions.
#[derive(Debug)]
struct Centred {
    lo: usize,
    hi: usize,
    mean: Vec<f32>,
    /// Per skill, then per further vector, `d · mean` and `|d - mean|` over the span.
    d_mean: Vec<f32>,
    norm: Vec<f32>,
    mean_sq: f32,
}

/// The span of dimensions a query vector uses: from its first to its last non-zero value (all
/// of them for a plain model; one model's part for the local encoders' pair).
fn query_span(query: &[f32]) -> (usize, usize) {
    let lo = query.iter().position(|v| *v != 0.0).unwrap_or(0);
    let hi = query.iter().rposition(|v| *v != 0.0).map_or(0, |i| i + 1);
    (lo, hi.max(lo))
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    for (x, y) in ca.iter().zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + ra.iter().zip(rb).map(|(x, y)| x * y).sum::<f32>()
}

impl SemanticMatrix {
    /// A view's matrix.
    pub fn new(dim: usize, data: Vec<f32>, present: Vec<bool>) -> SemanticMatrix {
        SemanticMatrix {
            dim,
            data,
            present,
            sections: Vec::new(),
            owners: Vec::new(),
            sections_missing: 0,
            centred: Mutex::new(Vec::new()),
        }
    }

    /// The matrix with further vectors of its skills: `sections[j]` of skill `owners[j]`;
    /// `missing` further vectors are not ready yet. A vector of another size, of a skill without
    /// a vector or of no skill is dropped.
    pub fn with_sections(
        mut self,
        sections: Vec<Arc<[f32]>>,
        owners: Vec<u32>,
        missing: usize,
    ) -> SemanticMatrix {
        self.sections_missing = missing;
        for (row, o) in sections.into_iter().zip(owners) {
            if row.len() == self.dim && self.present.get(o as usize).copied().unwrap_or(false) {
                self.sections.push(row);
                self.owners.push(o);
            }
        }
        self.centred = Mutex::new(Vec::new());
        self
    }

    /// The further vectors, with their skills.
    fn section_rows(&self) -> impl Iterator<Item = (usize, &[f32])> {
        let rows = self.sections.iter().map(|r| &r[..]);
        self.owners.iter().map(|&o| o as usize).zip(rows)
    }

    /// Cosine similarity of every skill with a normalized query vector: its best vector's (0
    /// for a skill without a vector, or for a query of another size).
    pub fn cosines(&self, query: &[f32]) -> Vec<f32> {
        let n = self.present.len();
        if query.len() != self.dim || self.dim == 0 {
            return vec![0.0; n];
        }
        let mut out: Vec<f32> = self
            .data
            .chunks_exact(self.dim)
            .map(|row| dot(row, query))
            .collect();
        for (o, row) in self.section_rows() {
            out[o] = out[o].max(dot(row, query));
        }
        out
    }

    /// The similarity fusion reads: the cosine of the query and each skill after both are
    /// centred on the mean of the view's skill vectors (over the dimensions the query uses).
    /// Sentence encoders place every text in a narrow cone (multilingual-e5-small's unrelated
    /// pairs are at cosine 0.7-0.8), so raw cosines barely separate skills; centring measures
    /// where a skill stands relative to the others. Below [`MIN_CENTRED`] skills with vectors
    /// the mean says little, and the plain cosines are used. The mean is the skills' (first)
    /// vectors'; a skill with further vectors takes its best centred similarity.
    pub fn similarities(&self, query: &[f32]) -> Vec<f32> {
        let have = self.present.iter().filter(|p| **p).count();
        if have < MIN_CENTRED || query.len() != self.dim || self.dim == 0 {
            return self.cosines(query);
        }
        let (lo, hi) = query_span(query);
        if hi <= lo {
            return self.cosines(query);
        }
        let c = self.centred(lo, hi);
        let q = &query[lo..hi];
        let q_mean = dot(q, &c.mean);
        let q_norm = (dot(q, q) - 2.0 * q_mean + c.mean_sq).max(1e-12).sqrt();
        // Row `r`'s centred similarity from its raw cosine.
        let centre = |cos: f32, r: usize| {
            (cos - q_mean - c.d_mean[r] + c.mean_sq) / (q_norm * c.norm[r].max(1e-6))
        };
        let n = self.present.len();
        let mut out: Vec<f32> = self
            .data
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, row)| {
                let cos = dot(row, query);
                if self.present[i] { centre(cos, i) } else { cos }
            })
            .collect();
        // The query is zero outside its span: a section's cosine over the span alone (half the
        // products with the local encoders' pair).
        for (j, (o, row)) in self.section_rows().enumerate() {
            out[o] = out[o].max(centre(dot(&row[lo..hi], q), n + j));
        }
        out
    }

    fn centred(&self, lo: usize, hi: usize) -> Arc<Centred> {
        let mut all = self.centred.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = all.iter().find(|c| c.lo == lo && c.hi == hi) {
            return c.clone();
        }
        let mut mean = vec![0f32; hi - lo];
        let mut k = 0f32;
        for (row, p) in self.data.chunks_exact(self.dim).zip(&self.present) {
            if *p {
                k += 1.0;
                for (m, v) in mean.iter_mut().zip(&row[lo..hi]) {
                    *m += v;
                }
            }
        }
        mean.iter_mut().for_each(|m| *m /= k.max(1.0));
        let mean_sq = dot(&mean, &mean);
        let (mut d_mean, mut norm) = (Vec::new(), Vec::new());
        let rows = self.data.chunks_exact(self.dim);
        for row in rows.chain(self.sections.iter().map(|r| &r[..])) {
            let d = &row[lo..hi];
            let dm = dot(d, &mean);
            d_mean.push(dm);
            norm.push((dot(d, d) - 2.0 * dm + mean_sq).max(0.0).sqrt());
        }
        let c = Arc::new(Centred {
            lo,
            hi,
            mean,
            d_mean,
            norm,
            mean_sq,
        });
        all.push(c.clone());
        c
    }

    /// Vectors in the matrix (a skill's first and its further ones).
    pub fn vectors(&self) -> usize {
        self.present.iter().filter(|p| **p).count() + self.owners.len()
    }

    /// Skills without a vector.
    pub fn missing(&self) -> usize {
        self.present.iter().filter(|p| !**p).count()
    }
}

/// A message's vector with the view's matrix: what a turn needs for the semantic stage.
#[derive(Debug, Clone, Copy)]
pub struct SemanticQuery<'a> {
    /// The view's skill vectors.
    pub matrix: &'a SemanticMatrix,
    /// The message's vector (normalized), or one per passage of a long message
    /// ([`crate::passage`]) laid end to end, each of the matrix's size.
    pub query: &'a [f32],
    /// The semantic score's share of the fused score, 0 to 1.
    pub weight: f32,
    /// The reranker's logits for the first candidates of the ranking without it, `(skill
    /// index, logit)`; empty when no reranker ran ([`rerank_candidates`] says which skills).
    pub rerank: &'a [(u32, f32)],
}

impl SemanticQuery<'_> {
    /// Whether the query is one or more vectors of the matrix's size (a query of another size,
    /// another model's, says nothing).
    pub fn fits(&self) -> bool {
        let dim = self.matrix.dim;
        dim > 0 && !self.query.is_empty() && self.query.len().is_multiple_of(dim)
    }

    /// The message's vectors, one per passage (none when the query does not fit).
    pub fn passages(&self) -> std::slice::ChunksExact<'_, f32> {
        if self.fits() {
            self.query.chunks_exact(self.matrix.dim)
        } else {
            self.query[..0].chunks_exact(1)
        }
    }

    /// Per skill, its best raw cosine with a passage of the message (0 for every skill when the
    /// query does not fit).
    pub fn cosines(&self) -> Vec<f32> {
        best(
            self.passages().map(|q| self.matrix.cosines(q)),
            self.matrix.present.len(),
        )
    }

    /// The similarity fusion reads: per skill, its best centred similarity
    /// ([`SemanticMatrix::similarities`]) with a passage of the message. The passage that
    /// speaks of a skill most clearly speaks for the message: a request one sentence long
    /// beside a pasted log is not drowned by it, and a passage that matches nothing (the log)
    /// lifts no skill above the others.
    pub fn similarities(&self) -> Vec<f32> {
        best(
            self.passages().map(|q| self.matrix.similarities(q)),
            self.matrix.present.len(),
        )
    }
}

/// The element-wise maximum of `rows`, each of `n` values (`n` zeros without rows).
fn best(rows: impl Iterator<Item = Vec<f32>>, n: usize) -> Vec<f32> {
    let mut out: Option<Vec<f32>> = None;
    for row in rows {
        match &mut out {
            None => out = Some(row),
            Some(o) => o.iter_mut().zip(row).for_each(|(o, r)| *o = o.max(r)),
        }
    }
    out.unwrap_or_else(|| vec![0.0; n])
}

/// Which stage ranked a skill where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// A trigger phrase injected it.
    Trigger,
    /// Its lexical score weighed most.
    Lexical,
    /// Its semantic score weighed most.
    Semantic,
    /// The reranker, reading the message and the skill together, weighed most.
    Rerank,
}

/// Relevance of every skill of a view to one message.
#[derive(Debug, Clone, Default)]
pub struct Relevance {
    /// Fused score per skill (higher is more relevant; 0 is unrelated).
    pub scores: Vec<f32>,
    /// Per skill, whether the semantic part of its score outweighed the lexical part (empty
    /// when the ranking was lexical alone).
    pub semantic_won: Vec<bool>,
    /// The skills whose place the reranker's part of the score decided (empty when it did not
    /// run).
    pub rerank_won: Vec<u32>,
    /// Whether the reranker's logits are part of the scores.
    pub reranked: bool,
}

impl Relevance {
    /// The stage that placed skill `i`.
    pub fn stage(&self, i: usize) -> Stage {
        if self.rerank_won.contains(&(i as u32)) {
            Stage::Rerank
        } else if self.semantic_won.get(i).copied().unwrap_or(false) {
            Stage::Semantic
        } else {
            Stage::Lexical
        }
    }

    /// Skills by fused score, highest first, ties by index.
    pub fn order(&self) -> Vec<(u32, f32)> {
        let mut v: Vec<(u32, f32)> = self
            .scores
            .iter()
            .enumerate()
            .map(|(i, &s)| (i as u32, s))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Whether the scores are fused (lexical + semantic) rather than lexical alone.
    pub fn fused(&self) -> bool {
        !self.semantic_won.is_empty()
    }

    /// The calibrated confidence ([`crate::confidence`]) of the first `first` skills of
    /// `ranked`: every candidate of a ranking, best first (their number is the formula's `N`),
    /// to three decimals.
    pub fn confidence(&self, ranked: &[usize], first: usize) -> Vec<f64> {
        let scores = ranked
            .iter()
            .map(|&i| self.scores.get(i).copied().unwrap_or(0.0));
        let fused = self.fused();
        let k = first.max(crate::confidence::TOP).min(ranked.len());
        let z = crate::confidence::logits_head(scores, k, fused);
        let p = crate::confidence::confidences(
            &z,
            ranked.len(),
            &crate::confidence::Calibration::of_ranking(fused, self.reranked),
        );
        // Three decimals: what a caller can act on, and stable across platforms' `exp`.
        p.iter()
            .take(first)
            .map(|&x| (f64::from(x) * 1000.0).round() / 1000.0)
            .collect()
    }
}

/// Mean and standard deviation of `v` (the deviation at least `f32::EPSILON`, so that a flat
/// stage gives every skill a z-score of 0 rather than a division by zero).
fn moments(v: impl Iterator<Item = f32>) -> (f32, f32) {
    let (mut n, mut sum, mut sq) = (0f64, 0f64, 0f64);
    for x in v {
        let x = f64::from(x);
        n += 1.0;
        sum += x;
        sq += x * x;
    }
    if n == 0.0 {
        return (0.0, 1.0);
    }
    let mean = sum / n;
    let sd = (sq / n - mean * mean).max(0.0).sqrt();
    (mean as f32, (sd as f32).max(f32::EPSILON))
}

/// Bound on a fused z-score mix before `exp`: keeps the score a positive, finite `f32`.
const MAX_MIX: f32 = 80.0;

/// Fusion on score distributions: `exp((1 - w) · z_lexical + w · z_semantic)`, each z over the
/// view (lexical over every skill, semantic over the skills with a vector; a skill without one
/// has a semantic z of 0). `exp` keeps the order and makes the score positive (the catalog keys
/// its order on the score's bits); a skill with no lexical score and no positive similarity is
/// unrelated (0), as with the lexical stage alone. Without a semantic query, the lexical scores
/// as they are.
pub fn fuse(lexical: Vec<f32>, semantic: Option<SemanticQuery<'_>>) -> Relevance {
    let Some(sq) = semantic else {
        // Lexical alone: no per-skill flags (every stage is lexical), nothing allocated.
        return Relevance {
            scores: lexical,
            semantic_won: Vec::new(),
            rerank_won: Vec::new(),
            reranked: false,
        };
    };
    if !sq.fits() {
        // A query of another size (another model's) says nothing: the lexical order.
        return fuse(lexical, None);
    }
    let cos = sq.similarities();
    let w = sq.weight.clamp(0.0, 1.0);
    let present = |i: usize| cos.get(i).is_some() && sq.matrix.present[i];
    let (lex_mean, lex_sd) = moments(lexical.iter().copied());
    let (sem_mean, sem_sd) = moments((0..lexical.len()).filter(|&i| present(i)).map(|i| cos[i]));
    let mut mixes = Vec::with_capacity(lexical.len());
    let mut won = Vec::with_capacity(lexical.len());
    for (i, &l) in lexical.iter().enumerate() {
        let lex = (1.0 - w) * (l - lex_mean) / lex_sd;
        let (sem, related) = if present(i) {
            (w * (cos[i] - sem_mean) / sem_sd, l > 0.0 || cos[i] > 0.0)
        } else {
            (0.0, l > 0.0)
        };
        mixes.push(related.then_some(lex + sem));
        won.push(sem > lex);
    }
    let (rerank_won, reranked) = rerank(&mut mixes, sq.rerank);
    Relevance {
        scores: mixes
            .iter()
            .map(|m| m.map_or(0.0, |m| m.clamp(-MAX_MIX, MAX_MIX).exp()))
            .collect(),
        semantic_won: won,
        rerank_won,
        reranked,
    }
}

/// How many of a ranking's first candidates the reranker reads (BENCHMARKS.md, "The
/// reranker").
pub const RERANK_CANDIDATES: usize = 10;
/// The reranker's z-score's weight beside the first stages' mix (chosen on the repository's
/// set among 0.5, 0.75 and 1: the best recall at 5 and 10 and calibration; BENCHMARKS.md, "The
/// reranker").
pub const RERANK_WEIGHT: f32 = 0.5;

/// The skills the reranker should read for `relevance` (the ranking without it): its first
/// [`RERANK_CANDIDATES`] related skills, best first.
pub fn rerank_candidates(relevance: &Relevance) -> Vec<u32> {
    relevance
        .order()
        .into_iter()
        .take_while(|&(_, s)| s > 0.0)
        .take(RERANK_CANDIDATES)
        .map(|(i, _)| i)
        .collect()
}

/// Adds the reranker's part to the reranked skills' mixes: its logit's z-score over the
/// reranked skills, times [`RERANK_WEIGHT`]. Returns the skills whose rerank part is larger than
/// the magnitude of the rest of their mix and positive (the ones it lifted), and whether it
/// changed any mix (two related skills with a finite logit at least).
fn rerank(mixes: &mut [Option<f32>], logits: &[(u32, f32)]) -> (Vec<u32>, bool) {
    let valid: Vec<(usize, f32)> = logits
        .iter()
        .filter(|(i, l)| l.is_finite() && mixes.get(*i as usize).is_some_and(Option::is_some))
        .map(|&(i, l)| (i as usize, l))
        .collect();
    if valid.len() < 2 {
        return (Vec::new(), false);
    }
    let (mean, sd) = moments(valid.iter().map(|v| v.1));
    let mut won = Vec::new();
    for (i, l) in valid {
        let part = RERANK_WEIGHT * (l - mean) / sd;
        if let Some(m) = &mut mixes[i] {
            if part > 0.0 && part > m.abs() {
                won.push(i as u32);
            }
            *m += part;
        }
    }
    (won, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_mixes_z_scores_and_names_the_stage() {
        let m = SemanticMatrix::new(
            2,
            vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8, 0.0, 0.0],
            vec![true, true, true, false],
        );
        let q = [0.0, 1.0];
        // Lexical favours skills 0 and 3; the query's meaning is skill 1's, then skill 2's.
        // A long message's semantic share is smaller (the encoders read only its start).
        assert_eq!(weight_for("refund my order please", 0.65), 0.65);
        let long = "word ".repeat(LONG_MESSAGE_WORDS + 1);
        assert_eq!(weight_for(&long, 0.5), 0.5 * LONG_MESSAGE_FACTOR);
        assert_eq!(weight_for(&"word ".repeat(LONG_MESSAGE_WORDS), 0.5), 0.5);
        let lex = vec![4.0, 0.0, 2.0, 4.0];
        let sem = |weight| SemanticQuery {
            matrix: &m,
            query: &q,
            weight,
            rerank: &[],
        };
        let r = fuse(lex.clone(), Some(sem(0.5)));
        // By hand: lexical z (mean 2.5, sd 1.658) 0.905, -1.508, -0.302, 0.905; semantic z over
        // the three vectors (cosines 0, 1, 0.8: mean 0.6, sd 0.432) -1.389, 0.926, 0.463, and 0
        // for skill 3, which has none.
        let want = [-0.242f32, -0.291, 0.081, 0.452].map(f32::exp);
        for (got, want) in r.scores.iter().zip(want) {
            assert!((got - want).abs() < 1e-3, "{:?}", r.scores);
        }
        assert_eq!(
            r.order().iter().map(|o| o.0).collect::<Vec<_>>(),
            [3, 2, 0, 1]
        );
        assert_eq!(r.stage(1), Stage::Semantic);
        assert_eq!(r.stage(2), Stage::Semantic);
        assert_eq!(r.stage(0), Stage::Lexical);
        // Skill 3 has no vector: its lexical part alone, never a semantic win.
        assert_eq!(r.stage(3), Stage::Lexical);
        // Weight 0 is the lexical order (ties by index); no semantic query is the lexical
        // scores unchanged, and so is a query of another size.
        assert_eq!(fuse(lex.clone(), Some(sem(0.0))).order()[0].0, 0);
        assert_eq!(fuse(lex.clone(), None).scores, lex);
        let other = SemanticQuery {
            query: &[1.0],
            ..sem(1.0)
        };
        let r = fuse(lex.clone(), Some(other));
        assert_eq!(r.scores, lex);
        assert!(r.semantic_won.is_empty());
        // Unrelated (no lexical score, no positive similarity) stays 0; scores stay finite.
        let r = fuse(vec![0.0, 0.0, 0.0, 1e30], Some(sem(0.5)));
        assert_eq!(r.scores[0], 0.0);
        assert!(r.scores.iter().all(|s| s.is_finite() && *s >= 0.0));
    }

    #[test]
    fn the_reranker_reorders_its_candidates_and_nothing_else() {
        // Four skills, one dimension each; the first stages order them 0, 1, 2, 3.
        let m = SemanticMatrix::new(1, vec![1.0, 0.8, 0.6, 0.4], vec![true; 4]);
        let q = [1.0];
        let lex = vec![4.0, 3.0, 2.0, 1.0];
        let query = |rerank| SemanticQuery {
            matrix: &m,
            query: &q,
            weight: 0.5,
            rerank,
        };
        let first = fuse(lex.clone(), Some(query(&[])));
        assert!(!first.reranked && first.rerank_won.is_empty());
        let order = |r: &Relevance| r.order().iter().map(|o| o.0).collect::<Vec<_>>();
        assert_eq!(order(&first), [0, 1, 2, 3]);
        assert_eq!(rerank_candidates(&first), [0, 1, 2, 3]);
        // The reranker reads 1 and 2 and finds 2 far better: 2 moves above 1, not above 0
        // (its part is half a z-score's), and 0 and 3 keep their scores.
        let r = fuse(lex.clone(), Some(query(&[(1, -9.0), (2, 5.0)])));
        assert!(r.reranked);
        assert_eq!(order(&r), [0, 2, 1, 3]);
        assert_eq!(
            (r.scores[0], r.scores[3]),
            (first.scores[0], first.scores[3])
        );
        assert_eq!(r.stage(2), Stage::Rerank);
        assert_ne!(r.stage(1), Stage::Rerank);
        // Logits that are not numbers, of skills that are not there, or of one skill alone
        // change nothing; neither does an empty list.
        for bad in [
            &[(1, f32::NAN), (2, 5.0)][..],
            &[(1, 1.0), (99, 5.0)],
            &[(2, 5.0)],
        ] {
            let r = fuse(lex.clone(), Some(query(bad)));
            assert!(!r.reranked, "{bad:?}");
            assert_eq!(r.scores, first.scores, "{bad:?}");
        }
        // Equal logits: a z-score of 0 for each, the first stages' order.
        let r = fuse(lex, Some(query(&[(0, 2.0), (1, 2.0), (2, 2.0)])));
        assert_eq!(order(&r), [0, 1, 2, 3]);
    }

    #[test]
    fn a_peak_counts_by_its_height_over_the_rest() {
        // 20 skills, 2 dimensions, similarities spread evenly (skill 0 in the middle of them).
        // Skill 0 is the lexical stage's clear hit: far above a flat rest, it outweighs the
        // similarities' best, which is only as far above the rest as an even spread allows.
        let n = 20;
        let angle = |i: usize| if i == 0 { 0.62 } else { 0.6 + 0.002 * i as f32 };
        let data = (0..n)
            .flat_map(|i| [angle(i).cos(), angle(i).sin()])
            .collect();
        let m = SemanticMatrix::new(2, data, vec![true; n]);
        let q = [0.0, 1.0];
        let mut lex = vec![1.0; n];
        lex[0] = 9.0;
        let query = |matrix| SemanticQuery {
            matrix,
            query: &q,
            weight: 0.5,
            rerank: &[],
        };
        assert_eq!(fuse(lex, Some(query(&m))).order()[0].0, 0);
        // Skill 1 made the semantic stage's clear hit (the others' similarities as they were),
        // over lexical scores that barely differ (skill 19 highest): skill 1 comes first.
        let mut data = m.data.clone();
        data[2..4].copy_from_slice(&[0.0, 1.0]);
        let m = SemanticMatrix::new(2, data, vec![true; n]);
        let lex: Vec<f32> = (0..n).map(|i| 2.0 + 0.01 * i as f32).collect();
        assert_eq!(fuse(lex, Some(query(&m))).order()[0].0, 1);
    }

    #[test]
    fn the_passage_that_names_a_skill_speaks_for_the_message() {
        // 20 skills in 21 dimensions: a common part and one of their own each.
        let (n, dim) = (20, 21);
        let unit = |mut v: Vec<f32>| {
            normalize(&mut v);
            v
        };
        let data: Vec<f32> = (0..n)
            .flat_map(|i| {
                let mut v = vec![0.0; dim];
                v[0] = 2.0;
                v[1 + i] = 1.0;
                unit(v)
            })
            .collect();
        let m = SemanticMatrix::new(dim, data, vec![true; n]);
        // Passage 1 (a pasted log) is near every skill alike, with a slight lean to skill 2;
        // passage 2 (the request) names skill 5.
        let mut log = vec![0.0; dim];
        log[0] = 3.0;
        log[1 + 2] = 0.2;
        let mut request = vec![0.0; dim];
        request[0] = 1.0;
        request[1 + 5] = 1.0;
        let query: Vec<f32> = [unit(log.clone()), unit(request.clone())].concat();
        let sq = |query| SemanticQuery {
            matrix: &m,
            query,
            weight: 1.0,
            rerank: &[],
        };
        let two = sq(&query);
        assert!(two.fits());
        assert_eq!(two.passages().count(), 2);
        let lex = vec![1.0; n];
        // Read whole (its first passage alone), the message leans to skill 2; read as
        // passages, the request decides.
        assert_eq!(fuse(lex.clone(), Some(sq(&query[..dim]))).order()[0].0, 2);
        assert_eq!(fuse(lex.clone(), Some(two)).order()[0].0, 5);
        // Per skill, the best passage's cosine.
        let (a, b) = (m.cosines(&query[..dim]), m.cosines(&query[dim..]));
        for (i, c) in two.cosines().into_iter().enumerate() {
            assert_eq!(c, a[i].max(b[i]));
        }
        // A query that is not a whole number of vectors says nothing: the lexical order.
        for bad in [&query[..dim + 1], &query[..0]] {
            let q = sq(bad);
            assert!(!q.fits());
            assert_eq!(q.passages().count(), 0);
            assert_eq!(q.cosines(), vec![0.0; n]);
            assert!(fuse(lex.clone(), Some(q)).semantic_won.is_empty());
        }
    }

    #[test]
    fn a_skill_is_as_similar_as_its_best_vector() {
        // 20 skills in 22 dimensions: a common part and one of their own each; dimension 21 is
        // nobody's. Skill 4 has two further vectors (its body's sections), one of them along
        // dimension 21; skill 19 has none and no vector at all.
        let (n, dim) = (20, 22);
        let unit = |mut v: Vec<f32>| {
            normalize(&mut v);
            v
        };
        let axis = |i: usize, common: f32| {
            let mut v = vec![0.0; dim];
            v[0] = common;
            v[1 + i] = 1.0;
            unit(v)
        };
        let mut present = vec![true; n];
        present[19] = false;
        let data: Vec<f32> = (0..n)
            .flat_map(|i| {
                if present[i] {
                    axis(i, 2.0)
                } else {
                    vec![0.0; dim]
                }
            })
            .collect();
        let plain = SemanticMatrix::new(dim, data.clone(), present.clone());
        let sections: Vec<Arc<[f32]>> = [axis(20, 2.0), axis(7, 2.0), axis(20, 2.0), axis(3, 2.0)]
            .into_iter()
            .map(Arc::from)
            .collect();
        // Rows of a skill without a vector (19) or of no skill (99) are dropped.
        let m = SemanticMatrix::new(dim, data, present.clone()).with_sections(
            sections.clone(),
            vec![4, 4, 19, 99],
            2,
        );
        assert_eq!((m.owners.clone(), m.sections_missing), (vec![4, 4], 2));
        assert_eq!(m.vectors(), 19 + 2);
        assert_eq!(m.missing(), 1);
        let q = axis(20, 1.0);
        // Without sections, skill 4 is one of the crowd; with them, the first by far.
        let best = |v: &[f32]| (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
        let (before, after) = (plain.similarities(&q), m.similarities(&q));
        assert!((before[4] - before[0]).abs() < 1e-5, "{before:?}");
        assert_eq!(best(&after), 4);
        assert!(after[4] > before[4] + 0.5, "{} -> {}", before[4], after[4]);
        // Per skill the best of its vectors, raw and centred; centring is on the skills' first
        // vectors alone, so a skill without sections keeps its similarity.
        let own = plain.cosines(&q);
        let sec = [dot(&sections[0], &q), dot(&sections[1], &q)];
        assert_eq!(m.cosines(&q)[4], own[4].max(sec[0]).max(sec[1]));
        for i in (0..n).filter(|&i| i != 4) {
            assert_eq!(after[i], before[i], "skill {i}");
            assert_eq!(m.cosines(&q)[i], own[i]);
        }
        // A query along skill 7's own axis: skill 4's section on that axis ties skill 7.
        let q7 = axis(7, 1.0);
        let s7 = m.similarities(&q7);
        assert!((s7[4] - s7[7]).abs() < 1e-5, "{} {}", s7[4], s7[7]);
        // Sizes that disagree: no further vectors. Few skills: the raw best-of cosines.
        let bad = SemanticMatrix::new(dim, plain.data.clone(), present.clone()).with_sections(
            vec![Arc::from(vec![1.0; dim + 1])],
            vec![4],
            0,
        );
        assert!(bad.owners.is_empty() && bad.sections.is_empty());
        let few = SemanticMatrix::new(dim, plain.data[..dim * 5].to_vec(), vec![true; 5])
            .with_sections(vec![sections[0].clone()], vec![4], 0);
        assert_eq!(few.similarities(&q), few.cosines(&q));
        assert_eq!(best(&few.similarities(&q)), 4);
        // Fusion reads the best vector: the section lifts skill 4 first.
        let sq = SemanticQuery {
            matrix: &m,
            query: &q,
            weight: 0.75,
            rerank: &[],
        };
        assert_eq!(fuse(vec![1.0; n], Some(sq)).order()[0].0, 4);
    }

    #[test]
    fn centring_separates_skills_crowded_in_one_cone() {
        // 20 skills whose vectors share one large component (as every sentence encoder's do)
        // and differ in small ones; a query close to skill 3's direction.
        let dim = 24;
        let unit = |mut v: Vec<f32>| {
            normalize(&mut v);
            v
        };
        let mut data = Vec::new();
        for i in 0..20 {
            let mut v = vec![0.0; dim];
            v[0] = 5.0;
            v[1 + i] = 1.0;
            // A skill with a larger common part: closer to everything by raw cosine.
            if i == 7 {
                v[0] = 9.0;
            }
            data.extend(unit(v));
        }
        let mut q = vec![0.0; dim];
        q[0] = 5.0;
        q[4] = 1.2;
        let q = unit(q);
        let m = SemanticMatrix::new(dim, data.clone(), vec![true; 20]);
        let raw = m.cosines(&q);
        let sim = m.similarities(&q);
        let best = |v: &[f32]| (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
        assert_eq!(best(&raw), 3);
        // Raw cosines crowd together; centred ones spread out (best far above the rest).
        let spread = |v: &[f32], i: usize| {
            v[i] - v
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, x)| *x)
                .fold(f32::MIN, f32::max)
        };
        assert!(spread(&sim, 3) > 5.0 * spread(&raw, 3), "{sim:?} / {raw:?}");
        assert_eq!(best(&sim), 3);
        // Too few skills: the raw cosines.
        let few = SemanticMatrix::new(dim, data[..dim * 5].to_vec(), vec![true; 5]);
        assert_eq!(few.similarities(&q), few.cosines(&q));
        // A query using only part of the dimensions is centred over that part alone.
        let mut half = vec![0.0; dim];
        half[..12].copy_from_slice(&q[..12]);
        let s = m.similarities(&half);
        assert!(s.iter().all(|x| x.is_finite()));
        assert_eq!(best(&s), 3);
    }
}
