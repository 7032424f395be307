//! The scanner over arbitrary bytes: as a SKILL.md, as a script beside it, and split into a
//! bundle of several files. Nothing may panic or hang, and every report is well formed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillbase_scan::{ScanContext, Scanner, Severity};
use std::sync::OnceLock;

fn scanner() -> &'static Scanner {
    static S: OnceLock<Scanner> = OnceLock::new();
    S.get_or_init(|| Scanner::new().expect("the built-in rules load"))
}

fuzz_target!(|data: &[u8]| {
    let names = vec!["refund-procedure".to_owned()];
    let ctx = ScanContext { other_skills: &names };
    let mid = data.len() / 2;
    let bundles: [Vec<(&str, &[u8])>; 3] = [
        vec![("SKILL.md", data)],
        vec![("SKILL.md", b"---\nname: x\ndescription: y\n---\n"), ("scripts/run.sh", data)],
        vec![("SKILL.md", &data[..mid]), ("references/a.md", &data[mid..])],
    ];
    for files in bundles {
        let r = scanner().scan_bundle(&files, &ctx);
        assert_eq!(r.verdict, r.findings.iter().map(|f| f.severity).max());
        for f in &r.findings {
            assert!(f.line > 0 || f.column == 0);
            assert!(f.seen.chars().count() <= 140, "{}", f.seen);
            assert!(f.severity >= Severity::Info);
        }
    }
});
