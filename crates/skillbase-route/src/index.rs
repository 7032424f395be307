//! The in-memory index of skills: what readers see, swapped atomically as a whole by the store,
//! which builds it; a view is made from one snapshot.
//!
//! Readers take a snapshot (`Arc<Index>`) without locks and never see a half-applied reload;
//! writers build a new index and swap it in. [`Index::from_entries`] makes one without a
//! database (tests, evaluation, benchmarks).

use crate::agent::{AgentName, Candidate, Scope};
use serde::{Deserialize, Serialize};
use skillbase_format::{Digest, SkillMeta};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A skill record's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Offered to the agents that may see it.
    Active,
    /// Kept but not offered (drift, or an operator).
    Disabled,
    /// Out of use, every revision kept; refuses writes until restored.
    Retired,
    /// Created by an agent under the approval policy: waits for `approve`, not offered.
    Pending,
}

impl Status {
    /// As stored and shown (`active`, `disabled`, `retired`, `pending`).
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

/// One file of a skill's active revision.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileRef {
    /// Its path in the bundle.
    pub path: String,
    /// SHA-256 of its bytes.
    pub digest: Digest,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it is executable.
    pub executable: bool,
}

/// A skill record with its active revision, parsed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SkillEntry {
    /// The record's id.
    pub id: i64,
    /// Where the record lives.
    pub scope: Scope,
    /// The skill's name.
    pub name: String,
    /// Its status.
    pub status: Status,
    /// The revision in use.
    pub active_rev: i64,
    /// The latest revision (above `active_rev` after a revert or while one is pending).
    pub head_rev: i64,
    /// Digest of the active revision's bundle.
    pub digest: Digest,
    /// Author of the active revision.
    pub author: String,
    /// The active revision's frontmatter, parsed.
    pub meta: SkillMeta,
    /// The body of SKILL.md (after the frontmatter, trimmed).
    pub body: String,
    /// The whole frontmatter as JSON, plain scalars resolved by the YAML 1.2 core schema (what
    /// a host re-parsing SKILL.md gets); served by MCP's Skills extension without reading files.
    #[serde(skip)]
    pub frontmatter: Arc<serde_json::Map<String, serde_json::Value>>,
    /// The active revision's files, by path.
    pub files: Vec<FileRef>,
    /// The seed folder the skill follows, while it follows one.
    pub seed_path: Option<String>,
    /// When the record last changed (Unix milliseconds).
    pub updated_at: i64,
    /// Where things are in the active revision's SKILL.md (for messages that name a line).
    #[serde(skip)]
    pub lines: Arc<SourceLines>,
    /// A revision staged as a candidate beside the active one, with its entry (the skill as
    /// served at that revision: its `active_rev` is the candidate's).
    #[serde(skip)]
    pub candidate: Option<(Candidate, Arc<SkillEntry>)>,
    /// The fingerprint (`SHA256:...`) of the key that signed the active revision, when it was
    /// written signed (shown in listings and to MCP clients).
    pub signer: Option<String>,
}

impl SkillEntry {
    /// The entry `session` is served: the candidate's for the share of sessions it is staged
    /// for, else this one.
    pub fn served_to<'a>(self: &'a Arc<Self>, session: &str) -> &'a Arc<SkillEntry> {
        match &self.candidate {
            Some((c, e)) if c.serves(session, self.id) => e,
            _ => self,
        }
    }
}

/// Lines of a SKILL.md: where the body starts and where each top-level frontmatter key's value
/// is, 1-based lines of the file (as the validator reports them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceLines {
    /// The line of the first character of [`SkillEntry::body`] (the body trimmed).
    pub body: u32,
    /// Each top-level key and its line, in file order.
    pub keys: Vec<(String, u32)>,
}

