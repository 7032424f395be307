//! An agent as the view reads it: its name, the scope a skill record lives in, the skill sets of
//! its allowlist and eager skills, its grants and policies, and its configuration as stored.
//! Plain data with the one check of a configuration ([`AgentConfig::checked`]); the store keeps
//! agents, this crate decides what they see.

use serde::{Deserialize, Serialize};
use skillbase_format::SkillName;
use std::fmt;
use std::str::FromStr;

/// [`AgentName::parse`] as a regular expression.
pub const AGENT_NAME_PATTERN: &str = "^[a-z0-9][a-z0-9_-]{0,63}$";

/// A [`Scope`] as written (`shared` or `agent:<name>`), as a regular expression.
pub const SCOPE_PATTERN: &str = "^(shared|agent:[a-z0-9][a-z0-9_-]{0,63})$";

/// An agent's name: 1–64 characters of lowercase ASCII letters, digits, `-` and `_`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct AgentName(String);

impl AgentName {
    /// Check `raw` as an agent name; the error says what is allowed.
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

    /// The name.
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
    /// Every agent's (`shared`).
    Shared,
    /// One agent's own (`agent:<name>`), seen before the shared record of the same name.
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

/// A set of skill names: every one, none, or a list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NameSet {
    /// Every skill.
    All,
    #[default]
    /// No skill.
    None,
    /// These skills.
    Names(Vec<SkillName>),
}

impl NameSet {
    /// Whether `name` is in the set.
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
            List(Vec<String>),
        }
        let raw = Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "a skill set is \"all\", \"none\", true, false or a list of skill names",
            )
        })?;
        match raw {
            Raw::Word(w) if w == "all" => Ok(NameSet::All),
            Raw::Word(w) if w == "none" => Ok(NameSet::None),
            Raw::Flag(true) => Ok(NameSet::All),
            Raw::Flag(false) => Ok(NameSet::None),
            Raw::List(l) => {
                // References are written as the names they stand for (what the OpenAPI
                // document's SkillName pattern says), so a list means what it shows.
                let mut names = l
                    .iter()
                    .map(|n| SkillName::parse_canonical(n))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(serde::de::Error::custom)?;
                names.sort();
                names.dedup();
                Ok(NameSet::Names(names))
            }
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "'{}' is not a skill set: use \"all\", \"none\" or a list of names",
                skillbase_format::text::escape_controls(&w)
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

/// What an agent may use: tool classes, vault entries and destination hosts. Every list may be
/// left out (empty).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Grants {
    /// Tool classes it may call.
    #[cfg_attr(feature = "openapi", schema(schema_with = skillbase_format::openapi::tool_classes))]
    pub tools: Vec<String>,
    /// Vault entries its calls may use.
    #[cfg_attr(feature = "openapi", schema(schema_with = skillbase_format::openapi::vault_names))]
    pub vault: Vec<String>,
    /// Hosts (or host patterns) its calls may reach.
    #[cfg_attr(feature = "openapi", schema(schema_with = skillbase_format::openapi::hosts))]
    pub hosts: Vec<String>,
}

/// An agent's policies. Approvals are off by default; every field may be left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Policies {
    /// Agent-authored revisions wait as pending until approved.
    pub review_agent_revisions: bool,
    /// A skill declaring capabilities beyond the agent's grants waits for review.
    pub review_envelope_expansion: bool,
    /// Consecutive failed runs of a revision before the skill is disabled.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub failure_threshold: u32,
    /// Calls in flight at once, per agent.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100000))]
    pub max_calls_in_flight: u32,
    /// Network tool calls per session.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1000000))]
    pub max_network_calls_per_session: u32,
    /// Tokens per tool result before it is cut.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10000000))]
    pub max_result_tokens: u32,
    /// Each turn's user message is recorded (redacted, as a `user_message` event) beside the
    /// calls, for learning (`skillbase dream`). Off by default.
    pub record_conversations: bool,
    /// What drift does to a revision that failed `failure_threshold` runs in a row: `disable`
    /// the skill (the default), or `revert` to the newest earlier revision with good outcomes
    /// (disable when there is none).
    pub on_drift: OnDrift,
    /// A new revision this agent writes of a skill that is active (by its authoring tools or by
    /// dreaming) is staged as a candidate instead of replacing the active one: served to
    /// `candidate_percent` of sessions, promoted when its outcomes are not worse than the
    /// active revision's over `candidate_min_runs` ended runs of each, rejected when they are.
    /// Off by default; `review_agent_revisions` (review first) takes precedence.
    pub stage_agent_revisions: bool,
    /// The share of sessions, in percent (1–100), a staged candidate is served to.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub candidate_percent: u32,
    /// Ended runs of the candidate, and of the active revision since it was staged, before the
    /// two are compared (1–10,000).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10000))]
    pub candidate_min_runs: u32,
    /// What a skill whose `requires:` are unmet for this agent gets: `offer` it anyway, with
    /// the reasons in the turn report and in its body (the default), or `withhold` it (not in
    /// the catalog, not loadable, its triggers silent; the report says why).
    pub unmet_requires: UnmetRequires,
}

