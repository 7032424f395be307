//! `.claude-plugin/marketplace.json`, Claude Code's plugin marketplace manifest: read with every
//! entry checked, each problem named by its place (`plugins[2].source`).
//!
//! What is read: `name`, `metadata.pluginRoot`, and for each of `plugins[]` its `name`, its
//! `source` (a relative path, or `{"source": "github", "repo", "ref"?, "sha"?}`,
//! `{"source": "url", "url", "ref"?, "sha"?}`, `{"source": "git-subdir", "url", "path", "ref"?,
//! "sha"?}`) and its `skills` (a path or paths to more skill folders, beside the plugin's
//! `skills/`). Other keys (`owner`, `description`, `version`, `commands`, `hooks`, ...) are
//! Claude Code's and are not read.

use crate::git::GitSource;
use serde_json::Value;
use std::collections::BTreeSet;

/// Largest manifest read, in bytes. 1 MiB.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
/// Most plugins in one manifest. 256.
pub const MAX_PLUGINS: usize = 256;
/// Most `skills` paths of one plugin entry. 32.
const MAX_SKILL_PATHS: usize = 32;
/// Longest path or URL in a manifest, in bytes.
const MAX_TEXT: usize = 1024;

/// A marketplace manifest, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The marketplace's name.
    pub name: String,
    /// Its plugins, in the manifest's order.
    pub plugins: Vec<Plugin>,
}

/// One entry of `plugins[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plugin {
    /// Its index in `plugins[]`, for messages.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Where its files are.
    pub source: PluginSource,
    /// Folders of skills beside `skills/`, relative to the plugin's folder ('/'-separated, no
    /// `..`).
    pub skills: Vec<String>,
}

/// Where a plugin's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// A folder of the marketplace ('/'-separated, relative, no `..`; "" for its root).
    Local(String),
    /// A git repository (its folder in `subdir`), fetched as any git source.
    Git(GitSource),
}

/// Parse and check the manifest `bytes`; `git_base` is what `{"source": "github"}` repositories
/// are fetched from (`https://github.com/` unless configured). The problem, naming the entry at
/// fault and what to write, otherwise.
pub fn parse(bytes: &[u8], git_base: &str) -> Result<Manifest, String> {
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(format!(
            "it is {} bytes, over the limit of {MAX_MANIFEST_BYTES} bytes for a manifest",
            bytes.len()
        ));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "not valid JSON (line {}, column {}: {}); fix the file so that `claude plugin \
             validate` accepts it",
            e.line(),
            e.column(),
            e.classify_text()
        )
    })?;
    let top = value
        .as_object()
        .ok_or("the manifest must be a JSON object with `name`, `owner` and `plugins`")?;
    let name = text(top.get("name"), "name")?;
    let root = match top.get("metadata").and_then(|m| m.get("pluginRoot")) {
        None | Some(Value::Null) => String::new(),
        Some(v) => rel_path(
            &text(Some(v), "metadata.pluginRoot")?,
            "metadata.pluginRoot",
            "the marketplace",
        )?,
    };
    let list = match top.get("plugins") {
        Some(Value::Array(list)) => list,
        Some(_) => return Err("plugins: must be an array of plugin entries".into()),
        None => return Err("plugins: missing; list the plugins as \"plugins\": [...]".into()),
    };
    if list.len() > MAX_PLUGINS {
        return Err(format!(
            "plugins: {} entries, over the limit of {MAX_PLUGINS}",
            list.len()
        ));
    }
    let mut plugins = Vec::with_capacity(list.len());
    let mut seen = BTreeSet::new();
    for (index, entry) in list.iter().enumerate() {
        let plugin = parse_plugin(index, entry, &root, git_base)?;
        if !seen.insert(plugin.name.clone()) {
            return Err(format!(
                "plugins[{index}].name: `{}` is listed twice; give each plugin its own name",
                plugin.name
            ));
        }
        plugins.push(plugin);
    }
    Ok(Manifest { name, plugins })
}

/// The serde_json error's kind in words.
trait Classify {
    fn classify_text(&self) -> String;
}

