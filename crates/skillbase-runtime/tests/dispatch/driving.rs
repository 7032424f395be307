//! The driving skill narrows the envelope: tools, vault entries and hosts are grants ∩ declarations.

use super::*;

// ---------------------------------------------------------------------------------------------
// The driving skill.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driving_skill_narrows_tools_until_it_finishes() {
    let env = Env::new().await;
    env.put(skill(
        "driver",
        "capabilities:\n  tools: [echo]\n",
        "Echo things.",
    ))
    .await;
    env.put(skill(
        "other",
        "capabilities:\n  tools: [net]\n  hosts: [api.example.com]\n",
        "Use the network.",
    ))
    .await;
    let s = "drive";
    done(&env.call(s, "net", json!({"host": "api.example.com"})).await);
    env.load(s, "driver").await;
    done(&env.call(s, "echo", json!({"text": "a"})).await);
    assert_eq!(
        refused(&env.call(s, "net", json!({"host": "api.example.com"})).await),
        Rule::ClassNotDeclared
    );
    // The runtime's own tools are always allowed.
    done(
        &env.call(s, "search_skills", json!({"query": "network"}))
            .await,
    );
    // Another skill supersedes it.
    env.load(s, "other").await;
    done(&env.call(s, "net", json!({"host": "api.example.com"})).await);
    assert_eq!(
        refused(&env.call(s, "echo", json!({"text": "a"})).await),
        Rule::ClassNotDeclared
    );
    let finished = env.finish(s, "success", "all good").await;
    assert_eq!(finished["skill"], json!("other"));
    // Nothing drives now: the agent's grants alone.
    done(&env.call(s, "echo", json!({"text": "a"})).await);
    done(&env.call(s, "net", json!({"host": "api.example.com"})).await);
    let runs = env.store.runs(&Scope::Shared, "driver", 5).await.unwrap();
    assert_eq!(runs[0].outcome.as_deref(), Some("superseded"));
    assert_eq!(runs[0].calls, 1, "{runs:?}");
    assert!(
        failed(
            &env.call(s, "skill_finish", json!({"outcome": "success"}))
                .await
        )
        .1
        .contains("no skill is running")
    );

    // Loading it again after it finished: it drives again.
    env.load(s, "driver").await;
    assert_eq!(
        refused(&env.call(s, "net", json!({"host": "api.example.com"})).await),
        Rule::ClassNotDeclared
    );
    env.finish(s, "success", "").await;

    // A skill disabled while it drives: every non-activation call fails closed until it is
    // finished.
    let s2 = "drive-2";
    env.load(s2, "driver").await;
    env.store
        .set_status(
            &Scope::Shared,
            "driver",
            StatusChange::Disable,
            &human(),
            json!({"why": "test"}),
        )
        .await
        .unwrap();
    let o = env.call(s2, "echo", json!({"text": "a"})).await;
    assert_eq!(refused(&o), Rule::DrivingSkillInactive);
    assert!(o.for_model().contains("skill_finish"));
    done(
        &env.call(
            s2,
            "skill_finish",
            json!({"outcome": "failure", "note": "disabled under me"}),
        )
        .await,
    );
    done(&env.call(s2, "echo", json!({"text": "a"})).await);
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vault_access_under_a_skill_needs_both_grant_and_declaration() {
    let env = Env::new().await;
    env.put(skill(
        "login",
        "capabilities:\n  tools: [vaultuse]\n  vault: [LOGIN, ROOT]\n",
        "Log in.",
    ))
    .await;
    env.put(skill(
        "nothing",
        "capabilities:\n  tools: [vaultuse]\n",
        "No vault.",
    ))
    .await;
    let s = "v";
    // No skill: the grants decide.
    done(&env.call(s, "use_secret", json!({"name": "LOGIN"})).await);
    done(&env.call(s, "use_secret", json!({"name": "OTHER"})).await);
    let o = env.call(s, "use_secret", json!({"name": "ROOT"})).await;
    let (rule, msg) = failed(&o);
    assert_eq!(rule, Some(Rule::VaultNotAllowed));
    assert!(msg.contains("not granted to agent 'bot'"), "{msg}");
    // An entry that does not exist is not a refusal.
    env.change(&bot(), |c| c.grants.vault.push("MISSING".into()))
        .await;
    let o = env.call(s, "use_secret", json!({"name": "MISSING"})).await;
    assert_eq!(failed(&o), (None, "vault entry 'MISSING' is not set"));
    // Under a skill: granted ∩ declared.
    done(
        &env.once("v1", "login", "use_secret", json!({"name": "LOGIN"}))
            .await,
    );
    let o = env
        .once("v2", "login", "use_secret", json!({"name": "OTHER"}))
        .await;
    assert_eq!(
        failed(&o).0,
        Some(Rule::VaultNotAllowed),
        "granted, not declared"
    );
    let o = env
        .once("v3", "login", "use_secret", json!({"name": "ROOT"}))
        .await;
    assert_eq!(
        failed(&o).0,
        Some(Rule::VaultNotAllowed),
        "declared, not granted"
    );
    let o = env
        .once("v4", "nothing", "use_secret", json!({"name": "LOGIN"}))
        .await;
    let (rule, msg) = failed(&o);
    assert_eq!(rule, Some(Rule::VaultNotAllowed));
    assert!(msg.contains("declared by skill 'nothing'"), "{msg}");
    // A tool that swallows the refusal and succeeds: the refusal is still recorded.
    let o = env.call("v4", "swallow", json!({"name": "LOGIN"})).await;
    assert_eq!(done(&o)["used_secret"], json!(false));
    assert_eq!(
        env.all_refusals().await,
        pairs(&[
            ("use_secret", "vault_not_allowed"),
            ("use_secret", "vault_not_allowed"),
            ("use_secret", "vault_not_allowed"),
            ("use_secret", "vault_not_allowed"),
            ("swallow", "vault_not_allowed"),
        ])
    );
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_under_a_skill_never_exceed_the_grants() {
    let env = Env::new().await;
    env.change(&bot(), |c| {
        c.grants.hosts = strings(&[
            "*.example.com",
            "api.example.org",
            "*.ports.example.net:8443",
        ]);
    })
    .await;
    env.put(skill(
        "reach",
        "capabilities:\n  tools: [net]\n  hosts: [www.example.com, 'api.example.com:8443', api.example.org, evil.example.net, 'a.ports.example.net:8443', a.ports.example.net]\n",
        "Reach out.",
    ))
    .await;
    let s = "h";
    let o = env.call(s, "net", json!({"host": "x.example.com"})).await;
    assert_eq!(
        done(&o)["hosts_allowed"],
        json!([
            "*.example.com",
            "api.example.org",
            "*.ports.example.net:8443"
        ])
    );
    // A grant without a port covers the default port only.
    let o = env
        .call(s, "net", json!({"host": "x.example.com", "port": 8443}))
        .await;
    assert_eq!(failed(&o).0, Some(Rule::DestinationNotAllowed));
    // Under the skill: each declared host that a grant covers, port included.
    let o = env
        .once("h1", "reach", "net", json!({"host": "www.example.com"}))
        .await;
    assert_eq!(
        done(&o)["hosts_allowed"],
        json!([
            "www.example.com",
            "api.example.org",
            "a.ports.example.net:8443"
        ]),
        "a declared host:port that no grant covers is dropped"
    );
    done(
        &env.call(
            "h1",
            "net",
            json!({"host": "a.ports.example.net", "port": 8443}),
        )
        .await,
    );
    for (i, (host, port)) in [
        ("api.example.com", 8443),
        ("evil.example.net", 443),
        ("other.example.com", 443),
        ("a.ports.example.net", 443),
    ]
    .into_iter()
    .enumerate()
    {
        let o = env
            .once(
                &format!("h{}", i + 2),
                "reach",
                "net",
                json!({"host": host, "port": port}),
            )
            .await;
        assert_eq!(
            failed(&o).0,
            Some(Rule::DestinationNotAllowed),
            "{host}:{port}"
        );
    }
    env.assert_clean().await;
}
