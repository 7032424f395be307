//! Runs and drift: failed runs disable a revision, failed calls count, pinned skills keep their
//! arguments.

use super::*;

// ---------------------------------------------------------------------------------------------
// Runs and drift.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consecutive_failed_runs_disable_a_revision_until_it_is_reverted() {
    let env = Env::new().await;
    let inputs = "inputs:\n  type: object\n";
    env.put(skill("flaky", inputs, "Try hard.")).await;
    env.put(skill("seed", "", "So the agent keeps a view."))
        .await;
    // A success breaks the streak.
    for (i, outcome) in ["failure", "failure", "success", "failure", "failure"]
        .iter()
        .enumerate()
    {
        let s = format!("d{i}");
        env.load(&s, "flaky").await;
        let r = env
            .finish(
                &s,
                outcome,
                &format!("{outcome} {i}, and the password was {SECRET}"),
            )
            .await;
        assert_eq!(r["disabled_for_drift"], json!(false), "{i}");
    }
    assert!(
        env.offered(&bot())
            .entries
            .iter()
            .any(|e| e.id == "skill:flaky")
    );
    env.load("d5", "flaky").await;
    let r = env.finish("d5", "failure", "third in a row").await;
    assert_eq!(r["disabled_for_drift"], json!(true));
    assert_eq!(r["rev"], json!(1));
    assert_eq!(env.status(&Scope::Shared, "flaky"), Some(Status::Disabled));
    let ev: Vec<EventRecord> = env
        .events()
        .await
        .into_iter()
        .filter(|e| e.kind == "disabled")
        .collect();
    assert_eq!(ev.len(), 1);
    let drift = ev[0].data["reason"]["drift"].as_str().unwrap();
    assert!(
        drift.contains("revision 1 failed 3 runs in a row (threshold 3)"),
        "{drift}"
    );
    assert_eq!(ev[0].data["reason"]["last_note"], json!("third in a row"));
    assert_eq!(ev[0].actor.as_deref(), Some("agent:bot/inline"));
    // Not offered any more, not loadable.
    assert!(
        env.offered(&bot())
            .entries
            .iter()
            .all(|e| e.id != "skill:flaky")
    );
    let o = env.call("d6", "load_skill", json!({"name": "flaky"})).await;
    assert_eq!(refused(&o), Rule::NotOffered);
    assert!(
        o.for_model().contains("no skill of that name"),
        "{}",
        o.for_model()
    );
    assert_eq!(
        refused(&env.call("d6", "skill_flaky", json!({})).await),
        Rule::NotOffered
    );
    let runs = env.store.runs(&Scope::Shared, "flaky", 10).await.unwrap();
    let outcomes: Vec<&str> = runs.iter().map(|r| r.outcome.as_deref().unwrap()).collect();
    assert_eq!(
        outcomes,
        [
            "failure", "failure", "failure", "success", "failure", "failure"
        ]
    );
    // Reverting re-enables it.
    let o = env
        .store
        .revert(&Scope::Shared, "flaky", 1, &human())
        .await
        .unwrap();
    assert_eq!(o.status, Status::Active);
    assert!(
        env.offered(&bot())
            .entries
            .iter()
            .any(|e| e.id == "skill:flaky")
    );
    env.load("d7", "flaky").await;
    env.assert_clean().await;
}

