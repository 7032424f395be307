//! Imports: all or nothing, and the bulk path writes what single writes would.

use crate::common::*;
use skillbase_format::Bundle;
use skillbase_store::{AgentConfig, Author, EventFilter, NameSet, Scope, StatusChange, StoreError};

async fn import_is_all_or_nothing(db: TestDb) {
    let store = db.open().await;
    let a = agent("support");
    store
        .create_agent(
            &agent("other"),
            &AgentConfig {
                skills: NameSet::All,
                ..AgentConfig::default()
            },
        )
        .await
        .unwrap();
    let good: Vec<Bundle> = (0..20).map(|i| skill(&format!("s{i}"), "body")).collect();
    let mut with_bad = good.clone();
    with_bad.push(Bundle::single("---\nname: Bad Name\ndescription: x\n---\n").unwrap());
    assert!(
        store
            .import(
                &Scope::Shared,
                with_bad,
                &Author::Import("t".into()),
                "import",
                &|_| {}
            )
            .await
            .is_err()
    );
    assert!(store.index().is_empty(), "a failed import lands nothing");

    // A duplicate name inside one import is refused.
    let dup = vec![skill("d", "1"), skill("d", "2")];
    assert!(
        store
            .import(
                &Scope::Shared,
                dup,
                &Author::Import("t".into()),
                "i",
                &|_| {}
            )
            .await
            .is_err()
    );

    let r = store
        .import(
            &Scope::Agent(a.clone()),
            good.clone(),
            &Author::Import("pack".into()),
            "import",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.created.len(), 20);
    let cfg = store.agent(&a).await.unwrap().unwrap().config;
    match cfg.skills {
        NameSet::Names(n) => assert_eq!(n.len(), 20),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store
            .agent(&agent("other"))
            .await
            .unwrap()
            .unwrap()
            .config
            .skills,
        NameSet::All
    );
    assert_eq!(store.index().scope(&Scope::Shared).count(), 0);

    let mut again = good;
    again[0] = skill("s0", "changed");
    let r = store
        .import(
            &Scope::Agent(a.clone()),
            again,
            &Author::Import("pack".into()),
            "import",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(
        (r.created.len(), r.changed.len(), r.unchanged.len()),
        (0, 1, 19)
    );
    store.close().await;
    db.cleanup().await;
}

async fn bulk_import_is_the_same_as_single_writes(db: TestDb) {
    let store = db.open().await;
    // Some records exist before the import: one unchanged, one changed, one retired elsewhere.
    store
        .put(put(Scope::Shared, skill("b000", "body 0"), None))
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("b001", "old"), None))
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("b001", "older"), None))
        .await
        .unwrap();
    let mut pack: Vec<Bundle> = (0..100)
        .map(|i| skill(&format!("b{i:03}"), &format!("body {i}")))
        .collect();
    // Shared files across skills are stored once.
    pack.push(
        Bundle::from_pairs(
            [
                (
                    "SKILL.md",
                    b"---\nname: with-files\ndescription: d\n---\nx\n".to_vec(),
                ),
                ("scripts/run.sh", b"echo 0\n".to_vec()),
            ],
            &Default::default(),
        )
        .unwrap(),
    );
    let r = store
        .import(
            &Scope::Shared,
            pack.clone(),
            &Author::Import("bulk".into()),
            "bulk",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(
        (r.created.len(), r.changed.len(), r.unchanged.len()),
        (99, 1, 1),
        "{r:?}"
    );
    let o = r.outcomes.iter().find(|o| o.name == "b001").unwrap();
    assert_eq!(o.rev, 3, "the changed skill gets the next revision");
    let idx = store.index();
    assert_eq!(idx.get(&Scope::Shared, "b001").unwrap().body, "body 1");
    assert_eq!(idx.get(&Scope::Shared, "b050").unwrap().active_rev, 1);
    assert_eq!(
        idx.get(&Scope::Shared, "with-files").unwrap().files.len(),
        2
    );
    let (_, b) = store
        .bundle(&Scope::Shared, "with-files", None)
        .await
        .unwrap();
    assert_eq!(b.digest(), pack[100].digest());
    let h = store.history(&Scope::Shared, "b001").await.unwrap();
    assert_eq!(h.iter().map(|r| r.rev).collect::<Vec<_>>(), [1, 2, 3]);
    let written = store
        .events(&EventFilter {
            kind: Some("revision_written".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(written.len(), 3 + 100, "one event per revision written");
    // The same import again changes nothing.
    let r = store
        .import(
            &Scope::Shared,
            pack.clone(),
            &Author::Import("bulk".into()),
            "bulk",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.unchanged.len(), 101);
    // A retired record in the pack refuses the whole import.
    store
        .set_status(
            &Scope::Shared,
            "b010",
            StatusChange::Retire,
            &human(),
            serde_json::Value::Null,
        )
        .await
        .unwrap();
    let mut again = pack;
    again[10] = skill("b010", "changed while retired");
    again[20] = skill("b020", "changed too");
    assert!(matches!(
        store
            .import(
                &Scope::Shared,
                again,
                &Author::Import("bulk".into()),
                "bulk",
                &|_| {}
            )
            .await,
        Err(StoreError::Retired { .. })
    ));
    assert_eq!(
        store.index().get(&Scope::Shared, "b020").unwrap().body,
        "body 20"
    );
    store.close().await;
    db.cleanup().await;
}

/// A Codex skill's `agents/openai.yaml` is read where it maps: explicit only, an MCP
/// requirement, display metadata; what does not map is a warning on the write; a malformed file
/// refuses it; the index reads it again from the database.
async fn codex_openai_yaml_maps_onto_skillbase_keys(db: TestDb) {
    let store = db.open().await;
    let codex = |yaml: &str| {
        Bundle::from_pairs(
            [
                (
                    "SKILL.md",
                    b"---\nname: ship\ndescription: Ships a release.\n---\nShip it.\n".to_vec(),
                ),
                ("agents/openai.yaml", yaml.as_bytes().to_vec()),
            ],
            &Default::default(),
        )
        .unwrap()
    };
    let yaml = "interface:\n  display_name: \"Ship\"\ndependencies:\n  tools:\n    - type: \"mcp\"\n      value: \"github\"\n      url: \"https://example.com/mcp\"\npolicy:\n  allow_implicit_invocation: false\n";
    let r = store
        .import(
            &Scope::Shared,
            vec![codex(yaml)],
            &Author::Import("t".into()),
            "i",
            &|_| {},
        )
        .await
        .unwrap();
    let w = &r.outcomes[0].warnings;
    assert!(
        w.iter()
            .any(|w| w.contains("agents/openai.yaml: `dependencies.tools[0]`")),
        "{w:?}"
    );
    let check = |store: &skillbase_store::Store| {
        let idx = store.index();
        let e = idx.get(&Scope::Shared, "ship").unwrap();
        assert!(e.meta.disable_model_invocation);
        assert_eq!(e.meta.requires.mcp, ["github"]);
        assert_eq!(e.meta.display.display_name.as_deref(), Some("Ship"));
    };
    check(&store);
    // Read back from the database as another process would.
    store.close().await;
    let store = db.open().await;
    check(&store);
    // A malformed file refuses the write, naming the file and the key; nothing changes.
    let bad = codex("policy:\n  allow_implicit_invocation: [yes]\n");
    let e = store
        .put(put(Scope::Shared, bad, None))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("agents/openai.yaml: `policy.allow_implicit_invocation` must be true or false"),
        "{e}"
    );
    check(&store);
    // Without the policy, the model may use it again.
    store
        .put(put(
            Scope::Shared,
            codex("interface:\n  short_description: \"x\"\n"),
            None,
        ))
        .await
        .unwrap();
    let idx = store.index();
    let e = idx.get(&Scope::Shared, "ship").unwrap();
    assert!(!e.meta.disable_model_invocation && e.meta.requires.mcp.is_empty());
    store.close().await;
    db.cleanup().await;
}

suite!(
    import_is_all_or_nothing,
    bulk_import_is_the_same_as_single_writes,
    codex_openai_yaml_maps_onto_skillbase_keys,
);
