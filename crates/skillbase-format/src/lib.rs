//! The Agent Skills format, as Skillbase reads it.
//!
//! - [`frontmatter`] splits SKILL.md on its delimiter lines and parses the YAML with hard limits
//!   ([`yaml`]), keeping every scalar's source text.
//! - [`validate`] checks a skill in the `Spec` profile (the reference validator's rules and
//!   messages) or the `Skillbase` profile (plus `triggers`, `companions`, `inputs`,
//!   `capabilities`, `cost`, `version`, `requires`, ...).
//! - [`version`] reads the optional `version` key (Semantic Versioning 2.0.0).
//! - [`requires`] reads `requires:` (skills with version ranges, tool classes, MCP servers,
//!   programs).
//! - [`prompt`] renders `read-properties` and the `<available_skills>` block byte for byte like
//!   the reference.
//! - [`bundle`] holds a skill folder as content-addressed files, rejecting unsafe paths, links
//!   and zip bombs whole; [`Bundle::digest`] is the documented content digest.
//!
//! - [`openai_yaml`] reads Codex's `agents/openai.yaml`; [`compat`] holds which agent reads,
//!   ignores or rejects which key (the README's tables) and checks a skill against them.
//! - [`openapi`] (the `openapi` feature): these types and grammars as OpenAPI schemas.
//!
//! This crate is pure: no network, no database, no global state.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod allowed_tools;
pub mod bundle;
pub mod compat;
pub mod digest;
pub mod discover;
pub mod draft;
pub mod frontmatter;
pub mod glob;
mod grammar;
mod keys;
pub mod meta;
pub mod name;
pub mod openai_yaml;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod prompt;
pub mod requires;
pub mod signature;
pub mod skill_dir;
pub mod text;
pub mod uri;
pub mod validate;
pub mod version;
pub mod yaml;

pub use bundle::{Bundle, BundleError, BundleFile, BundleLimits, BundlePath};
pub use digest::Digest;
pub use draft::{DraftError, DraftField, SkillDraft};
pub use frontmatter::{FrontmatterError, SkillMd};
pub use meta::{Capabilities, Cost, SkillMeta};
pub use name::{NameError, SkillName};
pub use requires::{RequiredSkill, Requires, VersionRange};
pub use validate::{Diagnostic, Profile, Report, Severity, ValidateOptions};
pub use version::{SkillVersion, VersionError};
pub use yaml::YamlLimits;
