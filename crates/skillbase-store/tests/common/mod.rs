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
    }
}

pub fn agent(n: &str) -> AgentName {
    AgentName::parse(n).unwrap()
}
