//! The attacks of the security review (issue 11), each played end to end against a real server:
//! the secret must come back in no answer, event, log or database file, and one agent's token must
//! learn nothing of another agent.

use crate::common::{TestServer, ok_json, problem, put_skill, skill_md};
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use skillbase_server::{ServerOptions, generate_token, hash_token};
use skillbase_store::config::Config;
use skillbase_store::{AgentName, Author, EventFilter, Scope};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A value with nothing but letters and digits (so URL forms equal it).
const KEY: &str = "Zq7vN2pLx9RtK4mW8sYb3cFh6jDg1aQe";
/// A value with a quote, a backslash, a slash and non-ASCII (JSON escapes it).
const JKEY: &str = "pa\"ss\\wörd/€-4242";

/// A destination that cooperates with the attacker: it reflects the `Authorization` value it was
/// sent in several ways.
struct Echo {
    port: u16,
}

fn python_json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_ascii() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// The value as a cooperating destination changes it before reflecting it.
fn transform(how: &str, v: &str) -> String {
    let half = v.len() / 2;
    match how {
        "reversed" => v.chars().rev().collect(),
        "upper" => v.to_uppercase(),
        "lower" => v.to_lowercase(),
        "newline" => format!("{}\n{}", &v[..half], &v[half..]),
        "crlf" => format!("{}\r\n{}", &v[..half], &v[half..]),
        "spaces" => format!("{}   {}", &v[..half], &v[half..]),
        "spread" => v.chars().map(|c| format!("{c} ")).collect(),
        "reversed-upper-wrapped" => {
            let r: String = v.chars().rev().collect::<String>().to_uppercase();
            format!("{}\n{}", &r[..7], &r[7..])
        }
        _ => v.to_owned(),
    }
}

impl Echo {
    async fn start() -> Echo {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let path = head
                        .lines()
                        .next()
                        .and_then(|l| l.split(' ').nth(1))
                        .unwrap_or("/")
                        .to_owned();
                    let auth = head
                        .lines()
                        .find_map(|l| {
                            l.strip_prefix("authorization: ")
                                .or_else(|| l.strip_prefix("Authorization: "))
                        })
                        .unwrap_or("")
                        .trim_start_matches("Bearer ")
                        .to_owned();
                    let (status, location, body) = if path.starts_with("/echo") {
                        ("200 OK", None, format!("value={auth};tail"))
                    } else if let Some(how) = path.strip_prefix("/transform/") {
                        (
                            "200 OK",
                            None,
                            format!("value={};tail", transform(how, &auth)),
                        )
                    } else if path.starts_with("/json") {
                        (
                            "200 OK",
                            None,
                            format!("{{\"seen\": {}, \"n\": 1}}", python_json(&auth)),
                        )
                    } else if path.starts_with("/redirect") {
                        // Puts the value where a 200-character cut of the URL falls.
                        let hop = path.len();
                        let pad = "a".repeat(170);
                        (
                            "302 Found",
                            Some(format!("/redirect/{hop}/{pad}{auth}/more")),
                            String::new(),
                        )
                    } else {
                        ("404 Not Found", None, String::new())
                    };
                    let mut resp = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n",
                        body.len()
                    );
                    if let Some(l) = location {
                        resp.push_str(&format!("location: {l}\r\n"));
                    }
                    resp.push_str("\r\n");
                    resp.push_str(&body);
                    let _ = sock.write_all(resp.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Echo { port }
    }
}

/// An agent `gamma` that may fetch from the echo destination with the vault entries, holding
/// `pinned-skill`; returns its token.
async fn gamma(s: &TestServer, echo: &Echo) -> String {
    let toml = format!(
        r#"
[agents.gamma]
skills = ["pinned-skill", "shared-one"]
[agents.gamma.grants]
tools = ["web_fetch", "notes"]
hosts = ["127.0.0.1:{port}"]
vault = ["KEY", "JKEY"]
"#,
        port = echo.port
    );
    Config::parse(&toml, "test")
        .unwrap()
        .apply(&s.store)
        .await
        .unwrap();
    let actor = Author::Human("test".into());
    s.state
        .vault
        .set("KEY", "fetch key", KEY.as_bytes(), &actor)
        .await
        .unwrap();
    s.state
        .vault
        .set("JKEY", "json key", JKEY.as_bytes(), &actor)
        .await
        .unwrap();
    let secret = generate_token();
    let agent = AgentName::parse("gamma").unwrap();
    s.store
        .token_create("gamma", &hash_token(&secret), Some(&agent), &actor)
        .await
        .unwrap();
    secret
}