impl Classify for serde_json::Error {
    fn classify_text(&self) -> String {
        // The message without serde_json's own " at line L column C" suffix.
        let m = self.to_string();
        match m.find(" at line ") {
            Some(i) => m[..i].to_string(),
            None => m,
        }
    }
}

fn parse_plugin(index: usize, entry: &Value, root: &str, git_base: &str) -> Result<Plugin, String> {
    let at = format!("plugins[{index}]");
    let obj = entry
        .as_object()
        .ok_or_else(|| format!("{at}: must be an object with `name` and `source`"))?;
    let name = text(obj.get("name"), &format!("{at}.name"))?;
    if !is_name(&name) {
        return Err(format!(
            "{at}.name: {name:?} is not a plugin name; use letters, digits, `-`, `_` and `.`, \
             starting with a letter or digit, at most 64 characters"
        ));
    }
    let source = match obj.get("source") {
        None => {
            return Err(format!(
                "{at}.source: missing; write \"./plugins/{name}\" or an object"
            ));
        }
        Some(Value::String(s)) => {
            let rel = rel_path(s, &format!("{at}.source"), "the marketplace")?;
            PluginSource::Local(join(root, &rel))
        }
        Some(Value::Object(_)) => PluginSource::Git(git_source(&at, &obj["source"], git_base)?),
        Some(_) => {
            return Err(format!(
                "{at}.source: must be a relative path (\"./plugins/{name}\") or an object"
            ));
        }
    };
    let skills = match obj.get("skills") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![rel_path(s, &format!("{at}.skills"), "the plugin")?],
        Some(Value::Array(list)) if list.len() <= MAX_SKILL_PATHS => list
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let field = format!("{at}.skills[{k}]");
                rel_path(&text(Some(v), &field)?, &field, "the plugin")
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Array(list)) => {
            return Err(format!(
                "{at}.skills: {} paths, over the limit of {MAX_SKILL_PATHS}",
                list.len()
            ));
        }
        Some(_) => return Err(format!("{at}.skills: must be a path or a list of paths")),
    };
    Ok(Plugin {
        index,
        name,
        source,
        skills,
    })
}

/// A source object: a git repository, as a [`GitSource`].
fn git_source(at: &str, v: &Value, git_base: &str) -> Result<GitSource, String> {
    let at = format!("{at}.source");
    let kind = text(v.get("source"), &format!("{at}.source"))?;
    let field = |k: &str| -> Result<Option<String>, String> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => text(v.get(k), &format!("{at}.{k}")).map(Some),
        }
    };
    let reference = match (field("sha")?, field("ref")?) {
        (Some(sha), _) if sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(sha.to_ascii_lowercase())
        }
        (Some(sha), _) => {
            return Err(format!(
                "{at}.sha: {sha:?} is not a full commit id; write its 40 hex digits"
            ));
        }
        (None, r) => r,
    };
    let (url, subdir) = match kind.as_str() {
        "github" => {
            let repo = field("repo")?
                .ok_or_else(|| format!("{at}.repo: missing; write \"owner/repo\""))?;
            (
                github_url(&repo, git_base).map_err(|p| format!("{at}.repo: {p}"))?,
                None,
            )
        }
        "url" | "git-subdir" => {
            let url = field("url")?.ok_or_else(|| format!("{at}.url: missing"))?;
            let subdir = match kind.as_str() {
                "git-subdir" => {
                    let p = field("path")?.ok_or_else(|| format!("{at}.path: missing"))?;
                    Some(rel_path(&p, &format!("{at}.path"), "the repository")?)
                }
                _ => None,
            };
            (url, subdir)
        }
        other => {
            return Err(format!(
                "{at}.source: `{other}` sources are not supported; a plugin's source is a \
                 relative path or a git repository (\"github\", \"url\", \"git-subdir\")"
            ));
        }
    };
    remote(&at, &url, reference, subdir)
}

