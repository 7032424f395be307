//! The runtime: agents' views over the store, sessions, turns, `load_skill`, `search_skills`,
//! files on disk, and the events that record all of it.

use crate::files;
use crate::semantic::Semantic;
use serde::Serialize;
use skillbase_route::fusion::SemanticQuery;
use skillbase_route::tokens;
use skillbase_route::turn::{self, Activation, TurnContext, TurnOptions};
use skillbase_route::view::AgentView;
use skillbase_store::{ActivationRecord, AgentName, NewEvent, Store, StoreError};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Errors the runtime reports to a harness (and, for tool calls, to the model).
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No agent of this name is configured in the store (the name as the caller gave it);
    /// create the agent or fix the name.
    #[error("no agent '{0}'")]
    UnknownAgent(String),
    /// No session of this id (as given) for this agent: it does not exist, or another agent
    /// holds it and it answers exactly as a missing one. Sessions are created by a turn or a
    /// load, never by [`Engine::pinned`](crate::Engine::pinned).
    #[error("no session '{0}'")]
    UnknownSession(String),
    /// No skill of that name is in the agent's view (not allowed, not active, or not there).
    /// The name is kept for the caller's code, never shown: a message that quoted it back would
    /// tell a model whether the name it sent held a secret (it would come back redacted).
    #[error(
        "no skill of that name is available to this agent: choose one of the names load_skill lists{hint}"
    )]
    UnknownSkill {
        /// The name asked for, cut to its first 100 characters; never part of the message.
        name: String,
        /// Text appended to the message as written (the runtime leaves it empty); it must not
        /// quote the name either.
        hint: String,
    },
    /// The skill (named here) is eager: its body is already in every turn's prefix, so loading
    /// it is refused rather than repeated.
    #[error("'{0}' is already in your context every turn (an eager skill); follow it as it is")]
    Eager(String),
    /// The skill (named here) says `disable-model-invocation: true`: only the user's explicit
    /// invocation (`/name` or `$name` in a message) places it, so loading it is refused.
    #[error(
        "'{0}' is used only when the user invokes it (/{0} in a message); it cannot be loaded by the model"
    )]
    ExplicitOnly(String),
    /// A turn's input was refused (too many `paths`, one too long); nothing was resolved.
    #[error("invalid turn: {0}")]
    InvalidTurn(String),
    /// `load_skill`'s arguments were refused: not a JSON object, not valid against the skill's
    /// `inputs`, or given to a skill that declares none. Nothing was activated.
    #[error("arguments for skill '{name}' do not match its inputs: {problems}")]
    InvalidArguments {
        /// The skill that was asked for.
        name: String,
        /// What is wrong, for the model: up to 10 schema problems joined by `; ` (each with
        /// its location inside the arguments, the value sent masked), or the one shape problem.
        problems: String,
    },
    /// Stored content the runtime cannot use (a skill's `inputs` schema that does not compile,
    /// a driving run's revision that cannot be read); the message names the skill. Fixing it
    /// takes a new revision, not a retry.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The store failed or refused (see [`StoreError`]); passed through unchanged.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The runtime's result type: [`RuntimeError`] unless another error is named.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// What `load_skill` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadResult {
    /// The text for the model: the wrapped body and the companions' bodies, or the "already
    /// active" note.
    pub content: String,
    /// True when this revision of the skill was already active in the session: nothing was
    /// activated or recorded, and `content` is only the note to follow what was loaded earlier.
    pub already_active: bool,
    /// What this load activated, the skill first and then each companion not already active
    /// (eager companions are skipped); each with its token count. Empty when `already_active`.
    pub activated: Vec<Activation>,
    /// The skill's files (other than SKILL.md).
    pub files: Vec<String>,
    /// Where the files were written, relative to the session's workspace folder, when a
    /// workspace is configured (the content names the full path).
    pub directory: Option<String>,
    /// Problems that did not stop the load (a failed file write, say).
    pub warnings: Vec<String>,
}

/// A skill to re-attach after the harness compacts its context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pinned {
    /// The skill's name in the agent's view.
    pub name: String,
    /// The text to re-attach: the wrapped body of the active revision, rendered with the
    /// arguments it was loaded with (as stored, vault values redacted) when it had any.
    pub content: String,
    /// Tokens of `content` (o200k_base), counted against [`Engine::pinned`](crate::Engine::pinned)'s budget.
    pub tokens: u32,
}

/// What [`Engine::pinned`](crate::Engine::pinned) returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PinnedSet {
    /// The skills re-attached, most recent activation first, together within the budget.
    pub skills: Vec<Pinned>,
    /// Active skills that did not fit the budget, most recent first.
    pub left_out: Vec<String>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The skill's name, as `load_skill` takes it.
    pub name: String,
    /// The skill's frontmatter description.
    pub description: String,
    /// Its relevance to the query: the BM25 score, or with the semantic stage the fused score
    /// (always above 0; higher is more relevant, and scores compare only within one search).
    pub score: f32,
    /// How likely it is the skill the query asks for, 0 to 1, calibrated over the agent's
    /// whole library (`skillbase_route::confidence`); the hits' confidences sum to less than 1,
    /// and a low first one says that nothing fits well.
    pub confidence: f64,
}

type ValidatorCache = HashMap<(i64, i64), Arc<jsonschema::Validator>>;

/// A view in the cache, with when the environment answers it rests on were last checked: the
/// tool table's generation and the time.
struct CachedView {
    view: Arc<AgentView>,
    checked: (u64, std::time::Instant),
}

