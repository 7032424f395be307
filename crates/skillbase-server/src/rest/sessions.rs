//! Sessions: open one for an agent, resolve turns, dispatch calls (and collect detached ones),
//! follow its events as server-sent events, re-attach pinned skills, finish the driving run.
//!
//! A session belongs to one agent; an agent token reaches only its agent's sessions (any other
//! id answers 404, the same as one that does not exist).

use super::extract::{Body, Caller, P, Q, agent_name, unprocessable};
use super::skills::Run;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillbase_format::Cost;
use skillbase_runtime::event::Event as Recorded;
use skillbase_runtime::transcript::{Imported, Transcript};
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_runtime::{OmissionDetail, TurnOptions};
use skillbase_store::StoreError;
use skillbase_store::session_id::SessionId;
use skillbase_store::{AgentName, EventFilter, EventRecord, SessionRecord};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AdditionalProperties, Object, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::{IntoParams, ToSchema};

/// [`last_event_id`]'s grammar as a regular expression.
pub(super) const LAST_EVENT_ID_PATTERN: &str = "^[0-9]{1,18}$";

/// `Last-Event-ID`: an event id as the stream gives it, 1-18 digits.
pub(super) fn last_event_id(v: &[u8]) -> ApiResult<i64> {
    let s = v.trim_ascii();
    let digits = (1..=18).contains(&s.len()) && s.iter().all(u8::is_ascii_digit);
    std::str::from_utf8(s)
        .ok()
        .filter(|_| digits)
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be an event id (1-18 digits)"))
}

/// The largest event id a client may name (18 digits).
const MAX_EVENT_ID: i64 = 999_999_999_999_999_999;

/// How often an idle event stream looks for new events.
const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    /// The agent. An agent token's own agent is the default, and it may name no other; with an
    /// admin token the default is the server's default agent (`serve --agent`), and without
    /// one the request is refused (422).
    #[schema(value_type = Option<AgentName>)]
    pub agent: Option<String>,
    /// The session id (1-128 characters, no slashes or control characters); default: a new
    /// random one. Opening an existing session of the same agent is allowed.
    #[schema(schema_with = skillbase_store::openapi::session_id_or_null)]
    pub id: Option<String>,
}

/// How a run ended, as the harness says it (`POST .../finish`).
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The skill did what it is for.
    Success,
    /// It did not; counted towards the revision's drift.
    Failure,
}

impl Outcome {
    /// `success` or `failure`, as the store records it.
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
        }
    }
}

/// A session and what it activated, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct Session {
    pub id: String,
    pub agent: String,
    pub created_at: i64,
    #[schema(value_type = Vec<Object>)]
    pub activations: Vec<Value>,
}

