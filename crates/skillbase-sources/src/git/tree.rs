//! A commit's tree: descend to `#subdir`, walk it for skill folders, check the limits over what
//! the walk found, and only then read the files.

use super::error::{GitError, read_error};
use super::limits::GitLimits;
use super::spec::GitSource;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

/// One skill read from the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedSkill {
    /// Path of the skill folder inside the repository ('/'-separated, from the repository's
    /// root even under `#subdir`), "" for the root.
    pub dir: String,
    /// The skill's files, sorted by path.
    pub files: Vec<FetchedFile>,
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedFile {
    /// Relative to the skill folder, '/'-separated.
    pub path: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Mode 100755 in the tree.
    pub executable: bool,
}

/// What one fetch read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The commit read, 40 lowercase hex digits.
    pub commit: String,
    /// The skills, sorted by `dir`.
    pub skills: Vec<FetchedSkill>,
}

/// Most tree entries (files and folders) looked at under the selected folder: a guard against
/// pathological trees (many empty files pass the byte limits), not one of [`GitLimits`].
const MAX_TREE_ENTRIES: usize = 100_000;

/// Whether a file name marks a skill folder (as the format crate: `SKILL.md` or `skill.md`).
fn is_skill_md(name: &str) -> bool {
    name == "SKILL.md" || name == "skill.md"
}

/// A skill found in the walk, before its files are read.
struct SkillDraft {
    dir: String,
    files: Vec<(String, ObjectId, bool, u64)>,
    unsafe_entries: Vec<(String, &'static str, &'static str)>,
}

/// Join repository-relative path parts.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn skill_label(dir: &str) -> String {
    if dir.is_empty() {
        "the skill at the repository's root".into()
    } else {
        dir.to_string()
    }
}

/// Read the skills of `commit`'s tree at `src.subdir`, checking the limits before any file is
/// read.
pub(super) fn read_skills(
    repo: &gix::Repository,
    commit: ObjectId,
    src: &GitSource,
    limits: &GitLimits,
) -> Result<Fetched, GitError> {
    let url = src.url.as_str();
    let root = repo
        .find_commit(commit)
        .map_err(|e| read_error(url, "cannot read the commit", &e))?
        .tree_id()
        .map_err(|e| read_error(url, "cannot read the commit's tree", &e))?
        .detach();
    let (base, base_path) = descend(repo, root, src, commit)?;
    let mut walk = walk_tree(repo, base, base_path, url)?;
    check_import(&walk, src, commit, limits)?;
    check_skills(&mut walk.skills, limits)?;
    // Only now are the files read.
    let skills = read_files(repo, walk.skills, url)?;
    Ok(Fetched {
        commit: commit.to_string(),
        skills,
    })
}

/// Descend from the commit's tree `root` to `#subdir`, one folder at a time: its tree and its
/// repository path (the root and "" without `#subdir`).
fn descend(
    repo: &gix::Repository,
    root: ObjectId,
    src: &GitSource,
    commit: ObjectId,
) -> Result<(ObjectId, String), GitError> {
    let url = src.url.as_str();
    let mut base = root;
    let mut base_path = String::new();
    let Some(subdir) = &src.subdir else {
        return Ok((base, base_path));
    };
    for part in subdir.split('/') {
        let tree = repo
            .find_tree(base)
            .map_err(|e| read_error(url, "cannot read a tree", &e))?;
        let decoded = tree
            .decode()
            .map_err(|e| read_error(url, "cannot decode a tree", &e))?;
        let entry = decoded
            .entries
            .iter()
            .find(|e| e.filename.as_bytes() == part.as_bytes());
        let not_found = |detail: String| GitError::SubdirNotFound {
            subdir: subdir.clone(),
            url: url.to_string(),
            commit: commit.to_string(),
            detail,
        };
        base_path = join(&base_path, part);
        match entry {
            None => return Err(not_found(format!("`{base_path}` does not exist"))),
            Some(e) if e.mode.kind() == EntryKind::Tree => base = e.oid.to_owned(),
            Some(_) => return Err(not_found(format!("`{base_path}` is not a folder"))),
        }
    }
    Ok((base, base_path))
}

/// A tree entry as the walk reads it: its name (the raw bytes when not UTF-8), kind and id.
type TreeEntry = (Result<String, Vec<u8>>, EntryKind, ObjectId);

