//! A skill page's "Usage and health" section: the last 30 days of the store's usage figures
//! (`Store::skill_usage`), an agent token's limited to its own agent. A leaf: it names no page.

use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::esc;
use skillbase_store::SkillEntry;
use skillbase_store::usage::{ByReason, SkillUsage, today};
use std::fmt::Write as _;

/// The window the studio shows, in days.
pub(super) const WINDOW_DAYS: i64 = 30;

/// The section, or a warning saying why the figures could not be read.
pub(super) async fn usage_section(b: &mut String, st: &AppState, p: &Principal, e: &SkillEntry) {
    let since = today() - WINDOW_DAYS + 1;
    let agent = p.agent().map(|a| a.as_str());
    let _ = write!(
        b,
        "<h2>Usage and health <span class=\"muted\">(last {WINDOW_DAYS} days{})</span></h2>",
        agent
            .map(|a| format!(", agent {}", esc(a)))
            .unwrap_or_default()
    );
    match st.store.skill_usage(&e.name, agent, since).await {
        Ok(u) => render(b, &u, e),
        Err(err) => {
            let _ = write!(b, "<p class=\"warn\">{}</p>", esc(&err.to_string()));
        }
    }
}

fn reason_cells(r: &ByReason) -> String {
    [
        r.eager,
        r.trigger,
        r.path,
        r.explicit,
        r.load,
        r.companion,
        r.other,
    ]
    .iter()
    .map(|n| format!("<td>{n}</td>"))
    .collect()
}

fn render(b: &mut String, u: &SkillUsage, e: &SkillEntry) {
    let failing = u.runs.failure > 0 && u.runs.failure >= u.runs.success;
    let health = if u.drift_disabled > 0 {
        "drift-disabled a revision"
    } else if failing {
        "failing: as many failed runs as successful ones"
    } else if u.activations.total() == 0 {
        "not used in this window"
    } else {
        "healthy"
    };
    let _ = write!(
        b,
        "<p id=\"usage-summary\"><span class=\"k\">health</span> <strong id=\"health\">{health}</strong> · \
         <span class=\"k\">last used</span> <span id=\"last-used\">{}</span> · <span class=\"k\">activations</span> {} · \
         <span class=\"k\">runs</span> {} succeeded, {} failed · <span class=\"k\">unfollowed loads</span> {} · \
         <span class=\"k\">body tokens</span> {} · <span class=\"k\">listed</span> {} in full, {} by name, {} left out</p>",
        esc(u.last_used.as_deref().unwrap_or("never")),
        u.activations.total(),
        u.runs.success,
        u.runs.failure,
        u.unfollowed,
        u.body_tokens,
        u.listed.full,
        u.listed.name_only,
        u.listed.left_out,
    );
    b.push_str(
        "<table id=\"usage-agents\"><tr><th>Agent</th><th>eager</th><th>trigger</th><th>path</th><th>explicit</th>\
         <th>load</th><th>companion</th><th>other</th><th>Runs ok</th><th>Runs failed</th><th>Unfollowed</th><th>Last used</th></tr>",
    );
    let _ = write!(
        b,
        "<tr><th>all</th>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        reason_cells(&u.activations),
        u.runs.success,
        u.runs.failure,
        u.unfollowed,
        esc(u.last_used.as_deref().unwrap_or("never"))
    );
    for a in &u.agents {
        let _ = write!(
            b,
            "<tr data-agent=\"{0}\"><td>{0}</td>{1}<td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td></tr>",
            esc(if a.agent.is_empty() { "-" } else { &a.agent }),
            reason_cells(&a.activations),
            a.runs.success,
            a.runs.failure,
            a.unfollowed,
            esc(a.last_used.as_deref().unwrap_or("never"))
        );
    }
    b.push_str("</table>");
    if !u.revisions.is_empty() {
        b.push_str("<table id=\"usage-revisions\"><tr><th>Revision</th><th>Activations</th><th>Runs ok</th><th>Runs failed</th><th>Unfollowed</th><th>Drift-disabled</th></tr>");
        for r in &u.revisions {
            let _ = write!(
                b,
                "<tr data-rev=\"{}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.rev,
                r.rev,
                if r.rev == e.active_rev {
                    " (active)"
                } else {
                    ""
                },
                r.activations,
                r.runs.success,
                r.runs.failure,
                r.unfollowed,
                r.drift_disabled
            );
        }
        b.push_str("</table>");
    }
    let _ = write!(b, "<p class=\"muted\">{}</p>", esc(&u.approximate));
}
