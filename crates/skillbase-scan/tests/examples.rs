//! The bundled example skills have no finding.

use skillbase_scan::{ScanContext, Scanner};
use std::path::{Path, PathBuf};

fn files_of(dir: &Path, root: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("readable")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            files_of(&p, root, out);
        } else {
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read(&p).expect("readable")));
        }
    }
}

/// Every file of a skill folder as (bundle path, bytes).
pub fn bundle(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    files_of(dir, dir, &mut out);
    out
}

#[test]
fn bundled_examples_are_clean() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/skills");
    let scanner = Scanner::new().expect("the built-in rules load");
    let mut seen = 0;
    for e in std::fs::read_dir(&root).expect("examples exist").flatten() {
        if !e.path().join("SKILL.md").is_file() {
            continue;
        }
        seen += 1;
        let r = scanner.scan_bundle(&bundle(&e.path()), &ScanContext::default());
        assert!(
            r.findings.is_empty(),
            "{}: {:#?}",
            e.path().display(),
            r.findings
        );
    }
    assert!(seen >= 5, "found {seen} examples");
}
