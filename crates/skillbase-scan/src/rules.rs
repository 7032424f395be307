//! The pattern rules: a data file ([`BUILTIN_RULES`], `rules.toml`) where each rule is a regular
//! expression or a set of literals, with its family, severity, why, fix, and fixtures that must
//! and must not match. Parsed and checked once when a [`crate::Scanner`] is built.
//!
//! Regular expressions are the `regex` crate's: matching is linear in the text, whatever the
//! pattern and the text (no backtracking). Literal sets run as one Aho-Corasick automaton.

use crate::deadline::Deadline;
use crate::finding::{Family, Severity};
use crate::pattern::{bytewise, on_chars};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use std::collections::HashSet;

/// The built-in rules file.
pub const BUILTIN_RULES: &str = include_str!("rules.toml");

/// Compiled size limit of one rule's automaton; a rule that needs more is refused at load.
const REGEX_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// Why a rules file was refused.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// The file is not valid TOML or does not have the rules' shape.
    #[error("rules file is not valid: {0}")]
    Syntax(String),
    /// Two rules share an id.
    #[error("rule id '{0}' is used twice: give each rule its own id")]
    Duplicate(String),
    /// A field has a value the scanner does not know.
    #[error("rule '{id}': {message}")]
    Field {
        /// The rule.
        id: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The pattern does not compile.
    #[error("rule '{id}': its regex does not compile: {message}")]
    Regex {
        /// The rule.
        id: String,
        /// The compiler's message.
        message: String,
    },
}

/// How context lowers a rule's severity in Markdown (see [`crate::Scanner`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Words aimed at the model: lowered when quoted or taught, not by a warning.
    Prose,
    /// A command or code: lowered when taught or warned against.
    Command,
}

/// Which files a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Files {
    /// Every text file.
    Any,
    /// Markdown only.
    Markdown,
    /// Scripts and other non-Markdown text only.
    Scripts,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    rule: Vec<RuleSpec>,
}

/// One rule as written in the rules file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Unique id, `family-what` (`hijack-ignore-previous`).
    pub id: String,
    /// The family's name.
    pub family: String,
    /// The severity's name.
    pub severity: String,
    /// `prose` or `command`.
    pub kind: RuleKind,
    /// `any`, `markdown` or `scripts`; `any` when absent.
    #[serde(default = "any_files")]
    pub files: Files,
    /// A regular expression (the `regex` crate's syntax).
    #[serde(default)]
    pub regex: Option<String>,
    /// Literal strings, matched ASCII-case-insensitively.
    #[serde(default)]
    pub literals: Vec<String>,
    /// In Markdown, a match in inline code or a table row, on a line that does not say to run
    /// it, is a mention and is lowered to medium.
    #[serde(default)]
    pub mentions: bool,
    /// Literals (ASCII case-insensitive) of which every match holds one: a text holding none is
    /// not searched with the rule. Empty: the rule always runs.
    #[serde(default)]
    pub needs: Vec<String>,
    /// A match is dropped when the text before it on its line matches this regex.
    #[serde(default)]
    pub unless_before: Option<String>,
    /// A match is dropped when the text after it on its line matches this regex.
    #[serde(default)]
    pub unless_after: Option<String>,
    /// Why it matters.
    pub why: String,
    /// What to do.
    pub fix: String,
    /// Texts the rule must find.
    pub positive: Vec<String>,
    /// Texts the rule must not find.
    pub negative: Vec<String>,
}

fn any_files() -> Files {
    Files::Any
}

/// A checked rule.
#[derive(Debug)]
pub(crate) struct Rule {
    pub spec: RuleSpec,
    pub family: Family,
    pub severity: Severity,
    regex: Option<Regex>,
    unless_before: Option<Regex>,
    unless_after: Option<Regex>,
}

/// How much of a line around a match the `unless_*` patterns read.
const CONTEXT_BYTES: usize = 160;

