//! Commands over the store: authoring (put, revert, retire, ...), reading (list, show, history,
//! diff), agents, import and export.

use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use skillbase_sources::{Source, Sourced};
use skillbase_store::pack;
use skillbase_store::seed;
use skillbase_store::{
    AgentConfig, AgentName, Author, NameSet, PutRequest, Scope, SkillEntry, Status, StatusChange,
    Store, StoreError, WriteKind, WriteOutcome,
};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::common::{MissingPath, StoreArgs, report_seed};

fn scope_arg(s: &str) -> Result<Scope, String> {
    s.parse()
}

/// Which record a command addresses: by its scope (`--scope`), or as an agent resolves the
/// name (`--agent`: its own record if it has one, else the shared one), as `list --agent` lists.
/// The one way every record command names a scope.
#[derive(Args, Clone, Debug)]
pub struct Target {
    /// The skill's name.
    pub name: String,
    /// Scope of the record: `shared` (default) or `agent:<name>`.
    #[arg(long = "scope", value_parser = scope_arg, conflicts_with = "agent")]
    given: Option<Scope>,
    /// The record this agent resolves the name to (its own, else the shared one).
    #[arg(long)]
    pub agent: Option<String>,
    /// The scope addressed, once [`Target::resolve`] has read `--scope` or `--agent`.
    #[arg(skip = Scope::Shared)]
    pub scope: Scope,
}

impl Target {
    /// Settle [`Target::scope`]: `--scope`, or what `--agent` resolves the name to (an unknown
    /// agent is an error), else shared.
    pub fn resolve(&mut self, store: &Store) -> Result<()> {
        self.scope = match (&self.given, &self.agent) {
            (Some(s), _) => s.clone(),
            (None, None) => Scope::Shared,
            (None, Some(agent)) => {
                let agent = AgentName::parse(agent).map_err(|e| anyhow!("--agent: {e}"))?;
                if store.agent_cached(&agent).is_none() {
                    return Err(StoreError::AgentNotFound(agent.to_string()).into());
                }
                let own = Scope::Agent(agent);
                if store.index().get(&own, &self.name).is_some() {
                    own
                } else {
                    Scope::Shared
                }
            }
        };
        Ok(())
    }
}

/// Who is writing: `human:<id>` (default: human:$USER).
#[derive(Args, Clone, Debug)]
pub struct AuthorArg {
    #[arg(long, value_name = "AUTHOR")]
    pub author: Option<String>,
}

impl AuthorArg {
    pub fn author(&self) -> Result<Author> {
        match &self.author {
            Some(a) => a.parse().map_err(|e: String| anyhow!(e)),
            None => {
                let user = std::env::var("USER").unwrap_or_else(|_| "local".into());
                Ok(Author::Human(if user.is_empty() {
                    "local".into()
                } else {
                    user
                }))
            }
        }
    }
}

