//! A skill's actions (revert, retire, restore, disable, enable, approve, reject, specialize):
//! the form that asks for one, its confirmation page, and the store operation that does it.

use super::access::find;
use super::common::{admin_form, ok};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, url};
use crate::studio::{SignedIn, csrf, fail, redirect};
use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use skillbase_store::{AgentName, Author, Scope, SkillEntry, StatusChange, WriteOutcome};
use std::fmt::Write as _;
use std::sync::Arc;

pub(super) fn action_form(
    b: &mut String,
    name: &str,
    scope: &str,
    action: &str,
    rev: Option<i64>,
    label: &str,
    token: &str,
) {
    let _ = write!(
        b,
        "<form class=\"inline\" method=\"post\" action=\"/studio/skills/{}/action\">\
         <input type=\"hidden\" name=\"scope\" value=\"{}\"><input type=\"hidden\" name=\"action\" value=\"{}\">\
         {}<input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\" data-action=\"{}\"{}>{}</button></form> ",
        url(name),
        esc(scope),
        esc(action),
        rev.map(|r| format!("<input type=\"hidden\" name=\"rev\" value=\"{r}\">"))
            .unwrap_or_default(),
        esc(token),
        esc(action),
        rev.map(|r| format!(" data-rev=\"{r}\""))
            .unwrap_or_default(),
        esc(label)
    );
}

#[derive(Deserialize)]
pub(crate) struct ActionForm {
    scope: String,
    action: String,
    rev: Option<i64>,
    csrf: String,
    confirm: Option<String>,
    /// `specialize`: the agent whose own scope gets a copy of the shared body.
    agent: Option<String>,
}

/// Revert, retire, restore, disable, enable, approve or reject a pending revision, or specialize
/// a shared skill for one agent: asked for confirmation first, then done exactly as REST does it
/// (specialize through the engine's one write path). Admin only.
pub(crate) async fn skill_action(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<ActionForm>,
) -> Response {
    let why = "an agent's token is read-only in the studio; sign in with an admin token";
    if let Some(refused) = admin_form(&signed, &f.csrf, &p, why) {
        return refused;
    }
    let e = match find(&st, &p, &name, Some(&f.scope)) {
        Ok(e) => e,
        Err(r) => return *r,
    };
    let plan = match plan(&st, &f, &e) {
        Ok(plan) => plan,
        Err(r) => return *r,
    };
    let what = describe(&f.action, &e, &plan);
    if f.confirm.as_deref() != Some("yes") {
        let b = confirm_page(&f.action, &e, &plan, &what, &csrf(&signed));
        return ok("Confirm", &p, &b, None);
    }
    let actor = match &p {
        Principal::Admin { token } => Author::Human(match token {
            Some(id) => format!("studio:token-{id}"),
            None => "studio:dev".into(),
        }),
        Principal::Agent { .. } => unreachable!("refused above"),
    };
    let done = match perform(&st, &f.action, &e, &plan, &actor).await {
        Ok(done) => done,
        Err(r) => return *r,
    };
    let scope_after = match &plan.specialize_for {
        Some(a) => Scope::Agent(a.clone()).to_string(),
        None => e.scope.to_string(),
    };
    match done {
        Ok(_) => redirect(&format!(
            "/studio/skills/{}?scope={}",
            url(&e.name),
            url(&scope_after)
        )),
        Err(err) => fail(StatusCode::CONFLICT, &err.to_string()),
    }
}

/// What a well-formed action form asks for.
struct Plan {
    /// Retire, restore, disable or enable.
    change: Option<StatusChange>,
    /// `specialize`: the agent that gets its own copy.
    specialize_for: Option<AgentName>,
    /// Revert, approve or reject: the revision.
    rev: Option<i64>,
}

/// The form read and checked: an unknown action, a `specialize` without a known agent or of a
/// skill that is not shared, and a revert, approve or reject without a revision are refused.
fn plan(st: &AppState, f: &ActionForm, e: &SkillEntry) -> Result<Plan, Box<Response>> {
    let refuse = |status, message: &str| Box::new(fail(status, message));
    let change = match f.action.as_str() {
        "revert" | "approve" | "reject" | "specialize" => None,
        "retire" => Some(StatusChange::Retire),
        "restore" => Some(StatusChange::Restore),
        "disable" => Some(StatusChange::Disable),
        "enable" => Some(StatusChange::Enable),
        _ => return Err(refuse(StatusCode::BAD_REQUEST, "unknown action")),
    };
    let specialize_for = if f.action == "specialize" {
        let Some(agent) = f.agent.as_deref().and_then(|a| AgentName::parse(a).ok()) else {
            return Err(refuse(StatusCode::BAD_REQUEST, "specialize needs an agent"));
        };
        if e.scope != Scope::Shared {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "only a shared skill is specialized",
            ));
        }
        if st.store.agent_cached(&agent).is_none() {
            return Err(refuse(StatusCode::NOT_FOUND, "no such agent"));
        }
        Some(agent)
    } else {
        None
    };
    let rev = match (f.action.as_str(), f.rev) {
        ("revert" | "approve" | "reject", Some(r)) if r >= 1 => Some(r),
        ("revert" | "approve" | "reject", _) => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "revert, approve and reject need a revision",
            ));
        }
        _ => None,
    };
    Ok(Plan {
        change,
        specialize_for,
        rev,
    })
}

