//! `POST /v1/agents/{name}/eval`: routing measured over the agent's real view, isolated like
//! every agent route, bad cases refused with what to fix.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_measures_the_agents_own_view_and_refuses_bad_cases() {
    let s = TestServer::start().await;
    let body = json!({"cases": [
        {"message": "the shared one please", "expected": "shared-one", "kind": "direct"},
        {"message": "alpha secret", "expected": "alpha-secret"},
        {"message": "hello", "expected": null, "kind": "no_skill"}
    ]});
    // The agent's own token: its own view (alpha-secret is alpha's).
    let r = ok_json(
        s.post("/v1/agents/alpha/eval", &s.alpha)
            .json(&body)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(r["agent"], "alpha");
    assert_eq!(r["skills"], 3);
    assert_eq!(r["overall"]["cases"], 3);
    assert_eq!(r["overall"]["labelled"], 2);
    assert_eq!(r["overall"]["recall_at_1"], 1.0);
    assert_eq!(r["by_kind"]["direct"]["cases"], 1);
    assert_eq!(r["outcomes"], json!([]));
    // Outcomes on request.
    let mut with = body.clone();
    with["outcomes"] = json!(true);
    let r = ok_json(
        s.post("/v1/agents/alpha/eval", &s.admin)
            .json(&with)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(r["outcomes"].as_array().unwrap().len(), 3);
    // Another agent's token learns nothing: the same 404 as an agent that does not exist.
    let (st, other) = problem(
        s.post("/v1/agents/alpha/eval", &s.beta)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st2, missing) = problem(
        s.post("/v1/agents/nobody/eval", &s.admin)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, st2), (404, 404));
    assert_eq!(
        without(&other["detail"], "alpha"),
        without(&missing["detail"], "nobody")
    );
    // Bad cases: 422 naming the case, and nothing else happens.
    let events = s.event_count().await;
    for (bad, want) in [
        (json!({"cases": []}), "1 to"),
        (json!({"cases": [{"message": "x"}]}), "line 1"),
        (
            json!({"cases": [{"message": "x", "expected": 3}]}),
            "line 1",
        ),
        (
            json!({"cases": [{"message": "ok", "expected": null}, "nope"]}),
            "line 2",
        ),
        (json!({"cases": [], "extra": 1}), "unknown field"),
    ] {
        let (st, p) = problem(
            s.post("/v1/agents/alpha/eval", &s.admin)
                .json(&bad)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert!(st == 422 || st == 400, "{bad}: {st} {p}");
        assert!(p["detail"].as_str().unwrap().contains(want), "{bad}: {p}");
    }
    let too_many: Vec<Value> = (0..10_001)
        .map(|_| json!({"message": "m", "expected": null}))
        .collect();
    let (st, _) = problem(
        s.post("/v1/agents/alpha/eval", &s.admin)
            .json(&json!({"cases": too_many}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    assert_eq!(s.event_count().await, events);
    s.stop().await;
}
