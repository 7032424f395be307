//! The [`Scanner`]: rules compiled once, then [`Scanner::scan_bundle`] over a bundle's files
//! within [`Limits`].

use crate::binary::{Content, classify};
use crate::catalog::{self, CODE_RULES, CODE_RULES_VERSION};
use crate::deadline::{Deadline, OutOfTime};
use crate::emit::Out;
use crate::envelope::{Envelope, Uses};
use crate::exfil::Exfil;
use crate::finding::{Finding, Report, Severity};
use crate::hidden::{self, Hidden};
use crate::markdown::{Cues, Layout, Place};
use crate::packages::Packages;
use crate::routing::{self, SkillNames};
use crate::rules::{BUILTIN_RULES, RuleKind, Rules, RulesError};
use crate::source::{Kind, Source, cut, decode, tail};
use sha2::{Digest, Sha256};
use skillbase_format::{SkillMd, SkillMeta, YamlLimits};
use std::time::Duration;

/// How much a scan reads. A file past a limit is reported unread (a finding of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most files read per bundle.
    pub max_files: usize,
    /// Most bytes read per file (the rest is unread).
    pub max_file_bytes: usize,
    /// Most bytes read per bundle.
    pub max_total_bytes: usize,
    /// A Markdown line longer than this is a finding (text pushed out of view).
    pub max_line_bytes: usize,
    /// Wall-clock budget per bundle; files not reached in time are unread.
    pub time_budget: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_files: 1000,
            max_file_bytes: 1024 * 1024,
            max_total_bytes: 16 * 1024 * 1024,
            max_line_bytes: 16 * 1024,
            time_budget: Duration::from_secs(5),
        }
    }
}

/// What the scan knows beyond the bundle.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanContext<'a> {
    /// The store's other skills' names with their origins (for names imitating one of them).
    pub other_skills: Option<&'a SkillNames<'a>>,
    /// Who brings the bundle (a source, a seed folder, an author): names of the same origin
    /// never imitate each other. `None` compares with every name.
    pub origin: Option<&'a str>,
}

/// A rule as reports list it (pattern and code rules alike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleInfo {
    /// The id.
    pub id: String,
    /// The family.
    pub family: crate::Family,
    /// The rule's own severity (code rules: the highest they give).
    pub severity: Severity,
    /// Why it matters.
    pub why: String,
    /// What to do.
    pub fix: String,
}

/// The rules, compiled; build once, scan many bundles (it is `Sync`).
pub struct Scanner {
    rules: Rules,
    cues: Cues,
    hidden: Hidden,
    exfil: Exfil,
    packages: Packages,
    envelope: Envelope,
    limits: Limits,
    digest: String,
}

impl Scanner {
    /// The built-in rules.
    pub fn new() -> Result<Scanner, RulesError> {
        Scanner::with_rules(BUILTIN_RULES)
    }

    /// Pattern rules from `rules_toml` (the built-in file's format) and the code rules.
    pub fn with_rules(rules_toml: &str) -> Result<Scanner, RulesError> {
        Ok(Scanner {
            rules: Rules::parse(rules_toml)?,
            cues: Cues::new(),
            hidden: Hidden::new(),
            exfil: Exfil::new(),
            packages: Packages::new(),
            envelope: Envelope::new(),
            limits: Limits::default(),
            digest: digest_of(rules_toml),
        })
    }

