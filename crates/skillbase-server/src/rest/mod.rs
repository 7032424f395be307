//! The REST API under `/v1`, described by the OpenAPI 3.1 document at `/v1/openapi.json`,
//! derived from the handlers' annotations and the types they read and answer (those of the
//! crates below through their `openapi` feature), completed by [`openapi::Finish`]. Errors are `application/problem+json`.
//!
//! The router and [`routes`] are built from one table, so the list of mounted routes and the
//! document can be compared (the REST tests do).

mod a2a;
mod agents;
mod authoring;
mod doctor;
mod extract;
mod mcp_servers;
mod openapi;
mod scans;
mod sessions;
mod skills;
mod sweeps;
mod tokens;
mod tools;
mod usage;
mod vault;

pub(crate) use agents::evaluate_off_workers;
pub use authoring::SESSION_HEADER;
pub(crate) use sessions::events_for as session_events_for;

use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{Method, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, delete, get, post, put};
use openapi::Finish;
use std::sync::{Arc, OnceLock};
use utoipa::OpenApi;

type Route = (Method, &'static str, MethodRouter<Arc<AppState>>);

/// The largest body a route may carry: `(one skill's files, a zip of many)`.
#[derive(Clone, Copy)]
struct BodyLimits {
    skill: usize,
    upload: usize,
}

/// Every route under `/v1`: method, path (relative to `/v1`) and handler.
fn table(limits: BodyLimits) -> Vec<Route> {
    let mut routes = vec![(Method::GET, "/openapi.json", get(openapi_json))];
    routes.extend(skill_routes(limits));
    routes.extend(agent_routes());
    routes.push((Method::GET, "/doctor", get(doctor::report)));
    routes.push((Method::GET, "/usage", get(usage::library)));
    routes.extend(tool_routes());
    routes.extend(vault_and_token_routes());
    routes.extend(session_routes());
    routes
}

/// Skills and their revisions, imports and approvals, with the body limits of the two routes that
/// read skill files.
fn skill_routes(limits: BodyLimits) -> Vec<Route> {
    vec![
        (Method::GET, "/skills", get(skills::list)),
        (Method::GET, "/skills/{name}", get(skills::show)),
        // A skill may hold up to 16 MiB of files (a third more as base64 in JSON): no more is
        // read for one, whatever the upload limit.
        (
            Method::PUT,
            "/skills/{name}",
            put(skills::put).layer(DefaultBodyLimit::max(limits.skill)),
        ),
        (Method::GET, "/skills/{name}/history", get(skills::history)),
        (Method::GET, "/skills/{name}/scan", get(scans::scan)),
        (Method::GET, "/skills/{name}/diff", get(skills::diff)),
        (Method::POST, "/skills/{name}/revert", post(skills::revert)),
        (Method::POST, "/skills/{name}/retire", post(skills::retire)),
        (
            Method::POST,
            "/skills/{name}/restore",
            post(skills::restore),
        ),
        (
            Method::POST,
            "/skills/{name}/disable",
            post(skills::disable),
        ),
        (Method::POST, "/skills/{name}/enable", post(skills::enable)),
        (Method::GET, "/skills/{name}/export", get(skills::export)),
        (Method::GET, "/skills/{name}/runs", get(skills::runs)),
        (Method::GET, "/skills/{name}/usage", get(usage::skill)),
        (
            Method::POST,
            "/skills/{name}/approve",
            post(skills::approve),
        ),
        (
            Method::POST,
            "/imports",
            post(skills::import).layer(DefaultBodyLimit::max(limits.upload)),
        ),
        (Method::GET, "/approvals", get(skills::approvals)),
    ]
}

/// Agents, their evaluation and dreaming, and their A2A agent cards.
fn agent_routes() -> Vec<Route> {
    vec![
        (Method::GET, "/agents", get(agents::list)),
        (Method::POST, "/agents", post(agents::create)),
        (Method::GET, "/agents/{name}", get(agents::show)),
        (Method::PUT, "/agents/{name}", put(agents::put)),
        (Method::POST, "/agents/{name}/eval", post(agents::eval)),
        (
            Method::POST,
            "/agents/{name}/eval/sweeps",
            post(sweeps::start),
        ),
        (
            Method::GET,
            "/agents/{name}/eval/sweeps/{id}",
            get(sweeps::show),
        ),
        (
            Method::DELETE,
            "/agents/{name}/eval/sweeps/{id}",
            delete(sweeps::stop),
        ),
        (Method::POST, "/agents/{name}/dream", post(agents::dream)),
        (
            Method::GET,
            "/agents/{name}/agent-card.json",
            get(a2a::card),
        ),
    ]
}

/// Configured tools and upstream MCP servers.
fn tool_routes() -> Vec<Route> {
    vec![
        (Method::GET, "/tools", get(tools::list)),
        (Method::GET, "/mcp-servers", get(mcp_servers::list_servers)),
        (
            Method::GET,
            "/mcp-servers/{name}",
            get(mcp_servers::show_server),
        ),
        (
            Method::PUT,
            "/mcp-servers/{name}",
            put(mcp_servers::put_server),
        ),
        (
            Method::DELETE,
            "/mcp-servers/{name}",
            delete(mcp_servers::remove_server),
        ),
    ]
}

/// The vault's secrets and the API tokens.
fn vault_and_token_routes() -> Vec<Route> {
    vec![
        (Method::GET, "/vault", get(vault::list)),
        (Method::PUT, "/vault/{name}", put(vault::set)),
        (Method::DELETE, "/vault/{name}", delete(vault::remove)),
        (Method::GET, "/tokens", get(tokens::list)),
        (Method::POST, "/tokens", post(tokens::create)),
        (Method::DELETE, "/tokens/{id}", delete(tokens::revoke)),
    ]
}

/// An agent's sessions: turns, calls and their results, transcripts and events.
fn session_routes() -> Vec<Route> {
    vec![
        (Method::POST, "/sessions", post(sessions::create)),
        (Method::GET, "/sessions/{id}", get(sessions::show)),
        (Method::POST, "/sessions/{id}/turns", post(sessions::turn)),
        (Method::POST, "/sessions/{id}/calls", post(sessions::call)),
        (
            Method::GET,
            "/sessions/{id}/calls/{call_id}",
            get(sessions::call_result),
        ),
        (
            Method::POST,
            "/sessions/{id}/calls/{call_id}/result",
            post(sessions::post_result),
        ),
        (
            Method::POST,
            "/sessions/{id}/transcript",
            post(sessions::transcript),
        ),
        (Method::GET, "/sessions/{id}/events", get(sessions::events)),
        (Method::GET, "/sessions/{id}/pinned", get(sessions::pinned)),
        (
            Method::POST,
            "/sessions/{id}/finish",
            post(sessions::finish),
        ),
    ]
}

/// Whether the server reads `value` for the request header `name` (`if-match`,
/// `if-none-match`, `last-event-id`, `skillbase-session`), each sent alone: for the tests that
/// compare the OpenAPI document's header grammars with the server's.
#[doc(hidden)]
pub fn header_accepted(name: &str, value: &[u8]) -> bool {
    let Ok(v) = axum::http::HeaderValue::from_bytes(value) else {
        return false;
    };
    let mut h = axum::http::HeaderMap::new();
    match name {
        "last-event-id" => sessions::last_event_id(value).is_ok(),
        "if-match" | "if-none-match" | "skillbase-session" => {
            h.insert(
                axum::http::HeaderName::from_static(match name {
                    "if-match" => "if-match",
                    "if-none-match" => "if-none-match",
                    _ => "skillbase-session",
                }),
                v,
            );
            if name == "skillbase-session" {
                extract::session_header(&h).is_ok()
            } else {
                extract::precondition(&h).is_ok()
            }
        }
        _ => false,
    }
}

/// The routes outside `/v1` that the document describes too (full paths): A2A's well-known
/// agent card.
fn top_level() -> Vec<Route> {
    vec![(
        Method::GET,
        "/.well-known/agent-card.json",
        get(a2a::well_known),
    )]
}

/// Every mounted route as (method, full path), e.g. `(GET, "/v1/skills/{name}")`.
pub fn routes() -> Vec<(Method, String)> {
    table(BodyLimits {
        skill: 0,
        upload: 0,
    })
    .into_iter()
    .map(|(m, p, _)| (m, format!("/v1{p}")))
    .chain(top_level().into_iter().map(|(m, p, _)| (m, p.to_owned())))
    .collect()
}

/// The routes outside `/v1` (merged by [`crate::router`], behind authentication).
pub fn top_level_router() -> Router<Arc<AppState>> {
    let mut r = Router::new();
    for (_, path, mr) in top_level() {
        r = r.route(path, mr);
    }
    r
}

/// The `/v1` router (nested by [`crate::router`], behind authentication).
pub fn router(state: Arc<AppState>) -> Router<Arc<AppState>> {
    let mut r = Router::new();
    let upload = state.options.limits.upload_bytes;
    // A skill's files as base64 in JSON, with room for the JSON around them.
    let skill = usize::try_from(state.store.limits.max_total_bytes)
        .unwrap_or(usize::MAX)
        .saturating_mul(4)
        .div_ceil(3)
        .saturating_add(1024 * 1024)
        .min(upload);
    for (_, path, mr) in table(BodyLimits { skill, upload }) {
        r = r.route(path, mr);
    }
    r.method_not_allowed_fallback(method_not_allowed)
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        format!(
            "{} is not a method of {}; see /v1/openapi.json",
            req.method(),
            req.uri().path()
        ),
    )
}

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Skillbase",
        description = "Skills store and runtime for AI agents. Every route needs `Authorization: Bearer <token>`: an admin token, or one bound to an agent, which sees and does only what that agent may. Errors are application/problem+json. Skill writes take `If-Match: \"<rev>\"` (the ETag)."
    ),
    modifiers(&Finish),
    security(("bearer" = [])),
    paths(
        openapi_json,
        skills::list, skills::show, skills::put, skills::history, skills::diff, scans::scan,
        skills::revert, skills::retire, skills::restore, skills::disable, skills::enable,
        skills::export, skills::runs, skills::approve, skills::import, skills::approvals,
        agents::list, agents::create, agents::show, agents::put, agents::eval, agents::dream,
        sweeps::start, sweeps::show, sweeps::stop,
        a2a::card, a2a::well_known,
        doctor::report,
        usage::skill, usage::library,
        tools::list,
        mcp_servers::list_servers, mcp_servers::show_server, mcp_servers::put_server, mcp_servers::remove_server,
        vault::list, vault::set, vault::remove,
        tokens::list, tokens::create, tokens::revoke,
        sessions::create, sessions::show, sessions::turn, sessions::call, sessions::call_result,
        sessions::post_result, sessions::transcript,
        sessions::events, sessions::pinned, sessions::finish,
    ),
    components(schemas(crate::error::Problem, skills::FileObject, skillbase_store::EventRecord, skillbase_store::Scope)),
    tags(
        (name = "skills", description = "Skills and their revisions"),
        (name = "approvals", description = "Revisions waiting for review"),
        (name = "agents", description = "Agents: what each may see and use, and their A2A agent cards"),
        (name = "doctor", description = "Drift between prompts, agents and the catalog"),
        (name = "usage", description = "Which skills fire, for whom, how they fare, what they cost"),
        (name = "tools", description = "Configured tools and upstream MCP servers"),
        (name = "vault", description = "Secrets, write-only"),
        (name = "tokens", description = "API tokens"),
        (name = "sessions", description = "Turns, calls and events of an agent's session"),
        (name = "meta", description = "This document"),
    )
)]
pub struct ApiDoc;

/// The document as JSON text (built once).
pub fn openapi_text() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        serde_json::to_string(&doc).expect("the OpenAPI document serializes")
    })
}

/// This document: the OpenAPI 3.1 description of every route under /v1.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
pub async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], openapi_text())
}
