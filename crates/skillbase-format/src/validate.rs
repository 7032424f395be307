//! Validation of a skill in two profiles.
//!
//! [`Profile::Spec`] applies exactly the Agent Skills rules as the reference validator applies
//! them, with its messages. [`Profile::Skillbase`] (the default) adds Skillbase's optional keys,
//! checked for type and sense, and turns unknown keys into warnings.

mod codex;
mod peer;

pub use codex::codex_diagnostics;

use crate::frontmatter::{FrontmatterError, SkillMd};
use crate::meta::{
    IGNORED_PEER_KEYS, MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_TRIGGER_CHARS,
    MAX_TRIGGERS, MAX_WHEN_CHARS, MAX_WHEN_ENTRIES, PEER_KEYS, SKILLBASE_KEYS, SPEC_KEYS,
};
use crate::name::{self, NameError};
use crate::skill_dir::{self, ReadError};
use crate::yaml::{Node, YamlLimits};
use serde::Serialize;
use std::path::Path;
use unicode_normalization::UnicodeNormalization;

/// Which rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// The Agent Skills specification, as the reference validator reads it.
    Spec,
    /// The specification plus Skillbase's keys (the default).
    #[default]
    Skillbase,
}

/// How serious a [`Diagnostic`] is: errors make a skill invalid, warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The skill breaks a rule and must not be stored or loaded until fixed.
    Error,
    /// Worth fixing (an unknown key, a type the reference would misread), but the skill is valid.
    Warning,
}

/// One finding: which file and field, what is wrong, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Whether this finding makes the skill invalid.
    pub severity: Severity,
    /// The file, relative to the skill folder (`SKILL.md`), or empty for the folder itself.
    pub file: String,
    /// The frontmatter field concerned, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// 1-based line in the file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What is wrong (for spec rules, the reference validator's exact text).
    pub message: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Options for [`validate_dir`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Which rule set to apply; [`Profile::Skillbase`] by default.
    pub profile: Profile,
    /// Limits for the frontmatter's YAML (size, depth, node count).
    pub yaml: YamlLimits,
    /// Largest SKILL.md to read, in bytes; [`skill_dir::DEFAULT_MAX_SKILL_MD_BYTES`] by default.
    pub max_skill_md_bytes: u64,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            profile: Profile::Skillbase,
            yaml: YamlLimits::default(),
            max_skill_md_bytes: skill_dir::DEFAULT_MAX_SKILL_MD_BYTES,
        }
    }
}

/// The verdict on one skill folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The skill name (normalised), when one could be read.
    pub name: Option<String>,
    /// Every finding, errors and warnings together, in the order the checks ran.
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// Whether no diagnostic is an [`Severity::Error`] (warnings alone leave the skill valid).
    pub fn is_valid(&self) -> bool {
        !self
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The diagnostics of severity [`Severity::Error`], in order.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
    }

    /// The diagnostics of severity [`Severity::Warning`], in order.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
    }
}

/// Validate a skill folder on disk.
pub fn validate_dir(dir: &Path, opts: &ValidateOptions) -> Report {
    let (path, text) = match skill_dir::read_skill_md(dir, opts.max_skill_md_bytes) {
        Ok(v) => v,
        Err(e) => {
            let (file, hint) = match &e {
                ReadError::MissingSkillMd => (
                    String::new(),
                    Some("add a SKILL.md with `name` and `description` frontmatter".to_owned()),
                ),
                ReadError::TooLarge { file, .. } | ReadError::NotUtf8 { file, .. } => {
                    (file.clone(), None)
                }
                _ => (String::new(), None),
            };
            return Report {
                name: None,
                diagnostics: vec![Diagnostic {
                    severity: Severity::Error,
                    file,
                    field: None,
                    line: None,
                    message: e.to_string(),
                    hint,
                }],
            };
        }
    };
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "SKILL.md".into());
    let dir_name = dir_basename(dir);
    let mut report = validate_text(&text, &file, dir_name.as_deref(), opts);
    if opts.profile == Profile::Skillbase {
        report
            .diagnostics
            .extend(codex::codex_dir_diagnostics(dir, opts));
    }
    report
}

/// The folder's own name, as Python's `Path.name` gives it (resolving `.` and trailing slashes).
fn dir_basename(dir: &Path) -> Option<String> {
    match dir.file_name() {
        Some(n) => Some(n.to_string_lossy().into_owned()),
        None => dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
    }
}

/// Validate SKILL.md text. `dir_name` is the skill folder's name, compared with `name`.
pub fn validate_text(
    text: &str,
    file: &str,
    dir_name: Option<&str>,
    opts: &ValidateOptions,
) -> Report {
    let mut out = Diagnostics {
        file,
        list: Vec::new(),
        yaml_first_line: 2,
    };
    let md = match SkillMd::parse(text, &opts.yaml) {
        Ok(md) => md,
        Err(e) => {
            let line = match &e {
                FrontmatterError::Yaml(y) => yaml_error_line(y).map(|l| l + 1),
                _ => None,
            };
            out.push(Severity::Error, None, line, e.to_string(), Some(e.hint()));
            return Report {
                name: None,
                diagnostics: out.list,
            };
        }
    };
    out.yaml_first_line = md.yaml_first_line;
    if opts.profile == Profile::Spec {
        // strictyaml, which the reference uses, refuses flow collections and tabs.
        let strict = if md.frontmatter.uses_flow() {
            Some((
                "Invalid YAML in frontmatter: flow style (`[a, b]` or `{a: b}`) is not allowed by strict YAML",
                "write lists as `- item` lines and mappings as `key: value` lines",
            ))
        } else if md.yaml_has_tab {
            Some((
                "Invalid YAML in frontmatter: tab characters are not allowed by strict YAML",
                "replace tabs in the frontmatter with spaces",
            ))
        } else {
            None
        };
        if let Some((message, hint)) = strict {
            out.push(Severity::Error, None, None, message.into(), Some(hint));
            return Report {
                name: None,
                diagnostics: out.list,
            };
        }
    }
    let name = validate_metadata(&md, dir_name, opts.profile, &mut out);
    if opts.profile == Profile::Skillbase {
        validate_skillbase_keys(&md, name.as_deref(), &mut out);
        validate_body(text, &md, &mut out);
    }
    Report {
        name,
        diagnostics: out.list,
    }
}

