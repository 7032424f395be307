//! The scanning gate: what a revision's findings ([`skillbase_scan`]) get when it arrives, by
//! severity and scope (`[scan]` in skillbase.toml), and the findings kept with it.
//!
//! ```toml
//! [scan]                          # per severity: off | warn | review | refuse
//! info = "off"                    # the defaults
//! low = "warn"
//! medium = "warn"
//! high = "review"
//! critical = "review"
//! trusted_signers_skip_review = false   # a skill signed by a [trust] signer passes `review`
//!
//! [scan.agents.support]           # revisions in scope agent:support; unset severities inherit
//! medium = "review"
//! ```
//!
//! Every write funnels through the store's one write path, so the gate covers put, imports
//! (folder, zip, git), seeds, lockfile installs, authoring tools, dreaming and uploads alike.
//! `warn` records the findings with the revision; `review` writes it pending (the approvals
//! queue); `refuse` writes nothing and names the rule, file, line and fix. A trusted signer
//! can pass `review`, never `refuse`.

use crate::error::{Result, StoreError};
use crate::index::Index;
use crate::model::Scope;
use serde::{Deserialize, Serialize};
pub use skillbase_scan::{Family, Finding, Severity};
use skillbase_scan::{Report, SkillNames};
use std::collections::BTreeMap;
use std::fmt;

/// What the gate does with a revision whose findings reach a severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Nothing: the findings are kept, not acted on.
    #[default]
    Off,
    /// Written as usual; the findings are kept and recorded as an event.
    Warn,
    /// Written pending: it waits for approval before it is served.
    Review,
    /// Not written.
    Refuse,
}

impl Action {
    /// The name as written in skillbase.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Off => "off",
            Action::Warn => "warn",
            Action::Review => "review",
            Action::Refuse => "refuse",
        }
    }

    /// The action named `s`.
    pub fn parse(s: &str) -> std::result::Result<Action, String> {
        match s {
            "off" => Ok(Action::Off),
            "warn" => Ok(Action::Warn),
            "review" => Ok(Action::Review),
            "refuse" => Ok(Action::Refuse),
            _ => Err(format!(
                "unknown action '{s}': use off, warn, review or refuse"
            )),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action per severity, lowest severity first.
pub type Levels = [Action; 5];

/// The defaults: info off, low and medium warn, high and critical wait for review.
pub const DEFAULT_LEVELS: Levels = [
    Action::Off,
    Action::Warn,
    Action::Warn,
    Action::Review,
    Action::Review,
];

/// The `[scan]` table, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanPolicy {
    /// The action per severity for shared skills and agents without their own table.
    pub levels: Levels,
    /// Per agent (`[scan.agents.<name>]`), for revisions in scope `agent:<name>`.
    pub agents: BTreeMap<String, Levels>,
    /// Whether a skill signed by a signer `[trust]` lists passes `review` (never `refuse`).
    pub trusted_signers_skip_review: bool,
}

impl Default for ScanPolicy {
    fn default() -> Self {
        ScanPolicy {
            levels: DEFAULT_LEVELS,
            agents: BTreeMap::new(),
            trusted_signers_skip_review: false,
        }
    }
}

/// Severity keys of a `[scan]` or `[scan.agents.<name>]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLevels {
    info: Option<String>,
    low: Option<String>,
    medium: Option<String>,
    high: Option<String>,
    critical: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    info: Option<String>,
    low: Option<String>,
    medium: Option<String>,
    high: Option<String>,
    critical: Option<String>,
    #[serde(default)]
    trusted_signers_skip_review: bool,
    #[serde(default)]
    agents: BTreeMap<String, RawLevels>,
}

impl RawLevels {
    /// `base` with the severities this table sets replaced; `table` names it in errors.
    fn over(&self, base: Levels, table: &str) -> std::result::Result<Levels, String> {
        let mut out = base;
        let keys = [
            &self.info,
            &self.low,
            &self.medium,
            &self.high,
            &self.critical,
        ];
        for (i, v) in keys.into_iter().enumerate() {
            if let Some(v) = v {
                out[i] =
                    Action::parse(v).map_err(|e| format!("{table} {}: {e}", Severity::ALL[i]))?;
            }
        }
        Ok(out)
    }
}

impl ScanPolicy {
    /// Read the `[scan]` table of `origin` (the file, for errors).
    pub fn from_table(t: &toml::Table, origin: &str) -> Result<ScanPolicy> {
        let bad = |m: String| StoreError::Invalid(format!("{origin}: {m}"));
        let raw: RawPolicy = toml::Value::Table(t.clone())
            .try_into()
            .map_err(|e: toml::de::Error| bad(format!("[scan]: {}", e.message())))?;
        let top = RawLevels {
            info: raw.info,
            low: raw.low,
            medium: raw.medium,
            high: raw.high,
            critical: raw.critical,
        };
        let levels = top.over(DEFAULT_LEVELS, "[scan]").map_err(bad)?;
        let mut agents = BTreeMap::new();
        for (name, l) in &raw.agents {
            crate::model::AgentName::parse(name)
                .map_err(|e| bad(format!("[scan.agents.{name}]: {e}")))?;
            let table = format!("[scan.agents.{name}]");
            agents.insert(name.clone(), l.over(levels, &table).map_err(bad)?);
        }
        Ok(ScanPolicy {
            levels,
            agents,
            trusted_signers_skip_review: raw.trusted_signers_skip_review,
        })
    }

