// The tests that need the local encoders' weights run when SKILLBASE_TEST_MODEL_DIR (the English
// model), SKILLBASE_TEST_E5_DIR (the multilingual one) and SKILLBASE_TEST_BGE_DIR (bge) are set at build time; otherwise they
// are compiled as ignored, so `cargo test` reports them as skipped instead of passing silently
// (as the store's PostgreSQL tests).
/// Sets the `skillbase_model`, `skillbase_e5`, `skillbase_reranker` and `skillbase_bge` cfgs
/// (see above).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(skillbase_model)");
    // The gateway's tests against real MCP servers: the folder `.ci/upstreams` installs them in.
    println!("cargo::rustc-check-cfg=cfg(skillbase_upstreams)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_UPSTREAMS");
    if std::env::var_os("SKILLBASE_TEST_UPSTREAMS").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_upstreams");
    }
    println!("cargo::rustc-check-cfg=cfg(skillbase_e5)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_E5_DIR");
    if std::env::var_os("SKILLBASE_TEST_E5_DIR").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_e5");
    }
    println!("cargo::rustc-check-cfg=cfg(skillbase_reranker)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_RERANKER_DIR");
    if std::env::var_os("SKILLBASE_TEST_RERANKER_DIR").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_reranker");
    }
    println!("cargo::rustc-check-cfg=cfg(skillbase_bge)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_BGE_DIR");
    if std::env::var_os("SKILLBASE_TEST_BGE_DIR").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_bge");
    }
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_MODEL_DIR");
    if std::env::var_os("SKILLBASE_TEST_MODEL_DIR").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_model");
    }
}
