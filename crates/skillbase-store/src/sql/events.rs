//! Events: appending (one at a time inside another noun's transaction, or in batches) and
//! reading them back. Which kinds change the index is [`EventKind::changes_index`]'s answer,
//! stored with each event. Every append adds to the usage aggregates in its transaction
//! (`sql::usage::record`).

use crate::events::EventKind;
use crate::records::{EventFilter, EventRecord, NewEvent};
use crate::usage::Deltas;

type EventRow = (
    i64,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
);

fn event_from_row(r: EventRow) -> EventRecord {
    EventRecord {
        id: r.0,
        at: r.1,
        kind: EventKind::from(r.2),
        scope: r.3,
        skill: r.4,
        rev: r.5,
        agent: r.6,
        session: r.7,
        actor: r.8,
        data: serde_json::from_str(&r.9).unwrap_or(serde_json::Value::Null),
    }
}

/// An event's data as stored: compact JSON, the bytes `Value`'s `Display` writes, serialised
/// straight into one buffer (`Display` goes through the formatting machinery and grows its
/// string piece by piece; it is measurable on the call path, where every call appends one).
fn data_text(data: &serde_json::Value) -> String {
    // A `Value` always serialises (its keys are strings); the fallback is never taken.
    serde_json::to_string(data).unwrap_or_else(|_| data.to_string())
}

/// An event about a skill, by `actor` (what every write of a skill records).
pub(crate) fn skill_event(
    kind: EventKind,
    scope: &str,
    name: &str,
    rev: i64,
    actor: &str,
    data: serde_json::Value,
) -> NewEvent {
    NewEvent {
        kind,
        scope: Some(scope.to_owned()),
        skill: Some(name.to_owned()),
        rev: Some(rev),
        actor: Some(actor.to_owned()),
        data,
        ..NewEvent::default()
    }
}

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::now_ms;
        use sqlx::{Pool, Transaction};

        type Db = $db;

        /// Append one event in a transaction of the caller's.
        pub async fn insert_event(tx: &mut Transaction<'static, Db>, ev: &NewEvent, at: i64) -> Result<()> {
            sqlx::query(concat!(
                "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) ",
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ))
            .bind(at)
            .bind(ev.kind.as_str())
            .bind(&ev.scope)
            .bind(&ev.skill)
            .bind(ev.rev)
            .bind(&ev.agent)
            .bind(&ev.session)
            .bind(&ev.actor)
            .bind(data_text(&ev.data))
            .bind(ev.kind.changes_index())
            .execute(&mut **tx)
            .await?;
            let mut usage = Deltas::default();
            usage.event(ev, at);
            crate::sql::usage::$backend::record(tx, &usage).await
        }

        pub async fn append_event(pool: &Pool<Db>, ev: &NewEvent) -> Result<()> {
            let mut tx = pool.begin().await?;
            insert_event(&mut tx, ev, now_ms()).await?;
            tx.commit().await?;
            Ok(())
        }

        pub async fn events(pool: &Pool<Db>, f: &EventFilter) -> Result<Vec<EventRecord>> {
            let rows: Vec<EventRow> = sqlx::query_as(concat!(
                "SELECT id, at, kind, scope, skill, rev, agent, session, actor, data FROM events ",
                "WHERE id > $1 AND ($2 IS NULL OR scope = $2) AND ($3 IS NULL OR skill = $3) ",
                "AND ($4 IS NULL OR session = $4) AND ($5 IS NULL OR agent = $5) AND ($6 IS NULL OR kind = $6) ",
                "ORDER BY id LIMIT $7"
            ))
            .bind(f.after_id.unwrap_or(0))
            .bind(&f.scope)
            .bind(&f.skill)
            .bind(&f.session)
            .bind(&f.agent)
            .bind(&f.kind)
            .bind(f.limit.unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await?;
            Ok(rows.into_iter().map(event_from_row).collect())
        }

        /// The newest `limit` events of one agent and kind with an id below `before_id`,
        /// newest first (index `events_agent_kind`, migration 12).
        pub async fn recent_events(pool: &Pool<Db>, agent: &str, kind: &str, before_id: i64, limit: i64) -> Result<Vec<EventRecord>> {
            let rows: Vec<EventRow> = sqlx::query_as(concat!(
                "SELECT id, at, kind, scope, skill, rev, agent, session, actor, data FROM events ",
                "WHERE agent = $1 AND kind = $2 AND id < $3 ORDER BY id DESC LIMIT $4"
            ))
            .bind(agent)
            .bind(kind)
            .bind(before_id)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            Ok(rows.into_iter().map(event_from_row).collect())
        }

        /// Append events (one multi-row INSERT per 100 events) and add calls to runs'
        /// counters, all in one transaction.
        pub async fn append_events_and_count(pool: &Pool<Db>, evs: &[NewEvent], counts: &[(i64, u32)]) -> Result<()> {
            if evs.is_empty() && counts.is_empty() {
                return Ok(());
            }
            let mut tx = pool.begin().await?;
            for &(run, calls) in counts {
                sqlx::query("UPDATE runs SET calls = calls + $1 WHERE id = $2")
                    .bind(i64::from(calls))
                    .bind(run)
                    .execute(&mut *tx)
                    .await?;
            }
            let now = now_ms();
            let mut usage = Deltas::default();
            for ev in evs {
                usage.event(ev, now);
            }
            crate::sql::usage::$backend::record(&mut tx, &usage).await?;
            for chunk in evs.chunks(100) {
                let mut q = sqlx::QueryBuilder::<Db>::new(
                    "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) ",
                );
                q.push_values(chunk, |mut b, ev| {
                    b.push_bind(now)
                        .push_bind(ev.kind.as_str())
                        .push_bind(&ev.scope)
                        .push_bind(&ev.skill)
                        .push_bind(ev.rev)
                        .push_bind(&ev.agent)
                        .push_bind(&ev.session)
                        .push_bind(&ev.actor)
                        .push_bind(data_text(&ev.data))
                        .push_bind(ev.kind.changes_index());
                });
                q.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        }
    };
}

crate::sql::for_each_backend!(statements);

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored text is what `Value`'s `Display` gave before: the same bytes.
    #[test]
    fn data_text_is_the_display_text() {
        for v in [
            serde_json::json!({"call_id": "call-1", "tool": "load_skill", "arguments": {"name": "x"},
                "ok": true, "tokens": 12, "truncated": false}),
            serde_json::json!({"z": 1, "a": [1.5, -2, null, "tab\t \"quote\" \u{1} é 😀"], "m": {}}),
            serde_json::json!(null),
            serde_json::json!("text"),
        ] {
            assert_eq!(data_text(&v), v.to_string());
        }
    }

    /// Data that is not JSON reads back as `null`, not as an error.
    #[test]
    fn unreadable_data_reads_as_null() {
        let row = |data: &str| -> EventRow {
            (
                1,
                2,
                "turn".into(),
                None,
                None,
                None,
                None,
                None,
                None,
                data.into(),
            )
        };
        assert_eq!(
            event_from_row(row("{\"a\":1}")).data,
            serde_json::json!({"a": 1})
        );
        assert_eq!(
            event_from_row(row("not json")).data,
            serde_json::Value::Null
        );
    }
}
