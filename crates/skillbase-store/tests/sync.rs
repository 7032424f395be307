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
    use sqlx::Acquire;
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
    let mut c = raw_connection(&db).await;
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

/// A plain connection to a PostgreSQL test database's schema, outside any store (a writer the
/// store does not know about).
async fn raw_connection(db: &TestDb) -> sqlx::PgConnection {
    use sqlx::Connection;
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
    c
}

suite!(reopen_and_other_writers,);

/// PostgreSQL announces committed writes: another store's listener hears an index change and a
/// token change, nothing for a transaction that rolls back or for a store in another schema,
/// and nothing for the runtime's own events. SQLite has no listener (its processes poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_pg),
    ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them"
)]
async fn committed_writes_are_announced_to_other_stores_postgres() {
    use skillbase_store::Change;
    use std::time::Duration;
    let db = TestDb::postgres();
    let elsewhere = TestDb::postgres();
    let a = db.open().await;
    let b = db.open().await;
    let other = elsewhere.open().await;
    let mut heard = b.change_listener().await.unwrap().expect("a listener");
    let quiet = async |l: &mut skillbase_store::ChangeListener| {
        tokio::time::timeout(Duration::from_millis(500), l.recv())
            .await
            .is_err()
    };
    let next = async |l: &mut skillbase_store::ChangeListener| {
        tokio::time::timeout(Duration::from_secs(10), l.recv())
            .await
            .expect("an announcement within 10 s")
            .unwrap()
    };
    // Another schema's writes and the runtime's own events say nothing to this store.
    other
        .put(put(Scope::Shared, skill("elsewhere", "v1"), None))
        .await
        .unwrap();
    a.append_events(&[skillbase_store::NewEvent {
        kind: "tool_called".into(),
        session: Some("s".into()),
        ..Default::default()
    }])
    .await
    .unwrap();
    assert!(
        quiet(&mut heard).await,
        "announced what is not this store's"
    );
    // A write: announced once it has committed, and what it wrote is there to read.
    a.put(put(Scope::Shared, skill("fresh", "v1"), None))
        .await
        .unwrap();
    assert_eq!(next(&mut heard).await, Change::Index);
    b.sync_changes().await.unwrap();
    assert!(b.index().get(&Scope::Shared, "fresh").is_some());
    // A token created, then revoked.
    let t = a
        .token_create("t", &"ab".repeat(32), None, &human())
        .await
        .unwrap();
    assert_eq!(next(&mut heard).await, Change::Tokens);
    a.token_revoke(t.id, &human()).await.unwrap();
    assert_eq!(next(&mut heard).await, Change::Tokens);
    // A transaction that rolls back announces nothing.
    {
        use sqlx::Connection;
        let mut c = raw_connection(&db).await;
        let mut tx = c.begin().await.unwrap();
        sqlx::query(
            "INSERT INTO events (at, kind, scope, skill, data) VALUES (0, 'retired', 'shared', 'fresh', '{}')",
        )
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.rollback().await.unwrap();
    }
    assert!(quiet(&mut heard).await, "a rolled-back write was announced");
    // The listener holds a connection of b's pool: closing b waits for it.
    drop(heard);
    a.close().await;
    b.close().await;
    other.close().await;
    db.cleanup().await;
    elsewhere.cleanup().await;
}

#[tokio::test]
async fn sqlite_has_no_listener() {
    let db = TestDb::sqlite();
    let s = db.open().await;
    assert!(s.change_listener().await.unwrap().is_none());
    s.close().await;
}
