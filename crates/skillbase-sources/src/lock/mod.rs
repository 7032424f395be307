//! The lockfile, `skillbase.lock`: the shared scope's imported skills pinned to their sources,
//! references, digests and signers. [`LockFile::from_store`] is what `skillbase lock` writes;
//! [`install`] reproduces it exactly and [`outdated`] compares it with its sources as they are
//! now.

mod error;
mod install;

pub use error::LockError;
pub use install::{Drift, Installed, Verified, install, outdated, verify};

use serde::{Deserialize, Serialize};
use skillbase_store::{Scope, Status, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The lockfile's format version.
pub const LOCK_VERSION: u32 = 1;

/// The lockfile: one entry per skill, sorted by name, no timestamps (so two stores with the
/// same skills write the same file, and a change is a small diff).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// The format version, [`LOCK_VERSION`].
    pub version: u32,
    /// The locked skills, sorted by name.
    #[serde(default, rename = "skill")]
    pub skills: Vec<Locked>,
}

/// One locked skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The skill's name.
    pub name: String,
    /// A folder or zip (absolute path), or `git+URL`.
    pub source: String,
    /// The git commit the skill was read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The skill's folder inside a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its `version`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The content digest of its files.
    pub digest: String,
    /// Who signed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The locked skills whose `requires.skills` name this one, sorted (derived from the
    /// locked revisions: a digest that matches carries the same requirements).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<String>,
}

/// The shared skills a lock leaves out, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unlocked {
    /// Skills that are not active (retired or disabled), with their status.
    pub inactive: Vec<(String, Status)>,
    /// Skills written in the store rather than imported from a source, sorted.
    pub not_imported: Vec<String>,
}

impl LockFile {
    /// Every active shared skill imported from a source (a folder, a zip, a git repository),
    /// with the reference it was read at, its version, digest and signer, and what requires it.
    pub async fn from_store(store: &Store) -> Result<(LockFile, Unlocked), StoreError> {
        let origins: BTreeMap<String, _> =
            store.origins(&Scope::Shared).await?.into_iter().collect();
        let index = store.index();
        let mut skills = Vec::new();
        let mut unlocked = Unlocked::default();
        // What requires each: the shared skills (locked or not) whose `requires.skills` name it.
        let mut required_by: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for e in index.scope(&Scope::Shared) {
            if e.status != Status::Active {
                unlocked.inactive.push((e.name.clone(), e.status));
                continue;
            }
            for r in &e.meta.requires.skills {
                required_by
                    .entry(r.name.as_str())
                    .or_default()
                    .insert(e.name.clone());
            }
            let Some(o) = origins.get(&e.name) else {
                unlocked.not_imported.push(e.name.clone());
                continue;
            };
            skills.push(Locked {
                name: e.name.clone(),
                source: o.source.clone(),
                reference: o.reference.clone(),
                path: o.path.clone(),
                version: e.meta.version.clone(),
                digest: e.digest.to_string(),
                signer: e.signer.clone(),
                required_by: Vec::new(),
            });
        }
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        for l in &mut skills {
            if let Some(by) = required_by.remove(l.name.as_str()) {
                l.required_by = by.into_iter().collect();
            }
        }
        unlocked.not_imported.sort();
        let lock = LockFile {
            version: LOCK_VERSION,
            skills,
        };
        Ok((lock, unlocked))
    }

    /// The file's text, with a first line saying what wrote it.
    pub fn render(&self) -> Result<String, LockError> {
        Ok(format!(
            "# skillbase.lock: written by `skillbase lock`; `skillbase install --locked` reproduces these skills.\n{}",
            toml::to_string(self)?
        ))
    }

