//! The OpenAPI document says what the server does: every status an operation can answer is
//! documented with the problem schema, bodies have the media types the routes read, and the
//! schemas' patterns and bounds accept exactly what the server's own validators accept.

use serde_json::{Value, json};
use skillbase_format::validate::{check_host, check_tool_class, check_vault_name};
use skillbase_store::model::{
    MAX_CALLS_IN_FLIGHT, MAX_FAILURE_THRESHOLD, MAX_NETWORK_CALLS_PER_SESSION, check_message,
    check_session_id, check_token_label,
};
use skillbase_store::{AgentName, MAX_BUDGET, Scope};

pub(super) fn doc() -> Value {
    serde_json::from_str(skillbase_server::rest::openapi_text()).unwrap()
}

/// Every operation as (method, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.clone(), path.clone(), op.clone()));
        }
    }
    out
}

/// Every `$ref` anywhere under `v`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    out.push(x.as_str().unwrap().to_owned());
                } else {
                    refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn every_reference_resolves() {
    let doc = doc();
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.len() > 50, "{}", all.len());
    for r in all {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "{r} names nothing");
    }
}

/// Links name operations that exist, with parameters those operations take, and the things
/// a client creates (sessions, skills, agents, tokens, vault entries, detached calls) lead to
/// the operations that use them.
#[test]
fn links_lead_from_what_is_created_to_what_uses_it() {
    let doc = doc();
    let ops = operations(&doc);
    let by_id: std::collections::HashMap<String, &Value> = ops
        .iter()
        .map(|(_, _, op)| (op["operationId"].as_str().unwrap().to_owned(), op))
        .collect();
    let mut linked = std::collections::BTreeSet::new();
    for (method, path, op) in &ops {
        for (status, r) in op["responses"].as_object().unwrap() {
            for (name, link) in r
                .get("links")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let target = link["operationId"].as_str().unwrap();
                let t = by_id
                    .get(target)
                    .unwrap_or_else(|| panic!("{method} {path} {status} {name}: no {target}"));
                let takes: Vec<&str> = t["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| p["name"].as_str().unwrap())
                    .collect();
                for (param, expr) in link["parameters"].as_object().unwrap() {
                    assert!(takes.contains(&param.as_str()), "{target} takes no {param}");
                    let expr = expr.as_str().unwrap();
                    assert!(
                        expr.starts_with("$response.body#/") || expr.starts_with("$request.path."),
                        "{expr}"
                    );
                }
                linked.insert(target.to_owned());
            }
        }
    }
    for target in [
        "sessions_turn",
        "sessions_call_result",
        "skills_show",
        "skills_revert",
        "agents_eval",
        "agents_sweep_show",
        "agents_sweep_stop",
        "tokens_revoke",
        "vault_remove",
    ] {
        assert!(linked.contains(target), "nothing links to {target}");
    }
}

