//! Seed folders: skill folders on disk synced into the shared scope as `seed:` revisions.
//!
//! A skill whose active revision came from its seed follows the folder (a change appends a
//! revision). Once someone edits it in the store, the store wins: the folder's later changes
//! are not applied, and the divergence is recorded once per seed content as a `seed_diverged`
//! event, so the doctor can report it.

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
    Created {
        name: String,
        rev: i64,
    },
    Updated {
        name: String,
        rev: i64,
    },
    Unchanged {
        name: String,
    },
    /// The store was edited; the folder differs and is not applied.
    Diverged {
        name: String,
    },
    /// The folder could not be synced (invalid skill, retired record, ...).
    Skipped {
        path: String,
        reason: String,
    },
}

/// Sync every skill folder under `dir`.
pub async fn sync_dir(store: &Store, dir: &Path) -> Result<Vec<SeedAction>> {
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
    let mut out = Vec::with_capacity(folders.len());
    for f in folders {
        out.push(sync_folder(store, &f).await);
    }
    Ok(out)
}

/// Sync one skill folder.
pub async fn sync_folder(store: &Store, folder: &Path) -> SeedAction {
    let skipped = |reason: String| SeedAction::Skipped {
        path: folder.display().to_string(),
        reason,
    };
    let seed_path = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf())
        .display()
        .to_string();
    let bundle = match pack::read_folder(folder, &store.limits) {
        Ok(b) => b,
        Err(e) => return skipped(e.to_string()),
    };
    let name = match Store::check_bundle(&bundle) {
        Ok((n, _)) => n,
        Err(e) => return skipped(e.to_string()),
    };
    let index = store.index();
    let existing = index.get(&Scope::Shared, &name).cloned();
    let put = |expect| PutRequest {
        scope: Scope::Shared,
        bundle: bundle.clone(),
        author: Author::Seed(seed_path.clone()),
        message: "synced from seed folder".into(),
        expect_rev: expect,
    };
    match existing {
        None => match store.put_seed(put(Some(0)), seed_path.clone()).await {
            Ok(o) => SeedAction::Created { name, rev: o.rev },
            Err(e) => skipped(e.to_string()),
        },
        Some(e) if e.seed_path.as_deref() == Some(seed_path.as_str()) => {
            if e.digest == bundle.digest() {
                return SeedAction::Unchanged { name };
            }
            match store
                .put_seed(put(Some(e.head_rev)), seed_path.clone())
                .await
            {
                Ok(o) => SeedAction::Updated { name, rev: o.rev },
                Err(err) => skipped(err.to_string()),
            }
        }
        Some(e) => {
            if e.digest == bundle.digest() {
                return SeedAction::Unchanged { name };
            }
            match store
                .mark_diverged(
                    &Scope::Shared,
                    &name,
                    &seed_path,
                    &bundle.digest().to_string(),
                )
                .await
            {
                Ok(_) => SeedAction::Diverged { name },
                Err(err) => skipped(err.to_string()),
            }
        }
    }
}

/// Watches seed folders and syncs changed skill folders, debounced.
pub struct SeedWatcher {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
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
            if let Ok(ev) = res {
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
        let task = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut changed = vec![first];
                tokio::time::sleep(DEBOUNCE).await;
                while let Ok(p) = rx.try_recv() {
                    changed.push(p);
                }
                let mut folders: Vec<PathBuf> = Vec::new();
                for p in changed {
                    let found = skill_folder_of(&p, &roots);
                    match found {
                        Some(f) if !folders.contains(&f) => folders.push(f),
                        Some(_) => {}
                        None => {
                            // A new folder (or one we cannot place): rescan its root.
                            if let Some(root) = roots.iter().find(|r| p.starts_with(r))
                                && let Found::Skills(all) = discover(root)
                            {
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
                    let action = sync_folder(&store, &f).await;
                    on_sync(&action);
                }
            }
        });
        Ok(SeedWatcher {
            _watcher: watcher,
            task,
        })
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
