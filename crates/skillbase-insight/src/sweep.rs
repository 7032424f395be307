//! How routing holds as a library grows: `skillbase eval --sweep`.
//!
//! The same labelled cases are measured on the agent's own skills, then with the library grown
//! by distractors (skills no case expects: a public pool such as SkillRouter's) at each size
//! asked for. The agent's skills and the distractors are written into a scratch engine (its
//! own store, never the caller's), the distractors in growing prefixes, so each size holds the
//! smaller ones and the semantic stage's vectors (kept per revision digest) are computed once.
//! Each point is measured exactly as [`crate::eval`] measures: the real turn path and ranking,
//! run off the async workers (a server's sweep leaves them to its requests). Dropping the
//! sweep's future stops it at its next step (a batch of vectors, a size's evaluation).
//!
//! In the scratch store the agent sees every skill (its allowlist widened to `all`, its other
//! settings kept): a distractor it could not see would measure nothing.

use crate::eval::{EvalCase, Metrics, evaluate_with};
use serde::Serialize;
use skillbase_format::{Bundle, Digest};
use skillbase_runtime::{Engine, TurnOptions};
use skillbase_store::{AgentName, Author, NameSet, Scope, Store};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// Most sizes one sweep measures.
pub const MAX_SIZES: usize = 32;

/// One size of the library, measured.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// Distractors added to the agent's skills.
    pub distractors: usize,
    /// Skills the agent saw.
    pub skills: usize,
    /// The cases' figures at this size.
    pub overall: Metrics,
    /// How well the first skill's confidence is calibrated at this size.
    pub calibration: crate::calibration::CalibrationReport,
    /// The cases as `eval --fit-confidence` reads them (not serialized).
    #[serde(skip)]
    pub fit: Vec<skillbase_route::confidence::FitCase>,
    /// Seconds spent at this size: writing the distractors, the semantic stage's new vectors
    /// and the evaluation.
    pub seconds: f64,
}

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// No size, or too many.
    #[error("{0}")]
    Sizes(String),
    /// The caller's store or the scratch engine failed.
    #[error("{0}")]
    Engine(String),
}

/// What a sweep reads: the caller's engine and agent, the cases, and the distractors in the
/// order their prefixes are taken.
pub struct SweepInput<'a> {
    /// The engine over the caller's store (read only).
    pub source: &'a Engine,
    /// An engine over an empty scratch store, configured like `source` (its semantic stage
    /// above all).
    pub scratch: &'a Engine,
    /// The agent measured.
    pub agent: &'a AgentName,
    /// The labelled cases.
    pub cases: &'a [EvalCase],
    /// Budgets for the turns.
    pub opts: &'a TurnOptions,
    /// Distractor skills (taken in a fixed shuffle of their names; ones named like the agent's
    /// skills, repeated names and bundles the store would refuse are left out).
    pub distractors: Vec<Bundle>,
    /// Library sizes, as numbers of distractors added (0 is the agent's skills alone).
    pub sizes: Vec<usize>,
}

