//! Session state survives a restart; pinned.

use super::*;

// ---------------------------------------------------------------------------------------------
// 8. Session state survives a restart; pinned.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_survives_a_restart_and_pinned_is_most_recent_first() {
    let (env, a) = refund_env().await;
    load_via(
        &env.rt,
        &a,
        "s1",
        "refund",
        Some(&json!({"order_id": "ord_1234"})),
    )
    .await
    .unwrap();
    load_via(&env.rt, &a, "s1", "notes", None).await.unwrap();
    let db = env.db();
    let Env { dir, store, rt } = env;
    drop(rt);
    store.close().await;
    drop(store);

    // A new process: the store reopened from the same SQLite file, a new runtime.
    let store = Arc::new(open_store(&db).await);
    let rt = engine_over(&store.clone(), Some(dir.path().join("ws"))).await;
    let l = load_via(
        &rt,
        &a,
        "s1",
        "refund",
        Some(&json!({"order_id": "ord_1234"})),
    )
    .await
    .unwrap();
    assert!(l.already_active, "{l:#?}");
    assert!(
        load_via(&rt, &a, "s1", "notes", None)
            .await
            .unwrap()
            .already_active
    );
    assert!(
        !load_via(&rt, &a, "s2", "notes", None)
            .await
            .unwrap()
            .already_active
    );

    let all = rt.pinned(&a, "s1", 1_000_000).await.unwrap();
    let names: Vec<&str> = all.skills.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["notes", "refund-policy", "refund"],
        "most recent first"
    );
    assert!(all.left_out.is_empty());
    assert!(
        all.skills
            .iter()
            .all(|p| p.tokens > 0 && p.content.contains("<skill_content"))
    );
    assert!(all.skills[0].content.contains("BODY-notes"));

    // Within a budget: what did not fit is listed.
    let notes_tokens = all.skills[0].tokens;
    let some = rt.pinned(&a, "s1", notes_tokens).await.unwrap();
    let names: Vec<&str> = some.skills.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["notes"]);
    assert_eq!(some.left_out, ["refund-policy", "refund"]);
    let none = rt.pinned(&a, "s1", 0).await.unwrap();
    assert!(none.skills.is_empty());
    assert_eq!(none.left_out, ["notes", "refund-policy", "refund"]);
    let total: u32 = all.skills.iter().map(|p| p.tokens).sum();
    assert!(
        rt.pinned(&a, "s1", total)
            .await
            .unwrap()
            .left_out
            .is_empty()
    );

    // Unknown sessions, and the same id for another agent.
    let e = rt.pinned(&a, "no-such-session", 1000).await.unwrap_err();
    assert!(
        matches!(e, RuntimeError::UnknownSession(ref s) if s == "no-such-session"),
        "{e}"
    );
    let other = AgentName::parse("other").unwrap();
    store
        .set_agent(
            &other,
            &AgentConfig {
                skills: set("all"),
                ..AgentConfig::default()
            },
        )
        .await
        .unwrap();
    let e = rt.pinned(&other, "s1", 1000).await.unwrap_err();
    assert!(matches!(e, RuntimeError::UnknownSession(_)), "{e}");
    // The same id is the other agent's own session: a load there starts it, with nothing of
    // the first agent's in it, and the first agent's session is as it was.
    let loaded = load_via(&rt, &other, "s1", "notes", None).await.unwrap();
    assert!(!loaded.already_active);
    let theirs = rt.pinned(&other, "s1", 10_000).await.unwrap();
    let names: Vec<&str> = theirs.skills.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["notes"]);
    assert_eq!(rt.pinned(&a, "s1", total).await.unwrap().skills.len(), 3);
    store.close().await;
}
