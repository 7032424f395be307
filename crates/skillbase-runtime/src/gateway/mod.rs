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

mod http;
mod mcp;

pub use http::{HttpBody, HttpSpec, HttpTool};
pub use mcp::{McpServerConfig, McpToolOverride, Transport};

use crate::tool::ToolTable;
use crate::vault::Vault;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// A configured value (an upstream's environment or header, an HTTP tool's header): literal
/// text, or a vault entry with an optional prefix (e.g. `Bearer `), never written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// Written in the file.
    Text(String),
    /// `{ vault = "NAME", prefix = "Bearer " }`.
    Vault {
        /// The vault entry.
        vault: String,
        /// Text before the value.
        #[serde(default)]
        prefix: String,
    },
}

impl Value {
    /// Text without NUL or line breaks; a vault entry's name by the vault's grammar.
    pub fn check(&self) -> Result<(), String> {
        let bad = |t: &str| t.contains(['\0', '\r', '\n']);
        match self {
            Value::Text(t) if bad(t) => Err("values cannot hold NUL or line breaks".into()),
            Value::Text(_) => Ok(()),
            Value::Vault { vault, prefix } => {
                if let Some(why) = skillbase_format::validate::check_vault_name(vault) {
                    return Err(format!("vault entry {why}"));
                }
                if bad(prefix) {
                    return Err("the prefix cannot hold NUL or line breaks".into());
                }
                Ok(())
            }
        }
    }

    /// The vault entry it names, if any.
    pub fn vault_entry(&self) -> Option<&str> {
        match self {
            Value::Vault { vault, .. } => Some(vault),
            Value::Text(_) => None,
        }
    }
}

/// The state of one upstream server, as `skillbase tools` and `GET /v1/tools` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
pub struct ServerStatus {
    /// The server's name in the configuration.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// Connecting, connected or down.
    pub state: ServerState,
    /// Why it is down (or the last connection problem), redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The upstream's name and version, from its handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<String>,
    /// The negotiated protocol version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The child process of a stdio server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Tools registered from it.
    pub tools: usize,
    /// Upstream tools left out, with why (an invalid schema, excluded by the configuration).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Connections made so far (a restart counts one more).
    pub connections: u64,
}

/// The upstream servers of one engine, each kept connected by its own task.
pub struct Gateway {
    servers: Vec<Arc<mcp::Upstream>>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Gateway {
    /// Start one supervising task per server (inside a tokio runtime): connect, list, register
    /// its tools in `tools`, and reconnect with backoff whenever it goes away.
    pub fn start(
        configs: Vec<McpServerConfig>,
        tools: Arc<ToolTable>,
        vault: Option<Arc<Vault>>,
    ) -> Arc<Gateway> {
        let (stop, _) = tokio::sync::watch::channel(false);
        let mut servers = Vec::new();
        let mut tasks = Vec::new();
        for c in configs {
            let u = Arc::new(mcp::Upstream::new(c, vault.clone()));
            tasks.push(tokio::spawn(
                u.clone().supervise(tools.clone(), stop.subscribe()),
            ));
            servers.push(u);
        }
        Arc::new(Gateway {
            servers,
            stop,
            tasks: std::sync::Mutex::new(tasks),
        })
    }

    /// Every server's status, in configuration order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Wait until every server has either connected or failed at least once (or `timeout`).
    pub async fn settled(&self, timeout: Duration) {
        let wait = async {
            for s in &self.servers {
                s.settled().await;
            }
        };
        let _ = tokio::time::timeout(timeout, wait).await;
    }

    /// Wait until server `name` is connected with at least `connections` connections made
    /// (or `timeout`); whether it is.
    pub async fn connected(&self, name: &str, connections: u64, timeout: Duration) -> bool {
        let Some(s) = self.servers.iter().find(|s| s.name() == name) else {
            return false;
        };
        tokio::time::timeout(timeout, s.wait_connected(connections))
            .await
            .is_ok()
    }

    /// Close every connection (stdio servers are asked to exit, then killed) and stop.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
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
pub struct ToolInfo {
    /// The offered entry's id (`tool:<name>`, `tool:<server>/<name>`).
    pub id: String,
    /// The wire name the model calls.
    pub name: String,
    /// `builtin`, `config` (a `[[tools]]` entry), `embedder` or `mcp`.
    pub source: &'static str,
    /// The upstream server, for an MCP tool.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    pub status: &'static str,
    /// Why it cannot run now, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    use crate::dispatch::Builtin;
    use crate::tool::{Availability, Runs, ToolSource};
    let granted = |class: &str| -> Vec<String> {
        agents
            .iter()
            .filter(|a| {
                class == crate::dispatch::ACTIVATION_CLASS
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
