//! Initialization and discovery, the offered tools, calls through dispatch, and a Skillbase
//! session per stateful MCP session.

use super::*;

/// Bad params to a known method are `-32602` saying what is wrong (never quoting the sent
/// value); only an unknown method is `-32601`.
#[tokio::test]
async fn bad_params_are_invalid_params_and_unknown_methods_not_found() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let e = c
            .err("tools/call", json!({"arguments": {"name": "x"}}))
            .await;
        assert_eq!(e["code"], -32602, "{wire:?}: {e}");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains("tools/call") && m.contains("missing field `name`"),
            "{m}"
        );
        let e = c
            .err(
                "tools/call",
                json!({"name": ["sk-live-4242"], "arguments": {}}),
            )
            .await;
        assert_eq!(e["code"], -32602, "{wire:?}: {e}");
        assert!(!e.to_string().contains("4242"), "{e}");
        let e = c.err("resources/read", json!({"uri": 7})).await;
        assert_eq!(e["code"], -32602, "{wire:?}: {e}");
        let e = c.err("no/such-method", json!({})).await;
        assert_eq!(e["code"], -32601, "{wire:?}: {e}");
    }
    s.stop().await;
}

/// `DELETE /mcp` closes a stateful session with 204 (clients expect 200 or 204, not 202), and
/// the closed session is gone.
#[tokio::test]
async fn delete_closes_a_session_with_no_content() {
    let s = TestServer::start().await;
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let sid = c.session.clone().unwrap();
    let del = |sid: &str| {
        s.http
            .delete(s.url("/mcp"))
            .bearer_auth(&s.alpha)
            .header("mcp-protocol-version", STATEFUL)
            .header("mcp-session-id", sid)
            .send()
    };
    let r = del(&sid).await.unwrap();
    assert_eq!(r.status(), 204);
    assert!(r.text().await.unwrap().is_empty());
    // The session is closed: using it again is refused.
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}))
        .await;
    assert!(r.status().is_client_error(), "{}", r.status());
    s.stop().await;
}

#[tokio::test]
async fn initialize_and_discover_declare_the_skills_extension() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let (_, info) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let caps = &info["capabilities"];
        assert_eq!(
            caps["extensions"][EXT],
            json!({"directoryRead": true}),
            "{wire:?}: {info}"
        );
        assert!(caps["resources"].is_object(), "{wire:?}");
        assert_eq!(caps["resources"]["listChanged"], true, "{wire:?}");
        assert!(caps["tools"].is_object(), "{wire:?}");
        match wire {
            Wire::Stateful => {
                assert_eq!(info["protocolVersion"], STATEFUL);
                assert_eq!(info["serverInfo"]["name"], "skillbase");
            }
            Wire::Stateless => {
                assert_eq!(info["resultType"], "complete");
                assert!(
                    info["supportedVersions"]
                        .as_array()
                        .unwrap()
                        .contains(&json!(STATELESS))
                );
                assert_eq!(
                    info["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                    "skillbase"
                );
            }
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn tools_list_is_the_agents_offered_set() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let mut seen = BTreeMap::new();
        for (agent, token) in [("alpha", &s.alpha), ("beta", &s.beta)] {
            let (c, _) = Client::new(&s, Some(token), wire).open().await;
            let r = c.ok("tools/list", json!({})).await;
            let listed: BTreeSet<String> = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    assert_eq!(t["inputSchema"]["type"], "object", "{t}");
                    t["name"].as_str().unwrap().to_owned()
                })
                .collect();
            let offered: BTreeSet<String> = s
                .state
                .engine
                .offered(&AgentName::parse(agent).unwrap())
                .unwrap()
                .entries
                .iter()
                .map(|e| e.wire_name.clone())
                .collect();
            assert_eq!(listed, offered, "{wire:?} {agent}");
            assert!(listed.contains("load_skill"), "{listed:?}");
            // load_skill's name is the closed enum of the agent's loadable skills, as in a turn.
            let load = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "load_skill")
                .unwrap();
            let names: BTreeSet<&str> = load["inputSchema"]["properties"]["name"]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("no enum: {load}"))
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            let want: BTreeSet<&str> = match agent {
                "alpha" => ["alpha-secret", "shared-one", "shared-two"].into(),
                _ => ["beta-secret", "shared-one"].into(),
            };
            assert_eq!(names, want, "{wire:?} {agent}");
            seen.insert(agent, listed);
        }
        // alpha is granted the authoring class, beta is not: the sets differ.
        let extra: Vec<_> = seen["alpha"].difference(&seen["beta"]).collect();
        assert!(!extra.is_empty(), "{seen:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn tools_call_goes_through_dispatch_and_refusals_are_error_results() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let (alpha, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let r = alpha
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
            )
            .await;
        assert_ne!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("Body of alpha-secret"), "{text}");

        let (beta, _) = Client::new(&s, Some(&s.beta), wire).open().await;
        // Another agent's private skill: refused as a result, nothing of it shown.
        let r = beta
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
            )
            .await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(!r.to_string().contains("Body of alpha-secret"), "{r}");
        // A tool alpha has and beta is not offered: a refusal the model can read.
        let alpha_only = s
            .state
            .engine
            .offered(&AgentName::parse("alpha").unwrap())
            .unwrap()
            .entries
            .iter()
            .map(|e| e.wire_name.clone())
            .find(|w| {
                s.state
                    .engine
                    .offered(&AgentName::parse("beta").unwrap())
                    .unwrap()
                    .get(w)
                    .is_none()
            })
            .unwrap();
        let r = beta
            .ok("tools/call", json!({"name": alpha_only, "arguments": {}}))
            .await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("not_offered"),
            "{r}"
        );
        // Bad arguments are a result too.
        let r = alpha
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"nope": 1}}),
            )
            .await;
        assert_eq!(r["isError"], true, "{r}");
    }
    // The Skillbase sessions: one per MCP session (stateful), one per token and agent
    // (stateless), or the one named by Skillbase-Session.
    s.state.engine.flush().await;
    let stateless = s
        .store
        .events(&skillbase_store::EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.session)
        .find(|id| id.starts_with("mcp:alpha:t-"))
        .expect("a stateless session in alpha's namespace, keyed by its token");
    assert_eq!(stateless.len(), "mcp:alpha:t-".len() + 32, "{stateless}");
    let alpha = skillbase_store::AgentName::parse("alpha").unwrap();
    let rec = s
        .store
        .session(&alpha, &stateless)
        .await
        .unwrap()
        .expect("session");
    assert_eq!(rec.agent, "alpha");
    for wire in WIRES {
        let name = format!("harness-{wire:?}");
        let (c, _) = Client::new(&s, Some(&s.alpha), wire)
            .header("skillbase-session", &name)
            .open()
            .await;
        let r = c
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
            )
            .await;
        assert_ne!(r["isError"], true, "{r}");
        assert!(
            s.store.session(&alpha, &name).await.unwrap().is_some(),
            "{name}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn stateful_sessions_get_their_own_skillbase_session() {
    let s = TestServer::start().await;
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let r = c
        .ok(
            "tools/call",
            json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
        )
        .await;
    assert_ne!(r["isError"], true, "{r}");
    let id = format!("mcp:alpha:{}", c.session.as_deref().unwrap());
    let alpha = skillbase_store::AgentName::parse("alpha").unwrap();
    let rec = s
        .store
        .session(&alpha, &id)
        .await
        .unwrap()
        .expect("session");
    assert_eq!(rec.agent, "alpha");
    // Loading again in the same session is a no-op the runtime reports as such.
    let again = c
        .ok(
            "tools/call",
            json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
        )
        .await;
    assert_ne!(
        again, r,
        "the second load should say the skill is already active"
    );
    s.stop().await;
}

