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
        assert!(env.store.open_run(&bot(), &s).await.unwrap().is_some());
        failed(&env.call(&s, "fails", json!({})).await);
        assert!(
            env.store.open_run(&bot(), &s).await.unwrap().is_none(),
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
    let pinned = env.d.pinned(&bot(), "p1", 100_000).await.unwrap();
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
    let pinned = env.d.pinned(&bot(), "p2", 100_000).await.unwrap();
    let asker = &pinned.skills[0];
    assert!(!asker.content.contains(SECRET), "{}", asker.content);
    assert!(
        asker.content.starts_with("<skill_content name=\"asker\""),
        "{}",
        asker.content
    );
    let stored = env.store.session(&bot(), "p2").await.unwrap().unwrap();
    let args = stored.activations[0].arguments.clone().unwrap();
    assert!(!args.contains(SECRET), "{args}");
}

// ---------------------------------------------------------------------------------------------
// Candidates: an agent's new revision staged beside the active one, judged by its runs.

/// An agent staging its revisions, with `min_runs` and a threshold high enough that drift does
/// not end the candidate first; it writes "proc" (revision 1, active) and a second revision,
/// staged. Returns the agent.
async fn staged(env: &Env, agent: &str, min_runs: u32, threshold: u32) -> AgentName {
    let a = env
        .agent(agent, |c| {
            c.policies.stage_agent_revisions = true;
            c.policies.candidate_percent = 50;
            c.policies.candidate_min_runs = min_runs;
            c.policies.failure_threshold = threshold;
        })
        .await;
    let call = |tool: &'static str, args: Value| env.call_as(&a, "w", tool, args, CallMode::Wait);
    let r = done(
        &call(
            "skill_create",
            json!({"name": "proc", "description": "The procedure. Use when testing.", "body": "Version one."}),
        )
        .await,
    )
    .clone();
    // A new skill has nothing to be compared with: it is written active.
    assert_eq!(
        (r["result"].clone(), r["rev"].clone()),
        (json!("created"), json!(1))
    );
    let r = done(
        &call(
            "skill_modify",
            json!({"name": "proc", "body": "Version two."}),
        )
        .await,
    )
    .clone();
    assert_eq!(r["result"], json!("candidate"), "{r}");
    assert_eq!(r["rev"], json!(2));
    assert_eq!(r["candidate"]["percent"], json!(50));
    a
}

/// Sessions of `agent` the candidate of "proc" is served to (`true`) and not, `n` of each.
fn split_sessions(env: &Env, agent: &AgentName, n: usize) -> (Vec<String>, Vec<String>) {
    let e = env
        .store
        .index()
        .get(&Scope::Agent(agent.clone()), "proc")
        .cloned()
        .expect("proc is stored");
    let (c, _) = e.candidate.clone().expect("a candidate is staged");
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for i in 0..1000 {
        let s = format!("{agent}-s{i}");
        if c.serves(&s, e.id) {
            if yes.len() < n {
                yes.push(s);
            }
        } else if no.len() < n {
            no.push(s);
        }
    }
    assert_eq!((yes.len(), no.len()), (n, n), "the share splits sessions");
    (yes, no)
}

/// Load "proc" in `session` as `agent` and end its run as `outcome`; returns the body served.
async fn run_once(env: &Env, agent: &AgentName, session: &str, outcome: &str) -> String {
    let o = env
        .call_as(
            agent,
            session,
            "load_skill",
            json!({"name": "proc"}),
            CallMode::Wait,
        )
        .await;
    let body = done(&o).as_str().unwrap().to_owned();
    let o = env
        .call_as(
            agent,
            session,
            "skill_finish",
            json!({"outcome": outcome, "note": "done"}),
            CallMode::Wait,
        )
        .await;
    done(&o);
    body
}

/// The state of each revision of a skill, oldest first.
async fn states(env: &Env, scope: &Scope, name: &str) -> Vec<String> {
    env.store
        .history(scope, name)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.state)
        .collect()
}

/// A candidate whose runs fail more often than the active revision's is not promoted: it is
/// served to its share of sessions only (the same sessions every time), judged once each
/// revision has `min_runs` ended runs, rejected with both revisions' figures, and the active
/// revision stays (skillbase-insight's `tests/revisions.rs` reads it in the dream report).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_with_worse_outcomes_is_not_promoted() {
    let env = Env::new().await;
    let a = staged(&env, "stager", 3, 100).await;
    let scope = Scope::Agent(a.clone());
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "candidate"]
    );
    assert_eq!(env.store.index().get(&scope, "proc").unwrap().active_rev, 1);
    let (cand, active) = split_sessions(&env, &a, 3);
    // The catalog shows the active revision to every session.
    for i in 0..3 {
        let body = run_once(
            &env,
            &a,
            &cand[i],
            if i == 0 { "success" } else { "failure" },
        )
        .await;
        assert!(
            body.contains("Version two.") && body.contains("revision=\"2\""),
            "{body}"
        );
        // Two of the candidate's three runs failed: not judged before the active one has three.
        assert_eq!(states(&env, &scope, "proc").await[1], "candidate");
        let body = run_once(
            &env,
            &a,
            &active[i],
            if i == 0 { "failure" } else { "success" },
        )
        .await;
        assert!(
            body.contains("Version one.") && body.contains("revision=\"1\""),
            "{body}"
        );
    }
    // 67% against 33%: rejected.
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "rejected"]
    );
    let e = env.store.index().get(&scope, "proc").cloned().unwrap();
    assert_eq!(
        (e.active_rev, e.status, e.candidate.is_none()),
        (1, Status::Active, true)
    );
    let ev: Vec<EventRecord> = env
        .events()
        .await
        .into_iter()
        .filter(|e| e.kind.as_str().starts_with("candidate_"))
        .collect();
    let kinds: Vec<&str> = ev.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["candidate_staged", "candidate_rejected"]);
    let d = &ev[1].data;
    assert_eq!(ev[1].rev, Some(2));
    assert_eq!(ev[1].agent.as_deref(), Some("stager"));
    assert_eq!(
        (
            d["candidate"]["failure"].clone(),
            d["active"]["failure"].clone()
        ),
        (json!(2), json!(1))
    );
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .contains("worse: 67% of 3 runs failed, against 33% of 3"),
        "{d}"
    );
    // Every session gets the active revision now, the candidate's too.
    let body = run_once(&env, &a, &format!("{}-again", cand[0]), "success").await;
    assert!(body.contains("Version one."), "{body}");
}