/// The runtime over a store.
pub(crate) struct Runtime {
    /// The store every view, session and activation is read from and written to.
    pub store: Arc<Store>,
    views: Mutex<HashMap<AgentName, CachedView>>,
    /// Sessions this process has opened, with their activations, kept in step with the store
    /// (activations are written through here), so a turn or a `load_skill` of an active skill
    /// needs no database round trip. Sessions are sticky to a process (see ARCHITECTURE.md).
    /// Keyed by [`session_key`].
    sessions: Mutex<HashMap<String, Arc<OpenSession>>>,
    validators: Mutex<ValidatorCache>,
    /// Session ids several conversations share without being able to tell each other apart
    /// ([`Runtime::mark_shared`]).
    shared: SessionMarks,
    /// Sessions whose client does not share this server's disk ([`Runtime::mark_remote`]).
    remote: SessionMarks,
    /// Root of session workspaces (`None`: no files are written); a session's files go under
    /// `<root>/<agent>/<session folder>/skills/` (see [`files::session_root`]).
    pub workspace_root: Option<PathBuf>,
    /// The semantic ranking stage: `None` when not configured, `Some(Err(why))` when configured
    /// but unusable (a model not pulled, say): turns then rank lexically and say why.
    semantic: Option<std::result::Result<Arc<Semantic>, String>>,
    /// The dispatcher's tool table, once one is attached: the tool classes and upstream
    /// servers skills' `requires:` are checked against.
    tools: std::sync::OnceLock<Arc<crate::tool::ToolTable>>,
    /// The environment of the tool table at a generation, made once per generation.
    environment: Mutex<Option<(u64, Arc<crate::environment::Environment>)>>,
    /// OpenTelemetry export, when on: the writer records its spans there.
    telemetry: Option<crate::telemetry::Telemetry>,
}

/// The semantic stage's inputs for one message on one view: the view's skill vectors, the
/// message's vector and the fusion weight.
pub struct SemanticInputs {
    /// The view's skill vectors.
    pub matrix: Arc<skillbase_route::fusion::SemanticMatrix>,
    /// The message's vector, or one per passage of a long message, end to end.
    pub query: Vec<f32>,
    /// The semantic score's share of the fused score.
    pub weight: f32,
    /// The reranker's logits for the first candidates (empty without a reranker).
    pub rerank: Vec<(u32, f32)>,
}

impl SemanticInputs {
    /// What [`turn::resolve_with`] and [`AgentView::relevance`] take.
    pub fn as_query(&self) -> SemanticQuery<'_> {
        SemanticQuery {
            matrix: &self.matrix,
            query: &self.query,
            weight: self.weight,
            rerank: &self.rerank,
        }
    }
}

/// A session as this process knows it.
pub(crate) struct OpenSession {
    activations: Mutex<Vec<ActivationRecord>>,
    /// The run driving the session, once the dispatcher has read it (`None` until then): kept
    /// current by the dispatcher's own writes.
    pub(crate) run: Mutex<Option<Option<skillbase_store::RunRecord>>>,
    /// The capabilities of the revision the open run activated, once read (by run id).
    pub(crate) pinned: Mutex<Option<(i64, Arc<skillbase_format::SkillMeta>)>>,
    /// Network calls made in the session, against `max_network_calls_per_session`; bounded
    /// with the session (a session evicted from the cache starts counting again).
    pub(crate) network: Mutex<u32>,
}

impl OpenSession {
    /// The session's activations as they are now (a copy: the lock is not held).
    fn activations(&self) -> Vec<ActivationRecord> {
        self.activations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether this revision of the skill `name` is active in the session (read under the
    /// lock, without a copy: the repeated load asks it on every call).
    fn has_active(&self, name: &str, entry: &skillbase_store::SkillEntry) -> bool {
        is_active(
            &self.activations.lock().unwrap_or_else(|p| p.into_inner()),
            name,
            entry,
        )
    }

    /// Add activations the store has recorded.
    fn add_activations(&self, records: Vec<ActivationRecord>) {
        self.activations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(records);
    }
}

/// The key of a session in this process's caches: sessions are keyed by `(agent, id)`, so one
/// id names unrelated sessions of two agents (an agent name holds no line break).
fn session_key(agent: &AgentName, session: &str) -> String {
    let mut k = String::with_capacity(agent.as_str().len() + 1 + session.len());
    k.push_str(agent.as_str());
    k.push('\n');
    k.push_str(session);
    k
}

/// A set of sessions, bounded like the session cache.
#[derive(Default)]
struct SessionMarks(Mutex<std::collections::HashSet<String>>);

impl SessionMarks {
    fn insert(&self, agent: &AgentName, session: &str) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if s.len() >= MAX_CACHED_SESSIONS {
            s.clear();
        }
        s.insert(session_key(agent, session));
    }

    fn contains(&self, agent: &AgentName, session: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&session_key(agent, session))
    }
}

/// Past this many cached sessions the cache starts over (each is re-read on next use).
const MAX_CACHED_SESSIONS: usize = 50_000;

impl Runtime {
    /// A runtime over `store`, writing skills' files under `workspace_root` when it is set.
    /// Views and sessions start empty and are filled on first use.
    pub fn new(store: Arc<Store>, workspace_root: Option<PathBuf>) -> Runtime {
        Runtime {
            store,
            sessions: Mutex::new(HashMap::new()),
            views: Mutex::new(HashMap::new()),
            validators: Mutex::new(HashMap::new()),
            shared: SessionMarks::default(),
            remote: SessionMarks::default(),
            workspace_root,
            semantic: None,
            tools: std::sync::OnceLock::new(),
            environment: Mutex::new(None),
            telemetry: None,
        }
    }

    /// Check skills' `requires:` against this tool table (the dispatcher attaches its own).
    pub fn attach_tools(&self, tools: Arc<crate::tool::ToolTable>) {
        let _ = self.tools.set(tools);
    }

    /// What skills' `requires:` are checked against now, and the tool table's generation.
    pub fn environment(&self) -> (Arc<crate::environment::Environment>, u64) {
        let Some(tools) = self.tools.get() else {
            static BUILTINS: std::sync::OnceLock<Arc<crate::environment::Environment>> =
                std::sync::OnceLock::new();
            return (
                BUILTINS
                    .get_or_init(|| Arc::new(crate::environment::Environment::builtins()))
                    .clone(),
                0,
            );
        };
        let generation = tools.generation();
        let mut cached = self.environment.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((g, env)) = &*cached
            && *g == generation
        {
            return (env.clone(), generation);
        }
        let env = Arc::new(crate::environment::Environment::of_registry(
            &tools.current(),
        ));
        *cached = Some((generation, env.clone()));
        (env, generation)
    }

