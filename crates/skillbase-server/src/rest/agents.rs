//! Agents: list and show (an agent token sees its own agent only), create and update (admin).

use super::extract::{Body, Caller, P, agent_name, etag, precondition, unprocessable};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillbase_store::{Agent, AgentConfig, AgentName, StoreError};
use std::sync::Arc;
use utoipa::ToSchema;

/// A set of skill names: "all" (or `true`), "none" (or `false`), or a list of names.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(as = SkillSet)]
#[allow(dead_code)]
pub enum SkillSetDoc {
    Word(AllOrNone),
    /// `true` is every skill, `false` none.
    Flag(bool),
    List(Vec<SkillNameDoc>),
}

/// Every skill, or none.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum AllOrNone {
    All,
    None,
}

/// A skill name (the derive inlines it; `finish_components` replaces the items with a
/// reference to the `SkillName` schema and its pattern).
#[derive(Serialize, ToSchema)]
#[schema(value_type = String, min_length = 1, max_length = 64)]
#[allow(dead_code)]
pub struct SkillNameDoc(String);

/// What an agent may use. Every list is optional (default: empty).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Grants)]
#[allow(dead_code)]
pub struct GrantsDoc {
    /// Tool classes (`web_fetch`, `notes`, `skills`, ...): 1-64 lowercase letters, digits, `_`
    /// and `-`.
    #[schema(required = false)]
    tools: Vec<ToolClassDoc>,
    /// Vault entry names: 1-128 letters, digits, `_`, `-` and `.`.
    #[schema(required = false)]
    vault: Vec<VaultNameDoc>,
    /// Destination hosts (`host`, `host:port`, `*.domain`, `[v6]:port`).
    #[schema(required = false)]
    hosts: Vec<HostPatternDoc>,
}

/// A destination host: a DNS name or IPv4 address, or an IPv6 address in brackets (hex groups),
/// optionally `:port` (1-65535); `*.` before a DNS name allows its subdomains.
#[derive(Serialize, ToSchema)]
#[schema(as = HostPattern, value_type = String, pattern = r"^(?:(?:\*\.)?(?=[^:]{1,253}(?::|$))[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|(?:[0-9A-Fa-f]{1,4}:){1,7}:|(?:[0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}|(?:[0-9A-Fa-f]{1,4}:){1,5}(?::[0-9A-Fa-f]{1,4}){1,2}|(?:[0-9A-Fa-f]{1,4}:){1,4}(?::[0-9A-Fa-f]{1,4}){1,3}|(?:[0-9A-Fa-f]{1,4}:){1,3}(?::[0-9A-Fa-f]{1,4}){1,4}|(?:[0-9A-Fa-f]{1,4}:){1,2}(?::[0-9A-Fa-f]{1,4}){1,5}|[0-9A-Fa-f]{1,4}:(?::[0-9A-Fa-f]{1,4}){1,6}|:(?:(?::[0-9A-Fa-f]{1,4}){1,7}|:))\])(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$")]
#[allow(dead_code)]
pub struct HostPatternDoc(String);

/// A tool class.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolClass, value_type = String, pattern = r"^[a-z0-9_-]{1,64}$")]
#[allow(dead_code)]
pub struct ToolClassDoc(String);

/// A vault entry name.
#[derive(Serialize, ToSchema)]
#[schema(as = VaultName, value_type = String, pattern = r"^[A-Za-z0-9_.-]{1,128}$")]
#[allow(dead_code)]
pub struct VaultNameDoc(String);

