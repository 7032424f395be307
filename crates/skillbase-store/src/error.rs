//! The store's errors, each saying what to do.

use crate::model::Scope;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no skill '{name}' in scope {scope}")]
    NotFound { scope: Scope, name: String },
    #[error("skill '{name}' has no revision {rev} (latest is {latest})")]
    NoSuchRevision { name: String, rev: i64, latest: i64 },
    #[error("no agent '{0}'; create it with `skillbase agent create {0}`")]
    AgentNotFound(String),
    #[error("agent '{0}' already exists; use `skillbase agent set` to change it")]
    AgentExists(String),
    #[error(
        "conflict on skill '{name}': you expected revision {expected}, but revision {actual} by {winner} got there first; re-read it and retry with --expect-rev {actual}"
    )]
    Conflict {
        name: String,
        expected: i64,
        actual: i64,
        winner: String,
    },
    #[error("skill '{name}' is retired; restore it first with `skillbase restore {name}`")]
    Retired { name: String },
    #[error("invalid skill: {0}")]
    InvalidSkill(String),
    #[error("invalid bundle: {0}")]
    Bundle(#[from] skillbase_format::BundleError),
    #[error("invalid input: {0}")]
    Invalid(String),
    #[error(
        "this database was written by a newer Skillbase (schema version {found}; this build knows up to {known}); upgrade skillbase, nothing was changed"
    )]
    SchemaTooNew { found: i64, known: i64 },
    #[error("database schema error: {0}")]
    Migrate(String),
    #[error("cannot open the database at {url}: {message}")]
    Open { url: String, message: String },
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// Whether the database refused a write because another writer holds the same key.
    pub(crate) fn is_unique_violation(&self) -> bool {
        match self {
            StoreError::Db(sqlx::Error::Database(e)) => e.is_unique_violation(),
            _ => false,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