impl SourceLines {
    /// The lines of `text`, already parsed as `md`.
    pub fn of(text: &str, md: &skillbase_format::SkillMd) -> SourceLines {
        let first = md.yaml_first_line.saturating_sub(1);
        let split = skillbase_format::frontmatter::split(text).ok();
        // A top-level key of a block mapping starts its line (`key:`); a flow mapping's keys,
        // or a key that cannot be found so, are placed at their value's line.
        let key_line = |key: &str, value_line: usize| -> usize {
            let Some(parts) = split else {
                return value_line + first;
            };
            parts
                .yaml
                .lines()
                .position(|l| {
                    [key.to_owned(), format!("\"{key}\""), format!("'{key}'")]
                        .iter()
                        .any(|k| {
                            l.strip_prefix(k.as_str())
                                .is_some_and(|rest| rest.trim_start().starts_with(':'))
                        })
                })
                .map_or(value_line + first, |i| i + parts.yaml_first_line)
        };
        let keys = md
            .frontmatter
            .entries
            .iter()
            .map(|(k, v)| (k.clone(), line_u32(key_line(k, v.line()))))
            .collect();
        // The body as `SkillMd` keeps it (line ends read as LF) follows the closing delimiter;
        // the trimmed body starts after its leading blank lines.
        let body = match split {
            Some(parts) => {
                let head = &text[..text.len() - parts.body.len()];
                let leading = &md.raw_body[..md.raw_body.len() - md.raw_body.trim_start().len()];
                1 + head.matches('\n').count() + leading.matches('\n').count()
            }
            None => 1,
        };
        SourceLines {
            body: line_u32(body),
            keys,
        }
    }

    /// The line of a top-level frontmatter key.
    pub fn key(&self, key: &str) -> Option<u32> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, l)| *l)
    }
}

fn line_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl SkillEntry {
    /// The entry of a skill's first active revision, made from its SKILL.md text without a
    /// database (id 0, no files but SKILL.md's own digest, not following a seed). Fails with
    /// what to fix when the text has no parseable frontmatter or lacks `name` or `description`.
    pub fn from_skill_md(scope: Scope, text: &str, author: &str) -> Result<SkillEntry, String> {
        let md = skillbase_format::SkillMd::parse(text, &Default::default())
            .map_err(|e| format!("{e}: {}", e.hint()))?;
        let meta = SkillMeta::from_md(&md)
            .ok_or("SKILL.md needs `name` and `description` in its frontmatter")?;
        let frontmatter =
            match skillbase_format::yaml::Node::Map(md.frontmatter.clone()).to_typed_json() {
                serde_json::Value::Object(m) => m,
                _ => serde_json::Map::new(),
            };
        Ok(SkillEntry {
            id: 0,
            scope,
            name: meta.name.clone(),
            status: Status::Active,
            active_rev: 1,
            head_rev: 1,
            digest: Digest::of(text.as_bytes()),
            author: author.to_owned(),
            body: md.body().to_owned(),
            frontmatter: Arc::new(frontmatter),
            meta,
            files: Vec::new(),
            seed_path: None,
            updated_at: 0,
            lines: Arc::new(SourceLines::of(text, &md)),
            candidate: None,
            signer: None,
        })
    }
}

type ScopeMap = HashMap<Arc<str>, Arc<SkillEntry>>;

/// All skill records by scope and name.
#[derive(Debug, Clone, Default)]
pub struct Index {
    shared: Arc<ScopeMap>,
    agents: HashMap<AgentName, Arc<ScopeMap>>,
    /// Increases with every change; caches key on it.
    pub generation: u64,
}

impl Index {
    /// An index of these entries (the last of two with the same scope and name wins). The store
    /// builds its index this way; an embedder or a test can resolve turns over an index it made
    /// without a database.
    pub fn from_entries(entries: impl IntoIterator<Item = SkillEntry>, generation: u64) -> Index {
        let mut shared = ScopeMap::new();
        let mut agents: HashMap<AgentName, ScopeMap> = HashMap::new();
        for e in entries {
            let key: Arc<str> = Arc::from(e.name.as_str());
            match &e.scope {
                Scope::Shared => {
                    shared.insert(key, Arc::new(e));
                }
                Scope::Agent(a) => {
                    agents
                        .entry(a.clone())
                        .or_default()
                        .insert(key, Arc::new(e));
                }
            }
        }
        Index {
            shared: Arc::new(shared),
            agents: agents.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
            generation,
        }
    }