    /// This runtime with OpenTelemetry export (the writer's spans).
    pub(crate) fn with_telemetry(
        mut self,
        telemetry: Option<crate::telemetry::Telemetry>,
    ) -> Runtime {
        self.telemetry = telemetry;
        self
    }

    /// This runtime with the semantic stage (`Err(why)`: configured but unusable, reported in
    /// every ranked turn).
    pub fn with_semantic(
        mut self,
        semantic: std::result::Result<Arc<Semantic>, String>,
    ) -> Runtime {
        self.semantic = Some(semantic);
        self
    }

    /// Mark a session id as shared by conversations that cannot be told apart (an MCP client on
    /// the stateless wire that sends no `Skillbase-Session`: every conversation of one token
    /// lands in one session). A `load_skill` of a skill already active there answers with its
    /// body again (still recording nothing), since this conversation may never have seen it.
    pub fn mark_shared(&self, agent: &AgentName, session: &str) {
        self.shared.insert(agent, session);
    }

    /// Mark a session's client as one that does not share this server's disk (MCP over HTTP):
    /// `load_skill` there names a skill's files by `skill://` URI and SHA-256 (read with
    /// `resources/read`) and writes no workspace folder.
    pub fn mark_remote(&self, agent: &AgentName, session: &str) {
        self.remote.insert(agent, session);
    }

    /// The semantic stage, when configured and usable.
    pub fn semantic(&self) -> Option<&Arc<Semantic>> {
        self.semantic.as_ref().and_then(|s| s.as_ref().ok())
    }

    /// The semantic stage's inputs for `message` on `view`: `Ok(None)` when the stage is not
    /// configured, `Err(why)` when it is but cannot answer now (the ranking is then lexical).
    /// Skill vectors missing from memory are read from the store or computed first.
    pub async fn semantic_inputs(
        &self,
        view: &AgentView,
        message: &str,
    ) -> std::result::Result<Option<SemanticInputs>, String> {
        let s = match &self.semantic {
            None => return Ok(None),
            Some(Err(why)) => return Err(why.clone()),
            Some(Ok(s)) => s,
        };
        if view.semantic.get().is_none() {
            // What the store has is read now (a restart ranks semantically at once); what it
            // lacks is computed in the background, and until then the ranking is lexical: a
            // turn never waits for a library's first index.
            let entries: Vec<_> = view.skills.iter().map(|v| v.entry.clone()).collect();
            s.load_stored(&self.store, &entries)
                .await
                .map_err(|e| format!("skill vectors could not be read: {e}"))?;
            let matrix = s.matrix(view);
            let missing = matrix.missing();
            if missing > 0 {
                s.warm(self.store.clone(), entries);
                if let Some(why) = s.recent_failure() {
                    return Err(format!(
                        "{missing} skills have no vector: {why} (retried within {} s)",
                        crate::semantic::RETRY_AFTER.as_secs()
                    ));
                }
                return Err(format!(
                    "warming up: {} of {} skills have vectors, the rest are being computed",
                    view.skills.len() - missing,
                    view.skills.len()
                ));
            }
            if matrix.sections_missing > 0 {
                // Section vectors missing (sections just turned on, say): ranked with the
                // skills' vectors meanwhile, the sections computed in the background.
                s.warm(self.store.clone(), entries);
            }
        }
        let matrix = s.matrix(view);
        let query = s.query(message).await.map_err(|e| e.to_string())?;
        let mut inputs = SemanticInputs {
            matrix,
            query,
            weight: s.weight(),
            rerank: Vec::new(),
        };
        if let Some(r) = s.reranker() {
            // A reranker that fails leaves the first stages' order (it only refines it).
            match r.logits(view, message, inputs.as_query()).await {
                Ok(logits) => inputs.rerank = logits,
                Err(e) => tracing::warn!("the reranker did not run: {e}"),
            }
        }
        Ok(Some(inputs))
    }

    /// Compute (or read) every vector the agent's view needs, waiting for it: what `serve` runs
    /// for each agent at start, so the first turns do not rank lexically for long.
    pub async fn warm_semantic(
        &self,
        agent: &AgentName,
    ) -> Result<Option<crate::semantic::FillReport>> {
        let Some(s) = self.semantic() else {
            return Ok(None);
        };
        let view = self.view(agent)?;
        let entries: Vec<_> = view.skills.iter().map(|v| v.entry.clone()).collect();
        Ok(Some(s.fill(&self.store, &entries).await?))
    }