fn yaml_error_line(e: &crate::yaml::YamlError) -> Option<usize> {
    use crate::yaml::YamlError::*;
    match e {
        TooDeep { line, .. }
        | Anchor { line }
        | Tag { line }
        | DuplicateKey { line, .. }
        | ComplexKey { line }
        | MultipleDocuments { line }
        | Syntax { line, .. } => Some(*line),
        TooLarge { .. } | TooManyNodes { .. } => None,
    }
}

struct Diagnostics<'a> {
    file: &'a str,
    list: Vec<Diagnostic>,
    yaml_first_line: usize,
}

impl Diagnostics<'_> {
    fn push(
        &mut self,
        severity: Severity,
        field: Option<&str>,
        line: Option<usize>,
        message: String,
        hint: Option<&str>,
    ) {
        self.list.push(Diagnostic {
            severity,
            file: self.file.to_owned(),
            field: field.map(str::to_owned),
            line,
            message,
            hint: hint.map(str::to_owned),
        });
    }

    /// A finding about a frontmatter key, positioned at the key's line in the file.
    fn field(
        &mut self,
        severity: Severity,
        md: &SkillMd,
        field: &str,
        message: String,
        hint: &str,
    ) {
        let line = md
            .frontmatter
            .line_of(field)
            .map(|l| l + self.yaml_first_line - 1);
        self.push(severity, Some(field), line, message, Some(hint));
    }
}

/// The reference validator's `validate_metadata`, in its order. Returns the normalised name.
fn validate_metadata(
    md: &SkillMd,
    dir_name: Option<&str>,
    profile: Profile,
    out: &mut Diagnostics<'_>,
) -> Option<String> {
    check_extra_keys(md, profile, out);
    let normalized = check_name(md, dir_name, out);
    check_description(md, out);
    check_compatibility(md, out);
    if profile == Profile::Skillbase {
        warn_untyped_spec_keys(md, out);
    }
    normalized
}

/// Keys outside the specification: one error listing them all under [`Profile::Spec`], a warning
/// per key (Skillbase's own keys aside) under [`Profile::Skillbase`].
fn check_extra_keys(md: &SkillMd, profile: Profile, out: &mut Diagnostics<'_>) {
    let mut extra: Vec<&str> = md
        .frontmatter
        .keys()
        .filter(|k| !SPEC_KEYS.contains(k))
        .filter(|k| {
            profile == Profile::Spec
                || !(SKILLBASE_KEYS.contains(k)
                    || PEER_KEYS.contains(k)
                    || IGNORED_PEER_KEYS.contains(k))
        })
        .collect();
    extra.sort_unstable();
    if extra.is_empty() {
        return;
    }
    match profile {
        Profile::Spec => out.push(
            Severity::Error,
            None,
            None,
            format!(
                "Unexpected fields in frontmatter: {}. Only ['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name'] are allowed.",
                extra.join(", ")
            ),
            Some("remove these keys, or move them under `metadata:`"),
        ),
        Profile::Skillbase => {
            for k in extra {
                if k == "eager" {
                    out.field(
                        Severity::Warning,
                        md,
                        k,
                        "`eager` is ignored: eagerness is the agent's setting, not the skill's".into(),
                        "remove the key and list the skill in the agent's `eager` setting instead",
                    );
                } else {
                    out.field(
                        Severity::Warning,
                        md,
                        k,
                        format!("Unknown field '{k}' is kept but not used by Skillbase or the Agent Skills specification"),
                        "check the spelling, or move it under `metadata:`",
                    );
                }
            }
        }
    }
}

/// `name`: present, a non-empty string, a valid skill name, and equal to the folder's name.
/// Returns the normalised name when the field is a non-empty string.
fn check_name(md: &SkillMd, dir_name: Option<&str>, out: &mut Diagnostics<'_>) -> Option<String> {
    let Some(node) = md.frontmatter.get("name") else {
        out.push(
            Severity::Error,
            Some("name"),
            None,
            "Missing required field in frontmatter: name".into(),
            Some("add `name: <folder-name>` to the frontmatter"),
        );
        return None;
    };
    let Some(raw) = node.as_str().filter(|s| !s.trim().is_empty()) else {
        out.field(
            Severity::Error,
            md,
            "name",
            NameError::Empty.to_string(),
            NameError::Empty.hint(),
        );
        return None;
    };
    let (n, errors) = name::check(raw);
    for e in errors {
        out.field(Severity::Error, md, "name", e.to_string(), e.hint());
    }
    if let Some(dir) = dir_name {
        let dir_n: String = dir.nfkc().collect();
        if dir_n != n {
            out.field(
                Severity::Error,
                md,
                "name",
                format!("Directory name '{dir}' must match skill name '{n}'"),
                "rename the folder or change `name` so they are equal",
            );
        }
    }
    Some(n)
}

