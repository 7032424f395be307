//! `skillbase serve`, `skillbase mcp` (stdio) and `skillbase token`.

use crate::store_cmds::StoreArgs;
use crate::{EXIT_OK, EXIT_USAGE};
use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use skillbase_runtime::Engine;
use skillbase_runtime::{Vault, VaultKey};
use skillbase_server::{AppState, ServerOptions, generate_token, hash_token};
use skillbase_store::{AgentConfig, AgentName, Author, Grants, NameSet, Store};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Seed the bundled example skills, create the `demo` agent and print a token for it.
    #[arg(long)]
    pub demo: bool,
    /// No authentication (development only): refuses to bind anything but loopback.
    #[arg(long)]
    pub dev: bool,
    /// The agent MCP requests act as when the token is an admin token (or in --dev mode) and
    /// no `Skillbase-Agent` header names one.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// A hostname clients use to reach this server, accepted in the Host header of MCP
    /// requests besides loopback (repeatable; protects local servers from DNS rebinding).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Log format: `json` (one object per line) or `text`. Default: text on a terminal.
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Largest JSON request body, in bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_body: usize,
    /// Largest zip upload, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    pub max_upload: usize,
    /// Seconds a request may take before its response starts.
    #[arg(long, default_value_t = 60)]
    pub request_timeout: u64,
    /// A folder of distractor skills (a public pool such as SkillRouter's) that REST's scale
    /// sweeps grow an agent's library with (`POST /v1/agents/NAME/eval/sweeps`, as `skillbase
    /// eval --sweep DIR`). Without it, sweeps are refused.
    #[arg(long, value_name = "DIR")]
    pub sweep_pool: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct McpArgs {
    /// The agent whose skills and tools the MCP client gets.
    #[arg(long)]
    pub agent: String,
}

#[derive(Subcommand, Debug)]
pub enum TokenCmd {
    /// Create a token and print it once (only its hash is stored).
    Create(TokenCreateArgs),
    /// List tokens (ids, labels, agents; never the secrets).
    List,
    /// Revoke a token by id.
    Revoke { id: i64 },
}

#[derive(Args, Debug)]
pub struct TokenCreateArgs {
    /// Bind the token to this agent: it sees and calls only what the agent may.
    #[arg(long, conflicts_with = "admin", required_unless_present = "admin")]
    pub agent: Option<String>,
    /// An admin token: every route, every agent.
    #[arg(long)]
    pub admin: bool,
    /// A label to recognise the token by.
    #[arg(long, default_value = "")]
    pub label: String,
}

/// The bundled examples: `examples/` under the working directory, else the source tree this
/// binary was built from.
fn examples_dir() -> Option<PathBuf> {
    let here = PathBuf::from("examples");
    if here.join("skills").is_dir() {
        return Some(here);
    }
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    built.join("skills").is_dir().then_some(built)
}

async fn state_for(s: &StoreArgs, options: ServerOptions) -> Result<(Arc<Store>, Arc<AppState>)> {
    let store = s.open().await?;
    state_on(s, store, options).await
}

/// The server's state over an open store.
async fn state_on(
    s: &StoreArgs,
    store: Arc<Store>,
    options: ServerOptions,
) -> Result<(Arc<Store>, Arc<AppState>)> {
    let home = skillbase_store::default_home();
    let key = VaultKey::load(&home)?;
    let vault = Vault::open(store.clone(), key).await?;
    skillbase_server::logging::attach_vault(vault.clone());
    let engine = Engine::builder()
        .store(store.clone())
        .vault(vault)
        .workspace(home.join("workspaces"))
        .web_fetch();
    let engine = crate::engine_setup::configured(s, engine)?;
    let state = AppState::new(&engine.build().await?, options)?;
    // The semantic stage's first index in the background: turns rank lexically (and say so)
    // until each agent's vectors are ready; stored vectors are only read.
    if state.engine.semantic().is_some() {
        let engine = state.engine.clone();
        let agents = store.agents().await?;
        tokio::spawn(async move {
            for a in agents {
                let name = a.name;
                match engine.warm_semantic(&name).await {
                    Ok(Some(r)) => tracing::info!(
                        agent = %name, read = r.read, computed = r.computed,
                        "semantic stage ready{}",
                        r.failed.map(|f| format!(" (some vectors missing: {f})")).unwrap_or_default()
                    ),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(agent = %name, "semantic stage not ready: {e}"),
                }
            }
        });
    }
    Ok((store, state))
}

/// The label of the token `serve --demo` mints (the one before it is revoked at each start).
const DEMO_TOKEN_LABEL: &str = "demo";

