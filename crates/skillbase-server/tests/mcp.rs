//! MCP over streamable HTTP (both wires) and stdio: tools, the Skills extension, isolation,
//! authentication, malformed JSON-RPC and change notifications.

mod common;
use base64::Engine;
use common::{TestServer, put_skill};
use futures_util::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use skillbase_server::{Limits, ServerOptions};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, Scope};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

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

#[tokio::test]
async fn initialize_and_discover_declare_the_skills_extension() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let (_, info) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let caps = &info["capabilities"];
        assert_eq!(
            caps["extensions"][EXT],
            json!({"directoryRead": true}),
            "{wire:?}: {info}"
        );
        assert!(caps["resources"].is_object(), "{wire:?}");
        assert_eq!(caps["resources"]["listChanged"], true, "{wire:?}");
        assert!(caps["tools"].is_object(), "{wire:?}");
        match wire {
            Wire::Stateful => {
                assert_eq!(info["protocolVersion"], STATEFUL);
                assert_eq!(info["serverInfo"]["name"], "skillbase");
            }
            Wire::Stateless => {
                assert_eq!(info["resultType"], "complete");
                assert!(
                    info["supportedVersions"]
                        .as_array()
                        .unwrap()
                        .contains(&json!(STATELESS))
                );
                assert_eq!(
                    info["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                    "skillbase"
                );
            }
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn tools_list_is_the_agents_offered_set() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let mut seen = BTreeMap::new();
        for (agent, token) in [("alpha", &s.alpha), ("beta", &s.beta)] {
            let (c, _) = Client::new(&s, Some(token), wire).open().await;
            let r = c.ok("tools/list", json!({})).await;
            let listed: BTreeSet<String> = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    assert_eq!(t["inputSchema"]["type"], "object", "{t}");
                    t["name"].as_str().unwrap().to_owned()
                })
                .collect();
            let offered: BTreeSet<String> = s
                .state
                .dispatcher
                .offered(&AgentName::parse(agent).unwrap())
                .unwrap()
                .entries
                .iter()
                .map(|e| e.wire_name.clone())
                .collect();
            assert_eq!(listed, offered, "{wire:?} {agent}");
            assert!(listed.contains("load_skill"), "{listed:?}");
            // load_skill's name is the closed enum of the agent's loadable skills, as in a turn.
            let load = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "load_skill")
                .unwrap();
            let names: BTreeSet<&str> = load["inputSchema"]["properties"]["name"]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("no enum: {load}"))
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            let want: BTreeSet<&str> = match agent {
                "alpha" => ["alpha-secret", "shared-one", "shared-two"].into(),
                _ => ["beta-secret", "shared-one"].into(),
            };
            assert_eq!(names, want, "{wire:?} {agent}");
            seen.insert(agent, listed);
        }
        // alpha is granted the authoring class, beta is not: the sets differ.
        let extra: Vec<_> = seen["alpha"].difference(&seen["beta"]).collect();
        assert!(!extra.is_empty(), "{seen:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn tools_call_goes_through_dispatch_and_refusals_are_error_results() {
    let s = TestServer::start().await;
    for wire in WIRES {
        let (alpha, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let r = alpha
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
            )
            .await;
        assert_ne!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("Body of alpha-secret"), "{text}");

        let (beta, _) = Client::new(&s, Some(&s.beta), wire).open().await;
        // Another agent's private skill: refused as a result, nothing of it shown.
        let r = beta
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
            )
            .await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(!r.to_string().contains("Body of alpha-secret"), "{r}");
        // A tool alpha has and beta is not offered: a refusal the model can read.
        let alpha_only = s
            .state
            .dispatcher
            .offered(&AgentName::parse("alpha").unwrap())
            .unwrap()
            .entries
            .iter()
            .map(|e| e.wire_name.clone())
            .find(|w| {
                s.state
                    .dispatcher
                    .offered(&AgentName::parse("beta").unwrap())
                    .unwrap()
                    .get(w)
                    .is_none()
            })
            .unwrap();
        let r = beta
            .ok("tools/call", json!({"name": alpha_only, "arguments": {}}))
            .await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("not_offered"),
            "{r}"
        );
        // Bad arguments are a result too.
        let r = alpha
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"nope": 1}}),
            )
            .await;
        assert_eq!(r["isError"], true, "{r}");
    }
    // The Skillbase sessions: one per MCP session (stateful), one per token and agent
    // (stateless), or the one named by Skillbase-Session.
    s.state.dispatcher.flush().await;
    let stateless = s
        .store
        .events(&skillbase_store::EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.session)
        .find(|id| id.starts_with("mcp:alpha:t-"))
        .expect("a stateless session in alpha's namespace, keyed by its token");
    assert_eq!(stateless.len(), "mcp:alpha:t-".len() + 32, "{stateless}");
    let rec = s.store.session(&stateless).await.unwrap().expect("session");
    assert_eq!(rec.agent, "alpha");
    for wire in WIRES {
        let name = format!("harness-{wire:?}");
        let (c, _) = Client::new(&s, Some(&s.alpha), wire)
            .header("skillbase-session", &name)
            .open()
            .await;
        let r = c
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
            )
            .await;
        assert_ne!(r["isError"], true, "{r}");
        assert!(s.store.session(&name).await.unwrap().is_some(), "{name}");
    }
    s.stop().await;
}

