//! A skill's page: its record, status actions, SKILL.md, files, history, diffs, usage and
//! health, and runs.

use super::access::find;
use super::actions::action_form;
use super::common::{ok, store_error};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, time, url};
use crate::studio::{SignedIn, csrf};
use axum::extract::{Extension, Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use skillbase_store::{RevisionInfo, RunRecord, Scope, SkillEntry, Status};
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(Deserialize)]
pub(crate) struct SkillQuery {
    scope: Option<String>,
    a: Option<i64>,
    b: Option<i64>,
}

pub(crate) async fn skill(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Query(q): Query<SkillQuery>,
) -> Response {
    let e = match find(&st, &p, &name, q.scope.as_deref()) {
        Ok(e) => e,
        Err(r) => return *r,
    };
    let history = match st.store.history(&e.scope, &e.name).await {
        Ok(h) => h,
        Err(err) => return store_error(err),
    };
    st.engine.flush().await;
    let mut runs = st
        .store
        .runs(&e.scope, &e.name, 20)
        .await
        .unwrap_or_default();
    if let Some(a) = p.agent() {
        runs.retain(|r| r.agent == a.as_str());
    }
    let scope = e.scope.to_string();
    let admin = p.is_admin();
    let token = csrf(&signed);
    let mut b = String::new();
    record(&mut b, &e, &scope);
    scans(&mut b, &st, &e).await;
    if admin {
        status_forms(&mut b, &e, &scope, &token);
        if let Scope::Shared = e.scope {
            specialize_form(&mut b, &st, &e, &token).await;
        }
    }
    skill_md(&mut b, &e);
    history_table(&mut b, &e, &scope, &history, &q);
    if admin {
        revert_forms(&mut b, &e, &scope, &history, &token);
    }
    if let (Some(a), Some(bb)) = (q.a, q.b) {
        diff(&mut b, &st, &e, a, bb).await;
    }
    super::usage::usage_section(&mut b, &st, &p, &e).await;
    runs_table(&mut b, &runs);
    if e.status == Status::Disabled {
        b.push_str("<p class=\"warn\">Disabled: by a person, or by the drift guard after failed runs (see <code>skillbase runs</code>).</p>");
    }
    ok(&e.name, &p, &b, None)
}

/// The record: name, scope, status, revisions, author, digest, signer, description, triggers.
fn record(b: &mut String, e: &SkillEntry, scope: &str) {
    let _ = write!(
        b,
        "<h1>{}</h1><p><span class=\"k\">scope</span> {} · <span class=\"k\">status</span> <strong id=\"status\">{}</strong> · \
         <span class=\"k\">active revision</span> <span id=\"active-rev\">{}</span> of {} · {} · {}{}</p><p>{}</p>",
        esc(&e.name),
        esc(scope),
        e.status,
        e.active_rev,
        e.head_rev,
        esc(&e.author),
        esc(&e.digest.to_string()),
        e.signer
            .as_deref()
            .map(|s| format!(" · signed by {}", esc(s)))
            .unwrap_or_default(),
        esc(&e.meta.description)
    );
    if !e.meta.triggers.is_empty() {
        let _ = write!(
            b,
            "<p><span class=\"k\">triggers</span> {}</p>",
            esc(&e.meta.triggers.join(", "))
        );
    }
}

/// The active revision's scan, and the head's when it waits for approval.
async fn scans(b: &mut String, st: &AppState, e: &SkillEntry) {
    let mut revs = vec![e.active_rev];
    if e.head_rev > e.active_rev {
        revs.push(e.head_rev);
    }
    for rev in revs {
        let _ = write!(
            b,
            "<div id=\"scan-{rev}\"><span class=\"k\">scan of revision {rev}</span> "
        );
        match st.store.latest_scan(&e.scope, &e.name, Some(rev)).await {
            Ok(s) => super::scan::findings(b, s.as_ref(), false),
            Err(err) => {
                let _ = write!(b, "<span class=\"warn\">{}</span>", esc(&err.to_string()));
            }
        }
        b.push_str("</div>");
    }
}

/// The status changes the record's status allows (admin).
fn status_forms(b: &mut String, e: &SkillEntry, scope: &str, token: &str) {
    b.push_str("<p>");
    let actions: &[(&str, &str)] = match e.status {
        Status::Active => &[("retire", "Retire"), ("disable", "Disable")],
        Status::Disabled => &[("enable", "Enable"), ("retire", "Retire")],
        Status::Retired => &[("restore", "Restore")],
        _ => &[],
    };
    for (action, label) in actions {
        action_form(b, &e.name, scope, action, None, label, token);
    }
    b.push_str("</p>");
}

/// A shared skill's "Specialize for" form (admin), offering the agents that allow the skill
/// and have no copy of their own yet; nothing when there are none.
async fn specialize_form(b: &mut String, st: &AppState, e: &SkillEntry, token: &str) {
    let index = st.store.index();
    let holders: Vec<String> = st
        .store
        .agents()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|a| {
            a.config.skills.contains(&e.name)
                && index.get(&Scope::Agent(a.name.clone()), &e.name).is_none()
        })
        .map(|a| a.name.to_string())
        .collect();
    if !holders.is_empty() {
        let _ = write!(
            b,
            "<form class=\"inline\" method=\"post\" action=\"/studio/skills/{}/action\">\
             <input type=\"hidden\" name=\"scope\" value=\"shared\"><input type=\"hidden\" name=\"action\" value=\"specialize\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">Specialize for <select name=\"agent\" id=\"specialize-agent\">{}</select> \
             <button type=\"submit\" data-action=\"specialize\">Specialize</button></form>",
            url(&e.name),
            esc(token),
            holders
                .iter()
                .map(|h| format!("<option value=\"{0}\">{0}</option>", esc(h)))
                .collect::<String>()
        );
    }
}

