//! `skillbase call`, `runs` and `approve`: the dispatch pipeline from the command line.

use crate::common::read_input;
use crate::engine_setup::engine;
use crate::store_cmds::{AuthorArg, StoreArgs, Target};
use crate::{EXIT_INVALID, EXIT_OK};
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Scope, Store};
use std::path::PathBuf;

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
    /// Sum the runs read per revision: runs, outcomes, failure rate, calls; with a cases file
    /// (`--cases`, or `[eval] cases` in --config), each revision's recall over the cases that
    /// expect the skill.
    #[arg(long)]
    by_revision: bool,
    /// Labelled cases (`skillbase eval`'s format) to measure each revision's recall with.
    #[arg(long, value_name = "FILE", requires = "by_revision")]
    cases: Option<PathBuf>,
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

pub async fn call(s: &StoreArgs, a: CallArgs) -> Result<u8> {
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let args: serde_json::Value =
        serde_json::from_str(&a.args).map_err(|e| anyhow!("ARGS_JSON is not valid JSON: {e}"))?;
    let store = s.open().await?;
    let d = engine(s, store.clone(), None).await?;
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
    d.finish().await;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?)?;
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
                outln!("{}", outcome.for_model())?;
            }
            CallOutcome::Started { call_id } => outln!("{call_id}: still running")?,
            CallOutcome::Authorized { call_id, tool } => {
                eprintln!("{call_id}: authorized");
                outln!(
                    "'{tool}' runs in the harness: post its result to /v1/sessions/{}/calls/{call_id}/result on a server",
                    a.session
                )?;
            }
            CallOutcome::Refused {
                call_id,
                rule,
                message,
            } => {
                eprintln!("{call_id}: refused by rule {}", rule.as_str());
                outln!("{message}")?;
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
                outln!("{message}")?;
            }
        }
    }
    store.close().await;
    Ok(match outcome {
        CallOutcome::Done { .. } | CallOutcome::Started { .. } | CallOutcome::Authorized { .. } => {
            EXIT_OK
        }
        _ => EXIT_INVALID,
    })
}

