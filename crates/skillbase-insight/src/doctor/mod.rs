//! The doctor: the drift between prompts, agents and the catalog, found before users find it.
//!
//! The routing table is generated, so what the doctor reports is the residue a generator cannot
//! remove: a prompt naming a skill the agent may not load, a shared body naming one of its
//! holders, a companion that cannot travel, an `eager:` key, grants a skill's calls will be
//! refused for, triggers that collide or fire on everything, a catalog that overflows, a
//! revision disabled for drift, a secret at rest, near-duplicates, requirements an agent cannot
//! meet, a skill served with a high scan finding or never scanned. Every check takes mechanical
//! inputs only — names, allowlists, agent identities, declared keys, recorded turn events — so a
//! finding is a fact, never a guess: one false positive is enough for an operator to stop reading.
//!
//! [`run`] gathers the inputs through the engine (the store, each agent's view, prompt files,
//! recent `turn` events, the vault's names and values, the tool classes registered) and
//! `checks` makes the findings from them, purely. Each finding has a stable [`Code`] (`D001`…),
//! documented in the README. Every run records one `doctor` event.

mod checks;
mod names;

use serde::{Deserialize, Serialize};
use skillbase_runtime::event::{Omitted, StatusChanged, TurnRecord};
use skillbase_runtime::{AgentView, Engine, NAME_ONLY, NOT_LISTED, RuntimeError};
use skillbase_store::model::MAX_PROMPT_BYTES;
use skillbase_store::{
    Agent, AgentName, EventFilter, EventKind, Index, NewEvent, Prompt, Scope, Status, StoredMatch,
};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

pub use checks::{MIN_TURNS, NEAR_DUPLICATE, RECENT_TURNS};

type Result<T> = std::result::Result<T, RuntimeError>;

/// A finding's stable code: what it checks is documented in the README, one section per code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = DoctorCode))]
pub enum Code {
    /// A prompt names a skill outside the agent's allowlist.
    D001,
    /// A shared skill's body names one of its own holders.
    D002,
    /// A body names another catalog skill without declaring it a companion.
    D003,
    /// A declared companion is one the agent cannot load.
    D004,
    /// A skill still declares `eager:` in its frontmatter.
    D005,
    /// An agent marks eager a skill it does not allow.
    D006,
    /// A seed folder diverged from the store.
    D007,
    /// A skill declares what the agent is not granted, or a vault entry or tool class that does
    /// not exist.
    D008,
    /// Two skills an agent sees share a trigger, or a trigger fires on most recent turns.
    D009,
    /// An agent's catalog overflows its budget on most recent turns.
    D010,
    /// A revision disabled for drift and not reviewed, or one waiting for approval.
    D011,
    /// A stored revision holds the value of a current vault entry.
    D012,
    /// Two skills an agent sees are near-duplicates.
    D013,
    /// A skill's `requires:` are unmet for an agent (it is offered anyway, or withheld).
    D014,
    /// A skill's active revision has high or critical scan findings, or was never scanned.
    D015,
}

impl Code {
    /// Every code, in order.
    pub const ALL: [Code; 15] = [
        Code::D001,
        Code::D002,
        Code::D003,
        Code::D004,
        Code::D005,
        Code::D006,
        Code::D007,
        Code::D008,
        Code::D009,
        Code::D010,
        Code::D011,
        Code::D012,
        Code::D013,
        Code::D014,
        Code::D015,
    ];

