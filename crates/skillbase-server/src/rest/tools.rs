//! `GET /v1/tools`: every tool the server's dispatcher knows — built-ins, `[[tools]]` entries
//! (declared, harness-run, HTTP), an embedder's, and the tools of upstream MCP servers — with
//! its source, class, status and the agents granted it; and the upstream servers' states. An
//! agent token sees only the tools its agent is granted, and no server's details.

use super::extract::Caller;
use crate::error::ApiResult;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use skillbase_runtime::{ServerStatus, ToolInfo};
use std::sync::Arc;
use utoipa::ToSchema;

/// The tools and upstream servers.
#[derive(Debug, Serialize)]
pub struct ToolsReport {
    /// Built-ins first, then the registry by wire name.
    pub tools: Vec<ToolInfo>,
    /// Upstream MCP servers, in configuration order (empty for an agent token).
    pub servers: Vec<ServerStatus>,
}

/// One tool, as listed.
#[derive(ToSchema)]
#[schema(as = ToolInfo)]
#[allow(dead_code)]
pub struct ToolInfoDoc {
    /// `tool:<name>` or `tool:<server>/<name>`.
    id: String,
    /// The wire name the model calls.
    name: String,
    /// builtin, config, embedder or mcp.
    source: String,
    /// The upstream server of an MCP tool.
    server: Option<String>,
    /// The class a grant names.
    class: String,
    /// skillbase or harness.
    runs: String,
    /// Whether the tool is one HTTP request.
    http: bool,
    /// immediate, seconds or tens_of_seconds.
    cost: String,
    /// ready, connected, connecting, down, harness or declared.
    status: String,
    /// Why it cannot run now.
    reason: Option<String>,
    /// Agents granted its class.
    agents: Vec<String>,
}

/// One upstream MCP server's state.
#[derive(ToSchema)]
#[schema(as = UpstreamServer)]
#[allow(dead_code)]
pub struct ServerDoc {
    name: String,
    /// stdio or http.
    transport: String,
    /// connecting, connected or down.
    state: String,
    reason: Option<String>,
    server_info: Option<String>,
    protocol: Option<String>,
    pid: Option<u32>,
    tools: u32,
    skipped: Vec<String>,
    connections: u64,
}

/// The tools listing.
#[derive(ToSchema)]
#[schema(as = ToolsReport)]
#[allow(dead_code)]
pub struct ToolsReportDoc {
    tools: Vec<ToolInfoDoc>,
    servers: Vec<ServerDoc>,
}

/// Every tool with its source, class, status (connected, down, declared, …) and the agents
/// granted it, and the upstream MCP servers. An agent token sees its own granted tools only.
#[utoipa::path(get, path = "/v1/tools", tag = "tools",
    responses((status = 200, body = ToolsReportDoc)))]
pub async fn list(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
) -> ApiResult<Json<ToolsReport>> {
    let agents: Vec<_> = match p.agent() {
        Some(own) => st
            .store
            .agent_cached(own)
            .map(|a| vec![(*a).clone()])
            .unwrap_or_default(),
        None => st.store.agents().await?,
    };
    let mut tools = st.engine.tool_listing(&agents);
    let servers = if p.agent().is_some() {
        tools.retain(|t| !t.agents.is_empty());
        Vec::new()
    } else {
        st.gateway.status()
    };
    Ok(Json(ToolsReport { tools, servers }))
}