#[tokio::test]
async fn stateful_sessions_get_their_own_skillbase_session() {
    let s = TestServer::start().await;
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let r = c
        .ok(
            "tools/call",
            json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
        )
        .await;
    assert_ne!(r["isError"], true, "{r}");
    let id = format!("mcp:alpha:{}", c.session.as_deref().unwrap());
    let rec = s.store.session(&id).await.unwrap().expect("session");
    assert_eq!(rec.agent, "alpha");
    // Loading again in the same session is a no-op the runtime reports as such.
    let again = c
        .ok(
            "tools/call",
            json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
        )
        .await;
    assert_ne!(
        again, r,
        "the second load should say the skill is already active"
    );
    s.stop().await;
}

#[tokio::test]
async fn skills_list_pages_are_atomic_and_digests_verify_against_the_bytes() {
    let s = TestServer::start_with(ServerOptions {
        limits: Limits {
            page_size: 2,
            ..Limits::default()
        },
        ..ServerOptions::default()
    })
    .await;
    rich_alpha_secret(&s).await;
    for n in ["extra-a", "extra-b", "extra-c"] {
        put_skill(&s.store, Scope::Shared, n, &[("notes/x.txt", b"x")]).await;
    }
    alpha_sees_all(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (skills, pages) = c.all_skills().await;
        assert_eq!(
            names(&skills),
            [
                "alpha-secret",
                "extra-a",
                "extra-b",
                "extra-c",
                "shared-one",
                "shared-two"
            ],
            "{wire:?}"
        );
        assert_eq!(pages, 3, "{wire:?}");
        for sk in &skills {
            let uri = sk["uri"].as_str().unwrap();
            let name = sk["frontmatter"]["name"].as_str().unwrap();
            assert_eq!(uri, format!("skill://{name}/SKILL.md"));
            let res = sk["resources"].as_array().unwrap();
            assert!(res.iter().any(|r| r["uri"] == uri), "{sk}");
            for r in res {
                let ruri = r["uri"].as_str().unwrap();
                assert!(ruri.starts_with(&format!("skill://{name}/")), "{ruri}");
                let (bytes, _) = c.read_bytes(ruri).await;
                assert_eq!(r["size"], bytes.len() as u64, "{ruri}");
                assert_eq!(r["digest"], sha256(&bytes), "{ruri}");
            }
        }
        let secret = &skills[0];
        let files: BTreeSet<&str> = secret["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            files,
            BTreeSet::from([
                "skill://alpha-secret/SKILL.md",
                "skill://alpha-secret/assets/logo.png",
                "skill://alpha-secret/data.bin",
                "skill://alpha-secret/references/deep/more.txt",
                "skill://alpha-secret/references/guide.md",
                "skill://alpha-secret/scripts/run.sh",
            ])
        );
        // resources/list: each SKILL.md with its name, description and type, paged the same way.
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let r = c.ok("resources/list", params).await;
            listed.extend(r["resources"].as_array().unwrap().iter().cloned());
            match r["nextCursor"].as_str() {
                Some(n) => cursor = Some(n.to_owned()),
                None => break,
            }
        }
        assert_eq!(listed.len(), skills.len());
        for (r, sk) in listed.iter().zip(&skills) {
            assert_eq!(r["uri"], sk["uri"]);
            assert_eq!(r["name"], sk["frontmatter"]["name"]);
            assert_eq!(r["description"], sk["frontmatter"]["description"]);
            assert_eq!(r["mimeType"], "text/markdown");
        }
        // A made-up cursor is refused.
        let e = c.err("skills/list", json!({"cursor": "%%%"})).await;
        assert_eq!(e["code"], -32602, "{e}");
        if wire == Wire::Stateless {
            let r = c.ok("skills/list", json!({})).await;
            assert_eq!(r["resultType"], "complete");
            assert_eq!(r["cacheScope"], "private");
            assert!(r["ttlMs"].is_u64(), "{r}");
        }
    }
    // Every manifest was built once and reused by the second wire.
    assert_eq!(s.state.skills.len(), 6);
    s.stop().await;
}

