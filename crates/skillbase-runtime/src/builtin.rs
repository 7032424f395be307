//! The runtime's own tools: activation (`load_skill`, `search_skills`, `skill_finish`), notes
//! (`take_note`, `revise_notes`) and authoring (`skill_create`, `skill_modify`, `skill_revert`,
//! `skill_remove`, `skill_list`, `skill_show`).
//!
//! Authoring writes revisions authored `agent:<id>/inline` into the agent's own scope, with
//! declared capabilities limited to the agent's grants (or held for review when the install
//! asks for it); approval never grants anything.

use crate::dispatch::{
    ACTIVATION_CLASS, AUTHORING_CLASS, CallOutcome, Dispatcher, MAX_NOTES_BYTES, NOTES_CLASS,
    end_run_and_check_drift,
};
use crate::runtime::RuntimeError;
use crate::tool::{Failure, Permission, ToolDecl, ToolError};
use serde_json::{Value, json};
use skillbase_format::{Bundle, BundleFile, BundlePath, Cost, Digest};
use skillbase_store::{Agent, Author, PutRequest, Scope, StoreError, WriteKind};

fn decl(name: &str, class: &str, description: &str, parameters: Value) -> ToolDecl {
    ToolDecl {
        name: name.into(),
        description: description.into(),
        parameters,
        returns: None,
        class: class.into(),
        permissions: vec![Permission::None],
        cost: Cost::Immediate,
    }
}

const NAME_SCHEMA: &str = r#"{"type": "string", "minLength": 1, "maxLength": 64}"#;

fn name_schema() -> Value {
    serde_json::from_str(NAME_SCHEMA).expect("static schema")
}

/// Declarations of every built-in tool.
pub fn declarations() -> Vec<ToolDecl> {
    let skill_fields = json!({
        "name": name_schema(),
        "description": {"type": "string", "minLength": 1, "maxLength": 1024},
        "body": {"type": "string", "minLength": 1, "maxLength": 200_000},
        "triggers": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200}, "maxItems": 64},
        "companions": {"type": "array", "items": name_schema(), "maxItems": 32},
        "inputs": {"type": "object"},
        "capabilities": {
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {"type": "string"}},
                "vault": {"type": "array", "items": {"type": "string"}},
                "hosts": {"type": "array", "items": {"type": "string"}}
            },
            "additionalProperties": false
        },
        "cost": {"enum": ["immediate", "seconds", "tens_of_seconds"]},
        "message": {"type": "string", "maxLength": skillbase_store::model::MAX_MESSAGE_CHARS}
    });
    let mut modify = skill_fields.clone();
    modify["expect_rev"] = json!({"type": "integer", "minimum": 0});
    vec![
        decl(
            // The registry's schema validates the shape; the name is checked against the agent's
            // view at activation. The offered definition (a closed enum) is the turn's.
            "load_skill",
            ACTIVATION_CLASS,
            crate::turn::LOAD_SKILL_DESCRIPTION,
            json!({"type": "object", "properties": {"name": name_schema(), "arguments": {"type": "object"}}, "required": ["name"], "additionalProperties": false}),
        ),
        decl(
            "search_skills",
            ACTIVATION_CLASS,
            crate::turn::SEARCH_SKILLS_DESCRIPTION,
            json!({"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 1000}, "limit": {"type": "integer", "minimum": 1, "maximum": 20}}, "required": ["query"], "additionalProperties": false}),
        ),
        decl(
            "skill_finish",
            ACTIVATION_CLASS,
            "Report that the skill you are following is done: outcome success or failure, with a short note.",
            json!({"type": "object", "properties": {"outcome": {"enum": ["success", "failure"]}, "note": {"type": "string", "maxLength": 2000}}, "required": ["outcome"], "additionalProperties": false}),
        ),
        decl(
            "take_note",
            NOTES_CLASS,
            "Append a fact worth keeping to this session's note block.",
            json!({"type": "object", "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 2000}}, "required": ["text"], "additionalProperties": false}),
        ),
        decl(
            "revise_notes",
            NOTES_CLASS,
            "Rewrite this session's note block, merging or dropping entries.",
            json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": MAX_NOTES_BYTES}}, "required": ["text"], "additionalProperties": false}),
        ),
        decl(
            "skill_create",
            AUTHORING_CLASS,
            "Create a reusable skill in this agent's scope from a procedure that worked. Capabilities may only name what this agent is granted; vault entries by name only.",
            json!({"type": "object", "properties": skill_fields, "required": ["name", "description", "body"], "additionalProperties": false}),
        ),
        decl(
            "skill_modify",
            AUTHORING_CLASS,
            "Write a new revision of a skill (fields not given stay as they are). Pass expect_rev to avoid overwriting someone else's edit.",
            json!({"type": "object", "properties": modify, "required": ["name"], "additionalProperties": false}),
        ),
        decl(
            "skill_revert",
            AUTHORING_CLASS,
            "Re-activate an earlier revision of one of this agent's skills.",
            json!({"type": "object", "properties": {"name": name_schema(), "rev": {"type": "integer", "minimum": 1}}, "required": ["name", "rev"], "additionalProperties": false}),
        ),
        decl(
            "skill_remove",
            AUTHORING_CLASS,
            "Retire one of this agent's skills (its history is kept).",
            json!({"type": "object", "properties": {"name": name_schema()}, "required": ["name"], "additionalProperties": false}),
        ),
        decl(
            "skill_list",
            AUTHORING_CLASS,
            "List the skills this agent can see, to check before creating a near-duplicate.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        decl(
            "skill_show",
            AUTHORING_CLASS,
            "Show one skill's SKILL.md, files and revisions.",
            json!({"type": "object", "properties": {"name": name_schema(), "rev": {"type": "integer", "minimum": 1}}, "required": ["name"], "additionalProperties": false}),
        ),
    ]
}

/// One built-in call in progress.
pub(crate) struct Builtin<'a> {
    pub dispatcher: &'a Dispatcher,
    pub agent: &'a Agent,
    pub session: &'a str,
    pub call_id: &'a str,
    pub driving: bool,
}

type Out = Result<Result<Value, ToolError>, RuntimeError>;

fn str_arg<'v>(args: &'v Value, k: &str) -> Option<&'v str> {
    args.get(k).and_then(Value::as_str)
}

