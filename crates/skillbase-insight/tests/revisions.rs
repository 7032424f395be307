//! The dream report's account of what happened to the agent's revisions since its previous
//! dream: a revision drift reverted, a candidate staged now, a candidate its runs rejected. The
//! runtime's own tests (`tests/dispatch/runs.rs`) hold the runs, the drift and the candidates;
//! these play the same scenarios through the engine's public API and read the report.

use crate::common::{db_path, open_store, req, text};
use serde_json::{Value, json};
use skillbase_format::Bundle;
use skillbase_insight::dream::{self, DreamOptions, DreamReport};
use skillbase_runtime::{CallMode, CallOutcome, Engine};
use skillbase_store::{AgentConfig, AgentName, NameSet, Scope, Status};
use std::sync::Arc;

fn name(s: &str) -> AgentName {
    AgentName::parse(s).unwrap()
}

/// An engine over a new store (kept in `dir`).
async fn engine(dir: &tempfile::TempDir) -> Engine {
    let store = Arc::new(open_store(&db_path(dir.path())).await);
    Engine::builder().store(store).build().await.unwrap()
}

/// Create an agent seeing every skill, granted the authoring tools, with `f` applied.
async fn agent(e: &Engine, agent: &str, f: impl FnOnce(&mut AgentConfig)) -> AgentName {
    let a = name(agent);
    let mut c = AgentConfig {
        skills: NameSet::All,
        ..AgentConfig::default()
    };
    c.grants.tools = vec![skillbase_runtime::AUTHORING_CLASS.to_owned()];
    f(&mut c);
    e.store().set_agent(&a, &c).await.unwrap();
    a
}

/// A shared skill `name` written by a person.
async fn put(e: &Engine, name: &str, frontmatter: &str, body: &str) {
    let md = text(
        name,
        &format!("Does {name} things. Use when asked about {name}."),
        frontmatter,
        body,
    );
    e.store()
        .put(req(Scope::Shared, Bundle::single(md).unwrap()))
        .await
        .unwrap();
}

/// Call `tool` as `agent` in `session` and answer its result (the call must be done).
async fn call(e: &Engine, agent: &AgentName, session: &str, tool: &str, args: Value) -> Value {
    match e
        .call(agent, session, tool, args, CallMode::Wait)
        .await
        .unwrap()
    {
        CallOutcome::Done { result, .. } => result,
        other => panic!("{tool}: expected done, got {other:?}"),
    }
}

/// Load `skill` in `session` and end its run as `outcome`: the body served and the run's end.
async fn run_once(
    e: &Engine,
    agent: &AgentName,
    session: &str,
    skill: &str,
    outcome: &str,
) -> (String, Value) {
    let body = call(e, agent, session, "load_skill", json!({"name": skill})).await;
    let end = call(
        e,
        agent,
        session,
        "skill_finish",
        json!({"outcome": outcome, "note": "done"}),
    )
    .await;
    (body.as_str().unwrap().to_owned(), end)
}

async fn dream_report(e: &Engine, agent: &AgentName, dry_run: bool) -> DreamReport {
    dream::run(
        e,
        agent,
        &DreamOptions {
            dry_run,
            ..DreamOptions::default()
        },
    )
    .await
    .unwrap()
}

/// `on_drift = "revert"`: the revision that drifted and the one re-activated are in the next
/// dream's report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drift_revert_is_in_the_next_dream_report() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir).await;
    let bot = agent(&e, "bot", |c| {
        c.policies.on_drift = skillbase_store::OnDrift::Revert;
        c.policies.failure_threshold = 2;
    })
    .await;
    let inputs = "inputs:\n  type: object\n";
    put(&e, "flaky", inputs, "Version one.").await;
    put(&e, "seed", "", "So the agent keeps a view.").await;
    for (i, outcome) in ["success", "success", "failure"].iter().enumerate() {
        run_once(&e, &bot, &format!("g{i}"), "flaky", outcome).await;
    }
    put(&e, "flaky", inputs, "Version two, worse.").await;
    let (_, end) = run_once(&e, &bot, "b0", "flaky", "failure").await;
    assert_eq!(end["disabled_for_drift"], json!(false));
    let (_, end) = run_once(&e, &bot, "b1", "flaky", "failure").await;
    assert_eq!(end["disabled_for_drift"], json!(true), "{end}");
    let entry = e.store().index().get(&Scope::Shared, "flaky").cloned();
    assert_eq!(
        entry.map(|x| (x.status, x.active_rev)),
        Some((Status::Active, 1))
    );
    // The next dream's report shows it.
    let report = dream_report(&e, &bot, false).await;
    assert_eq!(report.drift_reverted.len(), 1, "{report:?}");
    assert_eq!(
        (report.drift_reverted[0].from, report.drift_reverted[0].to),
        (2, 1)
    );
    e.close().await;
}