#[tokio::test]
async fn skills_get_echoes_the_entry_and_unknown_uris_are_invalid_params() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (listed, _) = c.all_skills().await;
        let r = c
            .ok(
                "skills/get",
                json!({"uri": "skill://alpha-secret/SKILL.md"}),
            )
            .await;
        assert_eq!(r["skill"]["uri"], "skill://alpha-secret/SKILL.md");
        assert!(r.get("nextCursor").is_none());
        let from_list = listed
            .iter()
            .find(|s| s["uri"] == "skill://alpha-secret/SKILL.md")
            .unwrap();
        assert_eq!(&r["skill"], from_list);
        assert_eq!(
            r["skill"]["frontmatter"],
            json!({"name": "alpha-secret", "description": "Alpha's private procedure"})
        );
        for uri in [
            "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
            "skill://alpha-secret/references/guide.md",
            "skill://alpha-secret/SKILL.md/SKILL.md",
        ] {
            let e = c.err("skills/get", json!({"uri": uri})).await;
            assert_eq!(e["code"], -32602, "{uri}: {e}");
        }
        let e = c
            .err(
                "skills/get",
                json!({"uri": "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"}),
            )
            .await;
        assert_eq!(
            e["data"]["uri"],
            "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn frontmatter_is_the_yaml_core_schema_reading_of_the_file() {
    let s = TestServer::start().await;
    alpha_sees_all(&s).await;
    let md = "---\nname: typed\ndescription: \"Typed values: 1.0\"\nlicense: MIT\nmetadata:\n  version: 1.0\n  quoted: \"1.0\"\n  release: 2.1.0\n  date: 2024-01-31\n  flag: true\n  count: 42\n  nothing: null\n---\n\nBody.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "typed",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let r = c
            .ok("skills/get", json!({"uri": "skill://typed/SKILL.md"}))
            .await;
        assert_eq!(
            r["skill"]["frontmatter"],
            json!({
                "name": "typed",
                "description": "Typed values: 1.0",
                "license": "MIT",
                "metadata": {
                    "version": 1.0,
                    "quoted": "1.0",
                    "release": "2.1.0",
                    "date": "2024-01-31",
                    "flag": true,
                    "count": 42,
                    "nothing": null
                }
            }),
            "{wire:?}"
        );
        // The exact stored text comes back.
        let (bytes, c0) = c.read_bytes("skill://typed/SKILL.md").await;
        assert_eq!(bytes, md.as_bytes());
        assert_eq!(c0["mimeType"], "text/markdown");
    }
    s.stop().await;
}

