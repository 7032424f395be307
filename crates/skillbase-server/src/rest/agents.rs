//! Agents: list and show (an agent token sees its own agent only), create and update (admin).

use super::extract::{Body, Caller, P, agent_name, etag, precondition, unprocessable};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use skillbase_insight::eval::EvalCase;
use skillbase_store::{Agent, AgentConfig, AgentName, StoreError};
use std::sync::Arc;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// A new agent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// 1-64 lowercase letters, digits, `-` and `_`, not starting with `-` or `_`.
    #[schema(value_type = AgentName)]
    pub name: String,
    /// The configuration (absent or null: every default).
    #[serde(default)]
    #[schema(value_type = Option<AgentConfig>)]
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
    responses((status = 200, body = Vec<Agent>)))]
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
    params(("name" = AgentName, Path, description = "The agent's name")),
    responses((status = 200, body = Agent, headers(("etag" = String, description = "\"<version>\""))),
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
    responses((status = 201, body = Agent, links(
            ("show" = (operation_id = "agents_show", parameters(("name" = "$response.body#/name")))),
            ("put" = (operation_id = "agents_put", parameters(("name" = "$response.body#/name")))),
            ("eval" = (operation_id = "agents_eval", parameters(("name" = "$response.body#/name")))))),
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
    params(("name" = AgentName, Path, description = "The agent's name"),
        ("if-match" = Option<String>, Header, description = "\"<version>\" from the ETag")),
    request_body = AgentConfig,
    responses((status = 200, body = Agent),
        (status = 201, body = Agent),
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalRequest {
    /// Each case: `{"message", "expected": skill name or null, "kind"?, "lang"?}`.
    #[serde(default)]
    pub cases: Option<Vec<Value>>,
    /// Graded form: each task `{"task_id", "instruction_text", ...}` (other keys ignored), as
    /// the lines of SkillRouter's `tasks.jsonl`. Needs `relevance`; not with `cases`.
    #[serde(default)]
    pub tasks: Option<Vec<Value>>,
    /// Graded form: task id → `{"gt_skill_ids": [ids], "core_gt_ids"?: [ids], "relevance":
    /// {id: grade ≥ 0}, "task_type"?: string}` (SkillRouter's `relevance.json`).
    #[serde(default)]
    pub relevance: Option<Value>,
    /// Graded form: benchmark id → skill name, `{id: name}` or an object holding it under
    /// `gt_map` (a pool manifest). Default: id `prefix/name` is skill `name`.
    #[serde(default)]
    pub id_map: Option<Value>,
    /// Override the agent's catalog budget (tokens).
    #[serde(default)]
    pub catalog_budget: Option<u32>,
    /// Override the agent's context budget for injected bodies (tokens).
    #[serde(default)]
    pub context_budget: Option<u32>,
    /// Include every case's (or task's) outcome in the answer (default: the figures only).
    #[serde(default)]
    pub outcomes: bool,
    /// With `cases`: answer why this skill was missed instead of the report (per case that
    /// expects it and did not rank it first: the skill that won, the words that decided, the
    /// words it lacks).
    #[serde(default)]
    pub explain: Option<String>,
}

/// The two forms of an evaluation, each an object of exactly its keys (what the handler's
/// `match` takes): labelled `cases`, or graded `tasks` with `relevance` (and `id_map`). Written
/// out, as one struct reads both.
impl utoipa::PartialSchema for EvalRequest {
    fn schema() -> RefOr<Schema> {
        let null = || ObjectBuilder::new().schema_type(Type::Null);
        let budget = |d: &str| {
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
                .minimum(Some(0))
                .maximum(Some(skillbase_store::MAX_BUDGET))
                .description(Some(d))
        };
        let list = |items: RefOr<Schema>| {
            ArrayBuilder::new()
                .items(items)
                .min_items(Some(1))
                .max_items(Some(MAX_EVAL_CASES))
        };
        let form = |title: &str| {
            ObjectBuilder::new()
                .title(Some(title))
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
                .property("catalog_budget", budget("Override the agent's catalog budget (tokens)."))
                .property("context_budget", budget("Override the agent's context budget for injected bodies (tokens)."))
                .property("outcomes", ObjectBuilder::new().schema_type(Type::Boolean).description(Some(
                    "Include every case's (or task's) outcome in the answer (default: the figures only).",
                )))
        };
        // A task needs its id and its text; other keys (as SkillRouter's lines carry) are read past.
        let string = || ObjectBuilder::new().schema_type(Type::String);
        let task = ObjectBuilder::new()
            .property("task_id", string())
            .property("instruction_text", string())
            .required("task_id")
            .required("instruction_text");
        let object = || ObjectBuilder::new().schema_type(Type::Object);
        OneOfBuilder::new()
            .description(Some(
                "Labelled messages to measure an agent's routing with: either `cases` (each \
                 `{\"message\", \"expected\": skill name or null, \"kind\"?, \"lang\"?}`), or a \
                 graded benchmark in SkillRouter's format: `tasks` (each `{\"task_id\", \
                 \"instruction_text\", ...}`, the lines of its `tasks.jsonl`) with `relevance` \
                 (task id → `{\"gt_skill_ids\", \"core_gt_ids\"?, \"relevance\", \"task_type\"?}`) \
                 and optionally `id_map` (benchmark id → skill name; default: id `prefix/name` \
                 is skill `name`).",
            ))
            .item(
                form("labelled")
                    .property(
                        "cases",
                        list(Ref::from_schema_name(EvalCase::name()).into()),
                    )
                    .required("cases")
                    .property(
                        "explain",
                        ObjectBuilder::new()
                            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                            .max_length(Some(skillbase_format::name::MAX_NAME_CHARS))
                            .description(Some(
                                "Answer why this skill was missed instead of the report: per \
                                 case that expects it and did not rank it first, the skill that \
                                 won, the words that decided and the words it lacks.",
                            )),
                    )
                    .property("tasks", null())
                    .property("relevance", null())
                    .property("id_map", null()),
            )
            .item(
                form("graded")
                    .property("cases", null())
                    .property("tasks", list(task.into()))
                    .required("tasks")
                    .property("relevance", object())
                    .required("relevance")
                    .property(
                        "id_map",
                        ObjectBuilder::new()
                            .schema_type(SchemaType::from_iter([Type::Object, Type::Null])),
                    ),
            )
            .into()
    }
}

impl ToSchema for EvalRequest {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((EvalCase::name().into(), EvalCase::schema()));
    }
}

/// Measure an agent's routing: each case through the agent's real turn path (its view,
/// triggers and budgets) and the catalog's ranking; recall@1/5/10, visible under the budget,
/// false triggers, by kind, language and skill; each case's confidence in its first skill and
/// their `calibration` (ECE, AUROC, Brier). Nothing is written. An agent token may evaluate its
/// own agent only.
///
/// The graded form (`tasks`, `relevance`, `id_map`?; SkillRouter's benchmark format) scores the
/// same routing order with SkillRouter's metrics and answers `{agent, skills, tasks, overall:
/// {tasks, hit_at_1, recall_at_5, recall_at_10, recall_at_20, ndcg_at_10, visible},
/// by_task_type, skipped_by_reason, skipped: [{task_id, reason}], outcomes}`: `generic_only`
/// tasks, tasks without labels, labels without a task and tasks with no relevant skill the agent
/// sees are skipped and counted. At most 10,000 cases or tasks.
#[utoipa::path(post, path = "/v1/agents/{name}/eval", tag = "agents",
    params(("name" = AgentName, Path, description = "The agent's name")),
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
        catalog_budget: super::sessions::budget("catalog_budget", b.catalog_budget)?,
        context_budget: super::sessions::budget("context_budget", b.context_budget)?,
        ..Default::default()
    };
    match (b.cases, b.tasks, b.relevance) {
        (Some(cases), None, None) if b.id_map.is_none() => {
            count("cases", cases.len())?;
            let cases = skillbase_insight::eval::parse_cases(&lines(&cases))
                .map_err(|e| invalid(format!("cases: {e}")))?;
            let view = st.engine.view(&name)?;
            if let Some(skill) = b.explain {
                let why = evaluate_off_workers(
                    &st,
                    view,
                    cases,
                    |cases| cases.iter().map(|c| c.message.as_str()).collect(),
                    move |view, cases, opts, vectors| {
                        skillbase_insight::explain::explain(view, cases, opts, vectors, &skill)
                    },
                    opts,
                )
                .await?
                .map_err(|e| invalid(format!("explain: {e}")))?;
                return Ok(Json(why).into_response());
            }
            let mut report = evaluate_off_workers(
                &st,
                view,
                cases,
                |cases| cases.iter().map(|c| c.message.as_str()).collect(),
                |view, cases, opts, vectors| {
                    skillbase_insight::eval::evaluate_with(view, cases, opts, vectors)
                },
                opts,
            )
            .await?;
            if !b.outcomes {
                report.outcomes.clear();
            }
            Ok(Json(report).into_response())
        }
        (None, Some(_), Some(_)) if b.explain.is_some() => Err(invalid(
            "explain reads labelled `cases`, not graded `tasks`".into(),
        )),
        (None, Some(tasks), Some(relevance)) => {
            count("tasks", tasks.len())?;
            let map = b.id_map.as_ref().map(Value::to_string);
            let set = skillbase_insight::eval::parse_graded(
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
                    skillbase_insight::eval::evaluate_graded_with(view, set, opts, vectors)
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
            Option<&skillbase_runtime::QueryVectors>,
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
    params(("name" = AgentName, Path, description = "The agent's name")),
    request_body = DreamRequest,
    responses((status = 200, description = "The dream report", body = Object),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn dream(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Body(b): Body<DreamRequest>,
) -> ApiResult<Json<skillbase_insight::dream::DreamReport>> {
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
            .dreaming()
            .and_then(|c| c.min_support)
            .map_or(3, |n| n as u32)
    });
    if !(2..=1000).contains(&min_support) {
        return Err(unprocessable(
            "invalid-request",
            "min_support: 2 to 1000 sessions",
        ));
    }
    let opts = skillbase_insight::dream::DreamOptions {
        since: b.since,
        dry_run: b.dry_run.unwrap_or(false),
        min_support: min_support as usize,
        actor: p.author(),
        model: None,
    };
    // The dream stores the events recorded so far first, so it sees them.
    let report = skillbase_insight::dream::run(&st.engine, &name, &opts).await?;
    Ok(Json(report))
}
