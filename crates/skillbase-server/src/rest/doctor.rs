//! The doctor: `GET /v1/doctor`, the drift between prompts, agents and the catalog. An admin sees
//! every finding (or one agent's with `?agent=`); an agent token sees only its own agent's
//! findings about what it may see. Every answer records one `doctor` event.

use super::extract::{Caller, Q};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use skillbase_runtime::doctor::{DoctorOptions, DoctorReport};
use skillbase_store::AgentName;
use std::sync::Arc;
use utoipa::{IntoParams, ToSchema};

/// Which findings to report.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DoctorQuery {
    /// Only this agent: its findings and those of the skill records it holds. An agent token
    /// always gets its own agent's (naming another answers 404, as a missing agent does).
    #[param(pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$")]
    pub agent: Option<String>,
}

/// A finding's stable code (`D001`…`D013`, each documented in the README).
#[derive(ToSchema)]
#[schema(as = DoctorCode, value_type = String, pattern = r"^D0(0[1-9]|1[0-3])$")]
#[allow(dead_code)]
pub struct CodeDoc(String);

/// How much a finding matters.
#[derive(serde::Serialize, ToSchema)]
#[schema(as = DoctorSeverity)]
#[allow(dead_code)]
#[serde(rename_all = "lowercase")]
pub enum SeverityDoc {
    /// Broken now (`skillbase doctor` exits 1).
    Error,
    /// Drift that will break something.
    Warning,
    /// Worth knowing.
    Info,
}

/// One finding: what is wrong, where, and the fix.
#[derive(ToSchema)]
#[schema(as = DoctorFinding)]
#[allow(dead_code)]
pub struct FindingDoc {
    code: CodeDoc,
    severity: SeverityDoc,
    /// The agent it concerns.
    #[schema(required = false)]
    agent: String,
    /// The skill it concerns.
    #[schema(required = false)]
    skill: String,
    /// The scope of that skill's record (`shared` or `agent:<name>`).
    #[schema(required = false)]
    scope: String,
    /// `SKILL.md`, a prompt's path, `prompts[N]` (an inline prompt) or `message` (a revision's).
    #[schema(required = false)]
    file: String,
    /// The 1-based line in that file.
    #[schema(required = false, minimum = 1)]
    line: u32,
    /// The other name the finding is about (a skill named, a companion, a phrase, ...).
    #[schema(required = false)]
    related: String,
    /// What is wrong.
    message: String,
    /// What to do about it.
    fix: String,
}

/// Findings by severity.
#[derive(ToSchema)]
#[schema(as = DoctorCounts)]
#[allow(dead_code)]
pub struct CountsDoc {
    errors: usize,
    warnings: usize,
    infos: usize,
}

/// What the run read.
#[derive(ToSchema)]
#[schema(as = DoctorChecked)]
#[allow(dead_code)]
pub struct CheckedDoc {
    agents: usize,
    skills: usize,
    prompts: usize,
    turns: usize,
}

/// What the doctor found.
#[derive(ToSchema)]
#[schema(as = DoctorReport)]
#[allow(dead_code)]
pub struct ReportDoc {
    /// The agent the report is limited to.
    #[schema(required = false)]
    agent: String,
    /// Errors first, then by code, agent, skill and line.
    findings: Vec<FindingDoc>,
    counts: CountsDoc,
    checked: CheckedDoc,
    /// Checks that could not be made, and why (never silent, never a finding).
    unchecked: Vec<String>,
}

/// The drift between prompts, agents and the catalog, from mechanical inputs only: each finding
/// with its code, severity, the agent, skill, file and line it concerns, and the fix. An admin
/// token sees every finding, or one agent's (`?agent=`: its findings and those of the skill
/// records it holds); an agent token sees only its own agent's findings about what it may see.
/// Records one `doctor` event.
#[utoipa::path(get, path = "/v1/doctor", tag = "doctor", params(DoctorQuery),
    responses((status = 200, body = ReportDoc),
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
    Ok(Json(st.engine.doctor(&opts).await?))
}