/// What an agent does with a skill whose requirements are unmet (see
/// [`Policies::unmet_requires`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum UnmetRequires {
    /// Offer it, saying what is missing.
    #[default]
    Offer,
    /// Leave it out of everything the model sees, saying why in the report.
    Withhold,
}

impl std::str::FromStr for UnmetRequires {
    type Err = String;
    fn from_str(s: &str) -> Result<UnmetRequires, String> {
        match s {
            "offer" => Ok(UnmetRequires::Offer),
            "withhold" => Ok(UnmetRequires::Withhold),
            other => Err(format!(
                "unmet_requires must be `offer` or `withhold`, not '{}'",
                other.escape_debug()
            )),
        }
    }
}

/// A revision staged as a candidate (see [`Policies::stage_agent_revisions`]): which, for what
/// share of sessions, judged after how many runs, since when. Stored with the skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The candidate revision.
    pub rev: i64,
    /// The share of sessions, in percent, it is served to.
    pub percent: u32,
    /// Ended runs of each revision before they are compared.
    pub min_runs: u32,
    /// When it was staged (Unix milliseconds): the active revision's runs counted against it
    /// started after this.
    pub staged_at: i64,
}

impl Candidate {
    /// Whether `session` is among the sessions the candidate is served to: a stable hash of the
    /// session and the skill (the same answer on every server and every turn), below `percent`.
    pub fn serves(&self, session: &str, skill_id: i64) -> bool {
        // FNV-1a, 64 bits: stable across processes and builds (no per-process random seed).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in session
            .as_bytes()
            .iter()
            .chain(&[0u8])
            .chain(&skill_id.to_le_bytes())
        {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (h % 100) < u64::from(self.percent.min(100))
    }
}

/// The most runs `candidate_min_runs` may ask for.
pub const MAX_CANDIDATE_MIN_RUNS: u32 = 10_000;

/// What drift does (see [`Policies::on_drift`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnDrift {
    /// Disable the skill until someone reviews it.
    #[default]
    Disable,
    /// Re-activate the newest earlier revision whose runs mostly succeeded.
    Revert,
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
            record_conversations: false,
            on_drift: OnDrift::Disable,
            stage_agent_revisions: false,
            candidate_percent: 20,
            candidate_min_runs: 10,
            unmet_requires: UnmetRequires::Offer,
        }
    }
}

/// Default catalog budget in tokens.
pub const DEFAULT_CATALOG_BUDGET: u32 = 4000;
/// Default budget in tokens for skill bodies injected in one turn (eager, triggered, companions).
pub const DEFAULT_CONTEXT_BUDGET: u32 = 16000;
/// The largest budget (catalog, context or re-attach) anything accepts, in tokens: ten times
/// the largest context windows models have, so a larger number is a mistake, not a wish.
pub const MAX_BUDGET: u32 = 10_000_000;

/// The most consecutive failed runs `failure_threshold` may wait for.
pub const MAX_FAILURE_THRESHOLD: u32 = 1000;
/// The largest `max_calls_in_flight`.
pub const MAX_CALLS_IN_FLIGHT: u32 = 100_000;
/// The largest `max_network_calls_per_session`.
pub const MAX_NETWORK_CALLS_PER_SESSION: u32 = 1_000_000;

/// Check a budget given as `field`: at most [`MAX_BUDGET`] tokens; the error says so.
pub fn check_budget(field: &str, tokens: u32) -> Result<u32, String> {
    if tokens > MAX_BUDGET {
        Err(format!(
            "{field}: {tokens} tokens is over the largest budget, {MAX_BUDGET}"
        ))
    } else {
        Ok(tokens)
    }
}

/// Most prompts an agent may list.
pub const MAX_PROMPTS: usize = 32;
/// Largest prompt file (or prompt given to check) the doctor reads, in bytes: a harness's
/// instructions, never a corpus.
pub const MAX_PROMPT_BYTES: usize = 256 * 1024;
/// Longest prompt written inline in an agent's configuration, in characters.
pub const MAX_PROMPT_CHARS: usize = 65_536;
/// Longest prompt path, in characters.
pub const MAX_PROMPT_PATH_CHARS: usize = 4096;

/// One of the harness's own instructions to the agent, which the doctor reads for the skills
/// they name: a file (a bare string is a path) or the text itself. Written as
/// `"prompts/support.md"`, `{path = "..."}` or `{text = "..."}`; stored and shown as a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Prompt {
    /// A file holding the prompt (relative paths in `skillbase.toml` are read from its folder).
    Path(String),
    /// The prompt itself.
    Text(String),
}

impl<'de> Deserialize<'de> for Prompt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "lowercase")]
        enum Table {
            Path(String),
            Text(String),
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Path(String),
            Table(Table),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "a prompt is a path, {\"path\": \"...\"} or {\"text\": \"...\"}",
            )
        })? {
            Raw::Path(p) | Raw::Table(Table::Path(p)) => Ok(Prompt::Path(p)),
            Raw::Table(Table::Text(t)) => Ok(Prompt::Text(t)),
        }
    }
}

