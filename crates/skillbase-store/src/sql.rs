//! The SQL of the store, written once and compiled for each backend.
//!
//! Both backends accept `$N` placeholders, so the statements are shared; the differences are the
//! write transaction (`BEGIN IMMEDIATE` takes SQLite's write lock up front) and row locking
//! (`FOR UPDATE` on PostgreSQL).

use crate::model::Scope;

/// The runtime's own event kinds (calls, activations, turns, runs, tokens): none of them changes
/// the index or the agents, so `sync_changes` skips them. A new kind of the runtime's is added
/// here, and needs no migration (the `changes_index` column records the answer per event).
pub const RUNTIME_KINDS: &[&str] = &[
    "tool_called",
    "call_refused",
    "call_started",
    "call_finished",
    "skill_activated",
    "skill_evicted",
    "turn",
    "catalog_truncated",
    "run_finished",
    "token_created",
    "token_revoked",
];

/// Whether an event of `kind` can change the index or the agents (what other servers must
/// apply). Every kind but the runtime's own: an unknown kind counts as changing, so a new kind of
/// write is never missed by `sync_changes` (at worst a server re-reads a record for nothing).
pub fn changes_index(kind: &str) -> bool {
    !RUNTIME_KINDS.contains(&kind)
}

/// A run to open: the skill revision that will drive a session.
pub struct RunStart<'a> {
    pub agent: &'a str,
    pub skill_id: i64,
    pub scope: &'a str,
    pub skill: &'a str,
    pub rev: i64,
}

/// Which statuses activating a revision brings back to `active`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Revive {
    /// Approval: a skill waiting for review.
    Pending,
    /// Revert: also a skill disabled (for drift, say).
    DisabledOrPending,
}

/// One skill record joined with its active revision, as loaded from the database.
#[derive(Debug, Clone)]
pub(crate) struct RawEntry {
    pub id: i64,
    pub scope: String,
    pub name: String,
    pub status: String,
    pub active_rev: i64,
    pub head_rev: i64,
    pub seed_path: Option<String>,
    pub updated_at: i64,
    pub digest: String,
    pub author: String,
    pub skill_md: Vec<u8>,
    pub files: Vec<(String, String, bool, i64)>,
}

/// A revision to write.
#[derive(Debug, Clone)]
pub(crate) struct WriteReq {
    pub scope: Scope,
    pub name: String,
    pub bundle: skillbase_format::Bundle,
    pub author: String,
    pub message: String,
    pub expect_rev: Option<i64>,
    /// Seed folder to follow (`Some` for seed writes); other writes stop following.
    pub seed_path: Option<String>,
    /// Write as pending (awaiting approval) instead of activating.
    pub pending: bool,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    Created,
    Modified,
    Unchanged,
    Pending,
    Reverted,
    Status,
}

/// The result of a write: which record, and the revision now active.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WriteOutcome {
    pub scope: Scope,
    pub name: String,
    pub kind: WriteKind,
    /// The revision this write produced or activated (or the active one, when unchanged).
    pub rev: i64,
    pub status: crate::model::Status,
}

/// A revision's record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RevisionInfo {
    pub rev: i64,
    pub digest: String,
    pub author: String,
    pub message: String,
    pub state: String,
    pub created_at: i64,
    pub active: bool,
}

/// An event to append.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct NewEvent {
    pub kind: String,
    pub scope: Option<String>,
    pub skill: Option<String>,
    pub rev: Option<i64>,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub actor: Option<String>,
    pub data: serde_json::Value,
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EventRecord {
    pub id: i64,
    pub at: i64,
    pub kind: String,
    pub scope: Option<String>,
    pub skill: Option<String>,
    pub rev: Option<i64>,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub actor: Option<String>,
    pub data: serde_json::Value,
}

/// A stored session: which agent it belongs to and what it activated, in order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionRecord {
    pub id: String,
    pub agent: String,
    pub created_at: i64,
    pub activations: Vec<ActivationRecord>,
}

/// One activation in a session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ActivationRecord {
    pub scope: String,
    pub skill: String,
    pub rev: i64,
    pub reason: String,
    pub at: i64,
    /// The arguments it was loaded with, as JSON (vault values already redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// An API token as stored: only the SHA-256 of its secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenRecord {
    pub id: i64,
    pub label: String,
    /// Lowercase hex SHA-256 of the secret; never the secret itself.
    #[serde(skip)]
    pub hash: String,
    /// The agent the token is bound to; `None` for an admin token.
    pub agent: Option<String>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A vault entry as stored: the value only in encrypted form.
#[derive(Clone, PartialEq, Eq)]
pub struct VaultRow {
    pub name: String,
    pub description: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
    pub updated_at: i64,
}

impl std::fmt::Debug for VaultRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultRow")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// One run of a skill revision in a session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunRecord {
    pub id: i64,
    pub session: String,
    pub agent: String,
    pub skill_id: i64,
    pub scope: String,
    pub skill: String,
    pub rev: i64,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    /// `success`, `failure`, or `superseded` (another skill took over); `None` while open.
    pub outcome: Option<String>,
    pub note: String,
    pub calls: i64,
    pub failed_calls: i64,
}

type RunRow = (
    i64,
    String,
    String,
    i64,
    String,
    String,
    i64,
    i64,
    Option<i64>,
    Option<String>,
    String,
    i64,
    i64,
);

pub(crate) fn run_from_row(r: RunRow) -> RunRecord {
    RunRecord {
        id: r.0,
        session: r.1,
        agent: r.2,
        skill_id: r.3,
        scope: r.4,
        skill: r.5,
        rev: r.6,
        started_at: r.7,
        ended_at: r.8,
        outcome: r.9,
        note: r.10,
        calls: r.11,
        failed_calls: r.12,
    }
}

/// Which events to read.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub after_id: Option<i64>,
    pub scope: Option<String>,
    pub skill: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub kind: Option<String>,
    pub limit: Option<i64>,
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

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

pub(crate) fn event_from_row(r: EventRow) -> EventRecord {
    EventRecord {
        id: r.0,
        at: r.1,
        kind: r.2,
        scope: r.3,
        skill: r.4,
        rev: r.5,
        agent: r.6,
        session: r.7,
        actor: r.8,
        data: serde_json::from_str(&r.9).unwrap_or(serde_json::Value::Null),
    }
}

