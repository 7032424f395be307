//! Benchmarks of the format library over many generated skills (issue 2, "Speed and memory").
//!
//! Run with `cargo bench -p skillbase-format`. The skills are generated into a temporary folder
//! before measuring, by a Rust port of `tools/bench/gen_skills.py` that produces byte-identical
//! trees (same Mersenne Twister stream as Python's `random.Random(42)`).
//!
//! Environment:
//! - `SKILLBASE_BENCH_N`: how many skills (default 10,000; 200 under `cargo test --benches`).
//! - `SKILLBASE_BENCH_GEN_DIR=DIR`: only generate the skills into DIR and exit (used to check the
//!   port against the Python generator with `diff -r`).
//!
//! See BENCHMARKS.md at the repository root for figures and the whole-process measurements.

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use skillbase_format::bundle::{Bundle, BundleLimits};
use skillbase_format::discover::{Found, discover};
use skillbase_format::prompt;
use skillbase_format::validate::{Profile, ValidateOptions, validate_dir};
use skillbase_format::yaml::YamlLimits;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Python's random.Random (MT19937, seeded like CPython's `random.seed(int)`).

struct PyRandom {
    mt: [u32; 624],
    index: usize,
}

impl PyRandom {
    fn new(seed: u32) -> Self {
        let mut r = PyRandom {
            mt: [0; 624],
            index: 624,
        };
        r.init_by_array(&[seed]);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..624 {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        self.index = 624;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..624.max(key.len()) {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                self.mt[0] = self.mt[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..623 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                self.mt[0] = self.mt[623];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.mt[k] = self.mt[(k + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`.
    fn random(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `_randbelow_with_getrandbits(n)` for 0 < n < 2^32.
    fn below(&mut self, n: usize) -> usize {
        let k = usize::BITS - n.leading_zeros();
        loop {
            let r = (self.next_u32() >> (32 - k)) as usize;
            if r < n {
                return r;
            }
        }
    }

    /// `random.randint(a, b)`.
    fn randint(&mut self, a: usize, b: usize) -> usize {
        a + self.below(b - a + 1)
    }

    /// `random.choice(seq)`.
    fn choice<'a>(&mut self, seq: &[&'a str]) -> &'a str {
        seq[self.below(seq.len())]
    }
}

// ---------------------------------------------------------------------------------------------
// Port of tools/bench/gen_skills.py (research note agentskills.md, Appendix A).

const NOUNS: &[&str] = &[
    "pdf",
    "csv",
    "invoice",
    "release",
    "incident",
    "schema",
    "api",
    "report",
    "chart",
    "image",
    "audio",
    "log",
    "contract",
    "ticket",
    "backup",
    "sql",
    "docker",
    "terraform",
    "k8s",
    "email",
];
const VERBS: &[&str] = &[
    "processing",
    "review",
    "triage",
    "migration",
    "analysis",
    "export",
    "audit",
    "cleanup",
    "rollout",
    "summary",
    "validation",
    "deploy",
];
const WORDS: &str = "the agent should check inputs before running any command and prefer idempotent operations \
when editing files keep a backup and verify the result with the bundled validator script \
always report what changed including file paths and counts and stop on the first hard error";

struct Gen {
    rng: PyRandom,
    words: Vec<&'static str>,
}

/// Python's `str.capitalize()` for ASCII text.
fn capitalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        if i == 0 {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Python's `str.title()` for ASCII text (a letter after a non-letter is upper-cased).
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for c in s.chars() {
        if c.is_ascii_alphabetic() {
            out.push(if prev_cased {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            });
            prev_cased = true;
        } else {
            out.push(c);
            prev_cased = false;
        }
    }
    out
}

impl Gen {
    fn new() -> Self {
        Gen {
            rng: PyRandom::new(42),
            words: WORDS.split_whitespace().collect(),
        }
    }

    fn sentence(&mut self, k: usize) -> String {
        let picked: Vec<&str> = (0..k).map(|_| self.rng.choice(&self.words)).collect();
        capitalize(&picked.join(" ")) + "."
    }

    fn body(&mut self, name: &str, target: usize) -> String {
        let mut parts = vec![
            format!("# {}\n", title(&name.replace('-', " "))),
            "## When to use this skill\n".to_owned(),
        ];
        let (a, b) = (self.sentence(18), self.sentence(14));
        parts.push(format!("{a} {b}\n"));
        let mut step = 1;
        while parts.iter().map(|p| p.chars().count()).sum::<usize>() < target {
            let r = self.rng.random();
            if r < 0.35 {
                parts.push(format!("## Step {step}\n"));
                step += 1;
                let end = self.rng.randint(3, 7);
                let lines: Vec<String> = (1..end)
                    .map(|i| {
                        let k = self.rng.randint(8, 16);
                        format!("{i}. {}", self.sentence(k))
                    })
                    .collect();
                parts.push(lines.join("\n") + "\n");
            } else if r < 0.55 {
                parts.push(
                    "```bash\npython scripts/run.py --input data/input.json --out out/ --verbose\n```\n"
                        .to_owned(),
                );
            } else if r < 0.7 {
                let lines: Vec<String> = (0..3)
                    .map(|_| {
                        let k = self.rng.randint(10, 20);
                        format!("- {}", self.sentence(k))
                    })
                    .collect();
                parts.push("## Gotchas\n".to_owned() + &lines.join("\n") + "\n");
            } else if r < 0.8 {
                parts.push("See [the reference guide](references/REFERENCE.md) for details, and use the template in `assets/template.md`.\n".to_owned());
            } else {
                let k1 = self.rng.randint(20, 40);
                let s1 = self.sentence(k1);
                let k2 = self.rng.randint(10, 30);
                let s2 = self.sentence(k2);
                parts.push(format!("{s1} {s2}\n"));
            }
        }
        parts.join("\n")
    }

    fn skill(&mut self, out: &Path, i: usize) -> std::io::Result<()> {
        let name = format!(
            "{}-{}-{i:04}",
            self.rng.choice(NOUNS),
            self.rng.choice(VERBS)
        );
        let d = out.join(&name);
        std::fs::create_dir_all(&d)?;
        let k = self.rng.randint(10, 25);
        let s = self.sentence(k);
        let desc = format!(
            "{s} Use when the user mentions {} {} or asks for {} files.",
            self.rng.choice(NOUNS),
            self.rng.choice(VERBS),
            self.rng.choice(NOUNS)
        );
        let mut fm = vec![format!("name: {name}"), format!("description: {desc}")];
        if self.rng.random() < 0.6 {
            let lic = self.rng.choice(&[
                "Apache-2.0",
                "MIT",
                "Proprietary. LICENSE.txt has complete terms",
            ]);
            fm.push(format!("license: {lic}"));
        }
        if self.rng.random() < 0.15 {
            fm.push("compatibility: Requires Python 3.11+, git and network access".to_owned());
        }
        if self.rng.random() < 0.15 {
            fm.push("allowed-tools: Bash(git:*) Bash(jq:*) Read".to_owned());
        }
        if self.rng.random() < 0.5 {
            fm.push("metadata:".to_owned());
            fm.push("  author: example-org".to_owned());
            fm.push(format!("  version: \"1.{}\"", i % 7));
        }
        let target = self.rng.randint(1800, 4500);
        let body = self.body(&name, target);
        let text = format!("---\n{}\n---\n\n{body}", fm.join("\n"));
        std::fs::write(d.join("SKILL.md"), text)?;
        if self.rng.random() < 0.3 {
            std::fs::create_dir_all(d.join("scripts"))?;
            std::fs::write(d.join("scripts/run.py"), "print('ok')\n")?;
        }
        if self.rng.random() < 0.3 {
            std::fs::create_dir_all(d.join("references"))?;
            let s = self.sentence(30);
            std::fs::write(
                d.join("references/REFERENCE.md"),
                format!("# Reference\n\n{s}\n"),
            )?;
        }
        Ok(())
    }
}

/// Generate `n` skill folders under `out`, exactly as `python3 tools/bench/gen_skills.py out n`.
fn generate(out: &Path, n: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let mut g = Gen::new();
    for i in 0..n {
        g.skill(out, i)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Benchmarks.

/// Run `f` over `items` on all cores, keeping order (the same scheme as the CLI's `validate`).
fn run_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    if threads <= 1 || items.len() < 16 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Like [`run_parallel`], but threads take batches of 64 items in turn, so a thread slowed by a
/// busy machine does not hold up the others.
fn run_parallel_batched<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const BATCH: usize = 64;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().div_ceil(BATCH));
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut batches: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let start = next.fetch_add(BATCH, Ordering::Relaxed);
                        if start >= items.len() {
                            break out;
                        }
                        let end = (start + BATCH).min(items.len());
                        out.push((start, items[start..end].iter().map(&f).collect()));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    batches.sort_unstable_by_key(|(start, _)| *start);
    batches.into_iter().flat_map(|(_, v)| v).collect()
}

fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    match discover(root) {
        Found::Skills(d) => d,
        other => panic!("no skills generated under {}: {other:?}", root.display()),
    }
}

fn benches(c: &mut Criterion, root: &Path, dirs: &[PathBuf]) {
    let n = dirs.len();
    let skillbase = ValidateOptions::default();
    let spec = ValidateOptions {
        profile: Profile::Spec,
        ..ValidateOptions::default()
    };
    let yaml = YamlLimits::default();
    let limits = BundleLimits::default();

    // Sanity checks once, outside the measurements.
    for opts in [&skillbase, &spec] {
        let bad: Vec<_> = dirs
            .iter()
            .map(|d| (d, validate_dir(d, opts)))
            .filter(|(_, r)| !r.is_valid() || r.warnings().next().is_some())
            .take(3)
            .map(|(d, r)| (d.clone(), r.diagnostics))
            .collect();
        assert!(bad.is_empty(), "generated skills not clean: {bad:?}");
    }
    assert!(prompt::to_prompt(dirs, &yaml).is_ok());

    let mut g = c.benchmark_group("format");
    g.throughput(Throughput::Elements(n as u64));
    // Each iteration takes tens to hundreds of milliseconds: equal-size samples, not the linear
    // ramp (which would need 55 iterations for 10 samples).
    g.sampling_mode(SamplingMode::Flat);

    g.bench_function(BenchmarkId::new("discover", n), |b| {
        b.iter(|| black_box(skill_dirs(root)))
    });
    g.bench_function(BenchmarkId::new("validate_skillbase_seq", n), |b| {
        b.iter(|| {
            let ok = dirs
                .iter()
                .filter(|d| validate_dir(d, &skillbase).is_valid())
                .count();
            black_box(ok)
        })
    });
    g.bench_function(BenchmarkId::new("validate_spec_seq", n), |b| {
        b.iter(|| {
            let ok = dirs
                .iter()
                .filter(|d| validate_dir(d, &spec).is_valid())
                .count();
            black_box(ok)
        })
    });
    g.bench_function(BenchmarkId::new("validate_skillbase_par", n), |b| {
        b.iter(|| black_box(run_parallel(dirs, |d| validate_dir(d, &skillbase))))
    });
    g.bench_function(BenchmarkId::new("validate_skillbase_par_batched", n), |b| {
        b.iter(|| black_box(run_parallel_batched(dirs, |d| validate_dir(d, &skillbase))))
    });
    g.bench_function(BenchmarkId::new("discover_validate_par", n), |b| {
        b.iter(|| {
            let dirs = skill_dirs(root);
            black_box(run_parallel(&dirs, |d| validate_dir(d, &skillbase)))
        })
    });
    g.bench_function(BenchmarkId::new("to_prompt", n), |b| {
        b.iter(|| black_box(prompt::to_prompt(dirs, &yaml).unwrap().len()))
    });
    g.bench_function(BenchmarkId::new("bundle_from_dir_seq", n), |b| {
        b.iter(|| {
            let bytes: u64 = dirs
                .iter()
                .map(|d| Bundle::from_dir(d, &limits).unwrap().total_bytes())
                .sum();
            black_box(bytes)
        })
    });
    g.bench_function(BenchmarkId::new("bundle_from_dir_par", n), |b| {
        b.iter(|| {
            black_box(run_parallel(dirs, |d| {
                Bundle::from_dir(d, &limits).unwrap().digest()
            }))
        })
    });
    g.finish();
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
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("skills");
    let started = std::time::Instant::now();
    generate(&root, n).expect("generate skills");
    let dirs = skill_dirs(&root);
    assert_eq!(dirs.len(), n);
    eprintln!(
        "generated {n} skills in {} in {:.1?}",
        root.display(),
        started.elapsed()
    );

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    benches(&mut c, &root, &dirs);
    c.final_summary();
    drop(tmp);
}