    /// `D001`…`D015`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::D001 => "D001",
            Code::D002 => "D002",
            Code::D003 => "D003",
            Code::D004 => "D004",
            Code::D005 => "D005",
            Code::D006 => "D006",
            Code::D007 => "D007",
            Code::D008 => "D008",
            Code::D009 => "D009",
            Code::D010 => "D010",
            Code::D011 => "D011",
            Code::D012 => "D012",
            Code::D013 => "D013",
            Code::D014 => "D014",
            Code::D015 => "D015",
        }
    }

    /// What the code checks, in one line.
    pub fn title(self) -> &'static str {
        match self {
            Code::D001 => "a prompt names a skill outside the agent's allowlist",
            Code::D002 => "a shared skill's body names one of its own holders",
            Code::D003 => "a body names another catalog skill it does not declare a companion",
            Code::D004 => "a declared companion the agent cannot load",
            Code::D005 => "a skill declares `eager:` in its frontmatter",
            Code::D006 => "an agent marks eager a skill it does not allow",
            Code::D007 => "a seed folder diverged from the store",
            Code::D008 => {
                "a skill declares what the agent is not granted, or a vault entry or tool class that does not exist"
            }
            Code::D009 => "a trigger shared by two skills, or firing on most recent turns",
            Code::D010 => "the catalog overflows its budget on most recent turns",
            Code::D011 => "a revision disabled for drift, or waiting for approval",
            Code::D012 => "a stored revision holds the value of a current vault entry",
            Code::D013 => "two skills an agent sees are near-duplicates",
            Code::D014 => "a skill's `requires:` are unmet for an agent",
            Code::D015 => "a skill with high or critical scan findings, or never scanned",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// How much a finding matters: an error breaks something now (a call refused, a name the model
/// cannot load, a secret at rest); a warning is drift that will; info is worth knowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = DoctorSeverity))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something is broken now; `skillbase doctor` exits 1.
    Error,
    /// Drift that will break something.
    Warning,
    /// Worth knowing.
    Info,
}

impl Severity {
    /// `error`, `warning`, `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One finding: what is wrong, where, and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = DoctorFinding))]
pub struct Finding {
    /// The stable code.
    pub code: Code,
    /// How much it matters.
    pub severity: Severity,
    /// The agent it concerns, when it concerns one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub agent: Option<String>,
    /// The skill it concerns, when it concerns one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub skill: Option<String>,
    /// The scope of that skill's record (`shared` or `agent:<name>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub scope: Option<String>,
    /// The file it concerns: `SKILL.md` of the skill, a prompt's path or `prompts[N]` for an
    /// inline one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub file: Option<String>,
    /// The 1-based line in that file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false, minimum = 1))]
    pub line: Option<u32>,
    /// The other name the finding is about: the skill a text names (D001, D003), the companion
    /// (D004), the eager name (D006), the other skill (D009, D013), the trigger phrase.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub related: Option<String>,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

/// Findings by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = DoctorCounts))]
pub struct Counts {
    /// Findings of severity error.
    pub errors: usize,
    /// Findings of severity warning.
    pub warnings: usize,
    /// Findings of severity info.
    pub infos: usize,
}

/// What a run read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = DoctorChecked))]
pub struct Checked {
    /// Agents checked.
    pub agents: usize,
    /// Skill records checked (every scope, retired ones left out).
    pub skills: usize,
    /// Prompts read.
    pub prompts: usize,
    /// Recent `turn` events read.
    pub turns: usize,
}

/// What the doctor found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DoctorReport {
    /// The agent the report is limited to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub agent: Option<String>,
    /// Every finding: errors first, then by code, agent, skill and line.
    pub findings: Vec<Finding>,
    /// Findings by severity.
    pub counts: Counts,
    /// What was read.
    pub checked: Checked,
    /// Checks that could not be made, and why (a prompt file that cannot be read, too few
    /// recent turns to judge): never a finding, never silent.
    pub unchecked: Vec<String>,
}

impl DoctorReport {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.counts.errors > 0
    }
}

/// A prompt checked once, outside any agent's configuration (`skillbase doctor --prompt`).
#[derive(Debug, Clone)]
pub struct AdHocPrompt {
    /// How findings name it (the file as given).
    pub label: String,
    /// Its text (at most [`MAX_PROMPT_BYTES`] bytes).
    pub text: String,
}

/// What to check, for whom.
#[derive(Debug, Clone, Default)]
pub struct DoctorOptions {
    /// Only this agent: its findings, and the findings of the skill records it holds.
    pub agent: Option<AgentName>,
    /// The caller is `agent`'s own token: only the findings of that agent about what it may
    /// see (its configuration, its prompts and its view), never a skill-level finding.
    pub own_only: bool,
    /// Check only this prompt, for `agent` (which must be given).
    pub prompt: Option<AdHocPrompt>,
    /// Who asked (recorded on the `doctor` event).
    pub actor: String,
}

