//! Skills: loading records with their active revision, writing revisions (one by one, or in
//! bulk for imports), reverting, approving, status changes, history and a revision's files.

use crate::error::{StoreError, not_higher};
use crate::events::EventKind;
use crate::model::{Scope, Status};
use crate::records::{NewEvent, Origin, RawEntry, RevisionInfo, WriteKind, WriteOutcome, WriteReq};
use crate::sql::events::skill_event;
use skillbase_format::SkillVersion;

// ---- Decisions ----

/// The expected revision, if a write expecting `expect_rev` to be the latest finds `head`
/// instead (a stale write).
fn stale(expect_rev: Option<i64>, head: i64) -> Option<i64> {
    expect_rev.filter(|&expected| expected != head)
}

/// The answer to a stale write: it names the revision that got there first and its author (the
/// winner; empty when it was not read).
fn conflict(name: &str, expected: i64, head: i64, winner: Option<String>) -> StoreError {
    StoreError::Conflict {
        name: name.to_owned(),
        expected,
        actual: head,
        winner: winner.unwrap_or_default(),
    }
}

/// Whether a write may create a skill that does not exist: not when it expects a revision
/// (`expect_rev` 0 means "must not exist").
fn may_create(scope: &Scope, name: &str, expect_rev: Option<i64>) -> Result<(), StoreError> {
    match expect_rev {
        Some(expected) if expected != 0 => Err(StoreError::NotFound {
            scope: scope.clone(),
            name: name.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// What a (not stale) write to an existing skill in `status` does: refused while retired,
/// nothing when the bundle is the active one (`None`), else a new revision, pending or
/// activated.
fn existing_write(
    name: &str,
    status: Status,
    same_as_active: bool,
    pending: bool,
) -> Result<Option<WriteKind>, StoreError> {
    if status == Status::Retired {
        return Err(StoreError::Retired {
            name: name.to_owned(),
        });
    }
    if same_as_active {
        return Ok(None);
    }
    Ok(Some(if pending {
        WriteKind::Pending
    } else {
        WriteKind::Modified
    }))
}

/// The gate's refusal of a write it let through only because the write repeated the active
/// revision's files, if the transaction found that write was not unchanged after all.
fn refuse_changed(reqs: &[WriteReq], out: &[WriteOutcome]) -> Result<(), StoreError> {
    for (r, o) in reqs.iter().zip(out) {
        if let Some(refusal) = &r.refused_unless_unchanged
            && o.kind != WriteKind::Unchanged
        {
            return Err(StoreError::ScanRefused(refusal.clone()));
        }
    }
    Ok(())
}

/// What a write declaring `new` over an active revision declaring `active` gets: nothing when
/// the active revision declares no version or `new` is higher (semver precedence), else a
/// warning, or (`require_increase`) the refusal.
fn version_check(
    name: &str,
    new: Option<&str>,
    active: Option<&str>,
    require_increase: bool,
) -> Result<Option<String>, StoreError> {
    let Some(active_text) = active else {
        return Ok(None);
    };
    let Ok(active_v) = SkillVersion::parse(active_text) else {
        return Ok(None);
    };
    let higher = new
        .and_then(|n| SkillVersion::parse(n).ok())
        .is_some_and(|n| n.cmp_precedence(&active_v).is_gt());
    if higher {
        return Ok(None);
    }
    let next = active_v.next_patch().to_string();
    if require_increase {
        return Err(StoreError::VersionNotIncreased {
            name: name.to_owned(),
            version: new.map(str::to_owned),
            active: active_text.to_owned(),
            next,
        });
    }
    Ok(Some(format!(
        "{}: written, but a client comparing versions will not see it as newer; raise it (`version: \"{next}\"`)",
        not_higher(new, active_text)
    )))
}

/// The `version` column's value for a write: the declared version, or `''` for none (`NULL`
/// is left to revisions written before versions were recorded).
fn version_column(version: Option<&str>) -> &str {
    version.unwrap_or("")
}

/// A stored `version` column read back: `None` for none (`''`) and for a revision written
/// before versions were recorded (`NULL`).
fn version_of_column(v: Option<String>) -> Option<String> {
    v.filter(|v| !v.is_empty())
}

/// The `version` a stored SKILL.md declares (for revisions written before versions were
/// recorded).
fn version_in_skill_md(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let md = skillbase_format::SkillMd::parse(text, &Default::default()).ok()?;
    skillbase_format::SkillMeta::from_md(&md)?.version
}

/// The state a new revision is stored in.
fn revision_state(pending: bool) -> &'static str {
    if pending { "pending" } else { "committed" }
}

/// The status a skill created by a write starts in.
fn created_status(pending: bool) -> Status {
    if pending {
        Status::Pending
    } else {
        Status::Active
    }
}

/// The kind of the event a write of a revision records.
fn write_event_kind(kind: &WriteKind) -> EventKind {
    if *kind == WriteKind::Pending {
        EventKind::RevisionPending
    } else if *kind == WriteKind::Candidate {
        EventKind::CandidateStaged
    } else {
        EventKind::RevisionWritten
    }
}

/// The data of a written revision's event. A pending creation says `created: false` (its kind
/// is `Pending`), as it always has.
fn write_event_data(digest: &str, message: &str, kind: &WriteKind) -> serde_json::Value {
    serde_json::json!({"digest": digest, "message": message, "created": *kind == WriteKind::Created})
}

/// Whether a batch of writes takes the bulk path: 32 or more plain writes to one scope (the
/// bulk path reads no winner for a conflict and never writes pending or seed-following
/// revisions, except a seed folder's new skills).
fn takes_bulk_path(reqs: &[WriteReq]) -> bool {
    reqs.len() >= 32
        && reqs.iter().all(|r| {
            r.scope == reqs[0].scope
                && !r.pending
                && r.candidate.is_none()
                // Plain writes, or creations (a seed folder's new skills).
                && ((r.expect_rev.is_none() && r.seed_path.is_none()) || r.expect_rev == Some(0))
        })
}

/// Whether revision `rev` of a skill whose latest is `head`, in `status`, can be re-activated.
fn check_revert(name: &str, rev: i64, head: i64, status: Status) -> Result<(), StoreError> {
    if rev < 1 || rev > head {
        return Err(StoreError::NoSuchRevision {
            name: name.to_owned(),
            rev,
            latest: head,
        });
    }
    if status == Status::Retired {
        return Err(StoreError::Retired {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Whether revision `rev` (stored in `state`, `None` if there is none) can be approved.
fn check_approve(name: &str, rev: i64, head: i64, state: Option<&str>) -> Result<(), StoreError> {
    match state {
        None => Err(StoreError::NoSuchRevision {
            name: name.to_owned(),
            rev,
            latest: head,
        }),
        // A candidate approved is promoted by a person, before its runs are judged.
        Some("pending" | "candidate") => Ok(()),
        Some(state) => Err(StoreError::NotPending {
            name: name.to_owned(),
            rev,
            state: state.to_owned(),
        }),
    }
}

/// Which statuses activating a revision brings back to `active`.
#[derive(Debug, Clone, Copy)]
enum Revive {
    /// Approval: a skill waiting for review.
    Pending,
    /// Revert: also a skill disabled (for drift, say).
    DisabledOrPending,
}

impl Revive {
    /// The status of a skill in `from` once a revision of it is activated this way.
    fn status_after(self, from: Status) -> Status {
        match (self, from) {
            (_, Status::Pending) | (Revive::DisabledOrPending, Status::Disabled) => Status::Active,
            (_, s) => s,
        }
    }
}

/// Keep a file's bytes (read only for SKILL.md, skill.md and Codex's `agents/openai.yaml`) as the
/// record's SKILL.md (SKILL.md wins over skill.md) or its Codex file.
fn take_skill_md(e: &mut RawEntry, path: &str, bytes: Option<Vec<u8>>) {
    if path == skillbase_format::openai_yaml::PATH {
        e.codex = bytes;
        return;
    }
    if let Some(b) = bytes
        && (e.skill_md.is_empty() || path == "SKILL.md")
    {
        e.skill_md = b;
    }
}

type EntryRow = (
    i64,
    String,
    String,
    String,
    i64,
    i64,
    Option<String>,
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
);

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
        codex: None,
        files: Vec::new(),
        candidate: r.10,
        candidate_entry: None,
        signer: r.11,
    }
}

/// The revision a stored `candidate` column stages (`None` when the column is empty or not a
/// candidate this build reads: the skill is then served as if none were staged).
fn candidate_rev(column: Option<&str>) -> Option<i64> {
    column
        .and_then(|c| serde_json::from_str::<crate::model::Candidate>(c).ok())
        .map(|c| c.rev)
}

/// How a staged candidate ends, as the statement writes it.
#[derive(Clone, Copy)]
pub(crate) struct Verdict<'a> {
    /// The candidate revision.
    pub rev: i64,
    /// Promoted (`true`) or rejected.
    pub promote: bool,
    /// Who decided, as stored.
    pub actor: &'a str,
    /// The agent whose run decided, when one did.
    pub agent: Option<&'a str>,
    /// The evidence, kept in the event.
    pub data: &'a serde_json::Value,
}

/// The state a candidate revision ends in, and the event that says so.
fn settled(promote: bool) -> (&'static str, EventKind) {
    if promote {
        ("committed", EventKind::CandidatePromoted)
    } else {
        ("rejected", EventKind::CandidateRejected)
    }
}

fn parse_status(s: &str) -> Result<Status, StoreError> {
    s.parse().map_err(StoreError::Corrupt)
}

/// The state a new revision of `kind` is stored in: a staged candidate's, or a write's.
fn new_revision_state(kind: &WriteKind, pending: bool) -> &'static str {
    if *kind == WriteKind::Candidate {
        "candidate"
    } else {
        revision_state(pending)
    }
}

/// The data of the event of `req`'s revision, written as `kind`: a staged candidate's also
/// carries its terms.
fn write_event_data_of(digest: &str, req: &WriteReq, kind: &WriteKind) -> serde_json::Value {
    let mut data = write_event_data(digest, &req.message, kind);
    if let (WriteKind::Candidate, Some(c)) = (kind, &req.candidate) {
        data["percent"] = serde_json::json!(c.percent);
        data["min_runs"] = serde_json::json!(c.min_runs);
    }
    data
}

/// Where a (not stale) write to an existing skill goes.
enum Slot {
    /// Nowhere: its files are the active revision's (the outcome says so).
    Unchanged(WriteOutcome),
    /// Revision `rev` of skill record `id`, of `kind`, with the version check's warnings.
    Revision {
        id: i64,
        rev: i64,
        kind: WriteKind,
        warnings: Vec<String>,
    },
}

/// A revision being written: revision `rev` of skill record `id`, at `now`.
#[derive(Clone, Copy)]
struct RevAt {
    id: i64,
    rev: i64,
    now: i64,
}

/// A scope's skill as the bulk path reads it: (id, head revision, active revision, status,
/// active revision's digest, active revision's `version` column).
type ScopeSkill = (i64, i64, i64, String, String, Option<String>);

/// What every statement of one bulk write shares.
struct Bulk<'a> {
    scope: &'a Scope,
    /// `scope` as stored.
    scope_s: String,
    reqs: &'a [WriteReq],
    now: i64,
}

/// A bulk write's requests, classified against the scope's skills.
struct BulkPlan {
    /// Each request's outcome, once known (every one's by the time the rows are written).
    out: Vec<Option<WriteOutcome>>,
    /// The requests creating a skill.
    new: Vec<usize>,
    /// The requests writing a new revision of an existing skill: (request, skill id, revision).
    changed: Vec<(usize, i64, i64)>,
}

impl BulkPlan {
    /// Every revision to write, as (request, skill id, revision) in request order: the changed
    /// skills' and the created ones' (`ids`: the new records' ids by name), whose outcomes are
    /// set here.
    fn writes(
        &mut self,
        bulk: &Bulk<'_>,
        ids: &std::collections::HashMap<String, i64>,
    ) -> Result<Vec<(usize, i64, i64)>, StoreError> {
        let reqs = bulk.reqs;
        let mut writes: Vec<(usize, i64, i64)> = self.changed.clone();
        for &i in &self.new {
            let id = *ids.get(&reqs[i].name).ok_or_else(|| {
                StoreError::Corrupt(format!("no id returned for '{}'", reqs[i].name))
            })?;
            writes.push((i, id, 1));
            self.out[i] = Some(WriteOutcome {
                scope: bulk.scope.clone(),
                name: reqs[i].name.clone(),
                kind: WriteKind::Created,
                rev: 1,
                status: created_status(false),
                warnings: Vec::new(),
            });
        }
        writes.sort_unstable();
        Ok(writes)
    }
}

// ---- Statements ----

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::model::{AgentConfig, AgentName, StatusChange};
        use crate::sql::events::$backend::insert_event;
        use crate::sql::now_ms;
        use crate::sql::scans::$backend::insert_scan;
        use sqlx::{Pool, QueryBuilder, Transaction};

        type Db = $db;

        /// Every skill record with its active revision's files and SKILL.md.
        pub async fn load_all(pool: &Pool<Db>) -> Result<Vec<RawEntry>> {
            let rows: Vec<EntryRow> = sqlx::query_as(concat!(
                "SELECT s.id, s.scope, s.name, s.status, s.active_rev, s.head_rev, s.seed_path, s.updated_at, r.bundle_digest, r.author, s.candidate, g.signer ",
                "FROM skills s JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev ",
                "LEFT JOIN signatures g ON g.skill_id = s.id AND g.rev = s.active_rev ORDER BY s.id"
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
                "CASE WHEN f.path IN ('SKILL.md', 'skill.md', 'agents/openai.yaml') THEN b.bytes ELSE NULL END ",
                "FROM revision_files f JOIN skills s ON s.id = f.skill_id AND s.active_rev = f.rev ",
                "JOIN blobs b ON b.digest = f.digest"
            ))
            .fetch_all(pool)
            .await?;
            for (id, path, digest, exec, size, bytes) in files {
                if let Some(&i) = pos.get(&id) {
                    let e = &mut entries[i];
                    take_skill_md(e, &path, bytes);
                    e.files.push((path, digest, exec, size));
                }
            }
            for e in &mut entries {
                e.files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                // Staged candidates are few: each is read on its own.
                e.candidate_entry = load_candidate(pool, e).await?.map(Box::new);
            }
            Ok(entries)
        }

        /// The revision a record's `candidate` column stages, read like the active one.
        async fn load_candidate(pool: &Pool<Db>, e: &RawEntry) -> Result<Option<RawEntry>> {
            match candidate_rev(e.candidate.as_deref()) {
                Some(rev) => at_rev(pool, e, rev).await,
                None => Ok(None),
            }
        }

        /// Record `e` as it would be served at revision `rev` (its digest, author, signer and
        /// files; no candidate): `None` when there is no such revision.
        async fn at_rev(pool: &Pool<Db>, e: &RawEntry, rev: i64) -> Result<Option<RawEntry>> {
            let Some((digest, author)): Option<(String, String)> =
                sqlx::query_as("SELECT bundle_digest, author FROM revisions WHERE skill_id = $1 AND rev = $2")
                    .bind(e.id)
                    .bind(rev)
                    .fetch_optional(pool)
                    .await?
            else {
                return Ok(None);
            };
            let mut c = RawEntry {
                id: e.id,
                scope: e.scope.clone(),
                name: e.name.clone(),
                status: e.status.clone(),
                active_rev: rev,
                head_rev: e.head_rev,
                seed_path: None,
                updated_at: e.updated_at,
                digest,
                author,
                skill_md: Vec::new(),
                codex: None,
                files: Vec::new(),
                candidate: None,
                candidate_entry: None,
                signer: signer_of(pool, e.id, rev).await?,
            };
            load_files(pool, &mut c).await?;
            Ok(Some(c))
        }

        /// The signer of revision `rev` of skill record `id`, when it was written signed.
        async fn signer_of(pool: &Pool<Db>, id: i64, rev: i64) -> Result<Option<String>> {
            Ok(sqlx::query_scalar("SELECT signer FROM signatures WHERE skill_id = $1 AND rev = $2")
                .bind(id)
                .bind(rev)
                .fetch_optional(pool)
                .await?)
        }

        /// The signer pinned for a trust source.
        pub async fn pinned_signer(pool: &Pool<Db>, source: &str) -> Result<Option<String>> {
            Ok(sqlx::query_scalar("SELECT signer FROM trust_pins WHERE source = $1")
                .bind(source)
                .fetch_optional(pool)
                .await?)
        }

        /// Pin a signer for a trust source (replacing the one pinned), with its event.
        pub async fn pin_signer(pool: &Pool<Db>, pin: &crate::trust::Pin, actor: &str) -> Result<()> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            sqlx::query(concat!(
                "INSERT INTO trust_pins (source, signer, pinned_at, actor) VALUES ($1, $2, $3, $4) ",
                "ON CONFLICT (source) DO UPDATE SET signer = excluded.signer, pinned_at = excluded.pinned_at, actor = excluded.actor"
            ))
            .bind(&pin.source)
            .bind(&pin.signer)
            .bind(now)
            .bind(actor)
            .execute(&mut *tx)
            .await?;
            let event = NewEvent {
                kind: EventKind::SignerPinned,
                actor: Some(actor.to_owned()),
                data: serde_json::json!({"source": pin.source, "signer": pin.signer, "previous": pin.previous}),
                ..NewEvent::default()
            };
            insert_event(&mut tx, &event, now).await?;
            tx.commit().await?;
            Ok(())
        }

        /// The signature kept with revision `rev` of a skill (its JSON), if it was written signed.
        pub async fn signature_of(pool: &Pool<Db>, scope: &str, name: &str, rev: i64) -> Result<Option<String>> {
            Ok(sqlx::query_scalar(concat!(
                "SELECT g.signature FROM signatures g JOIN skills s ON s.id = g.skill_id ",
                "WHERE s.scope = $1 AND s.name = $2 AND g.rev = $3"
            ))
            .bind(scope)
            .bind(name)
            .bind(rev)
            .fetch_optional(pool)
            .await?)
        }

        /// A record's files at its `active_rev`, SKILL.md's bytes kept.
        async fn load_files(pool: &Pool<Db>, e: &mut RawEntry) -> Result<()> {
            let files: Vec<(String, String, bool, i64, Option<Vec<u8>>)> = sqlx::query_as(concat!(
                "SELECT f.path, f.digest, f.executable, b.size, ",
                "CASE WHEN f.path IN ('SKILL.md', 'skill.md', 'agents/openai.yaml') THEN b.bytes ELSE NULL END ",
                "FROM revision_files f JOIN blobs b ON b.digest = f.digest ",
                "WHERE f.skill_id = $1 AND f.rev = $2 ORDER BY f.path"
            ))
            .bind(e.id)
            .bind(e.active_rev)
            .fetch_all(pool)
            .await?;
            for (path, digest, exec, size, bytes) in files {
                take_skill_md(e, &path, bytes);
                e.files.push((path, digest, exec, size));
            }
            Ok(())
        }

        /// One record with its active revision.
        pub async fn load_one(pool: &Pool<Db>, scope: &str, name: &str) -> Result<Option<RawEntry>> {
            let row: Option<EntryRow> = sqlx::query_as(concat!(
                "SELECT s.id, s.scope, s.name, s.status, s.active_rev, s.head_rev, s.seed_path, s.updated_at, r.bundle_digest, r.author, s.candidate, g.signer ",
                "FROM skills s JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev ",
                "LEFT JOIN signatures g ON g.skill_id = s.id AND g.rev = s.active_rev ",
                "WHERE s.scope = $1 AND s.name = $2"
            ))
            .bind(scope)
            .bind(name)
            .fetch_optional(pool)
            .await?;
            let Some(row) = row else { return Ok(None) };
            let mut e = entry(row);
            load_files(pool, &mut e).await?;
            e.candidate_entry = load_candidate(pool, &e).await?.map(Box::new);
            Ok(Some(e))
        }

        /// One record as it would be served at revision `rev` (any revision, active or not):
        /// `None` when the skill or the revision does not exist.
        pub async fn load_at(pool: &Pool<Db>, scope: &str, name: &str, rev: i64) -> Result<Option<RawEntry>> {
            let Some(mut e) = load_one(pool, scope, name).await? else { return Ok(None) };
            e.candidate = None;
            e.candidate_entry = None;
            if e.active_rev == rev {
                return Ok(Some(e));
            }
            at_rev(pool, &e, rev).await
        }

        /// Withdraw a skill's staged candidate, if any, as superseded (another revision is
        /// being activated); the caller's statement clears the `candidate` column.
        async fn supersede_candidate(tx: &mut Transaction<'static, Db>, id: i64, except: i64) -> Result<()> {
            sqlx::query("UPDATE revisions SET state = 'superseded' WHERE skill_id = $1 AND state = 'candidate' AND rev <> $2")
                .bind(id)
                .bind(except)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        /// End a skill's staged candidate `rev`: promoted (committed and active; the skill's
        /// status is kept) or rejected. `None`, with nothing changed, when `rev` is not the
        /// staged candidate any more (another server settled it first, or it was superseded).
        pub async fn settle_candidate(pool: &Pool<Db>, scope: &Scope, name: &str, v: &Verdict<'_>) -> Result<Option<WriteOutcome>> {
            let Verdict { rev, promote, actor, agent, data } = *v;
            let mut tx = pool.begin_with($begin).await?;
            let s = scope.to_string();
            let Some((id, _head, active, status, _)) = lock_skill(&mut tx, &s, name).await? else {
                return Ok(None);
            };
            let column: Option<String> = sqlx::query_scalar("SELECT candidate FROM skills WHERE id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
            if candidate_rev(column.as_deref()) != Some(rev) {
                return Ok(None);
            }
            let status = parse_status(&status)?;
            let now = now_ms();
            let (state, kind) = settled(promote);
            sqlx::query("UPDATE revisions SET state = $1 WHERE skill_id = $2 AND rev = $3")
                .bind(state)
                .bind(id)
                .bind(rev)
                .execute(&mut *tx)
                .await?;
            let active_now = if promote { rev } else { active };
            sqlx::query("UPDATE skills SET candidate = NULL, active_rev = $1, updated_at = $2 WHERE id = $3")
                .bind(active_now)
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let mut data = data.clone();
            if let Some(o) = data.as_object_mut() {
                o.insert("from_rev".into(), serde_json::json!(active));
            }
            let event = NewEvent { agent: agent.map(str::to_owned), ..skill_event(kind, &s, name, rev, actor, data) };
            insert_event(&mut tx, &event, now).await?;
            tx.commit().await?;
            Ok(Some(WriteOutcome {
                scope: scope.clone(),
                name: name.to_owned(),
                kind: if promote { WriteKind::Modified } else { WriteKind::Unchanged },
                rev: active_now,
                status,
                warnings: Vec::new(),
            }))
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

        /// The `version` revision `rev` declares: its column, or its SKILL.md for a revision
        /// written before versions were recorded (`NULL`).
        async fn rev_version(tx: &mut Transaction<'static, Db>, id: i64, rev: i64) -> Result<Option<String>> {
            let col: Option<Option<String>> = sqlx::query_scalar("SELECT version FROM revisions WHERE skill_id = $1 AND rev = $2")
                .bind(id)
                .bind(rev)
                .fetch_optional(&mut **tx)
                .await?;
            if let Some(Some(v)) = col {
                return Ok(version_of_column(Some(v)));
            }
            let files: Vec<(String, Vec<u8>)> = sqlx::query_as(concat!(
                "SELECT f.path, b.bytes FROM revision_files f JOIN blobs b ON b.digest = f.digest ",
                "WHERE f.skill_id = $1 AND f.rev = $2 AND f.path IN ('SKILL.md', 'skill.md')"
            ))
            .bind(id)
            .bind(rev)
            .fetch_all(&mut **tx)
            .await?;
            let md = files.iter().find(|f| f.0 == "SKILL.md").or(files.first());
            Ok(md.and_then(|(_, bytes)| version_in_skill_md(bytes)))
        }

        /// Keep a verified signature with revision `rev` (a signature given again for the same
        /// revision replaces the one kept: the latest the trust policy accepted).
        async fn keep_signature(tx: &mut Transaction<'static, Db>, id: i64, rev: i64, sig: &Option<(String, String)>, now: i64) -> Result<()> {
            let Some((signer, json)) = sig else { return Ok(()) };
            sqlx::query(concat!(
                "INSERT INTO signatures (skill_id, rev, signer, signature, created_at) VALUES ($1, $2, $3, $4, $5) ",
                "ON CONFLICT (skill_id, rev) DO UPDATE SET signer = excluded.signer, signature = excluded.signature, created_at = excluded.created_at"
            ))
            .bind(id)
            .bind(rev)
            .bind(signer)
            .bind(json)
            .bind(now)
            .execute(&mut **tx)
            .await?;
            Ok(())
        }

        /// Keep where an imported revision came from (the latest import of the same files wins).
        async fn keep_origin(tx: &mut Transaction<'static, Db>, id: i64, rev: i64, origin: &Option<Origin>) -> Result<()> {
            let Some(o) = origin else { return Ok(()) };
            sqlx::query(concat!(
                "INSERT INTO revision_sources (skill_id, rev, source, reference, path) VALUES ($1, $2, $3, $4, $5) ",
                "ON CONFLICT (skill_id, rev) DO UPDATE SET source = excluded.source, reference = excluded.reference, path = excluded.path"
            ))
            .bind(id)
            .bind(rev)
            .bind(&o.source)
            .bind(&o.reference)
            .bind(&o.path)
            .execute(&mut **tx)
            .await?;
            Ok(())
        }

        /// The origins of a scope's active revisions, by skill name.
        pub async fn origins(pool: &Pool<Db>, scope: &str) -> Result<Vec<(String, Origin)>> {
            let rows: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(concat!(
                "SELECT s.name, o.source, o.reference, o.path FROM skills s ",
                "JOIN revision_sources o ON o.skill_id = s.id AND o.rev = s.active_rev ",
                "WHERE s.scope = $1 ORDER BY s.name"
            ))
            .bind(scope)
            .fetch_all(pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(|(n, source, reference, path)| (n, Origin { source, reference, path }))
                .collect())
        }

        /// The author of revision `head` (who won a conflict).
        async fn winner(tx: &mut Transaction<'static, Db>, id: i64, head: i64) -> Result<Option<String>> {
            Ok(rev_digest(tx, id, head).await?.map(|(_, a)| a))
        }

        /// Classify a write to the existing skill `row` (locked): a conflict when it is stale,
        /// nothing new when its files are the active revision's (a signature or origin given now
        /// is kept with them), else the next revision, its kind and the version check's warnings.
        async fn classify_existing(tx: &mut Transaction<'static, Db>, req: &WriteReq, digest: &str, row: SkillRow, now: i64) -> Result<Slot> {
            let (id, head, active, status, _seed) = row;
            let status = parse_status(&status)?;
            if let Some(expected) = stale(req.expect_rev, head) {
                let winner = winner(tx, id, head).await?;
                return Err(conflict(&req.name, expected, head, winner));
            }
            let active_digest = rev_digest(tx, id, active).await?.map(|(d, _)| d);
            let same = active_digest.as_deref() == Some(digest);
            let write = existing_write(&req.name, status, same, req.pending)?;
            // A candidate is staged beside an active revision; otherwise the write is plain.
            let write = match write {
                Some(WriteKind::Modified) if req.candidate.is_some() && status == Status::Active => Some(WriteKind::Candidate),
                w => w,
            };
            let Some(kind) = write else {
                // The same files again: a signature given now is kept with them.
                keep_signature(tx, id, active, &req.signature, now).await?;
                keep_origin(tx, id, active, &req.origin).await?;
                return Ok(Slot::Unchanged(WriteOutcome {
                    scope: req.scope.clone(),
                    name: req.name.clone(),
                    kind: WriteKind::Unchanged,
                    rev: active,
                    status,
                    warnings: Vec::new(),
                }));
            };
            let active_version = rev_version(tx, id, active).await?;
            let warnings = version_check(
                &req.name,
                req.version.as_deref(),
                active_version.as_deref(),
                req.require_version_increase,
            )?
            .into_iter()
            .collect();
            Ok(Slot::Revision { id, rev: head + 1, kind, warnings })
        }

        /// Create the record of the skill a write brings (refused to a write expecting a
        /// revision); its id.
        async fn create_skill(tx: &mut Transaction<'static, Db>, req: &WriteReq, scope: &str, now: i64) -> Result<i64> {
            may_create(&req.scope, &req.name, req.expect_rev)?;
            Ok(sqlx::query_scalar(concat!(
                "INSERT INTO skills (scope, name, status, active_rev, head_rev, seed_path, created_at, updated_at) ",
                "VALUES ($1, $2, $5, 1, 0, $3, $4, $4) RETURNING id"
            ))
            .bind(scope)
            .bind(&req.name)
            .bind(&req.seed_path)
            .bind(now)
            .bind(created_status(req.pending).as_str())
            .fetch_one(&mut **tx)
            .await?)
        }

        /// Store the rows of a new revision stored in `state`: its blobs (each content once),
        /// the revision, its signature and origin, and its files.
        async fn insert_revision(tx: &mut Transaction<'static, Db>, req: &WriteReq, digest: &str, state: &str, at: RevAt) -> Result<()> {
            let RevAt { id, rev, now } = at;
            for f in req.bundle.files() {
                sqlx::query("INSERT INTO blobs (digest, size, bytes) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING")
                    .bind(f.digest.to_string())
                    .bind(f.bytes.len() as i64)
                    .bind(&f.bytes[..])
                    .execute(&mut **tx)
                    .await?;
            }
            sqlx::query(concat!(
                "INSERT INTO revisions (skill_id, rev, bundle_digest, author, message, state, created_at, version) ",
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            ))
            .bind(id)
            .bind(rev)
            .bind(digest)
            .bind(&req.author)
            .bind(&req.message)
            .bind(state)
            .bind(now)
            .bind(version_column(req.version.as_deref()))
            .execute(&mut **tx)
            .await?;
            keep_signature(tx, id, rev, &req.signature, now).await?;
            keep_origin(tx, id, rev, &req.origin).await?;
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
            Ok(())
        }

        /// The status of skill record `id`, as stored.
        async fn skill_status(tx: &mut Transaction<'static, Db>, id: i64) -> Result<Status> {
            let s: String = sqlx::query_scalar("SELECT status FROM skills WHERE id = $1").bind(id).fetch_one(&mut **tx).await?;
            parse_status(&s)
        }

        /// Point the skill's record at its new revision, written as `kind`: a skill created
        /// pending gets it as head and active revision (the write is then `Pending`); a candidate
        /// is staged beside the active revision; a pending revision moves only the head; any
        /// other becomes the active one. The write's kind and the skill's status after.
        async fn point_record(tx: &mut Transaction<'static, Db>, req: &WriteReq, kind: WriteKind, at: RevAt) -> Result<(WriteKind, Status)> {
            let RevAt { id, rev, now } = at;
            let kind = if req.pending && kind == WriteKind::Created {
                sqlx::query("UPDATE skills SET head_rev = 1, active_rev = 1 WHERE id = $1")
                    .bind(id)
                    .execute(&mut **tx)
                    .await?;
                WriteKind::Pending
            } else {
                kind
            };
            let status = if kind == WriteKind::Candidate {
                stage_candidate(tx, req, at).await?;
                Status::Active
            } else if kind == WriteKind::Pending {
                sqlx::query("UPDATE skills SET head_rev = $1, updated_at = $2 WHERE id = $3")
                    .bind(rev)
                    .bind(now)
                    .bind(id)
                    .execute(&mut **tx)
                    .await?;
                skill_status(tx, id).await?
            } else {
                supersede_candidate(tx, id, rev).await?;
                sqlx::query("UPDATE skills SET head_rev = $1, active_rev = $1, seed_path = $2, updated_at = $3, candidate = NULL WHERE id = $4")
                    .bind(rev)
                    .bind(&req.seed_path)
                    .bind(now)
                    .bind(id)
                    .execute(&mut **tx)
                    .await?;
                skill_status(tx, id).await?
            };
            Ok((kind, status))
        }

        /// Stage the new revision as the skill's candidate, on the write's terms.
        async fn stage_candidate(tx: &mut Transaction<'static, Db>, req: &WriteReq, at: RevAt) -> Result<()> {
            let RevAt { id, rev, now } = at;
            // Staged: the active revision stays; a candidate staged before is superseded.
            supersede_candidate(tx, id, rev).await?;
            let terms = crate::model::Candidate { rev, staged_at: now, ..req.candidate.expect("a candidate write has terms") };
            sqlx::query("UPDATE skills SET head_rev = $1, updated_at = $2, candidate = $3 WHERE id = $4")
                .bind(rev)
                .bind(now)
                .bind(serde_json::to_string(&terms).map_err(|e| StoreError::Corrupt(e.to_string()))?)
                .bind(id)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        /// One write, in the caller's transaction: the skill's row is locked (or created), the
        /// revision's rows stored, the record pointed at it and the event recorded.
        async fn write_in(tx: &mut Transaction<'static, Db>, req: &WriteReq, now: i64) -> Result<WriteOutcome> {
            let scope = req.scope.to_string();
            let digest = req.bundle.digest().to_string();
            let (id, rev, kind, warnings) = match lock_skill(tx, &scope, &req.name).await? {
                Some(row) => match classify_existing(tx, req, &digest, row, now).await? {
                    Slot::Unchanged(outcome) => return Ok(outcome),
                    Slot::Revision { id, rev, kind, warnings } => (id, rev, kind, warnings),
                },
                None => (create_skill(tx, req, &scope, now).await?, 1, WriteKind::Created, Vec::new()),
            };
            let at = RevAt { id, rev, now };
            insert_revision(tx, req, &digest, new_revision_state(&kind, req.pending), at).await?;
            if let Some(row) = &req.scan {
                insert_scan(tx, (id, rev, now), row, (&scope, &req.name, &req.author)).await?;
            }
            let (kind, status) = point_record(tx, req, kind, at).await?;
            let data = write_event_data_of(&digest, req, &kind);
            insert_event(tx, &skill_event(write_event_kind(&kind), &scope, &req.name, rev, &req.author, data), now).await?;
            Ok(WriteOutcome { scope: req.scope.clone(), name: req.name.clone(), kind, rev, status, warnings })
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
            let bulk = Bulk { scope, scope_s: scope.to_string(), reqs, now };
            let (existing, staged) = scope_skills(tx, &bulk.scope_s).await?;
            let mut plan = classify_bulk(tx, &bulk, &existing).await?;
            // New records, with their ids.
            let ids = insert_new_skills(tx, &bulk, &plan.new).await?;
            let writes = plan.writes(&bulk, &ids)?;
            // Blobs, stored once.
            insert_bulk_blobs(tx, reqs, &writes).await?;
            for chunk in writes.chunks(CHUNK) {
                insert_bulk_revisions(tx, &bulk, chunk).await?;
                insert_bulk_files(tx, reqs, chunk).await?;
                insert_bulk_events(tx, &bulk, &plan.out, chunk).await?;
                insert_bulk_scans(tx, &bulk, chunk).await?;
                progress(chunk.last().map_or(0, |c| c.0 + 1));
            }
            activate_bulk(tx, &plan.changed, &staged, now).await?;
            // Signatures, for the revisions written and for the ones found as they were.
            keep_bulk_provenance(tx, &bulk, &plan.out, &writes, &existing).await?;
            progress(reqs.len());
            Ok(plan.out.into_iter().map(|o| o.expect("every request classified")).collect())
        }

        /// The skills of scope `scope_s` by name (their rows locked), and the ids of those with
        /// a staged candidate (a plain write supersedes it).
        async fn scope_skills(
            tx: &mut Transaction<'static, Db>,
            scope_s: &str,
        ) -> Result<(std::collections::HashMap<String, ScopeSkill>, std::collections::HashSet<i64>)> {
            type Row = (i64, String, i64, i64, String, String, Option<String>);
            let rows: Vec<Row> = sqlx::query_as(concat!(
                "SELECT s.id, s.name, s.head_rev, s.active_rev, s.status, r.bundle_digest, r.version FROM skills s ",
                "JOIN revisions r ON r.skill_id = s.id AND r.rev = s.active_rev WHERE s.scope = $1",
                $lock
            ))
            .bind(scope_s)
            .fetch_all(&mut **tx)
            .await?;
            // The scope's skills with a staged candidate (a plain write supersedes it).
            let staged: std::collections::HashSet<i64> =
                sqlx::query_scalar("SELECT id FROM skills WHERE scope = $1 AND candidate IS NOT NULL")
                    .bind(scope_s)
                    .fetch_all(&mut **tx)
                    .await?
                    .into_iter()
                    .collect();
            let existing = rows
                .into_iter()
                .map(|(id, name, head, active, status, digest, version)| (name, (id, head, active, status, digest, version)))
                .collect();
            Ok((existing, staged))
        }

        /// Classify every request (the bulk path's requests may always create, see
        /// `takes_bulk_path`): a conflict when stale (no winner read), unchanged, a new revision
        /// of an existing skill (with the version check's warnings) or a new skill.
        async fn classify_bulk(
            tx: &mut Transaction<'static, Db>,
            bulk: &Bulk<'_>,
            existing: &std::collections::HashMap<String, ScopeSkill>,
        ) -> Result<BulkPlan> {
            let scope = bulk.scope;
            let mut plan = BulkPlan { out: vec![None; bulk.reqs.len()], new: Vec::new(), changed: Vec::new() };
            for (i, r) in bulk.reqs.iter().enumerate() {
                let digest = r.bundle.digest().to_string();
                let Some((id, head, active, status, active_digest, active_version)) = existing.get(&r.name) else {
                    plan.new.push(i);
                    continue;
                };
                if let Some(expected) = stale(r.expect_rev, *head) {
                    return Err(conflict(&r.name, expected, *head, None));
                }
                let status = parse_status(status)?;
                match existing_write(&r.name, status, *active_digest == digest, false)? {
                    None => {
                        plan.out[i] = Some(WriteOutcome { scope: scope.clone(), name: r.name.clone(), kind: WriteKind::Unchanged, rev: *active, status, warnings: Vec::new() });
                    }
                    Some(kind) => {
                        let active_version = match active_version {
                            Some(v) => version_of_column(Some(v.clone())),
                            None => rev_version(tx, *id, *active).await?,
                        };
                        let warnings = version_check(&r.name, r.version.as_deref(), active_version.as_deref(), r.require_version_increase)?
                            .into_iter()
                            .collect();
                        plan.changed.push((i, *id, head + 1));
                        plan.out[i] = Some(WriteOutcome { scope: scope.clone(), name: r.name.clone(), kind, rev: head + 1, status, warnings });
                    }
                }
            }
            Ok(plan)
        }

        /// Insert the records of the skills requests `new` create, as active at revision 1; the
        /// new records' ids by name.
        async fn insert_new_skills(
            tx: &mut Transaction<'static, Db>,
            bulk: &Bulk<'_>,
            new: &[usize],
        ) -> Result<std::collections::HashMap<String, i64>> {
            let (reqs, now) = (bulk.reqs, bulk.now);
            let mut ids: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
            for chunk in new.chunks(CHUNK) {
                let mut q: QueryBuilder<Db> = QueryBuilder::new(
                    "INSERT INTO skills (scope, name, status, active_rev, head_rev, seed_path, created_at, updated_at) ",
                );
                q.push_values(chunk, |mut b, &i| {
                    b.push_bind(bulk.scope_s.clone())
                        .push_bind(reqs[i].name.clone())
                        .push_bind(created_status(false).as_str())
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
            Ok(ids)
        }

        /// Store the contents of the revisions `writes`, each once.
        async fn insert_bulk_blobs(tx: &mut Transaction<'static, Db>, reqs: &[WriteReq], writes: &[(usize, i64, i64)]) -> Result<()> {
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
            Ok(())
        }

        /// Store the revision rows of one chunk of `(request, skill id, revision)`, committed.
        async fn insert_bulk_revisions(tx: &mut Transaction<'static, Db>, bulk: &Bulk<'_>, chunk: &[(usize, i64, i64)]) -> Result<()> {
            let (reqs, now) = (bulk.reqs, bulk.now);
            let mut q: QueryBuilder<Db> = QueryBuilder::new(
                "INSERT INTO revisions (skill_id, rev, bundle_digest, author, message, state, created_at, version) ",
            );
            q.push_values(chunk, |mut b, &(i, id, rev)| {
                b.push_bind(id)
                    .push_bind(rev)
                    .push_bind(reqs[i].bundle.digest().to_string())
                    .push_bind(reqs[i].author.clone())
                    .push_bind(reqs[i].message.clone())
                    .push_bind(revision_state(false))
                    .push_bind(now)
                    .push_bind(version_column(reqs[i].version.as_deref()).to_owned());
            });
            q.build().execute(&mut **tx).await?;
            Ok(())
        }

        /// Store the file rows of one chunk of `(request, skill id, revision)`.
        async fn insert_bulk_files(tx: &mut Transaction<'static, Db>, reqs: &[WriteReq], chunk: &[(usize, i64, i64)]) -> Result<()> {
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
            Ok(())
        }

        /// Record the events of one chunk of `(request, skill id, revision)`, of the kinds
        /// their outcomes `out` say.
        async fn insert_bulk_events(
            tx: &mut Transaction<'static, Db>,
            bulk: &Bulk<'_>,
            out: &[Option<WriteOutcome>],
            chunk: &[(usize, i64, i64)],
        ) -> Result<()> {
            let (reqs, now) = (bulk.reqs, bulk.now);
            let mut q: QueryBuilder<Db> = QueryBuilder::new(
                "INSERT INTO events (at, kind, scope, skill, rev, agent, session, actor, data, changes_index) ",
            );
            q.push_values(chunk, |mut b, &(i, _, rev)| {
                let kind = out[i].as_ref().map_or(WriteKind::Modified, |o| o.kind.clone());
                let event = write_event_kind(&kind);
                let data = write_event_data(&reqs[i].bundle.digest().to_string(), &reqs[i].message, &kind);
                b.push_bind(now)
                    .push_bind(event.as_str().to_owned())
                    .push_bind(bulk.scope_s.clone())
                    .push_bind(reqs[i].name.clone())
                    .push_bind(rev)
                    .push_bind(Option::<String>::None)
                    .push_bind(Option::<String>::None)
                    .push_bind(reqs[i].author.clone())
                    .push_bind(data.to_string())
                    .push_bind(event.changes_index());
            });
            q.build().execute(&mut **tx).await?;
            Ok(())
        }

        /// Keep the scans of one chunk of `(request, skill id, revision)`, with the
        /// `scan_findings` events of those the gate acted on.
        async fn insert_bulk_scans(tx: &mut Transaction<'static, Db>, bulk: &Bulk<'_>, chunk: &[(usize, i64, i64)]) -> Result<()> {
            let rows: Vec<(i64, i64, &crate::scan::ScanRow)> = chunk
                .iter()
                .filter_map(|&(i, id, rev)| bulk.reqs[i].scan.as_ref().map(|s| (id, rev, s)))
                .collect();
            if rows.is_empty() {
                return Ok(());
            }
            let mut q: QueryBuilder<Db> = QueryBuilder::new(
                "INSERT INTO scans (skill_id, rev, rules, verdict, action, findings, scanned_at) ",
            );
            q.push_values(&rows, |mut b, &(id, rev, s)| {
                b.push_bind(id)
                    .push_bind(rev)
                    .push_bind(s.rules.clone())
                    .push_bind(s.verdict.clone())
                    .push_bind(s.action.as_str())
                    .push_bind(s.findings.clone())
                    .push_bind(bulk.now);
            });
            q.build().execute(&mut **tx).await?;
            for &(i, _, rev) in chunk {
                let r = &bulk.reqs[i];
                let Some(ev) = r.scan.as_ref().and_then(|s| s.event.as_ref()) else { continue };
                let data = serde_json::to_value(ev).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let ev = skill_event(EventKind::ScanFindings, &bulk.scope_s, &r.name, rev, &r.author, data);
                insert_event(tx, &ev, bulk.now).await?;
            }
            Ok(())
        }

        /// Make each changed skill's new revision its head and active one: it stops following
        /// its seed, and a candidate staged for it (`staged`) is superseded.
        async fn activate_bulk(
            tx: &mut Transaction<'static, Db>,
            changed: &[(usize, i64, i64)],
            staged: &std::collections::HashSet<i64>,
            now: i64,
        ) -> Result<()> {
            for &(_, id, rev) in changed {
                if staged.contains(&id) {
                    supersede_candidate(tx, id, rev).await?;
                }
                sqlx::query("UPDATE skills SET head_rev = $1, active_rev = $1, seed_path = NULL, updated_at = $2, candidate = NULL WHERE id = $3")
                    .bind(rev)
                    .bind(now)
                    .bind(id)
                    .execute(&mut **tx)
                    .await?;
            }
            Ok(())
        }

        /// Keep the signatures and origins the requests give, with the revisions written and
        /// with the ones found as they were.
        async fn keep_bulk_provenance(
            tx: &mut Transaction<'static, Db>,
            bulk: &Bulk<'_>,
            out: &[Option<WriteOutcome>],
            writes: &[(usize, i64, i64)],
            existing: &std::collections::HashMap<String, ScopeSkill>,
        ) -> Result<()> {
            for (i, r) in bulk.reqs.iter().enumerate().filter(|(_, r)| r.signature.is_some() || r.origin.is_some()) {
                let rev = out[i].as_ref().map_or(0, |o| o.rev);
                // `writes` is in request order (`BulkPlan::writes`): a search, not a scan per
                // request (a 10,000-skill import with provenance made that quadratic).
                let id = match writes.binary_search_by_key(&i, |w| w.0) {
                    Ok(at) => writes[at].1,
                    Err(_) => match existing.get(&r.name) {
                        Some(e) => e.0,
                        None => continue,
                    },
                };
                keep_signature(tx, id, rev, &r.signature, bulk.now).await?;
                keep_origin(tx, id, rev, &r.origin).await?;
            }
            Ok(())
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
            let out = if takes_bulk_path(reqs) {
                write_bulk(&mut tx, &reqs[0].scope, reqs, now, progress).await?
            } else {
                let mut out = Vec::with_capacity(reqs.len());
                for (i, r) in reqs.iter().enumerate() {
                    out.push(write_in(&mut tx, r, now).await?);
                    progress(i + 1);
                }
                out
            };
            refuse_changed(reqs, &out)?;
            if let Some((name, config)) = agent {
                crate::sql::agents::$backend::upsert_agent_in(&mut tx, name, config, now, false).await?;
            }
            tx.commit().await?;
            Ok(out)
        }

        /// Make `rev` the active revision of skill `id`: the revision becomes committed (a
        /// human chose it), the skill stops following its seed, and takes `status` (the row
        /// is locked, so it is the one `Revive::status_after` computed from).
        async fn activate_in(tx: &mut Transaction<'static, Db>, id: i64, rev: i64, now: i64, status: Status) -> Result<()> {
            // A staged candidate other than `rev` is superseded by the choice.
            supersede_candidate(tx, id, rev).await?;
            sqlx::query("UPDATE revisions SET state = 'committed' WHERE skill_id = $1 AND rev = $2")
                .bind(id)
                .bind(rev)
                .execute(&mut **tx)
                .await?;
            sqlx::query("UPDATE skills SET active_rev = $1, seed_path = NULL, updated_at = $2, status = $3, candidate = NULL WHERE id = $4")
                .bind(rev)
                .bind(now)
                .bind(status.as_str())
                .bind(id)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        pub async fn revert(pool: &Pool<Db>, scope: &Scope, name: &str, rev: i64, actor: &str) -> Result<WriteOutcome> {
            let mut tx = pool.begin_with($begin).await?;
            let s = scope.to_string();
            let (id, head, active, status, _) = lock_skill(&mut tx, &s, name)
                .await?
                .ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
            let status = parse_status(&status)?;
            check_revert(name, rev, head, status)?;
            let now = now_ms();
            // Reverting is choosing this revision now: a skill disabled for drift comes back.
            let status = Revive::DisabledOrPending.status_after(status);
            activate_in(&mut tx, id, rev, now, status).await?;
            insert_event(
                &mut tx,
                &skill_event(EventKind::Reverted, &s, name, rev, actor, serde_json::json!({"from_rev": active, "to_rev": rev})),
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Reverted, rev, status, warnings: Vec::new() })
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
            check_approve(name, rev, head, state.as_deref())?;
            let status = Revive::Pending.status_after(parse_status(&status)?);
            let now = now_ms();
            activate_in(&mut tx, id, rev, now, status).await?;
            insert_event(&mut tx, &skill_event(EventKind::Approved, &s, name, rev, actor, serde_json::json!({})), now).await?;
            tx.commit().await?;
            Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Modified, rev, status, warnings: Vec::new() })
        }

        /// Reject a pending revision: it is never served; the active revision stays. A skill
        /// created pending (nothing committed) is retired with it.
        pub async fn reject(pool: &Pool<Db>, scope: &Scope, name: &str, rev: i64, actor: &str) -> Result<WriteOutcome> {
            let mut tx = pool.begin_with($begin).await?;
            let s = scope.to_string();
            let (id, head, active, status, _) = lock_skill(&mut tx, &s, name)
                .await?
                .ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
            let state: Option<String> = sqlx::query_scalar("SELECT state FROM revisions WHERE skill_id = $1 AND rev = $2")
                .bind(id)
                .bind(rev)
                .fetch_optional(&mut *tx)
                .await?;
            if state.as_deref() != Some("pending") {
                check_approve(name, rev, head, state.as_deref())?;
                return Err(StoreError::NotPending { name: name.to_owned(), rev, state: state.unwrap_or_default() });
            }
            let now = now_ms();
            sqlx::query("UPDATE revisions SET state = 'rejected' WHERE skill_id = $1 AND rev = $2")
                .bind(id)
                .bind(rev)
                .execute(&mut *tx)
                .await?;
            let mut status = parse_status(&status)?;
            if status == Status::Pending {
                status = Status::Retired;
                sqlx::query("UPDATE skills SET status = $1, updated_at = $2 WHERE id = $3")
                    .bind(status.as_str())
                    .bind(now)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            insert_event(&mut tx, &skill_event(EventKind::Rejected, &s, name, rev, actor, serde_json::json!({"status": status})), now).await?;
            tx.commit().await?;
            Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Status, rev: active, status, warnings: Vec::new() })
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
            if let Some(expected) = stale(expect_rev, head) {
                let winner = winner(&mut tx, id, head).await?;
                return Err(conflict(name, expected, head, winner));
            }
            let from = parse_status(&from)?;
            let Some(to) = change.apply(from).map_err(|why| StoreError::StatusRefused { name: name.to_owned(), why })? else {
                return Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Unchanged, rev: active, status: from, warnings: Vec::new() });
            };
            let now = now_ms();
            sqlx::query("UPDATE skills SET status = $1, updated_at = $2 WHERE id = $3")
                .bind(to.as_str())
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            insert_event(
                &mut tx,
                &skill_event(change.event_kind(), &s, name, active, actor, serde_json::json!({"from": from, "to": to, "reason": reason})),
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(WriteOutcome { scope: scope.clone(), name: name.to_owned(), kind: WriteKind::Status, rev: active, status: to, warnings: Vec::new() })
        }

        pub async fn history(pool: &Pool<Db>, scope: &Scope, name: &str) -> Result<Vec<RevisionInfo>> {
            let row: Option<(i64, i64)> = sqlx::query_as("SELECT id, active_rev FROM skills WHERE scope = $1 AND name = $2")
                .bind(scope.to_string())
                .bind(name)
                .fetch_optional(pool)
                .await?;
            let (id, active) = row.ok_or_else(|| StoreError::NotFound { scope: scope.clone(), name: name.to_owned() })?;
            type Row = (i64, String, String, String, String, i64, Option<String>, Option<String>);
            let rows: Vec<Row> = sqlx::query_as(concat!(
                "SELECT r.rev, r.bundle_digest, r.author, r.message, r.state, r.created_at, r.version, g.signer FROM revisions r ",
                "LEFT JOIN signatures g ON g.skill_id = r.skill_id AND g.rev = r.rev WHERE r.skill_id = $1 ORDER BY r.rev"
            ))
            .bind(id)
            .fetch_all(pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(|r| RevisionInfo {
                    rev: r.0,
                    digest: r.1,
                    author: r.2,
                    message: r.3,
                    state: r.4,
                    created_at: r.5,
                    version: version_of_column(r.6),
                    active: r.0 == active,
                    signer: r.7,
                })
                .collect())
        }

        /// Stored file contents in digest order, `limit` at a time after `after` (a scan of every
        /// revision's files, each content once).
        pub async fn blob_page(pool: &Pool<Db>, after: &str, limit: i64) -> Result<Vec<(String, Vec<u8>)>> {
            Ok(sqlx::query_as("SELECT digest, bytes FROM blobs WHERE digest > $1 ORDER BY digest LIMIT $2")
                .bind(after)
                .bind(limit)
                .fetch_all(pool)
                .await?)
        }

        /// Where a content is stored: (scope, skill, revision, path), in that order.
        pub async fn blob_uses(pool: &Pool<Db>, digest: &str) -> Result<Vec<(String, String, i64, String)>> {
            Ok(sqlx::query_as(concat!(
                "SELECT s.scope, s.name, f.rev, f.path FROM revision_files f JOIN skills s ON s.id = f.skill_id ",
                "WHERE f.digest = $1 ORDER BY s.scope, s.name, f.rev, f.path"
            ))
            .bind(digest)
            .fetch_all(pool)
            .await?)
        }

        /// Revision messages in (skill id, revision) order, `limit` at a time after `after`:
        /// (skill id, revision, scope, skill, message).
        pub async fn message_page(pool: &Pool<Db>, after: (i64, i64), limit: i64) -> Result<Vec<(i64, i64, String, String, String)>> {
            Ok(sqlx::query_as(concat!(
                "SELECT r.skill_id, r.rev, s.scope, s.name, r.message FROM revisions r JOIN skills s ON s.id = r.skill_id ",
                "WHERE r.skill_id > $1 OR (r.skill_id = $1 AND r.rev > $2) ORDER BY r.skill_id, r.rev LIMIT $3"
            ))
            .bind(after.0)
            .bind(after.1)
            .bind(limit)
            .fetch_all(pool)
            .await?)
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
    };
}

crate::sql::for_each_backend!(statements);

#[cfg(test)]
mod tests {
    use super::*;

    /// A write expecting another revision than the latest is stale; the conflict names the
    /// revision that won and its author.
    #[test]
    fn a_stale_write_is_a_conflict_naming_the_winner() {
        assert_eq!(stale(None, 3), None);
        assert_eq!(stale(Some(3), 3), None);
        assert_eq!(stale(Some(2), 3), Some(2));
        assert_eq!(stale(Some(0), 1), Some(0));
        match conflict("x", 2, 3, Some("human:bo".into())) {
            StoreError::Conflict {
                name,
                expected: 2,
                actual: 3,
                winner,
            } => assert_eq!((name.as_str(), winner.as_str()), ("x", "human:bo")),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(conflict("x", 0, 3, None), StoreError::Conflict { winner, .. } if winner.is_empty())
        );
    }

    /// Creating is refused only to a write expecting an existing revision.
    #[test]
    fn only_writes_expecting_a_revision_cannot_create() {
        let s = Scope::Shared;
        assert!(may_create(&s, "x", None).is_ok());
        assert!(may_create(&s, "x", Some(0)).is_ok());
        assert!(matches!(
            may_create(&s, "x", Some(2)),
            Err(StoreError::NotFound { .. })
        ));
    }

    /// A retired skill takes no revision; the active bundle again is nothing; otherwise a
    /// revision, pending or activated, with the event kind that says which.
    #[test]
    fn what_a_write_to_an_existing_skill_does() {
        assert!(matches!(
            existing_write("x", Status::Retired, true, false),
            Err(StoreError::Retired { .. })
        ));
        assert_eq!(
            existing_write("x", Status::Active, true, true).unwrap(),
            None
        );
        assert_eq!(
            existing_write("x", Status::Disabled, false, false).unwrap(),
            Some(WriteKind::Modified)
        );
        assert_eq!(
            existing_write("x", Status::Active, false, true).unwrap(),
            Some(WriteKind::Pending)
        );
        assert_eq!(
            write_event_kind(&WriteKind::Pending),
            EventKind::RevisionPending
        );
        for k in [WriteKind::Created, WriteKind::Modified] {
            assert_eq!(write_event_kind(&k), EventKind::RevisionWritten);
        }
        assert_eq!(
            write_event_data("d", "m", &WriteKind::Created)["created"],
            true
        );
        assert_eq!(
            write_event_data("d", "m", &WriteKind::Pending)["created"],
            false
        );
        assert_eq!(
            (revision_state(true), revision_state(false)),
            ("pending", "committed")
        );
        assert_eq!(
            (created_status(true), created_status(false)),
            (Status::Pending, Status::Active)
        );
    }

    /// A version not higher than the active one is a warning, or the refusal under
    /// `require-increase`; nothing is checked while the active revision declares none.
    #[test]
    fn what_a_write_of_a_version_gets() {
        assert_eq!(version_check("x", Some("1.0.0"), None, true).unwrap(), None);
        assert_eq!(version_check("x", None, None, true).unwrap(), None);
        assert_eq!(
            version_check("x", Some("1.2.1"), Some("1.2.0"), true).unwrap(),
            None
        );
        assert_eq!(
            version_check("x", Some("1.0.0"), Some("1.0.0-rc.1"), true).unwrap(),
            None
        );
        for (new, want) in [
            (Some("1.2.0"), "version 1.2.0 is not higher than 1.2.0"),
            (
                Some("1.2.0+other"),
                "version 1.2.0+other is not higher than 1.2.0",
            ),
            (Some("1.1.9"), "version 1.1.9 is not higher than 1.2.0"),
            (Some("1.2.0-rc.1"), "version 1.2.0-rc.1 is not higher"),
            (
                None,
                "declares no version, and the active revision's is 1.2.0",
            ),
        ] {
            let w = version_check("x", new, Some("1.2.0"), false)
                .unwrap()
                .unwrap();
            assert!(w.contains(want), "{new:?}: {w}");
            assert!(w.contains("`version: \"1.2.1\"`"), "{w}");
            let e = version_check("x", new, Some("1.2.0"), true).unwrap_err();
            assert!(matches!(e, StoreError::VersionNotIncreased { .. }), "{e:?}");
            let m = e.to_string();
            assert!(
                m.contains(want) && m.contains("require-increase") && m.contains("1.2.1"),
                "{m}"
            );
        }
        assert_eq!(
            (version_column(None), version_column(Some("1.0.0"))),
            ("", "1.0.0")
        );
        assert_eq!(version_of_column(Some(String::new())), None);
        assert_eq!(version_of_column(None), None);
        assert_eq!(
            version_in_skill_md(b"---\nname: x\ndescription: X.\nversion: 2.0.0\n---\nx\n")
                .as_deref(),
            Some("2.0.0")
        );
        assert_eq!(version_in_skill_md(b"\xff"), None);
    }

    /// The gate let a write repeating the active revision through; if the transaction finds
    /// it changed something after all (the skill changed meanwhile), it is refused as the gate
    /// would have; unchanged, or with no deferred refusal, it passes.
    #[test]
    fn a_deferred_refusal_holds_unless_the_write_is_unchanged() {
        let refusal = Box::new(crate::error::Refusal {
            scope: Scope::Shared,
            name: "x".into(),
            finding: skillbase_scan::Finding {
                rule: "exfiltration-markdown-link".into(),
                family: skillbase_scan::Family::Hijack,
                severity: skillbase_scan::Severity::Medium,
                file: "SKILL.md".into(),
                line: 5,
                column: 1,
                seen: String::new(),
                why: String::new(),
                fix: String::new(),
            },
            findings: 1,
            event: Default::default(),
        });
        let req = |deferred: bool| WriteReq {
            scope: Scope::Shared,
            name: "x".into(),
            bundle: skillbase_format::Bundle::single("---\nname: x\ndescription: X.\n---\nx\n")
                .unwrap(),
            author: "human:ana".into(),
            message: String::new(),
            expect_rev: None,
            seed_path: None,
            pending: false,
            candidate: None,
            signature: None,
            origin: None,
            version: None,
            require_version_increase: false,
            scan: None,
            refused_unless_unchanged: deferred.then(|| refusal.clone()),
        };
        let out = |kind| WriteOutcome {
            scope: Scope::Shared,
            name: "x".into(),
            kind,
            rev: 2,
            status: Status::Active,
            warnings: Vec::new(),
        };
        assert!(refuse_changed(&[req(true)], &[out(WriteKind::Unchanged)]).is_ok());
        assert!(refuse_changed(&[req(false)], &[out(WriteKind::Modified)]).is_ok());
        for kind in [WriteKind::Modified, WriteKind::Created, WriteKind::Pending] {
            let e = refuse_changed(
                &[req(false), req(true)],
                &[out(WriteKind::Created), out(kind)],
            );
            assert!(matches!(e, Err(StoreError::ScanRefused(r)) if r.name == "x"));
        }
    }

    /// Many plain writes to one scope take the bulk path; a pending write, a seed-following
    /// modification, an expected revision or a second scope do not.
    #[test]
    fn which_batches_take_the_bulk_path() {
        let req = |scope: Scope, expect_rev, seed_path: Option<&str>, pending| WriteReq {
            scope,
            name: "x".into(),
            bundle: skillbase_format::Bundle::single("---\nname: x\ndescription: X.\n---\nx\n")
                .unwrap(),
            author: "human:ana".into(),
            message: String::new(),
            expect_rev,
            seed_path: seed_path.map(str::to_owned),
            pending,
            candidate: None,
            signature: None,
            origin: None,
            version: None,
            require_version_increase: false,
            scan: None,
            refused_unless_unchanged: None,
        };
        let many = |r: WriteReq, n: usize| vec![r; n];
        assert!(takes_bulk_path(&many(
            req(Scope::Shared, None, None, false),
            32
        )));
        assert!(!takes_bulk_path(&many(
            req(Scope::Shared, None, None, false),
            31
        )));
        assert!(takes_bulk_path(&many(
            req(Scope::Shared, Some(0), Some("s"), false),
            32
        )));
        assert!(!takes_bulk_path(&many(
            req(Scope::Shared, None, Some("s"), false),
            32
        )));
        assert!(!takes_bulk_path(&many(
            req(Scope::Shared, Some(1), None, false),
            32
        )));
        assert!(!takes_bulk_path(&many(
            req(Scope::Shared, None, None, true),
            32
        )));
        let mut mixed = many(req(Scope::Shared, None, None, false), 32);
        mixed[5].scope = Scope::Agent(crate::model::AgentName::parse("ana").unwrap());
        assert!(!takes_bulk_path(&mixed));
    }

    /// Revert needs an existing revision of a skill that is not retired; approve, a pending one.
    #[test]
    fn revert_and_approve_preconditions() {
        assert!(check_revert("x", 1, 3, Status::Disabled).is_ok());
        for rev in [0, 4] {
            assert!(matches!(
                check_revert("x", rev, 3, Status::Active),
                Err(StoreError::NoSuchRevision { latest: 3, .. })
            ));
        }
        assert!(matches!(
            check_revert("x", 2, 3, Status::Retired),
            Err(StoreError::Retired { .. })
        ));
        assert!(check_approve("x", 2, 3, Some("pending")).is_ok());
        assert!(matches!(
            check_approve("x", 9, 3, None),
            Err(StoreError::NoSuchRevision { rev: 9, .. })
        ));
        assert!(matches!(
            check_approve("x", 2, 3, Some("committed")),
            Err(StoreError::NotPending { rev: 2, .. })
        ));
    }

    /// Approval brings back a pending skill; revert also a disabled one; neither a retired one.
    #[test]
    fn which_statuses_activation_revives() {
        use Status::*;
        for (from, approve, revert) in [
            (Active, Active, Active),
            (Pending, Active, Active),
            (Disabled, Disabled, Active),
            (Retired, Retired, Retired),
        ] {
            assert_eq!(
                Revive::Pending.status_after(from),
                approve,
                "approve from {from}"
            );
            assert_eq!(
                Revive::DisabledOrPending.status_after(from),
                revert,
                "revert from {from}"
            );
        }
    }

    /// SKILL.md wins over skill.md, whichever comes first.
    /// The `candidate` column: a staged candidate's revision, or none for an empty column or
    /// one this build cannot read (the skill is then served without a candidate).
    #[test]
    fn candidate_columns_are_read_or_ignored() {
        assert_eq!(
            candidate_rev(Some(
                r#"{"rev":3,"percent":20,"min_runs":10,"staged_at":5}"#
            )),
            Some(3)
        );
        assert_eq!(candidate_rev(None), None);
        assert_eq!(candidate_rev(Some("")), None);
        assert_eq!(candidate_rev(Some(r#"{"rev":"x"}"#)), None);
        assert_eq!(
            candidate_rev(Some(
                r#"{"rev":3,"percent":20,"min_runs":10,"staged_at":5,"extra":1}"#
            )),
            None
        );
        assert_eq!(settled(true).0, "committed");
        assert_eq!(settled(false), ("rejected", EventKind::CandidateRejected));
    }

    #[test]
    fn skill_md_wins_over_lowercase() {
        let mut e = entry((
            1,
            "shared".into(),
            "x".into(),
            "active".into(),
            1,
            1,
            None,
            0,
            "d".into(),
            "a".into(),
            None,
            None,
        ));
        take_skill_md(&mut e, "skill.md", Some(b"lower".to_vec()));
        take_skill_md(&mut e, "SKILL.md", Some(b"upper".to_vec()));
        take_skill_md(&mut e, "skill.md", Some(b"lower".to_vec()));
        take_skill_md(&mut e, "other.md", None);
        assert_eq!(e.skill_md, b"upper");
    }
}
