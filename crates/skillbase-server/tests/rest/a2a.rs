//! A2A agent cards: an agent's skills as A2A v1.0 AgentSkill objects, validated against a JSON
//! schema of the A2A AgentCard written by hand from the specification
//! (`tests/fixtures/a2a/agent-card.schema.json`) and against the OpenAPI document's own
//! response schema; only what the caller's token may see; the default agent's well-known card.

use super::*;

fn a2a_schema() -> jsonschema::Validator {
    let text = include_str!("../fixtures/a2a/agent-card.schema.json");
    jsonschema::validator_for(&serde_json::from_str(text).unwrap()).unwrap()
}

#[track_caller]
fn assert_valid_card(card: &Value) {
    let a2a = a2a_schema();
    let errors: Vec<String> = a2a
        .iter_errors(card)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not an A2A v1.0 AgentCard: {errors:?}\n{card:#}"
    );
    for path in [
        "/v1/agents/{name}/agent-card.json",
        "/.well-known/agent-card.json",
    ] {
        let doc = super::openapi::doc();
        let pointer = format!(
            "/paths/{}/get/responses/200/content/application~1json/schema",
            path.replace('/', "~1")
        );
        let v = super::openapi::validator(&doc, &pointer);
        assert!(
            v.is_valid(card),
            "the OpenAPI schema of {path} refuses {card:#}"
        );
    }
}

async fn card(s: &TestServer, path: &str, token: &str) -> Value {
    let r = s.get(path, token).send().await.unwrap();
    assert_eq!(
        r.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("private, no-store")
    );
    ok_json(r, 200).await
}