/// One prompt as read.
pub(crate) struct PromptText {
    /// A path as configured, or `prompts[N]`.
    pub(crate) label: String,
    pub(crate) text: String,
}

/// What one of the agent's recent turns shows.
pub(crate) struct TurnSeen {
    /// (skill, phrase) of each skill a trigger injected.
    pub(crate) triggers: Vec<(String, String)>,
    /// When the catalog was ranked: skills listed by name only, and not listed.
    pub(crate) overflow: Option<(usize, usize)>,
}

/// An agent as the checks see it.
pub(crate) struct AgentInput {
    pub(crate) view: Arc<AgentView>,
    pub(crate) prompts: Vec<PromptText>,
    /// Its newest turns at its current configuration, newest first.
    pub(crate) turns: Vec<TurnSeen>,
}

impl AgentInput {
    pub(crate) fn agent(&self) -> &Agent {
        &self.view.agent
    }
}

/// A shared skill whose seed folder changed after it was edited in the store.
pub(crate) struct Diverged {
    pub(crate) scope: Scope,
    pub(crate) name: String,
    pub(crate) seed_path: String,
    /// Whether the folder was read now (else the divergence is as last recorded).
    pub(crate) read_now: bool,
}

/// A disabled skill whose last disabling was the drift guard's.
pub(crate) struct Drift {
    pub(crate) scope: Scope,
    pub(crate) name: String,
    /// The guard's reason (`revision N failed K runs in a row (threshold T)`).
    pub(crate) why: String,
}

/// Revisions waiting for approval.
pub(crate) struct Pending {
    pub(crate) scope: Scope,
    pub(crate) name: String,
    /// (revision, author).
    pub(crate) revs: Vec<(i64, String)>,
}

/// Everything the checks read.
pub(crate) struct Inputs {
    pub(crate) index: Arc<Index>,
    /// The agents checked (one when the run is limited to an agent).
    pub(crate) agents: Vec<AgentInput>,
    /// Every agent (holders of shared skills, grants of tool classes).
    pub(crate) all_agents: Vec<Agent>,
    /// The vault's entry names.
    pub(crate) vault: HashSet<String>,
    /// Tool classes some tool provides (built-in or registered).
    pub(crate) classes: HashSet<String>,
    pub(crate) diverged: Vec<Diverged>,
    pub(crate) drift: Vec<Drift>,
    pub(crate) pending: Vec<Pending>,
    /// Stored revisions holding a current vault value (the entry's name in `found`).
    pub(crate) secrets: Vec<StoredMatch>,
    /// The latest scan of each skill's active revision, by (scope, name; absent: never
    /// scanned); `None` when the run did not read them.
    pub(crate) scans:
        Option<std::collections::HashMap<(String, String), skillbase_store::scan::ScanRecord>>,
    /// The agent the run is limited to.
    pub(crate) focus: Option<AgentName>,
    /// Only the focus agent's own findings (an agent token).
    pub(crate) own_only: bool,
}

