//! `skillbase eval --sweep` over REST: how an agent's routing holds as its library grows.
//!
//! `POST /v1/agents/{name}/eval/sweeps` measures labelled cases on the agent's skills, then with
//! the library grown by distractors from the pool the operator gave the server
//! (`skillbase serve --sweep-pool DIR`, a folder of public skills such as SkillRouter's), at
//! each size asked for. A sweep takes minutes (the distractors' vectors, then an evaluation per
//! size), so it runs as a background job ([`crate::jobs`]): the answer is `202 Accepted` with
//! the job's address, `GET` on it shows the sizes measured so far, `DELETE` stops it. One sweep
//! runs at a time in the whole server; it works in a scratch store of its own (the caller's is
//! only read) whose semantic stage shares the server's models but not its memory, and keeps
//! the distractors' vectors for the next sweep.

use super::agents::{MAX_EVAL_CASES, visible_agent};
use super::extract::{Body, Caller, P, unprocessable};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, Problem};
use crate::jobs::{self, Refused};
use crate::state::AppState;
use crate::sweeps::{MAX_RUNNING, SweepJob, SweepLive};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillbase_insight::sweep::{MAX_SIZES, SweepPoint};
use skillbase_runtime::{Engine, Semantic, TurnOptions};
use skillbase_store::AgentName;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

/// Labelled messages measured at each library size.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepRequest {
    /// Each case: `{"message", "expected": skill name or null, "kind"?, "lang"?}`, as `eval`
    /// reads them.
    #[schema(value_type = Vec<skillbase_insight::eval::EvalCase>, min_items = 1, max_items = 10000)]
    pub cases: Vec<Value>,
    /// Library sizes, as distractors added (0 is the agent's skills alone; at most
    /// 10,000,000); a size beyond the pool is measured at the whole pool. Default: 0, 100,
    /// 1,000 and 10,000 below the pool's size, and the whole pool.
    #[serde(default)]
    #[schema(schema_with = sizes_schema)]
    pub sizes: Option<Vec<u64>>,
    /// Override the agent's catalog budget (tokens).
    #[serde(default)]
    #[schema(maximum = 10000000)]
    pub catalog_budget: Option<u32>,
    /// Override the agent's context budget for injected bodies (tokens).
    #[serde(default)]
    #[schema(maximum = 10000000)]
    pub context_budget: Option<u32>,
}

/// The largest size a sweep may ask for (distractors added).
pub const MAX_SIZE: u64 = 10_000_000;

/// `sizes`: 1 to [`MAX_SIZES`] integers from 0 to [`MAX_SIZE`].
fn sizes_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0))
                .maximum(Some(MAX_SIZE)),
        )
        .min_items(Some(1))
        .max_items(Some(MAX_SIZES))
        .description(Some(
            "Library sizes, as distractors added (0 is the agent's skills alone); a size beyond \
             the pool is measured at the whole pool. Default: 0, 100, 1,000 and 10,000 below \
             the pool's size, and the whole pool.",
        ))
        .build()
}

/// A sweep: where it is and the sizes measured so far.
#[derive(Debug, Serialize, ToSchema)]
pub struct SweepStatus {
    /// The sweep's id (32 hex digits).
    pub id: String,
    /// The agent measured.
    pub agent: String,
    /// `preparing`, `running`, `done`, `failed` or `stopped`.
    pub state: &'static str,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The sizes asked for (distractors added).
    pub sizes: Vec<usize>,
    /// Skills in the server's pool.
    pub pool: usize,
    /// Labelled cases measured at each size.
    pub cases: usize,
    /// Seconds since it started (until it finished).
    pub seconds: f64,
    /// Each size measured so far: `{distractors, skills, overall, calibration, seconds}`, as
    /// `skillbase eval --sweep --json` prints them.
    #[schema(value_type = Vec<Object>)]
    pub points: Vec<SweepPoint>,
}

fn status_url(agent: &AgentName, id: &str) -> String {
    format!("/v1/agents/{agent}/eval/sweeps/{id}")
}

fn status_of(job: &SweepJob) -> SweepStatus {
    let (state, _, took) = job.snapshot();
    let error = match &state {
        jobs::State::Failed(why) => Some(why.clone()),
        _ => None,
    };
    SweepStatus {
        id: job.id.clone(),
        agent: job.agent.to_string(),
        state: state.as_str(),
        error,
        sizes: job.live.sizes.clone(),
        pool: job.live.pool,
        cases: job.live.cases,
        seconds: took.unwrap_or_else(|| job.started.elapsed()).as_secs_f64(),
        points: job
            .live
            .points
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone(),
    }
}

fn unavailable(detail: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "sweep-unavailable", detail)
}