pub async fn runs(s: &StoreArgs, mut a: RunsArgs) -> Result<u8> {
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let runs = store.runs(&a.target.scope, &a.target.name, a.limit).await?;
    if a.by_revision {
        let by = skillbase_store::outcomes_by_revision(&runs);
        let recall = revision_recall(s, &store, &a, &by).await?;
        let staged = store
            .index()
            .get(&a.target.scope, &a.target.name)
            .and_then(|e| e.candidate.as_ref().map(|(c, _)| *c));
        if a.json {
            let rows: Vec<serde_json::Value> = by
                .iter()
                .map(|o| {
                    let mut v = serde_json::to_value(o).unwrap_or_default();
                    v["candidate"] = serde_json::json!(staged.is_some_and(|c| c.rev == o.rev));
                    if let Some(r) = recall
                        .as_ref()
                        .and_then(|r| r.iter().find(|r| r.rev == o.rev))
                    {
                        v["recall"] = serde_json::to_value(r).unwrap_or_default();
                    }
                    v
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        } else if by.is_empty() {
            eprintln!("no runs of {} yet", a.target.name);
        } else {
            out!("REV  RUNS  SUCCESS  FAILURE  OTHER  FAILURE RATE  CALLS (FAILED)")?;
            if let Some(r) = &recall {
                out!("  RECALL@5 ({} CASES)", r.first().map_or(0, |r| r.cases))?;
            }
            outln!()?;
            for o in &by {
                let rate = o
                    .failure_rate
                    .map_or("-".to_owned(), |r| format!("{:.0}%", r * 100.0));
                out!(
                    "{:<4} {:>4}  {:>7}  {:>7}  {:>5}  {:>12}  {} ({})",
                    o.rev,
                    o.runs,
                    o.success,
                    o.failure,
                    o.superseded + o.open,
                    rate,
                    o.calls,
                    o.failed_calls
                )?;
                if let Some(r) = recall
                    .as_ref()
                    .and_then(|r| r.iter().find(|r| r.rev == o.rev))
                {
                    out!("  {:.2}", r.recall_at_5)?;
                }
                if let Some(c) = staged.filter(|c| c.rev == o.rev) {
                    out!(
                        "  candidate: {}% of sessions, judged after {} runs",
                        c.percent,
                        c.min_runs
                    )?;
                }
                outln!()?;
            }
        }
        store.close().await;
        return Ok(EXIT_OK);
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&runs)?)?;
    } else if runs.is_empty() {
        eprintln!("no runs of {} yet", a.target.name);
    } else {
        for r in runs {
            outln!(
                "run {:<5} rev {:<3} {}  {:<10} calls {:>3} (failed {:>2})  {}  {}",
                r.id,
                r.rev,
                crate::store_cmds::format_time(r.started_at),
                r.outcome.as_deref().unwrap_or("running"),
                r.calls,
                r.failed_calls,
                r.session,
                r.note
            )?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// Each revision's recall over the configured cases (`--cases`, or `[eval] cases` of
/// --config), or `None` when no cases file is configured.
async fn revision_recall(
    s: &StoreArgs,
    store: &Store,
    a: &RunsArgs,
    by: &[skillbase_store::RevisionOutcomes],
) -> Result<Option<Vec<skillbase_insight::eval::RevisionRecall>>> {
    let settings = match &s.config {
        Some(p) => Config::load(p)?.eval,
        None => Default::default(),
    };
    let Some(path) = a.cases.clone().or(settings.cases) else {
        return Ok(None);
    };
    let text = read_input(&path)?;
    let cases = skillbase_insight::eval::parse_cases(&text)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    // The cases are routed in the view of `--agent` (default: `[eval] agent`, or the skill's
    // own agent for an agent's skill).
    let agent = match (&a.target.agent, &a.target.scope, settings.agent) {
        (Some(n), _, _) => AgentName::parse(n).map_err(|e| anyhow!("--agent: {e}"))?,
        (None, Scope::Agent(own), _) => own.clone(),
        (None, Scope::Shared, Some(n)) => AgentName::parse(&n).map_err(|e| anyhow!(e))?,
        (None, Scope::Shared, None) => {
            return Err(anyhow!(
                "a shared skill's recall is measured in an agent's view: give --agent NAME (or `agent` in [eval])"
            ));
        }
    };
    let Some(view_agent) = store.agent_cached(&agent) else {
        return Err(anyhow!("no agent '{agent}'"));
    };
    let revs: Vec<i64> = by.iter().map(|o| o.rev).collect();
    Ok(Some(
        skillbase_insight::eval::recall_by_revision(
            store,
            view_agent,
            &a.target.scope,
            &a.target.name,
            &revs,
            &cases,
        )
        .await?,
    ))
}

pub async fn approve(s: &StoreArgs, mut a: ApproveArgs) -> Result<u8> {
    let author = a.author.author()?;
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let o = crate::store_cmds::writer(s, &store)?
        .approve(&a.target.scope, &a.target.name, a.rev, &author)
        .await?;
    outln!(
        "{} ({}): revision {} approved and active",
        o.name,
        o.scope,
        o.rev
    )?;
    store.close().await;
    Ok(EXIT_OK)
}

/// List every tool: built-ins, `[[tools]]` entries and the tools of the upstream MCP servers
/// of `--config` (connected first), with source, class, status and the agents granted each.
#[derive(Args)]
pub struct ToolsArgs {
    /// Only the tools this agent is granted.
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    json: bool,
}

pub async fn tools(s: &StoreArgs, a: ToolsArgs) -> Result<u8> {
    let store = s.open().await?;
    let mut agents = store.agents().await?;
    if let Some(name) = &a.agent {
        let name = AgentName::parse(name).map_err(|e| anyhow!(e))?;
        agents.retain(|x| x.name == name);
        if agents.is_empty() {
            store.close().await;
            return Err(anyhow!("no agent '{name}' (see `skillbase agent list`)"));
        }
    }
    let d = engine(s, store.clone(), None).await?;
    let mut tools = d.tool_listing(&agents);
    if a.agent.is_some() {
        tools.retain(|t| !t.agents.is_empty());
    }
    let servers = d.engine().gateway().servers();
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"tools": tools, "servers": servers}))?
        )?;
    } else {
        let w = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
        let wc = tools
            .iter()
            .map(|t| t.class.len())
            .max()
            .unwrap_or(5)
            .max(5);
        outln!(
            "{:w$}  {:9}  {:wc$}  {:10}  AGENTS",
            "NAME",
            "SOURCE",
            "CLASS",
            "STATUS"
        )?;
        for t in &tools {
            let source = match &t.server {
                Some(s) => format!("mcp:{s}"),
                None if t.http => "http".to_owned(),
                None => t.source.to_owned(),
            };
            let agents = if t.agents.is_empty() {
                "-".to_owned()
            } else {
                t.agents.join(",")
            };
            outln!(
                "{:w$}  {:9}  {:wc$}  {:10}  {agents}",
                t.name,
                source,
                t.class,
                t.status
            )?;
        }
        for entry in &servers {
            let sv = &entry.status;
            let origin = match entry.origin {
                skillbase_runtime::ServerOrigin::File => "skillbase.toml",
                skillbase_runtime::ServerOrigin::Api => "the API",
            };
            outln!(
                "\nmcp server '{}' ({}, from {origin}): {:?}, {} tools{}{}",
                sv.name,
                sv.transport,
                sv.state,
                sv.tools,
                sv.server_info
                    .as_ref()
                    .map(|i| format!(", {i}"))
                    .unwrap_or_default(),
                sv.reason
                    .as_ref()
                    .map(|r| format!("\n  {r}"))
                    .unwrap_or_default()
            )?;
            for sk in &sv.skipped {
                outln!("  left out: {sk}")?;
            }
        }
    }
    d.finish().await;
    store.close().await;
    Ok(EXIT_OK)
}
