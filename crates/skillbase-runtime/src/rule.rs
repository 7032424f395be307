//! Why a call was refused: the one list of refusal rules, as events, problem documents and
//! messages name them. A leaf: the envelope, the registry, `web_fetch` and the dispatcher read it.

use serde::Serialize;

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The name is not in the agent's offered set (or the skill is not loadable).
    NotOffered,
    /// The arguments do not match the tool's parameters (or the skill's inputs).
    InvalidArguments,
    /// The tool's class is not granted to the agent.
    ClassNotGranted,
    /// A skill drives the session and its revision does not declare the tool's class.
    ClassNotDeclared,
    /// An authoring tool was called while a skill drives the session.
    SkillCannotModify,
    /// The skill driving the session was retired or disabled since it was loaded.
    DrivingSkillInactive,
    /// The tool is declared but nothing in this process runs it.
    NoHandler,
    /// The agent already has `max_calls_in_flight` calls running.
    TooManyInFlight,
    /// The session used its `max_network_calls_per_session`.
    NetworkBudget,
    /// A detached call of an `immediate` tool.
    CannotDetach,
    /// The call ran past its cost class's limit and was cancelled.
    Timeout,
    /// A vault entry outside granted ∩ declared was asked for inside the tool.
    VaultNotAllowed,
    /// A destination outside granted ∩ declared was asked for inside the tool.
    DestinationNotAllowed,
    /// An authoring tool was asked for a skill declaring capabilities the agent is not granted
    /// (and the install does not hold such skills for review).
    CapabilitiesNotGranted,
    /// The tool's backend cannot take calls now (its upstream MCP server is down or still
    /// connecting); the call did not start.
    ToolUnavailable,
}

impl Rule {
    /// The rule's name, as events, problem documents and messages spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::NotOffered => "not_offered",
            Rule::InvalidArguments => "invalid_arguments",
            Rule::ClassNotGranted => "class_not_granted",
            Rule::ClassNotDeclared => "class_not_declared",
            Rule::SkillCannotModify => "skill_cannot_modify",
            Rule::DrivingSkillInactive => "driving_skill_inactive",
            Rule::NoHandler => "no_handler",
            Rule::TooManyInFlight => "too_many_in_flight",
            Rule::NetworkBudget => "network_budget",
            Rule::CannotDetach => "cannot_detach",
            Rule::Timeout => "timeout",
            Rule::VaultNotAllowed => "vault_not_allowed",
            Rule::DestinationNotAllowed => "destination_not_allowed",
            Rule::CapabilitiesNotGranted => "capabilities_not_granted",
            Rule::ToolUnavailable => "tool_unavailable",
        }
    }
}
