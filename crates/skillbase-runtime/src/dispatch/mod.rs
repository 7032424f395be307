//! Dispatch: every call the model makes, checked against the agent's current grants.
//!
//! Stages, in order, each refusal typed and recorded as a `call_refused` event with its rule:
//! name in the offered set → arguments valid against the schema (compiled once) → capability
//! gate → handler lookup → run with the cost class's timeout and bounded concurrency → result
//! capped in tokens → redaction → result and a `tool_called` event.
//!
//! **The driving skill.** A skill drives a session from its activation by `load_skill` (or its
//! `skill_<name>` entry) until it finishes (`skill_finish`, [`Dispatcher::finish_run`] from the
//! harness, or two failed calls) or another skill is activated (which supersedes its run). A
//! body injected by a trigger is guidance for that turn only; it drives once it is loaded. While a skill drives, each tool
//! dispatch must name a class both granted to the agent and declared in the skill's active
//! revision's `capabilities.tools`; each vault lookup and destination must likewise be granted
//! and declared; and no authoring tool runs at all. Grants are read at every call, so revoking
//! one shrinks every skill at once.

pub use crate::envelope::host_matches;
use crate::envelope::{allowed_hosts, allowed_vault};
use crate::events::EventSink;
use crate::redact::Redactor;
use crate::runtime::{Runtime, RuntimeError};
use crate::tokens;
use crate::tool::{
    CallContext, InnerRefusal, Permission, RegisteredTool, Registry, ToolDecl, timeout_for,
};
use crate::vault::Vault;
use serde::{Deserialize, Serialize};
use skillbase_format::{Cost, SkillMeta};
use skillbase_store::{Agent, AgentName, Author, NewEvent, RunRecord, Scope, SkillEntry, Status};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, watch};

/// The class of the skills runtime's own tools (`load_skill`, `search_skills`, `skill_finish`):
/// always offered, never a capability.
pub const ACTIVATION_CLASS: &str = "activation";
/// The class of the authoring tools; an agent needs this grant to write skills.
pub const AUTHORING_CLASS: &str = "skills";
/// The class of the note tools.
pub const NOTES_CLASS: &str = "notes";
/// Failed calls after which a skill's run ends as a failure.
pub const FAILED_CALLS_PER_RUN: i64 = 2;
/// Largest note block, in bytes.
pub const MAX_NOTES_BYTES: usize = 16 * 1024;

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    NotOffered,
    InvalidArguments,
    ClassNotGranted,
    ClassNotDeclared,
    SkillCannotModify,
    DrivingSkillInactive,
    NoHandler,
    TooManyInFlight,
    NetworkBudget,
    CannotDetach,
    Timeout,
    VaultNotAllowed,
    DestinationNotAllowed,
    /// An authoring tool was asked for a skill declaring capabilities the agent is not granted
    /// (and the install does not hold such skills for review).
    CapabilitiesNotGranted,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::NotOffered => "not_offered",
            Rule::InvalidArguments => "invalid_arguments",
            Rule::ClassNotGranted => "class_not_granted",
            Rule::ClassNotDeclared => "class_not_declared",
            Rule::SkillCannotModify => "skill_cannot_modify",
            Rule::DrivingSkillInactive => "driving_skill_inactive",
            Rule::NoHandler => "no_handler",
            Rule::TooManyInFlight => "too_many_in_flight",
            Rule::NetworkBudget => "network_budget",
            Rule::CannotDetach => "cannot_detach",
            Rule::Timeout => "timeout",
            Rule::VaultNotAllowed => "vault_not_allowed",
            Rule::DestinationNotAllowed => "destination_not_allowed",
            Rule::CapabilitiesNotGranted => "capabilities_not_granted",
        }
    }
}

/// What one call came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool ran; `result` is capped and redacted.
    Done {
        call_id: String,
        result: serde_json::Value,
        tokens: u32,
        truncated: bool,
    },
    /// A slow call runs apart; its result arrives as a `call_finished` event (see
    /// [`Dispatcher::wait`]).
    Started { call_id: String },
    /// The call never ran.
    Refused {
        call_id: String,
        rule: Rule,
        message: String,
    },
    /// The tool ran and failed (or a refusal was raised inside it).
    Failed {
        call_id: String,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        rule: Option<Rule>,
        /// What kind of failure, when the tool says (`stale`, `conflict`, `not_found`, ...).
        #[serde(skip_serializing_if = "Option::is_none")]
        failure: Option<crate::tool::Failure>,
    },
}

impl CallOutcome {
    pub fn call_id(&self) -> &str {
        match self {
            CallOutcome::Done { call_id, .. }
            | CallOutcome::Started { call_id }
            | CallOutcome::Refused { call_id, .. }
            | CallOutcome::Failed { call_id, .. } => call_id,
        }
    }

    /// The text to give the model.
    pub fn for_model(&self) -> String {
        match self {
            CallOutcome::Done { result, .. } => match result {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            CallOutcome::Started { call_id } => {
                format!("started as call {call_id}; the result will arrive as an event")
            }
            CallOutcome::Refused { rule, message, .. } => {
                format!("refused ({}): {message}", rule.as_str())
            }
            CallOutcome::Failed { message, .. } => format!("failed: {message}"),
        }
    }
}

/// The kind of an offered entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Tool,
    Skill,
}

/// One entry of the offered set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferedEntry {
    /// `tool:<name>` or `skill:<name>`.
    pub id: String,
    /// The name the model calls; unique within the set.
    pub wire_name: String,
    pub kind: EntryKind,
    /// `operator` for configured tools, `skillbase` for built-ins, or the skill revision's author.
    pub author: String,
    pub description: String,
    pub parameters: serde_json::Value,
    pub cost: Cost,
    #[serde(skip)]
    target: Target,
}