/// A folder waiting in the walk.
struct Folder {
    tree: ObjectId,
    /// Its repository path.
    path: String,
    /// The skill it belongs to (an index into [`Walk::skills`]).
    in_skill: Option<usize>,
    /// Its path inside that skill.
    rel: String,
}

impl Folder {
    /// The path inside the folder's skill of its entry `name` ("" outside a skill).
    fn skill_rel(&self, name: &str) -> String {
        if self.in_skill.is_some() {
            join(&self.rel, name)
        } else {
            String::new()
        }
    }
}

/// What the walk of the tree found.
#[derive(Default)]
struct Walk {
    skills: Vec<SkillDraft>,
    /// Files named SKILL.md (in any case) seen, nested ones included.
    candidates: u64,
    /// Bytes of every file seen.
    total_bytes: u64,
    /// Tree entries looked at.
    entries_seen: usize,
}

/// Walk the tree `base` (at repository path `base_path`): find the skills, count SKILL.md
/// files and bytes, note unsafe entries.
fn walk_tree(
    repo: &gix::Repository,
    base: ObjectId,
    base_path: String,
    url: &str,
) -> Result<Walk, GitError> {
    let mut walk = Walk::default();
    let mut stack = vec![Folder {
        tree: base,
        path: base_path,
        in_skill: None,
        rel: String::new(),
    }];
    while let Some(mut folder) = stack.pop() {
        let entries = tree_entries(repo, folder.tree, url)?;
        walk.count_entries(entries.len(), url, &folder.path)?;
        if folder.in_skill.is_none() {
            folder.in_skill = walk.start_skill(&folder.path, &entries);
        }
        for entry in entries {
            walk.visit(repo, url, &folder, entry, &mut stack)?;
        }
    }
    Ok(walk)
}

/// The entries of tree `id`, in the tree's order.
fn tree_entries(
    repo: &gix::Repository,
    id: ObjectId,
    url: &str,
) -> Result<Vec<TreeEntry>, GitError> {
    let tree = repo
        .find_tree(id)
        .map_err(|e| read_error(url, "cannot read a tree", &e))?;
    let decoded = tree
        .decode()
        .map_err(|e| read_error(url, "cannot decode a tree", &e))?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| {
            let name = std::str::from_utf8(e.filename.as_bytes())
                .map(str::to_string)
                .map_err(|_| e.filename.as_bytes().to_vec());
            (name, e.mode.kind(), e.oid.to_owned())
        })
        .collect())
}

/// Whether a tree entry's name is unsafe as a file name (empty, `.`, `..`, a separator or a
/// control character in it).
fn is_odd_name(name: &str) -> bool {
    name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\'])
        || name.chars().any(char::is_control)
}

impl Walk {
    /// Count `n` more entries looked at (in the folder at `path`), against the built-in guard.
    fn count_entries(&mut self, n: usize, url: &str, path: &str) -> Result<(), GitError> {
        self.entries_seen += n;
        if self.entries_seen > MAX_TREE_ENTRIES {
            return Err(GitError::Limit {
                limit: "built-in tree entry limit",
                subject: join(url, path),
                found: self.entries_seen as u64,
                max: MAX_TREE_ENTRIES as u64,
                unit: "files and folders",
                scope: "looked at per import",
                fix: "point #subdir at a smaller folder",
            });
        }
        Ok(())
    }

    /// The skill the folder at `path` starts when its `entries` hold a SKILL.md file (not a
    /// folder of that name): a new draft, by its index.
    fn start_skill(&mut self, path: &str, entries: &[TreeEntry]) -> Option<usize> {
        let marks = entries
            .iter()
            .any(|(n, k, _)| n.as_deref().is_ok_and(is_skill_md) && *k != EntryKind::Tree);
        marks.then(|| {
            self.skills.push(SkillDraft {
                dir: path.to_string(),
                files: Vec::new(),
                unsafe_entries: Vec::new(),
            });
            self.skills.len() - 1
        })
    }

