//! A revision's scan findings, as the skill and approvals pages show them.

use crate::studio::html::esc;
use skillbase_store::scan::ScanRecord;
use std::fmt::Write as _;

/// Most findings listed in an approvals row (the skill's page lists them all).
const ROW_FINDINGS: usize = 3;

/// The verdict, what the gate did, and the findings (at most [`ROW_FINDINGS`] when `brief`).
pub(crate) fn findings(b: &mut String, scan: Option<&ScanRecord>, brief: bool) {
    let Some(s) = scan else {
        b.push_str("<span class=\"muted\">never scanned</span>");
        return;
    };
    let verdict = s.verdict.map_or("clean", |v| v.as_str());
    let _ = write!(
        b,
        "<span class=\"scan-verdict\"><strong>{verdict}</strong> ({} findings; on arrival: {})</span>",
        s.findings.len(),
        s.action
    );
    if s.findings.is_empty() {
        return;
    }
    b.push_str("<ul class=\"scan-findings\">");
    let shown = if brief { ROW_FINDINGS } else { usize::MAX };
    for f in s.findings.iter().take(shown) {
        let _ = write!(
            b,
            "<li><strong>{}</strong> {} <code>{}:{}</code>: <code>{}</code>",
            f.severity,
            esc(&f.rule),
            esc(&f.file),
            f.line,
            esc(&f.seen)
        );
        if !brief {
            let _ = write!(b, "<br>{} <em>Fix:</em> {}", esc(&f.why), esc(&f.fix));
        }
        b.push_str("</li>");
    }
    if s.findings.len() > shown {
        let _ = write!(
            b,
            "<li class=\"muted\">{} more</li>",
            s.findings.len() - shown
        );
    }
    b.push_str("</ul>");
}