/// A candidate whose runs fail no more often than the active revision's is promoted: it is the
/// active revision for every session afterwards, and the history says so. A second revision
/// while one is staged supersedes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_not_worse_is_promoted() {
    let env = Env::new().await;
    let a = staged(&env, "promoter", 2, 100).await;
    let scope = Scope::Agent(a.clone());
    // A second revision supersedes the first candidate (it is staged in its place).
    let r = done(
        &env.call_as(
            &a,
            "w",
            "skill_modify",
            json!({"name": "proc", "body": "Version three."}),
            CallMode::Wait,
        )
        .await,
    )
    .clone();
    assert_eq!(
        (r["result"].clone(), r["rev"].clone()),
        (json!("candidate"), json!(3))
    );
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "superseded", "candidate"]
    );
    let (cand, active) = split_sessions(&env, &a, 2);
    for i in 0..2 {
        let body = run_once(
            &env,
            &a,
            &active[i],
            if i == 0 { "failure" } else { "success" },
        )
        .await;
        assert!(body.contains("Version one."), "{body}");
        let body = run_once(&env, &a, &cand[i], "success").await;
        assert!(body.contains("Version three."), "{body}");
    }
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "superseded", "committed"]
    );
    let e = env.store.index().get(&scope, "proc").cloned().unwrap();
    assert_eq!((e.active_rev, e.candidate.is_none()), (3, true));
    let promoted: Vec<EventRecord> = env
        .events()
        .await
        .into_iter()
        .filter(|e| e.kind == "candidate_promoted")
        .collect();
    assert_eq!(promoted.len(), 1);
    assert_eq!(promoted[0].data["from_rev"], json!(1));
    assert!(
        promoted[0].data["reason"]
            .as_str()
            .unwrap()
            .contains("not worse: 0% of 2 runs failed, against 50% of 2")
    );
    let body = run_once(&env, &a, &active[0], "success").await;
    assert!(body.contains("Version three."), "{body}");
    // Revert undoes a promoted candidate like any other revision.
    env.store.revert(&scope, "proc", 1, &human()).await.unwrap();
    let body = run_once(&env, &a, &cand[0], "success").await;
    assert!(body.contains("Version one."), "{body}");
}

/// A candidate that fails `failure_threshold` runs in a row is rejected at once (it drifted),
/// without waiting for `min_runs`, and the skill stays active at its revision: a candidate's
/// drift never disables the skill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drifting_candidate_is_rejected_and_the_skill_stays_active() {
    let env = Env::new().await;
    let a = staged(&env, "drifter", 50, 2).await;
    let scope = Scope::Agent(a.clone());
    let (cand, _) = split_sessions(&env, &a, 2);
    run_once(&env, &a, &cand[0], "failure").await;
    assert_eq!(states(&env, &scope, "proc").await[1], "candidate");
    run_once(&env, &a, &cand[1], "failure").await;
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "rejected"]
    );
    assert_eq!(env.status(&scope, "proc"), Some(Status::Active));
    let ev: Vec<EventRecord> = env
        .events()
        .await
        .into_iter()
        .filter(|e| e.kind == "candidate_rejected" || e.kind == "disabled")
        .collect();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(
        ev[0].data["reason"]
            .as_str()
            .unwrap()
            .contains("revision 2 failed its last 2 runs in a row")
    );
}

/// A person may promote a candidate before its runs are judged (approving it), and a person's
/// own write while one is staged supersedes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_can_approve_or_supersede_a_candidate() {
    let env = Env::new().await;
    let a = staged(&env, "approver", 5, 100).await;
    let scope = Scope::Agent(a.clone());
    env.store
        .approve(&scope, "proc", 2, &human())
        .await
        .unwrap();
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "committed"]
    );
    let e = env.store.index().get(&scope, "proc").cloned().unwrap();
    assert_eq!((e.active_rev, e.candidate.is_none()), (2, true));
    done(
        &env.call_as(
            &a,
            "w",
            "skill_modify",
            json!({"name": "proc", "body": "Version three."}),
            CallMode::Wait,
        )
        .await,
    );
    assert_eq!(states(&env, &scope, "proc").await[2], "candidate");
    let mut md = env.store.bundle(&scope, "proc", Some(2)).await.unwrap().1;
    md = Bundle::single(
        String::from_utf8(md.skill_md().bytes.to_vec())
            .unwrap()
            .replace("Version two.", "By hand."),
    )
    .unwrap();
    env.store.put(req(scope.clone(), md)).await.unwrap();
    assert_eq!(
        states(&env, &scope, "proc").await,
        ["committed", "committed", "superseded", "committed"]
    );
    assert!(
        env.store
            .index()
            .get(&scope, "proc")
            .unwrap()
            .candidate
            .is_none()
    );
}
