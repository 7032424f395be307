//! Agents and scopes: an agent resolves a name to its own record, else the shared one.

use crate::common::*;
use skillbase_store::{AgentConfig, NameSet, Scope, StoreError};

async fn scopes_and_agents(db: TestDb) {
    let store = db.open().await;
    let a = agent("support");
    store
        .put(put(Scope::Shared, skill("refund", "shared body"), None))
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("faq", "faq body"), None))
        .await
        .unwrap();
    store
        .put(put(
            Scope::Agent(a.clone()),
            skill("refund", "support override"),
            None,
        ))
        .await
        .unwrap();
    store
        .put(put(
            Scope::Agent(agent("sales")),
            skill("pitch", "private"),
            None,
        ))
        .await
        .unwrap();
    let idx = store.index();
    assert_eq!(idx.resolve(&a, "refund").unwrap().body, "support override");
    assert_eq!(
        idx.resolve(&agent("other"), "refund").unwrap().body,
        "shared body"
    );
    assert!(
        idx.resolve(&a, "pitch").is_none(),
        "agent-private skills stay private"
    );
    let names: Vec<&str> = idx
        .resolved_for(&a)
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, ["faq", "refund"]);

    let mut config = AgentConfig {
        skills: NameSet::Names(vec!["refund".parse().unwrap()]),
        ..AgentConfig::default()
    };
    assert_eq!(store.create_agent(&a, &config).await.unwrap(), 1);
    assert!(matches!(
        store.create_agent(&a, &config).await,
        Err(StoreError::AgentExists(_))
    ));
    config.catalog_budget = 100;
    assert_eq!(store.set_agent(&a, &config).await.unwrap(), 2);
    let got = store.agent(&a).await.unwrap().unwrap();
    assert_eq!(got.config.catalog_budget, 100);
    assert_eq!(got.version, 2);
    assert!(store.agent(&agent("ghost")).await.unwrap().is_none());
    store.close().await;
    db.cleanup().await;
}

suite!(scopes_and_agents,);