impl From<SessionRecord> for Session {
    fn from(r: SessionRecord) -> Session {
        Session {
            activations: r
                .activations
                .iter()
                .map(|a| serde_json::to_value(a).unwrap_or_default())
                .collect(),
            id: r.id,
            agent: r.agent,
            created_at: r.created_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnBody {
    /// The user's message.
    pub message: String,
    /// Leave out every skill and tool slower than this.
    #[schema(value_type = Option<Cost>)]
    pub max_cost: Option<String>,
    /// Override the agent's catalog budget (tokens).
    #[schema(maximum = 10000000)]
    pub catalog_budget: Option<u32>,
    /// Override the agent's context budget (tokens).
    #[schema(maximum = 10000000)]
    pub context_budget: Option<u32>,
    /// How the answer lists what the catalog left out (default `summary`; the `omissions`
    /// query parameter says the same and wins).
    #[schema(value_type = Option<OmissionDetail>)]
    pub omissions: Option<String>,
    /// File paths the turn works on (open or edited files): skills whose `paths:` globs match
    /// one are placed with reason `path:<glob>`. At most 64.
    #[serde(default)]
    #[schema(max_items = 64)]
    pub paths: Vec<TurnPath>,
}

/// A file path a turn names: not blank, no control characters, at most 256 characters (the
/// server's limit is 1024 bytes, which 256 characters never pass).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(
    value_type = String,
    min_length = 1,
    max_length = 256,
    pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
)]
pub struct TurnPath(pub String);

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TurnQuery {
    /// `summary` (default): `context.report.catalog.omitted` is `{count, by_reason: [{reason,
    /// count, ranks}], list}`, and `name_only` the same with the names; `full`: both are lists
    /// of `{name, reason, rank}`. Omissions are always counted, never silent.
    #[param(value_type = Option<OmissionDetail>)]
    pub omissions: Option<String>,
}

/// What the model gets this turn and why (as `skillbase turn --json` prints it).
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnResult {
    pub agent: String,
    pub session: String,
    /// prefix (eager bodies), injected (triggered bodies), catalog, tools, and the report of
    /// every skill of the view.
    #[schema(value_type = Object)]
    pub context: Value,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallBody {
    /// The offered wire name (a tool, or `skill_<name>`).
    pub name: String,
    /// The arguments (a JSON object; default `{}`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub arguments: serde_json::Map<String, Value>,
    /// Run a slow (`seconds`, `tens_of_seconds`) tool apart: the answer is 202 with a call id
    /// at once; collect the outcome with GET .../calls/{call_id} or from the event stream.
    #[serde(default)]
    pub detach: bool,
}

/// A detached call still running.
#[derive(Debug, Serialize, ToSchema)]
pub struct Running {
    /// running.
    pub status: String,
    pub call_id: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// How long to wait for the outcome, in milliseconds (default 0; capped below the request
    /// timeout).
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Start after this event id (`Last-Event-ID` takes precedence when a client reconnects).
    #[param(minimum = 0, maximum = 999_999_999_999_999_999_i64)]
    pub after: Option<i64>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PinnedQuery {
    /// Tokens the re-attached skills may use (default: the agent's context budget).
    #[param(maximum = 10000000)]
    pub budget: Option<u32>,
}

/// Skills to re-attach after the harness compacts its context.
#[derive(Debug, Serialize, ToSchema)]
pub struct PinnedResult {
    /// Most recent first: {name, content, tokens}.
    #[schema(value_type = Vec<Object>)]
    pub skills: Vec<Value>,
    /// Active skills that did not fit the budget.
    pub left_out: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishBody {
    /// How the run ended.
    #[schema(value_type = Outcome)]
    pub outcome: String,
    /// What happened, for the run's record (at most 2000 characters).
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub note: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FinishResult {
    pub run: Run,
    /// The revision reached the agent's failure threshold and was disabled.
    pub disabled_for_drift: bool,
}

/// Which agent's session a request means (`?agent=`). Sessions are keyed by `(agent, id)`: the
/// same id names unrelated sessions of two agents.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionAgentQuery {
    /// The session's agent. An agent token means its own agent (naming another finds nothing);
    /// an admin token may leave it out when only one agent holds the id.
    #[param(max_length = 64)]
    pub agent: Option<String>,
}

fn no_session(id: &str) -> ApiError {
    let shown: String = id.chars().take(128).collect();
    ApiError::not_found(format!(
        "no session '{shown}'; open one with POST /v1/sessions"
    ))
}

/// The agent whose session `id` the caller means: an agent token's own (the id is looked up
/// nowhere else, so the answer never depends on another agent's sessions); for an admin, the one
/// `?agent=` names, else the only agent holding the id.
async fn session_agent(
    st: &AppState,
    p: &Principal,
    id: &str,
    named: Option<&str>,
) -> ApiResult<AgentName> {
    if let Some(own) = p.agent() {
        if named.is_some_and(|n| n != own.as_str()) {
            return Err(no_session(id));
        }
        return Ok(own.clone());
    }
    if let Some(n) = named {
        return AgentName::parse(n).map_err(|_| no_session(id));
    }
    let mut agents = st.store.session_agents(id).await?;
    match agents.len() {
        0 => Err(no_session(id)),
        1 => Ok(agents.remove(0)),
        _ => {
            let shown: String = id.chars().take(128).collect();
            let names: Vec<&str> = agents.iter().map(AgentName::as_str).collect();
            Err(ApiError::conflict(format!(
                "several agents hold a session '{shown}' ({}): name one with ?agent=NAME",
                names.join(", ")
            )))
        }
    }
}

/// The session `id` the caller means ([`session_agent`]), read from the store.
async fn owned(
    st: &AppState,
    p: &Principal,
    id: &str,
    named: Option<&str>,
) -> ApiResult<(SessionRecord, AgentName)> {
    let agent = session_agent(st, p, id, named).await?;
    let rec = st
        .store
        .session(&agent, id)
        .await?
        .ok_or_else(|| no_session(id))?;
    Ok((rec, agent))
}

/// The agent of a session the caller may use: from the runtime's session cache when this server
/// has the session open (no database read per request), else as [`owned`] finds it.
async fn owner(
    st: &AppState,
    p: &Principal,
    id: &str,
    named: Option<&str>,
) -> ApiResult<AgentName> {
    let agent = session_agent(st, p, id, named).await?;
    if st.engine.has_session(&agent, id) {
        return Ok(agent);
    }
    st.store
        .session(&agent, id)
        .await?
        .ok_or_else(|| no_session(id))?;
    Ok(agent)
}

fn new_session_id() -> String {
    let mut b = [0u8; 9];
    getrandom::fill(&mut b).expect("the operating system's random source failed");
    let mut s = String::from("s-");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Open a session for an agent (created if new).
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", request_body = NewSession,
    responses((status = 201, description = "Opened", body = Session, links(
            ("show" = (operation_id = "sessions_show", parameters(("id" = "$response.body#/id")))),
            ("turn" = (operation_id = "sessions_turn", parameters(("id" = "$response.body#/id")))),
            ("call" = (operation_id = "sessions_call", parameters(("id" = "$response.body#/id")))),
            ("events" = (operation_id = "sessions_events", parameters(("id" = "$response.body#/id")))),
            ("pinned" = (operation_id = "sessions_pinned", parameters(("id" = "$response.body#/id")))),
            ("finish" = (operation_id = "sessions_finish", parameters(("id" = "$response.body#/id")))))),
        (status = 404, description = "No such agent", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The id is reserved (the `mcp:` and `rest:` namespaces)", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    Body(b): Body<NewSession>,
) -> ApiResult<(StatusCode, Json<Session>)> {
    let agent = match (b.agent.as_deref(), p.agent()) {
        (Some(raw), _) => {
            let a = agent_name(raw)?;
            p.require_agent(&a)?;
            a
        }
        (None, Some(own)) => own.clone(),
        (None, None) => match &st.options.default_agent {
            Some(a) => a.clone(),
            None => {
                return Err(unprocessable(
                    "invalid-request",
                    "name the session's agent: {\"agent\": \"<name>\"} (this server has no \
                     default agent: `skillbase serve --agent NAME` sets one)",
                ));
            }
        },
    };
    if st.store.agent_cached(&agent).is_none() && st.store.agent(&agent).await?.is_none() {
        return Err(ApiError::not_found(format!("no agent '{agent}'")));
    }
    let id = b.id.unwrap_or_else(new_session_id);
    // Ids in the derived namespaces (`mcp:`, `rest:`) cannot be named here. Sessions are keyed
    // by (agent, id): an id another agent holds is a new session of this agent, so the answer
    // tells nothing of other agents.
    if SessionId::named(&id).is_none() {
        return Err(StoreError::SessionUnavailable.into());
    }
    st.store.open_session(&id, &agent).await?;
    let rec = st
        .store
        .session(&agent, &id)
        .await?
        .ok_or_else(|| ApiError::internal("the session vanished after it was opened"))?;
    Ok((StatusCode::CREATED, Json(rec.into())))
}

/// A session and its activations.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery),
    responses((status = 200, body = Session),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json")))]
pub async fn show(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
) -> ApiResult<Json<Session>> {
    let (rec, _) = owned(&st, &p, &id, sa.agent.as_deref()).await?;
    Ok(Json(rec.into()))
}

/// Resolve a turn: eager prefix, triggered bodies, the catalog, the offered tools and the
/// activation report; recorded as events of the session.
#[utoipa::path(post, path = "/v1/sessions/{id}/turns", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery, TurnQuery), request_body = TurnBody,
    responses((status = 200, body = TurnResult),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn turn(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
    Q(q): Q<TurnQuery>,
    Body(b): Body<TurnBody>,
) -> ApiResult<Json<TurnResult>> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    // Both are checked, whichever wins: a bad value is refused wherever it is written.
    let parse = |d: Option<&str>| {
        d.map(|d| d.parse::<OmissionDetail>())
            .transpose()
            .map_err(|e| unprocessable("invalid-request", e))
    };
    let (in_query, in_body) = (
        parse(q.omissions.as_deref())?,
        parse(b.omissions.as_deref())?,
    );
    let detail = in_query.or(in_body).unwrap_or_default();
    let max_cost = b
        .max_cost
        .as_deref()
        .map(|c| c.parse::<Cost>())
        .transpose()
        .map_err(|e| unprocessable("invalid-request", format!("max_cost: {e}")))?;
    let opts = TurnOptions {
        max_cost,
        catalog_budget: budget("catalog_budget", b.catalog_budget)?,
        context_budget: budget("context_budget", b.context_budget)?,
        paths: b.paths.into_iter().map(|p| p.0).collect(),
    };
    let mut ctx = st.engine.turn(&agent, &id, &b.message, &opts).await?;
    ctx.report.catalog.detail = detail;
    st.metrics.turns.inc();
    Ok(Json(TurnResult {
        agent: agent.to_string(),
        session: id,
        context: serde_json::to_value(&ctx)
            .map_err(|e| ApiError::internal(format!("turn context: {e}")))?,
    }))
}

/// Dispatch a call through the pipeline (offered set, arguments, capability gate, bounds,
/// redaction). A refusal or a failure is an outcome (200), not an HTTP error.
#[utoipa::path(post, path = "/v1/sessions/{id}/calls", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery), request_body = CallBody,
    responses((status = 200, description = "done, refused or failed", body = CallOutcome),
        (status = 202, description = "started apart (detach), or authorized for the harness to run (a `runs = \"harness\"` tool: post its result to .../calls/{call_id}/result)", body = CallOutcome, links(
            ("result" = (operation_id = "sessions_call_result", parameters(("id" = "$request.path.id"), ("call_id" = "$response.body#/call_id")))))),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json")))]
pub async fn call(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
    Body(b): Body<CallBody>,
) -> ApiResult<Response> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    let mode = if b.detach {
        CallMode::Detach
    } else {
        CallMode::Wait
    };
    let outcome = st
        .engine
        .call(&agent, &id, &b.name, Value::Object(b.arguments), mode)
        .await?;
    st.metrics.call(&outcome);
    let status = if matches!(
        outcome,
        CallOutcome::Started { .. } | CallOutcome::Authorized { .. }
    ) {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(outcome)).into_response())
}

/// The event of `kind` in the session that names `call_id`, read through its type.
async fn call_event(
    st: &AppState,
    agent: &AgentName,
    session: &str,
    kind: &str,
    call_id: &str,
) -> ApiResult<Option<Recorded>> {
    let evs = st
        .store
        .events(&EventFilter {
            session: Some(session.to_owned()),
            agent: Some(agent.to_string()),
            kind: Some(kind.to_owned()),
            ..EventFilter::default()
        })
        .await?;
    Ok(evs
        .iter()
        .map(Recorded::read)
        .find(|e| e.call_id() == Some(call_id)))
}

/// The outcome of a detached call (waiting up to `timeout_ms`); 202 while it runs.
#[utoipa::path(get, path = "/v1/sessions/{id}/calls/{call_id}", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery, ("call_id" = String, Path), WaitQuery),
    responses((status = 200, body = CallOutcome),
        (status = 202, description = "Still running", body = Running),
        (status = 404, description = "No such call in this session", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json")))]
pub async fn call_result(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P((id, call_id)): P<(String, String)>,
    Q(sa): Q<SessionAgentQuery>,
    Q(q): Q<WaitQuery>,
) -> ApiResult<Response> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    st.engine.flush().await;
    let not_found = || {
        let shown: String = call_id.chars().take(64).collect();
        ApiError::not_found(format!("no detached call '{shown}' in session '{id}'"))
    };
    if call_event(&st, &agent, &id, "call_started", &call_id)
        .await?
        .is_none()
    {
        return Err(not_found());
    }
    let finished = |e: Recorded| match e {
        Recorded::CallFinished(f) => Some((StatusCode::OK, Json(f.outcome)).into_response()),
        _ => None,
    };
    if let Some(r) = call_event(&st, &agent, &id, "call_finished", &call_id)
        .await?
        .and_then(finished)
    {
        return Ok(r);
    }
    let cap = st
        .options
        .limits
        .request_timeout
        .max(crate::CALL_ROUTE_TIMEOUT)
        .saturating_sub(Duration::from_secs(1))
        .max(Duration::from_millis(1));
    let wait = Duration::from_millis(q.timeout_ms.unwrap_or(0)).min(cap);
    if let Some(o) = st.engine.wait(&call_id, wait).await {
        return Ok((StatusCode::OK, Json(o)).into_response());
    }
    // Taken by another reader meanwhile, or finished as the wait ended: the event has it.
    st.engine.flush().await;
    if let Some(r) = call_event(&st, &agent, &id, "call_finished", &call_id)
        .await?
        .and_then(finished)
    {
        return Ok(r);
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(Running {
            status: "running".into(),
            call_id,
        }),
    )
        .into_response())
}

/// The result of a harness-run call: exactly one of `result` (what the tool returned) and
/// `error` (why it failed).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostedResult {
    /// The tool's value (any JSON); redacted and capped before anyone sees it.
    #[serde(default, deserialize_with = "present")]
    pub result: Option<Value>,
    /// The tool's failure, in words for the model (1-65,536 bytes).
    #[serde(default, deserialize_with = "present")]
    pub error: Option<Value>,
}

/// Exactly one of the two keys, as [`post_result`] takes them. Written out: one struct reads
/// both.
impl utoipa::PartialSchema for PostedResult {
    fn schema() -> RefOr<Schema> {
        let only = |key: &str, value: Object| {
            ObjectBuilder::new()
                .property(key, value)
                .required(key)
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        };
        OneOfBuilder::new()
            .description(Some(
                "The result of a harness-run call: exactly one of `result` (what the tool \
                 returned: any JSON, redacted and capped before anyone sees it) and `error` (why \
                 it failed, in words for the model: 1-65,536 bytes).",
            ))
            .item(only("result", Object::with_type(SchemaType::AnyValue)))
            .item(only(
                "error",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .min_length(Some(1))
                    .max_length(Some(65536))
                    .build(),
            ))
            .into()
    }
}

impl ToSchema for PostedResult {}

/// A present `result` is `Some` even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Post the result of a harness-run tool's call (one authorized with status `authorized`):
/// redacted, capped to the agent's `max_result_tokens`, recorded as `call_finished` and counted
/// in the driving skill's run; the answer is the call's final outcome. A call that was not
/// authorized in this session, already answered or past its time limit is refused (409).
#[utoipa::path(post, path = "/v1/sessions/{id}/calls/{call_id}/result", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery, ("call_id" = String, Path)), request_body = PostedResult,
    responses((status = 200, description = "the call's outcome (done or failed)", body = CallOutcome),
        (status = 404, description = "No such session", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "No harness-run call of this id awaits a result; or: an admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Neither or both of result and error", body = Problem, content_type = "application/problem+json")))]
pub async fn post_result(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P((id, call_id)): P<(String, String)>,
    Q(sa): Q<SessionAgentQuery>,
    Body(b): Body<PostedResult>,
) -> ApiResult<Response> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    let posted = match (b.result, b.error) {
        (Some(v), None) => Ok(v),
        (None, Some(Value::String(e))) if !e.is_empty() && e.len() <= 65536 => Err(e),
        (None, Some(_)) => {
            return Err(unprocessable(
                "invalid-request",
                "error: give 1-65,536 bytes saying why the tool failed",
            ));
        }
        _ => {
            return Err(unprocessable(
                "invalid-request",
                "give exactly one of `result` (the tool's value) and `error` (why it failed)",
            ));
        }
    };
    match st.engine.post_result(&agent, &id, &call_id, posted).await {
        Ok(outcome) => {
            st.metrics.call(&outcome);
            Ok((StatusCode::OK, Json(outcome)).into_response())
        }
        Err(e) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "call-not-awaiting",
            e.to_string(),
        )),
    }
}

