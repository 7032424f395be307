//! Codex's `agents/openai.yaml`, the file beside SKILL.md that holds what Codex shows and how it
//! may invoke the skill:
//!
//! ```yaml
//! interface:
//!   display_name: "Deploy"                # shown in pickers
//!   short_description: "Ship a release"
//!   icon_small: "./assets/small.png"      # files of the skill
//!   icon_large: "./assets/large.svg"
//!   brand_color: "#3B82F6"
//!   default_prompt: "Use $deploy to ship the staged release."
//! dependencies:
//!   tools:
//!     - type: "mcp"                       # the only type Codex defines
//!       value: "github"                   # the server's name
//!       description: "GitHub MCP server"
//!       transport: "streamable_http"
//!       url: "https://api.githubcopilot.com/mcp/"
//! policy:
//!   allow_implicit_invocation: false      # only `$deploy` brings it in
//! ```
//!
//! Read with the frontmatter's YAML limits ([`crate::yaml`]: size, depth, nodes; anchors,
//! aliases and tags refused). What maps onto Skillbase's keys is applied by
//! [`crate::SkillMeta::with_codex`]: `policy.allow_implicit_invocation: false` as
//! `disable-model-invocation: true`, an `mcp` dependency as `requires.mcp`, the interface kept
//! as display metadata. What does not map is a [`Note`] of severity warning.

use crate::yaml::{Mapping, Node, YamlError, YamlLimits};
use serde::Serialize;

/// Where the file sits in a skill folder.
pub const PATH: &str = "agents/openai.yaml";

/// Longest interface string (`display_name`, `default_prompt`, ...), in characters.
pub const MAX_INTERFACE_CHARS: usize = 1024;
/// Most `dependencies.tools` entries read.
pub const MAX_DEPENDENCIES: usize = 32;

const TOP_KEYS: [&str; 3] = ["interface", "dependencies", "policy"];
const INTERFACE_KEYS: [&str; 6] = [
    "display_name",
    "short_description",
    "icon_small",
    "icon_large",
    "brand_color",
    "default_prompt",
];
const TOOL_KEYS: [&str; 5] = ["type", "value", "description", "transport", "url"];

/// What Codex shows for a skill: its `interface` table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Interface {
    /// The title shown in skill lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// A short blurb for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    /// A small icon: a file of the skill (`assets/small.png`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon_small: Option<String>,
    /// A large icon: a file of the skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon_large: Option<String>,
    /// An accent colour, `#RRGGBB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brand_color: Option<String>,
    /// The prompt Codex offers to start with the skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_prompt: Option<String>,
}

impl Interface {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Interface::default()
    }
}

/// The file, read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sidecar {
    /// The display metadata.
    pub interface: Interface,
    /// `policy.allow_implicit_invocation` (Codex's default is `true`).
    pub allow_implicit_invocation: Option<bool>,
    /// The `mcp` dependencies whose `value` is a server name Skillbase can require.
    pub mcp: Vec<String>,
}

/// One finding about the file: the key at fault (`policy.allow_implicit_invocation`), its line
/// when known, what is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Whether the finding makes the skill invalid (else it is a warning).
    pub error: bool,
    /// The dotted key concerned; empty for the whole file.
    pub key: String,
    /// The 1-based line in the file.
    pub line: Option<usize>,
    /// What is wrong; it names the file.
    pub message: String,
    /// What to do about it.
    pub hint: &'static str,
}

/// Read the file's text: the sidecar (`None` when any note is an error) and every note.
pub fn read(text: &str, limits: &YamlLimits) -> (Option<Sidecar>, Vec<Note>) {
    let mut r = Reading::default();
    let root = match crate::yaml::parse(text, limits) {
        Ok(root) => root,
        Err(e) => {
            let what = match e {
                YamlError::TooLarge { size, limit } => {
                    format!("is {size} bytes, over the {limit}-byte limit")
                }
                YamlError::TooManyNodes { limit } => format!("has more than {limit} YAML nodes"),
                other => other.to_string(),
            };
            r.error(
                "",
                None,
                what,
                "keep it a short YAML file of `key: value` lines",
            );
            return (None, r.notes);
        }
    };
    let Some(root) = root else {
        return (Some(Sidecar::default()), r.notes);
    };
    let Some(map) = root.as_map() else {
        r.error(
            "",
            Some(root.line()),
            format!("must be a mapping, not {}", root.kind()),
            "start with `interface:`, `dependencies:` or `policy:`",
        );
        return (None, r.notes);
    };
    let mut out = Sidecar::default();
    r.unknown_keys(map, "", &TOP_KEYS);
    if let Some(node) = map.get("interface")
        && let Some(m) = r.mapping(node, "interface")
    {
        out.interface = r.interface(m);
    }
    if let Some(node) = map.get("policy")
        && let Some(m) = r.mapping(node, "policy")
    {
        r.unknown_keys(m, "policy.", &["allow_implicit_invocation"]);
        if let Some(v) = m.get("allow_implicit_invocation") {
            out.allow_implicit_invocation = r.boolean(v, "policy.allow_implicit_invocation");
        }
    }
    if let Some(node) = map.get("dependencies")
        && let Some(m) = r.mapping(node, "dependencies")
    {
        r.unknown_keys(m, "dependencies.", &["tools"]);
        if let Some(tools) = m.get("tools") {
            out.mcp = r.tools(tools);
        }
    }
    let ok = !r.notes.iter().any(|n| n.error);
    (ok.then_some(out), r.notes)
}

