//! Following writes made elsewhere: other servers' (the events that change the index) and seed
//! folders' (a folder that diverged from the store).

use crate::events::EventKind;
use crate::model::Scope;
use crate::records::NewEvent;
use crate::sql::events::skill_event;

// ---- Decisions ----

/// Whether a seed folder now at `seed_digest` diverges anew: not when its divergence was already
/// recorded at that content (`previous`), so a changed folder is recorded once per content.
fn diverged_anew(previous: Option<&str>, seed_digest: &str) -> bool {
    previous != Some(seed_digest)
}

/// The event a diverged seed folder records.
fn diverged_event(
    scope: &str,
    name: &str,
    active: i64,
    seed_path: &str,
    seed_digest: &str,
) -> NewEvent {
    skill_event(
        EventKind::SeedDiverged,
        scope,
        name,
        active,
        &format!("seed:{seed_path}"),
        serde_json::to_value(crate::events::SeedDiverged {
            seed_path: seed_path.to_owned(),
            seed_digest: seed_digest.to_owned(),
            message: crate::events::SEED_DIVERGED_MESSAGE.to_owned(),
        })
        .unwrap_or_default(),
    )
}

// ---- Statements ----

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use sqlx::Pool;

        type Db = $db;

        /// Events after `after` that may change the index or the agents (`changes_index`,
        /// set from the kind when written), as (id, kind, scope, skill); and the newest id.
        pub async fn index_changes(pool: &Pool<Db>, after: i64, limit: i64) -> Result<(Vec<(i64, EventKind, Option<String>, Option<String>)>, i64)> {
            // The newest id first, and only rows up to it: an event committed between the two
            // statements is left for the next call, never skipped.
            let newest: Option<i64> = sqlx::query_scalar("SELECT MAX(id) FROM events").fetch_one(pool).await?;
            let newest = newest.unwrap_or(0).max(after);
            let rows: Vec<(i64, String, Option<String>, Option<String>)> = sqlx::query_as(concat!(
                "SELECT id, kind, scope, skill FROM events WHERE id > $1 AND id <= $2 AND changes_index ",
                "ORDER BY id LIMIT $3"
            ))
            .bind(after)
            .bind(newest)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            Ok((rows.into_iter().map(|(id, kind, scope, skill)| (id, kind.into(), scope, skill)).collect(), newest))
        }

        pub async fn max_event_id(pool: &Pool<Db>) -> Result<i64> {
            let v: Option<i64> = sqlx::query_scalar("SELECT MAX(id) FROM events").fetch_one(pool).await?;
            Ok(v.unwrap_or(0))
        }

        /// Record that a seed folder diverged from the store (once per seed content).
        pub async fn mark_diverged(pool: &Pool<Db>, scope: &Scope, name: &str, seed_path: &str, seed_digest: &str) -> Result<bool> {
            let mut tx = pool.begin_with($begin).await?;
            let s = scope.to_string();
            let row: Option<(i64, i64, Option<String>)> = sqlx::query_as(concat!(
                "SELECT id, active_rev, diverged_digest FROM skills WHERE scope = $1 AND name = $2", $lock
            ))
            .bind(&s)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((id, active, previous)) = row else { return Ok(false) };
            if !diverged_anew(previous.as_deref(), seed_digest) {
                return Ok(false);
            }
            sqlx::query("UPDATE skills SET diverged_digest = $1 WHERE id = $2")
                .bind(seed_digest)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            insert_event(&mut tx, &diverged_event(&s, name, active, seed_path, seed_digest), now_ms()).await?;
            tx.commit().await?;
            Ok(true)
        }
    };
}

crate::sql::for_each_backend!(statements);

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder's divergence is recorded once per content.
    #[test]
    fn a_divergence_is_recorded_once_per_content() {
        assert!(diverged_anew(None, "d1"));
        assert!(!diverged_anew(Some("d1"), "d1"));
        assert!(diverged_anew(Some("d1"), "d2"));
    }
}
