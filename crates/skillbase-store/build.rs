// PostgreSQL tests run when SKILLBASE_TEST_POSTGRES_URL is set at build time; otherwise they are
// compiled as ignored, so `cargo test` reports them as skipped instead of passing silently.
// The storage-fault tests mount a small tmpfs; they run where the build may mount (Linux with
// CAP_SYS_ADMIN, as root usually is) unless SKILLBASE_TEST_NO_MOUNT is set, and are compiled as
// ignored elsewhere. A mount refused at run time anyway says "skipped" on stderr.
/// Sets the `skillbase_pg` and `skillbase_mount` cfgs for the tests (see above).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(skillbase_pg)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_POSTGRES_URL");
    if std::env::var_os("SKILLBASE_TEST_POSTGRES_URL").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=skillbase_pg");
    }
    println!("cargo::rustc-check-cfg=cfg(skillbase_mount)");
    println!("cargo::rerun-if-env-changed=SKILLBASE_TEST_NO_MOUNT");
    if std::env::var_os("SKILLBASE_TEST_NO_MOUNT").is_none() && may_mount() {
        println!("cargo::rustc-cfg=skillbase_mount");
    }
}

/// CAP_SYS_ADMIN (bit 21) in this process's effective capabilities, on Linux.
fn may_mount() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 21) != 0)
}
