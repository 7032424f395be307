//! MCP over streamable HTTP and stdio, with the Skills extension.
//!
//! One [`McpHandler`] serves one caller's agent:
//!
//! - **Which agent**: a token bound to an agent acts as that agent; an admin token (or `--dev`)
//!   names one in the `Skillbase-Agent` header, else the server's default agent; stdio serves the
//!   agent it was started for. A stateful MCP session stays with the token and agent it was opened
//!   with.
//! - **Tools**: `tools/list` is the agent's offered set; `tools/call` goes through the dispatch
//!   pipeline, and refusals come back as tool results with `isError` (the model can act on them).
//!   The Skillbase session is the `Skillbase-Session` header when given, else one per MCP session
//!   (stateful wire), else one per token and agent (stateless wire).
//! - **Skills extension** (`io.modelcontextprotocol/skills`, with `directoryRead`): `skills/list`,
//!   `skills/get`, `resources/list` (each SKILL.md), `resources/read` and
//!   `resources/directory/read` over exactly the skills the agent's view holds. Anything else
//!   (unknown, another agent's private skill, a path with `..`) is the same `-32602` naming only
//!   the URI asked for.
//! - **Changes**: `notifications/resources/list_changed` (and `tools/list_changed`) when the
//!   agent's visible skills (or offered tools) change: to stateful sessions and stdio, and to
//!   `subscriptions/listen` streams on the 2026-07-28 wire.

pub(crate) mod direct;

use crate::auth::Principal;
use crate::skills_ext::{self, Child, Manifest, ManifestFile, Visible};
use crate::state::AppState;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ContentBlock,
    Cursor, DiscoverResult, ErrorData, Extensions, GetSkillRequestParams, GetSkillResult,
    Implementation, InitializeRequestParams, InitializeResult, ListResourcesResult,
    ListSkillsResult, ListToolsResult, PaginatedRequestParams, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig, Skill,
    SkillFrontmatter, SkillResource, SkillResources, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use skillbase_runtime::RuntimeError;
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_store::session_id::{Origin, SessionId};
use skillbase_store::{AgentName, SkillEntry, StoreError};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

/// Names the agent an admin token (or `--dev`) acts as.
pub const AGENT_HEADER: &str = "skillbase-agent";
/// Names the Skillbase session `tools/call` records into.
pub const SESSION_HEADER: &str = "skillbase-session";
/// The stateful wire's session header.
const MCP_SESSION_HEADER: &str = "mcp-session-id";

/// A visible skill a `skill://` URI names: its record, its manifest and the path inside it.
type Resolved = (Arc<SkillEntry>, Arc<Manifest>, String);

