//! The runtime's own tools, in one typed table: activation (`load_skill`, `search_skills`,
//! `skill_finish`), notes (`take_note`, `revise_notes`) and authoring (`skill_create`,
//! `skill_modify`, `skill_revert`, `skill_remove`, `skill_list`, `skill_show`, in
//! [`super::authoring`]).
//!
//! Each [`Builtin`] carries its declaration (name, class, description, parameters) and its
//! handler ([`Builtin::run`]), so the offered set, the registry's reserved names, MCP, REST and
//! turns all read the same table, and a new built-in is one variant the compiler makes complete.

use super::Dispatcher;
use super::outcome::{CallOutcome, from_tool_result};
use crate::runtime::RuntimeError;
use crate::tool::{Permission, RegisteredTool, ToolDecl, ToolError};
use crate::turn::ToolDef;
use crate::view::AgentView;
use serde_json::{Value, json};
use skillbase_format::Cost;
use skillbase_store::Agent;
use std::sync::{Arc, OnceLock};

/// The class of the skills runtime's own tools (`load_skill`, `search_skills`, `skill_finish`):
/// always offered, never a capability.
pub const ACTIVATION_CLASS: &str = "activation";
/// The class of the authoring tools; an agent needs this grant to write skills.
pub const AUTHORING_CLASS: &str = "skills";
/// The class of the note tools.
pub const NOTES_CLASS: &str = "notes";
/// Largest note block, in bytes.
pub const MAX_NOTES_BYTES: usize = 16 * 1024;
/// Longest `search_skills` query the schema admits, in characters. Longer text (a pasted task)
/// is cut by the ranker, never refused; this bound only keeps a call's arguments finite.
pub const MAX_QUERY_CHARS: usize = 20_000;

/// What `load_skill` says it does (the one text: turns, MCP, REST and the registry).
pub const LOAD_SKILL_DESCRIPTION: &str = "Load a skill's full instructions (and its companions) before acting on a task it covers. Pass `arguments` when the skill declares inputs.";
/// What `search_skills` says it does.
pub const SEARCH_SKILLS_DESCRIPTION: &str = "Find skills not listed in <available_skills> by a few words describing the task. Returns names and descriptions to pass to load_skill.";

/// One of the runtime's own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `load_skill`: a skill's body (level 2); the skill drives the session from now on.
    LoadSkill,
    /// `search_skills`: the agent's loadable skills ranked for a query.
    SearchSkills,
    /// `skill_finish`: the driving skill's run ends with an outcome.
    SkillFinish,
    /// `take_note`: a line appended to the session's note block.
    TakeNote,
    /// `revise_notes`: the session's note block rewritten.
    ReviseNotes,
    /// `skill_create`: a new skill in the agent's scope.
    SkillCreate,
    /// `skill_modify`: a new revision of a skill the agent sees.
    SkillModify,
    /// `skill_revert`: an earlier revision of one of the agent's skills re-activated.
    SkillRevert,
    /// `skill_remove`: one of the agent's skills retired.
    SkillRemove,
    /// `skill_list`: the skills the agent sees.
    SkillList,
    /// `skill_show`: one skill's SKILL.md, files and revisions.
    SkillShow,
}

impl Builtin {
    /// Every built-in, in offer order.
    pub const ALL: [Builtin; 11] = [
        Builtin::LoadSkill,
        Builtin::SearchSkills,
        Builtin::SkillFinish,
        Builtin::TakeNote,
        Builtin::ReviseNotes,
        Builtin::SkillCreate,
        Builtin::SkillModify,
        Builtin::SkillRevert,
        Builtin::SkillRemove,
        Builtin::SkillList,
        Builtin::SkillShow,
    ];

