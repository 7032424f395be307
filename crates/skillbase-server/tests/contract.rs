//! The authoring tools and their REST routes do the same thing.
//!
//! Each test starts two fresh servers over the same fixture. On the first, the agent calls the
//! tool through the dispatcher (as a model would); on the second, the agent's token calls the
//! REST route. The resulting records must match: revisions (number, author, message, state,
//! digest, which is active), status, files and SKILL.md; reads must return the same skills.

use crate::common::TestServer;
use serde_json::{Value, json};
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_store::{AgentName, Scope};

fn alpha() -> AgentName {
    AgentName::parse("alpha").unwrap()
}

/// Call an authoring tool as agent `agent` and return its outcome.
async fn tool(s: &TestServer, agent: &str, name: &str, args: Value) -> CallOutcome {
    s.state
        .engine
        .call(
            &AgentName::parse(agent).unwrap(),
            &format!("contract-{agent}"),
            name,
            args,
            CallMode::Wait,
        )
        .await
        .unwrap()
}

/// The tool's result, which must be a success.
async fn tool_ok(s: &TestServer, name: &str, args: Value) -> Value {
    match tool(s, "alpha", name, args).await {
        CallOutcome::Done { result, .. } => result,
        other => panic!("{name}: {other:?}"),
    }
}

/// A REST call with alpha's token; returns the status and the JSON body.
async fn rest(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> (u16, Value) {
    let mut rb = s
        .http
        .request(method, s.url(path))
        .bearer_auth(token.to_owned());
    for (k, v) in headers {
        rb = rb.header(*k, *v);
    }
    if let Some((ct, b)) = body {
        rb = rb.header("content-type", ct).body(b);
    }
    let r = rb.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn put_md(s: &TestServer, name: &str, md: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    rest(
        s,
        reqwest::Method::PUT,
        &format!("/v1/skills/{name}"),
        &s.alpha,
        extra,
        Some(("text/markdown", md.to_owned())),
    )
    .await
}

/// Everything a write leaves behind for a record, without timestamps.
async fn record(s: &TestServer, scope: &Scope, name: &str) -> Value {
    let e = s
        .store
        .index()
        .get(scope, name)
        .cloned()
        .unwrap_or_else(|| panic!("no record {scope}/{name}"));
    let history: Vec<Value> = s
        .store
        .history(scope, name)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            json!({"rev": r.rev, "author": r.author, "message": r.message, "state": r.state,
                   "digest": r.digest, "active": r.active})
        })
        .collect();
    let (_, bundle) = s.store.bundle(scope, name, None).await.unwrap();
    let files: Vec<Value> = bundle
        .files()
        .iter()
        .map(|f| json!({"path": f.path, "digest": f.digest, "executable": f.executable}))
        .collect();
    json!({
        "scope": e.scope,
        "status": e.status,
        "active_rev": e.active_rev,
        "head_rev": e.head_rev,
        "author": e.author,
        "history": history,
        "files": files,
        "skill_md": String::from_utf8_lossy(&bundle.skill_md().bytes),
    })
}

const MADE_MD: &str = "---
name: made
description: Made by the agent
triggers:
  - do the thing
inputs:
  type: object
  properties:
    n:
      type: integer
cost: seconds
---
Do the thing.

Carefully.
";

fn made_args() -> Value {
    json!({
        "name": "made",
        "description": "Made by the agent",
        "body": "Do the thing.\n\nCarefully.",
        "triggers": ["do the thing"],
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "cost": "seconds",
        "message": "first",
    })
}

/// Create `made` on both servers: by the tool on `a`, by REST on `b`.
async fn create_both(a: &TestServer, b: &TestServer) {
    tool_ok(a, "skill_create", made_args()).await;
    let (st, v) = put_md(b, "made?message=first", MADE_MD, &[]).await;
    assert_eq!(st, 201, "{v}");
}

