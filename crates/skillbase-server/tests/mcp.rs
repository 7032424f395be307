//! MCP over streamable HTTP (both wires) and stdio: tools, the Skills extension, isolation,
//! authentication, malformed and hostile JSON-RPC, and change notifications.

use crate::common::{TestServer, put_skill};
use base64::Engine;
use futures_util::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use skillbase_server::{Limits, ServerOptions};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, Scope};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

mod auth;
mod direct;
mod hostile;
mod notifications;
mod skills;
mod stdio;
mod tools;

const STATELESS: &str = "2026-07-28";
const STATEFUL: &str = "2025-11-25";
const EXT: &str = "io.modelcontextprotocol/skills";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    /// 2025-11-25: `initialize` and `Mcp-Session-Id`.
    Stateful,
    /// 2026-07-28: every request self-contained.
    Stateless,
}

const WIRES: [Wire; 2] = [Wire::Stateful, Wire::Stateless];

/// A minimal MCP client over reqwest.
struct Client {
    url: String,
    http: reqwest::Client,
    token: Option<String>,
    wire: Wire,
    session: Option<String>,
    headers: Vec<(String, String)>,
    next: AtomicI64,
}

/// Every JSON-RPC message in a response body (JSON, or SSE `data:` lines).
fn messages(content_type: &str, body: &str) -> Vec<Value> {
    if content_type.starts_with("application/json") {
        return vec![serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))];
    }
    sse_messages(body)
}

fn sse_messages(body: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for event in body.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let data = data.join("\n");
        if !data.trim().is_empty() {
            out.push(serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}")));
        }
    }
    out
}

impl Client {
    fn new(s: &TestServer, token: Option<&str>, wire: Wire) -> Client {
        Client {
            url: s.url("/mcp"),
            http: s.http.clone(),
            token: token.map(str::to_owned),
            wire,
            session: None,
            headers: Vec::new(),
            next: AtomicI64::new(1),
        }
    }

    fn header(mut self, name: &str, value: &str) -> Client {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn version(&self) -> &'static str {
        match self.wire {
            Wire::Stateful => STATEFUL,
            Wire::Stateless => STATELESS,
        }
    }

    async fn post(&self, msg: &Value) -> reqwest::Response {
        let method = msg["method"].as_str().unwrap_or_default();
        let mut r = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", self.version())
            .header("mcp-method", method);
        let name = match method {
            "tools/call" => msg["params"]["name"].as_str(),
            "resources/read" => msg["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(n) = name {
            r = r.header("mcp-name", n);
        }
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        if let Some(sid) = &self.session {
            r = r.header("mcp-session-id", sid);
        }
        for (k, v) in &self.headers {
            r = r.header(k, v);
        }
        r.body(msg.to_string()).send().await.unwrap()
    }

    fn message(&self, method: &str, mut params: Value) -> Value {
        if self.wire == Wire::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientInfo": {"name": "skillbase-tests", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Send a request; the JSON-RPC response (result or error).
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let msg = self.message(method, params);
        let r = self.post(&msg).await;
        let status = r.status().as_u16();
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = r.text().await.unwrap();
        assert!(
            ct.starts_with("application/json") || ct.starts_with("text/event-stream"),
            "{method}: status {status}, content-type {ct:?}: {body}"
        );
        messages(&ct, &body)
            .into_iter()
            .find(|m| m["id"] == msg["id"])
            .unwrap_or_else(|| panic!("{method}: no response in {body}"))
    }

    /// A request that must succeed: its result.
    async fn ok(&self, method: &str, params: Value) -> Value {
        let r = self.rpc(method, params).await;
        assert!(r.get("error").is_none(), "{method}: {r}");
        r["result"].clone()
    }

    /// A request that must fail: its error object.
    async fn err(&self, method: &str, params: Value) -> Value {
        let r = self.rpc(method, params).await;
        assert!(r.get("result").is_none(), "{method} should fail: {r}");
        r["error"].clone()
    }

    /// Open the connection: `initialize` + `initialized` (stateful) or `server/discover`.
    async fn open(mut self) -> (Client, Value) {
        match self.wire {
            Wire::Stateful => {
                let msg = self.message(
                    "initialize",
                    json!({
                        "protocolVersion": STATEFUL,
                        "capabilities": {},
                        "clientInfo": {"name": "skillbase-tests", "version": "1"}
                    }),
                );
                let r = self.post(&msg).await;
                assert_eq!(r.status(), 200);
                let sid = r
                    .headers()
                    .get("mcp-session-id")
                    .expect("a session id")
                    .to_str()
                    .unwrap()
                    .to_owned();
                let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
                let m = messages(&ct, &r.text().await.unwrap())
                    .into_iter()
                    .find(|m| m["id"] == msg["id"])
                    .unwrap();
                assert!(m.get("error").is_none(), "initialize: {m}");
                self.session = Some(sid);
                let r = self
                    .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                    .await;
                assert_eq!(r.status(), 202);
                (self, m["result"].clone())
            }
            Wire::Stateless => {
                let info = self.ok("server/discover", json!({})).await;
                (self, info)
            }
        }
    }

    /// Every skills/list page, in order.
    async fn all_skills(&self) -> (Vec<Value>, usize) {
        let mut out = Vec::new();
        let mut pages = 0;
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = self.ok("skills/list", params).await;
            pages += 1;
            out.extend(r["skills"].as_array().unwrap().iter().cloned());
            match r.get("nextCursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_owned()),
                None => return (out, pages),
            }
            assert!(pages < 100, "the listing does not end");
        }
    }

    async fn read_bytes(&self, uri: &str) -> (Vec<u8>, Value) {
        let r = self.ok("resources/read", json!({"uri": uri})).await;
        let c = r["contents"][0].clone();
        assert_eq!(c["uri"], uri);
        let bytes = if let Some(t) = c.get("text").and_then(Value::as_str) {
            t.as_bytes().to_vec()
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(c["blob"].as_str().expect("text or blob"))
                .unwrap()
        };
        (bytes, c)
    }
}

fn names(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|s| s["frontmatter"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn sha256(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// alpha-secret with files: a reference, a binary image, a script and a data file with NUL.
async fn rich_alpha_secret(s: &TestServer) {
    put_skill(
        &s.store,
        Scope::Agent(AgentName::parse("alpha").unwrap()),
        "alpha-secret",
        &[
            (
                "SKILL.md",
                b"---\nname: alpha-secret\ndescription: Alpha's private procedure\n---\n\n# Alpha secret\n\nSee `references/guide.md`.\n",
            ),
            ("references/guide.md", b"# Guide\n\nStep one.\n"),
            ("references/deep/more.txt", b"deeper\n"),
            ("assets/logo.png", PNG),
            ("scripts/run.sh", b"#!/bin/sh\necho hi\n"),
            ("data.bin", b"text\0with nul"),
        ],
    )
    .await;
}

/// Let alpha see every skill it resolves (shared and its own).
async fn alpha_sees_all(s: &TestServer) {
    Config::parse(
        r#"
[agents.alpha]
skills = "all"
[agents.alpha.grants]
tools = ["notes", "skills"]
"#,
        "test",
    )
    .unwrap()
    .apply(&s.store)
    .await
    .unwrap();
}