/// `description`: present, a non-empty string, within [`MAX_DESCRIPTION_CHARS`].
fn check_description(md: &SkillMd, out: &mut Diagnostics<'_>) {
    match md.frontmatter.get("description") {
        None => out.push(
            Severity::Error,
            Some("description"),
            None,
            "Missing required field in frontmatter: description".into(),
            Some("add `description:` saying what the skill does and when to use it"),
        ),
        Some(node) => match node.as_str().filter(|s| !s.trim().is_empty()) {
            None => out.field(
                Severity::Error,
                md,
                "description",
                "Field 'description' must be a non-empty string".into(),
                "say what the skill does and when to use it",
            ),
            Some(d) => {
                let len = d.chars().count();
                if len > MAX_DESCRIPTION_CHARS {
                    out.field(
                        Severity::Error,
                        md,
                        "description",
                        format!("Description exceeds {MAX_DESCRIPTION_CHARS} character limit ({len} chars)"),
                        "shorten the description; move detail into the body",
                    );
                }
            }
        },
    }
}

/// `compatibility`, when present: a string within [`MAX_COMPATIBILITY_CHARS`].
fn check_compatibility(md: &SkillMd, out: &mut Diagnostics<'_>) {
    let Some(node) = md.frontmatter.get("compatibility") else {
        return;
    };
    match node.as_str() {
        None => out.field(
            Severity::Error,
            md,
            "compatibility",
            "Field 'compatibility' must be a string".into(),
            "write compatibility as one line of text",
        ),
        Some(c) => {
            let len = c.chars().count();
            if len > MAX_COMPATIBILITY_CHARS {
                out.field(
                    Severity::Error,
                    md,
                    "compatibility",
                    format!("Compatibility exceeds {MAX_COMPATIBILITY_CHARS} character limit ({len} chars)"),
                    "shorten it to the essential requirements",
                );
            }
        }
    }
}

/// `license`, `allowed-tools` and `metadata`, which the reference does not type-check but the
/// specification does: a warning when they have the wrong shape.
fn warn_untyped_spec_keys(md: &SkillMd, out: &mut Diagnostics<'_>) {
    let fm = &md.frontmatter;
    for key in ["license", "allowed-tools"] {
        if let Some(node) = fm.get(key)
            && node.as_str().is_none()
        {
            out.field(
                Severity::Warning,
                md,
                key,
                format!("Field '{key}' should be a string, not {}", node.kind()),
                if key == "allowed-tools" {
                    "write the tools space-separated on one line: `allowed-tools: Bash(git:*) Read`"
                } else {
                    "write the license as one line of text"
                },
            );
        }
    }
    if let Some(node) = fm.get("metadata") {
        let ok = node.as_map().is_some_and(|m| {
            m.entries.iter().all(|(k, v)| {
                matches!(v, Node::Scalar { .. })
                    || (k == crate::keys::NESTED && matches!(v, Node::Map(_)))
            })
        });
        if !ok {
            out.field(
                Severity::Warning,
                md,
                "metadata",
                "Field 'metadata' should map string keys to string values".into(),
                "use `key: value` lines under `metadata:`, one level deep",
            );
        }
    }
}

/// `when_to_use` / `when_not_to_use`: a phrase or a list of at most [`MAX_WHEN_ENTRIES`]
/// phrases of at most [`MAX_WHEN_CHARS`] characters each.
fn validate_when(md: &SkillMd, key: &str, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::*;
    let items: Vec<String> = match node {
        Node::Scalar { .. } => match node.as_str() {
            Some(s) => vec![s.to_owned()],
            None => Vec::new(),
        },
        _ => match string_items(node) {
            Some(items) => items.into_iter().map(str::to_owned).collect(),
            None => {
                out.field(
                    Error,
                    md,
                    key,
                    format!(
                        "Field '{key}' must be a phrase or a list of phrases, not {}",
                        node.kind()
                    ),
                    "write one `- phrase` per line (at most 5, each under 200 characters)",
                );
                return;
            }
        },
    };
    if items.len() > MAX_WHEN_ENTRIES {
        out.field(
            Error,
            md,
            key,
            format!(
                "Too many '{key}' entries ({}); at most {MAX_WHEN_ENTRIES}",
                items.len()
            ),
            "keep the situations that tell this skill from its look-alikes",
        );
    }
    for t in &items {
        let t = t.trim();
        if t.is_empty() {
            out.field(
                Error,
                md,
                key,
                format!("An entry of '{key}' is empty"),
                "remove the empty entry",
            );
        } else if !t.chars().any(|c| c.is_alphanumeric()) {
            out.field(
                Error,
                md,
                key,
                format!("Entry '{t}' of '{key}' has no letters or digits"),
                "write the situation in words",
            );
        } else if t.chars().count() > MAX_WHEN_CHARS {
            out.field(
                Error,
                md,
                key,
                format!(
                    "An entry of '{key}' exceeds {MAX_WHEN_CHARS} character limit ({} chars)",
                    t.chars().count()
                ),
                "say it in one short sentence",
            );
        }
    }
}

