//! Opening the database: SQLite (embedded default) or PostgreSQL, with migrations at start-up.

use crate::error::{Result, StoreError};
use sqlx::Connection;
use sqlx::SqlSafeStr;
use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Where the database is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbUrl {
    /// A SQLite database file (created if missing).
    Sqlite(PathBuf),
    /// A `postgres://` URL, and optionally a schema to use (created if missing) instead of
    /// `public` — tests use one schema per run.
    Postgres {
        /// The server URL.
        url: String,
        /// The schema to use instead of `public`.
        schema: Option<String>,
    },
}

impl DbUrl {
    /// Parse `sqlite:PATH`, `sqlite://PATH`, `postgres://...`, `postgresql://...`, or a plain path.
    pub fn parse(s: &str) -> Result<DbUrl> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(DbUrl::Postgres {
                url: s.to_owned(),
                schema: None,
            });
        }
        let path = s
            .strip_prefix("sqlite://")
            .or_else(|| s.strip_prefix("sqlite:"))
            .unwrap_or(s);
        let path = path.split('?').next().unwrap_or(path);
        if path.is_empty() {
            return Err(StoreError::Invalid(
                "empty database path: give --db a file path or a postgres:// URL".into(),
            ));
        }
        Ok(DbUrl::Sqlite(PathBuf::from(path)))
    }

    /// The documented default: `$SKILLBASE_HOME/skillbase.db`, where `SKILLBASE_HOME` defaults to
    /// `$XDG_DATA_HOME/skillbase` or `~/.local/share/skillbase`.
    pub fn default_sqlite() -> DbUrl {
        DbUrl::Sqlite(default_home().join("skillbase.db"))
    }

    /// A display form without credentials.
    pub fn redacted(&self) -> String {
        match self {
            DbUrl::Sqlite(p) => format!("sqlite:{}", p.display()),
            DbUrl::Postgres { url, .. } => match PgConnectOptions::from_str(url) {
                Ok(o) => format!(
                    "postgres://{}@{}:{}/{}",
                    o.get_username(),
                    o.get_host(),
                    o.get_port(),
                    o.get_database().unwrap_or("")
                ),
                Err(_) => "postgres://(unparseable URL)".into(),
            },
        }
    }
}

/// Skillbase's data folder.
pub fn default_home() -> PathBuf {
    if let Some(h) = std::env::var_os("SKILLBASE_HOME") {
        return PathBuf::from(h);
    }
    if let Some(x) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(x).join("skillbase");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".local/share/skillbase"),
        None => PathBuf::from(".skillbase"),
    }
}

/// An open pool.
#[derive(Debug, Clone)]
pub enum Db {
    /// A SQLite pool.
    Sqlite(SqlitePool),
    /// A PostgreSQL pool.
    Postgres(PgPool),
}

/// The numbered migrations, in order: (description, SQLite, PostgreSQL).
const MIGRATIONS: &[(&str, &str, &str)] = &[
    (
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        "sessions",
        include_str!("../migrations/sqlite/0002_sessions.sql"),
        include_str!("../migrations/postgres/0002_sessions.sql"),
    ),
    (
        "vault",
        include_str!("../migrations/sqlite/0003_vault.sql"),
        include_str!("../migrations/postgres/0003_vault.sql"),
    ),
    (
        "runs_notes",
        include_str!("../migrations/sqlite/0004_runs_notes.sql"),
        include_str!("../migrations/postgres/0004_runs_notes.sql"),
    ),
    (
        "tokens",
        include_str!("../migrations/sqlite/0005_tokens.sql"),
        include_str!("../migrations/postgres/0005_tokens.sql"),
    ),
    (
        "index_changes",
        include_str!("../migrations/sqlite/0006_index_changes.sql"),
        include_str!("../migrations/postgres/0006_index_changes.sql"),
    ),
    (
        "activation_arguments",
        include_str!("../migrations/sqlite/0007_activation_arguments.sql"),
        include_str!("../migrations/postgres/0007_activation_arguments.sql"),
    ),
    (
        "changes_index",
        include_str!("../migrations/sqlite/0008_changes_index.sql"),
        include_str!("../migrations/postgres/0008_changes_index.sql"),
    ),
    (
        "skill_vectors",
        include_str!("../migrations/sqlite/0009_skill_vectors.sql"),
        include_str!("../migrations/postgres/0009_skill_vectors.sql"),
    ),
    (
        "change_notify",
        include_str!("../migrations/sqlite/0010_change_notify.sql"),
        include_str!("../migrations/postgres/0010_change_notify.sql"),
    ),
    (
        "retention",
        include_str!("../migrations/sqlite/0011_retention.sql"),
        include_str!("../migrations/postgres/0011_retention.sql"),
    ),
    (
        "events_by_agent",
        include_str!("../migrations/sqlite/0012_events_by_agent.sql"),
        include_str!("../migrations/postgres/0012_events_by_agent.sql"),
    ),
    (
        "mcp_servers",
        include_str!("../migrations/sqlite/0013_mcp_servers.sql"),
        include_str!("../migrations/postgres/0013_mcp_servers.sql"),
    ),
    (
        "revision_version",
        include_str!("../migrations/sqlite/0014_revision_version.sql"),
        include_str!("../migrations/postgres/0014_revision_version.sql"),
    ),
    (
        "conversations",
        include_str!("../migrations/sqlite/0015_conversations.sql"),
        include_str!("../migrations/postgres/0015_conversations.sql"),
    ),
    (
        "candidates",
        include_str!("../migrations/sqlite/0016_candidates.sql"),
        include_str!("../migrations/postgres/0016_candidates.sql"),
    ),
    (
        "signatures",
        include_str!("../migrations/sqlite/0017_signatures.sql"),
        include_str!("../migrations/postgres/0017_signatures.sql"),
    ),
    (
        "sessions_per_agent",
        include_str!("../migrations/sqlite/0018_sessions_per_agent.sql"),
        include_str!("../migrations/postgres/0018_sessions_per_agent.sql"),
    ),
    (
        "scans",
        include_str!("../migrations/sqlite/0019_scans.sql"),
        include_str!("../migrations/postgres/0019_scans.sql"),
    ),
    (
        "usage",
        include_str!("../migrations/sqlite/0020_usage.sql"),
        include_str!("../migrations/postgres/0020_usage.sql"),
    ),
];

