//! Finding skill folders under a path.

use crate::skill_dir::{find_skill_md, is_skill_md_path};
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// How deep [`discover`] descends below the given folder.
pub const MAX_DISCOVERY_DEPTH: usize = 8;

/// What a path given on the command line turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Skill folders, in sorted order (a SKILL.md path yields its parent folder).
    Skills(Vec<PathBuf>),
    /// The path exists but holds no skill.
    NoSkills,
    /// The path does not exist.
    Missing,
}

/// Find the skills at `path`: a skill folder, a SKILL.md file, or a folder searched recursively
/// (hidden folders, `node_modules` and `target` skipped; links followed once).
pub fn discover(path: &Path) -> Found {
    let Ok(meta) = fs::metadata(path) else {
        return Found::Missing;
    };
    if meta.is_file() {
        if is_skill_md_path(path) {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            return Found::Skills(vec![parent]);
        }
        return Found::NoSkills;
    }
    if find_skill_md(path).is_some() {
        return Found::Skills(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    walk(path, 0, &mut out, &mut seen);
    out.sort();
    if out.is_empty() {
        Found::NoSkills
    } else {
        Found::Skills(out)
    }
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) {
    if depth > MAX_DISCOVERY_DEPTH {
        return;
    }
    if let Ok(canon) = dir.canonicalize()
        && !seen.insert(canon)
    {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "node_modules" || name == "target" {
            continue;
        }
        let path = entry.path();
        // The entry's type comes with the listing; only links need a `stat` to follow them.
        let is_dir = match entry.file_type() {
            Ok(t) if t.is_dir() => true,
            Ok(t) if !t.is_symlink() => false,
            _ => path.is_dir(),
        };
        if !is_dir {
            continue;
        }
        if find_skill_md(&path).is_some() {
            out.push(path);
        } else {
            walk(&path, depth + 1, out, seen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_skills_and_skill_md_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in ["a", "group/b", ".hidden/c", "node_modules/d"] {
            fs::create_dir_all(root.join(d)).unwrap();
            fs::write(root.join(d).join("SKILL.md"), "---\n---\n").unwrap();
        }
        fs::create_dir_all(root.join("empty")).unwrap();
        assert_eq!(
            discover(root),
            Found::Skills(vec![root.join("a"), root.join("group/b")])
        );
        assert_eq!(
            discover(&root.join("a/SKILL.md")),
            Found::Skills(vec![root.join("a")])
        );
        assert_eq!(
            discover(&root.join("a")),
            Found::Skills(vec![root.join("a")])
        );
        assert_eq!(discover(&root.join("empty")), Found::NoSkills);
        assert_eq!(discover(&root.join("nope")), Found::Missing);
    }
}