/// Skillbase's own keys, each checked for type and sense when present.
fn validate_skillbase_keys(md: &SkillMd, name: Option<&str>, out: &mut Diagnostics<'_>) {
    validate_nested(md, out);
    peer::validate(md, out);
    if let Some(node) = md.get("triggers") {
        validate_triggers(md, node, out);
    }
    for key in ["when_to_use", "when_not_to_use"] {
        if let Some(node) = md.get(key) {
            validate_when(md, key, node, out);
        }
    }
    if let Some(node) = md.get("companions") {
        validate_companions(md, name, node, out);
    }
    if let Some(node) = md.get("inputs") {
        validate_inputs(md, node, out);
    }
    if let Some(node) = md.get("capabilities") {
        validate_capabilities(md, node, out);
    }
    if let Some(node) = md.get("requires") {
        validate_requires(md, name, node, out);
    }
    if let Some(node) = md.get("cost") {
        validate_cost(md, node, out);
    }
    if let Some(node) = md.get("version") {
        validate_version(md, node, out);
    }
}

/// `metadata.skillbase`: only keys that may be written there, none also at the top level.
fn validate_nested(md: &SkillMd, out: &mut Diagnostics<'_>) {
    let Some(nested) = md.nested_map() else {
        return;
    };
    for key in nested.keys() {
        if !crate::keys::nestable(key) {
            out.field(
                Severity::Warning,
                md,
                "metadata",
                format!("metadata.skillbase.{key} is not a Skillbase key; it is not used"),
                "check the spelling; only Skillbase's own keys and the peer keys it honours go here",
            );
        } else if md.frontmatter.get(key).is_some() {
            out.field(
                Severity::Warning,
                md,
                key,
                format!("'{key}' is written both at the top level and under metadata.skillbase; the top level wins"),
                "keep one of the two",
            );
        }
    }
}

/// `triggers`: a list of at most [`MAX_TRIGGERS`] phrases, each non-empty, with a letter or
/// digit, within [`MAX_TRIGGER_CHARS`]; a repeat (after folding case and accents) is a warning.
fn validate_triggers(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::*;
    let Some(items) = string_items(node) else {
        out.field(
            Error,
            md,
            "triggers",
            format!(
                "Field 'triggers' must be a list of phrases, not {}",
                node.kind()
            ),
            "write `triggers: [refund, money back]` or one `- phrase` per line",
        );
        return;
    };
    if items.len() > MAX_TRIGGERS {
        out.field(
            Error,
            md,
            "triggers",
            format!(
                "Too many triggers ({}); at most {MAX_TRIGGERS}",
                items.len()
            ),
            "keep the phrases that must fire deterministically; the description covers the rest",
        );
    }
    let mut seen = Vec::new();
    for t in items {
        let t = t.trim();
        if t.is_empty() {
            out.field(
                Error,
                md,
                "triggers",
                "A trigger must not be empty".into(),
                "remove the empty entry",
            );
        } else if !t.chars().any(|c| c.is_alphanumeric()) {
            out.field(
                Error,
                md,
                "triggers",
                format!("Trigger '{t}' has no letters or digits and can never match a word"),
                "use a word or phrase the user would type",
            );
        } else if t.chars().count() > MAX_TRIGGER_CHARS {
            out.field(
                Error,
                md,
                "triggers",
                format!(
                    "Trigger exceeds {MAX_TRIGGER_CHARS} character limit ({} chars)",
                    t.chars().count()
                ),
                "use a short phrase",
            );
        } else {
            let folded = crate::text::fold(t);
            if seen.contains(&folded) {
                out.field(
                    Warning,
                    md,
                    "triggers",
                    format!(
                        "Trigger '{t}' repeats another trigger (matching ignores case and accents)"
                    ),
                    "remove the duplicate",
                );
            } else {
                seen.push(folded);
            }
        }
    }
}

/// `companions`: a list of valid skill names, not the skill itself; a repeat is a warning.
fn validate_companions(md: &SkillMd, name: Option<&str>, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::*;
    let Some(items) = string_items(node) else {
        out.field(
            Error,
            md,
            "companions",
            format!(
                "Field 'companions' must be a list of skill names, not {}",
                node.kind()
            ),
            "write `companions: [refund-policy]`",
        );
        return;
    };
    let mut seen = Vec::new();
    for c in items {
        match name::SkillName::parse(c) {
            Err(e) => out.field(
                Error,
                md,
                "companions",
                format!("Companion '{}' is not a valid skill name: {e}", c.trim()),
                e.hint(),
            ),
            Ok(n) if Some(n.as_str()) == name => out.field(
                Error,
                md,
                "companions",
                format!("Skill '{n}' lists itself as a companion"),
                "remove it from `companions`",
            ),
            Ok(n) if seen.contains(&n) => out.field(
                Warning,
                md,
                "companions",
                format!("Companion '{n}' is listed twice"),
                "remove the duplicate",
            ),
            Ok(n) => seen.push(n),
        }
    }
}

/// `inputs`: a JSON Schema, as a mapping, that describes an object and compiles.
fn validate_inputs(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::Error;
    let Node::Map(_) = node else {
        out.field(
            Error,
            md,
            "inputs",
            format!(
                "Field 'inputs' must be a JSON Schema mapping, not {}",
                node.kind()
            ),
            "write `inputs:` with `type: object` and `properties:` beneath it",
        );
        return;
    };
    let schema = node.to_typed_json();
    if let Some(t) = schema.get("type")
        && t != "object"
    {
        out.field(
            Error,
            md,
            "inputs",
            format!("Field 'inputs' must describe an object (type: object), not type {t}"),
            "arguments are named: use `type: object` with `properties:`",
        );
    }
    if let Err(e) = jsonschema::validator_for(&schema) {
        out.field(
            Error,
            md,
            "inputs",
            format!("Field 'inputs' is not a valid JSON Schema: {e}"),
            "fix the schema (draft 2020-12); remote $ref is not fetched",
        );
    }
}