impl Rule {
    /// Whether the rule's exceptions drop a match with this text before and after it (on its
    /// line).
    pub(crate) fn excepted(&self, before: &str, after: &str) -> bool {
        let before = crate::source::tail(before, CONTEXT_BYTES);
        let after = crate::source::cut(after, CONTEXT_BYTES);
        self.unless_before
            .as_ref()
            .is_some_and(|r| r.is_match(before.as_bytes()))
            || self
                .unless_after
                .as_ref()
                .is_some_and(|r| r.is_match(after.as_bytes()))
    }
}

/// Every pattern rule, compiled.
#[derive(Debug)]
pub(crate) struct Rules {
    pub rules: Vec<Rule>,
    /// Indices (into `rules`) of the regex rules. Each runs on its own: its literal prefilter
    /// skips most text, where one set of all rules thrashed the lazy DFA's cache (4x slower).
    regex_rules: Vec<usize>,
    literal_rule: Vec<usize>,
    literals: Option<AhoCorasick>,
    /// For each literal of `needs` (in `gate` order), its rule.
    need_rule: Vec<usize>,
    /// One automaton over every rule's `needs`.
    gate: AhoCorasick,
}

/// One match of a pattern rule.
pub(crate) struct Hit {
    pub rule: usize,
    pub range: std::ops::Range<usize>,
}

/// Most matches of one rule reported per file (the rest add nothing but noise and time).
pub(crate) const MAX_HITS_PER_RULE: usize = 8;

impl Rules {
    /// Parse and check a rules file.
    pub(crate) fn parse(text: &str) -> Result<Rules, RulesError> {
        let file: RulesFile =
            toml::from_str(text).map_err(|e| RulesError::Syntax(e.to_string()))?;
        let mut seen = HashSet::new();
        let mut rules = Vec::new();
        for spec in file.rule {
            if !seen.insert(spec.id.clone()) {
                return Err(RulesError::Duplicate(spec.id));
            }
            rules.push(check(spec)?);
        }
        let regex_rules: Vec<usize> = (0..rules.len())
            .filter(|&i| rules[i].regex.is_some())
            .collect();
        let mut literal_rule = Vec::new();
        let mut words = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            for w in &r.spec.literals {
                literal_rule.push(i);
                words.push(w.as_str());
            }
        }
        let literals = if words.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&words)
                    .map_err(|e| {
                        RulesError::Syntax(format!("the literal rules do not compile: {e}"))
                    })?,
            )
        };
        let mut need_rule = Vec::new();
        let mut needs = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            for w in &r.spec.needs {
                need_rule.push(i);
                needs.push(w.as_str());
            }
        }
        let gate = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .build(&needs)
            .map_err(|e| RulesError::Syntax(format!("the rules' needs do not compile: {e}")))?;
        Ok(Rules {
            rules,
            need_rule,
            gate,
            regex_rules,
            literal_rule,
            literals,
        })
    }

    /// Every match in `text` of the rules that read files of this kind; fewer when `deadline`
    /// passes (checked between rules).
    pub(crate) fn hits(&self, text: &str, markdown: bool, deadline: &Deadline) -> Vec<Hit> {
        let reads = |r: &Rule| match r.spec.files {
            Files::Any => true,
            Files::Markdown => markdown,
            Files::Scripts => !markdown,
        };
        // Which rules may match: those without `needs`, and those with one of theirs present.
        let mut may = vec![false; self.rules.len()];
        for (i, r) in self.rules.iter().enumerate() {
            may[i] = r.spec.needs.is_empty();
        }
        for m in self.gate.find_overlapping_iter(text) {
            may[self.need_rule[m.pattern().as_usize()]] = true;
        }
        let mut out = Vec::new();
        for &i in self.regex_rules.iter().filter(|&&i| may[i]) {
            if deadline.check().is_err() {
                return out;
            }
            let rule = &self.rules[i];
            let Some(re) = rule.regex.as_ref().filter(|_| reads(rule)) else {
                continue;
            };
            out.extend(
                re.find_iter(text.as_bytes())
                    .take(MAX_HITS_PER_RULE)
                    .map(|m| Hit {
                        rule: i,
                        range: on_chars(text, m.range()),
                    }),
            );
        }
        if let Some(ac) = self.literals.as_ref().filter(|_| deadline.check().is_ok()) {
            let mut count = vec![0usize; self.rules.len()];
            for m in ac.find_iter(text) {
                let i = self.literal_rule[m.pattern().as_usize()];
                if reads(&self.rules[i]) && count[i] < MAX_HITS_PER_RULE {
                    count[i] += 1;
                    out.push(Hit {
                        rule: i,
                        range: m.range(),
                    });
                }
            }
        }
        out
    }
}

