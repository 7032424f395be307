//! The skills list: the records the caller may see.

use super::access::visible;
use super::common::ok;
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, url};
use axum::extract::{Extension, State};
use axum::response::Response;
use std::fmt::Write as _;
use std::sync::Arc;

pub(crate) async fn skills(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
) -> Response {
    let mut list = visible(&st, &p);
    list.sort_by(|a, b| (&a.name, a.scope.to_string()).cmp(&(&b.name, b.scope.to_string())));
    let mut body = format!(
        "<h1>Skills</h1><p class=\"muted\">{} records</p>",
        list.len()
    );
    body.push_str(
        "<table id=\"skills\"><tr><th>Name</th><th>Scope</th><th>Status</th><th>Revision</th><th>Author</th><th>Triggers</th></tr>",
    );
    for e in &list {
        let _ = write!(
            body,
            "<tr><td><a href=\"/studio/skills/{}?scope={}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            url(&e.name),
            url(&e.scope.to_string()),
            esc(&e.name),
            esc(&e.scope.to_string()),
            e.status,
            e.active_rev,
            esc(&e.author),
            esc(&e.meta.triggers.join(", "))
        );
    }
    body.push_str("</table>");
    ok("Skills", &p, &body, None)
}
