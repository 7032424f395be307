//! `skillbase sync`: an agent's view of the store written into another tool's native skills
//! folder (Claude Code, Codex, gemini-cli, Copilot, Cursor, OpenCode), one `<name>/` folder per
//! skill with every file of its active revision, exactly as stored.
//!
//! - [`plan`]: what a sync would do (writes nothing; `--check`).
//! - [`sync`]: do it. Each skill is written whole into a temporary folder inside the skills
//!   folder and renamed into place ([`folder`]); an interrupted sync is finished by the next.
//! - The manifest ([`manifest::MANIFEST`]) records what sync wrote: only a folder it lists, and
//!   whose content is still what sync wrote, is ever replaced or removed. A folder the person
//!   made is never touched; one they edited after sync wrote it is reported, not overwritten
//!   (unless `force`).
//! - Nothing outside the skills folder is written, removed or followed: a link anywhere on the
//!   way to it, in it, or in a skill is refused.
//! - One sync at a time per folder: a sync holds an exclusive lock on [`folder::LOCK`] in it
//!   from before its first change to its last; a second one fails at once, changing nothing.
//! - [`Watcher`]: sync again whenever the agent's view changes.

pub mod folder;
pub mod manifest;
mod target;
mod watch;

pub use manifest::{MANIFEST, Manifest, Written};
pub use target::{Place, Target};
pub use watch::Watcher;

use folder::Kind;
use skillbase_store::{AgentName, Scope, Status, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Why a sync could not run. Nothing was written when one of these is returned by [`plan`], or
/// by [`sync`] before its first write.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such agent.
    #[error("no agent named '{0}'; `skillbase agent list` shows them")]
    UnknownAgent(String),
    /// The project or home folder does not exist or is not a folder.
    #[error("{}: {problem}", path.display())]
    Root {
        /// The folder named.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A folder on the way to the skills folder (or the skills folder) is a link.
    #[error("{} is a link (to {}); sync writes only into a real folder and never follows a link: replace it with a folder", path.display(), to.display())]
    LinkRefused {
        /// The link.
        path: PathBuf,
        /// Where it points.
        to: PathBuf,
    },
    /// A folder on the way to the skills folder is a file.
    #[error("{} is not a folder", path.display())]
    NotAFolder {
        /// The entry.
        path: PathBuf,
    },
    /// The manifest is not one sync wrote.
    #[error("{}: {problem}; sync did not write it, so nothing was changed: remove it (and any folder it named that you want sync to manage)", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The folder is synced for another target or agent.
    #[error("{} is synced for {other}; pass the same --target and --agent, or sync into another folder", path.display())]
    OtherOwner {
        /// The skills folder.
        path: PathBuf,
        /// Whom its manifest names.
        other: String,
    },
    /// A skill name that cannot be a folder name.
    #[error("skill '{name}' cannot be written as a folder: its name {why}")]
    BadName {
        /// The name.
        name: String,
        /// Why.
        why: &'static str,
    },
    /// Another sync is writing into the same skills folder (it holds [`folder::LOCK`]).
    #[error("{}: another `skillbase sync` is running into this folder; nothing was changed: let it finish (or stop it), then sync again", path.display())]
    Busy {
        /// The skills folder.
        path: PathBuf,
    },
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What to sync, and where.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The tool whose folder is written.
    pub target: Target,
    /// A project's folder or the user's.
    pub place: Place,
    /// Whose view (`None`: every active skill of the shared scope).
    pub agent: Option<AgentName>,
    /// Replace or remove folders sync wrote even when they were edited since.
    pub force: bool,
    /// The store's location as the manifest records it (credentials removed).
    pub store_label: String,
}

/// One skill of the view: what its folder should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The skill's name (its folder's).
    pub name: String,
    /// Where the record lives.
    pub scope: Scope,
    /// The active revision.
    pub rev: i64,
    /// Its content digest.
    pub digest: String,
}

