//! Isolation and authentication: another agent's private skill, tokens, malformed JSON-RPC, the
//! agent header and foreign hosts.

use super::*;

/// The error for `uri` with the URI itself blanked out: what a caller could learn.
fn shape(e: &Value, uri: &str) -> String {
    e.to_string().replace(uri, "<uri>")
}

#[tokio::test]
async fn another_agents_private_skill_is_indistinguishable_from_a_missing_one() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (beta, _) = Client::new(&s, Some(&s.beta), wire).open().await;
        let (listed, _) = beta.all_skills().await;
        assert_eq!(names(&listed), ["beta-secret", "shared-one"]);
        let r = beta.ok("resources/list", json!({})).await;
        assert!(!r.to_string().contains("alpha-secret"), "{r}");
        for (method, private, missing) in [
            (
                "skills/get",
                "skill://alpha-secret/SKILL.md",
                "skill://gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://alpha-secret/SKILL.md",
                "skill://gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://alpha-secret/references/guide.md",
                "skill://gamma-secret/references/guide.md",
            ),
            (
                "resources/directory/read",
                "skill://alpha-secret",
                "skill://gamma-secret",
            ),
            (
                "resources/read",
                "skill://beta-secret/../alpha-secret/SKILL.md",
                "skill://beta-secret/../gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://beta-secret/%2E%2E/alpha-secret/SKILL.md",
                "skill://beta-secret/%2E%2E/gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://alpha-secret%2FSKILL.md",
                "skill://gamma-secret%2FSKILL.md",
            ),
        ] {
            let a = beta.err(method, json!({"uri": private})).await;
            let b = beta.err(method, json!({"uri": missing})).await;
            assert_eq!(a["code"], -32602, "{method} {private}: {a}");
            assert_eq!(a["data"]["uri"], private);
            assert_eq!(shape(&a, private), shape(&b, missing), "{method} {private}");
            assert!(!a.to_string().contains("Alpha's private"), "{a}");
        }
        // `..` inside one's own skill is refused the same way.
        let e = beta
            .err(
                "resources/read",
                json!({"uri": "skill://beta-secret/x/../SKILL.md"}),
            )
            .await;
        assert_eq!(e["code"], -32602);
    }
    s.stop().await;
}

#[tokio::test]
async fn missing_wrong_and_revoked_tokens_get_401() {
    let s = TestServer::start().await;
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    for wire in WIRES {
        for token in [None, Some("sbt_wrong")] {
            let c = Client::new(&s, token, wire);
            let r = c.post(&msg).await;
            assert_eq!(r.status(), 401, "{wire:?} {token:?}");
        }
    }
    // A token that worked stops working once revoked.
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateless)
        .open()
        .await;
    c.ok("tools/list", json!({})).await;
    s.store
        .token_revoke(s.alpha_token_id, &Author::Human("test".into()))
        .await
        .unwrap();
    s.state.auth.invalidate();
    let r = c.post(&c.message("tools/list", json!({}))).await;
    assert_eq!(r.status(), 401);
    s.stop().await;
}

#[tokio::test]
async fn malformed_json_rpc_gets_json_rpc_errors() {
    let s = TestServer::start().await;
    let post = |body: &'static str| {
        s.http
            .post(s.url("/mcp"))
            .bearer_auth(&s.alpha)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (body, code, id) in [
        ("{not json", -32700, Value::Null),
        (r#"{"jsonrpc":"2.0","id":7,"params":{}}"#, -32600, json!(7)),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            -32600,
            Value::Null,
        ),
        (r#""just a string""#, -32600, Value::Null),
    ] {
        let r = post(body).await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
        assert_eq!(v["id"], id, "{body}: {v}");
    }
    // An unknown method is -32601 on both wires.
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let e = c.err("nope/nothing", json!({})).await;
        assert_eq!(e["code"], -32601, "{wire:?}: {e}");
    }
    // A body over the limit is refused before it is read whole.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(2 * 1024 * 1024)
    );
    let r = s
        .http
        .post(s.url("/mcp"))
        .bearer_auth(&s.alpha)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    s.stop().await;
}

#[tokio::test]
async fn the_agent_comes_from_the_token_or_the_header() {
    let s = TestServer::start().await;
    for wire in WIRES {
        // The first request of a connection: initialize (stateful) or any request (stateless).
        let first = async |c: &Client| -> Value {
            match wire {
                Wire::Stateful => {
                    c.err(
                        "initialize",
                        json!({"protocolVersion": STATEFUL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
                    )
                    .await
                }
                Wire::Stateless => c.err("skills/list", json!({})).await,
            }
        };
        // An admin token must name the agent (no default agent here).
        let e = first(&Client::new(&s, Some(&s.admin), wire)).await;
        assert_eq!(e["code"], -32600, "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("Skillbase-Agent"),
            "{e}"
        );
        if wire == Wire::Stateless {
            let c = Client::new(&s, Some(&s.admin), wire);
            let e = c.err("server/discover", json!({})).await;
            assert_eq!(e["code"], -32600, "{e}");
        }
        // Named by header.
        let (c, _) = Client::new(&s, Some(&s.admin), wire)
            .header("skillbase-agent", "beta")
            .open()
            .await;
        assert_eq!(
            names(&c.all_skills().await.0),
            ["beta-secret", "shared-one"]
        );
        // An unknown agent.
        let e =
            first(&Client::new(&s, Some(&s.admin), wire).header("skillbase-agent", "nobody")).await;
        assert!(e["message"].as_str().unwrap().contains("no agent"), "{e}");
        // An agent token cannot switch agents.
        let e =
            first(&Client::new(&s, Some(&s.alpha), wire).header("skillbase-agent", "beta")).await;
        assert_eq!(e["code"], -32600, "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("bound to agent"),
            "{e}"
        );
    }
    // A stateful session stays with the token that opened it.
    let (alpha, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let mut hijack = Client::new(&s, Some(&s.beta), Wire::Stateful);
    hijack.session = alpha.session.clone();
    let e = hijack.err("skills/list", json!({})).await;
    assert_eq!(e["code"], -32600, "{e}");
    assert_eq!(names(&alpha.all_skills().await.0).len(), 3);
    // An admin names the agent when opening; later requests need not repeat it, and may not
    // name another one.
    let (admin, _) = Client::new(&s, Some(&s.admin), Wire::Stateful)
        .header("skillbase-agent", "beta")
        .open()
        .await;
    let mut later = Client::new(&s, Some(&s.admin), Wire::Stateful);
    later.session = admin.session.clone();
    assert_eq!(
        names(&later.all_skills().await.0),
        ["beta-secret", "shared-one"]
    );
    let switch = later.header("skillbase-agent", "alpha");
    let e = switch.err("skills/list", json!({})).await;
    assert_eq!(e["code"], -32600, "{e}");
    s.stop().await;

    // With a default agent, the admin token acts as it.
    let s = TestServer::start_with(ServerOptions {
        default_agent: Some(AgentName::parse("beta").unwrap()),
        ..ServerOptions::default()
    })
    .await;
    let (c, _) = Client::new(&s, Some(&s.admin), Wire::Stateless)
        .open()
        .await;
    assert_eq!(
        names(&c.all_skills().await.0),
        ["beta-secret", "shared-one"]
    );
    s.stop().await;
}

#[tokio::test]
async fn a_foreign_host_header_is_refused() {
    let s = TestServer::start().await;
    let c = Client::new(&s, Some(&s.alpha), Wire::Stateless).header("host", "evil.example");
    let r = c.post(&c.message("server/discover", json!({}))).await;
    assert_eq!(r.status(), 403);
    s.stop().await;
}