    /// The semantic stage's inputs for an evaluation of `messages` on `view`: `Ok(None)` when
    /// the stage is not configured, `Err(why)` when it cannot answer.
    pub async fn query_vectors(
        &self,
        view: &AgentView,
        messages: &[&str],
    ) -> std::result::Result<Option<crate::semantic::QueryVectors>, String> {
        let s = match &self.semantic {
            None => return Ok(None),
            Some(Err(why)) => return Err(why.clone()),
            Some(Ok(s)) => s,
        };
        let entries: Vec<_> = view.skills.iter().map(|v| v.entry.clone()).collect();
        let r = s
            .fill(&self.store, &entries)
            .await
            .map_err(|e| format!("skill vectors could not be read or stored: {e}"))?;
        if let Some(why) = r.failed {
            return Err(why);
        }
        let matrix = s.matrix(view);
        let queries = s.queries(messages).await.map_err(|e| e.to_string())?;
        let mut vectors = crate::semantic::QueryVectors {
            matrix,
            queries,
            weight: s.weight(),
            reranks: Vec::new(),
        };
        if let Some(r) = s.reranker() {
            let first: Vec<SemanticQuery<'_>> = (0..messages.len())
                .filter_map(|i| vectors.query(i))
                .collect();
            vectors.reranks = r
                .logits_many(view, messages, &first)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(Some(vectors))
    }

    /// The stages a ranking uses here: `lexical`, or `lexical+semantic (<model>)`.
    pub fn stages(&self) -> String {
        match &self.semantic {
            Some(Ok(s)) => {
                let (name, model) = match s.rerank() {
                    Some(Ok(r)) => (
                        "lexical+semantic+rerank",
                        format!("{}, {}", s.model_id(), r.model_id()),
                    ),
                    Some(Err(why)) => (
                        "lexical+semantic",
                        format!("{}; rerank stage unavailable: {why}", s.model_id()),
                    ),
                    None => ("lexical+semantic", s.model_id()),
                };
                match s.note() {
                    Some(note) => format!("{name} ({model}; {note})"),
                    None => format!("{name} ({model})"),
                }
            }
            Some(Err(why)) => format!("lexical (semantic stage unavailable: {why})"),
            None => "lexical".into(),
        }
    }

    /// Resolve a turn with every ranking stage configured (the semantic one when it is), with
    /// the stages used in the report.
    pub(crate) async fn resolve_ranked(
        &self,
        view: &AgentView,
        message: &str,
        opts: &TurnOptions,
    ) -> TurnContext {
        let budget = opts
            .catalog_budget
            .unwrap_or(view.agent.config.catalog_budget);
        // The query is embedded only when the catalog can overflow (only then is it ranked).
        if self.semantic.is_none() || !view.catalog_may_overflow(budget) {
            return turn::resolve(view, message, opts);
        }
        match self.semantic_inputs(view, message).await {
            Ok(Some(inputs)) => {
                let mut ctx = turn::resolve_with(view, message, opts, Some(inputs.as_query()));
                // A model the stages run without (`skillbase model pull` installs it) is said.
                let notes: Vec<String> = self
                    .semantic()
                    .map(|s| {
                        let unavailable = match s.rerank() {
                            Some(Err(why)) => Some(format!("rerank stage unavailable: {why}")),
                            _ => None,
                        };
                        s.note()
                            .map(str::to_owned)
                            .into_iter()
                            .chain(unavailable)
                            .collect()
                    })
                    .unwrap_or_default();
                if ctx.report.catalog.ranked && !notes.is_empty() {
                    let stages = ctx.report.catalog.stages.take().unwrap_or_default();
                    ctx.report.catalog.stages = Some(format!("{stages} ({})", notes.join("; ")));
                }
                ctx
            }
            Ok(None) => turn::resolve(view, message, opts),
            Err(why) => {
                let mut ctx = turn::resolve(view, message, opts);
                if ctx.report.catalog.ranked {
                    ctx.report.catalog.stages =
                        Some(format!("lexical (semantic stage unavailable: {why})"));
                }
                ctx
            }
        }
    }

    /// The agent's view, rebuilt only when the index or the agent changed.
    pub fn view(&self, agent: &AgentName) -> Result<Arc<AgentView>> {
        let a = self
            .store
            .agent_cached(agent)
            .ok_or_else(|| RuntimeError::UnknownAgent(agent.to_string()))?;
        let index = self.store.index();
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = views.get_mut(agent)
            && c.view.generation == index.generation
            && c.view.agent.version == a.version
            && self.answers_hold(c)
        {
            return Ok(c.view.clone());
        }
        let (env, tools_generation) = self.environment();
        let view = Arc::new(AgentView::build(a, &index, &env));
        let checked = (tools_generation, std::time::Instant::now());
        let cached = CachedView {
            view: view.clone(),
            checked,
        };
        views.insert(agent.clone(), cached);
        Ok(view)
    }

    /// Whether the environment answers a cached view's requirements rest on still hold: asked
    /// again only when the tool table changed or 30 seconds passed (a program installed
    /// meanwhile), and never for a view whose skills require nothing of the environment.
    fn answers_hold(&self, c: &mut CachedView) -> bool {
        if c.view.answers.is_empty() {
            return true;
        }
        let generation = self.tools.get().map_or(0, |t| t.generation());
        if c.checked.0 == generation && c.checked.1.elapsed() < std::time::Duration::from_secs(30) {
            return true;
        }
        let (env, generation) = self.environment();
        if !skillbase_route::requires::answers_hold(&c.view.agent, &env, &c.view.answers) {
            return false;
        }
        c.checked = (generation, std::time::Instant::now());
        true
    }

    /// The one write path of skills, checking `requires:` against this runtime's environment.
    pub(crate) fn writer(&self) -> crate::write::SkillWriter {
        crate::write::SkillWriter::new(self.store.clone(), self.environment().0)
            .with_telemetry(self.telemetry.clone())
    }

    /// Whether this process has the session `session` of `agent` open (no database read).
    pub fn has_session(&self, agent: &AgentName, session: &str) -> bool {
        self.cached(agent, session).is_some()
    }

    /// The cached session, if this process has it open.
    pub(crate) fn cached(&self, agent: &AgentName, session: &str) -> Option<Arc<OpenSession>> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&session_key(agent, session))
            .cloned()
    }
    /// Drop sessions from the session cache (the retention job removed them from the store):
    /// a later turn in one of them starts it again, as new.
    pub fn forget_sessions(&self, ids: &[(String, String)]) {
        if ids.is_empty() {
            return;
        }
        let mut m = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        for (agent, id) in ids {
            if let Ok(agent) = AgentName::parse(agent) {
                m.remove(&session_key(&agent, id));
            }
        }
    }

    /// Open (or find) a session of `agent`: created in the store on first use, then cached.
    pub(crate) async fn open(&self, agent: &AgentName, session: &str) -> Result<Arc<OpenSession>> {
        if let Some(s) = self.cached(agent, session) {
            return Ok(s);
        }
        // A session that exists is read without a write; a new one is created first.
        let record = match self.store.session(agent, session).await? {
            Some(r) => r,
            None => {
                self.store.open_session(session, agent).await?;
                self.store
                    .session(agent, session)
                    .await?
                    .ok_or_else(|| RuntimeError::UnknownSession(session.to_owned()))?
            }
        };
        let open = Arc::new(OpenSession {
            activations: Mutex::new(record.activations),
            run: Mutex::new(None),
            pinned: Mutex::new(None),
            network: Mutex::new(0),
        });
        let mut m = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= MAX_CACHED_SESSIONS {
            m.clear();
        }
        m.insert(session_key(agent, session), open.clone());
        Ok(open)
    }

    /// Resolve a turn in a session, and write the files of skills with files to the session's
    /// workspace: the turn and the view it was resolved on, for the dispatcher to finish (the
    /// offered tools) and then record its events once, behind (a turn answers even while the
    /// events table refuses writes).
    pub(crate) async fn turn_unrecorded(
        &self,
        agent: &AgentName,
        session: &str,
        message: &str,
        opts: &TurnOptions,
    ) -> Result<(TurnContext, Arc<AgentView>)> {
        skillbase_route::paths::check_given(&opts.paths).map_err(RuntimeError::InvalidTurn)?;
        let view = self.view(agent)?;
        self.open(agent, session).await?;
        let mut ctx = self.resolve_ranked(&view, message, opts).await;
        if self.workspace_root.is_some() {
            for a in &ctx.report.activated {
                if let Some(s) = view.get(&a.name)
                    && s.entry.files.len() > 1
                    && let Err(w) = self.materialize(agent, session, &s.entry).await
                {
                    ctx.report.warnings.push(turn::Omission {
                        name: a.name.as_str().into(),
                        reason: format!("files not written: {w}").into(),
                        rank: None,
                    });
                }
            }
        }
        Ok((ctx, view))
    }

    /// Level 2, as [`crate::dispatch::Dispatcher::load`] makes it: with `run` (the session's driving
    /// skill as `(skill id, rev)`, or none), a first activation also opens a run of the loaded
    /// skill in the activation's transaction unless that skill is the one driving; with
    /// `redactor`, a first activation keeps its arguments (vault values redacted) so that
    /// [`Runtime::pinned`] renders the skill as it was loaded. Returns the new run's id.
    pub(crate) async fn load_skill_with_run(
        &self,
        agent: &AgentName,
        session: &str,
        name: &str,
        arguments: Option<&serde_json::Value>,
        run: Option<Option<(i64, i64)>>,
        redactor: Option<&crate::redact::Redactor>,
    ) -> Result<(LoadResult, Option<i64>)> {
        let view = self.view(agent)?;
        let Some(&i) = view.by_name.get(name) else {
            return Err(unknown_skill(&view, name));
        };
        if view.is_eager(i) {
            return Err(RuntimeError::Eager(name.to_owned()));
        }
        if view.is_explicit_only(i) {
            return Err(RuntimeError::ExplicitOnly(name.to_owned()));
        }
        let skill = &view.skills[i];
        // A staged candidate is served to its share of sessions (the same ones on every turn
        // and every server); the others get the active revision.
        let entry = skill.entry.served_to(session).clone();
        let args = arguments.cloned().unwrap_or_else(|| serde_json::json!({}));
        self.check_arguments(name, &entry, &args)?;
        let open = self.open(agent, session).await?;
        let files = loaded_files(&entry);
        let loading = Loading {
            name,
            entry: &entry,
            args: &args,
            unmet: &skill.unmet,
        };
        if open.has_active(name, &entry) {
            return Ok((self.already_active(agent, session, &loading, files), None));
        }
        let activations = open.activations();
        let remote = self.remote.contains(agent, session);
        let mut loaded = Loaded::new(&loading, remote);
        loaded.add_companions(&view, &skill.companions, name, remote, &activations);
        let (records, events) = loaded.records(agent, session, &args, redactor);
        // One commit for the activations, their events and the run.
        let start = run
            .filter(|driving| *driving != Some((entry.id, entry.active_rev)))
            .map(|_| (agent, &*entry));
        let run_id = self
            .store
            .record_activations_and_run(agent, session, &records, &events, start)
            .await?;
        open.add_activations(records);
        let Loaded {
            mut content,
            activated,
            entries,
        } = loaded;
        let (directory, warnings) = self
            .materialize_loaded(agent, session, remote, &entries)
            .await;
        if let Some(d) = &directory {
            self.push_directory(agent, session, d, &mut content);
        }
        Ok((
            LoadResult {
                content,
                already_active: false,
                activated,
                files,
                directory,
                warnings,
            },
            run_id,
        ))
    }

    /// Refuse `load_skill` arguments that are not a JSON object, that fail the skill's `inputs`
    /// schema (up to 10 problems, joined), or that are given to a skill declaring no inputs.
    fn check_arguments(
        &self,
        name: &str,
        entry: &skillbase_store::SkillEntry,
        args: &serde_json::Value,
    ) -> Result<()> {
        if !args.is_object() {
            return Err(RuntimeError::InvalidArguments {
                name: name.to_owned(),
                problems: "`arguments` must be a JSON object".into(),
            });
        }
        if let Some(schema) = &entry.meta.inputs {
            let validator = self.validator(entry, schema)?;
            let problems: Vec<String> = validator
                .iter_errors(args)
                .take(10)
                .map(|e| crate::tool::schema_problem(&e))
                .collect();
            if !problems.is_empty() {
                return Err(RuntimeError::InvalidArguments {
                    name: name.to_owned(),
                    problems: problems.join("; "),
                });
            }
        } else if args.as_object().is_some_and(|o| !o.is_empty()) {
            return Err(RuntimeError::InvalidArguments {
                name: name.to_owned(),
                problems: "this skill declares no inputs; call it without arguments".into(),
            });
        }
        Ok(())
    }

    /// A load whose revision is already active in the session: nothing activated, and as
    /// content, in a shared session the skill rendered again, otherwise only the note to follow
    /// what was loaded earlier.
    fn already_active(
        &self,
        agent: &AgentName,
        session: &str,
        loading: &Loading<'_>,
        files: Vec<String>,
    ) -> LoadResult {
        let (name, rev) = (loading.name, loading.entry.active_rev);
        let content = if self.shared.contains(agent, session) {
            format!(
                "Skill '{name}' is already active in this session (revision {rev}); here it is again.\n{}",
                loading.render(self.remote.contains(agent, session))
            )
        } else {
            format!(
                "Skill '{name}' is already active in this session (revision {rev}); follow the instructions loaded earlier."
            )
        };
        LoadResult {
            content,
            already_active: true,
            activated: Vec::new(),
            files,
            directory: None,
            warnings: Vec::new(),
        }
    }

    /// Write the files of each loaded skill into the session's workspace (when one is
    /// configured and the session is not `remote`). Returns the loaded skill's directory (the
    /// first entry's) and a warning per skill whose files were not written.
    async fn materialize_loaded(
        &self,
        agent: &AgentName,
        session: &str,
        remote: bool,
        entries: &[Arc<skillbase_store::SkillEntry>],
    ) -> (Option<String>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut directory = None;
        if self.workspace_root.is_none() || remote {
            return (directory, warnings);
        }
        for (k, e) in entries.iter().enumerate() {
            match self.materialize(agent, session, e).await {
                Ok(dir) => {
                    if k == 0 {
                        directory = Some(dir);
                    }
                }
                Err(w) => warnings.push(format!("files of '{}' were not written: {w}", e.name)),
            }
        }
        (directory, warnings)
    }

    /// Tell the model where the loaded skill's files are on this machine (when a workspace is
    /// configured): the full path (the harness shares this disk; `directory` stays relative to
    /// the session's folder).
    fn push_directory(
        &self,
        agent: &AgentName,
        session: &str,
        directory: &str,
        content: &mut String,
    ) {
        if let Some(root) = &self.workspace_root {
            let full = files::session_root(root, agent.as_str(), session).join(directory);
            let full = std::path::absolute(&full).unwrap_or(full);
            content.push_str(&format!("\nSkill directory: {}", full.display()));
        }
    }

    fn validator(
        &self,
        entry: &skillbase_store::SkillEntry,
        schema: &serde_json::Value,
    ) -> Result<Arc<jsonschema::Validator>> {
        let key = (entry.id, entry.active_rev);
        let mut cache = self.validators.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = cache.get(&key) {
            return Ok(v.clone());
        }
        let v = Arc::new(jsonschema::validator_for(schema).map_err(|e| {
            RuntimeError::Invalid(format!(
                "skill '{}' has an invalid inputs schema: {e}",
                entry.name
            ))
        })?);
        cache.insert(key, v.clone());
        Ok(v)
    }

    /// Write a skill's files into the session's workspace; returns the directory (relative to
    /// the session workspace).
    async fn materialize(
        &self,
        agent: &AgentName,
        session: &str,
        entry: &skillbase_store::SkillEntry,
    ) -> Result<String, String> {
        let root = self
            .workspace_root
            .clone()
            .ok_or("no workspace configured")?;
        let (_, bundle) = self
            .store
            .bundle(&entry.scope, &entry.name, Some(entry.active_rev))
            .await
            .map_err(|e| e.to_string())?;
        let session_root = files::session_root(&root, agent.as_str(), session);
        let scope = entry.scope.to_string();
        let name = entry.name.clone();
        tokio::task::spawn_blocking(move || {
            files::materialize(&session_root, &scope, &name, &bundle)
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Find allowed skills by relevance to a query (for the `search_skills` tool): at most
    /// `limit` hits (clamped to 1..=20), best first, skills scoring 0 left out. The ranking is
    /// the catalog's: lexical, fused with the semantic stage when it is configured.
    pub async fn search_skills(
        &self,
        agent: &AgentName,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        let view = self.view(agent)?;
        let limit = limit.clamp(1, 20);
        // Unavailable semantic stage: the lexical ranking (the catalog says why, per turn).
        let inputs = self.semantic_inputs(&view, query).await.ok().flatten();
        let folded = skillbase_route::trigger::fold_fast(query);
        let relevance = view.relevance(&folded, inputs.as_ref().map(SemanticInputs::as_query));
        // Explicit-only skills (`disable-model-invocation`) are never offered to a model: out of
        // the ranking before the confidence is computed over it.
        let order: Vec<(u32, f32)> = relevance
            .order()
            .into_iter()
            .filter(|&(i, _)| !view.is_explicit_only(i as usize))
            .collect();
        let ranked: Vec<usize> = order.iter().map(|&(i, _)| i as usize).collect();
        let confidence = relevance.confidence(&ranked, limit);
        Ok(order
            .into_iter()
            .zip(confidence)
            .filter(|((_, s), _)| *s > 0.0)
            .take(limit)
            .map(|((i, score), confidence)| {
                let e = &view.skills[i as usize].entry;
                SearchHit {
                    name: e.name.clone(),
                    description: e.meta.description.clone(),
                    score,
                    confidence,
                }
            })
            .collect())
    }

    /// What to re-attach after the harness compacts its context: every skill active in the
    /// session (loaded, with companions), most recent first, within `budget` tokens. A skill the
    /// agent may no longer see is not re-attached.
    pub async fn pinned(&self, agent: &AgentName, session: &str, budget: u32) -> Result<PinnedSet> {
        let view = self.view(agent)?;
        let record = self
            .store
            .session(agent, session)
            .await?
            .ok_or_else(|| RuntimeError::UnknownSession(session.to_owned()))?;
        let mut seen: Vec<&str> = Vec::new();
        let mut out = PinnedSet::default();
        let mut used = 0u32;
        for a in record.activations.iter().rev() {
            if seen.contains(&a.skill.as_str()) {
                continue;
            }
            seen.push(&a.skill);
            let Some(s) = view.get(&a.skill) else {
                continue;
            };
            // Loaded with arguments: rendered with them again (as stored: redacted).
            let with_args = a
                .arguments
                .as_deref()
                .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
                .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                .map(|args| {
                    let text = render_loaded(
                        &s.entry,
                        &args,
                        self.remote.contains(agent, session),
                        &s.unmet,
                    );
                    let t = tokens::count(&text);
                    (text, t)
                });
            let (text, t) = match &with_args {
                Some((text, t)) => (text, t),
                None => {
                    let (text, t) = s.wrapped();
                    (text, t)
                }
            };
            if used + t > budget {
                out.left_out.push(a.skill.clone());
                continue;
            }
            used += t;
            out.skills.push(Pinned {
                name: a.skill.clone(),
                content: text.clone(),
                tokens: *t,
            });
        }
        Ok(out)
    }
}

/// The refusal of a name the view does not hold. A withheld skill is named by the catalog of no
/// turn; the refusal says why it is not loadable (its reasons name what the skill requires,
/// never the name asked for).
fn unknown_skill(view: &AgentView, name: &str) -> RuntimeError {
    let hint = view
        .withheld
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, why)| {
            format!(
                " (that skill is withheld from this agent: {})",
                why.join("; ")
            )
        })
        .unwrap_or_default();
    RuntimeError::UnknownSkill {
        name: name.chars().take(100).collect(),
        hint,
    }
}