/// Measure `input.cases` at each size; `each` sees every point as soon as it is measured.
pub async fn sweep(
    input: SweepInput<'_>,
    mut each: impl FnMut(&SweepPoint),
) -> Result<Vec<SweepPoint>, SweepError> {
    let engine_err = |e: &dyn std::fmt::Display| SweepError::Engine(e.to_string());
    let mut seen = copy_agent(input.source, input.scratch, input.agent).await?;
    // A distractor named like one of the agent's skills (or an earlier distractor) would
    // replace it; one the store would refuse would fail its whole batch: both are left out.
    let mut distractors: Vec<(String, Bundle)> = input
        .distractors
        .into_iter()
        .filter_map(|b| {
            let (name, _) = Store::check_bundle(&b).ok()?;
            seen.insert(name.clone()).then_some((name, b))
        })
        .collect();
    // A fixed shuffle (by the SHA-256 of each name): the prefixes do not depend on how the
    // pool's folders happen to be named or listed, and are the same on every machine.
    distractors.sort_by_cached_key(|(name, _)| Digest::of(name.as_bytes()).0);
    let sizes = checked_sizes(&input.sizes, distractors.len())?;
    let cases: Arc<[EvalCase]> = input.cases.into();
    let mut added = 0;
    let mut points = Vec::with_capacity(sizes.len());
    for size in sizes {
        let started = Instant::now();
        let batch: Vec<_> = distractors
            .drain(..size - added)
            .map(|(_, b)| (b, None, None))
            .collect();
        if !batch.is_empty() {
            let author = Author::Import("sweep".into());
            input
                .scratch
                .writer()
                .import(&Scope::Shared, batch, &author, "sweep", &|_| {})
                .await
                .map_err(|e| engine_err(&e))?;
        }
        added = size;
        let view = input
            .scratch
            .view(input.agent)
            .map_err(|e| engine_err(&e))?;
        let messages: Vec<&str> = cases.iter().map(|c| c.message.as_str()).collect();
        let vectors = input
            .scratch
            .query_vectors(&view, &messages)
            .await
            .map_err(|e| engine_err(&e))?;
        let (cases, opts) = (cases.clone(), input.opts.clone());
        let report = tokio::task::spawn_blocking(move || {
            evaluate_with(&view, &cases, &opts, vectors.as_ref())
        })
        .await
        .map_err(|e| engine_err(&e))?;
        let point = SweepPoint {
            distractors: added,
            skills: report.skills,
            overall: report.overall,
            calibration: report.calibration,
            fit: report.outcomes.into_iter().map(|o| o.fit).collect(),
            seconds: started.elapsed().as_secs_f64(),
        };
        each(&point);
        points.push(point);
    }
    Ok(points)
}

/// The sizes a sweep measures when none are given: 0, 100, 1,000 and 10,000 below the pool's
/// size, and the whole pool.
pub fn default_sizes(pool: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [0, 100, 1_000, 10_000]
        .into_iter()
        .filter(|&k| k < pool)
        .collect();
    v.push(pool);
    v
}

/// The sizes in increasing order, without repeats; a size beyond the usable distractors is
/// measured at all of them (its point says how many that was).
fn checked_sizes(sizes: &[usize], available: usize) -> Result<Vec<usize>, SweepError> {
    if sizes.is_empty() || sizes.len() > MAX_SIZES {
        return Err(SweepError::Sizes(format!(
            "give 1 to {MAX_SIZES} sizes (this sweep has {})",
            sizes.len()
        )));
    }
    let mut sizes: Vec<usize> = sizes.iter().map(|&s| s.min(available)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

/// Write the agent's skills (the active revisions it sees) and the agent itself, seeing every
/// skill, into the scratch engine; the names written.
async fn copy_agent(
    source: &Engine,
    scratch: &Engine,
    agent: &AgentName,
) -> Result<HashSet<String>, SweepError> {
    let err = |e: &dyn std::fmt::Display| SweepError::Engine(e.to_string());
    let view = source.view(agent).map_err(|e| err(&e))?;
    let mut bundles = Vec::with_capacity(view.skills.len());
    for s in &view.skills {
        let e = &s.entry;
        let (_, bundle) = source
            .store()
            .bundle(&e.scope, &e.name, Some(e.active_rev))
            .await
            .map_err(|e| err(&e))?;
        bundles.push((bundle, None, None));
    }
    let names = view.skills.iter().map(|s| s.name().to_owned()).collect();
    if !bundles.is_empty() {
        scratch
            .writer()
            .import(
                &Scope::Shared,
                bundles,
                &Author::Import("sweep".into()),
                "the agent's skills",
                &|_| {},
            )
            .await
            .map_err(|e| err(&e))?;
    }
    let mut config = view.agent.config.clone();
    config.skills = NameSet::All;
    // The configuration may already have defined the agent in the scratch store.
    let store = scratch.store();
    let defined = store.agent(agent).await.map_err(|e| err(&e))?.is_some();
    if defined {
        store.set_agent(agent, &config).await
    } else {
        store.create_agent(agent, &config).await
    }
    .map_err(|e| err(&e))?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_sorted_deduplicated_and_capped_at_the_pool() {
        assert_eq!(checked_sizes(&[100, 0, 10, 10], 100).unwrap(), [0, 10, 100]);
        // Past the pool: measured at the whole pool, once.
        assert_eq!(checked_sizes(&[0, 500, 1000], 100).unwrap(), [0, 100]);
        assert!(checked_sizes(&[], 10).is_err());
        assert!(checked_sizes(&(0..40).collect::<Vec<_>>(), 100).is_err());
    }
}
