//! The engine: one façade over the store, the runtime, the dispatcher and the vault, for a Rust
//! harness that embeds Skillbase (see `examples/embed.rs`). Its operations are what a harness
//! needs each turn and each call — [`Engine::turn`], [`Engine::call`], [`Engine::wait`],
//! [`Engine::finish`], [`Engine::pinned`], [`Engine::offered`], [`Engine::search`] — and every
//! one goes through the same pipeline the CLI and the server use (the offered set, the gate
//! against current grants and the driving skill's revision, bounds, redaction, events).

use crate::config::RuntimeConfig;
use crate::dispatch::{CallMode, CallOutcome, Dispatcher, OfferedSet};
use crate::runtime::{PinnedSet, Runtime, RuntimeError, SearchHit};
use crate::tool::{Registry, RegistryError, ToolDecl, ToolHandler};
use crate::vault::{Vault, VaultError, VaultKey};
use skillbase_route::turn::{TurnContext, TurnOptions};
use skillbase_route::view::AgentView;
use skillbase_store::config::Config;
use skillbase_store::{AgentName, DbUrl, RunRecord, Store, StoreError};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store could not be opened, or a configuration or seed could not be applied.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The vault key is missing or does not decrypt the stored entries.
    #[error(transparent)]
    Vault(#[from] VaultError),
    /// A tool declaration is invalid or declared twice.
    #[error(transparent)]
    Tool(#[from] RegistryError),
    /// A turn or call failed for a reason that is not an outcome (an unknown agent, the store).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// Nothing to open: neither [`EngineBuilder::sqlite`], [`EngineBuilder::database`] nor
    /// [`EngineBuilder::store`] was given.
    #[error("no store: give the builder a database (sqlite, database) or an open store")]
    NoStore,
}

/// Builds an [`Engine`]. Create it inside a tokio runtime (the engine starts its event writer).
#[derive(Default)]
pub struct EngineBuilder {
    db: Option<DbUrl>,
    store: Option<Arc<Store>>,
    workspace: Option<PathBuf>,
    vault_key: Option<VaultKey>,
    vault: Option<Arc<Vault>>,
    tools: Vec<(ToolDecl, Option<Arc<dyn ToolHandler>>)>,
    web_fetch: bool,
    configs: Vec<(String, String)>,
    runtime_configs: Vec<(RuntimeConfig, String)>,
    seeds: Vec<PathBuf>,
    semantic: Option<Arc<crate::semantic::Semantic>>,
    semantic_config: Option<crate::semantic::SemanticConfig>,
    mcp_servers: Vec<crate::gateway::McpServerConfig>,
    gateway_settings: Option<crate::gateway::GatewaySettings>,
    dreaming: Option<crate::dreaming::DreamingConfig>,
    telemetry: Option<crate::telemetry::TelemetryConfig>,
}

impl EngineBuilder {
    /// Open (creating and migrating) a SQLite database at `path`.
    pub fn sqlite(mut self, path: impl Into<PathBuf>) -> Self {
        self.db = Some(DbUrl::Sqlite(path.into()));
        self
    }

    /// Open a database by URL (`sqlite://…` or `postgres://…`).
    pub fn database(mut self, url: DbUrl) -> Self {
        self.db = Some(url);
        self
    }

    /// Use a store that is already open (shared with other parts of the program).
    pub fn store(mut self, store: Arc<Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where a session's skill files are written (level 3); without one, none are.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// The vault key: secrets are resolved inside tools and redacted from everything else.
    /// Without one, no vault is opened (and no call can use a secret).
    pub fn vault_key(mut self, key: VaultKey) -> Self {
        self.vault_key = Some(key);
        self
    }

    /// A tool declared without a handler in this process (a `[[tools]]` entry of
    /// `skillbase.toml`): offered to agents granted its class, refused at dispatch with
    /// `no_handler` until something runs it.
    pub fn declare(mut self, decl: ToolDecl) -> Self {
        self.tools.push((decl, None));
        self
    }

    /// A vault already opened over the same store (a server attaches its redactor to logging
    /// before building). Takes precedence over [`EngineBuilder::vault_key`].
    pub fn vault(mut self, vault: Arc<Vault>) -> Self {
        self.vault = Some(vault);
        self
    }

    /// A tool the harness runs itself (its class must be granted for an agent to be offered it).
    pub fn tool(mut self, decl: ToolDecl, handler: Arc<dyn ToolHandler>) -> Self {
        self.tools.push((decl, Some(handler)));
        self
    }

    /// Offer the built-in `web_fetch` (class `web_fetch`) to agents granted it.
    pub fn web_fetch(mut self) -> Self {
        self.web_fetch = true;
        self
    }

    /// Agents (and `[[tools]]` declarations, which need [`EngineBuilder::tool`] handlers to
    /// run) from `skillbase.toml` text.
    pub fn config_toml(mut self, text: impl Into<String>) -> Self {
        self.configs.push((text.into(), "skillbase.toml".into()));
        self
    }

    /// The runtime's tables of a `skillbase.toml` read already ([`RuntimeConfig::load`]), named
    /// `origin` in errors; the file's agents are the store's to apply
    /// ([`Config::apply`](skillbase_store::config::Config::apply)). Applied like
    /// [`EngineBuilder::config_toml`]'s tables.
    pub fn runtime_config(mut self, config: RuntimeConfig, origin: impl Into<String>) -> Self {
        self.runtime_configs.push((config, origin.into()));
        self
    }

    /// Seed a folder of skills into the shared scope at start (the folder wins until the skill
    /// is edited in the store).
    pub fn seed(mut self, dir: impl Into<PathBuf>) -> Self {
        self.seeds.push(dir.into());
        self
    }

    /// Put an upstream MCP server behind the engine (an `[mcp_servers.<name>]` table): its tools
    /// join the registry once it is connected (see `crate::gateway`).
    pub fn mcp_server(mut self, server: crate::gateway::McpServerConfig) -> Self {
        self.mcp_servers.push(server);
        self
    }

    /// Dreaming's settings (a `[dreaming]` table in a configuration replaces them).
    pub fn dreaming(mut self, config: crate::dreaming::DreamingConfig) -> Self {
        self.dreaming = Some(config);
        self
    }

    /// Export spans and metrics over OTLP (a `[telemetry]` table in a configuration replaces
    /// it; without either, the `OTEL_*` variables decide).
    pub fn telemetry(mut self, config: crate::telemetry::TelemetryConfig) -> Self {
        self.telemetry = Some(config);
        self
    }

    /// What the API may configure of the gateway (a `[gateway]` table in a configuration
    /// replaces it).
    pub fn gateway_settings(mut self, settings: crate::gateway::GatewaySettings) -> Self {
        self.gateway_settings = Some(settings);
        self
    }

    /// Rank with this semantic stage (a `[semantic]` table in a configuration replaces it).
    pub fn semantic(mut self, semantic: Arc<crate::semantic::Semantic>) -> Self {
        self.semantic = Some(semantic);
        self
    }

    /// Rank with the semantic stage this `[semantic]` table describes (its embedder is made
    /// when the engine is built, with the engine's vault).
    pub fn semantic_config(mut self, config: crate::semantic::SemanticConfig) -> Self {
        self.semantic_config = Some(config);
        self
    }

    /// Open everything and apply the configuration and seeds.
    pub async fn build(self) -> Result<Engine, EngineError> {
        let store = open_store(self.store, self.db).await?;
        let vault = match (self.vault, self.vault_key) {
            (Some(v), _) => Some(v),
            (None, Some(key)) => Some(Vault::open(store.clone(), key).await?),
            (None, None) => None,
        };
        let mut parts = Parts {
            registry: Registry::new(),
            // `http` tools share one web_fetch client (and its destination policy).
            http_client: Arc::new(crate::web_fetch::WebFetch::new()),
            semantic: self.semantic.map(Ok),
            mcp_servers: self.mcp_servers,
            gateway_settings: self.gateway_settings.unwrap_or_default(),
            dreaming: self.dreaming,
            telemetry: self.telemetry,
        };
        if let Some(c) = &self.semantic_config {
            parts.semantic = Some(
                crate::semantic::from_config(c, vault.clone())
                    .map_err(|e| StoreError::Invalid(e.to_string()))?,
            );
        }
        for (c, origin) in self.runtime_configs {
            parts.apply_runtime(c, &origin, vault.as_ref(), &self.tools)?;
        }
        for (text, origin) in &self.configs {
            parts
                .apply_config(text, origin, &store, vault.as_ref(), &self.tools)
                .await?;
        }
        for (decl, handler) in self.tools {
            parts.attach(decl, handler)?;
        }
        let mut names = std::collections::HashSet::new();
        for s in &parts.mcp_servers {
            if !names.insert(s.name.clone()) {
                return Err(StoreError::Invalid(format!(
                    "[mcp_servers.{}] is configured twice",
                    s.name
                ))
                .into());
            }
        }
        if self.web_fetch {
            crate::web_fetch::register(&mut parts.registry)?;
        }
        for dir in &self.seeds {
            skillbase_store::seed::sync_dir(&store, dir).await?;
        }
        parts.start(store, vault, self.workspace).await
    }
}

/// Open the store the builder names: the one given, else the database.
async fn open_store(
    store: Option<Arc<Store>>,
    db: Option<DbUrl>,
) -> Result<Arc<Store>, EngineError> {
    match (store, db) {
        (Some(s), _) => Ok(s),
        (None, Some(url)) => Ok(Arc::new(Store::open(&url).await?)),
        (None, None) => Err(EngineError::NoStore),
    }
}

/// What [`EngineBuilder::build`] gathers before the engine starts: the tool registry, and the
/// settings that a configuration's tables replace (the semantic stage, dreaming, the gateway)
/// or extend (the MCP servers).
struct Parts {
    registry: Registry,
    /// The one client every `http` tool shares.
    http_client: Arc<crate::web_fetch::WebFetch>,
    semantic: Option<Result<Arc<crate::semantic::Semantic>, String>>,
    mcp_servers: Vec<crate::gateway::McpServerConfig>,
    gateway_settings: crate::gateway::GatewaySettings,
    dreaming: Option<crate::dreaming::DreamingConfig>,
    /// OpenTelemetry export, when a configuration or the environment turns it on.
    telemetry: Option<crate::telemetry::TelemetryConfig>,
}

impl Parts {
    /// Register a tool: one declared with an `http` block and no handler runs through the
    /// shared client (and is declared to use the network); any other as it is given.
    fn attach(
        &mut self,
        mut decl: ToolDecl,
        handler: Option<Arc<dyn ToolHandler>>,
    ) -> Result<(), RegistryError> {
        match (&decl.http, handler) {
            (Some(spec), None) => {
                if !decl.permissions.contains(&crate::tool::Permission::Network) {
                    decl.permissions.push(crate::tool::Permission::Network);
                }
                let h: Arc<dyn ToolHandler> = Arc::new(crate::gateway::HttpTool::new(
                    spec.clone(),
                    self.http_client.clone(),
                ));
                let id = format!("tool:{}", decl.name);
                self.registry
                    .register_from(decl, Some(h), crate::tool::ToolSource::Config, id)
            }
            (_, handler) => self.registry.register(decl, handler),
        }
    }

    /// Apply one configuration (`text`, read from `origin`, which its errors name): its agents
    /// to the store, its `[[tools]]` (unless the builder was given a tool of that name), its
    /// MCP servers, and its `[semantic]`, `[dreaming]` and `[gateway]` tables.
    async fn apply_config(
        &mut self,
        text: &str,
        origin: &str,
        store: &Store,
        vault: Option<&Arc<Vault>>,
        given: &[(ToolDecl, Option<Arc<dyn ToolHandler>>)],
    ) -> Result<(), EngineError> {
        let config = Config::parse(text, origin)?;
        let runtime = RuntimeConfig::read(&config, origin)?;
        config.apply(store).await?;
        self.apply_runtime(runtime, origin, vault, given)
    }

    /// Take the runtime's tables of a configuration: each replaces the builder's setting, the
    /// servers are added, and a declared tool joins the registry unless the harness gave one of
    /// that name.
    fn apply_runtime(
        &mut self,
        c: RuntimeConfig,
        origin: &str,
        vault: Option<&Arc<Vault>>,
        given: &[(ToolDecl, Option<Arc<dyn ToolHandler>>)],
    ) -> Result<(), EngineError> {
        if let Some(s) = &c.semantic {
            self.semantic = Some(
                crate::semantic::from_config(s, vault.cloned())
                    .map_err(|e| StoreError::Invalid(format!("{origin}: {e}")))?,
            );
        }
        for decl in c.tools {
            if !given.iter().any(|(d, _)| d.name == decl.name) {
                self.attach(decl, None)?;
            }
        }
        self.mcp_servers.extend(c.mcp_servers);
        if c.dreaming.is_some() {
            self.dreaming = c.dreaming;
        }
        if let Some(g) = c.gateway {
            self.gateway_settings = g;
        }
        if c.telemetry.is_some() {
            self.telemetry = c.telemetry;
        }
        Ok(())
    }

    /// Start the engine: the runtime (with the semantic stage, or lexical ranking and a warning
    /// when it is unavailable), dreaming's settings (checked against the vault), the dispatcher,
    /// and the gateway with the servers configured here and through the API.
    async fn start(
        self,
        store: Arc<Store>,
        vault: Option<Arc<Vault>>,
        workspace: Option<PathBuf>,
    ) -> Result<Engine, EngineError> {
        let mut runtime = Runtime::new(store.clone(), workspace);
        if let Some(s) = self.semantic {
            if let Err(why) = &s {
                tracing::warn!("semantic stage unavailable, ranking lexically: {why}");
            }
            runtime = runtime.with_semantic(s);
        }
        // A configuration's `[telemetry]` (or the builder's), else the `OTEL_*` variables alone.
        let telemetry_config = match self.telemetry {
            Some(c) => Some(c),
            None => {
                crate::telemetry::TelemetryConfig::resolve(None, &|k: &str| std::env::var(k).ok())
                    .map_err(StoreError::Invalid)?
            }
        };
        let telemetry = telemetry_config
            .as_ref()
            .map(crate::telemetry::Telemetry::start)
            .transpose()
            .map_err(StoreError::Invalid)?;
        runtime = runtime.with_telemetry(telemetry.clone());
        let runtime = Arc::new(runtime);
        if let Some(c) = &self.dreaming {
            c.check_vault(vault.is_some())
                .map_err(StoreError::Invalid)?;
        }
        let dispatcher = Arc::new(Dispatcher::new(
            runtime,
            self.registry,
            vault.clone(),
            telemetry.clone(),
        ));
        let gateway = crate::gateway::Gateway::start(
            self.mcp_servers,
            self.gateway_settings,
            dispatcher.tools().clone(),
            vault.clone(),
            store.clone(),
        );
        // The servers configured through the API, as stored.
        gateway.refresh().await?;
        Ok(Engine {
            store,
            vault,
            dispatcher,
            gateway,
            dreaming: self.dreaming.map(Arc::new),
            telemetry,
        })
    }
}

/// Skillbase embedded in a harness: the one service of this crate. Every operation goes through
/// the pipeline the CLI and the server use (the offered set, the gate against current grants
/// and the driving skill's revision, bounds, redaction, events). Cloning is cheap (shared
/// handles): a server's handlers each hold the same engine.
///
/// ```no_run
/// # async fn demo() -> Result<(), skillbase_runtime::EngineError> {
/// use skillbase_runtime::Engine;
/// let engine = Engine::builder()
///     .sqlite("skillbase.db")
///     .config_toml("[agents.support]\nskills = \"all\"\n")
///     .build()
///     .await?;
/// let agent = "support".parse().unwrap();
/// let turn = engine.turn(&agent, "s1", "a refund for order ord_1", &Default::default()).await?;
/// println!("{}", turn.catalog.unwrap_or_default());
/// engine.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Engine {
    store: Arc<Store>,
    vault: Option<Arc<Vault>>,
    dispatcher: Arc<Dispatcher>,
    gateway: Arc<crate::gateway::Gateway>,
    /// The `[dreaming]` table, when the configuration has one.
    dreaming: Option<Arc<crate::dreaming::DreamingConfig>>,
    /// OpenTelemetry export, when turned on.
    telemetry: Option<crate::telemetry::Telemetry>,
}

impl Engine {
    /// Start building an engine.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// The store (for authoring, imports and the event log).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The one write path of skills (see [`crate::SkillWriter`]): what a put or an import answers is
    /// checked against the tools and servers this engine has.
    pub fn writer(&self) -> crate::write::SkillWriter {
        self.dispatcher.runtime.writer()
    }

    /// The vault, when a key was given.
    pub fn vault(&self) -> Option<&Arc<Vault>> {
        self.vault.as_ref()
    }

    /// The upstream MCP servers' connections (those of the file, and those configured through
    /// the API).
    pub fn gateway(&self) -> &Arc<crate::gateway::Gateway> {
        &self.gateway
    }

    /// The result of a harness-run tool's call (see `Dispatcher::post_result`).
    pub async fn post_result(
        &self,
        agent: &AgentName,
        session: &str,
        call_id: &str,
        result: Result<serde_json::Value, String>,
    ) -> Result<CallOutcome, crate::dispatch::PostResultError> {
        self.dispatcher
            .post_result(agent, session, call_id, result)
            .await
    }

    /// What the model is shown this turn: the eager prefix, the bodies triggered by `message`,
    /// the budgeted catalog, the offered tools, and the report of every decision.
    pub async fn turn(
        &self,
        agent: &AgentName,
        session: &str,
        message: &str,
        opts: &TurnOptions,
    ) -> Result<TurnContext, RuntimeError> {
        self.dispatcher.turn(agent, session, message, opts).await
    }

    /// One call the model made, by its wire name, through the whole pipeline. A refusal or a
    /// failure is an outcome, not an error.
    pub async fn call(
        &self,
        agent: &AgentName,
        session: &str,
        tool: &str,
        arguments: serde_json::Value,
        mode: CallMode,
    ) -> Result<CallOutcome, RuntimeError> {
        self.dispatcher
            .call(agent, session, tool, arguments, mode)
            .await
    }

    /// Load a skill for the session on the harness's word (level 2) — what a model's
    /// `load_skill` call does, with the typed result: the body, its companions and files, and
    /// the skill driving the session from now on.
    pub async fn load(
        &self,
        agent: &AgentName,
        session: &str,
        skill: &str,
        arguments: Option<&serde_json::Value>,
    ) -> Result<crate::runtime::LoadResult, RuntimeError> {
        self.dispatcher.load(agent, session, skill, arguments).await
    }

    /// The outcome of a detached call, waiting up to `timeout`.
    pub async fn wait(&self, call_id: &str, timeout: Duration) -> Option<CallOutcome> {
        self.dispatcher.wait(call_id, timeout).await
    }

    /// End the session's driving skill on the harness's word (`success` or `failure`): the run
    /// and whether its revision was disabled for drift.
    pub async fn finish(
        &self,
        agent: &AgentName,
        session: &str,
        outcome: &str,
        note: &str,
    ) -> Result<Option<(RunRecord, bool)>, RuntimeError> {
        self.dispatcher
            .finish_run(agent, session, outcome, note)
            .await
    }

    /// The skills active in a session, re-rendered within `budget` tokens, most recent first
    /// (after the harness compacted its context).
    pub async fn pinned(
        &self,
        agent: &AgentName,
        session: &str,
        budget: u32,
    ) -> Result<PinnedSet, RuntimeError> {
        self.dispatcher.runtime.pinned(agent, session, budget).await
    }

    /// What the agent is offered (tools and callable skills) and what is withheld.
    pub fn offered(&self, agent: &AgentName) -> Result<Arc<OfferedSet>, RuntimeError> {
        self.dispatcher.offered(agent)
    }

    /// The agent's skills ranked for a query, as `search_skills` answers.
    pub async fn search(
        &self,
        agent: &AgentName,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, RuntimeError> {
        self.dispatcher
            .runtime
            .search_skills(agent, query, limit)
            .await
    }

    /// Store every event recorded so far (whoever reads the events table calls this first).
    pub async fn flush(&self) {
        self.dispatcher.flush().await;
    }

    /// The skills `agent` may see, as turns see them (cached until the index, the agent or an
    /// environment answer changes).
    pub fn view(&self, agent: &AgentName) -> Result<Arc<AgentView>, RuntimeError> {
        self.dispatcher.runtime.view(agent)
    }

    /// Whether `agent` has a session `session` (in memory or in the store).
    pub fn has_session(&self, agent: &AgentName, session: &str) -> bool {
        self.dispatcher.runtime.has_session(agent, session)
    }

    /// Mark a session as reached by more than one client (MCP stateless requests).
    pub fn mark_shared(&self, agent: &AgentName, session: &str) {
        self.dispatcher.runtime.mark_shared(agent, session);
    }

    /// Mark a session as reached over the network (its workspace is not the caller's).
    pub fn mark_remote(&self, agent: &AgentName, session: &str) {
        self.dispatcher.runtime.mark_remote(agent, session);
    }

    /// Drop the in-memory state of sessions the retention job removed, by (agent, id).
    pub fn forget_sessions(&self, ids: &[(String, String)]) {
        self.dispatcher.runtime.forget_sessions(ids);
    }

    /// What this process can answer for `requires:` (commands, tools, servers), and its
    /// generation (a change rebuilds the views).
    pub fn environment(&self) -> (Arc<crate::environment::Environment>, u64) {
        self.dispatcher.runtime.environment()
    }

    /// The stages a ranking uses here: `lexical`, or `lexical+semantic (<model>)`.
    pub fn stages(&self) -> String {
        self.dispatcher.runtime.stages()
    }

    /// The semantic stage, when one is configured and loaded.
    pub fn semantic(&self) -> Option<&Arc<crate::semantic::Semantic>> {
        self.dispatcher.runtime.semantic()
    }

    /// Compute (or read) the semantic vectors of `agent`'s skills: `Ok(None)` when no stage is
    /// configured. A server runs it in the background after it starts.
    pub async fn warm_semantic(
        &self,
        agent: &AgentName,
    ) -> Result<Option<crate::semantic::FillReport>, RuntimeError> {
        self.dispatcher.runtime.warm_semantic(agent).await
    }

    /// The semantic stage's inputs for an evaluation of `messages` on `view`: `Ok(None)` when
    /// no stage is configured, `Err(why)` when it cannot answer.
    pub async fn query_vectors(
        &self,
        view: &AgentView,
        messages: &[&str],
    ) -> Result<Option<crate::semantic::QueryVectors>, String> {
        self.dispatcher.runtime.query_vectors(view, messages).await
    }

    /// The `[dreaming]` table (support, schedule, model), when the configuration has one.
    pub fn dreaming(&self) -> Option<&crate::dreaming::DreamingConfig> {
        self.dreaming.as_deref()
    }

    /// Import a conversation into the agent's session for learning (see
    /// [`crate::transcript`]): checked whole, redacted, recorded.
    pub async fn import_transcript(
        &self,
        agent: &AgentName,
        session: &str,
        t: &crate::transcript::Transcript,
    ) -> Result<crate::transcript::Imported, crate::transcript::TranscriptError> {
        self.dispatcher.import_transcript(agent, session, t).await
    }

    /// The class of the tool of wire name `name` as configured now (a built-in, or one of the
    /// registry's, upstream servers' included); `None` for no such tool.
    pub fn tool_class(&self, name: &str) -> Option<String> {
        crate::builtin::Builtin::from_name(name)
            .map(|b| b.class().to_owned())
            .or_else(|| {
                self.dispatcher
                    .registry()
                    .get(name)
                    .map(|t| t.decl.class.clone())
            })
    }

    /// Every tool class some tool provides now (the built-ins' and the registry's), sorted.
    pub fn tool_classes(&self) -> Vec<String> {
        let mut classes: Vec<String> = crate::builtin::Builtin::ALL
            .iter()
            .map(|b| b.class().to_owned())
            .chain(
                self.dispatcher
                    .registry()
                    .all()
                    .iter()
                    .map(|t| t.decl.class.clone()),
            )
            .collect();
        classes.sort();
        classes.dedup();
        classes
    }

    /// The live tool table (a server listens to it for `tools/list_changed`).
    pub fn tools(&self) -> &Arc<crate::tool::ToolTable> {
        self.dispatcher.tools()
    }

    /// Every tool the engine knows (built-ins, the registry, upstream servers' state), with
    /// the agents of `agents` granted each.
    pub fn tool_listing(&self, agents: &[skillbase_store::Agent]) -> Vec<crate::gateway::ToolInfo> {
        crate::gateway::listing(&self.dispatcher, Some(&self.gateway), agents)
    }

    /// Store every event recorded so far and close the store.
    pub async fn close(self) {
        self.gateway.shutdown().await;
        self.dispatcher.flush().await;
        if let Some(t) = &self.telemetry {
            t.flush(Duration::from_secs(5)).await;
        }
        self.store.close().await;
    }

    /// What the OpenTelemetry exporter sent, dropped and failed (`None` when export is off).
    pub fn telemetry_stats(&self) -> Option<crate::telemetry::TelemetryStats> {
        self.telemetry.as_ref().map(|t| t.stats())
    }

    /// Send the spans queued so far and the metrics now, waiting up to `timeout` (export
    /// otherwise runs on its own schedule).
    pub async fn flush_telemetry(&self, timeout: Duration) {
        if let Some(t) = &self.telemetry {
            t.flush(timeout).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_builder_without_a_store_says_what_is_missing() {
        let e = Engine::builder().build().await.err().expect("no store");
        assert!(matches!(e, EngineError::NoStore), "{e}");
        assert!(e.to_string().contains("give the builder a database"));
    }

    #[tokio::test]
    async fn a_bad_configuration_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::builder()
            .sqlite(dir.path().join("db.sqlite"))
            .config_toml("[agents.a.grants]\nhosts = [\"https://x/\"]\n")
            .build()
            .await
            .err()
            .expect("refused");
        assert!(e.to_string().contains("grants.hosts"), "{e}");
    }
}
