//! The library health page: the skills to act on, each with a link or a button that acts —
//! never used over the window (retire or disable), failing (runs failing, drift-disabled:
//! enable, revert on the skill's page, the pending revisions), overlapping (the doctor's
//! D013 findings) and unscanned or flagged by the scanner (D015), both read from one run of the
//! doctor, not recomputed. An agent token sees its own agent's
//! figures about the skills it may see, read-only.

use super::access::visible;
use super::actions::action_form;
use super::common::{ok, store_error, who};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, url};
use crate::studio::{SignedIn, csrf, fail};
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use skillbase_store::usage::{NeverUsed, SkillTotals, parse_since, today};
use skillbase_store::{SkillEntry, Status};
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(Deserialize)]
pub(crate) struct HealthQuery {
    since: Option<String>,
}

pub(crate) async fn health(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Query(q): Query<HealthQuery>,
) -> Response {
    let raw = q.since.as_deref().unwrap_or("30d");
    let since = match parse_since(raw, today()) {
        Ok(d) => d,
        Err(e) => return fail(StatusCode::BAD_REQUEST, &e),
    };
    let agent = p.agent().map(|a| a.as_str());
    st.engine.flush().await;
    let usage = match st.store.library_usage(agent, since).await {
        Ok(u) => u,
        Err(e) => return store_error(e),
    };
    let seen = visible(&st, &p);
    let token = if p.is_admin() {
        Some(csrf(&signed))
    } else {
        None
    };
    let mut b = format!(
        "<h1>Library health</h1><form method=\"get\" action=\"/studio/health\">Since \
         <input type=\"text\" name=\"since\" id=\"since\" value=\"{}\" size=\"12\"> \
         <button type=\"submit\">Show</button> <span class=\"muted\">a date (2026-01-31) or days back (30d); from {}{}</span></form>",
        esc(raw),
        esc(&usage.since),
        agent
            .map(|a| format!(", agent {}", esc(a)))
            .unwrap_or_default()
    );
    never_used(&mut b, &usage.never_used, &seen, token.as_deref());
    failing(&mut b, &usage.skills, &seen, token.as_deref());
    doctor_sections(&mut b, &st, &p, &seen).await;
    ok("Library health", &p, &b, None)
}

/// A link to the skill's page.
fn link(name: &str, scope: &str) -> String {
    format!(
        "<a href=\"/studio/skills/{}?scope={}\">{}</a>",
        url(name),
        url(scope),
        esc(name)
    )
}

/// The record of `name` the caller sees (the shared one first, for an admin).
fn record<'a>(seen: &'a [Arc<SkillEntry>], name: &str) -> Option<&'a Arc<SkillEntry>> {
    seen.iter()
        .filter(|e| e.name == name)
        .min_by_key(|e| e.scope != skillbase_store::Scope::Shared)
}

fn never_used(b: &mut String, list: &[NeverUsed], seen: &[Arc<SkillEntry>], token: Option<&str>) {
    let list: Vec<&NeverUsed> = list
        .iter()
        .filter(|n| {
            seen.iter()
                .any(|e| e.name == n.name && e.scope.to_string() == n.scope)
        })
        .collect();
    let _ = write!(
        b,
        "<h2>Never used <span class=\"muted\">({})</span></h2>",
        list.len()
    );
    if list.is_empty() {
        b.push_str("<p id=\"never-used\" class=\"muted\">Every skill was used in this window.</p>");
        return;
    }
    b.push_str(
        "<table id=\"never-used\"><tr><th>Skill</th><th>Scope</th><th>Last used</th><th></th></tr>",
    );
    for n in list {
        let _ = write!(
            b,
            "<tr data-skill=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>",
            esc(&n.name),
            link(&n.name, &n.scope),
            esc(&n.scope),
            esc(n.last_used.as_deref().unwrap_or("never"))
        );
        if let Some(t) = token {
            action_form(b, &n.name, &n.scope, "retire", None, "Retire", t);
            action_form(b, &n.name, &n.scope, "disable", None, "Disable", t);
        }
        b.push_str("</td></tr>");
    }
    b.push_str("</table>");
}

