//! `skillbase sync`: an agent's skills written into another tool's skills folder
//! (`skillbase_sources::sync` does the work; this parses and prints).

use crate::store_cmds::StoreArgs;
use crate::{EXIT_INVALID, EXIT_OK};
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_sources::sync::{self, Action, Place, Plan, Report, SyncOptions, Target};
use skillbase_store::AgentName;
use std::path::PathBuf;

fn target_arg(s: &str) -> Result<Target, String> {
    Target::parse(s)
}

/// `skillbase sync`.
#[derive(Args, Debug)]
pub struct SyncArgs {
    /// The tool whose skills folder is written: claude-code, codex, gemini-cli, copilot,
    /// cursor or opencode.
    #[arg(long, value_parser = target_arg)]
    target: Target,
    /// Whose skills (the agent's view: its allowlist, its own scope over the shared one).
    /// Without it, every active skill of the shared scope.
    #[arg(long)]
    agent: Option<String>,
    /// The user's skills folder (under the home folder) instead of a project's.
    #[arg(long, conflicts_with = "project")]
    user: bool,
    /// The project whose skills folder is written (default: the current folder).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Keep following the store, syncing again whenever the agent's skills change.
    #[arg(long, conflicts_with = "check")]
    watch: bool,
    /// Write nothing; exit 1 when the folder differs from what sync would write.
    #[arg(long)]
    check: bool,
    /// Replace or remove folders sync wrote even when they were edited since (never a folder
    /// it did not write).
    #[arg(long)]
    force: bool,
}

pub async fn sync(s: &StoreArgs, a: SyncArgs) -> Result<u8> {
    let place = if a.user {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .ok_or_else(|| {
                anyhow!("HOME is not set, so there is no user skills folder; pass --project DIR")
            })?;
        Place::User(PathBuf::from(home))
    } else {
        Place::Project(a.project.clone().unwrap_or_else(|| PathBuf::from(".")))
    };
    let agent = a
        .agent
        .as_deref()
        .map(AgentName::parse)
        .transpose()
        .map_err(|m| anyhow!(m))?;
    let store = match &agent {
        Some(name) => {
            let n = name.clone();
            s.open_for_agent(name, move || {
                anyhow!("no agent named '{n}'; `skillbase agent list` shows them")
            })
            .await?
        }
        None => s.open().await?,
    };
    let opts = SyncOptions {
        target: a.target,
        place,
        agent,
        force: a.force,
        store_label: s.url()?.redacted(),
    };
    let code = if a.check {
        let plan = sync::plan(&store, &opts)?;
        print_plan(&plan, true)?;
        if plan.drifted() {
            EXIT_INVALID
        } else {
            EXIT_OK
        }
    } else if a.watch {
        let _w = sync::Watcher::start(
            store.clone(),
            opts,
            std::time::Duration::from_secs(1),
            |r| {
                if let Err(e) = r.map_err(anyhow::Error::from).and_then(print_report) {
                    eprintln!("Error: {e}");
                }
            },
        );
        eprintln!("watching the store; each change is synced within a second. Ctrl-C to stop.");
        tokio::signal::ctrl_c().await?;
        EXIT_OK
    } else {
        let report = sync::sync(&store, &opts).await?;
        print_report(report)?
    };
    store.close().await;
    Ok(code)
}

/// One line per folder that differs (or would); a summary line.
fn print_plan(plan: &Plan, check: bool) -> std::io::Result<()> {
    let verb = |now: &'static str, then: &'static str| if check { then } else { now };
    let mut in_sync = 0usize;
    for a in &plan.actions {
        let line = match a {
            Action::InSync(_) => {
                in_sync += 1;
                continue;
            }
            Action::Forget(_) => continue,
            Action::Create(w) => format!(
                "{} {} (revision {})",
                verb("created", "missing"),
                w.name,
                w.rev
            ),
            Action::Update {
                to,
                from_rev,
                forced,
            } => format!(
                "{} {} (revision {from_rev} -> {}{})",
                verb("updated", "outdated"),
                to.name,
                to.rev,
                if *forced {
                    ", hand edits overwritten"
                } else {
                    ""
                }
            ),
            Action::Remove { name, forced } => format!(
                "{} {name} (no longer among the agent's skills{})",
                verb("removed", "to remove"),
                if *forced {
                    ", hand edits discarded"
                } else {
                    ""
                }
            ),
            Action::Conflict { name, why, .. } => format!("conflict {name}: {why}"),
        };
        outln!("{line}")?;
    }
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    outln!(
        "{}: {} skill{} in sync{}",
        plan.folder.display(),
        in_sync,
        if in_sync == 1 { "" } else { "s" },
        if check && plan.drifted() {
            "; the folder differs from the store"
        } else {
            ""
        }
    )
}

fn print_report(r: Report) -> Result<u8> {
    for line in &r.recovered {
        eprintln!("recovered: {line}");
    }
    print_plan(&r.plan, false)?;
    for (name, why) in &r.failed {
        eprintln!("Error: {name}: {why}");
    }
    Ok(if r.failed.is_empty() && r.conflicts() == 0 {
        EXIT_OK
    } else {
        EXIT_INVALID
    })
}
