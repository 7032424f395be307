//! Speed of a local sentence encoder (all-MiniLM-L6-v2 or multilingual-e5-small), on one core.
//!
//! Needs the model: `SKILLBASE_MODEL_DIR=DIR` (a folder `skillbase model pull` filled: the
//! all-MiniLM-L6-v2 one, or the multilingual-e5-small one); without it the benchmark says so and
//! measures nothing. `SKILLBASE_BENCH_EXACT=1` measures the f32 path instead of the quantized one.
//!
//! - `embed/2kb_max32`, `embed/2kb_max64`, `embed/2kb_max128`, `embed/2kb_max256`: a 2 KB chat
//!   message, truncated as the runtime does, to 32 (the runtime's default), 64, 128 and 256
//!   tokens.
//! - `embed/short_15_words`: a 15-word message (17 tokens).
//! - `embed/2kb_6_passages_packed`, `embed/2kb_6_passages_one_by_one`: the 2 KB message read as
//!   six passages of 32 words (as the runtime reads a long message), in one packed forward pass
//!   or one pass each.
//! - `load`: reading and preparing the model from disk (page cache warm).
//!
//! Printed before measuring (only under `cargo bench`, not `cargo test --benches`): the
//! p50/p90 of single 2 KB embeddings timed one by one for several token limits, and the time
//! to embed 1,000 generated skill texts (name, description and the first 100 words of the body, cut
//! at 128 word pieces as the runtime cuts them,
//! about 150 tokens each); `SKILLBASE_BENCH_SKILLS=N` changes the count (0 skips it).
//!
//! `SKILLBASE_BENCH_DUMP_IDS=FILE`: write the token ids of the three messages as JSON and exit
//! (to time another implementation on the same input).
//!
//! Run: `SKILLBASE_MODEL_DIR=/path/to/minilm cargo bench -p skillbase-embed`.

use criterion::Criterion;
use skillbase_embed::{Encoder, Precision, Role};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WORDS: &[&str] = &[
    "the",
    "service",
    "deploy",
    "release",
    "pipeline",
    "agent",
    "skill",
    "review",
    "pull",
    "request",
    "tests",
    "failing",
    "database",
    "migration",
    "schema",
    "index",
    "query",
    "latency",
    "cache",
    "token",
    "budget",
    "prompt",
    "context",
    "window",
    "summarise",
    "changes",
    "branch",
    "merge",
    "conflict",
    "rollback",
    "production",
    "staging",
    "metrics",
    "alert",
    "incident",
    "runbook",
    "customer",
    "invoice",
    "report",
    "weekly",
    "draft",
    "email",
    "calendar",
    "meeting",
    "notes",
    "design",
    "document",
    "api",
    "endpoint",
    "error",
    "retry",
    "timeout",
    "config",
    "secret",
    "vault",
    "credentials",
    "permissions",
    "user",
    "group",
    "scope",
    "and",
    "of",
    "to",
    "with",
    "for",
    "when",
    "then",
    "after",
    "before",
    "please",
    "could",
    "you",
    "check",
    "why",
];

/// Deterministic text of `n` words (xorshift over the word list), with some punctuation.
fn words(seed: u64, n: usize) -> String {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = String::new();
    for i in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if i > 0 {
            let comma = s.is_multiple_of(11);
            out.push(if comma { ',' } else { ' ' });
            if comma {
                out.push(' ');
            }
        }
        out.push_str(WORDS[(s >> 8) as usize % WORDS.len()]);
    }
    out.push('.');
    out
}

/// Word pieces of a skill text, as the runtime embeds them (`semantic::DOCUMENT_TOKENS`).
const DOCUMENT_TOKENS: usize = 128;

const SHORT: &str =
    "could you check why the weekly report email failed after the release this morning please";

fn message_2kb() -> String {
    let mut m = String::new();
    let mut seed = 1;
    while m.len() < 2048 {
        m.push_str(&words(seed, 12));
        m.push(' ');
        seed += 1;
    }
    m.truncate(2048);
    m
}

fn skill_text(i: u64) -> String {
    format!(
        "skill-{i}-{}\n{}\n{}",
        WORDS[i as usize % WORDS.len()],
        words(i * 3 + 1, 20),
        words(i * 3 + 2, 100)
    )
}

fn p(times: &mut [Duration], q: f64) -> f64 {
    times.sort();
    times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3
}

