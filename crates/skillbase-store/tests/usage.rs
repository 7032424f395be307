//! Skill usage: figures checked against a session replayed from known events, kept when the
//! retention job trims those events, and the same whether counted as events are appended or
//! backfilled by the migration from events an older build wrote.

use crate::common::*;
use serde_json::{Value, json};
use skillbase_store::db::Db;
use skillbase_store::retention::RetentionPolicy;
use skillbase_store::usage::{DAY_MS, SkillUsage, day_string, today};
use skillbase_store::{
    AgentConfig, EventFilter, NameSet, NewEvent, SCHEMA_VERSION, Scope, StatusChange, Store,
};
use std::time::Duration;

fn ev(kind: &str, agent: &str, session: &str, skill: Option<&str>, data: Value) -> NewEvent {
    NewEvent {
        kind: kind.into(),
        scope: skill.map(|_| "shared".into()),
        skill: skill.map(Into::into),
        rev: skill.map(|_| 1),
        agent: Some(agent.into()),
        session: Some(session.into()),
        data,
        ..NewEvent::default()
    }
}

fn turn(full: &[&str], name_only: &[&str], omitted: i64, total: i64) -> Value {
    json!({"agent": "support", "activated": [], "tokens": {"total": total},
        "catalog": {"full": full, "shown": [],
            "name_only": {"count": name_only.len(), "by_reason": [{"reason": "budget", "count": name_only.len(), "names": name_only}]},
            "omitted": {"count": omitted, "by_reason": []}}})
}

/// The turns of the replayed sessions: support's three turns in s1, billing's load in s2.
fn turn_events() -> Vec<NewEvent> {
    let act = |agent: &str, s: &str, skill: &str, reason: &str| {
        ev(
            "skill_activated",
            agent,
            s,
            Some(skill),
            json!({"reason": reason, "tokens": 40, "source": "context"}),
        )
    };
    vec![
        ev(
            "turn",
            "support",
            "s1",
            None,
            turn(&["other"], &["unused"], 2, 300),
        ),
        act("support", "s1", "refund", "trigger:refund"),
        ev(
            "turn",
            "support",
            "s1",
            None,
            turn(&["refund"], &[], 0, 100),
        ),
        act("support", "s1", "other", "eager"),
        ev("turn", "support", "s1", None, turn(&["other"], &[], 0, 100)),
    ]
}

/// The skills, support (allowed every skill) and billing (refund and other only).
async fn seed(store: &Store) {
    for n in ["refund", "other", "unused"] {
        store
            .put(put(Scope::Shared, skill(n, "Body."), None))
            .await
            .unwrap();
    }
    let all = AgentConfig {
        skills: NameSet::All,
        ..AgentConfig::default()
    };
    store.create_agent(&agent("support"), &all).await.unwrap();
    let two = AgentConfig {
        skills: NameSet::Names(vec!["refund".parse().unwrap(), "other".parse().unwrap()]),
        ..AgentConfig::default()
    };
    store.create_agent(&agent("billing"), &two).await.unwrap();
}

/// Replay: the turns, then support loads refund and follows it (two calls, a success);
/// billing loads it and calls nothing (a failure); drift disables it.
async fn replay(store: &Store) {
    store.append_events(&turn_events()).await.unwrap();
    let entry = store
        .index()
        .get(&Scope::Shared, "refund")
        .cloned()
        .unwrap();
    let load = |agent: &str, s: &str| {
        ev(
            "skill_activated",
            agent,
            s,
            Some("refund"),
            json!({"reason": "load", "tokens": 40, "source": "load_skill"}),
        )
    };
    store.append_events(&[load("support", "s1")]).await.unwrap();
    let run = store
        .start_run("s1", &agent("support"), &entry)
        .await
        .unwrap();
    store
        .append_events_and_count(&[], &[(run, 2)])
        .await
        .unwrap();
    store.end_run(run, "success", "done").await.unwrap();
    store.append_events(&[load("billing", "s2")]).await.unwrap();
    let run = store
        .start_run("s2", &agent("billing"), &entry)
        .await
        .unwrap();
    store.end_run(run, "failure", "gave up").await.unwrap();
    store
        .set_status(
            &Scope::Shared,
            "refund",
            StatusChange::Disable,
            &human(),
            json!({"drift": "revision 1 failed 1 runs in a row"}),
        )
        .await
        .unwrap();
}

