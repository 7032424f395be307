//! Learning over REST: conversations imported into sessions (`POST /v1/sessions/{id}/transcript`)
//! and a dream (`POST /v1/agents/{name}/dream`) that captures their recurring procedure as one
//! skill in the agent's scope, citing the sessions; bad transcripts change nothing; an agent
//! token dreams for its own agent only.

use super::*;

fn transcript(n: u32) -> Value {
    json!({"messages": [
        {"role": "system", "content": "You are the release assistant."},
        {"role": "user", "content": format!("Please deploy the billing service, release {n}, and note it")},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("a{n}"), "type": "function", "function": {"name": "take_note", "arguments": format!("{{\"text\":\"release {n} starting\"}}")}},
            {"id": format!("b{n}"), "type": "function", "function": {"name": "deploy", "arguments": format!("{{\"service\":\"billing\",\"version\":\"v{n}\"}}")}}
        ]},
        {"role": "tool", "tool_call_id": format!("a{n}"), "content": "noted"},
        {"role": "tool", "tool_call_id": format!("b{n}"), "content": "{\"deployed\":true}"},
        {"role": "assistant", "tool_calls": [
            {"id": format!("c{n}"), "type": "function", "function": {"name": "deploy", "arguments": format!("{{\"service\":\"billing\",\"check\":true}}")}},
            {"id": format!("d{n}"), "type": "function", "function": {"name": "take_note", "arguments": format!("{{\"text\":\"release {n} done\"}}")}}
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "Deployed and noted."}]}
    ]})
}

/// Alpha granted `deploy`, and `n` sessions `<prefix>-0`... each with a release transcript
/// imported.
async fn sessions_with_transcripts(s: &TestServer, prefix: &str, n: u32) {
    let alpha = AgentName::parse("alpha").unwrap();
    let mut c = s.store.agent(&alpha).await.unwrap().unwrap().config;
    c.grants.tools.push("deploy".into());
    s.store.set_agent(&alpha, &c).await.unwrap();
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        ok_json(
            s.post("/v1/sessions", &s.alpha)
                .json(&json!({"id": id}))
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        let r = ok_json(
            s.post(&format!("/v1/sessions/{id}/transcript"), &s.alpha)
                .json(&transcript(i))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(r, json!({"messages": 1, "calls": 4}));
    }
}

#[tokio::test]
async fn imported_conversations_are_dreamed_into_one_skill_citing_them() {
    let s = TestServer::start().await;
    let alpha = AgentName::parse("alpha").unwrap();
    sessions_with_transcripts(&s, "rel", 5).await;
    // Another agent's token cannot see the session, nor dream for alpha.
    let (st, _) = problem(
        s.post("/v1/sessions/rel-0/transcript", &s.beta)
            .json(&transcript(9))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let (st, _) = problem(
        s.post("/v1/agents/alpha/dream", &s.beta)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);

    let dry = ok_json(
        s.post("/v1/agents/alpha/dream", &s.alpha)
            .json(&json!({"dry_run": true}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(dry["created"][0]["status"], "dry_run", "{dry}");
    let r = ok_json(
        s.post("/v1/agents/alpha/dream", &s.alpha)
            .json(&json!({"min_support": 3}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let created = r["created"].as_array().unwrap();
    assert_eq!(created.len(), 1, "{r}");
    let learned = &created[0];
    assert_eq!(learned["status"], "active");
    assert_eq!(learned["evidence"]["support"], 5);
    assert_eq!(learned["steps"].as_array().unwrap().len(), 4, "{learned}");
    assert_eq!(
        learned["evidence"]["calls"][0],
        json!([
            "transcript:a0",
            "transcript:b0",
            "transcript:c0",
            "transcript:d0"
        ])
    );
    let name = learned["name"].as_str().unwrap();
    assert!(
        name.contains("deploy") || name.contains("billing"),
        "{name}"
    );
    // Alpha's allowlist is a list: the dream says the skill is not visible until it names it.
    assert_eq!(learned["visible"], false, "{learned}");
    let mut c = s.store.agent(&alpha).await.unwrap().unwrap().config;
    c.skills = format!("shared-one,shared-two,alpha-secret,{name}")
        .parse()
        .unwrap();
    s.store.set_agent(&alpha, &c).await.unwrap();
    let shown = ok_json(
        s.get(&format!("/v1/skills/{name}"), &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(shown["scope"], "agent:alpha", "{shown}");
    assert!(
        shown.to_string().contains("agent:alpha/dreaming"),
        "{shown}"
    );
    // Beta does not see alpha's learned skill.
    let r = s
        .get(&format!("/v1/skills/{name}"), &s.beta)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    s.stop().await;
}

#[tokio::test]
async fn bad_transcripts_and_dream_requests_change_nothing() {
    let s = TestServer::start().await;
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "bad-t"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let before = s.event_count().await;
    for (body, status) in [
        (json!({"messages": []}), 422),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            422,
        ),
        (
            json!({"messages": [{"role": "tool", "tool_call_id": "x", "content": "x"}]}),
            422,
        ),
        (
            json!({"messages": [{"role": "user", "content": "fine"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "[1]"}}]}]}),
            422,
        ),
        (
            json!({"messages": [{"role": "user", "content": "x", "extra": 1}]}),
            422,
        ),
        (json!({"messages": "x"}), 422),
        (json!([1]), 400),
    ] {
        let r = s
            .post("/v1/sessions/bad-t/transcript", &s.alpha)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{body}");
    }
    for body in [
        json!({"min_support": 1}),
        json!({"since": -1}),
        json!({"surprise": true}),
    ] {
        let r = s
            .post("/v1/agents/alpha/dream", &s.admin)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error(), "{body}: {}", r.status());
    }
    assert_eq!(s.event_count().await, before);
    s.stop().await;
}

/// The schedule (`[dreaming] idle_minutes`): an agent whose sessions went quiet after new
/// activity is dreamed for once; with nothing new since, not again.
#[tokio::test]
async fn the_schedule_dreams_once_per_quiet_spell() {
    let s = TestServer::start().await;
    sessions_with_transcripts(&s, "sched", 3).await;
    let dreams = |s: &TestServer| {
        let store = s.store.clone();
        async move {
            store
                .events(&EventFilter {
                    kind: Some("dream".into()),
                    ..EventFilter::default()
                })
                .await
                .unwrap()
        }
    };
    // Not quiet long enough: nothing.
    skillbase_server::dreaming::dream_due(&s.state, Duration::from_secs(3600)).await;
    assert!(dreams(&s).await.is_empty());
    // Quiet (an idle time of zero): one dream for alpha, which learns the procedure.
    skillbase_server::dreaming::dream_due(&s.state, Duration::ZERO).await;
    let d = dreams(&s).await;
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].agent.as_deref(), Some("alpha"));
    assert_eq!(d[0].actor.as_deref(), Some("human:dreaming-schedule"));
    assert_eq!(
        d[0].data["created"].as_array().unwrap().len(),
        1,
        "{}",
        d[0].data
    );
    // Nothing new since: not again.
    skillbase_server::dreaming::dream_due(&s.state, Duration::ZERO).await;
    assert_eq!(dreams(&s).await.len(), 1);
    s.stop().await;
}
