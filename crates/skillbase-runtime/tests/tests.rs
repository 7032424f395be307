//! The runtime's integration tests, one binary (as ripgrep's `tests/tests.rs`): dispatch (every
//! call the model makes, played by the hostile skill and the injected page), turn resolution
//! (what the model sees each turn), each a folder of topics, the gateway and the semantic stage,
//! over shared fixture builders.

mod common;
mod dispatch;
mod gateway;
mod semantic;
mod telemetry;
mod turn;
