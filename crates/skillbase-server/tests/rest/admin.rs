//! Agents, the vault and tokens for admins; an agent token's writes go through the authoring
//! tools.

use super::*;

#[tokio::test]
async fn agents_vault_and_tokens_for_admins() {
    let s = TestServer::start().await;
    let list = ok_json(s.get("/v1/agents", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    let r = s.get("/v1/agents/alpha", &s.alpha).send().await.unwrap();
    let v = r.headers()["etag"].to_str().unwrap().to_owned();
    let a = ok_json(r, 200).await;
    assert_eq!(a["grants"]["tools"], json!(["notes", "skills"]));
    let c = ok_json(
        s.post("/v1/agents", &s.admin)
            .json(&json!({"name": "delta", "config": {"skills": "all", "description": "D"}}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(
        (c["skills"].as_str(), c["description"].as_str()),
        (Some("all"), Some("D"))
    );
    let (st, _) = problem(
        s.post("/v1/agents", &s.admin)
            .json(&json!({"name": "delta"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409);
    for bad in [
        json!({"name": "Bad Name"}),
        json!({"name": "e", "config": {"skilz": []}}),
        json!({"name": "e", "config": {"grants": {"hosts": ["https://x.com/a"]}}}),
    ] {
        let (st, p) = problem(
            s.post("/v1/agents", &s.admin)
                .json(&bad)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(st, 422, "{bad}: {p}");
    }
    let (st, p) = problem(
        s.put("/v1/agents/alpha", &s.admin)
            .header("if-match", "\"99\"")
            .json(&json!({"skills": "all"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, p["extra"]["current_version"].clone()),
        (412, json!(a["version"]))
    );
    let r = s
        .put("/v1/agents/alpha", &s.admin)
        .header("if-match", v)
        .json(&json!({"skills": ["shared-one"], "grants": {"tools": ["notes"]}}))
        .send()
        .await
        .unwrap();
    let u = ok_json(r, 200).await;
    assert_eq!(u["version"].as_i64(), a["version"].as_i64().map(|v| v + 1));
    let page = ok_json(s.get("/v1/skills", &s.alpha).send().await.unwrap(), 200).await;
    assert_eq!(
        page["items"].as_array().unwrap().len(),
        1,
        "the new allowlist applies at once"
    );
    let r = s
        .put("/v1/agents/epsilon", &s.admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 201).await["name"], "epsilon");

    // Vault: the value goes in and never comes out.
    let secret = "sk_live_very_secret_value_123";
    let r = s
        .put("/v1/vault/PAYMENTS_KEY", &s.admin)
        .json(&json!({"value": secret, "description": "payments"}))
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    assert!(!text.contains(secret), "{text}");
    let e: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (e["name"].as_str(), e["description"].as_str()),
        (Some("PAYMENTS_KEY"), Some("payments"))
    );
    let list = s
        .get("/v1/vault", &s.admin)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        list.contains("PAYMENTS_KEY") && !list.contains(secret),
        "{list}"
    );
    let (st, _) = problem(
        s.put("/v1/vault/bad name!", &s.admin)
            .json(&json!({"value": secret}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    // Descriptions are one line agents see: control characters and megabytes are refused, and
    // the entry keeps its description.
    for description in ["two\nlines".to_owned(), "d".repeat(501)] {
        let (st, p) = problem(
            s.put("/v1/vault/PAYMENTS_KEY", &s.admin)
                .json(&json!({"value": secret, "description": description}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            (st, p["type"].as_str()),
            (422, Some("urn:skillbase:problem:invalid-vault-entry")),
            "{p}"
        );
        assert!(p["detail"].as_str().unwrap().contains("at most 500"), "{p}");
        assert!(!p.to_string().contains(secret), "{p}");
    }
    let list = s
        .get("/v1/vault", &s.admin)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!list.contains("two") && !list.contains("ddd"), "{list}");
    // A skill carrying the value is refused.
    let r = s
        .markdown(
            "/v1/skills/leaky",
            &s.admin,
            skill_md("leaky", "Leaky", &format!("use {secret}")),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 422);
    let r = s
        .req(Method::DELETE, "/v1/vault/PAYMENTS_KEY", &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (st, _) = problem(
        s.req(Method::DELETE, "/v1/vault/PAYMENTS_KEY", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);

    // Tokens: listed without secrets or hashes.
    let list = ok_json(s.get("/v1/tokens", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(list.as_array().unwrap().len(), 3);
    let text = list.to_string();
    assert!(
        !text.contains(&s.admin) && !text.contains("hash") && !text.contains("secret"),
        "{text}"
    );
    assert_eq!(list[1]["agent"], "alpha");
    let (st, _) = problem(
        s.post("/v1/tokens", &s.admin)
            .json(&json!({"agent": "nobody"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let (st, _) = problem(
        s.req(Method::DELETE, "/v1/tokens/abc", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 400);
    s.stop().await;
}

#[tokio::test]
async fn agent_token_writes_go_through_the_authoring_tools() {
    let s = TestServer::start().await;
    let r = s
        .markdown(
            "/v1/skills/tips",
            &s.alpha,
            skill_md("tips", "Handy tips", "Be brief."),
        )
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 201).await;
    assert_eq!(
        (w["scope"].as_str(), w["rev"].as_i64()),
        (Some("agent:alpha"), Some(1))
    );
    let h = ok_json(
        s.get("/v1/skills/tips/history?scope=agent:alpha", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(h[0]["author"], "agent:alpha/inline");
    assert_eq!(h[0]["message"], "written by the agent");
    // Outside alpha's allowlist, so not in its view (skill_show answers the same).
    let (st, _) = problem(s.get("/v1/skills/tips", &s.alpha).send().await.unwrap()).await;
    assert_eq!(st, 404);
    s.state.engine.flush().await;
    let evs = s
        .store
        .events(&EventFilter {
            session: Some("rest:alpha".into()),
            kind: Some("tool_called".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].data["tool"], "skill_create");

    // Modifying a shared skill writes the agent's own copy; the shared one is untouched.
    let r = s
        .markdown(
            "/v1/skills/shared-one?message=mine",
            &s.alpha,
            skill_md("shared-one", "Alpha's take", "Own."),
        )
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 201).await;
    assert_eq!(w["scope"], "agent:alpha");
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .head_rev,
        1
    );
    let d = ok_json(
        s.get("/v1/skills/shared-one", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(d["meta"]["description"], "Alpha's take");

    // What the tools refuse, REST refuses.
    let r = s
        .markdown("/v1/skills/tips2", &s.beta, skill_md("tips2", "T", "b"))
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 403, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("`skills`"), "{p}");
    let md = "---\nname: fetcher\ndescription: Fetches\ncapabilities:\n  tools:\n    - web_fetch\n---\nFetch.\n";
    let (st, p) = problem(
        s.markdown("/v1/skills/fetcher", &s.alpha, md.into())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, p["type"].as_str()),
        (403, Some("urn:skillbase:problem:capability-not-granted"))
    );
    let md = "---\nname: lic\ndescription: Licensed\nlicense: MIT\n---\nBody.\n";
    let (st, p) = problem(
        s.markdown("/v1/skills/lic", &s.alpha, md.into())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    assert!(p["detail"].as_str().unwrap().contains("license"), "{p}");
    let r = s
        .put("/v1/skills/tips", &s.alpha)
        .json(&json!({"files": {"SKILL.md": skill_md("tips", "T", "b"), "x.md": "x"}}))
        .send()
        .await
        .unwrap();
    // A well-formed body the token may not send: forbidden, not malformed.
    let (st, p) = problem(r).await;
    assert_eq!(
        (st, p["type"].as_str()),
        (403, Some("urn:skillbase:problem:file-not-writable"))
    );
    let r = s
        .markdown(
            "/v1/skills/tips?scope=shared",
            &s.alpha,
            skill_md("tips", "T", "b"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 403);
    let r = s
        .markdown(
            "/v1/skills/tips",
            &s.alpha,
            skill_md("tips", "Handy tips", ""),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        problem(r).await.0,
        422,
        "an empty body is refused by the tool's schema"
    );
    assert!(s.store.index().get(&Scope::Shared, "tips").is_none());

    // Revert and retire on its own skill; a session it names gates the write.
    let r = s
        .markdown(
            "/v1/skills/tips",
            &s.alpha,
            skill_md("tips", "Handy tips", "Be very brief."),
        )
        .header("if-match", "\"1\"")
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 200).await["rev"], 2);
    let w = ok_json(
        s.post("/v1/skills/tips/revert", &s.alpha)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (w["rev"].as_i64(), w["latest_rev"].as_i64()),
        (Some(1), Some(2))
    );
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "driving"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    ok_json(
        s.post("/v1/sessions/driving/calls", &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": "shared-two"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let r = s
        .post("/v1/skills/tips/retire", &s.alpha)
        .header("skillbase-session", "driving")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 409, "a skill drives that session: {p}");
    let r = s
        .post("/v1/skills/tips/retire", &s.alpha)
        .header("skillbase-session", "beta-nothing")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 404);
    let w = ok_json(
        s.post("/v1/skills/tips/retire", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "retired");
    let (st, _) = problem(
        s.post("/v1/skills/shared-two/retire", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404, "an agent retires only its own records");

    // The approval policy holds agent revisions for review.
    let mut cfg = serde_json::to_value(
        &s.store
            .agent(&AgentName::parse("alpha").unwrap())
            .await
            .unwrap()
            .unwrap()
            .config,
    )
    .unwrap();
    cfg["policies"]["review_agent_revisions"] = json!(true);
    ok_json(
        s.put("/v1/agents/alpha", &s.admin)
            .json(&cfg)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let r = s
        .markdown(
            "/v1/skills/reviewed",
            &s.alpha,
            skill_md("reviewed", "Needs review", "b"),
        )
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 202).await;
    assert_eq!(
        (w["pending_review"].as_bool(), w["status"].as_str()),
        (Some(true), Some("pending"))
    );
    let pending = ok_json(s.get("/v1/approvals", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(
        (
            pending[0]["name"].as_str(),
            pending[0]["scope"].as_str(),
            pending[0]["rev"].as_i64()
        ),
        (Some("reviewed"), Some("agent:alpha"), Some(1))
    );
    assert_eq!(pending[0]["author"], "agent:alpha/inline");
    let w = ok_json(
        s.post("/v1/skills/reviewed/approve?scope=agent:alpha", &s.admin)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "active");
    assert_eq!(
        ok_json(s.get("/v1/approvals", &s.admin).send().await.unwrap(), 200).await,
        json!([])
    );
    let (st, p) = problem(
        s.post("/v1/skills/reviewed/approve?scope=agent:alpha", &s.admin)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    // A well-formed request the revision's state refuses: a conflict, saying what the state is.
    assert_eq!(st, 409, "not pending any more: {p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("not pending approval (it is committed)"),
        "{p}"
    );
    s.stop().await;
}

/// An agent token's PUT takes every key the authoring tools take (the draft's fields, one
/// list): `when_to_use` and `when_not_to_use` reach the stored skill; a key no tool takes is
/// still refused, naming it.
#[tokio::test]
async fn agent_token_writes_take_every_draft_field() {
    let s = TestServer::start().await;
    let text = "---\nname: routed\ndescription: Route refund questions.\nwhen_to_use:\n  - a customer asks for money back\nwhen_not_to_use:\n  - an invoice question\nversion: \"1.2.0\"\n---\nRoute them.\n";
    let r = s
        .markdown("/v1/skills/routed", &s.alpha, text.into())
        .send()
        .await
        .unwrap();
    ok_json(r, 201).await;
    let e = s
        .store
        .index()
        .get(&Scope::Agent(AgentName::parse("alpha").unwrap()), "routed")
        .cloned()
        .unwrap();
    assert_eq!(e.meta.when_to_use, ["a customer asks for money back"]);
    assert_eq!(e.meta.when_not_to_use, ["an invoice question"]);
    let (st, p) = problem(
        s.markdown(
            "/v1/skills/other",
            &s.alpha,
            "---\nname: other\ndescription: x y z\nlicense: MIT\n---\nBody.\n".into(),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("`license`") && detail.contains("when_to_use"),
        "{detail}"
    );
}