/// Why a folder is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// Sync did not write it (not in the manifest).
    HandMade,
    /// Sync wrote it, and it was edited since.
    Edited,
    /// It is a link (to where it points); never followed.
    Link(PathBuf),
    /// It is a file, not a folder.
    NotAFolder,
    /// It cannot be read as a skill (a link inside, a special file, over the limits).
    Unreadable(String),
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Conflict::HandMade => f.write_str("not written by sync (made by hand); left alone: move it away to let sync write the store's copy"),
            Conflict::Edited => f.write_str("edited since sync wrote it; left alone: put the edits into the store, or pass --force to overwrite them"),
            Conflict::Link(to) => write!(f, "a link (to {}); refused, not followed: remove the link", to.display()),
            Conflict::NotAFolder => f.write_str("a file, not a skill folder; left alone"),
            Conflict::Unreadable(why) => write!(f, "cannot be read safely ({why}); left alone"),
        }
    }
}

/// What a sync does (or did) to one skill folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The folder holds the view's revision.
    InSync(Wanted),
    /// The folder is missing: written.
    Create(Wanted),
    /// The folder holds another revision sync wrote (or, `forced`, an edited one): replaced.
    Update {
        /// What it becomes.
        to: Wanted,
        /// The revision it held, per the manifest.
        from_rev: i64,
        /// Whether it had been edited (replaced only with `force`).
        forced: bool,
    },
    /// The agent no longer has the skill: its folder, as sync wrote it, is removed.
    Remove {
        /// The folder's name.
        name: String,
        /// Whether it had been edited (removed only with `force`).
        forced: bool,
    },
    /// The manifest lists a folder that is gone and not wanted: forgotten.
    Forget(String),
    /// Left alone, and why.
    Conflict {
        /// The folder's name.
        name: String,
        /// Why.
        why: Conflict,
        /// Whether the view has a skill of this name.
        wanted: bool,
    },
}

impl Action {
    /// The skill folder's name.
    pub fn name(&self) -> &str {
        match self {
            Action::InSync(w) | Action::Create(w) | Action::Update { to: w, .. } => &w.name,
            Action::Remove { name, .. } | Action::Forget(name) | Action::Conflict { name, .. } => {
                name
            }
        }
    }

    /// Whether the folder differs from what sync would write (everything but in sync, and a
    /// manifest entry to forget).
    pub fn is_drift(&self) -> bool {
        !matches!(self, Action::InSync(_) | Action::Forget(_))
    }
}

/// What a sync would do: the skills folder, its manifest, and one action per folder.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The skills folder.
    pub folder: PathBuf,
    /// Whether it exists yet.
    pub exists: bool,
    /// Its manifest, as read (a new one when there is none).
    pub manifest: Manifest,
    /// One per skill folder the view, the manifest or the folder names, by name.
    pub actions: Vec<Action>,
    /// Companions the agent may not use (not written), and similar notes.
    pub warnings: Vec<String>,
}

impl Plan {
    /// Whether the folder differs from what sync would write.
    pub fn drifted(&self) -> bool {
        self.actions.iter().any(Action::is_drift)
    }
}

/// What a sync did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The plan it carried out (conflicts included, left alone).
    pub plan: Plan,
    /// Actions that failed, by skill name, with why (each left its folder old or new).
    pub failed: Vec<(String, String)>,
    /// What an interrupted sync had left and was finished.
    pub recovered: Vec<String>,
}

impl Report {
    /// Folders left alone.
    pub fn conflicts(&self) -> usize {
        self.plan
            .actions
            .iter()
            .filter(|a| matches!(a, Action::Conflict { .. }))
            .count()
    }
}