#[derive(Debug, Clone, PartialEq)]
enum Target {
    Tool(String),
    Skill(String),
}

/// What a turn offers, and what was withheld.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OfferedSet {
    pub entries: Vec<OfferedEntry>,
    /// Tools not granted to the agent, never shown to the model.
    pub withheld: Vec<String>,
    #[serde(skip)]
    by_wire: HashMap<String, usize>,
}

impl OfferedSet {
    pub fn get(&self, wire_name: &str) -> Option<&OfferedEntry> {
        self.by_wire.get(wire_name).map(|&i| &self.entries[i])
    }
}

/// A session as the dispatcher uses it: the runtime's one session cache entry (its agent, its
/// activations, the run that drives it, the pinned revision's capabilities, the network count).
/// Sessions are served by one process at a time (sticky); their state is loaded once and kept
/// current by this process's own writes.
type SessionState = crate::runtime::OpenSession;

/// The open run of a loaded session.
fn run_of(s: &SessionState) -> Option<RunRecord> {
    s.run
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .flatten()
}

/// The skill driving a call: the run's skill at the revision the run activated.
struct Driver {
    name: String,
    rev: i64,
    revision: Revision,
}

/// Where the driving revision's frontmatter is: the index entry (the run's revision is still the
/// active one), or read from the store (an older revision, pinned for the run).
enum Revision {
    Active(Arc<SkillEntry>),
    Pinned(Arc<SkillMeta>),
}

impl Driver {
    fn meta(&self) -> &SkillMeta {
        match &self.revision {
            Revision::Active(e) => &e.meta,
            Revision::Pinned(m) => m,
        }
    }
}

/// Per agent, for one index generation and agent version: the offered set, and the vault
/// entries and hosts a call may use when no skill drives (the agent's grants).
#[derive(Clone)]
struct Offer {
    generation: u64,
    version: i64,
    set: Arc<OfferedSet>,
    vault: Arc<Vec<String>>,
    hosts: Arc<Vec<String>>,
}

type OfferedCache = HashMap<AgentName, Offer>;

/// Calls in flight, network budgets and slow-call results.
pub struct Dispatcher {
    pub runtime: Arc<Runtime>,
    registry: Arc<Registry>,
    vault: Option<Arc<Vault>>,
    /// Per agent: the limit its semaphore was made for, and the semaphore.
    inflight: Mutex<HashMap<AgentName, (u32, Arc<Semaphore>)>>,
    results: Mutex<HashMap<String, watch::Receiver<Option<CallOutcome>>>>,
    next_id: std::sync::atomic::AtomicU64,
    events: EventSink,
    offered_cache: Mutex<OfferedCache>,
}

/// Detached results kept in memory; beyond this, finished ones nobody collected are dropped
/// (they stay readable as `call_finished` events).
const MAX_PENDING_RESULTS: usize = 1_024;

/// How to run a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallMode {
    /// Wait for the result.
    #[default]
    Wait,
    /// For `seconds` and `tens_of_seconds` tools: answer at once with a call id.
    Detach,
}

