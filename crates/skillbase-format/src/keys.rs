//! The frontmatter keys Skillbase knows, by who defines them: the specification's, its own, and
//! the keys other agents define that it honours or accepts.

/// The six keys the Agent Skills specification allows.
pub const SPEC_KEYS: [&str; 6] = [
    "allowed-tools",
    "compatibility",
    "description",
    "license",
    "metadata",
    "name",
];

/// Skillbase's optional keys (ignored by other tools).
pub const SKILLBASE_KEYS: [&str; 9] = [
    "triggers",
    "companions",
    "inputs",
    "capabilities",
    "cost",
    "when_to_use",
    "when_not_to_use",
    "version",
    "requires",
];

/// Keys other agents define (Claude Code's) that Skillbase honours: who may invoke the skill,
/// the paths that activate it, its arguments.
pub const PEER_KEYS: [&str; 5] = [
    "disable-model-invocation",
    "user-invocable",
    "paths",
    "argument-hint",
    "arguments",
];

/// Keys other agents define that Skillbase accepts without a warning and does not use: the
/// model, the context (a forked subagent), the subagent's type, and lifecycle hooks (never run:
/// Skillbase runs nothing a skill ships).
pub const IGNORED_PEER_KEYS: [&str; 4] = ["model", "context", "agent", "hooks"];

/// Whether `key` may also be written under `metadata.skillbase` (Skillbase's own keys and the
/// peer keys it honours), so that a skill stays valid under the reference validator.
pub fn nestable(key: &str) -> bool {
    SKILLBASE_KEYS.contains(&key) || PEER_KEYS.contains(&key)
}

/// The mapping under `metadata` that may hold [`nestable`] keys.
pub const NESTED: &str = "skillbase";
