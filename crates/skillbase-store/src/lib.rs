//! Skillbase's store: skills as append-only revisions in scopes, agents, seeds and events, on
//! SQLite (the embedded default) or PostgreSQL (shared by many servers).
//!
//! - Every change appends an immutable revision with its author; revert re-activates an old one
//!   and is itself recorded. Nothing is ever deleted: retire is a status.
//! - Readers use [`Index`], an in-memory snapshot swapped atomically after each write.
//! - The same code runs on both backends (the `sql` module is compiled once per backend).
//!
//! [`Store`] is the API, its operations grouped by noun (`store/`); the records it takes and
//! returns are in [`records`], the kinds of events in [`events`].

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod config;
pub mod db;
pub mod diff;
pub mod error;
pub mod events;
pub mod model;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod pack;
pub mod records;
pub mod requires;
pub mod retention;
pub mod scan;
pub mod seed;
pub mod session_id;
mod sql;
pub mod store;
pub mod trust;
pub mod usage;

/// The in-memory index of skills (`skillbase-route`'s: a view reads it; the store builds it).
pub use skillbase_route::index;

pub use db::{DbUrl, SCHEMA_VERSION, default_home};
pub use error::{Result, StoreError};
pub use events::EventKind;
pub use index::{FileRef, Index, SkillEntry, SourceLines};
pub use model::{
    Agent, AgentConfig, AgentName, Author, Candidate, Grants, MAX_BUDGET, NameSet, OnDrift,
    Policies, Prompt, Scope, Status, StatusChange, StatusRefusal, UnmetRequires, check_budget,
};
pub use records::{
    ActivationRecord, EventFilter, EventRecord, McpServerRow, NewEvent, Origin, RevisionInfo,
    RevisionOutcomes, RunRecord, SessionRecord, TokenRecord, VaultRow, WriteKind, WriteOutcome,
    outcomes_by_revision,
};
pub use sql::vectors::VectorPage;
pub use store::{
    Change, ChangeListener, ContentGuard, ImportReport, PutRequest, Settlement, Store, StoredMatch,
    WriteGuard,
};