fn report(enc: &Encoder) {
    let msg = message_2kb();
    println!(
        "2 KB message: {} bytes, {} tokens untruncated",
        msg.len(),
        enc.tokenize(&msg, 512).len()
    );
    for max in [24, 32, 64, 96, 128, 192, 256] {
        let mut times: Vec<Duration> = (0..30)
            .map(|_| {
                let t = Instant::now();
                black_box(enc.embed_with_limit(&msg, max));
                t.elapsed()
            })
            .collect();
        println!(
            "  max_tokens {max:>3}: p50 {:6.2} ms  p90 {:6.2} ms",
            p(&mut times, 0.5),
            p(&mut times, 0.9)
        );
    }
    let n: u64 = std::env::var("SKILLBASE_BENCH_SKILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    if n > 0 {
        let texts: Vec<String> = (0..n).map(skill_text).collect();
        let tokens: usize = texts
            .iter()
            .map(|t| enc.tokenize_as(t, DOCUMENT_TOKENS, Role::Passage).len())
            .sum();
        let t = Instant::now();
        for text in &texts {
            black_box(enc.embed_as(text, DOCUMENT_TOKENS, Role::Passage));
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "index {n} skill texts ({:.0} tokens each on average): {secs:.1} s, {:.1} ms a skill",
            tokens as f64 / n as f64,
            secs * 1e3 / n as f64
        );
    }
}

fn benches(c: &mut Criterion, dir: &Path, enc: &Encoder, precision: Precision) {
    let msg = message_2kb();
    let mut g = c.benchmark_group("embed");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    g.bench_function("2kb_max32", |b| {
        b.iter(|| enc.embed_with_limit(black_box(&msg), 32))
    });
    g.bench_function("2kb_max64", |b| {
        b.iter(|| enc.embed_with_limit(black_box(&msg), 64))
    });
    g.bench_function("2kb_max128", |b| {
        b.iter(|| enc.embed_with_limit(black_box(&msg), 128))
    });
    g.bench_function("2kb_max256", |b| {
        b.iter(|| enc.embed_with_limit(black_box(&msg), 256))
    });
    g.bench_function("short_15_words", |b| b.iter(|| enc.embed(black_box(SHORT))));
    // A long message read as passages: six of 32 words, packed into one pass or one by one.
    let words: Vec<&str> = msg.split_whitespace().collect();
    let passages: Vec<String> = words.chunks(32).take(6).map(|w| w.join(" ")).collect();
    let passages: Vec<&str> = passages.iter().map(String::as_str).collect();
    g.bench_function("2kb_6_passages_packed", |b| {
        b.iter(|| enc.embed_many_as(black_box(&passages), 64, Role::Query))
    });
    g.bench_function("2kb_6_passages_one_by_one", |b| {
        b.iter(|| {
            passages
                .iter()
                .map(|p| enc.embed_as(black_box(p), 64, Role::Query))
                .collect::<Vec<_>>()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("load");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("model", |b| {
        b.iter(|| Encoder::load_with(black_box(dir), precision).unwrap())
    });
    g.finish();
}

fn main() {
    let Some(dir) = std::env::var_os("SKILLBASE_MODEL_DIR")
        .map(PathBuf::from)
        .filter(|d| Encoder::present(d))
    else {
        eprintln!(
            "skipped: set SKILLBASE_MODEL_DIR to a model folder `skillbase model pull` filled (all-MiniLM-L6-v2 or multilingual-e5-small) to run the encoder benchmarks"
        );
        return;
    };
    let precision = if std::env::var_os("SKILLBASE_BENCH_EXACT").is_some() {
        Precision::Exact
    } else {
        Precision::Fast
    };
    let t = Instant::now();
    let enc = Encoder::load_with(&dir, precision).expect("load the model");
    println!(
        "loaded {} in {:.0} ms",
        enc.model_id(),
        t.elapsed().as_secs_f64() * 1e3
    );
    if let Some(path) = std::env::var_os("SKILLBASE_BENCH_DUMP_IDS") {
        // The token ids measured here, for timing other implementations on the same input.
        let msg = message_2kb();
        let ids = |t: &str, max| {
            enc.tokenize(t, max)
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let json = format!(
            "{{\"2kb_max128\": [{}], \"2kb_max256\": [{}], \"short_15_words\": [{}]}}\n",
            ids(&msg, 128),
            ids(&msg, 256),
            ids(SHORT, 256)
        );
        std::fs::write(&path, json).expect("write the token ids");
        println!("wrote token ids to {}", PathBuf::from(path).display());
        return;
    }
    if std::env::args().any(|a| a == "--bench") {
        report(&enc);
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c, &dir, &enc, precision);
    c.final_summary();
}
