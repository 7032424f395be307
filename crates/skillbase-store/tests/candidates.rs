//! Candidates (issue 19): a revision staged beside the active one is stored with state
//! `candidate`, read into the index with its own entry, followed by a second store on the same
//! database, and ends promoted, rejected or superseded (by a write, an import, a revert or an
//! approval), each in one transaction.

use crate::common::*;
use skillbase_store::{Scope, Status, WriteKind};

async fn states(store: &skillbase_store::Store, name: &str) -> Vec<String> {
    store
        .history(&Scope::Shared, name)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.state)
        .collect()
}

fn verdict<'a>(
    rev: i64,
    promote: bool,
    agent: Option<&'a skillbase_store::AgentName>,
    data: serde_json::Value,
) -> skillbase_store::Settlement<'a> {
    static HUMAN: std::sync::OnceLock<skillbase_store::Author> = std::sync::OnceLock::new();
    skillbase_store::Settlement {
        rev,
        promote,
        actor: HUMAN.get_or_init(human),
        agent,
        data,
    }
}

async fn candidates_are_staged_followed_and_settled(db: TestDb) {
    let store = db.open().await;
    let other = db.open().await;
    let s = Scope::Shared;
    // A candidate of a skill that does not exist is a plain creation.
    let o = store
        .put_candidate(put(s.clone(), skill("alpha", "v1"), None), 30, 4)
        .await
        .unwrap();
    assert_eq!((o.kind, o.rev), (WriteKind::Created, 1));
    let o = store
        .put_candidate(put(s.clone(), skill("alpha", "v2"), None), 30, 4)
        .await
        .unwrap();
    assert_eq!(
        (o.kind, o.rev, o.status),
        (WriteKind::Candidate, 2, Status::Active)
    );
    assert_eq!(states(&store, "alpha").await, ["committed", "candidate"]);
    let e = store.index().get(&s, "alpha").cloned().unwrap();
    assert_eq!((e.active_rev, e.head_rev), (1, 2));
    assert!(e.body.contains("v1"));
    let (c, ce) = e.candidate.clone().expect("staged");
    assert_eq!((c.rev, c.percent, c.min_runs), (2, 30, 4));
    assert!(c.staged_at > 0);
    assert_eq!(ce.active_rev, 2);
    assert!(ce.body.contains("v2"), "{}", ce.body);
    // The share is stable and near its percent.
    let served = (0..2000)
        .filter(|i| c.serves(&format!("session-{i}"), e.id))
        .count();
    assert!((450..=750).contains(&served), "{served} of 2000 at 30%");
    assert!((0..50).all(
        |i| c.serves(&format!("session-{i}"), e.id) == c.serves(&format!("session-{i}"), e.id)
    ));
    // A second store on the same database follows the staging.
    other.sync_changes().await.unwrap();
    let seen = other.index().get(&s, "alpha").cloned().unwrap();
    assert_eq!(seen.candidate.as_ref().map(|(c, _)| c.rev), Some(2));
    // A store opened afresh reads it too.
    drop(other);
    let fresh = db.open().await;
    assert_eq!(
        fresh
            .index()
            .get(&s, "alpha")
            .unwrap()
            .candidate
            .as_ref()
            .map(|(c, _)| c.rev),
        Some(2)
    );
    // Settling a revision that is not the candidate changes nothing.
    assert!(
        store
            .settle_candidate(&s, "alpha", verdict(1, true, None, serde_json::json!({})))
            .await
            .unwrap()
            .is_none()
    );
    // Promoted: active, committed, the candidate gone; the event says from which.
    let bot = agent("bot");
    let o = store
        .settle_candidate(
            &s,
            "alpha",
            verdict(2, true, Some(&bot), serde_json::json!({"reason": "r"})),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(o.rev, 2);
    assert_eq!(states(&store, "alpha").await, ["committed", "committed"]);
    let e = store.index().get(&s, "alpha").cloned().unwrap();
    assert_eq!((e.active_rev, e.candidate.is_none()), (2, true));
    assert!(e.body.contains("v2"));
    // Twice is nothing (another server settled it first).
    assert!(
        store
            .settle_candidate(&s, "alpha", verdict(2, true, None, serde_json::json!({})))
            .await
            .unwrap()
            .is_none()
    );
    fresh.sync_changes().await.unwrap();
    let seen = fresh.index().get(&s, "alpha").cloned().unwrap();
    assert_eq!((seen.active_rev, seen.candidate.is_none()), (2, true));
    // Rejected: the active revision stays.
    store
        .put_candidate(put(s.clone(), skill("alpha", "v3"), None), 30, 4)
        .await
        .unwrap();
    store
        .settle_candidate(&s, "alpha", verdict(3, false, None, serde_json::json!({})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        states(&store, "alpha").await,
        ["committed", "committed", "rejected"]
    );
    assert_eq!(store.index().get(&s, "alpha").unwrap().active_rev, 2);
    // A revert supersedes a staged candidate.
    store
        .put_candidate(put(s.clone(), skill("alpha", "v4"), None), 30, 4)
        .await
        .unwrap();
    store.revert(&s, "alpha", 1, &human()).await.unwrap();
    assert_eq!(
        states(&store, "alpha").await,
        ["committed", "committed", "rejected", "superseded"]
    );
    assert!(store.index().get(&s, "alpha").unwrap().candidate.is_none());
    let kinds: Vec<String> = store
        .events(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.skill.as_deref() == Some("alpha"))
        .map(|e| e.kind.to_string())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| k.starts_with("candidate_")).count(),
        5,
        "{kinds:?}"
    );
    let promoted = store
        .events(&skillbase_store::EventFilter {
            kind: Some("candidate_promoted".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(promoted.len(), 1);
    assert_eq!(promoted[0].agent.as_deref(), Some("bot"));
    assert_eq!(promoted[0].data["from_rev"], serde_json::json!(1));
    assert_eq!(promoted[0].data["reason"], serde_json::json!("r"));
    db.cleanup().await;
}

/// The bulk import path supersedes the candidates of the skills it changes, and only those.
async fn imports_supersede_candidates(db: TestDb) {
    let store = db.open().await;
    let s = Scope::Shared;
    let bundles = |v: &str| {
        (0..40)
            .map(|i| skill(&format!("s{i:02}"), v))
            .collect::<Vec<_>>()
    };
    store
        .import(&s, bundles("one"), &human(), "first", &|_| {})
        .await
        .unwrap();
    for name in ["s00", "s01"] {
        store
            .put_candidate(put(s.clone(), skill(name, "staged"), None), 50, 3)
            .await
            .unwrap();
    }
    // s01 is written as it was: unchanged, its candidate stays.
    let mut next = bundles("two");
    next[1] = skill("s01", "one");
    let r = store
        .import(&s, next, &human(), "second", &|_| {})
        .await
        .unwrap();
    assert_eq!((r.changed.len(), r.unchanged.len()), (39, 1));
    assert_eq!(
        states(&store, "s00").await,
        ["committed", "superseded", "committed"]
    );
    assert!(store.index().get(&s, "s00").unwrap().candidate.is_none());
    assert_eq!(states(&store, "s01").await, ["committed", "candidate"]);
    assert!(store.index().get(&s, "s01").unwrap().candidate.is_some());
    db.cleanup().await;
}

suite!(
    candidates_are_staged_followed_and_settled,
    imports_supersede_candidates
);
