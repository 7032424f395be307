//! `skillbase tools` end to end: every configured tool with its source, class, status and the
//! agents granted it, an upstream that cannot start reported with its reason (never an error),
//! `--agent` limiting the list, and an unknown agent refused.

use crate::common::{Run, s, skillbase};
use serde_json::Value;

const CONFIG: &str = r#"
[agents.ops]
skills = "none"
[agents.ops.grants]
tools = ["paging", "orders"]

[agents.desk]
skills = "none"
[agents.desk.grants]
tools = ["notes"]

[[tools]]
name = "page_oncall"
description = "Page the on-call engineer."
class = "paging"
runs = "harness"

[[tools]]
name = "get_order"
description = "Look an order up."
class = "orders"
parameters = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
[tools.http]
url = "https://api.example.com/orders/{id}"

[mcp_servers.ghost]
command = "/nonexistent/skillbase-test-no-such-server"
"#;

fn run(dir: &std::path::Path, args: &[&str]) -> Run {
    let config = dir.join("skillbase.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let out = skillbase(dir.join("skillbase.db"), dir)
        .args(["--config", s(&config), "tools"])
        .args(args)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[test]
fn tools_lists_sources_statuses_and_grants_and_reports_a_server_that_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), &["--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let tool = |name: &str| {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {v}"))
            .clone()
    };
    let page = tool("page_oncall");
    assert_eq!(page["status"], "harness");
    assert_eq!(page["agents"], serde_json::json!(["ops"]));
    let order = tool("get_order");
    assert_eq!(
        (order["http"].clone(), order["status"].clone()),
        (true.into(), "ready".into())
    );
    assert_eq!(tool("take_note")["agents"], serde_json::json!(["desk"]));
    let ghost = &v["servers"][0];
    assert_eq!(ghost["name"], "ghost");
    assert_eq!(ghost["state"], "down");
    assert!(
        ghost["reason"]
            .as_str()
            .unwrap()
            .contains("could not start"),
        "{ghost}"
    );
    assert!(r.stderr.contains("'ghost' is not connected"), "{r:?}");

    // One agent: only what it is granted.
    let r = run(dir.path(), &["--agent", "desk"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("take_note"), "{r:?}");
    assert!(!r.stdout.contains("page_oncall"), "{r:?}");
    assert!(
        r.stdout
            .contains("mcp server 'ghost' (stdio, from skillbase.toml): Down"),
        "{r:?}"
    );

    let r = run(dir.path(), &["--agent", "nobody"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("no agent 'nobody'"), "{r:?}");
}
