//! The runtime's part of `skillbase.toml`, typed: the tables the store's
//! [`Config`](skillbase_store::config::Config) keeps as written (`[[tools]]`, `[semantic]`,
//! `[mcp_servers.*]`, `[gateway]`, `[dreaming]`), each read once, here, into the type that
//! runs it. The engine builder, the CLI and the server read the file through this one type, so
//! a table means the same wherever it is read and a mistake is named with the file it is in.

use crate::dreaming::DreamingConfig;
use crate::environment::Environment;
use crate::gateway::{GatewaySettings, McpServerConfig};
use crate::semantic::SemanticConfig;
use crate::telemetry::TelemetryConfig;
use crate::tool::ToolDecl;
use skillbase_store::StoreError;
use skillbase_store::config::Config;

/// What `skillbase.toml` configures of the runtime (the store applies the rest: agents,
/// retention, trust, store policies).
#[derive(Debug, Clone, Default)]
pub struct RuntimeConfig {
    /// `[[tools]]`: tools declared in the file (run by a handler the harness gives, by their
    /// `http` block, or refused with `no_handler`).
    pub tools: Vec<ToolDecl>,
    /// `[semantic]`: the embedding stage of ranking.
    pub semantic: Option<SemanticConfig>,
    /// `[mcp_servers.<name>]`: upstream MCP servers, relative paths resolved against the
    /// file's folder.
    pub mcp_servers: Vec<McpServerConfig>,
    /// `[gateway]`: what the API may configure of the gateway.
    pub gateway: Option<GatewaySettings>,
    /// `[dreaming]`: support, schedule and the prose model.
    pub dreaming: Option<DreamingConfig>,
    /// `[telemetry]` with the `OTEL_*` variables: OpenTelemetry export, when turned on.
    pub telemetry: Option<TelemetryConfig>,
}

impl RuntimeConfig {
    /// Read the runtime's tables of a parsed file; an error names `origin` (the file) and the
    /// table. Nothing is connected or opened here.
    pub fn read(config: &Config, origin: &str) -> Result<RuntimeConfig, StoreError> {
        let invalid = |e: String| StoreError::Invalid(format!("{origin}: {e}"));
        Ok(RuntimeConfig {
            tools: crate::tool::decls_from_tables(&config.tools).map_err(invalid)?,
            semantic: config
                .semantic
                .as_ref()
                .map(|t| SemanticConfig::from_table(t).map_err(|e| invalid(e.to_string())))
                .transpose()?,
            mcp_servers: crate::gateway::servers_from_table(
                &config.mcp_servers,
                config.folder.as_deref(),
            )
            .map_err(invalid)?,
            gateway: config
                .gateway
                .as_ref()
                .map(|t| GatewaySettings::from_table(t).map_err(invalid))
                .transpose()?,
            dreaming: config
                .dreaming
                .as_ref()
                .map(|t| DreamingConfig::from_table(t).map_err(invalid))
                .transpose()?,
            telemetry: TelemetryConfig::resolve(config.telemetry.as_ref(), &|k: &str| {
                std::env::var(k).ok()
            })
            .map_err(invalid)?,
        })
    }

    /// Read and parse the file at `path` ([`Config::load`]) and its runtime tables.
    pub fn load(path: &std::path::Path) -> Result<(Config, RuntimeConfig), StoreError> {
        let config = Config::load(path)?;
        let runtime = RuntimeConfig::read(&config, &path.display().to_string())?;
        Ok((config, runtime))
    }

    /// What skills' `requires:` are checked against where no engine runs (an import from the
    /// command line): the built-in tools, `web_fetch` (every engine of the CLI and the server
    /// registers it), the tools declared here, and the upstream servers as configured (not
    /// connected: a running engine checks them as connected, per agent).
    pub fn environment(&self) -> Environment {
        let mut env = Environment::builtins();
        env.classes.insert(crate::web_fetch::NAME.to_owned());
        for decl in &self.tools {
            env.classes.insert(decl.class.clone());
        }
        for server in &self.mcp_servers {
            env.classes.insert(server.class.clone());
            env.servers
                .entry(server.name.clone())
                .or_default()
                .insert(server.class.clone());
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<RuntimeConfig, StoreError> {
        RuntimeConfig::read(&Config::parse(text, "t.toml").unwrap(), "t.toml")
    }

    #[test]
    fn each_runtime_table_is_read_into_its_type() {
        let c = read(
            r#"
[[tools]]
name = "lookup"
description = "Look an order up."
class = "orders"

[mcp_servers.clock]
command = "clock-server"

[gateway]
api_servers = 8
"#,
        )
        .unwrap();
        assert_eq!(c.tools.len(), 1);
        assert_eq!(c.tools[0].class, "orders");
        assert_eq!(c.mcp_servers.len(), 1);
        assert_eq!(c.mcp_servers[0].name, "clock");
        assert!(c.gateway.is_some());
        assert!(c.semantic.is_none() && c.dreaming.is_none());
        let env = c.environment();
        assert!(env.classes.contains("orders") && env.classes.contains("web_fetch"));
        assert!(env.servers.contains_key("clock"));
    }

    #[test]
    fn a_bad_table_is_refused_naming_the_file() {
        for text in [
            "[[tools]]\nname = \"x\"\n",
            "[mcp_servers.bad]\n",
            "[gateway]\nnonsense = 1\n",
            "[dreaming]\nmin_support = \"many\"\n",
            "[semantic]\nprovider = 7\n",
        ] {
            let e = read(text).expect_err(text).to_string();
            assert!(e.contains("t.toml"), "{text}: {e}");
        }
    }
}