/// The MCP endpoint as a service to nest at `/mcp`: rmcp's streamable HTTP transport (both
/// wires) behind a guard that answers malformed JSON-RPC with a JSON-RPC error.
pub fn service(state: Arc<AppState>) -> Router {
    let hosts = allowed_host_names(&state);
    let limit = state.options.limits.body_bytes;
    let guard = Guard {
        limit,
        direct: (!state.options.rmcp_only).then(|| {
            (
                state.clone(),
                hosts
                    .iter()
                    .filter_map(|h| direct::AllowedHost::parse(h))
                    .collect(),
            )
        }),
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(state.shutdown.clone())
        .with_max_request_body_bytes(limit)
        .with_json_response(true);
    let st = state.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(McpHandler::new(st.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .fallback_service(mcp)
        .layer(middleware::from_fn_with_state(
            Arc::new(guard),
            jsonrpc_guard,
        ))
}

/// The names a `Host` header may give: loopback, and what `--allowed-host` adds.
pub(crate) fn allowed_host_names(state: &AppState) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(String::from)
        .collect();
    hosts.extend(state.options.allowed_hosts.iter().cloned());
    hosts
}

/// `--dev` turns tokens off, so a web page in the operator's browser could reach the server by
/// DNS rebinding (a name it controls pointed at 127.0.0.1). In dev mode every route therefore
/// answers only requests whose `Host` (and `Origin`, when sent) names loopback or an allowed
/// host, as `/mcp` always does.
pub(crate) async fn dev_host_guard(
    axum::extract::State(allowed): axum::extract::State<Arc<Vec<direct::AllowedHost>>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = req.into_parts();
    let host_ok = direct::host_allowed(&parts, &allowed);
    let origin_ok = parts
        .headers
        .get_all(axum::http::header::ORIGIN)
        .iter()
        .all(|o| {
            o.to_str()
                .is_ok_and(|o| direct::origin_allowed(o, &allowed))
        });
    if !host_ok || !origin_ok {
        return crate::error::ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "forbidden-host",
            "in --dev mode only loopback hosts (or --allowed-host names) may be used in Host and Origin",
        )
        .into_response();
    }
    next.run(axum::extract::Request::from_parts(parts, body))
        .await
}

/// What the guard in front of rmcp needs.
struct Guard {
    /// Largest request body.
    limit: usize,
    /// The direct path for stateless `tools/call`, with the hosts MCP accepts (`None`: off).
    direct: Option<(Arc<AppState>, Vec<direct::AllowedHost>)>,
}

/// Serve one agent over MCP on stdin/stdout (the local user owns the database: no token).
pub async fn serve_stdio(state: Arc<AppState>, agent: AgentName) -> Result<(), crate::ServeError> {
    crate::warm_up();
    // Other processes' writes (`skillbase put`, a server on the same database) reach this
    // session as `serve` sees them: applied every second, then `list_changed`.
    let sync = tokio::spawn(crate::sync_loop(state.clone()));
    let served = serve_io(
        state.clone(),
        agent,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await;
    // The session's events are written behind: write them before the process ends.
    state.engine.flush().await;
    state.shutdown.cancel();
    sync.abort();
    served
}

/// Serve one agent over MCP on any byte stream pair (stdio, or a pipe in tests), until the peer
/// closes it or the server shuts down.
pub async fn serve_io<R, W>(
    state: Arc<AppState>,
    agent: AgentName,
    read: R,
    write: W,
) -> Result<(), crate::ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    if state.store.agent_cached(&agent).is_none() {
        return Err(crate::ServeError::UnknownAgent(agent));
    }
    let mut id = [0u8; 8];
    getrandom::fill(&mut id).map_err(|e| crate::ServeError::Random(e.to_string()))?;
    let session: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let caller = Caller {
        agent: agent.clone(),
        who: "stdio".into(),
    };
    let handler = McpHandler::new(
        state.clone(),
        Some((caller, SessionId::mcp_stdio(&agent, &session))),
    );
    // The end of input ends the connection's streams (a `subscriptions/listen`, the change
    // watcher) at once, so nothing holds the process open once the client has gone.
    let read = EofSignal {
        inner: read,
        eof: handler.conn.closed.clone(),
    };
    let running = match handler
        .serve_with_ct((read, write), state.shutdown.child_token())
        .await
    {
        Ok(r) => r,
        // A client that leaves before initializing (a 2026-07-28 client's probe sends
        // `server/discover` and goes) has done nothing wrong.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(crate::ServeError::Mcp(e.to_string())),
    };
    // Change notifications: a 2025-11-25 client gets them on the connection once it has
    // initialized (`on_initialized`); a 2026-07-28 client only on the streams it opens with
    // `subscriptions/listen`, with the types it asked for.
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| crate::ServeError::Mcp(e.to_string()))
}

/// A reader that cancels `eof` when its input ends (or fails).
struct EofSignal<R> {
    inner: R,
    eof: CancellationToken,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EofSignal<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        match &r {
            std::task::Poll::Ready(Ok(())) if buf.filled().len() == before => self.eof.cancel(),
            std::task::Poll::Ready(Err(_)) => self.eof.cancel(),
            _ => {}
        }
        r
    }
}

/// Who is calling: the agent, and the token (or mode) that acts as it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Caller {
    agent: AgentName,
    /// `token-<id>`, `dev` or `stdio`.
    who: String,
}

