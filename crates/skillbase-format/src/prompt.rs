//! `read-properties` and the `<available_skills>` prompt block, byte-identical to the reference
//! validator's output.

use crate::frontmatter::{FrontmatterError, SkillMd};
use crate::skill_dir::{self, ReadError};
use crate::yaml::{Node, YamlLimits};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Why a skill's properties could not be read. Messages match the reference's.
#[derive(Debug, thiserror::Error)]
pub enum PropertiesError {
    /// The folder has neither `SKILL.md` nor `skill.md`; holds the folder as displayed.
    #[error("SKILL.md not found in {0}")]
    NotFound(String),
    /// SKILL.md exists but could not be read (too large, not UTF-8, I/O error).
    #[error(transparent)]
    Read(ReadError),
    /// SKILL.md could not be split or its YAML parsed.
    #[error(transparent)]
    Parse(#[from] FrontmatterError),
    /// A required field is missing or not a non-empty string; holds the reference's message.
    #[error("{0}")]
    Validation(String),
}

/// The frontmatter properties the reference's `read_properties` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Properties {
    /// The `name` value, trimmed (not checked against the name rules: the reference does not).
    pub name: String,
    /// The `description` value, trimmed.
    pub description: String,
    /// The `license` value as JSON with every scalar a string, if present.
    pub license: Option<Value>,
    /// The `compatibility` value as JSON with every scalar a string, if present.
    pub compatibility: Option<Value>,
    /// The `allowed-tools` value as JSON with every scalar a string, if present.
    pub allowed_tools: Option<Value>,
    /// The `metadata` value: a mapping's values rendered as Python's `str()`, any other node as
    /// raw JSON; dropped from [`Properties::to_json`] when empty.
    pub metadata: Option<Value>,
    /// The SKILL.md file actually read.
    pub location: PathBuf,
}

impl Properties {
    /// The reference's `to_dict()`: keys in its order, absent and empty-metadata values dropped.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        for (k, v) in [
            ("license", &self.license),
            ("compatibility", &self.compatibility),
            ("allowed-tools", &self.allowed_tools),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone());
            }
        }
        if let Some(meta) = &self.metadata
            && is_truthy(meta)
        {
            m.insert("metadata".into(), meta.clone());
        }
        Value::Object(m)
    }
}

fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

/// Read a skill folder's properties, checking only what the reference checks.
pub fn read_properties(dir: &Path, limits: &YamlLimits) -> Result<Properties, PropertiesError> {
    let location = skill_dir::find_skill_md(dir)
        .ok_or_else(|| PropertiesError::NotFound(dir.display().to_string()))?;
    let text = skill_dir::read_text_file(&location, skill_dir::DEFAULT_MAX_SKILL_MD_BYTES)
        .map_err(PropertiesError::Read)?;
    let md = SkillMd::parse(&text, limits)?;
    properties_of(&md, location)
}

/// The properties of a parsed SKILL.md.
pub fn properties_of(md: &SkillMd, location: PathBuf) -> Result<Properties, PropertiesError> {
    let fm = &md.frontmatter;
    let required = |key: &str| -> Result<String, PropertiesError> {
        match fm.get(key) {
            None => Err(PropertiesError::Validation(format!(
                "Missing required field in frontmatter: {key}"
            ))),
            Some(node) => node
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    PropertiesError::Validation(format!("Field '{key}' must be a non-empty string"))
                }),
        }
    };
    let name = required("name")?;
    let description = required("description")?;
    let metadata = fm.get("metadata").map(|node| match node {
        Node::Map(m) => Value::Object(
            m.entries
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.python_str())))
                .collect(),
        ),
        other => other.to_raw_json(),
    });
    Ok(Properties {
        name,
        description,
        license: fm.get("license").map(Node::to_raw_json),
        compatibility: fm.get("compatibility").map(Node::to_raw_json),
        allowed_tools: fm.get("allowed-tools").map(Node::to_raw_json),
        metadata,
        location,
    })
}

/// Python's `html.escape(s, quote=True)`.
pub fn html_escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
}

/// One entry of the `<available_skills>` block.
#[derive(Debug, Clone, Copy)]
pub struct PromptEntry<'a> {
    /// The skill's name, HTML-escaped when rendered.
    pub name: &'a str,
    /// The skill's description, HTML-escaped when rendered.
    pub description: &'a str,
    /// Written verbatim (not escaped), as the reference does.
    pub location: Option<&'a str>,
}

/// Render the `<available_skills>` block exactly as the reference's `to_prompt` (no trailing
/// newline).
pub fn render_available_skills<'a>(entries: impl IntoIterator<Item = PromptEntry<'a>>) -> String {
    let mut out = String::from("<available_skills>");
    for e in entries {
        out.push_str("\n<skill>\n<name>\n");
        html_escape(e.name, &mut out);
        out.push_str("\n</name>\n<description>\n");
        html_escape(e.description, &mut out);
        out.push_str("\n</description>\n");
        if let Some(loc) = e.location {
            out.push_str("<location>\n");
            out.push_str(loc);
            out.push_str("\n</location>\n");
        }
        out.push_str("</skill>");
    }
    out.push_str("\n</available_skills>");
    out
}

/// The reference's `to_prompt` over skill folders: fails whole on the first unreadable skill.
pub fn to_prompt(dirs: &[PathBuf], limits: &YamlLimits) -> Result<String, PropertiesError> {
    let props = dirs
        .iter()
        .map(|dir| prompt_properties(dir, limits))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(render_prompt(&props))
}

/// One skill's entry for [`to_prompt`]: its properties, with `location` made absolute and
/// canonical as the reference prints it. Independent per folder, so callers may read many
/// folders in parallel and then [`render_prompt`] them in order.
pub fn prompt_properties(dir: &Path, limits: &YamlLimits) -> Result<Properties, PropertiesError> {
    let mut p = read_properties(dir, limits)?;
    p.location = p.location.canonicalize().map_err(|source| {
        PropertiesError::Read(ReadError::Io {
            file: p.location.display().to_string(),
            source,
        })
    })?;
    Ok(p)
}

/// The `<available_skills>` block for properties read by [`prompt_properties`], in order.
pub fn render_prompt(props: &[Properties]) -> String {
    let locations: Vec<String> = props
        .iter()
        .map(|p| p.location.display().to_string())
        .collect();
    render_available_skills(props.iter().zip(&locations).map(|(p, loc)| PromptEntry {
        name: &p.name,
        description: &p.description,
        location: Some(loc),
    }))
}

/// JSON text as Python's `json.dumps(value, indent=2)` prints it (ASCII only, `\uXXXX` escapes).
pub fn python_json(value: &Value) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    let mut out = String::with_capacity(pretty.len());
    for c in pretty.chars() {
        if c.is_ascii() && c != '\u{7f}' {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_prompt() {
        assert_eq!(
            render_available_skills([]),
            "<available_skills>\n</available_skills>"
        );
    }

    #[test]
    fn escapes_like_python() {
        let mut s = String::new();
        html_escape("a<b>&\"'", &mut s);
        assert_eq!(s, "a&lt;b&gt;&amp;&quot;&#x27;");
    }

    #[test]
    fn python_json_escapes_non_ascii() {
        let v = serde_json::json!({"name": "技能", "e": "😀"});
        assert_eq!(
            python_json(&v),
            "{\n  \"name\": \"\\u6280\\u80fd\",\n  \"e\": \"\\ud83d\\ude00\"\n}"
        );
    }
}