/// An agent's policies. Every field is optional (default in brackets).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Policies)]
#[allow(dead_code)]
pub struct PoliciesDoc {
    /// Agent-authored revisions wait as pending until approved [false].
    #[schema(required = false)]
    review_agent_revisions: bool,
    /// A skill declaring capabilities beyond the agent's grants waits for review [false].
    #[schema(required = false)]
    review_envelope_expansion: bool,
    /// Consecutive failed runs of a revision before the skill is disabled [3].
    #[schema(required = false, minimum = 1, maximum = 1000)]
    failure_threshold: u32,
    /// Calls in flight at once, per agent [8].
    #[schema(required = false, minimum = 1, maximum = 100000)]
    max_calls_in_flight: u32,
    /// Network tool calls per session [50].
    #[schema(required = false, minimum = 0, maximum = 1000000)]
    max_network_calls_per_session: u32,
    /// Tokens per tool result before it is cut [4000].
    #[schema(required = false, minimum = 0, maximum = 10000000)]
    max_result_tokens: u32,
    /// Each turn's user message is recorded (redacted) for learning [false].
    #[schema(required = false)]
    record_conversations: bool,
    /// What drift does: disable the skill, or revert to the newest earlier revision with good
    /// outcomes [disable].
    #[schema(required = false, value_type = String, pattern = "^(disable|revert)$")]
    on_drift: String,
    /// A new revision the agent writes of an active skill is staged as a candidate: served to
    /// `candidate_percent` of sessions, promoted when its outcomes are not worse than the
    /// active revision's over `candidate_min_runs` runs of each, rejected when they are [false].
    #[schema(required = false)]
    stage_agent_revisions: bool,
    /// The share of sessions, in percent, a staged candidate is served to [20].
    #[schema(required = false, minimum = 1, maximum = 100)]
    candidate_percent: u32,
    /// Ended runs of the candidate and of the active revision before they are compared [10].
    #[schema(required = false, minimum = 1, maximum = 10000)]
    candidate_min_runs: u32,
    /// A skill whose `requires:` are unmet for the agent: offered with the reasons in the turn
    /// report and its body, or withheld from everything the model sees [offer].
    #[schema(required = false, value_type = String, pattern = "^(offer|withhold)$")]
    unmet_requires: String,
}

/// One of the harness's own instructions to the agent, read by the doctor for the skills it
/// names: a path (a bare string, or `{"path": ...}`), or the text itself (`{"text": ...}`).
/// Shown as `{"path": ...}` or `{"text": ...}`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(as = Prompt)]
#[allow(dead_code)]
pub enum PromptDoc {
    Path(PromptPathDoc),
    File(PromptFileDoc),
    Text(PromptTextDoc),
}

/// A prompt file's path: 1-4096 characters, no control characters (relative paths in
/// `skillbase.toml` are read from its folder; elsewhere from the server's working folder).
#[derive(Serialize, ToSchema)]
#[schema(as = PromptPath, value_type = String, min_length = 1, max_length = 4096, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
#[allow(dead_code)]
pub struct PromptPathDoc(String);

/// A prompt held in a file.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PromptFile)]
#[allow(dead_code)]
pub struct PromptFileDoc {
    path: PromptPathDoc,
}

/// A prompt written inline.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PromptText)]
#[allow(dead_code)]
pub struct PromptTextDoc {
    /// 1-65536 characters.
    #[schema(min_length = 1, max_length = 65536)]
    text: String,
}

/// An agent's configuration. Every field is optional; missing ones take their defaults.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentConfig)]
#[allow(dead_code)]
pub struct AgentConfigDoc {
    /// The skills it may see [none].
    #[schema(required = false)]
    skills: SkillSetDoc,
    /// The skills in its prompt every turn [none].
    #[schema(required = false)]
    eager: SkillSetDoc,
    #[schema(required = false)]
    grants: GrantsDoc,
    /// Tokens the level-1 catalog may use [4000].
    #[schema(required = false, minimum = 0, maximum = 10000000)]
    catalog_budget: u32,
    /// Tokens the skill bodies injected in one turn may use [16000].
    #[schema(required = false, minimum = 0, maximum = 10000000)]
    context_budget: u32,
    #[schema(required = false)]
    policies: PoliciesDoc,
    /// What the agent is for, in the operator's words.
    #[schema(required = false)]
    description: String,
    /// The harness's own instructions to the agent, at most 32 [none].
    #[schema(required = false, max_items = 32)]
    prompts: Vec<PromptDoc>,
}

/// A stored agent: its name, configuration and version.
#[derive(ToSchema)]
#[schema(as = Agent)]
#[allow(dead_code)]
pub struct AgentDoc {
    name: String,
    skills: SkillSetDoc,
    eager: SkillSetDoc,
    grants: GrantsDoc,
    catalog_budget: u32,
    context_budget: u32,
    policies: PoliciesDoc,
    description: String,
    /// Absent when the agent lists none.
    #[schema(required = false)]
    prompts: Vec<PromptDoc>,
    /// Bumped on every change (the ETag).
    version: i64,
}

/// A new agent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// 1-64 lowercase letters, digits, `-` and `_`, not starting with `-` or `_`.
    #[schema(pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$")]
    pub name: String,
    /// The configuration (absent or null: every default).
    #[serde(default)]
    #[schema(value_type = Option<AgentConfigDoc>)]
    pub config: Value,
}

