//! Skillbase's runtime: for an agent, a session and the user's message, what the model is shown
//! this turn, and why; and every call the model makes, checked against the agent's grants.
//!
//! [`Engine`] is the one service ([`Engine::builder`]; `examples/embed.rs` shows a whole turn, a
//! load, a harness tool behind the envelope and a finished run). The crate's other public items
//! are what the engine's operations take and answer, re-exported here; its two public modules
//! are [`event`] (the typed events every reader uses) and [`transcript`] (a conversation
//! imported for learning). The doctor, evaluation and dreaming are `skillbase-insight`'s, over
//! the engine's reads and these events.
//!
//! What the model sees (the view, the turn's phases, `requires:` decisions, ranking) is
//! `skillbase-route`'s, pure; this crate caches views and runs turns over them.
//!
//! Inside (private): `runtime` (views, sessions, `load_skill`, `search_skills`, `pinned`),
//! `environment` (what `requires:` is checked against), `dispatch` (the offered set and the
//! call pipeline: admit, validate, gate, bounds, handler, record; runs and drift), `envelope`
//! (granted ∩ declared), `tool` and `builtin` (the registry and the runtime's own tools),
//! `gateway` (upstream MCP servers and `http` tools), `vault` and `redact` (secrets at rest and
//! scrubbed from every output), `files` (level 3 on disk), `semantic` (the embedding stage),
//! `events` (the writer behind a turn), `dreaming` (the `[dreaming]` table the engine keeps).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod builtin;
mod config;
mod dispatch;
mod dreaming;
mod engine;
mod envelope;
mod environment;
pub mod event;
mod events;
mod files;
mod gateway;
mod reading;
mod redact;
mod rerank;
mod rule;
mod runtime;
mod semantic;
mod telemetry;
mod tool;
pub mod transcript;
mod vault;
mod web_fetch;
mod write;

// The engine, and what its operations take and answer.
pub use builtin::{ACTIVATION_CLASS, builtin_tools};
pub use config::RuntimeConfig;
pub use dispatch::{
    AUTHORING_CLASS, CallMode, CallOutcome, EntryKind, MAX_NOTES_BYTES, OfferedEntry, OfferedSet,
    PostResultError,
};
pub use dreaming::{DreamingConfig, ModelConfig};
pub use engine::{Engine, EngineBuilder, EngineError};
pub use envelope::class_granted;
/// What a skill declares beyond an agent's grants (`tools:<class>`, `vault:<entry>`,
/// `hosts:<pattern>`), as the gate would refuse it.
pub use envelope::excess as grants_excess;
/// Whether a destination matches a host pattern (`*.example.org`, `host:port`): what a tool
/// checks a call's destination against [`CallContext::hosts_allowed`] with.
pub use envelope::host_matches;
pub use rule::Rule;
pub use runtime::{LoadResult, Pinned, PinnedSet, RuntimeError, SearchHit};
// What the model sees (`skillbase-route`'s view and turn phases, re-exported for the edges).
pub use skillbase_route::tooldef::ToolDef;
pub use skillbase_route::turn::{
    Activation, CatalogReport, EXPLICIT_ONLY, NAME_ONLY, NOT_LISTED, Omission, OmissionDetail,
    OmissionList, TurnContext, TurnOptions, TurnReport, full_catalog_tokens, resolve, resolve_with,
};
pub use skillbase_route::view::{
    AgentView, load_skill_tool, offered_in, offered_to_model, visible, visible_in,
};
pub use write::{SkillWriter, WriteMode};

// Tools a harness registers, and the upstream servers of the gateway.
pub use gateway::{
    Gateway, GatewayError, GatewaySettings, McpServerConfig, Origin as ServerOrigin, ServerEntry,
    ServerState, ServerStatus, ToolInfo,
};
pub use telemetry::{Protocol as OtlpProtocol, SpanScope, TelemetryConfig, TelemetryStats};
pub use tool::{
    CallContext, Failure, Permission, Registry, ToolDecl, ToolError, ToolFuture, ToolHandler,
    ToolSource, ToolTable, decls_from_toml,
};
/// The name of the built-in `web_fetch` tool ([`EngineBuilder::web_fetch`] registers it).
pub use web_fetch::NAME as WEB_FETCH;
pub use web_fetch::error_chain;

// Secrets, the environment `requires:` is checked against, files on disk, the semantic stage.
pub use environment::Environment;
pub use files::{session_dir_name, session_root, skill_dir_name};
pub use redact::Redactor;
pub use rerank::{RERANK_BODY_WORDS, RERANK_TOKENS, Rerank, default_reranker_dir, rerank_text};
pub use semantic::{
    Embedder, FillReport, LocalEmbedder, Purpose, QueryVectors, Semantic, SemanticConfig,
    default_bge_dir, default_model_dir, default_multilingual_dir, operator_roots, pull_package,
};
/// Token counts with a real tokenizer (from `skillbase-route`, re-exported for the edges).
pub use skillbase_route::tokens;
pub use vault::{Vault, VaultError, VaultKey, description_ok as vault_description_ok};
