//! `skillbase serve`, `skillbase token` end to end: the real binary, a real port, real signals.

use crate::common::skillbase;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn cmd(home: &Path) -> Command {
    skillbase(home.join("skillbase.db"), home)
}

fn run(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = cmd(home).args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Served {
    child: Child,
    addr: String,
    stdout_lines: mpsc::Receiver<String>,
    stderr_lines: mpsc::Receiver<String>,
}

fn lines(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

fn serve(home: &Path, args: &[&str]) -> Served {
    let mut child = cmd(home)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout_lines = lines(child.stdout.take().unwrap());
    let stderr_lines = lines(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = String::new();
    let addr = loop {
        let l = stderr_lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no 'serving on' line; stderr so far:\n{seen}"));
        if let Some(rest) = l.strip_prefix("Skillbase is serving on http://") {
            break rest.trim().to_owned();
        }
        seen.push_str(&l);
        seen.push('\n');
    };
    Served {
        child,
        addr,
        stdout_lines,
        stderr_lines,
    }
}

fn http_get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    request(addr, "GET", path, token, "")
}

/// One HTTP/1.1 request over a plain socket: (status, body).
fn request(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1).to_owned();
    (status, body)
}

fn terminate(mut s: Served) -> (i32, String) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let rest: Vec<String> = s.stderr_lines.try_iter().collect();
    (status.code().unwrap_or(-1), rest.join("\n"))
}

#[test]
fn serve_demo_prints_a_working_token_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--demo"]);
    let token = s
        .stdout_lines
        .recv_timeout(Duration::from_secs(10))
        .expect("the demo token on stdout");
    assert!(token.starts_with("sbt_"), "{token}");
    assert_eq!(http_get(&s.addr, "/healthz", None), (200, "ok\n".into()));
    assert_eq!(http_get(&s.addr, "/readyz", None).0, 200);
    // The token is bound to the demo agent: not an admin.
    assert_eq!(http_get(&s.addr, "/metrics", Some(&token)).0, 403);
    assert_eq!(http_get(&s.addr, "/metrics", Some("sbt_wrong")).0, 401);
    assert_eq!(http_get(&s.addr, "/metrics", None).0, 401);
    let (code, log) = terminate(s);
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("shutting down"), "{log}");
    // The demo token was stored as a hash only.
    let db = std::fs::read(dir.path().join("skillbase.db")).unwrap();
    assert!(
        !db.windows(token.len()).any(|w| w == token.as_bytes()),
        "the token secret is in the database file"
    );
    // The demo agent exists, with the examples seeded.
    let (code, out, err) = run(dir.path(), &["list", "--agent", "demo"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("refund-procedure"), "{out}");
}

/// A reader that goes away is the end of what it read, never of the server: SIGPIPE stays
/// ignored (no command restores the default; a printing command ends on the write's error). Sockets never raise it
/// (Rust sends with MSG_NOSIGNAL), but the log does: here the process reading the server's
/// stderr closes its end, then every request writes a log line into the broken pipe (debug
/// level logs each request) and the shutdown writes one more. With the default disposition the
/// first of those writes would kill the server (signal 13); with SIGPIPE ignored each is an
/// EPIPE the logger drops, and the server answers and exits 0.
#[test]
fn serve_survives_the_reader_of_its_log_going_away() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = cmd(dir.path())
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--log-format", "json", "--demo"])
        .env("SKILLBASE_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "serve exited before serving"
        );
        if let Some(rest) = line.strip_prefix("Skillbase is serving on http://") {
            break rest.trim().to_owned();
        }
    };
    drop(stderr);
    for _ in 0..20 {
        assert_eq!(http_get(&addr, "/readyz", None).0, 200);
        assert_eq!(http_get(&addr, "/v1/skills", Some("sbt_wrong")).0, 401);
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the server died once the reader of its log went away"
    );
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "serve must shut down cleanly, not die of SIGPIPE"
    );
}

#[test]
fn serve_dev_refuses_a_public_address() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run(dir.path(), &["serve", "--dev", "--listen", "0.0.0.0:0"]);
    assert_ne!(code, 0);
    assert!(err.contains("only binds loopback"), "{err}");
}

