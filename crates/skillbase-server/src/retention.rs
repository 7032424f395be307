//! The retention job in the server: the `[retention]` policy applied at start, then every
//! `interval` (the same job as `skillbase gc`, `Store::apply_retention`). Several servers on one
//! database may each run it: the job is one transaction, and a second run finds less to remove.

use crate::state::AppState;
use std::sync::Arc;

/// Apply the policy now and then every interval, until the task is aborted; does nothing
/// without a policy. A failure is logged and tried again at the next interval.
pub async fn retention_loop(state: Arc<AppState>) {
    let Some(policy) = state.options.retention.clone() else {
        return;
    };
    if policy.is_empty() {
        return;
    }
    loop {
        // Events written behind are stored first, so the job sees what the server recorded.
        state.engine.flush().await;
        match state.store.apply_retention(&policy, None).await {
            Ok(report) if report.is_empty() => {}
            Ok(report) => {
                state.engine.forget_sessions(&report.session_ids);
                tracing::info!(
                    events = report.events_total(),
                    sessions = report.sessions,
                    activations = report.activations,
                    "retention: trimmed"
                );
            }
            Err(e) => tracing::warn!(error = %e, "retention: the job failed; trying again later"),
        }
        tokio::time::sleep(policy.interval).await;
    }
}
