//! The command line's integration tests, one binary (as ripgrep's `tests/tests.rs`), each module
//! running the real `skillbase` binary: its interface (`cli`), `serve` and `token`, the store
//! commands on both backends, `turn`, `doctor`, and a reader that goes away (`pipe_cli`).

mod cli;
mod common;
mod doctor_cli;
mod pipe_cli;
mod scan_cli;
mod serve_cli;
mod store_cli;
mod tools_cli;
mod turn_cli;
