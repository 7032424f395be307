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
    store
        .record_activations(&agent, "s1", &acts, &evs)
        .await
        .unwrap();
    let rec = store.session(&agent, "s1").await.unwrap().unwrap();
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
            .record_activations(&agent, "ghost", &acts, &evs)
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

/// Issue 35: sessions are keyed by `(agent, id)`. Two agents naming the same id hold two
/// unrelated sessions (activations, notes, runs), and opening one answers the same whether or
/// not another agent holds the id.
async fn one_id_names_one_session_per_agent(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("driven", "v1"), None))
        .await
        .unwrap();
    let entry = store.index().get(&Scope::Shared, "driven").unwrap().clone();
    let (alpha, beta) = (
        AgentName::parse("alpha").unwrap(),
        AgentName::parse("beta").unwrap(),
    );
    for a in [&alpha, &beta] {
        store
            .create_agent(a, &AgentConfig::default())
            .await
            .unwrap();
    }
    store.open_session("X", &beta).await.unwrap();
    store.set_note(&beta, "X", "beta's note").await.unwrap();
    let act = |skill: &str| skillbase_store::ActivationRecord {
        scope: "shared".into(),
        skill: skill.into(),
        rev: 1,
        reason: "load".into(),
        at: 1_000,
        arguments: None,
    };
    store
        .record_activations(&beta, "X", &[act("beta-skill")], &[])
        .await
        .unwrap();
    let beta_run = store.start_run("X", &beta, &entry).await.unwrap();
    // Alpha opens the same id: a new, empty session of its own (no error, no sign of beta's).
    store.open_session("X", &alpha).await.unwrap();
    let a = store.session(&alpha, "X").await.unwrap().unwrap();
    assert_eq!((a.agent.as_str(), a.activations.len()), ("alpha", 0));
    assert_eq!(store.note(&alpha, "X").await.unwrap(), "");
    assert!(store.open_run(&alpha, "X").await.unwrap().is_none());
    // Alpha's writes stay in alpha's session.
    store
        .record_activations(&alpha, "X", &[act("alpha-skill")], &[])
        .await
        .unwrap();
    store.set_note(&alpha, "X", "alpha's note").await.unwrap();
    let alpha_run = store.start_run("X", &alpha, &entry).await.unwrap();
    let b = store.session(&beta, "X").await.unwrap().unwrap();
    assert_eq!(b.activations.len(), 1);
    assert_eq!(b.activations[0].skill, "beta-skill");
    assert_eq!(store.note(&beta, "X").await.unwrap(), "beta's note");
    assert_eq!(store.note(&alpha, "X").await.unwrap(), "alpha's note");
    // Starting alpha's run did not supersede beta's.
    assert_eq!(
        store.open_run(&beta, "X").await.unwrap().unwrap().id,
        beta_run
    );
    assert_eq!(
        store.open_run(&alpha, "X").await.unwrap().unwrap().id,
        alpha_run
    );
    // Opening again changes nothing.
    store.open_session("X", &alpha).await.unwrap();
    assert_eq!(
        store
            .session(&alpha, "X")
            .await
            .unwrap()
            .unwrap()
            .activations
            .len(),
        1
    );
    // An admin finds both by the id.
    let agents = store.session_agents("X").await.unwrap();
    assert_eq!(agents, [alpha.clone(), beta.clone()]);
    assert!(store.session_agents("Y").await.unwrap().is_empty());
    store.close().await;
    db.cleanup().await;
}

/// A store written before sessions were keyed per agent (schema 17) keeps every session, its
/// activations and its note once migrated, each under the agent that held it.
async fn sessions_survive_the_move_to_per_agent_keys(db: TestDb) {
    let old = skillbase_store::db::Db::open_at_schema(&db.url, 17)
        .await
        .unwrap();
    let statements = [
        "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ('s1', 'alpha', 1, 2)",
        "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ('s2', 'beta', 3, 4)",
        "INSERT INTO activations (session_id, scope, skill, rev, reason, at, arguments) \
         VALUES ('s1', 'shared', 'one', 1, 'load', 10, '{\"q\":1}')",
        "INSERT INTO activations (session_id, scope, skill, rev, reason, at, arguments) \
         VALUES ('s1', 'shared', 'two', 2, 'companion:one', 11, NULL)",
        "INSERT INTO activations (session_id, scope, skill, rev, reason, at, arguments) \
         VALUES ('s2', 'agent:beta', 'three', 1, 'trigger', 12, NULL)",
        "INSERT INTO notes (session_id, text, updated_at) VALUES ('s1', 'alpha notes', 5)",
        "INSERT INTO notes (session_id, text, updated_at) VALUES ('s2', 'beta notes', 6)",
    ];
    for sql in statements {
        match &old {
            skillbase_store::db::Db::Sqlite(p) => {
                sqlx::query(sql).execute(p).await.unwrap();
            }
            skillbase_store::db::Db::Postgres(p) => {
                sqlx::query(sql).execute(p).await.unwrap();
            }
        }
    }
    old.close().await;
    let store = db.open().await;
    let (alpha, beta) = (
        AgentName::parse("alpha").unwrap(),
        AgentName::parse("beta").unwrap(),
    );
    let s1 = store.session(&alpha, "s1").await.unwrap().unwrap();
    assert_eq!(s1.created_at, 1);
    let got: Vec<_> = s1
        .activations
        .iter()
        .map(|a| (a.skill.as_str(), a.reason.as_str(), a.arguments.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("one", "load", Some("{\"q\":1}")),
            ("two", "companion:one", None)
        ]
    );
    let s2 = store.session(&beta, "s2").await.unwrap().unwrap();
    assert_eq!(s2.activations[0].skill, "three");
    assert!(store.session(&beta, "s1").await.unwrap().is_none());
    assert_eq!(store.note(&alpha, "s1").await.unwrap(), "alpha notes");
    assert_eq!(store.note(&beta, "s2").await.unwrap(), "beta notes");
    assert_eq!(store.note(&beta, "s1").await.unwrap(), "");
    // The migrated tables take new rows (the keys and the foreign key hold).
    store.open_session("s1", &beta).await.unwrap();
    store
        .record_activations(
            &beta,
            "s1",
            &[skillbase_store::ActivationRecord {
                scope: "shared".into(),
                skill: "four".into(),
                rev: 1,
                reason: "load".into(),
                at: 20,
                arguments: None,
            }],
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .session(&alpha, "s1")
            .await
            .unwrap()
            .unwrap()
            .activations
            .len(),
        2
    );
    assert_eq!(
        store
            .session(&beta, "s1")
            .await
            .unwrap()
            .unwrap()
            .activations
            .len(),
        1
    );
    store.close().await;
    db.cleanup().await;
}

suite!(
    run_counts_commit_with_their_events,
    activations_and_their_events_commit_together,
    one_id_names_one_session_per_agent,
    sessions_survive_the_move_to_per_agent_keys,
);
