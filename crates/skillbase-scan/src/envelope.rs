//! Envelope consistency, what only a skills store can check: the hosts, vault entries and tool
//! classes a skill's body and scripts use against what its `capabilities` declare, and a grant
//! (`allowed-tools`) far wider than the task its description states.

use crate::catalog::{
    ENVELOPE_UNDECLARED_HOST, ENVELOPE_UNDECLARED_TOOL, ENVELOPE_UNDECLARED_VAULT,
    ENVELOPE_WIDE_SHELL,
};
use crate::emit::Out;
use crate::finding::Severity;
use crate::source::{Kind, Source};
use regex::Regex;
use skillbase_format::SkillMeta;
use std::ops::Range;

/// Where a file uses hosts, vault entries and tools.
#[derive(Default)]
pub(crate) struct Uses {
    /// (file, line, column, host)
    hosts: Vec<(String, usize, usize, String)>,
    vault: Vec<(String, usize, usize, String)>,
    tools: Vec<(String, usize, usize, &'static str)>,
    /// Whether any file is a script, or the Markdown holds code.
    pub has_code: bool,
}

/// The patterns, compiled once per scanner.
pub(crate) struct Envelope {
    fetch_verb: Regex,
    vault_ref: Regex,
    tool_call: Regex,
    text_task: Regex,
    code_task: Regex,
}

/// Hosts that never leave the machine.
const LOCAL: &[&str] = &["localhost", "127.0.0.1", "0.0.0.0", "[::1]", "::1"];

impl Envelope {
    pub(crate) fn new() -> Envelope {
        let re = |p: &str| Regex::new(p).expect("a fixed pattern");
        Envelope {
            fetch_verb: re(
                r"(?i)\b(curl|wget|web_fetch|fetch|requests\.\w+|httpx\.\w+|axios|Invoke-WebRequest|Invoke-RestMethod|http\s+(get|post|put)|POST|PUT|urlopen|nc|ncat)\b",
            ),
            vault_ref: re(
                r#"(?i)(\bvault(?:\s+entry|\s+entries|\s+key)?\s*[:=]?\s*[`'"]?|\bcredential["']?\s*[:=]\s*["'`])(?-i:([A-Z][A-Z0-9_]{2,63}))\b"#,
            ),
            tool_call: re(r"\b(web_fetch|take_note|revise_notes)\b"),
            text_task: re(
                r"(?i)\b(write|writes|writing|draft|drafts|summari[sz]e|translat\w*|proofread\w*|rewrit\w*|poem|story|stories|essay|blog|caption|letter|tone|grammar|copywrit\w*|brainstorm\w*|outline)\b",
            ),
            code_task: re(
                r"(?i)\b(code|script|command|cli|terminal|shell|git|build|deploy|install|test|file|files|repo|repository|docker|npm|python|bash|server|api|database|sql|debug|compile|run)\b",
            ),
        }
    }

    /// Record what `src` uses. `hosts` are the hosts of its URLs (from [`crate::hidden`]).
    pub(crate) fn collect(
        &self,
        src: &Source<'_>,
        hosts: &[(Range<usize>, &str)],
        has_code_block: bool,
        uses: &mut Uses,
    ) {
        let script = src.kind != Kind::Markdown;
        uses.has_code |= script;
        let mut last_line = usize::MAX;
        for (range, host) in hosts {
            let line = src.line_of(range.start);
            if line == last_line || LOCAL.contains(host) {
                continue;
            }
            last_line = line;
            if script || self.fetch_verb.is_match(src.line_text(line)) {
                let (l, c) = src.position(range.start);
                uses.hosts
                    .push((src.path.to_owned(), l, c, host.to_ascii_lowercase()));
            }
        }
        for c in self.vault_ref.captures_iter(src.text).take(32) {
            if let Some(m) = c.get(2) {
                let (l, col) = src.position(m.start());
                uses.vault
                    .push((src.path.to_owned(), l, col, m.as_str().to_owned()));
            }
        }
        if src.kind == Kind::Markdown {
            for m in self.tool_call.find_iter(src.text).take(32) {
                let class = if m.as_str() == "web_fetch" {
                    "web_fetch"
                } else {
                    "notes"
                };
                let (l, col) = src.position(m.start());
                uses.tools.push((src.path.to_owned(), l, col, class));
            }
            uses.has_code |= has_code_block;
        }
    }

