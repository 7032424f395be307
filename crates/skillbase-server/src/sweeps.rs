//! REST's scale sweeps as server state: the jobs (one running at a time) and the semantic stage
//! their scratch engines share. The routes are `rest::sweeps`.

use crate::jobs::{self, Jobs};
use skillbase_insight::sweep::SweepPoint;
use skillbase_runtime::Semantic;
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

/// Sweeps running at once in the whole server (each uses every core while it embeds).
pub(crate) const MAX_RUNNING: usize = 1;

/// What a sweep shares with the task running it.
pub(crate) struct SweepLive {
    /// The sizes asked for (distractors added), in increasing order.
    pub(crate) sizes: Vec<usize>,
    /// Skills read from the pool.
    pub(crate) pool: usize,
    /// Labelled cases measured at each size.
    pub(crate) cases: usize,
    /// The sizes measured so far.
    pub(crate) points: Mutex<Vec<SweepPoint>>,
    /// Cancelled by `DELETE`: the sweep stops at its next step.
    pub(crate) stop: CancellationToken,
}

pub(crate) type SweepJob = jobs::Job<(), SweepLive>;

/// The server's sweeps: the jobs, and the semantic stage their scratch engines share.
pub(crate) struct Sweeps {
    pub(crate) jobs: Jobs<(), SweepLive>,
    /// The server's semantic stage's [`Semantic::sibling`], made at the first sweep and kept,
    /// so the pool's vectors are computed once per server run.
    pub(crate) semantic: OnceLock<Option<Arc<Semantic>>>,
}

impl Default for Sweeps {
    fn default() -> Sweeps {
        Sweeps {
            jobs: Jobs::new(MAX_RUNNING, MAX_RUNNING),
            semantic: OnceLock::new(),
        }
    }
}
