//! Bad input: unknown agents and sessions, budgets too small, huge messages.

use super::*;

// ---------------------------------------------------------------------------------------------
// Bad input.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_agents_and_sessions_are_errors() {
    let (env, a) = refund_env().await;
    let ghost = AgentName::parse("ghost").unwrap();
    let o = TurnOptions::default();
    let e = env.rt.turn(&ghost, "s", "hi", &o).await.unwrap_err();
    assert!(
        matches!(e, RuntimeError::UnknownAgent(ref n) if n == "ghost"),
        "{e}"
    );
    assert_eq!(e.to_string(), "no agent 'ghost'");
    assert!(matches!(
        env.resolve(&ghost, "hi", &o),
        Err(RuntimeError::UnknownAgent(_))
    ));
    assert!(matches!(
        load_via(&env.rt, &ghost, "s", "notes", None).await,
        Err(RuntimeError::UnknownAgent(_))
    ));
    assert!(matches!(
        env.rt.pinned(&ghost, "s", 10).await,
        Err(RuntimeError::UnknownAgent(_))
    ));
    assert!(matches!(
        env.rt.search(&ghost, "x", 5).await,
        Err(RuntimeError::UnknownAgent(_))
    ));
    let d = &env.rt;
    assert!(matches!(
        d.call(
            &ghost,
            "s",
            "load_skill",
            json!({"name": "notes"}),
            skillbase_runtime::CallMode::Wait
        )
        .await,
        Err(RuntimeError::UnknownAgent(_))
    ));
    // No session was created for the unknown agent (by a turn, a load or a call).
    assert!(env.store.session_agents("s").await.unwrap().is_empty());
    assert!(matches!(
        env.rt.pinned(&a, "never-opened", 10).await,
        Err(RuntimeError::UnknownSession(_))
    ));
    // Invalid session ids.
    for bad in ["", "a/b", "x\ny"] {
        let e = env.rt.turn(&a, bad, "hi", &o).await.unwrap_err();
        assert!(e.to_string().contains("invalid session id"), "{bad:?}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_budget_too_small_for_the_eager_skills_is_reported() {
    let env = Env::new().await;
    env.put(skill("first", "")).await;
    env.put(skill("second", "companions: [third]\n")).await;
    env.put(skill("third", "")).await;
    env.put(skill("loadable", "")).await;
    let a = env
        .agent_with("tiny", "all", "first, second", |c| c.context_budget = 5)
        .await;
    let t = env.turn(&a, "s", "hello").await;
    let r = &t.report;
    assert!(t.prefix.is_none());
    assert!(r.activated.is_empty(), "{r:#?}");
    assert_eq!(names_of(&r.evicted), ["first", "second", "third"]);
    assert!(r.evicted.iter().all(|o| o.reason.starts_with("budget:")));
    assert!(r.evicted[0].reason.contains("eager"));
    assert_eq!(r.tokens.eager, 0);
    // Eager skills stay out of the catalog and the enum even when evicted.
    assert!(
        !listed(&t, "first") && !listed(&t, "second"),
        "{}",
        catalog(&t)
    );
    let en = enum_names(&t).unwrap();
    assert!(
        !en.contains(&"first".to_owned()) && !en.contains(&"second".to_owned()),
        "{en:?}"
    );
    for n in &en {
        // Everything the enum offers can be loaded.
        load_via(&env.rt, &a, "s-load", n, None).await.unwrap();
    }

    // A budget of zero through the options.
    let t = env
        .turn_with(
            &a,
            "s",
            "hello",
            &TurnOptions {
                context_budget: Some(0),
                catalog_budget: Some(0),
                ..TurnOptions::default()
            },
        )
        .await;
    assert!(t.prefix.is_none() && t.injected.is_none());
    // With no room for even one name, the catalog is only the pointer to search_skills.
    let c = t.catalog.as_deref().unwrap_or("");
    assert!(!c.contains("<skill>"), "{c}");
    if !c.is_empty() {
        assert!(c.contains("search_skills"), "{c}");
        assert!(t.tools.iter().any(|x| x.name == "search_skills"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_message() {
    let env = Env::new().await;
    env.put(skill("gift", "triggers: [presente]\n")).await;
    for (n, d) in TOPICS {
        env.put(skill_desc(n, d, "")).await;
    }
    let a = env
        .agent_with("big", "all", "none", |c| c.catalog_budget = 200)
        .await;
    let mut msg = "lorem ipsum kubernetes apresente ".repeat(32_000);
    msg.push_str("um presente");
    assert!(msg.len() >= 1_000_000);
    let start = std::time::Instant::now();
    let t = env.turn(&a, "s", &msg).await;
    assert_eq!(activated(&t), pairs(&[("gift", "trigger:presente")]));
    assert!(t.report.catalog.ranked);
    assert!(
        t.report
            .catalog
            .full
            .iter()
            .any(|n| n == "kubernetes-deploy")
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    // Nothing of the message is echoed into the events.
    let events = env
        .store
        .events(&EventFilter {
            session: Some("s".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert!(events.iter().all(|e| e.data.to_string().len() < 100_000));
    let hits = env.rt.search(&a, &msg, 5).await.unwrap();
    assert!(!hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_and_companion_units_are_each_reported_once() {
    // Two triggered skills share a companion; the first unit does not fit, the second does.
    let env = Env::new().await;
    env.put(
        Bundle::single(text(
            "big",
            "A big one. Use when asked about big.",
            "triggers: [big]\ncompanions: [shared-part]\n",
            &"lots of words here ".repeat(200),
        ))
        .unwrap(),
    )
    .await;
    env.put(skill(
        "small",
        "triggers: [small]\ncompanions: [shared-part]\n",
    ))
    .await;
    env.put(skill("shared-part", "triggers: [part]\n")).await;
    env.put(skill("rest", "")).await;
    let a = env.agent("x", "all", "none").await;
    let view = env.rt.view(&a).unwrap();
    let tok = |n: &str| view.get(n).unwrap().wrapped().1;
    let budget = tok("small") + tok("shared-part") + 2;
    assert!(tok("big") > budget);
    let opts = TurnOptions {
        context_budget: Some(budget),
        ..TurnOptions::default()
    };
    let t = env
        .turn_with(&a, "s", "big then small then part", &opts)
        .await;
    assert_eq!(
        activated(&t),
        pairs(&[
            ("small", "trigger:small"),
            ("shared-part", "companion:small")
        ])
    );
    assert_eq!(names_of(&t.report.evicted), ["big"]);
    assert_eq!(t.report.catalog.full, ["rest"]);
}