/// The `demo` agent: every shared skill, and what the example skills declare (so that none of
/// their calls is refused; `skillbase doctor` reports any that would be): notes, authoring, the
/// harness's `workspace` class, and `web_fetch` with the payments key to the example payments
/// host only.
async fn ensure_demo_agent(store: &Store) -> Result<AgentName> {
    let name = AgentName::parse("demo").map_err(|e| anyhow!(e))?;
    if store.agent(&name).await?.is_none() {
        let config = AgentConfig {
            skills: NameSet::All,
            grants: Grants {
                tools: ["notes", "skills", "workspace", "web_fetch"]
                    .map(String::from)
                    .to_vec(),
                vault: vec!["PAYMENTS_API_KEY".into()],
                hosts: vec!["api.payments.example.com".into()],
            },
            description: "The demo agent: every shared skill".into(),
            ..AgentConfig::default()
        };
        store.create_agent(&name, &config).await?;
    }
    Ok(name)
}

/// `skillbase serve`: serve REST, MCP and the probes over the store until Ctrl-C or SIGTERM.
pub async fn serve(s: &StoreArgs, a: ServeArgs) -> Result<u8> {
    let json = match log_as_json(a.log_format.as_deref()) {
        Ok(json) => json,
        Err(other) => {
            eprintln!("Error: --log-format is `json` or `text`, not `{other}`");
            return Ok(EXIT_USAGE);
        }
    };
    skillbase_server::check_dev_bind(&a.listen, a.dev)?;
    skillbase_server::logging::init(json);
    let mut s = s.clone();
    if a.demo {
        add_demo_examples(&mut s)?;
    }
    let default_agent = default_agent(&a)?;
    let started = std::time::Instant::now();
    let options = server_options(&a, &s, default_agent)?;
    let (store, state) = state_for(&s, options).await?;
    let demo_token = if a.demo {
        demo_token(&store, a.dev).await?
    } else {
        None
    };
    let listener = tokio::net::TcpListener::bind(a.listen)
        .await
        .with_context(|| format!("cannot listen on {}", a.listen))?;
    let addr = listener.local_addr()?;
    let watcher = if s.seed.is_empty() {
        None
    } else {
        Some(skillbase_store::seed::SeedWatcher::start(
            store.clone(),
            s.seed.clone(),
            crate::store_cmds::report_seed,
        )?)
    };
    tracing::info!(
        listen = %addr,
        db = %s.url()?.redacted(),
        skills = store.index().len(),
        dev = a.dev,
        ms = started.elapsed().as_millis() as u64,
        "skillbase serving"
    );
    print_banner(addr, a.dev, demo_token.as_deref());
    let gateway = state.gateway.clone();
    skillbase_server::serve(state, listener, shutdown_signal()).await?;
    gateway.shutdown().await;
    drop(watcher);
    store.close().await;
    tracing::info!("stopped");
    Ok(EXIT_OK)
}

/// Whether logs are written as JSON lines, as `--log-format` says (default: text on a
/// terminal); `Err` holds a value that is neither `json` nor `text`.
fn log_as_json(format: Option<&str>) -> Result<bool, String> {
    match format {
        Some("json") => Ok(true),
        Some("text") => Ok(false),
        None => Ok(!std::io::stderr().is_terminal()),
        Some(other) => Err(other.to_owned()),
    }
}

/// `--demo`: seed the bundled example skills, with their configuration unless one is given.
fn add_demo_examples(s: &mut StoreArgs) -> Result<()> {
    let dir = examples_dir().ok_or_else(|| {
        anyhow!("--demo needs the bundled examples (run it from the Skillbase source folder), or pass --seed DIR")
    })?;
    s.seed.push(dir.join("skills"));
    if s.config.is_none() {
        s.config = Some(dir.join("skillbase.toml"));
    }
    Ok(())
}

