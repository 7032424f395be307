//! Evaluations: the form's cases started as a background job (see `crate::jobs`), the job's
//! page with its progress and then its tables, and the status the page polls.

use super::access::agent_of;
use super::common::{ok, stale, store_error};
use crate::auth::Principal;
use crate::jobs;
use crate::state::AppState;
use crate::studio::html::{esc, url};
use crate::studio::{SignedIn, fail, redirect};
use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use skillbase_store::AgentName;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// The studio's evaluations.
pub(crate) type EvalJobs = jobs::Jobs<skillbase_insight::eval::EvalReport>;
/// Evaluations running at once for one agent.
pub(crate) const MAX_PER_AGENT: usize = 2;
/// Evaluations running at once in the whole server.
pub(crate) const MAX_RUNNING: usize = 4;

#[derive(Deserialize)]
pub(crate) struct EvalForm {
    csrf: String,
    cases: String,
}

fn job_url(agent: &str, id: &str) -> String {
    format!("/studio/agents/{}/eval/{id}", url(agent))
}

/// The agent page's list of the evaluations the signed-in token started for the agent.
pub(super) fn recent_evaluations(
    b: &mut String,
    jobs: &EvalJobs,
    agent: &AgentName,
    p: &Principal,
) {
    let mine = jobs.of(agent, p.token_id(), Instant::now());
    if !mine.is_empty() {
        b.push_str("<h3>Your recent evaluations</h3><ul id=\"eval-jobs\">");
        for j in &mine {
            let (state, done, _) = j.snapshot();
            let _ = write!(
                b,
                "<li data-job=\"{}\"><a href=\"{}\">{} cases</a> · {} ({done} done)</li>",
                state.as_str(),
                job_url(agent.as_str(), &j.id),
                j.total,
                state.as_str()
            );
        }
        b.push_str("</ul>");
    }
}

/// `skillbase eval` on the cases given, on the agent's real turn path, as a background job:
/// the cases are read and checked here (a refusal starts nothing), then the answer is the job's
/// page, which shows its progress and then its tables.
pub(crate) async fn agent_eval(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<EvalJobs>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<EvalForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    let Some(a) = agent_of(&st, &p, &name) else {
        return fail(StatusCode::NOT_FOUND, "no such agent");
    };
    if f.cases.len() > 4 * 1024 * 1024 {
        return fail(StatusCode::PAYLOAD_TOO_LARGE, "the cases are over 4 MiB");
    }
    let cases = match skillbase_insight::eval::parse_cases(&f.cases) {
        Ok(c) if !c.is_empty() => c,
        Ok(_) => {
            return fail(
                StatusCode::UNPROCESSABLE_ENTITY,
                "no cases: write one per line",
            );
        }
        Err(e) => return fail(StatusCode::UNPROCESSABLE_ENTITY, &format!("cases: {e}")),
    };
    let view = match st.engine.view(&a.name) {
        Ok(v) => v,
        Err(e) => return store_error(e),
    };
    let job = match jobs.start(&a.name, p.token_id(), cases.len(), (), Instant::now()) {
        Ok(j) => j,
        Err(why) => {
            let message = match why {
                jobs::Refused::Agent => format!(
                    "not started: {} evaluations of {} are running already (at most {} at a time); wait for one to finish",
                    MAX_PER_AGENT, a.name, MAX_PER_AGENT
                ),
                jobs::Refused::Total => format!(
                    "not started: the studio is running {} evaluations already (at most {} at a time); wait for one to finish",
                    MAX_RUNNING, MAX_RUNNING
                ),
            };
            return fail(StatusCode::TOO_MANY_REQUESTS, &message);
        }
    };
    let to = job_url(a.name.as_str(), &job.id);
    tokio::spawn(run_job(st, job, view, cases));
    redirect(&to)
}

