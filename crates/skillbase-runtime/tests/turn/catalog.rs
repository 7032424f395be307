//! The catalog: the rest of the view, ranked and truncated within the budget, and cadence.

use super::*;

// ---------------------------------------------------------------------------------------------
// 5. The catalog.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_lists_the_rest_with_description_and_triggers() {
    let env = Env::new().await;
    env.put(skill_desc(
        "refund",
        "Refunds an order <fully> & safely. Use when asked for a refund.",
        "triggers: [refund, money back]\n",
    ))
    .await;
    env.put(skill("notes", "")).await;
    env.put(skill("hidden", "")).await;
    let a = env.agent("support", "refund, notes", "none").await;
    let t = env.turn(&a, "s", "hello there").await;
    let c = catalog(&t);
    assert!(c.contains("<available_skills>\n") && c.contains("</available_skills>"));
    assert!(c.contains("call load_skill"));
    assert!(c.contains(
        "<skill><name>refund</name><description>Refunds an order &lt;fully&gt; &amp; safely. Use when asked for a refund.</description><triggers>refund, money back</triggers></skill>"
    ), "{c}");
    assert!(c.contains("<skill><name>notes</name><description>Does notes things."));
    assert!(!c.contains("<name>notes</name><description>Does notes things. Use when asked about notes.</description><triggers>"));
    assert!(!listed(&t, "hidden"));
    assert!(!c.contains("search_skills"));
    assert!(!t.report.catalog.ranked);
    assert_eq!(t.report.catalog.full, ["notes", "refund"]);
    assert!(t.report.catalog.name_only.is_empty() && t.report.catalog.omitted.is_empty());
    // The catalog's one tool, and the run's end the engine offers beside it.
    assert_eq!(tool_names(&t), ["load_skill", "skill_finish"]);
    assert_eq!(enum_names(&t).unwrap(), ["notes", "refund"]);
    let p = &t.tools[0].parameters;
    assert_eq!(p["required"], json!(["name"]));
    assert_eq!(p["additionalProperties"], json!(false));
    assert!(t.report.catalog.tokens > 0 && t.report.catalog.tokens <= t.report.catalog.budget);
    assert_eq!(
        t.report.catalog.budget,
        skillbase_store::model::DEFAULT_CATALOG_BUDGET
    );

    // Same input, same output: the preview shows what the turn showed, before the tools the
    // engine offers beside the catalog's.
    let again = env
        .resolve(&a, "hello there", &TurnOptions::default())
        .unwrap();
    assert_eq!(again.catalog, t.catalog);
    assert_eq!(again.report.catalog, t.report.catalog);
    assert_eq!(again.report.activated, t.report.activated);
    assert_eq!(again.tools[..], t.tools[..again.tools.len()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflowing_catalog_is_ranked_truncated_and_never_silent() {
    let env = Env::new().await;
    for (n, d) in TOPICS {
        env.put(skill_desc(n, d, "")).await;
    }
    let a = env
        .agent_with("big", "all", "none", |c| c.catalog_budget = 300)
        .await;
    let msg = "please deploy the new version to our kubernetes cluster with helm";
    let mut every: Vec<String> = TOPICS.iter().map(|(n, _)| (*n).to_owned()).collect();
    every.sort();
    // Sweep the budget: the invariants hold at every size, and some sizes show all three tiers.
    let (mut saw_name_only, mut saw_all_tiers, mut saw_unranked) = (false, false, false);
    for budget in (100..=1200).step_by(10) {
        let opts = TurnOptions {
            catalog_budget: Some(budget),
            ..TurnOptions::default()
        };
        let t = env.resolve(&a, msg, &opts).unwrap();
        env.check_accounted(&a, &t.report);
        let r = &t.report;
        if !r.catalog.ranked {
            // Everything fits: no ranking, no search.
            assert_eq!(r.catalog.full, every, "{budget}");
            assert!(!catalog(&t).contains("search_skills"));
            assert_eq!(tool_names(&t), ["load_skill"]);
            saw_unranked = true;
            continue;
        }
        assert!(!saw_unranked, "a larger budget never ranks again");
        assert_eq!(r.catalog.budget, budget);
        assert!(r.catalog.tokens <= budget, "{budget}: {r:#?}");
        assert!(r.catalog.full.len() < TOPICS.len());
        let c = catalog(&t);
        if !r.catalog.full.is_empty() {
            assert!(
                r.catalog.full.iter().any(|n| n == "kubernetes-deploy"),
                "the most relevant is shown in full first: {budget}: {r:#?}"
            );
            assert!(
                c.contains("<skill><name>kubernetes-deploy</name><description>Deploys services")
            );
        }
        for n in &r.catalog.full {
            assert!(
                c.contains(&format!("<skill><name>{n}</name><description>")),
                "{n}"
            );
        }
        for o in &r.catalog.name_only {
            assert!(
                c.contains(&format!("<skill><name>{}</name></skill>", o.name)),
                "{o:?}"
            );
            assert!(
                o.reason.contains("name only") && o.reason.contains("relevance rank"),
                "{o:?}"
            );
        }
        for o in &r.catalog.omitted {
            assert!(!listed(&t, &o.name), "{o:?}");
            assert!(
                o.reason.contains("search_skills") && o.reason.contains("relevance rank"),
                "{o:?}"
            );
        }
        // The full entries are the top of the ranking.
        let ranks: Vec<usize> = r
            .catalog
            .name_only
            .iter()
            .chain(&r.catalog.omitted)
            .map(|o| {
                o.rank.expect(
                    "a ranked catalog gives every listed-by-name or left-out skill its rank",
                )
            })
            .collect();
        assert!(
            ranks.iter().all(|&k| k > r.catalog.full.len()),
            "everything not in full ranks below the full entries: {ranks:?}"
        );
        if c.is_empty() {
            assert!(t.catalog.is_none());
        } else {
            assert!(c.contains("call search_skills"), "{budget}");
        }
        assert_eq!(tool_names(&t), ["load_skill", "search_skills"]);
        assert_eq!(
            enum_names(&t).unwrap(),
            every,
            "skills not listed stay loadable"
        );
        assert_eq!(
            r.tokens.total,
            r.tokens.eager + r.tokens.injected + r.tokens.catalog + r.tokens.tools
        );
        saw_name_only |= !r.catalog.name_only.is_empty();
        saw_all_tiers |= !r.catalog.full.is_empty()
            && !r.catalog.name_only.is_empty()
            && !r.catalog.omitted.is_empty();
    }
    assert!(saw_name_only && saw_all_tiers && saw_unranked);

    // The recorded turn, at the agent's own budget.
    let t = env.turn(&a, "s", msg).await;
    assert!(t.report.catalog.ranked);
    assert_eq!(t.report.catalog.budget, 300);
    assert!(
        t.report
            .catalog
            .full
            .iter()
            .any(|n| n == "kubernetes-deploy")
    );

    // A different message ranks a different skill first.
    let t = env
        .turn(&a, "s", "review this SQL migration for locks")
        .await;
    assert!(t.report.catalog.full.iter().any(|n| n == "sql-review"));

    // search_skills finds what the catalog left out.
    let hits = env.rt.search(&a, "kubernetes helm", 5).await.unwrap();
    assert_eq!(hits[0].name, "kubernetes-deploy");
    assert!(hits.len() <= 5);
    // Each hit with its confidence: best first, together less than 1 ("none" is the rest).
    assert!(hits.windows(2).all(|w| w[0].confidence >= w[1].confidence));
    assert!(hits[0].confidence > 0.0 && hits.iter().map(|h| h.confidence).sum::<f64>() < 1.0);
    // The tool's answer carries it, as the model reads it.
    let o = env
        .rt
        .call(
            &a,
            "s",
            "search_skills",
            json!({"query": "kubernetes helm", "limit": 3}),
            skillbase_runtime::CallMode::Wait,
        )
        .await
        .unwrap();
    let skillbase_runtime::CallOutcome::Done { result, .. } = o else {
        panic!("{o:?}")
    };
    assert_eq!(result[0]["name"], "kubernetes-deploy");
    assert_eq!(result[0]["confidence"].as_f64(), Some(hits[0].confidence));
    // The ranked catalog's entries carry theirs, best first.
    let shown = &t.report.catalog.shown;
    assert!(!shown.is_empty());
    assert!(shown.iter().all(|r| (0.0..=1.0).contains(&r.confidence)));
    assert!(shown.windows(2).all(|w| w[0].confidence >= w[1].confidence));
    let json = serde_json::to_value(&t.report).unwrap();
    assert!(
        json["catalog"]["shown"][0]["confidence"].is_number(),
        "{json}"
    );
    assert!(env.rt.search(&a, "zzzz qqqq", 5).await.unwrap().is_empty());
    assert_eq!(
        env.rt.search(&a, "review", 0).await.unwrap().len(),
        1,
        "limit clamps to 1"
    );
    assert!(env.rt.search(&a, "review", 100).await.unwrap().len() <= 20);

    // A budget too small for even the catalog's frame: nothing listed, every skill reported.
    let t = env
        .turn_with(
            &a,
            "s",
            msg,
            &TurnOptions {
                catalog_budget: Some(5),
                ..TurnOptions::default()
            },
        )
        .await;
    assert!(t.report.catalog.full.is_empty() && t.report.catalog.name_only.is_empty());
    assert_eq!(t.report.catalog.omitted.len(), TOPICS.len());
    assert!(tool_names(&t).contains(&"search_skills"));
    assert_eq!(enum_names(&t).unwrap().len(), TOPICS.len());
}

// ---------------------------------------------------------------------------------------------
// 9. Cadence.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_leaves_slower_skills_out_with_the_reason() {
    let env = Env::new().await;
    env.put(skill("fast", "")).await;
    env.put(skill("medium", "cost: seconds\n")).await;
    env.put(skill("slow", "cost: tens_of_seconds\n")).await;
    let a = env.agent("loop", "all", "none").await;
    let opts = |c: Option<Cost>| TurnOptions {
        max_cost: c,
        ..TurnOptions::default()
    };

    let t = env.turn_with(&a, "s", "go", &opts(None)).await;
    assert_eq!(enum_names(&t).unwrap(), ["fast", "medium", "slow"]);
    assert!(t.report.catalog.omitted.is_empty());

    let t = env
        .turn_with(&a, "s", "go", &opts(Some(Cost::Immediate)))
        .await;
    assert_eq!(enum_names(&t).unwrap(), ["fast"]);
    assert_eq!(t.report.catalog.full, ["fast"]);
    assert!(!listed(&t, "medium") && !listed(&t, "slow"));
    assert_eq!(sorted(omitted_names(&t.report)), ["medium", "slow"]);
    for o in &t.report.catalog.omitted {
        assert!(
            o.reason.starts_with("cost:") && o.reason.contains("immediate"),
            "{o:?}"
        );
    }
    let slow = t
        .report
        .catalog
        .omitted
        .iter()
        .find(|o| o.name == "slow")
        .unwrap();
    assert!(slow.reason.contains("tens_of_seconds"), "{slow:?}");
    assert!(!t.report.catalog.ranked);
    assert_eq!(
        tool_names(&t),
        ["load_skill", "skill_finish"],
        "no search_skills for a cadence cut"
    );

    let t = env
        .turn_with(&a, "s", "go", &opts(Some(Cost::Seconds)))
        .await;
    assert_eq!(enum_names(&t).unwrap(), ["fast", "medium"]);
    assert_eq!(omitted_names(&t.report), ["slow"]);

    let t = env
        .turn_with(&a, "s", "go", &opts(Some(Cost::TensOfSeconds)))
        .await;
    assert_eq!(enum_names(&t).unwrap(), ["fast", "medium", "slow"]);

    // Only slow skills: no catalog, no tools, all reported.
    let b = env.agent("slow-only", "medium, slow", "none").await;
    let t = env
        .turn_with(&b, "s-b", "go", &opts(Some(Cost::Immediate)))
        .await;
    assert!(t.catalog.is_none() && catalog_tools(&t).is_empty());
    assert_eq!(sorted(omitted_names(&t.report)), ["medium", "slow"]);
}
