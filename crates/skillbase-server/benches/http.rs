//! `tools/call` of `load_skill` over loopback HTTP: requests per second against the real MCP
//! endpoint (`skillbase_server::router`, streamable HTTP at `/mcp`, agent token), and against a
//! minimal axum handler that returns the same response bytes (the floor).
//!
//! Both servers run in this process on 127.0.0.1 and are driven by the same client: one reqwest
//! client with keep-alive, `CONCURRENCY` requests in flight. Criterion's throughput is one
//! element per request, so it prints requests per second.
//!
//! What is measured (issue 6, "Speed"):
//!
//! - `skillbase/already_active`: the 2026-07-28 (stateless) wire, every request the same
//!   `load_skill` call in the token's default Skillbase session. After the first call the skill is
//!   active there, so the runtime answers "already active": the steady path of a host that calls
//!   again (authentication, the direct path for stateless `tools/call` in `mcp::direct`, the
//!   dispatch pipeline, the `tool_called` event queued).
//! - `skillbase/fresh_session`: the same call with a new `Skillbase-Session` header on every
//!   request: a first activation each time (session row, activation, events, run, the skill's
//!   files written to the session workspace): the full cost of loading a skill.
//! - `skillbase/discover`: `server/discover` on the same endpoint: authentication and rmcp
//!   without the dispatch pipeline (where the time goes, no target).
//! - `in_process/already_active`: the same call through `Engine::call` with no HTTP (what
//!   the server adds on top is HTTP, authentication and MCP framing).
//! - `floor/*`: a one-route axum server answering each of the above with the bytes Skillbase
//!   returned for it (captured before timing), same status and content type.
//!
//! The store holds 1,000 generated skills (SKILL.md of 2–5 KB, a reference file in every third);
//! the agent `bench` may see all of them.
//!
//! `cargo bench -p skillbase-server --bench http` (a few minutes). `cargo test -p
//! skillbase-server --bench http` runs each request kind once.

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use skillbase_format::Bundle;
use skillbase_runtime::{Vault, VaultKey};
use skillbase_server::{AppState, ServerOptions, generate_token, hash_token};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, DbUrl, Scope, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The allocator the `skillbase` binary uses (both servers and the client run on it).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Requests in flight at once, for every target.
const CONCURRENCY: usize = 8;
/// Skills in the store.
const SKILLS: usize = 1000;
/// The skill every call loads.
const LOADED: &str = "bench-skill-0500";
const STATELESS: &str = "2026-07-28";

const CONFIG: &str = r#"
[agents.bench]
skills = "all"
"#;

/// A small deterministic generator (SplitMix64): skill bodies of 2–5 KB of plausible text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "should",
    "check",
    "inputs",
    "before",
    "running",
    "any",
    "command",
    "and",
    "prefer",
    "idempotent",
    "operations",
    "when",
    "editing",
    "files",
    "keep",
    "a",
    "backup",
    "verify",
    "result",
    "with",
    "bundled",
    "validator",
    "script",
    "always",
    "report",
    "what",
    "changed",
    "including",
    "paths",
    "counts",
    "stop",
    "on",
    "first",
    "hard",
    "error",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len())]);
    }
    s.push('.');
    s
}

fn bundles(store: &Store) -> Vec<Bundle> {
    let mut rng = Rng(42);
    (0..SKILLS)
        .map(|i| {
            let name = format!("bench-skill-{i:04}");
            let description = format!(
                "{} Use when the user asks about {name}.",
                sentence(&mut rng, 12)
            );
            let target = 2000 + rng.below(3000);
            let mut body = format!("# {name}\n\n");
            let mut step = 1;
            while body.len() < target {
                body.push_str(&format!("## Step {step}\n\n"));
                for n in 1..=4 {
                    let words = 10 + rng.below(8);
                    body.push_str(&format!("{n}. {}\n", sentence(&mut rng, words)));
                }
                body.push('\n');
                step += 1;
            }
            let md = format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}");
            let mut files = vec![("SKILL.md".to_owned(), md.into_bytes())];
            if i % 3 == 0 {
                files.push((
                    "references/REFERENCE.md".to_owned(),
                    format!("# Reference\n\n{}\n", sentence(&mut rng, 40)).into_bytes(),
                ));
            }
            Bundle::from_pairs(files, &store.limits).expect("a valid generated skill")
        })
        .collect()
}

