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
    /// A write whose `version` is not higher than the active revision's, refused by the
    /// store's policy (`[store] versions = "require-increase"`). Nothing changed.
    #[error(
        "skill '{name}': {}, and this store requires each revision to raise it ([store] versions = \"require-increase\" in skillbase.toml); write `version: \"{next}\"` or higher",
        not_higher(version.as_deref(), active)
    )]
    VersionNotIncreased {
        /// The skill's name.
        name: String,
        /// The version the write declares (`None`: none).
        version: Option<String>,
        /// The active revision's version.
        active: String,
        /// The lowest version that would be accepted as a patch release (a suggestion).
        next: String,
    },
    #[error("skill '{name}' is retired; restore it first")]
    /// Writing to a retired skill.
    Retired {
        /// The skill's name.
        name: String,
    },
    /// Approving a revision that is not waiting for approval (committed, or already approved).
    #[error("revision {rev} of '{name}' is not pending approval (it is {state})")]
    NotPending {
        /// The skill's name.
        name: String,
        /// The revision named.
        rev: i64,
        /// Its state (`committed`, say).
        state: String,
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
    /// A signature that does not verify, or a write the trust policy refuses (unsigned where a
    /// signature is required, a signer not trusted for the source, a signer changed): nothing
    /// was written.
    #[error("not trusted: {0}")]
    Untrusted(String),
    /// A write the scan policy refuses (`[scan] <severity> = "refuse"`): the finding that
    /// decided, with its rule, file, line and fix. Nothing was written.
    #[error("{0}")]
    ScanRefused(Box<Refusal>),
    /// An agent configuration the store refuses ([`crate::AgentConfig::checked`]).
    #[error("invalid agent configuration: {0}")]
    InvalidAgent(String),
    #[error("invalid bundle: {0}")]
    /// A bundle over the limits, or with an unsafe path.
    Bundle(#[from] skillbase_format::BundleError),
    /// A write that would pass a configured limit on how many of something there may be
    /// (upstream servers configured through the API). Nothing was written.
    #[error("{0}")]
    LimitReached(String),
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
    /// The database answered with an error that is not a storage fault (a bug, or a schema
    /// another program changed).
    Db(sqlx::Error),
    /// The disk holding the database is full. Nothing of the failed operation was written;
    /// writes work again once space is freed, without a restart.
    #[error("the database's disk is full ({0}); free some space, then retry")]
    DiskFull(String),
    /// The database cannot be reached or failed to read or write (an I/O error, a lock held
    /// too long, a lost connection). Retrying later may succeed.
    #[error("the database is unavailable ({0}); retry later")]
    Unavailable(String),
    /// The store was opened read-only (its file or folder cannot be written); reads work,
    /// writes are refused.
    #[error(
        "the store at {url} is read-only: {why}; reads work, writes are refused until it is writable again"
    )]
    ReadOnly {
        /// The database's location.
        url: String,
        /// Why it could not be opened for writing.
        why: String,
    },
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

/// Why a write's version does not follow the active revision's, in words.
pub(crate) fn not_higher(new: Option<&str>, active: &str) -> String {
    match new {
        Some(v) => format!("version {v} is not higher than {active}, the active revision's"),
        None => format!("this revision declares no version, and the active revision's is {active}"),
    }
}

impl From<sqlx::Error> for StoreError {
    /// Storage faults (a full disk, I/O errors, locks, lost connections) become
    /// [`StoreError::DiskFull`] and [`StoreError::Unavailable`]; the rest stays
    /// [`StoreError::Db`].
    fn from(e: sqlx::Error) -> StoreError {
        match fault_of(&e) {
            Some(Fault::Full) => StoreError::DiskFull(e.to_string()),
            Some(Fault::Unavailable) => StoreError::Unavailable(e.to_string()),
            Some(Fault::ReadOnly) => StoreError::ReadOnly {
                url: "the database".into(),
                why: e.to_string(),
            },
            None => StoreError::Db(e),
        }
    }
}

/// The kind of storage fault an error is, if it is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Full,
    Unavailable,
    ReadOnly,
}

