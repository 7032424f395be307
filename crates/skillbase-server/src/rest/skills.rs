//! Skills: list, show, put, history, diff, revert, retire, restore, disable, enable, export,
//! import, runs and approvals.
//!
//! Admin tokens address any record (`?scope=shared` by default, or `agent:<name>`) and write as
//! `human:token-<id>`. Agent tokens see exactly their agent's view (allowlisted, active, its own
//! records over shared ones) and write through the authoring tools ([`super::authoring`]).

use super::authoring::{self, Authoring};
use super::extract::{
    Body, Caller, P, Precondition, Q, Raw, check_precondition, content_type_is, etag, hidden,
    media_type, optional_json, parse_scope, precondition, reread_for_precondition, stale,
    unprocessable,
};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skillbase_format::BundleLimits;
use skillbase_format::bundle::BUNDLE_PATH_PATTERN;
use skillbase_format::{Bundle, BundleFile, BundlePath, Digest, SkillMd, SkillMeta};
use skillbase_store::pack::{PackLimits, read_zip_pack};
use skillbase_store::{
    AgentName, Author, PutRequest, RevisionInfo, RunRecord, Scope, SkillEntry, Status,
    StatusChange, StoreError, WriteKind, WriteOutcome,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use utoipa::openapi::Ref;
use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::{IntoParams, ToSchema};

/// Largest page of a listing.
pub const MAX_PAGE: usize = 1000;

/// One skill in a listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillSummary {
    /// The skill's name (1–64 lowercase letters, digits and single hyphens).
    pub name: String,
    /// `shared` or `agent:<name>`.
    pub scope: String,
    /// active, disabled, retired or pending.
    pub status: String,
    /// The active revision.
    pub rev: i64,
    /// The latest revision (the ETag of the skill; If-Match takes it).
    pub latest_rev: i64,
    /// SHA-256 of the active revision's bundle.
    pub digest: String,
    /// Author of the active revision.
    pub author: String,
    /// The active revision's `description`.
    pub description: String,
    /// The active revision's `triggers` (phrases that activate it in a turn).
    pub triggers: Vec<String>,
    /// The active revision's latency class: immediate, seconds or tens_of_seconds.
    pub cost: String,
    /// Unix milliseconds.
    pub updated_at: i64,
}

/// A page of skills.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillPage {
    /// The skills of this page, sorted by name then scope.
    pub items: Vec<SkillSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only records in this scope: `shared` or `agent:<name>`.
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
    /// active, disabled, retired, pending, or all (default: all but retired).
    #[param(inline)]
    pub status: Option<StatusFilter>,
    /// Words that must all appear in the name or description (case and accents ignored).
    pub q: Option<String>,
    /// `next_cursor` from the previous page (empty: the first page). Opaque: only the server's
    /// own cursors are read, anything else answers 400.
    #[param(pattern = r"^[A-Za-z0-9_-]*$")]
    pub cursor: Option<String>,
    /// Items per page (default: the server's page size; at most 1000).
    pub limit: Option<usize>,
}

/// One revision's record.
#[derive(Debug, Serialize, ToSchema)]
pub struct Revision {
    /// The revision number, from 1, gap-free per skill.
    pub rev: i64,
    /// The revision's content digest, `sha256:<64 hex>` over its files (README, "The content
    /// digest").
    pub digest: String,
    /// Who wrote it: `human:<id>`, `agent:<name>/inline`, `agent:<name>/dreaming`,
    /// `import:<source>` or `seed:<path>`.
    pub author: String,
    /// The revision message (at most 2000 characters).
    pub message: String,
    /// committed or pending.
    pub state: String,
    /// When it was written, in Unix milliseconds.
    pub created_at: i64,
    /// Whether this is the skill's active revision.
    pub active: bool,
    /// The `version` its SKILL.md declares (Semantic Versioning 2.0.0); null when none (or
    /// for a revision written before the store recorded versions).
    pub version: Option<String>,
}

impl From<RevisionInfo> for Revision {
    fn from(r: RevisionInfo) -> Revision {
        Revision {
            rev: r.rev,
            version: r.version,
            digest: r.digest,
            author: r.author,
            message: r.message,
            state: r.state,
            created_at: r.created_at,
            active: r.active,
        }
    }
}

/// A file of a revision.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileInfo {
    /// The file's path in the skill folder (`/`-separated).
    pub path: String,
    /// SHA-256 of the file's bytes.
    pub digest: String,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether the file is executable (scripts keep their mode on export).
    pub executable: bool,
}

/// A skill with one revision's files and SKILL.md.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillDetail {
    /// The skill's name (1–64 lowercase letters, digits and single hyphens).
    pub name: String,
    /// `shared` or `agent:<name>`.
    pub scope: String,
    /// active, disabled, retired or pending.
    pub status: String,
    /// The active revision.
    pub active_rev: i64,
    /// The latest revision (the ETag; If-Match takes it).
    pub latest_rev: i64,
    /// The revision shown (the active one unless `rev` was given).
    pub revision: Revision,
    /// The shown revision's content digest, `sha256:<64 hex>` over its files (README, "The
    /// content digest").
    pub bundle_digest: String,
    /// Every file of the shown revision, sorted by path.
    pub files: Vec<FileInfo>,
    /// The text of SKILL.md.
    pub skill_md: String,
    /// The frontmatter, typed (name, description, triggers, companions, inputs, capabilities,
    /// cost, ...).
    #[schema(value_type = Object)]
    pub meta: Value,
}

/// Which record a name addresses.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScopeQuery {
    /// The record's scope (admin tokens; default `shared`). Agent tokens resolve names in their
    /// agent's view.
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
}

/// Which record and revision to show or export.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RevQuery {
    /// The record's scope (admin tokens; default `shared`).
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
    /// A past revision (default: the active one).
    pub rev: Option<i64>,
}

