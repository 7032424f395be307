//! The `skillbase` binary and what every test file builds around it: the command, isolated from
//! the environment of whoever runs the tests, what it did, and skill text.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_skillbase");
pub(crate) const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skills");

/// The binary on database `db`, run in `dir`, with no database, configuration or vault key from
/// the environment, `dir/home` as its home and `tester` as the user.
pub(crate) fn skillbase(db: impl AsRef<OsStr>, dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--db")
        .arg(db)
        .current_dir(dir)
        .env_remove("SKILLBASE_DB")
        .env_remove("SKILLBASE_CONFIG")
        .env_remove("SKILLBASE_VAULT_KEY")
        .env("SKILLBASE_HOME", dir.join("home"))
        .env("USER", "tester")
        .env("RUST_BACKTRACE", "0");
    c
}

/// What a command did.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// A SKILL.md for `name` with extra `frontmatter` lines and `body`.
pub(crate) fn skill_md(name: &str, frontmatter: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Does {name} things. Use when asked about {name}.\n{frontmatter}---\n{body}\n"
    )
}

pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}
