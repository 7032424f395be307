//! `skillbase lock`, `install --locked` and `outdated`: the shared scope's imported skills
//! pinned to their sources, references, digests and signers in `skillbase.lock`.

use crate::store_cmds::{Sourced, StoreArgs, read_git};
use crate::{EXIT_INVALID, EXIT_OK};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use serde::{Deserialize, Serialize};
use skillbase_store::pack::{self, PackLimits};
use skillbase_store::{Author, Origin, Scope, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The lockfile's format version.
const LOCK_VERSION: u32 = 1;
/// Largest lockfile read.
const MAX_LOCK_BYTES: u64 = 4 * 1024 * 1024;

/// The lockfile: one entry per skill, sorted by name, no timestamps (so two stores with the
/// same skills write the same file, and a change is a small diff).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    #[serde(default, rename = "skill")]
    skills: Vec<Locked>,
}

/// One locked skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Locked {
    name: String,
    /// A folder or zip (absolute path), or `git+URL`.
    source: String,
    /// The git commit the skill was read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reference: Option<String>,
    /// The skill's folder inside a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signer: Option<String>,
    /// The locked skills whose `requires.skills` name this one, sorted (derived from the
    /// locked revisions: a digest that matches carries the same requirements).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    required_by: Vec<String>,
}

/// Write `skillbase.lock`: every shared skill imported from a source (a folder, a zip, a git
/// repository), with the reference it was read at, its version, digest and signer.
#[derive(Args)]
pub struct LockArgs {
    /// Where to write it.
    #[arg(long, default_value = "skillbase.lock")]
    out: PathBuf,
}

/// Reproduce the locked skills exactly: read each from its source at its locked reference,
/// refuse any digest or signer that differs, then import them (all checked before any is
/// written).
#[derive(Args)]
pub struct InstallArgs {
    /// Install exactly what the lockfile says (required: the only mode there is).
    #[arg(long, required = true)]
    locked: bool,
    /// The lockfile.
    #[arg(default_value = "skillbase.lock")]
    lockfile: PathBuf,
}

/// Compare each locked skill with its source as it is now (a git source at its default
/// branch); exits 1 when any differs.
#[derive(Args)]
pub struct OutdatedArgs {
    /// The lockfile.
    #[arg(default_value = "skillbase.lock")]
    lockfile: PathBuf,
}

