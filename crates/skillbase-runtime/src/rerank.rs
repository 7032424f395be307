//! The rerank stage: a cross-encoder reading the message and each of the first candidates
//! together ([`skillbase_embed::Reranker`], cross-encoder/ms-marco-MiniLM-L-12-v2, in process),
//! its logits fused with the first stages' mix ([`skillbase_route::fusion`]'s `rerank`).
//!
//! On by `rerank = true` in `[semantic]` (it reranks the fused ranking, so it needs the semantic
//! stage); its weights come with `skillbase model pull`. A reranker that is configured but not
//! there leaves the ranking as the first stages give it, and the stages line says why.

use skillbase_route::fusion::{Relevance, SemanticQuery, rerank_candidates};
use skillbase_route::view::AgentView;
use skillbase_store::SkillEntry;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Word pieces of a (message, skill) pair the reranker reads, all markers included: the
/// message's first 48 at most (half the pair), the skill's text the rest. 160 ranked the
/// repository's set within two cases of 96 at nearly twice the cost (BENCHMARKS.md, "The
/// reranker").
pub const RERANK_TOKENS: usize = 96;
/// Words of a skill's body in its rerank text, after its name, description and `when_to_use`.
pub const RERANK_BODY_WORDS: usize = 60;

/// Where `skillbase model pull` puts the reranker: `$SKILLBASE_RERANKER_DIR`, else beside the
/// English model ([`crate::default_model_dir`]).
pub fn default_reranker_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SKILLBASE_RERANKER_DIR") {
        return PathBuf::from(d);
    }
    crate::default_model_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join(skillbase_embed::package::RERANKER.model)
}

/// What the reranker reads of a skill: its name in words, its description, its `when_to_use`
/// entries and the opening words of its body (code fences and headings' marks left out).
pub fn rerank_text(entry: &SkillEntry) -> String {
    let mut out = crate::reading::skill_head(entry, 600);
    let body: Vec<&str> = entry
        .body
        .split_whitespace()
        .filter(|w| !w.starts_with('#') && !w.starts_with("```") && !w.starts_with('|'))
        .take(RERANK_BODY_WORDS)
        .collect();
    if !body.is_empty() {
        out.push(' ');
        out.push_str(&body.join(" "));
    }
    out
}

/// The loaded reranker.
pub struct Rerank {
    model: Arc<skillbase_embed::Reranker>,
}

impl std::fmt::Debug for Rerank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rerank")
            .field("model", &self.model.model_id())
            .finish()
    }
}

impl Rerank {
    /// Loads the reranker of `dir`; `Err(why)` names the folder and what to run when it is
    /// not there or does not load.
    pub fn load(dir: &Path) -> Result<Rerank, String> {
        if !skillbase_embed::Reranker::present(dir) {
            return Err(format!(
                "the reranker is not at {} (run `skillbase model pull`)",
                dir.display()
            ));
        }
        let model = skillbase_embed::Reranker::load(dir)
            .map_err(|e| format!("the reranker at {} does not load: {e}", dir.display()))?;
        Ok(Rerank {
            model: Arc::new(model),
        })
    }

    /// The model's id, e.g. `ms-marco-MiniLM-L-12-v2@1225ccd6afd0f1b4`.
    pub fn model_id(&self) -> &str {
        self.model.model_id()
    }

    /// What the reranker reads for `message` and `query`'s ranking on `view`: the first
    /// stages' first candidates ([`rerank_candidates`]), their texts, and the message as the
    /// encoders read it (a long one's passages of prose, so a pasted log does not take the
    /// reranker's share of the pair). `None` with fewer than two candidates, or for a message
    /// in another language than English or a long one.
    fn job(view: &AgentView, message: &str, query: SemanticQuery<'_>) -> Option<Job> {
        // The model was trained on English queries and passages (MS MARCO): another language's
        // message keeps the first stages' order (on the repository's set it read those wrong
        // twice as often as the encoders: BENCHMARKS.md, "The reranker").
        if !crate::reading::reads_as_english(message) {
            return None;
        }
        let folded = skillbase_route::trigger::fold_fast(message);
        // A long message (a pasted log, a ticket) is read by the first stages as passages; the
        // reranker's 64 word pieces of it lost most of them (long messages r@1 0.950 -> 0.600 on
        // the repository's set): it keeps the first stages' order.
        if skillbase_route::fusion::is_long(&folded) {
            return None;
        }
        let first: Relevance = view.relevance(
            &folded,
            Some(SemanticQuery {
                rerank: &[],
                ..query
            }),
        );
        let candidates = rerank_candidates(&first);
        if candidates.len() < 2 {
            return None;
        }
        let texts = candidates
            .iter()
            .map(|&i| rerank_text(&view.skills[i as usize].entry))
            .collect();
        Some(Job {
            message: crate::reading::query_passages(message).join(" "),
            candidates,
            texts,
        })
    }

    fn run(model: &skillbase_embed::Reranker, job: &Job) -> Vec<(u32, f32)> {
        let t: Vec<&str> = job.texts.iter().map(String::as_str).collect();
        let logits = model.score(&job.message, &t, RERANK_TOKENS);
        job.candidates.iter().copied().zip(logits).collect()
    }

    /// The reranker's logits for `message` and the first candidates of `query`'s ranking on
    /// `view`: `(skill index, logit)`, what [`SemanticQuery::rerank`] takes (empty with fewer
    /// than two candidates). Computed off the async runtime (one packed forward pass).
    pub async fn logits(
        &self,
        view: &AgentView,
        message: &str,
        query: SemanticQuery<'_>,
    ) -> Result<Vec<(u32, f32)>, String> {
        let Some(job) = Rerank::job(view, message, query) else {
            return Ok(Vec::new());
        };
        let model = self.model.clone();
        tokio::task::spawn_blocking(move || Rerank::run(&model, &job))
            .await
            .map_err(|e| format!("the reranker's task failed: {e}"))
    }

    /// [`Rerank::logits`] of many messages, `queries[i]` the first stages' query of
    /// `messages[i]`, on every core (what an evaluation needs).
    pub async fn logits_many(
        &self,
        view: &AgentView,
        messages: &[&str],
        queries: &[SemanticQuery<'_>],
    ) -> Result<Vec<Vec<(u32, f32)>>, String> {
        let jobs: Vec<Option<Job>> = messages
            .iter()
            .zip(queries)
            .map(|(m, q)| Rerank::job(view, m, *q))
            .collect();
        let model = self.model.clone();
        tokio::task::spawn_blocking(move || {
            let threads = std::thread::available_parallelism().map_or(1, usize::from);
            let next = std::sync::atomic::AtomicUsize::new(0);
            let mut out: Vec<Vec<(u32, f32)>> = vec![Vec::new(); jobs.len()];
            let done = std::sync::Mutex::new(&mut out);
            std::thread::scope(|s| {
                for _ in 0..threads.min(jobs.len()) {
                    s.spawn(|| {
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(job) = jobs.get(i) else { break };
                            let r = job
                                .as_ref()
                                .map(|j| Rerank::run(&model, j))
                                .unwrap_or_default();
                            done.lock().unwrap_or_else(|p| p.into_inner())[i] = r;
                        }
                    });
                }
            });
            out
        })
        .await
        .map_err(|e| format!("the reranker's task failed: {e}"))
    }
}

/// One message's rerank work.
struct Job {
    message: String,
    candidates: Vec<u32>,
    texts: Vec<String>,
}
