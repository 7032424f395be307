//! A skill's scan: the findings kept with a revision when it arrived (or when the store was
//! last rescanned), as `skillbase show` prints them.

use super::extract::{Caller, P, Q, parse_scope};
use super::skills::{RevQuery, readable};
use crate::error::{ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use std::sync::Arc;
use utoipa::ToSchema;

/// A revision's scan.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScanResult {
    /// The revision.
    pub rev: i64,
    /// Whether it was scanned (revisions written before the gate were not, until a rescan).
    pub scanned: bool,
    /// The highest severity found (`info`, `low`, `medium`, `high`, `critical`); absent when
    /// nothing was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// What the gate did on arrival: `off`, `warn` or `review` (a rescan records `off`).
    pub action: String,
    /// The digest of the rules that scanned it.
    pub rules: String,
    /// When (Unix milliseconds).
    pub scanned_at: i64,
    /// The findings.
    pub findings: Vec<ScanFinding>,
}

/// One finding.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScanFinding {
    /// The rule's id.
    pub rule: String,
    /// Its family (`hijack`, `hidden`, `exfiltration`, `dropper`, `persistence`, `envelope`,
    /// `credentials`, `routing`, `unread`).
    pub family: String,
    /// Its severity here.
    pub severity: String,
    /// The file.
    pub file: String,
    /// 1-based line (0: the whole file).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was seen (secrets masked, long payloads shortened).
    pub seen: String,
    /// Why it matters.
    pub why: String,
    /// What to do.
    pub fix: String,
}

/// The latest scan of a revision of a skill (the active one by default).
#[utoipa::path(get, path = "/v1/skills/{name}/scan", tag = "skills",
    params(("name" = String, Path), RevQuery),
    responses((status = 200, body = ScanResult),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn scan(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<RevQuery>,
) -> ApiResult<Json<ScanResult>> {
    let e = readable(&st, &p, &name, parse_scope(q.scope.as_deref())?)?;
    let rev = q.rev.unwrap_or(e.active_rev);
    let record = st.store.latest_scan(&e.scope, &e.name, Some(rev)).await?;
    let Some(s) = record else {
        return Ok(Json(ScanResult {
            rev,
            scanned: false,
            verdict: None,
            action: "off".into(),
            rules: String::new(),
            scanned_at: 0,
            findings: Vec::new(),
        }));
    };
    Ok(Json(ScanResult {
        rev,
        scanned: true,
        verdict: s.verdict.map(|v| v.as_str().to_owned()),
        action: s.action.as_str().to_owned(),
        rules: s.rules,
        scanned_at: s.scanned_at,
        findings: s
            .findings
            .into_iter()
            .map(|f| ScanFinding {
                rule: f.rule,
                family: f.family.as_str().to_owned(),
                severity: f.severity.as_str().to_owned(),
                file: f.file,
                line: f.line,
                column: f.column,
                seen: f.seen,
                why: f.why,
                fix: f.fix,
            })
            .collect(),
    }))
}