#[tokio::test]
async fn an_agents_card_lists_its_skills_as_a2a_agent_skills() {
    let s = TestServer::start().await;
    let md = "---\nname: shared-two\ndescription: Drafts release notes from merged PRs.\n\
              triggers: [release notes, changelog]\nwhen_to_use:\n  - write the notes for v2.3\n\
              metadata:\n  tags: [writing, Release Notes]\n  examples: draft the changelog\n---\nBody\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-two",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
    let c = card(&s, "/v1/agents/alpha/agent-card.json", &s.admin).await;
    assert_valid_card(&c);
    assert_eq!(c["name"], "alpha");
    assert_eq!(
        c["supportedInterfaces"][0]["url"],
        format!("{}/mcp", s.base)
    );
    assert_eq!(c["supportedInterfaces"][0]["protocolBinding"], "MCP");
    assert_eq!(c["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(
        c["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let ids: Vec<&str> = c["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha-secret", "shared-one", "shared-two"]);
    let two = &c["skills"][2];
    assert_eq!(two["name"], "shared-two");
    assert_eq!(two["description"], "Drafts release notes from merged PRs.");
    // metadata.tags, then triggers, each once whatever its case.
    assert_eq!(
        two["tags"],
        json!(["writing", "Release Notes", "changelog"])
    );
    assert_eq!(
        two["examples"],
        json!(["write the notes for v2.3", "draft the changelog"])
    );
    // A skill declaring no examples has none; tags may be empty, never absent.
    assert!(c["skills"][0].get("examples").is_none(), "{c:#}");
    assert_eq!(c["skills"][0]["tags"], json!([]));
    // A retired skill leaves the card.
    s.store
        .set_status(
            &Scope::Shared,
            "shared-one",
            skillbase_store::StatusChange::Retire,
            &skillbase_store::Author::Human("t".into()),
            Value::Null,
        )
        .await
        .unwrap();
    let c = card(&s, "/v1/agents/alpha/agent-card.json", &s.admin).await;
    assert_eq!(c["skills"].as_array().unwrap().len(), 2, "{c:#}");
    s.stop().await;
}

#[tokio::test]
async fn a_token_sees_only_its_own_agents_card() {
    let s = TestServer::start().await;
    let c = card(&s, "/v1/agents/alpha/agent-card.json", &s.alpha).await;
    assert_valid_card(&c);
    let names: Vec<&str> = c["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"beta-secret"), "{names:?}");
    // Another agent's card answers exactly as a missing agent's.
    let (st, other) = problem(
        s.get("/v1/agents/beta/agent-card.json", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (st2, missing) = problem(
        s.get("/v1/agents/nobody/agent-card.json", &s.alpha)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, st2), (404, 404));
    assert_eq!(
        without(&other["detail"], "beta"),
        without(&missing["detail"], "nobody")
    );
    assert_eq!(other["type"], missing["type"]);
    // Admins see any agent's; a missing one is 404.
    let c = card(&s, "/v1/agents/beta/agent-card.json", &s.admin).await;
    assert_eq!(c["name"], "beta");
    let (st, _) = problem(
        s.get("/v1/agents/nobody/agent-card.json", &s.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    // No token, a wrong one: 401, for both routes.
    for path in [
        "/v1/agents/alpha/agent-card.json",
        "/.well-known/agent-card.json",
    ] {
        let r = s.http.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        let r = s.get(path, "sbt_not-a-token").send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    s.stop().await;
}

#[tokio::test]
async fn hostile_names_and_hosts_change_nothing() {
    let s = TestServer::start().await;
    let long = "a".repeat(300);
    for name in [
        "Alpha",
        "..",
        "%2e%2e",
        "alpha%00",
        "alpha%0a",
        "al%20pha",
        "-alpha",
        long.as_str(),
        "%E2%80%AEalpha",
        "alpha.json",
    ] {
        let r = s
            .get(&format!("/v1/agents/{name}/agent-card.json"), &s.admin)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(matches!(status, 400 | 404), "{name}: {status} {body}");
        assert!(
            !body.chars().any(|c| c.is_control()),
            "{name}: no raw control character: {body}"
        );
        assert!(
            body.len() < 2000,
            "{name}: the answer does not echo the input at length"
        );
    }
    // A forged Host is not reflected into the card's URL unless it is a plain host[:port].
    let events = s.event_count().await;
    let r = s
        .get("/v1/agents/alpha/agent-card.json", &s.admin)
        .header("host", "evil.example/path?x")
        .send()
        .await
        .unwrap();
    let c = ok_json(r, 200).await;
    assert_eq!(c["supportedInterfaces"][0]["url"], "http://localhost/mcp");
    assert_eq!(
        s.event_count().await,
        events,
        "reading a card writes nothing"
    );
    s.stop().await;
}

#[tokio::test]
async fn the_well_known_card_is_the_default_agents() {
    let s = TestServer::start_with(ServerOptions {
        default_agent: Some(AgentName::parse("alpha").unwrap()),
        ..ServerOptions::default()
    })
    .await;
    let c = card(&s, "/.well-known/agent-card.json", &s.admin).await;
    assert_valid_card(&c);
    assert_eq!(c["name"], "alpha");
    let same = card(&s, "/v1/agents/alpha/agent-card.json", &s.alpha).await;
    assert_eq!(
        card(&s, "/.well-known/agent-card.json", &s.alpha).await,
        same
    );
    // Another agent's token: answered as a server without a default agent.
    let (st, body) = problem(
        s.get("/.well-known/agent-card.json", &s.beta)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    s.stop().await;
    let plain = TestServer::start().await;
    let (st2, none) = problem(
        plain
            .get("/.well-known/agent-card.json", &plain.admin)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st2, 404);
    assert_eq!(body["detail"], none["detail"]);
    assert!(
        none["detail"]
            .as_str()
            .unwrap()
            .contains("/v1/agents/{name}/agent-card.json")
    );
    plain.stop().await;
}

#[tokio::test]
async fn the_local_dev_mode_card_names_no_security_scheme() {
    let s = TestServer::start_with(ServerOptions {
        dev: true,
        default_agent: Some(AgentName::parse("beta").unwrap()),
        ..ServerOptions::default()
    })
    .await;
    let r = s
        .http
        .get(s.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    let c = ok_json(r, 200).await;
    assert_valid_card(&c);
    assert_eq!(c["name"], "beta");
    assert!(
        c.get("securitySchemes").is_none() && c.get("securityRequirements").is_none(),
        "{c:#}"
    );
    s.stop().await;
}

/// A skill the agent's policy withholds for unmet `requires:` is on no card (and in no MCP
/// listing: both read `view::visible_in`); offered by default, it is on the card.
#[tokio::test]
async fn a_withheld_skill_is_not_on_the_card() {
    let s = TestServer::start().await;
    let md = "---\nname: shared-two\ndescription: Prints labels.\nrequires:\n  bins: [skillbase-test-no-such-printer]\n---\nBody\n";
    put_skill(
        &s.store,
        Scope::Shared,
        "shared-two",
        &[("SKILL.md", md.as_bytes())],
    )
    .await;
    let ids = |c: &Value| -> Vec<String> {
        c["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let c = card(&s, "/v1/agents/alpha/agent-card.json", &s.admin).await;
    assert!(ids(&c).contains(&"shared-two".to_owned()), "{c:#}");
    let alpha = skillbase_store::AgentName::parse("alpha").unwrap();
    let mut config = s.store.agent(&alpha).await.unwrap().unwrap().config;
    config.policies.unmet_requires = skillbase_store::UnmetRequires::Withhold;
    s.store.set_agent(&alpha, &config).await.unwrap();
    let c = card(&s, "/v1/agents/alpha/agent-card.json", &s.admin).await;
    assert_valid_card(&c);
    assert!(!ids(&c).contains(&"shared-two".to_owned()), "{c:#}");
    assert!(ids(&c).contains(&"shared-one".to_owned()), "{c:#}");
    s.stop().await;
}
