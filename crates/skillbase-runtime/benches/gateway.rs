//! What the tool gateway adds to an upstream `tools/call` (issue 16: "under 200 µs p50 added for
//! a stdio upstream").
//!
//! `@modelcontextprotocol/server-everything` is started twice over stdio in one process: once
//! behind an [`Engine`]'s gateway (`[mcp_servers.everything]`, called as `everything__echo`
//! through the whole pipeline: offered set, schema, gate, bounds, redaction, events written
//! behind to a SQLite store), and once under a plain rmcp client (`().serve(child)`, then
//! `call_tool`). Both run on the same two-worker tokio runtime. After a warm-up, the calls are
//! interleaved one by one (direct then proxied, proxied then direct on the next round, so
//! neither side always goes first) and each is timed alone, for a short message and a 4 KB one.
//! Printed: p50 / p90 / p99 of each side, the difference of the p50s, the median of the paired
//! differences, and whether the first is under the target.
//!
//! Run: `cargo bench -p skillbase-runtime --bench gateway`. The server comes from the folder
//! `SKILLBASE_TEST_UPSTREAMS` names (default `$HOME/.cache/skillbase/upstreams`, filled by
//! `.ci/upstreams`); without it the bench says it skipped and exits 0.
//! `SKILLBASE_BENCH_GATEWAY_N`: timed calls per side and message (default 2,000).
//! `SKILLBASE_BENCH_GATEWAY_ONLY=proxied|direct`: only that side's calls, untimed, then exit
//! (for `perf record` on one side).

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use skillbase_runtime::Engine;
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_runtime::{Vault, VaultKey};
use skillbase_store::{AgentName, Author, DbUrl, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The issue's target for the p50 the gateway adds.
const TARGET_US: f64 = 200.0;
/// Untimed calls per side before measuring.
const WARM_UP: usize = 300;

fn upstreams() -> PathBuf {
    match std::env::var_os("SKILLBASE_TEST_UPSTREAMS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/skillbase/upstreams"),
    }
}