#[derive(Args)]
pub struct ListArgs {
    /// Only records in this scope.
    #[arg(long, value_parser = scope_arg, conflicts_with = "agent")]
    scope: Option<Scope>,
    /// What this agent resolves to (its own records override shared ones).
    #[arg(long)]
    agent: Option<String>,
    /// Include retired skills.
    #[arg(long)]
    all: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ShowArgs {
    #[command(flatten)]
    target: Target,
    /// A past revision (default: the active one).
    #[arg(long)]
    rev: Option<i64>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    target: Target,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct DiffArgs {
    #[command(flatten)]
    target: Target,
    /// The older revision.
    a: i64,
    /// The newer revision.
    b: i64,
}

#[derive(Args)]
pub struct PutArgs {
    /// A skill folder, or its SKILL.md.
    path: PathBuf,
    /// Scope to write into: `shared` or `agent:<name>`.
    #[arg(long, default_value = "shared", value_parser = scope_arg)]
    scope: Scope,
    /// Fail with a conflict unless the latest revision is N (0: the skill must be new).
    #[arg(long, value_name = "N")]
    expect_rev: Option<i64>,
    /// Why this revision exists.
    #[arg(long, short, default_value = "")]
    message: String,
    #[command(flatten)]
    author: AuthorArg,
}

#[derive(Args)]
pub struct RevertArgs {
    #[command(flatten)]
    target: Target,
    /// The revision to re-activate.
    rev: i64,
    #[command(flatten)]
    author: AuthorArg,
}

#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    author: AuthorArg,
}

#[derive(Args)]
pub struct ImportArgs {
    /// A skill folder, a folder of skills, a SKILL.md, a .zip of one or many skills, a Claude
    /// Code plugin marketplace (a folder holding .claude-plugin/marketplace.json), a git
    /// repository `git+URL[@ref][#subdir]` (https://, file://, git:// or ssh://; the commit read
    /// is recorded in the revisions' message), or GitHub shorthand `OWNER/REPO[/PATH][@REF]`
    /// (when no such local path exists; the base is $SKILLBASE_GIT_BASE, default
    /// https://github.com/).
    src: PathBuf,
    /// Of a marketplace, only this plugin's skills (repeat for more; default: every plugin).
    #[arg(long = "plugin", value_name = "NAME")]
    plugins: Vec<String>,
    /// Scope to import into. Into `agent:<name>`, the agent's allowlist becomes the imported skills.
    #[arg(long, default_value = "shared", value_parser = scope_arg)]
    scope: Scope,
    #[arg(long, short, default_value = "imported")]
    message: String,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    /// The skill's name (not with --marketplace).
    #[arg(required_unless_present = "marketplace")]
    name: Option<String>,
    /// Scope of the record: `shared` (default) or `agent:<name>`.
    #[arg(long = "scope", value_parser = scope_arg, conflicts_with_all = ["agent", "marketplace"])]
    scope: Option<Scope>,
    /// With a name, the record this agent resolves it to; with --marketplace, the agent whose
    /// skills are written (default: the shared skills).
    #[arg(long)]
    agent: Option<String>,
    /// A past revision (default: the active one).
    #[arg(long, conflicts_with = "marketplace")]
    rev: Option<i64>,
    /// A new folder, or a file ending in .zip.
    #[arg(
        long,
        required_unless_present = "marketplace",
        conflicts_with = "marketplace"
    )]
    out: Option<PathBuf>,
    /// Write the skills as a Claude Code plugin marketplace into this folder (new or empty).
    #[arg(long, value_name = "DIR", conflicts_with = "name")]
    marketplace: Option<PathBuf>,
    #[command(flatten)]
    names: crate::market_cmds::MarketNames,
}

#[derive(Args)]
pub struct WatchArgs {}

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Create an agent.
    Create(AgentEdit),
    /// Change an agent (only the options given).
    Set(AgentEdit),
    /// Show an agent's configuration.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// List agents.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct AgentEdit {
    name: String,
    /// Skills it may see: `all`, `none`, or comma-separated names.
    #[arg(long)]
    skills: Option<String>,
    /// Skills in its prompt every turn: `all`, `none`, or comma-separated names.
    #[arg(long)]
    eager: Option<String>,
    /// Granted tool classes, comma-separated.
    #[arg(long)]
    tools: Option<String>,
    /// Granted vault entry names, comma-separated.
    #[arg(long)]
    vault: Option<String>,
    /// Granted destination hosts, comma-separated.
    #[arg(long)]
    hosts: Option<String>,
    /// Tokens the level-1 catalog may use.
    #[arg(long)]
    catalog_budget: Option<u32>,
    /// Tokens the skill bodies injected in one turn may use.
    #[arg(long)]
    context_budget: Option<u32>,
    /// Consecutive failed runs before a skill revision is disabled.
    #[arg(long)]
    failure_threshold: Option<u32>,
    /// Require review before an agent-authored revision becomes active.
    #[arg(long)]
    review_agent_revisions: Option<bool>,
    /// Require review of skills declaring capabilities beyond the agent's grants.
    #[arg(long)]
    review_envelope_expansion: Option<bool>,
    /// Record each turn's user message (redacted) for `skillbase dream`.
    #[arg(long)]
    record_conversations: Option<bool>,
    /// What drift does: `disable` the skill, or `revert` to the newest earlier good revision.
    #[arg(long, value_parser = ["disable", "revert"])]
    on_drift: Option<String>,
    /// Stage the agent's new revisions of active skills as candidates, promoted only when
    /// their outcomes are not worse than the active revision's.
    #[arg(long)]
    stage_agent_revisions: Option<bool>,
    /// The share of sessions, in percent (1-100), a candidate is served to.
    #[arg(long)]
    candidate_percent: Option<u32>,
    /// Ended runs of the candidate and of the active revision before they are compared.
    #[arg(long)]
    candidate_min_runs: Option<u32>,
    /// A skill whose `requires:` are unmet for this agent: `offer` it with the reasons, or
    /// `withhold` it.
    #[arg(long, value_parser = ["offer", "withhold"])]
    unmet_requires: Option<String>,
    #[arg(long)]
    description: Option<String>,
    /// Prompt files of the harness (its instructions to this agent, which the doctor reads for
    /// skills they name), comma-separated; `none` for none. Relative paths are made absolute.
    #[arg(long)]
    prompts: Option<String>,
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_owned())
        .filter(|x| !x.is_empty())
        .collect()
}