/// The skill's files as `load_skill` lists them: every path but the SKILL.md.
fn loaded_files(entry: &skillbase_store::SkillEntry) -> Vec<String> {
    entry
        .files
        .iter()
        .map(|f| f.path.clone())
        .filter(|p| p != "SKILL.md" && p != "skill.md")
        .collect()
}

/// Whether this revision of the skill `name` (in its scope) is active in the session.
fn is_active(
    activations: &[ActivationRecord],
    name: &str,
    entry: &skillbase_store::SkillEntry,
) -> bool {
    let mut scope = None;
    activations.iter().any(|a| {
        a.skill == name
            && a.rev == entry.active_rev
            && a.scope == *scope.get_or_insert_with(|| entry.scope.to_string())
    })
}

/// The skill a load asks for: the name as asked, the revision served to the session, the
/// arguments, and why its requirements are unmet (empty when they are met).
struct Loading<'a> {
    name: &'a str,
    entry: &'a Arc<skillbase_store::SkillEntry>,
    args: &'a serde_json::Value,
    unmet: &'a [String],
}

impl Loading<'_> {
    /// The skill's body as `load_skill` shows it (see [`render_loaded`]).
    fn render(&self, uris: bool) -> String {
        render_loaded(self.entry, self.args, uris, self.unmet)
    }
}

