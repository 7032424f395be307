//! Runs: one per skill revision driving a session, with its call counters and outcome.

use crate::error::StoreError;
use crate::events::EventKind;
use crate::records::{NewEvent, RunRecord, RunStart};

// ---- Decisions ----

/// How many runs in a row failed, from the latest ended outcomes (newest first) of one
/// revision.
fn failures_in_a_row(outcomes: &[Option<String>]) -> i64 {
    outcomes
        .iter()
        .take_while(|o| o.as_deref() == Some("failure"))
        .count() as i64
}

/// The answer to ending a run that is not open (ended already, or never opened).
fn not_open(run: i64) -> StoreError {
    StoreError::Invalid(format!("run {run} is not open"))
}

/// The event an ended run records: its outcome, note, calls (all, and failed ones: a run that
/// ended with none was loaded and never followed) and the failure streak.
fn finished_event(rec: &RunRecord, outcome: &str, note: &str, streak: i64) -> NewEvent {
    NewEvent {
        kind: EventKind::RunFinished,
        scope: Some(rec.scope.clone()),
        skill: Some(rec.skill.clone()),
        rev: Some(rec.rev),
        agent: Some(rec.agent.clone()),
        session: Some(rec.session.clone()),
        data: serde_json::json!({
            "run": rec.id, "outcome": outcome, "note": note, "failures_in_a_row": streak,
            "calls": rec.calls, "failed_calls": rec.failed_calls,
        }),
        ..NewEvent::default()
    }
}

type RunRow = (
    i64,
    String,
    String,
    i64,
    String,
    String,
    i64,
    i64,
    Option<i64>,
    Option<String>,
    String,
    i64,
    i64,
);

fn run_from_row(r: RunRow) -> RunRecord {
    RunRecord {
        id: r.0,
        session: r.1,
        agent: r.2,
        skill_id: r.3,
        scope: r.4,
        skill: r.5,
        rev: r.6,
        started_at: r.7,
        ended_at: r.8,
        outcome: r.9,
        note: r.10,
        calls: r.11,
        failed_calls: r.12,
    }
}

