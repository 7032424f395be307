//! Unified diffs between two revisions, file by file.

use similar::TextDiff;
use skillbase_format::Bundle;
use std::collections::BTreeSet;

/// A unified diff of every file that differs between `left` (revision `a`) and `right` (`b`).
/// Empty when the bundles are identical.
pub fn unified(left: &Bundle, right: &Bundle, a: i64, b: i64) -> String {
    let paths: BTreeSet<&str> = left
        .files()
        .iter()
        .chain(right.files())
        .map(|f| f.path.as_str())
        .collect();
    let mut out = String::new();
    for path in paths {
        let l = left.get(path);
        let r = right.get(path);
        if let (Some(l), Some(r)) = (l, r)
            && l.digest == r.digest
        {
            continue;
        }
        let text = |f: Option<&skillbase_format::BundleFile>| -> Option<String> {
            match f {
                None => Some(String::new()),
                Some(f) => std::str::from_utf8(&f.bytes).ok().map(str::to_owned),
            }
        };
        let old_name = if l.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".into()
        };
        let new_name = if r.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".into()
        };
        match (text(l), text(r)) {
            (Some(lt), Some(rt)) => {
                let diff = TextDiff::from_lines(&lt, &rt);
                out.push_str(&format!("diff --skillbase {path} (rev {a} -> rev {b})\n"));
                out.push_str(
                    &diff
                        .unified_diff()
                        .context_radius(3)
                        .header(&old_name, &new_name)
                        .to_string(),
                );
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            _ => out.push_str(&format!(
                "diff --skillbase {path} (rev {a} -> rev {b})\nBinary files {old_name} and {new_name} differ\n"
            )),
        }
    }
    out
}
