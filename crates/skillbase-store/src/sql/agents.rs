//! Agents: their configuration as JSON, versioned.

use crate::error::StoreError;
use crate::events::EventKind;
use crate::model::AgentName;
use crate::records::NewEvent;

// ---- Decisions ----

/// The version an agent's configuration gets when written over `existing` (its current version,
/// `None` if there is no such agent): refused when the write only creates.
fn next_version(
    name: &AgentName,
    existing: Option<i64>,
    create_only: bool,
) -> Result<i64, StoreError> {
    match existing {
        Some(_) if create_only => Err(StoreError::AgentExists(name.to_string())),
        Some(v) => Ok(v + 1),
        None => Ok(1),
    }
}

/// The event a write of an agent records.
fn agent_event(name: &AgentName, version: i64) -> NewEvent {
    NewEvent {
        kind: EventKind::AgentChanged,
        agent: Some(name.to_string()),
        data: serde_json::json!({"version": version}),
        ..NewEvent::default()
    }
}

// ---- Statements ----

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::model::AgentConfig;
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use sqlx::{Pool, Transaction};

        type Db = $db;

        /// Create or replace an agent's configuration in a transaction of the caller's; returns
        /// its new version.
        pub async fn upsert_agent_in(
            tx: &mut Transaction<'static, Db>,
            name: &AgentName,
            config: &AgentConfig,
            now: i64,
            create_only: bool,
        ) -> Result<i64> {
            let json = serde_json::to_string(config).map_err(|e| StoreError::Invalid(e.to_string()))?;
            let existing: Option<i64> = sqlx::query_scalar(concat!("SELECT version FROM agents WHERE name = $1", $lock))
                .bind(name.as_str())
                .fetch_optional(&mut **tx)
                .await?;
            let version = next_version(name, existing, create_only)?;
            if existing.is_some() {
                sqlx::query("UPDATE agents SET config = $1, version = $2, updated_at = $3 WHERE name = $4")
                    .bind(&json)
                    .bind(version)
                    .bind(now)
                    .bind(name.as_str())
                    .execute(&mut **tx)
                    .await?;
            } else {
                sqlx::query("INSERT INTO agents (name, config, version, created_at, updated_at) VALUES ($1, $2, 1, $3, $3)")
                    .bind(name.as_str())
                    .bind(&json)
                    .bind(now)
                    .execute(&mut **tx)
                    .await?;
            }
            insert_event(tx, &agent_event(name, version), now).await?;
            Ok(version)
        }

        pub async fn upsert_agent(pool: &Pool<Db>, name: &AgentName, config: &AgentConfig, create_only: bool) -> Result<i64> {
            let mut tx = pool.begin_with($begin).await?;
            let v = upsert_agent_in(&mut tx, name, config, now_ms(), create_only).await?;
            tx.commit().await?;
            Ok(v)
        }

        /// Every agent as (name, configuration JSON, version), by name.
        pub async fn agents(pool: &Pool<Db>) -> Result<Vec<(String, String, i64)>> {
            Ok(sqlx::query_as("SELECT name, config, version FROM agents ORDER BY name").fetch_all(pool).await?)
        }
    };
}

crate::sql::for_each_backend!(statements);

#[cfg(test)]
mod tests {
    use super::*;

    /// Versions count from 1; creating an agent that exists is refused.
    #[test]
    fn agent_versions() {
        let a = AgentName::parse("ana").unwrap();
        assert_eq!(next_version(&a, None, true).unwrap(), 1);
        assert_eq!(next_version(&a, None, false).unwrap(), 1);
        assert_eq!(next_version(&a, Some(4), false).unwrap(), 5);
        assert!(
            matches!(next_version(&a, Some(4), true), Err(StoreError::AgentExists(n)) if n == "ana")
        );
    }
}