#[test]
fn every_operation_documents_the_statuses_the_shared_layers_answer() {
    let doc = doc();
    for (method, path, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        let has = |code: &str| responses.contains_key(code);
        let mut want = vec!["401", "500", "503"];
        // A full disk fails whatever may write; a GET only reads.
        if method != "get" {
            want.push("507");
        } else {
            assert!(!has("507"), "{method} {path}: a read documents 507");
        }
        if op.get("requestBody").is_some() {
            want.extend(["400", "413", "415"]);
        }
        if path.contains('{') {
            want.extend(["400", "404"]);
        }
        for code in want {
            assert!(has(code), "{method} {path}: {code} undocumented");
        }
        for (code, r) in responses {
            if code.starts_with('4') || code.starts_with('5') {
                assert_eq!(
                    r["content"]["application/problem+json"]["schema"]["$ref"],
                    "#/components/schemas/Problem",
                    "{method} {path} {code}"
                );
            }
        }
        // A body the route may go without is optional, never `null`.
        if let Some(content) = op["requestBody"]["content"].as_object() {
            for (media, c) in content {
                let schema = c["schema"].to_string();
                assert!(
                    !schema.contains(r#"{"type":"null"}"#),
                    "{method} {path} {media}: {schema}"
                );
            }
        }
    }
}

#[test]
fn bodies_have_the_media_types_the_routes_read_and_answer() {
    let doc = doc();
    let p = &doc["paths"];
    let binary =
        json!({"type": "string", "format": "binary", "contentMediaType": "application/zip"});
    assert_eq!(
        p["/v1/skills/{name}/export"]["get"]["responses"]["200"]["content"]["application/zip"]["schema"],
        binary
    );
    assert_eq!(
        p["/v1/imports"]["post"]["requestBody"]["content"]["application/zip"]["schema"],
        binary
    );
    assert_eq!(p["/v1/imports"]["post"]["requestBody"]["required"], true);
    let put = &p["/v1/skills/{name}"]["put"]["requestBody"]["content"];
    assert_eq!(put["text/markdown"]["schema"]["type"], "string");
    assert_eq!(
        put["application/json"]["schema"]["$ref"],
        "#/components/schemas/PutSkill"
    );
    for status in ["retire", "restore", "disable", "enable"] {
        let body = &p[format!("/v1/skills/{{name}}/{status}")]["post"]["requestBody"];
        assert_eq!(body["required"], false, "{status}");
        assert_eq!(
            body["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/StatusBody",
            "{status}"
        );
    }
    // The event stream names the schema of its events, which has every field the store sends.
    let sse =
        &p["/v1/sessions/{id}/events"]["get"]["responses"]["200"]["content"]["text/event-stream"];
    assert_eq!(
        sse["x-sse-data"]["$ref"],
        "#/components/schemas/SessionEvent"
    );
    let documented: std::collections::BTreeSet<String> =
        doc["components"]["schemas"]["SessionEvent"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
    let sent = serde_json::to_value(skillbase_store::EventRecord {
        id: 1,
        at: 0,
        kind: skillbase_store::EventKind::Turn,
        scope: None,
        skill: None,
        rev: None,
        agent: None,
        session: None,
        actor: None,
        data: Value::Null,
    })
    .unwrap();
    let sent: std::collections::BTreeSet<String> =
        sent.as_object().unwrap().keys().cloned().collect();
    assert_eq!(documented, sent);
    // `files` is all of: an object of at most 512 files, and SKILL.md (or skill.md, never both:
    // they would collide).
    let files = &doc["components"]["schemas"]["PutSkill"]["properties"]["files"]["allOf"];
    let required: Vec<&Value> = files[1]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["required"])
        .collect();
    assert_eq!(required, [&json!(["SKILL.md"]), &json!(["skill.md"])]);
    assert_eq!(files[0]["maxProperties"], 512);
    let v = validator(&doc, "/components/schemas/PutSkill/properties/files");
    for (sample, ok) in [
        (json!({"SKILL.md": "x"}), true),
        (json!({"skill.md": "x", "a/b.md": {"base64": "YQ=="}}), true),
        (json!({"SKILL.md": "x", "skill.md": "y"}), false),
        (json!({"notes.md": "x"}), false),
        (json!({"SKILL.md": {"text": "a", "base64": "YQ=="}}), false),
        (json!({"SKILL.md": {"executable": true}}), false),
        (json!({"SKILL.md": {"text": null, "base64": "YQ=="}}), true),
        (json!({"SKILL.md": "x", "../up.md": "x"}), false),
    ] {
        assert_eq!(v.is_valid(&sample), ok, "{sample}");
    }
    // An evaluation is one form or the other.
    let v = validator(&doc, "/components/schemas/EvalRequest");
    let case = json!({"message": "refund my order", "expected": "refund"});
    let task = json!({"task_id": "t", "instruction_text": "refund my order", "domain": "x"});
    for (sample, ok) in [
        (json!({"cases": [case]}), true),
        (
            json!({"cases": [case], "tasks": null, "id_map": null}),
            true,
        ),
        (json!({"tasks": [task], "relevance": {}}), true),
        // A budget left to the agent may be written as null, as the server reads it.
        (json!({"cases": [case], "context_budget": null}), true),
        (json!({"cases": [case], "context_budget": -1}), false),
        (
            json!({"tasks": [task], "relevance": {}, "id_map": {}}),
            true,
        ),
        // What the server refuses (422), the document refuses: a task without its id or text.
        (json!({"tasks": [{}], "relevance": {}}), false),
        (json!({"tasks": [{"task_id": "t"}], "relevance": {}}), false),
        (
            json!({"tasks": [{"task_id": 1, "instruction_text": "x"}], "relevance": {}}),
            false,
        ),
        (
            json!({"cases": [case], "tasks": [], "relevance": {}}),
            false,
        ),
        (json!({"cases": []}), false),
        (json!({"cases": [{"message": "m"}]}), false),
        (json!({"tasks": [{"task_id": "t"}]}), false),
        (json!({"cases": [case], "id_map": {}}), false),
        (json!({}), false),
    ] {
        assert_eq!(v.is_valid(&sample), ok, "{sample}");
    }
    // A transcript's message may carry `tool_calls: []` on any role, as the server reads it
    // (its own test); a message is one of the four roles, with no other key.
    let v = validator(&doc, "/components/schemas/Transcript");
    let call = json!({"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}});
    for (sample, ok) in [
        (
            json!({"messages": [{"role": "user", "content": "hi", "tool_calls": []}]}),
            true,
        ),
        (
            json!({"messages": [{"role": "assistant", "tool_calls": [call]}]}),
            true,
        ),
        (
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": null}]}),
            true,
        ),
        (json!({"messages": []}), false),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            false,
        ),
        (
            json!({"messages": [{"role": "user", "content": "x", "extra": 1}]}),
            false,
        ),
        (
            json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]}),
            false,
        ),
    ] {
        assert_eq!(v.is_valid(&sample), ok, "{sample}");
    }
}

