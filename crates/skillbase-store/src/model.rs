//! The store's nouns: authors, revision messages, status changes. The nouns a view reads too
//! (agents, scopes, statuses) are `skillbase-route`'s, re-exported here.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

pub use skillbase_route::agent::{
    AGENT_NAME_PATTERN, Agent, AgentConfig, AgentName, Candidate, DEFAULT_CATALOG_BUDGET,
    DEFAULT_CONTEXT_BUDGET, Grants, MAX_BUDGET, MAX_CALLS_IN_FLIGHT, MAX_CANDIDATE_MIN_RUNS,
    MAX_FAILURE_THRESHOLD, MAX_NETWORK_CALLS_PER_SESSION, MAX_PROMPT_BYTES, MAX_PROMPT_CHARS,
    MAX_PROMPT_PATH_CHARS, MAX_PROMPTS, NameSet, OnDrift, Policies, Prompt, SCOPE_PATTERN, Scope,
    UnmetRequires, check_budget, check_prompts,
};
pub use skillbase_route::index::Status;

/// Who wrote a revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Author {
    /// A person (`human:<id>`).
    Human(String),
    /// An agent, while working (`agent:<id>/inline`).
    AgentInline(AgentName),
    /// An agent, between sessions (`agent:<id>/dreaming`).
    AgentDreaming(AgentName),
    /// An import (`import:<source>`).
    Import(String),
    /// A seed folder (`seed:<path>`).
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

/// Longest revision message, in characters (every surface: CLI, REST, the authoring tools).
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// [`check_message`] as a regular expression.
pub const MESSAGE_PATTERN: &str = r"^[^\u0000-\u0009\u000b-\u001f\u007f-\u009f]{0,2000}$";

/// A revision message is at most [`MAX_MESSAGE_CHARS`] characters with no control character but
/// newlines; the error says so.
pub fn check_message(message: &str) -> Result<(), String> {
    if message.chars().count() > MAX_MESSAGE_CHARS
        || message.chars().any(|c| c.is_control() && c != '\n')
    {
        return Err(format!(
            "a revision message is at most {MAX_MESSAGE_CHARS} characters, with no control characters but newlines"
        ));
    }
    Ok(())
}

/// Longest model id a stored vector may be kept under, in characters
/// ([`crate::Store::put_vectors`]).
pub const MAX_VECTOR_MODEL_CHARS: usize = 200;

/// [`check_session_id`] as a regular expression.
pub const SESSION_ID_PATTERN: &str = r"^[^/\\\u0000-\u001f\u007f-\u009f]{1,128}$";

/// Check a session id: 1-128 characters, no slashes (`/`, `\\`) or control characters.
pub fn check_session_id(id: &str) -> Result<(), String> {
    if id.is_empty()
        || id.chars().count() > 128
        || id.chars().any(|c| c.is_control() || c == '/' || c == '\\')
    {
        let shown: String = id.chars().take(128).collect();
        return Err(format!(
            "invalid session id '{}': 1-128 characters, no slashes or control characters",
            shown.escape_debug()
        ));
    }
    Ok(())
}

/// [`check_token_label`] as a regular expression.
pub const TOKEN_LABEL_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]{0,200}$";

/// Check an API token's label: at most 200 characters, no control characters.
pub fn check_token_label(label: &str) -> Result<(), String> {
    if label.chars().count() > 200 || label.chars().any(char::is_control) {
        return Err("token label: at most 200 characters, no control characters".into());
    }
    Ok(())
}

/// A change of a skill's status, as every surface asks for it (CLI, REST, tools, the drift
/// guard). [`StatusChange::apply`] is the one transition table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusChange {
    /// Take the skill out of use, keeping every revision.
    Retire,
    /// Bring a retired skill back.
    Restore,
    /// Stop offering the skill (drift, or an operator).
    Disable,
    /// Offer a disabled skill again.
    Enable,
}

/// Why a status change cannot be made from the current status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusRefusal {
    /// Only a retired skill can be restored.
    NotRetired(Status),
    /// A retired skill must be restored first.
    Retired,
    /// A skill waiting for review is approved, not enabled.
    Pending,
}

impl StatusRefusal {
    /// What to do instead, for any surface (no command names).
    pub fn message(self, name: &str) -> String {
        match self {
            StatusRefusal::NotRetired(s) => format!(
                "skill '{name}' is {s}, not retired: there is nothing to restore{}",
                if s == Status::Disabled {
                    " (enable it instead)"
                } else {
                    ""
                }
            ),
            StatusRefusal::Retired => {
                format!("skill '{name}' is retired: restore it first")
            }
            StatusRefusal::Pending => {
                format!("skill '{name}' is waiting for review: approve its revision instead")
            }
        }
    }
}