    /// The same scanner with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Scanner {
        self.limits = limits;
        self
    }

    /// The digest of the rules (pattern file and code rules' version): a store rescans when it
    /// changes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Every rule, pattern rules first.
    pub fn rules(&self) -> Vec<RuleInfo> {
        let pattern = self.rules.rules.iter().map(|r| RuleInfo {
            id: r.spec.id.clone(),
            family: r.family,
            severity: r.severity,
            why: r.spec.why.clone(),
            fix: r.spec.fix.clone(),
        });
        let code = CODE_RULES.iter().map(|r| RuleInfo {
            id: r.id.to_owned(),
            family: r.family,
            severity: Severity::High,
            why: r.why.to_owned(),
            fix: r.fix.to_owned(),
        });
        pattern.chain(code).collect()
    }

    /// Scan a bundle: `(path, bytes)` for every file, `SKILL.md` among them.
    pub fn scan_bundle<P: AsRef<str>, B: AsRef<[u8]>>(
        &self,
        files: &[(P, B)],
        context: &ScanContext<'_>,
    ) -> Report {
        let deadline = Deadline::new(self.limits.time_budget);
        let mut out = Out::default();
        let mut uses = Uses::default();
        let mut skill_md: Option<String> = None;
        let mut total = 0usize;
        for (index, (path, bytes)) in files.iter().enumerate() {
            let (path, bytes) = (path.as_ref(), bytes.as_ref());
            if let Some(reason) = self.over_limits(index, total, &deadline) {
                for (p, _) in &files[index..] {
                    out.unread(reason.0, Severity::Medium, p.as_ref(), reason.1.clone());
                }
                break;
            }
            total += bytes.len();
            let Some(text) = self.read(path, bytes, &mut out) else {
                continue;
            };
            let kind = Kind::of(path);
            let whole = self.scan_file(
                &Source::new(path, &text, kind),
                &deadline.for_file(text.len()),
                &mut uses,
                &mut out,
            );
            if is_skill_md(path) {
                skill_md = Some(text);
            }
            if whole.is_err() {
                // Out of time inside this file: it is read in part, the rest not at all.
                let (rule, reason) = self.out_of_time();
                out.unread(
                    rule,
                    Severity::Medium,
                    path,
                    format!("{reason}; read in part"),
                );
                for (p, _) in &files[index + 1..] {
                    out.unread(rule, Severity::Medium, p.as_ref(), reason.clone());
                }
                break;
            }
        }
        if let Some(text) = &skill_md {
            self.scan_meta(text, context, &uses, &mut out);
        }
        finish(out, &self.digest)
    }

    /// The limit a file at `index` is past, if any, as (rule, reason).
    fn over_limits(
        &self,
        index: usize,
        total: usize,
        deadline: &Deadline,
    ) -> Option<(&'static catalog::CodeRule, String)> {
        let l = &self.limits;
        if index >= l.max_files {
            return Some((
                &catalog::UNREAD_TOO_MANY,
                format!("past the first {} files of the bundle", l.max_files),
            ));
        }
        if total >= l.max_total_bytes {
            return Some((
                &catalog::UNREAD_TOO_MANY,
                format!("past the first {} bytes of the bundle", l.max_total_bytes),
            ));
        }
        if deadline.passed() {
            return Some(self.out_of_time());
        }
        None
    }

    /// What a file not read (or not whole) for want of time is reported as.
    fn out_of_time(&self) -> (&'static catalog::CodeRule, String) {
        (
            &catalog::UNREAD_TIME,
            format!(
                "past the scan's time budget of {:?}",
                self.limits.time_budget
            ),
        )
    }

    /// The text of a file, or `None` (with findings) when it is not text.
    fn read(&self, path: &str, bytes: &[u8], out: &mut Out) -> Option<String> {
        match classify(bytes) {
            Content::Text => {}
            Content::Media(what) => {
                out.unread(
                    &catalog::UNREAD_MEDIA,
                    Severity::Info,
                    path,
                    format!("{what}, not text"),
                );
                return None;
            }
            Content::Archive {
                kind,
                encrypted: true,
            } => {
                out.unread(
                    &catalog::DROPPER_ENCRYPTED_ARCHIVE,
                    Severity::High,
                    path,
                    format!("password-protected {kind} archive"),
                );
                return None;
            }
            Content::Archive { kind, .. } => {
                out.unread(
                    &catalog::DROPPER_ARCHIVE,
                    Severity::Medium,
                    path,
                    format!("{kind} archive, not expanded"),
                );
                return None;
            }
            Content::Executable(what) => {
                out.unread(
                    &catalog::DROPPER_EXECUTABLE,
                    Severity::High,
                    path,
                    format!("{what} executable"),
                );
                return None;
            }
            Content::Binary => {
                out.unread(
                    &catalog::UNREAD_BINARY,
                    Severity::Medium,
                    path,
                    "binary file of unknown type".into(),
                );
                return None;
            }
        }
        let max = self.limits.max_file_bytes;
        let decoded = decode(&bytes[..bytes.len().min(max.saturating_add(4))]);
        if decoded.lossy {
            out.file(
                &catalog::UNREAD_INVALID_UTF8,
                Severity::Low,
                path,
                "invalid UTF-8 read as U+FFFD",
            );
        }
        let mut text = decoded.text;
        if bytes.len() > max {
            text.truncate(cut(&text, max).len());
            out.unread(
                &catalog::UNREAD_TOO_LARGE,
                Severity::Medium,
                path,
                format!("only the first {max} bytes read; the file is larger"),
            );
        }
        Some(text)
    }

    /// Pattern and code rules over one text file; `Err` when `deadline` passed before the last
    /// (what was found until then is kept).
    fn scan_file(
        &self,
        src: &Source<'_>,
        deadline: &Deadline,
        uses: &mut Uses,
        out: &mut Out,
    ) -> Result<(), OutOfTime> {
        let markdown = src.kind == Kind::Markdown;
        let layout = markdown.then(|| Layout::new(src, &self.cues));
        deadline.check()?;
        for hit in self.rules.hits(src.text, markdown, deadline) {
            let rule = &self.rules.rules[hit.rule];
            let place = layout.as_ref().map(|l| l.place(src, hit.range.clone()));
            let line = src.line_range(src.line_of(hit.range.start));
            let line_before = &src.text[line.start..hit.range.start];
            let line_after = src
                .text
                .get(hit.range.end..line.end.max(hit.range.end))
                .unwrap_or("");
            if rule.excepted(line_before, line_after) {
                continue;
            }
            let before = tail(line_before, 24);
            let mention = rule.spec.mentions && place.is_some_and(|p| p.mention);
            let Some((severity, note)) = adjust(
                rule.severity,
                rule.spec.kind,
                place,
                negated(before),
                mention,
            ) else {
                continue;
            };
            let (line, column) = src.position(hit.range.start);
            out.findings.push(Finding {
                rule: rule.spec.id.clone(),
                family: rule.family,
                severity,
                file: src.path.to_owned(),
                line,
                column,
                seen: crate::excerpt::seen(&src.text[hit.range.clone()]),
                why: match note {
                    Some(n) => format!("{} ({n})", rule.spec.why),
                    None => rule.spec.why.clone(),
                },
                fix: rule.spec.fix.clone(),
            });
        }
        deadline.check()?;
        hidden::characters(src, out);
        deadline.check()?;
        let hosts = self.hidden.hosts(src);
        hidden::lookalike_hosts(src, &hosts, out);
        deadline.check()?;
        if let Some(layout) = &layout {
            hidden::comments(&self.hidden, src, &layout.hidden, out);
            hidden::long_lines(src, self.limits.max_line_bytes, out);
        } else {
            self.exfil.check(src, out);
        }
        deadline.check()?;
        self.packages.check(src, out);
        deadline.check()?;
        let has_code = layout.as_ref().is_some_and(Layout::has_code);
        self.envelope.collect(src, &hosts, has_code, uses);
        Ok(())
    }

    /// Rules over the frontmatter: envelope consistency and routing abuse.
    fn scan_meta(&self, text: &str, context: &ScanContext<'_>, uses: &Uses, out: &mut Out) {
        let Ok(md) = SkillMd::parse(text, &YamlLimits::default()) else {
            return;
        };
        let Some(meta) = SkillMeta::from_md(&md) else {
            return;
        };
        let src = Source::new("SKILL.md", text, Kind::Markdown);
        self.envelope.check(&meta, uses, out);
        routing::stuffing(&meta, &src, out);
        if let Some(names) = context.other_skills {
            routing::imitation(&meta, names, context.origin, &src, out);
        }
    }
}

