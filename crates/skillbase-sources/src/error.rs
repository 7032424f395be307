//! Why a source could not be read, checked or installed. Each message says what to change.

use crate::git::GitError;
use crate::lock::LockError;
use skillbase_format::BundleError;
use skillbase_store::StoreError;
use std::path::PathBuf;

/// Why a source could not be read, checked or installed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A git source could not be parsed, fetched or read.
    #[error(transparent)]
    Git(#[from] GitError),
    /// A folder or zip could not be read, or a skill is not valid for the store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A skill read from git is not a safe bundle.
    #[error("{at}: {source}")]
    Bundle {
        /// The skill: `git+URL#folder`.
        at: String,
        /// What is wrong with it.
        source: BundleError,
    },
    /// A skill read from git is not valid for the store.
    #[error("{at}: {source}")]
    Invalid {
        /// The skill: `git+URL#folder`.
        at: String,
        /// What is wrong with it.
        source: StoreError,
    },
    /// A skill's folder in a git repository is not named after the skill.
    #[error("{at} holds a skill named '{name}'; the folder name must equal the skill name")]
    FolderName {
        /// The skill: `git+URL#folder`.
        at: String,
        /// The name its SKILL.md gives.
        name: String,
    },
    /// `[git]` of skillbase.toml is not valid.
    #[error("{}: [git] {problem}", path.display())]
    Config {
        /// The skillbase.toml.
        path: PathBuf,
        /// What is wrong, with the keys there are.
        problem: String,
    },
    /// A plugin marketplace's manifest, or a folder it names, is not usable.
    #[error("{at}: {problem}")]
    Marketplace {
        /// The manifest (or the source, when it is not a marketplace).
        at: String,
        /// What is wrong, naming the entry at fault, and what to write instead.
        problem: String,
    },
    /// The thread reading a git source stopped before it answered.
    #[error("reading the git source stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
    /// A lockfile could not be read or written, or what it locks differs (boxed: its variants
    /// carry the lockfile's path and the two sides that differ).
    #[error(transparent)]
    Lock(Box<LockError>),
}

impl From<LockError> for SourceError {
    fn from(e: LockError) -> Self {
        SourceError::Lock(Box::new(e))
    }
}
