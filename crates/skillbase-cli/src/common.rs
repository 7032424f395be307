//! What every command shares: where the store is and how it is opened ([`StoreArgs`]), paths
//! from the command line ([`MissingPath`], [`read_input`]), and how a seed sync is reported.

use anyhow::{Result, anyhow};
use clap::Args;
use skillbase_sources::{Limits, Reader};
use skillbase_store::config::Config;
use skillbase_store::seed::{self, SeedAction};
use skillbase_store::{AgentName, DbUrl, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the store is, shared by every store command.
#[derive(Args, Clone, Debug)]
pub struct StoreArgs {
    /// Database: a SQLite file path (or sqlite:PATH) or a postgres:// URL. Default:
    /// $SKILLBASE_HOME/skillbase.db (SKILLBASE_HOME defaults to ~/.local/share/skillbase).
    #[arg(long, env = "SKILLBASE_DB", global = true)]
    pub db: Option<String>,
    /// Folder of skill folders synced into the shared scope before the command runs (repeatable).
    #[arg(long, value_name = "DIR", global = true)]
    pub seed: Vec<PathBuf>,
    /// skillbase.toml with agents to apply before the command runs.
    #[arg(long, value_name = "FILE", env = "SKILLBASE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Accept a signer other than the one pinned for a source (imports, seeds, installs), and
    /// pin the new one (recorded as a `signer_pinned` event).
    #[arg(long, global = true)]
    pub accept_new_signer: bool,
}

impl StoreArgs {
    pub fn url(&self) -> Result<DbUrl> {
        match &self.db {
            Some(u) => Ok(DbUrl::parse(u)?),
            None => Ok(DbUrl::default_sqlite()),
        }
    }

    /// Open the store, apply the config file and sync the seed folders. When the vault has
    /// entries, it is opened too, so no write can carry a vault value into a skill.
    pub async fn open(&self) -> Result<Arc<Store>> {
        let url = self.url()?;
        // A missing --config file or --seed folder is a usage error (exit 2), found before the
        // database is created.
        for p in self.config.iter().chain(&self.seed) {
            if !p.exists() {
                return Err(MissingPath(p.clone()).into());
            }
        }
        let store = Arc::new(Store::open(&url).await?);
        store.set_accept_new_signer(self.accept_new_signer);
        if !store.vault_all().await?.is_empty() {
            let key = skillbase_runtime::VaultKey::load(&skillbase_store::default_home())?;
            skillbase_runtime::Vault::open(store.clone(), key).await?;
        }
        if let Some(path) = &self.config {
            Config::load(path)?.apply(&store).await?;
        }
        for dir in &self.seed {
            for action in seed::sync_dir(&store, dir).await? {
                report_seed(&action);
            }
        }
        Ok(store)
    }
}

impl StoreArgs {
    /// The reader of import sources: the limits of `--config` (`[git]`), remote git
    /// repositories cached under `$SKILLBASE_HOME/git`, GitHub shorthand fetched from
    /// `$SKILLBASE_GIT_BASE` (default https://github.com/).
    pub fn reader(&self) -> Result<Reader> {
        let limits = Limits::load(self.config.as_deref())?;
        let reader = Reader::new(limits, skillbase_store::default_home().join("git"));
        Ok(match std::env::var("SKILLBASE_GIT_BASE") {
            Ok(base) if !base.is_empty() => reader.with_git_base(&base)?,
            _ => reader,
        })
    }

    /// [`StoreArgs::open`] for a command about one agent: when there is no such agent the
    /// command fails with `missing()`, and what this call created (the SQLite file, its `-wal`
    /// and `-shm`, the vault key, the folders) is removed again, so a mistyped name on a fresh
    /// machine leaves no empty store behind.
    pub async fn open_for_agent(
        &self,
        agent: &AgentName,
        missing: impl FnOnce() -> anyhow::Error,
    ) -> Result<Arc<Store>> {
        let fresh = self.fresh_paths()?;
        let store = match self.open().await {
            Ok(store) => store,
            Err(e) => {
                remove_created(&fresh);
                return Err(e);
            }
        };
        if store.agent_cached(agent).is_some() {
            return Ok(store);
        }
        store.close().await;
        drop(store);
        remove_created(&fresh);
        Err(missing())
    }

    /// The paths a first open of this store would create that do not exist now, files before
    /// the folders holding them (nothing for PostgreSQL).
    fn fresh_paths(&self) -> Result<Vec<PathBuf>> {
        let DbUrl::Sqlite(db) = self.url()? else {
            return Ok(Vec::new());
        };
        let home = skillbase_store::default_home();
        let with = |suffix: &str| {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        let mut paths = vec![
            db.clone(),
            with("-wal"),
            with("-shm"),
            home.join("vault.key"),
        ];
        paths.extend(
            db.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_owned),
        );
        paths.push(home);
        Ok(paths.into_iter().filter(|p| !p.exists()).collect())
    }
}

/// Remove what [`StoreArgs::fresh_paths`] listed and a failed command created: files, then
/// folders only when empty.
fn remove_created(paths: &[PathBuf]) {
    for p in paths {
        if p.is_dir() {
            let _ = std::fs::remove_dir(p);
        } else if p.exists() {
            let _ = std::fs::remove_file(p);
        }
    }
}

pub fn report_seed(action: &SeedAction) {
    match action {
        SeedAction::Created { name, rev } => eprintln!("seed: {name} created (revision {rev})"),
        SeedAction::Updated { name, rev } => eprintln!("seed: {name} updated (revision {rev})"),
        SeedAction::Unchanged { .. } => {}
        SeedAction::Diverged { name } => eprintln!(
            "seed: {name} was edited in the store; its seed folder changed too and is not applied (the store wins)"
        ),
        SeedAction::Removed { name } => {
            eprintln!(
                "seed: {name} retired (its folder holds no skill any more; restore brings it back)"
            )
        }
        SeedAction::Skipped { path, reason } => eprintln!("seed: skipped {path}: {reason}"),
    }
}

/// A path given on the command line that does not exist (exit 2, like `put` and `import`).
#[derive(Debug)]
pub struct MissingPath(pub PathBuf);

impl std::fmt::Display for MissingPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Path '{}' does not exist.", self.0.display())
    }
}

impl std::error::Error for MissingPath {}

/// A file of at most 256 MiB, as text.
pub fn read_input(path: &std::path::Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if meta.len() > 256 * 1024 * 1024 {
        return Err(anyhow!("{}: larger than 256 MiB; split it", path.display()));
    }
    std::fs::read_to_string(path).map_err(|e| anyhow!("{}: {e}", path.display()))
}
