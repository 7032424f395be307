//! MCP over streamable HTTP and stdio, with the Skills extension.
//!
//! One [`McpHandler`] serves one caller's agent:
//!
//! - **Which agent** (`identity`): a token bound to an agent acts as that agent; an admin token
//!   (or `--dev`) names one in the `Skillbase-Agent` header, else the server's default agent;
//!   stdio serves the agent it was started for. A stateful MCP session stays with the token and
//!   agent it was opened with.
//! - **Tools** (`tools`): `tools/list` is the agent's offered set; `tools/call` goes through the
//!   dispatch pipeline, and refusals come back as tool results with `isError` (the model can act
//!   on them). The Skillbase session is the `Skillbase-Session` header when given, else one per
//!   MCP session (stateful wire), else one per token and agent (stateless wire).
//! - **Skills extension** (`skills`; `io.modelcontextprotocol/skills`, with `directoryRead`):
//!   `skills/list`, `skills/get`, `resources/list` (each SKILL.md), `resources/read` and
//!   `resources/directory/read` over exactly the skills the agent's view holds. Anything else
//!   (unknown, another agent's private skill, a path with `..`) is the same `-32602` naming only
//!   the URI asked for.
//! - **Changes** (`notifications`): `notifications/resources/list_changed` (and
//!   `tools/list_changed`) when the agent's visible skills (or offered tools) change: to
//!   stateful sessions and stdio, and to `subscriptions/listen` streams on the 2026-07-28 wire.
//!
//! The rest: `handler` (the rmcp `ServerHandler`), `errors` (the JSON-RPC errors), `hosts`
//! (which `Host` may reach the server), `jsonrpc` (the guard in front of rmcp), `direct` (the
//! fast path for stateless `tools/call`) and `stdio`.

mod direct;
mod errors;
mod handler;
mod hosts;
mod identity;
mod jsonrpc;
mod notifications;
mod skills;
mod stdio;
mod tools;

pub use handler::McpHandler;
pub(crate) use hosts::{allowed_hosts, dev_host_guard};
pub use identity::{AGENT_HEADER, SESSION_HEADER};
pub use stdio::{serve_io, serve_stdio};

use crate::state::AppState;
use axum::Router;
use axum::middleware;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// The MCP endpoint as a service to nest at `/mcp`: rmcp's streamable HTTP transport (both
/// wires) behind a guard that answers malformed JSON-RPC with a JSON-RPC error.
pub fn service(state: Arc<AppState>) -> Router {
    let limit = state.options.limits.body_bytes;
    let guard = jsonrpc::Guard {
        limit,
        direct: (!state.options.rmcp_only).then(|| (state.clone(), allowed_hosts(&state))),
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts::allowed_host_names(&state))
        .with_cancellation_token(state.shutdown.clone())
        .with_max_request_body_bytes(limit)
        .with_json_response(true);
    let st = state.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(McpHandler::new(st.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .fallback_service(mcp)
        .layer(middleware::from_fn_with_state(
            Arc::new(guard),
            jsonrpc::jsonrpc_guard,
        ))
}
