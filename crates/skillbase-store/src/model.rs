//! The store's nouns: scopes, authors, statuses, agents.

use serde::{Deserialize, Serialize};
use skillbase_format::SkillName;
use std::fmt;
use std::str::FromStr;

/// An agent's name: 1–64 characters of lowercase ASCII letters, digits, `-` and `_`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct AgentName(String);

impl AgentName {
    pub fn parse(raw: &str) -> Result<AgentName, String> {
        let ok = !raw.is_empty()
            && raw.len() <= 64
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
            && !raw.starts_with(['-', '_']);
        if ok {
            Ok(AgentName(raw.to_owned()))
        } else {
            Err(format!(
                "invalid agent name '{raw}': use 1-64 lowercase letters, digits, `-` and `_`"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for AgentName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AgentName::parse(s)
    }
}

impl<'de> Deserialize<'de> for AgentName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AgentName::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Where a skill record lives. The frontmatter never decides this; the write does.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Shared,
    Agent(AgentName),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Shared => f.write_str("shared"),
            Scope::Agent(a) => write!(f, "agent:{a}"),
        }
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "shared" => Ok(Scope::Shared),
            _ => match s.strip_prefix("agent:") {
                Some(a) => Ok(Scope::Agent(AgentName::parse(a)?)),
                None => Err(format!(
                    "invalid scope '{s}': use `shared` or `agent:<name>`"
                )),
            },
        }
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Who wrote a revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Author {
    Human(String),
    AgentInline(AgentName),
    AgentDreaming(AgentName),
    Import(String),
    Seed(String),
}

impl Author {
    /// Whether this revision came from a seed folder.
    pub fn is_seed(&self) -> bool {
        matches!(self, Author::Seed(_))
    }

    /// Whether an agent wrote it (approval policy applies to these).
    pub fn is_agent(&self) -> bool {
        matches!(self, Author::AgentInline(_) | Author::AgentDreaming(_))
    }
}

impl fmt::Display for Author {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Author::Human(id) => write!(f, "human:{id}"),
            Author::AgentInline(a) => write!(f, "agent:{a}/inline"),
            Author::AgentDreaming(a) => write!(f, "agent:{a}/dreaming"),
            Author::Import(s) => write!(f, "import:{s}"),
            Author::Seed(p) => write!(f, "seed:{p}"),
        }
    }
}

impl FromStr for Author {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "invalid author '{s}': use human:<id>, agent:<id>/inline, agent:<id>/dreaming, import:<source> or seed:<path>"
            )
        };
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        if rest.is_empty() || rest.chars().any(char::is_control) {
            return Err(bad());
        }
        match kind {
            "human" => Ok(Author::Human(rest.to_owned())),
            "import" => Ok(Author::Import(rest.to_owned())),
            "seed" => Ok(Author::Seed(rest.to_owned())),
            "agent" => match rest.rsplit_once('/') {
                Some((a, "inline")) => Ok(Author::AgentInline(AgentName::parse(a)?)),
                Some((a, "dreaming")) => Ok(Author::AgentDreaming(AgentName::parse(a)?)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

impl Serialize for Author {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A skill record's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Disabled,
    Retired,
    /// Created by an agent under the approval policy: waits for `approve`, not offered.
    Pending,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Disabled => "disabled",
            Status::Retired => "retired",
            Status::Pending => "pending",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "active" => Ok(Status::Active),
            "disabled" => Ok(Status::Disabled),
            "retired" => Ok(Status::Retired),
            "pending" => Ok(Status::Pending),
            _ => Err(format!("unknown status '{s}'")),
        }
    }
}

/// A set of skill names: every one, none, or a list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NameSet {
    All,
    #[default]
    None,
    Names(Vec<SkillName>),
}

impl NameSet {
    pub fn contains(&self, name: &str) -> bool {
        match self {
            NameSet::All => true,
            NameSet::None => false,
            NameSet::Names(n) => n.iter().any(|x| x.as_str() == name),
        }
    }
}

impl Serialize for NameSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NameSet::All => s.serialize_str("all"),
            NameSet::None => s.serialize_str("none"),
            NameSet::Names(n) => n.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for NameSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            Flag(bool),
            List(Vec<SkillName>),
        }
        match Raw::deserialize(d)? {
            Raw::Word(w) if w == "all" => Ok(NameSet::All),
            Raw::Word(w) if w == "none" => Ok(NameSet::None),
            Raw::Flag(true) => Ok(NameSet::All),
            Raw::Flag(false) => Ok(NameSet::None),
            Raw::List(mut l) => {
                l.sort();
                l.dedup();
                Ok(NameSet::Names(l))
            }
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "'{w}' is not a skill set: use \"all\", \"none\" or a list of names"
            ))),
        }
    }
}

