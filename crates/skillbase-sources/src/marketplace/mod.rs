//! Claude Code plugin marketplaces: a folder (or a git repository's folder) holding
//! `.claude-plugin/marketplace.json`, each plugin's skills in its `skills/<name>/SKILL.md`
//! (and any folders its entry's `skills` names). Read whole, all or nothing, under the same
//! [`Limits`](crate::Limits) as any folder or git source; [`export`] writes one.
//!
//! - A plugin whose `source` is a relative path is read from the marketplace's own folder; the
//!   path may not leave it (`..`, an absolute path), and on this machine no folder on the way
//!   may be a symbolic link. In git, links are never followed either.
//! - A plugin whose `source` is a git repository (`github`, `url`, `git-subdir`) is fetched as
//!   any git source (its own cache, limits and reference); `github` repositories are under the
//!   reader's git base (`https://github.com/`, or `SKILLBASE_GIT_BASE`).
//! - Two plugins offering a skill of the same name are refused, naming both.
//! - A plugin without skills (only commands, hooks, ...) is skipped with a note, unless it was
//!   chosen by name; a marketplace without any skill is refused.

mod export;
mod manifest;
#[cfg(test)]
mod tests;

pub use export::{Export, ExportError, ExportSkill, Exported, export, manifests};
pub use manifest::{MAX_MANIFEST_BYTES, MAX_PLUGINS, Manifest, Plugin, PluginSource, parse};
pub(crate) use manifest::{github_url, is_owner, is_repo};

use crate::error::SourceError;
use crate::git::{self, GitError, GitSource, Opened};
use crate::sourced::{Context, Read, Sourced, git_skills};
use manifest::join;
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Where a marketplace's manifest is, from its root.
pub const MANIFEST: &str = ".claude-plugin/marketplace.json";

/// Whether the folder `dir` holds a marketplace manifest (links are refused when it is read).
pub fn is_marketplace(dir: &Path) -> bool {
    dir.is_dir() && dir.join(MANIFEST).exists()
}

/// Why a folder named by a manifest cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unusable {
    Missing,
    Link,
    NotFolder,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unusable::Missing => "does not exist in the marketplace",
            Unusable::Link => {
                "is reached through a symbolic link, which is never followed; copy the folder in"
            }
            Unusable::NotFolder => "is not a folder",
        })
    }
}

/// The folder `rel` under `base`, every part of the way a real folder (no link followed).
fn inside(base: &Path, rel: &str) -> Result<PathBuf, Unusable> {
    let mut p = base.to_path_buf();
    for part in rel.split('/').filter(|s| !s.is_empty()) {
        p.push(part);
        match fs::symlink_metadata(&p) {
            Err(_) => return Err(Unusable::Missing),
            Ok(m) if m.file_type().is_symlink() => return Err(Unusable::Link),
            Ok(m) if !m.is_dir() => return Err(Unusable::NotFolder),
            Ok(_) => {}
        }
    }
    Ok(p)
}