impl AgentEdit {
    fn apply(&self, c: &mut AgentConfig) -> Result<()> {
        if let Some(s) = &self.skills {
            c.skills = s.parse::<NameSet>().map_err(|e| anyhow!("--skills: {e}"))?;
        }
        if let Some(s) = &self.eager {
            c.eager = s.parse::<NameSet>().map_err(|e| anyhow!("--eager: {e}"))?;
        }
        if let Some(s) = &self.tools {
            c.grants.tools = split_list(s);
        }
        if let Some(s) = &self.vault {
            c.grants.vault = split_list(s);
        }
        if let Some(s) = &self.hosts {
            // Checked (and lowercased) by the store, as every agent write is.
            c.grants.hosts = split_list(s);
        }
        if let Some(b) = self.catalog_budget {
            c.catalog_budget = b;
        }
        if let Some(b) = self.context_budget {
            c.context_budget = b;
        }
        if let Some(n) = self.failure_threshold {
            c.policies.failure_threshold = n;
        }
        if let Some(v) = self.review_agent_revisions {
            c.policies.review_agent_revisions = v;
        }
        if let Some(v) = self.review_envelope_expansion {
            c.policies.review_envelope_expansion = v;
        }
        if let Some(v) = self.record_conversations {
            c.policies.record_conversations = v;
        }
        if let Some(v) = &self.on_drift {
            c.policies.on_drift = if v == "revert" {
                skillbase_store::OnDrift::Revert
            } else {
                skillbase_store::OnDrift::Disable
            };
        }
        if let Some(v) = self.stage_agent_revisions {
            c.policies.stage_agent_revisions = v;
        }
        if let Some(v) = self.candidate_percent {
            c.policies.candidate_percent = v;
        }
        if let Some(v) = &self.unmet_requires {
            c.policies.unmet_requires = v
                .parse()
                .map_err(|e: String| anyhow!("--unmet-requires: {e}"))?;
        }
        if let Some(v) = self.candidate_min_runs {
            c.policies.candidate_min_runs = v;
        }
        if let Some(d) = &self.description {
            c.description = d.clone();
        }
        if let Some(p) = &self.prompts {
            c.prompts = if p.trim() == "none" {
                Vec::new()
            } else {
                split_list(p)
                    .into_iter()
                    .map(|f| {
                        std::path::absolute(&f)
                            .map(|p| skillbase_store::Prompt::Path(p.display().to_string()))
                            .map_err(|e| anyhow!("--prompts: {f}: {e}"))
                    })
                    .collect::<Result<_>>()?
            };
        }
        Ok(())
    }
}

/// The exit code for an error: 1 for invalid input or a refused write, 2 for usage.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<MissingPath>().is_some() {
        return EXIT_USAGE;
    }
    match e.downcast_ref::<StoreError>() {
        Some(StoreError::Open { .. } | StoreError::SchemaTooNew { .. }) => EXIT_USAGE,
        _ => EXIT_INVALID,
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// An error and its causes on one line, with control characters escaped (a hostile file or entry
/// name must not reach the terminal as escapes). A cause already quoted by the message before it
/// is left out: the store's errors include their source in their own text (`{e:#}` printed it
/// twice).
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = error_chain_text(e);
    if let Some(hint) = e.downcast_ref::<StoreError>().and_then(cli_hint) {
        text.push_str(" (");
        text.push_str(&hint);
        text.push(')');
    }
    skillbase_format::text::escape_controls(&text).into_owned()
}

