//! The vault's entries: names, descriptions and encrypted values (encrypted by the runtime
//! before they arrive).

use crate::events::EventKind;
use crate::records::{NewEvent, VaultRow};

/// The event a vault write records: the entry's name, never its value.
fn vault_event(kind: EventKind, name: &str, actor: &str) -> NewEvent {
    NewEvent {
        kind,
        actor: Some(actor.to_owned()),
        data: serde_json::json!({"entry": name}),
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

        pub async fn vault_put(pool: &Pool<Db>, e: &VaultRow, actor: &str) -> Result<()> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            sqlx::query(concat!(
                "INSERT INTO vault_entries (name, description, nonce, ciphertext, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) ",
                "ON CONFLICT (name) DO UPDATE SET description = excluded.description, nonce = excluded.nonce, ciphertext = excluded.ciphertext, updated_at = excluded.updated_at"
            ))
            .bind(&e.name)
            .bind(&e.description)
            .bind(&e.nonce)
            .bind(&e.ciphertext)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            insert_event(&mut tx, &vault_event(EventKind::VaultSet, &e.name, actor), now).await?;
            tx.commit().await?;
            Ok(())
        }

        /// Remove an entry (an event only when there was one); false if it did not exist.
        pub async fn vault_remove(pool: &Pool<Db>, name: &str, actor: &str) -> Result<bool> {
            let mut tx = pool.begin_with($begin).await?;
            let n = sqlx::query("DELETE FROM vault_entries WHERE name = $1").bind(name).execute(&mut *tx).await?.rows_affected();
            if n > 0 {
                insert_event(&mut tx, &vault_event(EventKind::VaultRemoved, name, actor), now_ms()).await?;
            }
            tx.commit().await?;
            Ok(n > 0)
        }

        pub async fn vault_all(pool: &Pool<Db>) -> Result<Vec<VaultRow>> {
            let rows: Vec<(String, String, Vec<u8>, Vec<u8>, i64)> =
                sqlx::query_as("SELECT name, description, nonce, ciphertext, updated_at FROM vault_entries ORDER BY name")
                    .fetch_all(pool)
                    .await?;
            Ok(rows
                .into_iter()
                .map(|r| VaultRow { name: r.0, description: r.1, nonce: r.2, ciphertext: r.3, updated_at: r.4 })
                .collect())
        }
    };
}

crate::sql::for_each_backend!(statements);