#[tokio::test]
async fn skill_create_and_put_of_a_new_name_agree() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    create_both(&a, &b).await;
    let own = Scope::Agent(alpha());
    let ra = record(&a, &own, "made").await;
    assert_eq!(ra, record(&b, &own, "made").await);
    assert_eq!(ra["history"][0]["author"], "agent:alpha/inline");
    assert_eq!(ra["history"][0]["message"], "first");
    assert_eq!(ra["history"].as_array().unwrap().len(), 1);
    assert!(ra["skill_md"].as_str().unwrap().contains("cost: seconds"));
    assert!(ra["skill_md"].as_str().unwrap().contains("do the thing"));
    assert!(a.store.index().get(&Scope::Shared, "made").is_none());
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn skill_modify_and_put_of_an_existing_name_agree() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    create_both(&a, &b).await;
    // Fields not given keep their values (triggers, inputs, cost) on both sides.
    tool_ok(
        &a,
        "skill_modify",
        json!({"name": "made", "description": "Made better", "body": "Do it well.", "expect_rev": 1}),
    )
    .await;
    let md = "---\nname: made\ndescription: Made better\n---\nDo it well.\n";
    let (st, v) = put_md(&b, "made", md, &[("if-match", "\"1\"")]).await;
    assert_eq!(st, 200, "{v}");
    let own = Scope::Agent(alpha());
    let ra = record(&a, &own, "made").await;
    assert_eq!(ra, record(&b, &own, "made").await);
    assert_eq!(ra["head_rev"], 2);
    assert_eq!(ra["history"][1]["message"], "written by the agent");
    assert!(ra["skill_md"].as_str().unwrap().contains("do the thing"));
    assert!(ra["skill_md"].as_str().unwrap().contains("Do it well."));

    // A stale revision is refused by both, and nothing is written.
    let out = tool(
        &a,
        "alpha",
        "skill_modify",
        json!({"name": "made", "body": "Late.", "expect_rev": 1}),
    )
    .await;
    assert!(matches!(out, CallOutcome::Failed { .. }), "{out:?}");
    let (st, _) = put_md(
        &b,
        "made",
        md.replace("well", "late").as_str(),
        &[("if-match", "\"1\"")],
    )
    .await;
    assert_eq!(st, 412);
    assert_eq!(
        record(&a, &own, "made").await,
        record(&b, &own, "made").await
    );

    // Modifying a shared skill writes the agent's own record, on both.
    tool_ok(
        &a,
        "skill_modify",
        json!({"name": "shared-two", "body": "Alpha's version."}),
    )
    .await;
    let md = "---\nname: shared-two\ndescription: The shared-two skill, for tests\n---\nAlpha's version.\n";
    let (st, v) = put_md(&b, "shared-two", md, &[]).await;
    assert_eq!(st, 201, "{v}");
    let ra = record(&a, &own, "shared-two").await;
    assert_eq!(ra, record(&b, &own, "shared-two").await);
    assert_eq!(
        record(&a, &Scope::Shared, "shared-two").await["head_rev"],
        1,
        "the shared record is untouched"
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn skill_revert_and_the_revert_route_agree() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    create_both(&a, &b).await;
    tool_ok(
        &a,
        "skill_modify",
        json!({"name": "made", "body": "Second."}),
    )
    .await;
    let (st, _) = put_md(
        &b,
        "made",
        "---\nname: made\ndescription: Made by the agent\n---\nSecond.\n",
        &[],
    )
    .await;
    assert_eq!(st, 200);
    tool_ok(&a, "skill_revert", json!({"name": "made", "rev": 1})).await;
    let (st, v) = rest(
        &b,
        reqwest::Method::POST,
        "/v1/skills/made/revert",
        &b.alpha,
        &[],
        Some(("application/json", json!({"rev": 1}).to_string())),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let own = Scope::Agent(alpha());
    let ra = record(&a, &own, "made").await;
    assert_eq!(ra, record(&b, &own, "made").await);
    assert_eq!(
        (ra["active_rev"].as_i64(), ra["head_rev"].as_i64()),
        (Some(1), Some(2))
    );
    // Both record the revert as an event by the agent.
    for s in [&a, &b] {
        let evs = s
            .store
            .events(&skillbase_store::EventFilter {
                kind: Some("reverted".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].actor.as_deref(), Some("agent:alpha/inline"));
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn skill_remove_and_the_retire_route_agree() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    create_both(&a, &b).await;
    tool_ok(&a, "skill_remove", json!({"name": "made"})).await;
    let (st, v) = rest(
        &b,
        reqwest::Method::POST,
        "/v1/skills/made/retire",
        &b.alpha,
        &[],
        None,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let own = Scope::Agent(alpha());
    let ra = record(&a, &own, "made").await;
    assert_eq!(ra, record(&b, &own, "made").await);
    assert_eq!(ra["status"], "retired");
    // Neither removes a shared skill.
    let out = tool(&a, "alpha", "skill_remove", json!({"name": "shared-one"})).await;
    assert!(matches!(out, CallOutcome::Failed { .. }), "{out:?}");
    let (st, _) = rest(
        &b,
        reqwest::Method::POST,
        "/v1/skills/shared-one/retire",
        &b.alpha,
        &[],
        None,
    )
    .await;
    assert_eq!(st, 404);
    for s in [&a, &b] {
        assert_eq!(
            record(s, &Scope::Shared, "shared-one").await["status"],
            "active"
        );
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn skill_list_and_the_list_route_return_the_same_skills() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    let listed = tool_ok(&a, "skill_list", json!({})).await;
    let from_tool: Vec<Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["name"], s["scope"], s["rev"], s["description"]]))
        .collect();
    let (st, page) = rest(&b, reqwest::Method::GET, "/v1/skills", &b.alpha, &[], None).await;
    assert_eq!(st, 200);
    let from_rest: Vec<Value> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["name"], s["scope"], s["rev"], s["description"]]))
        .collect();
    assert_eq!(from_tool, from_rest);
    let names: Vec<&str> = from_tool.iter().map(|v| v[0].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha-secret", "shared-one", "shared-two"]);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn skill_show_and_the_show_route_return_the_same_skill() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    for (name, rev) in [("alpha-secret", None), ("shared-one", Some(1))] {
        let args = match rev {
            Some(r) => json!({"name": name, "rev": r}),
            None => json!({"name": name}),
        };
        let shown = tool_ok(&a, "skill_show", args).await;
        let path = match rev {
            Some(r) => format!("/v1/skills/{name}?rev={r}"),
            None => format!("/v1/skills/{name}"),
        };
        let (st, d) = rest(&b, reqwest::Method::GET, &path, &b.alpha, &[], None).await;
        assert_eq!(st, 200);
        assert_eq!(shown["scope"], d["scope"]);
        assert_eq!(shown["skill_md"], d["skill_md"]);
        let files: Vec<&Value> = d["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| &f["path"])
            .collect();
        let tool_files: Vec<&Value> = shown["files"].as_array().unwrap().iter().collect();
        assert_eq!(tool_files, files);
        for k in ["rev", "author", "message", "state", "digest", "active"] {
            assert_eq!(shown["revision"][k], d["revision"][k], "{name}: {k}");
        }
        let (_, h) = rest(
            &b,
            reqwest::Method::GET,
            &format!("/v1/skills/{name}/history"),
            &b.alpha,
            &[],
            None,
        )
        .await;
        let revs: Vec<Value> = h
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!([r["rev"], r["author"], r["message"], r["active"]]))
            .collect();
        let tool_revs: Vec<Value> = shown["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!([r["rev"], r["author"], r["message"], r["active"]]))
            .collect();
        assert_eq!(tool_revs, revs);
    }
    // Neither shows another agent's private skill.
    let out = tool(&a, "alpha", "skill_show", json!({"name": "beta-secret"})).await;
    assert!(matches!(out, CallOutcome::Failed { .. }), "{out:?}");
    let (st, _) = rest(
        &b,
        reqwest::Method::GET,
        "/v1/skills/beta-secret",
        &b.alpha,
        &[],
        None,
    )
    .await;
    assert_eq!(st, 404);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn what_the_tools_refuse_the_routes_refuse() {
    let (a, b) = (TestServer::start().await, TestServer::start().await);
    // Beta is not granted the `skills` class.
    let out = tool(&a, "beta", "skill_create", made_args()).await;
    assert!(matches!(out, CallOutcome::Refused { .. }), "{out:?}");
    let (st, _) = rest(
        &b,
        reqwest::Method::PUT,
        "/v1/skills/made",
        &b.beta,
        &[],
        Some(("text/markdown", MADE_MD.to_owned())),
    )
    .await;
    assert_eq!(st, 403);
    // Capabilities beyond alpha's grants.
    let out = tool(
        &a,
        "alpha",
        "skill_create",
        json!({"name": "fetcher", "description": "Fetches", "body": "Fetch.", "capabilities": {"tools": ["web_fetch"]}}),
    )
    .await;
    assert!(
        matches!(
            out,
            CallOutcome::Refused {
                rule: skillbase_runtime::Rule::CapabilitiesNotGranted,
                ..
            }
        ),
        "{out:?}"
    );
    let md = "---\nname: fetcher\ndescription: Fetches\ncapabilities:\n  tools:\n    - web_fetch\n---\nFetch.\n";
    let (st, _) = put_md(&b, "fetcher", md, &[]).await;
    assert_eq!(st, 403);
    // A name that exists cannot be created again (REST modifies instead; with If-None-Match it
    // refuses, as skill_create does).
    let out = tool(
        &a,
        "alpha",
        "skill_create",
        json!({"name": "shared-one", "description": "D", "body": "B"}),
    )
    .await;
    assert!(matches!(out, CallOutcome::Failed { .. }), "{out:?}");
    let md = "---\nname: shared-one\ndescription: D\n---\nB\n";
    let (st, _) = put_md(&b, "shared-one", md, &[("if-none-match", "*")]).await;
    assert_eq!(st, 412);
    for s in [&a, &b] {
        let own = Scope::Agent(alpha());
        let idx = s.store.index();
        assert!(idx.get(&own, "made").is_none() && idx.get(&own, "fetcher").is_none());
        assert!(idx.get(&own, "shared-one").is_none());
    }
    a.stop().await;
    b.stop().await;
}
