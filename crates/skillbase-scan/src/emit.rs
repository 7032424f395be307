//! Collecting findings: the code rules and the pattern rules write through [`Out`], which turns
//! byte offsets into lines and columns and excerpts into `seen`.

use crate::catalog::CodeRule;
use crate::excerpt::seen;
use crate::finding::{Finding, Severity, Unread};
use crate::source::Source;

/// Findings and unread files of one bundle, as they are found.
#[derive(Default)]
pub(crate) struct Out {
    pub findings: Vec<Finding>,
    pub unread: Vec<Unread>,
}

impl Out {
    /// A code rule's finding at byte `at` of `src`, showing `shown`.
    pub(crate) fn at(
        &mut self,
        rule: &CodeRule,
        severity: Severity,
        src: &Source<'_>,
        at: usize,
        shown: &str,
    ) {
        let (line, column) = src.position(at);
        self.findings.push(Finding {
            rule: rule.id.to_owned(),
            family: rule.family,
            severity,
            file: src.path.to_owned(),
            line,
            column,
            seen: seen(shown),
            why: rule.why.to_owned(),
            fix: rule.fix.to_owned(),
        });
    }

    /// A code rule's finding about a whole file (line 0).
    pub(crate) fn file(&mut self, rule: &CodeRule, severity: Severity, file: &str, shown: &str) {
        self.findings.push(Finding {
            rule: rule.id.to_owned(),
            family: rule.family,
            severity,
            file: file.to_owned(),
            line: 0,
            column: 0,
            seen: seen(shown),
            why: rule.why.to_owned(),
            fix: rule.fix.to_owned(),
        });
    }

    /// A file not read (or not whole): a finding of its own, and an entry in `unread`.
    pub(crate) fn unread(
        &mut self,
        rule: &CodeRule,
        severity: Severity,
        file: &str,
        reason: String,
    ) {
        self.file(rule, severity, file, &reason);
        self.unread.push(Unread {
            file: file.to_owned(),
            reason,
        });
    }
}
