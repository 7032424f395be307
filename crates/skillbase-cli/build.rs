// PostgreSQL tests run when SKILLBASE_TEST_POSTGRES_URL is set at build time; otherwise they are
// compiled as ignored, so `cargo test` reports them as skipped instead of passing silently. The
// same for the test that runs the real gemini-cli on a synced folder (SKILLBASE_TEST_GEMINI_CLI,
// which `.ci/gemini-cli` prints).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(skillbase_pg)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_POSTGRES_URL");
    if std::env::var_os("SKILLBASE_TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_pg");
    }
    println!("cargo::rustc-check-cfg=cfg(skillbase_gemini)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_GEMINI_CLI");
    if std::env::var_os("SKILLBASE_TEST_GEMINI_CLI").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_gemini");
    }
}
