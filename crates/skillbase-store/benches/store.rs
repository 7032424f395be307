//! Benchmarks of the store over many generated skills (issue "store: speed and memory").
//!
//! Run with `cargo bench -p skillbase-store --bench store` (about 2-4 minutes on 2 cores). What
//! criterion does not measure directly is timed by loops in `main` and printed as a table with
//! the targets:
//!
//! | figure                                           | target  |
//! |--------------------------------------------------|---------|
//! | import of N skills from a folder into SQLite     | < 3 s   |
//! | cold start: `Store::open` on that db, index ready| < 0.3 s |
//! | one revision write, p50, SQLite                  | < 2 ms  |
//! | one revision write, p50, PostgreSQL              | < 5 ms  |
//! | index lookup by name (`get` / `resolve`)         | < 1 µs  |
//! | index memory for N skills                        | < 150 MB|
//!
//! Environment:
//! - `SKILLBASE_BENCH_N`: how many skills (default 10,000; 200 under `cargo test --benches`).
//! - `SKILLBASE_TEST_POSTGRES_URL`: also measure PostgreSQL (a fresh schema, dropped after).
//! - `SKILLBASE_BENCH_WRITES`: revision writes timed per backend (default 300).
//! - `SKILLBASE_BENCH_GEN_DIR=DIR`: only generate the skills into DIR and exit
//!   (`tools/bench/store.sh` uses it to time the release binary on the same skills).
//! - `SKILLBASE_BENCH_IMPORT=DIR SKILLBASE_BENCH_DB=FILE`: only import DIR into FILE and exit;
//!   `SKILLBASE_BENCH_OPEN_DB=FILE`: only open FILE and print memory figures (for profiling).
//!
//! Memory is measured two ways, in a fresh process: live heap bytes through a counting global
//! allocator (exact for Rust allocations; SQLite's own cache is outside it), and the growth of the
//! process's anonymous resident memory (`RssAnon`, /proc/self/status; SQLite's memory-mapped
//! database pages are page cache and not counted).

use criterion::{BenchmarkId, Criterion};
use skillbase_format::Bundle;
use skillbase_store::pack::{self, PackLimits};
use skillbase_store::{AgentName, Author, DbUrl, PutRequest, Scope, Store};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Live heap accounting.

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Anonymous resident memory in bytes (`RssAnon` in /proc/self/status): the process's own
/// memory, without the file pages SQLite maps (those are page cache, shared and reclaimable).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .unwrap_or(0)
        * 1024
}

fn mb(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

// ---------------------------------------------------------------------------------------------
// Generated skills: SKILL.md of 2-5 KB, a reference file, and a script in half of them.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "refund",
    "order",
    "customer",
    "payment",
    "invoice",
    "ticket",
    "deploy",
    "release",
    "schema",
    "migration",
    "incident",
    "review",
    "policy",
    "amount",
    "currency",
    "approval",
    "escalate",
    "check",
    "verify",
    "record",
    "report",
    "summary",
    "limit",
    "window",
    "account",
    "request",
    "status",
    "error",
    "retry",
    "timeout",
    "queue",
    "owner",
    "team",
    "lead",
    "finance",
    "audit",
];

fn sentence(r: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[r.below(WORDS.len() as u64) as usize]);
    }
    s.push('.');
    s
}

fn skill_name(i: usize) -> String {
    format!("bench-skill-{i:05}")
}