/// The schema at `pointer` (a `$ref` followed once), compiled.
pub(super) fn validator(doc: &Value, pointer: &str) -> jsonschema::Validator {
    let mut schema = doc
        .pointer(pointer)
        .unwrap_or_else(|| panic!("no schema at {pointer}"))
        .clone();
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        schema = doc.pointer(&r[1..]).unwrap().clone();
    }
    // The document's components ride along so the schema's own references resolve.
    if let Value::Object(m) = &mut schema {
        m.insert("components".into(), doc["components"].clone());
    }
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{pointer}: {e}"))
}

/// The document's schema and the server's check agree on every sample.
fn agree(doc: &Value, pointer: &str, samples: &[Value], server: impl Fn(&Value) -> bool) {
    let v = validator(doc, pointer);
    for s in samples {
        assert_eq!(
            v.is_valid(s),
            server(s),
            "{pointer}: the document and the server disagree on {s}"
        );
    }
}

fn strings(xs: &[String]) -> Vec<Value> {
    xs.iter().map(|x| Value::String(x.clone())).collect()
}

#[test]
fn patterns_accept_exactly_what_the_server_accepts() {
    let doc = doc();
    let long = |c: &str, n: usize| c.repeat(n);
    let names = strings(&[
        "a".into(),
        "support".into(),
        "a_b-c".into(),
        "0x".into(),
        long("a", 64),
        long("a", 65),
        String::new(),
        "-a".into(),
        "_a".into(),
        "A".into(),
        "a.b".into(),
        "a b".into(),
        "é".into(),
        "a\n".into(),
    ]);
    let agent_ok = |v: &Value| AgentName::parse(v.as_str().unwrap()).is_ok();
    agree(
        &doc,
        "/components/schemas/NewAgent/properties/name",
        &names,
        agent_ok,
    );
    agree(
        &doc,
        "/paths/~1v1~1agents~1{name}/get/parameters/0/schema",
        &names,
        agent_ok,
    );
    agree(
        &doc,
        "/components/schemas/NewToken/properties/agent",
        &names,
        |v| agent_ok(v),
    );
    let doctor_agent = doc["paths"]["/v1/doctor"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| p["name"] == "agent")
        .unwrap();
    agree(
        &doc,
        &format!("/paths/~1v1~1doctor/get/parameters/{doctor_agent}/schema"),
        &names,
        agent_ok,
    );

    // An agent's prompts: a path (alone or as a table) or a text, within the store's bounds.
    use skillbase_store::Prompt;
    use skillbase_store::model::check_prompts;
    let paths = strings(&[
        "prompts/support.md".into(),
        "/srv/a b/é.md".into(),
        long("é", 4096),
        long("a", 4097),
        String::new(),
        " ".into(),
        "a\nb".into(),
        "a\u{7}b".into(),
        "a\u{85}b".into(),
        "a\u{a0}b".into(),
    ]);
    let path_ok = |v: &Value| check_prompts(&[Prompt::Path(v.as_str().unwrap().into())]).is_ok();
    agree(&doc, "/components/schemas/PromptPath", &paths, path_ok);
    let tables: Vec<Value> = paths.iter().map(|p| json!({"path": p})).collect();
    agree(&doc, "/components/schemas/PromptFile", &tables, |v| {
        path_ok(&v["path"])
    });
    let texts: Vec<Value> = [
        String::new(),
        "Use refund-procedure.\n".into(),
        long("é", 65_536),
        long("a", 65_537),
        "\u{0}".into(),
    ]
    .iter()
    .map(|t| json!({"text": t}))
    .collect();
    agree(&doc, "/components/schemas/PromptText", &texts, |v| {
        check_prompts(&[Prompt::Text(v["text"].as_str().unwrap().into())]).is_ok()
    });
    // Any entry, as the store reads it.
    let mut entries: Vec<Value> = paths.clone();
    entries.extend(tables);
    entries.extend(texts);
    entries.extend([
        json!({"file": "a.md"}),
        json!({"path": "a.md", "text": "b"}),
        json!(3),
        json!(null),
        json!({}),
    ]);
    agree(&doc, "/components/schemas/Prompt", &entries, |v| {
        serde_json::from_value::<Prompt>(v.clone())
            .map_err(|e| e.to_string())
            .and_then(|p| check_prompts(&[p]))
            .is_ok()
    });

    // Skill names where a skill is named (an agent's skill sets): the canonical form, in every
    // script. Samples: hand-picked cases, then one or two code points from all over Unicode.
    let mut skill_names: Vec<String> = [
        "pdf-processing",
        "a",
        "123",
        "技能",
        "мой-навык",
        "café",
        "٣٤٥",
        "ǆ",
        "ß",
        "ﬁle",
        "Café",
        "ÉCOLE",
        " a",
        "a ",
        "a--b",
        "-a",
        "a-",
        "",
        "a_b",
        "a.b",
        "cafe\u{301}",
        "\u{1100}\u{1161}",
        "가",
        "ᅡ",
        "x\u{2160}",
        "𝒶",
        "𐐨",
        "𐐀",
        "Σ",
        "σς",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    skill_names.push(long("a", 64));
    skill_names.push(long("a", 65));
    skill_names.push(long("技", 64));
    skill_names.push(long("技", 65));
    for cp in (0..=0x10FFFFu32).step_by(331).filter_map(char::from_u32) {
        skill_names.push(cp.to_string());
        skill_names.push(format!("a{cp}"));
        skill_names.push(format!("{cp}-1"));
    }
    let canonical =
        |v: &Value| skillbase_format::SkillName::parse_canonical(v.as_str().unwrap()).is_ok();
    agree(
        &doc,
        "/components/schemas/SkillName",
        &strings(&skill_names),
        canonical,
    );
    // Both sets of an agent's configuration use it.
    let set = validator(&doc, "/components/schemas/AgentConfig");
    for (sample, ok) in [
        (
            json!({"skills": ["ñandú", "技能"], "eager": ["café"]}),
            true,
        ),
        (json!({"skills": ["ǆ"]}), false),
        (json!({"skills": ["Café"]}), false),
        (json!({"eager": ["ﬁle"]}), false),
        (json!({"skills": "all", "eager": true}), true),
    ] {
        let errors: Vec<String> = set.iter_errors(&sample).map(|e| e.to_string()).collect();
        assert_eq!(errors.is_empty(), ok, "{sample}: {errors:?}");
        let server = serde_json::from_value::<skillbase_store::AgentConfig>(sample.clone());
        assert_eq!(server.is_ok(), ok, "{sample}: {server:?}");
    }

    let scopes = strings(&[
        "shared".into(),
        "agent:support".into(),
        format!("agent:{}", long("a", 64)),
        format!("agent:{}", long("a", 65)),
        "Shared".into(),
        "agent:".into(),
        "agent:-x".into(),
        "agents:x".into(),
        " shared".into(),
        "shared\n".into(),
    ]);
    let list_scope = doc["paths"]["/v1/skills"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| p["name"] == "scope")
        .unwrap();
    agree(
        &doc,
        &format!("/paths/~1v1~1skills/get/parameters/{list_scope}/schema"),
        &scopes,
        |v| v.as_str().unwrap().parse::<Scope>().is_ok(),
    );

    let classes = strings(&[
        "web_fetch".into(),
        "a-b".into(),
        long("a", 64),
        long("a", 65),
        "Web".into(),
        String::new(),
        "a.b".into(),
        "mcp/x".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/Grants/properties/tools/items",
        &classes,
        |v| check_tool_class(v.as_str().unwrap()).is_none(),
    );
    let vault = strings(&[
        "OPENAI_KEY".into(),
        "a.b-c".into(),
        long("K", 128),
        long("K", 129),
        String::new(),
        "a b".into(),
        "a/b".into(),
        "ключ".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/Grants/properties/vault/items",
        &vault,
        |v| check_vault_name(v.as_str().unwrap()).is_none(),
    );

    let label = long("a", 63);
    let hosts = strings(&[
        "api.x.com".into(),
        "API.X.COM".into(),
        "api.x.com:8443".into(),
        "a.com:65535".into(),
        "*.x.com".into(),
        "*.x.com:443".into(),
        "127.0.0.1".into(),
        "localhost".into(),
        "xn--bcher-kva.example".into(),
        "[::1]".into(),
        "[::]".into(),
        "[::1]:8080".into(),
        "[2001:db8::8a2e:370:7334]".into(),
        "[1:2:3:4:5:6:7:8]".into(),
        "[1:2:3:4:5:6:7::]".into(),
        "[::2:3:4:5:6:7:8]".into(),
        format!("{label}.com"),
        format!("{}.com", long("a", 64)),
        [label.as_str(); 4].join("."),
        format!("{}.a", [label.as_str(); 4].join(".")),
        String::new(),
        "a..com".into(),
        "-a.com".into(),
        "a-.com".into(),
        "a_b.com".into(),
        "a.com:0".into(),
        "a.com:+80".into(),
        "a.com:080".into(),
        "a.com:65536".into(),
        "a.com:".into(),
        "a.com:http".into(),
        "https://a.com".into(),
        "a.com/x".into(),
        "a b.com".into(),
        "*.*.a.com".into(),
        "*.[::1]".into(),
        "[::1".into(),
        "[1:2:3:4:5:6:7:8:9]".into(),
        "[1:2:3:4::5:6:7:8]".into(),
        "[::ffff:1.2.3.4]".into(),
        "[fe80::1%eth0]".into(),
        "[12345::]".into(),
        "bücher.example".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/Grants/properties/hosts/items",
        &hosts,
        |v| check_host(v.as_str().unwrap()).is_none(),
    );

    // A skill's files: canonical base64, safe relative paths.
    let b64 = strings(&[
        String::new(),
        "YQ==".into(),
        "YWI=".into(),
        "YWJj".into(),
        "YR==".into(),
        "YWJ=".into(),
        "YQ".into(),
        " YQ==".into(),
        "YQ==\n".into(),
        "Y===".into(),
        "YWJj-_==".into(),
        "?".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/FileObject/properties/base64",
        &b64,
        |v| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap())
                .is_ok()
        },
    );
    let paths = strings(&[
        "SKILL.md".into(),
        "references/REFERENCE.md".into(),
        "a/b/c/d/e/f/g/h/i/j".into(),
        "a/b/c/d/e/f/g/h/i/j/k".into(),
        ".hidden".into(),
        "..x".into(),
        "x..".into(),
        "a/...".into(),
        "é/ü.md".into(),
        long("a", 1024),
        long("a", 1025),
        String::new(),
        "/abs".into(),
        "\\abs".into(),
        "a\\b".into(),
        "C:x".into(),
        "c:/x".into(),
        "1:x".into(),
        ".".into(),
        "..".into(),
        "a/./b".into(),
        "a/../b".into(),
        "a/..".into(),
        "a//b".into(),
        "a/".into(),
        "tab\tx".into(),
        "c1\u{85}".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/PutSkill/properties/files/allOf/0/propertyNames",
        &paths,
        |v| {
            let raw = v.as_str().unwrap();
            skillbase_format::BundlePath::parse(raw).is_ok_and(|p| {
                let limits = skillbase_format::BundleLimits::default();
                p.depth() <= limits.max_depth && raw.len() <= limits.max_path_bytes
            })
        },
    );

    let descriptions = strings(&[
        String::new(),
        "The payments API key".into(),
        long("é", 500),
        long("a", 501),
        "two\nlines".into(),
        "tab\there".into(),
        "c1\u{85}".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/VaultValue/properties/description",
        &descriptions,
        |v| skillbase_runtime::vault_description_ok(v.as_str().unwrap()),
    );

    let messages = strings(&[
        String::new(),
        "first version".into(),
        "two\nlines".into(),
        long("é", 2000),
        long("a", 2001),
        "tab\there".into(),
        "bell\u{7}".into(),
        "c1\u{85}".into(),
        "cr\r".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/PutSkill/properties/message",
        &messages,
        |v| check_message(v.as_str().unwrap()).is_ok(),
    );
    agree(
        &doc,
        "/components/schemas/StatusBody/properties/reason",
        &messages,
        |v| check_message(v.as_str().unwrap()).is_ok(),
    );

    let ids = strings(&[
        "s1".into(),
        "mcp:x:y".into(),
        long("é", 128),
        long("a", 129),
        String::new(),
        "a/b".into(),
        "a\\b".into(),
        "a\u{1}".into(),
        "a\u{9f}".into(),
        "a\u{a0}".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/NewSession/properties/id",
        &ids,
        |v| check_session_id(v.as_str().unwrap()).is_ok(),
    );
    // The request headers' grammars are the server's (each header alone, as its value).
    let put = doc["paths"]["/v1/skills/{name}"]["put"]["parameters"]
        .as_array()
        .unwrap();
    let events = doc["paths"]["/v1/sessions/{id}/events"]["get"]["parameters"]
        .as_array()
        .unwrap();
    for (name, params, samples) in [
        (
            "skillbase-session",
            put,
            vec![
                "s1",
                "mcp:x:y",
                "a",
                &long("a", 128),
                &long("a", 129),
                "",
                "a b",
                "a/b",
                "a\\b",
                "~!",
            ],
        ),
        (
            "if-match",
            put,
            vec![
                "*",
                "3",
                "\"3\"",
                "W/\"3\"",
                "\"3",
                "0",
                &long("9", 18),
                &long("9", 19),
                "",
                "+3",
                "-3",
                "W/*",
                "\"\"",
                "3 4",
                "**",
            ],
        ),
        ("if-none-match", put, vec!["*", "0", "", "**", "\"*\""]),
        (
            "last-event-id",
            events,
            vec![
                "0",
                "42",
                &long("9", 18),
                &long("9", 19),
                "",
                "+1",
                "-1",
                "1.0",
                "x",
            ],
        ),
    ] {
        let i = params.iter().position(|p| p["name"] == name).unwrap();
        let pointer = if name == "last-event-id" {
            format!("/paths/~1v1~1sessions~1{{id}}~1events/get/parameters/{i}/schema")
        } else {
            format!("/paths/~1v1~1skills~1{{name}}/put/parameters/{i}/schema")
        };
        agree(
            &doc,
            &pointer,
            &strings(&samples.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
            |v| skillbase_server::rest::header_accepted(name, v.as_str().unwrap().as_bytes()),
        );
    }
    let labels = strings(&[
        String::new(),
        "ci".into(),
        long("é", 200),
        long("a", 201),
        "a\nb".into(),
    ]);
    agree(
        &doc,
        "/components/schemas/NewToken/properties/label",
        &labels,
        |v| check_token_label(v.as_str().unwrap()).is_ok(),
    );
}

/// An upstream server's configuration: the document's oneOf (stdio or HTTP) accepts exactly
/// what the gateway's check does, on samples whose URLs parse (a URL that does not parse, and a
/// vault entry that is not set, are the 422s no schema can say).
#[test]
fn the_mcp_server_schema_accepts_exactly_what_the_gateway_accepts() {
    use skillbase_runtime::McpServerConfig;
    let doc = doc();
    let samples = [
        json!({"url": "http://h/"}),
        json!({"url": "HTTPS://h/x?y=1"}),
        json!({"url": "http:/h"}),
        json!({"url": " http://h/"}),
        json!({"url": "http://h/ x"}),
        json!({"url": "http://h/\u{7f}"}),
        json!({"url": "ftp://h/"}),
        json!({"url": null}),
        json!({"url": 7}),
        json!({"url": "http://h/", "headers": {"X-Key": "v"}}),
        json!({"url": "http://h/", "headers": {"bad name": "v"}}),
        json!({"url": "http://h/", "headers": {"A": "v\n"}}),
        json!({"url": "http://h/", "headers": {"A": "v\u{0}"}}),
        json!({"url": "http://h/", "headers": {"A": {"vault": "K"}}}),
        json!({"url": "http://h/", "headers": {"A": {"vault": "K", "prefix": "Bearer "}}}),
        json!({"url": "http://h/", "headers": {"A": {"vault": "bad name"}}}),
        json!({"url": "http://h/", "headers": {"A": {"vault": "K", "x": 1}}}),
        json!({"url": "http://h/", "headers": {"A": {}}}),
        json!({"url": "http://h/", "headers": {"A": 5}}),
        json!({"url": "http://h/", "headers": {"A": null}}),
        json!({"url": "http://h/", "args": []}),
        json!({"url": "http://h/", "env": {}}),
        json!({"url": "http://h/", "cwd": "/srv"}),
        json!({"url": "http://h/", "class": "ok_1-2"}),
        json!({"url": "http://h/", "class": "Bad"}),
        json!({"url": "http://h/", "class": ""}),
        json!({"url": "http://h/", "permissions": ["network", "none"]}),
        json!({"url": "http://h/", "permissions": ["root"]}),
        json!({"url": "http://h/", "cost": "seconds"}),
        json!({"url": "http://h/", "cost": "slow"}),
        json!({"url": "http://h/", "tools": {"t": {"description": "d", "class": "c"}}}),
        json!({"url": "http://h/", "tools": {"t": {"description": ""}}}),
        json!({"url": "http://h/", "tools": {"t": {"description": " \u{1c}\n"}}}),
        json!({"url": "http://h/", "tools": {"t": {"surprise": 1}}}),
        json!({"url": "http://h/", "tools": {"t": {"cost": "slow"}}}),
        json!({"url": "http://h/", "exclude": ["a"]}),
        json!({"url": "http://h/", "exclude": "a"}),
        json!({"url": "http://h/", "extra": 1}),
        json!({"command": "x"}),
        json!({"command": "/usr/bin/mcp-server-time", "args": ["--x", ""], "env": {"TZ": "UTC", "K": {"vault": "K"}}, "cwd": "/srv"}),
        json!({"command": "   "}),
        json!({"command": ""}),
        json!({"command": "a\u{1c}"}),
        json!({"command": "a\tb"}),
        json!({"command": "x", "args": ["a", "b\u{0}"]}),
        json!({"command": "x", "env": {"A=B": "c"}}),
        json!({"command": "x", "env": {"": "c"}}),
        json!({"command": "x", "cwd": "rel"}),
        json!({"command": "x", "cwd": ""}),
        json!({"command": "x", "url": "http://h/"}),
        json!({"command": "x", "headers": {}}),
        json!({}),
        json!([]),
    ];
    agree(&doc, "/components/schemas/McpServerConfig", &samples, |v| {
        McpServerConfig::from_json("x", v).is_ok()
    });
}

#[test]
fn bounds_and_enums_are_the_servers() {
    let doc = doc();
    let s = &doc["components"]["schemas"];
    for (schema, field) in [
        ("AgentConfig", "catalog_budget"),
        ("AgentConfig", "context_budget"),
        ("TurnBody", "catalog_budget"),
        ("TurnBody", "context_budget"),
        ("EvalRequest", "catalog_budget"),
        ("EvalRequest", "context_budget"),
        ("SweepRequest", "catalog_budget"),
        ("SweepRequest", "context_budget"),
        ("Policies", "max_result_tokens"),
    ] {
        // An evaluation's two forms each have the field.
        let forms = match s[schema]["oneOf"].as_array() {
            Some(forms) => forms.iter().collect(),
            None => vec![&s[schema]],
        };
        for form in forms {
            assert_eq!(
                form["properties"][field]["maximum"], MAX_BUDGET,
                "{schema}.{field}"
            );
        }
    }
    // A sweep's sizes: the server's bounds (a size over them is refused, test `sweeps`).
    let sizes = &s["SweepRequest"]["properties"]["sizes"];
    assert_eq!(sizes["maxItems"], skillbase_insight::sweep::MAX_SIZES);
    assert_eq!(sizes["minItems"], 1);
    assert_eq!(sizes["items"]["maximum"], 10_000_000);
    assert_eq!(sizes["items"]["minimum"], 0);
    assert_eq!(
        s["AgentConfig"]["properties"]["prompts"]["maxItems"],
        skillbase_store::model::MAX_PROMPTS
    );
    let p = &s["Policies"]["properties"];
    assert_eq!(p["failure_threshold"]["maximum"], MAX_FAILURE_THRESHOLD);
    assert_eq!(p["failure_threshold"]["minimum"], 1);
    assert_eq!(p["max_calls_in_flight"]["maximum"], MAX_CALLS_IN_FLIGHT);
    assert_eq!(p["max_calls_in_flight"]["minimum"], 1);
    assert_eq!(
        p["max_network_calls_per_session"]["maximum"],
        MAX_NETWORK_CALLS_PER_SESSION
    );
    // Every field of an agent's configuration may be left out (the store takes defaults).
    for schema in ["AgentConfig", "Policies", "Grants"] {
        assert!(
            s[schema].get("required").is_none(),
            "{schema}: {}",
            s[schema]
        );
        assert_eq!(s[schema]["additionalProperties"], false, "{schema}");
    }
    // The configuration the store writes by default is valid against the document, and the
    // document's bounds are the store's: one over is refused by both.
    let config = validator(&doc, "/components/schemas/AgentConfig");
    let default = serde_json::to_value(skillbase_store::AgentConfig::default()).unwrap();
    assert!(config.is_valid(&default), "{default}");
    assert!(config.is_valid(&json!({})));
    for over in [
        json!({"catalog_budget": MAX_BUDGET + 1}),
        json!({"policies": {"failure_threshold": 0}}),
        json!({"policies": {"max_calls_in_flight": MAX_CALLS_IN_FLIGHT + 1}}),
        json!({"skills": "some"}),
        json!({"grants": {"tools": ["Web"]}}),
    ] {
        assert!(!config.is_valid(&over), "{over}");
        let parsed: Result<skillbase_store::AgentConfig, _> = serde_json::from_value(over.clone());
        assert!(
            parsed
                .map_err(|e| e.to_string())
                .and_then(|c| c.checked())
                .is_err(),
            "the store accepts {over}"
        );
    }
    assert_eq!(
        s["CostClass"]["enum"],
        json!(["immediate", "seconds", "tens_of_seconds"])
    );
    for c in ["immediate", "seconds", "tens_of_seconds"] {
        assert!(c.parse::<skillbase_format::meta::Cost>().is_ok(), "{c}");
    }
    assert_eq!(s["Outcome"]["enum"], json!(["success", "failure"]));
    let call = validator(&doc, "/components/schemas/CallBody");
    assert!(!call.is_valid(&json!({"name": "x", "arguments": null})));
    assert!(!call.is_valid(&json!({"name": "x", "arguments": []})));
}

/// What the schemas forbid, the server refuses; what they allow, it takes (each checked on the
/// live routes).
#[tokio::test]
async fn the_server_refuses_what_the_schemas_forbid() {
    use crate::common::{TestServer, problem};
    use reqwest::Method;
    let s = TestServer::start().await;
    let send = |m: Method, path: &str, body: Value| s.req(m, path, &s.admin).json(&body).send();
    let r = send(
        Method::POST,
        "/v1/sessions",
        json!({"agent": "alpha", "id": "oa-1"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    for arguments in [json!(null), json!([1]), json!("x")] {
        let r = send(
            Method::POST,
            "/v1/sessions/oa-1/calls",
            json!({"name": "take_note", "arguments": arguments}),
        )
        .await
        .unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 400, "{arguments}: {p}");
    }
    for body in [
        json!({"message": "hi", "catalog_budget": MAX_BUDGET + 1}),
        json!({"message": "hi", "context_budget": 3_000_000_000_u64}),
        json!({"message": "hi", "max_cost": "slow"}),
    ] {
        let r = send(Method::POST, "/v1/sessions/oa-1/turns", body.clone())
            .await
            .unwrap();
        let (st, p) = problem(r).await;
        assert!(st == 400 || st == 422, "{body}: {st} {p}");
    }
    // A body is an object: an array is not read into the fields by position.
    for (path, body) in [
        ("/v1/tokens", json!(["seq-label", null])),
        ("/v1/sessions", json!([null, null])),
        ("/v1/sessions/oa-1/calls", json!(["take_note", {}, false])),
        ("/v1/agents", json!(["seqagent"])),
    ] {
        let r = send(Method::POST, path, body.clone()).await.unwrap();
        let (st, p) = problem(r).await;
        assert_eq!(st, 400, "{path} {body}: {p}");
    }
    let r = send(
        Method::POST,
        "/v1/agents",
        json!({"name": "arr", "config": [1]}),
    )
    .await
    .unwrap();
    assert_eq!(problem(r).await.0, 422);
    // Integral numbers written with a fraction are the integers JSON Schema says they are.
    let r = send(
        Method::POST,
        "/v1/sessions/oa-1/turns",
        json!({"message": "hi", "catalog_budget": 4000.0}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r = send(
        Method::POST,
        "/v1/sessions/oa-1/turns",
        json!({"message": "hi", "catalog_budget": 4000.5}),
    )
    .await
    .unwrap();
    assert_eq!(problem(r).await.0, 400);
    // An agent's configuration may leave every field out, and a bound over the store's is
    // refused with the field named.
    let r = send(Method::PUT, "/v1/agents/oa-empty", json!({}))
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = send(
        Method::PUT,
        "/v1/agents/oa-empty",
        json!({"policies": {"max_calls_in_flight": MAX_CALLS_IN_FLIGHT + 1}}),
    )
    .await
    .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 422);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("policies.max_calls_in_flight"),
        "{p}"
    );
    // A status change's reason is a message like any other.
    let r = s
        .req(Method::POST, "/v1/skills/no-such/retire", &s.admin)
        .json(&json!({"reason": "bell\u{7}"}))
        .send()
        .await
        .unwrap();
    let (st, p) = problem(r).await;
    assert_eq!(st, 422, "{p}");
    assert!(p["detail"].as_str().unwrap().starts_with("reason:"), "{p}");
    s.stop().await;
}