fn refused(why: Refused) -> ApiError {
    let detail = match why {
        Refused::Agent | Refused::Total => format!(
            "a sweep is running already (at most {MAX_RUNNING} at a time in this server); wait \
             for it to finish, or stop yours with DELETE on its address"
        ),
    };
    ApiError::new(StatusCode::TOO_MANY_REQUESTS, "sweep-running", detail)
}

/// Start a scale sweep of an agent's routing: `cases` measured on the agent's skills, then with
/// the library grown by the server's distractor pool (`skillbase serve --sweep-pool DIR`) at
/// each of `sizes`, as `skillbase eval --sweep` does. Answers 202 with the sweep's address
/// (`Location`); `GET` on it shows the sizes measured so far. One sweep runs at a time; an
/// agent token may sweep its own agent only. Nothing in the caller's store is written.
#[utoipa::path(post, path = "/v1/agents/{name}/eval/sweeps", tag = "agents", operation_id = "sweep_start",
    params(("name" = AgentName, Path, description = "The agent's name")),
    request_body = SweepRequest,
    responses((status = 202, description = "Started", body = SweepStatus, links(
            ("show" = (operation_id = "agents_sweep_show", parameters(("name" = "$request.path.name"), ("id" = "$response.body#/id")))),
            ("stop" = (operation_id = "agents_sweep_stop", parameters(("name" = "$request.path.name"), ("id" = "$response.body#/id")))))),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The server has no distractor pool, or cannot read it", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "A sweep is running", body = Problem, content_type = "application/problem+json")))]
pub async fn start(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Body(b): Body<SweepRequest>,
) -> ApiResult<Response> {
    let name = visible_agent(&p, &name)?;
    let invalid = |m: String| unprocessable("invalid-eval", m);
    let n = b.cases.len();
    if n == 0 || n > MAX_EVAL_CASES {
        return Err(invalid(format!(
            "cases: give 1 to {MAX_EVAL_CASES} cases (this request has {n})"
        )));
    }
    let lines: Vec<String> = b.cases.iter().map(Value::to_string).collect();
    let cases = skillbase_insight::eval::parse_cases(&lines.join("\n"))
        .map_err(|e| invalid(format!("cases: {e}")))?;
    if let Some(s) = &b.sizes {
        if s.is_empty() || s.len() > MAX_SIZES {
            return Err(invalid(format!(
                "sizes: give 1 to {MAX_SIZES} sizes (this request has {})",
                s.len()
            )));
        }
        if let Some(big) = s.iter().find(|&&n| n > MAX_SIZE) {
            return Err(invalid(format!(
                "sizes: each is a number of distractors from 0 to {MAX_SIZE} ({big} is not)"
            )));
        }
    }
    let opts = TurnOptions {
        catalog_budget: super::sessions::budget("catalog_budget", b.catalog_budget)?,
        context_budget: super::sessions::budget("context_budget", b.context_budget)?,
        ..Default::default()
    };
    let Some(dir) = st.options.sweep_pool.clone() else {
        return Err(unavailable(
            "this server has no distractor pool to sweep with: start it with `skillbase serve \
             --sweep-pool DIR` (a folder of skills no case expects, such as SkillRouter's pool)"
                .into(),
        ));
    };
    st.engine.view(&name)?;
    let sweeps = &st.sweeps;
    // Refused before the pool is read: reading thousands of skills is not free.
    if let Some(why) = sweeps.jobs.refusal(&name, Instant::now()) {
        return Err(refused(why));
    }
    let pool = read_pool(dir).await?;
    // Each size is at most MAX_SIZE, checked above.
    let mut sizes: Vec<usize> = match b.sizes {
        Some(s) => s.into_iter().map(|n| n as usize).collect(),
        None => skillbase_insight::sweep::default_sizes(pool.len()),
    };
    sizes.sort_unstable();
    sizes.dedup();
    let total = {
        let mut measured: Vec<usize> = sizes.iter().map(|&s| s.min(pool.len())).collect();
        measured.dedup();
        measured.len()
    };
    let live = SweepLive {
        sizes: sizes.clone(),
        pool: pool.len(),
        cases: cases.len(),
        points: Mutex::new(Vec::new()),
        stop: CancellationToken::new(),
    };
    let job = sweeps
        .jobs
        .start(&name, p.token_id(), total, live, Instant::now())
        .map_err(refused)?;
    let semantic = sweeps
        .semantic
        .get_or_init(|| st.engine.semantic().map(|s| Arc::new(s.sibling())))
        .clone();
    let status = status_of(&job);
    tokio::spawn(run(
        st.clone(),
        job.clone(),
        Work {
            cases,
            opts,
            pool,
            sizes,
            semantic,
        },
    ));
    let mut res = (StatusCode::ACCEPTED, Json(status)).into_response();
    if let Ok(v) = HeaderValue::from_str(&status_url(&name, &job.id)) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    Ok(res)
}

/// Every skill of the server's pool, off the async workers; a pool that cannot be read is the
/// operator's to fix, and says so.
async fn read_pool(dir: PathBuf) -> ApiResult<Vec<skillbase_format::Bundle>> {
    let shown = dir.display().to_string();
    let limits = skillbase_store::pack::PackLimits::default();
    tokio::task::spawn_blocking(move || skillbase_store::pack::read_source(&dir, &limits))
        .await
        .map_err(|e| ApiError::internal(format!("reading the distractor pool: {e}")))?
        .map_err(|e| {
            unavailable(format!(
                "the server's distractor pool ({shown}) could not be read: {e}; the operator \
                 fixes the folder or restarts the server without --sweep-pool"
            ))
        })
}

/// What a sweep's task measures.
struct Work {
    cases: Vec<skillbase_insight::eval::EvalCase>,
    opts: TurnOptions,
    pool: Vec<skillbase_format::Bundle>,
    sizes: Vec<usize>,
    semantic: Option<Arc<Semantic>>,
}

/// Run a sweep to its end (or until it is stopped, or the server shuts down) and keep its
/// outcome.
async fn run(st: Arc<AppState>, job: Arc<SweepJob>, w: Work) {
    let measure = async {
        let dir = tempfile::tempdir().map_err(|e| format!("a scratch folder: {e}"))?;
        let mut builder = Engine::builder().sqlite(dir.path().join("sweep.db"));
        if let Some(s) = w.semantic {
            builder = builder.semantic(s);
        }
        let scratch = builder
            .build()
            .await
            .map_err(|e| format!("the scratch store: {e}"))?;
        job.set_running();
        let input = skillbase_insight::sweep::SweepInput {
            source: &st.engine,
            scratch: &scratch,
            agent: &job.agent,
            cases: &w.cases,
            opts: &w.opts,
            distractors: w.pool,
            sizes: w.sizes,
        };
        let r = skillbase_insight::sweep::sweep(input, |point| {
            let mut kept = point.clone();
            // The fit's cases are `eval --fit-confidence`'s; the status never shows them.
            kept.fit = Vec::new();
            job.live
                .points
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(kept);
            job.progress.advance();
        })
        .await;
        scratch.close().await;
        r.map(|_| ()).map_err(|e| e.to_string())
    };
    let state = tokio::select! {
        r = measure => match r {
            Ok(()) => jobs::State::Done(Arc::new(())),
            Err(why) => jobs::State::Failed(why),
        },
        () = job.live.stop.cancelled() => jobs::State::Stopped,
        () = st.shutdown.cancelled() => jobs::State::Stopped,
    };
    job.finish(state, Instant::now());
}

/// The job `id` of agent `name` if the caller's token started it: anyone else's, a forgotten
/// one and a malformed id are all the same 404.
fn job_of(st: &AppState, p: &Principal, name: &str, id: &str) -> ApiResult<Arc<SweepJob>> {
    let name = visible_agent(p, name)?;
    st.sweeps
        .jobs
        .get(id, &name, p.token_id(), Instant::now())
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no sweep '{}' of agent '{name}' started with this token (finished sweeps are \
                 kept {} minutes)",
                id.chars().take(40).collect::<String>(),
                jobs::KEEP_FINISHED.as_secs() / 60
            ))
        })
}

