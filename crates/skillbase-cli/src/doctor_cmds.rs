//! `skillbase doctor`: the drift between prompts, agents and the catalog, with a code and a fix
//! for each finding. Exit 1 when any finding is an error.

use crate::store_cmds::{AuthorArg, MissingPath, StoreArgs};
use crate::{EXIT_INVALID, EXIT_OK};
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_format::text::escape_controls;
use skillbase_insight::doctor::{
    AdHocPrompt, DoctorOptions, DoctorReport, Finding, read_prompt_file,
};
use skillbase_runtime::RuntimeError;
use skillbase_store::{AgentName, StoreError};
use std::path::PathBuf;

/// Report the drift between prompts, agents and the catalog (exit 1 on any error finding).
#[derive(Args)]
pub struct DoctorArgs {
    /// Only this agent: its findings, and those of the skill records it holds.
    #[arg(long)]
    agent: Option<String>,
    /// Check this prompt file (the harness's instructions) for the agent given with --agent,
    /// instead of the whole store.
    #[arg(long, value_name = "FILE", requires = "agent")]
    prompt: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn doctor(s: &StoreArgs, a: DoctorArgs) -> Result<u8> {
    let agent = a
        .agent
        .as_deref()
        .map(AgentName::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    // The prompt is read before the store is opened: a bad one changes nothing.
    let prompt = match &a.prompt {
        Some(path) => {
            if !path.exists() {
                return Err(MissingPath(path.clone()).into());
            }
            let label = path.display().to_string();
            let text = read_prompt_file(path).map_err(|why| anyhow!("prompt {label} {why}"))?;
            Some(AdHocPrompt { label, text })
        }
        None => None,
    };
    let actor = AuthorArg { author: None }.author()?.to_string();
    let store = s.open().await?;
    let d = crate::engine_setup::engine(s, store.clone(), None).await?;
    let opts = DoctorOptions {
        agent,
        own_only: false,
        prompt,
        actor,
    };
    let report = skillbase_insight::doctor::run(&d, &opts)
        .await
        .map_err(|e| match e {
            // The store's error, for its hint (`skillbase agent create NAME`).
            RuntimeError::UnknownAgent(name) => StoreError::AgentNotFound(name).into(),
            e => anyhow::Error::from(e),
        })?;
    d.finish().await;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out!("{}", text(&report))?;
    }
    store.close().await;
    Ok(if report.has_errors() {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// Where a finding is: the agent, the skill record, the file and line.
fn location(f: &Finding) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &f.agent {
        parts.push(format!("agent {a}"));
    }
    if let Some(s) = &f.skill {
        match f.scope.as_deref() {
            Some(scope) if scope != "shared" => parts.push(format!("skill {s} ({scope})")),
            _ => parts.push(format!("skill {s}")),
        }
    }
    if let Some(file) = &f.file {
        parts.push(match f.line {
            Some(l) => format!("{file}:{l}"),
            None => file.clone(),
        });
    }
    parts.join(" · ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The report as text: each finding (severity, code, where; what; the fix), what could not be
/// checked, then the counts. Control characters are escaped (names and paths come from outside).
fn text(r: &DoctorReport) -> String {
    let mut out = String::new();
    for f in &r.findings {
        out.push_str(&format!(
            "{:<7} {}  {}\n  {}\n  fix: {}\n",
            f.severity.as_str(),
            f.code,
            escape_controls(&location(f)),
            escape_controls(&f.message),
            escape_controls(&f.fix)
        ));
    }
    for u in &r.unchecked {
        out.push_str(&format!("not checked: {}\n", escape_controls(u)));
    }
    let c = &r.counts;
    let found = if r.findings.is_empty() {
        "no findings".to_owned()
    } else {
        format!(
            "{}, {}, {}",
            plural(c.errors, "error", "errors"),
            plural(c.warnings, "warning", "warnings"),
            plural(c.infos, "info", "infos")
        )
    };
    let k = &r.checked;
    out.push_str(&format!(
        "{found} · checked {}, {}, {}, {}\n",
        plural(k.agents, "agent", "agents"),
        plural(k.skills, "skill", "skills"),
        plural(k.prompts, "prompt", "prompts"),
        plural(k.turns, "turn", "turns"),
    ));
    out
}