/// What one connection (an MCP session, or one stateless request) shares.
struct Conn {
    /// stdio: the caller and the session, fixed.
    fixed: Option<(Caller, SessionId)>,
    /// The caller the session was opened by (stateful HTTP).
    bound: Mutex<Option<Caller>>,
    watching: AtomicBool,
    /// Cancelled when the connection's handler is dropped (the session ended).
    closed: CancellationToken,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// The MCP server for one connection.
pub struct McpHandler {
    state: Arc<AppState>,
    conn: Arc<Conn>,
}

fn invalid_params(message: String, uri: &str) -> ErrorData {
    ErrorData::invalid_params(message, Some(json!({ "uri": uri })))
}

fn no_skill(uri: &str) -> ErrorData {
    invalid_params(format!("no skill is served at {uri}"), uri)
}

fn no_resource(uri: &str) -> ErrorData {
    invalid_params(format!("no resource is served at {uri}"), uri)
}

fn no_directory(uri: &str) -> ErrorData {
    invalid_params(format!("no directory is served at {uri}"), uri)
}

/// A store failure as a JSON-RPC error. A storage fault (a full disk, an unavailable or
/// read-only database) says so in its message and carries the REST answer's problem type and
/// status in `data`, so a client can tell "retry later" from a bug.
fn store_error(e: StoreError) -> ErrorData {
    tracing::warn!(error = %e, "MCP: store error");
    match crate::error::storage_fault(&e) {
        Some((status, kind)) => ErrorData::internal_error(
            format!("the storage failed: {e}"),
            Some(json!({
                "type": format!("urn:skillbase:problem:{kind}"),
                "status": status.as_u16(),
            })),
        ),
        None => ErrorData::internal_error(format!("the store failed: {e}"), None),
    }
}

fn runtime_error(e: RuntimeError) -> ErrorData {
    match e {
        RuntimeError::UnknownAgent(a) => {
            ErrorData::invalid_request(format!("no agent '{a}'"), None)
        }
        RuntimeError::Store(StoreError::Invalid(m)) | RuntimeError::Invalid(m) => {
            ErrorData::invalid_params(m, None)
        }
        RuntimeError::Store(e) => store_error(e),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

fn header_str<'a>(parts: &'a axum::http::request::Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// What an HTTP request says about its caller: the principal, the agent it names, and the
/// token (or mode) acting.
struct Identity<'a> {
    principal: &'a Principal,
    /// The `Skillbase-Agent` header.
    named: Option<&'a str>,
    /// `token-<id>` or `dev`.
    who: String,
}

impl<'a> Identity<'a> {
    fn of(parts: &'a axum::http::request::Parts) -> Result<Identity<'a>, ErrorData> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .ok_or_else(|| ErrorData::internal_error("the request was not authenticated", None))?;
        let named = match parts.headers.get(AGENT_HEADER) {
            None => None,
            Some(v) => Some(v.to_str().map_err(|_| {
                ErrorData::invalid_request("the Skillbase-Agent header is not text", None)
            })?),
        };
        let who = match principal {
            Principal::Agent { token, .. } | Principal::Admin { token: Some(token) } => {
                format!("token-{token}")
            }
            Principal::Admin { token: None } => "dev".to_owned(),
        };
        Ok(Identity {
            principal,
            named,
            who,
        })
    }

    /// The agent this request acts as: the token's, or for an admin the one named (else the
    /// server's default agent).
    fn resolve(self, state: &AppState) -> Result<Caller, ErrorData> {
        let agent = match self.principal {
            Principal::Agent { agent, .. } => {
                if let Some(n) = self.named
                    && n != agent.as_str()
                {
                    return Err(ErrorData::invalid_request(
                        format!(
                            "this token is bound to agent '{agent}': drop the Skillbase-Agent header"
                        ),
                        None,
                    ));
                }
                agent.clone()
            }
            Principal::Admin { .. } => {
                let agent = match self.named {
                    Some(n) => AgentName::parse(n).map_err(|e| {
                        ErrorData::invalid_request(format!("Skillbase-Agent: {e}"), None)
                    })?,
                    None => state.options.default_agent.clone().ok_or_else(|| {
                        ErrorData::invalid_request(
                            "this token is not bound to an agent: name the agent with the Skillbase-Agent header (or start the server with --agent)",
                            None,
                        )
                    })?,
                };
                if state.store.agent_cached(&agent).is_none() {
                    return Err(ErrorData::invalid_request(
                        format!("no agent '{agent}'"),
                        None,
                    ));
                }
                agent
            }
        };
        Ok(Caller {
            agent,
            who: self.who,
        })
    }
}

/// The Skillbase session an HTTP request's calls record into: the `Skillbase-Session` header,
/// else one per MCP session (stateful wire), else one per token and agent (stateless wire).
///
/// Derived ids live in the agent's own namespace, `mcp:<agent>:…`, which no other agent can
/// name (see `skillbase_store::session_id::usable_by`); the stateless one is keyed by a hash of the token itself, so
/// it cannot be predicted without the token.
fn session_of(
    parts: Option<&axum::http::request::Parts>,
    caller: &Caller,
) -> Result<SessionId, ErrorData> {
    if let Some(p) = parts
        && let Some(v) = p.headers.get(SESSION_HEADER)
    {
        let s = v.to_str().unwrap_or_default();
        if s.is_empty()
            || s.len() > 128
            || s.chars().any(|c| c.is_control() || c == '/' || c == '\\')
        {
            return Err(ErrorData::invalid_params(
                "Skillbase-Session: 1-128 characters, no slashes or control characters",
                None,
            ));
        }
        return SessionId::claim(s, &caller.agent).ok_or_else(|| {
            ErrorData::invalid_params(skillbase_store::error::SESSION_UNAVAILABLE, None)
        });
    }
    let agent = &caller.agent;
    if let Some(p) = parts
        && let Some(id) = header_str(p, MCP_SESSION_HEADER)
    {
        return Ok(SessionId::mcp_stateful(agent, id));
    }
    let bearer = parts
        .and_then(|p| header_str(p, "authorization"))
        .unwrap_or(caller.who.as_str());
    Ok(SessionId::mcp_stateless(agent, bearer))
}

/// `tools/call`: through the dispatch pipeline; refusals and failures are results with
/// `isError` (the model can act on them).
async fn call_tool(
    state: &AppState,
    caller: &Caller,
    session: &SessionId,
    request: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let origin = session.origin();
    let session = session.as_str();
    let args = request
        .arguments
        .map(serde_json::Value::Object)
        .unwrap_or_else(|| json!({}));
    // The stateless wire gives no per-conversation identity: every conversation of the token
    // shares its session.
    if origin == Origin::McpStateless {
        state.engine.mark_shared(&caller.agent, session);
    }
    // Over HTTP the client does not share this server's disk: files as `skill://` URIs. Over
    // stdio it does (a local process): workspace paths.
    if origin != Origin::McpStdio {
        state.engine.mark_remote(&caller.agent, session);
    }
    let outcome = state
        .engine
        .call(&caller.agent, session, &request.name, args, CallMode::Wait)
        .await
        .map_err(runtime_error)?;
    state.metrics.call(&outcome);
    let text = vec![ContentBlock::text(outcome.for_model())];
    Ok(match outcome {
        CallOutcome::Done { .. } | CallOutcome::Started { .. } | CallOutcome::Authorized { .. } => {
            CallToolResult::success(text)
        }
        CallOutcome::Refused { .. } | CallOutcome::Failed { .. } => CallToolResult::error(text),
    }
    .into())
}

/// A page cursor: the last name of the previous page, opaque to clients.
fn encode_cursor(after: &str) -> Cursor {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(after.as_bytes())
}

fn decode_cursor(cursor: Option<&str>) -> Result<Option<String>, ErrorData> {
    let Some(c) = cursor else { return Ok(None) };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Some)
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("invalid cursor '{c}': pass back a nextCursor exactly"),
                None,
            )
        })
}

