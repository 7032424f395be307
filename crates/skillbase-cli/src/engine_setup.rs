//! The engine a command runs: `--config`'s tools, semantic stage, dreaming and upstream MCP
//! servers on top of the store, and the environment skills' `requires:` are checked against.

use crate::common::StoreArgs;
use anyhow::{Result, anyhow};
use skillbase_runtime::VaultKey;
use skillbase_runtime::decls_from_tables;
use skillbase_runtime::{Engine, EngineBuilder};
use skillbase_store::Store;
use skillbase_store::config::Config;
use std::sync::Arc;

/// An engine with the configured tools, `web_fetch` and the vault; skill files go under
/// `workspace` (default: `$SKILLBASE_HOME/workspaces`). Upstream MCP servers of `--config` are
/// connected (waiting up to 30 s for each to answer or fail) before it is returned.
pub async fn engine(
    s: &StoreArgs,
    store: Arc<Store>,
    workspace: Option<std::path::PathBuf>,
) -> Result<Loaded> {
    let key = VaultKey::load(&skillbase_store::default_home())?;
    let workspace = workspace.unwrap_or_else(|| skillbase_store::default_home().join("workspaces"));
    let engine = Engine::builder()
        .store(store)
        .vault_key(key)
        .workspace(workspace)
        .web_fetch();
    let engine = configured(s, engine)?.build().await?;
    let g = engine.gateway();
    g.settled(std::time::Duration::from_secs(30)).await;
    for st in g.status() {
        if let Some(why) = &st.reason {
            eprintln!("upstream MCP server '{}' is not connected: {why}", st.name);
        }
    }
    Ok(Loaded { engine })
}

/// An engine for one command, and its upstream connections until
/// [`Loaded::finish`].
pub struct Loaded {
    engine: Engine,
}

impl std::ops::Deref for Loaded {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl Loaded {
    /// Store the events and stop the upstream servers (stdio ones exit).
    pub async fn finish(&self) {
        self.engine.gateway().shutdown().await;
        self.engine.flush().await;
    }

    /// The engine (its gateway, for `skillbase tools`).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

/// An engine builder with what `--config` declares beyond agents (which [`StoreArgs::open`]
/// applies): its tools and its semantic ranking stage.
pub fn configured(s: &StoreArgs, mut engine: EngineBuilder) -> Result<EngineBuilder> {
    if let Some(path) = &s.config {
        let config = Config::load(path)?;
        for decl in
            decls_from_tables(&config.tools).map_err(|e| anyhow!("{}: {e}", path.display()))?
        {
            engine = engine.declare(decl);
        }
        if let Some(table) = &config.semantic {
            let c = skillbase_runtime::SemanticConfig::from_table(table)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            engine = engine.semantic_config(c);
        }
        if let Some(t) = &config.dreaming {
            let c = skillbase_runtime::dream::model::DreamingConfig::from_table(t)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            engine = engine.dreaming(c);
        }
        if let Some(t) = &config.gateway {
            let settings = skillbase_runtime::GatewaySettings::from_table(t)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            engine = engine.gateway_settings(settings);
        }
        for server in
            skillbase_runtime::servers_from_table(&config.mcp_servers, config.folder.as_deref())
                .map_err(|e| anyhow!("{}: {e}", path.display()))?
        {
            engine = engine.mcp_server(server);
        }
    }
    Ok(engine)
}

/// What skills' `requires:` are checked against at import from the command line: the built-in
/// tools, `web_fetch` (every engine of the CLI and the server registers it), the tools
/// `--config` declares, and its upstream servers as configured (they are not connected here; a
/// running server checks them as connected, per agent).
pub fn configured_environment(s: &StoreArgs) -> Result<skillbase_runtime::Environment> {
    let mut env = skillbase_runtime::Environment::builtins();
    env.classes.insert(skillbase_runtime::WEB_FETCH.to_owned());
    if let Some(path) = &s.config {
        let config = Config::load(path)?;
        for decl in
            decls_from_tables(&config.tools).map_err(|e| anyhow!("{}: {e}", path.display()))?
        {
            env.classes.insert(decl.class);
        }
        for server in
            skillbase_runtime::servers_from_table(&config.mcp_servers, config.folder.as_deref())
                .map_err(|e| anyhow!("{}: {e}", path.display()))?
        {
            env.classes.insert(server.class.clone());
            env.servers
                .entry(server.name.clone())
                .or_default()
                .insert(server.class);
        }
    }
    Ok(env)
}
