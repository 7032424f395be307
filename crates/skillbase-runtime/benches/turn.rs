//! Benchmarks of turn resolution (issue "Speed and memory", runtime part).
//!
//! Run with `cargo bench -p skillbase-runtime --bench turn`. Before measuring, the bench builds a
//! SQLite store in a temporary folder holding 10,000 generated skills (one `Store::import`), an
//! agent allowing 1,000 of them (500 with a trigger phrase) with a 4,000-token catalog budget, so
//! the catalog overflows and is ranked, and an agent allowing 50 that all fit.
//!
//! Measured (criterion, medians reported in BENCHMARKS.md):
//! - `turn/resolve/{1000,50}`: `skillbase_runtime::resolve` on a prebuilt, cached `AgentView`
//!   with a 2 KB message holding one or two trigger phrases.
//! - `turn/runtime_resolve/{1000,50}`: `Engine::view` then `resolve`, i.e. the same plus the
//!   view-cache lookup (agent cache, index snapshot, view map).
//! - `turn/parts/*`: the trigger pass, the BM25 scoring and the `load_skill` tool alone, for
//!   profiling.
//! - `turn/resolve/10000`: the same at every skill of the store allowed (`SKILLBASE_BENCH_N`).
//! - `turn/dispatcher_turn/{1000,10000}`: a whole turn as a harness makes it
//!   (`Engine::turn`: session, resolution, the report, events written behind). Before it,
//!   the bytes of the events one turn records are printed for both sizes.
//! - `turn/view_build/1000`: the cold path, `AgentView::build` over the 10,000-skill index.
//! - `turn/semantic_turn/10000` (issue 36): the whole turn at every skill with the semantic
//!   stage on too (both local encoders from `SKILLBASE_MODEL_DIR`; skipped, said, without it),
//!   after p50 / p99 of 200 such turns printed. Run it on one core:
//!   `taskset -c 1 target/release/deps/turn-* --bench 'turn/semantic_turn'`.
//!
//! Printed before measuring (not timed by criterion): allocations per turn, the heap held by a
//! cached view, and what an idle session costs (heap, RSS and database bytes after opening many
//! sessions with `Store::open_session`).
//!
//! Environment:
//! - `SKILLBASE_BENCH_N`: skills in the store (default 10,000; 2,000 under `cargo test`).
//!   The big agent allows one in ten.
//! - `SKILLBASE_BENCH_SESSIONS`: sessions opened for the memory figure (default 10,000; 200
//!   under `cargo test`).
//! - `SKILLBASE_BENCH_EXPORT=FILE`: also write the allowed skills, the agents and the messages as
//!   JSON to FILE, for `tools/bench/retrieval/run.py` (the Python comparison).
//! - `SKILLBASE_BENCH_DUMP=FILE`: write the JSON of many turns (both agents, every message and
//!   variants of it, several budgets and cadences) to FILE, one per line, and exit: diff two
//!   builds' files to show a change kept every turn byte-identical.
//! - `SKILLBASE_BENCH_PROFILE_TURN=N`: after the set-up, run N whole turns (`Engine::turn`)
//!   at every skill of the store through `profile_dispatcher_turn` and exit (for `perf record`).
//! - `SKILLBASE_BENCH_PROFILE=N`: after the set-up, run N turns per agent through `profile_turn`
//!   (never inlined; the context is dropped inside it, as in the criterion loop) and exit. For
//!   counting instructions on a noisy machine:
//!   `SKILLBASE_BENCH_PROFILE=160 SKILLBASE_BENCH_SESSIONS=0 valgrind --tool=callgrind
//!   --toggle-collect='*profile_turn*' target/release/deps/turn-* --bench`

