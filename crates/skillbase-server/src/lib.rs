//! `skillbase-server`: Skillbase over the network.
//!
//! - [`rest`]: the REST API under `/v1`, described by the OpenAPI 3.1 document at
//!   `/v1/openapi.json`; errors as `application/problem+json`.
//! - [`mcp`]: MCP over streamable HTTP at `/mcp` (and stdio), with the Skills extension
//!   (`io.modelcontextprotocol/skills`); `tools/list` is the caller's agent's offered set and
//!   `tools/call` goes through the dispatch pipeline.
//! - [`auth`]: bearer tokens, admin or bound to one agent, stored as hashes.
//! - [`studio`]: the web studio at `/studio`, server-rendered, signed in by a cookie.
//! - [`metrics`], [`logging`]: Prometheus metrics and redacted structured logs.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod auth;
pub mod dreaming;
pub mod error;
mod guard;
mod jobs;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod rest;
pub mod retention;
pub mod skills_ext;
pub mod state;
pub mod studio;
mod sweeps;

pub use auth::{Principal, generate_token, hash_token};
pub use error::{ApiError, Problem};
pub use state::{AppState, Limits, ServerOptions};

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use skillbase_store::AgentName;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The whole HTTP surface: the probes, `/metrics`, `/v1` and `/mcp`.
pub fn router(state: Arc<AppState>) -> Router {
    let authed = Router::new()
        .route("/metrics", get(metrics_route))
        .nest("/v1", rest::router(state.clone()))
        .merge(rest::top_level_router())
        .nest_service("/mcp", mcp::service(state.clone()))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::middleware,
        ));
    let mut app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .nest("/studio", studio::router(state.clone()))
        .merge(authed);
    if state.options.dev {
        app = app.layer(middleware::from_fn_with_state(
            Arc::new(mcp::allowed_hosts(&state)),
            mcp::dev_host_guard,
        ));
    }
    app.layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(DefaultBodyLimit::max(state.options.limits.body_bytes))
        .with_state(state)
}

/// Liveness: the process answers. Needs no token and says nothing else.
async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the store answers and the server is not shutting down. Needs no token.
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if !state.ready.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "starting or stopping\n").into_response();
    }
    match state.store.agents().await {
        Ok(_) => "ready\n".into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check: the store does not answer");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
        }
    }
}

async fn metrics_route(
    State(state): State<Arc<AppState>>,
    axum::Extension(p): axum::Extension<Principal>,
) -> Result<Response, ApiError> {
    p.require_admin()?;
    let index = state.store.index();
    state.metrics.skills.set(index.len() as i64);
    state
        .metrics
        .agents
        .set(state.store.agents().await.map(|a| a.len()).unwrap_or(0) as i64);
    if let Some(t) = state.engine.telemetry_stats() {
        let m = &state.metrics;
        m.telemetry_dropped_spans.set(t.dropped_spans as i64);
        m.telemetry_failed_exports.set(t.failed_exports as i64);
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response())
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route for {} {}",
        req.method(),
        req.uri().path()
    ))
}

/// Timeout to the start of the response, metrics and a log line per request.
async fn observe(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = metrics::method_label(req.method());
    let route: metrics::Label = match req.extensions().get::<MatchedPath>() {
        Some(m) => m.as_str().to_owned().into(),
        None if req.uri().path().starts_with("/mcp") => "/mcp".into(),
        None => "unmatched".into(),
    };
    // Routes that run tool calls wait for them: the slowest cost class may take up to two
    // minutes, so they get at least CALL_ROUTE_TIMEOUT before the response must start.
    let path = req.uri().path();
    let limit = if path.starts_with("/mcp") || path.ends_with("/calls") || path.contains("/calls/")
    {
        state.options.limits.request_timeout.max(CALL_ROUTE_TIMEOUT)
    } else {
        state.options.limits.request_timeout
    };
    let res = match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!("the request took longer than {} s", limit.as_secs()),
        )
        .into_response(),
    };
    let status = res.status().as_u16();
    if status == 401 {
        state.metrics.auth_failures.inc();
    }
    state
        .metrics
        .http_requests
        .get_or_create(&metrics::HttpLabels {
            method: method.clone(),
            route: route.clone(),
            status,
        })
        .inc();
    let secs = started.elapsed().as_secs_f64();
    tracing::debug!(%method, %route, status, ms = secs * 1e3, "request");
    state
        .metrics
        .http_seconds
        .get_or_create(&metrics::RouteLabels { route })
        .observe(secs);
    res
}

