//! Skillbase's runtime: for an agent, a session and the user's message, what the model is shown
//! this turn, and why.
//!
//! - [`engine`]: the façade a Rust harness embeds ([`Engine::builder`]); `examples/embed.rs`
//!   shows a whole turn, a load, a harness tool behind the envelope and a finished run.
//! - [`view`]: the skills an agent may see, cached until the index or the agent changes.
//! - [`turn`] (a folder: place, catalog, report): eager prefix, triggered bodies, the budgeted
//!   level-1 catalog, the tools, and the activation report, in phases.
//! - [`runtime`]: sessions, `load_skill` (level 2), `search_skills`, `pinned` after compaction,
//!   and the events that record each turn.
//! - [`vault`] and [`redact`]: secrets encrypted at rest, resolved only inside tools, and
//!   scrubbed (with their encoded forms) from everything else in one pass.
//! - [`dispatch`] (a folder: outcome, offer, runs, built-ins, authoring) and [`tool`]: the
//!   offered set and the call pipeline with the capability gate, bounds, runs and drift; the
//!   runtime's own tools are one typed table, [`dispatch::Builtin`].
//! - `envelope` (private): granted ∩ declared — tool classes, vault entries, host patterns — for calls
//!   and for authoring alike.
//! - [`eval`]: routing evaluation — labelled messages through the real turn path, recall@k,
//!   visibility under the budget, false triggers, confusions.
//! - [`files`]: level 3, a skill's files written into the session's workspace atomically.
//! - [`doctor`]: the drift between prompts, agents and the catalog, from mechanical inputs only
//!   (names, allowlists, identities, declared keys, recorded turns), each finding with a code.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod builtin;
pub mod dispatch;
pub mod doctor;
pub mod dream;
pub mod engine;
mod envelope;
pub mod eval;
pub mod event;
mod events;
pub mod files;
pub mod gateway;
pub mod redact;
pub mod requires;
mod rule;
pub mod runtime;
pub mod semantic;
pub mod tool;
mod tooldef;
pub mod turn;
pub mod vault;
pub mod view;
pub mod web_fetch;

pub use engine::{Engine, EngineBuilder, EngineError};
pub use runtime::{LoadResult, Pinned, PinnedSet, Runtime, RuntimeError, SearchHit};
/// Token counts with a real tokenizer (from `skillbase-route`, re-exported for the edges).
pub use skillbase_route::tokens;
pub use turn::{
    Activation, Omission, OmissionDetail, OmissionList, ToolDef, TurnContext, TurnOptions,
    TurnReport, resolve,
};
pub use view::AgentView;