    /// Note an unsafe entry at `path` against the skill `in_skill` (outside a skill, it is
    /// ignored).
    fn refuse(
        &mut self,
        in_skill: Option<usize>,
        path: String,
        what: &'static str,
        fix: &'static str,
    ) {
        if let Some(i) = in_skill {
            self.skills[i].unsafe_entries.push((path, what, fix));
        }
    }

    /// Look at one entry of `folder`: a folder to walk, a file to count (and keep, inside a
    /// skill), or an entry a skill may not hold; `.git` is never entered.
    fn visit(
        &mut self,
        repo: &gix::Repository,
        url: &str,
        folder: &Folder,
        (name, kind, oid): TreeEntry,
        stack: &mut Vec<Folder>,
    ) -> Result<(), GitError> {
        let name = match name {
            Ok(n) => n,
            Err(raw) => {
                let path = join(&folder.path, &String::from_utf8_lossy(&raw));
                self.refuse(
                    folder.in_skill,
                    path,
                    "a file name that is not UTF-8",
                    "rename it",
                );
                return Ok(());
            }
        };
        if name == ".git" {
            return Ok(());
        }
        let full = join(&folder.path, &name);
        if is_odd_name(&name) {
            let fix = "rename it to a plain file name";
            self.refuse(folder.in_skill, full, "an unsafe file name", fix);
            return Ok(());
        }
        match kind {
            EntryKind::Tree => stack.push(Folder {
                tree: oid,
                rel: folder.skill_rel(&name),
                path: full,
                in_skill: folder.in_skill,
            }),
            EntryKind::Blob | EntryKind::BlobExecutable => {
                if name.eq_ignore_ascii_case("skill.md") {
                    self.candidates += 1;
                }
                let size = repo
                    .find_header(oid)
                    .map_err(|e| read_error(url, &format!("cannot read {full}"), &e))?
                    .size();
                self.total_bytes += size;
                if let Some(i) = folder.in_skill {
                    let exec = kind == EntryKind::BlobExecutable;
                    self.skills[i]
                        .files
                        .push((folder.skill_rel(&name), oid, exec, size));
                }
            }
            EntryKind::Link => {
                let fix = "replace the link by the file it points to";
                self.refuse(folder.in_skill, full, "a symbolic link", fix);
            }
            EntryKind::Commit => {
                let fix = "copy the files the skill needs into its folder instead";
                self.refuse(folder.in_skill, full, "a submodule", fix);
            }
        }
        Ok(())
    }
}

/// The import's limits, over what the walk found: bytes of files, SKILL.md files, at least one
/// skill and at most so many.
fn check_import(
    walk: &Walk,
    src: &GitSource,
    commit: ObjectId,
    limits: &GitLimits,
) -> Result<(), GitError> {
    let url = src.url.as_str();
    let scope_subject = match &src.subdir {
        Some(d) => format!("{url} at `{d}`"),
        None => url.to_string(),
    };
    if walk.total_bytes > limits.archive_bytes {
        return Err(GitError::Limit {
            limit: "archive_bytes",
            subject: scope_subject,
            found: walk.total_bytes,
            max: limits.archive_bytes,
            unit: "bytes of files",
            scope: "per import",
            fix: "point #subdir at the folder holding the skills you want",
        });
    }
    if walk.candidates > limits.skill_md_candidates as u64 {
        return Err(GitError::Limit {
            limit: "skill_md_candidates",
            subject: scope_subject,
            found: walk.candidates,
            max: limits.skill_md_candidates as u64,
            unit: "SKILL.md files",
            scope: "per import",
            fix: "point #subdir at the folder holding the skills you want",
        });
    }
    if walk.skills.is_empty() {
        return Err(GitError::NoSkill {
            url: url.to_string(),
            commit: commit.to_string(),
            where_: src
                .subdir
                .as_ref()
                .map(|d| format!(" under `{d}`"))
                .unwrap_or_default(),
        });
    }
    if walk.skills.len() > limits.skills_per_import {
        return Err(GitError::Limit {
            limit: "skills_per_import",
            subject: scope_subject,
            found: walk.skills.len() as u64,
            max: limits.skills_per_import as u64,
            unit: "skills",
            scope: "per import",
            fix: "import fewer at a time, selecting a folder with #subdir",
        });
    }
    Ok(())
}