/// Run the doctor (see [`crate::doctor`]) over `engine`'s reads and record one `doctor` event.
/// An unknown agent, a prompt without an agent, or an empty or oversized prompt is refused
/// before anything is read or recorded.
pub async fn run(engine: &Engine, opts: &DoctorOptions) -> Result<DoctorReport> {
    let store = engine.store();
    if let Some(p) = &opts.prompt {
        if opts.agent.is_none() {
            return Err(RuntimeError::Invalid(
                "a prompt is checked for one agent: name the agent".into(),
            ));
        }
        check_prompt_text(&p.label, &p.text)?;
    }
    let all_agents = store.agents().await?;
    if let Some(a) = &opts.agent
        && !all_agents.iter().any(|x| x.name == *a)
    {
        return Err(RuntimeError::UnknownAgent(a.to_string()));
    }
    // The turns read below are events: store the ones still queued, or the latest are missed.
    engine.flush().await;
    let index = store.index();
    let mut unchecked = Vec::new();
    let (agents, turns_read) = agent_inputs(engine, opts, &all_agents, &mut unchecked).await?;
    let whole = opts.prompt.is_none() && !opts.own_only;
    let mut inputs = Inputs {
        index: index.clone(),
        agents,
        all_agents,
        vault: store
            .vault_all()
            .await?
            .into_iter()
            .map(|r| r.name)
            .collect(),
        classes: engine.tool_classes().into_iter().collect(),
        diverged: Vec::new(),
        drift: Vec::new(),
        pending: Vec::new(),
        secrets: Vec::new(),
        scans: None,
        focus: opts.agent.clone(),
        own_only: opts.own_only,
    };
    if whole {
        store_wide_inputs(engine, &index, &mut inputs).await?;
    }
    let (findings, inputs, unchecked) =
        run_checks(inputs, unchecked, opts.prompt.is_some()).await?;
    let report = DoctorReport {
        agent: opts.agent.as_ref().map(|a| a.to_string()),
        checked: Checked {
            agents: inputs.agents.len(),
            // An agent token learns how many skills it sees, never how many the store holds.
            skills: if opts.prompt.is_some() {
                0
            } else if opts.own_only {
                inputs.agents.iter().map(|a| a.view.skills.len()).sum()
            } else {
                index.all().filter(|e| e.status != Status::Retired).count()
            },
            prompts: inputs.agents.iter().map(|a| a.prompts.len()).sum(),
            turns: turns_read,
        },
        counts: counts(&findings),
        findings,
        unchecked,
    };
    record(engine, opts, &report).await;
    Ok(report)
}

/// The agents checked (every agent, or the one `opts` names), each with its view, its
/// prompts (the ad hoc one, or those it is configured with: one that cannot be read goes to
/// `unchecked`) and its recent turns at its current configuration; and how many `turn`
/// events were read.
async fn agent_inputs(
    engine: &Engine,
    opts: &DoctorOptions,
    all_agents: &[Agent],
    unchecked: &mut Vec<String>,
) -> Result<(Vec<AgentInput>, usize)> {
    let mut agents = Vec::new();
    let mut turns_read = 0;
    for a in all_agents
        .iter()
        .filter(|a| opts.agent.as_ref().is_none_or(|f| *f == a.name))
    {
        let view = engine.view(&a.name)?;
        let prompts = match &opts.prompt {
            Some(p) => vec![PromptText {
                label: p.label.clone(),
                text: p.text.clone(),
            }],
            None => read_prompts(&a.name, &a.config.prompts, unchecked),
        };
        let turns = if opts.prompt.is_some() {
            Vec::new()
        } else {
            let events = engine
                .store()
                .recent_events(
                    a.name.as_str(),
                    EventKind::Turn.as_str(),
                    RECENT_TURNS as i64,
                )
                .await?;
            turns_read += events.len();
            events
                .iter()
                .filter_map(|e| TurnRecord::read(&e.data))
                .filter(|t| t.agent_version == Some(view.agent.version))
                .map(|t| turn_seen(&t))
                .collect()
        };
        agents.push(AgentInput {
            view,
            prompts,
            turns,
        });
    }
    Ok((agents, turns_read))
}

/// The inputs only a whole-store run reads: diverged seeds, drift, pending revisions, and
/// the stored revisions holding a current vault value.
async fn store_wide_inputs(engine: &Engine, index: &Index, inputs: &mut Inputs) -> Result<()> {
    let store = engine.store();
    inputs.diverged = diverged(store, index).await?;
    inputs.drift = drift(store, index).await?;
    inputs.pending = pending(store, index).await?;
    inputs.scans = Some(
        store
            .active_scans()
            .await?
            .into_iter()
            .map(|(scope, name, r)| ((scope.to_string(), name), r))
            .collect(),
    );
    if let Some(v) = engine.vault() {
        let redactor = v.redactor();
        if !redactor.is_empty() {
            inputs.secrets = store
                .find_in_revisions(&move |b| redactor.find(b).map(str::to_owned))
                .await?;
        }
    }
    Ok(())
}

/// Make the findings (only the prompt's when `prompt_only`), handing back the inputs and
/// `unchecked` with what the checks could not make added.
async fn run_checks(
    inputs: Inputs,
    mut unchecked: Vec<String>,
    prompt_only: bool,
) -> Result<(Vec<Finding>, Inputs, Vec<String>)> {
    // The checks are CPU work (the ranker's queries, the name automata): off the async workers.
    let checked = tokio::task::spawn_blocking(move || {
        let findings = if prompt_only {
            checks::prompts_only(&inputs)
        } else {
            checks::all(&inputs, &mut unchecked)
        };
        (findings, inputs, unchecked)
    })
    .await;
    match checked {
        Ok(done) => Ok(done),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(RuntimeError::Invalid(
            "the doctor's checks were cancelled".into(),
        )),
    }
}

