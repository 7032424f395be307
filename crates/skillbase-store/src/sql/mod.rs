//! The SQL of the store, written once and compiled for each backend.
//!
//! Both backends accept `$N` placeholders, so the statements are shared; the differences are the
//! write transaction (`BEGIN IMMEDIATE` takes SQLite's write lock up front) and row locking
//! (`FOR UPDATE` on PostgreSQL).
//!
//! One file per noun. Each holds the noun's decisions first (plain functions, tested once,
//! whatever the backend: conflicts, revive rules, which event a write records...) and then its
//! statements, a `statements!` macro instantiated by [`for_each_backend!`] as `sqlite` and
//! `postgres` modules. The macro bodies hold statements, binds and the plumbing between them;
//! every choice they make is a call to one of the functions above them.

pub(crate) mod agents;
pub(crate) mod events;
pub(crate) mod retention;
pub(crate) mod runs;
pub(crate) mod scans;
pub(crate) mod sessions;
pub(crate) mod skills;
pub(crate) mod sync;
pub(crate) mod tokens;
pub(crate) mod upstreams;
pub(crate) mod usage;
pub(crate) mod vault;
pub(crate) mod vectors;

/// Instantiate a noun's `statements!` macro once per backend, as `mod sqlite` and
/// `mod postgres`. The macro receives the backend's module name (to reach the same backend's
/// statements of another noun: `crate::sql::events::$backend::insert_event`), its database type,
/// how a write transaction begins, and the suffix that locks the rows a write reads.
macro_rules! for_each_backend {
    ($statements:ident) => {
        pub(crate) mod sqlite {
            $statements!(sqlite, sqlx::Sqlite, "BEGIN IMMEDIATE", "");
        }
        pub(crate) mod postgres {
            $statements!(postgres, sqlx::Postgres, "BEGIN", " FOR UPDATE");
        }
    };
}
pub(crate) use for_each_backend;

/// Now, in Unix milliseconds (0 if the clock is before 1970).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