#[tokio::test]
async fn resources_read_serves_text_as_text_and_binary_as_blob() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (bytes, content) = c.read_bytes("skill://alpha-secret/SKILL.md").await;
        assert!(content["text"].is_string(), "{content}");
        assert_eq!(content["mimeType"], "text/markdown");
        assert!(bytes.starts_with(b"---\nname: alpha-secret\n"));

        let (bytes, content) = c.read_bytes("skill://alpha-secret/assets/logo.png").await;
        assert!(content["blob"].is_string(), "{content}");
        assert_eq!(content["mimeType"], "image/png");
        assert_eq!(bytes, PNG);

        let (bytes, content) = c.read_bytes("skill://alpha-secret/data.bin").await;
        assert!(
            content["blob"].is_string(),
            "text with NUL goes as a blob: {content}"
        );
        assert_eq!(bytes, b"text\0with nul");

        let (bytes, content) = c.read_bytes("skill://alpha-secret/scripts/run.sh").await;
        assert_eq!(content["text"], "#!/bin/sh\necho hi\n");
        assert_eq!(content["mimeType"], "application/x-sh");
        assert_eq!(bytes, b"#!/bin/sh\necho hi\n");

        for uri in [
            "skill://alpha-secret/missing.md",
            "skill://alpha-secret",
            "skill://alpha-secret/references",
            "skill://alpha-secret/SKILL.md/",
            "https://example.com/SKILL.md",
        ] {
            let e = c.err("resources/read", json!({"uri": uri})).await;
            assert_eq!(e["code"], -32602, "{uri}: {e}");
            assert_eq!(e["data"]["uri"], uri, "{e}");
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn directory_read_lists_direct_children() {
    let s = TestServer::start_with(ServerOptions {
        limits: Limits {
            page_size: 3,
            ..Limits::default()
        },
        ..ServerOptions::default()
    })
    .await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        // The root, over two pages.
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({"uri": "skill://alpha-secret"});
            if let Some(cur) = &cursor {
                params["cursor"] = json!(cur);
            }
            let r = c.ok("resources/directory/read", params).await;
            all.extend(r["resources"].as_array().unwrap().iter().cloned());
            match r["nextCursor"].as_str() {
                Some(n) => cursor = Some(n.to_owned()),
                None => break,
            }
        }
        let got: Vec<(String, String)> = all
            .iter()
            .map(|r| {
                (
                    r["uri"].as_str().unwrap().to_owned(),
                    // A name that says nothing of the type has no mimeType in listings
                    // (resources/read, which sees the bytes, gives one).
                    r["mimeType"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let want = [
            ("skill://alpha-secret/SKILL.md", "text/markdown"),
            ("skill://alpha-secret/assets", "inode/directory"),
            ("skill://alpha-secret/data.bin", ""),
            ("skill://alpha-secret/references", "inode/directory"),
            ("skill://alpha-secret/scripts", "inode/directory"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_owned(), b.to_owned())),
            "{wire:?}"
        );
        let r = c
            .ok(
                "resources/directory/read",
                json!({"uri": "skill://alpha-secret/references"}),
            )
            .await;
        let sub: Vec<&str> = r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            sub,
            [
                "skill://alpha-secret/references/deep",
                "skill://alpha-secret/references/guide.md"
            ]
        );
        for uri in [
            "skill://alpha-secret/SKILL.md",
            "skill://alpha-secret/nope",
            "skill://alpha-secret/",
            "skill://alpha-secret/references/",
            "skill://nobody",
        ] {
            let e = c.err("resources/directory/read", json!({"uri": uri})).await;
            assert_eq!(e["code"], -32602, "{uri}: {e}");
            assert_eq!(e["data"]["uri"], uri);
        }
    }
    s.stop().await;
}

/// The error for `uri` with the URI itself blanked out: what a caller could learn.
fn shape(e: &Value, uri: &str) -> String {
    e.to_string().replace(uri, "<uri>")
}

#[tokio::test]
async fn another_agents_private_skill_is_indistinguishable_from_a_missing_one() {
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    for wire in WIRES {
        let (beta, _) = Client::new(&s, Some(&s.beta), wire).open().await;
        let (listed, _) = beta.all_skills().await;
        assert_eq!(names(&listed), ["beta-secret", "shared-one"]);
        let r = beta.ok("resources/list", json!({})).await;
        assert!(!r.to_string().contains("alpha-secret"), "{r}");
        for (method, private, missing) in [
            (
                "skills/get",
                "skill://alpha-secret/SKILL.md",
                "skill://gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://alpha-secret/SKILL.md",
                "skill://gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://alpha-secret/references/guide.md",
                "skill://gamma-secret/references/guide.md",
            ),
            (
                "resources/directory/read",
                "skill://alpha-secret",
                "skill://gamma-secret",
            ),
            (
                "resources/read",
                "skill://beta-secret/../alpha-secret/SKILL.md",
                "skill://beta-secret/../gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://beta-secret/%2E%2E/alpha-secret/SKILL.md",
                "skill://beta-secret/%2E%2E/gamma-secret/SKILL.md",
            ),
            (
                "resources/read",
                "skill://alpha-secret%2FSKILL.md",
                "skill://gamma-secret%2FSKILL.md",
            ),
        ] {
            let a = beta.err(method, json!({"uri": private})).await;
            let b = beta.err(method, json!({"uri": missing})).await;
            assert_eq!(a["code"], -32602, "{method} {private}: {a}");
            assert_eq!(a["data"]["uri"], private);
            assert_eq!(shape(&a, private), shape(&b, missing), "{method} {private}");
            assert!(!a.to_string().contains("Alpha's private"), "{a}");
        }
        // `..` inside one's own skill is refused the same way.
        let e = beta
            .err(
                "resources/read",
                json!({"uri": "skill://beta-secret/x/../SKILL.md"}),
            )
            .await;
        assert_eq!(e["code"], -32602);
    }
    s.stop().await;
}

#[tokio::test]
async fn missing_wrong_and_revoked_tokens_get_401() {
    let s = TestServer::start().await;
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    for wire in WIRES {
        for token in [None, Some("sbt_wrong")] {
            let c = Client::new(&s, token, wire);
            let r = c.post(&msg).await;
            assert_eq!(r.status(), 401, "{wire:?} {token:?}");
        }
    }
    // A token that worked stops working once revoked.
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateless)
        .open()
        .await;
    c.ok("tools/list", json!({})).await;
    s.store
        .token_revoke(s.alpha_token_id, &Author::Human("test".into()))
        .await
        .unwrap();
    s.state.auth.invalidate();
    let r = c.post(&c.message("tools/list", json!({}))).await;
    assert_eq!(r.status(), 401);
    s.stop().await;
}

#[tokio::test]
async fn malformed_json_rpc_gets_json_rpc_errors() {
    let s = TestServer::start().await;
    let post = |body: &'static str| {
        s.http
            .post(s.url("/mcp"))
            .bearer_auth(&s.alpha)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (body, code, id) in [
        ("{not json", -32700, Value::Null),
        (r#"{"jsonrpc":"2.0","id":7,"params":{}}"#, -32600, json!(7)),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            -32600,
            Value::Null,
        ),
        (r#""just a string""#, -32600, Value::Null),
    ] {
        let r = post(body).await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
        assert_eq!(v["id"], id, "{body}: {v}");
    }
    // An unknown method is -32601 on both wires.
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let e = c.err("nope/nothing", json!({})).await;
        assert_eq!(e["code"], -32601, "{wire:?}: {e}");
    }
    // A body over the limit is refused before it is read whole.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(2 * 1024 * 1024)
    );
    let r = s
        .http
        .post(s.url("/mcp"))
        .bearer_auth(&s.alpha)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    s.stop().await;
}

