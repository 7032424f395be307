//! A tool as the model is offered it (name, description, parameters), and the vocabulary of the
//! two tools a turn offers: `load_skill` over the loadable names (built by the view, which knows
//! them) and `search_skills` when the catalog was ranked. A leaf: the runtime's table of its
//! own tools takes these names, texts and schema from here.

use serde::Serialize;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// The name the model calls.
    pub name: String,
    /// What the model is told the tool does.
    pub description: String,
    /// JSON Schema of the arguments (shared: the `load_skill` schema of a view is built once).
    pub parameters: Arc<serde_json::Value>,
}

/// The class of the skills runtime's own tools (`load_skill`, `search_skills`, `skill_finish`):
/// always offered, never a capability, so a skill that requires it is never unmet for it.
pub const ACTIVATION_CLASS: &str = "activation";

/// The wire name of the tool that loads a skill.
pub const LOAD_SKILL: &str = "load_skill";
/// The wire name of the tool that searches the agent's skills.
pub const SEARCH_SKILLS: &str = "search_skills";

/// What `load_skill` says it does (the one text: turns, MCP, REST and the registry).
pub const LOAD_SKILL_DESCRIPTION: &str = "Load a skill's full instructions (and its companions) before acting on a task it covers. Pass `arguments` when the skill declares inputs.";
/// What `search_skills` says it does.
pub const SEARCH_SKILLS_DESCRIPTION: &str = "Find skills not listed in <available_skills> by a few words describing the task. Returns names and descriptions to pass to load_skill, each with a confidence (0 to 1) that it is the skill the task needs; if the best is below 0.5, likely no skill fits.";

/// Longest `search_skills` query the schema admits, in characters. Longer text (a pasted task)
/// is cut by the ranker, never refused; this bound only keeps a call's arguments finite.
pub const MAX_QUERY_CHARS: usize = 20_000;

/// The JSON Schema of `search_skills`' arguments: a query and how many hits.
pub fn search_skills_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// The `search_skills` tool, offered when the catalog could not list every skill.
pub fn search_skills_tool() -> ToolDef {
    static TOOL: OnceLock<ToolDef> = OnceLock::new();
    TOOL.get_or_init(|| ToolDef {
        name: SEARCH_SKILLS.into(),
        description: SEARCH_SKILLS_DESCRIPTION.into(),
        parameters: Arc::new(search_skills_parameters()),
    })
    .clone()
}