/// `on_drift = "revert"`: a revision that drifts is replaced by the newest earlier revision
/// whose runs mostly succeeded, with a `drift_reverted` event saying from, to and why; without
/// such a revision it is disabled as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_reverts_to_the_last_good_revision_when_the_policy_says_so() {
    let env = Env::new().await;
    env.change(&bot(), |c| {
        c.policies.on_drift = skillbase_store::OnDrift::Revert;
        c.policies.failure_threshold = 2;
    })
    .await;
    let inputs = "inputs:\n  type: object\n";
    env.put(skill("flaky", inputs, "Version one.")).await;
    env.put(skill("seed", "", "So the agent keeps a view."))
        .await;
    for (i, outcome) in ["success", "success", "failure"].iter().enumerate() {
        env.load(&format!("g{i}"), "flaky").await;
        env.finish(&format!("g{i}"), outcome, "rev 1").await;
    }
    env.put(skill("flaky", inputs, "Version two, worse.")).await;
    env.load("b0", "flaky").await;
    let r = env.finish("b0", "failure", "rev 2 failed").await;
    assert_eq!(r["disabled_for_drift"], json!(false));
    env.load("b1", "flaky").await;
    let r = env.finish("b1", "failure", "rev 2 failed again").await;
    assert_eq!(r["disabled_for_drift"], json!(true), "{r}");
    assert_eq!(r["rev"], json!(2));
    // Active again, at revision 1.
    assert_eq!(env.status(&Scope::Shared, "flaky"), Some(Status::Active));
    let ev: Vec<EventRecord> = env
        .events()
        .await
        .into_iter()
        .filter(|e| e.kind == "drift_reverted")
        .collect();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].data["from"], json!(2));
    assert_eq!(ev[0].data["to"], json!(1));
    assert_eq!(ev[0].data["to_runs"]["success"], json!(2));
    assert!(
        ev[0].data["drift"]
            .as_str()
            .unwrap()
            .contains("revision 2 failed 2 runs in a row")
    );
    let body = env.load("after", "flaky").await;
    assert!(body.contains("Version one."), "{body}");
    // The next dream's report shows it.
    let report = env
        .d
        .dream(&bot(), &skillbase_runtime::dream::DreamOptions::default())
        .await
        .unwrap();
    assert_eq!(report.drift_reverted.len(), 1, "{report:?}");
    assert_eq!(
        (report.drift_reverted[0].from, report.drift_reverted[0].to),
        (2, 1)
    );
    // Revision 1 failing again (its streak: g2, then c0) has no earlier good revision to go
    // back to: disabled.
    env.load("c0", "flaky").await;
    let r = env.finish("c0", "failure", "x").await;
    assert_eq!(r["disabled_for_drift"], json!(true), "{r}");
    assert_eq!(env.status(&Scope::Shared, "flaky"), Some(Status::Disabled));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_calls_end_a_run_as_a_failure_and_count_toward_drift() {
    let env = Env::new().await;
    env.change(&bot(), |c| c.policies.failure_threshold = 2)
        .await;
    env.put(skill(
        "caller",
        "capabilities:\n  tools: [fails, echo]\n",
        "Call the flaky API.",
    ))
    .await;
    for i in 0..2 {
        let s = format!("f{i}");
        env.load(&s, "caller").await;
        done(&env.call(&s, "echo", json!({"text": "a"})).await);
        failed(&env.call(&s, "fails", json!({})).await);
        assert!(env.store.open_run(&s).await.unwrap().is_some());
        failed(&env.call(&s, "fails", json!({})).await);
        assert!(
            env.store.open_run(&s).await.unwrap().is_none(),
            "two failed calls end the run"
        );
    }
    let runs = env.store.runs(&Scope::Shared, "caller", 5).await.unwrap();
    assert_eq!((runs[0].calls, runs[0].failed_calls), (3, 2));
    assert_eq!(runs[0].outcome.as_deref(), Some("failure"));
    assert!(
        runs[0].note.contains("2 calls failed (last: fails)"),
        "{}",
        runs[0].note
    );
    assert_eq!(env.status(&Scope::Shared, "caller"), Some(Status::Disabled));
    env.assert_clean().await;
}

/// A skill loaded with arguments is re-attached after compaction (`pinned`) as it was loaded:
/// the arguments substituted and attached again, with vault values redacted as in the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_skills_keep_the_arguments_they_were_loaded_with() {
    let env = Env::new().await;
    let inputs =
        "inputs:\n  type: object\n  properties:\n    q:\n      type: string\n  required: [q]\n";
    env.put(skill("asker", inputs, "Answer {{q}} carefully."))
        .await;
    env.put(skill("plain", "", "No inputs here.")).await;
    let o = env
        .call(
            "p1",
            "load_skill",
            json!({"name": "asker", "arguments": {"q": "the weather"}}),
        )
        .await;
    let loaded = done(&o).as_str().unwrap().to_owned();
    assert!(loaded.contains("Answer the weather carefully."), "{loaded}");
    env.load("p1", "plain").await;
    let pinned = env.d.runtime.pinned(&bot(), "p1", 100_000).await.unwrap();
    let asker = pinned.skills.iter().find(|p| p.name == "asker").unwrap();
    assert_eq!(asker.content, loaded, "re-attached exactly as loaded");
    let plain = pinned.skills.iter().find(|p| p.name == "plain").unwrap();
    assert!(
        plain.content.contains("No inputs here."),
        "{}",
        plain.content
    );
    // A vault value in the arguments is stored redacted, and re-attached redacted.
    let o = env
        .call(
            "p2",
            "load_skill",
            json!({"name": "asker", "arguments": {"q": SECRET}}),
        )
        .await;
    let loaded = done(&o).as_str().unwrap().to_owned();
    assert!(!loaded.contains(SECRET), "{loaded}");
    let pinned = env.d.runtime.pinned(&bot(), "p2", 100_000).await.unwrap();
    let asker = &pinned.skills[0];
    assert!(!asker.content.contains(SECRET), "{}", asker.content);
    assert!(
        asker.content.starts_with("<skill_content name=\"asker\""),
        "{}",
        asker.content
    );
    let stored = env.store.session("p2").await.unwrap().unwrap();
    let args = stored.activations[0].arguments.clone().unwrap();
    assert!(!args.contains(SECRET), "{args}");
}
