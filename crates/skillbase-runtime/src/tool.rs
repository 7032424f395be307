//! Tool declarations, handlers and the registry.
//!
//! A tool is an executable capability an operator configures (built in, or registered by a Rust
//! embedder). It declares its parameters and returns (JSON Schema), its class (what a grant
//! names), its permissions and its cost class. Handlers never see the agent's grants directly:
//! they get a [`CallContext`] whose vault and destination checks are already intersected with
//! the agent's current grants and the driving skill's declarations.

use crate::builtin::Builtin;
use crate::redact::Redactor;
use crate::rule::Rule;
use crate::vault::{Secret, Vault};
use serde::{Deserialize, Serialize};
use skillbase_format::Cost;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What a tool may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Reaches other hosts: each call counts against the session's
    /// `max_network_calls_per_session` before it runs.
    Network,
    /// Reads or writes files; declared for operators, the dispatcher sets no bound on it.
    Filesystem,
    /// Touches nothing outside the runtime (notes, skills, computation).
    None,
}

/// A tool's declaration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDecl {
    /// The registry key and the wire name the model calls: 1-64 ASCII letters, digits, `_`
    /// and `-`, not a built-in's name.
    pub name: String,
    /// What the tool does and when to call it, shown to the model in the tool definition.
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
    /// JSON Schema of the result (documentation; results are capped and redacted, not validated).
    #[serde(default)]
    pub returns: Option<serde_json::Value>,
    /// The class a grant names (`web_fetch`, `notes`, `skills`, ...).
    pub class: String,
    /// What the tool touches (empty by default); [`Permission::Network`] puts every call under
    /// the session's network-call budget.
    #[serde(default)]
    pub permissions: Vec<Permission>,
    /// The latency class (default `immediate`): sets the call's timeout (`timeout_for`),
    /// whether it may be detached, and which turn cadences offer it.
    #[serde(default)]
    pub cost: Cost,
    /// Who executes the tool: `skillbase` (default: a handler in this process: an embedder's,
    /// an upstream MCP server's, an `http` request) or `harness` (the platform runs it itself:
    /// the dispatcher authorizes each call, returns its id, and takes the result the harness
    /// posts back for redaction, caps, recording and run accounting).
    #[serde(default, skip_serializing_if = "Runs::is_skillbase")]
    pub runs: Runs,
    /// The tool is one HTTP request (see `crate::gateway::spec::HttpSpec`): made by `web_fetch`'s
    /// client, under the call's destination policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::gateway::spec::HttpSpec>,
}

impl Default for ToolDecl {
    /// An immediate tool of no class with no arguments: fill in `name`, `description`, `class`.
    fn default() -> ToolDecl {
        ToolDecl {
            name: String::new(),
            description: String::new(),
            parameters: empty_object_schema(),
            returns: None,
            class: String::new(),
            permissions: Vec::new(),
            cost: Cost::default(),
            runs: Runs::default(),
            http: None,
        }
    }
}

/// Who executes a tool's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    /// A handler in this process.
    #[default]
    Skillbase,
    /// The harness: authorized here, executed there, its result posted back.
    Harness,
}

impl Runs {
    fn is_skillbase(&self) -> bool {
        *self == Runs::Skillbase
    }
}

/// Where a registered tool comes from (what `skillbase tools` shows as its source).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// A `[[tools]]` entry of `skillbase.toml` (declared; runnable when a handler is attached,
    /// it `runs = "harness"`, or it is an `http` tool).
    Config,
    /// Registered by the program embedding the engine, with its handler.
    Embedder,
    /// A tool of an upstream MCP server (`[mcp_servers.<server>]`).
    Mcp {
        /// The server's name in the configuration.
        server: String,
        /// The tool's name on that server.
        tool: String,
    },
}