impl Dispatcher {
    /// A dispatcher over a runtime. Create it inside a tokio runtime: it starts the event writer.
    pub fn new(runtime: Arc<Runtime>, registry: Registry, vault: Option<Arc<Vault>>) -> Dispatcher {
        Dispatcher {
            events: EventSink::start(runtime.store.clone()),
            offered_cache: Mutex::new(HashMap::new()),
            runtime,
            registry: Arc::new(builtins(registry)),
            vault,
            inflight: Mutex::new(HashMap::new()),
            results: Mutex::new(HashMap::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A whole turn as a harness shows it to the model: [`Runtime::turn`] (eager prefix,
    /// triggered bodies, catalog, `load_skill`/`search_skills`, the report), then the rest of the
    /// agent's offered set (granted tools and skill entries, within the turn's cadence) added to
    /// the tools and counted, and the withheld tools listed in the report. The CLI, REST and any
    /// embedder get the same turn from here.
    pub async fn turn(
        &self,
        agent: &AgentName,
        session: &str,
        message: &str,
        opts: &crate::turn::TurnOptions,
    ) -> Result<crate::turn::TurnContext, RuntimeError> {
        let mut ctx = self.runtime.turn(agent, session, message, opts).await?;
        let offered = self.offered(agent)?;
        for e in offered.entries.iter() {
            if ctx.tools.iter().any(|t| t.name == e.wire_name)
                || matches!(e.wire_name.as_str(), "load_skill" | "search_skills")
            {
                continue;
            }
            if let Some(max) = opts.max_cost
                && e.cost > max
            {
                continue;
            }
            let def = crate::turn::ToolDef {
                name: e.wire_name.clone(),
                description: format!("[{}] {}", e.id, e.description),
                parameters: Arc::new(e.parameters.clone()),
            };
            let t = tokens::count(&serde_json::to_string(&def).unwrap_or_default());
            ctx.report.tokens.tools += t;
            ctx.report.tokens.total += t;
            ctx.tools.push(def);
        }
        ctx.report.withheld_tools = offered
            .withheld
            .iter()
            .cloned()
            .map(|name| crate::turn::Omission {
                name: name.into(),
                reason: "tool class not granted to this agent".into(),
                rank: None,
            })
            .collect();
        Ok(ctx)
    }

    /// Wait until every event recorded so far is stored.
    pub async fn flush(&self) {
        self.events.flush().await;
    }

    /// The session's state, loaded once (the session is created if new): the runtime's session
    /// cache entry, with its driving run read on first use.
    async fn session(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<Arc<SessionState>, RuntimeError> {
        if let Some(s) = self.runtime.cached(session)
            && s.agent == *agent
            && s.run.lock().unwrap_or_else(|p| p.into_inner()).is_some()
        {
            return Ok(s);
        }
        // Boxed: the database futures stay out of every caller's state.
        Box::pin(self.load_session(agent, session)).await
    }

    async fn load_session(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<Arc<SessionState>, RuntimeError> {
        let state = self.runtime.open(agent, session).await?;
        let loaded = state
            .run
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        if !loaded {
            let run = self.runtime.store.open_run(session).await?;
            let mut slot = state.run.lock().unwrap_or_else(|p| p.into_inner());
            // A concurrent first call may have read it meanwhile: the same row either way.
            if slot.is_none() {
                *slot = Some(run);
            }
        }
        Ok(state)
    }

    /// Re-read the session's open run after it changed.
    pub(crate) async fn refresh_run(&self, session: &str) -> Result<(), RuntimeError> {
        let run = self.runtime.store.open_run(session).await?;
        if let Some(s) = self.runtime.cached(session) {
            *s.run.lock().unwrap_or_else(|p| p.into_inner()) = Some(run);
        }
        Ok(())
    }

    /// The skill a run drives with, at the revision the run activated: `Ok(None)` when the
    /// skill is no longer active (fail closed), `Ok(Some)` when the run's revision is the active
    /// one (the common case, from the index, without waiting), and `Err(entry)` when an older
    /// revision must be read ([`Dispatcher::pinned_driver`]).
    fn active_driver(
        &self,
        agent: &AgentName,
        r: &RunRecord,
    ) -> Result<Option<Driver>, Arc<SkillEntry>> {
        let index = self.runtime.store.index();
        let Some(e) = index.resolve(agent, &r.skill) else {
            return Ok(None);
        };
        if e.status != Status::Active || e.id != r.skill_id {
            return Ok(None);
        }
        if e.active_rev != r.rev {
            return Err(e.clone());
        }
        Ok(Some(Driver {
            name: e.name.clone(),
            rev: r.rev,
            revision: Revision::Active(e.clone()),
        }))
    }

    /// The driver at a revision older than the active one: read from the store once per run.
    async fn pinned_driver(
        &self,
        state: &SessionState,
        r: &RunRecord,
        e: &SkillEntry,
    ) -> Result<Driver, RuntimeError> {
        let cached = state
            .pinned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|(id, _)| *id == r.id)
            .map(|(_, m)| m.clone());
        let meta = match cached {
            Some(m) => m,
            None => {
                let (_, bundle) = self
                    .runtime
                    .store
                    .bundle(&e.scope, &e.name, Some(r.rev))
                    .await?;
                let text = std::str::from_utf8(&bundle.skill_md().bytes).map_err(|_| {
                    RuntimeError::Invalid(format!(
                        "revision {} of '{}' is not UTF-8",
                        r.rev, e.name
                    ))
                })?;
                let meta = skillbase_format::SkillMd::parse(text, &Default::default())
                    .ok()
                    .and_then(|md| SkillMeta::from_md(&md))
                    .ok_or_else(|| {
                        RuntimeError::Invalid(format!(
                            "revision {} of '{}' cannot be read",
                            r.rev, e.name
                        ))
                    })?;
                let meta = Arc::new(meta);
                *state.pinned.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((r.id, meta.clone()));
                meta
            }
        };
        Ok(Driver {
            name: e.name.clone(),
            rev: r.rev,
            revision: Revision::Pinned(meta),
        })
    }

    /// The run driving a session, if any.
    pub async fn driving_run(
        &self,
        agent: &AgentName,
        session: &str,
    ) -> Result<Option<RunRecord>, RuntimeError> {
        let s = self.session(agent, session).await?;
        Ok(run_of(&s))
    }

    /// End the session's driving run on the harness's word (`success` or `failure`); returns
    /// the run and whether its revision was disabled for drift.
    pub async fn finish_run(
        &self,
        agent: &AgentName,
        session: &str,
        outcome: &str,
        note: &str,
    ) -> Result<Option<(RunRecord, bool)>, RuntimeError> {
        let a = self.agent(agent)?;
        let Some(run) = self.driving_run(agent, session).await? else {
            return Ok(None);
        };
        let note = self.redactor().redact(note).into_owned();
        // The run's counters are complete before it ends.
        self.flush().await;
        let r = end_run_and_check_drift(
            &self.runtime,
            agent,
            run.id,
            outcome,
            &note,
            a.config.policies.failure_threshold,
        )
        .await?;
        self.refresh_run(session).await?;
        Ok(Some(r))
    }

    pub(crate) fn redactor(&self) -> Arc<Redactor> {
        self.vault
            .as_ref()
            .map(|v| v.redactor())
            .unwrap_or_else(Redactor::empty)
    }

    fn agent(&self, name: &AgentName) -> Result<Arc<Agent>, RuntimeError> {
        self.runtime
            .store
            .agent_cached(name)
            .ok_or_else(|| RuntimeError::UnknownAgent(name.to_string()))
    }

    /// The offered set for an agent: granted tools, the runtime's own tools, and skills with
    /// `inputs` as callable entries. Tools whose class is not granted are withheld.
    pub fn offered(&self, agent: &AgentName) -> Result<Arc<OfferedSet>, RuntimeError> {
        Ok(self.offered_for(agent)?.1.set)
    }

    /// The agent and its offered set. The set is cached per index generation and agent version
    /// (what its view is cached by), so a call finds it without touching the view.
    fn offered_for(&self, agent: &AgentName) -> Result<(Arc<Agent>, Offer), RuntimeError> {
        let a = self.agent(agent)?;
        let generation = self.runtime.store.index().generation;
        if let Some(offer) = self
            .offered_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(agent)
            && offer.generation == generation
            && offer.version == a.version
        {
            return Ok((a, offer.clone()));
        }
        let view = self.runtime.view(agent)?;
        let mut set = OfferedSet::default();
        for t in self.registry.all() {
            let d = &t.decl;
            let builtin = is_builtin(&d.name);
            let granted = d.class == ACTIVATION_CLASS || a.config.grants.tools.contains(&d.class);
            if d.class == ACTIVATION_CLASS && view.skills.is_empty() {
                continue;
            }
            if !granted {
                set.withheld.push(d.name.clone());
                continue;
            }
            // The runtime's activation tools are offered as a turn offers them: `load_skill`
            // with `name` a closed enum of the loadable skills, `search_skills` as the turn
            // declares it (one definition for turns, MCP and REST).
            let (description, parameters) = match d.name.as_str() {
                "load_skill" => match &view.load_tool(None).tool {
                    Some(t) => (t.description.clone(), (*t.parameters).clone()),
                    // Every visible skill is eager: there is nothing to load.
                    None => continue,
                },
                "search_skills" => {
                    let t = crate::turn::search_skills_tool();
                    (t.description, (*t.parameters).clone())
                }
                _ => (d.description.clone(), d.parameters.clone()),
            };
            set.entries.push(OfferedEntry {
                id: format!("tool:{}", d.name),
                wire_name: d.name.clone(),
                kind: EntryKind::Tool,
                author: if builtin { "skillbase" } else { "operator" }.into(),
                description,
                parameters,
                cost: d.cost,
                target: Target::Tool(d.name.clone()),
            });
        }
        for (i, s) in view.skills.iter().enumerate() {
            let Some(inputs) = &s.entry.meta.inputs else {
                continue;
            };
            if view.is_eager(i) {
                continue;
            }
            let base = format!("skill_{}", s.name().replace('-', "_"));
            let mut wire = base.clone();
            let mut n = 2;
            while set.entries.iter().any(|e| e.wire_name == wire) {
                wire = format!("{base}_{n}");
                n += 1;
            }
            set.entries.push(OfferedEntry {
                id: format!("skill:{}", s.name()),
                wire_name: wire,
                kind: EntryKind::Skill,
                author: s.entry.author.clone(),
                description: format!(
                    "Load the skill '{}' with arguments. {}",
                    s.name(),
                    s.entry.meta.description
                ),
                parameters: inputs.clone(),
                cost: s.entry.meta.cost,
                target: Target::Skill(s.name().to_owned()),
            });
        }
        set.by_wire = set
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.wire_name.clone(), i))
            .collect();
        let offer = Offer {
            generation: view.generation,
            version: a.version,
            set: Arc::new(set),
            vault: Arc::new(allowed_vault(&a, None)),
            hosts: Arc::new(allowed_hosts(&a, None)),
        };
        self.offered_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.clone(), offer.clone());
        Ok((a, offer))
    }

    fn new_call_id(&self) -> String {
        let n = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        call_id_text(ms, n)
    }

    /// Dispatch one call by its wire name.
    pub async fn call(
        &self,
        agent: &AgentName,
        session: &str,
        wire_name: &str,
        args: serde_json::Value,
        mode: CallMode,
    ) -> Result<CallOutcome, RuntimeError> {
        let call_id = self.new_call_id();
        let state = self.session(agent, session).await?;
        let redactor = self.redactor();
        let outcome = match self
            .call_inner(agent, session, &state, wire_name, &args, mode, &call_id)
            .await?
        {
            // A refusal may quote the call back (a wire name, a value the schema rejected).
            CallOutcome::Refused {
                call_id,
                rule,
                message,
            } => CallOutcome::Refused {
                call_id,
                rule,
                message: redactor.redact(&message).into_owned(),
            },
            other => other,
        };
        // Record, with every secret scrubbed from the arguments and the outcome.
        let safe_args = redactor.redact_json_owned(args);
        // The event's data, keys in this order (what `json!` would build, with the map sized
        // up front).
        use serde_json::Value;
        let mut data = serde_json::Map::with_capacity(6);
        data.insert("call_id".into(), Value::String(call_id));
        data.insert("tool".into(), Value::String(wire_name.to_owned()));
        let kind = match &outcome {
            CallOutcome::Refused { rule, message, .. } => {
                data.insert("rule".into(), Value::String(rule.as_str().into()));
                data.insert("message".into(), Value::String(message.clone()));
                data.insert("arguments".into(), safe_args);
                "call_refused"
            }
            CallOutcome::Started { .. } => {
                data.insert("arguments".into(), safe_args);
                "call_started"
            }
            CallOutcome::Done {
                tokens, truncated, ..
            } => {
                data.insert("arguments".into(), safe_args);
                data.insert("ok".into(), Value::Bool(true));
                data.insert("tokens".into(), Value::from(*tokens));
                data.insert("truncated".into(), Value::Bool(*truncated));
                "tool_called"
            }
            CallOutcome::Failed { message, rule, .. } => {
                data.insert("arguments".into(), safe_args);
                data.insert("ok".into(), Value::Bool(false));
                data.insert("error".into(), Value::String(message.clone()));
                data.insert(
                    "rule".into(),
                    rule.map_or(Value::Null, |r| Value::String(r.as_str().into())),
                );
                "tool_called"
            }
        };
        let data = Value::Object(data);
        self.events
            .record(NewEvent {
                kind: kind.into(),
                agent: Some(agent.to_string()),
                session: Some(session.into()),
                data: redactor.redact_json_owned(data),
                ..NewEvent::default()
            })
            .await;
        Ok(outcome)
    }

    #[allow(clippy::too_many_arguments)]
    async fn call_inner(
        &self,
        agent: &AgentName,
        session: &str,
        state: &Arc<SessionState>,
        wire_name: &str,
        args: &serde_json::Value,
        mode: CallMode,
        call_id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        let refuse = |rule: Rule, message: String| {
            Ok(CallOutcome::Refused {
                call_id: call_id.to_owned(),
                rule,
                message,
            })
        };
        // 1. The name must be in the offered set.
        let (a, offer) = self.offered_for(agent)?;
        let offered = &offer.set;
        let Some(entry) = offered.get(wire_name) else {
            // The name is not quoted back: a text that echoes (redacted) input would tell the
            // caller whether its input held a secret.
            return refuse(
                Rule::NotOffered,
                "the requested name is not a tool offered to this agent; use one of the offered names"
                    .to_owned(),
            );
        };
        // The skill driving the session, read now (fail closed if it is no longer active), with
        // the capabilities of the revision its run activated (a newer revision written mid-run
        // does not widen what the running skill may do).
        let run = run_of(state);
        let driver: Option<Driver> = match &run {
            Some(r) => match self.active_driver(agent, r) {
                Ok(d) => d,
                // Boxed: the database future stays out of the call's state.
                Err(e) => Some(Box::pin(self.pinned_driver(state, r, &e)).await?),
            },
            None => None,
        };
        let tool = match &entry.target {
            Target::Skill(name) => {
                // 2. Arguments against the skill's inputs happen inside load_skill.
                return Box::pin(self.activate(&a, session, name, Some(args.clone()), call_id))
                    .await;
            }
            Target::Tool(name) => self
                .registry
                .get(name)
                .cloned()
                .expect("offered tools are registered"),
        };
        let d = &tool.decl;
        // 2. Arguments.
        let problems: Vec<String> = tool
            .validator
            .iter_errors(args)
            .take(10)
            .map(|e| schema_problem(&e))
            .collect();
        if !problems.is_empty() {
            return refuse(
                Rule::InvalidArguments,
                format!(
                    "arguments for '{}' do not match its parameters: {}",
                    d.name,
                    problems.join("; ")
                ),
            );
        }
        // 3. Capability gate, against the agent's current grants.
        if d.class != ACTIVATION_CLASS {
            if !a.config.grants.tools.contains(&d.class) {
                return refuse(
                    Rule::ClassNotGranted,
                    format!("tool class '{}' is not granted to agent '{agent}'", d.class),
                );
            }
            if let Some(r) = &run {
                match &driver {
                    None => {
                        return refuse(
                            Rule::DrivingSkillInactive,
                            format!(
                                "skill '{}' drives this session but is no longer active; finish it with skill_finish",
                                r.skill
                            ),
                        );
                    }
                    Some(s) => {
                        if d.class == AUTHORING_CLASS {
                            return refuse(
                                Rule::SkillCannotModify,
                                format!(
                                    "no call made under skill '{}' may change a skill; finish the skill first",
                                    s.name
                                ),
                            );
                        }
                        if !s.meta().capabilities.tools.contains(&d.class) {
                            return refuse(
                                Rule::ClassNotDeclared,
                                format!(
                                    "skill '{}' (revision {}) does not declare tool class '{}'",
                                    s.name, s.rev, d.class
                                ),
                            );
                        }
                    }
                }
            }
        }
        // Built-ins run in the runtime itself; load_skill keeps its typed refusals.
        if d.name == "load_skill" {
            let name = args
                .get("name")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            return Box::pin(self.activate(
                &a,
                session,
                name,
                args.get("arguments").cloned(),
                call_id,
            ))
            .await;
        }
        if is_builtin(&d.name) {
            let ctx = crate::builtin::Builtin {
                dispatcher: self,
                agent: &a,
                session,
                call_id,
                driving: run.is_some(),
            };
            let redactor = self.redactor();
            return Ok(match Box::pin(ctx.run(&d.name, args)).await? {
                Ok(v) => {
                    let (result, tokens, truncated) = cap_tokens(
                        redactor.redact_json_owned(v),
                        a.config.policies.max_result_tokens,
                        &redactor,
                    );
                    CallOutcome::Done {
                        call_id: call_id.to_owned(),
                        result,
                        tokens,
                        truncated,
                    }
                }
                Err(e) => match e.rule {
                    Some(rule) => CallOutcome::Refused {
                        call_id: call_id.to_owned(),
                        rule,
                        message: redactor.redact(&e.message).into_owned(),
                    },
                    None => CallOutcome::Failed {
                        call_id: call_id.to_owned(),
                        message: redactor.redact(&e.message).into_owned(),
                        rule: None,
                        failure: e.kind,
                    },
                },
            });
        }
        // 4. Handler lookup.
        let Some(handler) = tool.handler.clone() else {
            return refuse(
                Rule::NoHandler,
                format!(
                    "tool '{}' is declared but has no handler in this process",
                    d.name
                ),
            );
        };
        if mode == CallMode::Detach && d.cost == Cost::Immediate {
            return refuse(
                Rule::CannotDetach,
                format!("'{}' is immediate; call it without detaching", d.name),
            );
        }
        // Bounds: calls in flight per agent (under the policy read now), then network calls
        // per session (a call refused by the first bound does not use the second).
        let limit = a.config.policies.max_calls_in_flight.max(1);
        let sem = {
            let mut m = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            let e = m
                .entry(agent.clone())
                .or_insert_with(|| (limit, Arc::new(Semaphore::new(limit as usize))));
            if e.0 != limit {
                // The policy changed: calls already in flight finish on the old semaphore.
                *e = (limit, Arc::new(Semaphore::new(limit as usize)));
            }
            e.1.clone()
        };
        let Ok(permit) = sem.try_acquire_owned() else {
            return refuse(
                Rule::TooManyInFlight,
                format!(
                    "agent '{agent}' already has {} calls in flight",
                    a.config.policies.max_calls_in_flight
                ),
            );
        };
        if d.permissions.contains(&Permission::Network) {
            let mut n = state.network.lock().unwrap_or_else(|p| p.into_inner());
            if *n >= a.config.policies.max_network_calls_per_session {
                return refuse(
                    Rule::NetworkBudget,
                    format!(
                        "this session used its {} network calls",
                        a.config.policies.max_network_calls_per_session
                    ),
                );
            }
            *n += 1;
        }
        let (vault_allowed, hosts_allowed) = match &driver {
            None => (offer.vault.clone(), offer.hosts.clone()),
            Some(d) => (
                Arc::new(allowed_vault(&a, Some(d.meta()))),
                Arc::new(allowed_hosts(&a, Some(d.meta()))),
            ),
        };
        let ctx = CallContext {
            agent: agent.to_string(),
            session: session.to_owned(),
            call_id: call_id.to_owned(),
            skill: driver.as_ref().map(|d| d.name.clone()),
            vault_allowed,
            hosts_allowed,
            vault: self.vault.clone(),
            refusals: Arc::new(Mutex::new(Vec::new())),
            deadline: timeout_for(d.cost),
            max_response_bytes: 2 * 1024 * 1024,
        };
        let redactor = self.redactor();
        let max_tokens = a.config.policies.max_result_tokens;
        let run_id = run.as_ref().map(|r| r.id);
        let failure_threshold = a.config.policies.failure_threshold;
        let refusals = ctx.refusals.clone();
        let dispatcher_call = Box::pin(run_tool(
            handler,
            tool.clone(),
            ctx,
            args.clone(),
            redactor.clone(),
            max_tokens,
            call_id.to_owned(),
        ));
        if mode == CallMode::Detach && d.cost != Cost::Immediate {
            let (tx, rx) = watch::channel(None);
            {
                let mut results = self.results.lock().unwrap_or_else(|p| p.into_inner());
                // Results nobody collected: once finished they are in the store as
                // `call_finished` events, so the in-memory copies can go.
                if results.len() >= MAX_PENDING_RESULTS {
                    results.retain(|_, r| r.borrow().is_none());
                }
                results.insert(call_id.to_owned(), rx);
            }
            let runtime = self.runtime.clone();
            let events = self.events.clone();
            let state = state.clone();
            let agent = agent.clone();
            let session = session.to_owned();
            let id = call_id.to_owned();
            tokio::spawn(async move {
                let outcome = dispatcher_call.await;
                drop(permit);
                let outcome = AfterCall {
                    runtime: &runtime,
                    sink: &events,
                    redactor: &redactor,
                    state: &state,
                    agent: &agent,
                    session: &session,
                    call_id: &id,
                    tool: &tool.decl.name,
                    run_id,
                    failure_threshold,
                }
                .finish(outcome, &refusals)
                .await;
                events
                    .record(NewEvent {
                        kind: "call_finished".into(),
                        agent: Some(agent.to_string()),
                        session: Some(session),
                        data: serde_json::json!({"call_id": id, "outcome": outcome}),
                        ..NewEvent::default()
                    })
                    .await;
                let _ = tx.send(Some(outcome));
            });
            return Ok(CallOutcome::Started {
                call_id: call_id.to_owned(),
            });
        }
        let outcome = dispatcher_call.await;
        drop(permit);
        Ok(AfterCall {
            runtime: &self.runtime,
            sink: &self.events,
            redactor: &redactor,
            state,
            agent,
            session,
            call_id,
            tool: &d.name,
            run_id,
            failure_threshold,
        }
        .finish(outcome, &refusals)
        .await)
    }

    /// Wait for a detached call's outcome (up to `timeout`).
    pub async fn wait(&self, call_id: &str, timeout: std::time::Duration) -> Option<CallOutcome> {
        let mut rx = self
            .results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(call_id)?
            .clone();
        let got = tokio::time::timeout(timeout, async {
            loop {
                if let Some(o) = rx.borrow().clone() {
                    return Some(o);
                }
                if rx.changed().await.is_err() {
                    return rx.borrow().clone();
                }
            }
        })
        .await
        .ok()
        .flatten();
        if got.is_some() {
            self.results
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(call_id);
        }
        got
    }

    /// A loaded skill as the call's outcome (redacted, counted).
    fn loaded(
        &self,
        r: crate::runtime::LoadResult,
        call_id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        let text = self.redactor().redact(&r.content).into_owned();
        Ok(CallOutcome::Done {
            call_id: call_id.to_owned(),
            tokens: tokens::count(&text),
            result: serde_json::Value::String(text),
            truncated: false,
        })
    }

    /// `load_skill` as a dispatched call: activation opens a run (the skill now drives).
    pub(crate) async fn activate(
        &self,
        agent: &Agent,
        session: &str,
        name: &str,
        args: Option<serde_json::Value>,
        call_id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        let driving = self
            .driving_run(&agent.name, session)
            .await?
            .map(|o| (o.skill_id, o.rev));
        match self
            .runtime
            .load_skill_with_run(
                &agent.name,
                session,
                name,
                args.as_ref(),
                Some(driving),
                Some(&self.redactor()),
            )
            .await
        {
            Ok((r, Some(_))) => {
                // A first activation opened the skill's run with its activation.
                self.refresh_run(session).await?;
                self.loaded(r, call_id)
            }
            Ok((r, None)) => {
                // The skill drives from now on, unless its run is the one already open (a
                // skill loaded again after it finished, or after another took over, drives
                // again).
                if r.already_active
                    && let Some(e) = self
                        .runtime
                        .store
                        .index()
                        .resolve(&agent.name, name)
                        .cloned()
                    && driving != Some((e.id, e.active_rev))
                {
                    self.runtime
                        .store
                        .start_run(session, &agent.name, &e)
                        .await?;
                    self.refresh_run(session).await?;
                }
                self.loaded(r, call_id)
            }
            Err(RuntimeError::InvalidArguments { name, problems }) => Ok(CallOutcome::Refused {
                call_id: call_id.to_owned(),
                rule: Rule::InvalidArguments,
                message: format!(
                    "arguments for skill '{name}' do not match its inputs: {problems}"
                ),
            }),
            Err(e @ (RuntimeError::UnknownSkill { .. } | RuntimeError::Eager(_))) => {
                Ok(CallOutcome::Refused {
                    call_id: call_id.to_owned(),
                    rule: Rule::NotOffered,
                    message: e.to_string(),
                })
            }
            Err(e) => Err(e),
        }
    }
}

/// What is left to do after a tool ran: record the refusals raised inside it, and count the
/// call in the driving skill's run (ending the run after too many failed calls).
struct AfterCall<'a> {
    runtime: &'a Runtime,
    sink: &'a EventSink,
    redactor: &'a Redactor,
    state: &'a SessionState,
    agent: &'a AgentName,
    session: &'a str,
    call_id: &'a str,
    tool: &'a str,
    run_id: Option<i64>,
    failure_threshold: u32,
}

impl AfterCall<'_> {
    async fn finish(
        self,
        outcome: CallOutcome,
        refusals: &Mutex<Vec<InnerRefusal>>,
    ) -> CallOutcome {
        // Refusals raised inside the tool are recorded, even when the tool went on without
        // what it was refused and succeeded. When one stopped the tool, the call's outcome is
        // that refusal and its own `call_refused` event records it.
        let inner: Vec<InnerRefusal> = refusals.lock().map(|r| r.clone()).unwrap_or_default();
        let skip = usize::from(matches!(outcome, CallOutcome::Refused { .. }));
        for r in inner.iter().skip(skip) {
            self.sink
                .record(NewEvent {
                    kind: "call_refused".into(),
                    agent: Some(self.agent.to_string()),
                    session: Some(self.session.to_owned()),
                    data: self.redactor.redact_json_owned(serde_json::json!({
                        "call_id": self.call_id,
                        "tool": self.tool,
                        "rule": r.rule,
                        "message": r.message,
                        "inner": true,
                    })),
                    ..NewEvent::default()
                })
                .await;
        }
        if let Some(run) = self.run_id {
            // Boxed: the database futures stay out of the call's state. A refusal raised inside
            // the tool (the tool ran and was stopped by the envelope) counts as a failed call of
            // the run, as a failure does: a skill that keeps reaching outside its envelope ends.
            let failed = matches!(
                outcome,
                CallOutcome::Failed { .. } | CallOutcome::Refused { .. }
            );
            Box::pin(self.count_in_run(run, failed)).await;
        }
        outcome
    }