/// A file's content: UTF-8 text, or an object with `text` or `base64` (and `executable`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum FileContent {
    /// The file as UTF-8 text.
    Text(String),
    /// The file as an object: `text` or `base64`, and `executable`.
    Object(FileObject),
}

/// A file given as an object: exactly one of `text` and `base64`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FileObject {
    /// The content as UTF-8 text.
    pub text: Option<String>,
    /// The content as canonical standard base64 (padded; the unused bits of the last character
    /// zero), for binary files.
    #[schema(
        pattern = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
    )]
    pub base64: Option<String>,
    /// Whether the file is executable (default false).
    #[serde(default)]
    pub executable: bool,
}

/// A whole skill as JSON. (A bare SKILL.md may be sent instead, as `text/markdown`.)
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSkill {
    /// Every file of the skill by relative path; SKILL.md is required.
    #[schema(schema_with = skill_files_schema)]
    pub files: BTreeMap<String, FileContent>,
    /// Why this revision exists: at most 2000 characters, no control characters but newlines.
    #[schema(schema_with = skillbase_store::openapi::message_or_null)]
    pub message: Option<String>,
}

/// `files`: at most [`BundleLimits`]' 512 files under safe relative paths (the format's
/// pattern), holding SKILL.md or skill.md (not both: they would collide); each a text, or an
/// object with exactly one of `text` and `base64`. (What a schema cannot say, such as two paths
/// differing only in case or the 16 MiB total, the server refuses with 422.)
fn skill_files_schema() -> Schema {
    let string = || ObjectBuilder::new().schema_type(Type::String);
    let one_of_keys = |a: &str, b: &str| {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().required(a).property(a, string()))
            .item(ObjectBuilder::new().required(b).property(b, string()))
    };
    let file = OneOfBuilder::new().item(string()).item(
        AllOfBuilder::new()
            .item(Ref::from_schema_name("FileObject"))
            .item(one_of_keys("text", "base64")),
    );
    let required = |name: &str| ObjectBuilder::new().required(name);
    AllOfBuilder::new()
        .description(Some(
            "Every file of the skill by relative path (`/`-separated); SKILL.md is required.",
        ))
        .item(
            ObjectBuilder::new()
                .property_names(Some(
                    string()
                        .max_length(Some(BundleLimits::default().max_path_bytes))
                        .pattern(Some(BUNDLE_PATH_PATTERN)),
                ))
                .max_properties(Some(BundleLimits::default().max_files))
                .additional_properties(Some(AdditionalProperties::RefOr(file.into()))),
        )
        .item(
            OneOfBuilder::new()
                .item(required("SKILL.md"))
                .item(required("skill.md")),
        )
        .build()
        .into()
}

/// A status filter for listings: one status, or all of them.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    /// Offered skills.
    Active,
    /// Kept but not offered.
    Disabled,
    /// Out of use.
    Retired,
    /// Waiting for approval.
    Pending,
    /// Every status, retired included.
    All,
}

impl StatusFilter {
    /// The one status to list (`None`: every one).
    fn status(self) -> Option<Status> {
        match self {
            StatusFilter::Active => Some(Status::Active),
            StatusFilter::Disabled => Some(Status::Disabled),
            StatusFilter::Retired => Some(Status::Retired),
            StatusFilter::Pending => Some(Status::Pending),
            StatusFilter::All => None,
        }
    }
}

/// Where a skill write goes, and its message.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PutQuery {
    /// Where to write (admin tokens; default `shared`). Agent tokens always write into their
    /// own scope.
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
    /// Why this revision exists (for a `text/markdown` body): at most 2000 characters, no
    /// control characters but newlines.
    #[param(schema_with = skillbase_store::openapi::message)]
    pub message: Option<String>,
}

/// What a write did.
#[derive(Debug, Serialize, ToSchema)]
pub struct WriteResult {
    /// The skill's name (1–64 lowercase letters, digits and single hyphens).
    pub name: String,
    /// `shared` or `agent:<name>`.
    pub scope: String,
    /// created, modified, unchanged, pending, reverted or status.
    pub result: String,
    /// The revision written or activated.
    pub rev: i64,
    /// The skill's status after the write: active, disabled, retired or pending.
    pub status: String,
    /// The latest revision after the write (the new ETag).
    pub latest_rev: i64,
    /// The revision waits for approval before it is active.
    pub pending_review: bool,
    /// What the author should know about the write: a `version` not higher than the active
    /// revision's (empty when nothing).
    pub warnings: Vec<String>,
}

/// The revision to re-activate.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevBody {
    /// An existing revision number of the skill.
    pub rev: i64,
}

/// Why a status change was made.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusBody {
    /// Why (kept in the event): at most 2000 characters, no control characters but newlines.
    #[schema(schema_with = skillbase_store::openapi::message_or_null)]
    pub reason: Option<String>,
}

/// Which two revisions of a skill to compare.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffQuery {
    /// The record's scope (admin tokens; default `shared`).
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
    /// The older revision.
    pub from: i64,
    /// The newer revision (default: the latest).
    pub to: Option<i64>,
}

/// The diff between two revisions.
#[derive(Debug, Serialize, ToSchema)]
pub struct DiffResult {
    /// The older revision compared.
    pub from: i64,
    /// The newer revision compared.
    pub to: i64,
    /// A unified diff of every file that differs (empty when the revisions are identical).
    pub diff: String,
}

/// Which runs of a skill to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// The record's scope (admin tokens; default `shared`).
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
    /// Most runs returned, newest first (default 20, at most 500).
    pub limit: Option<i64>,
}