impl Report {
    /// Record a file the caller could not read (a link, a read error): a finding of family
    /// `unread` at medium severity, and an entry in `unread`.
    pub fn add_unreadable(&mut self, file: &str, reason: &str) {
        let mut out = Out::default();
        out.unread(
            &catalog::UNREAD_FILE,
            Severity::Medium,
            file,
            reason.to_owned(),
        );
        self.findings.append(&mut out.findings);
        self.unread.append(&mut out.unread);
        self.verdict = self.findings.iter().map(|f| f.severity).max();
    }
}

/// Whether `path` is the bundle's SKILL.md.
fn is_skill_md(path: &str) -> bool {
    path.eq_ignore_ascii_case("SKILL.md")
}

/// A rule's severity at its place: raised inside hidden text, lowered for quotations, teaching
/// and warnings; `None` when a prose rule's match is negated ("never ask the user for ...").
fn adjust(
    severity: Severity,
    kind: RuleKind,
    place: Option<Place>,
    negated: bool,
    mention: bool,
) -> Option<(Severity, Option<&'static str>)> {
    if negated && kind == RuleKind::Prose {
        return None;
    }
    let Some(p) = place else {
        return Some((severity, None));
    };
    if p.hidden {
        return Some((
            severity.max(Severity::High),
            Some("inside text a reader does not see"),
        ));
    }
    if mention && severity > Severity::Medium {
        return Some((
            Severity::Medium,
            Some("lowered: mentioned, not given as a command"),
        ));
    }
    let (a, b) = match kind {
        RuleKind::Prose => (p.quoted, p.teaching),
        RuleKind::Command => (p.teaching, p.caution || negated),
    };
    Some(match (a, b) {
        (true, true) => (
            severity.min(Severity::Low),
            Some("lowered: quoted or warned against, in teaching material"),
        ),
        (true, false) | (false, true) => (
            severity.min(Severity::Medium),
            Some("lowered: quoted, taught or warned against"),
        ),
        (false, false) => (severity, None),
    })
}