fn everything_js() -> PathBuf {
    upstreams().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

type Direct = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// One call on the plain client; the echoed text.
async fn direct_call(d: &Direct, message: &str) -> String {
    let mut args = serde_json::Map::new();
    args.insert("message".into(), Value::String(message.to_owned()));
    let r = d
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
        .await
        .expect("direct call");
    r.content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// One call through the engine; the echoed text.
async fn proxied_call(e: &Engine, agent: &AgentName, message: &str) -> String {
    let o = e
        .call(
            agent,
            "bench",
            "everything__echo",
            json!({ "message": message }),
            CallMode::Wait,
        )
        .await
        .expect("proxied call");
    match o {
        CallOutcome::Done {
            result: Value::String(s),
            ..
        } => s,
        other => panic!("expected a text result, got {other:?}"),
    }
}

fn pct(sorted: &[u64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)] as f64 / 1000.0
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    let js = everything_js();
    if !js.is_file() {
        println!(
            "gateway bench skipped: {} is missing (run .ci/upstreams, or set SKILLBASE_TEST_UPSTREAMS)",
            js.display()
        );
        return;
    }
    let n: usize = std::env::var("SKILLBASE_BENCH_GATEWAY_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
        .max(1);
    let only = std::env::var("SKILLBASE_BENCH_GATEWAY_ONLY").ok();
    // The tokenizer loads once per process; not part of a call.
    skillbase_runtime::tokens::warm_up();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let store = Arc::new(
            Store::open(&DbUrl::Sqlite(dir.path().join("skillbase.db")))
                .await
                .unwrap(),
        );
        let vault = Vault::open(store.clone(), VaultKey::parse(&"22".repeat(32)).unwrap())
            .await
            .unwrap();
        // One entry, so results are scrubbed against a real pattern set.
        vault
            .set(
                "UPSTREAM_SECRET",
                "the upstream's key",
                b"upstream-secret-4be1c9d07a",
                &Author::Human("bench".into()),
            )
            .await
            .unwrap();
        let config = format!(
            r#"
[agents.ops]
[agents.ops.grants]
tools = ["everything"]

[mcp_servers.everything]
command = "node"
args = [{js:?}, "stdio"]
"#,
            js = js.display().to_string()
        );
        let engine = Engine::builder()
            .store(store)
            .vault(vault)
            .config_toml(config)
            .build()
            .await
            .unwrap();
        let g = engine.gateway();
        assert!(
            g.connected("everything", 1, Duration::from_secs(60)).await,
            "the gateway did not connect: {:?}",
            g.status()
        );
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(&js).arg("stdio").kill_on_drop(true);
        let (child, _) = rmcp::transport::TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start node");
        let direct: Direct = ().serve(child).await.expect("direct handshake");
        let agent = AgentName::parse("ops").unwrap();

        let small = "hello upstream".to_owned();
        let big: String = "0123456789abcdef ".repeat(241)[..4096].to_owned();
        for m in [&small, &big] {
            assert!(direct_call(&direct, m).await.contains(m.as_str()));
            assert!(proxied_call(&engine, &agent, m).await.contains(m.as_str()));
        }
        for i in 0..WARM_UP {
            let m = if i % 2 == 0 { &small } else { &big };
            std::hint::black_box(direct_call(&direct, m).await);
            std::hint::black_box(proxied_call(&engine, &agent, m).await);
        }
        engine.flush().await;

        if let Some(side) = only.as_deref() {
            let t = Instant::now();
            for i in 0..n {
                let m = if i % 2 == 0 { &small } else { &big };
                match side {
                    "direct" => std::hint::black_box(direct_call(&direct, m).await),
                    _ => std::hint::black_box(proxied_call(&engine, &agent, m).await),
                };
            }
            eprintln!("{side} only: {n} calls in {:.1?}", t.elapsed());
        } else {
            println!(
                "gateway overhead, stdio upstream (server-everything `echo`), {n} interleaved calls per side; load {}, {} cores",
                load(),
                std::thread::available_parallelism().map_or(0, |p| p.get())
            );
            for (label, m) in [("14 B message", &small), ("4 KB message", &big)] {
                let mut direct_ns = Vec::with_capacity(n);
                let mut proxied_ns = Vec::with_capacity(n);
                let mut paired = Vec::with_capacity(n);
                for i in 0..n {
                    let (d, p) = if i % 2 == 0 {
                        let t = Instant::now();
                        std::hint::black_box(direct_call(&direct, m).await);
                        let d = t.elapsed().as_nanos() as u64;
                        let t = Instant::now();
                        std::hint::black_box(proxied_call(&engine, &agent, m).await);
                        (d, t.elapsed().as_nanos() as u64)
                    } else {
                        let t = Instant::now();
                        std::hint::black_box(proxied_call(&engine, &agent, m).await);
                        let p = t.elapsed().as_nanos() as u64;
                        let t = Instant::now();
                        std::hint::black_box(direct_call(&direct, m).await);
                        (t.elapsed().as_nanos() as u64, p)
                    };
                    direct_ns.push(d);
                    proxied_ns.push(p);
                    paired.push(p as i64 - d as i64);
                }
                direct_ns.sort_unstable();
                proxied_ns.sort_unstable();
                paired.sort_unstable();
                let added = pct(&proxied_ns, 50) - pct(&direct_ns, 50);
                let paired_p50 = paired[paired.len() / 2] as f64 / 1000.0;
                println!("{label}:");
                println!(
                    "  direct   p50 {:8.1} µs  p90 {:8.1} µs  p99 {:8.1} µs",
                    pct(&direct_ns, 50),
                    pct(&direct_ns, 90),
                    pct(&direct_ns, 99)
                );
                println!(
                    "  proxied  p50 {:8.1} µs  p90 {:8.1} µs  p99 {:8.1} µs",
                    pct(&proxied_ns, 50),
                    pct(&proxied_ns, 90),
                    pct(&proxied_ns, 99)
                );
                println!(
                    "  added    p50 {added:8.1} µs (median of paired differences {paired_p50:.1} µs): {} the {TARGET_US} µs target",
                    if added < TARGET_US { "under" } else { "OVER" }
                );
                // Between the two messages, store the events so far (untimed).
                engine.flush().await;
            }
            println!("load at the end {}", load());
        }
        let _ = direct.cancel().await;
        engine.close().await;
    });
}