/// One page of items sorted by name: those after the cursor, and the next cursor.
fn page<'a, T>(
    items: &'a [T],
    name: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    size: usize,
) -> Result<(&'a [T], Option<Cursor>), ErrorData> {
    let after = decode_cursor(cursor)?;
    let start = match &after {
        Some(a) => items.partition_point(|i| name(i) <= a.as_str()),
        None => 0,
    };
    let end = (start + size.max(1)).min(items.len());
    let slice = &items[start..end];
    let next = (end < items.len())
        .then(|| slice.last().map(|l| encode_cursor(name(l))))
        .flatten();
    Ok((slice, next))
}

fn server_config() -> ServerConfig {
    static CONFIG: OnceLock<ServerConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            ServerConfig::new(
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tool_list_changed()
                    .enable_resources()
                    .enable_resources_list_changed()
                    .enable_skills_with_directory_read()
                    .build(),
            )
            .with_server_info(Implementation::new("skillbase", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Skillbase: the tools offered to your agent, and its skills (MCP Skills extension; skill:// resources).",
            )
        })
        .clone()
}

fn to_skill(m: &Manifest) -> Skill {
    let mut fm = SkillFrontmatter::new(m.fm_name.clone(), m.fm_description.clone());
    for (k, v) in &m.frontmatter {
        if k != "name" && k != "description" {
            fm.extra.insert(k.clone(), v.clone());
        }
    }
    Skill::new(
        m.uri.clone(),
        fm,
        SkillResources::Files(
            m.files
                .iter()
                .map(|f| SkillResource::new(f.uri.clone(), f.digest.clone(), f.size))
                .collect(),
        ),
    )
    .with_meta(rmcp::model::MetaObject(m.meta()))
}

