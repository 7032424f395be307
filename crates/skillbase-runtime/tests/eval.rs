//! Routing evaluation over an index made in memory: the figures each case contributes.

use skillbase_runtime::eval::{EvalCase, evaluate, parse_cases};
use skillbase_runtime::turn::TurnOptions;
use skillbase_runtime::view::AgentView;
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
    AgentView::build(agent, &Index::from_entries(entries, 1))
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
