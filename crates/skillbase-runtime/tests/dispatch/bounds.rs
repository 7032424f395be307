//! The pipeline's stages and bounds: arguments, handlers, modes, calls in flight, network calls,
//! timeouts, detached results and the token cap.

use super::*;

// ---------------------------------------------------------------------------------------------
// The pipeline's stages and bounds.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_missing_handlers_and_bad_modes_are_refused() {
    let env = Env::new().await;
    env.put(skill("seed", "", "So the agent has a view.")).await;
    let s = "bad";
    for args in [
        json!({"text": 5}),
        json!({"text": "a", "extra": 1}),
        json!({}),
        json!("not an object"),
        json!({"text": "a", "n": 1.5}),
    ] {
        let o = env.call(s, "echo", args.clone()).await;
        assert_eq!(refused(&o), Rule::InvalidArguments, "{args}");
        assert!(
            o.for_model().contains("do not match its parameters"),
            "{}",
            o.for_model()
        );
    }
    assert_eq!(
        refused(
            &env.call(s, "skill_finish", json!({"outcome": "maybe"}))
                .await
        ),
        Rule::InvalidArguments
    );
    assert_eq!(
        refused(&env.call(s, "take_note", json!({"text": ""})).await),
        Rule::InvalidArguments
    );
    let o = env.call(s, "ghost", json!({})).await;
    assert_eq!(refused(&o), Rule::NoHandler);
    let o = env
        .call_as(&bot(), s, "echo", json!({"text": "a"}), CallMode::Detach)
        .await;
    assert_eq!(refused(&o), Rule::CannotDetach);
    assert_eq!(refused(&env.call(s, "", json!({})).await), Rule::NotOffered);
    assert_eq!(
        refused(&env.call(s, &"x".repeat(10_000), json!({})).await),
        Rule::NotOffered
    );
    // Unknown agents are errors for the harness, not outcomes.
    assert!(
        env.d
            .call(
                &name("nobody"),
                s,
                "echo",
                json!({"text": "a"}),
                CallMode::Wait
            )
            .await
            .is_err()
    );
    // Another agent's use of the same id is a session of its own, as for any new id.
    let other = env.agent("other", |_| {}).await;
    assert!(
        env.d
            .call(&other, s, "echo", json!({"text": "a"}), CallMode::Wait)
            .await
            .is_ok()
    );
    let rules: Vec<String> = env.refusals(s).await.into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        rules.iter().filter(|r| *r == "invalid_arguments").count(),
        7
    );
    assert!(rules.contains(&"no_handler".into()) && rules.contains(&"cannot_detach".into()));
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_are_bounded_per_agent() {
    let env = Env::new().await;
    let a = env
        .agent("single", |c| c.policies.max_calls_in_flight = 1)
        .await;
    let o = env
        .call_as(&a, "s1", "slow", json!({"ms": 1500}), CallMode::Detach)
        .await;
    let CallOutcome::Started { call_id } = o else {
        panic!("{o:?}")
    };
    // Another call, even in another session, waits for nothing: refused.
    let o = env
        .call_as(&a, "s2", "echo", json!({"text": "a"}), CallMode::Wait)
        .await;
    assert_eq!(refused(&o), Rule::TooManyInFlight);
    // Other agents are not affected.
    done(&env.call("s3", "echo", json!({"text": "a"})).await);
    let out = env.d.wait(&call_id, Duration::from_secs(10)).await.unwrap();
    env.saw(&out);
    assert_eq!(done(&out)["slept"], json!(1500));
    done(
        &env.call_as(&a, "s2", "echo", json!({"text": "a"}), CallMode::Wait)
            .await,
    );

    // The policy is read at every call: raising it takes effect at once.
    env.change(&a, |c| c.policies.max_calls_in_flight = 2).await;
    let o = env
        .call_as(&a, "s1", "slow", json!({"ms": 1500}), CallMode::Detach)
        .await;
    let CallOutcome::Started { call_id } = o else {
        panic!("{o:?}")
    };
    done(
        &env.call_as(&a, "s2", "echo", json!({"text": "b"}), CallMode::Wait)
            .await,
    );
    env.d.wait(&call_id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        env.refusals("s2").await,
        pairs(&[("echo", "too_many_in_flight")])
    );
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_calls_are_bounded_per_session() {
    let env = Env::new().await;
    let a = env
        .agent("netty", |c| {
            c.policies.max_network_calls_per_session = 2;
            c.policies.max_calls_in_flight = 1;
        })
        .await;
    let call = |session: &'static str| {
        env.call_as(
            &a,
            session,
            "net",
            json!({"host": "api.example.com"}),
            CallMode::Wait,
        )
    };
    // A network call refused for another bound does not use the session's budget.
    let o = env
        .call_as(&a, "n1", "slow", json!({"ms": 800}), CallMode::Detach)
        .await;
    let CallOutcome::Started { call_id } = o else {
        panic!("{o:?}")
    };
    assert_eq!(refused(&call("n1").await), Rule::TooManyInFlight);
    env.d.wait(&call_id, Duration::from_secs(10)).await.unwrap();
    done(&call("n1").await);
    // A failed network call counts: it reached out.
    let o = env
        .call_as(
            &a,
            "n1",
            "net",
            json!({"host": "evil.example.net"}),
            CallMode::Wait,
        )
        .await;
    assert_eq!(failed(&o).0, Some(Rule::DestinationNotAllowed));
    let o = call("n1").await;
    assert_eq!(refused(&o), Rule::NetworkBudget);
    assert!(
        o.for_model().contains("2 network calls"),
        "{}",
        o.for_model()
    );
    // Non-network tools still work; another session has its own budget.
    done(
        &env.call_as(&a, "n1", "echo", json!({"text": "a"}), CallMode::Wait)
            .await,
    );
    done(&call("n2").await);
    assert_eq!(
        env.refusals("n1").await,
        pairs(&[
            ("net", "too_many_in_flight"),
            ("net", "destination_not_allowed"),
            ("net", "network_budget")
        ])
    );
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_immediate_tool_that_overruns_its_limit_is_cancelled() {
    let env = Env::new().await;
    let t = Instant::now();
    let o = env.call("t", "hang", json!({})).await;
    let elapsed = t.elapsed();
    let (rule, msg) = failed(&o);
    assert_eq!(rule, Some(Rule::Timeout));
    assert!(
        msg.contains("5 s limit") && msg.contains("immediate"),
        "{msg}"
    );
    assert!(
        elapsed >= Duration::from_secs(5) && elapsed < Duration::from_millis(5900),
        "{elapsed:?}"
    );
    let ev = env.called("t", o.call_id()).await;
    assert_eq!(
        (ev["ok"].clone(), ev["rule"].clone()),
        (json!(false), json!("timeout"))
    );
    // The permit was released.
    done(&env.call("t", "echo", json!({"text": "after"})).await);
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncollected_detached_results_do_not_pile_up_in_memory() {
    let env = Env::new().await;
    let a = env
        .agent("many", |c| c.policies.max_calls_in_flight = 5000)
        .await;
    let mut ids = Vec::new();
    for i in 0..1100 {
        let o = env
            .call_as(&a, "pile", "slow", json!({"ms": 0}), CallMode::Detach)
            .await;
        let CallOutcome::Started { call_id } = o else {
            panic!("{o:?}")
        };
        ids.push(call_id);
        if i == 10 {
            // Let the first ones finish before the bound is reached.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    // The first call finished and nobody collected it: dropped from memory...
    assert!(
        env.d
            .wait(&ids[0], Duration::from_millis(10))
            .await
            .is_none()
    );
    // ...but its outcome is in the store.
    env.d.flush().await;
    let finished = env.session_events("pile", "call_finished").await;
    assert!(
        finished.iter().any(|e| e["call_id"] == json!(ids[0])),
        "{} finished events",
        finished.len()
    );
    // A recent one is still collected from memory.
    let last = ids.last().unwrap();
    assert!(env.d.wait(last, Duration::from_secs(10)).await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_call_starts_then_reports_through_wait_and_an_event() {
    let env = Env::new().await;
    let s = "bg";
    let o = env
        .call_as(&bot(), s, "slow", json!({"ms": 300}), CallMode::Detach)
        .await;
    let CallOutcome::Started { call_id } = &o else {
        panic!("{o:?}")
    };
    assert!(o.for_model().contains(call_id.as_str()));
    assert!(
        env.d
            .wait("call-unknown", Duration::from_millis(10))
            .await
            .is_none()
    );
    let out = env.d.wait(call_id, Duration::from_secs(10)).await.unwrap();
    env.saw(&out);
    assert_eq!(out.call_id(), call_id);
    assert_eq!(done(&out)["slept"], json!(300));
    // Collected once.
    assert!(
        env.d
            .wait(call_id, Duration::from_millis(10))
            .await
            .is_none()
    );
    let started = env.session_events(s, "call_started").await;
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["call_id"], json!(call_id));
    let finished = env.session_events(s, "call_finished").await;
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["call_id"], json!(call_id));
    assert_eq!(finished[0]["outcome"]["status"], json!("done"));
    assert_eq!(finished[0]["outcome"]["result"]["slept"], json!(300));
    // Waiting too briefly gives nothing yet; the outcome stays until collected.
    let o = env
        .call_as(&bot(), s, "slow", json!({"ms": 400}), CallMode::Detach)
        .await;
    assert!(
        env.d
            .wait(o.call_id(), Duration::from_millis(20))
            .await
            .is_none()
    );
    assert!(
        env.d
            .wait(o.call_id(), Duration::from_secs(10))
            .await
            .is_some()
    );
    // A waited `seconds` call runs in line.
    done(&env.call(s, "slow", json!({"ms": 10})).await);
    env.assert_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_capped_in_tokens() {
    let env = Env::new().await;
    let a = env
        .agent("terse", |c| c.policies.max_result_tokens = 20)
        .await;
    let long = "lorem ipsum dolor sit amet ".repeat(200);
    let o = env
        .call_as(&a, "c", "echo", json!({"text": long}), CallMode::Wait)
        .await;
    let CallOutcome::Done {
        result,
        tokens,
        truncated,
        ..
    } = &o
    else {
        panic!("{o:?}")
    };
    assert!(*truncated);
    assert!(*tokens < 60, "{tokens}");
    let text = result.as_str().unwrap();
    assert!(
        text.contains("[truncated") && text.contains("limit of 20"),
        "{text}"
    );
    let ev = env.called("c", o.call_id()).await;
    assert_eq!(ev["truncated"], json!(true));
    let o = env
        .call_as(&a, "c", "echo", json!({"text": "short"}), CallMode::Wait)
        .await;
    let CallOutcome::Done {
        truncated, result, ..
    } = &o
    else {
        panic!("{o:?}")
    };
    assert!(!*truncated);
    assert_eq!(result["echo"], json!("short"));
    // A secret is scrubbed before the cut, so a cut never leaves part of it.
    let o = env
        .call_as(
            &a,
            "c",
            "echo",
            json!({"text": format!("{}{SECRET}", "a ".repeat(18))}),
            CallMode::Wait,
        )
        .await;
    done(&o);
    env.assert_clean().await;
}
