//! The runtime's own tools as one typed table: each [`Builtin`]'s wire name, class,
//! description and parameters. A leaf: the registry (`tool`) and the environment read it; the
//! handlers are `dispatch::builtins`'. The two tools a turn offers (`load_skill`,
//! `search_skills`) take their names, texts and schema from `skillbase_route::tooldef`.

use serde_json::{Value, json};
pub use skillbase_route::tooldef::ACTIVATION_CLASS;
use skillbase_route::tooldef::{
    LOAD_SKILL, LOAD_SKILL_DESCRIPTION, SEARCH_SKILLS, SEARCH_SKILLS_DESCRIPTION,
    search_skills_parameters,
};

/// The class of the authoring tools; an agent needs this grant to write skills.
pub const AUTHORING_CLASS: &str = "skills";
/// The class of the note tools.
pub const NOTES_CLASS: &str = "notes";
/// Largest note block, in bytes.
pub const MAX_NOTES_BYTES: usize = 16 * 1024;

/// Every built-in tool as (wire name, class), in offer order.
pub fn builtin_tools() -> impl Iterator<Item = (&'static str, &'static str)> {
    Builtin::ALL.into_iter().map(|b| (b.name(), b.class()))
}

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
            Builtin::LoadSkill => LOAD_SKILL,
            Builtin::SearchSkills => SEARCH_SKILLS,
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
    /// closed enum (`skillbase_route::view::load_skill_tool`).
    pub fn parameters(self) -> Value {
        let name = skillbase_format::DraftField::Name.schema();
        let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
        match self {
            Builtin::LoadSkill => object(
                json!({"name": name, "arguments": {"type": "object"}}),
                &["name"],
            ),
            Builtin::SearchSkills => search_skills_parameters(),
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
