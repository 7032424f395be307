//! What a caller may see: the skill records and the agents its token is shown. A leaf: it
//! names no page.

use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::fail;
use axum::http::StatusCode;
use axum::response::Response;
use skillbase_store::{AgentName, Scope, SkillEntry};
use std::sync::Arc;

/// The records the caller may see: every record for an admin; the skills an agent may load.
pub(super) fn visible(st: &AppState, p: &Principal) -> Vec<Arc<SkillEntry>> {
    let index = st.store.index();
    match p.agent() {
        None => index.all().cloned().collect(),
        Some(a) => match st.store.agent_cached(a) {
            Some(agent) => skillbase_runtime::visible(&agent, &index),
            None => Vec::new(),
        },
    }
}

/// The record the caller asks for and may see.
pub(super) fn find(
    st: &AppState,
    p: &Principal,
    name: &str,
    scope: Option<&str>,
) -> Result<Arc<SkillEntry>, Box<Response>> {
    let missing = || Box::new(fail(StatusCode::NOT_FOUND, "no such skill"));
    match p.agent() {
        Some(_) => visible(st, p)
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(missing),
        None => {
            let scope: Scope = match scope {
                None | Some("") => Scope::Shared,
                Some(s) => s
                    .parse()
                    .map_err(|e: String| Box::new(fail(StatusCode::BAD_REQUEST, &e)))?,
            };
            st.store
                .index()
                .get(&scope, name)
                .cloned()
                .ok_or_else(missing)
        }
    }
}

/// The agent `name` if the caller may see it: any for an admin, its own for an agent's token.
pub(super) fn agent_of(
    st: &AppState,
    p: &Principal,
    name: &str,
) -> Option<Arc<skillbase_store::Agent>> {
    let agent = AgentName::parse(name).ok()?;
    if p.agent().is_some_and(|a| *a != agent) {
        return None;
    }
    st.store.agent_cached(&agent)
}
