//! The server's lifecycle and authentication: probes, metrics, tokens, `--dev`, shutdown.

use crate::common::{self, TestServer, problem};
use skillbase_server::{ServerOptions, check_dev_bind};
use skillbase_store::Author;

#[tokio::test]
async fn probes_answer_without_a_token_and_say_nothing_else() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "ok\n");
    let r = s.http.get(s.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "ready\n");
    s.stop().await;
}

#[tokio::test]
async fn every_other_route_needs_a_valid_token() {
    let s = TestServer::start().await;
    for path in ["/metrics", "/v1/skills", "/v1/anything", "/mcp"] {
        let r = s.http.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 401, "{path}");
        assert_eq!(
            r.headers().get("www-authenticate").unwrap(),
            "Bearer realm=\"skillbase\""
        );
        let (status, p) = problem(r).await;
        assert_eq!(status, 401, "{path}");
        assert_eq!(p["type"], "urn:skillbase:problem:unauthorized");
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("Authorization: Bearer")
        );

        let r = s
            .http
            .get(s.url(path))
            .bearer_auth("sbt_not-a-real-token")
            .send()
            .await
            .unwrap();
        let (status, p) = problem(r).await;
        assert_eq!(status, 401, "{path}");
        assert_eq!(p["detail"], skillbase_server::auth::UNKNOWN_TOKEN);
        // It says what to do, not only what is wrong.
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("skillbase token create")
        );

        let r = s
            .http
            .get(s.url(path))
            .header("authorization", "Basic YWRtaW46YWRtaW4=")
            .send()
            .await
            .unwrap();
        assert_eq!(problem(r).await.0, 401, "{path}");
    }
    s.stop().await;
}

#[tokio::test]
async fn metrics_are_for_admins_and_count_requests() {
    let s = TestServer::start().await;
    let r = s
        .http
        .get(s.url("/metrics"))
        .bearer_auth(&s.alpha)
        .send()
        .await
        .unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(status, 403);
    assert!(p["detail"].as_str().unwrap().contains("admin token"));

    let _ = s.http.get(s.url("/metrics")).send().await.unwrap(); // a 401 to count
    let r = s
        .http
        .get(s.url("/metrics"))
        .bearer_auth(&s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        text.contains(
            r#"skillbase_http_requests_total{method="GET",route="/metrics",status="403"} 1"#
        ),
        "{text}"
    );
    assert!(text.contains("skillbase_auth_failures_total 1"), "{text}");
    assert!(text.contains("skillbase_skills 4"), "{text}");
    assert!(text.contains("skillbase_agents 2"), "{text}");
    assert!(text.contains("skillbase_http_request_duration_seconds_bucket"));
    assert!(text.trim_end().ends_with("# EOF"));
    s.stop().await;
}

#[tokio::test]
async fn a_revoked_token_is_refused_at_once() {
    let s = TestServer::start().await;
    let get = |t: &str| {
        s.http
            .get(s.url("/metrics"))
            .bearer_auth(t.to_owned())
            .send()
    };
    assert_eq!(get(&s.admin).await.unwrap().status(), 200);
    // Revoke the admin token itself: every admin token's hash is in the store.
    let admin_id = s
        .store
        .tokens()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.agent.is_none())
        .unwrap()
        .id;
    assert!(
        s.store
            .token_revoke(admin_id, &Author::Human("test".into()))
            .await
            .unwrap()
    );
    // A revocation on another server reaches this one within the cache's lifetime; one made
    // through this server invalidates the cache.
    s.state.auth.invalidate();
    let (status, p) = problem(get(&s.admin).await.unwrap()).await;
    assert_eq!(status, 401);
    assert_eq!(p["detail"], skillbase_server::auth::REVOKED_TOKEN);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("this token has been revoked"),
        "{detail}"
    );
    assert!(detail.contains("skillbase token create"), "{detail}");
    assert!(detail.contains("serve --demo"), "{detail}");
    s.stop().await;
}

#[tokio::test]
async fn tokens_are_stored_only_as_hashes() {
    let s = TestServer::start().await;
    for t in s.store.tokens().await.unwrap() {
        assert_eq!(t.hash.len(), 64);
        assert!(!t.hash.contains(&s.admin) && !t.hash.contains(&s.alpha));
        assert_eq!(t.hash, t.hash.to_lowercase());
    }
    assert!(s.admin.starts_with("sbt_") && s.admin.len() == 4 + 43);
    assert_ne!(s.alpha, s.beta);
    // Serialised records (what an API would list) never carry the hash either.
    let json = serde_json::to_string(&s.store.tokens().await.unwrap()).unwrap();
    assert!(!json.contains("hash"), "{json}");
    s.stop().await;
}

