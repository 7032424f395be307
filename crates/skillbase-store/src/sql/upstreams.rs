//! Upstream MCP servers configured through the API: one row per server, its configuration as
//! JSON text (checked by the runtime's gateway before it arrives), an event per write.

use crate::events::EventKind;
use crate::records::{McpServerRow, NewEvent};

type Row = (String, String, i64, i64, String);

/// A stored row; a configuration that is not JSON is corrupt (nothing writes one).
fn from_row(r: Row) -> crate::error::Result<McpServerRow> {
    let config = serde_json::from_str(&r.1).map_err(|e| {
        crate::error::StoreError::Corrupt(format!(
            "the stored configuration of upstream server '{}' is not JSON: {e}",
            r.0
        ))
    })?;
    Ok(McpServerRow {
        name: r.0,
        config,
        created_at: r.2,
        updated_at: r.3,
        updated_by: r.4,
    })
}

/// The event a write records: the server and how it is reached, never a header's or
/// variable's value (the configuration names vault entries; literal values stay in the table).
fn server_event(kind: EventKind, name: &str, data: serde_json::Value, actor: &str) -> NewEvent {
    let mut data = data;
    data["server"] = serde_json::Value::from(name);
    NewEvent {
        kind,
        actor: Some(actor.to_owned()),
        data,
        ..NewEvent::default()
    }
}

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use sqlx::Pool;

        type Db = $db;

        /// Insert or replace; whether it was new. `limit`: most rows there may be (a new name
        /// past it is refused, nothing written).
        pub async fn mcp_server_put(pool: &Pool<Db>, name: &str, config: &str, summary: serde_json::Value, limit: usize, actor: &str) -> Result<bool> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            let exists: Option<(i64,)> = sqlx::query_as("SELECT created_at FROM mcp_servers WHERE name = $1")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
            if exists.is_none() {
                let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM mcp_servers").fetch_one(&mut *tx).await?;
                if n as usize >= limit {
                    return Err(crate::error::StoreError::LimitReached(format!(
                        "{limit} upstream servers are configured through the API already; remove one first"
                    )));
                }
            }
            sqlx::query(concat!(
                "INSERT INTO mcp_servers (name, config, created_at, updated_at, updated_by) VALUES ($1, $2, $3, $3, $4) ",
                "ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at, updated_by = excluded.updated_by"
            ))
            .bind(name)
            .bind(config)
            .bind(now)
            .bind(actor)
            .execute(&mut *tx)
            .await?;
            let mut data = summary;
            data["created"] = serde_json::Value::from(exists.is_none());
            insert_event(&mut tx, &server_event(EventKind::McpServerSet, name, data, actor), now).await?;
            tx.commit().await?;
            Ok(exists.is_none())
        }

        /// Remove a row (an event only when there was one); false if it did not exist.
        pub async fn mcp_server_remove(pool: &Pool<Db>, name: &str, actor: &str) -> Result<bool> {
            let mut tx = pool.begin_with($begin).await?;
            let n = sqlx::query("DELETE FROM mcp_servers WHERE name = $1").bind(name).execute(&mut *tx).await?.rows_affected();
            if n > 0 {
                insert_event(&mut tx, &server_event(EventKind::McpServerRemoved, name, serde_json::json!({}), actor), now_ms()).await?;
            }
            tx.commit().await?;
            Ok(n > 0)
        }

        pub async fn mcp_servers(pool: &Pool<Db>) -> Result<Vec<McpServerRow>> {
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT name, config, created_at, updated_at, updated_by FROM mcp_servers ORDER BY name",
            )
            .fetch_all(pool)
            .await?;
            rows.into_iter().map(from_row).collect()
        }
    };
}

crate::sql::for_each_backend!(statements);