/// The first `upto` migrations of `backend`.
fn migrator(backend: &str, upto: usize) -> Migrator {
    Migrator::with_migrations(
        MIGRATIONS[..upto.min(MIGRATIONS.len())]
            .iter()
            .enumerate()
            .map(|(i, (desc, sqlite, postgres))| {
                let sql: &'static str = if backend == "sqlite" {
                    sqlite
                } else {
                    postgres
                };
                Migration::new(
                    i as i64 + 1,
                    (*desc).into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

fn migrate_error(e: MigrateError) -> StoreError {
    match e {
        MigrateError::VersionMissing(v) | MigrateError::VersionTooNew(v, _) => {
            StoreError::SchemaTooNew {
                found: v,
                known: SCHEMA_VERSION,
            }
        }
        other => StoreError::Migrate(other.to_string()),
    }
}

impl Db {
    /// Open (creating if needed) and migrate.
    pub async fn open(url: &DbUrl) -> Result<Db> {
        Ok(Db::open_for_store(url).await?.0)
    }

    /// Open and migrate; a SQLite store that exists but cannot be written (a read-only file
    /// system, a file or folder without write permission) is opened read-only instead, if its
    /// schema is this build's, with the reason writes fail.
    pub(crate) async fn open_for_store(url: &DbUrl) -> Result<(Db, Option<String>)> {
        match Db::open_writable(url).await {
            Ok(db) => Ok((db, None)),
            Err(e) => {
                let DbUrl::Sqlite(path) = url else {
                    return Err(e);
                };
                let Some(why) = unwritable(path) else {
                    return Err(e);
                };
                let db = open_sqlite_read_only(url, path, &why).await?;
                Ok((db, Some(why)))
            }
        }
    }

    async fn open_writable(url: &DbUrl) -> Result<Db> {
        Db::open_at_schema(url, MIGRATIONS.len()).await
    }

    /// Open (creating if needed) and migrate only up to schema `version`: a store as an older
    /// Skillbase left it, for the tests of a migration. [`Db::open`] takes it from there.
    #[doc(hidden)]
    pub async fn open_at_schema(url: &DbUrl, version: usize) -> Result<Db> {
        let open_err = |message: String| StoreError::Open {
            url: url.redacted(),
            message,
        };
        match url {
            DbUrl::Sqlite(path) => {
                if let Some(parent) = path.parent()
                    && !parent.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(parent).map_err(|e| open_err(e.to_string()))?;
                }
                let opts = sqlite_options(path);
                let pool = sqlite_pool(opts, Some(path))
                    .await
                    .map_err(|e| open_err(e.to_string()))?;
                migrator("sqlite", version)
                    .run(&pool)
                    .await
                    .map_err(migrate_error)?;
                Ok(Db::Sqlite(pool))
            }
            DbUrl::Postgres { url: u, schema } => {
                let mut opts =
                    PgConnectOptions::from_str(u).map_err(|e| open_err(e.to_string()))?;
                if let Some(schema) = schema {
                    if !schema
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    {
                        return Err(StoreError::Invalid(format!(
                            "invalid schema name '{schema}'"
                        )));
                    }
                    let mut conn = sqlx::PgConnection::connect_with(&opts)
                        .await
                        .map_err(|e| open_err(e.to_string()))?;
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "CREATE SCHEMA IF NOT EXISTS {schema}"
                    )))
                    .execute(&mut conn)
                    .await
                    .map_err(|e| open_err(e.to_string()))?;
                    let _ = conn.close().await;
                    opts = opts.options([("search_path", schema.as_str())]);
                }
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    // A transaction whose COMMIT or ROLLBACK failed is not handed to the next
                    // caller (PostgreSQL's depth is known at once: no round trip).
                    .after_release(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(opts)
                    .await
                    .map_err(|e| open_err(e.to_string()))?;
                migrator("postgres", version)
                    .run(&pool)
                    .await
                    .map_err(migrate_error)?;
                Ok(Db::Postgres(pool))
            }
        }
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Close the pool, waiting for its connections to be released.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }
}

/// The SQLite pool, writable or read-only: eight connections, kept open (no idle timeout, no
/// lifetime: closing the last one would close the `-shm` WAL index with it, and reopening that
/// while the files cannot be written fails every read). Each is checked on release
/// ([`release_sqlite`]) so none goes back to the pool inside a transaction. A writable pool
/// also recovers from files that turn unwritable underneath it ([`Recovery`]).
async fn sqlite_pool(
    opts: SqliteConnectOptions,
    writable: Option<&Path>,
) -> std::result::Result<SqlitePool, sqlx::Error> {
    let mut options = SqlitePoolOptions::new()
        .max_connections(8)
        .idle_timeout(None)
        .max_lifetime(None)
        .after_release(|conn, _| Box::pin(release_sqlite(conn)));
    if let Some(path) = writable {
        let recovery = std::sync::Arc::new(Recovery::new(path));
        let on_connect = recovery.clone();
        options = options
            .after_connect(move |_, _| {
                on_connect.connected();
                Box::pin(async { Ok(()) })
            })
            .before_acquire(move |_, meta| {
                let keep = recovery.keep(meta.age);
                Box::pin(async move { Ok(keep) })
            });
    }
    options.connect_with(opts).await
}

/// How a writable SQLite pool gets its writes back, without a restart, after its files turned
/// unwritable underneath it (a file system remounted read-only after an I/O error; `chattr +i`).
///
/// Connections open before the fault keep their read-write file handles: their writes fail
/// with an I/O error while it lasts (a 503, at once) and work again after. But SQLite opens a
/// *new* connection read-only, silently and for good, when it cannot open the file for
/// writing; left in the pool, such a connection would refuse writes long after the files are
/// writable again. So: a connection opened while the files cannot be written marks the pool
/// degraded; while degraded, taking a connection from the pool looks whether the files are
/// writable again (an `open` of each), and once they are, every connection opened before that
/// moment is closed instead of handed out. The pool opens fresh ones, read-write, so the first
/// write after the fault is already served. Outside a fault this costs two atomic loads.
#[derive(Debug)]
struct Recovery {
    /// The database file and its write-ahead log.
    files: [PathBuf; 2],
    epoch: std::time::Instant,
    /// When (milliseconds since `epoch`, plus one) a connection was opened while the files
    /// could not be written; 0 when none is.
    degraded: AtomicU64,
    /// When (milliseconds since `epoch`) the files were seen writable again after a fault:
    /// connections older than this are closed when next taken.
    recovered: AtomicU64,
}

impl Recovery {
    fn new(path: &Path) -> Recovery {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Recovery {
            files: [path.to_owned(), PathBuf::from(wal)],
            epoch: std::time::Instant::now(),
            degraded: AtomicU64::new(0),
            recovered: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether every file that exists can be opened for writing.
    fn writable(&self) -> bool {
        self.files
            .iter()
            .all(|f| !f.exists() || std::fs::OpenOptions::new().write(true).open(f).is_ok())
    }

    /// A connection was just opened: if the files cannot be written, SQLite opened it read-only.
    fn connected(&self) {
        if !self.writable() {
            self.degraded.store(self.now() + 1, Ordering::Release);
        }
    }

    /// Whether a pooled connection of this age may be handed out.
    fn keep(&self, age: Duration) -> bool {
        let now = self.now();
        if self.degraded.load(Ordering::Acquire) != 0 && self.writable() {
            self.recovered.store(now, Ordering::Release);
            self.degraded.store(0, Ordering::Release);
        }
        let recovered = self.recovered.load(Ordering::Acquire);
        let opened = now.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
        recovered == 0 || opened > recovered
    }
}

async fn release_sqlite(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    if conn.is_in_transaction() {
        // A dropped transaction's ROLLBACK is queued, not yet run: let it run, then look again.
        conn.ping().await?;
    }
    Ok(!conn.is_in_transaction())
}

/// A one-connection pool over a writable SQLite store that reads the database file through a
/// memory map, for the first load of the index only (`Store::open`): it reads a large store
/// about a third faster than `read()` does (BENCHMARKS.md, cold start). The serving pool does
/// not map the file (see [`sqlite_options`]); this one is closed as soon as the index is
/// loaded, so an I/O error could only be a SIGBUS while starting, never under a running
/// server. `None` (the serving pool is used) when it cannot be opened.
pub(crate) async fn mapped_loader(url: &DbUrl) -> Option<SqlitePool> {
    let DbUrl::Sqlite(path) = url else {
        return None;
    };
    let opts = sqlite_options(path)
        .create_if_missing(false)
        .pragma("mmap_size", "268435456");
    SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(opts)
        .await
        .inspect_err(|e| tracing::debug!(error = %e, "no memory-mapped first load"))
        .ok()
}

/// Why an existing SQLite store cannot be written, if it cannot: opening the file for writing
/// fails, or its folder cannot take the files SQLite writes beside it (`-wal`, `-shm`).
/// `None` when the file is missing or everything is writable (the failure was something else).
pub(crate) fn unwritable(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let file = PathBuf::from(file);
        if (suffix.is_empty() || file.exists())
            && let Err(e) = std::fs::OpenOptions::new().write(true).open(&file)
        {
            return Some(format!("cannot write {}: {e}", file.display()));
        }
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty())?;
    let probe = dir.join(format!(".skillbase-write-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) => Some(format!("cannot create files in {}: {e}", dir.display())),
    }
}

/// Open an existing SQLite store read-only: nothing is created or migrated. Without a
/// write-ahead log to read, the file is opened immutable (SQLite then needs no `-shm` file,
/// which a read-only folder cannot hold); with one, read-only through it.
async fn open_sqlite_read_only(url: &DbUrl, path: &Path, why: &str) -> Result<Db> {
    let open_err = |message: String| StoreError::Open {
        url: url.redacted(),
        message: format!("{message} (opening read-only because {why})"),
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let has_wal = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .immutable(!has_wal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(30));
    let pool = sqlite_pool(opts, None)
        .await
        .map_err(|e| open_err(e.to_string()))?;
    let version: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(&pool)
            .await
            .map_err(|e| open_err(format!("cannot read its schema version: {e}")))?;
    let version = version.unwrap_or(0);
    if version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found: version,
            known: SCHEMA_VERSION,
        });
    }
    if version < SCHEMA_VERSION {
        return Err(open_err(format!(
            "its schema (version {version}) needs migrating to version {SCHEMA_VERSION}, which a read-only store cannot be"
        )));
    }
    Ok(Db::Sqlite(pool))
}

/// Every SQLite connection of the store: WAL, `synchronous = FULL` (nothing is acknowledged that
/// is not on disk), foreign keys, a 30 s busy timeout, and `mmap_size = 0` (the serving pool
/// reads with `read()`; only [`mapped_loader`] maps the file, at open).
fn sqlite_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: a commit is on disk before it is reported (WAL with NORMAL may lose the last
        // commits on power loss).
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(30))
        // No memory map of the database file (SQLite's default, said explicitly): it read a
        // large store's index about twice as fast at a cold start, but an I/O error on a mapped
        // page is a SIGBUS that kills the process, where a read() is an error the store answers
        // (issue 35: a disk failing underneath a running server).
        .pragma("mmap_size", "0")
}

#[cfg(test)]
mod tests {
    /// The partial index `sync_changes` polls is on the column the store sets from the kind, on
    /// both backends (no list of kinds in any migration after 0006).
    #[test]
    fn the_changes_index_migration_indexes_the_column() {
        let (_, sqlite, postgres) = super::MIGRATIONS
            .iter()
            .find(|(name, _, _)| *name == "changes_index")
            .expect("the changes_index migration");
        for sql in [sqlite, postgres] {
            assert!(sql.contains("WHERE changes_index"), "{sql}");
            assert!(sql.contains("DROP INDEX events_index_changes"), "{sql}");
        }
    }
}
