//! Routing evaluation over an index made in memory: the figures each case contributes.

use skillbase_insight::eval::{EvalCase, Progress, evaluate, evaluate_observed, parse_cases};
use skillbase_runtime::AgentView;
use skillbase_runtime::TurnOptions;
use skillbase_store::{Agent, AgentConfig, AgentName, Index, NameSet, Scope, SkillEntry};
use std::sync::Arc;

fn view(catalog_budget: u32) -> AgentView {
    let skills = [
        "---\nname: refund-order\ndescription: Refund a customer's order payment.\ntriggers:\n  - money back\n---\nRefund it.",
        "---\nname: cancel-order\ndescription: Cancel an order before it ships.\n---\nCancel it.",
        "---\nname: deploy-app\ndescription: Deploy the application to production.\ntriggers:\n  - ship it\n---\nDeploy.",
    ];
    let entries = skills
        .iter()
        .map(|t| SkillEntry::from_skill_md(Scope::Shared, t, "human:test").unwrap())
        .collect::<Vec<_>>();
    let agent = Arc::new(Agent {
        name: AgentName::parse("eval").unwrap(),
        config: AgentConfig {
            skills: NameSet::All,
            catalog_budget,
            ..AgentConfig::default()
        },
        version: 1,
    });
    AgentView::build(
        agent,
        &Index::from_entries(entries, 1),
        &skillbase_runtime::Environment::builtins(),
    )
}

fn case(message: &str, expected: Option<&str>, kind: &str) -> EvalCase {
    EvalCase {
        message: message.into(),
        expected: expected.map(Into::into),
        kind: Some(kind.into()),
        lang: Some("en".into()),
    }
}

#[test]
fn each_case_counts_where_it_should() {
    let cases = vec![
        // The trigger injects it: first, and visible.
        case("I want my money back", Some("refund-order"), "trigger"),
        // Lexical: cancel-order first.
        case("please cancel the order", Some("cancel-order"), "direct"),
        // No shared word at all: not ranked.
        case("stop the parcel", Some("cancel-order"), "paraphrase"),
        // A trigger fires on a message labelled for no skill: a false trigger.
        case("ship it to my aunt", None, "no_skill"),
        // A skill this agent does not see.
        case("anything", Some("ghost-skill"), "direct"),
    ];
    let r = evaluate(&view(4000), &cases, &TurnOptions::default());
    assert_eq!(r.skills, 3);
    assert_eq!(r.overall.cases, 5);
    assert_eq!(r.overall.labelled, 4);
    assert_eq!(r.outcomes[0].rank, Some(1));
    assert!(r.outcomes[0].visible);
    assert_eq!(r.outcomes[1].rank, Some(1));
    assert_eq!(r.outcomes[2].rank, None);
    assert_eq!(
        r.outcomes[3].false_triggers,
        vec![("deploy-app".into(), "ship it".into())]
    );
    assert_eq!(r.overall.recall_at_1, 0.5);
    assert_eq!(r.overall.false_triggers, 1);
    assert_eq!(r.by_kind["direct"].labelled, 2);
    assert_eq!(r.by_kind["direct"].recall_at_1, 0.5);
    assert_eq!(r.unknown_expected, vec!["ghost-skill".to_owned()]);
    assert_eq!(r.stray_triggers[0].skill, "deploy-app");
    // Everything fits the default budget: every skill is listed in full, so visible.
    assert_eq!(r.by_kind["direct"].visible, 0.5);
    // Under a budget too small for any full entry, a lexical hit is ranked but not visible.
    let tight = evaluate(&view(5), &cases[1..2], &TurnOptions::default());
    assert_eq!(tight.outcomes[0].rank, Some(1));
    assert!(!tight.outcomes[0].visible);
}

#[test]
fn each_case_has_a_confidence_and_the_report_its_calibration() {
    let cases = vec![
        case("please cancel the order", Some("cancel-order"), "direct"),
        case(
            "refund the order payment now",
            Some("cancel-order"),
            "lookalike",
        ),
        // Nothing scores: no first skill, a confidence of 0, declined.
        case("hello there", None, "no_skill"),
    ];
    let r = evaluate(&view(4000), &cases, &TurnOptions::default());
    let conf: Vec<f64> = r.outcomes.iter().map(|o| o.confidence).collect();
    assert!(conf[0] > 0.0 && conf[0] <= 1.0, "{conf:?}");
    assert!(conf[1] > 0.0 && conf[1] <= 1.0, "{conf:?}");
    assert_eq!(conf[2], 0.0);
    // The fit reads every case: the expected skill's place among the logits, or none.
    assert_eq!(r.outcomes[0].fit.label, Some(0));
    assert_eq!(r.outcomes[1].fit.label, Some(1));
    assert_eq!(r.outcomes[2].fit.label, None);
    assert!(r.outcomes.iter().all(|o| o.fit.n == 3 && !o.fit.fused));
    let c = &r.calibration;
    assert_eq!((c.cases, c.no_skill, c.no_skill_declined), (3, 1, 1));
    assert_eq!(c.right_first, 1);
    assert!(
        c.ece >= 0.0 && c.ece <= 1.0 && c.brier >= 0.0 && c.brier <= 1.0,
        "{c:?}"
    );
    assert!((0.0..=1.0).contains(&c.auroc), "{c:?}");
    // As JSON: a confidence per case, the calibration section, the fit's data left out.
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["outcomes"][0]["confidence"].is_number(), "{json}");
    assert!(json["outcomes"][0].get("fit").is_none());
    for key in [
        "ece",
        "auroc",
        "brier",
        "threshold",
        "no_skill_declined",
        "right_first_kept",
    ] {
        assert!(json["calibration"][key].is_number(), "{key}: {json}");
    }
    // Fitted on these cases, the constants do at least as well as the built-in ones.
    let fits: Vec<_> = r.outcomes.iter().map(|o| o.fit.clone()).collect();
    let f = skillbase_insight::calibration::fit(&fits);
    assert_eq!((f.cases, f.fused), (3, false));
    assert!(f.log_loss <= f.built_in_log_loss, "{f:?}");
}