/// The findings by severity.
fn counts(findings: &[Finding]) -> Counts {
    let mut counts = Counts::default();
    for f in findings {
        match f.severity {
            Severity::Error => counts.errors += 1,
            Severity::Warning => counts.warnings += 1,
            Severity::Info => counts.infos += 1,
        }
    }
    counts
}

/// A prompt given to check: text, not empty, within [`MAX_PROMPT_BYTES`].
fn check_prompt_text(label: &str, text: &str) -> Result<()> {
    let shown = skillbase_format::text::escape_controls(label).into_owned();
    if text.trim().is_empty() {
        return Err(RuntimeError::Invalid(format!(
            "prompt {shown} is empty: nothing to check"
        )));
    }
    if text.len() > MAX_PROMPT_BYTES {
        return Err(RuntimeError::Invalid(format!(
            "prompt {shown} is {} bytes; a prompt is at most {MAX_PROMPT_BYTES} bytes",
            text.len()
        )));
    }
    Ok(())
}

/// Read an agent's prompts; one that cannot be read is left unchecked, with the reason.
fn read_prompts(
    agent: &AgentName,
    prompts: &[Prompt],
    unchecked: &mut Vec<String>,
) -> Vec<PromptText> {
    let mut out = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        match p {
            Prompt::Text(text) => out.push(PromptText {
                label: format!("prompts[{i}]"),
                text: text.clone(),
            }),
            Prompt::Path(path) => match read_prompt_file(Path::new(path)) {
                Ok(text) => out.push(PromptText {
                    label: path.clone(),
                    text,
                }),
                Err(why) => unchecked.push(format!(
                    "agent {agent}: prompt {}: {why}",
                    skillbase_format::text::escape_controls(path)
                )),
            },
        }
    }
    out
}

