//! What the scanning gate adds to one write (issue 37: under 5 ms).
//!
//! `cargo bench -p skillbase-store --bench gate`: on a SQLite store of 10,000 skills (200 under
//! `cargo test --benches`), `scan_as_gate` (the gate's work: the index's names near the write's,
//! then the scan of its files) and a whole `put` of a new revision (validation, the gate, the
//! transaction, the index swap) for scale.

use criterion::Criterion;
use skillbase_format::Bundle;
use skillbase_store::{Author, DbUrl, PutRequest, Scope, Store};
use std::hint::black_box;

/// A SKILL.md of about 3 KB, like the store bench's: a procedure with a script block.
fn skill_md(name: &str, k: usize) -> String {
    let mut body = format!(
        "---\nname: {name}\ndescription: Handles case {k} of the billing flow. Use when asked about invoices, refunds or credit notes.\n---\n\n# {name}\n\n"
    );
    for i in 0..20 {
        body.push_str(&format!(
            "{i}. Read the customer's latest invoice, check the amount against the order, and write the result to the ticket before answering.\n"
        ));
    }
    body.push_str("\n```sh\ncurl -fsS https://api.example.com/v1/invoices/$ID -H \"Authorization: Bearer $TOKEN\"\n```\n");
    body
}

fn main() {
    let test_mode = std::env::args().any(|a| a == "--test");
    let n = if test_mode { 200 } else { 10_000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let tmp = tempfile::tempdir().expect("a temp dir");
    let store = rt.block_on(async {
        let store = Store::open(&DbUrl::Sqlite(tmp.path().join("gate.db")))
            .await
            .expect("open");
        let bundles: Vec<Bundle> = (0..n)
            .map(|i| Bundle::single(skill_md(&format!("billing-case-{i:05}"), i)).expect("a skill"))
            .collect();
        store
            .import(
                &Scope::Shared,
                bundles,
                &Author::Import("bench".into()),
                "bench",
                &|_| {},
            )
            .await
            .expect("import");
        store
    });
    let author = Author::Human("bench".into());
    let bundle = Bundle::single(skill_md("billing-case-00042", 1)).expect("a skill");
    let mut c = Criterion::default().configure_from_args();
    c.bench_function(&format!("gate/scan_as_gate/{n}"), |b| {
        b.iter(|| black_box(store.scan_as_gate(&bundle, &author).expect("scan")))
    });
    let mut k = 0usize;
    c.bench_function(&format!("gate/put_new_revision/{n}"), |b| {
        b.iter(|| {
            k += 1;
            let req = PutRequest {
                scope: Scope::Shared,
                bundle: Bundle::single(skill_md("billing-case-00042", 100 + k)).expect("a skill"),
                author: author.clone(),
                message: format!("edit {k}"),
                expect_rev: None,
                signature: None,
            };
            black_box(rt.block_on(store.put(req)).expect("put"))
        })
    });
    c.final_summary();
}