#[test]
fn a_confused_pair_is_reported() {
    let cases = vec![case(
        "refund the order payment now",
        Some("cancel-order"),
        "lookalike",
    )];
    let r = evaluate(&view(4000), &cases, &TurnOptions::default());
    assert_eq!(r.confused.len(), 1);
    assert_eq!(
        (r.confused[0].expected.as_str(), r.confused[0].got.as_str()),
        ("cancel-order", "refund-order")
    );
    assert!(parse_cases("{\"message\": 1, \"expected\": null}").is_err());
}

#[test]
fn progress_counts_every_case_and_a_stop_ends_the_evaluation() {
    let v = view(4000);
    let opts = TurnOptions::default();
    let cases: Vec<EvalCase> = (0..300)
        .map(|i| match i % 3 {
            0 => case("I want my money back", Some("refund-order"), "trigger"),
            1 => case("please cancel the order", Some("cancel-order"), "direct"),
            _ => case("hello there", None, "no_skill"),
        })
        .collect();
    // Watched: every case counted, the same report as unwatched.
    let progress = Progress::default();
    assert_eq!(progress.done(), 0);
    let watched = evaluate_observed(&v, &cases, &opts, None, &progress).expect("not stopped");
    assert_eq!(progress.done(), cases.len());
    assert_eq!(watched, evaluate(&v, &cases, &opts));
    // Stopped before it starts: no case run, no report.
    let stopped = Progress::default();
    stopped.stop();
    assert_eq!(evaluate_observed(&v, &cases, &opts, None, &stopped), None);
    assert_eq!(stopped.done(), 0);
    // Stopped from another thread while it runs: it ends after the case it is on.
    let many: Vec<EvalCase> = cases.iter().cycle().take(100_000).cloned().collect();
    let progress = Progress::default();
    let report = std::thread::scope(|s| {
        s.spawn(|| {
            while progress.done() == 0 {
                std::hint::spin_loop();
            }
            progress.stop();
        });
        evaluate_observed(&v, &many, &opts, None, &progress)
    });
    assert_eq!(report, None);
    assert!(
        (1..many.len()).contains(&progress.done()),
        "{} of {}",
        progress.done(),
        many.len()
    );
}

#[test]
fn graded_tasks_run_through_the_same_routing_order() {
    use skillbase_insight::eval::{SkipReason, evaluate_graded, parse_graded};
    let tasks = [
        // The trigger puts refund-order first: hit.
        r#"{"task_id": "money", "instruction_text": "I want my money back"}"#,
        // Lexical: cancel-order first, deploy-app (graded 1) nowhere.
        r#"{"task_id": "cancel", "instruction_text": "please cancel the order"}"#,
        // Its only relevant skill is not the agent's: skipped.
        r#"{"task_id": "ghost", "instruction_text": "anything"}"#,
    ]
    .join("\n");
    let rel = r#"{
        "money": {"gt_skill_ids": ["gt/refund-order"], "relevance": {"gt/refund-order": 3}},
        "cancel": {"gt_skill_ids": ["gt/cancel-order", "gt/deploy-app"],
                   "core_gt_ids": ["gt/cancel-order"],
                   "relevance": {"gt/cancel-order": 3, "gt/deploy-app": 1, "gt/unseen": 3}},
        "ghost": {"gt_skill_ids": ["gt/ghost-skill"], "relevance": {"gt/ghost-skill": 3}}
    }"#;
    let set = parse_graded(&tasks, rel, None).unwrap();
    let r = evaluate_graded(&view(4000), &set, &TurnOptions::default());
    assert_eq!((r.tasks, r.overall.tasks), (3, 2));
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.skipped[0].reason, SkipReason::NoRelevantSkill);
    assert_eq!(r.skipped_by_reason["no_relevant_skill"], 1);
    assert_eq!(r.outcomes[0].top[0], "refund-order");
    assert_eq!(r.outcomes[0].metrics.ndcg_at_10, 1.0);
    // cancel: cancel-order first (3/log2(2)); the ideal counts deploy-app's 1 but not the
    // unseen skill's 3: 3 + 1/log2(3).
    let o = &r.outcomes[1];
    assert_eq!(o.relevant, ["cancel-order"]);
    assert_eq!(o.first_relevant, Some(1));
    assert!(!o.top.contains(&"deploy-app".to_owned()), "{:?}", o.top);
    let want = 3.0 / (3.0 + 1.0 / 3f64.log2());
    assert!((o.metrics.ndcg_at_10 - want).abs() < 1e-9, "{o:?}");
    assert_eq!(r.overall.hit_at_1, 1.0);
    assert_eq!(r.overall.visible, 1.0);
    // Under a budget too small for any full entry, the lexical hit is no longer visible; the
    // triggered one still is.
    let tight = evaluate_graded(&view(5), &set, &TurnOptions::default());
    assert_eq!(tight.overall.visible, 0.5);
    assert_eq!(tight.overall.hit_at_1, 1.0);
}
