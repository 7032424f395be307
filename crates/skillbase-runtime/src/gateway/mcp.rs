//! One upstream MCP server: its configuration, the connection kept by a supervising task, and
//! the handler its tools run through.

use super::{ServerState, ServerStatus, Value};
use crate::tool::{
    Availability, CallContext, Failure, Permission, Registry, ToolDecl, ToolError, ToolFuture,
    ToolHandler, ToolSource, ToolTable,
};
use crate::vault::Vault;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde::Deserialize;
use sha2::Digest;
use skillbase_format::Cost;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// Longest wait for a server to start and answer its handshake and first listing.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// First wait before reconnecting; doubled after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Longest upstream tool description kept (bytes); the rest is cut.
const MAX_DESCRIPTION: usize = 4096;
/// Most tools registered from one server.
const MAX_TOOLS: usize = 512;
/// Largest JSON answer read from an HTTP upstream.
const MAX_HTTP_RESPONSE: usize = 8 * 1024 * 1024;

/// How Skillbase reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (a path, or a name found on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (beside the inherited environment).
        env: BTreeMap<String, Value>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint (`http://` or `https://`).
        url: String,
        /// Request headers.
        headers: BTreeMap<String, Value>,
    },
}

/// What the operator changes about one upstream tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct McpToolOverride {
    /// The class a grant names (default: the server's class).
    #[cfg_attr(feature = "openapi", schema(schema_with = skillbase_format::openapi::tool_class))]
    pub class: Option<String>,
    /// What the tool touches (default: the server's).
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub permissions: Option<Vec<Permission>>,
    /// Its latency class (default: the server's), which sets its timeout.
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub cost: Option<Cost>,
    /// What the model is told (default: the upstream's description): 1-4096 bytes, not only
    /// blanks and control characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            nullable = false,
            min_length = 1,
            max_length = 4096,
            pattern = r"[^\s\u0000-\u001f\u007f-\u009f]"
        )
    )]
    pub description: Option<String>,
}

/// One `[mcp_servers.<name>]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name: 1-32 lowercase letters, digits, `_` and `-`, starting with a letter
    /// or digit; it prefixes the wire names of its tools.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// The class of its tools unless overridden (default: the name).
    pub class: String,
    /// What its tools touch unless overridden (default: nothing declared).
    pub permissions: Vec<Permission>,
    /// Their latency class unless overridden (default `immediate`: a 5 s limit).
    pub cost: Cost,
    /// Per-tool overrides, by upstream tool name.
    pub tools: BTreeMap<String, McpToolOverride>,
    /// Upstream tools never offered.
    pub exclude: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, Value>>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, Value>>,
    class: Option<String>,
    #[serde(default)]
    permissions: Vec<Permission>,
    #[serde(default)]
    cost: Cost,
    #[serde(default)]
    tools: BTreeMap<String, McpToolOverride>,
    #[serde(default)]
    exclude: Vec<String>,
}

fn check_value(server: &str, key: &str, v: &Value) -> Result<(), String> {
    v.check()
        .map_err(|why| format!("[mcp_servers.{server}] {key}: {why}"))
}

/// Whether a server name is acceptable (it becomes part of wire names and ids; the format
/// crate's grammar, which `requires.mcp` is validated with too).
pub(crate) fn valid_server_name(n: &str) -> bool {
    skillbase_format::validate::check_server_name(n).is_none()
}

/// A stdio server's transport: `command` with the table's `args`, `env` and `cwd` (taken from
/// `raw`; a relative `cwd` is under `folder` when there is one). `headers` are refused.
fn stdio_transport(
    name: &str,
    command: String,
    raw: &mut Raw,
    folder: Option<&Path>,
) -> Result<Transport, String> {
    if command.trim().is_empty() || command.chars().any(char::is_control) {
        return Err(format!(
            "[mcp_servers.{name}] command: empty, or holds control characters"
        ));
    }
    if raw.headers.is_some() {
        return Err(format!(
            "[mcp_servers.{name}]: `headers` are for `url` servers; a stdio server takes `env`"
        ));
    }
    let env = raw.env.take().unwrap_or_default();
    let args = raw.args.take().unwrap_or_default();
    for (k, v) in &env {
        if k.is_empty() || k.contains(['=', '\0']) {
            return Err(format!(
                "[mcp_servers.{name}] env: '{}' is not a variable name",
                k.escape_debug()
            ));
        }
        check_value(name, &format!("env.{k}"), v)?;
    }
    if args.iter().any(|a| a.contains('\0')) {
        return Err(format!("[mcp_servers.{name}] args: an argument holds NUL"));
    }
    if raw
        .cwd
        .as_ref()
        .is_some_and(|c| c.is_empty() || c.contains('\0'))
    {
        return Err(format!("[mcp_servers.{name}] cwd: empty or holds NUL"));
    }
    let cwd = raw.cwd.take().map(|c| {
        let p = PathBuf::from(c);
        match folder {
            Some(f) if p.is_relative() => f.join(p),
            _ => p,
        }
    });
    Ok(Transport::Stdio {
        command,
        args,
        env,
        cwd,
    })
}

