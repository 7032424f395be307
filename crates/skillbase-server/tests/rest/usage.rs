//! `GET /v1/skills/{name}/usage` and `GET /v1/usage`: the figures of the store's aggregates, an
//! admin's of every agent, an agent token's of its own agent only — another agent, or a skill
//! it may not see, answers exactly as a missing one, and no figure of another agent reaches it;
//! a malformed window is refused.

use super::*;
use skillbase_store::NewEvent;

fn activated(agent: &str, skill: &str, reason: &str) -> NewEvent {
    NewEvent {
        kind: "skill_activated".into(),
        scope: Some("shared".into()),
        skill: Some(skill.into()),
        rev: Some(1),
        agent: Some(agent.into()),
        session: Some(format!("{agent}-s")),
        data: json!({"reason": reason, "tokens": 30, "source": "context"}),
        ..NewEvent::default()
    }
}

/// alpha triggers shared-one twice; beta loads it once and uses its own secret skill.
async fn with_usage() -> TestServer {
    let s = TestServer::start().await;
    s.store
        .append_events(&[
            activated("alpha", "shared-one", "trigger:refund"),
            activated("alpha", "shared-one", "trigger:refund"),
            activated("beta", "shared-one", "load"),
            NewEvent {
                scope: Some("agent:beta".into()),
                ..activated("beta", "beta-secret", "eager")
            },
        ])
        .await
        .unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_reads_every_agent_and_an_agent_token_only_its_own() {
    let s = with_usage().await;
    let all = ok_json(
        s.get("/v1/skills/shared-one/usage", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(all["activations"]["trigger"], 2);
    assert_eq!(all["activations"]["load"], 1);
    assert_eq!(all["body_tokens"], 90);
    let agents: Vec<&str> = all["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["alpha", "beta"]);
    let beta = ok_json(
        s.get("/v1/skills/shared-one/usage?agent=beta", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (
            beta["activations"]["load"].as_i64(),
            beta["activations"]["trigger"].as_i64()
        ),
        (Some(1), Some(0))
    );

    // alpha: its own figures, nothing of beta's, even asked for all.
    let own = ok_json(
        s.get("/v1/skills/shared-one/usage", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (
            own["activations"]["trigger"].as_i64(),
            own["activations"]["load"].as_i64()
        ),
        (Some(2), Some(0))
    );
    assert!(!own.to_string().contains("beta"), "{own}");
    let lib = ok_json(
        s.get("/v1/usage?since=7d", &s.alpha).send().await.unwrap(),
        200,
    )
    .await;
    assert!(!lib.to_string().contains("beta"), "{lib}");
    assert_eq!(lib["agent"], "alpha");
    let names: Vec<&str> = lib["never_used"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha-secret", "shared-two"]);
    assert_eq!(lib["skills"][0]["skill"], "shared-one");
    assert_eq!(lib["skills"][0]["activations"], 2);

    // Another agent, or a skill alpha may not see: answered as missing ones are.
    let (st, other) = problem(
        s.get("/v1/skills/shared-one/usage?agent=beta", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st2, missing) = problem(
        s.get("/v1/skills/shared-one/usage?agent=nobody", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, st2), (404, 404));
    assert_eq!(
        other["detail"].as_str().unwrap().replace("beta", "X"),
        missing["detail"].as_str().unwrap().replace("nobody", "X")
    );
    let (st, hidden) = problem(
        s.get("/v1/skills/beta-secret/usage", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st2, absent) = problem(
        s.get("/v1/skills/no-such-skill/usage", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, st2), (404, 404));
    assert_eq!(
        without(&hidden["detail"], "beta-secret"),
        without(&absent["detail"], "no-such-skill")
    );
    let (st, _) = problem(
        s.get("/v1/usage?agent=beta", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);

    // The admin's library: every skill, beta's secret too; shared-two and alpha-secret unused.
    let lib = ok_json(s.get("/v1/usage", &s.admin).send().await.unwrap(), 200).await;
    let used: Vec<&str> = lib["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["skill"].as_str().unwrap())
        .collect();
    assert_eq!(used, ["shared-one", "beta-secret"]);
    let names: Vec<&str> = lib["never_used"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha-secret", "shared-two"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_and_malformed_windows_are_refused() {
    let s = with_usage().await;
    let r = reqwest::Client::new()
        .get(s.url("/v1/usage"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = reqwest::Client::new()
        .get(s.url("/v1/skills/shared-one/usage"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    for q in [
        "since=yesterday",
        "since=2026-02-30",
        "since=0d",
        "since=-5d",
        "agent=Not%20A%20Name",
        "bogus=1",
    ] {
        for path in ["/v1/usage", "/v1/skills/shared-one/usage"] {
            let (st, p) = problem(
                s.get(&format!("{path}?{q}"), &s.admin)
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(st, 400, "{path}?{q}: {p}");
        }
    }
    let (_, p) = problem(
        s.get("/v1/usage?since=yesterday", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("YYYY-MM-DD"), "{p}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_turn_counts_for_its_agent() {
    let s = TestServer::start().await;
    let sess = ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let id = sess["id"].as_str().unwrap();
    ok_json(
        s.post(&format!("/v1/sessions/{id}/turns"), &s.alpha)
            .json(&json!({"message": "hello"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let u = ok_json(
        s.get("/v1/skills/shared-one/usage", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let alpha = &u["agents"][0];
    assert_eq!(alpha["agent"], "alpha");
    assert_eq!(alpha["turns"], 1);
    // Listed in full in the turn's catalog (three skills fit any budget).
    assert_eq!(alpha["listed"]["full"], 1, "{u}");
}
