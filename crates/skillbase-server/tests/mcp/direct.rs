//! The direct path answers stateless calls exactly as rmcp does.

use super::*;

/// One raw stateless request for the comparison below: its token, extra headers (`None` drops
/// a header the client normally sends) and JSON body.
struct Raw {
    token: &'static str,
    headers: Vec<(&'static str, Option<&'static str>)>,
    body: Value,
}

fn stateless_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientInfo": {"name": "skillbase-tests", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
}

async fn send_raw(s: &TestServer, r: &Raw) -> (u16, String, String) {
    let token = match r.token {
        "alpha" => Some(s.alpha.clone()),
        "beta" => Some(s.beta.clone()),
        "admin" => Some(s.admin.clone()),
        _ => None,
    };
    let name = r.body["params"]["name"].as_str().unwrap_or_default();
    let mut headers: Vec<(&str, String)> = vec![
        ("accept", "application/json, text/event-stream".into()),
        ("content-type", "application/json".into()),
        ("mcp-protocol-version", STATELESS.into()),
        ("mcp-method", "tools/call".into()),
        ("mcp-name", name.into()),
    ];
    for (k, v) in &r.headers {
        headers.retain(|(h, _)| h != k);
        if let Some(v) = v {
            headers.push((k, (*v).to_owned()));
        }
    }
    let mut req = s.http.post(s.url("/mcp"));
    for (k, v) in headers {
        req = req.header(k, v);
    }
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.body(r.body.to_string()).send().await.unwrap();
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    // Each server has its own temporary directory (workspace paths in results).
    let dir = s.db.parent().unwrap().to_str().unwrap().to_owned();
    let body = res.text().await.unwrap().replace(&dir, "<dir>");
    (status, ct, body)
}

