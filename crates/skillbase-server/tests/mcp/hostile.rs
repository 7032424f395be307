//! Hostile MCP requests: malformed, oversized and adversarial bodies and headers (bad JSON, the
//! wrong `jsonrpc`, ids of every type, huge params, unknown methods, bad protocol versions,
//! wrong media types, batches, params of the wrong type, Unicode look-alikes in names, unknown
//! sessions and another agent's).
//!
//! Every request goes to a server with the direct path and to one without it (`rmcp_only`):
//! both must answer alike (status, content type and bytes), with the answer the table names (a
//! JSON-RPC error with its code, a plain HTTP refusal, or the result a legal but odd request
//! gets), in a bounded size, and the direct path must take exactly the requests the table says.
//! Neither server may fail: no 500, no dropped connection, and both serve a plain call after.

use super::*;
use reqwest::header::HeaderValue;

/// The token a request carries.
#[derive(Clone, Copy, Debug)]
enum Tok {
    Alpha,
    Beta,
    Admin,
    Missing,
    Wrong,
}

/// A header value to send.
enum Hv {
    Text(String),
    /// Raw bytes (not text).
    Bytes(Vec<u8>),
    /// The `Mcp-Session-Id` of the stateful session alpha opened on this server.
    AlphaSession,
    /// Drop the header the client sends by default.
    Drop,
}

fn text(v: &str) -> Hv {
    Hv::Text(v.to_owned())
}

/// What the servers must answer.
#[derive(Debug)]
enum Expect {
    /// A JSON-RPC error: the HTTP status and the code.
    Rpc(u16, i64),
    /// A tool result with `isError` (the call reached the tool and was refused).
    ToolError,
    /// A result without error.
    Fine,
    /// A result without error, from a session where nothing was loaded before.
    Fresh,
    /// A plain HTTP refusal before any JSON-RPC is read, with a message.
    Http(u16),
    /// A notification: accepted, no body.
    Accepted,
}

use Expect::{Accepted, Fine, Fresh, Http, Rpc, ToolError};

const PARSE: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const HEADER_MISMATCH: i64 = -32020;
const UNSUPPORTED_VERSION: i64 = -32022;

/// One hostile request.
struct Case {
    what: &'static str,
    token: Tok,
    /// Headers over the defaults: (name, value, replace the default).
    headers: Vec<(&'static str, Hv, bool)>,
    body: Vec<u8>,
    expect: Expect,
    /// Taken on the direct path.
    direct: bool,
}

/// An `Mcp-Name` value for a name: itself when it is plain ASCII, else rmcp's Base64 form.
fn name_header(name: &str) -> Hv {
    if name.bytes().all(|b| (0x21..0x7f).contains(&b)) && !name.starts_with("=?") {
        text(name)
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(name);
        Hv::Text(format!("=?base64?{b64}?="))
    }
}

impl Case {
    /// A JSON body with the `Mcp-Method` and `Mcp-Name` headers a careful client sends for it.
    fn json(what: &'static str, body: Value, expect: Expect) -> Case {
        let method = body["method"].as_str().unwrap_or("tools/call");
        let mut headers = vec![("mcp-method", text(method), true)];
        let name = match method {
            "tools/call" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(n) = name {
            headers.push(("mcp-name", name_header(n), true));
        }
        Case {
            what,
            token: Tok::Alpha,
            headers,
            body: body.to_string().into_bytes(),
            expect,
            direct: false,
        }
    }

    /// Raw bytes, sent as a `tools/call` of `load_skill`.
    fn raw(what: &'static str, body: impl Into<Vec<u8>>, expect: Expect) -> Case {
        Case {
            what,
            token: Tok::Alpha,
            headers: vec![
                ("mcp-method", text("tools/call"), true),
                ("mcp-name", text("load_skill"), true),
            ],
            body: body.into(),
            expect,
            direct: false,
        }
    }

    fn token(mut self, t: Tok) -> Case {
        self.token = t;
        self
    }

    fn header(mut self, name: &'static str, v: Hv) -> Case {
        self.headers.push((name, v, true));
        self
    }

    /// A second value of a header.
    fn also(mut self, name: &'static str, v: &str) -> Case {
        self.headers.push((name, text(v), false));
        self
    }

    /// The stateful (2025-11-25) wire: its version header.
    fn stateful(self) -> Case {
        self.header("mcp-protocol-version", text(STATEFUL))
    }

    fn direct(mut self) -> Case {
        self.direct = true;
        self
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": meta()
    }})
}

