//! Change notifications: `list_changed` on both wires and the listen stream a revoked token ends.

use super::*;

/// Collect SSE messages from a streaming response into a channel.
fn stream_messages(r: reqwest::Response) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut body = r.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let event: String = buf.drain(..end + 2).collect();
                for m in sse_messages(&event) {
                    if tx.send(m).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// The next message with this method within `wait`, if any.
async fn next_with_method(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
    method: &str,
    wait: Duration,
) -> Option<Value> {
    tokio::time::timeout(wait, async {
        while let Some(m) = rx.recv().await {
            if m["method"] == method {
                return Some(m);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

const LIST_CHANGED: &str = "notifications/resources/list_changed";

#[tokio::test]
async fn list_changed_reaches_a_stateful_session_when_its_visible_set_changes() {
    let s = TestServer::start().await;
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let get = s
        .http
        .get(s.url("/mcp"))
        .bearer_auth(&s.alpha)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", c.session.as_deref().unwrap())
        .header("mcp-protocol-version", STATEFUL)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut rx = stream_messages(get);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A change alpha cannot see: nothing.
    put_skill(
        &s.store,
        Scope::Agent(AgentName::parse("beta").unwrap()),
        "beta-secret",
        &[("more.txt", b"more")],
    )
    .await;
    assert!(
        next_with_method(&mut rx, LIST_CHANGED, Duration::from_millis(700))
            .await
            .is_none(),
        "alpha was told about a change to beta's skills"
    );
    // A new revision of a skill alpha sees: notified.
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-two",
        &[("more.txt", b"more")],
    )
    .await;
    assert!(
        next_with_method(&mut rx, LIST_CHANGED, Duration::from_secs(10))
            .await
            .is_some(),
        "no list_changed after shared-two changed"
    );
    // A new skill becoming visible: notified, and it is listed.
    put_skill(&s.store, Scope::Shared, "brand-new", &[]).await;
    alpha_sees_all(&s).await;
    assert!(
        next_with_method(&mut rx, LIST_CHANGED, Duration::from_secs(10))
            .await
            .is_some(),
        "no list_changed after brand-new became visible"
    );
    assert!(names(&c.all_skills().await.0).contains(&"brand-new".to_owned()));
    s.stop().await;
}

/// Open a `subscriptions/listen` stream for list changes, acknowledged: the request and the
/// stream's messages.
async fn listen(c: &Client) -> (Value, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let msg = c.message(
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true}}),
    );
    let r = c.post(&msg).await;
    assert_eq!(r.status(), 200);
    let mut rx = stream_messages(r);
    assert!(
        next_with_method(
            &mut rx,
            "notifications/subscriptions/acknowledged",
            Duration::from_secs(5)
        )
        .await
        .is_some()
    );
    (msg, rx)
}

#[tokio::test]
async fn list_changed_reaches_a_listen_stream_on_the_stateless_wire() {
    let s = TestServer::start().await;
    let c = Client::new(&s, Some(&s.alpha), Wire::Stateless);
    let (msg, mut rx) = listen(&c).await;
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-one",
        &[("more.txt", b"more")],
    )
    .await;
    let n = next_with_method(&mut rx, LIST_CHANGED, Duration::from_secs(10))
        .await
        .expect("list_changed on the listen stream");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], msg["id"],
        "{n}"
    );
    s.stop().await;
}

#[tokio::test]
async fn revoking_a_token_ends_its_listen_stream() {
    let s = TestServer::start().await;
    let c = Client::new(&s, Some(&s.alpha), Wire::Stateless);
    let (_, mut rx) = listen(&c).await;
    s.store
        .token_revoke(s.alpha_token_id, &Author::Human("test".into()))
        .await
        .unwrap();
    // The stream ends (its channel closes) within the token cache window and one check.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while rx.recv().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the listen stream outlived its token");
    // And nothing more is answered for it.
    let r = c.post(&c.message("server/discover", json!({}))).await;
    assert_eq!(r.status(), 401);
    s.stop().await;
}

/// The registry changing (what the gateway does when an upstream MCP server's tools change)
/// reaches an MCP session as `tools/list_changed`, only when the agent's offered set changed.
#[tokio::test]
async fn tools_list_changed_reaches_a_session_when_the_registry_changes() {
    use skillbase_runtime::ToolDecl;
    let s = TestServer::start().await;
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let get = s
        .http
        .get(s.url("/mcp"))
        .bearer_auth(&s.alpha)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", c.session.as_deref().unwrap())
        .header("mcp-protocol-version", STATEFUL)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut rx = stream_messages(get);
    tokio::time::sleep(Duration::from_millis(200)).await;
    const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
    let decl = |name: &str, class: &str| ToolDecl {
        name: name.into(),
        description: format!("The {name} tool."),
        class: class.into(),
        ..ToolDecl::default()
    };
    // A tool of a class alpha is not granted: its offered set is the same, nothing is sent.
    s.state
        .engine
        .tools()
        .update(|r| r.register(decl("up__hidden", "elsewhere"), None))
        .unwrap();
    assert!(
        next_with_method(&mut rx, TOOLS_CHANGED, Duration::from_millis(700))
            .await
            .is_none(),
        "alpha was told about a tool it is not offered"
    );
    // A tool of a class alpha holds (notes): notified, and listed.
    s.state
        .engine
        .tools()
        .update(|r| r.register(decl("up__jot", "notes"), None))
        .unwrap();
    assert!(
        next_with_method(&mut rx, TOOLS_CHANGED, Duration::from_secs(10))
            .await
            .is_some(),
        "no tools/list_changed after the registry gained a tool alpha is offered"
    );
    let offered = s
        .state
        .engine
        .offered(&AgentName::parse("alpha").unwrap())
        .unwrap();
    assert!(offered.get("up__jot").is_some());
    s.stop().await;
}