// ---- Statements ----

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use sqlx::{Pool, Transaction};

        type Db = $db;

        pub async fn start_run(pool: &Pool<Db>, session: &str, run: &RunStart<'_>) -> Result<i64> {
            let mut tx = pool.begin_with($begin).await?;
            let id = insert_run(&mut tx, session, run, now_ms()).await?;
            tx.commit().await?;
            Ok(id)
        }

        /// Open a run in a session, ending its open one (another skill took over).
        pub async fn insert_run(tx: &mut Transaction<'_, Db>, session: &str, r: &RunStart<'_>, now: i64) -> Result<i64> {
            sqlx::query("UPDATE runs SET ended_at = $1, outcome = 'superseded' WHERE agent = $2 AND session_id = $3 AND ended_at IS NULL")
                .bind(now)
                .bind(r.agent)
                .bind(session)
                .execute(&mut **tx)
                .await?;
            let id: i64 = sqlx::query_scalar(concat!(
                "INSERT INTO runs (session_id, agent, skill_id, scope, skill, rev, started_at) ",
                "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id"
            ))
            .bind(session)
            .bind(r.agent)
            .bind(r.skill_id)
            .bind(r.scope)
            .bind(r.skill)
            .bind(r.rev)
            .bind(now)
            .fetch_one(&mut **tx)
            .await?;
            Ok(id)
        }

        /// The session's open run, if a skill drives it.
        pub async fn open_run(pool: &Pool<Db>, agent: &str, session: &str) -> Result<Option<RunRecord>> {
            let row: Option<RunRow> = sqlx::query_as(concat!(
                "SELECT id, session_id, agent, skill_id, scope, skill, rev, started_at, ended_at, outcome, note, calls, failed_calls ",
                "FROM runs WHERE agent = $1 AND session_id = $2 AND ended_at IS NULL ORDER BY id DESC LIMIT 1"
            ))
            .bind(agent)
            .bind(session)
            .fetch_optional(pool)
            .await?;
            Ok(row.map(run_from_row))
        }

        pub async fn count_call(pool: &Pool<Db>, run: i64, failed: bool) -> Result<()> {
            sqlx::query("UPDATE runs SET calls = calls + 1, failed_calls = failed_calls + $1 WHERE id = $2")
                .bind(if failed { 1i64 } else { 0i64 })
                .bind(run)
                .execute(pool)
                .await?;
            Ok(())
        }

        /// End a run; returns it and how many runs of the same revision in a row, ending with
        /// this one, failed.
        pub async fn end_run(pool: &Pool<Db>, run: i64, outcome: &str, note: &str) -> Result<(RunRecord, i64)> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            let n = sqlx::query("UPDATE runs SET ended_at = $1, outcome = $2, note = $3 WHERE id = $4 AND ended_at IS NULL")
                .bind(now)
                .bind(outcome)
                .bind(note)
                .bind(run)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n == 0 {
                return Err(not_open(run));
            }
            let r: RunRow = sqlx::query_as(concat!(
                "SELECT id, session_id, agent, skill_id, scope, skill, rev, started_at, ended_at, outcome, note, calls, failed_calls ",
                "FROM runs WHERE id = $1"
            ))
            .bind(run)
            .fetch_one(&mut *tx)
            .await?;
            let rec = run_from_row(r);
            let outcomes: Vec<Option<String>> = sqlx::query_scalar(
                "SELECT outcome FROM runs WHERE skill_id = $1 AND rev = $2 AND ended_at IS NOT NULL AND outcome IN ('success', 'failure') ORDER BY id DESC LIMIT 1000",
            )
            .bind(rec.skill_id)
            .bind(rec.rev)
            .fetch_all(&mut *tx)
            .await?;
            let streak = failures_in_a_row(&outcomes);
            insert_event(&mut tx, &finished_event(&rec, outcome, note, streak), now).await?;
            tx.commit().await?;
            Ok((rec, streak))
        }

        /// Recent runs of a skill, newest first.
        pub async fn runs(pool: &Pool<Db>, scope: &str, skill: &str, limit: i64) -> Result<Vec<RunRecord>> {
            let rows: Vec<RunRow> = sqlx::query_as(concat!(
                "SELECT id, session_id, agent, skill_id, scope, skill, rev, started_at, ended_at, outcome, note, calls, failed_calls ",
                "FROM runs WHERE scope = $1 AND skill = $2 ORDER BY id DESC LIMIT $3"
            ))
            .bind(scope)
            .bind(skill)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            Ok(rows.into_iter().map(run_from_row).collect())
        }

        /// Ended runs of revision `rev` of skill record `skill_id` that started at or after
        /// `since`: (successes, failures).
        pub async fn outcomes_since(pool: &Pool<Db>, skill_id: i64, rev: i64, since: i64) -> Result<(i64, i64)> {
            Ok(sqlx::query_as(concat!(
                "SELECT COALESCE(SUM(CASE WHEN outcome = 'success' THEN 1 ELSE 0 END), 0), ",
                "COALESCE(SUM(CASE WHEN outcome = 'failure' THEN 1 ELSE 0 END), 0) ",
                "FROM runs WHERE skill_id = $1 AND rev = $2 AND started_at >= $3"
            ))
            .bind(skill_id)
            .bind(rev)
            .bind(since)
            .fetch_one(pool)
            .await?)
        }
    };
}

crate::sql::for_each_backend!(statements);

#[cfg(test)]
mod tests {
    use super::*;

    /// The streak stops at the first success, newest first.
    #[test]
    fn failures_in_a_row_count_back_from_the_newest() {
        let o = |s: &str| Some(s.to_owned());
        assert_eq!(failures_in_a_row(&[]), 0);
        assert_eq!(failures_in_a_row(&[o("success"), o("failure")]), 0);
        assert_eq!(
            failures_in_a_row(&[o("failure"), o("failure"), o("success"), o("failure")]),
            2
        );
        assert!(not_open(7).to_string().contains("run 7 is not open"));
    }
}
