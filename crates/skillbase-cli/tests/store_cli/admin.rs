//! Status changes, agents, the configuration file and seeds.

use super::*;

/// retire / restore / disable / enable.
pub(super) fn status_cycle(sb: &Sb) {
    let work = sb.path("work");
    let alpha = write_skill(&work, "alpha", "v1");
    sb.ok(&["put", s(&alpha)]);
    let r = sb.ok(&["retire", "alpha"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now retired (revision 1)"
    );
    assert!(
        !sb.list(&[]).contains_key("alpha@shared"),
        "retired skills are hidden"
    );
    assert_eq!(sb.list(&["--all"])["alpha@shared"]["status"], "retired");
    write_skill(&work, "alpha", "v2");
    for args in [
        vec!["put", s(&alpha)],
        vec!["disable", "alpha"],
        vec!["revert", "alpha", "1"],
    ] {
        let err = sb.fails(1, &args);
        assert!(
            err.contains("is retired") && err.contains("skillbase restore alpha"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        sb.history("alpha", &[]).len(),
        1,
        "retire keeps every revision"
    );
    assert_eq!(sb.json(&["show", "alpha", "--json"])["status"], "retired");
    // The transition table REST uses: enable does not bring a retired skill back.
    let err = sb.fails(1, &["enable", "alpha"]);
    assert!(err.contains("is retired: restore it first"), "{err}");
    let r = sb.ok(&["restore", "alpha"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now active (revision 1)"
    );
    let r = sb.ok(&["disable", "alpha", "--author", "human:ops"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now disabled (revision 1)"
    );
    assert_eq!(sb.list(&[])["alpha@shared"]["status"], "disabled");
    assert!(sb.ok(&["list"]).stdout.contains("disabled"));
    // ... and restore does not enable a disabled one.
    let err = sb.fails(1, &["restore", "alpha"]);
    assert!(err.contains("is disabled, not retired"), "{err}");
    assert_eq!(sb.list(&[])["alpha@shared"]["status"], "disabled");
    // A disabled skill still takes revisions.
    let r = sb.ok(&["put", s(&alpha)]);
    assert!(r.stdout.contains("wrote revision 2"), "{r:?}");
    let r = sb.ok(&["enable", "alpha"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now active (revision 2)"
    );
    assert_eq!(sb.list(&[])["alpha@shared"]["status"], "active");
    let err = sb.fails(1, &["retire", "nope"]);
    assert!(err.contains("no skill 'nope' in scope shared"), "{err}");
    let err = sb.fails(1, &["enable", "alpha", "--scope", "agent:support"]);
    assert!(
        err.contains("no skill 'alpha' in scope agent:support"),
        "{err}"
    );
}

/// agent create / set / show / list.
pub(super) fn agents(sb: &Sb) {
    let err = sb.run(&["agent", "list"]);
    assert_eq!(err.code, 0);
    assert!(err.stderr.contains("No agents"), "{err:?}");
    assert_eq!(sb.json(&["agent", "list", "--json"]), serde_json::json!([]));
    let r = sb.ok(&[
        "agent",
        "create",
        "support",
        "--skills",
        "refund-policy, refund-procedure",
        "--eager",
        "refund-policy",
        "--tools",
        "web_fetch",
        "--hosts",
        "API.Payments.example.com",
        "--vault",
        "PAYMENTS_KEY",
        "--catalog-budget",
        "2000",
        "--description",
        "Customer support",
    ]);
    assert_eq!(r.stdout.trim(), "agent support created (version 1)");
    let a = sb.json(&["agent", "show", "support", "--json"]);
    assert_eq!(a["name"], "support");
    assert_eq!(
        a["skills"],
        serde_json::json!(["refund-policy", "refund-procedure"])
    );
    assert_eq!(a["eager"], serde_json::json!(["refund-policy"]));
    assert_eq!(
        a["grants"]["hosts"],
        serde_json::json!(["api.payments.example.com"])
    );
    assert_eq!(a["grants"]["vault"], serde_json::json!(["PAYMENTS_KEY"]));
    assert_eq!(a["catalog_budget"], 2000);
    assert_eq!(a["version"], 1);
    let err = sb.fails(1, &["agent", "create", "support"]);
    assert!(err.contains("agent 'support' already exists"), "{err}");

    let r = sb.ok(&[
        "agent",
        "set",
        "support",
        "--skills",
        "all",
        "--failure-threshold",
        "5",
    ]);
    assert_eq!(r.stdout.trim(), "agent support updated (version 2)");
    let b = sb.json(&["agent", "show", "support", "--json"]);
    assert_eq!(b["skills"], "all");
    assert_eq!(b["policies"]["failure_threshold"], 5);
    assert_eq!(b["eager"], a["eager"], "set changes only the options given");
    assert_eq!(b["grants"], a["grants"]);
    let t = sb.ok(&["agent", "show", "support"]).stdout;
    assert!(
        t.contains("skills = \"all\"") && t.contains("# version 2"),
        "{t}"
    );

    sb.ok(&["agent", "create", "ops"]);
    let l = sb.json(&["agent", "list", "--json"]);
    let names: Vec<&str> = l
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ops", "support"]);
    let t = sb.ok(&["agent", "list"]).stdout;
    assert!(t.contains("ops") && t.contains("no skills"), "{t}");
    assert!(
        t.contains("support") && t.contains("all skills") && t.contains("Customer support"),
        "{t}"
    );

    let err = sb.fails(1, &["agent", "set", "nobody", "--skills", "all"]);
    assert!(
        err.contains("no agent 'nobody'") && err.contains("skillbase agent create nobody"),
        "{err}"
    );
    let err = sb.fails(1, &["agent", "show", "nobody"]);
    assert!(err.contains("no agent 'nobody'"), "{err}");
    for bad in ["Support", "_x", "a b", "agent/x"] {
        let err = sb.fails(1, &["agent", "create", bad]);
        assert!(
            err.contains(&format!("invalid agent name '{bad}'")),
            "{err}"
        );
    }
    let err = sb.fails(1, &["agent", "set", "support", "--skills", "Not A Name"]);
    assert!(err.contains("--skills"), "{err}");
    let err = sb.fails(1, &["agent", "set", "support", "--failure-threshold", "0"]);
    // The store's one check of agent configurations (the same for REST and skillbase.toml).
    assert!(
        err.contains("policies.failure_threshold must be from 1 to 1000, not 0"),
        "{err}"
    );
    let err = sb.fails(
        1,
        &[
            "agent",
            "set",
            "support",
            "--hosts",
            "http://x.example.com/",
        ],
    );
    assert!(
        err.contains("grants.hosts") && err.contains("not a URL"),
        "{err}"
    );
    assert_eq!(
        sb.json(&["agent", "show", "support", "--json"])["version"],
        2,
        "refused edits change nothing"
    );
}

/// --config skillbase.toml applies its agents before the command.
pub(super) fn config_file(sb: &Sb) {
    let cfg = sb.path("skillbase.toml");
    std::fs::write(
        &cfg,
        r#"
[agents.support]
description = "Customer support"
skills = ["refund-procedure", "refund-policy"]
eager = ["refund-policy"]
catalog_budget = 3000

[agents.support.grants]
tools = ["web_fetch"]
hosts = ["api.payments.example.com"]

[agents.ops]
skills = "all"
"#,
    )
    .unwrap();
    let l = sb.json(&["--config", s(&cfg), "agent", "list", "--json"]);
    let l = l.as_array().unwrap();
    assert_eq!(l.len(), 2);
    let support = l.iter().find(|a| a["name"] == "support").unwrap();
    assert_eq!(
        support["skills"],
        serde_json::json!(["refund-policy", "refund-procedure"])
    );
    assert_eq!(support["grants"]["tools"], serde_json::json!(["web_fetch"]));
    assert_eq!(support["catalog_budget"], 3000);
    assert_eq!(support["version"], 1);
    assert_eq!(
        l.iter().find(|a| a["name"] == "ops").unwrap()["skills"],
        "all"
    );
    // Applying the same file again changes nothing; editing it updates the agent.
    sb.ok(&["--config", s(&cfg), "list"]);
    assert_eq!(
        sb.json(&["agent", "show", "support", "--json"])["version"],
        1
    );
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("3000", "2500");
    std::fs::write(&cfg, text).unwrap();
    let a = sb.json(&["--config", s(&cfg), "agent", "show", "support", "--json"]);
    assert_eq!(
        (a["catalog_budget"].clone(), a["version"].clone()),
        (2500.into(), 2.into())
    );
    // The environment variable works too.
    let out = sb
        .cmd(&["agent", "list", "--json"])
        .env("SKILLBASE_CONFIG", &cfg)
        .output()
        .unwrap();
    assert!(out.status.success());

    // A bad file: exit 1, naming the file and the key; nothing applied.
    let bad = sb.path("bad.toml");
    std::fs::write(&bad, "[agents.extra]\nskils = []\n").unwrap();
    let err = sb.fails(1, &["--config", s(&bad), "agent", "list"]);
    assert!(err.contains("bad.toml") && err.contains("skils"), "{err}");
    std::fs::write(&bad, "[agents.Bad]\n").unwrap();
    let err = sb.fails(1, &["--config", s(&bad), "agent", "list"]);
    assert!(err.contains("invalid agent name 'Bad'"), "{err}");
    assert_eq!(
        sb.json(&["agent", "list", "--json"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A file that does not exist is a missing path.
    let err = sb.fails(2, &["--config", s(&sb.path("nope.toml")), "agent", "list"]);
    assert!(
        err.contains("nope.toml") && err.contains("does not exist"),
        "{err}"
    );
}

/// --seed DIR syncs skill folders into the shared scope; once edited in the store, the store wins.
pub(super) fn seeds(sb: &Sb) {
    let seed = sb.path("seeds");
    let a = write_skill(&seed, "seeded-a", "a1");
    write_skill(&seed, "seeded-b", "b1");
    let r = sb.ok(&["--seed", s(&seed), "list", "--json"]);
    assert!(
        r.stderr.contains("seed: seeded-a created (revision 1)"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("seed: seeded-b created (revision 1)"),
        "{r:?}"
    );
    let l: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(l.as_array().unwrap().len(), 2);
    let canon = a.canonicalize().unwrap();
    assert_eq!(l[0]["author"], format!("seed:{}", canon.display()));
    assert_eq!(l[0]["seed_path"], canon.display().to_string());

    // Unchanged folders: nothing reported, nothing written.
    let r = sb.ok(&["--seed", s(&seed), "list"]);
    assert!(!r.stderr.contains("seed:"), "{r:?}");
    // A changed folder appends a revision.
    write_skill(&seed, "seeded-a", "a2");
    let r = sb.ok(&["--seed", s(&seed), "history", "seeded-a"]);
    assert!(
        r.stderr.contains("seed: seeded-a updated (revision 2)"),
        "{r:?}"
    );
    assert_eq!(sb.history("seeded-a", &[]).len(), 2);

    // Edited in the store: it stops following the folder.
    let mine = write_skill(&sb.path("mine"), "seeded-a", "edited in the store");
    sb.ok(&["put", s(&mine)]);
    write_skill(&seed, "seeded-a", "a3");
    let r = sb.ok(&["--seed", s(&seed), "list"]);
    assert!(
        r.stderr.contains("seeded-a was edited in the store"),
        "{r:?}"
    );
    assert_eq!(
        sb.skill_md("seeded-a", &[]),
        skill_text("seeded-a", "edited in the store")
    );
    assert_eq!(sb.history("seeded-a", &[]).len(), 3);
    assert_eq!(sb.list(&[])["seeded-a@shared"]["seed_path"], Value::Null);

    // An invalid folder is skipped with a reason; the others still sync.
    let broken = seed.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("SKILL.md"),
        "---\nname: broken\n---\nno description\n",
    )
    .unwrap();
    write_skill(&seed, "seeded-c", "c1");
    let r = sb.ok(&["--seed", s(&seed), "list", "--json"]);
    assert!(
        r.stderr.contains("seed: skipped") && r.stderr.contains("description"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("seed: seeded-c created (revision 1)"),
        "{r:?}"
    );
    // A seed folder that does not exist is a missing path.
    let err = sb.fails(2, &["--seed", s(&sb.path("no-such-seeds")), "list"]);
    assert!(
        err.contains("no-such-seeds") && err.contains("does not exist"),
        "{err}"
    );
}