/// What a first activation loads: the text for the model, and the skill then each companion it
/// activates, as reported and as index entries (in the same order).
struct Loaded {
    content: String,
    activated: Vec<Activation>,
    entries: Vec<Arc<skillbase_store::SkillEntry>>,
}

impl Loaded {
    /// The loaded skill alone, rendered with its arguments.
    fn new(loading: &Loading<'_>, remote: bool) -> Loaded {
        let content = loading.render(remote);
        let activated = vec![Activation {
            name: loading.name.to_owned(),
            reason: "load".into(),
            rev: loading.entry.active_rev,
            tokens: tokens::count(&content),
        }];
        Loaded {
            content,
            activated,
            entries: vec![loading.entry.clone()],
        }
    }

    /// Add each companion of the skill `name` (`companions`, indices into the view) that is
    /// neither active in the session already nor eager.
    fn add_companions(
        &mut self,
        view: &AgentView,
        companions: &[usize],
        name: &str,
        remote: bool,
        activations: &[ActivationRecord],
    ) {
        for &c in companions {
            let ce = &view.skills[c].entry;
            if is_active(activations, &ce.name, ce) || view.is_eager(c) {
                continue;
            }
            let text = skillbase_route::view::wrap_body_for(
                ce,
                &ce.body,
                Some(name),
                remote,
                &view.skills[c].unmet,
            );
            self.content.push('\n');
            self.content.push_str(&text);
            self.activated.push(Activation {
                name: ce.name.clone(),
                reason: format!("companion:{name}"),
                rev: ce.active_rev,
                tokens: tokens::count(&text),
            });
            self.entries.push(ce.clone());
        }
    }

