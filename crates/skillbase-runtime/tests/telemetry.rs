//! OpenTelemetry export end to end: an engine configured with `[telemetry]` sends its spans and
//! metrics to a real OTLP receiver built on the official protobuf definitions
//! (`fixtures/otlp/receiver.py`, on PyPI's `opentelemetry-proto` and `grpcio`, which
//! `.ci/upstreams` installs beside the upstream MCP servers), over OTLP/HTTP and OTLP/gRPC. The
//! receiver decodes every request and refuses one holding a field the definitions do not know.
//! Without that folder at build time the receiver tests are compiled as ignored (reported
//! skipped); the collector-down test needs nothing.

use crate::common::{open_store, req, text};
use serde_json::{Value, json};
use skillbase_format::Bundle;
use skillbase_runtime::{CallMode, CallOutcome, Engine, Vault, VaultKey, WriteMode};
use skillbase_store::{AgentName, Author, Scope, StatusChange};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A vault value that appears in the turn's message, the session id and a call's arguments.
const SECRET: &str = "otel-secret-7d1e90c4b2";

fn agent(n: &str) -> AgentName {
    AgentName::parse(n).unwrap()
}

/// The receiver, running: its ports and the lines it printed.
#[allow(dead_code)]
struct Receiver {
    child: std::process::Child,
    http: u16,
    grpc: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

#[allow(dead_code)]
impl Receiver {
    fn start() -> Receiver {
        let upstreams = PathBuf::from(std::env::var("SKILLBASE_TEST_UPSTREAMS").unwrap());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp/receiver.py");
        let mut child = std::process::Command::new(upstreams.join("venv/bin/python"))
            .arg(script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the receiver starts");
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let ready = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the receiver says it is ready");
        let port = |key: &str| -> u16 {
            ready
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {ready}"))
        };
        Receiver {
            http: port("http="),
            grpc: port("grpc="),
            child,
            lines,
        }
    }

    /// Lines until `done` says enough arrived (or 30 s pass).
    fn collect(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(&got) && Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                let v: Value = serde_json::from_str(&line).unwrap();
                assert!(v.get("error").is_none(), "the receiver refused: {v}");
                got.push(v);
            }
        }
        got
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.write_all(b"");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An engine over a fresh store with the secret in its vault, a triggered skill, and the
/// everything server as an upstream, exporting to `endpoint` over `protocol`.
async fn engine(dir: &Path, endpoint: &str, protocol: &str, upstream: bool) -> Engine {
    let store = Arc::new(open_store(&dir.join("skillbase.db")).await);
    let vault = Vault::open(store.clone(), VaultKey::parse(&"33".repeat(32)).unwrap())
        .await
        .unwrap();
    vault
        .set(
            "OTEL_SECRET",
            "a key the telemetry must never carry",
            SECRET.as_bytes(),
            &Author::Human("tester".into()),
        )
        .await
        .unwrap();
    let server = if upstream {
        let upstreams = PathBuf::from(std::env::var("SKILLBASE_TEST_UPSTREAMS").unwrap());
        let js =
            upstreams.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            js.display().to_string()
        )
    } else {
        String::new()
    };
    let config = format!(
        r#"
[agents.ops]
skills = "all"
[agents.ops.grants]
tools = ["everything"]
vault = ["OTEL_SECRET"]

{server}
[telemetry]
enabled = true
endpoint = "{endpoint}"
protocol = "{protocol}"
batch_delay_ms = 20
metrics_interval_ms = 600000
timeout_ms = 2000
service_name = "skillbase-test"
"#
    );
    let engine = Engine::builder()
        .store(store)
        .vault(vault)
        .config_toml(config)
        .build()
        .await
        .unwrap();
    let skill = text(
        "widget-deploy",
        "Deploy the widget service. Use when asked to deploy the widget.",
        "triggers: [deploy the widget]\n",
        "Run the deploy checklist.",
    );
    engine
        .writer()
        .put(req(Scope::Shared, Bundle::single(skill).unwrap()))
        .await
        .unwrap();
    engine
}

/// Status changes through the engine's writer: disable and enable, a second revision and a
/// revert to the first, a pending revision approved then a second rejected, retire and
/// restore, and a retire of a skill that does not exist.
async fn status_changes(e: &Engine) {
    let w = e.writer();
    let who = Author::Human("tester".into());
    let shared = Scope::Shared;
    let null = Value::Null;
    for change in [StatusChange::Disable, StatusChange::Enable] {
        w.set_status(&shared, "widget-deploy", change, &who, null.clone(), None)
            .await
            .unwrap();
    }
    let second = text(
        "widget-deploy",
        "Deploy the widget service. Use when asked to deploy the widget.",
        "triggers: [deploy the widget]\n",
        "Run the deploy checklist, then tell the team.",
    );
    w.put(req(shared.clone(), Bundle::single(second).unwrap()))
        .await
        .unwrap();
    w.revert(&shared, "widget-deploy", 1, &who).await.unwrap();
    for (i, step) in ["Roll back.", "Roll back, then page."].iter().enumerate() {
        let skill = text(
            "widget-rollback",
            "Roll the widget service back. Use when a widget deploy failed.",
            "",
            step,
        );
        let pending = w
            .put_as(
                req(shared.clone(), Bundle::single(skill).unwrap()),
                WriteMode::Pending,
            )
            .await
            .unwrap();
        if i == 0 {
            w.approve(&shared, "widget-rollback", pending.rev, &who)
                .await
                .unwrap();
        } else {
            w.reject(&shared, "widget-rollback", pending.rev, &who)
                .await
                .unwrap();
        }
    }
    for change in [StatusChange::Retire, StatusChange::Restore] {
        w.set_status(&shared, "widget-rollback", change, &who, null.clone(), None)
            .await
            .unwrap();
    }
    let missing = w
        .set_status(
            &shared,
            "no-such-skill",
            StatusChange::Retire,
            &who,
            null,
            None,
        )
        .await;
    assert!(missing.is_err());
}

/// Every span the receiver got, flattened, with its resource's attributes.
fn spans(lines: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for l in lines.iter().filter(|l| l["signal"] == "traces") {
        for rs in l["body"]["resource_spans"].as_array().into_iter().flatten() {
            for ss in rs["scope_spans"].as_array().into_iter().flatten() {
                assert_eq!(ss["scope"]["name"], "skillbase");
                for s in ss["spans"].as_array().into_iter().flatten() {
                    let mut s = s.clone();
                    s["resource"] = rs["resource"].clone();
                    out.push(s);
                }
            }
        }
    }
    out
}

fn metric_names(lines: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for l in lines.iter().filter(|l| l["signal"] == "metrics") {
        for rm in l["body"]["resource_metrics"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for sm in rm["scope_metrics"].as_array().into_iter().flatten() {
                for m in sm["metrics"].as_array().into_iter().flatten() {
                    out.push(m["name"].as_str().unwrap_or_default().to_owned());
                }
            }
        }
    }
    out
}

/// A span's attribute as JSON (`{"string_value": ...}`, `{"int_value": ...}`, ...).
fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn attr_str<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    attr(span, key)?["string_value"].as_str()
}

fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect()
}

/// The secret in every encoding a leak could take.
fn leaks(raw: &str) -> bool {
    use base64::Engine as _;
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    raw.contains(SECRET) || raw.contains(&hex) || raw.contains(&b64[..b64.len() - 4])
}

#[allow(dead_code)]
async fn a_session_reaches_the_receiver(protocol: &str) {
    let receiver = Receiver::start();
    let port = if protocol == "grpc" {
        receiver.grpc
    } else {
        receiver.http
    };
    let dir = tempfile::tempdir().unwrap();
    let e = engine(
        dir.path(),
        &format!("http://127.0.0.1:{port}"),
        protocol,
        true,
    )
    .await;
    assert!(
        e.gateway()
            .connected("everything", 1, Duration::from_secs(60))
            .await,
        "{:?}",
        e.gateway().status()
    );
    let ops = agent("ops");
    let session = format!("sess-{SECRET}");
    let turn = e
        .turn(
            &ops,
            &session,
            &format!("please deploy the widget, the key is {SECRET}"),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(turn.report.activated[0].name, "widget-deploy");
    let o = e
        .call(
            &ops,
            &session,
            "everything__echo",
            json!({"message": format!("say {SECRET}")}),
            CallMode::Wait,
        )
        .await
        .unwrap();
    assert!(matches!(o, CallOutcome::Done { .. }), "{o:?}");
    let refused = e
        .call(&ops, &session, "no_such_tool", json!({}), CallMode::Wait)
        .await
        .unwrap();
    assert!(matches!(refused, CallOutcome::Refused { .. }));
    status_changes(&e).await;
    e.flush_telemetry(Duration::from_secs(10)).await;

    let lines = receiver.collect(|got| {
        let s = spans(got);
        named(&s, "execute_tool").len() >= 2
            && !named(&s, "tools/call").is_empty()
            && !named(&s, "skillbase.turn").is_empty()
            && !metric_names(got).is_empty()
    });
    let transport = if protocol == "grpc" { "grpc" } else { "http" };
    assert!(lines.iter().all(|l| l["transport"] == transport));
    let all = spans(&lines);

    // The turn: a new trace, the skill with its reason and revision, the counts.
    let turn = named(&all, "skillbase.turn")[0];
    assert_eq!(attr_str(turn, "gen_ai.agent.name"), Some("ops"));
    let activated = &attr(turn, "skillbase.skills.activated").unwrap()["array_value"]["values"];
    assert_eq!(activated[0]["string_value"], "widget-deploy");
    let reasons = &attr(turn, "skillbase.skills.reasons").unwrap()["array_value"]["values"];
    assert_eq!(reasons[0]["string_value"], "trigger:deploy the widget");
    let revisions = &attr(turn, "skillbase.skills.revisions").unwrap()["array_value"]["values"];
    assert_eq!(revisions[0]["string_value"], "1");
    assert!(attr(turn, "skillbase.tokens.total").is_some());
    assert_eq!(
        turn["resource"]["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == "service.name")
            .unwrap()["value"]["string_value"],
        "skillbase-test"
    );

    // The calls: children of the turn, in its trace; the refusal by its rule.
    let echo = named(&all, "execute_tool everything__echo")[0];
    assert_eq!(echo["trace_id"], turn["trace_id"]);
    assert_eq!(echo["parent_span_id"], turn["span_id"]);
    assert_eq!(attr_str(echo, "gen_ai.tool.name"), Some("everything__echo"));
    assert_eq!(attr_str(echo, "skillbase.call.outcome"), Some("done"));
    assert_eq!(attr_str(echo, "skillbase.mcp.server"), Some("everything"));
    assert_eq!(
        attr_str(echo, "gen_ai.operation.name"),
        Some("execute_tool")
    );
    let nope = named(&all, "execute_tool no_such_tool")[0];
    assert_eq!(attr_str(nope, "skillbase.call.outcome"), Some("refused"));
    assert_eq!(attr_str(nope, "error.type"), Some("not_offered"));
    assert_eq!(nope["status"]["code"], "STATUS_CODE_ERROR");

    // The upstream request: a client span under the call.
    let up = named(&all, "tools/call echo")[0];
    assert_eq!(up["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(up["parent_span_id"], echo["span_id"]);
    assert_eq!(attr_str(up, "mcp.method.name"), Some("tools/call"));

    // The write of the skill: a span of its own.
    let write = named(&all, "skillbase.write put")[0];
    assert_eq!(
        attr_str(write, "skillbase.skill.name"),
        Some("widget-deploy")
    );
    assert_eq!(attr_str(write, "skillbase.write.kind"), Some("created"));
    // Status changes, approvals and reverts are writes too, each with its span; a refused one
    // says why by its kind.
    for (op, name) in [
        ("disable", "widget-deploy"),
        ("enable", "widget-deploy"),
        ("revert", "widget-deploy"),
        ("pending", "widget-rollback"),
        ("approve", "widget-rollback"),
        ("reject", "widget-rollback"),
        ("retire", "widget-rollback"),
        ("restore", "widget-rollback"),
    ] {
        let found = named(&all, &format!("skillbase.write {op}"));
        assert!(
            found
                .iter()
                .any(|s| attr_str(s, "skillbase.skill.name") == Some(name)),
            "no {op} span for {name}"
        );
    }
    let retire = named(&all, "skillbase.write retire");
    let refused = retire
        .iter()
        .find(|s| attr_str(s, "error.type").is_some())
        .expect("the refused retire's span");
    assert_eq!(attr_str(refused, "error.type"), Some("not_found"));
    assert_eq!(refused["status"]["code"], "STATUS_CODE_ERROR");

    // The metrics.
    let names = metric_names(&lines);
    for m in [
        "skillbase.turns",
        "skillbase.skill.activations",
        "skillbase.calls",
        "skillbase.call.duration",
        "skillbase.turn.duration",
        "skillbase.store.writes",
        "mcp.client.operation.duration",
    ] {
        assert!(names.iter().any(|n| n == m), "{m} not in {names:?}");
    }

    // No secret, in any encoding, anywhere in what was sent (the session id was redacted).
    for l in &lines {
        assert!(!leaks(&l.to_string()), "a secret left in {l}");
        assert!(
            !leaks(l["raw"].as_str().unwrap()),
            "a secret left in the bytes"
        );
    }
    assert!(
        all.iter()
            .filter_map(|s| attr_str(s, "gen_ai.conversation.id"))
            .all(|c| !c.contains(SECRET))
    );
    let stats = e.telemetry_stats().unwrap();
    assert_eq!(stats.dropped_spans, 0);
    assert_eq!(stats.failed_exports, 0, "{stats:?}");
    e.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the OTLP receiver's packages: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn spans_and_metrics_reach_a_receiver_over_otlp_http() {
    a_session_reaches_the_receiver("http/protobuf").await;
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the OTLP receiver's packages: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn spans_and_metrics_reach_a_receiver_over_otlp_grpc() {
    a_session_reaches_the_receiver("grpc").await;
}

/// A collector that is down costs nothing but the failed exports: turns, calls and writes
/// answer as without telemetry.
#[tokio::test]
async fn a_collector_that_is_down_never_fails_a_turn_or_a_call() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let e = engine(
        dir.path(),
        &format!("http://127.0.0.1:{port}"),
        "http/protobuf",
        false,
    )
    .await;
    let ops = agent("ops");
    let turn = e
        .turn(&ops, "s1", "deploy the widget", &Default::default())
        .await
        .unwrap();
    assert_eq!(turn.report.activated[0].name, "widget-deploy");
    let o = e
        .call(&ops, "s1", "no_such_tool", json!({}), CallMode::Wait)
        .await
        .unwrap();
    assert!(matches!(o, CallOutcome::Refused { .. }));
    e.flush_telemetry(Duration::from_secs(10)).await;
    let stats = e.telemetry_stats().expect("export is on");
    assert!(stats.failed_exports >= 1, "{stats:?}");
    assert_eq!(stats.exported_spans, 0);
    e.close().await;
}
