//! The typed view of a skill's frontmatter: the six Agent Skills keys plus Skillbase's optional
//! `triggers`, `companions`, `inputs`, `capabilities`, `cost`, `when_to_use`, `when_not_to_use`,
//! `version` and `requires` (also read from `metadata.skillbase`), and the peer keys Skillbase
//! honours: `disable-model-invocation`, `user-invocable`, `paths`, `argument-hint`, `arguments`,
//! and `allowed-tools` read into capabilities where it maps ([`crate::allowed_tools`]).
//!
//! [`SkillMeta::from_md`] is lenient (it never fails on an optional key; validation reports those
//! problems), so a runtime can load whatever the validator let through.

use crate::frontmatter::SkillMd;
use crate::name::SkillName;
use crate::yaml::{Node, string_list};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

pub use crate::keys::{IGNORED_PEER_KEYS, PEER_KEYS, SKILLBASE_KEYS, SPEC_KEYS};

/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest compatibility note, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// Longest trigger phrase, in characters.
pub const MAX_TRIGGER_CHARS: usize = 200;
/// Most triggers one skill may declare.
pub const MAX_TRIGGERS: usize = 64;
/// Most `when_to_use` (or `when_not_to_use`) entries one skill may declare.
pub const MAX_WHEN_ENTRIES: usize = 5;
/// Longest `when_to_use` or `when_not_to_use` entry, in characters.
pub const MAX_WHEN_CHARS: usize = 200;

/// Most `paths` globs one skill may declare.
pub const MAX_PATHS: usize = 32;
/// Longest `argument-hint`, in characters.
pub const MAX_ARGUMENT_HINT_CHARS: usize = 200;
/// Most named `arguments` one skill may declare.
pub const MAX_ARGUMENTS: usize = 16;

/// A latency class: how long a call or a skill may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CostClass))]
#[serde(rename_all = "snake_case")]
pub enum Cost {
    /// Answers at once; the runtime bounds such a call to 5 seconds of wall clock. The default.
    #[default]
    Immediate,
    /// Takes seconds; bounded to 30 seconds, and may be detached by the caller.
    Seconds,
    /// Takes tens of seconds; bounded to 120 seconds, and may be detached by the caller.
    TensOfSeconds,
}

impl Cost {
    /// Every class, fastest first.
    pub const ALL: [Cost; 3] = [Cost::Immediate, Cost::Seconds, Cost::TensOfSeconds];

    /// The class as written in frontmatter: `immediate`, `seconds` or `tens_of_seconds`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cost::Immediate => "immediate",
            Cost::Seconds => "seconds",
            Cost::TensOfSeconds => "tens_of_seconds",
        }
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Cost {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "immediate" => Ok(Cost::Immediate),
            "seconds" => Ok(Cost::Seconds),
            "tens_of_seconds" => Ok(Cost::TensOfSeconds),
            other => Err(format!(
                "unknown cost class '{other}': use immediate, seconds or tens_of_seconds"
            )),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Cost {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What a skill declares it will use. A request, never a grant: the runtime intersects it with
/// the agent's current grants on every call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Capabilities {
    /// Tool classes (`web_fetch`, `notes`, ...).
    pub tools: Vec<String>,
    /// Vault entry names (never values).
    pub vault: Vec<String>,
    /// Destination hosts, `host` or `host:port`.
    pub hosts: Vec<String>,
}

impl Capabilities {
    /// Whether the skill declares no tools, vault entries or hosts at all.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.vault.is_empty() && self.hosts.is_empty()
    }
}

