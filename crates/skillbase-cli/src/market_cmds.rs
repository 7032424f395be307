//! `export --marketplace DIR`: an agent's skills (or the shared ones) written as a Claude Code
//! plugin marketplace by `skillbase_sources::marketplace::export`.

use crate::EXIT_OK;
use crate::common::StoreArgs;
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_sources::marketplace::{self, Export, ExportSkill};
use skillbase_store::{AgentName, Scope, Status, StoreError};
use std::path::Path;

/// The names an exported marketplace is given.
#[derive(Args, Debug, Clone, Default)]
pub struct MarketNames {
    /// With --marketplace: the marketplace's name (default: skillbase-PLUGIN).
    #[arg(long = "marketplace-name", requires = "marketplace")]
    marketplace_name: Option<String>,
    /// With --marketplace: its owner's name (default: skillbase).
    #[arg(long, requires = "marketplace")]
    owner: Option<String>,
    /// With --marketplace: the plugin's name (default: the agent's name, or `shared`).
    #[arg(long, requires = "marketplace")]
    plugin: Option<String>,
}

/// Write the active skills `agent` sees (its allowlist over its own and the shared scope),
/// or every active shared skill, as a marketplace at `dir`.
pub async fn export_marketplace(
    s: &StoreArgs,
    agent: Option<&str>,
    dir: &Path,
    names: MarketNames,
) -> Result<u8> {
    let store = s.open().await?;
    let index = store.index();
    let (entries, plugin, whose) = match agent {
        Some(name) => {
            let name = AgentName::parse(name).map_err(|e| anyhow!("--agent: {e}"))?;
            let agent = store
                .agent_cached(&name)
                .ok_or_else(|| StoreError::AgentNotFound(name.to_string()))?;
            let entries = skillbase_runtime::visible(&agent, &index);
            (entries, name.to_string(), format!("agent {name}"))
        }
        None => {
            let entries = index
                .scope(&Scope::Shared)
                .filter(|e| e.status == Status::Active)
                .cloned()
                .collect();
            (
                entries,
                "shared".to_string(),
                "the shared scope".to_string(),
            )
        }
    };
    let mut skills = Vec::with_capacity(entries.len());
    for e in &entries {
        let (_, bundle) = store.bundle(&e.scope, &e.name, Some(e.active_rev)).await?;
        let signature = store
            .signature(&e.scope, &e.name, Some(e.active_rev))
            .await?;
        skills.push(ExportSkill {
            name: e.name.clone(),
            bundle,
            signature,
        });
    }
    let plugin = names.plugin.unwrap_or(plugin);
    let export = Export {
        marketplace: names
            .marketplace_name
            .unwrap_or_else(|| format!("skillbase-{plugin}")),
        owner: names.owner.unwrap_or_else(|| "skillbase".into()),
        description: format!("The skills of {whose}, exported from Skillbase"),
        plugin,
    };
    let done = marketplace::export(dir, &export, &skills)?;
    store.close().await;
    outln!(
        "wrote {} skill{} of {whose} to {} as the marketplace {} (plugin {}); add it with \
         `/plugin marketplace add {}`",
        done.skills.len(),
        if done.skills.len() == 1 { "" } else { "s" },
        done.dir.display(),
        export.marketplace,
        export.plugin,
        done.dir.display()
    )?;
    Ok(EXIT_OK)
}