    /// The wire name (reserved: a registry refuses a tool of this name).
    pub fn name(self) -> &'static str {
        match self {
            Builtin::LoadSkill => "load_skill",
            Builtin::SearchSkills => "search_skills",
            Builtin::SkillFinish => "skill_finish",
            Builtin::TakeNote => "take_note",
            Builtin::ReviseNotes => "revise_notes",
            Builtin::SkillCreate => "skill_create",
            Builtin::SkillModify => "skill_modify",
            Builtin::SkillRevert => "skill_revert",
            Builtin::SkillRemove => "skill_remove",
            Builtin::SkillList => "skill_list",
            Builtin::SkillShow => "skill_show",
        }
    }

    /// The built-in of this wire name.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The class a grant names ([`ACTIVATION_CLASS`] is never granted: always offered).
    pub fn class(self) -> &'static str {
        match self {
            Builtin::LoadSkill | Builtin::SearchSkills | Builtin::SkillFinish => ACTIVATION_CLASS,
            Builtin::TakeNote | Builtin::ReviseNotes => NOTES_CLASS,
            Builtin::SkillCreate
            | Builtin::SkillModify
            | Builtin::SkillRevert
            | Builtin::SkillRemove
            | Builtin::SkillList
            | Builtin::SkillShow => AUTHORING_CLASS,
        }
    }

    /// What the model is told the tool does.
    pub fn description(self) -> &'static str {
        match self {
            Builtin::LoadSkill => LOAD_SKILL_DESCRIPTION,
            Builtin::SearchSkills => SEARCH_SKILLS_DESCRIPTION,
            Builtin::SkillFinish => {
                "Report that the skill you are following is done: outcome success or failure, with a short note."
            }
            Builtin::TakeNote => "Append a fact worth keeping to this session's note block.",
            Builtin::ReviseNotes => {
                "Rewrite this session's note block, merging or dropping entries."
            }
            Builtin::SkillCreate => {
                "Create a reusable skill in this agent's scope from a procedure that worked. Capabilities may only name what this agent is granted; vault entries by name only."
            }
            Builtin::SkillModify => {
                "Write a new revision of a skill (fields not given stay as they are). Pass expect_rev to avoid overwriting someone else's edit."
            }
            Builtin::SkillRevert => {
                "Re-activate an earlier revision of one of this agent's skills."
            }
            Builtin::SkillRemove => "Retire one of this agent's skills (its history is kept).",
            Builtin::SkillList => {
                "List the skills this agent can see, to check before creating a near-duplicate."
            }
            Builtin::SkillShow => "Show one skill's SKILL.md, files and revisions.",
        }
    }

    /// The JSON Schema of the arguments. For `load_skill` this is the shape the dispatcher
    /// validates (any name); the definition a model is offered names the loadable skills as a
    /// closed enum ([`load_skill_tool`]).
    pub fn parameters(self) -> Value {
        let name = skillbase_format::DraftField::Name.schema();
        let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
        match self {
            Builtin::LoadSkill => object(
                json!({"name": name, "arguments": {"type": "object"}}),
                &["name"],
            ),
            Builtin::SearchSkills => object(
                json!({
                    "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
                }),
                &["query"],
            ),
            Builtin::SkillFinish => object(
                json!({"outcome": {"enum": ["success", "failure"]}, "note": {"type": "string", "maxLength": 2000}}),
                &["outcome"],
            ),
            Builtin::TakeNote => object(
                json!({"text": {"type": "string", "minLength": 1, "maxLength": 2000}}),
                &["text"],
            ),
            Builtin::ReviseNotes => object(
                json!({"text": {"type": "string", "maxLength": MAX_NOTES_BYTES}}),
                &["text"],
            ),
            Builtin::SkillCreate => object(
                Value::Object(write_properties(true)),
                &["name", "description", "body"],
            ),
            Builtin::SkillModify => object(Value::Object(write_properties(false)), &["name"]),
            Builtin::SkillRevert => object(
                json!({"name": name, "rev": {"type": "integer", "minimum": 1}}),
                &["name", "rev"],
            ),
            Builtin::SkillRemove => object(json!({"name": name}), &["name"]),
            Builtin::SkillList => object(json!({}), &[]),
            Builtin::SkillShow => object(
                json!({"name": name, "rev": {"type": "integer", "minimum": 1}}),
                &["name"],
            ),
        }
    }

    /// The declaration, as a registry would hold it.
    pub fn decl(self) -> ToolDecl {
        ToolDecl {
            name: self.name().into(),
            description: self.description().into(),
            parameters: self.parameters(),
            returns: None,
            class: self.class().into(),
            permissions: vec![Permission::None],
            cost: Cost::Immediate,
            ..ToolDecl::default()
        }
    }

    /// The declaration with its compiled schema, built once per process.
    pub(super) fn tool(self) -> &'static RegisteredTool {
        static TABLE: OnceLock<Vec<RegisteredTool>> = OnceLock::new();
        let table = TABLE.get_or_init(|| {
            Builtin::ALL
                .into_iter()
                .map(|b| {
                    let decl = b.decl();
                    RegisteredTool {
                        validator: jsonschema::validator_for(&decl.parameters)
                            .expect("built-in schemas compile (tested)"),
                        id: format!("tool:{}", decl.name),
                        decl,
                        handler: None,
                        source: crate::tool::ToolSource::Config,
                    }
                })
                .collect()
        });
        &table[Builtin::ALL
            .iter()
            .position(|b| *b == self)
            .expect("in ALL")]
    }

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

/// The `load_skill` tool a model is offered: `name` is a closed enum of exactly the loadable
/// skills.
pub fn load_skill_tool(view: &AgentView, loadable: &[usize]) -> ToolDef {
    let names: Vec<&str> = loadable.iter().map(|&i| view.skills[i].name()).collect();
    ToolDef {
        name: Builtin::LoadSkill.name().into(),
        description: LOAD_SKILL_DESCRIPTION.into(),
        parameters: Arc::new(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names, "description": "The skill to load."},
                "arguments": {"type": "object", "description": "Arguments for skills that declare inputs."}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    }
}

/// The `search_skills` tool, offered when the catalog could not list every skill.
pub fn search_skills_tool() -> ToolDef {
    static TOOL: OnceLock<ToolDef> = OnceLock::new();
    TOOL.get_or_init(|| ToolDef {
        name: Builtin::SearchSkills.name().into(),
        description: SEARCH_SKILLS_DESCRIPTION.into(),
        parameters: Arc::new(Builtin::SearchSkills.parameters()),
    })
    .clone()
}

/// The properties of `skill_create` (`modify == false`) or `skill_modify`: the draft's fields,
/// the revision message, and for a modification the revision it expects to replace.
fn write_properties(create: bool) -> serde_json::Map<String, Value> {
    let mut p = skillbase_format::draft::draft_properties();
    p.insert(
        "message".into(),
        json!({"type": "string", "maxLength": skillbase_store::model::MAX_MESSAGE_CHARS}),
    );
    if !create {
        p.insert(
            "expect_rev".into(),
            json!({"type": "integer", "minimum": 0}),
        );
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_complete_and_its_schemas_compile() {
        let mut names = std::collections::HashSet::new();
        for b in Builtin::ALL {
            assert!(names.insert(b.name()), "{} twice", b.name());
            assert_eq!(Builtin::from_name(b.name()), Some(b));
            let t = b.tool();
            assert_eq!(t.decl.name, b.name());
            assert!(
                skillbase_format::validate::check_tool_class(b.class()).is_none(),
                "{}",
                b.class()
            );
        }
        assert_eq!(Builtin::from_name("web_fetch"), None);
    }
}
