-- Upstream MCP servers configured through the API (issue 16): the `[mcp_servers.<name>]` table as
-- JSON, checked by the runtime's gateway before it is written. Vault entries are referenced by
-- name only; a value never reaches this table. Servers configured in skillbase.toml are not here.
CREATE TABLE mcp_servers (
    name       TEXT PRIMARY KEY,
    config     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL
);
