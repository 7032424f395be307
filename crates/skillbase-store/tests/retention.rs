//! Retention: the job removes old calls, turns and activations and ended sessions, records what
//! it removed, and nothing else; no other DELETE of events gets through the database.

use crate::common::*;
use skillbase_store::retention::RetentionPolicy;
use skillbase_store::{EventFilter, EventKind, NewEvent, Scope, Store};
use std::collections::BTreeMap;
use std::time::Duration;

const DAY: i64 = 86_400_000;

fn policy() -> RetentionPolicy {
    RetentionPolicy {
        events_max_age: None,
        events_max_size: None,
        sessions_max_age: None,
        interval: Duration::from_secs(3600),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn kinds(store: &Store) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in store.events(&EventFilter::default()).await.unwrap() {
        *m.entry(e.kind.as_str().to_owned()).or_default() += 1;
    }
    m
}

fn ev(kind: &str, session: Option<&str>, data: serde_json::Value) -> NewEvent {
    NewEvent {
        kind: kind.into(),
        session: session.map(Into::into),
        data,
        ..Default::default()
    }
}

async fn the_job_trims_calls_turns_and_activations_and_records_it(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("keep-me", "Body."), None))
        .await
        .unwrap();
    let mut evs = Vec::new();
    for k in EventKind::TRIMMABLE {
        evs.push(ev(k, Some("s1"), serde_json::json!({"k": k})));
        evs.push(ev(k, None, serde_json::json!({})));
    }
    for k in [
        "token_created",
        "token_revoked",
        "run_finished",
        "agent_changed",
        "a_later_kind",
    ] {
        evs.push(ev(k, Some("s1"), serde_json::json!({})));
    }
    store.append_events(&evs).await.unwrap();
    let before = kinds(&store).await;

    // Outside the job the database refuses: no DELETE of any event, no UPDATE.
    for sql in [
        "DELETE FROM events WHERE kind = 'tool_called'",
        "DELETE FROM events",
        "UPDATE events SET data = '{}' WHERE kind = 'turn'",
        "DELETE FROM revisions",
    ] {
        let e = raw_sql(&db, sql).await.unwrap_err();
        assert!(
            e.contains("append-only") || e.contains("never deleted"),
            "{sql}: {e}"
        );
    }
    // Even with the job's mark, a kind outside the list stays (one statement: its own
    // transaction, so the mark is gone after it).
    let e = raw_sql(
        &db,
        "DELETE FROM events WHERE kind = 'token_created' AND EXISTS (SELECT 1 FROM retention_job)",
    )
    .await;
    assert_eq!(e, Ok(0));
    assert_eq!(kinds(&store).await, before);

    // Recent events are kept; an empty run records nothing.
    let p = RetentionPolicy {
        events_max_age: Some(Duration::from_secs(86_400)),
        ..policy()
    };
    let r = store.apply_retention(&p, None).await.unwrap();
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(kinds(&store).await, before);

    // Two days later they are old: every trimmable kind goes, the rest stays.
    let r = store
        .apply_retention(&p, Some(now() + 2 * DAY))
        .await
        .unwrap();
    assert_eq!(r.events_total(), 2 * EventKind::TRIMMABLE.len() as u64);
    for k in EventKind::TRIMMABLE {
        assert_eq!(r.events.get(*k), Some(&2), "{k}");
    }
    let after = kinds(&store).await;
    for (k, n) in &before {
        if EventKind::TRIMMABLE.contains(&k.as_str()) {
            assert!(!after.contains_key(k), "{k} kept");
        } else {
            assert_eq!(after.get(k), Some(n), "{k} trimmed");
        }
    }
    assert_eq!(after.get("revision_written"), Some(&1));
    let trimmed = store
        .events(&EventFilter {
            kind: Some("events_trimmed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(trimmed.len(), 1);
    assert_eq!(trimmed[0].data["events_total"], r.events_total());
    assert_eq!(trimmed[0].data["events"]["turn"], 2);
    assert_eq!(trimmed[0].data["policy"]["events_max_age"], 86_400_000);
    assert_eq!(trimmed[0].actor.as_deref(), Some("retention"));
    // The record of the job is itself never trimmed, and the mark is gone.
    let r = store
        .apply_retention(&p, Some(now() + 400 * DAY))
        .await
        .unwrap();
    assert!(r.is_empty());
    assert_eq!(raw_sql(&db, "DELETE FROM retention_job").await, Ok(0));
    // The skill and its revision are untouched.
    assert!(store.index().get(&Scope::Shared, "keep-me").is_some());
    store.close().await;
    db.cleanup().await;
}

async fn the_size_limit_keeps_the_newest_events(db: TestDb) {
    let store = db.open().await;
    let pad = "x".repeat(90);
    for i in 0..10 {
        store
            .append_events(&[ev(
                "tool_called",
                None,
                serde_json::json!({"i": i, "pad": pad}),
            )])
            .await
            .unwrap();
    }
    store
        .append_events(&[ev(
            "agent_changed",
            None,
            serde_json::json!({"pad": pad.repeat(20)}),
        )])
        .await
        .unwrap();
    let one = serde_json::json!({"i": 0, "pad": pad}).to_string().len() as u64;
    let p = RetentionPolicy {
        events_max_size: Some(3 * one + 1),
        ..policy()
    };
    let r = store.apply_retention(&p, None).await.unwrap();
    assert_eq!(r.events.get("tool_called"), Some(&7));
    let left: Vec<i64> = store
        .events(&EventFilter {
            kind: Some("tool_called".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .iter()
        .map(|e| e.data["i"].as_i64().unwrap())
        .collect();
    assert_eq!(left, [7, 8, 9]);
    // The large event of another kind counts for nothing and stays.
    assert_eq!(kinds(&store).await.get("agent_changed"), Some(&1));
    // Smaller than the newest event: every trimmable event goes.
    let p = RetentionPolicy {
        events_max_size: Some(1),
        ..policy()
    };
    let r = store.apply_retention(&p, None).await.unwrap();
    assert_eq!(r.events.get("tool_called"), Some(&3));
    store.close().await;
    db.cleanup().await;
}

async fn ended_sessions_go_with_their_activations(db: TestDb) {
    let store = db.open().await;
    let ops = agent("ops");
    store
        .create_agent(&ops, &skillbase_store::AgentConfig::default())
        .await
        .unwrap();
    for s in ["old", "busy"] {
        store.open_session(s, &ops).await.unwrap();
        let act = skillbase_store::ActivationRecord {
            scope: "shared".into(),
            skill: "x".into(),
            rev: 1,
            reason: "load".into(),
            at: now(),
            arguments: None,
        };
        store
            .record_activations(
                &ops,
                s,
                &[act],
                &[ev("skill_activated", Some(s), serde_json::json!({}))],
            )
            .await
            .unwrap();
    }
    let p = RetentionPolicy {
        sessions_max_age: Some(Duration::from_secs(86_400)),
        ..policy()
    };
    assert!(store.apply_retention(&p, None).await.unwrap().is_empty());
    // Two days on, both have been idle for longer than the limit.
    let later = now() + 2 * DAY;
    let r = store.apply_retention(&p, Some(later)).await.unwrap();
    assert_eq!((r.sessions, r.activations), (2, 2));
    let mut ids = r.session_ids.clone();
    ids.sort();
    assert_eq!(
        ids,
        [
            ("ops".to_owned(), "busy".to_owned()),
            ("ops".to_owned(), "old".to_owned())
        ]
    );
    assert!(store.session(&ops, "old").await.unwrap().is_none());
    // Events of other kinds of a removed session stay; the record says what went.
    let t = store
        .events(&EventFilter {
            kind: Some("events_trimmed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(t[0].data["sessions"], 2);
    // A session used again is a new one.
    store.open_session("old", &ops).await.unwrap();
    assert!(
        store
            .session(&ops, "old")
            .await
            .unwrap()
            .unwrap()
            .activations
            .is_empty()
    );
    // A session active within the limit is kept.
    let r = store.apply_retention(&p, None).await.unwrap();
    assert_eq!(r.sessions, 0);
    store.close().await;
    db.cleanup().await;
}

suite!(
    the_job_trims_calls_turns_and_activations_and_records_it,
    the_size_limit_keeps_the_newest_events,
    ended_sessions_go_with_their_activations,
);
