//! The format crate's integration tests, one binary (as ripgrep's `tests/tests.rs`): bundles from
//! folders and zips, hostile SKILL.md input, and conformance against the reference validator
//! (`tests/cases/`, and the upstream cases read from `../shared`). They share no fixture, so there
//! is no `common` module.

mod bundle;
mod digest;
mod hostile;
mod readme_compat;
mod reference_cases;
mod upstream_cases;
