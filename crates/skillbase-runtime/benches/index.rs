//! Speed of a first semantic index (issue 36): every skill of a library through the runtime's
//! indexing path, `Engine::warm_semantic` (skill texts, both local encoders on every core, the
//! vectors stored), then the cost of one batch of skill texts.
//!
//! Needs the models `skillbase model pull` installs: `SKILLBASE_MODEL_DIR` (all-MiniLM-L6-v2;
//! multilingual-e5-small beside it); without them the bench says so and measures nothing.
//!
//! - Printed before measuring (only under `cargo bench`): the first index of the library, in
//!   skills a second (wall) and CPU milliseconds per skill (Linux: the process's user and system
//!   time). The library is `SKILLBASE_BENCH_SKILLS_DIR` (a folder of skill folders, e.g. the
//!   SkillRouter pool's `build.materialize`), else `SKILLBASE_BENCH_SKILLS` generated skills
//!   (default 500; 0 skips it).
//! - `index/batch32`: one batch of 32 generated skill texts through the local embedder, as a
//!   first index gives them (`Purpose::Document`, every core).
//!
//! `SKILLBASE_BENCH_MODELS` lists the models (`[semantic] models`, comma-separated, e.g.
//! `all-MiniLM-L6-v2,bge-small-en-v1.5,multilingual-e5-small`); default the pair.
//!
//! Run: `SKILLBASE_MODEL_DIR=DIR cargo bench -p skillbase-runtime --bench index`.

use criterion::Criterion;
use skillbase_runtime::Engine;
use skillbase_runtime::{Embedder, LocalEmbedder, Purpose, SemanticConfig};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

const WORDS: &[&str] = &[
    "deploy",
    "release",
    "pipeline",
    "review",
    "tests",
    "database",
    "migration",
    "schema",
    "query",
    "latency",
    "cache",
    "budget",
    "prompt",
    "branch",
    "merge",
    "rollback",
    "metrics",
    "alert",
    "incident",
    "runbook",
    "customer",
    "invoice",
    "report",
    "calendar",
    "meeting",
    "design",
    "document",
    "endpoint",
    "error",
    "retry",
    "timeout",
    "config",
    "the",
    "and",
    "to",
    "with",
    "for",
    "when",
    "then",
    "after",
    "before",
    "check",
];

/// Deterministic text of `n` words (xorshift over the word list).
fn words(seed: u64, n: usize) -> String {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.push(WORDS[(s >> 8) as usize % WORDS.len()]);
    }
    out.join(" ")
}

/// `n` generated skill folders under `dir`: a description of 20 words, a body of 150.
fn generate(dir: &Path, n: u64) -> std::io::Result<()> {
    for i in 0..n {
        let name = format!("skill-{i}-{}", WORDS[i as usize % WORDS.len()]);
        let folder = dir.join(&name);
        std::fs::create_dir_all(&folder)?;
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: {}.\n---\n\n# Steps\n\n{}.\n",
                words(i * 3 + 1, 20),
                words(i * 3 + 2, 150)
            ),
        )?;
    }
    Ok(())
}

/// CPU seconds this process has used (user + system), where Linux says.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The `[semantic]` table: the local encoders, those `SKILLBASE_BENCH_MODELS` lists if set.
fn semantic_table() -> String {
    let mut t = "embedder = \"local\"\n".to_owned();
    if let Ok(models) = std::env::var("SKILLBASE_BENCH_MODELS") {
        let list: Vec<String> = models
            .split(',')
            .map(|m| format!("{:?}", m.trim()))
            .collect();
        t.push_str(&format!("models = [{}]\n", list.join(", ")));
    }
    t
}

/// The first index of the library at `skills` (a folder of skill folders), printed.
async fn first_index(skills: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder()
        .sqlite(dir.path().join("index.db"))
        .workspace(dir.path().join("workspaces"))
        .config_toml(format!(
            "[semantic]\n{}[agents.bench]\nskills = \"all\"\n",
            semantic_table()
        ))
        .seed(skills)
        .build()
        .await?;
    let agent = "bench".parse()?;
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let report = engine
        .warm_semantic(&agent)
        .await?
        .ok_or("no semantic stage")?;
    let secs = t0.elapsed().as_secs_f64();
    if let Some(why) = report.failed {
        return Err(why.into());
    }
    let n = report.computed.max(1) as f64;
    let cpu = match (cpu0, cpu_seconds()) {
        (Some(a), Some(b)) => format!("{:.1} ms of CPU a skill", (b - a) * 1e3 / n),
        _ => "CPU time unknown".into(),
    };
    println!(
        "first index of {} skills: {secs:.1} s, {:.0} skills/s, {cpu}",
        report.computed,
        n / secs
    );
    Ok(())
}

fn main() {
    let Some(dir) = std::env::var_os("SKILLBASE_MODEL_DIR").map(PathBuf::from) else {
        eprintln!("set SKILLBASE_MODEL_DIR to the all-MiniLM-L6-v2 folder to run this benchmark");
        return;
    };
    if !skillbase_embed::Encoder::present(&dir) {
        eprintln!("no model at {}: run `skillbase model pull`", dir.display());
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let benching = std::env::args().any(|a| a == "--bench");
    let generated = tempfile::tempdir().expect("a temporary folder");
    if benching {
        let library = match std::env::var_os("SKILLBASE_BENCH_SKILLS_DIR") {
            Some(d) => Some(PathBuf::from(d)),
            None => {
                let n: u64 = std::env::var("SKILLBASE_BENCH_SKILLS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(500);
                (n > 0).then(|| {
                    generate(generated.path(), n).expect("generated skills written");
                    generated.path().to_path_buf()
                })
            }
        };
        if let Some(library) = library
            && let Err(e) = rt.block_on(first_index(&library))
        {
            eprintln!("first index: {e}");
        }
    }
    let table: toml::Table = semantic_table().parse().expect("a table");
    let config = SemanticConfig::from_table(&table).expect("a [semantic] table");
    let embedder = LocalEmbedder::from_config(&config).expect("the local encoders");
    let texts: Vec<String> = (0..32)
        .map(|i| {
            format!(
                "skill {i}: {}.\n{}",
                words(i * 3 + 1, 20),
                words(i * 3 + 2, 120)
            )
        })
        .collect();
    let mut c = Criterion::default().configure_from_args().sample_size(10);
    c.bench_function("index/batch32", |b| {
        b.iter(|| {
            let v = rt
                .block_on(embedder.embed(&texts, Purpose::Document))
                .expect("vectors");
            black_box(v)
        })
    });
    c.final_summary();
}