/// An agent staging its revisions (`min_runs` ended runs of each judge a candidate, drift never
/// ends one first): "proc" at revision 1, active, and revision 2 staged for half the sessions.
async fn staged(e: &Engine, agent_name: &str, min_runs: u32) -> AgentName {
    let a = agent(e, agent_name, |c| {
        c.policies.stage_agent_revisions = true;
        c.policies.candidate_percent = 50;
        c.policies.candidate_min_runs = min_runs;
        c.policies.failure_threshold = 100;
    })
    .await;
    let r = call(
        e,
        &a,
        "w",
        "skill_create",
        json!({"name": "proc", "description": "The procedure. Use when testing.", "body": "Version one."}),
    )
    .await;
    assert_eq!(r["result"], json!("created"), "{r}");
    let r = call(
        e,
        &a,
        "w",
        "skill_modify",
        json!({"name": "proc", "body": "Version two."}),
    )
    .await;
    assert_eq!(
        (r["result"].clone(), r["rev"].clone()),
        (json!("candidate"), json!(2))
    );
    a
}

/// Sessions of `agent` the candidate of "proc" is served to, and not, `n` of each.
fn split_sessions(e: &Engine, agent: &AgentName, n: usize) -> (Vec<String>, Vec<String>) {
    let entry = e
        .store()
        .index()
        .get(&Scope::Agent(agent.clone()), "proc")
        .cloned()
        .expect("proc is stored");
    let (c, _) = entry.candidate.clone().expect("a candidate is staged");
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for i in 0..1000 {
        let s = format!("{agent}-s{i}");
        if c.serves(&s, entry.id) {
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

/// A staged candidate is listed with its terms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_candidate_is_in_the_dream_report() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir).await;
    let a = staged(&e, "promoter", 2).await;
    let report = dream_report(&e, &a, true).await;
    assert_eq!(report.candidates.len(), 1, "{report:?}");
    assert_eq!(
        (
            report.candidates[0].state,
            report.candidates[0].percent,
            report.candidates[0].min_runs
        ),
        ("staged", 50, 2)
    );
    e.close().await;
}

/// A candidate whose runs failed more often than the active revision's is rejected, and the
/// dream report shows the rejection with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_candidate_is_in_the_dream_report() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir).await;
    let a = staged(&e, "stager", 3).await;
    let (cand, active) = split_sessions(&e, &a, 3);
    for i in 0..3 {
        let outcome = if i == 0 { "success" } else { "failure" };
        let (body, _) = run_once(&e, &a, &cand[i], "proc", outcome).await;
        assert!(body.contains("Version two."), "{body}");
        let outcome = if i == 0 { "failure" } else { "success" };
        let (body, _) = run_once(&e, &a, &active[i], "proc", outcome).await;
        assert!(body.contains("Version one."), "{body}");
    }
    let entry = e
        .store()
        .index()
        .get(&Scope::Agent(a.clone()), "proc")
        .cloned();
    assert!(entry.is_some_and(|x| x.active_rev == 1 && x.candidate.is_none()));
    // The dream report shows the rejection.
    let report = dream_report(&e, &a, false).await;
    assert_eq!(report.candidates.len(), 1, "{report:?}");
    let c = &report.candidates[0];
    assert_eq!((c.skill.as_str(), c.rev, c.state), ("proc", 2, "rejected"));
    assert!(c.reason.contains("worse"), "{}", c.reason);
    e.close().await;
}
