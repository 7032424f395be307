//! `skillbase dream`: capture recurring procedures of an agent's sessions as skills, and print
//! the dream report (what was created with its evidence, what was rejected and why).

use crate::EXIT_OK;
use crate::store_cmds::{AuthorArg, StoreArgs};
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_format::text::escape_controls;
use skillbase_insight::dream::{DreamOptions, DreamReport};
use skillbase_runtime::RuntimeError;
use skillbase_store::{AgentName, StoreError};

/// Capture recurring procedures of the agents' sessions as skills (authored
/// `agent:<id>/dreaming`, active, or pending when the agent's review policy says so).
#[derive(Args)]
pub struct DreamArgs {
    /// Only this agent (default: every agent).
    #[arg(long)]
    agent: Option<String>,
    /// Only what happened in this last stretch of time: `30m`, `12h`, `7d`.
    #[arg(long, value_name = "AGE")]
    since: Option<String>,
    /// Report what would be created; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Distinct sessions a procedure must occur in (default: `[dreaming] min_support`, else 3).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=1000))]
    min_support: Option<u32>,
    /// Print the reports as JSON (with each skill's SKILL.md).
    #[arg(long)]
    json: bool,
}

pub async fn dream(s: &StoreArgs, a: DreamArgs) -> Result<u8> {
    let agent = a
        .agent
        .as_deref()
        .map(AgentName::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let since = match &a.since {
        Some(t) => {
            let d = skillbase_store::retention::parse_duration(t)
                .map_err(|e| anyhow!("--since: {e} (write e.g. 30m, 12h or 7d)"))?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            Some(now.saturating_sub(d).as_millis() as i64)
        }
        None => None,
    };
    let actor = AuthorArg { author: None }.author()?;
    let store = s.open().await?;
    let agents: Vec<AgentName> = match agent {
        Some(a) => vec![a],
        None => store.agents().await?.into_iter().map(|a| a.name).collect(),
    };
    let d = crate::engine_setup::engine(s, store.clone(), None).await?;
    d.flush().await;
    let min_support = a
        .min_support
        .map(|n| n as usize)
        .unwrap_or_else(|| d.dreaming().and_then(|c| c.min_support).unwrap_or(3));
    let opts = DreamOptions {
        since,
        dry_run: a.dry_run,
        min_support,
        actor,
        model: None,
    };
    let mut reports = Vec::new();
    for agent in &agents {
        let r = skillbase_insight::dream::run(&d, agent, &opts)
            .await
            .map_err(|e| match e {
                RuntimeError::UnknownAgent(name) => StoreError::AgentNotFound(name).into(),
                e => anyhow::Error::from(e),
            })?;
        reports.push(r);
    }
    d.finish().await;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&reports)?)?;
    } else {
        for r in &reports {
            out!("{}", text(r))?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// The report as text: a line per created skill with its evidence, then each rejected
/// candidate with why.
pub fn text(r: &DreamReport) -> String {
    // Names, steps and details come from recorded sessions: control characters are escaped.
    let e = |s: &str| escape_controls(s).into_owned();
    let list = |v: &[String], sep: &str| e(&v.join(sep));
    let mut out = format!(
        "dream for {}{}: {} sessions, {} calls read; procedures need {} sessions\n",
        e(&r.agent),
        if r.dry_run {
            " (dry run: nothing written)"
        } else {
            ""
        },
        r.sessions,
        r.calls,
        r.min_support
    );
    if r.created.is_empty() {
        out.push_str("  no skill created\n");
    }
    for l in &r.created {
        let rev = l.rev.map(|n| format!(" rev {n}")).unwrap_or_default();
        out.push_str(&format!(
            "  created {}{rev} ({}): {} steps, from {} sessions\n    steps: {}\n    sessions: {}\n    capabilities: {}\n",
            e(&l.name),
            l.status,
            l.steps.len(),
            l.evidence.support,
            list(&l.steps, " → "),
            list(&l.evidence.sessions, ", "),
            list(&l.capabilities, ", ")
        ));
        if !l.visible {
            out.push_str(&format!(
                "    not visible yet: agent {}'s allowlist does not name it (add it: skillbase agent set {} --skills ...)\n",
                e(&r.agent),
                e(&r.agent)
            ));
        }
    }
    for x in &r.drift_reverted {
        out.push_str(&format!(
            "  drift reverted {} from revision {} to {}: {}\n",
            e(&x.skill),
            x.from,
            x.to,
            e(&x.drift)
        ));
    }
    for x in &r.candidates {
        let state = match x.state {
            "staged" => format!(
                "staged for {}% of sessions, judged after {} runs of each revision",
                x.percent, x.min_runs
            ),
            other => format!("{other}: {}", e(&x.reason)),
        };
        out.push_str(&format!(
            "  candidate {} revision {}: {state}\n",
            e(&x.skill),
            x.rev
        ));
    }
    for x in &r.rejected {
        out.push_str(&format!(
            "  rejected ({}; {} sessions): {}\n    {}\n",
            x.reason,
            x.support,
            list(&x.steps, " → "),
            e(&x.detail)
        ));
    }
    out
}