fn failing(b: &mut String, skills: &[SkillTotals], seen: &[Arc<SkillEntry>], token: Option<&str>) {
    let rows: Vec<(&SkillTotals, &Arc<SkillEntry>)> = skills
        .iter()
        .filter(|s| {
            s.drift_disabled > 0 || (s.runs.failure > 0 && s.runs.failure >= s.runs.success)
        })
        .filter_map(|s| record(seen, &s.skill).map(|e| (s, e)))
        .collect();
    let _ = write!(
        b,
        "<h2>Failing <span class=\"muted\">({})</span></h2>",
        rows.len()
    );
    if rows.is_empty() {
        b.push_str("<p id=\"failing\" class=\"muted\">No skill failed as often as it succeeded, and drift disabled none.</p>");
        return;
    }
    b.push_str("<table id=\"failing\"><tr><th>Skill</th><th>Status</th><th>Runs ok</th><th>Runs failed</th><th>Drift-disabled</th><th></th></tr>");
    for (s, e) in rows {
        let scope = e.scope.to_string();
        let _ = write!(
            b,
            "<tr data-skill=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>\
             <a href=\"/studio/skills/{}?scope={}#history\">History and revert</a> ",
            esc(&s.skill),
            link(&s.skill, &scope),
            e.status,
            s.runs.success,
            s.runs.failure,
            s.drift_disabled,
            url(&e.name),
            url(&scope)
        );
        if let Some(t) = token {
            if e.status == Status::Disabled {
                action_form(b, &e.name, &scope, "enable", None, "Enable", t);
            }
            if e.head_rev > e.active_rev {
                b.push_str("<a href=\"/studio/approvals\">Pending revisions</a>");
            }
        }
        b.push_str("</td></tr>");
    }
    b.push_str("</table>");
}

/// The doctor's findings the page lists, one run: D013 (skills an agent sees that read as
/// near-duplicates) and D015 (skills never scanned, or served with high scan findings).
async fn doctor_sections(b: &mut String, st: &AppState, p: &Principal, seen: &[Arc<SkillEntry>]) {
    let opts = skillbase_insight::doctor::DoctorOptions {
        agent: p.agent().cloned(),
        own_only: p.agent().is_some(),
        actor: format!("studio:{}", who(p)),
        ..Default::default()
    };
    let report = match skillbase_insight::doctor::run(&st.engine, &opts).await {
        Ok(r) => r,
        Err(e) => {
            b.push_str("<h2>Overlapping and unscanned</h2>");
            let _ = write!(b, "<p class=\"warn\">{}</p>", esc(&e.to_string()));
            return;
        }
    };
    let of = |code: &str| -> Vec<&skillbase_insight::doctor::Finding> {
        report
            .findings
            .iter()
            .filter(|f| f.code.as_str() == code)
            .collect()
    };
    overlapping(b, &of("D013"), seen);
    unscanned(b, &of("D015"));
}

fn overlapping(
    b: &mut String,
    found: &[&skillbase_insight::doctor::Finding],
    seen: &[Arc<SkillEntry>],
) {
    b.push_str("<h2>Overlapping <span class=\"muted\">(doctor D013)</span></h2>");
    if found.is_empty() {
        b.push_str("<p id=\"overlapping\" class=\"muted\">No two skills an agent sees read as near-duplicates.</p>");
        return;
    }
    b.push_str("<table id=\"overlapping\"><tr><th>Agent</th><th>Skill</th><th>Overlaps</th><th>Finding</th><th>Fix</th></tr>");
    for f in found {
        let skill = f.skill.as_deref().unwrap_or("");
        let related = f.related.as_deref().unwrap_or("");
        let other = record(seen, related)
            .map(|e| link(related, &e.scope.to_string()))
            .unwrap_or_else(|| esc(related));
        let _ = write!(
            b,
            "<tr data-skill=\"{}\"><td><a href=\"/studio/agents/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(skill),
            url(f.agent.as_deref().unwrap_or("")),
            esc(f.agent.as_deref().unwrap_or("")),
            link(skill, f.scope.as_deref().unwrap_or("shared")),
            other,
            esc(&f.message),
            esc(&f.fix)
        );
    }
    b.push_str("</table>");
}

/// D015: skills never scanned (written before the gate) or served with a high scan finding;
/// each links to the skill's page, which shows the findings.
fn unscanned(b: &mut String, found: &[&skillbase_insight::doctor::Finding]) {
    let _ = write!(
        b,
        "<h2>Unscanned or flagged <span class=\"muted\">(doctor D015, {})</span></h2>",
        found.len()
    );
    if found.is_empty() {
        b.push_str("<p id=\"unscanned\" class=\"muted\">Every skill was scanned, and none is served with a high finding.</p>");
        return;
    }
    b.push_str("<table id=\"unscanned\"><tr><th>Skill</th><th>Finding</th><th>Fix</th></tr>");
    for f in found {
        let skill = f.skill.as_deref().unwrap_or("");
        let _ = write!(
            b,
            "<tr data-skill=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(skill),
            link(skill, f.scope.as_deref().unwrap_or("shared")),
            esc(&f.message),
            esc(&f.fix)
        );
    }
    b.push_str("</table>");
}
