//! A whole turn over loopback REST at 1,000 and 10,000 allowed skills (issue 14, "Turn time"):
//! `POST /v1/sessions/{id}/turns` with a 2 KB message, timed at the client from the request to
//! the last byte of the answer, one turn at a time on a keep-alive connection (latency, not
//! throughput), beside the same turns through `Engine::turn` in-process on the same server
//! state (what HTTP, authentication, JSON and the answer's bytes add).
//!
//! The store holds `SKILLBASE_BENCH_N` generated skills (default 10,000; SKILL.md of 2–5 KB);
//! agent `all` allows every one, agent `big` the first 1,000; both have a 4,000-token catalog
//! budget, so every catalog overflows and is ranked. Each agent gets a warm-up of 30 turns
//! (its view is built by the first), then `SAMPLES` timed turns. Printed: p50, p90, p99 and max,
//! and the answer's bytes.
//!
//! `cargo bench -p skillbase-server --bench rest_turn` (about a minute after the build). Not a
//! criterion bench: what matters is the distribution.

use skillbase_format::Bundle;
use skillbase_server::{AppState, ServerOptions, generate_token, hash_token};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, DbUrl, Scope, Store};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator the `skillbase` binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Timed turns per agent and path.
const SAMPLES: usize = 300;
const WARMUP: usize = 30;

/// SplitMix64: deterministic skills and messages.
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

/// Topic words (each skill is about two of them) and filler.
const TOPICS: &[&str] = &[
    "refund",
    "invoice",
    "shipping",
    "deploy",
    "migration",
    "review",
    "backup",
    "alert",
    "billing",
    "onboarding",
    "password",
    "export",
    "import",
    "schema",
    "release",
    "incident",
    "kubernetes",
    "terraform",
    "postgres",
    "kafka",
    "search",
    "cache",
    "payment",
    "audit",
    "report",
    "contract",
    "translation",
    "summary",
    "calendar",
    "ticket",
    "escalation",
    "quota",
];
const FILLER: &[&str] = &[
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
    "verify",
    "result",
    "with",
    "always",
    "what",
    "changed",
    "including",
    "paths",
    "counts",
    "stop",
    "on",
];

fn words(rng: &mut Rng, n: usize, out: &mut String) {
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        let w = if rng.below(5) == 0 {
            TOPICS[rng.below(TOPICS.len())]
        } else {
            FILLER[rng.below(FILLER.len())]
        };
        out.push_str(w);
    }
}

fn bundles(store: &Store, n: usize) -> Vec<(String, Bundle)> {
    let mut rng = Rng(7);
    (0..n)
        .map(|i| {
            let (a, b) = (
                TOPICS[i % TOPICS.len()],
                TOPICS[(i / TOPICS.len()) % TOPICS.len()],
            );
            let name = format!("{a}-{b}-{i:05}");
            let mut description = format!("Handles {a} and {b} requests, ");
            words(&mut rng, 14, &mut description);
            description.push('.');
            let target = 2000 + rng.below(3000);
            let mut body = format!("# {name}\n\n");
            let mut step = 1;
            while body.len() < target {
                let _ = write!(body, "## Step {step}\n\n");
                for k in 1..=4 {
                    let _ = write!(body, "{k}. ");
                    words(&mut rng, 12, &mut body);
                    body.push_str(".\n");
                }
                body.push('\n');
                step += 1;
            }
            let md = format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}");
            let b = Bundle::from_pairs([("SKILL.md", md.into_bytes())], &store.limits)
                .expect("a valid generated skill");
            (name, b)
        })
        .collect()
}

/// 2 KB user messages that mention topics.
fn messages() -> Vec<String> {
    let mut rng = Rng(11);
    (0..16)
        .map(|_| {
            let mut m = String::from("Hello, I need help with this. ");
            while m.len() < 2048 {
                words(&mut rng, 12, &mut m);
                m.push_str(". ");
            }
            m
        })
        .collect()
}

fn percentiles(name: &str, mut xs: Vec<Duration>, bytes: usize) {
    xs.sort();
    let at = |p: f64| xs[((xs.len() as f64 - 1.0) * p).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<32} n={:<4} p50 {:>6.3} ms  p90 {:>6.3} ms  p99 {:>6.3} ms  max {:>6.3} ms  answer {bytes} B",
        xs.len(),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(at(0.99)),
        ms(*xs.last().unwrap())
    );
}