struct Tail {
    st: Arc<AppState>,
    agent: String,
    session: String,
    after: i64,
    buf: VecDeque<EventRecord>,
}

/// The session's events as server-sent events (`id` is the event id, `event` its kind, `data`
/// the event as JSON), from `after` (or `Last-Event-ID`) on, until the client leaves or the
/// server stops.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery, EventsQuery,
        ("last-event-id" = Option<String>, Header, description = "Resume after this event id")),
    responses((status = 200, description = "A text/event-stream of the session's events: each has `id` (the event id), `event` (its kind) and `data` (a SessionEvent as JSON; `x-sse-data` gives its schema)", content_type = "text/event-stream", body = String),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json")))]
pub async fn events(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
    Q(q): Q<EventsQuery>,
) -> ApiResult<Response> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    let last = headers
        .get("last-event-id")
        .map(|v| last_event_id(v.as_bytes()))
        .transpose()?;
    let after = match q.after {
        Some(a) if !(0..=MAX_EVENT_ID).contains(&a) => {
            return Err(ApiError::bad_request(format!(
                "after must be an event id from 0 to {MAX_EVENT_ID}"
            )));
        }
        a => last.or(a).unwrap_or(0),
    };
    let tail = Tail {
        st: st.clone(),
        agent: agent.to_string(),
        session: id,
        after,
        buf: VecDeque::new(),
    };
    let stream = futures_util::stream::unfold(tail, |mut t| async move {
        loop {
            if let Some(ev) = t.buf.pop_front() {
                t.after = ev.id;
                let e = Event::default()
                    .id(ev.id.to_string())
                    .event(ev.kind.clone())
                    .data(serde_json::to_string(&ev).unwrap_or_default());
                return Some((Ok::<Event, Infallible>(e), t));
            }
            if t.st.shutdown.is_cancelled() {
                return None;
            }
            let filter = EventFilter {
                after_id: Some(t.after),
                session: Some(t.session.clone()),
                agent: Some(t.agent.clone()),
                limit: Some(256),
                ..EventFilter::default()
            };
            match t.st.store.events(&filter).await {
                Ok(evs) if !evs.is_empty() => {
                    t.buf.extend(evs);
                    continue;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "event stream: reading events failed"),
            }
            tokio::select! {
                _ = t.st.shutdown.cancelled() => return None,
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// [`events`] for a caller the studio authenticated by its cookie (the same stream).
pub(crate) async fn events_for(
    st: Arc<AppState>,
    p: Principal,
    headers: HeaderMap,
    id: String,
    agent: Option<String>,
    after: Option<i64>,
) -> ApiResult<Response> {
    events(
        State(st),
        Caller(p),
        headers,
        P(id),
        Q(SessionAgentQuery { agent }),
        Q(EventsQuery { after }),
    )
    .await
}

/// The skills active in the session, re-rendered within a budget, most recent first.
#[utoipa::path(get, path = "/v1/sessions/{id}/pinned", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery, PinnedQuery),
    responses((status = 200, body = PinnedResult),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A budget over the largest", body = Problem, content_type = "application/problem+json")))]
pub async fn pinned(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
    Q(q): Q<PinnedQuery>,
) -> ApiResult<Json<PinnedResult>> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    let budget = match budget("budget", q.budget)? {
        Some(b) => b,
        None => st.engine.view(&agent)?.agent.config.context_budget,
    };
    let set = st.engine.pinned(&agent, &id, budget).await?;
    Ok(Json(PinnedResult {
        skills: set
            .skills
            .iter()
            .map(|s| serde_json::to_value(s).unwrap_or_default())
            .collect(),
        left_out: set.left_out,
    }))
}

/// End the skill driving the session, on the harness's word (success or failure); a failure
/// that reaches the agent's threshold disables the revision.
#[utoipa::path(post, path = "/v1/sessions/{id}/finish", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery), request_body = FinishBody,
    responses((status = 200, body = FinishResult),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "No skill is running; or: an admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn finish(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
    Body(b): Body<FinishBody>,
) -> ApiResult<Json<FinishResult>> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    let outcome: Outcome = serde_json::from_value(Value::String(b.outcome))
        .map_err(|_| unprocessable("invalid-request", "outcome: success or failure"))?;
    if b.note.chars().count() > 2000 {
        return Err(unprocessable(
            "invalid-request",
            "note: at most 2000 characters",
        ));
    }
    match st
        .engine
        .finish(&agent, &id, outcome.as_str(), &b.note)
        .await?
    {
        Some((run, disabled)) => Ok(Json(FinishResult {
            run: run.into(),
            disabled_for_drift: disabled,
        })),
        None => Err(ApiError::conflict(
            "no skill is running in this session; nothing to finish",
        )),
    }
}

/// An optional budget override, checked like an agent's budgets (422 above the largest).
pub(super) fn budget(field: &str, tokens: Option<u32>) -> ApiResult<Option<u32>> {
    tokens
        .map(|t| skillbase_store::check_budget(field, t))
        .transpose()
        .map_err(|e| unprocessable("invalid-request", e))
}

/// Import a conversation that happened elsewhere into the session, for learning (`dream`):
/// messages in the OpenAI chat format (`system`, `user`, `assistant` with `tool_calls`, `tool`
/// answering a call by `tool_call_id`), at most 2,000 messages and 5,000 calls, each text at
/// most 64 KiB. Checked whole: a message that cannot be imported answers 422 naming it, and
/// nothing is recorded. Users' messages and tool calls are recorded redacted.
#[utoipa::path(post, path = "/v1/sessions/{id}/transcript", tag = "sessions",
    params(("id" = String, Path), SessionAgentQuery), request_body = Transcript,
    responses((status = 200, body = Imported),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An admin token named an id several agents hold: name one with `?agent=`", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn transcript(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
    Q(sa): Q<SessionAgentQuery>,
    Body(t): Body<Value>,
) -> ApiResult<Json<skillbase_runtime::transcript::Imported>> {
    let agent = owner(&st, &p, &id, sa.agent.as_deref()).await?;
    let t: skillbase_runtime::transcript::Transcript = serde_json::from_value(t)
        .map_err(|e| unprocessable("invalid-transcript", format!("transcript: {e}")))?;
    use skillbase_runtime::transcript::TranscriptError;
    let imported = st
        .engine
        .import_transcript(&agent, &id, &t)
        .await
        .map_err(|e| match e {
            TranscriptError::Invalid(m) => unprocessable("invalid-transcript", m),
            TranscriptError::Runtime(r) => r.into(),
        })?;
    Ok(Json(imported))
}
