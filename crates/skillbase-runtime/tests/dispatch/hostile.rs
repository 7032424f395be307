//! The hostile skill and the injected page: refused at every step, scrubbed everywhere, and a
//! revoked grant refuses the next call.

use super::*;

// ---------------------------------------------------------------------------------------------
// The hostile skill.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_skill_is_refused_at_every_step_and_each_refusal_is_recorded() {
    let env = Env::new().await;
    // The scanning gate holds it for review (its instructions hide from the user); this test is
    // the second line: a person who approves it anyway still gets a skill that can do nothing
    // outside the envelope.
    let held = env
        .store
        .put(req(
            Scope::Shared,
            skill("helpful", HOSTILE_FM, HOSTILE_BODY),
        ))
        .await
        .unwrap();
    assert_eq!(held.kind, skillbase_store::WriteKind::Pending, "{held:?}");
    env.store
        .approve(
            &Scope::Shared,
            "helpful",
            held.rev,
            &skillbase_store::Author::Human("reviewer".into()),
        )
        .await
        .unwrap();
    let s = "hostile";
    let body = env.load(s, "helpful").await;
    assert!(body.contains("raise_budget"));
    let run = env
        .store
        .open_run(&bot(), s)
        .await
        .unwrap()
        .expect("the skill drives the session");
    assert_eq!(run.skill, "helpful");

    // 1. A tool the agent is not granted: not even offered.
    let o = env.call(s, "admin", json!({})).await;
    assert_eq!(refused(&o), Rule::NotOffered);
    // 2. A granted tool the skill does not declare.
    let o = env.call(s, "leak", json!({"form": "raw"})).await;
    assert_eq!(refused(&o), Rule::ClassNotDeclared);
    assert!(
        o.for_model().contains("does not declare tool class 'leak'"),
        "{}",
        o.for_model()
    );
    // 3. Authoring under a skill, whether the skill declares it or not.
    let o = env
        .call(s, "skill_create", json!({"name": "backdoor", "description": "Always on. Use on every turn.", "body": "Do it again."}))
        .await;
    assert_eq!(refused(&o), Rule::SkillCannotModify);
    assert_eq!(
        refused(&env.call(s, "skill_list", json!({})).await),
        Rule::SkillCannotModify
    );
    assert_eq!(
        refused(
            &env.call(s, "skill_remove", json!({"name": "helpful"}))
                .await
        ),
        Rule::SkillCannotModify
    );
    assert!(env.store.index().resolve(&bot(), "backdoor").is_none());
    // 4. Raising a budget: there is no such tool.
    assert_eq!(
        refused(
            &env.call(s, "raise_budget", json!({"tokens": 1_000_000}))
                .await
        ),
        Rule::NotOffered
    );
    assert_eq!(
        refused(&env.call(s, "set_policy", json!({})).await),
        Rule::NotOffered
    );
    // Notes are a class the skill does not declare either.
    assert_eq!(
        refused(&env.call(s, "take_note", json!({"text": "x"})).await),
        Rule::ClassNotDeclared
    );
    // What the skill may use: granted ∩ declared.
    let o = env.call(s, "net", json!({"host": "api.example.com"})).await;
    assert_eq!(done(&o)["hosts_allowed"], json!(["api.example.com"]));
    let o = env.call(s, "use_secret", json!({"name": "LOGIN"})).await;
    assert_eq!(done(&o)["bytes"], json!(SECRET.len()));
    // 5. A vault entry granted to the agent but not declared by the skill.
    let o = env
        .call(s, "use_secret", json!({"name": "OTHER", "careless": true}))
        .await;
    let (rule, msg) = failed(&o);
    assert_eq!(rule, Some(Rule::VaultNotAllowed));
    assert!(
        // The entry's name came from the call: it is not quoted back.
        !msg.contains("OTHER") && msg.contains("skill 'helpful'"),
        "{msg}"
    );
    // 6. A destination the skill declares but the agent is not granted.
    let o = env
        .call(s, "net", json!({"host": "evil.example.net"}))
        .await;
    assert_eq!(failed(&o).0, Some(Rule::DestinationNotAllowed));
    // Two failed calls ended the run as a failure: the skill no longer drives, and the agent's
    // grants alone apply (ROOT is declared by the skill, never granted).
    assert!(env.store.open_run(&bot(), s).await.unwrap().is_none());
    let runs = env.store.runs(&Scope::Shared, "helpful", 5).await.unwrap();
    assert_eq!(
        (
            runs[0].outcome.as_deref(),
            runs[0].calls,
            runs[0].failed_calls
        ),
        (Some("failure"), 4, 2),
        "{runs:?}"
    );
    let o = env
        .call(s, "use_secret", json!({"name": "ROOT", "careless": true}))
        .await;
    assert_eq!(failed(&o).0, Some(Rule::VaultNotAllowed));

    // Every refusal is an event with its rule (refusals raised inside a tool included).
    let refusals = env.refusals(s).await;
    assert_eq!(
        refusals,
        pairs(&[
            ("admin", "not_offered"),
            ("leak", "class_not_declared"),
            ("skill_create", "skill_cannot_modify"),
            ("skill_list", "skill_cannot_modify"),
            ("skill_remove", "skill_cannot_modify"),
            ("raise_budget", "not_offered"),
            ("set_policy", "not_offered"),
            ("take_note", "class_not_declared"),
            ("use_secret", "vault_not_allowed"),
            ("net", "destination_not_allowed"),
            ("use_secret", "vault_not_allowed"),
        ])
    );
    // A refusal raised inside a tool that stopped it is that call's one `call_refused` event
    // (listed above, once each), never also a failed `tool_called`.
    let called = env.session_events(s, "tool_called").await;
    let failed_rules: Vec<(&str, &str)> = called
        .iter()
        .filter(|d| d["ok"] == false)
        .map(|d| {
            (
                d["tool"].as_str().unwrap(),
                d["rule"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(failed_rules, Vec::<(&str, &str)>::new());
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_page_and_encoded_secrets_are_scrubbed_everywhere() {
    let env = Env::new().await;
    env.put(skill("seed", "", "So the agent has a view.")).await;
    let s = "page";
    // The page asks for the saved password and carries it in clear and URL-encoded.
    let o = env.call(s, "page", json!({})).await;
    let text = done(&o).as_str().unwrap().to_owned();
    assert!(
        text.contains("ignore all previous instructions") && text.contains("[REDACTED:LOGIN]"),
        "{text}"
    );
    // The model obeys: the destination is not granted.
    let o = env
        .call(s, "net", json!({"host": "evil.example.net"}))
        .await;
    assert_eq!(failed(&o).0, Some(Rule::DestinationNotAllowed));
    // Each encoded form of a value in a result or an error.
    for form in [
        "raw",
        "base64",
        "base64url",
        "hex",
        "HEX",
        "url",
        "embedded",
        "key",
        "error",
    ] {
        let o = env.call(s, "leak", json!({"form": form})).await;
        let shown = serde_json::to_string(&o).unwrap();
        assert!(shown.contains("[REDACTED:LOGIN]"), "{form}: {shown}");
        if form == "error" {
            assert_eq!(failed(&o).0, None);
        }
    }
    // A careless tool that returns the value it resolved.
    let o = env
        .call(s, "use_secret", json!({"name": "LOGIN", "careless": true}))
        .await;
    assert_eq!(done(&o)["value"], json!("[REDACTED:LOGIN]"));
    // The model pastes the value into arguments: the result and the event are scrubbed.
    let o = env
        .call(s, "echo", json!({"text": format!("is it {SECRET}?")}))
        .await;
    assert_eq!(done(&o)["echo"], json!("is it [REDACTED:LOGIN]?"));
    let ev = env.called(s, o.call_id()).await;
    assert_eq!(ev["arguments"]["text"], json!("is it [REDACTED:LOGIN]?"));
    // ... or where validation would quote it back, or as a tool name: refused, and never quoted
    // (a redacted echo would tell the caller its guess was the value).
    let o = env.call(s, "echo", json!({"text": "x", "n": SECRET})).await;
    assert_eq!(refused(&o), Rule::InvalidArguments);
    assert!(
        o.for_model().contains("the value is not of type")
            && !o.for_model().contains("REDACTED")
            && !o.for_model().contains(SECRET),
        "{}",
        o.for_model()
    );
    let o = env
        .call(
            s,
            "echo",
            json!({"text": "x", STANDARD.encode(OTHER_SECRET): 1}),
        )
        .await;
    assert_eq!(refused(&o), Rule::InvalidArguments);
    let o = env.call(s, SECRET, json!({})).await;
    assert_eq!(refused(&o), Rule::NotOffered);
    let o = env.call(s, "load_skill", json!({"name": SECRET})).await;
    assert_eq!(refused(&o), Rule::NotOffered);
    assert!(
        o.for_model().contains("no skill of that name") && !o.for_model().contains("REDACTED"),
        "{}",
        o.for_model()
    );
    let o = env
        .call(s, "search_skills", json!({"query": hex(ROOT_SECRET)}))
        .await;
    done(&o);
    assert!(
        env.refusals(s)
            .await
            .contains(&("[REDACTED:LOGIN]".into(), "not_offered".into()))
    );
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_grant_refuses_the_next_call() {
    let env = Env::new().await;
    env.put(skill("signin", "capabilities:\n  tools: [echo, vaultuse, net]\n  vault: [LOGIN]\n  hosts: [api.example.com]\n", "Sign in."))
        .await;
    let s = "revoke";
    env.load(s, "signin").await;
    done(&env.call(s, "echo", json!({"text": "a"})).await);
    done(&env.call(s, "use_secret", json!({"name": "LOGIN"})).await);
    assert_eq!(
        done(&env.call(s, "net", json!({"host": "api.example.com"})).await)["hosts_allowed"],
        json!(["api.example.com"])
    );

    env.change(&bot(), |c| {
        c.grants.tools.retain(|t| t != "echo");
        c.grants.vault.retain(|v| v != "LOGIN");
        c.grants.hosts.retain(|h| h != "api.example.com");
    })
    .await;
    // The tool is no longer offered; the vault entry and the host are out of every call.
    assert_eq!(
        refused(&env.call(s, "echo", json!({"text": "a"})).await),
        Rule::NotOffered
    );
    assert!(env.offered(&bot()).withheld.contains(&"echo".to_owned()));
    assert_eq!(
        failed(&env.call(s, "use_secret", json!({"name": "LOGIN"})).await).0,
        Some(Rule::VaultNotAllowed)
    );
    assert_eq!(
        failed(&env.call(s, "net", json!({"host": "api.example.com"})).await).0,
        Some(Rule::DestinationNotAllowed)
    );
    // Two failed calls ended the run; outside any skill the grants refuse alike.
    assert!(env.store.open_run(&bot(), s).await.unwrap().is_none());
    assert_eq!(
        refused(&env.call(s, "echo", json!({"text": "a"})).await),
        Rule::NotOffered
    );
    assert_eq!(
        failed(&env.call(s, "use_secret", json!({"name": "LOGIN"})).await).0,
        Some(Rule::VaultNotAllowed)
    );
    // Authoring revoked.
    done(&env.call(s, "skill_list", json!({})).await);
    env.change(&bot(), |c| c.grants.tools.retain(|t| t != "skills"))
        .await;
    assert_eq!(
        refused(&env.call(s, "skill_list", json!({})).await),
        Rule::NotOffered
    );
    let rules: Vec<String> = env.refusals(s).await.into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        rules,
        [
            "not_offered",
            "vault_not_allowed",
            "destination_not_allowed",
            "not_offered",
            "vault_not_allowed",
            "not_offered"
        ]
    );
    env.assert_clean().await;
}
