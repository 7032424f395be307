//! Sessions and runs: activations, their events and run counters commit together.

use crate::common::*;
use skillbase_store::{AgentConfig, AgentName, Scope};

async fn run_counts_commit_with_their_events(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("counted", "v1"), None))
        .await
        .unwrap();
    let agent = AgentName::parse("counter").unwrap();
    store
        .create_agent(&agent, &AgentConfig::default())
        .await
        .unwrap();
    let entry = store
        .index()
        .get(&Scope::Shared, "counted")
        .unwrap()
        .clone();
    let mut runs = Vec::new();
    for session in ["s1", "s2"] {
        store.open_session(session, &agent).await.unwrap();
        runs.push(store.start_run(session, &agent, &entry).await.unwrap());
    }
    let ev = skillbase_store::NewEvent {
        kind: "tool_called".into(),
        ..Default::default()
    };
    store
        .append_events_and_count(&[ev.clone(), ev], &[(runs[0], 3), (runs[1], 1)])
        .await
        .unwrap();
    // Counts alone (no events) are written too; an unknown run changes nothing.
    store
        .append_events_and_count(&[], &[(runs[0], 2), (i64::MAX, 5)])
        .await
        .unwrap();
    store.count_call(runs[1], true).await.unwrap();
    let got = store.runs(&Scope::Shared, "counted", 10).await.unwrap();
    let by = |id: i64| got.iter().find(|r| r.id == id).unwrap();
    assert_eq!((by(runs[0]).calls, by(runs[0]).failed_calls), (5, 0));
    assert_eq!((by(runs[1]).calls, by(runs[1]).failed_calls), (2, 1));
    let evs = store
        .events(&skillbase_store::EventFilter {
            kind: Some("tool_called".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(evs.len(), 2);
    store.close().await;
    db.cleanup().await;
}

async fn activations_and_their_events_commit_together(db: TestDb) {
    let store = db.open().await;
    let agent = skillbase_store::AgentName::parse("ops").unwrap();
    store
        .create_agent(&agent, &skillbase_store::AgentConfig::default())
        .await
        .unwrap();
    store.open_session("s1", &agent).await.unwrap();
    let acts: Vec<skillbase_store::ActivationRecord> = ["main", "helper"]
        .iter()
        .enumerate()
        .map(|(i, n)| skillbase_store::ActivationRecord {
            scope: "shared".into(),
            skill: (*n).into(),
            rev: 1,
            reason: if i == 0 {
                "load".into()
            } else {
                "companion:main".into()
            },
            at: 1_000 + i as i64,
            // The load's arguments are kept with its activation (a companion has none).
            arguments: (i == 0).then(|| r#"{"q":"the question"}"#.to_owned()),
        })
        .collect();
    let evs = vec![skillbase_store::NewEvent {
        kind: "skill_activated".into(),
        session: Some("s1".into()),
        ..Default::default()
    }];
    store.record_activations("s1", &acts, &evs).await.unwrap();
    let rec = store.session("s1").await.unwrap().unwrap();
    assert_eq!(rec.activations, acts);
    let back = store
        .events(&skillbase_store::EventFilter {
            session: Some("s1".into()),
            kind: Some("skill_activated".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(back.len(), 1);
    // An unknown session: the activations' foreign key refuses, and no event lands either.
    let before = store.events(&Default::default()).await.unwrap().len();
    assert!(
        store
            .record_activations("ghost", &acts, &evs)
            .await
            .is_err()
    );
    assert_eq!(
        store.events(&Default::default()).await.unwrap().len(),
        before
    );
    store.close().await;
    db.cleanup().await;
}

suite!(
    run_counts_commit_with_their_events,
    activations_and_their_events_commit_together,
);
