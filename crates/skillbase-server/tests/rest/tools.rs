//! The tool gateway over REST: harness-run tools (authorized, then their result posted back)
//! and `GET /v1/tools`.

use super::*;

async fn grant_deploy(s: &TestServer) {
    let alpha = AgentName::parse("alpha").unwrap();
    let mut c = s.store.agent(&alpha).await.unwrap().unwrap().config;
    c.grants.tools.push("deploy".into());
    s.store.set_agent(&alpha, &c).await.unwrap();
}

#[tokio::test]
async fn a_harness_run_call_is_authorized_then_answered_once_by_its_own_session() {
    let s = TestServer::start().await;
    grant_deploy(&s).await;
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "h1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let calls = "/v1/sessions/h1/calls";
    let o = ok_json(
        s.post(calls, &s.alpha)
            .json(&json!({"name": "deploy", "arguments": {"service": "web"}}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    assert_eq!(o["status"], "authorized", "{o}");
    assert_eq!(o["tool"], "deploy");
    let id = o["call_id"].as_str().unwrap().to_owned();
    let result = format!("/v1/sessions/h1/calls/{id}/result");
    // Another agent's token cannot even see the session.
    let (status, _) = problem(
        s.post(&result, &s.beta)
            .json(&json!({"result": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);
    // Neither or both of result and error, or an unknown key: 422, and the call still waits.
    for body in [
        json!({}),
        json!({"result": 1, "error": "x"}),
        json!({"error": ""}),
        json!({"result": 1, "extra": true}),
    ] {
        let r = s.post(&result, &s.alpha).json(&body).send().await.unwrap();
        assert!(
            r.status() == StatusCode::UNPROCESSABLE_ENTITY || r.status() == StatusCode::BAD_REQUEST,
            "{body}: {}",
            r.status()
        );
    }
    let done = ok_json(
        s.post(&result, &s.alpha)
            .json(&json!({"result": {"deployed": "web", "version": 7}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["result"]["version"], 7);
    // Twice, or an id never authorized: 409 with the same problem.
    let (status, p) = problem(
        s.post(&result, &s.alpha)
            .json(&json!({"result": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 409, "{p}");
    assert!(
        p["type"].as_str().unwrap().ends_with("call-not-awaiting"),
        "{p}"
    );
    let (status, p2) = problem(
        s.post("/v1/sessions/h1/calls/call-1-1/result", &s.alpha)
            .json(&json!({"result": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(p["detail"], p2["detail"]);
    // The outcome is readable as any detached call's.
    let got = ok_json(
        s.get(&format!("/v1/sessions/h1/calls/{id}"), &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(got["status"], "done", "{got}");
    s.stop().await;
}

#[tokio::test]
async fn the_tools_listing_says_source_status_and_grants_and_hides_other_agents() {
    let s = TestServer::start().await;
    grant_deploy(&s).await;
    let all = ok_json(s.get("/v1/tools", &s.admin).send().await.unwrap(), 200).await;
    let tools = all["tools"].as_array().unwrap();
    let deploy = tools
        .iter()
        .find(|t| t["name"] == "deploy")
        .expect("listed");
    assert_eq!(deploy["source"], "config");
    assert_eq!(deploy["status"], "harness");
    assert_eq!(deploy["agents"], json!(["alpha"]));
    let web = tools
        .iter()
        .find(|t| t["name"] == "web_fetch")
        .expect("listed");
    assert_eq!(web["status"], "ready");
    assert!(tools.iter().any(|t| t["source"] == "builtin"));
    assert_eq!(all["servers"], json!([]));
    // beta is not granted deploy: not listed for its token, and no agent but beta appears.
    let own = ok_json(s.get("/v1/tools", &s.beta).send().await.unwrap(), 200).await;
    let names: Vec<&str> = own["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"deploy"), "{names:?}");
    assert!(
        own["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["agents"] == json!(["beta"])),
        "{own}"
    );
    s.stop().await;
}
