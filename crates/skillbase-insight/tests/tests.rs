//! The insight's integration tests, one binary (as ripgrep's `tests/tests.rs`): the doctor
//! against its labelled fixtures, dreaming end to end through the engine (and the dream
//! report's account of revisions since the previous dream), and routing evaluation, over shared
//! fixture builders.

mod common;
mod doctor;
mod dream;
mod eval;
mod explain;
mod revisions;