/// The agent MCP requests act as when none is named: `--agent`, else `demo` under `--demo`.
fn default_agent(a: &ServeArgs) -> Result<Option<AgentName>> {
    let mut default_agent = a
        .agent
        .as_deref()
        .map(AgentName::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    if a.demo {
        default_agent.get_or_insert(AgentName::parse("demo").map_err(|e| anyhow!(e))?);
    }
    Ok(default_agent)
}

/// The server's options: the flags' and the configuration's `[retention]` policy.
fn server_options(
    a: &ServeArgs,
    s: &StoreArgs,
    default_agent: Option<AgentName>,
) -> Result<ServerOptions> {
    let mut options = ServerOptions {
        dev: a.dev,
        default_agent,
        allowed_hosts: a.allowed_hosts.clone(),
        limits: skillbase_server::Limits {
            body_bytes: a.max_body,
            upload_bytes: a.max_upload,
            request_timeout: std::time::Duration::from_secs(a.request_timeout.max(1)),
            ..Default::default()
        },
        rmcp_only: false,
        retention: None,
        sweep_pool: a.sweep_pool.clone(),
    };
    // The `[retention]` policy, applied by the server at start and every interval.
    if let Some(path) = s.config.as_ref().filter(|p| p.exists()) {
        options.retention = skillbase_store::config::Config::load(path)?.retention;
    }
    Ok(options)
}

/// `--demo`: the `demo` agent, and unless `--dev` (no authentication) a new token for it,
/// the secret to print once.
async fn demo_token(store: &Store, dev: bool) -> Result<Option<String>> {
    let agent = ensure_demo_agent(store).await?;
    if dev {
        return Ok(None);
    }
    // One demo token at a time: the ones earlier starts printed are revoked, so a demo
    // run leaves no stray credentials behind.
    let actor = Author::Human("serve --demo".into());
    for t in store.tokens().await? {
        if t.label == DEMO_TOKEN_LABEL
            && t.agent.as_deref() == Some(agent.as_str())
            && t.revoked_at.is_none()
        {
            store.token_revoke(t.id, &actor).await?;
        }
    }
    let secret = generate_token();
    store
        .token_create(DEMO_TOKEN_LABEL, &hash_token(&secret), Some(&agent), &actor)
        .await?;
    Ok(Some(secret))
}

// The banner is for a reader who may already be gone (a supervisor that closed the pipe):
// a write that fails is dropped, never a panic that takes the server down.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// The banner on stderr: where each interface is served, then the demo token (on stdout)
/// with requests to try, or that `--dev` turned authentication off.
fn print_banner(addr: SocketAddr, dev: bool, demo_token: Option<&str>) {
    say!("Skillbase is serving on http://{addr}");
    say!(
        "  REST     http://{addr}/v1   (OpenAPI: http://{addr}/v1/openapi.json{})",
        if dev {
            ""
        } else {
            ", with a bearer token like every route"
        }
    );
    say!("  MCP      http://{addr}/mcp  (streamable HTTP, Skills extension)");
    say!("  probes   http://{addr}/healthz  http://{addr}/readyz   metrics: http://{addr}/metrics");
    if let Some(t) = demo_token {
        say!();
        say!(
            "Demo agent `demo` token (shown once; only its hash is stored; the one an earlier --demo start printed is revoked):"
        );
        {
            use std::io::Write as _;
            let _ = writeln!(std::io::stdout(), "{t}");
        }
        say!();
        say!("Try (T is the token above):");
        say!("  T={t}");
        say!("  curl -H \"Authorization: Bearer $T\" http://{addr}/v1/skills");
        say!(
            "  curl -H \"Authorization: Bearer $T\" -H 'Content-Type: application/json' -d '{{\"id\":\"s1\"}}' http://{addr}/v1/sessions"
        );
        say!(
            "  curl -H \"Authorization: Bearer $T\" -H 'Content-Type: application/json' -d '{{\"message\":\"A customer wants a refund\"}}' http://{addr}/v1/sessions/s1/turns"
        );
        say!("  MCP client: url http://{addr}/mcp, header Authorization: Bearer {t}");
    } else if dev {
        say!("--dev: authentication is OFF (loopback only).");
    }
}

/// Ends when the process is asked to stop: Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

pub async fn mcp(s: &StoreArgs, a: McpArgs) -> Result<u8> {
    // stdout is the protocol: logs go to stderr only.
    skillbase_server::logging::init(true);
    let agent = AgentName::parse(&a.agent).map_err(|e| anyhow!(e))?;
    let options = ServerOptions {
        default_agent: Some(agent.clone()),
        ..ServerOptions::default()
    };
    // A mistyped agent fails before anything is written, and leaves no new store behind.
    let store = s
        .open_for_agent(&agent, || {
            anyhow!("no agent '{agent}'; create it with `skillbase agent create {agent}`")
        })
        .await?;
    let (store, state) = state_on(s, store, options).await?;
    let gateway = state.gateway.clone();
    skillbase_server::mcp::serve_stdio(state, agent).await?;
    gateway.shutdown().await;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn token(s: &StoreArgs, cmd: TokenCmd) -> Result<u8> {
    let store = s.open().await?;
    let actor = Author::Human(whoami());
    match cmd {
        TokenCmd::Create(c) => {
            let agent = c
                .agent
                .as_deref()
                .map(AgentName::parse)
                .transpose()
                .map_err(|e| anyhow!(e))?;
            let secret = generate_token();
            let rec = store
                .token_create(&c.label, &hash_token(&secret), agent.as_ref(), &actor)
                .await?;
            match &rec.agent {
                Some(a) => eprintln!(
                    "token {} created, bound to agent {a}; it is shown once:",
                    rec.id
                ),
                None => eprintln!("admin token {} created; it is shown once:", rec.id),
            }
            outln!("{secret}")?;
        }
        TokenCmd::List => {
            let all = store.tokens().await?;
            if all.is_empty() {
                eprintln!("no tokens; create one with `skillbase token create --agent NAME`");
            }
            for t in all {
                outln!(
                    "{:>4}  {:<10} {:<20} {}",
                    t.id,
                    t.agent
                        .as_deref()
                        .map_or("admin".to_owned(), |a| format!("agent:{a}")),
                    if t.label.is_empty() { "-" } else { &t.label },
                    if t.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    },
                )?;
            }
        }
        TokenCmd::Revoke { id } => {
            if store.token_revoke(id, &actor).await? {
                eprintln!("token {id} revoked");
            } else {
                eprintln!("Error: no active token {id}");
                store.close().await;
                return Ok(crate::EXIT_INVALID);
            }
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}

fn whoami() -> String {
    std::env::var("USER").unwrap_or_else(|_| "cli".into())
}