fn load(skill: &str) -> Value {
    call("load_skill", json!({ "name": skill }))
}

fn with(mut v: Value, change: impl FnOnce(&mut Value)) -> Value {
    change(&mut v);
    v
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// A `tools/call` without `_meta` (the stateful wire).
fn stateful_load(skill: &str) -> Value {
    with(load(skill), |b| {
        b["params"].as_object_mut().unwrap().remove("_meta");
    })
}

fn bad_json() -> Vec<Case> {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"load_skill","arguments":{{"a":{}{}}},"_meta":{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000),
        meta()
    );
    let good = load("shared-one").to_string();
    vec![
        Case::raw("not JSON", "{not json", Rpc(400, PARSE)),
        Case::raw("an empty body", "", Rpc(400, PARSE)),
        Case::raw(
            "a truncated message",
            &good.as_bytes()[..good.len() / 2],
            Rpc(400, PARSE),
        ),
        Case::raw("not UTF-8", b"\xff\xfe{\"a\":1}".to_vec(), Rpc(400, PARSE)),
        Case::raw("arrays nested 100,000 deep", deep, Rpc(400, PARSE)),
        Case::raw(
            "a JSON string",
            r#""just a string""#,
            Rpc(400, INVALID_REQUEST),
        ),
        Case::raw("a JSON number", "42", Rpc(400, INVALID_REQUEST)),
        Case::raw("JSON null", "null", Rpc(400, INVALID_REQUEST)),
        Case::raw(
            "trailing garbage",
            format!("{good} and more"),
            Rpc(400, PARSE),
        ),
        Case::raw(
            "two messages in one body",
            format!("{good}{good}"),
            Rpc(400, PARSE),
        ),
        Case::raw(
            "a byte-order mark",
            format!("\u{feff}{good}"),
            Rpc(400, PARSE),
        ),
        Case::raw(
            "the id twice",
            good.replacen(r#""id":1"#, r#""id":1,"id":2"#, 1),
            Rpc(400, INVALID_REQUEST),
        ),
    ]
}

fn versions_and_ids() -> Vec<Case> {
    let load = || load("shared-one");
    let id = |v: Value| with(load(), |b| b["id"] = v);
    vec![
        Case::json(
            "jsonrpc 1.0",
            with(load(), |b| b["jsonrpc"] = json!("1.0")),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json(
            "no jsonrpc",
            with(load(), |b| {
                b.as_object_mut().unwrap().remove("jsonrpc");
            }),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json(
            "jsonrpc a number",
            with(load(), |b| b["jsonrpc"] = json!(2.0)),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json(
            "no id: a notification, never run",
            with(load(), |b| {
                b.as_object_mut().unwrap().remove("id");
            }),
            Accepted,
        ),
        Case::json("a null id", id(Value::Null), Rpc(400, INVALID_REQUEST)),
        Case::json("a fractional id", id(json!(1.5)), Rpc(400, INVALID_REQUEST)),
        Case::json("a boolean id", id(json!(true)), Rpc(400, INVALID_REQUEST)),
        Case::json(
            "an object id",
            id(json!({"a": 1})),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json("an array id", id(json!([1])), Rpc(400, INVALID_REQUEST)),
        Case::json(
            "an id over i64",
            id(json!(u64::MAX)),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json("an integral float id", id(json!(7.0)), Fine).direct(),
        Case::json("a negative id", id(json!(-5)), Fine).direct(),
        Case::json("a 4 KB string id", id(json!("i".repeat(4096))), Fine).direct(),
    ]
}

fn huge(limit: usize) -> Vec<Case> {
    let many: serde_json::Map<String, Value> =
        (0..10_000).map(|i| (format!("k{i}"), json!(i))).collect();
    vec![
        Case::json("a 900 KB skill name", load(&"a".repeat(900_000)), ToolError).direct(),
        // The refusal names every unknown argument (the schema check's message), within the
        // size of the request.
        Case::json(
            "10,000 unknown arguments",
            call("load_skill", Value::Object(many)),
            ToolError,
        )
        .direct(),
        Case::json(
            "900 KB of unknown _meta",
            with(load("shared-one"), |b| {
                b["params"]["_meta"]["x-pad"] = json!("p".repeat(900_000))
            }),
            Fine,
        )
        .direct(),
        Case::json(
            "a body over the limit",
            with(load("shared-one"), |b| {
                b["params"]["arguments"]["pad"] = json!("p".repeat(limit))
            }),
            Rpc(413, INVALID_REQUEST),
        ),
    ]
}

fn methods_and_versions() -> Vec<Case> {
    let load = || load("shared-one");
    let meta_version = |v: &str| {
        with(load(), |b| {
            b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(v)
        })
    };
    vec![
        Case::json(
            "an unknown method",
            request("nope/nothing", json!({"_meta": meta()})),
            Rpc(404, NOT_FOUND),
        ),
        Case::json(
            "an empty method",
            request("", json!({"_meta": meta()})),
            Rpc(404, NOT_FOUND),
        ),
        Case::json(
            "a 10 KB method",
            request(&"m".repeat(10_000), json!({"_meta": meta()})),
            Rpc(404, NOT_FOUND),
        ),
        Case::json(
            "a method in capitals",
            with(load(), |b| b["method"] = json!("TOOLS/CALL")),
            Rpc(404, NOT_FOUND),
        ),
        Case::json(
            "a method that is a number",
            with(load(), |b| b["method"] = json!(5)),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json(
            "an unknown version header",
            load(),
            Rpc(400, HEADER_MISMATCH),
        )
        .header("mcp-protocol-version", text("1999-01-01")),
        Case::json("no version header", load(), Rpc(400, HEADER_MISMATCH))
            .header("mcp-protocol-version", Hv::Drop),
        Case::json(
            "_meta names another version than the header",
            meta_version("1999-01-01"),
            Rpc(400, HEADER_MISMATCH),
        ),
        Case::json(
            "a future version in both",
            meta_version("2099-01-01"),
            Rpc(400, UNSUPPORTED_VERSION),
        )
        .header("mcp-protocol-version", text("2099-01-01")),
        Case::json("a version header not text", load(), Http(400)).header(
            "mcp-protocol-version",
            Hv::Bytes(b"2026-07-28\xff".to_vec()),
        ),
        Case::json(
            "the stateful version without a session",
            stateful_load("shared-one"),
            Http(400),
        )
        .stateful(),
    ]
}

fn media_types_and_batches() -> Vec<Case> {
    let load = || load("shared-one");
    vec![
        Case::json("Content-Type text/plain", load(), Http(415))
            .header("content-type", text("text/plain")),
        Case::json("no Content-Type", load(), Http(415)).header("content-type", Hv::Drop),
        Case::json("Content-Type application/json-seq", load(), Http(415))
            .header("content-type", text("application/json-seq")),
        Case::json("Content-Type with a charset", load(), Fine)
            .header("content-type", text("application/json; charset=utf-8"))
            .direct(),
        Case::json("Accept without SSE", load(), Http(406))
            .header("accept", text("application/json")),
        Case::json("Accept weighing SSE at zero", load(), Http(406))
            .header("accept", text("application/json, text/event-stream;q=0")),
        Case::json(
            "a batch of one call",
            json!([load()]),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json("an empty batch", json!([]), Rpc(400, INVALID_REQUEST)),
        Case::json(
            "a batch of numbers",
            json!([1, 2, 3]),
            Rpc(400, INVALID_REQUEST),
        ),
    ]
}

fn wrong_params() -> Vec<Case> {
    let load = || load("shared-one");
    let params = |p: Value| with(load(), |b| b["params"] = p);
    vec![
        // Params rmcp cannot read as an object are no request at all; absent ones lack `_meta`.
        Case::json(
            "params a string",
            params(json!("x")),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json(
            "params an array",
            params(json!([1])),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json(
            "_meta a string",
            with(load(), |b| b["params"]["_meta"] = json!("x")),
            Rpc(400, INVALID_REQUEST),
        ),
        Case::json("params null", params(Value::Null), Rpc(400, INVALID_PARAMS)),
        Case::json(
            "arguments a string",
            with(load(), |b| b["params"]["arguments"] = json!("x")),
            Rpc(200, INVALID_PARAMS),
        ),
        Case::json(
            "the tool name a number",
            with(load(), |b| b["params"]["name"] = json!(4242)),
            Rpc(200, INVALID_PARAMS),
        ),
        Case::json(
            "the tool name null",
            with(load(), |b| b["params"]["name"] = Value::Null),
            Rpc(200, INVALID_PARAMS),
        ),
        Case::json(
            "no tool name",
            with(load(), |b| {
                b["params"].as_object_mut().unwrap().remove("name");
            }),
            Rpc(200, INVALID_PARAMS),
        ),
        Case::json(
            "the skill name a number",
            call("load_skill", json!({"name": 5})),
            ToolError,
        )
        .direct(),
    ]
}

fn unicode() -> Vec<Case> {
    let read = |uri: &str| request("resources/read", json!({"uri": uri, "_meta": meta()}));
    vec![
        // Tool names that are not plain ASCII travel Base64-wrapped in `Mcp-Name` (rmcp's path).
        Case::json(
            "a full-width tool name",
            call("ｌｏａｄ_ｓｋｉｌｌ", json!({"name": "shared-one"})),
            ToolError,
        ),
        Case::json(
            "a zero-width space in the tool name",
            call("load\u{200b}_skill", json!({"name": "shared-one"})),
            ToolError,
        ),
        Case::json(
            "NUL in the tool name",
            call("load_skill\u{0}", json!({"name": "shared-one"})),
            ToolError,
        ),
        Case::json(
            "a right-to-left override in the tool name",
            call("\u{202e}load_skill", json!({"name": "shared-one"})),
            ToolError,
        ),
        Case::json(
            "a Cyrillic o in the body, ASCII in Mcp-Name",
            call("l\u{43e}ad_skill", json!({"name": "shared-one"})),
            Rpc(400, HEADER_MISMATCH),
        )
        .header("mcp-name", text("load_skill")),
        Case::json(
            "a look-alike hyphen in the skill name",
            load("shared\u{2010}one"),
            ToolError,
        )
        .direct(),
        Case::json("NUL in the skill name", load("shared-one\u{0}"), ToolError).direct(),
        Case::json(
            "a combining accent on the skill name",
            load("shared-one\u{301}"),
            ToolError,
        )
        .direct(),
        Case::json("the skill name in capitals", load("SHARED-ONE"), ToolError).direct(),
        Case::json(
            "another agent's skill by a path",
            load("../beta-secret"),
            ToolError,
        )
        .direct(),
        Case::json(
            "a look-alike hyphen in a skill URI",
            read("skill://shared\u{2010}one/SKILL.md"),
            Rpc(200, INVALID_PARAMS),
        ),
        Case::json(
            "a skill URI climbing into another agent's skill",
            read("skill://shared-one/../beta-secret/SKILL.md"),
            Rpc(200, INVALID_PARAMS),
        ),
    ]
}

fn sessions_and_identity() -> Vec<Case> {
    let load = || load("shared-one");
    vec![
        Case::json(
            "an unknown Mcp-Session-Id",
            stateful_load("shared-one"),
            Http(404),
        )
        .stateful()
        .header("mcp-session-id", text("no-such-session")),
        Case::json(
            "a 10 KB Mcp-Session-Id",
            stateful_load("shared-one"),
            Http(404),
        )
        .stateful()
        .header("mcp-session-id", Hv::Text("s".repeat(10_000))),
        // The stateless wire keeps no sessions: the id only keys a Skillbase session in the
        // caller's own namespace.
        Case::json("an Mcp-Session-Id on the stateless wire", load(), Fine)
            .header("mcp-session-id", text("no-such-session")),
        Case::json(
            "beta on alpha's MCP session",
            stateful_load("shared-one"),
            Rpc(200, INVALID_REQUEST),
        )
        .stateful()
        .token(Tok::Beta)
        .header("mcp-session-id", Hv::AlphaSession),
        Case::json(
            "beta naming alpha's derived Skillbase session",
            load(),
            Rpc(200, INVALID_PARAMS),
        )
        .token(Tok::Beta)
        .header("skillbase-session", text("mcp:alpha:t-0123456789abcdef"))
        .direct(),
        Case::json(
            "beta naming alpha's REST session",
            load(),
            Rpc(200, INVALID_PARAMS),
        )
        .token(Tok::Beta)
        .header("skillbase-session", text("rest:alpha"))
        .direct(),
        // Sessions are keyed by agent and id: the same name is beta's own, unrelated session,
        // which starts empty.
        Case::json("beta naming the session alpha works in", load(), Fresh)
            .token(Tok::Beta)
            .header("skillbase-session", text("alpha-work"))
            .direct(),
        Case::json(
            "a Skillbase-Session with a slash",
            load(),
            Rpc(200, INVALID_PARAMS),
        )
        .header("skillbase-session", text("a/b"))
        .direct(),
        Case::json(
            "a 200-character Skillbase-Session",
            load(),
            Rpc(200, INVALID_PARAMS),
        )
        .header("skillbase-session", Hv::Text("s".repeat(200)))
        .direct(),
        Case::json(
            "a Skillbase-Session not text",
            load(),
            Rpc(200, INVALID_PARAMS),
        )
        .header("skillbase-session", Hv::Bytes(b"s\xff".to_vec()))
        .direct(),
        Case::json("no token", load(), Http(401)).token(Tok::Missing),
        Case::json("a wrong token", load(), Http(401)).token(Tok::Wrong),
        Case::json("a foreign Host", load(), Http(403)).header("host", text("evil.example")),
        // No Origin allow-list on `/mcp`: the bearer token is what a page cannot send.
        Case::json("a foreign Origin", load(), Fine).header("origin", text("http://evil.example")),
        Case::json("Mcp-Method twice", load(), Rpc(400, HEADER_MISMATCH))
            .also("mcp-method", "tools/call"),
        Case::json(
            "Mcp-Method contradicting the body",
            load(),
            Rpc(400, HEADER_MISMATCH),
        )
        .header("mcp-method", text("tools/list")),
        Case::json(
            "an agent header not text",
            load(),
            Rpc(200, INVALID_REQUEST),
        )
        .token(Tok::Admin)
        .header(
            "skillbase-agent",
            Hv::Bytes("alph\u{430}".as_bytes().to_vec()),
        )
        .direct(),
        Case::json("a look-alike agent", load(), Rpc(200, INVALID_REQUEST))
            .token(Tok::Admin)
            .header("skillbase-agent", text("a1pha"))
            .direct(),
    ]
}

/// Send one case; (status, content type, body with the server's directory masked).
async fn send(s: &TestServer, case: &Case, alpha_session: &str) -> (u16, String, String) {
    let mut headers: Vec<(&str, HeaderValue)> = vec![
        (
            "accept",
            HeaderValue::from_static("application/json, text/event-stream"),
        ),
        ("content-type", HeaderValue::from_static("application/json")),
        ("mcp-protocol-version", HeaderValue::from_static(STATELESS)),
    ];
    for (name, v, replace) in &case.headers {
        if *replace {
            headers.retain(|(h, _)| h != name);
        }
        let v = match v {
            Hv::Text(t) => HeaderValue::from_str(t).unwrap(),
            Hv::Bytes(b) => HeaderValue::from_bytes(b).unwrap(),
            Hv::AlphaSession => HeaderValue::from_str(alpha_session).unwrap(),
            Hv::Drop => continue,
        };
        headers.push((name, v));
    }
    let mut req = s.http.post(s.url("/mcp"));
    for (k, v) in headers {
        req = req.header(k, v);
    }
    req = match case.token {
        Tok::Alpha => req.bearer_auth(&s.alpha),
        Tok::Beta => req.bearer_auth(&s.beta),
        Tok::Admin => req.bearer_auth(&s.admin),
        Tok::Wrong => req.bearer_auth("sb_not-a-token"),
        Tok::Missing => req,
    };
    let res = req
        .body(case.body.clone())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}: no answer: {e}", case.what));
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let dir = s.db.parent().unwrap().to_str().unwrap().to_owned();
    let body = res.text().await.unwrap().replace(&dir, "<dir>");
    (status, ct, body)
}

/// The answer is what the case expects, clear, and no larger than the request (or 16 KB).
fn check(case: &Case, status: u16, ct: &str, body: &str) {
    let what = case.what;
    assert_ne!(status, 500, "{what}: {body}");
    let bound = case.body.len().max(16 * 1024);
    assert!(body.len() <= bound, "{what}: a {} byte answer", body.len());
    let message = || {
        let m = messages(ct, body);
        assert_eq!(m.len(), 1, "{what}: {body}");
        m.into_iter().next().unwrap()
    };
    match case.expect {
        Rpc(want, code) => {
            assert_eq!(status, want, "{what}: {body}");
            let m = message();
            assert_eq!(m["jsonrpc"], "2.0", "{what}: {m}");
            assert_eq!(m["error"]["code"], code, "{what}: {m}");
            let text = m["error"]["message"].as_str().unwrap_or_default();
            assert!(!text.is_empty() && text.len() < 1024, "{what}: {m}");
            // The id comes back whenever the body was read and its id is one; else null.
            let sent = serde_json::from_slice::<Value>(&case.body).ok();
            let id = sent
                .as_ref()
                .and_then(|b| b.get("id"))
                .filter(|id| id.is_i64() || id.is_string());
            match id {
                Some(id) if status != 413 => assert_eq!(&m["id"], id, "{what}: {m}"),
                // Not an id JSON-RPC can carry (1.5, u64::MAX, true, ...): null, never echoed.
                _ => assert!(m["id"].is_null(), "{what}: {m}"),
            }
        }
        ToolError | Fine | Fresh => {
            assert_eq!(status, 200, "{what}: {body}");
            let m = message();
            assert!(m.get("error").is_none(), "{what}: {m}");
            let failed = m["result"]["isError"] == json!(true);
            assert_eq!(failed, matches!(case.expect, ToolError), "{what}: {m}");
            let sent: Value = serde_json::from_slice(&case.body).unwrap();
            assert_eq!(m["id"].as_f64(), sent["id"].as_f64(), "{what}: {m}");
            assert_eq!(m["id"].as_str(), sent["id"].as_str(), "{what}: {m}");
            if matches!(case.expect, Fresh) {
                let text = m["result"]["content"][0]["text"].as_str().unwrap();
                assert!(!text.contains("already active"), "{what}: {m}");
            }
        }
        Http(want) => {
            assert_eq!(status, want, "{what}: {body}");
            assert!(!body.trim().is_empty(), "{what}: no message");
        }
        Accepted => {
            assert_eq!(status, 202, "{what}: {body}");
            assert!(body.is_empty(), "{what}: {body}");
        }
    }
}

/// The tool calls a server has counted.
fn calls(s: &TestServer) -> u64 {
    s.state
        .metrics
        .render()
        .lines()
        .filter(|l| l.starts_with("skillbase_calls_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Alpha's stateful MCP session on `s`, and a named Skillbase session alpha works in.
async fn alpha_at_work(s: &TestServer) -> String {
    let (c, _) = Client::new(s, Some(&s.alpha), Wire::Stateful).open().await;
    let worker =
        Client::new(s, Some(&s.alpha), Wire::Stateless).header("skillbase-session", "alpha-work");
    worker
        .ok(
            "tools/call",
            json!({"name": "load_skill", "arguments": {"name": "shared-one"}}),
        )
        .await;
    c.session.expect("a session")
}

/// Every hostile request gets the same clear answer from the direct path and from rmcp.
#[tokio::test]
async fn hostile_requests_get_clear_errors_and_the_same_answer_on_both_paths() {
    let direct = TestServer::start().await;
    let rmcp = TestServer::start_with(ServerOptions {
        rmcp_only: true,
        ..ServerOptions::default()
    })
    .await;
    let (alpha_direct, alpha_rmcp) = (alpha_at_work(&direct).await, alpha_at_work(&rmcp).await);
    let limit = direct.state.options.limits.body_bytes;
    let cases: Vec<Case> = [
        bad_json(),
        versions_and_ids(),
        huge(limit),
        methods_and_versions(),
        media_types_and_batches(),
        wrong_params(),
        unicode(),
        sessions_and_identity(),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(cases.len() >= 80, "{} cases", cases.len());
    let mut taken = 0;
    for case in &cases {
        let before = direct.state.metrics.mcp_direct_calls.get();
        let calls_before = (calls(&direct), calls(&rmcp));
        let a = send(&direct, case, &alpha_direct).await;
        let b = send(&rmcp, case, &alpha_rmcp).await;
        assert_eq!(a, b, "{}: the two paths answer differently", case.what);
        let took = direct.state.metrics.mcp_direct_calls.get() - before;
        if matches!(case.expect, Accepted) {
            assert_eq!(calls(&direct), calls_before.0, "{}: a call ran", case.what);
            assert_eq!(calls(&rmcp), calls_before.1, "{}: a call ran", case.what);
        }
        assert_eq!(
            took == 1,
            case.direct,
            "{}: direct path taken {took}",
            case.what
        );
        taken += took;
        check(case, a.0, &a.1, &a.2);
    }
    assert_eq!(rmcp.state.metrics.mcp_direct_calls.get(), 0);
    assert!(taken >= 20, "only {taken} taken on the direct path");
    // Both still serve.
    for s in [&direct, &rmcp] {
        let c = Client::new(s, Some(&s.alpha), Wire::Stateless);
        let r = c
            .ok(
                "tools/call",
                json!({"name": "load_skill", "arguments": {"name": "shared-two"}}),
            )
            .await;
        assert!(r.get("isError").is_none_or(|e| e == false), "{r}");
        let health = s.http.get(s.url("/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200);
    }
    direct.stop().await;
    rmcp.stop().await;
}