use criterion::{BenchmarkId, Criterion};
use skillbase_format::{Bundle, SkillName};
use skillbase_runtime::load_skill_tool;
use skillbase_runtime::{AgentView, Engine, TurnOptions, resolve};
use skillbase_store::{AgentConfig, AgentName, Author, DbUrl, NameSet, Scope, Store};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// A counting allocator: live heap bytes and allocation counts (one relaxed atomic add per call).

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Relaxed);
            ALLOCS.fetch_add(1, Relaxed);
            ALLOC_BYTES.fetch_add(l.size() as u64, Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Relaxed);
            ALLOCS.fetch_add(1, Relaxed);
            ALLOC_BYTES.fetch_add(l.size() as u64, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_add(new, Relaxed);
            LIVE.fetch_sub(l.size(), Relaxed);
            ALLOCS.fetch_add(1, Relaxed);
            ALLOC_BYTES.fetch_add(new as u64, Relaxed);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Deterministic generation.

/// SplitMix64: small, fast, and the same stream on every platform.
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
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const VERBS: &[&str] = &[
    "reconcile",
    "review",
    "draft",
    "summarize",
    "triage",
    "migrate",
    "validate",
    "export",
    "import",
    "schedule",
    "audit",
    "escalate",
    "deploy",
    "rotate",
    "archive",
    "classify",
    "forecast",
    "translate",
    "benchmark",
    "provision",
    "approve",
    "onboard",
    "debug",
    "profile",
    "index",
    "backfill",
    "label",
    "notify",
    "redact",
    "normalize",
    "merge",
    "compare",
    "estimate",
    "monitor",
    "publish",
    "restore",
    "sync",
    "tag",
    "prepare",
    "verify",
    "check",
    "update",
    "clean",
    "plan",
    "track",
    "resolve",
    "answer",
    "analyze",
    "report",
    "collect",
];
const ADJS: &[&str] = &[
    "monthly",
    "quarterly",
    "annual",
    "weekly",
    "overdue",
    "pending",
    "failed",
    "duplicate",
    "urgent",
    "internal",
    "external",
    "legacy",
    "regional",
    "enterprise",
    "mobile",
    "public",
    "private",
    "encrypted",
    "stale",
    "missing",
    "late",
    "final",
    "shared",
    "critical",
    "minor",
    "open",
    "closed",
    "recurring",
    "manual",
    "automated",
    "international",
    "domestic",
    "partial",
    "new",
    "old",
    "large",
    "small",
    "customer",
    "vendor",
    "production",
];
const NOUNS: &[&str] = &[
    "invoice",
    "ledger",
    "payroll",
    "contract",
    "ticket",
    "incident",
    "deployment",
    "database",
    "migration",
    "schema",
    "report",
    "dashboard",
    "customer",
    "vendor",
    "order",
    "shipment",
    "warehouse",
    "refund",
    "subscription",
    "account",
    "password",
    "certificate",
    "credential",
    "budget",
    "release",
    "changelog",
    "request",
    "branch",
    "commit",
    "pipeline",
    "container",
    "cluster",
    "service",
    "endpoint",
    "queue",
    "alert",
    "metric",
    "log",
    "trace",
    "spreadsheet",
    "document",
    "slide",
    "email",
    "calendar",
    "meeting",
    "transcript",
    "survey",
    "dataset",
    "model",
    "experiment",
    "notebook",
    "query",
    "backup",
    "snapshot",
    "policy",
    "compliance",
    "risk",
    "claim",
    "patient",
    "appointment",
    "prescription",
    "lease",
    "property",
    "tenant",
    "carrier",
    "tariff",
    "quote",
    "proposal",
    "lead",
    "campaign",
    "newsletter",
    "translation",
    "glossary",
    "brand",
    "image",
    "video",
    "caption",
    "podcast",
    "recipe",
    "menu",
    "inventory",
    "supplier",
    "purchase",
    "receipt",
    "expense",
    "tax",
    "payment",
    "chargeback",
    "dispute",
    "loan",
    "mortgage",
    "portfolio",
    "trade",
    "bond",
    "quarter",
    "forecast",
    "license",
    "firmware",
    "device",
    "printer",
    "laptop",
    "network",
    "firewall",
    "domain",
    "website",
    "form",
    "survey",
    "interview",
    "candidate",
    "offer",
    "benefit",
    "timesheet",
    "vacation",
    "badge",
    "visitor",
    "room",
    "booking",
    "flight",
    "hotel",
    "visa",
    "course",
    "exam",
    "grade",
    "student",
    "lesson",
];
/// Second words of trigger phrases. None of them is in the other lists, so a trigger fires only
/// where a message was given it on purpose.
const TRIGGER_TAILS: &[&str] = &[
    "rollback",
    "handoff",
    "playbook",
    "runbook",
    "checklist",
    "postmortem",
    "writeup",
    "walkthrough",
    "cleanup",
    "teardown",
    "signoff",
    "breakdown",
];
const PREPS: &[&str] = &[
    "for", "with", "from", "into", "across", "against", "before", "after", "by", "of", "in", "on",
];
const OPENERS: &[&str] = &[
    "Hi team,",
    "Hello,",
    "Quick question:",
    "Following up on yesterday,",
    "As discussed,",
    "Before Friday,",
    "When you have a moment,",
    "Heads up:",
];

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// One plausible-looking English sentence of 8-16 words over the vocabulary.
fn sentence(r: &mut Rng) -> String {
    let (v, a, n, n2, p, a2, n3) = (
        r.pick(VERBS),
        r.pick(ADJS),
        r.pick(NOUNS),
        r.pick(NOUNS),
        r.pick(PREPS),
        r.pick(ADJS),
        r.pick(NOUNS),
    );
    match r.below(6) {
        0 => format!("We need to {v} the {a} {n} {n2} {p} the {a2} {n3} team this week."),
        1 => format!(
            "Can you {v} every {a} {n} and then {} the {n2} {p} {n3} records?",
            r.pick(VERBS)
        ),
        2 => format!("The {a} {n} is blocking the {n2} {p} {a2} {n3} and nobody owns it yet."),
        3 => format!(
            "Please {v} the {n} {n2} so the {a2} {n3} matches what {} asked for.",
            r.pick(NOUNS)
        ),
        4 => format!("Last time the {a} {n2} took two days because the {n} was {a2} {p} the {n3}."),
        _ => format!(
            "I think we should {v} the {n} first, then {} the {a} {n2} {p} {n3}.",
            r.pick(VERBS)
        ),
    }
}

#[derive(Clone)]
struct GenSkill {
    name: String,
    description: String,
    trigger: Option<String>,
    body: String,
}

impl GenSkill {
    fn skill_md(&self) -> String {
        let mut s = format!(
            "---\nname: {}\ndescription: \"{}\"\n",
            self.name, self.description
        );
        if let Some(t) = &self.trigger {
            s.push_str(&format!("triggers: [\"{t}\"]\n"));
        }
        s.push_str("---\n");
        s.push_str(&self.body);
        s
    }
}

fn gen_skill(r: &mut Rng, i: usize, trigger: Option<String>) -> GenSkill {
    let (v, a, n) = (r.pick(VERBS), r.pick(ADJS), r.pick(NOUNS));
    let name = format!("{v}-{a}-{n}-{i:05}");
    // Description: 20-60 words, opening with what the skill does.
    let target = r.range(20, 60);
    let mut words: Vec<String> = format!(
        "{} {a} {n} records {} the {} {}. Use when the user asks to {v} {n} {}.",
        cap(v),
        r.pick(PREPS),
        r.pick(ADJS),
        r.pick(NOUNS),
        r.pick(NOUNS)
    )
    .split_whitespace()
    .map(str::to_owned)
    .collect();
    while words.len() < target {
        words.extend(sentence(r).split_whitespace().map(str::to_owned));
    }
    words.truncate(target);
    let mut description = words.join(" ");
    description = description
        .trim_end_matches(['.', ',', '?', ':'])
        .to_owned();
    description.push('.');
    // Body: 2-5 KB of markdown.
    let size = r.range(2048, 5120);
    let mut body = format!(
        "# {}\n\n{description}\n\n## Steps\n\n",
        cap(&name.replace('-', " "))
    );
    let mut step = 1;
    while body.len() < size * 2 / 3 {
        body.push_str(&format!("{step}. {}\n", sentence(r)));
        step += 1;
    }
    body.push_str("\n## Notes\n\n");
    while body.len() < size {
        body.push_str(&sentence(r));
        body.push(if r.below(4) == 0 { '\n' } else { ' ' });
    }
    body.push('\n');
    GenSkill {
        name,
        description,
        trigger,
        body,
    }
}

/// About 2 KB of text with the given trigger phrases placed at random sentence positions.
fn gen_message(r: &mut Rng, phrases: &[&str]) -> String {
    let mut sentences = vec![r.pick(OPENERS).to_owned()];
    let mut len = sentences[0].len();
    while len < 2048 {
        let s = sentence(r);
        len += s.len() + 1;
        sentences.push(s);
    }
    for p in phrases {
        let at = r.range(1, sentences.len() - 1);
        let s = match r.below(3) {
            0 => format!("Also, the {p} for the {} is still not done.", r.pick(NOUNS)),
            1 => format!("Could you walk me through the {p} we talked about?"),
            _ => format!("I was told to follow the {p} but I cannot find it."),
        };
        sentences[at] = s;
    }
    sentences.join(" ")
}

struct Fixture {
    skills: Vec<GenSkill>,
    /// Indices into `skills`.
    big: Vec<usize>,
    small: Vec<usize>,
    big_messages: Vec<String>,
    small_messages: Vec<String>,
}

fn generate(n: usize) -> Fixture {
    let mut r = Rng(42);
    let n_allowed = n / 10;
    // Unique trigger phrases: every (noun, tail) pair, in a fixed shuffled order.
    let mut phrases: Vec<String> = NOUNS
        .iter()
        .flat_map(|a| TRIGGER_TAILS.iter().map(move |b| format!("{a} {b}")))
        .collect();
    phrases.sort();
    phrases.dedup();
    for i in (1..phrases.len()).rev() {
        let j = r.below(i + 1);
        phrases.swap(i, j);
    }
    let mut next_phrase = 0;
    let mut skills = Vec::with_capacity(n);
    let mut big = Vec::with_capacity(n_allowed);
    for i in 0..n {
        let allowed = i % 10 == 3;
        // Half of the allowed skills declare one trigger.
        let trigger = if allowed && big.len() % 2 == 0 {
            next_phrase += 1;
            Some(phrases[next_phrase - 1].clone())
        } else {
            None
        };
        if allowed {
            big.push(i);
        }
        skills.push(gen_skill(&mut r, i, trigger));
    }
    // The small agent: 50 of the allowed skills, spread out.
    let stride = (big.len() / 50).max(1);
    let small: Vec<usize> = big.iter().step_by(stride).take(50).copied().collect();
    let messages = |r: &mut Rng, set: &[usize]| -> Vec<String> {
        let with: Vec<&str> = set
            .iter()
            .filter_map(|&i| skills[i].trigger.as_deref())
            .collect();
        (0..16)
            .map(|k| {
                let count = 1 + k % 2;
                let chosen: Vec<&str> = (0..count).map(|_| r.pick(&with)).collect();
                gen_message(r, &chosen)
            })
            .collect()
    };
    let big_messages = messages(&mut r, &big);
    let small_messages = messages(&mut r, &small);
    Fixture {
        skills,
        big,
        small,
        big_messages,
        small_messages,
    }
}

// ---------------------------------------------------------------------------------------------

struct Setup {
    runtime: Engine,
    big: AgentName,
    small: AgentName,
    /// Every skill of the store allowed (10,000 by default), the same catalog budget.
    all: AgentName,
    db_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn build_store(rt: &tokio::runtime::Runtime, f: &Fixture) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("skillbase.db");
    let started = Instant::now();
    let store = rt
        .block_on(Store::open(&DbUrl::Sqlite(db_path.clone())))
        .expect("open store");
    let bundles: Vec<Bundle> = f
        .skills
        .iter()
        .map(|s| Bundle::single(s.skill_md()).expect("bundle"))
        .collect();
    let report = rt
        .block_on(store.import(
            &Scope::Shared,
            bundles,
            &Author::Import("bench".into()),
            "bench import",
            &|_| {},
        ))
        .expect("import");
    assert_eq!(report.created.len(), f.skills.len());
    let names = |set: &[usize]| {
        let mut v: Vec<SkillName> = set
            .iter()
            .map(|&i| SkillName::parse(&f.skills[i].name).expect("name"))
            .collect();
        v.sort();
        NameSet::Names(v)
    };
    let big = AgentName::parse("bench-big").unwrap();
    let small = AgentName::parse("bench-small").unwrap();
    let all = AgentName::parse("bench-all").unwrap();
    let every: Vec<usize> = (0..f.skills.len()).collect();
    for (agent, set) in [(&big, &f.big), (&small, &f.small), (&all, &every)] {
        rt.block_on(store.create_agent(
            agent,
            &AgentConfig {
                skills: names(set),
                catalog_budget: 4000,
                ..AgentConfig::default()
            },
        ))
        .expect("create agent");
    }
    eprintln!(
        "store: {} skills imported into {} in {:.1?}",
        f.skills.len(),
        db_path.display(),
        started.elapsed()
    );
    Setup {
        runtime: rt
            .block_on(Engine::builder().store(Arc::new(store)).build())
            .expect("engine"),
        big,
        small,
        all,
        db_path,
        _dir: dir,
    }
}

fn export(path: &Path, f: &Fixture, views: [(&str, &AgentView, &[String]); 2]) {
    let skill = |i: usize| {
        let s = &f.skills[i];
        serde_json::json!({
            "name": s.name,
            "description": s.description,
            "triggers": s.trigger.iter().collect::<Vec<_>>(),
            "body": s.body,
        })
    };
    let mut agents = serde_json::Map::new();
    for (label, view, messages) in views {
        let per_message: Vec<serde_json::Value> = messages
            .iter()
            .map(|m| {
                let ctx = resolve(view, m, &TurnOptions::default());
                let top: Vec<&str> = view
                    .bm25
                    .rank(m)
                    .into_iter()
                    .take(10)
                    .map(|(i, _)| view.skills[i as usize].name())
                    .collect();
                serde_json::json!({
                    "text": m,
                    "skillbase": {
                        "triggered": ctx.report.activated.iter().map(|a| &a.name).collect::<Vec<_>>(),
                        "ranked": ctx.report.catalog.ranked,
                        "catalog_full": ctx.report.catalog.full,
                        "catalog_name_only": ctx.report.catalog.name_only.len(),
                        "catalog_omitted": ctx.report.catalog.omitted.len(),
                        "bm25_top10": top,
                    }
                })
            })
            .collect();
        agents.insert(
            label.to_owned(),
            serde_json::json!({
                "skills": view.skills.iter().map(|s| s.name()).collect::<Vec<_>>(),
                "catalog_budget": view.agent.config.catalog_budget,
                "messages": per_message,
            }),
        );
    }
    let doc = serde_json::json!({
        "generator": "crates/skillbase-runtime/benches/turn.rs",
        "store_skills": f.skills.len(),
        "skills": f.big.iter().map(|&i| skill(i)).collect::<Vec<_>>(),
        "agents": agents,
    });
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).expect("write export");
    eprintln!("exported fixture to {}", path.display());
}

