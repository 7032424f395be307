//! What every handler shares: the engine, the store, the vault, token lookups,
//! metrics and the server's limits.

use crate::ServeError;
use crate::auth::Auth;
use crate::metrics::Metrics;
use skillbase_runtime::Engine;
use skillbase_runtime::Vault;
use skillbase_store::{AgentName, Store};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Limits on what a client may send and how long a request may take.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest JSON request body.
    pub body_bytes: usize,
    /// Largest upload (a zip of skills).
    pub upload_bytes: usize,
    /// Time until a response starts (streams such as SSE then run on).
    pub request_timeout: Duration,
    /// Page size for listings (REST and MCP).
    pub page_size: usize,
    /// How often other processes' writes are polled for ([`crate::SYNC_INTERVAL`]). On
    /// PostgreSQL they are also announced at commit, so this is only the fallback.
    pub sync_poll: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            body_bytes: 1024 * 1024,
            upload_bytes: 64 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            page_size: 100,
            sync_poll: crate::SYNC_INTERVAL,
        }
    }
}

/// How the server was started.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// `--dev`: no tokens (loopback only; checked where the listener is bound).
    pub dev: bool,
    /// The agent MCP requests act as when the token is an admin token (or in `--dev` mode) and
    /// no `Skillbase-Agent` header names one.
    pub default_agent: Option<AgentName>,
    /// Hostnames MCP accepts in the `Host` header besides loopback (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Body sizes, timeouts and page size.
    pub limits: Limits,
    /// Send every MCP request through rmcp, including the well-formed stateless `tools/call`
    /// requests the direct path answers with the same bytes (see `mcp::direct`). For
    /// comparison tests, and a way out should the two ever differ.
    pub rmcp_only: bool,
    /// The retention policy (`[retention]` of `skillbase.toml`) the server applies at start and
    /// then every `interval`; none keeps everything.
    pub retention: Option<skillbase_store::retention::RetentionPolicy>,
    /// `--sweep-pool DIR`: the folder of distractor skills REST's scale sweeps grow an agent's
    /// library with (`POST /v1/agents/{name}/eval/sweeps`); none refuses sweeps.
    pub sweep_pool: Option<std::path::PathBuf>,
}

/// The state every handler receives (as `Arc<AppState>`): one store served to many agents.
pub struct AppState {
    /// The store: skills, revisions, agents, sessions, events and tokens.
    pub store: Arc<Store>,
    /// The engine: agents' views, turns, sessions, the call pipeline (offered sets, the
    /// capability gate, bounds, redaction) and learning. Every turn and tool call, REST, MCP or
    /// studio, goes through it.
    pub engine: Engine,
    /// The decrypted vault; its redactor also scrubs logs and tool results.
    pub vault: Arc<Vault>,
    /// Bearer-token lookups (cached for `auth::TOKEN_CACHE_TTL`) and the dev-mode switch.
    pub auth: Auth,
    /// The Prometheus registry and its counters, served at `/metrics`.
    pub metrics: Metrics,
    /// How the server was started (`--dev`, default agent, allowed hosts, limits).
    pub options: ServerOptions,
    /// Skill manifests (files, digests, frontmatter as JSON) by revision, for MCP.
    pub skills: crate::skills_ext::ManifestCache,
    /// Set once the server is serving; cleared when shutdown starts.
    pub ready: AtomicBool,
    /// Cancelled at shutdown: event streams and MCP sessions end so the server can stop.
    pub shutdown: CancellationToken,
    /// The upstream MCP servers' connections (kept here: they stop when the last holder goes).
    pub gateway: Arc<skillbase_runtime::Gateway>,
    /// REST's scale sweeps: the running and recent ones, and their semantic stage.
    pub(crate) sweeps: crate::sweeps::Sweeps,
}

impl AppState {
    /// The state of a server over an engine (with the tools it was built with), its store and
    /// its vault. A server needs the vault (its redactor scrubs
    /// logs, results and events, and the vault routes manage it): an engine built without one
    /// is refused.
    pub fn new(engine: &Engine, options: ServerOptions) -> Result<Arc<AppState>, ServeError> {
        let vault = engine.vault().cloned().ok_or(ServeError::NoVault)?;
        Ok(Arc::new(AppState {
            auth: Auth::new(options.dev),
            metrics: Metrics::new(),
            skills: crate::skills_ext::ManifestCache::default(),
            ready: AtomicBool::new(false),
            shutdown: CancellationToken::new(),
            store: engine.store().clone(),
            engine: engine.clone(),
            vault,
            options,
            gateway: engine.gateway().clone(),
            sweeps: crate::sweeps::Sweeps::default(),
        }))
    }
}