impl FromStr for NameSet {
    type Err = String;
    /// `all`, `none`, or comma-separated names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "all" => Ok(NameSet::All),
            "none" | "" => Ok(NameSet::None),
            list => {
                let mut names = list
                    .split(',')
                    .map(|n| SkillName::parse(n.trim()).map_err(|e| format!("'{}': {e}", n.trim())))
                    .collect::<Result<Vec<_>, _>>()?;
                names.sort();
                names.dedup();
                Ok(NameSet::Names(names))
            }
        }
    }
}

/// What an agent may use: tool classes, vault entries and destination hosts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Grants {
    pub tools: Vec<String>,
    pub vault: Vec<String>,
    pub hosts: Vec<String>,
}

/// An agent's policies. Approvals are off by default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policies {
    /// Agent-authored revisions wait as pending until approved.
    pub review_agent_revisions: bool,
    /// A skill declaring capabilities beyond the agent's grants waits for review.
    pub review_envelope_expansion: bool,
    /// Consecutive failed runs of a revision before the skill is disabled.
    pub failure_threshold: u32,
    /// Calls in flight at once, per agent.
    pub max_calls_in_flight: u32,
    /// Network tool calls per session.
    pub max_network_calls_per_session: u32,
    /// Tokens per tool result before it is cut.
    pub max_result_tokens: u32,
}

impl Default for Policies {
    fn default() -> Self {
        Policies {
            review_agent_revisions: false,
            review_envelope_expansion: false,
            failure_threshold: 3,
            max_calls_in_flight: 8,
            max_network_calls_per_session: 50,
            max_result_tokens: 4000,
        }
    }
}

/// Default catalog budget in tokens.
pub const DEFAULT_CATALOG_BUDGET: u32 = 4000;
/// Default budget in tokens for skill bodies injected in one turn (eager, triggered, companions).
pub const DEFAULT_CONTEXT_BUDGET: u32 = 16000;

fn default_budget() -> u32 {
    DEFAULT_CATALOG_BUDGET
}

fn default_context_budget() -> u32 {
    DEFAULT_CONTEXT_BUDGET
}

/// An agent's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The skills it may see.
    #[serde(default)]
    pub skills: NameSet,
    /// The skills in its prompt every turn.
    #[serde(default)]
    pub eager: NameSet,
    #[serde(default)]
    pub grants: Grants,
    /// Tokens the level-1 catalog may use.
    #[serde(default = "default_budget")]
    pub catalog_budget: u32,
    /// Tokens the skill bodies injected in one turn may use (eager, triggered, companions).
    #[serde(default = "default_context_budget")]
    pub context_budget: u32,
    #[serde(default)]
    pub policies: Policies,
    #[serde(default)]
    pub description: String,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            skills: NameSet::None,
            eager: NameSet::None,
            grants: Grants::default(),
            catalog_budget: DEFAULT_CATALOG_BUDGET,
            context_budget: DEFAULT_CONTEXT_BUDGET,
            policies: Policies::default(),
            description: String::new(),
        }
    }
}

/// A stored agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agent {
    pub name: AgentName,
    #[serde(flatten)]
    pub config: AgentConfig,
    /// Bumped on every change (caches key on it).
    pub version: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authors_round_trip() {
        for a in [
            "human:ana",
            "agent:support/inline",
            "agent:support/dreaming",
            "import:pack.zip",
            "seed:/srv/skills/refund",
        ] {
            assert_eq!(a.parse::<Author>().unwrap().to_string(), a);
        }
        for bad in [
            "ana",
            "agent:x/other",
            "human:",
            "robot:x",
            "agent:Bad/inline",
        ] {
            assert!(bad.parse::<Author>().is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_round_trip() {
        assert_eq!("shared".parse::<Scope>().unwrap(), Scope::Shared);
        assert_eq!(
            "agent:support".parse::<Scope>().unwrap().to_string(),
            "agent:support"
        );
        assert!("agent:".parse::<Scope>().is_err());
        assert!("global".parse::<Scope>().is_err());
    }

    #[test]
    fn name_sets() {
        let s: NameSet = serde_json::from_str("\"all\"").unwrap();
        assert_eq!(s, NameSet::All);
        let s: NameSet = serde_json::from_str("[\"b\", \"a\", \"a\"]").unwrap();
        assert_eq!(s.to_string_list(), vec!["a", "b"]);
        assert!(serde_json::from_str::<NameSet>("\"some\"").is_err());
        assert!(serde_json::from_str::<NameSet>("[\"Bad Name\"]").is_err());
        assert_eq!(
            "a, b".parse::<NameSet>().unwrap().to_string_list(),
            vec!["a", "b"]
        );
    }

    impl NameSet {
        fn to_string_list(&self) -> Vec<String> {
            match self {
                NameSet::Names(n) => n.iter().map(|x| x.to_string()).collect(),
                _ => vec![],
            }
        }
    }
}