fn main() {
    // `cargo test --benches` runs this binary once with `--bench` absent: keep that short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SKILLBASE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1200 } else { 10_000 });
    let (samples, warmup) = if quick { (5, 2) } else { (SAMPLES, WARMUP) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temp dir");
    rt.block_on(async {
        let store = Arc::new(
            Store::open(&DbUrl::Sqlite(dir.path().join("skillbase.db")))
                .await
                .expect("the store"),
        );
        let (names, all): (Vec<String>, Vec<Bundle>) = bundles(&store, n).into_iter().unzip();
        let big: Vec<String> = names.iter().take(1000).map(|n| format!("\"{n}\"")).collect();
        let config = format!(
            "[agents.all]\nskills = \"all\"\ncatalog_budget = 4000\n\n[agents.big]\nskills = [{}]\ncatalog_budget = 4000\n",
            big.join(", ")
        );
        Config::parse(&config, "bench")
            .expect("the config")
            .apply(&store)
            .await
            .expect("the agents");
        let author = Author::Human("bench".into());
        store
            .import(&Scope::Shared, all, &author, "bench skills", &|_| {})
            .await
            .expect("the import");
        let key = skillbase_runtime::VaultKey::parse(&"ab".repeat(32)).expect("a key");
        let vault = skillbase_runtime::Vault::open(store.clone(), key)
            .await
            .expect("the vault");
        let engine = skillbase_runtime::Engine::builder()
            .store(store.clone())
            .vault(vault)
            .workspace(dir.path().join("workspaces"))
            .build()
            .await
            .expect("the engine");
        let state = AppState::new(&engine, ServerOptions::default()).expect("the state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let base = format!("http://{}", listener.local_addr().expect("the address"));
        let served: Arc<AppState> = state.clone();
        tokio::spawn(async move {
            skillbase_server::serve(served, listener, std::future::pending())
                .await
                .expect("serving");
        });
        let http = reqwest::Client::new();
        let msgs = messages();
        println!("{n} skills in the store; messages of {} bytes", msgs[0].len());
        for (agent, allowed) in [("big", 1000.min(n)), ("all", n)] {
            let name = AgentName::parse(agent).expect("a name");
            let secret = generate_token();
            store
                .token_create(agent, &hash_token(&secret), Some(&name), &author)
                .await
                .expect("a token");
            let session = format!("bench-{agent}");
            let r = http
                .post(format!("{base}/v1/sessions"))
                .bearer_auth(&secret)
                .json(&serde_json::json!({"id": session}))
                .send()
                .await
                .expect("a session");
            assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
            let url = format!("{base}/v1/sessions/{session}/turns");
            let mut times = Vec::with_capacity(samples);
            let mut bytes = 0;
            for k in 0..warmup + samples {
                let body = serde_json::json!({"message": msgs[k % msgs.len()]});
                let t = Instant::now();
                let r = http
                    .post(&url)
                    .bearer_auth(&secret)
                    .json(&body)
                    .send()
                    .await
                    .expect("a turn");
                assert_eq!(r.status(), 200);
                let answer = r.bytes().await.expect("the answer");
                let took = t.elapsed();
                if k == warmup {
                    let v: serde_json::Value = serde_json::from_slice(&answer).expect("JSON");
                    assert_eq!(v["context"]["report"]["catalog"]["ranked"], true, "ranked");
                }
                if k >= warmup {
                    times.push(took);
                    bytes = answer.len();
                }
            }
            percentiles(&format!("REST turn, {allowed} allowed"), times, bytes);
            // The same turns in-process, on the same state (no HTTP, no JSON).
            let mut times = Vec::with_capacity(samples);
            let opts = skillbase_runtime::TurnOptions::default();
            let in_process = format!("bench-{agent}-in-process");
            for k in 0..warmup + samples {
                let t = Instant::now();
                let ctx = state
                    .engine
                    .turn(&name, &in_process, &msgs[k % msgs.len()], &opts)
                    .await
                    .expect("a turn");
                let took = t.elapsed();
                std::hint::black_box(ctx);
                if k >= warmup {
                    times.push(took);
                }
            }
            percentiles(&format!("Engine::turn, {allowed} allowed"), times, 0);
        }
    });
}