fn check_refund(u: &SkillUsage) {
    assert_eq!(u.since, day_string(today() - 1));
    let a = &u.activations;
    assert_eq!(
        (a.trigger, a.load, a.eager, a.total()),
        (1, 2, 0, 3),
        "{u:#?}"
    );
    assert_eq!(u.body_tokens, 120);
    assert_eq!((u.runs.success, u.runs.failure, u.runs.other), (1, 1, 0));
    assert_eq!((u.unfollowed, u.drift_disabled), (1, 1));
    assert_eq!(u.last_used.as_deref(), Some(day_string(today()).as_str()));
    let names: Vec<&str> = u.agents.iter().map(|a| a.agent.as_str()).collect();
    assert_eq!(names, ["billing", "support"]);
    let (billing, support) = (&u.agents[0], &u.agents[1]);
    // support: three turns, triggered in one, listed in full in another, left out of the third.
    assert_eq!(
        (
            support.turns,
            support.activations.trigger,
            support.activations.load
        ),
        (3, 1, 1)
    );
    assert_eq!(
        (
            support.listed.full,
            support.listed.name_only,
            support.listed.left_out
        ),
        (1, 0, 1)
    );
    assert_eq!((support.runs.success, support.unfollowed), (1, 0));
    assert_eq!(
        (
            billing.turns,
            billing.activations.load,
            billing.runs.failure,
            billing.unfollowed
        ),
        (0, 1, 1, 1)
    );
    assert_eq!(u.revisions.len(), 1);
    let r = &u.revisions[0];
    assert_eq!(
        (
            r.rev,
            r.activations,
            r.runs.success,
            r.runs.failure,
            r.unfollowed,
            r.drift_disabled
        ),
        (1, 3, 1, 1, 1, 1)
    );
    assert_eq!(u.days.len(), 1);
    assert_eq!(
        (u.days[0].activations.trigger, u.days[0].activations.load),
        (1, 2)
    );
    assert!(u.approximate.contains("left_out"));
}

async fn figures_match_a_replayed_session(db: TestDb) {
    let store = db.open().await;
    seed(&store).await;
    replay(&store).await;
    let since = today() - 1;
    check_refund(&store.skill_usage("refund", None, since).await.unwrap());

    // One agent's figures hold nothing of another's.
    let b = store
        .skill_usage("refund", Some("billing"), since)
        .await
        .unwrap();
    assert_eq!(b.agents.len(), 1);
    assert_eq!(
        (b.activations.total(), b.activations.load, b.runs.success),
        (1, 1, 0)
    );
    let other = store
        .skill_usage("other", Some("support"), since)
        .await
        .unwrap();
    assert_eq!(
        (
            other.activations.eager,
            other.listed.full,
            other.listed.left_out
        ),
        (1, 2, 0)
    );

    // The window: nothing after tomorrow.
    let later = store
        .skill_usage("refund", None, today() + 1)
        .await
        .unwrap();
    assert_eq!((later.activations.total(), later.agents.len()), (0, 0));

    // Never used: refund is disabled, other was activated; unused only.
    let never = store.never_used_skills(since, None).await.unwrap();
    let names: Vec<&str> = never.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["unused"]);
    assert_eq!(never[0].last_used, None);
    // For billing, other was never activated either; unused is not in its view.
    let never = store
        .never_used_skills(since, Some("billing"))
        .await
        .unwrap();
    let names: Vec<&str> = never.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["other"]);
    let never = store
        .never_used_skills(since, Some("support"))
        .await
        .unwrap();
    let names: Vec<&str> = never.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["unused"]);
    // An agent the store does not hold sees nothing.
    assert!(
        store
            .never_used_skills(since, Some("nobody"))
            .await
            .unwrap()
            .is_empty()
    );
    // A window starting tomorrow: other's last use is before it.
    let never = store.never_used_skills(today() + 1, None).await.unwrap();
    assert_eq!(never[0].name, "other");
    assert_eq!(
        never[0].last_used.as_deref(),
        Some(day_string(today()).as_str())
    );

    let lib = store.library_usage(None, since).await.unwrap();
    let names: Vec<(&str, i64)> = lib
        .skills
        .iter()
        .map(|s| (s.skill.as_str(), s.activations))
        .collect();
    assert_eq!(names, [("refund", 3), ("other", 1)]);
    assert_eq!(
        (
            lib.skills[0].runs.failure,
            lib.skills[0].unfollowed,
            lib.skills[0].drift_disabled
        ),
        (1, 1, 1)
    );
    let lib = store.library_usage(Some("billing"), since).await.unwrap();
    assert_eq!(lib.skills.len(), 1);
    assert_eq!(lib.skills[0].activations, 1);
    db.cleanup().await;
}

async fn trimming_events_keeps_the_figures(db: TestDb) {
    let store = db.open().await;
    seed(&store).await;
    replay(&store).await;
    let since = today() - 1;
    let before = store.skill_usage("refund", None, since).await.unwrap();
    let policy = RetentionPolicy {
        events_max_age: Some(Duration::from_secs(86_400)),
        events_max_size: None,
        sessions_max_age: None,
        interval: Duration::from_secs(3600),
    };
    let now = skillbase_store::usage::today() * DAY_MS + 3 * DAY_MS;
    let report = store.apply_retention(&policy, Some(now)).await.unwrap();
    assert!(!report.is_empty(), "{report:?}");
    let left = store.events(&EventFilter::default()).await.unwrap();
    assert!(
        !left
            .iter()
            .any(|e| e.kind == "turn" || e.kind == "skill_activated"),
        "the turns and activations were trimmed"
    );
    assert_eq!(
        store.skill_usage("refund", None, since).await.unwrap(),
        before
    );
    check_refund(&before);
    db.cleanup().await;
}