/// One kind of request: where it goes and what it carries.
#[derive(Clone)]
struct Target {
    url: String,
    token: String,
    method: &'static str,
    body: Bytes,
    /// A new `Skillbase-Session` on every request.
    fresh_session: bool,
}

fn message(method: &str, params: serde_json::Value) -> Bytes {
    let mut params = params;
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": {"name": "skillbase-bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    Bytes::from(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            .to_string(),
    )
}

/// Unique session names across every request of the run.
static SESSION: AtomicU64 = AtomicU64::new(0);

async fn send(http: &reqwest::Client, t: &Target) -> reqwest::Response {
    let mut r = http
        .post(&t.url)
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", STATELESS)
        .header("mcp-method", t.method)
        .bearer_auth(&t.token);
    if t.method == "tools/call" {
        r = r.header("mcp-name", "load_skill");
    }
    if t.fresh_session {
        let n = SESSION.fetch_add(1, Ordering::Relaxed);
        r = r.header("skillbase-session", format!("bench-{n}"));
    }
    r.body(t.body.clone()).send().await.expect("the request")
}

/// One request, its body read to the end; panics on anything but 200.
async fn once(http: &reqwest::Client, t: &Target) {
    let r = send(http, t).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", t.url);
    r.bytes().await.expect("the body");
}

