//! Upstream MCP servers configured through the API: kept as written, replaced in place, removed,
//! each write an event that other servers apply; past the limit nothing is written.

use crate::common::*;
use skillbase_store::{EventFilter, StoreError};

async fn upstream_servers_are_kept_replaced_and_removed_with_events(db: TestDb) {
    let store = db.open().await;
    let cfg = serde_json::json!({"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": {"vault": "TOKEN", "prefix": "Bearer "}}});
    let summary = serde_json::json!({"transport": "http"});
    assert!(store.mcp_servers().await.unwrap().is_empty());
    let created = store
        .mcp_server_put("docs", &cfg, summary.clone(), 4, &human())
        .await
        .unwrap();
    assert!(created);
    // Another store on the same database (another server) reads it.
    let other = db.open().await;
    let rows = other.mcp_servers().await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].name, "docs");
    assert_eq!(rows[0].config, cfg);
    assert_eq!(rows[0].updated_by, human().to_string());
    let first = rows[0].clone();

    // Replaced in place: same creation time, new configuration.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let cfg2 = serde_json::json!({"url": "http://127.0.0.1:9/other"});
    assert!(
        !store
            .mcp_server_put("docs", &cfg2, summary.clone(), 4, &human())
            .await
            .unwrap()
    );
    let rows = store.mcp_servers().await.unwrap();
    assert_eq!(rows[0].config, cfg2);
    assert_eq!(rows[0].created_at, first.created_at);
    assert!(rows[0].updated_at > first.updated_at);

    // The limit counts new names only: replacing at the limit works, a new one is refused.
    for n in ["b", "c", "d"] {
        store
            .mcp_server_put(n, &cfg, summary.clone(), 4, &human())
            .await
            .unwrap();
    }
    store
        .mcp_server_put("d", &cfg2, summary.clone(), 4, &human())
        .await
        .unwrap();
    let e = store
        .mcp_server_put("e", &cfg, summary.clone(), 4, &human())
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::LimitReached(_)), "{e}");
    assert!(e.to_string().contains("remove one first"), "{e}");
    assert_eq!(store.mcp_servers().await.unwrap().len(), 4);

    // Oversized: refused, nothing written.
    let huge = serde_json::json!({"url": "http://x/", "exclude": ["x".repeat(70_000)]});
    let e = store
        .mcp_server_put("big", &huge, summary.clone(), 100, &human())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("at most 65536"), "{e}");

    assert!(store.mcp_server_remove("docs", &human()).await.unwrap());
    assert!(!store.mcp_server_remove("docs", &human()).await.unwrap());
    let names: Vec<String> = store
        .mcp_servers()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["b", "c", "d"]);

    // Events: one per write, naming the server (never a value), each one other servers apply.
    let events = store.events(&EventFilter::default()).await.unwrap();
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.data["server"] == "docs")
        .map(|e| (e.kind.as_str(), e.data["transport"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        kinds,
        [
            ("mcp_server_set", "http"),
            ("mcp_server_set", "http"),
            ("mcp_server_removed", "")
        ]
    );
    let set = events
        .iter()
        .find(|e| e.kind.as_str() == "mcp_server_set")
        .unwrap();
    assert_eq!(set.data["created"], true);
    assert!(set.kind.changes_index());
    assert!(!set.kind.trimmable());
    assert!(!serde_json::to_string(&events).unwrap().contains("Bearer"));
    db.cleanup().await;
}

suite!(upstream_servers_are_kept_replaced_and_removed_with_events);
