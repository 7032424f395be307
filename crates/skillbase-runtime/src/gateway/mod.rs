//! The tool gateway: the operator's real tools behind the envelope.
//!
//! - **Upstream MCP servers** (`[mcp_servers.<name>]` in `skillbase.toml`): Skillbase connects
//!   to each as an MCP client (a stdio command, or a streamable HTTP URL), lists its tools and
//!   registers them in the dispatcher's registry like any tool — wire name `<server>__<tool>`
//!   (collision-free), id `tool:<server>/<tool>`, class the server's name unless overridden —
//!   so the offered set, the schema check, the class gate, bounds, timeouts, redaction, caps
//!   and events apply to them unchanged. Upstream `list_changed` re-lists; a server that exits
//!   or stops answering is reconnected with backoff (0.5 s doubling to 30 s) while its tools
//!   are refused with [`Rule::ToolUnavailable`](crate::dispatch::Rule::ToolUnavailable).
//!   Header and environment values may name vault entries: resolved into the client only.
//! - **HTTP tools** (a `[[tools]]` entry with an `http` table, [`HttpSpec`]): one request made by
//!   `web_fetch`'s client under the call's destination policy and vault envelope.
//! - **Harness-run tools** (`runs = "harness"`) need nothing here: the dispatcher authorizes
//!   them and takes the harness's result (`Dispatcher::post_result`).

pub(crate) mod http;
mod mcp;
#[cfg(feature = "openapi")]
mod openapi;
pub(crate) mod spec;

pub use http::HttpTool;
pub use mcp::{McpServerConfig, Transport};
use serde::Deserialize;
pub use spec::Value;

use crate::tool::ToolTable;
use crate::vault::Vault;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// The state of one upstream server, as `skillbase tools` and `GET /v1/tools` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Starting or reconnecting; its last known tools (if any) are refused meanwhile.
    Connecting,
    /// Connected and listed.
    Connected,
    /// Not reachable; retried with backoff.
    Down,
}

/// One upstream server's status.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = UpstreamServer))]
pub struct ServerStatus {
    /// The server's name in the configuration.
    pub name: String,
    /// `stdio` or `http`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^(stdio|http)$"))]
    pub transport: &'static str,
    /// Connecting, connected or down.
    pub state: ServerState,
    /// Why it is down (or the last connection problem), redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub reason: Option<String>,
    /// The upstream's name and version, from its handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub server_info: Option<String>,
    /// The negotiated protocol version.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub protocol: Option<String>,
    /// The child process of a stdio server.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub pid: Option<u32>,
    /// Tools registered from it.
    pub tools: usize,
    /// Upstream tools left out, with why (an invalid schema, excluded by the configuration).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(required = false))]
    pub skipped: Vec<String>,
    /// Connections made so far (a restart counts one more).
    pub connections: u64,
}

/// Where an upstream server's configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `[mcp_servers.<name>]` in `skillbase.toml` (changed by editing the file and restarting).
    File,
    /// Written through the API (`PUT /v1/mcp-servers/{name}`), kept in the store: every server
    /// on the store follows it.
    Api,
}

/// The `[gateway]` table: what the API may configure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewaySettings {
    /// Programs an API-configured stdio server may run, exactly as written in its `command`
    /// (default: none, so the API can add only streamable HTTP servers; a stdio server runs a
    /// program on this host, which only the operator's file may allow).
    pub api_commands: Vec<String>,
    /// Most servers the API may configure (default 64).
    pub api_servers: usize,
}

impl Default for GatewaySettings {
    fn default() -> GatewaySettings {
        GatewaySettings {
            api_commands: Vec::new(),
            api_servers: 64,
        }
    }
}