/// Whether a tool can run right now (an upstream server may be down).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Calls go through.
    Ready,
    /// Calls are refused with [`Rule::ToolUnavailable`] and this reason (for the model).
    Unavailable(String),
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// How long a call of each cost class may run before it is cancelled.
pub fn timeout_for(cost: Cost) -> Duration {
    match cost {
        Cost::Immediate => Duration::from_secs(5),
        Cost::Seconds => Duration::from_secs(30),
        Cost::TensOfSeconds => Duration::from_secs(120),
    }
}

/// A failure inside a tool, in words the model can act on. Redacted before anyone sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// What went wrong, for the model: the outcome's message after redaction.
    pub message: String,
    /// Set when the tool refused by a rule of the envelope rather than failed: the call then
    /// comes out as `refused` with this rule, recorded as a `call_refused` event.
    #[serde(skip)]
    pub rule: Option<Rule>,
    /// What kind of failure it is, for callers that act on it without reading the message
    /// (REST maps it to a status).
    #[serde(skip)]
    pub kind: Option<Failure>,
}

/// What kind of failure a tool reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// A write lost to a newer revision (the expected revision is stale).
    Stale,
    /// The name is taken, or the record is retired.
    Conflict,
    /// Nothing by that name (or nothing the caller may see).
    NotFound,
    /// The record exists but not the revision asked for.
    NoRevision,
    /// The input is not acceptable (an invalid skill, bad arguments).
    Invalid,
    /// The store failed.
    Internal,
    /// An upstream server answered with an error, or its connection failed during the call.
    Upstream,
}

impl Failure {
    /// The kind as its wire name (`stale`, `conflict`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Stale => "stale",
            Failure::Conflict => "conflict",
            Failure::NotFound => "not_found",
            Failure::NoRevision => "no_revision",
            Failure::Invalid => "invalid",
            Failure::Internal => "internal",
            Failure::Upstream => "upstream",
        }
    }
}

impl ToolError {
    /// A plain failure (the outcome is `failed`, no kind), unless the tool recorded a refusal
    /// with [`CallContext::refuse`] during the call: then it is `refused` with that rule.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            rule: None,
            kind: None,
        }
    }

    /// A refusal by `rule` (for built-in tools that apply a rule themselves).
    pub fn refused(rule: Rule, message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            rule: Some(rule),
            kind: None,
        }
    }

    /// A failure of a known kind.
    pub fn failed(kind: Failure, message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            rule: None,
            kind: Some(kind),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a handler returns: the result as JSON (redacted and capped in tokens by the dispatcher)
/// or a [`ToolError`]. Dropped, and so cancelled, when the call passes its deadline.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<serde_json::Value, ToolError>> + Send>>;

/// Runs a tool. Registered by name; a Rust embedder implements it for its own tools.
pub trait ToolHandler: Send + Sync {
    /// Run one call. `args` already passed the tool's parameters schema and the call passed
    /// the capability gate; vault values and destinations go through `ctx`'s checks.
    fn call(&self, ctx: CallContext, args: serde_json::Value) -> ToolFuture;

    /// Whether calls can run now; checked at the handler stage, before the call's bounds are
    /// taken. A handler whose backend can go away (an upstream MCP server) says so here.
    fn availability(&self) -> Availability {
        Availability::Ready
    }
}

impl<F> ToolHandler for F
where
    F: Fn(CallContext, serde_json::Value) -> ToolFuture + Send + Sync,
{
    fn call(&self, ctx: CallContext, args: serde_json::Value) -> ToolFuture {
        self(ctx, args)
    }
}

/// A refusal raised inside a call (a vault lookup or destination outside the envelope).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InnerRefusal {
    /// The envelope rule that refused.
    pub rule: Rule,
    /// What was refused and why, for the model (redacted before anyone sees it).
    pub message: String,
}

