//! A skill as an author writes it, and its SKILL.md.
//!
//! Authoring (the `skill_create` / `skill_modify` tools, and anything else that writes a skill
//! from fields rather than from a folder) goes through [`SkillDraft`]. Its fields are described
//! once, by [`DraftField`]: the JSON Schema a tool offers ([`DraftField::schema`]) and the reading
//! of a call's arguments ([`SkillDraft::apply`]) both come from that one enum, so they cannot
//! disagree. [`SkillDraft::to_skill_md`] renders the frontmatter here, in the format crate, with
//! every scalar quoted: whatever an author (or a model) puts in a field, the file parses back to
//! the same draft, and never to a different key.

use crate::meta::{
    Capabilities, Cost, MAX_DESCRIPTION_CHARS, MAX_TRIGGER_CHARS, MAX_TRIGGERS, MAX_WHEN_CHARS,
    MAX_WHEN_ENTRIES, SkillMeta,
};
use crate::name::SkillName;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Longest body an authored skill may have, in characters.
pub const MAX_BODY_CHARS: usize = 200_000;
/// Most companions an authored skill may declare.
pub const MAX_COMPANIONS: usize = 32;

/// One field an author sets. The order of [`DraftField::ALL`] is the order of the schema's
/// properties and of the rendered frontmatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftField {
    /// `name`: the skill's name (1–64 lowercase letters, digits and single hyphens).
    Name,
    /// `description`: what the skill does and when to use it (what routing reads).
    Description,
    /// `body`: the instructions, the Markdown after the frontmatter.
    Body,
    /// `triggers`: phrases that inject the body when a message contains them.
    Triggers,
    /// `companions`: skills loaded together with this one.
    Companions,
    /// `inputs`: the JSON Schema (type object) of the skill's arguments.
    Inputs,
    /// `capabilities`: the tool classes, vault entries and hosts the skill will use.
    Capabilities,
    /// `cost`: the skill's latency class.
    Cost,
    /// `when_to_use`: situations the skill is for, in the user's words (ranking text).
    WhenToUse,
    /// `when_not_to_use`: phrases that, in a message, lower the skill's rank and keep its
    /// triggers from firing.
    WhenNotToUse,
    /// `version`: the skill's semantic version (`MAJOR.MINOR.PATCH`), raised by each release.
    Version,
}

/// Semantic Versioning 2.0.0, the grammar of semver.org (numbers without leading zeros); a
/// value it admits may still be refused for a number too large for 64 bits.
pub const SEMVER_PATTERN: &str = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$";

impl DraftField {
    /// Every field, in schema and rendering order.
    pub const ALL: [DraftField; 11] = [
        DraftField::Name,
        DraftField::Description,
        DraftField::Body,
        DraftField::Triggers,
        DraftField::Companions,
        DraftField::Inputs,
        DraftField::Capabilities,
        DraftField::Cost,
        DraftField::WhenToUse,
        DraftField::WhenNotToUse,
        DraftField::Version,
    ];