fn fault_of(e: &sqlx::Error) -> Option<Fault> {
    use sqlx::Error as E;
    match e {
        E::Database(db) => {
            let code = db.code()?;
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                sqlite_fault(code.parse().ok()?)
            } else {
                postgres_fault(&code)
            }
        }
        E::Io(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed | E::Tls(_) => {
            Some(Fault::Unavailable)
        }
        _ => None,
    }
}

/// SQLite's primary result codes (the low byte of the extended code) that are storage faults:
/// FULL (13); READONLY (8); IOERR (10), BUSY (5), LOCKED (6), NOMEM (7), CORRUPT (11), CANTOPEN
/// (14), PROTOCOL (15), NOTADB (26).
fn sqlite_fault(extended: i64) -> Option<Fault> {
    match extended & 0xff {
        13 => Some(Fault::Full),
        8 => Some(Fault::ReadOnly),
        5 | 6 | 7 | 10 | 11 | 14 | 15 | 26 => Some(Fault::Unavailable),
        _ => None,
    }
}

/// PostgreSQL's SQLSTATEs that are storage faults: disk full (53100), read-only (25006); the
/// rest of class 53
/// (insufficient resources), class 08 (connection), 57P01-57P05 (shutdown, cannot connect now)
/// and class 58 (I/O and system errors).
fn postgres_fault(sqlstate: &str) -> Option<Fault> {
    match sqlstate {
        "53100" => Some(Fault::Full),
        // A read-only transaction (a hot standby, default_transaction_read_only).
        "25006" => Some(Fault::ReadOnly),
        s if s.starts_with("53") || s.starts_with("08") || s.starts_with("58") => {
            Some(Fault::Unavailable)
        }
        s if s.starts_with("57P") => Some(Fault::Unavailable),
        _ => None,
    }
}

impl StoreError {
    /// Whether this is a storage fault ([`StoreError::DiskFull`], [`StoreError::Unavailable`],
    /// [`StoreError::ReadOnly`]): the request was fine, the storage failed it.
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self,
            StoreError::DiskFull(_) | StoreError::Unavailable(_) | StoreError::ReadOnly { .. }
        )
    }

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

/// A write the policy refused: which skill, and the finding that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The skill's scope.
    pub scope: Scope,
    /// The skill's name.
    pub name: String,
    /// The finding that decided.
    pub finding: skillbase_scan::Finding,
    /// How many findings in all.
    pub findings: usize,
    /// The event recorded for it.
    pub(crate) event: crate::events::ScanEvent,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = &self.finding;
        write!(
            f,
            "skill '{}' refused by the scan ([scan] {} = \"refuse\"): rule {} at {}:{}: {} Fix: {}",
            self.name, x.severity, x.rule, x.file, x.line, x.why, x.fix
        )?;
        if self.findings > 1 {
            write!(
                f,
                " ({} findings in all; `skillbase scan` on the folder lists them)",
                self.findings
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod fault_tests {
    use super::{Fault, postgres_fault, sqlite_fault};

    #[test]
    fn storage_faults_are_told_apart_from_other_errors() {
        // SQLITE_FULL, and extended I/O codes (SQLITE_IOERR_WRITE = 778, _FSYNC = 1034).
        assert_eq!(sqlite_fault(13), Some(Fault::Full));
        assert_eq!(sqlite_fault(8), Some(Fault::ReadOnly));
        for c in [5, 6, 10, 778, 1034, 11, 14, 26, 517] {
            assert_eq!(sqlite_fault(c), Some(Fault::Unavailable), "{c}");
        }
        // Constraint violations (2067: UNIQUE), a plain SQL error, a trigger's abort.
        for c in [2067, 1, 19, 4, 0, -1] {
            assert_eq!(sqlite_fault(c), None, "{c}");
        }
        assert_eq!(postgres_fault("53100"), Some(Fault::Full));
        assert_eq!(postgres_fault("25006"), Some(Fault::ReadOnly));
        for s in [
            "53200", "53300", "08006", "08001", "57P01", "57P03", "58030",
        ] {
            assert_eq!(postgres_fault(s), Some(Fault::Unavailable), "{s}");
        }
        for s in ["23505", "40001", "42P01", "P0001", ""] {
            assert_eq!(postgres_fault(s), None, "{s}");
        }
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
