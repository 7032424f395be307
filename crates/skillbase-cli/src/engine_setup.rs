//! The engine a command runs: `--config`'s tools, semantic stage, dreaming and upstream MCP
//! servers on top of the store, and the environment skills' `requires:` are checked against.

use crate::common::StoreArgs;
use anyhow::Result;
use skillbase_runtime::VaultKey;
use skillbase_runtime::{Engine, EngineBuilder, RuntimeConfig};
use skillbase_store::Store;
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
/// applies): its tools, servers, gateway settings, dreaming and semantic ranking stage.
pub fn configured(s: &StoreArgs, engine: EngineBuilder) -> Result<EngineBuilder> {
    Ok(match &s.config {
        Some(path) => {
            let (_, c) = RuntimeConfig::load(path)?;
            engine.runtime_config(c, path.display().to_string())
        }
        None => engine,
    })
}

/// What skills' `requires:` are checked against at import from the command line (see
/// [`RuntimeConfig::environment`]).
pub fn configured_environment(s: &StoreArgs) -> Result<skillbase_runtime::Environment> {
    Ok(match &s.config {
        Some(path) => RuntimeConfig::load(path)?.1.environment(),
        None => RuntimeConfig::default().environment(),
    })
}