fn file_resource(f: &ManifestFile, name: &str) -> Resource {
    let r = Resource::new(f.uri.clone(), name).with_size(f.size);
    // A name that says nothing of the type leaves it to `resources/read`, which sees the bytes.
    match f.mime {
        Some(m) => r.with_mime_type(m),
        None => r,
    }
}

impl McpHandler {
    fn new(state: Arc<AppState>, fixed: Option<(Caller, SessionId)>) -> McpHandler {
        let closed = state.shutdown.child_token();
        McpHandler {
            state,
            conn: Arc::new(Conn {
                fixed,
                bound: Mutex::new(None),
                watching: AtomicBool::new(false),
                closed,
            }),
        }
    }

    /// The caller of a request: from the token (and `Skillbase-Agent`), and the same as the one
    /// the session was opened by.
    fn caller(&self, ext: &Extensions) -> Result<Caller, ErrorData> {
        if let Some((c, _)) = &self.conn.fixed {
            return Ok(c.clone());
        }
        let parts = ext
            .get::<axum::http::request::Parts>()
            .ok_or_else(|| ErrorData::internal_error("no HTTP request in context", None))?;
        let id = Identity::of(parts)?;
        let mismatch = || {
            ErrorData::invalid_request(
                "this MCP session was opened with another token or for another agent; start a new session",
                None,
            )
        };
        // A session stays with its token and agent; later requests need not repeat the header.
        let bound = self
            .conn
            .bound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(b) = bound {
            return if b.who == id.who && id.named.is_none_or(|n| n == b.agent.as_str()) {
                Ok(b)
            } else {
                Err(mismatch())
            };
        }
        let caller = id.resolve(&self.state)?;
        let mut bound = self.conn.bound.lock().unwrap_or_else(|p| p.into_inner());
        match &*bound {
            Some(b) if *b != caller => Err(mismatch()),
            _ => {
                *bound = Some(caller.clone());
                Ok(caller)
            }
        }
    }

    /// The Skillbase session a call records into.
    fn session_id(&self, caller: &Caller, ext: &Extensions) -> Result<SessionId, ErrorData> {
        if let Some((_, s)) = &self.conn.fixed {
            return Ok(s.clone());
        }
        session_of(ext.get::<axum::http::request::Parts>(), caller)
    }

    /// The skills the agent may see (the skills methods need no turn view).
    fn visible(&self, agent: &AgentName) -> Result<Arc<Visible>, ErrorData> {
        self.state
            .skills
            .visible(&self.state.store, &self.state.engine, agent)
            .ok_or_else(|| runtime_error(RuntimeError::UnknownAgent(agent.to_string())))
    }

    /// The manifests of one page of the agent's visible skills, and the next page's cursor.
    fn page_of_manifests(
        &self,
        caller: &Caller,
        request: Option<&PaginatedRequestParams>,
    ) -> Result<(Vec<Arc<Manifest>>, Option<Cursor>), ErrorData> {
        let visible = self.visible(&caller.agent)?;
        let cursor = request.and_then(|r| r.cursor.as_deref());
        let (slice, next) = page(&visible.entries, |e| &e.name, cursor, self.page_size())?;
        let manifests = slice
            .iter()
            .map(|e| self.state.skills.manifest(&self.state.store, e))
            .collect();
        Ok((manifests, next))
    }

