//! Other writers: a reopened store and other servers see every write.

use crate::common::*;
use skillbase_store::{Scope, Status};

async fn reopen_and_other_writers(db: TestDb) {
    let a = db.open().await;
    let b = db.open().await;
    a.put(put(Scope::Shared, skill("shared-one", "v1"), None))
        .await
        .unwrap();
    assert!(b.index().get(&Scope::Shared, "shared-one").is_none());
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "shared-one").unwrap().body,
        "v1"
    );
    // The runtime's own events (calls, activations) are not read back: a busy server's
    // ten thousand calls do not make the other process reload its index.
    let calls: Vec<skillbase_store::NewEvent> = (0..10_050)
        .map(|i| skillbase_store::NewEvent {
            kind: if i % 2 == 0 {
                "tool_called"
            } else {
                "skill_activated"
            }
            .into(),
            scope: Some("shared".into()),
            skill: Some("shared-one".into()),
            session: Some("busy".into()),
            ..Default::default()
        })
        .collect();
    a.put(put(Scope::Shared, skill("bystander", "v1"), None))
        .await
        .unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    a.append_events(&calls).await.unwrap();
    a.put(put(Scope::Shared, skill("shared-one", "v2"), None))
        .await
        .unwrap();
    // One record refreshed (a reload would report the whole index, two records).
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "shared-one").unwrap().body,
        "v2"
    );
    // Nothing new: nothing refreshed.
    a.append_events(&calls[..10]).await.unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 0);
    a.close().await;
    b.close().await;
    let c = db.open().await;
    assert_eq!(
        c.index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .active_rev,
        2
    );
    c.close().await;
    db.cleanup().await;
}

/// PostgreSQL hands out event ids before commit: a write that took its id first and commits
/// after a newer one has been seen still reaches the other servers (SQLite has one writer at a
/// time, so ids commit in order there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_pg),
    ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them"
)]
async fn a_write_committed_after_a_newer_one_still_reaches_other_servers_postgres() {
    use sqlx::{Acquire, Connection};
    let db = TestDb::postgres();
    let a = db.open().await;
    let b = db.open().await;
    for name in ["late", "other"] {
        a.put(put(Scope::Shared, skill(name, "v1"), None))
            .await
            .unwrap();
    }
    b.sync_changes().await.unwrap();
    assert_eq!(
        b.index().get(&Scope::Shared, "late").unwrap().status,
        Status::Active
    );
    let skillbase_store::DbUrl::Postgres {
        url,
        schema: Some(schema),
    } = &db.url
    else {
        unreachable!("a PostgreSQL test database")
    };
    let mut c = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path TO {schema}")))
        .execute(&mut c)
        .await
        .unwrap();
    // The slow writer takes its event id now...
    let mut tx = sqlx::Connection::begin(&mut c).await.unwrap();
    let conn = tx.acquire().await.unwrap();
    sqlx::query("UPDATE skills SET status = 'retired' WHERE scope = 'shared' AND name = 'late'")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (at, kind, scope, skill, data) VALUES (0, 'retired', 'shared', 'late', '{}')",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    // ...a newer write commits and is seen...
    a.put(put(Scope::Shared, skill("other", "v2"), None))
        .await
        .unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "late").unwrap().status,
        Status::Active
    );
    // ...and the slow one commits: the next sync still applies it, once.
    tx.commit().await.unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "late").unwrap().status,
        Status::Retired
    );
    assert_eq!(b.sync_changes().await.unwrap(), 0);
    a.close().await;
    b.close().await;
    db.cleanup().await;
}

suite!(reopen_and_other_writers,);
