//! `requires:` per agent: a skill whose requirements are unmet is offered with the reasons (in
//! the report and in its body) or withheld by the agent's policy; a required skill marked
//! `travel: true` goes along like a companion; the view follows the store and the environment
//! (an upstream server's tools arriving).

use super::*;
use skillbase_runtime::{ToolSource, decls_from_toml};
use skillbase_store::UnmetRequires;

fn versioned(name: &str, version: &str, frontmatter: &str) -> Bundle {
    skill(name, &format!("version: \"{version}\"\n{frontmatter}"))
}

const NEEDS: &str = "triggers: [postage]\nrequires:\n  skills:\n    - name: rates-table\n      version: \"^1.2\"\n  tools: [notes]\n  bins: [sh]\n";

fn unmet_of<'a>(r: &'a TurnReport, name: &str) -> Option<&'a str> {
    r.unmet_requires
        .iter()
        .find(|o| o.name == name)
        .map(|o| &*o.reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmet_skill_is_offered_with_its_reasons_until_they_are_met() {
    let env = Env::new().await;
    env.put(versioned("rates-table", "1.1.0", "")).await;
    env.put(skill("postage", NEEDS)).await;
    env.put(skill("plain", "")).await;
    let a = env
        .agent("shop", "postage, rates-table, plain", "none")
        .await;

    // Catalog and trigger: postage is in front of the model, and the report says what is
    // missing — the version and the class, not the program (sh is on PATH).
    let t = env.turn(&a, "s1", "what does postage cost").await;
    assert!(activated(&t).contains(&("postage".into(), "trigger:postage".into())));
    let why = unmet_of(&t.report, "postage").expect("postage is reported unmet");
    assert!(
        why.contains("requires skill 'rates-table (^1.2)', and this agent sees version 1.1.0")
            && why.contains("requires tool class 'notes', which this agent is not granted")
            && !why.contains("'sh'"),
        "{why}"
    );
    assert_eq!(
        t.report.unmet_requires.len(),
        1,
        "{:?}",
        t.report.unmet_requires
    );
    assert!(t.report.withheld_skills.is_empty());
    // The body says it too, before the procedure.
    let injected = t.injected.as_deref().unwrap();
    assert!(
        injected.contains("<requires_unmet>requires tool class &#x27;notes&#x27;, which this agent is not granted; requires skill &#x27;rates-table (^1.2)&#x27;")
            && injected.find("</requires_unmet>") < injected.find("BODY-postage"),
        "{injected}"
    );
    let json = serde_json::to_value(&t.report).unwrap();
    assert!(json["unmet_requires"][0]["reason"].as_str().is_some());
    // Loaded by the model: the same note.
    let loaded = load_via(&env.rt, &a, "s2", "postage", None).await.unwrap();
    assert!(
        loaded.content.contains("<requires_unmet>"),
        "{}",
        loaded.content
    );

    // Raise the version and grant the class: met, and nothing is reported.
    env.put(versioned("rates-table", "1.2.0", "")).await;
    env.agent_with("shop", "postage, rates-table, plain", "none", |c| {
        c.grants.tools = vec!["notes".into()];
    })
    .await;
    let t = env.turn(&a, "s3", "what does postage cost").await;
    assert!(
        t.report.unmet_requires.is_empty(),
        "{:?}",
        t.report.unmet_requires
    );
    assert!(!t.injected.as_deref().unwrap().contains("<requires_unmet>"));
    assert!(
        serde_json::to_value(&t.report)
            .unwrap()
            .get("unmet_requires")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withheld_skills_reach_the_model_nowhere_and_the_report_says_why() {
    let env = Env::new().await;
    env.put(skill(
        "label-printer",
        "triggers: [print a label]\nrequires:\n  bins: [skillbase-test-no-such-printer]\n",
    ))
    .await;
    // Requires a skill that is withheld: withheld too (to a fixed point).
    env.put(skill(
        "pack-order",
        "triggers: [pack the order]\nrequires:\n  skills: [label-printer]\n",
    ))
    .await;
    // Requires a skill the allowlist leaves out.
    env.put(skill("gift", "requires:\n  skills: [wrapping]\n"))
        .await;
    env.put(skill("wrapping", "")).await;
    env.put(skill("plain", "")).await;
    let a = env
        .agent_with(
            "warehouse",
            "label-printer, pack-order, gift, plain",
            "none",
            |c| {
                c.policies.unmet_requires = UnmetRequires::Withhold;
            },
        )
        .await;
    let t = env
        .turn(&a, "s1", "please print a label and pack the order")
        .await;
    assert!(t.report.activated.is_empty(), "{:?}", t.report.activated);
    assert_eq!(enum_names(&t).unwrap(), ["plain"]);
    assert!(!listed(&t, "label-printer") && !listed(&t, "pack-order") && !listed(&t, "gift"));
    let withheld: BTreeMap<String, String> = t
        .report
        .withheld_skills
        .iter()
        .map(|o| (o.name.to_string(), o.reason.to_string()))
        .collect();
    assert_eq!(
        withheld.keys().collect::<Vec<_>>(),
        ["gift", "label-printer", "pack-order"]
    );
    assert!(
        withheld["label-printer"].contains(
            "the program 'skillbase-test-no-such-printer', which is not on this server's PATH"
        ),
        "{withheld:?}"
    );
    assert!(
        withheld["pack-order"].contains("requires skill 'label-printer', which is withheld"),
        "{withheld:?}"
    );
    assert!(
        withheld["gift"]
            .contains("requires skill 'wrapping', which this agent's allowlist leaves out"),
        "{withheld:?}"
    );
    // Asked for by name anyway: refused, saying why (without quoting the name asked for).
    let e = load_via(&env.rt, &a, "s2", "label-printer", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("withheld from this agent: requires the program"),
        "{e}"
    );
    // Offered under the default policy: the same skills, reasons in the report.
    let b = env
        .agent("front", "label-printer, pack-order, gift, plain", "none")
        .await;
    let t = env.turn(&b, "s3", "please print a label").await;
    assert!(activated(&t).contains(&("label-printer".into(), "trigger:print a label".into())));
    assert!(t.report.withheld_skills.is_empty());
    assert!(unmet_of(&t.report, "label-printer").is_some());
    // pack-order's requirement is visible to this agent: met.
    assert!(
        unmet_of(&t.report, "pack-order").is_none(),
        "{:?}",
        t.report.unmet_requires
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_skill_marked_to_travel_goes_along_like_a_companion() {
    let env = Env::new().await;
    env.put(skill(
        "line-map",
        "triggers: [line map]\nrequires:\n  skills:\n    - name: query-rules\n      travel: true\n    - other-half\n",
    ))
    .await;
    env.put(skill("query-rules", "")).await;
    env.put(skill("other-half", "")).await;
    let a = env
        .agent("searcher", "line-map, query-rules, other-half", "none")
        .await;
    let t = env.turn(&a, "s1", "show the line map").await;
    assert_eq!(
        activated(&t),
        [
            ("line-map".to_owned(), "trigger:line map".to_owned()),
            ("query-rules".to_owned(), "companion:line-map".to_owned()),
        ],
        "only the one marked to travel goes along"
    );
    assert!(t.report.unmet_requires.is_empty());
    let loaded = load_via(&env.rt, &a, "s2", "line-map", None).await.unwrap();
    let names: Vec<&str> = loaded.activated.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["line-map", "query-rules"]);
    // Never widens the allowlist: without it in the list, it does not travel, and is unmet.
    let b = env.agent("narrow", "line-map, other-half", "none").await;
    let t = env.turn(&b, "s3", "show the line map").await;
    assert_eq!(activated(&t).len(), 1);
    assert!(
        unmet_of(&t.report, "line-map")
            .unwrap()
            .contains("requires skill 'query-rules', which this agent's allowlist leaves out")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_requirement_is_met_once_its_tools_are_listed_and_granted() {
    let env = Env::new().await;
    env.put(skill("clock-skill", "requires:\n  mcp: [clock]\n"))
        .await;
    let a = env
        .agent_with("timer", "clock-skill", "none", |c| {
            c.grants.tools = vec!["clock".into()];
        })
        .await;
    let d = &env.rt;
    let t = env.turn(&a, "s1", "what time is it").await;
    assert!(
        unmet_of(&t.report, "clock-skill")
            .unwrap()
            .contains("requires MCP server 'clock', which has no tools listed here"),
        "{:?}",
        t.report.unmet_requires
    );
    // The server's tools arrive (as the gateway registers them): the next turn sees them.
    let decl = decls_from_toml(
        "[[tools]]\nname = \"clock__now\"\ndescription = \"The time.\"\nclass = \"clock\"\n",
    )
    .unwrap()
    .remove(0);
    d.tools().update(|reg| {
        reg.register_from(
            decl,
            None,
            ToolSource::Mcp {
                server: "clock".into(),
                tool: "now".into(),
            },
            "tool:clock/now".into(),
        )
        .unwrap()
    });
    let t = env.turn(&a, "s2", "what time is it").await;
    assert!(
        t.report.unmet_requires.is_empty(),
        "{:?}",
        t.report.unmet_requires
    );
    // Not granted its class: unmet again, saying so.
    env.agent("timer", "clock-skill", "none").await;
    let t = env.turn(&a, "s3", "what time is it").await;
    assert!(
        unmet_of(&t.report, "clock-skill")
            .unwrap()
            .contains("whose tools (class 'clock') this agent is not granted")
    );
}
