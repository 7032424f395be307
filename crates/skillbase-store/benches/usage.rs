//! The usage figures over many events (issue 39): run with
//! `cargo bench -p skillbase-store --bench usage` (a few minutes on 2 cores).
//!
//! Generates `SKILLBASE_BENCH_EVENTS` events (default 10,000,000; 20,000 under
//! `cargo test --benches`) over a year, 1,000 skills and 20 agents, into a SQLite store at the
//! schema before the usage migration, in one INSERT of one transaction with the events' indexes
//! built after it (40% activations, 30%
//! turns listing three skills in full, 20% calls, 10% ended runs); then opens it, which runs
//! the migration's backfill, and times each read (median of `SKILLBASE_BENCH_READS`, default
//! 21):
//!
//! | figure | target |
//! | --- | --- |
//! | one skill over a year (`Store::skill_usage`) | < 100 ms |
//! | one skill, one agent | < 100 ms |
//! | never-used skills over 30 days | < 100 ms |
//! | the library for one agent over 30 days (`Store::library_usage`) | < 100 ms |

use skillbase_format::Bundle;
use skillbase_store::db::Db;
use skillbase_store::usage::today;
use skillbase_store::{Author, DbUrl, PutRequest, SCHEMA_VERSION, Scope, Store};
use std::time::{Duration, Instant};

/// The skills the events name (`GENERATE` draws them, and 20 agents, from the event's number).
const SKILLS: i64 = 1000;

/// One statement: `n` events, spread evenly over the year before `start + 365 days`.
const GENERATE: &str = r#"
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $1 - 1)
INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index)
SELECT $2 + (i * 365 / $1) * 86400000 + (i % 86400000),
    CASE WHEN i % 10 < 4 THEN 'skill_activated' WHEN i % 10 < 7 THEN 'turn'
         WHEN i % 10 < 9 THEN 'tool_called' ELSE 'run_finished' END,
    CASE WHEN i % 10 < 4 OR i % 10 = 9 THEN 'shared' END,
    CASE WHEN i % 10 < 4 OR i % 10 = 9 THEN 'skill-' || ((i * 7919) % 1000) END,
    CASE WHEN i % 10 < 4 OR i % 10 = 9 THEN 1 + (i / 1000003) % 3 END,
    'agent-' || ((i / 10) % 20),
    'session-' || (i / 40),
    NULL,
    CASE WHEN i % 10 < 4 THEN '{"reason":"' || (CASE (i / 7) % 4 WHEN 0 THEN 'eager' WHEN 1 THEN 'trigger:refund' WHEN 2 THEN 'load' ELSE 'companion:x' END) || '","tokens":120,"source":"context"}'
         WHEN i % 10 < 7 THEN '{"tokens":{"total":900},"catalog":{"full":["skill-' || ((i * 31) % 1000) || '","skill-' || ((i * 37) % 1000) || '","skill-' || ((i * 41) % 1000) || '"],"name_only":{"count":0,"by_reason":[]},"omitted":{"count":10,"by_reason":[]}}}'
         WHEN i % 10 < 9 THEN '{"call_id":"c","tool":"web_fetch","arguments":{},"ok":true}'
         ELSE '{"run":' || i || ',"outcome":"' || (CASE WHEN i % 3 = 0 THEN 'failure' ELSE 'success' END) || '","calls":' || (i % 4) || '}' END,
    0
FROM n
"#;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn time<F, Fut, T>(reads: usize, f: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut v = Vec::with_capacity(reads);
    for _ in 0..reads {
        let t = Instant::now();
        std::hint::black_box(f().await);
        v.push(t.elapsed());
    }
    median(v)
}

async fn generate(url: &DbUrl, events: i64) -> Duration {
    let old = Db::open_at_schema(url, (SCHEMA_VERSION - 1) as usize)
        .await
        .expect("open at the schema before usage");
    let Db::Sqlite(pool) = old else {
        unreachable!("the bench is SQLite's")
    };
    let start = (today() - 364) * 86_400_000;
    let t = Instant::now();
    let mut tx = pool.begin().await.unwrap();
    // The events table's indexes are dropped and built again after the insert (a sort each,
    // instead of 10 million random B-tree inserts): the same schema, several times faster.
    let indexes: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    for (name, _) in &indexes {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP INDEX {name}")))
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    sqlx::query(GENERATE)
        .bind(events)
        .bind(start)
        .execute(&mut *tx)
        .await
        .expect("generate the events");
    for (_, sql) in &indexes {
        sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let took = t.elapsed();
    pool.close().await;
    took
}

async fn seed(store: &Store) {
    // The 1,000 skills the events name and 200 no event names.
    for i in 0..SKILLS + 200 {
        let name = format!("skill-{i}");
        let bundle = Bundle::single(format!(
            "---\nname: {name}\ndescription: Does {name} things.\n---\nBody.\n"
        ))
        .unwrap();
        store
            .put(PutRequest {
                scope: Scope::Shared,
                bundle,
                author: Author::Human("bench".into()),
                message: "seed".into(),
                expect_rev: None,
                signature: None,
            })
            .await
            .unwrap();
    }
}

fn main() {
    let test_mode = std::env::args().any(|a| a == "--test");
    let var = |k: &str, d: i64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let events = var(
        "SKILLBASE_BENCH_EVENTS",
        if test_mode { 20_000 } else { 10_000_000 },
    );
    let reads = var("SKILLBASE_BENCH_READS", if test_mode { 3 } else { 21 }) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = DbUrl::Sqlite(dir.path().join("usage.db"));
    rt.block_on(async {
        let generated = generate(&url, events).await;
        println!("generated {events} events in one transaction: {generated:.2?}");
        let t = Instant::now();
        let store = Store::open(&url).await.unwrap();
        println!(
            "opened, the usage migration backfilling them: {:.2?}",
            t.elapsed()
        );
        seed(&store).await;
        let year = today() - 364;
        let month = today() - 29;
        let rows = [
            (
                "one skill over a year",
                time(reads, || store.skill_usage("skill-7", None, year)).await,
            ),
            (
                "one skill, one agent, over a year",
                time(reads, || {
                    store.skill_usage("skill-7", Some("agent-3"), year)
                })
                .await,
            ),
            (
                "never-used skills over 30 days",
                time(reads, || store.never_used_skills(month, None)).await,
            ),
            (
                "the library for one agent over 30 days",
                time(reads, || store.library_usage(Some("agent-3"), month)).await,
            ),
            (
                "the library for every agent over 30 days",
                time(reads, || store.library_usage(None, month)).await,
            ),
        ];
        let u = store.skill_usage("skill-7", None, year).await.unwrap();
        assert!(u.activations.total() > 0 || test_mode, "{u:?}");
        println!("\n| read ({events} events, SQLite) | median | target |");
        println!("| --- | --- | --- |");
        for (what, d) in rows {
            println!("| {what} | {:.1} ms | < 100 ms |", d.as_secs_f64() * 1000.0);
        }
        store.close().await;
    });
}
