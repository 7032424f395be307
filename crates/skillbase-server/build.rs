// PostgreSQL tests run when SKILLBASE_TEST_POSTGRES_URL is set at build time; otherwise they are
// compiled as ignored, so `cargo test` reports them as skipped instead of passing silently.
/// Sets the `skillbase_pg` cfg for the PostgreSQL tests (see above), and `skillbase_browser`
/// for the studio's browser tests.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(skillbase_pg)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_POSTGRES_URL");
    if std::env::var_os("SKILLBASE_TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_pg");
    }
    // The studio's browser tests, the same way: run when a chromedriver is named.
    println!("cargo::rustc-check-cfg=cfg(skillbase_browser)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_CHROMEDRIVER");
    if std::env::var_os("SKILLBASE_TEST_CHROMEDRIVER").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_browser");
    }
}