#[derive(Default)]
struct Reading {
    notes: Vec<Note>,
}

impl Reading {
    fn note(
        &mut self,
        error: bool,
        key: &str,
        line: Option<usize>,
        what: String,
        hint: &'static str,
    ) {
        let message = if key.is_empty() {
            format!("{PATH}: {what}")
        } else {
            format!("{PATH}: `{key}` {what}")
        };
        self.notes.push(Note {
            error,
            key: key.to_owned(),
            line,
            message,
            hint,
        });
    }

    fn error(&mut self, key: &str, line: Option<usize>, what: String, hint: &'static str) {
        self.note(true, key, line, what, hint);
    }

    fn warn(&mut self, key: &str, line: Option<usize>, what: String, hint: &'static str) {
        self.note(false, key, line, what, hint);
    }

    fn unknown_keys(&mut self, map: &Mapping, prefix: &str, known: &[&str]) {
        for (k, v) in &map.entries {
            if !known.contains(&k.as_str()) {
                let key = format!("{prefix}{}", shown(k));
                self.warn(
                    &key,
                    Some(v.line()),
                    "is not a key Codex defines; it is not used".into(),
                    "check the spelling against Codex's documentation of agents/openai.yaml",
                );
            }
        }
    }

    fn mapping<'n>(&mut self, node: &'n Node, key: &str) -> Option<&'n Mapping> {
        let m = node.as_map();
        if m.is_none() {
            self.error(
                key,
                Some(node.line()),
                format!("must be a mapping, not {}", node.kind()),
                "write `key: value` lines indented under it",
            );
        }
        m
    }

    fn string(&mut self, node: &Node, key: &str) -> Option<String> {
        let Some(s) = node.as_str() else {
            self.error(
                key,
                Some(node.line()),
                format!("must be a string, not {}", node.kind()),
                "quote the value: `key: \"text\"`",
            );
            return None;
        };
        let n = s.chars().count();
        if n > MAX_INTERFACE_CHARS {
            self.error(
                key,
                Some(node.line()),
                format!("is {n} characters; at most {MAX_INTERFACE_CHARS}"),
                "shorten it",
            );
            return None;
        }
        Some(s.trim().to_owned())
    }

    fn boolean(&mut self, node: &Node, key: &str) -> Option<bool> {
        // As Claude Code's flags are read (`crate::meta::boolean`): `true`/`false`, any case.
        let b = match node.as_str().map(|s| s.trim().to_ascii_lowercase()) {
            Some(s) if s == "true" => Some(true),
            Some(s) if s == "false" => Some(false),
            _ => None,
        };
        if b.is_none() {
            self.error(
                key,
                Some(node.line()),
                format!("must be true or false, not {}", node.kind()),
                "write `true` or `false`",
            );
        }
        b
    }

    fn interface(&mut self, m: &Mapping) -> Interface {
        self.unknown_keys(m, "interface.", &INTERFACE_KEYS);
        let mut get = |k: &str| {
            m.get(k)
                .and_then(|n| self.string(n, &format!("interface.{k}")))
        };
        let mut out = Interface {
            display_name: get("display_name"),
            short_description: get("short_description"),
            icon_small: get("icon_small"),
            icon_large: get("icon_large"),
            brand_color: get("brand_color"),
            default_prompt: get("default_prompt"),
        };
        for (k, icon) in [
            ("icon_small", &mut out.icon_small),
            ("icon_large", &mut out.icon_large),
        ] {
            if let Some(p) = icon.take() {
                match crate::BundlePath::parse(p.strip_prefix("./").unwrap_or(&p)) {
                    Ok(path) => *icon = Some(path.as_str().to_owned()),
                    Err(_) => self.error(
                        &format!("interface.{k}"),
                        m.get(k).map(Node::line),
                        "is not a path inside the skill".into(),
                        "name a file of the skill: `./assets/icon.png`",
                    ),
                }
            }
        }
        if let Some(c) = &out.brand_color
            && !is_hex_colour(c)
        {
            self.warn(
                "interface.brand_color",
                m.get("brand_color").map(Node::line),
                "is not a colour `#RRGGBB`; it is not kept".into(),
                "write six hex digits: \"#3B82F6\"",
            );
            out.brand_color = None;
        }
        out
    }

    fn tools(&mut self, node: &Node) -> Vec<String> {
        let Some(items) = node.as_seq() else {
            self.error(
                "dependencies.tools",
                Some(node.line()),
                format!("must be a list, not {}", node.kind()),
                "write one `- type: \"mcp\"` entry per dependency",
            );
            return Vec::new();
        };
        if items.len() > MAX_DEPENDENCIES {
            self.error(
                "dependencies.tools",
                Some(node.line()),
                format!("has {} entries; at most {MAX_DEPENDENCIES}", items.len()),
                "list the servers the skill cannot work without",
            );
            return Vec::new();
        }
        let mut out: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if let Some(name) = self.tool(item, &format!("dependencies.tools[{i}]"))
                && !out.contains(&name)
            {
                out.push(name);
            }
        }
        out
    }

    /// One dependency: the server's name when it maps onto `requires.mcp`.
    fn tool(&mut self, item: &Node, key: &str) -> Option<String> {
        let m = self.mapping(item, key)?;
        self.unknown_keys(m, &format!("{key}."), &TOOL_KEYS);
        let mut field = |k: &str| m.get(k).and_then(|n| self.string(n, &format!("{key}.{k}")));
        let kind = field("type");
        let value = field("value");
        let url = field("url");
        let remote = field("transport").is_some() || url.is_some();
        let line = Some(item.line());
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            self.error(
                &format!("{key}.value"),
                line,
                "is missing: a dependency names its tool".into(),
                "add `value: \"server-name\"`",
            );
            return None;
        };
        let value_shown = shown(&value);
        if kind.as_deref() != Some("mcp") {
            self.warn(
                &format!("{key}.type"),
                line,
                format!("of '{value_shown}' is not `mcp`; only MCP servers map onto `requires.mcp`, so it is not checked"),
                "declare what Skillbase should check under `requires:` in SKILL.md",
            );
            return None;
        }
        if let Some(why) = crate::grammar::check_server_name(&value) {
            self.warn(
                &format!("{key}.value"),
                line,
                format!("'{value_shown}' {why}, so it is not required"),
                "name the server as the operator configures it under [mcp_servers.<name>], in `requires.mcp`",
            );
            return None;
        }
        if remote {
            self.warn(
                key,
                line,
                format!("'{value_shown}': `transport` and `url` are not used; the server is required by name, and Skillbase connects only to servers the operator configures"),
                "configure the server under [mcp_servers.<name>] in skillbase.toml",
            );
        }
        Some(value)
    }
}

