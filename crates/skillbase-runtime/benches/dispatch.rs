//! Dispatch overhead and redaction throughput.
//!
//! - `dispatch/noop_with_schema`: one call of a no-op tool with a parameter schema through the
//!   whole pipeline (offered set, schema, gate, handler, cap, redaction, event queued).
//! - `redact/1000_entries`: scrubbing 1 MiB of text against 1,000 vault values (each with its
//!   encoded forms); throughput in bytes per second.
//!
//! Run: `cargo bench -p skillbase-runtime --bench dispatch`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use skillbase_runtime::Runtime;
use skillbase_runtime::dispatch::{CallMode, Dispatcher};
use skillbase_runtime::redact::Redactor;
use skillbase_runtime::tool::{Permission, Registry, ToolDecl, ToolFuture};
use skillbase_store::{AgentConfig, AgentName, DbUrl, Grants, NameSet, Store};
use std::sync::Arc;
use std::time::Duration;

fn redaction(c: &mut Criterion) {
    let secrets: Vec<(String, Vec<u8>)> = (0..1000)
        .map(|i| {
            (
                format!("KEY_{i}"),
                format!("sk_live_{i:06}_{:016x}", i as u64 * 0x9e37_79b9_7f4a_7c15).into_bytes(),
            )
        })
        .collect();
    let r = Redactor::new(secrets.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
    let words = "the quick brown fox jumps over the lazy dog while the agent reads a page about refunds and invoices ";
    let mut text = String::with_capacity(1 << 20);
    let mut i = 0;
    while text.len() < (1 << 20) {
        text.push_str(words);
        i += 1;
        if i % 500 == 0 {
            // A few real secrets to scrub.
            text.push_str(std::str::from_utf8(&secrets[i % 1000].1).unwrap());
            text.push(' ');
        }
    }
    let mut g = c.benchmark_group("redact");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("1000_entries_1MiB", |b| {
        b.iter(|| r.redact(std::hint::black_box(&text)).len())
    });
    g.finish();
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (d, agent) = rt.block_on(async {
        let store = Arc::new(Store::open(&DbUrl::Sqlite(dir.path().join("b.db"))).await.unwrap());
        let agent = AgentName::parse("bench").unwrap();
        store
            .create_agent(
                &agent,
                &AgentConfig {
                    skills: NameSet::All,
                    grants: Grants { tools: vec!["noop".into()], ..Grants::default() },
                    ..AgentConfig::default()
                },
            )
            .await
            .unwrap();
        let mut reg = Registry::new();
        let handler: Arc<dyn skillbase_runtime::tool::ToolHandler> =
            Arc::new(|_ctx, args: serde_json::Value| -> ToolFuture { Box::pin(async move { Ok(args) }) });
        reg.register(
            ToolDecl {
                name: "noop".into(),
                description: "Returns its arguments.".into(),
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "maxLength": 100}, "n": {"type": "integer", "minimum": 0}},
                    "required": ["text"],
                    "additionalProperties": false
                }),
                returns: None,
                class: "noop".into(),
                permissions: vec![Permission::None],
                cost: skillbase_format::Cost::Immediate,
            },
            Some(handler),
        )
        .unwrap();
        let d = Dispatcher::new(Arc::new(Runtime::new(store, None)), reg, None);
        // Warm the session and caches.
        d.call(&agent, "s1", "noop", serde_json::json!({"text": "hi"}), CallMode::Wait).await.unwrap();
        (d, agent)
    });
    let args = serde_json::json!({"text": "hello", "n": 3});
    let mut g = c.benchmark_group("dispatch");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(5));
    // The calls run inside the runtime, as a server's request handlers do: one `block_on` per
    // batch of iterations, so the figure is the pipeline, not the harness entering the runtime.
    g.bench_function("noop_with_schema", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    let o = d
                        .call(&agent, "s1", "noop", args.clone(), CallMode::Wait)
                        .await
                        .unwrap();
                    std::hint::black_box(o);
                }
                start.elapsed()
            })
        })
    });
    g.finish();
    rt.block_on(d.flush());
}

criterion_group!(benches, redaction, dispatch);
criterion_main!(benches);
