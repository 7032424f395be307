//! Why a lockfile could not be read or written, or why what it locks cannot be installed.

use std::path::PathBuf;

/// Why a lockfile could not be read or written, or why what it locks cannot be installed. Every
/// message starts with the lockfile's path.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The file could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The lockfile (or its `.lock.partial` while written).
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is larger than a lockfile may be.
    #[error("{}: {bytes} bytes, over the {max}-byte limit for a lockfile", path.display())]
    TooLarge {
        /// The lockfile.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// The file is not a lockfile (TOML, or its keys).
    #[error("{}: {message}", path.display())]
    Syntax {
        /// The lockfile.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The file's format version is not the one this build reads.
    #[error(
        "{}: lockfile version {found} is not one this build reads ({expected}); write it again with `skillbase lock`",
        path.display()
    )]
    Version {
        /// The lockfile.
        path: PathBuf,
        /// The version it gives.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// An entry is not valid: its name, its digest, a name locked twice, a git source without
    /// its commit.
    #[error("{}: {problem}", path.display())]
    Entry {
        /// The lockfile.
        path: PathBuf,
        /// Which skill, and what is wrong.
        problem: String,
    },
    /// The lockfile could not be written as TOML.
    #[error(transparent)]
    Render(#[from] toml::ser::Error),
    /// A locked skill is no longer in its source.
    #[error("{}: {name} is locked from {source_name}, which no longer holds it", lockfile.display())]
    Gone {
        /// The lockfile.
        lockfile: PathBuf,
        /// The skill.
        name: String,
        /// Its source.
        source_name: String,
    },
    /// A locked skill's files differ from the lockfile's digest.
    #[error(
        "{}: {name} from {source_name} has digest {found}, but the lockfile says {locked}; nothing was installed (run `skillbase lock` again if the change is expected)",
        lockfile.display()
    )]
    Digest {
        /// The lockfile.
        lockfile: PathBuf,
        /// The skill.
        name: String,
        /// Its source.
        source_name: String,
        /// The digest of what the source holds.
        found: String,
        /// The digest locked.
        locked: String,
    },
    /// A locked skill's signer differs from the lockfile's.
    #[error(
        "{}: {name} from {source_name} is signed by {}, but the lockfile says {}; nothing was installed",
        lockfile.display(),
        found.as_deref().unwrap_or("no one (unsigned)"),
        locked.as_deref().unwrap_or("unsigned")
    )]
    Signer {
        /// The lockfile.
        lockfile: PathBuf,
        /// The skill.
        name: String,
        /// Its source.
        source_name: String,
        /// Who signed what the source holds.
        found: Option<String>,
        /// The signer locked.
        locked: Option<String>,
    },
}