/// A streamable HTTP server's transport: `url` with the table's `headers` (taken from `raw`).
/// `args`, `env` and `cwd` are refused.
fn http_transport(name: &str, url: String, raw: &mut Raw) -> Result<Transport, String> {
    // Written as it is read: no spaces or control characters (which URL parsing
    // would silently drop), and the scheme's `//` present.
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!(
            "[mcp_servers.{name}] url: no spaces or control characters (percent-encode them)"
        ));
    }
    let lower = url.to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        return Err(format!(
            "[mcp_servers.{name}] url: use an http:// or https:// URL with a host"
        ));
    }
    let parsed = reqwest::Url::parse(&url)
        .map_err(|e| format!("[mcp_servers.{name}] url: not a URL: {e}"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "[mcp_servers.{name}] url: use an http:// or https:// URL with a host"
        ));
    }
    if raw.cwd.is_some() || raw.env.is_some() || raw.args.is_some() {
        return Err(format!(
            "[mcp_servers.{name}]: `args`, `env` and `cwd` are for `command` servers"
        ));
    }
    let headers = raw.headers.take().unwrap_or_default();
    for (k, v) in &headers {
        if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err() {
            return Err(format!(
                "[mcp_servers.{name}] headers: '{}' is not a header name",
                k.escape_debug()
            ));
        }
        check_value(name, &format!("headers.{k}"), v)?;
    }
    Ok(Transport::Http { url, headers })
}

/// Check the server's class and each tool override's class and description.
fn check_classes(
    name: &str,
    class: &str,
    tools: &BTreeMap<String, McpToolOverride>,
) -> Result<(), String> {
    let check_class = |c: &str, key: &str| match skillbase_format::validate::check_tool_class(c) {
        Some(why) => Err(format!("[mcp_servers.{name}] {key}: {why}")),
        None => Ok(()),
    };
    check_class(class, "class")?;
    for (t, o) in tools {
        if let Some(c) = &o.class {
            check_class(c, &format!("tools.{t}.class"))?;
        }
        if let Some(d) = &o.description
            && (d.chars().all(|c| c.is_whitespace() || c.is_control()) || d.len() > MAX_DESCRIPTION)
        {
            return Err(format!(
                "[mcp_servers.{name}] tools.{t}.description: 1-{MAX_DESCRIPTION} bytes"
            ));
        }
    }
    Ok(())
}

impl McpServerConfig {
    /// One server's table; errors name the server and the key, and say what to write.
    pub fn from_toml(
        name: &str,
        value: &toml::Value,
        folder: Option<&Path>,
    ) -> Result<McpServerConfig, String> {
        if !valid_server_name(name) {
            return Err(format!(
                "[mcp_servers] '{}': a server name is 1-32 lowercase letters, digits, `_` and `-`, starting with a letter or digit",
                name.escape_debug()
            ));
        }
        let raw =
            Raw::deserialize(value.clone()).map_err(|e| format!("[mcp_servers.{name}]: {e}"))?;
        McpServerConfig::from_raw(name, raw, folder)
    }

