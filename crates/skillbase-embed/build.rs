// Tests that need outside data (the model's weights, the reference's extended outputs) run when
// the variable naming it is set at build time; otherwise they are compiled as ignored, so
// `cargo test` reports them as skipped instead of passing silently (as the store's PostgreSQL
// tests).
/// Sets the `skillbase_model`, `skillbase_e5`, `skillbase_reranker`, `skillbase_bge`,
/// `skillbase_extended` and `skillbase_sweep` cfgs
/// (see above).
fn main() {
    for (var, cfg) in [
        ("SKILLBASE_TEST_MODEL_DIR", "skillbase_model"),
        ("SKILLBASE_TEST_E5_DIR", "skillbase_e5"),
        ("SKILLBASE_TEST_RERANKER_DIR", "skillbase_reranker"),
        ("SKILLBASE_TEST_BGE_DIR", "skillbase_bge"),
        ("SKILLBASE_TEST_EXTENDED", "skillbase_extended"),
        ("SKILLBASE_TEST_TOKEN_SWEEP", "skillbase_sweep"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={var}");
        if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