impl Builtin<'_> {
    pub async fn run(&self, name: &str, args: &Value) -> Out {
        match name {
            "load_skill" => {
                let skill = str_arg(args, "name").unwrap_or_default();
                let outcome = self
                    .dispatcher
                    .activate(
                        self.agent,
                        self.session,
                        skill,
                        args.get("arguments").cloned(),
                        self.call_id,
                    )
                    .await?;
                Ok(match outcome {
                    CallOutcome::Done { result, .. } => Ok(result),
                    other => Err(ToolError::new(other.for_model())),
                })
            }
            "search_skills" => {
                let q = str_arg(args, "query").unwrap_or_default();
                let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(5) as usize;
                let hits = self
                    .dispatcher
                    .runtime
                    .search_skills(&self.agent.name, q, limit)?;
                Ok(Ok(serde_json::to_value(hits).unwrap_or_default()))
            }
            "skill_finish" => self.finish(args).await,
            "take_note" => {
                let store = &self.dispatcher.runtime.store;
                let mut notes = store.note(self.session).await?;
                // Notes are kept and shown again: never with a vault value in them.
                let redactor = self.dispatcher.redactor();
                let text = redactor.redact(str_arg(args, "text").unwrap_or_default().trim());
                let text = text.as_ref();
                if notes.len() + text.len() + 3 > MAX_NOTES_BYTES {
                    return Ok(Err(ToolError::new(format!(
                        "the note block is full ({MAX_NOTES_BYTES} bytes); use revise_notes to merge or drop entries"
                    ))));
                }
                if !notes.is_empty() {
                    notes.push('\n');
                }
                notes.push_str("- ");
                notes.push_str(text);
                store.set_note(self.session, &notes).await?;
                Ok(Ok(json!({"notes": notes})))
            }
            "revise_notes" => {
                let redactor = self.dispatcher.redactor();
                let text = redactor.redact(str_arg(args, "text").unwrap_or_default());
                // The schema counts characters; the limit is in bytes.
                if text.len() > MAX_NOTES_BYTES {
                    return Ok(Err(ToolError::new(format!(
                        "the note block may hold {MAX_NOTES_BYTES} bytes; this text has {}",
                        text.len()
                    ))));
                }
                self.dispatcher
                    .runtime
                    .store
                    .set_note(self.session, &text)
                    .await?;
                Ok(Ok(json!({"notes": text})))
            }
            "skill_create" => self.write_skill(args, true).await,
            "skill_modify" => self.write_skill(args, false).await,
            "skill_revert" => {
                let name = str_arg(args, "name").unwrap_or_default();
                let rev = args.get("rev").and_then(Value::as_i64).unwrap_or(0);
                let scope = Scope::Agent(self.agent.name.clone());
                match self
                    .dispatcher
                    .runtime
                    .store
                    .revert(
                        &scope,
                        name,
                        rev,
                        &Author::AgentInline(self.agent.name.clone()),
                    )
                    .await
                {
                    Ok(o) => Ok(Ok(
                        json!({"name": o.name, "rev": o.rev, "status": o.status}),
                    )),
                    Err(e) => Ok(Err(store_error(e))),
                }
            }
            "skill_remove" => {
                let name = str_arg(args, "name").unwrap_or_default();
                let scope = Scope::Agent(self.agent.name.clone());
                match self
                    .dispatcher
                    .runtime
                    .store
                    .set_status(
                        &scope,
                        name,
                        skillbase_store::StatusChange::Retire,
                        &Author::AgentInline(self.agent.name.clone()),
                        json!({"by": "skill_remove"}),
                    )
                    .await
                {
                    Ok(o) => Ok(Ok(json!({"name": o.name, "status": o.status}))),
                    Err(e) => Ok(Err(store_error(e))),
                }
            }
            "skill_list" => {
                let view = self.dispatcher.runtime.view(&self.agent.name)?;
                let list: Vec<Value> = view
                    .skills
                    .iter()
                    .map(|s| json!({"name": s.name(), "description": s.entry.meta.description, "scope": s.entry.scope, "rev": s.entry.active_rev}))
                    .collect();
                Ok(Ok(Value::Array(list)))
            }
            "skill_show" => {
                let name = str_arg(args, "name").unwrap_or_default();
                let view = self.dispatcher.runtime.view(&self.agent.name)?;
                let Some(s) = view.get(name) else {
                    return Ok(Err(ToolError::failed(
                        Failure::NotFound,
                        "no skill of that name is visible to this agent; skill_list lists them"
                            .to_owned(),
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
            other => Ok(Err(ToolError::new(format!("unknown built-in '{other}'")))),
        }
    }

    async fn finish(&self, args: &Value) -> Out {
        let Some(run) = self
            .dispatcher
            .driving_run(&self.agent.name, self.session)
            .await?
        else {
            return Ok(Err(ToolError::new(
                "no skill is running in this session; nothing to finish",
            )));
        };
        let outcome = str_arg(args, "outcome").unwrap_or("success");
        // Kept with the run and in events: never with a vault value in it.
        let note = self
            .dispatcher
            .redactor()
            .redact(str_arg(args, "note").unwrap_or_default())
            .into_owned();
        // The run's counters are complete before it ends.
        self.dispatcher.flush().await;
        let (rec, disabled) = end_run_and_check_drift(
            &self.dispatcher.runtime,
            &self.agent.name,
            run.id,
            outcome,
            &note,
            self.agent.config.policies.failure_threshold,
        )
        .await?;
        self.dispatcher.refresh_run(self.session).await?;
        Ok(Ok(json!({
            "skill": rec.skill,
            "rev": rec.rev,
            "outcome": outcome,
            "disabled_for_drift": disabled,
        })))
    }

    async fn write_skill(&self, args: &Value, create: bool) -> Out {
        let _ = self.driving;
        let store = &self.dispatcher.runtime.store;
        let agent = &self.agent.name;
        let name = str_arg(args, "name").unwrap_or_default().to_owned();
        if skillbase_format::SkillName::parse(&name).is_err() {
            // Not quoted back (see `Rule::NotOffered`).
            return Ok(Err(ToolError::failed(
                Failure::Invalid,
                "invalid skill name: use 1-64 lowercase letters, digits and single hyphens, not starting or ending with a hyphen".to_owned(),
            )));
        }
        let scope = Scope::Agent(agent.clone());
        // Start from what the agent sees now when modifying: its own record, or the shared one
        // when its allowlist covers the name. A shared skill outside the allowlist is as if
        // missing (no "already exists", nothing of it copied).
        let current = store
            .index()
            .resolve(agent, &name)
            .filter(|e| e.scope == scope || self.agent.config.skills.contains(&name))
            .cloned();
        if create && current.is_some() {
            return Ok(Err(ToolError::failed(
                Failure::Conflict,
                format!(
                    "a skill named '{name}' already exists for this agent; use skill_modify, or choose another name"
                ),
            )));
        }
        if !create && current.is_none() {
            return Ok(Err(ToolError::failed(
                Failure::NotFound,
                "no skill of that name to modify; use skill_create".to_owned(),
            )));
        }
        let base = current.as_ref().map(|e| &e.meta);
        let pick_str = |k: &str, old: Option<&str>| -> Option<String> {
            str_arg(args, k)
                .map(str::to_owned)
                .or_else(|| old.map(str::to_owned))
        };
        let description =
            pick_str("description", base.map(|m| m.description.as_str())).unwrap_or_default();
        let body = pick_str("body", current.as_ref().map(|e| e.body.as_str())).unwrap_or_default();
        let list = |k: &str, old: Vec<String>| -> Vec<String> {
            match args.get(k).and_then(Value::as_array) {
                Some(a) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                None => old,
            }
        };
        let triggers = list(
            "triggers",
            base.map(|m| m.triggers.clone()).unwrap_or_default(),
        );
        let companions = list(
            "companions",
            base.map(|m| m.companions.iter().map(|c| c.to_string()).collect())
                .unwrap_or_default(),
        );
        let inputs = args
            .get("inputs")
            .cloned()
            .or_else(|| base.and_then(|m| m.inputs.clone()));
        let caps = args.get("capabilities").cloned().unwrap_or_else(|| {
            base.map(|m| serde_json::to_value(&m.capabilities).unwrap_or_default())
                .unwrap_or_else(|| json!({}))
        });
        let cost = pick_str("cost", base.map(|m| m.cost.as_str()));
        // Capabilities beyond the agent's grants: refused, or held for review when asked.
        // (Hosts are covered as a call's destinations are: a wildcard grant covers a subdomain.)
        let list = |k: &str| -> Vec<&str> {
            caps.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect()
        };
        let beyond = crate::envelope::excess(
            &self.agent.config.grants,
            &list("tools"),
            &list("vault"),
            &list("hosts"),
        );
        let policies = &self.agent.config.policies;
        if !beyond.is_empty() && !policies.review_envelope_expansion {
            return Ok(Err(ToolError::refused(
                crate::dispatch::Rule::CapabilitiesNotGranted,
                format!(
                    "the skill declares capabilities this agent is not granted ({}); declare only granted tools, vault entries and hosts",
                    beyond.join(", ")
                ),
            )));
        }
        let pending = policies.review_agent_revisions || !beyond.is_empty();
        let mut md = String::from("---\n");
        md.push_str(&format!("name: {name}\n"));
        md.push_str(&format!("description: {}\n", json_str(&description)));
        if !triggers.is_empty() {
            md.push_str(&format!("triggers: {}\n", Value::from(triggers.clone())));
        }
        if !companions.is_empty() {
            md.push_str(&format!(
                "companions: {}\n",
                Value::from(companions.clone())
            ));
        }
        if let Some(i) = &inputs {
            md.push_str(&format!("inputs: {i}\n"));
        }
        if caps.as_object().is_some_and(|o| {
            o.values()
                .any(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        }) {
            md.push_str(&format!("capabilities: {caps}\n"));
        }
        if let Some(c) = &cost {
            md.push_str(&format!("cost: {c}\n"));
        }
        md.push_str("---\n");
        md.push_str(&body);
        md.push('\n');
        // Keep the other files of the current revision.
        let mut files = vec![file("SKILL.md", md.into_bytes())];
        if let Some(e) = &current
            && let Ok((_, b)) = store.bundle(&e.scope, &name, None).await
        {
            for f in b.files() {
                if f.path.as_str() != "SKILL.md" && f.path.as_str() != "skill.md" {
                    files.push(f.clone());
                }
            }
        }
        let bundle = match Bundle::from_files(files, &store.limits) {
            Ok(b) => b,
            Err(e) => return Ok(Err(ToolError::failed(Failure::Invalid, e.to_string()))),
        };
        let own = store.index().get(&scope, &name).map(|e| e.head_rev);
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
        };
        let res = if pending {
            store.put_pending(req).await
        } else {
            store.put(req).await
        };
        match res {
            Ok(o) => Ok(Ok(json!({
                "name": o.name,
                "scope": o.scope,
                "rev": o.rev,
                "result": o.kind,
                "pending_review": o.kind == WriteKind::Pending || (pending && o.kind == WriteKind::Created),
            }))),
            Err(e) => Ok(Err(store_error(e))),
        }
    }
}

fn file(path: &str, bytes: Vec<u8>) -> BundleFile {
    BundleFile {
        path: BundlePath::parse(path).expect("static path"),
        digest: Digest::of(&bytes),
        bytes: bytes.into(),
        executable: false,
    }
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn json_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn store_error(e: StoreError) -> ToolError {
    let kind = match &e {
        StoreError::Conflict { .. } => Failure::Stale,
        StoreError::Retired { .. } | StoreError::AgentExists(_) => Failure::Conflict,
        StoreError::NotFound { .. } | StoreError::AgentNotFound(_) => Failure::NotFound,
        StoreError::NoSuchRevision { .. } => Failure::NoRevision,
        StoreError::InvalidSkill(_) | StoreError::Bundle(_) | StoreError::Invalid(_) => {
            Failure::Invalid
        }
        _ => Failure::Internal,
    };
    ToolError::failed(kind, e.to_string())
}
