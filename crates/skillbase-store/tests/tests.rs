//! The store suite, one test binary with a module per topic, run against SQLite and against
//! PostgreSQL (when `SKILLBASE_TEST_POSTGRES_URL` is set; otherwise the PostgreSQL copies are
//! reported ignored).

/// Run each `async fn name(db: TestDb)` of a topic module on both backends, as
/// `<topic>::sqlite::name` and `<topic>::postgres::name`.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::common::TestDb::sqlite()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(not(skillbase_pg), ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them")]
                async fn $name() {
                    super::$name(crate::common::TestDb::postgres()).await;
                }
            )*
        }
    };
}

mod common;

mod agents;
mod candidates;
mod events;
mod faults;
mod import;
mod retention;
mod scans;
mod seed;
mod sessions;
mod signatures;
mod skills;
mod sync;
mod upstreams;
mod usage;
mod vectors;
mod versions;