/// Write skill `i` under `root`.
fn write_skill(root: &Path, r: &mut Rng, i: usize) -> std::io::Result<()> {
    let name = skill_name(i);
    let dir = root.join(&name);
    std::fs::create_dir_all(dir.join("references"))?;
    let target = 2048 + r.below(3072) as usize;
    let mut md = format!(
        "---\nname: {name}\ndescription: Handles {} for case {i}. Use when asked to {}\nmetadata:\n  version: \"1.{}\"\n---\n\n# Skill {i}\n\n",
        WORDS[i % WORDS.len()],
        sentence(r, 10),
        i % 7
    );
    let mut step = 1;
    while md.len() < target {
        md.push_str(&format!("{step}. {}\n", sentence(r, 12)));
        if step % 6 == 0 {
            md.push_str(&format!("\n## Part {}\n\n", step / 6));
        }
        step += 1;
    }
    std::fs::write(dir.join("SKILL.md"), md)?;
    let refs = 400 + r.below(1200) as usize;
    let mut text = String::from("# Reference\n\n");
    while text.len() < refs {
        text.push_str(&sentence(r, 14));
        text.push('\n');
    }
    std::fs::write(dir.join("references/REFERENCE.md"), text)?;
    if r.below(2) == 0 {
        std::fs::create_dir_all(dir.join("scripts"))?;
        let script = dir.join("scripts/run.py");
        std::fs::write(&script, format!("print('skill {i}')\n"))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

fn generate(root: &Path, n: usize) -> std::io::Result<()> {
    let mut r = Rng(42);
    for i in 0..n {
        write_skill(root, &mut r, i)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Timed loops.

fn human() -> Author {
    Author::Human("bench".into())
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn pct(v: &[Duration], p: f64) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[((s.len() as f64 - 1.0) * p).round() as usize]
}

struct Figures {
    rows: Vec<(String, String, String, Option<bool>)>,
}

impl Figures {
    fn add(&mut self, what: &str, value: String, target: &str, pass: Option<bool>) {
        eprintln!("  {what}: {value}");
        self.rows
            .push((what.to_owned(), value, target.to_owned(), pass));
    }

    fn print(&self) {
        println!();
        println!("| figure | measured | target | result |");
        println!("|---|---|---|---|");
        for (what, value, target, pass) in &self.rows {
            let res = match pass {
                Some(true) => "pass",
                Some(false) => "**MISS**",
                None => "",
            };
            println!("| {what} | {value} | {target} | {res} |");
        }
        println!();
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// Read the folder and import it in one transaction, as `skillbase import` does.
async fn import_folder(store: &Store, root: &Path) -> (Duration, Duration, usize) {
    let t = Instant::now();
    let bundles = pack::read_source(root, &PackLimits::default()).expect("read the skills");
    let read = t.elapsed();
    let n = bundles.len();
    // The import validates each bundle again (its API takes any bundles): timed apart here.
    let t = Instant::now();
    for b in &bundles {
        Store::check_bundle(b).expect("valid");
    }
    eprintln!(
        "    (of which Store::check_bundle of every bundle: {:.2?})",
        t.elapsed()
    );
    let t = Instant::now();
    let rep = store
        .import(
            &Scope::Shared,
            bundles,
            &Author::Import(root.display().to_string()),
            "bench import",
            &|_| {},
        )
        .await
        .expect("import");
    assert_eq!(
        rep.created.len() + rep.changed.len() + rep.unchanged.len(),
        n
    );
    (read, t.elapsed(), n)
}

/// Time `count` revision writes to different skills (each a real change); returns latencies.
async fn time_writes(store: &Store, n: usize, count: usize, tag: &str) -> Vec<Duration> {
    let mut lat = Vec::with_capacity(count);
    for k in 0..count {
        let name = skill_name((k * 7919) % n);
        let bundle = Bundle::single(format!(
            "---\nname: {name}\ndescription: Handles an edited case. Use when asked about edit {k}.\n---\n\n# Edited {tag} {k}\n\nStep one. Step two.\n"
        ))
        .unwrap();
        let req = PutRequest {
            scope: Scope::Shared,
            bundle,
            author: human(),
            message: format!("edit {k}"),
            expect_rev: None,
            signature: None,
        };
        let t = Instant::now();
        let o = store.put(req).await.expect("put");
        lat.push(t.elapsed());
        assert!(o.rev >= 2);
    }
    lat
}

/// Open the store at `db` in this (fresh) process and print what it costs in memory: the index's
/// live heap, the open store's heap, the peak while loading, and the RSS growth with the store
/// open and with only the index kept.
fn memory_probe(db: &Path) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Start the runtime's threads before the baseline.
    rt.block_on(async { tokio::task::yield_now().await });
    let (live0, rss0) = (live(), rss());
    PEAK.store(live0, Ordering::Relaxed);
    let (index, live_open, rss_open) = rt.block_on(async {
        let store = Store::open(&DbUrl::Sqlite(db.to_path_buf())).await.unwrap();
        let (l, r) = (live(), rss());
        let index = store.index();
        store.close().await;
        drop(store);
        (index, l, r)
    });
    let peak = PEAK.load(Ordering::Relaxed);
    let index_heap = live().saturating_sub(live0);
    let rss_index = rss().saturating_sub(rss0);
    assert!(!index.is_empty());
    println!(
        "index_heap={index_heap} open_heap={} peak={} rss_open={} rss_index={rss_index}",
        live_open.saturating_sub(live0),
        peak.saturating_sub(live0),
        rss_open.saturating_sub(rss0),
    );
    drop(index);
}

fn main() {
    let test_mode = std::env::args().any(|a| a == "--test");
    let n: usize = std::env::var("SKILLBASE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if test_mode { 200 } else { 10_000 });
    if let Some(dir) = std::env::var_os("SKILLBASE_BENCH_GEN_DIR") {
        generate(Path::new(&dir), n).expect("generate skills");
        return;
    }
    if let Some(db) = std::env::var_os("SKILLBASE_BENCH_OPEN_DB") {
        memory_probe(Path::new(&db));
        return;
    }
    if let (Some(src), Some(db)) = (
        std::env::var_os("SKILLBASE_BENCH_IMPORT"),
        std::env::var_os("SKILLBASE_BENCH_DB"),
    ) {
        // Only import SRC into the SQLite file DB (for profiling and tools/bench/store.sh).
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (read, tx, got) = rt.block_on(async {
            let store = Store::open(&DbUrl::Sqlite(db.into())).await.unwrap();
            let r = import_folder(&store, Path::new(&src)).await;
            store.close().await;
            r
        });
        println!("imported {got} skills: read+validate {read:.2?}, transaction+index {tx:.2?}");
        return;
    }
    let writes: usize = std::env::var("SKILLBASE_BENCH_WRITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if test_mode { 20 } else { 300 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("skills");
    let t = Instant::now();
    generate(&root, n).expect("generate skills");
    eprintln!("generated {n} skills in {:.1?}", t.elapsed());
    let mut f = Figures { rows: Vec::new() };

    // 1. Import into SQLite, three fresh databases.
    eprintln!("import into SQLite ({n} skills, 3 runs):");
    let mut totals = Vec::new();
    let mut reads = Vec::new();
    let mut txs = Vec::new();
    let db_path = tmp.path().join("bench.db");
    for run in 0..3 {
        let path = if run == 2 {
            db_path.clone()
        } else {
            tmp.path().join(format!("import-{run}.db"))
        };
        let (read, tx) = rt.block_on(async {
            let store = Store::open(&DbUrl::Sqlite(path.clone())).await.unwrap();
            let (read, tx, got) = import_folder(&store, &root).await;
            assert_eq!(got, n);
            assert_eq!(store.index().len(), n);
            store.close().await;
            (read, tx)
        });
        eprintln!("  run {run}: read+validate {read:.2?}, transaction+index {tx:.2?}");
        reads.push(read);
        txs.push(tx);
        totals.push(read + tx);
    }
    let total = median(&mut totals);
    f.add(
        &format!("import {n} skills from a folder into SQLite (median of 3)"),
        format!(
            "{:.2} s (read+validate {:.2} s, transaction+index {:.2} s)",
            total.as_secs_f64(),
            median(&mut reads).as_secs_f64(),
            median(&mut txs).as_secs_f64()
        ),
        "< 3 s",
        Some(total < Duration::from_secs(3)),
    );
    let db_size = std::fs::metadata(&db_path).map(|m| m.len()).unwrap_or(0);
    eprintln!("  database file: {:.1} MB", mb(db_size as usize));

    // What one statement costs through sqlx's SQLite worker thread, inside a transaction: the
    // import runs about 6 + 2 x files statements per skill, one at a time.
    let per_stmt = rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&format!(
            "sqlite://{}?mode=rwc",
            tmp.path().join("roundtrip.db").display()
        ))
        .await
        .unwrap();
        let mut tx = c.begin().await.unwrap();
        let rounds = 20_000u32;
        let t = Instant::now();
        for i in 0..rounds {
            let v: i64 = sqlx::query_scalar("SELECT $1")
                .bind(i as i64)
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            black_box(v);
        }
        let d = t.elapsed() / rounds;
        tx.rollback().await.unwrap();
        d
    });
    f.add(
        "one trivial statement through sqlx SQLite (SELECT $1, in a transaction)",
        format!("{:.1} µs", per_stmt.as_secs_f64() * 1e6),
        "",
        None,
    );

    // 2. Cold start and index memory.
    eprintln!("cold start from SQLite:");
    let url = DbUrl::Sqlite(db_path.clone());
    let mut opens = Vec::new();
    for _ in 0..5 {
        let d = rt.block_on(async {
            let t = Instant::now();
            let store = Store::open(&url).await.unwrap();
            let d = t.elapsed();
            assert_eq!(store.index().len(), n);
            store.close().await;
            d
        });
        opens.push(d);
    }
    let open = median(&mut opens);
    f.add(
        &format!("cold start: Store::open on a {n}-skill SQLite db, index ready (median of 5)"),
        format!("{} (min {})", ms(open), ms(opens[0])),
        "< 300 ms",
        Some(open < Duration::from_millis(300)),
    );
    // Memory in a fresh process, so the RSS is not hidden by pages this one already holds.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("SKILLBASE_BENCH_OPEN_DB", &db_path)
        .output()
        .expect("run the memory probe");
    let text = String::from_utf8_lossy(&out.stdout);
    let m: Vec<usize> = text
        .split_whitespace()
        .filter_map(|w| w.split_once('=')?.1.parse().ok())
        .collect();
    assert!(
        out.status.success() && m.len() == 5,
        "memory probe: {out:?}"
    );
    let (index_heap, open_heap, peak, rss_open, rss_index) = (m[0], m[1], m[2], m[3], m[4]);
    f.add(
        &format!("index memory for {n} skills (live heap held by the index)"),
        format!(
            "{:.1} MB ({:.0} bytes/skill); whole open store {:.1} MB heap, peak while loading {:.1} MB; RssAnon +{:.1} MB with the store open, +{:.1} MB with only the index kept",
            mb(index_heap),
            index_heap as f64 / n as f64,
            mb(open_heap),
            mb(peak),
            mb(rss_open),
            mb(rss_index),
        ),
        "< 150 MB",
        Some(index_heap < 150 * 1024 * 1024 && rss_open < 150 * 1024 * 1024),
    );

    // 3. Revision writes on the n-skill SQLite store.
    eprintln!("revision writes, SQLite ({writes}):");
    let lat = rt.block_on(async {
        let store = Store::open(&url).await.unwrap();
        time_writes(&store, n, 10, "warm").await;
        let lat = time_writes(&store, n, writes, "sqlite").await;
        store.close().await;
        lat
    });
    let p50 = pct(&lat, 0.5);
    f.add(
        &format!("one revision write (Store::put), SQLite, {n}-skill store: p50"),
        format!(
            "{} (p90 {}, p99 {})",
            ms(p50),
            ms(pct(&lat, 0.9)),
            ms(pct(&lat, 0.99))
        ),
        "< 2 ms",
        Some(p50 < Duration::from_millis(2)),
    );

    // 4. PostgreSQL, when a server is given.
    let pg_url = std::env::var("SKILLBASE_TEST_POSTGRES_URL")
        .ok()
        .filter(|s| !s.is_empty());
    if let Some(pg) = &pg_url {
        let schema = format!("sbbench_{}", std::process::id());
        let url = DbUrl::Postgres {
            url: pg.clone(),
            schema: Some(schema.clone()),
        };
        eprintln!("PostgreSQL (schema {schema}):");
        let (import, open, lat) = rt.block_on(async {
            let store = Store::open(&url).await.unwrap();
            let (read, tx, _) = import_folder(&store, &root).await;
            store.close().await;
            let t = Instant::now();
            let store = Store::open(&url).await.unwrap();
            let open = t.elapsed();
            time_writes(&store, n, 10, "warm").await;
            let lat = time_writes(&store, n, writes, "pg").await;
            store.close().await;
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(pg).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                .execute(&mut c)
                .await
                .unwrap();
            ((read, tx), open, lat)
        });
        f.add(
            &format!("import {n} skills from a folder into PostgreSQL (1 run)"),
            format!(
                "{:.2} s (read+validate {:.2} s, transaction+index {:.2} s)",
                (import.0 + import.1).as_secs_f64(),
                import.0.as_secs_f64(),
                import.1.as_secs_f64()
            ),
            "",
            None,
        );
        f.add(
            &format!("cold start: Store::open on a {n}-skill PostgreSQL schema (1 run)"),
            ms(open),
            "",
            None,
        );
        let p50 = pct(&lat, 0.5);
        f.add(
            &format!("one revision write (Store::put), PostgreSQL, {n}-skill store: p50"),
            format!(
                "{} (p90 {}, p99 {})",
                ms(p50),
                ms(pct(&lat, 0.9)),
                ms(pct(&lat, 0.99))
            ),
            "< 5 ms",
            Some(p50 < Duration::from_millis(5)),
        );
    } else {
        eprintln!("PostgreSQL: skipped (set SKILLBASE_TEST_POSTGRES_URL)");
    }

    // 5. Index lookups (criterion). An agent with its own copies of 1% of the skills.
    let agent = AgentName::parse("support").unwrap();
    let own: Vec<_> = (0..n).step_by(100).map(skill_name).collect();
    let index = rt.block_on(async {
        let store = Store::open(&url).await.unwrap();
        let bundles = own
            .iter()
            .map(|name| {
                Bundle::single(format!(
                    "---\nname: {name}\ndescription: Support's own copy. Use when asked.\n---\nmine\n"
                ))
                .unwrap()
            })
            .collect();
        store
            .import(&Scope::Agent(agent.clone()), bundles, &human(), "own", &|_| {})
            .await
            .unwrap();
        let index = store.index();
        store.close().await;
        index
    });
    drop(rt);
    let names: Vec<String> = (0..n).map(|i| skill_name((i * 7919) % n)).collect();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("index");
        let shared = Scope::Shared;
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("get_shared", n), |b| {
            b.iter(|| {
                i = (i + 1) % names.len();
                black_box(index.get(&shared, &names[i]).is_some())
            })
        });
        g.bench_function(BenchmarkId::new("resolve_fallback_to_shared", n), |b| {
            b.iter(|| {
                i = (i + 1) % names.len();
                black_box(index.resolve(&agent, &names[i]).is_some())
            })
        });
        let mut j = 0usize;
        g.bench_function(BenchmarkId::new("resolve_own", n), |b| {
            b.iter(|| {
                j = (j + 1) % own.len();
                black_box(index.resolve(&agent, &own[j]).is_some())
            })
        });
        g.bench_function(BenchmarkId::new("get_missing", n), |b| {
            b.iter(|| black_box(index.get(&shared, "no-such-skill").is_none()))
        });
        g.finish();
    }
    // The same lookups timed by a plain loop, for the table.
    let rounds = 2_000_000usize;
    let t = Instant::now();
    let mut hits = 0usize;
    for k in 0..rounds {
        hits += index
            .resolve(&agent, black_box(&names[k % names.len()]))
            .is_some() as usize;
    }
    let per = t.elapsed().as_secs_f64() / rounds as f64;
    assert_eq!(hits, rounds);
    f.add(
        &format!("index lookup Index::resolve by name, {n} skills (mean of {rounds} lookups)"),
        format!("{:.0} ns", per * 1e9),
        "< 1 µs",
        Some(per < 1e-6),
    );
    c.final_summary();

    println!(
        "\nstore benchmarks, {n} skills, {} CPUs",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    f.print();
    drop(tmp);
}
