//! Authoring built-ins: an agent writes skills into its own scope.
//!
//! Revisions are authored `agent:<id>/inline`; declared capabilities are limited to the agent's
//! grants ([`crate::envelope::excess`], with the same host coverage as calls), or held for review
//! when the install asks for it; approval never grants anything. Every write goes through one
//! [`SkillDraft`]: the tool's schema (`builtins::write_properties`) is the draft's fields plus
//! `message` (and `expect_rev` for a modification), and the SKILL.md is rendered by the format
//! crate.

use super::builtins::{BuiltinCall, Out, str_arg};
use crate::rule::Rule;
use crate::tool::{Failure, ToolError};
use crate::write::WriteMode;
use serde_json::{Value, json};
use skillbase_format::{Bundle, BundleFile, BundlePath, Digest, SkillDraft, SkillName};
use skillbase_store::{Author, PutRequest, Scope, SkillEntry, StoreError, WriteKind, WriteOutcome};

impl BuiltinCall<'_> {
    /// `skill_create` and `skill_modify`.
    pub(super) async fn write_skill(&self, args: &Value, create: bool) -> Out {
        Ok(self.write_draft(args, create).await)
    }

    /// [`Self::write_skill`]'s steps, in order: the name, the draft from the arguments over
    /// what the agent sees now, the capabilities against the agent's grants, the bundle, and the
    /// store's write. Every refusal goes to the model.
    async fn write_draft(&self, args: &Value, create: bool) -> Result<Value, ToolError> {
        let store = &self.dispatcher.runtime.store;
        let agent = &self.agent.name;
        let Ok(name) = SkillName::parse(str_arg(args, "name").unwrap_or_default()) else {
            // Not quoted back (see `Rule::NotOffered`).
            return Err(ToolError::failed(
                Failure::Invalid,
                "invalid skill name: use 1-64 lowercase letters, digits and single hyphens, not starting or ending with a hyphen",
            ));
        };
        let scope = Scope::Agent(agent.clone());
        // Start from what the agent sees now when modifying: its own record, or the shared one
        // when its allowlist covers the name. A shared skill outside the allowlist is as if
        // missing (no "already exists", nothing of it copied).
        let current = store
            .index()
            .resolve(agent, name.as_str())
            .filter(|e| e.scope == scope || self.agent.config.skills.contains(name.as_str()))
            .cloned();
        let draft = start_draft(&name, current.as_deref(), create, args)?;
        let pending = self.check_envelope(&draft)?;
        let bundle = self.draft_bundle(&draft, current.as_deref(), &name).await?;
        let own = store.index().get(&scope, name.as_str()).map(|e| e.head_rev);
        let req = PutRequest {
            scope: scope.clone(),
            bundle,
            author: Author::AgentInline(agent.clone()),
            // The bundle is checked by the store's write guard; the message is not a file.
            message: self
                .dispatcher
                .redactor()
                .redact(str_arg(args, "message").unwrap_or("written by the agent"))
                .into_owned(),
            expect_rev: args
                .get("expect_rev")
                .and_then(Value::as_i64)
                .or(if create { Some(0) } else { own }),
            signature: None,
        };
        match self.put_draft(req, pending).await {
            Ok(o) => Ok(self.written(&o, pending)),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Capabilities beyond the agent's grants: refused, or held for review when asked. Returns
    /// whether the revision waits for review (also when the agent's revisions always do).
    /// (Hosts are covered as a call's destinations are: a wildcard grant covers a subdomain.)
    fn check_envelope(&self, draft: &SkillDraft) -> Result<bool, ToolError> {
        let caps = &draft.capabilities;
        let beyond = crate::envelope::excess(
            &self.agent.config.grants,
            &as_strs(&caps.tools),
            &as_strs(&caps.vault),
            &as_strs(&caps.hosts),
        );
        let policies = &self.agent.config.policies;
        if !beyond.is_empty() && !policies.review_envelope_expansion {
            return Err(ToolError::refused(
                Rule::CapabilitiesNotGranted,
                format!(
                    "the skill declares capabilities this agent is not granted ({}); declare only granted tools, vault entries and hosts",
                    beyond.join(", ")
                ),
            ));
        }
        Ok(policies.review_agent_revisions || !beyond.is_empty())
    }

    /// The draft's bundle: its SKILL.md, and the other files of the current revision kept.
    async fn draft_bundle(
        &self,
        draft: &SkillDraft,
        current: Option<&SkillEntry>,
        name: &SkillName,
    ) -> Result<Bundle, ToolError> {
        let store = &self.dispatcher.runtime.store;
        // Keep the other files of the current revision.
        let mut files = vec![file("SKILL.md", draft.to_skill_md().into_bytes())];
        if let Some(e) = current
            && let Ok((_, b)) = store.bundle(&e.scope, name.as_str(), None).await
        {
            for f in b.files() {
                if f.path.as_str() != "SKILL.md" && f.path.as_str() != "skill.md" {
                    files.push(f.clone());
                }
            }
        }
        Bundle::from_files(files, &store.limits)
            .map_err(|e| ToolError::failed(Failure::Invalid, e.to_string()))
    }

    /// Write the revision as the agent's policies say: held for review when `pending`, else
    /// staged as a candidate when revisions are staged, else made active.
    async fn put_draft(&self, req: PutRequest, pending: bool) -> Result<WriteOutcome, StoreError> {
        let policies = &self.agent.config.policies;
        let mode = if pending {
            WriteMode::Pending
        } else if policies.stage_agent_revisions {
            // Staged beside the active revision, judged by its runs (a new skill is written).
            WriteMode::Candidate {
                percent: policies.candidate_percent,
                min_runs: policies.candidate_min_runs,
            }
        } else {
            WriteMode::Active
        };
        self.dispatcher.runtime.writer().put_as(req, mode).await
    }

    /// The answer to a write: what was written, whether it waits for review, a candidate's
    /// terms, and the store's warnings (left out when none).
    fn written(&self, o: &WriteOutcome, pending: bool) -> Value {
        let policies = &self.agent.config.policies;
        let mut v = json!({
            "name": o.name,
            "scope": o.scope,
            "rev": o.rev,
            "result": o.kind,
            "pending_review": o.kind == WriteKind::Pending || (pending && o.kind == WriteKind::Created),
        });
        if o.kind == WriteKind::Candidate {
            v["candidate"] = json!({
                "percent": policies.candidate_percent,
                "min_runs": policies.candidate_min_runs,
                "note": "staged beside the active revision: served to a share of sessions, promoted when its outcomes are not worse",
            });
        }
        // A version not raised: the author is told in the answer (left out when none).
        if !o.warnings.is_empty() {
            v["warnings"] = json!(o.warnings);
        }
        v
    }

    /// `skill_revert`.
    pub(super) async fn revert(&self, args: &Value) -> Out {
        let name = str_arg(args, "name").unwrap_or_default();
        let rev = args.get("rev").and_then(Value::as_i64).unwrap_or(0);
        let scope = Scope::Agent(self.agent.name.clone());
        let author = Author::AgentInline(self.agent.name.clone());
        let writer = self.dispatcher.runtime.writer();
        Ok(match writer.revert(&scope, name, rev, &author).await {
            Ok(o) => Ok(json!({"name": o.name, "rev": o.rev, "status": o.status})),
            Err(e) => Err(store_error(e)),
        })
    }

    /// `skill_remove`: retire, through the store's one transition table.
    pub(super) async fn remove(&self, args: &Value) -> Out {
        let name = str_arg(args, "name").unwrap_or_default();
        let scope = Scope::Agent(self.agent.name.clone());
        let author = Author::AgentInline(self.agent.name.clone());
        let writer = self.dispatcher.runtime.writer();
        let change = skillbase_store::StatusChange::Retire;
        let reason = json!({"by": "skill_remove"});
        Ok(
            match writer
                .set_status(&scope, name, change, &author, reason, None)
                .await
            {
                Ok(o) => Ok(json!({"name": o.name, "status": o.status})),
                Err(e) => Err(store_error(e)),
            },
        )
    }

    /// `skill_list`.
    pub(super) fn list(&self) -> Out {
        let view = self.dispatcher.runtime.view(&self.agent.name)?;
        let list: Vec<Value> = view
            .skills
            .iter()
            .map(|s| json!({"name": s.name(), "description": s.entry.meta.description, "scope": s.entry.scope, "rev": s.entry.active_rev}))
            .collect();
        Ok(Ok(Value::Array(list)))
    }

    /// `skill_show`.
    pub(super) async fn show(&self, args: &Value) -> Out {
        let name = str_arg(args, "name").unwrap_or_default();
        let view = self.dispatcher.runtime.view(&self.agent.name)?;
        let Some(s) = view.get(name) else {
            return Ok(Err(ToolError::failed(
                Failure::NotFound,
                "no skill of that name is visible to this agent; skill_list lists them",
            )));
        };
        let store = &self.dispatcher.runtime.store;
        let rev = args.get("rev").and_then(Value::as_i64);
        match store.bundle(&s.entry.scope, name, rev).await {
            Ok((info, bundle)) => {
                let history = store.history(&s.entry.scope, name).await?;
                Ok(Ok(json!({
                    "name": name,
                    "scope": s.entry.scope,
                    "revision": info,
                    "skill_md": String::from_utf8_lossy(&bundle.skill_md().bytes),
                    "files": bundle.files().iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
                    "revisions": history.iter().map(|r| json!({"rev": r.rev, "author": r.author, "message": r.message, "active": r.active})).collect::<Vec<_>>(),
                })))
            }
            Err(e) => Ok(Err(store_error(e))),
        }
    }
}

/// The draft a write starts from: a new one for `skill_create` (refused when the name is
/// taken), the current revision for `skill_modify` (refused when there is none), with the
/// arguments applied and checked complete.
fn start_draft(
    name: &SkillName,
    current: Option<&SkillEntry>,
    create: bool,
    args: &Value,
) -> Result<SkillDraft, ToolError> {
    if create && current.is_some() {
        return Err(ToolError::failed(
            Failure::Conflict,
            format!(
                "a skill named '{name}' already exists for this agent; use skill_modify, or choose another name"
            ),
        ));
    }
    let mut draft = match current {
        None if !create => {
            return Err(ToolError::failed(
                Failure::NotFound,
                "no skill of that name to modify; use skill_create",
            ));
        }
        None => SkillDraft::new(name.clone()),
        Some(e) => {
            let mut d = SkillDraft::from_meta(name.clone(), &e.meta, &e.body);
            d.keep_other_keys(&e.frontmatter);
            d
        }
    };
    if let Err(e) = draft.apply_all(args).and_then(|()| draft.check_complete()) {
        return Err(ToolError::failed(Failure::Invalid, e.to_string()));
    }
    Ok(draft)
}

fn file(path: &str, bytes: Vec<u8>) -> BundleFile {
    BundleFile {
        path: BundlePath::parse(path).expect("static path"),
        digest: Digest::of(&bytes),
        bytes: bytes.into(),
        executable: false,
    }
}

/// A store error as the tool's typed failure.
fn store_error(e: StoreError) -> ToolError {
    let kind = match &e {
        StoreError::Conflict { .. } => Failure::Stale,
        StoreError::Retired { .. }
        | StoreError::AgentExists(_)
        | StoreError::NotPending { .. }
        | StoreError::StatusRefused { .. }
        | StoreError::VersionNotIncreased { .. } => Failure::Conflict,
        StoreError::NotFound { .. } | StoreError::AgentNotFound(_) => Failure::NotFound,
        StoreError::NoSuchRevision { .. } => Failure::NoRevision,
        StoreError::InvalidSkill(_) | StoreError::Bundle(_) | StoreError::Invalid(_) => {
            Failure::Invalid
        }
        _ => Failure::Internal,
    };
    ToolError::failed(kind, e.to_string())
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