/// A run: one activation of a skill revision in a session, with its outcome.
#[derive(Debug, Serialize, ToSchema)]
pub struct Run {
    /// The run's id.
    pub id: i64,
    /// The session the skill was activated in.
    pub session: String,
    /// The agent that activated it.
    pub agent: String,
    /// The scope of the skill record activated.
    pub scope: String,
    /// The skill's name (1–64 lowercase letters, digits and single hyphens).
    pub skill: String,
    /// The revision activated (calls are gated by its capabilities, even if a newer one exists).
    pub rev: i64,
    /// When the run opened, in Unix milliseconds.
    pub started_at: i64,
    /// When it ended, in Unix milliseconds; absent while it runs.
    pub ended_at: Option<i64>,
    /// success, failure or superseded; absent while it runs.
    pub outcome: Option<String>,
    /// The free-text note recorded when the run ended; empty when none was given.
    pub note: String,
    /// Tool calls made while the skill drove the session.
    pub calls: i64,
    /// Of those, how many failed.
    pub failed_calls: i64,
}

impl From<RunRecord> for Run {
    fn from(r: RunRecord) -> Run {
        Run {
            id: r.id,
            session: r.session,
            agent: r.agent,
            scope: r.scope,
            skill: r.skill,
            rev: r.rev,
            started_at: r.started_at,
            ended_at: r.ended_at,
            outcome: r.outcome,
            note: r.note,
            calls: r.calls,
            failed_calls: r.failed_calls,
        }
    }
}

/// A revision waiting for approval.
#[derive(Debug, Serialize, ToSchema)]
pub struct PendingRevision {
    /// `shared` or `agent:<name>`.
    pub scope: String,
    /// The skill's name (1–64 lowercase letters, digits and single hyphens).
    pub name: String,
    /// The pending revision's number.
    pub rev: i64,
    /// Who wrote it (`agent:<name>/inline` for agent writes held by `review_agent_revisions`).
    pub author: String,
    /// The revision message.
    pub message: String,
    /// SHA-256 of the revision's bundle.
    pub digest: String,
    /// When it was written, in Unix milliseconds.
    pub created_at: i64,
}

/// Where an import goes, and its message.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// Where to import (default `shared`). Into `agent:<name>`, that agent's allowlist becomes
    /// exactly the imported skills.
    #[param(value_type = Option<Scope>)]
    pub scope: Option<String>,
    /// The revision message recorded for every imported skill: at most 2000 characters, no
    /// control characters but newlines.
    #[param(schema_with = skillbase_store::openapi::message)]
    pub message: Option<String>,
}

/// What an import did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportResult {
    /// Skills that did not exist and were created.
    pub created: Vec<String>,
    /// Skills that existed and got a new revision.
    pub changed: Vec<String>,
    /// Skills whose content was identical to their active revision (nothing written).
    pub unchanged: Vec<String>,
    /// One write result per imported skill.
    pub outcomes: Vec<WriteResult>,
}

fn summary(e: &SkillEntry) -> SkillSummary {
    SkillSummary {
        name: e.name.clone(),
        scope: e.scope.to_string(),
        status: e.status.to_string(),
        rev: e.active_rev,
        latest_rev: e.head_rev,
        digest: e.digest.to_string(),
        author: e.author.clone(),
        description: e.meta.description.clone(),
        triggers: e.meta.triggers.clone(),
        cost: e.meta.cost.to_string(),
        updated_at: e.updated_at,
    }
}

fn encode_cursor(name: &str, scope: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{name}\n{scope}"))
}

fn decode_cursor(c: &str) -> ApiResult<(String, String)> {
    let bad = || ApiError::bad_request("cursor: not a cursor this server gave");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .map_err(|_| bad())?;
    let s = String::from_utf8(bytes).map_err(|_| bad())?;
    let (n, sc) = s.split_once('\n').ok_or_else(bad)?;
    Ok((n.to_owned(), sc.to_owned()))
}

/// The record `name` addresses for this caller: for an admin, the one in `scope` (default
/// shared); for an agent, the one in its view (hidden otherwise).
pub fn readable(
    st: &AppState,
    p: &Principal,
    name: &str,
    scope: Option<Scope>,
) -> ApiResult<Arc<SkillEntry>> {
    match p.agent() {
        Some(a) => {
            let view = st.engine.view(a)?;
            match view.get(name) {
                Some(s) if scope.as_ref().is_none_or(|sc| *sc == s.entry.scope) => {
                    Ok(s.entry.clone())
                }
                _ => Err(hidden(name)),
            }
        }
        None => {
            let scope = scope.unwrap_or(Scope::Shared);
            st.store.index().get(&scope, name).cloned().ok_or_else(|| {
                StoreError::NotFound {
                    scope,
                    name: name.to_owned(),
                }
                .into()
            })
        }
    }
}

