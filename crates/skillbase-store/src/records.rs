//! The records the store reads and writes, by noun: what crosses its API (and, crate-private,
//! what crosses from [`crate::store`] to the SQL). The statements that read and write them are in
//! the crate's `sql` module; the rules about them are beside those statements.

use crate::events::EventKind;
use crate::model::{Scope, Status};

// ---- Skills ----

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
    /// Codex's `agents/openai.yaml` bytes, when the revision has that file.
    pub codex: Option<Vec<u8>>,
    /// (path, digest, executable, size), sorted by path.
    pub files: Vec<(String, String, bool, i64)>,
    /// The staged candidate (the `candidate` column's JSON), if any.
    pub candidate: Option<String>,
    /// The candidate revision, read like the active one (its files and SKILL.md).
    pub candidate_entry: Option<Box<RawEntry>>,
    /// Who signed the revision read (its signer's fingerprint), if it was written signed.
    pub signer: Option<String>,
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
    /// Stage as a candidate under these terms (`rev` and `staged_at` are set at write) instead
    /// of activating, when the skill exists and is active; otherwise a plain write.
    pub candidate: Option<crate::model::Candidate>,
    /// A verified signature to keep with the revision: (signer, the signature as JSON).
    pub signature: Option<(String, String)>,
    /// Where an imported revision came from (kept for `skillbase lock`).
    pub origin: Option<Origin>,
    /// The `version` its SKILL.md declares (checked: a semantic version).
    pub version: Option<String>,
    /// Refuse the write unless `version` is higher than the active revision's (else warn).
    pub require_version_increase: bool,
    /// The scan to keep with the new revision (the gate's, `crate::scan`).
    pub scan: Option<crate::scan::ScanRow>,
    /// The gate's refusal of a write that repeats the active revision's files: such a write
    /// records nothing, so it is refused only if the transaction finds it is not unchanged
    /// (the skill changed meanwhile).
    pub refused_unless_unchanged: Option<Box<crate::error::Refusal>>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    /// The skill did not exist: revision 1 was written.
    Created,
    /// A new revision was written and activated (or a pending one approved).
    Modified,
    /// The bundle equals the active one, or the status already was the asked one: nothing was
    /// written.
    Unchanged,
    /// A revision was written to wait for approval.
    Pending,
    /// A revision was staged as a candidate beside the active one.
    Candidate,
    /// An old revision was re-activated.
    Reverted,
    /// The status changed.
    Status,
}

/// The result of a write: which record, and the revision now active.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WriteOutcome {
    /// The skill's scope.
    pub scope: Scope,
    /// The skill's name.
    pub name: String,
    /// What the write did.
    pub kind: WriteKind,
    /// The revision this write produced or activated (or the active one, when unchanged).
    pub rev: i64,
    /// The skill's status after the write.
    pub status: Status,
    /// What the author should know about the write (a version not higher than the active
    /// revision's); left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Where an imported revision came from: what `skillbase lock` records and `install --locked`
/// reads again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Origin {
    /// The source the import named: a folder or zip (absolute path), or `git+URL`.
    pub source: String,
    /// The reference it was read at: a git commit (40 hex digits); `None` for a folder or zip.
    pub reference: Option<String>,
    /// The skill's folder inside the source (a git repository's path), when it is not the
    /// source itself.
    pub path: Option<String>,
}

/// A revision's record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RevisionInfo {
    /// Its number, from 1, without gaps.
    pub rev: i64,
    /// The content digest of its files, `sha256:<64 lowercase hex>` (README, "The content
    /// digest").
    pub digest: String,
    /// The `version` its SKILL.md declares, as recorded at write (`None`: none, or a revision
    /// written before the store recorded versions).
    pub version: Option<String>,
    /// Who wrote it.
    pub author: String,
    /// Why, in the author's words.
    pub message: String,
    /// `committed`, `pending` (waiting for approval), `candidate` (staged beside the active
    /// revision), `rejected` (a candidate whose outcomes were worse) or `superseded` (a
    /// candidate replaced before it was judged).
    pub state: String,
    /// When it was written (Unix milliseconds).
    pub created_at: i64,
    /// Whether it is the skill's active revision.
    pub active: bool,
    /// The fingerprint of the key that signed it (`SHA256:...`), when it was written signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}

// ---- Events ----