#[tokio::test]
async fn the_agent_comes_from_the_token_or_the_header() {
    let s = TestServer::start().await;
    for wire in WIRES {
        // The first request of a connection: initialize (stateful) or any request (stateless).
        let first = async |c: &Client| -> Value {
            match wire {
                Wire::Stateful => {
                    c.err(
                        "initialize",
                        json!({"protocolVersion": STATEFUL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
                    )
                    .await
                }
                Wire::Stateless => c.err("skills/list", json!({})).await,
            }
        };
        // An admin token must name the agent (no default agent here).
        let e = first(&Client::new(&s, Some(&s.admin), wire)).await;
        assert_eq!(e["code"], -32600, "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("Skillbase-Agent"),
            "{e}"
        );
        if wire == Wire::Stateless {
            let c = Client::new(&s, Some(&s.admin), wire);
            let e = c.err("server/discover", json!({})).await;
            assert_eq!(e["code"], -32600, "{e}");
        }
        // Named by header.
        let (c, _) = Client::new(&s, Some(&s.admin), wire)
            .header("skillbase-agent", "beta")
            .open()
            .await;
        assert_eq!(
            names(&c.all_skills().await.0),
            ["beta-secret", "shared-one"]
        );
        // An unknown agent.
        let e =
            first(&Client::new(&s, Some(&s.admin), wire).header("skillbase-agent", "nobody")).await;
        assert!(e["message"].as_str().unwrap().contains("no agent"), "{e}");
        // An agent token cannot switch agents.
        let e =
            first(&Client::new(&s, Some(&s.alpha), wire).header("skillbase-agent", "beta")).await;
        assert_eq!(e["code"], -32600, "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("bound to agent"),
            "{e}"
        );
    }
    // A stateful session stays with the token that opened it.
    let (alpha, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let mut hijack = Client::new(&s, Some(&s.beta), Wire::Stateful);
    hijack.session = alpha.session.clone();
    let e = hijack.err("skills/list", json!({})).await;
    assert_eq!(e["code"], -32600, "{e}");
    assert_eq!(names(&alpha.all_skills().await.0).len(), 3);
    // An admin names the agent when opening; later requests need not repeat it, and may not
    // name another one.
    let (admin, _) = Client::new(&s, Some(&s.admin), Wire::Stateful)
        .header("skillbase-agent", "beta")
        .open()
        .await;
    let mut later = Client::new(&s, Some(&s.admin), Wire::Stateful);
    later.session = admin.session.clone();
    assert_eq!(
        names(&later.all_skills().await.0),
        ["beta-secret", "shared-one"]
    );
    let switch = later.header("skillbase-agent", "alpha");
    let e = switch.err("skills/list", json!({})).await;
    assert_eq!(e["code"], -32600, "{e}");
    s.stop().await;

    // With a default agent, the admin token acts as it.
    let s = TestServer::start_with(ServerOptions {
        default_agent: Some(AgentName::parse("beta").unwrap()),
        ..ServerOptions::default()
    })
    .await;
    let (c, _) = Client::new(&s, Some(&s.admin), Wire::Stateless)
        .open()
        .await;
    assert_eq!(
        names(&c.all_skills().await.0),
        ["beta-secret", "shared-one"]
    );
    s.stop().await;
}

#[tokio::test]
async fn a_foreign_host_header_is_refused() {
    let s = TestServer::start().await;
    let c = Client::new(&s, Some(&s.alpha), Wire::Stateless).header("host", "evil.example");
    let r = c.post(&c.message("server/discover", json!({}))).await;
    assert_eq!(r.status(), 403);
    s.stop().await;
}

/// Collect SSE messages from a streaming response into a channel.
fn stream_messages(r: reqwest::Response) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut body = r.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let event: String = buf.drain(..end + 2).collect();
                for m in sse_messages(&event) {
                    if tx.send(m).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// The next message with this method within `wait`, if any.
async fn next_with_method(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
    method: &str,
    wait: Duration,
) -> Option<Value> {
    tokio::time::timeout(wait, async {
        while let Some(m) = rx.recv().await {
            if m["method"] == method {
                return Some(m);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

const LIST_CHANGED: &str = "notifications/resources/list_changed";

#[tokio::test]
async fn list_changed_reaches_a_stateful_session_when_its_visible_set_changes() {
    let s = TestServer::start().await;
    let (c, _) = Client::new(&s, Some(&s.alpha), Wire::Stateful).open().await;
    let get = s
        .http
        .get(s.url("/mcp"))
        .bearer_auth(&s.alpha)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", c.session.as_deref().unwrap())
        .header("mcp-protocol-version", STATEFUL)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut rx = stream_messages(get);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A change alpha cannot see: nothing.
    put_skill(
        &s.store,
        Scope::Agent(AgentName::parse("beta").unwrap()),
        "beta-secret",
        &[("more.txt", b"more")],
    )
    .await;
    assert!(
        next_with_method(&mut rx, LIST_CHANGED, Duration::from_millis(700))
            .await
            .is_none(),
        "alpha was told about a change to beta's skills"
    );
    // A new revision of a skill alpha sees: notified.
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-two",
        &[("more.txt", b"more")],
    )
    .await;
    assert!(
        next_with_method(&mut rx, LIST_CHANGED, Duration::from_secs(10))
            .await
            .is_some(),
        "no list_changed after shared-two changed"
    );
    // A new skill becoming visible: notified, and it is listed.
    put_skill(&s.store, Scope::Shared, "brand-new", &[]).await;
    alpha_sees_all(&s).await;
    assert!(
        next_with_method(&mut rx, LIST_CHANGED, Duration::from_secs(10))
            .await
            .is_some(),
        "no list_changed after brand-new became visible"
    );
    assert!(names(&c.all_skills().await.0).contains(&"brand-new".to_owned()));
    s.stop().await;
}

/// Open a `subscriptions/listen` stream for list changes, acknowledged: the request and the
/// stream's messages.
async fn listen(c: &Client) -> (Value, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let msg = c.message(
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true}}),
    );
    let r = c.post(&msg).await;
    assert_eq!(r.status(), 200);
    let mut rx = stream_messages(r);
    assert!(
        next_with_method(
            &mut rx,
            "notifications/subscriptions/acknowledged",
            Duration::from_secs(5)
        )
        .await
        .is_some()
    );
    (msg, rx)
}

#[tokio::test]
async fn list_changed_reaches_a_listen_stream_on_the_stateless_wire() {
    let s = TestServer::start().await;
    let c = Client::new(&s, Some(&s.alpha), Wire::Stateless);
    let (msg, mut rx) = listen(&c).await;
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-one",
        &[("more.txt", b"more")],
    )
    .await;
    let n = next_with_method(&mut rx, LIST_CHANGED, Duration::from_secs(10))
        .await
        .expect("list_changed on the listen stream");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], msg["id"],
        "{n}"
    );
    s.stop().await;
}

#[tokio::test]
async fn revoking_a_token_ends_its_listen_stream() {
    let s = TestServer::start().await;
    let c = Client::new(&s, Some(&s.alpha), Wire::Stateless);
    let (_, mut rx) = listen(&c).await;
    s.store
        .token_revoke(s.alpha_token_id, &Author::Human("test".into()))
        .await
        .unwrap();
    // The stream ends (its channel closes) within the token cache window and one check.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while rx.recv().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the listen stream outlived its token");
    // And nothing more is answered for it.
    let r = c.post(&c.message("server/discover", json!({}))).await;
    assert_eq!(r.status(), 401);
    s.stop().await;
}

#[tokio::test]
async fn resources_read_scrubs_a_value_set_after_the_file_was_stored() {
    let s = TestServer::start().await;
    let value = "mcp-late-secret-77Qx";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-one",
        &[("notes/login.txt", format!("password={value}\n").as_bytes())],
    )
    .await;
    s.state
        .vault
        .set(
            "LATE",
            "set late",
            value.as_bytes(),
            &Author::Human("test".into()),
        )
        .await
        .unwrap();
    for wire in WIRES {
        let (c, _) = Client::new(&s, Some(&s.alpha), wire).open().await;
        let (bytes, _) = c.read_bytes("skill://shared-one/notes/login.txt").await;
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, "password=[REDACTED:LATE]\n");
    }
    s.stop().await;
}

