//! The store's errors, each saying what to do.

use crate::model::Scope;

#[derive(Debug, thiserror::Error)]
/// What a store operation can fail with; each message says what to do.
pub enum StoreError {
    #[error("no skill '{name}' in scope {scope}")]
    /// No skill of that name in that scope.
    NotFound {
        /// The scope looked in.
        scope: Scope,
        /// The skill's name.
        name: String,
    },
    #[error("skill '{name}' has no revision {rev} (latest is {latest})")]
    /// The skill has no such revision.
    NoSuchRevision {
        /// The skill's name.
        name: String,
        /// The revision asked for.
        rev: i64,
        /// Its latest revision.
        latest: i64,
    },
    #[error("no agent '{0}'; create the agent first")]
    /// No agent of that name.
    AgentNotFound(String),
    #[error("agent '{0}' already exists; change it instead of creating it")]
    /// Creating an agent that exists.
    AgentExists(String),
    #[error(
        "conflict on skill '{name}': you expected revision {expected}, but revision {actual}{} got there first; re-read it and retry expecting revision {actual}",
        by_winner(winner)
    )]
    /// A stale write: the latest revision is not the one the write expected. Nothing changed.
    Conflict {
        /// The skill's name.
        name: String,
        /// The revision the write expected to be the latest.
        expected: i64,
        /// The latest revision.
        actual: i64,
        /// Who wrote the latest revision (empty when it was not read: a bulk import).
        winner: String,
    },
    #[error("skill '{name}' is retired; restore it first")]
    /// Writing to a retired skill.
    Retired {
        /// The skill's name.
        name: String,
    },
    /// A status change the transition table refuses ([`crate::StatusChange::apply`]).
    #[error("{}", why.message(name))]
    StatusRefused {
        /// The skill's name.
        name: String,
        /// Why the table refuses it.
        why: crate::model::StatusRefusal,
    },
    /// A session id that cannot be used by this agent: taken by another agent, or in a namespace
    /// reserved for ids Skillbase derives. One text for every reason, so that the answer says
    /// nothing about other agents' sessions.
    #[error("{}", SESSION_UNAVAILABLE)]
    SessionUnavailable,
    #[error("invalid skill: {0}")]
    /// A bundle that is not a valid skill (or that the content guard refuses).
    InvalidSkill(String),
    /// An agent configuration the store refuses ([`crate::AgentConfig::checked`]).
    #[error("invalid agent configuration: {0}")]
    InvalidAgent(String),
    #[error("invalid bundle: {0}")]
    /// A bundle over the limits, or with an unsafe path.
    Bundle(#[from] skillbase_format::BundleError),
    #[error("invalid input: {0}")]
    /// An input the store refuses (message, session id, label...).
    Invalid(String),
    #[error(
        "this database was written by a newer Skillbase (schema version {found}; this build knows up to {known}); upgrade skillbase, nothing was changed"
    )]
    /// The database was migrated by a newer build; nothing was written.
    SchemaTooNew {
        /// The database's schema version.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    #[error("database schema error: {0}")]
    /// A migration failed.
    Migrate(String),
    #[error("cannot open the database at {url}: {message}")]
    /// The database could not be opened.
    Open {
        /// The database's location (no password).
        url: String,
        /// Why it could not be opened.
        message: String,
    },
    #[error("database error: {0}")]
    /// The database answered with an error.
    Db(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    /// Stored data that cannot be read back.
    Corrupt(String),
    #[error("I/O error on {path}: {source}")]
    /// A file could not be read or written.
    Io {
        /// The file.
        path: String,
        /// The error.
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

/// The store's result.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// " by <author>" for a conflict whose winner was read, nothing when it was not (a bulk import
/// does not read it), so the message never says "by  got there first".
fn by_winner(winner: &str) -> String {
    if winner.is_empty() {
        String::new()
    } else {
        format!(" by {winner}")
    }
}

#[cfg(test)]
mod conflict_message_tests {
    use super::StoreError;

    #[test]
    fn a_conflict_names_its_winner_only_when_known() {
        let e = |winner: &str| {
            StoreError::Conflict {
                name: "x".into(),
                expected: 1,
                actual: 2,
                winner: winner.into(),
            }
            .to_string()
        };
        assert!(e("human:bo").contains("revision 2 by human:bo got there first"));
        assert!(e("").contains("revision 2 got there first"), "{}", e(""));
    }
}
