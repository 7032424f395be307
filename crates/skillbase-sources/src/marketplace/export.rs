//! Writing skills as a plugin marketplace others can add (`/plugin marketplace add DIR`, or the
//! folder pushed to a git repository):
//!
//! ```text
//! DIR/.claude-plugin/marketplace.json        {"name", "owner", "metadata", "plugins": [...]}
//! DIR/plugins/PLUGIN/.claude-plugin/plugin.json
//! DIR/plugins/PLUGIN/skills/NAME/SKILL.md    each skill's files (and SKILL.sig when signed)
//! ```
//!
//! The output depends only on what is exported (no timestamps; skills and JSON keys in a fixed
//! order). It is written beside `DIR` and moved into place whole: `DIR` must not exist or be an
//! empty folder, so nothing of anyone's is ever overwritten or mixed with an export.

use super::MANIFEST;
use super::manifest::is_name;
use skillbase_format::Bundle;
use skillbase_format::signature::Signature;
use skillbase_store::pack;
use std::fs;
use std::path::{Path, PathBuf};

/// One skill to export.
#[derive(Debug, Clone)]
pub struct ExportSkill {
    /// Its name (its folder's).
    pub name: String,
    /// Its files.
    pub bundle: Bundle,
    /// Its signature, written as `SKILL.sig` so that it imports signed.
    pub signature: Option<Signature>,
}

/// What the marketplace and its one plugin are called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The marketplace's `name` (what `/plugin install PLUGIN@NAME` names).
    pub marketplace: String,
    /// Its `owner.name`.
    pub owner: String,
    /// The plugin's name (its folder under `plugins/`).
    pub plugin: String,
    /// The plugin's description.
    pub description: String,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The marketplace's folder.
    pub dir: PathBuf,
    /// The skills' folders, relative to it, in name order.
    pub skills: Vec<String>,
}

/// Why an export wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The target folder holds something already.
    #[error(
        "{} exists and is not an empty folder; export into a new folder (an export never \
         writes into one it did not create)",
        .0.display()
    )]
    NotEmpty(PathBuf),
    /// A name is not usable in a manifest.
    #[error(
        "{field} `{value}` is not usable; use letters, digits, `-`, `_` and `.`, starting with a \
         letter or digit, at most 64 characters"
    )]
    Name {
        /// `--name`, `--plugin` or a skill's name.
        field: &'static str,
        /// What was given.
        value: String,
    },
    /// Two skills of the same name.
    #[error("two skills are named `{0}`; a plugin holds one folder per name")]
    Duplicate(String),
    /// Nothing to export.
    #[error("there are no skills to export")]
    Empty,
    /// Writing failed (what was written is removed).
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// What could not be written.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A skill could not be written as a folder.
    #[error(transparent)]
    Store(#[from] skillbase_store::StoreError),
}

/// The marketplace.json and plugin.json texts of `e`, as written (pretty JSON, a final newline).
pub fn manifests(e: &Export, skills: usize) -> (String, String) {
    let marketplace = serde_json::json!({
        "name": e.marketplace,
        "owner": { "name": e.owner },
        "metadata": { "description": format!("Skills exported from Skillbase ({skills})") },
        "plugins": [{
            "name": e.plugin,
            "source": format!("./plugins/{}", e.plugin),
            "description": e.description,
        }],
    });
    let plugin = serde_json::json!({
        "name": e.plugin,
        "description": e.description,
    });
    let text = |v: &serde_json::Value| {
        let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
        s.push('\n');
        s
    };
    (text(&marketplace), text(&plugin))
}

/// Write `skills` as the marketplace `e` at `dir`: all of it, or nothing.
pub fn export(dir: &Path, e: &Export, skills: &[ExportSkill]) -> Result<Exported, ExportError> {
    for (field, value) in [("--name", &e.marketplace), ("--plugin", &e.plugin)] {
        if !is_name(value) {
            return Err(ExportError::Name {
                field,
                value: value.clone(),
            });
        }
    }
    if skills.is_empty() {
        return Err(ExportError::Empty);
    }
    if let Some(s) = skills.iter().find(|s| !is_name(&s.name)) {
        return Err(ExportError::Name {
            field: "a skill's name",
            value: s.name.clone(),
        });
    }
    let mut sorted: Vec<&ExportSkill> = skills.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = sorted.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(ExportError::Duplicate(w[0].name.clone()));
    }
    let empty_dir = match fs::symlink_metadata(dir) {
        Err(_) => false,
        Ok(m) if m.is_dir() => fs::read_dir(dir)
            .map_err(|source| io(dir, source))?
            .next()
            .is_none()
            .then_some(true)
            .ok_or_else(|| ExportError::NotEmpty(dir.to_path_buf()))?,
        Ok(_) => return Err(ExportError::NotEmpty(dir.to_path_buf())),
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let tmp = dir.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let written = write_tree(&tmp, e, &sorted);
    let moved = written.and_then(|paths| {
        if empty_dir {
            fs::remove_dir(dir).map_err(|source| io(dir, source))?;
        }
        fs::rename(&tmp, dir).map_err(|source| io(dir, source))?;
        Ok(paths)
    });
    match moved {
        Ok(skills) => Ok(Exported {
            dir: dir.to_path_buf(),
            skills,
        }),
        Err(err) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(err)
        }
    }
}

fn io(path: &Path, source: std::io::Error) -> ExportError {
    ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The whole marketplace under `root` (a new folder): the skills' folders, relative.
fn write_tree(
    root: &Path,
    e: &Export,
    skills: &[&ExportSkill],
) -> Result<Vec<String>, ExportError> {
    let (marketplace, plugin) = manifests(e, skills.len());
    let plugin_dir = root.join("plugins").join(&e.plugin);
    for (path, text) in [
        (root.join(MANIFEST), marketplace),
        (
            plugin_dir.join(".claude-plugin").join("plugin.json"),
            plugin,
        ),
    ] {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|source| io(parent, source))?;
        }
        fs::write(&path, text).map_err(|source| io(&path, source))?;
    }
    let mut out = Vec::with_capacity(skills.len());
    for s in skills {
        let to = plugin_dir.join("skills").join(&s.name);
        pack::export_signed(&s.bundle, s.signature.as_ref(), &s.name, &to)?;
        out.push(format!("plugins/{}/skills/{}", e.plugin, s.name));
    }
    Ok(out)
}
