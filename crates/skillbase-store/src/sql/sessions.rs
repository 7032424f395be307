//! Sessions: who owns one, what it activated (with the events of each load, and the run it
//! opens, in one transaction), and its note block.

use crate::records::{ActivationRecord, NewEvent, RunStart, SessionRecord};

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use sqlx::Pool;

        type Db = $db;

        /// Create the agent's session if new.
        pub async fn open_session(pool: &Pool<Db>, agent: &str, id: &str) -> Result<()> {
            let now = now_ms();
            sqlx::query("INSERT INTO sessions (agent, id, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT (agent, id) DO NOTHING")
                .bind(agent)
                .bind(id)
                .bind(now)
                .execute(pool)
                .await?;
            Ok(())
        }

        /// The agents holding a session named `id` (an admin's way to find one by its id).
        pub async fn session_agents(pool: &Pool<Db>, id: &str) -> Result<Vec<String>> {
            Ok(sqlx::query_scalar("SELECT agent FROM sessions WHERE id = $1 ORDER BY agent LIMIT 100")
                .bind(id)
                .fetch_all(pool)
                .await?)
        }

        pub async fn session(pool: &Pool<Db>, agent: &str, id: &str) -> Result<Option<SessionRecord>> {
            let row: Option<(String, String, i64)> = sqlx::query_as("SELECT id, agent, created_at FROM sessions WHERE agent = $1 AND id = $2")
                .bind(agent)
                .bind(id)
                .fetch_optional(pool)
                .await?;
            let Some((id, agent, created_at)) = row else { return Ok(None) };
            let acts: Vec<(String, String, i64, String, i64, Option<String>)> = sqlx::query_as(
                "SELECT scope, skill, rev, reason, at, arguments FROM activations WHERE agent = $1 AND session_id = $2 ORDER BY id",
            )
            .bind(&agent)
            .bind(&id)
            .fetch_all(pool)
            .await?;
            Ok(Some(SessionRecord {
                id,
                agent,
                created_at,
                activations: acts
                    .into_iter()
                    .map(|a| ActivationRecord { scope: a.0, skill: a.1, rev: a.2, reason: a.3, at: a.4, arguments: a.5 })
                    .collect(),
            }))
        }

        /// Activations of one load and their events, in one transaction (one commit).
        pub async fn record_activations(pool: &Pool<Db>, agent: &str, session: &str, acts: &[ActivationRecord], evs: &[NewEvent]) -> Result<()> {
            record_activations_and_run(pool, agent, session, acts, evs, None).await.map(|_| ())
        }

        /// Record activations and their events, and open a run (ending the session's open
        /// one), in one transaction; returns the new run's id.
        pub async fn record_activations_and_run(pool: &Pool<Db>, agent: &str, session: &str, acts: &[ActivationRecord], evs: &[NewEvent], run: Option<&RunStart<'_>>) -> Result<Option<i64>> {
            let mut tx = if run.is_some() { pool.begin_with($begin).await? } else { pool.begin().await? };
            let mut last = None;
            for a in acts {
                sqlx::query("INSERT INTO activations (agent, session_id, scope, skill, rev, reason, at, arguments) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
                    .bind(agent)
                    .bind(session)
                    .bind(&a.scope)
                    .bind(&a.skill)
                    .bind(a.rev)
                    .bind(&a.reason)
                    .bind(a.at)
                    .bind(&a.arguments)
                    .execute(&mut *tx)
                    .await?;
                last = Some(a.at);
            }
            if let Some(at) = last {
                sqlx::query("UPDATE sessions SET updated_at = $1 WHERE agent = $2 AND id = $3")
                    .bind(at)
                    .bind(agent)
                    .bind(session)
                    .execute(&mut *tx)
                    .await?;
            }
            let now = now_ms();
            for ev in evs {
                insert_event(&mut tx, ev, now).await?;
            }
            let id = match run {
                Some(r) => Some(crate::sql::runs::$backend::insert_run(&mut tx, session, r, now).await?),
                None => None,
            };
            tx.commit().await?;
            Ok(id)
        }

        pub async fn record_activation(pool: &Pool<Db>, agent: &str, session: &str, a: &ActivationRecord) -> Result<()> {
            record_activations(pool, agent, session, std::slice::from_ref(a), &[]).await
        }

        /// A session's note block (empty if it has none).
        pub async fn note(pool: &Pool<Db>, agent: &str, session: &str) -> Result<String> {
            let t: Option<String> = sqlx::query_scalar("SELECT text FROM notes WHERE agent = $1 AND session_id = $2")
                .bind(agent)
                .bind(session)
                .fetch_optional(pool)
                .await?;
            Ok(t.unwrap_or_default())
        }

        pub async fn set_note(pool: &Pool<Db>, agent: &str, session: &str, text: &str) -> Result<()> {
            sqlx::query(concat!(
                "INSERT INTO notes (agent, session_id, text, updated_at) VALUES ($1, $2, $3, $4) ",
                "ON CONFLICT (agent, session_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at"
            ))
            .bind(agent)
            .bind(session)
            .bind(text)
            .bind(now_ms())
            .execute(pool)
            .await?;
            Ok(())
        }
    };
}

crate::sql::for_each_backend!(statements);