macro_rules! backend {
    ($module:ident, $db:ty, $begin:literal, $lock:literal) => {
        pub(crate) mod $module {
            use super::*;
            use crate::error::{Result, StoreError};
            use crate::model::{AgentConfig, AgentName, Status, StatusChange};
            use sqlx::{Pool, Transaction};

            type Db = $db;

            const ENTRY_COLUMNS: &str = "SELECT s.id, s.scope, s.name, s.status, s.active_rev, s.head_rev, s.seed_path, s.updated_at, r.bundle_digest, r.author \
                 FROM skills s JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev";

            type EntryRow = (i64, String, String, String, i64, i64, Option<String>, i64, String, String);

            fn entry(r: EntryRow) -> RawEntry {
                RawEntry {
                    id: r.0,
                    scope: r.1,
                    name: r.2,
                    status: r.3,
                    active_rev: r.4,
                    head_rev: r.5,
                    seed_path: r.6,
                    updated_at: r.7,
                    digest: r.8,
                    author: r.9,
                    skill_md: Vec::new(),
                    files: Vec::new(),
                }
            }

            /// Every skill record with its active revision's files and SKILL.md.
            pub async fn load_all(pool: &Pool<Db>) -> Result<Vec<RawEntry>> {
                let _ = ENTRY_COLUMNS;
                let rows: Vec<EntryRow> = sqlx::query_as(concat!(
                    "SELECT s.id, s.scope, s.name, s.status, s.active_rev, s.head_rev, s.seed_path, s.updated_at, r.bundle_digest, r.author ",
                    "FROM skills s JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev ORDER BY s.id"
                ))
                .fetch_all(pool)
                .await?;
                let mut entries: Vec<RawEntry> = rows.into_iter().map(entry).collect();
                let pos: std::collections::HashMap<i64, usize> =
                    entries.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
                // One pass over the active files, SKILL.md bytes included: each blob row is
                // visited once, and no ORDER BY (the files are sorted below).
                let files: Vec<(i64, String, String, bool, i64, Option<Vec<u8>>)> = sqlx::query_as(concat!(
                    "SELECT f.skill_id, f.path, f.digest, f.executable, b.size, ",
                    "CASE WHEN f.path IN ('SKILL.md', 'skill.md') THEN b.bytes ELSE NULL END ",
                    "FROM revision_files f JOIN skills s ON s.id = f.skill_id AND s.active_rev = f.rev ",
                    "JOIN blobs b ON b.digest = f.digest"
                ))
                .fetch_all(pool)
                .await?;
                for (id, path, digest, exec, size, bytes) in files {
                    if let Some(&i) = pos.get(&id) {
                        let e = &mut entries[i];
                        // SKILL.md wins over skill.md.
                        if let Some(b) = bytes
                            && (e.skill_md.is_empty() || path == "SKILL.md")
                        {
                            e.skill_md = b;
                        }
                        e.files.push((path, digest, exec, size));
                    }
                }
                for e in &mut entries {
                    e.files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                }
                Ok(entries)
            }

            /// One record with its active revision.
            pub async fn load_one(pool: &Pool<Db>, scope: &str, name: &str) -> Result<Option<RawEntry>> {
                let row: Option<EntryRow> = sqlx::query_as(concat!(
                    "SELECT s.id, s.scope, s.name, s.status, s.active_rev, s.head_rev, s.seed_path, s.updated_at, r.bundle_digest, r.author ",
                    "FROM skills s JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev ",
                    "WHERE s.scope = $1 AND s.name = $2"
                ))
                .bind(scope)
                .bind(name)
                .fetch_optional(pool)
                .await?;
                let Some(row) = row else { return Ok(None) };
                let mut e = entry(row);
                let files: Vec<(String, String, bool, i64, Option<Vec<u8>>)> = sqlx::query_as(concat!(
                    "SELECT f.path, f.digest, f.executable, b.size, ",
                    "CASE WHEN f.path IN ('SKILL.md', 'skill.md') THEN b.bytes ELSE NULL END ",
                    "FROM revision_files f JOIN blobs b ON b.digest = f.digest ",
                    "WHERE f.skill_id = $1 AND f.rev = $2 ORDER BY f.path"
                ))
                .bind(e.id)
                .bind(e.active_rev)
                .fetch_all(pool)
                .await?;
                for (path, digest, exec, size, bytes) in files {
                    if let Some(b) = bytes
                        && (e.skill_md.is_empty() || path == "SKILL.md")
                    {
                        e.skill_md = b;
                    }
                    e.files.push((path, digest, exec, size));
                }
                Ok(Some(e))
            }

            type SkillRow = (i64, i64, i64, String, Option<String>);

            async fn lock_skill(
                tx: &mut Transaction<'static, Db>,
                scope: &str,
                name: &str,
            ) -> Result<Option<SkillRow>> {
                Ok(sqlx::query_as(concat!(
                    "SELECT id, head_rev, active_rev, status, seed_path FROM skills WHERE scope = $1 AND name = $2",
                    $lock
                ))
                .bind(scope)
                .bind(name)
                .fetch_optional(&mut **tx)
                .await?)
            }

            async fn rev_digest(tx: &mut Transaction<'static, Db>, id: i64, rev: i64) -> Result<Option<(String, String)>> {
                Ok(sqlx::query_as("SELECT bundle_digest, author FROM revisions WHERE skill_id = $1 AND rev = $2")
                    .bind(id)
                    .bind(rev)
                    .fetch_optional(&mut **tx)
                    .await?)
            }

            pub async fn insert_event(tx: &mut Transaction<'static, Db>, ev: &NewEvent, at: i64) -> Result<()> {
                sqlx::query(concat!(
                    "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) ",
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
                ))
                .bind(at)
                .bind(&ev.kind)
                .bind(&ev.scope)
                .bind(&ev.skill)
                .bind(ev.rev)
                .bind(&ev.agent)
                .bind(&ev.session)
                .bind(&ev.actor)
                .bind(ev.data.to_string())
                .bind(crate::sql::changes_index(&ev.kind))
                .execute(&mut **tx)
                .await?;
                Ok(())
            }

            async fn write_in(tx: &mut Transaction<'static, Db>, req: &WriteReq, now: i64) -> Result<WriteOutcome> {
                let scope = req.scope.to_string();
                let digest = req.bundle.digest().to_string();
                let existing = lock_skill(tx, &scope, &req.name).await?;
                let (id, rev, kind) = match existing {
                    Some((id, head, active, status, _seed)) => {
                        let status: Status = status.parse().map_err(StoreError::Corrupt)?;
                        if let Some(expected) = req.expect_rev
                            && expected != head
                        {
                            let winner = rev_digest(tx, id, head).await?.map(|(_, a)| a).unwrap_or_default();
                            return Err(StoreError::Conflict {
                                name: req.name.clone(),
                                expected,
                                actual: head,
                                winner,
                            });
                        }
                        if status == Status::Retired {
                            return Err(StoreError::Retired { name: req.name.clone() });
                        }
                        let active_digest = rev_digest(tx, id, active).await?.map(|(d, _)| d);
                        if active_digest.as_deref() == Some(digest.as_str()) {
                            return Ok(WriteOutcome {
                                scope: req.scope.clone(),
                                name: req.name.clone(),
                                kind: WriteKind::Unchanged,
                                rev: active,
                                status,
                            });
                        }
                        (id, head + 1, if req.pending { WriteKind::Pending } else { WriteKind::Modified })
                    }
                    None => {
                        if let Some(expected) = req.expect_rev
                            && expected != 0
                        {
                            return Err(StoreError::NotFound { scope: req.scope.clone(), name: req.name.clone() });
                        }
                        let id: i64 = sqlx::query_scalar(concat!(
                            "INSERT INTO skills (scope, name, status, active_rev, head_rev, seed_path, created_at, updated_at) ",
                            "VALUES ($1, $2, $5, 1, 0, $3, $4, $4) RETURNING id"
                        ))
                        .bind(&scope)
                        .bind(&req.name)
                        .bind(&req.seed_path)
                        .bind(now)
                        .bind(if req.pending { "pending" } else { "active" })
                        .fetch_one(&mut **tx)
                        .await?;
                        (id, 1, WriteKind::Created)
                    }
                };
                for f in req.bundle.files() {
                    sqlx::query("INSERT INTO blobs (digest, size, bytes) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING")
                        .bind(f.digest.to_string())
                        .bind(f.bytes.len() as i64)
                        .bind(&f.bytes[..])
                        .execute(&mut **tx)
                        .await?;
                }
                let state = if req.pending { "pending" } else { "committed" };
                sqlx::query(concat!(
                    "INSERT INTO revisions (skill_id, rev, bundle_digest, author, message, state, created_at) ",
                    "VALUES ($1, $2, $3, $4, $5, $6, $7)"
                ))
                .bind(id)
                .bind(rev)
                .bind(&digest)
                .bind(&req.author)
                .bind(&req.message)
                .bind(state)
                .bind(now)
                .execute(&mut **tx)
                .await?;
                for f in req.bundle.files() {
                    sqlx::query("INSERT INTO revision_files (skill_id, rev, path, digest, executable) VALUES ($1, $2, $3, $4, $5)")
                        .bind(id)
                        .bind(rev)
                        .bind(f.path.as_str())
                        .bind(f.digest.to_string())
                        .bind(f.executable)
                        .execute(&mut **tx)
                        .await?;
                }
                let kind = if req.pending && kind == WriteKind::Created {
                    sqlx::query("UPDATE skills SET head_rev = 1, active_rev = 1 WHERE id = $1")
                        .bind(id)
                        .execute(&mut **tx)
                        .await?;
                    WriteKind::Pending
                } else {
                    kind
                };
                let status = if kind == WriteKind::Pending {
                    sqlx::query("UPDATE skills SET head_rev = $1, updated_at = $2 WHERE id = $3")
                        .bind(rev)
                        .bind(now)
                        .bind(id)
                        .execute(&mut **tx)
                        .await?;
                    let s: String = sqlx::query_scalar("SELECT status FROM skills WHERE id = $1").bind(id).fetch_one(&mut **tx).await?;
                    s.parse().map_err(StoreError::Corrupt)?
                } else {
                    sqlx::query("UPDATE skills SET head_rev = $1, active_rev = $1, seed_path = $2, updated_at = $3 WHERE id = $4")
                        .bind(rev)
                        .bind(&req.seed_path)
                        .bind(now)
                        .bind(id)
                        .execute(&mut **tx)
                        .await?;
                    let s: String = sqlx::query_scalar("SELECT status FROM skills WHERE id = $1").bind(id).fetch_one(&mut **tx).await?;
                    s.parse().map_err(StoreError::Corrupt)?
                };
                insert_event(
                    tx,
                    &NewEvent {
                        kind: if kind == WriteKind::Pending { "revision_pending".into() } else { "revision_written".into() },
                        scope: Some(scope),
                        skill: Some(req.name.clone()),
                        rev: Some(rev),
                        actor: Some(req.author.clone()),
                        data: serde_json::json!({"digest": digest, "message": req.message, "created": kind == WriteKind::Created}),
                        ..NewEvent::default()
                    },
                    now,
                )
                .await?;
                Ok(WriteOutcome { scope: req.scope.clone(), name: req.name.clone(), kind, rev, status })
            }

            /// Rows per multi-row INSERT (well under SQLite's 32,766 bound parameters).
            const CHUNK: usize = 400;

            /// The import path: the same writes as `write_in` for many skills of one scope, with
            /// one lookup of the scope and multi-row inserts, so 10,000 skills take a few hundred
            /// statements instead of a hundred thousand.
            async fn write_bulk(
                tx: &mut Transaction<'static, Db>,
                scope: &Scope,
                reqs: &[WriteReq],
                now: i64,
                progress: &(dyn Fn(usize) + Sync),
            ) -> Result<Vec<WriteOutcome>> {
                use sqlx::QueryBuilder;
                let scope_s = scope.to_string();
                let rows: Vec<(i64, String, i64, i64, String, String)> = sqlx::query_as(concat!(
                    "SELECT s.id, s.name, s.head_rev, s.active_rev, s.status, r.bundle_digest FROM skills s ",
                    "JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev WHERE s.scope = $1",
                    $lock
                ))
                .bind(&scope_s)
                .fetch_all(&mut **tx)
                .await?;
                let existing: std::collections::HashMap<String, (i64, i64, i64, String, String)> = rows
                    .into_iter()
                    .map(|(id, name, head, active, status, digest)| (name, (id, head, active, status, digest)))
                    .collect();
                // Classify every request.
                let mut out: Vec<Option<WriteOutcome>> = vec![None; reqs.len()];
                let mut new_idx: Vec<usize> = Vec::new();
                let mut changed: Vec<(usize, i64, i64)> = Vec::new(); // (req, skill id, rev)
                for (i, r) in reqs.iter().enumerate() {
                    let digest = r.bundle.digest().to_string();
                    match existing.get(&r.name) {
                        None => new_idx.push(i),
                        Some((_, head, _, _, _)) if r.expect_rev == Some(0) => {
                            return Err(StoreError::Conflict {
                                name: r.name.clone(),
                                expected: 0,
                                actual: *head,
                                winner: String::new(),
                            });
                        }
                        Some((id, head, active, status, active_digest)) => {
                            let status: Status = status.parse().map_err(StoreError::Corrupt)?;
                            if status == Status::Retired {
                                return Err(StoreError::Retired { name: r.name.clone() });
                            }
                            if *active_digest == digest {
                                out[i] = Some(WriteOutcome { scope: scope.clone(), name: r.name.clone(), kind: WriteKind::Unchanged, rev: *active, status });
                            } else {
                                changed.push((i, *id, head + 1));
                                out[i] = Some(WriteOutcome { scope: scope.clone(), name: r.name.clone(), kind: WriteKind::Modified, rev: head + 1, status });
                            }
                        }
                    }
                }
                // New records, with their ids.
                let mut ids: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
                for chunk in new_idx.chunks(CHUNK) {
                    let mut q: QueryBuilder<Db> = QueryBuilder::new(
                        "INSERT INTO skills (scope, name, status, active_rev, head_rev, seed_path, created_at, updated_at) ",
                    );
                    q.push_values(chunk, |mut b, &i| {
                        b.push_bind(scope_s.clone())
                            .push_bind(reqs[i].name.clone())
                            .push_bind("active")
                            .push_bind(1i64)
                            .push_bind(1i64)
                            .push_bind(reqs[i].seed_path.clone())
                            .push_bind(now)
                            .push_bind(now);
                    });
                    q.push(" RETURNING id, name");
                    let got: Vec<(i64, String)> = q.build_query_as().fetch_all(&mut **tx).await?;
                    ids.extend(got.into_iter().map(|(id, name)| (name, id)));
                }
                let mut writes: Vec<(usize, i64, i64)> = changed.clone();
                for &i in &new_idx {
                    let id = *ids.get(&reqs[i].name).ok_or_else(|| StoreError::Corrupt(format!("no id returned for '{}'", reqs[i].name)))?;
                    writes.push((i, id, 1));
                    out[i] = Some(WriteOutcome { scope: scope.clone(), name: reqs[i].name.clone(), kind: WriteKind::Created, rev: 1, status: Status::Active });
                }
                writes.sort_unstable();
                // Blobs, stored once.
                let mut seen = std::collections::HashSet::new();
                let blobs: Vec<&skillbase_format::BundleFile> = writes
                    .iter()
                    .flat_map(|(i, _, _)| reqs[*i].bundle.files())
                    .filter(|f| seen.insert(f.digest))
                    .collect();
                for chunk in blobs.chunks(CHUNK) {
                    let mut q: QueryBuilder<Db> = QueryBuilder::new("INSERT INTO blobs (digest, size, bytes) ");
                    q.push_values(chunk, |mut b, f| {
                        b.push_bind(f.digest.to_string())
                            .push_bind(f.bytes.len() as i64)
                            .push_bind(f.bytes.to_vec());
                    });
                    q.push(" ON CONFLICT (digest) DO NOTHING");
                    q.build().execute(&mut **tx).await?;
                }
                for chunk in writes.chunks(CHUNK) {
                    let mut q: QueryBuilder<Db> = QueryBuilder::new(
                        "INSERT INTO revisions (skill_id, rev, bundle_digest, author, message, state, created_at) ",
                    );
                    q.push_values(chunk, |mut b, &(i, id, rev)| {
                        b.push_bind(id)
                            .push_bind(rev)
                            .push_bind(reqs[i].bundle.digest().to_string())
                            .push_bind(reqs[i].author.clone())
                            .push_bind(reqs[i].message.clone())
                            .push_bind("committed")
                            .push_bind(now);
                    });
                    q.build().execute(&mut **tx).await?;
                    let files: Vec<(i64, i64, &skillbase_format::BundleFile)> = chunk
                        .iter()
                        .flat_map(|&(i, id, rev)| reqs[i].bundle.files().iter().map(move |f| (id, rev, f)))
                        .collect();
                    for fchunk in files.chunks(CHUNK) {
                        let mut q: QueryBuilder<Db> = QueryBuilder::new(
                            "INSERT INTO revision_files (skill_id, rev, path, digest, executable) ",
                        );
                        q.push_values(fchunk, |mut b, &(id, rev, f)| {
                            b.push_bind(id)
                                .push_bind(rev)
                                .push_bind(f.path.as_str().to_owned())
                                .push_bind(f.digest.to_string())
                                .push_bind(f.executable);
                        });
                        q.build().execute(&mut **tx).await?;
                    }
                    let mut q: QueryBuilder<Db> = QueryBuilder::new(
                        "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) ",
                    );
                    q.push_values(chunk, |mut b, &(i, _, rev)| {
                        let data = serde_json::json!({"digest": reqs[i].bundle.digest().to_string(), "message": reqs[i].message, "created": rev == 1});
                        b.push_bind(now)
                            .push_bind("revision_written")
                            .push_bind(scope_s.clone())
                            .push_bind(reqs[i].name.clone())
                            .push_bind(rev)
                            .push_bind(Option::<String>::None)
                            .push_bind(Option::<String>::None)
                            .push_bind(reqs[i].author.clone())
                            .push_bind(data.to_string())
                            .push_bind(true);
                    });
                    q.build().execute(&mut **tx).await?;
                    progress(chunk.last().map_or(0, |c| c.0 + 1));
                }
                for &(_, id, rev) in &changed {
                    sqlx::query("UPDATE skills SET head_rev = $1, active_rev = $1, seed_path = NULL, updated_at = $2 WHERE id = $3")
                        .bind(rev)
                        .bind(now)
                        .bind(id)
                        .execute(&mut **tx)
                        .await?;
                }
                progress(reqs.len());
                Ok(out.into_iter().map(|o| o.expect("every request classified")).collect())
            }

            /// Write revisions in one transaction (all or nothing); optionally set an agent's
            /// record in the same transaction.
            pub async fn write_many(
                pool: &Pool<Db>,
                reqs: &[WriteReq],
                agent: Option<(&AgentName, &AgentConfig)>,
                progress: &(dyn Fn(usize) + Sync),
            ) -> Result<Vec<WriteOutcome>> {
                let mut tx = pool.begin_with($begin).await?;
                let now = now_ms();
                let bulk = reqs.len() >= 32
                    && reqs.iter().all(|r| {
                        r.scope == reqs[0].scope
                            && !r.pending
                            // Plain writes, or creations (a seed folder's new skills).
                            && ((r.expect_rev.is_none() && r.seed_path.is_none()) || r.expect_rev == Some(0))
                    });
                let out = if bulk {
                    write_bulk(&mut tx, &reqs[0].scope, reqs, now, progress).await?
                } else {
                    let mut out = Vec::with_capacity(reqs.len());
                    for (i, r) in reqs.iter().enumerate() {
                        out.push(write_in(&mut tx, r, now).await?);
                        progress(i + 1);
                    }
                    out
                };
                if let Some((name, config)) = agent {
                    upsert_agent_in(&mut tx, name, config, now, false).await?;
                }
                tx.commit().await?;
                Ok(out)
            }

            /// Make `rev` the active revision of skill `id`: the revision becomes committed (a
            /// human chose it), the skill stops following its seed, and a skill in one of the
            /// revived statuses becomes active again.
            async fn activate_in(tx: &mut Transaction<'static, Db>, id: i64, rev: i64, now: i64, revive: Revive) -> Result<()> {
                sqlx::query("UPDATE revisions SET state = 'committed' WHERE skill_id = $1 AND rev = $2")
                    .bind(id)
                    .bind(rev)
                    .execute(&mut **tx)
                    .await?;
                let sql = match revive {
                    Revive::Pending => "UPDATE skills SET active_rev = $1, seed_path = NULL, updated_at = $2, status = CASE WHEN status = 'pending' THEN 'active' ELSE status END WHERE id = $3",
                    Revive::DisabledOrPending => "UPDATE skills SET active_rev = $1, seed_path = NULL, updated_at = $2, status = CASE WHEN status IN ('disabled', 'pending') THEN 'active' ELSE status END WHERE id = $3",
                };
                sqlx::query(sql).bind(rev).bind(now).bind(id).execute(&mut **tx).await?;
                Ok(())
            }

            pub async fn revert(pool: &Pool<Db>, scope: &Scope, name: &str, rev: i64, actor: &str) -> Result<WriteOutcome> {
                let mut tx = pool.begin_with($begin).await?;
                let s = scope.to_string();
                let (id, head, active, status, _) = lock_skill(&mut tx, &s, name)
                    .await?
                    .ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
                if rev < 1 || rev > head {
                    return Err(StoreError::NoSuchRevision { name: name.to_owned(), rev, latest: head });
                }
                let status: Status = status.parse().map_err(StoreError::Corrupt)?;
                if status == Status::Retired {
                    return Err(StoreError::Retired { name: name.to_owned() });
                }
                let now = now_ms();
                // Reverting is choosing this revision now: a skill disabled for drift comes back.
                activate_in(&mut tx, id, rev, now, Revive::DisabledOrPending).await?;
                insert_event(
                    &mut tx,
                    &NewEvent {
                        kind: "reverted".into(),
                        scope: Some(s),
                        skill: Some(name.to_owned()),
                        rev: Some(rev),
                        actor: Some(actor.to_owned()),
                        data: serde_json::json!({"from_rev": active, "to_rev": rev}),
                        ..NewEvent::default()
                    },
                    now,
                )
                .await?;
                tx.commit().await?;
                let status = if matches!(status, Status::Disabled | Status::Pending) { Status::Active } else { status };
                Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Reverted, rev, status })
            }

            pub async fn set_status(
                pool: &Pool<Db>,
                scope: &Scope,
                name: &str,
                change: StatusChange,
                actor: &str,
                reason: &serde_json::Value,
                expect_rev: Option<i64>,
            ) -> Result<WriteOutcome> {
                let mut tx = pool.begin_with($begin).await?;
                let s = scope.to_string();
                let (id, head, active, from, _) = lock_skill(&mut tx, &s, name)
                    .await?
                    .ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
                if let Some(expected) = expect_rev
                    && expected != head
                {
                    let winner = rev_digest(&mut tx, id, head).await?.map(|(_, a)| a).unwrap_or_default();
                    return Err(StoreError::Conflict { name: name.to_owned(), expected, actual: head, winner });
                }
                let from: Status = from.parse().map_err(StoreError::Corrupt)?;
                let to = match change.apply(from) {
                    Ok(Some(to)) => to,
                    Ok(None) => {
                        return Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Unchanged, rev: active, status: from });
                    }
                    Err(why) => return Err(StoreError::StatusRefused { name: name.to_owned(), why }),
                };
                let now = now_ms();
                sqlx::query("UPDATE skills SET status = $1, updated_at = $2 WHERE id = $3")
                    .bind(to.as_str())
                    .bind(now)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                let kind = change.event_kind();
                insert_event(
                    &mut tx,
                    &NewEvent {
                        kind: kind.into(),
                        scope: Some(s),
                        skill: Some(name.to_owned()),
                        rev: Some(active),
                        actor: Some(actor.to_owned()),
                        data: serde_json::json!({"from": from, "to": to, "reason": reason}),
                        ..NewEvent::default()
                    },
                    now,
                )
                .await?;
                tx.commit().await?;
                Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Status, rev: active, status: to })
            }

            pub async fn history(pool: &Pool<Db>, scope: &Scope, name: &str) -> Result<Vec<RevisionInfo>> {
                let row: Option<(i64, i64)> = sqlx::query_as("SELECT id, active_rev FROM skills WHERE scope = $1 AND name = $2")
                    .bind(scope.to_string())
                    .bind(name)
                    .fetch_optional(pool)
                    .await?;
                let (id, active) = row.ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
                let rows: Vec<(i64, String, String, String, String, i64)> = sqlx::query_as(
                    "SELECT rev, bundle_digest, author, message, state, created_at FROM revisions WHERE skill_id = $1 ORDER BY rev",
                )
                .bind(id)
                .fetch_all(pool)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|r| RevisionInfo { rev: r.0, digest: r.1, author: r.2, message: r.3, state: r.4, created_at: r.5, active: r.0 == active })
                    .collect())
            }

            /// The files of one revision, with bytes.
            pub async fn revision_files(pool: &Pool<Db>, scope: &Scope, name: &str, rev: i64) -> Result<Vec<(String, bool, Vec<u8>)>> {
                Ok(sqlx::query_as(concat!(
                    "SELECT f.path, f.executable, b.bytes FROM revision_files f ",
                    "JOIN skills s ON s.id = f.skill_id JOIN blobs b ON b.digest = f.digest ",
                    "WHERE s.scope = $1 AND s.name = $2 AND f.rev = $3 ORDER BY f.path"
                ))
                .bind(scope.to_string())
                .bind(name)
                .bind(rev)
                .fetch_all(pool)
                .await?)
            }

            async fn upsert_agent_in(
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
                let version = match existing {
                    Some(_) if create_only => return Err(StoreError::AgentExists(name.to_string())),
                    Some(v) => {
                        sqlx::query("UPDATE agents SET config = $1, version = $2, updated_at = $3 WHERE name = $4")
                            .bind(&json)
                            .bind(v + 1)
                            .bind(now)
                            .bind(name.as_str())
                            .execute(&mut **tx)
                            .await?;
                        v + 1
                    }
                    None => {
                        sqlx::query("INSERT INTO agents (name, config, version, created_at, updated_at) VALUES ($1, $2, 1, $3, $3)")
                            .bind(name.as_str())
                            .bind(&json)
                            .bind(now)
                            .execute(&mut **tx)
                            .await?;
                        1
                    }
                };
                insert_event(
                    tx,
                    &NewEvent {
                        kind: "agent_changed".into(),
                        agent: Some(name.to_string()),
                        data: serde_json::json!({"version": version}),
                        ..NewEvent::default()
                    },
                    now,
                )
                .await?;
                Ok(version)
            }

            pub async fn upsert_agent(pool: &Pool<Db>, name: &AgentName, config: &AgentConfig, create_only: bool) -> Result<i64> {
                let mut tx = pool.begin_with($begin).await?;
                let v = upsert_agent_in(&mut tx, name, config, now_ms(), create_only).await?;
                tx.commit().await?;
                Ok(v)
            }

            pub async fn agents(pool: &Pool<Db>) -> Result<Vec<(String, String, i64)>> {
                Ok(sqlx::query_as("SELECT name, config, version FROM agents ORDER BY name").fetch_all(pool).await?)
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

            /// Events after `after` that may change the index or the agents (`changes_index`,
            /// set from the kind when written), as (id, kind, scope, skill); and the newest id.
            pub async fn index_changes(pool: &Pool<Db>, after: i64, limit: i64) -> Result<(Vec<(i64, String, Option<String>, Option<String>)>, i64)> {
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
                Ok((rows, newest))
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
                if previous.as_deref() == Some(seed_digest) {
                    return Ok(false);
                }
                sqlx::query("UPDATE skills SET diverged_digest = $1 WHERE id = $2")
                    .bind(seed_digest)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                insert_event(
                    &mut tx,
                    &NewEvent {
                        kind: "seed_diverged".into(),
                        scope: Some(s),
                        skill: Some(name.to_owned()),
                        rev: Some(active),
                        actor: Some(format!("seed:{seed_path}")),
                        data: serde_json::json!({"seed_path": seed_path, "seed_digest": seed_digest, "message": "the seed folder changed after the skill was edited in the store; the store wins"}),
                        ..NewEvent::default()
                    },
                    now_ms(),
                )
                .await?;
                tx.commit().await?;
                Ok(true)
            }

            /// Create the session if new; returns its agent.
            pub async fn open_session(pool: &Pool<Db>, id: &str, agent: &str) -> Result<String> {
                let now = now_ms();
                sqlx::query("INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT (id) DO NOTHING")
                    .bind(id)
                    .bind(agent)
                    .bind(now)
                    .execute(pool)
                    .await?;
                let owner: String = sqlx::query_scalar("SELECT agent FROM sessions WHERE id = $1")
                    .bind(id)
                    .fetch_one(pool)
                    .await?;
                Ok(owner)
            }

            pub async fn session(pool: &Pool<Db>, id: &str) -> Result<Option<SessionRecord>> {
                let row: Option<(String, String, i64)> = sqlx::query_as("SELECT id, agent, created_at FROM sessions WHERE id = $1")
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
                let Some((id, agent, created_at)) = row else { return Ok(None) };
                let acts: Vec<(String, String, i64, String, i64, Option<String>)> = sqlx::query_as(
                    "SELECT scope, skill, rev, reason, at, arguments FROM activations WHERE session_id = $1 ORDER BY id",
                )
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
            pub async fn record_activations(pool: &Pool<Db>, session: &str, acts: &[ActivationRecord], evs: &[NewEvent]) -> Result<()> {
                record_activations_and_run(pool, session, acts, evs, None).await.map(|_| ())
            }

            /// Record activations and their events, and open a run (ending the session's open
            /// one), in one transaction; returns the new run's id.
            pub async fn record_activations_and_run(pool: &Pool<Db>, session: &str, acts: &[ActivationRecord], evs: &[NewEvent], run: Option<&RunStart<'_>>) -> Result<Option<i64>> {
                let mut tx = if run.is_some() { pool.begin_with($begin).await? } else { pool.begin().await? };
                let mut last = None;
                for a in acts {
                    sqlx::query("INSERT INTO activations (session_id, scope, skill, rev, reason, at, arguments) VALUES ($1, $2, $3, $4, $5, $6, $7)")
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
                    sqlx::query("UPDATE sessions SET updated_at = $1 WHERE id = $2")
                        .bind(at)
                        .bind(session)
                        .execute(&mut *tx)
                        .await?;
                }
                let now = now_ms();
                for ev in evs {
                    insert_event(&mut tx, ev, now).await?;
                }
                let id = match run {
                    Some(r) => Some(insert_run(&mut tx, session, r, now).await?),
                    None => None,
                };
                tx.commit().await?;
                Ok(id)
            }

            pub async fn record_activation(pool: &Pool<Db>, session: &str, a: &ActivationRecord) -> Result<()> {
                record_activations(pool, session, std::slice::from_ref(a), &[]).await
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
                for chunk in evs.chunks(100) {
                    let mut q = sqlx::QueryBuilder::<Db>::new(
                        "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) ",
                    );
                    q.push_values(chunk, |mut b, ev| {
                        b.push_bind(now)
                            .push_bind(&ev.kind)
                            .push_bind(&ev.scope)
                            .push_bind(&ev.skill)
                            .push_bind(ev.rev)
                            .push_bind(&ev.agent)
                            .push_bind(&ev.session)
                            .push_bind(&ev.actor)
                            .push_bind(ev.data.to_string())
                            .push_bind(crate::sql::changes_index(&ev.kind));
                    });
                    q.build().execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(())
            }

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
                        kind: "token_created".into(),
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
                let rows: Vec<(i64, String, String, Option<String>, i64, Option<i64>)> =
                    sqlx::query_as("SELECT id, label, hash, agent, created_at, revoked_at FROM api_tokens ORDER BY id")
                        .fetch_all(pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .map(|r| TokenRecord { id: r.0, label: r.1, hash: r.2, agent: r.3, created_at: r.4, revoked_at: r.5 })
                    .collect())
            }

            pub async fn token_by_hash(pool: &Pool<Db>, hash: &str) -> Result<Option<TokenRecord>> {
                let row: Option<(i64, String, String, Option<String>, i64, Option<i64>)> =
                    sqlx::query_as("SELECT id, label, hash, agent, created_at, revoked_at FROM api_tokens WHERE hash = $1")
                        .bind(hash)
                        .fetch_optional(pool)
                        .await?;
                Ok(row.map(|r| TokenRecord { id: r.0, label: r.1, hash: r.2, agent: r.3, created_at: r.4, revoked_at: r.5 }))
            }

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
                        &NewEvent { kind: "token_revoked".into(), actor: Some(actor.to_owned()), data: serde_json::json!({"token": id}), ..NewEvent::default() },
                        now,
                    )
                    .await?;
                }
                tx.commit().await?;
                Ok(n > 0)
            }

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
                insert_event(
                    &mut tx,
                    &NewEvent { kind: "vault_set".into(), actor: Some(actor.to_owned()), data: serde_json::json!({"entry": e.name}), ..NewEvent::default() },
                    now,
                )
                .await?;
                tx.commit().await?;
                Ok(())
            }

            pub async fn vault_remove(pool: &Pool<Db>, name: &str, actor: &str) -> Result<bool> {
                let mut tx = pool.begin_with($begin).await?;
                let n = sqlx::query("DELETE FROM vault_entries WHERE name = $1").bind(name).execute(&mut *tx).await?.rows_affected();
                if n > 0 {
                    insert_event(
                        &mut tx,
                        &NewEvent { kind: "vault_removed".into(), actor: Some(actor.to_owned()), data: serde_json::json!({"entry": name}), ..NewEvent::default() },
                        now_ms(),
                    )
                    .await?;
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

            pub async fn start_run(pool: &Pool<Db>, session: &str, run: &RunStart<'_>) -> Result<i64> {
                let mut tx = pool.begin_with($begin).await?;
                let id = insert_run(&mut tx, session, run, now_ms()).await?;
                tx.commit().await?;
                Ok(id)
            }

            /// Open a run in a session, ending its open one (another skill took over).
            async fn insert_run(tx: &mut Transaction<'_, Db>, session: &str, r: &RunStart<'_>, now: i64) -> Result<i64> {
                sqlx::query("UPDATE runs SET ended_at = $1, outcome = 'superseded' WHERE session_id = $2 AND ended_at IS NULL")
                    .bind(now)
                    .bind(session)
                    .execute(&mut **tx)
                    .await?;
                let id: i64 = sqlx::query_scalar(concat!(
                    "INSERT INTO runs (session_id, agent, skill_id, scope, skill, rev, started_at) ",
                    "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id"
                ))
                .bind(session)
                .bind(r.agent)
                .bind(r.skill_id)
                .bind(r.scope)
                .bind(r.skill)
                .bind(r.rev)
                .bind(now)
                .fetch_one(&mut **tx)
                .await?;
                Ok(id)
            }

            /// The session's open run, if a skill drives it.
            pub async fn open_run(pool: &Pool<Db>, session: &str) -> Result<Option<RunRecord>> {
                let row: Option<RunRow> = sqlx::query_as(concat!(
                    "SELECT id, session_id, agent, skill_id, scope, skill, rev, started_at, ended_at, outcome, note, calls, failed_calls ",
                    "FROM runs WHERE session_id = $1 AND ended_at IS NULL ORDER BY id DESC LIMIT 1"
                ))
                .bind(session)
                .fetch_optional(pool)
                .await?;
                Ok(row.map(run_from_row))
            }

            pub async fn count_call(pool: &Pool<Db>, run: i64, failed: bool) -> Result<()> {
                sqlx::query("UPDATE runs SET calls = calls + 1, failed_calls = failed_calls + $1 WHERE id = $2")
                    .bind(if failed { 1i64 } else { 0i64 })
                    .bind(run)
                    .execute(pool)
                    .await?;
                Ok(())
            }

            /// End a run; returns it and how many runs of the same revision in a row, ending with
            /// this one, failed.
            pub async fn end_run(pool: &Pool<Db>, run: i64, outcome: &str, note: &str) -> Result<(RunRecord, i64)> {
                let mut tx = pool.begin_with($begin).await?;
                let now = now_ms();
                let n = sqlx::query("UPDATE runs SET ended_at = $1, outcome = $2, note = $3 WHERE id = $4 AND ended_at IS NULL")
                    .bind(now)
                    .bind(outcome)
                    .bind(note)
                    .bind(run)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if n == 0 {
                    return Err(StoreError::Invalid(format!("run {run} is not open")));
                }
                let r: RunRow = sqlx::query_as(concat!(
                    "SELECT id, session_id, agent, skill_id, scope, skill, rev, started_at, ended_at, outcome, note, calls, failed_calls ",
                    "FROM runs WHERE id = $1"
                ))
                .bind(run)
                .fetch_one(&mut *tx)
                .await?;
                let rec = run_from_row(r);
                let outcomes: Vec<Option<String>> = sqlx::query_scalar(
                    "SELECT outcome FROM runs WHERE skill_id = $1 AND rev = $2 AND ended_at IS NOT NULL AND outcome IN ('success', 'failure') ORDER BY id DESC LIMIT 1000",
                )
                .bind(rec.skill_id)
                .bind(rec.rev)
                .fetch_all(&mut *tx)
                .await?;
                let streak = outcomes.iter().take_while(|o| o.as_deref() == Some("failure")).count() as i64;
                insert_event(
                    &mut tx,
                    &NewEvent {
                        kind: "run_finished".into(),
                        scope: Some(rec.scope.clone()),
                        skill: Some(rec.skill.clone()),
                        rev: Some(rec.rev),
                        agent: Some(rec.agent.clone()),
                        session: Some(rec.session.clone()),
                        data: serde_json::json!({"run": rec.id, "outcome": outcome, "note": note, "failures_in_a_row": streak}),
                        ..NewEvent::default()
                    },
                    now,
                )
                .await?;
                tx.commit().await?;
                Ok((rec, streak))
            }

            pub async fn runs(pool: &Pool<Db>, scope: &str, skill: &str, limit: i64) -> Result<Vec<RunRecord>> {
                let rows: Vec<RunRow> = sqlx::query_as(concat!(
                    "SELECT id, session_id, agent, skill_id, scope, skill, rev, started_at, ended_at, outcome, note, calls, failed_calls ",
                    "FROM runs WHERE scope = $1 AND skill = $2 ORDER BY id DESC LIMIT $3"
                ))
                .bind(scope)
                .bind(skill)
                .bind(limit)
                .fetch_all(pool)
                .await?;
                Ok(rows.into_iter().map(run_from_row).collect())
            }

            pub async fn note(pool: &Pool<Db>, session: &str) -> Result<String> {
                let t: Option<String> = sqlx::query_scalar("SELECT text FROM notes WHERE session_id = $1")
                    .bind(session)
                    .fetch_optional(pool)
                    .await?;
                Ok(t.unwrap_or_default())
            }

            pub async fn set_note(pool: &Pool<Db>, session: &str, text: &str) -> Result<()> {
                sqlx::query(concat!(
                    "INSERT INTO notes (session_id, text, updated_at) VALUES ($1, $2, $3) ",
                    "ON CONFLICT (session_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at"
                ))
                .bind(session)
                .bind(text)
                .bind(now_ms())
                .execute(pool)
                .await?;
                Ok(())
            }

            /// Approve a pending revision: it becomes committed and active.
            pub async fn approve(pool: &Pool<Db>, scope: &Scope, name: &str, rev: i64, actor: &str) -> Result<WriteOutcome> {
                let mut tx = pool.begin_with($begin).await?;
                let s = scope.to_string();
                let (id, head, _active, status, _) = lock_skill(&mut tx, &s, name)
                    .await?
                    .ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
                let state: Option<String> = sqlx::query_scalar("SELECT state FROM revisions WHERE skill_id = $1 AND rev = $2")
                    .bind(id)
                    .bind(rev)
                    .fetch_optional(&mut *tx)
                    .await?;
                match state.as_deref() {
                    None => return Err(StoreError::NoSuchRevision { name: name.to_owned(), rev, latest: head }),
                    Some("pending") => {}
                    Some(_) => return Err(StoreError::Invalid(format!("revision {rev} of '{name}' is not pending approval"))),
                }
                let now = now_ms();
                activate_in(&mut tx, id, rev, now, Revive::Pending).await?;
                insert_event(
                    &mut tx,
                    &NewEvent {
                        kind: "approved".into(),
                        scope: Some(s),
                        skill: Some(name.to_owned()),
                        rev: Some(rev),
                        actor: Some(actor.to_owned()),
                        data: serde_json::json!({}),
                        ..NewEvent::default()
                    },
                    now,
                )
                .await?;
                tx.commit().await?;
                let status: Status = status.parse().map_err(StoreError::Corrupt)?;
                let status = if status == Status::Pending { Status::Active } else { status };
                Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Modified, rev, status })
            }
        }
    };
}

backend!(sqlite, sqlx::Sqlite, "BEGIN IMMEDIATE", "");
backend!(postgres, sqlx::Postgres, "BEGIN", " FOR UPDATE");

#[cfg(test)]
mod kind_tests {
    /// The one decision of which events other servers must apply.
    #[test]
    fn runtime_kinds_do_not_change_the_index_and_every_other_kind_does() {
        for k in super::RUNTIME_KINDS {
            assert!(!super::changes_index(k), "{k}");
        }
        for k in [
            "revision_written",
            "retired",
            "restored",
            "disabled",
            "enabled",
            "reverted",
            "approved",
            "agent_changed",
            "vault_set",
            "vault_removed",
            "seed_diverged",
            "a_kind_added_later",
        ] {
            assert!(super::changes_index(k), "{k}");
        }
    }
}