    /// The field's key in a tool call's arguments (and, but for `body`, in the frontmatter).
    pub fn key(self) -> &'static str {
        match self {
            DraftField::Name => "name",
            DraftField::Description => "description",
            DraftField::Body => "body",
            DraftField::Triggers => "triggers",
            DraftField::Companions => "companions",
            DraftField::Inputs => "inputs",
            DraftField::Capabilities => "capabilities",
            DraftField::Cost => "cost",
            DraftField::WhenToUse => "when_to_use",
            DraftField::WhenNotToUse => "when_not_to_use",
            DraftField::Version => "version",
        }
    }

    /// The JSON Schema of the field's value, with the limits [`SkillDraft::apply`] enforces.
    pub fn schema(self) -> Value {
        let name =
            json!({"type": "string", "minLength": 1, "maxLength": crate::name::MAX_NAME_CHARS});
        let strings = json!({"type": "array", "items": {"type": "string"}});
        match self {
            DraftField::Name => name,
            DraftField::Description => {
                json!({"type": "string", "minLength": 1, "maxLength": MAX_DESCRIPTION_CHARS})
            }
            DraftField::Body => {
                json!({"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS})
            }
            DraftField::Triggers => json!({
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_TRIGGER_CHARS},
                "maxItems": MAX_TRIGGERS
            }),
            DraftField::Companions => {
                json!({"type": "array", "items": name, "maxItems": MAX_COMPANIONS})
            }
            DraftField::Inputs => json!({"type": "object"}),
            DraftField::Capabilities => json!({
                "type": "object",
                "properties": {"tools": strings, "vault": strings, "hosts": strings},
                "additionalProperties": false
            }),
            DraftField::Cost => json!({"enum": Cost::ALL.map(Cost::as_str)}),
            DraftField::WhenToUse | DraftField::WhenNotToUse => json!({
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_WHEN_CHARS},
                "maxItems": MAX_WHEN_ENTRIES
            }),
            DraftField::Version => json!({
                "type": "string",
                "minLength": 5,
                "maxLength": crate::version::MAX_VERSION_BYTES,
                "pattern": SEMVER_PATTERN
            }),
        }
    }

    /// The field the key names, if any.
    pub fn from_key(key: &str) -> Option<DraftField> {
        DraftField::ALL.into_iter().find(|f| f.key() == key)
    }
}

/// The `properties` object of a tool schema holding every draft field.
pub fn draft_properties() -> serde_json::Map<String, Value> {
    DraftField::ALL
        .into_iter()
        .map(|f| (f.key().to_owned(), f.schema()))
        .collect()
}

/// Why a draft field was refused. The message names the field and the rule, never the value
/// (a message that quotes input would tell a caller whether the input held a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct DraftError {
    /// The field's key.
    pub field: &'static str,
    /// What is wrong and how to fix it.
    pub problem: String,
}

/// A skill as an author writes it. The spec keys an author cannot set through the draft fields
/// (`license`, `compatibility`, `allowed-tools`, `metadata`) and Skillbase's `version` and
/// `requires` are carried over from the revision a modification starts from, so modifying a skill never drops
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillDraft {
    /// The skill's name.
    pub name: SkillName,
    /// What the skill does and when to use it, trimmed.
    pub description: String,
    /// The instructions after the frontmatter, trimmed.
    pub body: String,
    /// Trigger phrases, non-empty.
    pub triggers: Vec<String>,
    /// Skills loaded together with this one.
    pub companions: Vec<SkillName>,
    /// The JSON Schema of the skill's arguments.
    pub inputs: Option<Value>,
    /// What the skill declares it will use.
    pub capabilities: Capabilities,
    /// The latency class, when declared.
    pub cost: Option<Cost>,
    /// `license`, carried over.
    pub license: Option<String>,
    /// `compatibility`, carried over.
    pub compatibility: Option<String>,
    /// `allowed-tools`, carried over.
    pub allowed_tools: Option<String>,
    /// `metadata`, carried over (string values, as the specification has them).
    pub metadata: Vec<(String, String)>,
    /// `when_to_use` entries.
    pub when_to_use: Vec<String>,
    /// `when_not_to_use` entries.
    pub when_not_to_use: Vec<String>,
    /// `version`, carried over.
    pub version: Option<String>,
    /// `requires`, carried over.
    pub requires: crate::requires::Requires,
    /// `disable-model-invocation: true`, carried over.
    pub disable_model_invocation: bool,
    /// `user-invocable` (written only when `false`), carried over.
    pub user_invocable: bool,
    /// `paths` globs, carried over.
    pub paths: Vec<String>,
    /// `argument-hint`, carried over.
    pub argument_hint: Option<String>,
    /// `arguments` names, carried over.
    pub arguments: Vec<String>,
    /// Every other frontmatter key (`model`, `context`, `agent`, `hooks`, keys unknown to
    /// Skillbase), carried over as written ([`SkillDraft::keep_other_keys`]).
    pub other: Vec<(String, Value)>,
}

