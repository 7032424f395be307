//! `skillbase lock`, `install --locked` and `outdated`: arguments and printing over
//! `skillbase_sources::lock`, which reads, writes and checks `skillbase.lock`.

use crate::store_cmds::StoreArgs;
use crate::{EXIT_INVALID, EXIT_OK};
use anyhow::Result;
use clap::Args;
use skillbase_sources::lock::{self, Drift, LockFile};
use std::path::PathBuf;

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
    let (lock, unlocked) = LockFile::from_store(&store).await?;
    for (name, status) in &unlocked.inactive {
        eprintln!("not locked: {name} is {status}");
    }
    lock.write(&a.out)?;
    outln!("locked {} skills in {}", lock.skills.len(), a.out.display())?;
    for name in &unlocked.not_imported {
        eprintln!(
            "not locked: {name} was written in the store, not imported (import it from a folder, a zip or git to lock it)"
        );
    }
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn install(s: &StoreArgs, a: InstallArgs) -> Result<u8> {
    let _ = a.locked;
    let reader = s.reader()?;
    let lock = LockFile::read(&a.lockfile, reader.limits().lockfile_bytes)?;
    let store = s.open().await?;
    // Everything is read and checked before anything is written.
    let verified = lock::verify(&reader, &lock, &a.lockfile).await?;
    let done = lock::install(&store, verified).await?;
    outln!(
        "installed {} locked skills: {} created, {} changed, {} unchanged",
        done.locked,
        done.created,
        done.changed,
        done.unchanged
    )?;
    store.close().await;
    Ok(EXIT_OK)
}

pub async fn outdated(s: &StoreArgs, a: OutdatedArgs) -> Result<u8> {
    let reader = s.reader()?;
    let lock = LockFile::read(&a.lockfile, reader.limits().lockfile_bytes)?;
    let drifts = lock::outdated(&reader, &lock).await;
    for (l, drift) in &drifts {
        match drift {
            Drift::Changed {
                reference,
                digest,
                signer,
            } => {
                let at = reference
                    .as_ref()
                    .map(|r| format!(" at {r}"))
                    .unwrap_or_default();
                let mut what = Vec::new();
                if let Some(digest) = digest {
                    what.push(format!("digest {} → {digest}", l.digest));
                }
                if let Some(signer) = signer {
                    what.push(format!(
                        "signer {} → {}",
                        l.signer.as_deref().unwrap_or("unsigned"),
                        signer.as_deref().unwrap_or("unsigned")
                    ));
                }
                outln!("{}: {}{at}: {}", l.name, l.source, what.join(", "))?;
            }
            Drift::Gone => outln!("{}: {} no longer holds it", l.name, l.source)?,
            Drift::Unreadable(e) => outln!("{}: {} cannot be read: {e}", l.name, l.source)?,
        }
    }
    if drifts.is_empty() {
        outln!("{} locked skills, all up to date", lock.skills.len())?;
        Ok(EXIT_OK)
    } else {
        Ok(EXIT_INVALID)
    }
}
