//! Seed folders: skill folders on disk synced into the shared scope as `seed:` revisions.
//!
//! A skill whose active revision came from its seed follows the folder (a change appends a
//! revision). Once someone edits it in the store, the store wins: the folder's later changes
//! are not applied, and the divergence is recorded once per seed content as a `seed_diverged`
//! event, so the doctor can report it. A folder that no longer holds a skill retires the skill
//! that follows it (a `retired` event by `seed:<path>`, whether it went while Skillbase ran or
//! while it was down); restoring it in the store makes it follow the folder again.

use crate::error::{Result, StoreError};
use crate::model::{Author, Scope};
use crate::pack;
use crate::store::{PutRequest, Store};
use notify::{RecursiveMode, Watcher};
use skillbase_format::discover::{Found, discover};
use skillbase_format::skill_dir::find_skill_md;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What happened to one seed folder.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum SeedAction {
    /// A new skill was created from the folder.
    Created {
        /// The skill's name.
        name: String,
        /// Its first revision.
        rev: i64,
    },
    /// The folder changed: a new revision.
    Updated {
        /// The skill's name.
        name: String,
        /// The new revision.
        rev: i64,
    },
    /// The folder matches the active revision.
    Unchanged {
        /// The skill's name.
        name: String,
    },
    /// The store was edited; the folder differs and is not applied.
    Diverged {
        /// The skill's name.
        name: String,
    },
    /// The folder the skill followed holds no skill any more: the skill was retired.
    Removed {
        /// The skill's name.
        name: String,
    },
    /// The folder could not be synced (invalid skill, retired record, ...).
    Skipped {
        /// The folder.
        path: String,
        /// Why it was skipped.
        reason: String,
    },
}

/// Sync every skill folder under `dir`, and retire the skills that follow a folder under `dir`
/// that holds no skill any more.
pub async fn sync_dir(store: &Store, dir: &Path) -> Result<Vec<SeedAction>> {
    let mut out = sync_folders(store, dir).await?;
    out.extend(retire_removed(store, dir).await);
    Ok(out)
}

async fn sync_folders(store: &Store, dir: &Path) -> Result<Vec<SeedAction>> {
    let folders = match discover(dir) {
        Found::Skills(d) => d,
        Found::NoSkills => Vec::new(),
        Found::Missing => {
            return Err(StoreError::Invalid(format!(
                "seed folder {} does not exist",
                dir.display()
            )));
        }
    };
    // Folders of skills the store does not have yet are written together in one transaction
    // (a fresh store seeded with 1,000 skills would otherwise commit 1,000 times); the rest one
    // by one, each on its own.
    let mut out = Vec::with_capacity(folders.len());
    let mut creations: Vec<(usize, String, PutRequest, String)> = Vec::new();
    for f in &folders {
        match prepare(store, f) {
            Prepared::Done(action) => out.push(action),
            Prepared::Create {
                name,
                req,
                seed_path,
            } => {
                creations.push((out.len(), name.clone(), req, seed_path));
                out.push(SeedAction::Unchanged { name });
            }
            Prepared::Write(w) => out.push(w.apply(store).await),
        }
    }
    if creations.len() > 1 {
        let batch: Vec<(PutRequest, String)> = creations
            .iter()
            .map(|(_, _, r, p)| (r.clone(), p.clone()))
            .collect();
        match store.put_seeds(batch).await {
            Ok(outcomes) => {
                for ((i, name, _, _), o) in creations.iter().zip(outcomes) {
                    out[*i] = SeedAction::Created {
                        name: name.clone(),
                        rev: o.rev,
                    };
                }
                return Ok(out);
            }
            Err(e) => tracing::debug!(error = %e, "seeding new skills together failed; one by one"),
        }
    }
    for (i, name, req, seed_path) in creations {
        out[i] = match store.put_seed(req, seed_path).await {
            Ok(o) => SeedAction::Created { name, rev: o.rev },
            Err(e) => SeedAction::Skipped {
                path: folders[i].display().to_string(),
                reason: e.to_string(),
            },
        };
    }
    Ok(out)
}

