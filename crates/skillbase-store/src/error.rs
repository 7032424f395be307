//! The store's errors, each saying what to do.

use crate::model::Scope;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no skill '{name}' in scope {scope}")]
    NotFound { scope: Scope, name: String },
    #[error("skill '{name}' has no revision {rev} (latest is {latest})")]
    NoSuchRevision { name: String, rev: i64, latest: i64 },
    #[error("no agent '{0}'; create the agent first")]
    AgentNotFound(String),
    #[error("agent '{0}' already exists; change it instead of creating it")]
    AgentExists(String),
    #[error(
        "conflict on skill '{name}': you expected revision {expected}, but revision {actual} by {winner} got there first; re-read it and retry expecting revision {actual}"
    )]
    Conflict {
        name: String,
        expected: i64,
        actual: i64,
        winner: String,
    },
    #[error("skill '{name}' is retired; restore it first")]
    Retired { name: String },
    /// A status change the transition table refuses ([`crate::StatusChange::apply`]).
    #[error("{}", why.message(name))]
    StatusRefused {
        name: String,
        why: crate::model::StatusRefusal,
    },
    /// A session id that cannot be used by this agent: taken by another agent, or in a namespace
    /// reserved for ids Skillbase derives. One text for every reason, so that the answer says
    /// nothing about other agents' sessions.
    #[error("{}", SESSION_UNAVAILABLE)]
    SessionUnavailable,
    #[error("invalid skill: {0}")]
    InvalidSkill(String),
    /// An agent configuration the store refuses ([`crate::AgentConfig::checked`]).
    #[error("invalid agent configuration: {0}")]
    InvalidAgent(String),
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

/// The text of [`StoreError::SessionUnavailable`].
pub const SESSION_UNAVAILABLE: &str =
    "this session id cannot be used by this agent; choose another, or omit it for a new random one";

/// Prefixes of the session ids Skillbase derives for a caller (`mcp:<agent>:…` for MCP calls,
/// `rest:<agent>` for REST writes); nobody may name such a session outside their own agent's
/// namespace.
pub const DERIVED_SESSION_PREFIXES: [&str; 2] = ["mcp:", "rest:"];

/// Whether `agent` may name the session `id` itself: any id outside the derived namespaces, and
/// within them only its own (`mcp:<agent>:…`, `rest:<agent>`).
pub fn session_id_usable(id: &str, agent: &str) -> bool {
    if id.starts_with("mcp:") {
        return id
            .strip_prefix("mcp:")
            .and_then(|r| r.strip_prefix(agent))
            .is_some_and(|r| r.starts_with(':'));
    }
    if let Some(rest) = id.strip_prefix("rest:") {
        return rest == agent;
    }
    true
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