    /// Write the file at `path`, whole or not at all (through `.lock.partial`).
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let text = self.render()?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LockError::Io { path, source }
        };
        let tmp = path.with_extension("lock.partial");
        std::fs::write(&tmp, text).map_err(io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io(path))
    }

    /// Read and check the lockfile at `path`, of at most `max_bytes`: its version, each name
    /// and digest, no name twice, a commit for every git source.
    pub fn read(path: &Path, max_bytes: u64) -> Result<LockFile, LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.len() > max_bytes {
            return Err(LockError::TooLarge {
                path: path.to_path_buf(),
                bytes: meta.len(),
                max: max_bytes,
            });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let lock: LockFile = toml::from_str(&text).map_err(|e| LockError::Syntax {
            path: path.to_path_buf(),
            message: e.message().to_owned(),
        })?;
        if lock.version != LOCK_VERSION {
            return Err(LockError::Version {
                path: path.to_path_buf(),
                found: lock.version,
                expected: LOCK_VERSION,
            });
        }
        lock.check_entries().map_err(|problem| LockError::Entry {
            path: path.to_path_buf(),
            problem,
        })?;
        Ok(lock)
    }

    /// What is wrong with the first bad entry, if any.
    fn check_entries(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        for l in &self.skills {
            skillbase_format::SkillName::parse(&l.name)
                .map_err(|e| format!("skill '{}': {e}", l.name))?;
            if !seen.insert(l.name.as_str()) {
                return Err(format!("skill '{}' is locked twice", l.name));
            }
            if l.digest.parse::<skillbase_format::Digest>().is_err() {
                return Err(format!(
                    "skill '{}': '{}' is not a digest",
                    l.name, l.digest
                ));
            }
            if l.source.starts_with("git+") && l.reference.is_none() {
                return Err(format!(
                    "skill '{}' comes from git but names no commit (`reference`)",
                    l.name
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

    fn locked(name: &str, source: &str, reference: Option<&str>) -> Locked {
        Locked {
            name: name.into(),
            source: source.into(),
            reference: reference.map(Into::into),
            path: None,
            version: None,
            digest: DIGEST.into(),
            signer: None,
            required_by: Vec::new(),
        }
    }

    #[test]
    fn written_then_read_is_the_same_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skillbase.lock");
        let lock = LockFile {
            version: LOCK_VERSION,
            skills: vec![
                locked("a", "/srv/skills", None),
                locked("b", "git+file:///srv/repo", Some("3f2a9c1")),
            ],
        };
        lock.write(&path).unwrap();
        assert!(!dir.path().join("skillbase.lock.partial").exists());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# skillbase.lock: written by `skillbase lock`"));
        assert_eq!(LockFile::read(&path, 4096).unwrap(), lock);
    }

    #[test]
    fn read_refuses_what_is_not_a_lock_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skillbase.lock");
        let entry = |body: &str| format!("version = 1\n[[skill]]\n{body}");
        let cases: &[(String, &str)] = &[
            ("version = 2\n".into(), "lockfile version 2 is not one"),
            ("version = 1\nextra = 1\n".into(), "unknown field"),
            (
                entry(&format!(
                    "name = \"Bad\"\nsource = \"/x\"\ndigest = \"{DIGEST}\"\n"
                )),
                "skill 'Bad'",
            ),
            (
                entry("name = \"a\"\nsource = \"/x\"\ndigest = \"sha1:00\"\n"),
                "'sha1:00' is not a digest",
            ),
            (
                entry(&format!(
                    "name = \"a\"\nsource = \"git+file:///r\"\ndigest = \"{DIGEST}\"\n"
                )),
                "comes from git but names no commit",
            ),
            (
                format!(
                    "version = 1\n[[skill]]\nname = \"a\"\nsource = \"/x\"\ndigest = \"{DIGEST}\"\n\
                     [[skill]]\nname = \"a\"\nsource = \"/y\"\ndigest = \"{DIGEST}\"\n"
                ),
                "skill 'a' is locked twice",
            ),
        ];
        for (text, expected) in cases {
            std::fs::write(&path, text).unwrap();
            let e = LockFile::read(&path, 4096).unwrap_err().to_string();
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            assert!(e.contains(expected), "{text:?}: {e}");
        }
        std::fs::write(&path, "version = 1\n").unwrap();
        let e = LockFile::read(&path, 4).unwrap_err().to_string();
        assert!(
            e.contains("12 bytes, over the 4-byte limit for a lockfile"),
            "{e}"
        );
    }
}