    /// Findings for `meta` against `uses`.
    pub(crate) fn check(&self, meta: &SkillMeta, uses: &Uses, out: &mut Out) {
        let caps = &meta.capabilities;
        if !caps.is_empty() {
            let mut reported: Vec<&str> = Vec::new();
            for (file, line, col, host) in &uses.hosts {
                if !declared_host(host, &caps.hosts) && !reported.contains(&host.as_str()) {
                    reported.push(host);
                    push(
                        out,
                        &ENVELOPE_UNDECLARED_HOST,
                        Severity::High,
                        file,
                        *line,
                        *col,
                        host,
                    );
                }
            }
            for (file, line, col, name) in &uses.vault {
                if !caps.vault.iter().any(|v| v == name) && !reported.contains(&name.as_str()) {
                    reported.push(name);
                    push(
                        out,
                        &ENVELOPE_UNDECLARED_VAULT,
                        Severity::High,
                        file,
                        *line,
                        *col,
                        name,
                    );
                }
            }
            for (file, line, col, class) in &uses.tools {
                if !caps.tools.iter().any(|t| t == class) && !reported.contains(class) {
                    reported.push(class);
                    push(
                        out,
                        &ENVELOPE_UNDECLARED_TOOL,
                        Severity::Medium,
                        file,
                        *line,
                        *col,
                        class,
                    );
                }
            }
        }
        self.wide_shell(meta, uses, out);
    }

    /// An unrestricted shell granted to a skill with no code whose description is about text.
    fn wide_shell(&self, meta: &SkillMeta, uses: &Uses, out: &mut Out) {
        let allowed = meta.allowed_tools.as_deref().unwrap_or("");
        let unrestricted = allowed
            .split(|c: char| c == ',' || c.is_whitespace())
            .any(|t| matches!(t, "Bash" | "Bash(*)" | "Bash(*:*)" | "Shell" | "shell"))
            || meta
                .capabilities
                .tools
                .iter()
                .any(|t| matches!(t.as_str(), "shell" | "bash" | "exec" | "terminal"));
        if !unrestricted || uses.has_code || self.code_task.is_match(&meta.description) {
            return;
        }
        let severity = if self.text_task.is_match(&meta.description) {
            Severity::High
        } else {
            Severity::Medium
        };
        push(
            out,
            &ENVELOPE_WIDE_SHELL,
            severity,
            "SKILL.md",
            1,
            1,
            &format!("allowed-tools: {allowed}"),
        );
    }
}

fn push(
    out: &mut Out,
    rule: &crate::catalog::CodeRule,
    severity: Severity,
    file: &str,
    line: usize,
    column: usize,
    seen: &str,
) {
    out.findings.push(crate::finding::Finding {
        rule: rule.id.to_owned(),
        family: rule.family,
        severity,
        file: file.to_owned(),
        line,
        column,
        seen: crate::excerpt::seen(seen),
        why: rule.why.to_owned(),
        fix: rule.fix.to_owned(),
    });
}

/// Whether `host` is among the declared `hosts` (`host`, `host:port`, `*.suffix`).
fn declared_host(host: &str, declared: &[String]) -> bool {
    declared.iter().any(|d| {
        let d = d.split(':').next().unwrap_or(d);
        d == host
            || d.strip_prefix("*.")
                .is_some_and(|suffix| host.ends_with(&format!(".{suffix}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_hosts_match_exactly_or_by_wildcard() {
        let d = vec![
            "api.example.com:443".to_owned(),
            "*.cdn.example.com".to_owned(),
        ];
        assert!(declared_host("api.example.com", &d));
        assert!(declared_host("a.cdn.example.com", &d));
        assert!(!declared_host("cdn.example.com", &d));
        assert!(!declared_host("api.example.com.evil.example", &d));
    }
}