    async fn count_in_run(&self, run: i64, failed: bool) {
        if !failed {
            // Written behind, in the event writer's next transaction.
            self.sink.count_call(run).await;
            return;
        }
        // A failure is counted now, with the calls still queued, so that the limit below reads
        // the run's true counters.
        self.sink.flush().await;
        let store = &self.runtime.store;
        let _ = store.count_call(run, true).await;
        if let Ok(Some(r)) = store.open_run(self.session).await
            && r.id == run
            && r.failed_calls >= FAILED_CALLS_PER_RUN
        {
            let _ = end_run_and_check_drift(
                self.runtime,
                self.agent,
                r.id,
                "failure",
                &format!("{} calls failed (last: {})", r.failed_calls, self.tool),
                self.failure_threshold,
            )
            .await;
            *self.state.run.lock().unwrap_or_else(|p| p.into_inner()) = Some(None);
        }
    }
}

/// `format!("call-{ms:x}-{n}")`, written by hand (it runs on every call).
fn call_id_text(ms: u128, n: u64) -> String {
    let mut id = String::with_capacity(48);
    id.push_str("call-");
    let mut digits = [0u8; 40];
    let mut k = digits.len();
    let mut v = ms;
    loop {
        k -= 1;
        digits[k] = b"0123456789abcdef"[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    id.push_str(std::str::from_utf8(&digits[k..]).expect("hex digits"));
    id.push('-');
    let mut k = digits.len();
    let mut v = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    id.push_str(std::str::from_utf8(&digits[k..]).expect("decimal digits"));
    id
}

/// End a run and disable the revision when it has failed `threshold` times in a row.
pub async fn end_run_and_check_drift(
    runtime: &Runtime,
    agent: &AgentName,
    run: i64,
    outcome: &str,
    note: &str,
    threshold: u32,
) -> Result<(RunRecord, bool), RuntimeError> {
    let (rec, streak) = runtime.store.end_run(run, outcome, note).await?;
    let mut disabled = false;
    if outcome == "failure" && streak >= i64::from(threshold.max(1)) {
        let scope: Scope = rec.scope.parse().map_err(RuntimeError::Invalid)?;
        if let Some(e) = runtime.store.index().get(&scope, &rec.skill)
            && e.active_rev == rec.rev
            && e.status == Status::Active
        {
            runtime
                .store
                .set_status(
                    &scope,
                    &rec.skill,
                    skillbase_store::StatusChange::Disable,
                    &Author::AgentInline(agent.clone()),
                    serde_json::json!({
                        "drift": format!("revision {} failed {streak} runs in a row (threshold {threshold})", rec.rev),
                        "last_note": note,
                    }),
                )
                .await?;
            disabled = true;
        }
    }
    Ok((rec, disabled))
}

async fn run_tool(
    handler: Arc<dyn crate::tool::ToolHandler>,
    tool: Arc<RegisteredTool>,
    ctx: CallContext,
    args: serde_json::Value,
    redactor: Arc<Redactor>,
    max_tokens: u32,
    call_id: String,
) -> CallOutcome {
    let refusals = ctx.refusals.clone();
    let deadline = ctx.deadline;
    let res = tokio::time::timeout(deadline, handler.call(ctx, args)).await;
    let inner: Vec<InnerRefusal> = refusals.lock().map(|r| r.clone()).unwrap_or_default();
    let inner_rule = inner.first().map(|r| match r.rule.as_str() {
        "vault_not_allowed" => Rule::VaultNotAllowed,
        _ => Rule::DestinationNotAllowed,
    });
    match res {
        Err(_) => CallOutcome::Failed {
            call_id,
            message: format!(
                "'{}' exceeded its {} s limit ({} class) and was cancelled",
                tool.decl.name,
                deadline.as_secs(),
                tool.decl.cost
            ),
            rule: Some(Rule::Timeout),
            failure: None,
        },
        // A refusal raised inside the tool (a vault entry or destination outside the envelope)
        // that stopped it is a refusal, as the gate's are: one outcome for one kind of event.
        Ok(Err(e)) => match inner_rule {
            Some(rule) => CallOutcome::Refused {
                call_id,
                rule,
                message: redactor.redact(&e.message).into_owned(),
            },
            None => CallOutcome::Failed {
                call_id,
                message: redactor.redact(&e.message).into_owned(),
                rule: None,
                failure: e.kind,
            },
        },
        Ok(Ok(value)) => {
            let value = redactor.redact_json_owned(value);
            let (value, tokens, truncated) = cap_tokens(value, max_tokens, &redactor);
            CallOutcome::Done {
                call_id,
                result: value,
                tokens,
                truncated,
            }
        }
    }
}

/// One argument problem for a message: where, and what the schema wants, with the value the
/// caller sent masked (a message that quotes input, redacted or not, would tell the caller
/// whether the input held a secret).
pub(crate) fn schema_problem(e: &jsonschema::ValidationError<'_>) -> String {
    let p = e.instance_path().to_string();
    let text = e.masked_with("the value").to_string();
    if p.is_empty() {
        text
    } else {
        format!("at {p}: {text}")
    }
}

/// Cut a (redacted) result to `max` tokens (as text, with a marker) when it is larger; the cut
/// never ends in the first characters of a secret.
pub fn cap_tokens(
    value: serde_json::Value,
    max: u32,
    redactor: &Redactor,
) -> (serde_json::Value, u32, bool) {
    let rendered;
    let text: &str = match &value {
        serde_json::Value::String(s) => s,
        other => {
            rendered = other.to_string();
            &rendered
        }
    };
    let n = tokens::count(text);
    if n <= max {
        return (value, n, false);
    }
    let cut = tokens::truncate(text, max);
    let cut = redactor.trim_partial(&cut);
    let out =
        format!("{cut}\n[truncated: the result had {n} tokens, over this agent's limit of {max}]");
    let t = tokens::count(&out);
    (serde_json::Value::String(out), t, true)
}

/// Whether `name` is one of the built-in tools: the names of [`crate::builtin::declarations`],
/// the one list of them.
pub(crate) fn is_builtin(name: &str) -> bool {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            crate::builtin::declarations()
                .into_iter()
                .map(|d| d.name)
                .collect()
        })
        .iter()
        .any(|n| n == name)
}