pub async fn lock(s: &StoreArgs, a: LockArgs) -> Result<u8> {
    let store = s.open().await?;
    let origins: BTreeMap<String, Origin> =
        store.origins(&Scope::Shared).await?.into_iter().collect();
    let index = store.index();
    let mut skills = Vec::new();
    let mut unlocked = Vec::new();
    for e in index.scope(&Scope::Shared) {
        if e.status != skillbase_store::Status::Active {
            eprintln!("not locked: {} is {}", e.name, e.status);
            continue;
        }
        let Some(o) = origins.get(&e.name) else {
            unlocked.push(e.name.clone());
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
    // What requires each: the shared skills (locked or not) whose `requires.skills` name it.
    let mut required_by: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for e in index.scope(&Scope::Shared) {
        if e.status != skillbase_store::Status::Active {
            continue;
        }
        for r in &e.meta.requires.skills {
            required_by
                .entry(r.name.as_str())
                .or_default()
                .insert(e.name.clone());
        }
    }
    for l in &mut skills {
        if let Some(by) = required_by.remove(l.name.as_str()) {
            l.required_by = by.into_iter().collect();
        }
    }
    unlocked.sort();
    let n = skills.len();
    let text = format!(
        "# skillbase.lock: written by `skillbase lock`; `skillbase install --locked` reproduces these skills.\n{}",
        toml::to_string(&LockFile {
            version: LOCK_VERSION,
            skills
        })?
    );
    let tmp = a.out.with_extension("lock.partial");
    std::fs::write(&tmp, text).with_context(|| tmp.display().to_string())?;
    std::fs::rename(&tmp, &a.out).with_context(|| a.out.display().to_string())?;
    println!("locked {n} skills in {}", a.out.display());
    for name in &unlocked {
        eprintln!(
            "not locked: {name} was written in the store, not imported (import it from a folder, a zip or git to lock it)"
        );
    }
    store.close().await;
    Ok(EXIT_OK)
}

fn read_lock(path: &Path) -> Result<LockFile> {
    let meta = std::fs::metadata(path).with_context(|| path.display().to_string())?;
    if meta.len() > MAX_LOCK_BYTES {
        return Err(anyhow!(
            "{}: {} bytes, over the {MAX_LOCK_BYTES}-byte limit for a lockfile",
            path.display(),
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let lock: LockFile =
        toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), e.message()))?;
    if lock.version != LOCK_VERSION {
        return Err(anyhow!(
            "{}: lockfile version {} is not one this build reads ({LOCK_VERSION}); write it again with `skillbase lock`",
            path.display(),
            lock.version
        ));
    }
    let mut seen = BTreeSet::new();
    for l in &lock.skills {
        skillbase_format::SkillName::parse(&l.name)
            .map_err(|e| anyhow!("{}: skill '{}': {e}", path.display(), l.name))?;
        if !seen.insert(l.name.as_str()) {
            return Err(anyhow!(
                "{}: skill '{}' is locked twice",
                path.display(),
                l.name
            ));
        }
        l.digest.parse::<skillbase_format::Digest>().map_err(|_| {
            anyhow!(
                "{}: skill '{}': '{}' is not a digest",
                path.display(),
                l.name,
                l.digest
            )
        })?;
        if l.source.starts_with("git+") && l.reference.is_none() {
            return Err(anyhow!(
                "{}: skill '{}' comes from git but names no commit (`reference`)",
                path.display(),
                l.name
            ));
        }
    }
    Ok(lock)
}

/// The skills of folder and zip sources read so far, by source and skill name (each source is
/// read and checked once, however many locked skills come from it).
type FolderReads = BTreeMap<String, BTreeMap<String, Sourced>>;

/// The skill `l` names, read from its source: at its locked reference (`pinned`), or as the
/// source is now.
async fn read_locked(
    s: &StoreArgs,
    l: &Locked,
    pinned: bool,
    folders: &mut FolderReads,
) -> Result<Option<Sourced>> {
    let named = |items: Vec<Sourced>| -> BTreeMap<String, Sourced> {
        items
            .into_iter()
            .filter_map(|item| Some((Store::check_bundle(&item.0).ok()?.0, item)))
            .collect()
    };
    if l.source.starts_with("git+") {
        let mut spec = l.source.clone();
        if pinned && let Some(r) = &l.reference {
            spec = format!("{spec}@{r}");
        }
        if let Some(p) = &l.path {
            spec = format!("{spec}#{p}");
        }
        return Ok(named(read_git(s, &spec).await?.0).remove(&l.name));
    }
    if !folders.contains_key(&l.source) {
        let origin = Origin {
            source: l.source.clone(),
            reference: None,
            path: None,
        };
        let read = pack::read_source_signed(Path::new(&l.source), &PackLimits::default())?
            .into_iter()
            .map(|(b, sig)| (b, sig, Some(origin.clone())))
            .collect();
        folders.insert(l.source.clone(), named(read));
    }
    Ok(folders[&l.source].get(&l.name).cloned())
}

pub async fn install(s: &StoreArgs, a: InstallArgs) -> Result<u8> {
    let _ = a.locked;
    let lock = read_lock(&a.lockfile)?;
    let store = s.open().await?;
    // Everything is read and checked before anything is written.
    let mut folders = BTreeMap::new();
    let mut by_source: BTreeMap<String, Vec<Sourced>> = BTreeMap::new();
    for l in &lock.skills {
        let Some((bundle, sig, origin)) = read_locked(s, l, true, &mut folders).await? else {
            return Err(anyhow!(
                "{}: {} is locked from {}, which no longer holds it",
                a.lockfile.display(),
                l.name,
                l.source
            ));
        };
        let digest = bundle.digest().to_string();
        if digest != l.digest {
            return Err(anyhow!(
                "{}: {} from {} has digest {digest}, but the lockfile says {}; nothing was installed (run `skillbase lock` again if the change is expected)",
                a.lockfile.display(),
                l.name,
                l.source,
                l.digest
            ));
        }
        let signer = sig.as_ref().map(|s| s.signer().to_owned());
        if signer != l.signer {
            return Err(anyhow!(
                "{}: {} from {} is signed by {}, but the lockfile says {}; nothing was installed",
                a.lockfile.display(),
                l.name,
                l.source,
                signer.as_deref().unwrap_or("no one (unsigned)"),
                l.signer.as_deref().unwrap_or("unsigned")
            ));
        }
        by_source
            .entry(l.source.clone())
            .or_default()
            .push((bundle, sig, origin));
    }
    let mut created = 0;
    let mut unchanged = 0;
    let mut changed = 0;
    for (source, items) in by_source {
        let r = store
            .import_from(
                &Scope::Shared,
                items,
                &Author::Import(source),
                &format!("installed from {}", a.lockfile.display()),
                &|_| {},
            )
            .await?;
        created += r.created.len();
        changed += r.changed.len();
        unchanged += r.unchanged.len();
    }
    println!(
        "installed {} locked skills: {created} created, {changed} changed, {unchanged} unchanged",
        lock.skills.len()
    );
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn outdated(s: &StoreArgs, a: OutdatedArgs) -> Result<u8> {
    let lock = read_lock(&a.lockfile)?;
    let mut folders = BTreeMap::new();
    let mut behind = 0;
    for l in &lock.skills {
        match read_locked(s, l, false, &mut folders).await {
            Ok(Some((bundle, sig, origin))) => {
                let digest = bundle.digest().to_string();
                let signer = sig.as_ref().map(|s| s.signer().to_owned());
                if digest == l.digest && signer == l.signer {
                    continue;
                }
                behind += 1;
                let at = origin
                    .and_then(|o| o.reference)
                    .map(|r| format!(" at {r}"))
                    .unwrap_or_default();
                let mut what = Vec::new();
                if digest != l.digest {
                    what.push(format!("digest {} → {digest}", l.digest));
                }
                if signer != l.signer {
                    what.push(format!(
                        "signer {} → {}",
                        l.signer.as_deref().unwrap_or("unsigned"),
                        signer.as_deref().unwrap_or("unsigned")
                    ));
                }
                println!("{}: {}{at}: {}", l.name, l.source, what.join(", "));
            }
            Ok(None) => {
                behind += 1;
                println!("{}: {} no longer holds it", l.name, l.source);
            }
            Err(e) => {
                behind += 1;
                println!("{}: {} cannot be read: {e}", l.name, l.source);
            }
        }
    }
    if behind == 0 {
        println!("{} locked skills, all up to date", lock.skills.len());
        Ok(EXIT_OK)
    } else {
        Ok(EXIT_INVALID)
    }
}
