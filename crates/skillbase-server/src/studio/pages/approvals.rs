//! The approvals page: the pending revisions, each with its approve and reject forms. Admin
//! only.

use super::actions::action_form;
use super::common::{ok, store_error};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, time, url};
use crate::studio::{SignedIn, csrf, fail};
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::Response;
use skillbase_store::{SkillEntry, Status};
use std::fmt::Write as _;
use std::sync::Arc;

pub(crate) async fn approvals(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
) -> Response {
    if !p.is_admin() {
        return fail(StatusCode::FORBIDDEN, "approvals need an admin token");
    }
    let index = st.store.index();
    let mut pending: Vec<&Arc<SkillEntry>> = index
        .all()
        .filter(|e| e.status == Status::Pending || e.head_rev > e.active_rev)
        .collect();
    pending.sort_by(|a, b| (&a.name, a.scope.to_string()).cmp(&(&b.name, b.scope.to_string())));
    let token = csrf(&signed);
    let mut b = String::from(
        "<h1>Approvals</h1><table id=\"approvals\"><tr><th>Skill</th><th>Scope</th><th>Revision</th><th>Author</th><th>When</th><th>Message</th><th>Scan</th><th></th></tr>",
    );
    let mut n = 0;
    for e in pending {
        let history = match st.store.history(&e.scope, &e.name).await {
            Ok(h) => h,
            Err(err) => return store_error(err),
        };
        for r in history.iter().filter(|r| r.state == "pending") {
            n += 1;
            let scope = e.scope.to_string();
            let _ = write!(
                b,
                "<tr><td><a href=\"/studio/skills/{}?scope={}&amp;a={}&amp;b={}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>",
                url(&e.name),
                url(&scope),
                e.active_rev.max(1),
                r.rev,
                esc(&e.name),
                esc(&scope),
                r.rev,
                esc(&r.author),
                time(r.created_at),
                esc(&r.message)
            );
            // A pending revision's findings are why most of them wait (`[scan] high = "review"`).
            let scan = st
                .store
                .latest_scan(&e.scope, &e.name, Some(r.rev))
                .await
                .ok()
                .flatten();
            super::scan::findings(&mut b, scan.as_ref(), true);
            b.push_str("</td><td>");
            action_form(
                &mut b,
                &e.name,
                &scope,
                "approve",
                Some(r.rev),
                "Approve",
                &token,
            );
            action_form(
                &mut b,
                &e.name,
                &scope,
                "reject",
                Some(r.rev),
                "Reject",
                &token,
            );
            b.push_str("</td></tr>");
        }
    }
    b.push_str("</table>");
    if n == 0 {
        b.push_str("<p class=\"muted\">Nothing waits for approval.</p>");
    }
    b.push_str("<p class=\"muted\">A rejected revision is never served (the active one stays); a skill created pending is retired with it.</p>");
    ok("Approvals", &p, &b, None)
}
