//! `skillbase gc`: apply the retention policy of `skillbase.toml` once.

use crate::EXIT_OK;
use crate::store_cmds::StoreArgs;
use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_store::config::Config;

/// Remove what the `[retention]` policy of the --config file names: calls, turns and
/// activations older or beyond its limits, and ended sessions. Revisions, authoring and
/// security events are never removed; what was removed is recorded as an `events_trimmed` event.
#[derive(Args)]
pub struct GcArgs {
    /// Print what was removed as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn gc(s: &StoreArgs, a: GcArgs) -> Result<u8> {
    // The policy is read and checked before the database is opened: bad input changes nothing.
    let Some(path) = &s.config else {
        return Err(anyhow!(
            "no retention policy: write a [retention] table in skillbase.toml and pass it with --config FILE (or SKILLBASE_CONFIG)"
        ));
    };
    if !path.exists() {
        return Err(crate::store_cmds::MissingPath(path.clone()).into());
    }
    let policy = Config::load(path)?.retention.ok_or_else(|| {
        anyhow!(
            "{}: no [retention] table; add one, e.g. events_max_age = \"30d\"",
            path.display()
        )
    })?;
    if policy.is_empty() {
        return Err(anyhow!(
            "{}: [retention] sets no limit; set events_max_age, events_max_size or sessions_max_age",
            path.display()
        ));
    }
    let store = s.open().await?;
    let report = store.apply_retention(&policy, None).await?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else if report.is_empty() {
        outln!("nothing to remove")?;
    } else {
        let kinds: Vec<String> = report
            .events
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        outln!(
            "removed {} events ({}), {} sessions ({} activations); recorded as events_trimmed",
            report.events_total(),
            kinds.join(", "),
            report.sessions,
            report.activations
        )?;
    }
    store.close().await;
    Ok(EXIT_OK)
}