/// Check an agent's prompts: at most [`MAX_PROMPTS`]; a path of 1 to
/// [`MAX_PROMPT_PATH_CHARS`] characters with no control characters; a text of 1 to
/// [`MAX_PROMPT_CHARS`] characters. The error names the entry.
pub fn check_prompts(prompts: &[Prompt]) -> Result<(), String> {
    if prompts.len() > MAX_PROMPTS {
        return Err(format!(
            "prompts: at most {MAX_PROMPTS} prompts, not {}",
            prompts.len()
        ));
    }
    for (i, p) in prompts.iter().enumerate() {
        match p {
            Prompt::Path(path) => {
                let n = path.chars().count();
                if n == 0 || n > MAX_PROMPT_PATH_CHARS || path.chars().any(char::is_control) {
                    return Err(format!(
                        "prompts[{i}]: a path is 1 to {MAX_PROMPT_PATH_CHARS} characters with no control characters"
                    ));
                }
            }
            Prompt::Text(text) => {
                let n = text.chars().count();
                if n == 0 || n > MAX_PROMPT_CHARS {
                    return Err(format!(
                        "prompts[{i}]: a prompt's text is 1 to {MAX_PROMPT_CHARS} characters ({n} given)"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn default_budget() -> u32 {
    DEFAULT_CATALOG_BUDGET
}

fn default_context_budget() -> u32 {
    DEFAULT_CONTEXT_BUDGET
}

/// An agent's configuration. Every field may be left out (its default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The skills it may see.
    #[serde(default)]
    pub skills: NameSet,
    /// The skills in its prompt every turn.
    #[serde(default)]
    pub eager: NameSet,
    #[serde(default)]
    /// What it may use.
    pub grants: Grants,
    /// Tokens the level-1 catalog may use.
    #[serde(default = "default_budget")]
    #[cfg_attr(feature = "openapi", schema(maximum = 10000000))]
    pub catalog_budget: u32,
    /// Tokens the skill bodies injected in one turn may use (eager, triggered, companions).
    #[serde(default = "default_context_budget")]
    #[cfg_attr(feature = "openapi", schema(maximum = 10000000))]
    pub context_budget: u32,
    #[serde(default)]
    /// How its own writes are treated.
    pub policies: Policies,
    #[serde(default)]
    /// What the agent is for, in the operator's words.
    pub description: String,
    /// The harness's own instructions to this agent (files or text), read by the doctor for
    /// skills they name that the agent may not load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 32))]
    pub prompts: Vec<Prompt>,
}

impl AgentConfig {
    /// The configuration checked and normalised — the one check, made by the store on every
    /// write of an agent, so the CLI, REST and `skillbase.toml` accept exactly the same: tool
    /// classes, vault entry names and host patterns in the format crate's grammars (hosts
    /// lowercased), `failure_threshold` and `max_calls_in_flight` at least 1, prompts within
    /// [`check_prompts`]. The error names the field and says what to fix.
    pub fn checked(mut self) -> Result<AgentConfig, String> {
        use skillbase_format::validate::{check_host, check_tool_class, check_vault_name};
        for t in &self.grants.tools {
            if let Some(problem) = check_tool_class(t) {
                return Err(format!("grants.tools: '{t}' {problem}"));
            }
        }
        for v in &self.grants.vault {
            if let Some(problem) = check_vault_name(v) {
                return Err(format!("grants.vault: '{v}' {problem}"));
            }
        }
        for h in &mut self.grants.hosts {
            if let Some(problem) = check_host(h) {
                return Err(format!("grants.hosts: '{h}' {problem}"));
            }
            *h = h.to_ascii_lowercase();
        }
        check_budget("catalog_budget", self.catalog_budget)?;
        check_budget("context_budget", self.context_budget)?;
        check_prompts(&self.prompts)?;
        let p = &self.policies;
        for (field, value, min, max) in [
            (
                "failure_threshold",
                p.failure_threshold,
                1,
                MAX_FAILURE_THRESHOLD,
            ),
            (
                "max_calls_in_flight",
                p.max_calls_in_flight,
                1,
                MAX_CALLS_IN_FLIGHT,
            ),
            (
                "max_network_calls_per_session",
                p.max_network_calls_per_session,
                0,
                MAX_NETWORK_CALLS_PER_SESSION,
            ),
            ("max_result_tokens", p.max_result_tokens, 0, MAX_BUDGET),
            ("candidate_percent", p.candidate_percent, 1, 100),
            (
                "candidate_min_runs",
                p.candidate_min_runs,
                1,
                MAX_CANDIDATE_MIN_RUNS,
            ),
        ] {
            if !(min..=max).contains(&value) {
                return Err(format!(
                    "policies.{field} must be from {min} to {max}, not {value}"
                ));
            }
        }
        Ok(self)
    }
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
            prompts: Vec::new(),
        }
    }
}

/// A stored agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agent {
    /// Its name.
    pub name: AgentName,
    #[serde(flatten)]
    /// Its configuration.
    pub config: AgentConfig,
    /// Bumped on every change (caches key on it).
    pub version: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

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