/// Retire every active (or disabled) skill that follows a folder under `root` in which no
/// SKILL.md is found any more. Nothing is done when `root` itself is missing (an unmounted
/// disk is not a deletion). A skill edited in the store no longer follows its folder and is
/// left alone; a record written meanwhile (a newer revision) is too (its retirement would be a
/// conflict).
pub async fn retire_removed(store: &Store, root: &Path) -> Vec<SeedAction> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let index = store.index();
    let gone: Vec<_> = index
        .scope(&Scope::Shared)
        .filter(|e| e.status != crate::model::Status::Retired)
        .filter_map(|e| {
            let path = Path::new(e.seed_path.as_deref()?);
            (path.starts_with(&root) && path != root && find_skill_md(path).is_none())
                .then(|| (e.name.clone(), e.head_rev, path.display().to_string()))
        })
        .collect();
    let mut out = Vec::with_capacity(gone.len());
    for (name, head, path) in gone {
        let reason = serde_json::json!({
            "seed": "the folder this skill followed holds no skill any more",
            "path": path,
        });
        let action = match store
            .set_status_if(
                &Scope::Shared,
                &name,
                crate::model::StatusChange::Retire,
                &Author::Seed(path.clone()),
                reason,
                Some(head),
            )
            .await
        {
            Ok(_) => SeedAction::Removed { name },
            Err(e) => SeedAction::Skipped {
                path,
                reason: e.to_string(),
            },
        };
        out.push(action);
    }
    out
}

/// Sync one skill folder.
pub async fn sync_folder(store: &Store, folder: &Path) -> SeedAction {
    match prepare(store, folder) {
        Prepared::Done(a) => a,
        Prepared::Create {
            name,
            req,
            seed_path,
        } => match store.put_seed(req, seed_path).await {
            Ok(o) => SeedAction::Created { name, rev: o.rev },
            Err(e) => SeedAction::Skipped {
                path: folder.display().to_string(),
                reason: e.to_string(),
            },
        },
        Prepared::Write(w) => w.apply(store).await,
    }
}

/// What syncing a folder needs, decided from the folder and the index.
enum Prepared {
    Done(SeedAction),
    /// A skill the store does not have.
    Create {
        name: String,
        req: PutRequest,
        seed_path: String,
    },
    Write(Pending),
}

/// A write to an existing record of a folder.
struct Pending {
    folder: PathBuf,
    name: String,
    seed_path: String,
    change: Change,
}

enum Change {
    /// The record follows the folder: a new revision.
    Revision(PutRequest),
    /// The record was edited in the store: record the divergence (the folder's digest).
    Diverged(String),
}

impl Pending {
    async fn apply(self, store: &Store) -> SeedAction {
        let Pending {
            folder,
            name,
            seed_path,
            change,
        } = self;
        let skipped = |reason: String| SeedAction::Skipped {
            path: folder.display().to_string(),
            reason,
        };
        match change {
            Change::Revision(req) => match store.put_seed(req, seed_path).await {
                Ok(o) => SeedAction::Updated { name, rev: o.rev },
                Err(err) => skipped(err.to_string()),
            },
            Change::Diverged(digest) => match store
                .mark_diverged(&Scope::Shared, &name, &seed_path, &digest)
                .await
            {
                Ok(_) => SeedAction::Diverged { name },
                Err(err) => skipped(err.to_string()),
            },
        }
    }
}

fn prepare(store: &Store, folder: &Path) -> Prepared {
    let skipped = |reason: String| SeedAction::Skipped {
        path: folder.display().to_string(),
        reason,
    };
    let seed_path = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf())
        .display()
        .to_string();
    let (bundle, signature) = match pack::read_folder_signed(folder, &store.limits) {
        Ok(b) => b,
        Err(e) => return Prepared::Done(skipped(e.to_string())),
    };
    let name = match Store::check_bundle(&bundle) {
        Ok((n, _)) => n,
        Err(e) => return Prepared::Done(skipped(e.to_string())),
    };
    let index = store.index();
    let existing = index.get(&Scope::Shared, &name).cloned();
    let put = |expect| PutRequest {
        scope: Scope::Shared,
        bundle: bundle.clone(),
        author: Author::Seed(seed_path.clone()),
        message: "synced from seed folder".into(),
        expect_rev: expect,
        signature: signature.clone().map(Box::new),
    };
    match existing {
        None => Prepared::Create {
            name,
            req: put(Some(0)),
            seed_path,
        },
        Some(e) if e.seed_path.as_deref() == Some(seed_path.as_str()) => {
            if e.digest == bundle.digest() {
                return Prepared::Done(SeedAction::Unchanged { name });
            }
            Prepared::Write(Pending {
                folder: folder.to_path_buf(),
                change: Change::Revision(put(Some(e.head_rev))),
                name,
                seed_path,
            })
        }
        Some(e) => {
            if e.digest == bundle.digest() {
                return Prepared::Done(SeedAction::Unchanged { name });
            }
            Prepared::Write(Pending {
                folder: folder.to_path_buf(),
                change: Change::Diverged(bundle.digest().to_string()),
                name,
                seed_path,
            })
        }
    }
}