fn refuse(field: DraftField, problem: impl Into<String>) -> DraftError {
    DraftError {
        field: field.key(),
        problem: problem.into(),
    }
}

fn string_of(field: DraftField, v: &Value, max: usize) -> Result<String, DraftError> {
    let s = v
        .as_str()
        .ok_or_else(|| refuse(field, "must be a string"))?
        .trim();
    if s.is_empty() {
        return Err(refuse(field, "must not be empty"));
    }
    if s.chars().count() > max {
        return Err(refuse(field, format!("must be at most {max} characters")));
    }
    Ok(s.to_owned())
}

fn strings_of(field: DraftField, v: &Value, max_items: usize) -> Result<Vec<String>, DraftError> {
    let items = v
        .as_array()
        .ok_or_else(|| refuse(field, "must be a list of strings"))?;
    if items.len() > max_items {
        return Err(refuse(
            field,
            format!("must have at most {max_items} items"),
        ));
    }
    items
        .iter()
        .map(|i| {
            i.as_str()
                .map(str::to_owned)
                .ok_or_else(|| refuse(field, "must be a list of strings"))
        })
        .collect()
}

/// `triggers`: at most [`MAX_TRIGGERS`] strings of at most [`MAX_TRIGGER_CHARS`] characters,
/// trimmed, the empty ones dropped.
fn triggers_of(field: DraftField, v: &Value) -> Result<Vec<String>, DraftError> {
    let list = strings_of(field, v, MAX_TRIGGERS)?;
    if list.iter().any(|t| t.chars().count() > MAX_TRIGGER_CHARS) {
        return Err(refuse(
            field,
            format!("each trigger must be at most {MAX_TRIGGER_CHARS} characters"),
        ));
    }
    Ok(list
        .into_iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect())
}

/// `companions`: at most [`MAX_COMPANIONS`] skill names.
fn companions_of(field: DraftField, v: &Value) -> Result<Vec<SkillName>, DraftError> {
    strings_of(field, v, MAX_COMPANIONS)?
        .iter()
        .map(|c| {
            SkillName::parse(c).map_err(|_| {
                refuse(
                    field,
                    "each companion must be a skill name: 1-64 lowercase letters, digits and single hyphens",
                )
            })
        })
        .collect()
}

/// `capabilities`: an object with only `tools`, `vault` and `hosts`, each a list of strings
/// (trimmed, the empty ones dropped; hosts lowercased).
fn capabilities_of(field: DraftField, v: &Value) -> Result<Capabilities, DraftError> {
    let map = v
        .as_object()
        .ok_or_else(|| refuse(field, "must be an object with tools, vault and hosts"))?;
    if let Some(k) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "tools" | "vault" | "hosts"))
    {
        // The key is not quoted back (it may be anything the caller sent).
        let _ = k;
        return Err(refuse(field, "may hold only tools, vault and hosts"));
    }
    let list = |k: &str| -> Result<Vec<String>, DraftError> {
        match map.get(k) {
            None => Ok(Vec::new()),
            Some(v) => Ok(strings_of(field, v, usize::MAX)?
                .into_iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()),
        }
    };
    Ok(Capabilities {
        tools: list("tools")?,
        vault: list("vault")?,
        hosts: list("hosts")?
            .into_iter()
            .map(|h| h.to_ascii_lowercase())
            .collect(),
    })
}

/// `cost`: one of the [`Cost`] words.
fn cost_of(field: DraftField, v: &Value) -> Result<Cost, DraftError> {
    let s = v
        .as_str()
        .ok_or_else(|| refuse(field, "must be a string"))?;
    s.parse()
        .map_err(|_| refuse(field, "must be immediate, seconds or tens_of_seconds"))
}

