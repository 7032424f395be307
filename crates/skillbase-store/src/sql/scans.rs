//! Scans: the findings kept with each revision (written in the revision's transaction), read
//! back per skill, and appended by rescans.

use crate::error::StoreError;
use crate::events::EventKind;
use crate::scan::{Action, ScanRecord, ScanRow};
use crate::sql::events::skill_event;

/// A stored scan row read back: (rev, rules, verdict, action, findings, scanned_at).
pub(crate) type Row = (i64, String, Option<String>, String, String, i64);

/// A stored row as a record.
pub(crate) fn record(r: Row) -> Result<ScanRecord, StoreError> {
    let (rev, rules, verdict, action, findings, scanned_at) = r;
    let corrupt = |what: String| StoreError::Corrupt(format!("the scan of revision {rev}: {what}"));
    Ok(ScanRecord {
        rev,
        rules,
        verdict: verdict.map(|v| v.parse()).transpose().map_err(corrupt)?,
        action: Action::parse(&action).map_err(corrupt)?,
        findings: serde_json::from_str(&findings).map_err(|e| corrupt(e.to_string()))?,
        scanned_at,
    })
}

/// The `scan_findings` event of a revision written with findings the gate acted on.
fn findings_event(
    row: &ScanRow,
    scope: &str,
    name: &str,
    rev: i64,
    actor: &str,
) -> Option<crate::records::NewEvent> {
    let data = serde_json::to_value(row.event.as_ref()?).ok()?;
    Some(skill_event(
        EventKind::ScanFindings,
        scope,
        name,
        rev,
        actor,
        data,
    ))
}

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::events::$backend::insert_event;
        use sqlx::{Pool, Transaction};

        type Db = $db;

        /// Keep the scan of revision `rev` of skill record `id`, in the write's transaction,
        /// with its `scan_findings` event when the gate acted on findings.
        pub(crate) async fn insert_scan(
            tx: &mut Transaction<'static, Db>,
            at: (i64, i64, i64),
            row: &ScanRow,
            event: (&str, &str, &str),
        ) -> Result<()> {
            let (id, rev, now) = at;
            sqlx::query(concat!(
                "INSERT INTO scans (skill_id, rev, rules, verdict, action, findings, scanned_at) ",
                "VALUES ($1, $2, $3, $4, $5, $6, $7)"
            ))
            .bind(id)
            .bind(rev)
            .bind(&row.rules)
            .bind(&row.verdict)
            .bind(row.action.as_str())
            .bind(&row.findings)
            .bind(now)
            .execute(&mut **tx)
            .await?;
            let (scope, name, actor) = event;
            if let Some(ev) = findings_event(row, scope, name, rev, actor) {
                insert_event(tx, &ev, now).await?;
            }
            Ok(())
        }

        /// Append a rescan's row for revision `rev` of skill `name` in `scope` (nothing when the
        /// skill is gone).
        pub async fn append_scan(pool: &Pool<Db>, scope: &str, name: &str, rev: i64, row: &ScanRow) -> Result<()> {
            let mut tx = pool.begin_with($begin).await?;
            let id: Option<i64> = sqlx::query_scalar("SELECT id FROM skills WHERE scope = $1 AND name = $2")
                .bind(scope)
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(id) = id {
                insert_scan(&mut tx, (id, rev, crate::sql::now_ms()), row, (scope, name, "")).await?;
            }
            tx.commit().await?;
            Ok(())
        }

        /// Every scan of a skill's revisions, oldest first.
        pub async fn scans_of(pool: &Pool<Db>, scope: &str, name: &str) -> Result<Vec<Row>> {
            Ok(sqlx::query_as(concat!(
                "SELECT c.rev, c.rules, c.verdict, c.action, c.findings, c.scanned_at FROM scans c ",
                "JOIN skills s ON s.id = c.skill_id WHERE s.scope = $1 AND s.name = $2 ORDER BY c.id"
            ))
            .bind(scope)
            .bind(name)
            .fetch_all(pool)
            .await?)
        }

        /// The latest scan of every skill's active revision: (scope, name, row); skills whose
        /// active revision was never scanned are left out.
        pub async fn active_scans(pool: &Pool<Db>) -> Result<Vec<(String, String, Row)>> {
            type Flat = (String, String, i64, String, Option<String>, String, String, i64);
            let rows: Vec<Flat> = sqlx::query_as(concat!(
                "SELECT s.scope, s.name, c.rev, c.rules, c.verdict, c.action, c.findings, c.scanned_at FROM skills s ",
                "JOIN scans c ON c.id = (SELECT MAX(x.id) FROM scans x WHERE x.skill_id = s.id AND x.rev = s.active_rev) ",
                "ORDER BY s.scope, s.name"
            ))
            .fetch_all(pool)
            .await?;
            Ok(rows.into_iter().map(|r| (r.0, r.1, (r.2, r.3, r.4, r.5, r.6, r.7))).collect())
        }
    };
}

crate::sql::for_each_backend!(statements);
