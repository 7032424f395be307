//! The offered set: kinds, authors and unique wire names.

use super::*;

// ---------------------------------------------------------------------------------------------
// The offered set.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offered_set_names_kinds_authors_and_keeps_wire_names_unique() {
    let env = Env::new().await;
    let inputs = "inputs:\n  type: object\n  properties:\n    q:\n      type: string\n  required: [q]\n  additionalProperties: false\n";
    env.put(skill("x-y", inputs, "Answer {{q}} carefully."))
        .await;
    env.put(skill("x-y-2", inputs, "Second {{q}}.")).await;
    env.put(skill("plain", "", "No inputs.")).await;
    env.put(skill("always", inputs, "Eager.")).await;
    env.change(&bot(), |c| c.eager = "always".parse().unwrap())
        .await;

    let set = env.offered(&bot());
    let mut wires: Vec<&str> = set.entries.iter().map(|e| e.wire_name.as_str()).collect();
    let mut ids: Vec<&str> = set.entries.iter().map(|e| e.id.as_str()).collect();
    let n = wires.len();
    wires.sort();
    wires.dedup();
    ids.sort();
    ids.dedup();
    assert_eq!(wires.len(), n, "wire names are unique: {wires:?}");
    assert_eq!(ids.len(), n, "ids are unique: {ids:?}");

    let tool = set.get("skill_x_y").unwrap();
    assert_eq!(
        (tool.id.as_str(), tool.kind, tool.author.as_str()),
        ("tool:skill_x_y", EntryKind::Tool, "operator")
    );
    let sk = set.entries.iter().find(|e| e.id == "skill:x-y").unwrap();
    assert_eq!(sk.kind, EntryKind::Skill);
    assert_eq!(sk.author, "human:tester");
    assert_ne!(sk.wire_name, "skill_x_y");
    assert!(sk.wire_name.starts_with("skill_x_y"), "{}", sk.wire_name);
    assert_eq!(sk.parameters["required"], json!(["q"]));
    let sk2 = set.entries.iter().find(|e| e.id == "skill:x-y-2").unwrap();
    assert_ne!(sk2.wire_name, sk.wire_name);
    let load = set.get("load_skill").unwrap();
    assert_eq!(
        (load.id.as_str(), load.kind, load.author.as_str()),
        ("tool:load_skill", EntryKind::Tool, "skillbase")
    );
    assert!(set.get("take_note").is_some() && set.get("skill_create").is_some());
    // No inputs, or eager: not a callable entry.
    assert!(
        set.entries
            .iter()
            .all(|e| e.id != "skill:plain" && e.id != "skill:always")
    );
    // Not granted: withheld, listed, never offered.
    assert_eq!(set.withheld, vec!["admin"]);
    assert!(set.get("admin").is_none());
    let json = serde_json::to_value(&set).unwrap();
    assert!(json["entries"][0].get("target").is_none());

    // The same wire names reach different things.
    assert_eq!(
        done(&env.call("s", "skill_x_y", json!({})).await),
        &json!("the tool named skill_x_y")
    );
    let loaded = env
        .call("s", &sk.wire_name, json!({"q": "the question"}))
        .await;
    let text = done(&loaded).as_str().unwrap();
    assert!(
        text.contains("<skill_content name=\"x-y\"")
            && text.contains("Answer the question carefully."),
        "{text}"
    );
    let bad = env.call("s2", &sk.wire_name, json!({"q": 7})).await;
    assert_eq!(refused(&bad), Rule::InvalidArguments);

    // An agent with no grants: the runtime's own activation tools only.
    let bare = env.agent("bare", |c| c.grants = Default::default()).await;
    let set = env.offered(&bare);
    let tools: Vec<&str> = set
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Tool)
        .map(|e| e.wire_name.as_str())
        .collect();
    assert_eq!(tools, vec!["load_skill", "search_skills", "skill_finish"]);
    for w in ["echo", "net", "take_note", "skill_create", "admin", "ghost"] {
        assert!(
            set.withheld.iter().any(|x| x == w),
            "{w} withheld: {:?}",
            set.withheld
        );
    }
    // An agent that sees no skill is not offered the activation tools.
    let blind = env.agent("blind", |c| c.skills = NameSet::None).await;
    assert!(env.offered(&blind).get("load_skill").is_none());
    env.assert_clean().await;
}