/// Parse and check a configuration.
fn config(v: Value) -> ApiResult<AgentConfig> {
    let v = match v {
        Value::Null => Value::Object(Default::default()),
        Value::Object(_) => v,
        _ => {
            return Err(unprocessable(
                "invalid-agent",
                "agent configuration: a JSON object ({\"skills\": ..., \"grants\": ...})",
            ));
        }
    };
    let c: AgentConfig = serde_json::from_value(v)
        .map_err(|e| unprocessable("invalid-agent", format!("agent configuration: {e}")))?;
    // The store's one check (the same for the CLI and skillbase.toml).
    c.checked()
        .map_err(|e| unprocessable("invalid-agent", format!("agent configuration: {e}")))
}

/// The agent a path names, as the caller may see it: a name that cannot be an agent's, and an
/// agent an agent token may not see, answer exactly as a missing agent does.
pub(super) fn visible_agent(p: &crate::auth::Principal, name: &str) -> ApiResult<AgentName> {
    let parsed = AgentName::parse(name).map_err(|_| {
        ApiError::not_found(format!(
            "no agent '{}'",
            name.chars().take(64).collect::<String>()
        ))
    })?;
    p.require_agent(&parsed)?;
    Ok(parsed)
}

fn agent_response(status: StatusCode, a: &Agent) -> Response {
    (status, [etag(a.version)], Json(a)).into_response()
}

/// List agents (an agent token: its own).
#[utoipa::path(get, path = "/v1/agents", tag = "agents",
    responses((status = 200, body = Vec<AgentDoc>)))]
pub async fn list(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
) -> ApiResult<Json<Vec<Agent>>> {
    let mut all = st.store.agents().await?;
    if let Some(a) = p.agent() {
        all.retain(|x| x.name == *a);
    }
    Ok(Json(all))
}

/// Show an agent (an agent token: its own; any other answers 404).
#[utoipa::path(get, path = "/v1/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "The agent's name", pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$")),
    responses((status = 200, body = AgentDoc, headers(("etag" = String, description = "\"<version>\""))),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn show(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
) -> ApiResult<Response> {
    let name = visible_agent(&p, &name)?;
    let a = st
        .store
        .agent(&name)
        .await?
        .ok_or_else(|| StoreError::AgentNotFound(name.to_string()))?;
    Ok(agent_response(StatusCode::OK, &a))
}

/// Create an agent (409 if it exists). Admin only.
#[utoipa::path(post, path = "/v1/agents", tag = "agents", request_body = NewAgent,
    responses((status = 201, body = AgentDoc),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    Body(b): Body<NewAgent>,
) -> ApiResult<Response> {
    p.require_admin()?;
    let name = agent_name(&b.name)?;
    let c = config(b.config)?;
    st.store.create_agent(&name, &c).await?;
    let a = st
        .store
        .agent(&name)
        .await?
        .ok_or_else(|| ApiError::internal("the agent vanished after it was created"))?;
    Ok(agent_response(StatusCode::CREATED, &a))
}

/// Create or replace an agent's configuration. `If-Match: "<version>"` makes it conditional.
/// Admin only.
#[utoipa::path(put, path = "/v1/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "The agent's name", pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$"),
        ("if-match" = Option<String>, Header, description = "\"<version>\" from the ETag")),
    request_body = AgentConfigDoc,
    responses((status = 200, body = AgentDoc),
        (status = 201, body = AgentDoc),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 412, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn put(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
    P(name): P<String>,
    Body(v): Body<Value>,
) -> ApiResult<Response> {
    p.require_admin()?;
    let name = agent_name(&name)?;
    let c = config(v)?;
    let existing = st.store.agent(&name).await?;
    let version = existing.as_ref().map_or(0, |a| a.version);
    use super::extract::Precondition as Pre;
    let ok = match precondition(&headers)? {
        Pre::None => true,
        Pre::Rev(v) => v == version,
        Pre::Exists => existing.is_some(),
        Pre::Absent => existing.is_none(),
        Pre::Never => false,
    };
    if !ok {
        return Err(ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "stale-version",
            format!("agent '{name}' is at version {version}; re-read it and retry"),
        )
        .with_extra(serde_json::json!({"current_version": version})));
    }
    st.store.set_agent(&name, &c).await?;
    let a = st
        .store
        .agent(&name)
        .await?
        .ok_or_else(|| ApiError::internal("the agent vanished after it was written"))?;
    let status = if existing.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(agent_response(status, &a))
}

