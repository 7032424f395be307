//! A session's page: its transcript of turns and calls, followed live over its event stream.

use super::common::{ok, store_error};
use super::turn::{activation_card, render_turn};
use crate::auth::Principal;
use crate::state::AppState;
use crate::studio::fail;
use crate::studio::html::{LIVE_SCRIPT, esc, time, url};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use skillbase_runtime::event::{CallRefused, Event, UserMessage};
use skillbase_store::{AgentName, EventFilter, EventRecord};
use std::fmt::Write as _;
use std::sync::Arc;

/// The most events one session page reads (a session of 200 turns writes about 1,000).
const MAX_SESSION_EVENTS: i64 = 5_000;

fn missing_session() -> Response {
    fail(StatusCode::NOT_FOUND, "no such session")
}

/// Which agent's session a studio page means (`?agent=`): an agent's cookie means its own.
#[derive(Deserialize)]
pub(crate) struct SessionAgent {
    agent: Option<String>,
}

/// The agent whose session `id` a studio caller means, as the REST routes find it: an agent
/// token's own; for an admin the one named, else the only agent holding the id.
async fn session_agent(
    st: &AppState,
    p: &Principal,
    id: &str,
    named: Option<&str>,
) -> Result<AgentName, Response> {
    if let Some(own) = p.agent() {
        return match named {
            Some(n) if n != own.as_str() => Err(missing_session()),
            _ => Ok(own.clone()),
        };
    }
    if let Some(n) = named {
        return AgentName::parse(n).map_err(|_| missing_session());
    }
    match st.store.session_agents(id).await {
        Ok(mut v) if v.len() == 1 => Ok(v.remove(0)),
        Ok(v) if v.is_empty() => Err(missing_session()),
        Ok(v) => {
            let mut links = String::from("<p>Several agents hold a session with this id:</p><ul>");
            for a in &v {
                let _ = write!(
                    links,
                    "<li><a href=\"/studio/sessions/{}?agent={}\">{}</a></li>",
                    url(id),
                    url(a.as_str()),
                    esc(a.as_str())
                );
            }
            links.push_str("</ul>");
            Err(ok("Session", p, &links, None))
        }
        Err(e) => Err(store_error(e)),
    }
}

pub(crate) async fn session(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    Query(q): Query<SessionAgent>,
) -> Response {
    if id.is_empty() || id.len() > 128 {
        return missing_session();
    }
    let agent = match session_agent(&st, &p, &id, q.agent.as_deref()).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let rec = match st.store.session(&agent, &id).await {
        Ok(Some(r)) => r,
        Ok(None) => return missing_session(),
        Err(e) => return store_error(e),
    };
    // Written behind the call path: what this server counted is stored first.
    st.engine.flush().await;
    let events = match st
        .store
        .events(&EventFilter {
            session: Some(id.clone()),
            agent: Some(agent.to_string()),
            limit: Some(MAX_SESSION_EVENTS),
            ..EventFilter::default()
        })
        .await
    {
        Ok(v) => v,
        Err(e) => return store_error(e),
    };
    let body = render_session(&id, &rec.agent, rec.created_at, &events);
    ok(&format!("Session {id}"), &p, &body, Some(LIVE_SCRIPT))
}

/// The session's events as SSE, for the page's live updates (the REST route's stream, under
/// the studio's cookie).
#[derive(Deserialize)]
pub(crate) struct AfterQuery {
    after: Option<i64>,
    agent: Option<String>,
}