/// Each skill's own checks, in folder order: no unsafe entry (the first, by path, is named),
/// at most so many files and bytes. Sorts the skills by folder and their files by path.
fn check_skills(skills: &mut [SkillDraft], limits: &GitLimits) -> Result<(), GitError> {
    skills.sort_by(|a, b| a.dir.cmp(&b.dir));
    for skill in skills {
        skill.unsafe_entries.sort();
        if let Some((path, what, fix)) = skill.unsafe_entries.first() {
            return Err(GitError::UnsafeEntry {
                path: path.clone(),
                what,
                fix,
            });
        }
        if skill.files.len() > limits.files_per_skill {
            return Err(GitError::Limit {
                limit: "files_per_skill",
                subject: skill_label(&skill.dir),
                found: skill.files.len() as u64,
                max: limits.files_per_skill as u64,
                unit: "files",
                scope: "per skill",
                fix: "remove files the skill does not need, or split it",
            });
        }
        let bytes: u64 = skill.files.iter().map(|f| f.3).sum();
        if bytes > limits.bytes_per_skill {
            return Err(GitError::Limit {
                limit: "bytes_per_skill",
                subject: skill_label(&skill.dir),
                found: bytes,
                max: limits.bytes_per_skill,
                unit: "bytes",
                scope: "per skill",
                fix: "remove large files the skill does not need, or split it",
            });
        }
        skill.files.sort_by(|a, b| a.0.cmp(&b.0));
    }
    Ok(())
}

/// Read the files of the (checked) skills.
fn read_files(
    repo: &gix::Repository,
    skills: Vec<SkillDraft>,
    url: &str,
) -> Result<Vec<FetchedSkill>, GitError> {
    let mut out = Vec::with_capacity(skills.len());
    for skill in skills {
        let mut files = Vec::with_capacity(skill.files.len());
        for (path, oid, executable, _) in skill.files {
            let bytes = repo
                .find_object(oid)
                .map_err(|e| {
                    let what = format!("cannot read {}", join(&skill.dir, &path));
                    read_error(url, &what, &e)
                })?
                .detach()
                .data;
            files.push(FetchedFile {
                path,
                bytes,
                executable,
            });
        }
        out.push(FetchedSkill {
            dir: skill.dir,
            files,
        });
    }
    Ok(out)
}

/// The plain file at `path` ('/'-separated, from the root) of `commit`'s tree, when there is
/// one; over `max_bytes` it is a [`GitError::Limit`] (its size is read from the object's
/// header, so nothing larger is loaded). A link or a folder at `path` is refused.
pub(super) fn read_file(
    repo: &gix::Repository,
    commit: ObjectId,
    url: &str,
    path: &str,
    max_bytes: u64,
) -> Result<Option<Vec<u8>>, GitError> {
    let mut tree = repo
        .find_commit(commit)
        .map_err(|e| read_error(url, "cannot read the commit", &e))?
        .tree_id()
        .map_err(|e| read_error(url, "cannot read the commit's tree", &e))?
        .detach();
    let parts: Vec<&str> = path.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let Some((_, kind, oid)) = tree_entries(repo, tree, url)?
            .into_iter()
            .find(|(name, _, _)| name.as_deref() == Ok(*part))
        else {
            return Ok(None);
        };
        let last = i + 1 == parts.len();
        match kind {
            EntryKind::Tree if !last => tree = oid,
            EntryKind::Blob | EntryKind::BlobExecutable if last => {
                let header = repo
                    .find_header(oid)
                    .map_err(|e| read_error(url, &format!("cannot read {path}"), &e))?;
                if header.size() > max_bytes {
                    return Err(GitError::Limit {
                        limit: "built-in manifest size limit",
                        subject: join(url, path),
                        found: header.size(),
                        max: max_bytes,
                        unit: "bytes",
                        scope: "per file",
                        fix: "keep the manifest small",
                    });
                }
                let object = repo
                    .find_object(oid)
                    .map_err(|e| read_error(url, &format!("cannot read {path}"), &e))?;
                return Ok(Some(object.detach().data));
            }
            EntryKind::Link => {
                return Err(GitError::Read {
                    url: url.to_string(),
                    detail: format!(
                        "`{}` is a symbolic link, which is never followed; store `{path}` as \
                         plain folders and a plain file",
                        parts[..=i].join("/")
                    ),
                });
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}