/// `when_to_use` / `when_not_to_use`: at most [`MAX_WHEN_ENTRIES`] strings, trimmed, the empty
/// ones dropped, each of at most [`MAX_WHEN_CHARS`] characters and holding a letter or digit.
fn situations_of(field: DraftField, v: &Value) -> Result<Vec<String>, DraftError> {
    let list = strings_of(field, v, MAX_WHEN_ENTRIES)?;
    let list: Vec<String> = list
        .into_iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    if list.iter().any(|t| t.chars().count() > MAX_WHEN_CHARS) {
        return Err(refuse(
            field,
            format!("each entry must be at most {MAX_WHEN_CHARS} characters"),
        ));
    }
    if list.iter().any(|t| !t.chars().any(char::is_alphanumeric)) {
        return Err(refuse(field, "each entry must hold letters or digits"));
    }
    Ok(list)
}

/// `version`: a semantic version string, kept as written.
fn version_of(field: DraftField, v: &Value) -> Result<String, DraftError> {
    let s = v
        .as_str()
        .ok_or_else(|| refuse(field, "must be a string"))?;
    // The value is not quoted back (see `DraftError`).
    crate::SkillVersion::parse(s).map_err(|_| {
        refuse(
            field,
            "must be a semantic version MAJOR.MINOR.PATCH (optionally -pre.release and +build), such as `1.2.0`",
        )
    })?;
    Ok(s.to_owned())
}

impl SkillDraft {
    /// An empty draft for a new skill of this name.
    pub fn new(name: SkillName) -> SkillDraft {
        SkillDraft {
            name,
            description: String::new(),
            body: String::new(),
            triggers: Vec::new(),
            companions: Vec::new(),
            inputs: None,
            capabilities: Capabilities::default(),
            cost: None,
            license: None,
            compatibility: None,
            allowed_tools: None,
            metadata: Vec::new(),
            when_to_use: Vec::new(),
            when_not_to_use: Vec::new(),
            version: None,
            requires: Default::default(),
            disable_model_invocation: false,
            user_invocable: true,
            paths: Vec::new(),
            argument_hint: None,
            arguments: Vec::new(),
            other: Vec::new(),
        }
    }

    /// The draft of an existing revision: its frontmatter and body, to modify.
    pub fn from_meta(name: SkillName, meta: &SkillMeta, body: &str) -> SkillDraft {
        SkillDraft {
            name,
            description: meta.description.trim().to_owned(),
            body: body.trim().to_owned(),
            triggers: meta.triggers.clone(),
            companions: meta.companions.clone(),
            inputs: meta.inputs.clone(),
            capabilities: meta.capabilities.clone(),
            cost: Some(meta.cost),
            license: meta.license.clone(),
            compatibility: meta.compatibility.clone(),
            allowed_tools: meta.allowed_tools.clone(),
            // `metadata.skillbase` was read into the fields above, written at the top level.
            metadata: meta
                .metadata
                .iter()
                .filter(|(k, _)| k != crate::keys::NESTED)
                .cloned()
                .collect(),
            when_to_use: meta.when_to_use.clone(),
            when_not_to_use: meta.when_not_to_use.clone(),
            version: meta.version.clone(),
            requires: meta.requires.clone(),
            disable_model_invocation: meta.disable_model_invocation,
            user_invocable: meta.user_invocable,
            paths: meta.paths.clone(),
            argument_hint: meta.argument_hint.clone(),
            arguments: meta.arguments.clone(),
            other: Vec::new(),
        }
    }