/// The direct path for stateless `tools/call` answers exactly as rmcp does: the same requests,
/// in the same order, to a server with the direct path and to one without, give the same status,
/// content type and bytes; and the direct path is taken only for the well-formed ones.
#[tokio::test]
async fn the_direct_path_answers_stateless_calls_exactly_as_rmcp_does() {
    let direct = TestServer::start().await;
    let rmcp = TestServer::start_with(ServerOptions {
        rmcp_only: true,
        ..ServerOptions::default()
    })
    .await;
    let load = |id, name: &str| stateless_call(id, "load_skill", json!({ "name": name }));
    // (request, taken on the direct path)
    let cases: Vec<(Raw, bool)> = vec![
        // A first activation, then "already active".
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: load(1, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: load(2, "shared-one"),
            },
            true,
        ),
        // A string id, and a skill with a reference file.
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(3, "alpha-secret");
                    b["id"] = json!("req-3");
                    b
                },
            },
            true,
        ),
        // Another agent's private skill: a refusal as a result.
        (
            Raw {
                token: "beta",
                headers: vec![],
                body: load(4, "alpha-secret"),
            },
            true,
        ),
        // Not offered, bad arguments, no arguments.
        (
            Raw {
                token: "beta",
                headers: vec![],
                body: stateless_call(5, "search_skills", json!({"query": "x"})),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: stateless_call(6, "load_skill", json!({"nope": 1})),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(7, "x");
                    b["params"].as_object_mut().unwrap().remove("arguments");
                    b
                },
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: stateless_call(8, "no_such_tool", json!({})),
            },
            true,
        ),
        // Sessions named by header: fine, and malformed.
        (
            Raw {
                token: "alpha",
                headers: vec![("skillbase-session", Some("harness-7"))],
                body: load(9, "shared-two"),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("skillbase-session", Some("a/b"))],
                body: load(10, "shared-two"),
            },
            true,
        ),
        // The agent: from an admin token's header, a missing one, a mismatch with the token.
        (
            Raw {
                token: "admin",
                headers: vec![("skillbase-agent", Some("alpha"))],
                body: load(11, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "admin",
                headers: vec![],
                body: load(12, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "admin",
                headers: vec![("skillbase-agent", Some("nobody"))],
                body: load(13, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("skillbase-agent", Some("beta"))],
                body: load(14, "shared-one"),
            },
            true,
        ),
        // `clientInfo` is optional in `_meta`.
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(28, "shared-one");
                    b["params"]["_meta"]
                        .as_object_mut()
                        .unwrap()
                        .remove("io.modelcontextprotocol/clientInfo");
                    b
                },
            },
            true,
        ),
        // `arguments: null` is no arguments.
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: stateless_call(29, "load_skill", Value::Null),
            },
            true,
        ),
        // Everything below goes to rmcp on both servers.
        (
            Raw {
                token: "none",
                headers: vec![],
                body: load(15, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-name", Some("shared-one"))],
                body: load(16, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-name", None)],
                body: load(17, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-method", Some("tools/list"))],
                body: load(18, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("accept", Some("application/json"))],
                body: load(19, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("content-type", Some("text/plain"))],
                body: load(20, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("host", Some("evil.example"))],
                body: load(21, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-protocol-version", Some(STATEFUL))],
                body: load(22, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(23, "shared-one");
                    b["params"]["_meta"]
                        .as_object_mut()
                        .unwrap()
                        .remove("io.modelcontextprotocol/clientCapabilities");
                    b
                },
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(24, "shared-one");
                    b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
                        json!(STATEFUL);
                    b
                },
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-name", Some("=?base64?bG9hZF9za2lsbA==?="))],
                body: load(25, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: json!({"jsonrpc": "2.0", "id": 26, "method": "tools/call"}),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: json!([load(27, "shared-one")]),
            },
            false,
        ),
    ];
    // Body shapes, each the plain call with one change: rmcp's own reading of the body decides
    // (keys it does not know are ignored; an id, a version or params it cannot read are not).
    type Change = fn(&mut Value);
    let shapes: Vec<(&str, Change, bool)> = vec![
        ("extra top-level key", |b| b["extra"] = json!(1), true),
        ("task", |b| b["params"]["task"] = json!({"ttl": 1000}), true),
        ("float id", |b| b["id"] = json!(1.5), false),
        ("null id", |b| b["id"] = Value::Null, false),
        ("huge id", |b| b["id"] = json!(u64::MAX), false),
        (
            "no id",
            |b| {
                b.as_object_mut().unwrap().remove("id");
            },
            false,
        ),
        (
            "arguments array",
            |b| b["params"]["arguments"] = json!([1]),
            false,
        ),
        (
            "extra _meta key",
            |b| b["params"]["_meta"]["progressToken"] = json!("p"),
            true,
        ),
        (
            "bad capabilities",
            |b| {
                b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    json!({"roots": 5})
            },
            false,
        ),
        (
            "bad clientInfo",
            |b| b["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = json!(7),
            true,
        ),
        ("jsonrpc 1.0", |b| b["jsonrpc"] = json!("1.0"), false),
        (
            "name not a string",
            |b| b["params"]["name"] = json!(5),
            false,
        ),
    ];
    let mut cases = cases;
    for (i, (_, change, taken)) in shapes.iter().enumerate() {
        let mut body = load(100 + i as i64, "shared-one");
        change(&mut body);
        cases.push((
            Raw {
                token: "alpha",
                headers: vec![],
                body,
            },
            *taken,
        ));
    }
    let mut expected_direct = 0;
    for (i, (raw, taken)) in cases.iter().enumerate() {
        let before = direct.state.metrics.mcp_direct_calls.get();
        let a = send_raw(&direct, raw).await;
        let b = send_raw(&rmcp, raw).await;
        assert_eq!(a, b, "case {i}: {}", raw.body);
        let took = direct.state.metrics.mcp_direct_calls.get() - before;
        assert_eq!(took == 1, *taken, "case {i}: direct path taken: {took}");
        expected_direct += u64::from(*taken);
    }
    assert_eq!(direct.state.metrics.mcp_direct_calls.get(), expected_direct);
    assert_eq!(rmcp.state.metrics.mcp_direct_calls.get(), 0);
    // Calls are counted by outcome on both paths.
    let calls = |s: &TestServer| {
        let mut l: Vec<String> = s
            .state
            .metrics
            .render()
            .lines()
            .filter(|l| l.starts_with("skillbase_calls_total"))
            .map(str::to_owned)
            .collect();
        l.sort();
        l
    };
    let counted = calls(&direct);
    assert!(
        counted.contains(&r#"skillbase_calls_total{outcome="done"} 12"#.to_owned()),
        "{counted:?}"
    );
    assert_eq!(counted, calls(&rmcp));
    // Both servers recorded the same calls.
    direct.state.engine.flush().await;
    rmcp.state.engine.flush().await;
    let kinds = |s: &TestServer| {
        let store = s.store.clone();
        async move {
            store
                .events(&skillbase_store::EventFilter {
                    limit: Some(1000),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_iter()
                .filter(|e| e.kind != "token_created")
                // The stateless session is keyed by the token, which differs between the two.
                .map(|e| {
                    let session = e.session.map(|id| match id.find(":t-") {
                        Some(i) => format!("{}:t-<token>", &id[..i]),
                        None => id,
                    });
                    (e.kind, session, e.agent)
                })
                .collect::<Vec<_>>()
        }
    };
    // (Written-behind events interleave with committed ones by timing: compare as sets.)
    let (mut ka, mut kb) = (kinds(&direct).await, kinds(&rmcp).await);
    ka.sort();
    kb.sort();
    assert!(ka.iter().any(|(k, _, _)| k == "skill_activated"), "{ka:?}");
    assert_eq!(ka, kb);
    direct.stop().await;
    rmcp.stop().await;
}
