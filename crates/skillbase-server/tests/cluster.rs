//! Several servers on one PostgreSQL database: a write committed on one is applied by the
//! others when PostgreSQL announces it (`LISTEN`/`NOTIFY`), not at the next poll. The servers
//! here poll only every ten minutes, so whatever the test sees in time came by announcement.
//! Preconditions are checked against the database's current revision, not a server's copy.

use crate::common::{TestServer, ok_json, problem};
use serde_json::json;
use skillbase_server::{Limits, ServerOptions};
use skillbase_store::DbUrl;
use std::time::{Duration, Instant};

/// Well under the token cache's lifetime (2 s) and the poll (600 s here): only an announcement
/// makes a change visible this fast. A loaded machine still has a hundred times the usual
/// latency of a few milliseconds.
const SOON: Duration = Duration::from_millis(1500);

fn options() -> ServerOptions {
    ServerOptions {
        limits: Limits {
            sync_poll: Duration::from_secs(600),
            ..Limits::default()
        },
        ..ServerOptions::default()
    }
}

/// A private schema on the test PostgreSQL server, and a server on it.
async fn first() -> (TestServer, DbUrl) {
    let url = std::env::var("SKILLBASE_TEST_POSTGRES_URL")
        .expect("SKILLBASE_TEST_POSTGRES_URL was set when the tests were built but is not set now");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let db = DbUrl::Postgres {
        url,
        schema: Some(format!("sbcluster_{}_{nanos}", std::process::id())),
    };
    let s = TestServer::start_on(tempfile::tempdir().unwrap(), db.clone(), options()).await;
    (s, db)
}

async fn drop_schema(db: &DbUrl) {
    if let DbUrl::Postgres {
        url,
        schema: Some(schema),
    } = db
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

/// Wait until `check` holds, at most `within`; how long it took.
async fn until(within: Duration, mut check: impl AsyncFnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if check().await {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_pg),
    ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them"
)]
async fn writes_grants_and_revocations_reach_the_other_server_at_once_postgres() {
    let (a, db) = first().await;
    let b = a.join(options()).await;
    // Both serve the same store; b's token cache holds alpha's token.
    for s in [&a, &b] {
        ok_json(s.get("/v1/skills", &s.alpha).send().await.unwrap(), 200).await;
    }

    // A skill written on a is served by b.
    let md = "---\nname: cluster-new\ndescription: Written on one server\n---\n\nbody\n";
    let r = a
        .markdown("/v1/skills/cluster-new", &a.admin, md.into())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let seen = until(SOON, async || {
        b.get("/v1/skills/cluster-new", &b.admin)
            .send()
            .await
            .unwrap()
            .status()
            == 200
    })
    .await;
    assert!(
        seen.is_some(),
        "the write did not reach the other server in {SOON:?}"
    );

    // A grant taken away on a is refused on b.
    let call = async |s: &TestServer| {
        let r = s
            .post("/v1/sessions/cl-1/calls", &s.alpha)
            .json(&json!({"name": "take_note", "arguments": {"text": "x"}}))
            .send()
            .await
            .unwrap();
        ok_json(r, 200).await
    };
    ok_json(
        b.post("/v1/sessions", &b.alpha)
            .json(&json!({"id": "cl-1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let first = call(&b).await;
    assert_eq!(first["status"], "done", "{first}");
    let r = a
        .put("/v1/agents/alpha", &a.admin)
        .json(&json!({"skills": ["shared-one", "shared-two", "alpha-secret"], "grants": {"tools": ["skills"]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let refused = until(SOON, async || call(&b).await["status"] == "refused").await;
    assert!(
        refused.is_some(),
        "a revoked grant still worked on the other server after {SOON:?}"
    );

    // A token revoked on a is refused on b (its cached lookup forgotten).
    let r = a
        .req(
            reqwest::Method::DELETE,
            &format!("/v1/tokens/{}", a.alpha_token_id),
            &a.admin,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let refused = until(SOON, async || {
        b.get("/v1/skills", &b.alpha).send().await.unwrap().status() == 401
    })
    .await;
    assert!(
        refused.is_some(),
        "a revoked token still worked on the other server after {SOON:?}"
    );

    b.stop().await;
    a.stop().await;
    drop_schema(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_pg),
    ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them"
)]
async fn a_precondition_is_checked_against_the_database_not_a_stale_copy_postgres() {
    let (a, db) = first().await;
    // b never applies other servers' writes: its copy of the skill stays old.
    let b = a.join_deaf(options()).await;
    let md =
        |body: &str| format!("---\nname: shared-one\ndescription: Shared one\n---\n\n{body}\n");
    let before = ok_json(
        b.get("/v1/skills/shared-one", &b.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let rev = before["latest_rev"].as_i64().unwrap();
    let r = a
        .markdown("/v1/skills/shared-one", &a.admin, md("changed on a"))
        .header("if-match", format!("\"{rev}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let now = rev + 1;
    // The client knows the new revision and asks b to write after it: b must not answer 412
    // with the revision the client already knows is old.
    let r = b
        .markdown("/v1/skills/shared-one", &b.admin, md("changed on b"))
        .header("if-match", format!("\"{now}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    // And a stale If-Match names the database's current revision.
    let r = b
        .markdown("/v1/skills/shared-one", &b.admin, md("stale"))
        .header("if-match", format!("\"{rev}\""))
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 412);
    assert_eq!(p["extra"]["current_rev"], now + 1, "{p}");
    b.stop().await;
    a.stop().await;
    drop_schema(&db).await;
}
