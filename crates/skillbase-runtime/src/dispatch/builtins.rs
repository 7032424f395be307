//! The handlers of the runtime's own tools: activation (`load_skill`, `search_skills`,
//! `skill_finish`), notes (`take_note`, `revise_notes`) and authoring (`skill_create`,
//! `skill_modify`, `skill_revert`, `skill_remove`, `skill_list`, `skill_show`, in
//! [`super::authoring`]).
//!
//! The table itself (each built-in's name, class, description and parameters) is the leaf
//! module `builtin`, which the registry, the requirements and the view read without the
//! dispatcher; a new built-in is one variant there, and the compiler makes this `match`
//! complete.

use super::Dispatcher;
use super::outcome::{CallOutcome, from_tool_result};
use crate::builtin::{Builtin, MAX_NOTES_BYTES};
use crate::runtime::RuntimeError;
use crate::tool::ToolError;
use serde_json::{Value, json};
use skillbase_store::Agent;

impl Builtin {
    /// Run the built-in for one call (already through the offer, the schema and the gate).
    pub(super) async fn run(
        self,
        call: &BuiltinCall<'_>,
        args: &Value,
    ) -> Result<CallOutcome, RuntimeError> {
        let result = match self {
            // Activation keeps its typed refusals (not offered, invalid arguments).
            Builtin::LoadSkill => {
                let name = str_arg(args, "name").unwrap_or_default();
                return call
                    .dispatcher
                    .activate(
                        call.agent,
                        call.session,
                        name,
                        args.get("arguments").cloned(),
                        call.call_id,
                    )
                    .await;
            }
            Builtin::SearchSkills => call.search(args).await?,
            Builtin::SkillFinish => call.finish(args).await?,
            Builtin::TakeNote => call.take_note(args).await?,
            Builtin::ReviseNotes => call.revise_notes(args).await?,
            Builtin::SkillCreate => call.write_skill(args, true).await?,
            Builtin::SkillModify => call.write_skill(args, false).await?,
            Builtin::SkillRevert => call.revert(args).await?,
            Builtin::SkillRemove => call.remove(args).await?,
            Builtin::SkillList => call.list()?,
            Builtin::SkillShow => call.show(args).await?,
        };
        let redactor = call.dispatcher.redactor();
        Ok(from_tool_result(
            call.call_id,
            result,
            &redactor,
            call.agent.config.policies.max_result_tokens,
        ))
    }
}

/// One built-in call in progress.
pub(super) struct BuiltinCall<'a> {
    pub(super) dispatcher: &'a Dispatcher,
    pub(super) agent: &'a Agent,
    pub(super) session: &'a str,
    pub(super) call_id: &'a str,
}

/// A handler's answer: the tool's result or its failure, or the runtime's own error.
pub(super) type Out = Result<Result<Value, ToolError>, RuntimeError>;

pub(super) fn str_arg<'v>(args: &'v Value, k: &str) -> Option<&'v str> {
    args.get(k).and_then(Value::as_str)
}

impl BuiltinCall<'_> {
    async fn search(&self, args: &Value) -> Out {
        let q = str_arg(args, "query").unwrap_or_default();
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(5) as usize;
        let hits = self
            .dispatcher
            .runtime
            .search_skills(&self.agent.name, q, limit)
            .await?;
        Ok(Ok(serde_json::to_value(hits).unwrap_or_default()))
    }

    async fn finish(&self, args: &Value) -> Out {
        let outcome = str_arg(args, "outcome").unwrap_or("success");
        let note = str_arg(args, "note").unwrap_or_default();
        let Some((rec, disabled)) = self
            .dispatcher
            .finish_run(&self.agent.name, self.session, outcome, note)
            .await?
        else {
            return Ok(Err(ToolError::new(
                "no skill is running in this session; nothing to finish",
            )));
        };
        Ok(Ok(json!({
            "skill": rec.skill,
            "rev": rec.rev,
            "outcome": outcome,
            "disabled_for_drift": disabled,
        })))
    }

    async fn take_note(&self, args: &Value) -> Out {
        let store = &self.dispatcher.runtime.store;
        let mut notes = store.note(&self.agent.name, self.session).await?;
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
        store
            .set_note(&self.agent.name, self.session, &notes)
            .await?;
        Ok(Ok(json!({"notes": notes})))
    }

    async fn revise_notes(&self, args: &Value) -> Out {
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
            .set_note(&self.agent.name, self.session, &text)
            .await?;
        Ok(Ok(json!({"notes": text})))
    }
}