#[tokio::test]
async fn stdio_serves_the_agent_it_was_started_for() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let s = TestServer::start().await;
    rich_alpha_secret(&s).await;
    let (client, server) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server);
    let state = s.state.clone();
    let task = tokio::spawn(skillbase_server::mcp::serve_io(
        state,
        AgentName::parse("alpha").unwrap(),
        sr,
        sw,
    ));
    let (cr, mut cw) = tokio::io::split(client);
    let mut lines = BufReader::new(cr).lines();
    let mut id = 0;
    let mut rpc = async |method: &str, params: Value| -> Value {
        id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        cw.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
        if method == "initialize" {
            let m = lines.next_line().await.unwrap().unwrap();
            let m: Value = serde_json::from_str(&m).unwrap();
            cw.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                .await
                .unwrap();
            return m;
        }
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == id {
                return m;
            }
        }
    };
    let init = rpc(
        "initialize",
        json!({"protocolVersion": STATEFUL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"][EXT]["directoryRead"],
        true
    );
    let r = rpc("skills/list", json!({})).await;
    assert_eq!(
        names(r["result"]["skills"].as_array().unwrap()),
        ["alpha-secret", "shared-one", "shared-two"]
    );
    let r = rpc(
        "resources/read",
        json!({"uri": "skill://alpha-secret/assets/logo.png"}),
    )
    .await;
    assert!(r["result"]["contents"][0]["blob"].is_string(), "{r}");
    let r = rpc(
        "tools/call",
        json!({"name": "load_skill", "arguments": {"name": "alpha-secret"}}),
    )
    .await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Alpha secret"),
        "{r}"
    );
    let e = rpc("skills/get", json!({"uri": "skill://beta-secret/SKILL.md"})).await;
    assert_eq!(e["error"]["code"], -32602);
    drop(cw);
    drop(lines);
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve_io ends when the client closes")
        .unwrap()
        .unwrap();
    s.stop().await;
}

