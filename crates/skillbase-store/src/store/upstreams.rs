//! Upstream MCP servers configured through the API (the gateway checks a configuration before
//! it is written; the store keeps it as JSON and records who wrote it).

use super::Store;
use crate::error::{Result, StoreError};
use crate::model::Author;
use crate::records::McpServerRow;

/// Longest stored configuration, in bytes of JSON.
const MAX_MCP_SERVER_CONFIG: usize = 64 * 1024;

impl Store {
    /// Write server `name`'s configuration (replacing any), with an `mcp_server_set` event
    /// holding `summary` (how it is reached; never a value). Whether it is new. A new server
    /// past `limit` rows is refused ([`StoreError::LimitReached`]), nothing written.
    pub async fn mcp_server_put(
        &self,
        name: &str,
        config: &serde_json::Value,
        summary: serde_json::Value,
        limit: usize,
        actor: &Author,
    ) -> Result<bool> {
        let text = config.to_string();
        if text.len() > MAX_MCP_SERVER_CONFIG {
            return Err(StoreError::Invalid(format!(
                "an upstream server's configuration is {} bytes of JSON; at most {MAX_MCP_SERVER_CONFIG}",
                text.len()
            )));
        }
        on_db!(
            self,
            upstreams::mcp_server_put(name, &text, summary, limit, &actor.to_string())
        )
    }

    /// Remove server `name` (an `mcp_server_removed` event); false if it was not stored.
    pub async fn mcp_server_remove(&self, name: &str, actor: &Author) -> Result<bool> {
        on_db!(self, upstreams::mcp_server_remove(name, &actor.to_string()))
    }

    /// Every server configured through the API, by name.
    pub async fn mcp_servers(&self) -> Result<Vec<McpServerRow>> {
        on_db!(self, upstreams::mcp_servers())
    }
}