    /// Carry over the frontmatter keys no draft field holds (a revision's typed frontmatter:
    /// [`crate::yaml::Node::to_typed_json`]), so a modification keeps a peer's `model`,
    /// `context` or `hooks` and any key Skillbase does not know. Keys a draft field holds are
    /// left to the field.
    pub fn keep_other_keys(&mut self, frontmatter: &serde_json::Map<String, Value>) {
        self.other = frontmatter
            .iter()
            .filter(|(k, _)| {
                let k = k.as_str();
                !(crate::keys::SPEC_KEYS.contains(&k)
                    || crate::keys::SKILLBASE_KEYS.contains(&k)
                    || crate::keys::PEER_KEYS.contains(&k))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    }

    /// Set one field from a JSON value (a tool call's argument), with the limits of
    /// [`DraftField::schema`]. `name` is not set here: a draft's name is fixed when it is made.
    pub fn apply(&mut self, field: DraftField, v: &Value) -> Result<(), DraftError> {
        match field {
            DraftField::Name => {
                let s = v
                    .as_str()
                    .ok_or_else(|| refuse(field, "must be a string"))?;
                if s != self.name.as_str() {
                    return Err(refuse(field, "a draft's name cannot change"));
                }
            }
            DraftField::Description => {
                self.description = string_of(field, v, MAX_DESCRIPTION_CHARS)?;
            }
            DraftField::Body => self.body = string_of(field, v, MAX_BODY_CHARS)?,
            DraftField::Triggers => self.triggers = triggers_of(field, v)?,
            DraftField::Companions => self.companions = companions_of(field, v)?,
            DraftField::Inputs => {
                if !v.is_object() {
                    return Err(refuse(field, "must be a JSON Schema object"));
                }
                self.inputs = Some(v.clone());
            }
            DraftField::Capabilities => self.capabilities = capabilities_of(field, v)?,
            DraftField::Cost => self.cost = Some(cost_of(field, v)?),
            DraftField::WhenToUse => self.when_to_use = situations_of(field, v)?,
            DraftField::WhenNotToUse => self.when_not_to_use = situations_of(field, v)?,
            DraftField::Version => self.version = Some(version_of(field, v)?),
        }
        Ok(())
    }

    /// Set every draft field present in a JSON object of arguments; other keys are ignored (the
    /// caller's schema decides whether they are allowed).
    pub fn apply_all(&mut self, args: &Value) -> Result<(), DraftError> {
        for field in DraftField::ALL {
            if let Some(v) = args.get(field.key()) {
                self.apply(field, v)?;
            }
        }
        Ok(())
    }

    /// The peer keys Skillbase honours (`disable-model-invocation`, `user-invocable`, `paths`,
    /// `argument-hint`, `arguments`), written only when they differ from the default.
    fn write_peer_keys(&self, out: &mut String) {
        if self.disable_model_invocation {
            out.push_str("disable-model-invocation: true\n");
        }
        if !self.user_invocable {
            out.push_str("user-invocable: false\n");
        }
        if let Some(h) = &self.argument_hint {
            let _ = writeln!(out, "argument-hint: {}", quoted(h));
        }
        for (key, list) in [("paths", &self.paths), ("arguments", &self.arguments)] {
            if !list.is_empty() {
                let _ = writeln!(out, "{key}:");
                for item in list {
                    let _ = writeln!(out, "  - {}", quoted(item));
                }
            }
        }
    }

    /// Whether the draft can be written: a description and a body.
    pub fn check_complete(&self) -> Result<(), DraftError> {
        if self.description.is_empty() {
            return Err(refuse(DraftField::Description, "is required"));
        }
        if self.body.is_empty() {
            return Err(refuse(DraftField::Body, "is required"));
        }
        Ok(())
    }

    /// The SKILL.md text: block-style frontmatter with every string double-quoted (so no
    /// value can read as another type, another key or the closing delimiter), then the body.
    pub fn to_skill_md(&self) -> String {
        let mut out = String::from("---\n");
        let _ = writeln!(out, "name: {}", self.name);
        let _ = writeln!(out, "description: {}", quoted(&self.description));
        for (key, value) in [
            ("license", &self.license),
            ("compatibility", &self.compatibility),
            ("allowed-tools", &self.allowed_tools),
            ("version", &self.version),
        ] {
            if let Some(v) = value {
                let _ = writeln!(out, "{key}: {}", quoted(v));
            }
        }
        self.write_peer_keys(&mut out);
        if !self.metadata.is_empty() {
            out.push_str("metadata:\n");
            for (k, v) in &self.metadata {
                let _ = writeln!(out, "  {}: {}", quoted(k), quoted(v));
            }
        }
        if !self.triggers.is_empty() {
            out.push_str("triggers:\n");
            for t in &self.triggers {
                let _ = writeln!(out, "  - {}", quoted(t));
            }
        }
        if !self.companions.is_empty() {
            out.push_str("companions:\n");
            for c in &self.companions {
                let _ = writeln!(out, "  - {c}");
            }
        }
        if let Some(inputs) = &self.inputs {
            out.push_str("inputs:");
            block(&mut out, inputs, 1);
        }
        if !self.capabilities.is_empty() {
            out.push_str("capabilities:\n");
            for (key, list) in [
                ("tools", &self.capabilities.tools),
                ("vault", &self.capabilities.vault),
                ("hosts", &self.capabilities.hosts),
            ] {
                if !list.is_empty() {
                    let _ = writeln!(out, "  {key}:");
                    for item in list {
                        let _ = writeln!(out, "    - {}", quoted(item));
                    }
                }
            }
        }
        if let Some(c) = self.cost {
            let _ = writeln!(out, "cost: {c}");
        }
        for (key, list) in [
            ("when_to_use", &self.when_to_use),
            ("when_not_to_use", &self.when_not_to_use),
        ] {
            if !list.is_empty() {
                let _ = writeln!(out, "{key}:");
                for t in list {
                    let _ = writeln!(out, "  - {}", quoted(t));
                }
            }
        }
        let r = &self.requires;
        if !r.is_empty() {
            out.push_str("requires:\n");
            if !r.skills.is_empty() {
                out.push_str("  skills:\n");
                for s in &r.skills {
                    let _ = writeln!(out, "    - name: {}", s.name);
                    if let Some(v) = &s.version {
                        let _ = writeln!(out, "      version: {}", quoted(v.as_str()));
                    }
                    if s.travel {
                        out.push_str("      travel: true\n");
                    }
                }
            }
            for (key, list) in [("tools", &r.tools), ("mcp", &r.mcp), ("bins", &r.bins)] {
                if !list.is_empty() {
                    let _ = writeln!(out, "  {key}:");
                    for item in list {
                        let _ = writeln!(out, "    - {}", quoted(item));
                    }
                }
            }
        }
        for (k, v) in &self.other {
            let _ = write!(out, "{}:", quoted(k));
            block(&mut out, v, 1);
        }
        out.push_str("---\n");
        out.push_str(&self.body);
        out.push('\n');
        out
    }
}

/// A YAML double-quoted scalar. JSON's string syntax is a subset of YAML's double-quoted style
/// (`\"`, `\\`, `\n`, `\uXXXX` escapes; control characters escaped), so a serialized JSON string
/// is read back as exactly that string.
fn quoted(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// A JSON value as block YAML after a key or a `-` already written on the current line: a
/// scalar on that line, a collection on the following lines indented by `depth` levels.
fn block(out: &mut String, v: &Value, depth: usize) {
    let indent = "  ".repeat(depth);
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            for (k, child) in m {
                let _ = write!(out, "{indent}{}:", quoted(k));
                block(out, child, depth + 1);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            for child in a {
                let _ = write!(out, "{indent}-");
                block(out, child, depth + 1);
            }
        }
        // Empty collections have no block form.
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(_) => out.push_str(" []\n"),
        scalar => {
            let _ = writeln!(out, " {scalar}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontmatter::SkillMd;

    fn name(s: &str) -> SkillName {
        SkillName::parse(s).unwrap()
    }

    fn read_back(d: &SkillDraft) -> SkillDraft {
        let text = d.to_skill_md();
        let md = SkillMd::parse(&text, &Default::default())
            .unwrap_or_else(|e| panic!("rendered draft does not parse: {e}\n{text}"));
        let meta = SkillMeta::from_md(&md).expect("name and description");
        let mut back = SkillDraft::from_meta(name(&meta.name), &meta, md.body());
        // `from_meta` always knows a cost; a draft without one reads back as the default.
        if d.cost.is_none() && back.cost == Some(Cost::default()) {
            back.cost = None;
        }
        back
    }

    #[test]
    fn keys_no_field_holds_are_kept_through_a_modification() {
        let text = "---\nname: deploy-app\ndescription: Deploys.\nmodel: sonnet\ncontext: fork\nagent: Explore\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      command: \"echo '---' # hi\"\nodd-key: [1, \"two\", {a: null}]\ncost: seconds\n---\nBody.\n";
        let md = SkillMd::parse(text, &Default::default()).unwrap();
        let meta = SkillMeta::from_md(&md).unwrap();
        let fm = match crate::yaml::Node::Map(md.frontmatter.clone()).to_typed_json() {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let mut d = SkillDraft::from_meta(name("deploy-app"), &meta, md.body());
        d.keep_other_keys(&fm);
        let keys: Vec<&str> = d.other.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["model", "context", "agent", "hooks", "odd-key"]);
        d.apply_all(&json!({"body": "New body."})).unwrap();
        let out = d.to_skill_md();
        let back = SkillMd::parse(&out, &Default::default()).unwrap();
        let back_fm = match crate::yaml::Node::Map(back.frontmatter.clone()).to_typed_json() {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        for k in ["model", "context", "agent", "hooks", "odd-key", "cost"] {
            assert_eq!(back_fm.get(k), fm.get(k), "{k}\n{out}");
        }
        assert_eq!(back.body(), "New body.");
        // The rendered skill is still valid, the carried keys known or warned about as before.
        let r = crate::validate::validate_text(
            &out,
            "SKILL.md",
            Some("deploy-app"),
            &Default::default(),
        );
        assert!(r.is_valid(), "{:?}", r.diagnostics);
    }

    fn full() -> SkillDraft {
        let mut d = SkillDraft::new(name("deploy-app"));
        d.apply_all(&json!({
            "description": "Deploy: the app\n---\nname: evil # not a comment",
            "body": "---\nStep 1: `kubectl apply`\n\n---\n",
            "triggers": ["deploy: now", "#hash", "- dash", "'quote\"", "true", "1.0", "null", "ünïcödé ✓", "tab\there"],
            "companions": ["helper-one"],
            "inputs": {
                "type": "object",
                "properties": {"env": {"enum": ["prod", "stage"], "default": "stage"}, "n": {"type": "integer", "minimum": 1.5}, "flag": {"const": true}, "empty": {}},
                "examples": [],
                "required": ["env"],
                "odd key: with colon": {"nested": [[1, 2], {"a": null}]}
            },
            "capabilities": {"tools": ["web_fetch"], "vault": ["api_key"], "hosts": ["API.example.org:8443"]},
            "cost": "seconds",
            "when_to_use": ["the user says: ship it", "a \"release\" is ready"],
            "when_not_to_use": ["rollback: of a failed deploy"],
            "version": "1.2.0-rc.1+build.5"
        }))
        .unwrap();
        d.license = Some("MIT".into());
        d.metadata = vec![("owner".into(), "team: ops".into())];
        d.disable_model_invocation = true;
        d.paths = vec!["src/**/*.{rs,toml}".into(), "docs/*.md".into()];
        d.argument_hint = Some("[env]: \"prod\"".into());
        d.arguments = vec!["env".into(), "version".into()];
        let md = SkillMd::parse(
            "---\nname: x\ndescription: d\nrequires:\n  skills:\n    - plain\n    - name: ranged\n      version: \">=1.2.0, <2.0.0\"\n      travel: true\n  tools: [web_fetch]\n  mcp: [github]\n  bins: [git, clang++]\n---\nb\n",
            &Default::default(),
        )
        .unwrap();
        d.requires = SkillMeta::from_md(&md).unwrap().requires;
        assert_eq!(d.requires.skills.len(), 2);
        d
    }

    #[test]
    fn the_version_field_is_semver_and_its_schema_agrees() {
        let schema = jsonschema::validator_for(&DraftField::Version.schema()).unwrap();
        for (v, ok) in [
            ("1.2.0", true),
            ("0.0.0", true),
            ("1.2.0-rc.1+build.5", true),
            ("1.0.0-alpha-1.x", true),
            ("1.0", false),
            ("v1.2.0", false),
            ("01.2.0", false),
            ("1.2.0-01", false),
            (" 1.2.0", false),
            ("1.2.0+", false),
            ("", false),
        ] {
            let mut d = SkillDraft::new(name("x"));
            let r = d.apply(DraftField::Version, &json!(v));
            assert_eq!(r.is_ok(), ok, "{v:?}: {r:?}");
            assert_eq!(
                schema.is_valid(&json!(v)),
                ok,
                "{v:?}: the schema and apply disagree"
            );
            if let Err(e) = r {
                assert!(
                    !e.problem.contains(v) || v.is_empty(),
                    "not quoted back: {e}"
                );
            }
        }
        let mut d = SkillDraft::new(name("x"));
        assert!(d.apply(DraftField::Version, &json!(1.0)).is_err());
    }

    #[test]
    fn renders_and_reads_back_unchanged() {
        let d = full();
        assert_eq!(read_back(&d), d);
        assert_eq!(d.capabilities.hosts, vec!["api.example.org:8443"]);
        let minimal = {
            let mut d = SkillDraft::new(name("m"));
            d.description = "x".into();
            d.body = "y".into();
            d
        };
        assert_eq!(read_back(&minimal), minimal);
    }

    #[test]
    fn rendered_draft_validates_in_the_skillbase_profile() {
        let d = full();
        let text = d.to_skill_md();
        let report = crate::validate::validate_text(
            &text,
            "SKILL.md",
            Some("deploy-app"),
            &crate::validate::ValidateOptions::default(),
        );
        let errors: Vec<_> = report
            .diagnostics
            .iter()
            .filter(|d| d.severity == crate::validate::Severity::Error)
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{text}");
    }

    #[test]
    fn schema_and_parsing_are_one_description() {
        let props = draft_properties();
        assert_eq!(
            props.keys().map(String::as_str).collect::<Vec<_>>(),
            DraftField::ALL.map(DraftField::key).to_vec()
        );
        for f in DraftField::ALL {
            assert_eq!(DraftField::from_key(f.key()), Some(f));
            // Each field's schema compiles.
            jsonschema::validator_for(&f.schema()).unwrap();
        }
    }

    #[test]
    fn refusals_name_the_field_not_the_value() {
        let mut d = SkillDraft::new(name("x"));
        for (args, field) in [
            (json!({"description": "   "}), "description"),
            (json!({"description": "a".repeat(2000)}), "description"),
            (json!({"triggers": "one"}), "triggers"),
            (json!({"triggers": ["t".repeat(201)]}), "triggers"),
            (json!({"when_to_use": ["w".repeat(201)]}), "when_to_use"),
            (
                json!({"when_to_use": ["a", "b", "c", "d", "e", "f"]}),
                "when_to_use",
            ),
            (json!({"when_not_to_use": "one"}), "when_not_to_use"),
            (json!({"when_not_to_use": ["!!!"]}), "when_not_to_use"),
            (
                json!({"companions": ["Not A Name sk-secret"]}),
                "companions",
            ),
            (json!({"inputs": "sk-secret"}), "inputs"),
            (
                json!({"capabilities": {"tools": [], "sk-secret": []}}),
                "capabilities",
            ),
            (json!({"cost": "sk-secret"}), "cost"),
            (json!({"name": "other"}), "name"),
        ] {
            let e = d.apply_all(&args).unwrap_err();
            assert_eq!(e.field, field, "{args}");
            assert!(!e.to_string().contains("sk-secret"), "{e}");
        }
        assert_eq!(
            SkillDraft::new(name("x"))
                .check_complete()
                .unwrap_err()
                .field,
            "description"
        );
    }
}