impl GatewaySettings {
    /// The `[gateway]` table; errors name the key.
    pub fn from_table(table: &toml::Table) -> Result<GatewaySettings, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            #[serde(default)]
            api_commands: Vec<String>,
            api_servers: Option<usize>,
        }
        let raw = Raw::deserialize(toml::Value::Table(table.clone()))
            .map_err(|e| format!("[gateway]: {e}"))?;
        if let Some(c) = raw
            .api_commands
            .iter()
            .find(|c| c.trim().is_empty() || c.contains('\0'))
        {
            return Err(format!(
                "[gateway] api_commands: '{}' is not a program (empty, or holds NUL)",
                c.escape_debug()
            ));
        }
        let api_servers = raw.api_servers.unwrap_or(64);
        if !(1..=1024).contains(&api_servers) {
            return Err("[gateway] api_servers: 1 to 1024".into());
        }
        Ok(GatewaySettings {
            api_commands: raw.api_commands,
            api_servers,
        })
    }
}

/// Why the gateway refused an API write. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A configuration the gateway cannot use (the message names the key and says what to write).
    #[error("{0}")]
    Invalid(String),
    /// The server is configured in `skillbase.toml`; the API cannot change it.
    #[error(
        "upstream server '{0}' is configured in skillbase.toml; change it there (the API configures only the servers it added)"
    )]
    FileConfigured(String),
    /// A stdio server whose program `[gateway] api_commands` does not list.
    #[error(
        "an API-configured stdio server may run only the programs `[gateway] api_commands` in skillbase.toml lists; '{0}' is not one of them (add it there, or use a streamable HTTP `url`)"
    )]
    CommandNotAllowed(String),
    /// No server of that name was configured through the API.
    #[error("no upstream server '{0}' was configured through the API")]
    NotFound(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] skillbase_store::StoreError),
}

/// One upstream server as the API lists it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpServer))]
pub struct ServerEntry {
    /// Its state.
    #[serde(flatten)]
    pub status: ServerStatus,
    /// `file` or `api`.
    pub origin: Origin,
    /// The configuration as written through the API (vault entries by name). Not shown for a
    /// server of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = McpServerConfig, required = false))]
    pub config: Option<serde_json::Value>,
    /// When the API last wrote it (Unix milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub updated_at: Option<i64>,
    /// Who last wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub updated_by: Option<String>,
}

struct Running {
    upstream: Arc<mcp::Upstream>,
    origin: Origin,
    /// The stored row it was started from (API servers).
    row: Option<skillbase_store::McpServerRow>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// The upstream servers of one engine, each kept connected by its own task: those of the file,
/// fixed at start, and those written through the API, followed in the store
/// ([`Gateway::refresh`]).
pub struct Gateway {
    tools: Arc<ToolTable>,
    vault: Option<Arc<Vault>>,
    store: Arc<skillbase_store::Store>,
    settings: GatewaySettings,
    /// The file's servers in configuration order, then the API's by name.
    servers: std::sync::Mutex<Vec<Running>>,
    /// One change of the API's set at a time.
    changing: tokio::sync::Mutex<()>,
    /// Stored rows already warned about (name, update time): a row this build cannot use is
    /// logged once, not on every sync pass.
    warned: std::sync::Mutex<std::collections::HashSet<(String, i64)>>,
    stopped: std::sync::atomic::AtomicBool,
}

impl Gateway {
    /// Start one supervising task per server of the file (inside a tokio runtime): connect,
    /// list, register its tools in `tools`, and reconnect with backoff whenever it goes away.
    /// The API's servers join with [`Gateway::refresh`].
    pub fn start(
        configs: Vec<McpServerConfig>,
        settings: GatewaySettings,
        tools: Arc<ToolTable>,
        vault: Option<Arc<Vault>>,
        store: Arc<skillbase_store::Store>,
    ) -> Arc<Gateway> {
        let g = Gateway {
            tools,
            vault,
            store,
            settings,
            servers: std::sync::Mutex::new(Vec::new()),
            changing: tokio::sync::Mutex::new(()),
            warned: Default::default(),
            stopped: std::sync::atomic::AtomicBool::new(false),
        };
        let running: Vec<Running> = configs
            .into_iter()
            .map(|c| g.spawn(c, Origin::File, None))
            .collect();
        *g.lock() = running;
        Arc::new(g)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Running>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spawn(
        &self,
        config: McpServerConfig,
        origin: Origin,
        row: Option<skillbase_store::McpServerRow>,
    ) -> Running {
        let (stop, rx) = tokio::sync::watch::channel(false);
        let upstream = Arc::new(mcp::Upstream::new(config, self.vault.clone()));
        let task = tokio::spawn(upstream.clone().supervise(self.tools.clone(), rx));
        Running {
            upstream,
            origin,
            row,
            stop,
            task,
        }
    }

    /// Stop a server's task (its child is killed with it) and, unless shutting down, take its
    /// tools out of the registry.
    async fn stop(&self, r: Running, forget: bool) {
        let _ = r.stop.send(true);
        let mut task = r.task;
        if tokio::time::timeout(Duration::from_secs(5), &mut task)
            .await
            .is_err()
        {
            task.abort();
            let _ = task.await;
        }
        if forget {
            let name = r.upstream.name().to_owned();
            self.tools.update(|reg| reg.remove_server(&name));
        }
    }

    fn upstreams(&self) -> Vec<Arc<mcp::Upstream>> {
        self.lock().iter().map(|r| r.upstream.clone()).collect()
    }

    /// Every server's status: the file's in configuration order, then the API's by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.lock().iter().map(|r| r.upstream.status()).collect()
    }