/// A prompt file's text: a regular file of UTF-8 text within [`MAX_PROMPT_BYTES`]; the error
/// says which it is not.
pub fn read_prompt_file(path: &Path) -> std::result::Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("is not a file".into());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PROMPT_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() > MAX_PROMPT_BYTES {
        return Err(format!(
            "is over {MAX_PROMPT_BYTES} bytes; a prompt is at most that"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".into())
}

/// What a `turn` event says about triggers and the catalog.
fn turn_seen(t: &TurnRecord) -> TurnSeen {
    let triggers = t
        .activated
        .iter()
        .filter_map(|a| {
            let phrase = a.reason.strip_prefix("trigger:")?;
            Some((a.name.clone(), phrase.to_owned()))
        })
        .collect();
    let c = &t.catalog;
    let overflow = c.ranked.then(|| {
        let count = |list: &Omitted, reason: &str| -> usize {
            list.by_reason()
                .iter()
                .filter(|g| g.reason == reason)
                .map(|g| g.count)
                .sum::<u64>() as usize
        };
        (
            count(&c.name_only, NAME_ONLY),
            count(&c.omitted, NOT_LISTED),
        )
    });
    TurnSeen { triggers, overflow }
}

/// Shared skills whose seed folder changed after an edit in the store and still differs: the
/// folder read again when this process can read it, else as the last `seed_diverged` event
/// recorded it.
async fn diverged(store: &skillbase_store::Store, index: &Index) -> Result<Vec<Diverged>> {
    let events = store
        .events(&EventFilter {
            kind: Some(EventKind::SeedDiverged.as_str().to_owned()),
            ..EventFilter::default()
        })
        .await?;
    // The latest event of each skill.
    let mut latest: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    for e in events {
        let (Some(scope), Some(name)) = (e.scope, e.skill) else {
            continue;
        };
        let Ok(d) = skillbase_store::events::SeedDiverged::deserialize(&e.data) else {
            continue;
        };
        latest.insert((scope, name), (d.seed_path, d.seed_digest));
    }
    let mut out = Vec::new();
    for ((scope, name), (seed_path, seed_digest)) in latest {
        let Ok(scope) = scope.parse::<Scope>() else {
            continue;
        };
        let Some(e) = index.get(&scope, &name) else {
            continue;
        };
        // Following its folder again, or out of use: nothing diverges.
        if e.seed_path.is_some() || e.status == Status::Retired {
            continue;
        }
        let folder = Path::new(&seed_path);
        let (digest, read_now) = if skillbase_format::skill_dir::find_skill_md(folder).is_some() {
            match skillbase_store::pack::read_folder(folder, &store.limits) {
                Ok(b) => (b.digest().to_string(), true),
                Err(_) => (seed_digest, false),
            }
        } else if folder.exists() {
            // The folder holds no skill any more: nothing to compare.
            continue;
        } else {
            (seed_digest, false)
        };
        if digest != e.digest.to_string() {
            out.push(Diverged {
                scope,
                name,
                seed_path,
                read_now,
            });
        }
    }
    Ok(out)
}

/// Disabled skills whose latest disabling came from the drift guard (a `disabled` event with a
/// `drift` reason): disabled since, so never reviewed (enabling, reverting or retiring would
/// have changed the status).
async fn drift(store: &skillbase_store::Store, index: &Index) -> Result<Vec<Drift>> {
    let disabled: Vec<_> = index
        .all()
        .filter(|e| e.status == Status::Disabled)
        .collect();
    if disabled.is_empty() {
        return Ok(Vec::new());
    }
    let events = store
        .events(&EventFilter {
            kind: Some(EventKind::Disabled.as_str().to_owned()),
            ..EventFilter::default()
        })
        .await?;
    let mut out = Vec::new();
    for e in disabled {
        let scope = e.scope.to_string();
        let last = events
            .iter()
            .rev()
            .find(|ev| ev.scope.as_deref() == Some(&scope) && ev.skill.as_deref() == Some(&e.name));
        if let Some(ev) = last
            && let Some(why) = StatusChanged::read(&ev.data).drift()
        {
            out.push(Drift {
                scope: e.scope.clone(),
                name: e.name.clone(),
                why: why.to_owned(),
            });
        }
    }
    Ok(out)
}

/// Revisions waiting for approval, as `GET /v1/approvals` lists them.
async fn pending(store: &skillbase_store::Store, index: &Index) -> Result<Vec<Pending>> {
    let mut out = Vec::new();
    for e in index
        .all()
        .filter(|e| e.status != Status::Retired)
        .filter(|e| e.status == Status::Pending || e.head_rev > e.active_rev)
    {
        let revs: Vec<(i64, String)> = store
            .history(&e.scope, &e.name)
            .await?
            .into_iter()
            .filter(|r| r.state == "pending")
            .map(|r| (r.rev, r.author))
            .collect();
        if !revs.is_empty() {
            out.push(Pending {
                scope: e.scope.clone(),
                name: e.name.clone(),
                revs,
            });
        }
    }
    Ok(out)
}

/// One `doctor` event: who asked, for which agent, how many findings of each code. A store that
/// refuses the write (read-only, say) still gets its report.
async fn record(engine: &Engine, opts: &DoctorOptions, report: &DoctorReport) {
    let mut codes = serde_json::Map::new();
    for f in &report.findings {
        let n = codes
            .entry(f.code.as_str())
            .or_insert(serde_json::Value::from(0));
        *n = (n.as_u64().unwrap_or(0) + 1).into();
    }
    let ev = NewEvent {
        kind: EventKind::Doctor,
        agent: opts.agent.as_ref().map(|a| a.to_string()),
        actor: (!opts.actor.is_empty()).then(|| opts.actor.clone()),
        data: serde_json::json!({
            "counts": report.counts,
            "codes": codes,
            "checked": report.checked,
            "unchecked": report.unchecked.len(),
            "prompt": opts.prompt.as_ref().map(|p| p.label.clone()),
            "own_only": opts.own_only,
        }),
        ..NewEvent::default()
    };
    if let Err(e) = engine.store().append_event(&ev).await {
        tracing::warn!(error = %e, "the doctor's event was not recorded");
    }
}
