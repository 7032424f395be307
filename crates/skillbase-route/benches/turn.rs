//! Benchmarks of the pure turn path, without a store, runtime or server: build a view over an
//! index made in memory, then resolve turns on it.
//!
//! Run with `cargo bench -p skillbase-route --bench turn`. The index holds `SKILLBASE_BENCH_N`
//! generated skills (default 1,000; 200 under `cargo test`), one in two with a trigger phrase;
//! the agent sees all of them under a 4,000-token catalog budget, so the catalog overflows and
//! is ranked. The runtime's `turn` bench measures the same path through the engine and a store.
//!
//! - `route/view_build/N`: `AgentView::build` (every catalog entry counted, the matchers built).
//! - `route/resolve/N`: `resolve` on that view with a message holding a trigger phrase.

use criterion::{BenchmarkId, Criterion};
use skillbase_route::agent::{Agent, AgentConfig, AgentName, NameSet, Scope};
use skillbase_route::index::{Index, SkillEntry};
use skillbase_route::requires::Provides;
use skillbase_route::turn::{TurnOptions, resolve};
use skillbase_route::view::AgentView;
use std::collections::BTreeSet;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

/// No tools, servers or programs: the generated skills require nothing.
struct Nothing;

impl Provides for Nothing {
    fn class(&self, _class: &str) -> bool {
        false
    }
    fn server(&self, _server: &str) -> Option<&BTreeSet<String>> {
        None
    }
    fn program(&self, _program: &str) -> bool {
        false
    }
}

const TOPICS: [&str; 8] = [
    "refund", "invoice", "shipping", "password", "database", "deploy", "report", "calendar",
];

fn skill(i: usize) -> SkillEntry {
    let topic = TOPICS[i % TOPICS.len()];
    let triggers = if i.is_multiple_of(2) {
        format!("triggers: [\"{topic} case {i}\"]\n")
    } else {
        String::new()
    };
    let text = format!(
        "---\nname: skill-{i:05}\ndescription: Handle {topic} requests of kind {i}; check the \
         account, explain the {topic} policy and answer.\n{triggers}---\n\n# {topic} {i}\n\n\
         1. Read the {topic} request.\n2. Check the account and the {topic} history.\n\
         3. Answer with the policy.\n"
    );
    SkillEntry::from_skill_md(Scope::Shared, &text, "human:bench").expect("generated SKILL.md")
}

fn main() {
    let n: usize = std::env::var("SKILLBASE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if std::env::args().any(|a| a == "--bench") {
            1000
        } else {
            200
        });
    let index = Index::from_entries((0..n).map(skill), 1);
    let agent = Arc::new(Agent {
        name: AgentName::parse("bench").expect("agent name"),
        config: AgentConfig {
            skills: NameSet::All,
            ..AgentConfig::default()
        },
        version: 1,
    });
    let view = AgentView::build(agent.clone(), &index, &Nothing);
    let message = format!(
        "Hello, a customer writes about a refund case {} and asks when the invoice will be \
         corrected; {}",
        (n - 1) / TOPICS.len() * TOPICS.len(),
        "they add some context about their order and the shipping delay. ".repeat(20)
    );
    let opts = TurnOptions::default();
    let ctx = resolve(&view, &message, &opts);
    assert!(
        ctx.report.catalog.ranked,
        "the bench's catalog must overflow and be ranked"
    );
    assert!(
        ctx.injected.is_some(),
        "the bench's message must fire a trigger"
    );

    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    let mut g = c.benchmark_group("route");
    g.bench_function(BenchmarkId::new("view_build", n), |b| {
        b.iter(|| black_box(AgentView::build(agent.clone(), &index, &Nothing)))
    });
    g.bench_function(BenchmarkId::new("resolve", n), |b| {
        b.iter(|| black_box(resolve(&view, black_box(&message), &opts)))
    });
    g.finish();
    c.final_summary();
}