/// Events as an older build wrote them, straight into the events table.
async fn insert_raw(db: &Db, evs: &[NewEvent], at: i64) {
    const SQL: &str = "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
    for e in evs {
        macro_rules! bind {
            ($p:expr) => {
                sqlx::query(SQL)
                    .bind(at)
                    .bind(e.kind.as_str())
                    .bind(&e.scope)
                    .bind(&e.skill)
                    .bind(e.rev)
                    .bind(&e.agent)
                    .bind(&e.session)
                    .bind(&e.actor)
                    .bind(e.data.to_string())
                    .bind(e.kind.changes_index())
                    .execute($p)
                    .await
                    .unwrap()
            };
        }
        match db {
            Db::Sqlite(p) => {
                bind!(p);
            }
            Db::Postgres(p) => {
                bind!(p);
            }
        }
    }
}

/// Every kind the aggregates read, with a ranked catalog (named by `shown`, name-only entries
/// by rank) beside the replayed turns.
fn history() -> Vec<NewEvent> {
    let mut evs = turn_events();
    evs.push(ev("turn", "support", "s3", None, json!({"tokens": {"total": 50},
        "catalog": {"ranked": true, "shown": [{"name": "refund", "rank": 1, "stage": "lexical"}],
            "name_only": {"count": 4, "by_reason": [{"reason": "budget", "count": 4, "ranks": "2-5"}]},
            "omitted": {"count": 1, "by_reason": []}}})));
    evs.push(ev(
        "skill_activated",
        "billing",
        "s2",
        Some("refund"),
        json!({"reason": "companion:other", "tokens": 7, "source": "context"}),
    ));
    evs.push(ev(
        "run_finished",
        "billing",
        "s2",
        Some("refund"),
        json!({"run": 1, "outcome": "failure", "calls": 0}),
    ));
    evs.push(ev(
        "run_finished",
        "support",
        "s1",
        Some("refund"),
        json!({"run": 2, "outcome": "success", "calls": 3}),
    ));
    evs.push(ev(
        "run_finished",
        "support",
        "s1",
        Some("refund"),
        json!({"run": 3, "outcome": "success"}),
    ));
    evs.push(ev(
        "disabled",
        "support",
        "s1",
        Some("refund"),
        json!({"reason": {"drift": "x"}}),
    ));
    evs.push(ev(
        "disabled",
        "support",
        "s1",
        Some("refund"),
        json!({"reason": "by hand"}),
    ));
    evs.push(ev(
        "drift_reverted",
        "support",
        "s1",
        Some("refund"),
        json!({"from": 2, "to": 1}),
    ));
    evs
}

async fn the_migration_backfills_what_appending_counts(db: TestDb) {
    let old = Db::open_at_schema(&db.url, (SCHEMA_VERSION - 1) as usize)
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    insert_raw(&old, &history(), now).await;
    match old {
        Db::Sqlite(p) => p.close().await,
        Db::Postgres(p) => p.close().await,
    }
    let backfilled = db.open().await;
    seed(&backfilled).await;

    let fresh_db = match &db.url {
        skillbase_store::DbUrl::Sqlite(_) => TestDb::sqlite(),
        skillbase_store::DbUrl::Postgres { .. } => TestDb::postgres(),
    };
    let appended = fresh_db.open().await;
    seed(&appended).await;
    appended.append_events(&history()).await.unwrap();

    let since = today() - 1;
    for name in ["refund", "other", "unused"] {
        let a = backfilled.skill_usage(name, None, since).await.unwrap();
        let b = appended.skill_usage(name, None, since).await.unwrap();
        assert_eq!(a, b, "{name}");
    }
    let refund = backfilled.skill_usage("refund", None, since).await.unwrap();
    assert_eq!(
        (refund.activations.trigger, refund.activations.companion),
        (1, 1)
    );
    assert_eq!(
        (refund.runs.success, refund.runs.failure, refund.unfollowed),
        (2, 1, 1)
    );
    let support = refund.agents.iter().find(|a| a.agent == "support").unwrap();
    // Four turns: triggered in one, in full in two (one ranked), left out of one.
    assert_eq!(
        (support.turns, support.listed.full, support.listed.left_out),
        (4, 2, 1)
    );
    assert_eq!(refund.revisions[0].drift_disabled, 1);
    assert_eq!(refund.revisions[0].drift_reverted, 1);
    assert_eq!(
        backfilled.library_usage(None, since).await.unwrap(),
        appended.library_usage(None, since).await.unwrap()
    );
    assert_eq!(
        backfilled.never_used_skills(since, None).await.unwrap(),
        appended.never_used_skills(since, None).await.unwrap()
    );
    fresh_db.cleanup().await;
    db.cleanup().await;
}

suite!(
    figures_match_a_replayed_session,
    trimming_events_keeps_the_figures,
    the_migration_backfills_what_appending_counts,
);
