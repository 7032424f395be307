//! The REST API under /v1, end to end over a real loopback server: every route's happy path,
//! authentication and isolation, bad input that must change nothing, preconditions under
//! concurrency, the event stream, and the OpenAPI document against the mounted routes.

use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use skillbase_server::{Limits, ServerOptions};
use skillbase_store::{AgentName, EventFilter, Scope};
use std::collections::BTreeSet;
use std::io::{Cursor, Write};
use std::time::Duration;

use crate::common::{TestServer, ok_json, problem, put_skill, skill_md};

mod a2a;
mod admin;
mod auth;
mod bad_input;
mod doctor;
mod dream;
mod eval;
mod faults;
mod mcp_servers;
mod openapi;
mod routes;
mod sessions;
mod skills;
mod sweeps;
mod tools;
mod usage;

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        z.start_file(
            *name,
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated),
        )
        .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// The detail with the skill's name replaced, to compare two 404s.
fn without(detail: &Value, name: &str) -> String {
    detail.as_str().unwrap().replace(name, "<name>")
}