/// One raw stateless request for the comparison below: its token, extra headers (`None` drops
/// a header the client normally sends) and JSON body.
struct Raw {
    token: &'static str,
    headers: Vec<(&'static str, Option<&'static str>)>,
    body: Value,
}

fn stateless_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientInfo": {"name": "skillbase-tests", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
}

async fn send_raw(s: &TestServer, r: &Raw) -> (u16, String, String) {
    let token = match r.token {
        "alpha" => Some(s.alpha.clone()),
        "beta" => Some(s.beta.clone()),
        "admin" => Some(s.admin.clone()),
        _ => None,
    };
    let name = r.body["params"]["name"].as_str().unwrap_or_default();
    let mut headers: Vec<(&str, String)> = vec![
        ("accept", "application/json, text/event-stream".into()),
        ("content-type", "application/json".into()),
        ("mcp-protocol-version", STATELESS.into()),
        ("mcp-method", "tools/call".into()),
        ("mcp-name", name.into()),
    ];
    for (k, v) in &r.headers {
        headers.retain(|(h, _)| h != k);
        if let Some(v) = v {
            headers.push((k, (*v).to_owned()));
        }
    }
    let mut req = s.http.post(s.url("/mcp"));
    for (k, v) in headers {
        req = req.header(k, v);
    }
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.body(r.body.to_string()).send().await.unwrap();
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    // Each server has its own temporary directory (workspace paths in results).
    let dir = s.db.parent().unwrap().to_str().unwrap().to_owned();
    let body = res.text().await.unwrap().replace(&dir, "<dir>");
    (status, ct, body)
}

