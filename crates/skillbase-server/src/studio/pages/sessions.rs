//! The sessions list: the sessions of the agents the caller sees, by their recent turns.

use super::common::{ok, store_error};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::html::{esc, time, url};
use axum::extract::{Extension, State};
use axum::response::Response;
use skillbase_store::AgentName;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// Recent turns read per agent for the sessions list.
const RECENT_TURNS: i64 = 500;

/// One session in the list.
struct Listed {
    id: String,
    agent: String,
    last_turn: i64,
    turns: usize,
    /// Skills the recent turns placed in the prompt.
    placed: Vec<String>,
}

pub(crate) async fn sessions(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
) -> Response {
    let agents: Vec<String> = match p.agent() {
        Some(a) => vec![a.to_string()],
        None => match st.store.agents().await {
            Ok(v) => v.into_iter().map(|a| a.name.to_string()).collect(),
            Err(e) => return store_error(e),
        },
    };
    // Activations and turns are written behind the call path: this server's first.
    st.engine.flush().await;
    // Keyed by (agent, id): one id names unrelated sessions of two agents.
    let mut by_session: BTreeMap<(String, String), Listed> = BTreeMap::new();
    for a in &agents {
        let evs = match st.store.recent_events(a, "turn", RECENT_TURNS).await {
            Ok(v) => v,
            Err(e) => return store_error(e),
        };
        for e in evs {
            let Some(s) = e.session else { continue };
            let l = by_session.entry((a.clone(), s.clone())).or_insert(Listed {
                id: s,
                agent: a.clone(),
                last_turn: e.at,
                turns: 0,
                placed: Vec::new(),
            });
            l.turns += 1;
            let turn = skillbase_runtime::event::TurnRecord::read(&e.data).unwrap_or_default();
            l.placed.extend(turn.activated.into_iter().map(|a| a.name));
            l.last_turn = l.last_turn.max(e.at);
        }
    }
    let mut list: Vec<Listed> = by_session.into_values().collect();
    list.sort_by_key(|l| std::cmp::Reverse(l.last_turn));
    list.truncate(100);
    let mut body = String::from("<h1>Sessions</h1>");
    if list.is_empty() {
        body.push_str("<p class=\"muted\">No turns yet.</p>");
    } else {
        body.push_str(
            "<table id=\"sessions\"><tr><th>Session</th><th>Agent</th><th>Last turn</th><th>Turns (recent)</th><th>Active skills</th></tr>",
        );
        for l in &list {
            // Loaded (the session's activations) and placed by its turns.
            let mut names = l.placed.clone();
            let agent = AgentName::parse(&l.agent).ok();
            if let Some(agent) = &agent
                && let Ok(Some(rec)) = st.store.session(agent, &l.id).await
            {
                names.extend(rec.activations.iter().map(|a| a.skill.clone()));
            }
            names.sort();
            names.dedup();
            let active = names.join(", ");
            let _ = write!(
                body,
                "<tr><td><a href=\"/studio/sessions/{}?agent={}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                url(&l.id),
                url(&l.agent),
                esc(&l.id),
                esc(&l.agent),
                time(l.last_turn),
                l.turns,
                esc(&active)
            );
        }
        body.push_str("</table>");
    }
    ok("Sessions", &p, &body, None)
}
