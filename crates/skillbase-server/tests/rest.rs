//! The REST API under /v1, end to end over a real loopback server: every route's happy path,
//! authentication and isolation, bad input that must change nothing, preconditions under
//! concurrency, the event stream, and the OpenAPI document against the mounted routes.

mod attacks;
mod common;
use common::{TestServer, put_skill, skill_md};
use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use skillbase_server::{Limits, ServerOptions};
use skillbase_store::{AgentName, EventFilter, Scope};
use std::collections::BTreeSet;
use std::io::{Cursor, Write};
use std::time::Duration;

use common::problem;

/// A JSON answer with the expected status.
async fn ok_json(r: reqwest::Response, want: u16) -> Value {
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert_eq!(status, want, "{body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

impl TestServer {
    fn req(&self, m: Method, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.http.request(m, self.url(path)).bearer_auth(token)
    }
    fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.req(Method::GET, path, token)
    }
    fn post(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.req(Method::POST, path, token)
    }
    fn put(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.req(Method::PUT, path, token)
    }
    fn markdown(&self, path: &str, token: &str, text: String) -> reqwest::RequestBuilder {
        self.put(path, token)
            .header("content-type", "text/markdown")
            .body(text)
    }
    async fn event_count(&self) -> usize {
        self.state.dispatcher.flush().await;
        self.store
            .events(&EventFilter::default())
            .await
            .unwrap()
            .len()
    }
}

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

#[tokio::test]
async fn openapi_document_lists_exactly_the_mounted_routes() {
    let s = TestServer::start().await;
    let doc = ok_json(
        s.get("/v1/openapi.json", &s.admin).send().await.unwrap(),
        200,
    )
    .await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let mut documented = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                documented.insert((method.to_uppercase(), path.clone()));
                // What OpenAPI requires of an operation: a unique id, described responses.
                let id = op["operationId"].as_str().unwrap().to_owned();
                assert!(ids.insert(id.clone()), "operationId {id} repeats");
                let responses = op["responses"].as_object().unwrap();
                assert!(!responses.is_empty(), "{method} {path}");
                for (code, r) in responses {
                    let d = r["description"].as_str().unwrap_or("");
                    assert!(!d.is_empty(), "{method} {path} {code}: no description");
                }
            }
        }
    }
    let mounted: BTreeSet<(String, String)> = skillbase_server::rest::routes()
        .into_iter()
        .map(|(m, p)| (m.to_string(), p))
        .collect();
    assert_eq!(documented, mounted, "the document and the router disagree");
    assert!(mounted.len() >= 30, "{}", mounted.len());
    // Every listed route is really mounted: none answers the router's own 404 or 405. The path
    // parameters name nothing, so no request changes anything.
    for (method, path) in &mounted {
        let p = path
            .replace("{name}", "no-such-thing")
            .replace("{id}", "no-such-session")
            .replace("{call_id}", "no-such-call");
        let r = s
            .req(Method::from_bytes(method.as_bytes()).unwrap(), &p, &s.admin)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert_ne!(status, 405, "{method} {path}: {body}");
        assert!(!body.contains("no route for"), "{method} {path}: {body}");
    }
    // The agent configuration schema names exactly the fields the store reads.
    let schema = &doc["components"]["schemas"]["AgentConfig"]["properties"];
    let documented: BTreeSet<&str> = schema
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let real = serde_json::to_value(skillbase_store::AgentConfig::default()).unwrap();
    let real: BTreeSet<&str> = real
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(documented, real);
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    s.stop().await;
}

