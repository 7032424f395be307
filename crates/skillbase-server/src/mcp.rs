//! MCP over streamable HTTP and stdio, with the Skills extension.

use crate::state::AppState;
use axum::Router;
use std::sync::Arc;

pub fn service(_state: Arc<AppState>) -> Router {
    Router::new()
}

/// Serve one agent over MCP on stdin/stdout.
pub async fn serve_stdio(
    _state: Arc<AppState>,
    _agent: skillbase_store::AgentName,
) -> anyhow::Result<()> {
    anyhow::bail!("MCP over stdio is being built")
}