/// Run a job's evaluation to its end (or until the server shuts down) and keep its outcome.
async fn run_job(
    st: Arc<AppState>,
    job: Arc<jobs::Job<skillbase_insight::eval::EvalReport>>,
    view: Arc<skillbase_runtime::AgentView>,
    cases: Vec<skillbase_insight::eval::EvalCase>,
) {
    let progress = job.progress.clone();
    let running = job.clone();
    let run = crate::rest::evaluate_off_workers(
        &st,
        view,
        cases,
        |cases| cases.iter().map(|c| c.message.as_str()).collect(),
        move |view, cases, opts, vectors| {
            running.set_running();
            skillbase_insight::eval::evaluate_observed(view, cases, opts, vectors, &progress)
        },
        Default::default(),
    );
    let state = tokio::select! {
        r = run => match r {
            Ok(Some(mut report)) => {
                // The page shows the tables, never the cases one by one.
                report.outcomes = Vec::new();
                jobs::State::Done(Arc::new(report))
            }
            Ok(None) => jobs::State::Stopped,
            Err(e) => jobs::State::Failed(e.detail),
        },
        () = st.shutdown.cancelled() => {
            // The evaluation ends after the case it is on.
            job.progress.stop();
            jobs::State::Stopped
        }
    };
    job.finish(state, Instant::now());
}

/// The job `id` of agent `name` if the signed-in token started it; anyone else's, a
/// forgotten one and a malformed id are all [`no_such_job`].
fn job_of(
    st: &AppState,
    jobs: &EvalJobs,
    p: &Principal,
    name: &str,
    id: &str,
) -> Option<(
    Arc<skillbase_store::Agent>,
    Arc<jobs::Job<skillbase_insight::eval::EvalReport>>,
)> {
    let a = agent_of(st, p, name)?;
    let job = jobs.get(id, &a.name, p.token_id(), Instant::now())?;
    Some((a, job))
}

fn no_such_job() -> Response {
    fail(StatusCode::NOT_FOUND, "no such evaluation")
}

/// Poll the status route while the job runs (the bar and the count follow it), then reload:
/// the page then has the tables. Without JavaScript the page reloads itself (`noscript`).
const JOB_SCRIPT: &str = "(function(){var el=document.getElementById('eval-job');if(!el||!window.fetch)return;\
var bar=document.getElementById('eval-progress'),count=document.getElementById('eval-count');\
function tick(){fetch(el.dataset.status,{cache:'no-store',credentials:'same-origin'}).then(function(r){if(!r.ok)throw r.status;return r.json();})\
.then(function(s){bar.max=s.total;bar.value=s.done;count.textContent=s.done+' of '+s.total+' cases';el.dataset.state=s.state;\
if(s.state==='preparing'||s.state==='running'){setTimeout(tick,500);}else{location.reload();}})\
.catch(function(){setTimeout(function(){location.reload();},1000);});}setTimeout(tick,300);})();";