pub(crate) async fn session_events(
    state: State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<AfterQuery>,
) -> Response {
    let after = q.after;
    match crate::rest::session_events_for(state.0, p, headers, id, q.agent, after).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// The session page's body: its heading, then each event in order, a turn opening a section
/// that holds the cards up to the next turn.
fn render_session(id: &str, agent: &str, created: i64, events: &[EventRecord]) -> String {
    let mut out = String::new();
    session_heading(
        &mut out,
        id,
        agent,
        created,
        events.last().map_or(0, |e| e.id),
    );
    let mut turn = 0;
    let mut open = false;
    for e in events {
        let kind = e.kind.as_str();
        match (kind, Event::read(e)) {
            (_, Event::UserMessage(m)) => user_card(&mut out, &m),
            ("turn", _) => {
                if open {
                    out.push_str("</section>");
                }
                turn += 1;
                open = true;
                turn_section(&mut out, turn, e);
            }
            (_, Event::SkillActivated(a)) if a.source == "load_skill" => {
                activation_card(
                    &mut out,
                    e.skill.as_deref().unwrap_or(""),
                    &a.reason,
                    e.rev.unwrap_or(0),
                    u64::from(a.tokens),
                );
            }
            // The context's activations are the turn's, shown with it.
            ("skill_activated", _) => {}
            (_, Event::CallRefused(r)) => refused_card(&mut out, &r),
            (_, Event::CallStarted(c)) => call_card(&mut out, &c.tool, "started"),
            (_, Event::CallFinished(f)) => {
                call_card(&mut out, "", f.status().unwrap_or("finished"));
            }
            (other, _) => other_event(&mut out, other, e),
        }
    }
    if open {
        out.push_str("</section>");
    }
    if turn == 0 {
        out.push_str("<p class=\"muted\">No turns in this session yet.</p>");
    }
    out
}

/// The session's title, its agent, and the element the live script follows the stream from
/// (after the last event shown).
fn session_heading(out: &mut String, id: &str, agent: &str, created: i64, last: i64) {
    let _ = write!(
        out,
        "<h1>Session <code>{}</code></h1><p>Agent <a href=\"/studio/agents/{}\">{}</a> · opened {}</p>\
         <div id=\"live\" data-src=\"/studio/sessions/{}/events?agent={}&amp;after={}\"></div>",
        esc(id),
        url(agent),
        esc(agent),
        time(created),
        url(id),
        url(agent),
        last
    );
}

/// A user's message.
fn user_card(out: &mut String, m: &UserMessage) {
    let _ = write!(
        out,
        "<div class=\"card call\" data-card=\"user\"><span class=\"k\">user</span> {}</div>",
        esc(&m.message)
    );
}

/// The opening of turn number `turn`'s section, and the turn's own cards.
fn turn_section(out: &mut String, turn: usize, e: &EventRecord) {
    let _ = write!(
        out,
        "<section class=\"turn\" data-turn=\"{turn}\"><h2>Turn {turn} <span class=\"muted\">{}</span></h2>",
        time(e.at)
    );
    render_turn(out, &e.data);
}

/// A call refused by a rule.
fn refused_card(out: &mut String, r: &CallRefused) {
    let (tool, rule) = (esc(&r.tool), esc(&r.rule));
    let _ = write!(
        out,
        "<div class=\"card refused\" data-card=\"refused\" data-tool=\"{tool}\" data-rule=\"{rule}\">\
         <span class=\"k\">refused</span> {tool} — rule <code>{rule}</code>: {}</div>",
        esc(&r.message)
    );
}

/// A call started, or finished with its outcome's status (a finished call's event names no
/// tool).
fn call_card(out: &mut String, tool: &str, what: &str) {
    let _ = write!(
        out,
        "<div class=\"card call\" data-card=\"call\"><span class=\"k\">call</span> {} — {}</div>",
        esc(tool),
        esc(what)
    );
}

/// Any other event, as one muted line.
fn other_event(out: &mut String, kind: &str, e: &EventRecord) {
    let _ = write!(
        out,
        "<p class=\"muted\" data-event=\"{}\">{} {}{}</p>",
        esc(kind),
        time(e.at),
        esc(kind),
        e.skill
            .as_deref()
            .map(|s| format!(" · {}", esc(s)))
            .unwrap_or_default()
    );
}