/// An event to append.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct NewEvent {
    /// What happened (it also decides whether other servers must apply the event).
    pub kind: EventKind,
    /// The skill's scope, for an event about a skill.
    pub scope: Option<String>,
    /// The skill's name, for an event about a skill.
    pub skill: Option<String>,
    /// The skill's revision, for an event about a skill.
    pub rev: Option<i64>,
    /// The agent it concerns.
    pub agent: Option<String>,
    /// The session it happened in.
    pub session: Option<String>,
    /// Who did it.
    pub actor: Option<String>,
    /// The kind's own details (stored as JSON text).
    pub data: serde_json::Value,
}

/// A stored event.
///
/// `kind` is the stored string (not an [`EventKind`]: callers collect and compare it as a
/// `String`); `EventKind::from(record.kind.as_str())` reads it as a kind.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = SessionEvent))]
pub struct EventRecord {
    /// Its id: increasing, though on PostgreSQL not in commit order.
    pub id: i64,
    /// When it was written (Unix milliseconds).
    pub at: i64,
    /// What happened (a kind this build does not know reads as [`EventKind::Other`]).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kind: EventKind,
    /// The skill's scope, for an event about a skill.
    pub scope: Option<String>,
    /// The skill's name, for an event about a skill.
    pub skill: Option<String>,
    /// The skill's revision, for an event about a skill.
    pub rev: Option<i64>,
    /// The agent it concerns.
    pub agent: Option<String>,
    /// The session it happened in.
    pub session: Option<String>,
    /// Who did it.
    pub actor: Option<String>,
    /// The kind's own details (`null` if the stored text is not JSON).
    pub data: serde_json::Value,
}

/// Which events to read.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only events with a greater id.
    pub after_id: Option<i64>,
    /// Only events about skills of this scope.
    pub scope: Option<String>,
    /// Only events about skills of this name.
    pub skill: Option<String>,
    /// Only events of this session.
    pub session: Option<String>,
    /// Only events concerning this agent.
    pub agent: Option<String>,
    /// Only events of this kind (as stored).
    pub kind: Option<String>,
    /// At most this many (oldest first).
    pub limit: Option<i64>,
}

// ---- Sessions ----

/// A stored session: which agent it belongs to and what it activated, in order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionRecord {
    /// The session id, chosen by the harness.
    pub id: String,
    /// The agent that owns it.
    pub agent: String,
    /// When it was opened (Unix milliseconds).
    pub created_at: i64,
    /// What it activated, oldest first.
    pub activations: Vec<ActivationRecord>,
}

/// One activation in a session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ActivationRecord {
    /// The skill's scope.
    pub scope: String,
    /// The skill's name.
    pub skill: String,
    /// The revision activated.
    pub rev: i64,
    /// Why it was activated, as the runtime names it.
    pub reason: String,
    /// When (Unix milliseconds).
    pub at: i64,
    /// The arguments it was loaded with, as JSON (vault values already redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

// ---- Runs ----

/// A run to open: the skill revision that will drive a session.
pub(crate) struct RunStart<'a> {
    pub agent: &'a str,
    pub skill_id: i64,
    pub scope: &'a str,
    pub skill: &'a str,
    pub rev: i64,
}

/// One run of a skill revision in a session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunRecord {
    /// Its id.
    pub id: i64,
    /// The session it drives.
    pub session: String,
    /// The session's agent.
    pub agent: String,
    /// The skill record's id.
    pub skill_id: i64,
    /// The skill's scope.
    pub scope: String,
    /// The skill's name.
    pub skill: String,
    /// The revision that runs.
    pub rev: i64,
    /// When it started (Unix milliseconds).
    pub started_at: i64,
    /// When it ended; `None` while open.
    pub ended_at: Option<i64>,
    /// `success`, `failure`, or `superseded` (another skill took over); `None` while open.
    pub outcome: Option<String>,
    /// The note it ended with.
    pub note: String,
    /// Calls made under it.
    pub calls: i64,
    /// Of those, the ones that failed.
    pub failed_calls: i64,
}

/// The outcomes of one revision's runs (what `skillbase runs --by-revision` shows).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RevisionOutcomes {
    /// The revision.
    pub rev: i64,
    /// Its runs (of those read).
    pub runs: i64,
    /// Ended as `success`.
    pub success: i64,
    /// Ended as `failure`.
    pub failure: i64,
    /// Ended because another skill took over.
    pub superseded: i64,
    /// Still open.
    pub open: i64,
    /// `failure / (success + failure)`, when any ended either way.
    pub failure_rate: Option<f64>,
    /// Calls made under its runs.
    pub calls: i64,
    /// Of its calls, the ones that failed.
    pub failed_calls: i64,
}