/// The skills `agent` resolves to (its own scope over the shared one, active, in its
/// allowlist: companions it may use included, `disable-model-invocation` skills too, since the
/// target's harness honours that key), or every active shared skill; and a warning per
/// companion the agent may not use.
pub fn wanted(
    store: &Store,
    agent: Option<&AgentName>,
) -> Result<(Vec<Wanted>, Vec<String>), SyncError> {
    let index = store.index();
    let entries: Vec<_> = match agent {
        Some(name) => {
            let agent = store
                .agent_cached(name)
                .ok_or_else(|| SyncError::UnknownAgent(name.to_string()))?;
            skillbase_route::view::visible(&agent, &index)
        }
        None => index
            .scope(&Scope::Shared)
            .filter(|e| e.status == Status::Active)
            .cloned()
            .collect(),
    };
    let names: BTreeSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let mut warnings = Vec::new();
    for e in &entries {
        for c in &e.meta.companions {
            if !names.contains(c.as_str()) {
                warnings.push(format!(
                    "{}: its companion '{c}' is not among the skills this view holds; not written",
                    e.name
                ));
            }
        }
    }
    let mut out: Vec<Wanted> = entries
        .iter()
        .map(|e| Wanted {
            name: e.name.clone(),
            scope: e.scope.clone(),
            rev: e.active_rev,
            digest: e.digest.to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((out, warnings))
}

/// What a sync would do now. Writes nothing (the skills folder is not created).
pub fn plan(store: &Store, opts: &SyncOptions) -> Result<Plan, SyncError> {
    let (want, warnings) = wanted(store, opts.agent.as_ref())?;
    let (root, rel) = opts.place.parts(opts.target);
    let found = folder::skills_folder(root, rel, false)?;
    let (folder, exists) = match found {
        Some(f) => (f, true),
        None => (opts.place.skills_folder(opts.target), false),
    };
    let manifest = match exists {
        true => Manifest::read(&folder)?,
        false => None,
    };
    let agent = opts.agent.as_ref().map(|a| a.to_string());
    if let Some(m) = &manifest
        && (m.target != opts.target.name() || m.agent != agent)
    {
        return Err(SyncError::OtherOwner {
            path: folder,
            other: owner(&m.target, m.agent.as_deref()),
        });
    }
    let manifest = manifest
        .unwrap_or_else(|| Manifest::new(opts.target.name(), agent.as_deref(), &opts.store_label));
    let present: BTreeMap<String, Kind> = match exists {
        true => folder::entries(&folder)?.into_iter().collect(),
        false => BTreeMap::new(),
    };
    let limits = store.limits;
    let mut actions = Vec::new();
    let mut names: BTreeSet<&str> = want.iter().map(|w| w.name.as_str()).collect();
    names.extend(manifest.skills.keys().map(String::as_str));
    for name in names {
        let w = want.iter().find(|w| w.name == name);
        let written = manifest.skills.get(name);
        let on_disk = present
            .get(name)
            .map(|k| state_of(&folder.join(name), k, &limits));
        if let Some(a) = decide(name, w, written, on_disk, opts.force) {
            actions.push(a);
        }
    }
    Ok(Plan {
        folder,
        exists,
        manifest,
        actions,
        warnings,
    })
}

fn owner(target: &str, agent: Option<&str>) -> String {
    match agent {
        Some(a) => format!("target {target}, agent {a}"),
        None => format!("target {target}, the shared scope (no --agent)"),
    }
}

/// A skill folder as found: its digest, or why it is left alone.
fn state_of(
    path: &std::path::Path,
    kind: &Kind,
    limits: &skillbase_format::BundleLimits,
) -> Result<String, Conflict> {
    match kind {
        Kind::Link(to) => Err(Conflict::Link(to.clone())),
        Kind::Other => Err(Conflict::NotAFolder),
        Kind::Folder => folder::folder_digest(path, limits)
            .map(|d| d.to_string())
            .map_err(Conflict::Unreadable),
    }
}

/// The action for one name: what the view wants, what sync wrote, what the folder holds.
fn decide(
    name: &str,
    want: Option<&Wanted>,
    written: Option<&Written>,
    on_disk: Option<Result<String, Conflict>>,
    force: bool,
) -> Option<Action> {
    let conflict = |why| {
        Some(Action::Conflict {
            name: name.to_owned(),
            why,
            wanted: want.is_some(),
        })
    };
    let digest = match on_disk {
        None => {
            return match want {
                Some(w) => Some(Action::Create(w.clone())),
                None => Some(Action::Forget(name.to_owned())),
            };
        }
        Some(Err(why)) => return conflict(why),
        Some(Ok(d)) => d,
    };
    let Some(written) = written else {
        return conflict(Conflict::HandMade);
    };
    if let Some(w) = want.filter(|w| w.digest == digest) {
        return Some(Action::InSync(w.clone()));
    }
    let ours = written.owns(&digest);
    if !ours && !force {
        return conflict(Conflict::Edited);
    }
    match want {
        Some(w) => Some(Action::Update {
            to: w.clone(),
            from_rev: written.rev,
            forced: !ours,
        }),
        None => Some(Action::Remove {
            name: name.to_owned(),
            forced: !ours,
        }),
    }
}

/// Sync the view into the skills folder: create it (each folder on the way checked), take its
/// lock ([`folder::lock`]: a second sync into it fails at once with [`SyncError::Busy`]), finish
/// what an interrupted sync left, then carry out [`plan`]. Each skill is replaced whole or not
/// at all; a skill that fails is reported in [`Report::failed`] and the others go on.
pub async fn sync(store: &Store, opts: &SyncOptions) -> Result<Report, SyncError> {
    // Everything that can refuse the whole sync is checked before the first write.
    plan(store, opts)?;
    let (root, rel) = opts.place.parts(opts.target);
    let Some(dir) = folder::skills_folder(root, rel, true)? else {
        return Err(SyncError::NotAFolder {
            path: opts.place.skills_folder(opts.target),
        });
    };
    // One sync at a time per folder: held to the end, so no rename or manifest write of two
    // syncs interleave (released when `_lock` is dropped, on every path).
    let _lock = folder::lock(&dir)?;
    let recovered = folder::recover(&dir)?;
    let plan = plan(store, opts)?;
    let mut manifest = plan.manifest.clone();
    manifest.store = opts.store_label.clone();
    // First the intent: a folder caught half-way by a crash still reads as sync's next time.
    for a in &plan.actions {
        match a {
            Action::Create(w) => {
                manifest.skills.insert(w.name.clone(), written(w, None));
            }
            Action::Update { to, .. } => {
                if let Some(e) = manifest.skills.get_mut(&to.name) {
                    e.pending = Some(to.digest.clone());
                }
            }
            _ => {}
        }
    }
    let writes = plan
        .actions
        .iter()
        .any(|a| matches!(a, Action::Create(_) | Action::Update { .. }));
    if writes {
        manifest.write(&plan.folder)?;
    }
    let failed = carry_out(store, &plan, &mut manifest).await;
    let missing = std::fs::symlink_metadata(plan.folder.join(MANIFEST)).is_err();
    if writes || missing || manifest != plan.manifest {
        manifest.write(&plan.folder)?;
    }
    Ok(Report {
        plan,
        failed,
        recovered,
    })
}

fn written(w: &Wanted, pending: Option<String>) -> Written {
    Written {
        digest: w.digest.clone(),
        rev: w.rev,
        scope: w.scope.to_string(),
        pending,
    }
}

/// Carry out each action, recording in `manifest` what was done; the failures.
async fn carry_out(store: &Store, plan: &Plan, manifest: &mut Manifest) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    for a in &plan.actions {
        let done = match a {
            Action::Create(w) | Action::Update { to: w, .. } => {
                write_one(store, &plan.folder, w).await.map(|()| {
                    manifest.skills.insert(w.name.clone(), written(w, None));
                })
            }
            Action::Remove { name, .. } => folder::remove_skill(&plan.folder, name).map(|()| {
                manifest.skills.remove(name);
            }),
            Action::Forget(name) => {
                manifest.skills.remove(name);
                Ok(())
            }
            Action::InSync(w) => {
                manifest.skills.insert(w.name.clone(), written(w, None));
                Ok(())
            }
            Action::Conflict { .. } => Ok(()),
        };
        if let Err(e) = done {
            if let Action::Create(w) = a {
                manifest.skills.remove(&w.name);
            }
            failed.push((a.name().to_owned(), e.to_string()));
        }
    }
    failed
}

/// Write one skill's revision, its bytes checked against the digest the view has.
async fn write_one(store: &Store, dir: &std::path::Path, w: &Wanted) -> Result<(), SyncError> {
    let (_, bundle) = store.bundle(&w.scope, &w.name, Some(w.rev)).await?;
    if bundle.digest().to_string() != w.digest {
        return Err(SyncError::Store(StoreError::Corrupt(format!(
            "skill '{}' revision {}: its files do not match its digest; not written",
            w.name, w.rev
        ))));
    }
    folder::write_skill(dir, &w.name, &bundle)
}