/// What a handler may use: the session, gated vault access and the destination policy.
#[derive(Clone)]
pub struct CallContext {
    /// The agent making the call, whose grants the allow-lists below were read from.
    pub agent: String,
    /// The session the call belongs to.
    pub session: String,
    /// The call's id (`call-<ms hex>-<n>`), as its outcome and events carry it.
    pub call_id: String,
    /// The skill driving the turn, if any.
    pub skill: Option<String>,
    /// Vault entries this call may resolve: granted to the agent and, under a skill, declared
    /// by its active revision.
    pub vault_allowed: Arc<Vec<String>>,
    /// Destination hosts this call may reach (same intersection).
    pub hosts_allowed: Arc<Vec<String>>,
    pub(crate) vault: Option<Arc<Vault>>,
    pub(crate) refusals: Arc<Mutex<Vec<InnerRefusal>>>,
    /// How long the call may run: its cost class's `timeout_for`; past it the dispatcher
    /// drops the call's future.
    pub deadline: Duration,
    /// Most bytes the tool should read from outside (2 MiB from the dispatcher); `web_fetch`
    /// cuts bodies here. The result's token cap is applied after, separately.
    pub max_response_bytes: usize,
    /// The call's span, when OpenTelemetry export is on (see [`CallContext::traceparent`]).
    pub(crate) trace: Option<crate::telemetry::SpanScope>,
}

impl CallContext {
    /// The call's W3C `traceparent`, when OpenTelemetry export is on: a handler that calls a
    /// traced service passes it on, so the service's spans join the call's trace.
    pub fn traceparent(&self) -> Option<String> {
        self.trace.as_ref().map(|t| t.traceparent())
    }

    /// Resolve a vault entry for use inside this tool, or refuse (recorded as an event).
    pub fn secret(&self, name: &str) -> Result<Arc<Secret>, ToolError> {
        if !self.vault_allowed.iter().any(|v| v == name) {
            let message = match &self.skill {
                // The entry's name is not quoted back: it comes from the call's arguments, and a
                // text that echoes (redacted) input would tell the caller whether it held a secret.
                Some(s) => format!(
                    "the vault entry asked for is not both granted to agent '{}' and declared by skill '{s}'",
                    self.agent
                ),
                None => format!(
                    "the vault entry asked for is not granted to agent '{}'",
                    self.agent
                ),
            };
            self.refuse(Rule::VaultNotAllowed, &message);
            return Err(ToolError::new(message));
        }
        self.vault
            .as_ref()
            .and_then(|v| v.resolve(name))
            .ok_or_else(|| ToolError::new(format!("vault entry '{name}' is not set")))
    }

    /// Record a refusal made inside the tool.
    pub fn refuse(&self, rule: Rule, message: &str) {
        if let Ok(mut r) = self.refusals.lock() {
            r.push(InnerRefusal {
                rule,
                message: message.to_owned(),
            });
        }
    }

    /// The redactor to apply to anything the tool logs.
    pub fn redactor(&self) -> Arc<Redactor> {
        self.vault
            .as_ref()
            .map(|v| v.redactor())
            .unwrap_or_else(Redactor::empty)
    }
}

/// A registered tool: its declaration, compiled parameter schema, and handler.
pub struct RegisteredTool {
    /// The declaration as registered.
    pub decl: ToolDecl,
    /// `decl.parameters` compiled at registration; every call's arguments are checked with it.
    pub validator: jsonschema::Validator,
    /// What runs the tool; `None` for a declared-only tool, whose calls are refused with
    /// `no_handler` (and for a harness-run tool, which the harness executes).
    pub handler: Option<Arc<dyn ToolHandler>>,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// The offered entry's id: `tool:<name>`, or `tool:<server>/<name>` for an upstream tool.
    pub id: String,
}