    /// A copy with one record replaced or removed (only that scope's map is copied): the
    /// store's own updates, and a what-if (a skill at another revision, say) for evaluation.
    pub fn with(&self, scope: &Scope, name: &str, entry: Option<SkillEntry>) -> Index {
        let mut next = self.clone();
        next.generation += 1;
        let map = match scope {
            Scope::Shared => &mut next.shared,
            Scope::Agent(a) => next.agents.entry(a.clone()).or_default(),
        };
        let m = Arc::make_mut(map);
        match entry {
            Some(e) => {
                m.insert(Arc::from(name), Arc::new(e));
            }
            None => {
                m.remove(name);
            }
        }
        next
    }

    /// The record stored at exactly this scope and name.
    pub fn get(&self, scope: &Scope, name: &str) -> Option<&Arc<SkillEntry>> {
        match scope {
            Scope::Shared => self.shared.get(name),
            Scope::Agent(a) => self.agents.get(a)?.get(name),
        }
    }

    /// What `name` means for an agent: its own record, else the shared one.
    pub fn resolve(&self, agent: &AgentName, name: &str) -> Option<&Arc<SkillEntry>> {
        self.agents
            .get(agent)
            .and_then(|m| m.get(name))
            .or_else(|| self.shared.get(name))
    }

    /// Every record in a scope.
    pub fn scope(&self, scope: &Scope) -> impl Iterator<Item = &Arc<SkillEntry>> {
        let map = match scope {
            Scope::Shared => Some(&self.shared),
            Scope::Agent(a) => self.agents.get(a),
        };
        map.into_iter().flat_map(|m| m.values())
    }

    /// Every record an agent resolves to (its own overriding shared), sorted by name.
    pub fn resolved_for(&self, agent: &AgentName) -> Vec<&Arc<SkillEntry>> {
        let own = self.agents.get(agent);
        let mut out: Vec<&Arc<SkillEntry>> = self
            .shared
            .iter()
            .filter(|(k, _)| own.is_none_or(|o| !o.contains_key(*k)))
            .map(|(_, v)| v)
            .chain(own.into_iter().flat_map(|o| o.values()))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Every record in every scope.
    pub fn all(&self) -> impl Iterator<Item = &Arc<SkillEntry>> {
        self.shared
            .values()
            .chain(self.agents.values().flat_map(|m| m.values()))
    }

    /// How many records, every scope together.
    pub fn len(&self) -> usize {
        self.shared.len() + self.agents.values().map(|m| m.len()).sum::<usize>()
    }

    /// Whether there is no record at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_keys_and_body() {
        let text = "---\nname: a\ndescription: >-\n  d\ntriggers: [x]\ncapabilities:\n  tools:\n    - notes\neager: true\n---\n\n\n# Body\nline\n";
        let e = SkillEntry::from_skill_md(Scope::Shared, text, "t").unwrap();
        assert_eq!(e.lines.key("name"), Some(2));
        assert_eq!(e.lines.key("description"), Some(3));
        assert_eq!(e.lines.key("triggers"), Some(5));
        assert_eq!(e.lines.key("capabilities"), Some(6));
        assert_eq!(e.lines.key("eager"), Some(9));
        assert_eq!(e.lines.key("nope"), None);
        assert_eq!(e.lines.body, 13);
        assert!(e.body.starts_with("# Body"));
        // CRLF and a BOM count the same lines.
        let crlf = format!("\u{feff}{}", text.replace('\n', "\r\n"));
        let e = SkillEntry::from_skill_md(Scope::Shared, &crlf, "t").unwrap();
        assert_eq!((e.lines.key("eager"), e.lines.body), (Some(9), 13));
    }
}
