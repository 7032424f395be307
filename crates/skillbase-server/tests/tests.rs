//! The server's integration tests, one binary (as ripgrep's `tests/tests.rs`), each against a
//! real server on a loopback port (`common`): its lifecycle and authentication (`server`), the
//! REST API, MCP, the contract between the authoring tools and their routes, and the attacks of
//! the security review. The log redactor's test is a binary of its own (`logs.rs`).

mod attacks;
mod cluster;
mod common;
mod contract;
mod mcp;
mod rest;
mod server;
mod studio;
