//! Events: appended in batches, in order.

use crate::common::*;

async fn many_events_append_in_order(db: TestDb) {
    let store = db.open().await;
    let evs: Vec<skillbase_store::NewEvent> = (0..250)
        .map(|i| skillbase_store::NewEvent {
            kind: "test".into(),
            session: Some(format!("s{}", i % 3)),
            rev: (i % 2 == 0).then_some(i),
            data: serde_json::json!({"i": i, "text": "it's \"quoted\""}),
            ..Default::default()
        })
        .collect();
    store.append_events(&evs).await.unwrap();
    store.append_events(&[]).await.unwrap();
    let back = store
        .events(&skillbase_store::EventFilter {
            kind: Some("test".into()),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(back.len(), 250);
    let mut ids: Vec<i64> = back.iter().map(|e| e.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 250);
    let mut by_id = back.clone();
    by_id.sort_by_key(|e| e.id);
    for (i, e) in by_id.iter().enumerate() {
        assert_eq!(e.data["i"], i as i64);
        assert_eq!(e.data["text"], "it's \"quoted\"");
        assert_eq!(e.session.as_deref(), Some(format!("s{}", i % 3).as_str()));
        assert_eq!(e.rev, (i % 2 == 0).then_some(i as i64));
    }
    store.close().await;
    db.cleanup().await;
}

/// An agent's newest events of a kind, newest first (what the doctor reads of its turns).
async fn an_agents_newest_events_come_first(db: TestDb) {
    let store = db.open().await;
    let ev = |agent: &str, kind: &str, i: i64| skillbase_store::NewEvent {
        kind: kind.into(),
        agent: Some(agent.into()),
        data: serde_json::json!({"i": i}),
        ..Default::default()
    };
    let mut evs = Vec::new();
    for i in 0..30 {
        evs.push(ev("a", "turn", i));
        evs.push(ev("b", "turn", i));
        evs.push(ev("a", "tool_called", i));
    }
    store.append_events(&evs).await.unwrap();
    let recent = store.recent_events("a", "turn", 5).await.unwrap();
    let got: Vec<i64> = recent
        .iter()
        .map(|e| e.data["i"].as_i64().unwrap())
        .collect();
    assert_eq!(got, [29, 28, 27, 26, 25]);
    assert!(
        recent
            .iter()
            .all(|e| e.agent.as_deref() == Some("a") && e.kind == "turn")
    );
    assert_eq!(
        store.recent_events("a", "turn", 100).await.unwrap().len(),
        30
    );
    // Backwards, page by page: the next page starts below the last id read.
    let older = store
        .recent_events_before("a", "turn", Some(recent[4].id), 3)
        .await
        .unwrap();
    let got: Vec<i64> = older
        .iter()
        .map(|e| e.data["i"].as_i64().unwrap())
        .collect();
    assert_eq!(got, [24, 23, 22]);
    let first = store.recent_events("a", "turn", 100).await.unwrap();
    let oldest = first.last().unwrap().id;
    assert!(
        store
            .recent_events_before("a", "turn", Some(oldest), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .recent_events("c", "turn", 5)
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
    db.cleanup().await;
}

suite!(
    many_events_append_in_order,
    an_agents_newest_events_come_first
);
