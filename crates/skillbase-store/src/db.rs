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
        "retention",
        include_str!("../migrations/sqlite/0010_retention.sql"),
        include_str!("../migrations/postgres/0010_retention.sql"),
    ),
];

fn migrator(backend: &str) -> Migrator {
    Migrator::with_migrations(
        MIGRATIONS
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
                let pool = SqlitePoolOptions::new()
                    .max_connections(8)
                    .connect_with(opts)
                    .await
                    .map_err(|e| open_err(e.to_string()))?;
                migrator("sqlite").run(&pool).await.map_err(migrate_error)?;
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
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(opts)
                    .await
                    .map_err(|e| open_err(e.to_string()))?;
                migrator("postgres")
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
        // Read pages through a memory map instead of a read() call each: halves the time to
        // load the index of a large store (benches/store.rs, cold start). Writes are unchanged.
        .pragma("mmap_size", "268435456")
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
