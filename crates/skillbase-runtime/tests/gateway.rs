//! The tool gateway against real MCP servers from the registries, installed by `.ci/upstreams`
//! into the folder `SKILLBASE_TEST_UPSTREAMS` names: `@modelcontextprotocol/server-everything`
//! (npm; stdio and streamable HTTP), `mcp-server-time` and `mcp-server-fetch` (PyPI), and a
//! server on the official Python SDK whose tool list grows (`fixtures/upstreams/grow.py`).
//! Without the folder at build time these tests are compiled as ignored (reported skipped).
//!
//! Every call goes through the dispatcher as an agent's would: offered set, schema, class gate,
//! the driving skill's declarations, bounds, timeout, redaction, events. Harness-run and HTTP
//! tools need no upstream and are tested at the end of the file without the folder.

use crate::common::{open_store, req, text};
use serde_json::{Value, json};
use skillbase_format::Bundle;
use skillbase_runtime::Engine;
use skillbase_runtime::ServerState;
use skillbase_runtime::{CallMode, CallOutcome, PostResultError, Rule};
use skillbase_runtime::{Vault, VaultKey};
use skillbase_store::{AgentName, Author, Scope, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The vault value the upstream's environment and a fetched page carry.
const SECRET: &str = "upstream-secret-4be1c9d07a";

#[allow(dead_code)]
fn upstreams() -> PathBuf {
    PathBuf::from(std::env::var("SKILLBASE_TEST_UPSTREAMS").expect(
        "SKILLBASE_TEST_UPSTREAMS names the folder .ci/upstreams installed the servers into",
    ))
}

#[allow(dead_code)]
fn everything_js() -> PathBuf {
    upstreams().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

#[allow(dead_code)]
fn venv_bin(name: &str) -> PathBuf {
    upstreams().join("venv/bin").join(name)
}

fn agent(n: &str) -> AgentName {
    AgentName::parse(n).unwrap()
}

/// A store with the vault entry set, and an engine over it built from `config`.
async fn engine(dir: &Path, config: &str) -> (Arc<Store>, Engine) {
    let store = Arc::new(open_store(&dir.join("skillbase.db")).await);
    let vault = Vault::open(store.clone(), VaultKey::parse(&"22".repeat(32)).unwrap())
        .await
        .unwrap();
    vault
        .set(
            "UPSTREAM_SECRET",
            "the upstream's key",
            SECRET.as_bytes(),
            &Author::Human("tester".into()),
        )
        .await
        .unwrap();
    let engine = Engine::builder()
        .store(store.clone())
        .vault(vault)
        .config_toml(config)
        .build()
        .await
        .unwrap();
    (store, engine)
}

async fn call(e: &Engine, a: &str, session: &str, tool: &str, args: Value) -> CallOutcome {
    e.call(&agent(a), session, tool, args, CallMode::Wait)
        .await
        .unwrap()
}

fn done_text(o: &CallOutcome) -> String {
    match o {
        CallOutcome::Done { result, .. } => match result {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        },
        other => panic!("expected done, got {other:?}"),
    }
}

fn refused_rule(o: &CallOutcome) -> Rule {
    match o {
        CallOutcome::Refused { rule, .. } => *rule,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[allow(dead_code)]
fn stdio_config(extra: &str) -> String {
    format!(
        r#"
[agents.ops]
skills = "all"
[agents.ops.grants]
tools = ["everything", "time", "skills"]
vault = ["UPSTREAM_SECRET"]

[agents.clock]
[agents.clock.grants]
tools = ["time"]

[mcp_servers.everything]
command = "node"
args = [{js:?}, "stdio"]
env = {{ SKILLBASE_TEST_KEY = {{ vault = "UPSTREAM_SECRET" }} }}
[mcp_servers.everything.tools.trigger-long-running-operation]
cost = "immediate"

[mcp_servers.time]
command = {time:?}
args = ["--local-timezone", "UTC"]

[mcp_servers.time2]
command = {time:?}
args = ["--local-timezone", "UTC"]
class = "time"
{extra}
"#,
        js = everything_js().display().to_string(),
        time = venv_bin("mcp-server-time").display().to_string(),
    )
}

async fn connected(e: &Engine, servers: &[&str]) {
    let g = e.gateway();
    for s in servers {
        assert!(
            g.connected(s, 1, Duration::from_secs(60)).await,
            "{s} did not connect: {:?}",
            g.status()
        );
    }
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the upstream MCP servers: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn upstream_tools_run_inside_the_envelope_and_stay_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let (store, e) = engine(dir.path(), &stdio_config("")).await;
    connected(&e, &["everything", "time", "time2"]).await;

    // Offered with namespaced wire names and ids; same upstream names stay distinct.
    let offered = e.offered(&agent("ops")).unwrap();
    let ids: Vec<(&str, &str)> = offered
        .entries
        .iter()
        .map(|x| (x.wire_name.as_str(), x.id.as_str()))
        .collect();
    assert!(
        ids.contains(&("time__get_current_time", "tool:time/get_current_time")),
        "{ids:?}"
    );
    assert!(
        ids.contains(&("time2__get_current_time", "tool:time2/get_current_time")),
        "{ids:?}"
    );
    assert!(
        ids.contains(&("everything__echo", "tool:everything/echo")),
        "{ids:?}"
    );

    // A granted tool runs; two servers with the same tool answer separately.
    let o = call(
        &e,
        "ops",
        "s1",
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(done_text(&o).contains("UTC"), "{o:?}");
    let o = call(
        &e,
        "ops",
        "s1",
        "time2__get_current_time",
        json!({"timezone": "Europe/Paris"}),
    )
    .await;
    assert!(done_text(&o).contains("Europe/Paris"), "{o:?}");
    let o = call(
        &e,
        "ops",
        "s1",
        "everything__echo",
        json!({"message": "hello upstream"}),
    )
    .await;
    assert!(done_text(&o).contains("hello upstream"), "{o:?}");

    // The upstream's schema is checked before anything is sent.
    let o = call(&e, "ops", "s1", "everything__echo", json!({"message": 7})).await;
    assert_eq!(refused_rule(&o), Rule::InvalidArguments, "{o:?}");

    // An upstream error is a typed failure, not an engine error.
    let o = call(
        &e,
        "ops",
        "s1",
        "time__get_current_time",
        json!({"timezone": "Not/AZone"}),
    )
    .await;
    match &o {
        CallOutcome::Failed { failure, .. } => {
            assert_eq!(
                *failure,
                Some(skillbase_runtime::Failure::Upstream),
                "{o:?}"
            )
        }
        other => panic!("expected a failure, got {other:?}"),
    }

    // Not granted: withheld from the offered set, refused by name.
    let clock = e.offered(&agent("clock")).unwrap();
    assert!(
        clock
            .entries
            .iter()
            .all(|x| !x.wire_name.starts_with("everything__"))
    );
    assert!(
        clock.withheld.iter().any(|w| w == "everything__echo"),
        "{:?}",
        clock.withheld
    );
    let o = call(
        &e,
        "clock",
        "s2",
        "everything__echo",
        json!({"message": "x"}),
    )
    .await;
    assert_eq!(refused_rule(&o), Rule::NotOffered, "{o:?}");

    // A vault value in an upstream's result is scrubbed (get-env prints its environment, which
    // holds the value the configuration resolved from the vault).
    let o = call(&e, "ops", "s1", "everything__get-env", json!({})).await;
    let t = done_text(&o);
    assert!(t.contains("SKILLBASE_TEST_KEY"), "{t}");
    assert!(!t.contains(SECRET), "the secret leaked: {t}");
    e.flush().await;
    let events = store
        .events(&skillbase_store::EventFilter::default())
        .await
        .unwrap();
    assert!(
        events
            .iter()
            .all(|ev| !ev.data.to_string().contains(SECRET))
    );

    // A driving skill that declares only `time` cannot reach `everything`.
    let skill = text(
        "timekeeping",
        "Tell the time in a zone. Use when asked what time it is.",
        "capabilities:\n  tools: [time]\n",
        "Call the time tool.",
    );
    store
        .put(req(Scope::Shared, Bundle::single(skill).unwrap()))
        .await
        .unwrap();
    let o = call(
        &e,
        "ops",
        "s3",
        "load_skill",
        json!({"name": "timekeeping"}),
    )
    .await;
    assert!(matches!(o, CallOutcome::Done { .. }), "{o:?}");
    let o = call(&e, "ops", "s3", "everything__echo", json!({"message": "x"})).await;
    assert_eq!(refused_rule(&o), Rule::ClassNotDeclared, "{o:?}");
    let o = call(
        &e,
        "ops",
        "s3",
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    done_text(&o);

    // A grant revoked: the very next call is refused.
    let mut ops = store.agent(&agent("ops")).await.unwrap().unwrap().config;
    ops.grants.tools.retain(|t| t != "time");
    store.set_agent(&agent("ops"), &ops).await.unwrap();
    let o = call(
        &e,
        "ops",
        "s1",
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_eq!(refused_rule(&o), Rule::NotOffered, "{o:?}");
    e.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the upstream MCP servers: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn a_hanging_upstream_call_is_cancelled_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path(), &stdio_config("")).await;
    connected(&e, &["everything"]).await;
    let started = Instant::now();
    let o = call(
        &e,
        "ops",
        "s1",
        "everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 2}),
    )
    .await;
    let took = started.elapsed();
    match &o {
        CallOutcome::Failed { rule, .. } => assert_eq!(*rule, Some(Rule::Timeout), "{o:?}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // The connection is still good.
    let o = call(
        &e,
        "ops",
        "s1",
        "everything__echo",
        json!({"message": "after"}),
    )
    .await;
    assert!(done_text(&o).contains("after"));
    e.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the upstream MCP servers: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn a_killed_upstream_is_refused_while_down_then_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path(), &stdio_config("")).await;
    connected(&e, &["time"]).await;
    let g = e.gateway();
    let status = |name: &str| g.status().into_iter().find(|s| s.name == name).unwrap();
    let pid = status("time").pid.expect("a stdio server has a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while status("time").state == ServerState::Connected {
        assert!(Instant::now() < deadline, "the kill went unnoticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let o = call(
        &e,
        "ops",
        "s1",
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_eq!(refused_rule(&o), Rule::ToolUnavailable, "{o:?}");
    assert!(
        g.connected("time", 2, Duration::from_secs(60)).await,
        "not restarted: {:?}",
        status("time")
    );
    assert_ne!(status("time").pid, Some(pid));
    let o = call(
        &e,
        "ops",
        "s1",
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(done_text(&o).contains("UTC"));
    e.close().await;
}

/// A port nothing listens on now.
#[allow(dead_code)]
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when the test ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the upstream MCP servers: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn an_http_upstream_and_a_fetching_one_work_and_are_scrubbed() {
    let port = free_port();
    let _server = Child(
        std::process::Command::new("node")
            .arg(everything_js())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A page holding the vault value, served on loopback for mcp-server-fetch to read.
    let page = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let page_port = page.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = page.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let body = format!("<html><body><p>the key is {SECRET} today</p></body></html>");
                let _ = s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    let config = format!(
        r#"
[agents.ops]
[agents.ops.grants]
tools = ["evhttp", "fetch"]

[mcp_servers.evhttp]
url = "http://127.0.0.1:{port}/mcp"
headers = {{ Authorization = {{ vault = "UPSTREAM_SECRET", prefix = "Bearer " }} }}

[mcp_servers.fetch]
command = {fetch:?}
args = ["--ignore-robots-txt", "--allow-private-ips"]
cost = "seconds"
"#,
        fetch = venv_bin("mcp-server-fetch").display().to_string()
    );
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path(), &config).await;
    connected(&e, &["evhttp", "fetch"]).await;
    let o = call(
        &e,
        "ops",
        "s1",
        "evhttp__echo",
        json!({"message": "over http"}),
    )
    .await;
    assert!(done_text(&o).contains("over http"), "{o:?}");
    let o = call(
        &e,
        "ops",
        "s1",
        "fetch__fetch",
        json!({"url": format!("http://127.0.0.1:{page_port}/"), "raw": true}),
    )
    .await;
    let t = done_text(&o);
    assert!(t.contains("the key is"), "{t}");
    assert!(!t.contains(SECRET), "the secret leaked: {t}");
    e.close().await;
}

#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the upstream MCP servers: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn an_upstream_list_changed_reaches_the_registry() {
    let grow = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstreams/grow.py");
    let config = format!(
        r#"
[agents.ops]
[agents.ops.grants]
tools = ["grow"]

[mcp_servers.grow]
command = {python:?}
args = [{grow:?}]
"#,
        python = venv_bin("python").display().to_string(),
        grow = grow.display().to_string()
    );
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path(), &config).await;
    connected(&e, &["grow"]).await;
    let mut changes = e.tools().subscribe();
    changes.borrow_and_update();
    assert!(
        e.offered(&agent("ops"))
            .unwrap()
            .get("grow__sprout")
            .is_none()
    );
    let o = call(&e, "ops", "s1", "grow__grow", json!({"name": "sprout"})).await;
    assert!(done_text(&o).contains("added sprout"), "{o:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while e
        .offered(&agent("ops"))
        .unwrap()
        .get("grow__sprout")
        .is_none()
    {
        assert!(Instant::now() < deadline, "the new tool never arrived");
        let _ = tokio::time::timeout(Duration::from_millis(200), changes.changed()).await;
    }
    let o = call(&e, "ops", "s1", "grow__sprout", json!({})).await;
    assert!(done_text(&o).contains("the tool sprout answers"), "{o:?}");
    e.close().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_down_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[agents.ops]
[agents.ops.grants]
tools = ["ghost"]
[mcp_servers.ghost]
command = "/nonexistent/skillbase-test-no-such-server"
"#;
    let (_store, e) = engine(dir.path(), config).await;
    let g = e.gateway();
    g.settled(Duration::from_secs(10)).await;
    let s = &g.status()[0];
    assert_eq!(s.state, ServerState::Down);
    assert!(
        s.reason
            .as_deref()
            .unwrap_or("")
            .contains("could not start"),
        "{s:?}"
    );
    // Nothing was listed, so nothing is offered; a stray call is refused by name.
    let o = call(&e, "ops", "s1", "ghost__anything", json!({})).await;
    assert_eq!(refused_rule(&o), Rule::NotOffered);
    e.close().await;
}

#[tokio::test]
async fn bad_gateway_configurations_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    for (config, wanted) in [
        ("[mcp_servers.a]\n", "give `command`"),
        ("[mcp_servers.Bad]\ncommand = \"x\"\n", "lowercase"),
        (
            "[[tools]]\nname = \"t\"\ndescription = \"d\"\nclass = \"c\"\nruns = \"harness\"\n[tools.http]\nurl = \"https://h/\"\n",
            "drop `runs",
        ),
        (
            "[[tools]]\nname = \"t\"\ndescription = \"d\"\nclass = \"c\"\n[tools.http]\nurl = \"gopher://h/\"\n",
            "http:// or https://",
        ),
        (
            "[[tools]]\nname = \"t\"\ndescription = \"d\"\nclass = \"c\"\nruns = \"sometimes\"\n",
            "unknown variant",
        ),
    ] {
        let store = Arc::new(open_store(&dir.path().join("x.db")).await);
        let err = Engine::builder()
            .store(store)
            .config_toml(config)
            .build()
            .await
            .err()
            .unwrap_or_else(|| panic!("accepted: {config}"));
        assert!(err.to_string().contains(wanted), "{config}: {err}");
    }
}

// ---------------------------------------------------------------------------------------------
// Harness-run tools.

const HARNESS: &str = r#"
[agents.ops]
[agents.ops.grants]
tools = ["deploy", "skills"]
vault = ["UPSTREAM_SECRET"]
[agents.ops.policies]
max_result_tokens = 50

[agents.other]
[agents.other.grants]
tools = ["deploy"]

[[tools]]
name = "deploy"
description = "Deploy a service (run by the harness)."
class = "deploy"
runs = "harness"
parameters = { type = "object", properties = { service = { type = "string" } }, required = ["service"], additionalProperties = false }
"#;

#[tokio::test]
async fn a_harness_run_tool_is_authorized_here_and_its_result_posted_back() {
    let dir = tempfile::tempdir().unwrap();
    let (store, e) = engine(dir.path(), HARNESS).await;
    let ops = agent("ops");
    // Every stage up to the handler: the schema still refuses bad arguments.
    let o = call(&e, "ops", "s1", "deploy", json!({"service": 3})).await;
    assert_eq!(refused_rule(&o), Rule::InvalidArguments);
    let o = call(&e, "ops", "s1", "deploy", json!({"service": "web"})).await;
    let CallOutcome::Authorized { call_id, tool } = &o else {
        panic!("expected authorized, got {o:?}")
    };
    assert_eq!(tool, "deploy");
    // Only the session it was authorized in may answer it: another agent, or another session
    // of the same agent, is refused exactly as an unknown id is.
    let wrong = e
        .post_result(&agent("other"), "s1", call_id, Ok(json!("x")))
        .await;
    assert_eq!(wrong, Err(PostResultError::NotAwaiting));
    let wrong = e.post_result(&ops, "s9", call_id, Ok(json!("x"))).await;
    assert_eq!(wrong, Err(PostResultError::NotAwaiting));
    let unknown = e.post_result(&ops, "s1", "call-0-0", Ok(json!("x"))).await;
    assert_eq!(unknown, Err(PostResultError::NotAwaiting));
    // The result is redacted and capped like any tool's.
    let long = format!("deployed with {SECRET}; {}", "log line ".repeat(200));
    let out = e
        .post_result(&ops, "s1", call_id, Ok(json!(long)))
        .await
        .unwrap();
    match &out {
        CallOutcome::Done {
            result, truncated, ..
        } => {
            assert!(*truncated, "{out:?}");
            assert!(!result.to_string().contains(SECRET), "{out:?}");
        }
        other => panic!("expected done, got {other:?}"),
    }
    // Twice: refused.
    let again = e.post_result(&ops, "s1", call_id, Ok(json!("x"))).await;
    assert_eq!(again, Err(PostResultError::NotAwaiting));
    // A failure posted back is the call's failure.
    let o = call(&e, "ops", "s1", "deploy", json!({"service": "db"})).await;
    let CallOutcome::Authorized { call_id, .. } = &o else {
        panic!("{o:?}")
    };
    let out = e
        .post_result(&ops, "s1", call_id, Err("the cluster refused".into()))
        .await
        .unwrap();
    assert!(
        matches!(&out, CallOutcome::Failed { message, .. } if message.contains("cluster refused")),
        "{out:?}"
    );
    // Recorded: started (authorized) and finished, never the secret.
    e.flush().await;
    let events = store
        .events(&skillbase_store::EventFilter {
            session: Some("s1".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert!(
        kinds.iter().filter(|k| **k == "call_finished").count() >= 2,
        "{kinds:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.kind == "call_started" && e.data["runs"] == "harness")
    );
    assert!(events.iter().all(|e| !e.data.to_string().contains(SECRET)));
    e.close().await;
}

#[tokio::test]
async fn a_harness_result_never_posted_times_out_and_is_refused_after() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path(), HARNESS).await;
    let ops = agent("ops");
    // An immediate tool: the harness has 5 s.
    let o = call(&e, "ops", "s1", "deploy", json!({"service": "web"})).await;
    let CallOutcome::Authorized { call_id, .. } = o else {
        panic!("{o:?}")
    };
    let outcome = e.wait(&call_id, Duration::from_secs(15)).await;
    assert!(
        matches!(
            &outcome,
            Some(CallOutcome::Failed {
                rule: Some(Rule::Timeout),
                ..
            })
        ),
        "{outcome:?}"
    );
    let late = e.post_result(&ops, "s1", &call_id, Ok(json!("late"))).await;
    assert_eq!(late, Err(PostResultError::NotAwaiting));
    e.close().await;
}

// ---------------------------------------------------------------------------------------------
// HTTP tools.

/// A loopback HTTP server that answers every request with the request line and whether the
/// expected credential arrived; the requests it saw are kept.
async fn echo_server() -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16384];
                let mut n = 0;
                loop {
                    let Ok(m) = s.read(&mut buf[n..]).await else {
                        return;
                    };
                    if m == 0 {
                        break;
                    }
                    n += m;
                    let text = String::from_utf8_lossy(&buf[..n]).to_string();
                    if let Some(head) = text.find("\r\n\r\n") {
                        let len = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if n >= head + 4 + len {
                            break;
                        }
                    }
                }
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                let line = text.lines().next().unwrap_or("").to_owned();
                let authorized = text.contains(&format!("authorization: Bearer {SECRET}"))
                    || text.contains(&format!("Authorization: Bearer {SECRET}"));
                let body_start = text.find("\r\n\r\n").map_or(n, |h| h + 4);
                let body = format!(
                    "{line} authorized={authorized} body={}",
                    &text[body_start..]
                );
                kept.lock().unwrap().push(text);
                let _ = s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    (port, seen)
}

#[tokio::test]
async fn an_http_tool_is_one_request_under_the_destination_policy_and_the_vault_envelope() {
    let (port, seen) = echo_server().await;
    let config = format!(
        r#"
[agents.ops]
[agents.ops.grants]
tools = ["orders"]
vault = ["UPSTREAM_SECRET"]
hosts = ["127.0.0.1:{port}"]

[agents.nokey]
[agents.nokey.grants]
tools = ["orders"]
hosts = ["127.0.0.1:{port}"]

[agents.nohost]
[agents.nohost.grants]
tools = ["orders"]
vault = ["UPSTREAM_SECRET"]

[[tools]]
name = "add_note"
description = "Add a note to an order."
class = "orders"
parameters = {{ type = "object", properties = {{ id = {{ type = "string" }}, lang = {{ type = "string" }}, text = {{ type = "string" }} }}, required = ["id", "text"], additionalProperties = false }}
[tools.http]
method = "POST"
url = "http://127.0.0.1:{port}/orders/{{id}}/notes"
query = ["lang"]
headers = {{ Authorization = {{ vault = "UPSTREAM_SECRET", prefix = "Bearer " }}, X-Team = "ops" }}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let (_store, e) = engine(dir.path(), &config).await;
    let o = call(
        &e,
        "ops",
        "s1",
        "add_note",
        json!({"id": "ord/1", "lang": "en", "text": "refund sent"}),
    )
    .await;
    let t = done_text(&o);
    assert!(
        t.contains("POST /orders/ord%2F1/notes?lang=en HTTP/1.1"),
        "{t}"
    );
    assert!(t.contains("authorized=true"), "{t}");
    assert!(t.contains(r#"body={\"text\":\"refund sent\"}"#), "{t}");
    assert!(!t.contains(SECRET), "{t}");
    assert!(seen.lock().unwrap()[0].contains("x-team: ops"));
    // The vault entry outside the agent's grants: refused inside the tool, nothing sent.
    let before = seen.lock().unwrap().len();
    let o = call(
        &e,
        "nokey",
        "s2",
        "add_note",
        json!({"id": "1", "text": "x"}),
    )
    .await;
    assert_eq!(refused_rule(&o), Rule::VaultNotAllowed, "{o:?}");
    // The host outside the agent's grants: refused before any request.
    let o = call(
        &e,
        "nohost",
        "s3",
        "add_note",
        json!({"id": "1", "text": "x"}),
    )
    .await;
    assert_eq!(refused_rule(&o), Rule::DestinationNotAllowed, "{o:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        before,
        "a refused call reached the server"
    );
    // An HTTP tool is a network call: it counts against the session's budget.
    let offered = e.offered(&agent("ops")).unwrap();
    assert!(offered.get("add_note").is_some());
    e.close().await;
}

/// Servers configured at run time (what `PUT /v1/mcp-servers/{name}` does): a stdio server
/// only for a program `[gateway] api_commands` lists; started at once, its tools offered, then
/// removed (its process exits, its tools leave the registry); another engine on the store (a
/// restart, another server) starts what is stored; the file's servers cannot be changed.
#[tokio::test]
#[cfg_attr(
    not(skillbase_upstreams),
    ignore = "needs the upstream MCP servers: run .ci/upstreams and set SKILLBASE_TEST_UPSTREAMS"
)]
async fn servers_configured_at_run_time_start_stop_and_persist() {
    use skillbase_runtime::{GatewayError, ServerOrigin as Origin};
    let time = venv_bin("mcp-server-time").display().to_string();
    let config = format!(
        r#"
[gateway]
api_commands = [{time:?}]

[agents.clock]
[agents.clock.grants]
tools = ["clock"]

[mcp_servers.filed]
command = {time:?}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let (store, e) = engine(dir.path(), &config).await;
    let g = e.gateway();
    let admin = Author::Human("ops".into());
    // A program the file does not list, a file server's name, a bad table: refused, nothing stored.
    let e1 = g
        .put(
            "sh",
            json!({"command": "/bin/sh", "args": ["-c", "id"]}),
            &admin,
        )
        .await
        .unwrap_err();
    assert!(matches!(e1, GatewayError::CommandNotAllowed(_)), "{e1}");
    assert!(e1.to_string().contains("api_commands"), "{e1}");
    let e2 = g
        .put("filed", json!({"command": time}), &admin)
        .await
        .unwrap_err();
    assert!(matches!(e2, GatewayError::FileConfigured(_)), "{e2}");
    assert!(matches!(
        g.remove("filed", &admin).await,
        Err(GatewayError::FileConfigured(_))
    ));
    let e3 = g
        .put(
            "clock",
            json!({"command": time, "env": {"K": {"vault": "NOT_SET"}}}),
            &admin,
        )
        .await
        .unwrap_err();
    assert!(e3.to_string().contains("'NOT_SET' is not set"), "{e3}");
    assert!(matches!(
        g.remove("clock", &admin).await,
        Err(GatewayError::NotFound(_))
    ));
    assert!(store.mcp_servers().await.unwrap().is_empty());

    // Added: connected, its tools offered to the agent granted its class.
    let created = g
        .put(
            "clock",
            json!({"command": time, "args": ["--local-timezone", "UTC"], "class": "clock"}),
            &admin,
        )
        .await
        .unwrap();
    assert!(created);
    assert!(
        g.connected("clock", 1, Duration::from_secs(60)).await,
        "{:?}",
        g.status()
    );
    let entry = g
        .servers()
        .into_iter()
        .find(|s| s.status.name == "clock")
        .unwrap();
    assert_eq!(entry.origin, Origin::Api);
    assert_eq!(entry.config.as_ref().unwrap()["class"], "clock");
    assert_eq!(entry.updated_by.as_deref(), Some("human:ops"));
    let o = call(
        &e,
        "clock",
        "s1",
        "clock__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(done_text(&o).contains("UTC"), "{o:?}");
    let pid = entry.status.pid.expect("a stdio server has a pid");

    // Another engine on the same store (a restart) starts it from the store.
    let e_b = Engine::builder()
        .store(store.clone())
        .config_toml(&config)
        .build()
        .await
        .unwrap();
    assert!(
        e_b.gateway()
            .connected("clock", 1, Duration::from_secs(60))
            .await
    );
    // (Not `close`: the store is shared with the first engine.)
    e_b.gateway().shutdown().await;
    drop(e_b);

    // Replaced: restarted with the new configuration (a new process).
    assert!(
        !g.put(
            "clock",
            json!({"command": time, "class": "clock", "exclude": ["convert_time"]}),
            &admin
        )
        .await
        .unwrap()
    );
    assert!(g.connected("clock", 1, Duration::from_secs(60)).await);
    let st = g.status().into_iter().find(|s| s.name == "clock").unwrap();
    assert_ne!(st.pid, Some(pid));
    assert_eq!(st.tools, 1, "{st:?}");
    let pid = st.pid.unwrap();

    // Removed: the process exits, the tools are gone, the next call is not offered.
    g.remove("clock", &admin).await.unwrap();
    assert!(g.status().iter().all(|s| s.name != "clock"));
    assert!(
        e.tools()
            .current()
            .all()
            .iter()
            .all(|t| !t.id.starts_with("tool:clock/")),
        "tools left behind"
    );
    let o = call(
        &e,
        "clock",
        "s1",
        "clock__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(matches!(o, CallOutcome::Refused { .. }), "{o:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z")
    {
        assert!(
            Instant::now() < deadline,
            "the removed server's process {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Events: who configured what, never a value.
    let kinds: Vec<String> = store
        .events(&skillbase_store::EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|ev| ev.data["server"] == "clock")
        .map(|ev| ev.kind.as_str().to_owned())
        .collect();
    assert_eq!(
        kinds,
        ["mcp_server_set", "mcp_server_set", "mcp_server_removed"]
    );
    e.close().await;
}
