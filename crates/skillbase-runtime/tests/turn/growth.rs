//! A large library: turn events and answers stay small, omissions are summarized (never
//! silent) and listed in full on request, and a turn answers while its events cannot be written.

use super::*;
use skillbase_runtime::OmissionDetail;

/// Many allowed skills, a small catalog: almost all are left out.
async fn big_env(n: usize) -> (Env, AgentName) {
    let env = Env::new().await;
    let bundles: Vec<Bundle> = (0..n)
        .map(|i| {
            let name = format!("skill-{i:05}");
            Bundle::single(text(&name, &described(&name), "", "Steps.")).unwrap()
        })
        .collect();
    env.store
        .import(
            &Scope::Shared,
            bundles,
            &skillbase_store::Author::Human("t".into()),
            "many",
            &|_| {},
        )
        .await
        .unwrap();
    let a = env
        .agent_with("big", "all", "none", |c| c.catalog_budget = 2000)
        .await;
    (env, a)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_events_stay_small_and_omissions_are_summarized() {
    let (env, a) = big_env(2000).await;
    let t = env.turn(&a, "g1", "skill-00042 things please").await;
    let r = &t.report;
    assert!(
        r.catalog.ranked && r.catalog.omitted.len() > 1500,
        "{}",
        r.catalog.omitted.len()
    );
    let events = env
        .store
        .events(&EventFilter {
            session: Some("g1".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    let bytes: usize = events.iter().map(|e| e.data.to_string().len()).sum();
    assert!(bytes <= 4096, "{bytes} bytes of events for one turn");
    // The summary: counts, reasons and ranks as ranges; how to get the list.
    let v = serde_json::to_value(&t).unwrap();
    let omitted = &v["report"]["catalog"]["omitted"];
    assert_eq!(omitted["count"], r.catalog.omitted.len());
    let by = omitted["by_reason"].as_array().unwrap();
    assert_eq!(by.len(), 1);
    assert_eq!(by[0]["count"], r.catalog.omitted.len());
    assert!(
        by[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("budget: not listed")
    );
    assert!(by[0].get("names").is_none());
    let ranks = by[0]["ranks"].as_str().unwrap();
    let listed = r.catalog.full.len() + r.catalog.name_only.len();
    assert!(
        ranks.ends_with("-2000") || ranks.ends_with(",2000"),
        "{ranks}"
    );
    assert!(
        omitted["list"]
            .as_str()
            .unwrap()
            .contains("omissions = full")
    );
    // Names by name only did reach the prompt: the summary keeps them.
    let name_only = &v["report"]["catalog"]["name_only"];
    assert_eq!(name_only["count"], r.catalog.name_only.len());
    let names = name_only["by_reason"][0]["names"].as_array().unwrap();
    assert_eq!(names.len(), r.catalog.name_only.len());
    assert!(listed + r.catalog.omitted.len() == 2000);
    assert!(v.to_string().len() < 64 * 1024, "{}", v.to_string().len());
    // On request, every omission by name with its reason and rank.
    let mut full = t.clone();
    full.report.catalog.detail = OmissionDetail::Full;
    let v = serde_json::to_value(&full).unwrap();
    let list = v["report"]["catalog"]["omitted"].as_array().unwrap();
    assert_eq!(list.len(), r.catalog.omitted.len());
    assert!(
        list.iter()
            .all(|o| o["name"].is_string() && o["rank"].is_u64())
    );
    // The turn event never carries the full list, whatever the answer asked for.
    let turn = events.iter().find(|e| e.kind == "turn").unwrap();
    assert!(turn.data["catalog"]["omitted"]["count"].is_u64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_answers_while_its_events_cannot_be_written() {
    let env = Env::new().await;
    env.put(skill("refund", "triggers: [money back]\n")).await;
    let a = env.agent("support", "all", "none").await;
    let d = &env.rt;
    // The session exists before the fault; then the events table refuses every insert.
    d.turn(&a, "f1", "hello", &TurnOptions::default())
        .await
        .unwrap();
    d.flush().await;
    {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", env.db().display()))
            .await
            .unwrap();
        sqlx::query(
            "CREATE TRIGGER refuse_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk full'); END",
        )
        .execute(&mut c)
        .await
        .unwrap();
    }
    let start = std::time::Instant::now();
    let t = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        d.turn(&a, "f1", "I want my money back", &TurnOptions::default()),
    )
    .await
    .expect("the turn answers without waiting for its events")
    .unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(t.report.activated[0].name, "refund");
}