/// The frontmatter of a skill, typed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillMeta {
    /// The `name` value, trimmed and NFKC-normalised but not validated (see [`SkillName`] for the
    /// checked form).
    pub name: String,
    /// The `description` value, trimmed; the validator caps it at [`MAX_DESCRIPTION_CHARS`]
    /// characters.
    pub description: String,
    /// The SPDX identifier or licence note from `license`, if it is a string.
    pub license: Option<String>,
    /// The `compatibility` note (environment requirements), if it is a string.
    pub compatibility: Option<String>,
    /// The spec's `allowed-tools` value, as one raw string (not split).
    pub allowed_tools: Option<String>,
    /// The `metadata` mapping as `(key, value)` pairs in file order; non-string values are
    /// rendered as Python's `str()` would (the reference's behaviour).
    pub metadata: Vec<(String, String)>,
    /// Phrases that activate the skill when they appear in a message; blank entries dropped.
    pub triggers: Vec<String>,
    /// Skills to load alongside this one; entries that are not valid names are dropped.
    pub companions: Vec<SkillName>,
    /// The JSON Schema of the skill's arguments, typed (numbers are numbers).
    pub inputs: Option<serde_json::Value>,
    /// The tools, vault entries and hosts the skill asks for (a request, not a grant).
    pub capabilities: Capabilities,
    /// The latency class from `cost`; [`Cost::Immediate`] when absent or unrecognised.
    pub cost: Cost,
    /// `when_to_use`: situations the skill is for, in the user's words (extra ranking text);
    /// blank entries dropped.
    pub when_to_use: Vec<String>,
    /// `when_not_to_use`: phrases that, found in a message, lower the skill's rank and keep its
    /// triggers from firing; blank entries dropped.
    pub when_not_to_use: Vec<String>,
    /// `version`, as written (a semantic version once validated: [`crate::SkillVersion`]).
    pub version: Option<String>,
    /// `requires`: skills (with version ranges), tool classes, MCP servers and programs the
    /// skill cannot work without.
    pub requires: crate::requires::Requires,
    /// `disable-model-invocation: true` (Claude Code's): never offered to the model (catalog,
    /// `load_skill`, triggers, paths, eager); only the user's explicit invocation brings it in.
    pub disable_model_invocation: bool,
    /// `user-invocable` (Claude Code's; true unless `false`): whether a user may invoke the
    /// skill explicitly (`/name`, `$name`).
    pub user_invocable: bool,
    /// `paths` (Claude Code's): globs ([`crate::glob`]) of file paths that activate the skill
    /// when a turn names one; globs that do not compile dropped, at most [`MAX_PATHS`].
    pub paths: Vec<String>,
    /// `argument-hint` (Claude Code's): what to type after `/name`, for people.
    pub argument_hint: Option<String>,
    /// `arguments` (Claude Code's): names for the positional arguments of an explicit
    /// invocation, substituted as `$name`.
    pub arguments: Vec<String>,
    /// Display metadata (Codex's `agents/openai.yaml` `interface`), for people; empty unless
    /// [`SkillMeta::with_codex`] applied one.
    #[serde(skip_serializing_if = "crate::openai_yaml::Interface::is_empty")]
    pub display: crate::openai_yaml::Interface,
}

impl SkillMeta {
    /// The `version`, checked; `None` when absent or not a semantic version (validation
    /// reports the latter).
    pub fn semver(&self) -> Option<crate::SkillVersion> {
        self.version
            .as_deref()
            .and_then(|v| crate::SkillVersion::parse(v).ok())
    }

    /// The typed view of a parsed SKILL.md; `None` when `name` or `description` is missing.
    pub fn from_md(md: &SkillMd) -> Option<SkillMeta> {
        let name = crate::name::normalize(md.name()?);
        let description = md.description()?.to_owned();
        let opt = |k: &str| md.get(k).and_then(Node::as_str).map(str::to_owned);
        let metadata = md
            .get("metadata")
            .and_then(Node::as_map)
            .map(|m| {
                m.entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.python_str()))
                    .collect()
            })
            .unwrap_or_default();
        let mut meta = SkillMeta {
            name,
            description,
            license: opt("license"),
            compatibility: opt("compatibility"),
            allowed_tools: opt("allowed-tools"),
            metadata,
            triggers: string_list(md.get("triggers"))
                .into_iter()
                .filter(|t| !t.trim().is_empty())
                .collect(),
            companions: string_list(md.get("companions"))
                .iter()
                .filter_map(|c| SkillName::parse(c).ok())
                .collect(),
            inputs: md.get("inputs").map(Node::to_typed_json),
            capabilities: capabilities(md.get("capabilities")),
            cost: md
                .get("cost")
                .and_then(Node::as_str)
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or_default(),
            when_to_use: non_blank(string_list(md.get("when_to_use"))),
            when_not_to_use: non_blank(string_list(md.get("when_not_to_use"))),
            version: md.get("version").and_then(Node::as_str).map(str::to_owned),
            requires: crate::requires::Requires::from_node(md.get("requires")),
            disable_model_invocation: md.get("disable-model-invocation").and_then(boolean)
                == Some(true),
            user_invocable: md.get("user-invocable").and_then(boolean) != Some(false),
            paths: path_globs(md.get("paths"))
                .into_iter()
                .filter(|g| crate::glob::PathGlob::new(g).is_ok())
                .take(MAX_PATHS)
                .collect(),
            argument_hint: md
                .get("argument-hint")
                .and_then(Node::as_str)
                .map(|h| h.trim().chars().take(MAX_ARGUMENT_HINT_CHARS).collect()),
            arguments: argument_names(md.get("arguments"))
                .into_iter()
                .filter(|a| valid_argument_name(a))
                .take(MAX_ARGUMENTS)
                .collect(),
            display: Default::default(),
        };
        meta.capabilities = merged(meta.capabilities, allowed_tools(md.get("allowed-tools")));
        Some(meta)
    }
}

