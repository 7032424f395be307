//! Scanning speed: skills per second on one core (issue 37's target: at least 2,000 over the
//! public pool).
//!
//! `cargo bench -p skillbase-scan` scans every skill folder under `SKILLBASE_SCAN_POOL` (the
//! public pool materialised by `../shared/benchmarks/skillrouter/build.py`'s `materialize`, see
//! BENCHMARKS.md), or the labelled corpus `eval/scan/` when the variable is unset. The files are
//! read into memory first; only scanning is timed.

use criterion::{Criterion, SamplingMode, Throughput};
use skillbase_scan::{ScanContext, Scanner};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

type Bundle = Vec<(String, Vec<u8>)>;

fn files_of(root: &Path, dir: &Path, out: &mut Bundle) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_of(root, &p, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            let rel = p
                .strip_prefix(root)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, bytes));
        }
    }
}

/// Every skill folder (a folder holding SKILL.md) under `root`, two levels deep at most.
fn skills(root: &Path) -> Vec<Bundle> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        if dir.join("SKILL.md").is_file() {
            let mut b = Vec::new();
            files_of(&dir, &dir, &mut b);
            out.push(b);
            continue;
        }
        if depth < 2
            && let Ok(entries) = std::fs::read_dir(&dir)
        {
            stack.extend(
                entries
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| (e.path(), depth + 1)),
            );
        }
    }
    out
}

fn main() {
    let root = std::env::var_os("SKILLBASE_SCAN_POOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../eval/scan"));
    let bundles = skills(&root);
    assert!(!bundles.is_empty(), "no skills under {}", root.display());
    let scanner = Scanner::new().expect("the built-in rules load");
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("scan");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements(bundles.len() as u64));
    g.bench_function(format!("{} skills", bundles.len()), |b| {
        b.iter(|| {
            for bundle in &bundles {
                black_box(scanner.scan_bundle(bundle, &ScanContext::default()));
            }
        })
    });
    g.finish();
    c.final_summary();
}