/// A sweep: its state and the sizes measured so far (each as `skillbase eval --sweep --json`
/// prints it). Only the token that started it sees it.
#[utoipa::path(get, path = "/v1/agents/{name}/eval/sweeps/{id}", tag = "agents", operation_id = "sweep_show",
    params(("name" = AgentName, Path, description = "The agent's name"),
        ("id" = String, Path, description = "The sweep's id")),
    responses((status = 200, body = SweepStatus),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn show(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P((name, id)): P<(String, String)>,
) -> ApiResult<Json<SweepStatus>> {
    let job = job_of(&st, &p, &name, &id)?;
    Ok(Json(status_of(&job)))
}

/// Stop a sweep at its next step (the sizes measured so far are kept); a finished one is
/// answered as it is.
#[utoipa::path(delete, path = "/v1/agents/{name}/eval/sweeps/{id}", tag = "agents", operation_id = "sweep_stop",
    params(("name" = AgentName, Path, description = "The agent's name"),
        ("id" = String, Path, description = "The sweep's id")),
    responses((status = 202, description = "Stopping", body = SweepStatus),
        (status = 200, description = "Already finished", body = SweepStatus),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn stop(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P((name, id)): P<(String, String)>,
) -> ApiResult<Response> {
    let job = job_of(&st, &p, &name, &id)?;
    let status = status_of(&job);
    if matches!(status.state, "preparing" | "running") {
        job.live.stop.cancel();
        return Ok((StatusCode::ACCEPTED, Json(status)).into_response());
    }
    Ok(Json(status).into_response())
}
