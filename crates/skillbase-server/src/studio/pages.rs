//! The studio's pages: each reads through the store and the runtime, as REST does, and renders.

use super::html::{LIVE_SCRIPT, esc, page, time, url};
use super::jobs::{self, Jobs};
use super::{SignedIn, csrf, fail, redirect};
use crate::auth::Principal;
use crate::state::AppState;
use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use skillbase_store::{
    AgentName, Author, EventFilter, EventRecord, Scope, SkillEntry, Status, StatusChange,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// The most events one session page reads (a session of 200 turns writes about 1,000).
const MAX_SESSION_EVENTS: i64 = 5_000;
/// Recent turns read per agent for the sessions list.
const RECENT_TURNS: i64 = 500;

fn who(p: &Principal) -> String {
    match p {
        Principal::Admin { .. } => "admin".into(),
        Principal::Agent { agent, .. } => format!("agent {agent}"),
    }
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // Only this page's own inline style and script; never framed by another site.
            (header::CONTENT_SECURITY_POLICY, super::CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        body,
    )
        .into_response()
}

fn ok(title: &str, p: &Principal, body: &str, script: Option<&str>) -> Response {
    html(StatusCode::OK, page(title, &who(p), body, script))
}

fn store_error(e: impl std::fmt::Display) -> Response {
    fail(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
}

/// A form whose CSRF value is not this sign-in's: refused (a forged or stale form).
fn stale(signed: &SignedIn, sent: &str) -> Option<Response> {
    (sent != csrf(signed)).then(|| {
        fail(
            StatusCode::FORBIDDEN,
            "refused: the form is stale; reload the page",
        )
    })
}

// ---- Sign-in ----

#[derive(Deserialize)]
pub(super) struct LoginQuery {
    expired: Option<String>,
}

pub(super) async fn login_form(Query(q): Query<LoginQuery>) -> Response {
    let note = if q.expired.is_some() {
        "<p class=\"warn\">Your token is no longer valid: sign in again.</p>"
    } else {
        ""
    };
    html(
        StatusCode::OK,
        page(
            "Sign in",
            "",
            &format!(
                "<h1>Sign in</h1>{note}<form method=\"post\" action=\"/studio/login\">\
                 <p><label>API token <input type=\"password\" name=\"token\" id=\"token\" size=\"60\" autocomplete=\"off\"></label></p>\
                 <p><button type=\"submit\" id=\"sign-in\">Sign in</button></p></form>\
                 <p class=\"muted\">An admin token sees everything; an agent's token sees that agent only. \
                 Create one with <code>skillbase token create</code>.</p>"
            ),
            None,
        ),
    )
}

#[derive(Deserialize)]
pub(super) struct LoginForm {
    token: String,
}

pub(super) async fn login(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Response {
    let token = f.token.trim();
    let valid_chars = !token.is_empty()
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let authenticated = valid_chars
        && st
            .auth
            .authenticate(&st.store, Some(&format!("Bearer {token}")))
            .await
            .is_ok();
    if !authenticated {
        return html(
            StatusCode::UNAUTHORIZED,
            page(
                "Sign in",
                "",
                "<h1>Sign in</h1><p class=\"warn\">That token is not valid (unknown, revoked or malformed).</p>\
                 <p><a href=\"/studio/login\">Try again</a></p>",
                None,
            ),
        );
    }
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let mut r = redirect("/studio/sessions");
    r.headers_mut().insert(
        header::SET_COOKIE,
        super::set_cookie(token, secure)
            .parse()
            .expect("a token of safe characters"),
    );
    r
}

#[derive(Deserialize)]
pub(super) struct CsrfForm {
    csrf: String,
}

pub(super) async fn logout_form(
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
) -> Response {
    ok(
        "Sign out",
        &p,
        &format!(
            "<h1>Sign out</h1><form method=\"post\" action=\"/studio/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\" id=\"sign-out\">Sign out</button></form>",
            esc(&csrf(&signed))
        ),
        None,
    )
}

pub(super) async fn logout(
    Extension(signed): Extension<SignedIn>,
    Form(f): Form<CsrfForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    let mut r = redirect("/studio/login");
    r.headers_mut().insert(
        header::SET_COOKIE,
        super::clear_cookie().parse().expect("a valid header"),
    );
    r
}

// ---- Sessions ----

/// One session in the list.
struct Listed {
    id: String,
    agent: String,
    last_turn: i64,
    turns: usize,
    /// Skills the recent turns placed in the prompt.
    placed: Vec<String>,
}

pub(super) async fn sessions(
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
    st.dispatcher.flush().await;
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
            for a in e.data["activated"].as_array().into_iter().flatten() {
                if let Some(n) = a["name"].as_str() {
                    l.placed.push(n.to_owned());
                }
            }
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

fn missing_session() -> Response {
    fail(StatusCode::NOT_FOUND, "no such session")
}

/// Which agent's session a studio page means (`?agent=`): an agent's cookie means its own.
#[derive(Deserialize)]
pub(super) struct SessionAgent {
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

pub(super) async fn session(
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
    st.dispatcher.flush().await;
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
pub(super) struct AfterQuery {
    after: Option<i64>,
    agent: Option<String>,
}

pub(super) async fn session_events(
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

fn render_session(id: &str, agent: &str, created: i64, events: &[EventRecord]) -> String {
    let mut out = String::new();
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
        events.last().map_or(0, |e| e.id)
    );
    let mut turn = 0;
    let mut open = false;
    for e in events {
        let kind = e.kind.as_str();
        match kind {
            "user_message" => {
                let _ = write!(
                    out,
                    "<div class=\"card call\" data-card=\"user\"><span class=\"k\">user</span> {}</div>",
                    esc(e.data["message"].as_str().unwrap_or(""))
                );
            }
            "turn" => {
                if open {
                    out.push_str("</section>");
                }
                turn += 1;
                open = true;
                let _ = write!(
                    out,
                    "<section class=\"turn\" data-turn=\"{turn}\"><h2>Turn {turn} <span class=\"muted\">{}</span></h2>",
                    time(e.at)
                );
                render_turn(&mut out, &e.data);
            }
            "skill_activated" if e.data["source"] == "load_skill" => {
                activation_card(
                    &mut out,
                    e.skill.as_deref().unwrap_or(""),
                    e.data["reason"].as_str().unwrap_or("load"),
                    e.rev.unwrap_or(0),
                    e.data["tokens"].as_u64().unwrap_or(0),
                );
            }
            // The context's activations are the turn's, shown with it.
            "skill_activated" => {}
            "call_refused" => {
                let _ = write!(
                    out,
                    "<div class=\"card refused\" data-card=\"refused\" data-tool=\"{}\" data-rule=\"{}\">\
                     <span class=\"k\">refused</span> {} — rule <code>{}</code>: {}</div>",
                    esc(e.data["tool"].as_str().unwrap_or("")),
                    esc(e.data["rule"].as_str().unwrap_or("")),
                    esc(e.data["tool"].as_str().unwrap_or("")),
                    esc(e.data["rule"].as_str().unwrap_or("")),
                    esc(e.data["message"].as_str().unwrap_or(""))
                );
            }
            "call_started" | "call_finished" => {
                let what = e.data["outcome"]
                    .as_str()
                    .or_else(|| e.data["status"].as_str())
                    .unwrap_or(if kind == "call_started" {
                        "started"
                    } else {
                        "finished"
                    });
                let _ = write!(
                    out,
                    "<div class=\"card call\" data-card=\"call\"><span class=\"k\">call</span> {} — {}</div>",
                    esc(e.data["tool"].as_str().unwrap_or("")),
                    esc(what)
                );
            }
            other => {
                let _ = write!(
                    out,
                    "<p class=\"muted\" data-event=\"{}\">{} {}{}</p>",
                    esc(other),
                    time(e.at),
                    esc(other),
                    e.skill
                        .as_deref()
                        .map(|s| format!(" · {}", esc(s)))
                        .unwrap_or_default()
                );
            }
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

fn activation_card(out: &mut String, name: &str, reason: &str, rev: i64, tokens: u64) {
    let _ = write!(
        out,
        "<div class=\"card\" data-card=\"activation\" data-skill=\"{n}\" data-reason=\"{r}\" data-rev=\"{rev}\" data-tokens=\"{tokens}\">\
         <span class=\"k\">skill</span> <a href=\"/studio/skills/{u}\">{n}</a> · <span class=\"k\">reason</span> <code>{r}</code> · \
         <span class=\"k\">revision</span> {rev} · {tokens} tokens</div>",
        n = esc(name),
        u = url(name),
        r = esc(reason),
    );
}

/// A turn's activation cards, evictions and its Context card, from its `turn` event (the
/// report as the turn computed it, after the budget cut).
fn render_turn(out: &mut String, r: &Value) {
    for a in r["activated"].as_array().into_iter().flatten() {
        activation_card(
            out,
            a["name"].as_str().unwrap_or(""),
            a["reason"].as_str().unwrap_or(""),
            a["rev"].as_i64().unwrap_or(0),
            a["tokens"].as_u64().unwrap_or(0),
        );
    }
    for o in r["evicted"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<div class=\"card evicted\" data-card=\"evicted\" data-skill=\"{n}\"><span class=\"k\">evicted</span> {n} — {}</div>",
            esc(o["reason"].as_str().unwrap_or("")),
            n = esc(o["name"].as_str().unwrap_or("")),
        );
    }
    for (key, label) in [
        ("suppressed", "trigger suppressed"),
        ("unmet_requires", "offered with unmet requires"),
        ("withheld_skills", "withheld"),
    ] {
        for o in r[key].as_array().into_iter().flatten() {
            let _ = write!(
                out,
                "<div class=\"card evicted\" data-card=\"{key}\"><span class=\"k\">{label}</span> {} — {}</div>",
                esc(o["name"].as_str().unwrap_or("")),
                esc(o["reason"].as_str().unwrap_or(""))
            );
        }
    }
    let t = &r["tokens"];
    let c = &r["catalog"];
    let num = |v: &Value| v.as_u64().unwrap_or(0);
    let _ = write!(
        out,
        "<div class=\"card context\" data-card=\"context\"><strong>Context</strong> \
         <table><tr><th>eager</th><th>injected</th><th>catalog</th><th>tools</th><th>total</th></tr>\
         <tr><td data-k=\"eager\">{}</td><td data-k=\"injected\">{}</td><td data-k=\"catalog\">{}</td><td data-k=\"tools\">{}</td><td data-k=\"total\">{}</td></tr></table>\
         <p>Catalog: {} of {} tokens{}.</p>",
        num(&t["eager"]),
        num(&t["injected"]),
        num(&t["catalog"]),
        num(&t["tools"]),
        num(&t["total"]),
        num(&c["tokens"]),
        num(&c["budget"]),
        if c["ranked"] == true {
            format!(
                ", ranked by relevance ({})",
                esc(c["stages"].as_str().unwrap_or("lexical"))
            )
        } else {
            String::new()
        }
    );
    let full: Vec<String> = match c["full"].as_array() {
        Some(names) => names.iter().filter_map(|n| n.as_str().map(esc)).collect(),
        // A ranked catalog's event keeps the full entries in `shown`, with their ranks.
        None => c["shown"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                format!(
                    "{} (rank {}, {})",
                    esc(s["name"].as_str().unwrap_or("")),
                    s["rank"],
                    esc(s["stage"].as_str().unwrap_or(""))
                )
            })
            .collect(),
    };
    let _ = write!(
        out,
        "<p data-k=\"full\">In full: {}</p>",
        if full.is_empty() {
            "none".into()
        } else {
            full.join(", ")
        }
    );
    for (key, label) in [("name_only", "By name only"), ("omitted", "Left out")] {
        let s = &c[key];
        let count = num(&s["count"]);
        if count == 0 {
            continue;
        }
        let _ = write!(out, "<p data-k=\"{key}\">{label}: {count}");
        for g in s["by_reason"].as_array().into_iter().flatten() {
            let _ = write!(
                out,
                " · {} × {}{}",
                num(&g["count"]),
                esc(g["reason"].as_str().unwrap_or("")),
                g["names"]
                    .as_array()
                    .map(|n| format!(
                        " ({})",
                        n.iter()
                            .filter_map(|x| x.as_str().map(esc))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                    .or_else(|| g["ranks"].as_str().map(|r| format!(" (ranks {})", esc(r))))
                    .unwrap_or_default()
            );
        }
        out.push_str("</p>");
    }
    if let Some(w) = r["withheld_tools"].as_array().filter(|w| !w.is_empty()) {
        let _ = write!(
            out,
            "<p class=\"muted\">Tools withheld (not granted): {}</p>",
            w.iter()
                .filter_map(|o| o["name"].as_str().map(esc))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("</div>");
}

// ---- Skills ----

/// The records the caller may see: every record for an admin; the skills an agent may load.
fn visible(st: &AppState, p: &Principal) -> Vec<Arc<SkillEntry>> {
    let index = st.store.index();
    match p.agent() {
        None => index.all().cloned().collect(),
        Some(a) => match st.store.agent_cached(a) {
            Some(agent) => skillbase_runtime::view::visible(&agent, &index),
            None => Vec::new(),
        },
    }
}

pub(super) async fn skills(
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

#[derive(Deserialize)]
pub(super) struct SkillQuery {
    scope: Option<String>,
    a: Option<i64>,
    b: Option<i64>,
}

/// The record the caller asks for and may see.
fn find(
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

pub(super) async fn skill(
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
    st.dispatcher.flush().await;
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
    let _ = write!(
        b,
        "<h1>{}</h1><p><span class=\"k\">scope</span> {} · <span class=\"k\">status</span> <strong id=\"status\">{}</strong> · \
         <span class=\"k\">active revision</span> <span id=\"active-rev\">{}</span> of {} · {} · {}{}</p><p>{}</p>",
        esc(&e.name),
        esc(&scope),
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
    if admin {
        b.push_str("<p>");
        let actions: &[(&str, &str)] = match e.status {
            Status::Active => &[("retire", "Retire"), ("disable", "Disable")],
            Status::Disabled => &[("enable", "Enable"), ("retire", "Retire")],
            Status::Retired => &[("restore", "Restore")],
            _ => &[],
        };
        for (action, label) in actions {
            action_form(&mut b, &e.name, &scope, action, None, label, &token);
        }
        b.push_str("</p>");
        if let Scope::Shared = e.scope {
            // Agents that allow it and have no copy of their own yet.
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
                    esc(&token),
                    holders
                        .iter()
                        .map(|h| format!("<option value=\"{0}\">{0}</option>", esc(h)))
                        .collect::<String>()
                );
            }
        }
    }
    let _ = write!(
        b,
        "<h2>SKILL.md</h2><pre id=\"frontmatter\">{}</pre><div class=\"card\" id=\"body\">{}</div>\
         <details><summary>The body as written</summary><pre id=\"body-source\">{}</pre></details>",
        esc(&serde_json::to_string_pretty(&*e.frontmatter).unwrap_or_default()),
        super::markdown::render(&e.body),
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
    // History, with the two revisions to compare picked by radio buttons.
    let _ = write!(
        b,
        "<h2>History</h2><form method=\"get\" action=\"/studio/skills/{}\"><input type=\"hidden\" name=\"scope\" value=\"{}\">\
         <table id=\"history\"><tr><th>a</th><th>b</th><th>Revision</th><th>State</th><th>Version</th><th>Author</th><th>When</th><th>Message</th><th></th></tr>",
        url(&e.name),
        esc(&scope)
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
    if admin {
        b.push_str("<p>");
        for h in history
            .iter()
            .rev()
            .filter(|h| !h.active && h.state == "committed")
        {
            action_form(
                &mut b,
                &e.name,
                &scope,
                "revert",
                Some(h.rev),
                &format!("Revert to revision {}", h.rev),
                &token,
            );
        }
        b.push_str("</p>");
    }
    if let (Some(a), Some(bb)) = (q.a, q.b) {
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
    b.push_str("<h2>Runs</h2>");
    if runs.is_empty() {
        b.push_str("<p class=\"muted\">No runs yet.</p>");
    } else {
        b.push_str("<table id=\"runs\"><tr><th>Started</th><th>Agent</th><th>Session</th><th>Revision</th><th>Outcome</th><th>Calls (failed)</th><th>Note</th></tr>");
        for r in &runs {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td><a href=\"/studio/sessions/{}\">{}</a></td><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td></tr>",
                time(r.started_at),
                esc(&r.agent),
                url(&r.session),
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
    if e.status == Status::Disabled {
        b.push_str("<p class=\"warn\">Disabled: by a person, or by the drift guard after failed runs (see <code>skillbase runs</code>).</p>");
    }
    ok(&e.name, &p, &b, None)
}

fn action_form(
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
pub(super) struct ActionForm {
    scope: String,
    action: String,
    rev: Option<i64>,
    csrf: String,
    confirm: Option<String>,
    /// `specialize`: the agent whose own scope gets a copy of the shared body.
    agent: Option<String>,
}

/// Revert, retire, restore, disable or enable: asked for confirmation first, then done through
/// the store exactly as REST does it. Admin only.
pub(super) async fn skill_action(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<ActionForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    if !p.is_admin() {
        return fail(
            StatusCode::FORBIDDEN,
            "an agent's token is read-only in the studio; sign in with an admin token",
        );
    }
    let e = match find(&st, &p, &name, Some(&f.scope)) {
        Ok(e) => e,
        Err(r) => return *r,
    };
    let change = match f.action.as_str() {
        "revert" | "approve" | "reject" | "specialize" => None,
        "retire" => Some(StatusChange::Retire),
        "restore" => Some(StatusChange::Restore),
        "disable" => Some(StatusChange::Disable),
        "enable" => Some(StatusChange::Enable),
        _ => return fail(StatusCode::BAD_REQUEST, "unknown action"),
    };
    let specialize_for = if f.action == "specialize" {
        let Some(agent) = f.agent.as_deref().and_then(|a| AgentName::parse(a).ok()) else {
            return fail(StatusCode::BAD_REQUEST, "specialize needs an agent");
        };
        if e.scope != Scope::Shared {
            return fail(
                StatusCode::BAD_REQUEST,
                "only a shared skill is specialized",
            );
        }
        if st.store.agent_cached(&agent).is_none() {
            return fail(StatusCode::NOT_FOUND, "no such agent");
        }
        Some(agent)
    } else {
        None
    };
    let rev = match (f.action.as_str(), f.rev) {
        ("revert" | "approve" | "reject", Some(r)) if r >= 1 => Some(r),
        ("revert" | "approve" | "reject", _) => {
            return fail(
                StatusCode::BAD_REQUEST,
                "revert, approve and reject need a revision",
            );
        }
        _ => None,
    };
    let what = match (&specialize_for, rev) {
        (Some(a), _) => format!(
            "specialize {} for agent {a} (its own copy of the shared body, which it then sees instead)",
            e.name
        ),
        (None, Some(r)) if f.action == "approve" || f.action == "reject" => {
            format!("{} revision {r} of {} ({})", f.action, e.name, e.scope)
        }
        (None, Some(r)) => format!("revert {} ({}) to revision {r}", e.name, e.scope),
        (None, None) => format!("{} {} ({})", f.action, e.name, e.scope),
    };
    if f.confirm.as_deref() != Some("yes") {
        let mut b = format!(
            "<h1>Confirm</h1><p>Really {}? Nothing is deleted: the change is recorded and can be undone from the skill's page.</p>",
            esc(&what)
        );
        let _ = write!(
            b,
            "<form method=\"post\" action=\"/studio/skills/{}/action\"><input type=\"hidden\" name=\"scope\" value=\"{}\">\
             <input type=\"hidden\" name=\"action\" value=\"{}\">{}{}<input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <input type=\"hidden\" name=\"confirm\" value=\"yes\"><button type=\"submit\" id=\"confirm\">Yes, {}</button> \
             <a href=\"/studio/skills/{}?scope={}\">Cancel</a></form>",
            url(&e.name),
            esc(&e.scope.to_string()),
            esc(&f.action),
            rev.map(|r| format!("<input type=\"hidden\" name=\"rev\" value=\"{r}\">"))
                .unwrap_or_default(),
            specialize_for
                .as_ref()
                .map(|a| format!(
                    "<input type=\"hidden\" name=\"agent\" value=\"{}\">",
                    esc(a.as_str())
                ))
                .unwrap_or_default(),
            esc(&csrf(&signed)),
            esc(&what),
            url(&e.name),
            url(&e.scope.to_string())
        );
        return ok("Confirm", &p, &b, None);
    }
    let actor = match &p {
        Principal::Admin { token } => Author::Human(match token {
            Some(id) => format!("studio:token-{id}"),
            None => "studio:dev".into(),
        }),
        Principal::Agent { .. } => unreachable!("refused above"),
    };
    let done = match (change, rev) {
        _ if specialize_for.is_some() => {
            let agent = specialize_for.clone().expect("checked");
            match st.store.bundle(&e.scope, &e.name, None).await {
                Ok((_, bundle)) => {
                    st.store
                        .put(skillbase_store::PutRequest {
                            scope: Scope::Agent(agent.clone()),
                            bundle,
                            author: actor.clone(),
                            message: format!(
                                "specialized from the shared {} in the studio",
                                e.name
                            ),
                            expect_rev: None,
                            signature: None,
                        })
                        .await
                }
                Err(err) => Err(err),
            }
        }
        (None, Some(r)) if f.action == "approve" => {
            st.store.approve(&e.scope, &e.name, r, &actor).await
        }
        (None, Some(r)) if f.action == "reject" => {
            st.store.reject(&e.scope, &e.name, r, &actor).await
        }
        (None, Some(r)) => st.store.revert(&e.scope, &e.name, r, &actor).await,
        (Some(c), _) => {
            st.store
                .set_status(
                    &e.scope,
                    &e.name,
                    c,
                    &actor,
                    serde_json::json!({"from": "studio"}),
                )
                .await
        }
        _ => return fail(StatusCode::BAD_REQUEST, "revert needs a revision"),
    };
    let scope_after = match &specialize_for {
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

// ---- Agents ----

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

pub(super) async fn agents(
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

pub(super) async fn agent(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<Jobs>>,
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
    let report = st
        .dispatcher
        .doctor(&skillbase_runtime::doctor::DoctorOptions {
            agent: Some(agent.clone()),
            own_only: p.agent().is_some(),
            actor: format!("studio:{}", who(&p)),
            ..Default::default()
        })
        .await;
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
    agent_forms(
        &mut b,
        agent.as_str(),
        &serde_json::to_string_pretty(&a.config).unwrap_or_default(),
        p.is_admin(),
        &csrf(&signed),
    );
    let mine = jobs.of(&agent, owner(&p), Instant::now());
    if !mine.is_empty() {
        b.push_str("<h3>Your recent evaluations</h3><ul id=\"eval-jobs\">");
        for j in &mine {
            let (state, done, _) = j.snapshot();
            let _ = write!(
                b,
                "<li data-job=\"{}\"><a href=\"{}\">{} cases</a> · {} ({done} done)</li>",
                state.as_str(),
                job_url(agent.as_str(), &j.id),
                j.total,
                state.as_str()
            );
        }
        b.push_str("</ul>");
    }
    ok(&format!("Agent {agent}"), &p, &b, None)
}

// ---- Agents: edit, try a turn, eval ----

fn agent_of(st: &AppState, p: &Principal, name: &str) -> Option<Arc<skillbase_store::Agent>> {
    let agent = AgentName::parse(name).ok()?;
    if p.agent().is_some_and(|a| *a != agent) {
        return None;
    }
    st.store.agent_cached(&agent)
}

/// The agent page's forms: edit (admin), try a turn, evaluate cases.
pub(super) fn agent_forms(b: &mut String, name: &str, config: &str, admin: bool, token: &str) {
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
pub(super) struct ConfigForm {
    csrf: String,
    config: String,
}

/// Replace the agent's configuration with the JSON given, checked by the store as every agent
/// write is; a refusal changes nothing and says what to fix.
pub(super) async fn agent_config(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<ConfigForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    if !p.is_admin() {
        return fail(
            StatusCode::FORBIDDEN,
            "an agent's token is read-only in the studio",
        );
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

#[derive(Deserialize)]
pub(super) struct TurnForm {
    csrf: String,
    message: String,
}

/// A turn in a new session, exactly as `skillbase turn` runs it (recorded like any turn):
/// what the model is shown and the report.
pub(super) async fn agent_turn(
    State(st): State<Arc<AppState>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<TurnForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    let Some(a) = agent_of(&st, &p, &name) else {
        return fail(StatusCode::NOT_FOUND, "no such agent");
    };
    if f.message.trim().is_empty() || f.message.len() > 64 * 1024 {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "write a message of 1 byte to 64 KiB",
        );
    }
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).expect("the operating system's random source failed");
    let session = format!(
        "studio-{}",
        raw.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    if let Err(e) = st.store.open_session(&session, &a.name).await {
        return store_error(e);
    }
    let ctx = match st
        .dispatcher
        .turn(&a.name, &session, &f.message, &Default::default())
        .await
    {
        Ok(c) => c,
        Err(e) => return fail(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
    };
    let mut b = format!(
        "<h1>A turn of {}</h1><p>Session <a href=\"/studio/sessions/{}\">{}</a> · message: {}</p>",
        esc(a.name.as_str()),
        url(&session),
        esc(&session),
        esc(&f.message)
    );
    for (title, text) in [
        ("Prompt prefix (eager, the same every turn)", &ctx.prefix),
        ("Injected for this turn", &ctx.injected),
        ("Catalog", &ctx.catalog),
    ] {
        let _ = write!(
            b,
            "<h2>{title}</h2><pre>{}</pre>",
            esc(text.as_deref().unwrap_or("(none)"))
        );
    }
    b.push_str("<h2>Tools</h2><ul>");
    for t in &ctx.tools {
        let _ = write!(
            b,
            "<li><code>{}</code>: {}</li>",
            esc(&t.name),
            esc(&t.description)
        );
    }
    b.push_str("</ul><h2>Report</h2>");
    let report = serde_json::to_value(&ctx.report).unwrap_or_default();
    render_turn(&mut b, &report);
    ok("Try a turn", &p, &b, None)
}

#[derive(Deserialize)]
pub(super) struct EvalForm {
    csrf: String,
    cases: String,
}

/// Who a job belongs to: the signed-in token.
fn owner(p: &Principal) -> jobs::Owner {
    match p {
        Principal::Admin { token } => *token,
        Principal::Agent { token, .. } => Some(*token),
    }
}

fn job_url(agent: &str, id: &str) -> String {
    format!("/studio/agents/{}/eval/{id}", url(agent))
}

/// `skillbase eval` on the cases given, on the agent's real turn path, as a background job:
/// the cases are read and checked here (a refusal starts nothing), then the answer is the job's
/// page, which shows its progress and then its tables.
pub(super) async fn agent_eval(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<Jobs>>,
    Extension(p): Extension<Principal>,
    Extension(signed): Extension<SignedIn>,
    Path(name): Path<String>,
    Form(f): Form<EvalForm>,
) -> Response {
    if let Some(refused) = stale(&signed, &f.csrf) {
        return refused;
    }
    let Some(a) = agent_of(&st, &p, &name) else {
        return fail(StatusCode::NOT_FOUND, "no such agent");
    };
    if f.cases.len() > 4 * 1024 * 1024 {
        return fail(StatusCode::PAYLOAD_TOO_LARGE, "the cases are over 4 MiB");
    }
    let cases = match skillbase_runtime::eval::parse_cases(&f.cases) {
        Ok(c) if !c.is_empty() => c,
        Ok(_) => {
            return fail(
                StatusCode::UNPROCESSABLE_ENTITY,
                "no cases: write one per line",
            );
        }
        Err(e) => return fail(StatusCode::UNPROCESSABLE_ENTITY, &format!("cases: {e}")),
    };
    let view = match st.runtime.view(&a.name) {
        Ok(v) => v,
        Err(e) => return store_error(e),
    };
    let job = match jobs.start(&a.name, owner(&p), cases.len(), Instant::now()) {
        Ok(j) => j,
        Err(why) => {
            let message = match why {
                jobs::Refused::Agent => format!(
                    "not started: {} evaluations of {} are running already (at most {} at a time); wait for one to finish",
                    jobs::MAX_PER_AGENT,
                    a.name,
                    jobs::MAX_PER_AGENT
                ),
                jobs::Refused::Total => format!(
                    "not started: the studio is running {} evaluations already (at most {} at a time); wait for one to finish",
                    jobs::MAX_RUNNING,
                    jobs::MAX_RUNNING
                ),
            };
            return fail(StatusCode::TOO_MANY_REQUESTS, &message);
        }
    };
    let to = job_url(a.name.as_str(), &job.id);
    tokio::spawn(run_job(st, job, view, cases));
    redirect(&to)
}

/// Run a job's evaluation to its end (or until the server shuts down) and keep its outcome.
async fn run_job(
    st: Arc<AppState>,
    job: Arc<jobs::Job>,
    view: Arc<skillbase_runtime::AgentView>,
    cases: Vec<skillbase_runtime::eval::EvalCase>,
) {
    let progress = job.progress.clone();
    let running = job.clone();
    let run = crate::rest::evaluate_off_workers(
        &st,
        view,
        cases,
        |cases| cases.iter().map(|c| c.message.as_str()).collect(),
        move |view, cases, opts, vectors| {
            running.set_running();
            skillbase_runtime::eval::evaluate_observed(view, cases, opts, vectors, &progress)
        },
        Default::default(),
    );
    let state = tokio::select! {
        r = run => match r {
            Ok(Some(mut report)) => {
                // The page shows the tables, never the cases one by one.
                report.outcomes = Vec::new();
                jobs::State::Done(Arc::new(report))
            }
            Ok(None) => jobs::State::Stopped,
            Err(e) => jobs::State::Failed(e.detail),
        },
        () = st.shutdown.cancelled() => {
            // The evaluation ends after the case it is on.
            job.progress.stop();
            jobs::State::Stopped
        }
    };
    job.finish(state, Instant::now());
}

/// The job `id` of agent `name` if the signed-in token started it; anyone else's, a
/// forgotten one and a malformed id are all [`no_such_job`].
fn job_of(
    st: &AppState,
    jobs: &Jobs,
    p: &Principal,
    name: &str,
    id: &str,
) -> Option<(Arc<skillbase_store::Agent>, Arc<jobs::Job>)> {
    let a = agent_of(st, p, name)?;
    let job = jobs.get(id, &a.name, owner(p), Instant::now())?;
    Some((a, job))
}

fn no_such_job() -> Response {
    fail(StatusCode::NOT_FOUND, "no such evaluation")
}

/// Poll the status route while the job runs (the bar and the count follow it), then reload:
/// the page then has the tables. Without JavaScript the page reloads itself (`noscript`).
const JOB_SCRIPT: &str = "(function(){var el=document.getElementById('eval-job');if(!el||!window.fetch)return;\
var bar=document.getElementById('eval-progress'),count=document.getElementById('eval-count');\
function tick(){fetch(el.dataset.status,{cache:'no-store',credentials:'same-origin'}).then(function(r){if(!r.ok)throw r.status;return r.json();})\
.then(function(s){bar.max=s.total;bar.value=s.done;count.textContent=s.done+' of '+s.total+' cases';el.dataset.state=s.state;\
if(s.state==='preparing'||s.state==='running'){setTimeout(tick,500);}else{location.reload();}})\
.catch(function(){setTimeout(function(){location.reload();},1000);});}setTimeout(tick,300);})();";

/// A job's page: its progress while it runs, then the evaluation's tables.
pub(super) async fn agent_eval_job(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<Jobs>>,
    Extension(p): Extension<Principal>,
    Path((name, id)): Path<(String, String)>,
) -> Response {
    let Some((a, job)) = job_of(&st, &jobs, &p, &name, &id) else {
        return no_such_job();
    };
    let (state, done, took) = job.snapshot();
    let agent = a.name.as_str();
    let back = format!(
        "<p class=\"muted\"><a href=\"/studio/agents/{}\">Back to {}</a></p>",
        url(agent),
        esc(agent)
    );
    match state {
        jobs::State::Preparing | jobs::State::Running => {
            let phase = if matches!(state, jobs::State::Preparing) {
                "Computing the messages' vectors for the semantic stage…"
            } else {
                "Running each case through the agent's turn path…"
            };
            let b = format!(
                "<h1>Evaluation of {}</h1><div id=\"eval-job\" data-state=\"{}\" data-status=\"{}/status\">\
                 <p><progress id=\"eval-progress\" max=\"{total}\" value=\"{done}\">{done} of {total}</progress> \
                 <span id=\"eval-count\">{done} of {total} cases</span></p><p class=\"muted\">{phase}</p></div>\
                 <noscript><meta http-equiv=\"refresh\" content=\"2\"><p class=\"muted\">This page reloads itself until the evaluation is done.</p></noscript>{back}",
                esc(agent),
                state.as_str(),
                job_url(agent, &job.id),
                total = job.total,
            );
            ok("Evaluation running", &p, &b, Some(JOB_SCRIPT))
        }
        jobs::State::Done(report) => {
            let mut b = eval_tables(agent, &report);
            let _ = write!(
                b,
                "<p class=\"muted\" id=\"eval-took\">{} cases in {:.1} s.</p>{back}",
                job.total,
                took.unwrap_or_default().as_secs_f64()
            );
            ok("Evaluation", &p, &b, None)
        }
        jobs::State::Failed(why) => {
            let b = format!(
                "<h1>Evaluation of {}</h1><p class=\"warn\" id=\"eval-failed\">The evaluation failed: {}</p>{back}",
                esc(agent),
                esc(&why)
            );
            ok("Evaluation failed", &p, &b, None)
        }
        jobs::State::Stopped => {
            let b = format!(
                "<h1>Evaluation of {}</h1><p class=\"warn\" id=\"eval-stopped\">The evaluation was stopped after {done} of {} cases: the server is shutting down.</p>{back}",
                esc(agent),
                job.total
            );
            ok("Evaluation stopped", &p, &b, None)
        }
    }
}

/// A job's progress as JSON, for its page's script: `{"state", "done", "total"}`.
pub(super) async fn agent_eval_status(
    State(st): State<Arc<AppState>>,
    Extension(jobs): Extension<Arc<Jobs>>,
    Extension(p): Extension<Principal>,
    Path((name, id)): Path<(String, String)>,
) -> Response {
    let Some((_, job)) = job_of(&st, &jobs, &p, &name, &id) else {
        return no_such_job();
    };
    let (state, done, _) = job.snapshot();
    (
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        axum::Json(serde_json::json!({
            "state": state.as_str(),
            "done": done,
            "total": job.total,
        })),
    )
        .into_response()
}

/// The tables of `skillbase eval`.
fn eval_tables(agent: &str, report: &skillbase_runtime::eval::EvalReport) -> String {
    let mut b = format!(
        "<h1>Evaluation of {}</h1><p>{} skills seen · {} cases</p>",
        esc(agent),
        report.skills,
        report.overall.cases
    );
    let row = |b: &mut String, label: &str, m: &skillbase_runtime::eval::Metrics| {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td></tr>",
            esc(label),
            m.cases,
            m.recall_at_1,
            m.recall_at_5,
            m.recall_at_10,
            m.visible,
            m.false_triggers
        );
    };
    for (title, id, rows) in [
        ("By kind", "eval-kind", &report.by_kind),
        ("By language", "eval-lang", &report.by_lang),
        ("By skill", "eval-skill", &report.by_skill),
    ] {
        let _ = write!(
            b,
            "<h2>{title}</h2><table id=\"{id}\"><tr><th></th><th>cases</th><th>recall@1</th><th>recall@5</th><th>recall@10</th><th>visible</th><th>false triggers</th></tr>"
        );
        row(&mut b, "all", &report.overall);
        for (k, m) in rows {
            row(&mut b, k, m);
        }
        b.push_str("</table>");
    }
    if !report.confused.is_empty() {
        b.push_str("<h2>Most confused</h2><table><tr><th>expected</th><th>ranked first</th><th>times</th></tr>");
        for c in &report.confused {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.expected),
                esc(&c.got),
                c.count
            );
        }
        b.push_str("</table>");
    }
    if !report.unknown_expected.is_empty() {
        let _ = write!(
            b,
            "<p class=\"warn\">Expected skills this agent does not see: {}</p>",
            esc(&report.unknown_expected.join(", "))
        );
    }
    b
}

// ---- Approvals ----

pub(super) async fn approvals(
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
        "<h1>Approvals</h1><table id=\"approvals\"><tr><th>Skill</th><th>Scope</th><th>Revision</th><th>Author</th><th>When</th><th>Message</th><th></th></tr>",
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
