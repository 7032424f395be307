//! Skillbase's store: skills as append-only revisions in scopes, agents, seeds and events, on
//! SQLite (the embedded default) or PostgreSQL (shared by many servers).
//!
//! - Every change appends an immutable revision with its author; revert re-activates an old one
//!   and is itself recorded. Nothing is ever deleted: retire is a status.
//! - Readers use [`Index`], an in-memory snapshot swapped atomically after each write.
//! - The same code runs on both backends ([`sql`] is compiled once per backend).

#![forbid(unsafe_code)]

pub mod config;
pub mod db;
pub mod diff;
pub mod error;
pub mod index;
pub mod model;
pub mod pack;
pub mod seed;
pub mod sql;
pub mod store;

pub use db::{DbUrl, SCHEMA_VERSION, default_home};
pub use error::{Result, StoreError};
pub use index::{FileRef, Index, SkillEntry};
pub use model::{
    Agent, AgentConfig, AgentName, Author, Grants, NameSet, Policies, Scope, Status, StatusChange,
    StatusRefusal,
};
pub use sql::{
    ActivationRecord, EventFilter, EventRecord, NewEvent, RevisionInfo, RunRecord, SessionRecord,
    TokenRecord, VaultRow, WriteKind, WriteOutcome,
};
pub use store::{ContentGuard, ImportReport, PutRequest, Store, WriteGuard};