/// The stateless wire gives no per-conversation identity: without `Skillbase-Session`, every
/// conversation of one token shares one Skillbase session, so a second conversation's
/// `load_skill` of a skill the first one loaded answers with the body again (recording no second
/// activation). With `Skillbase-Session`, and on the stateful wire, it stays the short note.
#[tokio::test]
async fn stateless_conversations_without_a_session_header_get_the_body_again() {
    let s = TestServer::start().await;
    let load = json!({"name": "load_skill", "arguments": {"name": "shared-one"}});
    let text = |r: &Value| {
        r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let (first, _) = Client::new(&s, Some(&s.alpha), Wire::Stateless)
        .open()
        .await;
    let body = text(&first.ok("tools/call", load.clone()).await);
    assert!(body.contains("<skill_content"), "{body}");
    // Another conversation, same token, no session header.
    let (second, _) = Client::new(&s, Some(&s.alpha), Wire::Stateless)
        .open()
        .await;
    let again = text(&second.ok("tools/call", load.clone()).await);
    assert!(again.contains("already active"), "{again}");
    assert!(again.contains("<skill_content"), "the body again: {again}");
    // A harness that names its conversations gets the short note on the second load.
    let (named, _) = Client::new(&s, Some(&s.alpha), Wire::Stateless)
        .header("skillbase-session", "conv-1")
        .open()
        .await;
    named.ok("tools/call", load.clone()).await;
    let note = text(&named.ok("tools/call", load).await);
    assert!(
        note.contains("already active") && !note.contains("<skill_content"),
        "{note}"
    );
    s.stop().await;
}

/// Over HTTP, `load_skill` names a skill's files by `skill://` URI and SHA-256 (the client does
/// not share the server's disk), and each reads back with `resources/read` as those bytes.
#[tokio::test]
async fn load_skill_over_http_names_files_by_uri_and_digest() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire)
            .header("skillbase-session", &format!("files-{wire:?}"))
            .open()
            .await;
        let r = c
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
            )
            .await;
        let text = r["content"][0]["text"].as_str().unwrap().to_owned();
        let uri = "skill://alpha-secret/assets/logo.png";
        assert!(
            text.contains(&format!("<file uri=\"{uri}\" digest=\"")),
            "{wire:?}: {text}"
        );
        assert!(text.contains("resources/read"), "{text}");
        assert!(!text.contains("Skill directory:"), "no server path: {text}");
        let (bytes, _) = c.read_bytes(uri).await;
        let at = text.find(&format!("{uri}\" digest=\"")).unwrap() + uri.len() + 10;
        assert_eq!(&text[at..at + 71], sha256(&bytes), "{wire:?}");
    }
    s.stop().await;
}
