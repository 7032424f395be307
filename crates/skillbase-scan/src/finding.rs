//! What a scan answers: [`Finding`]s, each with its rule, family and severity, gathered in a
//! [`Report`] whose verdict is the highest severity found.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How much a finding matters, lowest first (`Ord` follows this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; nothing to fix.
    Info,
    /// Unusual, rarely hostile.
    Low,
    /// Worth a look before the skill is served.
    Medium,
    /// Likely hostile: a gate holds the revision for review by default.
    High,
    /// Hostile beyond reasonable doubt (hidden instructions, reverse shells).
    Critical,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 5] = [
        Severity::Info,
        Severity::Low,
        Severity::Medium,
        Severity::High,
        Severity::Critical,
    ];

    /// The name as written in rules and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// One step lower (info stays info).
    pub fn lower(self) -> Severity {
        match self {
            Severity::Critical => Severity::High,
            Severity::High => Severity::Medium,
            Severity::Medium => Severity::Low,
            Severity::Low | Severity::Info => Severity::Info,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                format!("unknown severity '{s}': use info, low, medium, high or critical")
            })
    }
}

/// The kind of threat a rule looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Text that overrides the system or the user, changes the model's role or hides from the user.
    Hijack,
    /// Text a person reading the skill does not see: Unicode tags, zero-width and bidi
    /// characters, HTML comments, lookalike hosts.
    Hidden,
    /// Secrets, key files or conversation content sent to a host.
    Exfiltration,
    /// Remote code run unseen, decoded payloads, protected archives, lookalike packages.
    Dropper,
    /// Changes that outlive the session (cron, shell start-up files, hooks) or destroy data.
    Persistence,
    /// Hosts, vault entries and tools used but not declared, or declared far beyond the task.
    Envelope,
    /// The model told to ask the user for passwords, tokens or keys.
    Credentials,
    /// Descriptions stuffed with keywords, names imitating another skill, "always use me".
    Routing,
    /// What the scanner could not read (an unreadable file is not a clean file).
    Unread,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 9] = [
        Family::Hijack,
        Family::Hidden,
        Family::Exfiltration,
        Family::Dropper,
        Family::Persistence,
        Family::Envelope,
        Family::Credentials,
        Family::Routing,
        Family::Unread,
    ];

    /// The name as written in rules and labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Hijack => "hijack",
            Family::Hidden => "hidden",
            Family::Exfiltration => "exfiltration",
            Family::Dropper => "dropper",
            Family::Persistence => "persistence",
            Family::Envelope => "envelope",
            Family::Credentials => "credentials",
            Family::Routing => "routing",
            Family::Unread => "unread",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Family {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Family::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| format!("unknown rule family '{s}'"))
    }
}

/// One thing a rule saw, where, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule's id (`hijack-ignore-previous`, `hidden-unicode-tags`, ...).
    pub rule: String,
    /// The rule's family.
    pub family: Family,
    /// How much it matters here (a rule's severity, lowered for teaching material, raised
    /// inside hidden text).
    pub severity: Severity,
    /// The bundle path of the file (`SKILL.md`, `scripts/setup.sh`).
    pub file: String,
    /// 1-based line; 0 when the finding is about the whole file or bundle.
    pub line: usize,
    /// 1-based column in Unicode scalar values; 0 with `line` 0.
    pub column: usize,
    /// What was seen: secrets masked, long payloads and invisible characters shortened.
    pub seen: String,
    /// Why it matters (and, when the severity was changed, why).
    pub why: String,
    /// What to do about it.
    pub fix: String,
}

/// A file the scanner did not read, or did not read whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unread {
    /// The bundle path.
    pub file: String,
    /// Why (too large, binary, an archive, past the time budget, ...).
    pub reason: String,
}

/// The findings of one bundle.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Report {
    /// Every finding, by file, then line, then column.
    pub findings: Vec<Finding>,
    /// The highest severity found; `None` when nothing was found.
    pub verdict: Option<Severity>,
    /// Files not read, or not read whole (each is also a finding of family `unread`).
    pub unread: Vec<Unread>,
    /// The digest of the rules that produced this report ([`crate::rules_digest`]).
    pub rules: String,
}

impl Report {
    /// Whether any finding is at or above `threshold`.
    pub fn reaches(&self, threshold: Severity) -> bool {
        self.verdict.is_some_and(|v| v >= threshold)
    }

    /// Findings of one family at or above `threshold`.
    pub fn of_family(&self, family: Family, threshold: Severity) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(move |f| f.family == family && f.severity >= threshold)
    }
}
