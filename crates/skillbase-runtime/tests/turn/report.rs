//! The report and the events.

use super::*;

// ---------------------------------------------------------------------------------------------
// 10. The report and the events.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_reasons_tokens_and_events() {
    let env = Env::new().await;
    env.put(skill("policy", "")).await;
    env.put(skill(
        "refund",
        "triggers: [Money Back]\ncompanions: [ledger]\n",
    ))
    .await;
    env.put(skill("ledger", "")).await;
    for (n, d) in TOPICS.iter().take(12) {
        env.put(skill_desc(n, d, "")).await;
    }
    let a = env.agent("support", "all", "policy").await;
    let view = env.rt.view(&a).unwrap();
    let tok = |n: &str| view.get(n).unwrap().wrapped().1;

    let t = env.turn(&a, "ev", "I want my money back").await;
    let r = &t.report;
    assert_eq!(r.agent, "support");
    assert_eq!(
        activated(&t),
        pairs(&[
            ("policy", "eager"),
            ("refund", "trigger:Money Back"),
            ("ledger", "companion:refund"),
        ])
    );
    for x in &r.activated {
        assert_eq!(x.tokens, tok(&x.name), "{x:?}");
        assert_eq!(x.rev, 1);
    }
    assert!(r.tokens.eager >= tok("policy") && r.tokens.eager <= tok("policy") + 2);
    let inj = tok("refund") + tok("ledger");
    assert!(r.tokens.injected >= inj && r.tokens.injected <= inj + 4);
    assert!(r.tokens.catalog > 0 && r.tokens.tools > 0);
    assert_eq!(
        r.tokens.total,
        r.tokens.eager + r.tokens.injected + r.tokens.catalog + r.tokens.tools
    );
    assert!(r.evicted.is_empty());

    let events = env
        .store
        .events(&EventFilter {
            session: Some("ev".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "turn",
            "skill_activated",
            "skill_activated",
            "skill_activated"
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e.session.as_deref() == Some("ev") && e.agent.as_deref() == Some("support"))
    );
    // The report as answered by default, plus what the view was built from.
    let mut want = serde_json::to_value(r).unwrap();
    want["generation"] = env.rt.view(&a).unwrap().generation.into();
    want["agent_version"] = 1.into();
    assert_eq!(events[0].data, want);
    let act: Vec<(String, String)> = events[1..]
        .iter()
        .map(|e| {
            (
                e.skill.clone().unwrap(),
                e.data["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(act, activated(&t));
    assert!(
        events[1..]
            .iter()
            .all(|e| e.rev == Some(1) && e.scope.as_deref() == Some("shared"))
    );

    // The report is computed after the cut: the eager skill fits, the trigger's unit does not.
    let budget = tok("policy") + 1 + tok("refund") + 1; // no room for the companion
    let t = env
        .turn_with(
            &a,
            "ev2",
            "money back now",
            &TurnOptions {
                context_budget: Some(budget),
                catalog_budget: Some(120),
                ..TurnOptions::default()
            },
        )
        .await;
    let r = &t.report;
    assert_eq!(activated(&t), pairs(&[("policy", "eager")]));
    assert_eq!(names_of(&r.evicted), ["refund", "ledger"]);
    assert!(
        r.evicted[0]
            .reason
            .starts_with("budget: trigger:Money Back"),
        "{:?}",
        r.evicted
    );
    assert!(
        r.evicted[1].reason.starts_with("budget: companion:refund"),
        "{:?}",
        r.evicted
    );
    assert!(t.injected.is_none(), "an evicted body is never shown");
    assert_eq!(r.tokens.injected, 0);
    assert!(r.tokens.eager <= budget);
    assert!(
        !r.activated
            .iter()
            .any(|x| x.name == "refund" || x.name == "ledger")
    );
    let events = env
        .store
        .events(&EventFilter {
            session: Some("ev2".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "turn",
            "skill_activated",
            "skill_evicted",
            "skill_evicted",
            "catalog_truncated"
        ]
    );
    let evicted: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == "skill_evicted")
        .map(|e| e.skill.as_deref().unwrap())
        .collect();
    assert_eq!(evicted, ["refund", "ledger"]);
    let trunc = events
        .iter()
        .find(|e| e.kind == "catalog_truncated")
        .unwrap();
    // Counts only; the `turn` event has the summary (counts, reasons, ranks), never each name.
    assert_eq!(
        trunc.data,
        serde_json::json!({"name_only": r.catalog.name_only.len(), "omitted": r.catalog.omitted.len()})
    );
    let turn = events.iter().find(|e| e.kind == "turn").unwrap();
    let omitted = &turn.data["catalog"]["omitted"];
    assert_eq!(omitted["count"], r.catalog.omitted.len());
    assert!(turn.data["generation"].is_u64() && turn.data["agent_version"].is_i64());
    assert!(events.iter().all(|e| e.session.as_deref() == Some("ev2")));

    // resolve() records nothing.
    let before = env
        .store
        .events(&EventFilter::default())
        .await
        .unwrap()
        .len();
    env.resolve(&a, "money back", &TurnOptions::default())
        .unwrap();
    assert_eq!(
        env.store
            .events(&EventFilter::default())
            .await
            .unwrap()
            .len(),
        before
    );
}