    /// Every server with where it comes from and, for the API's, its configuration.
    pub fn servers(&self) -> Vec<ServerEntry> {
        self.lock()
            .iter()
            .map(|r| ServerEntry {
                status: r.upstream.status(),
                origin: r.origin,
                config: r.row.as_ref().map(|row| row.config.clone()),
                updated_at: r.row.as_ref().map(|row| row.updated_at),
                updated_by: r.row.as_ref().map(|row| row.updated_by.clone()),
            })
            .collect()
    }

    /// The settings of `[gateway]`.
    pub fn settings(&self) -> &GatewaySettings {
        &self.settings
    }

    /// Wait until every server has either connected or failed at least once (or `timeout`).
    pub async fn settled(&self, timeout: Duration) {
        let servers = self.upstreams();
        let wait = async {
            for s in &servers {
                s.settled().await;
            }
        };
        let _ = tokio::time::timeout(timeout, wait).await;
    }

    /// Wait until server `name` is connected with at least `connections` connections made
    /// (or `timeout`); whether it is.
    pub async fn connected(&self, name: &str, connections: u64, timeout: Duration) -> bool {
        let Some(s) = self.upstreams().into_iter().find(|s| s.name() == name) else {
            return false;
        };
        tokio::time::timeout(timeout, s.wait_connected(connections))
            .await
            .is_ok()
    }

