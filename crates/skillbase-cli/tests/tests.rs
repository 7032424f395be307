//! The command line's integration tests, one binary (as ripgrep's `tests/tests.rs`), each module
//! running the real `skillbase` binary: its interface (`cli`), `serve` and `token`, the store
//! commands on both backends, and `turn`.

mod cli;
mod common;
mod serve_cli;
mod store_cli;
mod turn_cli;
