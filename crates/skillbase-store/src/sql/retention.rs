//! The retention job: remove old calls, turns and activations and ended sessions in one
//! transaction, marked as the job's (the events trigger refuses any other DELETE), and record
//! what was removed in the same transaction.

use crate::events::EventKind;
use crate::records::NewEvent;
use crate::retention::{RetentionPolicy, RetentionReport};

/// `kind IN ('tool_called', …)` over the trimmable kinds (constants, never input).
fn trimmable_in() -> String {
    let list: Vec<String> = EventKind::TRIMMABLE
        .iter()
        .map(|k| format!("'{k}'"))
        .collect();
    format!("kind IN ({})", list.join(", "))
}

/// The event that says what the job removed (none when it removed nothing).
fn trimmed_event(policy: &RetentionPolicy, report: &RetentionReport, now: i64) -> Option<NewEvent> {
    if report.is_empty() {
        return None;
    }
    Some(NewEvent {
        kind: EventKind::EventsTrimmed,
        actor: Some("retention".into()),
        data: serde_json::json!({
            "events": report.events,
            "events_total": report.events_total(),
            "sessions": report.sessions,
            "activations": report.activations,
            "policy": policy,
            "at": now,
        }),
        ..NewEvent::default()
    })
}

fn cutoff(now: i64, age: std::time::Duration) -> i64 {
    now.saturating_sub(age.as_millis().min(i64::MAX as u128) as i64)
}

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use sqlx::{AssertSqlSafe, Pool, Transaction};

        type Db = $db;

        /// Count by kind then delete the trimmable events matching `cond` (`$1` bound to `arg`).
        async fn trim(tx: &mut Transaction<'static, Db>, cond: &str, arg: i64, report: &mut RetentionReport) -> Result<()> {
            let kinds = trimmable_in();
            let counts: Vec<(String, i64)> = sqlx::query_as(AssertSqlSafe(format!(
                "SELECT kind, COUNT(*) FROM events WHERE {kinds} AND {cond} GROUP BY kind"
            )))
            .bind(arg)
            .fetch_all(&mut **tx)
            .await?;
            if counts.is_empty() {
                return Ok(());
            }
            sqlx::query(AssertSqlSafe(format!("DELETE FROM events WHERE {kinds} AND {cond}")))
                .bind(arg)
                .execute(&mut **tx)
                .await?;
            for (kind, n) in counts {
                *report.events.entry(kind).or_default() += n as u64;
            }
            Ok(())
        }

        pub async fn apply_retention(pool: &Pool<Db>, policy: &RetentionPolicy, now: Option<i64>) -> Result<RetentionReport> {
            let now = now.unwrap_or_else(now_ms);
            let mut report = RetentionReport::default();
            let mut tx = pool.begin_with($begin).await?;
            sqlx::query("INSERT INTO retention_job (id) VALUES (1)").execute(&mut *tx).await?;
            if let Some(age) = policy.events_max_age {
                trim(&mut tx, "at < $1", cutoff(now, age), &mut report).await?;
            }
            if let Some(max) = policy.events_max_size {
                let kinds = trimmable_in();
                // The oldest id kept: the newest events whose data together fits `max`.
                let keep_from: Option<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
                    "SELECT MIN(id) FROM (SELECT id, SUM(LENGTH(data)) OVER (ORDER BY id DESC) AS total \
                     FROM events WHERE {kinds}) kept WHERE total <= $1"
                )))
                .bind(i64::try_from(max).unwrap_or(i64::MAX))
                .fetch_one(&mut *tx)
                .await?;
                trim(&mut tx, "id < $1", keep_from.unwrap_or(i64::MAX), &mut report).await?;
            }
            if let Some(age) = policy.sessions_max_age {
                let before = cutoff(now, age);
                let ids: Vec<(String, String)> = sqlx::query_as(concat!(
                    "SELECT s.agent, s.id FROM sessions s WHERE s.updated_at < $1 ",
                    "AND NOT EXISTS (SELECT 1 FROM activations a WHERE a.agent = s.agent AND a.session_id = s.id AND a.at >= $1) ",
                    "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session = s.id AND e.agent = s.agent AND e.at >= $1) ",
                    "ORDER BY s.agent, s.id"
                ))
                .bind(before)
                .fetch_all(&mut *tx)
                .await?;
                for chunk in ids.chunks(500) {
                    for (table, id) in [("activations", "session_id"), ("notes", "session_id"), ("sessions", "id")] {
                        let mut q = sqlx::QueryBuilder::<Db>::new(format!("DELETE FROM {table} WHERE (agent, {id}) IN (VALUES "));
                        let mut sep = q.separated(", ");
                        for (agent, session) in chunk {
                            sep.push("(");
                            sep.push_bind_unseparated(agent);
                            sep.push_unseparated(", ");
                            sep.push_bind_unseparated(session);
                            sep.push_unseparated(")");
                        }
                        q.push(")");
                        let n = q.build().execute(&mut *tx).await?.rows_affected();
                        match table {
                            "activations" => report.activations += n,
                            "sessions" => report.sessions += n,
                            _ => {}
                        }
                    }
                }
                report.session_ids = ids;
            }
            if let Some(ev) = trimmed_event(policy, &report, now) {
                insert_event(&mut tx, &ev, now).await?;
            }
            sqlx::query("DELETE FROM retention_job").execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(report)
        }
    };
}

crate::sql::for_each_backend!(statements);
