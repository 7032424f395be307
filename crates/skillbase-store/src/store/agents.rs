//! Agents: their configurations, and the in-memory cache of them.

use super::Store;
use crate::error::{Result, StoreError};
use crate::model::{Agent, AgentConfig, AgentName};
use std::sync::Arc;

impl Store {
    /// An agent.
    pub async fn agent(&self, name: &AgentName) -> Result<Option<Agent>> {
        Ok(self.agents().await?.into_iter().find(|a| a.name == *name))
    }

    /// Every agent, by name.
    pub async fn agents(&self) -> Result<Vec<Agent>> {
        let rows = on_db!(self, agents::agents())?;
        rows.into_iter()
            .map(|(name, config, version)| {
                Ok(Agent {
                    name: AgentName::parse(&name).map_err(StoreError::Corrupt)?,
                    config: serde_json::from_str(&config)
                        .map_err(|e| StoreError::Corrupt(format!("agent '{name}': {e}")))?,
                    version,
                })
            })
            .collect()
    }

    /// Create an agent (fails if it exists).
    pub async fn create_agent(&self, name: &AgentName, config: &AgentConfig) -> Result<i64> {
        let config = &config
            .clone()
            .checked()
            .map_err(|e| StoreError::InvalidAgent(format!("agent '{name}': {e}")))?;
        let v = on_db!(self, agents::upsert_agent(name, config, true))?;
        self.agents_committed().await;
        Ok(v)
    }

    /// Create or replace an agent's configuration.
    pub async fn set_agent(&self, name: &AgentName, config: &AgentConfig) -> Result<i64> {
        let config = &config
            .clone()
            .checked()
            .map_err(|e| StoreError::InvalidAgent(format!("agent '{name}': {e}")))?;
        let v = on_db!(self, agents::upsert_agent(name, config, false))?;
        self.agents_committed().await;
        Ok(v)
    }

    /// An agent from the in-memory cache (no database round trip).
    pub fn agent_cached(&self, name: &AgentName) -> Option<Arc<Agent>> {
        self.agent_cache.load().get(name).cloned()
    }

    /// Refresh the cache after a committed agent write; a failure to read back (a storage
    /// fault) is logged, not answered: the write is done, and `sync_changes` re-reads it.
    pub(super) async fn agents_committed(&self) {
        if let Err(e) = self.refresh_agents().await {
            tracing::warn!(error = %e, "a committed agent write is not in the cache yet");
        }
    }

    pub(super) async fn refresh_agents(&self) -> Result<()> {
        // One refresh at a time, each reading after the one before it stored: a refresh that
        // read before a write committed can never store its older list over a newer one (the
        // sync loop's and a writer's refresh race otherwise, and an agent just created vanishes
        // from the cache until the next sync).
        let _one = self.agents_lock.lock().await;
        let all = self.agents().await?;
        self.agent_cache.store(Arc::new(
            all.into_iter()
                .map(|a| (a.name.clone(), Arc::new(a)))
                .collect(),
        ));
        self.changed.send_modify(|g| *g += 1);
        Ok(())
    }
}