/// Allocations and bytes allocated per call of `f`, over `n` calls.
fn allocs_per_call(n: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    let (a0, b0) = (ALLOCS.load(Relaxed), ALLOC_BYTES.load(Relaxed));
    for k in 0..n {
        f(k);
    }
    let (a1, b1) = (ALLOCS.load(Relaxed), ALLOC_BYTES.load(Relaxed));
    ((a1 - a0) as f64 / n as f64, (b1 - b0) as f64 / n as f64)
}

/// One whole turn (`Engine::turn`), context dropped: the unit `SKILLBASE_BENCH_PROFILE_TURN`
/// counts.
#[inline(never)]
fn profile_dispatcher_turn(
    rt: &tokio::runtime::Runtime,
    d: &Engine,
    agent: &AgentName,
    message: &str,
    opts: &TurnOptions,
) -> usize {
    let ctx = rt
        .block_on(d.turn(agent, "bench-profile", message, opts))
        .unwrap();
    ctx.tools.len()
}

/// One turn, context dropped: the unit `SKILLBASE_BENCH_PROFILE` counts (one function per
/// agent, so a profile shows each apart).
#[inline(never)]
fn profile_turn_1000(view: &AgentView, message: &str, opts: &TurnOptions) -> usize {
    let ctx = resolve(view, message, opts);
    ctx.report.catalog.omitted.len()
}

