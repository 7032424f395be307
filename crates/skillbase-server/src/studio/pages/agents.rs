//! The agents list and an agent's page: its configuration (edited by an admin), its doctor
//! findings, and the forms that try a turn and start an evaluation.

use super::access::agent_of;
use super::common::{admin_form, ok, store_error, who};
use super::eval::EvalJobs;
use super::eval::recent_evaluations;
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, url};
use crate::studio::{SignedIn, csrf, fail, redirect};
use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use skillbase_store::AgentName;
use std::fmt::Write as _;
use std::sync::Arc;

fn names(set: &skillbase_store::NameSet) -> String {
    match serde_json::to_value(set) {
        Ok(Value::String(s)) => s,
        Ok(Value::Array(v)) => v
            .iter()
            .filter_map(|x| x.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

pub(crate) async fn agents(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
) -> Response {
    let all = match st.store.agents().await {
        Ok(v) => v,
        Err(e) => return store_error(e),
    };
    let mut b = String::from(
        "<h1>Agents</h1><table id=\"agents\"><tr><th>Agent</th><th>Skills</th><th>Eager</th><th>Grants (tools)</th><th>Budgets</th></tr>",
    );
    for a in all
        .iter()
        .filter(|a| p.agent().is_none_or(|x| *x == a.name))
    {
        let _ = write!(
            b,
            "<tr><td><a href=\"/studio/agents/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>catalog {} · context {}</td></tr>",
            url(a.name.as_str()),
            esc(a.name.as_str()),
            esc(&names(&a.config.skills)),
            esc(&names(&a.config.eager)),
            esc(&a.config.grants.tools.join(", ")),
            a.config.catalog_budget,
            a.config.context_budget
        );
    }
    b.push_str("</table>");
    ok("Agents", &p, &b, None)
}

pub(crate) async fn agent(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<EvalJobs>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
) -> Response {
    let missing = || fail(StatusCode::NOT_FOUND, "no such agent");
    let Ok(agent) = AgentName::parse(&name) else {
        return missing();
    };
    if p.agent().is_some_and(|a| *a != agent) {
        return missing();
    }
    let Some(a) = st.store.agent_cached(&agent) else {
        return missing();
    };
    let mut b = format!(
        "<h1>Agent {}</h1><p>{}</p><h2>Configuration</h2><pre id=\"config\">{}</pre>",
        esc(agent.as_str()),
        esc(&a.config.description),
        esc(&serde_json::to_string_pretty(&a.config).unwrap_or_default())
    );
    doctor(&mut b, &st, &agent, &p).await;
    agent_forms(
        &mut b,
        agent.as_str(),
        &serde_json::to_string_pretty(&a.config).unwrap_or_default(),
        p.is_admin(),
        &csrf(&signed),
    );
    recent_evaluations(&mut b, &jobs, &agent, &p);
    ok(&format!("Agent {agent}"), &p, &b, None)
}

/// The agent page's Doctor section: the findings of `skillbase doctor` for the agent.
async fn doctor(b: &mut String, st: &AppState, agent: &AgentName, p: &Principal) {
    let opts = skillbase_insight::doctor::DoctorOptions {
        agent: Some(agent.clone()),
        own_only: p.agent().is_some(),
        actor: format!("studio:{}", who(p)),
        ..Default::default()
    };
    let report = skillbase_insight::doctor::run(&st.engine, &opts).await;
    b.push_str("<h2>Doctor</h2>");
    match report {
        Ok(r) if r.findings.is_empty() => b.push_str("<p id=\"findings\">No findings.</p>"),
        Ok(r) => {
            b.push_str("<table id=\"findings\"><tr><th>Code</th><th>Severity</th><th>Skill</th><th>Finding</th><th>Fix</th></tr>");
            for f in &r.findings {
                let _ = write!(
                    b,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    f.code,
                    f.severity.as_str(),
                    esc(f.skill.as_deref().unwrap_or("")),
                    esc(&f.message),
                    esc(&f.fix)
                );
            }
            b.push_str("</table>");
        }
        Err(e) => {
            let _ = write!(b, "<p class=\"warn\">{}</p>", esc(&e.to_string()));
        }
    }
}

/// The agent page's forms: edit (admin), try a turn, evaluate cases.
fn agent_forms(b: &mut String, name: &str, config: &str, admin: bool, token: &str) {
    let u = url(name);
    if admin {
        let _ = write!(
            b,
            "<h2>Edit</h2><form method=\"post\" action=\"/studio/agents/{u}/config\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{t}\"><textarea name=\"config\" id=\"config-edit\" rows=\"14\" cols=\"100\">{c}</textarea>\
             <p><button type=\"submit\" id=\"save-config\">Save (checked as every agent write is)</button></p></form>",
            t = esc(token),
            c = esc(config)
        );
    }
    let _ = write!(
        b,
        "<h2>Try a turn</h2><form method=\"post\" action=\"/studio/agents/{u}/turn\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{t}\"><input type=\"text\" name=\"message\" id=\"try-message\" size=\"90\" maxlength=\"65536\">\
         <p><label>Paths the turn works on (one per line; skills whose <code>paths:</code> globs match one are placed)<br>\
         <textarea name=\"paths\" id=\"try-paths\" rows=\"3\" cols=\"90\"></textarea></label></p>\
         <button type=\"submit\" id=\"try-turn\">Run the turn</button></form>\
         <h2>Evaluate</h2><form method=\"post\" action=\"/studio/agents/{u}/eval\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{t}\"><p class=\"muted\">One case per line, as <code>skillbase eval</code> reads them: \
         <code>{{\"message\": \"…\", \"expected\": \"skill-name\"}}</code> (or <code>null</code>), optional <code>kind</code> and <code>lang</code>.</p>\
         <p><label>A cases file (.jsonl) <input type=\"file\" id=\"eval-file\" accept=\".jsonl,.json,.txt\"></label> or paste them:</p>\
         <textarea name=\"cases\" id=\"eval-cases\" rows=\"8\" cols=\"100\"></textarea>\
         <p><button type=\"submit\" id=\"run-eval\">Evaluate</button> <span class=\"muted\">It runs in the background: its page shows the cases done, then the tables.</span></p></form>",
        t = esc(token)
    );
    b.push_str(RUNNING_SCRIPT);
}

/// A turn can take a while (the semantic stage warming): its button says it is running. An
/// evaluation's cases are read before its job starts: its button says so.
const RUNNING_SCRIPT: &str = "<script>document.querySelectorAll('form').forEach(function(f){f.addEventListener('submit',function(){\
var b=f.querySelector('button[type=submit]');if(b&&b.id!=='save-config'){b.disabled=true;b.textContent=b.id==='run-eval'?'Starting…':'Running…';}});});\
var i=document.getElementById('eval-file');if(i){i.addEventListener('change',function(){var r=new FileReader();\
r.onload=function(){document.getElementById('eval-cases').value=r.result;};if(i.files[0])r.readAsText(i.files[0]);});}</script>";

#[derive(Deserialize)]
pub(crate) struct ConfigForm {
    csrf: String,
    config: String,
}

/// Replace the agent's configuration with the JSON given, checked by the store as every agent
/// write is; a refusal changes nothing and says what to fix.
pub(crate) async fn agent_config(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<ConfigForm>,
) -> Response {
    let why = "an agent's token is read-only in the studio";
    if let Some(refused) = admin_form(&signed, &f.csrf, &p, why) {
        return refused;
    }
    let Some(a) = agent_of(&st, &p, &name) else {
        return fail(StatusCode::NOT_FOUND, "no such agent");
    };
    if f.config.len() > 256 * 1024 {
        return fail(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the configuration is over 256 KiB",
        );
    }
    let config: skillbase_store::AgentConfig = match serde_json::from_str(&f.config) {
        Ok(c) => c,
        Err(e) => {
            return fail(
                StatusCode::UNPROCESSABLE_ENTITY,
                &format!("not saved: the configuration is not valid: {e}"),
            );
        }
    };
    match st.store.set_agent(&a.name, &config).await {
        Ok(_) => redirect(&format!("/studio/agents/{}", url(a.name.as_str()))),
        Err(e) => fail(StatusCode::UNPROCESSABLE_ENTITY, &format!("not saved: {e}")),
    }
}