/// The command that fixes a store error, for the CLI only: the store's own messages name no
/// command or flag, since they also reach models and REST clients.
fn cli_hint(e: &StoreError) -> Option<String> {
    match e {
        StoreError::Conflict { actual, .. } => Some(format!("pass --expect-rev {actual}")),
        StoreError::AgentNotFound(name) => Some(format!("skillbase agent create {name}")),
        StoreError::AgentExists(name) => Some(format!("skillbase agent set {name}")),
        StoreError::Retired { name }
        | StoreError::StatusRefused {
            name,
            why: skillbase_store::StatusRefusal::Retired,
        } => Some(format!("skillbase restore {name}")),
        _ => None,
    }
}

fn error_chain_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Run an async command to its end; its error is `main`'s to report.
pub fn block_on(f: impl std::future::Future<Output = Result<u8>>) -> Result<u8> {
    let rt = runtime();
    let out = rt.block_on(f);
    // Every command has finished its own work (and flushed what it writes) when its future
    // returns; background tasks still running (a cache being built, a watcher) must not hold
    // the process up.
    rt.shutdown_background();
    out
}

fn print_outcome(o: &WriteOutcome) -> std::io::Result<()> {
    let what = match o.kind {
        WriteKind::Created => format!("created revision {}", o.rev),
        WriteKind::Modified => format!("wrote revision {} (now active)", o.rev),
        WriteKind::Unchanged => format!(
            "unchanged (revision {} is already active, status {})",
            o.rev, o.status
        ),
        WriteKind::Pending => format!("wrote revision {} (pending approval)", o.rev),
        WriteKind::Candidate => format!(
            "staged revision {} as a candidate (the active revision stays until its runs are judged)",
            o.rev
        ),
        WriteKind::Reverted => format!("reverted to revision {} (now active)", o.rev),
        WriteKind::Status => format!("is now {} (revision {})", o.status, o.rev),
    };
    outln!("{} ({}): {what}", o.name, o.scope)?;
    for w in &o.warnings {
        eprintln!("{} ({}): warning: {w}", o.name, o.scope);
    }
    Ok(())
}

fn entry_json(e: &SkillEntry) -> serde_json::Value {
    serde_json::json!({
        "name": e.name,
        "scope": e.scope,
        "status": e.status,
        "rev": e.active_rev,
        "latest_rev": e.head_rev,
        "digest": e.digest,
        "author": e.author,
        "version": e.meta.version,
        "description": e.meta.description,
        "triggers": e.meta.triggers,
        "companions": e.meta.companions,
        "cost": e.meta.cost,
        "capabilities": e.meta.capabilities,
        "files": e.files,
        "seed_path": e.seed_path,
        "updated_at": e.updated_at,
    })
}

