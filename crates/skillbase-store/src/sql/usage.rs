//! Skill usage: the aggregates written with each appended event (`record`, in the appender's
//! transaction) and read back (migration 20; the rules are `crate::usage`'s).

use crate::usage::{Deltas, UsageRow};

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use sqlx::{Pool, Transaction};

        type Db = $db;

        /// Add a batch's increments (one multi-row upsert per 100 rows), in the transaction
        /// that appends its events.
        pub async fn record(tx: &mut Transaction<'static, Db>, d: &Deltas) -> Result<()> {
            let rows: Vec<_> = d.rows.iter().collect();
            for chunk in rows.chunks(100) {
                let mut q = sqlx::QueryBuilder::<Db>::new(
                    "INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens) ",
                );
                q.push_values(chunk, |mut b, (k, v)| {
                    b.push_bind(&k.skill)
                        .push_bind(&k.agent)
                        .push_bind(k.rev)
                        .push_bind(k.day)
                        .push_bind(k.kind)
                        .push_bind(&k.reason)
                        .push_bind(v.0)
                        .push_bind(v.1);
                });
                q.push(concat!(
                    " ON CONFLICT (skill, agent, rev, day, kind, reason) DO UPDATE SET ",
                    "count = skill_usage.count + excluded.count, tokens = skill_usage.tokens + excluded.tokens"
                ));
                q.build().execute(&mut **tx).await?;
            }
            let last: Vec<_> = d.last_used.iter().collect();
            for chunk in last.chunks(100) {
                let mut q = sqlx::QueryBuilder::<Db>::new("INSERT INTO skill_last_used (skill, agent, day) ");
                q.push_values(chunk, |mut b, ((skill, agent), day)| {
                    b.push_bind(skill).push_bind(agent).push_bind(**day);
                });
                q.push(concat!(
                    " ON CONFLICT (skill, agent) DO UPDATE SET day = ",
                    "CASE WHEN excluded.day > skill_last_used.day THEN excluded.day ELSE skill_last_used.day END"
                ));
                q.build().execute(&mut **tx).await?;
            }
            Ok(())
        }

        /// A skill's rows from day `since`, of one agent or all; and the turns of the agents
        /// read.
        pub async fn skill_rows(
            pool: &Pool<Db>,
            skill: &str,
            agent: Option<&str>,
            since: i64,
        ) -> Result<(Vec<UsageRow>, Vec<(String, i64)>)> {
            let rows: Vec<UsageRow> = sqlx::query_as(concat!(
                "SELECT agent, rev, day, kind, reason, count, tokens FROM skill_usage ",
                "WHERE skill = $1 AND day >= $2 AND ($3 IS NULL OR agent = $3) ORDER BY agent, rev, day"
            ))
            .bind(skill)
            .bind(since)
            .bind(agent)
            .fetch_all(pool)
            .await?;
            let turns: Vec<(String, i64)> = sqlx::query_as(concat!(
                "SELECT agent, CAST(SUM(count) AS BIGINT) FROM skill_usage ",
                "WHERE skill = '' AND kind = 'turn' AND day >= $1 AND ($2 IS NULL OR agent = $2) GROUP BY agent"
            ))
            .bind(since)
            .bind(agent)
            .fetch_all(pool)
            .await?;
            Ok((rows, turns))
        }

        /// Every skill's (skill, kind, reason, count, tokens) from day `since`, of one agent or
        /// all.
        pub async fn library_rows(
            pool: &Pool<Db>,
            agent: Option<&str>,
            since: i64,
        ) -> Result<Vec<(String, String, String, i64, i64)>> {
            let rows: Vec<(String, String, String, i64, i64)> = match agent {
                Some(a) => sqlx::query_as(concat!(
                    "SELECT skill, kind, reason, CAST(SUM(count) AS BIGINT), CAST(SUM(tokens) AS BIGINT) FROM skill_usage ",
                    "WHERE agent = $1 AND kind IN ('activated', 'run', 'unfollowed', 'status') AND day >= $2 AND skill <> '' ",
                    "GROUP BY skill, kind, reason"
                ))
                .bind(a)
                .bind(since)
                .fetch_all(pool)
                .await?,
                None => sqlx::query_as(concat!(
                    "SELECT skill, kind, reason, CAST(SUM(count) AS BIGINT), CAST(SUM(tokens) AS BIGINT) FROM skill_usage ",
                    "WHERE day >= $1 AND skill <> '' AND kind IN ('activated', 'run', 'unfollowed', 'status') ",
                    "GROUP BY skill, kind, reason"
                ))
                .bind(since)
                .fetch_all(pool)
                .await?,
            };
            Ok(rows)
        }

        /// Each skill's last day of activation, by one agent or any.
        pub async fn last_used(pool: &Pool<Db>, agent: Option<&str>) -> Result<Vec<(String, i64)>> {
            Ok(sqlx::query_as(concat!(
                "SELECT skill, CAST(MAX(day) AS BIGINT) FROM skill_last_used ",
                "WHERE ($1 IS NULL OR agent = $1) GROUP BY skill"
            ))
            .bind(agent)
            .fetch_all(pool)
            .await?)
        }
    };
}

crate::sql::for_each_backend!(statements);
