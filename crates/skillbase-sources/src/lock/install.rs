//! The decisions over a lockfile and its sources: what `install --locked` writes (everything
//! checked before anything is written) and what `outdated` reports.

use super::error::LockError;
use super::{LockFile, Locked};
use crate::error::SourceError;
use crate::git::GitSource;
use crate::source::{Reader, Source};
use crate::sourced::Sourced;
use skillbase_store::{Author, Scope, Store, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The skills of folder and zip sources read so far, by source and skill name (each source is
/// read and checked once, however many locked skills come from it).
type FolderReads = BTreeMap<String, BTreeMap<String, Sourced>>;

/// The skills `items` by name (a skill whose SKILL.md names none is left out).
fn named(items: Vec<Sourced>) -> BTreeMap<String, Sourced> {
    items
        .into_iter()
        .filter_map(|item| Some((item.name()?, item)))
        .collect()
}

/// The skill `l` names, read from its source: at its locked reference (`pinned`), or as the
/// source is now.
async fn read_locked(
    reader: &Reader,
    l: &Locked,
    pinned: bool,
    folders: &mut FolderReads,
) -> Result<Option<Sourced>, SourceError> {
    if l.source.starts_with("git+") {
        let mut spec = l.source.clone();
        if pinned && let Some(r) = &l.reference {
            spec = format!("{spec}@{r}");
        }
        if let Some(p) = &l.path {
            spec = format!("{spec}#{p}");
        }
        let source = Source::Git(GitSource::parse(&spec)?);
        return Ok(named(reader.read(&source).await?.skills).remove(&l.name));
    }
    if !folders.contains_key(&l.source) {
        let read = reader.read_path(Path::new(&l.source), &l.source)?;
        folders.insert(l.source.clone(), named(read));
    }
    Ok(folders[&l.source].get(&l.name).cloned())
}

/// The locked skills, each read from its source at its locked reference and found identical
/// (digest and signer): ready to install.
#[derive(Debug)]
pub struct Verified {
    lockfile: PathBuf,
    count: usize,
    by_source: BTreeMap<String, Vec<Sourced>>,
}

/// What an install wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    /// The skills locked.
    pub locked: usize,
    /// Those the store did not have.
    pub created: usize,
    /// Those given a new revision.
    pub changed: usize,
    /// Those the store had as they are.
    pub unchanged: usize,
}

/// Read every skill of `lock` (read from `lockfile`) from its source at its locked reference,
/// and refuse the first whose source no longer holds it, or whose digest or signer differs.
/// Nothing is written.
pub async fn verify(
    reader: &Reader,
    lock: &LockFile,
    lockfile: &Path,
) -> Result<Verified, SourceError> {
    let mut folders = BTreeMap::new();
    let mut by_source: BTreeMap<String, Vec<Sourced>> = BTreeMap::new();
    for l in &lock.skills {
        let Some(item) = read_locked(reader, l, true, &mut folders).await? else {
            return Err(LockError::Gone {
                lockfile: lockfile.to_path_buf(),
                name: l.name.clone(),
                source_name: l.source.clone(),
            }
            .into());
        };
        let digest = item.bundle.digest().to_string();
        if digest != l.digest {
            return Err(LockError::Digest {
                lockfile: lockfile.to_path_buf(),
                name: l.name.clone(),
                source_name: l.source.clone(),
                found: digest,
                locked: l.digest.clone(),
            }
            .into());
        }
        let signer = item.signature.as_ref().map(|s| s.signer().to_owned());
        if signer != l.signer {
            return Err(LockError::Signer {
                lockfile: lockfile.to_path_buf(),
                name: l.name.clone(),
                source_name: l.source.clone(),
                found: signer,
                locked: l.signer.clone(),
            }
            .into());
        }
        by_source.entry(l.source.clone()).or_default().push(item);
    }
    Ok(Verified {
        lockfile: lockfile.to_path_buf(),
        count: lock.skills.len(),
        by_source,
    })
}

/// Import what [`verify`] checked into the shared scope, one import per source (each by
/// `import:<source>`, the trust policy's name for it).
pub async fn install(store: &Store, verified: Verified) -> Result<Installed, StoreError> {
    let mut done = Installed {
        locked: verified.count,
        created: 0,
        changed: 0,
        unchanged: 0,
    };
    let message = format!("installed from {}", verified.lockfile.display());
    for (source, items) in verified.by_source {
        let items = items.into_iter().map(Sourced::into_import).collect();
        let r = store
            .import_from(
                &Scope::Shared,
                items,
                &Author::Import(source),
                &message,
                &|_| {},
            )
            .await?;
        done.created += r.created.len();
        done.changed += r.changed.len();
        done.unchanged += r.unchanged.len();
    }
    Ok(done)
}

/// How a locked skill's source differs from the lockfile now.
#[derive(Debug)]
pub enum Drift {
    /// Its digest or signer changed.
    Changed {
        /// The commit read, for a git source.
        reference: Option<String>,
        /// The digest now, when it differs.
        digest: Option<String>,
        /// The signer now (`None`: unsigned), when it differs.
        signer: Option<Option<String>>,
    },
    /// The source no longer holds it.
    Gone,
    /// The source cannot be read.
    Unreadable(SourceError),
}

/// Each locked skill whose source, as it is now (a git source at its default branch), differs
/// from the lockfile, in the lockfile's order.
pub async fn outdated<'a>(reader: &Reader, lock: &'a LockFile) -> Vec<(&'a Locked, Drift)> {
    let mut folders = BTreeMap::new();
    let mut out = Vec::new();
    for l in &lock.skills {
        let drift = match read_locked(reader, l, false, &mut folders).await {
            Ok(Some(item)) => {
                let digest = item.bundle.digest().to_string();
                let signer = item.signature.as_ref().map(|s| s.signer().to_owned());
                if digest == l.digest && signer == l.signer {
                    continue;
                }
                Drift::Changed {
                    reference: item.origin.reference,
                    digest: (digest != l.digest).then_some(digest),
                    signer: (signer != l.signer).then_some(signer),
                }
            }
            Ok(None) => Drift::Gone,
            Err(e) => Drift::Unreadable(e),
        };
        out.push((l, drift));
    }
    out
}