#[inline(never)]
fn profile_turn_50(view: &AgentView, message: &str, opts: &TurnOptions) -> usize {
    let ctx = resolve(view, message, opts);
    ctx.report.catalog.full.len()
}

fn main() {
    // Like criterion: without `--bench` (as under `cargo test --benches`), every bench runs once.
    let test_mode = !std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SKILLBASE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if test_mode { 2_000 } else { 10_000 });
    let n_sessions: usize = std::env::var("SKILLBASE_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if test_mode { 200 } else { 10_000 });
    skillbase_runtime::tokens::warm_up();

    let started = Instant::now();
    let f = generate(n);
    let body_bytes: usize = f.skills.iter().map(|s| s.body.len()).sum();
    eprintln!(
        "generated {} skills ({:.1} MB of bodies), {} allowed ({} with a trigger), {} small, in {:.1?}",
        f.skills.len(),
        body_bytes as f64 / 1e6,
        f.big.len(),
        f.big
            .iter()
            .filter(|&&i| f.skills[i].trigger.is_some())
            .count(),
        f.small.len(),
        started.elapsed()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = build_store(&rt, &f);
    let runtime = &s.runtime;

    // Views: built once through the runtime's cache; the heap a cached view holds.
    let live0 = LIVE.load(Relaxed);
    let t = Instant::now();
    let big_view = runtime.view(&s.big).expect("big view");
    let big_build = t.elapsed();
    let big_view_heap = LIVE.load(Relaxed).saturating_sub(live0);
    let small_view = runtime.view(&s.small).expect("small view");
    assert_eq!(big_view.skills.len(), f.big.len());
    assert_eq!(small_view.skills.len(), f.small.len());
    eprintln!(
        "view: {} skills built in {big_build:.1?} (first build, cold), holds {:.0} KiB of heap (before bodies are wrapped)",
        big_view.skills.len(),
        big_view_heap as f64 / 1024.0
    );

    let opts = TurnOptions::default();
    // Sanity: the scenario is what it says.
    for (label, view, msgs) in [
        ("1000", &big_view, &f.big_messages),
        ("50", &small_view, &f.small_messages),
    ] {
        let mut triggered = 0;
        let mut full = 0;
        let mut name_only = 0;
        let mut omitted = 0;
        let mut ranked = 0;
        for m in msgs.iter() {
            let ctx = resolve(view, m, &opts);
            triggered += ctx.report.activated.len();
            full += ctx.report.catalog.full.len();
            name_only += ctx.report.catalog.name_only.len();
            omitted += ctx.report.catalog.omitted.len();
            ranked += ctx.report.catalog.ranked as usize;
            assert!(
                !ctx.report.activated.is_empty(),
                "each message fires a trigger"
            );
        }
        let k = msgs.len() as f64;
        let avg_len = msgs.iter().map(|m| m.len()).sum::<usize>() as f64 / k;
        eprintln!(
            "scenario {label}: {} messages of {avg_len:.0} bytes; per turn: {:.1} triggered, catalog {:.1} full + {:.1} name-only, {:.1} omitted; ranked in {ranked}/{}",
            msgs.len(),
            triggered as f64 / k,
            full as f64 / k,
            name_only as f64 / k,
            omitted as f64 / k,
            msgs.len()
        );
    }
    assert!(
        resolve(&big_view, &f.big_messages[0], &opts)
            .report
            .catalog
            .ranked,
        "the 1,000-skill catalog must overflow its budget"
    );
    assert!(
        !resolve(&small_view, &f.small_messages[0], &opts)
            .report
            .catalog
            .ranked,
        "the 50 skills must all fit"
    );

    if let Some(path) = std::env::var_os("SKILLBASE_BENCH_DUMP") {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("dump file"));
        let mut turns = 0;
        for (view, msgs) in [
            (&big_view, &f.big_messages),
            (&small_view, &f.small_messages),
        ] {
            let mut variants: Vec<String> = Vec::new();
            for m in msgs.iter() {
                variants.push(m.clone());
                variants.push(m[..m.len() / 7].to_owned());
                variants.push(m.to_uppercase().replace(' ', "  "));
                variants.push(m.replacen('e', "é", 40));
            }
            variants.extend([
                "".to_owned(),
                "!!".to_owned(),
                "crème brûlée 退款".to_owned(),
            ]);
            for budget in [
                None,
                Some(0),
                Some(60),
                Some(400),
                Some(1500),
                Some(100_000),
            ] {
                for max_cost in [None, Some(skillbase_format::Cost::Immediate)] {
                    for context_budget in [None, Some(700)] {
                        let o = TurnOptions {
                            max_cost,
                            catalog_budget: budget,
                            context_budget,
                            paths: Vec::new(),
                        };
                        for (k, m) in variants.iter().enumerate() {
                            let ctx = resolve(view, m, &o);
                            serde_json::to_writer(&mut out, &ctx).expect("write");
                            writeln!(out, " {:?}", ctx.loadable.len()).expect("write");
                            if k % 16 == 0 {
                                // As the CLI prints it: through a `Value`, pretty.
                                let v = serde_json::json!({"context": ctx});
                                writeln!(out, "{}", serde_json::to_string_pretty(&v).unwrap())
                                    .expect("write");
                            }
                            turns += 1;
                        }
                    }
                }
            }
        }
        eprintln!("dumped {turns} turns");
        return;
    }

    if let Some(turns) = std::env::var("SKILLBASE_BENCH_PROFILE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        type Turn = fn(&AgentView, &str, &TurnOptions) -> usize;
        for (label, view, msgs, turn) in [
            (
                "1000",
                &big_view,
                &f.big_messages,
                profile_turn_1000 as Turn,
            ),
            (
                "50",
                &small_view,
                &f.small_messages,
                profile_turn_50 as Turn,
            ),
        ] {
            let t = Instant::now();
            let mut sum = 0;
            for k in 0..turns {
                sum += turn(view, black_box(&msgs[k % msgs.len()]), &opts);
            }
            eprintln!(
                "profile {label}: {turns} turns in {:.1?} ({sum})",
                t.elapsed()
            );
        }
        return;
    }

    if let Some(path) = std::env::var_os("SKILLBASE_BENCH_EXPORT") {
        export(
            Path::new(&path),
            &f,
            [
                ("big", &big_view, &f.big_messages),
                ("small", &small_view, &f.small_messages),
            ],
        );
    }

    // Allocations per turn.
    for (label, view, msgs) in [
        ("1000", &big_view, &f.big_messages),
        ("50", &small_view, &f.small_messages),
    ] {
        let (a, b) = allocs_per_call(1000, |k| {
            black_box(resolve(view, &msgs[k % msgs.len()], &opts));
        });
        eprintln!(
            "allocations per turn ({label}): {a:.0} allocations, {:.1} KiB",
            b / 1024.0
        );
    }

    // What an idle session costs: the runtime keeps nothing per session (views are per agent,
    // validators per skill revision); a session is a row in the database.
    let db_bytes = |p: &Path| {
        file_len(p) + file_len(&p.with_extension("db-wal")) + file_len(&p.with_extension("db-shm"))
    };
    let (live0, rss0, db0) = (LIVE.load(Relaxed), rss_bytes(), db_bytes(&s.db_path));
    let t = Instant::now();
    rt.block_on(async {
        for k in 0..n_sessions {
            runtime
                .store()
                .open_session(&format!("session-{k:06}"), &s.big)
                .await
                .expect("open session");
        }
    });
    let took = t.elapsed();
    // The runtime's own state after a turn in each of the last few sessions' agent.
    let _ = resolve(&runtime.view(&s.big).unwrap(), &f.big_messages[0], &opts);
    let (live1, rss1, db1) = (LIVE.load(Relaxed), rss_bytes(), db_bytes(&s.db_path));
    let per = |a: u64, b: u64| (b as f64 - a as f64) / n_sessions as f64;
    eprintln!(
        "sessions: {n_sessions} opened in {took:.1?} ({:.0} µs each); per session: heap {:+.1} B, RSS {:+.1} B, database files {:+.1} B",
        took.as_secs_f64() * 1e6 / n_sessions as f64,
        per(live0 as u64, live1 as u64),
        per(rss0, rss1),
        per(db0, db1),
    );

    // Whole turns as a harness makes them (`Engine::turn`: session, resolution, events
    // written behind), at the big agent's 1,000 skills and at every skill of the store; and
    // the bytes of the events one turn records. The engine's event writer is a task of this
    // runtime.
    let _entered = rt.enter();
    let d = runtime;
    let every_label = f.skills.len().to_string();
    if let Some(turns) = std::env::var("SKILLBASE_BENCH_PROFILE_TURN")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let t = Instant::now();
        let mut sum = 0;
        for k in 0..turns {
            let m = &f.big_messages[k % f.big_messages.len()];
            sum += profile_dispatcher_turn(&rt, d, &s.all, black_box(m), &opts);
        }
        let turned = t.elapsed();
        rt.block_on(d.flush());
        eprintln!(
            "profile dispatcher_turn/{every_label}: {turns} turns in {turned:.1?}, their events stored {:.1?} later ({sum})",
            t.elapsed() - turned
        );
        return;
    }
    for (label, agent, msgs) in [
        ("1000", &s.big, &f.big_messages),
        (every_label.as_str(), &s.all, &f.big_messages),
    ] {
        let mut bytes = Vec::new();
        rt.block_on(async {
            for (k, m) in msgs.iter().take(20).enumerate() {
                let session = format!("bytes-{label}-{k}");
                d.turn(agent, &session, m, &opts).await.expect("turn");
                d.flush().await;
                let evs = runtime
                    .store()
                    .events(&skillbase_store::EventFilter {
                        session: Some(session),
                        ..Default::default()
                    })
                    .await
                    .expect("events");
                bytes.push(evs.iter().map(|e| e.data.to_string().len()).sum::<usize>());
            }
        });
        bytes.sort_unstable();
        eprintln!(
            "event bytes per turn, {label} skills: median {} B, max {} B ({} turns)",
            bytes[bytes.len() / 2],
            bytes[bytes.len() - 1],
            bytes.len()
        );
    }

    let mut c = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(800))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    {
        let mut g = c.benchmark_group("turn");
        for (label, view, agent, msgs) in [
            ("1000", &big_view, &s.big, &f.big_messages),
            ("50", &small_view, &s.small, &f.small_messages),
        ] {
            let mut k = 0usize;
            g.bench_function(BenchmarkId::new("resolve", label), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(resolve(view, black_box(&msgs[k % msgs.len()]), &opts))
                })
            });
            let mut k = 0usize;
            g.bench_function(BenchmarkId::new("runtime_resolve", label), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(resolve(
                        &runtime.view(agent).unwrap(),
                        black_box(&msgs[k % msgs.len()]),
                        &opts,
                    ))
                })
            });
        }
        for (label, view, msgs) in [
            ("1000", &big_view, &f.big_messages),
            ("50", &small_view, &f.small_messages),
        ] {
            let mut k = 0usize;
            g.bench_function(BenchmarkId::new("parts/triggers", label), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(view.triggers.find(&msgs[k % msgs.len()]))
                })
            });
            let mut k = 0usize;
            g.bench_function(BenchmarkId::new("parts/bm25_scores", label), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(view.bm25.scores(&msgs[k % msgs.len()]))
                })
            });
            // The `load_skill` tool over every skill of the view (its enum of names), as built
            // (and dropped) every turn.
            let all: Vec<usize> = (0..view.skills.len()).collect();
            g.bench_function(BenchmarkId::new("parts/load_skill_tool", label), |b| {
                b.iter(|| black_box(load_skill_tool(view, &all)))
            });
        }
        g.finish();
    }
    {
        let mut g = c.benchmark_group("turn");
        let all_view = runtime.view(&s.all).expect("all view");
        let mut k = 0usize;
        let msgs = &f.big_messages;
        g.bench_function(BenchmarkId::new("resolve", &every_label), |b| {
            b.iter(|| {
                k += 1;
                black_box(resolve(&all_view, black_box(&msgs[k % msgs.len()]), &opts))
            })
        });
        for (label, agent) in [("1000", &s.big), (every_label.as_str(), &s.all)] {
            let mut k = 0usize;
            let session = format!("bench-turns-{label}");
            g.bench_function(BenchmarkId::new("dispatcher_turn", label), |b| {
                b.iter(|| {
                    k += 1;
                    let m = &msgs[k % msgs.len()];
                    black_box(
                        rt.block_on(d.turn(agent, &session, black_box(m), &opts))
                            .unwrap(),
                    )
                })
            });
        }
        rt.block_on(d.flush());
        g.finish();
    }
    if let Some(sem) = semantic_engine(&rt, runtime.store().clone(), &s.all) {
        semantic_turns(&mut c, &rt, &sem, &s.all, &f.big_messages, &every_label);
    }
    {
        let mut g = c.benchmark_group("turn");
        g.sample_size(10).measurement_time(Duration::from_secs(5));
        let agent = runtime.store().agent_cached(&s.big).unwrap();
        let index = runtime.store().index();
        let env = skillbase_runtime::Environment::builtins();
        g.bench_function(BenchmarkId::new("view_build", "1000"), |b| {
            b.iter(|| black_box(AgentView::build(agent.clone(), &index, &env)))
        });
        g.finish();
    }
    c.final_summary();
}