#[tokio::test]
async fn missing_wrong_and_revoked_tokens_get_401_problems() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/v1/skills")).send().await.unwrap();
    assert_eq!(problem(r).await.0, 401);
    let r = s
        .get("/v1/skills/shared-one", "sbt_wrong")
        .send()
        .await
        .unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(
        (status, p["detail"].as_str().unwrap()),
        (401, "unknown token")
    );

    let created = ok_json(
        s.post("/v1/tokens", &s.admin)
            .json(&json!({"label": "ci", "agent": "alpha"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("sbt_"));
    assert_eq!(created["agent"], "alpha");
    let r = s.get("/v1/skills", &secret).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let id = created["id"].as_i64().unwrap();
    let r = s
        .req(Method::DELETE, &format!("/v1/tokens/{id}"), &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = s.get("/v1/skills", &secret).send().await.unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(status, 401);
    assert!(p["detail"].as_str().unwrap().contains("revoked"), "{p}");
    // Revoking again: nothing to revoke.
    let r = s
        .req(Method::DELETE, &format!("/v1/tokens/{id}"), &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 404);
    s.stop().await;
}

#[tokio::test]
async fn agent_tokens_get_403_on_admin_routes() {
    let s = TestServer::start().await;
    let zip = zip_of(&[(
        "SKILL.md",
        skill_md("zipped", "Zipped skill", "Body.").as_bytes(),
    )]);
    let cases: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/v1/tokens", None),
        (Method::POST, "/v1/tokens", Some(json!({"label": "x"}))),
        (Method::DELETE, "/v1/tokens/1", None),
        (Method::GET, "/v1/vault", None),
        (
            Method::PUT,
            "/v1/vault/KEY",
            Some(json!({"value": "a-secret-value-1234"})),
        ),
        (Method::DELETE, "/v1/vault/KEY", None),
        (Method::POST, "/v1/agents", Some(json!({"name": "x"}))),
        (
            Method::PUT,
            "/v1/agents/alpha",
            Some(json!({"skills": "all"})),
        ),
        (Method::GET, "/v1/approvals", None),
        (Method::POST, "/v1/skills/alpha-secret/restore", None),
        (Method::POST, "/v1/skills/alpha-secret/disable", None),
        (Method::POST, "/v1/skills/alpha-secret/enable", None),
        (
            Method::POST,
            "/v1/skills/alpha-secret/approve",
            Some(json!({"rev": 1})),
        ),
    ];
    let before = s.event_count().await;
    for (m, path, body) in cases {
        let mut rb = s.req(m.clone(), path, &s.alpha);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let (status, p) = problem(rb.send().await.unwrap()).await;
        assert_eq!(status, 403, "{m} {path}: {p}");
        assert_eq!(p["type"], "urn:skillbase:problem:forbidden", "{m} {path}");
    }
    let r = s
        .post("/v1/imports", &s.alpha)
        .header("content-type", "application/zip")
        .body(zip)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 403);
    assert_eq!(
        s.event_count().await,
        before,
        "a refused request changed something"
    );
    s.stop().await;
}

#[tokio::test]
async fn another_agents_private_skill_is_indistinguishable_from_a_missing_one() {
    let s = TestServer::start().await;
    for suffix in ["", "/history", "/diff?from=1", "/export", "/runs"] {
        let a = s
            .get(&format!("/v1/skills/beta-secret{suffix}"), &s.alpha)
            .send()
            .await
            .unwrap();
        let (sa, pa) = problem(a).await;
        let b = s
            .get(&format!("/v1/skills/no-such-skill{suffix}"), &s.alpha)
            .send()
            .await
            .unwrap();
        let (sb, pb) = problem(b).await;
        assert_eq!((sa, sb), (404, 404), "{suffix}");
        assert_eq!(
            without(&pa["detail"], "beta-secret"),
            without(&pb["detail"], "no-such-skill"),
            "{suffix}"
        );
        assert_eq!(pa["type"], pb["type"]);
        // Naming the scope changes nothing.
        let sep = if suffix.contains('?') { "&" } else { "?" };
        let c = s
            .get(
                &format!("/v1/skills/beta-secret{suffix}{sep}scope=agent:beta"),
                &s.alpha,
            )
            .send()
            .await
            .unwrap();
        let (sc, pc) = problem(c).await;
        assert_eq!(sc, 404, "{suffix}");
        assert_eq!(pc["detail"], pa["detail"], "{suffix}");
    }
    for (m, suffix, body) in [
        (Method::POST, "/revert", json!({"rev": 1})),
        (Method::POST, "/retire", json!({})),
    ] {
        let a = s
            .req(
                m.clone(),
                &format!("/v1/skills/beta-secret{suffix}"),
                &s.alpha,
            )
            .json(&body)
            .send()
            .await
            .unwrap();
        let (sa, pa) = problem(a).await;
        let b = s
            .req(m, &format!("/v1/skills/no-such-skill{suffix}"), &s.alpha)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (sb, pb) = problem(b).await;
        assert_eq!((sa, sb), (404, 404), "{suffix}");
        assert_eq!(
            without(&pa["detail"], "beta-secret"),
            without(&pb["detail"], "no-such-skill")
        );
    }
    let e = s
        .store
        .index()
        .get(
            &Scope::Agent(AgentName::parse("beta").unwrap()),
            "beta-secret",
        )
        .cloned()
        .unwrap();
    assert_eq!(
        e.status.as_str(),
        "active",
        "alpha's retire reached beta's skill"
    );

    // By listing and search.
    for q in [
        "",
        "?q=beta",
        "?q=secret",
        "?status=all",
        "?scope=agent:beta",
    ] {
        let page = ok_json(
            s.get(&format!("/v1/skills{q}"), &s.alpha)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let text = page.to_string();
        assert!(!text.contains("beta-secret"), "{q}: {text}");
    }
    let page = ok_json(s.get("/v1/skills", &s.alpha).send().await.unwrap(), 200).await;
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha-secret", "shared-one", "shared-two"]);

    // Through a session: search, load and the event stream.
    let sess = ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let id = sess["id"].as_str().unwrap().to_owned();
    let out = ok_json(
        s.post(&format!("/v1/sessions/{id}/calls"), &s.alpha)
            .json(&json!({"name": "search_skills", "arguments": {"query": "beta secret skill tests"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(out["status"], "done", "{out}");
    assert!(!out.to_string().contains("beta-secret"), "{out}");
    let load = |name: &'static str| {
        s.post(&format!("/v1/sessions/{id}/calls"), &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": name}}))
            .send()
    };
    let a = ok_json(load("beta-secret").await.unwrap(), 200).await;
    let b = ok_json(load("no-such-skill").await.unwrap(), 200).await;
    assert_eq!(a["status"], "refused");
    assert_eq!(
        without(&a["message"], "beta-secret"),
        without(&b["message"], "no-such-skill")
    );
    s.state.dispatcher.flush().await;
    let evs = s
        .store
        .events(&EventFilter {
            session: Some(id.clone()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert!(!evs.is_empty());
    for e in &evs {
        assert_ne!(e.skill.as_deref(), Some("beta-secret"), "{e:?}");
        assert!(
            !e.data.to_string().contains("The beta-secret skill"),
            "{e:?}"
        );
    }
    // Beta's session, agent and events are as absent for alpha as ones that do not exist.
    let bs = ok_json(
        s.post("/v1/sessions", &s.beta)
            .json(&json!({"id": "beta-s1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(bs["agent"], "beta");
    for suffix in ["", "/events", "/pinned"] {
        let (sa, pa) = problem(
            s.get(&format!("/v1/sessions/beta-s1{suffix}"), &s.alpha)
                .send()
                .await
                .unwrap(),
        )
        .await;
        let (sb, pb) = problem(
            s.get(&format!("/v1/sessions/nobody-s1{suffix}"), &s.alpha)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!((sa, sb), (404, 404));
        assert_eq!(
            without(&pa["detail"], "beta-s1"),
            without(&pb["detail"], "nobody-s1")
        );
    }
    let (sa, pa) = problem(
        s.post("/v1/sessions/beta-s1/calls", &s.alpha)
            .json(&json!({"name": "take_note", "arguments": {"text": "x"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(sa, 404, "{pa}");
    let (sa, pa) = problem(s.get("/v1/agents/beta", &s.alpha).send().await.unwrap()).await;
    let (sb, pb) = problem(s.get("/v1/agents/nobody", &s.alpha).send().await.unwrap()).await;
    assert_eq!((sa, sb), (404, 404));
    assert_eq!(
        without(&pa["detail"], "beta"),
        without(&pb["detail"], "nobody")
    );
    let agents = ok_json(s.get("/v1/agents", &s.alpha).send().await.unwrap(), 200).await;
    assert_eq!(agents.as_array().unwrap().len(), 1);
    assert_eq!(agents[0]["name"], "alpha");
    // Alpha cannot open a session for beta, nor take beta's session id.
    let (st, _) = problem(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"agent": "beta"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let (st, _) = problem(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "beta-s1"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409);
    s.stop().await;
}

#[tokio::test]
async fn skills_happy_path_as_admin() {
    let s = TestServer::start().await;
    let body = json!({
        "files": {
            "SKILL.md": skill_md("refunds", "Refund procedure for orders", "Step one.\nStep two."),
            "scripts/check.sh": {"text": "#!/bin/sh\necho ok\n", "executable": true},
            "data.bin": {"base64": "AAEC/w=="},
        },
        "message": "first cut",
    });
    let r = s
        .put("/v1/skills/refunds", &s.admin)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["etag"], "\"1\"");
    assert_eq!(r.headers()["location"], "/v1/skills/refunds?scope=shared");
    let w = ok_json(r, 201).await;
    assert_eq!(
        (w["result"].as_str(), w["rev"].as_i64(), w["scope"].as_str()),
        (Some("created"), Some(1), Some("shared"))
    );

    let r = s.get("/v1/skills/refunds", &s.admin).send().await.unwrap();
    assert_eq!(r.headers()["etag"], "\"1\"");
    let d = ok_json(r, 200).await;
    assert_eq!(d["status"], "active");
    assert_eq!(d["revision"]["author"], format!("human:token-{}", 1));
    assert_eq!(d["revision"]["message"], "first cut");
    assert!(d["skill_md"].as_str().unwrap().contains("Step two."));
    assert_eq!(d["meta"]["description"], "Refund procedure for orders");
    let files = d["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["SKILL.md", "data.bin", "scripts/check.sh"]);
    assert_eq!(files[1]["size"], 4);
    assert_eq!(files[2]["executable"], true);
    assert!(files[1]["digest"].as_str().unwrap().starts_with("sha256:"));

    // Modify with a bare SKILL.md and If-Match.
    let r = s
        .markdown(
            "/v1/skills/refunds?message=clearer",
            &s.admin,
            skill_md(
                "refunds",
                "Refund procedure for orders",
                "Step one, carefully.",
            ),
        )
        .header("if-match", "\"1\"")
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 200).await;
    assert_eq!(
        (w["result"].as_str(), w["rev"].as_i64()),
        (Some("modified"), Some(2))
    );
    let h = ok_json(
        s.get("/v1/skills/refunds/history", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(h.as_array().unwrap().len(), 2);
    assert_eq!(h[1]["message"], "clearer");
    assert_eq!(h[1]["active"], true);
    let d = ok_json(
        s.get("/v1/skills/refunds/diff?from=1&to=2", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let diff = d["diff"].as_str().unwrap();
    assert!(
        diff.contains("-Step two.") && diff.contains("+Step one, carefully."),
        "{diff}"
    );
    assert!(
        diff.contains("data.bin"),
        "files dropped by a PUT show in the diff: {diff}"
    );
    let old = ok_json(
        s.get("/v1/skills/refunds?rev=1", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(old["revision"]["rev"], 1);
    assert_eq!(old["files"].as_array().unwrap().len(), 3);

    // Revert, disable, enable, retire, restore.
    let w = ok_json(
        s.post("/v1/skills/refunds/revert", &s.admin)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (
            w["rev"].as_i64(),
            w["latest_rev"].as_i64(),
            w["result"].as_str()
        ),
        (Some(1), Some(2), Some("reverted"))
    );
    let w = ok_json(
        s.post("/v1/skills/refunds/disable", &s.admin)
            .json(&json!({"reason": "checking"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "disabled");
    let w = ok_json(
        s.post("/v1/skills/refunds/enable", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "active");
    let w = ok_json(
        s.post("/v1/skills/refunds/retire", &s.admin)
            .header("if-match", "\"2\"")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "retired");
    let page = ok_json(s.get("/v1/skills", &s.admin).send().await.unwrap(), 200).await;
    assert!(
        !page.to_string().contains("refunds"),
        "retired skills are not listed by default"
    );
    let page = ok_json(
        s.get("/v1/skills?status=retired", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(page["items"][0]["name"], "refunds");
    let (st, _) = problem(
        s.post("/v1/skills/refunds/enable", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        st, 409,
        "enable does not bring a retired skill back; restore does"
    );
    let w = ok_json(
        s.post("/v1/skills/refunds/restore", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "active");
    let (st, _) = problem(
        s.post("/v1/skills/refunds/restore", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409);

    // Export as zip: the active revision (1) under a folder named after the skill.
    let r = s
        .get("/v1/skills/refunds/export", &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/zip");
    assert_eq!(r.headers()["skillbase-revision"], "1");
    let bytes = r.bytes().await.unwrap();
    let b = skillbase_format::Bundle::from_zip(&bytes, &Default::default()).unwrap();
    assert!(String::from_utf8_lossy(&b.get("SKILL.md").unwrap().bytes).contains("Step two."));
    assert_eq!(&b.get("data.bin").unwrap().bytes[..], &[0, 1, 2, 255]);
    assert!(b.get("scripts/check.sh").unwrap().executable);

    let runs = ok_json(
        s.get("/v1/skills/refunds/runs", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs, json!([]));
    // Another scope.
    let r = s
        .markdown(
            "/v1/skills/refunds?scope=agent:alpha",
            &s.admin,
            skill_md("refunds", "Alpha's own refunds", "Own."),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 201).await["scope"], "agent:alpha");
    let d = ok_json(
        s.get("/v1/skills/refunds?scope=agent:alpha", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(d["meta"]["description"], "Alpha's own refunds");
    s.stop().await;
}

#[tokio::test]
async fn listing_pages_with_a_cursor_and_filters() {
    let s = TestServer::start().await;
    for i in 0..7 {
        put_skill(&s.store, Scope::Shared, &format!("page-{i}"), &[]).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(c) => format!("/v1/skills?limit=3&cursor={c}"),
            None => "/v1/skills?limit=3".into(),
        };
        let page = ok_json(s.get(&q, &s.admin).send().await.unwrap(), 200).await;
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 3);
        for i in items {
            seen.push(format!(
                "{}@{}",
                i["name"].as_str().unwrap(),
                i["scope"].as_str().unwrap()
            ));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen.len(), 11, "{seen:?}");
    assert_eq!(sorted.len(), 11, "a page repeated an item: {seen:?}");
    let page = ok_json(
        s.get("/v1/skills?q=PAGE-3", &s.admin).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let page = ok_json(
        s.get("/v1/skills?scope=agent:beta", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(page["items"][0]["name"], "beta-secret");
    for bad in [
        "/v1/skills?cursor=%%%",
        "/v1/skills?status=sleepy",
        "/v1/skills?scope=global",
        "/v1/skills?limit=x",
    ] {
        let (st, _) = problem(s.get(bad, &s.admin).send().await.unwrap()).await;
        assert_eq!(st, 400, "{bad}");
    }
    s.stop().await;
}

#[tokio::test]
async fn bad_skill_writes_answer_problems_and_change_nothing() {
    let s = TestServer::start().await;
    let before = s.event_count().await;
    let n = s.store.index().len();
    // Malformed JSON, wrong media type, unknown fields.
    let r = s
        .put("/v1/skills/x", &s.admin)
        .header("content-type", "application/json")
        .body("{\"files\": ")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 400);
    assert!(
        p["detail"].as_str().unwrap().contains("malformed JSON"),
        "{p}"
    );
    let r = s
        .put("/v1/skills/x", &s.admin)
        .header("content-type", "image/png")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 415);
    let r = s
        .put("/v1/skills/x", &s.admin)
        .json(&json!({"files": {}, "mode": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 400);
    // Invalid skills, unsafe paths, name mismatch.
    let cases = [
        json!({"files": {"SKILL.md": "no frontmatter"}}),
        json!({"files": {"SKILL.md": skill_md("x", "X", "b"), "../escape.md": "x"}}),
        json!({"files": {"SKILL.md": skill_md("x", "X", "b"), "/abs.md": "x"}}),
        json!({"files": {"notes.md": "no SKILL.md"}}),
        json!({"files": {"SKILL.md": skill_md("y", "Y", "b")}}),
        json!({"files": {"SKILL.md": {"text": "a", "base64": "YQ=="}}}),
    ];
    for c in cases {
        let r = s
            .put("/v1/skills/x", &s.admin)
            .json(&c)
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert!(st == 422 || st == 400, "{c}: {st} {p}");
    }
    // Agent-scoped malformed JSON on the other write routes.
    for path in [
        "/v1/skills/shared-one/revert",
        "/v1/sessions",
        "/v1/agents",
        "/v1/tokens",
    ] {
        let r = s
            .post(path, &s.admin)
            .header("content-type", "application/json")
            .body("[1,")
            .send()
            .await
            .unwrap();
        assert_eq!(problem(r).await.0, 400, "{path}");
    }
    assert_eq!(s.store.index().len(), n);
    assert_eq!(s.event_count().await, before, "bad input changed something");

    // Preconditions.
    let r = s
        .markdown(
            "/v1/skills/shared-one",
            &s.admin,
            skill_md("shared-one", "Changed", "b"),
        )
        .header("if-match", "\"7\"")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 412);
    assert_eq!(p["extra"]["current_rev"], 1);
    let r = s
        .markdown(
            "/v1/skills/shared-one",
            &s.admin,
            skill_md("shared-one", "Changed", "b"),
        )
        .header("if-none-match", "*")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 412);
    let r = s
        .markdown(
            "/v1/skills/brand-new",
            &s.admin,
            skill_md("brand-new", "New", "b"),
        )
        .header("if-match", "\"1\"")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!((st, p["extra"]["current_rev"].as_i64()), (412, Some(0)));
    let r = s
        .post("/v1/skills/shared-one/disable", &s.admin)
        .header("if-match", "\"3\"")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 412);
    let r = s
        .markdown(
            "/v1/skills/shared-one",
            &s.admin,
            skill_md("shared-one", "Changed", "b"),
        )
        .header("if-match", "banana")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 400);
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .head_rev,
        1
    );
    assert!(s.store.index().get(&Scope::Shared, "brand-new").is_none());
    s.stop().await;
}

fn small_limits() -> ServerOptions {
    ServerOptions {
        limits: Limits {
            body_bytes: 32 * 1024,
            upload_bytes: 256 * 1024,
            ..Limits::default()
        },
        ..ServerOptions::default()
    }
}

#[tokio::test]
async fn oversized_bodies_and_uploads_get_413() {
    let s = TestServer::start_with(small_limits()).await;
    // JSON bodies: the body limit (32 KiB here).
    let big = "x".repeat(40 * 1024);
    for path in ["/v1/sessions", "/v1/agents", "/v1/tokens"] {
        let r = s
            .post(path, &s.admin)
            .json(&json!({"agent": "alpha", "id": big}))
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 413, "{path}: {p}");
    }
    // A skill's files are an upload: over the body limit is fine, over the upload limit is not.
    let r = s
        .markdown("/v1/skills/big", &s.admin, skill_md("big", "Big", &big))
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 201).await["rev"], 1);
    let huge = "y".repeat(300 * 1024);
    let r = s
        .put("/v1/skills/big", &s.admin)
        .json(&json!({"files": {"SKILL.md": skill_md("big", "Big", &huge)}}))
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 413, "{p}");
    let r = s
        .markdown("/v1/skills/big", &s.alpha, skill_md("big", "Big", &huge))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 413);
    assert_eq!(
        s.store.index().get(&Scope::Shared, "big").unwrap().head_rev,
        1
    );
    // An upload may be larger than a JSON body, up to its own limit. Stored (not deflated)
    // random-looking bytes keep the archive as large as its content.
    let mut noise = Vec::with_capacity(100 * 1024);
    let mut x: u32 = 12345;
    for _ in 0..100 * 1024 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        noise.push((x >> 16) as u8);
    }
    let pack = zip_of(&[
        (
            "SKILL.md",
            skill_md("uploaded", "Uploaded skill", "Body.").as_bytes(),
        ),
        ("blob.bin", &noise),
    ]);
    assert!(pack.len() > 64 * 1024);
    let r = s
        .post("/v1/imports", &s.admin)
        .header("content-type", "application/zip")
        .body(pack)
        .send()
        .await
        .unwrap();
    let rep = ok_json(r, 200).await;
    assert_eq!(rep["created"], json!(["uploaded"]));
    let mut huge = noise.clone();
    huge.extend_from_slice(&noise);
    huge.extend_from_slice(&noise);
    let pack = zip_of(&[
        (
            "SKILL.md",
            skill_md("too-big", "Too big", "Body.").as_bytes(),
        ),
        ("blob.bin", &huge),
    ]);
    let n = s.store.index().len();
    let r = s
        .post("/v1/imports", &s.admin)
        .header("content-type", "application/zip")
        .body(pack)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 413);
    assert_eq!(s.store.index().len(), n);
    s.stop().await;
}

#[tokio::test]
async fn zip_bombs_traversal_and_partly_bad_packs_land_nothing() {
    let s = TestServer::start().await;
    let before = s.event_count().await;
    let n = s.store.index().len();
    let zeros = vec![0u8; 20 * 1024 * 1024];
    let bomb = zip_of(&[
        ("bomb/SKILL.md", skill_md("bomb", "Bomb", "b").as_bytes()),
        ("bomb/zeros.bin", &zeros),
    ]);
    assert!(bomb.len() < 100 * 1024, "{}", bomb.len());
    let evil = zip_of(&[
        ("SKILL.md", skill_md("evil", "Evil", "b").as_bytes()),
        ("../evil/SKILL.md", skill_md("evil", "Evil", "b").as_bytes()),
    ]);
    let half = zip_of(&[
        ("good/SKILL.md", skill_md("good", "Good", "b").as_bytes()),
        ("bad/SKILL.md", b"---\nname: bad\n---\nno description\n"),
    ]);
    let mismatch = zip_of(&[
        (
            "folder/SKILL.md",
            skill_md("other", "Other", "b").as_bytes(),
        ),
        ("x/SKILL.md", skill_md("x", "X", "b").as_bytes()),
    ]);
    for (what, z) in [
        ("bomb", bomb),
        ("traversal", evil),
        ("half bad", half),
        ("mismatch", mismatch),
        ("not a zip", b"PK\x03\x04junk".to_vec()),
    ] {
        let r = s
            .post("/v1/imports", &s.admin)
            .header("content-type", "application/zip")
            .body(z)
            .send()
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 422, "{what}: {p}");
    }
    let r = s
        .post("/v1/imports", &s.admin)
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 415);
    assert_eq!(s.store.index().len(), n);
    assert!(s.store.index().get(&Scope::Shared, "good").is_none());
    assert_eq!(
        s.event_count().await,
        before,
        "a refused import wrote something"
    );

    // A good pack lands whole, into an agent scope too.
    let good = zip_of(&[
        ("pack/one/SKILL.md", skill_md("one", "One", "b").as_bytes()),
        ("pack/two/SKILL.md", skill_md("two", "Two", "b").as_bytes()),
        ("pack/two/ref.md", b"reference"),
    ]);
    let rep = ok_json(
        s.post("/v1/imports?scope=agent:beta&message=bulk", &s.admin)
            .header("content-type", "application/zip")
            .body(good)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(rep["created"], json!(["one", "two"]));
    assert_eq!(rep["outcomes"][1]["scope"], "agent:beta");
    let page = ok_json(s.get("/v1/skills", &s.beta).send().await.unwrap(), 200).await;
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["one", "two"],
        "an import into agent:beta sets beta's allowlist"
    );
    let h = ok_json(
        s.get("/v1/skills/two/history?scope=agent:beta", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert!(
        h[0]["author"]
            .as_str()
            .unwrap()
            .starts_with("import:upload by human:token-"),
        "{h}"
    );
    assert_eq!(h[0]["message"], "bulk");
    s.stop().await;
}

#[tokio::test]
async fn concurrent_writers_with_the_same_if_match_one_wins_no_revision_lost() {
    let s = TestServer::start().await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let rb = s
            .markdown(
                "/v1/skills/shared-one",
                &s.admin,
                skill_md("shared-one", &format!("Writer {i}"), "b"),
            )
            .header("if-match", "\"1\"");
        tasks.push(tokio::spawn(async move {
            let r = rb.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }));
    }
    let mut won = 0;
    for t in tasks {
        let (status, v) = t.await.unwrap();
        match status {
            200 => won += 1,
            412 => assert_eq!(v["extra"]["current_rev"], 2, "{v}"),
            other => panic!("{other}: {v}"),
        }
    }
    assert_eq!(won, 1);
    let h = ok_json(
        s.get("/v1/skills/shared-one/history", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(h.as_array().unwrap().len(), 2);

    // The same through an agent token (the authoring tools).
    let r = s
        .markdown("/v1/skills/mine", &s.alpha, skill_md("mine", "Mine", "v1"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 201).await["rev"], 1);
    let mut tasks = Vec::new();
    for i in 0..6 {
        let rb = s
            .markdown(
                "/v1/skills/mine",
                &s.alpha,
                skill_md("mine", "Mine", &format!("v2 by {i}")),
            )
            .header("if-match", "\"1\"");
        tasks.push(tokio::spawn(async move {
            rb.send().await.unwrap().status().as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [200, 412, 412, 412, 412, 412]);
    let h = ok_json(
        s.get("/v1/skills/mine/history?scope=agent:alpha", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(h.as_array().unwrap().len(), 2);
    s.stop().await;
}

/// Read SSE frames until one satisfies `want` (or time runs out).
async fn next_event<B: AsRef<[u8]>>(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<B>> + Unpin),
    buf: &mut String,
    want: impl Fn(&str, &Value) -> bool,
) -> (i64, String, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf[..end].to_owned();
            buf.drain(..end + 2);
            let mut id = 0;
            let mut kind = String::new();
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().unwrap();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    kind = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&data).unwrap();
            if want(&kind, &v) {
                return (id, kind, v);
            }
        }
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("no matching event within 10 s")
            .expect("the stream ended")
            .unwrap();
        buf.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

#[tokio::test]
async fn event_stream_delivers_the_sessions_calls_and_resumes() {
    let s = TestServer::start().await;
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "live"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let r = s
        .get("/v1/sessions/live/events", &s.alpha)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let out = ok_json(
        s.post("/v1/sessions/live/calls", &s.alpha)
            .json(&json!({"name": "take_note", "arguments": {"text": "customer prefers email"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(out["status"], "done", "{out}");
    let call_id = out["call_id"].as_str().unwrap().to_owned();
    let (id, kind, ev) = next_event(&mut stream, &mut buf, |_, v| {
        v["data"]["call_id"] == call_id
    })
    .await;
    assert_eq!(kind, "tool_called");
    assert_eq!(ev["session"], "live");
    assert_eq!(ev["data"]["tool"], "take_note");
    drop(stream);

    // Resuming after that event: only what came later.
    let out = ok_json(
        s.post("/v1/sessions/live/calls", &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": "shared-two"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let second = out["call_id"].as_str().unwrap().to_owned();
    let r = s
        .get("/v1/sessions/live/events", &s.alpha)
        .header("last-event-id", id.to_string())
        .send()
        .await
        .unwrap();
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let (id2, kind, _) = next_event(&mut stream, &mut buf, |_, _| true).await;
    assert!(id2 > id);
    assert_eq!(kind, "skill_activated");
    let (_, kind, _) =
        next_event(&mut stream, &mut buf, |_, v| v["data"]["call_id"] == second).await;
    assert_eq!(kind, "tool_called");
    // The stream ends when the server stops.
    let task = tokio::spawn(async move { while let Some(Ok(_)) = stream.next().await {} });
    s.stop().await;
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the stream outlived the server")
        .unwrap();
}

#[tokio::test]
async fn sessions_turns_calls_pinned_finish_and_runs() {
    let s = TestServer::start().await;
    let r = s
        .post("/v1/sessions", &s.admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 422, "an admin names the agent");
    let sess = ok_json(
        s.post("/v1/sessions", &s.admin)
            .json(&json!({"agent": "alpha", "id": "work-1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(sess["agent"], "alpha");
    let (st, _) = problem(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "rest:alpha"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409, "reserved ids answer as a taken one does");
    let (st, _) = problem(
        s.post("/v1/sessions/nope/turns", &s.alpha)
            .json(&json!({"message": "hi"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);

    let t = ok_json(
        s.post("/v1/sessions/work-1/turns", &s.alpha)
            .json(&json!({"message": "a refund question"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (t["agent"].as_str(), t["session"].as_str()),
        (Some("alpha"), Some("work-1"))
    );
    let catalog = t["context"]["catalog"].as_str().unwrap();
    assert!(
        catalog.contains("shared-one") && catalog.contains("alpha-secret"),
        "{catalog}"
    );
    assert!(!t.to_string().contains("beta-secret"));
    let tools: Vec<&str> = t["context"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"load_skill") && tools.contains(&"take_note"),
        "{tools:?}"
    );
    assert!(t["context"]["report"]["catalog"]["full"].is_array());
    let (st, _) = problem(
        s.post("/v1/sessions/work-1/turns", &s.alpha)
            .json(&json!({"message": "x", "max_cost": "slow"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);

    let out = ok_json(
        s.post("/v1/sessions/work-1/calls", &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": "shared-one"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(out["status"], "done");
    assert!(
        out["result"]
            .as_str()
            .unwrap()
            .contains("Body of shared-one.")
    );
    let out = ok_json(
        s.post("/v1/sessions/work-1/calls", &s.alpha)
            .json(&json!({"name": "web_fetch", "arguments": {"url": "http://x"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (out["status"].as_str(), out["rule"].as_str()),
        (Some("refused"), Some("not_offered"))
    );

    let pinned = ok_json(
        s.get("/v1/sessions/work-1/pinned", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(pinned["skills"][0]["name"], "shared-one");
    let pinned = ok_json(
        s.get("/v1/sessions/work-1/pinned?budget=1", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(pinned["left_out"], json!(["shared-one"]));
    let sess = ok_json(
        s.get("/v1/sessions/work-1", &s.alpha).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(sess["activations"][0]["skill"], "shared-one");

    let (st, _) = problem(
        s.post("/v1/sessions/work-1/finish", &s.alpha)
            .json(&json!({"outcome": "meh"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    let f = ok_json(
        s.post("/v1/sessions/work-1/finish", &s.alpha)
            .json(&json!({"outcome": "success", "note": "done"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (f["run"]["skill"].as_str(), f["run"]["outcome"].as_str()),
        (Some("shared-one"), Some("success"))
    );
    assert_eq!(f["disabled_for_drift"], false);
    let (st, _) = problem(
        s.post("/v1/sessions/work-1/finish", &s.alpha)
            .json(&json!({"outcome": "success"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409);

    let runs = ok_json(
        s.get("/v1/skills/shared-one/runs", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs[0]["session"], "work-1");
    let runs = ok_json(
        s.get("/v1/skills/shared-one/runs", &s.beta)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs, json!([]), "beta sees only its own agent's runs");
    let runs = ok_json(
        s.get("/v1/skills/shared-one/runs", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(runs.as_array().unwrap().len(), 1);
    s.stop().await;
}

#[tokio::test]
async fn a_detached_call_is_collected_by_its_session_only() {
    let s = TestServer::start().await;
    let port = s.addr.port();
    let a = ok_json(
        s.post("/v1/agents", &s.admin)
            .json(&json!({"name": "gamma", "config": {"grants": {"tools": ["web_fetch"], "hosts": [format!("localhost:{port}")]}}}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(a["version"], 1);
    let tok = ok_json(
        s.post("/v1/tokens", &s.admin)
            .json(&json!({"agent": "gamma", "label": "g"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let gamma = tok["secret"].as_str().unwrap().to_owned();
    ok_json(
        s.post("/v1/sessions", &gamma)
            .json(&json!({"id": "g1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let out = ok_json(
        s.post("/v1/sessions/g1/calls", &gamma)
            .json(&json!({"name": "web_fetch", "arguments": {"url": format!("http://localhost:{port}/healthz")}, "detach": true}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    assert_eq!(out["status"], "started");
    let call_id = out["call_id"].as_str().unwrap().to_owned();
    // Not another agent's to collect.
    let (st, _) = problem(
        s.get(&format!("/v1/sessions/g1/calls/{call_id}"), &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "a1"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let (st, _) = problem(
        s.get(&format!("/v1/sessions/a1/calls/{call_id}"), &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let done = ok_json(
        s.get(
            &format!("/v1/sessions/g1/calls/{call_id}?timeout_ms=10000"),
            &gamma,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(
        (
            done["result"]["status"].as_i64(),
            done["result"]["body"].as_str()
        ),
        (Some(200), Some("ok\n")),
        "{done}"
    );
    // Collected again: the recorded outcome.
    let again = ok_json(
        s.get(&format!("/v1/sessions/g1/calls/{call_id}"), &gamma)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(again["status"], "done");
    let (st, _) = problem(
        s.get("/v1/sessions/g1/calls/call-none", &gamma)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    s.stop().await;
}

#[tokio::test]
async fn agents_vault_and_tokens_for_admins() {
    let s = TestServer::start().await;
    let list = ok_json(s.get("/v1/agents", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    let r = s.get("/v1/agents/alpha", &s.alpha).send().await.unwrap();
    let v = r.headers()["etag"].to_str().unwrap().to_owned();
    let a = ok_json(r, 200).await;
    assert_eq!(a["grants"]["tools"], json!(["notes", "skills"]));
    let c = ok_json(
        s.post("/v1/agents", &s.admin)
            .json(&json!({"name": "delta", "config": {"skills": "all", "description": "D"}}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    assert_eq!(
        (c["skills"].as_str(), c["description"].as_str()),
        (Some("all"), Some("D"))
    );
    let (st, _) = problem(
        s.post("/v1/agents", &s.admin)
            .json(&json!({"name": "delta"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 409);
    for bad in [
        json!({"name": "Bad Name"}),
        json!({"name": "e", "config": {"skilz": []}}),
        json!({"name": "e", "config": {"grants": {"hosts": ["https://x.com/a"]}}}),
    ] {
        let (st, p) = problem(
            s.post("/v1/agents", &s.admin)
                .json(&bad)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(st, 422, "{bad}: {p}");
    }
    let (st, p) = problem(
        s.put("/v1/agents/alpha", &s.admin)
            .header("if-match", "\"99\"")
            .json(&json!({"skills": "all"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, p["extra"]["current_version"].clone()),
        (412, json!(a["version"]))
    );
    let r = s
        .put("/v1/agents/alpha", &s.admin)
        .header("if-match", v)
        .json(&json!({"skills": ["shared-one"], "grants": {"tools": ["notes"]}}))
        .send()
        .await
        .unwrap();
    let u = ok_json(r, 200).await;
    assert_eq!(u["version"].as_i64(), a["version"].as_i64().map(|v| v + 1));
    let page = ok_json(s.get("/v1/skills", &s.alpha).send().await.unwrap(), 200).await;
    assert_eq!(
        page["items"].as_array().unwrap().len(),
        1,
        "the new allowlist applies at once"
    );
    let r = s
        .put("/v1/agents/epsilon", &s.admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 201).await["name"], "epsilon");

    // Vault: the value goes in and never comes out.
    let secret = "sk_live_very_secret_value_123";
    let r = s
        .put("/v1/vault/PAYMENTS_KEY", &s.admin)
        .json(&json!({"value": secret, "description": "payments"}))
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    assert!(!text.contains(secret), "{text}");
    let e: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (e["name"].as_str(), e["description"].as_str()),
        (Some("PAYMENTS_KEY"), Some("payments"))
    );
    let list = s
        .get("/v1/vault", &s.admin)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        list.contains("PAYMENTS_KEY") && !list.contains(secret),
        "{list}"
    );
    let (st, _) = problem(
        s.put("/v1/vault/bad name!", &s.admin)
            .json(&json!({"value": secret}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    // A skill carrying the value is refused.
    let r = s
        .markdown(
            "/v1/skills/leaky",
            &s.admin,
            skill_md("leaky", "Leaky", &format!("use {secret}")),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 422);
    let r = s
        .req(Method::DELETE, "/v1/vault/PAYMENTS_KEY", &s.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (st, _) = problem(
        s.req(Method::DELETE, "/v1/vault/PAYMENTS_KEY", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);

    // Tokens: listed without secrets or hashes.
    let list = ok_json(s.get("/v1/tokens", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(list.as_array().unwrap().len(), 3);
    let text = list.to_string();
    assert!(
        !text.contains(&s.admin) && !text.contains("hash") && !text.contains("secret"),
        "{text}"
    );
    assert_eq!(list[1]["agent"], "alpha");
    let (st, _) = problem(
        s.post("/v1/tokens", &s.admin)
            .json(&json!({"agent": "nobody"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let (st, _) = problem(
        s.req(Method::DELETE, "/v1/tokens/abc", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 400);
    s.stop().await;
}

#[tokio::test]
async fn agent_token_writes_go_through_the_authoring_tools() {
    let s = TestServer::start().await;
    let r = s
        .markdown(
            "/v1/skills/tips",
            &s.alpha,
            skill_md("tips", "Handy tips", "Be brief."),
        )
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 201).await;
    assert_eq!(
        (w["scope"].as_str(), w["rev"].as_i64()),
        (Some("agent:alpha"), Some(1))
    );
    let h = ok_json(
        s.get("/v1/skills/tips/history?scope=agent:alpha", &s.admin)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(h[0]["author"], "agent:alpha/inline");
    assert_eq!(h[0]["message"], "written by the agent");
    // Outside alpha's allowlist, so not in its view (skill_show answers the same).
    let (st, _) = problem(s.get("/v1/skills/tips", &s.alpha).send().await.unwrap()).await;
    assert_eq!(st, 404);
    s.state.dispatcher.flush().await;
    let evs = s
        .store
        .events(&EventFilter {
            session: Some("rest:alpha".into()),
            kind: Some("tool_called".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].data["tool"], "skill_create");

    // Modifying a shared skill writes the agent's own copy; the shared one is untouched.
    let r = s
        .markdown(
            "/v1/skills/shared-one?message=mine",
            &s.alpha,
            skill_md("shared-one", "Alpha's take", "Own."),
        )
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 201).await;
    assert_eq!(w["scope"], "agent:alpha");
    assert_eq!(
        s.store
            .index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .head_rev,
        1
    );
    let d = ok_json(
        s.get("/v1/skills/shared-one", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(d["meta"]["description"], "Alpha's take");

    // What the tools refuse, REST refuses.
    let r = s
        .markdown("/v1/skills/tips2", &s.beta, skill_md("tips2", "T", "b"))
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 403, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("`skills`"), "{p}");
    let md = "---\nname: fetcher\ndescription: Fetches\ncapabilities:\n  tools:\n    - web_fetch\n---\nFetch.\n";
    let (st, p) = problem(
        s.markdown("/v1/skills/fetcher", &s.alpha, md.into())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, p["type"].as_str()),
        (403, Some("urn:skillbase:problem:capability-not-granted"))
    );
    let md = "---\nname: lic\ndescription: Licensed\nlicense: MIT\n---\nBody.\n";
    let (st, p) = problem(
        s.markdown("/v1/skills/lic", &s.alpha, md.into())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);
    assert!(p["detail"].as_str().unwrap().contains("license"), "{p}");
    let r = s
        .put("/v1/skills/tips", &s.alpha)
        .json(&json!({"files": {"SKILL.md": skill_md("tips", "T", "b"), "x.md": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 422);
    let r = s
        .markdown(
            "/v1/skills/tips?scope=shared",
            &s.alpha,
            skill_md("tips", "T", "b"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 403);
    let r = s
        .markdown(
            "/v1/skills/tips",
            &s.alpha,
            skill_md("tips", "Handy tips", ""),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        problem(r).await.0,
        422,
        "an empty body is refused by the tool's schema"
    );
    assert!(s.store.index().get(&Scope::Shared, "tips").is_none());

    // Revert and retire on its own skill; a session it names gates the write.
    let r = s
        .markdown(
            "/v1/skills/tips",
            &s.alpha,
            skill_md("tips", "Handy tips", "Be very brief."),
        )
        .header("if-match", "\"1\"")
        .send()
        .await
        .unwrap();
    assert_eq!(ok_json(r, 200).await["rev"], 2);
    let w = ok_json(
        s.post("/v1/skills/tips/revert", &s.alpha)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (w["rev"].as_i64(), w["latest_rev"].as_i64()),
        (Some(1), Some(2))
    );
    ok_json(
        s.post("/v1/sessions", &s.alpha)
            .json(&json!({"id": "driving"}))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    ok_json(
        s.post("/v1/sessions/driving/calls", &s.alpha)
            .json(&json!({"name": "load_skill", "arguments": {"name": "shared-two"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let r = s
        .post("/v1/skills/tips/retire", &s.alpha)
        .header("skillbase-session", "driving")
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 409, "a skill drives that session: {p}");
    let r = s
        .post("/v1/skills/tips/retire", &s.alpha)
        .header("skillbase-session", "beta-nothing")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 404);
    let w = ok_json(
        s.post("/v1/skills/tips/retire", &s.alpha)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "retired");
    let (st, _) = problem(
        s.post("/v1/skills/shared-two/retire", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404, "an agent retires only its own records");

    // The approval policy holds agent revisions for review.
    let mut cfg = serde_json::to_value(
        &s.store
            .agent(&AgentName::parse("alpha").unwrap())
            .await
            .unwrap()
            .unwrap()
            .config,
    )
    .unwrap();
    cfg["policies"]["review_agent_revisions"] = json!(true);
    ok_json(
        s.put("/v1/agents/alpha", &s.admin)
            .json(&cfg)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let r = s
        .markdown(
            "/v1/skills/reviewed",
            &s.alpha,
            skill_md("reviewed", "Needs review", "b"),
        )
        .send()
        .await
        .unwrap();
    let w = ok_json(r, 202).await;
    assert_eq!(
        (w["pending_review"].as_bool(), w["status"].as_str()),
        (Some(true), Some("pending"))
    );
    let pending = ok_json(s.get("/v1/approvals", &s.admin).send().await.unwrap(), 200).await;
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(
        (
            pending[0]["name"].as_str(),
            pending[0]["scope"].as_str(),
            pending[0]["rev"].as_i64()
        ),
        (Some("reviewed"), Some("agent:alpha"), Some(1))
    );
    assert_eq!(pending[0]["author"], "agent:alpha/inline");
    let w = ok_json(
        s.post("/v1/skills/reviewed/approve?scope=agent:alpha", &s.admin)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(w["status"], "active");
    assert_eq!(
        ok_json(s.get("/v1/approvals", &s.admin).send().await.unwrap(), 200).await,
        json!([])
    );
    let (st, _) = problem(
        s.post("/v1/skills/reviewed/approve?scope=agent:alpha", &s.admin)
            .json(&json!({"rev": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422, "not pending any more");
    s.stop().await;
}

#[tokio::test]
async fn unknown_methods_and_paths_answer_problems() {
    let s = TestServer::start().await;
    let (st, _) = problem(
        s.req(Method::DELETE, "/v1/skills/shared-one", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 405);
    let (st, _) = problem(s.get("/v1/nothing-here", &s.admin).send().await.unwrap()).await;
    assert_eq!(st, 404);
    s.stop().await;
}