#[tokio::test]
async fn dev_mode_needs_no_token_and_binds_only_loopback() {
    let s = TestServer::start_with(ServerOptions {
        dev: true,
        ..ServerOptions::default()
    })
    .await;
    let r = s.http.get(s.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    s.stop().await;

    assert!(check_dev_bind(&"127.0.0.1:8080".parse().unwrap(), true).is_ok());
    assert!(check_dev_bind(&"[::1]:8080".parse().unwrap(), true).is_ok());
    assert!(check_dev_bind(&"0.0.0.0:8080".parse().unwrap(), false).is_ok());
    let e = check_dev_bind(&"0.0.0.0:8080".parse().unwrap(), true).unwrap_err();
    assert!(e.to_string().contains("only binds loopback"), "{e}");
    assert!(check_dev_bind(&"192.168.1.10:80".parse().unwrap(), true).is_err());
}

#[tokio::test]
async fn unknown_paths_answer_problem_json() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/nope")).send().await.unwrap();
    assert_eq!(problem(r).await.0, 401, "unknown paths need a token too");
    let r = s
        .http
        .get(s.url("/nope"))
        .bearer_auth(&s.admin)
        .send()
        .await
        .unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(status, 404);
    assert!(p["detail"].as_str().unwrap().contains("/nope"));
    s.stop().await;
}

#[tokio::test]
async fn shutdown_stops_serving_and_readiness() {
    let s = TestServer::start().await;
    let url = s.url("/healthz");
    let http = s.http.clone();
    assert_eq!(http.get(&url).send().await.unwrap().status(), 200);
    s.stop().await;
    assert!(
        http.get(&url).send().await.is_err(),
        "still serving after shutdown"
    );
}

#[tokio::test]
async fn writes_by_another_process_reach_the_server() {
    let s = TestServer::start().await;
    // Another process (the CLI, another server) on the same database.
    let other = skillbase_store::Store::open(&skillbase_store::DbUrl::Sqlite(s.db.clone()))
        .await
        .unwrap();
    common::put_skill(
        &other,
        skillbase_store::Scope::Shared,
        "from-elsewhere",
        &[],
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while s
        .state
        .store
        .index()
        .get(&skillbase_store::Scope::Shared, "from-elsewhere")
        .is_none()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never saw the other process's write"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    other.close().await;
    s.stop().await;
}

/// The server applies `[retention]` at start and again every interval (not only once): turns
/// made after it started are trimmed by a later pass, each pass recorded as `events_trimmed`,
/// and what retention never trims (revisions, agent and token events) stays.
#[tokio::test]
async fn the_server_applies_the_retention_policy_every_interval() {
    use skillbase_store::EventFilter;
    use skillbase_store::retention::RetentionPolicy;
    let policy = RetentionPolicy {
        events_max_age: None,
        events_max_size: Some(1),
        sessions_max_age: None,
        interval: std::time::Duration::from_millis(200),
    };
    let s = TestServer::start_with(ServerOptions {
        retention: Some(policy),
        ..ServerOptions::default()
    })
    .await;
    let kept_before = s
        .store
        .events(&EventFilter::default())
        .await
        .unwrap()
        .iter()
        .filter(|e| !e.kind.trimmable() && e.kind.as_str() != "events_trimmed")
        .count();
    let trimmed = |events: &[skillbase_store::EventRecord]| {
        events
            .iter()
            .filter(|e| e.kind.as_str() == "events_trimmed")
            .count()
    };
    // Let the first pass (at start) happen, then make turns well after it.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let passes_before = trimmed(&s.store.events(&EventFilter::default()).await.unwrap());
    let r = s
        .post("/v1/sessions", &s.alpha)
        .json(&serde_json::json!({"id": "ret-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    for i in 0..5 {
        let r = s
            .post("/v1/sessions/ret-1/turns", &s.alpha)
            .json(&serde_json::json!({"message": format!("turn {i} about shared things")}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
    }
    s.state.engine.flush().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let events = s.store.events(&EventFilter::default()).await.unwrap();
        let turns = events.iter().filter(|e| e.kind.as_str() == "turn").count();
        if turns == 0 && trimmed(&events) > passes_before {
            // Nothing retention may not trim went away.
            let kept = events
                .iter()
                .filter(|e| !e.kind.trimmable() && e.kind.as_str() != "events_trimmed")
                .count();
            assert!(kept >= kept_before, "{kept} < {kept_before}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "turns made after start were never trimmed: {turns} turn events, {} passes",
            trimmed(&events)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    s.stop().await;
}