impl StatusChange {
    /// As asked for (`retire`, `restore`, `disable`, `enable`).
    pub fn as_str(self) -> &'static str {
        match self {
            StatusChange::Retire => "retire",
            StatusChange::Restore => "restore",
            StatusChange::Disable => "disable",
            StatusChange::Enable => "enable",
        }
    }

    /// The status after this change from `from`: `Ok(None)` when it is already there (nothing
    /// to write), or why it cannot be made.
    ///
    /// | change | active | disabled | retired | pending |
    /// | --- | --- | --- | --- | --- |
    /// | retire | retired | retired | — | retired |
    /// | restore | refused | refused | active | refused |
    /// | disable | disabled | — | refused | disabled |
    /// | enable | — | active | refused | refused |
    pub fn apply(self, from: Status) -> Result<Option<Status>, StatusRefusal> {
        use Status::*;
        use StatusChange::*;
        match (self, from) {
            (Retire, Retired) | (Disable, Disabled) | (Enable, Active) => Ok(None),
            (Retire, _) => Ok(Some(Retired)),
            (Restore, Retired) => Ok(Some(Active)),
            (Restore, s) => Err(StatusRefusal::NotRetired(s)),
            (Disable | Enable, Retired) => Err(StatusRefusal::Retired),
            (Disable, _) => Ok(Some(Disabled)),
            (Enable, Disabled) => Ok(Some(Active)),
            (Enable, Pending) => Err(StatusRefusal::Pending),
        }
    }

    /// The kind of the event the change records.
    pub fn event_kind(self) -> crate::events::EventKind {
        use crate::events::EventKind;
        match self {
            StatusChange::Retire => EventKind::Retired,
            StatusChange::Restore => EventKind::Restored,
            StatusChange::Disable => EventKind::Disabled,
            StatusChange::Enable => EventKind::Enabled,
        }
    }
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

    /// Each pattern accepts exactly what its parser or check accepts.
    #[test]
    fn patterns_are_the_checks() {
        let matches = |pattern: &str, s: &str| {
            let schema = serde_json::json!({"type": "string", "pattern": pattern});
            jsonschema::validator_for(&schema)
                .unwrap()
                .is_valid(&serde_json::json!(s))
        };
        let long = |c: &str, n: usize| c.repeat(n);
        let mut samples: Vec<String> = [
            "a",
            "support",
            "a_b-c",
            "0x",
            "",
            "-a",
            "_a",
            "A",
            "a.b",
            "a b",
            "é",
            "a\n",
            "shared",
            "Shared",
            "agent:support",
            "agent:",
            "agent:-x",
            "agents:x",
            " shared",
            "shared\n",
            "s1",
            "mcp:x:y",
            "a/b",
            "a\\b",
            "a\u{1}",
            "a\u{9f}",
            "a\u{a0}",
            "two\nlines",
            "tab\there",
            "bell\u{7}",
            "c1\u{85}",
            "cr\r",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for n in [63, 64, 65, 127, 128, 129, 199, 200, 201, 1999, 2000, 2001] {
            samples.push(long("a", n));
            samples.push(long("é", n));
            samples.push(format!("agent:{}", long("a", n)));
        }
        type Check<'a> = &'a dyn Fn(&str) -> bool;
        let checks: [(&str, Check); 5] = [
            (AGENT_NAME_PATTERN, &|s| AgentName::parse(s).is_ok()),
            (SCOPE_PATTERN, &|s| s.parse::<Scope>().is_ok()),
            (MESSAGE_PATTERN, &|s| check_message(s).is_ok()),
            (SESSION_ID_PATTERN, &|s| check_session_id(s).is_ok()),
            (TOKEN_LABEL_PATTERN, &|s| check_token_label(s).is_ok()),
        ];
        for (pattern, check) in checks {
            for s in &samples {
                assert_eq!(matches(pattern, s), check(s), "{pattern} on {s:?}");
            }
        }
    }
}

#[cfg(test)]
mod status_tests {
    use super::{Status, StatusChange, StatusRefusal};

    /// The whole table, row by row: every surface answers from it.
    #[test]
    fn one_transition_table() {
        use Status::*;
        use StatusChange::*;
        type Row = [Result<Option<Status>, StatusRefusal>; 4];
        let table: [(StatusChange, Row); 4] = [
            (
                Retire,
                [
                    Ok(Some(Retired)),
                    Ok(Some(Retired)),
                    Ok(None),
                    Ok(Some(Retired)),
                ],
            ),
            (
                Restore,
                [
                    Err(StatusRefusal::NotRetired(Active)),
                    Err(StatusRefusal::NotRetired(Disabled)),
                    Ok(Some(Active)),
                    Err(StatusRefusal::NotRetired(Pending)),
                ],
            ),
            (
                Disable,
                [
                    Ok(Some(Disabled)),
                    Ok(None),
                    Err(StatusRefusal::Retired),
                    Ok(Some(Disabled)),
                ],
            ),
            (
                Enable,
                [
                    Ok(None),
                    Ok(Some(Active)),
                    Err(StatusRefusal::Retired),
                    Err(StatusRefusal::Pending),
                ],
            ),
        ];
        for (change, row) in table {
            for (from, want) in [Active, Disabled, Retired, Pending].into_iter().zip(row) {
                assert_eq!(change.apply(from), want, "{change:?} from {from}");
            }
        }
        assert!(
            StatusRefusal::NotRetired(Disabled)
                .message("x")
                .contains("enable it instead")
        );
        assert!(!StatusRefusal::Retired.message("x").contains("skillbase"));
    }
}