/// `cost`: one of the [`crate::meta::Cost`] words.
fn validate_cost(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    match node.as_str().map(str::trim) {
        Some(c) if c.parse::<crate::meta::Cost>().is_ok() => {}
        _ => out.field(
            Severity::Error,
            md,
            "cost",
            format!(
                "Field 'cost' must be one of immediate, seconds, tens_of_seconds (got {})",
                node.as_str()
                    .map(|s| format!("'{s}'"))
                    .unwrap_or_else(|| node.kind().into())
            ),
            "declare how long the skill's work takes: `cost: seconds`",
        ),
    }
}

/// `version`: a semantic version string.
fn validate_version(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    match node.as_str() {
        None => out.field(
            Severity::Error,
            md,
            "version",
            format!(
                "Field 'version' must be a semantic version string, not {}",
                node.kind()
            ),
            "write MAJOR.MINOR.PATCH, quoted, like `version: \"1.2.0\"`",
        ),
        Some(v) => {
            if let Err(e) = crate::version::SkillVersion::parse(v) {
                out.field(
                    Severity::Error,
                    md,
                    "version",
                    format!("Field 'version': {}", e.problem),
                    &e.hint,
                );
            }
        }
    }
}

/// `requires`: a mapping of `skills`, `tools`, `mcp` and `bins`, each a list of at most
/// [`MAX_REQUIRES_ENTRIES`](crate::requires::MAX_REQUIRES_ENTRIES) entries.
fn validate_requires(md: &SkillMd, name: Option<&str>, node: &Node, out: &mut Diagnostics<'_>) {
    use crate::requires::{MAX_REQUIRES_ENTRIES, REQUIRES_KEYS};
    use Severity::Error;
    let Some(map) = node.as_map() else {
        out.field(
            Error,
            md,
            "requires",
            format!(
                "Field 'requires' must be a mapping with skills, tools, mcp and bins, not {}",
                node.kind()
            ),
            "write `requires:` then `skills: [other-skill]`, `tools: [web_fetch]`, `mcp: [github]`, `bins: [git]`",
        );
        return;
    };
    for (key, value) in &map.entries {
        if !REQUIRES_KEYS.contains(&key.as_str()) {
            out.field(
                Error,
                md,
                "requires",
                format!("Unknown requirement kind '{key}'"),
                "use only `skills`, `tools`, `mcp` and `bins`",
            );
            continue;
        }
        let Node::Seq { items, .. } = value else {
            out.field(
                Error,
                md,
                "requires",
                format!("requires.{key} must be a list, not {}", value.kind()),
                "write a list: `[a, b]` or `- a` lines",
            );
            continue;
        };
        if items.len() > MAX_REQUIRES_ENTRIES {
            out.field(
                Error,
                md,
                "requires",
                format!(
                    "requires.{key} lists {} entries, over the limit of {MAX_REQUIRES_ENTRIES}",
                    items.len()
                ),
                "a skill that needs this much is several skills: split it",
            );
            continue;
        }
        if key == "skills" {
            validate_required_skills(md, name, items, out);
        } else {
            validate_required_names(md, key, items, out);
        }
    }
}

/// `requires.skills`: each entry a [`RequiredSkill`](crate::requires::RequiredSkill), not the
/// skill itself; a repeat is a warning.
fn validate_required_skills(
    md: &SkillMd,
    name: Option<&str>,
    items: &[Node],
    out: &mut Diagnostics<'_>,
) {
    use crate::requires::RequiredSkill;
    use Severity::{Error, Warning};
    let mut seen: Vec<crate::name::SkillName> = Vec::new();
    for item in items {
        match RequiredSkill::from_node(item) {
            Err(e) => out.field(
                Error,
                md,
                "requires",
                format!("requires.skills: {e}"),
                "write a skill name, or `- name: other-skill` with `version: \"^1.2\"` and `travel: true` beneath it",
            ),
            Ok(r) if Some(r.name.as_str()) == name => out.field(
                Error,
                md,
                "requires",
                format!("Skill '{}' requires itself", r.name),
                "remove it from `requires.skills`",
            ),
            Ok(r) if seen.contains(&r.name) => out.field(
                Warning,
                md,
                "requires",
                format!("requires.skills lists '{}' twice", r.name),
                "remove the duplicate",
            ),
            Ok(r) => seen.push(r.name),
        }
    }
}