/// The least time a route that runs tool calls (`/mcp`, `.../calls`) gets before its response
/// must start: above the `tens_of_seconds` cost class's two minutes.
pub const CALL_ROUTE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(130);

/// Why a server could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--dev` (no tokens) asked for on an address other than loopback.
    #[error(
        "--dev turns authentication off, so it only binds loopback addresses (127.0.0.1 or [::1]); {0} is not one. Drop --dev and use tokens (`skillbase token create`) to listen there"
    )]
    DevNotLoopback(SocketAddr),
    /// The listener or the connection failed.
    #[error("serving failed: {0}")]
    Io(#[from] std::io::Error),
    /// An MCP session over a byte stream failed to start or ended with an error.
    #[error("MCP over stdio: {0}")]
    Mcp(String),
    /// MCP over stdio was asked to act as an agent the store does not have.
    #[error("no agent '{0}'")]
    UnknownAgent(AgentName),
    /// The operating system's random source failed (a session id could not be made).
    #[error("random source: {0}")]
    Random(String),
    /// The engine was built without a vault; a server needs one.
    #[error("a server needs the vault: build the engine with a vault key (see `skillbase vault`)")]
    NoVault,
}

/// Refuse `--dev` (no tokens) on anything but a loopback address.
pub fn check_dev_bind(addr: &SocketAddr, dev: bool) -> Result<(), ServeError> {
    if dev && !addr.ip().is_loopback() {
        return Err(ServeError::DevNotLoopback(*addr));
    }
    Ok(())
}

/// Serve until `shutdown` resolves, then stop accepting, end event streams and MCP sessions,
/// and wait for requests in flight.
pub async fn serve(
    state: Arc<AppState>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    check_dev_bind(&addr, state.options.dev)?;
    let app = router(state.clone());
    let sync = tokio::spawn(sync_loop(state.clone()));
    let retention = tokio::spawn(retention::retention_loop(state.clone()));
    let dreaming = tokio::spawn(dreaming::dreaming_loop(state.clone()));
    let first_scans = tokio::spawn(scan_unscanned(state.clone()));
    warm_up();
    state.ready.store(true, Ordering::SeqCst);
    let token = state.shutdown.clone();
    let st = state.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = shutdown => {}
                _ = token.cancelled() => {}
            }
            st.ready.store(false, Ordering::SeqCst);
            st.shutdown.cancel();
            tracing::info!("shutting down: finishing requests in flight");
        })
        .await?;
    sync.abort();
    retention.abort();
    dreaming.abort();
    first_scans.abort();
    state.engine.flush().await;
    Ok(())
}

