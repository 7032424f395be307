//! API tokens: stored by the SHA-256 of their secret, revoked but never deleted.

use crate::events::EventKind;
use crate::records::{NewEvent, TokenRecord};

type TokenRow = (i64, String, String, Option<String>, i64, Option<i64>);

fn token_from_row(r: TokenRow) -> TokenRecord {
    TokenRecord {
        id: r.0,
        label: r.1,
        hash: r.2,
        agent: r.3,
        created_at: r.4,
        revoked_at: r.5,
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

        pub async fn token_create(pool: &Pool<Db>, label: &str, hash: &str, agent: Option<&str>, actor: &str) -> Result<TokenRecord> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            let (id,): (i64,) = sqlx::query_as(
                "INSERT INTO api_tokens (label, hash, agent, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(label)
            .bind(hash)
            .bind(agent)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            insert_event(
                &mut tx,
                &NewEvent {
                    kind: EventKind::TokenCreated,
                    actor: Some(actor.to_owned()),
                    agent: agent.map(str::to_owned),
                    data: serde_json::json!({"token": id, "label": label, "admin": agent.is_none()}),
                    ..NewEvent::default()
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(TokenRecord { id, label: label.to_owned(), hash: hash.to_owned(), agent: agent.map(str::to_owned), created_at: now, revoked_at: None })
        }

        pub async fn tokens(pool: &Pool<Db>) -> Result<Vec<TokenRecord>> {
            let rows: Vec<TokenRow> =
                sqlx::query_as("SELECT id, label, hash, agent, created_at, revoked_at FROM api_tokens ORDER BY id")
                    .fetch_all(pool)
                    .await?;
            Ok(rows.into_iter().map(token_from_row).collect())
        }

        pub async fn token_by_hash(pool: &Pool<Db>, hash: &str) -> Result<Option<TokenRecord>> {
            let row: Option<TokenRow> =
                sqlx::query_as("SELECT id, label, hash, agent, created_at, revoked_at FROM api_tokens WHERE hash = $1")
                    .bind(hash)
                    .fetch_optional(pool)
                    .await?;
            Ok(row.map(token_from_row))
        }

        /// Revoke a token (an event only when it was not revoked yet); false if it did not
        /// exist or was already revoked.
        pub async fn token_revoke(pool: &Pool<Db>, id: i64, actor: &str) -> Result<bool> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            let n = sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n > 0 {
                insert_event(
                    &mut tx,
                    &NewEvent { kind: EventKind::TokenRevoked, actor: Some(actor.to_owned()), data: serde_json::json!({"token": id}), ..NewEvent::default() },
                    now,
                )
                .await?;
            }
            tx.commit().await?;
            Ok(n > 0)
        }
    };
}

crate::sql::for_each_backend!(statements);