/// A job's page: its progress while it runs, then the evaluation's tables.
pub(crate) async fn agent_eval_job(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<EvalJobs>>,
    Extension(p): Extension<Principal>,
    Path((name, id)): Path<(String, String)>,
) -> Response {
    let Some((a, job)) = job_of(&st, &jobs, &p, &name, &id) else {
        return no_such_job();
    };
    let (state, done, took) = job.snapshot();
    let agent = a.name.as_str();
    let back = format!(
        "<p class=\"muted\"><a href=\"/studio/agents/{}\">Back to {}</a></p>",
        url(agent),
        esc(agent)
    );
    match state {
        jobs::State::Preparing | jobs::State::Running => {
            let phase = if matches!(state, jobs::State::Preparing) {
                "Computing the messages' vectors for the semantic stage…"
            } else {
                "Running each case through the agent's turn path…"
            };
            let b = format!(
                "<h1>Evaluation of {}</h1><div id=\"eval-job\" data-state=\"{}\" data-status=\"{}/status\">\
                 <p><progress id=\"eval-progress\" max=\"{total}\" value=\"{done}\">{done} of {total}</progress> \
                 <span id=\"eval-count\">{done} of {total} cases</span></p><p class=\"muted\">{phase}</p></div>\
                 <noscript><meta http-equiv=\"refresh\" content=\"2\"><p class=\"muted\">This page reloads itself until the evaluation is done.</p></noscript>{back}",
                esc(agent),
                state.as_str(),
                job_url(agent, &job.id),
                total = job.total,
            );
            ok("Evaluation running", &p, &b, Some(JOB_SCRIPT))
        }
        jobs::State::Done(report) => {
            let mut b = eval_tables(agent, &report);
            let _ = write!(
                b,
                "<p class=\"muted\" id=\"eval-took\">{} cases in {:.1} s.</p>{back}",
                job.total,
                took.unwrap_or_default().as_secs_f64()
            );
            ok("Evaluation", &p, &b, None)
        }
        jobs::State::Failed(why) => {
            let b = format!(
                "<h1>Evaluation of {}</h1><p class=\"warn\" id=\"eval-failed\">The evaluation failed: {}</p>{back}",
                esc(agent),
                esc(&why)
            );
            ok("Evaluation failed", &p, &b, None)
        }
        jobs::State::Stopped => {
            let b = format!(
                "<h1>Evaluation of {}</h1><p class=\"warn\" id=\"eval-stopped\">The evaluation was stopped after {done} of {} cases: the server is shutting down.</p>{back}",
                esc(agent),
                job.total
            );
            ok("Evaluation stopped", &p, &b, None)
        }
    }
}

/// A job's progress as JSON, for its page's script: `{"state", "done", "total"}`.
pub(crate) async fn agent_eval_status(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<EvalJobs>>,
    Extension(p): Extension<Principal>,
    Path((name, id)): Path<(String, String)>,
) -> Response {
    let Some((_, job)) = job_of(&st, &jobs, &p, &name, &id) else {
        return no_such_job();
    };
    let (state, done, _) = job.snapshot();
    (
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        axum::Json(serde_json::json!({
            "state": state.as_str(),
            "done": done,
            "total": job.total,
        })),
    )
        .into_response()
}

/// The tables of `skillbase eval`.
fn eval_tables(agent: &str, report: &skillbase_insight::eval::EvalReport) -> String {
    let mut b = format!(
        "<h1>Evaluation of {}</h1><p>{} skills seen · {} cases</p>",
        esc(agent),
        report.skills,
        report.overall.cases
    );
    let row = |b: &mut String, label: &str, m: &skillbase_insight::eval::Metrics| {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td></tr>",
            esc(label),
            m.cases,
            m.recall_at_1,
            m.recall_at_5,
            m.recall_at_10,
            m.visible,
            m.false_triggers
        );
    };
    for (title, id, rows) in [
        ("By kind", "eval-kind", &report.by_kind),
        ("By language", "eval-lang", &report.by_lang),
        ("By skill", "eval-skill", &report.by_skill),
    ] {
        let _ = write!(
            b,
            "<h2>{title}</h2><table id=\"{id}\"><tr><th></th><th>cases</th><th>recall@1</th><th>recall@5</th><th>recall@10</th><th>visible</th><th>false triggers</th></tr>"
        );
        row(&mut b, "all", &report.overall);
        for (k, m) in rows {
            row(&mut b, k, m);
        }
        b.push_str("</table>");
    }
    if !report.confused.is_empty() {
        b.push_str("<h2>Most confused</h2><table><tr><th>expected</th><th>ranked first</th><th>times</th></tr>");
        for c in &report.confused {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.expected),
                esc(&c.got),
                c.count
            );
        }
        b.push_str("</table>");
    }
    if !report.unknown_expected.is_empty() {
        let _ = write!(
            b,
            "<p class=\"warn\">Expected skills this agent does not see: {}</p>",
            esc(&report.unknown_expected.join(", "))
        );
    }
    b
}
