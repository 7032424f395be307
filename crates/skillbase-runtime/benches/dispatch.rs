//! Dispatch overhead and redaction throughput.
//!
//! - `dispatch/noop_with_schema`: one call of a no-op tool with a parameter schema through the
//!   whole pipeline (offered set, schema, gate, handler, cap, redaction, event queued), while the
//!   event writer keeps up: calls are timed in runs of 1,000 (well under the writer's queue of
//!   8,192), and the queue is flushed between runs, untimed. The writer still runs during the
//!   timed calls (it wakes 5 ms after the first event of a burst).
//! - `dispatch/noop_with_schema_sustained`: the same call back to back without pause (the older
//!   measurement). Once the queue is full a call waits for the writer, so this measures how
//!   fast the store takes events, not the pipeline.
//!
//! Printed before measuring: allocations per call, and the p50/p90/p99 of single calls timed
//! one by one in the first regime.
//! - `redact/1000_entries`: scrubbing 1 MiB of text against 1,000 vault values (each with its
//!   encoded forms); throughput in bytes per second.
//!
//! Run: `cargo bench -p skillbase-runtime --bench dispatch`.
//!
//! `SKILLBASE_BENCH_PROFILE=N`: instead of measuring, make N calls through `profile_call` (never
//! inlined) and exit; for counting instructions on a noisy machine:
//! `SKILLBASE_BENCH_PROFILE=2000 valgrind --tool=callgrind --toggle-collect='*profile_call*'
//! target/release/deps/dispatch-* --bench`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use skillbase_runtime::Redactor;
use skillbase_runtime::{CallMode, Engine};
use skillbase_runtime::{Permission, ToolDecl, ToolFuture};
use skillbase_store::{AgentConfig, AgentName, DbUrl, Grants, NameSet, Store};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Counts allocations (one relaxed add per call), for the allocations-per-call figure.
struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn redaction(c: &mut Criterion) {
    let secrets: Vec<(String, Vec<u8>)> = (0..1000)
        .map(|i| {
            (
                format!("KEY_{i}"),
                format!(
                    "sk_live_{i:06}_{:016x}",
                    (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                )
                .into_bytes(),
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
    // The tokenizer loads once per process (a few hundred milliseconds); not part of a call.
    skillbase_runtime::tokens::warm_up();
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
        let handler: Arc<dyn skillbase_runtime::ToolHandler> =
            Arc::new(|_ctx, args: serde_json::Value| -> ToolFuture { Box::pin(async move { Ok(args) }) });
        let decl = ToolDecl {
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
                ..ToolDecl::default()
            };
        let d = Engine::builder().store(store).tool(decl, handler).build().await.unwrap();
        // Warm the session and caches.
        d.call(&agent, "s1", "noop", serde_json::json!({"text": "hi"}), CallMode::Wait).await.unwrap();
        (d, agent)
    });
    let args = serde_json::json!({"text": "hello", "n": 3});
    // Allocations per call (whole process, so the event writer's share of the batches written
    // meanwhile is in it too; deterministic enough to compare builds).
    let calls = 1000;
    let allocs = rt.block_on(async {
        d.flush().await;
        let a0 = ALLOCS.load(Relaxed);
        for _ in 0..calls {
            std::hint::black_box(profile_call(&d, &agent, &args).await);
        }
        let a1 = ALLOCS.load(Relaxed);
        d.flush().await;
        a1 - a0
    });
    eprintln!(
        "allocations per call: {:.1} (counted over {calls} calls)",
        allocs as f64 / calls as f64
    );
    if let Some(n) = std::env::var("SKILLBASE_BENCH_PROFILE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let t = std::time::Instant::now();
        rt.block_on(async {
            for _ in 0..n {
                std::hint::black_box(profile_call(&d, &agent, &args).await);
            }
        });
        eprintln!("profile: {n} calls in {:.1?}", t.elapsed());
        rt.block_on(d.flush());
        std::process::exit(0);
    }
    // Single calls timed one by one (the clock costs ~20 ns a read), 20 runs of 1,000.
    let mut times: Vec<u64> = rt.block_on(async {
        let mut t = Vec::with_capacity(20 * RUN as usize);
        for _ in 0..20 {
            for _ in 0..RUN {
                let start = std::time::Instant::now();
                std::hint::black_box(profile_call(&d, &agent, &args).await);
                t.push(start.elapsed().as_nanos() as u64);
            }
            d.flush().await;
        }
        t
    });
    times.sort_unstable();
    let pct = |p: usize| times[(times.len() * p / 100).min(times.len() - 1)] as f64 / 1000.0;
    eprintln!(
        "single calls, writer keeping up: p50 {:.2} µs, p90 {:.2} µs, p99 {:.2} µs ({} calls)",
        pct(50),
        pct(90),
        pct(99),
        times.len()
    );

    let mut g = c.benchmark_group("dispatch");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(5));
    // The calls run inside the runtime, as a server's request handlers do: one `block_on` per
    // batch of iterations, so the figure is the pipeline, not the harness entering the runtime.
    g.bench_function("noop_with_schema", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut timed = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let k = left.min(RUN);
                    let start = std::time::Instant::now();
                    for _ in 0..k {
                        let o = d
                            .call(&agent, "s1", "noop", args.clone(), CallMode::Wait)
                            .await
                            .unwrap();
                        std::hint::black_box(o);
                    }
                    timed += start.elapsed();
                    d.flush().await;
                    left -= k;
                }
                timed
            })
        })
    });
    g.bench_function("noop_with_schema_sustained", |b| {
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

/// Calls timed in a row before the event queue is flushed (untimed).
const RUN: u64 = 1000;

/// One call, outcome dropped: the unit `SKILLBASE_BENCH_PROFILE` counts.
#[inline(never)]
async fn profile_call(d: &Engine, agent: &AgentName, args: &serde_json::Value) -> bool {
    let o = d
        .call(agent, "s1", "noop", args.clone(), CallMode::Wait)
        .await
        .unwrap();
    matches!(o, skillbase_runtime::CallOutcome::Done { .. })
}

criterion_group!(benches, redaction, dispatch);
criterion_main!(benches);
