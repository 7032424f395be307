//! `sync --watch`: sync again whenever the agent's view changes. The store is polled for other
//! processes' writes (`Store::sync_changes`, the server's way) and its index watched for this
//! process's; the view is compared in memory, so an idle watch reads no file and writes none.

use super::{Report, SyncError, SyncOptions, Wanted, sync, wanted};
use skillbase_store::Store;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Follows the store and syncs the view each time it changes; stops when dropped.
pub struct Watcher {
    task: tokio::task::JoinHandle<()>,
    syncs: Arc<AtomicU64>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watcher {
    /// Sync now, then each time the view changes, checking every `poll` for other processes'
    /// writes. Each sync's outcome is passed to `on_sync`.
    pub fn start(
        store: Arc<Store>,
        opts: SyncOptions,
        poll: Duration,
        on_sync: impl Fn(Result<Report, SyncError>) + Send + Sync + 'static,
    ) -> Watcher {
        let syncs = Arc::new(AtomicU64::new(0));
        let counted = syncs.clone();
        let task = tokio::spawn(async move {
            let mut changed = store.subscribe();
            let mut last: Option<Result<Vec<Wanted>, String>> = None;
            loop {
                let now = wanted(&store, opts.agent.as_ref())
                    .map(|(w, _)| w)
                    .map_err(|e| e.to_string());
                if last.as_ref() != Some(&now) {
                    counted.fetch_add(1, Ordering::Relaxed);
                    on_sync(sync(&store, &opts).await);
                    last = Some(now);
                }
                tokio::select! {
                    _ = tokio::time::sleep(poll) => {}
                    _ = changed.changed() => {}
                }
                if let Err(e) = store.sync_changes().await {
                    on_sync(Err(e.into()));
                }
            }
        });
        Watcher { task, syncs }
    }

    /// How many syncs the watcher has run (an unchanged view runs none).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}
