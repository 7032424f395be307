//! Opening a fresh store on each backend for tests.
#![allow(dead_code)]

use skillbase_format::Bundle;
use skillbase_store::{AgentName, Author, DbUrl, PutRequest, Scope, Store};
use std::sync::atomic::{AtomicU32, Ordering};

pub struct TestDb {
    pub url: DbUrl,
    _dir: Option<tempfile::TempDir>,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl TestDb {
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        TestDb {
            url: DbUrl::Sqlite(dir.path().join("skillbase.db")),
            _dir: Some(dir),
        }
    }

    /// A private schema on the test PostgreSQL server.
    pub fn postgres() -> TestDb {
        let url = std::env::var("SKILLBASE_TEST_POSTGRES_URL").expect(
            "SKILLBASE_TEST_POSTGRES_URL was set when the tests were built but is not set now",
        );
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let schema = format!(
            "sbtest_{}_{}_{}",
            std::process::id(),
            nanos,
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        TestDb {
            url: DbUrl::Postgres {
                url,
                schema: Some(schema),
            },
            _dir: None,
        }
    }

    pub async fn open(&self) -> Store {
        Store::open(&self.url).await.unwrap()
    }

    /// Drop the PostgreSQL schema (best effort).
    pub async fn cleanup(&self) {
        if let DbUrl::Postgres {
            url,
            schema: Some(schema),
        } = &self.url
        {
            use sqlx::Connection;
            if let Ok(mut c) = sqlx::PgConnection::connect(url).await {
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP SCHEMA IF EXISTS {schema} CASCADE"
                )))
                .execute(&mut c)
                .await;
            }
        }
    }
}

/// A skill bundle with the given name, description and body.
pub fn skill(name: &str, body: &str) -> Bundle {
    skill_with(name, "", body)
}

pub fn skill_with(name: &str, extra_frontmatter: &str, body: &str) -> Bundle {
    Bundle::single(format!(
        "---\nname: {name}\ndescription: Does {name} things. Use when asked about {name}.\n{extra_frontmatter}---\n{body}\n"
    ))
    .unwrap()
}

/// The human author of the suite's writes.
pub fn human() -> Author {
    Author::Human("ana".into())
}

/// A write of `bundle` into `scope` by [`human`], expecting revision `expect`.
pub fn put(scope: Scope, bundle: Bundle, expect: Option<i64>) -> PutRequest {
    PutRequest {
        scope,
        bundle,
        author: human(),
        message: "edit".into(),
        expect_rev: expect,
        signature: None,
    }
}

pub fn agent(n: &str) -> AgentName {
    AgentName::parse(n).unwrap()
}

/// A small tmpfs mounted on a temporary folder for the storage-fault tests, unmounted on drop.
/// `None` (with "skipped <test>: …" on stderr) where mounting is not allowed.
pub struct Tmpfs {
    dir: Option<tempfile::TempDir>,
}

impl Tmpfs {
    pub fn mount(test: &str, size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir: Some(dir) }),
            Ok(o) => {
                eprintln!(
                    "skipped {test}: cannot mount a tmpfs here ({}); run as root where mount is allowed",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped {test}: cannot run mount ({e})");
                None
            }
        }
    }

    pub fn path(&self) -> &std::path::Path {
        self.dir.as_ref().unwrap().path()
    }

    /// Remount read-only (or read-write again).
    pub fn remount(&self, read_only: bool) {
        let opt = if read_only {
            "remount,ro"
        } else {
            "remount,rw"
        };
        let st = std::process::Command::new("mount")
            .args(["-o", opt])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount -o {opt}");
    }

    /// Fill the file system: write `path` until the disk is full.
    pub fn fill(&self, name: &str) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.path().join(name)).unwrap();
        let chunk = vec![0x5au8; 4096];
        while f.write_all(&chunk).and_then(|_| f.flush()).is_ok() {}
        let _ = f.sync_all();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        let ok = std::process::Command::new("umount")
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            // Still in use (a test failed with the store open): detach it lazily.
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(dir.path())
                .status();
        }
        drop(dir);
    }
}

/// One statement straight on the database, outside the store (a DELETE its guards must
/// refuse, or the state an older version left).
pub async fn raw_sql(db: &TestDb, sql: &str) -> Result<u64, String> {
    use sqlx::Connection;
    match &db.url {
        skillbase_store::DbUrl::Sqlite(path) => {
            let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display()))
                .await
                .unwrap();
            sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&mut c)
                .await
                .map(|r| r.rows_affected())
                .map_err(|e| e.to_string())
        }
        skillbase_store::DbUrl::Postgres { url, schema } => {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SET search_path TO {}",
                schema.as_deref().unwrap_or("public")
            )))
            .execute(&mut c)
            .await
            .unwrap();
            sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&mut c)
                .await
                .map(|r| r.rows_affected())
                .map_err(|e| e.to_string())
        }
    }
}