/// `runs` summed per revision, newest revision first.
pub fn outcomes_by_revision(runs: &[RunRecord]) -> Vec<RevisionOutcomes> {
    let mut by: std::collections::BTreeMap<i64, RevisionOutcomes> = Default::default();
    for r in runs {
        let o = by.entry(r.rev).or_insert(RevisionOutcomes {
            rev: r.rev,
            runs: 0,
            success: 0,
            failure: 0,
            superseded: 0,
            open: 0,
            failure_rate: None,
            calls: 0,
            failed_calls: 0,
        });
        o.runs += 1;
        o.calls += r.calls;
        o.failed_calls += r.failed_calls;
        match r.outcome.as_deref() {
            Some("success") => o.success += 1,
            Some("failure") => o.failure += 1,
            Some(_) => o.superseded += 1,
            None => o.open += 1,
        }
    }
    let mut out: Vec<RevisionOutcomes> = by.into_values().rev().collect();
    for o in &mut out {
        let ended = o.success + o.failure;
        o.failure_rate = (ended > 0).then(|| o.failure as f64 / ended as f64);
    }
    out
}

// ---- Tokens ----

/// An API token as stored: only the SHA-256 of its secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenRecord {
    /// Its id.
    pub id: i64,
    /// What it is for, in the operator's words.
    pub label: String,
    /// Lowercase hex SHA-256 of the secret; never the secret itself.
    #[serde(skip)]
    pub hash: String,
    /// The agent the token is bound to; `None` for an admin token.
    pub agent: Option<String>,
    /// When it was created (Unix milliseconds).
    pub created_at: i64,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

// ---- Vault ----

/// An upstream MCP server configured through the API: its `[mcp_servers.<name>]` table as JSON
/// (vault entries named, never their values), checked by the runtime's gateway before writing.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerRow {
    /// The server's name.
    pub name: String,
    /// The configuration, as the API received it (after the gateway's check).
    pub config: serde_json::Value,
    /// When it was first written (Unix milliseconds).
    pub created_at: i64,
    /// When it was last written (Unix milliseconds).
    pub updated_at: i64,
    /// Who last wrote it.
    pub updated_by: String,
}

/// A vault entry as stored: the value only in encrypted form.
#[derive(Clone, PartialEq, Eq)]
pub struct VaultRow {
    /// The entry's name.
    pub name: String,
    /// What it holds, in the operator's words (never the value).
    pub description: String,
    /// The nonce the value was encrypted with.
    pub nonce: Vec<u8>,
    /// The encrypted value.
    pub ciphertext: Vec<u8>,
    /// When it was last set (Unix milliseconds).
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

#[cfg(test)]
mod outcome_tests {
    use super::*;

    fn run(rev: i64, outcome: Option<&str>, calls: i64, failed: i64) -> RunRecord {
        RunRecord {
            id: 0,
            session: "s".into(),
            agent: "a".into(),
            skill_id: 1,
            scope: "shared".into(),
            skill: "k".into(),
            rev,
            started_at: 0,
            ended_at: None,
            outcome: outcome.map(str::to_owned),
            note: String::new(),
            calls,
            failed_calls: failed,
        }
    }

    #[test]
    fn outcomes_are_summed_per_revision_newest_first() {
        let runs = [
            run(1, Some("success"), 3, 0),
            run(1, Some("failure"), 4, 3),
            run(2, Some("failure"), 2, 2),
            run(2, Some("superseded"), 1, 0),
            run(2, None, 0, 0),
            run(1, Some("success"), 2, 0),
        ];
        let o = outcomes_by_revision(&runs);
        assert_eq!(o.len(), 2);
        assert_eq!(
            (
                o[0].rev,
                o[0].runs,
                o[0].failure,
                o[0].superseded,
                o[0].open
            ),
            (2, 3, 1, 1, 1)
        );
        assert_eq!(o[0].failure_rate, Some(1.0));
        assert_eq!(
            (
                o[1].rev,
                o[1].success,
                o[1].failure,
                o[1].calls,
                o[1].failed_calls
            ),
            (1, 2, 1, 9, 3)
        );
        assert!((o[1].failure_rate.unwrap() - 1.0 / 3.0).abs() < 1e-9);
        assert!(outcomes_by_revision(&[]).is_empty());
    }
}