/// List skills: an admin sees every record, an agent its view.
#[utoipa::path(get, path = "/v1/skills", tag = "skills", params(ListQuery),
    responses(
        (status = 200, description = "A page of skills, sorted by name then scope", body = SkillPage),
        (status = 400, description = "A bad filter or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    Q(q): Q<ListQuery>,
) -> ApiResult<Json<SkillPage>> {
    let scope = parse_scope(q.scope.as_deref())?;
    let status: Option<Option<Status>> = q.status.map(StatusFilter::status);
    let limit = q
        .limit
        .unwrap_or(st.options.limits.page_size)
        .clamp(1, MAX_PAGE);
    // An empty cursor (`?cursor=` from a template with nothing to fill in) is the first page.
    let after = q
        .cursor
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(decode_cursor)
        .transpose()?;
    let words: Vec<String> =
        q.q.as_deref()
            .map(|s| {
                skillbase_format::text::fold(s)
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
    let index = st.store.index();
    let view;
    let mut entries: Vec<&Arc<SkillEntry>> = match p.agent() {
        Some(a) => {
            view = st.engine.view(a)?;
            // An agent's listing is what its harness may show the model: a skill only the
            // user may invoke (`disable-model-invocation`) is not in it.
            (0..view.skills.len())
                .filter(|&i| !view.is_explicit_only(i))
                .map(|i| &view.skills[i].entry)
                .collect()
        }
        None => index.all().collect(),
    };
    entries.retain(|e| {
        scope.as_ref().is_none_or(|s| *s == e.scope)
            && match status {
                None => e.status != Status::Retired,
                Some(None) => true,
                Some(Some(s)) => e.status == s,
            }
            && (words.is_empty() || {
                let text =
                    skillbase_format::text::fold(&format!("{} {}", e.name, e.meta.description));
                words.iter().all(|w| text.contains(w.as_str()))
            })
    });
    let mut keyed: Vec<(String, &Arc<SkillEntry>)> = entries
        .into_iter()
        .map(|e| (e.scope.to_string(), e))
        .collect();
    keyed.sort_by(|(sa, a), (sb, b)| (a.name.as_str(), sa).cmp(&(b.name.as_str(), sb)));
    let start = match &after {
        Some((n, sc)) => keyed.partition_point(|(s, e)| (e.name.as_str(), s.as_str()) <= (n, sc)),
        None => 0,
    };
    let page: Vec<&(String, &Arc<SkillEntry>)> = keyed[start..].iter().take(limit + 1).collect();
    let next_cursor = (page.len() > limit).then(|| {
        let (s, e) = page[limit - 1];
        encode_cursor(&e.name, s)
    });
    Ok(Json(SkillPage {
        items: page.iter().take(limit).map(|(_, e)| summary(e)).collect(),
        next_cursor,
    }))
}

/// Show a skill: its record, one revision's files with digests, and SKILL.md.
#[utoipa::path(get, path = "/v1/skills/{name}", tag = "skills",
    params(("name" = String, Path, description = "The skill's name"), RevQuery),
    responses(
        (status = 200, description = "The skill; ETag is its latest revision", body = SkillDetail,
            headers(("etag" = String, description = "\"<latest revision>\""))),
        (status = 404, description = "No such skill (or not visible to this agent)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<RevQuery>,
) -> ApiResult<Response> {
    let e = readable(&st, &p, &name, parse_scope(q.scope.as_deref())?)?;
    let (info, bundle) = st.store.bundle(&e.scope, &e.name, q.rev).await?;
    let md_text = String::from_utf8_lossy(&bundle.skill_md().bytes).into_owned();
    let meta = SkillMd::parse(&md_text, &Default::default())
        .ok()
        .and_then(|md| SkillMeta::from_md(&md))
        .map(|m| serde_json::to_value(m).unwrap_or_default())
        .unwrap_or(Value::Null);
    let detail = SkillDetail {
        name: e.name.clone(),
        scope: e.scope.to_string(),
        status: e.status.to_string(),
        active_rev: e.active_rev,
        latest_rev: e.head_rev,
        revision: info.into(),
        bundle_digest: bundle.digest().to_string(),
        files: bundle
            .files()
            .iter()
            .map(|f| FileInfo {
                path: f.path.to_string(),
                digest: f.digest.to_string(),
                size: f.bytes.len() as u64,
                executable: f.executable,
            })
            .collect(),
        skill_md: md_text,
        meta,
    };
    Ok(([etag(e.head_rev)], Json(detail)).into_response())
}

/// The files of a PUT body: JSON (`PutSkill`) or a bare SKILL.md (`text/markdown`).
/// Files as (path, bytes, executable).
type Files = Vec<(String, Vec<u8>, bool)>;

fn put_files(headers: &HeaderMap, body: &[u8]) -> ApiResult<(Files, Option<String>)> {
    match media_type(headers).as_deref() {
        Some("application/json") => {
            let req: PutSkill = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))?;
            let mut files = Vec::with_capacity(req.files.len());
            for (path, c) in req.files {
                let (bytes, exec) = match c {
                    FileContent::Text(t) => (t.into_bytes(), false),
                    FileContent::Object(FileObject {
                        text: Some(t),
                        base64: None,
                        executable,
                    }) => (t.into_bytes(), executable),
                    FileContent::Object(FileObject {
                        text: None,
                        base64: Some(b),
                        executable,
                    }) => (
                        base64::engine::general_purpose::STANDARD
                            .decode(b.as_bytes())
                            .map_err(|e| {
                                ApiError::bad_request(format!("files.{path}: bad base64: {e}"))
                            })?,
                        executable,
                    ),
                    FileContent::Object(_) => {
                        return Err(ApiError::bad_request(format!(
                            "files.{path}: give exactly one of `text` and `base64`"
                        )));
                    }
                };
                files.push((path, bytes, exec));
            }
            Ok((files, req.message))
        }
        Some("text/markdown" | "text/plain") => {
            Ok((vec![("SKILL.md".into(), body.to_vec(), false)], None))
        }
        _ => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the skill as application/json ({\"files\": {...}}) or a bare SKILL.md as text/markdown",
        )),
    }
}

fn check_message(m: Option<String>) -> ApiResult<Option<String>> {
    if let Some(m) = &m {
        skillbase_store::model::check_message(m)
            .map_err(|e| unprocessable("invalid-request", format!("message: {e}")))?;
    }
    Ok(m)
}

fn kind_str(k: &WriteKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn write_result(st: &AppState, o: &WriteOutcome) -> WriteResult {
    let index = st.store.index();
    let entry = index.get(&o.scope, &o.name);
    let latest = entry.map_or(o.rev, |e| e.head_rev);
    // The writer added what the revision requires that this server lacks.
    let warnings = o.warnings.clone();
    WriteResult {
        name: o.name.clone(),
        scope: o.scope.to_string(),
        result: kind_str(&o.kind),
        rev: o.rev,
        status: o.status.to_string(),
        latest_rev: latest,
        pending_review: o.kind == WriteKind::Pending,
        warnings,
    }
}

/// A write result from an authoring tool's answer.
/// `skill_revert` and `skill_remove` answer without a scope: the agent's own.
fn tool_write_result(
    st: &AppState,
    agent: &AgentName,
    v: &Value,
    kind: &str,
) -> ApiResult<WriteResult> {
    let name = v["name"].as_str().unwrap_or_default().to_owned();
    let own = format!("agent:{agent}");
    let scope: Scope = v["scope"]
        .as_str()
        .unwrap_or(&own)
        .parse()
        .map_err(|e: String| {
            ApiError::internal(format!("authoring tool answered a bad scope: {e}"))
        })?;
    let e = st.store.index().get(&scope, &name).cloned();
    let result = v["result"].as_str().unwrap_or(kind).to_owned();
    Ok(WriteResult {
        pending_review: v["pending_review"].as_bool().unwrap_or(result == "pending"),
        rev: v["rev"]
            .as_i64()
            .or(e.as_ref().map(|e| e.active_rev))
            .unwrap_or(0),
        status: v["status"]
            .as_str()
            .map(str::to_owned)
            .or(e.as_ref().map(|e| e.status.to_string()))
            .unwrap_or_default(),
        latest_rev: e.as_ref().map_or(0, |e| e.head_rev),
        scope: scope.to_string(),
        name,
        result,
        warnings: v["warnings"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn written(r: WriteResult) -> Response {
    let status = match r.result.as_str() {
        "created" => StatusCode::CREATED,
        "pending" => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    let mut res = (status, [etag(r.latest_rev)], Json(&r)).into_response();
    if status == StatusCode::CREATED
        && let Ok(v) = HeaderValue::from_str(&format!("/v1/skills/{}?scope={}", r.name, r.scope))
    {
        res.headers_mut().insert(header::LOCATION, v);
    }
    res
}

/// An agent token may only name its own scope.
fn own_scope(p: &Principal, raw: Option<&str>) -> ApiResult<()> {
    if let (Some(a), Some(s)) = (p.agent(), parse_scope(raw)?)
        && s != Scope::Agent(a.clone())
    {
        return Err(ApiError::forbidden(format!(
            "an agent token writes only into its own scope, agent:{a}"
        )));
    }
    Ok(())
}

/// Create or modify a skill. `If-Match: "<rev>"` makes it conditional on the latest revision
/// (412 with `current_rev` when stale); `If-None-Match: *` creates only.
///
/// With an agent token this is `skill_create` (a new name) or `skill_modify`: the agent's own
/// scope, authored `agent:<name>/inline`, capabilities within its grants, approval policy
/// applied; only SKILL.md may be sent, with the tools' fields, and fields not given keep their
/// current values; the skill's other files are kept.
#[utoipa::path(put, path = "/v1/skills/{name}", tag = "skills",
    params(("name" = String, Path), PutQuery,
        ("if-match" = Option<String>, Header, description = "\"<rev>\" from the ETag, or *"),
        ("if-none-match" = Option<String>, Header, description = "* to create only"),
        ("skillbase-session" = Option<String>, Header, description = "Agent tokens: the session the write belongs to")),
    request_body(description = "The skill's files as JSON, or a bare SKILL.md as text/markdown",
        content((PutSkill = "application/json"), (String = "text/markdown"))),
    responses(
        (status = 200, description = "Modified (or unchanged)", body = WriteResult, links(
            ("show" = (operation_id = "skills_show", parameters(("name" = "$request.path.name")))),
            ("history" = (operation_id = "skills_history", parameters(("name" = "$request.path.name")))),
            ("diff" = (operation_id = "skills_diff", parameters(("name" = "$request.path.name")))),
            ("export" = (operation_id = "skills_export", parameters(("name" = "$request.path.name")))),
            ("runs" = (operation_id = "skills_runs", parameters(("name" = "$request.path.name")))),
            ("retire" = (operation_id = "skills_retire", parameters(("name" = "$request.path.name")))),
            ("restore" = (operation_id = "skills_restore", parameters(("name" = "$request.path.name")))),
            ("disable" = (operation_id = "skills_disable", parameters(("name" = "$request.path.name")))),
            ("enable" = (operation_id = "skills_enable", parameters(("name" = "$request.path.name")))),
            ("revert" = (operation_id = "skills_revert", parameters(("name" = "$request.path.name")))),
            ("approve" = (operation_id = "approvals_approve", parameters(("name" = "$request.path.name")))))),
        (status = 201, description = "Created", body = WriteResult, links(
            ("show" = (operation_id = "skills_show", parameters(("name" = "$request.path.name")))),
            ("history" = (operation_id = "skills_history", parameters(("name" = "$request.path.name")))),
            ("diff" = (operation_id = "skills_diff", parameters(("name" = "$request.path.name")))),
            ("export" = (operation_id = "skills_export", parameters(("name" = "$request.path.name")))),
            ("runs" = (operation_id = "skills_runs", parameters(("name" = "$request.path.name")))),
            ("retire" = (operation_id = "skills_retire", parameters(("name" = "$request.path.name")))),
            ("restore" = (operation_id = "skills_restore", parameters(("name" = "$request.path.name")))),
            ("disable" = (operation_id = "skills_disable", parameters(("name" = "$request.path.name")))),
            ("enable" = (operation_id = "skills_enable", parameters(("name" = "$request.path.name")))),
            ("revert" = (operation_id = "skills_revert", parameters(("name" = "$request.path.name")))),
            ("approve" = (operation_id = "approvals_approve", parameters(("name" = "$request.path.name")))))),
        (status = 202, description = "Written, pending approval", body = WriteResult, links(
            ("show" = (operation_id = "skills_show", parameters(("name" = "$request.path.name")))),
            ("history" = (operation_id = "skills_history", parameters(("name" = "$request.path.name")))),
            ("diff" = (operation_id = "skills_diff", parameters(("name" = "$request.path.name")))),
            ("export" = (operation_id = "skills_export", parameters(("name" = "$request.path.name")))),
            ("runs" = (operation_id = "skills_runs", parameters(("name" = "$request.path.name")))),
            ("retire" = (operation_id = "skills_retire", parameters(("name" = "$request.path.name")))),
            ("restore" = (operation_id = "skills_restore", parameters(("name" = "$request.path.name")))),
            ("disable" = (operation_id = "skills_disable", parameters(("name" = "$request.path.name")))),
            ("enable" = (operation_id = "skills_enable", parameters(("name" = "$request.path.name")))),
            ("revert" = (operation_id = "skills_revert", parameters(("name" = "$request.path.name")))),
            ("approve" = (operation_id = "approvals_approve", parameters(("name" = "$request.path.name")))))),
        (status = 403, description = "Not granted", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Refused: the skill is retired, or its `version` is not higher than the active revision's and the store requires it to be ([store] versions = \"require-increase\")", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "Stale If-Match", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid skill", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
    P(name): P<String>,
    Q(q): Q<PutQuery>,
    Raw(body): Raw,
) -> ApiResult<Response> {
    let pre = precondition(&headers)?;
    let (files, json_message) = put_files(&headers, &body)?;
    let message = check_message(json_message.or(q.message))?;
    reread_for_precondition(&st, &p, pre, q.scope.as_deref(), &name).await?;
    if let Some(agent) = p.agent() {
        own_scope(&p, q.scope.as_deref())?;
        let mut md = None;
        for (path, bytes, _) in &files {
            if matches!(path.as_str(), "SKILL.md" | "skill.md") {
                md = Some(bytes);
            } else {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "file-not-writable",
                    format!(
                        "an agent token sends only SKILL.md (the skill's other files are kept); '{path}' needs an admin token"
                    ),
                ));
            }
        }
        let md = md.ok_or_else(|| unprocessable("invalid-skill", "no SKILL.md in files"))?;
        let text = std::str::from_utf8(md)
            .map_err(|_| unprocessable("invalid-skill", "SKILL.md is not valid UTF-8"))?;
        let args = authoring::tool_args(&name, text, message.as_deref())?;
        let a = Authoring::new(&st, agent, &headers).await?;
        let v = authoring::put(&a, &name, args, pre).await?;
        return Ok(written(tool_write_result(&st, agent, &v, "modified")?));
    }
    let scope = parse_scope(q.scope.as_deref())?.unwrap_or(Scope::Shared);
    let mut list = Vec::with_capacity(files.len());
    for (path, bytes, executable) in files {
        let path = BundlePath::parse(&path).map_err(StoreError::from)?;
        list.push(BundleFile {
            digest: Digest::of(&bytes),
            bytes: bytes.into(),
            path,
            executable,
        });
    }
    let bundle = Bundle::from_files(list, &st.store.limits).map_err(StoreError::from)?;
    let (declared, _) = skillbase_store::Store::check_bundle(&bundle)?;
    if declared != name {
        return Err(unprocessable(
            "name-mismatch",
            format!("the SKILL.md is named '{declared}' but the URL names '{name}'"),
        ));
    }
    let head = st
        .store
        .index()
        .get(&scope, &name)
        .map_or(0, |e| e.head_rev);
    check_precondition(&name, pre, head)?;
    let expect_rev = match pre {
        Precondition::None => None,
        Precondition::Rev(r) => Some(r),
        Precondition::Exists => Some(head),
        Precondition::Absent | Precondition::Never => Some(0),
    };
    let o = st
        .engine
        .writer()
        .put(PutRequest {
            scope,
            bundle,
            author: p.author(),
            message: message.unwrap_or_default(),
            expect_rev,
            signature: None,
        })
        .await
        .map_err(|e| match e {
            // The record was created by someone else between the check and the write.
            StoreError::NotFound { .. } if expect_rev.is_some() => stale(&name, 0),
            e => e.into(),
        })?;
    Ok(written(write_result(&st, &o)))
}

/// Every revision of a skill, oldest first.
#[utoipa::path(get, path = "/v1/skills/{name}/history", tag = "skills",
    params(("name" = String, Path), ScopeQuery),
    responses((status = 200, body = Vec<Revision>),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn history(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<ScopeQuery>,
) -> ApiResult<Json<Vec<Revision>>> {
    let e = readable(&st, &p, &name, parse_scope(q.scope.as_deref())?)?;
    let h = st.store.history(&e.scope, &e.name).await?;
    Ok(Json(h.into_iter().map(Revision::from).collect()))
}

/// A unified diff between two revisions.
#[utoipa::path(get, path = "/v1/skills/{name}/diff", tag = "skills",
    params(("name" = String, Path), DiffQuery),
    responses((status = 200, body = DiffResult),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn diff(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<DiffQuery>,
) -> ApiResult<Json<DiffResult>> {
    let e = readable(&st, &p, &name, parse_scope(q.scope.as_deref())?)?;
    let to = q.to.unwrap_or(e.head_rev);
    let d = st.store.diff(&e.scope, &e.name, q.from, to).await?;
    Ok(Json(DiffResult {
        from: q.from,
        to,
        diff: d,
    }))
}

/// Re-activate an earlier revision (recorded; history is never rewritten). Agent tokens:
/// `skill_revert`, on the agent's own records only.
#[utoipa::path(post, path = "/v1/skills/{name}/revert", tag = "skills",
    params(("name" = String, Path), ScopeQuery,
        ("if-match" = Option<String>, Header, description = "\"<rev>\" from the ETag"),
        ("skillbase-session" = Option<String>, Header, description = "Agent tokens: the session the write belongs to")),
    request_body = RevBody,
    responses((status = 200, body = WriteResult),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The skill is retired", body = Problem, content_type = "application/problem+json"),
        (status = 412, body = Problem, content_type = "application/problem+json")))]
pub async fn revert(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
    P(name): P<String>,
    Q(q): Q<ScopeQuery>,
    Body(b): Body<RevBody>,
) -> ApiResult<Response> {
    let pre = precondition(&headers)?;
    reread_for_precondition(&st, &p, pre, q.scope.as_deref(), &name).await?;
    if let Some(agent) = p.agent() {
        own_scope(&p, q.scope.as_deref())?;
        let a = Authoring::new(&st, agent, &headers).await?;
        let head = a.own_head(&name);
        if head == 0 {
            return Err(hidden(&name));
        }
        check_precondition(&name, pre, head)?;
        let v = a
            .call("skill_revert", json!({"name": name, "rev": b.rev}), &name)
            .await?;
        return Ok(written(tool_write_result(&st, agent, &v, "reverted")?));
    }
    let scope = parse_scope(q.scope.as_deref())?.unwrap_or(Scope::Shared);
    let head = existing_head(&st, &scope, &name)?;
    check_precondition(&name, pre, head)?;
    let o = st
        .engine
        .writer()
        .revert(&scope, &name, b.rev, &p.author())
        .await?;
    Ok(written(write_result(&st, &o)))
}

fn existing_head(st: &AppState, scope: &Scope, name: &str) -> ApiResult<i64> {
    st.store
        .index()
        .get(scope, name)
        .map(|e| e.head_rev)
        .ok_or_else(|| {
            StoreError::NotFound {
                scope: scope.clone(),
                name: name.to_owned(),
            }
            .into()
        })
}

#[derive(Clone, Copy)]
enum Change {
    Retire,
    Restore,
    Disable,
    Enable,
}

async fn change_status(
    st: &AppState,
    p: &Principal,
    headers: &HeaderMap,
    name: &str,
    scope: Option<&str>,
    body: &[u8],
    change: Change,
) -> ApiResult<Response> {
    let change = match change {
        Change::Retire => StatusChange::Retire,
        Change::Restore => StatusChange::Restore,
        Change::Disable => StatusChange::Disable,
        Change::Enable => StatusChange::Enable,
    };
    let pre = precondition(headers)?;
    let b: StatusBody = optional_json(headers, body)?;
    let reason = check_message(b.reason)
        .map_err(|e| ApiError {
            detail: e.detail.replacen("message:", "reason:", 1),
            ..e
        })?
        .map(Value::String)
        .unwrap_or(Value::Null);
    reread_for_precondition(st, p, pre, scope, name).await?;
    if let Some(agent) = p.agent() {
        if change != StatusChange::Retire {
            p.require_admin()?;
        }
        own_scope(p, scope)?;
        let a = Authoring::new(st, agent, headers).await?;
        let head = a.own_head(name);
        if head == 0 {
            return Err(hidden(name));
        }
        check_precondition(name, pre, head)?;
        let v = a.call("skill_remove", json!({"name": name}), name).await?;
        return Ok(written(tool_write_result(st, agent, &v, "status")?));
    }
    let scope = parse_scope(scope)?.unwrap_or(Scope::Shared);
    let head = existing_head(st, &scope, name)?;
    check_precondition(name, pre, head)?;
    // The store's transition table decides (one for every surface), inside the write.
    // The check above answers at once; the store checks again inside the write, so two
    // writers with the same If-Match cannot both win.
    let expect = match pre {
        Precondition::Rev(r) => Some(r),
        _ => None,
    };
    let o = st
        .engine
        .writer()
        .set_status(
            &scope,
            name,
            change,
            &p.author(),
            json!({"reason": reason}),
            expect,
        )
        .await?;
    Ok(written(write_result(st, &o)))
}

macro_rules! status_route {
    ($fn:ident, $path:literal, $change:expr, $doc:literal) => {
        #[doc = $doc]
        #[utoipa::path(post, path = $path, tag = "skills",
            params(("name" = String, Path), ScopeQuery,
                ("if-match" = Option<String>, Header, description = "\"<rev>\" from the ETag"),
                ("skillbase-session" = Option<String>, Header, description = "Agent tokens (retire): the session the write belongs to")),
            request_body(content = Option<StatusBody>, description = "Optional: why"),
            responses((status = 200, body = WriteResult),
                (status = 403, body = Problem, content_type = "application/problem+json"),
                (status = 404, body = Problem, content_type = "application/problem+json"),
                (status = 409, body = Problem, content_type = "application/problem+json"),
                (status = 412, body = Problem, content_type = "application/problem+json"),
                (status = 422, description = "A reason that breaks the message rule", body = Problem, content_type = "application/problem+json")))]
        pub async fn $fn(
            State(st): State<Arc<AppState>>,
            Caller(p): Caller,
            headers: HeaderMap,
            P(name): P<String>,
            Q(q): Q<ScopeQuery>,
            Raw(body): Raw,
        ) -> ApiResult<Response> {
            change_status(&st, &p, &headers, &name, q.scope.as_deref(), &body, $change).await
        }
    };
}

status_route!(
    retire,
    "/v1/skills/{name}/retire",
    Change::Retire,
    "Retire a skill (a soft delete: history is kept). Agent tokens: `skill_remove`, own records only."
);
status_route!(
    restore,
    "/v1/skills/{name}/restore",
    Change::Restore,
    "Restore a retired skill. Admin only."
);
status_route!(
    disable,
    "/v1/skills/{name}/disable",
    Change::Disable,
    "Disable a skill (no agent sees it until enabled). Admin only."
);
status_route!(
    enable,
    "/v1/skills/{name}/enable",
    Change::Enable,
    "Enable a disabled (or pending) skill. Admin only."
);

/// One revision as a zip archive (the files under a folder named after the skill).
#[utoipa::path(get, path = "/v1/skills/{name}/export", tag = "skills",
    params(("name" = String, Path), RevQuery),
    responses((status = 200, description = "The zip archive", content_type = "application/zip", body = Vec<u8>),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn export(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<RevQuery>,
) -> ApiResult<Response> {
    let e = readable(&st, &p, &name, parse_scope(q.scope.as_deref())?)?;
    let (info, bundle) = st.store.bundle(&e.scope, &e.name, q.rev).await?;
    let root = e.name.clone();
    let bytes = tokio::task::spawn_blocking(move || {
        bundle
            .to_zip(std::io::Cursor::new(Vec::new()), Some(&root))
            .map(|c| c.into_inner())
    })
    .await
    .map_err(|e| ApiError::internal(format!("zip task failed: {e}")))?
    .map_err(StoreError::from)?;
    let disposition = format!("attachment; filename=\"{}-r{}.zip\"", e.name, info.rev);
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
            (
                header::HeaderName::from_static("skillbase-revision"),
                info.rev.to_string(),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// Import a zip of one skill or many (one folder per skill): every skill is checked before
/// anything is written, and the import lands whole or not at all. Admin only.
#[utoipa::path(post, path = "/v1/imports", tag = "skills", params(ImportQuery),
    request_body(content = Vec<u8>, content_type = "application/zip"),
    responses((status = 200, body = ImportResult),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Refused, nothing written: a skill is retired, or its `version` is not higher than the active revision's and the store requires it to be", body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 415, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A skill or the archive broke a rule; nothing was written", body = Problem, content_type = "application/problem+json")))]
pub async fn import(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    headers: HeaderMap,
    Q(q): Q<ImportQuery>,
    Raw(body): Raw,
) -> ApiResult<Json<ImportResult>> {
    p.require_admin()?;
    if !(content_type_is(&headers, "application/zip")
        || content_type_is(&headers, "application/octet-stream"))
    {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the archive as Content-Type: application/zip",
        ));
    }
    let scope = parse_scope(q.scope.as_deref())?.unwrap_or(Scope::Shared);
    let message = check_message(q.message)?.unwrap_or_else(|| "imported".into());
    let limits = PackLimits {
        skill: st.store.limits,
        max_zip_bytes: st.options.limits.upload_bytes as u64,
        max_skills: 10_000,
    };
    let bundles = tokio::task::spawn_blocking(move || read_zip_pack(&body, &limits))
        .await
        .map_err(|e| ApiError::internal(format!("import task failed: {e}")))??;
    let author = Author::Import(format!("upload by {}", p.author()));
    let items = bundles.into_iter().map(|b| (b, None, None)).collect();
    let report = st
        .engine
        .writer()
        .import(&scope, items, &author, &message, &|_| {})
        .await?;
    Ok(Json(ImportResult {
        outcomes: report
            .outcomes
            .iter()
            .map(|o| write_result(&st, o))
            .collect(),
        created: report.created,
        changed: report.changed,
        unchanged: report.unchanged,
    }))
}

/// Recent runs of a skill, newest first. Agent tokens see their own agent's runs only.
#[utoipa::path(get, path = "/v1/skills/{name}/runs", tag = "skills",
    params(("name" = String, Path), RunsQuery),
    responses((status = 200, body = Vec<Run>),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn runs(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<RunsQuery>,
) -> ApiResult<Json<Vec<Run>>> {
    let e = readable(&st, &p, &name, parse_scope(q.scope.as_deref())?)?;
    let limit = q.limit.unwrap_or(20).clamp(1, 500);
    // Run counters are written behind with the events: what this server counted is stored first.
    st.engine.flush().await;
    let mut runs = st.store.runs(&e.scope, &e.name, limit).await?;
    if let Some(a) = p.agent() {
        runs.retain(|r| r.agent == a.as_str());
    }
    Ok(Json(runs.into_iter().map(Run::from).collect()))
}

/// Approve a pending revision: it becomes committed and active. Admin only.
#[utoipa::path(post, path = "/v1/skills/{name}/approve", tag = "approvals",
    params(("name" = String, Path), ScopeQuery),
    request_body = RevBody,
    responses((status = 200, body = WriteResult),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The revision is not pending approval", body = Problem, content_type = "application/problem+json")))]
pub async fn approve(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(name): P<String>,
    Q(q): Q<ScopeQuery>,
    Body(b): Body<RevBody>,
) -> ApiResult<Response> {
    p.require_admin()?;
    let scope = parse_scope(q.scope.as_deref())?.unwrap_or(Scope::Shared);
    let o = st
        .engine
        .writer()
        .approve(&scope, &name, b.rev, &p.author())
        .await?;
    Ok(written(write_result(&st, &o)))
}

/// Revisions waiting for approval, in every scope. Admin only.
#[utoipa::path(get, path = "/v1/approvals", tag = "approvals",
    responses((status = 200, body = Vec<PendingRevision>),
        (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn approvals(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
) -> ApiResult<Json<Vec<PendingRevision>>> {
    p.require_admin()?;
    let index = st.store.index();
    // Only records with a revision past the active one (or created pending) can hold one.
    let mut candidates: Vec<&Arc<SkillEntry>> = index
        .all()
        .filter(|e| e.status == Status::Pending || e.head_rev > e.active_rev)
        .collect();
    candidates.sort_by(|a, b| {
        (a.name.as_str(), a.scope.to_string()).cmp(&(b.name.as_str(), b.scope.to_string()))
    });
    let mut out = Vec::new();
    for e in candidates {
        for r in st.store.history(&e.scope, &e.name).await? {
            if r.state == "pending" {
                out.push(PendingRevision {
                    scope: e.scope.to_string(),
                    name: e.name.clone(),
                    rev: r.rev,
                    author: r.author,
                    message: r.message,
                    digest: r.digest,
                    created_at: r.created_at,
                });
            }
        }
    }
    Ok(Json(out))
}