    /// The visible skill a `skill://` URI names, with its manifest and the path inside it.
    fn resolve(&self, caller: &Caller, uri: &str) -> Option<Result<Resolved, ErrorData>> {
        let parsed = skills_ext::parse_uri(uri)?;
        let visible = match self.visible(&caller.agent) {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        let entry = visible.get(&parsed.name)?.clone();
        let m = self.state.skills.manifest(&self.state.store, &entry);
        Some(Ok((entry, m, parsed.path)))
    }

    fn page_size(&self) -> usize {
        self.state.options.limits.page_size
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    /// rmcp reads a known method whose params do not fit its schema as a custom request; answer
    /// it `-32602` with what is wrong (clients read `-32601` as "unsupported"), and only a method
    /// nobody knows `-32601`.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        Err(custom_request_error(
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.caller(&context.extensions)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.caller(&context.extensions)?;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.conn.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let bound = match &self.conn.fixed {
            Some((c, _)) => Some(c.clone()),
            None => self
                .conn
                .bound
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        };
        if let Some(c) = bound {
            tokio::spawn(watch_changes(
                self.state.clone(),
                c.agent,
                self.conn.closed.clone(),
                Notifier::Peer(context.peer),
            ));
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let offered = self
            .state
            .engine
            .offered(&caller.agent)
            .map_err(runtime_error)?;
        let tools = offered
            .entries
            .iter()
            .map(|e| {
                let schema = match &e.parameters {
                    serde_json::Value::Object(m) => m.clone(),
                    _ => serde_json::Map::from_iter([("type".to_owned(), json!("object"))]),
                };
                Tool::new(e.wire_name.clone(), e.description.clone(), Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let session = self.session_id(&caller, &context.extensions)?;
        call_tool(&self.state, &caller, &session, request).await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let (manifests, next) = self.page_of_manifests(&caller, request.as_ref())?;
        let skills = manifests.iter().map(|m| to_skill(m)).collect();
        let mut result = ListSkillsResult::with_all_items(skills);
        result.next_cursor = next;
        Ok(result)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let uri = request.uri.as_str();
        let (_, m, _) = self.resolve(&caller, uri).ok_or_else(|| no_skill(uri))??;
        // Only the canonical SKILL.md URI names the skill (the result must echo it).
        if m.uri != uri {
            return Err(no_skill(uri));
        }
        Ok(GetSkillResult::new(to_skill(&m)))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let (manifests, next) = self.page_of_manifests(&caller, request.as_ref())?;
        let resources = manifests
            .iter()
            .map(|m| {
                let md = m.skill_md();
                Resource::new(md.uri.clone(), m.fm_name.clone())
                    .with_description(m.fm_description.clone())
                    .with_mime_type(skills_ext::MARKDOWN)
                    .with_size(md.size)
                    .with_meta(rmcp::model::MetaObject(m.meta()))
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let uri = request.uri.as_str();
        let (entry, m, path) = self
            .resolve(&caller, uri)
            .ok_or_else(|| no_resource(uri))??;
        let file = m.file(&path).ok_or_else(|| no_resource(uri))?;
        let bytes = self
            .state
            .skills
            .bytes(&self.state.store, &entry, &file.path)
            .await
            .map_err(store_error)?
            .ok_or_else(|| no_resource(uri))?;
        let (text, mime) = file.served_as(&bytes);
        let contents = if text {
            ResourceContents::text(String::from_utf8_lossy(&bytes), file.uri.clone())
        } else {
            ResourceContents::blob(
                base64::engine::general_purpose::STANDARD.encode(&bytes),
                file.uri.clone(),
            )
        }
        .with_mime_type(mime);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let uri = request.uri.as_str();
        let (_, m, path) = self
            .resolve(&caller, uri)
            .ok_or_else(|| no_directory(uri))??;
        if m.dir_uri(&path) != uri {
            return Err(no_directory(uri));
        }
        let children = m.children(&path).ok_or_else(|| no_directory(uri))?;
        let (slice, next) = page(
            &children,
            |c| c.name(),
            request.cursor.as_deref(),
            self.page_size(),
        )?;
        let resources = slice
            .iter()
            .map(|c| match c {
                Child::File(f) => file_resource(f, c.name()),
                Child::Dir { name, uri } => {
                    Resource::new(uri.clone(), name.clone()).with_mime_type(skills_ext::DIRECTORY)
                }
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next;
        Ok(result)
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resources_list_changed()
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let caller = self.caller(&context.request_context().extensions)?;
        let accepted = context.accepted();
        let notifier = Notifier::Subscription {
            sink: context.sink().clone(),
            resources: accepted.resources_list_changed == Some(true),
            tools: accepted.tools_list_changed == Some(true),
        };
        let stop = self.conn.closed.child_token();
        tokio::select! {
            _ = context.cancelled() => {}
            _ = watch_changes(self.state.clone(), caller.agent, stop.clone(), notifier) => {}
        }
        stop.cancel();
        Ok(())
    }
}

/// Where change notifications go.
enum Notifier {
    /// A stateful session or stdio.
    Peer(Peer<RoleServer>),
    /// A `subscriptions/listen` stream (2026-07-28).
    Subscription {
        sink: SubscriptionSink,
        resources: bool,
        tools: bool,
    },
}

impl Notifier {
    /// Send what changed; `false` once the other side is gone.
    async fn send(&self, resources: bool, tools: bool) -> bool {
        match self {
            Notifier::Peer(p) => {
                (!resources || p.notify_resource_list_changed().await.is_ok())
                    && (!tools || p.notify_tool_list_changed().await.is_ok())
            }
            Notifier::Subscription {
                sink,
                resources: r,
                tools: t,
            } => {
                (!(resources && *r) || sink.notify_resource_list_changed().await.is_ok())
                    && (!(tools && *t) || sink.notify_tool_list_changed().await.is_ok())
            }
        }
    }
}

/// Fingerprints of what an agent sees: its skills (names and revisions) and its offered tools.
#[derive(PartialEq, Eq)]
struct Seen {
    resources: Option<u64>,
    tools: Option<u64>,
}

impl Seen {
    fn of(state: &AppState, agent: &AgentName) -> Seen {
        let resources = state
            .skills
            .visible(&state.store, &state.engine, agent)
            .map(|v| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                for e in &v.entries {
                    (&e.name, e.id, e.active_rev).hash(&mut h);
                }
                h.finish()
            });
        let tools = state.engine.offered(agent).ok().map(|o| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for e in &o.entries {
                (&e.wire_name, &e.description, e.parameters.to_string()).hash(&mut h);
            }
            h.finish()
        });
        Seen { resources, tools }
    }
}

/// Notify when the agent's visible skills or offered tools change, until `stop`, shutdown, or
/// the other side goes away.
async fn watch_changes(
    state: Arc<AppState>,
    agent: AgentName,
    stop: CancellationToken,
    notifier: Notifier,
) {
    let mut rx = state.store.subscribe();
    rx.borrow_and_update();
    // The registry changes too: an upstream MCP server's tools come, go or change.
    let mut tools = state.engine.tools().subscribe();
    tools.borrow_and_update();
    let mut last = Seen::of(&state, &agent);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = state.shutdown.cancelled() => return,
            r = rx.changed() => if r.is_err() { return },
            r = tools.changed() => if r.is_err() { return },
        }
        let now = Seen::of(&state, &agent);
        let (resources, tools) = (now.resources != last.resources, now.tools != last.tools);
        last = now;
        if (resources || tools) && !notifier.send(resources, tools).await {
            return;
        }
    }
}

/// Buffer POST bodies so that a body rmcp cannot read as one JSON-RPC message gets a JSON-RPC
/// error (`-32700` parse error, `-32600` invalid request) instead of a bare HTTP error; answer a
/// well-formed stateless `tools/call` on the direct path; answer `DELETE /mcp` 204 where rmcp
/// says 202.
async fn jsonrpc_guard(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    if req.method() == Method::DELETE {
        // rmcp answers a closed session 202; clients (the SDKs, fast-agent) expect 200 or 204.
        let mut res = next.run(req).await;
        if res.status() == StatusCode::ACCEPTED {
            *res.status_mut() = StatusCode::NO_CONTENT;
            *res.body_mut() = Body::empty();
            res.headers_mut().remove(header::CONTENT_TYPE);
            res.headers_mut().remove(header::CONTENT_LENGTH);
        }
        return res;
    }
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let limit = guard.limit;
    let json_body = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        });
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return jsonrpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                serde_json::Value::Null,
                -32600,
                format!("Invalid Request: the body exceeds {limit} bytes"),
            );
        }
    };
    if let Some((state, hosts)) = &guard.direct
        && let Some(res) = direct::serve(state, hosts, &parts, &bytes).await
    {
        return res;
    }
    let res = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    // rmcp answers a body it cannot deserialize with 415; tell JSON-RPC what was wrong.
    if !json_body || res.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return res;
    }
    let Err(e) = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) else {
        return res;
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(pe) => jsonrpc_error(
            StatusCode::BAD_REQUEST,
            serde_json::Value::Null,
            -32700,
            format!("Parse error: {pe}"),
        ),
        Ok(v) => {
            let id = v
                .get("id")
                .filter(|id| id.is_string() || id.is_number())
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            let why = if v.is_array() {
                "batches are not supported; send one message per request".to_owned()
            } else {
                e.to_string()
            };
            jsonrpc_error(
                StatusCode::BAD_REQUEST,
                id,
                -32600,
                format!("Invalid Request: {why}"),
            )
        }
    }
}

