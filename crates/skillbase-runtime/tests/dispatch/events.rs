//! Events are written behind the calls: a batch the database refuses is retried, not dropped.

use super::*;

/// A batch of events the database refuses (here: the table is away for a moment) is retried
/// until it is stored, not logged and dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_the_database_refuses_for_a_while_are_retried_not_dropped() {
    let env = Env::new().await;
    env.put(skill("seed", "", "So the agent has a view.")).await;
    // The session exists before the table goes.
    let first = env.call("retry", "echo", json!({"text": "first"})).await;
    env.d.flush().await;
    let url = format!("sqlite://{}", env.dir.path().join("skillbase.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("ALTER TABLE events RENAME TO events_away")
        .execute(&pool)
        .await
        .unwrap();
    let o = env.call("retry", "echo", json!({"text": "kept"})).await;
    assert!(matches!(o, CallOutcome::Done { .. }), "{o:?}");
    // Let the writer fail a few times.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    sqlx::query("ALTER TABLE events_away RENAME TO events")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    env.d.flush().await;
    assert_eq!(
        env.called("retry", first.call_id()).await["arguments"]["text"],
        "first"
    );
    assert_eq!(
        env.called("retry", o.call_id()).await["arguments"]["text"],
        "kept"
    );
}