/// The URL of GitHub's `owner/repo` under `git_base`.
pub(crate) fn github_url(repo: &str, git_base: &str) -> Result<String, String> {
    let Some((owner, name)) = repo.split_once('/') else {
        return Err(format!("{repo:?} is not owner/repo"));
    };
    if !is_owner(owner) || !is_repo(name) {
        return Err(format!(
            "{repo:?} is not owner/repo (an owner of letters, digits and `-`; a repository of \
             letters, digits, `-`, `_` and `.`, neither starting with `-` or `.`)"
        ));
    }
    let name = name.strip_suffix(".git").unwrap_or(name);
    Ok(format!(
        "{}/{owner}/{name}.git",
        git_base.trim_end_matches('/')
    ))
}

/// A GitHub owner: letters, digits and `-`, not first; at most 39.
pub(crate) fn is_owner(s: &str) -> bool {
    (1..=39).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !s.starts_with('-')
}

/// A GitHub repository name: letters, digits, `-`, `_`, `.`; not starting with `-` or `.`.
pub(crate) fn is_repo(s: &str) -> bool {
    (1..=100).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !s.starts_with(['-', '.'])
}

/// A remote plugin's source: `url` (http(s), git or ssh; never a file on this machine) at
/// `reference`, under `subdir`.
fn remote(
    at: &str,
    url: &str,
    reference: Option<String>,
    subdir: Option<String>,
) -> Result<GitSource, String> {
    if url.len() > MAX_TEXT {
        return Err(format!("{at}.url: over the limit of {MAX_TEXT} bytes"));
    }
    let plain = GitSource::parse(&format!("git+{url}")).map_err(|e| format!("{at}.url: {e}"))?;
    if plain.reference.is_some() || plain.subdir.is_some() {
        return Err(format!(
            "{at}.url: the URL holds an `@` or `#` after its path; write the branch or tag in \
             `ref`, the commit in `sha`"
        ));
    }
    if plain.url.starts_with("file:") {
        return Err(format!(
            "{at}.url: a marketplace cannot name a repository on this machine (file://); use a \
             relative path for the marketplace's own folders"
        ));
    }
    let mut spec = format!("git+{url}");
    if let Some(r) = &reference {
        spec.push('@');
        spec.push_str(r);
    }
    if let Some(d) = &subdir {
        spec.push('#');
        spec.push_str(d);
    }
    GitSource::parse(&spec).map_err(|e| format!("{at}: {e}"))
}

/// A plugin name: 1 to 64 letters, digits, `-`, `_`, `.`, starting with a letter or digit.
pub(crate) fn is_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The string at `field`, or what is wrong with it.
fn text(v: Option<&Value>, field: &str) -> Result<String, String> {
    match v {
        Some(Value::String(s)) if s.is_empty() => Err(format!("{field}: is empty")),
        Some(Value::String(s)) if s.len() > MAX_TEXT => Err(format!(
            "{field}: {} bytes, over the limit of {MAX_TEXT}",
            s.len()
        )),
        Some(Value::String(s)) if s.chars().any(char::is_control) => {
            Err(format!("{field}: contains a control character"))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{field}: must be a string")),
        None => Err(format!("{field}: missing")),
    }
}

/// A path relative to `inside` (`./a/b`, `a/b/`, `./`): '/'-separated without `.` parts; ""
/// for `inside` itself. Absolute paths, `..`, backslashes and `.git` are refused.
pub(crate) fn rel_path(s: &str, field: &str, inside: &str) -> Result<String, String> {
    let fix = "write a folder inside it, e.g. \"./plugins/name\"";
    if s.len() > MAX_TEXT || s.chars().any(char::is_control) {
        return Err(format!("{field}: not a usable path; {fix}"));
    }
    if s.starts_with(['/', '~']) || s.get(1..2) == Some(":") {
        return Err(format!(
            "{field}: {s:?} is an absolute path outside {inside}; {fix}"
        ));
    }
    if s.contains('\\') {
        return Err(format!(
            "{field}: {s:?} contains a backslash; write `/` between folders"
        ));
    }
    let mut parts = Vec::new();
    for part in s.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(format!("{field}: {s:?} escapes {inside}; {fix}")),
            ".git" => return Err(format!("{field}: {s:?} goes into `.git`; {fix}")),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// `a` and `b` joined with '/', either possibly empty.
pub(crate) fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    }
}