/// The tools an install declares (the operator's `[[tools]]`, an embedder's own, and the tools
/// of upstream MCP servers), by wire name; an agent is offered one only while its class is
/// granted. Cheap to clone (the tools are shared): the dispatcher swaps in a new registry when
/// an upstream server's tool list changes.
#[derive(Default, Clone)]
pub struct Registry {
    tools: HashMap<String, Arc<RegisteredTool>>,
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The tool's name (as given) is not 1-64 ASCII letters, digits, `_` and `-`.
    #[error("tool '{0}': the name must be 1-64 characters of letters, digits, `_` and `-`")]
    BadName(String),
    /// The declared `parameters` do not compile as JSON Schema.
    #[error("tool '{name}': invalid parameters schema: {message}")]
    BadSchema {
        /// The tool whose declaration was refused.
        name: String,
        /// The schema compiler's error.
        message: String,
    },
    /// A tool of this name is already registered (use [`Registry::set_handler`] to replace a
    /// handler).
    #[error("tool '{0}' is registered twice")]
    Duplicate(String),
    /// The declared class (of the tool named here) fails the format crate's class grammar,
    /// so no grant could name it.
    #[error("tool '{0}': class must be lowercase letters, digits, `_` and `-`")]
    BadClass(String),
    /// The name is a built-in tool's ([`Builtin`]); built-ins are not in the registry.
    #[error("tool '{0}': the name is one of Skillbase's built-in tools; choose another")]
    Reserved(String),
    /// The `http` table is not a request Skillbase can make, or contradicts `runs`.
    #[error("tool '{name}': {message}")]
    BadHttp {
        /// The tool whose declaration was refused.
        name: String,
        /// What to fix.
        message: String,
    },
}

fn valid_tool_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Registry {
    /// An empty registry (the built-ins are never in it; they are offered beside it).
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Register a declaration with its handler (`None`: declared but not runnable here, refused
    /// at the handler-lookup stage).
    pub fn register(
        &mut self,
        decl: ToolDecl,
        handler: Option<Arc<dyn ToolHandler>>,
    ) -> Result<(), RegistryError> {
        let source = if handler.is_some() {
            ToolSource::Embedder
        } else {
            ToolSource::Config
        };
        let id = format!("tool:{}", decl.name);
        self.register_from(decl, handler, source, id)
    }

    /// Register a tool with its source and offered id (the gateway's tools).
    pub fn register_from(
        &mut self,
        decl: ToolDecl,
        handler: Option<Arc<dyn ToolHandler>>,
        source: ToolSource,
        id: String,
    ) -> Result<(), RegistryError> {
        if !valid_tool_name(&decl.name) {
            return Err(RegistryError::BadName(decl.name));
        }
        if skillbase_format::validate::check_tool_class(&decl.class).is_some() {
            return Err(RegistryError::BadClass(decl.name));
        }
        if Builtin::from_name(&decl.name).is_some() {
            return Err(RegistryError::Reserved(decl.name));
        }
        if self.tools.contains_key(&decl.name) {
            return Err(RegistryError::Duplicate(decl.name));
        }
        if let Some(h) = &decl.http {
            let bad = |message: String| RegistryError::BadHttp {
                name: decl.name.clone(),
                message,
            };
            if decl.runs == Runs::Harness {
                return Err(bad(
                    "an `http` tool is run by Skillbase; drop `runs = \"harness\"` or the `http` table".into(),
                ));
            }
            h.check().map_err(bad)?;
        }
        let validator =
            jsonschema::validator_for(&decl.parameters).map_err(|e| RegistryError::BadSchema {
                name: decl.name.clone(),
                message: e.to_string(),
            })?;
        self.tools.insert(
            decl.name.clone(),
            Arc::new(RegisteredTool {
                decl,
                validator,
                handler,
                source,
                id,
            }),
        );
        Ok(())
    }

    /// Drop every tool of upstream server `server` (before its new list is registered).
    pub fn remove_server(&mut self, server: &str) {
        self.tools
            .retain(|_, t| !matches!(&t.source, ToolSource::Mcp { server: s, .. } if s == server));
    }

    /// Whether a wire name is taken (by a registered tool or a built-in).
    pub fn is_taken(&self, name: &str) -> bool {
        self.tools.contains_key(name) || Builtin::from_name(name).is_some()
    }

    /// Attach or replace the handler of a declared tool.
    pub fn set_handler(&mut self, name: &str, handler: Arc<dyn ToolHandler>) -> bool {
        match self.tools.get(name) {
            Some(t) => {
                let t = Arc::new(RegisteredTool {
                    decl: t.decl.clone(),
                    validator: jsonschema::validator_for(&t.decl.parameters)
                        .expect("compiled once already"),
                    handler: Some(handler),
                    source: t.source.clone(),
                    id: t.id.clone(),
                });
                self.tools.insert(name.to_owned(), t);
                true
            }
            None => false,
        }
    }

    /// The tool registered under its declared `name` (not its wire name), if any.
    pub fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools.get(name)
    }

    /// Every tool, sorted by name.
    pub fn all(&self) -> Vec<&Arc<RegisteredTool>> {
        let mut v: Vec<_> = self.tools.values().collect();
        v.sort_by(|a, b| a.decl.name.cmp(&b.decl.name));
        v
    }
}

