//! Authentication and isolation: 401s, 403s on admin routes, and another agent's private skill
//! that reads as a missing one.

use super::*;

#[tokio::test]
async fn missing_wrong_and_revoked_tokens_get_401_problems() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/v1/skills")).send().await.unwrap();
    assert_eq!(problem(r).await.0, 401);
    let r = s
        .get("/v1/skills/shared-one", "sbt_wrong")
        .send()
        .await
        .unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(
        (status, p["detail"].as_str().unwrap()),
        (401, skillbase_server::auth::UNKNOWN_TOKEN)
    );

    let created = ok_json(
        s.post("/v1/tokens", &s.admin)
            .json(&json!({"label": "ci", "agent": "alpha"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("sbt_"));
    assert_eq!(created["agent"], "alpha");
    let r = s.get("/v1/skills", &secret).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let id = created["id"].as_i64().unwrap();
    let r = s
        .req(Method::DELETE, &format!("/v1/tokens/{id}"), &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = s.get("/v1/skills", &secret).send().await.unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(status, 401);
    assert!(p["detail"].as_str().unwrap().contains("revoked"), "{p}");
    // Revoking again: nothing to revoke.
    let r = s
        .req(Method::DELETE, &format!("/v1/tokens/{id}"), &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 404);
    s.stop().await;
}

#[tokio::test]
async fn agent_tokens_get_403_on_admin_routes() {
    let s = TestServer::start().await;
    let zip = zip_of(&[(
        "SKILL.md",
        skill_md("zipped", "Zipped skill", "Body.").as_bytes(),
    )]);
    let cases: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/v1/tokens", None),
        (Method::POST, "/v1/tokens", Some(json!({"label": "x"}))),
        (Method::DELETE, "/v1/tokens/1", None),
        (Method::GET, "/v1/vault", None),
        (
            Method::PUT,
            "/v1/vault/KEY",
            Some(json!({"value": "a-secret-value-1234"})),
        ),
        (Method::DELETE, "/v1/vault/KEY", None),
        (Method::POST, "/v1/agents", Some(json!({"name": "x"}))),
        (
            Method::PUT,
            "/v1/agents/alpha",
            Some(json!({"skills": "all"})),
        ),
        (Method::GET, "/v1/approvals", None),
        (Method::POST, "/v1/skills/alpha-secret/restore", None),
        (Method::POST, "/v1/skills/alpha-secret/disable", None),
        (Method::POST, "/v1/skills/alpha-secret/enable", None),
        (
            Method::POST,
            "/v1/skills/alpha-secret/approve",
            Some(json!({"rev": 1})),
        ),
    ];
    let before = s.event_count().await;
    for (m, path, body) in cases {
        let mut rb = s.req(m.clone(), path, &s.alpha);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let (status, p) = problem(rb.send().await.unwrap()).await;
        assert_eq!(status, 403, "{m} {path}: {p}");
        assert_eq!(p["type"], "urn:skillbase:problem:forbidden", "{m} {path}");
    }
    let r = s
        .post("/v1/imports", &s.alpha)
        .header("content-type", "application/zip")
        .body(zip)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 403);
    assert_eq!(
        s.event_count().await,
        before,
        "a refused request changed something"
    );
    s.stop().await;
}

#[tokio::test]
async fn another_agents_private_skill_is_indistinguishable_from_a_missing_one() {
    let s = TestServer::start().await;
    for suffix in ["", "/history", "/diff?from=1", "/export", "/runs"] {
        let a = s
            .get(&format!("/v1/skills/beta-secret{suffix}"), &s.alpha)
            .send()
            .await
            .unwrap();
        let (sa, pa) = problem(a).await;
        let b = s
            .get(&format!("/v1/skills/no-such-skill{suffix}"), &s.alpha)
            .send()
            .await
            .unwrap();
        let (sb, pb) = problem(b).await;
        assert_eq!((sa, sb), (404, 404), "{suffix}");
        assert_eq!(
            without(&pa["detail"], "beta-secret"),
            without(&pb["detail"], "no-such-skill"),
            "{suffix}"
        );
        assert_eq!(pa["type"], pb["type"]);
        // Naming the scope changes nothing.
        let sep = if suffix.contains('?') { "&" } else { "?" };
        let c = s
            .get(
                &format!("/v1/skills/beta-secret{suffix}{sep}scope=agent:beta"),
                &s.alpha,
            )
            .send()
            .await
            .unwrap();
        let (sc, pc) = problem(c).await;
        assert_eq!(sc, 404, "{suffix}");
        assert_eq!(pc["detail"], pa["detail"], "{suffix}");
    }
    for (m, suffix, body) in [
        (Method::POST, "/revert", json!({"rev": 1})),
        (Method::POST, "/retire", json!({})),
    ] {
        let a = s
            .req(
                m.clone(),
                &format!("/v1/skills/beta-secret{suffix}"),
                &s.alpha,
            )
            .json(&body)
            .send()
            .await
            .unwrap();
        let (sa, pa) = problem(a).await;
        let b = s
            .req(m, &format!("/v1/skills/no-such-skill{suffix}"), &s.alpha)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (sb, pb) = problem(b).await;
        assert_eq!((sa, sb), (404, 404), "{suffix}");
        assert_eq!(
            without(&pa["detail"], "beta-secret"),
            without(&pb["detail"], "no-such-skill")
        );
    }
    let e = s
        .store
        .index()
        .get(
            &Scope::Agent(AgentName::parse("beta").unwrap()),
            "beta-secret",
        )
        .cloned()
        .unwrap();
    assert_eq!(
        e.status.as_str(),
        "active",
        "alpha's retire reached beta's skill"
    );

    // By listing and search.
    for q in [
        "",
        "?q=beta",
        "?q=secret",
        "?status=all",
        "?scope=agent:beta",
    ] {
        let page = ok_json(
            s.get(&format!("/v1/skills{q}"), &s.alpha)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let text = page.to_string();
        assert!(!text.contains("beta-secret"), "{q}: {text}");
    }
    let page = ok_json(s.get("/v1/skills", &s.alpha).send().await.unwrap(), 200).await;
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha-secret", "shared-one", "shared-two"]);

    // Through a session: search, load and the event stream.
    let sess = ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let id = sess["id"].as_str().unwrap().to_owned();
    let out = ok_json(
        s.post(&format!("/v1/sessions/{id}/calls"), &s.alpha)
            .json(&json!({"name": "search_skills", "arguments": {"query": "beta secret skill tests"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(out["status"], "done", "{out}");
    assert!(!out.to_string().contains("beta-secret"), "{out}");
    let load = |name: &'static str| {
        s.post(&format!("/v1/sessions/{id}/calls"), &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": name}}))
            .send()
    };
    let a = ok_json(load("beta-secret").await.unwrap(), 200).await;
    let b = ok_json(load("no-such-skill").await.unwrap(), 200).await;
    assert_eq!(a["status"], "refused");
    assert_eq!(
        without(&a["message"], "beta-secret"),
        without(&b["message"], "no-such-skill")
    );
    s.state.engine.flush().await;
    let evs = s
        .store
        .events(&EventFilter {
            session: Some(id.clone()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert!(!evs.is_empty());
    for e in &evs {
        assert_ne!(e.skill.as_deref(), Some("beta-secret"), "{e:?}");
        assert!(
            !e.data.to_string().contains("The beta-secret skill"),
            "{e:?}"
        );
    }
    // Beta's session, agent and events are as absent for alpha as ones that do not exist.
    let bs = ok_json(
        s.post("/v1/sessions", &s.beta)
            .json(&json!({"id": "beta-s1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(bs["agent"], "beta");
    for suffix in ["", "/events", "/pinned"] {
        let (sa, pa) = problem(
            s.get(&format!("/v1/sessions/beta-s1{suffix}"), &s.alpha)
                .send()
                .await
                .unwrap(),
        )
        .await;
        let (sb, pb) = problem(
            s.get(&format!("/v1/sessions/nobody-s1{suffix}"), &s.alpha)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!((sa, sb), (404, 404));
        assert_eq!(
            without(&pa["detail"], "beta-s1"),
            without(&pb["detail"], "nobody-s1")
        );
    }
    let (sa, pa) = problem(
        s.post("/v1/sessions/beta-s1/calls", &s.alpha)
            .json(&json!({"name": "take_note", "arguments": {"text": "x"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(sa, 404, "{pa}");
    let (sa, pa) = problem(s.get("/v1/agents/beta", &s.alpha).send().await.unwrap()).await;
    let (sb, pb) = problem(s.get("/v1/agents/nobody", &s.alpha).send().await.unwrap()).await;
    assert_eq!((sa, sb), (404, 404));
    assert_eq!(
        without(&pa["detail"], "beta"),
        without(&pb["detail"], "nobody")
    );
    let agents = ok_json(s.get("/v1/agents", &s.alpha).send().await.unwrap(), 200).await;
    assert_eq!(agents.as_array().unwrap().len(), 1);
    assert_eq!(agents[0]["name"], "alpha");
    // Alpha cannot open a session for beta; beta's id is, for alpha, a new session of its own.
    let (st, _) = problem(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"agent": "beta"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let mine = ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "beta-s1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(mine["agent"], "alpha");
    assert_eq!(mine["activations"], json!([]));
    s.stop().await;
}
