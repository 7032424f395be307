//! Upstream MCP servers configured at run time (`/v1/mcp-servers`), admin only. The body of a
//! write is the `[mcp_servers.<name>]` table of `skillbase.toml` as JSON; the gateway checks it
//! whole, the store keeps it (vault entries by name only) and every server on the store
//! follows it. Servers of the file are listed but cannot be changed here. A stdio server runs a
//! program on the host, so the API may configure one only for a program the file's
//! `[gateway] api_commands` lists.

use super::extract::{Body, Caller, P, unprocessable};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use skillbase_runtime::{GatewayError, McpServerConfig, ServerEntry};
use std::sync::Arc;
use utoipa::{IntoParams, ToSchema};

/// The servers listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct McpServers {
    /// The file's servers in configuration order, then the API's by name.
    pub servers: Vec<ServerEntry>,
}

/// The server a path names.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ServerPath {
    /// The server's name.
    #[param(required = true, schema_with = skillbase_format::openapi::server_name)]
    pub name: String,
}

fn gateway_error(e: GatewayError) -> ApiError {
    match e {
        GatewayError::Invalid(_) => unprocessable("invalid-mcp-server", e.to_string()),
        GatewayError::FileConfigured(_) => ApiError::conflict(e.to_string()),
        GatewayError::CommandNotAllowed(_) => ApiError::forbidden(e.to_string()),
        GatewayError::NotFound(_) => ApiError::not_found(e.to_string()),
        GatewayError::Store(s) => s.into(),
    }
}

fn entry(st: &AppState, name: &str) -> Option<ServerEntry> {
    st.gateway
        .servers()
        .into_iter()
        .find(|s| s.status.name == name)
}

/// Every upstream server with its state and origin (`file` or `api`), and the configuration
/// of those the API wrote.
#[utoipa::path(get, path = "/v1/mcp-servers", tag = "tools",
    responses((status = 200, body = McpServers),
        (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn list_servers(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
) -> ApiResult<Json<McpServers>> {
    p.require_admin()?;
    Ok(Json(McpServers {
        servers: st.gateway.servers(),
    }))
}

/// One upstream server.
#[utoipa::path(get, path = "/v1/mcp-servers/{name}", tag = "tools",
    params(ServerPath),
    responses((status = 200, body = ServerEntry),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn show_server(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(ServerPath { name }): P<ServerPath>,
) -> ApiResult<Json<ServerEntry>> {
    p.require_admin()?;
    entry(&st, &name)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no upstream server '{name}'")))
}

/// Configure an upstream server (replacing the API's earlier configuration of it): 201 when
/// new, 200 when replaced. It starts connecting at once; its tools join the registry when it
/// has listed them (see its `state`). Vault entries it names must be set. 409 for a server of
/// `skillbase.toml` or past `[gateway] api_servers`; 403 for a stdio program `[gateway]
/// api_commands` does not list.
#[utoipa::path(put, path = "/v1/mcp-servers/{name}", tag = "tools",
    params(ServerPath),
    request_body = McpServerConfig,
    responses((status = 200, body = ServerEntry), (status = 201, body = ServerEntry),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn put_server(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(ServerPath { name }): P<ServerPath>,
    Body(config): Body<serde_json::Value>,
) -> ApiResult<Response> {
    p.require_admin()?;
    let created = st
        .gateway
        .put(&name, config, &p.author())
        .await
        .map_err(gateway_error)?;
    let e = entry(&st, &name)
        .ok_or_else(|| ApiError::internal("the upstream server vanished after it was written"))?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(e)).into_response())
}

/// Remove an upstream server the API configured: its connection closes (a stdio server's
/// process exits) and its tools leave every agent's offered set.
#[utoipa::path(delete, path = "/v1/mcp-servers/{name}", tag = "tools",
    params(ServerPath),
    responses((status = 204, description = "Removed"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json")))]
pub async fn remove_server(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(ServerPath { name }): P<ServerPath>,
) -> ApiResult<StatusCode> {
    p.require_admin()?;
    st.gateway
        .remove(&name, &p.author())
        .await
        .map_err(gateway_error)?;
    Ok(StatusCode::NO_CONTENT)
}