pub async fn list(s: &StoreArgs, a: ListArgs) -> Result<u8> {
    let store = s.open().await?;
    let index = store.index();
    let mut entries: Vec<&Arc<SkillEntry>> = match (&a.scope, &a.agent) {
        (_, Some(agent)) => {
            let agent = AgentName::parse(agent).map_err(|e| anyhow!(e))?;
            if store.agent_cached(&agent).is_none() {
                return Err(StoreError::AgentNotFound(agent.to_string()).into());
            }
            index.resolved_for(&agent)
        }
        (Some(scope), None) => index.scope(scope).collect(),
        (None, None) => index.all().collect(),
    };
    entries.retain(|e| a.all || e.status != Status::Retired);
    entries.sort_by(|x, y| (x.name.as_str(), &x.scope).cmp(&(y.name.as_str(), &y.scope)));
    if a.json {
        let v: Vec<_> = entries.iter().map(|e| entry_json(e)).collect();
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    } else if entries.is_empty() {
        eprintln!("No skills. Add one with `skillbase put PATH` or `skillbase import SRC`.");
    } else {
        let w = entries
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        outln!(
            "{:<w$}  {:<16}  {:>4}  {:<8}  DESCRIPTION",
            "NAME",
            "SCOPE",
            "REV",
            "STATUS"
        )?;
        for e in entries {
            let mut d: String = e.meta.description.chars().take(60).collect();
            if e.meta.description.chars().count() > 60 {
                d.push('…');
            }
            outln!(
                "{:<w$}  {:<16}  {:>4}  {:<8}  {}",
                e.name,
                e.scope.to_string(),
                e.active_rev,
                e.status.as_str(),
                d.replace('\n', " ")
            )?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// What `show` says of the skill beside a revision: the skill's status and the revision it
/// serves, worded so that it never reads as the state of the revision shown.
fn served_line(rev: i64, entry: Option<&skillbase_store::SkillEntry>) -> String {
    match entry {
        None => "skill: not in the index".to_owned(),
        Some(e) if e.active_rev == rev => {
            format!("skill: {}, serves this revision", e.status.as_str())
        }
        Some(e) => format!(
            "skill: {}, serves revision {} (not this one)",
            e.status.as_str(),
            e.active_rev
        ),
    }
}

pub async fn show(s: &StoreArgs, mut a: ShowArgs) -> Result<u8> {
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let t = &a.target;
    let (info, bundle) = store.bundle(&t.scope, &t.name, a.rev).await?;
    let entry = store.index().get(&t.scope, &t.name).cloned();
    let md = String::from_utf8_lossy(&bundle.skill_md().bytes).into_owned();
    let scan = store.latest_scan(&t.scope, &t.name, Some(info.rev)).await?;
    if a.json {
        let files: Vec<_> = bundle
            .files()
            .iter()
            .map(|f| serde_json::json!({"path": f.path, "digest": f.digest, "size": f.bytes.len(), "executable": f.executable}))
            .collect();
        let v = serde_json::json!({
            "name": t.name,
            "scope": t.scope,
            "status": entry.as_ref().map(|e| e.status),
            "revision": info,
            "bundle_digest": bundle.digest(),
            "files": files,
            "skill_md": md,
            "scan": scan,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        outln!(
            "{} ({}) revision {}{} by {}",
            t.name,
            t.scope,
            info.rev,
            if info.active { " [active]" } else { "" },
            info.author,
        )?;
        outln!("{}", served_line(info.rev, entry.as_deref()))?;
        if !info.message.is_empty() {
            outln!("message: {}", info.message)?;
        }
        if let Some(v) = &info.version {
            outln!("version: {v}")?;
        }
        outln!("digest:  {}", bundle.digest())?;
        print_scan(scan.as_ref())?;
        for f in bundle.files() {
            outln!(
                "  {:>8}  {}{}",
                f.bytes.len(),
                f.path,
                if f.executable { " *" } else { "" }
            )?;
        }
        outln!()?;
        out!("{md}")?;
        if !md.ends_with('\n') {
            outln!()?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// The scan line of `show`, and the findings when there are any.
fn print_scan(scan: Option<&skillbase_store::scan::ScanRecord>) -> std::io::Result<()> {
    let Some(s) = scan else {
        return outln!("scan:    never scanned (`skillbase scan --store` scans it)");
    };
    let verdict = s.verdict.map_or("clean", |v| v.as_str());
    outln!(
        "scan:    {verdict} ({} findings, on arrival: {})",
        s.findings.len(),
        s.action
    )?;
    for f in &s.findings {
        outln!(
            "  {}:{}: {} {}: {}",
            f.file,
            f.line,
            f.severity,
            f.rule,
            f.seen
        )?;
        outln!("      fix: {}", f.fix)?;
    }
    Ok(())
}

pub async fn history(s: &StoreArgs, mut a: HistoryArgs) -> Result<u8> {
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let h = store.history(&a.target.scope, &a.target.name).await?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&h)?)?;
    } else {
        for r in h.iter().rev() {
            outln!(
                "{} {:>4}  {}  {:<28}  {:<10}  {}  {}{}",
                if r.active { "*" } else { " " },
                r.rev,
                format_time(r.created_at),
                r.author,
                r.version.as_deref().unwrap_or("-"),
                short_digest(&r.digest),
                r.message,
                match &r.signer {
                    Some(s) => format!("  [signed by {s}]"),
                    None => String::new(),
                } + match r.state.as_str() {
                    "pending" => "  [pending approval]",
                    "candidate" => "  [candidate: served to a share of sessions, being judged]",
                    "rejected" => "  [candidate rejected]",
                    "superseded" => "  [candidate superseded]",
                    _ => "",
                }
            )?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// A digest shortened for a listing: `sha256:` and its first 12 hex digits (`--json` has it
/// whole).
fn short_digest(d: &str) -> &str {
    d.get(..19).unwrap_or(d)
}

/// UTC time from unix milliseconds, without a date library.
pub fn format_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub async fn diff(s: &StoreArgs, mut a: DiffArgs) -> Result<u8> {
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let d = store
        .diff(&a.target.scope, &a.target.name, a.a, a.b)
        .await?;
    if d.is_empty() {
        eprintln!("revisions {} and {} are identical", a.a, a.b);
    } else {
        out!("{d}")?;
    }
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn put(s: &StoreArgs, a: PutArgs) -> Result<u8> {
    let dir = if a.path.is_file() {
        a.path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            })
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        a.path.clone()
    };
    if !dir.exists() {
        eprintln!("Error: Path '{}' does not exist.", a.path.display());
        return Ok(EXIT_USAGE);
    }
    let author = a.author.author()?;
    let store = s.open().await?;
    // A signature beside SKILL.md is verified and kept (a person's put is not a trust source:
    // the trust policy covers imports, seeds and installs).
    let (bundle, signature) = pack::read_folder_signed(&dir, &store.limits)?;
    let writer = writer(s, &store)?;
    let o = writer
        .put(PutRequest {
            scope: a.scope,
            bundle,
            author,
            message: a.message,
            expect_rev: a.expect_rev,
            signature: signature.map(Box::new),
        })
        .await?;
    print_outcome(&o)?;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn revert(s: &StoreArgs, mut a: RevertArgs) -> Result<u8> {
    let author = a.author.author()?;
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let o = writer(s, &store)?
        .revert(&a.target.scope, &a.target.name, a.rev, &author)
        .await?;
    print_outcome(&o)?;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn set_status(s: &StoreArgs, mut a: StatusArgs, change: StatusChange) -> Result<u8> {
    let author = a.author.author()?;
    let store = s.open().await?;
    a.target.resolve(&store)?;
    let o = writer(s, &store)?
        .set_status(
            &a.target.scope,
            &a.target.name,
            change,
            &author,
            serde_json::Value::Null,
            None,
        )
        .await?;
    print_outcome(&o)?;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn import(s: &StoreArgs, a: ImportArgs) -> Result<u8> {
    let reader = s.reader()?;
    let source = Source::parse(&a.src, reader.git_base())?;
    if let Source::Path(p) = &source
        && !p.exists()
    {
        eprintln!("Error: Path '{}' does not exist.", a.src.display());
        return Ok(EXIT_USAGE);
    }
    let store = s.open().await?;
    let read = reader.read_plugins(&source, &a.plugins).await?;
    for note in &read.notes {
        eprintln!("note: {note}");
    }
    let message = match &read.commit {
        Some(commit) if a.message == "imported" => {
            format!("imported from {} at {commit}", a.src.display())
        }
        _ => a.message.clone(),
    };
    let signers = read.signers();
    let bundles: Vec<_> = read.skills.into_iter().map(Sourced::into_import).collect();
    let total = bundles.len();
    let bar = if std::io::stderr().is_terminal() && total > 20 && !a.json {
        let b = indicatif::ProgressBar::new(total as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "importing {bar:40} {pos}/{len} skills ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let report = writer(s, &store)?
        .import(
            &a.scope,
            bundles,
            &Author::Import(read.source),
            &message,
            &|n| bar.set_position(n as u64),
        )
        .await?;
    bar.finish_and_clear();
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        for o in &report.outcomes {
            print_outcome(o)?;
            if let Some(signer) = signers.get(&o.name) {
                outln!("  signed by {signer}")?;
            }
        }
        outln!(
            "imported {} skills into {}: {} created, {} changed, {} unchanged",
            total,
            a.scope,
            report.created.len(),
            report.changed.len(),
            report.unchanged.len()
        )?;
        if let Scope::Agent(agent) = &a.scope {
            outln!("agent {agent} now allows exactly these {total} skills")?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

/// The one write path of skills over `store`, its warnings checked against what `--config`
/// declares (its tools and upstream servers; none is connected here).
pub(crate) fn writer(s: &StoreArgs, store: &Arc<Store>) -> Result<skillbase_runtime::SkillWriter> {
    let env = crate::engine_setup::configured_environment(s)?;
    Ok(skillbase_runtime::SkillWriter::new(
        store.clone(),
        Arc::new(env),
    ))
}

pub async fn export(s: &StoreArgs, a: ExportArgs) -> Result<u8> {
    let (Some(name), Some(out)) = (a.name, a.out) else {
        let Some(dir) = a.marketplace else {
            return Err(anyhow!(
                "give a skill's NAME and --out, or --marketplace DIR"
            ));
        };
        return crate::market_cmds::export_marketplace(s, a.agent.as_deref(), &dir, a.names).await;
    };
    let mut target = Target {
        name,
        given: a.scope,
        agent: a.agent,
        scope: Scope::Shared,
    };
    let store = s.open().await?;
    target.resolve(&store)?;
    let (info, bundle) = store.bundle(&target.scope, &target.name, a.rev).await?;
    let sig = store
        .signature(&target.scope, &target.name, Some(info.rev))
        .await?;
    let out = pack::export_signed(&bundle, sig.as_ref(), &target.name, &out)?;
    outln!(
        "{} ({}) revision {} written to {} ({} file{}, {}{})",
        target.name,
        target.scope,
        info.rev,
        out.display(),
        bundle.files().len(),
        if bundle.files().len() == 1 { "" } else { "s" },
        info.version
            .as_deref()
            .map(|v| format!("version {v}, "))
            .unwrap_or_default(),
        bundle.digest()
    )?;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn watch(s: &StoreArgs, _a: WatchArgs) -> Result<u8> {
    if s.seed.is_empty() {
        eprintln!("Error: give at least one --seed DIR to watch");
        return Ok(EXIT_USAGE);
    }
    let store = s.open().await?;
    let _w = seed::SeedWatcher::start(store.clone(), s.seed.clone(), report_seed)?;
    eprintln!(
        "watching {} seed folder(s); edits are synced within a second. Ctrl-C to stop.",
        s.seed.len()
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn agent(s: &StoreArgs, cmd: AgentCmd) -> Result<u8> {
    let store = s.open().await?;
    let code = match cmd {
        AgentCmd::Create(e) => {
            let name = AgentName::parse(&e.name).map_err(|m| anyhow!(m))?;
            let mut c = AgentConfig::default();
            e.apply(&mut c)?;
            let v = store.create_agent(&name, &c).await?;
            outln!("agent {name} created (version {v})")?;
            EXIT_OK
        }
        AgentCmd::Set(e) => {
            let name = AgentName::parse(&e.name).map_err(|m| anyhow!(m))?;
            let mut c = store
                .agent(&name)
                .await?
                .ok_or_else(|| StoreError::AgentNotFound(name.to_string()))?
                .config;
            e.apply(&mut c)?;
            let v = store.set_agent(&name, &c).await?;
            outln!("agent {name} updated (version {v})")?;
            EXIT_OK
        }
        AgentCmd::Show { name, json } => {
            let name = AgentName::parse(&name).map_err(|m| anyhow!(m))?;
            let a = store
                .agent(&name)
                .await?
                .ok_or_else(|| StoreError::AgentNotFound(name.to_string()))?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&a)?)?;
            } else {
                out!("{}", toml::to_string_pretty(&a.config).unwrap_or_default())?;
                outln!("# version {}", a.version)?;
            }
            EXIT_OK
        }
        AgentCmd::List { json } => {
            let agents = store.agents().await?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&agents)?)?;
            } else if agents.is_empty() {
                eprintln!("No agents. Create one with `skillbase agent create NAME --skills all`.");
            } else {
                for a in agents {
                    let skills = match &a.config.skills {
                        NameSet::All => "all skills".to_owned(),
                        NameSet::None => "no skills".to_owned(),
                        NameSet::Names(n) => format!("{} skills", n.len()),
                    };
                    outln!(
                        "{:<24} {skills:<12} v{}  {}",
                        a.name.as_str(),
                        a.version,
                        a.config.description
                    )?;
                }
            }
            EXIT_OK
        }
    };
    store.close().await;
    Ok(code)
}
