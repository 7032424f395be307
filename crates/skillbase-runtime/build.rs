// The tests that need the local encoder's weights run when SKILLBASE_TEST_MODEL_DIR is set at
// build time; otherwise they are compiled as ignored, so `cargo test` reports them as skipped
// instead of passing silently (as the store's PostgreSQL tests).
/// Sets the `skillbase_model` cfg (see above).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(skillbase_model)");
    // The gateway's tests against real MCP servers: the folder `.ci/upstreams` installs them in.
    println!("cargo::rustc-check-cfg=cfg(skillbase_upstreams)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_UPSTREAMS");
    if std::env::var_os("SKILLBASE_TEST_UPSTREAMS").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_upstreams");
    }
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_MODEL_DIR");
    if std::env::var_os("SKILLBASE_TEST_MODEL_DIR").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_model");
    }
}
