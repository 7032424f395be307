//! The agent's view and the eager skills.

use super::*;

// ---------------------------------------------------------------------------------------------
// 1. The agent's view.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_is_allowlist_and_scope_active_only_and_follows_changes() {
    let env = Env::new().await;
    let support = env
        .agent("support", "alpha, beta, gamma, ops-only", "none")
        .await;
    let ops = env.agent("ops", "all", "none").await;
    for n in ["alpha", "beta", "gamma", "secret"] {
        env.put(skill(n, "")).await;
    }
    // The agent's own `beta` overrides the shared one; another agent's skill is invisible.
    env.put_in(
        Scope::Agent(support.clone()),
        Bundle::single(text(
            "beta",
            "Support's own beta. Use when asked about beta.",
            "",
            "BODY-beta-own",
        ))
        .unwrap(),
    )
    .await;
    env.put_in(Scope::Agent(ops.clone()), skill("ops-only", ""))
        .await;

    let view = env.rt.view(&support).unwrap();
    let names: Vec<&str> = view.skills.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma"]);
    let beta = view.get("beta").unwrap();
    assert_eq!(beta.entry.scope, Scope::Agent(support.clone()));
    assert_eq!(beta.entry.body, "BODY-beta-own");
    assert!(
        Arc::ptr_eq(&view, &env.rt.view(&support).unwrap()),
        "cached while nothing changes"
    );
    let ops_view = env.rt.view(&ops).unwrap();
    let ops_names: Vec<&str> = ops_view.skills.iter().map(|s| s.name()).collect();
    assert_eq!(ops_names, ["alpha", "beta", "gamma", "ops-only", "secret"]);

    let t1 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t1).unwrap(), ["alpha", "beta", "gamma"]);
    assert!(
        catalog(&t1).contains("Support&#x27;s own beta")
            || catalog(&t1).contains("Support's own beta")
    );
    assert!(!listed(&t1, "secret") && !listed(&t1, "ops-only"));

    // A disabled skill disappears on the next turn.
    env.store
        .set_status(
            &Scope::Shared,
            "gamma",
            StatusChange::Disable,
            &Author::Human("tester".into()),
            json!({}),
        )
        .await
        .unwrap();
    assert!(!Arc::ptr_eq(&view, &env.rt.view(&support).unwrap()));
    let t2 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t2).unwrap(), ["alpha", "beta"]);
    assert!(!listed(&t2, "gamma"));

    // So does a retired one.
    env.store
        .set_status(
            &Scope::Shared,
            "alpha",
            StatusChange::Retire,
            &Author::Human("tester".into()),
            json!({}),
        )
        .await
        .unwrap();
    let t3 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t3).unwrap(), ["beta"]);

    // A changed allowlist shows up on the next turn.
    env.agent("support", "beta, gamma, secret", "none").await;
    let t4 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t4).unwrap(), ["beta", "secret"]);

    // Re-enabling brings it back.
    env.store
        .set_status(
            &Scope::Shared,
            "gamma",
            StatusChange::Enable,
            &Author::Human("tester".into()),
            json!({}),
        )
        .await
        .unwrap();
    let t5 = env.turn(&support, "s1", "hello").await;
    assert_eq!(enum_names(&t5).unwrap(), ["beta", "gamma", "secret"]);

    // An agent that may see nothing gets neither catalog nor tools.
    let none = env.agent("nobody-allowed", "none", "none").await;
    let t = env.turn(&none, "s2", "hello").await;
    assert!(t.catalog.is_none() && t.tools.is_empty() && t.prefix.is_none());
    assert_eq!(t.report.tokens.total, 0);
}

// ---------------------------------------------------------------------------------------------
// 2. Eager skills.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eager_skills_are_the_prefix_every_turn_and_nowhere_else() {
    let env = Env::new().await;
    for n in ["policy", "proc", "ghost"] {
        env.put(skill(n, "")).await;
    }
    let a = env.agent("support", "policy, proc", "policy, ghost").await;
    let t1 = env.turn(&a, "s", "first message").await;
    let t2 = env.turn(&a, "s", "a different message entirely").await;
    let prefix = t1.prefix.clone().unwrap();
    assert!(prefix.contains("BODY-policy"));
    assert!(prefix.contains("<skill_content name=\"policy\" revision=\"1\">"));
    assert_eq!(t1.prefix, t2.prefix, "the prefix is the same every turn");
    assert_eq!(activated(&t1), pairs(&[("policy", "eager")]));
    assert_eq!(activated(&t2), pairs(&[("policy", "eager")]));
    assert!(!listed(&t1, "policy"), "not in the catalog");
    assert_eq!(enum_names(&t1).unwrap(), ["proc"], "not in the enum");
    assert!(t1.injected.is_none());
    // A non-allowed eager name is a no-op, and reported.
    assert_eq!(t1.report.eager_not_allowed, ["ghost"]);
    assert!(!prefix.contains("BODY-ghost"));
    assert!(!listed(&t1, "ghost"));
    // load_skill refuses an eager skill.
    let e = load_via(&env.rt, &a, "s", "policy", None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, RuntimeError::Eager(ref n) if n == "policy"),
        "{e}"
    );
    assert!(e.to_string().contains("already in your context"), "{e}");

    // eager = all: nothing left to load.
    let b = env.agent("all-eager", "policy, proc", "all").await;
    let t = env.turn(&b, "s-b", "hi").await;
    assert!(t.catalog.is_none(), "no catalog when nothing is loadable");
    assert!(
        catalog_tools(&t).is_empty(),
        "no load_skill when nothing is loadable"
    );
    assert_eq!(t.report.tokens.catalog, 0);
    // The catalog's tools cost nothing (the engine's own, such as skill_finish, are counted apart).
    let preview = env.resolve(&b, "hi", &TurnOptions::default()).unwrap();
    assert_eq!(preview.report.tokens.tools, 0);
    assert_eq!(
        activated(&t),
        pairs(&[("policy", "eager"), ("proc", "eager")])
    );
}