/// SKILL.md (the frontmatter, the body rendered and as written) and the bundle's files.
fn skill_md(b: &mut String, e: &SkillEntry) {
    let _ = write!(
        b,
        "<h2>SKILL.md</h2><pre id=\"frontmatter\">{}</pre><div class=\"card\" id=\"body\">{}</div>\
         <details><summary>The body as written</summary><pre id=\"body-source\">{}</pre></details>",
        esc(&serde_json::to_string_pretty(&*e.frontmatter).unwrap_or_default()),
        crate::studio::markdown::render(&e.body),
        esc(&e.body)
    );
    b.push_str("<h2>Files</h2><ul>");
    for f in &e.files {
        let _ = write!(
            b,
            "<li><code>{}</code> · {} bytes{}</li>",
            esc(&f.path),
            f.size,
            if f.executable { " · executable" } else { "" }
        );
    }
    b.push_str("</ul>");
}

/// History, with the two revisions to compare picked by radio buttons (by default the active
/// one and the one before it).
fn history_table(
    b: &mut String,
    e: &SkillEntry,
    scope: &str,
    history: &[RevisionInfo],
    q: &SkillQuery,
) {
    let _ = write!(
        b,
        "<h2>History</h2><form method=\"get\" action=\"/studio/skills/{}\"><input type=\"hidden\" name=\"scope\" value=\"{}\">\
         <table id=\"history\"><tr><th>a</th><th>b</th><th>Revision</th><th>State</th><th>Version</th><th>Author</th><th>When</th><th>Message</th><th></th></tr>",
        url(&e.name),
        esc(scope)
    );
    let (qa, qb) = (
        q.a.unwrap_or(e.active_rev.saturating_sub(1).max(1)),
        q.b.unwrap_or(e.active_rev),
    );
    for h in history.iter().rev() {
        let _ = write!(
            b,
            "<tr data-rev=\"{r}\"><td><input type=\"radio\" name=\"a\" value=\"{r}\"{}></td><td><input type=\"radio\" name=\"b\" value=\"{r}\"{}></td>\
             <td>{r}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>",
            if h.rev == qa { " checked" } else { "" },
            if h.rev == qb { " checked" } else { "" },
            if h.active { " (active)" } else { "" },
            esc(&h.state),
            esc(h.version.as_deref().unwrap_or("")),
            esc(&h.author),
            time(h.created_at),
            esc(&h.message),
            r = h.rev,
        );
        b.push_str("</td></tr>");
    }
    b.push_str(
        "</table><p><button type=\"submit\" id=\"compare\">Compare a → b</button></p></form>",
    );
}

/// A "Revert to revision n" form for each committed revision but the active one (admin).
fn revert_forms(
    b: &mut String,
    e: &SkillEntry,
    scope: &str,
    history: &[RevisionInfo],
    token: &str,
) {
    b.push_str("<p>");
    for h in history
        .iter()
        .rev()
        .filter(|h| !h.active && h.state == "committed")
    {
        action_form(
            b,
            &e.name,
            scope,
            "revert",
            Some(h.rev),
            &format!("Revert to revision {}", h.rev),
            token,
        );
    }
    b.push_str("</p>");
}

/// The diff between revisions `a` and `bb`, its added and deleted lines marked; the store's
/// refusal as a warning.
async fn diff(b: &mut String, st: &AppState, e: &SkillEntry, a: i64, bb: i64) {
    match st.store.diff(&e.scope, &e.name, a, bb).await {
        Ok(d) => {
            let _ = write!(b, "<h2>Diff {a} → {bb}</h2><pre id=\"diff\">");
            for line in d.lines() {
                let class = if line.starts_with('+') && !line.starts_with("+++") {
                    "add"
                } else if line.starts_with('-') && !line.starts_with("---") {
                    "del"
                } else {
                    ""
                };
                let _ = writeln!(b, "<span class=\"{class}\">{}</span>", esc(line));
            }
            b.push_str("</pre>");
        }
        Err(err) => {
            let _ = write!(b, "<p class=\"warn\">{}</p>", esc(&err.to_string()));
        }
    }
}

/// The skill's recent runs.
fn runs_table(b: &mut String, runs: &[RunRecord]) {
    b.push_str("<h2>Runs</h2>");
    if runs.is_empty() {
        b.push_str("<p class=\"muted\">No runs yet.</p>");
    } else {
        b.push_str("<table id=\"runs\"><tr><th>Started</th><th>Agent</th><th>Session</th><th>Revision</th><th>Outcome</th><th>Calls (failed)</th><th>Note</th></tr>");
        for r in runs {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td><a href=\"/studio/sessions/{}?agent={}\">{}</a></td><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td></tr>",
                time(r.started_at),
                esc(&r.agent),
                url(&r.session),
                url(&r.agent),
                esc(&r.session),
                r.rev,
                esc(r.outcome.as_deref().unwrap_or("open")),
                r.calls,
                r.failed_calls,
                esc(&r.note)
            );
        }
        b.push_str("</table>");
    }
}
