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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_reads_graded_tasks_in_the_skillrouter_form() {
    let s = TestServer::start().await;
    let tasks = json!([
        {"task_id": "t1", "instruction_text": "the shared one please", "domain": "ignored"},
        {"task_id": "t2", "instruction_text": "alpha secret"},
        // beta's private skill: alpha does not see it, so the task is skipped.
        {"task_id": "t3", "instruction_text": "beta secret"},
        {"task_id": "g", "instruction_text": "anything"}
    ]);
    let relevance = json!({
        "t1": {"gt_skill_ids": ["gt/shared-one", "gt/shared-two"], "core_gt_ids": ["gt/shared-one"],
               "relevance": {"gt/shared-one": 3, "gt/shared-two": 1}, "task_type": "clean"},
        "t2": {"gt_skill_ids": ["gt/alpha-secret"], "relevance": {"gt/alpha-secret": 3}},
        "t3": {"gt_skill_ids": ["gt/beta-secret"], "relevance": {"gt/beta-secret": 3}},
        "g": {"gt_skill_ids": ["gt/shared-two"], "relevance": {"gt/shared-two": 3}, "task_type": "generic_only"},
        "not-sent": {"gt_skill_ids": ["gt/shared-two"], "relevance": {"gt/shared-two": 3}}
    });
    let body = json!({"tasks": tasks, "relevance": relevance, "outcomes": true});
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
    assert_eq!(r["tasks"], 5);
    assert_eq!(r["overall"]["tasks"], 2);
    assert_eq!(r["overall"]["hit_at_1"], 1.0);
    assert_eq!(r["overall"]["recall_at_10"], 1.0);
    assert_eq!(
        r["skipped_by_reason"],
        json!({"generic_only": 1, "no_relevant_skill": 1, "no_task": 1})
    );
    assert_eq!(r["outcomes"][0]["task_id"], "t1");
    assert_eq!(r["outcomes"][0]["top"][0], "shared-one");
    let ndcg = r["outcomes"][0]["metrics"]["ndcg_at_10"].as_f64().unwrap();
    assert!(ndcg > 0.9 && ndcg <= 1.0, "{r}");
    // An id map (here a manifest's `gt_map`) renames the ids; ids it omits are outside the pool.
    let mapped = json!({"tasks": body["tasks"], "relevance": body["relevance"],
        "id_map": {"gt_map": {"gt/shared-one": "shared-two"}}});
    let r = ok_json(
        s.post("/v1/agents/alpha/eval", &s.admin)
            .json(&mapped)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(r["overall"]["tasks"], 1);
    assert_eq!(r["overall"]["hit_at_1"], 0.0, "{r}");
    assert_eq!(r["outcomes"], json!([]));
    // Another agent's token: the same 404 as for cases.
    let (st, _) = problem(
        s.post("/v1/agents/alpha/eval", &s.beta)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let events = s.event_count().await;
    let ok_task = json!([{"task_id": "t1", "instruction_text": "x"}]);
    for (bad, want) in [
        (json!({"tasks": ok_task}), "give either"),
        (json!({"relevance": {}}), "give either"),
        (
            json!({"cases": [{"message": "x", "expected": null}], "tasks": ok_task, "relevance": {}}),
            "give either",
        ),
        (
            json!({"cases": [{"message": "x", "expected": null}], "id_map": {}}),
            "give either",
        ),
        (json!({"tasks": [], "relevance": {}}), "1 to"),
        (
            json!({"tasks": [{"task_id": "t1"}], "relevance": relevance}),
            "tasks line 1: missing field `instruction_text`",
        ),
        (
            json!({"tasks": ok_task, "relevance": {"t1": {"gt_skill_ids": ["a"], "relevance": {"a": -1}}}}),
            "0 or more",
        ),
        (
            json!({"tasks": ok_task, "relevance": {"t1": {"gt_skill_ids": ["a"], "relevance": {"a": "high"}}}}),
            "grade of",
        ),
        (
            json!({"tasks": ok_task, "relevance": []}),
            "relevance: it is a list",
        ),
        (
            json!({"tasks": ok_task, "relevance": relevance, "id_map": 3}),
            "id map",
        ),
        (
            json!({"tasks": ["t1"], "relevance": relevance}),
            "tasks line 1",
        ),
    ] {
        let (st, p) = problem(
            s.post("/v1/agents/alpha/eval", &s.admin)
                .json(&bad)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(st, 422, "{bad}: {p}");
        assert!(p["detail"].as_str().unwrap().contains(want), "{bad}: {p}");
    }
    assert_eq!(s.event_count().await, events);
    s.stop().await;
}

/// `explain` in the labelled form: why a skill was missed, within the agent's own view; a skill
/// the agent does not see, or `explain` with graded tasks, is refused with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_explain_answers_why_a_skill_was_missed() {
    let s = TestServer::start().await;
    let body = json!({"cases": [
        {"message": "the shared one please", "expected": "shared-one"},
        {"message": "alpha secret", "expected": "shared-one"}
    ], "explain": "shared-one"});
    let r = ok_json(
        s.post("/v1/agents/alpha/eval", &s.alpha)
            .json(&body)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(r["skill"], "shared-one", "{r}");
    assert_eq!(
        (r["expected"].as_u64(), r["first"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(r["misses"][0]["case"], 2);
    assert_eq!(r["misses"][0]["winner"], "alpha-secret", "{r}");
    // beta does not see alpha's skill: explaining it is refused, and says nothing of it.
    let mut other = body.clone();
    other["explain"] = json!("alpha-secret");
    let (st, p) = problem(
        s.post("/v1/agents/beta/eval", &s.beta)
            .json(&other)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422, "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("skillbase list --agent beta"),
        "{p}"
    );
    let (st, p) = problem(
        s.post("/v1/agents/alpha/eval", &s.admin)
            .json(
                &json!({"tasks": [{"task_id": "t", "instruction_text": "x"}],
                          "relevance": {}, "explain": "shared-one"}),
            )
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    assert!(
        p["detail"].as_str().unwrap().contains("labelled `cases`"),
        "{p}"
    );
}