    /// One server's configuration as JSON (the API's body: the same keys as the table). A
    /// working directory must be absolute (there is no file to be relative to), and no value
    /// may be `null` (leave the key out).
    pub fn from_json(name: &str, value: &serde_json::Value) -> Result<McpServerConfig, String> {
        if !valid_server_name(name) {
            return Err(format!(
                "'{}': a server name is 1-32 lowercase letters, digits, `_` and `-`, starting with a letter or digit",
                name.escape_debug()
            ));
        }
        if !value.is_object() {
            return Err(format!(
                "[mcp_servers.{name}]: the configuration is a JSON object ({{\"url\": …}} or {{\"command\": …}})"
            ));
        }
        if let Some(path) = null_at(value, String::new()) {
            return Err(format!(
                "[mcp_servers.{name}] {path}: null is not a value here; leave the key out"
            ));
        }
        let raw = Raw::deserialize(value).map_err(|e| format!("[mcp_servers.{name}]: {e}"))?;
        if let Some(c) = &raw.cwd
            && !Path::new(c).is_absolute()
        {
            return Err(format!(
                "[mcp_servers.{name}] cwd: give an absolute path ('{}' is relative)",
                c.escape_debug()
            ));
        }
        McpServerConfig::from_raw(name, raw, None)
    }

    fn from_raw(
        name: &str,
        mut raw: Raw,
        folder: Option<&Path>,
    ) -> Result<McpServerConfig, String> {
        let transport = match (raw.command.take(), raw.url.take()) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "[mcp_servers.{name}]: give either `command` (stdio) or `url` (streamable HTTP), not both"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "[mcp_servers.{name}]: give `command` (a stdio server) or `url` (a streamable HTTP server)"
                ));
            }
            (Some(command), None) => stdio_transport(name, command, &mut raw, folder)?,
            (None, Some(url)) => http_transport(name, url, &mut raw)?,
        };
        let class = raw.class.unwrap_or_else(|| name.to_owned());
        check_classes(name, &class, &raw.tools)?;
        Ok(McpServerConfig {
            name: name.to_owned(),
            transport,
            class,
            permissions: raw.permissions,
            cost: raw.cost,
            tools: raw.tools,
            exclude: raw.exclude,
        })
    }

    /// `stdio` or `http`.
    pub fn transport_kind(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }

    /// The vault entries its headers and environment name.
    pub fn vault_entries(&self) -> Vec<&str> {
        let values: Vec<&Value> = match &self.transport {
            Transport::Stdio { env, .. } => env.values().collect(),
            Transport::Http { headers, .. } => headers.values().collect(),
        };
        values.into_iter().filter_map(Value::vault_entry).collect()
    }
}

/// The path of the first `null` in `v`, if any (`tools.x.class`, `args[2]`).
fn null_at(v: &serde_json::Value, at: String) -> Option<String> {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_owned()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        serde_json::Value::Null => Some(if at.is_empty() { "the body".into() } else { at }),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| null_at(x, format!("{at}[{i}]"))),
        serde_json::Value::Object(m) => m.iter().find_map(|(k, x)| null_at(x, join(k))),
        _ => None,
    }
}

/// A configured value as text, vault entries resolved (never logged; the redactor knows them).
fn resolve(v: &Value, vault: Option<&Vault>, what: &str) -> Result<String, String> {
    match v {
        Value::Text(t) => Ok(t.clone()),
        Value::Vault {
            vault: name,
            prefix,
        } => {
            let secret = vault
                .and_then(|v| v.resolve(name))
                .ok_or_else(|| format!("{what} names vault entry '{name}', which is not set"))?;
            let value = std::str::from_utf8(secret.expose())
                .map_err(|_| format!("vault entry '{name}' ({what}) is not UTF-8 text"))?;
            Ok(format!("{prefix}{value}"))
        }
    }
}

/// The wire name of upstream tool `tool` of `server`: `<server>__<tool>`, other characters as
/// `_`, cut with a hash of the whole when over 64 bytes.
pub(crate) fn wire_name(server: &str, tool: &str) -> String {
    let full: String = format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if full.len() <= 64 {
        return full;
    }
    let h = sha2::Sha256::digest(format!("{server}/{tool}").as_bytes());
    let hex: String = h[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{hex}", &full[..55])
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

struct Live {
    peer: Peer<RoleClient>,
    pid: Option<u32>,
    server_info: Option<String>,
    protocol: String,
}

struct StateInner {
    state: ServerState,
    live: Option<Arc<Live>>,
    reason: Option<String>,
    tools: usize,
    skipped: Vec<String>,
    connections: u64,
    /// Attempts made (a failed one counts): `settled` waits for the first.
    attempts: u64,
}

/// One upstream server and its connection.
pub(crate) struct Upstream {
    config: McpServerConfig,
    vault: Option<Arc<Vault>>,
    inner: Mutex<StateInner>,
    /// Ticks on every state change.
    changed: watch::Sender<()>,
    /// List the tools again (upstream `list_changed`).
    relist: Arc<Notify>,
    /// A call failed on the transport: check the connection.
    broken: Notify,
}

/// The client side Skillbase shows an upstream.
#[derive(Clone)]
struct Client {
    relist: Arc<Notify>,
}

impl ClientHandler for Client {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.relist.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("skillbase", env!("CARGO_PKG_VERSION")),
        )
    }
}

