//! `load_skill` and the skill's files on disk.

use super::*;

// ---------------------------------------------------------------------------------------------
// 6 and 7. load_skill and files.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_skill_validates_substitutes_and_answers_already_active() {
    let (env, a) = refund_env().await;
    let load = |args: Option<serde_json::Value>| {
        let env = &env;
        let a = &a;
        async move { load_via(&env.rt, a, "s", "refund", args.as_ref()).await }
    };
    // Arguments failing the schema: an actionable error naming the field.
    for (args, field) in [
        (None, "order_id"),
        (Some(json!({})), "order_id"),
        (Some(json!({"order_id": "nope"})), "order_id"),
        (
            Some(json!({"order_id": "ord_1234", "amount_cents": "ten"})),
            "amount_cents",
        ),
        (
            Some(json!({"order_id": "ord_1234", "amount_cents": 0})),
            "amount_cents",
        ),
        (Some(json!({"order_id": "ord_1234", "extra": 1})), "extra"),
    ] {
        let e = load(args.clone()).await.unwrap_err();
        assert!(
            matches!(e, RuntimeError::InvalidArguments { ref name, .. } if name == "refund"),
            "{args:?}: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(field),
            "{args:?}: the error names {field}: {msg}"
        );
        assert!(msg.contains("refund"), "{msg}");
    }
    let e = load(Some(json!("ord_1234"))).await.unwrap_err();
    assert!(e.to_string().contains("must be a JSON object"), "{e}");
    let e = load_via(&env.rt, &a, "s", "notes", Some(&json!({"x": 1})))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("declares no inputs"), "{e}");
    // Nothing was recorded by the failed loads.
    let rec = env.store.session(&a, "s").await.unwrap();
    assert!(rec.is_none_or(|r| r.activations.is_empty()));

    // A good load: wrapped body, substitution, file list, companions' bodies.
    let l = load(Some(json!({"order_id": "ord_1234", "amount_cents": 500})))
        .await
        .unwrap();
    assert!(!l.already_active);
    assert!(
        l.content
            .starts_with("<skill_content name=\"refund\" revision=\"1\">\n"),
        "{}",
        l.content
    );
    assert!(
        l.content.contains("Refund order ord_1234 for 500 cents."),
        "{}",
        l.content
    );
    assert!(!l.content.contains("{{order_id}}"));
    assert!(l.content.contains("<file>scripts/refund.sh</file>"));
    assert!(l.content.contains("<file>reference.md</file>"));
    assert!(
        l.content.contains(
            "<skill_content name=\"refund-policy\" revision=\"1\" companion_of=\"refund\">"
        )
    );
    assert!(l.content.contains("BODY-refund-policy"));
    assert!(l.content.contains("<skill_arguments>"));
    assert_eq!(
        sorted(l.files.clone()),
        ["reference.md", "scripts/refund.sh"]
    );
    let got: Vec<(String, String)> = l
        .activated
        .iter()
        .map(|a| (a.name.clone(), a.reason.clone()))
        .collect();
    assert_eq!(
        got,
        pairs(&[("refund", "load"), ("refund-policy", "companion:refund")])
    );
    assert!(l.activated.iter().all(|a| a.tokens > 0 && a.rev == 1));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);

    // Files: under skills/<hash>-<slug>/ in the session's workspace, atomically.
    let dir = l.directory.clone().unwrap();
    assert_eq!(
        dir,
        format!(
            "skills/{}",
            skillbase_runtime::skill_dir_name("shared", "refund")
        )
    );
    let slug = dir.strip_prefix("skills/").unwrap();
    let (hash, rest) = slug.split_once('-').unwrap();
    assert_eq!(hash.len(), 8);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(rest, "refund");
    let root = skillbase_runtime::session_root(&env.ws(), a.as_str(), "s");
    // The model is told the full path: a harness on this machine opens it as given.
    let full = std::path::absolute(root.join(&dir)).unwrap();
    assert!(
        l.content
            .contains(&format!("Skill directory: {}", full.display())),
        "{}",
        l.content
    );
    assert_eq!(
        std::fs::read_to_string(root.join(&dir).join("scripts/refund.sh")).unwrap(),
        "#!/bin/sh\necho refund\n"
    );
    assert!(root.join(&dir).join("SKILL.md").is_file());
    let policy_dir = root
        .join("skills")
        .join(skillbase_runtime::skill_dir_name("shared", "refund-policy"));
    assert!(
        policy_dir.join("SKILL.md").is_file(),
        "companions' files too"
    );
    let leftovers: Vec<String> = std::fs::read_dir(root.join("skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp") || n.starts_with(".old"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Second load: already active, without the text (even with other arguments).
    let l2 = load(Some(json!({"order_id": "ord_9999"}))).await.unwrap();
    assert!(l2.already_active);
    assert!(l2.content.contains("already active"), "{}", l2.content);
    assert!(!l2.content.contains("Refund order"));
    assert!(l2.activated.is_empty());
    // Loading the companion alone: already active too.
    let l3 = load_via(&env.rt, &a, "s", "refund-policy", None)
        .await
        .unwrap();
    assert!(l3.already_active);
    // A new revision is a new load.
    env.put(skill_files(
        "refund",
        &format!("triggers: [refund]\n{REFUND_FM}"),
        "v2 {{order_id}}",
        &[],
    ))
    .await;
    let l4 = load(Some(json!({"order_id": "ord_5555"}))).await.unwrap();
    assert!(!l4.already_active);
    assert!(l4.content.contains("v2 ord_5555") && l4.content.contains("revision=\"2\""));

    // Names not in the enum.
    for bad in ["nonexistent", "secret", "", "REFUND", "refund "] {
        let e = load_via(&env.rt, &a, "s", bad, None).await.unwrap_err();
        assert!(
            matches!(e, RuntimeError::UnknownSkill { .. }),
            "{bad:?}: {e}"
        );
        assert!(e.to_string().contains("load_skill lists"), "{e}");
        assert!(
            bad.is_empty() || !e.to_string().contains(bad),
            "not quoted back: {e}"
        );
    }
    let long = "x".repeat(1_000_000);
    let e = load_via(&env.rt, &a, "s", &long, None).await.unwrap_err();
    assert!(
        e.to_string().len() < 500,
        "the error does not echo a huge name"
    );
    // An eager skill is refused.
    let e = load_via(&env.rt, &a, "s", "policy", None)
        .await
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Eager(_)), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_write_failures_are_warnings_and_the_text_still_works() {
    let (env, a) = refund_env().await;
    // A workspace root that is a regular file: nothing can be written below it.
    let blocker = env.dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let rt = engine_over(&env.store.clone(), Some(blocker.clone())).await;
    let l = load_via(
        &rt,
        &a,
        "s",
        "refund",
        Some(&json!({"order_id": "ord_1234"})),
    )
    .await
    .unwrap();
    assert!(l.content.contains("Refund order ord_1234"));
    assert!(l.directory.is_none());
    assert!(!l.warnings.is_empty());
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("'refund'") && w.contains("not written")),
        "{:?}",
        l.warnings
    );
    // The load was recorded all the same.
    assert!(
        load_via(
            &rt,
            &a,
            "s",
            "refund",
            Some(&json!({"order_id": "ord_1234"}))
        )
        .await
        .unwrap()
        .already_active
    );

    // A turn whose triggered skill has files writes them, and reports a failure without failing.
    let t = env.turn(&a, "s-turn", "I need a refund").await;
    assert!(t.report.activated.iter().any(|x| x.name == "refund"));
    let dir = skillbase_runtime::session_root(&env.ws(), a.as_str(), "s-turn")
        .join("skills")
        .join(skillbase_runtime::skill_dir_name("shared", "refund"));
    assert!(dir.join("scripts/refund.sh").is_file());
    let t = rt
        .turn(&a, "s-turn2", "I need a refund", &TurnOptions::default())
        .await
        .unwrap();
    assert!(t.injected.unwrap().contains("Refund order"));
    assert!(
        t.report
            .warnings
            .iter()
            .any(|o| o.name == "refund" && o.reason.contains("files not written")),
        "{:?}",
        t.report.warnings
    );

    // Without a workspace, nothing is written and nothing is warned.
    let rt = engine_over(&env.store.clone(), None).await;
    let l = load_via(
        &rt,
        &a,
        "s-nows",
        "refund",
        Some(&json!({"order_id": "ord_1234"})),
    )
    .await
    .unwrap();
    assert!(l.directory.is_none() && l.warnings.is_empty());
}