/// Whether the text just before a match negates it ("never", "do not").
fn negated(before: &str) -> bool {
    let b = before.trim_end().to_lowercase();
    [
        "never", "not", "don't", "dont", "no", "nunca", "jamais", "niemals", "nie", "mai", "não",
        "nicht", "не", "不要", "绝不",
    ]
    .iter()
    .any(|w| {
        b.ends_with(w)
            && b[..b.len() - w.len()]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric())
    })
}

/// Keep the highest finding per (file, line, family), order by file then position, verdict.
fn finish(mut out: Out, digest: &str) -> Report {
    out.findings.sort_by(|a, b| {
        (
            a.file.as_str(),
            a.line,
            a.family,
            std::cmp::Reverse(a.severity),
            a.column,
        )
            .cmp(&(
                b.file.as_str(),
                b.line,
                b.family,
                std::cmp::Reverse(b.severity),
                b.column,
            ))
    });
    out.findings.dedup_by(|b, a| {
        a.file == b.file && a.line == b.line && a.family == b.family && a.line != 0
    });
    out.findings.sort_by(|a, b| {
        (a.file.as_str(), a.line, a.column).cmp(&(b.file.as_str(), b.line, b.column))
    });
    let verdict = out.findings.iter().map(|f| f.severity).max();
    Report {
        findings: out.findings,
        verdict,
        unread: out.unread,
        rules: digest.to_owned(),
    }
}

/// `sha256:` over the pattern rules file and the code rules' version and table.
fn digest_of(rules_toml: &str) -> String {
    let mut h = Sha256::new();
    h.update(rules_toml.as_bytes());
    h.update(CODE_RULES_VERSION.to_le_bytes());
    for r in CODE_RULES {
        h.update(r.id.as_bytes());
        h.update(r.why.as_bytes());
    }
    let bytes = h.finalize();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The digest of the built-in rules.
pub fn rules_digest() -> String {
    digest_of(BUILTIN_RULES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negation_reads_whole_words() {
        assert!(negated("Never "));
        assert!(negated("You must not "));
        assert!(!negated("Casino "));
        assert!(!negated("Then "));
    }

    #[test]
    fn context_lowers_and_hidden_text_raises() {
        let quoted = Place {
            quoted: true,
            ..Place::default()
        };
        let taught = Place {
            quoted: true,
            teaching: true,
            ..Place::default()
        };
        let hidden = Place {
            hidden: true,
            ..Place::default()
        };
        assert_eq!(
            adjust(Severity::High, RuleKind::Prose, Some(quoted), false, false).map(|x| x.0),
            Some(Severity::Medium)
        );
        assert_eq!(
            adjust(Severity::High, RuleKind::Prose, Some(taught), false, false).map(|x| x.0),
            Some(Severity::Low)
        );
        assert_eq!(
            adjust(
                Severity::Medium,
                RuleKind::Prose,
                Some(hidden),
                false,
                false
            )
            .map(|x| x.0),
            Some(Severity::High)
        );
        assert_eq!(
            adjust(Severity::High, RuleKind::Prose, None, true, false),
            None
        );
        assert_eq!(
            adjust(Severity::High, RuleKind::Command, None, true, false).map(|x| x.0),
            Some(Severity::High)
        );
    }
}
