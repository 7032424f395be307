//! `skillbase call`, `runs` and `approve`: the dispatch pipeline from the command line.

use crate::store_cmds::{AuthorArg, StoreArgs, Target};
use crate::{EXIT_INVALID, EXIT_OK};
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_runtime::dispatch::{CallMode, CallOutcome, Dispatcher};
use skillbase_runtime::tool::decls_from_tables;
use skillbase_runtime::vault::VaultKey;
use skillbase_runtime::{Engine, EngineBuilder};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Store};
use std::sync::Arc;

/// Dispatch one call as the agent would, through every stage of the pipeline.
#[derive(Args)]
pub struct CallArgs {
    #[arg(long)]
    agent: String,
    #[arg(long)]
    session: String,
    /// The tool or skill entry's wire name (as offered).
    name: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Start a slow call apart and print its call id, then wait for its result.
    #[arg(long)]
    detach: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct RunsArgs {
    #[command(flatten)]
    target: Target,
    #[arg(long, default_value_t = 20)]
    limit: i64,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    target: Target,
    /// The pending revision to approve.
    rev: i64,
    #[command(flatten)]
    author: AuthorArg,
}

/// The dispatcher over the store, with the vault and the configured tools.
/// A dispatcher with the configured tools, `web_fetch` and the vault; skill files go under
/// `workspace` (default: `$SKILLBASE_HOME/workspaces`).
pub async fn dispatcher(
    s: &StoreArgs,
    store: Arc<Store>,
    workspace: Option<std::path::PathBuf>,
) -> Result<Arc<Dispatcher>> {
    let key = VaultKey::load(&skillbase_store::default_home())?;
    let workspace = workspace.unwrap_or_else(|| skillbase_store::default_home().join("workspaces"));
    let engine = Engine::builder()
        .store(store)
        .vault_key(key)
        .workspace(workspace)
        .web_fetch();
    Ok(configured(s, engine)?.build().await?.dispatcher().clone())
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
            let c = skillbase_runtime::semantic::SemanticConfig::from_table(table)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            engine = engine.semantic_config(c);
        }
    }
    Ok(engine)
}

pub async fn call(s: &StoreArgs, a: CallArgs) -> Result<u8> {
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let args: serde_json::Value =
        serde_json::from_str(&a.args).map_err(|e| anyhow!("ARGS_JSON is not valid JSON: {e}"))?;
    let store = s.open().await?;
    let d = dispatcher(s, store.clone(), None).await?;
    let mode = if a.detach {
        CallMode::Detach
    } else {
        CallMode::Wait
    };
    let mut outcome = d.call(&agent, &a.session, &a.name, args, mode).await?;
    if let CallOutcome::Started { call_id } = &outcome {
        eprintln!("started as {call_id}; waiting for its result event");
        if let Some(o) = d.wait(call_id, std::time::Duration::from_secs(300)).await {
            outcome = o;
        }
    }
    d.flush().await;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        match &outcome {
            CallOutcome::Done {
                call_id,
                tokens,
                truncated,
                ..
            } => {
                eprintln!(
                    "{call_id}: done ({tokens} tokens{})",
                    if *truncated { ", truncated" } else { "" }
                );
                println!("{}", outcome.for_model());
            }
            CallOutcome::Started { call_id } => println!("{call_id}: still running"),
            CallOutcome::Refused {
                call_id,
                rule,
                message,
            } => {
                eprintln!("{call_id}: refused by rule {}", rule.as_str());
                println!("{message}");
            }
            CallOutcome::Failed {
                call_id,
                message,
                rule,
                ..
            } => {
                eprintln!(
                    "{call_id}: failed{}",
                    rule.map(|r| format!(" (rule {})", r.as_str()))
                        .unwrap_or_default()
                );
                println!("{message}");
            }
        }
    }
    store.close().await;
    Ok(match outcome {
        CallOutcome::Done { .. } | CallOutcome::Started { .. } => EXIT_OK,
        _ => EXIT_INVALID,
    })
}

pub async fn runs(s: &StoreArgs, a: RunsArgs) -> Result<u8> {
    let store = s.open().await?;
    let runs = store.runs(&a.target.scope, &a.target.name, a.limit).await?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else if runs.is_empty() {
        eprintln!("no runs of {} yet", a.target.name);
    } else {
        for r in runs {
            println!(
                "run {:<5} rev {:<3} {}  {:<10} calls {:>3} (failed {:>2})  {}  {}",
                r.id,
                r.rev,
                crate::store_cmds::format_time(r.started_at),
                r.outcome.as_deref().unwrap_or("running"),
                r.calls,
                r.failed_calls,
                r.session,
                r.note
            );
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn approve(s: &StoreArgs, a: ApproveArgs) -> Result<u8> {
    let author = a.author.author()?;
    let store = s.open().await?;
    let o = store
        .approve(&a.target.scope, &a.target.name, a.rev, &author)
        .await?;
    println!(
        "{} ({}): revision {} approved and active",
        o.name, o.scope, o.rev
    );
    store.close().await;
    Ok(EXIT_OK)
}
