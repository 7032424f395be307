//! Fixture builders both topics use: a SQLite store in a folder, a put request, a skill's text.

use skillbase_format::Bundle;
use skillbase_store::{Author, DbUrl, PutRequest, Scope, Store};
use std::path::{Path, PathBuf};

pub(crate) fn db_path(dir: &Path) -> PathBuf {
    dir.join("skillbase.db")
}

pub(crate) async fn open_store(path: &Path) -> Store {
    Store::open(&DbUrl::Sqlite(path.to_path_buf()))
        .await
        .unwrap()
}

/// The put of a test fixture: by a human, in `scope`, no precondition.
pub(crate) fn req(scope: Scope, bundle: Bundle) -> PutRequest {
    PutRequest {
        scope,
        bundle,
        author: Author::Human("tester".into()),
        message: "test".into(),
        expect_rev: None,
    }
}

pub(crate) fn text(name: &str, description: &str, frontmatter: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{frontmatter}---\n{body}\n")
}

/// The description of the test skills: says what `name` does and when to use it.
pub(crate) fn described(name: &str) -> String {
    format!("Does {name} things. Use when asked about {name}.")
}

pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}