/// `iters` requests, `CONCURRENCY` at a time; the time they took.
async fn drive(http: &reqwest::Client, t: &Target, iters: u64) -> Duration {
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY as u64)
        .map(|k| {
            let n = iters / CONCURRENCY as u64 + u64::from(k < iters % CONCURRENCY as u64);
            let (http, t) = (http.clone(), t.clone());
            tokio::spawn(async move {
                for _ in 0..n {
                    once(&http, &t).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client task");
    }
    started.elapsed()
}

struct Setup {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    /// (name, Skillbase target, floor target)
    pairs: Vec<(&'static str, Target, Target)>,
    state: Arc<AppState>,
    _dir: tempfile::TempDir,
}

/// The response Skillbase gives to `t` (status 200, JSON): its content type and bytes.
async fn capture(http: &reqwest::Client, t: &Target) -> (HeaderValue, Bytes) {
    let r = send(http, t).await;
    assert_eq!(r.status(), StatusCode::OK);
    let ct = r.headers()[header::CONTENT_TYPE].clone();
    let body = r.bytes().await.expect("the body");
    let v: serde_json::Value = serde_json::from_slice(&body).expect("one JSON-RPC response");
    assert!(v.get("error").is_none(), "{v}");
    if t.method == "tools/call" {
        assert_ne!(v["result"]["isError"], true, "{v}");
    }
    (ct, body)
}

fn setup() -> Setup {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temp dir");
    let (pairs, http, state) = rt.block_on(async {
        let store = Arc::new(
            Store::open(&DbUrl::Sqlite(dir.path().join("skillbase.db")))
                .await
                .expect("the store"),
        );
        Config::parse(CONFIG, "bench")
            .expect("the config")
            .apply(&store)
            .await
            .expect("the agent");
        let author = Author::Human("bench".into());
        store
            .import(
                &Scope::Shared,
                bundles(&store),
                &author,
                "bench skills",
                &|_| {},
            )
            .await
            .expect("the import");
        let agent = AgentName::parse("bench").expect("a name");
        let secret = generate_token();
        store
            .token_create("bench", &hash_token(&secret), Some(&agent), &author)
            .await
            .expect("a token");
        let key = VaultKey::parse(&"ab".repeat(32)).expect("a key");
        let vault = Vault::open(store.clone(), key).await.expect("the vault");
        let engine = skillbase_runtime::Engine::builder()
            .store(store.clone())
            .vault(vault)
            .workspace(dir.path().join("workspaces"))
            .web_fetch()
            .build()
            .await
            .expect("the state");
        let state = AppState::new(&engine, ServerOptions::default()).expect("the state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("the address");
        let served = state.clone();
        tokio::spawn(async move {
            skillbase_server::serve(served, listener, std::future::pending())
                .await
                .expect("serving");
        });
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(CONCURRENCY * 2)
            .build()
            .expect("a client");
        let load = message(
            "tools/call",
            serde_json::json!({"name": "load_skill", "arguments": {"name": LOADED}}),
        );
        let sb = |method, body: &Bytes, fresh_session| Target {
            url: format!("http://{addr}/mcp"),
            token: secret.clone(),
            method,
            body: body.clone(),
            fresh_session,
        };
        let kinds = [
            ("already_active", sb("tools/call", &load, false)),
            ("fresh_session", sb("tools/call", &load, true)),
            (
                "discover",
                sb(
                    "server/discover",
                    &message("server/discover", serde_json::json!({})),
                    false,
                ),
            ),
        ];
        // The first call activates the skill in the default session; from then on that
        // session answers "already active".
        let (_, first) = capture(&http, &kinds[0].1).await;
        let mut router = axum::Router::new();
        let mut pairs = Vec::new();
        for (name, t) in kinds {
            let (ct, body) = capture(&http, &t).await;
            if name == "already_active" {
                assert_ne!(
                    body, first,
                    "the second call should answer 'already active'"
                );
                assert!(
                    String::from_utf8_lossy(&body).contains("already active"),
                    "{}",
                    String::from_utf8_lossy(&body)
                );
            }
            eprintln!("{name}: {} response bytes", body.len());
            let route = format!("/{name}");
            router = router.route(
                &route,
                axum::routing::post(move |_body: Bytes| {
                    let (ct, body) = (ct.clone(), body.clone());
                    async move { ([(header::CONTENT_TYPE, ct)], body) }
                }),
            );
            let floor = Target {
                url: String::new(),
                ..t.clone()
            };
            pairs.push((name, t, floor, route));
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let floor_addr = listener.local_addr().expect("the address");
        tokio::spawn(async move {
            axum::serve(listener, router).await.expect("serving");
        });
        let pairs = pairs
            .into_iter()
            .map(|(name, t, mut floor, route)| {
                floor.url = format!("http://{floor_addr}{route}");
                (name, t, floor)
            })
            .collect::<Vec<_>>();
        (pairs, http, state)
    });
    Setup {
        rt,
        http,
        pairs,
        state,
        _dir: dir,
    }
}

/// The already-active call without HTTP: `Engine::call` as the MCP handler makes it, in the
/// session the HTTP requests use, `CONCURRENCY` tasks at a time (what the server adds on top of
/// this is HTTP, authentication and MCP framing).
async fn drive_dispatch(state: &Arc<AppState>, iters: u64) -> Duration {
    let agent = AgentName::parse("bench").expect("a name");
    let session = "mcp-token-1-bench".to_owned();
    // The first load in the session activates the skill; the measured calls are the repeats.
    state
        .engine
        .call(
            &agent,
            &session,
            "load_skill",
            serde_json::json!({ "name": LOADED }),
            skillbase_runtime::CallMode::Wait,
        )
        .await
        .expect("the first call");
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY as u64)
        .map(|k| {
            let n = iters / CONCURRENCY as u64 + u64::from(k < iters % CONCURRENCY as u64);
            let (state, agent, session) = (state.clone(), agent.clone(), session.clone());
            tokio::spawn(async move {
                for _ in 0..n {
                    let o = state
                        .engine
                        .call(
                            &agent,
                            &session,
                            "load_skill",
                            serde_json::json!({ "name": LOADED }),
                            skillbase_runtime::CallMode::Wait,
                        )
                        .await
                        .expect("the call");
                    assert!(
                        o.for_model().contains("already active"),
                        "{}",
                        o.for_model()
                    );
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a dispatch task");
    }
    started.elapsed()
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let mut g = c.benchmark_group("load_skill_http");
    g.throughput(Throughput::Elements(1))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    for (name, sb, floor) in &s.pairs {
        for (side, t) in [("skillbase", sb), ("floor", floor)] {
            g.bench_function(BenchmarkId::new(side, name), |b| {
                b.iter_custom(|iters| s.rt.block_on(drive(&s.http, t, iters)))
            });
        }
    }
    g.bench_function("in_process/already_active", |b| {
        b.iter_custom(|iters| s.rt.block_on(drive_dispatch(&s.state, iters)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