fn check(spec: RuleSpec) -> Result<Rule, RulesError> {
    let field = |message: String| RulesError::Field {
        id: spec.id.clone(),
        message,
    };
    if spec.id.is_empty()
        || !spec
            .id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(field(
            "an id is lowercase letters, digits and hyphens".into(),
        ));
    }
    let family: Family = spec.family.parse().map_err(field)?;
    let severity: Severity = spec.severity.parse().map_err(field)?;
    if !spec.id.starts_with(family.as_str()) {
        return Err(field(format!(
            "an id starts with its family ('{family}-...')"
        )));
    }
    if spec.regex.is_some() != spec.literals.is_empty() {
        return Err(field("give exactly one of `regex` or `literals`".into()));
    }
    if spec.positive.is_empty() || spec.negative.is_empty() {
        return Err(field(
            "give at least one `positive` and one `negative` fixture".into(),
        ));
    }
    if !spec.needs.is_empty() {
        let lower_needs: Vec<String> = spec.needs.iter().map(|n| n.to_ascii_lowercase()).collect();
        if let Some(p) = spec.positive.iter().find(|p| {
            let p = p.to_ascii_lowercase();
            !lower_needs.iter().any(|n| p.contains(n.as_str()))
        }) {
            return Err(field(format!(
                "positive fixture {p:?} holds none of `needs`"
            )));
        }
    }
    if spec.why.trim().is_empty() || spec.fix.trim().is_empty() {
        return Err(field("say `why` it matters and the `fix`".into()));
    }
    let compile = |p: &Option<String>| -> Result<Option<Regex>, RulesError> {
        p.as_deref()
            .map(|p| {
                RegexBuilder::new(&bytewise(p))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| RulesError::Regex {
                        id: spec.id.clone(),
                        message: e.to_string(),
                    })
            })
            .transpose()
    };
    let regex = compile(&spec.regex)?;
    let unless_before = compile(&spec.unless_before)?;
    let unless_after = compile(&spec.unless_after)?;
    Ok(Rule {
        spec,
        family,
        severity,
        regex,
        unless_before,
        unless_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
[[rule]]
id = "hijack-x"
family = "hijack"
severity = "high"
kind = "prose"
regex = "(?i)evil"
why = "w"
fix = "f"
positive = ["evil"]
negative = ["good"]
"#;

    #[test]
    fn a_well_formed_file_loads() {
        let r = Rules::parse(ONE).expect("loads");
        assert_eq!(r.rules.len(), 1);
        let ample = Deadline::new(std::time::Duration::from_secs(60));
        assert_eq!(r.hits("so EVIL", true, &ample).len(), 1);
    }

    #[test]
    fn malformed_rules_are_refused_with_the_reason() {
        let twice = format!("{ONE}{ONE}");
        assert!(matches!(
            Rules::parse(&twice),
            Err(RulesError::Duplicate(_))
        ));
        let bad = ONE.replace("(?i)evil", "(unclosed");
        assert!(matches!(Rules::parse(&bad), Err(RulesError::Regex { .. })));
        let no_neg = ONE.replace("negative = [\"good\"]", "negative = []");
        assert!(matches!(
            Rules::parse(&no_neg),
            Err(RulesError::Field { .. })
        ));
        let fam = ONE.replace("family = \"hijack\"", "family = \"nope\"");
        assert!(matches!(Rules::parse(&fam), Err(RulesError::Field { .. })));
        let both = ONE.replace("why = ", "literals = [\"a\"]\nwhy = ");
        assert!(matches!(Rules::parse(&both), Err(RulesError::Field { .. })));
        assert!(matches!(
            Rules::parse("rule = 3"),
            Err(RulesError::Syntax(_))
        ));
    }
}