/// The action in words, for the confirmation page.
fn describe(action: &str, e: &SkillEntry, plan: &Plan) -> String {
    match (&plan.specialize_for, plan.rev) {
        (Some(a), _) => format!(
            "specialize {} for agent {a} (its own copy of the shared body, which it then sees instead)",
            e.name
        ),
        (None, Some(r)) if action == "approve" || action == "reject" => {
            format!("{} revision {r} of {} ({})", action, e.name, e.scope)
        }
        (None, Some(r)) => format!("revert {} ({}) to revision {r}", e.name, e.scope),
        (None, None) => format!("{} {} ({})", action, e.name, e.scope),
    }
}

/// The confirmation page's body: the same form again, confirmed, or a way back.
fn confirm_page(action: &str, e: &SkillEntry, plan: &Plan, what: &str, token: &str) -> String {
    let mut b = format!(
        "<h1>Confirm</h1><p>Really {}? Nothing is deleted: the change is recorded and can be undone from the skill's page.</p>",
        esc(what)
    );
    let _ = write!(
        b,
        "<form method=\"post\" action=\"/studio/skills/{}/action\"><input type=\"hidden\" name=\"scope\" value=\"{}\">\
         <input type=\"hidden\" name=\"action\" value=\"{}\">{}{}<input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <input type=\"hidden\" name=\"confirm\" value=\"yes\"><button type=\"submit\" id=\"confirm\">Yes, {}</button> \
         <a href=\"/studio/skills/{}?scope={}\">Cancel</a></form>",
        url(&e.name),
        esc(&e.scope.to_string()),
        esc(action),
        plan.rev
            .map(|r| format!("<input type=\"hidden\" name=\"rev\" value=\"{r}\">"))
            .unwrap_or_default(),
        plan.specialize_for
            .as_ref()
            .map(|a| format!(
                "<input type=\"hidden\" name=\"agent\" value=\"{}\">",
                esc(a.as_str())
            ))
            .unwrap_or_default(),
        esc(token),
        esc(what),
        url(&e.name),
        url(&e.scope.to_string())
    );
    b
}

/// The confirmed action, done through the store as `actor`: the store's answer; a form that
/// asks for nothing is refused.
async fn perform(
    st: &AppState,
    action: &str,
    e: &SkillEntry,
    plan: &Plan,
    actor: &Author,
) -> Result<skillbase_store::Result<WriteOutcome>, Box<Response>> {
    let writer = st.engine.writer();
    Ok(match (plan.change, plan.rev) {
        _ if plan.specialize_for.is_some() => {
            let agent = plan.specialize_for.clone().expect("checked");
            specialize(st, e, agent, actor).await
        }
        (None, Some(r)) if action == "approve" => writer.approve(&e.scope, &e.name, r, actor).await,
        (None, Some(r)) if action == "reject" => writer.reject(&e.scope, &e.name, r, actor).await,
        (None, Some(r)) => writer.revert(&e.scope, &e.name, r, actor).await,
        (Some(c), _) => {
            let reason = serde_json::json!({"from": "studio"});
            writer
                .set_status(&e.scope, &e.name, c, actor, reason, None)
                .await
        }
        _ => {
            return Err(Box::new(fail(
                StatusCode::BAD_REQUEST,
                "revert needs a revision",
            )));
        }
    })
}

/// A copy of the shared skill's active bundle written to `agent`'s own scope.
async fn specialize(
    st: &AppState,
    e: &SkillEntry,
    agent: AgentName,
    actor: &Author,
) -> skillbase_store::Result<WriteOutcome> {
    match st.store.bundle(&e.scope, &e.name, None).await {
        Ok((_, bundle)) => {
            st.engine
                .writer()
                .put(skillbase_store::PutRequest {
                    scope: Scope::Agent(agent),
                    bundle,
                    author: actor.clone(),
                    message: format!("specialized from the shared {} in the studio", e.name),
                    expect_rev: None,
                    signature: None,
                })
                .await
        }
        Err(err) => Err(err),
    }
}