/// Scan, once at start, the active revisions written before the scanning gate existed (an
/// upgraded store): what the gate would have found is then on record for the doctor and the
/// studio. Served skills stay served whatever it finds.
async fn scan_unscanned(state: Arc<AppState>) {
    match state.store.scan_unscanned().await {
        Ok(r) if r.scanned > 0 => {
            let flagged = r.changed.iter().filter(|c| c.after.is_some()).count();
            tracing::info!(
                scanned = r.scanned,
                flagged,
                "scanned the skills written before the scanning gate"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "the skills never scanned were not scanned"),
    }
}

/// Load the tokenizer in the background (about 0.2 s of CPU) so the first turn does not pay for
/// it; readiness does not wait, and the skills methods never need it.
pub fn warm_up() {
    // A plain thread, not `spawn_blocking`: shutting the runtime down must not wait for it
    // (a short MCP session over stdio would otherwise exit only once the tokenizer loaded).
    let _ = std::thread::Builder::new()
        .name("tokenizer-warm-up".into())
        .spawn(|| skillbase_runtime::tokens::count("warm up"));
}

/// How often the server polls for writes made by other processes on the same database (the
/// CLI on the same SQLite file, other servers on the same PostgreSQL). On PostgreSQL the writes
/// are also announced at commit (`LISTEN`/`NOTIFY`) and applied at once; the poll is the
/// fallback for an announcement lost while the listener reconnects.
pub const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// How many polls pass between attempts to listen again after the listener failed.
const RELISTEN_EVERY: u32 = 10;

/// Apply other processes' writes to the index (skills, agents), the vault and the token cache:
/// at once when PostgreSQL announces them, and every `limits.sync_poll` ([`SYNC_INTERVAL`]) in
/// any case, until shutdown.
pub(crate) async fn sync_loop(state: Arc<AppState>) {
    let poll = state
        .options
        .limits
        .sync_poll
        .max(std::time::Duration::from_millis(10));
    use skillbase_store::Change;
    let mut listener = listen(&state).await;
    let mut tick = tokio::time::interval(poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut polls_without_listener = 0u32;
    loop {
        let mut changes = Vec::new();
        tokio::select! {
            _ = tick.tick() => {
                if listener.is_none() && state.store.backend() == "postgres" {
                    polls_without_listener += 1;
                    if polls_without_listener.is_multiple_of(RELISTEN_EVERY) {
                        listener = listen(&state).await;
                    }
                }
                changes.push(Change::Index);
            }
            c = next_change(&mut listener) => match c {
                Ok(c) => {
                    changes.push(c);
                    if let Some(l) = listener.as_mut() {
                        changes.extend(l.buffered());
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "listening for other servers' writes failed; polling until it works again");
                    listener = None;
                    polls_without_listener = 0;
                }
            },
            _ = state.shutdown.cancelled() => return,
        }
        let everything = changes.contains(&Change::Reconnected);
        if everything || changes.contains(&Change::Tokens) {
            state.auth.invalidate();
        }
        if everything || changes.contains(&Change::Index) {
            apply_changes(&state).await;
        }
    }
}

/// A listener for announced writes, when the store has them (PostgreSQL).
async fn listen(state: &AppState) -> Option<skillbase_store::ChangeListener> {
    match state.store.change_listener().await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for other servers' writes; polling every second");
            None
        }
    }
}

/// The next announcement; never, without a listener.
async fn next_change(
    listener: &mut Option<skillbase_store::ChangeListener>,
) -> Result<skillbase_store::Change, skillbase_store::StoreError> {
    match listener {
        Some(l) => l.recv().await,
        None => std::future::pending().await,
    }
}

/// Apply other processes' writes to the index and the agents, and re-read the vault if its
/// entries changed.
async fn apply_changes(state: &AppState) {
    if let Err(e) = state.store.sync_changes().await {
        tracing::warn!(error = %e, "applying other processes' changes failed; retrying");
    }
    // The vault changes rarely: compare names and update times before decrypting again.
    match state.store.vault_all().await {
        Ok(rows) => {
            let known = state.vault.list();
            let same = rows.len() == known.len()
                && rows
                    .iter()
                    .zip(&known)
                    .all(|(r, k)| r.name == k.name && r.updated_at == k.updated_at);
            if !same && let Err(e) = state.vault.reload().await {
                tracing::warn!(error = %e, "reloading the vault failed");
            }
        }
        Err(e) => tracing::warn!(error = %e, "reading the vault failed"),
    }
    // Upstream servers configured through the API (on any server of the store).
    if let Err(e) = state.gateway.refresh().await {
        tracing::warn!(error = %e, "reading the upstream servers configured through the API failed");
    }
}