/// Tool declarations from the `[[tools]]` tables of `skillbase.toml`.
pub fn decls_from_tables(tables: &[toml::Table]) -> Result<Vec<ToolDecl>, String> {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            <ToolDecl as Deserialize>::deserialize(toml::Value::Table(t.clone()))
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

/// The registry in force. Swapped whole (copy on write) when an upstream server's tools change,
/// so a call or a turn always reads one consistent registry; each swap ticks
/// [`ToolTable::subscribe`] (a server sends `tools/list_changed` to its clients from it).
pub struct ToolTable {
    current: arc_swap::ArcSwap<Registry>,
    write: Mutex<()>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl ToolTable {
    /// A table holding `registry`.
    pub fn new(registry: Registry) -> ToolTable {
        ToolTable {
            current: arc_swap::ArcSwap::from_pointee(registry),
            write: Mutex::new(()),
            changed: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The registry now.
    pub fn current(&self) -> Arc<Registry> {
        self.current.load_full()
    }

    /// How many times the registry was replaced (what the offered-set cache is keyed by).
    pub fn generation(&self) -> u64 {
        *self.changed.borrow()
    }

    /// Change the registry: `f` edits a copy, which then replaces it (writers are serialized).
    pub fn update<T>(&self, f: impl FnOnce(&mut Registry) -> T) -> T {
        let _w = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = (*self.current.load_full()).clone();
        let out = f(&mut next);
        self.current.store(Arc::new(next));
        self.changed.send_modify(|g| *g += 1);
        out
    }

    /// Ticks after every change of the registry.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
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

impl Builtin {
    /// The declaration, as a registry would hold it.
    pub fn decl(self) -> ToolDecl {
        ToolDecl {
            name: self.name().into(),
            description: self.description().into(),
            parameters: self.parameters(),
            returns: None,
            class: self.class().into(),
            permissions: vec![Permission::None],
            cost: Cost::Immediate,
            ..ToolDecl::default()
        }
    }

    /// The declaration with its compiled schema, built once per process.
    pub(crate) fn tool(self) -> &'static RegisteredTool {
        static TABLE: OnceLock<Vec<RegisteredTool>> = OnceLock::new();
        let table = TABLE.get_or_init(|| {
            Builtin::ALL
                .into_iter()
                .map(|b| {
                    let decl = b.decl();
                    RegisteredTool {
                        validator: jsonschema::validator_for(&decl.parameters)
                            .expect("built-in schemas compile (tested)"),
                        id: format!("tool:{}", decl.name),
                        decl,
                        handler: None,
                        source: crate::tool::ToolSource::Config,
                    }
                })
                .collect()
        });
        &table[Builtin::ALL
            .iter()
            .position(|b| *b == self)
            .expect("in ALL")]
    }
}