/// Most cases one `POST /v1/agents/{name}/eval` may carry (the JSON body limit applies too).
pub const MAX_EVAL_CASES: usize = 10_000;

/// Labelled messages to measure an agent's routing with: either `cases`, or a graded benchmark
/// in SkillRouter's format (`tasks` with `relevance`, optionally `id_map`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalRequest {
    /// Each case: `{"message", "expected": skill name or null, "kind"?, "lang"?}`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub cases: Option<Vec<Value>>,
    /// Graded form: each task `{"task_id", "instruction_text", ...}` (other keys ignored), as
    /// the lines of SkillRouter's `tasks.jsonl`. Needs `relevance`; not with `cases`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tasks: Option<Vec<Value>>,
    /// Graded form: task id → `{"gt_skill_ids": [ids], "core_gt_ids"?: [ids], "relevance":
    /// {id: grade ≥ 0}, "task_type"?: string}` (SkillRouter's `relevance.json`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub relevance: Option<Value>,
    /// Graded form: benchmark id → skill name, `{id: name}` or an object holding it under
    /// `gt_map` (a pool manifest). Default: id `prefix/name` is skill `name`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub id_map: Option<Value>,
    /// Override the agent's catalog budget (tokens).
    #[serde(default)]
    #[schema(maximum = 10000000)]
    pub catalog_budget: Option<u32>,
    /// Override the agent's context budget for injected bodies (tokens).
    #[serde(default)]
    #[schema(maximum = 10000000)]
    pub context_budget: Option<u32>,
    /// Include every case's (or task's) outcome in the answer (default: the figures only).
    #[serde(default)]
    pub outcomes: bool,
}

