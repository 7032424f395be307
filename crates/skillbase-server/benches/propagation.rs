//! Propagation between two servers on one PostgreSQL database (issue 14, "Many servers"): how
//! long after a write is answered on server A does server B serve it, and how long after a token
//! is revoked on A does B refuse it.
//!
//! Both servers run in this process, each with its own store (its own pool, index and token
//! cache) on the same schema, and apply each other's writes as a cluster does: at once when
//! PostgreSQL announces them (`LISTEN`/`NOTIFY`), and by the one-second poll otherwise. Each
//! sample is one `PUT /v1/skills/{name}` on A (timed from its 200), then B's index read in a
//! tight loop until it holds the new revision; and one `DELETE /v1/tokens/{id}` on A, then B's
//! `GET /v1/skills` with that token until it answers 401. Printed: p50, p90, p99 and max of
//! each, and how many were slower than the poll (a lost announcement).
//!
//! `SKILLBASE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p
//! skillbase-server --bench propagation` (about half a minute). Without the variable it says so
//! and does nothing. Not a criterion bench: what matters is the distribution, not a mean.

use skillbase_runtime::{Vault, VaultKey};
use skillbase_server::{AppState, ServerOptions, generate_token, hash_token};
use skillbase_store::config::Config;
use skillbase_store::{Author, DbUrl, Scope, Store};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Skill writes and token revocations measured.
const SAMPLES: usize = 200;

struct Node {
    base: String,
    state: Arc<AppState>,
}

async fn node(url: &DbUrl, dir: &std::path::Path) -> Node {
    let store = Arc::new(Store::open(url).await.expect("open the store"));
    let vault = Vault::open(store.clone(), VaultKey::parse(&"ab".repeat(32)).unwrap())
        .await
        .unwrap();
    let engine = skillbase_runtime::Engine::builder()
        .store(store)
        .vault(vault)
        .workspace(dir.join("workspaces"))
        .build()
        .await
        .unwrap();
    let state = AppState::new(&engine, ServerOptions::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let st = state.clone();
    tokio::spawn(async move {
        skillbase_server::serve(st, listener, std::future::pending())
            .await
            .unwrap()
    });
    Node { base, state }
}

fn percentiles(name: &str, mut xs: Vec<Duration>) {
    xs.sort();
    let at = |p: f64| xs[((xs.len() as f64 - 1.0) * p).round() as usize];
    let slow = xs
        .iter()
        .filter(|d| **d >= skillbase_server::SYNC_INTERVAL)
        .count();
    println!(
        "{name:<28} n={:<4} p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  slower than the poll: {slow}",
        xs.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        xs[xs.len() - 1].as_secs_f64() * 1e3,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Ok(pg) = std::env::var("SKILLBASE_TEST_POSTGRES_URL") else {
        println!("propagation: skipped (set SKILLBASE_TEST_POSTGRES_URL to a PostgreSQL server)");
        return;
    };
    let schema = format!("sbprop_{}", std::process::id());
    let url = DbUrl::Postgres {
        url: pg.clone(),
        schema: Some(schema.clone()),
    };
    let dir = tempfile::tempdir().unwrap();
    let a = node(&url, dir.path()).await;
    let b = node(&url, dir.path()).await;
    let store = a.state.store.clone();
    Config::parse("[agents.bench]\nskills = \"all\"\n", "bench")
        .unwrap()
        .apply(&store)
        .await
        .unwrap();
    let admin = generate_token();
    store
        .token_create(
            "bench",
            &hash_token(&admin),
            None,
            &Author::Human("bench".into()),
        )
        .await
        .unwrap();
    let http = reqwest::Client::new();

    let mut writes = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let md = format!("---\nname: prop\ndescription: Propagation sample\n---\n\nsample {i}\n");
        let r = http
            .put(format!("{}/v1/skills/prop", a.base))
            .bearer_auth(&admin)
            .header("content-type", "text/markdown")
            .body(md)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
        let done = Instant::now();
        let want = i as i64 + 1;
        loop {
            let seen = b
                .state
                .store
                .index()
                .get(&Scope::Shared, "prop")
                .is_some_and(|e| e.head_rev >= want);
            if seen {
                break;
            }
            assert!(
                done.elapsed() < Duration::from_secs(10),
                "sample {i} never arrived"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        writes.push(done.elapsed());
    }

    let mut revocations = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let secret = generate_token();
        let t = store
            .token_create(
                "victim",
                &hash_token(&secret),
                None,
                &Author::Human("bench".into()),
            )
            .await
            .unwrap();
        // B has the token cached as valid.
        let r = http
            .get(format!("{}/v1/agents", b.base))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let r = http
            .delete(format!("{}/v1/tokens/{}", a.base, t.id))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        let done = Instant::now();
        loop {
            let r = http
                .get(format!("{}/v1/agents", b.base))
                .bearer_auth(&secret)
                .send()
                .await
                .unwrap();
            if r.status() == 401 {
                break;
            }
            assert!(done.elapsed() < Duration::from_secs(10), "never refused");
        }
        revocations.push(done.elapsed());
    }
    println!("propagation between two servers on one PostgreSQL ({SAMPLES} samples each):");
    percentiles("skill write visible on B", writes);
    percentiles("revoked token refused on B", revocations);

    a.state.shutdown.cancel();
    b.state.shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(200)).await;
    use sqlx::Connection;
    if let Ok(mut c) = sqlx::PgConnection::connect(&pg).await {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE"
        )))
        .execute(&mut c)
        .await;
    }
}
