//! `GET /v1/doctor`: every finding for an admin, one agent's with `?agent=`, and for an agent
//! token only its own agent's findings about what it may see — another agent answers exactly as
//! a missing one; a malformed query is refused and records nothing; one `doctor` event per
//! answer. Agents' `prompts` are checked like every other field.

use super::*;

/// The fixture's agents with findings: alpha's prompt names a shared skill it may not load
/// (D001) and beta's private one (never looked for); beta marks eager a skill it does not allow
/// (D006); a shared skill declares `eager:` (D005, a skill-level finding).
async fn with_findings() -> TestServer {
    let s = TestServer::start().await;
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-three",
        &[(
            "SKILL.md",
            b"---\nname: shared-three\ndescription: The third shared skill, for tests.\neager: true\n---\n\nBody.\n",
        )],
    )
    .await;
    let put = |name: &str, config: Value| {
        s.put(&format!("/v1/agents/{name}"), &s.admin)
            .json(&config)
            .send()
    };
    let r = put(
        "alpha",
        json!({"skills": ["shared-one", "shared-two", "alpha-secret"],
               "grants": {"tools": ["notes", "skills"]},
               "prompts": [{"text": "Use shared-two for greetings.\nOld: shared-three, or ask beta-secret."}]}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r = put(
        "beta",
        json!({"skills": ["shared-one", "beta-secret"], "eager": ["shared-two"],
               "grants": {"tools": ["notes"]}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    s
}

async fn doctor_events(s: &TestServer) -> Vec<skillbase_store::EventRecord> {
    s.store
        .events(&EventFilter {
            kind: Some("doctor".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap()
}

/// (code, agent, skill, related) of each finding.
fn keys(report: &Value) -> BTreeSet<(String, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                s(&f["code"]),
                s(&f["agent"]),
                s(&f["skill"]),
                s(&f["related"]),
            )
        })
        .collect()
}

fn key(code: &str, agent: &str, skill: &str, related: &str) -> (String, String, String, String) {
    (code.into(), agent.into(), skill.into(), related.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_sees_every_finding_and_an_agent_token_only_its_own() {
    let s = with_findings().await;
    let all = ok_json(s.get("/v1/doctor", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(
        keys(&all),
        BTreeSet::from([
            key("D001", "alpha", "", "shared-three"),
            key("D005", "", "shared-three", ""),
            key("D006", "beta", "", "shared-two"),
        ]),
        "{all:#}"
    );
    assert_eq!(
        all["counts"],
        json!({"errors": 1, "warnings": 2, "infos": 0})
    );
    let d001 = &all["findings"][0];
    assert_eq!(
        (d001["file"].as_str(), d001["line"].as_u64()),
        (Some("prompts[0]"), Some(2))
    );
    assert!(!all.to_string().contains("beta-secret"), "{all}");
    // One agent, for an admin: its findings (shared-three is not alpha's, so no D005).
    let alpha = ok_json(
        s.get("/v1/doctor?agent=alpha", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(alpha["agent"], "alpha");
    assert_eq!(
        keys(&alpha),
        BTreeSet::from([key("D001", "alpha", "", "shared-three")])
    );
    // The agent's own token: the same, with or without naming itself.
    for path in ["/v1/doctor", "/v1/doctor?agent=alpha"] {
        let own = ok_json(s.get(path, &s.alpha).send().await.unwrap(), 200).await;
        assert_eq!(keys(&own), keys(&alpha), "{path}");
        // How many skills it sees (shared-one, shared-two, alpha-secret), not the store's five.
        assert_eq!(own["checked"]["skills"], 3, "{path}");
        let text = own.to_string();
        for other in ["beta", "D005", "D006"] {
            assert!(!text.contains(other), "{path}: {other} in {text}");
        }
    }
    let beta = ok_json(s.get("/v1/doctor", &s.beta).send().await.unwrap(), 200).await;
    assert_eq!(
        keys(&beta),
        BTreeSet::from([key("D006", "beta", "", "shared-two")])
    );
    assert!(!beta.to_string().contains("alpha"), "{beta}");
    // Another agent answers exactly as a missing one.
    let (st, other) = problem(
        s.get("/v1/doctor?agent=beta", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st2, missing) = problem(
        s.get("/v1/doctor?agent=nobody", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st3, missing_too) = problem(
        s.get("/v1/doctor?agent=nobody", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, st2, st3), (404, 404, 404));
    assert_eq!(
        without(&other["detail"], "beta"),
        without(&missing["detail"], "nobody")
    );
    assert_eq!(other["type"], missing["type"]);
    assert_eq!(missing, missing_too);
    // One event per answer, with who asked; the 404s recorded nothing.
    let ev = doctor_events(&s).await;
    assert_eq!(ev.len(), 5);
    assert!(ev[0].actor.as_deref().unwrap().starts_with("human:token-"));
    assert_eq!(ev[2].actor.as_deref(), Some("agent:alpha/inline"));
    assert_eq!(ev[2].agent.as_deref(), Some("alpha"));
    assert_eq!(ev[2].data["own_only"], true);
    assert_eq!(
        ev[0].data["codes"],
        json!({"D001": 1, "D005": 1, "D006": 1})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_query_is_refused_and_records_nothing() {
    let s = TestServer::start().await;
    for (query, want) in [
        ("agent=Bad%20Name", "invalid agent name"),
        ("agent=", "invalid agent name"),
        ("agent=-x", "invalid agent name"),
        (&format!("agent={}", "a".repeat(65)), "invalid agent name"),
        ("agnt=alpha", "unknown field"),
        ("agent=alpha&agent=beta", "duplicate field"),
    ] {
        for token in [&s.admin, &s.alpha] {
            let (st, p) = problem(
                s.get(&format!("/v1/doctor?{query}"), token)
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(st, 400, "{query}: {p}");
            assert!(p["detail"].as_str().unwrap().contains(want), "{query}: {p}");
        }
    }
    let r = s.http.get(s.url("/v1/doctor")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(doctor_events(&s).await.is_empty());
    // A clean store answers with no finding.
    let r = ok_json(s.get("/v1/doctor", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(r["findings"], json!([]));
    assert_eq!(r["checked"]["agents"], 2);
    assert_eq!(doctor_events(&s).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_checked_like_every_field_of_an_agent() {
    let s = TestServer::start().await;
    let before = s
        .store
        .agent(&AgentName::parse("alpha").unwrap())
        .await
        .unwrap();
    let many: Vec<Value> = (0..33).map(|i| json!(format!("p{i}.md"))).collect();
    for prompts in [
        json!([""]),
        json!([{"text": ""}]),
        json!([{"text": "x".repeat(65_537)}]),
        json!([{"path": "a\u{7}b"}]),
        json!(["x".repeat(4097)]),
        json!([{"file": "a.md"}]),
        json!([{"path": "a.md", "text": "b"}]),
        json!([3]),
        Value::Array(many),
    ] {
        let r = s
            .put("/v1/agents/alpha", &s.admin)
            .json(&json!({"skills": "all", "prompts": prompts}))
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 422, "{prompts}: {p}");
        assert!(
            p["detail"].as_str().unwrap().contains("prompt"),
            "{prompts}: {p}"
        );
    }
    let after = s
        .store
        .agent(&AgentName::parse("alpha").unwrap())
        .await
        .unwrap();
    assert_eq!(before, after, "a refused configuration changed nothing");
    // A path, a path table and a text: shown as tables.
    let a = ok_json(
        s.put("/v1/agents/alpha", &s.admin)
            .json(&json!({"skills": "all", "prompts": ["/srv/p.md", {"path": "q.md"}, {"text": "Be brief."}]}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        a["prompts"],
        json!([{"path": "/srv/p.md"}, {"path": "q.md"}, {"text": "Be brief."}])
    );
    // A file that cannot be read is not checked, and the report says so.
    let r = ok_json(
        s.get("/v1/doctor?agent=alpha", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let unchecked = r["unchecked"].to_string();
    assert!(
        unchecked.contains("/srv/p.md") && unchecked.contains("q.md"),
        "{unchecked}"
    );
    assert_eq!(r["checked"]["prompts"], 1);
}