    /// Follow the API's servers in the store: start the new, restart the changed, stop the
    /// removed (their tools leave the registry). Cheap when nothing changed (one small read);
    /// the server's sync loop calls it with every poll and announcement, so a write on one
    /// server reaches every server on the store.
    pub async fn refresh(&self) -> Result<(), skillbase_store::StoreError> {
        let _one = self.changing.lock().await;
        let rows = self.store.mcp_servers().await?;
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let (stale, keep): (Vec<Running>, Vec<Running>) = {
            let mut servers = self.lock();
            std::mem::take(&mut *servers).into_iter().partition(|r| {
                r.origin == Origin::Api
                    && !rows.iter().any(|row| {
                        r.row.as_ref().is_some_and(|mine| {
                            mine.name == row.name
                                && mine.updated_at == row.updated_at
                                && mine.config == row.config
                        })
                    })
            })
        };
        *self.lock() = keep;
        for r in stale {
            tracing::info!(server = %r.upstream.name(), "upstream MCP server removed or changed through the API");
            self.stop(r, true).await;
        }
        for row in rows {
            let known = self.lock().iter().any(|r| r.upstream.name() == row.name);
            if known {
                // Running as stored, or a server of the file by that name (which wins).
                if self
                    .lock()
                    .iter()
                    .any(|r| r.origin == Origin::File && r.upstream.name() == row.name)
                {
                    tracing::debug!(server = %row.name, "an API-configured upstream server has the name of one in skillbase.toml; the file's is used");
                }
                continue;
            }
            match McpServerConfig::from_json(&row.name, &row.config) {
                Ok(config) => {
                    let r = self.spawn(config, Origin::Api, Some(row));
                    let mut servers = self.lock();
                    servers.push(r);
                    // Stable: the file's keep their order; the API's by name after them.
                    servers.sort_by(|a, b| match (a.origin, b.origin) {
                        (Origin::File, Origin::File) => std::cmp::Ordering::Equal,
                        (Origin::File, Origin::Api) => std::cmp::Ordering::Less,
                        (Origin::Api, Origin::File) => std::cmp::Ordering::Greater,
                        (Origin::Api, Origin::Api) => a.upstream.name().cmp(b.upstream.name()),
                    });
                }
                Err(why) => {
                    let first = self
                        .warned
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert((row.name.clone(), row.updated_at));
                    if first {
                        tracing::warn!(server = %row.name, "a stored upstream server's configuration cannot be used (written by another version?): {why}");
                    }
                }
            }
        }
        Ok(())
    }

    /// Configure server `name` through the API (replacing its earlier configuration): checked
    /// whole, stored with an event, then started here (other servers on the store follow within
    /// their sync interval). Whether it is new. `config` is the `[mcp_servers.<name>]` table as
    /// JSON; vault entries it names must be set.
    pub async fn put(
        &self,
        name: &str,
        config: serde_json::Value,
        actor: &skillbase_store::Author,
    ) -> Result<bool, GatewayError> {
        if self.is_file_server(name) {
            return Err(GatewayError::FileConfigured(name.to_owned()));
        }
        let parsed = McpServerConfig::from_json(name, &config).map_err(GatewayError::Invalid)?;
        if let Transport::Stdio { command, .. } = &parsed.transport
            && !self.settings.api_commands.contains(command)
        {
            return Err(GatewayError::CommandNotAllowed(command.clone()));
        }
        for entry in parsed.vault_entries() {
            if self.vault.as_ref().and_then(|v| v.resolve(entry)).is_none() {
                return Err(GatewayError::Invalid(format!(
                    "[mcp_servers.{name}]: vault entry '{entry}' is not set; set it first (PUT /v1/vault/{entry})"
                )));
            }
        }
        let summary = serde_json::json!({
            "transport": parsed.transport_kind(),
            "class": parsed.class,
        });
        let created = self
            .store
            .mcp_server_put(name, &config, summary, self.settings.api_servers, actor)
            .await?;
        self.refresh().await?;
        Ok(created)
    }

    /// Remove a server configured through the API: its connection closes and its tools leave the
    /// registry (other servers on the store follow within their sync interval).
    pub async fn remove(
        &self,
        name: &str,
        actor: &skillbase_store::Author,
    ) -> Result<(), GatewayError> {
        if self.is_file_server(name) {
            return Err(GatewayError::FileConfigured(name.to_owned()));
        }
        if !self.store.mcp_server_remove(name, actor).await? {
            return Err(GatewayError::NotFound(name.to_owned()));
        }
        self.refresh().await?;
        Ok(())
    }

    fn is_file_server(&self, name: &str) -> bool {
        self.lock()
            .iter()
            .any(|r| r.origin == Origin::File && r.upstream.name() == name)
    }

