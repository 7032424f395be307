//! Sessions: the event stream, turns, calls, pinned, finish, runs and detached calls.

use super::*;

/// Read SSE frames until one satisfies `want` (or time runs out).
async fn next_event<B: AsRef<[u8]>>(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<B>> + Unpin),
    buf: &mut String,
    want: impl Fn(&str, &Value) -> bool,
) -> (i64, String, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf[..end].to_owned();
            buf.drain(..end + 2);
            let mut id = 0;
            let mut kind = String::new();
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().unwrap();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    kind = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&data).unwrap();
            if want(&kind, &v) {
                return (id, kind, v);
            }
        }
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("no matching event within 10 s")
            .expect("the stream ended")
            .unwrap();
        buf.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

#[tokio::test]
async fn event_stream_delivers_the_sessions_calls_and_resumes() {
    let s = TestServer::start().await;
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "live"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let r = s
        .get("/v1/sessions/live/events", &s.alpha)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let out = ok_json(
        s.post("/v1/sessions/live/calls", &s.alpha)
            .json(&json!({"name": "take_note", "arguments": {"text": "customer prefers email"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(out["status"], "done", "{out}");
    let call_id = out["call_id"].as_str().unwrap().to_owned();
    let (id, kind, ev) = next_event(&mut stream, &mut buf, |_, v| {
        v["data"]["call_id"] == call_id
    })
    .await;
    assert_eq!(kind, "tool_called");
    assert_eq!(ev["session"], "live");
    assert_eq!(ev["data"]["tool"], "take_note");
    drop(stream);

    // Resuming after that event: only what came later.
    let out = ok_json(
        s.post("/v1/sessions/live/calls", &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": "shared-two"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let second = out["call_id"].as_str().unwrap().to_owned();
    let r = s
        .get("/v1/sessions/live/events", &s.alpha)
        .header("last-event-id", id.to_string())
        .send()
        .await
        .unwrap();
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let (id2, kind, _) = next_event(&mut stream, &mut buf, |_, _| true).await;
    assert!(id2 > id);
    assert_eq!(kind, "skill_activated");
    let (_, kind, _) =
        next_event(&mut stream, &mut buf, |_, v| v["data"]["call_id"] == second).await;
    assert_eq!(kind, "tool_called");
    // The stream ends when the server stops.
    let task = tokio::spawn(async move { while let Some(Ok(_)) = stream.next().await {} });
    s.stop().await;
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the stream outlived the server")
        .unwrap();
}

#[tokio::test]
async fn sessions_turns_calls_pinned_finish_and_runs() {
    let s = TestServer::start().await;
    let r = s
        .post("/v1/sessions", &s.admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 422, "an admin names the agent");
    let sess = ok_json(
        s.post("/v1/sessions", &s.admin)
            .json(&json!({"agent": "alpha", "id": "work-1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(sess["agent"], "alpha");
    let (st, _) = problem(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "rest:alpha"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409, "reserved ids answer as a taken one does");
    let (st, _) = problem(
        s.post("/v1/sessions/nope/turns", &s.alpha)
            .json(&json!({"message": "hi"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);

    let t = ok_json(
        s.post("/v1/sessions/work-1/turns", &s.alpha)
            .json(&json!({"message": "a refund question"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (t["agent"].as_str(), t["session"].as_str()),
        (Some("alpha"), Some("work-1"))
    );
    let catalog = t["context"]["catalog"].as_str().unwrap();
    assert!(
        catalog.contains("shared-one") && catalog.contains("alpha-secret"),
        "{catalog}"
    );
    assert!(!t.to_string().contains("beta-secret"));
    let tools: Vec<&str> = t["context"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"load_skill") && tools.contains(&"take_note"),
        "{tools:?}"
    );
    assert!(t["context"]["report"]["catalog"]["full"].is_array());
    // Omissions: a summary by default (counted, never silent), the list on request (query or
    // body), anything else refused.
    let omitted = &t["context"]["report"]["catalog"]["omitted"];
    assert!(
        omitted["count"].is_u64() && omitted["by_reason"].is_array(),
        "{omitted}"
    );
    for (path, body) in [
        (
            "/v1/sessions/work-1/turns?omissions=full",
            json!({"message": "a refund question"}),
        ),
        (
            "/v1/sessions/work-1/turns",
            json!({"message": "a refund question", "omissions": "full"}),
        ),
        (
            "/v1/sessions/work-1/turns?omissions=full",
            json!({"message": "a refund question", "omissions": "summary"}),
        ),
    ] {
        let t = ok_json(
            s.post(path, &s.alpha).json(&body).send().await.unwrap(),
            200,
        )
        .await;
        assert!(
            t["context"]["report"]["catalog"]["omitted"].is_array(),
            "{path} {body}: {t}"
        );
    }
    for (path, body) in [
        (
            "/v1/sessions/work-1/turns?omissions=all",
            json!({"message": "x"}),
        ),
        (
            "/v1/sessions/work-1/turns",
            json!({"message": "x", "omissions": "everything"}),
        ),
    ] {
        let (st, p) = problem(s.post(path, &s.alpha).json(&body).send().await.unwrap()).await;
        assert_eq!(st, 422, "{path} {body}");
        assert!(p["detail"].as_str().unwrap().contains("summary"), "{p}");
    }
    let (st, _) = problem(
        s.post("/v1/sessions/work-1/turns", &s.alpha)
            .json(&json!({"message": "x", "max_cost": "slow"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);

    let out = ok_json(
        s.post("/v1/sessions/work-1/calls", &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": "shared-one"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(out["status"], "done");
    assert!(
        out["result"]
            .as_str()
            .unwrap()
            .contains("Body of shared-one.")
    );
    let out = ok_json(
        s.post("/v1/sessions/work-1/calls", &s.alpha)
            .json(&json!({"name": "web_fetch", "arguments": {"url": "http://x"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (out["status"].as_str(), out["rule"].as_str()),
        (Some("refused"), Some("not_offered"))
    );

    let pinned = ok_json(
        s.get("/v1/sessions/work-1/pinned", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(pinned["skills"][0]["name"], "shared-one");
    let pinned = ok_json(
        s.get("/v1/sessions/work-1/pinned?budget=1", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(pinned["left_out"], json!(["shared-one"]));
    let sess = ok_json(
        s.get("/v1/sessions/work-1", &s.alpha).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(sess["activations"][0]["skill"], "shared-one");

    let (st, _) = problem(
        s.post("/v1/sessions/work-1/finish", &s.alpha)
            .json(&json!({"outcome": "meh"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    let f = ok_json(
        s.post("/v1/sessions/work-1/finish", &s.alpha)
            .json(&json!({"outcome": "success", "note": "done"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (f["run"]["skill"].as_str(), f["run"]["outcome"].as_str()),
        (Some("shared-one"), Some("success"))
    );
    assert_eq!(f["disabled_for_drift"], false);
    let (st, _) = problem(
        s.post("/v1/sessions/work-1/finish", &s.alpha)
            .json(&json!({"outcome": "success"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409);

    let runs = ok_json(
        s.get("/v1/skills/shared-one/runs", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs[0]["session"], "work-1");
    let runs = ok_json(
        s.get("/v1/skills/shared-one/runs", &s.beta)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs, json!([]), "beta sees only its own agent's runs");
    let runs = ok_json(
        s.get("/v1/skills/shared-one/runs", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs.as_array().unwrap().len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn a_detached_call_is_collected_by_its_session_only() {
    let s = TestServer::start().await;
    let port = s.addr.port();
    let a = ok_json(
        s.post("/v1/agents", &s.admin)
            .json(&json!({"name": "gamma", "config": {"grants": {"tools": ["web_fetch"], "hosts": [format!("localhost:{port}")]}}}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(a["version"], 1);
    let tok = ok_json(
        s.post("/v1/tokens", &s.admin)
            .json(&json!({"agent": "gamma", "label": "g"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let gamma = tok["secret"].as_str().unwrap().to_owned();
    ok_json(
        s.post("/v1/sessions", &gamma)
            .json(&json!({"id": "g1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let out = ok_json(
        s.post("/v1/sessions/g1/calls", &gamma)
            .json(&json!({"name": "web_fetch", "arguments": {"url": format!("http://localhost:{port}/healthz")}, "detach": true}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    assert_eq!(out["status"], "started");
    let call_id = out["call_id"].as_str().unwrap().to_owned();
    // Not another agent's to collect.
    let (st, _) = problem(
        s.get(&format!("/v1/sessions/g1/calls/{call_id}"), &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "a1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let (st, _) = problem(
        s.get(&format!("/v1/sessions/a1/calls/{call_id}"), &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let done = ok_json(
        s.get(
            &format!("/v1/sessions/g1/calls/{call_id}?timeout_ms=10000"),
            &gamma,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(
        (
            done["result"]["status"].as_i64(),
            done["result"]["body"].as_str()
        ),
        (Some(200), Some("ok\n")),
        "{done}"
    );
    // Collected again: the recorded outcome.
    let again = ok_json(
        s.get(&format!("/v1/sessions/g1/calls/{call_id}"), &gamma)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(again["status"], "done");
    let (st, _) = problem(
        s.get("/v1/sessions/g1/calls/call-none", &gamma)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    s.stop().await;
}
