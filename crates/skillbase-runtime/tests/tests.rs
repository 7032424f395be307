//! The runtime's integration tests, one binary (as ripgrep's `tests/tests.rs`): dispatch (every
//! call the model makes, played by the hostile skill and the injected page), turn resolution
//! (what the model sees each turn), each a folder of topics, and the doctor against its labelled
//! fixtures, over shared fixture builders.

mod common;
mod dispatch;
mod doctor;
mod dream;
mod eval;
mod gateway;
mod semantic;
mod turn;
