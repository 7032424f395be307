//! The OpenAPI document against the mounted routes, and unknown methods and paths.

use super::*;

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
    // The agent configuration schema names exactly the fields the store reads (prompts are
    // left out of the JSON when there are none).
    let schema = &doc["components"]["schemas"]["AgentConfig"]["properties"];
    let documented: BTreeSet<&str> = schema
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let real = serde_json::to_value(skillbase_store::AgentConfig {
        prompts: vec![skillbase_store::Prompt::Text("Be brief.".into())],
        ..skillbase_store::AgentConfig::default()
    })
    .unwrap();
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