/// The manifest file under `root`: a plain file (no link on the way), at most
/// [`MAX_MANIFEST_BYTES`].
fn read_manifest_file(root: &Path) -> Result<Vec<u8>, String> {
    inside(root, ".claude-plugin").map_err(|why| format!(".claude-plugin {why}"))?;
    let path = root.join(MANIFEST);
    let meta = fs::symlink_metadata(&path).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.file_type().is_file() {
        return Err("is not a plain file (a link is never followed)".into());
    }
    if meta.len() > MAX_MANIFEST_BYTES {
        return Err(format!(
            "it is {} bytes, over the limit of {MAX_MANIFEST_BYTES} bytes for a manifest",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    fs::File::open(&path)
        .and_then(|f| f.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(bytes)
}

/// The plugins `wanted` (all when empty), or which name is not in the manifest.
fn select<'a>(m: &'a Manifest, wanted: &[String]) -> Result<Vec<&'a Plugin>, String> {
    if wanted.is_empty() {
        return Ok(m.plugins.iter().collect());
    }
    wanted
        .iter()
        .map(|w| {
            m.plugins.iter().find(|p| &p.name == w).ok_or_else(|| {
                let names: Vec<&str> = m.plugins.iter().map(|p| p.name.as_str()).collect();
                format!(
                    "has no plugin named `{w}`; its plugins are: {}",
                    names.join(", ")
                )
            })
        })
        .collect()
}

/// The folders of skills of a plugin, from its folder: `skills` (skipped when missing), then
/// those its entry names (required), each with the field that names it.
fn skill_paths(p: &Plugin) -> Vec<(String, String, bool)> {
    let mut out = vec![(format!("plugins[{}]", p.index), "skills".to_string(), false)];
    for (k, s) in p.skills.iter().enumerate() {
        out.push((format!("plugins[{}].skills[{k}]", p.index), s.clone(), true));
    }
    out
}

/// The skills gathered from the plugins, checked for names offered twice.
#[derive(Default)]
struct Gathered {
    skills: Vec<Sourced>,
    /// Each skill's plugin, by skill name.
    from: BTreeMap<String, (usize, String)>,
    /// Plugins that gave no skill.
    empty: Vec<String>,
}

impl Gathered {
    fn add(&mut self, p: &Plugin, items: Vec<Sourced>) -> Result<(), String> {
        if items.is_empty() {
            self.empty.push(p.name.clone());
        }
        for item in items {
            let name = item.name().unwrap_or_default();
            if let Some((i, other)) = self.from.get(&name) {
                let (i, other) = (*i, other.clone());
                return Err(if i == p.index {
                    format!("plugins[{i}] (`{other}`) offers two skills named `{name}`; rename one")
                } else {
                    format!(
                        "the skill `{name}` is offered by both plugins[{i}] (`{other}`) and \
                         plugins[{}] (`{}`); import one of them with --plugin",
                        p.index, p.name
                    )
                });
            }
            self.from.insert(name, (p.index, p.name.clone()));
            self.skills.push(item);
        }
        Ok(())
    }

    /// The skills, at most `max`; the notes on plugins without skills.
    fn finish(self, max: usize, wanted: &[String]) -> Result<(Vec<Sourced>, Vec<String>), String> {
        if let Some(p) = self.empty.iter().find(|p| wanted.contains(*p)) {
            return Err(format!(
                "the plugin `{p}` has no skills (no skills/<name>/SKILL.md, nor any folder its \
                 `skills` names)"
            ));
        }
        if self.skills.is_empty() {
            return Err(
                "no plugin of the marketplace has skills (skills/<name>/SKILL.md in a plugin's \
                 folder)"
                    .into(),
            );
        }
        if self.skills.len() > max {
            return Err(format!(
                "its plugins hold {} skills, over the limit of {max} per import; import fewer \
                 with --plugin NAME",
                self.skills.len()
            ));
        }
        let notes = self
            .empty
            .into_iter()
            .map(|p| format!("plugin `{p}` has no skills; skipped"))
            .collect();
        Ok((self.skills, notes))
    }
}

/// Every skill of the marketplace at `root` (of the plugins `wanted`, all when empty). Remote
/// plugins are fetched only when `remote` (the lockfile re-reads each from its own origin).
/// Blocking.
pub(crate) fn read_local(
    cx: &Context,
    root: &Path,
    wanted: &[String],
    remote: bool,
) -> Result<Read, SourceError> {
    let root = root.canonicalize().map_err(|e| SourceError::Marketplace {
        at: root.display().to_string(),
        problem: format!("cannot open the folder: {e}"),
    })?;
    let at = root.join(MANIFEST).display().to_string();
    let bad = |problem: String| SourceError::Marketplace {
        at: at.clone(),
        problem,
    };
    let bytes = read_manifest_file(&root).map_err(bad)?;
    let m = parse(&bytes, &cx.git_base).map_err(bad)?;
    let source = root.display().to_string();
    let mut gathered = Gathered::default();
    for p in select(&m, wanted).map_err(bad)? {
        let items = match &p.source {
            PluginSource::Local(rel) => {
                let dir = inside(&root, rel)
                    .map_err(|why| bad(format!("plugins[{}].source: {rel:?} {why}", p.index)))?;
                let mut items = Vec::new();
                for (field, path, required) in skill_paths(p) {
                    match inside(&dir, &path) {
                        Ok(d) => items.extend(cx.read_pack(&d, &source)?),
                        Err(Unusable::Missing) if !required => {}
                        Err(why) => return Err(bad(format!("{field}: {path:?} {why}"))),
                    }
                }
                items
            }
            PluginSource::Git(g) if remote => {
                remote_plugin(cx, p, g).map_err(|e| in_plugin(p, e, &bad))?
            }
            PluginSource::Git(_) => continue,
        };
        gathered.add(p, items).map_err(bad)?;
    }
    let (skills, notes) = gathered
        .finish(cx.limits.pack.max_skills, wanted)
        .map_err(bad)?;
    Ok(Read {
        skills,
        source,
        commit: None,
        notes,
    })
}

/// A plugin's error, named by its entry.
fn in_plugin(p: &Plugin, e: SourceError, bad: &dyn Fn(String) -> SourceError) -> SourceError {
    bad(format!("plugins[{}] (`{}`): {e}", p.index, p.name))
}

/// The skills of a plugin in a git repository of its own. Blocking.
fn remote_plugin(cx: &Context, p: &Plugin, g: &GitSource) -> Result<Vec<Sourced>, SourceError> {
    let limits = &cx.limits;
    let opened = git::open(g, &limits.git, &cx.git_cache)?;
    read_plugin_in(&opened, g, g.subdir.as_deref().unwrap_or(""), p, cx)
}

/// The skills of plugin `p`, whose folder is `dir` in the commit `opened` (of `src`).
fn read_plugin_in(
    opened: &Opened,
    src: &GitSource,
    dir: &str,
    p: &Plugin,
    cx: &Context,
) -> Result<Vec<Sourced>, SourceError> {
    let limits = &cx.limits;
    let commit = opened.commit();
    let mut items = Vec::new();
    for (_, path, required) in skill_paths(p) {
        let sub = join(dir, &path);
        let sub = (!sub.is_empty()).then_some(sub);
        match opened.read(sub.as_deref(), &limits.git) {
            Ok(fetched) => {
                if fetched.skills.is_empty() {
                    continue;
                }
                let at = src.at(Some(commit.clone()), sub);
                items.extend(git_skills(fetched, &at, limits)?);
            }
            Err(GitError::SubdirNotFound { detail, .. })
                if !required && detail.ends_with("does not exist") => {}
            Err(GitError::NoSkill { .. }) if !required => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(items)
}

/// The skills of the marketplace whose manifest (`bytes`) is at `src`'s folder of the commit
/// `opened` (of the plugins `wanted`, all when empty). Blocking.
pub(crate) fn read_in_git(
    cx: &Context,
    opened: &Opened,
    src: &GitSource,
    bytes: &[u8],
    wanted: &[String],
) -> Result<Read, SourceError> {
    let base = src.subdir.clone().unwrap_or_default();
    let at = format!(
        "git+{}@{}#{}",
        src.url,
        opened.commit(),
        join(&base, MANIFEST)
    );
    let bad = |problem: String| SourceError::Marketplace {
        at: at.clone(),
        problem,
    };
    let m = parse(bytes, &cx.git_base).map_err(bad)?;
    let mut gathered = Gathered::default();
    for p in select(&m, wanted).map_err(bad)? {
        let items = match &p.source {
            PluginSource::Local(rel) => read_plugin_in(opened, src, &join(&base, rel), p, cx),
            PluginSource::Git(g) => remote_plugin(cx, p, g),
        }
        .map_err(|e| in_plugin(p, e, &bad))?;
        gathered.add(p, items).map_err(bad)?;
    }
    let (skills, notes) = gathered
        .finish(cx.limits.git.skills_per_import, wanted)
        .map_err(bad)?;
    Ok(Read {
        skills,
        source: format!("git+{}", src.url),
        commit: Some(opened.commit()),
        notes,
    })
}