fn builtins(mut r: Registry) -> Registry {
    for decl in crate::builtin::declarations() {
        if r.get(&decl.name).is_none() {
            let _ = r.register(decl, None);
        }
    }
    r
}

/// Tool declarations from the `[[tools]]` tables of `skillbase.toml`.
pub fn decls_from_tables(tables: &[toml::Table]) -> Result<Vec<ToolDecl>, String> {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            ToolDecl::deserialize(toml::Value::Table(t.clone()))
                .map_err(|e| format!("[[tools]] entry {}: {e}", i + 1))
        })
        .collect()
}

/// Parse a tool declaration list from TOML (`[[tools]]` tables).
pub fn decls_from_toml(text: &str) -> Result<Vec<ToolDecl>, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        tools: Vec<ToolDecl>,
    }
    let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
    Ok(f.tools)
}

#[cfg(test)]
mod tests {
    #[test]
    fn call_ids_read_as_before() {
        for (ms, n) in [
            (0u128, 0u64),
            (1, 1),
            (0x19a_c0ff_ee12, 42),
            (u128::MAX, u64::MAX),
            (1_790_000_000_000, 1_000_000),
        ] {
            assert_eq!(super::call_id_text(ms, n), format!("call-{ms:x}-{n}"));
        }
    }
}