/// Measure an agent's routing: each case through the agent's real turn path (its view,
/// triggers and budgets) and the catalog's ranking; recall@1/5/10, visible under the budget,
/// false triggers, by kind, language and skill. Nothing is written. An agent token may evaluate
/// its own agent only.
///
/// The graded form (`tasks`, `relevance`, `id_map`?; SkillRouter's benchmark format) scores the
/// same routing order with SkillRouter's metrics and answers `{agent, skills, tasks, overall:
/// {tasks, hit_at_1, recall_at_5, recall_at_10, recall_at_20, ndcg_at_10, visible},
/// by_task_type, skipped_by_reason, skipped: [{task_id, reason}], outcomes}`: `generic_only`
/// tasks, tasks without labels, labels without a task and tasks with no relevant skill the agent
/// sees are skipped and counted. At most 10,000 cases or tasks.
#[utoipa::path(post, path = "/v1/agents/{name}/eval", tag = "agents",
    params(("name" = String, Path, description = "The agent's name", pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$")),
    request_body = EvalRequest,
    responses((status = 200, description = "The evaluation report (the graded report for the graded form)", body = Object),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn eval(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Body(b): Body<EvalRequest>,
) -> ApiResult<Response> {
    let name = visible_agent(&p, &name)?;
    let invalid = |m: String| unprocessable("invalid-eval", m);
    let count = |what: &str, n: usize| {
        if n == 0 || n > MAX_EVAL_CASES {
            Err(invalid(format!(
                "{what}: give 1 to {MAX_EVAL_CASES} {what} (this request has {n})"
            )))
        } else {
            Ok(())
        }
    };
    // The same reading as a file, one line per case or task.
    let lines = |v: &[Value]| {
        v.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let opts = skillbase_runtime::TurnOptions {
        max_cost: None,
        catalog_budget: super::sessions::budget("catalog_budget", b.catalog_budget)?,
        context_budget: super::sessions::budget("context_budget", b.context_budget)?,
    };
    match (b.cases, b.tasks, b.relevance) {
        (Some(cases), None, None) if b.id_map.is_none() => {
            count("cases", cases.len())?;
            let cases = skillbase_runtime::eval::parse_cases(&lines(&cases))
                .map_err(|e| invalid(format!("cases: {e}")))?;
            let view = st.engine.view(&name)?;
            let mut report = evaluate_off_workers(
                &st,
                view,
                cases,
                |cases| cases.iter().map(|c| c.message.as_str()).collect(),
                |view, cases, opts, vectors| {
                    skillbase_runtime::eval::evaluate_with(view, cases, opts, vectors)
                },
                opts,
            )
            .await?;
            if !b.outcomes {
                report.outcomes.clear();
            }
            Ok(Json(report).into_response())
        }
        (None, Some(tasks), Some(relevance)) => {
            count("tasks", tasks.len())?;
            let map = b.id_map.as_ref().map(Value::to_string);
            let set = skillbase_runtime::eval::parse_graded(
                &lines(&tasks),
                &relevance.to_string(),
                map.as_deref(),
            )
            .map_err(|e| invalid(e.to_string()))?;
            let view = st.engine.view(&name)?;
            let mut report = evaluate_off_workers(
                &st,
                view,
                set,
                |set| set.cases.iter().map(|c| c.message.as_str()).collect(),
                |view, set, opts, vectors| {
                    skillbase_runtime::eval::evaluate_graded_with(view, set, opts, vectors)
                },
                opts,
            )
            .await?;
            if !b.outcomes {
                report.outcomes.clear();
            }
            Ok(Json(report).into_response())
        }
        _ => Err(invalid(
            "give either `cases`, or `tasks` with `relevance` (and optionally `id_map`)".into(),
        )),
    }
}

/// Run an evaluation of `input` on `view`: the messages' vectors first when the semantic stage
/// is configured (an unavailable stage ranks lexically, as turns do), then the evaluation
/// itself, pure CPU work over the view, off the async workers.
pub(crate) async fn evaluate_off_workers<T, R, F>(
    st: &AppState,
    view: Arc<skillbase_runtime::AgentView>,
    input: T,
    messages: fn(&T) -> Vec<&str>,
    run: F,
    opts: skillbase_runtime::TurnOptions,
) -> Result<R, ApiError>
where
    T: Send + 'static,
    R: Send + 'static,
    F: FnOnce(
            &skillbase_runtime::AgentView,
            &T,
            &skillbase_runtime::TurnOptions,
            Option<&skillbase_runtime::eval::QueryVectors>,
        ) -> R
        + Send
        + 'static,
{
    let vectors = st
        .engine
        .query_vectors(&view, &messages(&input))
        .await
        .ok()
        .flatten();
    tokio::task::spawn_blocking(move || run(&view, &input, &opts, vectors.as_ref()))
        .await
        .map_err(|_| ApiError::internal("the evaluation stopped"))
}

/// What to dream about. Every field is optional.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DreamRequest {
    /// Only events at or after this time (Unix milliseconds, up to the year 2100).
    #[schema(minimum = 0, maximum = 4102444800000_i64)]
    #[serde(default)]
    pub since: Option<i64>,
    /// Report what would be created; write nothing [false].
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// Distinct sessions a procedure must occur in [3].
    #[schema(minimum = 2, maximum = 1000)]
    #[serde(default)]
    pub min_support: Option<u32>,
}

/// Capture the procedures the agent's sessions repeated as skills in its own scope, authored
/// `agent:<name>/dreaming` (active, or pending when its `review_agent_revisions` says so), and
/// answer the dream report: each created skill with its evidence (sessions, call ids, support)
/// and every rejected candidate with why (`too_rare`, `already_covered`, `outside_envelope`,
/// `part_of`, `unknown_tool`, `invalid`). A dream never widens what the agent is granted. An
/// agent token may dream for its own agent only.
#[utoipa::path(post, path = "/v1/agents/{name}/dream", tag = "agents",
    params(("name" = String, Path, description = "The agent's name", pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$")),
    request_body = DreamRequest,
    responses((status = 200, description = "The dream report", body = Object),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn dream(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Body(b): Body<DreamRequest>,
) -> ApiResult<Json<skillbase_runtime::dream::DreamReport>> {
    let name = visible_agent(&p, &name)?;
    if b.since
        .is_some_and(|t| !(0..=4_102_444_800_000).contains(&t))
    {
        return Err(unprocessable(
            "invalid-request",
            "since: a time in Unix milliseconds, from 0 to 4102444800000 (the year 2100)",
        ));
    }
    let min_support = b.min_support.unwrap_or_else(|| {
        st.engine
            .dreaming_settings()
            .and_then(|s| s.config.min_support)
            .map_or(3, |n| n as u32)
    });
    if !(2..=1000).contains(&min_support) {
        return Err(unprocessable(
            "invalid-request",
            "min_support: 2 to 1000 sessions",
        ));
    }
    st.engine.flush().await;
    let report = st
        .engine
        .dream(
            &name,
            &skillbase_runtime::dream::DreamOptions {
                since: b.since,
                dry_run: b.dry_run.unwrap_or(false),
                min_support: min_support as usize,
                actor: p.author(),
                model: None,
            },
        )
        .await?;
    Ok(Json(report))
}