/// A serde message without the caller's input: a span in quotes or backticks is the sender's
/// value, key or variant (`invalid type: string "…"`, ``unknown field `…` ``) unless the message
/// names a field the schema requires (``missing field `name` ``). Refusals never quote input.
fn unquoted(message: &str) -> String {
    if message.starts_with("missing field") {
        return message.to_owned();
    }
    let mut out = String::with_capacity(message.len());
    let mut open: Option<char> = None;
    for c in message.chars() {
        match open {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                open = None;
            }
            Some(_) => {}
            None if c == '"' || c == '`' => {
                out.push(c);
                open = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

/// The error for a request rmcp could not read as one of its methods.
fn custom_request_error(method: &str, params: Option<&serde_json::Value>) -> ErrorData {
    use rmcp::model::{
        CallToolRequestParams, InitializeRequestParams, PaginatedRequestParams,
        ReadResourceRequestParams,
    };
    fn check<T: serde::de::DeserializeOwned>(params: Option<&serde_json::Value>) -> String {
        let v = params.cloned().unwrap_or(serde_json::Value::Null);
        match serde_json::from_value::<T>(v) {
            Err(e) => unquoted(&e.to_string()),
            Ok(_) => "the params do not match the method's schema".into(),
        }
    }
    let problem = match method {
        "tools/call" => check::<CallToolRequestParams>(params),
        "resources/read" => check::<ReadResourceRequestParams>(params),
        "initialize" => check::<InitializeRequestParams>(params),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            check::<PaginatedRequestParams>(params)
        }
        "ping"
        | "prompts/get"
        | "completion/complete"
        | "logging/setLevel"
        | "resources/subscribe"
        | "resources/unsubscribe"
        | "server/discover"
        | "subscriptions/listen"
        | "skills/list"
        | "skills/get"
        | "tasks/get"
        | "tasks/list"
        | "tasks/cancel"
        | "tasks/result" => "the params do not match the method's schema".into(),
        _ => {
            let shown: String = method.chars().take(100).collect();
            return ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {shown}"),
                None,
            );
        }
    };
    ErrorData::invalid_params(format!("invalid params for {method}: {problem}"), None)
}

fn jsonrpc_error(
    status: StatusCode,
    id: serde_json::Value,
    code: i64,
    message: String,
) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut res = (status, body.to_string()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

#[cfg(test)]
mod store_error_tests {
    use super::*;

    /// A storage fault over MCP says so, with the REST problem's type and status in `data`;
    /// any other store error stays a plain internal error.
    #[test]
    fn storage_faults_carry_the_problem_type_and_status() {
        let e = store_error(StoreError::DiskFull("database or disk is full".into()));
        assert!(e.message.contains("the storage failed"), "{}", e.message);
        let data = e.data.expect("data");
        assert_eq!(data["status"], 507);
        assert_eq!(data["type"], "urn:skillbase:problem:insufficient-storage");
        let e = store_error(StoreError::Unavailable("disk I/O error".into()));
        assert_eq!(e.data.expect("data")["status"], 503);
        let e = store_error(StoreError::Corrupt("x".into()));
        assert!(e.data.is_none());
    }
}