    /// The actions for a revision in `scope`.
    pub fn levels_for(&self, scope: &Scope) -> &Levels {
        match scope {
            Scope::Agent(a) => self.agents.get(a.as_str()).unwrap_or(&self.levels),
            Scope::Shared => &self.levels,
        }
    }

    /// What the gate does with `report` for a revision in `scope` (`trusted`: signed by a
    /// signer `[trust]` lists): the strictest action its findings' severities ask for, and the
    /// finding that decided it.
    pub fn decide<'r>(&self, scope: &Scope, report: &'r Report, trusted: bool) -> Decision<'r> {
        let levels = self.levels_for(scope);
        let action_of = |f: &Finding| levels[f.severity as usize];
        // The first (in file and line order) of the strictest action and highest severity.
        let decisive = report
            .findings
            .iter()
            .enumerate()
            .max_by_key(|(i, f)| (action_of(f), f.severity, std::cmp::Reverse(*i)))
            .map(|(_, f)| f);
        let mut action = decisive.map_or(Action::Off, action_of);
        let mut trusted_signer = false;
        if action == Action::Review && trusted && self.trusted_signers_skip_review {
            action = Action::Warn;
            trusted_signer = true;
        }
        Decision {
            action,
            decisive,
            trusted_signer,
        }
    }
}

/// What the gate decided for one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision<'r> {
    /// The action.
    pub action: Action,
    /// The finding that decided it (the first of the highest action and severity).
    pub decisive: Option<&'r Finding>,
    /// Whether a trusted signer turned `review` into `warn`.
    pub trusted_signer: bool,
}

/// A revision's scan, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScanRecord {
    /// The revision scanned.
    pub rev: i64,
    /// The digest of the rules that scanned it.
    pub rules: String,
    /// The highest severity found; `None` when nothing was.
    pub verdict: Option<Severity>,
    /// What the gate did on arrival (`off` for a rescan, which changes nothing).
    pub action: Action,
    /// The findings.
    pub findings: Vec<Finding>,
    /// When (Unix milliseconds).
    pub scanned_at: i64,
}

/// A scan to store with a revision (crate-private: the SQL writes it).
#[derive(Debug, Clone)]
pub(crate) struct ScanRow {
    pub rules: String,
    pub verdict: Option<String>,
    pub action: Action,
    pub findings: String,
    /// The `scan_findings` event's payload, when there are findings.
    pub event: Option<crate::events::ScanEvent>,
}

impl ScanRow {
    /// The row for `report`, as the gate decided.
    pub(crate) fn new(report: &Report, d: &Decision<'_>) -> ScanRow {
        let findings = serde_json::to_string(&report.findings).unwrap_or_else(|_| "[]".into());
        ScanRow {
            rules: report.rules.clone(),
            verdict: report.verdict.map(|v| v.as_str().to_owned()),
            action: d.action,
            findings,
            event: d
                .decisive
                .filter(|_| d.action > Action::Off)
                .map(|f| event(report, d, f)),
        }
    }
}

impl ScanRow {
    /// A rescan's row: kept, not acted on (`off`), no event.
    pub(crate) fn rescan(report: &Report) -> ScanRow {
        ScanRow {
            rules: report.rules.clone(),
            verdict: report.verdict.map(|v| v.as_str().to_owned()),
            action: Action::Off,
            findings: serde_json::to_string(&report.findings).unwrap_or_else(|_| "[]".into()),
            event: None,
        }
    }
}

/// The payload of a `scan_findings` or `scan_refused` event.
pub(crate) fn event(report: &Report, d: &Decision<'_>, f: &Finding) -> crate::events::ScanEvent {
    crate::events::ScanEvent {
        verdict: report.verdict.map_or("", |v| v.as_str()).to_owned(),
        action: d.action.as_str().to_owned(),
        trusted_signer: d.trusted_signer,
        rules: report.rules.clone(),
        findings: report.findings.len(),
        decisive: format!("{} ({}) at {}:{}", f.rule, f.severity, f.file, f.line),
    }
}

/// Who brought a revision, from its author: an import's source, a seed folder's parent (its
/// skills are siblings), an agent, a person. Skills of one origin never imitate each other.
pub(crate) fn origin_of(author: &str) -> String {
    if let Some(path) = author.strip_prefix("seed:") {
        let parent = std::path::Path::new(path)
            .parent()
            .map_or(path.to_owned(), |p| p.display().to_string());
        return format!("seed:{parent}");
    }
    if let Some(agent) = author.strip_prefix("agent:") {
        let name = agent.split('/').next().unwrap_or(agent);
        return format!("agent:{name}");
    }
    author.to_owned()
}

/// Skills of the index with their origins, for [`SkillNames`]: all of them (built once for a
/// batch), or only those near one name (a single write: a pass over the index without
/// allocation, then the few near names).
pub(crate) struct Neighbours {
    /// The skills, with their origins.
    picked: Vec<(std::sync::Arc<crate::index::SkillEntry>, String)>,
}