    /// The store's records of these activations and their `skill_activated` events. With
    /// `redactor` and arguments, the loaded skill's record keeps them (redacted).
    fn records(
        &self,
        agent: &AgentName,
        session: &str,
        args: &serde_json::Value,
        redactor: Option<&crate::redact::Redactor>,
    ) -> (Vec<ActivationRecord>, Vec<NewEvent>) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let mut events = Vec::new();
        let mut records = Vec::with_capacity(self.activated.len());
        let mut stored = redactor
            .filter(|_| args.as_object().is_some_and(|o| !o.is_empty()))
            .map(|r| r.redact_json_owned(args.clone()).to_string());
        for (a, e) in self.activated.iter().zip(&self.entries) {
            records.push(ActivationRecord {
                scope: e.scope.to_string(),
                skill: a.name.clone(),
                rev: a.rev,
                reason: a.reason.clone(),
                at: now,
                // The loaded skill's own activation comes first; companions take none.
                arguments: stored.take(),
            });
            events.push(crate::event::SkillActivated::event(
                a,
                Some(e.scope.to_string()),
                agent.as_str(),
                session,
                "load_skill",
            ));
        }
        (records, events)
    }
}

/// A skill's body as `load_skill` shows it: arguments substituted, wrapped, and the arguments
/// themselves attached.
fn render_loaded(
    entry: &skillbase_store::SkillEntry,
    args: &serde_json::Value,
    uris: bool,
    unmet: &[String],
) -> String {
    let body = substitute(&entry.body, args, &entry.meta.arguments);
    let mut content = skillbase_route::view::wrap_body_for(entry, &body, None, uris, unmet);
    if args.as_object().is_some_and(|o| !o.is_empty()) {
        content.push_str("\n<skill_arguments>");
        content.push_str(&args.to_string());
        content.push_str("</skill_arguments>");
    }
    content
}

