//! Triggers and companions: what a message activates for one turn.

use super::*;

// ---------------------------------------------------------------------------------------------
// 3. Triggers.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_fire_on_whole_words_folded_and_only_this_turn() {
    let env = Env::new().await;
    env.put(skill("gift", "triggers: [presente, Crème Brûlée]\n"))
        .await;
    env.put(skill(
        "cpp",
        "triggers: ['c++', 'a.b*(c)', '[x]?', '^end$']\n",
    ))
    .await;
    env.put(skill("other", "")).await;
    let a = env.agent("shop", "all", "none").await;

    let fires = |ctx: &TurnContext, name: &str| -> Option<String> {
        ctx.report
            .activated
            .iter()
            .find(|x| x.name == name)
            .map(|x| x.reason.clone())
    };
    for msg in [
        "quero um presente",
        "um presénte",
        "UM PRESENTE!",
        "presente",
        "(presente)",
    ] {
        let ctx = env.turn(&a, "s-fire", msg).await;
        assert_eq!(
            fires(&ctx, "gift").as_deref(),
            Some("trigger:presente"),
            "{msg}"
        );
    }
    for msg in ["apresente isto", "presentes", "presenteado", "pre sente"] {
        let ctx = env.turn(&a, "s-no", msg).await;
        assert_eq!(fires(&ctx, "gift"), None, "{msg}");
        assert!(listed(&ctx, "gift"), "{msg}");
    }
    // The reason names the phrase as written.
    let ctx = env.turn(&a, "s-creme", "a CREME   brulee, please").await;
    assert_eq!(fires(&ctx, "gift").as_deref(), Some("trigger:Crème Brûlée"));

    // Injected this turn only: next turn without the word, not injected (and back in the catalog).
    let t1 = env.turn(&a, "s-seq", "um presente para ela").await;
    assert!(t1.injected.as_deref().unwrap().contains("BODY-gift"));
    assert!(t1.prefix.is_none());
    assert!(!listed(&t1, "gift"));
    // Still loadable: loading it keeps it for the rest of the session (pinned), beyond this turn.
    assert!(enum_names(&t1).unwrap().contains(&"gift".to_owned()));
    assert!(t1.report.tokens.injected > 0);
    let t2 = env.turn(&a, "s-seq", "obrigado").await;
    assert!(t2.injected.is_none());
    assert!(t2.report.activated.is_empty());
    assert!(listed(&t2, "gift"));
    assert!(enum_names(&t2).unwrap().contains(&"gift".to_owned()));
    assert_eq!(t2.report.tokens.injected, 0);

    // Regex-looking triggers are literal.
    let ctx = env.turn(&a, "s-re", "help with c++ code").await;
    assert_eq!(fires(&ctx, "cpp").as_deref(), Some("trigger:c++"));
    let ctx = env.turn(&a, "s-re", "literal a.b*(c) here").await;
    assert_eq!(fires(&ctx, "cpp").as_deref(), Some("trigger:a.b*(c)"));
    let ctx = env.turn(&a, "s-re", "is [x]? here").await;
    assert_eq!(fires(&ctx, "cpp").as_deref(), Some("trigger:[x]?"));
    for msg in ["axb c", "abbbc", "x", "c", "end", "the end", "cxx"] {
        let ctx = env.turn(&a, "s-re", msg).await;
        assert_eq!(fires(&ctx, "cpp"), None, "{msg}");
    }

    // Triggers of only punctuation cannot even be stored.
    for t in ["'!!!'", "'...'", "'?!'", "'***'"] {
        let e = env
            .store
            .put(req(
                Scope::Shared,
                skill("punct", &format!("triggers: [{t}]\n")),
            ))
            .await
            .unwrap_err();
        assert!(
            matches!(e, StoreError::InvalidSkill(ref m) if m.contains("no letters or digits")),
            "{t}: {e}"
        );
    }
    assert!(env.rt.view(&a).unwrap().get("punct").is_none());
}