type Service = RunningService<RoleClient, Client>;

impl Upstream {
    pub(crate) fn new(config: McpServerConfig, vault: Option<Arc<Vault>>) -> Upstream {
        Upstream {
            config,
            vault,
            inner: Mutex::new(StateInner {
                state: ServerState::Connecting,
                live: None,
                reason: None,
                tools: 0,
                skipped: Vec::new(),
                connections: 0,
                attempts: 0,
            }),
            changed: watch::Sender::new(()),
            relist: Arc::new(Notify::new()),
            broken: Notify::new(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StateInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, f: impl FnOnce(&mut StateInner)) {
        f(&mut self.lock());
        self.changed.send_replace(());
    }

    fn redact(&self, s: &str) -> String {
        match &self.vault {
            Some(v) => v.redactor().redact(s).into_owned(),
            None => s.to_owned(),
        }
    }

    pub(crate) fn status(&self) -> ServerStatus {
        let i = self.lock();
        ServerStatus {
            name: self.config.name.clone(),
            transport: self.config.transport_kind(),
            state: i.state.clone(),
            reason: i.reason.clone(),
            server_info: i.live.as_ref().and_then(|l| l.server_info.clone()),
            protocol: i.live.as_ref().map(|l| l.protocol.clone()),
            pid: i.live.as_ref().and_then(|l| l.pid),
            tools: i.tools,
            skipped: i.skipped.clone(),
            connections: i.connections,
        }
    }

    pub(crate) async fn settled(&self) {
        let mut rx = self.changed.subscribe();
        loop {
            if self.lock().attempts > 0 {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    pub(crate) async fn wait_connected(&self, connections: u64) {
        let mut rx = self.changed.subscribe();
        loop {
            {
                let i = self.lock();
                if i.state == ServerState::Connected && i.connections >= connections {
                    return;
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    fn live(&self) -> Option<Arc<Live>> {
        self.lock().live.clone()
    }

    /// Start the process or open the HTTP session, and shake hands.
    async fn connect(&self) -> Result<(Service, Option<u32>), String> {
        let client = Client {
            relist: self.relist.clone(),
        };
        let vault = self.vault.as_deref();
        match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                for (k, v) in env {
                    cmd.env(k, resolve(v, vault, &format!("env.{k}"))?);
                }
                if let Some(c) = cwd {
                    cmd.current_dir(c);
                }
                let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
                // Its own process group: a wrapper (`npx`, `uvx`) and what it starts go together.
                wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
                // Killed when its handle goes, whatever path drops it.
                wrap.wrap(process_wrap::tokio::KillOnDrop);
                let (child, stderr) = rmcp::transport::TokioChildProcess::builder(wrap)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("could not start `{command}`: {e}"))?;
                let pid = child.id();
                if let Some(stderr) = stderr {
                    let name = self.config.name.clone();
                    let redactor = self.vault.as_ref().map(|v| v.redactor());
                    tokio::spawn(forward_stderr(name, stderr, redactor));
                }
                let service = client
                    .serve(child)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?;
                Ok((service, pid))
            }
            Transport::Http { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                for (k, v) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|_| format!("headers: '{k}' is not a header name"))?;
                    let mut value = reqwest::header::HeaderValue::from_str(&resolve(
                        v,
                        vault,
                        &format!("headers.{k}"),
                    )?)
                    .map_err(|_| format!("headers.{k}: the value cannot be sent in a header"))?;
                    value.set_sensitive(true);
                    custom.insert(name, value);
                }
                let config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    )
                    .custom_headers(custom)
                    .max_json_response_size(MAX_HTTP_RESPONSE)
                    .reinit_on_expired_session(true);
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
                let service = client
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?;
                Ok((service, None))
            }
        }
    }

    /// List the server's tools and replace its entries in the registry.
    async fn refresh(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        table: &ToolTable,
    ) -> Result<(), String> {
        let listed = tokio::time::timeout(CONNECT_TIMEOUT, peer.list_all_tools())
            .await
            .map_err(|_| "tools/list did not answer within 30 s".to_owned())?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let handler_of = |tool: &str| -> Arc<dyn ToolHandler> {
            Arc::new(McpTool {
                upstream: self.clone(),
                tool: tool.to_owned(),
            })
        };
        let c = &self.config;
        let (count, skipped) = table.update(|registry: &mut Registry| {
            registry.remove_server(&c.name);
            let mut skipped = Vec::new();
            let mut count = 0;
            for t in listed {
                let tool = t.name.to_string();
                if c.exclude.contains(&tool) {
                    skipped.push(format!("{tool}: excluded by the configuration"));
                    continue;
                }
                if count >= MAX_TOOLS {
                    skipped.push(format!("{tool}: over the {MAX_TOOLS}-tool limit"));
                    continue;
                }
                let o = c.tools.get(&tool).cloned().unwrap_or_default();
                let description = o.description.clone().unwrap_or_else(|| {
                    let d = t
                        .description
                        .as_deref()
                        .map(str::to_owned)
                        .or(t.title.clone())
                        .unwrap_or_else(|| format!("The '{tool}' tool of {}", c.name));
                    cut(&d, MAX_DESCRIPTION)
                });
                let base = wire_name(&c.name, &tool);
                let mut wire = base.clone();
                let mut n = 2;
                while registry.is_taken(&wire) {
                    let suffix = format!("_{n}");
                    wire = format!("{}{suffix}", &base[..base.len().min(64 - suffix.len())]);
                    n += 1;
                }
                let decl = ToolDecl {
                    name: wire,
                    description,
                    parameters: serde_json::Value::Object((*t.input_schema).clone()),
                    returns: t
                        .output_schema
                        .as_ref()
                        .map(|s| serde_json::Value::Object((**s).clone())),
                    class: o.class.unwrap_or_else(|| c.class.clone()),
                    permissions: o.permissions.unwrap_or_else(|| c.permissions.clone()),
                    cost: o.cost.unwrap_or(c.cost),
                    ..ToolDecl::default()
                };
                let source = ToolSource::Mcp {
                    server: c.name.clone(),
                    tool: tool.clone(),
                };
                let id = format!("tool:{}/{tool}", c.name);
                match registry.register_from(decl, Some(handler_of(&tool)), source, id) {
                    Ok(()) => count += 1,
                    Err(e) => skipped.push(format!("{tool}: {e}")),
                }
            }
            (count, skipped)
        });
        for s in &skipped {
            tracing::warn!(server = %c.name, "upstream tool left out: {s}");
        }
        self.set(|i| {
            i.tools = count;
            i.skipped = skipped;
        });
        Ok(())
    }

    /// Keep the server connected until `stop`.
    pub(crate) async fn supervise(
        self: Arc<Self>,
        table: Arc<ToolTable>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            if *stop.borrow() {
                break;
            }
            self.set(|i| i.state = ServerState::Connecting);
            let connected = tokio::select! {
                r = tokio::time::timeout(CONNECT_TIMEOUT, self.connect()) => match r {
                    Ok(r) => r,
                    Err(_) => Err("did not finish its handshake within 30 s".to_owned()),
                },
                _ = stop.changed() => break,
            };
            match connected {
                Ok((service, pid)) => {
                    let peer = service.peer().clone();
                    let info = peer.peer_info();
                    let protocol = info
                        .as_ref()
                        .map(|i| i.protocol_version.as_str().to_owned())
                        .unwrap_or_default();
                    let server_info = info
                        .as_ref()
                        .and_then(|i| i.server_info.as_ref())
                        .map(|s| format!("{} {}", s.name, s.version));
                    if let Err(e) = self.refresh(&peer, &table).await {
                        let e = self.redact(&e);
                        tracing::warn!(server = %self.config.name, "upstream MCP server: {e}");
                        self.set(|i| {
                            i.state = ServerState::Down;
                            i.reason = Some(e);
                            i.attempts += 1;
                        });
                        let _ = service.cancel().await;
                    } else {
                        self.set(|i| {
                            i.state = ServerState::Connected;
                            i.reason = None;
                            i.connections += 1;
                            i.attempts += 1;
                            i.live = Some(Arc::new(Live {
                                peer: peer.clone(),
                                pid,
                                server_info,
                                protocol: protocol.clone(),
                            }));
                        });
                        tracing::info!(server = %self.config.name, %protocol, "upstream MCP server connected");
                        backoff = FIRST_BACKOFF;
                        let why = self
                            .connected(service, &peer, &protocol, &table, &mut stop)
                            .await;
                        self.set(|i| {
                            i.live = None;
                            i.state = ServerState::Down;
                            i.reason = why.clone();
                        });
                        match why {
                            None => break,
                            Some(w) => {
                                tracing::warn!(server = %self.config.name, "upstream MCP server down: {w}")
                            }
                        }
                    }
                }
                Err(e) => {
                    let e = self.redact(&e);
                    tracing::warn!(server = %self.config.name, "upstream MCP server: {e}");
                    self.set(|i| {
                        i.state = ServerState::Down;
                        i.reason = Some(e);
                        i.attempts += 1;
                    });
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.changed() => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        self.set(|i| {
            i.live = None;
            i.state = ServerState::Down;
            i.reason = Some("the gateway stopped".into());
        });
    }

    /// While connected: re-list on `list_changed`, check the connection when a call failed on
    /// it. Returns why it ended (`None`: asked to stop).
    async fn connected(
        self: &Arc<Self>,
        service: Service,
        peer: &Peer<RoleClient>,
        protocol: &str,
        table: &ToolTable,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<String> {
        // From 2026-07-28 on, list changes come on a `subscriptions/listen` stream.
        let mut subscription = None;
        if protocol >= ProtocolVersion::V_2026_07_28.as_str() {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            match peer.listen(filter).await {
                Ok(s) => subscription = Some(s),
                Err(e) => {
                    tracing::debug!(server = %self.config.name, "no list_changed stream: {e}")
                }
            }
        }
        let cancel = service.cancellation_token();
        let mut done = Box::pin(service.waiting());
        loop {
            let listen = async {
                match subscription.as_mut() {
                    Some(s) => s.next().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = &mut done => {
                    return Some(match r {
                        Ok(reason) => format!("the connection closed ({reason:?})"),
                        Err(e) => format!("the connection's task failed: {e}"),
                    });
                }
                _ = stop.changed() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(5), &mut done).await;
                    return None;
                }
                _ = self.relist.notified() => {
                    if let Err(e) = self.refresh(peer, table).await {
                        tracing::warn!(server = %self.config.name, "re-listing tools: {}", self.redact(&e));
                    }
                }
                n = listen => match n {
                    Ok(Some(_)) => self.relist.notify_one(),
                    _ => subscription = None,
                },
                _ = self.broken.notified() => {
                    let ping = tokio::time::timeout(Duration::from_secs(5), peer.list_all_tools()).await;
                    if !matches!(ping, Ok(Ok(_))) {
                        cancel.cancel();
                        let _ = tokio::time::timeout(Duration::from_secs(5), &mut done).await;
                        return Some("a call failed and the server did not answer afterwards".into());
                    }
                }
            }
        }
    }
}

async fn forward_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    redactor: Option<Arc<crate::redact::Redactor>>,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = cut(&line, 2000);
        let line = match &redactor {
            Some(r) => r.redact(&line).into_owned(),
            None => line,
        };
        tracing::debug!(server = %server, "upstream stderr: {line}");
    }
}

/// The handler of one upstream tool.
struct McpTool {
    upstream: Arc<Upstream>,
    tool: String,
}

impl ToolHandler for McpTool {
    fn availability(&self) -> Availability {
        let i = self.upstream.lock();
        if i.live.is_some() {
            return Availability::Ready;
        }
        let state = match i.state {
            ServerState::Connecting => "connecting",
            _ => "down",
        };
        Availability::Unavailable(format!(
            "upstream MCP server '{}' is {state}; its tools are refused until it is back",
            self.upstream.config.name
        ))
    }

    fn call(&self, ctx: CallContext, args: serde_json::Value) -> ToolFuture {
        let upstream = self.upstream.clone();
        let tool = self.tool.clone();
        Box::pin(async move {
            let started = crate::telemetry::Started::now();
            let result = Self::request(&upstream, &tool, args).await;
            if let Some(scope) = &ctx.trace {
                let error = result.as_ref().err().map(|_| "upstream");
                let server = &upstream.config.name;
                scope.upstream(server, "tools/call", &tool, error, started);
            }
            result
        })
    }
}

impl McpTool {
    /// One `tools/call` to the upstream server.
    async fn request(
        upstream: &Upstream,
        tool: &str,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, ToolError> {
        {
            let server = upstream.config.name.clone();
            let Some(live) = upstream.live() else {
                return Err(ToolError::failed(
                    Failure::Upstream,
                    format!("upstream MCP server '{server}' went away before the call"),
                ));
            };
            let mut params = CallToolRequestParams::new(tool.to_owned());
            if let serde_json::Value::Object(map) = args {
                params = params.with_arguments(map);
            }
            // Dropped at the call's deadline: rmcp then sends `notifications/cancelled`.
            match live.peer.call_tool(params).await {
                Ok(result) => result_value(&server, tool, result),
                Err(e) => {
                    upstream.broken.notify_one();
                    Err(ToolError::failed(
                        Failure::Upstream,
                        format!("upstream MCP server '{server}' failed on '{tool}': {e}"),
                    ))
                }
            }
        }
    }
}

/// An upstream result as the dispatcher's value: the structured content when given, else the
/// text of a text-only answer, else the content blocks (binary data replaced by its size).
/// `isError` is a failure with the upstream's text.
fn result_value(
    server: &str,
    tool: &str,
    result: CallToolResult,
) -> Result<serde_json::Value, ToolError> {
    let blocks: Vec<serde_json::Value> = result
        .content
        .iter()
        .map(|c| {
            let mut v = serde_json::to_value(c).unwrap_or(serde_json::Value::Null);
            if let Some(o) = v.as_object_mut()
                && let Some(serde_json::Value::String(data)) = o.get("data")
            {
                let bytes = data.len() / 4 * 3;
                o.insert("data".into(), format!("[{bytes} bytes not shown]").into());
            }
            v
        })
        .collect();
    let text_only = blocks
        .iter()
        .all(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"));
    let text = || {
        blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if result.is_error == Some(true) {
        let t = if text_only {
            text()
        } else {
            serde_json::Value::Array(blocks).to_string()
        };
        return Err(ToolError::failed(
            Failure::Upstream,
            format!("'{tool}' on upstream MCP server '{server}' reported an error: {t}"),
        ));
    }
    if let Some(s) = result.structured_content {
        return Ok(s);
    }
    if text_only {
        return Ok(serde_json::Value::String(text()));
    }
    Ok(serde_json::Value::Array(blocks))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<McpServerConfig, String> {
        let v: toml::Value = toml::from_str(text).unwrap();
        McpServerConfig::from_toml(name, &v, Some(Path::new("/etc/skillbase")))
    }

    #[test]
    fn a_stdio_server_reads_with_its_defaults() {
        let c = parse(
            "time",
            r#"command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC", KEY = { vault = "TIME_KEY", prefix = "k-" } }
cwd = "work"
[tools.get_current_time]
class = "clock"
cost = "seconds"
"#,
        )
        .unwrap();
        assert_eq!(c.class, "time");
        assert_eq!(c.cost, Cost::Immediate);
        assert_eq!(c.vault_entries(), vec!["TIME_KEY"]);
        let Transport::Stdio { cwd, .. } = &c.transport else {
            panic!("stdio")
        };
        assert_eq!(cwd.as_deref(), Some(Path::new("/etc/skillbase/work")));
        assert_eq!(c.tools["get_current_time"].class.as_deref(), Some("clock"));
    }

    #[test]
    fn bad_tables_are_refused_with_what_to_fix() {
        for (name, text, wanted) in [
            ("Time", "command = \"x\"", "lowercase"),
            ("a", "", "give `command`"),
            ("a", "command = \"x\"\nurl = \"http://h/\"", "not both"),
            ("a", "url = \"ftp://h/\"", "http:// or https://"),
            ("a", "url = \"not a url\"", "no spaces"),
            ("a", "url = \"http://[\"", "not a URL"),
            (
                "a",
                "url = \"http://h/\"\nheaders = { A = { vault = \"X\", prefx = \"b\" } }",
                "unknown key `prefx`",
            ),
            (
                "a",
                "command = \"x\"\nheaders = { A = \"b\" }",
                "takes `env`",
            ),
            (
                "a",
                "url = \"http://h/\"\nenv = { A = \"b\" }",
                "for `command` servers",
            ),
            (
                "a",
                "url = \"http://h/\"\nheaders = { \"bad name\" = \"b\" }",
                "not a header name",
            ),
            (
                "a",
                "url = \"http://h/\"\nheaders = { A = \"b\\nc\" }",
                "line breaks",
            ),
            (
                "a",
                "command = \"x\"\nenv = { A = { vault = \"bad name\" } }",
                "vault entry",
            ),
            ("a", "command = \"x\"\nclass = \"Bad\"", "class"),
            (
                "a",
                "command = \"x\"\n[tools.t]\nclass = \"Bad\"",
                "tools.t.class",
            ),
            (
                "a",
                "command = \"x\"\n[tools.t]\nsurprise = 1",
                "unknown field",
            ),
            ("a", "command = \"x\"\nsurprise = 1", "unknown field"),
            ("a", "command = \"\"", "empty"),
            (
                "a",
                "command = \"x\"\nenv = { \"A=B\" = \"c\" }",
                "variable name",
            ),
        ] {
            let e = parse(name, text).expect_err(text);
            assert!(e.contains(wanted), "{text}: {e}");
        }
    }

    #[test]
    fn a_json_configuration_reads_like_the_table_and_refuses_what_the_api_cannot_mean() {
        use serde_json::json;
        let c = McpServerConfig::from_json(
            "docs",
            &json!({"url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": {"vault": "DOCS_TOKEN", "prefix": "Bearer "}},
                    "class": "docs", "cost": "seconds",
                    "tools": {"search": {"class": "docs_search"}}, "exclude": ["delete"]}),
        )
        .unwrap();
        assert_eq!(c.vault_entries(), vec!["DOCS_TOKEN"]);
        assert_eq!(c.cost, Cost::Seconds);
        assert_eq!(c.transport_kind(), "http");
        let stdio =
            McpServerConfig::from_json("t", &json!({"command": "uvx", "cwd": "/srv/t"})).unwrap();
        assert_eq!(stdio.transport_kind(), "stdio");
        for (name, body, wanted) in [
            ("Docs", json!({"url": "http://h/"}), "lowercase"),
            ("a", json!({"url": null}), "url: null is not a value"),
            (
                "a",
                json!({"command": "x", "args": ["y", null]}),
                "args[1]: null",
            ),
            (
                "a",
                json!({"url": "http://h/", "tools": {"t": {"class": null}}}),
                "tools.t.class: null",
            ),
            (
                "a",
                json!({"command": "x", "cwd": "rel/dir"}),
                "absolute path",
            ),
            (
                "a",
                json!({"url": "http://h/", "surprise": 1}),
                "unknown field",
            ),
            ("a", json!({"url": 7}), "invalid type"),
            (
                "a",
                json!({"url": "http://h/", "headers": {"A": {"vault": "X", "prefx": "b"}}}),
                "unknown key `prefx`",
            ),
            ("a", json!({}), "give `command`"),
        ] {
            let e = McpServerConfig::from_json(name, &body).expect_err(&body.to_string());
            assert!(e.contains(wanted), "{body}: {e}");
        }
    }

    #[test]
    fn wire_names_are_namespaced_safe_and_bounded() {
        assert_eq!(
            wire_name("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(wire_name("ev", "get-sum"), "ev__get-sum");
        assert_eq!(wire_name("ev", "a.b/c d"), "ev__a_b_c_d");
        let long = wire_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert_ne!(long, wire_name("server", &"x".repeat(101)));
    }

    #[test]
    fn results_become_values_and_errors_failures() {
        let text = CallToolResult::success(vec![rmcp::model::ContentBlock::text("12:00")]);
        assert_eq!(
            result_value("s", "t", text).unwrap(),
            serde_json::json!("12:00")
        );
        let err = CallToolResult::error(vec![rmcp::model::ContentBlock::text("no such zone")]);
        let e = result_value("s", "t", err).unwrap_err();
        assert_eq!(e.kind, Some(Failure::Upstream));
        assert!(e.message.contains("no such zone"), "{}", e.message);
        let image = CallToolResult::success(vec![rmcp::model::ContentBlock::image(
            "aGVsbG8gd29ybGQh",
            "image/png",
        )]);
        let v = result_value("s", "t", image).unwrap();
        assert_eq!(v[0]["data"], "[12 bytes not shown]", "{v}");
    }
}