/// Replace `{{key}}` with each top-level argument (strings as written, others as JSON), and
/// Claude Code's `$name` for a key the skill names in `arguments` (`names`), so one body reads
/// the same from `load_skill` and from `/name value`.
pub fn substitute(body: &str, args: &serde_json::Value, names: &[String]) -> String {
    let Some(map) = args.as_object() else {
        return body.to_owned();
    };
    let dollars = !names.is_empty() && body.contains('$');
    if map.is_empty() || (!body.contains("{{") && !dollars) {
        return body.to_owned();
    }
    let value = |key: &str| -> Option<String> {
        map.get(key).map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    // One pass, left to right: a value that itself contains `{{other}}` stays as written (a
    // key replaced at a time would fill it in too, letting one argument rewrite another).
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find(['{', '$']) {
        out.push_str(&rest[..start]);
        let at = &rest[start..];
        let found = if let Some(after) = at.strip_prefix("{{") {
            after
                .find("}}")
                .and_then(|end| value(&after[..end]).map(|v| (v, end + 4)))
        } else if let Some(after) = at.strip_prefix('$').filter(|_| dollars) {
            let word = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
                .count();
            names
                .iter()
                .find(|n| **n == after[..word])
                .and_then(|n| value(n))
                .map(|v| (v, word + 1))
        } else {
            None
        };
        match found {
            Some((v, len)) => {
                out.push_str(&v);
                rest = &at[len..];
            }
            None => {
                out.push_str(&at[..1]);
                rest = &at[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The events of a turn. The `turn` event holds the report with its omissions summarized
/// (counts, reasons, relevance ranks as ranges), what reached the prompt (activations, and the
/// ranked catalog's full entries with their ranks; names listed by name only as ranks), plus
/// the index generation and agent version the view was built from: with the message, enough to
/// list the omissions again. It stays under 4 KB at any library size. Made once, from the
/// finished turn (`Dispatcher::turn` calls it after the offered tools are counted).
pub(crate) fn turn_events(
    view: &skillbase_route::view::AgentView,
    agent: &AgentName,
    session: &str,
    ctx: &TurnContext,
) -> Vec<NewEvent> {
    let summary = skillbase_route::turn::OmissionDetail::Summary;
    let mut data = if ctx.report.catalog.detail == summary {
        serde_json::to_value(&ctx.report).unwrap_or_default()
    } else {
        let mut r = ctx.report.clone();
        r.catalog.detail = summary;
        serde_json::to_value(&r).unwrap_or_default()
    };
    // Smaller still than the answer's summary: a ranked catalog's full entries are the names of
    // `shown` (which has their ranks), and the names listed by name only are given by their
    // ranks, which with the message, index generation and agent version name them again.
    if ctx.report.catalog.ranked
        && let Some(c) = data.get_mut("catalog").and_then(|c| c.as_object_mut())
    {
        c.remove("full");
        if let Some(groups) = c
            .get_mut("name_only")
            .and_then(|n| n.get_mut("by_reason"))
            .and_then(|g| g.as_array_mut())
        {
            for g in groups.iter_mut().filter_map(|g| g.as_object_mut()) {
                if g.contains_key("ranks") {
                    g.remove("names");
                }
            }
        }
    }
    if let Some(o) = data.as_object_mut() {
        o.insert("generation".into(), view.generation.into());
        o.insert("agent_version".into(), view.agent.version.into());
    }
    let mut events = vec![NewEvent {
        kind: "turn".into(),
        agent: Some(agent.to_string()),
        session: Some(session.into()),
        data,
        ..NewEvent::default()
    }];
    for a in &ctx.report.activated {
        let e = &view.get(&a.name).map(|s| s.entry.clone());
        events.push(crate::event::SkillActivated::event(
            a,
            e.as_ref().map(|e| e.scope.to_string()),
            agent.as_str(),
            session,
            "context",
        ));
    }
    for o in &ctx.report.evicted {
        events.push(NewEvent {
            kind: "skill_evicted".into(),
            skill: Some(o.name.to_string()),
            agent: Some(agent.to_string()),
            session: Some(session.into()),
            data: serde_json::json!({"reason": o.reason}),
            ..NewEvent::default()
        });
    }
    let catalog = &ctx.report.catalog;
    if !catalog.name_only.is_empty() || !catalog.omitted.is_empty() {
        // Counts only: the `turn` event beside it has the summary.
        events.push(NewEvent {
            kind: "catalog_truncated".into(),
            agent: Some(agent.to_string()),
            session: Some(session.into()),
            data: serde_json::json!({
                "name_only": catalog.name_only.len(),
                "omitted": catalog.omitted.len(),
            }),
            ..NewEvent::default()
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use super::substitute;
    use serde_json::json;

    #[test]
    fn substitution_is_one_pass_and_leaves_unknown_placeholders() {
        let args = json!({"a": "{{b}}", "b": "B", "n": 3});
        assert_eq!(
            substitute("x {{a}} y {{b}} z {{n}} {{missing}} {{ {{b}}", &args, &[]),
            "x {{b}} y B z 3 {{missing}} {{ B"
        );
        assert_eq!(substitute("no placeholders", &args, &[]), "no placeholders");
        assert_eq!(substitute("{{a}", &args, &[]), "{{a}");
        assert_eq!(substitute("{{", &args, &[]), "{{");
        assert_eq!(substitute("é{{b}}é", &args, &[]), "éBé");
        assert_eq!(substitute("$b costs $5", &args, &[]), "$b costs $5");
    }

    #[test]
    fn claude_code_named_arguments_read_the_same_keys() {
        let names = vec!["env".to_owned(), "n".to_owned()];
        let args = json!({"env": "prod $n", "n": 3});
        // `$env` and `{{env}}` are one argument; a value is not expanded again; `$5`, `$0`, an
        // undeclared `$x` and a name's longer neighbour (`$envy`) stay.
        assert_eq!(
            substitute("$env/{{env}} $n $envy $x $5 $0 $", &args, &names),
            "prod $n/prod $n 3 $envy $x $5 $0 $"
        );
        assert_eq!(substitute("$env", &json!({}), &names), "$env");
    }
}