// ---------------------------------------------------------------------------------------------
// 4. Companions.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn companions_travel_one_level_deep_within_the_allowlist() {
    let env = Env::new().await;
    env.put(skill("a", "triggers: [alpha]\ncompanions: [b, secret]\n"))
        .await;
    env.put(skill("b", "companions: [c]\n")).await;
    env.put(skill("c", "")).await;
    env.put(skill("e", "companions: [b]\n")).await;
    env.put(skill("secret", "")).await;

    // With a trigger.
    let x = env.agent("x", "a, b, c", "none").await;
    let view = env.rt.view(&x).unwrap();
    assert_eq!(
        view.companions_not_allowed,
        [("a".to_owned(), "secret".to_owned())]
    );
    let t = env.turn(&x, "s-trig", "alpha please").await;
    assert_eq!(
        activated(&t),
        pairs(&[("a", "trigger:alpha"), ("b", "companion:a")])
    );
    let injected = t.injected.clone().unwrap();
    assert!(injected.contains("BODY-a") && injected.contains("BODY-b"));
    assert!(
        !injected.contains("BODY-c"),
        "a companion's companion does not come"
    );
    assert!(
        !injected.contains("BODY-secret"),
        "never outside the allowlist"
    );
    assert_eq!(t.report.catalog.full, ["c"]);
    // Injected this turn, yet loadable (to keep them for the session); never `secret`.
    assert_eq!(enum_names(&t).unwrap(), ["a", "b", "c"]);

    // With load_skill.
    let l = load_via(&env.rt, &x, "s-load", "a", None).await.unwrap();
    let got: Vec<(String, String)> = l
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect();
    assert_eq!(got, pairs(&[("a", "load"), ("b", "companion:a")]));
    assert!(l.content.contains("BODY-a") && l.content.contains("BODY-b"));
    assert!(l.content.contains("companion_of=\"a\""));
    assert!(!l.content.contains("BODY-c") && !l.content.contains("BODY-secret"));
    // Loading the companion itself later brings its own companion (one level from *it*).
    let l = load_via(&env.rt, &x, "s-load", "b", None).await.unwrap();
    assert!(l.already_active, "b came with a: {l:#?}");
    let l = load_via(&env.rt, &x, "s-load2", "b", None).await.unwrap();
    let got: Vec<(String, String)> = l
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect();
    assert_eq!(got, pairs(&[("b", "load"), ("c", "companion:b")]));

    // With an eager skill: the companion joins the prefix.
    let y = env.agent("y", "e, b, c", "e").await;
    let t = env.turn(&y, "s-eager", "hi").await;
    assert_eq!(
        activated(&t),
        pairs(&[("e", "eager"), ("b", "companion:e")])
    );
    let prefix = t.prefix.clone().unwrap();
    assert!(prefix.contains("BODY-e") && prefix.contains("BODY-b") && !prefix.contains("BODY-c"));
    assert!(t.injected.is_none());
    // The eager skill itself is never loadable; its companion is not eager.
    assert_eq!(enum_names(&t).unwrap(), ["b", "c"]);
    // A companion that is also triggered is not injected twice.
    env.put(skill("b", "companions: [c]\ntriggers: [bee]\n"))
        .await;
    let t = env.turn(&y, "s-eager", "bee").await;
    assert_eq!(
        activated(&t),
        pairs(&[("e", "eager"), ("b", "companion:e")])
    );
    assert!(t.injected.is_none());
}

/// `when_not_to_use`: a phrase in the message keeps the skill's triggers from firing (reported
/// as suppressed, same message same result) and lowers its rank; `when_to_use` is ranking text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_not_to_use_suppresses_triggers_and_lowers_the_rank() {
    let env = Env::new().await;
    env.put(skill(
        "refund",
        "triggers: [refund]\nwhen_not_to_use: [chargeback dispute]\nwhen_to_use: [the customer wants their money returned]\n",
    ))
    .await;
    env.put(skill(
        "dispute",
        "when_to_use: [a bank chargeback dispute about a refund]\n",
    ))
    .await;
    for i in 0..30 {
        env.put(skill(&format!("filler-{i}"), "")).await;
    }
    let a = env
        .agent_with("desk", "all", "none", |c| c.catalog_budget = 200)
        .await;

    let t = env.turn(&a, "s1", "please refund order 7").await;
    assert_eq!(t.report.activated[0].reason, "trigger:refund");
    assert!(t.report.suppressed.is_empty());

    for _ in 0..2 {
        let t = env
            .turn(&a, "s2", "the refund turned into a chargeback dispute")
            .await;
        assert!(t.report.activated.iter().all(|x| x.name != "refund"));
        assert_eq!(t.report.suppressed.len(), 1);
        assert_eq!(
            t.report.suppressed[0].reason,
            "trigger:refund suppressed: the message holds when_not_to_use 'chargeback dispute'"
        );
        // Ranked: the look-alike comes first, the suppressed skill below it.
        assert!(t.report.catalog.ranked);
        let shown: Vec<&str> = t
            .report
            .catalog
            .shown
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(shown.first(), Some(&"dispute"), "{shown:?}");
        assert_eq!(t.report.catalog.stages.as_deref(), Some("lexical"));
    }
    // `when_to_use` words rank a skill whose description lacks them.
    let hits = env.rt.search(&a, "their money returned", 3).await.unwrap();
    assert_eq!(hits[0].name, "refund");
}
