//! Skill usage: `GET /v1/skills/{name}/usage` and `GET /v1/usage`, read from the store's usage
//! aggregates. An admin reads every agent's figures (or one's, `?agent=`); an agent token reads
//! only its own agent's, about the skills it may see, so it learns nothing of another agent.

use super::extract::{Caller, P, Q, hidden};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use skillbase_store::AgentName;
use skillbase_store::usage::{LibraryUsage, SkillUsage, parse_since, today};
use std::sync::Arc;
use utoipa::IntoParams;

/// Which window, and whose figures.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// Only this agent's figures. An agent token always reads its own agent's (naming another
    /// answers 404, as a missing agent does).
    #[param(value_type = Option<AgentName>)]
    pub agent: Option<String>,
    /// The window's first day: a date (`2026-01-31`, UTC) or a number of days back (`30d`,
    /// the default).
    pub since: Option<String>,
}

/// The agent whose figures to read (`None`: every agent, admins only) and the window's first
/// day.
fn window(p: &Principal, q: &UsageQuery) -> ApiResult<(Option<AgentName>, i64)> {
    let named = match q.agent.as_deref() {
        Some(raw) => Some(
            AgentName::parse(raw)
                .map_err(|e| ApiError::bad_request(format!("bad query string: agent: {e}")))?,
        ),
        None => None,
    };
    let agent = match (p.agent(), named) {
        (Some(own), Some(n)) => {
            p.require_agent(&n)?;
            Some(own.clone())
        }
        (Some(own), None) => Some(own.clone()),
        (None, n) => n,
    };
    let since = parse_since(q.since.as_deref().unwrap_or("30d"), today())
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
    Ok((agent, since))
}

/// A skill's usage over a window: activations by reason (eager, trigger, path, explicit, load,
/// companion), per agent, revision and day; how often it was listed in full, by name only or
/// left out; runs and their outcomes per revision, drift; tokens spent on its body; runs that
/// ended with no call (loaded, then never followed). Kept beside the events, so trimmed events
/// still count; `approximate` says which figures the events cannot give exactly.
#[utoipa::path(get, path = "/v1/skills/{name}/usage", tag = "usage",
    params(("name" = String, Path), UsageQuery),
    responses((status = 200, body = SkillUsage),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such skill or agent, or one this token may not see (answered alike)", body = Problem, content_type = "application/problem+json")))]
pub async fn skill(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<UsageQuery>,
) -> ApiResult<Json<SkillUsage>> {
    let (agent, since) = window(&p, &q)?;
    let known = match p.agent() {
        Some(a) => st.engine.view(a)?.get(&name).is_some(),
        None => st.store.index().all().any(|e| e.name == name),
    };
    if !known {
        return Err(hidden(&name));
    }
    // Events are written behind: what this server recorded is counted first.
    st.engine.flush().await;
    let agent = agent.as_ref().map(AgentName::as_str);
    Ok(Json(st.store.skill_usage(&name, agent, since).await?))
}

/// The library's usage over a window: each skill's activations, body tokens, runs, unfollowed
/// runs and drift, most activated first; and the active skills no agent (or the agent read)
/// activated in the window.
#[utoipa::path(get, path = "/v1/usage", tag = "usage", params(UsageQuery),
    responses((status = 200, body = LibraryUsage),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent, or one this token may not see (answered alike)", body = Problem, content_type = "application/problem+json")))]
pub async fn library(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    Q(q): Q<UsageQuery>,
) -> ApiResult<Json<LibraryUsage>> {
    let (agent, since) = window(&p, &q)?;
    st.engine.flush().await;
    let mut u = st
        .store
        .library_usage(agent.as_ref().map(AgentName::as_str), since)
        .await?;
    if let Some(a) = p.agent() {
        // Only what the agent may see now.
        let view = st.engine.view(a)?;
        u.skills.retain(|s| view.get(&s.skill).is_some());
        u.never_used.retain(|s| view.get(&s.name).is_some());
    }
    Ok(Json(u))
}