/// The direct path for stateless `tools/call` answers exactly as rmcp does: the same requests,
/// in the same order, to a server with the direct path and to one without, give the same status,
/// content type and bytes; and the direct path is taken only for the well-formed ones.
#[tokio::test]
async fn the_direct_path_answers_stateless_calls_exactly_as_rmcp_does() {
    let direct = TestServer::start().await;
    let rmcp = TestServer::start_with(ServerOptions {
        rmcp_only: true,
        ..ServerOptions::default()
    })
    .await;
    let load = |id, name: &str| stateless_call(id, "load_skill", json!({ "name": name }));
    // (request, taken on the direct path)
    let cases: Vec<(Raw, bool)> = vec![
        // A first activation, then "already active".
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: load(1, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: load(2, "shared-one"),
            },
            true,
        ),
        // A string id, and a skill with a reference file.
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(3, "alpha-secret");
                    b["id"] = json!("req-3");
                    b
                },
            },
            true,
        ),
        // Another agent's private skill: a refusal as a result.
        (
            Raw {
                token: "beta",
                headers: vec![],
                body: load(4, "alpha-secret"),
            },
            true,
        ),
        // Not offered, bad arguments, no arguments.
        (
            Raw {
                token: "beta",
                headers: vec![],
                body: stateless_call(5, "search_skills", json!({"query": "x"})),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: stateless_call(6, "load_skill", json!({"nope": 1})),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(7, "x");
                    b["params"].as_object_mut().unwrap().remove("arguments");
                    b
                },
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: stateless_call(8, "no_such_tool", json!({})),
            },
            true,
        ),
        // Sessions named by header: fine, and malformed.
        (
            Raw {
                token: "alpha",
                headers: vec![("skillbase-session", Some("harness-7"))],
                body: load(9, "shared-two"),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("skillbase-session", Some("a/b"))],
                body: load(10, "shared-two"),
            },
            true,
        ),
        // The agent: from an admin token's header, a missing one, a mismatch with the token.
        (
            Raw {
                token: "admin",
                headers: vec![("skillbase-agent", Some("alpha"))],
                body: load(11, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "admin",
                headers: vec![],
                body: load(12, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "admin",
                headers: vec![("skillbase-agent", Some("nobody"))],
                body: load(13, "shared-one"),
            },
            true,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("skillbase-agent", Some("beta"))],
                body: load(14, "shared-one"),
            },
            true,
        ),
        // `clientInfo` is optional in `_meta`.
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(28, "shared-one");
                    b["params"]["_meta"]
                        .as_object_mut()
                        .unwrap()
                        .remove("io.modelcontextprotocol/clientInfo");
                    b
                },
            },
            true,
        ),
        // `arguments: null` is no arguments.
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: stateless_call(29, "load_skill", Value::Null),
            },
            true,
        ),
        // Everything below goes to rmcp on both servers.
        (
            Raw {
                token: "none",
                headers: vec![],
                body: load(15, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-name", Some("shared-one"))],
                body: load(16, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-name", None)],
                body: load(17, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-method", Some("tools/list"))],
                body: load(18, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("accept", Some("application/json"))],
                body: load(19, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("content-type", Some("text/plain"))],
                body: load(20, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("host", Some("evil.example"))],
                body: load(21, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-protocol-version", Some(STATEFUL))],
                body: load(22, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(23, "shared-one");
                    b["params"]["_meta"]
                        .as_object_mut()
                        .unwrap()
                        .remove("io.modelcontextprotocol/clientCapabilities");
                    b
                },
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: {
                    let mut b = load(24, "shared-one");
                    b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
                        json!(STATEFUL);
                    b
                },
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![("mcp-name", Some("=?base64?bG9hZF9za2lsbA==?="))],
                body: load(25, "shared-one"),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: json!({"jsonrpc": "2.0", "id": 26, "method": "tools/call"}),
            },
            false,
        ),
        (
            Raw {
                token: "alpha",
                headers: vec![],
                body: json!([load(27, "shared-one")]),
            },
            false,
        ),
    ];
    // Body shapes the direct path leaves to rmcp: each is the plain call with one change.
    type Change = fn(&mut Value);
    let shapes: Vec<(&str, Change)> = vec![
        ("extra top-level key", |b| b["extra"] = json!(1)),
        ("task", |b| b["params"]["task"] = json!({"ttl": 1000})),
        ("float id", |b| b["id"] = json!(1.5)),
        ("null id", |b| b["id"] = Value::Null),
        ("huge id", |b| b["id"] = json!(u64::MAX)),
        ("no id", |b| {
            b.as_object_mut().unwrap().remove("id");
        }),
        ("arguments array", |b| b["params"]["arguments"] = json!([1])),
        ("extra _meta key", |b| {
            b["params"]["_meta"]["progressToken"] = json!("p")
        }),
        ("bad capabilities", |b| {
            b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": 5})
        }),
        ("bad clientInfo", |b| {
            b["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = json!(7)
        }),
        ("jsonrpc 1.0", |b| b["jsonrpc"] = json!("1.0")),
        ("name not a string", |b| b["params"]["name"] = json!(5)),
    ];
    let mut cases = cases;
    for (i, (_, change)) in shapes.iter().enumerate() {
        let mut body = load(100 + i as i64, "shared-one");
        change(&mut body);
        cases.push((
            Raw {
                token: "alpha",
                headers: vec![],
                body,
            },
            false,
        ));
    }
    let mut expected_direct = 0;
    for (i, (raw, taken)) in cases.iter().enumerate() {
        let before = direct.state.metrics.mcp_direct_calls.get();
        let a = send_raw(&direct, raw).await;
        let b = send_raw(&rmcp, raw).await;
        assert_eq!(a, b, "case {i}: {}", raw.body);
        let took = direct.state.metrics.mcp_direct_calls.get() - before;
        assert_eq!(took == 1, *taken, "case {i}: direct path taken: {took}");
        expected_direct += u64::from(*taken);
    }
    assert_eq!(direct.state.metrics.mcp_direct_calls.get(), expected_direct);
    assert_eq!(rmcp.state.metrics.mcp_direct_calls.get(), 0);
    // Calls are counted by outcome on both paths.
    let calls = |s: &TestServer| {
        let mut l: Vec<String> = s
            .state
            .metrics
            .render()
            .lines()
            .filter(|l| l.starts_with("skillbase_calls_total"))
            .map(str::to_owned)
            .collect();
        l.sort();
        l
    };
    let counted = calls(&direct);
    assert!(
        counted.contains(&r#"skillbase_calls_total{outcome="done"} 12"#.to_owned()),
        "{counted:?}"
    );
    assert_eq!(counted, calls(&rmcp));
    // Both servers recorded the same calls.
    direct.state.dispatcher.flush().await;
    rmcp.state.dispatcher.flush().await;
    let kinds = |s: &TestServer| {
        let store = s.store.clone();
        async move {
            store
                .events(&skillbase_store::EventFilter {
                    limit: Some(1000),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_iter()
                .filter(|e| e.kind != "token_created")
                // The stateless session is keyed by the token, which differs between the two.
                .map(|e| {
                    let session = e.session.map(|id| match id.find(":t-") {
                        Some(i) => format!("{}:t-<token>", &id[..i]),
                        None => id,
                    });
                    (e.kind, session, e.agent)
                })
                .collect::<Vec<_>>()
        }
    };
    // (Written-behind events interleave with committed ones by timing: compare as sets.)
    let (mut ka, mut kb) = (kinds(&direct).await, kinds(&rmcp).await);
    ka.sort();
    kb.sort();
    assert!(ka.iter().any(|(k, _, _)| k == "skill_activated"), "{ka:?}");
    assert_eq!(ka, kb);
    direct.stop().await;
    rmcp.stop().await;
}
