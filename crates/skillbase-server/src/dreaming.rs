//! Dreaming on a schedule: with `[dreaming] idle_minutes = N`, the server dreams for an agent
//! once its sessions have been quiet for N minutes since their newest recorded call or message,
//! and something was recorded since its last dream (so a quiet store is not dreamed again and
//! again). Each dream is the same as `skillbase dream --agent A`, recorded as a `dream` event.

use crate::state::AppState;
use skillbase_store::Author;
use std::sync::Arc;
use std::time::Duration;

/// Whether `agent` is due: its newest conversation event is at least `idle` old and newer than
/// its newest dream.
pub async fn due(
    state: &AppState,
    agent: &str,
    idle: Duration,
    now_ms: i64,
) -> Result<bool, skillbase_store::StoreError> {
    let mut newest = None::<i64>;
    for kind in ["tool_called", "transcript_call", "user_message"] {
        if let Some(e) = state.store.recent_events(agent, kind, 1).await?.first() {
            newest = Some(newest.map_or(e.at, |n: i64| n.max(e.at)));
        }
    }
    let Some(newest) = newest else {
        return Ok(false);
    };
    let last_dream = state
        .store
        .recent_events(agent, "dream", 1)
        .await?
        .first()
        .map(|e| e.at);
    let quiet = now_ms.saturating_sub(newest) >= idle.as_millis() as i64;
    Ok(quiet && last_dream.is_none_or(|d| d < newest))
}

/// Check every agent now and then (every minute, or the idle time when shorter), until the
/// task is aborted; does nothing without `[dreaming] idle_minutes`.
pub async fn dreaming_loop(state: Arc<AppState>) {
    let Some(minutes) = state.engine.dreaming().and_then(|c| c.idle_minutes) else {
        return;
    };
    let idle = Duration::from_secs(minutes * 60);
    let every = idle.min(Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        dream_due(&state, idle).await;
    }
}

/// One pass: dream for every agent that is due.
pub async fn dream_due(state: &AppState, idle: Duration) {
    state.engine.flush().await;
    let agents = match state.store.agents().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "dreaming: reading the agents failed; trying again later");
            return;
        }
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    for a in agents {
        match due(state, a.name.as_str(), idle, now).await {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!(agent = %a.name, error = %e, "dreaming: reading the agent's events failed");
                continue;
            }
        }
        let min_support = state
            .engine
            .dreaming()
            .and_then(|c| c.min_support)
            .unwrap_or(3);
        let opts = skillbase_insight::dream::DreamOptions {
            min_support,
            actor: Author::Human("dreaming-schedule".into()),
            ..Default::default()
        };
        match skillbase_insight::dream::run(&state.engine, &a.name, &opts).await {
            Ok(r) => tracing::info!(
                agent = %a.name,
                created = r.created.len(),
                rejected = r.rejected.len(),
                "dreaming: dreamed after {} idle minutes",
                idle.as_secs() / 60
            ),
            Err(e) => tracing::warn!(agent = %a.name, error = %e, "dreaming: the dream failed"),
        }
    }
}
