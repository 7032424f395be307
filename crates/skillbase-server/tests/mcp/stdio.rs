//! stdio serves the agent it was started for.

use super::*;

#[tokio::test]
async fn stdio_serves_the_agent_it_was_started_for() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    let (client, server) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server);
    let state = s.state.clone();
    let task = tokio::spawn(skillbase_server::mcp::serve_io(
        state,
        AgentName::parse("alpha").unwrap(),
        sr,
        sw,
    ));
    let (cr, mut cw) = tokio::io::split(client);
    let mut lines = BufReader::new(cr).lines();
    let mut id = 0;
    let mut rpc = async |method: &str, params: Value| -> Value {
        id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        cw.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
        if method == "initialize" {
            let m = lines.next_line().await.unwrap().unwrap();
            let m: Value = serde_json::from_str(&m).unwrap();
            cw.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                .await
                .unwrap();
            return m;
        }
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == id {
                return m;
            }
        }
    };
    let init = rpc(
        "initialize",
        json!({"protocolVersion": STATEFUL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"][EXT]["directoryRead"],
        true
    );
    let r = rpc("skills/list", json!({})).await;
    assert_eq!(
        names(r["result"]["skills"].as_array().unwrap()),
        ["alpha-secret", "shared-one", "shared-two"]
    );
    let r = rpc(
        "resources/read",
        json!({"uri": "skill://alpha-secret/assets/logo.png"}),
    )
    .await;
    assert!(r["result"]["contents"][0]["blob"].is_string(), "{r}");
    let r = rpc(
        "tools/call",
        json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
    )
    .await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Alpha secret"),
        "{r}"
    );
    let e = rpc("skills/get", json!({"uri": "skill://beta-secret/SKILL.md"})).await;
    assert_eq!(e["error"]["code"], -32602);
    drop(cw);
    drop(lines);
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve_io ends when the client closes")
        .unwrap()
        .unwrap();
    s.stop().await;
}

/// On the 2026-07-28 wire over stdio, change notifications ride only the `subscriptions/listen`
/// stream, tagged with its id and of the types it asked for; the end of input ends the stream
/// and the server at once; a client that leaves after `server/discover` ends it cleanly.
#[tokio::test]
async fn stdio_on_the_stateless_wire_notifies_only_through_subscriptions() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let s = TestServer::start().await;
    alpha_sees_all(&s).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let start = |s: &TestServer| {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server);
        let task = tokio::spawn(skillbase_server::mcp::serve_io(
            s.state.clone(),
            AgentName::parse("alpha").unwrap(),
            sr,
            sw,
        ));
        let (cr, cw) = tokio::io::split(client);
        (task, BufReader::new(cr).lines(), cw)
    };
    let next = async |lines: &mut tokio::io::Lines<
        BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    >|
           -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("a message within 10 s")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    };

    // A probe: discover, then leave.
    let (task, mut lines, mut cw) = start(&s);
    let discover =
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}});
    cw.write_all(format!("{discover}\n").as_bytes())
        .await
        .unwrap();
    let d = next(&mut lines).await;
    assert!(
        d["result"]["supportedVersions"]
            .to_string()
            .contains(STATELESS),
        "{d}"
    );
    cw.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(3), task)
        .await
        .expect("the probe's end ends the server")
        .unwrap()
        .expect("leaving after server/discover is not an error");

    // A listener for tool changes only.
    let (task, mut lines, mut cw) = start(&s);
    cw.write_all(format!("{discover}\n").as_bytes())
        .await
        .unwrap();
    next(&mut lines).await;
    let listen = json!({"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}});
    cw.write_all(format!("{listen}\n").as_bytes())
        .await
        .unwrap();
    let ack = next(&mut lines).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    put_skill(&s.store, Scope::Shared, "late-one", &[]).await;
    let n = next(&mut lines).await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L1",
        "{n}"
    );
    // Nothing else arrives for that change: no untagged copy, no resources notification.
    let more = tokio::time::timeout(Duration::from_millis(700), lines.next_line()).await;
    assert!(more.is_err(), "an extra message: {more:?}");
    let closed = std::time::Instant::now();
    cw.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(3), task)
        .await
        .expect("the end of input ends the listen stream and the server")
        .unwrap()
        .unwrap();
    assert!(closed.elapsed() < Duration::from_secs(3));
    s.stop().await;
}
