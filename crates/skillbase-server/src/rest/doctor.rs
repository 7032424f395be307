//! The doctor: `GET /v1/doctor`, the drift between prompts, agents and the catalog. An admin sees
//! every finding (or one agent's with `?agent=`); an agent token sees only its own agent's
//! findings about what it may see. Every answer records one `doctor` event.

use super::extract::{Caller, Q};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use skillbase_insight::doctor::{DoctorOptions, DoctorReport};
use skillbase_store::AgentName;
use std::sync::Arc;
use utoipa::IntoParams;

/// Which findings to report.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DoctorQuery {
    /// Only this agent: its findings and those of the skill records it holds. An agent token
    /// always gets its own agent's (naming another answers 404, as a missing agent does).
    #[param(value_type = Option<AgentName>)]
    pub agent: Option<String>,
}

/// The drift between prompts, agents and the catalog, from mechanical inputs only: each finding
/// with its code, severity, the agent, skill, file and line it concerns, and the fix. An admin
/// token sees every finding, or one agent's (`?agent=`: its findings and those of the skill
/// records it holds); an agent token sees only its own agent's findings about what it may see.
/// Records one `doctor` event.
#[utoipa::path(get, path = "/v1/doctor", tag = "doctor", params(DoctorQuery),
    responses((status = 200, body = DoctorReport),
        (status = 404, description = "No such agent, or one this token may not see (answered alike)", body = Problem, content_type = "application/problem+json")))]
pub async fn report(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    Q(q): Q<DoctorQuery>,
) -> ApiResult<Json<DoctorReport>> {
    let named = match q.agent.as_deref() {
        Some(raw) => Some(
            AgentName::parse(raw)
                .map_err(|e| ApiError::bad_request(format!("bad query string: agent: {e}")))?,
        ),
        None => None,
    };
    let (agent, own_only) = match (p.agent(), named) {
        (Some(own), Some(n)) => {
            p.require_agent(&n)?;
            (Some(own.clone()), true)
        }
        (Some(own), None) => (Some(own.clone()), true),
        (None, n) => (n, false),
    };
    let opts = DoctorOptions {
        agent,
        own_only,
        prompt: None,
        actor: p.author().to_string(),
    };
    Ok(Json(
        skillbase_insight::doctor::run(&st.engine, &opts).await?,
    ))
}
