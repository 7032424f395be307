//! The runtime's integration tests, one binary (as ripgrep's `tests/tests.rs`): dispatch (every
//! call the model makes, played by the hostile skill and the injected page) and turn resolution
//! (what the model sees each turn), each a folder of topics, over shared fixture builders.

mod common;
mod dispatch;
mod eval;
mod semantic;
mod turn;
