// The reference's upstream test cases are public data kept outside the repository
// (`../shared/benchmarks/agentskills-upstream`, or SKILLBASE_UPSTREAM_CASES). When the folder is
// found at build time the tests that read it run; otherwise they are compiled as ignored, so
// `cargo test` reports them as skipped instead of passing silently.
/// Sets the `skillbase_upstream_cases` cfg and the folder's path for the tests.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(skillbase_upstream_cases)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_UPSTREAM_CASES");
    let dir = std::env::var("SKILLBASE_UPSTREAM_CASES").unwrap_or_else(|_| {
        format!(
            "{}/../../../shared/benchmarks/agentskills-upstream",
            std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()
        )
    });
    if std::path::Path::new(&dir).is_dir() {
        println!("cargo::rustc-cfg=skillbase_upstream_cases");
    }
    println!("cargo::rustc-env=SKILLBASE_UPSTREAM_CASES_DIR={dir}");
}
