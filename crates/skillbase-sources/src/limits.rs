//! The one set of limits every source is read under: each skill's files, bytes, depth and path
//! length (the format's [`BundleLimits`](skillbase_format::BundleLimits)), a pack's zip size and skill count (the store's
//! [`PackLimits`]), what a git repository adds ([`GitLimits`], `[git]` in skillbase.toml), and
//! the largest lockfile.

use crate::error::SourceError;
use crate::git::GitLimits;
use skillbase_store::config::Config;
use skillbase_store::pack::PackLimits;
use std::path::Path;

/// What every source is read under. Each skill, whatever its source, is loaded under
/// `pack.skill` (the store's own per-skill limits: [`BundleLimits`](skillbase_format::BundleLimits)'s defaults, as `put` and
/// the seed folders use); git adds its own, stricter per-skill counts before any file is read.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Folders and zips: each skill (`skill`), the largest zip, the most skills in one import.
    pub pack: PackLimits,
    /// A git repository: its size, its skills, and each skill's files and bytes.
    pub git: GitLimits,
    /// Largest lockfile read. 4 MiB.
    pub lockfile_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pack: PackLimits::default(),
            git: GitLimits::default(),
            lockfile_bytes: 4 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The defaults, with `[git]` of the skillbase.toml at `config` when one is given.
    pub fn load(config: Option<&Path>) -> Result<Limits, SourceError> {
        let mut limits = Limits::default();
        if let Some(path) = config {
            let config = Config::load(path)?;
            if let Some(table) = &config.git {
                limits.git =
                    GitLimits::from_table(table).map_err(|problem| SourceError::Config {
                        path: path.to_path_buf(),
                        problem,
                    })?;
            }
        }
        Ok(limits)
    }
}
