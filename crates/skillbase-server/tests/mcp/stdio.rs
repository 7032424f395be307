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