/// `requires.tools`, `requires.mcp` or `requires.bins` (`key`): each entry a string that is a
/// tool class, a server name or a program name respectively; a repeat is a warning.
fn validate_required_names(md: &SkillMd, key: &str, items: &[Node], out: &mut Diagnostics<'_>) {
    use Severity::{Error, Warning};
    let (check, hint): (fn(&str) -> Option<&'static str>, &str) = match key {
        "tools" => (check_tool_class, "name a tool class such as `web_fetch`"),
        "mcp" => (
            check_server_name,
            "name a server of `[mcp_servers]`, such as `github`",
        ),
        _ => (
            check_program_name,
            "name the program as PATH finds it, such as `git`, not its path",
        ),
    };
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        let Some(text) = item.as_str() else {
            out.field(
                Error,
                md,
                "requires",
                format!(
                    "requires.{key} entries must be strings, not {}",
                    item.kind()
                ),
                hint,
            );
            continue;
        };
        let t = text.trim();
        if let Some(problem) = check(t) {
            out.field(
                Error,
                md,
                "requires",
                format!(
                    "requires.{key}: '{}' {problem}",
                    crate::text::escape_controls(t)
                ),
                hint,
            );
        } else if seen.contains(&t) {
            out.field(
                Warning,
                md,
                "requires",
                format!("requires.{key} lists '{t}' twice"),
                "remove the duplicate",
            );
        } else {
            seen.push(t);
        }
    }
}

fn validate_capabilities(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::Error;
    let Some(map) = node.as_map() else {
        out.field(
            Error,
            md,
            "capabilities",
            format!("Field 'capabilities' must be a mapping with tools, vault and hosts, not {}", node.kind()),
            "write `capabilities:` then `tools: [web_fetch]`, `vault: [API_KEY]`, `hosts: [api.example.com]`",
        );
        return;
    };
    for (key, value) in &map.entries {
        let check: fn(&str) -> Option<&'static str> = match key.as_str() {
            "tools" => check_tool_class,
            "vault" => check_vault_name,
            "hosts" => check_host,
            other => {
                out.field(
                    Error,
                    md,
                    "capabilities",
                    format!("Unknown capability kind '{other}'"),
                    "use only `tools`, `vault` and `hosts`",
                );
                continue;
            }
        };
        let Some(items) = string_items(value) else {
            out.field(
                Error,
                md,
                "capabilities",
                format!(
                    "capabilities.{key} must be a list of strings, not {}",
                    value.kind()
                ),
                "write a list: `[a, b]` or `- a` lines",
            );
            continue;
        };
        for item in items {
            if let Some(problem) = check(item.trim()) {
                out.field(
                    Error,
                    md,
                    "capabilities",
                    format!("capabilities.{key}: '{}' {problem}", item.trim()),
                    match key.as_str() {
                        "tools" => "name a tool class such as `web_fetch` or `notes`",
                        "vault" => "name a vault entry such as `PAYMENTS_API_KEY`; never put a secret value here",
                        _ => "write a host name, optionally with a port: `api.example.com` or `api.example.com:8443`",
                    },
                );
            }
        }
    }
}

/// The string items of a list, or a one-item list for a plain string. `None` if anything else.
fn string_items(node: &Node) -> Option<Vec<&str>> {
    match node {
        Node::Seq { items, .. } => items.iter().map(Node::as_str).collect(),
        _ => None,
    }
}

fn validate_body(text: &str, md: &SkillMd, out: &mut Diagnostics<'_>) {
    if md.body().is_empty() {
        out.push(
            Severity::Warning,
            None,
            None,
            "The body is empty: a loaded skill gives the model nothing to follow".into(),
            Some("write the procedure after the closing `---`"),
        );
    }
    let lines = text.lines().count();
    if lines > 500 {
        out.push(
            Severity::Warning,
            None,
            None,
            format!("SKILL.md has {lines} lines; the specification recommends under 500"),
            Some("move detail into references/ files and link them from the body"),
        );
    }
}