/// Watches seed folders and syncs changed skill folders, debounced.
pub struct SeedWatcher {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    syncs: Arc<std::sync::atomic::AtomicU64>,
}

impl Drop for SeedWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long a burst of file events is gathered before syncing.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

impl SeedWatcher {
    /// Start watching `roots`. Each report of a sync is passed to `on_sync`.
    pub fn start(
        store: Arc<Store>,
        roots: Vec<PathBuf>,
        on_sync: impl Fn(&SeedAction) + Send + Sync + 'static,
    ) -> Result<SeedWatcher> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res
                && is_change(&ev.kind)
            {
                for p in ev.paths {
                    let _ = tx.send(p);
                }
            }
        })
        .map_err(|e| StoreError::Invalid(format!("cannot watch seed folders: {e}")))?;
        let roots: Vec<PathBuf> = roots
            .into_iter()
            .map(|r| r.canonicalize().unwrap_or(r))
            .collect();
        for r in &roots {
            watcher
                .watch(r, RecursiveMode::Recursive)
                .map_err(|e| StoreError::Invalid(format!("cannot watch {}: {e}", r.display())))?;
        }
        let syncs = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = syncs.clone();
        let task = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut changed = vec![first];
                tokio::time::sleep(DEBOUNCE).await;
                while let Ok(p) = rx.try_recv() {
                    changed.push(p);
                }
                let mut folders: Vec<PathBuf> = Vec::new();
                let mut rescanned: Vec<PathBuf> = Vec::new();
                for p in changed {
                    let found = skill_folder_of(&p, &roots);
                    match found {
                        Some(f) if !folders.contains(&f) => folders.push(f),
                        Some(_) => {}
                        None => {
                            // A new folder, a removed one (or one we cannot place): rescan
                            // its root.
                            let Some(root) = roots.iter().find(|r| p.starts_with(r)) else {
                                continue;
                            };
                            if rescanned.contains(root) {
                                continue;
                            }
                            rescanned.push(root.clone());
                            if let Found::Skills(all) = discover(root) {
                                for f in all {
                                    if !folders.contains(&f) {
                                        folders.push(f);
                                    }
                                }
                            }
                        }
                    }
                }
                for f in folders {
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let action = sync_folder(&store, &f).await;
                    on_sync(&action);
                }
                for root in &rescanned {
                    for action in retire_removed(&store, root).await {
                        on_sync(&action);
                    }
                }
            }
        });
        Ok(SeedWatcher {
            _watcher: watcher,
            task,
            syncs,
        })
    }

    /// How many folder syncs the watcher has run since it started (an idle folder runs none).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether a file event can mean a change. Reading a file is not one: the watcher's own syncs
/// open and read every file of the folders they sync, and an open, read or close-after-reading
/// answered by a rescan was a loop (an idle `serve --seed` with 240 skills spent 11% of a core
/// rescanning them forever). A close after writing is kept (the write's own event may be
/// coalesced away).
fn is_change(kind: &notify::EventKind) -> bool {
    use notify::EventKind as K;
    use notify::event::{AccessKind, AccessMode};
    match kind {
        K::Access(AccessKind::Close(AccessMode::Write)) => true,
        K::Access(_) => false,
        K::Any | K::Create(_) | K::Modify(_) | K::Remove(_) | K::Other => true,
    }
}

/// The nearest folder at or above `path`, inside one of `roots`, that holds a SKILL.md.
fn skill_folder_of(path: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let root = roots.iter().find(|r| path.starts_with(r))?;
    let mut cur = if path.is_dir() {
        Some(path)
    } else {
        path.parent()
    };
    while let Some(dir) = cur {
        if !dir.starts_with(root) || dir == root.as_path() {
            return None;
        }
        if find_skill_md(dir).is_some() {
            return Some(dir.to_path_buf());
        }
        cur = dir.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use notify::EventKind as K;
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RemoveKind};

    #[test]
    fn reading_is_not_a_change() {
        for k in [
            K::Access(AccessKind::Open(AccessMode::Read)),
            K::Access(AccessKind::Open(AccessMode::Any)),
            K::Access(AccessKind::Close(AccessMode::Read)),
            K::Access(AccessKind::Read),
            K::Access(AccessKind::Any),
        ] {
            assert!(!super::is_change(&k), "{k:?}");
        }
        for k in [
            K::Access(AccessKind::Close(AccessMode::Write)),
            K::Create(CreateKind::File),
            K::Modify(ModifyKind::Any),
            K::Remove(RemoveKind::Folder),
            K::Any,
            K::Other,
        ] {
            assert!(super::is_change(&k), "{k:?}");
        }
    }
}