impl Neighbours {
    /// Every skill of the index.
    pub(crate) fn all(index: &Index) -> Neighbours {
        let picked = index
            .all()
            .map(|e| (e.clone(), origin_of(&e.author)))
            .collect();
        Neighbours { picked }
    }

    /// The skills whose names could be one edit from `name`.
    pub(crate) fn near(index: &Index, name: &str) -> Neighbours {
        let picked = index
            .all()
            .filter(|e| SkillNames::near(name, &e.name))
            .map(|e| (e.clone(), origin_of(&e.author)))
            .collect();
        Neighbours { picked }
    }

    /// The skills created before `entry` (a lower record id) whose names could be one edit
    /// from its name: what its name was judged against when it arrived.
    pub(crate) fn near_older(index: &Index, entry: &crate::index::SkillEntry) -> Neighbours {
        let picked = index
            .all()
            .filter(|e| e.id < entry.id && SkillNames::near(&entry.name, &e.name))
            .map(|e| (e.clone(), origin_of(&e.author)))
            .collect();
        Neighbours { picked }
    }

    /// The names, indexed.
    pub(crate) fn names(&self) -> SkillNames<'_> {
        SkillNames::new(
            self.picked
                .iter()
                .map(|(e, o)| (e.name.as_str(), o.as_str())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Result<ScanPolicy> {
        let t: toml::Table = toml::from_str(text).expect("toml");
        ScanPolicy::from_table(&t, "skillbase.toml")
    }

    fn finding(severity: Severity) -> Finding {
        Finding {
            rule: "r".into(),
            family: skillbase_scan::Family::Hijack,
            severity,
            file: "SKILL.md".into(),
            line: 3,
            column: 1,
            seen: String::new(),
            why: "why.".into(),
            fix: "fix.".into(),
        }
    }

    fn report(sev: &[Severity]) -> Report {
        Report {
            findings: sev.iter().map(|s| finding(*s)).collect(),
            verdict: sev.iter().max().copied(),
            ..Report::default()
        }
    }

    #[test]
    fn defaults_and_agent_overrides() {
        let p = policy("").unwrap();
        assert_eq!(p, ScanPolicy::default());
        let p = policy(
            "medium = \"review\"\ncritical = \"refuse\"\n[agents.support]\nlow = \"off\"\nhigh = \"refuse\"\n",
        )
        .unwrap();
        assert_eq!(p.levels[2], Action::Review);
        let support = Scope::Agent(crate::model::AgentName::parse("support").unwrap());
        // Inherited medium, own low and high.
        assert_eq!(
            p.levels_for(&support),
            &[
                Action::Off,
                Action::Off,
                Action::Review,
                Action::Refuse,
                Action::Refuse
            ]
        );
        assert_eq!(p.levels_for(&Scope::Shared)[3], Action::Review);
    }

    #[test]
    fn malformed_tables_say_what_and_where() {
        let e = policy("high = \"block\"\n").unwrap_err().to_string();
        assert!(
            e.contains("skillbase.toml") && e.contains("[scan] high") && e.contains("refuse"),
            "{e}"
        );
        let e = policy("severe = \"warn\"\n").unwrap_err().to_string();
        assert!(e.contains("[scan]") && e.contains("severe"), "{e}");
        let e = policy("[agents.support]\nhgih = \"warn\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("hgih"), "{e}");
        let e = policy("[agents.\"Bad Name\"]\nhigh = \"warn\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[scan.agents.Bad Name]"), "{e}");
        assert!(policy("high = 3\n").is_err());
    }

    #[test]
    fn the_strictest_action_decides_and_signers_pass_review_only() {
        let p = policy("trusted_signers_skip_review = true\ncritical = \"refuse\"\n").unwrap();
        let r = report(&[Severity::Low, Severity::High]);
        let d = p.decide(&Scope::Shared, &r, false);
        assert_eq!(d.action, Action::Review);
        assert_eq!(d.decisive.unwrap().severity, Severity::High);
        let d = p.decide(&Scope::Shared, &r, true);
        assert_eq!((d.action, d.trusted_signer), (Action::Warn, true));
        let r = report(&[Severity::Critical]);
        assert_eq!(p.decide(&Scope::Shared, &r, true).action, Action::Refuse);
        assert_eq!(
            p.decide(&Scope::Shared, &report(&[]), false).action,
            Action::Off
        );
        assert_eq!(
            p.decide(&Scope::Shared, &report(&[Severity::Info]), false)
                .action,
            Action::Off
        );
    }

    #[test]
    fn origins_group_seed_siblings_and_an_agents_writes() {
        assert_eq!(origin_of("seed:/s/seeded-a"), origin_of("seed:/s/seeded-b"));
        assert_ne!(origin_of("seed:/s/a"), origin_of("seed:/t/a"));
        assert_eq!(origin_of("agent:x/inline"), origin_of("agent:x/dreaming"));
        assert_eq!(
            origin_of("import:git+https://h/r"),
            "import:git+https://h/r"
        );
    }
}