pub use crate::grammar::{
    HOST_PATTERN, SERVER_NAME_PATTERN, TOOL_CLASS_PATTERN, VAULT_NAME_PATTERN, check_host,
    check_program_name, check_server_name, check_tool_class, check_vault_name, split_host_port,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, profile: Profile) -> Report {
        validate_text(
            text,
            "SKILL.md",
            Some("my-skill"),
            &ValidateOptions {
                profile,
                ..ValidateOptions::default()
            },
        )
    }

    fn messages(r: &Report, severity: Severity) -> Vec<String> {
        r.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .map(|d| d.message.clone())
            .collect()
    }

    const OK: &str = "---\nname: my-skill\ndescription: Does things. Use when asked.\n";

    #[test]
    fn skillbase_keys_accepted_in_default_profile() {
        let text = format!(
            "{OK}triggers: [refund, money back]\ncompanions: [refund-policy]\ncost: seconds\n\
             inputs:\n  type: object\n  properties:\n    amount:\n      type: integer\n      minimum: 1\n\
             capabilities:\n  tools: [web_fetch]\n  vault: [PAY_KEY]\n  hosts: [api.example.com, 'h.example.com:8443']\n---\nbody\n"
        );
        let r = check(&text, Profile::Skillbase);
        assert!(r.is_valid(), "{:?}", r.diagnostics);
        assert_eq!(r.warnings().count(), 0, "{:?}", r.diagnostics);
        let r = check(&text, Profile::Spec);
        assert!(!r.is_valid());
        assert!(messages(&r, Severity::Error)[0].starts_with("Invalid YAML in frontmatter:"));
    }

    #[test]
    fn when_to_use_keys_are_phrases_five_at_most() {
        let ok = format!(
            "{OK}when_to_use:\n  - the customer asks for their money back\nwhen_not_to_use: a chargeback dispute\n---\nbody\n"
        );
        let r = check(&ok, Profile::Skillbase);
        assert!(r.is_valid(), "{:?}", r.diagnostics);
        assert_eq!(r.warnings().count(), 0, "{:?}", r.diagnostics);
        let md = crate::frontmatter::SkillMd::parse(&ok, &Default::default()).unwrap();
        let meta = crate::meta::SkillMeta::from_md(&md).unwrap();
        assert_eq!(
            meta.when_to_use,
            vec!["the customer asks for their money back"]
        );
        assert_eq!(meta.when_not_to_use, vec!["a chargeback dispute"]);
        let six = (0..6)
            .map(|i| format!("  - case {i}\n"))
            .collect::<String>();
        let long = "x".repeat(201);
        for (fm, want) in [
            (
                format!("when_to_use:\n{six}"),
                "Too many 'when_to_use' entries (6); at most 5",
            ),
            (
                format!("when_not_to_use: ['{long}']\n"),
                "exceeds 200 character limit (201 chars)",
            ),
            ("when_to_use: ['']\n".to_owned(), "is empty"),
            (
                "when_not_to_use: ['???']\n".to_owned(),
                "no letters or digits",
            ),
            (
                "when_to_use:\n  a: b\n".to_owned(),
                "must be a phrase or a list of phrases",
            ),
            (
                "when_to_use: [[nested]]\n".to_owned(),
                "must be a phrase or a list of phrases",
            ),
        ] {
            let r = check(&format!("{OK}{fm}---\nbody\n"), Profile::Skillbase);
            let e = messages(&r, Severity::Error);
            assert!(e.iter().any(|m| m.contains(want)), "{fm}: {e:?}");
        }
        // Not spec keys: the spec profile refuses them.
        assert!(!check(&ok, Profile::Spec).is_valid());
    }

    #[test]
    fn spec_profile_lists_unknown_keys_sorted() {
        let text = format!("{OK}triggers:\n  - x\ncost: seconds\n---\nbody\n");
        let r = check(&text, Profile::Spec);
        assert_eq!(
            messages(&r, Severity::Error),
            vec![
                "Unexpected fields in frontmatter: cost, triggers. Only ['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name'] are allowed."
            ]
        );
    }

    #[test]
    fn eager_and_unknown_keys_warn() {
        let text = format!("{OK}eager: true\nrelease: 2\n---\nbody\n");
        let r = check(&text, Profile::Skillbase);
        assert!(r.is_valid());
        let w = messages(&r, Severity::Warning);
        assert!(w[0].contains("eagerness is the agent's setting"), "{w:?}");
        assert!(w[1].contains("Unknown field 'release'"), "{w:?}");
        let d = &r.diagnostics[0];
        assert_eq!(d.field.as_deref(), Some("eager"));
        assert_eq!(d.line, Some(4));
    }

    #[test]
    fn bad_skillbase_keys_are_errors() {
        let cases = [
            ("triggers: refund\n", "must be a list"),
            ("triggers: ['!!!']\n", "no letters or digits"),
            ("triggers: ['']\n", "must not be empty"),
            ("companions: [my-skill]\n", "lists itself"),
            ("companions: [Bad_Name]\n", "not a valid skill name"),
            ("cost: forever\n", "must be one of"),
            ("inputs: string\n", "must be a JSON Schema mapping"),
            ("inputs:\n  type: string\n", "must describe an object"),
            (
                "inputs:\n  type: object\n  minProperties: many\n",
                "not a valid JSON Schema",
            ),
            ("capabilities: [web_fetch]\n", "must be a mapping"),
            ("capabilities:\n  money: [x]\n", "Unknown capability kind"),
            ("capabilities:\n  hosts: ['https://x.com/a']\n", "not a URL"),
            ("capabilities:\n  hosts: ['x.com:99999']\n", "invalid port"),
            (
                "capabilities:\n  vault: ['my secret']\n",
                "not a vault entry name",
            ),
            ("capabilities:\n  tools: [Web Fetch]\n", "not a tool class"),
            ("version: 1.0\n", "'1.0' is not a semantic version"),
            (
                "version: [1.0.0]\n",
                "must be a semantic version string, not a list",
            ),
            (
                "version:\n  major: 1\n",
                "must be a semantic version string, not a mapping",
            ),
            ("version: v2.0.0\n", "no `v` prefix"),
            ("version: ''\n", "it is empty"),
            ("requires: [a]\n", "must be a mapping"),
            (
                "requires:\n  money: [x]\n",
                "Unknown requirement kind 'money'",
            ),
            ("requires:\n  skills: b\n", "requires.skills must be a list"),
            ("requires:\n  skills: [my-skill]\n", "requires itself"),
            (
                "requires:\n  skills: [Bad_Name]\n",
                "not a valid skill name",
            ),
            (
                "requires:\n  skills:\n    - name: b\n      version: 'one'\n",
                "'one' is not a version range",
            ),
            (
                "requires:\n  skills:\n    - name: b\n      version: [1]\n",
                "must be a quoted range",
            ),
            (
                "requires:\n  skills:\n    - name: b\n      travel: yes\n",
                "`travel` must be true or false",
            ),
            (
                "requires:\n  skills:\n    - name: b\n      pin: 1\n",
                "unknown key 'pin'",
            ),
            (
                "requires:\n  skills:\n    - version: '1'\n",
                "has no `name`",
            ),
            (
                "requires:\n  skills: [[b]]\n",
                "must be a skill name or a mapping",
            ),
            ("requires:\n  tools: [Web Fetch]\n", "not a tool class"),
            ("requires:\n  mcp: [-gh]\n", "not an MCP server name"),
            ("requires:\n  bins: [/usr/bin/jq]\n", "not a program name"),
            ("requires:\n  bins: ['..']\n", "not a program name"),
            ("requires:\n  bins: [[jq]]\n", "entries must be strings"),
        ];
        for (extra, expect) in cases {
            let text = format!("{OK}{extra}---\nbody\n");
            let r = check(&text, Profile::Skillbase);
            let errs = messages(&r, Severity::Error);
            assert!(
                errs.iter().any(|e| e.contains(expect)),
                "{extra:?}: expected {expect:?} in {errs:?}"
            );
        }
    }

    #[test]
    fn requires_is_checked_and_read() {
        let text = format!(
            "{OK}requires:\n  skills:\n    - b\n    - name: c\n      version: \">=1.2.0, <2.0.0\"\n      travel: true\n  tools: [web_fetch]\n  mcp: [github]\n  bins: [git, clang++]\n---\nbody\n"
        );
        let r = check(&text, Profile::Skillbase);
        assert!(r.is_valid(), "{:?}", r.diagnostics);
        assert_eq!(r.warnings().count(), 0, "{:?}", r.diagnostics);
        assert!(!check(&text, Profile::Spec).is_valid());
        let md = crate::frontmatter::SkillMd::parse(&text, &Default::default()).unwrap();
        let req = crate::meta::SkillMeta::from_md(&md).unwrap().requires;
        assert_eq!(req.skills[1].describe(), "c (>=1.2.0, <2.0.0)");
        assert_eq!(req.bins, ["git", "clang++"]);
        // Duplicates warn, and a list over the limit is refused whole.
        let dup = format!("{OK}requires:\n  skills: [b, b]\n  bins: [jq, jq]\n---\nbody\n");
        let r = check(&dup, Profile::Skillbase);
        assert!(r.is_valid());
        assert_eq!(
            messages(&r, Severity::Warning).len(),
            2,
            "{:?}",
            r.diagnostics
        );
        let many = (0..33)
            .map(|i| format!("p{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let r = check(
            &format!("{OK}requires:\n  bins: [{many}]\n---\nbody\n"),
            Profile::Skillbase,
        );
        assert!(messages(&r, Severity::Error)[0].contains("33 entries, over the limit of 32"));
        let d = r
            .diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
            .unwrap();
        // The line of the mapping under `requires:` (where its entries start).
        assert_eq!((d.field.as_deref(), d.line), (Some("requires"), Some(5)));
    }

    #[test]
    fn version_is_semver_in_the_skillbase_profile_and_not_a_spec_key() {
        for v in [
            "version: 1.2.0",
            "version: \"1.2.0-rc.1\"",
            "version: '0.1.0+build.5'",
        ] {
            let text = format!("{OK}{v}\n---\nbody\n");
            let r = check(&text, Profile::Skillbase);
            assert!(r.is_valid(), "{v}: {:?}", r.diagnostics);
            assert_eq!(r.warnings().count(), 0, "{v}: {:?}", r.diagnostics);
            let md = crate::frontmatter::SkillMd::parse(&text, &Default::default()).unwrap();
            let meta = crate::meta::SkillMeta::from_md(&md).unwrap();
            assert!(meta.semver().is_some(), "{v}");
        }
        let r = check(
            &format!("{OK}version: 1.0\n---\nbody\n"),
            Profile::Skillbase,
        );
        let d = r.errors().next().unwrap();
        assert_eq!(d.field.as_deref(), Some("version"));
        assert_eq!(d.line, Some(4));
        assert!(
            d.hint.as_deref().unwrap().contains("`version: \"1.0.0\"`"),
            "{d:?}"
        );
        let r = check(&format!("{OK}version: 1.2.0\n---\nbody\n"), Profile::Spec);
        assert!(
            messages(&r, Severity::Error)[0]
                .starts_with("Unexpected fields in frontmatter: version."),
            "{:?}",
            r.diagnostics
        );
    }

    #[test]
    fn duplicate_triggers_warn_after_folding() {
        let text = format!("{OK}triggers: [Présente, presente]\n---\nbody\n");
        let r = check(&text, Profile::Skillbase);
        assert!(r.is_valid());
        assert!(messages(&r, Severity::Warning)[0].contains("repeats"));
    }

    #[test]
    fn diagnostics_name_file_field_line_and_fix() {
        let r = check(
            "---\nname: My-Skill\ndescription: x\n---\nbody\n",
            Profile::Skillbase,
        );
        let d = r.errors().next().unwrap();
        assert_eq!(d.file, "SKILL.md");
        assert_eq!(d.field.as_deref(), Some("name"));
        assert_eq!(d.line, Some(2));
        assert!(d.hint.is_some());
    }

    #[test]
    fn hosts() {
        for ok in [
            "a.com",
            "a.com:443",
            "*.a.com",
            "127.0.0.1",
            "[::1]:8080",
            "localhost",
        ] {
            assert_eq!(check_host(ok), None, "{ok}");
        }
        for bad in [
            "",
            "a..com",
            "-a.com",
            "a.com:0",
            "http://a.com",
            "a b.com",
            "a.com:+80",
            "a.com:080",
            "a.com:65536",
            "a.com:",
            "[::ffff:1.2.3.4]",
            "[fe80::1%eth0]",
            "*.[::1]",
            "[::1",
        ] {
            assert!(check_host(bad).is_some(), "{bad}");
        }
    }
}
