//! The README's compatibility tables are the format crate's data ([`skillbase_format::compat`]):
//! this test fails when one changes without the other. `SKILLBASE_BLESS=1` rewrites the README's
//! tables from the data.

use skillbase_format::compat::{readme_keys_table, readme_targets_table};

const KEYS_START: &str = "<!-- compat:keys -->\n";
const TARGETS_START: &str = "<!-- compat:targets -->\n";
const END: &str = "<!-- /compat -->";

fn replaced(readme: &str, start: &str, table: &str) -> Option<String> {
    let a = readme.find(start)? + start.len();
    let b = a + readme[a..].find(END)?;
    Some(format!("{}{table}{}", &readme[..a], &readme[b..]))
}

#[test]
fn readme_tables_match_the_data() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let want = replaced(&readme, KEYS_START, &readme_keys_table())
        .and_then(|r| replaced(&r, TARGETS_START, &readme_targets_table()))
        .expect("the README marks both tables with <!-- compat:keys --> and <!-- compat:targets -->, each closed by <!-- /compat -->");
    if want != readme && std::env::var_os("SKILLBASE_BLESS").is_some() {
        std::fs::write(path, &want).expect("write README.md");
        return;
    }
    assert!(
        want == readme,
        "README.md's compatibility tables differ from skillbase_format::compat::KEYS; run with SKILLBASE_BLESS=1 to rewrite them"
    );
}
