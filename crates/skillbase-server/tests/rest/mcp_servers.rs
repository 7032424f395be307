//! Upstream MCP servers configured at run time over REST (`/v1/mcp-servers`): the upstream is a
//! real MCP server — another Skillbase server's streamable HTTP endpoint, reached with a token
//! held in the vault — added, used through the envelope, replaced and removed; every server on
//! the store follows; bad configurations change nothing; agent tokens are refused.

use super::*;

/// Wait until `s` lists server `name` in `state` (or fail after 30 s).
async fn wait_state(s: &TestServer, name: &str, state: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = ok_json(
            s.get("/v1/mcp-servers", &s.admin).send().await.unwrap(),
            200,
        )
        .await;
        if let Some(e) = list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name && e["state"] == state)
        {
            return e.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} never became {state}: {list}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn tool_names(s: &TestServer) -> Vec<String> {
    let t = ok_json(s.get("/v1/tools", &s.admin).send().await.unwrap(), 200).await;
    t["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_upstream_added_at_run_time_is_used_replaced_and_removed_on_every_server() {
    let up = TestServer::start().await;
    let s = TestServer::start().await;
    let other = s.join(ServerOptions::default()).await;
    ok_json(
        s.put("/v1/vault/UP_TOKEN", &s.admin)
            .json(&json!({"value": up.alpha, "description": "the upstream's alpha token"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let config = json!({
        "url": up.url("/mcp"),
        "headers": {"Authorization": {"vault": "UP_TOKEN", "prefix": "Bearer "}},
        "class": "upstream",
    });
    // Admin only.
    for r in [
        s.put("/v1/mcp-servers/up", &s.alpha).json(&config),
        s.get("/v1/mcp-servers", &s.alpha),
        s.get("/v1/mcp-servers/up", &s.beta),
        s.req(Method::DELETE, "/v1/mcp-servers/up", &s.alpha),
    ] {
        let (status, _) = problem(r.send().await.unwrap()).await;
        assert_eq!(status, 403);
    }
    let created = ok_json(
        s.put("/v1/mcp-servers/up", &s.admin)
            .json(&config)
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(created["origin"], "api", "{created}");
    assert_eq!(created["transport"], "http");
    assert_eq!(created["config"], config);
    assert!(
        created["updated_by"]
            .as_str()
            .unwrap()
            .starts_with("human:token-"),
        "{created}"
    );
    let connected = wait_state(&s, "up", "connected").await;
    assert!(connected["tools"].as_u64().unwrap() >= 2, "{connected}");
    assert!(
        tool_names(&s)
            .await
            .contains(&"up__search_skills".to_owned())
    );

    // Through the envelope: refused until alpha is granted the class, then answered upstream.
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "gw1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let call = || {
        s.post("/v1/sessions/gw1/calls", &s.alpha)
            .json(&json!({"name": "up__search_skills", "arguments": {"query": "shared"}}))
    };
    let refused = ok_json(call().send().await.unwrap(), 200).await;
    assert_eq!(refused["status"], "refused", "{refused}");
    let alpha = AgentName::parse("alpha").unwrap();
    let mut c = s.store.agent(&alpha).await.unwrap().unwrap().config;
    c.grants.tools.push("upstream".into());
    s.store.set_agent(&alpha, &c).await.unwrap();
    let done = ok_json(call().send().await.unwrap(), 200).await;
    assert_eq!(done["status"], "done", "{done}");
    assert!(done.to_string().contains("shared-one"), "{done}");

    // The other server on the store follows: connected there too.
    wait_state(&other, "up", "connected").await;
    assert!(
        tool_names(&other)
            .await
            .contains(&"up__search_skills".to_owned())
    );

    // Replaced: 200, restarted with the new configuration.
    let mut narrower = config.clone();
    narrower["exclude"] = json!(["load_skill"]);
    let replaced = ok_json(
        s.put("/v1/mcp-servers/up", &s.admin)
            .json(&narrower)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(replaced["config"]["exclude"], json!(["load_skill"]));
    wait_state(&s, "up", "connected").await;
    let names = tool_names(&s).await;
    assert!(names.contains(&"up__search_skills".to_owned()), "{names:?}");
    assert!(!names.contains(&"up__load_skill".to_owned()), "{names:?}");
    let one = ok_json(
        s.get("/v1/mcp-servers/up", &s.admin).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(one["config"], narrower);

    // Removed: 204, its tools leave both servers, then 404.
    let r = s
        .req(Method::DELETE, "/v1/mcp-servers/up", &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert!(!tool_names(&s).await.iter().any(|n| n.starts_with("up__")));
    let refused = ok_json(call().send().await.unwrap(), 200).await;
    assert_eq!(refused["status"], "refused", "{refused}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tool_names(&other)
        .await
        .iter()
        .any(|n| n.starts_with("up__"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the other server kept the removed upstream"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for r in [
        s.get("/v1/mcp-servers/up", &s.admin),
        s.req(Method::DELETE, "/v1/mcp-servers/up", &s.admin),
    ] {
        let (status, _) = problem(r.send().await.unwrap()).await;
        assert_eq!(status, 404);
    }

    // The token never reached an event, an answer or the stored configuration.
    s.state.engine.flush().await;
    let events = s.store.events(&EventFilter::default()).await.unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e.data["server"] == "up")
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        ["mcp_server_set", "mcp_server_set", "mcp_server_removed"]
    );
    let all = serde_json::to_string(&events).unwrap();
    assert!(
        !all.contains(&up.alpha),
        "the upstream token reached an event"
    );
    other.stop().await;
    s.stop().await;
    up.stop().await;
}

#[tokio::test]
async fn bad_upstream_configurations_are_refused_and_change_nothing() {
    let s = TestServer::start().await;
    let before = s.event_count().await;
    let put = |name: &str, body: Value| {
        s.put(&format!("/v1/mcp-servers/{name}"), &s.admin)
            .json(&body)
    };
    for (name, body, status, wanted) in [
        (
            "Up",
            json!({"url": "http://127.0.0.1:9/"}),
            422,
            "lowercase",
        ),
        ("up", json!({}), 422, "give `command`"),
        (
            "up",
            json!({"url": "http://h/", "command": "x"}),
            422,
            "not both",
        ),
        ("up", json!({"url": null}), 422, "null is not a value"),
        ("up", json!({"url": "ftp://h/"}), 422, "http:// or https://"),
        ("up", json!({"url": "http:/h"}), 422, "http:// or https://"),
        ("up", json!({"url": " http://h/"}), 422, "no spaces"),
        (
            "up",
            json!({"url": "http://h/", "args": []}),
            422,
            "for `command` servers",
        ),
        (
            "up",
            json!({"command": "x", "headers": {}}),
            422,
            "takes `env`",
        ),
        (
            "up",
            json!({"url": "http://h/", "surprise": 1}),
            422,
            "unknown field",
        ),
        (
            "up",
            json!({"url": "http://h/", "headers": {"A": {"vault": "NOT_SET"}}}),
            422,
            "'NOT_SET' is not set",
        ),
        (
            "up",
            json!({"url": "http://h/", "tools": {"t": {"description": " \u{1c} "}}}),
            422,
            "description",
        ),
        (
            "up",
            json!({"url": "http://h/", "exclude": ["x".repeat(70_000)]}),
            422,
            "at most 65536",
        ),
        // A stdio server runs a program on this host: only what the file allows.
        (
            "up",
            json!({"command": "/bin/sh", "args": ["-c", "id"]}),
            403,
            "api_commands",
        ),
    ] {
        let (got, p) = problem(put(name, body.clone()).send().await.unwrap()).await;
        assert_eq!(got, status, "{body}: {p}");
        assert!(
            p["detail"].as_str().unwrap().contains(wanted),
            "{body}: {p}"
        );
    }
    // Not a JSON object: 400.
    for raw in ["[1]", "\"x\"", "{", ""] {
        let r = s
            .put("/v1/mcp-servers/up", &s.admin)
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{raw:?}");
    }
    let list = ok_json(
        s.get("/v1/mcp-servers", &s.admin).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(list["servers"], json!([]));
    assert!(s.store.mcp_servers().await.unwrap().is_empty());
    assert_eq!(s.event_count().await, before);
    s.stop().await;
}