/// A key or value as quoted in a message: its first 40 characters, control characters dropped.
fn shown(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(40).collect()
}

fn is_hex_colour(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> (Sidecar, Vec<Note>) {
        let (s, notes) = read(text, &YamlLimits::default());
        (s.unwrap_or_else(|| panic!("{notes:?}")), notes)
    }

    fn errors(text: &str) -> Vec<Note> {
        let (s, notes) = read(text, &YamlLimits::default());
        assert!(s.is_none(), "{text}");
        notes.into_iter().filter(|n| n.error).collect()
    }

    const FULL: &str = "interface:\n  display_name: \"Deploy\"\n  short_description: \"Ship a release\"\n  icon_small: \"./assets/small.png\"\n  icon_large: \"assets/large.svg\"\n  brand_color: \"#3B82F6\"\n  default_prompt: \"Use $deploy to ship.\"\ndependencies:\n  tools:\n    - type: \"mcp\"\n      value: \"github\"\n      description: \"GitHub MCP server\"\n      transport: \"streamable_http\"\n      url: \"https://api.githubcopilot.com/mcp/\"\n    - type: \"mcp\"\n      value: \"docs\"\npolicy:\n  allow_implicit_invocation: false\n";

    #[test]
    fn reads_codex_documented_example() {
        let (s, notes) = ok(FULL);
        assert_eq!(s.interface.display_name.as_deref(), Some("Deploy"));
        assert_eq!(s.interface.icon_small.as_deref(), Some("assets/small.png"));
        assert_eq!(s.interface.icon_large.as_deref(), Some("assets/large.svg"));
        assert_eq!(s.interface.brand_color.as_deref(), Some("#3B82F6"));
        assert_eq!(s.allow_implicit_invocation, Some(false));
        assert_eq!(s.mcp, ["github", "docs"]);
        // The url of a remote server does not map: one warning, naming the file and the entry.
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!notes[0].error);
        assert_eq!(notes[0].key, "dependencies.tools[0]");
        assert!(
            notes[0]
                .message
                .starts_with("agents/openai.yaml: `dependencies.tools[0]`")
        );
        assert_eq!(notes[0].line, Some(10));
        // An empty file is an empty sidecar.
        assert_eq!(ok("").0, Sidecar::default());
    }

    #[test]
    fn what_does_not_map_is_a_warning() {
        let text = "interface:\n  display_nam: x\n  brand_color: blue\ndependencies:\n  tools:\n    - type: \"cli\"\n      value: \"gh\"\n    - type: mcp\n      value: \"openaiDeveloperDocs\"\npolicy:\n  allow_implicit_invocation: true\n  sandbox: strict\nextra: 1\n";
        let (s, notes) = ok(text);
        assert!(s.mcp.is_empty() && s.interface.brand_color.is_none());
        assert_eq!(s.allow_implicit_invocation, Some(true));
        let keys: Vec<&str> = notes.iter().map(|n| n.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "extra",
                "interface.display_nam",
                "interface.brand_color",
                "policy.sandbox",
                "dependencies.tools[0].type",
                "dependencies.tools[1].value",
            ]
        );
        assert!(notes.iter().all(|n| !n.error));
    }

    #[test]
    fn malformed_values_are_errors_naming_the_file_and_key() {
        let cases = [
            ("- a\n- b\n", "", "must be a mapping"),
            ("interface: [a]\n", "interface", "must be a mapping"),
            (
                "interface:\n  display_name: [a]\n",
                "interface.display_name",
                "must be a string",
            ),
            (
                "policy:\n  allow_implicit_invocation: maybe\n",
                "policy.allow_implicit_invocation",
                "true or false",
            ),
            (
                "dependencies:\n  tools: mcp\n",
                "dependencies.tools",
                "must be a list",
            ),
            (
                "dependencies:\n  tools:\n    - type: mcp\n",
                "dependencies.tools[0].value",
                "is missing",
            ),
            (
                "dependencies:\n  tools:\n    - x\n",
                "dependencies.tools[0]",
                "must be a mapping",
            ),
            (
                "interface:\n  icon_small: \"../../etc/passwd\"\n",
                "interface.icon_small",
                "inside the skill",
            ),
            (
                "interface:\n  icon_large: \"/etc/passwd\"\n",
                "interface.icon_large",
                "inside the skill",
            ),
            ("interface: {a: [b\n", "", "agents/openai.yaml: "),
            ("policy:\n  a: 1\npolicy:\n  b: 2\n", "", "duplicate key"),
        ];
        for (text, key, want) in cases {
            let e = errors(text);
            assert!(
                e.iter().any(|n| n.key == key
                    && n.message.contains(want)
                    && n.message.starts_with(PATH)),
                "{text}: {e:?}"
            );
        }
    }

    #[test]
    fn hostile_and_oversized_files_are_refused_under_the_frontmatter_limits() {
        let limits = YamlLimits::default();
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n";
        assert!(errors(bomb)[0].message.contains("anchors and aliases"));
        let deep = format!("interface:{}\n", " [".repeat(100));
        assert!(errors(&deep)[0].message.contains("nesting deeper"));
        let big = format!(
            "interface:\n  default_prompt: \"{}\"\n",
            "x".repeat(limits.max_bytes)
        );
        assert!(
            errors(&big)[0]
                .message
                .starts_with("agents/openai.yaml: is 65568 bytes, over the 65536-byte limit")
        );
        let long = format!("interface:\n  display_name: \"{}\"\n", "x".repeat(2000));
        assert!(errors(&long)[0].message.contains("at most 1024"));
        let many: String = (0..100)
            .map(|k| format!("    - {{type: mcp, value: s{k}}}\n"))
            .collect();
        assert!(
            errors(&format!("dependencies:\n  tools:\n{many}"))[0]
                .message
                .contains("at most 32")
        );
        assert!(errors("policy: !!str x\n")[0].message.contains("tags"));
        // A hostile key is quoted without its control characters, and cut short.
        let (_, notes) = ok(&format!("\"\\e[31m{}\": 1\n", "k".repeat(100)));
        assert!(!notes[0].message.contains('\u{1b}') && notes[0].message.len() < 150);
    }
}