    /// Close every connection (stdio servers are asked to exit, then killed) and stop.
    pub async fn shutdown(&self) {
        let _one = self.changing.lock().await;
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let all = std::mem::take(&mut *self.lock());
        for r in all {
            self.stop(r, false).await;
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        for r in self
            .servers
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = r.stop.send(true);
        }
    }
}

/// The `[mcp_servers]` table of `skillbase.toml`, checked whole: every problem names the
/// server and the key. `folder` is where the file lives (relative `cwd` are read from it).
pub fn servers_from_table(
    table: &toml::Table,
    folder: Option<&std::path::Path>,
) -> Result<Vec<McpServerConfig>, String> {
    table
        .iter()
        .map(|(name, v)| McpServerConfig::from_toml(name, v, folder))
        .collect()
}

/// One tool as `skillbase tools` and `GET /v1/tools` list it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolInfo {
    /// The offered entry's id (`tool:<name>`, `tool:<server>/<name>`).
    pub id: String,
    /// The wire name the model calls.
    pub name: String,
    /// `builtin`, `config` (a `[[tools]]` entry), `embedder` or `mcp`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub source: &'static str,
    /// The upstream server, for an MCP tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub server: Option<String>,
    /// The class a grant names.
    pub class: String,
    /// `skillbase` or `harness`.
    pub runs: crate::tool::Runs,
    /// Whether an `http` table makes it one HTTP request.
    pub http: bool,
    /// Its latency class.
    pub cost: skillbase_format::Cost,
    /// `ready`, `connected`, `connecting`, `down` (an upstream's state), `harness` (run by the
    /// harness) or `declared` (nothing in this process runs it: calls are refused).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: &'static str,
    /// Why it cannot run now, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub reason: Option<String>,
    /// The agents granted its class (of those listed).
    pub agents: Vec<String>,
}

/// Every tool the dispatcher knows (built-ins first, then the registry by name), with the
/// agents of `agents` granted each.
pub fn listing(
    dispatcher: &crate::dispatch::Dispatcher,
    gateway: Option<&Gateway>,
    agents: &[skillbase_store::Agent],
) -> Vec<ToolInfo> {
    use crate::builtin::Builtin;
    use crate::tool::{Availability, Runs, ToolSource};
    let granted = |class: &str| -> Vec<String> {
        agents
            .iter()
            .filter(|a| {
                class == crate::builtin::ACTIVATION_CLASS
                    || crate::envelope::Envelope::for_call(a, None).class_granted(class)
            })
            .map(|a| a.name.to_string())
            .collect()
    };
    let status = gateway.map(|g| g.status()).unwrap_or_default();
    let mut out: Vec<ToolInfo> = Builtin::ALL
        .iter()
        .map(|b| ToolInfo {
            id: format!("tool:{}", b.name()),
            name: b.name().to_owned(),
            source: "builtin",
            server: None,
            class: b.class().to_owned(),
            runs: Runs::Skillbase,
            http: false,
            cost: skillbase_format::Cost::Immediate,
            status: "ready",
            reason: None,
            agents: granted(b.class()),
        })
        .collect();
    for t in dispatcher.registry().all() {
        let d = &t.decl;
        let (source, server) = match &t.source {
            ToolSource::Config => ("config", None),
            ToolSource::Embedder => ("embedder", None),
            ToolSource::Mcp { server, .. } => ("mcp", Some(server.clone())),
        };
        let (state, reason) = match (&t.handler, d.runs) {
            (_, Runs::Harness) => ("harness", None),
            (None, _) => (
                "declared",
                Some("nothing in this process runs it; calls are refused (no_handler)".to_owned()),
            ),
            (Some(h), _) => match (h.availability(), &server) {
                (Availability::Ready, Some(_)) => ("connected", None),
                (Availability::Ready, None) => ("ready", None),
                (Availability::Unavailable(why), s) => {
                    let state = s
                        .as_ref()
                        .and_then(|s| status.iter().find(|x| x.name == *s))
                        .map_or("down", |x| match x.state {
                            ServerState::Connecting => "connecting",
                            _ => "down",
                        });
                    (state, Some(why))
                }
            },
        };
        out.push(ToolInfo {
            id: t.id.clone(),
            name: d.name.clone(),
            source,
            server,
            class: d.class.clone(),
            runs: d.runs,
            http: d.http.is_some(),
            cost: d.cost,
            status: state,
            reason,
            agents: granted(&d.class),
        });
    }
    out
}