#[test]
fn serve_refuses_a_bad_log_format_and_a_busy_port() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run(dir.path(), &["serve", "--log-format", "xml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--log-format"), "{err}");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let (code, _, err) = run(dir.path(), &["serve", "--listen", &addr]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot listen on"), "{err}");
}

#[test]
fn token_create_list_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path();
    let (code, _, err) = run(h, &["token", "create", "--agent", "ghost"]);
    assert_ne!(code, 0);
    assert!(err.contains("no agent 'ghost'"), "{err}");
    let (code, _, err) = run(h, &["token", "create"]);
    assert_eq!(code, 2, "either --agent or --admin: {err}");

    assert_eq!(run(h, &["agent", "create", "ops"]).0, 0);
    let (code, secret, err) = run(h, &["token", "create", "--agent", "ops", "--label", "ci"]);
    assert_eq!(code, 0, "{err}");
    let secret = secret.trim().to_owned();
    assert!(secret.starts_with("sbt_"));
    assert!(err.contains("bound to agent ops"), "{err}");
    let (code, admin, _) = run(h, &["token", "create", "--admin"]);
    assert_eq!(code, 0);
    assert_ne!(admin.trim(), secret);

    let (code, list, _) = run(h, &["token", "list"]);
    assert_eq!(code, 0);
    assert!(
        list.contains("agent:ops") && list.contains("ci") && list.contains("admin"),
        "{list}"
    );
    assert!(
        !list.contains(&secret) && !list.contains(admin.trim()),
        "{list}"
    );

    let id = list.split_whitespace().next().unwrap().to_owned();
    assert_eq!(run(h, &["token", "revoke", &id]).0, 0);
    let (code, _, err) = run(h, &["token", "revoke", &id]);
    assert_eq!(code, 1, "{err}");
    let (_, list, _) = run(h, &["token", "list"]);
    assert!(list.lines().next().unwrap().contains("revoked"), "{list}");
}

#[test]
fn mcp_over_stdio_speaks_only_json_rpc_on_stdout() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path();
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skills");
    let (code, _, err) = run(
        h,
        &[
            "--seed", examples, "agent", "create", "ops", "--skills", "all",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(h, &["mcp", "--agent", "ghost"]);
    assert_ne!(code, 0);
    assert!(err.contains("no agent 'ghost'"), "{err}");

    let mut child = cmd(h)
        .args(["mcp", "--agent", "ops"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let send = |stdin: &mut std::process::ChildStdin, v: serde_json::Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let recv = |id: i64| -> serde_json::Value {
        loop {
            let l = out
                .recv_timeout(Duration::from_secs(30))
                .expect("an answer on stdout");
            let v: serde_json::Value = serde_json::from_str(&l)
                .unwrap_or_else(|e| panic!("not JSON-RPC on stdout: {l}: {e}"));
            assert_eq!(v["jsonrpc"], "2.0", "{l}");
            if v["id"] == id {
                return v;
            }
        }
    };
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
    );
    let init = recv(1);
    assert_eq!(
        init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"]["directoryRead"],
        true,
        "{init}"
    );
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "skills/list", "params": {}}),
    );
    let list = recv(2);
    let names: Vec<&str> = list["result"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["frontmatter"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"refund-procedure"), "{list}");
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "load_skill", "arguments": {"name": "commit-message-writer"}}}),
    );
    let call = recv(3);
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("commit-message-writer"), "{call}");

    // Another process writes a skill to the same database: the session hears list_changed and
    // can load it (the stdio server applies other processes' writes as `serve` does).
    let new = h.join("fresh-skill");
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(
        new.join("SKILL.md"),
        "---\nname: fresh-skill\ndescription: Written by another process while the session runs.\n---\nFresh body.\n",
    )
    .unwrap();
    let (code, _, err) = run(h, &["put", new.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let l = out
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a list_changed notification after another process's write");
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        if v["method"]
            .as_str()
            .is_some_and(|m| m.ends_with("list_changed"))
        {
            break;
        }
    }
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "load_skill", "arguments": {"name": "fresh-skill"}}}),
    );
    let call = recv(4);
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Fresh body"), "{call}");
    drop(stdin); // EOF ends the session
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "mcp did not exit at EOF");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
}

fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    request(addr, method, path, None, body)
}

/// The CLI and REST agree on every admin status change from every status: the same changes
/// succeed, the same are refused, and the skill ends in the same status (one transition table).
/// Each case starts from a fresh skill of its own.
#[test]
fn status_changes_agree_between_the_cli_and_rest() {
    let cli = tempfile::tempdir().unwrap();
    let rest = tempfile::tempdir().unwrap();
    let changes = ["retire", "restore", "disable", "enable"];
    let starts: [(&str, &[&str]); 3] = [
        ("active", &[]),
        ("disabled", &["disable"]),
        ("retired", &["retire"]),
    ];
    let skill = |dir: &Path, name: &str| {
        let d = dir.join("src").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: A skill for the contract test\n---\n\nBody.\n"
            ),
        )
        .unwrap();
        d
    };
    // Every case's skill, written before the server starts.
    for home in [cli.path(), rest.path()] {
        for (start, _) in &starts {
            for change in &changes {
                let name = format!("{start}-{change}");
                let d = skill(home, &name);
                let (code, _, err) = run(home, &["put", d.to_str().unwrap()]);
                assert_eq!(code, 0, "{err}");
            }
        }
    }
    let server = serve(rest.path(), &["--dev"]);
    for (start, prep) in &starts {
        for change in &changes {
            let name = format!("{start}-{change}");
            // CLI.
            for p in *prep {
                assert_eq!(run(cli.path(), &[p, &name]).0, 0);
            }
            let (code, _, err) = run(cli.path(), &[change, &name]);
            let (_, shown, _) = run(cli.path(), &["show", &name, "--json"]);
            let cli_status = serde_json::from_str::<serde_json::Value>(&shown).unwrap()["status"]
                .as_str()
                .unwrap()
                .to_owned();
            // REST.
            for p in *prep {
                let (st, body) = http(&server.addr, "POST", &format!("/v1/skills/{name}/{p}"), "");
                assert_eq!(st, 200, "{body}");
            }
            let (st, body) = http(
                &server.addr,
                "POST",
                &format!("/v1/skills/{name}/{change}"),
                "",
            );
            let (_, shown) = http_get(&server.addr, &format!("/v1/skills/{name}"), None);
            let rest_status = serde_json::from_str::<serde_json::Value>(&shown).unwrap()["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert_eq!(
                (code == 0, cli_status.as_str()),
                (st == 200, rest_status.as_str()),
                "{change} from {start}: CLI said {err:?}, REST {st} {body}"
            );
            if code != 0 {
                assert_eq!(st, 409, "a refused change is a conflict on REST: {body}");
            }
        }
    }
    terminate(server);
}

/// A mistyped agent on a fresh machine fails and leaves no new store behind (no `skillbase.db`,
/// `-wal`, `-shm` or `vault.key`, no folder); on an existing store, the store is kept.
#[test]
fn an_unknown_agent_leaves_no_new_store_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fresh");
    let db = store.join("skillbase.db");
    let home = dir.path().join("home");
    let run = |args: &[&str]| {
        let out = skillbase(&db, dir.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [
        &["mcp", "--agent", "ghost"][..],
        &["turn", "--agent", "ghost", "-m", "hi"][..],
    ] {
        let (code, _, err) = run(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains("no agent 'ghost'"), "{args:?}: {err}");
        assert!(!store.exists(), "{args:?} left the store folder");
        assert!(!home.exists(), "{args:?} left the home folder");
    }
    let (code, _, err) = run(&["agent", "create", "ops", "--skills", "all"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, _) = run(&["mcp", "--agent", "ghost"]);
    assert_ne!(code, 0);
    assert!(db.is_file());
    let (code, out, err) = run(&["agent", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ops"), "{out}");
}
