//! `skillbase usage [NAME]`: a skill's usage, or the library's, from the store's aggregates.

use crate::EXIT_OK;
use crate::store_cmds::StoreArgs;
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_store::AgentName;
use skillbase_store::usage::{ByReason, LibraryUsage, SkillUsage, parse_since, today};

/// Which skills fire, for whom and by which path, how their runs fare, what their bodies cost;
/// without NAME, every skill's totals and the never-used skills.
#[derive(Args)]
pub struct UsageArgs {
    /// One skill (by name, every scope); without it, the library.
    name: Option<String>,
    /// Only this agent's figures.
    #[arg(long)]
    agent: Option<String>,
    /// The window's first day: a date (2026-01-31, UTC) or days back (30d).
    #[arg(long, default_value = "30d")]
    since: String,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn usage(s: &StoreArgs, a: UsageArgs) -> Result<u8> {
    // Arguments are checked before the database is opened.
    let since = parse_since(&a.since, today()).map_err(|e| anyhow!("--{e}"))?;
    let agent = match &a.agent {
        Some(raw) => Some(AgentName::parse(raw).map_err(|e| anyhow!("--agent: {e}"))?),
        None => None,
    };
    let agent = agent.as_ref().map(AgentName::as_str);
    let store = s.open().await?;
    match &a.name {
        Some(name) => {
            let u = store.skill_usage(name, agent, since).await?;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&u)?)?;
            } else {
                print_skill(&u, agent)?;
            }
        }
        None => {
            let u = store.library_usage(agent, since).await?;
            if a.json {
                outln!("{}", serde_json::to_string_pretty(&u)?)?;
            } else {
                print_library(&u)?;
            }
        }
    }
    Ok(EXIT_OK)
}

fn reasons(r: &ByReason) -> String {
    format!(
        "eager {}, trigger {}, path {}, explicit {}, load {}, companion {}, other {}",
        r.eager, r.trigger, r.path, r.explicit, r.load, r.companion, r.other
    )
}

fn print_skill(u: &SkillUsage, agent: Option<&str>) -> std::io::Result<()> {
    outln!(
        "{} since {} ({})",
        u.skill,
        u.since,
        agent.map_or("every agent".to_owned(), |a| format!("agent {a}"))
    )?;
    outln!(
        "activations   {} ({})",
        u.activations.total(),
        reasons(&u.activations)
    )?;
    outln!(
        "listed        in full {}, by name only {}, left out {} (approximate)",
        u.listed.full,
        u.listed.name_only,
        u.listed.left_out
    )?;
    outln!("body tokens   {}", u.body_tokens)?;
    outln!(
        "runs          success {}, failure {}, other {}; unfollowed {}; drift-disabled {}",
        u.runs.success,
        u.runs.failure,
        u.runs.other,
        u.unfollowed,
        u.drift_disabled
    )?;
    outln!(
        "last used     {}",
        u.last_used.as_deref().unwrap_or("never")
    )?;
    if !u.agents.is_empty() {
        outln!(
            "\nAGENT                TURNS  ACTIVATIONS  FULL  NAME-ONLY  LEFT-OUT  TOKENS  SUCCESS  FAILURE  UNFOLLOWED  LAST USED"
        )?;
        for a in &u.agents {
            outln!(
                "{:<20} {:>5}  {:>11}  {:>4}  {:>9}  {:>8}  {:>6}  {:>7}  {:>7}  {:>10}  {}",
                if a.agent.is_empty() { "-" } else { &a.agent },
                a.turns,
                a.activations.total(),
                a.listed.full,
                a.listed.name_only,
                a.listed.left_out,
                a.body_tokens,
                a.runs.success,
                a.runs.failure,
                a.unfollowed,
                a.last_used.as_deref().unwrap_or("never")
            )?;
        }
    }
    if !u.revisions.is_empty() {
        outln!("\nREV  ACTIVATIONS  SUCCESS  FAILURE  OTHER  UNFOLLOWED  DRIFT-DISABLED")?;
        for r in &u.revisions {
            outln!(
                "{:<4} {:>11}  {:>7}  {:>7}  {:>5}  {:>10}  {:>14}",
                r.rev,
                r.activations,
                r.runs.success,
                r.runs.failure,
                r.runs.other,
                r.unfollowed,
                r.drift_disabled
            )?;
        }
    }
    if !u.days.is_empty() {
        outln!("\nDAY         ACTIVATIONS")?;
        for d in &u.days {
            outln!(
                "{}  {:>11}  ({})",
                d.day,
                d.activations.total(),
                reasons(&d.activations)
            )?;
        }
    }
    outln!("\nnote: {}", u.approximate)
}

fn print_library(u: &LibraryUsage) -> std::io::Result<()> {
    outln!(
        "usage since {} ({})",
        u.since,
        u.agent
            .as_deref()
            .map_or("every agent".to_owned(), |a| format!("agent {a}"))
    )?;
    if u.skills.is_empty() {
        outln!("no skill was used in this window")?;
    } else {
        outln!(
            "SKILL                          ACTIVATIONS  TOKENS  SUCCESS  FAILURE  UNFOLLOWED  DRIFT-DISABLED"
        )?;
        for s in &u.skills {
            outln!(
                "{:<30} {:>11}  {:>6}  {:>7}  {:>7}  {:>10}  {:>14}",
                s.skill,
                s.activations,
                s.body_tokens,
                s.runs.success,
                s.runs.failure,
                s.unfollowed,
                s.drift_disabled
            )?;
        }
    }
    outln!("\nnever used since {}: {}", u.since, u.never_used.len())?;
    for n in &u.never_used {
        outln!(
            "  {}/{} (last used {})",
            n.scope,
            n.name,
            n.last_used.as_deref().unwrap_or("never")
        )?;
    }
    Ok(())
}
