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
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolsReport {
    /// Built-ins first, then the registry by wire name.
    pub tools: Vec<ToolInfo>,
    /// Upstream MCP servers, in configuration order (empty for an agent token).
    pub servers: Vec<ServerStatus>,
}

/// Every tool with its source, class, status (connected, down, declared, …) and the agents
/// granted it, and the upstream MCP servers. An agent token sees its own granted tools only.
#[utoipa::path(get, path = "/v1/tools", tag = "tools",
    responses((status = 200, body = ToolsReport)))]
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