async fn call(s: &TestServer, token: &str, session: &str, name: &str, args: Value) -> Value {
    ok_json(
        s.post(&format!("/v1/sessions/{session}/calls"), token)
            .json(&json!({"name": name, "arguments": args}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await
}

async fn open(s: &TestServer, token: &str, id: &str) {
    ok_json(
        s.post("/v1/sessions", token)
            .json(&json!({"id": id}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
}

/// No piece of `value` of 4 or more characters (nor the value) in `text`, in any encoding the
/// redactor promises.
fn assert_no_piece(text: &str, value: &str, what: &str) {
    let chars: Vec<char> = value.chars().collect();
    for k in 4..=chars.len() {
        let piece: String = chars[..k].iter().collect();
        assert!(
            !text.contains(&piece),
            "{what}: the first {k} characters of the value came back: {text}"
        );
    }
}

/// Every file of the server's data folder (the SQLite database, its WAL, the workspace): none
/// holds the value in clear.
fn assert_not_on_disk(s: &TestServer, value: &str) {
    let dir = s.db.parent().unwrap();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                assert!(
                    !bytes.windows(value.len()).any(|w| w == value.as_bytes()),
                    "{} holds the value",
                    p.display()
                );
            }
        }
    }
}

async fn all_events(s: &TestServer) -> String {
    s.state.engine.flush().await;
    serde_json::to_string(&s.store.events(&EventFilter::default()).await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_cut_at_any_length_returns_no_piece_of_a_vault_value() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    open(&s, &g, "cut").await;
    let url = format!("http://127.0.0.1:{}/echo", echo.port);
    let mut answers = String::new();
    for max_bytes in 1..=48 {
        let out = call(
            &s,
            &g,
            "cut",
            "web_fetch",
            json!({"url": url, "auth": {"vault": "KEY"}, "max_bytes": max_bytes}),
        )
        .await;
        assert_eq!(out["status"], "done", "{out}");
        let body = out["result"]["body"].as_str().unwrap();
        assert!(body.len() <= max_bytes, "{max_bytes}: {body}");
        answers.push_str(&out.to_string());
    }
    // The whole body: redacted, not cut.
    let out = call(
        &s,
        &g,
        "cut",
        "web_fetch",
        json!({"url": url, "auth": {"vault": "KEY"}}),
    )
    .await;
    assert_eq!(out["result"]["body"], "value=[REDACTED:KEY];tail", "{out}");
    // Detached: the outcome arrives as an event, scrubbed the same way.
    for max_bytes in [20, 37, 38] {
        let r = s
            .post("/v1/sessions/cut/calls", &g)
            .json(&json!({"name": "web_fetch", "detach": true,
                "arguments": {"url": url, "auth": {"vault": "KEY"}, "max_bytes": max_bytes}}))
            .send()
            .await
            .unwrap();
        let started: Value = r.json().await.unwrap();
        let id = started["call_id"].as_str().unwrap().to_owned();
        let mut got = Value::Null;
        for _ in 0..50 {
            let r = s
                .get(&format!("/v1/sessions/cut/calls/{id}"), &g)
                .send()
                .await
                .unwrap();
            got = r.json().await.unwrap();
            if got["status"] != "started" && got["status"] != "running" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        answers.push_str(&got.to_string());
    }
    answers.push_str(&all_events(&s).await);
    assert_no_piece(&answers, KEY, "answers and events");
    assert_not_on_disk(&s, KEY);
    s.stop().await;
}

#[tokio::test]
async fn refusals_read_the_same_whether_or_not_the_input_held_a_secret() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    open(&s, &g, "oracle").await;
    // The attacker knows all but the last character and tries each completion as a tool name,
    // as a skill name, as a skill argument and as a note: every answer must be the same text.
    let known = &KEY[..KEY.len() - 1];
    let mut by_kind: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
        Default::default();
    for guess in ["a", "Q", "e", "z"] {
        let name = format!("{known}{guess}");
        let out = call(&s, &g, "oracle", &name, json!({})).await;
        assert_eq!(out["status"], "refused", "{out}");
        by_kind
            .entry("tool name")
            .or_default()
            .insert(out["message"].as_str().unwrap().to_owned());
        let out = call(&s, &g, "oracle", "load_skill", json!({"name": name})).await;
        by_kind
            .entry("skill name")
            .or_default()
            .insert(out["message"].as_str().unwrap().to_owned());
        let out = call(
            &s,
            &g,
            "oracle",
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{}/echo", echo.port), "method": name}),
        )
        .await;
        by_kind.entry("argument").or_default().insert(format!(
            "{} {} {}",
            out["status"], out["rule"], out["message"]
        ));
    }
    for (kind, texts) in &by_kind {
        assert_eq!(texts.len(), 1, "{kind}: the answers differ: {texts:?}");
        assert!(
            !texts.iter().any(|t| t.contains("REDACTED")),
            "{kind}: {texts:?}"
        );
    }
    s.stop().await;
}

/// Issue 35: a destination that reflects the credential reversed, case-changed or split by
/// whitespace reaches the model only redacted, whole or cut at any body limit.
#[tokio::test]
async fn transformed_reflections_are_redacted_whole_and_cut() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    let hows = [
        "reversed",
        "upper",
        "lower",
        "newline",
        "crlf",
        "spaces",
        "spread",
        "reversed-upper-wrapped",
    ];
    // What no answer may hold: 5 or more characters of the value (or of it reversed) in a row,
    // in any case, once whitespace is taken out.
    let reversed: String = KEY.chars().rev().collect();
    let pieces: Vec<String> = [KEY, reversed.as_str()]
        .iter()
        .flat_map(|v| (0..=v.len() - 5).map(move |i| v[i..i + 5].to_lowercase()))
        .collect();
    let leaks = |text: &str| -> Option<String> {
        let squeezed: String = text
            .replace("\\n", "")
            .replace("\\r", "")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_lowercase();
        pieces
            .iter()
            .find(|p| squeezed.contains(p.as_str()))
            .cloned()
    };
    for how in hows {
        // A session per form: each stays within a session's budget of network calls.
        let session = format!("t-{how}");
        open(&s, &g, &session).await;
        let url = format!("http://127.0.0.1:{}/transform/{how}", echo.port);
        let out = call(
            &s,
            &g,
            &session,
            "web_fetch",
            json!({"url": url, "auth": {"vault": "KEY"}}),
        )
        .await;
        assert_eq!(out["status"], "done", "{how}: {out}");
        // Spread, the value is followed by a space of its own.
        let whole = if how == "spread" {
            "value=[REDACTED:KEY] ;tail"
        } else {
            "value=[REDACTED:KEY];tail"
        };
        assert_eq!(out["result"]["body"], whole, "{how}: {out}");
        // Cuts through the value (it starts at byte 6 of the body and, spread, ends at 70).
        for max_bytes in (7..=72).step_by(2).chain([8, 22, 41, 69]) {
            let out = call(
                &s,
                &g,
                &session,
                "web_fetch",
                json!({"url": url, "auth": {"vault": "KEY"}, "max_bytes": max_bytes}),
            )
            .await;
            let text = out.to_string();
            assert_eq!(leaks(&text), None, "{how} cut at {max_bytes}: {text}");
        }
    }
    // Nor did any of it reach the events.
    let events = all_events(&s).await;
    assert_eq!(leaks(&events.replace("[REDACTED:KEY]", "")), None);
    s.stop().await;
}

#[tokio::test]
async fn json_escaped_reflections_are_redacted_and_refused_on_write() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    open(&s, &g, "json").await;
    let out = call(
        &s,
        &g,
        "json",
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{}/json", echo.port), "auth": {"vault": "JKEY"}}),
    )
    .await;
    let body = out["result"]["body"].as_str().unwrap();
    assert!(body.contains("[REDACTED:JKEY]"), "{body}");
    let escaped = python_json(JKEY);
    assert!(
        !out.to_string().contains(&escaped[1..escaped.len() - 1]),
        "{out}"
    );
    assert!(!body.contains("ss\\\\w"), "{body}");
    // A bundle whose config.json holds the escaped value is refused, nothing written.
    let files = json!({"files": {
        "SKILL.md": skill_md("leaky", "Holds a value in its config", "Body."),
        "config.json": format!("{{\"password\": {}}}", serde_json::to_string(JKEY).unwrap()),
    }});
    let (st, p) = problem(
        s.put("/v1/skills/leaky", &s.admin)
            .json(&files)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("JKEY"), "{p}");
    assert!(s.store.index().get(&Scope::Shared, "leaky").is_none());
    s.stop().await;
}

#[tokio::test]
async fn a_value_set_after_a_skill_holds_it_is_scrubbed_from_every_surface() {
    let s = TestServer::start().await;
    let value = "late-secret-Vq9xT3";
    let body = format!("Use the password {value} to log in.");
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-one",
        &[
            (
                "SKILL.md",
                skill_md("shared-one", &format!("Logs in with {value}"), &body).as_bytes(),
            ),
            ("notes/login.txt", format!("password={value}\n").as_bytes()),
        ],
    )
    .await;
    // Before: the value is ordinary text.
    let before = s
        .get("/v1/skills/shared-one", &s.alpha)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(before.contains(value));
    // The operator makes it a secret.
    let r = s
        .put("/v1/vault/LATE", &s.admin)
        .json(&json!({"value": value, "description": "set late"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let mut seen = String::new();
    for path in [
        "/v1/skills/shared-one",
        "/v1/skills/shared-one?rev=1",
        "/v1/skills/shared-one/history",
        "/v1/skills/shared-one/diff?from=1&to=2",
        "/v1/skills",
    ] {
        let r = s.get(path, &s.alpha).send().await.unwrap();
        let text = r.text().await.unwrap();
        assert!(!text.is_empty(), "{path}");
        seen.push_str(&text);
    }
    let zip = s
        .get("/v1/skills/shared-one/export", &s.admin)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip.to_vec())).unwrap();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).unwrap();
        seen.push_str(&text);
    }
    // A turn (the catalog shows the description) and load_skill (the body).
    open(&s, &s.alpha, "late").await;
    seen.push_str(
        &s.post("/v1/sessions/late/turns", &s.alpha)
            .json(&json!({"message": "log in please"}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    let out = call(
        &s,
        &s.alpha,
        "late",
        "load_skill",
        json!({"name": "shared-one"}),
    )
    .await;
    seen.push_str(&out.to_string());
    assert!(seen.contains("[REDACTED:LATE]"), "{seen}");
    assert!(!seen.contains(value), "{seen}");
    s.stop().await;
}

#[tokio::test]
async fn redirect_errors_redact_before_they_cut() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    open(&s, &g, "hops").await;
    let out = call(
        &s,
        &g,
        "hops",
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{}/redirect", echo.port), "auth": {"vault": "KEY"}}),
    )
    .await;
    assert_eq!(out["status"], "failed", "{out}");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("too many redirects"), "{message}");
    let mut all = out.to_string();
    all.push_str(&all_events(&s).await);
    assert_no_piece(&all, KEY, "redirect error");
    s.stop().await;
}

#[tokio::test]
async fn refusals_inside_a_tool_are_refusals_and_name_the_hop() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    open(&s, &g, "inner").await;
    // A destination outside the grants: refused, as the gate refuses, with one event.
    let out = call(
        &s,
        &g,
        "inner",
        "web_fetch",
        json!({"url": "http://127.0.0.1:1/x"}),
    )
    .await;
    assert_eq!(out["status"], "refused", "{out}");
    assert_eq!(out["rule"], "destination_not_allowed", "{out}");
    s.state.engine.flush().await;
    let refusals = s
        .store
        .events(&EventFilter {
            session: Some("inner".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "call_refused")
        .count();
    assert_eq!(refusals, 1, "one event for one refusal");
    // A vault entry outside the grants: the same.
    let out = call(
        &s,
        &g,
        "inner",
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{}/echo", echo.port), "auth": {"vault": "NOPE"}}),
    )
    .await;
    assert_eq!(
        (out["status"].as_str(), out["rule"].as_str()),
        (Some("refused"), Some("vault_not_allowed")),
        "{out}"
    );
    s.stop().await;
}

/// A stateless MCP `tools/call` of `load_skill` for `shared-one`, optionally naming the
/// Skillbase session; the body of the answer.
async fn stateless_load(s: &TestServer, token: &str, session: Option<&str>) -> String {
    let mut r = s
        .http
        .post(s.url("/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "load_skill");
    if let Some(id) = session {
        r = r.header("skillbase-session", id);
    }
    r.json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "load_skill", "arguments": {"name": "shared-one"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Issue 35: session ids are per agent. Alpha asking for an id beta holds gets exactly what it
/// gets for a free id (REST and MCP): a new, empty session of its own; beta's is untouched; an
/// admin names the agent when two hold the id.
#[tokio::test]
async fn a_session_id_held_by_another_agent_tells_nothing() {
    let s = TestServer::start().await;
    // Beta works in "X": a note, then a load (an activation, a run).
    ok_json(
        s.post("/v1/sessions", &s.beta)
            .json(&json!({"id": "X"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let note = ok_json(
        s.post("/v1/sessions/X/calls", &s.beta)
            .json(&json!({"name": "take_note", "arguments": {"text": "beta was here"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(note["result"]["notes"], "- beta was here", "{note}");
    let text = stateless_load(&s, &s.beta, Some("X")).await;
    assert!(text.contains("Body of shared-one"), "{text}");
    // Alpha opens "X" (held by beta) and "Y" (free): the same answer but for the id.
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("id");
        v.as_object_mut().unwrap().remove("created_at");
        v
    };
    let mut seen = Vec::new();
    for id in ["X", "Y"] {
        let r = s
            .post("/v1/sessions", &s.alpha)
            .json(&json!({"id": id}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{id}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["id"], id);
        seen.push(strip(v));
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0]["agent"], "alpha");
    assert_eq!(seen[0]["activations"], json!([]));
    // Alpha's "X" is its own: nothing of beta's is in it.
    let mine = ok_json(s.get("/v1/sessions/X", &s.alpha).send().await.unwrap(), 200).await;
    assert_eq!(mine["activations"], json!([]), "{mine}");
    let note = ok_json(
        s.post("/v1/sessions/X/calls", &s.alpha)
            .json(&json!({"name": "take_note", "arguments": {"text": "alpha"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(note["result"]["notes"], "- alpha", "{note}");
    // Over MCP too: alpha's Skillbase-Session "X" works as it does for a free id.
    for id in ["X", "Z"] {
        let text = stateless_load(&s, &s.alpha, Some(id)).await;
        assert!(text.contains("Body of shared-one"), "{id}: {text}");
        assert!(!text.contains("cannot be used"), "{id}: {text}");
    }
    // Beta's session is as beta left it.
    let theirs = ok_json(s.get("/v1/sessions/X", &s.beta).send().await.unwrap(), 200).await;
    assert_eq!(theirs["agent"], "beta");
    assert_eq!(
        theirs["activations"].as_array().unwrap().len(),
        1,
        "{theirs}"
    );
    let (alpha, beta) = (
        AgentName::parse("alpha").unwrap(),
        AgentName::parse("beta").unwrap(),
    );
    assert_eq!(s.store.note(&beta, "X").await.unwrap(), "- beta was here");
    assert_eq!(s.store.note(&alpha, "X").await.unwrap(), "- alpha");
    // Alpha naming beta finds nothing, as for an id nobody holds.
    let (st1, p1) = problem(
        s.get("/v1/sessions/X?agent=beta", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st2, p2) = problem(
        s.get("/v1/sessions/nobody-has-this?agent=beta", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st1, st2), (404, 404));
    assert_eq!(
        p1["detail"].as_str().unwrap().replace("'X'", "'?'"),
        p2["detail"]
            .as_str()
            .unwrap()
            .replace("'nobody-has-this'", "'?'")
    );
    // An admin names the agent when two hold the id.
    let (st, p) = problem(s.get("/v1/sessions/X", &s.admin).send().await.unwrap()).await;
    assert_eq!(st, 409, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("?agent="), "{p}");
    let b = ok_json(
        s.get("/v1/sessions/X?agent=beta", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(b["agent"], "beta");
    let y = ok_json(s.get("/v1/sessions/Y", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(y["agent"], "alpha");
    s.stop().await;
}

#[tokio::test]
async fn derived_session_ids_cannot_be_squatted_and_refusals_say_nothing() {
    let s = TestServer::start().await;
    // Beta's stateless MCP calls record into a session alpha cannot name.
    let text = stateless_load(&s, &s.beta, None).await;
    assert!(text.contains("Body of shared-one"), "{text}");
    s.state.engine.flush().await;
    let used: Vec<String> = s
        .store
        .events(&EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.agent.as_deref() == Some("beta"))
        .filter_map(|e| e.session)
        .collect();
    let victim = used
        .first()
        .expect("beta's call recorded a session")
        .clone();
    assert!(victim.starts_with("mcp:beta:"), "{victim}");
    // The old predictable form is not what beta uses.
    assert!(
        !used.iter().any(|u| u.starts_with("mcp-token-")),
        "{used:?}"
    );
    // Alpha tries to name beta's derived session and ids in the reserved namespaces: the same
    // refusal for each.
    let mut answers = std::collections::BTreeSet::new();
    for id in [victim.as_str(), "mcp:alpha:mine", "rest:beta"] {
        let (st, p) = problem(
            s.post("/v1/sessions", &s.alpha)
                .json(&json!({"id": id}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        answers.insert((st, p.to_string()));
    }
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers.first().unwrap().0, 409);
    // Nor through MCP's Skillbase-Session header.
    let text = stateless_load(&s, &s.alpha, Some(victim.as_str())).await;
    assert!(!text.contains("Body of shared-one"), "{text}");
    assert!(!text.contains("another agent"), "{text}");
    // The victim's session is still beta's, and alpha holds none by that id.
    let beta = AgentName::parse("beta").unwrap();
    assert!(s.store.session(&beta, &victim).await.unwrap().is_some());
    assert_eq!(s.store.session_agents(&victim).await.unwrap(), [beta]);
    s.stop().await;
}

#[tokio::test]
async fn two_agents_sessions_never_share_a_workspace_folder() {
    let s = TestServer::start().await;
    let files: &[(&str, &[u8])] = &[("scripts/run.sh", b"#!/bin/sh\necho hi\n")];
    put_skill(&s.store, Scope::Shared, "shared-one", files).await;
    // Alpha's session is hashed to a folder name; beta names its session after that folder.
    let hashed = skillbase_runtime::session_dir_name("a b");
    for (token, id) in [(&s.alpha, "a b"), (&s.beta, hashed.as_str())] {
        ok_json(
            s.post("/v1/sessions", token)
                .json(&json!({"id": id}))
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        let out = call(
            &s,
            token,
            &id.replace(' ', "%20"),
            "load_skill",
            json!({"name": "shared-one"}),
        )
        .await;
        assert_eq!(out["status"], "done", "{out}");
    }
    let ws = s.db.parent().unwrap().join("workspaces");
    let a = skillbase_runtime::session_root(&ws, "alpha", "a b");
    let b = skillbase_runtime::session_root(&ws, "beta", &hashed);
    assert_ne!(a, b);
    assert!(a.join("skills").is_dir() && b.join("skills").is_dir());
    assert!(!ws.join(&hashed).exists(), "no folder shared by name");
    s.stop().await;
}

#[tokio::test]
async fn dev_mode_refuses_foreign_hosts_and_origins_on_every_route() {
    let s = TestServer::start_with(ServerOptions {
        dev: true,
        ..ServerOptions::default()
    })
    .await;
    for (host, origin) in [
        ("evil.example", None),
        ("evil.example:80", None),
        ("127.0.0.1", Some("http://evil.example")),
    ] {
        for (m, path) in [
            (Method::POST, "/v1/tokens"),
            (Method::GET, "/v1/agents"),
            (Method::GET, "/metrics"),
            (Method::POST, "/mcp"),
        ] {
            let mut r = s
                .http
                .request(m.clone(), s.url(path))
                .header("host", host)
                .header("content-type", "application/json")
                .body(r#"{"agent": "alpha"}"#);
            if let Some(o) = origin {
                r = r.header("origin", o);
            }
            let r = r.send().await.unwrap();
            assert_eq!(r.status().as_u16(), 403, "{host} {origin:?} {m} {path}");
            let text = r.text().await.unwrap();
            assert!(!text.contains("sbt_"), "no token minted: {text}");
        }
    }
    assert!(
        s.store.tokens().await.unwrap().len() <= 3,
        "no token was created"
    );
    // Loopback names still work.
    let r = s
        .http
        .get(s.url("/v1/agents"))
        .header("origin", format!("http://127.0.0.1:{}", s.addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    s.stop().await;
}

#[tokio::test]
async fn revoking_a_token_ends_its_open_event_streams() {
    let s = TestServer::start().await;
    open(&s, &s.alpha, "watched").await;
    let r = s
        .get("/v1/sessions/watched/events", &s.alpha)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let mut stream = r.bytes_stream();
    let r = s
        .http
        .request(
            Method::DELETE,
            s.url(&format!("/v1/tokens/{}", s.alpha_token_id)),
        )
        .bearer_auth(&s.admin)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    // Within the token cache window (2 s) and one check interval, the stream ends.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = stream.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its token");
    s.stop().await;
}

#[tokio::test]
async fn a_running_skill_keeps_the_envelope_of_the_revision_it_was_activated_at() {
    let s = TestServer::start().await;
    let echo = Echo::start().await;
    let g = gamma(&s, &echo).await;
    let narrow = "---\nname: pinned-skill\ndescription: Takes notes only\ncapabilities:\n  tools: [notes]\n---\n\nTake a note.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "pinned-skill",
        &[("SKILL.md", narrow.as_bytes())],
    )
    .await;
    open(&s, &g, "pin").await;
    let out = call(&s, &g, "pin", "load_skill", json!({"name": "pinned-skill"})).await;
    assert_eq!(out["status"], "done", "{out}");
    // Mid-run, a new revision declares web_fetch too.
    let wide = "---\nname: pinned-skill\ndescription: Takes notes only\ncapabilities:\n  tools: [notes, web_fetch]\n---\n\nTake a note.\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "pinned-skill",
        &[("SKILL.md", wide.as_bytes())],
    )
    .await;
    let out = call(
        &s,
        &g,
        "pin",
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{}/echo", echo.port)}),
    )
    .await;
    assert_eq!(
        (out["status"].as_str(), out["rule"].as_str()),
        (Some("refused"), Some("class_not_declared")),
        "{out}"
    );
    assert!(
        out["message"].as_str().unwrap().contains("revision 1"),
        "{out}"
    );
    // Finished and loaded again, the new revision drives, with its own envelope: the class is
    // declared now (the destination, declared by neither, is still refused).
    call(&s, &g, "pin", "skill_finish", json!({"outcome": "success"})).await;
    call(&s, &g, "pin", "load_skill", json!({"name": "pinned-skill"})).await;
    let out = call(
        &s,
        &g,
        "pin",
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{}/echo", echo.port)}),
    )
    .await;
    assert_eq!(out["rule"], "destination_not_allowed", "{out}");
    s.stop().await;
}

#[tokio::test]
async fn an_upload_is_bounded_by_what_it_declares_before_anything_is_unpacked() {
    use std::io::Write;
    let s = TestServer::start().await;
    // Twenty skills of 1 MiB each in an archive of a few kilobytes: refused from the sizes the
    // entries declare, before a byte is decompressed.
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let zeros = vec![0u8; 1024 * 1024];
    for i in 0..20 {
        let name = format!("bomb-{i}");
        z.start_file(format!("{name}/SKILL.md"), opts).unwrap();
        z.write_all(skill_md(&name, "A large skill", "Body.").as_bytes())
            .unwrap();
        z.start_file(format!("{name}/data.bin"), opts).unwrap();
        z.write_all(&zeros).unwrap();
    }
    let bytes = z.finish().unwrap().into_inner();
    assert!(bytes.len() < 200 * 1024, "{}", bytes.len());
    let (st, p) = problem(
        s.post("/v1/imports", &s.admin)
            .header("content-type", "application/zip")
            .body(bytes)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422, "{p}");
    assert!(
        p["detail"].as_str().unwrap().contains("would unpack to"),
        "{p}"
    );
    assert!(s.store.index().get(&Scope::Shared, "bomb-0").is_none());
    s.stop().await;
}
