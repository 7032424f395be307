//! The reranker's cost: one message read with the first candidates' texts, as the rerank stage
//! reads them (`RERANK_TOKENS` = 96 word pieces a pair, packed into one forward pass), and at 160
//! word pieces, on one core.
//!
//! Needs the reranker: `SKILLBASE_RERANKER_DIR=DIR` (the ms-marco-MiniLM-L-12-v2 folder
//! `skillbase model pull` filled); without it the bench says so and measures nothing.
//!
//! Run: `SKILLBASE_RERANKER_DIR=~/.cache/skillbase/models/ms-marco-MiniLM-L-12-v2 cargo bench
//! -p skillbase-embed --bench rerank`.

use criterion::Criterion;
use skillbase_embed::Reranker;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Word pieces of a pair (the runtime's `RERANK_TOKENS`), and the longer pairs it was chosen
/// against.
const PAIR_TOKENS: [usize; 2] = [96, 160];

const MESSAGE: &str =
    "could you check why the weekly report email failed after the release this morning please";

/// A skill's rerank text: its name, a description and the opening of a body, about 90 words
/// (cut to the pair's budget as the runtime's are).
fn skill_text(i: usize) -> String {
    format!(
        "report job {i}: Sends the weekly report email to the team and retries a failed send. \
         Use when a scheduled report did not arrive. Open the scheduler, find the job run for \
         this week, read its log for the send step, check the mail provider's status page and \
         the bounce list, fix the recipient or credentials, then run the job again by hand and \
         confirm the email arrived. Record what failed in the job's notes so the next run is \
         watched, and tell the team in the channel once it is sent. Step {i} of the runbook."
    )
}

fn main() {
    let Some(dir) = std::env::var_os("SKILLBASE_RERANKER_DIR")
        .map(PathBuf::from)
        .filter(|d| Reranker::present(d))
    else {
        eprintln!(
            "skipped: set SKILLBASE_RERANKER_DIR to the reranker folder `skillbase model pull` filled (ms-marco-MiniLM-L-12-v2) to run the reranker benchmarks"
        );
        return;
    };
    let t = Instant::now();
    let r = Reranker::load(&dir).expect("load the reranker");
    println!(
        "loaded {} in {:.0} ms ({} MB of weights)",
        r.model_id(),
        t.elapsed().as_secs_f64() * 1e3,
        r.weight_bytes() >> 20
    );
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let texts: Vec<String> = (0..10).map(skill_text).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("rerank");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for tokens in PAIR_TOKENS {
        for k in [2usize, 5, 10] {
            g.bench_function(format!("{k}_candidates_{tokens}_tokens"), |b| {
                b.iter(|| r.score(black_box(MESSAGE), black_box(&texts[..k]), tokens))
            });
        }
    }
    g.finish();
    c.final_summary();
}