// ---------------------------------------------------------------------------------------------
// The semantic stage's turn (issue 36): every stage on, every skill of the store allowed.

/// A second engine over the same store with the local encoders (`SKILLBASE_MODEL_DIR`), its
/// skill vectors in memory: `None`, said, when no model is installed. The skill vectors are
/// deterministic random unit vectors written into the store under the model's id, as a first
/// index would leave them: a turn's cost does not depend on their values, and computing 10,000
/// real ones takes minutes (the `index` bench measures that). The message is encoded for real.
fn semantic_engine(
    rt: &tokio::runtime::Runtime,
    store: Arc<Store>,
    agent: &AgentName,
) -> Option<Engine> {
    let dir = std::env::var_os("SKILLBASE_MODEL_DIR").map(std::path::PathBuf::from);
    if !dir
        .as_deref()
        .is_some_and(skillbase_embed::Encoder::present)
    {
        eprintln!(
            "turn/semantic_turn: skipped (no model: set SKILLBASE_MODEL_DIR to what `skillbase model pull` installs)"
        );
        return None;
    }
    let table: toml::Table = "embedder = \"local\"".parse().expect("a table");
    let config = skillbase_runtime::SemanticConfig::from_table(&table).expect("[semantic]");
    let engine = rt
        .block_on(
            Engine::builder()
                .store(store.clone())
                .semantic_config(config)
                .build(),
        )
        .expect("engine with the semantic stage");
    let sem = engine
        .semantic()
        .expect("the semantic stage loaded")
        .clone();
    let dim = rt
        .block_on(sem.query("probe"))
        .expect("a query vector")
        .len();
    let view = engine.view(agent).expect("view");
    let mut r = Rng(7);
    let rows: Vec<(String, Vec<f32>)> = view
        .skills
        .iter()
        .map(|s| {
            let mut v: Vec<f32> = (0..dim)
                .map(|_| (r.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            (s.entry.digest.to_string(), v)
        })
        .collect();
    for chunk in rows.chunks(1_000) {
        rt.block_on(store.put_vectors(&sem.model_id(), chunk))
            .expect("vectors stored");
    }
    let report = rt
        .block_on(engine.warm_semantic(agent))
        .expect("warm")
        .expect("a semantic stage");
    assert_eq!(
        (report.read, report.computed),
        (view.skills.len(), 0),
        "every vector read, none computed"
    );
    Some(engine)
}

/// `turn/semantic_turn/N`: a whole turn (`Engine::turn`) with the lexical and semantic stages
/// over every skill, a 2 KB message (read as passages, encoded by both local encoders in
/// process). Before criterion, 200 turns timed one by one give p50 and p99.
fn semantic_turns(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    agent: &AgentName,
    msgs: &[String],
    label: &str,
) {
    let opts = TurnOptions::default();
    let session = "bench-semantic-turns";
    let ctx = rt
        .block_on(engine.turn(agent, session, &msgs[0], &opts))
        .expect("turn");
    let stages = ctx.report.catalog.stages.clone().unwrap_or_default();
    assert!(
        stages.starts_with("lexical+semantic"),
        "the semantic stage ranked this turn: {stages}"
    );
    let mut times: Vec<Duration> = (0..200)
        .map(|k| {
            let t = Instant::now();
            black_box(
                rt.block_on(engine.turn(agent, session, &msgs[k % msgs.len()], &opts))
                    .expect("turn"),
            );
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    eprintln!(
        "semantic turn, {label} skills ({stages}): p50 {:.1?}, p99 {:.1?}, max {:.1?} over {} turns of {} passages",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1],
        times.len(),
        match skillbase_route::passage::reading(&msgs[0]) {
            skillbase_route::passage::Reading::Passages(p) => p.len(),
            _ => 1,
        }
    );
    let mut g = c.benchmark_group("turn");
    g.sample_size(20);
    let mut k = 0usize;
    g.bench_function(BenchmarkId::new("semantic_turn", label), |b| {
        b.iter(|| {
            k += 1;
            black_box(
                rt.block_on(engine.turn(agent, session, black_box(&msgs[k % msgs.len()]), &opts))
                    .expect("turn"),
            )
        })
    });
    rt.block_on(engine.flush());
    g.finish();
}