impl SkillMeta {
    /// Apply what Codex's `agents/openai.yaml` says where it maps onto Skillbase's keys:
    /// `policy.allow_implicit_invocation: false` makes the skill explicit-only (as
    /// `disable-model-invocation: true`), each `mcp` dependency is added to `requires.mcp`
    /// (up to [`crate::requires::MAX_REQUIRES_ENTRIES`]), and the interface is kept as
    /// [`SkillMeta::display`].
    pub fn with_codex(&mut self, sidecar: &crate::openai_yaml::Sidecar) {
        if sidecar.allow_implicit_invocation == Some(false) {
            self.disable_model_invocation = true;
        }
        for server in &sidecar.mcp {
            if self.requires.mcp.len() < crate::requires::MAX_REQUIRES_ENTRIES
                && !self.requires.mcp.contains(server)
            {
                self.requires.mcp.push(server.clone());
            }
        }
        self.display = sidecar.interface.clone();
    }

    /// [`SkillMeta::with_codex`] over the file's text when it reads without an error
    /// (validation reports the errors); the text is ignored otherwise.
    pub fn with_codex_text(&mut self, text: &[u8]) {
        if let Ok(text) = std::str::from_utf8(text)
            && let (Some(sidecar), _) =
                crate::openai_yaml::read(text, &crate::yaml::YamlLimits::default())
        {
            self.with_codex(&sidecar);
        }
    }
}

/// A YAML boolean as Claude Code reads one: `true`/`false` in any case.
pub fn boolean(node: &Node) -> Option<bool> {
    match node.as_str()?.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// `paths` as written: a list of globs, or one string of comma-separated globs.
pub fn path_globs(node: Option<&Node>) -> Vec<String> {
    match node {
        Some(Node::Scalar { text, .. }) => text
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect(),
        other => non_blank(string_list(other)),
    }
}

/// `arguments` as written: a list of names, or one string of space-separated names.
pub fn argument_names(node: Option<&Node>) -> Vec<String> {
    match node {
        Some(Node::Scalar { text, .. }) => text.split_whitespace().map(str::to_owned).collect(),
        other => non_blank(string_list(other)),
    }
}

/// An argument name: a letter or `_`, then letters, digits, `_` or `-`, 64 at most.
pub fn valid_argument_name(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `allowed-tools` read into capabilities ([`crate::allowed_tools`]): a string, or a list.
pub fn allowed_tools(node: Option<&Node>) -> crate::allowed_tools::Mapped {
    let entries = match node {
        Some(Node::Scalar { text, .. }) => crate::allowed_tools::entries(text),
        other => string_list(other)
            .iter()
            .flat_map(|e| crate::allowed_tools::entries(e))
            .collect(),
    };
    crate::allowed_tools::map(&entries)
}

/// Declared capabilities with what `allowed-tools` maps onto, each kept once.
fn merged(mut caps: Capabilities, from: crate::allowed_tools::Mapped) -> Capabilities {
    for (mine, theirs) in [(&mut caps.tools, from.tools), (&mut caps.hosts, from.hosts)] {
        for t in theirs {
            if !mine.contains(&t) {
                mine.push(t);
            }
        }
    }
    caps
}

fn non_blank(items: Vec<String>) -> Vec<String> {
    items
        .into_iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect()
}

fn capabilities(node: Option<&Node>) -> Capabilities {
    let Some(map) = node.and_then(Node::as_map) else {
        return Capabilities::default();
    };
    let trimmed = |k: &str| -> Vec<String> {
        string_list(map.get(k))
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    };
    Capabilities {
        tools: trimmed("tools"),
        vault: trimmed("vault"),
        hosts: trimmed("hosts")
            .into_iter()
            .map(|h| h.to_ascii_lowercase())
            .collect(),
    }
}
