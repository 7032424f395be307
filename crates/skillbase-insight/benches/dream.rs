//! The dream miner over 10,000 recorded sessions (issue 19: under 10 s).
//!
//! Sessions are generated deterministically: 20 calls each from 200 tools with 1-3 argument
//! keys, 30 procedures of 3-6 steps planted in 3-40 sessions each, the rest random. Measured:
//! `dream::mine::mine` (normalizing, counting runs of 2-8 steps, closing, ranking), which is
//! the whole of a dream's CPU beyond reading the events.
//!
//! cargo bench -p skillbase-insight --bench dream

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use skillbase_insight::dream::mine::{LoggedCall, MineOptions, SessionLog, mine};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn args(rng: &mut Rng, tool: u64) -> Value {
    let keys = ["id", "path", "amount", "query", "target"];
    let n = 1 + (tool % 3) as usize;
    let mut m = serde_json::Map::new();
    for k in &keys[..n] {
        m.insert((*k).into(), json!(rng.below(1000)));
    }
    Value::Object(m)
}

fn call(rng: &mut Rng, tool: u64) -> LoggedCall {
    LoggedCall {
        call_id: format!("c{}", rng.next()),
        tool: format!("tool_{tool}"),
        arguments: args(rng, tool),
    }
}

pub fn sessions(n: usize) -> Vec<SessionLog> {
    let mut rng = Rng(19);
    let procedures: Vec<Vec<u64>> = (0..30)
        .map(|_| {
            let len = 3 + rng.below(4);
            (0..len).map(|_| rng.below(200)).collect()
        })
        .collect();
    let mut out: Vec<SessionLog> = (0..n)
        .map(|i| SessionLog {
            session: format!("s{i}"),
            calls: (0..20)
                .map(|_| {
                    let t = rng.below(200);
                    call(&mut rng, t)
                })
                .collect(),
            messages: vec![format!("message {i}")],
        })
        .collect();
    for p in &procedures {
        let times = 3 + rng.below(38);
        for _ in 0..times {
            let s = rng.below(n as u64) as usize;
            let at = rng.below(20 - p.len() as u64) as usize;
            for (k, &t) in p.iter().enumerate() {
                out[s].calls[at + k] = call(&mut rng, t);
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let s = sessions(10_000);
    let found = mine(&s, MineOptions::default());
    eprintln!(
        "10,000 sessions, 200,000 calls: {} patterns (support >= 3), {} contained",
        found.patterns.len(),
        found.contained.len()
    );
    let mut g = c.benchmark_group("dream");
    g.sample_size(10);
    g.bench_function("mine_10000_sessions", |b| {
        b.iter(|| mine(&s, MineOptions::default()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
